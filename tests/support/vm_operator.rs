//! A VKS guest cluster as its Supervisor and its own API server hold it, for tests: VM Operator's
//! VirtualMachines and VirtualMachineSetResourcePolicy in the shape a version is stored and
//! printed in (the labels and annotation Cluster API writes, the CRD's defaults, the status VM
//! Operator writes), the guest Nodes that match them (name = VM name, `spec.providerID:
//! vsphere://<biosUUID>`, `systemUUID`), and one story with both: [`GuestClusterStory`].

use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeSpec, NodeStatus, NodeSystemInfo};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};

pub use super::fake_apiserver::vm_operator::{
    CONVERSION_ANNOTATION, GROUP, Release, Resource, Version, convert,
};
use super::fake_apiserver::{FakeCluster, KubeObjects, Rbac};

/// Cluster API's labels and VM Operator's annotation on a guest cluster's VMs.
pub const CLUSTER_NAME_LABEL: &str = "capv.vmware.com/cluster.name";
pub const CLUSTER_ROLE_LABEL: &str = "capv.vmware.com/cluster.role";
pub const CAPI_CLUSTER_LABEL: &str = "cluster.x-k8s.io/cluster-name";
pub const DEPLOYMENT_LABEL: &str = "cluster.x-k8s.io/deployment-name";
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
pub const MODULE_GROUP_ANNOTATION: &str = "vsphere-cluster-module-group";

/// What a guest cluster's VM is to Cluster API.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Role {
    ControlPlane,
    /// A worker of this MachineDeployment.
    Worker {
        deployment: String,
    },
}

/// A VM's power state, as v1alpha2 and later spell it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PowerState {
    PoweredOn,
    PoweredOff,
    Suspended,
}

impl PowerState {
    fn name(self) -> &'static str {
        match self {
            PowerState::PoweredOn => "PoweredOn",
            PowerState::PoweredOff => "PoweredOff",
            PowerState::Suspended => "Suspended",
        }
    }
}

/// One node VM of a guest cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuestVm {
    /// The Supervisor namespace.
    pub namespace: String,
    pub cluster: String,
    /// The VM's name, and its guest Node's.
    pub name: String,
    pub role: Role,
    /// The ESXi host's name (the HostSystem's); empty for a VM not placed yet (its status has
    /// no host field).
    pub host: String,
    /// The VM's `config.uuid`, lowercase.
    pub bios_uuid: String,
    pub instance_uuid: String,
    /// The VM's managed object id (`vm-1001`).
    pub unique_id: String,
    pub power_state: PowerState,
    pub zone: String,
}

impl GuestVm {
    /// VM number `serial` of `cluster` in `namespace`: identities derived from the serial, so
    /// every VM of a story differs; powered on, in zone `zone-a`.
    pub fn new(
        namespace: &str,
        cluster: &str,
        name: &str,
        role: Role,
        host: &str,
        serial: u32,
    ) -> GuestVm {
        GuestVm {
            namespace: namespace.to_string(),
            cluster: cluster.to_string(),
            name: name.to_string(),
            role,
            host: host.to_string(),
            bios_uuid: format!("4237a0b1-{serial:04x}-4c1e-9d2f-0a0b0c0d{serial:04x}"),
            instance_uuid: format!("5037c2d3-{serial:04x}-4e5f-8a9b-1c2d3e4f{serial:04x}"),
            unique_id: format!("vm-{}", 1000 + serial),
            power_state: PowerState::PoweredOn,
            zone: "zone-a".to_string(),
        }
    }

    /// The cluster module group VM Operator puts the VM in: one for the control plane, one for
    /// all workers of the cluster.
    pub fn module_group(&self) -> String {
        match self.role {
            Role::ControlPlane => "control-plane-group".to_string(),
            Role::Worker { .. } => format!("{}-workers-0", self.cluster),
        }
    }

    /// The VirtualMachine as a Supervisor storing `version` prints it (no `uid`,
    /// `resourceVersion` or creation time: the fake sets those when it stores it).
    pub fn object(&self, version: Version) -> Value {
        let (role, deployment) = match &self.role {
            Role::ControlPlane => ("controlplane", None),
            Role::Worker { deployment } => ("node", Some(deployment)),
        };
        let mut labels = json!({
            CLUSTER_NAME_LABEL: self.cluster,
            CLUSTER_ROLE_LABEL: role,
            CAPI_CLUSTER_LABEL: self.cluster,
            ZONE_LABEL: self.zone,
        });
        if let Some(deployment) = deployment {
            labels[DEPLOYMENT_LABEL] = json!(deployment);
        }
        // Written in the newest version of the fake, then converted as the webhook would.
        let mut newest = json!({
            "apiVersion": Version::V1alpha5.api_version(),
            "kind": "VirtualMachine",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "labels": labels,
                "annotations": {MODULE_GROUP_ANNOTATION: self.module_group()},
            },
            "spec": {
                "className": "best-effort-small",
                "imageName": "vmi-8b5a3c1f2e4d6a7b",
                "storageClass": "vsan-default-storage-policy",
                "powerState": self.power_state.name(),
                "powerOffMode": "TrySoft",
                "restartMode": "TrySoft",
                "suspendMode": "TrySoft",
                "promoteDisksMode": "Online",
                "reserved": {"resourcePolicyName": self.cluster},
            },
            "status": {
                "nodeName": self.host,
                "biosUUID": self.bios_uuid,
                "instanceUUID": self.instance_uuid,
                "uniqueID": self.unique_id,
                "powerState": self.power_state.name(),
                "zone": self.zone,
            },
        });
        // VM Operator writes no host for a VM not placed yet.
        if self.host.is_empty() {
            newest["status"]
                .as_object_mut()
                .expect("a status")
                .remove("nodeName");
        }
        convert(Resource::VirtualMachines, &newest, version)
    }

    /// The guest cluster's Node of this VM, Ready, as the paravirtual cloud provider and the
    /// kubelet leave it.
    pub fn node(&self) -> Node {
        let mut labels = std::collections::BTreeMap::from([
            ("kubernetes.io/hostname".to_string(), self.name.clone()),
            ("kubernetes.io/os".to_string(), "linux".to_string()),
            (ZONE_LABEL.to_string(), self.zone.clone()),
        ]);
        if self.role == Role::ControlPlane {
            labels.insert(
                "node-role.kubernetes.io/control-plane".to_string(),
                String::new(),
            );
        }
        Node {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                labels: Some(labels),
                ..ObjectMeta::default()
            },
            spec: Some(NodeSpec {
                provider_id: Some(format!("vsphere://{}", self.bios_uuid)),
                ..NodeSpec::default()
            }),
            status: Some(NodeStatus {
                conditions: Some(vec![NodeCondition {
                    type_: "Ready".to_string(),
                    status: "True".to_string(),
                    ..NodeCondition::default()
                }]),
                node_info: Some(NodeSystemInfo {
                    system_uuid: self.bios_uuid.clone(),
                    ..NodeSystemInfo::default()
                }),
                ..NodeStatus::default()
            }),
        }
    }
}

/// The VirtualMachineSetResourcePolicy of guest cluster `cluster` (named like it), with the
/// cluster modules VM Operator created for `groups`, as a Supervisor storing `version` prints it.
pub fn resource_policy(
    namespace: &str,
    cluster: &str,
    groups: &[String],
    version: Version,
) -> Value {
    let modules: Vec<Value> = groups
        .iter()
        .enumerate()
        .map(|(index, group)| {
            json!({
                "groupName": group,
                "moduleUUID": format!("52a1b3c4-d5e6-f708-192a-3b4c5d6e7f{index:02x}"),
                "clusterMoID": "domain-c8",
            })
        })
        .collect();
    let newest = json!({
        "apiVersion": Version::V1alpha5.api_version(),
        "kind": "VirtualMachineSetResourcePolicy",
        "metadata": {
            "name": cluster,
            "namespace": namespace,
            "labels": {CAPI_CLUSTER_LABEL: cluster},
        },
        "spec": {
            "clusterModuleGroups": groups,
            "folder": cluster,
            "resourcePool": {"name": cluster},
        },
        "status": {"clustermodules": modules},
    });
    convert(Resource::ResourcePolicies, &newest, version)
}

/// Three ESXi hosts; guest cluster `tkc-1` in Supervisor namespace `team-a` with one control
/// plane VM and three workers of one MachineDeployment, two workers on the first host (what
/// the soft cluster module let DRS do), one on the second, the control plane on the third.
#[derive(Clone, Debug)]
pub struct GuestClusterStory {
    pub namespace: String,
    pub cluster: String,
    pub hosts: Vec<String>,
    pub vms: Vec<GuestVm>,
}

impl Default for GuestClusterStory {
    fn default() -> GuestClusterStory {
        GuestClusterStory::new()
    }
}

impl GuestClusterStory {
    pub const NAMESPACE: &str = "team-a";
    /// The ServiceAccount in the Supervisor namespace the tool reads VM Operator's objects as.
    pub const SERVICE_ACCOUNT: &str = "vsphere-descheduler";
    pub const CLUSTER: &str = "tkc-1";
    /// The workers' MachineDeployment.
    pub const DEPLOYMENT: &str = "tkc-1-workers-hq7kx";

    pub fn new() -> GuestClusterStory {
        let hosts: Vec<String> = (1..=3).map(|n| format!("esxi-{n}.lab.local")).collect();
        let worker = || Role::Worker {
            deployment: Self::DEPLOYMENT.to_string(),
        };
        let vm = |name: String, role: Role, host: &str, serial: u32| {
            GuestVm::new(Self::NAMESPACE, Self::CLUSTER, &name, role, host, serial)
        };
        let vms = vec![
            vm(
                format!("{}-control-plane-m8v2q", Self::CLUSTER),
                Role::ControlPlane,
                &hosts[2],
                1,
            ),
            vm(format!("{}-1", Self::DEPLOYMENT), worker(), &hosts[0], 2),
            vm(format!("{}-2", Self::DEPLOYMENT), worker(), &hosts[0], 3),
            vm(format!("{}-3", Self::DEPLOYMENT), worker(), &hosts[1], 4),
        ];
        GuestClusterStory {
            namespace: Self::NAMESPACE.to_string(),
            cluster: Self::CLUSTER.to_string(),
            hosts,
            vms,
        }
    }

    pub fn workers(&self) -> impl Iterator<Item = &GuestVm> {
        self.vms
            .iter()
            .filter(|vm| matches!(vm.role, Role::Worker { .. }))
    }

    pub fn vm(&self, name: &str) -> &GuestVm {
        self.vms
            .iter()
            .find(|vm| vm.name == name)
            .unwrap_or_else(|| panic!("no VM {name} in the story"))
    }

    /// The cluster's VirtualMachineSetResourcePolicy in `version`.
    pub fn resource_policy(&self, version: Version) -> Value {
        let groups = [
            "control-plane-group".to_string(),
            format!("{}-workers-0", self.cluster),
        ];
        resource_policy(&self.namespace, &self.cluster, &groups, version)
    }

    /// The Supervisor of `release`, holding the story's VMs and policy, answering the identity
    /// the tool uses there: the namespace owner's reader ServiceAccount
    /// [`GuestClusterStory::SERVICE_ACCOUNT`], with exactly the reader Role's grants (docs/vks.md).
    pub fn supervisor(&self, release: Release) -> FakeCluster {
        let version = release.storage_version();
        let objects = self
            .vms
            .iter()
            .map(|vm| vm.object(version))
            .chain(std::iter::once(self.resource_policy(version)));
        let mut cluster = FakeCluster::supervisor(release, objects);
        cluster.rbac = Rbac::vm_operator_reader(&self.namespace, Self::SERVICE_ACCOUNT);
        cluster
    }

    /// The guest cluster's Nodes.
    pub fn guest_nodes(&self) -> Vec<Node> {
        self.vms.iter().map(GuestVm::node).collect()
    }

    /// The guest cluster's API server, holding its Nodes.
    pub fn guest(&self) -> FakeCluster {
        FakeCluster::new(KubeObjects {
            nodes: self.guest_nodes(),
            ..KubeObjects::default()
        })
    }
}
