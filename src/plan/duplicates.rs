//! `RemoveDuplicates`: more pods of one owner (with the same images) on a node than an even
//! spread over the nodes that could run them needs.
//!
//! As upstream: pods are grouped by owner and images; the nodes that could run the group (by
//! readiness, taints, node selector and affinity) set the fair share `ceil(pods / nodes)`; a
//! node over its share gives up the excess. Unlike upstream the excess is chosen by the
//! eviction order, and each pod needs a node that would take it.

use std::collections::{BTreeMap, HashMap};

use super::feasibility::node_admits;
use super::{Context, Planner};
use crate::policy::DuplicatesArgs;

/// Pods are duplicates when they share namespace, owners and images.
type GroupKey<'a> = (&'a str, Vec<(&'a str, &'a str)>, &'a [String]);

pub fn run(planner: &mut Planner, context: &Context, args: &DuplicatesArgs) {
    // Group → pods on each node (node index → pods), live pods only. Keys borrow from the
    // snapshot: this runs over every pod.
    let mut groups: HashMap<GroupKey, BTreeMap<usize, Vec<usize>>> = HashMap::new();
    let view = &planner.view;
    for pod in 0..view.snapshot.pods.len() {
        let Some(node) = view.location(pod, false) else {
            continue;
        };
        let pod_ref = view.pod(pod);
        if pod_ref.owners.is_empty()
            || !args.namespaces.admits(&pod_ref.namespace)
            || pod_ref
                .owners
                .iter()
                .any(|o| args.exclude_owner_kinds.contains(&o.kind))
        {
            continue;
        }
        let mut owners: Vec<(&str, &str)> = pod_ref
            .owners
            .iter()
            .map(|o| (o.kind.as_str(), o.name.as_str()))
            .collect();
        owners.sort_unstable();
        let key = (
            pod_ref.namespace.as_str(),
            owners,
            pod_ref.images.as_slice(),
        );
        groups
            .entry(key)
            .or_default()
            .entry(node)
            .or_default()
            .push(pod);
    }
    // Only groups with two pods on one node matter; in key order, for determinism.
    let mut groups: Vec<(GroupKey, BTreeMap<usize, Vec<usize>>)> = groups
        .into_iter()
        .filter(|(_, by_node)| by_node.values().any(|pods| pods.len() > 1))
        .collect();
    groups.sort_by(|a, b| a.0.cmp(&b.0));

    // Nodes that could take a pod that selects no node, on an untainted cluster: the usual
    // group, counted once instead of once per group.
    let view = &planner.view;
    let open_nodes = view.nodes.iter().filter(|n| n.can_receive).count();
    for ((namespace, owners, _), by_node) in groups {
        let owner_names: Vec<String> = owners
            .iter()
            .map(|(kind, name)| format!("{kind}/{name}"))
            .collect();
        let owner = format!("{namespace}/{}", owner_names.join(","));
        let view = &planner.view;
        let sample = view.pod(
            *by_node
                .values()
                .next()
                .and_then(|p| p.first())
                .expect("non-empty group"),
        );
        let targets = if sample.node_selector.is_empty()
            && sample.node_affinity.is_none()
            && !view.any_taints
        {
            open_nodes
        } else {
            (0..view.nodes.len())
                .filter(|&n| view.nodes[n].can_receive && node_admits(view, sample, n).is_none())
                .count()
        };
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
                let reason = format!(
                    "node {} runs {} pods of {owner}, more than the even share of {share} over {targets} nodes",
                    planner.view.nodes[node].node.name,
                    excess + share,
                );
                if let super::Attempt::Evicted { .. } =
                    planner.attempt(context, pod, reason, None, false)
                {
                    excess -= 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::plan::plan;
    use crate::plan::testing::*;
    use crate::policy::{DuplicatesArgs, Strategy};

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
        let snapshot = Lab::new()
            .host("esxi-1")
            .host("esxi-2")
            .node("w1", "esxi-1")
            .node("w2", "esxi-2")
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
}
