//! VM Operator's objects → the planner's [`Inventory`], and what the report says about the
//! cluster modules of each guest cluster. Pure and deterministic: every list comes out sorted.
//!
//! One inventory cluster per vSphere cluster: a VM's `status.zone` names it (a vSphere Zone is
//! one vSphere cluster), else its namespace does (a Supervisor without zones has one cluster);
//! its `id` is the `clusterMoID` of the cluster modules its VMs are in, when that is one id.
//! Hosts are the ones the VMs name. Each cluster module becomes a [`RuleKind::ClusterModule`]
//! rule: soft anti-affinity DRS keeps when it can, owned by VKS and never edited by us.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::documents::{ModuleStatus, ResourcePolicy, VirtualMachine};
use crate::inventory::{
    Cluster, ConnectionState, DrsRule, Host, Inventory, MaintenanceMode, PowerState, RuleKind, Vm,
};

/// The inventory and the findings beside it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Topology {
    pub inventory: Inventory,
    pub findings: Findings,
}

/// What the inventory cannot hold and a report should say: the cluster modules of each guest
/// cluster, and the VMs left out of the inventory.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Findings {
    pub guest_clusters: Vec<GuestCluster>,
    pub unplaced: Vec<UnplacedVm>,
}

/// A guest cluster's node VMs and the cluster modules meant to keep them apart.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GuestCluster {
    /// The Supervisor namespace.
    pub namespace: String,
    pub name: String,
    /// The modules of its resource policies, whether or not a VM is in them yet.
    pub modules: Vec<Module>,
    /// Its node VMs that are in no module, and why: DRS keeps nothing apart for them.
    pub outside_modules: Vec<MissingModule>,
}

/// One vSphere cluster module and the VMs in it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Module {
    /// The resource policy that holds it.
    pub policy: String,
    pub group: String,
    pub uuid: String,
    /// The vSphere cluster's managed object id (`clusterMoID`).
    pub cluster_id: String,
    /// Names of the VMs in it, created or not.
    pub vms: Vec<String>,
}

/// Why a guest cluster's node VM is in no cluster module.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(
    tag = "reason",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum MissingModule {
    /// It carries no `vsphere-cluster-module-group` annotation.
    NoGroupAnnotation { vm: String },
    /// It has a group but names no resource policy.
    NoResourcePolicy { vm: String, group: String },
    /// The resource policy it names was not read.
    PolicyNotFound { vm: String, policy: String },
    /// Its policy's status has no module of its group (VM Operator did not create it).
    GroupWithoutModule {
        vm: String,
        policy: String,
        group: String,
    },
    /// Its `vsphere-cluster-module-group-uuid` names a module its policy no longer has.
    StaleModule {
        vm: String,
        group: String,
        uuid: String,
    },
    /// Its group has a module in several vSphere clusters and the VM names none by uuid (VM
    /// Operator writes the uuid once it added the VM to one).
    ModuleUndetermined { vm: String, group: String },
}

impl MissingModule {
    /// The VM this is about.
    pub fn vm(&self) -> &str {
        match self {
            MissingModule::NoGroupAnnotation { vm }
            | MissingModule::NoResourcePolicy { vm, .. }
            | MissingModule::PolicyNotFound { vm, .. }
            | MissingModule::GroupWithoutModule { vm, .. }
            | MissingModule::StaleModule { vm, .. }
            | MissingModule::ModuleUndetermined { vm, .. } => vm,
        }
    }
}

/// A VM left out of the inventory: it runs on no host yet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnplacedVm {
    pub namespace: String,
    pub name: String,
    pub reason: UnplacedReason,
}

/// Why a VM has no host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum UnplacedReason {
    /// vSphere has not created it yet (no `status.uniqueID`).
    NotCreated,
    /// Created, but VM Operator reported no host for it (`status.nodeName` / `status.host`).
    NoHost,
}

/// The inventory and findings of these objects.
pub fn topology(vms: &[VirtualMachine], policies: &[ResourcePolicy]) -> Topology {
    Topology {
        inventory: inventory(vms, policies),
        findings: Findings {
            guest_clusters: module_membership(vms, policies),
            unplaced: unplaced(vms),
        },
    }
}

/// The planner's inventory of the VMs that run on a host, with their cluster modules as rules.
///
/// Host health is not observed in this source (VM Operator exposes none): every host is
/// connected and out of maintenance. Neither are DRS and HA settings (`drs`, `ha`: `None`).
pub fn inventory(vms: &[VirtualMachine], policies: &[ResourcePolicy]) -> Inventory {
    let mut clusters: BTreeMap<String, Building> = BTreeMap::new();
    let mut members: BTreeMap<(&str, &str, &str), Vec<&VirtualMachine>> = BTreeMap::new();
    for vm in vms {
        let Some(host) = &vm.host else { continue };
        let cluster = clusters.entry(cluster_key(vm)).or_default();
        cluster.hosts.insert(host.clone());
        cluster.vms.push(inventory_vm(vm, host));
        if let Membership::Member(policy, module) = membership(vm, policies) {
            cluster.ids.insert(module.cluster_id.clone());
            members
                .entry((&policy.namespace, &policy.name, &module.uuid))
                .or_default()
                .push(vm);
        }
    }
    let mut inventory = Inventory {
        clusters: clusters
            .into_iter()
            .map(|(name, building)| building.cluster(name))
            .collect(),
    };
    for policy in policies {
        for module in &policy.modules {
            let in_module = members
                .get(&(&*policy.namespace, &*policy.name, &*module.uuid))
                .map_or(&[][..], Vec::as_slice);
            place_rule(&mut inventory, policy, module, in_module);
        }
    }
    for cluster in &mut inventory.clusters {
        cluster
            .rules
            .sort_by(|a, b| (&a.name, &a.uuid).cmp(&(&b.name, &b.uuid)));
    }
    inventory
}

/// Each guest cluster (by Cluster API's label) with its modules and its node VMs in none,
/// sorted by namespace and name.
pub fn module_membership(vms: &[VirtualMachine], policies: &[ResourcePolicy]) -> Vec<GuestCluster> {
    let mut guests: BTreeMap<(&str, &str), Vec<&VirtualMachine>> = BTreeMap::new();
    for vm in vms {
        if let Some(guest) = &vm.guest_cluster {
            guests.entry((&vm.namespace, guest)).or_default().push(vm);
        }
    }
    guests
        .into_iter()
        .map(|((namespace, name), nodes)| guest_cluster(namespace, name, &nodes, vms, policies))
        .collect()
}

/// The VMs that run on no host yet, sorted by namespace and name.
pub fn unplaced(vms: &[VirtualMachine]) -> Vec<UnplacedVm> {
    let mut unplaced: Vec<UnplacedVm> = vms
        .iter()
        .filter(|vm| vm.host.is_none())
        .map(|vm| UnplacedVm {
            namespace: vm.namespace.clone(),
            name: vm.name.clone(),
            reason: match vm.unique_id {
                None => UnplacedReason::NotCreated,
                Some(_) => UnplacedReason::NoHost,
            },
        })
        .collect();
    unplaced.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    unplaced
}

/// One inventory cluster while its VMs are added.
#[derive(Default)]
struct Building {
    hosts: BTreeSet<String>,
    vms: Vec<Vm>,
    /// The `clusterMoID`s of the modules its VMs are in.
    ids: BTreeSet<String>,
}

impl Building {
    fn cluster(mut self, name: String) -> Cluster {
        self.vms
            .sort_by(|a, b| (&a.name, &a.id).cmp(&(&b.name, &b.id)));
        // Two ids would be two vSphere clusters under one name: which one is which VM's cannot
        // be told, so none is claimed.
        let id = match self.ids.len() {
            1 => self.ids.pop_first(),
            _ => None,
        };
        Cluster {
            name,
            id,
            hosts: self.hosts.into_iter().map(usable_host).collect(),
            vms: self.vms,
            ..Cluster::default()
        }
    }
}

/// The inventory cluster a VM is in: its zone, else its namespace.
fn cluster_key(vm: &VirtualMachine) -> String {
    vm.zone.clone().unwrap_or_else(|| vm.namespace.clone())
}

/// Health is not observed in this source: a host a VM runs on is taken as usable.
fn usable_host(name: String) -> Host {
    Host {
        name,
        id: None,
        connection_state: ConnectionState::Connected,
        in_maintenance_mode: MaintenanceMode::Off,
        vsan_fault_domain: None,
    }
}

fn inventory_vm(vm: &VirtualMachine, host: &str) -> Vm {
    Vm {
        name: vm.name.clone(),
        id: vm.unique_id.clone(),
        uuid: vm.bios_uuid.clone().unwrap_or_default(),
        host: host.to_string(),
        // A VM on a host whose power state VM Operator has not reported yet: said so, rather
        // than guessed.
        power_state: vm.power_state.clone().map_or_else(
            || PowerState::Other("unknown".to_string()),
            PowerState::from,
        ),
        drs_behavior: None,
    }
}

/// Adds a module's rule to the cluster whose id is the module's `clusterMoID`, else to its
/// members' cluster; a module with neither (no member runs anywhere) has no rule.
fn place_rule(
    inventory: &mut Inventory,
    policy: &ResourcePolicy,
    module: &ModuleStatus,
    members: &[&VirtualMachine],
) {
    let by_id = inventory
        .clusters
        .iter()
        .position(|c| c.id.as_deref() == Some(module.cluster_id.as_str()));
    let by_member = || {
        let key = cluster_key(members.first()?);
        inventory.clusters.iter().position(|c| c.name == key)
    };
    let Some(at) = by_id.or_else(by_member) else {
        return;
    };
    let mut vms: Vec<&VirtualMachine> = members.to_vec();
    vms.sort_by(|a, b| a.name.cmp(&b.name));
    inventory.clusters[at].rules.push(DrsRule {
        name: format!("{}/{}", policy.name, module.group),
        key: None,
        kind: RuleKind::ClusterModule,
        enabled: true,
        mandatory: false,
        user_created: false,
        uuid: Some(module.uuid.clone()),
        vms: vms.iter().map(|vm| vm.name.clone()).collect(),
        vm_ids: vms.iter().filter_map(|vm| vm.unique_id.clone()).collect(),
    });
}

/// Whether a VM is in a cluster module, and which.
enum Membership<'a> {
    Member(&'a ResourcePolicy, &'a ModuleStatus),
    Outside(MissingModule),
}

/// The module a VM is in: of the resource policy it names (in its namespace), the module of its
/// group, the one its uuid annotation names where it carries one.
fn membership<'a>(vm: &VirtualMachine, policies: &'a [ResourcePolicy]) -> Membership<'a> {
    let name = || vm.name.clone();
    let Some(group) = vm.module_group.clone() else {
        return Membership::Outside(MissingModule::NoGroupAnnotation { vm: name() });
    };
    let Some(policy_name) = vm.resource_policy.clone() else {
        return Membership::Outside(MissingModule::NoResourcePolicy { vm: name(), group });
    };
    let Some(policy) = policies
        .iter()
        .find(|p| p.namespace == vm.namespace && p.name == policy_name)
    else {
        return Membership::Outside(MissingModule::PolicyNotFound {
            vm: name(),
            policy: policy_name,
        });
    };
    let modules: Vec<&ModuleStatus> = policy.modules.iter().filter(|m| m.group == group).collect();
    let found = match (&vm.module_uuid, modules.as_slice()) {
        (_, []) => {
            return Membership::Outside(MissingModule::GroupWithoutModule {
                vm: name(),
                policy: policy_name,
                group,
            });
        }
        (Some(uuid), _) => {
            modules
                .iter()
                .find(|m| &m.uuid == uuid)
                .ok_or_else(|| MissingModule::StaleModule {
                    vm: name(),
                    group: group.clone(),
                    uuid: uuid.clone(),
                })
        }
        (None, [only]) => Ok(only),
        (None, _) => Err(MissingModule::ModuleUndetermined {
            vm: name(),
            group: group.clone(),
        }),
    };
    match found {
        Ok(module) => Membership::Member(policy, module),
        Err(missing) => Membership::Outside(missing),
    }
}

/// One guest cluster: the modules of the policies its VMs name and of the policy named like it,
/// and its node VMs in none.
fn guest_cluster(
    namespace: &str,
    name: &str,
    nodes: &[&VirtualMachine],
    vms: &[VirtualMachine],
    policies: &[ResourcePolicy],
) -> GuestCluster {
    let named: BTreeSet<&str> = nodes
        .iter()
        .filter_map(|vm| vm.resource_policy.as_deref())
        .chain([name])
        .collect();
    let mut modules = Vec::new();
    for policy in policies
        .iter()
        .filter(|p| p.namespace == namespace && named.contains(p.name.as_str()))
    {
        for module in &policy.modules {
            let mut members: Vec<String> = vms
                .iter()
                .filter(|vm| is_member(vm, policies, policy, module))
                .map(|vm| vm.name.clone())
                .collect();
            members.sort();
            modules.push(Module {
                policy: policy.name.clone(),
                group: module.group.clone(),
                uuid: module.uuid.clone(),
                cluster_id: module.cluster_id.clone(),
                vms: members,
            });
        }
    }
    modules.sort_by(|a, b| {
        (&a.policy, &a.group, &a.cluster_id, &a.uuid).cmp(&(
            &b.policy,
            &b.group,
            &b.cluster_id,
            &b.uuid,
        ))
    });
    let mut outside_modules: Vec<MissingModule> = nodes
        .iter()
        .filter_map(|vm| match membership(vm, policies) {
            Membership::Outside(missing) => Some(missing),
            Membership::Member(..) => None,
        })
        .collect();
    outside_modules.sort_by(|a, b| a.vm().cmp(b.vm()));
    GuestCluster {
        namespace: namespace.to_string(),
        name: name.to_string(),
        modules,
        outside_modules,
    }
}

fn is_member(
    vm: &VirtualMachine,
    policies: &[ResourcePolicy],
    policy: &ResourcePolicy,
    module: &ModuleStatus,
) -> bool {
    match membership(vm, policies) {
        Membership::Member(p, m) => {
            (&p.namespace, &p.name, &m.uuid, &m.cluster_id)
                == (
                    &policy.namespace,
                    &policy.name,
                    &module.uuid,
                    &module.cluster_id,
                )
        }
        Membership::Outside(_) => false,
    }
}

#[cfg(test)]
mod tests;
