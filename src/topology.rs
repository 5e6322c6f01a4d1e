//! Where each node VM's ESXi host comes from (`vsphere.source`), for the sources that need no
//! session of their own: the inventory a node label implies. vCenter's inventory is observed in
//! [`crate::vsphere`], the Supervisor's read in [`crate::supervisor`]; all three give the planner
//! the same [`Inventory`], so `plan()` has one code path.

use std::collections::BTreeSet;

use crate::inventory::{
    Cluster, ConnectionState, Host, Inventory, MaintenanceMode, PowerState, Vm,
};
use crate::policy::{SourceKind, VsphereSettings};
use crate::snapshot::{Node, Snapshot};

/// The inventory of source `node-label`: one cluster named after the label, one host per value
/// of `key`, and one VM per node carrying it, named like the node (so nodes map by name) and
/// running on the host its label names. Nodes without the label are in no VM, hence unmapped.
///
/// Host health is not visible through a label: every host counts as connected and out of
/// maintenance; a host's trouble shows on its nodes (NotReady, cordoned), which planning
/// already refuses.
pub fn from_node_label(nodes: &[Node], key: &str) -> Inventory {
    let vms: Vec<Vm> = nodes
        .iter()
        .filter_map(|node| {
            let host = node.labels.get(key).filter(|value| !value.is_empty())?;
            Some(Vm {
                name: node.name.clone(),
                id: None,
                uuid: String::new(),
                host: host.to_string(),
                power_state: PowerState::PoweredOn,
                drs_behavior: None,
            })
        })
        .collect();
    let host_names: BTreeSet<&str> = vms.iter().map(|vm| vm.host.as_str()).collect();
    let hosts = host_names
        .into_iter()
        .map(|name| Host {
            name: name.to_string(),
            id: None,
            connection_state: ConnectionState::Connected,
            in_maintenance_mode: MaintenanceMode::Off,
            vsan_fault_domain: None,
        })
        .collect();
    Inventory {
        clusters: vec![Cluster {
            name: node_label_cluster(key),
            hosts,
            vms,
            ..Cluster::default()
        }],
    }
}

/// How reports name the one cluster of source `node-label`.
pub fn node_label_cluster(key: &str) -> String {
    format!("label:{key}")
}

/// What choosing the source did to a snapshot's inventory, for the report's warnings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Replaced {
    /// The snapshot held an inventory (recorded from vCenter or the Supervisor), which source
    /// `node-label` does not read.
    RecordedInventory { key: String },
}

impl std::fmt::Display for Replaced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Replaced::RecordedInventory { key } => write!(
                f,
                "source node-label: the snapshot's recorded vSphere inventory is not read; the \
                 hosts come from the nodes' label {key}"
            ),
        }
    }
}

/// Gives the snapshot the inventory of source `node-label` when the settings choose it; other
/// sources' inventories are observed or recorded, and left as they are.
pub fn apply_node_label(snapshot: &mut Snapshot, settings: &VsphereSettings) -> Option<Replaced> {
    if settings.source != SourceKind::NodeLabel {
        return None;
    }
    let key = &settings.node_label.key;
    let recorded = snapshot
        .inventory
        .replace(from_node_label(&snapshot.nodes, key));
    recorded.map(|_| Replaced::RecordedInventory { key: key.clone() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::CAPV_HOST_LABEL;
    use crate::snapshot::Labels;

    fn node(name: &str, host: Option<&str>) -> Node {
        let mut labels = std::collections::BTreeMap::new();
        labels.insert("kubernetes.io/hostname".to_string(), name.to_string());
        if let Some(host) = host {
            labels.insert(CAPV_HOST_LABEL.to_string(), host.to_string());
        }
        Node {
            name: name.to_string(),
            uid: None,
            labels: Labels::from(labels),
            applied_label_keys: Default::default(),
            provider_id: Some(format!("vsphere://{name}-uuid")),
            system_uuid: None,
            internal_ips: Vec::new(),
            unschedulable: false,
            ready: true,
            taints: Vec::new(),
            allocatable: Default::default(),
        }
    }

    #[test]
    fn each_labelled_node_is_a_vm_on_the_host_its_label_names() {
        let nodes = [
            node("w1", Some("esxi-1")),
            node("w2", Some("esxi-1")),
            node("w3", Some("esxi-2")),
            node("w4", None),
            node("w5", Some("")),
        ];
        let inventory = from_node_label(&nodes, CAPV_HOST_LABEL);
        let [cluster] = inventory.clusters.as_slice() else {
            panic!("one cluster: {inventory:?}");
        };
        assert_eq!(cluster.name, "label:node.cluster.x-k8s.io/esxi-host");
        let vms: Vec<(&str, &str)> = cluster
            .vms
            .iter()
            .map(|vm| (vm.name.as_str(), vm.host.as_str()))
            .collect();
        assert_eq!(vms, [("w1", "esxi-1"), ("w2", "esxi-1"), ("w3", "esxi-2")]);
        let hosts: Vec<&str> = cluster.hosts.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(hosts, ["esxi-1", "esxi-2"]);
        assert!(cluster.hosts.iter().all(Host::is_usable));
        assert!(cluster.rules.is_empty() && cluster.drs.is_none());
    }
}
