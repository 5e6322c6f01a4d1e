//! `run`: the job. Resolves its settings, runs once (`crate::run`), prints the report — also when
//! the settings are unusable, so a machine reading `--output json` always gets one —, then
//! releases the lock and logs out of vCenter, and pushes the run's metrics when
//! `--metrics-push-url` asks for it (the Pushgateway hears of a run with unusable settings too).
//! The report comes first so that at the deadline it is out before the pod is killed; what goes
//! wrong after it is logged on stderr.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use tracing::warn;

use super::Error;
use crate::cli::RunArgs;
use crate::metrics::{RunTiming, push_limit};
use crate::outcome::{Cause, Failure, Step};
use crate::report::{Mode, OutputFormat, Report, ReportWarning};
use crate::run::{self, Stop, StopReason};
use crate::settings::{self, ConfigError, RELEASE_LIMIT, RunConfig};

pub fn execute(args: &RunArgs, output: OutputFormat) -> Result<ExitCode, Error> {
    let started = Instant::now();
    let mut config = match RunConfig::resolve(args) {
        Ok(config) => config,
        Err(error) => return unusable_settings(args, output, started, error),
    };
    config.placement = output == OutputFormat::Html;
    for warning in &config.warnings {
        warn!("{warning}");
    }
    let runtime = super::runtime()?;
    let code = runtime.block_on(run_and_print(&config, output, started))?;
    crate::footprint::log_used();
    Ok(ExitCode::from(code))
}

/// Runs once, prints the report, then ends the run ([`after_the_report`]); the exit code.
async fn run_and_print(
    config: &RunConfig,
    output: OutputFormat,
    started: Instant,
) -> Result<u8, Error> {
    let stop = Stop::on_signals().map_err(Error::Runtime)?;
    if let Some(deadline) = config.deadline {
        stop.abort_after(deadline);
    }
    let run::Finished {
        mut report,
        verdict,
        teardown,
    } = run::run(config, &stop).await;
    let code = verdict.exit_code();
    report.exit_code = Some(code);
    // The report first: at the deadline it must be out before the pod is killed. What follows
    // is bounded, and happens even when stdout is gone.
    let printed = report.print(output);
    let timing = RunTiming {
        duration: started.elapsed(),
        finished: chrono::Utc::now(),
    };
    after_the_report(config, &stop, teardown, &report, &timing, started).await;
    printed.map_err(Error::Output)?;
    Ok(code)
}

/// Releases the lock and logs out of vCenter (at once, within [`RELEASE_LIMIT`]), then
/// pushes the report's metrics (within [`push_limit`]). The report is out: what fails here is
/// logged.
async fn after_the_report(
    config: &RunConfig,
    stop: &Stop,
    teardown: run::Teardown,
    report: &Report,
    timing: &RunTiming,
    started: Instant,
) {
    if let Err(error) = teardown.finish().await {
        let cause = error.failure();
        warn!("{}", ReportWarning::LockNotReleased { cause });
    }
    let Some(pushgateway) = &config.metrics_push else {
        return;
    };
    let stopped_by_signal = matches!(stop.halted(), Some(StopReason::Signal(_)));
    let limit = push_limit(
        config.timeout,
        deadline_left(config.deadline, started),
        stopped_by_signal,
        RELEASE_LIMIT,
    );
    let cluster = config.policy.cluster_name.as_deref();
    pushgateway
        .push_report(report, cluster, timing, limit)
        .await;
}

/// Reports settings that cannot be used (exit code 2), then pushes that report when the metrics
/// settings themselves are usable: an alert on failing runs must see this one too. Its group
/// is `--cluster-name`'s; the policy, which may be what failed, is not read again.
fn unusable_settings(
    args: &RunArgs,
    output: OutputFormat,
    started: Instant,
    error: ConfigError,
) -> Result<ExitCode, Error> {
    let error = Error::Config(Box::new(error));
    let mode = if args.dry_run {
        Mode::DryRun
    } else {
        Mode::Run
    };
    let mut report = Report::empty(mode);
    let failure = Failure::of(Cause::Config, &error);
    report.failures.push((Step::Settings, failure.cause));
    report.errors.push(failure.text);
    report.exit_code = Some(error.exit_code());
    // As a run's: printed first, the push after it.
    let printed = report.print(output);
    let timing = RunTiming {
        duration: started.elapsed(),
        finished: chrono::Utc::now(),
    };
    if let Ok(Some(pushgateway)) = settings::metrics_push(&args.metrics) {
        let limit = push_limit(
            Duration::from_secs(args.connection.request_timeout),
            deadline_left(args.deadline.map(|deadline| deadline.0), started),
            false,
            RELEASE_LIMIT,
        );
        let cluster = args.cluster_name.as_deref();
        match super::runtime() {
            Ok(runtime) => {
                runtime.block_on(pushgateway.push_report(&report, cluster, &timing, limit))
            }
            Err(runtime_error) => warn!(
                "{}",
                ReportWarning::MetricsNotPushed {
                    cause: Failure::of(Cause::Other, &runtime_error),
                }
            ),
        }
    }
    printed.map_err(Error::Output)?;
    Err(error)
}

/// What remains of `--deadline`, counted from the run's start.
fn deadline_left(deadline: Option<Duration>, started: Instant) -> Option<Duration> {
    deadline.map(|deadline| deadline.saturating_sub(started.elapsed()))
}
