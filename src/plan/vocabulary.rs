//! The plan's own vocabulary: what a run would do and what it would not, and why. Below the
//! strategies, which fill it in, so imports inside `plan/` only run downward.

pub(super) mod events;
pub(super) mod reasons;

use std::sync::Arc;

use serde::Serialize;

use crate::policy::PluginKind;

use super::exposure::Exposure;
use super::model::drs_change::DrsRuleChange;
use super::model::warning::Warning;
use super::vsphere::drs_batch::DrsBatch;
use super::vsphere::labels::{LabelApply, LabelChange, MappedNode};
pub use reasons::{EvictionReason, SkipDetail, SkipReason};

/// What a run would do, and why, and what it would not do, and why not.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub label_changes: Vec<LabelChange>,
    /// The label changes as writes, one per node, in node order.
    pub label_applies: Vec<LabelApply>,
    /// In the order they are to be carried out.
    pub evictions: Vec<Eviction>,
    pub skipped: Vec<Skip>,
    pub drs_rules: Vec<DrsRuleChange>,
    /// `drs_rules` as vCenter reconfigurations, one per cluster: what a run writes.
    #[serde(skip)]
    pub drs_batches: Vec<DrsBatch>,
    /// Whether a failed eviction records a Warning Event (the policy's
    /// `evictionFailureEventNotification`), resolved here so the executor never reads the
    /// policy.
    #[serde(skip)]
    pub events_on_failure: bool,
    /// How each mapped node was matched to the inventory, in node order.
    pub mapped_nodes: Vec<MappedNode>,
    pub unmapped_nodes: Vec<String>,
    pub warnings: Vec<Warning>,
    /// What the utilization plugins measured: each judged node's usage against its thresholds,
    /// before and after the plan's moves. Not in the JSON report; the HTML view draws it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub utilization: Vec<NodeUtilization>,
    /// Host-failure exposure before and after the plan; `None` without a vSphere inventory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exposure: Option<Exposure>,
}

/// One planned eviction.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Eviction {
    pub namespace: String,
    pub pod: String,
    pub node: String,
    /// The ESXi host of the pod's node, when mapped.
    pub host: Option<String>,
    pub strategy: PluginKind,
    pub profile: String,
    /// Why: the violated rule and the pod it conflicts with. In the report, its sentence
    /// (`reason`) and its stable name (`code`).
    #[serde(flatten)]
    pub reason: EvictionReason,
    /// A node that would take the pod (what the feasibility check found), when checked.
    pub fits_on: Option<String>,
    /// The pod's uid when planned: the eviction's precondition, so a pod recreated under the
    /// same name is not evicted. Snapshot files may lack it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// The policy's `gracePeriodSeconds`; the pod's own when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grace_period_seconds: Option<i64>,
    /// Relabelled nodes whose new labels the decision relies on (the rule is in the
    /// `dependencies` module): if one of their label writes fails, this eviction is not
    /// attempted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub depends_on_labels_of: Vec<Arc<str>>,
    /// The node named in `fits_on`, for views that place the replacement (not in the report,
    /// whose `fitsOn` already says it in words).
    #[serde(skip)]
    pub landing: Option<String>,
    /// The workload (`namespace/Kind/name`) the eviction history records it under, when
    /// pacing is on and the pod has a controller: the run records it in the Lease before
    /// sending it.
    #[serde(skip)]
    pub paced_as: Option<String>,
}

/// A candidate that is not evicted.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Skip {
    pub namespace: String,
    pub pod: String,
    pub node: Option<String>,
    pub strategy: PluginKind,
    pub profile: String,
    /// Implied by `detail`, kept beside it for the report's coarse grouping.
    pub reason: SkipReason,
    /// In the report, its sentence (`detail`) and its stable name (`code`).
    #[serde(flatten)]
    pub detail: SkipDetail,
}

/// One node as a utilization plugin judged it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeUtilization {
    pub strategy: PluginKind,
    pub profile: String,
    pub node: String,
    pub class: UtilizationClass,
    /// One entry per judged resource, sorted by name.
    pub resources: Vec<ResourceUtilization>,
}

/// Where a node stands against a utilization plugin's thresholds, before the plan's moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum UtilizationClass {
    /// At or below `thresholds` in every resource: a destination (Low…), or a source (High…).
    Underutilized,
    /// Above `targetThresholds` in some resource: a source of `LowNodeUtilization`.
    AboveTarget,
    /// Neither.
    Appropriate,
}

impl UtilizationClass {
    pub fn as_str(self) -> &'static str {
        match self {
            UtilizationClass::Underutilized => "underutilized",
            UtilizationClass::AboveTarget => "above target",
            UtilizationClass::Appropriate => "appropriately utilized",
        }
    }
}

/// One resource of a judged node, in percent of its allocatable.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceUtilization {
    pub resource: String,
    pub before: f64,
    /// After the plan's evictions from it and the replacements counted onto it.
    pub after: f64,
    /// `thresholds`, as a percentage of this node.
    pub low: f64,
    /// `targetThresholds` (LowNodeUtilization only).
    pub high: Option<f64>,
}
