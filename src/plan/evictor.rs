//! Protections: which pods may be evicted at all (the upstream DefaultEvictor's filter, with
//! its argument names and semantics).

use kube::core::SelectorExt;

use super::view::{PodState, View};
use crate::policy::{EvictorArgs, NoEvictionPolicy, SYSTEM_CRITICAL_PRIORITY};
use crate::snapshot::Pod;

/// Every protection that applies to the pod; empty when it may be evicted.
///
/// `priority_threshold` is the profile's threshold, already resolved to a number.
pub fn protections(
    view: &View,
    args: &EvictorArgs,
    priority_threshold: i32,
    index: usize,
) -> Vec<String> {
    let pod = view.pod(index);
    // The upstream escape hatch: the annotation bypasses every protection (not PDBs, not
    // feasibility).
    if pod.force_evict {
        return Vec::new();
    }
    let mut reasons = Vec::new();
    if args.no_eviction_policy == NoEvictionPolicy::Mandatory && pod.prefer_no_eviction {
        reasons.push("annotated prefer-no-eviction (noEvictionPolicy Mandatory)".to_string());
    }
    if pod.mirror {
        reasons.push("mirror pod".to_string());
    }
    if pod
        .config_source
        .as_deref()
        .is_some_and(|source| source != "api")
    {
        reasons.push("static pod".to_string());
    }
    if pod.terminating {
        reasons.push("terminating".to_string());
    }
    let protections = &args.protections;
    if protections.system_critical_pods {
        if pod.priority >= SYSTEM_CRITICAL_PRIORITY {
            reasons.push(format!("system-critical priority {}", pod.priority));
        } else if pod.priority >= priority_threshold {
            reasons.push(format!(
                "priority {} is at or above priorityThreshold {priority_threshold}",
                pod.priority
            ));
        }
    }
    if pod.owners.is_empty() {
        // With FailedBarePods off upstream still only lets *failed* bare pods go, and failed
        // pods are never candidates here: a running bare pod would not come back.
        reasons.push("bare pod (no owner would recreate it)".to_string());
    }
    if protections.daemonset_pods && pod.owners.iter().any(|o| o.kind == "DaemonSet") {
        reasons.push("owned by a DaemonSet".to_string());
    }
    if protections.pods_with_local_storage && pod.local_storage {
        reasons.push("uses local storage (emptyDir or hostPath)".to_string());
    }
    if protections.pods_with_pvc && !pod.claims.is_empty() {
        if protections.protected_storage_classes.is_empty() {
            reasons.push(format!(
                "uses PersistentVolumeClaim {}",
                pod.claims.join(", ")
            ));
        } else {
            // Claims are not part of the snapshot; like upstream when a lookup fails, assume
            // the claim may be of a protected class.
            reasons.push(format!(
                "uses PersistentVolumeClaim {} whose storage class is unknown",
                pod.claims.join(", ")
            ));
        }
    }
    if protections.pods_with_resource_claims && pod.resource_claims {
        reasons.push("uses resource claims".to_string());
    }
    if protections.pods_without_pdb && view.pdbs_of(index).is_empty() {
        reasons.push("no PodDisruptionBudget covers it".to_string());
    }
    if args
        .label_selector
        .as_ref()
        .is_some_and(|s| !s.matches(&pod.labels))
    {
        reasons.push("labels do not match the evictor's labelSelector".to_string());
    }
    if let Some(selector) = &args.namespace_label_selector {
        let labels = view.namespace_labels.get(pod.namespace.as_str());
        if !labels.is_some_and(|labels| selector.matches(labels)) {
            reasons.push(
                "namespace labels do not match the evictor's namespaceLabelSelector".to_string(),
            );
        }
    }
    if args.min_replicas > 1
        && let Some(owner) = pod.owners.first()
    {
        let replicas = owner_pods(view, pod, &owner.uid);
        if replicas < args.min_replicas as usize {
            reasons.push(format!(
                "its owner {}/{} has {replicas} pods, fewer than minReplicas {}",
                owner.kind, owner.name, args.min_replicas
            ));
        }
    }
    if let Some(min_age) = args.min_pod_age {
        match pod.started {
            None => reasons.push("has not started (minPodAge)".to_string()),
            Some(started) => {
                let age = view.snapshot.now.signed_duration_since(started);
                if age.to_std().map_or(true, |age| age < min_age) {
                    reasons.push(format!(
                        "started {}s ago, younger than minPodAge {}s",
                        age.num_seconds().max(0),
                        min_age.as_secs()
                    ));
                }
            }
        }
    }
    reasons
}

/// Live pods of the namespace with the same first owner (upstream counts by owner UID).
fn owner_pods(view: &View, pod: &Pod, uid: &str) -> usize {
    view.namespace_pods(&pod.namespace)
        .iter()
        .filter(|&&p| view.state[p] == PodState::Active)
        .filter(|&&p| view.pod(p).owners.first().is_some_and(|o| o.uid == uid))
        .count()
}
