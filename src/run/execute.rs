//! Carrying out a plan: label applies, then evictions in plan order, then the DRS
//! reconfigurations, then the Events, each action's outcome typed in [`Outcomes`]. Every call is
//! the plan's, fully addressed; the only judgement here is when to stop: on a signal, on losing
//! the run lock, before an eviction whose decision relied on node labels that could not be
//! written (the scheduler would place the pod by the stale labels), and before a paced eviction
//! that could not be recorded in the eviction history (the next run would not count it).
//!
//! The plan's paced evictions are recorded in the history before any eviction is sent, and the
//! record is corrected once their outcomes are known ([`super::history`]).

use std::collections::BTreeSet;

use crate::kube::{self, EventKind, EventSpec, EvictionRequest, EvictionResult, Lock};
use crate::outcome::{
    Cause, DrsOutcome, DrsUnconfirmed, EventsCut, EvictionOutcome, Failure, Halt, HaltedAt,
    LabelOutcome, NotAttempted, Outcomes, Problem, StopReason,
};
use crate::plan::{ClusterWrites, EVENT_ACTION, EventIntent, Eviction, Plan, RuleWrite, Settled};
use crate::snapshot::History;
use crate::vsphere;

use super::Stop;
use super::history::PacingRecord;

/// What the executor acts with.
pub struct Backends<'a> {
    pub kubernetes: &'a kube::Client,
    /// `None` when vCenter could not be observed: no DRS rule is touched then.
    pub vsphere: Option<&'a mut vsphere::VcenterClient>,
    pub dry_run: bool,
    pub stop: &'a Stop,
    /// Held by every live run: each write checks it, and the eviction history is written
    /// through it.
    pub lock: Option<&'a Lock>,
    /// Identifies this run in Events.
    pub instance: &'a str,
}

/// Carries out `plan` with `backends` and says what became of every action.
pub async fn execute(plan: &Plan, backends: Backends<'_>) -> Outcomes {
    // A dry run writes no label and no DRS rule, so theirs stay so; a live run replaces every
    // outcome below, those a halt cut off included, so its starting value is never reported.
    let why = if backends.dry_run {
        NotAttempted::DryRun
    } else {
        NotAttempted::Offline
    };
    let outcomes = Outcomes::not_attempted(
        plan.label_applies.len(),
        plan.evictions.len(),
        plan.drs_rules.len(),
        &why,
    );
    let mut executor = Executor {
        backends,
        plan,
        outcomes,
        halted: None,
    };
    let unwritten = executor.apply_labels().await;
    executor.evict(&unwritten).await;
    executor.sync_drs_rules().await;
    executor.publish_events().await;
    executor.outcomes
}

/// What became of the record of the plan's paced evictions, which are sent only once recorded.
enum Paced {
    /// Nothing to record: a dry run, or no eviction is paced.
    Unrecorded,
    /// Recorded: the record is corrected once the evictions are done.
    Recorded(PacingRecord),
    /// Not recorded (the run's problems or its halt say why): no paced eviction is sent.
    Withheld,
}

struct Executor<'a, 'p> {
    backends: Backends<'a>,
    plan: &'p Plan,
    outcomes: Outcomes,
    /// Why no further change is made, once that is so.
    halted: Option<Halt>,
}

impl<'p> Executor<'_, 'p> {
    /// `None` when the next change, at `at`, may be made; otherwise why not (recorded once).
    fn halt_before(&mut self, at: HaltedAt) -> Option<Halt> {
        if let Some(halt) = &self.halted {
            return Some(halt.clone());
        }
        let halt = if let Some(reason) = self.backends.stop.halted() {
            Halt::Stopped(reason)
        } else if let Some(Err(error)) = self.backends.lock.map(Lock::check) {
            Halt::LockLost(error.failure())
        } else {
            return None;
        };
        self.halt(halt.clone(), at);
        Some(halt)
    }

    /// Makes no further change from now on.
    fn halt(&mut self, halt: Halt, at: HaltedAt) {
        self.outcomes.halt = Some((halt.clone(), at));
        self.halted = Some(halt);
    }

    /// Writes the plan's label applies, one per node. Returns the nodes whose labels were not
    /// written.
    async fn apply_labels(&mut self) -> BTreeSet<&'p str> {
        let mut unwritten = BTreeSet::new();
        if self.backends.dry_run {
            return unwritten;
        }
        let plan = self.plan;
        for (index, apply) in plan.label_applies.iter().enumerate() {
            if let Some(halt) = self.halt_before(HaltedAt::BeforeLabel(index)) {
                self.cut_labels(index, &halt);
                break;
            }
            // Label writes are idempotent: one abandoned when the run halts is written again by
            // the next run.
            let backends = &self.backends;
            let written = backends
                .stop
                .unless_halted(backends.kubernetes.apply_labels(apply, backends.lock))
                .await;
            let outcome = match written {
                Ok(Ok(())) => {
                    tracing::info!(
                        node = apply.node,
                        labels = ?apply.set,
                        removed = ?apply.remove,
                        "labelled node"
                    );
                    LabelOutcome::Written
                }
                Ok(Err(error)) => {
                    let failure = error.failure();
                    tracing::warn!(node = apply.node, error = %failure, "failed to label node");
                    if failure.cause == Cause::LockLost {
                        self.outcomes.labels[index] = LabelOutcome::Failed(failure.clone());
                        unwritten.insert(apply.node.as_str());
                        // The claim ended between two of this node's requests: nothing else
                        // starts.
                        let halt = Halt::LockLost(failure);
                        self.halt(halt.clone(), HaltedAt::AfterLabel(index));
                        self.cut_labels(index + 1, &halt);
                        break;
                    }
                    LabelOutcome::Failed(failure)
                }
                Err(reason) => {
                    self.outcomes.labels[index] = LabelOutcome::Unconfirmed(reason);
                    unwritten.insert(apply.node.as_str());
                    self.cut_labels(index + 1, &Halt::Stopped(reason));
                    break;
                }
            };
            if outcome != LabelOutcome::Written {
                unwritten.insert(apply.node.as_str());
            }
            self.outcomes.labels[index] = outcome;
        }
        unwritten
    }

    /// The label applies from `from` on are not attempted, for `halt`.
    fn cut_labels(&mut self, from: usize, halt: &Halt) {
        for outcome in self.outcomes.labels.iter_mut().skip(from) {
            *outcome = LabelOutcome::NotAttempted(NotAttempted::Halted(halt.clone()));
        }
    }

    /// Evicts in plan order (on a dry run: asks the server whether it would). Refusals are not
    /// retried. An eviction that depends on the labels of a node in `unwritten` is not
    /// attempted, nor is a paced one when the history could not be recorded; the others are.
    async fn evict(&mut self, unwritten: &BTreeSet<&str>) {
        let plan = self.plan;
        let paced = self.record_history().await;
        for (index, eviction) in plan.evictions.iter().enumerate() {
            let stale = eviction
                .depends_on_labels_of
                .iter()
                .find(|node| unwritten.contains::<str>(node));
            let withheld = eviction.paced_as.is_some() && matches!(paced, Paced::Withheld);
            let outcome = if let Some(halt) = self.halt_before(HaltedAt::BeforeEviction(index)) {
                EvictionOutcome::NotAttempted(NotAttempted::Halted(halt))
            } else if let Some(node) = stale {
                EvictionOutcome::NotAttempted(NotAttempted::StaleLabels {
                    node: node.to_string(),
                })
            } else if withheld {
                EvictionOutcome::NotAttempted(NotAttempted::HistoryNotRecorded)
            } else {
                self.evict_one(eviction).await
            };
            self.outcomes.evictions[index] = outcome;
        }
        if let Paced::Recorded(recording) = &paced {
            self.correct_history(recording).await;
        }
    }

    /// Records the plan's paced evictions in the eviction history, through the run lock, before
    /// any eviction is sent. Never on a dry run, and never over a history that could not be read
    /// (the planner paces no eviction then).
    async fn record_history(&mut self) -> Paced {
        let plan = self.plan;
        if self.backends.dry_run || plan.evictions.iter().all(|e| e.paced_as.is_none()) {
            return Paced::Unrecorded;
        }
        // Halted: no eviction is sent, and every one says why.
        if self.halt_before(HaltedAt::BeforeEviction(0)).is_some() {
            return Paced::Withheld;
        }
        let Some(lock) = self.backends.lock else {
            self.outcomes
                .problems
                .push(Problem::HistoryNotRecorded(Failure::new(
                    Cause::Other,
                    "the run holds no lock to record it under",
                )));
            return Paced::Withheld;
        };
        let History::Recorded(earlier) = lock.history() else {
            // The run reports the unreadable history already.
            return Paced::Withheld;
        };
        let recording = PacingRecord::of(plan, earlier, chrono::Utc::now())
            .expect("the plan paces some eviction");
        // Like an eviction, the write in flight gets its answer after a signal, not after the
        // deadline.
        let written = self
            .backends
            .stop
            .unless_aborted(lock.write_history(recording.before()))
            .await;
        match written {
            Ok(Ok(())) => {
                tracing::info!(
                    evictions = recording.len(),
                    "recorded the paced evictions in the eviction history"
                );
                Paced::Recorded(recording)
            }
            Ok(Err(error)) => {
                let failure = error.failure();
                if failure.cause == Cause::LockLost {
                    self.halt(Halt::LockLost(failure), HaltedAt::BeforeEviction(0));
                } else {
                    tracing::warn!(error = %failure, "failed to record the paced evictions");
                    self.outcomes
                        .problems
                        .push(Problem::HistoryNotRecorded(failure));
                }
                Paced::Withheld
            }
            Err(reason) => {
                self.halt(Halt::Stopped(reason), HaltedAt::BeforeEviction(0));
                Paced::Withheld
            }
        }
    }

    /// Takes out of the history the recorded evictions that certainly did not happen. When
    /// that fails the history counts them, which only delays their workloads' next eviction.
    async fn correct_history(&mut self, recording: &PacingRecord) {
        let Some(corrected) = recording.after(&self.outcomes.evictions) else {
            return;
        };
        let overcounts = "the eviction history counts evictions that did not happen, which \
                          delays their workloads' next eviction";
        let Some(lock) = self.backends.lock else {
            return;
        };
        if self.backends.stop.aborted() {
            tracing::warn!("{overcounts}: the deadline passed before it was corrected");
            return;
        }
        match self
            .backends
            .stop
            .unless_aborted(lock.write_history(corrected))
            .await
        {
            Ok(Ok(())) => {
                tracing::info!(
                    "took the evictions that did not happen out of the eviction history"
                );
            }
            Ok(Err(error)) => {
                tracing::warn!(error = %error.failure(), "{overcounts}");
            }
            Err(reason) => tracing::warn!(%reason, "{overcounts}"),
        }
    }

    /// Sends one eviction and says how the server answered.
    async fn evict_one(&self, eviction: &Eviction) -> EvictionOutcome {
        let backends = &self.backends;
        let reason = eviction.reason.to_string();
        let request = EvictionRequest {
            namespace: &eviction.namespace,
            name: &eviction.pod,
            uid: eviction.uid.as_deref(),
            grace_period_seconds: eviction.grace_period_seconds,
            dry_run: backends.dry_run,
            strategy: eviction.strategy.as_str(),
            profile: &eviction.profile,
            reason: &reason,
        };
        let pod = format!("{}/{}", eviction.namespace, eviction.pod);
        let answer = backends
            .stop
            .unless_aborted(backends.kubernetes.evict(&request))
            .await;
        match answer {
            Err(reason) => EvictionOutcome::Unknown(reason),
            Ok(EvictionResult::Evicted) => {
                tracing::info!(pod, node = %eviction.node, "evicted");
                EvictionOutcome::Evicted
            }
            Ok(EvictionResult::WouldEvict) => EvictionOutcome::WouldEvict,
            Ok(EvictionResult::Blocked(message)) => {
                tracing::info!(pod, reason = %message, "eviction blocked by a PodDisruptionBudget");
                EvictionOutcome::Blocked(message)
            }
            Ok(EvictionResult::Gone(message)) => EvictionOutcome::Gone(message),
            Ok(EvictionResult::Failed(message)) => {
                tracing::warn!(pod, error = %message, "eviction failed");
                EvictionOutcome::Failed(message)
            }
        }
    }

    /// Sends the plan's DRS reconfigurations, one per vSphere cluster. A failed task fails its
    /// cluster's changes; evictions are not undone.
    async fn sync_drs_rules(&mut self) {
        if self.backends.dry_run {
            return;
        }
        let plan = self.plan;
        for batch in &plan.drs_batches {
            for (index, settled) in &batch.settled {
                self.outcomes.drs_rules[*index] = settled_outcome(*settled);
            }
        }
        let Some(vsphere) = self.backends.vsphere.take() else {
            for batch in &plan.drs_batches {
                for (index, _) in batch.writes.iter().flat_map(|writes| &writes.changes) {
                    self.outcomes.drs_rules[*index] =
                        DrsOutcome::NotAttempted(NotAttempted::NoVcenter);
                }
            }
            return;
        };
        for (batch_index, batch) in plan.drs_batches.iter().enumerate() {
            let Some(writes) = &batch.writes else {
                continue;
            };
            let outcome = match self.halt_before(HaltedAt::BeforeDrsBatch(batch_index)) {
                Some(halt) => DrsOutcome::NotAttempted(NotAttempted::Halted(halt)),
                None => self.reconfigure(&mut *vsphere, writes).await,
            };
            for (index, _) in &writes.changes {
                self.outcomes.drs_rules[*index] = outcome.clone();
            }
        }
    }

    /// One cluster's reconfiguration, sent and awaited.
    async fn reconfigure(
        &self,
        vsphere: &mut vsphere::VcenterClient,
        writes: &ClusterWrites,
    ) -> DrsOutcome {
        let changes: Vec<RuleWrite> = writes
            .changes
            .iter()
            .map(|(_, write)| write.clone())
            .collect();
        let applied = self
            .backends
            .stop
            .unless_aborted(vsphere.apply_rule_changes(&writes.cluster_id, &changes))
            .await;
        // Submitted but not awaited (the deadline, or the task wait ended by a stop) is not a
        // failure: vCenter completes the task on its own.
        match applied {
            Ok(Ok(())) => DrsOutcome::Applied,
            Err(reason) => DrsOutcome::Unknown(DrsUnconfirmed::Stopped(reason)),
            Ok(Err(error @ vsphere::Error::TaskNotAwaited { .. })) => {
                DrsOutcome::Unknown(DrsUnconfirmed::TaskNotAwaited(error.failure()))
            }
            Ok(Err(error)) => DrsOutcome::Failed(error.failure()),
        }
    }

    /// The plan's Events for what the evictions came to: written even after a stop signal
    /// (they record what was done, they change nothing), not after the deadline. Where the
    /// deadline cut them off is an outcome, as for any action: the run stopped short.
    async fn publish_events(&mut self) {
        if self.backends.dry_run {
            return;
        }
        let events = self.events_to_record();
        // With none to write, the deadline cut nothing off.
        if events.is_empty() {
            return;
        }
        if let Some(reason) = self.aborted() {
            self.outcomes.events_cut = Some(EventsCut::BeforeStart(reason));
            return;
        }
        for (index, spec) in events {
            let backends = &self.backends;
            let published = backends
                .stop
                .unless_aborted(backends.kubernetes.publish_event(&spec, backends.instance))
                .await;
            let published = match published {
                Ok(published) => published.map_err(|error| error.failure()),
                Err(reason) => {
                    self.outcomes.events_cut = Some(EventsCut::Midway(reason));
                    break;
                }
            };
            self.outcomes.events.push((index, published));
        }
    }

    /// Why every wait must end now, once the run is aborted (at its deadline).
    fn aborted(&self) -> Option<StopReason> {
        let stop = self.backends.stop;
        stop.aborted().then(|| stop.halted()).flatten()
    }

    /// The Events the evictions' outcomes call for, by eviction index, in plan order: one for
    /// each pod evicted, and one for each eviction that failed in a way the plan words.
    fn events_to_record(&self) -> Vec<(usize, EventSpec)> {
        let plan = self.plan;
        let outcomes = &self.outcomes.evictions;
        let mut events = Vec::new();
        for (index, (eviction, outcome)) in plan.evictions.iter().zip(outcomes).enumerate() {
            let (kind, intent) = match outcome {
                EvictionOutcome::Evicted => (EventKind::Normal, eviction.evicted_event()),
                EvictionOutcome::Failed(failure) => {
                    match plan.failure_event(index, &failure.text) {
                        Some(intent) => (EventKind::Warning, intent),
                        None => continue,
                    }
                }
                _ => continue,
            };
            events.push((index, event_spec(eviction, kind, intent)));
        }
        events
    }
}

/// The Event `intent` on the pod of `eviction`.
fn event_spec(eviction: &Eviction, kind: EventKind, intent: EventIntent) -> EventSpec {
    EventSpec {
        namespace: eviction.namespace.clone(),
        pod: eviction.pod.clone(),
        pod_uid: eviction.uid.clone(),
        kind,
        reason: intent.reason.to_string(),
        action: EVENT_ACTION.to_string(),
        note: intent.note,
    }
}

/// What becomes of a DRS change the plan settled without a write.
fn settled_outcome(settled: Settled) -> DrsOutcome {
    match settled {
        Settled::Keep => DrsOutcome::Applied,
        Settled::Unaddressable => DrsOutcome::NotAttempted(NotAttempted::Unaddressable),
        Settled::Unidentified => DrsOutcome::NotAttempted(NotAttempted::Unidentified),
        Settled::NoVcenterAccount(source) => {
            DrsOutcome::NotAttempted(NotAttempted::NoVcenterAccount(source))
        }
    }
}
