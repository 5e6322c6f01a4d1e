//! Rollouts in progress, read from the pods themselves (owner references and the revision labels
//! controllers write), so RBAC does not grow: a Deployment whose pods come from more than one
//! ReplicaSet, or a StatefulSet or DaemonSet whose pods carry more than one
//! `controller-revision-hash`. While its controller replaces pods, an eviction would take a
//! second replica beside the one being replaced, so none of its pods is evicted until it ends.

use std::collections::BTreeSet;
use std::fmt;

use crate::hash::HashMap;
use crate::plan::model::workload::{Controller, Workload, controller, workload};
use crate::snapshot::{OwnerKind, Phase, Pod, Snapshot};

/// The label StatefulSets and DaemonSets put on each pod: the revision it was made from.
const REVISION: &str = "controller-revision-hash";

/// The workloads rolling out, found by the controller of any of their pods.
#[derive(Debug, Default)]
pub struct Rollouts {
    by_controller: HashMap<Controller, Rollout>,
}

/// A workload whose pods come from more than one revision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rollout {
    /// `namespace/Kind/name`.
    pub workload: String,
    /// Deployments: its ReplicaSets with pods; otherwise its pods' revisions.
    pub from: From,
    /// The revisions, sorted.
    pub revisions: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum From {
    ReplicaSets,
    Revisions,
}

impl fmt::Display for Rollout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.from {
            From::ReplicaSets => "ReplicaSets",
            From::Revisions => "revisions",
        };
        write!(
            f,
            "{} is rolling out: its pods come from {} {what} ({}); no pod of it is evicted until \
             the rollout ends",
            self.workload,
            self.revisions.len(),
            self.revisions.join(", ")
        )
    }
}

impl Rollouts {
    /// Every workload rolling out. Pods that finished count for nothing; terminating ones
    /// still do (an old pod going away is part of the rollout).
    pub fn find(snapshot: &Snapshot) -> Rollouts {
        // By controller first, borrowing its names, so the pass over every pod builds nothing.
        type Borrowed<'p> = (&'p str, &'p str, &'p str);
        let mut by_owner: HashMap<Borrowed, (&Pod, BTreeSet<&str>)> = HashMap::default();
        for pod in &snapshot.pods {
            if matches!(pod.phase, Phase::Succeeded | Phase::Failed) {
                continue;
            }
            let Some(owner) = pod.controller() else {
                continue;
            };
            let key = (
                pod.namespace.as_ref(),
                owner.kind.as_str(),
                owner.name.as_ref(),
            );
            let revision = match owner.kind {
                OwnerKind::ReplicaSet => Some(owner.name.as_ref()),
                _ => pod.labels.get(REVISION),
            };
            let entry = by_owner
                .entry(key)
                .or_insert_with(|| (pod, BTreeSet::new()));
            entry.1.extend(revision);
        }
        // Each controller of a workload by one of its pods.
        let mut by_workload: HashMap<Workload, (BTreeSet<&str>, Vec<&Pod>, From)> =
            HashMap::default();
        for (pod, revisions) in by_owner.into_values() {
            let Some(workload) = workload(pod) else {
                continue;
            };
            let from = match pod.controller().map(|o| &o.kind) {
                Some(OwnerKind::ReplicaSet) => From::ReplicaSets,
                _ => From::Revisions,
            };
            let entry = by_workload
                .entry(workload)
                .or_insert_with(|| (BTreeSet::new(), Vec::new(), from));
            entry.0.extend(revisions);
            entry.1.push(pod);
        }
        let mut rollouts = Rollouts::default();
        for (workload, (revisions, pods, from)) in by_workload {
            if revisions.len() < 2 {
                continue;
            }
            let rollout = Rollout {
                workload: workload.display(),
                from,
                revisions: revisions.iter().map(|r| r.to_string()).collect(),
            };
            for key in pods.into_iter().filter_map(controller) {
                rollouts.by_controller.insert(key, rollout.clone());
            }
        }
        rollouts
    }

    /// The rollout of the pod's workload, when one is in progress.
    pub fn of(&self, pod: &Pod) -> Option<&Rollout> {
        self.by_controller.get(&controller(pod)?)
    }
}

#[cfg(test)]
mod tests {
    use super::{From, Rollout};
    use crate::plan::testing::*;
    use crate::plan::{SkipDetail, plan};
    use crate::snapshot::Phase;

    /// Two web replicas on esxi-1 against their host anti-affinity (one would move), made by
    /// the ReplicaSets `hash_a` and `hash_b` of Deployment `web`.
    fn deployment(hash_a: &str, hash_b: &str) -> Lab {
        let replica = |name: &str, node: &str, hash: &str| {
            web(name, node, 30)
                .owner("ReplicaSet", &format!("web-{hash}"))
                .label("pod-template-hash", hash)
        };
        moved_worker()
            .pod(replica("web-a", "w1", hash_a))
            .pod(replica("web-b", "w2", hash_b))
    }

    #[test]
    fn a_deployment_with_pods_of_two_replica_sets_is_rolling_out_and_keeps_its_pods() {
        let plan = plan(
            &deployment("1111", "2222").build(),
            &policy(vec![anti_affinity()]),
        );
        assert!(evicted(&plan).is_empty(), "{:?}", evicted(&plan));
        assert_eq!(
            skipped(&plan),
            [
                ("shop/web-a".to_string(), "rollout-in-progress"),
                ("shop/web-b".to_string(), "rollout-in-progress"),
            ]
        );
        assert_eq!(
            plan.skipped[0].detail.to_string(),
            "shop/Deployment/web is rolling out: its pods come from 2 ReplicaSets (web-1111, \
             web-2222); no pod of it is evicted until the rollout ends"
        );
    }

    #[test]
    fn a_deployment_of_one_replica_set_is_not_rolling_out() {
        let plan = plan(
            &deployment("1111", "1111").build(),
            &policy(vec![anti_affinity()]),
        );
        assert_eq!(evicted(&plan).len(), 1);
    }

    #[test]
    fn a_stateful_set_with_two_revisions_is_rolling_out() {
        let member = |name: &str, node: &str, revision: &str| {
            web(name, node, 30)
                .owner("StatefulSet", "web")
                .label("controller-revision-hash", revision)
        };
        let lab = moved_worker()
            .pod(member("web-0", "w1", "web-7f6"))
            .pod(member("web-1", "w2", "web-8a1"));
        let plan = plan(&lab.build(), &policy(vec![anti_affinity()]));
        assert!(evicted(&plan).is_empty());
        assert!(matches!(
            &plan.skipped[0].detail,
            SkipDetail::RollingOut(Rollout { from: From::Revisions, revisions, .. })
                if revisions == &["web-7f6", "web-8a1"]
        ));
    }

    #[test]
    fn a_finished_pod_of_an_old_replica_set_does_not_make_a_rollout() {
        let lab = deployment("1111", "1111").pod(
            web("web-old", "w3", 90)
                .owner("ReplicaSet", "web-0000")
                .label("pod-template-hash", "0000")
                .with(|p| p.phase = Phase::Succeeded),
        );
        let plan = plan(&lab.build(), &policy(vec![anti_affinity()]));
        assert_eq!(evicted(&plan).len(), 1, "{:?}", skipped(&plan));
    }
}
