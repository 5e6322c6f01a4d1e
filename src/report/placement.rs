//! What the HTML view draws, gathered from the snapshot the plan was made on and the report of
//! what it planned or did: the ESXi hosts of each vSphere cluster, the node VMs on them, and the
//! replicas of each workload per host before and after the plan. Pure, and it decides nothing:
//! which pods leave, where their replacements land and which rules change all come from the
//! report; the snapshot only says where things are now.

use std::collections::{BTreeMap, BTreeSet};

use crate::hash::HashMap;
use crate::inventory::{ConnectionState, Host, MaintenanceMode};
use crate::plan::{belongs_to_its_node, workload};
use crate::policy::Policy;
use crate::report::{EvictionEntry, Outcome, Report};
use crate::snapshot::{Pod, Snapshot};

/// Untouched workloads with a host-level constraint are drawn one by one up to this many; past
/// it (large clusters) they are only counted, so the page stays small enough to read.
pub const UNTOUCHED_DRAWN_LIMIT: usize = 100;

/// The picture of one plan.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlacementView {
    pub clusters: Vec<ClusterView>,
    /// Nodes with no VM in the inventory (or no inventory): on no known host.
    pub unplaced_nodes: Vec<NodeView>,
    /// Workloads drawn one by one: every one the plan touches (an eviction or a skip of one of
    /// its pods), then untouched ones with a host-level constraint. DRS rules are drawn apart.
    pub workloads: Vec<WorkloadView>,
    /// What is not drawn one by one.
    pub summary: PlacementSummary,
}

/// Counts of what the page leaves out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlacementSummary {
    pub pods: usize,
    pub workloads: usize,
    /// Untouched workloads with a host-level constraint not drawn (past the limit).
    pub constrained_not_drawn: usize,
    /// Untouched workloads without a host-level constraint.
    pub unconstrained: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ClusterView {
    pub name: String,
    pub hosts: Vec<HostView>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct HostView {
    pub name: String,
    pub state: HostState,
    pub nodes: Vec<NodeView>,
    /// Active pods on its node VMs that belong to no drawn workload.
    pub other_pods: usize,
}

/// An ESXi host's state, as the page labels it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostState {
    Connected,
    Maintenance,
    Disconnected,
    NotResponding,
}

impl HostState {
    fn of(host: &Host) -> HostState {
        // The page knows no other state: an unknown one shows as connected (or in
        // maintenance), though the planner counts such a host as unusable.
        match host.connection_state {
            ConnectionState::Disconnected => HostState::Disconnected,
            ConnectionState::NotResponding => HostState::NotResponding,
            _ if host.in_maintenance_mode == MaintenanceMode::On => HostState::Maintenance,
            _ => HostState::Connected,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            HostState::Connected => "connected",
            HostState::Maintenance => "maintenance mode",
            HostState::Disconnected => "disconnected",
            HostState::NotResponding => "not responding",
        }
    }
}

/// A node (its VM, when mapped) as drawn in its host's column.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeView {
    pub node: String,
    /// The VM's name when it differs from the node's.
    pub vm: Option<String>,
    /// The host label's change: the host Kubernetes believed (`was`), the one it is on.
    pub moved: Option<LabelMove>,
    /// Label keys the report removes from it (keys an earlier policy had the runs write).
    pub removed_labels: Vec<String>,
    pub ready: bool,
    pub cordoned: bool,
    /// Active pods on it now.
    pub pods: usize,
    /// Pods the report evicts from it.
    pub leaving: usize,
    /// Replacements the report expects to land on it.
    pub arriving: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelMove {
    pub was: Option<String>,
    pub now: Option<String>,
}

/// One workload's replicas per host.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadView {
    /// `namespace/Kind/name`, or `namespace/Pod/name` for a pod without a controller.
    pub name: String,
    /// Its host-level constraints in words (`required anti-affinity on kubernetes.io/hostname`).
    pub constraints: Vec<String>,
    /// Hosts where it has replicas before or after, by name.
    pub hosts: Vec<HostCount>,
    /// Replacements whose landing the report does not name (no node-fit check).
    pub unplaced_after: usize,
    /// Indexes into the report's evictions.
    pub evictions: Vec<usize>,
    /// Indexes into the report's skips.
    pub skips: Vec<usize>,
    pub touched: bool,
    /// Whether host-failure exposure judges it: a controller's pods, but not a DaemonSet's (one
    /// per node by design) nor static pods (owned by their node), as `plan/exposure.rs` groups
    /// them.
    pub assessed: bool,
}

impl WorkloadView {
    /// Its pods on a node before the plan.
    pub fn pods(&self) -> usize {
        self.hosts.iter().map(|count| count.before).sum()
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostCount {
    /// `None`: nodes on no known host.
    pub host: Option<String>,
    pub before: usize,
    pub after: usize,
}

/// Whether an eviction entry took (or, planned, will take) the pod off its node.
pub fn leaves(entry: &EvictionEntry) -> bool {
    matches!(
        entry.result(),
        Outcome::Planned | Outcome::Evicted | Outcome::Unknown
    )
}

impl PlacementView {
    /// Gathers the picture of `report`, planned on `snapshot` under `policy`.
    pub fn new(snapshot: &Snapshot, policy: &Policy, report: &Report) -> PlacementView {
        let host_of: HashMap<&str, &str> = report
            .plan
            .mapped_nodes
            .iter()
            .map(|m| (m.node.as_str(), m.host.as_str()))
            .collect();
        let nodes = node_views(snapshot, policy, report);
        let (clusters, unplaced_nodes) = lay_out(snapshot, report, nodes);
        let (workloads, summary, counted) = workloads(snapshot, policy, report, &host_of);
        let mut placement = PlacementView {
            clusters,
            unplaced_nodes,
            workloads,
            summary,
        };
        placement.count_other_pods(snapshot, &host_of, &counted);
        placement
    }

    /// Where each host's pods outside the drawn workloads are counted.
    fn count_other_pods(
        &mut self,
        snapshot: &Snapshot,
        host_of: &HashMap<&str, &str>,
        drawn: &[bool],
    ) {
        let mut others: HashMap<&str, usize> = HashMap::default();
        for (pod, is_drawn) in snapshot.pods.iter().zip(drawn) {
            if *is_drawn || pod.is_gone() {
                continue;
            }
            if let Some(host) = pod.node_name.as_deref().and_then(|n| host_of.get(n)) {
                *others.entry(host).or_default() += 1;
            }
        }
        for host in self.clusters.iter_mut().flat_map(|c| &mut c.hosts) {
            host.other_pods = others.get(host.name.as_str()).copied().unwrap_or(0);
        }
    }
}

/// Every node, with its pods and the report's moves.
fn node_views(snapshot: &Snapshot, policy: &Policy, report: &Report) -> Vec<NodeView> {
    let mut pods: HashMap<&str, usize> = HashMap::default();
    for pod in &snapshot.pods {
        if let Some(node) = pod.node_name.as_deref().filter(|_| !pod.is_gone()) {
            *pods.entry(node).or_default() += 1;
        }
    }
    let mut leaving: HashMap<&str, usize> = HashMap::default();
    let mut arriving: HashMap<&str, usize> = HashMap::default();
    for entry in report.evictions().filter(leaves) {
        *leaving.entry(entry.eviction.node.as_str()).or_default() += 1;
        if let Some(landing) = &entry.eviction.landing {
            *arriving.entry(landing.as_str()).or_default() += 1;
        }
    }
    let vm_of: HashMap<&str, &str> = report
        .plan
        .mapped_nodes
        .iter()
        .filter_map(|m| Some((m.node.as_str(), m.vm.as_deref()?)))
        .collect();
    snapshot
        .nodes
        .iter()
        .map(|node| {
            let name = node.name.as_str();
            let moved = report
                .plan
                .label_changes
                .iter()
                .find(|c| c.node == name && c.key == policy.vsphere.labels.host)
                .map(|c| LabelMove {
                    was: c.old.clone(),
                    now: c.new.clone(),
                });
            let removed_labels = report
                .plan
                .label_changes
                .iter()
                .filter(|c| {
                    c.node == name && c.new.is_none() && c.key != policy.vsphere.labels.host
                })
                .map(|c| c.key.clone())
                .collect();
            NodeView {
                node: node.name.clone(),
                removed_labels,
                vm: vm_of
                    .get(name)
                    .filter(|vm| **vm != name)
                    .map(|vm| vm.to_string()),
                moved,
                ready: node.ready,
                cordoned: node.unschedulable,
                pods: pods.get(name).copied().unwrap_or(0),
                leaving: leaving.get(name).copied().unwrap_or(0),
                arriving: arriving.get(name).copied().unwrap_or(0),
            }
        })
        .collect()
}

/// Clusters and hosts in inventory order, each node under the host its VM is on now.
fn lay_out(
    snapshot: &Snapshot,
    report: &Report,
    nodes: Vec<NodeView>,
) -> (Vec<ClusterView>, Vec<NodeView>) {
    let Some(inventory) = &snapshot.inventory else {
        return (Vec::new(), nodes);
    };
    let mapped: HashMap<&str, (&str, &str)> = report
        .plan
        .mapped_nodes
        .iter()
        .map(|m| (m.node.as_str(), (m.cluster.as_str(), m.host.as_str())))
        .collect();
    let mut clusters: Vec<ClusterView> = inventory
        .cluster_names()
        .into_iter()
        .zip(&inventory.clusters)
        .map(|(name, cluster)| ClusterView {
            name,
            hosts: cluster
                .hosts
                .iter()
                .map(|host| HostView {
                    name: host.name.clone(),
                    state: HostState::of(host),
                    nodes: Vec::new(),
                    other_pods: 0,
                })
                .collect(),
        })
        .collect();
    let mut unplaced = Vec::new();
    for node in nodes {
        let slot = mapped.get(node.node.as_str()).and_then(|(cluster, host)| {
            clusters
                .iter_mut()
                .find(|c| c.name == *cluster)?
                .hosts
                .iter_mut()
                .find(|h| h.name == *host)
        });
        match slot {
            Some(host) => host.nodes.push(node),
            None => unplaced.push(node),
        }
    }
    (clusters, unplaced)
}

/// A workload's pods and what the report does to them.
#[derive(Default)]
struct Gathered {
    pods: Vec<usize>,
    /// Read from its first pod: a workload's pods share their template.
    constraints: BTreeSet<String>,
    assessed: bool,
    evictions: Vec<usize>,
    skips: Vec<usize>,
}

/// The workloads to draw, what is summarised, and which pods the drawn ones hold.
fn workloads(
    snapshot: &Snapshot,
    policy: &Policy,
    report: &Report,
    host_of: &HashMap<&str, &str>,
) -> (Vec<WorkloadView>, PlacementSummary, Vec<bool>) {
    let keys = host_level_keys(policy);
    let mut gathered: BTreeMap<String, Gathered> = BTreeMap::new();
    let mut pod_workload: HashMap<(&str, &str), String> = HashMap::default();
    for (index, pod) in snapshot.pods.iter().enumerate() {
        let name = workload_name(pod);
        pod_workload.insert((&pod.namespace, &pod.name), name.clone());
        let entry = gathered.entry(name).or_default();
        if entry.pods.is_empty() {
            entry.constraints = constraints(pod, &keys);
            entry.assessed = pod
                .controller()
                .is_some_and(|owner| !belongs_to_its_node(owner));
        }
        entry.pods.push(index);
    }
    for (index, entry) in report.evictions().enumerate() {
        let key = (
            entry.eviction.namespace.as_str(),
            entry.eviction.pod.as_str(),
        );
        if let Some(found) = pod_workload.get(&key).and_then(|w| gathered.get_mut(w)) {
            found.evictions.push(index);
        }
    }
    for (index, skip) in report.plan.skipped.iter().enumerate() {
        let key = (skip.namespace.as_str(), skip.pod.as_str());
        if let Some(found) = pod_workload.get(&key).and_then(|w| gathered.get_mut(w)) {
            found.skips.push(index);
        }
    }
    let untouched_constrained = gathered
        .values()
        .filter(|g| !is_touched(g) && !g.constraints.is_empty())
        .count();
    let mut summary = PlacementSummary {
        pods: snapshot.pods.len(),
        workloads: gathered.len(),
        ..PlacementSummary::default()
    };
    let mut drawn_pods = vec![false; snapshot.pods.len()];
    let mut views = Vec::new();
    for (name, found) in gathered {
        let touched = is_touched(&found);
        let draw = touched
            || (!found.constraints.is_empty() && untouched_constrained <= UNTOUCHED_DRAWN_LIMIT);
        if !draw {
            if found.constraints.is_empty() {
                summary.unconstrained += 1;
            } else {
                summary.constrained_not_drawn += 1;
            }
            continue;
        }
        for &pod in &found.pods {
            drawn_pods[pod] = true;
        }
        views.push(view_of(name, found, touched, snapshot, report, host_of));
    }
    // Touched workloads first: they are what the plan is about.
    views.sort_by_key(|w| !w.touched);
    (views, summary, drawn_pods)
}

/// Evicted or skipped pods; a DRS rule written for the workload is shown with the rules.
fn is_touched(gathered: &Gathered) -> bool {
    !gathered.evictions.is_empty() || !gathered.skips.is_empty()
}

/// One drawn workload: replicas per host now, and after the report's evictions land.
fn view_of(
    name: String,
    found: Gathered,
    touched: bool,
    snapshot: &Snapshot,
    report: &Report,
    host_of: &HashMap<&str, &str>,
) -> WorkloadView {
    let mut counts: BTreeMap<Option<String>, (usize, usize)> = BTreeMap::new();
    let host = |node: Option<&str>| node.and_then(|n| host_of.get(n)).map(|h| h.to_string());
    for &index in &found.pods {
        let pod = &snapshot.pods[index];
        if pod.is_gone() || pod.node_name.is_none() {
            continue;
        }
        let count = counts.entry(host(pod.node_name.as_deref())).or_default();
        count.0 += 1;
        count.1 += 1;
    }
    let mut unplaced_after = 0;
    for &index in &found.evictions {
        let entry = report.eviction(index);
        if !leaves(&entry) {
            continue;
        }
        let from = counts.entry(host(Some(&entry.eviction.node))).or_default();
        from.1 = from.1.saturating_sub(1);
        match &entry.eviction.landing {
            Some(node) => counts.entry(host(Some(node))).or_default().1 += 1,
            None => unplaced_after += 1,
        }
    }
    WorkloadView {
        name,
        constraints: found.constraints.into_iter().collect(),
        hosts: counts
            .into_iter()
            .map(|(host, (before, after))| HostCount {
                host,
                before,
                after,
            })
            .collect(),
        unplaced_after,
        evictions: found.evictions,
        skips: found.skips,
        touched,
        assessed: found.assessed,
    }
}

/// `namespace/Kind/name` of the pod's workload, as DRS rules name it.
fn workload_name(pod: &Pod) -> String {
    match workload(pod) {
        Some(workload) => workload.display(),
        None => format!("{}/Pod/{}", pod.namespace, pod.name),
    }
}

/// The topology keys that separate hosts (or node VMs): the host label and the DRS rules'.
fn host_level_keys(policy: &Policy) -> BTreeSet<&str> {
    let mut keys: BTreeSet<&str> = policy
        .vsphere
        .drs_rules
        .topology_keys
        .iter()
        .map(String::as_str)
        .collect();
    keys.insert(&policy.vsphere.labels.host);
    keys
}

/// A pod's constraints at host level, in words.
fn constraints(pod: &Pod, keys: &BTreeSet<&str>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for term in pod.anti_affinity.iter() {
        if keys.contains(term.topology_key.as_str()) {
            found.insert(format!("required anti-affinity on {}", term.topology_key));
        }
    }
    for weighted in pod.preferred_anti_affinity() {
        if keys.contains(weighted.term.topology_key.as_str()) {
            found.insert(format!(
                "preferred anti-affinity on {}",
                weighted.term.topology_key
            ));
        }
    }
    for spread in pod.spread_constraints.iter() {
        if keys.contains(spread.topology_key.as_str()) {
            found.insert(format!(
                "topology spread on {} (maxSkew {})",
                spread.topology_key, spread.max_skew
            ));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::plan;
    use crate::report::Mode;

    /// The demo's seed lab: DRS moved worker-b onto esxi-41, next to worker-a.
    fn demo() -> (Snapshot, Report) {
        let now = chrono::DateTime::parse_from_rfc3339("2026-11-21T09:00:00Z")
            .expect("a valid time")
            .to_utc();
        let snapshot =
            crate::snapshot::from_str(include_str!("../command/demo/snapshot.yaml"), now)
                .expect("the demo snapshot");
        let policy = crate::policy::load_str("demo", include_str!("../command/demo/policy.yaml"))
            .expect("the demo policy")
            .policy;
        let mut report = Report::planned(Mode::Plan, plan(&snapshot, &policy));
        report.place(&snapshot, &policy);
        (snapshot, report)
    }

    #[test]
    fn nodes_sit_under_the_host_their_vm_is_on_and_show_the_label_move() {
        let (_, report) = demo();
        let placement = report.placement.expect("placed");
        let host = &placement.clusters[0].hosts[0];
        assert_eq!(host.name, "lab-wcp-esxi-41.go-lab.jp");
        let names: Vec<&str> = host.nodes.iter().map(|n| n.node.as_str()).collect();
        assert_eq!(names, ["control-plane-1", "worker-a", "worker-b"]);
        let worker_b = &host.nodes[2];
        assert_eq!(
            worker_b.moved,
            Some(LabelMove {
                was: Some("lab-wcp-esxi-42.go-lab.jp".to_string()),
                now: Some("lab-wcp-esxi-41.go-lab.jp".to_string()),
            })
        );
        assert_eq!((worker_b.pods, worker_b.leaving), (2, 1));
    }

    #[test]
    fn an_evicted_replica_counts_on_the_host_it_fits_on_after_the_plan() {
        let (_, report) = demo();
        let placement = report.placement.expect("placed");
        let web = placement
            .workloads
            .iter()
            .find(|w| w.name == "lab-ns-01/Deployment/demo-httpd")
            .expect("the web workload is drawn");
        assert!(web.touched);
        assert!(web.assessed, "a Deployment's pods are judged for exposure");
        let counts: Vec<(Option<&str>, usize, usize)> = web
            .hosts
            .iter()
            .map(|c| (c.host.as_deref(), c.before, c.after))
            .collect();
        assert_eq!(
            counts,
            [
                (Some("lab-wcp-esxi-41.go-lab.jp"), 2, 1),
                (Some("lab-wcp-esxi-43.go-lab.jp"), 0, 1)
            ]
        );
    }
}
