//! `RemovePodsViolatingInterPodAntiAffinity`: pods that share a topology domain (an ESXi host,
//! a node, a zone) with a pod their required anti-affinity excludes.
//!
//! A violation is a pair: a pod owning a required term, and a pod the term matches, in one
//! domain of the term's key. Either pod's eviction clears it: the scheduler checks the terms of
//! pods already placed against an incoming pod, so a replacement of the matched pod cannot land
//! back beside the owner any more than the owner's can. So both are candidates, and the pods
//! evicted are a greedy cover of the violations: the pod that clears the most violations still
//! open goes first (ties in the usual eviction order), then the next, until none is left. Three
//! pods whose terms all match one pod `x` cost one eviction (`x`), not three.
//!
//! A pod that cannot go (protected, a PDB, a limit, nowhere better) leaves the cover, and the
//! violations it was part of are cleared by their other pods, so a protected `x` falls back to
//! evicting the owners of the terms that match it.
//!
//! With `includeSoftConstraints`, preferred terms are covered the same way in a second pass,
//! after the required ones (so a pod breaking both goes for the rule it must keep), but a pod
//! goes only to a place that breaks no preferred anti-affinity, its own or another pod's
//! against it, whatever `nodeFit` says: the scheduler only prefers such places, so without a
//! clean one the move would gain nothing.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::hash::HashMap;
use crate::plan::view::index::PodIx;
use crate::plan::view::{PodState, View};
use crate::plan::{Attempt, Context, EvictionReason, Fit, Planner, SharedDomain, Strength};
use crate::policy::plugins::AntiAffinityArgs;
use crate::snapshot::{AffinityTerm, Pod};

pub fn run(planner: &mut Planner, context: &Context, args: &AntiAffinityArgs) {
    let passes: &[Terms] = if args.include_soft_constraints {
        &[Terms::Required, Terms::Preferred]
    } else {
        &[Terms::Required]
    };
    for &terms in passes {
        let violations = violations(planner, args, terms);
        if !violations.is_empty() {
            cover(planner, context, args, &violations, terms);
        }
    }
}

/// Which anti-affinity terms a pass acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Terms {
    Required,
    Preferred,
}

impl Terms {
    /// The pod's terms of this kind, in order.
    fn of(self, pod: &Pod) -> Vec<&AffinityTerm> {
        match self {
            Terms::Required => pod.anti_affinity.iter().collect(),
            Terms::Preferred => pod
                .preferred_anti_affinity()
                .iter()
                .map(|w| &w.term)
                .collect(),
        }
    }

    fn fit(self) -> Fit<'static> {
        match self {
            Terms::Required => Fit::Move,
            Terms::Preferred => Fit::AvoidPreferred,
        }
    }

    fn strength(self) -> Strength {
        match self {
            Terms::Required => Strength::Required,
            Terms::Preferred => Strength::Preferred,
        }
    }
}

/// One violation: required term `term` of pod `holder` matches pod `matched`, and both are in
/// one domain of the term's topology key.
#[derive(Clone, Copy, Debug)]
struct Violation {
    holder: PodIx,
    term: usize,
    matched: PodIx,
}

/// Whether the strategy's `namespaces` and `labelSelector` let it act on the pod.
fn admits(view: &View, args: &AntiAffinityArgs, pod: PodIx) -> bool {
    let pod = view.pod(pod);
    args.namespaces.admits(&pod.namespace)
        && args
            .label_selector
            .as_ref()
            .is_none_or(|s| s.matches(&pod.labels))
}

/// Every violation right now, each (holder, matched) pair once (its first term), in holder
/// order.
fn violations(planner: &Planner, args: &AntiAffinityArgs, terms: Terms) -> Vec<Violation> {
    let view = &planner.view;
    let mut found = Vec::new();
    for holder in view.pod_indices() {
        let holder_terms = terms.of(view.pod(holder));
        if holder_terms.is_empty() || !planner.is_candidate(holder) || !admits(view, args, holder) {
            continue;
        }
        let mut pairs = Vec::new();
        let node = view.pod_node[holder].expect("candidates are bound to a known node");
        for (term_index, term) in holder_terms.into_iter().enumerate() {
            // Domains are numbered per key: the inner loop compares integers.
            let Some(domains) = view.domains(&term.topology_key) else {
                continue;
            };
            let Some(domain) = domains.of_node[node] else {
                continue;
            };
            for matched in view.term_matches(holder, term) {
                let same_domain = view.state[matched] == PodState::Active
                    && view.pod_node[matched]
                        .is_some_and(|other| domains.of_node[other] == Some(domain));
                if same_domain {
                    pairs.push(Violation {
                        holder,
                        term: term_index,
                        matched,
                    });
                }
            }
        }
        // Two terms matching one pod are one violation; the stable sort keeps the first term.
        pairs.sort_by_key(|v: &Violation| v.matched);
        pairs.dedup_by_key(|v| v.matched);
        found.extend(pairs);
    }
    found
}

/// Evict a greedy cover of the violations: most violations still open first, ties in eviction
/// order; a pod that cannot go drops out and the others cover its violations.
fn cover(
    planner: &mut Planner,
    context: &Context,
    args: &AntiAffinityArgs,
    violations: &[Violation],
    terms: Terms,
) {
    // The violations each pod that may be evicted is part of. The holder was admitted when
    // its violations were found; the matched pod must be a candidate of this strategy too.
    let mut involved: HashMap<PodIx, Vec<usize>> = HashMap::default();
    for (index, violation) in violations.iter().enumerate() {
        involved.entry(violation.holder).or_default().push(index);
        if planner.is_candidate(violation.matched) && admits(&planner.view, args, violation.matched)
        {
            involved.entry(violation.matched).or_default().push(index);
        }
    }
    let mut order: Vec<PodIx> = involved.keys().copied().collect();
    planner
        .view
        .sort_for_eviction(context.evictor.no_eviction_policy, &mut order);
    // A lazy max-heap: counts only fall, so a popped entry whose count is stale is pushed
    // back with its current count, and one that is current is the best pod left.
    let mut heap: BinaryHeap<(usize, Reverse<usize>, PodIx)> = order
        .iter()
        .enumerate()
        .map(|(rank, &pod)| (involved[&pod].len(), Reverse(rank), pod))
        .collect();
    let mut open = vec![true; violations.len()];
    while let Some((count, rank, pod)) = heap.pop() {
        let clears: Vec<usize> = involved[&pod]
            .iter()
            .copied()
            .filter(|&index| open[index])
            .collect();
        if clears.is_empty() {
            continue;
        }
        if clears.len() < count {
            heap.push((clears.len(), rank, pod));
            continue;
        }
        let reason = reason(&planner.view, pod, violations, &clears, terms);
        if let Attempt::Evicted { .. } = planner.attempt(context, pod, reason, terms.fit()) {
            for index in clears {
                open[index] = false;
            }
        }
    }
}

/// Why evicting `pod` helps, in words: the first violation it clears (of its own terms
/// first, the rule it breaks itself) and, when it conflicts with several pods, how many.
fn reason(
    view: &View,
    pod: PodIx,
    violations: &[Violation],
    clears: &[usize],
    terms: Terms,
) -> EvictionReason {
    let first = clears
        .iter()
        .map(|&index| violations[index])
        .find(|violation| violation.holder == pod)
        .unwrap_or(violations[clears[0]]);
    let term = terms.of(view.pod(first.holder))[first.term];
    let key = &term.topology_key;
    let node = view.pod_node[pod].expect("candidates are bound to a known node");
    let value = view
        .domains(key)
        .and_then(|domains| domains.of_node[node].map(|id| &domains.names[id as usize]))
        .expect("a violation is within one domain of its key");
    let own = first.holder == pod;
    let partner = if own { first.matched } else { first.holder };
    let partner_node = view.pod_node[partner].expect("violations are between placed pods");
    let mut partners: Vec<PodIx> = clears
        .iter()
        .map(|&index| {
            let violation = violations[index];
            if violation.holder == pod {
                violation.matched
            } else {
                violation.holder
            }
        })
        .collect();
    partners.sort_unstable();
    partners.dedup();
    EvictionReason::AntiAffinity(SharedDomain {
        strength: terms.strength(),
        key: key.to_string(),
        value: value.to_string(),
        is_host: key == view.policy.vsphere.host_key(),
        partner: view.pod(partner).key(),
        partner_node: view.nodes[partner_node].node.name.clone(),
        own,
        partners: partners.len(),
    })
}

#[cfg(test)]
mod tests {
    use crate::plan::judge::feasibility::Refusal;
    use crate::plan::model::warning::Warning;
    use crate::plan::testing::*;
    use crate::plan::{EvictionReason, SharedDomain, SkipDetail, Strength, plan};
    use crate::policy::plugins::PodLifeTimeArgs;
    use crate::policy::{
        EvictorArgs, Limits, PluginKind, Protections, SYSTEM_CRITICAL_PRIORITY, Strategy,
    };
    use crate::snapshot::{ResourceName, Snapshot};

    /// Two hosts: w1 and w2 on esxi-1, w3 on esxi-2.

    #[test]
    fn replicas_sharing_a_host_lose_exactly_the_newest_one() {
        let snapshot = crowded()
            .pod(web("web-old", "w1", 60))
            .pod(web("web-new", "w2", 5))
            .build();
        let plan = plan(&snapshot, &policy(vec![anti_affinity()]));
        assert_eq!(evicted(&plan), ["shop/web-new"]);
        assert_eq!(plan.evictions[0].fits_on.as_deref(), Some("w3 (esxi-2)"));
        assert!(plan.skipped.is_empty());
    }

    #[test]
    fn three_replicas_on_one_host_lose_two_when_two_hosts_are_free() {
        let snapshot = Lab::new()
            .host("esxi-1")
            .host("esxi-2")
            .host("esxi-3")
            .node("w1", "esxi-1")
            .node("w2", "esxi-1")
            .node("w3", "esxi-1")
            .node("w4", "esxi-2")
            .node("w5", "esxi-3")
            .pod(web("web-a", "w1", 30))
            .pod(web("web-b", "w2", 20))
            .pod(web("web-c", "w3", 10))
            .build();
        let plan = plan(&snapshot, &policy(vec![anti_affinity()]));
        assert_eq!(evicted(&plan), ["shop/web-c", "shop/web-b"]);
        // The second eviction must not count on the host the first one will take.
        assert_ne!(plan.evictions[0].fits_on, plan.evictions[1].fits_on);
    }

    #[test]
    fn a_pod_with_nowhere_better_to_go_stays_and_says_why() {
        let snapshot = crowded()
            .pod(web("web-a", "w1", 30))
            .pod(web("web-b", "w2", 20))
            .pod(web("web-c", "w3", 10))
            .build();
        let plan = plan(&snapshot, &policy(vec![anti_affinity()]));
        assert_b_and_a_stay(&plan, |why| matches!(why, Refusal::AntiAffinity(_)));
    }

    /// No eviction: web-b and web-a stay, no node taking them, web-b for a reason `refused`
    /// accepts.
    fn assert_b_and_a_stay(plan: &crate::plan::Plan, refused: impl Fn(&Refusal<String>) -> bool) {
        assert!(plan.evictions.is_empty(), "{:?}", evicted(plan));
        assert_eq!(
            skipped(plan),
            [
                ("shop/web-b".to_string(), "no-feasible-node"),
                ("shop/web-a".to_string(), "no-feasible-node")
            ]
        );
        assert!(
            matches!(
                &plan.skipped[0].detail,
                SkipDetail::NoFeasibleNode(none) if none.refusals.iter().any(|(why, _)| refused(why))
            ),
            "{}",
            plan.skipped[0].detail
        );
    }

    #[test]
    fn a_pod_two_strategies_keep_is_reported_once_under_each() {
        let snapshot = crowded()
            .pod(web("web-a", "w1", 30))
            .pod(web("web-b", "w2", 20))
            .pod(web("web-c", "w3", 10))
            .build();
        // Every replica is past its lifetime, and no node takes one without sharing a host.
        let lifetime = Strategy::PodLifeTime(PodLifeTimeArgs {
            max_pod_life_time_seconds: Some(60),
            ..PodLifeTimeArgs::default()
        });
        let plan = plan(&snapshot, &policy(vec![anti_affinity(), lifetime]));
        let skips: Vec<(&str, PluginKind)> = plan
            .skipped
            .iter()
            .map(|skip| (skip.pod.as_str(), skip.strategy))
            .collect();
        assert_eq!(
            skips,
            [
                ("web-b", PluginKind::InterPodAntiAffinity),
                ("web-a", PluginKind::InterPodAntiAffinity),
                // PodLifeTime takes the oldest first, as upstream.
                ("web-a", PluginKind::PodLifeTime),
                ("web-b", PluginKind::PodLifeTime),
                ("web-c", PluginKind::PodLifeTime),
            ]
        );
    }

    #[test]
    fn when_the_preferred_pod_is_protected_its_partner_goes_instead() {
        let snapshot = crowded()
            .pod(web("web-old", "w1", 60))
            .pod(web("web-new", "w2", 5).with(|p| p.local_storage = true))
            .build();
        let plan = plan(&snapshot, &policy(vec![anti_affinity()]));
        assert_eq!(evicted(&plan), ["shop/web-old"]);
        assert_eq!(skipped(&plan), [("shop/web-new".to_string(), "protected")]);
    }

    #[test]
    fn a_terminating_partner_is_not_a_peer() {
        let snapshot = crowded()
            .pod(web("web-old", "w1", 60).with(|p| p.terminating = true))
            .pod(web("web-new", "w2", 5))
            .build();
        let plan = plan(&snapshot, &policy(vec![anti_affinity()]));
        assert!(plan.evictions.is_empty(), "{:?}", evicted(&plan));
    }

    #[test]
    fn a_stale_host_label_is_refreshed_before_planning() {
        // w2's VM moved to esxi-1, but its label still says esxi-2.
        let snapshot = moved_worker()
            .pod(web("web-old", "w1", 60))
            .pod(web("web-new", "w2", 5))
            .build();
        let plan = plan(&snapshot, &policy(vec![anti_affinity()]));
        assert_eq!(plan.label_changes.len(), 1);
        assert_eq!(plan.label_changes[0].new.as_deref(), Some("esxi-1"));
        assert_eq!(evicted(&plan), ["shop/web-new"]);
    }

    #[test]
    fn pods_on_unmapped_nodes_are_not_peers_and_unmapped_nodes_are_not_targets() {
        let snapshot = crowded()
            .with(|s| {
                // w2 has no VM any more (e.g. a bare-metal node joined with the same labels).
                let cluster = &mut s.inventory.as_mut().expect("inventory").clusters[0];
                cluster.vms.retain(|vm| vm.name != "w2");
                s.nodes[1].provider_id = None;
            })
            .pod(web("web-old", "w1", 60))
            .pod(web("web-new", "w2", 5))
            .build();
        let plan = plan(&snapshot, &policy(vec![anti_affinity()]));
        assert_eq!(plan.unmapped_nodes, ["w2"]);
        assert!(plan.evictions.is_empty());
        assert!(plan.label_changes.iter().all(|c| c.node != "w2"));
    }

    #[test]
    fn without_an_inventory_host_labels_are_not_trusted() {
        let snapshot = crowded()
            .pod(web("web-old", "w1", 60))
            .pod(web("web-new", "w2", 5))
            .with(|s| s.inventory = None)
            .build();
        let plan = plan(&snapshot, &policy(vec![anti_affinity()]));
        assert!(plan.evictions.is_empty());
        assert!(
            plan.warnings.contains(&Warning::NoInventory),
            "{:?}",
            plan.warnings
        );
    }

    #[test]
    fn node_level_anti_affinity_is_acted_on_too() {
        let snapshot = three_hosts()
            .pod(
                pod("db/pg-0")
                    .app("pg")
                    .on("w1")
                    .anti_affinity(HOSTNAME)
                    .age_minutes(60),
            )
            .pod(
                pod("db/pg-1")
                    .app("pg")
                    .on("w1")
                    .anti_affinity(HOSTNAME)
                    .age_minutes(1),
            )
            .build();
        let plan = plan(&snapshot, &policy(vec![anti_affinity()]));
        assert_eq!(evicted(&plan), ["db/pg-1"]);
    }

    #[test]
    fn the_force_evict_annotation_overrides_protections() {
        let snapshot = crowded()
            .pod(web("web-old", "w1", 60).with(|p| p.local_storage = true))
            .pod(web("web-new", "w2", 5).with(|p| {
                p.local_storage = true;
                p.force_evict = true;
            }))
            .build();
        let plan = plan(&snapshot, &policy(vec![anti_affinity()]));
        assert_eq!(evicted(&plan), ["shop/web-new"]);
    }

    #[test]
    fn with_node_fit_off_no_better_place_is_required() {
        let snapshot = Lab::new()
            .host("esxi-1")
            .node("w1", "esxi-1")
            .node("w2", "esxi-1")
            .pod(web("web-old", "w1", 60))
            .pod(web("web-new", "w2", 5))
            .build();
        let evictor = EvictorArgs {
            node_fit: false,
            protections: Protections::default(),
            ..EvictorArgs::default()
        };
        let plan = plan(&snapshot, &policy_with(evictor, vec![anti_affinity()]));
        assert_eq!(evicted(&plan), ["shop/web-new"]);
        assert_eq!(plan.evictions[0].fits_on, None);
    }

    /// Three hosts: w1 and w2 share esxi-1, w3 and w4 have esxi-2 and esxi-3 to themselves.
    fn three_hosts_one_shared() -> Lab {
        Lab::new()
            .host("esxi-1")
            .host("esxi-2")
            .host("esxi-3")
            .node("w1", "esxi-1")
            .node("w2", "esxi-1")
            .node("w3", "esxi-2")
            .node("w4", "esxi-3")
    }

    /// Three hosts; `cache/x` on w1 (esxi-1) and three clients whose terms exclude it on
    /// esxi-1 (w1, w2), w3 and w4 free on esxi-2 and esxi-3.
    fn clients_around_x(x: PodBuilder) -> Snapshot {
        let client = |name: &str, node: &str, age: i64| {
            pod(&format!("cache/{name}"))
                .app("client")
                .on(node)
                .anti_affinity_against(HOST, "app", "cache")
                .age_minutes(age)
        };
        three_hosts_one_shared()
            .pod(x)
            .pod(client("client-a", "w1", 30))
            .pod(client("client-b", "w2", 20))
            .pod(client("client-c", "w2", 10))
            .build()
    }

    fn x() -> PodBuilder {
        pod("cache/x").app("cache").on("w1").age_minutes(60)
    }

    #[test]
    fn three_pods_whose_terms_match_one_pod_cost_one_eviction_of_that_pod() {
        let plan = plan(&clients_around_x(x()), &policy(vec![anti_affinity()]));
        assert_eq!(evicted(&plan), ["cache/x"]);
        let reason = &plan.evictions[0].reason;
        assert!(
            matches!(
                reason,
                EvictionReason::AntiAffinity(SharedDomain {
                    strength: Strength::Required,
                    own: false,
                    partners: 3,
                    key,
                    ..
                }) if key == HOST
            ),
            "{reason}"
        );
        // It may not land on esxi-1 (w2 has room), where the clients are.
        let fits_on = plan.evictions[0].fits_on.as_deref().expect("checked");
        assert!(!fits_on.contains("esxi-1"), "{fits_on}");
        assert!(plan.skipped.is_empty());
    }

    #[test]
    fn when_the_matched_pod_is_protected_the_term_owners_go_instead() {
        let protected = x().with(|p| p.local_storage = true);
        let plan = plan(&clients_around_x(protected), &policy(vec![anti_affinity()]));
        assert_eq!(
            evicted(&plan),
            ["cache/client-c", "cache/client-b", "cache/client-a"]
        );
        assert_eq!(skipped(&plan), [("cache/x".to_string(), "protected")]);
    }

    #[test]
    fn when_the_matched_pod_has_nowhere_to_go_the_term_owners_go_instead() {
        let pinned = x().with(|p| {
            p.node_selector
                .insert("kubernetes.io/hostname".to_string(), "w1".to_string());
        });
        let plan = plan(&clients_around_x(pinned), &policy(vec![anti_affinity()]));
        assert_eq!(evicted(&plan).len(), 3, "{:?}", evicted(&plan));
        assert_eq!(
            skipped(&plan),
            [("cache/x".to_string(), "no-feasible-node")]
        );
    }

    #[test]
    fn a_matched_pod_the_strategys_label_selector_leaves_out_is_not_evicted() {
        let snapshot = clients_around_x(x());
        let args = crate::policy::plugins::AntiAffinityArgs {
            label_selector: Some(
                crate::policy::parse_selector("app=client")
                    .expect("valid")
                    .into(),
            ),
            ..Default::default()
        };
        let strategy = crate::policy::Strategy::InterPodAntiAffinity(args);
        let plan = plan(&snapshot, &policy(vec![strategy]));
        assert_eq!(evicted(&plan).len(), 3, "{:?}", evicted(&plan));
        assert!(!evicted(&plan).contains(&"cache/x".to_string()));
    }

    /// One case of upstream's `TestPodAntiAffinity` table
    /// (`pkg/framework/plugins/removepodsviolatinginterpodantiaffinity`): the facts, rebuilt
    /// with this crate's builders. Its nodes carry `region`, the terms' topology key.
    struct UpstreamCase {
        description: &'static str,
        nodes: Vec<(&'static str, &'static [(&'static str, &'static str)])>,
        pods: Vec<PodBuilder>,
        limits: Limits,
        node_fit: bool,
        /// What upstream evicts, for the cases where the cover evicts fewer.
        upstream: usize,
        evicted: &'static [&'static str],
    }

    const MAIN_REGION: &[(&str, &str)] = &[("region", "main-region")];
    /// A second node: upstream's single-node cases plan here only with two Ready nodes, and a
    /// node in another region changes no violation.
    const SPARE: (&str, &[(&str, &str)]) = ("n2", &[("region", "spare")]);

    /// A pod on n1 whose term excludes `foo=bar` pods in its region.
    fn holder(name: &str) -> PodBuilder {
        pod(&format!("default/{name}"))
            .on("n1")
            .anti_affinity_against("region", "foo", "bar")
    }

    fn foo_bar(name: &str) -> PodBuilder {
        pod(&format!("default/{name}")).on("n1").label("foo", "bar")
    }

    fn four_pods() -> Vec<PodBuilder> {
        vec![holder("p1"), foo_bar("p2"), holder("p3"), holder("p4")]
    }

    fn upstream_cases() -> Vec<UpstreamCase> {
        let node1 = ("n1", MAIN_REGION);
        vec![
            UpstreamCase {
                description: "Maximum pods to evict - 0",
                nodes: vec![node1, SPARE],
                pods: four_pods(),
                limits: Limits::default(),
                node_fit: false,
                upstream: 3,
                evicted: &["default/p2"],
            },
            UpstreamCase {
                description: "Maximum pods to evict - 3",
                nodes: vec![node1, SPARE],
                pods: four_pods(),
                limits: Limits {
                    per_node: Some(3),
                    ..Limits::default()
                },
                node_fit: false,
                upstream: 3,
                evicted: &["default/p2"],
            },
            UpstreamCase {
                description: "Maximum pods to evict (maxPodsToEvictPerNamespace=3) - 3",
                nodes: vec![node1, SPARE],
                pods: four_pods(),
                limits: Limits {
                    per_namespace: Some(3),
                    ..Limits::default()
                },
                node_fit: false,
                upstream: 3,
                evicted: &["default/p2"],
            },
            UpstreamCase {
                description: "Maximum pods to evict (maxNoOfPodsToEvictTotal)",
                nodes: vec![node1, SPARE],
                pods: four_pods(),
                limits: Limits {
                    per_namespace: Some(3),
                    total: Some(1),
                    ..Limits::default()
                },
                node_fit: false,
                upstream: 1,
                evicted: &["default/p2"],
            },
            UpstreamCase {
                description: "Evict only 1 pod after sorting",
                nodes: vec![node1, SPARE],
                pods: vec![
                    foo_bar("p5")
                        .anti_affinity_against("region", "foo1", "bar1")
                        .with(|p| p.priority = 100),
                    foo_bar("p6")
                        .anti_affinity_against("region", "foo1", "bar1")
                        .with(|p| p.priority = 50),
                    holder("p7").label("foo1", "bar1"),
                ],
                limits: Limits::default(),
                node_fit: false,
                upstream: 1,
                evicted: &["default/p7"],
            },
            UpstreamCase {
                description: "Evicts pod that conflicts with critical pod (but does not evict critical pod)",
                nodes: vec![node1, SPARE],
                pods: vec![
                    holder("p1"),
                    foo_bar("non-evict").with(|p| p.priority = SYSTEM_CRITICAL_PRIORITY),
                ],
                limits: Limits {
                    per_node: Some(1),
                    ..Limits::default()
                },
                node_fit: false,
                upstream: 1,
                evicted: &["default/p1"],
            },
            UpstreamCase {
                description: "Won't evict pods because node selectors don't match available nodes",
                nodes: vec![node1, ("n2", &[("datacenter", "east")])],
                pods: vec![
                    pod("default/p8").on("n1").with(|p| {
                        p.node_selector
                            .insert("datacenter".to_string(), "west".to_string());
                    }),
                    foo_bar("non-evict").with(|p| p.priority = SYSTEM_CRITICAL_PRIORITY),
                ],
                limits: Limits {
                    per_node: Some(1),
                    ..Limits::default()
                },
                node_fit: true,
                upstream: 0,
                evicted: &[],
            },
            UpstreamCase {
                description: "No pod to evicted since all pod terminating",
                nodes: vec![node1, SPARE],
                pods: vec![
                    holder("p9").with(|p| p.terminating = true),
                    holder("p10").with(|p| p.terminating = true),
                ],
                limits: Limits::default(),
                node_fit: false,
                upstream: 0,
                evicted: &[],
            },
            UpstreamCase {
                description: "Won't evict pods because only other node doesn't have enough resources",
                nodes: vec![node1, ("n4", &[])],
                pods: four_pods(),
                limits: Limits {
                    per_node: Some(3),
                    ..Limits::default()
                },
                node_fit: true,
                upstream: 0,
                evicted: &[],
            },
            UpstreamCase {
                description: "Evict pod violating anti-affinity among different node (all pods have anti-affinity)",
                nodes: vec![node1, ("n5", MAIN_REGION)],
                pods: vec![holder("p1"), foo_bar("p11").on("n5")],
                limits: Limits::default(),
                node_fit: false,
                upstream: 1,
                evicted: &["default/p1"],
            },
        ]
    }

    #[test]
    fn upstreams_table_cases_evict_what_the_cover_needs() {
        for case in upstream_cases() {
            let mut lab = Lab::new().host("esxi-1");
            for (name, labels) in &case.nodes {
                lab = lab.node(name, "esxi-1");
                for (key, value) in *labels {
                    lab = lab.label(name, key, value);
                }
            }
            // n4 is upstream's 2 millicores, 2 bytes, 1 pod: too small for any pod.
            let lab = lab.with(|s| {
                if let Some(n4) = s.nodes.iter_mut().find(|n| n.name == "n4") {
                    n4.allocatable.set(ResourceName::Cpu, 2);
                }
            });
            let snapshot = case.pods.into_iter().fold(lab, Lab::pod).build();
            let evictor = EvictorArgs {
                node_fit: case.node_fit,
                ..EvictorArgs::default()
            };
            let mut policy = policy_with(evictor, vec![anti_affinity()]);
            policy.limits = case.limits;
            let plan = plan(&snapshot, &policy);
            assert_eq!(evicted(&plan), case.evicted, "{}", case.description);
            assert!(
                case.evicted.len() <= case.upstream,
                "{}: more than upstream",
                case.description
            );
        }
    }

    fn soft() -> crate::policy::Strategy {
        crate::policy::Strategy::InterPodAntiAffinity(crate::policy::plugins::AntiAffinityArgs {
            include_soft_constraints: true,
            ..Default::default()
        })
    }

    /// A replica that prefers not to share an ESXi host with another.
    fn soft_web(name: &str, node: &str, age: i64) -> PodBuilder {
        pod(&format!("shop/{name}"))
            .app("web")
            .on(node)
            .soft_anti_affinity(HOST, 100)
            .age_minutes(age)
    }

    /// A replica that must not share a site with another.
    fn site_web(name: &str, node: &str, age: i64) -> PodBuilder {
        pod(&format!("shop/{name}"))
            .app("web")
            .on(node)
            .anti_affinity(SITE)
            .age_minutes(age)
    }

    #[test]
    fn replicas_a_vm_move_put_in_one_site_lose_the_newest_to_the_other_site() {
        // w3's VM moved from site-b to site-a, next to web-old's w1.
        let snapshot = moved_across_sites()
            .pod(site_web("web-old", "w1", 60))
            .pod(site_web("web-new", "w3", 5))
            .build();
        let planned = plan(&snapshot, &with_sites(policy(vec![anti_affinity()])));
        assert_eq!(evicted(&planned), ["shop/web-new"]);
        assert_eq!(
            planned.evictions[0].fits_on.as_deref(),
            Some("w4 (esxi-b2)")
        );
        assert!(
            matches!(
                &planned.evictions[0].reason,
                EvictionReason::AntiAffinity(SharedDomain { key, value, is_host: false, .. })
                    if key == SITE && value == "site-a"
            ),
            "{}",
            planned.evictions[0].reason
        );
        // Judged on the recorded labels (no sites in the policy), they are apart.
        let stale = plan_without_sites(&snapshot, anti_affinity());
        assert!(stale.evictions.is_empty(), "{:?}", evicted(&stale));
    }

    #[test]
    fn preferred_site_anti_affinity_moves_the_newest_replica_to_the_other_site() {
        let soft_site = |name: &str, node: &str, age: i64| {
            pod(&format!("shop/{name}"))
                .app("web")
                .on(node)
                .soft_anti_affinity(SITE, 100)
                .age_minutes(age)
        };
        let snapshot = moved_across_sites()
            .pod(soft_site("web-old", "w1", 60))
            .pod(soft_site("web-new", "w3", 5))
            .build();
        let plan = plan(&snapshot, &with_sites(policy(vec![soft()])));
        assert_eq!(evicted(&plan), ["shop/web-new"]);
        assert_eq!(plan.evictions[0].fits_on.as_deref(), Some("w4 (esxi-b2)"));
        let stale = plan_without_sites(&snapshot, soft());
        assert!(stale.evictions.is_empty(), "{:?}", evicted(&stale));
    }

    fn plan_without_sites(snapshot: &Snapshot, strategy: Strategy) -> crate::plan::Plan {
        plan(snapshot, &policy(vec![strategy]))
    }

    #[test]
    fn preferred_anti_affinity_is_acted_on_only_when_soft_constraints_are_included() {
        let snapshot = three_hosts()
            .pod(soft_web("web-old", "w1", 60))
            .pod(soft_web("web-new", "w1", 5))
            .pod(soft_web("web-far", "w2", 30))
            .build();
        let off = plan(&snapshot, &policy(vec![anti_affinity()]));
        assert!(off.evictions.is_empty(), "{:?}", evicted(&off));
        assert!(off.skipped.is_empty());

        let on = plan(&snapshot, &policy(vec![soft()]));
        assert_eq!(evicted(&on), ["shop/web-new"]);
        // esxi-2 holds web-far: the only clean place is esxi-3.
        assert_eq!(on.evictions[0].fits_on.as_deref(), Some("w3 (esxi-3)"));
        assert!(
            matches!(
                &on.evictions[0].reason,
                EvictionReason::AntiAffinity(SharedDomain {
                    strength: Strength::Preferred,
                    own: true,
                    key,
                    ..
                }) if key == HOST
            ),
            "{}",
            on.evictions[0].reason
        );
    }

    #[test]
    fn a_soft_violation_without_a_clean_place_stays_even_with_node_fit_off() {
        // Three replicas, two hosts: whichever moves lands beside another one.
        let snapshot = crowded()
            .pod(soft_web("web-a", "w1", 60))
            .pod(soft_web("web-b", "w2", 5))
            .pod(soft_web("web-c", "w3", 30))
            .build();
        let evictor = EvictorArgs {
            node_fit: false,
            ..EvictorArgs::default()
        };
        let plan = plan(&snapshot, &policy_with(evictor, vec![soft()]));
        assert_b_and_a_stay(
            &plan,
            |why| matches!(why, Refusal::PreferredAntiAffinity(key) if key == HOST),
        );
    }

    #[test]
    fn a_pod_matched_by_soft_terms_goes_where_no_term_owner_is() {
        // Two clients prefer not to share a host with cache/x; x has no terms. Evicting x clears
        // both, and its replacement must avoid the clients' hosts, though only they hold terms.
        let client = |name: &str, node: &str| {
            pod(&format!("cache/{name}"))
                .app("client")
                .on(node)
                .age_minutes(30)
                .with(|p| {
                    p.extras_mut().preferred_anti_affinity.push(
                        crate::snapshot::WeightedAffinityTerm {
                            weight: 50,
                            term: crate::snapshot::AffinityTerm {
                                selector: Some(app_selector("cache")),
                                namespaces: Vec::new(),
                                namespace_selector: None,
                                topology_key: HOST.to_string(),
                            },
                        },
                    );
                })
        };
        let snapshot = three_hosts_one_shared()
            .pod(pod("cache/x").app("cache").on("w1").age_minutes(60))
            .pod(client("client-a", "w1"))
            .pod(client("client-b", "w2"))
            .pod(client("client-c", "w3"))
            .build();
        let plan = plan(&snapshot, &policy(vec![soft()]));
        assert_eq!(evicted(&plan), ["cache/x"]);
        assert_eq!(plan.evictions[0].fits_on.as_deref(), Some("w4 (esxi-3)"));
    }

    #[test]
    fn required_terms_are_covered_before_preferred_ones() {
        // web-new breaks a required term and a preferred one: it goes once, for the required.
        let snapshot = three_hosts()
            .pod(web("web-old", "w1", 60).soft_anti_affinity(HOST, 10))
            .pod(web("web-new", "w1", 5).soft_anti_affinity(HOST, 10))
            .build();
        let plan = plan(&snapshot, &policy(vec![soft()]));
        assert_eq!(evicted(&plan), ["shop/web-new"]);
        assert!(
            matches!(
                &plan.evictions[0].reason,
                EvictionReason::AntiAffinity(SharedDomain {
                    strength: Strength::Required,
                    ..
                })
            ),
            "{}",
            plan.evictions[0].reason
        );
    }
}
