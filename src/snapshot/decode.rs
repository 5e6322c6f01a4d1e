//! Decoding Kubernetes API objects: the wire types a snapshot file or the API server gives,
//! their conversion into the planner's model, the eviction history's annotation, and the
//! pruning of objects the `snapshot` command writes. Imports reach down into
//! [`model`](super::model) only.

mod annotations;
pub mod convert;
pub mod history;
pub mod prune;
pub mod quantity;
pub mod snapshot_info;
pub mod wire;
