//! What the plan warns about: one variant per kind, carrying the names and counts its sentence
//! needs, so that code and tests decide by kind and the text lives in one place. The report
//! records each as its sentence.

use std::fmt;

use serde::{Serialize, Serializer};

use crate::inventory::DrsBehavior;
use crate::policy::{CAPV_HOST_LABEL, PluginKind, SourceKind};

use super::drs_change::{DrsAction, Edit};
use super::mapped_by::MappedBy;

/// The zone label the cloud provider sets once, at node registration.
const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

/// One warning of the plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Warning {
    /// No inventory was read: host labels are neither refreshed nor trusted.
    NoInventory,
    /// Fewer than two Ready nodes are selected, so the eviction strategies do not run.
    TooFewReadyNodes { ready: usize },
    /// A node matches several ESXi hosts or VMs of the inventory.
    AmbiguousNode {
        node: String,
        candidates: Candidates,
        /// How the match was made.
        by: MappedBy,
        matches: Vec<String>,
    },
    /// A node's VM runs on a host outside the VM's cluster.
    HostOutsideCluster {
        vm: String,
        node: String,
        host: String,
        cluster: String,
    },
    /// The Cluster API host label names another host than the node's VM runs on now.
    StaleCapvLabel {
        node: String,
        label: String,
        host: String,
    },
    /// DRS rule sync is enabled without a cluster name.
    NoClusterName,
    /// A workload or node group spans more VMs than the cluster has usable hosts.
    UnsatisfiableRule {
        subject: String,
        vms: usize,
        cluster: String,
        usable: usize,
    },
    /// Nodes of a node group that match no VM.
    UnmappedGroupNodes { group: String, nodes: Vec<String> },
    /// A rule of our name that is not ours to edit.
    ForeignRule {
        rule: String,
        cluster: String,
        subject: String,
    },
    /// An owned rule to be edited that was read without its key.
    RuleWithoutKey {
        rule: String,
        cluster: String,
        edit: Edit,
    },
    /// A kept rule that vCenter disabled.
    RuleDisabled { rule: String, cluster: String },
    /// DRS is off on a cluster whose rules change.
    DrsDisabled { cluster: String, rules: usize },
    /// DRS on a cluster whose rules change only recommends.
    DrsNotFullyAutomated {
        cluster: String,
        behavior: DrsBehavior,
    },
    /// A VM in a changed rule has its own DRS behaviour.
    VmDrsOverride { vm: String, behavior: DrsBehavior },
    /// A utilization strategy's threshold names a resource actual usage does not measure.
    UnmeasurableResource {
        strategy: PluginKind,
        profile: String,
        resource: String,
    },
    /// Nodes without NodeMetrics, left out of a utilization strategy.
    NoNodeMetrics {
        strategy: PluginKind,
        profile: String,
        nodes: Vec<String>,
    },
    /// Nodes that carry no value of the source label (source `node-label`).
    NodesWithoutSourceLabel { key: String, nodes: Vec<String> },
    /// Nodes that match no VirtualMachine of the Supervisor namespace (source `supervisor`).
    NodesWithoutVirtualMachine { nodes: Vec<String> },
    /// The DRS rules the plan would write, were there a vCenter account: its source has none.
    DrsRulesNeedVcenter {
        source: SourceKind,
        rules: Vec<UnwritableRule>,
    },
    /// `vsphere.sites` does not partition the hosts (the command refuses such a policy; a plan
    /// made anyway neither writes nor reads site labels).
    SitesUntrusted { findings: usize },
    /// A node's `topology.kubernetes.io/zone` names another site than the one its VM runs in
    /// now (the cloud provider set it at registration and never refreshes it).
    StaleZoneLabel {
        node: String,
        zone: String,
        site: String,
    },
    /// Node VMs in no VM group a site's VM/Host rule names: HA and DRS place them on either site.
    VmsOutsideSiteRules { cluster: String, vms: Vec<String> },
    /// A VM/Host rule that keeps VMs on (or off) a site's hosts is disabled.
    SiteRuleDisabled {
        rule: String,
        cluster: String,
        site: String,
    },
}

/// A DRS rule change the plan would make with a vCenter account.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnwritableRule {
    pub rule: String,
    pub action: DrsAction,
    /// What it keeps apart: `the node VMs of ns/Deployment/web`.
    pub subject: String,
    pub vms: Vec<String>,
}

/// What an ambiguous node matched several of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Candidates {
    EsxiHosts,
    Vms,
}

/// The one place each warning is worded: a table, one arm per kind.
impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::NoInventory => f.write_str(
                "no vSphere inventory: host labels are not refreshed and not trusted, so \
                 host-level constraints are not acted on",
            ),
            Warning::TooFewReadyNodes { ready } => write!(
                f,
                "only {ready} Ready node(s) selected: no pod can move, eviction strategies skipped"
            ),
            Warning::AmbiguousNode {
                node,
                candidates,
                by,
                matches,
            } => {
                let candidates = match candidates {
                    Candidates::EsxiHosts => "ESXi hosts",
                    Candidates::Vms => "VMs",
                };
                write!(
                    f,
                    "node {node} matches several {candidates} by {} ({}): left unmapped",
                    by.describe(),
                    matches.join(", ")
                )
            }
            Warning::HostOutsideCluster {
                vm,
                node,
                host,
                cluster,
            } => write!(
                f,
                "VM {vm} of node {node} runs on host {host:?}, which is not in cluster {cluster}"
            ),
            Warning::StaleCapvLabel { node, label, host } => write!(
                f,
                "node {node}: {CAPV_HOST_LABEL} says {label} but it runs on ESXi host {host} now; \
                 the scheduler places by the stale label until Cluster API resyncs it, and so \
                 does this plan"
            ),
            Warning::NoClusterName => {
                f.write_str("DRS rule sync is on but no clusterName is set: no rules planned")
            }
            Warning::UnsatisfiableRule {
                subject,
                vms,
                cluster,
                usable,
            } => write!(
                f,
                "{subject} runs on {vms} VMs in cluster {cluster} but only {usable} hosts are \
                 usable: no DRS rule, it could never be satisfied"
            ),
            Warning::UnmappedGroupNodes { group, nodes } => write!(
                f,
                "node group {group}: node(s) {} match no vSphere VM, so no DRS rule keeps them apart",
                nodes.join(", ")
            ),
            Warning::ForeignRule {
                rule,
                cluster,
                subject,
            } => write!(
                f,
                "DRS rule {rule} in cluster {cluster} is not a user-created VM-VM anti-affinity \
                 rule: it is left alone, and no rule keeps the VMs of {subject} apart"
            ),
            Warning::RuleWithoutKey {
                rule,
                cluster,
                edit,
            } => {
                let edit = match edit {
                    Edit::Update => "updated",
                    Edit::Delete => "deleted",
                };
                write!(
                    f,
                    "DRS rule {rule} in cluster {cluster} is recorded without its key: it would be \
                     {edit}, but a change cannot address it, so none is carried out"
                )
            }
            Warning::RuleDisabled { rule, cluster } => write!(
                f,
                "DRS rule {rule} in cluster {cluster} is disabled by vCenter (a conflicting rule?): \
                 it is not enforced, and is left as it is"
            ),
            Warning::DrsDisabled { cluster, rules } => write!(
                f,
                "DRS is disabled on cluster {cluster}: its {rules} new or changed rule(s) will not \
                 be enforced"
            ),
            Warning::DrsNotFullyAutomated { cluster, behavior } => write!(
                f,
                "DRS on cluster {cluster} is {behavior}: its rules yield recommendations, not moves"
            ),
            Warning::VmDrsOverride { vm, behavior } => write!(
                f,
                "VM {vm} has a DRS override ({behavior}): DRS may not move it to satisfy its rules"
            ),
            Warning::UnmeasurableResource {
                strategy,
                profile,
                resource,
            } => write!(
                f,
                "{strategy} (profile {profile}): actual usage has no {resource} (metrics.k8s.io \
                 reports cpu and memory, pods are counted): nothing is evicted, as upstream"
            ),
            Warning::NoNodeMetrics {
                strategy,
                profile,
                nodes,
            } => write!(
                f,
                "{strategy} (profile {profile}): no metrics.k8s.io NodeMetrics for node(s) {}: they \
                 are neither sources nor destinations",
                nodes.join(", ")
            ),
            Warning::NodesWithoutSourceLabel { key, nodes } => write!(
                f,
                "node(s) {} carry no label {key} (source node-label), so their ESXi hosts are \
                 unknown: left unmapped, in no host domain and never a place to move a pod to",
                nodes.join(", ")
            ),
            Warning::NodesWithoutVirtualMachine { nodes } => write!(
                f,
                "node(s) {} match no VirtualMachine of the Supervisor namespace read (source \
                 supervisor: by BIOS uuid, then by name), so their ESXi hosts are unknown: left \
                 unmapped, in no host domain and never a place to move a pod to; check \
                 vsphere.supervisor.namespace",
                nodes.join(", ")
            ),
            Warning::DrsRulesNeedVcenter { source, rules } => {
                write!(
                    f,
                    "source {source}: no vCenter account, so no DRS rule is written; with one, \
                     this plan would "
                )?;
                for (i, rule) in rules.iter().enumerate() {
                    let separator = if i == 0 { "" } else { "; " };
                    write!(
                        f,
                        "{separator}{} rule {} keeping {} apart ({})",
                        rule.action.as_str(),
                        rule.rule,
                        rule.subject,
                        rule.vms.join(", ")
                    )?;
                }
                Ok(())
            }
            Warning::SitesUntrusted { findings } => write!(
                f,
                "vsphere.sites does not fit the inventory ({findings} finding(s); `plan` lists \
                 them): site labels are neither written nor trusted, so site-level constraints \
                 are not acted on"
            ),
            Warning::StaleZoneLabel { node, zone, site } => write!(
                f,
                "node {node}: {ZONE_LABEL} says {zone} but its VM runs in site {site} now; the \
                 cloud provider set the zone at registration and never refreshes it, so \
                 volumes' node affinity and zone spreading still place by {zone}"
            ),
            Warning::VmsOutsideSiteRules { cluster, vms } => write!(
                f,
                "cluster {cluster}: node VM(s) {} are in no VM group of a site's VM/Host rule, \
                 so DRS and HA may place them in either site",
                vms.join(", ")
            ),
            Warning::SiteRuleDisabled {
                rule,
                cluster,
                site,
            } => write!(
                f,
                "VM/Host rule {rule} in cluster {cluster} ties VMs to site {site} but is \
                 disabled: DRS and HA ignore it"
            ),
        }
    }
}

impl Warning {
    /// A stable id for each kind, for docs and tools; the report writes the sentence.
    pub fn code(&self) -> &'static str {
        match self {
            Warning::NoInventory => "no-inventory",
            Warning::TooFewReadyNodes { .. } => "too-few-ready-nodes",
            Warning::AmbiguousNode { .. } => "ambiguous-node",
            Warning::HostOutsideCluster { .. } => "host-outside-cluster",
            Warning::StaleCapvLabel { .. } => "stale-capv-label",
            Warning::NoClusterName => "no-cluster-name",
            Warning::UnsatisfiableRule { .. } => "unsatisfiable-rule",
            Warning::UnmappedGroupNodes { .. } => "unmapped-group-nodes",
            Warning::ForeignRule { .. } => "foreign-rule",
            Warning::RuleWithoutKey { .. } => "rule-without-key",
            Warning::RuleDisabled { .. } => "rule-disabled",
            Warning::DrsDisabled { .. } => "drs-disabled",
            Warning::DrsNotFullyAutomated { .. } => "drs-not-fully-automated",
            Warning::VmDrsOverride { .. } => "vm-drs-override",
            Warning::UnmeasurableResource { .. } => "unmeasurable-resource",
            Warning::NoNodeMetrics { .. } => "no-node-metrics",
            Warning::NodesWithoutSourceLabel { .. } => "nodes-without-source-label",
            Warning::NodesWithoutVirtualMachine { .. } => "nodes-without-virtual-machine",
            Warning::DrsRulesNeedVcenter { .. } => "drs-rules-need-vcenter",
            Warning::SitesUntrusted { .. } => "sites-untrusted",
            Warning::StaleZoneLabel { .. } => "stale-zone-label",
            Warning::VmsOutsideSiteRules { .. } => "vms-outside-site-rules",
            Warning::SiteRuleDisabled { .. } => "site-rule-disabled",
        }
    }
}

/// As its sentence: the report's warnings are strings.
impl Serialize for Warning {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::{Candidates, DrsBehavior, Edit, MappedBy, PluginKind, Warning};

    #[test]
    fn an_ambiguous_node_names_what_it_matched_and_how() {
        let warning = Warning::AmbiguousNode {
            node: "esxi-42.example.com".to_string(),
            candidates: Candidates::EsxiHosts,
            by: MappedBy::EsxiHost,
            matches: vec![
                "c1/esxi-42.example.com".to_string(),
                "c1/10.0.0.43".to_string(),
            ],
        };
        assert_eq!(
            warning.to_string(),
            "node esxi-42.example.com matches several ESXi hosts by ESXi host name or \
             InternalIP (c1/esxi-42.example.com, c1/10.0.0.43): left unmapped"
        );
    }

    #[test]
    fn a_stale_capv_label_names_the_label_and_both_hosts() {
        let warning = Warning::StaleCapvLabel {
            node: "w2".to_string(),
            label: "esxi-2".to_string(),
            host: "esxi-1".to_string(),
        };
        assert_eq!(
            warning.to_string(),
            "node w2: node.cluster.x-k8s.io/esxi-host says esxi-2 but it runs on ESXi host \
             esxi-1 now; the scheduler places by the stale label until Cluster API resyncs it, \
             and so does this plan"
        );
    }

    #[test]
    fn an_unmeasurable_resource_names_the_strategy_and_profile() {
        let warning = Warning::UnmeasurableResource {
            strategy: PluginKind::LowNodeUtilization,
            profile: "test".to_string(),
            resource: "nvidia.com/gpu".to_string(),
        };
        assert_eq!(
            warning.to_string(),
            "LowNodeUtilization (profile test): actual usage has no nvidia.com/gpu \
             (metrics.k8s.io reports cpu and memory, pods are counted): nothing is evicted, as \
             upstream"
        );
    }

    #[test]
    fn a_rule_without_its_key_says_which_edit_it_would_be() {
        let rule = |edit| Warning::RuleWithoutKey {
            rule: "r".to_string(),
            cluster: "c1".to_string(),
            edit,
        };
        assert_eq!(
            rule(Edit::Update).to_string(),
            "DRS rule r in cluster c1 is recorded without its key: it would be updated, but a \
             change cannot address it, so none is carried out"
        );
        assert!(
            rule(Edit::Delete)
                .to_string()
                .contains("it would be deleted, but")
        );
    }

    /// The sentences the report has always carried, word for word, for the kinds no golden
    /// report shows.
    #[test]
    fn every_other_kind_keeps_its_sentence() {
        let s = |text: &str| text.to_string();
        let cases = [
            (
                Warning::NoInventory,
                "no vSphere inventory: host labels are not refreshed and not trusted, so \
                 host-level constraints are not acted on",
            ),
            (
                Warning::TooFewReadyNodes { ready: 1 },
                "only 1 Ready node(s) selected: no pod can move, eviction strategies skipped",
            ),
            (
                Warning::HostOutsideCluster {
                    vm: s("w1"),
                    node: s("n1"),
                    host: s("esxi-9"),
                    cluster: s("c1"),
                },
                "VM w1 of node n1 runs on host \"esxi-9\", which is not in cluster c1",
            ),
            (
                Warning::UnmappedGroupNodes {
                    group: s("cp"),
                    nodes: vec![s("a"), s("b")],
                },
                "node group cp: node(s) a, b match no vSphere VM, so no DRS rule keeps them apart",
            ),
            (
                Warning::ForeignRule {
                    rule: s("r"),
                    cluster: s("c1"),
                    subject: s("db/StatefulSet/pg"),
                },
                "DRS rule r in cluster c1 is not a user-created VM-VM anti-affinity rule: it is \
                 left alone, and no rule keeps the VMs of db/StatefulSet/pg apart",
            ),
            (
                Warning::RuleDisabled {
                    rule: s("r"),
                    cluster: s("c1"),
                },
                "DRS rule r in cluster c1 is disabled by vCenter (a conflicting rule?): it is not \
                 enforced, and is left as it is",
            ),
            (
                Warning::DrsDisabled {
                    cluster: s("c1"),
                    rules: 2,
                },
                "DRS is disabled on cluster c1: its 2 new or changed rule(s) will not be enforced",
            ),
            (
                Warning::DrsNotFullyAutomated {
                    cluster: s("c1"),
                    behavior: DrsBehavior::Manual,
                },
                "DRS on cluster c1 is manual: its rules yield recommendations, not moves",
            ),
            (
                Warning::VmDrsOverride {
                    vm: s("w1"),
                    behavior: DrsBehavior::PartiallyAutomated,
                },
                "VM w1 has a DRS override (partiallyAutomated): DRS may not move it to satisfy \
                 its rules",
            ),
            (
                Warning::NoNodeMetrics {
                    strategy: PluginKind::HighNodeUtilization,
                    profile: s("p"),
                    nodes: vec![s("a"), s("b")],
                },
                "HighNodeUtilization (profile p): no metrics.k8s.io NodeMetrics for node(s) a, b: \
                 they are neither sources nor destinations",
            ),
        ];
        for (warning, sentence) in cases {
            assert_eq!(warning.to_string(), sentence);
        }
    }

    #[test]
    fn warnings_serialize_as_their_sentence() {
        let json = serde_json::to_value([Warning::NoClusterName]).expect("serializes");
        assert_eq!(
            json,
            serde_json::json!(["DRS rule sync is on but no clusterName is set: no rules planned"])
        );
    }
}
