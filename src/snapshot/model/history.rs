//! The eviction history: what earlier runs evicted, per workload, so pacing holds across runs.
//!
//! It lives in one annotation of the run lock's Lease ([`ANNOTATION`]), an object the run
//! already owns and writes only while it holds the lock, so RBAC does not grow. The value is a
//! JSON array of [`PastEviction`]s, oldest first, bounded: entries older than [`RETENTION`] are
//! dropped, then the oldest until the text fits [`MAX_BYTES`] (the API server allows 256 KiB for
//! all of an object's annotations together).

use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

use crate::cause::Failure;

/// The Lease annotation that holds the history.
pub const ANNOTATION: &str = "vsphere-descheduler.io/eviction-history";
/// The most the annotation's value may take.
pub const MAX_BYTES: usize = 32 * 1024;
/// How long an entry is kept. Pacing windows may not be longer.
pub const RETENTION: TimeDelta = TimeDelta::hours(24);

/// One eviction an earlier run sent.
/// Fields it does not know are ignored, so a newer version's history stays readable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(expecting = "an eviction of the history (a mapping)")]
pub struct PastEviction {
    /// When the run sent it (recorded just before sending).
    pub at: DateTime<Utc>,
    /// `namespace/Kind/name`, as the report names workloads (a Deployment, not its ReplicaSet).
    pub workload: String,
    /// The evicted pod's name.
    pub pod: String,
    /// The plugin that evicted it.
    pub plugin: String,
}

/// What the snapshot knows of earlier runs' evictions.
#[derive(Clone, Debug, PartialEq)]
pub enum History {
    /// Read, oldest first; empty when no run recorded any (or the Lease does not exist yet).
    Recorded(Vec<PastEviction>),
    /// Present but unusable: pacing fails closed, no paced eviction is planned.
    Unreadable(Unreadable),
}

impl Default for History {
    fn default() -> History {
        History::Recorded(Vec::new())
    }
}

/// A history as a snapshot file holds it: the Lease's annotation, read once the file it came
/// from is known (an unreadable one names the file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedHistory {
    /// `namespace/name` of the Lease.
    pub lease: String,
    /// The annotation's value, as recorded.
    pub value: String,
}

/// Why the history could not be used, naming the object it was read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unreadable {
    /// `Lease namespace/name`, or the file it was read from.
    pub object: String,
    /// What is wrong: it decides what the reader is told to do.
    pub cause: HistoryDefect,
}

/// Why a history is unreadable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HistoryDefect {
    /// The annotation is there but is not a history this tool writes (the problem in words):
    /// only removing it helps.
    Corrupt(String),
    /// The object that holds it could not be read (the failed request, its kind and its words):
    /// the next run reads it again.
    NotRead(Failure),
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (problem, fix) = match &self.cause {
            HistoryDefect::Corrupt(problem) => {
                (problem, "Remove the annotation to start a new history")
            }
            HistoryDefect::NotRead(failure) => (
                &failure.text,
                "The next run reads it again; where it was refused, grant the run `get` on \
                 the Lease (the chart does)",
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
                .ends_with("Remove the annotation to start a new history")
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
        assert!(text.contains("grant the run `get` on the Lease"), "{text}");
    }
}
