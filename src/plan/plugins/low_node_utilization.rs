//! `LowNodeUtilization`: when some nodes are underutilized and others above their target,
//! evict pods from the fullest nodes so the scheduler puts them on the underutilized ones.
//!
//! As upstream: nothing happens when no node, or no more than `numberOfNodes` nodes, are
//! underutilized, when every node is, or when none is above target. Sources go fullest first
//! and give up pods until they drop to their target or the underutilized nodes have no room
//! left below theirs. Underutilized nodes must be able to take pods: Ready, not cordoned, and
//! (unlike upstream, which knows no hypervisor) on an ESXi host that is connected and not in
//! maintenance, so nothing is moved onto a host about to be emptied.
//!
//! With actual usage, thresholds on a resource the metrics do not carry (an extended resource)
//! stop the plugin, as upstream's usage client fails on them: a warning, no evictions.

use super::node_utilization::{Classes, Destinations, Drain, Thresholds, Utilization, drain};
use crate::plan::judge::feasibility::Destination;
use crate::plan::model::warning::Warning;
use crate::plan::view::index::{NodeIx, PerNode};
use crate::plan::{Context, EvictionReason, Planner};
use crate::policy::plugins::LowNodeUtilizationArgs;
use crate::policy::{UsageSource, unmeasurable};

pub fn run(planner: &mut Planner, context: &Context, args: &LowNodeUtilizationArgs) {
    if args.usage == UsageSource::KubernetesMetrics
        && let Some(resource) = unmeasurable(&args.thresholds).first()
    {
        // Upstream's usage client fails for the plugin on every run: no evictions.
        let warning = Warning::UnmeasurableResource {
            strategy: context.strategy,
            profile: context.profile.to_string(),
            resource: resource.to_string(),
        };
        planner.plan.warnings.push(warning);
        return;
    }
    let mut utilization = Utilization::measure(planner, context, &args.thresholds, args.usage);
    let (low, high) = thresholds(&utilization, args);
    let classes = act(planner, context, args, &mut utilization, &low, &high);
    let thresholds = Thresholds {
        low: &low,
        high: Some(&high),
    };
    utilization.record(planner, context, &thresholds, &classes);
}

/// Classifies the judged nodes and drains the ones above target; returns the underutilized
/// and the above-target nodes.
fn act(
    planner: &mut Planner,
    context: &Context,
    args: &LowNodeUtilizationArgs,
    utilization: &mut Utilization,
    low: &PerNode<Vec<i64>>,
    high: &PerNode<Vec<i64>>,
) -> Classes {
    let judged: Vec<NodeIx> = utilization.judged().collect();
    let view = &planner.view;
    let underutilized: Vec<NodeIx> = judged
        .iter()
        .copied()
        .filter(|&node| view.nodes[node].can_receive && utilization.all_at_most(node, &low[node]))
        .collect();
    let mut above_target: Vec<NodeIx> = judged
        .iter()
        .copied()
        .filter(|node| !underutilized.contains(node))
        .filter(|&node| utilization.any_above(node, &high[node]))
        .collect();
    if underutilized.is_empty()
        || underutilized.len() <= args.number_of_nodes as usize
        || underutilized.len() == judged.len()
        || above_target.is_empty()
    {
        return Classes {
            underutilized,
            above_target,
        };
    }
    let classes = Classes {
        underutilized: underutilized.clone(),
        above_target: above_target.clone(),
    };
    // Fullest first; node order breaks ties.
    above_target.sort_by(|&a, &b| utilization.load(b).total_cmp(&utilization.load(a)));
    let destinations = Destinations::new(
        utilization,
        &underutilized,
        high.clone(),
        Destination::Underutilized,
    );
    let reason = |utilization: &Utilization, source: NodeIx, node| EvictionReason::AboveTarget {
        node,
        usage: utilization.usage_of(source, &high[source], |_, used, limit| used > limit),
    };
    let plan = Drain {
        sources: &above_target,
        thresholds: &args.thresholds,
        only_thresholding_resources: args.only_thresholding_resources,
        evictable_namespaces: &args.evictable_namespaces,
        limit: args.eviction_limit_per_node,
        keep_going: &|utilization, node| utilization.any_above(node, &high[node]),
        reason: &reason,
    };
    drain(planner, context, utilization, destinations, &plan);
    classes
}

/// The low and high thresholds of every node, as amounts. With deviation thresholds they are
/// distances below and above the mean utilization (clamped to [0, 100]); a resource whose
/// deviation is 0, or that the thresholds leave out, is not judged (both at its allocatable).
/// Otherwise a resource left out is at 100%.
fn thresholds(
    utilization: &Utilization,
    args: &LowNodeUtilizationArgs,
) -> (PerNode<Vec<i64>>, PerNode<Vec<i64>>) {
    if !args.use_deviation_thresholds {
        let low = utilization.percents(&args.thresholds, 100.0);
        let high = utilization.percents(&args.target_thresholds, 100.0);
        return utilization
            .usage
            .indices()
            .map(|node| {
                (
                    utilization.amounts_of(node, &low),
                    utilization.amounts_of(node, &high),
                )
            })
            .unzip();
    }
    let mean = utilization.mean_percents();
    let below = utilization.percents(&args.thresholds, 0.0);
    let above = utilization.percents(&args.target_thresholds, 0.0);
    let low: Vec<f64> = (0..mean.len())
        .map(|i| {
            if below[i] == 0.0 {
                100.0
            } else {
                (mean[i] - below[i]).clamp(0.0, 100.0)
            }
        })
        .collect();
    let high: Vec<f64> = (0..mean.len())
        .map(|i| {
            if below[i] == 0.0 {
                100.0
            } else {
                (mean[i] + above[i]).clamp(0.0, 100.0)
            }
        })
        .collect();
    utilization
        .usage
        .indices()
        .map(|node| {
            (
                utilization.amounts_of(node, &low),
                utilization.amounts_of(node, &high),
            )
        })
        .unzip()
}

#[cfg(test)]
mod upstream_cases;

#[cfg(test)]
mod tests {
    use crate::inventory::{ConnectionState, MaintenanceMode};
    use crate::plan::judge::feasibility::{Destination, Others, Refusal};
    use crate::plan::model::warning::Warning;
    use crate::plan::testing::{Lab, evicted, pod, policy, resources, skipped, three_hosts};
    use crate::plan::{SkipDetail, plan};
    use crate::policy::plugins::LowNodeUtilizationArgs;
    use crate::policy::{Namespaces, PluginKind, Strategy, UsageSource};
    use crate::snapshot::{Metrics, ResourceName, Snapshot};

    /// Thresholds on cpu alone: underutilized at or below `low`%, above target over `high`%.
    fn cpu(low: f64, high: f64) -> LowNodeUtilizationArgs {
        LowNodeUtilizationArgs {
            thresholds: [("cpu".to_string(), low)].into(),
            target_thresholds: [("cpu".to_string(), high)].into(),
            ..LowNodeUtilizationArgs::default()
        }
    }

    fn run(snapshot: &Snapshot, args: LowNodeUtilizationArgs) -> crate::plan::Plan {
        plan(snapshot, &policy(vec![Strategy::LowNodeUtilization(args)]))
    }

    /// `count` pods of 100m cpu each on `node` (4 cpus allocatable: 10 pods are 25%).
    fn load(lab: Lab, node: &str, count: usize) -> Lab {
        lab.pods_on(node, count)
    }

    #[test]
    fn pods_leave_a_node_above_target_until_it_reaches_its_target() {
        // w1 at 75% cpu, w2 and w3 idle: w1 gives up pods until it is at 50%.
        let snapshot = load(three_hosts(), "w1", 30).build();
        let plan = run(&snapshot, cpu(20.0, 50.0));
        assert_eq!(plan.evictions.len(), 10);
        assert!(plan.evictions.iter().all(|e| e.node == "w1"));
        assert!(
            plan.evictions
                .iter()
                .all(|e| e.fits_on.as_deref() != Some("w1 (esxi-1)"))
        );
        assert_eq!(
            plan.evictions[0].reason.to_string(),
            "node w1 is above targetThresholds (cpu 75% > 50%): an underutilized node takes the \
             pod"
        );
    }

    #[test]
    fn nothing_moves_unless_more_nodes_than_number_of_nodes_are_underutilized() {
        let snapshot = load(three_hosts(), "w1", 30).build();
        let args = LowNodeUtilizationArgs {
            number_of_nodes: 2,
            ..cpu(20.0, 50.0)
        };
        assert!(run(&snapshot, args).evictions.is_empty());
    }

    #[test]
    fn nothing_moves_when_every_node_is_underutilized_or_none_is_above_target() {
        let snapshot = load(three_hosts(), "w1", 4).build();
        assert!(run(&snapshot, cpu(20.0, 50.0)).evictions.is_empty());
        let snapshot = load(load(three_hosts(), "w1", 16), "w2", 16).build();
        assert!(run(&snapshot, cpu(20.0, 50.0)).evictions.is_empty());
    }

    #[test]
    fn a_node_on_a_host_in_maintenance_is_no_destination() {
        // w3 is idle, but its host is being emptied: only w2 takes pods.
        let lab = load(three_hosts(), "w1", 30).with(|snapshot| {
            let inventory = snapshot.inventory.as_mut().expect("inventory");
            inventory.clusters[0].hosts[2].in_maintenance_mode = MaintenanceMode::On;
        });
        let plan = run(&lab.build(), cpu(20.0, 50.0));
        assert_eq!(plan.evictions.len(), 10);
        assert!(
            plan.evictions
                .iter()
                .all(|e| e.fits_on.as_deref() == Some("w2 (esxi-2)"))
        );
    }

    #[test]
    fn an_underutilized_node_whose_host_is_down_leaves_nothing_to_do() {
        // w2 is half full; only w3 is idle, and its host is disconnected.
        let lab = load(load(three_hosts(), "w1", 30), "w2", 12).with(|snapshot| {
            let inventory = snapshot.inventory.as_mut().expect("inventory");
            inventory.clusters[0].hosts[2].connection_state = ConnectionState::Disconnected;
        });
        assert!(run(&lab.build(), cpu(20.0, 50.0)).evictions.is_empty());
    }

    #[test]
    fn a_pod_no_underutilized_node_has_room_for_stays() {
        // w2 and w3 may each take 400m below their 50% target; the 1500m pod fits neither.
        let snapshot = load(load(load(three_hosts(), "w1", 30), "w2", 16), "w3", 16)
            .pod(
                pod("big/one")
                    .on("w1")
                    .age_minutes(1)
                    .with(|pod| pod.requests = resources(1500, 128, 1)),
            )
            .build();
        let plan = run(&snapshot, cpu(40.0, 50.0));
        assert!(
            skipped(&plan).contains(&("big/one".to_string(), "no-feasible-node")),
            "{:?}",
            skipped(&plan)
        );
        let skip = plan
            .skipped
            .iter()
            .find(|s| s.pod == "one")
            .expect("skipped");
        assert!(
            matches!(
                &skip.detail,
                SkipDetail::NoFeasibleNode(none) if none.refusals.iter().any(|(why, _)| {
                    *why == Refusal::Outside(Others::NoRoom(Destination::Underutilized))
                })
            ),
            "{}",
            skip.detail
        );
    }

    #[test]
    fn the_eviction_limit_per_node_stops_a_node_and_says_so() {
        let snapshot = load(three_hosts(), "w1", 30).build();
        let args = LowNodeUtilizationArgs {
            eviction_limit_per_node: Some(2),
            ..cpu(20.0, 50.0)
        };
        let plan = run(&snapshot, args);
        assert_eq!(plan.evictions.len(), 2);
        assert_eq!(skipped(&plan).len(), 1);
        assert_eq!(skipped(&plan)[0].1, "limit");
    }

    #[test]
    fn excluded_namespaces_count_but_never_move() {
        let snapshot = load(three_hosts(), "w1", 30).build();
        let args = LowNodeUtilizationArgs {
            evictable_namespaces: Namespaces {
                include: Vec::new(),
                exclude: vec!["app".to_string()],
            },
            ..cpu(20.0, 50.0)
        };
        assert!(run(&snapshot, args).evictions.is_empty());
    }

    #[test]
    fn deviation_thresholds_are_distances_from_the_mean() {
        // Mean cpu 30%: w1 (60%) is above 30+10, w3 (5%) below 30-10, w2 (25%) neither.
        let snapshot = load(load(load(three_hosts(), "w1", 24), "w2", 10), "w3", 2).build();
        let args = LowNodeUtilizationArgs {
            use_deviation_thresholds: true,
            ..cpu(10.0, 10.0)
        };
        let plan = run(&snapshot, args);
        // w1 drops to 40% (8 pods); w3 may rise to 40% (14 pods of room): 8 move, all to w3.
        assert_eq!(plan.evictions.len(), 8);
        assert!(
            plan.evictions
                .iter()
                .all(|e| e.fits_on.as_deref() == Some("w3 (esxi-3)"))
        );
    }

    #[test]
    fn actual_usage_from_metrics_decides_and_a_pod_without_metrics_stays() {
        // By requests every node is idle; by metrics w1 is at 90% cpu.
        let lab = load(three_hosts(), "w1", 3).with(|snapshot| {
            let mut metrics = Metrics::default();
            for (node, cpu) in [("w1", 3600), ("w2", 100), ("w3", 100)] {
                metrics
                    .nodes
                    .insert(node.to_string(), resources(cpu, 1024, 0));
            }
            for (pod, cpu) in [("w1-01", 1200), ("w1-02", 1200)] {
                metrics
                    .pods
                    .insert(("app".to_string(), pod.to_string()), resources(cpu, 64, 0));
            }
            snapshot.metrics = Some(metrics);
        });
        let args = LowNodeUtilizationArgs {
            usage: UsageSource::KubernetesMetrics,
            ..cpu(20.0, 50.0)
        };
        let plan = run(&lab.build(), args);
        // All alike, so in name order; w1-00 has no metrics, the other two bring w1 to 30%.
        assert_eq!(skipped(&plan), [("app/w1-00".to_string(), "no-metrics")]);
        assert_eq!(evicted(&plan), ["app/w1-01", "app/w1-02"]);
    }

    #[test]
    fn actual_usage_of_an_extended_resource_evicts_nothing_and_says_why() {
        // By requests, w1's pods of one gpu each would move; metrics carry no gpu.
        let lab = three_hosts().pods_on("w1", 4).with(|snapshot| {
            for node in &mut snapshot.nodes {
                node.allocatable
                    .set(ResourceName::new("nvidia.com/gpu"), 4000);
            }
            for pod in &mut snapshot.pods {
                pod.requests.set(ResourceName::new("nvidia.com/gpu"), 1000);
            }
            snapshot.metrics = Some(Metrics::default());
        });
        let args = LowNodeUtilizationArgs {
            thresholds: [("nvidia.com/gpu".to_string(), 20.0)].into(),
            target_thresholds: [("nvidia.com/gpu".to_string(), 50.0)].into(),
            ..LowNodeUtilizationArgs::default()
        };
        let snapshot = lab.build();
        assert_eq!(run(&snapshot, args.clone()).evictions.len(), 2);
        let args = LowNodeUtilizationArgs {
            usage: UsageSource::KubernetesMetrics,
            ..args
        };
        let plan = run(&snapshot, args);
        assert!(plan.evictions.is_empty());
        assert_eq!(
            plan.warnings,
            [Warning::UnmeasurableResource {
                strategy: PluginKind::LowNodeUtilization,
                profile: "test".to_string(),
                resource: "nvidia.com/gpu".to_string(),
            }]
        );
    }

    #[test]
    fn only_thresholding_resources_leaves_pods_that_request_none_of_them() {
        // w1 is above target by pods; its pods without a cpu request stay.
        let lab = three_hosts().pods_on("w1", 60).with(|snapshot| {
            for pod in snapshot
                .pods
                .iter_mut()
                .filter(|p| p.name.as_str() < "w1-50")
            {
                pod.requests.set(ResourceName::Cpu, 0);
            }
        });
        let args = LowNodeUtilizationArgs {
            thresholds: [("cpu".to_string(), 20.0), ("pods".to_string(), 20.0)].into(),
            target_thresholds: [("cpu".to_string(), 50.0), ("pods".to_string(), 50.0)].into(),
            only_thresholding_resources: true,
            ..LowNodeUtilizationArgs::default()
        };
        let snapshot = lab.build();
        let plan = run(&snapshot, args.clone());
        assert!(!plan.evictions.is_empty());
        assert!(plan.evictions.iter().all(|e| e.pod.as_str() >= "w1-50"));
        let args = LowNodeUtilizationArgs {
            only_thresholding_resources: false,
            ..args
        };
        let plan = run(&snapshot, args);
        assert!(plan.evictions.iter().any(|e| e.pod.as_str() < "w1-50"));
    }
}
