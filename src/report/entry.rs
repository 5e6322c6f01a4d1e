//! A report's entries: each planned eviction and DRS rule change with its typed outcome, and
//! the word (`result`) and note (`message`) the report gives that outcome. An entry borrows
//! both from the report, which keeps the plan and its outcomes whole: it is built when read.

use serde::Serialize;

use super::Outcome;
use crate::outcome::{DrsOutcome, EvictionOutcome, NotAttempted};
use crate::plan::{DrsRuleChange, Eviction};

/// One eviction and what became of it.
#[derive(Clone, Copy, Debug)]
pub struct EvictionEntry<'a> {
    pub eviction: &'a Eviction,
    pub outcome: &'a EvictionOutcome,
}

impl EvictionEntry<'_> {
    /// The word the report uses for the outcome.
    pub fn result(&self) -> Outcome {
        match self.outcome {
            EvictionOutcome::Evicted => Outcome::Evicted,
            EvictionOutcome::WouldEvict | EvictionOutcome::NotAttempted(_) => Outcome::Planned,
            EvictionOutcome::Blocked(_) => Outcome::Blocked,
            EvictionOutcome::Gone(_) => Outcome::Gone,
            EvictionOutcome::Failed(_) => Outcome::Failed,
            EvictionOutcome::Unknown(_) => Outcome::Unknown,
        }
    }

    /// What the server said, or why the eviction was not attempted or not confirmed.
    pub fn message(&self) -> Option<String> {
        match self.outcome {
            EvictionOutcome::Evicted | EvictionOutcome::WouldEvict => None,
            EvictionOutcome::Blocked(message)
            | EvictionOutcome::Gone(message)
            | EvictionOutcome::Failed(message) => Some(message.text.clone()),
            EvictionOutcome::Unknown(reason) => Some(format!(
                "sent, but {reason} before the API server answered: the pod may have been evicted"
            )),
            EvictionOutcome::NotAttempted(why) => withheld(why),
        }
    }
}

/// One DRS rule change and what became of it.
#[derive(Clone, Copy, Debug)]
pub struct DrsRuleEntry<'a> {
    pub change: &'a DrsRuleChange,
    pub outcome: &'a DrsOutcome,
}

impl DrsRuleEntry<'_> {
    /// The word the report uses for the outcome.
    pub fn result(&self) -> Outcome {
        match self.outcome {
            DrsOutcome::Applied => Outcome::Applied,
            DrsOutcome::Failed(_) => Outcome::Failed,
            DrsOutcome::Unknown(_) => Outcome::Unknown,
            DrsOutcome::NotAttempted(_) => Outcome::Planned,
        }
    }

    /// What vCenter said, or why the change was not attempted or not confirmed.
    pub fn message(&self) -> Option<String> {
        match self.outcome {
            DrsOutcome::Applied => None,
            DrsOutcome::Failed(message) => Some(message.text.clone()),
            DrsOutcome::Unknown(unconfirmed) => Some(unconfirmed.to_string()),
            DrsOutcome::NotAttempted(why) => withheld(why),
        }
    }
}

/// The note of an action not attempted: said when the run meant to carry it out (a dry run's
/// or an offline plan's actions stay `planned` without one).
fn withheld(why: &NotAttempted) -> Option<String> {
    why.is_withheld().then(|| format!("not attempted: {why}"))
}

/// An entry as the JSON report has it: the action's fields, then `result` and `message`.
#[derive(Serialize)]
struct Recorded<'a, T: Serialize> {
    #[serde(flatten)]
    action: &'a T,
    result: Outcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
}

impl Serialize for EvictionEntry<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Recorded {
            action: self.eviction,
            result: self.result(),
            message: self.message(),
        }
        .serialize(serializer)
    }
}

impl Serialize for DrsRuleEntry<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Recorded {
            action: self.change,
            result: self.result(),
            message: self.message(),
        }
        .serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::{Cause, DrsUnconfirmed, Failure, Halt, Signal, StopReason};
    use crate::plan::DrsAction;
    use crate::policy::PluginKind;

    #[test]
    fn an_entry_s_typed_outcome_is_the_report_s_result_and_note() {
        let halt = Halt::Stopped(StopReason::Deadline(std::time::Duration::from_secs(60)));
        let cases = [
            (EvictionOutcome::WouldEvict, Outcome::Planned, None),
            (
                EvictionOutcome::NotAttempted(NotAttempted::DryRun),
                Outcome::Planned,
                None,
            ),
            (
                EvictionOutcome::NotAttempted(NotAttempted::Halted(halt)),
                Outcome::Planned,
                Some("not attempted: the run's deadline of 60s passed"),
            ),
            (
                EvictionOutcome::Blocked(Failure::new(Cause::TooManyRequests, "pdb web allows 0")),
                Outcome::Blocked,
                Some("pdb web allows 0"),
            ),
            (
                EvictionOutcome::Unknown(StopReason::Signal(Signal::Terminate)),
                Outcome::Unknown,
                Some(
                    "sent, but the run was stopped by SIGTERM before the API server answered: \
                     the pod may have been evicted",
                ),
            ),
        ];
        let eviction = sample_eviction();
        for (outcome, result, message) in cases {
            let entry = EvictionEntry {
                eviction: &eviction,
                outcome: &outcome,
            };
            assert_eq!(entry.result(), result, "{:?}", entry.outcome);
            assert_eq!(entry.message().as_deref(), message, "{:?}", entry.outcome);
        }
    }

    fn sample_eviction() -> Eviction {
        crate::plan::testing::eviction("shop", "web-1", PluginKind::InterPodAntiAffinity)
    }

    #[test]
    fn a_drs_change_the_plan_ruled_out_stays_planned_without_a_note() {
        let change = DrsRuleChange {
            cluster: "c1".to_string(),
            cluster_id: None,
            name: "r1".to_string(),
            action: DrsAction::Create,
            vms: Vec::new(),
            vm_ids: None,
            rule_uuid: None,
            workload: None,
            node_group: None,
        };
        let entry = |outcome| DrsRuleEntry {
            change: &change,
            outcome,
        };
        let unaddressable = DrsOutcome::NotAttempted(NotAttempted::Unaddressable);
        assert_eq!(entry(&unaddressable).result(), Outcome::Planned);
        assert_eq!(entry(&unaddressable).message(), None);
        let unidentified = DrsOutcome::NotAttempted(NotAttempted::Unidentified);
        assert_eq!(
            entry(&unidentified).message().as_deref(),
            Some("not attempted: the inventory it was planned on has no managed object ids")
        );
        let stopped = DrsOutcome::Unknown(DrsUnconfirmed::Stopped(StopReason::Signal(
            Signal::Interrupt,
        )));
        let unconfirmed = entry(&stopped);
        assert_eq!(unconfirmed.result(), Outcome::Unknown);
        assert_eq!(
            unconfirmed.message().as_deref(),
            Some("the run was stopped by SIGINT before vCenter answered")
        );
    }
}
