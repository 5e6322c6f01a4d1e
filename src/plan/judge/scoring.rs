//! Which node the default kube-scheduler would give a pod's replacement: its score plugins, as
//! far as a snapshot holds what they read.
//!
//! The scheduler filters nodes (what [`super::feasibility`] checks), then scores the feasible
//! ones with the default profile's plugins, each 0–100, summed by weight, and binds to the best.
//! Modelled, with the default profile's weights:
//!
//! | plugin | weight | what it prefers |
//! |---|---|---|
//! | `TaintToleration` | 3 | fewer `PreferNoSchedule` taints the pod does not tolerate |
//! | `PodTopologySpread` | 2 | fewer matching pods in the node's domains, for the pod's `ScheduleAnyway` constraints, or the system defaults (`kubernetes.io/hostname` maxSkew 3, `topology.kubernetes.io/zone` maxSkew 5, over the pods of the same controller) when it declares none |
//! | `InterPodAffinity` | 2 | for each of the pod's preferred terms, per pod the term matches in the node's domain of its key: + weight (affinity), − weight (anti-affinity) |
//! | `NodeResourcesFit` (`LeastAllocated`) | 1 | more free CPU and memory after placing it |
//! | `NodeResourcesBalancedAllocation` | 1 | CPU and memory used in equal shares |
//!
//! Left out, because a snapshot does not hold what they read or the policy's pods do not use it:
//! `NodeAffinity` preferences, the part of `InterPodAffinity` that scores by the terms of pods
//! already placed (their preferred terms, and required affinity, against the incoming pod),
//! `ImageLocality` (images on nodes), `VolumeBinding` (volumes). Pods that request no CPU or
//! memory are scored as asking the scheduler's non-zero defaults (100m, 200Mi); pods already on a
//! node count with what they request.
//!
//! The scheduler also scores only a sample of the feasible nodes on large clusters
//! ([`sample_size`]), starting where its last search ended; the planner's search starts at a
//! place derived from the pod, so the prediction is the scheduler's choice for one such sample,
//! and ties go to the first node found, where the scheduler picks one of them at random. When
//! the pod's own node would not take it back (its partner is there, its spread forbids it), no
//! return is possible and only the reported node depends on the sample: then the first
//! [`SMALL_SAMPLE`] feasible nodes are scored, which keeps `plan()` near-linear.

use crate::plan::view::index::{NodeIx, PodIx, TablePosition};
use crate::plan::view::{CpuMemory, Domains, View, ZONE};
use crate::snapshot::{Pod, SpreadConstraint, TaintEffect, WhenUnsatisfiable};

const TAINT_TOLERATION: i64 = 3;
const POD_TOPOLOGY_SPREAD: i64 = 2;
const INTER_POD_AFFINITY: i64 = 2;
const LEAST_ALLOCATED: i64 = 1;
const BALANCED_ALLOCATION: i64 = 1;
const MAX_SCORE: i64 = 100;

/// The scheduler's requests for a pod that asks none: 100m CPU, 200Mi memory (in the snapshot's
/// milli-units).
const DEFAULT_CPU: i64 = 100;
const DEFAULT_MEMORY: i64 = 200 * 1024 * 1024 * 1000;

const HOSTNAME: &str = "kubernetes.io/hostname";

/// The sample for a pod that cannot return to its node: only the node reported as taking it
/// depends on it, and every node searched costs on large clusters.
pub const SMALL_SAMPLE: usize = 32;

/// How many feasible nodes the scheduler looks for before it scores (its
/// `percentageOfNodesToScore` default): every node up to 100, else an adaptive share, 50% less
/// 1% per 125 nodes, at least 5% and at least 100 nodes.
pub fn sample_size(nodes: usize) -> usize {
    if nodes < 100 {
        return nodes;
    }
    let percent = 50usize.saturating_sub(nodes / 125).max(5);
    (nodes * percent / 100).max(100)
}

/// The candidate the scheduler would choose: the highest weighted score, the first found on a
/// tie. `candidates` are feasible nodes in search order; `None` when there are none.
pub fn choose(view: &View, pod_index: PodIx, candidates: &[NodeIx]) -> Option<NodeIx> {
    let scores = scores(view, pod_index, candidates);
    let mut best: Option<(i64, NodeIx)> = None;
    for (&node, score) in candidates.iter().zip(scores) {
        if best.is_none_or(|(top, _)| score > top) {
            best = Some((score, node));
        }
    }
    best.map(|(_, node)| node)
}

/// The weighted sum of every modelled plugin's normalized score, per candidate.
pub fn scores(view: &View, pod_index: PodIx, candidates: &[NodeIx]) -> Vec<i64> {
    let pod = view.pod(pod_index);
    let taints = normalize_reverse(
        &candidates
            .iter()
            .map(|&node| untolerated_soft_taints(view, pod, node))
            .collect::<Vec<_>>(),
    );
    let spread = spread_scores(view, pod_index, candidates);
    let asked = asked(pod);
    let affinity = inter_pod_affinity_scores(view, pod_index, candidates);
    candidates
        .iter()
        .enumerate()
        .map(|(i, &node)| {
            let (least, balanced) = resource_scores(view, pod_index, asked, node);
            TAINT_TOLERATION * taints[i]
                + POD_TOPOLOGY_SPREAD * spread[i]
                + INTER_POD_AFFINITY * affinity[i]
                + LEAST_ALLOCATED * least
                + BALANCED_ALLOCATION * balanced
        })
        .collect()
}

/// `PreferNoSchedule` taints of the node the pod does not tolerate.
fn untolerated_soft_taints(view: &View, pod: &Pod, node: NodeIx) -> i64 {
    view.nodes[node]
        .node
        .taints
        .iter()
        .filter(|taint| {
            taint.effect == TaintEffect::PreferNoSchedule
                && !pod.tolerations().iter().any(|t| t.tolerates(taint))
        })
        .count() as i64
}

/// Fewer is better: the scheduler's reverse normalization to 0–100 by the highest raw value.
fn normalize_reverse(raw: &[i64]) -> Vec<i64> {
    let max = raw.iter().copied().max().unwrap_or(0);
    raw.iter()
        .map(|&value| {
            if max == 0 {
                MAX_SCORE
            } else {
                MAX_SCORE - value * MAX_SCORE / max
            }
        })
        .collect()
}

/// `LeastAllocated` and `BalancedAllocation` over CPU and memory, with the pod placed on the
/// node (and, on the node it leaves, without its own usage).
fn resource_scores(view: &View, pod_index: PodIx, asked: CpuMemory, node: NodeIx) -> (i64, i64) {
    let capacity = view.allocatable_cpu_memory[node];
    let used = view.used_cpu_memory[node];
    let here = view.pod_node[pod_index] == Some(node) && view.location(pod_index, false).is_some();
    let own = if here {
        CpuMemory::of(&view.pod(pod_index).requests)
    } else {
        CpuMemory::default()
    };
    let mut least = 0;
    let mut fractions = [0f64; 2];
    let pairs = [
        (capacity.cpu, used.cpu - own.cpu + asked.cpu),
        (capacity.memory, used.memory - own.memory + asked.memory),
    ];
    for (i, (capacity, requested)) in pairs.into_iter().enumerate() {
        if capacity <= 0 {
            continue;
        }
        least += ((capacity - requested).max(0) * MAX_SCORE) / capacity;
        fractions[i] = (requested as f64 / capacity as f64).min(1.0);
    }
    let deviation = (fractions[0] - fractions[1]).abs() / 2.0;
    let balanced = ((1.0 - deviation) * MAX_SCORE as f64) as i64;
    (least / 2, balanced)
}

/// What the scheduler counts a pod as asking: its requests, or its non-zero defaults.
fn asked(pod: &Pod) -> CpuMemory {
    let requests = CpuMemory::of(&pod.requests);
    CpuMemory {
        cpu: if requests.cpu == 0 {
            DEFAULT_CPU
        } else {
            requests.cpu
        },
        memory: if requests.memory == 0 {
            DEFAULT_MEMORY
        } else {
            requests.memory
        },
    }
}

/// `InterPodAffinity` for the pod's own preferred terms: per term, matching pods per domain of
/// its key (planned landings counted, the pod being replaced not), times its weight, added for
/// affinity and taken away for anti-affinity; normalized to 0–100 between the lowest and the
/// highest candidate, all 0 when they are equal, as the scheduler's.
fn inter_pod_affinity_scores(view: &View, pod_index: PodIx, candidates: &[NodeIx]) -> Vec<i64> {
    let pod = view.pod(pod_index);
    if pod.preferred_affinity().is_empty() && pod.preferred_anti_affinity().is_empty() {
        return vec![0; candidates.len()];
    }
    let terms = pod
        .preferred_affinity()
        .iter()
        .map(|weighted| (weighted, 1))
        .chain(
            pod.preferred_anti_affinity()
                .iter()
                .map(|weighted| (weighted, -1)),
        );
    let mut raw = vec![0i64; candidates.len()];
    for (weighted, sign) in terms {
        let term = &weighted.term;
        let Some(domains) = view.domains(&term.topology_key) else {
            continue;
        };
        let mut counts = vec![0i64; domains.names.len()];
        for other in view.term_matches(pod_index, term) {
            if let Some(id) = view.location(other, true).and_then(|n| domains.of_node[n]) {
                counts[id as usize] += 1;
            }
        }
        for (score, &node) in raw.iter_mut().zip(candidates) {
            if let Some(id) = domains.of_node[node] {
                *score += sign * i64::from(weighted.weight) * counts[id as usize];
            }
        }
    }
    let max = raw.iter().copied().max().unwrap_or(0);
    let min = raw.iter().copied().min().unwrap_or(0);
    if max == min {
        return vec![0; candidates.len()];
    }
    raw.iter()
        .map(|&score| MAX_SCORE * (score - min) / (max - min))
        .collect()
}

/// One soft spread constraint as scored: its key's domains, matching pods per domain, and the
/// weight the scheduler gives a key by its number of domains.
struct SoftSpread<'v> {
    max_skew: i64,
    /// `None` for the hostname key: a node is its own domain.
    domains: Option<&'v Domains>,
    counts: Vec<i64>,
    weight: f64,
}

/// `PodTopologySpread` scores: the pod's `ScheduleAnyway` constraints, or the scheduler's
/// default spreading when it declares no constraint at all.
fn spread_scores(view: &View, pod_index: PodIx, candidates: &[NodeIx]) -> Vec<i64> {
    let pod = view.pod(pod_index);
    let peers = |selector: Option<&'_ crate::snapshot::Requirements>| -> Vec<PodIx> {
        match selector {
            Some(selector) => view.select(&pod.namespace, selector),
            None => view.siblings(pod_index).to_vec(),
        }
    };
    // The defaults apply to nodes that have their keys; a pod's own constraints ignore nodes
    // lacking one (they score 0), as the scheduler's `requireAllTopologies`.
    let defaulted = pod.spread_constraints.is_empty();
    let soft: Vec<(&str, i64, Vec<PodIx>)> = if defaulted {
        if pod.controller().is_none() {
            return vec![0; candidates.len()];
        }
        let siblings = peers(None);
        vec![(HOSTNAME, 3, siblings.clone()), (ZONE, 5, siblings)]
    } else {
        pod.spread_constraints
            .iter()
            .filter(|c| c.when_unsatisfiable == WhenUnsatisfiable::ScheduleAnyway)
            .filter_map(|c: &SpreadConstraint| {
                let selector = c.selector.as_ref()?;
                Some((
                    c.topology_key.as_str(),
                    i64::from(c.max_skew),
                    peers(Some(selector)),
                ))
            })
            .collect()
    };
    if soft.is_empty() {
        return vec![0; candidates.len()];
    }
    let spreads: Vec<SoftSpread> = soft
        .into_iter()
        .map(|(key, max_skew, peers)| soft_spread(view, pod_index, key, max_skew, &peers))
        .collect();
    // Nodes lacking a key are left out of the normalization and score 0, as the scheduler's.
    let raw: Vec<Option<f64>> = candidates
        .iter()
        .map(|&node| {
            spreads.iter().try_fold(0.0, |sum, spread| {
                let count = match spread.domains {
                    None => Some(spread.counts[node.position()]),
                    Some(domains) => domains.of_node[node].map(|id| spread.counts[id as usize]),
                };
                match count {
                    Some(count) => Some(sum + (count + spread.max_skew - 1) as f64 * spread.weight),
                    None if defaulted => Some(sum),
                    None => None,
                }
            })
        })
        .collect();
    let present = raw.iter().flatten();
    let max = present.clone().fold(f64::MIN, |a, &b| a.max(b));
    let min = present.fold(f64::MAX, |a, &b| a.min(b));
    raw.iter()
        .map(|score| match score {
            None => 0,
            Some(_) if max <= 0.0 => MAX_SCORE,
            Some(score) => (MAX_SCORE as f64 * (max + min - score) / max) as i64,
        })
        .collect()
}

/// Matching pods per domain of `key` (per node for the hostname key), counting planned
/// landings and not the pod being replaced.
fn soft_spread<'v>(
    view: &'v View,
    pod_index: PodIx,
    key: &str,
    max_skew: i64,
    peers: &[PodIx],
) -> SoftSpread<'v> {
    // Every key scored is indexed: pods' own constraint keys and the default zone key.
    let domains = (key != HOSTNAME).then(|| view.domains(key)).flatten();
    let size = domains.map_or(view.nodes.len(), |d| d.names.len());
    let mut counts = vec![0; size];
    for &other in peers {
        if other == pod_index {
            continue;
        }
        let Some(node) = view.location(other, true) else {
            continue;
        };
        let slot = match domains {
            None => Some(node.position()),
            Some(domains) => domains.of_node[node].map(|id| id as usize),
        };
        if let Some(slot) = slot {
            counts[slot] += 1;
        }
    }
    SoftSpread {
        max_skew,
        domains,
        counts,
        // The scheduler's topologyNormalizingWeight: ln(domains + 2).
        weight: ((size + 2) as f64).ln(),
    }
}

#[cfg(test)]
mod tests {
    use super::sample_size;
    use crate::plan::testing::*;
    use crate::plan::{SkipDetail, plan};
    use crate::policy::EvictorArgs;
    use crate::snapshot::{ResourceName, Resources, Taint, TaintEffect, WhenUnsatisfiable};

    fn node_fit() -> EvictorArgs {
        EvictorArgs {
            node_fit: true,
            ..EvictorArgs::default()
        }
    }

    #[test]
    fn the_sample_is_every_node_up_to_100_then_an_adaptive_share() {
        assert_eq!(sample_size(3), 3);
        assert_eq!(sample_size(99), 99);
        assert_eq!(sample_size(100), 100);
        // 50% - 1000/125 = 42%.
        assert_eq!(sample_size(1000), 420);
        // 50% - 40% = 10%.
        assert_eq!(sample_size(5000), 500);
        // Floored at 5%.
        assert_eq!(sample_size(20_000), 1000);
    }

    fn prefer_no_schedule(lab: Lab, nodes: &[&str]) -> Lab {
        let nodes: Vec<String> = nodes.iter().map(|n| n.to_string()).collect();
        lab.with(move |s| {
            for node in s.nodes.iter_mut().filter(|n| nodes.contains(&n.name)) {
                node.taints.push(Taint {
                    key: "draining".into(),
                    value: String::new(),
                    effect: TaintEffect::PreferNoSchedule,
                });
            }
        })
    }

    /// Two replicas of api on w1; w2 and w3 are tainted PreferNoSchedule, which the scheduler
    /// weighs three times.
    fn duplicate_on_the_preferred_node() -> Lab {
        prefer_no_schedule(
            three_hosts()
                .pod(pod("app/a").app("api").on("w1").age_minutes(60))
                .pod(pod("app/b").app("api").on("w1").age_minutes(10)),
            &["w2", "w3"],
        )
    }

    #[test]
    fn a_duplicate_the_scheduler_would_put_back_is_not_evicted() {
        let plan = plan(
            &duplicate_on_the_preferred_node().build(),
            &policy_with(node_fit(), vec![duplicates()]),
        );
        assert!(plan.evictions.is_empty(), "{:?}", plan.evictions);
        // Neither replica: whichever goes, its replacement comes back.
        assert_eq!(
            skipped(&plan),
            [
                ("app/b".to_string(), "would-return"),
                ("app/a".to_string(), "would-return")
            ]
        );
        assert_eq!(
            plan.skipped[0].detail,
            SkipDetail::WouldReturn {
                node: "w1 (esxi-1)".to_string(),
                key: None
            }
        );
    }

    #[test]
    fn the_replacement_is_predicted_on_the_least_loaded_untainted_node() {
        // Only w3 is tainted now; w2 is busier than w1 left alone would be, but w1 holds the
        // other replica: spreading and free room both point at w2 over w1... unless w2 is full.
        let lab = prefer_no_schedule(
            three_hosts()
                .pod(pod("app/a").app("api").on("w1").age_minutes(60))
                .pod(pod("app/b").app("api").on("w1").age_minutes(10)),
            &["w3"],
        );
        let light = plan(&lab.build(), &policy_with(node_fit(), vec![duplicates()]));
        assert_eq!(evicted(&light), ["app/b"]);
        assert_eq!(light.evictions[0].fits_on.as_deref(), Some("w2 (esxi-2)"));

        let busy = prefer_no_schedule(
            three_hosts()
                .pod(pod("app/a").app("api").on("w1").age_minutes(60))
                .pod(pod("app/b").app("api").on("w1").age_minutes(10))
                .pod(pod("other/big").on("w2").with(|p| {
                    p.requests = Resources::from_iter([(ResourceName::Cpu, 3_500)]);
                })),
            &[],
        );
        let busy_plan = plan(&busy.build(), &policy_with(node_fit(), vec![duplicates()]));
        assert_eq!(
            busy_plan.evictions[0].fits_on.as_deref(),
            Some("w3 (esxi-3)")
        );
    }

    #[test]
    fn a_soft_spread_constraint_sends_the_replacement_to_its_emptiest_domain() {
        let api = |key: &str, node: &str| {
            pod(key)
                .app("api")
                .on(node)
                .spread(HOST, 1, WhenUnsatisfiable::ScheduleAnyway)
        };
        let snapshot = three_hosts()
            .pod(api("app/a", "w1"))
            .pod(api("app/b", "w1"))
            .pod(api("app/c", "w2"))
            .build();
        let plan = plan(&snapshot, &policy_with(node_fit(), vec![duplicates()]));
        assert_eq!(evicted(&plan).len(), 1, "{:?}", plan.skipped);
        assert_eq!(plan.evictions[0].fits_on.as_deref(), Some("w3 (esxi-3)"));
    }

    #[test]
    fn a_duplicate_whose_replacement_would_land_on_a_node_at_its_share_stays() {
        // Five api pods over three nodes: a share of 2. w1 runs 3 and is busy, w2 its 2, and w3
        // is tainted PreferNoSchedule: the scheduler would put the replacement on w2, over its
        // share.
        let lab = prefer_no_schedule(
            three_hosts()
                .pod(pod("other/big").on("w1").with(|p| {
                    p.requests = Resources::from_iter([(ResourceName::Cpu, 3_500)]);
                }))
                .pod(pod("app/a").app("api").on("w1").age_minutes(60))
                .pod(pod("app/b").app("api").on("w1").age_minutes(50))
                .pod(pod("app/c").app("api").on("w1").age_minutes(40))
                .pod(pod("app/d").app("api").on("w2").age_minutes(30))
                .pod(pod("app/e").app("api").on("w2").age_minutes(20)),
            &["w3"],
        );
        let plan = plan(&lab.build(), &policy_with(node_fit(), vec![duplicates()]));
        assert!(plan.evictions.is_empty(), "{:?}", plan.evictions);
        assert!(
            plan.skipped
                .iter()
                .all(|s| matches!(s.detail, SkipDetail::WouldReturnOverShare { .. })),
            "{:?}",
            plan.skipped
        );
    }

    #[test]
    fn preferred_pod_affinity_draws_the_replacement_to_its_partners_domain() {
        // A duplicate of api leaves w1; cache runs on w3, which api prefers to be near.
        let lab = |weight: i32| {
            three_hosts()
                .pod(pod("app/a").app("api").on("w1").age_minutes(60))
                .pod(
                    pod("app/b")
                        .app("api")
                        .on("w1")
                        .age_minutes(10)
                        .soft_affinity(HOST, "cache", weight),
                )
                .pod(pod("app/cache").app("cache").on("w3"))
        };
        // Without the preference, w2 wins: the cache pod makes w3 busier.
        let plain = plan(
            &three_hosts()
                .pod(pod("app/a").app("api").on("w1").age_minutes(60))
                .pod(pod("app/b").app("api").on("w1").age_minutes(10))
                .pod(pod("app/cache").app("cache").on("w3"))
                .build(),
            &policy_with(node_fit(), vec![duplicates()]),
        );
        assert_eq!(plain.evictions[0].fits_on.as_deref(), Some("w2 (esxi-2)"));
        let drawn = plan(
            &lab(100).build(),
            &policy_with(node_fit(), vec![duplicates()]),
        );
        assert_eq!(evicted(&drawn), ["app/b"]);
        assert_eq!(drawn.evictions[0].fits_on.as_deref(), Some("w3 (esxi-3)"));
    }

    #[test]
    fn preferred_pod_anti_affinity_pushes_the_replacement_away_from_what_it_matches() {
        // Without its preference b's replacement would take w2, the emptiest; it avoids batch.
        let snapshot = three_hosts()
            .pod(pod("app/a").app("api").on("w1").age_minutes(60))
            .pod(pod("app/b").app("api").on("w1").age_minutes(10).with(|p| {
                p.extras_mut().preferred_anti_affinity.push(
                    crate::snapshot::WeightedAffinityTerm {
                        weight: 100,
                        term: crate::snapshot::AffinityTerm {
                            selector: Some(app_selector("batch")),
                            namespaces: Vec::new(),
                            namespace_selector: None,
                            topology_key: HOST.to_string(),
                        },
                    },
                );
            }))
            .pod(pod("app/batch").app("batch").on("w2"))
            .pod(
                pod("app/other")
                    .app("other")
                    .on("w3")
                    .owner("ReplicaSet", "other"),
            )
            .pod(
                pod("app/other2")
                    .app("other")
                    .on("w3")
                    .owner("ReplicaSet", "other2"),
            )
            .build();
        let plan = plan(&snapshot, &policy_with(node_fit(), vec![duplicates()]));
        assert_eq!(evicted(&plan), ["app/b"]);
        assert_eq!(plan.evictions[0].fits_on.as_deref(), Some("w3 (esxi-3)"));
    }
}
