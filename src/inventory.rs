//! The vSphere inventory as the planner sees it: clusters, their ESXi hosts, the VMs on them and
//! the DRS rules they hold.
//!
//! One type serves both sources: `VSphereInventory` documents in snapshot files and the live
//! observation of vCenter (`crate::vsphere`), so `plan` and `run` share one code path.

use serde::{Deserialize, Serialize};

/// `apiVersion` of a `VSphereInventory` document.
pub const API_VERSION: &str = "vsphere-descheduler.io/v1alpha1";
/// `kind` of a `VSphereInventory` document.
pub const KIND: &str = "VSphereInventory";

/// Everything observed in vCenter, cluster by cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "a VSphereInventory (a mapping)"
)]
pub struct Inventory {
    #[serde(default)]
    pub clusters: Vec<Cluster>,
}

impl Inventory {
    /// How reports name each cluster, indexed like `clusters`: its name where no other cluster
    /// has it, `datacenter/name` where one in another datacenter does, and `datacenter/name (id)`
    /// where even that repeats (clusters in two folders of one datacenter).
    pub fn cluster_names(&self) -> Vec<String> {
        let count =
            |same: &dyn Fn(&Cluster) -> bool| self.clusters.iter().filter(|c| same(c)).count();
        self.clusters
            .iter()
            .map(|cluster| {
                if count(&|c| c.name == cluster.name) == 1 {
                    return cluster.name.clone();
                }
                let qualified = cluster.qualified_name();
                let same_qualified = |c: &Cluster| c.qualified_name() == qualified;
                match &cluster.id {
                    Some(id) if count(&same_qualified) > 1 => format!("{qualified} ({id})"),
                    _ => qualified,
                }
            })
            .collect()
    }
}

/// A vSphere compute cluster: the scope of DRS and of its rules.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "a vSphere cluster (a mapping)"
)]
pub struct Cluster {
    pub name: String,
    /// The cluster's managed object id (`domain-c7`): what tells apart two clusters of one name.
    /// Always observed; snapshot files written before it existed lack it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default)]
    pub datacenter: String,
    /// The datacenter's managed object id (`datacenter-2`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datacenter_id: Option<String>,
    /// DRS configuration; absent means "not observed", which is reported like a disabled DRS
    /// only when rules would depend on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drs: Option<DrsConfig>,
    #[serde(default)]
    pub hosts: Vec<Host>,
    #[serde(default)]
    pub vms: Vec<Vm>,
    #[serde(default)]
    pub rules: Vec<Rule>,
}

impl Cluster {
    /// `datacenter/name`: vCenter escapes `/` in object names (`%2f`), so this never reads two
    /// ways.
    pub fn qualified_name(&self) -> String {
        format!("{}/{}", self.datacenter, self.name)
    }

    /// Whether `other` may be a record of this very cluster: the same id, or, where either record
    /// lacks one, the same datacenter and name.
    pub fn may_be(&self, other: &Cluster) -> bool {
        match (&self.id, &other.id) {
            (Some(a), Some(b)) => a == b,
            _ => self.datacenter == other.datacenter && self.name == other.name,
        }
    }
}

/// `configurationEx.drsConfig` of a cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "a DRS configuration (a mapping)"
)]
pub struct DrsConfig {
    pub enabled: bool,
    /// `defaultVmBehavior`: `fullyAutomated`, `partiallyAutomated` or `manual`.
    #[serde(default = "fully_automated")]
    pub default_vm_behavior: String,
}

fn fully_automated() -> String {
    "fullyAutomated".to_string()
}

/// An ESXi host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "a host (a mapping)"
)]
pub struct Host {
    pub name: String,
    /// The host's managed object id (`host-21`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `runtime.connectionState`: `connected`, `disconnected` or `notResponding`.
    #[serde(default = "connected")]
    pub connection_state: String,
    #[serde(default)]
    pub in_maintenance_mode: bool,
}

fn connected() -> String {
    "connected".to_string()
}

impl Host {
    /// Whether pods may be placed on node VMs of this host: connected and not in maintenance.
    pub fn is_usable(&self) -> bool {
        self.connection_state == "connected" && !self.in_maintenance_mode
    }
}

/// A virtual machine, possibly a Kubernetes node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "a VM (a mapping)"
)]
pub struct Vm {
    /// Unique only within its folder: two VMs of one cluster may share it.
    pub name: String,
    /// The VM's managed object id (`vm-42`), by which DRS rules name it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// BIOS uuid (`config.uuid`), the one `vsphere://` provider IDs carry.
    #[serde(default)]
    pub uuid: String,
    /// Name of the host the VM runs on now (`runtime.host`).
    #[serde(default)]
    pub host: String,
    #[serde(default = "powered_on")]
    pub power_state: String,
    /// Per-VM DRS override when one is set: its automation level (`drsVmConfig.behavior`:
    /// `fullyAutomated`, `partiallyAutomated`, `manual`), or `disabled` when the override turns
    /// DRS off for this VM (`drsVmConfig.enabled: false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drs_behavior: Option<String>,
}

fn powered_on() -> String {
    "poweredOn".to_string()
}

/// A DRS VM-VM rule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "a DRS rule (a mapping)"
)]
pub struct Rule {
    pub name: String,
    /// The rule key vCenter assigned; edits and removals address it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<i32>,
    #[serde(rename = "type")]
    pub kind: RuleKind,
    #[serde(default)]
    pub enabled: bool,
    #[serde(default)]
    pub mandatory: bool,
    /// `false` for system rules, which are never touched.
    #[serde(default = "yes")]
    pub user_created: bool,
    /// The rule's `ruleUuid`, resent with an edit so that the edit keeps it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Names of the rule's VMs.
    #[serde(default)]
    pub vms: Vec<String>,
    /// Managed object ids of the rule's VMs, in any order; where known, membership is compared by
    /// these rather than by names, which may repeat.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vm_ids: Vec<String>,
}

fn yes() -> bool {
    true
}

/// Kinds of DRS rule the inventory records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", expecting = "a DRS rule kind")]
pub enum RuleKind {
    AntiAffinity,
    Affinity,
    /// VM-Host rules and anything else: kept only so they are known, never edited.
    Other,
}
