//! A PodDisruptionBudget as the planner reads it.

use super::Requirements;

/// A PodDisruptionBudget, with what the Eviction API reads of it. Numbers the object does not
/// carry are 0, as the API server reads them (a status not written yet is all zeros).
#[derive(Clone, Debug, PartialEq)]
pub struct Pdb {
    pub namespace: String,
    pub name: String,
    /// `None` (no selector) matches no pod; an empty selector matches every pod of the namespace.
    pub selector: Option<Requirements>,
    /// `metadata.generation`: bumped by every spec change.
    pub generation: i64,
    /// `status.observedGeneration`: the generation the status describes.
    pub observed_generation: i64,
    pub disruptions_allowed: i32,
    pub current_healthy: i32,
    pub desired_healthy: i32,
    pub expected_pods: i32,
    /// Entries in `status.disruptedPods`: evictions the controller has not seen through yet.
    pub disrupted_pods: usize,
    pub unhealthy_pod_eviction_policy: UnhealthyPodEvictionPolicy,
}

/// `spec.unhealthyPodEvictionPolicy`: when a pod that is not Ready may go without the budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnhealthyPodEvictionPolicy {
    /// When the PDB has its desired healthy pods (also the default).
    IfHealthyBudget,
    /// Always.
    AlwaysAllow,
    /// A value from a newer API: such pods are not freed, as the API asks of clients.
    Unrecognised,
}
