//! "Is there a better place?": whether some other node would take a pod, judged the way the
//! scheduler would, at topology-domain level.
//!
//! A node qualifies when it can receive pods at all (Ready, not cordoned, on a usable ESXi host,
//! selected by the policy), the pod tolerates its taints, matches its node selector and
//! affinity, fits its free resources, and landing there would break none of the pod's required
//! anti-affinity terms, no other pod's anti-affinity against it, and none of its
//! `DoNotSchedule` spread constraints, counting the pods already planned to land elsewhere.
//! This is what keeps evictions from looping: a pod that would come back is not evicted.

use std::collections::{BTreeMap, HashMap, HashSet};

use kube::core::SelectorExt;

use super::view::View;
use crate::policy::EvictorArgs;
use crate::snapshot::{Pod, SpreadConstraint, TaintEffect, WhenUnsatisfiable};

/// Find a node the pod could move to. `Err` carries a summary of why none would take it.
pub fn find_node(
    view: &View,
    pod_index: usize,
    evictor: &EvictorArgs,
    extra: Option<&SpreadConstraint>,
) -> Result<usize, String> {
    let pod = view.pod(pod_index);
    let current = view.pod_node[pod_index];
    let excluded = excluded_domains(view, pod_index);
    let spreads: Vec<SpreadCounts> = pod
        .spread_constraints
        .iter()
        .filter(|c| c.when_unsatisfiable == WhenUnsatisfiable::DoNotSchedule)
        .chain(extra)
        .map(|c| SpreadCounts::new(view, pod_index, c))
        .collect();

    let mut refusals: BTreeMap<String, usize> = BTreeMap::new();
    for node in 0..view.nodes.len() {
        if Some(node) == current {
            continue;
        }
        match refusal(view, pod, node, evictor, &excluded, &spreads) {
            None => return Ok(node),
            Some(why) => *refusals.entry(why).or_insert(0) += 1,
        }
    }
    if refusals.is_empty() {
        return Err("no other node exists".to_string());
    }
    let summary: Vec<String> = refusals
        .into_iter()
        .map(|(why, count)| {
            format!(
                "{count} {} {why}",
                if count == 1 { "node" } else { "nodes" }
            )
        })
        .collect();
    Err(format!(
        "no other node would take it: {}",
        summary.join("; ")
    ))
}

/// Whether a node passes the pod's node-level constraints: taints, node selector and required
/// node affinity. Shared with strategies that pre-select target nodes.
pub fn node_admits(view: &View, pod: &Pod, node: usize) -> Option<&'static str> {
    let state = &view.nodes[node];
    let untolerated = state.node.taints.iter().any(|taint| {
        matches!(
            taint.effect,
            TaintEffect::NoSchedule | TaintEffect::NoExecute
        ) && !pod.tolerations.iter().any(|t| t.tolerates(taint))
    });
    if untolerated {
        return Some("have a taint the pod does not tolerate");
    }
    if !matches_node_affinity(pod, &state.node.name, &state.labels) {
        return Some("do not match the pod's node selector or affinity");
    }
    None
}

fn matches_node_affinity(pod: &Pod, node_name: &str, labels: &crate::snapshot::Labels) -> bool {
    pod.node_selector
        .iter()
        .all(|(key, value)| labels.get(key) == Some(value))
        && pod
            .node_affinity
            .as_ref()
            .is_none_or(|terms| terms.iter().any(|term| term.matches(node_name, labels)))
}

fn tolerates_node(view: &View, pod: &Pod, node: usize) -> bool {
    view.nodes[node].node.taints.iter().all(|taint| {
        !matches!(
            taint.effect,
            TaintEffect::NoSchedule | TaintEffect::NoExecute
        ) || pod.tolerations.iter().any(|t| t.tolerates(taint))
    })
}

fn refusal(
    view: &View,
    pod: &Pod,
    node: usize,
    evictor: &EvictorArgs,
    excluded: &HashSet<(String, String)>,
    spreads: &[SpreadCounts],
) -> Option<String> {
    let state = &view.nodes[node];
    if !state.can_receive {
        return Some(state.refusal.unwrap_or("cannot take pods").to_string());
    }
    if evictor
        .node_selector
        .as_ref()
        .is_some_and(|s| !s.matches(&state.labels))
    {
        return Some("are not selected by the evictor's nodeSelector".to_string());
    }
    if let Some(why) = node_admits(view, pod, node) {
        return Some(why.to_string());
    }
    if let Some(resource) = short_resource(view, pod, node) {
        return Some(format!("lack free {resource}"));
    }
    for (key, value) in &state.labels {
        if excluded.contains(&(key.clone(), value.clone())) {
            return Some(format!(
                "are in {key}={value}, where anti-affinity excludes it"
            ));
        }
    }
    for spread in spreads {
        if !spread.admits(view, node) {
            return Some(format!(
                "would break its topology spread on {} (maxSkew {})",
                spread.constraint.topology_key, spread.constraint.max_skew
            ));
        }
    }
    None
}

/// The first resource the pod requests that the node does not have free.
fn short_resource(view: &View, pod: &Pod, node: usize) -> Option<String> {
    let allocatable = &view.nodes[node].node.allocatable;
    if allocatable.0.is_empty() {
        // Capacity not recorded (a hand-written snapshot): do not guess.
        return None;
    }
    let used = &view.used[node];
    pod.requests.0.iter().find_map(|(name, amount)| {
        let standard = matches!(
            name.as_str(),
            "cpu" | "memory" | "pods" | "ephemeral-storage"
        );
        match allocatable.0.get(name) {
            None if standard => None,
            None => Some(name.clone()),
            Some(capacity) if capacity - used.get(name) < *amount => Some(name.clone()),
            Some(_) => None,
        }
    })
}

/// Topology domains (key, value) the pod may not land in: where a pod its own required
/// anti-affinity terms match is, and where a pod whose terms match it is. Planned landings
/// count; the pod itself does not.
fn excluded_domains(view: &View, pod_index: usize) -> HashSet<(String, String)> {
    let pod = view.pod(pod_index);
    let mut excluded = HashSet::new();
    for term in &pod.anti_affinity {
        for other in view.term_matches(pod_index, term) {
            if let Some(value) = view
                .location(other, true)
                .and_then(|node| view.domain(node, &term.topology_key))
            {
                excluded.insert((term.topology_key.clone(), value.to_string()));
            }
        }
    }
    for holder in view.holders_for(&pod.namespace) {
        if holder.pod == pod_index {
            continue;
        }
        let term = &view.pod(holder.pod).anti_affinity[holder.term];
        if let Some(value) = view
            .location(holder.pod, true)
            .and_then(|node| view.domain(node, &term.topology_key))
            && view.term_selects(holder.pod, term, pod_index)
        {
            excluded.insert((term.topology_key.clone(), value.to_string()));
        }
    }
    excluded
}

/// Pod counts per domain for one spread constraint, as the scheduler computes them for the
/// pod being placed.
struct SpreadCounts<'c> {
    constraint: &'c SpreadConstraint,
    counts: HashMap<String, i64>,
    global_min: i64,
    self_match: i64,
}

impl<'c> SpreadCounts<'c> {
    fn new(view: &View, pod_index: usize, constraint: &'c SpreadConstraint) -> SpreadCounts<'c> {
        let pod = view.pod(pod_index);
        let eligible = |node: usize| eligible_node(view, pod, constraint, node);
        let mut counts: HashMap<String, i64> = HashMap::new();
        for node in 0..view.nodes.len() {
            if eligible(node)
                && let Some(value) = view.domain(node, &constraint.topology_key)
            {
                counts.entry(value.to_string()).or_insert(0);
            }
        }
        if let Some(selector) = &constraint.selector {
            for other in view.select(&pod.namespace, selector) {
                if other == pod_index {
                    continue;
                }
                if let Some(node) = view.location(other, true)
                    && eligible(node)
                    && let Some(value) = view.domain(node, &constraint.topology_key)
                {
                    *counts.entry(value.to_string()).or_insert(0) += 1;
                }
            }
        }
        let domains = counts.len() as i64;
        let mut global_min = counts.values().copied().min().unwrap_or(0);
        if constraint
            .min_domains
            .is_some_and(|min| domains < i64::from(min))
        {
            global_min = 0;
        }
        let self_match = constraint
            .selector
            .as_ref()
            .is_some_and(|s| s.matches(&pod.labels)) as i64;
        SpreadCounts {
            constraint,
            counts,
            global_min,
            self_match,
        }
    }

    fn admits(&self, view: &View, node: usize) -> bool {
        let Some(value) = view.domain(node, &self.constraint.topology_key) else {
            // The scheduler does not place a pod with a hard constraint on a node lacking the key.
            return false;
        };
        let count = self.counts.get(value).copied().unwrap_or(0);
        count + self.self_match - self.global_min <= i64::from(self.constraint.max_skew)
    }
}

/// Whether a node's pods and domain count for a constraint (node inclusion policies).
pub fn eligible_node(view: &View, pod: &Pod, constraint: &SpreadConstraint, node: usize) -> bool {
    let state = &view.nodes[node];
    state.node.ready
        && state.labels.contains_key(&constraint.topology_key)
        && (!constraint.honor_node_affinity
            || matches_node_affinity(pod, &state.node.name, &state.labels))
        && (!constraint.honor_node_taints || tolerates_node(view, pod, node))
}
