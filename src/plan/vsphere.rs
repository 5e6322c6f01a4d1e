//! What the planner takes from the vSphere side and gives back to it, before any pod is judged:
//! the node↔VM mapping and the label refresh it implies (the site label too), what the topology
//! source allows, and how DRS rule changes are batched per cluster. Stands on [`super::model`] only.

pub(super) mod drs_batch;
pub(super) mod labels;
pub(super) mod sites;
pub(super) mod source;
