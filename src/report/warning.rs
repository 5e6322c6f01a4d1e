//! What the report warns about: the plan's warnings, and those of the run around it (the
//! policy file, TLS, events), one variant per kind, so that code and tests decide by kind and
//! each sentence is written in one place. The report records each as its sentence, as it always
//! has. What goes wrong after the report is printed (releasing the lock, pushing the metrics) is
//! worded here too, for the log: the report is out by then.

use std::fmt;

use serde::{Serialize, Serializer};

use crate::plan::Warning;
use crate::topology;

/// One warning of a report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReportWarning {
    /// What planning warned about.
    Plan(Warning),
    /// A finding of the policy reader, already placed (`FILE:LINE:COLUMN: path: message`) as the
    /// reader words its problems; nothing decides on it after loading.
    Policy(String),
    /// TLS verification of vCenter is off (`insecureSkipVerify`, `--vsphere-insecure`).
    InsecureTls,
    /// The run's Lease could not be released; `cause` is the error chain. Logged only: the
    /// lock is released after the report is printed.
    LockNotReleased { cause: String },
    /// The Pushgateway push failed; `cause` is the error chain. Logged only: the metrics are
    /// pushed after the report is printed.
    MetricsNotPushed { cause: String },
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

impl From<Warning> for ReportWarning {
    fn from(warning: Warning) -> ReportWarning {
        ReportWarning::Plan(warning)
    }
}

/// The one place each of the run's warnings is worded.
impl fmt::Display for ReportWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReportWarning::Plan(warning) => warning.fmt(f),
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
        }
    }
}

/// As its sentence: the report's warnings are strings.
impl Serialize for ReportWarning {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::{ReportWarning, Warning};

    #[test]
    fn a_plan_warning_reads_as_the_plan_wrote_it() {
        let warning = Warning::TooFewReadyNodes { ready: 1 };
        assert_eq!(
            ReportWarning::from(warning.clone()).to_string(),
            warning.to_string()
        );
    }

    #[test]
    fn the_run_warnings_name_what_was_left_undone_and_why() {
        let cause = "failed to release lock kube-system/vsphere-descheduler".to_string();
        assert_eq!(
            ReportWarning::LockNotReleased {
                cause: cause.clone()
            }
            .to_string(),
            "failed to release lock kube-system/vsphere-descheduler; the next run waits for it \
             to expire"
        );
        assert_eq!(
            ReportWarning::MetricsNotPushed {
                cause: "connection refused".to_string()
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
    fn a_warning_is_serialized_as_its_sentence() {
        let json = serde_json::to_string(&[ReportWarning::InsecureTls]).expect("serializes");
        assert_eq!(
            json,
            "[\"TLS verification of vCenter is disabled: any server can pose as vCenter and read \
             the credentials\"]"
        );
    }
}
