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
mod shared;

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
pub use shared::{Shareable, SharedLists};

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

impl Snapshot {
    /// The pods created after [`Snapshot::now`]: how many, and the youngest of them. Planning
    /// at an instant before a pod existed judges it "started 0s ago" (younger than any
    /// minPodAge), so such a plan is quietly not the one the recorded state calls for.
    pub fn created_after_now(&self) -> Option<CreatedAfterNow<'_>> {
        let mut after = self
            .pods
            .iter()
            .filter(|pod| pod.created.is_some_and(|created| created > self.now));
        let first = after.next()?;
        let (count, youngest) = after.fold((1, first), |(count, youngest), pod| {
            // The latest creation; of equals, the first in namespace and name order.
            let younger = pod.created > youngest.created;
            (count + 1, if younger { pod } else { youngest })
        });
        Some(CreatedAfterNow { count, youngest })
    }
}

/// Pods a snapshot holds that did not exist yet at its `now`.
#[derive(Clone, Copy, Debug)]
pub struct CreatedAfterNow<'a> {
    pub count: usize,
    pub youngest: &'a Pod,
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
