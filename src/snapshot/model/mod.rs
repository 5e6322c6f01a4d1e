//! The typed view of cluster state the planner works on: only what planning needs, already
//! parsed (selectors, quantities, timestamps), so `plan()` never touches raw API objects. One
//! module per kind of object, and here the snapshot that holds them.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

pub mod history;
mod labels;
mod node;
mod pdb;
mod pod;
mod resources;
mod scheduling;
mod selector;

use crate::inventory::Inventory;
use history::History;
pub use labels::{Interner, Labels};
pub use node::Node;
pub use pdb::{Pdb, UnhealthyPodEvictionPolicy};
pub use pod::{
    ConfigSource, ContainerStatus, Owner, OwnerKind, Phase, Pod, PodCondition, PodExtras, Qos,
    Terminated,
};
pub use resources::{OtherName, ResourceName, Resources};
pub use scheduling::{
    AffinityTerm, NodeOperator, NodeRequirement, NodeSelectorTerm, PreferredTerm, SpreadConstraint,
    Taint, TaintEffect, Toleration, WeightedAffinityTerm, WhenUnsatisfiable,
};
pub use selector::Requirements;

/// Everything `plan()` needs to know about the world at one instant.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// The instant planning happens at (pod ages are measured against it).
    pub now: DateTime<Utc>,
    /// Nodes sorted by name.
    pub nodes: Vec<Node>,
    /// Pods sorted by namespace and name.
    pub pods: Vec<Pod>,
    /// PodDisruptionBudgets sorted by namespace and name.
    pub pdbs: Vec<Pdb>,
    /// Labels of each known namespace (for `namespaceSelector` and `namespaceLabelSelector`).
    pub namespaces: BTreeMap<String, Labels>,
    /// The value of each PriorityClass, by name (for `priorityThreshold: {name}`).
    pub priority_classes: BTreeMap<String, i32>,
    /// What vCenter looks like; `None` when it was not observed, in which case host labels are
    /// neither refreshed nor trusted.
    pub inventory: Option<Inventory>,
    /// Actual usage from `metrics.k8s.io`, when recorded (a utilization plugin reads it).
    pub metrics: Option<Metrics>,
    /// What earlier runs evicted (pacing reads it); empty when none was recorded.
    pub history: History,
}

/// `metrics.k8s.io/v1beta1` NodeMetrics and PodMetrics at the snapshot's instant: `cpu` and
/// `memory` in thousandths, as [`Resources`] holds them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Metrics {
    /// Usage of each node, by node name.
    pub nodes: BTreeMap<String, Resources>,
    /// Usage of each pod (the sum of its containers'), by (namespace, name).
    pub pods: BTreeMap<(String, String), Resources>,
}
