//! A workload: the controller of a set of pods, as DRS rules, exposure and what-if name it. Below
//! them all (it reads only a pod), so each imports it without a circle.

use std::sync::Arc;

use crate::snapshot::{Owner, OwnerKind, Pod};

/// Whether the owner's pods belong to their node, not spread over nodes: a DaemonSet's (one per
/// node by design) or a static pod's (its owner is the node). Exposure does not judge them, and
/// a failed node takes them with it instead of their controller recreating them elsewhere.
pub fn belongs_to_its_node(owner: &Owner) -> bool {
    matches!(owner.kind, OwnerKind::DaemonSet | OwnerKind::Node)
}

/// A workload: the controller of a set of pods (a Deployment for ReplicaSets that carry the
/// Deployment's `pod-template-hash`, so a rollout does not rename the rule).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Workload {
    pub namespace: String,
    pub kind: String,
    pub name: String,
}

impl Workload {
    /// `namespace/Kind/name`, as the report names it.
    pub fn display(&self) -> String {
        format!("{}/{}/{}", self.namespace, self.kind, self.name)
    }
}

/// The workload a pod belongs to, when it has a controller.
pub fn workload(pod: &Pod) -> Option<Workload> {
    let owner = pod.controller()?;
    let (kind, name) = match (&owner.kind, pod.labels.get("pod-template-hash")) {
        (OwnerKind::ReplicaSet, Some(hash)) => match owner.name.strip_suffix(&format!("-{hash}")) {
            Some(deployment) if !deployment.is_empty() => ("Deployment", deployment.to_string()),
            _ => ("ReplicaSet", owner.name.to_string()),
        },
        (kind, _) => (kind.as_str(), owner.name.to_string()),
    };
    Some(Workload {
        namespace: pod.namespace.to_string(),
        kind: kind.to_string(),
        name,
    })
}

/// A controller as its pods name it: namespace, kind and name. Not its uid: snapshot files may
/// repeat or leave out uids, and two controllers must never merge. Cheaper than a [`Workload`]
/// (no allocation), and the same within a workload that is not rolling out.
pub type Controller = (Arc<str>, OwnerKind, Arc<str>);

/// The pod's controller, when it has one.
pub fn controller(pod: &Pod) -> Option<Controller> {
    let owner = pod.controller()?;
    Some((
        pod.namespace.clone(),
        owner.kind.clone(),
        owner.name.clone(),
    ))
}
