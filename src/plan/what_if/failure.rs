//! Hosts fail: the pods on their node VMs are lost. Each workload's loss against its budget, the
//! PodDisruptionBudgets it breaks, whether the other nodes can take the lost pods (the planner's
//! scheduler model, placing them one by one, highest priority first), and what HA does.

use std::collections::BTreeSet;

use serde::Serialize;

use super::{Impact, NodeGroupImpact, WhatIf, group_nodes, hosts_now, members, view_now};
use crate::plan::judge::feasibility::{self, NoNode};
use crate::plan::model::workload::belongs_to_its_node;
use crate::plan::view::index::{PerNode, PodIx};
use crate::plan::view::{NodeRefusal, NodeState, PodState, View};
use crate::plan::vocabulary::reasons::{SkipCode, no_node_code};
use crate::policy::{EvictorArgs, Policy};
use crate::snapshot::{Pod, Snapshot};

/// A PodDisruptionBudget that loses pods.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PdbImpact {
    /// `namespace/name`.
    pub pdb: String,
    /// Ready pods it selects on the failed hosts.
    pub lost: usize,
    /// `status.disruptionsAllowed` now.
    pub disruptions_allowed: i32,
    /// It loses more than it allows: it falls below its desired healthy pods.
    pub breached: bool,
}

/// Whether the remaining nodes can take the lost pods.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rescheduling {
    /// Lost pods a controller recreates (not DaemonSet or static pods, which go with their node).
    pub pods: usize,
    /// Of those, the pods another node would take.
    pub placed: usize,
    /// The pods no other node would take, and why.
    pub unplaced: Vec<UnplacedPod>,
    /// Lost pods without a controller: nothing recreates them.
    pub not_recreated: Vec<String>,
}

/// A lost pod no remaining node would take.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnplacedPod {
    /// `namespace/name`.
    pub pod: String,
    /// Why, as the planner's better-place check says it (its sentence in the report).
    #[serde(serialize_with = "as_sentence")]
    pub reason: NoNode<String>,
    /// The reason's stable code, as a skip of the same refusal carries it in a plan's report.
    pub code: SkipCode,
}

pub(super) fn assess(snapshot: &Snapshot, policy: &Policy, failing: &[&str]) -> WhatIf {
    assess_and(snapshot, policy, failing, |_, _| {})
}

/// The same, with `more` asked of the failure's view once HA is assessed and before the lost
/// pods are rescheduled: what a scenario adds (a site's failover) on the one view.
pub(super) fn assess_and(
    snapshot: &Snapshot,
    policy: &Policy,
    failing: &[&str],
    more: impl FnOnce(&View, &mut WhatIf),
) -> WhatIf {
    let failed: BTreeSet<&str> = failing.iter().copied().collect();
    let on_failed_host = |node: &NodeState| node.host().is_some_and(|h| failed.contains(h));
    let mut view = view_now(snapshot, policy, |node| {
        on_failed_host(node).then_some(NodeRefusal::HostFailed)
    });
    // Which nodes went down, decided once from the hosts (not read back from the refusal text).
    let down: PerNode<bool> = view.nodes.iter().map(on_failed_host).collect();
    let mut whatif = WhatIf::empty(hosts_now(&view, failing));
    for member in members(&view) {
        let lost: usize = member
            .per_node
            .iter()
            .filter(|(node, _)| down[**node])
            .map(|(_, pods)| pods)
            .sum();
        let outcome = Impact::lost(lost, member.pods, member.tolerates());
        whatif.counts.add(outcome.class);
        if lost > 0 {
            whatif.workloads.push(member.impact(outcome));
        }
    }
    for (group, nodes) in group_nodes(&view) {
        let lost = nodes.iter().filter(|&&n| down[n]).count();
        whatif.node_groups.push(NodeGroupImpact {
            node_group: group,
            nodes: nodes.len(),
            outcome: Impact::lost(lost, nodes.len(), None),
        });
    }
    whatif.pdbs = pdbs(&view, &down);
    whatif.ha = super::ha::assess(&view, &failed);
    more(&view, &mut whatif);
    let evictor = policy
        .profiles
        .first()
        .map(|p| p.evictor.clone())
        .unwrap_or_default();
    whatif.rescheduling = Some(reschedule(&mut view, &evictor, &down));
    whatif
}

/// Every PodDisruptionBudget with ready pods on a failed host.
fn pdbs(view: &View, down: &PerNode<bool>) -> Vec<PdbImpact> {
    let mut impacts = Vec::new();
    for pdb in &view.snapshot.pdbs {
        let Some(selector) = &pdb.selector else {
            continue;
        };
        let lost = view
            .select(&pdb.namespace, selector)
            .into_iter()
            .filter(|&pod| lost_ready(view, pod, down))
            .count();
        if lost > 0 {
            impacts.push(PdbImpact {
                pdb: format!("{}/{}", pdb.namespace, pdb.name),
                lost,
                disruptions_allowed: pdb.disruptions_allowed,
                breached: i64::try_from(lost).unwrap_or(i64::MAX)
                    > i64::from(pdb.disruptions_allowed.max(0)),
            });
        }
    }
    impacts
}

fn lost_ready(view: &View, pod: PodIx, down: &PerNode<bool>) -> bool {
    view.state[pod] == PodState::Active
        && view.pod(pod).ready
        && view.pod_node[pod].is_some_and(|node| down[node])
}

/// Places the lost pods a controller recreates on the remaining nodes, one at a time, each
/// counted where it lands before the next is placed; the highest priority goes first, as the
/// scheduler's queue takes them.
fn reschedule(view: &mut View, evictor: &EvictorArgs, down: &PerNode<bool>) -> Rescheduling {
    let lost: Vec<PodIx> = view
        .pod_indices()
        .filter(|&pod| {
            view.state[pod] == PodState::Active && view.pod_node[pod].is_some_and(|n| down[n])
        })
        .collect();
    // Gone from the failed nodes before any is placed: a lost pod is no peer anywhere.
    for &pod in &lost {
        view.state[pod] = PodState::Evicted { landing: None };
    }
    let mut result = Rescheduling::default();
    let mut queue: Vec<PodIx> = Vec::new();
    for &pod in &lost {
        match recreated(view.pod(pod)) {
            Recreated::ByController => queue.push(pod),
            Recreated::Never => result.not_recreated.push(view.pod(pod).key()),
            Recreated::WithItsNode => {}
        }
    }
    queue.sort_by_key(|&pod| std::cmp::Reverse(view.pod(pod).priority));
    result.pods = queue.len();
    for pod in queue {
        let from = view.pod_node[pod].expect("lost pods were on a node");
        let found = feasibility::find_node(view, pod, evictor, None).map_err(NoNode::into_owned);
        match found {
            Ok(node) => {
                view.move_requests(pod, from, Some(node));
                view.state[pod] = PodState::Evicted {
                    landing: Some(node),
                };
                result.placed += 1;
            }
            Err(reason) => {
                view.move_requests(pod, from, None);
                result.unplaced.push(UnplacedPod {
                    pod: view.pod(pod).key(),
                    code: no_node_code(&reason),
                    reason,
                });
            }
        }
    }
    result
}

/// A refusal in the report: its sentence.
fn as_sentence<S: serde::Serializer>(
    none: &NoNode<String>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_str(none)
}

/// What recreates a lost pod.
enum Recreated {
    /// Its controller, on another node.
    ByController,
    /// A DaemonSet's pod, or a static pod: it belongs to its node and returns with it.
    WithItsNode,
    /// A bare pod: nothing.
    Never,
}

fn recreated(pod: &Pod) -> Recreated {
    match pod.controller() {
        _ if pod.mirror => Recreated::WithItsNode,
        Some(owner) if belongs_to_its_node(owner) => Recreated::WithItsNode,
        Some(_) => Recreated::ByController,
        None => Recreated::Never,
    }
}
