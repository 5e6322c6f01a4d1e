//! `HighNodeUtilization`: evict every pod of the underutilized nodes so the scheduler packs
//! them onto the others (with its `MostAllocated` scoring) and the emptied nodes can be scaled
//! down.
//!
//! As upstream: nothing happens when no node, or no more than `numberOfNodes` nodes, are
//! underutilized, when every node is, or when no other node can take pods. Sources go least
//! used first; the destinations' room up to their allocatable bounds what moves.

use super::node_utilization::{Classes, Destinations, Drain, Thresholds, Utilization, drain};
use crate::plan::judge::feasibility::Destination;
use crate::plan::view::index::{NodeIx, PerNode};
use crate::plan::{Context, EvictionReason, Planner};
use crate::policy::UsageSource;
use crate::policy::plugins::HighNodeUtilizationArgs;

pub fn run(planner: &mut Planner, context: &Context, args: &HighNodeUtilizationArgs) {
    let mut utilization =
        Utilization::measure(planner, context, &args.thresholds, UsageSource::Requests);
    let low = utilization.percents(&args.thresholds, 100.0);
    let lows: PerNode<Vec<i64>> = utilization
        .usage
        .indices()
        .map(|node| utilization.amounts_of(node, &low))
        .collect();
    let classes = Classes {
        underutilized: act(planner, context, args, &mut utilization, &lows),
        above_target: Vec::new(),
    };
    let thresholds = Thresholds {
        low: &lows,
        high: None,
    };
    utilization.record(planner, context, &thresholds, &classes);
}

/// Finds the underutilized nodes and packs their pods onto the others; returns them.
fn act(
    planner: &mut Planner,
    context: &Context,
    args: &HighNodeUtilizationArgs,
    utilization: &mut Utilization,
    lows: &PerNode<Vec<i64>>,
) -> Vec<NodeIx> {
    let judged: Vec<NodeIx> = utilization.judged().collect();
    let mut underutilized: Vec<NodeIx> = judged
        .iter()
        .copied()
        .filter(|&node| utilization.all_at_most(node, &lows[node]))
        .collect();
    let view = &planner.view;
    let others: Vec<NodeIx> = judged
        .iter()
        .copied()
        .filter(|node| !underutilized.contains(node) && view.nodes[*node].can_receive)
        .collect();
    if underutilized.is_empty()
        || underutilized.len() <= args.number_of_nodes as usize
        || underutilized.len() == judged.len()
        || others.is_empty()
    {
        return underutilized;
    }
    let found = underutilized.clone();
    // Least used first; node order breaks ties.
    underutilized.sort_by(|&a, &b| utilization.load(a).total_cmp(&utilization.load(b)));
    let ceilings = utilization
        .usage
        .indices()
        .map(|node| utilization.allocatable(node))
        .collect();
    let destinations = Destinations::new(utilization, &others, ceilings, Destination::Fuller);
    let reason = |utilization: &Utilization, source: NodeIx, node| EvictionReason::Underutilized {
        node,
        usage: utilization.usage_of(source, &lows[source], |name, _, _| {
            args.thresholds.contains_key(name)
        }),
    };
    let plan = Drain {
        sources: &underutilized,
        thresholds: &args.thresholds,
        only_thresholding_resources: args.only_thresholding_resources,
        evictable_namespaces: &args.evictable_namespaces,
        limit: None,
        keep_going: &|_, _| true,
        reason: &reason,
    };
    drain(planner, context, utilization, destinations, &plan);
    found
}

#[cfg(test)]
mod tests {
    use crate::plan::plan;
    use crate::plan::testing::{Lab, evicted, pod, policy, resources, three_hosts};
    use crate::policy::Strategy;
    use crate::policy::plugins::HighNodeUtilizationArgs;
    use crate::snapshot::Snapshot;

    fn cpu(low: f64) -> HighNodeUtilizationArgs {
        HighNodeUtilizationArgs {
            thresholds: [("cpu".to_string(), low)].into(),
            ..HighNodeUtilizationArgs::default()
        }
    }

    fn run(snapshot: &Snapshot, args: HighNodeUtilizationArgs) -> crate::plan::Plan {
        plan(snapshot, &policy(vec![Strategy::HighNodeUtilization(args)]))
    }

    fn load(lab: Lab, node: &str, count: usize) -> Lab {
        lab.pods_on(node, count)
    }

    #[test]
    fn the_pods_of_an_underutilized_node_are_packed_onto_the_others() {
        let snapshot = load(load(load(three_hosts(), "w1", 20), "w2", 20), "w3", 2).build();
        let plan = run(&snapshot, cpu(20.0));
        assert_eq!(evicted(&plan), ["app/w3-00", "app/w3-01"]);
        assert!(
            plan.evictions
                .iter()
                .all(|e| e.fits_on.as_deref() != Some("w3 (esxi-3)"))
        );
        assert_eq!(
            plan.evictions[0].reason.to_string(),
            "node w3 is underutilized (cpu 5% <= 20%): its pods are packed onto fuller nodes"
        );
    }

    #[test]
    fn nothing_moves_when_too_few_or_all_nodes_are_underutilized() {
        let snapshot = load(load(load(three_hosts(), "w1", 20), "w2", 20), "w3", 2).build();
        let args = HighNodeUtilizationArgs {
            number_of_nodes: 1,
            ..cpu(20.0)
        };
        assert!(run(&snapshot, args).evictions.is_empty());
        let snapshot = load(three_hosts(), "w3", 2).build();
        assert!(run(&snapshot, cpu(20.0)).evictions.is_empty());
    }

    #[test]
    fn only_thresholding_resources_leaves_pods_that_request_none_of_them() {
        let snapshot = load(load(three_hosts(), "w1", 20), "w2", 20)
            .pod(
                pod("app/gpu")
                    .on("w3")
                    .with(|pod| pod.requests = resources(0, 128, 1)),
            )
            .pod(pod("app/cpu").on("w3"))
            .build();
        let args = HighNodeUtilizationArgs {
            only_thresholding_resources: true,
            ..cpu(20.0)
        };
        assert_eq!(evicted(&run(&snapshot, args)), ["app/cpu"]);
    }
}
