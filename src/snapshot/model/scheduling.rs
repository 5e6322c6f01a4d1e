//! The scheduling terms nodes and pods carry: taints and tolerations, node selector terms,
//! (anti-)affinity terms and topology spread constraints.

use super::{Labels, Requirements};

/// A node taint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Taint {
    pub key: String,
    pub value: String,
    pub effect: TaintEffect,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaintEffect {
    NoSchedule,
    PreferNoSchedule,
    NoExecute,
}

/// A pod toleration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Toleration {
    /// `None` with operator `Exists` tolerates every taint.
    pub key: Option<String>,
    pub exists: bool,
    pub value: String,
    /// `None` tolerates every effect.
    pub effect: Option<TaintEffect>,
}

impl Toleration {
    /// Kubernetes' `Toleration.ToleratesTaint`.
    pub fn tolerates(&self, taint: &Taint) -> bool {
        if self.effect.is_some_and(|effect| effect != taint.effect) {
            return false;
        }
        match &self.key {
            None => self.exists,
            Some(key) if key != &taint.key => false,
            Some(_) => self.exists || self.value == taint.value,
        }
    }
}

/// A `preferredDuringSchedulingIgnoredDuringExecution` node affinity term.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreferredTerm {
    pub weight: i32,
    pub preference: NodeSelectorTerm,
}

/// One `nodeSelectorTerms` entry: all requirements must hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeSelectorTerm {
    pub expressions: Vec<NodeRequirement>,
    /// `matchFields`; Kubernetes supports only `metadata.name`.
    pub fields: Vec<NodeRequirement>,
}

impl NodeSelectorTerm {
    /// Whether a node satisfies this term. A term with no requirements matches nothing, as in
    /// Kubernetes.
    pub fn matches(&self, node_name: &str, labels: &Labels) -> bool {
        if self.expressions.is_empty() && self.fields.is_empty() {
            return false;
        }
        self.expressions
            .iter()
            .all(|r| r.matches(labels.get(&r.key)))
            && self.fields.iter().all(|r| {
                let value = (r.key == "metadata.name").then_some(node_name);
                r.matches(value)
            })
    }
}

/// A node selector requirement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeRequirement {
    pub key: String,
    pub operator: NodeOperator,
    pub values: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeOperator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    Gt,
    Lt,
}

impl NodeRequirement {
    fn matches(&self, value: Option<&str>) -> bool {
        let number = |v: &str| v.parse::<i64>().ok();
        match self.operator {
            NodeOperator::In => value.is_some_and(|v| self.values.iter().any(|x| x == v)),
            NodeOperator::NotIn => !value.is_some_and(|v| self.values.iter().any(|x| x == v)),
            NodeOperator::Exists => value.is_some(),
            NodeOperator::DoesNotExist => value.is_none(),
            NodeOperator::Gt | NodeOperator::Lt => {
                let (Some(actual), Some(bound)) = (
                    value.and_then(number),
                    self.values.first().and_then(|v| number(v)),
                ) else {
                    return false;
                };
                if self.operator == NodeOperator::Gt {
                    actual > bound
                } else {
                    actual < bound
                }
            }
        }
    }
}

/// A required pod (anti-)affinity term, with `matchLabelKeys`/`mismatchLabelKeys` already
/// folded into the selector using the owning pod's labels. Ordered (field by field) so that
/// equal lists of terms can be shared ([`SharedLists`](super::SharedLists)).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct AffinityTerm {
    /// `None` (no labelSelector) matches no pod.
    pub selector: Option<Requirements>,
    pub namespaces: Vec<String>,
    /// `None` = not set; `Some(empty selector)` = every namespace.
    pub namespace_selector: Option<Requirements>,
    pub topology_key: String,
}

/// A `preferredDuringSchedulingIgnoredDuringExecution` pod (anti-)affinity term.
#[derive(Clone, Debug, PartialEq)]
pub struct WeightedAffinityTerm {
    /// 1–100, as the API server validates it.
    pub weight: i32,
    pub term: AffinityTerm,
}

/// `whenUnsatisfiable`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum WhenUnsatisfiable {
    DoNotSchedule,
    ScheduleAnyway,
}

/// A topology spread constraint with `matchLabelKeys` folded into the selector. Ordered
/// (field by field) so that equal lists of constraints can be shared.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SpreadConstraint {
    pub max_skew: i32,
    pub topology_key: String,
    pub when_unsatisfiable: WhenUnsatisfiable,
    /// `None` (no labelSelector) matches no pod.
    pub selector: Option<Requirements>,
    pub min_domains: Option<i32>,
    /// `nodeAffinityPolicy: Honor` (the default).
    pub honor_node_affinity: bool,
    /// `nodeTaintsPolicy: Honor` (default Ignore).
    pub honor_node_taints: bool,
}
