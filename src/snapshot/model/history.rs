//! The eviction history: what earlier runs evicted, per workload, so pacing holds across runs.
//!
//! Pacing needs, per workload, the times of its evictions within the longest window (at most
//! [`RETENTION`]); the report names a workload's latest eviction (its pod and plugin) when
//! pacing holds the workload back. That is all the history keeps.
//!
//! Where it is kept: one ConfigMap beside the run lock's Lease, named after it with
//! [`CONFIG_MAP_SUFFIX`] (`vsphere-descheduler-history`), written only while the run holds the
//! lock. A ConfigMap holds 1 MiB of data ([`MAX_BYTES`]), four times what all of an object's
//! annotations may take (256 KiB), in one object that RBAC grants by name; one line per
//! workload with its times as offsets (`decode::history` has the format) takes 20 to 40 bytes
//! for a workload evicted once, so the history holds 25,000 to 50,000 evictions within a window
//! (a workload evicted more often adds 7 bytes or less per eviction). A workload's latest pod
//! and plugin are kept while they fit, the newest first; older ones are dropped. Only beyond
//! that, with the times of the window alone over 1 MiB, does pacing refuse an eviction
//! (`history-full`).
//!
//! Why not the alternatives: several objects would need names RBAC cannot grant one by one
//! before they exist (a grant of every ConfigMap in the namespace instead of one), and a lock
//! holder would have to list and write them all; deriving recent losses from the workloads' own
//! pods cannot tell an eviction from a rollout, a scale-down or a node drain (an evicted pod is
//! gone, and its replacement only says when it was created), so pacing would count other
//! people's disruptions or miss ours.
//!
//! Before this form, the history was a JSON array of entries in one annotation of the run
//! lock's Lease, at most 32 KiB (about 190 evictions). A history in that form is still read,
//! merged with the ConfigMap's, and the annotation is removed once the run has written the
//! ConfigMap.

use chrono::{DateTime, TimeDelta, Utc};
use std::collections::BTreeMap;

use crate::cause::Failure;

/// The annotation that marks an object holding the history: on the ConfigMap, its format and
/// the instant its times count from; on the run lock's Lease (the earlier form), the history.
pub const ANNOTATION: &str = "vsphere-descheduler.io/eviction-history";
/// The history ConfigMap's name is the run lock's with this suffix.
pub const CONFIG_MAP_SUFFIX: &str = "-history";
/// The most the ConfigMap's data may take, keys and values: the API server refuses a
/// ConfigMap whose values take more than 1 MiB.
pub const MAX_BYTES: usize = 1024 * 1024;
/// The most the earlier form's annotation ever held.
pub const LEGACY_MAX_BYTES: usize = 32 * 1024;
/// How long an entry is kept. Pacing windows may not be longer.
pub const RETENTION: TimeDelta = TimeDelta::hours(24);

/// The name of the history ConfigMap beside the run lock `lease`.
pub fn config_map_name(lease: &str) -> String {
    format!("{lease}{CONFIG_MAP_SUFFIX}")
}

/// One eviction an earlier run sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PastEviction {
    /// When the run sent it (recorded just before sending).
    pub at: DateTime<Utc>,
    /// `namespace/Kind/name`, as the report names workloads (a Deployment, not its ReplicaSet).
    pub workload: String,
    /// The pod and the plugin: kept for a workload's latest eviction, while they fit.
    pub pod: Option<EvictedPod>,
}

/// Which pod an eviction took, and which plugin evicted it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvictedPod {
    pub name: String,
    pub plugin: String,
}

impl PastEviction {
    /// An eviction of `pod` by `plugin`, with both kept.
    pub fn new(at: DateTime<Utc>, workload: &str, pod: &str, plugin: &str) -> PastEviction {
        PastEviction {
            at,
            workload: workload.to_string(),
            pod: Some(EvictedPod {
                name: pod.to_string(),
                plugin: plugin.to_string(),
            }),
        }
    }
}

/// What the snapshot knows of earlier runs' evictions.
#[derive(Clone, Debug, PartialEq)]
pub enum History {
    /// Read, oldest first; empty when no run recorded any (or nothing holds a history yet).
    Recorded(Vec<PastEviction>),
    /// Present but unusable: pacing fails closed, no paced eviction is planned.
    Unreadable(Unreadable),
}

impl Default for History {
    fn default() -> History {
        History::Recorded(Vec::new())
    }
}

/// A history as a snapshot file holds it, read once the file it came from is known (an
/// unreadable one names the file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedHistory {
    /// Its namespace, where the run lock and the ConfigMap are.
    pub namespace: String,
    /// The object's name.
    pub name: String,
    pub stored: Stored,
}

impl RecordedHistory {
    /// `Lease namespace/name` or `ConfigMap namespace/name`.
    pub fn object(&self) -> String {
        let kind = match self.stored {
            Stored::Lease(_) => "Lease",
            Stored::ConfigMap(_) => "ConfigMap",
        };
        if self.namespace.is_empty() {
            format!("{kind} {}", self.name)
        } else {
            format!("{kind} {}/{}", self.namespace, self.name)
        }
    }
}

/// A history as an object stores it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stored {
    /// The run lock Lease's annotation (the earlier form): a JSON array of entries.
    Lease(String),
    /// The history ConfigMap.
    ConfigMap(Compact),
}

/// The history ConfigMap's content: its annotation's value (the format and the instant the
/// times count from) and its data.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Compact {
    pub marker: String,
    pub data: BTreeMap<String, String>,
}

/// Why the history could not be used, naming the object it was read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unreadable {
    /// `ConfigMap namespace/name` or `Lease namespace/name`, and the file it was read from.
    pub object: String,
    /// What is wrong: it decides what the reader is told to do.
    pub cause: HistoryDefect,
}

/// Why a history is unreadable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HistoryDefect {
    /// The object holds something that is not a history this tool writes (the problem in
    /// words): only removing it helps.
    Corrupt(String),
    /// The object that holds it could not be read (the failed request, its kind and its words):
    /// the next run reads it again.
    NotRead(Failure),
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (problem, fix) = match &self.cause {
            HistoryDefect::Corrupt(problem) => (
                problem,
                "Remove the annotation (or the ConfigMap) to start a new history",
            ),
            HistoryDefect::NotRead(failure) => (
                &failure.text,
                "The next run reads it again; where it was refused, grant the run `get` on \
                 the Lease and the ConfigMap (the chart does)",
            ),
        };
        write!(
            f,
            "the eviction history in {} (annotation {ANNOTATION}) cannot be read: {problem}; \
             no workload's pod is evicted while it cannot (pacing fails closed). {fix}",
            self.object
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fix_follows_the_cause() {
        let corrupt = Unreadable {
            object: "Lease ops/x".to_string(),
            cause: HistoryDefect::Corrupt("not a JSON list of evictions".to_string()),
        };
        assert!(
            corrupt
                .to_string()
                .ends_with("Remove the annotation (or the ConfigMap) to start a new history")
        );
        let refused = Unreadable {
            object: "Lease ops/x".to_string(),
            cause: HistoryDefect::NotRead(Failure::new(
                crate::cause::Cause::Forbidden,
                "the Lease could not be read (403)",
            )),
        };
        let text = refused.to_string();
        assert!(!text.contains("Remove the annotation"), "{text}");
        assert!(
            text.contains("grant the run `get` on the Lease and the ConfigMap"),
            "{text}"
        );
    }

    #[test]
    fn the_config_map_is_named_after_the_lock() {
        assert_eq!(
            config_map_name("vsphere-descheduler"),
            "vsphere-descheduler-history"
        );
    }
}
