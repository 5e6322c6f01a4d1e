//! One run, in the order of docs/design.md §1: take the run lock, observe vCenter and Kubernetes (and
//! the eviction history the lock's Lease keeps), plan, label nodes, record the paced evictions,
//! evict, sync DRS rules, record events; the report says what became of each action. A report
//! is always the result, also of a run that failed before it could plan (its `errors` say why).
//! Releasing the lock and ending the vCenter session come after the report is printed
//! ([`Teardown`]): at the deadline the report is out first.
//!
//! Degraded modes, all reported as errors (exit code 1): when vCenter cannot be observed the
//! plan runs without an inventory (no label is changed, host labels are not trusted, no DRS
//! rule is touched); on SIGTERM/SIGINT, at the deadline, or once the run lock is lost or expired,
//! no further change is made (see [`Stop`]), and whatever the deadline cut short (an action, the
//! Events) is an error too; a failed DRS task fails the DRS step and leaves the evictions as they
//! are; an eviction history that cannot be read plans no paced eviction, and one that cannot be
//! recorded sends none. The lock is released whatever happened, within [`RELEASE_LIMIT`].

mod execute;
mod history;
mod stop;
mod teardown;

use std::path::PathBuf;
use std::time::Duration;

pub use crate::error_chain;
pub use execute::{Backends, execute};
pub use stop::{EXIT_INTERRUPTED_TWICE, Signal, Stop, StopReason};
pub use teardown::Teardown;

use crate::inventory::Inventory;
use crate::outcome::{Cause, Failure, Outcomes, Problem, Verdict};
use crate::plan::Plan;
use crate::report::{Mode, Report, Target};
use crate::settings::{RunConfig, Topology};
use crate::snapshot::{self, History, Objects, SnapshotError};
use crate::{footprint, kube, plan, supervisor, topology, vm_operator, vsphere};
use teardown::log_out;

/// How long each step after the report may take, even after the deadline: releasing the lock
/// and logging out of vCenter (both at once), then pushing the metrics. `--deadline` should
/// leave twice this before the pod is killed.
pub const RELEASE_LIMIT: Duration = Duration::from_secs(5);

/// Why a run could not get as far as planning.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot observe the Kubernetes cluster")]
    Kubernetes(#[source] kube::Error),
    #[error("cannot take the run lock")]
    Lock(#[source] kube::Error),
    #[error("the observed state cannot be planned on")]
    Snapshot(#[source] SnapshotError),
    #[error("invalid policy for this cluster; nothing was changed")]
    Policy(#[source] plan::UnknownPriorityClass),
    #[error("{0} before anything was planned; nothing was changed")]
    Stopped(StopReason),
    #[error("the cluster is too big for this container's memory; nothing was changed")]
    Memory(#[source] footprint::OverBudget),
}

impl Error {
    /// The kind of failure that kept the run from planning.
    pub fn cause(&self) -> Cause {
        match self {
            Error::Kubernetes(error) | Error::Lock(error) => error.cause(),
            Error::Snapshot(_) => Cause::Unreadable,
            Error::Policy(_) => Cause::Config,
            Error::Stopped(_) => Cause::Stopped,
            Error::Memory(_) => Cause::Other,
        }
    }

    /// The failure, with this error's chain as the report shows it.
    pub fn failure(&self) -> Failure {
        Failure::new(self.cause(), error_chain(self))
    }
}

/// A run's report, how it ended (what the exit code says), and what is left to do once the
/// report is out.
pub struct Finished {
    pub report: Report,
    pub verdict: Verdict,
    /// Release the lock and end the vCenter session with it, after printing the report: at the
    /// deadline the report comes first, and these are bounded after it.
    pub teardown: Teardown,
}

/// Runs once and reports. A run that could not plan reports why in `errors`, with nothing else.
pub async fn run(config: &RunConfig, stop: &Stop) -> Finished {
    match kube::Client::connect(&config.kubernetes, config.timeout).await {
        Ok((kubernetes, endpoint)) => run_on(config, &kubernetes, endpoint, stop).await,
        Err(error) => {
            let (mut report, verdict) = not_planned(config, &Error::Kubernetes(error));
            with_config_warnings(config, &mut report);
            Finished {
                report,
                verdict,
                teardown: Teardown::default(),
            }
        }
    }
}

/// [`run`] through a client already connected to the API server at `endpoint` (tests hand it
/// one served by the fake API server in their own runtime, so they can pause the clock).
pub async fn run_on(
    config: &RunConfig,
    kubernetes: &kube::Client,
    endpoint: kube::Endpoint,
    stop: &Stop,
) -> Finished {
    let target = config.target(endpoint);
    target.announce();
    let mut teardown = Teardown::default();
    let guest = &target.api_server;
    let (mut report, verdict) =
        match locked_run(config, kubernetes, guest, stop, &mut teardown).await {
            Ok(reported) => reported,
            Err(error) => not_planned(config, &error),
        };
    with_config_warnings(config, &mut report);
    report.target = Some(target);
    Finished {
        report,
        verdict,
        teardown,
    }
}

/// The report of a run that failed before planning: `error` in its `errors`, nothing else.
fn not_planned(config: &RunConfig, error: &Error) -> (Report, Verdict) {
    tracing::error!(error = %error_chain(error), "the run failed before planning");
    let outcomes = Outcomes::not_planned(error.failure());
    let verdict = outcomes.verdict();
    (
        Report::new(mode(config), Plan::default(), outcomes),
        verdict,
    )
}

/// The settings' warnings go first in the report: they were there before the run started.
fn with_config_warnings(config: &RunConfig, report: &mut Report) {
    report
        .warnings
        .splice(0..0, config.warnings.iter().cloned());
}

fn mode(config: &RunConfig) -> Mode {
    if config.dry_run {
        Mode::DryRun
    } else {
        Mode::Run
    }
}

/// Takes the lock into `teardown` (not on a dry run: it writes nothing), then observes, plans
/// and acts under it; the vCenter session goes into `teardown` too, once there is one.
async fn locked_run(
    config: &RunConfig,
    kubernetes: &kube::Client,
    api_server: &str,
    stop: &Stop,
    teardown: &mut Teardown,
) -> Result<(Report, Verdict), Error> {
    if !config.dry_run {
        let acquired = stop
            .unless_halted(kubernetes.acquire_lock(config.lock.clone()))
            .await
            .map_err(Error::Stopped)?;
        teardown.lock = Some(acquired.map_err(Error::Lock)?);
    }
    let Teardown { lock, vsphere } = teardown;
    let cluster = Cluster {
        client: kubernetes,
        api_server,
    };
    observe_plan_act(config, cluster, lock.as_ref(), stop, vsphere).await
}

/// What a look that changes nothing saw: the snapshot, what it talked to, and what it could
/// not observe (vCenter, metrics).
pub struct Looked {
    pub snapshot: snapshot::Snapshot,
    pub target: Target,
    pub problems: Vec<Problem>,
    /// What the Supervisor showed beside the hosts (source `supervisor` only).
    pub guest_clusters: Option<vm_operator::Findings>,
}

/// Observes the cluster and vCenter as a dry run does and changes nothing: no lock, no plan
/// carried out (`what-if`).
pub async fn look(config: &RunConfig) -> Result<Looked, Error> {
    let (kubernetes, endpoint) = kube::Client::connect(&config.kubernetes, config.timeout)
        .await
        .map_err(Error::Kubernetes)?;
    let target = config.target(endpoint);
    target.announce();
    let cluster = Cluster {
        client: &kubernetes,
        api_server: &target.api_server,
    };
    let Observed {
        snapshot,
        vsphere,
        problems,
        guest_clusters,
    } = observe(config, cluster, &Stop::new()).await?;
    if let Some(client) = vsphere {
        log_out(client).await;
    }
    Ok(Looked {
        snapshot,
        target,
        problems,
        guest_clusters,
    })
}

/// Observes, plans, carries the plan out and records it. The vCenter session, once there is
/// one, is left in `session`, to be ended after the report whatever happens here.
async fn observe_plan_act(
    config: &RunConfig,
    cluster: Cluster<'_>,
    lock: Option<&kube::Lock>,
    stop: &Stop,
    session: &mut Option<vsphere::Client>,
) -> Result<(Report, Verdict), Error> {
    let kubernetes = cluster.client;
    let Observed {
        mut snapshot,
        vsphere,
        mut problems,
        guest_clusters,
    } = observe(config, cluster, stop).await?;
    *session = vsphere;
    snapshot.history = match lock {
        // The lease as the lock acquired it: nobody else writes it while the run holds it.
        Some(lock) => lock.history().clone(),
        None => stop
            .unless_halted(kubernetes.read_history(&config.lock.namespace, &config.lock.name))
            .await
            .map_err(Error::Stopped)?,
    };
    if let History::Unreadable(unreadable) = &snapshot.history {
        problems.push(Problem::HistoryUnreadable(unreadable.clone()));
    }
    // Before planning, whose working state would take the rest: a run killed for memory
    // reports nothing.
    footprint::check(
        snapshot.nodes.len(),
        snapshot.pods.len(),
        footprint::memory_limit(),
    )
    .map_err(Error::Memory)?;
    plan::check_priority_classes(&snapshot, &config.policy).map_err(Error::Policy)?;
    let plan = plan::plan(&snapshot, &config.policy);

    let backends = Backends {
        kubernetes,
        vsphere: session.as_mut(),
        dry_run: config.dry_run,
        stop,
        lock,
        instance: &config.lock.holder,
    };
    let mut outcomes = execute::execute(&plan, backends).await;
    outcomes.problems.splice(0..0, problems);
    let verdict = outcomes.verdict();
    let mut report = Report::new(mode(config), plan, outcomes);
    report.show_guest_clusters(guest_clusters);
    if config.placement {
        report.place(&snapshot, &config.policy);
    }
    Ok((report, verdict))
}

/// What a run observed: the snapshot to plan on, the vCenter session when there is one, and
/// what could not be observed.
struct Observed {
    snapshot: snapshot::Snapshot,
    vsphere: Option<vsphere::Client>,
    problems: Vec<Problem>,
    /// The Supervisor's findings beside its inventory (source `supervisor` only).
    guest_clusters: Option<vm_operator::Findings>,
}

/// The cluster's API server: its client, and its address (which a Supervisor address must not
/// be).
#[derive(Clone, Copy)]
struct Cluster<'a> {
    client: &'a kube::Client,
    api_server: &'a str,
}

/// Reads the hosts' source, the cluster and (when the policy needs them) its metrics, all at
/// once.
async fn observe(config: &RunConfig, at: Cluster<'_>, stop: &Stop) -> Result<Observed, Error> {
    let kubernetes = at.client;
    // Reads only: abandoned at once when the run halts.
    let (hosts, cluster, metrics) = stop
        .unless_halted(async {
            tokio::join!(
                observe_hosts(config, at.api_server),
                kubernetes.observe(),
                observe_metrics(config, kubernetes)
            )
        })
        .await
        .map_err(Error::Stopped)?;
    let mut cluster = cluster.map_err(Error::Kubernetes)?;
    let mut problems = Vec::new();
    match metrics {
        Ok(metrics) => cluster.metrics = metrics,
        Err(error @ kube::Error::MetricsUnavailable { .. }) => {
            problems.push(Problem::MetricsUnavailable(error.failure()));
        }
        Err(error) => return Err(Error::Kubernetes(error)),
    }
    let Hosts {
        mut vsphere,
        inventory,
        guest_clusters,
        problem,
    } = hosts;
    problems.extend(problem);
    if let Some(client) = &mut vsphere {
        client.stop_waiting_on(stop.halt_token().clone());
    }
    let mut snapshot = assemble(cluster, inventory)?;
    topology::apply_node_label(&mut snapshot, &config.policy.vsphere);
    Ok(Observed {
        snapshot,
        vsphere,
        problems,
        guest_clusters,
    })
}

/// metrics-server's usage when the policy reads actual usage; nothing (and no request) otherwise.
async fn observe_metrics(
    config: &RunConfig,
    kubernetes: &kube::Client,
) -> Result<Option<snapshot::Metrics>, kube::Error> {
    if !config.policy.reads_metrics() {
        return Ok(None);
    }
    kubernetes.observe_metrics().await.map(Some)
}

/// What the hosts' source gave: the inventory (none from source node-label, whose inventory
/// is the nodes' label; none when the source could not be read, with the problem), and the
/// vCenter session, kept for the DRS step.
#[derive(Default)]
struct Hosts {
    vsphere: Option<vsphere::Client>,
    inventory: Option<Inventory>,
    /// What the Supervisor showed beside the inventory: guest clusters' cluster modules and the
    /// VMs on no host (source `supervisor`, when it was read).
    guest_clusters: Option<vm_operator::Findings>,
    problem: Option<Problem>,
}

/// Reads the hosts from the configured source.
async fn observe_hosts(config: &RunConfig, api_server: &str) -> Hosts {
    match &config.topology {
        Topology::Vcenter(_) => match observe_vcenter(config).await {
            Ok((client, inventory)) => Hosts {
                vsphere: Some(client),
                inventory: Some(inventory),
                ..Hosts::default()
            },
            Err(error) => Hosts {
                problem: Some(Problem::VcenterUnobserved(error.failure())),
                ..Hosts::default()
            },
        },
        Topology::Supervisor(settings) => match observe_supervisor(settings, api_server).await {
            Ok(topology) => Hosts {
                inventory: Some(topology.inventory),
                guest_clusters: Some(topology.findings),
                ..Hosts::default()
            },
            Err(error) => Hosts {
                problem: Some(Problem::SupervisorUnobserved(error.failure())),
                ..Hosts::default()
            },
        },
        Topology::NodeLabel => Hosts::default(),
    }
}

/// Reads the Supervisor's VM Operator objects into the inventory and the findings beside it.
async fn observe_supervisor(
    settings: &supervisor::Settings,
    api_server: &str,
) -> Result<vm_operator::Topology, supervisor::Error> {
    Ok(supervisor::observe(settings, api_server).await?.topology)
}

/// Logs in and observes the clusters the policy selects.
async fn observe_vcenter(
    config: &RunConfig,
) -> Result<(vsphere::Client, Inventory), vsphere::Error> {
    let settings = &config.policy.vsphere;
    let connection = config
        .topology
        .vcenter()
        .expect("vCenter is observed with source vcenter only");
    let mut client = vsphere::Client::connect(connection).await?;
    match client
        .observe(&settings.datacenters, &settings.clusters)
        .await
    {
        Ok(inventory) => Ok((client, inventory)),
        Err(error) => {
            log_out(client).await;
            Err(error)
        }
    }
}

/// The planner's snapshot of what was observed, at the current time.
fn assemble(objects: Objects, inventory: Option<Inventory>) -> Result<snapshot::Snapshot, Error> {
    let mut parts = vec![(PathBuf::from("(Kubernetes API)"), objects)];
    if let Some(inventory) = inventory {
        parts.push((
            PathBuf::from("(vCenter)"),
            Objects {
                inventories: vec![inventory],
                ..Objects::default()
            },
        ));
    }
    let loaded = snapshot::assemble(parts, chrono::Utc::now()).map_err(Error::Snapshot)?;
    Ok(loaded.snapshot)
}
