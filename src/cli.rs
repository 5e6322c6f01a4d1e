//! Command-line arguments. Every flag documents itself (`--help`); secrets never come from flags.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use crate::report::OutputFormat;

/// Keep Kubernetes workloads spread across the ESXi hosts under their node VMs.
#[derive(Debug, Parser)]
#[command(name = "vsphere-descheduler", version, about, long_about = None)]
pub struct Args {
    /// Report format on stdout: `text` for people, `json` for machines (one document).
    #[arg(
        long,
        global = true,
        value_enum,
        default_value_t,
        env = "VSPHERE_DESCHEDULER_OUTPUT"
    )]
    pub output: OutputFormat,

    /// Log format on stderr. Verbosity comes from RUST_LOG (default `info`).
    #[arg(
        long,
        global = true,
        value_enum,
        default_value_t,
        env = "VSPHERE_DESCHEDULER_LOG_FORMAT"
    )]
    pub log_format: LogFormat,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Plan offline against recorded state (snapshot files); no network, nothing changed.
    Plan(PlanArgs),
    /// Check policy files; every problem with file:line:column, all at once.
    Validate(ValidateArgs),
    /// Show the plan of a built-in scenario: DRS moved a worker VM next to its replica's VM.
    Demo,
}

#[derive(Debug, clap::Args)]
pub struct PlanArgs {
    /// Snapshot files: Kubernetes objects as `kubectl get -o yaml|json` prints them, and a
    /// VSphereInventory. Repeat the flag or list several files.
    #[arg(long, required = true, num_args = 1.., value_name = "FILE")]
    pub snapshot: Vec<PathBuf>,

    /// The policy file.
    #[arg(long, value_name = "FILE", env = "VSPHERE_DESCHEDULER_POLICY")]
    pub policy: PathBuf,

    /// The instant to plan at (RFC 3339), for reproducible pod ages; default: now.
    #[arg(long, value_name = "TIME")]
    pub now: Option<chrono::DateTime<chrono::Utc>>,

    /// CI gate: exit with code 3 when the plan evicts more than this many pods.
    #[arg(long, value_name = "N")]
    pub max_evictions: Option<usize>,
}

#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// Policy files to check.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    #[default]
    Plain,
    Json,
}
