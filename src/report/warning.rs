//! What the report warns about: the plan's warnings, read from the plan the report keeps, and
//! those of the run around it (the policy file, TLS, events), one variant per kind, so that code
//! and tests decide by kind and each sentence is written in one place. The report records each as its sentence, as it always
//! has. What goes wrong after the report is printed (releasing the lock, pushing the metrics) is
//! worded here too, for the log: the report is out by then.

use std::fmt;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Serialize, Serializer};

use crate::cause::Failure;
use crate::plan::Warning;
use crate::position::Position;
use crate::topology;

/// One warning of a report's own, beside the plan's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReportWarning {
    /// A finding of the policy reader, already placed (`FILE:LINE:COLUMN: path: message`) as the
    /// reader words its problems; nothing decides on it after loading.
    Policy(String),
    /// TLS verification of vCenter is off (`insecureSkipVerify`, `--vsphere-insecure`).
    InsecureTls,
    /// The run's Lease could not be released. Logged only: the lock is released after the
    /// report is printed.
    LockNotReleased { cause: Failure },
    /// The Pushgateway push failed. Logged only: the metrics are pushed after the report is
    /// printed.
    MetricsNotPushed { cause: Failure },
    /// The instant planned at is earlier than the creation of pods of the snapshot.
    NowBeforeCreation(NowBeforeCreation),
    /// The Event of one eviction could not be written; `cause` is the error chain.
    EventNotRecorded {
        namespace: String,
        pod: String,
        cause: String,
    },
    /// The topology source replaced what the snapshot recorded.
    Topology(topology::Replaced),
    /// Node VMs of guest clusters in no cluster module (`namespace/vm`; why is in
    /// `guestClusters`): DRS keeps them apart from nothing.
    OutsideClusterModules { vms: Vec<String> },
}

/// One warning as the report reads it: the plan's, borrowed from the plan it keeps, or one of
/// its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnyWarning<'a> {
    Plan(&'a Warning),
    Report(&'a ReportWarning),
}

impl fmt::Display for AnyWarning<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnyWarning::Plan(warning) => warning.fmt(f),
            AnyWarning::Report(warning) => warning.fmt(f),
        }
    }
}

/// The one place each of the run's warnings is worded.
impl fmt::Display for ReportWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReportWarning::Policy(finding) => f.write_str(finding),
            ReportWarning::InsecureTls => f.write_str(
                "TLS verification of vCenter is disabled: any server can pose as vCenter and \
                 read the credentials",
            ),
            ReportWarning::LockNotReleased { cause } => {
                write!(f, "{cause}; the next run waits for it to expire")
            }
            ReportWarning::MetricsNotPushed { cause } => {
                write!(f, "the run's metrics were not pushed: {cause}")
            }
            ReportWarning::EventNotRecorded {
                namespace,
                pod,
                cause,
            } => write!(f, "no event recorded for pod {namespace}/{pod}: {cause}"),
            ReportWarning::Topology(replaced) => replaced.fmt(f),
            ReportWarning::OutsideClusterModules { vms } => write!(
                f,
                "{} node VM(s) of guest clusters in no cluster module, so DRS keeps them apart \
                 from nothing: {} (guestClusters says why)",
                vms.len(),
                vms.join(", ")
            ),
            ReportWarning::NowBeforeCreation(warning) => {
                write!(f, "{}: {}", warning.place(), warning.message())
            }
        }
    }
}

/// An offline plan's instant is earlier than the creation of pods it judges: each such pod is
/// "started 0s ago", younger than any minPodAge, and skipped, so the plan evicts less than the
/// recorded state calls for (a CI gate on it would never trip). Placed at the youngest pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NowBeforeCreation {
    /// The snapshot file holding the youngest pod, as named on the command line.
    pub file: String,
    /// Where in it that pod starts, when the file could be read again to find it.
    pub position: Option<Position>,
    /// The youngest pod, `namespace/name`.
    pub pod: String,
    pub created: DateTime<Utc>,
    /// The instant planned at.
    pub now: DateTime<Utc>,
    /// How many pods were created after `now`.
    pub count: usize,
}

impl NowBeforeCreation {
    /// `FILE:LINE:COLUMN: document N`, or the file alone.
    pub fn place(&self) -> String {
        match &self.position {
            Some(position) => format!("{}:{position}", self.file),
            None => format!("snapshot file {}", self.file),
        }
    }

    /// The sentence without its place.
    pub fn message(&self) -> String {
        let instant = |time: &DateTime<Utc>| time.to_rfc3339_opts(SecondsFormat::Secs, true);
        let others = match self.count {
            1 => String::new(),
            2 => ", and so is the other pod created after it".to_string(),
            count => format!(", and so are the {} other pods created after it", count - 1),
        };
        format!(
            "pod {} was created at {}, after the instant planned at, {}: it is judged as just \
             started (younger than any minPodAge){others}; give a later --now, or none to plan \
             at the snapshot's recordedAt",
            self.pod,
            instant(&self.created),
            instant(&self.now),
        )
    }
}

/// As its sentence: the report's warnings are strings.
impl Serialize for ReportWarning {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// As its sentence, whoever raised it.
impl Serialize for AnyWarning<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::{AnyWarning, Failure, NowBeforeCreation, Position, ReportWarning, Warning};
    use crate::cause::Cause;

    #[test]
    fn a_plan_warning_reads_as_the_plan_wrote_it() {
        let warning = Warning::TooFewReadyNodes { ready: 1 };
        assert_eq!(AnyWarning::Plan(&warning).to_string(), warning.to_string());
        assert_eq!(
            serde_json::json!(AnyWarning::Plan(&warning)),
            warning.to_string()
        );
    }

    #[test]
    fn the_run_warnings_name_what_was_left_undone_and_why() {
        let cause = Failure::new(
            Cause::Conflict,
            "failed to release lock kube-system/vsphere-descheduler",
        );
        assert_eq!(
            ReportWarning::LockNotReleased { cause }.to_string(),
            "failed to release lock kube-system/vsphere-descheduler; the next run waits for it \
             to expire"
        );
        assert_eq!(
            ReportWarning::MetricsNotPushed {
                cause: Failure::new(Cause::Connection, "connection refused")
            }
            .to_string(),
            "the run's metrics were not pushed: connection refused"
        );
        assert_eq!(
            ReportWarning::EventNotRecorded {
                namespace: "shop".to_string(),
                pod: "web-1".to_string(),
                cause: "forbidden".to_string(),
            }
            .to_string(),
            "no event recorded for pod shop/web-1: forbidden"
        );
    }

    #[test]
    fn a_plan_before_a_pods_creation_is_placed_at_that_pod_and_counts_the_others() {
        let at = |text: &str| {
            chrono::DateTime::parse_from_rfc3339(text)
                .expect("a valid timestamp")
                .to_utc()
        };
        let mut warning = NowBeforeCreation {
            file: "snapshots/prod-east.yaml".to_string(),
            position: Some(Position::in_document(212, 3, 2)),
            pod: "shop/web-1".to_string(),
            created: at("2026-11-21T08:50:00Z"),
            now: at("2026-01-01T00:00:00Z"),
            count: 3,
        };
        assert_eq!(
            ReportWarning::NowBeforeCreation(warning.clone()).to_string(),
            "snapshots/prod-east.yaml:212:3: document 2: pod shop/web-1 was created at \
             2026-11-21T08:50:00Z, after the instant planned at, 2026-01-01T00:00:00Z: it is \
             judged as just started (younger than any minPodAge), and so are the 2 other pods \
             created after it; give a later --now, or none to plan at the snapshot's recordedAt"
        );
        warning.position = None;
        warning.count = 1;
        let text = ReportWarning::NowBeforeCreation(warning).to_string();
        assert!(
            text.starts_with("snapshot file snapshots/prod-east.yaml: pod shop/web-1 was"),
            "{text}"
        );
        assert!(!text.contains("other pod"), "{text}");
    }

    #[test]
    fn a_warning_is_serialized_as_its_sentence() {
        let json = serde_json::to_string(&[ReportWarning::InsecureTls]).expect("serializes");
        assert_eq!(
            json,
            "[\"TLS verification of vCenter is disabled: any server can pose as vCenter and read \
             the credentials\"]"
        );
    }
}
