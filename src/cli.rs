//! Command-line arguments. Every flag documents itself (`--help`); secrets never come from flags.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use crate::duration::go_duration;
use crate::policy::SourceKind;
use crate::report::OutputFormat;
use crate::snapshot::FileSizeLimit;

/// Keep Kubernetes workloads spread across the ESXi hosts under their node VMs.
#[derive(Debug, Parser)]
#[command(name = "vsphere-descheduler", version, about, long_about = None)]
pub struct Args {
    /// Report format on stdout: `text` for people, `json` for machines (one document), `html`
    /// for one offline page (plan, run, demo, what-if), `sarif` and `github` for CI findings
    /// (validate, plan), `markdown` for a policy review (plan --baseline-policy). Only from the
    /// command line: stdout is what scripts parse, and an environment variable left in a shell
    /// or a CI job would change it unseen.
    #[arg(long, global = true, value_enum, default_value_t)]
    pub output: OutputFormat,

    /// Log format on stderr. Verbosity: `-v`, or `RUST_LOG` when set.
    #[arg(
        long,
        global = true,
        value_enum,
        default_value_t,
        env = "VSPHERE_DESCHEDULER_LOG_FORMAT"
    )]
    pub log_format: LogFormat,

    /// More log lines on stderr: `-v` adds the tool's debug lines and its libraries' warnings,
    /// `-vv` everything. Without it, only the tool's own lines (`info`) are written. `RUST_LOG`,
    /// when set, is the filter instead.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    #[command(subcommand)]
    pub command: Command,
}

impl Args {
    /// The process's command line parsed, or the usage error printed and the process ended
    /// with clap's exit code (2 for a usage error), as `Args::parse` does.
    pub fn parse_command_line() -> Args {
        let line: Vec<std::ffi::OsString> = std::env::args_os().collect();
        Args::parse_from_line(&line).unwrap_or_else(|error| error.exit())
    }

    /// [`Args::parse_command_line`] of `line` (the program's name first), without exiting.
    pub fn parse_from_line(line: &[std::ffi::OsString]) -> Result<Args, clap::Error> {
        Args::try_parse_from(line).map_err(|error| snapshot_output_hint(error, line))
    }
}

/// `snapshot --output prod-east.yaml`: `--output` is the global report format, and the
/// snapshot's file is `-o/--output-file`; clap alone would only say the value is invalid.
fn snapshot_output_hint(error: clap::Error, line: &[std::ffi::OsString]) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let about_output = matches!(
        error.get(ContextKind::InvalidArg),
        Some(ContextValue::String(arg)) if arg.starts_with("--output ")
    );
    let snapshot = line.iter().skip(1).any(|word| word == "snapshot");
    let value = match error.get(ContextKind::InvalidValue) {
        Some(ContextValue::String(value)) => value.clone(),
        _ => return error,
    };
    if error.kind() != ErrorKind::InvalidValue || !about_output || !snapshot {
        return error;
    }
    let mut command = <Args as clap::CommandFactory>::command();
    command.error(
        ErrorKind::InvalidValue,
        format!(
            "--output is the format of the summary on stdout (text or json), not the file to \
             write: {value:?} is not a format.\n\nThe snapshot file is -o/--output-file:\n  \
             vsphere-descheduler snapshot -o {value}"
        ),
    )
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Plan offline against recorded state (snapshot files); no network, nothing changed.
    Plan(PlanArgs),
    /// Check policy files; every problem with file:line:column, all at once.
    Validate(ValidateArgs),
    /// Show the plan of a built-in scenario: DRS moved a worker VM next to its replica's VM.
    Demo(DemoArgs),
    /// The job: observe Kubernetes and where the hosts come from (vCenter, a Supervisor, or a
    /// node label), label nodes, plan, evict, sync DRS rules (vCenter only), report.
    Run(RunArgs),
    /// Check, read-only, that everything a run needs is in place: the Kubernetes permissions,
    /// that admission lets the runs' label writes through (a dry run), the metrics API and
    /// PriorityClasses the policy needs; the vCenter login, each privilege on the objects runs
    /// touch, and the clusters' DRS and HA settings (with source supervisor instead: each grant
    /// on the Supervisor and its VM Operator objects); the Pushgateway. Takes `run`'s flags.
    /// Exit 0: everything in place; 1: something missing; 3: with --dry-run, nothing missing
    /// but for going live (vCenter's DRS rule write privilege, status
    /// missing-for-going-live); 2: invalid policy or usage.
    Check(CheckArgs),
    /// Record the live state (nodes, pods, PDBs, namespaces, PriorityClasses, and the vSphere
    /// inventory or the Supervisor's VM Operator objects) into a file that `plan --snapshot`
    /// reads.
    Snapshot(SnapshotArgs),
    /// What one ESXi host failing (or several), or entering maintenance mode, would do to the
    /// workloads: read-only, offline on snapshot files or live like `run --dry-run`.
    WhatIf(WhatIfArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish or powershell) for this command
    /// line.
    Completions(CompletionsArgs),
}

#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Which built-in story: `seed-lab` (hosts from vCenter; DRS rules written),
    /// `guest-cluster` (a VKS guest cluster whose hosts come from its Supervisor, without a
    /// vCenter account) or `stretched-cluster` (two sites of three hosts, a StatefulSet DRS
    /// moved into one site, and what losing that site would do).
    #[arg(long, value_enum, default_value_t)]
    pub story: DemoStory,
}

/// The built-in stories of `demo`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum DemoStory {
    #[default]
    SeedLab,
    GuestCluster,
    StretchedCluster,
}

#[derive(Debug, clap::Args)]
#[command(group(
    clap::ArgGroup::new("scenario")
        .required(true)
        .args(["host_fails", "maintenance", "site_fails", "maintenance_site"])
))]
pub struct WhatIfArgs {
    /// An ESXi host that fails: its node VMs go down. Repeat it for hosts failing at once. The
    /// name as vCenter writes it, or its first label (`esxi-41` for `esxi-41.example.com`)
    /// where only one host has it.
    #[arg(long = "host-fails", value_name = "HOST")]
    pub host_fails: Vec<String>,

    /// An ESXi host that enters maintenance mode: DRS moves its VMs to the cluster's other hosts.
    #[arg(long, value_name = "HOST")]
    pub maintenance: Option<String>,

    /// A site of `vsphere.sites` that fails: every node VM on its hosts goes down, and HA
    /// restarts them on the other site as the VM/Host rules and its capacity allow.
    #[arg(long = "site-fails", value_name = "SITE")]
    pub site_fails: Option<String>,

    /// A site of `vsphere.sites` whose every host enters maintenance mode: DRS moves their VMs
    /// to the other site, "must" VM/Host rules blocking, "should" rules giving way.
    #[arg(long = "maintenance-site", value_name = "SITE")]
    pub maintenance_site: Option<String>,

    /// Answer offline, on these snapshot files (as `plan --snapshot` reads them). Without it,
    /// the cluster and vCenter are read live, as `run --dry-run` reads them; nothing is changed.
    #[arg(long, num_args = 1.., value_name = "FILE")]
    pub snapshot: Vec<PathBuf>,

    /// The policy file: the host label, the node groups and the DRS rule names it owns. Without
    /// one, `run`'s built-in default.
    #[arg(long, value_name = "FILE", env = "VSPHERE_DESCHEDULER_POLICY")]
    pub policy: Option<PathBuf>,

    /// Name of this Kubernetes cluster, scoping the DRS rules it owns (overrides the policy's
    /// clusterName).
    #[arg(long, value_name = "NAME", env = "VSPHERE_DESCHEDULER_CLUSTER_NAME")]
    pub cluster_name: Option<String>,

    /// With --snapshot: the instant to judge at (RFC 3339); default: the snapshot's
    /// recordedAt (the latest of several files'), else the current time.
    #[arg(long, value_name = "TIME", requires = "snapshot")]
    pub now: Option<chrono::DateTime<chrono::Utc>>,

    /// With --snapshot: the most one snapshot file may hold, as a Kubernetes quantity.
    #[arg(
        long,
        value_name = "SIZE",
        default_value_t = FileSizeLimit::DEFAULT,
        env = "VSPHERE_DESCHEDULER_MAX_SNAPSHOT_SIZE"
    )]
    pub max_snapshot_size: FileSizeLimit,

    #[command(flatten)]
    pub connection: ConnectionArgs,
}

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
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

    /// The instant to plan at (RFC 3339), for reproducible pod ages; default: the snapshot's
    /// recordedAt (the latest of several files'), else the current time. A plan at an instant
    /// before pods of the snapshot were created warns (rule now-before-creation).
    #[arg(long, value_name = "TIME")]
    pub now: Option<chrono::DateTime<chrono::Utc>>,

    /// Exit 2, as for invalid input, when the plan is made at an instant before pods of the
    /// snapshot were created (otherwise a warning, placed at the youngest such pod).
    #[arg(long)]
    pub strict: bool,

    /// CI gate: exit with code 3 when the plan evicts more than this many pods.
    #[arg(long, value_name = "N", conflicts_with = "baseline_policy")]
    pub max_evictions: Option<usize>,

    /// Policy review: plan with this policy too, and print what --policy does differently
    /// (evictions, skips, label and DRS changes added and removed) instead of the plan; exit 0
    /// when nothing differs, 3 when something does (1 stays "could not write the report").
    /// `--output markdown` gives a review comment.
    #[arg(long, value_name = "FILE")]
    pub baseline_policy: Option<PathBuf>,

    /// The most one snapshot file may hold, as a Kubernetes quantity (`512Mi`, `4Gi`): a bigger
    /// file, or a device or pipe that gives more, is refused before it fills memory.
    #[arg(
        long,
        value_name = "SIZE",
        default_value_t = FileSizeLimit::DEFAULT,
        env = "VSPHERE_DESCHEDULER_MAX_SNAPSHOT_SIZE"
    )]
    pub max_snapshot_size: FileSizeLimit,
}

#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// Policy files to check.
    #[arg(required_unless_present = "values", value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// A Helm values file of the chart: its `policy` is checked as the chart renders it
    /// (merged over the chart's default, clusterName and vsphere.server written into an object
    /// policy; a string used as it is), with positions in the values file. Repeat it for
    /// several files.
    #[arg(long, value_name = "FILE")]
    pub values: Vec<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The policy file. Without one: label nodes with their ESXi host and evict pods that
    /// violate required anti-affinity; DRS rules are synced when --cluster-name is given.
    #[arg(long, value_name = "FILE", env = "VSPHERE_DESCHEDULER_POLICY")]
    pub policy: Option<PathBuf>,

    /// Change nothing anywhere: no labels, no evictions (each is checked by the API server with
    /// dryRun=All, so PDB blocks show), no DRS rules, no events, no lock.
    #[arg(long, env = "VSPHERE_DESCHEDULER_DRY_RUN")]
    pub dry_run: bool,

    /// Name of this Kubernetes cluster, scoping the DRS rules it owns (overrides the policy's
    /// clusterName; turns DRS rule sync on for upstream descheduler policies).
    #[arg(long, value_name = "NAME", env = "VSPHERE_DESCHEDULER_CLUSTER_NAME")]
    pub cluster_name: Option<String>,

    /// Bound the whole run: when this much time has passed (e.g. `100s`, `5m`, `1m30s`), every
    /// wait ends, the report is printed and the lock released (allow 5s more for that). The
    /// first SIGTERM/SIGINT stops the run the same way but lets a request in flight finish; a
    /// second exits at once with 130. Set it below the Job's activeDeadlineSeconds.
    #[arg(long, value_name = "DURATION", env = "VSPHERE_DESCHEDULER_DEADLINE")]
    pub deadline: Option<HumanDuration>,

    /// How long the run lock (a Lease) lasts unrenewed. It is renewed every third of that; the
    /// run stops acting a sixth of it (at most 10s) before it would expire unrenewed.
    #[arg(
        long,
        value_name = "DURATION",
        env = "VSPHERE_DESCHEDULER_LOCK_DURATION",
        default_value = "60s"
    )]
    pub lock_duration: HumanDuration,

    /// Namespace of the run lock (a Lease named vsphere-descheduler).
    #[arg(
        long,
        value_name = "NAMESPACE",
        env = "POD_NAMESPACE",
        default_value = "kube-system"
    )]
    pub lock_namespace: String,

    #[command(flatten)]
    pub connection: ConnectionArgs,

    #[command(flatten)]
    pub metrics: MetricsArgs,
}

/// `check` takes exactly `run`'s settings, so that it checks what a run with them needs (the
/// chart's Helm test passes the CronJob's arguments). It never changes anything, whatever they
/// say: `--deadline` and `--lock-duration` make no difference to it, and `--dry-run` only to
/// what counts as missing now (vCenter's DRS rule write privilege is missing for going live).
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub run: RunArgs,

    /// Exit 0 instead of 3 when nothing is missing but for going live (what dry runs do
    /// without); the items still say `missing-for-going-live`. The chart's `helm test` of a
    /// dry-run install passes this.
    #[arg(long)]
    pub accept_missing_for_going_live: bool,
}

/// Where the run pushes its metrics. Credentials never come from flags.
#[derive(Debug, clap::Args)]
pub struct MetricsArgs {
    /// Push the run's metrics to this Prometheus Pushgateway (http or https URL, e.g.
    /// http://pushgateway.monitoring:9091) at the end of every run, dry runs and failed runs
    /// included, replacing the group job="vsphere-descheduler", cluster="<clusterName>". The
    /// push comes after the report: one that fails is logged on stderr, never a failed run.
    #[arg(long, value_name = "URL", env = "VSPHERE_DESCHEDULER_METRICS_PUSH_URL")]
    pub metrics_push_url: Option<String>,

    /// Directory holding the Pushgateway's credentials (a mounted Secret): a `token` file (sent
    /// as a bearer token) or `username` and `password` files (basic auth).
    #[arg(
        long,
        value_name = "DIR",
        env = "VSPHERE_DESCHEDULER_METRICS_PUSH_CREDENTIALS_DIR",
        requires = "metrics_push_url"
    )]
    pub metrics_push_credentials_dir: Option<PathBuf>,

    /// PEM file of a private CA that signed the Pushgateway's certificate, trusted in addition
    /// to the system's roots.
    #[arg(
        long,
        value_name = "FILE",
        env = "VSPHERE_DESCHEDULER_METRICS_PUSH_CA_FILE",
        requires = "metrics_push_url"
    )]
    pub metrics_push_ca_file: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct SnapshotArgs {
    /// The file to write: JSON when its name ends in .json, YAML otherwise.
    #[arg(short = 'o', long = "output-file", value_name = "FILE")]
    pub output_file: PathBuf,

    /// A policy file, for its vCenter settings (server, CA, datacenter and cluster filters).
    #[arg(long, value_name = "FILE", env = "VSPHERE_DESCHEDULER_POLICY")]
    pub policy: Option<PathBuf>,

    /// Namespace of the run lock (a Lease named vsphere-descheduler), whose eviction history is
    /// recorded too.
    #[arg(
        long,
        value_name = "NAMESPACE",
        env = "POD_NAMESPACE",
        default_value = "kube-system"
    )]
    pub lock_namespace: String,

    #[command(flatten)]
    pub connection: ConnectionArgs,
}

/// How to reach vCenter and the API server. Credentials never come from flags.
#[derive(Debug, clap::Args)]
pub struct ConnectionArgs {
    /// The kubeconfig file to use, as kubectl's --kubeconfig: only this file. Without it,
    /// KUBECONFIG (several files separated by `:`, merged; the first to name an entry wins),
    /// then ~/.kube/config, then the pod's service account.
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use, as kubectl's --context; default: its current-context.
    #[arg(long, value_name = "NAME", env = "VSPHERE_DESCHEDULER_CONTEXT")]
    pub context: Option<String>,

    /// vCenter address (host, host:port or https URL), used when the policy names none.
    #[arg(long, value_name = "SERVER", env = "VSPHERE_SERVER")]
    pub vsphere_server: Option<String>,

    /// Directory holding `username` and `password` files (a mounted Secret). Without it the
    /// credentials come from VSPHERE_USERNAME and VSPHERE_PASSWORD.
    #[arg(
        long,
        value_name = "DIR",
        env = "VSPHERE_DESCHEDULER_VSPHERE_CREDENTIALS_DIR"
    )]
    pub vsphere_credentials_dir: Option<PathBuf>,

    /// PEM file of a private CA that signed vCenter's certificate, used when the policy names
    /// none.
    #[arg(long, value_name = "FILE", env = "VSPHERE_DESCHEDULER_VSPHERE_CA_FILE")]
    pub vsphere_ca_file: Option<PathBuf>,

    /// Do not verify vCenter's TLS certificate (a warning is logged). For labs only.
    #[arg(long, env = "VSPHERE_INSECURE")]
    pub vsphere_insecure: bool,

    /// Where each node VM's ESXi host is read from, overriding the policy's vsphere.source:
    /// `vcenter` (a vCenter account), `supervisor` (VKS guest clusters: VM Operator's
    /// VirtualMachines in a Supervisor namespace, no vCenter account, no DRS rule written) or
    /// `node-label` (a label something else keeps, by default Cluster API's
    /// node.cluster.x-k8s.io/esxi-host: no vSphere access, no label and no DRS rule written).
    #[arg(
        long,
        value_enum,
        value_name = "SOURCE",
        env = "VSPHERE_DESCHEDULER_TOPOLOGY_SOURCE"
    )]
    pub topology_source: Option<SourceKind>,

    /// Source supervisor: a directory holding the Supervisor's `server` (https URL), `token`,
    /// and optionally `ca.crt` and `namespace` (a mounted Secret; docs/vks.md).
    #[arg(
        long,
        value_name = "DIR",
        env = "VSPHERE_DESCHEDULER_SUPERVISOR_CREDENTIALS_DIR",
        value_hint = clap::ValueHint::DirPath
    )]
    pub supervisor_credentials_dir: Option<PathBuf>,

    /// Source supervisor: a kubeconfig naming the Supervisor (`kubectl vsphere login` writes
    /// one), instead of a credentials directory. Only this file; never the in-cluster account.
    #[arg(
        long,
        value_name = "FILE",
        env = "VSPHERE_DESCHEDULER_SUPERVISOR_KUBECONFIG",
        value_hint = clap::ValueHint::FilePath
    )]
    pub supervisor_kubeconfig: Option<PathBuf>,

    /// Source supervisor: the context of the Supervisor in that kubeconfig (or in KUBECONFIG,
    /// ~/.kube/config); default: its current-context.
    #[arg(
        long,
        value_name = "NAME",
        env = "VSPHERE_DESCHEDULER_SUPERVISOR_CONTEXT"
    )]
    pub supervisor_context: Option<String>,

    /// Source supervisor: the Supervisor namespace of the guest cluster's VMs, overriding the
    /// policy's vsphere.supervisor.namespace, the credentials' namespace file and the context's.
    #[arg(
        long,
        value_name = "NAMESPACE",
        env = "VSPHERE_DESCHEDULER_SUPERVISOR_NAMESPACE"
    )]
    pub supervisor_namespace: Option<String>,

    /// Time limit of each request to the API server and to vCenter, in seconds.
    #[arg(
        long,
        value_name = "SECONDS",
        env = "VSPHERE_DESCHEDULER_REQUEST_TIMEOUT",
        default_value_t = 30,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub request_timeout: u64,
}

/// A duration on the command line: whole hours, minutes, seconds as `1h`, `5m`, `90s`, `1m30s`,
/// or bare seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HumanDuration(pub std::time::Duration);

/// Why a duration on the command line is not one.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DurationError {
    #[error("{0:?} is not a duration such as 100s, 5m or 1m30s")]
    Malformed(String),
    #[error("a duration of zero leaves no time to act")]
    Zero,
}

impl std::str::FromStr for HumanDuration {
    type Err = DurationError;

    fn from_str(text: &str) -> Result<HumanDuration, DurationError> {
        let malformed = || DurationError::Malformed(text.to_string());
        let text = text.trim();
        let duration = if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
            std::time::Duration::from_secs(text.parse().map_err(|_| malformed())?)
        } else if whole_units(text) {
            go_duration(text).map_err(|_| malformed())?
        } else {
            return Err(malformed());
        };
        if duration.is_zero() {
            return Err(DurationError::Zero);
        }
        Ok(HumanDuration(duration))
    }
}

/// Whether `text` counts only whole hours, minutes and seconds: the command line takes no
/// fractions, signs or units below a second, which the Go syntax would allow.
fn whole_units(text: &str) -> bool {
    text.bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'h' | b'm' | b's'))
        && !text.contains("ms")
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    #[default]
    Plain,
    Json,
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn line(words: &[&str]) -> Vec<std::ffi::OsString> {
        std::iter::once("vsphere-descheduler")
            .chain(words.iter().copied())
            .map(std::ffi::OsString::from)
            .collect()
    }

    #[test]
    fn snapshot_given_a_file_as_output_is_told_to_use_output_file() {
        let error = Args::parse_from_line(&line(&["snapshot", "--output", "prod-east.yaml"]))
            .expect_err("not a format");
        assert_eq!(error.kind(), clap::error::ErrorKind::InvalidValue);
        assert_eq!(error.exit_code(), 2);
        let text = error.to_string();
        assert!(
            text.contains("\"prod-east.yaml\" is not a format")
                && text.contains("vsphere-descheduler snapshot -o prod-east.yaml"),
            "{text}"
        );
    }

    #[test]
    fn another_commands_bad_output_keeps_clap_s_own_error() {
        let error = Args::parse_from_line(&line(&["plan", "--output", "prod-east.yaml"]))
            .expect_err("not a format");
        let text = error.to_string();
        assert!(text.contains("invalid value 'prod-east.yaml'"), "{text}");
        assert!(!text.contains("--output-file"), "{text}");
        let args = Args::parse_from_line(&line(&["snapshot", "--output", "json", "-o", "a.yaml"]))
            .expect("a format and a file");
        assert_eq!(args.output, OutputFormat::Json);
    }

    #[test]
    fn durations_read_as_kubernetes_and_go_write_them() {
        let parse = |text: &str| text.parse::<HumanDuration>().map(|d| d.0);
        assert_eq!(parse("100s"), Ok(Duration::from_secs(100)));
        assert_eq!(parse("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse("1h2m3s"), Ok(Duration::from_secs(3723)));
        assert_eq!(parse("0s"), Err(DurationError::Zero));
        assert_eq!(parse(" 1h30m "), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("0"), Err(DurationError::Zero));
        for bad in [
            "",
            "s",
            "1.5m",
            "5 m",
            "-5s",
            "+5s",
            "5d",
            "1000ms",
            "1us",
            "1m1ms",
            "1sm",
            "99999999999999999999h",
            "99999999999999999999",
        ] {
            assert!(
                matches!(parse(bad), Err(DurationError::Malformed(_))),
                "{bad:?}"
            );
        }
    }
}
