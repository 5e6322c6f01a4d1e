//! VM Operator's objects (group `vmoperator.vmware.com`) as `kubectl get -o yaml|json` prints
//! them from a Supervisor, reduced to the fields the topology is built from.
//!
//! One type per kind reads every served version, v1alpha1 to v1alpha6: where a version renamed a
//! field, both spellings are read (a Supervisor without VM Operator's conversion webhook serves
//! an object as it was stored, so a v1alpha5 reply may still hold `status.host`). Every other
//! field is skipped unread: a real object carries `managedFields`, the server's defaults
//! (`powerOffMode: TrySoft`, `promoteDisksMode: Online`, …) and a long status.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::inventory::PowerState;

/// The API group of VM Operator's kinds.
pub const API_GROUP: &str = "vmoperator.vmware.com";
/// The versions read, oldest first: 8.0.3 stores v1alpha2, 9.0.0 v1alpha3, 9.0.1 v1alpha4,
/// 9.1 v1alpha5; v1alpha6 is VM Operator's newest.
pub const VERSIONS: [&str; 6] = [
    "v1alpha1", "v1alpha2", "v1alpha3", "v1alpha4", "v1alpha5", "v1alpha6",
];
/// `kind` of a VM Operator virtual machine.
pub const VIRTUAL_MACHINE: &str = "VirtualMachine";
/// `kind` of the resource policy that holds a guest cluster's cluster modules.
pub const RESOURCE_POLICY: &str = "VirtualMachineSetResourcePolicy";

/// The annotation VM Operator reads a VM's cluster module group from.
pub const MODULE_GROUP_ANNOTATION: &str = "vsphere-cluster-module-group";
/// The annotation VM Operator writes once it added the VM to its cluster module: the module's
/// uuid.
pub const MODULE_UUID_ANNOTATION: &str = "vsphere-cluster-module-group-uuid";
/// Cluster API's label naming a VM's guest cluster (CAPV's spelling, read first).
pub const CAPV_CLUSTER_LABEL: &str = "capv.vmware.com/cluster.name";
/// Cluster API's own label naming a VM's guest cluster.
pub const CLUSTER_LABEL: &str = "cluster.x-k8s.io/cluster-name";
/// Cluster API's label naming a worker VM's MachineDeployment.
pub const DEPLOYMENT_LABEL: &str = "cluster.x-k8s.io/deployment-name";
/// CAPV's label saying whether a VM is a control-plane or a worker node.
pub const ROLE_LABEL: &str = "capv.vmware.com/cluster.role";

/// Whether `api_version` is a version of VM Operator's group this program reads.
pub fn is_read_version(api_version: &str) -> bool {
    api_version
        .strip_prefix(API_GROUP)
        .and_then(|rest| rest.strip_prefix('/'))
        .is_some_and(|version| VERSIONS.contains(&version))
}

/// A `VirtualMachine`, whatever its version. Its name is the guest node's name when it is a
/// guest cluster's node VM.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(from = "wire::VirtualMachine")]
pub struct VirtualMachine {
    pub namespace: String,
    pub name: String,
    /// The ESXi host's name: `status.nodeName` (v1alpha4 on), else `status.host` (up to
    /// v1alpha3); `None` while the VM is being created.
    pub host: Option<String>,
    /// `status.biosUUID`: what a guest node carries as `spec.providerID: vsphere://<uuid>`.
    pub bios_uuid: Option<String>,
    /// `status.uniqueID`, the VM's managed object id (`vm-1043`); `None` until vSphere created
    /// the VM.
    pub unique_id: Option<String>,
    /// `status.powerState`; `None` until VM Operator observed it.
    pub power_state: Option<VmPowerState>,
    /// `status.zone`: the vSphere Zone, which is one vSphere cluster.
    pub zone: Option<String>,
    /// The resource policy whose cluster modules the VM joins: `spec.resourcePolicyName`
    /// (v1alpha1) or `spec.reserved.resourcePolicyName` (v1alpha2 on).
    pub resource_policy: Option<String>,
    /// The cluster module group it belongs to (annotation `vsphere-cluster-module-group`).
    pub module_group: Option<String>,
    /// The uuid of the module VM Operator added it to (annotation
    /// `vsphere-cluster-module-group-uuid`), once it did.
    pub module_uuid: Option<String>,
    /// The guest cluster it is a node of (label `capv.vmware.com/cluster.name`, else
    /// `cluster.x-k8s.io/cluster-name`).
    pub guest_cluster: Option<String>,
    /// Control plane or worker (label `capv.vmware.com/cluster.role`).
    pub role: Option<NodeRole>,
    /// A worker's MachineDeployment (label `cluster.x-k8s.io/deployment-name`).
    pub deployment: Option<String>,
}

/// A VM's `status.powerState`: `poweredOn` in v1alpha1, `PoweredOn` from v1alpha2; a state
/// this program does not know is kept as written.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(from = "String")]
pub enum VmPowerState {
    PoweredOn,
    PoweredOff,
    Suspended,
    Other(String),
}

impl From<String> for VmPowerState {
    fn from(state: String) -> VmPowerState {
        match state.as_str() {
            "PoweredOn" | "poweredOn" => VmPowerState::PoweredOn,
            "PoweredOff" | "poweredOff" => VmPowerState::PoweredOff,
            "Suspended" | "suspended" => VmPowerState::Suspended,
            _ => VmPowerState::Other(state),
        }
    }
}

impl From<VmPowerState> for PowerState {
    fn from(state: VmPowerState) -> PowerState {
        match state {
            VmPowerState::PoweredOn => PowerState::PoweredOn,
            VmPowerState::PoweredOff => PowerState::PoweredOff,
            VmPowerState::Suspended => PowerState::Suspended,
            VmPowerState::Other(state) => PowerState::Other(state),
        }
    }
}

/// A guest node VM's role, as CAPV labels it (`controlplane` or `node`); another value is kept
/// as written.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(into = "String")]
pub enum NodeRole {
    ControlPlane,
    Worker,
    Other(String),
}

impl From<String> for NodeRole {
    fn from(role: String) -> NodeRole {
        match role.as_str() {
            "controlplane" => NodeRole::ControlPlane,
            "node" => NodeRole::Worker,
            _ => NodeRole::Other(role),
        }
    }
}

impl From<NodeRole> for String {
    fn from(role: NodeRole) -> String {
        match role {
            NodeRole::ControlPlane => "controlplane".to_string(),
            NodeRole::Worker => "node".to_string(),
            NodeRole::Other(role) => role,
        }
    }
}

/// A `VirtualMachineSetResourcePolicy`, whatever its version: one per guest cluster, named like
/// it, holding the cluster modules (soft VM-VM anti-affinity kept by DRS) of its node groups.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(from = "wire::ResourcePolicy")]
pub struct ResourcePolicy {
    pub namespace: String,
    pub name: String,
    /// The module groups asked for: `spec.clustermodules[].groupname` (v1alpha1) or
    /// `spec.clusterModuleGroups` (v1alpha2 on).
    pub groups: Vec<String>,
    /// The modules VM Operator created (`status.clustermodules`): one per group and vSphere
    /// cluster.
    pub modules: Vec<ModuleStatus>,
}

/// One cluster module a resource policy's status records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleStatus {
    /// `groupName` (`groupname` in v1alpha1).
    pub group: String,
    /// `moduleUUID`.
    pub uuid: String,
    /// `clusterMoID`: the vSphere cluster the module is in (`domain-c10`).
    pub cluster_id: String,
}

/// The objects as the API writes them: every version's spelling, only the fields read.
mod wire {
    use super::*;

    #[derive(Deserialize, Default)]
    #[serde(default, expecting = "metadata to be a mapping")]
    pub(super) struct Meta {
        name: Option<String>,
        namespace: Option<String>,
        labels: Option<BTreeMap<String, String>>,
        annotations: Option<BTreeMap<String, String>>,
    }

    impl Meta {
        fn label(&self, key: &str) -> Option<String> {
            value(self.labels.as_ref(), key)
        }

        fn annotation(&self, key: &str) -> Option<String> {
            value(self.annotations.as_ref(), key)
        }
    }

    /// A value that is set and not empty: an empty label or annotation says nothing.
    fn value(map: Option<&BTreeMap<String, String>>, key: &str) -> Option<String> {
        map.and_then(|map| map.get(key))
            .filter(|value| !value.is_empty())
            .cloned()
    }

    /// A text field that says something: absent, null and empty are all "not set".
    fn set(text: Option<String>) -> Option<String> {
        text.filter(|text| !text.is_empty())
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", expecting = "a VirtualMachine (a mapping)")]
    pub(super) struct VirtualMachine {
        #[serde(default)]
        metadata: Option<Meta>,
        #[serde(default)]
        spec: Option<VmSpec>,
        #[serde(default)]
        status: Option<VmStatus>,
    }

    #[derive(Deserialize, Default)]
    #[serde(default, rename_all = "camelCase", expecting = "spec to be a mapping")]
    struct VmSpec {
        /// v1alpha1.
        resource_policy_name: Option<String>,
        /// v1alpha2 on.
        reserved: Option<Reserved>,
    }

    #[derive(Deserialize, Default)]
    #[serde(
        default,
        rename_all = "camelCase",
        expecting = "spec.reserved to be a mapping"
    )]
    struct Reserved {
        resource_policy_name: Option<String>,
    }

    #[derive(Deserialize, Default)]
    #[serde(
        default,
        rename_all = "camelCase",
        expecting = "status to be a mapping"
    )]
    struct VmStatus {
        /// v1alpha1 to v1alpha3.
        host: Option<String>,
        /// v1alpha4 on.
        node_name: Option<String>,
        #[serde(rename = "biosUUID")]
        bios_uuid: Option<String>,
        #[serde(rename = "uniqueID")]
        unique_id: Option<String>,
        power_state: Option<String>,
        zone: Option<String>,
    }

    impl From<VirtualMachine> for super::VirtualMachine {
        fn from(vm: VirtualMachine) -> super::VirtualMachine {
            let meta = vm.metadata.unwrap_or_default();
            let spec = vm.spec.unwrap_or_default();
            let status = vm.status.unwrap_or_default();
            let reserved = spec.reserved.and_then(|r| set(r.resource_policy_name));
            super::VirtualMachine {
                host: set(status.node_name).or(set(status.host)),
                bios_uuid: set(status.bios_uuid),
                unique_id: set(status.unique_id),
                power_state: set(status.power_state).map(VmPowerState::from),
                zone: set(status.zone),
                resource_policy: reserved.or(set(spec.resource_policy_name)),
                module_group: meta.annotation(MODULE_GROUP_ANNOTATION),
                module_uuid: meta.annotation(MODULE_UUID_ANNOTATION),
                guest_cluster: meta
                    .label(CAPV_CLUSTER_LABEL)
                    .or_else(|| meta.label(CLUSTER_LABEL)),
                role: meta.label(ROLE_LABEL).map(NodeRole::from),
                deployment: meta.label(DEPLOYMENT_LABEL),
                namespace: meta.namespace.unwrap_or_default(),
                name: meta.name.unwrap_or_default(),
            }
        }
    }

    #[derive(Deserialize)]
    #[serde(
        rename_all = "camelCase",
        expecting = "a VirtualMachineSetResourcePolicy (a mapping)"
    )]
    pub(super) struct ResourcePolicy {
        #[serde(default)]
        metadata: Option<Meta>,
        #[serde(default)]
        spec: Option<PolicySpec>,
        #[serde(default)]
        status: Option<PolicyStatus>,
    }

    #[derive(Deserialize, Default)]
    #[serde(default, rename_all = "camelCase", expecting = "spec to be a mapping")]
    struct PolicySpec {
        /// v1alpha1: `[{groupname}]`.
        clustermodules: Option<Vec<GroupSpec>>,
        /// v1alpha2 on.
        cluster_module_groups: Option<Vec<String>>,
    }

    #[derive(Deserialize)]
    #[serde(expecting = "a cluster module group (a mapping with groupname)")]
    struct GroupSpec {
        groupname: String,
    }

    #[derive(Deserialize, Default)]
    #[serde(default, expecting = "status to be a mapping")]
    struct PolicyStatus {
        clustermodules: Option<Vec<Module>>,
    }

    #[derive(Deserialize)]
    #[serde(expecting = "a cluster module (a mapping with groupName, moduleUUID, clusterMoID)")]
    struct Module {
        /// `groupname` in v1alpha1.
        #[serde(rename = "groupName", alias = "groupname")]
        group_name: String,
        #[serde(rename = "moduleUUID")]
        module_uuid: String,
        #[serde(rename = "clusterMoID")]
        cluster_mo_id: String,
    }

    impl From<ResourcePolicy> for super::ResourcePolicy {
        fn from(policy: ResourcePolicy) -> super::ResourcePolicy {
            let meta = policy.metadata.unwrap_or_default();
            let spec = policy.spec.unwrap_or_default();
            let v1alpha1 = spec.clustermodules.into_iter().flatten();
            let groups = v1alpha1
                .map(|group| group.groupname)
                .chain(spec.cluster_module_groups.into_iter().flatten())
                .collect();
            let modules = policy
                .status
                .and_then(|status| status.clustermodules)
                .into_iter()
                .flatten()
                .map(|module| ModuleStatus {
                    group: module.group_name,
                    uuid: module.module_uuid,
                    cluster_id: module.cluster_mo_id,
                })
                .collect();
            super::ResourcePolicy {
                namespace: meta.namespace.unwrap_or_default(),
                name: meta.name.unwrap_or_default(),
                groups,
                modules,
            }
        }
    }
}

#[cfg(test)]
mod tests;
