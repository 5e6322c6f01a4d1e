//! Recorded or observed cluster state: Kubernetes objects plus the vSphere inventory, as one
//! typed, sorted [`Snapshot`] that `plan()` reads.
//!
//! Three layers, each importing only the ones below it: `read` (snapshot files, one module per
//! input form over a shared object sink), `decode` (API objects: wire types, conversion into
//! the model, the eviction history's annotation, pruning for the `snapshot` command) and
//! `model` (what the planner reads). `assemble` puts the files' objects together.

mod assemble;
mod decode;
mod model;
mod read;

pub use assemble::{
    Loaded, assemble, from_str, load_files, load_files_at, load_files_within, locate_object,
};
pub use decode::convert::{
    ConvertError, namespace, node, pdb, pod, priority_class, selector, untyped_node_metrics,
    untyped_pod_metrics,
};
pub use decode::snapshot_info::{self, SnapshotInfo};
pub use decode::{history, prune, wire};
pub use history::{History, PastEviction};
pub use model::*;
pub use read::{
    FileSizeLimit, InvalidFileSize, MAX_DEPTH, METRICS_API_VERSION, NotText, Objects, ParseError,
    Position, SnapshotError, read_str,
};
