//! The questions a strategy asks about one pod, answered on the working state ([`super::view`]):
//! may it be evicted (protections), would another node take it and which one the scheduler
//! would pick, does a disruption budget, a limit or the availability gate allow it now, is its
//! workload rolling out, which planned label changes it relies on. Every "no" is a typed
//! refusal that [`super::vocabulary`] turns into a skip reason.

pub(super) mod availability;
pub(super) mod budget;
pub(super) mod dependencies;
pub(super) mod evictor;
pub(super) mod feasibility;
pub(super) mod rollout;
pub(super) mod scoring;
