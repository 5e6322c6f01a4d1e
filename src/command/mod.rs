//! The commands, and the one place errors become exit codes.

mod demo;
mod plan;
mod validate;

use std::process::ExitCode;

use crate::cli::{Args, Command};
use crate::policy::PolicyError;
use crate::snapshot::SnapshotError;

/// Why a command could not do its job.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid policy")]
    Policy(#[source] PolicyError),
    #[error("invalid snapshot")]
    Snapshot(#[source] SnapshotError),
    #[error("cannot write the report to stdout")]
    Output(#[source] std::io::Error),
}

impl Error {
    /// DESIGN §5: 2 for invalid input or usage, 1 for failed actions or backends.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Policy(_) | Error::Snapshot(_) => 2,
            Error::Output(_) => 1,
        }
    }
}

/// Run the chosen command; the exit code on success is the command's verdict.
pub fn execute(args: Args) -> Result<ExitCode, Error> {
    match args.command {
        Command::Plan(plan_args) => plan::execute(&plan_args, args.output),
        Command::Validate(validate_args) => validate::execute(&validate_args, args.output),
        Command::Demo => demo::execute(args.output),
    }
}
