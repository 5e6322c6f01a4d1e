//! `what-if`: what would happen to the workloads and node groups if ESXi hosts failed, or if one
//! entered maintenance mode, judged on the cluster as it is now (labels refreshed from the
//! inventory, as a plan sees it; nothing the plan would do is assumed done). Pure, like `plan`.
//!
//! A host failure is certain in its losses: the pods on the host's node VMs are lost, counted
//! against each workload's budget, and the planner's scheduler model says whether the other
//! nodes can take them; what vSphere HA does with the node VMs follows from the cluster's HA
//! configuration. Maintenance moves the host's VMs, with their pods, to hosts DRS chooses: the
//! busiest host a workload can end up with is a bound (at least, at most), exact only where a
//! DRS rule keeps its VMs apart or nothing is left to choose.

mod failure;
mod ha;
mod maintenance;

use std::collections::BTreeMap;

use serde::Serialize;

use super::exposure::{Budget, ClassCounts, ExposureClass, group_pods};
use super::index::{NodeIx, PodIx};
use super::view::{NodeState, View};
use super::vocabulary::Plan;
use crate::inventory::{Cluster, Host, Inventory, MaintenanceMode};
use crate::policy::Policy;
use crate::snapshot::Snapshot;

pub use ha::{HaImpact, HaRule, Restart};
pub use maintenance::{ClusterCapacity, RuleImpact};

/// The question asked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Scenario {
    /// These hosts fail at once: their node VMs go down.
    HostsFail(Vec<String>),
    /// This host enters maintenance mode: DRS moves its VMs to the cluster's other hosts.
    Maintenance(String),
}

/// Why a what-if cannot be answered.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WhatIfError {
    #[error("what-if needs the vSphere inventory, and the snapshot has none")]
    NoInventory,
    #[error("no ESXi host {name:?} in the inventory (it has {})", known.join(", "))]
    UnknownHost { name: String, known: Vec<String> },
    #[error("{name:?} names several ESXi hosts ({}): give the whole name", matches.join(", "))]
    AmbiguousHost { name: String, matches: Vec<String> },
}

/// The answer.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WhatIf {
    /// The question, with host names as the inventory writes them.
    pub scenario: Scenario,
    /// The hosts named, as they are now.
    pub hosts: Vec<HostNow>,
    /// Workloads of two or more pods by the class the scenario leaves them in (those it does
    /// not touch are `tolerated`).
    pub counts: ClassCounts,
    /// Every workload the scenario touches, worst first, then by name.
    pub workloads: Vec<WorkloadImpact>,
    /// Every node group of two or more nodes.
    pub node_groups: Vec<NodeGroupImpact>,
    /// PodDisruptionBudgets that lose pods (a failure).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pdbs: Vec<failure::PdbImpact>,
    /// Whether the other nodes can take the lost pods (a failure).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rescheduling: Option<failure::Rescheduling>,
    /// What vSphere HA does with the failed hosts' VMs, per vSphere cluster (a failure).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ha: Vec<HaImpact>,
    /// Our DRS rules in the host's cluster and whether they still hold (maintenance).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub drs_rules: Vec<RuleImpact>,
    /// Hosts and node VMs of the host's cluster before and after (maintenance).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<ClusterCapacity>,
    /// Workloads and node groups left `all`, `majority` or `over-budget`.
    pub at_risk: usize,
}

impl WhatIf {
    /// Whether every workload and node group stays `tolerated`.
    pub fn tolerated(&self) -> bool {
        self.at_risk == 0
    }
}

/// A named host as it is now.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HostNow {
    pub host: String,
    /// The vSphere cluster, as reports name it.
    pub cluster: String,
    /// Usable now: connected and not in maintenance mode.
    pub usable: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub in_maintenance_mode: bool,
    /// The Kubernetes nodes on it.
    pub nodes: Vec<String>,
}

/// One workload the scenario touches.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadImpact {
    /// `namespace/Kind/name`.
    pub workload: String,
    /// Its running pods on known nodes.
    pub pods: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
    /// Pods on the failed hosts (a failure: exact).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost: Option<usize>,
    /// Pods on the VMs that move (maintenance).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moving: Option<usize>,
    /// The most pods one host holds afterwards (maintenance): exact where `exact`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busiest_host: Option<Bound>,
    /// The DRS rule that keeps its VMs apart while they move (maintenance).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept_apart_by: Option<String>,
    /// The class of the outcome, at its worst where it is a bound.
    pub class: ExposureClass,
    /// Whether the outcome is certain; otherwise DRS decides within the bound.
    pub exact: bool,
}

/// Between `at_least` and `at_most`, where DRS decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Bound {
    pub at_least: usize,
    pub at_most: usize,
}

/// One node group under the scenario.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeGroupImpact {
    pub node_group: String,
    pub nodes: usize,
    /// Nodes on the failed hosts (a failure).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost: Option<usize>,
    /// Nodes whose VMs move (maintenance).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moving: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busiest_host: Option<Bound>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept_apart_by: Option<String>,
    pub class: ExposureClass,
    pub exact: bool,
}

/// Answers the question on the cluster as it is now.
pub fn what_if(
    snapshot: &Snapshot,
    policy: &Policy,
    scenario: &Scenario,
) -> Result<WhatIf, WhatIfError> {
    let inventory = snapshot
        .inventory
        .as_ref()
        .ok_or(WhatIfError::NoInventory)?;
    let scenario = resolve(inventory, scenario)?;
    let named: Vec<&str> = match &scenario {
        Scenario::HostsFail(hosts) => hosts.iter().map(String::as_str).collect(),
        Scenario::Maintenance(host) => vec![host.as_str()],
    };
    let mut whatif = match &scenario {
        Scenario::HostsFail(_) => failure::assess(snapshot, policy, &named),
        Scenario::Maintenance(host) => maintenance::assess(snapshot, policy, host),
    };
    whatif.scenario = scenario.clone();
    whatif
        .workloads
        .sort_by(|a, b| (a.class, &a.workload).cmp(&(b.class, &b.workload)));
    whatif.at_risk = whatif
        .workloads
        .iter()
        .filter(|w| w.class.at_risk())
        .count()
        + whatif
            .node_groups
            .iter()
            .filter(|g| g.class.at_risk())
            .count();
    Ok(whatif)
}

impl WhatIf {
    /// An answer with nothing found yet, for the scenario modules to fill.
    fn empty(hosts: Vec<HostNow>) -> WhatIf {
        WhatIf {
            scenario: Scenario::HostsFail(Vec::new()),
            hosts,
            counts: ClassCounts::default(),
            workloads: Vec::new(),
            node_groups: Vec::new(),
            pdbs: Vec::new(),
            rescheduling: None,
            ha: Vec::new(),
            drs_rules: Vec::new(),
            capacity: None,
            at_risk: 0,
        }
    }
}

/// The scenario with every host name as the inventory writes it: the name itself, the name in
/// another case, the short name before the first dot, or the end of that short name after a
/// `-`, each only where one host has it.
fn resolve(inventory: &Inventory, scenario: &Scenario) -> Result<Scenario, WhatIfError> {
    let one = |name: &String| resolve_host(inventory, name);
    Ok(match scenario {
        Scenario::HostsFail(hosts) => {
            let mut resolved = hosts.iter().map(one).collect::<Result<Vec<_>, _>>()?;
            resolved.sort();
            resolved.dedup();
            Scenario::HostsFail(resolved)
        }
        Scenario::Maintenance(host) => Scenario::Maintenance(one(host)?),
    })
}

fn resolve_host(inventory: &Inventory, name: &str) -> Result<String, WhatIfError> {
    let hosts: Vec<&str> = inventory
        .clusters
        .iter()
        .flat_map(|c| &c.hosts)
        .map(|h| h.name.as_str())
        .collect();
    let short = |host: &str| host.split('.').next().unwrap_or(host).to_string();
    let lower = name.to_ascii_lowercase();
    let tries: [&dyn Fn(&str) -> bool; 4] = [
        &|host| host == name,
        &|host| host.eq_ignore_ascii_case(name),
        &|host| short(host).eq_ignore_ascii_case(name),
        // `esxi-41` for `lab-esxi-41.example.com`, as people call their hosts.
        &|host| {
            short(host)
                .to_ascii_lowercase()
                .ends_with(&format!("-{lower}"))
        },
    ];
    for matches in tries {
        let mut found: Vec<String> = hosts
            .iter()
            .filter(|h| matches(h))
            .map(|h| h.to_string())
            .collect();
        found.sort();
        found.dedup();
        match found.len() {
            0 => continue,
            1 => return Ok(found.remove(0)),
            _ => {
                return Err(WhatIfError::AmbiguousHost {
                    name: name.to_string(),
                    matches: found,
                });
            }
        }
    }
    let mut known: Vec<String> = hosts.iter().map(|h| h.to_string()).collect();
    known.sort();
    known.dedup();
    Err(WhatIfError::UnknownHost {
        name: name.to_string(),
        known,
    })
}

/// The planning view of the cluster as it is now, with `refuse` applied to each node.
fn view_now<'a>(
    snapshot: &'a Snapshot,
    policy: &'a Policy,
    refuse: impl Fn(&NodeState<'a>) -> Option<&'static str>,
) -> View<'a> {
    // The label refresh's own findings (warnings, changes) belong to the plan, not here.
    let mut ignored = Plan::default();
    View::new(snapshot, policy, || {
        let mut nodes = super::refresh_nodes(snapshot, policy, &mut ignored);
        for node in &mut nodes {
            if let Some(refusal) = refuse(node) {
                node.can_receive = false;
                node.refusal = Some(refusal);
            }
        }
        nodes
    })
}

/// Each named host as it is now, with its nodes.
fn hosts_now(view: &View, named: &[&str]) -> Vec<HostNow> {
    let inventory = view
        .snapshot
        .inventory
        .as_ref()
        .expect("checked by what_if");
    let cluster_names = inventory.cluster_names();
    named
        .iter()
        .filter_map(|name| {
            let (index, host) = find_host(inventory, name)?;
            let nodes = view
                .nodes
                .iter()
                .filter(|n| n.host() == Some(*name))
                .map(|n| n.node.name.clone())
                .collect();
            Some(HostNow {
                host: host.name.clone(),
                cluster: cluster_names[index].clone(),
                usable: host.is_usable(),
                in_maintenance_mode: host.in_maintenance_mode == MaintenanceMode::On,
                nodes,
            })
        })
        .collect()
}

/// The host of that name and its cluster's position.
fn find_host<'i>(inventory: &'i Inventory, name: &str) -> Option<(usize, &'i Host)> {
    inventory
        .clusters
        .iter()
        .enumerate()
        .find_map(|(index, c)| c.hosts.iter().find(|h| h.name == name).map(|h| (index, h)))
}

/// A workload's pods by node, with its budget: what both scenarios count.
struct Member {
    name: String,
    pods: usize,
    budget: Option<Budget>,
    per_node: BTreeMap<NodeIx, usize>,
}

/// Every workload of two or more running pods.
fn members(view: &View) -> Vec<Member> {
    group_pods(view)
        .into_iter()
        .filter(|(_, pods)| pods.len() >= 2)
        .map(|(workload, pods)| Member {
            name: workload.display(),
            pods: pods.len(),
            budget: super::exposure::budget(view, &pods),
            per_node: per_node(view, &pods),
        })
        .collect()
}

fn per_node(view: &View, pods: &[PodIx]) -> BTreeMap<NodeIx, usize> {
    let mut counts = BTreeMap::new();
    for &pod in pods {
        if let Some(node) = view.pod_node[pod] {
            *counts.entry(node).or_default() += 1;
        }
    }
    counts
}

/// Every node group's nodes, for groups of two or more.
fn group_nodes(view: &View) -> Vec<(String, Vec<NodeIx>)> {
    view.policy
        .vsphere
        .drs_rules
        .node_groups
        .iter()
        .map(|group| {
            let nodes = view
                .nodes
                .enumerate()
                .filter(|(_, n)| group.node_selector.matches(&n.labels))
                .map(|(index, _)| index)
                .collect::<Vec<_>>();
            (group.name.clone(), nodes)
        })
        .filter(|(_, nodes)| nodes.len() >= 2)
        .collect()
}

/// Whether DRS acts on rules in this cluster by itself.
fn drs_automated(cluster: &Cluster) -> bool {
    cluster
        .drs
        .as_ref()
        .is_some_and(|drs| drs.enabled && drs.default_vm_behavior == "fullyAutomated")
}
