//! What became of a plan's actions: one typed outcome per label apply, eviction, DRS rule and
//! Event, plus the problems that kept a run from acting at all. The executor (`run`) fills it
//! in, the report renders it, metrics count it and the exit code is its [`Verdict`]; nobody reads
//! a message to learn what happened.
//!
//! Below `run`, `report` and `metrics`, which all read it, so none of them imports another in a
//! circle to share it.

#[cfg(test)]
mod cause_tests;

use std::fmt;
use std::time::Duration;

use crate::policy::SourceKind;
use crate::snapshot::history::{self, Unreadable};

pub use crate::cause::{Cause, Failure};

/// A signal that asks the run to stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    Terminate,
    Interrupt,
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Signal::Terminate => "SIGTERM",
            Signal::Interrupt => "SIGINT",
        })
    }
}

/// Why the run stopped early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    Signal(Signal),
    /// `--deadline` passed.
    Deadline(Duration),
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopReason::Signal(signal) => write!(f, "the run was stopped by {signal}"),
            StopReason::Deadline(deadline) => {
                write!(f, "the run's deadline of {}s passed", deadline.as_secs())
            }
        }
    }
}

/// Why the executor made no further change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Halt {
    /// A signal or the deadline.
    Stopped(StopReason),
    /// The run lock was lost or expired; the error chain says how.
    LockLost(Failure),
}

impl fmt::Display for Halt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Halt::Stopped(reason) => reason.fmt(f),
            Halt::LockLost(failure) => failure.fmt(f),
        }
    }
}

/// Why a planned action was not attempted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotAttempted {
    /// An offline plan: nothing is carried out.
    Offline,
    /// `--dry-run` makes no change of this kind.
    DryRun,
    /// The run halted before getting to it.
    Halted(Halt),
    /// The eviction relies on new labels of this node, whose write failed: the scheduler
    /// would place the pod by stale host labels.
    StaleLabels { node: String },
    /// The DRS change was planned on an inventory without managed object ids.
    Unidentified,
    /// The plan typed the DRS change as unaddressable (no rule key); its warning says why.
    Unaddressable,
    /// vCenter could not be observed, so no DRS rule is touched.
    NoVcenter,
    /// The hosts came from a source without a vCenter account (`vsphere.source`), through
    /// which alone DRS rules are written.
    NoVcenterAccount(SourceKind),
    /// A paced eviction, whose record in the eviction history could not be written (the run's
    /// problems say why): it is sent only once recorded, so that the next run counts it.
    HistoryNotRecorded,
}

impl fmt::Display for NotAttempted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotAttempted::Offline => f.write_str("an offline plan changes nothing"),
            NotAttempted::DryRun => f.write_str("a dry run makes no such change"),
            NotAttempted::Halted(halt) => halt.fmt(f),
            NotAttempted::StaleLabels { node } => write!(
                f,
                "the labels of node {node} could not be written, so the scheduler would place \
                 the pod by stale host labels"
            ),
            NotAttempted::Unidentified => {
                f.write_str("the inventory it was planned on has no managed object ids")
            }
            NotAttempted::Unaddressable => f.write_str("the rule's key is unknown"),
            NotAttempted::NoVcenter => f.write_str("vCenter could not be observed"),
            NotAttempted::NoVcenterAccount(source) => {
                write!(f, "source {source}: no vCenter account")
            }
            NotAttempted::HistoryNotRecorded => f.write_str(
                "the eviction history could not be recorded, and a paced eviction is sent only \
                 once it is",
            ),
        }
    }
}

impl NotAttempted {
    /// Whether the run meant to carry the action out and did not (what the
    /// `actions_not_attempted` metric counts and the report explains); a dry run, an offline
    /// plan or a change the plan itself ruled out is not that.
    pub fn is_withheld(&self) -> bool {
        matches!(
            self,
            NotAttempted::Halted(_)
                | NotAttempted::StaleLabels { .. }
                | NotAttempted::Unidentified
                | NotAttempted::HistoryNotRecorded
        )
    }
}

/// What became of one node's label apply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LabelOutcome {
    Written,
    /// The API server refused it, or it could not be sent; the error chain says why.
    Failed(Failure),
    /// Abandoned when the run halted, before the server confirmed it.
    Unconfirmed(StopReason),
    NotAttempted(NotAttempted),
}

/// What became of one eviction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EvictionOutcome {
    Evicted,
    /// A dry run's check: the server would evict it now.
    WouldEvict,
    /// A PodDisruptionBudget refused it; the server's message says which.
    Blocked(Failure),
    /// The pod was deleted or replaced before the run got to it.
    Gone(Failure),
    /// Any other refusal or transport problem, as the server or client said it.
    Failed(Failure),
    /// Sent, but the run stopped waiting for the answer: the pod may have been evicted.
    Unknown(StopReason),
    NotAttempted(NotAttempted),
}

impl EvictionOutcome {
    /// Whether the pod may have been evicted (a live run's outcome): evicted, or sent without
    /// an answer. Refused, failed, gone and not attempted certainly were not.
    pub fn may_have_evicted(&self) -> bool {
        matches!(self, EvictionOutcome::Evicted | EvictionOutcome::Unknown(_))
    }
}

/// What became of one DRS rule change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DrsOutcome {
    /// Written, or (`keep`) nothing needed writing.
    Applied,
    /// vCenter refused its cluster's reconfiguration; the error chain says why.
    Failed(Failure),
    /// Submitted, but the run stopped waiting for vCenter, which completes it on its own.
    Unknown(DrsUnconfirmed),
    NotAttempted(NotAttempted),
}

/// Why a submitted DRS reconfiguration was not confirmed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DrsUnconfirmed {
    /// The run stopped before vCenter answered.
    Stopped(StopReason),
    /// vCenter took the task, the wait for it ended; the error chain says how.
    TaskNotAwaited(Failure),
}

impl fmt::Display for DrsUnconfirmed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DrsUnconfirmed::Stopped(reason) => write!(f, "{reason} before vCenter answered"),
            DrsUnconfirmed::TaskNotAwaited(failure) => failure.fmt(f),
        }
    }
}

/// Where in the sequence of actions the executor halted, so the report tells it in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HaltedAt {
    /// Before the label apply of this index.
    BeforeLabel(usize),
    /// Right after this label apply, which lost the run lock.
    AfterLabel(usize),
    BeforeEviction(usize),
    /// Before the DRS batch of this index (`Plan::drs_batches`).
    BeforeDrsBatch(usize),
}

/// Why the Events stopped being recorded: only the deadline ends them (after a signal they are
/// still written: they change nothing). The run fails then, as when any action is cut short.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventsCut {
    /// The deadline had passed before the first was sent: none was recorded.
    BeforeStart(StopReason),
    /// The deadline passed while recording them; the one in flight may or may not be recorded.
    Midway(StopReason),
}

impl fmt::Display for EventsCut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EventsCut::BeforeStart(reason) => write!(f, "no events were recorded: {reason}"),
            EventsCut::Midway(reason) => {
                write!(f, "the remaining events were not recorded: {reason}")
            }
        }
    }
}

/// Why a run went wrong before or beside its actions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// The run could not plan; the error chain says why.
    NotPlanned(Failure),
    /// metrics-server could not be read; plugins reading actual usage planned without it.
    MetricsUnavailable(Failure),
    /// vCenter could not be observed; the plan ran without an inventory.
    VcenterUnobserved(Failure),
    /// The Supervisor could not be read (source supervisor); the plan ran without an
    /// inventory.
    SupervisorUnobserved(Failure),
    /// The eviction history could not be read: no paced eviction was planned.
    HistoryUnreadable(Unreadable),
    /// The eviction history could not be recorded before the evictions; the error chain says
    /// why. The paced evictions were not sent.
    HistoryNotRecorded(Failure),
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::NotPlanned(chain) => chain.fmt(f),
            Problem::MetricsUnavailable(chain) => write!(
                f,
                "actual usage could not be read, so the plugins reading it planned without \
                 metrics (their pods are skipped as no-metrics): {chain}"
            ),
            Problem::VcenterUnobserved(chain) => write!(
                f,
                "vCenter could not be observed, so no node label was changed, host labels were \
                 not trusted and no DRS rule was touched: {chain}"
            ),
            Problem::SupervisorUnobserved(chain) => write!(
                f,
                "the Supervisor could not be read, so no node label was changed and host labels \
                 were not trusted: {chain}"
            ),
            Problem::HistoryUnreadable(unreadable) => unreadable.fmt(f),
            Problem::HistoryNotRecorded(chain) => write!(
                f,
                "the eviction history could not be recorded, so no paced eviction was sent \
                 (the next run would not have counted it): {chain}"
            ),
        }
    }
}

/// Everything that became of a plan, index for index with its actions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcomes {
    pub problems: Vec<Problem>,
    /// One per `Plan::label_applies`.
    pub labels: Vec<LabelOutcome>,
    /// One per `Plan::evictions`.
    pub evictions: Vec<EvictionOutcome>,
    /// One per `Plan::drs_rules`.
    pub drs_rules: Vec<DrsOutcome>,
    /// Why and where the executor stopped making changes, if it did while some were left.
    pub halt: Option<(Halt, HaltedAt)>,
    /// The Events sent, by eviction index, in the order sent: `Err` holds what failed.
    pub events: Vec<(usize, Result<(), Failure>)>,
    /// Where the deadline cut the Events off, when it did while some were left to write.
    pub events_cut: Option<EventsCut>,
}

impl Outcomes {
    /// Every action of a plan of these sizes not attempted, for `why`.
    pub fn not_attempted(
        labels: usize,
        evictions: usize,
        drs_rules: usize,
        why: &NotAttempted,
    ) -> Outcomes {
        Outcomes {
            labels: vec![LabelOutcome::NotAttempted(why.clone()); labels],
            evictions: vec![EvictionOutcome::NotAttempted(why.clone()); evictions],
            drs_rules: vec![DrsOutcome::NotAttempted(why.clone()); drs_rules],
            ..Outcomes::default()
        }
    }

    /// A run that could not plan.
    pub fn not_planned(chain: Failure) -> Outcomes {
        Outcomes {
            problems: vec![Problem::NotPlanned(chain)],
            ..Outcomes::default()
        }
    }

    /// Every failure of the run that has a kind, with where it happened, in the order of the
    /// run's steps: what the metrics count by cause. A PDB's refusal and a pod gone before its
    /// eviction are outcomes, not failures; a stop has no failure of its own (the actions it
    /// cut short are counted as not attempted).
    pub fn failures(&self) -> Vec<(Step, Cause)> {
        let mut failures: Vec<(Step, Cause)> = self.problems.iter().map(Problem::failure).collect();
        if let Some((Halt::LockLost(failure), _)) = &self.halt {
            failures.push((Step::RunLock, failure.cause));
        }
        let labels = self.labels.iter().filter_map(|outcome| match outcome {
            LabelOutcome::Failed(failure) => Some((Step::Label, failure.cause)),
            _ => None,
        });
        let evictions = self.evictions.iter().filter_map(|outcome| match outcome {
            EvictionOutcome::Failed(failure) => Some((Step::Eviction, failure.cause)),
            _ => None,
        });
        let drs_rules = self.drs_rules.iter().filter_map(|outcome| match outcome {
            DrsOutcome::Failed(failure)
            | DrsOutcome::Unknown(DrsUnconfirmed::TaskNotAwaited(failure)) => {
                Some((Step::DrsRule, failure.cause))
            }
            _ => None,
        });
        let events = self.events.iter().filter_map(|(_, published)| {
            published
                .as_ref()
                .err()
                .map(|failure| (Step::Event, failure.cause))
        });
        failures.extend(labels.chain(evictions).chain(drs_rules).chain(events));
        failures
    }

    /// How the run ended: failed when anything went wrong that the report counts as an error,
    /// the deadline cutting anything short included.
    pub fn verdict(&self) -> Verdict {
        let failed = !self.problems.is_empty()
            || self.halt.is_some()
            || self.events_cut.is_some()
            || self.labels.iter().any(|outcome| {
                matches!(
                    outcome,
                    LabelOutcome::Failed(_) | LabelOutcome::Unconfirmed(_)
                )
            })
            || self.evictions.iter().any(|outcome| {
                matches!(
                    outcome,
                    EvictionOutcome::Failed(_) | EvictionOutcome::Unknown(_)
                )
            })
            || self
                .drs_rules
                .iter()
                .any(|outcome| matches!(outcome, DrsOutcome::Failed(_) | DrsOutcome::Unknown(_)));
        if failed {
            Verdict::Failed
        } else {
            Verdict::Done
        }
    }
}

/// Where in a run a failure happened: a step before the actions, or one kind of action.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Step {
    /// The settings could not be used (exit code 2).
    Settings,
    /// Observing the cluster or planning.
    Plan,
    /// Reading actual usage from metrics-server.
    MetricsServer,
    /// Observing vCenter.
    Vcenter,
    /// Reading the Supervisor (source supervisor).
    Supervisor,
    /// Reading or recording the eviction history.
    History,
    /// Holding the run lock.
    RunLock,
    Label,
    Eviction,
    DrsRule,
    Event,
}

impl Step {
    /// Its name as a metric label holds it.
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Settings => "settings",
            Step::Plan => "plan",
            Step::MetricsServer => "metrics-server",
            Step::Vcenter => "vcenter",
            Step::Supervisor => "supervisor",
            Step::History => "history",
            Step::RunLock => "run-lock",
            Step::Label => "label",
            Step::Eviction => "eviction",
            Step::DrsRule => "drs-rule",
            Step::Event => "event",
        }
    }
}

impl Problem {
    /// Where it happened and its kind. A history that is not one this tool writes is
    /// unreadable; one that could not be read failed as its request did.
    fn failure(&self) -> (Step, Cause) {
        match self {
            Problem::NotPlanned(failure) => (Step::Plan, failure.cause),
            Problem::MetricsUnavailable(failure) => (Step::MetricsServer, failure.cause),
            Problem::VcenterUnobserved(failure) => (Step::Vcenter, failure.cause),
            Problem::SupervisorUnobserved(failure) => (Step::Supervisor, failure.cause),
            Problem::HistoryUnreadable(unreadable) => match &unreadable.cause {
                history::HistoryDefect::Corrupt(_) => (Step::History, Cause::Unreadable),
                history::HistoryDefect::NotRead(failure) => (Step::History, failure.cause),
            },
            Problem::HistoryNotRecorded(failure) => (Step::History, failure.cause),
        }
    }
}

/// How a live run ended (docs/design.md §5): done (a PDB's refusal is a normal outcome) or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Done,
    /// An action or a backend failed, or the run stopped early.
    Failed,
}

impl Verdict {
    pub fn exit_code(self) -> u8 {
        match self {
            Verdict::Done => 0,
            Verdict::Failed => 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIGTERM: StopReason = StopReason::Signal(Signal::Terminate);

    fn evictions(outcomes: Vec<EvictionOutcome>) -> Outcomes {
        Outcomes {
            evictions: outcomes,
            ..Outcomes::default()
        }
    }

    #[test]
    fn a_pdb_refusal_a_gone_pod_and_a_dry_run_are_a_done_run() {
        let outcomes = evictions(vec![
            EvictionOutcome::Evicted,
            EvictionOutcome::Blocked(Failure::new(Cause::TooManyRequests, "pdb web")),
            EvictionOutcome::Gone(Failure::new(Cause::NotFound, "not found")),
            EvictionOutcome::WouldEvict,
            EvictionOutcome::NotAttempted(NotAttempted::DryRun),
        ]);
        assert_eq!(outcomes.verdict(), Verdict::Done);
        assert_eq!(outcomes.verdict().exit_code(), 0);
    }

    #[test]
    fn a_failed_or_unconfirmed_action_fails_the_run() {
        let failed = [
            evictions(vec![EvictionOutcome::Failed(Failure::new(
                Cause::ServerError,
                "500",
            ))]),
            evictions(vec![EvictionOutcome::Unknown(SIGTERM)]),
            Outcomes {
                labels: vec![LabelOutcome::Unconfirmed(SIGTERM)],
                ..Outcomes::default()
            },
            Outcomes {
                drs_rules: vec![DrsOutcome::Unknown(DrsUnconfirmed::Stopped(SIGTERM))],
                ..Outcomes::default()
            },
            Outcomes::not_planned(Failure::new(
                Cause::Connection,
                "cannot observe the Kubernetes cluster",
            )),
        ];
        for outcomes in failed {
            assert_eq!(outcomes.verdict(), Verdict::Failed, "{outcomes:?}");
        }
    }

    #[test]
    fn only_an_eviction_sent_and_not_refused_may_have_happened() {
        assert!(EvictionOutcome::Evicted.may_have_evicted());
        assert!(EvictionOutcome::Unknown(SIGTERM).may_have_evicted());
        for not in [
            EvictionOutcome::WouldEvict,
            EvictionOutcome::Blocked(Failure::new(Cause::TooManyRequests, "pdb web")),
            EvictionOutcome::Gone(Failure::new(Cause::NotFound, "not found")),
            EvictionOutcome::Failed(Failure::new(Cause::ServerError, "500")),
            EvictionOutcome::NotAttempted(NotAttempted::HistoryNotRecorded),
        ] {
            assert!(!not.may_have_evicted(), "{not:?}");
        }
    }

    /// Issue 29: the metrics count failures by what kind they are, read from the outcomes'
    /// typed causes, never from their text.
    #[test]
    fn every_failure_is_listed_with_its_step_and_cause_and_refusals_are_not() {
        let failed = |cause: Cause| Failure::new(cause, "its words");
        let outcomes = Outcomes {
            problems: vec![
                Problem::MetricsUnavailable(failed(Cause::Forbidden)),
                Problem::HistoryUnreadable(Unreadable {
                    object: "Lease ops/vsphere-descheduler".to_string(),
                    cause: history::HistoryDefect::NotRead(failed(Cause::Timeout)),
                }),
                Problem::HistoryUnreadable(Unreadable {
                    object: "Lease ops/vsphere-descheduler".to_string(),
                    cause: history::HistoryDefect::Corrupt("not a JSON list".to_string()),
                }),
            ],
            halt: Some((
                Halt::LockLost(failed(Cause::LockLost)),
                HaltedAt::BeforeEviction(2),
            )),
            labels: vec![
                LabelOutcome::Written,
                LabelOutcome::Failed(failed(Cause::Invalid)),
                LabelOutcome::Unconfirmed(SIGTERM),
            ],
            evictions: vec![
                EvictionOutcome::Blocked(failed(Cause::TooManyRequests)),
                EvictionOutcome::Gone(failed(Cause::NotFound)),
                EvictionOutcome::Failed(failed(Cause::Connection)),
            ],
            drs_rules: vec![
                DrsOutcome::Failed(failed(Cause::Refused)),
                DrsOutcome::Unknown(DrsUnconfirmed::TaskNotAwaited(failed(Cause::Timeout))),
                DrsOutcome::Unknown(DrsUnconfirmed::Stopped(SIGTERM)),
            ],
            events: vec![(0, Ok(())), (1, Err(failed(Cause::Forbidden)))],
            ..Outcomes::default()
        };
        assert_eq!(
            outcomes.failures(),
            [
                (Step::MetricsServer, Cause::Forbidden),
                (Step::History, Cause::Timeout),
                (Step::History, Cause::Unreadable),
                (Step::RunLock, Cause::LockLost),
                (Step::Label, Cause::Invalid),
                (Step::Eviction, Cause::Connection),
                (Step::DrsRule, Cause::Refused),
                (Step::DrsRule, Cause::Timeout),
                (Step::Event, Cause::Forbidden),
            ]
        );
    }

    #[test]
    fn an_unreadable_or_unrecorded_history_fails_the_run() {
        let unreadable = Problem::HistoryUnreadable(Unreadable {
            object: "Lease ops/vsphere-descheduler".to_string(),
            cause: crate::snapshot::history::HistoryDefect::Corrupt(
                "not a JSON list of evictions".to_string(),
            ),
        });
        assert!(
            unreadable
                .to_string()
                .contains("Lease ops/vsphere-descheduler"),
            "{unreadable}"
        );
        for problem in [
            unreadable,
            Problem::HistoryNotRecorded(Failure::new(
                Cause::Forbidden,
                "failed to write lease ops/x",
            )),
        ] {
            let outcomes = Outcomes {
                problems: vec![problem],
                ..Outcomes::default()
            };
            assert_eq!(outcomes.verdict().exit_code(), 1);
        }
    }

    #[test]
    fn a_halt_with_actions_left_fails_the_run_though_nothing_failed() {
        let halt = Halt::Stopped(SIGTERM);
        let outcomes = Outcomes {
            halt: Some((halt.clone(), HaltedAt::BeforeEviction(0))),
            ..evictions(vec![EvictionOutcome::NotAttempted(NotAttempted::Halted(
                halt,
            ))])
        };
        assert_eq!(outcomes.verdict().exit_code(), 1);
    }

    /// Issue 31: a deadline that cut off only the Events left the run at exit code 0.
    #[test]
    fn events_cut_off_by_the_deadline_fail_the_run_though_every_action_succeeded() {
        let deadline = StopReason::Deadline(Duration::from_secs(90));
        for cut in [
            EventsCut::BeforeStart(deadline),
            EventsCut::Midway(deadline),
        ] {
            let outcomes = Outcomes {
                events_cut: Some(cut),
                ..evictions(vec![EvictionOutcome::Evicted])
            };
            assert_eq!(outcomes.verdict().exit_code(), 1, "{cut:?}");
            assert!(
                cut.to_string()
                    .ends_with("the run's deadline of 90s passed"),
                "{cut}"
            );
        }
        assert_eq!(
            evictions(vec![EvictionOutcome::Evicted]).verdict(),
            Verdict::Done
        );
    }

    #[test]
    fn only_what_the_run_meant_to_do_counts_as_withheld() {
        let halted = NotAttempted::Halted(Halt::LockLost(Failure::new(
            Cause::LockLost,
            "lease taken over",
        )));
        assert!(halted.is_withheld());
        assert!(NotAttempted::Unidentified.is_withheld());
        assert!(
            NotAttempted::StaleLabels {
                node: "worker-a".to_string()
            }
            .is_withheld()
        );
        assert!(NotAttempted::HistoryNotRecorded.is_withheld());
        for ruled_out in [
            NotAttempted::Offline,
            NotAttempted::DryRun,
            NotAttempted::Unaddressable,
            NotAttempted::NoVcenter,
        ] {
            assert!(!ruled_out.is_withheld(), "{ruled_out:?}");
        }
    }
}
