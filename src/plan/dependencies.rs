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
//!   node affinity matched by its labels before or after the change): the scheduler places the
//!   replacement by that node's labels.
//!
//! Only the relabelled nodes are checked for each eviction; they are few.

use super::LabelChange;
use super::feasibility::{matches_node_affinity, tolerates_node};
use super::view::View;

/// A node with planned label changes, and the keys they set.
pub struct Relabelled {
    node: usize,
    keys: Vec<String>,
}

/// The relabelled nodes, in node order. `changes` are grouped by node, in node order.
pub fn relabelled(view: &View, changes: &[LabelChange]) -> Vec<Relabelled> {
    let mut relabelled: Vec<Relabelled> = Vec::new();
    for change in changes {
        match relabelled.last_mut() {
            Some(last) if view.nodes[last.node].node.name == change.node => {
                last.keys.push(change.key.clone())
            }
            _ => {
                // Nodes are sorted by name in the snapshot, and so in the view.
                let Ok(node) = view
                    .nodes
                    .binary_search_by(|state| state.node.name.as_str().cmp(&change.node))
                else {
                    continue;
                };
                relabelled.push(Relabelled {
                    node,
                    keys: vec![change.key.clone()],
                });
            }
        }
    }
    relabelled
}

/// The relabelled nodes the eviction of `pod` depends on, by name, in node order.
pub fn of(view: &View, relabelled: &[Relabelled], pod: usize) -> Vec<String> {
    let Some(home) = view.pod_node[pod] else {
        return Vec::new();
    };
    relabelled
        .iter()
        .filter(|candidate| {
            candidate.node == home
                || shares_a_domain(view, candidate, pod, home)
                || would_accept(view, candidate.node, pod)
        })
        .map(|candidate| view.nodes[candidate.node].node.name.clone())
        .collect()
}

/// Whether the node is in the pod's domain of a changed key the decision used.
fn shares_a_domain(view: &View, candidate: &Relabelled, pod: usize, home: usize) -> bool {
    candidate.keys.iter().any(|key| {
        let Some(value) = view.nodes[home].labels.get(key) else {
            return false;
        };
        let state = &view.nodes[candidate.node];
        let in_domain =
            state.labels.get(key) == Some(value) || state.node.labels.get(key) == Some(value);
        // The cheap comparison first: the decision's keys may mean a walk over other pods' terms.
        in_domain && is_topology_key_of(view, pod, key)
    })
}

/// Whether `key` is a topology key the pod's placement is judged by.
fn is_topology_key_of(view: &View, pod: usize, key: &str) -> bool {
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

/// Whether the scheduler could place the pod on the node, by either its old or its new labels.
fn would_accept(view: &View, node: usize, pod: usize) -> bool {
    let state = &view.nodes[node];
    let pod_ref = view.pod(pod);
    state.node.ready
        && !state.node.unschedulable
        && tolerates_node(view, pod_ref, node)
        && (matches_node_affinity(pod_ref, &state.node.name, &state.labels)
            || matches_node_affinity(pod_ref, &state.node.name, &state.node.labels))
}

#[cfg(test)]
mod tests {
    use crate::plan::plan;
    use crate::plan::testing::*;
    use crate::snapshot::{Labels, Snapshot};

    /// w1 on esxi-1; w2's VM was moved from esxi-2 onto esxi-1 and its host label still says
    /// esxi-2, so the plan relabels it; w3 on esxi-3.
    fn moved() -> Lab {
        Lab::new()
            .host("esxi-1")
            .host("esxi-2")
            .host("esxi-3")
            .node("w1", "esxi-1")
            .node("w2", "esxi-1")
            .node("w3", "esxi-3")
            .with(|s| set_label(s, "w2", HOST, "esxi-2"))
    }

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

    fn web(name: &str, node: &str, age: i64) -> PodBuilder {
        pod(&format!("shop/{name}"))
            .app("web")
            .on(node)
            .anti_affinity(HOST)
            .age_minutes(age)
    }

    /// Two replicas on w3 that must not share a node (not a host).
    fn api_pair(lab: Lab) -> Lab {
        lab.pod(
            pod("shop/api-a")
                .app("api")
                .on("w3")
                .anti_affinity(HOSTNAME)
                .age_minutes(60),
        )
        .pod(
            pod("shop/api-b")
                .app("api")
                .on("w3")
                .anti_affinity(HOSTNAME)
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
                    e.depends_on_labels_of.clone(),
                )
            })
            .collect()
    }

    #[test]
    fn an_eviction_from_a_relabelled_node_depends_on_its_labels() {
        let snapshot = moved()
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
        let snapshot = moved()
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
    fn an_eviction_depends_on_a_relabelled_node_that_would_take_the_pod() {
        let snapshot = api_pair(moved()).build();
        assert_eq!(
            dependencies(&snapshot),
            [("shop/api-b".to_string(), vec!["w2".to_string()])]
        );
    }

    #[test]
    fn an_unrelated_relabelled_node_is_no_dependency() {
        // The pods need an SSD node: w1 has one, the relabelled w2 does not, and w2 is on
        // another host than w3 either way.
        let ssd = Labels::from([("disk".to_string(), "ssd".to_string())]);
        let snapshot = api_pair(moved())
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
        let cordoned = api_pair(moved()).with(|s| cordon(s, "w2")).build();
        assert_eq!(
            dependencies(&cordoned),
            [("shop/api-b".to_string(), Vec::new())]
        );
    }

    #[test]
    fn an_eviction_carries_the_pods_uid_and_the_policys_grace_period() {
        let snapshot = api_pair(moved()).build();
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
