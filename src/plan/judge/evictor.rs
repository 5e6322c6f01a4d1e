//! Protections: which pods may be evicted at all (the upstream DefaultEvictor's filter, with
//! its argument names and semantics).

use crate::plan::model::protection::Protection;
use crate::plan::view::index::PodIx;
use crate::plan::view::{PodState, View};
use crate::policy::{
    EvictorArgs, NoEvictionPolicy, PriorityThreshold, Protections, SYSTEM_CRITICAL_PRIORITY,
};
use crate::snapshot::{ConfigSource, OwnerKind, Phase, Pod, Snapshot};

/// Priority of `system-node-critical`.
const SYSTEM_NODE_CRITICAL_PRIORITY: i32 = SYSTEM_CRITICAL_PRIORITY + 1000;

/// A profile's `priorityThreshold` resolved against the snapshot's PriorityClasses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Threshold<'p> {
    Priority(i32),
    /// A class the snapshot does not have. `run` and `plan` refuse such a policy before
    /// planning; a plan made anyway protects every pod rather than guess a number.
    UnknownClass(&'p str),
}

impl<'p> Threshold<'p> {
    pub fn resolve(snapshot: &Snapshot, threshold: &'p PriorityThreshold) -> Threshold<'p> {
        match threshold {
            PriorityThreshold::Value(value) => Threshold::Priority(*value),
            PriorityThreshold::Name(name) => priority_class_value(snapshot, name)
                .map_or(Threshold::UnknownClass(name), Threshold::Priority),
        }
    }
}

/// The value of a PriorityClass. The two system classes exist in every cluster (the API server
/// creates them and refuses their deletion), so a hand-written snapshot need not record them.
pub fn priority_class_value(snapshot: &Snapshot, name: &str) -> Option<i32> {
    snapshot.priority_classes.get(name).copied().or(match name {
        "system-cluster-critical" => Some(SYSTEM_CRITICAL_PRIORITY),
        "system-node-critical" => Some(SYSTEM_NODE_CRITICAL_PRIORITY),
        _ => None,
    })
}

/// Every PriorityClass name [`priority_class_value`] resolves, sorted.
pub fn priority_class_names(snapshot: &Snapshot) -> Vec<&str> {
    let mut names: Vec<&str> = snapshot
        .priority_classes
        .keys()
        .map(String::as_str)
        .collect();
    for system in ["system-cluster-critical", "system-node-critical"] {
        if !snapshot.priority_classes.contains_key(system) {
            names.push(system);
        }
    }
    names.sort_unstable();
    names
}

/// Every protection that applies to the pod; empty when it may be evicted.
pub fn protections(
    view: &View,
    args: &EvictorArgs,
    priority_threshold: Threshold,
    index: PodIx,
) -> Vec<Protection> {
    let pod = view.pod(index);
    // The upstream escape hatch: the annotation bypasses every protection (not PDBs, not
    // feasibility).
    if pod.force_evict {
        return Vec::new();
    }
    let mut reasons = Vec::new();
    kind_protections(args, pod, &mut reasons);
    let protections = &args.protections;
    if protections.system_critical_pods {
        priority_protection(pod, priority_threshold, &mut reasons);
    }
    if pod.owners.is_empty() && (protections.failed_bare_pods || pod.phase != Phase::Failed) {
        // With FailedBarePods off upstream still only lets *failed* bare pods go: a running
        // bare pod would not come back.
        reasons.push(Protection::BarePod);
    }
    if protections.daemonset_pods && pod.owners.iter().any(|o| o.kind == OwnerKind::DaemonSet) {
        reasons.push(Protection::DaemonSet);
    }
    storage_protections(protections, pod, &mut reasons);
    if protections.pods_without_pdb && view.pdbs_of(index).is_empty() {
        reasons.push(Protection::NoPodDisruptionBudget);
    }
    filter_protections(view, args, pod, &mut reasons);
    reasons
}

/// Pods that are not the evictor's to move whatever the policy: annotated against it under
/// `noEvictionPolicy: Mandatory`, mirror and static pods (the kubelet owns them), and pods
/// already terminating.
fn kind_protections(args: &EvictorArgs, pod: &Pod, reasons: &mut Vec<Protection>) {
    if args.no_eviction_policy == NoEvictionPolicy::Mandatory && pod.prefer_no_eviction {
        reasons.push(Protection::PreferNoEviction);
    }
    if pod.mirror {
        reasons.push(Protection::Mirror);
    }
    if pod
        .config_source()
        .is_some_and(|source| *source != ConfigSource::Api)
    {
        reasons.push(Protection::Static);
    }
    if pod.terminating {
        reasons.push(Protection::Terminating);
    }
}

/// System-critical pods, and pods at or above the profile's `priorityThreshold` (every pod
/// when the threshold names a class the cluster does not have).
fn priority_protection(pod: &Pod, threshold: Threshold, reasons: &mut Vec<Protection>) {
    match threshold {
        _ if pod.priority >= SYSTEM_CRITICAL_PRIORITY => {
            reasons.push(Protection::SystemCritical {
                priority: pod.priority,
            });
        }
        Threshold::Priority(threshold) if pod.priority >= threshold => {
            reasons.push(Protection::AtOrAboveThreshold {
                priority: pod.priority,
                threshold,
            });
        }
        Threshold::Priority(_) => {}
        Threshold::UnknownClass(name) => reasons.push(Protection::UnknownPriorityClass {
            class: name.to_string(),
        }),
    }
}

/// Pods whose data or devices would not follow them: local storage, PersistentVolumeClaims
/// and resource claims, each when its protection is on.
fn storage_protections(protections: &Protections, pod: &Pod, reasons: &mut Vec<Protection>) {
    if protections.pods_with_local_storage && pod.local_storage {
        reasons.push(Protection::LocalStorage);
    }
    if protections.pods_with_pvc && !pod.claims().is_empty() {
        if protections.protected_storage_classes.is_empty() {
            reasons.push(Protection::PersistentVolumeClaims {
                claims: pod.claims().to_vec(),
            });
        } else {
            // Claims are not part of the snapshot; like upstream when a lookup fails, assume
            // the claim may be of a protected class.
            reasons.push(Protection::ClaimsOfUnknownClass {
                claims: pod.claims().to_vec(),
            });
        }
    }
    if protections.pods_with_resource_claims && pod.resource_claims {
        reasons.push(Protection::ResourceClaims);
    }
}

/// The evictor's filters: its label and namespace selectors, `minReplicas` and `minPodAge`.
fn filter_protections(view: &View, args: &EvictorArgs, pod: &Pod, reasons: &mut Vec<Protection>) {
    if args
        .label_selector
        .as_ref()
        .is_some_and(|s| !s.matches(&pod.labels))
    {
        reasons.push(Protection::LabelSelector);
    }
    if let Some(selector) = &args.namespace_label_selector {
        let labels = view.namespace_labels.get(&*pod.namespace);
        if !labels.is_some_and(|labels| selector.matches(labels)) {
            reasons.push(Protection::NamespaceLabelSelector);
        }
    }
    if args.min_replicas > 1
        && let Some(owner) = pod.owners.first()
    {
        let replicas = owner_pods(view, pod, &owner.uid);
        if replicas < args.min_replicas as usize {
            reasons.push(Protection::TooFewReplicas {
                owner_kind: owner.kind.to_string(),
                owner_name: owner.name.to_string(),
                replicas,
                min_replicas: args.min_replicas,
            });
        }
    }
    if let Some(min_age) = args.min_pod_age {
        match pod.started {
            None => reasons.push(Protection::NotStarted),
            Some(started) => {
                let age = view.snapshot.now.signed_duration_since(started);
                if age.to_std().map_or(true, |age| age < min_age) {
                    reasons.push(Protection::TooYoung {
                        age_seconds: age.num_seconds().max(0),
                        min_age_seconds: min_age.as_secs(),
                    });
                }
            }
        }
    }
}

/// Live pods of the namespace with the same first owner (upstream counts by owner UID).
fn owner_pods(view: &View, pod: &Pod, uid: &str) -> usize {
    view.namespace_pods(&pod.namespace)
        .iter()
        .filter(|&&p| view.state[p] == PodState::Active)
        .filter(|&&p| view.pod(p).owners.first().is_some_and(|o| &*o.uid == uid))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::testing::*;
    use crate::plan::{Planner, check_priority_classes, plan};

    fn name(class: &str) -> PriorityThreshold {
        PriorityThreshold::Name(class.to_string())
    }

    /// w1 and w2 share esxi-1, w3 is alone on esxi-2; a web pair of priority 1500 shares
    /// esxi-1, and the cluster has the class `business` (1000) which no pod uses.
    fn lab() -> Snapshot {
        let payments = |name: &str, node: &str, age: i64| {
            web(name, node, age).with(|pod| {
                pod.priority = 1500;
                pod.extras_mut().priority_class = Some("payments".to_string());
            })
        };
        crowded()
            .pod(payments("web-old", "w1", 60))
            .pod(payments("web-new", "w2", 5))
            .with(|snapshot| {
                snapshot.priority_classes = [
                    ("business".to_string(), 1000),
                    ("payments".to_string(), 1500),
                ]
                .into();
            })
            .build()
    }

    /// The protections of the named pod under the policy's first profile.
    fn protections_of(
        snapshot: &Snapshot,
        policy: &crate::policy::Policy,
        pod: &str,
    ) -> Vec<Protection> {
        let planner = Planner::new(snapshot, policy);
        let evictor = &policy.profiles[0].evictor;
        let threshold = Threshold::resolve(snapshot, &evictor.priority_threshold);
        let (index, _) = planner
            .view
            .pods()
            .find(|(_, p)| p.name == pod)
            .expect("the pod is in the snapshot");
        protections(&planner.view, evictor, threshold, index)
    }

    fn threshold_policy(threshold: PriorityThreshold) -> crate::policy::Policy {
        let evictor = EvictorArgs {
            priority_threshold: threshold,
            ..EvictorArgs::default()
        };
        policy_with(evictor, vec![anti_affinity()])
    }

    #[test]
    fn a_class_name_resolves_to_the_recorded_value_even_when_no_pod_uses_it() {
        let snapshot = lab();
        let business = name("business");
        assert_eq!(
            Threshold::resolve(&snapshot, &business),
            Threshold::Priority(1000)
        );
        // The pods of the higher, non-critical class keep their protection.
        let plan = plan(&snapshot, &threshold_policy(business));
        assert_eq!(evicted(&plan), Vec::<String>::new());
        assert_eq!(
            protections_of(&snapshot, &threshold_policy(name("business")), "web-new"),
            [Protection::AtOrAboveThreshold {
                priority: 1500,
                threshold: 1000
            }]
        );
    }

    #[test]
    fn the_system_classes_resolve_without_being_recorded() {
        let snapshot = lab();
        let cluster = name("system-cluster-critical");
        let node = name("system-node-critical");
        assert_eq!(
            Threshold::resolve(&snapshot, &cluster),
            Threshold::Priority(2_000_000_000)
        );
        assert_eq!(
            Threshold::resolve(&snapshot, &node),
            Threshold::Priority(2_000_001_000)
        );
        assert!(check_priority_classes(&snapshot, &threshold_policy(node)).is_ok());
        let plan = plan(&snapshot, &threshold_policy(cluster));
        assert_eq!(evicted(&plan), ["shop/web-new"]);
    }

    #[test]
    fn an_unknown_class_is_an_error_naming_it_and_the_classes_there_are() {
        let snapshot = lab();
        let error = check_priority_classes(&snapshot, &threshold_policy(name("gold")))
            .expect_err("no class gold");
        assert_eq!(
            error.to_string(),
            "profile test: priorityThreshold names PriorityClass gold, which the cluster does \
             not have (it has business, payments, system-cluster-critical, system-node-critical)"
        );
        assert!(check_priority_classes(&snapshot, &threshold_policy(name("business"))).is_ok());
    }

    #[test]
    fn a_plan_made_with_an_unknown_class_anyway_evicts_nothing() {
        let snapshot = lab();
        let policy = threshold_policy(name("gold"));
        let plan = plan(&snapshot, &policy);
        assert_eq!(evicted(&plan), Vec::<String>::new());
        assert_eq!(
            skipped(&plan),
            [
                ("shop/web-new".to_string(), "protected"),
                ("shop/web-old".to_string(), "protected")
            ]
        );
        assert_eq!(
            protections_of(&snapshot, &policy, "web-new"),
            [Protection::UnknownPriorityClass {
                class: "gold".to_string()
            }]
        );
    }
}
