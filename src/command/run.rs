//! `run`: the job. Resolves its settings, runs once (`crate::run`), pushes the run's metrics when
//! `--metrics-push-url` asks for it, prints the report — also when the settings are unusable, so
//! a machine reading `--output json` always gets one, and the Pushgateway hears of that run too.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use tracing::warn;

use super::Error;
use crate::cli::RunArgs;
use crate::error_chain;
use crate::metrics::push_limit;
use crate::report::{Mode, OutputFormat, Report, ReportWarning};
use crate::run::{self, ConfigError, RunConfig, Stop, StopReason};

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
    let report = runtime.block_on(async {
        let stop = Stop::on_signals().map_err(Error::Runtime)?;
        if let Some(deadline) = config.deadline {
            stop.abort_after(deadline);
        }
        let finished = run::run(&config, &stop).await;
        let mut report = finished.report;
        report.exit_code = Some(finished.verdict.exit_code());
        if let Some(pushgateway) = &config.metrics_push {
            let stopped_by_signal = matches!(stop.halted(), Some(StopReason::Signal(_)));
            let limit = push_limit(
                config.timeout,
                deadline_left(config.deadline, started),
                stopped_by_signal,
                run::RELEASE_LIMIT,
            );
            let cluster = config.policy.cluster_name.as_deref();
            pushgateway
                .push_report(&mut report, cluster, started, limit)
                .await;
        }
        Ok::<_, Error>(report)
    })?;
    let code = report.exit_code.expect("set above");
    report.print(output).map_err(Error::Output)?;
    crate::footprint::log_used();
    Ok(ExitCode::from(code))
}

/// Reports settings that cannot be used (exit code 2), and pushes that report when the metrics
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
    report.errors.push(error_chain(&error));
    report.exit_code = Some(error.exit_code());
    if let Ok(Some(pushgateway)) = run::metrics_push(&args.metrics) {
        let limit = push_limit(
            Duration::from_secs(args.connection.request_timeout),
            deadline_left(args.deadline.map(|deadline| deadline.0), started),
            false,
            run::RELEASE_LIMIT,
        );
        let cluster = args.cluster_name.as_deref();
        match super::runtime() {
            Ok(runtime) => {
                runtime.block_on(pushgateway.push_report(&mut report, cluster, started, limit))
            }
            Err(runtime_error) => report.warnings.push(ReportWarning::MetricsNotPushed {
                cause: error_chain(&runtime_error),
            }),
        }
    }
    report.print(output).map_err(Error::Output)?;
    Err(error)
}

/// What remains of `--deadline`, counted from the run's start.
fn deadline_left(deadline: Option<Duration>, started: Instant) -> Option<Duration> {
    deadline.map(|deadline| deadline.saturating_sub(started.elapsed()))
}
