//! Which planned label changes an eviction relies on. When one node's labels cannot be written
//! (say the autoscaler deleted it between list and write), only the evictions that relied on
//! that node's new labels are held back, not every eviction of the run.
//!
//! An eviction depends on a relabelled node when
//! * the pod runs on it;
//! * a key the change sets is a topology key of the decision (of the pod's required
//!   anti-affinity terms and spread constraints, or of another pod's required anti-affinity
//!   term that selects it) and the node is, before or after the change, in the pod's domain of
//!   that key: its pods are the partners the pod conflicts with, or the domain the pod leaves;
//! * it would accept the pod (Ready, not cordoned, taints tolerated, node selector and required
//!   node affinity matched by its labels before or after the change) and the change matters to
//!   where the scheduler would put the replacement: it sets a topology key of the decision (by a
//!   stale host label the scheduler could put the replacement back next to its partner), or it
//!   decides whether the node selector or affinity matches at all.
//!
//! A relabelled node whose change concerns none of the pod's constraints is no dependency: an
//! eviction for a hostname-level or zone-level rule, or a duplicate, does not wait for host
//! labels.
//!
//! Only the relabelled nodes are checked for each eviction; they are few.

use std::sync::Arc;

use super::feasibility::{matches_node_affinity, tolerates_node};
use crate::plan::view::View;
use crate::plan::view::index::{NodeIx, PodIx};
use crate::plan::vsphere::labels::LabelChange;
use crate::snapshot::Pod;

/// A node with planned label changes, and the keys they set.
pub struct Relabelled {
    node: NodeIx,
    /// The node's name, shared by every eviction that depends on it: at 150k pods the
    /// evictions list about a million of them, one `String` copy each was 56 MB.
    name: Arc<str>,
    keys: Vec<String>,
}

/// The plan's label changes as this module needs them.
#[derive(Default)]
pub struct Relabelling {
    /// In node order.
    nodes: Vec<Relabelled>,
    /// Every key some change sets: a few (the host, cluster and datacenter keys at most).
    keys: Vec<String>,
}

/// The relabelled nodes, in node order. `changes` are grouped by node, in node order.
pub fn relabelled(view: &View, changes: &[LabelChange]) -> Relabelling {
    let mut relabelling = Relabelling::default();
    for change in changes {
        if !relabelling.keys.contains(&change.key) {
            relabelling.keys.push(change.key.clone());
        }
        match relabelling.nodes.last_mut() {
            Some(last) if view.nodes[last.node].node.name == change.node => {
                last.keys.push(change.key.clone())
            }
            _ => {
                // Nodes are sorted by name in the snapshot, and so in the view.
                let Some(node) = view
                    .nodes
                    .binary_search_by(|state| state.node.name.as_str().cmp(&change.node))
                else {
                    continue;
                };
                relabelling.nodes.push(Relabelled {
                    node,
                    name: Arc::from(change.node.as_str()),
                    keys: vec![change.key.clone()],
                });
            }
        }
    }
    relabelling
}

/// The relabelled nodes the eviction of `pod` depends on, by name, in node order.
pub fn of(view: &View, relabelling: &Relabelling, pod: PodIx) -> Vec<Arc<str>> {
    let Some(home) = view.pod_node[pod] else {
        return Vec::new();
    };
    // Worked out once per eviction, not per relabelled node: finding which keys the decision
    // used may walk other pods' terms.
    let pod_ref = view.pod(pod);
    let decision: Vec<&str> = relabelling
        .keys
        .iter()
        .map(String::as_str)
        .filter(|key| is_topology_key_of(view, pod, key))
        .collect();
    let selected_by_changed_key = relabelling
        .keys
        .iter()
        .any(|key| selector_reads(pod_ref, key));
    if decision.is_empty() && !selected_by_changed_key {
        return relabelling
            .nodes
            .iter()
            .filter(|candidate| candidate.node == home)
            .map(|candidate| Arc::clone(&candidate.name))
            .collect();
    }
    relabelling
        .nodes
        .iter()
        // The likeliest and cheapest test first: most relabelled nodes would take the pod.
        .filter(|candidate| {
            candidate.node == home
                || placement_relies_on(view, candidate, pod, &decision)
                || shares_a_domain(view, candidate, home, &decision)
        })
        .map(|candidate| Arc::clone(&candidate.name))
        .collect()
}

/// Whether the node is, before or after its change, in the pod's domain of a changed key the
/// decision used.
fn shares_a_domain(view: &View, candidate: &Relabelled, home: NodeIx, decision: &[&str]) -> bool {
    // Only the keys the decision used; asked first, as it costs no label lookup.
    candidate.keys.iter().any(|key| {
        if !decision.contains(&key.as_str()) {
            return false;
        }
        let Some(value) = view.nodes[home].labels.get(key) else {
            return false;
        };
        let state = &view.nodes[candidate.node];
        state.labels.get(key) == Some(value) || state.node.labels.get(key) == Some(value)
    })
}

/// Whether `key` is a topology key the pod's placement is judged by.
fn is_topology_key_of(view: &View, pod: PodIx, key: &str) -> bool {
    let pod_ref = view.pod(pod);
    pod_ref.anti_affinity.iter().any(|t| t.topology_key == key)
        || pod_ref
            .spread_constraints
            .iter()
            .any(|c| c.topology_key == key)
        || view.holders_for(pod_ref).any(|holder| {
            let term = &view.pod(holder.pod).anti_affinity[holder.term];
            holder.pod != pod
                && term.topology_key == key
                && view.term_selects(holder.pod, term, pod)
        })
}

/// Whether the pod's node selector or required node affinity reads `key`.
fn selector_reads(pod: &Pod, key: &str) -> bool {
    pod.node_selector.contains_key(key)
        || pod.node_affinity().into_iter().flatten().any(|term| {
            term.expressions
                .iter()
                .chain(&term.fields)
                .any(|requirement| requirement.key == key)
        })
}

/// Whether the scheduler's choice of the node for the pod's replacement depends on the
/// change: the node would take the pod by its old or new labels, and either only one of them
/// matches the pod's node selector and affinity, or the change sets a topology key the pod is
/// placed by.
fn placement_relies_on(view: &View, candidate: &Relabelled, pod: PodIx, decision: &[&str]) -> bool {
    let state = &view.nodes[candidate.node];
    let pod_ref = view.pod(pod);
    if !state.node.ready
        || state.node.unschedulable
        || !tolerates_node(view, pod_ref, candidate.node)
    {
        return false;
    }
    let by_new = matches_node_affinity(pod_ref, &state.node.name, &state.labels);
    let by_old = matches_node_affinity(pod_ref, &state.node.name, &state.node.labels);
    by_new != by_old
        || ((by_new || by_old)
            && candidate
                .keys
                .iter()
                .any(|key| decision.contains(&key.as_str())))
}

#[cfg(test)]
mod tests {
    use crate::plan::plan;
    use crate::plan::testing::*;
    use crate::snapshot::{Labels, Snapshot};

    fn set_label(snapshot: &mut Snapshot, node: &str, key: &str, value: &str) {
        let node = snapshot
            .nodes
            .iter_mut()
            .find(|n| n.name == node)
            .expect("the node");
        node.labels.insert(key.to_string(), value.to_string());
    }

    fn cordon(snapshot: &mut Snapshot, node: &str) {
        let node = snapshot
            .nodes
            .iter_mut()
            .find(|n| n.name == node)
            .expect("the node");
        node.unschedulable = true;
    }

    /// Two replicas on w3 that must not share a node (not a host).
    /// Two api replicas on w3, kept apart by `key`.
    fn api_pair(lab: Lab, key: &str) -> Lab {
        lab.pod(
            pod("shop/api-a")
                .app("api")
                .on("w3")
                .anti_affinity(key)
                .age_minutes(60),
        )
        .pod(
            pod("shop/api-b")
                .app("api")
                .on("w3")
                .anti_affinity(key)
                .age_minutes(5),
        )
    }

    /// `namespace/pod` → the nodes its eviction depends on.
    fn dependencies(snapshot: &Snapshot) -> Vec<(String, Vec<String>)> {
        let plan = plan(snapshot, &policy(vec![anti_affinity()]));
        assert_eq!(plan.label_changes.len(), 1, "{:?}", plan.label_changes);
        plan.evictions
            .iter()
            .map(|e| {
                (
                    format!("{}/{}", e.namespace, e.pod),
                    e.depends_on_labels_of
                        .iter()
                        .map(|n| n.to_string())
                        .collect(),
                )
            })
            .collect()
    }

    #[test]
    fn an_eviction_from_a_relabelled_node_depends_on_its_labels() {
        let snapshot = moved_worker()
            .pod(web("web-a", "w1", 60))
            .pod(web("web-b", "w2", 5))
            .build();
        assert_eq!(
            dependencies(&snapshot),
            [("shop/web-b".to_string(), vec!["w2".to_string()])]
        );
    }

    #[test]
    fn an_eviction_depends_on_the_labels_of_its_partners_node() {
        // w2 is cordoned: it could not take web-a, so only the shared host makes it count.
        let snapshot = moved_worker()
            .with(|s| cordon(s, "w2"))
            .pod(web("web-a", "w1", 5))
            .pod(web("web-b", "w2", 60))
            .build();
        assert_eq!(
            dependencies(&snapshot),
            [("shop/web-a".to_string(), vec!["w2".to_string()])]
        );
    }

    #[test]
    fn a_host_level_eviction_depends_on_a_relabelled_node_that_would_take_the_pod() {
        // By w2's stale label the scheduler could send api-b's replacement anywhere.
        let snapshot = api_pair(moved_worker(), HOST).build();
        assert_eq!(
            dependencies(&snapshot),
            [("shop/api-b".to_string(), vec!["w2".to_string()])]
        );
    }

    #[test]
    fn a_node_level_eviction_does_not_wait_for_host_labels() {
        // w2 would take api-b, but its host label plays no part in where api-b may go.
        let snapshot = api_pair(moved_worker(), HOSTNAME).build();
        assert_eq!(
            dependencies(&snapshot),
            [("shop/api-b".to_string(), Vec::<String>::new())]
        );
    }

    #[test]
    fn an_unrelated_relabelled_node_is_no_dependency() {
        // The pods need an SSD node: w1 has one, the relabelled w2 does not, and w2 is on
        // another host than w3 either way.
        let ssd = Labels::from([("disk".to_string(), "ssd".to_string())]);
        let snapshot = api_pair(moved_worker(), HOST)
            .with(|s| {
                set_label(s, "w1", "disk", "ssd");
                for pod in &mut s.pods {
                    pod.node_selector = ssd.clone();
                }
            })
            .build();
        assert_eq!(
            dependencies(&snapshot),
            [("shop/api-b".to_string(), Vec::new())]
        );
        let cordoned = api_pair(moved_worker(), HOST)
            .with(|s| cordon(s, "w2"))
            .build();
        assert_eq!(
            dependencies(&cordoned),
            [("shop/api-b".to_string(), Vec::new())]
        );
    }

    #[test]
    fn a_node_whose_change_decides_whether_the_pod_may_go_there_is_a_dependency() {
        // The pods select esxi-2's nodes by the host label (they were placed before): by its
        // stale label w2 still matches, by its new one it does not; w4 on esxi-2 takes api-b.
        let selector = Labels::from([(HOST.to_string(), "esxi-2".to_string())]);
        let snapshot = api_pair(moved_worker().node("w4", "esxi-2"), HOSTNAME)
            .with(|s| {
                for pod in &mut s.pods {
                    pod.node_selector = selector.clone();
                }
            })
            .build();
        assert_eq!(
            dependencies(&snapshot),
            [("shop/api-b".to_string(), vec!["w2".to_string()])]
        );
    }

    #[test]
    fn an_eviction_carries_the_pods_uid_and_the_policys_grace_period() {
        let snapshot = api_pair(moved_worker(), HOSTNAME).build();
        let policy = crate::policy::Policy {
            grace_period_seconds: Some(30),
            ..policy(vec![anti_affinity()])
        };
        let plan = plan(&snapshot, &policy);
        let eviction = &plan.evictions[0];
        assert_eq!(eviction.uid.as_deref(), Some("uid-shop/api-b"));
        assert_eq!(eviction.grace_period_seconds, Some(30));
    }
}
