//! Node ↔ VM ↔ host mapping and the label refresh it implies.
//!
//! A node's VM is found by, in order: `spec.providerID` (`vsphere://<BIOS uuid>`), the node's
//! `systemUUID` as is or with its first three fields byte-swapped (how Linux reads SMBIOS 2.7),
//! then the node name. A node that matches no VM, or several, is unmapped: its labels are left
//! alone and it is never a place to move a pod to.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::inventory::{Cluster, Host, Inventory, Vm};
use crate::policy::LabelKeys;
use crate::snapshot::{Labels, Node};

/// Where a node's VM lives.
#[derive(Clone, Debug, PartialEq)]
pub struct Placement<'a> {
    pub cluster: &'a Cluster,
    /// The cluster's position in the inventory: its identity, where names may repeat.
    pub cluster_index: usize,
    pub vm: &'a Vm,
    /// `None` when the VM's host is not in the inventory (filtered out, or mid-move).
    pub host: Option<&'a Host>,
}

/// The mapping of every node, and the problems found on the way.
#[derive(Debug, Default)]
pub struct Mapping<'a> {
    /// Indexed like the snapshot's nodes.
    pub placements: Vec<Option<Placement<'a>>>,
    pub unmapped: Vec<String>,
    pub warnings: Vec<String>,
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
/// before or the changes remove it: any other needs no write at all.
pub fn apply<'k>(
    node: &Node,
    owned: impl IntoIterator<Item = &'k str>,
    changes: &[LabelChange],
) -> LabelApply {
    let mut set = BTreeMap::new();
    let mut remove = BTreeSet::new();
    for key in owned {
        let change = changes.iter().find(|change| change.key == key);
        let value = match change {
            Some(change) => change.new.as_ref(),
            None => node.labels.get(key),
        };
        match value {
            Some(value) => {
                set.insert(key.to_string(), value.clone());
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

/// Map every node to its VM.
pub fn map_nodes<'a>(nodes: &[Node], inventory: &'a Inventory) -> Mapping<'a> {
    let mut by_uuid: BTreeMap<String, Vec<(usize, &Vm)>> = BTreeMap::new();
    let mut by_name: BTreeMap<&str, Vec<(usize, &Vm)>> = BTreeMap::new();
    for (index, cluster) in inventory.clusters.iter().enumerate() {
        for vm in &cluster.vms {
            if !vm.uuid.is_empty() {
                by_uuid
                    .entry(vm.uuid.to_ascii_lowercase())
                    .or_default()
                    .push((index, vm));
            }
            by_name
                .entry(vm.name.as_str())
                .or_default()
                .push((index, vm));
        }
    }
    let cluster_names = inventory.cluster_names();
    let mut mapping = Mapping::default();
    for node in nodes {
        let mut candidates: Vec<(&str, &[(usize, &Vm)])> = Vec::new();
        if let Some(uuid) = node
            .provider_id
            .as_deref()
            .and_then(|id| id.strip_prefix("vsphere://"))
        {
            let uuid = uuid.trim_matches('/').to_ascii_lowercase();
            if let Some(found) = by_uuid.get(&uuid) {
                candidates.push(("providerID", found));
            }
        }
        if candidates.is_empty()
            && let Some(system_uuid) = &node.system_uuid
        {
            let as_is = system_uuid.to_ascii_lowercase();
            if let Some(found) = by_uuid.get(&as_is) {
                candidates.push(("systemUUID", found));
            } else if let Some(found) = swap_uuid(&as_is).and_then(|swapped| by_uuid.get(&swapped))
            {
                candidates.push(("systemUUID (byte-swapped)", found));
            }
        }
        if candidates.is_empty()
            && let Some(found) = by_name.get(node.name.as_str())
        {
            candidates.push(("VM name", found));
        }
        let placement = match candidates.first() {
            None => {
                mapping.unmapped.push(node.name.clone());
                None
            }
            Some((how, found)) if found.len() > 1 => {
                let names: Vec<String> = found
                    .iter()
                    .map(|(cluster, vm)| vm_name(&cluster_names[*cluster], vm))
                    .collect();
                mapping.warnings.push(format!(
                    "node {} matches several VMs by {how} ({}): left unmapped",
                    node.name,
                    names.join(", ")
                ));
                mapping.unmapped.push(node.name.clone());
                None
            }
            Some((_, found)) => {
                let (cluster_index, vm) = found[0];
                let cluster = &inventory.clusters[cluster_index];
                let host = cluster.hosts.iter().find(|h| h.name == vm.host);
                if host.is_none() {
                    mapping.warnings.push(format!(
                        "VM {} of node {} runs on host {:?}, which is not in cluster {}",
                        vm.name, node.name, vm.host, cluster_names[cluster_index]
                    ));
                }
                Some(Placement {
                    cluster,
                    cluster_index,
                    vm,
                    host,
                })
            }
        };
        mapping.placements.push(placement);
    }
    mapping
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

/// The labels a mapped node should carry, key → value.
pub fn desired_labels(keys: &LabelKeys, placement: &Placement) -> BTreeMap<String, String> {
    let mut desired = BTreeMap::new();
    if !placement.vm.host.is_empty() {
        desired.insert(keys.host.clone(), label_value(&placement.vm.host));
    }
    if let Some(key) = &keys.cluster {
        desired.insert(key.clone(), label_value(&placement.cluster.name));
    }
    if let Some(key) = &keys.datacenter
        && !placement.cluster.datacenter.is_empty()
    {
        desired.insert(key.clone(), label_value(&placement.cluster.datacenter));
    }
    desired
}

/// Label changes that bring `labels` to `desired` for the keys this tool owns. Owned keys not
/// desired (e.g. a VM whose host is unknown) are left as they are rather than removed.
pub fn changes(
    node: &str,
    labels: &Labels,
    desired: &BTreeMap<String, String>,
) -> Vec<LabelChange> {
    desired
        .iter()
        .filter(|(key, value)| labels.get(*key) != Some(*value))
        .map(|(key, value)| LabelChange {
            node: node.to_string(),
            key: key.clone(),
            old: labels.get(key).cloned(),
            new: Some(value.clone()),
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
            .map(|p| p.as_ref().map(|p| p.vm.name.as_str()))
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
        assert!(mapping.warnings[0].contains("several VMs"));
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
}
