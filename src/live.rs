//! The live observation, written once for `run`, `what-if` and `snapshot`: the cluster's
//! Kubernetes objects, the hosts' source (vCenter, the Supervisor, or nothing to reach with
//! source node-label), metrics-server's usage when the policy reads it, and the run lock's
//! eviction history when asked for, all read at once ([`read`]).
//!
//! What is read comes back as read, each part with its own result, in one of two [`Form`]s:
//! [`Planning`] converts the objects as they are listed (a run's memory holds no API object),
//! [`Recording`] keeps them pruned for a snapshot file. Each command decides which failures
//! end it and which are problems: a run plans without vCenter ([`Read::planned`]), a snapshot
//! records nothing without it. Nothing here waits for a stop: the run races the whole read
//! against its own.

use std::future::Future;
use std::path::PathBuf;

use crate::cause::Cause;
use crate::inventory::Inventory;
use crate::kube::{self, LockSettings, RawMetrics, RawObjects};
use crate::outcome::Problem;
use crate::report::Target;
use crate::settings::{RELEASE_LIMIT, RunConfig, TopologySource};
use crate::snapshot::prune::Pruned;
use crate::snapshot::{self, History, Objects, SnapshotError};
use crate::{supervisor, topology, vm_operator, vsphere};

/// Why the observation cannot be planned on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot observe the Kubernetes cluster")]
    Kubernetes(#[source] kube::Error),
    #[error("the observed state cannot be planned on")]
    Snapshot(#[source] SnapshotError),
}

impl Error {
    /// The kind of this failure: the cluster's, or an observed state that cannot be read.
    pub fn cause(&self) -> Cause {
        match self {
            Error::Kubernetes(error) => error.cause(),
            Error::Snapshot(_) => Cause::Unreadable,
        }
    }
}

/// Which hosts' source could not be read, and why.
#[derive(Debug)]
pub enum HostsError {
    Vcenter(vsphere::Error),
    Supervisor(supervisor::Error),
}

/// The form the Kubernetes side is read in.
pub trait Form {
    type Objects;
    type Metrics;
    type History;
    fn objects(client: &kube::Client) -> impl Future<Output = Result<Self::Objects, kube::Error>>;
    fn metrics(client: &kube::Client) -> impl Future<Output = Result<Self::Metrics, kube::Error>>;
    fn history(client: &kube::Client, lease: &LockSettings) -> impl Future<Output = Self::History>;
}

/// Converted as listed, for the planner: a history that cannot be read is an unreadable one.
pub struct Planning;

impl Form for Planning {
    type Objects = Objects;
    type Metrics = snapshot::Metrics;
    type History = History;

    fn objects(client: &kube::Client) -> impl Future<Output = Result<Objects, kube::Error>> {
        client.observe()
    }

    fn metrics(client: &kube::Client) -> impl Future<Output = Result<Self::Metrics, kube::Error>> {
        client.observe_metrics()
    }

    fn history(client: &kube::Client, lease: &LockSettings) -> impl Future<Output = History> {
        client.read_history(&lease.namespace, &lease.name)
    }
}

/// Pruned to what planning reads, for a snapshot file: the history's objects (none when
/// nothing holds a history), and an error when they cannot be read.
pub struct Recording;

impl Form for Recording {
    type Objects = RawObjects;
    type Metrics = RawMetrics;
    type History = Result<Vec<Pruned>, kube::Error>;

    fn objects(client: &kube::Client) -> impl Future<Output = Result<RawObjects, kube::Error>> {
        client.list_objects()
    }

    fn metrics(client: &kube::Client) -> impl Future<Output = Result<RawMetrics, kube::Error>> {
        client.list_metrics()
    }

    fn history(client: &kube::Client, lease: &LockSettings) -> impl Future<Output = Self::History> {
        client.recorded_history(&lease.namespace, &lease.name)
    }
}

/// The cluster's API server: its client, and its address (which a Supervisor address must not
/// be).
#[derive(Clone, Copy)]
pub struct ClusterApi<'a> {
    pub client: &'a kube::Client,
    pub api_server: &'a str,
}

/// What the hosts' source gave.
pub enum Hosts {
    /// vCenter's inventory, and the session that read it (a run writes DRS rules through it;
    /// boxed, the largest part by far).
    Vcenter {
        session: Box<vsphere::VcenterClient>,
        inventory: Inventory,
    },
    /// The Supervisor's VM Operator objects, and the inventory and findings they make.
    Supervisor(supervisor::SupervisorRead),
    /// Source node-label: the nodes hold the hosts.
    NodeLabel,
}

/// Everything read, each part as it came.
pub struct Read<F: Form> {
    pub objects: Result<F::Objects, kube::Error>,
    /// `None`: the policy reads no actual usage, and none was asked for.
    pub metrics: Result<Option<F::Metrics>, kube::Error>,
    /// `None`: not asked for.
    pub history: Option<F::History>,
    pub hosts: Result<Hosts, HostsError>,
}

/// Reads the hosts' source, the cluster, its metrics when the policy reads them, and the
/// eviction history of `lease` when given, all at once.
pub async fn read<F: Form>(
    config: &RunConfig,
    at: ClusterApi<'_>,
    lease: Option<&LockSettings>,
) -> Read<F> {
    let client = at.client;
    let metrics = async {
        if config.policy.reads_metrics() {
            F::metrics(client).await.map(Some)
        } else {
            Ok(None)
        }
    };
    let history = async {
        match lease {
            Some(lease) => Some(F::history(client, lease).await),
            None => None,
        }
    };
    let (hosts, objects, metrics, history) = tokio::join!(
        read_hosts(config, at.api_server),
        F::objects(client),
        metrics,
        history
    );
    Read {
        objects,
        metrics,
        history,
        hosts,
    }
}

/// Reads the hosts from the configured source.
async fn read_hosts(config: &RunConfig, api_server: &str) -> Result<Hosts, HostsError> {
    match &config.topology {
        TopologySource::Vcenter(connection) => {
            let settings = &config.policy.vsphere;
            let mut session = vsphere::VcenterClient::connect(connection)
                .await
                .map_err(HostsError::Vcenter)?;
            match session
                .observe(&settings.datacenters, &settings.clusters)
                .await
            {
                Ok(inventory) => Ok(Hosts::Vcenter {
                    session: Box::new(session),
                    inventory,
                }),
                Err(error) => {
                    log_out(session).await;
                    Err(HostsError::Vcenter(error))
                }
            }
        }
        TopologySource::Supervisor(settings) => supervisor::observe(settings, api_server)
            .await
            .map(Hosts::Supervisor)
            .map_err(HostsError::Supervisor),
        TopologySource::NodeLabel => Ok(Hosts::NodeLabel),
    }
}

/// Ends the vCenter session within [`RELEASE_LIMIT`]; past it, the session expires on its own.
pub async fn log_out(session: vsphere::VcenterClient) {
    if tokio::time::timeout(RELEASE_LIMIT, session.logout())
        .await
        .is_err()
    {
        tracing::warn!("logging out of vCenter took too long; the session expires on its own");
    }
}

/// What a run or a look observed: the snapshot to plan on, the vCenter session when there is
/// one, and what could not be observed.
pub struct Observed {
    pub snapshot: snapshot::Snapshot,
    pub vsphere: Option<vsphere::VcenterClient>,
    pub problems: Vec<Problem>,
    /// The Supervisor's findings beside its inventory (source `supervisor` only).
    pub guest_clusters: Option<vm_operator::Findings>,
}

impl Read<Planning> {
    /// The snapshot to plan on. The cluster and its metrics (but for metrics-server being
    /// absent) must have been read; the hosts' source and the history may fail, each a problem
    /// (the run's degraded modes).
    pub fn planned(self, config: &RunConfig) -> Result<Observed, Error> {
        let mut cluster = self.objects.map_err(Error::Kubernetes)?;
        let mut problems = Vec::new();
        match self.metrics {
            Ok(metrics) => cluster.metrics = metrics,
            Err(error @ kube::Error::MetricsUnavailable { .. }) => {
                problems.push(Problem::MetricsUnavailable(error.failure()));
            }
            Err(error) => return Err(Error::Kubernetes(error)),
        }
        let (vsphere, inventory, guest_clusters) = match self.hosts {
            Ok(Hosts::Vcenter { session, inventory }) => (Some(*session), Some(inventory), None),
            Ok(Hosts::Supervisor(read)) => {
                let vm_operator::Topology {
                    inventory,
                    findings,
                } = read.topology;
                (None, Some(inventory), Some(findings))
            }
            Ok(Hosts::NodeLabel) => (None, None, None),
            Err(error) => {
                problems.push(match error {
                    HostsError::Vcenter(error) => Problem::VcenterUnobserved(error.failure()),
                    HostsError::Supervisor(error) => Problem::SupervisorUnobserved(error.failure()),
                });
                (None, None, None)
            }
        };
        let mut snapshot = assemble(cluster, inventory)?;
        topology::apply_node_label(&mut snapshot, &config.policy.vsphere);
        if let Some(history) = self.history {
            if let History::Unreadable(unreadable) = &history {
                problems.push(Problem::HistoryUnreadable(unreadable.clone()));
            }
            snapshot.history = history;
        }
        Ok(Observed {
            snapshot,
            vsphere,
            problems,
            guest_clusters,
        })
    }
}

/// Observes the cluster and vCenter as a dry run does and changes nothing: no lock, no history,
/// no plan carried out (`what-if`). What it talked to, and what it saw (its vCenter session
/// ended).
pub async fn look(config: &RunConfig) -> Result<(Target, Observed), Error> {
    let (kubernetes, endpoint) = kube::Client::connect(&config.kubernetes, config.timeout)
        .await
        .map_err(Error::Kubernetes)?;
    let target = config.target(endpoint);
    target.announce();
    let cluster = ClusterApi {
        client: &kubernetes,
        api_server: &target.api_server,
    };
    let mut observed = read::<Planning>(config, cluster, None)
        .await
        .planned(config)?;
    if let Some(session) = observed.vsphere.take() {
        log_out(session).await;
    }
    Ok((target, observed))
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::policy::Policy;
    use crate::snapshot::history::{HistoryDefect, Unreadable};

    /// A look at a cluster whose hosts come from the nodes' label.
    fn config() -> RunConfig {
        RunConfig {
            policy: Policy::default(),
            warnings: Vec::new(),
            deadline: None,
            dry_run: true,
            topology: TopologySource::NodeLabel,
            lock: LockSettings {
                namespace: "kube-system".to_string(),
                name: kube::LEASE_NAME.to_string(),
                holder: "test".to_string(),
                duration: Duration::from_secs(60),
            },
            timeout: Duration::from_secs(30),
            metrics_push: None,
            kubernetes: kube::Selection::default(),
            placement: false,
        }
    }

    fn read(objects: Result<Objects, kube::Error>, history: Option<History>) -> Read<Planning> {
        Read {
            objects,
            metrics: Ok(None),
            history,
            hosts: Err(HostsError::Supervisor(supervisor::Error::GuestCluster {
                server: "https://guest.example.com:6443".to_string(),
            })),
        }
    }

    #[test]
    fn an_unread_hosts_source_then_an_unreadable_history_are_problems_of_a_plannable_look() {
        let unreadable = Unreadable {
            object: "Lease kube-system/vsphere-descheduler".to_string(),
            cause: HistoryDefect::Corrupt("not a history".to_string()),
        };
        let history = History::Unreadable(unreadable.clone());
        let observed = read(Ok(Objects::default()), Some(history.clone()))
            .planned(&config())
            .expect("planned on");
        assert!(
            matches!(
                observed.problems.as_slice(),
                [Problem::SupervisorUnobserved(_), Problem::HistoryUnreadable(found)]
                    if *found == unreadable
            ),
            "{:?}",
            observed.problems
        );
        assert_eq!(observed.snapshot.history, history);
        assert!(observed.snapshot.inventory.is_none());
        assert!(observed.guest_clusters.is_none());
    }

    #[test]
    fn a_cluster_that_could_not_be_listed_is_not_planned_on_whatever_else_was_read() {
        let failed = kube::Error::ListExpired {
            kind: "pods",
            attempts: 4,
        };
        let error = read(Err(failed), None)
            .planned(&config())
            .err()
            .expect("not planned on");
        assert!(matches!(error, Error::Kubernetes(_)), "{error}");
    }
}
