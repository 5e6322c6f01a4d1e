//! `plan`: the planner against recorded state, offline.

use std::process::ExitCode;

use tracing::{info, warn};

use super::Error;
use crate::cli::PlanArgs;
use crate::outcome::Problem;
use crate::report::{Mode, OutputFormat, Report};
use crate::snapshot::History;
use crate::{footprint, plan, policy, snapshot};

/// Exit code of `plan --max-evictions N` when the plan evicts more than N pods: distinct from
/// 1 (failure) and 2 (invalid input) so a CI job can tell a budget breach from a broken file.
pub const EXCEEDS_MAX_EVICTIONS: u8 = 3;

pub fn execute(args: &PlanArgs, output: OutputFormat) -> Result<ExitCode, Error> {
    let loaded = policy::load_file(&args.policy).map_err(Error::Policy)?;
    for warning in &loaded.warnings {
        warn!(policy = %args.policy.display(), "{warning}");
    }
    let now = args.now.unwrap_or_else(chrono::Utc::now);
    let snapshot = snapshot::load_files_within(&args.snapshot, now, args.max_snapshot_size)
        .map_err(Error::Snapshot)?;
    if !snapshot.ignored.is_empty() {
        info!(count = snapshot.ignored.len(), first = %snapshot.ignored[0], "ignored objects of kinds planning does not use");
    }
    plan::check_priority_classes(&snapshot.snapshot, &loaded.policy)
        .map_err(Error::PriorityClass)?;
    let plan = plan::plan(&snapshot.snapshot, &loaded.policy);
    let evictions = plan.evictions.len();
    let mut report = Report::planned(Mode::Plan, plan);
    // Said as the run says it; the plan is made all the same (no paced eviction in it), so the
    // exit code stays that of a plan.
    if let History::Unreadable(unreadable) = &snapshot.snapshot.history {
        let problem = Problem::HistoryUnreadable(unreadable.clone());
        warn!("{problem}");
        report.errors.push(problem.to_string());
    }
    if output == OutputFormat::Html {
        report.place(&snapshot.snapshot, &loaded.policy);
    }
    report.print(output).map_err(Error::Output)?;
    // The process ends here: freeing 150,000 pods one allocation at a time took a twentieth of
    // the command, and the operating system takes the memory back at once.
    std::mem::forget(snapshot);
    footprint::log_used();
    match args.max_evictions {
        Some(max) if evictions > max => {
            warn!(
                evictions,
                max, "the plan evicts more pods than --max-evictions allows"
            );
            Ok(ExitCode::from(EXCEEDS_MAX_EVICTIONS))
        }
        _ => Ok(ExitCode::SUCCESS),
    }
}
