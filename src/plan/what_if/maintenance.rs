//! A host enters maintenance mode: DRS moves its VMs, and the pods on them, to the cluster's
//! other usable hosts. Where a satisfiable rule keeps a workload's VMs apart (and DRS acts on
//! rules by itself), or a cluster module does, each moving VM goes to a host holding none of
//! the workload's pods, so the busiest host is known. Otherwise DRS may put every moving VM on the busiest remaining host:
//! the outcome is a bound, from the pigeonhole (the pods over the hosts left) up to that.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::{
    Bound, Impact, KeptApartBy, NodeGroupImpact, WhatIf, drs_automated, find_host, group_nodes,
    hosts_now, members, view_now,
};
use crate::inventory::{Cluster, RuleKind};
use crate::plan::exposure::ExposureClass;
use crate::plan::view::View;
use crate::plan::view::index::NodeIx;
use crate::policy::Policy;
use crate::snapshot::Snapshot;

/// One of our DRS rules in the host's cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuleImpact {
    pub rule: String,
    /// How many VMs it keeps apart.
    pub vms: usize,
    /// Its VMs on the host, which move.
    pub moving: Vec<String>,
    /// Usable hosts left in the cluster.
    pub hosts_left: usize,
    /// It can still hold: no more VMs than hosts left.
    pub satisfiable: bool,
}

/// The host's cluster before and after.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterCapacity {
    pub cluster: String,
    pub usable_hosts_now: usize,
    pub usable_hosts_after: usize,
    /// Node VMs in the cluster.
    pub node_vms: usize,
    /// Node VMs on the host, which move.
    pub moving_vms: Vec<String>,
    /// DRS is on and fully automated: it moves the VMs by itself (otherwise someone applies
    /// its recommendations, or moves them by hand).
    pub drs_fully_automated: bool,
    /// The inventory holds the cluster's DRS settings. A Supervisor shows none; VKS requires
    /// DRS fully automated there, so it is taken to move the VMs by itself. Written only when
    /// `false`.
    #[serde(skip_serializing_if = "is_true")]
    pub drs_observed: bool,
    /// Some other usable host can take the VMs: without one, maintenance cannot complete.
    pub evacuable: bool,
}

/// What moves, and where it may go.
struct Move<'a> {
    host: &'a str,
    cluster: &'a Cluster,
    /// The cluster's position in the inventory, as node placements name it.
    cluster_index: usize,
    /// Usable hosts of the cluster other than the host.
    left: BTreeSet<&'a str>,
    /// Nothing moves: the host is in maintenance mode already, or not connected.
    idle: bool,
}

pub(super) fn assess(snapshot: &Snapshot, policy: &Policy, host: &str) -> WhatIf {
    let view = view_now(snapshot, policy, |_| None);
    let inventory = snapshot.inventory.as_ref().expect("checked by what_if");
    let (index, found) = find_host(inventory, host).expect("resolved by what_if");
    let cluster = &inventory.clusters[index];
    let left: BTreeSet<&str> = cluster
        .hosts
        .iter()
        .filter(|h| h.is_usable() && h.name != host)
        .map(|h| h.name.as_str())
        .collect();
    let moving = Move {
        host,
        cluster,
        cluster_index: index,
        left,
        idle: !found.is_usable(),
    };
    let mut whatif = WhatIf::empty(hosts_now(&view, &[host]));
    for member in members(&view) {
        let units = units(
            &view,
            member.per_node.iter().map(|(n, pods)| (*n, *pods)),
            host,
        );
        if moving.idle || units.moving.is_empty() {
            whatif.counts.add(ExposureClass::Tolerated);
            continue;
        }
        let kept = keeping_rule(&view, &moving, member.per_node.keys().copied());
        let bound = bound(&units, &moving.left, kept.as_ref());
        let outcome = Impact::moved(
            units.moving.iter().sum(),
            Some(bound),
            kept,
            (member.pods, member.tolerates()),
        );
        whatif.counts.add(outcome.class);
        whatif.workloads.push(member.impact(outcome));
    }
    whatif.node_groups = node_groups(&view, &moving);
    whatif.drs_rules = rules(&view, &moving);
    whatif.capacity = Some(capacity(
        &view,
        &moving,
        inventory.cluster_names()[index].clone(),
    ));
    whatif
}

/// A workload's (or node group's) count per node, split into what stays (by host) and what
/// moves (per node VM on the host).
pub(super) struct Units<'a> {
    pub(super) stay: BTreeMap<&'a str, usize>,
    pub(super) moving: Vec<usize>,
}

fn units<'v>(
    view: &'v View,
    per_node: impl Iterator<Item = (NodeIx, usize)>,
    host: &str,
) -> Units<'v> {
    let mut units = Units {
        stay: BTreeMap::new(),
        moving: Vec::new(),
    };
    for (node, count) in per_node {
        match view.nodes[node].host() {
            Some(on) if on == host => units.moving.push(count),
            Some(on) => *units.stay.entry(on).or_default() += count,
            None => {}
        }
    }
    units
}

/// The busiest host afterwards: exact when a DRS rule keeps the VMs apart or no host is left to
/// choose, else from the pigeonhole up to every moving VM on the busiest host left. A cluster
/// module is soft: DRS keeps its VMs apart when it can, so the busiest host lies between what
/// the module holds and what no rule would: a bound, never certain.
fn bound(units: &Units, left: &BTreeSet<&str>, kept: Option<&KeptApartBy>) -> Bound {
    match kept {
        Some(KeptApartBy::Module(_)) => {
            let held = bound_of(units, left, true);
            let broken = bound_of(units, left, false);
            Bound {
                at_least: held.at_least.min(broken.at_least),
                at_most: held.at_most.max(broken.at_most),
            }
        }
        Some(KeptApartBy::Rule(_)) => bound_of(units, left, true),
        None => bound_of(units, left, false),
    }
}

/// [`bound`] with a rule that holds (`kept`) or none.
pub(super) fn bound_of(units: &Units, left: &BTreeSet<&str>, kept: bool) -> Bound {
    let max_stay = units.stay.values().copied().max().unwrap_or(0);
    let max_moving = units.moving.iter().copied().max().unwrap_or(0);
    let moving: usize = units.moving.iter().sum();
    let exact = |count: usize| Bound {
        at_least: count,
        at_most: count,
    };
    if left.is_empty() {
        // Nowhere to go: maintenance cannot complete and the VMs stay together where they are.
        return exact(max_stay.max(moving));
    }
    if kept {
        return exact(max_stay.max(max_moving));
    }
    let on_left = |host: &&str| units.stay.get(host).copied().unwrap_or(0);
    let busiest_left = left.iter().map(on_left).max().unwrap_or(0);
    let in_cluster = left.iter().map(on_left).sum::<usize>() + moving;
    Bound {
        at_least: max_stay
            .max(max_moving)
            .max(in_cluster.div_ceil(left.len())),
        at_most: max_stay.max(busiest_left + moving),
    }
}

/// What keeps every VM of these nodes in the host's cluster apart and still holds with the hosts
/// left: an enabled anti-affinity rule when DRS acts on rules by itself, or a cluster module.
///
/// A cluster module is soft anti-affinity, as a non-mandatory rule is: DRS keeps its members
/// apart when it can, and here it can (no more members than hosts left), so a module gives the
/// bound such a rule gives. VKS requires DRS fully automated on a Supervisor's clusters, and
/// the Supervisor shows no DRS setting (`drs: None` with `vsphere.source: supervisor`): a module
/// counts there as if DRS were automated. DRS observed and not acting by itself credits none.
fn keeping_rule(
    view: &View,
    moving: &Move,
    nodes: impl Iterator<Item = NodeIx>,
) -> Option<KeptApartBy> {
    let automated = drs_automated(moving.cluster);
    let modules_kept = automated || moving.cluster.drs.is_none();
    let vms: BTreeSet<&str> = nodes
        .filter_map(|n| view.nodes[n].placement.as_ref())
        .filter(|p| p.cluster_index == moving.cluster_index)
        .filter_map(|p| p.vm.map(|vm| vm.name.as_str()))
        .collect();
    moving
        .cluster
        .rules
        .iter()
        .filter(|r| r.enabled && r.vms.len() <= moving.left.len())
        .filter(|r| vms.iter().all(|vm| r.vms.iter().any(|v| v == vm)))
        .find_map(|r| match r.kind {
            RuleKind::AntiAffinity if automated => Some(KeptApartBy::Rule(r.name.clone())),
            RuleKind::ClusterModule if modules_kept => Some(KeptApartBy::Module(r.name.clone())),
            _ => None,
        })
}

fn node_groups(view: &View, moving: &Move) -> Vec<NodeGroupImpact> {
    group_nodes(view)
        .into_iter()
        .map(|(group, nodes)| {
            let units = units(view, nodes.iter().map(|n| (*n, 1)), moving.host);
            let count = units.moving.len();
            let (bound, kept) = if moving.idle || count == 0 {
                (None, None)
            } else {
                let kept = keeping_rule(view, moving, nodes.iter().copied());
                (Some(bound(&units, &moving.left, kept.as_ref())), kept)
            };
            NodeGroupImpact {
                node_group: group,
                nodes: nodes.len(),
                outcome: Impact::moved(count, bound, kept, (nodes.len(), None)),
            }
        })
        .collect()
}

/// Our enabled anti-affinity rules in the host's cluster.
fn rules(view: &View, moving: &Move) -> Vec<RuleImpact> {
    let settings = &view.policy.vsphere.drs_rules;
    let prefix = match &view.policy.cluster_name {
        Some(cluster) => format!("{}:{cluster}:", settings.name_prefix),
        None => format!("{}:", settings.name_prefix),
    };
    let host_of: BTreeMap<&str, &str> = moving
        .cluster
        .vms
        .iter()
        .map(|vm| (vm.name.as_str(), vm.host.as_str()))
        .collect();
    moving
        .cluster
        .rules
        .iter()
        .filter(|r| r.enabled && r.kind == RuleKind::AntiAffinity && r.name.starts_with(&prefix))
        .map(|r| RuleImpact {
            rule: r.name.clone(),
            vms: r.vms.len(),
            moving: r
                .vms
                .iter()
                .filter(|vm| host_of.get(vm.as_str()) == Some(&moving.host))
                .cloned()
                .collect(),
            hosts_left: moving.left.len(),
            satisfiable: r.vms.len() <= moving.left.len(),
        })
        .collect()
}

fn capacity(view: &View, moving: &Move, cluster: String) -> ClusterCapacity {
    let node_vms: Vec<(&str, &str)> = view
        .nodes
        .iter()
        .filter_map(|n| {
            let placement = n.placement.as_ref()?;
            let vm = placement.vm?;
            (placement.cluster_index == moving.cluster_index)
                .then_some((vm.name.as_str(), vm.host.as_str()))
        })
        .collect();
    let usable_now = moving
        .cluster
        .hosts
        .iter()
        .filter(|h| h.is_usable())
        .count();
    ClusterCapacity {
        cluster,
        usable_hosts_now: usable_now,
        usable_hosts_after: if moving.idle {
            usable_now
        } else {
            moving.left.len()
        },
        node_vms: node_vms.len(),
        moving_vms: node_vms
            .iter()
            .filter(|(_, host)| *host == moving.host && !moving.idle)
            .map(|(vm, _)| vm.to_string())
            .collect(),
        drs_fully_automated: drs_automated(moving.cluster),
        drs_observed: moving.cluster.drs.is_some(),
        evacuable: moving.idle || !moving.left.is_empty(),
    }
}

fn is_true(value: &bool) -> bool {
    *value
}
