//! `RemovePodsViolatingTopologySpreadConstraint`: domains holding more matching pods than
//! `maxSkew` allows over the emptiest domain.
//!
//! Unlike upstream, every matching pod counts (as the scheduler counts them), not only
//! evictable ones; `minDomains` is honoured; and pods move from the fullest domain one at a
//! time, most-evictable first, each only when a node in a domain with room would take it.
//!
//! Pods that declare no constraint get the policy's `defaultConstraints` (kube-scheduler's
//! PodTopologySpread defaults), over the pods of their owner as the scheduler selects them:
//! see [`default_selector`].

use std::borrow::Cow;
use std::collections::BTreeSet;

use kube::core::Expression;

use crate::hash::HashSet;
use crate::plan::judge::feasibility::{eligible_node, is_simple};
use crate::plan::view::index::{NodeIx, PerNode, PodIx};
use crate::plan::view::{Domains, PodState, View};
use crate::plan::{Attempt, Context, EvictionReason, Fit, Planner, Skew};
use crate::policy::plugins::{DefaultConstraint, TopologySpreadArgs};
use crate::snapshot::{OwnerKind, Pod, Requirements, SpreadConstraint, WhenUnsatisfiable};

/// Labels that tell pods of one owner apart, which a selector of the owner's pods leaves out:
/// StatefulSet pod names and indexes, revision hashes (which differ across a rollout, while
/// the StatefulSet's or DaemonSet's selector does not look at them), Job completion indexes.
/// `pod-template-hash` stays: a ReplicaSet's selector includes it.
const PER_POD_LABELS: &[&str] = &[
    "statefulset.kubernetes.io/pod-name",
    "apps.kubernetes.io/pod-index",
    "controller-revision-hash",
    "pod-template-generation",
    "batch.kubernetes.io/job-completion-index",
    "batch.kubernetes.io/controller-uid",
    "controller-uid",
];

/// Whether the scheduler's default constraints use the owner's selector (with Services).
fn selecting_owner(kind: &OwnerKind) -> bool {
    matches!(
        kind,
        OwnerKind::ReplicaSet | OwnerKind::StatefulSet | OwnerKind::ReplicationController
    )
}

pub fn run(planner: &mut Planner, context: &Context, args: &TopologySpreadArgs) {
    for namespace in planner.view.pod_namespaces() {
        if !args.namespaces.admits(namespace) {
            continue;
        }
        for (owner, constraint) in constraints(planner, namespace, args) {
            let defaulted = matches!(constraint, Cow::Owned(_));
            balance(planner, context, args, owner, &constraint, defaulted);
        }
    }
}

/// The distinct constraints of a namespace's pods, each with a pod that carries it (whose node
/// affinity and tolerations decide which nodes count, as for the scheduler).
fn constraints<'a>(
    planner: &Planner<'a>,
    namespace: &str,
    args: &TopologySpreadArgs,
) -> Vec<(PodIx, Cow<'a, SpreadConstraint>)> {
    let view = &planner.view;
    let mut seen = BTreeSet::new();
    // Pods of one controller carry the same constraints: the cheap key skips the costly one.
    let mut seen_owners: HashSet<(&str, usize)> = HashSet::default();
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
        let own = pod_ref.spread_constraints.iter().map(Cow::Borrowed);
        let defaulted = pod_ref
            .spread_constraints
            .is_empty()
            .then(|| defaults(pod_ref, &args.default_constraints))
            .into_iter()
            .flatten()
            .map(Cow::Owned);
        for (index, constraint) in own.chain(defaulted).enumerate() {
            let wanted = match constraint.when_unsatisfiable {
                WhenUnsatisfiable::DoNotSchedule => args.do_not_schedule,
                WhenUnsatisfiable::ScheduleAnyway => args.schedule_anyway,
            };
            if !wanted {
                continue;
            }
            if let Some(owner) = pod_ref.controller()
                && !seen_owners.insert((owner.uid.as_ref(), index))
            {
                continue;
            }
            let identity = format!(
                "{constraint:?}|{:?}|{:?}|{:?}",
                pod_ref.node_selector,
                pod_ref.node_affinity(),
                pod_ref.tolerations()
            );
            if seen.insert(identity) {
                found.push((pod, constraint));
            }
        }
    }
    found
}

/// The policy's default constraints as they apply to a pod that declares none, each with the
/// pod's [`default_selector`]; none when it has no such selector.
fn defaults(pod: &Pod, defaults: &[DefaultConstraint]) -> Vec<SpreadConstraint> {
    if defaults.is_empty() {
        return Vec::new();
    }
    let Some(selector) = default_selector(pod) else {
        return Vec::new();
    };
    defaults
        .iter()
        .map(|d| SpreadConstraint {
            max_skew: d.max_skew,
            topology_key: d.topology_key.clone(),
            when_unsatisfiable: d.when_unsatisfiable,
            selector: Some(selector.clone()),
            min_domains: d.min_domains,
            honor_node_affinity: d.honor_node_affinity,
            honor_node_taints: d.honor_node_taints,
        })
        .collect()
}

/// The selector the scheduler gives a pod's default constraints: that of the Services,
/// ReplicaSets, StatefulSets and ReplicationControllers selecting it. A snapshot holds none of
/// those objects, so it is read off the pod: its labels but those that tell pods of one owner
/// apart ([`PER_POD_LABELS`]), which selects the pods of its ReplicaSet or StatefulSet (as the
/// owner's own selector would) and, for a pod without a controller, the pods a Service selecting
/// it would likely select. Pods of any other controller (DaemonSets, Jobs, custom ones) get no
/// default constraints, nor does a pod left with no label: the scheduler skips an empty selector.
fn default_selector(pod: &Pod) -> Option<Requirements> {
    if pod
        .controller()
        .is_some_and(|owner| !selecting_owner(&owner.kind))
    {
        return None;
    }
    let mut selector = Requirements::default();
    for (key, value) in &pod.labels {
        if !PER_POD_LABELS.contains(&key) {
            selector.push(Expression::Equal(key.to_string(), value.to_string()));
        }
    }
    (!selector.selects_all()).then_some(selector)
}

fn balance(
    planner: &mut Planner,
    context: &Context,
    args: &TopologySpreadArgs,
    owner: PodIx,
    constraint: &SpreadConstraint,
    defaulted: bool,
) {
    let Some(selector) = &constraint.selector else {
        return;
    };
    let Some(domains) = planner.view.shared_domains(&constraint.topology_key) else {
        return;
    };
    let (mut counts, members) = tally(&planner.view, owner, constraint, selector, &domains);
    let present = counts.iter().flatten().count() as i64;
    if present == 0 {
        return;
    }
    let max_skew = i64::from(constraint.max_skew);
    let fewer_domains_than_required = constraint
        .min_domains
        .is_some_and(|min| present < i64::from(min));
    let mut tried: HashSet<PodIx> = HashSet::default();
    loop {
        let global_min = if fewer_domains_than_required {
            0
        } else {
            counts.iter().flatten().copied().min().unwrap_or(0)
        };
        let over = over_limit(&counts, &domains, global_min + max_skew);
        if over.is_empty() {
            return;
        }

        let mut moved = false;
        'domains: for (domain, count) in over {
            let mut candidates: Vec<PodIx> = members[domain]
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
                let excess = count - global_min - max_skew;
                let reason =
                    skew_reason(constraint, &domains.names[domain], count, excess, defaulted);
                let fit = if args.topology_balance_node_fit {
                    Fit::Balance(constraint)
                } else {
                    Fit::Unchecked
                };
                let attempt = planner.attempt(context, pod, reason, fit);
                if let Attempt::Evicted { landing } = attempt {
                    move_one(&mut counts, &domains, domain, landing);
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

/// The pods `selector` matches in the owner's namespace, counted per domain id with the pods
/// themselves; `None` for a domain without an eligible node, which the skew leaves out.
fn tally(
    view: &View,
    owner: PodIx,
    constraint: &SpreadConstraint,
    selector: &Requirements,
    domains: &Domains,
) -> (Vec<Option<i64>>, Vec<Vec<PodIx>>) {
    let owner_pod = view.pod(owner);
    let simple = is_simple(view, owner_pod, constraint);
    let mut counts: Vec<Option<i64>> = vec![None; domains.names.len()];
    // In the common case eligibility is "Ready with the key": known per domain without
    // looking at every node, which would make balancing every workload quadratic.
    let eligible: Option<PerNode<bool>> = if simple {
        for (id, ready) in domains.has_ready_node.iter().enumerate() {
            if *ready {
                counts[id] = Some(0);
            }
        }
        None
    } else {
        let eligible: PerNode<bool> = view
            .nodes
            .indices()
            .map(|n| eligible_node(view, owner_pod, constraint, n))
            .collect();
        for node in view.nodes.indices().filter(|&n| eligible[n]) {
            if let Some(id) = domains.of_node[node] {
                counts[id as usize] = Some(0);
            }
        }
        Some(eligible)
    };
    let is_eligible = |node: NodeIx| match &eligible {
        Some(eligible) => eligible[node],
        None => view.nodes[node].node.ready,
    };
    let mut members: Vec<Vec<PodIx>> = vec![Vec::new(); domains.names.len()];
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
    (counts, members)
}

/// Domains holding more than `limit` matching pods, fullest first (ties by name, for
/// determinism).
fn over_limit(counts: &[Option<i64>], domains: &Domains, limit: i64) -> Vec<(usize, i64)> {
    let mut over: Vec<(usize, i64)> = counts
        .iter()
        .enumerate()
        .filter_map(|(id, count)| count.map(|c| (id, c)))
        .filter(|(_, count)| *count > limit)
        .collect();
    over.sort_by(|a, b| {
        b.1.cmp(&a.1)
            .then(domains.names[a.0].cmp(&domains.names[b.0]))
    });
    over
}

/// Why a pod of a domain holding `count` matching pods, `excess` over what the emptiest
/// domain allows, is evicted.
fn skew_reason(
    constraint: &SpreadConstraint,
    domain: &str,
    count: i64,
    excess: i64,
    defaulted: bool,
) -> EvictionReason {
    EvictionReason::Spread(Skew {
        key: constraint.topology_key.to_string(),
        domain: domain.to_string(),
        count,
        excess,
        max_skew: constraint.max_skew,
        schedule_anyway: constraint.when_unsatisfiable == WhenUnsatisfiable::ScheduleAnyway,
        defaulted,
    })
}

/// Moves an evicted pod's count out of `domain` into the domain it is expected to land in
/// (or, unchecked, the emptiest domain, where the scheduler would put it).
fn move_one(counts: &mut [Option<i64>], domains: &Domains, domain: usize, landing: Option<NodeIx>) {
    if let Some(count) = &mut counts[domain] {
        *count -= 1;
    }
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
}

#[cfg(test)]
mod tests {
    use crate::plan::testing::*;
    use crate::plan::{EvictionReason, Skew, plan};
    use crate::policy::Strategy;
    use crate::policy::plugins::{DefaultConstraint, TopologySpreadArgs};
    use crate::snapshot::WhenUnsatisfiable::{DoNotSchedule, ScheduleAnyway};
    use crate::snapshot::{Pod, ResourceName};
    use std::sync::Arc;

    fn api(name: &str, node: &str, age: i64) -> PodBuilder {
        pod(&format!("app/{name}"))
            .app("api")
            .on(node)
            .spread(HOST, 1, DoNotSchedule)
            .age_minutes(age)
    }

    #[test]
    fn a_site_skewed_by_a_vm_move_gives_one_pod_to_the_other_site() {
        // w3's VM moved from site-b to site-a: all three pods are in site-a now, though w3's
        // recorded label still says site-b.
        let over_sites =
            |p: &mut Pod| Arc::make_mut(&mut p.spread_constraints)[0].topology_key = SITE.into();
        let snapshot = moved_across_sites()
            .pod(api("api-a", "w1", 60).with(over_sites))
            .pod(api("api-b", "w2", 50).with(over_sites))
            .pod(api("api-c", "w3", 3).with(over_sites))
            .build();
        let planned = plan(&snapshot, &with_sites(policy(vec![spread()])));
        assert_eq!(evicted(&planned), ["app/api-c"]);
        assert_eq!(
            planned.evictions[0].fits_on.as_deref(),
            Some("w4 (esxi-b2)")
        );
        // Without sites the label is not ours: judged as recorded, the spread holds.
        let stale = plan(&snapshot, &policy(vec![spread()]));
        assert!(stale.evictions.is_empty(), "{:?}", evicted(&stale));
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
        let snapshot = two_hosts()
            .pod(api("api-a", "w1", 60))
            .pod(api("api-b", "w1", 50))
            .pod(api("api-c", "w2", 40).with(|p| p.local_storage = true))
            .build();
        let plan = plan(&snapshot, &policy(vec![spread()]));
        assert!(plan.evictions.is_empty(), "{:?}", evicted(&plan));
    }

    #[test]
    fn min_domains_counts_missing_domains_as_empty() {
        let three_domains =
            |p: &mut Pod| Arc::make_mut(&mut p.spread_constraints)[0].min_domains = Some(3);
        let snapshot = two_hosts()
            .pod(api("api-a", "w1", 60).with(three_domains))
            .pod(api("api-b", "w1", 50).with(three_domains))
            .pod(api("api-c", "w2", 40).with(three_domains))
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
        let anyway = |name: &str, age: i64| {
            pod(&format!("app/{name}"))
                .app("api")
                .on("w1")
                .spread(HOST, 1, ScheduleAnyway)
                .age_minutes(age)
        };
        let snapshot = two_hosts()
            .pod(anyway("a", 60))
            .pod(anyway("b", 50))
            .pod(anyway("c", 40))
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
                    node.allocatable.set(ResourceName::Cpu, 50);
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

    fn defaults(defaults: Vec<DefaultConstraint>, soft: bool) -> Strategy {
        Strategy::TopologySpread(TopologySpreadArgs {
            schedule_anyway: soft,
            default_constraints: defaults,
            ..Default::default()
        })
    }

    fn host_spread() -> Vec<DefaultConstraint> {
        vec![DefaultConstraint {
            max_skew: 1,
            topology_key: HOST.to_string(),
            when_unsatisfiable: DoNotSchedule,
            min_domains: None,
            honor_node_affinity: true,
            honor_node_taints: false,
        }]
    }

    /// A replica of a ReplicaSet with no spread constraint of its own.
    fn plain(name: &str, node: &str, age: i64) -> PodBuilder {
        pod(&format!("app/{name}"))
            .app("api")
            .label("pod-template-hash", "5d8f")
            .on(node)
            .age_minutes(age)
    }

    #[test]
    fn default_constraints_spread_pods_that_declare_none() {
        let snapshot = three_hosts()
            .pod(plain("api-a", "w1", 60))
            .pod(plain("api-b", "w1", 50))
            .pod(plain("api-c", "w1", 40))
            .build();
        assert!(
            plan(&snapshot, &policy(vec![spread()]))
                .evictions
                .is_empty()
        );
        let plan = plan(&snapshot, &policy(vec![defaults(host_spread(), false)]));
        assert_eq!(evicted(&plan), ["app/api-c", "app/api-b"]);
        // One to each other host, whichever first.
        let mut landings: Vec<_> = plan.evictions.iter().map(|e| e.fits_on.clone()).collect();
        landings.sort();
        assert_eq!(
            landings,
            [
                Some("w2 (esxi-2)".to_string()),
                Some("w3 (esxi-3)".to_string())
            ]
        );
        assert!(
            matches!(
                plan.evictions[0].reason,
                EvictionReason::Spread(Skew {
                    defaulted: true,
                    ..
                })
            ),
            "{}",
            plan.evictions[0].reason
        );
    }

    #[test]
    fn a_pods_own_constraints_replace_the_defaults() {
        // maxSkew 2 of their own: 3 on esxi-1 against 0 is over by one, not by two.
        let snapshot = three_hosts()
            .pod(plain("api-a", "w1", 60).spread(HOST, 2, DoNotSchedule))
            .pod(plain("api-b", "w1", 50).spread(HOST, 2, DoNotSchedule))
            .pod(plain("api-c", "w1", 40).spread(HOST, 2, DoNotSchedule))
            .build();
        let plan = plan(&snapshot, &policy(vec![defaults(host_spread(), false)]));
        assert_eq!(evicted(&plan), ["app/api-c"]);
    }

    #[test]
    fn the_system_defaults_are_soft_and_balanced_only_with_schedule_anyway() {
        let mut lab = three_hosts();
        for (i, age) in [60, 50, 40, 30, 20].into_iter().enumerate() {
            lab = lab.pod(plain(&format!("api-{i}"), "w1", age));
        }
        let snapshot = lab.build();
        let system = crate::policy::plugins::DefaultConstraint::system();
        let hard_only = plan(&snapshot, &policy(vec![defaults(system.clone(), false)]));
        assert!(hard_only.evictions.is_empty());
        // kubernetes.io/hostname maxSkew 3: 5 against 0 moves two, to 3, 1, 1.
        let plan = plan(&snapshot, &policy(vec![defaults(system, true)]));
        assert_eq!(evicted(&plan), ["app/api-4", "app/api-3"]);
    }

    #[test]
    fn statefulset_replicas_are_one_group_and_daemonset_pods_get_no_defaults() {
        let member = |name: &str, owner: &str, revision: &str| {
            plain(name, "w1", 30)
                .owner(owner, "db")
                .label("statefulset.kubernetes.io/pod-name", name)
                .label("controller-revision-hash", revision)
        };
        let snapshot = |owner: &str| {
            // One revision: two would be a rollout, which no strategy evicts from (the golden
            // spread-default-constraints shows revisions are not grouped apart either).
            three_hosts()
                .pod(member("db-0", owner, "r1"))
                .pod(member("db-1", owner, "r1"))
                .build()
        };
        let stateful = plan(
            &snapshot("StatefulSet"),
            &policy(vec![defaults(host_spread(), false)]),
        );
        assert_eq!(evicted(&stateful).len(), 1, "{:?}", stateful.skipped);
        let daemons = plan(
            &snapshot("DaemonSet"),
            &policy(vec![defaults(host_spread(), false)]),
        );
        assert!(daemons.evictions.is_empty());
        assert!(daemons.skipped.is_empty(), "{:?}", daemons.skipped);
    }
}
