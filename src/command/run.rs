//! `run`: the job. Resolves its settings, runs once (`crate::run`), prints the report — also
//! when the settings are unusable, so a machine reading `--output json` always gets one.

use std::process::ExitCode;

use tracing::warn;

use super::Error;
use crate::cli::RunArgs;
use crate::error_chain;
use crate::report::{Mode, OutputFormat, Report};
use crate::run::{self, RunConfig, Stop};

pub fn execute(args: &RunArgs, output: OutputFormat) -> Result<ExitCode, Error> {
    let config = match RunConfig::resolve(args) {
        Ok(config) => config,
        Err(error) => {
            let error = Error::Config(Box::new(error));
            let mode = if args.dry_run {
                Mode::DryRun
            } else {
                Mode::Run
            };
            let mut report = Report::empty(mode);
            report.errors.push(error_chain(&error));
            report.exit_code = Some(error.exit_code());
            report.print(output).map_err(Error::Output)?;
            return Err(error);
        }
    };
    for warning in &config.warnings {
        warn!("{warning}");
    }
    let runtime = super::runtime()?;
    let mut report = runtime.block_on(async {
        let stop = Stop::on_signals().map_err(Error::Runtime)?;
        if let Some(deadline) = config.deadline {
            stop.abort_after(deadline);
        }
        Ok::<_, Error>(run::run(&config, &stop).await)
    })?;
    let code = super::report_exit_code(&report);
    report.exit_code = Some(code);
    report.print(output).map_err(Error::Output)?;
    Ok(ExitCode::from(code))
}
