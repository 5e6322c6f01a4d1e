//! The nouns every other layer of the planner names: what a workload is, why a pod is protected,
//! how a node was mapped to its VM, a change to a DRS rule, and the plan's warnings. Nothing
//! here imports another part of the planner.

pub(super) mod drs_change;
pub(super) mod mapped_by;
pub(super) mod protection;
pub(super) mod warning;
pub(super) mod workload;
