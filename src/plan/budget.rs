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

use std::sync::Arc;

use super::index::PodIx;
use super::view::View;
use super::vocabulary::SkipReason;
use crate::hash::HashMap;
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

    /// Whether evicting the pod fits the PDBs and limits: what it costs, or the reason and
    /// detail when it may not go.
    pub fn check(&self, view: &View, pod: PodIx) -> Result<Charge, (SkipReason, String)> {
        let indices = view.pdbs_of(pod);
        let pdbs: Vec<(&Pdb, i32)> = indices
            .iter()
            .map(|&i| (&view.snapshot.pdbs[i], self.spent[i]))
            .collect();
        let charge = match judge(view.pod(pod), &pdbs) {
            Ok(Judgement::Free) => Charge::Free,
            Ok(Judgement::Spend) => Charge::Spend(indices[0]),
            Err(detail) => return Err((SkipReason::Pdb, detail)),
        };
        self.check_limits(view, pod)?;
        Ok(charge)
    }

    fn check_limits(&self, view: &View, pod: PodIx) -> Result<(), (SkipReason, String)> {
        let pod_ref = view.pod(pod);
        let node = pod_ref.node_name.as_deref().unwrap_or_default();
        if let Some(max) = self.limits.total
            && self.total >= max
        {
            return Err((
                SkipReason::Limit,
                format!("maxNoOfPodsToEvictTotal {max} reached"),
            ));
        }
        if let Some(max) = self.limits.per_node
            && self.per_node.get(node).copied().unwrap_or(0) >= max
        {
            return Err((
                SkipReason::Limit,
                format!("maxNoOfPodsToEvictPerNode {max} reached on node {node}"),
            ));
        }
        if let Some(max) = self.limits.per_namespace
            && self
                .per_namespace
                .get(&*pod_ref.namespace)
                .copied()
                .unwrap_or(0)
                >= max
        {
            return Err((
                SkipReason::Limit,
                format!(
                    "maxNoOfPodsToEvictPerNamespace {max} reached in namespace {}",
                    pod_ref.namespace
                ),
            ));
        }
        if let Some(max) = self.limits.per_workload
            && let Some(workload) = workload(pod_ref)
            && self.per_workload.get(&workload).copied().unwrap_or(0) >= max
        {
            return Err((
                SkipReason::Limit,
                format!("maxNoOfPodsToEvictPerWorkload {max} reached for workload {workload}"),
            ));
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
/// this plan already charged to it; the detail of the refusal when it would refuse.
fn judge(pod: &Pod, pdbs: &[(&Pdb, i32)]) -> Result<Judgement, String> {
    if pod.terminating || matches!(pod.phase, Phase::Pending | Phase::Succeeded | Phase::Failed) {
        return Ok(Judgement::Free);
    }
    let (pdb, spent) = match pdbs {
        [] => return Ok(Judgement::Free),
        [one] => *one,
        several => {
            let names: Vec<&str> = several.iter().map(|(pdb, _)| pdb.name.as_str()).collect();
            return Err(format!(
                "matched by several PodDisruptionBudgets ({}); the API server refuses to evict such pods",
                names.join(", ")
            ));
        }
    };
    // The API server lets an unready pod go before it looks at the status's freshness.
    if !pod.ready && unready_goes_free(pdb, spent) {
        return Ok(Judgement::Free);
    }
    let name = &pdb.name;
    if pdb.observed_generation < pdb.generation {
        return Err(format!(
            "PodDisruptionBudget {name} is still being processed by the server (observedGeneration {} < generation {}); the API server refuses evictions until it is",
            pdb.observed_generation, pdb.generation
        ));
    }
    if pdb.disruptions_allowed < 0 {
        return Err(format!(
            "PodDisruptionBudget {name} allows a negative number of disruptions ({}); the API server refuses evictions",
            pdb.disruptions_allowed
        ));
    }
    if pdb.disrupted_pods > MAX_DISRUPTED_PODS {
        return Err(format!(
            "PodDisruptionBudget {name} has {} evictions its controller has not confirmed (more than {MAX_DISRUPTED_PODS}); the API server refuses evictions",
            pdb.disrupted_pods
        ));
    }
    if pdb.disruptions_allowed - spent > 0 {
        return Ok(Judgement::Spend);
    }
    let mut detail = if pdb.disruptions_allowed <= 0 {
        format!("PodDisruptionBudget {name} allows no disruption now")
    } else {
        format!(
            "PodDisruptionBudget {name} allowed {} disruption(s), already spent by this plan",
            pdb.disruptions_allowed
        )
    };
    if !pod.ready {
        detail.push_str(&unready_detail(pdb, spent));
    }
    Err(detail)
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
fn unready_detail(pdb: &Pdb, spent: i32) -> String {
    match pdb.unhealthy_pod_eviction_policy {
        UnhealthyPodEvictionPolicy::Unrecognised => {
            "; the pod is not Ready, and the PDB's unhealthyPodEvictionPolicy is not one this tool knows, so it is not evicted without budget".to_string()
        }
        _ => format!(
            "; the pod is not Ready, but the PDB has {} healthy pod(s) of the {} it needs (of {} expected), so evicting it spends budget",
            pdb.current_healthy - spent,
            pdb.desired_healthy,
            pdb.expected_pods
        ),
    }
}
#[cfg(test)]
mod tests {
    use super::{Judgement, judge};
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

    fn judged(pod: &Pod, pdb: &Pdb, spent: i32) -> Result<Judgement, String> {
        judge(pod, &[(pdb, spent)])
    }

    fn refusal(result: Result<Judgement, String>) -> String {
        result.expect_err("the API server would refuse")
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
        let detail = refusal(judge(&running(), &[(&budget(5, 3, 1), 0), (&other, 0)]));
        assert!(
            detail.contains("several") && detail.contains("web, web-too"),
            "{detail}"
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
        assert!(refusal(judged(&running(), &always, 0)).contains("still being processed"));
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
        let detail = refusal(judged(&not_ready(), &budget(0, 1, 2), 0));
        assert!(
            detail.contains("allows no disruption now")
                && detail.contains("not Ready")
                && detail.contains("1 healthy pod(s) of the 2 it needs (of 3 expected)"),
            "{detail}"
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
        let detail = refusal(judged(&not_ready(), &newer, 0));
        assert!(detail.contains("not one this tool knows"), "{detail}");
    }

    #[test]
    fn a_stale_pdb_refuses_a_ready_pod_whatever_it_allows() {
        let stale = Pdb {
            generation: 2,
            ..budget(1, 3, 2)
        };
        let detail = refusal(judged(&running(), &stale, 0));
        assert!(
            detail.contains("still being processed")
                && detail.contains("observedGeneration 1 < generation 2"),
            "{detail}"
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
        assert!(refusal(judged(&running(), &budget(-1, 1, 2), 0)).contains("negative"));
        let full = Pdb {
            disrupted_pods: 2001,
            ..budget(1, 3, 2)
        };
        assert!(refusal(judged(&running(), &full, 0)).contains("2001 evictions"));
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
        let detail = refusal(judged(&running(), &budget(2, 3, 1), 2));
        assert!(detail.contains("already spent by this plan"), "{detail}");
        assert!(refusal(judged(&running(), &budget(0, 2, 2), 0)).contains("allows no disruption"));
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
        assert_eq!(evicted(&plan), ["shop/web-3"]);
        // web-2 and web-1 still share esxi-1, and they are Ready: the budget of 0 holds them.
        assert_eq!(
            skipped(&plan),
            [
                ("shop/web-2".to_string(), "pdb"),
                ("shop/web-1".to_string(), "pdb")
            ]
        );
    }

    /// Two workloads, each with both replicas on esxi-1 and room on esxi-2 and esxi-3.
    fn crowded() -> crate::plan::testing::Lab {
        Lab::new()
            .host("esxi-1")
            .host("esxi-2")
            .host("esxi-3")
            .host("esxi-4")
            .node("w1", "esxi-1")
            .node("w2", "esxi-1")
            .node("w3", "esxi-2")
            .node("w4", "esxi-3")
            .node("w5", "esxi-4")
            .pod(
                pod("shop/web-1")
                    .app("web")
                    .on("w1")
                    .anti_affinity(HOST)
                    .age_minutes(50),
            )
            .pod(
                pod("shop/web-2")
                    .app("web")
                    .on("w2")
                    .anti_affinity(HOST)
                    .age_minutes(40),
            )
            .pod(
                pod("shop/web-3")
                    .app("web")
                    .on("w2")
                    .anti_affinity(HOST)
                    .age_minutes(30),
            )
    }

    #[test]
    fn a_pdb_with_one_disruption_left_allows_one_eviction() {
        let snapshot = crowded().pdb("shop/web", "web", 1).build();
        let plan = plan(&snapshot, &policy(vec![anti_affinity()]));
        assert_eq!(evicted(&plan), ["shop/web-3"]);
        // web-2 and web-1 still share esxi-1; each would be next, and the budget is spent.
        assert_eq!(
            skipped(&plan),
            [
                ("shop/web-2".to_string(), "pdb"),
                ("shop/web-1".to_string(), "pdb")
            ]
        );
        assert!(
            plan.skipped[0].detail.contains("already spent"),
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
        assert!(
            plan.skipped
                .iter()
                .all(|s| s.reason.as_str() == "pdb" && s.detail.contains("several"))
        );
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
            "maxNoOfPodsToEvictPerWorkload 1 reached for workload shop/ReplicaSet/api-rs"
        );
    }
}
