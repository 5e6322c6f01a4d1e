//! One run, in the order of DESIGN §1: take the run lock, observe vCenter and Kubernetes (and
//! the eviction history the lock's Lease keeps), plan, label nodes, record the paced evictions,
//! evict, sync DRS rules, record events, release the lock; the report says what became of each
//! action. A report is always the result, also of a run that failed before it
//! could plan (its `errors` say why).
//!
//! Degraded modes, all reported as errors (exit code 1): when vCenter cannot be observed the
//! plan runs without an inventory (no label is changed, host labels are not trusted, no DRS
//! rule is touched); on SIGTERM/SIGINT, at the deadline, or once the run lock is lost or expired,
//! no further change is made (see [`Stop`]); a failed DRS task fails the DRS step and leaves the
//! evictions as they are; an eviction history that cannot be read plans no paced eviction, and
//! one that cannot be recorded sends none. The lock is released whatever happened, within
//! [`RELEASE_LIMIT`].

mod config;
mod execute;
mod history;
mod stop;

use std::path::PathBuf;
use std::time::Duration;

pub use crate::error_chain;
pub use config::{
    ConfigError, RunConfig, apply_cluster_name, connection_config, kubernetes_selection,
    load_policy, metrics_push, snapshot_policy,
};
pub use execute::{Backends, execute};
pub use stop::{EXIT_INTERRUPTED_TWICE, Signal, Stop, StopReason};

use crate::inventory::Inventory;
use crate::outcome::{Outcomes, Problem, Verdict};
use crate::plan::Plan;
use crate::report::{Mode, Report, ReportWarning, Target};
use crate::snapshot::{self, History, Objects, SnapshotError};
use crate::{footprint, kube, plan, vsphere};

/// How long releasing the lock, logging out of vCenter and pushing the metrics may each take at
/// the end, even after the deadline: `--deadline` should leave this much before the pod is
/// killed.
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

/// A run's report, and how it ended (what the exit code says).
pub struct Finished {
    pub report: Report,
    pub verdict: Verdict,
}

/// Runs once and reports. A run that could not plan reports why in `errors`, with nothing else.
pub async fn run(config: &RunConfig, stop: &Stop) -> Finished {
    let mut target = None;
    let Finished {
        mut report,
        verdict,
    } = match locked_run(config, stop, &mut target).await {
        Ok(finished) => finished,
        Err(error) => {
            tracing::error!(error = %error_chain(&error), "the run failed before planning");
            let outcomes = Outcomes::not_planned(error_chain(&error));
            Finished {
                verdict: outcomes.verdict(),
                report: Report::new(mode(config), Plan::default(), outcomes),
            }
        }
    };
    report
        .warnings
        .splice(0..0, config.warnings.iter().cloned());
    report.target = target;
    Finished { report, verdict }
}

fn mode(config: &RunConfig) -> Mode {
    if config.dry_run {
        Mode::DryRun
    } else {
        Mode::Run
    }
}

/// Says what it talks to (`target`), takes the lock (not on a dry run: it writes nothing),
/// acts, releases the lock.
async fn locked_run(
    config: &RunConfig,
    stop: &Stop,
    target: &mut Option<Target>,
) -> Result<Finished, Error> {
    let (kubernetes, endpoint) = kube::Client::connect(&config.kubernetes, config.timeout)
        .await
        .map_err(Error::Kubernetes)?;
    let aimed = Target {
        api_server: endpoint.api_server,
        context: endpoint.context,
        vcenter: config.vsphere.server.clone(),
    };
    aimed.announce();
    *target = Some(aimed);
    let lock = if config.dry_run {
        None
    } else {
        let acquired = stop
            .unless_halted(kubernetes.acquire_lock(config.lock.clone()))
            .await
            .map_err(Error::Stopped)?;
        Some(acquired.map_err(Error::Lock)?)
    };
    let outcome = observe_plan_act(config, &kubernetes, lock.as_ref(), stop).await;
    let release = match lock {
        Some(lock) => tokio::time::timeout(RELEASE_LIMIT, lock.release())
            .await
            .unwrap_or_else(|_| {
                Err(kube::Error::ReleaseTimedOut {
                    limit: RELEASE_LIMIT,
                })
            }),
        None => Ok(()),
    };
    let mut finished = outcome?;
    if let Err(error) = release {
        finished
            .report
            .warnings
            .push(ReportWarning::LockNotReleased {
                cause: error_chain(&error),
            });
    }
    Ok(finished)
}

/// What a look that changes nothing saw: the snapshot, what it talked to, and what it could
/// not observe (vCenter, metrics).
pub struct Looked {
    pub snapshot: snapshot::Snapshot,
    pub target: Target,
    pub problems: Vec<Problem>,
}

/// Observes the cluster and vCenter as a dry run does and changes nothing: no lock, no plan
/// carried out (`what-if`).
pub async fn look(config: &RunConfig) -> Result<Looked, Error> {
    let (kubernetes, endpoint) = kube::Client::connect(&config.kubernetes, config.timeout)
        .await
        .map_err(Error::Kubernetes)?;
    let target = Target {
        api_server: endpoint.api_server,
        context: endpoint.context,
        vcenter: config.vsphere.server.clone(),
    };
    target.announce();
    let Observed {
        snapshot,
        vsphere,
        problems,
    } = observe(config, &kubernetes, &Stop::new()).await?;
    if let Some(client) = vsphere {
        log_out(client).await;
    }
    Ok(Looked {
        snapshot,
        target,
        problems,
    })
}

/// Observes, plans, carries the plan out and records it.
async fn observe_plan_act(
    config: &RunConfig,
    kubernetes: &kube::Client,
    lock: Option<&kube::Lock>,
    stop: &Stop,
) -> Result<Finished, Error> {
    let Observed {
        mut snapshot,
        mut vsphere,
        mut problems,
    } = observe(config, kubernetes, stop).await?;
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
        vsphere: vsphere.as_mut(),
        dry_run: config.dry_run,
        stop,
        lock,
        instance: &config.lock.holder,
    };
    let mut outcomes = execute::execute(&plan, backends).await;
    outcomes.problems.splice(0..0, problems);
    let verdict = outcomes.verdict();
    let mut report = Report::new(mode(config), plan, outcomes);
    if config.placement {
        report.place(&snapshot, &config.policy);
    }
    if let Some(client) = vsphere {
        log_out(client).await;
    }
    Ok(Finished { report, verdict })
}

/// Ends the vCenter session within [`RELEASE_LIMIT`]; past it, the session expires on its own.
async fn log_out(client: vsphere::Client) {
    if tokio::time::timeout(RELEASE_LIMIT, client.logout())
        .await
        .is_err()
    {
        tracing::warn!("logging out of vCenter took too long; the session expires on its own");
    }
}

/// What a run observed: the snapshot to plan on, the vCenter session when there is one, and
/// what could not be observed.
struct Observed {
    snapshot: snapshot::Snapshot,
    vsphere: Option<vsphere::Client>,
    problems: Vec<Problem>,
}

/// Reads vCenter, the cluster and (when the policy needs them) its metrics, all at once.
async fn observe(
    config: &RunConfig,
    kubernetes: &kube::Client,
    stop: &Stop,
) -> Result<Observed, Error> {
    // Reads only: abandoned at once when the run halts.
    let (vcenter, cluster, metrics) = stop
        .unless_halted(async {
            tokio::join!(
                observe_vcenter(config),
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
            problems.push(Problem::MetricsUnavailable(error_chain(&error)));
        }
        Err(error) => return Err(Error::Kubernetes(error)),
    }
    let (mut vsphere, inventory) = match vcenter {
        Ok((client, inventory)) => (Some(client), Some(inventory)),
        Err(error) => {
            problems.push(Problem::VcenterUnobserved(error_chain(&error)));
            (None, None)
        }
    };
    if let Some(client) = &mut vsphere {
        client.stop_waiting_on(stop.halt_token().clone());
    }
    let snapshot = assemble(cluster, inventory)?;
    Ok(Observed {
        snapshot,
        vsphere,
        problems,
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

/// Logs in and observes the clusters the policy selects.
async fn observe_vcenter(
    config: &RunConfig,
) -> Result<(vsphere::Client, Inventory), vsphere::Error> {
    let settings = &config.policy.vsphere;
    let mut client = vsphere::Client::connect(&config.vsphere).await?;
    match client
        .observe(&settings.datacenters, &settings.clusters)
        .await
    {
        Ok(inventory) => Ok((client, inventory)),
        Err(error) => {
            client.logout().await;
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
