//! The vSphere inventory as the planner sees it: clusters, their ESXi hosts, the VMs on them and
//! the DRS rules they hold.
//!
//! One type serves both sources: `VSphereInventory` documents in snapshot files and the live
//! observation of vCenter (`crate::vsphere`), so `plan` and `run` share one code path.

use std::fmt;

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
    /// vSphere HA configuration (`configurationEx.dasConfig`); absent means "not observed",
    /// which `what-if` reports as unknown rather than guess what HA would do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ha: Option<HaConfig>,
    #[serde(default)]
    pub hosts: Vec<Host>,
    #[serde(default)]
    pub vms: Vec<Vm>,
    #[serde(default)]
    pub rules: Vec<DrsRule>,
    /// DRS host groups (`configurationEx.group`, each a `ClusterHostGroup`): the sets of hosts a
    /// policy may name as sites (`vsphere.sites`). Absent in snapshot files written before they
    /// were observed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_groups: Vec<HostGroup>,
    /// DRS VM groups (`configurationEx.group`, each a `ClusterVmGroup`): what VM/Host rules tie
    /// to host groups.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vm_groups: Vec<VmGroup>,
    /// VM/Host rules (`ClusterVmHostRuleInfo`) with the groups they name. `rules` lists them too,
    /// as [`RuleKind::Other`], as it always has; this is where their meaning is kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vm_host_rules: Vec<VmHostRule>,
}

/// A DRS host group (`ClusterHostGroup`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "a DRS host group (a mapping)"
)]
pub struct HostGroup {
    pub name: String,
    /// Names of the group's hosts, as `Host.name`.
    #[serde(default)]
    pub hosts: Vec<String>,
    /// Managed object ids of the group's hosts (`host-21`), where observed; membership is
    /// compared by these where both sides have them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_ids: Vec<String>,
}

/// A DRS VM group (`ClusterVmGroup`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "a DRS VM group (a mapping)"
)]
pub struct VmGroup {
    pub name: String,
    /// Names of the group's VMs, as `Vm.name`.
    #[serde(default)]
    pub vms: Vec<String>,
    /// Managed object ids of the group's VMs (`vm-42`), where observed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vm_ids: Vec<String>,
}

impl HostGroup {
    /// Whether the group holds `host`: by managed object id where both sides have them (names
    /// may be written differently), else by name.
    pub fn holds(&self, host: &Host) -> bool {
        match &host.id {
            Some(id) if !self.host_ids.is_empty() => self.host_ids.contains(id),
            _ => self.hosts.contains(&host.name),
        }
    }
}

impl VmGroup {
    /// Whether the group holds `vm`: by managed object id where both sides have them, else by
    /// name.
    pub fn holds(&self, vm: &Vm) -> bool {
        match &vm.id {
            Some(id) if !self.vm_ids.is_empty() => self.vm_ids.contains(id),
            _ => self.vms.contains(&vm.name),
        }
    }
}

/// A DRS VM/Host rule (`ClusterVmHostRuleInfo`): the VMs of `vm_group` run on the hosts of
/// `affine_host_group`, or not on those of `anti_affine_host_group`. `mandatory` is a "must"
/// rule (HA does not restart a VM against it), otherwise a "should" rule (HA and DRS may break
/// it when they have to).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "a DRS VM/Host rule (a mapping)"
)]
pub struct VmHostRule {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<i32>,
    #[serde(default)]
    pub enabled: bool,
    #[serde(default)]
    pub mandatory: bool,
    /// `vmGroupName`.
    pub vm_group: String,
    /// `affineHostGroupName`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affine_host_group: Option<String>,
    /// `antiAffineHostGroupName`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anti_affine_host_group: Option<String>,
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

    /// The host group a VM/Host rule names.
    pub fn host_group(&self, name: &str) -> Option<&HostGroup> {
        self.host_groups.iter().find(|group| group.name == name)
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
    /// `defaultVmBehavior`; vSphere's default when absent is `fullyAutomated`.
    #[serde(default)]
    pub default_vm_behavior: DrsBehavior,
}

/// A DRS automation level (`DrsBehavior` in the vSphere API), read once where the inventory is
/// observed or loaded so that planning decides on the variant. A VM's override may also be
/// [`DrsBehavior::Disabled`]. A level this program does not know is kept as written, so a newer
/// vCenter or a hand-written snapshot still loads and round-trips.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum DrsBehavior {
    /// DRS moves VMs by itself: its rules are enforced.
    #[default]
    FullyAutomated,
    /// DRS places VMs at power-on but only recommends moves.
    PartiallyAutomated,
    /// DRS only recommends.
    Manual,
    /// A VM override that turns DRS off for the VM (`drsVmConfig.enabled: false`).
    Disabled,
    Other(String),
}

impl DrsBehavior {
    /// The level as vSphere spells it.
    pub fn as_str(&self) -> &str {
        match self {
            DrsBehavior::FullyAutomated => "fullyAutomated",
            DrsBehavior::PartiallyAutomated => "partiallyAutomated",
            DrsBehavior::Manual => "manual",
            DrsBehavior::Disabled => "disabled",
            DrsBehavior::Other(level) => level,
        }
    }
}

impl fmt::Display for DrsBehavior {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<String> for DrsBehavior {
    fn from(level: String) -> DrsBehavior {
        match level.as_str() {
            "fullyAutomated" => DrsBehavior::FullyAutomated,
            "partiallyAutomated" => DrsBehavior::PartiallyAutomated,
            "manual" => DrsBehavior::Manual,
            "disabled" => DrsBehavior::Disabled,
            _ => DrsBehavior::Other(level),
        }
    }
}

impl From<&str> for DrsBehavior {
    fn from(level: &str) -> DrsBehavior {
        DrsBehavior::from(level.to_string())
    }
}

impl From<DrsBehavior> for String {
    fn from(level: DrsBehavior) -> String {
        match level {
            DrsBehavior::Other(level) => level,
            known => known.as_str().to_string(),
        }
    }
}

/// `configurationEx.dasConfig` of a cluster: what vSphere HA does with the VMs of a host that
/// fails.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "an HA configuration (a mapping)"
)]
pub struct HaConfig {
    /// `enabled`: HA restarts the VMs of a failed host on the cluster's other hosts.
    pub enabled: bool,
    /// `admissionControlEnabled` and `admissionControlPolicy`: the failover capacity HA keeps
    /// free; `None` when admission control is off, and also when its policy is of a type this
    /// program does not read (observation logs a warning naming it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_control: Option<AdmissionControl>,
    /// `defaultVmSettings.restartPriority`: `disabled` means the cluster's VMs are not restarted.
    #[serde(default)]
    pub restart_priority: RestartPriority,
    /// The advanced option `das.respectVmVmAntiAffinityRules` ("HA must respect VM anti-affinity
    /// rules during failover"); `None` when the option is not set, and vCenter's default applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub respect_vm_anti_affinity_rules: Option<bool>,
}

/// The failover capacity an HA admission control policy reserves.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    tag = "policy",
    deny_unknown_fields,
    expecting = "an admission control policy (a mapping with policy: hostFailures, \
                 resourcePercentage or dedicatedHosts)"
)]
pub enum AdmissionControl {
    /// `ClusterFailoverLevelAdmissionControlPolicy`: capacity for this many host failures.
    #[serde(rename_all = "camelCase")]
    HostFailures { failover_level: u32 },
    /// `ClusterFailoverResourcesAdmissionControlPolicy`: a share of CPU and memory kept free.
    #[serde(rename_all = "camelCase")]
    ResourcePercentage {
        cpu_percent: u32,
        memory_percent: u32,
        /// `failoverLevel`, where vCenter computes the percentages for so many host failures.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failover_level: Option<u32>,
    },
    /// `ClusterFailoverHostAdmissionControlPolicy`: hosts kept empty for failover, by name.
    #[serde(rename_all = "camelCase")]
    DedicatedHosts { hosts: Vec<String> },
}

/// `defaultVmSettings.restartPriority` as vSphere spells it; one this program does not know is
/// kept as written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum RestartPriority {
    Disabled,
    Lowest,
    Low,
    #[default]
    Medium,
    High,
    Highest,
    Other(String),
}

impl From<String> for RestartPriority {
    fn from(priority: String) -> RestartPriority {
        match priority.as_str() {
            "disabled" => RestartPriority::Disabled,
            "lowest" => RestartPriority::Lowest,
            "low" => RestartPriority::Low,
            "medium" => RestartPriority::Medium,
            "high" => RestartPriority::High,
            "highest" => RestartPriority::Highest,
            _ => RestartPriority::Other(priority),
        }
    }
}

impl From<RestartPriority> for String {
    fn from(priority: RestartPriority) -> String {
        match priority {
            RestartPriority::Disabled => "disabled".to_string(),
            RestartPriority::Lowest => "lowest".to_string(),
            RestartPriority::Low => "low".to_string(),
            RestartPriority::Medium => "medium".to_string(),
            RestartPriority::High => "high".to_string(),
            RestartPriority::Highest => "highest".to_string(),
            RestartPriority::Other(priority) => priority,
        }
    }
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
    /// `runtime.connectionState`.
    #[serde(default)]
    pub connection_state: ConnectionState,
    /// `runtime.inMaintenanceMode`.
    #[serde(default)]
    pub in_maintenance_mode: MaintenanceMode,
    /// The host's vSAN fault domain (`config.vsanHostConfig.faultDomainInfo.name`): `None` where
    /// not observed or vSAN is off on the host, `Some("")` for vSAN's default domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vsan_fault_domain: Option<String>,
}

impl Host {
    /// Whether pods may be placed on node VMs of this host: connected and not in maintenance.
    pub fn is_usable(&self) -> bool {
        self.connection_state == ConnectionState::Connected
            && self.in_maintenance_mode == MaintenanceMode::Off
    }
}

/// A host's `runtime.connectionState`, written as vSphere spells it. A state this program does
/// not know is kept as written (the host counts as unusable), so a newer vCenter or a
/// hand-written snapshot still loads and round-trips.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum ConnectionState {
    #[default]
    Connected,
    Disconnected,
    NotResponding,
    Other(String),
}

impl From<String> for ConnectionState {
    fn from(state: String) -> ConnectionState {
        match state.as_str() {
            "connected" => ConnectionState::Connected,
            "disconnected" => ConnectionState::Disconnected,
            "notResponding" => ConnectionState::NotResponding,
            _ => ConnectionState::Other(state),
        }
    }
}

impl From<ConnectionState> for String {
    fn from(state: ConnectionState) -> String {
        match state {
            ConnectionState::Connected => "connected".to_string(),
            ConnectionState::Disconnected => "disconnected".to_string(),
            ConnectionState::NotResponding => "notResponding".to_string(),
            ConnectionState::Other(state) => state,
        }
    }
}

/// A host's `runtime.inMaintenanceMode`, written as the boolean vSphere reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "bool", into = "bool")]
pub enum MaintenanceMode {
    #[default]
    Off,
    On,
}

impl From<bool> for MaintenanceMode {
    fn from(on: bool) -> MaintenanceMode {
        if on {
            MaintenanceMode::On
        } else {
            MaintenanceMode::Off
        }
    }
}

impl From<MaintenanceMode> for bool {
    fn from(mode: MaintenanceMode) -> bool {
        mode == MaintenanceMode::On
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
    /// `runtime.powerState`.
    #[serde(default)]
    pub power_state: PowerState,
    /// Per-VM DRS override when one is set: its automation level (`drsVmConfig.behavior`:
    /// `fullyAutomated`, `partiallyAutomated`, `manual`), or `disabled` when the override turns
    /// DRS off for this VM (`drsVmConfig.enabled: false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drs_behavior: Option<DrsBehavior>,
}

/// A VM's `runtime.powerState`, written as vSphere spells it. A state this program does not
/// know is kept as written, so a newer vCenter or a hand-written snapshot still loads and
/// round-trips.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum PowerState {
    #[default]
    PoweredOn,
    PoweredOff,
    Suspended,
    Other(String),
}

impl From<String> for PowerState {
    fn from(state: String) -> PowerState {
        match state.as_str() {
            "poweredOn" => PowerState::PoweredOn,
            "poweredOff" => PowerState::PoweredOff,
            "suspended" => PowerState::Suspended,
            _ => PowerState::Other(state),
        }
    }
}

impl From<PowerState> for String {
    fn from(state: PowerState) -> String {
        match state {
            PowerState::PoweredOn => "poweredOn".to_string(),
            PowerState::PoweredOff => "poweredOff".to_string(),
            PowerState::Suspended => "suspended".to_string(),
            PowerState::Other(state) => state,
        }
    }
}

/// A DRS VM-VM rule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "a DRS rule (a mapping)"
)]
pub struct DrsRule {
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
    /// A vSphere cluster module: soft anti-affinity over its VMs, which DRS keeps when it can
    /// (it may still place two members on one host). VKS and Cluster API own it (one per node
    /// group of a guest cluster, read from VM Operator's resource policy); never edited by us.
    ClusterModule,
    /// VM-Host rules and anything else: kept only so they are known, never edited.
    Other,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn drs_levels_read_as_variants_default_to_fully_automated_and_keep_unknown_ones() {
        let drs: DrsConfig = serde_json::from_value(json!({"enabled": true})).unwrap();
        assert_eq!(drs.default_vm_behavior, DrsBehavior::FullyAutomated);
        let drs: DrsConfig = serde_json::from_value(
            json!({"enabled": true, "defaultVmBehavior": "partiallyAutomated"}),
        )
        .unwrap();
        assert_eq!(drs.default_vm_behavior, DrsBehavior::PartiallyAutomated);
        let newer: DrsBehavior = serde_json::from_value(json!("selfDriving")).unwrap();
        assert_eq!(newer, DrsBehavior::Other("selfDriving".to_string()));
        assert_eq!(serde_json::to_value(&newer).unwrap(), json!("selfDriving"));
        assert_eq!(DrsBehavior::Manual.to_string(), "manual");
    }

    #[test]
    fn states_read_and_write_vsphere_spellings_and_keep_unknown_ones() {
        let host: Host = serde_json::from_value(json!({
            "name": "esxi-1", "connectionState": "notResponding", "inMaintenanceMode": true
        }))
        .expect("a host");
        assert_eq!(host.connection_state, ConnectionState::NotResponding);
        assert_eq!(host.in_maintenance_mode, MaintenanceMode::On);
        let standby: Host =
            serde_json::from_value(json!({"name": "esxi-2", "connectionState": "standby"}))
                .expect("a host in a state this program does not know");
        assert_eq!(
            standby.connection_state,
            ConnectionState::Other("standby".to_string())
        );
        assert!(!standby.is_usable());
        assert_eq!(
            serde_json::to_value(&standby).expect("JSON"),
            json!({"name": "esxi-2", "connectionState": "standby", "inMaintenanceMode": false})
        );
        let vm: Vm =
            serde_json::from_value(json!({"name": "w1", "powerState": "suspended"})).expect("a VM");
        assert_eq!(vm.power_state, PowerState::Suspended);
        let odd: Vm = serde_json::from_value(json!({"name": "w2", "powerState": "unknownState"}))
            .expect("a VM in a state this program does not know");
        assert_eq!(
            serde_json::to_value(&odd).expect("JSON")["powerState"],
            "unknownState"
        );
    }

    #[test]
    fn an_absent_state_is_connected_out_of_maintenance_and_powered_on() {
        let host: Host = serde_json::from_value(json!({"name": "esxi-1"})).expect("a host");
        assert!(host.is_usable());
        let vm: Vm = serde_json::from_value(json!({"name": "w1"})).expect("a VM");
        assert_eq!(vm.power_state, PowerState::PoweredOn);
    }

    /// A cluster record holding `ha`, as a snapshot file writes it.
    fn cluster_with_ha(ha: &str) -> String {
        format!("name: prod\ndatacenter: dc-east\nha:\n{ha}")
    }

    #[test]
    fn ha_with_each_admission_control_policy_reads_and_writes_back() {
        let cases = [
            (
                "  enabled: true\n  admissionControl:\n    policy: hostFailures\n    failoverLevel: 1\n  restartPriority: high\n  respectVmAntiAffinityRules: true\n",
                HaConfig {
                    enabled: true,
                    admission_control: Some(AdmissionControl::HostFailures { failover_level: 1 }),
                    restart_priority: RestartPriority::High,
                    respect_vm_anti_affinity_rules: Some(true),
                },
            ),
            (
                "  enabled: true\n  admissionControl:\n    policy: resourcePercentage\n    cpuPercent: 25\n    memoryPercent: 30\n    failoverLevel: 1\n  restartPriority: low\n  respectVmAntiAffinityRules: false\n",
                HaConfig {
                    enabled: true,
                    admission_control: Some(AdmissionControl::ResourcePercentage {
                        cpu_percent: 25,
                        memory_percent: 30,
                        failover_level: Some(1),
                    }),
                    restart_priority: RestartPriority::Low,
                    respect_vm_anti_affinity_rules: Some(false),
                },
            ),
            (
                "  enabled: true\n  admissionControl:\n    policy: resourcePercentage\n    cpuPercent: 50\n    memoryPercent: 40\n  restartPriority: medium\n",
                HaConfig {
                    enabled: true,
                    admission_control: Some(AdmissionControl::ResourcePercentage {
                        cpu_percent: 50,
                        memory_percent: 40,
                        failover_level: None,
                    }),
                    restart_priority: RestartPriority::Medium,
                    respect_vm_anti_affinity_rules: None,
                },
            ),
            (
                "  enabled: true\n  admissionControl:\n    policy: dedicatedHosts\n    hosts:\n    - esxi-21.example.com\n    - esxi-22.example.com\n  restartPriority: disabled\n",
                HaConfig {
                    enabled: true,
                    admission_control: Some(AdmissionControl::DedicatedHosts {
                        hosts: vec![
                            "esxi-21.example.com".to_string(),
                            "esxi-22.example.com".to_string(),
                        ],
                    }),
                    restart_priority: RestartPriority::Disabled,
                    respect_vm_anti_affinity_rules: None,
                },
            ),
            (
                "  enabled: false\n  restartPriority: medium\n",
                HaConfig {
                    enabled: false,
                    admission_control: None,
                    restart_priority: RestartPriority::Medium,
                    respect_vm_anti_affinity_rules: None,
                },
            ),
        ];
        for (ha, expected) in cases {
            let text = cluster_with_ha(ha);
            let cluster: Cluster = serde_saphyr::from_str(&text).expect(&text);
            assert_eq!(cluster.ha.as_ref(), Some(&expected), "{text}");
            let written = serde_saphyr::to_string(&cluster).expect("YAML");
            assert!(
                written.ends_with(&format!("ha:\n{ha}hosts: []\nvms: []\nrules: []\n")),
                "{written}"
            );
            let read: Cluster = serde_saphyr::from_str(&written).expect(&written);
            assert_eq!(read, cluster, "{written}");
        }
    }

    #[test]
    fn ha_may_be_left_out_and_then_is_not_written() {
        let cluster: Cluster =
            serde_saphyr::from_str("name: prod\ndatacenter: dc-east\n").expect("a cluster");
        assert_eq!(cluster.ha, None);
        let written = serde_saphyr::to_string(&cluster).expect("YAML");
        assert!(!written.contains("ha:"), "{written}");
        let minimal: Cluster =
            serde_saphyr::from_str(&cluster_with_ha("  enabled: true\n")).expect("only enabled");
        assert_eq!(
            minimal.ha.map(|ha| ha.restart_priority),
            Some(RestartPriority::Medium),
            "vSphere's default restart priority"
        );
    }

    #[test]
    fn an_unknown_field_inside_ha_is_refused_naming_it() {
        let refused = |ha: &str| {
            serde_saphyr::from_str::<Cluster>(&cluster_with_ha(ha))
                .expect_err(ha)
                .to_string()
        };
        let typo = refused("  enabled: true\n  respectAntiAffinity: true\n");
        assert!(
            typo.contains("unknown field `respectAntiAffinity`"),
            "{typo}"
        );
        let in_policy = refused(
            "  enabled: true\n  admissionControl:\n    policy: hostFailures\n    failoverLevel: 1\n    slotSize: 2\n",
        );
        assert!(
            in_policy.contains("unknown field `slotSize`"),
            "{in_policy}"
        );
        let policy = refused("  enabled: true\n  admissionControl:\n    policy: slots\n");
        assert!(policy.contains("unknown variant `slots`"), "{policy}");
    }

    #[test]
    fn a_cluster_module_rule_reads_and_writes_back_as_cluster_module() {
        let text = "name: tkc-1/tkc-1-workers-0\ntype: clusterModule\nenabled: true\n\
                    userCreated: false\nuuid: 52a1f0c4-0000-0000-0000-000000000002\n\
                    vms: [w1, w2]\nvmIds: [vm-41, vm-42]\n";
        let rule: DrsRule = serde_saphyr::from_str(text).expect("a cluster module");
        assert_eq!(rule.kind, RuleKind::ClusterModule);
        assert!(!rule.user_created);
        let written = serde_saphyr::to_string(&rule).expect("YAML");
        assert!(written.contains("type: clusterModule\n"), "{written}");
        assert_eq!(
            serde_saphyr::from_str::<DrsRule>(&written).expect(&written),
            rule
        );
    }

    #[test]
    fn a_state_that_is_not_a_string_is_refused_as_before() {
        let error = serde_json::from_value::<Host>(json!({"name": "esxi-1", "connectionState": 5}))
            .expect_err("a number is no state");
        assert_eq!(
            error.to_string(),
            "invalid type: integer `5`, expected a string"
        );
    }
}
