//! `RemoveDuplicates`: more pods of one owner (with the same images) on a node than an even
//! spread over the nodes that could run them needs.
//!
//! As upstream: pods are grouped by owner and images; the nodes that could run the group set
//! the fair share `ceil(pods / nodes)`; a node over its share gives up the excess. The nodes
//! that could run the group are the union, over every distinct scheduling constraint in it
//! (node selector, required node affinity, tolerations), of the nodes that can take pods and
//! admit that constraint, counting a constraint only when more than one node admits it (a pod
//! that fits one node alone cannot spread anyway). Unlike upstream the excess is chosen by the
//! eviction order, and each pod needs a node that would take it.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::hash::HashMap;
use crate::plan::judge::feasibility::node_admits;
use crate::plan::view::View;
use crate::plan::view::index::{NodeIx, PerNode, PodIx};
use crate::plan::{Context, EvictionReason, Fit, Planner};
use crate::policy::plugins::DuplicatesArgs;
use crate::snapshot::Pod;

/// Pods are duplicates when they share namespace, owners and images.
type GroupKey<'a> = (&'a str, Vec<(&'a str, &'a str)>, &'a [Arc<str>]);

pub fn run(planner: &mut Planner, context: &Context, args: &DuplicatesArgs) {
    for ((namespace, owners, _), by_node) in duplicate_groups(&planner.view, args) {
        let owner_names: Vec<String> = owners
            .iter()
            .map(|(kind, name)| format!("{kind}/{name}"))
            .collect();
        let owner = format!("{namespace}/{}", owner_names.join(","));
        let targets = target_nodes(&planner.view, &by_node);
        if targets < 2 {
            continue;
        }
        let total: usize = by_node.values().map(Vec::len).sum();
        let share = total.div_ceil(targets);
        for (node, mut pods) in by_node {
            if pods.len() <= share || !planner.view.nodes[node].considered {
                continue;
            }
            planner
                .view
                .sort_for_eviction(context.evictor.no_eviction_policy, &mut pods);
            let mut excess = pods.len() - share;
            for pod in pods {
                if excess == 0 {
                    break;
                }
                if !planner.is_candidate(pod) {
                    continue;
                }
                let reason = EvictionReason::Duplicates {
                    node: planner.view.nodes[node].node.name.clone(),
                    pods: excess + share,
                    owner: owner.clone(),
                    share,
                    targets,
                };
                // A replacement the scheduler would send to a node at the share is not sent
                // (`Planner::landing`, by `over_share_on`).
                if let crate::plan::Attempt::Evicted { .. } =
                    planner.attempt(context, pod, reason, Fit::Move)
                {
                    excess -= 1;
                }
            }
        }
    }
}

/// Groups of duplicates with two pods on one node, each as its pods per node (node index →
/// pods), in key order for determinism. Keys borrow from the snapshot: this runs over every
/// pod.
fn duplicate_groups<'a>(
    view: &View<'a>,
    args: &DuplicatesArgs,
) -> Vec<(GroupKey<'a>, BTreeMap<NodeIx, Vec<PodIx>>)> {
    let mut groups: HashMap<GroupKey, BTreeMap<NodeIx, Vec<PodIx>>> = HashMap::default();
    for pod in view.pod_indices() {
        // Where it counts: on its node, or, evicted by an earlier strategy, where its
        // replacement is expected (it is no candidate then, but takes its place in the share).
        let Some(node) = view.location(pod, true) else {
            continue;
        };
        let pod_ref = view.pod(pod);
        if pod_ref.owners.is_empty()
            || !args.namespaces.admits(&pod_ref.namespace)
            || pod_ref.owners.iter().any(|o| {
                args.exclude_owner_kinds
                    .iter()
                    .any(|kind| kind == o.kind.as_str())
            })
        {
            continue;
        }
        let mut owners: Vec<(&str, &str)> = pod_ref
            .owners
            .iter()
            .map(|o| (o.kind.as_str(), o.name.as_ref()))
            .collect();
        owners.sort_unstable();
        let key = (&*pod_ref.namespace, owners, &pod_ref.images[..]);
        groups
            .entry(key)
            .or_default()
            .entry(node)
            .or_default()
            .push(pod);
    }
    let mut groups: Vec<(GroupKey, BTreeMap<NodeIx, Vec<PodIx>>)> = groups
        .into_iter()
        .filter(|(_, by_node)| by_node.values().any(|pods| pods.len() > 1))
        .collect();
    groups.sort_by(|a, b| a.0.cmp(&b.0));
    groups
}

/// Whether a pod's replacement landing on `node` would put the pod's group over the even share
/// RemoveDuplicates (with `args`) keeps, so that it would evict it again: what a replacement
/// sent by another strategy must not do, or two strategies take turns moving it.
pub(crate) fn over_share_on(view: &View, args: &DuplicatesArgs, pod: PodIx, node: NodeIx) -> bool {
    let moving = view.pod(pod);
    let excluded = moving.owners.iter().any(|o| {
        args.exclude_owner_kinds
            .iter()
            .any(|kind| kind == o.kind.as_str())
    });
    if moving.owners.is_empty() || excluded || !args.namespaces.admits(&moving.namespace) {
        return false;
    }
    // Its group (same owners and images), found among its controller's pods, where they count.
    let mut by_node: BTreeMap<NodeIx, Vec<PodIx>> = BTreeMap::new();
    for &other in view.siblings(pod) {
        let sibling = view.pod(other);
        let same = sibling.images == moving.images
            && sibling.owners.len() == moving.owners.len()
            && sibling.owners.iter().all(|o| {
                moving
                    .owners
                    .iter()
                    .any(|m| m.kind == o.kind && m.name == o.name)
            });
        if let (true, Some(at)) = (same, view.location(other, true)) {
            by_node.entry(at).or_default().push(other);
        }
    }
    if by_node.is_empty() {
        return false;
    }
    let targets = target_nodes(view, &by_node);
    if targets < 2 {
        return false;
    }
    let total: usize = by_node.values().map(Vec::len).sum();
    let there = by_node.get(&node).map_or(0, Vec::len);
    there + 1 > total.div_ceil(targets)
}

/// How many nodes could run the group: the union of the nodes each of its distinct scheduling
/// constraints admits, each counted only when it admits more than one. For a pod that selects
/// no node on an untainted cluster that is every node that can take pods.
fn target_nodes(view: &View, by_node: &BTreeMap<NodeIx, Vec<PodIx>>) -> usize {
    let mut distinct: Vec<&Pod> = Vec::new();
    for &pod in by_node.values().flatten() {
        let pod = view.pod(pod);
        if !distinct.iter().any(|seen| same_constraints(seen, pod)) {
            distinct.push(pod);
        }
    }
    let unconstrained = |pod: &&Pod| pod.node_selector.is_empty() && pod.node_affinity().is_none();
    if !view.any_taints && distinct.iter().any(unconstrained) {
        // That pod could run on every open node, so the union is all of them.
        return view.receiving_nodes;
    }
    let mut target: PerNode<bool> = view.nodes.iter().map(|_| false).collect();
    for pod in distinct {
        let admitting: Vec<NodeIx> = view
            .nodes
            .indices()
            .filter(|&n| view.nodes[n].can_receive && node_admits(view, pod, n).is_none())
            .collect();
        if admitting.len() > 1 {
            for node in admitting {
                target[node] = true;
            }
        }
    }
    target.iter().filter(|&&t| t).count()
}

/// Whether two pods would be admitted by exactly the same nodes: equal node selectors,
/// required node affinity and tolerations (upstream's notion of distinct pods).
fn same_constraints(a: &Pod, b: &Pod) -> bool {
    a.node_selector == b.node_selector
        && a.node_affinity() == b.node_affinity()
        && a.tolerations() == b.tolerations()
}

#[cfg(test)]
mod tests {
    use crate::plan::testing::*;
    use crate::plan::{EvictionReason, plan};
    use crate::policy::Strategy;
    use crate::policy::plugins::DuplicatesArgs;

    #[test]
    fn two_pods_of_one_owner_on_a_node_become_one_when_others_have_room() {
        let snapshot = three_hosts()
            .pod(pod("app/a").app("api").on("w1").age_minutes(60))
            .pod(pod("app/b").app("api").on("w1").age_minutes(10))
            .pod(pod("app/c").app("api").on("w2").age_minutes(60))
            .build();
        let plan = plan(&snapshot, &policy(vec![duplicates()]));
        assert_eq!(evicted(&plan), ["app/b"]);
    }

    #[test]
    fn excluded_owner_kinds_are_left_alone() {
        let snapshot = three_hosts()
            .pod(pod("app/a").app("api").on("w1"))
            .pod(pod("app/b").app("api").on("w1"))
            .build();
        let args = DuplicatesArgs {
            exclude_owner_kinds: vec!["ReplicaSet".to_string()],
            ..Default::default()
        };
        let plan = plan(&snapshot, &policy(vec![Strategy::Duplicates(args)]));
        assert!(plan.evictions.is_empty());
    }

    #[test]
    fn an_even_share_is_not_touched() {
        // Four pods on two usable nodes: two each is the fair share.
        let snapshot = two_hosts()
            .pod(pod("app/a").app("api").on("w1"))
            .pod(pod("app/b").app("api").on("w1"))
            .pod(pod("app/c").app("api").on("w2"))
            .pod(pod("app/d").app("api").on("w2"))
            .build();
        assert!(
            plan(&snapshot, &policy(vec![duplicates()]))
                .evictions
                .is_empty()
        );
    }

    #[test]
    fn target_nodes_come_from_every_pod_of_the_group_not_only_the_first() {
        // app/a, the group's first pod, selects a label no node has (it was scheduled before
        // the label went away); app/b selects nothing and could run on any of the three nodes.
        let snapshot = three_hosts()
            .pod(pod("app/a").app("api").on("w1").age_minutes(60).with(|p| {
                p.node_selector
                    .insert("disk".to_string(), "nvme".to_string());
            }))
            .pod(pod("app/b").app("api").on("w1").age_minutes(10))
            .build();
        let plan = plan(&snapshot, &policy(vec![duplicates()]));
        assert_eq!(evicted(&plan), ["app/b"]);
        assert!(
            matches!(
                plan.evictions[0].reason,
                EvictionReason::Duplicates { targets: 3, .. }
            ),
            "{}",
            plan.evictions[0].reason
        );
    }

    #[test]
    fn a_constraint_only_one_node_admits_adds_no_target() {
        // Three pods pinned to w1 by its hostname, two that select pool=b (w2 and w3). The
        // targets are w2 and w3 (w1 alone admits the pinned ones), so the share is
        // ceil(5 / 2) = 3 and w1 is not over it; counting w1 would make it 2 and try to move
        // a pinned pod that has nowhere to go.
        let pinned = |name: &str| {
            pod(name).app("api").on("w1").with(|p| {
                p.node_selector
                    .insert("kubernetes.io/hostname".to_string(), "w1".to_string());
            })
        };
        let pool = |name: &str| {
            pod(name).app("api").on("w2").with(|p| {
                p.node_selector.insert("pool".to_string(), "b".to_string());
            })
        };
        let snapshot = three_hosts()
            .label("w2", "pool", "b")
            .label("w3", "pool", "b")
            .pod(pinned("app/a"))
            .pod(pinned("app/b"))
            .pod(pinned("app/c"))
            .pod(pool("app/d"))
            .pod(pool("app/e"))
            .build();
        let plan = plan(&snapshot, &policy(vec![duplicates()]));
        assert!(plan.evictions.is_empty(), "{:?}", evicted(&plan));
        assert!(plan.skipped.is_empty(), "{:?}", skipped(&plan));
    }
}
