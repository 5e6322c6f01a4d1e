//! One run, in the order of DESIGN §1: take the run lock, observe vCenter and Kubernetes, plan,
//! label nodes, evict, sync DRS rules, record events, release the lock; the report says what
//! became of each action.
//!
//! Degraded modes, all reported as errors (exit code 1): when vCenter cannot be observed the
//! plan runs without an inventory (no label is changed, host labels are not trusted, no DRS
//! rule is touched); on SIGTERM/SIGINT or a lost lock no further change is made; a failed DRS
//! task fails the DRS step and leaves the evictions as they are.

mod config;
mod execute;
mod stop;

use std::path::PathBuf;

pub use crate::error_chain;
pub use config::{ConfigError, RunConfig, connection_config, load_policy, snapshot_policy};
pub use stop::Stop;

use crate::inventory::Inventory;
use crate::report::{Mode, Report};
use crate::snapshot::{self, Objects, SnapshotError};
use crate::{kube, plan, vsphere};
use execute::Executor;

/// Why a run could not get as far as a report.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot observe the Kubernetes cluster")]
    Kubernetes(#[source] kube::Error),
    #[error("cannot take the run lock")]
    Lock(#[source] kube::Error),
    #[error("the observed state cannot be planned on")]
    Snapshot(#[source] SnapshotError),
}

/// Runs once and reports. `Err` only when nothing could be planned; every later failure is an
/// entry in the report's `errors`.
pub async fn run(config: &RunConfig, stop: &Stop) -> Result<Report, Error> {
    let kubernetes = kube::Client::connect(config.timeout)
        .await
        .map_err(Error::Kubernetes)?;
    // A dry run writes nothing, not even the lock.
    let lock = if config.dry_run {
        None
    } else {
        Some(
            kubernetes
                .acquire_lock(config.lock.clone())
                .await
                .map_err(Error::Lock)?,
        )
    };
    let outcome = observe_plan_act(config, &kubernetes, lock.as_ref(), stop).await;
    let release = match lock {
        Some(lock) => lock.release().await,
        None => Ok(()),
    };
    let mut report = outcome?;
    if let Err(error) = release {
        report.warnings.push(format!(
            "{}; the next run waits for it to expire",
            error_chain(&error)
        ));
    }
    Ok(report)
}

async fn observe_plan_act(
    config: &RunConfig,
    kubernetes: &kube::Client,
    lock: Option<&kube::Lock>,
    stop: &Stop,
) -> Result<Report, Error> {
    let (vcenter, cluster) = tokio::join!(observe_vcenter(config), kubernetes.observe());
    let cluster = cluster.map_err(Error::Kubernetes)?;
    let (mut vsphere, inventory, vcenter_error) = match vcenter {
        Ok((client, inventory)) => (Some(client), Some(inventory), None),
        Err(error) => (None, None, Some(error)),
    };

    let snapshot = assemble(cluster, inventory)?;
    let plan = plan::plan(&snapshot, &config.policy);
    let mode = if config.dry_run {
        Mode::DryRun
    } else {
        Mode::Run
    };
    let mut report = Report::planned(mode, plan);
    if let Some(error) = vcenter_error {
        report.errors.push(format!(
            "vCenter could not be observed, so no node label was changed, host labels were not \
             trusted and no DRS rule was touched: {}",
            error_chain(&error)
        ));
    }

    let mut executor = Executor::new(
        kubernetes,
        &config.policy,
        config.dry_run,
        stop,
        lock,
        &config.lock.holder,
    );
    let unwritten = executor.apply_labels(&mut report).await;
    executor.evict(&mut report, &unwritten).await;
    executor.sync_drs_rules(&mut report, vsphere.as_mut()).await;
    executor.publish_events(&mut report).await;
    if let Some(client) = vsphere {
        client.logout().await;
    }
    Ok(report)
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
