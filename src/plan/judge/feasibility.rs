//! "Is there a better place?": whether some other node would take a pod, judged the way the
//! scheduler would, at topology-domain level.
//!
//! A node qualifies when it can receive pods at all (Ready, not cordoned, on a usable ESXi host,
//! selected by the policy), the pod tolerates its taints, matches its node selector and
//! affinity, fits its free resources, and landing there would break none of the pod's required
//! anti-affinity terms, no other pod's anti-affinity against it, and none of its
//! `DoNotSchedule` spread constraints, counting the pods already planned to land elsewhere.
//! This is what keeps evictions from looping: a pod that would come back is not evicted.
//!
//! Of the nodes that would take the pod, the one returned is the one the scheduler would choose
//! ([`super::scoring`]), among a sample of the size the scheduler scores, plus the node the pod
//! is on now when it would take the pod back: the caller tells a replacement that would land
//! back where it leaves from one that would move.

use std::collections::{BTreeMap, BTreeSet};

use super::scoring;
use crate::plan::view::index::{NodeIx, PerNode, PodIx, TablePosition};
use crate::plan::view::{Domains, NodeRefusal, View};
use crate::policy::EvictorArgs;
use crate::snapshot::{Pod, ResourceName, SpreadConstraint, TaintEffect, WhenUnsatisfiable};

/// The node the scheduler would give the pod's replacement, when some node other than its own
/// would take it; this may be the pod's own node, which the caller then treats as a return.
/// `Err` carries a summary of why no other node would take it.
pub fn find_node<'v>(
    view: &'v View,
    pod_index: PodIx,
    evictor: &EvictorArgs,
    extra: Option<&'v SpreadConstraint>,
) -> Result<NodeIx, NoNode<&'v str>> {
    find_node_among(view, pod_index, evictor, extra, None)
}

/// The nodes a strategy allows a pod to go to, and how a skip names the others ("not preferred
/// over its node").
#[derive(Clone, Copy, Debug)]
pub struct Allowed<'a> {
    pub nodes: &'a PerNode<bool>,
    pub others: Others,
}

/// How a skip names the nodes a strategy leaves out, after "N nodes".
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Others {
    /// Preferred node affinity: nodes the pod prefers no more than its own.
    NotPreferred,
    /// A utilization plugin: nodes that are not destinations of this kind with room.
    NoRoom(Destination),
}

/// The destinations of a utilization plugin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Destination {
    /// LowNodeUtilization's.
    Underutilized,
    /// HighNodeUtilization's.
    Fuller,
}

impl std::fmt::Display for Others {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Others::NotPreferred => f.write_str("not preferred over its node"),
            Others::NoRoom(destination) => {
                let what = match destination {
                    Destination::Underutilized => "underutilized",
                    Destination::Fuller => "fuller",
                };
                write!(f, "not {what} with room for it below the ceiling")
            }
        }
    }
}

/// [`find_node`] among the nodes `among` allows, when given (the nodes a pod prefers more than
/// its own, say); a skip names the others in the strategy's words.
pub fn find_node_among<'v>(
    view: &'v View,
    pod_index: PodIx,
    evictor: &EvictorArgs,
    extra: Option<&'v SpreadConstraint>,
    among: Option<Allowed<'v>>,
) -> Result<NodeIx, NoNode<&'v str>> {
    search(view, pod_index, evictor, extra, among, false)
}

/// [`find_node`] where landing must also break no preferred anti-affinity: neither the pod's
/// own preferred terms nor another pod's preferred terms against it (the scheduler weighs
/// both), so a pod moved for a soft violation does not land in another.
pub fn find_node_avoiding_preferred<'v>(
    view: &'v View,
    pod_index: PodIx,
    evictor: &EvictorArgs,
) -> Result<NodeIx, NoNode<&'v str>> {
    search(view, pod_index, evictor, None, None, true)
}

fn search<'v>(
    view: &'v View,
    pod_index: PodIx,
    evictor: &EvictorArgs,
    extra: Option<&'v SpreadConstraint>,
    among: Option<Allowed<'v>>,
    preferred: bool,
) -> Result<NodeIx, NoNode<&'v str>> {
    let pod = view.pod(pod_index);
    let current = view.pod_node[pod_index];
    let excluded = excluded_domains(view, pod_index, preferred);
    let spreads: Vec<SpreadCounts> = pod
        .spread_constraints
        .iter()
        .filter(|c| c.when_unsatisfiable == WhenUnsatisfiable::DoNotSchedule)
        .chain(extra)
        .map(|c| SpreadCounts::new(view, pod_index, c))
        .collect();

    // Start at a place that depends on the pod, so landings spread over the cluster instead
    // of piling onto the first nodes (deterministic all the same).
    let count = view.nodes.len();
    let start = if count == 0 {
        0
    } else {
        pod_index.position().wrapping_mul(2_654_435_761) % count
    };
    // The node it is on competes whenever it would take the pod back (never when only nodes
    // preferred over its own qualify).
    let mut candidates: Vec<NodeIx> = current
        .filter(|_| among.is_none())
        .filter(|&node| refusal(view, pod, current, node, evictor, &excluded, &spreads).is_none())
        .into_iter()
        .collect();
    // When it could come back, whether it would is decided against as many nodes as the
    // scheduler scores; when it cannot, only the node reported as taking it depends on the
    // sample, and a smaller one keeps the search near-linear.
    let wanted = if candidates.is_empty() {
        scoring::sample_size(count).min(scoring::SMALL_SAMPLE)
    } else {
        scoring::sample_size(count)
    };
    let mut others = 0;
    let mut refusals: Vec<(Refusal<&str>, usize)> = Vec::new();
    for node in (start..count).chain(0..start).map(NodeIx::at) {
        if Some(node) == current {
            continue;
        }
        let outside = among.filter(|allowed| !allowed.nodes[node]);
        let why = if let Some(allowed) = outside {
            Some(Refusal::Outside(allowed.others))
        } else {
            refusal(view, pod, current, node, evictor, &excluded, &spreads)
        };
        match why {
            None => {
                candidates.push(node);
                others += 1;
                if others == wanted {
                    break;
                }
            }
            Some(why) => match refusals.iter_mut().find(|(seen, _)| *seen == why) {
                Some((_, tally)) => *tally += 1,
                None => refusals.push((why, 1)),
            },
        }
    }
    if others > 0 {
        return Ok(scoring::choose(view, pod_index, &candidates).expect("candidates"));
    }
    refusals.sort();
    Err(NoNode { refusals })
}

/// Why no other node would take a pod: every refusal once, in order, with how many nodes gave
/// it (none when no other node exists). Its text is the skip's detail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoNode<S> {
    pub refusals: Vec<(Refusal<S>, usize)>,
}

impl NoNode<&str> {
    /// The same refusals, holding their names: what a skip keeps.
    pub fn into_owned(self) -> NoNode<String> {
        let refusals = self
            .refusals
            .into_iter()
            .map(|(refusal, count)| (refusal.into_owned(), count))
            .collect();
        NoNode { refusals }
    }
}

impl<S: std::fmt::Display> std::fmt::Display for NoNode<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.refusals.is_empty() {
            return f.write_str("no other node exists");
        }
        f.write_str("no other node would take it: ")?;
        for (i, (why, count)) in self.refusals.iter().enumerate() {
            let separator = if i == 0 { "" } else { "; " };
            let nodes = if *count == 1 { "node" } else { "nodes" };
            write!(f, "{separator}{count} {nodes} {why}")?;
        }
        Ok(())
    }
}

/// Why a node would not take the pod, as a phrase after "N nodes"; rendered only for the
/// summary of a pod that stays.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Refusal<S> {
    /// Left out by the strategy.
    Outside(Others),
    Node(NodeRefusal),
    EvictorSelector,
    Admission(Admission),
    /// The resource short.
    Resource(S),
    /// The topology key.
    AntiAffinity(S),
    PreferredAntiAffinity(S),
    /// The topology key and the constraint's `maxSkew`.
    Spread(S, i32),
}

impl Refusal<&str> {
    fn into_owned(self) -> Refusal<String> {
        match self {
            Refusal::Outside(others) => Refusal::Outside(others),
            Refusal::Node(why) => Refusal::Node(why),
            Refusal::EvictorSelector => Refusal::EvictorSelector,
            Refusal::Admission(why) => Refusal::Admission(why),
            Refusal::Resource(name) => Refusal::Resource(name.to_string()),
            Refusal::AntiAffinity(key) => Refusal::AntiAffinity(key.to_string()),
            Refusal::PreferredAntiAffinity(key) => Refusal::PreferredAntiAffinity(key.to_string()),
            Refusal::Spread(key, max_skew) => Refusal::Spread(key.to_string(), max_skew),
        }
    }
}

impl<S: std::fmt::Display> std::fmt::Display for Refusal<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Outside(others) => others.fmt(f),
            Refusal::Node(why) => f.write_str(why.as_str()),
            Refusal::Admission(why) => f.write_str(why.as_str()),
            Refusal::EvictorSelector => f.write_str("not selected by the evictor's nodeSelector"),
            Refusal::Resource(name) => write!(f, "short of free {name}"),
            Refusal::AntiAffinity(key) => {
                write!(f, "in a {key} domain that anti-affinity excludes")
            }
            Refusal::PreferredAntiAffinity(key) => {
                write!(f, "in a {key} domain that preferred anti-affinity avoids")
            }
            Refusal::Spread(key, max_skew) => {
                write!(
                    f,
                    "breaking its topology spread on {key} (maxSkew {max_skew})"
                )
            }
        }
    }
}

/// Why a node's own constraints keep a pod out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Admission {
    // In the order of their texts, as the refusals were sorted before they were typed.
    OutsideAffinity,
    Untolerated,
}

impl Admission {
    pub fn as_str(self) -> &'static str {
        match self {
            Admission::OutsideAffinity => "outside the pod's node selector or affinity",
            Admission::Untolerated => "with a taint the pod does not tolerate",
        }
    }
}

/// Whether a node passes the pod's node-level constraints: taints, node selector and required
/// node affinity; why not when it does not. Shared with strategies that pre-select target nodes.
pub fn node_admits(view: &View, pod: &Pod, node: NodeIx) -> Option<Admission> {
    let state = &view.nodes[node];
    let untolerated = state.node.taints.iter().any(|taint| {
        matches!(
            taint.effect,
            TaintEffect::NoSchedule | TaintEffect::NoExecute
        ) && !pod.tolerations().iter().any(|t| t.tolerates(taint))
    });
    if untolerated {
        return Some(Admission::Untolerated);
    }
    if !matches_node_affinity(pod, &state.node.name, &state.labels) {
        return Some(Admission::OutsideAffinity);
    }
    None
}

/// Whether the node's labels satisfy the pod's node selector and required node affinity.
pub fn matches_node_affinity(pod: &Pod, node_name: &str, labels: &crate::snapshot::Labels) -> bool {
    pod.node_selector
        .iter()
        .all(|(key, value)| labels.get(key) == Some(value))
        && pod
            .node_affinity()
            .is_none_or(|terms| terms.iter().any(|term| term.matches(node_name, labels)))
}

/// Whether the pod tolerates the node's `NoSchedule` and `NoExecute` taints.
pub fn tolerates_node(view: &View, pod: &Pod, node: NodeIx) -> bool {
    view.nodes[node].node.taints.iter().all(|taint| {
        !matches!(
            taint.effect,
            TaintEffect::NoSchedule | TaintEffect::NoExecute
        ) || pod.tolerations().iter().any(|t| t.tolerates(taint))
    })
}

fn refusal<'v>(
    view: &'v View,
    pod: &'v Pod,
    current: Option<NodeIx>,
    node: NodeIx,
    evictor: &EvictorArgs,
    excluded: &[Excluded<'v>],
    spreads: &[SpreadCounts<'v>],
) -> Option<Refusal<&'v str>> {
    let state = &view.nodes[node];
    if !state.can_receive {
        // A node that cannot receive always says why (the view sets both together).
        return Some(Refusal::Node(
            state.refusal.expect("a node that takes no pod says why"),
        ));
    }
    // Cheapest checks first: domain ids before selectors and resource maps.
    for excluded in excluded {
        if excluded.domains.of_node[node].is_some_and(|id| excluded.ids.binary_search(&id).is_ok())
        {
            return Some(if excluded.preferred {
                Refusal::PreferredAntiAffinity(excluded.key)
            } else {
                Refusal::AntiAffinity(excluded.key)
            });
        }
    }
    for spread in spreads {
        if !spread.admits(node) {
            return Some(Refusal::Spread(
                &spread.constraint.topology_key,
                spread.constraint.max_skew,
            ));
        }
    }
    if evictor
        .node_selector
        .as_ref()
        .is_some_and(|s| !s.matches(&state.labels))
    {
        return Some(Refusal::EvictorSelector);
    }
    if let Some(why) = node_admits(view, pod, node) {
        return Some(Refusal::Admission(why));
    }
    if let Some(resource) = short_resource(view, pod, current == Some(node), node) {
        return Some(Refusal::Resource(resource));
    }
    None
}

/// The first resource the pod requests that the node does not have free.
fn short_resource<'v>(view: &View, pod: &'v Pod, here: bool, node: NodeIx) -> Option<&'v str> {
    let allocatable = &view.nodes[node].node.allocatable;
    if allocatable.is_empty() {
        // Capacity not recorded (a hand-written snapshot): do not guess.
        return None;
    }
    // CPU and memory from the plain numbers every node keeps; the rest from the maps.
    let (capacity, used) = (
        view.allocatable_cpu_memory[node],
        view.used_cpu_memory[node],
    );
    // On its own node (a candidate is active there) its requests are counted already.
    let own = |amount: i64| if here { amount } else { 0 };
    pod.requests.iter().find_map(|(name, amount)| {
        let free = match name {
            ResourceName::Cpu if capacity.cpu > 0 => capacity.cpu - (used.cpu - own(amount)),
            ResourceName::Memory if capacity.memory > 0 => {
                capacity.memory - (used.memory - own(amount))
            }
            ResourceName::Other(_) => match allocatable.amount(name) {
                None => return Some(name.as_str()),
                Some(capacity) => capacity - (view.used[node].get(name) - own(amount)),
            },
            _ => match allocatable.amount(name) {
                None => return None,
                Some(capacity) => capacity - (view.used[node].get(name) - own(amount)),
            },
        };
        (free < amount).then_some(name.as_str())
    })
}

/// Domains of one topology key the pod may not land in.
struct Excluded<'v> {
    key: &'v str,
    /// Excluded by preferred terms only (for the refusal's wording).
    preferred: bool,
    domains: &'v Domains,
    /// Sorted: a few ids, looked up for every node searched.
    ids: Vec<u32>,
}

/// Topology domains the pod may not land in: where a pod its own required anti-affinity terms
/// match is, and where a pod whose terms match it is; with `preferred`, the same for preferred
/// anti-affinity terms. Planned landings count; the pod itself does not.
fn excluded_domains<'v>(view: &'v View, pod_index: PodIx, preferred: bool) -> Vec<Excluded<'v>> {
    let pod = view.pod(pod_index);
    // Keyed by (topology key, excluded by preferred terms only).
    let mut excluded: BTreeMap<(&'v str, bool), BTreeSet<u32>> = BTreeMap::new();
    let mut exclude = |key: &'v str, soft: bool, node: NodeIx| {
        if let Some(id) = view.domains(key).and_then(|d| d.of_node[node]) {
            excluded.entry((key, soft)).or_default().insert(id);
        }
    };
    let soft_terms = pod
        .preferred_anti_affinity()
        .iter()
        .filter(|_| preferred)
        .map(|weighted| (&weighted.term, true));
    for (term, soft) in pod
        .anti_affinity
        .iter()
        .map(|t| (t, false))
        .chain(soft_terms)
    {
        for other in view.term_matches(pod_index, term) {
            if let Some(node) = view.location(other, true) {
                exclude(&term.topology_key, soft, node);
            }
        }
    }
    let hard_holders = view.holders_for(pod).map(|h| (h, false));
    // Only asked for, the soft index is not walked at all.
    let soft_holders = preferred
        .then(|| view.soft_holders_for(pod))
        .into_iter()
        .flatten()
        .map(|h| (h, true));
    for (holder, soft) in hard_holders.chain(soft_holders) {
        if holder.pod == pod_index {
            continue;
        }
        let owner = view.pod(holder.pod);
        let term = if soft {
            &owner.preferred_anti_affinity()[holder.term].term
        } else {
            &owner.anti_affinity[holder.term]
        };
        if let Some(node) = view.location(holder.pod, true)
            && view.term_selects(holder.pod, term, pod_index)
        {
            exclude(&term.topology_key, soft, node);
        }
    }
    excluded
        .into_iter()
        .filter_map(|((key, preferred), ids)| {
            Some(Excluded {
                key,
                preferred,
                domains: view.domains(key)?,
                ids: ids.into_iter().collect(),
            })
        })
        .collect()
}

/// Pod counts per domain for one spread constraint, as the scheduler computes them for the
/// pod being placed.
struct SpreadCounts<'c> {
    constraint: &'c SpreadConstraint,
    domains: Option<&'c Domains>,
    /// Count per domain id; `None` for domains no eligible node is in.
    counts: Vec<Option<i64>>,
    global_min: i64,
    self_match: i64,
}

impl<'c> SpreadCounts<'c> {
    fn new(view: &'c View, pod_index: PodIx, constraint: &'c SpreadConstraint) -> SpreadCounts<'c> {
        let pod = view.pod(pod_index);
        let domains = view.domains(&constraint.topology_key);
        let mut counts: Vec<Option<i64>> = vec![None; domains.map_or(0, |d| d.names.len())];
        let simple = is_simple(view, pod, constraint);
        if let Some(domains) = domains {
            if simple {
                // Common case: every Ready node with the key counts; no per-node scan.
                for (id, ready) in domains.has_ready_node.iter().enumerate() {
                    if *ready {
                        counts[id] = Some(0);
                    }
                }
            } else {
                for node in view.nodes.indices() {
                    if let Some(id) = domains.of_node[node]
                        && eligible_node(view, pod, constraint, node)
                    {
                        counts[id as usize] = Some(0);
                    }
                }
            }
            if let Some(selector) = &constraint.selector {
                for other in view.select(&pod.namespace, selector) {
                    if other == pod_index {
                        continue;
                    }
                    let Some(node) = view.location(other, true) else {
                        continue;
                    };
                    let eligible = if simple {
                        view.nodes[node].node.ready
                    } else {
                        eligible_node(view, pod, constraint, node)
                    };
                    if let (true, Some(id)) = (eligible, domains.of_node[node])
                        && let Some(count) = &mut counts[id as usize]
                    {
                        *count += 1;
                    }
                }
            }
        }
        let present = counts.iter().flatten().count() as i64;
        let mut global_min = counts.iter().flatten().copied().min().unwrap_or(0);
        if constraint
            .min_domains
            .is_some_and(|min| present < i64::from(min))
        {
            global_min = 0;
        }
        let self_match = constraint
            .selector
            .as_ref()
            .is_some_and(|s| s.matches(&pod.labels)) as i64;
        SpreadCounts {
            constraint,
            domains,
            counts,
            global_min,
            self_match,
        }
    }

    fn admits(&self, node: NodeIx) -> bool {
        // The scheduler does not place a pod with a hard constraint on a node lacking the key.
        let Some(id) = self.domains.and_then(|d| d.of_node[node]) else {
            return false;
        };
        let count = self.counts[id as usize].unwrap_or(0);
        count + self.self_match - self.global_min <= i64::from(self.constraint.max_skew)
    }
}

/// Whether eligibility for a constraint is just "Ready and has the key": the pod has no node
/// selection to honour and taints are ignored.
pub fn is_simple(view: &View, pod: &Pod, constraint: &SpreadConstraint) -> bool {
    let no_affinity = !constraint.honor_node_affinity
        || (pod.node_selector.is_empty() && pod.node_affinity().is_none());
    let no_taints = !constraint.honor_node_taints || !view.any_taints;
    no_affinity && no_taints
}

/// Whether a node's pods and domain count for a constraint (node inclusion policies).
pub fn eligible_node(view: &View, pod: &Pod, constraint: &SpreadConstraint, node: NodeIx) -> bool {
    let state = &view.nodes[node];
    state.node.ready
        && state.labels.contains_key(&constraint.topology_key)
        && (!constraint.honor_node_affinity
            || matches_node_affinity(pod, &state.node.name, &state.labels))
        && (!constraint.honor_node_taints || tolerates_node(view, pod, node))
}

#[cfg(test)]
mod tests {
    use super::{Admission, NoNode, NodeRefusal, Refusal};

    #[test]
    fn no_node_reads_each_refusal_once_with_its_count_in_text_order() {
        let mut refusals = vec![
            (Refusal::Node(NodeRefusal::NotReady), 2),
            (Refusal::Admission(Admission::Untolerated), 1),
            (Refusal::Node(NodeRefusal::Cordoned), 1),
            (Refusal::Resource("cpu"), 3),
        ];
        refusals.sort();
        let none = NoNode { refusals };
        assert_eq!(
            none.to_string(),
            "no other node would take it: 1 node cordoned; 2 nodes not Ready; 1 node with a \
             taint the pod does not tolerate; 3 nodes short of free cpu"
        );
        let alone: NoNode<&str> = NoNode { refusals: vec![] };
        assert_eq!(alone.to_string(), "no other node exists");
    }
}
