//! The planner's working state: the snapshot seen through refreshed labels, with indexes for
//! the questions strategies ask, and the effects of every eviction decided so far.
//!
//! One `View` lives through a whole `plan()`, so a pod chosen by one strategy is gone for the
//! next, and budgets (PDBs, limits, free resources) are spent as decisions are made.

pub(super) mod index;
pub(super) mod selector_index;

use std::cmp::Reverse;
use std::collections::BTreeSet;
use std::rc::Rc;

use kube::core::Expression;

use crate::hash::HashMap;
use crate::plan::vsphere::labels::Placement;
use crate::policy::{NoEvictionPolicy, Policy, Strategy};
use crate::snapshot::{
    AffinityTerm, Labels, Node, Pod, Requirements, ResourceName, Resources, Snapshot,
};
use index::{NodeIx, PerNode, PerPod, PodIx, TablePosition};
use selector_index::SelectorIndex;

/// The zone key of the scheduler's default spreading: indexed here because scoring needs its
/// domains whether or not a pod names it.
pub const ZONE: &str = "topology.kubernetes.io/zone";

/// What became of a pod in this plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodState {
    /// Running (or pending) on its node, and counted there.
    Active,
    /// Not bound to a known node, terminating, or finished: counts for nothing.
    Gone,
    /// Chosen for eviction. `landing` is the node the feasibility check found for it: it is
    /// counted there when later evictions look for room, never as a peer in a violation.
    Evicted { landing: Option<NodeIx> },
}

/// A node as planning sees it.
#[derive(Debug)]
pub struct NodeState<'a> {
    pub node: &'a Node,
    /// Labels after the refresh; owned host keys are absent when they cannot be trusted.
    pub labels: Labels,
    pub placement: Option<Placement<'a>>,
    /// Pods on it are candidates: it is Ready and in the policy's node selection.
    pub considered: bool,
    /// It can take a pod: Ready, not cordoned, mapped to a usable host (when vSphere was
    /// observed), and in the policy's node selection. Taints and resources are per pod.
    pub can_receive: bool,
    /// Why it cannot take pods, for skip details.
    pub refusal: Option<NodeRefusal>,
    /// The site its VM's host is in now (`vsphere.sites`): `None` without sites, unmapped, on a
    /// host in no site, or while the sites have findings and so are not trusted.
    pub site: Option<String>,
}

/// Why a node takes no pod at all, whatever the pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeRefusal {
    NotReady,
    Cordoned,
    /// Outside the policy's `nodeSelector`.
    NotSelected,
    /// vSphere was observed and the node matches no VM.
    Unmapped,
    /// Its ESXi host is disconnected, not responding or in maintenance.
    HostUnusable,
    /// Its ESXi host fails in a what-if.
    HostFailed,
}

impl NodeRefusal {
    /// The phrase after "N nodes" in a skip's detail.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeRefusal::NotReady => "not Ready",
            NodeRefusal::Cordoned => "cordoned",
            NodeRefusal::NotSelected => "not selected by the policy's nodeSelector",
            NodeRefusal::Unmapped => "not mapped to a vSphere VM",
            NodeRefusal::HostUnusable => {
                "on an ESXi host that is disconnected, not responding or in maintenance"
            }
            NodeRefusal::HostFailed => "on a failed ESXi host",
        }
    }
}

impl std::fmt::Display for NodeRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// By text, as the refusals were sorted in a skip's detail before they were typed.
impl PartialOrd for NodeRefusal {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for NodeRefusal {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl NodeState<'_> {
    /// The ESXi host name, when mapped.
    pub fn host(&self) -> Option<&str> {
        self.placement
            .as_ref()
            .and_then(|p| p.host)
            .map(|h| h.name.as_str())
    }
}

/// CPU (millicores) and memory (milli-bytes), the snapshot's units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuMemory {
    pub cpu: i64,
    pub memory: i64,
}

impl CpuMemory {
    pub fn of(resources: &Resources) -> CpuMemory {
        CpuMemory {
            cpu: resources.get(&ResourceName::Cpu),
            memory: resources.get(&ResourceName::Memory),
        }
    }
}

/// The values one topology key takes across nodes, numbered, so hot loops compare integers.
#[derive(Debug, Default)]
pub struct Domains {
    /// Domain id of each node; `None` where the node lacks the key.
    pub of_node: PerNode<Option<u32>>,
    /// Whether each domain has a Ready node.
    pub has_ready_node: Vec<bool>,
    /// Value of each domain id.
    pub names: Vec<String>,
}

/// An anti-affinity term and the pod that carries it (an index into its required terms, or
/// into its preferred ones for the soft holders).
#[derive(Clone, Copy, Debug)]
pub struct Holder {
    pub pod: PodIx,
    pub term: usize,
}

pub struct View<'a> {
    pub snapshot: &'a Snapshot,
    pub policy: &'a Policy,
    pub nodes: PerNode<NodeState<'a>>,
    /// The node each pod is bound to, when that node is known.
    pub pod_node: PerPod<Option<NodeIx>>,
    pub state: PerPod<PodState>,
    /// Requests of the pods counted on each node, including landings. Change it only through
    /// [`View::move_requests`], which keeps `used_cpu_memory` in step.
    pub used: PerNode<Resources>,
    /// CPU and memory of `used`, and of each node's allocatable, as plain numbers: the hot loops
    /// (the better-place search, the scheduler's scoring) read them for every node they try.
    pub used_cpu_memory: PerNode<CpuMemory>,
    pub allocatable_cpu_memory: PerNode<CpuMemory>,
    /// Whether any node has a taint (so taint-aware checks can skip the node scan).
    pub any_taints: bool,
    /// How many nodes can take pods at all (`can_receive`), which no decision changes.
    pub receiving_nodes: usize,
    by_namespace: HashMap<&'a str, Vec<PodIx>>,
    /// Controller uid → its pods, for the scheduler's default spreading.
    by_controller: HashMap<&'a str, Vec<PodIx>>,
    /// (namespace, label key, label value) → pods.
    by_label: HashMap<(&'a str, &'a str, &'a str), Vec<PodIx>>,
    /// Every required anti-affinity term with a selector, and an index to find those that
    /// may apply to a pod.
    holders: Vec<Holder>,
    holder_index: SelectorIndex<'a>,
    /// The same for preferred anti-affinity terms (`includeSoftConstraints`).
    soft_holders: Vec<Holder>,
    soft_holder_index: SelectorIndex<'a>,
    /// PodDisruptionBudgets by the labels they select.
    pub pdb_index: SelectorIndex<'a>,
    /// Labels of every namespace, known or inferred from its pods.
    pub namespace_labels: HashMap<&'a str, Labels>,
    /// Numbered domains of every topology key a pod refers to.
    /// Shared, because strategies hold them across evictions (they never change).
    domains: HashMap<&'a str, Rc<Domains>>,
}

impl<'a> View<'a> {
    /// The working state over the nodes `refresh` returns (in snapshot order, with refreshed
    /// labels). The label index and the topology keys read only the snapshot, so they are
    /// built on threads beside the refresh and the pass that places and files the pods; each
    /// is built by one thread in pod order, so the view is the same whatever the timing.
    pub fn new(
        snapshot: &'a Snapshot,
        policy: &'a Policy,
        refresh: impl FnOnce() -> Vec<NodeState<'a>>,
    ) -> View<'a> {
        debug_assert!(
            snapshot
                .pods
                .is_sorted_by(|a, b| (&a.namespace, &a.name) <= (&b.namespace, &b.name)),
            "snapshot pods are sorted by namespace and name"
        );
        let (mut view, by_label, keys) = std::thread::scope(|scope| {
            let labels = scope.spawn(|| label_index(snapshot));
            let keys = scope.spawn(|| topology_keys(snapshot, policy));
            let mut view = View::over(snapshot, policy, refresh());
            view.index_pods();
            (
                view,
                labels.join().expect("the label index does not panic"),
                keys.join()
                    .expect("collecting topology keys does not panic"),
            )
        });
        view.by_label = by_label;
        view.domains = view.index_domains(keys);
        view
    }

    /// The view of the nodes, before any pod is placed.
    fn over(snapshot: &'a Snapshot, policy: &'a Policy, nodes: Vec<NodeState<'a>>) -> View<'a> {
        let nodes: PerNode<NodeState<'a>> = nodes.into();
        let namespace_labels: HashMap<&str, Labels> = snapshot
            .namespaces
            .iter()
            .map(|(name, labels)| (name.as_str(), labels.clone()))
            .collect();
        let any_taints = nodes.iter().any(|n| !n.node.taints.is_empty());
        let receiving_nodes = nodes.iter().filter(|n| n.can_receive).count();
        let allocatable_cpu_memory = nodes
            .iter()
            .map(|n| CpuMemory::of(&n.node.allocatable))
            .collect();
        let used = nodes.iter().map(|_| Resources::default()).collect();
        View {
            snapshot,
            policy,
            nodes,
            any_taints,
            receiving_nodes,
            pod_node: PerPod::with_capacity(snapshot.pods.len()),
            state: PerPod::with_capacity(snapshot.pods.len()),
            used,
            used_cpu_memory: PerNode::default(),
            allocatable_cpu_memory,
            by_namespace: HashMap::default(),
            by_controller: HashMap::default(),
            by_label: HashMap::default(),
            holders: Vec::new(),
            holder_index: SelectorIndex::default(),
            soft_holders: Vec::new(),
            soft_holder_index: SelectorIndex::default(),
            pdb_index: SelectorIndex::default(),
            namespace_labels,
            domains: HashMap::default(),
        }
    }

    /// Places every pod and files it, its anti-affinity terms and the PDBs.
    fn index_pods(&mut self) {
        let snapshot = self.snapshot;
        let node_by_name: HashMap<&str, NodeIx> = self
            .nodes
            .enumerate()
            .map(|(i, n)| (n.node.name.as_str(), i))
            .collect();
        // One pass over the pods for both: the planner runs over hundreds of thousands.
        for (index, pod) in snapshot.pods.iter().enumerate() {
            self.place_pod(&node_by_name, pod);
            self.index_pod(PodIx::at(index), pod);
        }
        self.used_cpu_memory = self.used.iter().map(CpuMemory::of).collect();
        self.index_holders();
        for (index, pdb) in snapshot.pdbs.iter().enumerate() {
            if let Some(selector) = &pdb.selector {
                self.pdb_index
                    .insert(Some(pdb.namespace.as_str()), selector, index);
            }
        }
    }

    /// Records the next pod's node and state, counting its requests on its node while it is
    /// active there. Pods are placed in snapshot order: their index is their position.
    fn place_pod(&mut self, node_by_name: &HashMap<&str, NodeIx>, pod: &Pod) {
        let node = pod
            .node_name
            .as_deref()
            .and_then(|name| node_by_name.get(name).copied());
        self.pod_node.push(node);
        let active = node.is_some() && !pod.is_gone();
        self.state.push(if active {
            PodState::Active
        } else {
            PodState::Gone
        });
        if let (true, Some(node)) = (active, node) {
            self.used[node].add(&pod.requests);
        }
    }

    /// Files a pod under its namespace and controller, and gives its namespace labels
    /// when the snapshot has none for it.
    fn index_pod(&mut self, index: PodIx, pod: &'a Pod) {
        self.by_namespace
            .entry(&*pod.namespace)
            .or_default()
            .push(index);
        if let Some(owner) = pod.controller() {
            self.by_controller
                .entry(owner.uid.as_ref())
                .or_default()
                .push(index);
        }
        self.namespace_labels
            .entry(&*pod.namespace)
            .or_insert_with(|| {
                // The API server labels every namespace with its name.
                Labels::from([("kubernetes.io/metadata.name", &*pod.namespace)])
            });
    }

    /// Numbers the domains of every key, from the refreshed node labels.
    fn index_domains(&self, keys: BTreeSet<&'a str>) -> HashMap<&'a str, Rc<Domains>> {
        let mut all = HashMap::default();
        for key in keys {
            let mut domains = Domains::default();
            let mut ids: HashMap<&str, u32> = HashMap::default();
            for state in &self.nodes {
                let id = state.labels.get(key).map(|value| {
                    *ids.entry(value).or_insert_with(|| {
                        domains.names.push(value.to_string());
                        domains.has_ready_node.push(false);
                        (domains.names.len() - 1) as u32
                    })
                });
                if let Some(id) = id
                    && state.node.ready
                {
                    domains.has_ready_node[id as usize] = true;
                }
                domains.of_node.push(id);
            }
            all.insert(key, Rc::new(domains));
        }
        all
    }

    /// The numbered domains of a topology key some pod refers to.
    pub fn domains(&self, key: &str) -> Option<&Domains> {
        self.domains.get(key).map(Rc::as_ref)
    }

    /// The same, as a handle that outlives a borrow of the view.
    pub fn shared_domains(&self, key: &str) -> Option<Rc<Domains>> {
        self.domains.get(key).cloned()
    }

    fn index_holders(&mut self) {
        let snapshot = self.snapshot;
        let mut holders = (Vec::new(), SelectorIndex::default());
        let mut soft_holders = (Vec::new(), SelectorIndex::default());
        for (index, pod) in snapshot.pods.iter().enumerate() {
            let index = PodIx::at(index);
            for (term_index, term) in pod.anti_affinity.iter().enumerate() {
                self.index_holder(&mut holders, index, term_index, term);
            }
            for (term_index, weighted) in pod.preferred_anti_affinity().iter().enumerate() {
                self.index_holder(&mut soft_holders, index, term_index, &weighted.term);
            }
        }
        (self.holders, self.holder_index) = holders;
        (self.soft_holders, self.soft_holder_index) = soft_holders;
    }

    fn index_holder(
        &self,
        (holders, index): &mut (Vec<Holder>, SelectorIndex<'a>),
        pod: PodIx,
        term_index: usize,
        term: &'a AffinityTerm,
    ) {
        // Without a labelSelector a term matches no pod.
        let Some(selector) = &term.selector else {
            return;
        };
        let scopes: Vec<Option<&str>> = match self.term_namespaces(self.pod(pod), term) {
            None => vec![None],
            Some(namespaces) => namespaces.into_iter().map(Some).collect(),
        };
        for scope in scopes {
            index.insert(scope, selector, holders.len());
        }
        holders.push(Holder {
            pod,
            term: term_index,
        });
    }

    /// Moves a pod's requests from one node to another (`None`: off the cluster).
    pub fn move_requests(&mut self, pod: PodIx, from: NodeIx, to: Option<NodeIx>) {
        let requests = &self.pod(pod).requests;
        let moved = CpuMemory::of(requests);
        self.used[from].subtract(requests);
        self.used_cpu_memory[from].cpu -= moved.cpu;
        self.used_cpu_memory[from].memory -= moved.memory;
        if let Some(to) = to {
            self.used[to].add(requests);
            self.used_cpu_memory[to].cpu += moved.cpu;
            self.used_cpu_memory[to].memory += moved.memory;
        }
    }

    /// The pods of the pod's controller, itself included (none without a controller).
    pub fn siblings(&self, pod: PodIx) -> &[PodIx] {
        self.pod(pod)
            .controller()
            .and_then(|owner| self.by_controller.get(owner.uid.as_ref()))
            .map_or(&[], Vec::as_slice)
    }

    /// The index of every pod, in snapshot order.
    pub fn pod_indices(&self) -> impl DoubleEndedIterator<Item = PodIx> + use<> {
        (0..self.snapshot.pods.len()).map(PodIx::at)
    }

    /// Every pod with its index, in snapshot order.
    pub fn pods(&self) -> impl DoubleEndedIterator<Item = (PodIx, &'a Pod)> + use<'a> {
        let snapshot = self.snapshot;
        snapshot
            .pods
            .iter()
            .enumerate()
            .map(|(index, pod)| (PodIx::at(index), pod))
    }

    pub fn pod(&self, index: PodIx) -> &'a Pod {
        &self.snapshot.pods[index.position()]
    }

    /// Where a pod counts: its node while active; with `landings`, also where an evicted pod
    /// is expected to land.
    pub fn location(&self, pod: PodIx, landings: bool) -> Option<NodeIx> {
        match self.state[pod] {
            PodState::Active => self.pod_node[pod],
            PodState::Evicted { landing } if landings => landing,
            _ => None,
        }
    }

    /// Pods of a namespace whose labels match a selector, in snapshot order (whatever their
    /// state). Uses the label index through the selector's most specific equality.
    pub fn select(&self, namespace: &'a str, selector: &'a Requirements) -> Vec<PodIx> {
        let expressions = selector.expressions();
        // The expression with the fewest candidates, by posting-list length.
        let size = |expression: &Expression| match expression {
            Expression::Equal(key, value) => Some(self.postings(namespace, key, value).len()),
            Expression::In(key, values) => Some(
                values
                    .iter()
                    .map(|v| self.postings(namespace, key, v).len())
                    .sum(),
            ),
            _ => None,
        };
        let best = expressions
            .iter()
            .enumerate()
            .filter_map(|(i, e)| size(e).map(|n| (n, i)))
            .min();
        let pool: Vec<PodIx> = match best.map(|(_, i)| &expressions[i]) {
            Some(Expression::Equal(key, value)) => self.postings(namespace, key, value).to_vec(),
            Some(Expression::In(key, values)) => {
                let mut merged: Vec<PodIx> = values
                    .iter()
                    .flat_map(|value| self.postings(namespace, key, value).iter().copied())
                    .collect();
                merged.sort_unstable();
                merged
            }
            _ => self.namespace_pods(namespace).to_vec(),
        };
        if best.is_some() && expressions.len() == 1 {
            // The posting list is the answer: every pod in it matches the one expression.
            return pool;
        }
        pool.into_iter()
            .filter(|&p| selector.matches(&self.pod(p).labels))
            .collect()
    }

    fn postings(&self, namespace: &'a str, key: &'a str, value: &'a str) -> &[PodIx] {
        self.by_label
            .get(&(namespace, key, value))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// Every namespace that has pods, sorted.
    pub fn pod_namespaces(&self) -> Vec<&'a str> {
        let set: BTreeSet<&str> = self.by_namespace.keys().copied().collect();
        set.into_iter().collect()
    }

    /// Pods of one namespace, in snapshot order.
    pub fn namespace_pods(&self, namespace: &str) -> &[PodIx] {
        self.by_namespace
            .get(namespace)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// The namespaces an affinity term of `owner` applies to, sorted; `None` means all of them.
    pub fn term_namespaces(&self, owner: &'a Pod, term: &'a AffinityTerm) -> Option<Vec<&'a str>> {
        let mut namespaces: BTreeSet<&'a str> =
            term.namespaces.iter().map(String::as_str).collect();
        match &term.namespace_selector {
            Some(selector) if selector.selects_all() => return None,
            Some(selector) => namespaces.extend(
                self.namespace_labels
                    .iter()
                    .filter(|(_, labels)| selector.matches(labels))
                    .map(|(name, _)| *name),
            ),
            None if namespaces.is_empty() => {
                namespaces.insert(&*owner.namespace);
            }
            None => {}
        }
        Some(namespaces.into_iter().collect())
    }

    /// Pods (other than `owner`) an affinity term of `owner` matches, in any state.
    pub fn term_matches(&self, owner: PodIx, term: &'a AffinityTerm) -> Vec<PodIx> {
        let Some(selector) = &term.selector else {
            return Vec::new();
        };
        let owner_pod = self.pod(owner);
        if term.namespace_selector.is_none() && term.namespaces.is_empty() {
            // The common case, answered without building a namespace list.
            let mut matches = self.select(&owner_pod.namespace, selector);
            matches.retain(|&p| p != owner);
            return matches;
        }
        let namespaces = self
            .term_namespaces(owner_pod, term)
            .unwrap_or_else(|| self.pod_namespaces());
        let mut matches = Vec::new();
        for namespace in namespaces {
            matches.extend(
                self.select(namespace, selector)
                    .into_iter()
                    .filter(|&p| p != owner),
            );
        }
        matches
    }

    /// Whether an affinity term of `owner` matches pod `other`.
    pub fn term_selects(&self, owner: PodIx, term: &AffinityTerm, other: PodIx) -> bool {
        let other_pod = self.pod(other);
        let Some(selector) = &term.selector else {
            return false;
        };
        self.term_covers(self.pod(owner), term, &other_pod.namespace)
            && selector.matches(&other_pod.labels)
    }

    /// Whether an affinity term of `owner` applies to pods of `namespace` (no allocation:
    /// this runs for every pod a term is held against).
    fn term_covers(&self, owner: &Pod, term: &AffinityTerm, namespace: &str) -> bool {
        if term.namespaces.iter().any(|n| n == namespace) {
            return true;
        }
        match &term.namespace_selector {
            Some(selector) => self
                .namespace_labels
                .get(namespace)
                .is_some_and(|labels| selector.matches(labels)),
            None => term.namespaces.is_empty() && &*owner.namespace == namespace,
        }
    }

    /// Anti-affinity terms of any pod that may apply to `pod` (confirm with
    /// [`View::term_selects`]).
    pub fn holders_for(&self, pod: &'a Pod) -> impl Iterator<Item = Holder> + '_ {
        self.holder_index
            .candidates(&pod.namespace, &pod.labels)
            .map(|i| self.holders[i])
    }

    /// Preferred anti-affinity terms of any pod that may apply to `pod` (confirm with
    /// [`View::term_selects`]).
    pub fn soft_holders_for(&self, pod: &'a Pod) -> impl Iterator<Item = Holder> + '_ {
        self.soft_holder_index
            .candidates(&pod.namespace, &pod.labels)
            .map(|i| self.soft_holders[i])
    }

    /// PodDisruptionBudgets whose selector matches the pod, in snapshot order.
    pub fn pdbs_of(&self, pod: PodIx) -> Vec<usize> {
        let pod = self.pod(pod);
        let mut pdbs: Vec<usize> = self
            .pdb_index
            .candidates(&pod.namespace, &pod.labels)
            .filter(|&i| {
                self.snapshot.pdbs[i]
                    .selector
                    .as_ref()
                    .is_some_and(|s| s.matches(&pod.labels))
            })
            .collect();
        pdbs.sort_unstable();
        pdbs
    }

    /// Sort pods into the order they are chosen in, most evictable first: lowest priority,
    /// then BestEffort before Burstable before Guaranteed, then (when asked) pods not
    /// preferring to stay, then the most recently created, then namespace and name.
    pub fn sort_for_eviction(&self, preference: NoEvictionPolicy, pods: &mut [PodIx]) {
        // Pods are indexed in namespace/name order (a snapshot invariant), so the index is
        // the last tie-break: the key is all integers and the sort compares no strings.
        pods.sort_unstable_by_key(|&index| {
            let pod = self.pod(index);
            let stays = preference == NoEvictionPolicy::Preferred && pod.prefer_no_eviction;
            (pod.priority, pod.qos, stays, Reverse(pod.created), index)
        });
    }
}

/// (namespace, label key, label value) → the pods carrying that label, in snapshot order.
fn label_index(snapshot: &Snapshot) -> HashMap<(&str, &str, &str), Vec<PodIx>> {
    let mut by_label: HashMap<(&str, &str, &str), Vec<PodIx>> = HashMap::default();
    for (index, pod) in snapshot.pods.iter().enumerate() {
        let index = PodIx::at(index);
        for (key, value) in &pod.labels {
            by_label
                .entry((&*pod.namespace, key, value))
                .or_default()
                .push(index);
        }
    }
    by_label
}

/// Every topology key planning numbers domains for: the zone key of the scheduler's default
/// spreading (scoring needs its domains whether or not a pod names it), the keys of the
/// policy's default spread constraints (which no pod names), and every key a pod refers to.
fn topology_keys<'a>(snapshot: &'a Snapshot, policy: &'a Policy) -> BTreeSet<&'a str> {
    let mut keys: BTreeSet<&'a str> = BTreeSet::from([ZONE]);
    for profile in &policy.profiles {
        for strategy in &profile.balance {
            if let Strategy::TopologySpread(args) = strategy {
                keys.extend(
                    args.default_constraints
                        .iter()
                        .map(|c| c.topology_key.as_str()),
                );
            }
        }
    }
    for pod in &snapshot.pods {
        keys.extend(pod.anti_affinity.iter().map(|t| t.topology_key.as_str()));
        keys.extend(
            pod.preferred_anti_affinity()
                .iter()
                .chain(pod.preferred_affinity())
                .map(|t| t.term.topology_key.as_str()),
        );
        keys.extend(
            pod.spread_constraints
                .iter()
                .map(|c| c.topology_key.as_str()),
        );
    }
    keys
}
