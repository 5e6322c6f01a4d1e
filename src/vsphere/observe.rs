//! From property-collector objects to the [`Inventory`], every object with its managed object id,
//! by which rule changes address clusters and VMs (names repeat: clusters across datacenters,
//! VMs across folders).
//!
//! One retrieval brings every VM, host and cluster with exactly the properties below, and, by
//! following `parent` from each cluster, the folders and datacenters above it. Placement comes
//! only from `VirtualMachine.runtime.host` (`HostSystem.vm` can be stale, as in vcsim).
//!
//! A host's vSAN fault domain is read through `config.vsanHostConfig`. A path through an unset
//! property is answered as unset (absent from `propSet`), not as a fault, both by vCenter and by
//! vcsim; the host then has no fault domain, as when vSAN is off on it.

use std::collections::HashMap;

use crate::inventory::{
    Cluster, ConnectionState, DrsBehavior, DrsConfig, DrsRule, Host, Inventory, MaintenanceMode,
    PowerState, RuleKind, Vm,
};

use super::Error;
use super::soap::{
    ClusterConfig, Fault, MoRef, ObjectContent, PropertySpec, PropertyValue, RuleInfo, RuleType,
    TraversalSpec,
};

mod groups;
mod ha;

/// `HostSystem` paths of the vSAN fault domain. `enabled` tells vSAN off from the default
/// domain: a host with vSAN off may still report `faultDomainInfo` with an empty name.
const VSAN_ENABLED: &str = "config.vsanHostConfig.enabled";
const VSAN_FAULT_DOMAIN: &str = "config.vsanHostConfig.faultDomainInfo.name";

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
            VSAN_ENABLED,
            VSAN_FAULT_DOMAIN,
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
fn required<'a>(object: &'a ObjectContent, path: &'static str) -> Result<&'a PropertyValue, Error> {
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

/// Selected clusters by reference value, each with its configuration when it is readable.
type Selected<'a> = HashMap<&'a str, (Cluster, Option<&'a ClusterConfig>)>;

/// Builds the inventory of the clusters that pass the filters (empty filter = all), every
/// object with its managed object id.
pub(crate) fn build(
    objects: &[ObjectContent],
    datacenters: &[String],
    clusters: &[String],
) -> Result<Inventory, Error> {
    let objects = Objects::new(objects);

    let mut vm_names: HashMap<&str, &str> = HashMap::new();
    for vm in objects.of_kind("VirtualMachine") {
        vm_names.insert(vm.obj.value.as_str(), required_str(vm, "name")?);
    }
    let mut selected = selected_clusters(&objects, datacenters, clusters, &vm_names)?;
    let host_cluster = place_hosts(&objects, &mut selected)?;
    place_vms(&objects, &mut selected, &host_cluster)?;

    let mut inventory = Inventory {
        clusters: selected.into_values().map(|(cluster, _)| cluster).collect(),
    };
    inventory
        .clusters
        .sort_by(|a, b| (&a.datacenter, &a.name, &a.id).cmp(&(&b.datacenter, &b.name, &b.id)));
    for cluster in &mut inventory.clusters {
        cluster.hosts.sort_by(|a, b| a.name.cmp(&b.name));
        cluster
            .vms
            .sort_by(|a, b| (&a.name, &a.id).cmp(&(&b.name, &b.id)));
    }
    Ok(inventory)
}

/// The clusters the filters admit, with their DRS configuration and rules, not yet holding
/// hosts or VMs.
fn selected_clusters<'a>(
    objects: &Objects<'a>,
    datacenters: &[String],
    clusters: &[String],
    vm_names: &HashMap<&str, &str>,
) -> Result<Selected<'a>, Error> {
    let mut selected: Selected<'a> = HashMap::new();
    for object in objects.of_kind("ClusterComputeResource") {
        let name = required_str(object, "name")?;
        let (datacenter, datacenter_id) = datacenter_of(objects, object);
        if !admitted(datacenters, clusters, &datacenter, name) {
            continue;
        }
        let config = match object.property("configurationEx") {
            Some(PropertyValue::ClusterConfig(config)) => Some(config),
            _ => None,
        };
        let mut cluster = Cluster {
            name: name.to_string(),
            id: Some(object.obj.value.clone()),
            datacenter,
            datacenter_id,
            drs: None,
            ha: None,
            hosts: Vec::new(),
            vms: Vec::new(),
            rules: Vec::new(),
            host_groups: Vec::new(),
            vm_groups: Vec::new(),
            vm_host_rules: Vec::new(),
        };
        match config {
            Some(config) => configure(&mut cluster, config, objects, vm_names, &object.obj),
            None => tracing::warn!(cluster = name, "cluster configuration is unreadable"),
        }
        selected.insert(object.obj.value.as_str(), (cluster, config));
    }
    Ok(selected)
}

/// Fills what a cluster's `configurationEx` holds: DRS and HA settings, rules, groups.
fn configure(
    cluster: &mut Cluster,
    config: &ClusterConfig,
    objects: &Objects<'_>,
    vm_names: &HashMap<&str, &str>,
    id: &MoRef,
) {
    cluster.drs = Some(drs_config(config));
    cluster.ha = Some(ha::config(&config.das, objects, &cluster.name, id));
    cluster.rules = rules(config, vm_names, &cluster.name);
    cluster.host_groups = groups::host_groups(config, objects, id);
    cluster.vm_groups = groups::vm_groups(config, objects, id);
    cluster.vm_host_rules = groups::vm_host_rules(config);
}

/// Adds each host to its selected cluster; returns host reference value → (cluster reference
/// value, host name), for placing the VMs.
fn place_hosts<'a>(
    objects: &Objects<'a>,
    selected: &mut Selected<'a>,
) -> Result<HashMap<&'a str, (&'a str, &'a str)>, Error> {
    let mut host_cluster: HashMap<&str, (&str, &str)> = HashMap::new();
    for object in objects.of_kind("HostSystem") {
        let Some(parent) = object
            .property("parent")
            .and_then(PropertyValue::as_reference)
        else {
            continue;
        };
        // Standalone hosts have a ComputeResource parent: no cluster, no DRS.
        if parent.kind != "ClusterComputeResource" {
            continue;
        }
        let Some((cluster, _)) = selected.get_mut(parent.value.as_str()) else {
            continue;
        };
        let name = required_str(object, "name")?;
        cluster.hosts.push(host(object, name));
        host_cluster.insert(object.obj.value.as_str(), (parent.value.as_str(), name));
    }
    Ok(host_cluster)
}

/// Adds each VM (not templates, not inaccessible ones) to the cluster of its host, with the
/// cluster's DRS override for it.
fn place_vms<'a>(
    objects: &Objects<'a>,
    selected: &mut Selected<'a>,
    host_cluster: &HashMap<&'a str, (&'a str, &'a str)>,
) -> Result<(), Error> {
    for object in objects.of_kind("VirtualMachine") {
        // Without `config` the VM is inaccessible (orphaned, or its datastore is gone).
        let Some(template) = object
            .property("config.template")
            .and_then(PropertyValue::as_bool)
        else {
            continue;
        };
        if template {
            continue;
        }
        let Some(host) = object
            .property("runtime.host")
            .and_then(PropertyValue::as_reference)
        else {
            continue;
        };
        let Some((cluster_ref, host_name)) = host_cluster.get(host.value.as_str()) else {
            continue;
        };
        let Some((cluster, config)) = selected.get_mut(cluster_ref) else {
            continue;
        };
        let mut vm = vm(object, required_str(object, "name")?, host_name);
        vm.drs_behavior = config.and_then(|c| drs_override(c, &object.obj));
        cluster.vms.push(vm);
    }
    Ok(())
}

/// Whether the policy's `datacenters` and `clusters` filters admit a cluster. A `clusters` entry
/// `datacenter/name` admits only the cluster of that name in that datacenter.
fn admitted(datacenters: &[String], clusters: &[String], datacenter: &str, name: &str) -> bool {
    let named = |entry: &String| match entry.split_once('/') {
        Some((in_datacenter, cluster)) => in_datacenter == datacenter && cluster == name,
        None => entry == name,
    };
    (datacenters.is_empty() || datacenters.iter().any(|d| d == datacenter))
        && (clusters.is_empty() || clusters.iter().any(named))
}

fn host(object: &ObjectContent, name: &str) -> Host {
    Host {
        name: name.to_string(),
        id: Some(object.obj.value.clone()),
        connection_state: object
            .property("runtime.connectionState")
            .and_then(PropertyValue::as_str)
            .map_or(ConnectionState::Connected, |state| {
                ConnectionState::from(state.to_string())
            }),
        in_maintenance_mode: object
            .property("runtime.inMaintenanceMode")
            .and_then(PropertyValue::as_bool)
            .map_or(MaintenanceMode::Off, MaintenanceMode::from),
        vsan_fault_domain: vsan_fault_domain(object),
    }
}

/// The host's vSAN fault domain: `None` unless vSAN is on for the host; the empty name (vSAN's
/// default domain) when it is on and names none. vCenter sends an empty `name`, vcsim leaves an
/// empty string out: both read the same.
fn vsan_fault_domain(object: &ObjectContent) -> Option<String> {
    let enabled = object
        .property(VSAN_ENABLED)
        .and_then(PropertyValue::as_bool);
    if enabled != Some(true) {
        return None;
    }
    let name = object
        .property(VSAN_FAULT_DOMAIN)
        .and_then(PropertyValue::as_str)
        .unwrap_or_default();
    Some(name.to_string())
}

fn vm(object: &ObjectContent, name: &str, host: &str) -> Vm {
    Vm {
        name: name.to_string(),
        id: Some(object.obj.value.clone()),
        uuid: object
            .property("config.uuid")
            .and_then(PropertyValue::as_str)
            .unwrap_or_default()
            .to_string(),
        host: host.to_string(),
        power_state: object
            .property("runtime.powerState")
            .and_then(PropertyValue::as_str)
            .map_or(PowerState::PoweredOn, |state| {
                PowerState::from(state.to_string())
            }),
        drs_behavior: None,
    }
}

/// Name and id of the datacenter above a cluster, following `parent` through host folders.
fn datacenter_of(objects: &Objects<'_>, cluster: &ObjectContent) -> (String, Option<String>) {
    let mut parent = cluster
        .property("parent")
        .and_then(PropertyValue::as_reference);
    for _ in 0..MAX_FOLDER_DEPTH {
        let Some(reference) = parent else {
            break;
        };
        let Some(object) = objects.get(reference) else {
            break;
        };
        if reference.kind == "Datacenter" {
            let name = object
                .property("name")
                .and_then(PropertyValue::as_str)
                .unwrap_or_default();
            return (name.to_string(), Some(reference.value.clone()));
        }
        parent = object
            .property("parent")
            .and_then(PropertyValue::as_reference);
    }
    tracing::warn!(cluster = %cluster.obj, "no datacenter found above cluster");
    (String::new(), None)
}

fn drs_config(config: &ClusterConfig) -> DrsConfig {
    DrsConfig {
        // The API's default for an unset flag is "disabled": report rules as unenforced rather
        // than assume DRS acts on them.
        enabled: config.drs_enabled.unwrap_or(false),
        default_vm_behavior: config
            .drs_default_vm_behavior
            .clone()
            .map(DrsBehavior::from)
            .unwrap_or_default(),
    }
}

/// A VM's DRS override: `disabled` when DRS may not touch it, else its own automation level.
fn drs_override(config: &ClusterConfig, vm: &MoRef) -> Option<DrsBehavior> {
    let o = config.drs_vm_overrides.iter().find(|o| &o.vm == vm)?;
    if o.enabled == Some(false) {
        return Some(DrsBehavior::Disabled);
    }
    o.behavior.clone().map(DrsBehavior::from)
}

fn rules(config: &ClusterConfig, vm_names: &HashMap<&str, &str>, cluster: &str) -> Vec<DrsRule> {
    let mut rules: Vec<DrsRule> = config
        .rules
        .iter()
        .map(|info| rule(info, vm_names, cluster))
        .collect();
    rules.sort_by(|a, b| (a.key.is_none(), a.key, &a.name).cmp(&(b.key.is_none(), b.key, &b.name)));
    rules
}

fn rule(info: &RuleInfo, vm_names: &HashMap<&str, &str>, cluster: &str) -> DrsRule {
    let kind = match info.kind {
        RuleType::AntiAffinity => RuleKind::AntiAffinity,
        RuleType::Affinity => RuleKind::Affinity,
        RuleType::Other(_) => RuleKind::Other,
    };
    // A rule's VMs are a set; sorted, observations compare equal whatever order vCenter keeps.
    let mut members: Vec<(&str, &str)> = info
        .vms
        .iter()
        .filter_map(|vm| {
            let name = vm_names.get(vm.value.as_str());
            if name.is_none() {
                tracing::warn!(cluster, rule = %info.name, vm = %vm, "rule names an unknown VM");
            }
            name.map(|name| (*name, vm.value.as_str()))
        })
        .collect();
    members.sort();
    DrsRule {
        name: info.name.clone(),
        key: info.key,
        kind,
        // vim25 defaults: a rule without `enabled` is disabled, without `mandatory` optional.
        enabled: info.enabled.unwrap_or(false),
        mandatory: info.mandatory.unwrap_or(false),
        user_created: info.user_created.unwrap_or(true),
        uuid: info.rule_uuid.clone(),
        vms: members.iter().map(|(name, _)| name.to_string()).collect(),
        vm_ids: members.iter().map(|(_, id)| id.to_string()).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::{HaConfig, HostGroup, RestartPriority, VmGroup, VmHostRule};
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
            id: Some("domain-c8".to_string()),
            datacenter: "dc-east".to_string(),
            datacenter_id: Some("datacenter-3".to_string()),
            drs: Some(DrsConfig {
                enabled: true,
                default_vm_behavior: DrsBehavior::PartiallyAutomated,
            }),
            // `<dasConfig><enabled>true</enabled></dasConfig>`: the rest at vSphere's defaults.
            ha: Some(HaConfig {
                enabled: true,
                admission_control: None,
                restart_priority: RestartPriority::Medium,
                respect_vm_anti_affinity_rules: None,
            }),
            hosts: vec![
                Host {
                    name: "esxi-01.example.com".to_string(),
                    id: Some("host-11".to_string()),
                    connection_state: ConnectionState::Connected,
                    in_maintenance_mode: MaintenanceMode::Off,
                    vsan_fault_domain: None,
                },
                Host {
                    name: "esxi-02.example.com".to_string(),
                    id: Some("host-12".to_string()),
                    connection_state: ConnectionState::NotResponding,
                    in_maintenance_mode: MaintenanceMode::On,
                    vsan_fault_domain: None,
                },
            ],
            vms: vec![
                Vm {
                    name: "worker-a".to_string(),
                    id: Some("vm-101".to_string()),
                    uuid: "4211b599-1c8d-6f36-a2a0-5a3b3b1c9e01".to_string(),
                    host: "esxi-01.example.com".to_string(),
                    power_state: PowerState::PoweredOn,
                    drs_behavior: Some(DrsBehavior::Disabled),
                },
                Vm {
                    name: "worker-b".to_string(),
                    id: Some("vm-102".to_string()),
                    uuid: "4211b599-1c8d-6f36-a2a0-5a3b3b1c9e02".to_string(),
                    host: "esxi-02.example.com".to_string(),
                    power_state: PowerState::PoweredOff,
                    drs_behavior: Some(DrsBehavior::Manual),
                },
            ],
            rules: vec![
                DrsRule {
                    name: "vsphere-descheduler:prod:shop:Deployment/web".to_string(),
                    key: Some(5),
                    kind: RuleKind::AntiAffinity,
                    enabled: true,
                    mandatory: false,
                    user_created: true,
                    uuid: Some("52c6b2c8-9d5e-5b1c-2f7a-0d1e9b4c3a21".to_string()),
                    vms: vec!["worker-a".to_string(), "worker-b".to_string()],
                    vm_ids: vec!["vm-101".to_string(), "vm-102".to_string()],
                },
                DrsRule {
                    name: "vCLS (System Managed)".to_string(),
                    key: Some(6),
                    kind: RuleKind::Other,
                    enabled: true,
                    mandatory: true,
                    user_created: false,
                    uuid: Some("52aa".to_string()),
                    vms: vec![],
                    vm_ids: vec![],
                },
                DrsRule {
                    name: "db before app".to_string(),
                    key: Some(7),
                    kind: RuleKind::Other,
                    enabled: true,
                    mandatory: false,
                    user_created: true,
                    uuid: None,
                    vms: vec![],
                    vm_ids: vec![],
                },
            ],
            host_groups: Vec::new(),
            vm_groups: vec![VmGroup {
                name: "app".to_string(),
                vms: vec!["worker-a".to_string()],
                vm_ids: vec!["vm-101".to_string()],
            }],
            vm_host_rules: vec![VmHostRule {
                name: "vCLS (System Managed)".to_string(),
                key: Some(6),
                enabled: true,
                mandatory: true,
                vm_group: "vCLS".to_string(),
                affine_host_group: None,
                anti_affine_host_group: Some("none".to_string()),
            }],
        }
    }

    #[test]
    fn paged_objects_make_one_inventory_without_templates_orphans_or_standalone_hosts() {
        let inventory = build(&paged_objects(), &[], &[]).expect("complete objects");
        assert_eq!(
            inventory,
            Inventory {
                clusters: vec![expected_paged_cluster()]
            }
        );
    }

    #[test]
    fn filters_select_datacenters_and_clusters_by_name() {
        let objects = paged_objects();
        let count = |datacenters: &[&str], clusters: &[&str]| {
            let strings = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
            build(&objects, &strings(datacenters), &strings(clusters))
                .expect("objects")
                .clusters
                .len()
        };
        assert_eq!(count(&["dc-east"], &[]), 1);
        assert_eq!(count(&["dc-west"], &[]), 0);
        assert_eq!(count(&[], &["prod & test"]), 1);
        assert_eq!(count(&[], &["prod"]), 0);
        assert_eq!(count(&[], &["dc-east/prod & test"]), 1);
        assert_eq!(count(&[], &["dc-west/prod & test"]), 0);
    }

    #[test]
    fn the_vcsim_capture_gives_hosts_states_and_rules() {
        let response = fixture_response("retrieve-properties-vcsim.xml");
        let objects = retrieve_result(&response).expect("objects").objects;
        let inventory = build(&objects, &[], &[]).expect("complete objects");
        let [cluster] = inventory.clusters.as_slice() else {
            panic!("one cluster");
        };
        assert_eq!(cluster.name, "wcp-cluster-41");
        assert_eq!(cluster.datacenter, "go-lab");
        let states: Vec<(&str, &ConnectionState, MaintenanceMode)> = cluster
            .hosts
            .iter()
            .map(|h| (h.name.as_str(), &h.connection_state, h.in_maintenance_mode))
            .collect();
        assert_eq!(
            states,
            [
                ("esxi-41", &ConnectionState::Connected, MaintenanceMode::Off),
                (
                    "esxi-42",
                    &ConnectionState::NotResponding,
                    MaintenanceMode::Off
                ),
                ("esxi-43", &ConnectionState::Connected, MaintenanceMode::On)
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
        vm.missing
            .push(("name".to_string(), Fault::new("NoPermission", "")));
        let error = build(&objects, &[], &[]).expect_err("name is required");
        assert_eq!(
            error.to_string(),
            "VirtualMachine:vm-101 has no readable name"
        );
        assert_eq!(error.fault().map(|f| f.name.as_str()), None);
        let source = std::error::Error::source(&error).expect("the fault is the cause");
        assert_eq!(source.to_string(), "NoPermission");
    }

    fn stretched_cluster() -> Cluster {
        let response = fixture_response("retrieve-properties-stretched.xml");
        let objects = retrieve_result(&response).expect("objects").objects;
        let inventory = build(&objects, &[], &[]).expect("complete objects");
        let [cluster] = <[Cluster; 1]>::try_from(inventory.clusters).expect("one cluster");
        cluster
    }

    fn strings(values: &[&str]) -> Vec<String> {
        values.iter().map(|v| v.to_string()).collect()
    }

    #[test]
    fn host_groups_name_their_hosts_sorted_and_leave_out_hosts_not_observed() {
        let cluster = stretched_cluster();
        let group = |name: &str, hosts: &[&str], ids: &[&str]| HostGroup {
            name: name.to_string(),
            hosts: strings(hosts),
            host_ids: strings(ids),
        };
        assert_eq!(
            cluster.host_groups,
            [
                group("empty hosts", &[], &[]),
                group(
                    "site-a-hosts",
                    &["esxi-a1.example.com", "esxi-a2.example.com"],
                    &["host-21", "host-22"]
                ),
                group(
                    "site-b-hosts",
                    &["esxi-b1.example.com", "esxi-b2.example.com"],
                    &["host-31", "host-32"]
                ),
            ]
        );
    }

    #[test]
    fn vm_groups_name_their_vms_sorted() {
        let cluster = stretched_cluster();
        let group = |name: &str, vms: &[&str], ids: &[&str]| VmGroup {
            name: name.to_string(),
            vms: strings(vms),
            vm_ids: strings(ids),
        };
        assert_eq!(
            cluster.vm_groups,
            [
                group(
                    "site-a-vms",
                    &["worker-a", "worker-b"],
                    &["vm-201", "vm-202"]
                ),
                group("site-b-vms", &["worker-c"], &["vm-203"]),
            ]
        );
    }

    #[test]
    fn vm_host_rules_are_listed_by_key_with_their_groups_and_stay_among_the_rules() {
        let cluster = stretched_cluster();
        let rule = |key: i32, name: &str, enabled: bool, mandatory: bool| VmHostRule {
            name: name.to_string(),
            key: Some(key),
            enabled,
            mandatory,
            vm_group: "site-a-vms".to_string(),
            affine_host_group: None,
            anti_affine_host_group: None,
        };
        let affine = |rule: VmHostRule, hosts: &str| VmHostRule {
            affine_host_group: Some(hosts.to_string()),
            ..rule
        };
        assert_eq!(
            cluster.vm_host_rules,
            [
                affine(
                    rule(11, "site-a-vms-on-site-a", true, false),
                    "site-a-hosts"
                ),
                VmHostRule {
                    vm_group: "site-b-vms".to_string(),
                    ..affine(
                        rule(12, "site-b-vms-on-site-b", true, false),
                        "site-b-hosts"
                    )
                },
                // Neither `mandatory` nor `enabled` sent: the API's defaults, off and "should".
                affine(rule(13, "old site pin", false, false), "site-b-hosts"),
                VmHostRule {
                    anti_affine_host_group: Some("site-b-hosts".to_string()),
                    ..rule(14, "not on site b", true, true)
                },
            ]
        );
        let kinds: Vec<(&str, RuleKind)> = cluster
            .rules
            .iter()
            .map(|r| (r.name.as_str(), r.kind))
            .collect();
        assert_eq!(
            kinds,
            [
                ("site-a-vms-on-site-a", RuleKind::Other),
                ("site-b-vms-on-site-b", RuleKind::Other),
                ("old site pin", RuleKind::Other),
                ("not on site b", RuleKind::Other),
                ("workers apart", RuleKind::AntiAffinity),
            ]
        );
    }

    #[test]
    fn a_host_has_a_fault_domain_only_where_vsan_is_on_and_the_default_one_is_empty() {
        let cluster = stretched_cluster();
        let domains: Vec<(&str, Option<&str>)> = cluster
            .hosts
            .iter()
            .map(|h| (h.name.as_str(), h.vsan_fault_domain.as_deref()))
            .collect();
        assert_eq!(
            domains,
            [
                ("esxi-a1.example.com", Some("site-a")),
                ("esxi-a2.example.com", Some("site-a")),
                ("esxi-b1.example.com", Some("site-b")),
                ("esxi-b2.example.com", Some("")),
                // vSAN off, though the host names an empty fault domain.
                ("esxi-c1.example.com", None),
                // The vSAN paths unreadable: not observed, not an error.
                ("esxi-c2.example.com", None),
            ]
        );
    }

    #[test]
    fn vsan_on_without_a_fault_domain_name_is_the_default_domain() {
        // vcsim leaves an empty string out of `propSet`, where vCenter sends it empty.
        let response = fixture_response("retrieve-properties-stretched.xml");
        let mut objects = retrieve_result(&response).expect("objects").objects;
        let host = objects
            .iter_mut()
            .find(|o| o.obj.value == "host-32")
            .expect("esxi-b2");
        host.properties
            .retain(|(name, _)| name != VSAN_FAULT_DOMAIN);
        let inventory = build(&objects, &[], &[]).expect("complete objects");
        let domain = inventory.clusters[0]
            .hosts
            .iter()
            .find(|h| h.name == "esxi-b2.example.com")
            .map(|h| h.vsan_fault_domain.clone());
        assert_eq!(domain, Some(Some(String::new())));
    }
}
