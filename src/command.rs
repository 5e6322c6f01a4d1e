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
use crate::settings::ConfigError;
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
    #[error("cannot read the Supervisor")]
    Supervisor(#[source] Box<crate::supervisor::Error>),
    #[error("--output {} is for {}, not for {command}", format.as_str(), writers(*format))]
    UnsupportedOutput {
        format: OutputFormat,
        command: &'static str,
    },
    #[error("cannot answer what-if")]
    WhatIf(#[source] crate::plan::what_if::WhatIfError),
    #[error("cannot read the cluster and vCenter")]
    Look(#[source] Box<crate::live::Error>),
    #[error("cannot write snapshot file {path}")]
    WriteSnapshot {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// docs/design.md §5: 2 for invalid input or usage, 1 for failed actions or backends.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Policy(_)
            | Error::PriorityClass(_)
            | Error::Snapshot(_)
            | Error::Config(_)
            | Error::WhatIf(_)
            | Error::UnsupportedOutput { .. } => 2,
            Error::Output(_)
            | Error::Runtime(_)
            | Error::Kubernetes(_)
            | Error::Vsphere(_)
            | Error::Supervisor(_)
            | Error::Look(_)
            | Error::WriteSnapshot { .. } => 1,
        }
    }
}

/// Run the chosen command; the exit code on success is the command's verdict.
pub fn execute(args: Args) -> Result<ExitCode, Error> {
    let command = name(&args.command);
    // Completions print a script whatever `--output` says.
    let supported = command == "completions" || writers(args.output).commands.contains(&command);
    if !supported {
        return Err(Error::UnsupportedOutput {
            format: args.output,
            command,
        });
    }
    match args.command {
        Command::Plan(plan_args) => plan::execute(&plan_args, args.output),
        Command::Validate(validate_args) => validate::execute(&validate_args, args.output),
        Command::Demo(demo) => demo::execute(demo.story, args.output),
        Command::Run(run_args) => run::execute(&run_args, args.output),
        Command::Check(check_args) => check::execute(&check_args, args.output),
        Command::Snapshot(snapshot_args) => snapshot::execute(&snapshot_args, args.output),
        Command::WhatIf(what_if_args) => what_if::execute(&what_if_args, args.output),
        Command::Completions(completions) => completions::execute(completions.shell),
    }
}

/// The command as the command line names it.
fn name(command: &Command) -> &'static str {
    match command {
        Command::Plan(_) => "plan",
        Command::Validate(_) => "validate",
        Command::Demo(_) => "demo",
        Command::Run(_) => "run",
        Command::Check(_) => "check",
        Command::Snapshot(_) => "snapshot",
        Command::WhatIf(_) => "what-if",
        Command::Completions(_) => "completions",
    }
}

/// The commands that write one format, and the option they need for it, if any.
struct Writers {
    commands: &'static [&'static str],
    /// `markdown` is a diff of two plans: only with `--baseline-policy`.
    with_option: Option<&'static str>,
}

impl std::fmt::Display for Writers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.commands.join(", "))?;
        match self.with_option {
            Some(option) => write!(f, " {option}"),
            None => Ok(()),
        }
    }
}

/// The commands that write `format`.
fn writers(format: OutputFormat) -> Writers {
    let commands: &'static [&'static str] = match format {
        OutputFormat::Text | OutputFormat::Json => &[
            "plan", "validate", "demo", "run", "check", "snapshot", "what-if",
        ],
        OutputFormat::Html => &["plan", "run", "demo", "what-if"],
        OutputFormat::Sarif | OutputFormat::Github => &["validate", "plan"],
        OutputFormat::Markdown => &["plan"],
    };
    let with_option = (format == OutputFormat::Markdown).then_some("--baseline-policy");
    Writers {
        commands,
        with_option,
    }
}

/// The runtime of the live commands.
fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(Error::Runtime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unsupported_format_names_the_commands_that_write_it() {
        let message = |format, command| Error::UnsupportedOutput { format, command }.to_string();
        assert_eq!(
            message(OutputFormat::Html, "check"),
            "--output html is for plan, run, demo, what-if, not for check"
        );
        assert_eq!(
            message(OutputFormat::Markdown, "run"),
            "--output markdown is for plan --baseline-policy, not for run"
        );
    }

    #[test]
    fn text_and_json_are_written_by_every_command_with_a_report() {
        for format in [OutputFormat::Text, OutputFormat::Json] {
            for command in [
                "plan", "validate", "demo", "run", "check", "snapshot", "what-if",
            ] {
                assert!(writers(format).commands.contains(&command), "{command}");
            }
        }
        assert!(!writers(OutputFormat::Sarif).commands.contains(&"run"));
    }
}
