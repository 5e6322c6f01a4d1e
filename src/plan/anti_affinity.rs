//! `RemovePodsViolatingInterPodAntiAffinity`: pods that share a topology domain (an ESXi host,
//! a node, a zone) with a pod their required anti-affinity excludes.
//!
//! Candidates are the pods that own a violated term, taken most-evictable first; each eviction
//! is applied before the next pod is examined, so a pair of replicas loses one pod, not two.
//! A candidate that cannot go (PDB, protection, nowhere better) stays, and its partner is
//! tried instead.

use kube::core::SelectorExt;

use super::view::PodState;
use super::{Context, Planner};
use crate::policy::AntiAffinityArgs;

pub fn run(planner: &mut Planner, context: &Context, args: &AntiAffinityArgs) {
    let view = &planner.view;
    let mut candidates: Vec<usize> = (0..view.snapshot.pods.len())
        .filter(|&p| !view.pod(p).anti_affinity.is_empty())
        .filter(|&p| planner.is_candidate(p))
        .filter(|&p| args.namespaces.admits(&view.pod(p).namespace))
        .filter(|&p| args.label_selector.as_ref().is_none_or(|s| s.matches(&view.pod(p).labels)))
        .collect();
    candidates.sort_by(|&a, &b| view.eviction_order(context.evictor.no_eviction_policy, a, b));

    for pod in candidates {
        if planner.view.state[pod] != PodState::Active {
            continue;
        }
        if let Some(reason) = violation(planner, pod) {
            planner.attempt(context, pod, reason, None, false);
        }
    }
}

/// Why the pod violates one of its required anti-affinity terms right now, if it does.
fn violation(planner: &Planner, pod: usize) -> Option<String> {
    let view = &planner.view;
    let node = view.pod_node[pod]?;
    let host_key = &view.policy.vsphere.labels.host;
    for term in &view.pod(pod).anti_affinity {
        let Some(value) = view.domain(node, &term.topology_key) else {
            continue;
        };
        for other in view.term_matches(pod, term) {
            if view.state[other] != PodState::Active {
                continue;
            }
            let Some(other_node) = view.pod_node[other] else { continue };
            if view.domain(other_node, &term.topology_key) != Some(value) {
                continue;
            }
            let other_pod = view.pod(other);
            let other_node_name = &view.nodes[other_node].node.name;
            let place = if &term.topology_key == host_key {
                format!("ESXi host {value}")
            } else {
                format!("{}={value}", term.topology_key)
            };
            return Some(format!(
                "shares {place} with {} on node {other_node_name}, against its required anti-affinity on {}",
                other_pod.key(),
                term.topology_key
            ));
        }
    }
    None
}
