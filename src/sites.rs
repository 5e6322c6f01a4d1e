//! Sites: the fault domain above the ESXi host (one side of a stretched cluster, a room, a rack),
//! resolved from the inventory as `vsphere.sites` says, host by host.
//!
//! Pure, and O(hosts + groups): every command that needs sites (`plan`, `run`, `check`,
//! exposure, `what-if --site-fails`) resolves them here once per inventory, and the planner
//! looks a node's site up by its placement's cluster and host.
//!
//! A site is named like its source: the DRS host group's name, or the vSAN fault domain's. The
//! same name in two clusters is one site (Kubernetes sees one label value). What keeps the sites
//! from being a partition of each cluster's hosts is a [`SiteFinding`]; with any finding, no site
//! is trusted (the command refuses the policy; `plan()` writes and reads no site label).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::inventory::{Cluster, HostGroup, Inventory};
use crate::policy::{
    HostGroupSelection, NameError, PolicyProblem, Position, Rule, SiteSettings, SiteSource,
    VsphereSettings, check_label_value,
};

/// How many host names a finding lists before it counts the rest.
const LISTED_HOSTS: usize = 5;

/// The site of every host the settings place, cluster by cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SiteMap {
    /// Indexed like the inventory's clusters: host name → site name.
    clusters: Vec<BTreeMap<String, String>>,
    /// Every site's name, kept once so that asking per node stays O(log sites).
    names: BTreeSet<String>,
}

impl SiteMap {
    /// The site of the host named `host` in the inventory's cluster at `cluster_index` (as
    /// `Placement::cluster_index`, `Placement::host_name` give them).
    pub fn site_of(&self, cluster_index: usize, host: &str) -> Option<&str> {
        self.clusters
            .get(cluster_index)?
            .get(host)
            .map(String::as_str)
    }

    /// Every site's name, sorted, each once.
    pub fn names(&self) -> BTreeSet<&str> {
        self.names.iter().map(String::as_str).collect()
    }

    /// Whether some host is in a site of this name.
    pub fn is_site(&self, name: &str) -> bool {
        self.names.contains(name)
    }

    /// The hosts of `site`, as (cluster index, host name), in inventory order of clusters and
    /// name order of hosts.
    pub fn hosts_of<'a>(&'a self, site: &'a str) -> impl Iterator<Item = (usize, &'a str)> + 'a {
        self.clusters
            .iter()
            .enumerate()
            .flat_map(move |(index, hosts)| {
                hosts
                    .iter()
                    .filter(move |(_, name)| name.as_str() == site)
                    .map(move |(host, _)| (index, host.as_str()))
            })
    }

    /// Whether no host has a site.
    pub fn is_empty(&self) -> bool {
        self.clusters.iter().all(BTreeMap::is_empty)
    }
}

/// The sites, and what keeps them from being trusted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SiteResolution {
    pub map: SiteMap,
    /// Empty when every cluster's hosts are partitioned into validly named sites.
    pub findings: Vec<SiteFinding>,
}

impl SiteResolution {
    /// The map, where no finding stands against it.
    pub fn trusted(&self) -> Option<&SiteMap> {
        self.findings.is_empty().then_some(&self.map)
    }
}

/// Why the sites `vsphere.sites` chooses do not partition the inventory's hosts. Each is an
/// error: `validate`-like commands (`plan`) exit 2 naming `vsphere.sites`, and `check` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SiteFinding {
    /// A group `hostGroups` names is in no cluster.
    GroupNotFound { group: String },
    /// `hostGroupPattern` matches no host group of any cluster.
    PatternMatchesNoGroup { pattern: String },
    /// A host in more than one chosen group: it would be in two sites at once.
    HostInSeveralSites {
        cluster: String,
        host: String,
        sites: Vec<String>,
    },
    /// Hosts of a cluster in no site (some or all of them).
    HostsWithoutSite {
        cluster: String,
        /// The first few names.
        hosts: Vec<String>,
        count: usize,
        source: SiteSourceKind,
    },
    /// With vSAN fault domains: a cluster whose every host is in vSAN's default domain or has
    /// no vSAN fault domain at all.
    NoFaultDomains { cluster: String },
    /// A site whose name is not a valid label value, so no node can carry it.
    InvalidSiteName {
        cluster: String,
        site: String,
        reason: NameError,
    },
}

/// Which of the two sources a finding is about, for its wording and fix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum SiteSourceKind {
    HostGroups,
    VsanFaultDomains,
}

impl From<&SiteSource> for SiteSourceKind {
    fn from(source: &SiteSource) -> SiteSourceKind {
        match source {
            SiteSource::HostGroups(_) => SiteSourceKind::HostGroups,
            SiteSource::VsanFaultDomains => SiteSourceKind::VsanFaultDomains,
        }
    }
}

impl SiteFinding {
    /// The finding, its code and its fix in one sentence, as a refusal and a policy problem
    /// tell it.
    pub fn with_code_and_fix(&self) -> String {
        format!("{self} [{}]; {}", self.code(), self.fix())
    }

    /// A stable id for tools and docs.
    pub fn code(&self) -> &'static str {
        match self {
            SiteFinding::GroupNotFound { .. } => "site-group-not-found",
            SiteFinding::PatternMatchesNoGroup { .. } => "site-pattern-matches-no-group",
            SiteFinding::HostInSeveralSites { .. } => "site-host-in-several-sites",
            SiteFinding::HostsWithoutSite { .. } => "site-hosts-without-site",
            SiteFinding::NoFaultDomains { .. } => "site-no-fault-domains",
            SiteFinding::InvalidSiteName { .. } => "site-invalid-name",
        }
    }

    /// What to change, in the policy or in vCenter.
    pub fn fix(&self) -> &'static str {
        match self {
            SiteFinding::GroupNotFound { .. } => {
                "create the DRS host group in vCenter, or correct vsphere.sites.hostGroups"
            }
            SiteFinding::PatternMatchesNoGroup { .. } => {
                "correct vsphere.sites.hostGroupPattern (`*` stands for any characters), or \
                 create the sites' DRS host groups in vCenter"
            }
            SiteFinding::HostInSeveralSites { .. } => {
                "remove the host from all but one of the site host groups"
            }
            SiteFinding::HostsWithoutSite {
                source: SiteSourceKind::HostGroups,
                ..
            } => {
                "add each host to one site's DRS host group, or leave the cluster out with \
                 vsphere.clusters"
            }
            SiteFinding::HostsWithoutSite {
                source: SiteSourceKind::VsanFaultDomains,
                ..
            } => {
                "put each host in a named vSAN fault domain, or leave the cluster out with \
                 vsphere.clusters"
            }
            SiteFinding::NoFaultDomains { .. } => {
                "configure vSAN fault domains (a stretched cluster's preferred and secondary \
                 sites), choose source hostGroups, or leave the cluster out with vsphere.clusters"
            }
            SiteFinding::InvalidSiteName { .. } => {
                "rename the group or fault domain to at most 63 characters from a-z, A-Z, 0-9, \
                 '-', '_' and '.', starting and ending with a letter or digit"
            }
        }
    }
}

impl fmt::Display for SiteFinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SiteFinding::GroupNotFound { group } => {
                write!(f, "host group {group:?} is in no vSphere cluster")
            }
            SiteFinding::PatternMatchesNoGroup { pattern } => write!(
                f,
                "host group pattern {pattern:?} matches no host group of any vSphere cluster"
            ),
            SiteFinding::HostInSeveralSites {
                cluster,
                host,
                sites,
            } => write!(
                f,
                "host {host} of cluster {cluster} is in {} sites at once: {}",
                sites.len(),
                sites.join(", ")
            ),
            SiteFinding::HostsWithoutSite {
                cluster,
                hosts,
                count,
                source,
            } => {
                let of = match source {
                    SiteSourceKind::HostGroups => "in no site host group",
                    SiteSourceKind::VsanFaultDomains => "in no named vSAN fault domain",
                };
                write!(
                    f,
                    "{count} host(s) of cluster {cluster} are {of}, so in no site: "
                )?;
                f.write_str(&hosts.join(", "))?;
                if *count > hosts.len() {
                    write!(f, " and {} more", count - hosts.len())?;
                }
                Ok(())
            }
            SiteFinding::NoFaultDomains { cluster } => write!(
                f,
                "cluster {cluster} has no vSAN fault domains: every host is in vSAN's default \
                 domain or has no vSAN"
            ),
            SiteFinding::InvalidSiteName {
                cluster,
                site,
                reason,
            } => write!(
                f,
                "site {site:?} of cluster {cluster} is not a valid label value ({reason}), so no \
                 node can carry it"
            ),
        }
    }
}

/// A policy whose sites do not fit the inventory it is planned against: `plan` and `run` refuse
/// it (exit code 2) before planning, so nothing is labelled on sites that do not hold together.
#[derive(Debug, thiserror::Error)]
#[error("vsphere.sites{} does not fit the vSphere inventory: {}", at(*.position), listed(.findings))]
pub struct SitesRefused {
    /// Where `vsphere.sites` is in the policy file.
    pub position: Option<Position>,
    pub findings: Vec<SiteFinding>,
}

impl SitesRefused {
    /// Each finding as a problem of the policy file `file` at `vsphere.sites`, as `validate`
    /// and `plan` list problems (and CI formats annotate them).
    pub fn problems(&self, file: &str) -> Vec<PolicyProblem> {
        self.findings
            .iter()
            .map(|finding| PolicyProblem {
                rule: Rule::Inventory,
                file: file.to_string(),
                position: self.position,
                path: "vsphere.sites".to_string(),
                message: finding.with_code_and_fix(),
            })
            .collect()
    }
}

fn at(position: Option<Position>) -> String {
    position.map_or_else(String::new, |p| {
        format!(" (policy line {}, column {})", p.line, p.column)
    })
}

fn listed(findings: &[SiteFinding]) -> String {
    findings
        .iter()
        .map(SiteFinding::with_code_and_fix)
        .collect::<Vec<_>>()
        .join("; ")
}

/// The refusal of a policy whose sites have findings against `inventory`; `Ok` without sites
/// (or with a source that reads none) or without an inventory.
pub fn check(inventory: Option<&Inventory>, vsphere: &VsphereSettings) -> Result<(), SitesRefused> {
    let (Some(inventory), Some(settings)) = (inventory, vsphere.site_settings()) else {
        return Ok(());
    };
    let findings = resolve(inventory, settings).findings;
    if findings.is_empty() {
        return Ok(());
    }
    Err(SitesRefused {
        position: settings.position,
        findings,
    })
}

/// Each host's site as `settings` reads it from `inventory`, and every finding against it.
pub fn resolve(inventory: &Inventory, settings: &SiteSettings) -> SiteResolution {
    let names = inventory.cluster_names();
    let mut resolution = SiteResolution::default();
    match &settings.source {
        SiteSource::HostGroups(selection) => {
            resolution.findings.extend(unmatched(inventory, selection));
            for (cluster, name) in inventory.clusters.iter().zip(&names) {
                let chosen: Vec<&HostGroup> = cluster
                    .host_groups
                    .iter()
                    .filter(|group| is_chosen(selection, &group.name))
                    .collect();
                let hosts = by_host_groups(cluster, &chosen, name, &mut resolution.findings);
                check_cluster(
                    cluster,
                    name,
                    &hosts,
                    SiteSourceKind::HostGroups,
                    &mut resolution,
                );
                resolution.map.clusters.push(hosts);
            }
        }
        SiteSource::VsanFaultDomains => {
            for (cluster, name) in inventory.clusters.iter().zip(&names) {
                let hosts = by_fault_domains(cluster);
                if hosts.is_empty() && !cluster.hosts.is_empty() {
                    resolution.findings.push(SiteFinding::NoFaultDomains {
                        cluster: name.clone(),
                    });
                } else {
                    let kind = SiteSourceKind::VsanFaultDomains;
                    check_cluster(cluster, name, &hosts, kind, &mut resolution);
                }
                resolution.map.clusters.push(hosts);
            }
        }
    }
    resolution.map.names = (resolution.map.clusters.iter())
        .flat_map(|hosts| hosts.values().cloned())
        .collect();
    resolution
}

fn is_chosen(selection: &HostGroupSelection, group: &str) -> bool {
    match selection {
        HostGroupSelection::Named(names) => names.iter().any(|name| name == group),
        HostGroupSelection::Pattern(pattern) => pattern.matches(group),
    }
}

/// Names and patterns that choose no group in any cluster.
fn unmatched(inventory: &Inventory, selection: &HostGroupSelection) -> Vec<SiteFinding> {
    let groups: BTreeSet<&str> = inventory
        .clusters
        .iter()
        .flat_map(|cluster| cluster.host_groups.iter().map(|group| group.name.as_str()))
        .collect();
    match selection {
        HostGroupSelection::Named(names) => names
            .iter()
            .filter(|name| !groups.contains(name.as_str()))
            .map(|group| SiteFinding::GroupNotFound {
                group: group.clone(),
            })
            .collect(),
        HostGroupSelection::Pattern(pattern) => {
            if groups.iter().any(|group| pattern.matches(group)) {
                Vec::new()
            } else {
                vec![SiteFinding::PatternMatchesNoGroup {
                    pattern: pattern.to_string(),
                }]
            }
        }
    }
}

/// Host name → site for one cluster's chosen groups; a host in two groups is in neither (and a
/// finding).
fn by_host_groups(
    cluster: &Cluster,
    chosen: &[&HostGroup],
    cluster_name: &str,
    findings: &mut Vec<SiteFinding>,
) -> BTreeMap<String, String> {
    let mut hosts = BTreeMap::new();
    for host in &cluster.hosts {
        let sites: Vec<String> = chosen
            .iter()
            .filter(|group| group.holds(host))
            .map(|group| group.name.clone())
            .collect();
        match sites.as_slice() {
            [] => {}
            [site] => {
                hosts.insert(host.name.clone(), site.clone());
            }
            _ => findings.push(SiteFinding::HostInSeveralSites {
                cluster: cluster_name.to_string(),
                host: host.name.clone(),
                sites,
            }),
        }
    }
    hosts
}

/// Host name → fault domain, for hosts in a named one.
fn by_fault_domains(cluster: &Cluster) -> BTreeMap<String, String> {
    cluster
        .hosts
        .iter()
        .filter_map(|host| {
            let domain = host.vsan_fault_domain.as_deref()?;
            (!domain.is_empty()).then(|| (host.name.clone(), domain.to_string()))
        })
        .collect()
}

/// The findings of one cluster's map: hosts left out, names no label can carry. A host already
/// reported in several sites is not reported again as in none.
fn check_cluster(
    cluster: &Cluster,
    cluster_name: &str,
    hosts: &BTreeMap<String, String>,
    source: SiteSourceKind,
    resolution: &mut SiteResolution,
) {
    let in_several: BTreeSet<&str> = resolution
        .findings
        .iter()
        .filter_map(|finding| match finding {
            SiteFinding::HostInSeveralSites { cluster, host, .. } if cluster == cluster_name => {
                Some(host.as_str())
            }
            _ => None,
        })
        .collect();
    let without: Vec<&str> = cluster
        .hosts
        .iter()
        .map(|host| host.name.as_str())
        .filter(|host| !hosts.contains_key(*host) && !in_several.contains(host))
        .collect();
    if !without.is_empty() {
        resolution.findings.push(SiteFinding::HostsWithoutSite {
            cluster: cluster_name.to_string(),
            hosts: without
                .iter()
                .take(LISTED_HOSTS)
                .map(|host| host.to_string())
                .collect(),
            count: without.len(),
            source,
        });
    }
    let sites: BTreeSet<&str> = hosts.values().map(String::as_str).collect();
    for site in sites {
        if let Err(reason) = check_label_value(site) {
            resolution.findings.push(SiteFinding::InvalidSiteName {
                cluster: cluster_name.to_string(),
                site: site.to_string(),
                reason,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::Host;
    use crate::policy::GroupPattern;

    fn host(name: &str) -> Host {
        serde_json::from_value(serde_json::json!({"name": name})).expect("a host")
    }

    fn in_domain(name: &str, domain: Option<&str>) -> Host {
        Host {
            vsan_fault_domain: domain.map(str::to_string),
            ..host(name)
        }
    }

    fn group(name: &str, hosts: &[&str]) -> HostGroup {
        HostGroup {
            name: name.to_string(),
            hosts: hosts.iter().map(|h| h.to_string()).collect(),
            host_ids: Vec::new(),
        }
    }

    fn cluster(name: &str, hosts: Vec<Host>, groups: Vec<HostGroup>) -> Cluster {
        Cluster {
            name: name.to_string(),
            datacenter: "dc".to_string(),
            hosts,
            host_groups: groups,
            ..Cluster::default()
        }
    }

    /// Two sites of three hosts each, and a group of other hosts that is no site.
    fn stretched() -> Cluster {
        let hosts = [
            "esxi-a1", "esxi-a2", "esxi-a3", "esxi-b1", "esxi-b2", "esxi-b3",
        ];
        cluster(
            "stretched",
            hosts.iter().map(|h| host(h)).collect(),
            vec![
                group("site-a-hosts", &hosts[..3]),
                group("site-b-hosts", &hosts[3..]),
                group("gpu-hosts", &["esxi-a1", "esxi-b1"]),
            ],
        )
    }

    fn named(groups: &[&str]) -> SiteSettings {
        let names = groups.iter().map(|g| g.to_string()).collect();
        SiteSettings {
            source: SiteSource::HostGroups(HostGroupSelection::Named(names)),
            position: None,
        }
    }

    fn pattern(pattern: &str) -> SiteSettings {
        SiteSettings {
            source: SiteSource::HostGroups(HostGroupSelection::Pattern(GroupPattern::new(pattern))),
            position: None,
        }
    }

    fn vsan() -> SiteSettings {
        SiteSettings {
            source: SiteSource::VsanFaultDomains,
            position: None,
        }
    }

    fn inventory(clusters: Vec<Cluster>) -> Inventory {
        Inventory { clusters }
    }

    #[test]
    fn named_host_groups_partition_the_hosts_into_sites_named_like_the_groups() {
        let resolution = resolve(
            &inventory(vec![stretched()]),
            &named(&["site-a-hosts", "site-b-hosts"]),
        );
        assert_eq!(resolution.findings, []);
        let map = resolution.trusted().expect("no finding");
        assert_eq!(map.site_of(0, "esxi-a2"), Some("site-a-hosts"));
        assert_eq!(map.site_of(0, "esxi-b3"), Some("site-b-hosts"));
        assert_eq!(map.site_of(0, "esxi-c1"), None);
        assert_eq!(map.site_of(1, "esxi-a2"), None);
        assert_eq!(
            map.names().into_iter().collect::<Vec<_>>(),
            ["site-a-hosts", "site-b-hosts"]
        );
        let hosts: Vec<(usize, &str)> = map.hosts_of("site-b-hosts").collect();
        assert_eq!(hosts, [(0, "esxi-b1"), (0, "esxi-b2"), (0, "esxi-b3")]);
    }

    #[test]
    fn a_pattern_chooses_every_group_it_matches_and_only_those() {
        let resolution = resolve(&inventory(vec![stretched()]), &pattern("site-*-hosts"));
        assert_eq!(resolution.findings, []);
        assert_eq!(resolution.map.site_of(0, "esxi-a1"), Some("site-a-hosts"));
    }

    #[test]
    fn membership_is_by_host_id_where_both_sides_have_one() {
        let mut cluster = stretched();
        for (host, id) in cluster.hosts.iter_mut().zip(1..) {
            host.id = Some(format!("host-{id}"));
        }
        // The group lists ids; its names were recorded under another spelling.
        cluster.host_groups[0].hosts = vec!["ESXI-A1".to_string()];
        cluster.host_groups[0].host_ids = ["host-1", "host-2", "host-3"].map(String::from).into();
        let resolution = resolve(
            &inventory(vec![cluster]),
            &named(&["site-a-hosts", "site-b-hosts"]),
        );
        assert_eq!(resolution.findings, []);
        assert_eq!(resolution.map.site_of(0, "esxi-a3"), Some("site-a-hosts"));
    }

    #[test]
    fn a_named_group_or_a_pattern_that_chooses_nothing_is_a_finding() {
        let inventory = inventory(vec![stretched()]);
        let resolution = resolve(&inventory, &named(&["site-a-hosts", "site-c-hosts"]));
        assert_eq!(
            resolution.findings[0],
            SiteFinding::GroupNotFound {
                group: "site-c-hosts".to_string()
            }
        );
        assert_eq!(
            resolution.findings[0].to_string(),
            "host group \"site-c-hosts\" is in no vSphere cluster"
        );
        assert!(resolution.trusted().is_none());
        let resolution = resolve(&inventory, &pattern("rack-*"));
        assert_eq!(
            resolution.findings[0],
            SiteFinding::PatternMatchesNoGroup {
                pattern: "rack-*".to_string()
            }
        );
        assert_eq!(
            resolution.findings[0].code(),
            "site-pattern-matches-no-group"
        );
    }

    #[test]
    fn a_host_in_two_chosen_groups_is_in_neither_site_and_a_finding() {
        let resolution = resolve(&inventory(vec![stretched()]), &pattern("*-hosts"));
        assert_eq!(
            resolution.findings,
            [
                SiteFinding::HostInSeveralSites {
                    cluster: "stretched".to_string(),
                    host: "esxi-a1".to_string(),
                    sites: vec!["site-a-hosts".to_string(), "gpu-hosts".to_string()],
                },
                SiteFinding::HostInSeveralSites {
                    cluster: "stretched".to_string(),
                    host: "esxi-b1".to_string(),
                    sites: vec!["site-b-hosts".to_string(), "gpu-hosts".to_string()],
                },
            ]
        );
        assert_eq!(resolution.map.site_of(0, "esxi-a1"), None);
        assert_eq!(
            resolution.findings[0].to_string(),
            "host esxi-a1 of cluster stretched is in 2 sites at once: site-a-hosts, gpu-hosts"
        );
    }

    #[test]
    fn hosts_in_no_site_are_a_finding_per_cluster_listing_the_first_few() {
        let mut partial = stretched();
        partial.host_groups[1].hosts.truncate(1);
        let plain = cluster(
            "plain",
            (1..=7).map(|i| host(&format!("esxi-p{i}"))).collect(),
            Vec::new(),
        );
        let resolution = resolve(
            &inventory(vec![partial, plain]),
            &named(&["site-a-hosts", "site-b-hosts"]),
        );
        let messages: Vec<String> = resolution.findings.iter().map(|f| f.to_string()).collect();
        assert_eq!(
            messages,
            [
                "2 host(s) of cluster stretched are in no site host group, so in no site: \
                 esxi-b2, esxi-b3",
                "7 host(s) of cluster plain are in no site host group, so in no site: esxi-p1, \
                 esxi-p2, esxi-p3, esxi-p4, esxi-p5 and 2 more",
            ]
        );
        assert_eq!(
            resolution.findings[1].fix(),
            "add each host to one site's DRS host group, or leave the cluster out with \
             vsphere.clusters"
        );
    }

    #[test]
    fn vsan_fault_domains_are_sites_and_the_default_domain_is_none() {
        let cluster = cluster(
            "vsan",
            vec![
                in_domain("esxi-1", Some("preferred")),
                in_domain("esxi-2", Some("secondary")),
                in_domain("esxi-3", Some("")),
            ],
            Vec::new(),
        );
        let resolution = resolve(&inventory(vec![cluster]), &vsan());
        assert_eq!(resolution.map.site_of(0, "esxi-1"), Some("preferred"));
        assert_eq!(resolution.map.site_of(0, "esxi-3"), None);
        assert_eq!(
            resolution
                .findings
                .iter()
                .map(|f| f.to_string())
                .collect::<Vec<_>>(),
            ["1 host(s) of cluster vsan are in no named vSAN fault domain, so in no site: esxi-3"]
        );
    }

    #[test]
    fn a_vsan_cluster_without_fault_domains_is_named_with_the_fix() {
        let cluster = cluster(
            "flat",
            vec![in_domain("esxi-1", Some("")), in_domain("esxi-2", None)],
            Vec::new(),
        );
        let resolution = resolve(&inventory(vec![cluster]), &vsan());
        assert_eq!(
            resolution.findings,
            [SiteFinding::NoFaultDomains {
                cluster: "flat".to_string()
            }]
        );
        assert_eq!(
            resolution.findings[0].to_string(),
            "cluster flat has no vSAN fault domains: every host is in vSAN's default domain or \
             has no vSAN"
        );
        assert!(
            resolution.findings[0]
                .fix()
                .contains("choose source hostGroups")
        );
    }

    #[test]
    fn a_site_name_no_label_can_carry_is_a_finding() {
        let cluster = cluster(
            "vsan",
            vec![
                in_domain("esxi-1", Some("Site A")),
                in_domain("esxi-2", Some("site-b")),
            ],
            Vec::new(),
        );
        let resolution = resolve(&inventory(vec![cluster]), &vsan());
        assert_eq!(resolution.findings.len(), 1);
        assert_eq!(resolution.findings[0].code(), "site-invalid-name");
        assert_eq!(
            resolution.findings[0].to_string(),
            "site \"Site A\" of cluster vsan is not a valid label value (must consist of \
             alphanumeric characters, '-', '_' or '.', and start and end with an alphanumeric \
             character), so no node can carry it"
        );
    }

    #[test]
    fn one_site_name_in_two_clusters_is_one_site() {
        let mut east = stretched();
        east.name = "east".to_string();
        let mut west = stretched();
        west.name = "west".to_string();
        let resolution = resolve(
            &inventory(vec![east, west]),
            &named(&["site-a-hosts", "site-b-hosts"]),
        );
        assert_eq!(resolution.findings, []);
        assert_eq!(resolution.map.names().len(), 2);
        assert_eq!(resolution.map.hosts_of("site-a-hosts").count(), 6);
    }
}

#[cfg(test)]
mod refusal_tests {
    use super::*;
    use crate::inventory::{Host, HostGroup};
    use crate::policy::{SourceKind, VsphereSettings};

    fn inventory() -> Inventory {
        let host: Host =
            serde_json::from_value(serde_json::json!({"name": "esxi-1"})).expect("a host");
        Inventory {
            clusters: vec![Cluster {
                name: "c1".to_string(),
                hosts: vec![host],
                host_groups: vec![HostGroup {
                    name: "site-a".to_string(),
                    hosts: vec!["esxi-1".to_string()],
                    host_ids: Vec::new(),
                }],
                ..Cluster::default()
            }],
        }
    }

    fn sites(groups: &[&str]) -> VsphereSettings {
        VsphereSettings {
            sites: Some(SiteSettings {
                source: SiteSource::HostGroups(HostGroupSelection::Named(
                    groups.iter().map(|g| g.to_string()).collect(),
                )),
                position: Some(Position::new(6, 5)),
            }),
            ..VsphereSettings::default()
        }
    }

    #[test]
    fn sites_that_fit_no_sites_no_inventory_and_other_sources_pass() {
        assert!(check(Some(&inventory()), &sites(&["site-a"])).is_ok());
        assert!(check(Some(&inventory()), &VsphereSettings::default()).is_ok());
        assert!(check(None, &sites(&["site-b"])).is_ok());
        let supervisor = VsphereSettings {
            source: SourceKind::Supervisor,
            ..sites(&["site-b"])
        };
        assert!(check(Some(&inventory()), &supervisor).is_ok());
    }

    #[test]
    fn a_refusal_names_vsphere_sites_each_finding_its_code_and_its_fix() {
        let refused = check(Some(&inventory()), &sites(&["site-a", "site-b"])).expect_err("site-b");
        assert_eq!(
            refused.to_string(),
            "vsphere.sites (policy line 6, column 5) does not fit the vSphere inventory: host \
             group \"site-b\" is in no vSphere cluster [site-group-not-found]; create the DRS host \
             group in vCenter, or correct vsphere.sites.hostGroups"
        );
        let problems = refused.problems("policy.yaml");
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].rule, Rule::Inventory);
        assert!(
            problems[0]
                .to_string()
                .starts_with("policy.yaml:6:5: vsphere.sites: host group \"site-b\""),
            "{}",
            problems[0]
        );
    }
}
