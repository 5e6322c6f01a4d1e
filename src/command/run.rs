//! `run`: the job. Resolves its settings, runs once (`crate::run`), prints the report.

use std::process::ExitCode;

use tracing::warn;

use super::Error;
use crate::cli::RunArgs;
use crate::report::OutputFormat;
use crate::run::{self, RunConfig, Stop};

pub fn execute(args: &RunArgs, output: OutputFormat) -> Result<ExitCode, Error> {
    let config = RunConfig::resolve(args).map_err(|e| Error::Config(Box::new(e)))?;
    for warning in &config.policy_warnings {
        warn!("{warning}");
    }
    let runtime = super::runtime()?;
    let report = runtime.block_on(async {
        let stop = Stop::on_signals().map_err(Error::Runtime)?;
        run::run(&config, &stop)
            .await
            .map_err(|e| Error::Run(Box::new(e)))
    })?;
    report.print(output).map_err(Error::Output)?;
    Ok(super::report_exit_code(&report))
}
