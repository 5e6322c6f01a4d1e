//! Node ↔ VM ↔ host mapping and the label refresh it implies.
//!
//! A node's VM is found by, in order: `spec.providerID` (`vsphere://<BIOS uuid>`), the node's
//! `systemUUID` as is or with its first three fields byte-swapped (how Linux reads SMBIOS 2.7),
//! then the node name. A node that matches no VM may be an ESXi host itself (a Supervisor
//! cluster's workers, which run vSphere Pods on the host): its name or an InternalIP is the
//! host's name in vCenter. A node that matches nothing, or several, is unmapped: its labels are
//! left alone and it is never a place to move a pod to.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::inventory::{Cluster, Host, Inventory, Vm};
use crate::policy::{CAPV_HOST_LABEL, LabelKeys};
use crate::snapshot::{Labels, Node};

pub use crate::plan::model::mapped_by::MappedBy;
use crate::plan::model::warning::{Candidates, Warning};

/// Where a node lives: on a VM, or as an ESXi host.
#[derive(Clone, Debug, PartialEq)]
pub struct Placement<'a> {
    pub cluster: &'a Cluster,
    /// The cluster's position in the inventory: its identity, where names may repeat.
    pub cluster_index: usize,
    /// The node's VM; `None` for a node that is an ESXi host itself, which no DRS rule names.
    pub vm: Option<&'a Vm>,
    /// The ESXi host's name: the one the VM runs on, or the host node's own.
    pub host_name: &'a str,
    /// `None` when the VM's host is not in the inventory (filtered out, or mid-move).
    pub host: Option<&'a Host>,
    pub mapped_by: MappedBy,
}

/// A mapped node as the report lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MappedNode {
    pub node: String,
    pub mapped_by: MappedBy,
    /// As reports name clusters (`datacenter/name` where names repeat).
    pub cluster: String,
    /// Absent for a node that is an ESXi host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vm: Option<String>,
    pub host: String,
}

/// The mapping of every node, and the problems found on the way.
#[derive(Debug, Default)]
pub struct Mapping<'a> {
    /// Indexed like the snapshot's nodes.
    pub placements: Vec<Option<Placement<'a>>>,
    /// How each mapped node was found, in node order, as the report lists it.
    pub mapped: Vec<MappedNode>,
    pub unmapped: Vec<String>,
    pub warnings: Vec<Warning>,
}

/// One label to set or remove on one node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LabelChange {
    pub node: String,
    pub key: String,
    pub old: Option<String>,
    pub new: Option<String>,
}

/// One node's label write, complete: every key of ours that should be on the node afterwards
/// (server-side apply removes a key of ours left out, so unchanged keys are restated) and the
/// keys of ours to remove.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelApply {
    pub node: String,
    /// The node's uid when listed: the write is refused for a node deleted or recreated since.
    /// Snapshot files may lack it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// Our keys present after the write, with their values.
    pub set: BTreeMap<String, String>,
    /// Our keys absent after the write.
    #[serde(skip_serializing_if = "BTreeSet::is_empty")]
    pub remove: BTreeSet<String>,
}

/// The write that carries out one node's label changes. An owned key the changes do not touch
/// keeps its current value; one that ends up without a value is removed only if we applied it
/// before or the changes remove it: any other needs no write at all. A former key the changes
/// remove ([`former_keys`]) is removed too.
pub fn apply<'k>(
    node: &Node,
    owned: impl IntoIterator<Item = &'k str>,
    changes: &[LabelChange],
) -> LabelApply {
    let mut set = BTreeMap::new();
    let mut remove: BTreeSet<String> = changes
        .iter()
        .filter(|change| change.new.is_none())
        .map(|change| change.key.clone())
        .collect();
    for key in owned {
        let change = changes.iter().find(|change| change.key == key);
        let value = match change {
            Some(change) => change.new.as_deref(),
            None => node.labels.get(key),
        };
        match value {
            Some(value) => {
                set.insert(key.to_string(), value.to_string());
            }
            None if change.is_some() || node.applied_label_keys.contains(key) => {
                remove.insert(key.to_string());
            }
            None => {}
        }
    }
    LabelApply {
        node: node.name.clone(),
        uid: node.uid.clone(),
        set,
        remove,
    }
}

/// What a node may be matched with.
#[derive(Clone, Copy, Debug)]
enum Found<'a> {
    Vm(usize, &'a Vm),
    Host(usize, &'a Host),
}

/// The inventory indexed for matching nodes.
struct Index<'a> {
    by_uuid: BTreeMap<String, Vec<Found<'a>>>,
    by_vm_name: BTreeMap<&'a str, Vec<Found<'a>>>,
    /// ESXi host names, lower-cased: DNS names compare without case.
    by_host_name: BTreeMap<String, Vec<Found<'a>>>,
}

impl<'a> Index<'a> {
    fn new(inventory: &'a Inventory) -> Index<'a> {
        let mut index = Index {
            by_uuid: BTreeMap::new(),
            by_vm_name: BTreeMap::new(),
            by_host_name: BTreeMap::new(),
        };
        for (position, cluster) in inventory.clusters.iter().enumerate() {
            for vm in &cluster.vms {
                let found = Found::Vm(position, vm);
                if !vm.uuid.is_empty() {
                    let uuid = vm.uuid.to_ascii_lowercase();
                    index.by_uuid.entry(uuid).or_default().push(found);
                }
                index.by_vm_name.entry(&vm.name).or_default().push(found);
            }
            for host in &cluster.hosts {
                let name = host.name.to_ascii_lowercase();
                let found = Found::Host(position, host);
                index.by_host_name.entry(name).or_default().push(found);
            }
        }
        index
    }

    /// The first way that matches the node, and what it matches.
    fn candidates(&self, node: &Node) -> Option<(MappedBy, Vec<Found<'a>>)> {
        let uuid = |key: &str| self.by_uuid.get(key).cloned();
        let provider = node
            .provider_id
            .as_deref()
            .and_then(|id| id.strip_prefix("vsphere://"))
            .map(|uuid| uuid.trim_matches('/').to_ascii_lowercase());
        if let Some(found) = provider.and_then(|id| uuid(&id)) {
            return Some((MappedBy::ProviderId, found));
        }
        if let Some(system_uuid) = &node.system_uuid {
            let as_is = system_uuid.to_ascii_lowercase();
            if let Some(found) = uuid(&as_is) {
                return Some((MappedBy::SystemUuid, found));
            }
            if let Some(found) = swap_uuid(&as_is).and_then(|swapped| uuid(&swapped)) {
                return Some((MappedBy::SystemUuidSwapped, found));
            }
        }
        if let Some(found) = self.by_vm_name.get(node.name.as_str()) {
            return Some((MappedBy::VmName, found.clone()));
        }
        self.host_of(node).map(|found| (MappedBy::EsxiHost, found))
    }

    /// The ESXi hosts named like the node or one of its InternalIPs (each host once).
    fn host_of(&self, node: &Node) -> Option<Vec<Found<'a>>> {
        let mut found: Vec<Found<'a>> = Vec::new();
        let names = std::iter::once(&node.name).chain(&node.internal_ips);
        for name in names {
            for candidate in self
                .by_host_name
                .get(&name.to_ascii_lowercase())
                .into_iter()
                .flatten()
            {
                let Found::Host(_, host) = candidate else {
                    continue;
                };
                let known = found
                    .iter()
                    .any(|f| matches!(f, Found::Host(_, h) if std::ptr::eq(*h, *host)));
                if !known {
                    found.push(*candidate);
                }
            }
        }
        (!found.is_empty()).then_some(found)
    }
}

impl Mapping<'_> {
    /// With source `node-label` the inventory's VMs are the labelled nodes themselves, matched by
    /// name: say that the label placed them.
    pub fn placed_by_node_label(&mut self) {
        for placement in self.placements.iter_mut().flatten() {
            if placement.mapped_by == MappedBy::VmName {
                placement.mapped_by = MappedBy::NodeLabel;
            }
        }
        for mapped in &mut self.mapped {
            if mapped.mapped_by == MappedBy::VmName {
                mapped.mapped_by = MappedBy::NodeLabel;
            }
        }
    }
}

/// Map every node to its VM, or to the ESXi host it is.
pub fn map_nodes<'a>(nodes: &[Node], inventory: &'a Inventory) -> Mapping<'a> {
    let index = Index::new(inventory);
    let cluster_names = inventory.cluster_names();
    let mut mapping = Mapping::default();
    for node in nodes {
        let placement = match index.candidates(node) {
            None => {
                mapping.unmapped.push(node.name.clone());
                None
            }
            Some((how, found)) if found.len() > 1 => {
                let names: Vec<String> = found
                    .iter()
                    .map(|found| found_name(&cluster_names, *found))
                    .collect();
                mapping.warnings.push(Warning::AmbiguousNode {
                    node: node.name.clone(),
                    candidates: if how == MappedBy::EsxiHost {
                        Candidates::EsxiHosts
                    } else {
                        Candidates::Vms
                    },
                    by: how,
                    matches: names,
                });
                mapping.unmapped.push(node.name.clone());
                None
            }
            Some((how, found)) => Some(placement(inventory, found[0], how)),
        };
        if let Some(placement) = &placement {
            mapping
                .mapped
                .push(mapped_node(node, placement, &cluster_names));
        }
        if let Some(placement) = &placement
            && placement.host.is_none()
        {
            mapping.warnings.push(Warning::HostOutsideCluster {
                vm: placement.vm.map_or("", |vm| vm.name.as_str()).to_string(),
                node: node.name.clone(),
                host: placement.host_name.to_string(),
                cluster: cluster_names[placement.cluster_index].to_string(),
            });
        }
        mapping.placements.push(placement);
    }
    mapping
}

fn placement<'a>(inventory: &'a Inventory, found: Found<'a>, how: MappedBy) -> Placement<'a> {
    match found {
        Found::Vm(cluster_index, vm) => {
            let cluster = &inventory.clusters[cluster_index];
            Placement {
                cluster,
                cluster_index,
                vm: Some(vm),
                host_name: &vm.host,
                host: cluster.hosts.iter().find(|h| h.name == vm.host),
                mapped_by: how,
            }
        }
        Found::Host(cluster_index, host) => Placement {
            cluster: &inventory.clusters[cluster_index],
            cluster_index,
            vm: None,
            host_name: &host.name,
            host: Some(host),
            mapped_by: how,
        },
    }
}

fn found_name(cluster_names: &[String], found: Found<'_>) -> String {
    match found {
        Found::Vm(cluster, vm) => vm_name(&cluster_names[cluster], vm),
        Found::Host(cluster, host) => format!("{}/{}", cluster_names[cluster], host.name),
    }
}

/// How the report lists a mapped node.
fn mapped_node(node: &Node, placement: &Placement, cluster_names: &[String]) -> MappedNode {
    MappedNode {
        node: node.name.clone(),
        mapped_by: placement.mapped_by,
        cluster: cluster_names[placement.cluster_index].clone(),
        vm: placement.vm.map(|vm| vm.name.clone()),
        host: placement.host_name.to_string(),
    }
}

/// `cluster/vm`, with the VM's id where the inventory has it (VM names repeat across folders).
fn vm_name(cluster: &str, vm: &Vm) -> String {
    match &vm.id {
        Some(id) => format!("{cluster}/{} ({id})", vm.name),
        None => format!("{cluster}/{}", vm.name),
    }
}

/// Swap the byte order of the first three UUID fields (SMBIOS ≥ 2.6 wire format); its own
/// inverse. `None` for text that is not a UUID.
pub fn swap_uuid(uuid: &str) -> Option<String> {
    let fields: Vec<&str> = uuid.split('-').collect();
    let lengths: Vec<usize> = fields.iter().map(|field| field.len()).collect();
    if lengths != [8, 4, 4, 4, 12] || !uuid.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
        return None;
    }
    let swap = |field: &str| -> Option<String> {
        let bytes: Vec<&str> = (0..field.len())
            .step_by(2)
            .map(|i| field.get(i..i + 2))
            .collect::<Option<_>>()?;
        Some(bytes.into_iter().rev().collect())
    };
    Some(format!(
        "{}-{}-{}-{}-{}",
        swap(fields[0])?,
        swap(fields[1])?,
        swap(fields[2])?,
        fields[3],
        fields[4]
    ))
}

/// The labels a mapped node should carry, key → value (`None`: the key must be absent).
pub fn desired_labels(keys: &LabelKeys, placement: &Placement) -> BTreeMap<String, Option<String>> {
    let mut desired = BTreeMap::new();
    if !placement.host_name.is_empty() {
        desired.insert(keys.host.clone(), Some(label_value(placement.host_name)));
    }
    if let Some(key) = &keys.cluster {
        desired.insert(key.clone(), Some(label_value(&placement.cluster.name)));
    }
    if let Some(key) = &keys.datacenter
        && !placement.cluster.datacenter.is_empty()
    {
        desired.insert(
            key.clone(),
            Some(label_value(&placement.cluster.datacenter)),
        );
    }
    desired
}

/// A warning when the node's Cluster API host label (which CAPV refreshes only on its own resync;
/// the scheduler places by it as it is, and so does the plan) names another host than the one it is on
/// now (after a DRS move, until CAPV resyncs).
pub fn stale_capv_label(node: &Node, placement: &Placement) -> Option<Warning> {
    let value = node.labels.get(CAPV_HOST_LABEL)?;
    let host = placement.host_name;
    if host.is_empty() || value == host || *value == label_value(host) {
        return None;
    }
    Some(Warning::StaleCapvLabel {
        node: node.name.clone(),
        label: value.to_string(),
        host: host.to_string(),
    })
}

/// The removal of each label an earlier policy had the runs write: a key our field manager
/// applied to `node` that the policy no longer names (`owned`), while the node still carries
/// it. Every node that carries one gets a write, not only those relabelled for another reason,
/// so that a dropped or renamed key is gone from the cluster after one run.
pub fn former_keys<'k>(node: &Node, owned: impl IntoIterator<Item = &'k str>) -> Vec<LabelChange> {
    let owned: BTreeSet<&str> = owned.into_iter().collect();
    node.applied_label_keys
        .iter()
        .filter(|key| !owned.contains(key.as_str()))
        .filter_map(|key| {
            Some(LabelChange {
                node: node.name.clone(),
                key: key.clone(),
                old: Some(node.labels.get(key)?.to_string()),
                new: None,
            })
        })
        .collect()
}

/// Label changes that bring `labels` to `desired` for the keys this tool owns: set, or removed
/// where the value desired is `None`. Owned keys not desired at all (e.g. a VM whose host is
/// unknown) are left as they are rather than removed.
pub fn changes(
    node: &str,
    labels: &Labels,
    desired: &BTreeMap<String, Option<String>>,
) -> Vec<LabelChange> {
    desired
        .iter()
        .filter(|(key, value)| labels.get(key) != value.as_deref())
        .map(|(key, value)| LabelChange {
            node: node.to_string(),
            key: key.clone(),
            old: labels.get(key).map(str::to_string),
            new: value.clone(),
        })
        .collect()
}

/// A valid label value for any vCenter object name, distinct for distinct names.
///
/// Names that already are valid values (FQDNs, IPv4 addresses) are used as they are. Others
/// (IPv6 addresses, names over 63 characters, spaces) have invalid characters replaced, are
/// cut, and end in a hash of the full name so two names never collapse into one value.
pub fn label_value(name: &str) -> String {
    if is_valid_label_value(name) {
        return name.to_string();
    }
    let hash = format!("{:08x}", fnv1a32(name.as_bytes()));
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let mut prefix: String = cleaned.chars().take(63 - hash.len() - 1).collect();
    while prefix.ends_with(|c: char| !c.is_ascii_alphanumeric()) {
        prefix.pop();
    }
    let prefix = prefix.trim_start_matches(|c: char| !c.is_ascii_alphanumeric());
    if prefix.is_empty() {
        hash
    } else {
        format!("{prefix}-{hash}")
    }
}

/// Kubernetes' label value syntax: at most 63 characters, alphanumerics at both ends, and
/// `-`, `_`, `.` inside.
pub fn is_valid_label_value(value: &str) -> bool {
    value.len() <= 63
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && value
            .chars()
            .next()
            .is_none_or(|c| c.is_ascii_alphanumeric())
        && value
            .chars()
            .last()
            .is_none_or(|c| c.is_ascii_alphanumeric())
}

/// FNV-1a: a stable, dependency-free hash; only distinctness matters here, not secrecy.
pub fn fnv1a32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5, |hash, byte| {
        (hash ^ u32::from(*byte)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::testing::*;

    #[test]
    fn nodes_map_by_provider_id_then_system_uuid_either_way_then_name() {
        let snapshot = Lab::new()
            .host("esxi-1")
            .node("by-provider", "esxi-1")
            .node("by-uuid", "esxi-1")
            .node("by-swapped-uuid", "esxi-1")
            .node("by-name", "esxi-1")
            .node("nowhere", "esxi-1")
            .with(|s| {
                let vms = s.inventory.as_ref().expect("inventory").clusters[0]
                    .vms
                    .clone();
                let uuid = |name: &str| {
                    vms.iter()
                        .find(|vm| vm.name == name)
                        .expect("vm")
                        .uuid
                        .clone()
                };
                for node in &mut s.nodes {
                    match node.name.as_str() {
                        "by-uuid" => {
                            node.provider_id = None;
                            node.system_uuid = Some(uuid("by-uuid").to_uppercase());
                        }
                        "by-swapped-uuid" => {
                            node.provider_id = None;
                            node.system_uuid = swap_uuid(&uuid("by-swapped-uuid"));
                        }
                        "by-name" => node.provider_id = None,
                        "nowhere" => {
                            node.provider_id =
                                Some("vsphere://00000000-0000-0000-0000-000000000000".into())
                        }
                        _ => {}
                    }
                }
                let cluster = &mut s.inventory.as_mut().expect("inventory").clusters[0];
                cluster.vms.retain(|vm| vm.name != "nowhere");
            })
            .build();
        let mapping = map_nodes(
            &snapshot.nodes,
            snapshot.inventory.as_ref().expect("inventory"),
        );
        let mapped: Vec<Option<&str>> = mapping
            .placements
            .iter()
            .map(|p| p.as_ref().and_then(|p| p.vm).map(|vm| vm.name.as_str()))
            .collect();
        // Nodes are sorted by name.
        assert_eq!(
            mapped,
            [
                Some("by-name"),
                Some("by-provider"),
                Some("by-swapped-uuid"),
                Some("by-uuid"),
                None
            ]
        );
        assert_eq!(mapping.unmapped, ["nowhere"]);
    }

    #[test]
    fn a_node_matching_two_vms_is_left_unmapped() {
        let snapshot = Lab::new()
            .host("esxi-1")
            .node("w1", "esxi-1")
            .node("w2", "esxi-1")
            .with(|s| {
                let cluster = &mut s.inventory.as_mut().expect("inventory").clusters[0];
                cluster.vms[1].uuid = cluster.vms[0].uuid.clone();
            })
            .build();
        let mapping = map_nodes(
            &snapshot.nodes,
            snapshot.inventory.as_ref().expect("inventory"),
        );
        // w1's uuid is now shared by two VMs; w2's own uuid is gone, so it maps by name.
        assert_eq!(mapping.unmapped, ["w1"]);
        assert!(
            matches!(
                &mapping.warnings[0],
                Warning::AmbiguousNode { node, candidates: Candidates::Vms, .. } if node == "w1"
            ),
            "{:?}",
            mapping.warnings
        );
    }

    /// Three ESXi hosts, the third known to vCenter by its address, and nodes for each host
    /// (Supervisor workers) beside one VM node.
    fn supervisor() -> crate::snapshot::Snapshot {
        Lab::new()
            .host("esxi-41.example.com")
            .host("esxi-42.example.com")
            .host("10.0.0.43")
            .node("w1", "esxi-42.example.com")
            .with(|s| {
                for (name, ip) in [
                    ("ESXi-41.example.com", "10.0.0.41"),
                    ("esxi-42.example.com", "10.0.0.42"),
                    ("esxi-43.example.com", "10.0.0.43"),
                ] {
                    let mut node = s.nodes[0].clone();
                    node.name = name.to_string();
                    node.provider_id = None;
                    node.internal_ips = vec![ip.to_string()];
                    s.nodes.push(node);
                }
                s.nodes.sort_by(|a, b| a.name.cmp(&b.name));
            })
            .build()
    }

    #[test]
    fn a_node_that_is_an_esxi_host_maps_to_it_by_name_or_internal_ip() {
        let snapshot = supervisor();
        let inventory = snapshot.inventory.as_ref().expect("inventory");
        let mapping = map_nodes(&snapshot.nodes, inventory);
        let mapped: Vec<(&str, Option<&str>, &str, MappedBy)> = snapshot
            .nodes
            .iter()
            .zip(&mapping.placements)
            .map(|(node, p)| {
                let p = p.as_ref().expect("mapped");
                (
                    node.name.as_str(),
                    p.vm.map(|vm| vm.name.as_str()),
                    p.host_name,
                    p.mapped_by,
                )
            })
            .collect();
        assert_eq!(
            mapped,
            [
                // Host names compare without case, as DNS names do.
                (
                    "ESXi-41.example.com",
                    None,
                    "esxi-41.example.com",
                    MappedBy::EsxiHost
                ),
                (
                    "esxi-42.example.com",
                    None,
                    "esxi-42.example.com",
                    MappedBy::EsxiHost
                ),
                ("esxi-43.example.com", None, "10.0.0.43", MappedBy::EsxiHost),
                (
                    "w1",
                    Some("w1"),
                    "esxi-42.example.com",
                    MappedBy::ProviderId
                ),
            ]
        );
        assert!(mapping.warnings.is_empty(), "{:?}", mapping.warnings);
        let keys = LabelKeys::default();
        let placement = mapping.placements[2].as_ref().expect("mapped");
        assert_eq!(
            desired_labels(&keys, placement)
                .get(&keys.host)
                .and_then(Option::as_deref),
            Some("10.0.0.43"),
            "a host node is labelled with its own host"
        );
    }

    #[test]
    fn a_node_naming_one_host_with_the_address_of_another_is_left_unmapped() {
        let mut snapshot = supervisor();
        let node = snapshot
            .nodes
            .iter_mut()
            .find(|n| n.name == "esxi-42.example.com")
            .expect("node");
        node.internal_ips = vec!["10.0.0.43".to_string()];
        let mapping = map_nodes(
            &snapshot.nodes,
            snapshot.inventory.as_ref().expect("inventory"),
        );
        assert_eq!(mapping.unmapped, ["esxi-42.example.com"]);
        assert_eq!(
            mapping.warnings,
            [Warning::AmbiguousNode {
                node: "esxi-42.example.com".to_string(),
                candidates: Candidates::EsxiHosts,
                by: MappedBy::EsxiHost,
                matches: vec![
                    "c1/esxi-42.example.com".to_string(),
                    "c1/10.0.0.43".to_string()
                ],
            }]
        );
    }

    #[test]
    fn host_nodes_take_pods_but_are_in_no_drs_rule() {
        let snapshot = Lab::new()
            .host("esxi-1")
            .host("esxi-2")
            .host("esxi-3")
            .host_node("esxi-1")
            .host_node("esxi-2")
            .host_node("esxi-3")
            .pod(web("web-1", "esxi-1", 30).anti_affinity(HOST))
            .pod(web("web-2", "esxi-1", 20).anti_affinity(HOST))
            .build();
        let plan = crate::plan::plan(&snapshot, &policy(vec![anti_affinity()]));
        assert_eq!(evicted(&plan), ["shop/web-2"]);
        assert!(plan.drs_rules.is_empty(), "{:?}", plan.drs_rules);
        assert!(
            plan.mapped_nodes
                .iter()
                .all(|m| m.mapped_by == MappedBy::EsxiHost && m.vm.is_none())
        );
    }

    #[test]
    fn a_stale_cluster_api_host_label_is_warned_about_and_planned_on_as_it_is() {
        use crate::policy::CAPV_HOST_LABEL;
        // w2's VM moved to esxi-1, next to w1; CAPV's label still says esxi-2.
        let snapshot = Lab::new()
            .host("esxi-1")
            .host("esxi-2")
            .node("w1", "esxi-1")
            .node("w2", "esxi-1")
            .label("w1", CAPV_HOST_LABEL, "esxi-1")
            .label("w2", CAPV_HOST_LABEL, "esxi-2")
            .pod(web("web-1", "w1", 30).anti_affinity(CAPV_HOST_LABEL))
            .pod(web("web-2", "w2", 20).anti_affinity(CAPV_HOST_LABEL))
            .build();
        let plan = crate::plan::plan(&snapshot, &policy(vec![anti_affinity()]));
        assert!(
            plan.warnings.contains(&Warning::StaleCapvLabel {
                node: "w2".to_string(),
                label: "esxi-2".to_string(),
                host: "esxi-1".to_string(),
            }),
            "{:?}",
            plan.warnings
        );
        // By the label the scheduler sees, web-1 and web-2 are apart: nothing to evict.
        assert!(plan.evictions.is_empty(), "{:?}", plan.evictions);
        assert!(
            plan.label_changes.iter().all(|c| c.key != CAPV_HOST_LABEL),
            "Cluster API's label is never written"
        );
    }

    #[test]
    fn swapped_uuid_reverses_the_first_three_fields() {
        assert_eq!(
            swap_uuid("6a65e237-ae44-c428-95b5-049031466616").as_deref(),
            Some("37e2656a-44ae-28c4-95b5-049031466616")
        );
        let swapped = swap_uuid("56492e42-22ad-3911-6d72-59cc8f26bc90").expect("a uuid");
        assert_eq!(
            swap_uuid(&swapped).as_deref(),
            Some("56492e42-22ad-3911-6d72-59cc8f26bc90")
        );
        assert_eq!(swap_uuid("not-a-uuid"), None);
    }

    #[test]
    fn valid_host_names_are_used_as_they_are() {
        assert_eq!(
            label_value("lab-wcp-esxi-41.go-lab.jp"),
            "lab-wcp-esxi-41.go-lab.jp"
        );
        assert_eq!(label_value("10.0.0.12"), "10.0.0.12");
    }

    #[test]
    fn invalid_or_long_host_names_become_distinct_valid_values() {
        let long_a = format!("{}.example.com", "a".repeat(70));
        let long_b = format!("{}.example.org", "a".repeat(70));
        let ipv6 = "fd00::12";
        for name in [&long_a, &long_b, ipv6, "esxi 01", "-esxi-"] {
            let value = label_value(name);
            assert!(is_valid_label_value(&value), "{name} -> {value}");
            assert!(!value.is_empty());
        }
        assert_ne!(label_value(&long_a), label_value(&long_b));
        assert_ne!(label_value("fd00::12"), label_value("fd00:-12"));
    }

    const CLUSTER: &str = "vsphere-descheduler.io/cluster";
    const DATACENTER: &str = "vsphere-descheduler.io/datacenter";

    fn change(key: &str, old: Option<&str>, new: Option<&str>) -> LabelChange {
        LabelChange {
            node: "w1".to_string(),
            key: key.to_string(),
            old: old.map(str::to_string),
            new: new.map(str::to_string),
        }
    }

    /// `w1`, labelled by an earlier run with host `esxi-2` and cluster `c1`.
    fn labelled_earlier() -> Node {
        let mut node = Lab::new().host("esxi-2").node("w1", "esxi-2").build().nodes[0].clone();
        node.labels.insert(CLUSTER.to_string(), "c1".to_string());
        node.applied_label_keys = [HOST, CLUSTER].map(str::to_string).into();
        node
    }

    #[test]
    fn a_label_apply_restates_our_unchanged_keys_and_sets_the_changed_ones() {
        let node = labelled_earlier();
        let apply = apply(
            &node,
            [HOST, CLUSTER, DATACENTER],
            &[change(HOST, Some("esxi-2"), Some("esxi-1"))],
        );
        assert_eq!(apply.node, "w1");
        assert_eq!(apply.uid.as_deref(), Some("uid-w1"));
        assert_eq!(
            apply.set,
            BTreeMap::from([
                (HOST.to_string(), "esxi-1".to_string()),
                (CLUSTER.to_string(), "c1".to_string()),
            ])
        );
        // Never applied, not on the node, not changed: nothing to write.
        assert!(apply.remove.is_empty(), "{:?}", apply.remove);
    }

    #[test]
    fn a_key_we_applied_earlier_and_no_longer_want_is_removed() {
        let node = labelled_earlier();
        let apply = apply(
            &node,
            [HOST, CLUSTER, DATACENTER],
            &[change(CLUSTER, Some("c1"), None)],
        );
        assert_eq!(
            apply.set,
            BTreeMap::from([(HOST.to_string(), "esxi-2".to_string())])
        );
        assert_eq!(apply.remove, BTreeSet::from([CLUSTER.to_string()]));
    }

    #[test]
    fn a_key_we_applied_that_is_gone_from_the_node_is_removed_and_others_absent_are_not() {
        let mut node = labelled_earlier();
        node.labels.remove(CLUSTER);
        let apply = apply(
            &node,
            [HOST, CLUSTER, DATACENTER],
            &[change(HOST, Some("esxi-2"), Some("esxi-1"))],
        );
        assert_eq!(apply.remove, BTreeSet::from([CLUSTER.to_string()]));
    }

    #[test]
    fn a_node_recorded_without_uid_gets_an_apply_without_one() {
        let mut node = labelled_earlier();
        node.uid = None;
        let apply = apply(
            &node,
            [HOST],
            &[change(HOST, Some("esxi-2"), Some("esxi-1"))],
        );
        assert_eq!(apply.uid, None);
        assert_eq!(
            apply.set,
            BTreeMap::from([(HOST.to_string(), "esxi-1".to_string())])
        );
    }

    #[test]
    fn the_plan_holds_one_apply_per_relabelled_node_and_none_for_the_others() {
        let snapshot = Lab::new()
            .host("esxi-1")
            .host("esxi-2")
            .node("w1", "esxi-1")
            .node("w2", "esxi-1")
            .with(|s| {
                s.nodes[1]
                    .labels
                    .insert(HOST.to_string(), "esxi-2".to_string());
            })
            .build();
        let plan = crate::plan::plan(&snapshot, &policy(vec![]));
        assert_eq!(plan.label_changes.len(), 1);
        assert_eq!(
            plan.label_applies,
            [LabelApply {
                node: "w2".to_string(),
                uid: Some("uid-w2".to_string()),
                set: BTreeMap::from([(HOST.to_string(), "esxi-1".to_string())]),
                remove: BTreeSet::new(),
            }]
        );
    }

    /// The policy used to have the runs write `example.com/rack`: nodes that still carry it from
    /// our applies lose it, relabelled or not; a node where someone else set it keeps it.
    #[test]
    fn a_former_key_is_removed_from_every_node_our_applies_left_it_on() {
        const RACK: &str = "example.com/rack";
        let snapshot = Lab::new()
            .host("esxi-1")
            .node("w1", "esxi-1")
            .node("w2", "esxi-1")
            .node("w3", "esxi-1")
            .with(|s| {
                for node in &mut s.nodes {
                    node.labels.insert(RACK.to_string(), "r7".to_string());
                }
                s.nodes[0].applied_label_keys = [HOST, RACK].map(str::to_string).into();
                s.nodes[1].applied_label_keys = [HOST, RACK].map(str::to_string).into();
                s.nodes[1]
                    .labels
                    .insert(HOST.to_string(), "esxi-9".to_string());
            })
            .build();
        let plan = crate::plan::plan(&snapshot, &policy(vec![]));
        let removal = |node: &str| LabelChange {
            node: node.to_string(),
            key: RACK.to_string(),
            old: Some("r7".to_string()),
            new: None,
        };
        assert_eq!(
            plan.label_changes,
            [
                removal("w1"),
                LabelChange {
                    node: "w2".to_string(),
                    key: HOST.to_string(),
                    old: Some("esxi-9".to_string()),
                    new: Some("esxi-1".to_string()),
                },
                removal("w2"),
            ]
        );
        let applies: Vec<(&str, Vec<&str>, Vec<&str>)> = plan
            .label_applies
            .iter()
            .map(|apply| {
                (
                    apply.node.as_str(),
                    apply.set.keys().map(String::as_str).collect(),
                    apply.remove.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            applies,
            [
                ("w1", vec![HOST], vec![RACK]),
                ("w2", vec![HOST], vec![RACK])
            ],
            "w3's label is someone else's"
        );
    }
}
