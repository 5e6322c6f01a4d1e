//! Why a pod is evicted and why a candidate stays, as data: one variant per cause with the
//! values its sentence names. The report prints each one's `Display` (the sentence) beside its
//! [`EvictionCode`] or [`SkipCode`] (a stable kebab-case name that views and metrics group by);
//! decisions and tests match the variants, never the words.
//!
//! Below the strategies, which fill these in, and above the checks whose refusals they carry
//! (protections, budgets, the availability gate, feasibility), so imports only run downward.

use std::fmt;

use serde::Serialize;
use serde::ser::SerializeMap;

use crate::snapshot::TaintEffect;

use crate::plan::judge::availability::GuardRefusal;
use crate::plan::judge::budget::{BudgetRefusal, LimitReached, PdbRefusal};
use crate::plan::judge::feasibility::NoNode;
use crate::plan::judge::rollout::Rollout;
use crate::plan::model::protection::{self, Protection};

/// Declares a code enum, its text and the list of every code from one table, so the list
/// cannot miss a variant.
macro_rules! codes {
    ($(#[$meta:meta])* $name:ident { $($(#[$doc:meta])* $variant:ident => $text:literal,)* }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $($(#[$doc])* $variant,)*
        }

        impl $name {
            /// Every code, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }
    };
}

codes! {
    /// The stable name of an eviction's reason, beside its sentence in the report.
    EvictionCode {
        RequiredAntiAffinity => "required-anti-affinity",
        PreferredAntiAffinity => "preferred-anti-affinity",
        TopologySpread => "topology-spread",
        Duplicates => "duplicates",
        RequiredNodeAffinity => "required-node-affinity",
        PreferredNodeAffinity => "preferred-node-affinity",
        NodeTaint => "node-taint",
        TooManyRestarts => "too-many-restarts",
        MaxPodLifeTime => "max-pod-life-time",
        PodState => "pod-state",
        PodCondition => "pod-condition",
        ContainerExitCode => "container-exit-code",
        FailedWithReason => "failed-with-reason",
        FailedWithExitCode => "failed-with-exit-code",
        Failed => "failed",
        AboveTargetThresholds => "above-target-thresholds",
        Underutilized => "underutilized",
    }
}

codes! {
    /// The stable name of a skip's detail, beside its sentence in the report: finer than the
    /// skip's `reason`, which it implies.
    SkipCode {
        Protected => "protected",
        RolloutInProgress => "rollout-in-progress",
        NoFeasibleNode => "no-feasible-node",
        NoOtherNode => "no-other-node",
        WouldReturnOverShare => "would-return-over-share",
        WouldReturnToNode => "would-return-to-node",
        WouldReturnToDomain => "would-return-to-domain",
        PdbSeveral => "pdb-several",
        PdbUnprocessed => "pdb-unprocessed",
        PdbNegativeAllowance => "pdb-negative-allowance",
        PdbUnconfirmed => "pdb-unconfirmed",
        PdbExhausted => "pdb-exhausted",
        LimitTotal => "limit-total",
        LimitPerNode => "limit-per-node",
        LimitPerNamespace => "limit-per-namespace",
        LimitPerWorkload => "limit-per-workload",
        LimitNodeDrain => "limit-node-drain",
        NoMetrics => "no-metrics",
        WorkloadUnavailable => "workload-unavailable",
        HistoryUnreadable => "history-unreadable",
        HistoryFull => "history-full",
        ClusterRate => "cluster-rate",
        Paced => "paced",
    }
}

/// Why a candidate stays (the report's fixed vocabulary).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SkipReason {
    /// A protection applies (DaemonSet, local storage, critical priority, …).
    Protected,
    /// No other node would take it without breaking the same or another hard constraint.
    NoFeasibleNode,
    /// Its PodDisruptionBudget allows no (further) disruption, or several PDBs match it.
    Pdb,
    /// A per-node, per-namespace or total eviction limit is reached.
    Limit,
    /// The scheduler would place its replacement back where it leaves (its node, or the
    /// spread domain being balanced): the eviction would change nothing.
    WouldReturn,
    /// A utilization plugin reads actual usage, and the snapshot has no `metrics.k8s.io`
    /// PodMetrics for the pod: what moving it would free is unknown.
    NoMetrics,
    /// Its workload is rolling out (pods of more than one ReplicaSet or revision): its
    /// controller is replacing pods already.
    RolloutInProgress,
    /// Its workload has more pods unavailable (Pending, not Ready, terminating, or evicted by
    /// this plan) than `maxUnavailablePerWorkload` allows beside this one.
    WorkloadUnavailable,
    /// Its workload lost as many pods within the pacing window as pacing allows, counting
    /// earlier runs' evictions from the eviction history.
    Paced,
    /// The eviction history cannot be read, so pacing cannot be judged: it fails closed.
    HistoryUnreadable,
}

impl SkipReason {
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::Protected => "protected",
            SkipReason::NoFeasibleNode => "no-feasible-node",
            SkipReason::Pdb => "pdb",
            SkipReason::Limit => "limit",
            SkipReason::WouldReturn => "would-return",
            SkipReason::NoMetrics => "no-metrics",
            SkipReason::RolloutInProgress => "rollout-in-progress",
            SkipReason::WorkloadUnavailable => "workload-unavailable",
            SkipReason::Paced => "paced",
            SkipReason::HistoryUnreadable => "history-unreadable",
        }
    }
}

/// Why a candidate stays, with what its sentence names.
#[derive(Clone, Debug, PartialEq)]
pub enum SkipDetail {
    /// The evictor's protections that apply, in their order.
    Protected(Vec<Protection>),
    RollingOut(Rollout),
    /// No other node would take it (or none exists), and why each refused.
    NoFeasibleNode(NoNode<String>),
    /// The scheduler would send its replacement to this node (`node (host)`), where its
    /// duplicates group would be over its even share.
    WouldReturnOverShare {
        node: String,
    },
    /// The scheduler would send its replacement back to this node, or (with `key`) to this
    /// node in the same domain of the spread constraint's key.
    WouldReturn {
        node: String,
        key: Option<String>,
    },
    Budget(BudgetRefusal),
    /// A utilization plugin's `evictionLimits.node` is reached on the source node.
    NodeDrainLimit {
        limit: u32,
        node: String,
    },
    /// No PodMetrics recorded for the pod while a utilization plugin reads actual usage.
    NoMetrics,
    Guard(GuardRefusal),
}

impl SkipDetail {
    /// The skip reason the report files it under.
    pub fn reason(&self) -> SkipReason {
        match self {
            SkipDetail::Protected(_) => SkipReason::Protected,
            SkipDetail::RollingOut(_) => SkipReason::RolloutInProgress,
            SkipDetail::NoFeasibleNode(_) => SkipReason::NoFeasibleNode,
            SkipDetail::WouldReturnOverShare { .. } | SkipDetail::WouldReturn { .. } => {
                SkipReason::WouldReturn
            }
            SkipDetail::Budget(BudgetRefusal::Pdb(_)) => SkipReason::Pdb,
            SkipDetail::Budget(BudgetRefusal::Limit(_)) | SkipDetail::NodeDrainLimit { .. } => {
                SkipReason::Limit
            }
            SkipDetail::NoMetrics => SkipReason::NoMetrics,
            SkipDetail::Guard(GuardRefusal::Unavailable { .. }) => SkipReason::WorkloadUnavailable,
            SkipDetail::Guard(GuardRefusal::HistoryUnreadable(_)) => SkipReason::HistoryUnreadable,
            SkipDetail::Guard(
                GuardRefusal::HistoryFull { .. }
                | GuardRefusal::ClusterRate { .. }
                | GuardRefusal::Paced { .. },
            ) => SkipReason::Paced,
        }
    }

    pub fn code(&self) -> SkipCode {
        match self {
            SkipDetail::Protected(_) => SkipCode::Protected,
            SkipDetail::RollingOut(_) => SkipCode::RolloutInProgress,
            SkipDetail::NoFeasibleNode(none) => no_node_code(none),
            SkipDetail::WouldReturnOverShare { .. } => SkipCode::WouldReturnOverShare,
            SkipDetail::WouldReturn { key: None, .. } => SkipCode::WouldReturnToNode,
            SkipDetail::WouldReturn { key: Some(_), .. } => SkipCode::WouldReturnToDomain,
            SkipDetail::Budget(BudgetRefusal::Pdb(pdb)) => match pdb {
                PdbRefusal::Several(_) => SkipCode::PdbSeveral,
                PdbRefusal::Unprocessed { .. } => SkipCode::PdbUnprocessed,
                PdbRefusal::NegativeAllowance { .. } => SkipCode::PdbNegativeAllowance,
                PdbRefusal::Unconfirmed { .. } => SkipCode::PdbUnconfirmed,
                PdbRefusal::Exhausted { .. } => SkipCode::PdbExhausted,
            },
            SkipDetail::Budget(BudgetRefusal::Limit(limit)) => match limit {
                LimitReached::Total { .. } => SkipCode::LimitTotal,
                LimitReached::PerNode { .. } => SkipCode::LimitPerNode,
                LimitReached::PerNamespace { .. } => SkipCode::LimitPerNamespace,
                LimitReached::PerWorkload { .. } => SkipCode::LimitPerWorkload,
            },
            SkipDetail::NodeDrainLimit { .. } => SkipCode::LimitNodeDrain,
            SkipDetail::NoMetrics => SkipCode::NoMetrics,
            SkipDetail::Guard(guard) => match guard {
                GuardRefusal::Unavailable { .. } => SkipCode::WorkloadUnavailable,
                GuardRefusal::HistoryUnreadable(_) => SkipCode::HistoryUnreadable,
                GuardRefusal::HistoryFull { .. } => SkipCode::HistoryFull,
                GuardRefusal::ClusterRate { .. } => SkipCode::ClusterRate,
                GuardRefusal::Paced { .. } => SkipCode::Paced,
            },
        }
    }
}

/// The code of a pod no other node would take: `no-other-node` when there was no other node to
/// ask, `no-feasible-node` when every one refused. What-if's unplaced pods carry it too.
pub fn no_node_code<S>(none: &NoNode<S>) -> SkipCode {
    if none.refusals.is_empty() {
        SkipCode::NoOtherNode
    } else {
        SkipCode::NoFeasibleNode
    }
}

impl fmt::Display for SkipDetail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipDetail::Protected(protections) => f.write_str(&protection::detail(protections)),
            SkipDetail::RollingOut(rollout) => rollout.fmt(f),
            SkipDetail::NoFeasibleNode(none) => none.fmt(f),
            SkipDetail::WouldReturnOverShare { node } => write!(
                f,
                "the scheduler would send its replacement to node {node}, where its group would \
                 be over its even share: evicting it would only move the excess"
            ),
            SkipDetail::WouldReturn { node, key } => {
                f.write_str("the scheduler would send its replacement ")?;
                match key {
                    Some(key) => write!(f, "to node {node}, in the same {key} domain")?,
                    None => write!(f, "back to node {node}")?,
                }
                f.write_str(
                    ": it scores best of the nodes that would take it, so evicting it would \
                     change nothing",
                )
            }
            SkipDetail::Budget(refusal) => refusal.fmt(f),
            SkipDetail::NodeDrainLimit { limit, node } => write!(
                f,
                "evictionLimits.node ({limit}) reached on node {node}: its other pods stay"
            ),
            SkipDetail::NoMetrics => f.write_str(
                "no metrics.k8s.io PodMetrics recorded for it: what moving it would free is \
                 unknown",
            ),
            SkipDetail::Guard(refusal) => refusal.fmt(f),
        }
    }
}

/// In the report: `"detail"`, its sentence, and `"code"`, its stable name.
impl Serialize for SkipDetail {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("detail", &format_args!("{self}"))?;
        map.serialize_entry("code", &self.code())?;
        map.end()
    }
}

/// Why a pod is evicted, with what its sentence names.
#[derive(Clone, Debug, PartialEq)]
pub enum EvictionReason {
    AntiAffinity(SharedDomain),
    Spread(Skew),
    /// A node runs `pods` pods of `owner` (`namespace/Kind/name,…`), more than the even
    /// `share` over `targets` nodes.
    Duplicates {
        node: String,
        pods: usize,
        owner: String,
        share: usize,
        targets: usize,
    },
    /// The pod's node no longer matches its required node affinity.
    RequiredNodeAffinity {
        node: String,
    },
    /// The pod's node scores `current` by its preferred node affinity, another node `best`.
    PreferredNodeAffinity {
        node: String,
        current: i64,
        best: i64,
    },
    /// The node has a taint the pod does not tolerate.
    NodeTaint {
        node: String,
        key: String,
        value: String,
        effect: TaintEffect,
    },
    TooManyRestarts {
        restarts: i64,
        threshold: i32,
    },
    LifeTime(LifeTime),
    Failed(PodFailure),
    /// A `LowNodeUtilization` source: above `targetThresholds` in these resources.
    AboveTarget {
        node: String,
        usage: Vec<Usage>,
    },
    /// A `HighNodeUtilization` source: at or below `thresholds` in these resources.
    Underutilized {
        node: String,
        usage: Vec<Usage>,
    },
}

/// Pod anti-affinity the pod breaks, or another pod's that excludes it, in one domain.
#[derive(Clone, Debug, PartialEq)]
pub struct SharedDomain {
    pub strength: Strength,
    pub key: String,
    /// The domain's value of `key`.
    pub value: String,
    /// `key` is the host label the tool maintains: the domain is an ESXi host.
    pub is_host: bool,
    /// The first pod it conflicts with (`namespace/name`) and that pod's node.
    pub partner: String,
    pub partner_node: String,
    /// The term is the pod's own (else the partner's).
    pub own: bool,
    /// How many pods evicting it clears its violations with.
    pub partners: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strength {
    Required,
    Preferred,
}

impl Strength {
    fn as_str(self) -> &'static str {
        match self {
            Strength::Required => "required",
            Strength::Preferred => "preferred",
        }
    }
}

/// A spread domain holding `count` matching pods, `excess` over what the emptiest allows.
#[derive(Clone, Debug, PartialEq)]
pub struct Skew {
    pub key: String,
    pub domain: String,
    pub count: i64,
    pub excess: i64,
    pub max_skew: i32,
    pub schedule_anyway: bool,
    /// A default constraint of the policy (the pod declares none).
    pub defaulted: bool,
}

/// The first `PodLifeTime` filter the pod passes, in upstream's order.
#[derive(Clone, Debug, PartialEq)]
pub enum LifeTime {
    Age {
        age_seconds: i64,
        max: u32,
    },
    State(String),
    Condition {
        condition_type: String,
        status: String,
        reason: Option<String>,
        /// Seconds since its last transition, when recorded.
        for_seconds: Option<i64>,
    },
    ExitCode(i32),
}

/// Why a failed pod failed, as far as its status says.
#[derive(Clone, Debug, PartialEq)]
pub enum PodFailure {
    /// Its `status.reason`.
    Reason(String),
    /// A container's non-zero exit code and its reason.
    ExitCode {
        code: i32,
        reason: Option<String>,
    },
    Unknown,
}

/// One judged resource of a node, in percent of its allocatable.
#[derive(Clone, Debug, PartialEq)]
pub struct Usage {
    pub resource: String,
    pub used: f64,
    pub limit: f64,
}

impl EvictionReason {
    pub fn code(&self) -> EvictionCode {
        match self {
            EvictionReason::AntiAffinity(shared) => match shared.strength {
                Strength::Required => EvictionCode::RequiredAntiAffinity,
                Strength::Preferred => EvictionCode::PreferredAntiAffinity,
            },
            EvictionReason::Spread(_) => EvictionCode::TopologySpread,
            EvictionReason::Duplicates { .. } => EvictionCode::Duplicates,
            EvictionReason::RequiredNodeAffinity { .. } => EvictionCode::RequiredNodeAffinity,
            EvictionReason::PreferredNodeAffinity { .. } => EvictionCode::PreferredNodeAffinity,
            EvictionReason::NodeTaint { .. } => EvictionCode::NodeTaint,
            EvictionReason::TooManyRestarts { .. } => EvictionCode::TooManyRestarts,
            EvictionReason::LifeTime(LifeTime::Age { .. }) => EvictionCode::MaxPodLifeTime,
            EvictionReason::LifeTime(LifeTime::State(_)) => EvictionCode::PodState,
            EvictionReason::LifeTime(LifeTime::Condition { .. }) => EvictionCode::PodCondition,
            EvictionReason::LifeTime(LifeTime::ExitCode(_)) => EvictionCode::ContainerExitCode,
            EvictionReason::Failed(PodFailure::Reason(_)) => EvictionCode::FailedWithReason,
            EvictionReason::Failed(PodFailure::ExitCode { .. }) => EvictionCode::FailedWithExitCode,
            EvictionReason::Failed(PodFailure::Unknown) => EvictionCode::Failed,
            EvictionReason::AboveTarget { .. } => EvictionCode::AboveTargetThresholds,
            EvictionReason::Underutilized { .. } => EvictionCode::Underutilized,
        }
    }
}

impl fmt::Display for EvictionReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EvictionReason::AntiAffinity(shared) => shared.fmt(f),
            EvictionReason::Spread(skew) => skew.fmt(f),
            EvictionReason::Duplicates {
                node,
                pods,
                owner,
                share,
                targets,
            } => write!(
                f,
                "node {node} runs {pods} pods of {owner}, more than the even share of {share} over \
                 {targets} nodes"
            ),
            EvictionReason::RequiredNodeAffinity { node } => {
                write!(
                    f,
                    "node {node} no longer matches its required node affinity"
                )
            }
            EvictionReason::PreferredNodeAffinity {
                node,
                current,
                best,
            } => write!(
                f,
                "node {node} scores {current} by its preferred node affinity, another node {best}"
            ),
            EvictionReason::NodeTaint {
                node,
                key,
                value,
                effect,
            } => {
                write!(f, "node {node} has taint {key}")?;
                if !value.is_empty() {
                    write!(f, "={value}")?;
                }
                let effect = match effect {
                    TaintEffect::NoSchedule => "NoSchedule",
                    TaintEffect::PreferNoSchedule => "PreferNoSchedule",
                    TaintEffect::NoExecute => "NoExecute",
                };
                write!(f, ":{effect}, which it does not tolerate")
            }
            EvictionReason::TooManyRestarts {
                restarts,
                threshold,
            } => write!(
                f,
                "its containers restarted {restarts} times, at least podRestartThreshold {threshold}"
            ),
            EvictionReason::LifeTime(life_time) => life_time.fmt(f),
            EvictionReason::Failed(failure) => failure.fmt(f),
            EvictionReason::AboveTarget { node, usage } => {
                write!(f, "node {node} is above targetThresholds (")?;
                write_usage(f, usage, ">")?;
                f.write_str("): an underutilized node takes the pod")
            }
            EvictionReason::Underutilized { node, usage } => {
                write!(f, "node {node} is underutilized (")?;
                write_usage(f, usage, "<=")?;
                f.write_str("): its pods are packed onto fuller nodes")
            }
        }
    }
}

/// `cpu 82% > 50%, pods 40% > 30%`.
fn write_usage(f: &mut fmt::Formatter<'_>, usage: &[Usage], relation: &str) -> fmt::Result {
    for (i, one) in usage.iter().enumerate() {
        let separator = if i == 0 { "" } else { ", " };
        write!(
            f,
            "{separator}{} {:.0}% {relation} {:.0}%",
            one.resource, one.used, one.limit
        )?;
    }
    Ok(())
}

impl fmt::Display for SharedDomain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let SharedDomain {
            key,
            value,
            partner,
            ..
        } = self;
        f.write_str("shares ")?;
        if self.is_host {
            write!(f, "ESXi host {value}")?;
        } else {
            write!(f, "{key}={value}")?;
        }
        write!(f, " with {partner} on node {}, ", self.partner_node)?;
        let adjective = self.strength.as_str();
        if self.own {
            write!(f, "against its {adjective} anti-affinity on {key}")?;
        } else {
            write!(f, "whose {adjective} anti-affinity on {key} excludes it")?;
        }
        if self.partners > 1 {
            write!(
                f,
                "; evicting it clears its violations with {} pods",
                self.partners
            )?;
        }
        Ok(())
    }
}

impl fmt::Display for Skew {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let anyway = if self.schedule_anyway {
            ", ScheduleAnyway"
        } else {
            ""
        };
        write!(
            f,
            "{} {} holds {} matching pods, {} more than the emptiest domain allows (maxSkew {}{anyway})",
            self.key, self.domain, self.count, self.excess, self.max_skew
        )?;
        if self.defaulted {
            f.write_str("; a default constraint of the policy, as the pod declares none")?;
        }
        Ok(())
    }
}

impl fmt::Display for LifeTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LifeTime::Age { age_seconds, max } => write!(
                f,
                "created {age_seconds}s ago, more than maxPodLifeTimeSeconds {max}"
            ),
            LifeTime::State(state) => write!(f, "in state {state}"),
            LifeTime::Condition {
                condition_type,
                status,
                reason,
                for_seconds,
            } => {
                write!(f, "condition {condition_type}={status}")?;
                if let Some(reason) = reason {
                    write!(f, " ({reason})")?;
                }
                if let Some(seconds) = for_seconds {
                    write!(f, " for {seconds}s")?;
                }
                Ok(())
            }
            LifeTime::ExitCode(code) => write!(f, "a container exited with code {code}"),
        }
    }
}

impl fmt::Display for PodFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PodFailure::Reason(reason) => write!(f, "failed (reason {reason})"),
            PodFailure::ExitCode { code, reason } => {
                write!(f, "failed (a container exited with code {code}")?;
                if let Some(reason) = reason {
                    write!(f, ", {reason}")?;
                }
                f.write_str(")")
            }
            PodFailure::Unknown => f.write_str("failed"),
        }
    }
}

/// In the report: `"reason"`, its sentence, and `"code"`, its stable name.
impl Serialize for EvictionReason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("reason", &format_args!("{self}"))?;
        map.serialize_entry("code", &self.code())?;
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::{
        EvictionCode, EvictionReason, PodFailure, SharedDomain, SkipCode, SkipDetail, Strength,
    };

    /// The sentences no golden report shows.
    #[test]
    fn sentences_the_goldens_do_not_show_read_as_before() {
        let details = [
            (
                SkipDetail::WouldReturnOverShare {
                    node: "w2 (esxi-2)".to_string(),
                },
                "the scheduler would send its replacement to node w2 (esxi-2), where its group \
                 would be over its even share: evicting it would only move the excess",
            ),
            (
                SkipDetail::WouldReturn {
                    node: "w2 (esxi-1)".to_string(),
                    key: Some("zone".to_string()),
                },
                "the scheduler would send its replacement to node w2 (esxi-1), in the same zone \
                 domain: it scores best of the nodes that would take it, so evicting it would \
                 change nothing",
            ),
            (
                SkipDetail::NodeDrainLimit {
                    limit: 3,
                    node: "w1".to_string(),
                },
                "evictionLimits.node (3) reached on node w1: its other pods stay",
            ),
        ];
        for (detail, text) in details {
            assert_eq!(detail.to_string(), text);
        }
        let reasons = [
            (EvictionReason::Failed(PodFailure::Unknown), "failed"),
            (
                EvictionReason::Failed(PodFailure::ExitCode {
                    code: 2,
                    reason: None,
                }),
                "failed (a container exited with code 2)",
            ),
            (
                EvictionReason::AntiAffinity(SharedDomain {
                    strength: Strength::Preferred,
                    key: "zone".to_string(),
                    value: "a".to_string(),
                    is_host: false,
                    partner: "shop/web-2".to_string(),
                    partner_node: "w2".to_string(),
                    own: false,
                    partners: 1,
                }),
                "shares zone=a with shop/web-2 on node w2, whose preferred anti-affinity on zone \
                 excludes it",
            ),
        ];
        for (reason, text) in reasons {
            assert_eq!(reason.to_string(), text);
        }
    }

    #[test]
    fn the_report_carries_the_sentence_and_the_code_side_by_side() {
        let detail = SkipDetail::NoMetrics;
        assert_eq!(
            serde_json::to_value(&detail).expect("serializes"),
            serde_json::json!({
                "detail": "no metrics.k8s.io PodMetrics recorded for it: what moving it would \
                           free is unknown",
                "code": "no-metrics",
            })
        );
        let reason = EvictionReason::Failed(PodFailure::Unknown);
        assert_eq!(
            serde_json::to_value(&reason).expect("serializes"),
            serde_json::json!({"reason": "failed", "code": "failed"})
        );
    }

    /// The rows of the reason-code tables in the commands page: (first cell, second cell).
    fn documented() -> Vec<(String, String)> {
        let page = include_str!("../../../docs/commands.md");
        let section = page
            .split("### Reason codes")
            .nth(1)
            .expect("docs/commands.md has a Reason codes section");
        section
            .lines()
            .take_while(|line| !line.starts_with('#'))
            .filter_map(|line| {
                let mut cells = line.split('|').map(str::trim).skip(1);
                let code = cells.next()?.strip_prefix('`')?.strip_suffix('`')?;
                let second = cells.next().unwrap_or_default();
                Some((code.to_string(), second.trim_matches('`').to_string()))
            })
            .collect()
    }

    #[test]
    fn every_code_is_documented_once_and_every_documented_code_exists() {
        let documented = documented();
        let codes: Vec<&str> = EvictionCode::ALL
            .iter()
            .map(|c| c.as_str())
            .chain(SkipCode::ALL.iter().map(|c| c.as_str()))
            .collect();
        for code in &codes {
            let rows = documented.iter().filter(|(c, _)| c == code).count();
            assert_eq!(
                rows, 1,
                "{code} is in {rows} rows of the Reason codes tables"
            );
        }
        for (code, _) in &documented {
            assert!(
                codes.contains(&code.as_str()),
                "{code} is documented but no code"
            );
        }
    }

    #[test]
    fn codes_are_kebab_case() {
        let codes = EvictionCode::ALL
            .iter()
            .map(|c| c.as_str())
            .chain(SkipCode::ALL.iter().map(|c| c.as_str()));
        for code in codes {
            assert!(
                !code.is_empty()
                    && !code.starts_with('-')
                    && !code.ends_with('-')
                    && !code.contains("--")
                    && code.chars().all(|c| c.is_ascii_lowercase() || c == '-'),
                "{code}"
            );
        }
    }
}
