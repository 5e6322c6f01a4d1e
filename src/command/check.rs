//! `check`: resolves `run`'s settings as `run` does (unusable settings are a usage error, exit
//! code 2), checks every backend they name ([`crate::check`]), prints the result as text tables
//! or one JSON document, and exits 0 when nothing is missing, 1 when something is, and 3 when
//! only going live (`dryRun` off) misses something (0 with `--accept-missing-for-going-live`).

use std::process::ExitCode;

use tracing::warn;

use super::Error;
use crate::check;
use crate::cli::CheckArgs;
use crate::report::{OutputFormat, write_stdout};
use crate::settings::RunConfig;

pub fn execute(args: &CheckArgs, output: OutputFormat) -> Result<ExitCode, Error> {
    let config = RunConfig::resolve(&args.run).map_err(|error| Error::Config(Box::new(error)))?;
    for warning in &config.warnings {
        warn!("{warning}");
    }
    let runtime = super::runtime()?;
    let mut report = runtime.block_on(check::check(&config));
    if args.accept_missing_for_going_live && report.exit_code == check::EXIT_MISSING_FOR_GOING_LIVE
    {
        // Accepted, as asked: the report repeats the process's exit code.
        report.exit_code = 0;
    }
    let text = match output {
        OutputFormat::Json => report.json(),
        // `execute` refuses the other formats for this command before it starts.
        OutputFormat::Text
        | OutputFormat::Html
        | OutputFormat::Sarif
        | OutputFormat::Github
        | OutputFormat::Markdown => report.text(),
    };
    write_stdout(text.as_bytes()).map_err(Error::Output)?;
    Ok(ExitCode::from(report.exit_code))
}
