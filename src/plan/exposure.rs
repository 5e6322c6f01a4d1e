//! Host-failure exposure: what one ESXi host failure would take from each workload and each node
//! group the policy keeps apart, before the plan and after it.
//!
//! A workload (a controller's pods, a Deployment's across its ReplicaSets; not DaemonSets, whose
//! pods are one per node by design, nor static pods) with two or more running pods is classed by
//! the host that holds most of them:
//! - `all`: one host holds every pod;
//! - `majority`: one host holds more than half (a StatefulSet's quorum);
//! - `over-budget`: one host holds more pods than the workload's PodDisruptionBudget lets go at
//!   once (the user's own statement of what they tolerate);
//! - `tolerated`: none of these.
//!
//! "After" moves each pod the plan evicts to the node the plan found for it; an eviction made
//! without a node-fit check has no known landing, and its replacement is counted as unplaced.
//! DRS rules are not predicted moves: a workload names the rule that will keep its node VMs
//! apart, and its classes stay those of the pods' placement.
//!
//! Only workloads at risk before or after are listed; every workload is counted by class.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::hash::HashMap;
use crate::plan::judge::feasibility::node_admits;
use crate::plan::model::drs_change::DrsRuleChange;
use crate::plan::model::workload::{Workload, belongs_to_its_node, workload};
use crate::plan::view::index::{NodeIx, PerNode, PerPod, PodIx};
use crate::plan::view::{PodState, View};
use crate::snapshot::{Pdb, Pod};

/// How much of a workload (or node group) one host holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExposureClass {
    /// One host holds every pod.
    All,
    /// One host holds more than half.
    Majority,
    /// One host holds more than the PodDisruptionBudget lets go at once.
    OverBudget,
    /// None of the above.
    Tolerated,
}

impl ExposureClass {
    /// The name the report uses.
    pub fn as_str(self) -> &'static str {
        match self {
            ExposureClass::All => "all",
            ExposureClass::Majority => "majority",
            ExposureClass::OverBudget => "over-budget",
            ExposureClass::Tolerated => "tolerated",
        }
    }

    /// Every class, worst first.
    pub const ALL: [ExposureClass; 4] = [
        ExposureClass::All,
        ExposureClass::Majority,
        ExposureClass::OverBudget,
        ExposureClass::Tolerated,
    ];

    /// The class of `worst` pods on one domain out of `total`, against what a budget lets go.
    pub fn of(total: usize, worst: usize, tolerates: Option<usize>) -> ExposureClass {
        if total >= 2 && worst == total {
            ExposureClass::All
        } else if 2 * worst > total {
            ExposureClass::Majority
        } else if tolerates.is_some_and(|tolerates| worst > tolerates) {
            ExposureClass::OverBudget
        } else {
            ExposureClass::Tolerated
        }
    }

    pub fn at_risk(self) -> bool {
        self != ExposureClass::Tolerated
    }
}

/// The exposure of a plan: counts of every workload by class, the workloads at risk, and the
/// node groups.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Exposure {
    /// Workloads of two or more pods by class, before the plan.
    pub before: ClassCounts,
    /// The same after the plan's evictions.
    pub after: ClassCounts,
    /// Every workload at risk before or after, worst after first, then by name.
    pub workloads: Vec<WorkloadExposure>,
    /// Every node group of `vsphere.drsRules.nodeGroups` with two or more nodes.
    pub node_groups: Vec<NodeGroupExposure>,
    /// The same classes with the site as the failure domain, where `vsphere.sites` is set and
    /// trusted; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sites: Option<SiteCounts>,
}

/// Workloads of two or more pods by the class losing one site leaves them in.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SiteCounts {
    /// Every site a node is on, sorted.
    pub sites: Vec<String>,
    pub before: ClassCounts,
    pub after: ClassCounts,
}

impl Exposure {
    /// Workloads and node groups at risk before the plan.
    pub fn at_risk_before(&self) -> usize {
        self.before.at_risk()
            + self
                .node_groups
                .iter()
                .filter(|g| g.class.at_risk())
                .count()
    }

    /// Workloads and node groups at risk after the plan.
    pub fn at_risk_after(&self) -> usize {
        self.after.at_risk()
            + self
                .node_groups
                .iter()
                .filter(|g| g.class.at_risk())
                .count()
    }
}

/// How many workloads are in each class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClassCounts {
    pub all: usize,
    pub majority: usize,
    pub over_budget: usize,
    pub tolerated: usize,
}

impl ClassCounts {
    pub(super) fn add(&mut self, class: ExposureClass) {
        *self.slot(class) += 1;
    }

    fn slot(&mut self, class: ExposureClass) -> &mut usize {
        match class {
            ExposureClass::All => &mut self.all,
            ExposureClass::Majority => &mut self.majority,
            ExposureClass::OverBudget => &mut self.over_budget,
            ExposureClass::Tolerated => &mut self.tolerated,
        }
    }

    pub fn get(&self, class: ExposureClass) -> usize {
        match class {
            ExposureClass::All => self.all,
            ExposureClass::Majority => self.majority,
            ExposureClass::OverBudget => self.over_budget,
            ExposureClass::Tolerated => self.tolerated,
        }
    }

    /// Workloads in a class other than `tolerated`.
    pub fn at_risk(&self) -> usize {
        self.all + self.majority + self.over_budget
    }
}

/// One workload at risk.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadExposure {
    /// `namespace/Kind/name`.
    pub workload: String,
    /// Its running pods on known nodes.
    pub pods: usize,
    /// The strictest PodDisruptionBudget over its pods whose status is current.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<DisruptionAllowance>,
    /// Without a current one, the first budget over its pods whose status is not current.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignored_budget: Option<IgnoredBudget>,
    pub before: Spread,
    pub after: Spread,
    /// How many hosts its pods can spread over at best: per vSphere cluster, its nodes that
    /// would take them (taints, node selector and affinity; not resources), up to the cluster's
    /// usable hosts, over which DRS can spread the node VMs.
    pub usable_hosts: usize,
    /// The fewest pods the busiest host can hold with its pods spread over `usable_hosts`.
    pub best_worst_host: usize,
    /// Even the best spread leaves it at risk (fewer usable hosts than it needs).
    pub unavoidable: bool,
    /// The owned DRS rule that will keep its node VMs apart, when the plan has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drs_rule: Option<String>,
    /// Its pods over the domains of every other topology key its constraints name (the site
    /// label's is `site`, where sites are configured).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub topologies: Vec<TopologyExposure>,
    /// Its pods over sites, where sites are configured: the classes one site's loss gives.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub site: Option<SiteSpread>,
}

/// A workload's pods over sites (the site of the host its node VM runs on), before and after.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SiteSpread {
    pub before: Spread,
    pub after: Spread,
}

impl WorkloadExposure {
    /// The class of its best spread: what `unavoidable` leaves it at.
    pub fn best_class(&self) -> ExposureClass {
        let tolerates = self.budget.as_ref().map(|b| b.tolerates);
        ExposureClass::of(self.pods, self.best_worst_host, tolerates)
    }
}

/// What a PodDisruptionBudget lets go at once.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DisruptionAllowance {
    /// `namespace/name`.
    pub pdb: String,
    /// Pods it lets go at once: `expectedPods - desiredHealthy` of its status.
    pub tolerates: usize,
}

/// A PodDisruptionBudget over a workload's pods that counts for nothing yet, and why: the
/// planner ignores it as the API server would refuse evictions by it, so exposure and what-if
/// judge the workload as if it had none, and say so.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IgnoredBudget {
    /// `namespace/name`.
    pub pdb: String,
    #[serde(flatten)]
    pub why: Unobserved,
}

/// Why a PodDisruptionBudget's status says nothing yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(
    tag = "reason",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum Unobserved {
    /// Its spec changed and the disruption controller has not written a status for it yet.
    NotYetObserved {
        generation: i64,
        observed_generation: i64,
    },
    /// Its status counts no pods (never written, or written before its pods existed).
    NoExpectedPods,
}

impl std::fmt::Display for IgnoredBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pdb = crate::text::escaped(&self.pdb);
        match self.why {
            Unobserved::NotYetObserved {
                generation,
                observed_generation,
            } => write!(
                f,
                "PodDisruptionBudget {pdb} is ignored: its controller has not observed generation \
                 {generation} yet (its status describes generation {observed_generation})"
            ),
            Unobserved::NoExpectedPods => write!(
                f,
                "PodDisruptionBudget {pdb} is ignored: its status counts no pods yet"
            ),
        }
    }
}

/// Pods per domain (ESXi host, or a topology key's value), and the busiest one.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Spread {
    pub class: ExposureClass,
    /// The domain that holds most (the first by name among equals).
    pub worst: Option<String>,
    pub worst_pods: usize,
    /// Pods by domain.
    pub pods: BTreeMap<String, usize>,
    /// Pods in no domain: on nodes mapped to no host (or without the key), and replacements
    /// whose landing the plan does not name.
    #[serde(skip_serializing_if = "is_zero")]
    pub unplaced: usize,
}

fn is_zero(count: &usize) -> bool {
    *count == 0
}

impl Spread {
    fn new(pods: BTreeMap<String, usize>, unplaced: usize, tolerates: Option<usize>) -> Spread {
        let total = pods.values().sum::<usize>() + unplaced;
        // The first of the busiest by name: max_by_key keeps the last maximum, so reverse.
        let worst = pods
            .iter()
            .rev()
            .max_by_key(|(_, count)| **count)
            .map(|(domain, count)| (domain.clone(), *count));
        let worst_pods = worst.as_ref().map_or(0, |(_, count)| *count);
        Spread {
            class: ExposureClass::of(total, worst_pods, tolerates),
            worst: worst.map(|(domain, _)| domain),
            worst_pods,
            pods,
            unplaced,
        }
    }

    pub fn total(&self) -> usize {
        self.pods.values().sum::<usize>() + self.unplaced
    }
}

/// A workload's pods over the domains of a topology key other than the host.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologyExposure {
    pub key: String,
    pub before: Spread,
    pub after: Spread,
}

/// A node group's nodes over ESXi hosts. The plan moves no node VM, so there is no "after".
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeGroupExposure {
    pub node_group: String,
    pub nodes: usize,
    /// Never `over-budget`: a node group has no budget.
    pub class: ExposureClass,
    /// The host that holds most of its nodes (the first by name among equals).
    pub worst_host: Option<String>,
    pub worst_host_nodes: usize,
    /// Nodes by host.
    pub hosts: BTreeMap<String, usize>,
    /// Nodes mapped to no known host.
    #[serde(skip_serializing_if = "is_zero")]
    pub unplaced: usize,
    /// How many hosts its nodes can be on at once: per vSphere cluster, its nodes up to the
    /// cluster's usable hosts.
    pub usable_hosts: usize,
    pub best_worst_host: usize,
    pub unavoidable: bool,
    /// The owned DRS rule that will keep its node VMs apart, when the plan has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drs_rule: Option<String>,
}

impl NodeGroupExposure {
    /// The class of its best spread: what `unavoidable` leaves it at.
    pub fn best_class(&self) -> ExposureClass {
        ExposureClass::of(self.nodes, self.best_worst_host, None)
    }
}

/// The exposure of the view's placement before and after its evictions; `None` without a
/// vSphere inventory, where no host is known.
pub fn assess(view: &View, rules: &[DrsRuleChange]) -> Option<Exposure> {
    view.snapshot.inventory.as_ref()?;
    let hosts = DomainIds::hosts(view);
    let sites = DomainIds::sites(view);
    let groups = group_pods(view);
    let budgets = budgets(view, &groups);
    let mut exposure = Exposure {
        sites: sites.as_ref().map(|sites| SiteCounts {
            sites: sites.sorted_names(),
            ..SiteCounts::default()
        }),
        ..Exposure::default()
    };
    let mut demands = Vec::new();
    for ((workload, pods), budgets) in groups.iter().zip(budgets) {
        let counted = Counted::of(view, &hosts, pods);
        if counted.total < 2 {
            continue;
        }
        let tolerates = budgets.current.as_ref().map(|b| b.tolerates);
        let before = ExposureClass::of(counted.total, counted.worst_before(), tolerates);
        let after = ExposureClass::of(counted.total, counted.worst_after(), tolerates);
        exposure.before.add(before);
        exposure.after.add(after);
        let site = sites.as_ref().map(|sites| {
            let counted = Counted::of(view, sites, pods);
            let (before, after) = counted.spreads(sites, tolerates);
            SiteSpread { before, after }
        });
        if let (Some(counts), Some(site)) = (&mut exposure.sites, &site) {
            counts.before.add(site.before.class);
            counts.after.add(site.after.class);
        }
        let site_listed = site
            .as_ref()
            .is_some_and(|site| is_listed_by_site(view, pods, site));
        if before.at_risk() || after.at_risk() || site_listed {
            let usable_hosts = usable_hosts(view, pods, &mut demands);
            let mut described = describe(
                view,
                &hosts,
                (workload, pods),
                &counted,
                (budgets, usable_hosts),
                rules,
            );
            if site.is_some() {
                // The site label's spread is `site`, read from the placement as the host's is.
                let site_key = view.policy.vsphere.labels.site.as_deref();
                described
                    .topologies
                    .retain(|t| Some(t.key.as_str()) != site_key);
            }
            described.site = site;
            exposure.workloads.push(described);
        }
    }
    exposure
        .workloads
        .sort_by(|a, b| (a.after.class, &a.workload).cmp(&(b.after.class, &b.workload)));
    exposure.node_groups = node_groups(view, rules);
    Some(exposure)
}

/// Whether a workload tolerated per host is listed for its sites: when one site holds every pod
/// (a site's failure takes them all), or when it is at risk per site and its pods keep apart or
/// spread on the site label. Over two sites almost every workload holds a majority on one; a
/// workload whose pods never asked about sites is counted in its class, not listed, so the ones
/// that did ask are not buried (at 150k pods over two sites, about 4,500 more entries).
fn is_listed_by_site(view: &View, pods: &[PodIx], site: &SiteSpread) -> bool {
    let classes = [site.before.class, site.after.class];
    if classes.contains(&ExposureClass::All) {
        return true;
    }
    let Some(key) = view.policy.vsphere.labels.site.as_deref() else {
        return false;
    };
    // A workload's pods share one template: its first pod asks what they all ask.
    let pod = view.pod(pods[0]);
    let names = |term: &crate::snapshot::AffinityTerm| term.topology_key == key;
    classes.iter().any(|class| class.at_risk())
        && (pod.anti_affinity.iter().any(names)
            || pod.preferred_anti_affinity().iter().any(|w| names(&w.term))
            || pod.spread_constraints.iter().any(|c| c.topology_key == key))
}

/// Each failure domain (ESXi host, or site) a node is on, numbered, so the pass over every pod
/// counts integers.
pub(super) struct DomainIds {
    of_node: PerNode<Option<u32>>,
    names: Vec<String>,
}

impl DomainIds {
    /// The host each node's VM runs on.
    fn hosts(view: &View) -> DomainIds {
        DomainIds::number(view.nodes.iter().map(|node| node.host()))
    }

    /// The site of the host each node's VM runs on (`NodeState::site`); `None` where no node
    /// has one: sites not configured, no inventory, or findings against them (the plan then
    /// trusts no site).
    pub(super) fn sites(view: &View) -> Option<DomainIds> {
        view.policy.vsphere.sites.as_ref()?;
        let sites = DomainIds::number(view.nodes.iter().map(|node| node.site.as_deref()));
        (!sites.names.is_empty()).then_some(sites)
    }

    fn number<'n>(domains: impl Iterator<Item = Option<&'n str>>) -> DomainIds {
        let mut ids: HashMap<&str, u32> = HashMap::default();
        let mut names = Vec::new();
        let of_node = domains
            .map(|domain| {
                let domain = domain?;
                Some(*ids.entry(domain).or_insert_with(|| {
                    names.push(domain.to_string());
                    u32::try_from(names.len() - 1).expect("fewer than 2^32 domains")
                }))
            })
            .collect();
        DomainIds { of_node, names }
    }

    pub(super) fn of(&self, node: NodeIx) -> Option<u32> {
        self.of_node[node]
    }

    pub(super) fn name(&self, id: u32) -> &str {
        &self.names[id as usize]
    }

    /// Every domain a node is on, sorted.
    fn sorted_names(&self) -> Vec<String> {
        let mut names = self.names.clone();
        names.sort();
        names
    }
}

/// The pods of each workload that ran before the plan, by workload. Grouped by controller
/// (namespace, kind and name: snapshot files may repeat or leave out uids) first, so the pass
/// over every pod builds no names.
pub(super) fn group_pods<'a>(view: &View<'a>) -> Vec<(Workload, Vec<PodIx>)> {
    type Controller<'p> = (&'p str, &'p str, &'p str);
    let mut by_controller: HashMap<Controller<'a>, (&'a Pod, Vec<PodIx>)> = HashMap::default();
    for (index, pod) in view.pods() {
        if !ran_before(view, index, pod) {
            continue;
        }
        let Some(owner) = pod.controller() else {
            continue;
        };
        // A DaemonSet's pods are one per node by design, and a static pod's owner is its node.
        if belongs_to_its_node(owner) {
            continue;
        }
        by_controller
            .entry((&pod.namespace, owner.kind.as_str(), &owner.name))
            .or_insert_with(|| (pod, Vec::new()))
            .1
            .push(index);
    }
    let mut groups: BTreeMap<Workload, Vec<PodIx>> = BTreeMap::new();
    for (first, pods) in by_controller.into_values() {
        if let Some(workload) = workload(first) {
            groups.entry(workload).or_default().extend(pods);
        }
    }
    for pods in groups.values_mut() {
        pods.sort_unstable();
    }
    groups.into_iter().collect()
}

/// Whether a pod was running on a known node before the plan (evicted since, or not).
fn ran_before(view: &View, index: PodIx, pod: &Pod) -> bool {
    view.pod_node[index].is_some() && !pod.is_gone()
}

/// A workload's pods counted by host id, before and after.
struct Counted {
    total: usize,
    before: Vec<(u32, usize)>,
    after: Vec<(u32, usize)>,
    unplaced_before: usize,
    unplaced_after: usize,
}

impl Counted {
    fn of(view: &View, hosts: &DomainIds, pods: &[PodIx]) -> Counted {
        let mut counted = Counted {
            total: pods.len(),
            before: Vec::new(),
            after: Vec::new(),
            unplaced_before: 0,
            unplaced_after: 0,
        };
        for &pod in pods {
            let from = view.pod_node[pod].and_then(|node| hosts.of(node));
            let to = match view.state[pod] {
                PodState::Evicted { landing } => landing.and_then(|node| hosts.of(node)),
                _ => from,
            };
            bump(&mut counted.before, &mut counted.unplaced_before, from);
            bump(&mut counted.after, &mut counted.unplaced_after, to);
        }
        counted
    }

    fn worst_before(&self) -> usize {
        self.before.iter().map(|(_, n)| *n).max().unwrap_or(0)
    }

    fn worst_after(&self) -> usize {
        self.after.iter().map(|(_, n)| *n).max().unwrap_or(0)
    }

    /// The spreads before and after, each domain by its name.
    fn spreads(&self, domains: &DomainIds, tolerates: Option<usize>) -> (Spread, Spread) {
        let named = |counts: &[(u32, usize)]| -> BTreeMap<String, usize> {
            counts
                .iter()
                .map(|(id, n)| (domains.name(*id).to_string(), *n))
                .collect()
        };
        (
            Spread::new(named(&self.before), self.unplaced_before, tolerates),
            Spread::new(named(&self.after), self.unplaced_after, tolerates),
        )
    }
}

/// Counts one pod on its host (a short list: a workload is on few hosts), or as unplaced.
fn bump(counts: &mut Vec<(u32, usize)>, unplaced: &mut usize, host: Option<u32>) {
    let Some(host) = host else {
        *unplaced += 1;
        return;
    };
    match counts.iter_mut().find(|(id, _)| *id == host) {
        Some((_, count)) => *count += 1,
        None => counts.push((host, 1)),
    }
}

/// The PodDisruptionBudgets over one group's pods: the strictest whose status is current and,
/// without one, the first (in snapshot order) whose status says nothing yet, and why.
#[derive(Clone, Debug, Default)]
pub(super) struct GroupBudgets {
    pub current: Option<DisruptionAllowance>,
    pub ignored: Option<IgnoredBudget>,
}

/// The budgets over each group's pods, index for index. A budget whose status does not
/// describe its current spec (or was never written) says nothing yet: it is only named. Each
/// PodDisruptionBudget finds its pods through the label index once, instead of every pod
/// looking for its budgets.
pub(super) fn budgets(view: &View, groups: &[(Workload, Vec<PodIx>)]) -> Vec<GroupBudgets> {
    if view.snapshot.pdbs.is_empty() {
        return vec![GroupBudgets::default(); groups.len()];
    }
    let mut strictest: Vec<Option<(usize, usize)>> = vec![None; groups.len()];
    let mut first_unobserved: Vec<Option<(usize, Unobserved)>> = vec![None; groups.len()];
    // A slot per pod: at 150,000 pods a map of them was 5 MB at the plan's peak.
    let mut group_of: PerPod<Option<u32>> = view.pod_indices().map(|_| None).collect();
    for (group, (_, pods)) in groups.iter().enumerate() {
        let group = u32::try_from(group).expect("fewer than 2^32 workloads");
        for &pod in pods {
            group_of[pod] = Some(group);
        }
    }
    for (index, pdb) in view.snapshot.pdbs.iter().enumerate() {
        let Some(selector) = &pdb.selector else {
            continue;
        };
        let standing = match unobserved(pdb) {
            None => Ok(usize::try_from(pdb.expected_pods - pdb.desired_healthy).unwrap_or(0)),
            Some(why) => Err(why),
        };
        for pod in view.select(&pdb.namespace, selector) {
            let Some(group) = group_of[pod].map(|g| g as usize) else {
                continue;
            };
            match standing {
                // The first in snapshot order among equals, as the list reads.
                Ok(tolerates) if strictest[group].is_none_or(|(least, _)| tolerates < least) => {
                    strictest[group] = Some((tolerates, index));
                }
                Ok(_) => {}
                Err(why) => {
                    first_unobserved[group].get_or_insert((index, why));
                }
            }
        }
    }
    let name = |index: usize| {
        let pdb = &view.snapshot.pdbs[index];
        format!("{}/{}", pdb.namespace, pdb.name)
    };
    strictest
        .into_iter()
        .zip(first_unobserved)
        .map(|(current, unobserved)| GroupBudgets {
            current: current.map(|(tolerates, index)| DisruptionAllowance {
                pdb: name(index),
                tolerates,
            }),
            ignored: match current {
                Some(_) => None,
                None => unobserved.map(|(index, why)| IgnoredBudget {
                    pdb: name(index),
                    why,
                }),
            },
        })
        .collect()
}

/// Why a PodDisruptionBudget's status counts for nothing yet; `None` when it is current.
fn unobserved(pdb: &Pdb) -> Option<Unobserved> {
    if pdb.observed_generation < pdb.generation {
        Some(Unobserved::NotYetObserved {
            generation: pdb.generation,
            observed_generation: pdb.observed_generation,
        })
    } else if pdb.expected_pods <= 0 {
        Some(Unobserved::NoExpectedPods)
    } else {
        None
    }
}

/// The listed form of a workload at risk.
fn describe(
    view: &View,
    hosts: &DomainIds,
    (workload, pods): (&Workload, &[PodIx]),
    counted: &Counted,
    (budgets, usable_hosts): (GroupBudgets, usize),
    rules: &[DrsRuleChange],
) -> WorkloadExposure {
    let tolerates = budgets.current.as_ref().map(|b| b.tolerates);
    let (before, after) = counted.spreads(hosts, tolerates);
    let (best_worst_host, unavoidable) = best_spread(counted.total, usable_hosts, tolerates);
    let name = workload.display();
    WorkloadExposure {
        drs_rule: rule_for(rules, |rule| {
            rule.workload.as_deref() == Some(name.as_str())
        }),
        topologies: topologies(view, pods, tolerates),
        workload: name,
        pods: counted.total,
        budget: budgets.current,
        ignored_budget: budgets.ignored,
        before,
        after,
        usable_hosts,
        best_worst_host,
        unavoidable,
        site: None,
    }
}

/// The fewest pods the busiest of `hosts` hosts can hold, and whether that is still at risk.
fn best_spread(total: usize, hosts: usize, tolerates: Option<usize>) -> (usize, bool) {
    let best = if hosts == 0 {
        total
    } else {
        total.div_ceil(hosts)
    };
    (best, ExposureClass::of(total, best, tolerates).at_risk())
}

/// How many hosts a workload's pods can spread over at best: in each vSphere cluster, as many
/// as it has nodes that would take them (judged on its first pod: a workload's pods share one
/// template), up to the cluster's usable hosts, over which DRS (and our rules) can spread the
/// node VMs. Pods that ask the same of a node share one answer.
fn usable_hosts<'v>(
    view: &View<'v>,
    pods: &[PodIx],
    known: &mut Vec<(Demands<'v>, usize)>,
) -> usize {
    let demands = Demands::of(view.pod(pods[0]));
    if let Some((_, hosts)) = known.iter().find(|(seen, _)| *seen == demands) {
        return *hosts;
    }
    let pod = view.pod(pods[0]);
    let mut nodes_per_cluster: BTreeMap<usize, usize> = BTreeMap::new();
    for (index, node) in view.nodes.enumerate() {
        if let Some(placement) = &node.placement
            && node.can_receive
            && node_admits(view, pod, index).is_none()
        {
            *nodes_per_cluster
                .entry(placement.cluster_index)
                .or_default() += 1;
        }
    }
    let hosts = spread_limit(view, nodes_per_cluster);
    known.push((demands, hosts));
    hosts
}

/// What a pod asks of a node in `node_admits`: its node selector, required node affinity and
/// tolerations.
#[derive(PartialEq)]
struct Demands<'v> {
    selector: &'v crate::snapshot::Labels,
    affinity: Option<&'v [crate::snapshot::NodeSelectorTerm]>,
    tolerations: &'v [crate::snapshot::Toleration],
}

impl<'v> Demands<'v> {
    fn of(pod: &'v Pod) -> Demands<'v> {
        Demands {
            selector: &pod.node_selector,
            affinity: pod.node_affinity(),
            tolerations: pod.tolerations(),
        }
    }
}

/// Σ over clusters of min(members there, usable hosts there): how many hosts the members can
/// be on at once.
fn spread_limit(view: &View, members_per_cluster: BTreeMap<usize, usize>) -> usize {
    let inventory = view.snapshot.inventory.as_ref().expect("checked by assess");
    members_per_cluster
        .into_iter()
        .map(|(cluster, members)| {
            let usable = inventory.clusters[cluster]
                .hosts
                .iter()
                .filter(|host| host.is_usable())
                .count();
            members.min(usable)
        })
        .sum()
}

/// The name of the owned rule a predicate picks, unless the plan deletes it.
fn rule_for(rules: &[DrsRuleChange], pick: impl Fn(&DrsRuleChange) -> bool) -> Option<String> {
    rules
        .iter()
        .find(|rule| pick(rule) && !rule.action.is_delete())
        .map(|rule| rule.name.clone())
}

/// A workload's pods over every topology key its pods' required anti-affinity and spread
/// constraints name, other than the host label (the spread above).
fn topologies(view: &View, pods: &[PodIx], tolerates: Option<usize>) -> Vec<TopologyExposure> {
    let host_key = view.policy.vsphere.host_key();
    let keys: BTreeSet<&str> = pods
        .iter()
        .flat_map(|&pod| {
            let pod = view.pod(pod);
            let anti = pod.anti_affinity.iter().map(|t| t.topology_key.as_str());
            let spread = pod
                .spread_constraints
                .iter()
                .map(|c| c.topology_key.as_str());
            anti.chain(spread)
        })
        .filter(|key| *key != host_key)
        .collect();
    keys.into_iter()
        .filter_map(|key| {
            let domains = view.domains(key)?;
            let spread = |landings: bool| {
                let mut counts: BTreeMap<String, usize> = BTreeMap::new();
                let mut unplaced = 0;
                for &pod in pods {
                    let node = match view.state[pod] {
                        PodState::Evicted { landing } if landings => landing,
                        _ => view.pod_node[pod],
                    };
                    match node.and_then(|n| domains.of_node[n]) {
                        Some(id) => {
                            *counts
                                .entry(domains.names[id as usize].clone())
                                .or_default() += 1
                        }
                        None => unplaced += 1,
                    }
                }
                Spread::new(counts, unplaced, tolerates)
            };
            Some(TopologyExposure {
                key: key.to_string(),
                before: spread(false),
                after: spread(true),
            })
        })
        .collect()
}

/// Every node group with two or more nodes: its nodes over hosts.
fn node_groups(view: &View, rules: &[DrsRuleChange]) -> Vec<NodeGroupExposure> {
    let mut exposures = Vec::new();
    for group in &view.policy.vsphere.drs_rules.node_groups {
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        let mut unplaced = 0;
        let mut per_cluster: BTreeMap<usize, usize> = BTreeMap::new();
        for node in view.nodes.iter() {
            if !group.node_selector.matches(&node.labels) {
                continue;
            }
            if let Some(placement) = &node.placement {
                *per_cluster.entry(placement.cluster_index).or_default() += 1;
            }
            match node.host() {
                Some(host) => *counts.entry(host.to_string()).or_default() += 1,
                None => unplaced += 1,
            }
        }
        let spread = Spread::new(counts, unplaced, None);
        let nodes = spread.total();
        if nodes < 2 {
            continue;
        }
        let usable_hosts = spread_limit(view, per_cluster);
        let (best_worst_host, unavoidable) = best_spread(nodes, usable_hosts, None);
        exposures.push(NodeGroupExposure {
            node_group: group.name.clone(),
            nodes,
            class: spread.class,
            worst_host: spread.worst,
            worst_host_nodes: spread.worst_pods,
            hosts: spread.pods,
            unplaced: spread.unplaced,
            usable_hosts,
            best_worst_host,
            unavoidable,
            drs_rule: rule_for(rules, |rule| {
                rule.node_group.as_deref() == Some(group.name.as_str())
            }),
        });
    }
    exposures
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::plan;
    use crate::plan::testing::*;
    use crate::policy::NodeGroup;

    fn exposure(lab: Lab, policy: &crate::policy::Policy) -> Exposure {
        plan(&lab.build(), policy)
            .exposure
            .expect("an inventory gives an exposure")
    }

    fn listed<'e>(exposure: &'e Exposure, workload: &str) -> &'e WorkloadExposure {
        exposure
            .workloads
            .iter()
            .find(|w| w.workload == workload)
            .unwrap_or_else(|| panic!("{workload} is not listed: {exposure:#?}"))
    }

    /// Sets a PDB's status as the disruption controller writes it.
    fn status(lab: Lab, expected: i32, desired: i32, observed: i64) -> Lab {
        lab.with(|snapshot| {
            let pdb = &mut snapshot.pdbs[0];
            pdb.expected_pods = expected;
            pdb.desired_healthy = desired;
            pdb.current_healthy = expected;
            pdb.observed_generation = observed;
        })
    }

    #[test]
    fn two_replicas_on_one_host_are_all_until_the_plan_moves_one() {
        let lab = moved_worker()
            .pod(web("web-a", "w1", 60))
            .pod(web("web-b", "w2", 30));
        let exposure = exposure(lab, &policy(vec![anti_affinity()]));
        let web = listed(&exposure, "shop/ReplicaSet/web-rs");
        assert_eq!(web.before.class, ExposureClass::All);
        assert_eq!(web.before.worst.as_deref(), Some("esxi-1"));
        assert_eq!(web.before.pods, BTreeMap::from([("esxi-1".to_string(), 2)]));
        assert_eq!(web.after.class, ExposureClass::Tolerated);
        assert_eq!(
            web.after.pods,
            BTreeMap::from([("esxi-1".to_string(), 1), ("esxi-3".to_string(), 1)])
        );
        assert_eq!(exposure.before.all, 1);
        assert_eq!(exposure.after.tolerated, 1);
        assert!(!web.unavoidable);
    }

    #[test]
    fn a_host_with_two_of_three_holds_the_majority() {
        let lab = crowded()
            .host("esxi-3")
            .pod(pod("db/pg-0").app("pg").on("w1"))
            .pod(pod("db/pg-1").app("pg").on("w2"))
            .pod(pod("db/pg-2").app("pg").on("w3"));
        let exposure = exposure(lab, &policy(vec![]));
        let pg = listed(&exposure, "db/ReplicaSet/pg-rs");
        assert_eq!(pg.before.class, ExposureClass::Majority);
        assert_eq!(pg.before.worst_pods, 2);
        assert_eq!(pg.after, pg.before, "nothing is evicted");
        // Three nodes in a cluster of three usable hosts: DRS can spread them one a host.
        assert_eq!((pg.usable_hosts, pg.best_worst_host), (3, 1));
        assert!(!pg.unavoidable);
    }

    #[test]
    fn more_pods_on_a_host_than_the_budget_lets_go_are_over_budget() {
        let lab = crowded()
            .pod(pod("shop/a").app("web").on("w1"))
            .pod(pod("shop/b").app("web").on("w1"))
            .pod(pod("shop/c").app("web").on("w3"))
            .pod(pod("shop/d").app("web").on("w3"))
            .pdb("shop/web", "web", 1);
        let exposure = exposure(status(lab, 4, 3, 1), &policy(vec![]));
        let web = listed(&exposure, "shop/ReplicaSet/web-rs");
        assert_eq!(web.before.class, ExposureClass::OverBudget);
        assert_eq!(
            web.budget,
            Some(DisruptionAllowance {
                pdb: "shop/web".to_string(),
                tolerates: 1
            })
        );
        // Two hosts for four pods: two on one host is the best there is.
        assert_eq!((web.usable_hosts, web.best_worst_host), (2, 2));
        assert!(web.unavoidable);
    }

    #[test]
    fn a_budget_whose_status_is_behind_its_spec_says_nothing() {
        let lab = crowded()
            .pod(pod("shop/a").app("web").on("w1"))
            .pod(pod("shop/b").app("web").on("w1"))
            .pod(pod("shop/c").app("web").on("w3"))
            .pod(pod("shop/d").app("web").on("w3"))
            .pdb("shop/web", "web", 1)
            .with(|snapshot| snapshot.pdbs[0].generation = 2);
        let exposure = exposure(status(lab, 4, 3, 1), &policy(vec![]));
        assert!(exposure.workloads.is_empty(), "{exposure:#?}");
        assert_eq!(exposure.before.tolerated, 1);
    }

    #[test]
    fn replicas_on_distinct_hosts_are_tolerated_and_not_listed() {
        let lab = three_hosts()
            .pod(pod("shop/a").app("web").on("w1"))
            .pod(pod("shop/b").app("web").on("w2"))
            .pod(pod("shop/c").app("web").on("w3"));
        let exposure = exposure(lab, &policy(vec![]));
        assert!(exposure.workloads.is_empty());
        assert_eq!(exposure.before.tolerated, 1);
        assert_eq!(exposure.after.tolerated, 1);
    }

    #[test]
    fn daemon_sets_static_and_bare_pods_and_single_replicas_are_not_workloads_here() {
        let lab = crowded()
            .pod(pod("kube-system/ds-1").owner("DaemonSet", "agent").on("w1"))
            .pod(pod("kube-system/ds-2").owner("DaemonSet", "agent").on("w2"))
            .pod(pod("kube-system/etcd-w1").owner("Node", "w1").on("w1"))
            .pod(pod("kube-system/etcd-w2").owner("Node", "w2").on("w2"))
            .pod(
                pod("shop/bare-1")
                    .with(|p| p.owners = Default::default())
                    .on("w1"),
            )
            .pod(
                pod("shop/bare-2")
                    .with(|p| p.owners = Default::default())
                    .on("w2"),
            )
            .pod(pod("shop/solo").app("solo").on("w1"));
        let exposure = exposure(lab, &policy(vec![]));
        assert_eq!(exposure.before, ClassCounts::default(), "{exposure:#?}");
    }

    #[test]
    fn a_deployments_replica_sets_are_one_workload() {
        let replica = |name: &str, hash: &str, node: &str| {
            pod(&format!("shop/{name}"))
                .owner("ReplicaSet", &format!("web-{hash}"))
                .label("pod-template-hash", hash)
                .on(node)
        };
        let lab = crowded()
            .pod(replica("web-old", "1111", "w1"))
            .pod(replica("web-new", "2222", "w2"));
        let exposure = exposure(lab, &policy(vec![]));
        let web = listed(&exposure, "shop/Deployment/web");
        assert_eq!((web.pods, web.before.class), (2, ExposureClass::All));
    }

    #[test]
    fn a_replacement_the_plan_places_nowhere_is_unplaced_after() {
        let evictor = crate::policy::EvictorArgs {
            node_fit: false,
            ..Default::default()
        };
        let lab = moved_worker()
            .pod(web("web-a", "w1", 60))
            .pod(web("web-b", "w2", 30));
        let exposure = exposure(lab, &policy_with(evictor, vec![anti_affinity()]));
        let web = listed(&exposure, "shop/ReplicaSet/web-rs");
        assert_eq!(web.after.unplaced, 1);
        assert_eq!(web.after.worst_pods, 1);
        assert_eq!(web.after.class, ExposureClass::Tolerated);
    }

    #[test]
    fn every_other_topology_key_a_constraint_names_is_spread_too() {
        let zoned = |name: &str, node: &str| web(name, node, 10).anti_affinity(HOSTNAME);
        let lab = three_hosts()
            .pod(zoned("web-a", "w1"))
            .pod(zoned("web-b", "w1"));
        let exposure = exposure(lab, &policy(vec![]));
        let web = listed(&exposure, "shop/ReplicaSet/web-rs");
        let keys: Vec<&str> = web.topologies.iter().map(|t| t.key.as_str()).collect();
        assert_eq!(keys, [HOSTNAME], "the host key is the spread itself");
        assert_eq!(web.topologies[0].before.class, ExposureClass::All);
    }

    #[test]
    fn a_node_group_is_classed_by_its_nodes_per_host() {
        let mut policy = policy(vec![]);
        policy.vsphere.drs_rules.node_groups.push(NodeGroup {
            name: "control-plane".to_string(),
            node_selector: app_selector("cp"),
        });
        let lab = crowded()
            .host("esxi-3")
            .label("w1", "app", "cp")
            .label("w2", "app", "cp")
            .label("w3", "app", "cp");
        let exposure = exposure(lab, &policy);
        let group = &exposure.node_groups[0];
        assert_eq!(group.class, ExposureClass::Majority);
        assert_eq!(group.worst_host.as_deref(), Some("esxi-1"));
        assert_eq!(
            (group.nodes, group.usable_hosts, group.best_worst_host),
            (3, 3, 1)
        );
        assert_eq!(
            group.drs_rule.as_deref(),
            Some("vsphere-descheduler:k8s:nodes:control-plane")
        );
        assert_eq!(exposure.at_risk_before(), 1);
    }

    #[test]
    fn without_an_inventory_no_host_is_known_and_nothing_is_assessed() {
        let lab = crowded()
            .pod(pod("shop/a").app("web").on("w1"))
            .pod(pod("shop/b").app("web").on("w2"))
            .with(|snapshot| snapshot.inventory = None);
        assert_eq!(plan(&lab.build(), &policy(vec![])).exposure, None);
    }

    /// A StatefulSet of three on three hosts, two of them in site A, spreading over the site
    /// label (softly, so the plan leaves it).
    fn two_of_three_in_one_site() -> Lab {
        let pg = |name: &str, node: &str| {
            pod(name)
                .owner("StatefulSet", "pg")
                .label("app", "pg")
                .spread(SITE, 1, crate::snapshot::WhenUnsatisfiable::ScheduleAnyway)
                .on(node)
        };
        stretched()
            .pod(pg("db/pg-0", "w1"))
            .pod(pg("db/pg-1", "w2"))
            .pod(pg("db/pg-2", "w3"))
    }

    /// Listed per site: a workload at risk per site whose pods ask about sites, and one whose
    /// every pod is in one site; counted only: one at risk per site that never asked.
    #[test]
    fn a_workload_is_listed_for_its_sites_when_it_asks_about_them_or_one_site_holds_it_all() {
        let lab = stretched()
            .pod(pod("db/pg-0").owner("StatefulSet", "pg").on("w1"))
            .pod(pod("db/pg-1").owner("StatefulSet", "pg").on("w2"))
            .pod(pod("db/pg-2").owner("StatefulSet", "pg").on("w3"))
            .pod(pod("shop/web-0").owner("StatefulSet", "web").on("w1"))
            .pod(pod("shop/web-1").owner("StatefulSet", "web").on("w2"));
        let exposure = exposure(lab, &with_sites(policy(vec![])));
        let names: Vec<&str> = exposure
            .workloads
            .iter()
            .map(|w| w.workload.as_str())
            .collect();
        assert_eq!(names, ["shop/StatefulSet/web"], "{exposure:#?}");
        let web = listed(&exposure, "shop/StatefulSet/web");
        let site = web.site.as_ref().expect("a site spread");
        assert_eq!(site.before.class, ExposureClass::All);
        let counts = exposure.sites.as_ref().expect("site counts");
        assert_eq!(
            (counts.before.all, counts.before.majority),
            (1, 1),
            "pg counted"
        );
    }

    #[test]
    fn a_workload_tolerated_per_host_is_listed_at_risk_per_site() {
        let exposure = exposure(two_of_three_in_one_site(), &with_sites(policy(vec![])));
        let pg = listed(&exposure, "db/StatefulSet/pg");
        assert_eq!(pg.before.class, ExposureClass::Tolerated);
        let site = pg.site.as_ref().expect("a site spread");
        assert_eq!(site.before.class, ExposureClass::Majority);
        assert_eq!(site.before.worst.as_deref(), Some("site-a"));
        assert_eq!(
            site.before.pods,
            BTreeMap::from([("site-a".to_string(), 2), ("site-b".to_string(), 1)])
        );
        let counts = exposure.sites.as_ref().expect("site counts");
        assert_eq!(counts.sites, ["site-a", "site-b"]);
        assert_eq!((counts.before.majority, counts.after.majority), (1, 1));
        assert_eq!(exposure.before.tolerated, 1, "per host it is tolerated");
    }

    #[test]
    fn without_sites_or_with_untrusted_ones_there_is_no_site_exposure() {
        let unsited = exposure(two_of_three_in_one_site(), &policy(vec![]));
        assert_eq!(unsited.sites, None);
        assert!(unsited.workloads.is_empty(), "{unsited:#?}");
        let untrusted = two_of_three_in_one_site().with(|s| {
            let cluster = &mut s.inventory.as_mut().expect("inventory").clusters[0];
            let group = &mut cluster.host_groups[1];
            group.hosts.pop();
            group.host_ids.pop();
        });
        let untrusted = exposure(untrusted, &with_sites(policy(vec![])));
        assert_eq!(
            untrusted.sites, None,
            "a host in no site: no site is trusted"
        );
    }

    #[test]
    fn classes_follow_the_busiest_host_and_the_budget() {
        use ExposureClass::*;
        assert_eq!(ExposureClass::of(2, 2, None), All);
        assert_eq!(ExposureClass::of(3, 2, None), Majority);
        assert_eq!(ExposureClass::of(4, 2, None), Tolerated);
        assert_eq!(ExposureClass::of(4, 2, Some(1)), OverBudget);
        assert_eq!(ExposureClass::of(4, 2, Some(2)), Tolerated);
        // A budget that lets nothing go is broken by any host with a pod.
        assert_eq!(ExposureClass::of(5, 1, Some(0)), OverBudget);
    }
}
