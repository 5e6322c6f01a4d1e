//! `check`: resolves `run`'s settings as `run` does (unusable settings are a usage error, exit
//! code 2), checks every backend they name ([`crate::check`]), prints the result as text tables
//! or one JSON document, and exits 0 when nothing is missing, 1 otherwise.

use std::process::ExitCode;

use tracing::warn;

use super::Error;
use crate::check;
use crate::cli::CheckArgs;
use crate::report::{OutputFormat, write_stdout};
use crate::run::RunConfig;

pub fn execute(args: &CheckArgs, output: OutputFormat) -> Result<ExitCode, Error> {
    let config = RunConfig::resolve(&args.run).map_err(|error| Error::Config(Box::new(error)))?;
    for warning in &config.warnings {
        warn!("{warning}");
    }
    let runtime = super::runtime()?;
    let report = runtime.block_on(check::check(&config));
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
