//! `plan`: the planner against recorded state, offline.

use std::path::Path;
use std::process::ExitCode;

use tracing::{info, warn};

use super::Error;
use crate::cli::PlanArgs;
use crate::outcome::Problem;
use crate::policy::{Policy, Severity, SourceKind};
use crate::report::diff::PlanDiff;
use crate::report::findings::{self, Finding};
use crate::report::{Mode, NowBeforeCreation, OutputFormat, Report, ReportWarning};
use crate::snapshot::{History, Snapshot};
use crate::{footprint, plan, policy, snapshot, topology};

/// Exit code of `plan --max-evictions N` when the plan evicts more than N pods: distinct from
/// 1 (failure) and 2 (invalid input) so a CI job can tell a budget breach from a broken file.
pub const EXCEEDS_MAX_EVICTIONS: u8 = 3;

/// Exit code of `plan --baseline-policy` when the two plans differ: not 1, which stays "could
/// not write the report", so a CI step that accepts a difference still fails on a lost review.
/// The same code as `--max-evictions`' (the two flags exclude each other): the answer to look at.
pub const PLANS_DIFFER: u8 = 3;

/// Exit code of `plan --strict` when the plan is made at an instant before pods of the
/// snapshot were created: the input does not fit the instant, as for any invalid input.
pub const NOW_BEFORE_CREATION: u8 = 2;

pub fn execute(args: &PlanArgs, output: OutputFormat) -> Result<ExitCode, Error> {
    if let Some(baseline) = &args.baseline_policy {
        return compare(args, baseline, output);
    }
    if output == OutputFormat::Markdown {
        return Err(Error::UnsupportedOutput {
            format: output,
            command: "plan without --baseline-policy",
        });
    }
    let planned = match make(args, output) {
        Ok(planned) => planned,
        Err(error) if output.is_findings() => {
            print_findings(&input_findings(args, &error), output)?;
            return Err(error);
        }
        Err(error) => return Err(error),
    };
    let too_many = args
        .max_evictions
        .filter(|max| planned.report.plan.evictions.len() > *max);
    if output.is_findings() {
        let mut found: Vec<Finding> = planned
            .warnings
            .iter()
            .map(|warning| Finding::of(warning, Severity::Warning))
            .collect();
        found.extend(
            planned
                .report
                .errors
                .iter()
                .map(|e| Finding::input(None, e)),
        );
        if let Some(early) = &planned.now_before_creation {
            found.push(Finding::now_before_creation(early));
        }
        if let Some(max) = too_many {
            found.push(too_many_evictions(planned.report.plan.evictions.len(), max));
        }
        print_findings(&found, output)?;
    } else {
        planned.report.print(output).map_err(Error::Output)?;
    }
    // The process ends here.
    footprint::leave_to_exit(planned.snapshot);
    footprint::log_used();
    // Checked first: a plan at the wrong instant has a count of evictions that means nothing.
    if args.strict && planned.now_before_creation.is_some() {
        warn!("--strict: the plan is made before pods of the snapshot were created");
        return Ok(ExitCode::from(NOW_BEFORE_CREATION));
    }
    match too_many {
        Some(max) => {
            warn!(
                evictions = planned.report.plan.evictions.len(),
                max, "the plan evicts more pods than --max-evictions allows"
            );
            Ok(ExitCode::from(EXCEEDS_MAX_EVICTIONS))
        }
        None => Ok(ExitCode::SUCCESS),
    }
}

/// `plan --baseline-policy OLD --policy NEW`: both plans of one snapshot, and what NEW does
/// differently. Exit 0 when nothing differs, [`PLANS_DIFFER`] when something does.
fn compare(args: &PlanArgs, baseline: &Path, output: OutputFormat) -> Result<ExitCode, Error> {
    if !matches!(
        output,
        OutputFormat::Text | OutputFormat::Json | OutputFormat::Markdown
    ) {
        return Err(Error::UnsupportedOutput {
            format: output,
            command: "plan --baseline-policy",
        });
    }
    let proposed = policy::load_file(&args.policy).map_err(Error::Policy)?;
    let old = policy::load_file(baseline).map_err(Error::Policy)?;
    let snapshot = load(&args.snapshot, args.now, args.max_snapshot_size)?;
    // The comparison has no warnings of its own to carry it: logged only.
    let _ = now_before_creation(&args.snapshot, args.max_snapshot_size, &snapshot.snapshot);
    // Each policy plans on the hosts its own source gives.
    let (old_snapshot, proposed_snapshot) = (
        with_source(&snapshot.snapshot, &old.policy),
        with_source(&snapshot.snapshot, &proposed.policy),
    );
    let old_snapshot = old_snapshot.as_ref().unwrap_or(&snapshot.snapshot);
    let proposed_snapshot = proposed_snapshot.as_ref().unwrap_or(&snapshot.snapshot);
    for (file, policy) in [(baseline, &old.policy), (&args.policy, &proposed.policy)] {
        plan::check_priority_classes(&snapshot.snapshot, policy).map_err(Error::PriorityClass)?;
        check_sites(file, &snapshot.snapshot, policy)?;
    }
    let diff = PlanDiff::between(
        &plan::plan(old_snapshot, &old.policy),
        &plan::plan(proposed_snapshot, &proposed.policy),
        baseline.display().to_string(),
        args.policy.display().to_string(),
    );
    let text = match output {
        OutputFormat::Json => {
            serde_json::to_string_pretty(&diff).expect("a comparison serializes") + "\n"
        }
        OutputFormat::Markdown => diff.to_markdown(),
        _ => diff.to_text(),
    };
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(Error::Output)?;
    footprint::leave_to_exit(snapshot);
    Ok(if diff.differs {
        ExitCode::from(PLANS_DIFFER)
    } else {
        ExitCode::SUCCESS
    })
}

/// The snapshot as `policy`'s topology source sees it, when that differs from the recorded one
/// (source `node-label` reads the nodes' label instead of a recorded inventory).
fn with_source(snapshot: &Snapshot, policy: &Policy) -> Option<Snapshot> {
    if policy.vsphere.source != SourceKind::NodeLabel {
        return None;
    }
    let mut own = snapshot.clone();
    topology::apply_node_label(&mut own, &policy.vsphere);
    Some(own)
}

/// Where the policy meets the inventory: sites that do not partition the hosts make the policy
/// invalid for this snapshot, each finding a problem of the file at `vsphere.sites`.
fn check_sites(file: &Path, snapshot: &Snapshot, policy: &Policy) -> Result<(), Error> {
    crate::sites::check(snapshot.inventory.as_ref(), &policy.vsphere).map_err(|refused| {
        let file = file.display().to_string();
        Error::Policy(policy::PolicyError::Invalid {
            problems: refused.problems(&file),
            file,
        })
    })
}

/// A plan made, with what it was made from.
struct Planned {
    report: Report,
    /// The policy's warnings.
    warnings: Vec<policy::PolicyProblem>,
    /// The plan's instant is before pods of the snapshot were created (also a report warning).
    now_before_creation: Option<NowBeforeCreation>,
    snapshot: snapshot::Loaded,
}

fn make(args: &PlanArgs, output: OutputFormat) -> Result<Planned, Error> {
    let loaded = policy::load_file(&args.policy).map_err(Error::Policy)?;
    for warning in &loaded.warnings {
        warn!(policy = %args.policy.display(), "{warning}");
    }
    let mut snapshot = load(&args.snapshot, args.now, args.max_snapshot_size)?;
    let replaced = topology::apply_node_label(&mut snapshot.snapshot, &loaded.policy.vsphere);
    if !snapshot.ignored.is_empty() {
        info!(count = snapshot.ignored.len(), first = %snapshot.ignored[0], "ignored objects of kinds planning does not use");
    }
    plan::check_priority_classes(&snapshot.snapshot, &loaded.policy)
        .map_err(Error::PriorityClass)?;
    check_sites(&args.policy, &snapshot.snapshot, &loaded.policy)?;
    let plan = plan::plan(&snapshot.snapshot, &loaded.policy);
    let mut report = Report::planned(Mode::Plan, plan);
    if let Some(replaced) = replaced {
        warn!("{replaced}");
        report
            .warnings_before_plan
            .insert(0, ReportWarning::Topology(replaced));
    }
    let early = now_before_creation(&args.snapshot, args.max_snapshot_size, &snapshot.snapshot);
    if let Some(early) = &early {
        report
            .warnings_after_plan
            .push(ReportWarning::NowBeforeCreation(early.clone()));
    }
    // Said as the run says it; the plan is made all the same (no paced eviction in it), so the
    // exit code stays that of a plan.
    if let History::Unreadable(unreadable) = &snapshot.snapshot.history {
        let problem = Problem::HistoryUnreadable(unreadable.clone());
        warn!("{problem}");
        report.errors.push(problem.to_string());
    }
    // The hosts come from VM Operator's objects unless the policy reads the nodes' label.
    if loaded.policy.vsphere.source != SourceKind::NodeLabel {
        report.show_guest_clusters(snapshot.supervisor.clone());
    }
    if output == OutputFormat::Html {
        report.place(&snapshot.snapshot, &loaded.policy);
    }
    Ok(Planned {
        report,
        warnings: loaded.warnings,
        now_before_creation: early,
        snapshot,
    })
}

/// The snapshot files, planned at `now` when given, else at their `recordedAt`, else at the
/// clock's now; which one is logged.
pub(super) fn load(
    paths: &[std::path::PathBuf],
    now: Option<chrono::DateTime<chrono::Utc>>,
    limit: snapshot::FileSizeLimit,
) -> Result<snapshot::Loaded, Error> {
    let loaded =
        snapshot::load_files_at(paths, now, limit, chrono::Utc::now).map_err(Error::Snapshot)?;
    let at = loaded.snapshot.now.to_rfc3339();
    match (now, loaded.recorded_at) {
        (Some(_), _) => info!(now = %at, "planning at --now"),
        (None, Some(_)) => info!(now = %at, "planning at the snapshot's recordedAt"),
        (None, None) => {
            info!(now = %at, "planning at the current time: the snapshot records no recordedAt")
        }
    }
    Ok(loaded)
}

/// Whether `snapshot` is planned at an instant before some of its pods were created, placed
/// at the youngest of them in the file that holds it; also logged as a warning.
pub(super) fn now_before_creation(
    paths: &[std::path::PathBuf],
    limit: snapshot::FileSizeLimit,
    snapshot: &snapshot::Snapshot,
) -> Option<NowBeforeCreation> {
    let after = snapshot.created_after_now()?;
    let youngest = after.youngest;
    let key = youngest.key();
    let (file, position) = match snapshot::locate_object(paths, limit, "Pod", &key) {
        Some((file, position)) => (file, Some(position)),
        // Not found again (the file changed since): the first file still names the input.
        None => (paths.first().cloned().unwrap_or_default(), None),
    };
    let warning = NowBeforeCreation {
        file: file.display().to_string(),
        position,
        pod: key,
        created: youngest.created.expect("created after now, so created"),
        now: snapshot.now,
        count: after.count,
    };
    warn!("{}", ReportWarning::NowBeforeCreation(warning.clone()));
    Some(warning)
}

/// The findings of a plan that could not be made: a policy's problems each at its place, any
/// other failure as one finding naming the file when one is to blame.
fn input_findings(args: &PlanArgs, error: &Error) -> Vec<Finding> {
    match error {
        Error::Policy(policy::PolicyError::Invalid { problems, .. }) => problems
            .iter()
            .map(|problem| Finding::of(problem, Severity::Error))
            .collect(),
        Error::Policy(_) | Error::PriorityClass(_) => vec![Finding::failed(
            Some(args.policy.display().to_string()),
            error,
        )],
        _ => vec![Finding::failed(None, error)],
    }
}

fn too_many_evictions(evictions: usize, max: usize) -> Finding {
    let mut finding = Finding::input(
        None,
        &format!("the plan evicts {evictions} pods, more than --max-evictions {max} allows"),
    );
    finding.rule = findings::FindingRule::MaxEvictions;
    finding
}

fn print_findings(found: &[Finding], output: OutputFormat) -> Result<(), Error> {
    let text = findings::render(found, output);
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(Error::Output)
}
