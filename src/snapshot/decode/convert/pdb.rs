//! A PodDisruptionBudget → the planner's [`Pdb`].

use k8s_openapi::api::policy::v1::PodDisruptionBudget;

use crate::snapshot::model::{Pdb, UnhealthyPodEvictionPolicy};

use super::{ConvertError, selector};

pub fn pdb(pdb: PodDisruptionBudget) -> Result<Pdb, ConvertError> {
    let spec = pdb.spec.unwrap_or_default();
    // A PDB the controller has not processed yet has no status: it allows nothing, as the API
    // server treats it.
    let status = pdb.status.unwrap_or_default();
    let unhealthy_pod_eviction_policy = match spec.unhealthy_pod_eviction_policy.as_deref() {
        None | Some("") | Some("IfHealthyBudget") => UnhealthyPodEvictionPolicy::IfHealthyBudget,
        Some("AlwaysAllow") => UnhealthyPodEvictionPolicy::AlwaysAllow,
        Some(_) => UnhealthyPodEvictionPolicy::Unrecognised,
    };
    Ok(Pdb {
        namespace: pdb
            .metadata
            .namespace
            .unwrap_or_else(|| "default".to_string()),
        name: pdb.metadata.name.ok_or(ConvertError::Missing {
            field: "metadata.name",
        })?,
        selector: spec
            .selector
            .map(|s| selector(s, "spec.selector"))
            .transpose()?,
        generation: pdb.metadata.generation.unwrap_or(0),
        observed_generation: status.observed_generation.unwrap_or(0),
        disruptions_allowed: status.disruptions_allowed,
        current_healthy: status.current_healthy,
        desired_healthy: status.desired_healthy,
        expected_pods: status.expected_pods,
        disrupted_pods: status.disrupted_pods.map_or(0, |pods| pods.len()),
        unhealthy_pod_eviction_policy,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn a_pdb_reads_its_generations_health_counts_and_policy_and_zero_when_absent() {
        let converted = |object: Value| pdb(serde_json::from_value(object).expect("a PDB"));
        let full = converted(json!({
            "metadata": {"name": "web", "namespace": "shop", "generation": 3},
            "spec": {"unhealthyPodEvictionPolicy": "AlwaysAllow"},
            "status": {"observedGeneration": 2, "disruptionsAllowed": 1, "currentHealthy": 3,
                       "desiredHealthy": 2, "expectedPods": 3,
                       "disruptedPods": {"web-0": "2026-11-21T08:59:30Z"}}
        }))
        .expect("converts");
        assert_eq!(
            (
                full.generation,
                full.observed_generation,
                full.disruptions_allowed
            ),
            (3, 2, 1)
        );
        assert_eq!(
            (
                full.current_healthy,
                full.desired_healthy,
                full.expected_pods,
                full.disrupted_pods
            ),
            (3, 2, 3, 1)
        );
        assert_eq!(
            full.unhealthy_pod_eviction_policy,
            UnhealthyPodEvictionPolicy::AlwaysAllow
        );
        let bare = converted(json!({"metadata": {"name": "web"}})).expect("converts");
        assert_eq!((bare.generation, bare.observed_generation), (0, 0));
        assert_eq!((bare.disruptions_allowed, bare.disrupted_pods), (0, 0));
        assert_eq!(
            bare.unhealthy_pod_eviction_policy,
            UnhealthyPodEvictionPolicy::IfHealthyBudget
        );
        let newer = converted(json!({"metadata": {"name": "web"},
                                     "spec": {"unhealthyPodEvictionPolicy": "Sometimes"}}))
        .expect("an unknown policy is not an error");
        assert_eq!(
            newer.unhealthy_pod_eviction_policy,
            UnhealthyPodEvictionPolicy::Unrecognised
        );
    }
}
