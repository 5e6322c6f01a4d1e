//! `vsphere.sites`: where each ESXi host's site (a fault domain above the host: a room, a rack,
//! one side of a stretched cluster) is read from in the inventory, and the label that carries it.
//!
//! Only the policy's side is checked here: whether the named host groups exist and partition the
//! hosts depends on the inventory, and is found by [`crate::sites::resolve`].

use super::decode::{Decoder, Fields, index};
use super::rule::Rule;
use super::yaml::{Position, YamlNode};

/// Default label key for the site a node VM runs in, written only when sites are configured.
pub const DEFAULT_SITE_LABEL: &str = "vsphere-descheduler.io/site";

const SITES_FIELDS: [&str; 3] = ["source", "hostGroups", "hostGroupPattern"];

/// `vsphere.sites`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteSettings {
    pub source: SiteSource,
    /// Where `vsphere.sites` starts in the policy file: findings that depend on the inventory
    /// (a group no cluster has, hosts in no site) point there.
    pub position: Option<Position>,
}

/// Where each host's site comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SiteSource {
    /// DRS host groups (`ClusterHostGroup`): each chosen group is a site, named like the group.
    HostGroups(HostGroupSelection),
    /// vSAN fault domains: each named domain is a site, named like the domain; vSAN's default
    /// domain (the empty name) is none.
    VsanFaultDomains,
}

impl SiteSource {
    /// As the policy spells it.
    pub fn as_str(&self) -> &'static str {
        match self {
            SiteSource::HostGroups(_) => "hostGroups",
            SiteSource::VsanFaultDomains => "vsanFaultDomains",
        }
    }
}

/// Which DRS host groups are sites.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostGroupSelection {
    /// `hostGroups`: these groups, by name.
    Named(Vec<String>),
    /// `hostGroupPattern`: every group whose name the pattern matches.
    Pattern(GroupPattern),
}

/// A host group name pattern: `*` stands for any run of characters (none included); every other
/// character stands for itself, so `?` and `[` in a group name need no escaping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupPattern(String);

impl GroupPattern {
    pub fn new(pattern: impl Into<String>) -> GroupPattern {
        GroupPattern(pattern.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the whole of `name` matches.
    pub fn matches(&self, name: &str) -> bool {
        let mut parts = self.0.split('*');
        let first = parts.next().unwrap_or_default();
        let Some(mut rest) = name.strip_prefix(first) else {
            return false;
        };
        let middle: Vec<&str> = parts.collect();
        let Some((last, between)) = middle.split_last() else {
            // No `*`: the pattern is the name.
            return rest.is_empty();
        };
        for part in between {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
        rest.len() >= last.len() && rest.ends_with(last)
    }
}

impl std::fmt::Display for GroupPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Reads `vsphere.sites`; `None` when it is absent or too broken to use (each problem recorded).
pub(super) fn sites(d: &mut Decoder, node: &YamlNode, path: &str) -> Option<SiteSettings> {
    let fields = d.fields(node, path, &SITES_FIELDS)?;
    let source = match fields.get("source") {
        None => {
            d.problem_as(
                Rule::MissingField,
                node.position,
                &fields.path("source"),
                "required: hostGroups (DRS host groups, chosen with hostGroups or \
                 hostGroupPattern) or vsanFaultDomains (each host's vSAN fault domain)",
            );
            return None;
        }
        Some(source) => d.choice(
            source,
            &fields.path("source"),
            "site source",
            &["hostGroups", "vsanFaultDomains"],
        )?,
    };
    let source = if source == "vsanFaultDomains" {
        for name in ["hostGroups", "hostGroupPattern"] {
            if let Some(node) = fields.get(name) {
                d.warning_at_as(
                    Rule::NoEffect,
                    node,
                    &fields.path(name),
                    "source vsanFaultDomains does not read it: the sites are the hosts' vSAN \
                     fault domains",
                );
            }
        }
        SiteSource::VsanFaultDomains
    } else {
        SiteSource::HostGroups(host_group_selection(d, node, &fields)?)
    };
    Some(SiteSettings {
        source,
        position: node.position,
    })
}

/// `hostGroups` or `hostGroupPattern`, exactly one of them.
fn host_group_selection(
    d: &mut Decoder,
    node: &YamlNode,
    fields: &Fields<'_>,
) -> Option<HostGroupSelection> {
    match (fields.get("hostGroups"), fields.get("hostGroupPattern")) {
        (Some(_), Some(pattern)) => {
            d.problem_at_as(
                Rule::Conflict,
                pattern,
                &fields.path("hostGroupPattern"),
                "set hostGroups or hostGroupPattern, not both",
            );
            None
        }
        (None, None) => {
            d.problem_as(
                Rule::MissingField,
                node.position,
                &fields.path("hostGroups"),
                "required with source hostGroups: the DRS host groups that are sites, by name \
                 (hostGroups: [site-a-hosts, site-b-hosts]) or by pattern (hostGroupPattern: \
                 \"site-*\")",
            );
            None
        }
        (Some(_), None) => named_groups(d, fields).map(HostGroupSelection::Named),
        (None, Some(pattern)) => {
            let path = fields.path("hostGroupPattern");
            let text = d.string(pattern, &path)?;
            if text.is_empty() {
                d.problem_at(pattern, &path, "must not be empty");
                return None;
            }
            Some(HostGroupSelection::Pattern(GroupPattern::new(text)))
        }
    }
}

/// `hostGroups`: at least one name, each once.
fn named_groups(d: &mut Decoder, fields: &Fields<'_>) -> Option<Vec<String>> {
    let path = fields.path("hostGroups");
    let before = d.problems.len();
    let mut names: Vec<String> = Vec::new();
    for (i, item) in fields.list(d, "hostGroups").iter().enumerate() {
        let item_path = index(&path, i);
        let Some(name) = d.string(item, &item_path) else {
            continue;
        };
        if name.is_empty() {
            d.problem_at(item, &item_path, "must not be empty");
        } else if names.contains(&name) {
            d.problem_at_as(
                Rule::Duplicate,
                item,
                &item_path,
                format!("host group {name:?} is named twice"),
            );
        } else {
            names.push(name);
        }
    }
    if names.is_empty() && d.problems.len() == before {
        d.problem(
            fields.get("hostGroups").and_then(|node| node.position),
            &path,
            "must name at least one DRS host group",
        );
    }
    (d.problems.len() == before).then_some(names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testing::{OURS, load, problems, warnings};

    fn settings(sites: &str) -> Option<SiteSettings> {
        load(&format!("{OURS}vsphere:\n  sites:\n{sites}"))
            .policy
            .vsphere
            .sites
    }

    #[test]
    fn a_pattern_star_stands_for_any_run_of_characters_and_nothing_else_is_special() {
        let pattern = GroupPattern::new("site-*-hosts");
        assert!(pattern.matches("site-a-hosts"));
        assert!(pattern.matches("site--hosts"));
        assert!(!pattern.matches("site-a-hosts-old"));
        assert!(!pattern.matches("rack-a-hosts"));
        assert!(GroupPattern::new("*").matches("anything"));
        assert!(GroupPattern::new("site-?").matches("site-?"));
        assert!(!GroupPattern::new("site-?").matches("site-a"));
        assert!(GroupPattern::new("a*b*c").matches("a-b-b-c"));
        assert!(!GroupPattern::new("ab*ba").matches("aba"));
        assert!(GroupPattern::new("exact").matches("exact"));
        assert!(!GroupPattern::new("exact").matches("exactly"));
    }

    #[test]
    fn host_groups_by_name_or_by_pattern_and_fault_domains_are_read() {
        let named =
            settings("    source: hostGroups\n    hostGroups: [site-a, site-b]\n").expect("sites");
        assert_eq!(
            named.source,
            SiteSource::HostGroups(HostGroupSelection::Named(vec![
                "site-a".to_string(),
                "site-b".to_string()
            ]))
        );
        assert_eq!(named.position.map(|p| (p.line, p.column)), Some((6, 5)));
        let pattern =
            settings("    source: hostGroups\n    hostGroupPattern: \"site-*\"\n").expect("sites");
        assert_eq!(
            pattern.source,
            SiteSource::HostGroups(HostGroupSelection::Pattern(GroupPattern::new("site-*")))
        );
        let vsan = settings("    source: vsanFaultDomains\n").expect("sites");
        assert_eq!(vsan.source, SiteSource::VsanFaultDomains);
    }

    #[test]
    fn sites_bring_the_site_label_with_its_default_key_and_none_without_them() {
        let with = load(&format!(
            "{OURS}vsphere:\n  sites: {{source: vsanFaultDomains}}\n"
        ))
        .policy;
        assert_eq!(
            with.vsphere.labels.site.as_deref(),
            Some(DEFAULT_SITE_LABEL)
        );
        let keys: Vec<&str> = with.vsphere.labels.owned().collect();
        assert_eq!(keys, ["vsphere-descheduler.io/host", DEFAULT_SITE_LABEL]);
        let without = load(OURS).policy;
        assert_eq!(without.vsphere.sites, None);
        assert_eq!(without.vsphere.labels.site, None);
        let custom = load(&format!(
            "{OURS}vsphere:\n  sites: {{source: vsanFaultDomains}}\n  labels: {{site: example.com/room}}\n"
        ))
        .policy;
        assert_eq!(
            custom.vsphere.labels.site.as_deref(),
            Some("example.com/room")
        );
    }

    #[test]
    fn a_source_is_required_and_host_groups_need_exactly_one_way_of_choosing_them() {
        let cases = [
            (
                "  sites: {hostGroups: [a]}\n",
                "policy.yaml:5:10: vsphere.sites.source: required: hostGroups (DRS host groups, \
                 chosen with hostGroups or hostGroupPattern) or vsanFaultDomains (each host's \
                 vSAN fault domain)",
            ),
            (
                "  sites: {source: tags}\n",
                "policy.yaml:5:19: vsphere.sites.source: unknown site source \"tags\"; valid: \
                 hostGroups, vsanFaultDomains",
            ),
            (
                "  sites: {source: hostGroups}\n",
                "policy.yaml:5:10: vsphere.sites.hostGroups: required with source hostGroups: the \
                 DRS host groups that are sites, by name (hostGroups: [site-a-hosts, \
                 site-b-hosts]) or by pattern (hostGroupPattern: \"site-*\")",
            ),
            (
                "  sites: {source: hostGroups, hostGroups: [a], hostGroupPattern: \"*\"}\n",
                "policy.yaml:5:66: vsphere.sites.hostGroupPattern: set hostGroups or \
                 hostGroupPattern, not both",
            ),
            (
                "  sites: {source: hostGroups, hostGroups: [a, b, a]}\n",
                "policy.yaml:5:50: vsphere.sites.hostGroups[2]: host group \"a\" is named twice",
            ),
            (
                "  sites: {source: hostGroups, hostGroups: []}\n",
                "policy.yaml:5:43: vsphere.sites.hostGroups: must name at least one DRS host group",
            ),
            (
                "  sites: {source: hostGroups, hostGroupPattern: \"\"}\n",
                "policy.yaml:5:49: vsphere.sites.hostGroupPattern: must not be empty",
            ),
        ];
        for (sites, expected) in cases {
            let text = format!("{OURS}vsphere:\n{sites}");
            assert_eq!(problems(&text), [expected], "{sites}");
        }
    }

    #[test]
    fn the_site_label_key_is_refused_where_the_host_label_key_would_be() {
        let text = format!(
            "{OURS}vsphere:\n  sites: {{source: vsanFaultDomains}}\n  labels: {{site: \
             topology.kubernetes.io/zone}}\n"
        );
        assert_eq!(
            problems(&text),
            [
                "policy.yaml:6:18: vsphere.labels.site: label key \"topology.kubernetes.io/zone\" \
                 is not ours to write: the vSphere cloud provider writes them from vSphere tags \
                 (topology.kubernetes.io/*); choose a key under your own prefix, such as \
                 vsphere-descheduler.io/site"
            ]
        );
        let shared = format!(
            "{OURS}vsphere:\n  sites: {{source: vsanFaultDomains}}\n  labels: {{site: \
             vsphere-descheduler.io/host}}\n"
        );
        assert_eq!(
            problems(&shared),
            [
                "policy.yaml:6:18: vsphere.labels.site: label key \"vsphere-descheduler.io/host\" is \
              used for two different labels"
            ]
        );
        let empty = format!(
            "{OURS}vsphere:\n  sites: {{source: vsanFaultDomains}}\n  labels: {{site: \"\"}}\n"
        );
        assert_eq!(
            problems(&empty),
            [
                "policy.yaml:6:18: vsphere.labels.site: the site label key must not be empty: it \
              is what this tool maintains for vsphere.sites"
            ]
        );
    }

    #[test]
    fn settings_the_chosen_source_does_not_read_and_a_site_key_without_sites_are_warnings() {
        let text = format!(
            "{OURS}vsphere:\n  sites: {{source: vsanFaultDomains, hostGroupPattern: \"*\"}}\n"
        );
        assert_eq!(
            warnings(&text),
            [
                "policy.yaml:5:55: vsphere.sites.hostGroupPattern: source vsanFaultDomains does not \
              read it: the sites are the hosts' vSAN fault domains"
            ]
        );
        let text = format!("{OURS}vsphere:\n  labels: {{site: example.com/room}}\n");
        assert_eq!(
            warnings(&text),
            [
                "policy.yaml:5:18: vsphere.labels.site: no site label is written without \
              vsphere.sites, which says where each host's site comes from"
            ]
        );
        assert_eq!(load(&text).policy.vsphere.labels.site, None);
    }
}
