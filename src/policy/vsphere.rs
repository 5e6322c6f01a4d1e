//! `clusterName` and the `vsphere:` section of our format.

use super::availability::availability;
use super::decode::{Decoder, Fields, index};
use super::names::{check_dns_label, check_label_key};
use super::selector::label_selector;
use super::yaml::YamlNode;
use super::{
    CAPV_HOST_LABEL, DEFAULT_SITE_LABEL, DrsRuleSettings, HOSTNAME_LABEL, LabelKeys,
    MAX_NAME_PREFIX_LEN, MAX_OWNED_RULE_PREFIX_LEN, MAX_RULE_NAME_LEN, NodeGroup, VsphereSettings,
};
use crate::policy::rule::Rule;

const VSPHERE_FIELDS: [&str; 12] = [
    "server",
    "insecureSkipVerify",
    "caFile",
    "datacenters",
    "clusters",
    "labels",
    "drsRules",
    "availability",
    "source",
    "supervisor",
    "nodeLabel",
    "sites",
];
const LABELS_FIELDS: [&str; 4] = ["host", "cluster", "datacenter", "site"];
const DRS_RULES_FIELDS: [&str; 4] = ["enabled", "namePrefix", "topologyKeys", "nodeGroups"];
const NODE_GROUP_FIELDS: [&str; 2] = ["name", "nodeSelector"];

/// Field names that would hold credentials. They are refused, not ignored: a policy lives in a
/// ConfigMap or a Git repository, where a password must never be.
const CREDENTIAL_FIELDS: [&str; 8] = [
    "username",
    "user",
    "password",
    "passwd",
    "credentials",
    "token",
    "secret",
    "apiKey",
];

/// Where credentials come from instead, for messages.
const CREDENTIALS_SOURCE: &str = "they come only from VSPHERE_USERNAME/VSPHERE_PASSWORD or a \
                                  credentials directory (--vsphere-credentials-dir)";

/// Label key prefixes other components own; writing them would fight their owner.
const FOREIGN_LABEL_PREFIXES: [(&str, &str); 3] = [
    (
        "topology.kubernetes.io/",
        "the vSphere cloud provider writes them from vSphere tags",
    ),
    (
        "failure-domain.beta.kubernetes.io/",
        "the vSphere cloud provider writes them from vSphere tags",
    ),
    ("node.cluster.x-k8s.io/", "Cluster API writes them"),
];

/// The `vsphere:` section and `clusterName`, resolved and checked together (the cluster name is
/// required exactly when DRS rules are synchronised).
pub(super) fn vsphere(d: &mut Decoder, top: &Fields<'_>) -> (Option<String>, VsphereSettings) {
    let cluster_name = cluster_name(d, top);
    let mut settings = VsphereSettings::default();
    // Filled in at the end unless the file lists keys: the default follows the host label key.
    settings.drs_rules.topology_keys = Vec::new();
    let mut drs_enabled_node = None;
    if let Some(node) = top.get("vsphere") {
        let path = top.path("vsphere");
        let hint = |name: &str| {
            CREDENTIAL_FIELDS.iter().any(|field| field.eq_ignore_ascii_case(name)).then(|| {
                format!(
                    "{name} is refused: credentials never go in the policy; {CREDENTIALS_SOURCE}"
                )
            })
        };
        if let Some(fields) = d.fields_with_hint(node, &path, &VSPHERE_FIELDS, hint) {
            settings.server = server(d, &fields);
            settings.insecure_skip_verify = fields.bool(d, "insecureSkipVerify").unwrap_or(false);
            // "" counts as unset, as charts render an empty value for "not configured".
            settings.ca_file = fields
                .string(d, "caFile")
                .filter(|file| !file.is_empty())
                .map(std::path::PathBuf::from);
            let non_empty = |name: &str| name.is_empty().then(|| "must not be empty".to_string());
            settings.datacenters = fields.strings(d, "datacenters", non_empty);
            settings.clusters = fields.strings(d, "clusters", non_empty);
            if let Some(node) = fields.get("sites") {
                settings.sites = super::sites::sites(d, node, &fields.path("sites"));
            }
            if let Some(labels) = fields.get("labels") {
                let sites = fields.get("sites").is_some();
                settings.labels = label_keys(d, labels, &fields.path("labels"), sites);
            }
            if settings.sites.is_some() && settings.labels.site.is_none() {
                settings.labels.site = Some(DEFAULT_SITE_LABEL.to_string());
            }
            if let Some(drs) = fields.get("drsRules") {
                let drs_path = fields.path("drsRules");
                if let Some(drs_fields) = d.fields(drs, &drs_path, &DRS_RULES_FIELDS) {
                    drs_enabled_node = drs_fields.get("enabled");
                    settings.drs_rules = drs_rules(d, &drs_fields);
                }
            }
            if let Some(node) = fields.get("availability") {
                settings.availability = availability(d, node, &fields.path("availability"));
            }
            super::source::source(d, &fields, &mut settings);
        }
    }
    if settings.drs_rules.topology_keys.is_empty() {
        settings.drs_rules.topology_keys = default_topology_keys(&settings.labels);
    }
    match &cluster_name {
        // An invalid name was reported as such; "required" would only confuse.
        // Pointed at what makes it required when the file says so, else at the mapping it
        // belongs in.
        None if settings.drs_rules.enabled && top.get("clusterName").is_none() => d.problem_as(
            Rule::MissingField,
            drs_enabled_node
                .and_then(|node| node.position)
                .or(top.position),
            "clusterName",
            "required while vsphere.drsRules.enabled is true (the default): it scopes the DRS \
             rules this Kubernetes cluster owns; set clusterName, or set \
             vsphere.drsRules.enabled: false",
        ),
        Some(name) => {
            // Owned rules are `<namePrefix>:<clusterName>:<workload>`; the part before the
            // workload must leave room for it in vCenter's 80-character limit.
            let owned_prefix = format!("{}:{name}:", settings.drs_rules.name_prefix);
            if owned_prefix.len() > MAX_OWNED_RULE_PREFIX_LEN {
                d.problem(
                    top.get("clusterName").and_then(|node| node.position),
                    "clusterName",
                    format!(
                        "the DRS rule name prefix {owned_prefix:?} is {} characters; namePrefix \
                         and clusterName together may use at most {MAX_OWNED_RULE_PREFIX_LEN} so \
                         that rule names (at most {MAX_RULE_NAME_LEN} characters in vCenter) keep \
                         room for the workload",
                        owned_prefix.len(),
                    ),
                );
            }
        }
        None => {}
    }
    (cluster_name, settings)
}

fn cluster_name(d: &mut Decoder, top: &Fields<'_>) -> Option<String> {
    let node = top.get("clusterName")?;
    let name = d.string(node, "clusterName")?;
    match check_dns_label(&name) {
        Ok(()) => Some(name),
        Err(error) => {
            d.problem_at(
                node,
                "clusterName",
                format!("invalid cluster name {name:?}: {error}"),
            );
            None
        }
    }
}

fn server(d: &mut Decoder, fields: &Fields<'_>) -> Option<String> {
    let node = fields.get("server")?;
    let path = fields.path("server");
    // "" counts as unset (then VSPHERE_SERVER applies), as charts render empty values.
    let server = d.string(node, &path).filter(|server| !server.is_empty())?;
    if server.chars().any(char::is_whitespace) {
        d.problem_at(
            node,
            &path,
            "expected a vCenter host name, host:port or https:// URL",
        );
        return None;
    }
    // `https://user:password@vcenter` would put credentials in the policy; the value is not
    // repeated in the message for the same reason.
    let authority = server
        .split_once("://")
        .map_or(server.as_str(), |(_, rest)| rest);
    if authority
        .split('/')
        .next()
        .is_some_and(|host| host.contains('@'))
    {
        d.problem_at(
            node,
            &path,
            format!("the server address must not carry credentials; {CREDENTIALS_SOURCE}"),
        );
        return None;
    }
    Some(server)
}

/// `vsphere.labels`; the site key only where `vsphere.sites` is set (`sites`), as no site label
/// is written without it.
fn label_keys(d: &mut Decoder, node: &YamlNode, path: &str, sites: bool) -> LabelKeys {
    let mut keys = LabelKeys::default();
    let Some(fields) = d.fields(node, path, &LABELS_FIELDS) else {
        return keys;
    };
    if let Some(host) = owned_label_key(d, &fields, "host") {
        match host {
            Some(host) => keys.host = host,
            None => d.problem(
                fields.get("host").and_then(|node| node.position),
                &fields.path("host"),
                "the host label key must not be empty: it is what this tool maintains",
            ),
        }
    }
    keys.cluster = owned_label_key(d, &fields, "cluster").flatten();
    keys.datacenter = owned_label_key(d, &fields, "datacenter").flatten();
    keys.site = site_label_key(d, &fields, sites);
    let mut seen: Vec<&str> = Vec::new();
    for (name, key) in [
        ("cluster", keys.cluster.as_deref()),
        ("datacenter", keys.datacenter.as_deref()),
        ("site", keys.site.as_deref()),
    ] {
        if let Some(key) = key {
            if key == keys.host || seen.contains(&key) {
                d.problem_as(
                    Rule::Duplicate,
                    fields.get(name).and_then(|node| node.position),
                    &fields.path(name),
                    format!("label key {key:?} is used for two different labels"),
                );
            }
            seen.push(key);
        }
    }
    keys
}

/// `labels.site`: a key of ours, never empty; without `vsphere.sites` a warning, and `None`.
fn site_label_key(d: &mut Decoder, fields: &Fields<'_>, sites: bool) -> Option<String> {
    let node = fields.get("site")?;
    if !sites {
        d.warning_at(
            node,
            &fields.path("site"),
            "no site label is written without vsphere.sites, which says where each host's site \
             comes from",
        );
        return None;
    }
    match owned_label_key(d, fields, "site")? {
        Some(key) => Some(key),
        None => {
            d.problem_at(
                node,
                &fields.path("site"),
                "the site label key must not be empty: it is what this tool maintains for \
                 vsphere.sites",
            );
            None
        }
    }
}

/// One label key this tool will write: `None` when the field is absent or invalid,
/// `Some(None)` for "" (do not write this label).
fn owned_label_key(d: &mut Decoder, fields: &Fields<'_>, name: &str) -> Option<Option<String>> {
    let node = fields.get(name)?;
    let path = fields.path(name);
    let key = d.string(node, &path)?;
    if key.is_empty() {
        return Some(None);
    }
    if let Err(error) = check_label_key(&key) {
        d.refused_at(
            node,
            &path,
            format_args!("invalid label key {key:?}"),
            &error,
        );
        return None;
    }
    if let Some((prefix, owner)) = FOREIGN_LABEL_PREFIXES
        .iter()
        .find(|(prefix, _)| key.starts_with(prefix))
    {
        d.problem_at(
            node,
            &path,
            format!(
                "label key {key:?} is not ours to write: {owner} ({prefix}*); choose a key under \
                 your own prefix, such as vsphere-descheduler.io/{name}"
            ),
        );
        return None;
    }
    if let Some(reserved) = reserved_prefix(&key) {
        d.problem_at(
            node,
            &path,
            format!(
                "label key {key:?} is in the {reserved} namespace Kubernetes reserves for its own \
                 components; choose a key under your own prefix, such as \
                 vsphere-descheduler.io/{name}"
            ),
        );
        return None;
    }
    Some(Some(key))
}

/// `kubernetes.io` or `k8s.io` when the key's prefix is one of them or a subdomain of one.
fn reserved_prefix(key: &str) -> Option<&'static str> {
    let (prefix, _) = key.split_once('/')?;
    ["kubernetes.io", "k8s.io"]
        .into_iter()
        .find(|reserved| prefix == *reserved || prefix.ends_with(&format!(".{reserved}")))
}

fn drs_rules(d: &mut Decoder, fields: &Fields<'_>) -> DrsRuleSettings {
    let mut settings = DrsRuleSettings::default();
    if let Some(enabled) = fields.bool(d, "enabled") {
        settings.enabled = enabled;
    }
    if let Some(node) = fields.get("namePrefix") {
        let path = fields.path("namePrefix");
        if let Some(prefix) = d.string(node, &path) {
            let valid_chars = prefix
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
            if prefix.is_empty() || prefix.len() > MAX_NAME_PREFIX_LEN || !valid_chars {
                d.problem_at(
                    node,
                    &path,
                    format!(
                        "namePrefix must be 1 to {MAX_NAME_PREFIX_LEN} characters from A-Z, a-z, \
                         0-9, '.', '_' and '-' (rule names are <namePrefix>:<clusterName>:…)"
                    ),
                );
            } else {
                settings.name_prefix = prefix;
            }
        }
    }
    let mut keys: Vec<String> = Vec::new();
    for key in fields.strings(d, "topologyKeys", |key| {
        check_label_key(key)
            .err()
            .map(|error| format!("invalid label key {key:?}: {error}"))
    }) {
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    // Empty means the default, which the caller fills in once the host label key is known.
    settings.topology_keys = keys;
    settings.node_groups = node_groups(d, fields);
    settings
}

/// `nodeGroups`: each a DNS-label `name`, unique, and a required `nodeSelector` (a
/// `LabelSelector`).
fn node_groups(d: &mut Decoder, fields: &Fields<'_>) -> Vec<NodeGroup> {
    let path = fields.path("nodeGroups");
    let mut groups: Vec<NodeGroup> = Vec::new();
    for (i, node) in fields.list(d, "nodeGroups").iter().enumerate() {
        let path = index(&path, i);
        let Some(group) = d.fields(node, &path, &NODE_GROUP_FIELDS) else {
            continue;
        };
        let name = match group.get("name") {
            None => {
                d.problem_at_as(
                    Rule::MissingField,
                    node,
                    &path,
                    "name: required (a DNS label naming the group)",
                );
                None
            }
            Some(name_node) => group_name(d, name_node, &group.path("name"), &groups),
        };
        let selector = match group.get("nodeSelector") {
            None => {
                d.problem_at_as(
                    Rule::MissingField,
                    node,
                    &path,
                    "nodeSelector: required (a LabelSelector: matchLabels, matchExpressions)",
                );
                None
            }
            selector => label_selector(d, selector, &group.path("nodeSelector")),
        };
        if let (Some(name), Some(node_selector)) = (name, selector) {
            groups.push(NodeGroup {
                name,
                node_selector,
            });
        }
    }
    groups
}

fn group_name(
    d: &mut Decoder,
    node: &YamlNode,
    path: &str,
    groups: &[NodeGroup],
) -> Option<String> {
    let name = d.string(node, path)?;
    if let Err(error) = check_dns_label(&name) {
        d.problem_at(
            node,
            path,
            format!("invalid node group name {name:?}: {error}"),
        );
        return None;
    }
    if groups.iter().any(|group| group.name == name) {
        d.problem_at_as(
            Rule::Duplicate,
            node,
            path,
            format!("node group {name:?} is named twice: each group names its own DRS rule"),
        );
        return None;
    }
    Some(name)
}

/// The host label key, `kubernetes.io/hostname` and Cluster API's host label.
fn default_topology_keys(labels: &LabelKeys) -> Vec<String> {
    let mut keys = vec![labels.host.clone()];
    for key in [HOSTNAME_LABEL, CAPV_HOST_LABEL] {
        if labels.host != key {
            keys.push(key.to_string());
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use crate::policy::testing::{load, problem, problems};

    const HEADER: &str = "apiVersion: vsphere-descheduler.io/v1alpha1\nkind: DeschedulerPolicy\n";

    #[test]
    fn a_missing_cluster_name_is_a_problem_at_the_mapping_it_belongs_in_while_drs_rules_are_on() {
        assert_eq!(
            problem(HEADER),
            "policy.yaml:1:1: clusterName: required while vsphere.drsRules.enabled is true (the \
             default): it scopes the DRS rules this Kubernetes cluster owns; set clusterName, or \
             set vsphere.drsRules.enabled: false"
        );
    }

    #[test]
    fn a_missing_cluster_name_points_at_an_explicit_drs_switch() {
        let text = format!("{HEADER}vsphere:\n  drsRules:\n    enabled: true\n");
        assert!(problem(&text).starts_with("policy.yaml:5:14: clusterName: required while"));
    }

    #[test]
    fn no_cluster_name_is_needed_without_drs_rules() {
        let text = format!("{HEADER}vsphere:\n  drsRules: {{enabled: false}}\n");
        let policy = load(&text).policy;
        assert_eq!(policy.cluster_name, None);
        assert!(!policy.vsphere.drs_rules.enabled);
    }

    #[test]
    fn credentials_in_the_policy_are_refused_without_repeating_them() {
        let text = format!(
            "{HEADER}clusterName: c\nvsphere:\n  username: administrator@vsphere.local\n  \
             Password: hunter2\n  server: https://admin:hunter2@vcenter.example.com/sdk\n"
        );
        let problems = problems(&text);
        assert_eq!(
            problems,
            [
                "policy.yaml:5:3: vsphere.username: username is refused: credentials never go in \
                 the policy; they come only from VSPHERE_USERNAME/VSPHERE_PASSWORD or a \
                 credentials directory (--vsphere-credentials-dir)",
                "policy.yaml:6:3: vsphere.Password: Password is refused: credentials never go in \
                 the policy; they come only from VSPHERE_USERNAME/VSPHERE_PASSWORD or a \
                 credentials directory (--vsphere-credentials-dir)",
                "policy.yaml:7:11: vsphere.server: the server address must not carry \
                 credentials; they come only from VSPHERE_USERNAME/VSPHERE_PASSWORD or a \
                 credentials directory (--vsphere-credentials-dir)",
            ]
        );
        assert!(problems.iter().all(|problem| !problem.contains("hunter2")));
    }

    #[test]
    fn empty_server_and_ca_file_mean_unset() {
        let text = format!("{HEADER}clusterName: c\nvsphere: {{server: \"\", caFile: \"\"}}\n");
        let vsphere = load(&text).policy.vsphere;
        assert_eq!((vsphere.server, vsphere.ca_file), (None, None));
    }

    #[test]
    fn explicit_topology_keys_replace_the_default() {
        let text = format!(
            "{HEADER}clusterName: c\nvsphere:\n  drsRules:\n    topologyKeys: [topology.example.com/rack, \
             topology.example.com/rack]\n"
        );
        assert_eq!(
            load(&text).policy.vsphere.drs_rules.topology_keys,
            ["topology.example.com/rack"]
        );
    }

    #[test]
    fn label_keys_other_components_own_are_refused() {
        let text = format!(
            "{HEADER}clusterName: c\nvsphere:\n  labels:\n    host: node.cluster.x-k8s.io/esxi-host\n    \
             cluster: topology.kubernetes.io/zone\n    datacenter: kubernetes.io/dc\n"
        );
        assert_eq!(
            problems(&text),
            [
                "policy.yaml:6:11: vsphere.labels.host: label key \"node.cluster.x-k8s.io/esxi-host\" \
                 is not ours to write: Cluster API writes them (node.cluster.x-k8s.io/*); choose a \
                 key under your own prefix, such as vsphere-descheduler.io/host",
                "policy.yaml:7:14: vsphere.labels.cluster: label key \"topology.kubernetes.io/zone\" \
                 is not ours to write: the vSphere cloud provider writes them from vSphere tags \
                 (topology.kubernetes.io/*); choose a key under your own prefix, such as \
                 vsphere-descheduler.io/cluster",
                "policy.yaml:8:17: vsphere.labels.datacenter: label key \"kubernetes.io/dc\" is in \
                 the kubernetes.io namespace Kubernetes reserves for its own components; choose a \
                 key under your own prefix, such as vsphere-descheduler.io/datacenter",
            ]
        );
    }

    #[test]
    fn malformed_and_shared_label_keys_are_refused() {
        let text = format!(
            "{HEADER}clusterName: c\nvsphere:\n  labels: {{host: \"\", cluster: a/b/c, datacenter: \
             vsphere-descheduler.io/host}}\n"
        );
        assert_eq!(
            problems(&text),
            [
                "policy.yaml:5:18: vsphere.labels.host: the host label key must not be empty: it is \
                 what this tool maintains",
                "policy.yaml:5:31: vsphere.labels.cluster: invalid label key \"a/b/c\": must \
                 contain at most one '/'",
                "policy.yaml:5:50: vsphere.labels.datacenter: label key \
                 \"vsphere-descheduler.io/host\" is used for two different labels",
            ]
        );
    }

    #[test]
    fn the_rule_name_prefix_is_short_and_plain() {
        let text =
            format!("{HEADER}clusterName: c\nvsphere:\n  drsRules: {{namePrefix: \"my rules\"}}\n");
        assert_eq!(
            problem(&text),
            "policy.yaml:5:26: vsphere.drsRules.namePrefix: namePrefix must be 1 to 30 characters \
             from A-Z, a-z, 0-9, '.', '_' and '-' (rule names are <namePrefix>:<clusterName>:…)"
        );
        let text = format!(
            "{HEADER}clusterName: c\nvsphere:\n  drsRules: {{namePrefix: {}}}\n",
            "p".repeat(31)
        );
        assert!(problem(&text).contains("namePrefix must be 1 to 30 characters"));
    }

    #[test]
    fn prefix_and_cluster_name_must_leave_room_for_the_workload_in_rule_names() {
        let text = format!("{HEADER}clusterName: {}\n", "c".repeat(45));
        assert_eq!(
            problem(&text),
            format!(
                "policy.yaml:3:14: clusterName: the DRS rule name prefix \
                 \"vsphere-descheduler:{}:\" is 66 characters; namePrefix and clusterName together \
                 may use at most 60 so that rule names (at most 80 characters in vCenter) keep \
                 room for the workload",
                "c".repeat(45)
            )
        );
    }

    #[test]
    fn a_misspelt_vsphere_field_gets_a_suggestion() {
        let text = format!("{HEADER}clusterName: c\nvsphere:\n  cluster: [a]\n");
        assert_eq!(
            problem(&text),
            "policy.yaml:5:3: vsphere.cluster: unknown field \"cluster\"; did you mean \
             \"clusters\"? valid: server, insecureSkipVerify, caFile, datacenters, clusters, \
             labels, drsRules, availability, source, supervisor, nodeLabel, sites"
        );
    }

    #[test]
    fn node_groups_name_a_rule_each_with_a_label_selector() {
        let policy = load(&format!(
            "{HEADER}clusterName: c\nvsphere:\n  drsRules:\n    nodeGroups:\n    - name: control-plane\n      \
             nodeSelector: {{matchExpressions: [{{key: node-role.kubernetes.io/control-plane, \
             operator: Exists}}]}}\n    - name: etcd\n      nodeSelector: {{matchLabels: {{role: etcd}}}}\n"
        ))
        .policy;
        let groups = &policy.vsphere.drs_rules.node_groups;
        let names: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["control-plane", "etcd"]);
        assert_eq!(groups[1].node_selector.to_string(), "role=etcd");
    }

    #[test]
    fn node_groups_need_a_unique_dns_label_and_a_selector() {
        let text = format!(
            "{HEADER}clusterName: c\nvsphere:\n  drsRules:\n    nodeGroups:\n    \
             - {{name: cp, nodeSelector: {{matchLabels: {{a: b}}}}}}\n    \
             - {{name: cp, nodeSelector: {{matchLabels: {{a: b}}}}}}\n    \
             - {{name: Control_Plane, nodeSelector: {{}}}}\n    \
             - {{nodeSelector: {{}}}}\n    \
             - {{name: workers}}\n    \
             - {{name: etcd, nodeselector: {{}}}}\n"
        );
        assert_eq!(
            problems(&text),
            [
                "policy.yaml:8:14: vsphere.drsRules.nodeGroups[1].name: node group \"cp\" is named \
                 twice: each group names its own DRS rule",
                "policy.yaml:9:14: vsphere.drsRules.nodeGroups[2].name: invalid node group name \
                 \"Control_Plane\": must consist of lowercase alphanumeric characters or '-', and \
                 start and end with an alphanumeric character",
                "policy.yaml:10:7: vsphere.drsRules.nodeGroups[3]: name: required (a DNS label \
                 naming the group)",
                "policy.yaml:11:7: vsphere.drsRules.nodeGroups[4]: nodeSelector: required (a \
                 LabelSelector: matchLabels, matchExpressions)",
                "policy.yaml:12:7: vsphere.drsRules.nodeGroups[5]: nodeSelector: required (a \
                 LabelSelector: matchLabels, matchExpressions)",
                "policy.yaml:12:20: vsphere.drsRules.nodeGroups[5].nodeselector: unknown field \
                 \"nodeselector\"; did you mean \"nodeSelector\"? valid: name, nodeSelector",
            ]
        );
    }
}
