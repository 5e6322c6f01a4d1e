//! Carrying out a plan: label applies, then evictions in plan order, then DRS rule changes, each
//! outcome recorded in the report. Nothing here decides anything the plan did not; the only
//! judgement is when to stop: on a signal, on losing the run lock, and before an eviction whose
//! decision relied on node labels that could not be written (the scheduler would place the pod
//! by the stale labels).

use std::collections::BTreeSet;

use crate::error_chain;
use crate::kube::{self, EventKind, EventSpec, EvictionRequest, EvictionResult, Lock};
use crate::plan::{DrsAction, DrsRuleChange};
use crate::policy::Policy;
use crate::report::{Outcome, Report, ReportWarning};
use crate::vsphere::{self, RuleChange};

use super::Stop;

/// The `action` of every Event this tool writes, as upstream's descheduler.
const ACTION: &str = "Descheduled";

/// What the executor acts with and on.
pub struct Executor<'a> {
    pub kubernetes: &'a kube::Client,
    pub policy: &'a Policy,
    pub dry_run: bool,
    pub stop: &'a Stop,
    pub lock: Option<&'a Lock>,
    /// Identifies this run in Events.
    pub instance: &'a str,
    /// Why no further change is made, once that is so.
    halted: Option<String>,
}

impl<'a> Executor<'a> {
    pub fn new(
        kubernetes: &'a kube::Client,
        policy: &'a Policy,
        dry_run: bool,
        stop: &'a Stop,
        lock: Option<&'a Lock>,
        instance: &'a str,
    ) -> Executor<'a> {
        Executor {
            kubernetes,
            policy,
            dry_run,
            stop,
            lock,
            instance,
            halted: None,
        }
    }

    /// Whether the next change may be made; records why not, once.
    fn may_act(&mut self, report: &mut Report) -> bool {
        if self.halted.is_some() {
            return false;
        }
        let reason = if let Some(reason) = self.stop.halted() {
            Some(reason.to_string())
        } else if let Some(Err(error)) = self.lock.map(Lock::check) {
            Some(error_chain(&error))
        } else {
            None
        };
        match reason {
            Some(reason) => {
                self.halt(report, reason);
                false
            }
            None => true,
        }
    }

    /// Makes no further change from now on, and says why in the report.
    fn halt(&mut self, report: &mut Report, reason: String) {
        report.errors.push(format!(
            "{reason}: the remaining actions were not carried out"
        ));
        self.halted = Some(reason);
    }

    /// Writes the plan's label applies, one per node. Returns the nodes whose labels were not
    /// written.
    pub async fn apply_labels(&mut self, report: &mut Report) -> BTreeSet<String> {
        let mut unwritten = BTreeSet::new();
        if self.dry_run {
            return unwritten;
        }
        // Taken for the loop, which also writes errors into the report; put back below.
        let applies = std::mem::take(&mut report.label_applies);
        for apply in &applies {
            if !self.may_act(report) {
                break;
            }
            // Label writes are idempotent: one abandoned when the run halts is written again by
            // the next run.
            let written = self
                .stop
                .unless_halted(self.kubernetes.apply_labels(apply, self.lock))
                .await;
            let written = match written {
                Ok(written) => written,
                Err(reason) => {
                    report.errors.push(format!(
                        "the label changes of node {} were not confirmed: {reason}",
                        apply.node
                    ));
                    unwritten.insert(apply.node.clone());
                    break;
                }
            };
            match written {
                Ok(()) => tracing::info!(
                    node = apply.node,
                    labels = ?apply.set,
                    removed = ?apply.remove,
                    "labelled node"
                ),
                Err(error) => {
                    let lock_lost = error.is_lock_loss();
                    let error = error_chain(&error);
                    tracing::warn!(node = apply.node, error, "failed to label node");
                    let keys: Vec<&str> = report
                        .label_changes
                        .iter()
                        .filter(|change| change.node == apply.node)
                        .map(|change| change.key.as_str())
                        .collect();
                    report.errors.push(format!(
                        "label change(s) {} of node {} not applied: {error}",
                        keys.join(", "),
                        apply.node
                    ));
                    unwritten.insert(apply.node.clone());
                    // The claim ended between two of this node's requests: nothing else starts.
                    if lock_lost {
                        self.halt(report, error);
                        break;
                    }
                }
            }
        }
        report.label_applies = applies;
        unwritten
    }

    /// Evicts in plan order (on a dry run: asks the server whether it would). Each answer is the
    /// entry's result; refusals are not retried. An eviction that depends on the labels of a
    /// node in `unwritten` is not attempted; the others are.
    pub async fn evict(&mut self, report: &mut Report, unwritten: &BTreeSet<String>) {
        let mut halted: Option<String> = self
            .halted
            .as_ref()
            .map(|reason| format!("not attempted: {reason}"));
        for index in 0..report.evictions.len() {
            if halted.is_none() && !self.may_act(report) {
                halted = self
                    .halted
                    .as_ref()
                    .map(|reason| format!("not attempted: {reason}"));
            }
            if let Some(message) = &halted {
                report.evictions[index].message = Some(message.clone());
                continue;
            }
            let eviction = &report.evictions[index].eviction;
            let stale = eviction
                .depends_on_labels_of
                .iter()
                .find(|node| unwritten.contains(*node));
            if let Some(node) = stale {
                report.evictions[index].message = Some(format!(
                    "not attempted: the labels of node {node} could not be written, so the \
                     scheduler would place the pod by stale host labels"
                ));
                continue;
            }
            let request = EvictionRequest {
                namespace: &eviction.namespace,
                name: &eviction.pod,
                uid: eviction.uid.as_deref(),
                grace_period_seconds: eviction.grace_period_seconds,
                dry_run: self.dry_run,
            };
            let pod = format!("{}/{}", eviction.namespace, eviction.pod);
            let Ok(result) = self
                .stop
                .unless_aborted(self.kubernetes.evict(&request))
                .await
            else {
                let reason = self
                    .stop
                    .halted()
                    .map(|r| r.to_string())
                    .unwrap_or_default();
                let entry = &mut report.evictions[index];
                entry.result = Outcome::Unknown;
                entry.message = Some(format!(
                    "sent, but {reason} before the API server answered: the pod may have been \
                     evicted"
                ));
                report
                    .errors
                    .push(format!("eviction of pod {pod} was not confirmed: {reason}"));
                continue;
            };
            let (outcome, message) = match result {
                EvictionResult::Evicted => {
                    tracing::info!(pod, node = %eviction.node, "evicted");
                    (Outcome::Evicted, None)
                }
                EvictionResult::WouldEvict => (Outcome::Planned, None),
                EvictionResult::Blocked(message) => {
                    tracing::info!(pod, reason = %message, "eviction blocked by a PodDisruptionBudget");
                    (Outcome::Blocked, Some(message))
                }
                EvictionResult::Gone(message) => (Outcome::Gone, Some(message)),
                EvictionResult::Failed(message) => {
                    tracing::warn!(pod, error = %message, "eviction failed");
                    report
                        .errors
                        .push(format!("eviction of pod {pod} failed: {message}"));
                    (Outcome::Failed, Some(message))
                }
            };
            let entry = &mut report.evictions[index];
            entry.result = outcome;
            entry.message = message;
        }
    }

    /// Carries out the plan's DRS rule changes, one reconfiguration per vSphere cluster.
    /// `keep` entries need no write. A failed task fails its cluster's entries; evictions are
    /// not undone.
    pub async fn sync_drs_rules(
        &mut self,
        report: &mut Report,
        vsphere: Option<&mut vsphere::Client>,
    ) {
        if self.dry_run || report.drs_rules.is_empty() {
            return;
        }
        let Some(vsphere) = vsphere else {
            return;
        };
        // Reports name each cluster uniquely (`datacenter/name` where names repeat).
        let mut clusters: Vec<(String, Option<String>)> = report
            .drs_rules
            .iter()
            .map(|entry| {
                (
                    entry.change.cluster.clone(),
                    entry.change.cluster_id.clone(),
                )
            })
            .collect();
        clusters.sort();
        clusters.dedup();
        for (cluster, cluster_id) in clusters {
            let mut changes = Vec::new();
            let mut entries = Vec::new();
            for (index, entry) in report.drs_rules.iter_mut().enumerate() {
                let change = &entry.change;
                if change.cluster != cluster {
                    continue;
                }
                match change.action {
                    DrsAction::Keep { .. } => entry.result = Outcome::Applied,
                    // Stays planned; the plan's warning says why.
                    DrsAction::Unaddressable(_) => {}
                    _ => match (&cluster_id, rule_change(change)) {
                        (Some(_), Some(translated)) => {
                            changes.push(translated);
                            entries.push(index);
                        }
                        _ => entry.message = Some(format!("not attempted: {UNIDENTIFIED}")),
                    },
                }
            }
            let Some(cluster_id) = cluster_id.filter(|_| !changes.is_empty()) else {
                continue;
            };
            if !self.may_act(report) {
                let reason = self.halted.clone().unwrap_or_default();
                for index in entries {
                    report.drs_rules[index].message = Some(format!("not attempted: {reason}"));
                }
                continue;
            }
            let applied = self
                .stop
                .unless_aborted(vsphere.apply_rule_changes(&cluster_id, &changes))
                .await;
            // Submitted but not awaited (the deadline, or the task wait ended by a stop) is not
            // a failure: vCenter completes the task on its own.
            let refused = match applied {
                Ok(Ok(())) => None,
                Err(reason) => Some((
                    Outcome::Unknown,
                    format!("{reason} before vCenter answered"),
                )),
                Ok(Err(error @ vsphere::Error::TaskNotAwaited { .. })) => {
                    Some((Outcome::Unknown, error_chain(&error)))
                }
                Ok(Err(error)) => Some((Outcome::Failed, error_chain(&error))),
            };
            let (outcome, message) = match refused {
                None => (Outcome::Applied, None),
                Some((outcome, message)) => {
                    report.errors.push(if outcome == Outcome::Unknown {
                        format!(
                            "DRS rule changes of vSphere cluster {cluster} were not confirmed: \
                             {message}"
                        )
                    } else {
                        format!(
                            "DRS rules of vSphere cluster {cluster} were not changed: {message}"
                        )
                    });
                    (outcome, Some(message))
                }
            };
            for index in entries {
                report.drs_rules[index].result = outcome;
                report.drs_rules[index].message = message.clone();
            }
        }
    }

    /// Events on the pods acted on: Normal for each eviction, Warning for each failed one when
    /// the policy's `evictionFailureEventNotification` asks for it (upstream's default: off).
    /// Written even after a stop signal: they record what was done, they change nothing.
    /// A failed event is a warning, not a failed run.
    pub async fn publish_events(&self, report: &mut Report) {
        if self.dry_run {
            return;
        }
        if self.stop.aborted() {
            report.warnings.push(ReportWarning::EventsNotRecorded);
            return;
        }
        let mut warnings = Vec::new();
        for entry in &report.evictions {
            let eviction = &entry.eviction;
            let place = match &eviction.host {
                Some(host) => format!("node {} (ESXi host {host})", eviction.node),
                None => format!("node {}", eviction.node),
            };
            let (kind, reason, note) = match entry.result {
                Outcome::Evicted => (
                    EventKind::Normal,
                    eviction.strategy.to_string(),
                    format!(
                        "pod evicted from {place} by vsphere-descheduler: {}",
                        eviction.reason
                    ),
                ),
                Outcome::Failed if self.policy.eviction_failure_events => (
                    EventKind::Warning,
                    "EvictionFailed".to_string(),
                    format!(
                        "pod eviction from {place} by vsphere-descheduler failed: {}",
                        entry.message.as_deref().unwrap_or("unknown error")
                    ),
                ),
                _ => continue,
            };
            let spec = EventSpec {
                namespace: eviction.namespace.clone(),
                pod: eviction.pod.clone(),
                pod_uid: eviction.uid.clone(),
                kind,
                reason,
                action: ACTION.to_string(),
                note,
            };
            let published = self
                .stop
                .unless_aborted(self.kubernetes.publish_event(&spec, self.instance))
                .await;
            let Ok(published) = published else {
                warnings.push(ReportWarning::RemainingEventsNotRecorded);
                break;
            };
            if let Err(error) = published {
                warnings.push(ReportWarning::EventNotRecorded {
                    namespace: eviction.namespace.clone(),
                    pod: eviction.pod.clone(),
                    cause: error_chain(&error),
                });
            }
        }
        report.warnings.extend(warnings);
    }
}

/// Why a change from a plan without managed object ids is not carried out: vCenter addresses
/// clusters and VMs by id, and a run's own observation always has them.
const UNIDENTIFIED: &str = "the inventory it was planned on has no managed object ids";

/// The vCenter call that carries out a create, update or delete; `None` for `keep`, for a change
/// without a key, and when the plan lacks the VM ids it needs.
fn rule_change(change: &DrsRuleChange) -> Option<RuleChange> {
    match change.action {
        DrsAction::Keep { .. } | DrsAction::Unaddressable(_) => None,
        DrsAction::Create => Some(RuleChange::Add {
            name: change.name.clone(),
            vms: change.vm_ids.clone()?,
        }),
        DrsAction::Update { key } => Some(RuleChange::Edit {
            key,
            name: change.name.clone(),
            rule_uuid: change.rule_uuid.clone(),
            vms: change.vm_ids.clone()?,
        }),
        DrsAction::Delete { key } => Some(RuleChange::Remove { key }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(action: DrsAction, vm_ids: Option<Vec<String>>) -> DrsRuleChange {
        DrsRuleChange {
            cluster: "dc-east/Cluster".to_string(),
            cluster_id: Some("domain-c7".to_string()),
            name: "vsphere-descheduler:lab:db:StatefulSet/pg".to_string(),
            action,
            vms: vec!["k8s-worker-1".to_string(), "k8s-worker-2".to_string()],
            vm_ids,
            rule_uuid: Some("uuid-7".to_string()),
            workload: None,
            node_group: None,
        }
    }

    #[test]
    fn rule_changes_address_vms_by_id_and_resend_the_rule_uuid() {
        let ids = Some(vec!["vm-20".to_string(), "vm-21".to_string()]);
        assert_eq!(
            rule_change(&change(DrsAction::Update { key: 7 }, ids.clone())),
            Some(RuleChange::Edit {
                key: 7,
                name: "vsphere-descheduler:lab:db:StatefulSet/pg".to_string(),
                rule_uuid: Some("uuid-7".to_string()),
                vms: vec!["vm-20".to_string(), "vm-21".to_string()],
            })
        );
        assert_eq!(
            rule_change(&change(DrsAction::Delete { key: 7 }, None)),
            Some(RuleChange::Remove { key: 7 }),
            "a removal needs only the key"
        );
        assert_eq!(
            rule_change(&change(DrsAction::Keep { key: Some(7) }, ids)),
            None
        );
    }

    #[test]
    fn a_change_planned_without_vm_ids_is_not_translated() {
        assert_eq!(rule_change(&change(DrsAction::Create, None)), None);
        assert_eq!(
            rule_change(&change(DrsAction::Update { key: 7 }, None)),
            None
        );
    }
}
