//! `RemovePodsViolatingTopologySpreadConstraint`: domains holding more matching pods than
//! `maxSkew` allows over the emptiest domain.
//!
//! Unlike upstream, every matching pod counts (as the scheduler counts them), not only
//! evictable ones; `minDomains` is honoured; and pods move from the fullest domain one at a
//! time, most-evictable first, each only when a node in a domain with room would take it.

use std::collections::{BTreeSet, HashSet};

use kube::core::SelectorExt;

use crate::plan::feasibility::{eligible_node, is_simple};
use crate::plan::view::PodState;
use crate::plan::{Attempt, Context, Fit, Planner};
use crate::policy::TopologySpreadArgs;
use crate::snapshot::{SpreadConstraint, WhenUnsatisfiable};

pub fn run(planner: &mut Planner, context: &Context, args: &TopologySpreadArgs) {
    for namespace in planner.view.pod_namespaces() {
        if !args.namespaces.admits(namespace) {
            continue;
        }
        for (owner, constraint) in constraints(planner, namespace, args) {
            balance(planner, context, args, owner, constraint);
        }
    }
}

/// The distinct constraints of a namespace's pods, each with a pod that carries it (whose node
/// affinity and tolerations decide which nodes count, as for the scheduler).
fn constraints<'a>(
    planner: &Planner<'a>,
    namespace: &str,
    args: &TopologySpreadArgs,
) -> Vec<(usize, &'a SpreadConstraint)> {
    let view = &planner.view;
    let mut seen = BTreeSet::new();
    // Pods of one controller carry the same constraints: the cheap key skips the costly one.
    let mut seen_owners: HashSet<(&str, usize)> = HashSet::new();
    let mut found = Vec::new();
    for &pod in view.namespace_pods(namespace) {
        if view.state[pod] != PodState::Active {
            continue;
        }
        let pod_ref = view.pod(pod);
        if args
            .label_selector
            .as_ref()
            .is_some_and(|s| !s.matches(&pod_ref.labels))
        {
            continue;
        }
        for (index, constraint) in pod_ref.spread_constraints.iter().enumerate() {
            let wanted = match constraint.when_unsatisfiable {
                WhenUnsatisfiable::DoNotSchedule => args.do_not_schedule,
                WhenUnsatisfiable::ScheduleAnyway => args.schedule_anyway,
            };
            if !wanted {
                continue;
            }
            if let Some(owner) = pod_ref.controller()
                && !seen_owners.insert((owner.uid.as_str(), index))
            {
                continue;
            }
            let identity = format!(
                "{constraint:?}|{:?}|{:?}|{:?}",
                pod_ref.node_selector, pod_ref.node_affinity, pod_ref.tolerations
            );
            if seen.insert(identity) {
                found.push((pod, constraint));
            }
        }
    }
    found
}

fn balance(
    planner: &mut Planner,
    context: &Context,
    args: &TopologySpreadArgs,
    owner: usize,
    constraint: &SpreadConstraint,
) {
    let Some(selector) = &constraint.selector else {
        return;
    };
    let view = &planner.view;
    let Some(domains) = view.shared_domains(&constraint.topology_key) else {
        return;
    };
    let owner_pod = view.pod(owner);
    let simple = is_simple(view, owner_pod, constraint);
    // Count and members per domain id; `None` for domains without an eligible node.
    let mut counts: Vec<Option<i64>> = vec![None; domains.names.len()];
    // In the common case eligibility is "Ready with the key": known per domain without
    // looking at every node, which would make balancing every workload quadratic.
    let eligible: Option<Vec<bool>> = if simple {
        for (id, ready) in domains.has_ready_node.iter().enumerate() {
            if *ready {
                counts[id] = Some(0);
            }
        }
        None
    } else {
        let eligible: Vec<bool> = (0..view.nodes.len())
            .map(|n| eligible_node(view, owner_pod, constraint, n))
            .collect();
        for node in (0..view.nodes.len()).filter(|&n| eligible[n]) {
            if let Some(id) = domains.of_node[node] {
                counts[id as usize] = Some(0);
            }
        }
        Some(eligible)
    };
    let is_eligible = |node: usize| match &eligible {
        Some(eligible) => eligible[node],
        None => view.nodes[node].node.ready,
    };
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); domains.names.len()];
    for pod in view.select(&owner_pod.namespace, selector) {
        let Some(node) = view.location(pod, false) else {
            continue;
        };
        if !is_eligible(node) {
            continue;
        }
        let Some(id) = domains.of_node[node] else {
            continue;
        };
        if let Some(count) = &mut counts[id as usize] {
            *count += 1;
            members[id as usize].push(pod);
        }
    }
    let present = counts.iter().flatten().count() as i64;
    if present == 0 {
        return;
    }
    let max_skew = i64::from(constraint.max_skew);
    let fewer_domains_than_required = constraint
        .min_domains
        .is_some_and(|min| present < i64::from(min));
    let mut tried: HashSet<usize> = HashSet::new();
    loop {
        let global_min = if fewer_domains_than_required {
            0
        } else {
            counts.iter().flatten().copied().min().unwrap_or(0)
        };
        // Domains over the limit, fullest first (ties by name, for determinism).
        let mut over: Vec<(usize, i64)> = counts
            .iter()
            .enumerate()
            .filter_map(|(id, count)| count.map(|c| (id, c)))
            .filter(|(_, count)| count - global_min > max_skew)
            .collect();
        if over.is_empty() {
            return;
        }
        over.sort_by(|a, b| {
            b.1.cmp(&a.1)
                .then(domains.names[a.0].cmp(&domains.names[b.0]))
        });

        let mut moved = false;
        'domains: for (domain, count) in over {
            let mut candidates: Vec<usize> = members[domain]
                .iter()
                .copied()
                .filter(|&p| planner.is_candidate(p) && !tried.contains(&p))
                .filter(|&p| {
                    args.label_selector
                        .as_ref()
                        .is_none_or(|s| s.matches(&planner.view.pod(p).labels))
                })
                .collect();
            planner
                .view
                .sort_for_eviction(context.evictor.no_eviction_policy, &mut candidates);
            for pod in candidates {
                tried.insert(pod);
                let reason = format!(
                    "{} {} holds {count} matching pods, {} more than the emptiest domain allows (maxSkew {max_skew}{})",
                    constraint.topology_key,
                    domains.names[domain],
                    count - global_min - max_skew,
                    if constraint.when_unsatisfiable == WhenUnsatisfiable::ScheduleAnyway {
                        ", ScheduleAnyway"
                    } else {
                        ""
                    }
                );
                let fit = if args.topology_balance_node_fit {
                    Fit::Balance(constraint)
                } else {
                    Fit::Unchecked
                };
                let attempt = planner.attempt(context, pod, reason, fit);
                if let Attempt::Evicted { landing } = attempt {
                    if let Some(count) = &mut counts[domain] {
                        *count -= 1;
                    }
                    // Account the pod where it is expected to land (or, unchecked, in the
                    // emptiest domain, where the scheduler would put it).
                    let target = landing
                        .and_then(|n| domains.of_node[n])
                        .map(|id| id as usize)
                        .filter(|&id| counts[id].is_some())
                        .or_else(|| {
                            counts
                                .iter()
                                .enumerate()
                                .filter_map(|(id, c)| c.map(|c| (c, &domains.names[id], id)))
                                .min()
                                .map(|(_, _, id)| id)
                        });
                    if let Some(count) = target.and_then(|id| counts[id].as_mut()) {
                        *count += 1;
                    }
                    moved = true;
                    break 'domains;
                }
            }
        }
        if !moved {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::plan::plan;
    use crate::plan::testing::*;
    use crate::policy::{Strategy, TopologySpreadArgs};
    use crate::snapshot::WhenUnsatisfiable::{DoNotSchedule, ScheduleAnyway};

    fn api(name: &str, node: &str, age: i64) -> PodBuilder {
        pod(&format!("app/{name}"))
            .app("api")
            .on(node)
            .spread(HOST, 1, DoNotSchedule)
            .age_minutes(age)
    }

    #[test]
    fn a_skewed_host_gives_one_pod_to_the_empty_host() {
        let snapshot = three_hosts()
            .pod(api("api-a", "w1", 60))
            .pod(api("api-b", "w2", 60))
            .pod(api("api-c", "w2", 3))
            .build();
        let plan = plan(&snapshot, &policy(vec![spread()]));
        assert_eq!(evicted(&plan), ["app/api-c"]);
        assert_eq!(plan.evictions[0].fits_on.as_deref(), Some("w3 (esxi-3)"));
    }

    #[test]
    fn protected_pods_still_count_in_the_spread() {
        // Upstream counts only evictable pods and would see esxi-2 as empty here.
        let snapshot = Lab::new()
            .host("esxi-1")
            .host("esxi-2")
            .node("w1", "esxi-1")
            .node("w2", "esxi-2")
            .pod(api("api-a", "w1", 60))
            .pod(api("api-b", "w1", 50))
            .pod(api("api-c", "w2", 40).with(|p| p.local_storage = true))
            .build();
        let plan = plan(&snapshot, &policy(vec![spread()]));
        assert!(plan.evictions.is_empty(), "{:?}", evicted(&plan));
    }

    #[test]
    fn min_domains_counts_missing_domains_as_empty() {
        let snapshot = Lab::new()
            .host("esxi-1")
            .host("esxi-2")
            .node("w1", "esxi-1")
            .node("w2", "esxi-2")
            .pod(api("api-a", "w1", 60).with(|p| p.spread_constraints[0].min_domains = Some(3)))
            .pod(api("api-b", "w1", 50).with(|p| p.spread_constraints[0].min_domains = Some(3)))
            .pod(api("api-c", "w2", 40).with(|p| p.spread_constraints[0].min_domains = Some(3)))
            .build();
        // Two domains exist, three are required: the global minimum is 0, so esxi-1 with 2
        // pods is over maxSkew 1; but no node would take a pod without breaking it, so it stays.
        let plan = plan(&snapshot, &policy(vec![spread()]));
        assert!(plan.evictions.is_empty());
        assert_eq!(skipped(&plan).len(), 2);
        assert!(
            skipped(&plan)
                .iter()
                .all(|(_, reason)| *reason == "no-feasible-node")
        );
    }

    #[test]
    fn soft_constraints_are_balanced_only_when_asked() {
        let snapshot = Lab::new()
            .host("esxi-1")
            .host("esxi-2")
            .node("w1", "esxi-1")
            .node("w2", "esxi-2")
            .pod(
                pod("app/a")
                    .app("api")
                    .on("w1")
                    .spread(HOST, 1, ScheduleAnyway)
                    .age_minutes(60),
            )
            .pod(
                pod("app/b")
                    .app("api")
                    .on("w1")
                    .spread(HOST, 1, ScheduleAnyway)
                    .age_minutes(50),
            )
            .pod(
                pod("app/c")
                    .app("api")
                    .on("w1")
                    .spread(HOST, 1, ScheduleAnyway)
                    .age_minutes(40),
            )
            .build();
        assert!(
            plan(&snapshot, &policy(vec![spread()]))
                .evictions
                .is_empty()
        );
        let both = Strategy::TopologySpread(TopologySpreadArgs {
            schedule_anyway: true,
            ..Default::default()
        });
        assert_eq!(evicted(&plan(&snapshot, &policy(vec![both]))), ["app/c"]);
    }

    #[test]
    fn spread_and_duplicates_together_move_one_pod_not_two() {
        let snapshot = three_hosts()
            .pod(api("api-a", "w1", 60))
            .pod(api("api-b", "w2", 60))
            .pod(api("api-c", "w2", 3))
            .build();
        let plan = plan(&snapshot, &policy(vec![spread(), duplicates()]));
        assert_eq!(evicted(&plan), ["app/api-c"]);
    }

    #[test]
    fn with_topology_balance_node_fit_off_pods_go_even_when_no_node_fits_now() {
        // esxi-2 and esxi-3 have no CPU to spare: an autoscaler would have to add a node.
        let snapshot = three_hosts()
            .with(|s| {
                for node in s.nodes.iter_mut().filter(|n| n.name != "w1") {
                    node.allocatable.0.insert("cpu".to_string(), 50);
                }
            })
            .pod(api("api-a", "w1", 60))
            .pod(api("api-b", "w1", 50))
            .pod(api("api-c", "w1", 40))
            .build();
        let checked = plan(&snapshot, &policy(vec![spread()]));
        assert!(checked.evictions.is_empty(), "{:?}", evicted(&checked));
        assert!(
            skipped(&checked)
                .iter()
                .all(|(_, reason)| *reason == "no-feasible-node")
        );
        let unchecked = Strategy::TopologySpread(TopologySpreadArgs {
            topology_balance_node_fit: false,
            ..Default::default()
        });
        // The profile's nodeFit is on (the default here): topologyBalanceNodeFit: false wins
        // for this strategy.
        let plan = plan(&snapshot, &policy(vec![unchecked]));
        assert_eq!(evicted(&plan), ["app/api-c", "app/api-b"]);
        assert!(plan.evictions.iter().all(|e| e.fits_on.is_none()));
        assert!(plan.skipped.is_empty(), "{:?}", skipped(&plan));
    }
}
