//! From property-collector objects to the [`Inventory`], plus the index of managed object
//! references that rule changes need to address VMs, clusters and rules.
//!
//! One retrieval brings every VM, host and cluster with exactly the properties below, and, by
//! following `parent` from each cluster, the folders and datacenters above it. Placement comes
//! only from `VirtualMachine.runtime.host` (`HostSystem.vm` can be stale, as in vcsim).

use std::collections::{BTreeMap, HashMap};

use crate::inventory::{Cluster, DrsConfig, Host, Inventory, Rule, RuleKind, Vm};

use super::Error;
use super::soap::{
    ClusterConfig, Fault, MoRef, ObjectContent, PropertySpec, RuleInfo, RuleType, TraversalSpec,
    Value,
};

pub(crate) const VIEW_KINDS: &[&str] = &["VirtualMachine", "HostSystem", "ClusterComputeResource"];

pub(crate) const PROPERTIES: &[PropertySpec<'static>] = &[
    PropertySpec {
        kind: "VirtualMachine",
        paths: &[
            "name",
            "config.uuid",
            "config.template",
            "runtime.host",
            "runtime.powerState",
        ],
    },
    PropertySpec {
        kind: "HostSystem",
        paths: &[
            "name",
            "parent",
            "runtime.connectionState",
            "runtime.inMaintenanceMode",
        ],
    },
    PropertySpec {
        kind: "ClusterComputeResource",
        paths: &["name", "parent", "configurationEx"],
    },
    PropertySpec {
        kind: "Folder",
        paths: &["parent"],
    },
    PropertySpec {
        kind: "Datacenter",
        paths: &["name"],
    },
];

/// Into the view's objects, and from each cluster up through its folders to the datacenter.
pub(crate) const TRAVERSAL: &[TraversalSpec<'static>] = &[
    TraversalSpec {
        name: "view",
        kind: "ContainerView",
        path: "view",
        select: &["clusterParent"],
    },
    TraversalSpec {
        name: "clusterParent",
        kind: "ClusterComputeResource",
        path: "parent",
        select: &["folderParent"],
    },
    TraversalSpec {
        name: "folderParent",
        kind: "Folder",
        path: "parent",
        select: &["folderParent"],
    },
];

/// Folders nest; a deeper chain than this means a cycle in a broken reply.
const MAX_FOLDER_DEPTH: usize = 64;

/// What the client remembers of one observed cluster to address rule changes.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ClusterIndex {
    pub name: String,
    pub datacenter: String,
    pub moref: MoRef,
    /// VM name → its references (more than one when names repeat in the cluster).
    pub vms: BTreeMap<String, Vec<MoRef>>,
    pub rules: BTreeMap<i32, KnownRule>,
}

/// An observed rule, as far as edits and removals need it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct KnownRule {
    pub name: String,
    pub kind: RuleKind,
    pub user_created: bool,
    pub rule_uuid: Option<String>,
}

/// The result of one observation.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Observation {
    pub inventory: Inventory,
    pub index: Vec<ClusterIndex>,
}

/// Objects by type, each by its reference value.
struct Objects<'a> {
    by_kind: HashMap<&'a str, HashMap<&'a str, &'a ObjectContent>>,
}

impl<'a> Objects<'a> {
    fn new(objects: &'a [ObjectContent]) -> Objects<'a> {
        let mut by_kind: HashMap<&str, HashMap<&str, &ObjectContent>> = HashMap::new();
        for object in objects {
            by_kind
                .entry(object.obj.kind.as_str())
                .or_default()
                .insert(object.obj.value.as_str(), object);
        }
        Objects { by_kind }
    }

    fn get(&self, reference: &MoRef) -> Option<&'a ObjectContent> {
        self.by_kind
            .get(reference.kind.as_str())
            .and_then(|objects| objects.get(reference.value.as_str()))
            .copied()
    }

    fn of_kind(&self, kind: &str) -> impl Iterator<Item = &'a ObjectContent> + '_ {
        self.by_kind
            .get(kind)
            .into_iter()
            .flat_map(|objects| objects.values().copied())
    }
}

/// A property that must be present: absent or unreadable is an error naming the object.
fn required<'a>(object: &'a ObjectContent, path: &'static str) -> Result<&'a Value, Error> {
    object.property(path).ok_or_else(|| Error::MissingProperty {
        object: object.obj.to_string(),
        property: path,
        fault: unreadable(object, path),
    })
}

fn required_str<'a>(object: &'a ObjectContent, path: &'static str) -> Result<&'a str, Error> {
    required(object, path)?
        .as_str()
        .ok_or_else(|| Error::MissingProperty {
            object: object.obj.to_string(),
            property: path,
            fault: None,
        })
}

fn unreadable(object: &ObjectContent, path: &str) -> Option<Fault> {
    object
        .missing
        .iter()
        .find(|(missing, _)| missing == path)
        .map(|(_, fault)| fault.clone())
}

/// Builds the inventory of the clusters that pass the filters (empty filter = all).
pub(crate) fn build(
    objects: &[ObjectContent],
    datacenters: &[String],
    clusters: &[String],
) -> Result<Observation, Error> {
    let objects = Objects::new(objects);

    let mut vm_names: HashMap<&str, &str> = HashMap::new();
    for vm in objects.of_kind("VirtualMachine") {
        vm_names.insert(vm.obj.value.as_str(), required_str(vm, "name")?);
    }

    // Selected clusters, by reference value.
    let mut selected: HashMap<&str, (Cluster, ClusterIndex, Option<&ClusterConfig>)> =
        HashMap::new();
    for object in objects.of_kind("ClusterComputeResource") {
        let name = required_str(object, "name")?;
        let datacenter = datacenter_of(&objects, object);
        let admitted = (datacenters.is_empty() || datacenters.contains(&datacenter))
            && (clusters.is_empty() || clusters.iter().any(|c| c == name));
        if !admitted {
            continue;
        }
        let config = match object.property("configurationEx") {
            Some(Value::ClusterConfig(config)) => Some(config),
            _ => None,
        };
        let (drs, rules, known) = match config {
            Some(config) => {
                let (rules, known) = rules(config, &vm_names, name);
                (Some(drs_config(config)), rules, known)
            }
            None => {
                tracing::warn!(cluster = name, "cluster configuration is unreadable");
                (None, Vec::new(), BTreeMap::new())
            }
        };
        let cluster = Cluster {
            name: name.to_string(),
            datacenter: datacenter.clone(),
            drs,
            hosts: Vec::new(),
            vms: Vec::new(),
            rules,
        };
        let index = ClusterIndex {
            name: name.to_string(),
            datacenter,
            moref: object.obj.clone(),
            vms: BTreeMap::new(),
            rules: known,
        };
        selected.insert(object.obj.value.as_str(), (cluster, index, config));
    }

    // Host reference value → (cluster reference value, host name).
    let mut host_cluster: HashMap<&str, (&str, &str)> = HashMap::new();
    for object in objects.of_kind("HostSystem") {
        let Some(parent) = object.property("parent").and_then(Value::as_reference) else {
            continue;
        };
        // Standalone hosts have a ComputeResource parent: no cluster, no DRS.
        if parent.kind != "ClusterComputeResource" {
            continue;
        }
        let Some((cluster, _, _)) = selected.get_mut(parent.value.as_str()) else {
            continue;
        };
        let name = required_str(object, "name")?;
        cluster.hosts.push(Host {
            name: name.to_string(),
            connection_state: object
                .property("runtime.connectionState")
                .and_then(Value::as_str)
                .unwrap_or("connected")
                .to_string(),
            in_maintenance_mode: object
                .property("runtime.inMaintenanceMode")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        });
        host_cluster.insert(object.obj.value.as_str(), (parent.value.as_str(), name));
    }

    for object in objects.of_kind("VirtualMachine") {
        // Without `config` the VM is inaccessible (orphaned, or its datastore is gone).
        let Some(template) = object.property("config.template").and_then(Value::as_bool) else {
            continue;
        };
        if template {
            continue;
        }
        let Some(host) = object
            .property("runtime.host")
            .and_then(Value::as_reference)
        else {
            continue;
        };
        let Some((cluster_ref, host_name)) = host_cluster.get(host.value.as_str()) else {
            continue;
        };
        let Some((cluster, index, config)) = selected.get_mut(cluster_ref) else {
            continue;
        };
        let name = required_str(object, "name")?;
        cluster.vms.push(Vm {
            name: name.to_string(),
            uuid: object
                .property("config.uuid")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            host: host_name.to_string(),
            power_state: object
                .property("runtime.powerState")
                .and_then(Value::as_str)
                .unwrap_or("poweredOn")
                .to_string(),
            drs_behavior: config.and_then(|c| drs_override(c, &object.obj)),
        });
        index
            .vms
            .entry(name.to_string())
            .or_default()
            .push(object.obj.clone());
    }

    let mut entries: Vec<(Cluster, ClusterIndex)> = selected
        .into_values()
        .map(|(cluster, index, _)| (cluster, index))
        .collect();
    entries.sort_by(|(a, _), (b, _)| (&a.datacenter, &a.name).cmp(&(&b.datacenter, &b.name)));
    let mut inventory = Inventory::default();
    let mut index = Vec::with_capacity(entries.len());
    for (mut cluster, cluster_index) in entries {
        cluster.hosts.sort_by(|a, b| a.name.cmp(&b.name));
        cluster.vms.sort_by(|a, b| a.name.cmp(&b.name));
        inventory.clusters.push(cluster);
        index.push(cluster_index);
    }
    Ok(Observation { inventory, index })
}

/// Name of the datacenter above a cluster, following `parent` through host folders.
fn datacenter_of(objects: &Objects<'_>, cluster: &ObjectContent) -> String {
    let mut parent = cluster.property("parent").and_then(Value::as_reference);
    for _ in 0..MAX_FOLDER_DEPTH {
        let Some(reference) = parent else {
            break;
        };
        let Some(object) = objects.get(reference) else {
            break;
        };
        if reference.kind == "Datacenter" {
            return object
                .property("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
        }
        parent = object.property("parent").and_then(Value::as_reference);
    }
    tracing::warn!(cluster = %cluster.obj, "no datacenter found above cluster");
    String::new()
}

fn drs_config(config: &ClusterConfig) -> DrsConfig {
    DrsConfig {
        // The API's default for an unset flag is "disabled": report rules as unenforced rather
        // than assume DRS acts on them.
        enabled: config.drs_enabled.unwrap_or(false),
        default_vm_behavior: config
            .drs_default_vm_behavior
            .clone()
            .unwrap_or_else(|| "fullyAutomated".to_string()),
    }
}

/// A VM's DRS override: `disabled` when DRS may not touch it, else its own automation level.
fn drs_override(config: &ClusterConfig, vm: &MoRef) -> Option<String> {
    let o = config.drs_vm_overrides.iter().find(|o| &o.vm == vm)?;
    if o.enabled == Some(false) {
        return Some("disabled".to_string());
    }
    o.behavior.clone()
}

fn rules(
    config: &ClusterConfig,
    vm_names: &HashMap<&str, &str>,
    cluster: &str,
) -> (Vec<Rule>, BTreeMap<i32, KnownRule>) {
    let mut rules = Vec::with_capacity(config.rules.len());
    let mut known = BTreeMap::new();
    for info in &config.rules {
        let rule = rule(info, vm_names, cluster);
        if let Some(key) = info.key {
            known.insert(
                key,
                KnownRule {
                    name: rule.name.clone(),
                    kind: rule.kind,
                    user_created: rule.user_created,
                    rule_uuid: info.rule_uuid.clone(),
                },
            );
        }
        rules.push(rule);
    }
    rules.sort_by(|a, b| (a.key.is_none(), a.key, &a.name).cmp(&(b.key.is_none(), b.key, &b.name)));
    (rules, known)
}

fn rule(info: &RuleInfo, vm_names: &HashMap<&str, &str>, cluster: &str) -> Rule {
    let kind = match info.kind {
        RuleType::AntiAffinity => RuleKind::AntiAffinity,
        RuleType::Affinity => RuleKind::Affinity,
        RuleType::Other(_) => RuleKind::Other,
    };
    let mut vms: Vec<String> = info
        .vms
        .iter()
        .filter_map(|vm| {
            let name = vm_names.get(vm.value.as_str());
            if name.is_none() {
                tracing::warn!(cluster, rule = %info.name, vm = %vm, "rule names an unknown VM");
            }
            name.map(|n| n.to_string())
        })
        .collect();
    // A rule's VMs are a set; sorted, observations compare equal whatever order vCenter keeps.
    vms.sort();
    Rule {
        name: info.name.clone(),
        key: info.key,
        kind,
        // vim25 defaults: a rule without `enabled` is disabled, without `mandatory` optional.
        enabled: info.enabled.unwrap_or(false),
        mandatory: info.mandatory.unwrap_or(false),
        user_created: info.user_created.unwrap_or(true),
        vms,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vsphere::soap::{fixture_response, retrieve_result};

    /// The objects of the two recorded pages of one paged retrieval.
    fn paged_objects() -> Vec<ObjectContent> {
        let mut objects = Vec::new();
        for page in [
            "retrieve-properties-page1-token.xml",
            "continue-retrieve-properties-page2.xml",
        ] {
            let response = fixture_response(page);
            objects.extend(retrieve_result(&response).expect("page").objects);
        }
        objects
    }

    fn expected_paged_cluster() -> Cluster {
        Cluster {
            name: "prod & test".to_string(),
            datacenter: "dc-east".to_string(),
            drs: Some(DrsConfig {
                enabled: true,
                default_vm_behavior: "partiallyAutomated".to_string(),
            }),
            hosts: vec![
                Host {
                    name: "esxi-01.example.com".to_string(),
                    connection_state: "connected".to_string(),
                    in_maintenance_mode: false,
                },
                Host {
                    name: "esxi-02.example.com".to_string(),
                    connection_state: "notResponding".to_string(),
                    in_maintenance_mode: true,
                },
            ],
            vms: vec![
                Vm {
                    name: "worker-a".to_string(),
                    uuid: "4211b599-1c8d-6f36-a2a0-5a3b3b1c9e01".to_string(),
                    host: "esxi-01.example.com".to_string(),
                    power_state: "poweredOn".to_string(),
                    drs_behavior: Some("disabled".to_string()),
                },
                Vm {
                    name: "worker-b".to_string(),
                    uuid: "4211b599-1c8d-6f36-a2a0-5a3b3b1c9e02".to_string(),
                    host: "esxi-02.example.com".to_string(),
                    power_state: "poweredOff".to_string(),
                    drs_behavior: Some("manual".to_string()),
                },
            ],
            rules: vec![
                Rule {
                    name: "vsphere-descheduler:prod:shop:Deployment/web".to_string(),
                    key: Some(5),
                    kind: RuleKind::AntiAffinity,
                    enabled: true,
                    mandatory: false,
                    user_created: true,
                    vms: vec!["worker-a".to_string(), "worker-b".to_string()],
                },
                Rule {
                    name: "vCLS (System Managed)".to_string(),
                    key: Some(6),
                    kind: RuleKind::Other,
                    enabled: true,
                    mandatory: true,
                    user_created: false,
                    vms: vec![],
                },
                Rule {
                    name: "db before app".to_string(),
                    key: Some(7),
                    kind: RuleKind::Other,
                    enabled: true,
                    mandatory: false,
                    user_created: true,
                    vms: vec![],
                },
            ],
        }
    }

    #[test]
    fn paged_objects_make_one_inventory_without_templates_orphans_or_standalone_hosts() {
        let observation = build(&paged_objects(), &[], &[]).expect("complete objects");
        assert_eq!(
            observation.inventory,
            Inventory {
                clusters: vec![expected_paged_cluster()]
            }
        );
    }

    #[test]
    fn the_index_addresses_vms_rules_and_the_cluster() {
        let observation = build(&paged_objects(), &[], &[]).expect("complete objects");
        let [index] = observation.index.as_slice() else {
            panic!("one cluster");
        };
        assert_eq!(
            index.moref,
            MoRef::new("ClusterComputeResource", "domain-c8")
        );
        assert_eq!(index.datacenter, "dc-east");
        assert_eq!(
            index.vms.get("worker-b"),
            Some(&vec![MoRef::new("VirtualMachine", "vm-102")])
        );
        assert!(!index.vms.contains_key("ubuntu-template"));
        assert_eq!(
            index.rules.get(&5).and_then(|r| r.rule_uuid.as_deref()),
            Some("52c6b2c8-9d5e-5b1c-2f7a-0d1e9b4c3a21")
        );
        assert_eq!(index.rules.get(&6).map(|r| r.user_created), Some(false));
    }

    #[test]
    fn filters_select_datacenters_and_clusters_by_name() {
        let objects = paged_objects();
        let by_datacenter = build(&objects, &["dc-east".to_string()], &[]).expect("objects");
        assert_eq!(by_datacenter.inventory.clusters.len(), 1);
        let other_datacenter = build(&objects, &["dc-west".to_string()], &[]).expect("objects");
        assert!(other_datacenter.inventory.clusters.is_empty());
        let by_cluster = build(&objects, &[], &["prod & test".to_string()]).expect("objects");
        assert_eq!(by_cluster.inventory.clusters.len(), 1);
        let other_cluster = build(&objects, &[], &["prod".to_string()]).expect("objects");
        assert!(other_cluster.inventory.clusters.is_empty());
        assert!(other_cluster.index.is_empty());
    }

    #[test]
    fn the_vcsim_capture_gives_hosts_states_and_rules() {
        let response = fixture_response("retrieve-properties-vcsim.xml");
        let objects = retrieve_result(&response).expect("objects").objects;
        let observation = build(&objects, &[], &[]).expect("complete objects");
        let [cluster] = observation.inventory.clusters.as_slice() else {
            panic!("one cluster");
        };
        assert_eq!(cluster.name, "wcp-cluster-41");
        assert_eq!(cluster.datacenter, "go-lab");
        let states: Vec<(&str, &str, bool)> = cluster
            .hosts
            .iter()
            .map(|h| {
                (
                    h.name.as_str(),
                    h.connection_state.as_str(),
                    h.in_maintenance_mode,
                )
            })
            .collect();
        assert_eq!(
            states,
            [
                ("esxi-41", "connected", false),
                ("esxi-42", "notResponding", false),
                ("esxi-43", "connected", true)
            ]
        );
        let vms: Vec<&str> = cluster.vms.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(
            vms,
            ["worker-a", "worker-b"],
            "the template tmpl is left out"
        );
        assert_eq!(cluster.rules[0].vms, ["worker-a", "worker-b"]);
    }

    #[test]
    fn a_vm_without_a_readable_name_is_an_error_naming_it() {
        let mut objects = paged_objects();
        let vm = objects
            .iter_mut()
            .find(|o| o.obj.value == "vm-101")
            .expect("worker-a");
        vm.properties.retain(|(name, _)| name != "name");
        vm.missing.push((
            "name".to_string(),
            Fault {
                name: "NoPermission".to_string(),
                message: String::new(),
            },
        ));
        let error = build(&objects, &[], &[]).expect_err("name is required");
        assert_eq!(
            error.to_string(),
            "VirtualMachine:vm-101 has no readable name"
        );
        assert_eq!(error.fault().map(|f| f.name.as_str()), None);
        let source = std::error::Error::source(&error).expect("the fault is the cause");
        assert_eq!(source.to_string(), "NoPermission");
    }
}
