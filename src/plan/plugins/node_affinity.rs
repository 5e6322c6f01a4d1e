//! `RemovePodsViolatingNodeAffinity`: pods whose node no longer suits their node affinity,
//! usually because its labels changed after they were scheduled. One pass per
//! `nodeAffinityType`, in the order given, as upstream:
//!
//! * `requiredDuringSchedulingIgnoredDuringExecution`: pods with required node affinity whose
//!   node no longer matches it (or their node selector). As upstream, some other node must take
//!   the pod, whatever `nodeFit` says.
//! * `preferredDuringSchedulingIgnoredDuringExecution`: pods some node would score higher by
//!   their preferred terms than their own. Upstream then evicts when the pod fits *any* node,
//!   and its replacement may land on one it prefers no more, every run (kubernetes-sigs/
//!   descheduler#1707); here the node that would take it must be one it prefers more.
//!
//! A node whose host labels cannot be trusted (unmapped, or no vSphere inventory) puts no pod
//! that selects by them in violation: host-level decisions are not taken on stale labels.

use super::{admits, evict_in_order};
use crate::hash::HashMap;
use crate::plan::judge::feasibility::{Allowed, Others, matches_node_affinity};
use crate::plan::view::View;
use crate::plan::view::index::{NodeIx, PerNode, PodIx};
use crate::plan::{Context, EvictionReason, Fit, Planner};
use crate::policy::plugins::{NodeAffinityArgs, NodeAffinityType};
use crate::snapshot::{NodeSelectorTerm, Pod};

pub fn run(planner: &mut Planner, context: &Context, args: &NodeAffinityArgs) {
    for affinity in &args.node_affinity_types {
        match affinity {
            NodeAffinityType::Required => required(planner, context, args),
            NodeAffinityType::Preferred => preferred(planner, context, args),
        }
    }
}

/// Candidates the pass may look at: admitted by the arguments, on a node whose labels the pod's
/// node selection can be judged by.
fn candidates<'p>(
    planner: &'p Planner,
    args: &'p NodeAffinityArgs,
) -> impl Iterator<Item = (PodIx, NodeIx)> + 'p {
    planner.view.pod_indices().filter_map(move |pod| {
        if !planner.is_candidate(pod)
            || !admits(planner, &args.namespaces, args.label_selector.as_ref(), pod)
        {
            return None;
        }
        let node = planner.view.pod_node[pod]?;
        (!reads_untrusted_labels(&planner.view, planner.view.pod(pod), node)).then_some((pod, node))
    })
}

fn required(planner: &mut Planner, context: &Context, args: &NodeAffinityArgs) {
    let view = &planner.view;
    let violating: Vec<(PodIx, EvictionReason)> = candidates(planner, args)
        .filter(|&(pod, node)| {
            let state = &view.nodes[node];
            view.pod(pod).node_affinity().is_some()
                && !matches_node_affinity(view.pod(pod), &state.node.name, &state.labels)
        })
        .map(|(pod, node)| {
            let reason = EvictionReason::RequiredNodeAffinity {
                node: view.nodes[node].node.name.clone(),
            };
            (pod, reason)
        })
        .collect();
    evict_in_order(planner, context, violating, Fit::Required(None));
}

fn preferred(planner: &mut Planner, context: &Context, args: &NodeAffinityArgs) {
    let view = &planner.view;
    // (current score, best score) of each pod another node would suit better.
    let mut scores: HashMap<PodIx, (i64, i64)> = HashMap::default();
    // Pods of one controller carry the same terms: each controller's best score is computed
    // once (for the first pod; a pod whose terms differ, an older revision, gets its own).
    let mut best_of_owner: HashMap<&str, (PodIx, i64)> = HashMap::default();
    for (pod, node) in candidates(planner, args) {
        let pod_ref = view.pod(pod);
        if pod_ref.preferred_node_affinity().is_empty() {
            continue;
        }
        let best_score = || {
            view.nodes
                .indices()
                .map(|other| score(view, pod_ref, other))
                .max()
                .unwrap_or(0)
        };
        let best = match pod_ref.controller() {
            Some(owner) => match best_of_owner.get(owner.uid.as_ref()) {
                Some(&(first, best))
                    if view.pod(first).preferred_node_affinity()
                        == pod_ref.preferred_node_affinity() =>
                {
                    best
                }
                _ => {
                    let best = best_score();
                    best_of_owner.insert(owner.uid.as_ref(), (pod, best));
                    best
                }
            },
            None => best_score(),
        };
        let current = score(view, pod_ref, node);
        if best > current {
            scores.insert(pod, (current, best));
        }
    }
    let mut order: Vec<PodIx> = scores.keys().copied().collect();
    planner
        .view
        .sort_for_eviction(context.evictor.no_eviction_policy, &mut order);
    for pod in order {
        let (current, best) = scores[&pod];
        let view = &planner.view;
        let pod_ref = view.pod(pod);
        let better: PerNode<bool> = view
            .nodes
            .indices()
            .map(|other| score(view, pod_ref, other) > current)
            .collect();
        let node = view.pod_node[pod].expect("candidates are bound to a known node");
        let reason = EvictionReason::PreferredNodeAffinity {
            node: view.nodes[node].node.name.clone(),
            current,
            best,
        };
        let allowed = Allowed {
            nodes: &better,
            others: Others::NotPreferred,
        };
        planner.attempt(context, pod, reason, Fit::Required(Some(allowed)));
    }
}

/// The pod's preferred node affinity score on a node (by its refreshed labels).
fn score(view: &View, pod: &Pod, node: NodeIx) -> i64 {
    let state = &view.nodes[node];
    pod.preference_weight(&state.node.name, &state.labels)
}

/// Whether the pod selects nodes by a label key this tool owns while the node's value of it is
/// not trusted (the node is unmapped, or vSphere was not observed).
fn reads_untrusted_labels(view: &View, pod: &Pod, node: NodeIx) -> bool {
    if view.nodes[node].placement.is_some() {
        return false;
    }
    let keys = &view.policy.vsphere.labels;
    let term_reads = |term: &NodeSelectorTerm| {
        term.expressions
            .iter()
            .any(|requirement| keys.owned().any(|key| key == requirement.key))
    };
    keys.owned().any(|key| pod.node_selector.contains_key(key))
        || pod.node_affinity().into_iter().flatten().any(term_reads)
        || pod
            .preferred_node_affinity()
            .iter()
            .any(|term| term_reads(&term.preference))
}

#[cfg(test)]
mod tests {
    use crate::plan::judge::feasibility::{Others, Refusal};
    use crate::plan::testing::*;
    use crate::plan::{SkipDetail, plan};
    use crate::policy::plugins::{NodeAffinityArgs, NodeAffinityType};
    use crate::policy::{EvictorArgs, Strategy};
    use crate::snapshot::{NodeOperator, NodeRequirement, NodeSelectorTerm, Pod, PreferredTerm};

    fn term(key: &str, value: &str) -> NodeSelectorTerm {
        NodeSelectorTerm {
            expressions: vec![NodeRequirement {
                key: key.to_string(),
                operator: NodeOperator::In,
                values: vec![value.to_string()],
            }],
            fields: Vec::new(),
        }
    }

    fn requiring(key: &str, value: &str) -> impl FnOnce(&mut Pod) {
        let term = term(key, value);
        move |pod| pod.extras_mut().node_affinity = Some(vec![term])
    }

    fn preferring(key: &str, value: &str, weight: i32) -> impl FnOnce(&mut Pod) {
        let preference = term(key, value);
        move |pod| {
            pod.extras_mut()
                .preferred_node_affinity
                .push(PreferredTerm { weight, preference })
        }
    }

    fn affinity(types: &[NodeAffinityType]) -> crate::policy::Policy {
        policy(vec![Strategy::NodeAffinity(NodeAffinityArgs {
            node_affinity_types: types.to_vec(),
            ..NodeAffinityArgs::default()
        })])
    }

    const REQUIRED: &[NodeAffinityType] = &[NodeAffinityType::Required];
    const PREFERRED: &[NodeAffinityType] = &[NodeAffinityType::Preferred];

    #[test]
    fn a_pod_whose_node_no_longer_matches_its_required_affinity_moves_to_one_that_does() {
        let snapshot = three_hosts()
            .label("w2", "disk", "ssd")
            .pod(
                pod("app/moved")
                    .app("a")
                    .on("w1")
                    .with(requiring("disk", "ssd")),
            )
            .pod(
                pod("app/fine")
                    .app("b")
                    .on("w2")
                    .with(requiring("disk", "ssd")),
            )
            .build();
        let plan = plan(&snapshot, &affinity(REQUIRED));
        assert_eq!(evicted(&plan), ["app/moved"]);
        assert_eq!(plan.evictions[0].fits_on.as_deref(), Some("w2 (esxi-2)"));
    }

    #[test]
    fn a_node_selector_alone_is_not_node_affinity() {
        // As upstream: only pods with required node affinity are looked at.
        let snapshot = three_hosts()
            .label("w2", "disk", "ssd")
            .pod(pod("app/a").app("a").on("w1").with(|pod| {
                pod.node_selector
                    .insert("disk".to_string(), "ssd".to_string());
            }))
            .build();
        assert!(plan(&snapshot, &affinity(REQUIRED)).evictions.is_empty());
    }

    #[test]
    fn a_violating_pod_no_node_would_take_stays_even_with_node_fit_off() {
        let snapshot = three_hosts()
            .pod(
                pod("app/a")
                    .app("a")
                    .on("w1")
                    .with(requiring("disk", "ssd")),
            )
            .build();
        let no_fit = EvictorArgs {
            node_fit: false,
            ..EvictorArgs::default()
        };
        let strategy = Strategy::NodeAffinity(NodeAffinityArgs::default());
        let plan = plan(&snapshot, &policy_with(no_fit, vec![strategy]));
        assert_eq!(skipped(&plan), [("app/a".to_string(), "no-feasible-node")]);
    }

    #[test]
    fn a_pod_another_node_suits_better_by_preference_moves_there_only() {
        let snapshot = three_hosts()
            .label("w3", "gpu", "true")
            .pod(
                pod("app/render")
                    .app("a")
                    .on("w1")
                    .with(preferring("gpu", "true", 50)),
            )
            .pod(
                pod("app/placed")
                    .app("b")
                    .on("w3")
                    .with(preferring("gpu", "true", 50)),
            )
            .build();
        let plan = plan(&snapshot, &affinity(PREFERRED));
        assert_eq!(evicted(&plan), ["app/render"]);
        // w2 would take it too, but it prefers w2 no more than w1: only w3 counts.
        assert_eq!(plan.evictions[0].fits_on.as_deref(), Some("w3 (esxi-3)"));
    }

    #[test]
    fn a_preferred_node_that_cannot_take_the_pod_leaves_it_in_place() {
        let snapshot = three_hosts()
            .label("w3", "gpu", "true")
            .with(|snapshot| snapshot.nodes[2].unschedulable = true)
            .pod(
                pod("app/render")
                    .app("a")
                    .on("w1")
                    .with(preferring("gpu", "true", 50)),
            )
            .build();
        let plan = plan(&snapshot, &affinity(PREFERRED));
        assert_eq!(
            skipped(&plan),
            [("app/render".to_string(), "no-feasible-node")]
        );
        assert!(
            matches!(
                &plan.skipped[0].detail,
                SkipDetail::NoFeasibleNode(none) if none.refusals.iter().any(|(why, _)| {
                    *why == Refusal::Outside(Others::NotPreferred)
                })
            ),
            "{}",
            plan.skipped[0].detail
        );
    }

    #[test]
    fn host_labels_that_cannot_be_trusted_put_no_pod_in_violation() {
        // No vSphere inventory: the host label is neither refreshed nor trusted.
        let snapshot = three_hosts()
            .with(|snapshot| snapshot.inventory = None)
            .pod(
                pod("app/a")
                    .app("a")
                    .on("w1")
                    .with(requiring(HOST, "esxi-1")),
            )
            .build();
        let plan = plan(&snapshot, &affinity(REQUIRED));
        assert!(
            plan.evictions.is_empty() && plan.skipped.is_empty(),
            "{plan:?}"
        );
    }
}
