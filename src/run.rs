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
//! recorded sends none. The lock is released whatever happened, within
//! [`RELEASE_LIMIT`](crate::settings::RELEASE_LIMIT).

mod execute;
mod history;
mod stop;
mod teardown;

pub use execute::{Backends, execute};
pub use stop::{EXIT_INTERRUPTED_TWICE, Signal, Stop, StopReason};
pub use teardown::Teardown;

use crate::live::{self, ClusterApi, Observed, Planning};
use crate::outcome::{Cause, Failure, Outcomes, Verdict};
use crate::plan::Plan;
use crate::report::{Mode, Report};
use crate::settings::RunConfig;
use crate::{footprint, kube, plan, vsphere};

/// Why a run could not get as far as planning.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The cluster could not be observed, or what was observed cannot be planned on.
    #[error(transparent)]
    Observe(#[from] live::Error),
    #[error("cannot take the run lock")]
    Lock(#[source] kube::Error),
    #[error("invalid policy for this cluster; nothing was changed")]
    Policy(#[source] plan::UnknownPriorityClass),
    #[error("invalid policy for this vSphere inventory; nothing was changed")]
    Sites(#[source] crate::sites::SitesRefused),
    #[error("{0} before anything was planned; nothing was changed")]
    Stopped(StopReason),
    #[error("the cluster is too big for this container's memory; nothing was changed")]
    Memory(#[source] footprint::OverBudget),
}

impl Error {
    /// The kind of failure that kept the run from planning.
    pub fn cause(&self) -> Cause {
        match self {
            Error::Lock(error) | Error::Observe(live::Error::Kubernetes(error)) => error.cause(),
            Error::Observe(live::Error::Snapshot(_)) => Cause::Unreadable,
            Error::Policy(_) | Error::Sites(_) => Cause::Config,
            Error::Stopped(_) => Cause::Stopped,
            Error::Memory(_) => Cause::Other,
        }
    }

    /// The failure, with this error's chain as the report shows it.
    pub fn failure(&self) -> Failure {
        Failure::of(self.cause(), self)
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
            let (mut report, verdict) = not_planned(config, &live::Error::Kubernetes(error).into());
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
    let failure = error.failure();
    tracing::error!(error = %failure, "the run failed before planning");
    let outcomes = Outcomes::not_planned(failure);
    let verdict = outcomes.verdict();
    (
        Report::new(mode(config), Plan::default(), outcomes),
        verdict,
    )
}

/// The settings' warnings go first in the report: they were there before the run started.
fn with_config_warnings(config: &RunConfig, report: &mut Report) {
    report
        .warnings_before_plan
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
    let cluster = ClusterApi {
        client: kubernetes,
        api_server,
    };
    observe_plan_act(config, cluster, lock.as_ref(), stop, vsphere).await
}

/// Observes, plans, carries the plan out and records it. The vCenter session, once there is
/// one, is left in `session`, to be ended after the report whatever happens here.
async fn observe_plan_act(
    config: &RunConfig,
    cluster: ClusterApi<'_>,
    lock: Option<&kube::Lock>,
    stop: &Stop,
    session: &mut Option<vsphere::VcenterClient>,
) -> Result<(Report, Verdict), Error> {
    let kubernetes = cluster.client;
    let Observed {
        snapshot,
        vsphere,
        problems,
        guest_clusters,
    } = observe(config, cluster, lock, stop).await?;
    *session = vsphere;
    // Before planning, whose working state would take the rest: a run killed for memory
    // reports nothing.
    footprint::check(
        snapshot.nodes.len(),
        snapshot.pods.len(),
        footprint::memory_limit(),
    )
    .map_err(Error::Memory)?;
    plan::check_priority_classes(&snapshot, &config.policy).map_err(Error::Policy)?;
    crate::sites::check(snapshot.inventory.as_ref(), &config.policy.vsphere)
        .map_err(Error::Sites)?;
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

/// Reads the hosts' source, the cluster, its metrics when the policy reads them and, without
/// the lock (a dry run), the eviction history, all at once; reads only, abandoned at once when
/// the run halts. The lock holds the history as it acquired it: nobody else writes the Lease
/// while the run holds it.
async fn observe(
    config: &RunConfig,
    at: ClusterApi<'_>,
    lock: Option<&kube::Lock>,
    stop: &Stop,
) -> Result<Observed, Error> {
    let lease = lock.is_none().then_some(&config.lock);
    let mut read = stop
        .unless_halted(live::read::<Planning>(config, at, lease))
        .await
        .map_err(Error::Stopped)?;
    if let Some(lock) = lock {
        read.history = Some(lock.history().clone());
    }
    let mut observed = read.planned(config)?;
    if let Some(client) = &mut observed.vsphere {
        client.stop_waiting_on(stop.halt_token().clone());
    }
    Ok(observed)
}
