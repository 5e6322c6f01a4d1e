//! Disruption budgets and eviction limits, spent as the plan evicts.
//!
//! PodDisruptionBudgets: `status.disruptionsAllowed` is what the API server checks, so two pods
//! of one PDB with one disruption left give one eviction and one `pdb` skip. A pod matched by
//! more than one PDB is skipped: the API refuses to evict it. Limits are the policy's
//! `maxNoOfPodsToEvictPerNode`, `…PerNamespace` and `…Total`.

use std::collections::HashMap;

use super::SkipReason;
use super::view::View;
use crate::policy::Limits;

pub struct Budget {
    /// Disruptions left per PDB (indexed like the snapshot's PDBs).
    remaining: Vec<i32>,
    limits: Limits,
    per_node: HashMap<String, u32>,
    per_namespace: HashMap<String, u32>,
    total: u32,
}

impl Budget {
    pub fn new(view: &View) -> Budget {
        Budget {
            remaining: view
                .snapshot
                .pdbs
                .iter()
                .map(|pdb| pdb.disruptions_allowed)
                .collect(),
            limits: view.policy.limits.clone(),
            per_node: HashMap::new(),
            per_namespace: HashMap::new(),
            total: 0,
        }
    }

    /// Whether evicting the pod fits the PDBs and limits; the reason and detail when not.
    pub fn check(&self, view: &View, pod: usize) -> Result<(), (SkipReason, String)> {
        let pdbs = view.pdbs_of(pod);
        let name = |i: usize| view.snapshot.pdbs[i].name.clone();
        match pdbs.as_slice() {
            [] => {}
            [one] if self.remaining[*one] <= 0 => {
                let initial = view.snapshot.pdbs[*one].disruptions_allowed;
                let detail = if initial <= 0 {
                    format!(
                        "PodDisruptionBudget {} allows no disruption now",
                        name(*one)
                    )
                } else {
                    format!(
                        "PodDisruptionBudget {} allowed {initial} disruption(s), already spent by this plan",
                        name(*one)
                    )
                };
                return Err((SkipReason::Pdb, detail));
            }
            [_] => {}
            several => {
                let names: Vec<String> = several.iter().map(|&i| name(i)).collect();
                return Err((
                    SkipReason::Pdb,
                    format!(
                        "matched by several PodDisruptionBudgets ({}); the API server refuses to evict such pods",
                        names.join(", ")
                    ),
                ));
            }
        }
        let pod_ref = view.pod(pod);
        let node = pod_ref.node_name.clone().unwrap_or_default();
        if let Some(max) = self.limits.total
            && self.total >= max
        {
            return Err((
                SkipReason::Limit,
                format!("maxNoOfPodsToEvictTotal {max} reached"),
            ));
        }
        if let Some(max) = self.limits.per_node
            && self.per_node.get(&node).copied().unwrap_or(0) >= max
        {
            return Err((
                SkipReason::Limit,
                format!("maxNoOfPodsToEvictPerNode {max} reached on node {node}"),
            ));
        }
        if let Some(max) = self.limits.per_namespace
            && self
                .per_namespace
                .get(&pod_ref.namespace)
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
        Ok(())
    }

    /// Record an eviction: spend its PDB and count it against the limits.
    pub fn spend(&mut self, view: &View, pod: usize) {
        for pdb in view.pdbs_of(pod) {
            self.remaining[pdb] -= 1;
        }
        let pod = view.pod(pod);
        *self
            .per_node
            .entry(pod.node_name.clone().unwrap_or_default())
            .or_insert(0) += 1;
        *self.per_namespace.entry(pod.namespace.clone()).or_insert(0) += 1;
        self.total += 1;
    }
}

#[cfg(test)]
mod tests {
    use crate::plan::plan;
    use crate::plan::testing::*;
    use crate::policy::Limits;

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
}
