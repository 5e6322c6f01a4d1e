//! `what-if`: one or more ESXi hosts failing, or one entering maintenance mode (or a whole site
//! of `vsphere.sites` failing or entering maintenance), judged on
//! snapshot files (`--snapshot`) or on the live cluster and vCenter, read as `run --dry-run`
//! reads them. Read-only either way.

use std::process::ExitCode;

use tracing::warn;

use super::Error;
use crate::cause::Failure;
use crate::cli::WhatIfArgs;
use crate::outcome::Problem;
use crate::plan::what_if::{self, Scenario};
use crate::policy::{Policy, SourceKind};
use crate::report::what_if::WhatIfReport;
use crate::report::{Mode, OutputFormat, ReportWarning};
use crate::settings::{self, RunConfig};
use crate::snapshot::Snapshot;
use crate::{live, topology};

pub fn execute(args: &WhatIfArgs, output: OutputFormat) -> Result<ExitCode, Error> {
    let scenario = scenario(args);
    let report = if args.snapshot.is_empty() {
        live(args, &scenario)?
    } else {
        offline(args, &scenario)?
    };
    report.print(output).map_err(Error::Output)?;
    Ok(ExitCode::from(report.exit_code))
}

/// The question the flags ask: clap lets exactly one of them through.
fn scenario(args: &WhatIfArgs) -> Scenario {
    if let Some(host) = &args.maintenance {
        Scenario::Maintenance(host.clone())
    } else if let Some(site) = &args.site_fails {
        Scenario::SiteFails(site.clone())
    } else if let Some(site) = &args.maintenance_site {
        Scenario::SiteMaintenance(site.clone())
    } else {
        Scenario::HostsFail(args.host_fails.clone())
    }
}

fn offline(args: &WhatIfArgs, scenario: &Scenario) -> Result<WhatIfReport, Error> {
    let (mut policy, findings) =
        settings::load_policy(args.policy.as_deref()).map_err(|e| Error::Config(Box::new(e)))?;
    for finding in &findings {
        warn!("{finding}");
    }
    if let Some(name) = &args.cluster_name {
        settings::apply_cluster_name(&mut policy, name).map_err(|e| Error::Config(Box::new(e)))?;
    }
    let mut loaded = super::plan::load(&args.snapshot, args.now, args.max_snapshot_size)?;
    let replaced = topology::apply_node_label(&mut loaded.snapshot, &policy.vsphere);
    let mut report = answer(Mode::Plan, &loaded.snapshot, &policy, scenario)?;
    // The hosts come from VM Operator's objects unless the policy reads the nodes' label.
    if replaced.is_none() && policy.vsphere.source != SourceKind::NodeLabel {
        report.show_guest_clusters(loaded.supervisor);
    }
    if let Some(replaced) = replaced {
        warn!("{replaced}");
        report.warnings.insert(0, ReportWarning::Topology(replaced));
    }
    if let Some(early) =
        super::plan::now_before_creation(&args.snapshot, args.max_snapshot_size, &loaded.snapshot)
    {
        report
            .warnings
            .push(ReportWarning::NowBeforeCreation(early));
    }
    Ok(report)
}

fn live(args: &WhatIfArgs, scenario: &Scenario) -> Result<WhatIfReport, Error> {
    let config = RunConfig::read_only(
        args.policy.as_deref(),
        args.cluster_name.as_deref(),
        &args.connection,
    )
    .map_err(|e| Error::Config(Box::new(e)))?;
    for warning in &config.warnings {
        warn!("{warning}");
    }
    let runtime = super::runtime()?;
    let (target, looked) = match runtime.block_on(live::look(&config)) {
        Ok(looked) => looked,
        // A backend failed: a machine reading --output json still gets one report saying why.
        Err(error) => {
            let failure = Failure::of(error.cause(), &Error::Look(Box::new(error)));
            let mut report = WhatIfReport::failed(Mode::DryRun, vec![failure.text], 1);
            report.warnings = config.warnings;
            return Ok(report);
        }
    };
    let problems: Vec<String> = looked.problems.iter().map(problem).collect();
    let mut report = if looked.snapshot.inventory.is_none() {
        // vCenter could not be observed: the question has no answer, and that is a failure of
        // a backend, not of the input.
        WhatIfReport::failed(Mode::DryRun, problems, 1)
    } else {
        let mut report = answer(Mode::DryRun, &looked.snapshot, &config.policy, scenario)?;
        report.errors = problems;
        report.show_guest_clusters(looked.guest_clusters);
        report
    };
    report.warnings.splice(0..0, config.warnings);
    report.target = Some(target);
    Ok(report)
}

/// What could not be observed, in a read-only command's words (a run's say what it left
/// unchanged).
fn problem(problem: &Problem) -> String {
    match problem {
        Problem::VcenterUnobserved(chain) => {
            format!("vCenter could not be observed, so no ESXi host is known: {chain}")
        }
        Problem::SupervisorUnobserved(chain) => {
            format!("the Supervisor could not be read, so no ESXi host is known: {chain}")
        }
        Problem::MetricsUnavailable(chain) => {
            format!("actual usage could not be read (what-if does not need it): {chain}")
        }
        Problem::NotPlanned(chain) => chain.to_string(),
        // what-if reads no history and records none.
        Problem::HistoryUnreadable(unreadable) => unreadable.to_string(),
        Problem::HistoryNotRecorded(chain) => chain.to_string(),
    }
}

fn answer(
    mode: Mode,
    snapshot: &Snapshot,
    policy: &Policy,
    scenario: &Scenario,
) -> Result<WhatIfReport, Error> {
    let answer = what_if::what_if(snapshot, policy, scenario).map_err(Error::WhatIf)?;
    Ok(WhatIfReport::new(mode, answer))
}
