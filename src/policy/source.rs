//! `vsphere.source`: where each node VM's ESXi host is read from, and the settings of each
//! source (`vsphere.supervisor`, `vsphere.nodeLabel`).
//!
//! The settings of every source are read whatever the chosen one, because the command line
//! (`--topology-source`) may choose another; those the chosen source does not read are a
//! warning (no effect), not an error.

use super::decode::{Decoder, Fields};
use super::names::{check_dns_label, check_label_key};
use super::yaml::{Value, YamlNode};
use super::{NodeLabelSource, SourceKind, SupervisorSource, VsphereSettings};
use crate::error_chain;

const SUPERVISOR_FIELDS: [&str; 1] = ["namespace"];
const NODE_LABEL_FIELDS: [&str; 1] = ["key"];

/// The vCenter-only fields of `vsphere:`, which no other source reads (`sites`: host groups
/// and vSAN fault domains are vCenter's).
const VCENTER_FIELDS: [&str; 6] = [
    "server",
    "insecureSkipVerify",
    "caFile",
    "datacenters",
    "clusters",
    "sites",
];

/// Reads `source`, `supervisor` and `nodeLabel` into `settings`, and warns about fields the
/// chosen source does not read.
pub(super) fn source(d: &mut Decoder, fields: &Fields<'_>, settings: &mut VsphereSettings) {
    if let Some(node) = fields.get("source") {
        let names: Vec<&str> = SourceKind::ALL.iter().map(|kind| kind.as_str()).collect();
        if let Some(name) = d.choice(node, &fields.path("source"), "source", &names) {
            settings.source = SourceKind::ALL
                .into_iter()
                .find(|kind| kind.as_str() == name)
                .expect("a listed choice");
        }
    }
    if let Some(node) = fields.get("supervisor") {
        let path = fields.path("supervisor");
        if let Some(supervisor) = d.fields(node, &path, &SUPERVISOR_FIELDS) {
            settings.supervisor = supervisor_source(d, &supervisor);
        }
        if settings.source != SourceKind::Supervisor {
            not_read(d, node, &path, settings.source);
        }
    }
    if let Some(node) = fields.get("nodeLabel") {
        let path = fields.path("nodeLabel");
        if let Some(label) = d.fields(node, &path, &NODE_LABEL_FIELDS) {
            settings.node_label = node_label_source(d, &label);
        }
        if settings.source != SourceKind::NodeLabel {
            not_read(d, node, &path, settings.source);
        }
    }
    if settings.source != SourceKind::Vcenter {
        for name in VCENTER_FIELDS {
            if let Some(node) = fields.get(name).filter(|node| sets_something(node)) {
                not_read(d, node, &fields.path(name), settings.source);
            }
        }
    }
    if settings.source == SourceKind::NodeLabel
        && let Some(node) = fields.get("labels")
    {
        d.warning_at(
            node,
            &fields.path("labels"),
            format!(
                "no label is written with source node-label: the hosts come from the label {}, \
                 which something else keeps",
                settings.node_label.key
            ),
        );
    }
}

/// Whether a field's value sets anything: charts render unset values as `""`, `[]`, `false`
/// or null, which no source reads either.
fn sets_something(node: &YamlNode) -> bool {
    match &node.value {
        Value::Null | Value::Bool(false) => false,
        Value::Str(text) => !text.is_empty(),
        Value::Seq(items) => !items.is_empty(),
        _ => true,
    }
}

fn not_read(d: &mut Decoder, node: &YamlNode, path: &str, source: SourceKind) {
    d.warning_at(
        node,
        path,
        format!("source {source} does not read it (vsphere.source chooses where hosts come from)"),
    );
}

fn supervisor_source(d: &mut Decoder, fields: &Fields<'_>) -> SupervisorSource {
    let mut supervisor = SupervisorSource::default();
    if let Some(node) = fields.get("namespace") {
        let path = fields.path("namespace");
        if let Some(namespace) = d.string(node, &path).filter(|name| !name.is_empty()) {
            match check_dns_label(&namespace) {
                Ok(()) => supervisor.namespace = Some(namespace),
                Err(error) => d.problem_at(
                    node,
                    &path,
                    format!(
                        "invalid Supervisor namespace {namespace:?}: {}",
                        error_chain(&error)
                    ),
                ),
            }
        }
    }
    supervisor
}

fn node_label_source(d: &mut Decoder, fields: &Fields<'_>) -> NodeLabelSource {
    let mut label = NodeLabelSource::default();
    if let Some(node) = fields.get("key") {
        let path = fields.path("key");
        if let Some(key) = d.string(node, &path) {
            match check_label_key(&key) {
                Ok(()) => label.key = key,
                Err(error) => d.problem_at(
                    node,
                    &path,
                    format!("invalid label key {key:?}: {}", error_chain(&error)),
                ),
            }
        }
    }
    label
}

#[cfg(test)]
mod tests {
    use crate::policy::testing::{OURS, load, problems, warnings};
    use crate::policy::{CAPV_HOST_LABEL, SourceKind};

    #[test]
    fn vcenter_is_the_source_unless_the_policy_names_another() {
        let policy = load(OURS).policy;
        assert_eq!(policy.vsphere.source, SourceKind::Vcenter);
        assert_eq!(policy.vsphere.node_label.key, CAPV_HOST_LABEL);
        assert_eq!(policy.vsphere.supervisor.namespace, None);
    }

    #[test]
    fn the_supervisor_source_reads_its_namespace() {
        let text =
            format!("{OURS}vsphere:\n  source: supervisor\n  supervisor: {{namespace: team-a}}\n");
        let loaded = load(&text);
        assert_eq!(loaded.policy.vsphere.source, SourceKind::Supervisor);
        assert_eq!(
            loaded.policy.vsphere.supervisor.namespace.as_deref(),
            Some("team-a")
        );
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    }

    #[test]
    fn the_node_label_source_reads_its_key() {
        let text = format!(
            "{OURS}vsphere:\n  source: node-label\n  nodeLabel: {{key: example.com/esxi}}\n"
        );
        let policy = load(&text).policy;
        assert_eq!(policy.vsphere.source, SourceKind::NodeLabel);
        assert_eq!(policy.vsphere.node_label.key, "example.com/esxi");
    }

    #[test]
    fn an_unknown_source_names_the_three() {
        let text = format!("{OURS}vsphere:\n  source: tags\n");
        assert_eq!(
            problems(&text),
            [
                "policy.yaml:5:11: vsphere.source: unknown source \"tags\"; valid: vcenter, \
              supervisor, node-label"
            ]
        );
    }

    #[test]
    fn bad_namespace_and_label_key_are_problems_with_positions() {
        let text = format!(
            "{OURS}vsphere:\n  source: supervisor\n  supervisor: {{namespace: Team_A}}\n  \
             nodeLabel: {{key: \"a b\"}}\n"
        );
        let problems = problems(&text);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].starts_with(
                "policy.yaml:6:27: vsphere.supervisor.namespace: invalid Supervisor namespace \
                 \"Team_A\""
            ),
            "{problems:?}"
        );
        assert!(
            problems[1].starts_with("policy.yaml:7:20: vsphere.nodeLabel.key: invalid label key"),
            "{problems:?}"
        );
    }

    #[test]
    fn settings_the_chosen_source_does_not_read_are_warnings() {
        let text = format!(
            "{OURS}vsphere:\n  source: node-label\n  server: vc.example.com\n  supervisor: \
             {{namespace: team-a}}\n  labels: {{host: example.com/host}}\n  clusters: []\n  \
             caFile: \"\"\n  insecureSkipVerify: false\n"
        );
        assert_eq!(
            warnings(&text),
            [
                "policy.yaml:6:11: vsphere.server: source node-label does not read it \
                 (vsphere.source chooses where hosts come from)",
                "policy.yaml:7:15: vsphere.supervisor: source node-label does not read it \
                 (vsphere.source chooses where hosts come from)",
                "policy.yaml:8:11: vsphere.labels: no label is written with source node-label: \
                 the hosts come from the label node.cluster.x-k8s.io/esxi-host, which something \
                 else keeps",
            ]
        );
    }
}
