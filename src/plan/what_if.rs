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
mod site;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::inventory::{Cluster, DrsBehavior, Host, Inventory, MaintenanceMode};
use crate::plan::exposure::{
    ClassCounts, DisruptionAllowance, ExposureClass, IgnoredBudget, budgets, group_pods,
};
use crate::plan::view::index::{NodeIx, PodIx};
use crate::plan::view::{NodeRefusal, NodeState, View};
use crate::plan::vocabulary::Plan;
use crate::policy::Policy;
use crate::sites::SiteMap;
use crate::snapshot::Snapshot;

pub use ha::{HaDetail, HaImpact, HaRule, Reserve, Restart};
pub use maintenance::{ClusterCapacity, RuleImpact};
pub use site::{
    Fate, PodFates, SiteFailover, SiteMaintenance, VmFailover, VmHostRuleKind, VmRule, VmStay,
};

/// The question asked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Scenario {
    /// These hosts fail at once: their node VMs go down.
    HostsFail(Vec<String>),
    /// This host enters maintenance mode: DRS moves its VMs to the cluster's other hosts.
    Maintenance(String),
    /// Every host of this site (`vsphere.sites`) fails at once.
    SiteFails(String),
    /// Every host of this site enters maintenance mode: DRS moves their VMs to the other sites'
    /// hosts of their clusters.
    SiteMaintenance(String),
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
    #[error(
        "a site's what-if needs vsphere.sites in the policy, and the policy sets none (or reads \
         its hosts from another source than vcenter, which has no sites)"
    )]
    NoSites,
    #[error("the sites vsphere.sites chooses cannot be trusted: {}", findings.join("; "))]
    SitesUntrusted { findings: Vec<String> },
    #[error("no site {name:?} (the sites are {})", known.join(", "))]
    UnknownSite { name: String, known: Vec<String> },
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
    /// What HA does with each node VM of the failed site, by the VM/Host rules (a site fails).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub site_failover: Option<SiteFailover>,
    /// What moves off the site, and the VM/Host rules that block or give way (a site's
    /// maintenance).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub site_maintenance: Option<SiteMaintenance>,
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
    pub budget: Option<DisruptionAllowance>,
    /// Without a current budget, the first one over its pods whose status is not current.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignored_budget: Option<IgnoredBudget>,
    #[serde(flatten)]
    pub outcome: Impact,
    /// Its lost pods by what HA does with their node VMs (a site fails).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comes_back: Option<PodFates>,
}

/// One node group under the scenario: its nodes, one per VM.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeGroupImpact {
    pub node_group: String,
    pub nodes: usize,
    #[serde(flatten)]
    pub outcome: Impact,
}

/// What the scenario does to a workload's pods (or a node group's nodes).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Impact {
    /// Those on the failed hosts (a failure: exact).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost: Option<usize>,
    /// Those on the VMs that move (maintenance).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moving: Option<usize>,
    /// The most one host holds afterwards (maintenance, when anything moves).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busiest_host: Option<Bound>,
    /// The DRS rule or cluster module that keeps its VMs apart while they move (maintenance):
    /// `keptApartBy` names a rule, `keptApartByModule` a module.
    #[serde(flatten)]
    pub kept_apart_by: Option<KeptApartBy>,
    /// The class of the outcome, at its worst where it is a bound.
    pub class: ExposureClass,
    /// Whether the outcome is certain; otherwise DRS decides within the bound.
    pub exact: bool,
}

impl Impact {
    /// `lost` of `total` gone with the failed hosts.
    fn lost(lost: usize, total: usize, tolerates: Option<usize>) -> Impact {
        Impact {
            lost: Some(lost),
            moving: None,
            busiest_host: None,
            kept_apart_by: None,
            class: ExposureClass::of(total, lost, tolerates),
            exact: true,
        }
    }

    /// `moving` of `total` moved with their VMs, the busiest host then within `bound` (none:
    /// nothing moves).
    fn moved(
        moving: usize,
        bound: Option<Bound>,
        kept_apart_by: Option<KeptApartBy>,
        (total, tolerates): (usize, Option<usize>),
    ) -> Impact {
        let worst = bound.map_or(0, |b| b.at_most);
        Impact {
            lost: None,
            moving: Some(moving),
            busiest_host: bound,
            kept_apart_by,
            class: ExposureClass::of(total, worst, tolerates),
            exact: bound.is_none_or(|b| b.at_least == b.at_most),
        }
    }
}

/// What keeps a workload's (or node group's) VMs apart while DRS moves them. Serialized as the
/// one key that names it, so a rule reads `keptApartBy` as it always has.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum KeptApartBy {
    /// An enabled DRS anti-affinity rule, by name.
    #[serde(rename = "keptApartBy")]
    Rule(String),
    /// A vSphere cluster module (VKS's soft anti-affinity), as `<policy>/<group>`.
    #[serde(rename = "keptApartByModule")]
    Module(String),
}

/// Between `at_least` and `at_most`, where DRS decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Bound {
    pub at_least: usize,
    pub at_most: usize,
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
    let (scenario, sites) = resolve(inventory, policy, scenario)?;
    let mut whatif = match &scenario {
        Scenario::HostsFail(hosts) => {
            let named: Vec<&str> = hosts.iter().map(String::as_str).collect();
            failure::assess(snapshot, policy, &named)
        }
        Scenario::Maintenance(host) => maintenance::assess(snapshot, policy, host),
        Scenario::SiteFails(name) => site::fails(snapshot, policy, &sites, name),
        Scenario::SiteMaintenance(name) => site::maintenance(snapshot, policy, &sites, name),
    };
    whatif.scenario = scenario.clone();
    whatif
        .workloads
        .sort_by(|a, b| (a.outcome.class, &a.workload).cmp(&(b.outcome.class, &b.workload)));
    whatif.at_risk = whatif
        .workloads
        .iter()
        .filter(|w| w.outcome.class.at_risk())
        .count()
        + whatif
            .node_groups
            .iter()
            .filter(|g| g.outcome.class.at_risk())
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
            site_failover: None,
            site_maintenance: None,
            at_risk: 0,
        }
    }
}

/// The scenario with every host name as the inventory writes it: the name itself, the name in
/// another case, the short name before the first dot, or the end of that short name after a
/// `-`, each only where one host has it; a site as `vsphere.sites` names it. With a site, the
/// sites it was found among (resolved once, for the scenario too); empty otherwise.
fn resolve(
    inventory: &Inventory,
    policy: &Policy,
    scenario: &Scenario,
) -> Result<(Scenario, SiteMap), WhatIfError> {
    let one = |name: &String| resolve_host(inventory, name);
    let sites = || site::resolved(inventory, policy);
    Ok(match scenario {
        Scenario::HostsFail(hosts) => {
            let mut resolved = hosts.iter().map(one).collect::<Result<Vec<_>, _>>()?;
            resolved.sort();
            resolved.dedup();
            (Scenario::HostsFail(resolved), SiteMap::default())
        }
        Scenario::Maintenance(host) => (Scenario::Maintenance(one(host)?), SiteMap::default()),
        Scenario::SiteFails(name) => {
            let map = sites()?;
            (Scenario::SiteFails(site::name(&map, name)?), map)
        }
        Scenario::SiteMaintenance(name) => {
            let map = sites()?;
            (Scenario::SiteMaintenance(site::name(&map, name)?), map)
        }
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
    refuse: impl Fn(&NodeState<'a>) -> Option<NodeRefusal>,
) -> View<'a> {
    // The label refresh's own findings (warnings, changes) belong to the plan, not here.
    let mut ignored = Plan::default();
    View::new(snapshot, policy, || {
        let mut nodes = crate::plan::refresh_nodes(snapshot, policy, &mut ignored);
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
    budget: Option<DisruptionAllowance>,
    ignored_budget: Option<IgnoredBudget>,
    per_node: BTreeMap<NodeIx, usize>,
}

impl Member {
    /// How many of its pods its budget lets go at once, where it has one.
    fn tolerates(&self) -> Option<usize> {
        self.budget.as_ref().map(|b| b.tolerates)
    }

    /// The workload as a scenario touched it, with `outcome`.
    fn impact(self, outcome: Impact) -> WorkloadImpact {
        WorkloadImpact {
            workload: self.name,
            pods: self.pods,
            budget: self.budget,
            ignored_budget: self.ignored_budget,
            outcome,
            comes_back: None,
        }
    }
}

/// Every workload of two or more running pods.
fn members(view: &View) -> Vec<Member> {
    let groups = group_pods(view);
    let budgets = budgets(view, &groups);
    groups
        .into_iter()
        .zip(budgets)
        .filter(|((_, pods), _)| pods.len() >= 2)
        .map(|((workload, pods), budgets)| Member {
            name: workload.display(),
            pods: pods.len(),
            budget: budgets.current,
            ignored_budget: budgets.ignored,
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
        .is_some_and(|drs| drs.enabled && drs.default_vm_behavior == DrsBehavior::FullyAutomated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::{AdmissionControl, DrsConfig, HaConfig, RestartPriority};
    use crate::plan::judge::feasibility::Refusal;
    use crate::plan::testing::*;
    use crate::plan::view::NodeRefusal;
    use crate::policy::NodeGroup;

    fn fails(lab: Lab, hosts: &[&str]) -> WhatIf {
        let scenario = Scenario::HostsFail(hosts.iter().map(|h| h.to_string()).collect());
        what_if(&lab.build(), &policy(vec![]), &scenario).expect("an answer")
    }

    fn maintenance(lab: Lab, host: &str, policy: &Policy) -> WhatIf {
        what_if(
            &lab.build(),
            policy,
            &Scenario::Maintenance(host.to_string()),
        )
        .expect("an answer")
    }

    /// The answer's entry of a workload it touches.
    fn touched<'a>(answer: &'a WhatIf, workload: &str) -> &'a WorkloadImpact {
        answer
            .workloads
            .iter()
            .find(|w| w.workload == workload)
            .unwrap_or_else(|| panic!("{workload} is not touched: {answer:#?}"))
    }

    fn ha(lab: Lab, ha: HaConfig) -> Lab {
        lab.with(|s| s.inventory.as_mut().expect("inventory").clusters[0].ha = Some(ha))
    }

    fn ha_on(admission_control: Option<AdmissionControl>, respect: Option<bool>) -> HaConfig {
        HaConfig {
            enabled: true,
            admission_control,
            restart_priority: RestartPriority::Medium,
            respect_vm_anti_affinity_rules: respect,
        }
    }

    /// w1 and w2 on esxi-1, w3 on esxi-2, w4 on esxi-3; web's two replicas share esxi-1.
    fn lab() -> Lab {
        crowded()
            .host("esxi-3")
            .node("w4", "esxi-3")
            .pod(pod("shop/web-a").app("web").on("w1"))
            .pod(pod("shop/web-b").app("web").on("w2"))
            .pod(pod("db/pg-0").app("pg").on("w1"))
            .pod(pod("db/pg-1").app("pg").on("w3"))
            .pod(pod("db/pg-2").app("pg").on("w4"))
    }

    #[test]
    fn a_failed_host_takes_every_replica_it_holds_and_that_is_not_tolerated() {
        let answer = fails(lab(), &["esxi-1"]);
        let classes: Vec<(&str, Option<usize>, ExposureClass)> = answer
            .workloads
            .iter()
            .map(|w| (w.workload.as_str(), w.outcome.lost, w.outcome.class))
            .collect();
        assert_eq!(
            classes,
            [
                ("shop/ReplicaSet/web-rs", Some(2), ExposureClass::All),
                ("db/ReplicaSet/pg-rs", Some(1), ExposureClass::Tolerated),
            ]
        );
        assert!(answer.workloads.iter().all(|w| w.outcome.exact));
        assert_eq!(answer.at_risk, 1);
        assert!(!answer.tolerated());
        assert_eq!(answer.hosts[0].nodes, ["w1", "w2"]);
    }

    #[test]
    fn a_host_without_nodes_fails_without_touching_anything() {
        let answer = fails(lab().host("esxi-9"), &["esxi-9"]);
        assert!(answer.workloads.is_empty());
        assert!(answer.hosts[0].nodes.is_empty());
        assert_eq!(answer.counts.tolerated, 2);
        assert!(answer.tolerated());
        assert_eq!(answer.rescheduling.as_ref().map(|r| r.pods), Some(0));
    }

    #[test]
    fn a_budget_that_loses_more_ready_pods_than_it_allows_is_breached() {
        let answer = fails(lab().pdb("shop/web", "web", 1), &["esxi-1"]);
        assert_eq!(answer.pdbs.len(), 1);
        assert_eq!((answer.pdbs[0].lost, answer.pdbs[0].breached), (2, true));
        let answer = fails(lab().pdb("db/pg", "pg", 1), &["esxi-1"]);
        assert_eq!((answer.pdbs[0].lost, answer.pdbs[0].breached), (1, false));
    }

    /// Issue 42: a workload whose budget the controller has not caught up with was said to have
    /// "no PodDisruptionBudget" while the PDB table listed that budget as breached.
    #[test]
    fn a_budget_whose_status_is_not_current_is_named_as_ignored_and_why() {
        let mut stale = lab().pdb("shop/web", "web", 1).build();
        let pdb = stale.pdbs.last_mut().expect("the budget");
        (pdb.generation, pdb.observed_generation, pdb.expected_pods) = (2, 1, 4);
        let scenario = Scenario::HostsFail(vec!["esxi-1".to_string()]);
        let answer = what_if(&stale, &policy(vec![]), &scenario).expect("an answer");
        let web = touched(&answer, "shop/ReplicaSet/web-rs");
        assert_eq!(web.budget, None);
        let ignored = web.ignored_budget.as_ref().expect("the budget is named");
        assert_eq!(
            ignored.to_string(),
            "PodDisruptionBudget shop/web is ignored: its controller has not observed \
             generation 2 yet (its status describes generation 1)"
        );
        let uncounted = fails(lab().pdb("shop/web", "web", 1), &["esxi-1"]);
        let web = touched(&uncounted, "shop/ReplicaSet/web-rs");
        assert_eq!(
            web.ignored_budget
                .as_ref()
                .map(ToString::to_string)
                .as_deref(),
            Some("PodDisruptionBudget shop/web is ignored: its status counts no pods yet")
        );
    }

    #[test]
    fn lost_pods_are_placed_on_the_remaining_nodes_by_the_scheduler_model() {
        let answer = fails(lab(), &["esxi-1"]);
        let rescheduling = answer.rescheduling.expect("a failure reschedules");
        assert_eq!((rescheduling.pods, rescheduling.placed), (3, 3));
        // Only w3 and w4 are left, each on a host with a web replica that keeps every other
        // web pod off its host: none of the four web pods of esxi-1 fits; pg-0 does.
        let apart = lab()
            .pod(web("web-c", "w1", 5))
            .pod(web("web-d", "w2", 5))
            .pod(web("web-e", "w3", 5))
            .pod(web("web-f", "w4", 5));
        let rescheduling = fails(apart, &["esxi-1"]).rescheduling.expect("rescheduled");
        let unplaced: Vec<&str> = rescheduling
            .unplaced
            .iter()
            .map(|u| u.pod.as_str())
            .collect();
        assert_eq!(
            unplaced,
            ["shop/web-a", "shop/web-b", "shop/web-c", "shop/web-d"],
            "{rescheduling:#?}"
        );
        assert_eq!(rescheduling.placed, 1);
        assert!(
            rescheduling.unplaced[0]
                .reason
                .refusals
                .iter()
                .any(|(why, _)| *why == Refusal::Node(NodeRefusal::HostFailed))
        );
    }

    #[test]
    fn bare_pods_are_not_recreated_and_daemon_set_pods_go_with_their_node() {
        let lab = lab()
            .pod(
                pod("shop/bare")
                    .with(|p| p.owners = Default::default())
                    .on("w1"),
            )
            .pod(
                pod("kube-system/agent-w1")
                    .owner("DaemonSet", "agent")
                    .on("w1"),
            );
        let rescheduling = fails(lab, &["esxi-1"]).rescheduling.expect("rescheduled");
        assert_eq!(rescheduling.not_recreated, ["shop/bare"]);
        assert_eq!(
            rescheduling.pods, 3,
            "the DaemonSet's pod is not rescheduled"
        );
    }

    #[test]
    fn ha_restarts_within_its_reserved_capacity_and_respects_rules_only_when_told() {
        let ruled = || lab().rule("keep-web", 1, &["w1", "w3"]);
        let reserved = Some(AdmissionControl::HostFailures { failover_level: 1 });
        let answer = fails(
            ha(ruled(), ha_on(reserved.clone(), Some(true))),
            &["esxi-1"],
        );
        let impact = &answer.ha[0];
        assert_eq!(impact.restart, Restart::CapacityReserved);
        assert_eq!(impact.node_vms, ["w1", "w2"]);
        assert_eq!(impact.rules[0].other_hosts, ["esxi-2"]);
        assert!(impact.rules[0].held);
        let beyond = fails(ha(ruled(), ha_on(reserved, None)), &["esxi-1", "esxi-2"]);
        assert_eq!(beyond.ha[0].restart, Restart::BestEffort);
        // Both of the rule's hosts are down: its two VMs restart, with no host of its left to
        // keep them from, and the option unset holds nothing anyway.
        assert_eq!(
            beyond.ha[0].rules,
            [HaRule {
                rule: "keep-web".to_string(),
                vms: vec!["w1".to_string(), "w3".to_string()],
                other_hosts: Vec::new(),
                held: false,
            }]
        );
        let unset = fails(ha(ruled(), ha_on(None, None)), &["esxi-1"]);
        assert!(
            !unset.ha[0].rules[0].held,
            "not held unless the option is set"
        );
        let off = HaConfig {
            enabled: false,
            ..ha_on(None, None)
        };
        assert_eq!(
            fails(ha(ruled(), off), &["esxi-1"]).ha[0].restart,
            Restart::HaDisabled
        );
        assert_eq!(fails(ruled(), &["esxi-1"]).ha[0].restart, Restart::Unknown);
        let no_restart = HaConfig {
            restart_priority: RestartPriority::Disabled,
            ..ha_on(None, None)
        };
        assert_eq!(
            fails(ha(ruled(), no_restart), &["esxi-1"]).ha[0].restart,
            Restart::PriorityDisabled
        );
    }

    #[test]
    fn maintenance_without_a_rule_is_a_bound_from_the_pigeonhole_to_the_worst_host() {
        // pg-0 moves with w1's VM; esxi-2 and esxi-3 hold one pg each.
        let answer = maintenance(lab(), "esxi-1", &policy(vec![]));
        let pg = touched(&answer, "db/ReplicaSet/pg-rs");
        assert_eq!(pg.outcome.moving, Some(1));
        assert_eq!(
            pg.outcome.busiest_host,
            Some(Bound {
                at_least: 2,
                at_most: 2
            })
        );
        let web = touched(&answer, "shop/ReplicaSet/web-rs");
        // Two VMs move: at best one on each host left, at worst both on one.
        assert_eq!(
            web.outcome.busiest_host,
            Some(Bound {
                at_least: 1,
                at_most: 2
            })
        );
        assert_eq!(
            (web.outcome.class, web.outcome.exact),
            (ExposureClass::All, false)
        );
        let capacity = answer.capacity.expect("maintenance has capacity");
        assert_eq!(
            (capacity.usable_hosts_now, capacity.usable_hosts_after),
            (3, 2)
        );
        assert_eq!(capacity.moving_vms, ["w1", "w2"]);
    }

    #[test]
    fn maintenance_with_a_rule_that_still_holds_is_exact() {
        let policy = policy(vec![]);
        let lab = lab().rule(
            "vsphere-descheduler:k8s:shop:ReplicaSet/web-rs",
            1,
            &["w1", "w2"],
        );
        let answer = maintenance(lab, "esxi-1", &policy);
        let web = touched(&answer, "shop/ReplicaSet/web-rs");
        assert_eq!(
            web.outcome.busiest_host,
            Some(Bound {
                at_least: 1,
                at_most: 1
            })
        );
        assert_eq!(
            (web.outcome.class, web.outcome.exact),
            (ExposureClass::Tolerated, true)
        );
        assert_eq!(
            web.outcome.kept_apart_by,
            Some(KeptApartBy::Rule(
                "vsphere-descheduler:k8s:shop:ReplicaSet/web-rs".to_string()
            ))
        );
        assert_eq!(answer.drs_rules.len(), 1);
        assert!(answer.drs_rules[0].satisfiable);
        assert_eq!(answer.drs_rules[0].moving, ["w1", "w2"]);
    }

    #[test]
    fn a_rule_over_more_vms_than_hosts_left_cannot_hold_and_keeps_nothing_apart() {
        let lab = lab().rule(
            "vsphere-descheduler:k8s:db:ReplicaSet/pg-rs",
            1,
            &["w1", "w3", "w4"],
        );
        let answer = maintenance(lab, "esxi-1", &policy(vec![]));
        assert!(!answer.drs_rules[0].satisfiable);
        assert!(
            answer
                .workloads
                .iter()
                .all(|w| w.outcome.kept_apart_by.is_none())
        );
    }

    /// The lab with its cluster's DRS setting replaced (`None`: not observed, as from a
    /// Supervisor).
    fn drs(lab: Lab, drs: Option<DrsConfig>) -> Lab {
        lab.with(|s| s.inventory.as_mut().expect("inventory").clusters[0].drs = drs)
    }

    const WORKERS: &str = "team-a/tkc-1-workers-0";

    #[test]
    fn a_cluster_module_is_a_bound_from_what_it_holds_to_what_no_rule_would_and_is_named() {
        let by_module = maintenance(
            lab().module(WORKERS, &["w1", "w2"]),
            "esxi-1",
            &policy(vec![]),
        );
        let by_rule = maintenance(
            lab().rule("keep-web", 1, &["w1", "w2"]),
            "esxi-1",
            &policy(vec![]),
        );
        let (module, rule) = (
            touched(&by_module, "shop/ReplicaSet/web-rs"),
            touched(&by_rule, "shop/ReplicaSet/web-rs"),
        );
        // A DRS rule holds: one number. A module is soft: DRS keeps it when it can, so from
        // what it holds (1) to both pods on the one host left beside theirs (2).
        assert_eq!(
            rule.outcome.busiest_host,
            Some(Bound {
                at_least: 1,
                at_most: 1
            })
        );
        assert!(rule.outcome.exact);
        assert_eq!(
            module.outcome.busiest_host,
            Some(Bound {
                at_least: 1,
                at_most: 2
            })
        );
        assert!(!module.outcome.exact);
        assert_eq!(module.outcome.class, ExposureClass::All);
        assert_eq!(
            module.outcome.kept_apart_by,
            Some(KeptApartBy::Module(WORKERS.to_string()))
        );
        assert!(
            by_module.drs_rules.is_empty(),
            "a module is VKS's, not one of our rules"
        );
    }

    #[test]
    fn a_cluster_module_counts_where_drs_is_not_observed_and_a_rule_does_not() {
        let module = maintenance(
            drs(lab().module(WORKERS, &["w1", "w2"]), None),
            "esxi-1",
            &policy(vec![]),
        );
        assert_eq!(
            touched(&module, "shop/ReplicaSet/web-rs")
                .outcome
                .kept_apart_by,
            Some(KeptApartBy::Module(WORKERS.to_string()))
        );
        let rule = maintenance(
            drs(lab().rule("keep-web", 1, &["w1", "w2"]), None),
            "esxi-1",
            &policy(vec![]),
        );
        let web = touched(&rule, "shop/ReplicaSet/web-rs");
        assert_eq!(web.outcome.kept_apart_by, None);
        assert!(!web.outcome.exact);
    }

    #[test]
    fn a_cluster_module_keeps_nothing_apart_where_drs_is_observed_not_to_act_by_itself() {
        let partial = Some(DrsConfig {
            enabled: true,
            default_vm_behavior: DrsBehavior::PartiallyAutomated,
        });
        let answer = maintenance(
            drs(lab().module(WORKERS, &["w1", "w2"]), partial),
            "esxi-1",
            &policy(vec![]),
        );
        let web = touched(&answer, "shop/ReplicaSet/web-rs");
        assert_eq!(web.outcome.kept_apart_by, None);
        assert_eq!(
            web.outcome.busiest_host,
            Some(Bound {
                at_least: 1,
                at_most: 2
            })
        );
    }

    #[test]
    fn a_cluster_module_over_more_vms_than_hosts_left_keeps_nothing_apart() {
        let lab = drs(lab().module(WORKERS, &["w1", "w2", "w3", "w4"]), None);
        let answer = maintenance(lab, "esxi-1", &policy(vec![]));
        assert!(
            answer
                .workloads
                .iter()
                .all(|w| w.outcome.kept_apart_by.is_none()),
            "{answer:#?}"
        );
    }

    #[test]
    fn a_cluster_module_is_no_anti_affinity_rule_ha_respects_on_a_failure() {
        let reserved = Some(AdmissionControl::HostFailures { failover_level: 1 });
        let answer = fails(
            ha(
                lab().module(WORKERS, &["w1", "w3"]),
                ha_on(reserved, Some(true)),
            ),
            &["esxi-1"],
        );
        assert!(answer.ha[0].rules.is_empty(), "{:#?}", answer.ha[0]);
        let web = touched(&answer, "shop/ReplicaSet/web-rs");
        assert_eq!((web.outcome.lost, web.outcome.exact), (Some(2), true));
    }

    #[test]
    fn a_host_already_in_maintenance_moves_nothing() {
        let lab = lab().with(|s| {
            s.inventory.as_mut().expect("inventory").clusters[0].hosts[0].in_maintenance_mode =
                MaintenanceMode::On
        });
        let answer = maintenance(lab, "esxi-1", &policy(vec![]));
        assert!(answer.hosts[0].in_maintenance_mode);
        assert!(answer.workloads.is_empty());
        assert!(answer.tolerated());
    }

    #[test]
    fn a_node_group_loses_or_moves_its_nodes() {
        let mut policy = policy(vec![]);
        policy.vsphere.drs_rules.node_groups.push(NodeGroup {
            name: "cp".to_string(),
            node_selector: app_selector("cp"),
        });
        let grouped = || {
            lab()
                .label("w1", "app", "cp")
                .label("w2", "app", "cp")
                .label("w3", "app", "cp")
        };
        let failed = what_if(
            &grouped().build(),
            &policy,
            &Scenario::HostsFail(vec!["esxi-1".to_string()]),
        )
        .expect("an answer");
        let group = &failed.node_groups[0];
        assert_eq!(
            (group.outcome.lost, group.outcome.class),
            (Some(2), ExposureClass::Majority)
        );
        let moved = maintenance(grouped(), "esxi-2", &policy);
        assert_eq!(moved.node_groups[0].outcome.moving, Some(1));
        assert_eq!(
            moved.node_groups[0].outcome.class,
            ExposureClass::All,
            "at worst w3 joins w1 and w2"
        );
    }

    #[test]
    fn hosts_are_named_as_vcenter_does_by_their_first_label_or_its_end() {
        let lab = Lab::new()
            .host("lab-esxi-41.example.com")
            .host("lab-esxi-42.example.com")
            .node("w1", "lab-esxi-41.example.com");
        let inventory = lab.build().inventory.expect("inventory");
        for name in [
            "lab-esxi-41.example.com",
            "LAB-ESXI-41.example.com",
            "lab-esxi-41",
            "esxi-41",
        ] {
            assert_eq!(
                resolve_host(&inventory, name).as_deref(),
                Ok("lab-esxi-41.example.com"),
                "{name}"
            );
        }
        let unknown = resolve_host(&inventory, "esxi-43").expect_err("no such host");
        assert_eq!(
            unknown.to_string(),
            "no ESXi host \"esxi-43\" in the inventory (it has lab-esxi-41.example.com, \
             lab-esxi-42.example.com)"
        );
        let twins = Lab::new().host("a-esxi-1.x").host("b-esxi-1.y").build();
        let ambiguous =
            resolve_host(twins.inventory.as_ref().expect("inventory"), "esxi-1").expect_err("two");
        assert!(matches!(ambiguous, WhatIfError::AmbiguousHost { .. }));
    }

    #[test]
    fn without_an_inventory_there_is_no_host_to_ask_about() {
        let snapshot = lab().with(|s| s.inventory = None).build();
        let scenario = Scenario::Maintenance("esxi-1".to_string());
        assert_eq!(
            what_if(&snapshot, &policy(vec![]), &scenario),
            Err(WhatIfError::NoInventory)
        );
    }
}
