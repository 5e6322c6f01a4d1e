//! Arguments → settings → command: the command line, the policy file and the environment
//! resolved into what a live command needs to know (`run` and `check` by
//! [`RunConfig::resolve`], `what-if` by [`RunConfig::read_only`], `snapshot` by
//! [`RunConfig::snapshot`]), all checked before anything is contacted. Problems here are usage
//! errors (exit code 2). The job (`crate::run`) and the observation (`crate::live`) only read
//! what is resolved here.

use std::path::Path;
use std::time::Duration;

use crate::cli::{ConnectionArgs, MetricsArgs, RunArgs, SnapshotArgs};
use crate::kube::{self, LEASE_NAME, LockSettings};
use crate::metrics::{self, PushSettings, Pushgateway};
use crate::policy::{
    self, MAX_OWNED_RULE_PREFIX_LEN, NameError, Policy, PolicyError, SourceKind, VsphereSettings,
};
use crate::report::{ReportWarning, SupervisorTarget, Target};
use crate::supervisor;
use crate::vsphere::{self, ConnectionConfig, Credentials};

/// The policy used when `run` is given none: keep host anti-affinity, label every node with its
/// ESXi host; DRS rule sync follows `--cluster-name`.
const DEFAULT_POLICY: &str = "\
apiVersion: vsphere-descheduler.io/v1alpha1
kind: DeschedulerPolicy
vsphere:
  drsRules:
    enabled: false
profiles:
- name: default
  plugins:
    deschedule:
      enabled: [RemovePodsViolatingInterPodAntiAffinity]
";

/// How long each step after a run's report may take, even after the deadline: releasing the
/// lock and logging out of vCenter (both at once), then pushing the metrics. `--deadline`
/// should leave twice this before the pod is killed.
pub const RELEASE_LIMIT: Duration = Duration::from_secs(5);

/// Why a command's settings are unusable.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("invalid policy")]
    Policy(#[source] PolicyError),
    #[error("invalid --cluster-name {name:?}")]
    ClusterName {
        name: String,
        #[source]
        problem: NameError,
    },
    #[error(
        "--cluster-name {name:?} makes the DRS rule prefix {prefix:?} longer than \
         {MAX_OWNED_RULE_PREFIX_LEN} characters"
    )]
    ClusterNameTooLong { name: String, prefix: String },
    #[error(
        "no vCenter server: set vsphere.server in the policy, --vsphere-server or \
         VSPHERE_SERVER; without a vCenter account, choose another source (vsphere.source: \
         supervisor or node-label, docs/vks.md)"
    )]
    NoServer,
    #[error("unusable Supervisor settings")]
    Supervisor(#[source] supervisor::SettingsError),
    #[error("vCenter credentials are unusable")]
    Credentials(#[source] vsphere::Error),
    #[error("invalid metrics push settings")]
    MetricsPush(#[source] metrics::push::Error),
}

/// Everything one live command needs to know, resolved.
#[derive(Debug)]
pub struct RunConfig {
    pub policy: Policy,
    /// Valid but risky settings (the policy's, TLS verification off): logged, and the first
    /// warnings of the report.
    pub warnings: Vec<ReportWarning>,
    /// `--deadline`: the whole run's time limit.
    pub deadline: Option<Duration>,
    pub dry_run: bool,
    /// Where the hosts come from, and how to reach it.
    pub topology: TopologySource,
    pub lock: LockSettings,
    /// Time limit of each Kubernetes request.
    pub timeout: Duration,
    /// `--metrics-push-url`: where the run's metrics go at its end.
    pub metrics_push: Option<Pushgateway>,
    /// `--kubeconfig` and `--context`.
    pub kubernetes: kube::Selection,
    /// Gather the hosts, node VMs and workloads the HTML view draws (`--output html`).
    pub placement: bool,
}

/// Where each node VM's host comes from, resolved (`vsphere.source`, `--topology-source`).
#[derive(Debug)]
pub enum TopologySource {
    Vcenter(ConnectionConfig),
    Supervisor(supervisor::Settings),
    /// The nodes' own label (`vsphere.nodeLabel.key`): nothing to reach.
    NodeLabel,
}

impl TopologySource {
    /// The vCenter connection, with source vcenter.
    pub fn vcenter(&self) -> Option<&ConnectionConfig> {
        match self {
            TopologySource::Vcenter(config) => Some(config),
            TopologySource::Supervisor(_) | TopologySource::NodeLabel => None,
        }
    }
}

impl RunConfig {
    /// What a command of these settings talks to, for the report and stderr's first line.
    pub fn target(&self, endpoint: kube::Endpoint) -> Target {
        let mut target = Target {
            api_server: endpoint.api_server,
            context: endpoint.context,
            vcenter: None,
            supervisor: None,
            node_label: None,
        };
        match &self.topology {
            TopologySource::Vcenter(vcenter) => target.vcenter = Some(vcenter.server.clone()),
            TopologySource::Supervisor(settings) => {
                let server = match &settings.access {
                    supervisor::Access::Token(token) => token.server.to_string(),
                    supervisor::Access::Kubeconfig(selection) => match &selection.context {
                        Some(context) => format!("context {context}"),
                        None => "the kubeconfig's current context".to_string(),
                    },
                };
                target.supervisor = Some(SupervisorTarget {
                    server,
                    namespace: settings.namespace.clone(),
                });
            }
            TopologySource::NodeLabel => {
                target.node_label = Some(self.policy.vsphere.node_label.key.clone())
            }
        }
        target
    }

    pub fn resolve(args: &RunArgs) -> Result<RunConfig, ConfigError> {
        let mut config = RunConfig::read_only(
            args.policy.as_deref(),
            args.cluster_name.as_deref(),
            &args.connection,
        )?;
        config.deadline = args.deadline.map(|deadline| deadline.0);
        config.dry_run = args.dry_run;
        config.lock.namespace = args.lock_namespace.clone();
        config.lock.duration = args.lock_duration.0;
        config.metrics_push = metrics_push(&args.metrics).map_err(ConfigError::MetricsPush)?;
        Ok(config)
    }

    /// The settings of a look that changes nothing (`what-if`, and the base of `run`'s): the
    /// policy with `--cluster-name` applied, how to reach both sides, a dry run without lock,
    /// deadline or metrics.
    pub fn read_only(
        policy: Option<&Path>,
        cluster_name: Option<&str>,
        connection: &ConnectionArgs,
    ) -> Result<RunConfig, ConfigError> {
        let (mut policy, findings) = load_policy(policy)?;
        if let Some(name) = cluster_name {
            apply_cluster_name(&mut policy, name)?;
        }
        let mut config = RunConfig::looking(policy, findings, connection)?;
        if config
            .topology
            .vcenter()
            .is_some_and(|vcenter| vcenter.insecure_skip_verify)
        {
            config.warnings.push(ReportWarning::InsecureTls);
        }
        Ok(config)
    }

    /// The settings of `snapshot`: the policy only for where the hosts come from and whether
    /// metrics are read (none given: the default policy's settings), no `--cluster-name`, and
    /// the lock namespace whose eviction history is recorded. Its warnings are the policy's.
    pub fn snapshot(args: &SnapshotArgs) -> Result<RunConfig, ConfigError> {
        let (policy, findings) = match &args.policy {
            Some(path) => load_policy(Some(path))?,
            None => (Policy::default(), Vec::new()),
        };
        let mut config = RunConfig::looking(policy, findings, &args.connection)?;
        config.lock.namespace = args.lock_namespace.clone();
        Ok(config)
    }

    /// A dry run without lock, deadline or metrics push, its hosts from where the policy (or
    /// `--topology-source`) says, reaching both sides as `connection` says; the policy's
    /// findings are its warnings.
    fn looking(
        mut policy: Policy,
        findings: Vec<String>,
        connection: &ConnectionArgs,
    ) -> Result<RunConfig, ConfigError> {
        if let Some(source) = connection.topology_source {
            policy.vsphere.source = source;
        }
        Ok(RunConfig {
            topology: topology(connection, &policy.vsphere)?,
            policy,
            warnings: findings.into_iter().map(ReportWarning::Policy).collect(),
            deadline: None,
            dry_run: true,
            lock: LockSettings {
                namespace: "kube-system".to_string(),
                name: LEASE_NAME.to_string(),
                holder: holder_identity(),
                duration: Duration::from_secs(60),
            },
            timeout: Duration::from_secs(connection.request_timeout),
            metrics_push: None,
            kubernetes: kube::Selection {
                kubeconfig: connection.kubeconfig.clone(),
                context: connection.context.clone(),
            },
            placement: false,
        })
    }
}

/// `--cluster-name`: checked, and the policy's cluster name from then on.
pub fn apply_cluster_name(policy: &mut Policy, name: &str) -> Result<(), ConfigError> {
    policy::check_dns_label(name).map_err(|problem| ConfigError::ClusterName {
        name: name.to_string(),
        problem,
    })?;
    let prefix = format!("{}:{name}:", policy.vsphere.drs_rules.name_prefix);
    if prefix.len() > MAX_OWNED_RULE_PREFIX_LEN {
        return Err(ConfigError::ClusterNameTooLong {
            name: name.to_string(),
            prefix,
        });
    }
    // A policy without its own cluster name (upstream formats, or the default) had DRS sync
    // off only for want of one.
    if policy.cluster_name.is_none() {
        policy.vsphere.drs_rules.enabled = true;
    }
    policy.cluster_name = Some(name.to_string());
    Ok(())
}

/// The policy file, or the built-in default.
pub fn load_policy(path: Option<&Path>) -> Result<(Policy, Vec<String>), ConfigError> {
    let loaded = match path {
        Some(path) => policy::load_file(path),
        None => policy::load_str("(built-in default policy)", DEFAULT_POLICY),
    }
    .map_err(ConfigError::Policy)?;
    let warnings = loaded.warnings.iter().map(ToString::to_string).collect();
    Ok((loaded.policy, warnings))
}

/// Where the hosts come from, by the policy's source (with `--topology-source` applied).
fn topology(
    args: &ConnectionArgs,
    settings: &VsphereSettings,
) -> Result<TopologySource, ConfigError> {
    match settings.source {
        SourceKind::Vcenter => connection_config(args, settings).map(TopologySource::Vcenter),
        SourceKind::Supervisor => {
            supervisor_settings(args, settings).map(TopologySource::Supervisor)
        }
        SourceKind::NodeLabel => Ok(TopologySource::NodeLabel),
    }
}

/// How to reach the Supervisor: the flags, and the policy's namespace.
fn supervisor_settings(
    args: &ConnectionArgs,
    settings: &VsphereSettings,
) -> Result<supervisor::Settings, ConfigError> {
    let flags = supervisor::Flags {
        credentials_dir: args.supervisor_credentials_dir.as_deref(),
        kubeconfig: args.supervisor_kubeconfig.as_deref(),
        context: args.supervisor_context.as_deref(),
        namespace: args.supervisor_namespace.as_deref(),
    };
    supervisor::Settings::resolve(
        &flags,
        settings.supervisor.namespace.as_deref(),
        Duration::from_secs(args.request_timeout),
    )
    .map_err(ConfigError::Supervisor)
}

/// How to reach vCenter: the policy's server and CA first, the command line and environment
/// where it has none; credentials only from the environment or a credentials directory.
fn connection_config(
    args: &ConnectionArgs,
    settings: &VsphereSettings,
) -> Result<ConnectionConfig, ConfigError> {
    let server = settings
        .server
        .clone()
        .or_else(|| args.vsphere_server.clone())
        .filter(|server| !server.trim().is_empty())
        .ok_or(ConfigError::NoServer)?;
    let credentials = Credentials::from_env_or_dir(args.vsphere_credentials_dir.as_deref())
        .map_err(ConfigError::Credentials)?;
    let mut config = ConnectionConfig::new(server, credentials);
    config.ca_file = settings
        .ca_file
        .clone()
        .or_else(|| args.vsphere_ca_file.clone());
    config.insecure_skip_verify = settings.insecure_skip_verify || args.vsphere_insecure;
    if config.insecure_skip_verify {
        tracing::warn!(server = %config.server, "{}", ReportWarning::InsecureTls);
    }
    config.timeout = Duration::from_secs(args.request_timeout);
    Ok(config)
}

/// The Pushgateway of `--metrics-push-url`, if one is given, with its credentials read.
pub fn metrics_push(args: &MetricsArgs) -> Result<Option<Pushgateway>, metrics::push::Error> {
    let Some(url) = &args.metrics_push_url else {
        return Ok(None);
    };
    let settings = PushSettings {
        url: url.clone(),
        credentials_dir: args.metrics_push_credentials_dir.clone(),
        ca_file: args.metrics_push_ca_file.clone(),
    };
    Pushgateway::resolve(&settings).map(Some)
}

/// `holderIdentity` and `reportingInstance`: the pod name (HOSTNAME in a pod) or host, the
/// process id and the start time, so two runs on one machine differ too.
fn holder_identity() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "vsphere-descheduler".to_string());
    let started = chrono::Utc::now().timestamp_micros();
    format!("{host}_{}_{started:x}", std::process::id())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Args, Command};

    /// `command`'s arguments as the command line gives them, with credentials from a
    /// directory (which lasts as long as the first value).
    fn parse(command: &str, extra: &[&str]) -> (tempfile::TempDir, Command) {
        let dir = tempfile::tempdir().expect("a temporary directory");
        std::fs::write(dir.path().join("username"), "admin\n").expect("write");
        std::fs::write(dir.path().join("password"), "secret\n").expect("write");
        let credentials = dir.path().display().to_string();
        let mut argv = vec![
            "vsphere-descheduler",
            command,
            "--vsphere-server",
            "vc.example.com",
            "--vsphere-credentials-dir",
            credentials.as_str(),
        ];
        argv.extend_from_slice(extra);
        let command = Args::try_parse_from(argv).expect("valid arguments").command;
        (dir, command)
    }

    /// `run` arguments, resolved.
    fn resolve(extra: &[&str]) -> Result<RunConfig, ConfigError> {
        let (_credentials, Command::Run(args)) = parse("run", extra) else {
            panic!("the run command");
        };
        RunConfig::resolve(&args)
    }

    /// `snapshot` arguments, resolved.
    fn resolve_snapshot(extra: &[&str]) -> Result<RunConfig, ConfigError> {
        let mut argv = vec!["-o", "snapshot.yaml"];
        argv.extend_from_slice(extra);
        let (_credentials, Command::Snapshot(args)) = parse("snapshot", &argv) else {
            panic!("the snapshot command");
        };
        RunConfig::snapshot(&args)
    }

    #[test]
    fn a_snapshot_without_a_policy_reads_no_metrics_and_keeps_the_default_policy() {
        let config = resolve_snapshot(&[]).expect("valid");
        assert!(!config.policy.reads_metrics());
        assert!(config.policy.profiles.is_empty());
        assert!(config.dry_run);
        assert_eq!(config.lock.name, LEASE_NAME);
        assert_eq!(config.lock.namespace, "kube-system");
        let config = resolve_snapshot(&["--lock-namespace", "descheduler"]).expect("valid");
        assert_eq!(config.lock.namespace, "descheduler");
    }

    #[test]
    fn a_snapshot_leaves_tls_verification_off_to_the_connection_s_own_log() {
        let config = resolve_snapshot(&["--vsphere-insecure"]).expect("valid");
        assert!(
            config
                .topology
                .vcenter()
                .expect("vcenter")
                .insecure_skip_verify
        );
        assert!(config.warnings.is_empty());
    }

    #[test]
    fn without_a_policy_hosts_are_labelled_and_drs_sync_waits_for_a_cluster_name() {
        let config = resolve(&[]).expect("valid");
        assert!(!config.policy.vsphere.drs_rules.enabled);
        assert_eq!(config.policy.profiles.len(), 1);
        assert_eq!(config.lock.name, LEASE_NAME);
        assert_eq!(config.lock.duration, crate::kube::LEASE_DURATION);
        let vcenter = config.topology.vcenter().expect("source vcenter");
        assert_eq!(vcenter.server, "vc.example.com");

        let config = resolve(&["--cluster-name", "prod-east"]).expect("valid");
        assert!(config.policy.vsphere.drs_rules.enabled);
        assert_eq!(config.policy.cluster_name.as_deref(), Some("prod-east"));
    }

    #[test]
    fn an_invalid_cluster_name_is_a_usage_error() {
        let error = resolve(&["--cluster-name", "Prod_East"]).expect_err("not a DNS label");
        assert!(matches!(error, ConfigError::ClusterName { .. }), "{error}");
    }

    #[test]
    fn two_runs_on_one_machine_have_different_lock_holders() {
        let first = resolve(&[]).expect("valid").lock.holder;
        std::thread::sleep(std::time::Duration::from_millis(2));
        let second = resolve(&[]).expect("valid").lock.holder;
        assert_ne!(first, second);
    }

    #[test]
    fn the_password_never_shows_in_the_resolved_configuration() {
        let config = resolve(&["--dry-run"]).expect("valid");
        assert!(config.dry_run);
        assert!(!format!("{config:?}").contains("secret"));
    }

    #[test]
    fn tls_verification_off_is_a_warning_of_the_report() {
        assert!(resolve(&[]).expect("valid").warnings.is_empty());
        let config = resolve(&["--vsphere-insecure"]).expect("valid");
        assert_eq!(config.warnings, [ReportWarning::InsecureTls]);
    }

    #[test]
    fn the_deadline_comes_from_the_command_line() {
        assert_eq!(resolve(&[]).expect("valid").deadline, None);
        let config = resolve(&["--deadline", "1m35s"]).expect("valid");
        assert_eq!(config.deadline, Some(Duration::from_secs(95)));
    }
}
