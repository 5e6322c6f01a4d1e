//! Sites in the planner ([`crate::sites`] resolves them): the site label each node should carry,
//! the zone label that contradicts it, and what the DRS side reports about the VM/Host rules
//! that keep node VMs on a site. No DRS rule is written for sites: VM/Host rules belong to the
//! admins (or OpenShift, or Cluster API).

use std::collections::{BTreeMap, BTreeSet};

use crate::inventory::{Cluster, Inventory, Vm, VmGroup, VmHostRule};
use crate::plan::model::warning::Warning;
use crate::sites::{SiteMap, SiteResolution};
use crate::snapshot::Node;

use super::labels::Placement;

/// The label the vSphere cloud provider sets from tags at node registration.
const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

/// Sites as one plan uses them.
#[derive(Clone, Copy, Debug)]
pub enum SiteLabels<'r> {
    /// `vsphere.sites` is not set (or not read by this source), or there is no inventory.
    Off,
    /// The sites have findings: the site label is neither written nor read.
    Untrusted,
    Trusted(&'r SiteMap),
}

impl<'r> SiteLabels<'r> {
    pub fn of(resolution: Option<&'r SiteResolution>) -> SiteLabels<'r> {
        match resolution {
            None => SiteLabels::Off,
            Some(resolution) => match resolution.trusted() {
                Some(map) => SiteLabels::Trusted(map),
                None => SiteLabels::Untrusted,
            },
        }
    }

    /// The site of the host a node lives on now, where sites are trusted.
    pub fn site_of(self, placement: &Placement) -> Option<&'r str> {
        match self {
            SiteLabels::Trusted(map) => map.site_of(placement.cluster_index, placement.host_name),
            SiteLabels::Off | SiteLabels::Untrusted => None,
        }
    }
}

/// A warning when the node's zone label names another site than the one its VM runs in now.
/// Only a zone that is the name of some site is judged: a zone naming something else (a region's
/// zones from vSphere tags, a rack) is not ours to compare.
pub fn stale_zone_label(node: &Node, map: &SiteMap, site: &str) -> Option<Warning> {
    let zone = node.labels.get(ZONE_LABEL)?;
    if zone == site || !map.is_site(zone) {
        return None;
    }
    Some(Warning::StaleZoneLabel {
        node: node.name.clone(),
        zone: zone.to_string(),
        site: site.to_string(),
    })
}

/// What the DRS side reports about sites, cluster by cluster: VM/Host rules tying VMs to a
/// site's hosts that are disabled, and node VMs in no VM group such a rule names (only in a
/// cluster that has such rules: without any, the admins chose to let DRS place VMs freely).
pub fn rule_warnings(
    inventory: &Inventory,
    map: &SiteMap,
    placements: &[Option<Placement>],
) -> Vec<Warning> {
    let names = inventory.cluster_names();
    let mut node_vms: BTreeMap<usize, Vec<&Vm>> = BTreeMap::new();
    for placement in placements.iter().flatten() {
        if let Some(vm) = placement.vm {
            node_vms
                .entry(placement.cluster_index)
                .or_default()
                .push(vm);
        }
    }
    let mut warnings = Vec::new();
    for (index, cluster) in inventory.clusters.iter().enumerate() {
        let rules = site_rules(cluster, map, index);
        for (rule, site) in &rules {
            if !rule.enabled {
                warnings.push(Warning::SiteRuleDisabled {
                    rule: rule.name.clone(),
                    cluster: names[index].clone(),
                    site: site.to_string(),
                });
            }
        }
        if rules.is_empty() {
            continue;
        }
        let groups: Vec<&VmGroup> = cluster
            .vm_groups
            .iter()
            .filter(|group| rules.iter().any(|(rule, _)| rule.vm_group == group.name))
            .collect();
        let outside: BTreeSet<String> = node_vms
            .get(&index)
            .into_iter()
            .flatten()
            .filter(|vm| !groups.iter().any(|group| group.holds(vm)))
            .map(|vm| vm.name.clone())
            .collect();
        if !outside.is_empty() {
            warnings.push(Warning::VmsOutsideSiteRules {
                cluster: names[index].clone(),
                vms: outside.into_iter().collect(),
            });
        }
    }
    warnings
}

/// The cluster's VM/Host rules whose host group is a site's (every host of it in that one site),
/// with the site.
fn site_rules<'c>(
    cluster: &'c Cluster,
    map: &'c SiteMap,
    index: usize,
) -> Vec<(&'c VmHostRule, &'c str)> {
    let site_of_group = |name: &str| -> Option<&'c str> {
        let group = cluster.host_group(name)?;
        let mut sites = cluster
            .hosts
            .iter()
            .filter(|host| group.holds(host))
            .map(|host| map.site_of(index, &host.name));
        let first = sites.next()??;
        sites.all(|site| site == Some(first)).then_some(first)
    };
    cluster
        .vm_host_rules
        .iter()
        .filter_map(|rule| {
            let group = rule
                .affine_host_group
                .as_deref()
                .or(rule.anti_affine_host_group.as_deref())?;
            Some((rule, site_of_group(group)?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::plan::model::warning::Warning;
    use crate::plan::testing::*;
    use crate::plan::{LabelChange, Planner, plan};

    fn change(node: &str, key: &str, old: Option<&str>, new: Option<&str>) -> LabelChange {
        LabelChange {
            node: node.to_string(),
            key: key.to_string(),
            old: old.map(str::to_string),
            new: new.map(str::to_string),
        }
    }

    #[test]
    fn each_node_gets_the_site_of_its_hosts_group_as_a_label() {
        let snapshot = Lab::new()
            .host("esxi-a1")
            .host("esxi-b1")
            .host_group("site-a", &["esxi-a1"])
            .host_group("site-b", &["esxi-b1"])
            .node("w1", "esxi-a1")
            .node("w2", "esxi-b1")
            .build();
        let plan = plan(&snapshot, &with_sites(policy(Vec::new())));
        assert_eq!(
            plan.label_changes,
            [
                change("w1", SITE, None, Some("site-a")),
                change("w2", SITE, None, Some("site-b")),
            ]
        );
        assert_eq!(
            plan.label_applies[0].set.get(SITE).map(String::as_str),
            Some("site-a")
        );
        assert_eq!(
            plan.label_applies[0].set.get(HOST).map(String::as_str),
            Some("esxi-a1")
        );
        assert_eq!(plan.warnings, []);
    }

    #[test]
    fn a_vm_moved_to_the_other_site_is_relabelled_and_planned_in_its_new_site() {
        let snapshot = moved_across_sites().build();
        let policy = with_sites(policy(Vec::new()));
        let planner = Planner::new(&snapshot, &policy);
        assert_eq!(
            planner.plan.label_changes,
            [
                change("w3", HOST, Some("esxi-b1"), Some("esxi-a2")),
                change("w3", SITE, Some("site-b"), Some("site-a")),
            ]
        );
        let w3 = planner
            .view
            .nodes
            .iter()
            .find(|n| n.node.name == "w3")
            .expect("w3");
        assert_eq!(w3.site.as_deref(), Some("site-a"));
        assert_eq!(w3.labels.get(SITE), Some("site-a"));
    }

    #[test]
    fn without_sites_no_site_label_is_written_or_owned_even_where_host_groups_exist() {
        let snapshot = moved_across_sites().build();
        let plan = plan(&snapshot, &policy(Vec::new()));
        assert_eq!(
            plan.label_changes,
            [change("w3", HOST, Some("esxi-b1"), Some("esxi-a2"))]
        );
        assert!(!plan.label_applies[0].set.contains_key(SITE));
        assert!(plan.label_applies[0].remove.is_empty());
    }

    #[test]
    fn a_site_label_an_earlier_policy_wrote_is_removed_once_sites_are_dropped() {
        let snapshot = stretched()
            .with(|snapshot| {
                let w1 = &mut snapshot.nodes[0];
                w1.applied_label_keys = [HOST, SITE].map(String::from).into();
            })
            .build();
        let plan = plan(&snapshot, &policy(Vec::new()));
        assert_eq!(
            plan.label_changes,
            [change("w1", SITE, Some("site-a"), None)]
        );
        assert!(plan.label_applies[0].remove.contains(SITE));
    }

    #[test]
    fn with_findings_the_site_label_is_neither_written_nor_removed_nor_judged() {
        // site-b has no host group now: esxi-b1 and esxi-b2 are in no site.
        let snapshot = moved_across_sites()
            .with(|snapshot| {
                let cluster = &mut snapshot.inventory.as_mut().expect("inventory").clusters[0];
                cluster.host_groups.retain(|group| group.name == "site-a");
            })
            .build();
        let policy = with_sites(policy(Vec::new()));
        let planner = Planner::new(&snapshot, &policy);
        assert_eq!(
            planner.plan.label_changes,
            [change("w3", HOST, Some("esxi-b1"), Some("esxi-a2"))]
        );
        // The write restates the site label as it is: nothing removes it.
        assert_eq!(
            planner.plan.label_applies[0]
                .set
                .get(SITE)
                .map(String::as_str),
            Some("site-b")
        );
        assert!(planner.plan.label_applies[0].remove.is_empty());
        assert!(
            planner
                .view
                .nodes
                .iter()
                .all(|n| n.labels.get(SITE).is_none())
        );
        assert!(planner.view.nodes.iter().all(|n| n.site.is_none()));
        assert_eq!(
            planner.plan.warnings,
            [Warning::SitesUntrusted { findings: 2 },]
        );
    }

    #[test]
    fn a_node_whose_host_is_in_no_site_loses_the_site_label() {
        // w4's VM runs on a host the cluster does not list (mid-move, or filtered out).
        let snapshot = stretched()
            .with(|snapshot| {
                let cluster = &mut snapshot.inventory.as_mut().expect("inventory").clusters[0];
                let vm = cluster
                    .vms
                    .iter_mut()
                    .find(|vm| vm.name == "w4")
                    .expect("w4");
                vm.host = "esxi-c1".to_string();
            })
            .build();
        let plan = plan(&snapshot, &with_sites(policy(Vec::new())));
        assert!(
            plan.label_changes
                .contains(&change("w4", SITE, Some("site-b"), None)),
            "{:?}",
            plan.label_changes
        );
        let apply = plan
            .label_applies
            .iter()
            .find(|a| a.node == "w4")
            .expect("w4");
        assert!(apply.remove.contains(SITE));
    }

    #[test]
    fn a_zone_label_naming_another_site_is_a_warning_and_one_naming_no_site_is_not() {
        let zone = "topology.kubernetes.io/zone";
        let snapshot = moved_across_sites()
            .label("w3", zone, "site-b")
            .label("w1", zone, "zone-1")
            .label("w2", zone, "site-a")
            .build();
        let plan = plan(&snapshot, &with_sites(policy(Vec::new())));
        let stale = Warning::StaleZoneLabel {
            node: "w3".to_string(),
            zone: "site-b".to_string(),
            site: "site-a".to_string(),
        };
        assert_eq!(plan.warnings, std::slice::from_ref(&stale));
        assert_eq!(stale.code(), "stale-zone-label");
        assert_eq!(
            stale.to_string(),
            "node w3: topology.kubernetes.io/zone says site-b but its VM runs in site site-a \
             now; the cloud provider set the zone at registration and never refreshes it, so \
             volumes' node affinity and zone spreading still place by site-b"
        );
    }

    #[test]
    fn node_vms_in_no_vm_group_of_a_site_rule_and_disabled_site_rules_are_reported() {
        let snapshot = stretched()
            .vm_group("site-a-vms", &["w1", "w2"])
            .vm_group("site-b-vms", &["w3"])
            .vm_group("gpu-vms", &["w4"])
            .host_group("gpu-hosts", &["esxi-a1", "esxi-b2"])
            .vm_host_rule("keep-a", "site-a-vms", "site-a", true)
            .vm_host_rule("keep-b", "site-b-vms", "site-b", false)
            // Spans both sites: no site's rule, so its VM group counts for nothing.
            .vm_host_rule("gpu", "gpu-vms", "gpu-hosts", true)
            .build();
        let plan = plan(&snapshot, &with_sites(policy(Vec::new())));
        let sentences: Vec<String> = plan.warnings.iter().map(ToString::to_string).collect();
        assert_eq!(
            sentences,
            [
                "VM/Host rule keep-b in cluster c1 ties VMs to site site-b but is disabled: DRS \
                 and HA ignore it",
                "cluster c1: node VM(s) w4 are in no VM group of a site's VM/Host rule, so DRS \
                 and HA may place them in either site",
            ]
        );
        let codes: Vec<&str> = plan.warnings.iter().map(Warning::code).collect();
        assert_eq!(codes, ["site-rule-disabled", "vms-outside-site-rules"]);
    }

    #[test]
    fn a_cluster_without_site_rules_reports_no_vm_outside_them() {
        let plan = plan(&stretched().build(), &with_sites(policy(Vec::new())));
        assert_eq!(plan.warnings, []);
    }

    #[test]
    fn vsan_fault_domains_give_the_site_label_too() {
        let snapshot = stretched()
            .fault_domain("esxi-a1", "preferred")
            .fault_domain("esxi-a2", "preferred")
            .fault_domain("esxi-b1", "secondary")
            .fault_domain("esxi-b2", "secondary")
            .build();
        let mut policy = with_sites(policy(Vec::new()));
        policy.vsphere.sites.as_mut().expect("sites").source =
            crate::policy::SiteSource::VsanFaultDomains;
        let plan = plan(&snapshot, &policy);
        assert_eq!(plan.label_changes.len(), 4);
        assert_eq!(
            plan.label_changes[0],
            change("w1", SITE, Some("site-a"), Some("preferred"))
        );
    }
}
