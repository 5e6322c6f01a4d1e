//! A pod as the planner reads it: what the scheduler model and the evictor need, its owners,
//! state and conditions.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::{
    AffinityTerm, Labels, NodeSelectorTerm, PreferredTerm, Resources, SpreadConstraint, Toleration,
    WeightedAffinityTerm,
};

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
/// converted. The lists a workload's replicas carry alike are shared slices, one allocation
/// for all of them ([`SharedLists`](super::SharedLists)).
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
    pub owners: Arc<[Owner]>,
    /// Container images, sorted (for duplicate detection); shared by a workload's replicas.
    pub images: Arc<[Arc<str>]>,
    /// Requests as the scheduler sums them (containers, native sidecars, the largest init
    /// step, overhead), including one `pods`.
    pub requests: Resources,
    pub node_selector: Labels,
    /// Required pod anti-affinity terms.
    pub anti_affinity: Arc<[AffinityTerm]>,
    pub spread_constraints: Arc<[SpreadConstraint]>,
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

#[cfg(test)]
mod tests {
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
}
