//! Disruption budgets and eviction limits, spent as the plan evicts.
//!
//! PodDisruptionBudgets are judged as the Eviction API judges them, in the API server's order
//! (the API server's eviction handler, `pkg/registry/core/pod/storage/eviction.go` in Kubernetes): Pending, finished and
//! terminating pods go without looking at PDBs; a pod of several PDBs is refused; a pod that is
//! not Ready may go without spending the budget; then a stale status, a negative count or an
//! oversized `disruptedPods` refuses; then `status.disruptionsAllowed` is spent, so two pods of
//! one PDB with one disruption left give one eviction and one `pdb` skip. Limits are the
//! policy's `maxNoOfPodsToEvictPerNode`, `…PerNamespace`, `…Total` and `…PerWorkload` (per
//! controller owner, on top of its PDB: pacing a workload's moves over several runs).

use std::fmt;
use std::sync::Arc;

use crate::hash::HashMap;
use crate::plan::view::View;
use crate::plan::view::index::PodIx;
use crate::policy::Limits;
use crate::snapshot::{Pdb, Phase, Pod, UnhealthyPodEvictionPolicy};

/// The API server refuses an eviction when a PDB's `disruptedPods` has more entries than this.
const MAX_DISRUPTED_PODS: usize = 2000;

/// What an eviction costs its PodDisruptionBudget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Charge {
    /// Nothing: no PDB applies, or the API lets the pod go without one.
    Free,
    /// One disruption of this PDB (indexed like the snapshot's PDBs).
    Spend(usize),
}

pub struct Budget {
    /// Evictions this plan charged to each PDB (indexed like the snapshot's PDBs).
    spent: Vec<i32>,
    limits: Limits,
    per_node: HashMap<Arc<str>, u32>,
    per_namespace: HashMap<Arc<str>, u32>,
    /// By workload, as [`workload`] names it.
    per_workload: HashMap<String, u32>,
    total: u32,
}

/// Why the budget lets a pod not go: one of its PodDisruptionBudgets, or an eviction limit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BudgetRefusal {
    Pdb(PdbRefusal),
    Limit(LimitReached),
}

impl fmt::Display for BudgetRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BudgetRefusal::Pdb(refusal) => refusal.fmt(f),
            BudgetRefusal::Limit(limit) => limit.fmt(f),
        }
    }
}

/// Why the Eviction API would refuse a pod, by the row of its decision that refuses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PdbRefusal {
    /// Several PDBs select the pod (their names).
    Several(Vec<String>),
    /// The PDB's status is older than its spec.
    Unprocessed {
        pdb: String,
        observed_generation: i64,
        generation: i64,
    },
    /// `disruptionsAllowed` is negative.
    NegativeAllowance { pdb: String, allowed: i32 },
    /// `disruptedPods` holds more evictions than the API server accepts.
    Unconfirmed { pdb: String, disrupted: usize },
    /// No disruption is left: none allowed, or this plan spent them (`allowed` > 0). `unready`
    /// says why a pod that is not Ready still needed one.
    Exhausted {
        pdb: String,
        allowed: i32,
        unready: Option<UnreadyNeed>,
    },
}

/// Why a pod that is not Ready needs its PDB's budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnreadyNeed {
    /// The PDB's `unhealthyPodEvictionPolicy` is not one this tool knows.
    UnknownPolicy,
    /// The PDB has `healthy` of the `desired` healthy pods it needs (of `expected`).
    BelowDesired {
        healthy: i32,
        desired: i32,
        expected: i32,
    },
}

impl fmt::Display for PdbRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PdbRefusal::Several(names) => write!(
                f,
                "matched by several PodDisruptionBudgets ({}); the API server refuses to evict such pods",
                names.join(", ")
            ),
            PdbRefusal::Unprocessed {
                pdb,
                observed_generation,
                generation,
            } => write!(
                f,
                "PodDisruptionBudget {pdb} is still being processed by the server (observedGeneration {observed_generation} < generation {generation}); the API server refuses evictions until it is"
            ),
            PdbRefusal::NegativeAllowance { pdb, allowed } => write!(
                f,
                "PodDisruptionBudget {pdb} allows a negative number of disruptions ({allowed}); the API server refuses evictions"
            ),
            PdbRefusal::Unconfirmed { pdb, disrupted } => write!(
                f,
                "PodDisruptionBudget {pdb} has {disrupted} evictions its controller has not confirmed (more than {MAX_DISRUPTED_PODS}); the API server refuses evictions"
            ),
            PdbRefusal::Exhausted {
                pdb,
                allowed,
                unready,
            } => {
                if *allowed <= 0 {
                    write!(f, "PodDisruptionBudget {pdb} allows no disruption now")?;
                } else {
                    write!(
                        f,
                        "PodDisruptionBudget {pdb} allowed {allowed} disruption(s), already spent by this plan"
                    )?;
                }
                match unready {
                    None => Ok(()),
                    Some(UnreadyNeed::UnknownPolicy) => f.write_str(
                        "; the pod is not Ready, and the PDB's unhealthyPodEvictionPolicy is not one this tool knows, so it is not evicted without budget",
                    ),
                    Some(UnreadyNeed::BelowDesired {
                        healthy,
                        desired,
                        expected,
                    }) => write!(
                        f,
                        "; the pod is not Ready, but the PDB has {healthy} healthy pod(s) of the {desired} it needs (of {expected} expected), so evicting it spends budget"
                    ),
                }
            }
        }
    }
}

/// An eviction limit of the policy that is reached, with its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LimitReached {
    /// `maxNoOfPodsToEvictTotal`.
    Total { max: u32 },
    /// `maxNoOfPodsToEvictPerNode`, on the pod's node.
    PerNode { max: u32, node: Arc<str> },
    /// `maxNoOfPodsToEvictPerNamespace`, in the pod's namespace.
    PerNamespace { max: u32, namespace: Arc<str> },
    /// `maxNoOfPodsToEvictPerWorkload`, for the pod's workload (as [`workload`] names it).
    PerWorkload { max: u32, workload: String },
}

impl fmt::Display for LimitReached {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LimitReached::Total { max } => write!(f, "maxNoOfPodsToEvictTotal {max} reached"),
            LimitReached::PerNode { max, node } => {
                write!(f, "maxNoOfPodsToEvictPerNode {max} reached on node {node}")
            }
            LimitReached::PerNamespace { max, namespace } => write!(
                f,
                "maxNoOfPodsToEvictPerNamespace {max} reached in namespace {namespace}"
            ),
            LimitReached::PerWorkload { max, workload } => write!(
                f,
                "maxNoOfPodsToEvictPerWorkload {max} reached for workload {workload}"
            ),
        }
    }
}

impl Budget {
    pub fn new(view: &View) -> Budget {
        Budget {
            spent: vec![0; view.snapshot.pdbs.len()],
            limits: view.policy.limits.clone(),
            per_node: HashMap::default(),
            per_namespace: HashMap::default(),
            per_workload: HashMap::default(),
            total: 0,
        }
    }

    /// Whether evicting the pod fits the PDBs and limits: what it costs, or why it may not go.
    pub fn check(&self, view: &View, pod: PodIx) -> Result<Charge, BudgetRefusal> {
        let indices = view.pdbs_of(pod);
        let pdbs: Vec<(&Pdb, i32)> = indices
            .iter()
            .map(|&i| (&view.snapshot.pdbs[i], self.spent[i]))
            .collect();
        let charge = match judge(view.pod(pod), &pdbs) {
            Ok(Judgement::Free) => Charge::Free,
            Ok(Judgement::Spend) => Charge::Spend(indices[0]),
            Err(refusal) => return Err(BudgetRefusal::Pdb(refusal)),
        };
        self.check_limits(view, pod).map_err(BudgetRefusal::Limit)?;
        Ok(charge)
    }

    fn check_limits(&self, view: &View, pod: PodIx) -> Result<(), LimitReached> {
        let pod_ref = view.pod(pod);
        let node = pod_ref.node_name.as_deref().unwrap_or_default();
        if let Some(max) = self.limits.total
            && self.total >= max
        {
            return Err(LimitReached::Total { max });
        }
        if let Some(max) = self.limits.per_node
            && self.per_node.get(node).copied().unwrap_or(0) >= max
        {
            return Err(LimitReached::PerNode {
                max,
                node: pod_ref.node_name.clone().unwrap_or_else(|| Arc::from("")),
            });
        }
        if let Some(max) = self.limits.per_namespace
            && self
                .per_namespace
                .get(&*pod_ref.namespace)
                .copied()
                .unwrap_or(0)
                >= max
        {
            return Err(LimitReached::PerNamespace {
                max,
                namespace: pod_ref.namespace.clone(),
            });
        }
        if let Some(max) = self.limits.per_workload
            && let Some(workload) = workload(pod_ref)
            && self.per_workload.get(&workload).copied().unwrap_or(0) >= max
        {
            return Err(LimitReached::PerWorkload { max, workload });
        }
        Ok(())
    }
    /// Record an eviction: charge its PDB what [`Budget::check`] said and count it against the
    /// limits.
    pub fn spend(&mut self, view: &View, pod: PodIx, charge: Charge) {
        if let Charge::Spend(pdb) = charge {
            self.spent[pdb] += 1;
        }
        let pod = view.pod(pod);
        *self
            .per_node
            .entry(pod.node_name.clone().unwrap_or_else(|| Arc::from("")))
            .or_insert(0) += 1;
        *self.per_namespace.entry(pod.namespace.clone()).or_insert(0) += 1;
        if self.limits.per_workload.is_some()
            && let Some(workload) = workload(pod)
        {
            *self.per_workload.entry(workload).or_insert(0) += 1;
        }
        self.total += 1;
    }
}

/// The workload a pod belongs to for `maxNoOfPodsToEvictPerWorkload`: its controller owner, as
/// `namespace/Kind/name`. A pod without one (a bare pod) belongs to none and is not limited.
fn workload(pod: &Pod) -> Option<String> {
    pod.controller()
        .map(|owner| format!("{}/{}/{}", pod.namespace, owner.kind, owner.name))
}

/// What the Eviction API would do with a pod it lets go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Judgement {
    Free,
    /// Spend one disruption of the pod's one PDB.
    Spend,
}

/// The Eviction API's answer for a pod, given the PDBs that select it, each with the evictions
/// this plan already charged to it; why it would refuse when it would.
fn judge(pod: &Pod, pdbs: &[(&Pdb, i32)]) -> Result<Judgement, PdbRefusal> {
    if pod.terminating || matches!(pod.phase, Phase::Pending | Phase::Succeeded | Phase::Failed) {
        return Ok(Judgement::Free);
    }
    let (pdb, spent) = match pdbs {
        [] => return Ok(Judgement::Free),
        [one] => *one,
        several => {
            let names = several.iter().map(|(pdb, _)| pdb.name.clone()).collect();
            return Err(PdbRefusal::Several(names));
        }
    };
    // The API server lets an unready pod go before it looks at the status's freshness.
    if !pod.ready && unready_goes_free(pdb, spent) {
        return Ok(Judgement::Free);
    }
    let name = || pdb.name.clone();
    if pdb.observed_generation < pdb.generation {
        return Err(PdbRefusal::Unprocessed {
            pdb: name(),
            observed_generation: pdb.observed_generation,
            generation: pdb.generation,
        });
    }
    if pdb.disruptions_allowed < 0 {
        return Err(PdbRefusal::NegativeAllowance {
            pdb: name(),
            allowed: pdb.disruptions_allowed,
        });
    }
    if pdb.disrupted_pods > MAX_DISRUPTED_PODS {
        return Err(PdbRefusal::Unconfirmed {
            pdb: name(),
            disrupted: pdb.disrupted_pods,
        });
    }
    if pdb.disruptions_allowed - spent > 0 {
        return Ok(Judgement::Spend);
    }
    Err(PdbRefusal::Exhausted {
        pdb: name(),
        allowed: pdb.disruptions_allowed,
        unready: (!pod.ready).then(|| unready_need(pdb, spent)),
    })
}

/// Whether the API lets a pod that is not Ready go without spending its PDB: always under
/// `AlwaysAllow`; under `IfHealthyBudget` (or unset) when the PDB has its desired healthy pods,
/// less the Ready ones this plan evicts first (the controller counts them out once evicted).
fn unready_goes_free(pdb: &Pdb, spent: i32) -> bool {
    match pdb.unhealthy_pod_eviction_policy {
        UnhealthyPodEvictionPolicy::AlwaysAllow => true,
        UnhealthyPodEvictionPolicy::IfHealthyBudget => {
            pdb.current_healthy - spent >= pdb.desired_healthy && pdb.desired_healthy > 0
        }
        UnhealthyPodEvictionPolicy::Unrecognised => false,
    }
}

/// Why a pod that is not Ready still needs its PDB's budget.
fn unready_need(pdb: &Pdb, spent: i32) -> UnreadyNeed {
    match pdb.unhealthy_pod_eviction_policy {
        UnhealthyPodEvictionPolicy::Unrecognised => UnreadyNeed::UnknownPolicy,
        _ => UnreadyNeed::BelowDesired {
            healthy: pdb.current_healthy - spent,
            desired: pdb.desired_healthy,
            expected: pdb.expected_pods,
        },
    }
}
#[cfg(test)]
mod tests {
    use super::{BudgetRefusal, Judgement, LimitReached, PdbRefusal, UnreadyNeed, judge};
    use crate::plan::SkipDetail;
    use crate::plan::plan;
    use crate::plan::testing::*;
    use crate::policy::Limits;
    use crate::snapshot::{Pdb, Phase, Pod, UnhealthyPodEvictionPolicy};

    /// A synced PDB `web` of three expected pods: `current` healthy, `desired` needed.
    fn budget(allowed: i32, current: i32, desired: i32) -> Pdb {
        Pdb {
            namespace: "shop".to_string(),
            name: "web".to_string(),
            selector: Some(app_selector("web")),
            generation: 1,
            observed_generation: 1,
            disruptions_allowed: allowed,
            current_healthy: current,
            desired_healthy: desired,
            expected_pods: 3,
            disrupted_pods: 0,
            unhealthy_pod_eviction_policy: UnhealthyPodEvictionPolicy::IfHealthyBudget,
        }
    }

    fn running() -> Pod {
        pod("shop/web-1").app("web").on("w1").0
    }

    fn not_ready() -> Pod {
        Pod {
            ready: false,
            ..running()
        }
    }

    fn judged(pod: &Pod, pdb: &Pdb, spent: i32) -> Result<Judgement, PdbRefusal> {
        judge(pod, &[(pdb, spent)])
    }

    fn refusal(result: Result<Judgement, PdbRefusal>) -> PdbRefusal {
        result.expect_err("the API server would refuse")
    }

    #[test]
    fn refusals_and_limits_read_as_the_report_words_them() {
        let cases: [(BudgetRefusal, &str); 6] = [
            (
                BudgetRefusal::Pdb(PdbRefusal::Several(vec!["a".into(), "b".into()])),
                "matched by several PodDisruptionBudgets (a, b); the API server refuses to evict such pods",
            ),
            (
                BudgetRefusal::Pdb(PdbRefusal::Exhausted {
                    pdb: "web".into(),
                    allowed: 2,
                    unready: None,
                }),
                "PodDisruptionBudget web allowed 2 disruption(s), already spent by this plan",
            ),
            (
                BudgetRefusal::Pdb(PdbRefusal::Exhausted {
                    pdb: "web".into(),
                    allowed: 0,
                    unready: Some(UnreadyNeed::BelowDesired {
                        healthy: 1,
                        desired: 2,
                        expected: 3,
                    }),
                }),
                "PodDisruptionBudget web allows no disruption now; the pod is not Ready, but the PDB has 1 healthy pod(s) of the 2 it needs (of 3 expected), so evicting it spends budget",
            ),
            (
                BudgetRefusal::Limit(LimitReached::PerNode {
                    max: 1,
                    node: "w1".into(),
                }),
                "maxNoOfPodsToEvictPerNode 1 reached on node w1",
            ),
            (
                BudgetRefusal::Limit(LimitReached::PerNamespace {
                    max: 2,
                    namespace: "shop".into(),
                }),
                "maxNoOfPodsToEvictPerNamespace 2 reached in namespace shop",
            ),
            (
                BudgetRefusal::Limit(LimitReached::PerWorkload {
                    max: 3,
                    workload: "shop/ReplicaSet/web".into(),
                }),
                "maxNoOfPodsToEvictPerWorkload 3 reached for workload shop/ReplicaSet/web",
            ),
        ];
        for (refusal, text) in cases {
            assert_eq!(refusal.to_string(), text);
        }
    }

    // One test per row of the Eviction API's decision (the handler in `pkg/registry/core/pod/storage/eviction.go`), in its order.

    #[test]
    fn pending_finished_and_terminating_pods_go_without_spending_an_exhausted_budget() {
        let exhausted = budget(0, 1, 2);
        for pod in [
            Pod {
                phase: Phase::Pending,
                ..running()
            },
            Pod {
                phase: Phase::Succeeded,
                ..running()
            },
            Pod {
                phase: Phase::Failed,
                ..running()
            },
            Pod {
                terminating: true,
                ..running()
            },
        ] {
            assert_eq!(judged(&pod, &exhausted, 0), Ok(Judgement::Free), "{pod:?}");
        }
        // Unknown is not among them: the API checks the PDB.
        let unknown = Pod {
            phase: Phase::Unknown,
            ..running()
        };
        assert!(judged(&unknown, &exhausted, 0).is_err());
    }

    #[test]
    fn a_pod_of_no_pdb_goes_free_and_a_pod_of_several_is_refused() {
        assert_eq!(judge(&running(), &[]), Ok(Judgement::Free));
        let other = Pdb {
            name: "web-too".to_string(),
            ..budget(5, 3, 1)
        };
        assert_eq!(
            refusal(judge(&running(), &[(&budget(5, 3, 1), 0), (&other, 0)])),
            PdbRefusal::Several(vec!["web".to_string(), "web-too".to_string()])
        );
    }

    #[test]
    fn a_not_ready_pod_goes_free_under_always_allow_even_with_a_stale_exhausted_budget() {
        let always = Pdb {
            unhealthy_pod_eviction_policy: UnhealthyPodEvictionPolicy::AlwaysAllow,
            generation: 2,
            ..budget(0, 0, 2)
        };
        assert_eq!(judged(&not_ready(), &always, 0), Ok(Judgement::Free));
        // A Ready pod of the same PDB meets the stale status.
        assert!(matches!(
            refusal(judged(&running(), &always, 0)),
            PdbRefusal::Unprocessed { .. }
        ));
    }

    #[test]
    fn a_not_ready_pod_goes_free_when_the_pdb_has_its_desired_healthy_pods() {
        // Policy unset reads as IfHealthyBudget: currentHealthy 2 >= desiredHealthy 2 > 0.
        assert_eq!(
            judged(&not_ready(), &budget(0, 2, 2), 0),
            Ok(Judgement::Free)
        );
        // A Ready pod of the same PDB needs a disruption it does not have.
        assert!(judged(&running(), &budget(0, 2, 2), 0).is_err());
    }

    #[test]
    fn a_not_ready_pod_spends_budget_when_desired_healthy_is_zero() {
        // 0 >= 0 but not > 0: the budget decides.
        assert_eq!(
            judged(&not_ready(), &budget(1, 0, 0), 0),
            Ok(Judgement::Spend)
        );
        assert!(judged(&not_ready(), &budget(0, 0, 0), 0).is_err());
    }

    #[test]
    fn a_not_ready_pod_below_the_desired_healthy_pods_spends_budget_and_says_why_when_none_is_left()
    {
        assert_eq!(
            judged(&not_ready(), &budget(1, 1, 2), 0),
            Ok(Judgement::Spend)
        );
        assert_eq!(
            refusal(judged(&not_ready(), &budget(0, 1, 2), 0)),
            PdbRefusal::Exhausted {
                pdb: "web".to_string(),
                allowed: 0,
                unready: Some(UnreadyNeed::BelowDesired {
                    healthy: 1,
                    desired: 2,
                    expected: 3
                }),
            }
        );
    }

    #[test]
    fn ready_pods_this_plan_evicts_count_out_of_current_healthy() {
        // 3 healthy, 2 needed: one Ready pod already evicted leaves 2, still enough; two leave 1.
        assert_eq!(
            judged(&not_ready(), &budget(1, 3, 2), 1),
            Ok(Judgement::Free)
        );
        assert!(judged(&not_ready(), &budget(1, 3, 2), 2).is_err());
    }

    #[test]
    fn an_unrecognised_unhealthy_pod_policy_frees_no_pod() {
        let newer = Pdb {
            unhealthy_pod_eviction_policy: UnhealthyPodEvictionPolicy::Unrecognised,
            ..budget(0, 2, 2)
        };
        assert!(matches!(
            refusal(judged(&not_ready(), &newer, 0)),
            PdbRefusal::Exhausted {
                unready: Some(UnreadyNeed::UnknownPolicy),
                ..
            }
        ));
    }

    #[test]
    fn a_stale_pdb_refuses_a_ready_pod_whatever_it_allows() {
        let stale = Pdb {
            generation: 2,
            ..budget(1, 3, 2)
        };
        assert_eq!(
            refusal(judged(&running(), &stale, 0)),
            PdbRefusal::Unprocessed {
                pdb: "web".to_string(),
                observed_generation: 1,
                generation: 2
            }
        );
        // Recorded without generations (files written before they were read): not stale.
        let unrecorded = Pdb {
            generation: 0,
            observed_generation: 0,
            ..budget(1, 3, 2)
        };
        assert_eq!(judged(&running(), &unrecorded, 0), Ok(Judgement::Spend));
    }

    #[test]
    fn a_negative_count_or_too_many_unconfirmed_evictions_refuses() {
        assert!(matches!(
            refusal(judged(&running(), &budget(-1, 1, 2), 0)),
            PdbRefusal::NegativeAllowance { allowed: -1, .. }
        ));
        let full = Pdb {
            disrupted_pods: 2001,
            ..budget(1, 3, 2)
        };
        assert!(matches!(
            refusal(judged(&running(), &full, 0)),
            PdbRefusal::Unconfirmed {
                disrupted: 2001,
                ..
            }
        ));
        let at_the_limit = Pdb {
            disrupted_pods: 2000,
            ..budget(1, 3, 2)
        };
        assert_eq!(judged(&running(), &at_the_limit, 0), Ok(Judgement::Spend));
    }

    #[test]
    fn a_ready_pod_spends_what_is_left_of_the_budget() {
        assert_eq!(
            judged(&running(), &budget(2, 3, 1), 1),
            Ok(Judgement::Spend)
        );
        assert!(matches!(
            refusal(judged(&running(), &budget(2, 3, 1), 2)),
            PdbRefusal::Exhausted {
                allowed: 2,
                unready: None,
                ..
            }
        ));
        assert!(matches!(
            refusal(judged(&running(), &budget(0, 2, 2), 0)),
            PdbRefusal::Exhausted {
                allowed: 0,
                unready: None,
                ..
            }
        ));
    }

    #[test]
    fn a_crash_looping_replica_moves_without_spending_a_budget_that_allows_nothing() {
        let mut snapshot = crowded().build();
        snapshot.pdbs.push(budget(0, 2, 2));
        // web-3 (on w2 with web-2, the most recently created) is not Ready.
        let web_3 = snapshot
            .pods
            .iter_mut()
            .find(|p| p.name == "web-3")
            .expect("web-3");
        web_3.ready = false;
        let plan = plan(&snapshot, &policy(vec![anti_affinity()]));
        // web-2 and web-1 are Ready: the budget of 0 holds them.
        assert_only_web_3_goes(&plan);
    }

    /// Two workloads, each with both replicas on esxi-1 and room on esxi-2 and esxi-3.
    fn crowded() -> Lab {
        four_hosts_one_shared()
            .pod(web("web-1", "w1", 50))
            .pod(web("web-2", "w2", 40))
            .pod(web("web-3", "w2", 30))
    }

    /// web-3 (on w2 with web-2, the most recently created) goes; web-2 and web-1 still share
    /// esxi-1, and the budget holds them.
    fn assert_only_web_3_goes(plan: &crate::plan::Plan) {
        assert_eq!(evicted(plan), ["shop/web-3"]);
        assert_eq!(
            skipped(plan),
            [
                ("shop/web-2".to_string(), "pdb"),
                ("shop/web-1".to_string(), "pdb")
            ]
        );
    }

    #[test]
    fn a_pdb_with_one_disruption_left_allows_one_eviction() {
        let snapshot = crowded().pdb("shop/web", "web", 1).build();
        let plan = plan(&snapshot, &policy(vec![anti_affinity()]));
        // web-2 and web-1 would each be next, and the budget is spent.
        assert_only_web_3_goes(&plan);
        assert!(
            matches!(
                plan.skipped[0].detail,
                SkipDetail::Budget(BudgetRefusal::Pdb(PdbRefusal::Exhausted { allowed, .. }))
                    if allowed > 0
            ),
            "{}",
            plan.skipped[0].detail
        );
    }

    #[test]
    fn a_pod_matched_by_two_pdbs_is_skipped() {
        let snapshot = crowded()
            .pdb("shop/web", "web", 5)
            .pdb("shop/web-too", "web", 5)
            .build();
        let plan = plan(&snapshot, &policy(vec![anti_affinity()]));
        assert!(plan.evictions.is_empty());
        assert!(plan.skipped.iter().all(|s| matches!(
            s.detail,
            SkipDetail::Budget(BudgetRefusal::Pdb(PdbRefusal::Several(_)))
        )));
    }

    #[test]
    fn limits_cap_evictions_per_node_namespace_and_total() {
        let snapshot = crowded().build();
        for limits in [
            Limits {
                total: Some(1),
                ..Default::default()
            },
            Limits {
                per_namespace: Some(1),
                ..Default::default()
            },
            Limits {
                per_node: Some(1),
                ..Default::default()
            },
        ] {
            let mut policy = policy(vec![anti_affinity()]);
            policy.limits = limits.clone();
            let plan = plan(&snapshot, &policy);
            // w2 holds web-2 and web-3; the per-node cap still lets web-1 go from w1.
            let expected = if limits.per_node.is_some() { 2 } else { 1 };
            assert_eq!(
                plan.evictions.len(),
                expected,
                "{limits:?}: {:?}",
                evicted(&plan)
            );
            assert!(
                skipped(&plan).iter().any(|(_, reason)| *reason == "limit"),
                "{limits:?}"
            );
        }
    }

    #[test]
    fn a_workload_limit_paces_each_controller_owner() {
        // Two workloads, each with three replicas on esxi-1 and three free hosts: unlimited,
        // each loses two.
        let replica = |name: &str, app: &str, node: &str, age: i64| {
            pod(&format!("shop/{name}"))
                .app(app)
                .on(node)
                .anti_affinity(HOST)
                .age_minutes(age)
        };
        let snapshot = Lab::new()
            .host("esxi-1")
            .host("esxi-2")
            .host("esxi-3")
            .host("esxi-4")
            .node("w1", "esxi-1")
            .node("w2", "esxi-2")
            .node("w3", "esxi-3")
            .node("w4", "esxi-4")
            .pod(replica("web-1", "web", "w1", 30))
            .pod(replica("web-2", "web", "w1", 20))
            .pod(replica("web-3", "web", "w1", 10))
            .pod(replica("api-1", "api", "w1", 30))
            .pod(replica("api-2", "api", "w1", 20))
            .pod(replica("api-3", "api", "w1", 10))
            .build();
        let unlimited = plan(&snapshot, &policy(vec![anti_affinity()]));
        assert_eq!(unlimited.evictions.len(), 4, "{:?}", evicted(&unlimited));
        let mut paced = policy(vec![anti_affinity()]);
        paced.limits.per_workload = Some(1);
        let plan = plan(&snapshot, &paced);
        assert_eq!(evicted(&plan), ["shop/api-3", "shop/web-3"]);
        assert_eq!(
            skipped(&plan),
            [
                ("shop/api-2".to_string(), "limit"),
                ("shop/web-2".to_string(), "limit"),
                ("shop/api-1".to_string(), "limit"),
                ("shop/web-1".to_string(), "limit"),
            ]
        );
        assert_eq!(
            plan.skipped[0].detail,
            SkipDetail::Budget(BudgetRefusal::Limit(LimitReached::PerWorkload {
                max: 1,
                workload: "shop/ReplicaSet/api-rs".to_string(),
            }))
        );
    }
}
