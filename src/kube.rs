//! The Kubernetes adapter: a thin, concrete layer over `kube::Client` for the calls this tool
//! makes, and nothing else.
//!
//! * [`Client::observe`] lists nodes, pods, PodDisruptionBudgets, namespaces and PriorityClasses
//!   page by page (500 a page, restarting on `410 Expired`) into the planner's types;
//!   [`Client::list_objects`] lists the same objects as the API returns them, for snapshots.
//! * [`Client::observe_metrics`] lists metrics-server's `metrics.k8s.io/v1beta1` NodeMetrics
//!   and PodMetrics, when a policy reads actual usage; [`Client::list_metrics`] for snapshots.
//! * [`Client::apply_labels`] writes the label keys this tool owns with server-side apply under
//!   one field manager, never creating a node that vanished.
//! * [`Client::evict`] posts a `policy/v1` Eviction carrying the policy's grace period and, in
//!   annotations, who asked for it and why ([`evict`]), and turns the answer into an
//!   [`EvictionResult`]: 201 evicted, 429 blocked, 404 gone, anything else failed with the
//!   server's message.
//! * [`Client::publish_event`] records an `events.k8s.io/v1` Event.
//! * On a Supervisor (VKS), [`Client::vm_operator_version`] asks discovery for VM Operator's
//!   preferred version and [`Client::list_vm_operator`] lists the VirtualMachines and
//!   VirtualMachineSetResourcePolicies of one namespace, as the API returns them.
//! * [`Client::acquire_lock`] takes the run lock, a `coordination.k8s.io/v1` Lease, which also
//!   keeps the eviction history in a ConfigMap beside it: [`Lock::write_history`] writes it
//!   while the lock is held; [`Client::read_history`] reads it without the lock,
//!   [`Client::recorded_history`] for snapshots.
//!
//! * For `check`, which changes nothing: [`Client::review_access`] asks whether a call of
//!   [`API_CALLS`] is allowed (a `SelfSubjectAccessReview`), [`Client::dry_run_labels`] sends a
//!   run's label write as a dry run, [`Client::metrics_served`] reads one NodeMetrics and
//!   [`Client::priority_class_names`] lists the PriorityClasses.
//!
//! [`API_CALLS`] lists these calls as RBAC sees them.
//!
//! The client is built without kube's default retry layer: it would turn one PDB refusal (429)
//! into minutes of backoff. Reads and idempotent applies are retried here, briefly and
//! explicitly; evictions and other writes are sent once.

mod calls;
mod error;
mod events;
pub mod evict;
mod history;
mod labels;
mod lease;
mod list;
mod page;
mod preflight;
mod retry;
mod target;
mod vm_operator;

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;

pub use calls::{ApiCall, CallListError, Grant, api_calls, parse as parse_call_list};
pub use error::{Call, Error, RequestError, UNPARSED_BODY_REASON, api_status, describe};
pub use events::{EventKind, EventSpec};
pub use evict::{EvictionRequest, EvictionResult};
pub use lease::{LEASE_DURATION, LEASE_NAME, Lock, LockSettings};
pub use list::{RawMetrics, RawObjects};
pub use preflight::{AccessDecision, DryRunAnswer, ProbeNode};
pub use target::{ClientConfigError, Endpoint, Selection, load as load_target};
pub use vm_operator::{VM_OPERATOR_GROUP, VmOperatorObjects};

pub use crate::identity::{FIELD_MANAGER, USER_AGENT};

/// `now` as the API's MicroTime (an Event's `eventTime`, a Lease's acquire and renew times).
fn micro_time(now: chrono::DateTime<chrono::Utc>) -> MicroTime {
    let nanos = i32::try_from(now.timestamp_subsec_nanos()).expect("sub-second nanoseconds fit");
    MicroTime(
        k8s_openapi::jiff::Timestamp::new(now.timestamp(), nanos)
            .expect("the clock reads a representable instant"),
    )
}

/// Every Kubernetes API call this adapter makes: lines of API group (`core` for the core group),
/// resource, verb and the role that grants it (`ClusterRole`, `Role` in the lock namespace,
/// `Role/NAME` for the one object NAME, or `Everyone` for what every authenticated user may do),
/// `#` comments. One list for the chart's RBAC, the code and `check`: the chart test compares
/// the rendered rules with it, the end-to-end tests every request the binary sends against it,
/// and `check` asks the API server about each line ([`api_calls`] reads it).
pub const API_CALLS: &str = include_str!("kube/api_calls.txt");

/// Objects per list page.
pub const PAGE_SIZE: u32 = 500;

/// Default time limit of each request to the API server.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// A connection to the Kubernetes API server.
#[derive(Clone)]
pub struct Client {
    client: ::kube::Client,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").finish_non_exhaustive()
    }
}

impl Client {
    /// Connects as kubectl does (`--kubeconfig`, `KUBECONFIG`, `~/.kube/config`, then
    /// in-cluster; `--context` or the current context), with kube's retry layer off and
    /// `timeout` on every request. Says where it points, before any request is sent.
    pub async fn connect(
        selection: &Selection,
        timeout: Duration,
    ) -> Result<(Client, Endpoint), Error> {
        let (config, endpoint) = target::load(selection)
            .await
            .map_err(|source| Error::Config { source })?;
        Ok((Client::from_config(config, timeout)?, endpoint))
    }

    /// A client of `config` (another API server than the cluster's: a Supervisor), set up as
    /// [`Client::connect`] sets up its own.
    pub fn from_config(mut config: ::kube::Config, timeout: Duration) -> Result<Client, Error> {
        config.default_retry = false;
        // Audit logs, and the field manager of writes without one (Lease, Event), name us.
        config.headers.push((
            reqwest::header::USER_AGENT,
            reqwest::header::HeaderValue::from_static(USER_AGENT),
        ));
        config.connect_timeout = Some(timeout);
        config.read_timeout = Some(timeout);
        config.write_timeout = Some(timeout);
        // Count the read timeout from each request, not from when a pooled connection went idle.
        config.reset_reader_on_write = true;
        let client = ::kube::Client::try_from(config).map_err(|source| Error::Client { source })?;
        Ok(Client { client })
    }

    /// Wraps a client built elsewhere. It should have no retry layer (see the module docs).
    pub fn new(client: ::kube::Client) -> Client {
        Client { client }
    }
}
