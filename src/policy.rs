//! The policy: what to balance and how carefully.
//!
//! Three file formats are read (`vsphere-descheduler.io/v1alpha1`, upstream
//! `descheduler/v1alpha2` and `descheduler/v1alpha1`) and resolved into one [`Policy`], the only
//! form the planner sees. Reading and validation live in the submodules; this file holds the
//! resolved types and their defaults.

mod availability;
mod decode;
mod evictor;
mod load;
mod names;
pub mod plugins;
mod profiles;
mod rule;
mod selector;
mod sites;
mod source;
#[cfg(test)]
mod testing;
mod v1alpha1;
mod v1alpha2;
mod values;
mod vsphere;
mod yaml;

pub use load::{LoadedPolicy, PolicyError, PolicyProblem, Severity, load_file, load_str};
pub use names::{NameError, check_dns_label, check_label_value};
// Each plugin's arguments are read at `policy::plugins::*`, beside its registry row, so adding
// a plugin leaves this file alone.
pub use plugins::{
    BASIC_RESOURCES, ExtensionPoint, PluginKind, ResourceThresholds, Strategy, UsageSource,
    unmeasurable,
};
pub use rule::Rule;
pub use selector::{SelectorParseError, parse_selector};
pub use sites::{DEFAULT_SITE_LABEL, GroupPattern, HostGroupSelection, SiteSettings, SiteSource};
pub use values::{load_values_file, load_values_str};
pub use yaml::Position;

use crate::snapshot::Requirements;

/// Default label key for the ESXi host a node VM runs on.
pub const DEFAULT_HOST_LABEL: &str = "vsphere-descheduler.io/host";
/// Default prefix of the DRS rules this tool owns.
pub const DEFAULT_RULE_PREFIX: &str = "vsphere-descheduler";
/// The node-name topology key every node carries.
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";
/// Cluster API's host label (CAPV, VKS): never ours to write, but pods that keep apart on it
/// get DRS rules by default.
pub const CAPV_HOST_LABEL: &str = "node.cluster.x-k8s.io/esxi-host";
/// Longest `vsphere.drsRules.namePrefix`.
pub const MAX_NAME_PREFIX_LEN: usize = 30;
/// Longest owned-rule prefix `<namePrefix>:<clusterName>:`, so that names keep at least 20 of
/// vCenter's [`MAX_RULE_NAME_LEN`] characters for the workload (or its shortened form).
pub const MAX_OWNED_RULE_PREFIX_LEN: usize = 60;
/// Longest DRS rule name vCenter accepts.
pub const MAX_RULE_NAME_LEN: usize = 80;

/// A resolved policy, whatever file format it came from.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Policy {
    /// Name of this Kubernetes cluster; scopes the DRS rules it owns. Required when DRS rule sync
    /// is on (validation enforces it).
    pub cluster_name: Option<String>,
    /// Top-level `nodeSelector`: the nodes every strategy considers.
    pub node_selector: Option<Requirements>,
    pub limits: Limits,
    /// Profiles in file order. Deschedule strategies of all profiles run before balance ones.
    pub profiles: Vec<Profile>,
    pub vsphere: VsphereSettings,
    /// `evictionFailureEventNotification`: emit a Warning event when an eviction fails.
    pub eviction_failure_events: bool,
    /// `gracePeriodSeconds`: sent in each Eviction's DeleteOptions (the pod's own when `None`).
    pub grace_period_seconds: Option<i64>,
}

impl Policy {
    /// Whether some strategy reads actual usage from `metrics.k8s.io`, so a run lists it.
    pub fn reads_metrics(&self) -> bool {
        self.profiles
            .iter()
            .flat_map(|profile| profile.deschedule.iter().chain(&profile.balance))
            .any(Strategy::reads_metrics)
    }
}

/// Per-run eviction caps (`maxNoOfPodsToEvict*`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    pub per_node: Option<u32>,
    pub per_namespace: Option<u32>,
    pub total: Option<u32>,
    /// `maxNoOfPodsToEvictPerWorkload` (our format only): evictions per controller owner.
    pub per_workload: Option<u32>,
}

/// One profile: its evictor settings and its strategies.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    pub name: String,
    pub evictor: EvictorArgs,
    /// `plugins.deschedule.enabled`, in order.
    pub deschedule: Vec<Strategy>,
    /// `plugins.balance.enabled`, in order.
    pub balance: Vec<Strategy>,
}

/// `namespaces: {include, exclude}`; at most one of the two is non-empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Namespaces {
    pub include: Vec<String>,
    pub exclude: Vec<String>,
}

impl Namespaces {
    /// Whether a namespace passes this filter.
    pub fn admits(&self, namespace: &str) -> bool {
        if !self.include.is_empty() {
            return self.include.iter().any(|n| n == namespace);
        }
        !self.exclude.iter().any(|n| n == namespace)
    }
}

/// The DefaultEvictor's arguments: which pods may be evicted at all.
#[derive(Clone, Debug, PartialEq)]
pub struct EvictorArgs {
    /// Nodes nodeFit may consider as new homes.
    pub node_selector: Option<Requirements>,
    /// Only pods whose labels match may be evicted.
    pub label_selector: Option<Requirements>,
    /// Only pods in namespaces whose labels match may be evicted.
    pub namespace_label_selector: Option<Requirements>,
    /// Pods at or above this priority are protected (while system-critical protection is on).
    pub priority_threshold: PriorityThreshold,
    /// Require some other node to take the pod (default true here, false upstream).
    pub node_fit: bool,
    /// Pods whose owner has fewer live pods than this are protected (only when > 1).
    pub min_replicas: u32,
    /// Pods that started less than this long ago are protected.
    pub min_pod_age: Option<std::time::Duration>,
    pub no_eviction_policy: NoEvictionPolicy,
    pub protections: Protections,
}

impl Default for EvictorArgs {
    fn default() -> Self {
        EvictorArgs {
            node_selector: None,
            label_selector: None,
            namespace_label_selector: None,
            priority_threshold: PriorityThreshold::Value(SYSTEM_CRITICAL_PRIORITY),
            node_fit: true,
            min_replicas: 0,
            min_pod_age: None,
            no_eviction_policy: NoEvictionPolicy::None,
            protections: Protections::default(),
        }
    }
}

/// Priority of `system-cluster-critical`; upstream's default threshold.
pub const SYSTEM_CRITICAL_PRIORITY: i32 = 2_000_000_000;

/// `priorityThreshold: {value | name}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PriorityThreshold {
    Value(i32),
    /// A PriorityClass name; resolved against the snapshot's PriorityClasses when planning.
    Name(String),
}

/// `noEvictionPolicy` for pods annotated `descheduler.alpha.kubernetes.io/prefer-no-eviction`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NoEvictionPolicy {
    /// The annotation is ignored.
    #[default]
    None,
    /// Annotated pods go last among equals.
    Preferred,
    /// Annotated pods are never evicted.
    Mandatory,
}

/// Pod protections (`podProtections`, or the deprecated booleans they replace).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Protections {
    pub pods_with_local_storage: bool,
    pub system_critical_pods: bool,
    pub failed_bare_pods: bool,
    pub daemonset_pods: bool,
    pub pods_with_pvc: bool,
    /// With `pods_with_pvc`: only PVCs of these storage classes protect (empty = every PVC).
    pub protected_storage_classes: Vec<String>,
    pub pods_without_pdb: bool,
    pub pods_with_resource_claims: bool,
}

impl Default for Protections {
    /// Upstream defaults: the four default protections on, the three extras off.
    fn default() -> Self {
        Protections {
            pods_with_local_storage: true,
            system_critical_pods: true,
            failed_bare_pods: true,
            daemonset_pods: true,
            pods_with_pvc: false,
            protected_storage_classes: Vec::new(),
            pods_without_pdb: false,
            pods_with_resource_claims: false,
        }
    }
}

/// The `vsphere:` section.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VsphereSettings {
    /// vCenter address; `VSPHERE_SERVER` overrides nothing here, it fills in when absent.
    pub server: Option<String>,
    pub insecure_skip_verify: bool,
    pub ca_file: Option<std::path::PathBuf>,
    /// Only these datacenters are observed (empty = all).
    pub datacenters: Vec<String>,
    /// Only these clusters are observed (empty = all).
    pub clusters: Vec<String>,
    pub labels: LabelKeys,
    pub drs_rules: DrsRuleSettings,
    /// `vsphere.availability`; its defaults hold for upstream files too.
    pub availability: Availability,
    /// `vsphere.source`: where each node VM's ESXi host is read from.
    pub source: SourceKind,
    /// `vsphere.supervisor`, read when the source is the Supervisor.
    pub supervisor: SupervisorSource,
    /// `vsphere.nodeLabel`, read when the source is a node label.
    pub node_label: NodeLabelSource,
    /// `vsphere.sites`: the site of each host; `None` (the default) keeps sites out of every
    /// part of a run.
    pub sites: Option<SiteSettings>,
}

impl VsphereSettings {
    /// The label whose values are the ESXi hosts, as the planner reads it: ours, or with
    /// source `node-label` the label something else keeps.
    pub fn host_key(&self) -> &str {
        match self.source {
            SourceKind::NodeLabel => &self.node_label.key,
            SourceKind::Vcenter | SourceKind::Supervisor => &self.labels.host,
        }
    }

    /// `vsphere.sites` where the source reads them: host groups and vSAN fault domains come
    /// from vCenter only, so the other sources (chosen on the command line, say) have no sites.
    pub fn site_settings(&self) -> Option<&SiteSettings> {
        self.sites
            .as_ref()
            .filter(|_| self.source == SourceKind::Vcenter)
    }
}

/// Where the ESXi host each node VM runs on is read from (`vsphere.source`,
/// `--topology-source`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum SourceKind {
    /// vCenter's SOAP API, with a vCenter account: everything, DRS rules included.
    #[default]
    Vcenter,
    /// VM Operator's VirtualMachines in a Supervisor namespace (VKS guest clusters): no vCenter
    /// account, no DRS rule written.
    Supervisor,
    /// A node label something else keeps (Cluster API's `node.cluster.x-k8s.io/esxi-host`): no
    /// vSphere access at all, no label and no DRS rule written.
    NodeLabel,
}

impl SourceKind {
    pub const ALL: [SourceKind; 3] = [
        SourceKind::Vcenter,
        SourceKind::Supervisor,
        SourceKind::NodeLabel,
    ];

    /// As the policy and the command line spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Vcenter => "vcenter",
            SourceKind::Supervisor => "supervisor",
            SourceKind::NodeLabel => "node-label",
        }
    }

    /// Whether this source holds a vCenter session, through which DRS rules are written.
    pub fn writes_drs_rules(self) -> bool {
        self == SourceKind::Vcenter
    }

    /// Whether runs write our labels from this source's hosts (`node-label` plans on the
    /// source label as it is).
    pub fn writes_labels(self) -> bool {
        self != SourceKind::NodeLabel
    }
}

impl std::fmt::Display for SourceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `vsphere.supervisor`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SupervisorSource {
    /// The Supervisor namespace of the guest cluster's VMs; else `--supervisor-namespace`, or the
    /// credentials' `namespace` file, or the kubeconfig context's namespace.
    pub namespace: Option<String>,
}

/// `vsphere.nodeLabel`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeLabelSource {
    /// The label whose value is the node's ESXi host.
    pub key: String,
}

impl Default for NodeLabelSource {
    fn default() -> Self {
        NodeLabelSource {
            key: CAPV_HOST_LABEL.to_string(),
        }
    }
}

/// `vsphere.availability`: how much of a workload may be unavailable when one of its pods is
/// evicted, and how often a workload may lose a pod across runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Availability {
    /// `maxUnavailablePerWorkload`: unavailable siblings a workload may have beyond the pod being
    /// evicted (default 0: one at a time, each only while all its siblings are Ready).
    pub max_unavailable_per_workload: Allowance,
    pub pacing: Pacing,
}

/// A number of pods, or a percentage of a workload's pods (rounded down).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Allowance {
    Pods(u32),
    Percent(u32),
}

impl Default for Allowance {
    fn default() -> Self {
        Allowance::Pods(0)
    }
}

impl Allowance {
    /// How many of `pods` this allows.
    pub fn of(self, pods: usize) -> usize {
        match self {
            Allowance::Pods(count) => count as usize,
            Allowance::Percent(percent) => pods * percent as usize / 100,
        }
    }
}

impl std::fmt::Display for Allowance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Allowance::Pods(count) => write!(f, "{count}"),
            Allowance::Percent(percent) => write!(f, "{percent}%"),
        }
    }
}

/// `vsphere.availability.pacing`: at most `max_evictions_per_workload` evictions of one
/// workload's pods within `window`, counting earlier runs' from the eviction history; and, when
/// set, at most `max_evictions_per_window` of all workloads together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pacing {
    /// 0 turns pacing off.
    pub max_evictions_per_workload: u32,
    pub window: std::time::Duration,
    /// The cluster-wide limit; `None` (the default): none.
    pub max_evictions_per_window: Option<std::num::NonZeroU32>,
}

impl Default for Pacing {
    fn default() -> Self {
        Pacing {
            max_evictions_per_workload: 1,
            window: std::time::Duration::from_secs(10 * 60),
            max_evictions_per_window: None,
        }
    }
}

impl Pacing {
    pub fn is_on(&self) -> bool {
        self.max_evictions_per_workload > 0
    }
}

/// Node label keys this tool owns. An empty cluster or datacenter key means "not written".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelKeys {
    pub host: String,
    pub cluster: Option<String>,
    pub datacenter: Option<String>,
    /// The site label (`vsphere.labels.site`): set exactly when `vsphere.sites` is, to
    /// [`DEFAULT_SITE_LABEL`] unless the file names another key.
    pub site: Option<String>,
}

impl Default for LabelKeys {
    fn default() -> Self {
        LabelKeys {
            host: DEFAULT_HOST_LABEL.to_string(),
            cluster: None,
            datacenter: None,
            site: None,
        }
    }
}

impl LabelKeys {
    /// Every key this tool owns, host first.
    pub fn owned(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.host.as_str())
            .chain(self.cluster.as_deref())
            .chain(self.datacenter.as_deref())
            .chain(self.site.as_deref())
    }
}

/// `vsphere.drsRules`.
#[derive(Clone, Debug, PartialEq)]
pub struct DrsRuleSettings {
    pub enabled: bool,
    pub name_prefix: String,
    /// Anti-affinity on these keys becomes a DRS rule. Empty in the file means the default:
    /// the host label key and `kubernetes.io/hostname`.
    pub topology_keys: Vec<String>,
    /// Groups of nodes whose VMs are kept on distinct hosts (`nodeGroups`), in the file's order.
    pub node_groups: Vec<NodeGroup>,
}

/// `vsphere.drsRules.nodeGroups[]`: one VM-VM anti-affinity rule per vSphere cluster over the VMs
/// of the nodes the selector picks (control-plane nodes, say).
#[derive(Clone, Debug, PartialEq)]
pub struct NodeGroup {
    /// A DNS label, unique among the groups; the rule is `<namePrefix>:<clusterName>:nodes:<name>`.
    pub name: String,
    pub node_selector: Requirements,
}

impl Default for DrsRuleSettings {
    fn default() -> Self {
        DrsRuleSettings {
            enabled: true,
            name_prefix: DEFAULT_RULE_PREFIX.to_string(),
            topology_keys: vec![
                DEFAULT_HOST_LABEL.to_string(),
                HOSTNAME_LABEL.to_string(),
                CAPV_HOST_LABEL.to_string(),
            ],
            node_groups: Vec::new(),
        }
    }
}
