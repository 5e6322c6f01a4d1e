//! A whole site (`vsphere.sites`: a DRS host group, or a vSAN fault domain) fails, or enters
//! maintenance mode.
//!
//! A site failure is a host failure of every host of the site at once (the losses, budgets and
//! rescheduling of [`super::failure`]), and then what vSphere HA does with each node VM by the
//! VM/Host rules of its cluster: a "must" rule that allows the VM only on the failed site's hosts
//! keeps it down (HA never restarts a VM against a mandatory rule); a "should" rule that does is
//! broken, and HA restarts the VM on the other site where its admission control leaves capacity
//! (as [`super::ha`] reads it); a VM in no rule comes back on any usable host left.
//!
//! A site's maintenance moves every node VM off the site's hosts to the other hosts of its
//! cluster: a "must" rule tying a VM to the site blocks it (maintenance cannot complete), a
//! "should" rule gives way. The busiest host a workload ends up with is a bound, from the
//! pigeonhole to every moving VM on the busiest host left: no anti-affinity rule is credited
//! here, as DRS places a whole site's VMs at once.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::maintenance::{Units, bound_of};
use super::{
    Impact, NodeGroupImpact, Restart, WhatIf, WhatIfError, group_nodes, hosts_now, members,
    view_now,
};
use crate::inventory::{Cluster, Host, Inventory, Vm, VmHostRule};
use crate::plan::exposure::ExposureClass;
use crate::plan::view::View;
use crate::plan::view::index::{NodeIx, PerNode};
use crate::policy::Policy;
use crate::sites::SiteMap;
use crate::snapshot::Snapshot;

/// What HA does with each node VM of a failed site.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SiteFailover {
    pub site: String,
    /// The other sites with a usable host, where HA may restart the VMs.
    pub other_sites: Vec<String>,
    /// Every node VM on the site's hosts, by cluster and name.
    pub vms: Vec<VmFailover>,
}

/// One node VM of a failed site.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VmFailover {
    pub vm: String,
    /// Its Kubernetes node.
    pub node: String,
    /// The vSphere cluster, as reports name it.
    pub cluster: String,
    pub fate: Fate,
    /// The enabled VM/Host rules over it, and whether each holds where HA restarts it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<VmRule>,
    /// Where HA may restart it: the sites of `hosts`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sites: Vec<String>,
    /// The usable hosts left that every "must" rule (and, where one is left, every "should"
    /// rule) allows it on.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
}

/// What becomes of a failed site's node VM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fate {
    /// HA restarts it: admission control reserves capacity for this many host failures.
    Restarted,
    /// HA restarts it where capacity is left: none is reserved for this many failures.
    RestartedIfCapacityAllows,
    /// HA's configuration was not observed: it may come back, or not.
    Unknown,
    /// A "must" VM/Host rule allows it only on hosts that are down: HA leaves it down.
    HeldDownByRule,
    /// HA restarts nothing in its cluster (off, or restart priority disabled).
    NotRestarted,
    /// No usable host is left in its cluster.
    NoHostLeft,
}

impl Fate {
    pub fn as_str(self) -> &'static str {
        match self {
            Fate::Restarted => "restarted",
            Fate::RestartedIfCapacityAllows => "restarted-if-capacity-allows",
            Fate::Unknown => "unknown",
            Fate::HeldDownByRule => "held-down-by-rule",
            Fate::NotRestarted => "not-restarted",
            Fate::NoHostLeft => "no-host-left",
        }
    }
}

/// The two kinds of VM/Host rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum VmHostRuleKind {
    /// Mandatory: HA and DRS never break it.
    Must,
    /// Preferential: HA and DRS break it when they have to.
    Should,
}

/// A VM/Host rule over one VM.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VmRule {
    pub rule: String,
    pub kind: VmHostRuleKind,
    /// It allows the VM on some usable host left (it holds where the VM goes).
    pub holds: bool,
}

/// A workload's lost pods by what HA does with their node VMs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodFates {
    /// On VMs HA restarts with capacity reserved: they come back with their node.
    pub restarted: usize,
    /// On VMs HA restarts where capacity is left.
    pub if_capacity_allows: usize,
    /// On VMs that stay down (a "must" rule, HA off, or no host left).
    pub stay_down: usize,
    /// On VMs whose HA configuration was not observed.
    pub unknown: usize,
}

impl PodFates {
    fn add(&mut self, fate: Fate, pods: usize) {
        let slot = match fate {
            Fate::Restarted => &mut self.restarted,
            Fate::RestartedIfCapacityAllows => &mut self.if_capacity_allows,
            Fate::Unknown => &mut self.unknown,
            Fate::HeldDownByRule | Fate::NotRestarted | Fate::NoHostLeft => &mut self.stay_down,
        };
        *slot += pods;
    }
}

/// What a site's maintenance moves, and the VM/Host rules in its way.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SiteMaintenance {
    pub site: String,
    /// The other sites with a usable host in the site's clusters, where DRS moves the VMs.
    pub other_sites: Vec<String>,
    /// Usable hosts left in the site's clusters.
    pub hosts_left: usize,
    /// Node VMs DRS moves off the site.
    pub moving_vms: Vec<String>,
    /// Node VMs a "must" rule keeps on the site's hosts: DRS cannot move them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blocked: Vec<VmStay>,
    /// Node VMs a "should" rule ties to the site: DRS moves them against it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub should_rules_broken: Vec<VmStay>,
    /// Every node VM can leave: maintenance can complete.
    pub evacuable: bool,
}

/// A node VM and the VM/Host rule that decides it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VmStay {
    pub vm: String,
    pub rule: String,
}

/// The sites `vsphere.sites` resolves to, where they can be trusted.
pub(super) fn resolved(inventory: &Inventory, policy: &Policy) -> Result<SiteMap, WhatIfError> {
    let settings = policy.vsphere.site_settings().ok_or(WhatIfError::NoSites)?;
    let resolution = crate::sites::resolve(inventory, settings);
    if !resolution.findings.is_empty() {
        return Err(WhatIfError::SitesUntrusted {
            findings: resolution.findings.iter().map(|f| f.to_string()).collect(),
        });
    }
    Ok(resolution.map)
}

/// The site's name as `vsphere.sites` writes it: the name itself, or the one site whose name is
/// that in another case.
pub(super) fn name(map: &SiteMap, name: &str) -> Result<String, WhatIfError> {
    let names = map.names();
    if names.contains(name) {
        return Ok(name.to_string());
    }
    let folded: Vec<&&str> = names
        .iter()
        .filter(|site| site.eq_ignore_ascii_case(name))
        .collect();
    match folded.as_slice() {
        [one] => Ok(one.to_string()),
        _ => Err(WhatIfError::UnknownSite {
            name: name.to_string(),
            known: names.iter().map(|s| s.to_string()).collect(),
        }),
    }
}

/// Every host of `site` fails.
pub(super) fn fails(snapshot: &Snapshot, policy: &Policy, map: &SiteMap, site: &str) -> WhatIf {
    let hosts: Vec<&str> = map.hosts_of(site).map(|(_, host)| host).collect();
    super::failure::assess_and(snapshot, policy, &hosts, |view, whatif| {
        failover(view, map, site, whatif);
    })
}

/// What HA does with each node VM of the failed `site` by its VM/Host rules, and what each
/// touched workload's lost pods do with them, on the failure's view.
fn failover(view: &View, map: &SiteMap, site: &str, whatif: &mut WhatIf) {
    let inventory = view
        .snapshot
        .inventory
        .as_ref()
        .expect("checked by what_if");
    let restarts: BTreeMap<&str, Restart> = whatif
        .ha
        .iter()
        .map(|ha| (ha.cluster.as_str(), ha.restart))
        .collect();
    let names = inventory.cluster_names();
    let mut fates: PerNode<Option<Fate>> = view.nodes.iter().map(|_| None).collect();
    let mut vms = Vec::new();
    for (index, node) in view.nodes.enumerate() {
        let Some(placement) = &node.placement else {
            continue;
        };
        let Some(vm) = placement.vm else {
            continue;
        };
        if map.site_of(placement.cluster_index, placement.host_name) != Some(site) {
            continue;
        }
        let cluster = &inventory.clusters[placement.cluster_index];
        let name = &names[placement.cluster_index];
        let restart = restarts
            .get(name.as_str())
            .copied()
            .unwrap_or(Restart::Unknown);
        let places = Places::of(cluster, vm, |host| {
            map.site_of(placement.cluster_index, &host.name) != Some(site)
        });
        let fate = places.fate(restart);
        fates[index] = Some(fate);
        let restarts = matches!(
            fate,
            Fate::Restarted | Fate::RestartedIfCapacityAllows | Fate::Unknown
        );
        let hosts: Vec<&str> = match restarts {
            true => places.hosts.clone(),
            false => Vec::new(),
        };
        vms.push(VmFailover {
            vm: vm.name.clone(),
            node: node.node.name.clone(),
            cluster: name.clone(),
            fate,
            rules: places.rules,
            sites: sites_of(map, placement.cluster_index, &hosts),
            hosts: hosts.iter().map(|h| h.to_string()).collect(),
        });
    }
    vms.sort_by(|a, b| (&a.cluster, &a.vm).cmp(&(&b.cluster, &b.vm)));
    attach_fates(view, &fates, whatif);
    whatif.site_failover = Some(SiteFailover {
        site: site.to_string(),
        other_sites: other_sites(inventory, map, site, None),
        vms,
    });
}

/// Each touched workload's lost pods by their node VM's fate.
fn attach_fates(view: &View, fates: &PerNode<Option<Fate>>, whatif: &mut WhatIf) {
    let by_name: BTreeMap<String, PodFates> = members(view)
        .into_iter()
        .map(|member| {
            let mut counted = PodFates::default();
            for (node, pods) in &member.per_node {
                if let Some(fate) = fates[*node] {
                    counted.add(fate, *pods);
                }
            }
            (member.name, counted)
        })
        .collect();
    for workload in &mut whatif.workloads {
        workload.comes_back = by_name.get(&workload.workload).copied();
    }
}

/// The sites of these hosts of one cluster, sorted, each once.
fn sites_of(map: &SiteMap, cluster: usize, hosts: &[&str]) -> Vec<String> {
    let sites: BTreeSet<&str> = hosts
        .iter()
        .filter_map(|host| map.site_of(cluster, host))
        .collect();
    sites.into_iter().map(str::to_string).collect()
}

/// Every site but `site` with a usable host (in these clusters only, when given).
fn other_sites(
    inventory: &Inventory,
    map: &SiteMap,
    site: &str,
    clusters: Option<&BTreeSet<usize>>,
) -> Vec<String> {
    let mut sites = BTreeSet::new();
    for (index, cluster) in inventory.clusters.iter().enumerate() {
        if clusters.is_some_and(|only| !only.contains(&index)) {
            continue;
        }
        for host in cluster.hosts.iter().filter(|h| h.is_usable()) {
            if let Some(other) = map.site_of(index, &host.name).filter(|s| *s != site) {
                sites.insert(other.to_string());
            }
        }
    }
    sites.into_iter().collect()
}

/// Where a VM may go among the usable hosts left, by its VM/Host rules.
struct Places<'c> {
    /// Usable hosts left in its cluster.
    left: usize,
    /// Of those, the hosts its rules allow: every "must" rule, and the "should" rules too
    /// where they leave a host.
    hosts: Vec<&'c str>,
    rules: Vec<VmRule>,
    /// A "must" rule left it no host.
    held: bool,
}

impl<'c> Places<'c> {
    fn of(cluster: &'c Cluster, vm: &Vm, is_left: impl Fn(&Host) -> bool) -> Places<'c> {
        let left: Vec<&Host> = cluster
            .hosts
            .iter()
            .filter(|h| h.is_usable() && is_left(h))
            .collect();
        let rules: Vec<&VmHostRule> = vm_host_rules(cluster, vm).collect();
        let allowed = |kind: VmHostRuleKind, among: &[&'c Host]| -> Vec<&'c Host> {
            among
                .iter()
                .copied()
                .filter(|host| {
                    rules
                        .iter()
                        .filter(|rule| kind_of(rule) == kind)
                        .all(|rule| allows(cluster, rule, host))
                })
                .collect()
        };
        let must = allowed(VmHostRuleKind::Must, &left);
        let should = allowed(VmHostRuleKind::Should, &must);
        let chosen = if should.is_empty() { &must } else { &should };
        let described = rules
            .iter()
            .map(|rule| VmRule {
                rule: rule.name.clone(),
                kind: kind_of(rule),
                holds: chosen.iter().any(|host| allows(cluster, rule, host)),
            })
            .collect();
        Places {
            left: left.len(),
            hosts: chosen.iter().map(|h| h.name.as_str()).collect(),
            rules: described,
            held: !left.is_empty() && must.is_empty(),
        }
    }

    /// What HA does with the VM, given how it restarts its cluster's VMs.
    fn fate(&self, restart: Restart) -> Fate {
        if self.left == 0 {
            return Fate::NoHostLeft;
        }
        if self.held {
            return Fate::HeldDownByRule;
        }
        match restart {
            Restart::CapacityReserved => Fate::Restarted,
            Restart::BestEffort => Fate::RestartedIfCapacityAllows,
            Restart::Unknown => Fate::Unknown,
            Restart::HaDisabled | Restart::PriorityDisabled => Fate::NotRestarted,
        }
    }

    /// The first "must" rule (else "should" rule) that does not hold.
    fn broken(&self, kind: VmHostRuleKind) -> Option<&VmRule> {
        self.rules.iter().find(|r| r.kind == kind && !r.holds)
    }
}

/// The enabled VM/Host rules over a VM, through its VM groups.
fn vm_host_rules<'c>(cluster: &'c Cluster, vm: &Vm) -> impl Iterator<Item = &'c VmHostRule> {
    let groups: BTreeSet<&str> = cluster
        .vm_groups
        .iter()
        .filter(|group| group.holds(vm))
        .map(|group| group.name.as_str())
        .collect();
    cluster
        .vm_host_rules
        .iter()
        .filter(move |rule| rule.enabled && groups.contains(rule.vm_group.as_str()))
}

fn kind_of(rule: &VmHostRule) -> VmHostRuleKind {
    match rule.mandatory {
        true => VmHostRuleKind::Must,
        false => VmHostRuleKind::Should,
    }
}

/// Whether a rule lets its VMs run on `host`: in its affine host group, out of its anti-affine
/// one.
fn allows(cluster: &Cluster, rule: &VmHostRule, host: &Host) -> bool {
    let member = |group: &str| cluster.host_group(group).is_some_and(|g| g.holds(host));
    let affine = rule.affine_host_group.as_deref().is_none_or(member);
    let anti = rule
        .anti_affine_host_group
        .as_deref()
        .is_none_or(|g| !member(g));
    affine && anti
}

/// Every host of `site` enters maintenance mode.
pub(super) fn maintenance(
    snapshot: &Snapshot,
    policy: &Policy,
    map: &SiteMap,
    site: &str,
) -> WhatIf {
    let view = view_now(snapshot, policy, |_| None);
    let inventory = snapshot.inventory.as_ref().expect("checked by what_if");
    let site_hosts: Vec<&str> = map.hosts_of(site).map(|(_, host)| host).collect();
    let clusters: BTreeSet<usize> = map.hosts_of(site).map(|(index, _)| index).collect();
    let on_site = |cluster: usize, host: &str| map.site_of(cluster, host) == Some(site);
    let left: BTreeSet<&str> = clusters
        .iter()
        .flat_map(|&index| {
            inventory.clusters[index]
                .hosts
                .iter()
                .filter(move |h| h.is_usable() && !on_site(index, &h.name))
                .map(|h| h.name.as_str())
        })
        .collect();
    let mut answer = SiteMaintenance {
        site: site.to_string(),
        other_sites: other_sites(inventory, map, site, Some(&clusters)),
        hosts_left: left.len(),
        moving_vms: Vec::new(),
        blocked: Vec::new(),
        should_rules_broken: Vec::new(),
        evacuable: true,
    };
    let moves = evacuate(&view, inventory, &on_site, &mut answer);
    let mut whatif = super::WhatIf::empty(hosts_now(&view, &site_hosts));
    moved_with_their_vms(&view, &moves, &left, &mut whatif);
    whatif.site_maintenance = Some(answer);
    whatif
}

/// Which node VMs leave the site's hosts (each `true` in the answer), and into `answer` the
/// ones a must rule blocks, the should rules broken and the VMs that move, by name. A blocked
/// VM stays where it is.
fn evacuate(
    view: &View,
    inventory: &Inventory,
    on_site: &dyn Fn(usize, &str) -> bool,
    answer: &mut SiteMaintenance,
) -> PerNode<bool> {
    let mut moves: PerNode<bool> = view.nodes.iter().map(|_| false).collect();
    for (index, node) in view.nodes.enumerate() {
        let Some(placement) = &node.placement else {
            continue;
        };
        let (Some(vm), Some(host)) = (placement.vm, placement.host) else {
            continue;
        };
        if !host.is_usable() || !on_site(placement.cluster_index, placement.host_name) {
            continue;
        }
        let cluster = &inventory.clusters[placement.cluster_index];
        let places = Places::of(cluster, vm, |h| !on_site(placement.cluster_index, &h.name));
        if places.left == 0 || places.held {
            answer.evacuable = false;
            if let Some(rule) = places.broken(VmHostRuleKind::Must) {
                answer.blocked.push(VmStay {
                    vm: vm.name.clone(),
                    rule: rule.rule.clone(),
                });
            }
            continue;
        }
        if let Some(rule) = places.broken(VmHostRuleKind::Should) {
            answer.should_rules_broken.push(VmStay {
                vm: vm.name.clone(),
                rule: rule.rule.clone(),
            });
        }
        moves[index] = true;
        answer.moving_vms.push(vm.name.clone());
    }
    answer.moving_vms.sort();
    moves
}

/// Each workload and node group whose node VMs move, its busiest host after the move bounded
/// over the hosts `left`.
fn moved_with_their_vms(
    view: &View,
    moves: &PerNode<bool>,
    left: &BTreeSet<&str>,
    whatif: &mut WhatIf,
) {
    for member in members(view) {
        let units = units(view, moves, member.per_node.iter().map(|(n, p)| (*n, *p)));
        if units.moving.is_empty() {
            whatif.counts.add(ExposureClass::Tolerated);
            continue;
        }
        let bound = bound_of(&units, left, false);
        let outcome = Impact::moved(
            units.moving.iter().sum(),
            Some(bound),
            None,
            (member.pods, member.tolerates()),
        );
        whatif.counts.add(outcome.class);
        whatif.workloads.push(member.impact(outcome));
    }
    whatif.node_groups = group_nodes(view)
        .into_iter()
        .map(|(group, nodes)| {
            let units = units(view, moves, nodes.iter().map(|n| (*n, 1)));
            let count = units.moving.len();
            let bound = (count > 0).then(|| bound_of(&units, left, false));
            NodeGroupImpact {
                node_group: group,
                nodes: nodes.len(),
                outcome: Impact::moved(count, bound, None, (nodes.len(), None)),
            }
        })
        .collect();
}

/// A workload's (or node group's) count per node, split into what stays (by host) and what
/// moves off the site (per node VM).
fn units<'v>(
    view: &'v View,
    moves: &PerNode<bool>,
    per_node: impl Iterator<Item = (NodeIx, usize)>,
) -> Units<'v> {
    let mut units = Units {
        stay: BTreeMap::new(),
        moving: Vec::new(),
    };
    for (node, count) in per_node {
        match (moves[node], view.nodes[node].host()) {
            (true, _) => units.moving.push(count),
            (false, Some(host)) => *units.stay.entry(host).or_default() += count,
            (false, None) => {}
        }
    }
    units
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::{AdmissionControl, HaConfig, RestartPriority};
    use crate::plan::testing::*;
    use crate::plan::what_if::{Scenario, what_if};

    /// A StatefulSet's three pods, two of them on site A's hosts: w1 on esxi-a1, w2 on
    /// esxi-a2, w3 on esxi-b1.
    fn lab() -> Lab {
        stretched()
            .pod(pod("db/pg-0").owner("StatefulSet", "pg").on("w1"))
            .pod(pod("db/pg-1").owner("StatefulSet", "pg").on("w2"))
            .pod(pod("db/pg-2").owner("StatefulSet", "pg").on("w3"))
    }

    fn ha(lab: Lab, admission_control: Option<AdmissionControl>) -> Lab {
        lab.with(|s| {
            s.inventory.as_mut().expect("inventory").clusters[0].ha = Some(HaConfig {
                enabled: true,
                admission_control,
                restart_priority: RestartPriority::Medium,
                respect_vm_anti_affinity_rules: None,
            })
        })
    }

    fn ask(lab: Lab, scenario: Scenario) -> Result<WhatIf, WhatIfError> {
        what_if(&lab.build(), &with_sites(policy(vec![])), &scenario)
    }

    fn fails(lab: Lab, site: &str) -> WhatIf {
        ask(lab, Scenario::SiteFails(site.to_string())).expect("an answer")
    }

    fn vm<'a>(answer: &'a WhatIf, name: &str) -> &'a VmFailover {
        let failover = answer.site_failover.as_ref().expect("a site failover");
        failover
            .vms
            .iter()
            .find(|v| v.vm == name)
            .unwrap_or_else(|| panic!("{name} is not on the site: {failover:#?}"))
    }

    #[test]
    fn a_failed_site_takes_every_pod_on_its_hosts_and_is_certain() {
        let answer = fails(lab(), "site-a");
        let pg = &answer.workloads[0];
        assert_eq!(pg.workload, "db/StatefulSet/pg");
        assert_eq!(
            (pg.outcome.lost, pg.outcome.class, pg.outcome.exact),
            (Some(2), ExposureClass::Majority, true)
        );
        let hosts: Vec<&str> = answer.hosts.iter().map(|h| h.host.as_str()).collect();
        assert_eq!(hosts, ["esxi-a1", "esxi-a2"]);
        assert_eq!(
            answer.site_failover.as_ref().map(|f| f.other_sites.clone()),
            Some(vec!["site-b".to_string()])
        );
        assert_eq!(answer.at_risk, 1);
    }

    #[test]
    fn a_must_rule_to_the_failed_site_keeps_its_vm_down_and_its_pods_with_it() {
        let ruled = vm_host_rule(lab(), "pin-w1", true, "site-a", &["w1"]);
        let answer = fails(ha(ruled, None), "site-a");
        let w1 = vm(&answer, "w1");
        assert_eq!(w1.fate, Fate::HeldDownByRule);
        assert!(w1.hosts.is_empty(), "nowhere to restart: {w1:#?}");
        assert_eq!(
            w1.rules,
            [VmRule {
                rule: "pin-w1".to_string(),
                kind: VmHostRuleKind::Must,
                holds: false,
            }]
        );
        // w2 is in no rule: admission control is off, so HA restarts it where capacity is left.
        assert_eq!(vm(&answer, "w2").fate, Fate::RestartedIfCapacityAllows);
        assert_eq!(
            answer.workloads[0].comes_back,
            Some(PodFates {
                if_capacity_allows: 1,
                stay_down: 1,
                ..PodFates::default()
            })
        );
    }

    #[test]
    fn a_should_rule_to_the_failed_site_is_broken_to_restart_its_vm_on_the_other_site() {
        let ruled = vm_host_rule(lab(), "prefer-a", false, "site-a", &["w1", "w2"]);
        let reserved = Some(AdmissionControl::HostFailures { failover_level: 2 });
        let answer = fails(ha(ruled, reserved), "site-a");
        let w1 = vm(&answer, "w1");
        assert_eq!(w1.fate, Fate::Restarted);
        assert_eq!(w1.sites, ["site-b"]);
        assert_eq!(w1.hosts, ["esxi-b1", "esxi-b2"]);
        assert!(!w1.rules[0].holds, "the should rule gives way");
        assert_eq!(answer.workloads[0].comes_back.map(|f| f.restarted), Some(2));
    }

    #[test]
    fn capacity_reserved_for_fewer_hosts_than_the_site_has_restarts_only_what_is_left() {
        let reserved = Some(AdmissionControl::HostFailures { failover_level: 1 });
        let answer = fails(ha(lab(), reserved), "site-a");
        assert_eq!(vm(&answer, "w1").fate, Fate::RestartedIfCapacityAllows);
        let off = lab().with(|s| {
            s.inventory.as_mut().expect("inventory").clusters[0].ha = Some(HaConfig {
                enabled: false,
                admission_control: None,
                restart_priority: RestartPriority::Medium,
                respect_vm_anti_affinity_rules: None,
            })
        });
        assert_eq!(vm(&fails(off, "site-a"), "w1").fate, Fate::NotRestarted);
        assert_eq!(vm(&fails(lab(), "site-a"), "w1").fate, Fate::Unknown);
    }

    #[test]
    fn a_site_is_named_as_the_policy_resolves_it_and_an_unknown_one_lists_the_sites() {
        let answer = fails(lab(), "SITE-A");
        assert_eq!(answer.scenario, Scenario::SiteFails("site-a".to_string()));
        let unknown = ask(lab(), Scenario::SiteFails("site-c".to_string())).expect_err("no site");
        assert_eq!(
            unknown.to_string(),
            "no site \"site-c\" (the sites are site-a, site-b)"
        );
        let unsited = what_if(
            &lab().build(),
            &policy(vec![]),
            &Scenario::SiteFails("site-a".to_string()),
        );
        assert_eq!(unsited, Err(WhatIfError::NoSites));
    }

    #[test]
    fn sites_with_findings_answer_nothing() {
        let overlapping = lab().with(|s| {
            let cluster = &mut s.inventory.as_mut().expect("inventory").clusters[0];
            let group = &mut cluster.host_groups[1];
            group.hosts.push("esxi-a1".to_string());
            group.host_ids.push("host-esxi-a1".to_string());
        });
        let refused = ask(overlapping, Scenario::SiteFails("site-a".to_string()));
        assert!(
            matches!(&refused, Err(WhatIfError::SitesUntrusted { findings }) if findings.len() == 1),
            "{refused:?}"
        );
    }

    #[test]
    fn a_sites_maintenance_moves_its_vms_blocked_by_must_rules_and_breaking_should_rules() {
        let ruled = vm_host_rule(lab(), "pin-w1", true, "site-a", &["w1"]);
        let ruled = vm_host_rule(ruled, "prefer-w2", false, "site-a", &["w2"]);
        let answer =
            ask(ruled, Scenario::SiteMaintenance("site-a".to_string())).expect("an answer");
        let site = answer
            .site_maintenance
            .as_ref()
            .expect("a site maintenance");
        assert_eq!(site.moving_vms, ["w2"]);
        assert_eq!(
            site.blocked,
            [VmStay {
                vm: "w1".to_string(),
                rule: "pin-w1".to_string()
            }]
        );
        assert_eq!(site.should_rules_broken[0].rule, "prefer-w2");
        assert!(!site.evacuable);
        assert_eq!(site.hosts_left, 2);
        // pg-1 moves to esxi-b1 or esxi-b2: at worst next to pg-2 on esxi-b1.
        let pg = &answer.workloads[0];
        assert_eq!(pg.outcome.moving, Some(1));
        assert_eq!(
            pg.outcome.busiest_host.map(|b| (b.at_least, b.at_most)),
            Some((1, 2))
        );
        assert_eq!(
            (pg.outcome.class, pg.outcome.exact),
            (ExposureClass::Majority, false)
        );
    }
}
