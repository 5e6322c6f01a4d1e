//! The typed view of cluster state the planner works on: only what planning needs, already
//! parsed (selectors, quantities, timestamps), so `plan()` never touches raw API objects.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use kube::core::{Expression, Selector};
use serde::Serialize;

pub mod history;
mod labels;
mod resources;

use crate::inventory::Inventory;
use history::History;
pub use labels::{Interner, Labels};
pub use resources::{OtherName, ResourceName, Resources};

/// A label selector as its requirements, all of which must hold; empty selects everything.
///
/// kube's `Selector` hides its expressions; the planner needs to read them to answer a
/// selector from its label index (the most selective `key=value` first) without a copy.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Requirements(Vec<Expression>);

impl Requirements {
    pub fn matches(&self, labels: &Labels) -> bool {
        self.0
            .iter()
            .all(|expression| expression_matches(expression, labels))
    }

    pub fn selects_all(&self) -> bool {
        self.0.is_empty()
    }

    pub fn expressions(&self) -> &[Expression] {
        &self.0
    }

    pub fn push(&mut self, expression: Expression) {
        self.0.push(expression);
    }
}

/// kube's `Expression::matches` reads a `BTreeMap<String, String>`; this is the same rule
/// over [`Labels`]. A missing key satisfies `NotIn` and `NotEqual`, as in Kubernetes.
fn expression_matches(expression: &Expression, labels: &Labels) -> bool {
    match expression {
        Expression::In(key, values) => labels.get(key).is_some_and(|v| values.contains(v)),
        Expression::NotIn(key, values) => !labels.get(key).is_some_and(|v| values.contains(v)),
        Expression::Equal(key, value) => labels.get(key) == Some(value.as_str()),
        Expression::NotEqual(key, value) => labels.get(key) != Some(value.as_str()),
        Expression::Exists(key) => labels.contains_key(key),
        Expression::DoesNotExist(key) => !labels.contains_key(key),
    }
}

impl From<Selector> for Requirements {
    fn from(selector: Selector) -> Requirements {
        Requirements(selector.into_iter().collect())
    }
}

/// Written as kube writes a `Selector`: `app=web,tier in (a,b)`.
impl std::fmt::Display for Requirements {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        for (index, expression) in self.0.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            write!(f, "{expression}")?;
        }
        Ok(())
    }
}

impl FromIterator<Expression> for Requirements {
    fn from_iter<I: IntoIterator<Item = Expression>>(expressions: I) -> Requirements {
        Requirements(expressions.into_iter().collect())
    }
}

impl From<Expression> for Requirements {
    fn from(expression: Expression) -> Requirements {
        Requirements(vec![expression])
    }
}

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

/// A Kubernetes node.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub name: String,
    /// `metadata.uid`; snapshot files may lack it.
    pub uid: Option<String>,
    pub labels: Labels,
    /// Label keys our field manager holds through server-side apply, from
    /// `metadata.managedFields`; empty when the object came without them (snapshot files).
    pub applied_label_keys: BTreeSet<String>,
    pub provider_id: Option<String>,
    pub system_uuid: Option<String>,
    /// `status.addresses` of type `InternalIP`: an ESXi host node (Supervisor clusters) may be
    /// known to vCenter by one of them.
    pub internal_ips: Vec<String>,
    /// `spec.unschedulable` (cordoned).
    pub unschedulable: bool,
    /// The `Ready` condition is `True`.
    pub ready: bool,
    pub taints: Vec<Taint>,
    pub allocatable: Resources,
}

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

/// Pod phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Phase {
    Pending,
    Running,
    Succeeded,
    Failed,
    Unknown,
}

impl Phase {
    /// The phase as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Pending => "Pending",
            Phase::Running => "Running",
            Phase::Succeeded => "Succeeded",
            Phase::Failed => "Failed",
            Phase::Unknown => "Unknown",
        }
    }
}

/// Quality-of-service class; the order is the eviction preference (BestEffort goes first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Qos {
    BestEffort,
    Burstable,
    Guaranteed,
}

/// An owner reference. Its texts are shared (interned while converting): every replica of a
/// workload names the same owner, and one allocation per text per pod was a tenth of the
/// resident memory at 150,000 pods.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Owner {
    pub kind: OwnerKind,
    pub name: Arc<str>,
    pub uid: Arc<str>,
    pub controller: bool,
}

/// An owner reference's `kind`, read once while converting so that planning decides on the
/// variant. The kinds planning treats apart are variants; any other is kept as written (shared,
/// like the owner's other texts). Built through `From<&str>`, so a known kind is never `Other`.
/// Ordered by its text, as the kind was before it was typed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum OwnerKind {
    ReplicaSet,
    StatefulSet,
    ReplicationController,
    DaemonSet,
    Job,
    /// A static pod's owner: the node it runs on.
    Node,
    Other(Arc<str>),
}

impl OwnerKind {
    /// The kind a text names, when it is one planning treats apart.
    pub fn known(kind: &str) -> Option<OwnerKind> {
        Some(match kind {
            "ReplicaSet" => OwnerKind::ReplicaSet,
            "StatefulSet" => OwnerKind::StatefulSet,
            "ReplicationController" => OwnerKind::ReplicationController,
            "DaemonSet" => OwnerKind::DaemonSet,
            "Job" => OwnerKind::Job,
            "Node" => OwnerKind::Node,
            _ => return None,
        })
    }

    /// The kind as the API spells it.
    pub fn as_str(&self) -> &str {
        match self {
            OwnerKind::ReplicaSet => "ReplicaSet",
            OwnerKind::StatefulSet => "StatefulSet",
            OwnerKind::ReplicationController => "ReplicationController",
            OwnerKind::DaemonSet => "DaemonSet",
            OwnerKind::Job => "Job",
            OwnerKind::Node => "Node",
            OwnerKind::Other(kind) => kind,
        }
    }
}

impl From<&str> for OwnerKind {
    fn from(kind: &str) -> OwnerKind {
        OwnerKind::known(kind).unwrap_or_else(|| OwnerKind::Other(kind.into()))
    }
}

impl std::fmt::Display for OwnerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialOrd for OwnerKind {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for OwnerKind {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

/// A pod, reduced to what planning reads. Fields most pods leave empty are in [`PodExtras`],
/// read through accessors: `None` there costs one pointer where each empty field cost its own
/// header. Lists are boxed slices (16 bytes, no spare capacity): they are not changed once
/// converted.
#[derive(Clone, Debug, PartialEq)]
pub struct Pod {
    pub namespace: Arc<str>,
    pub name: String,
    pub uid: String,
    pub labels: Labels,
    pub node_name: Option<Arc<str>>,
    pub phase: Phase,
    /// `metadata.deletionTimestamp` is set.
    pub terminating: bool,
    /// The `Ready` condition is `True`; a pod recorded without conditions is not Ready, as the
    /// Eviction API judges it.
    pub ready: bool,
    pub created: Option<DateTime<Utc>>,
    pub started: Option<DateTime<Utc>>,
    pub priority: i32,
    pub qos: Qos,
    pub owners: Box<[Owner]>,
    /// Container images, sorted (for duplicate detection); shared by a workload's replicas.
    pub images: Box<[Arc<str>]>,
    /// Requests as the scheduler sums them (containers, native sidecars, the largest init
    /// step, overhead), including one `pods`.
    pub requests: Resources,
    pub node_selector: Labels,
    /// Required pod anti-affinity terms.
    pub anti_affinity: Box<[AffinityTerm]>,
    pub spread_constraints: Box<[SpreadConstraint]>,
    /// Annotation `kubernetes.io/config.mirror` is present.
    pub mirror: bool,
    /// Annotation `descheduler.alpha.kubernetes.io/evict` is present.
    pub force_evict: bool,
    /// Annotation `descheduler.alpha.kubernetes.io/prefer-no-eviction` is present.
    pub prefer_no_eviction: bool,
    /// Uses an `emptyDir` or `hostPath` volume.
    pub local_storage: bool,
    pub resource_claims: bool,
    /// `status.conditions`, in the order the API lists them (PodLifeTime's `conditions`).
    pub conditions: Box<[PodCondition]>,
    /// `None` when every field of [`PodExtras`] is empty (see [`PodExtras::boxed`]).
    pub extras: Option<Box<PodExtras>>,
}

/// The fields of a [`Pod`] that most pods leave empty.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodExtras {
    pub priority_class: Option<String>,
    /// Required node affinity: the pod fits a node matching any term. `None` = no constraint.
    pub node_affinity: Option<Vec<NodeSelectorTerm>>,
    /// Preferred node affinity: weighted terms the scheduler scores nodes by.
    pub preferred_node_affinity: Vec<PreferredTerm>,
    pub tolerations: Vec<Toleration>,
    /// Preferred pod anti-affinity terms: the scheduler scores against them, and the
    /// anti-affinity strategy acts on them with `includeSoftConstraints`.
    pub preferred_anti_affinity: Vec<WeightedAffinityTerm>,
    /// Preferred pod affinity terms: the scheduler scores towards them.
    pub preferred_affinity: Vec<WeightedAffinityTerm>,
    /// Annotation `kubernetes.io/config.source`, when present.
    pub config_source: Option<ConfigSource>,
    /// Names of the PersistentVolumeClaims it mounts.
    pub claims: Vec<String>,
    /// `status.reason` (`Evicted`, `NodeLost`, `Shutdown`, …), when set.
    pub reason: Option<String>,
    /// `status.containerStatuses`: restarts and states, for the lifecycle strategies.
    pub container_statuses: Vec<ContainerStatus>,
    /// `status.initContainerStatuses`.
    pub init_container_statuses: Vec<ContainerStatus>,
    /// `status.ephemeralContainerStatuses` (debug containers `kubectl debug` adds).
    pub ephemeral_container_statuses: Vec<ContainerStatus>,
}

impl PodExtras {
    /// Boxed, or `None` when every field is empty, so pods without extras compare equal
    /// however they were built.
    pub fn boxed(self) -> Option<Box<PodExtras>> {
        (self != PodExtras::default()).then(|| Box::new(self))
    }
}

/// A pod condition as PodLifeTime's `conditions` filter reads it. `type` and `status` are kept
/// as written: types are open (readiness gates add their own) and the filter compares text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodCondition {
    /// `type` (`Ready`, `Initialized`, `PodScheduled`, a readiness gate's, …).
    pub condition_type: Arc<str>,
    /// `status`: `True`, `False` or `Unknown`.
    pub status: Arc<str>,
    /// `reason` (`PodCompleted`, …), when set.
    pub reason: Option<Arc<str>>,
    /// `lastTransitionTime`, when set.
    pub last_transition: Option<DateTime<Utc>>,
}

/// Where the kubelet got a pod from (annotation `kubernetes.io/config.source`), read once while
/// converting: a pod from anywhere but the API server is static, and evicting it does nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigSource {
    /// `api`: the API server, as for every pod a controller or a user created.
    Api,
    /// `file`: a manifest in the kubelet's static pod directory.
    File,
    /// `http`: a manifest the kubelet fetched from a URL.
    Http,
    /// Any other value, kept as written.
    Other(String),
}

impl From<String> for ConfigSource {
    fn from(source: String) -> ConfigSource {
        match source.as_str() {
            "api" => ConfigSource::Api,
            "file" => ConfigSource::File,
            "http" => ConfigSource::Http,
            _ => ConfigSource::Other(source),
        }
    }
}

/// What the lifecycle strategies read of a container's status.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContainerStatus {
    pub restart_count: i32,
    /// `state.waiting.reason` (`CrashLoopBackOff`, `ImagePullBackOff`, …), when waiting.
    pub waiting_reason: Option<String>,
    /// `state.terminated`, when terminated.
    pub terminated: Option<Terminated>,
}

impl ContainerStatus {
    /// The reason of its state: waiting's or terminated's, when it has one.
    pub fn reasons(&self) -> impl Iterator<Item = &str> {
        let terminated = self.terminated.as_ref().and_then(|t| t.reason.as_deref());
        self.waiting_reason.as_deref().into_iter().chain(terminated)
    }
}

/// A terminated container's `reason` (`Error`, `OOMKilled`, …) and `exitCode`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Terminated {
    pub reason: Option<String>,
    pub exit_code: i32,
}

/// A `preferredDuringSchedulingIgnoredDuringExecution` node affinity term.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreferredTerm {
    pub weight: i32,
    pub preference: NodeSelectorTerm,
}

impl Pod {
    fn extra<T: ?Sized>(&self, field: impl FnOnce(&PodExtras) -> &T, empty: &'static T) -> &T {
        self.extras.as_deref().map_or(empty, field)
    }

    /// The pod's [`PodExtras`] to change, created empty when it has none.
    pub fn extras_mut(&mut self) -> &mut PodExtras {
        self.extras.get_or_insert_with(Box::default)
    }

    pub fn priority_class(&self) -> Option<&str> {
        self.extras.as_deref()?.priority_class.as_deref()
    }

    /// Required node affinity: the pod fits a node matching any term. `None` = no constraint.
    pub fn node_affinity(&self) -> Option<&[NodeSelectorTerm]> {
        self.extras.as_deref()?.node_affinity.as_deref()
    }

    /// Preferred node affinity: weighted terms the scheduler scores nodes by.
    pub fn preferred_node_affinity(&self) -> &[PreferredTerm] {
        self.extra(|extras| &extras.preferred_node_affinity[..], &[])
    }

    pub fn tolerations(&self) -> &[Toleration] {
        self.extra(|extras| &extras.tolerations[..], &[])
    }

    /// Preferred pod anti-affinity terms.
    pub fn preferred_anti_affinity(&self) -> &[WeightedAffinityTerm] {
        self.extra(|extras| &extras.preferred_anti_affinity[..], &[])
    }

    /// Preferred pod affinity terms.
    pub fn preferred_affinity(&self) -> &[WeightedAffinityTerm] {
        self.extra(|extras| &extras.preferred_affinity[..], &[])
    }

    /// Annotation `kubernetes.io/config.source`, when present.
    pub fn config_source(&self) -> Option<&ConfigSource> {
        self.extras.as_deref()?.config_source.as_ref()
    }

    /// Names of the PersistentVolumeClaims it mounts.
    pub fn claims(&self) -> &[String] {
        self.extra(|extras| &extras.claims[..], &[])
    }

    /// `status.reason`, when set.
    pub fn reason(&self) -> Option<&str> {
        self.extras.as_deref()?.reason.as_deref()
    }

    /// `status.containerStatuses`.
    pub fn container_statuses(&self) -> &[ContainerStatus] {
        self.extra(|extras| &extras.container_statuses[..], &[])
    }

    /// `status.initContainerStatuses`.
    pub fn init_container_statuses(&self) -> &[ContainerStatus] {
        self.extra(|extras| &extras.init_container_statuses[..], &[])
    }

    /// `status.ephemeralContainerStatuses`.
    pub fn ephemeral_container_statuses(&self) -> &[ContainerStatus] {
        self.extra(|extras| &extras.ephemeral_container_statuses[..], &[])
    }

    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// The controlling owner, if any.
    pub fn controller(&self) -> Option<&Owner> {
        self.owners.iter().find(|owner| owner.controller)
    }

    /// Pods that count for nothing any more: terminating, or finished.
    pub fn is_gone(&self) -> bool {
        self.terminating || matches!(self.phase, Phase::Succeeded | Phase::Failed)
    }

    /// Container statuses, with the init containers' when asked.
    pub fn statuses(&self, including_init: bool) -> impl Iterator<Item = &ContainerStatus> {
        let init: &[ContainerStatus] = if including_init {
            self.init_container_statuses()
        } else {
            &[]
        };
        self.container_statuses().iter().chain(init)
    }

    /// The sum of the weights of the preferred node affinity terms a node matches (the
    /// scheduler's NodeAffinity score before normalising).
    pub fn preference_weight(&self, node_name: &str, labels: &Labels) -> i64 {
        self.preferred_node_affinity()
            .iter()
            .filter(|term| term.preference.matches(node_name, labels))
            .map(|term| i64::from(term.weight))
            .sum()
    }
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
/// folded into the selector using the owning pod's labels.
#[derive(Clone, Debug, PartialEq)]
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

/// A topology spread constraint with `matchLabelKeys` folded into the selector.
#[derive(Clone, Debug, PartialEq)]
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

#[cfg(test)]
mod tests {
    use kube::core::SelectorExt;

    use super::*;

    #[test]
    fn an_owner_kind_planning_knows_is_its_variant_and_any_other_keeps_its_text() {
        assert_eq!(OwnerKind::from("DaemonSet"), OwnerKind::DaemonSet);
        assert_eq!(OwnerKind::from("Node"), OwnerKind::Node);
        let custom = OwnerKind::from("Rollout");
        assert_eq!(custom, OwnerKind::Other("Rollout".into()));
        assert_eq!(custom.to_string(), "Rollout");
        // Ordered by text, as the kind was before it was typed.
        assert!(OwnerKind::ReplicaSet < custom && custom < OwnerKind::StatefulSet);
    }

    /// Every operator, on a key present with the value named, present with another value, and
    /// absent: the result must be kube's `Expression::matches` on the same labels as a map.
    #[test]
    fn requirements_match_labels_as_kubes_expressions_match_a_map() {
        let set = |values: &[&str]| values.iter().map(|v| v.to_string()).collect();
        let key = || "app".to_string();
        let expressions = [
            Expression::In(key(), set(&["web", "api"])),
            Expression::In(key(), set(&[])),
            Expression::In(key(), set(&[""])),
            Expression::NotIn(key(), set(&["web", "api"])),
            Expression::NotIn(key(), set(&[])),
            Expression::NotIn(key(), set(&[""])),
            Expression::Equal(key(), "web".to_string()),
            Expression::Equal(key(), String::new()),
            Expression::NotEqual(key(), "web".to_string()),
            Expression::NotEqual(key(), String::new()),
            Expression::Exists(key()),
            Expression::DoesNotExist(key()),
        ];
        let label_sets: [&[(&str, &str)]; 6] = [
            &[("app", "web")],
            &[("app", "db")],
            &[("app", "")],
            &[("tier", "web")],
            &[],
            &[("ap", "web"), ("app", "api"), ("apps", "web")],
        ];
        for pairs in label_sets {
            let map: BTreeMap<String, String> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let labels = Labels::from(map.clone());
            for expression in &expressions {
                assert_eq!(
                    Requirements::from(expression.clone()).matches(&labels),
                    expression.matches(&map),
                    "{expression} on {map:?}"
                );
            }
            // Exists and NotIn together: every expression must hold.
            let both = [expressions[10].clone(), expressions[3].clone()];
            let kubes = both.iter().all(|e| e.matches(&map));
            assert_eq!(
                Requirements(both.to_vec()).matches(&labels),
                kubes,
                "{map:?}"
            );
        }
        assert!(Requirements::default().matches(&Labels::default()));
    }
}
