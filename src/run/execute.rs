//! Carrying out a plan: label changes, then evictions in plan order, then DRS rule changes, each
//! outcome recorded in the report. Nothing here decides anything the plan did not; the only
//! judgement is when to stop: on a signal, on losing the run lock, and before evicting when node
//! labels could not be written (the scheduler would place the pods by the stale labels).

use std::collections::{BTreeMap, BTreeSet};

use crate::error_chain;
use crate::kube::{
    self, EventKind, EventSpec, EvictionRequest, EvictionResult, LabelUpdate, Lock, NodeIdentity,
};
use crate::plan::{DrsAction, LabelChange};
use crate::policy::Policy;
use crate::report::{Outcome, Report};
use crate::snapshot::Snapshot;
use crate::vsphere::{self, RuleChange};

use super::Stop;

/// The `action` of every Event this tool writes, as upstream's descheduler.
const ACTION: &str = "Descheduled";

/// What the executor acts with and on.
pub struct Executor<'a> {
    pub kubernetes: &'a kube::Client,
    pub snapshot: &'a Snapshot,
    pub nodes: &'a BTreeMap<String, NodeIdentity>,
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
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        kubernetes: &'a kube::Client,
        snapshot: &'a Snapshot,
        nodes: &'a BTreeMap<String, NodeIdentity>,
        policy: &'a Policy,
        dry_run: bool,
        stop: &'a Stop,
        lock: Option<&'a Lock>,
        instance: &'a str,
    ) -> Executor<'a> {
        Executor {
            kubernetes,
            snapshot,
            nodes,
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
        if let Some(reason) = reason {
            report.errors.push(format!(
                "{reason}: the remaining actions were not carried out"
            ));
            self.halted = Some(reason);
            return false;
        }
        true
    }

    /// Writes the label changes, one server-side apply per node. Returns whether all succeeded.
    pub async fn apply_labels(&mut self, report: &mut Report) -> bool {
        if self.dry_run {
            return true;
        }
        let mut by_node: Vec<(String, Vec<LabelChange>)> = Vec::new();
        for change in &report.label_changes {
            match by_node.iter_mut().find(|(node, _)| *node == change.node) {
                Some((_, changes)) => changes.push(change.clone()),
                None => by_node.push((change.node.clone(), vec![change.clone()])),
            }
        }
        let mut all_written = true;
        for (node, changes) in by_node {
            if !self.may_act(report) {
                return false;
            }
            let keys: Vec<&str> = changes.iter().map(|c| c.key.as_str()).collect();
            let Some(update) = self.label_update(&node, &changes) else {
                report.errors.push(format!(
                    "label change(s) {} of node {node} not applied: the node was not listed",
                    keys.join(", ")
                ));
                all_written = false;
                continue;
            };
            // Label writes are idempotent: one abandoned when the run halts is written again by
            // the next run.
            let written = self
                .stop
                .unless_halted(self.kubernetes.apply_labels(&update))
                .await;
            let written = match written {
                Ok(written) => written,
                Err(reason) => {
                    report.errors.push(format!(
                        "label change(s) {} of node {node} not confirmed: {reason}",
                        keys.join(", ")
                    ));
                    return false;
                }
            };
            match written {
                Ok(()) => tracing::info!(
                    node,
                    labels = ?update.present,
                    removed = ?update.absent,
                    "labelled node"
                ),
                Err(error) => {
                    let error = error_chain(&error);
                    tracing::warn!(node, error, "failed to label node");
                    report.errors.push(format!(
                        "label change(s) {} of node {node} not applied: {error}",
                        keys.join(", ")
                    ));
                    all_written = false;
                }
            }
        }
        all_written
    }

    /// Every one of our keys that should be on the node after the change, and those that should
    /// not: a complete apply configuration, so keys we own stay.
    fn label_update(&self, node: &str, changes: &[LabelChange]) -> Option<LabelUpdate> {
        let identity = self.nodes.get(node)?;
        let current = self
            .snapshot
            .nodes
            .binary_search_by(|n| n.name.as_str().cmp(node))
            .ok()
            .map(|index| &self.snapshot.nodes[index].labels);
        let mut present = BTreeMap::new();
        let mut absent = BTreeSet::new();
        for key in self.policy.vsphere.labels.owned() {
            let value = match changes.iter().find(|change| change.key == key) {
                Some(change) => change.new.clone(),
                None => current.and_then(|labels| labels.get(key)).cloned(),
            };
            match value {
                Some(value) => {
                    present.insert(key.to_string(), value);
                }
                None => {
                    absent.insert(key.to_string());
                }
            }
        }
        // Keys we never applied and nobody asked to remove need no write at all.
        absent.retain(|key| {
            identity.applied_label_keys.contains(key)
                || changes.iter().any(|change| change.key == *key)
        });
        Some(LabelUpdate {
            node: identity.clone(),
            present,
            absent,
        })
    }

    /// The uid a pod had when listed (snapshots from files may lack it).
    fn pod_uid(&self, namespace: &str, name: &str) -> Option<&'a str> {
        let pods = &self.snapshot.pods;
        pods.binary_search_by(|pod| {
            (pod.namespace.as_str(), pod.name.as_str()).cmp(&(namespace, name))
        })
        .ok()
        .map(|found| pods[found].uid.as_str())
        .filter(|uid| !uid.is_empty())
    }

    /// Evicts in plan order (on a dry run: asks the server whether it would). Each answer is the
    /// entry's result; refusals are not retried.
    pub async fn evict(&mut self, report: &mut Report, labels_written: bool) {
        let mut not_attempted: Option<String> = match &self.halted {
            Some(reason) => Some(format!("not attempted: {reason}")),
            None if !labels_written => Some(
                "not attempted: node labels could not be written, so the scheduler would place \
                 the pod by stale host labels"
                    .to_string(),
            ),
            None => None,
        };
        for index in 0..report.evictions.len() {
            if not_attempted.is_none() && !self.may_act(report) {
                not_attempted = self
                    .halted
                    .as_ref()
                    .map(|reason| format!("not attempted: {reason}"));
            }
            if let Some(message) = &not_attempted {
                report.evictions[index].message = Some(message.clone());
                continue;
            }
            let eviction = &report.evictions[index].eviction;
            let uid = self.pod_uid(&eviction.namespace, &eviction.pod);
            let request = EvictionRequest {
                namespace: &eviction.namespace,
                name: &eviction.pod,
                uid,
                grace_period_seconds: self.policy.grace_period_seconds,
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
        let mut clusters: Vec<String> = report
            .drs_rules
            .iter()
            .map(|entry| entry.change.cluster.clone())
            .collect();
        clusters.sort();
        clusters.dedup();
        for cluster in clusters {
            let mut changes = Vec::new();
            let mut entries = Vec::new();
            for (index, entry) in report.drs_rules.iter_mut().enumerate() {
                let change = &entry.change;
                if change.cluster != cluster {
                    continue;
                }
                let translated = match (change.action, change.key) {
                    (DrsAction::Keep, _) => {
                        entry.result = Outcome::Applied;
                        continue;
                    }
                    (DrsAction::Create, _) => RuleChange::Add {
                        name: change.name.clone(),
                        vms: change.vms.clone(),
                    },
                    (DrsAction::Update, Some(key)) => RuleChange::Edit {
                        key,
                        name: change.name.clone(),
                        vms: change.vms.clone(),
                    },
                    (DrsAction::Delete, Some(key)) => RuleChange::Remove { key },
                    (DrsAction::Update | DrsAction::Delete, None) => {
                        entry.result = Outcome::Failed;
                        entry.message = Some("vCenter reported no key for this rule".to_string());
                        continue;
                    }
                };
                changes.push(translated);
                entries.push(index);
            }
            if changes.is_empty() {
                continue;
            }
            if !self.may_act(report) {
                let reason = self.halted.clone().unwrap_or_default();
                for index in entries {
                    report.drs_rules[index].message = Some(format!("not attempted: {reason}"));
                }
                continue;
            }
            let applied = self
                .stop
                .unless_aborted(vsphere.apply_rule_changes(&cluster, &changes))
                .await
                .map_err(|reason| format!("{reason} before vCenter answered"));
            let (outcome, message) = match applied {
                Ok(Ok(())) => (Outcome::Applied, None),
                Err(reason) => {
                    report.errors.push(format!(
                        "DRS rule changes of vSphere cluster {cluster} were not confirmed: {reason}"
                    ));
                    (Outcome::Unknown, Some(reason))
                }
                Ok(Err(error @ vsphere::Error::TaskNotAwaited { .. })) => {
                    let message = error_chain(&error);
                    report.errors.push(format!(
                        "DRS rule changes of vSphere cluster {cluster} were not confirmed: {message}"
                    ));
                    (Outcome::Unknown, Some(message))
                }
                Ok(Err(error)) => {
                    let message = error_chain(&error);
                    report.errors.push(format!(
                        "DRS rules of vSphere cluster {cluster} were not changed: {message}"
                    ));
                    (Outcome::Failed, Some(message))
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
        if self.stop.aborted() {
            report
                .warnings
                .push("no events were recorded: the run's deadline passed".to_string());
            return;
        }
        if self.dry_run {
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
            let uid = self
                .pod_uid(&eviction.namespace, &eviction.pod)
                .map(str::to_string);
            let spec = EventSpec {
                namespace: eviction.namespace.clone(),
                pod: eviction.pod.clone(),
                pod_uid: uid,
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
                warnings.push(
                    "the remaining events were not recorded: the run's deadline passed".to_string(),
                );
                break;
            };
            if let Err(error) = published {
                warnings.push(format!(
                    "no event recorded for pod {}/{}: {}",
                    eviction.namespace,
                    eviction.pod,
                    error_chain(&error)
                ));
            }
        }
        report.warnings.extend(warnings);
    }
}
