//! The commands, and the one place errors become exit codes.

mod check;
mod completions;
pub(crate) mod demo;
mod plan;
mod run;
mod snapshot;
mod validate;
mod what_if;

use std::path::PathBuf;
use std::process::ExitCode;

use crate::cli::{Args, Command};
use crate::policy::PolicyError;
use crate::report::OutputFormat;
use crate::run::ConfigError;
use crate::snapshot::SnapshotError;

/// Why a command could not do its job.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid policy")]
    Policy(#[source] PolicyError),
    #[error("invalid policy for this snapshot")]
    PriorityClass(#[source] crate::plan::UnknownPriorityClass),
    #[error("invalid snapshot")]
    Snapshot(#[source] SnapshotError),
    #[error("cannot write the report to stdout")]
    Output(#[source] std::io::Error),
    #[error("invalid configuration")]
    Config(#[source] Box<ConfigError>),
    #[error("cannot start the async runtime")]
    Runtime(#[source] std::io::Error),
    #[error("cannot read the Kubernetes cluster")]
    Kubernetes(#[source] Box<crate::kube::Error>),
    #[error("cannot observe vCenter")]
    Vsphere(#[source] crate::vsphere::Error),
    #[error("--output html is for plan, run and demo, not for {command}")]
    NoHtml { command: &'static str },
    #[error("cannot answer what-if")]
    WhatIf(#[source] crate::plan::what_if::WhatIfError),
    #[error("cannot read the cluster and vCenter")]
    Look(#[source] Box<crate::run::Error>),
    #[error("cannot write snapshot file {path}")]
    WriteSnapshot {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// DESIGN §5: 2 for invalid input or usage, 1 for failed actions or backends.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Policy(_)
            | Error::PriorityClass(_)
            | Error::Snapshot(_)
            | Error::Config(_)
            | Error::WhatIf(_)
            | Error::NoHtml { .. } => 2,
            Error::Output(_)
            | Error::Runtime(_)
            | Error::Kubernetes(_)
            | Error::Vsphere(_)
            | Error::Look(_)
            | Error::WriteSnapshot { .. } => 1,
        }
    }
}

/// Run the chosen command; the exit code on success is the command's verdict.
pub fn execute(args: Args) -> Result<ExitCode, Error> {
    let html = args.output == OutputFormat::Html;
    match args.command {
        Command::Plan(plan_args) => plan::execute(&plan_args, args.output),
        Command::Validate(_) if html => Err(Error::NoHtml {
            command: "validate",
        }),
        Command::Validate(validate_args) => validate::execute(&validate_args, args.output),
        Command::Demo => demo::execute(args.output),
        Command::Run(run_args) => run::execute(&run_args, args.output),
        Command::Check(_) if html => Err(Error::NoHtml { command: "check" }),
        Command::Check(check_args) => check::execute(&check_args, args.output),
        Command::Snapshot(_) if html => Err(Error::NoHtml {
            command: "snapshot",
        }),
        Command::Snapshot(snapshot_args) => snapshot::execute(&snapshot_args, args.output),
        Command::WhatIf(what_if_args) => what_if::execute(&what_if_args, args.output),
        Command::Completions(completions) => completions::execute(completions.shell),
    }
}

/// The runtime of the live commands.
fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(Error::Runtime)
}
