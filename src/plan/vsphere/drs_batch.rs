//! The plan's DRS rule changes as vCenter takes them: one reconfiguration per vSphere cluster,
//! each write addressed by the managed object ids it needs. Whether a change can be written at
//! all is decided here, once, so whoever carries the batches out only sends them.

use crate::plan::model::drs_change::{DrsAction, DrsRuleChange};
use crate::plan::model::warning::{UnwritableRule, Warning};
use crate::policy::SourceKind;

/// The changes of one vSphere cluster, by index into `Plan::drs_rules`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DrsBatch {
    /// The cluster as reports name it.
    pub cluster: String,
    /// The reconfiguration to send, when some change needs writing and can be addressed.
    pub writes: Option<ClusterWrites>,
    /// The changes that need no write or cannot have one.
    pub settled: Vec<(usize, Settled)>,
}

/// One reconfiguration of a cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterWrites {
    /// The cluster's managed object id, which the reconfiguration is addressed to.
    pub cluster_id: String,
    /// In plan order; never empty.
    pub changes: Vec<(usize, RuleWrite)>,
}

/// A rule change as vCenter's `ClusterConfigSpecEx` states it: VMs by managed object id, rules
/// by key. It is also what the vSphere client sends (`vsphere::VcenterClient::apply_rule_changes`),
/// so the executor hands it over as planned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuleWrite {
    Add {
        name: String,
        vms: Vec<String>,
    },
    /// Replaces the rule with this key. vcsim matches edits by name, so the name is kept; the
    /// rule's `ruleUuid` is resent, which an edit without it drops.
    Edit {
        key: i32,
        name: String,
        rule_uuid: Option<String>,
        vms: Vec<String>,
    },
    Remove {
        key: i32,
    },
}

/// A change that is not written, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settled {
    /// `keep`: the rule is as wanted.
    Keep,
    /// No rule key (the plan warned about it).
    Unaddressable,
    /// The inventory it was planned on has no managed object ids for the cluster or its VMs
    /// (a snapshot file may lack them; a run's own observation always has them).
    Unidentified,
    /// The hosts come from a source without a vCenter account, through which alone DRS rules
    /// are written.
    NoVcenterAccount(SourceKind),
}

/// The warning, once, that names every rule the plan would write with a vCenter account, when
/// its source has none.
pub fn unwritable(rules: &[DrsRuleChange], source: SourceKind) -> Option<Warning> {
    if source.writes_drs_rules() {
        return None;
    }
    let rules: Vec<UnwritableRule> = rules
        .iter()
        .filter(|rule| !matches!(rule.action, DrsAction::Keep { .. }))
        .map(|rule| UnwritableRule {
            rule: rule.name.clone(),
            action: rule.action,
            subject: subject(rule),
            vms: rule.vms.clone(),
        })
        .collect();
    (!rules.is_empty()).then_some(Warning::DrsRulesNeedVcenter { source, rules })
}

/// What a rule keeps apart, as the warning names it.
fn subject(rule: &DrsRuleChange) -> String {
    match (&rule.workload, &rule.node_group) {
        (Some(workload), _) => format!("the node VMs of {workload}"),
        (None, Some(group)) => format!("the VMs of node group {group}"),
        (None, None) => "its VMs".to_string(),
    }
}

/// The batches of `rules`, one per cluster, in the order of the clusters' report names.
pub fn batches(rules: &[DrsRuleChange], source: SourceKind) -> Vec<DrsBatch> {
    let mut clusters: Vec<(&str, Option<&str>)> = rules
        .iter()
        .map(|rule| (rule.cluster.as_str(), rule.cluster_id.as_deref()))
        .collect();
    clusters.sort_unstable();
    clusters.dedup();
    clusters
        .into_iter()
        .map(|(cluster, cluster_id)| batch(rules, cluster, cluster_id, source))
        .collect()
}

/// The batch of the rules of `cluster` (with `cluster_id`).
fn batch(
    rules: &[DrsRuleChange],
    cluster: &str,
    cluster_id: Option<&str>,
    source: SourceKind,
) -> DrsBatch {
    let mut changes = Vec::new();
    let mut settled = Vec::new();
    let own = rules
        .iter()
        .enumerate()
        .filter(|(_, rule)| rule.cluster == cluster && rule.cluster_id.as_deref() == cluster_id);
    for (index, rule) in own {
        if !source.writes_drs_rules() {
            settled.push((index, Settled::NoVcenterAccount(source)));
            continue;
        }
        match write(rule) {
            Ok(change) => changes.push((index, change)),
            Err(why) => settled.push((index, why)),
        }
    }
    let writes = cluster_id
        .filter(|_| !changes.is_empty())
        .map(|cluster_id| ClusterWrites {
            cluster_id: cluster_id.to_string(),
            changes,
        });
    DrsBatch {
        cluster: cluster.to_string(),
        writes,
        settled,
    }
}

/// The write that carries `rule` out, or why there is none.
fn write(rule: &DrsRuleChange) -> Result<RuleWrite, Settled> {
    if rule.cluster_id.is_none() {
        return match rule.action {
            DrsAction::Keep { .. } => Err(Settled::Keep),
            DrsAction::Unaddressable(_) => Err(Settled::Unaddressable),
            _ => Err(Settled::Unidentified),
        };
    }
    let vms = || rule.vm_ids.clone().ok_or(Settled::Unidentified);
    match rule.action {
        DrsAction::Keep { .. } => Err(Settled::Keep),
        DrsAction::Unaddressable(_) => Err(Settled::Unaddressable),
        DrsAction::Create => Ok(RuleWrite::Add {
            name: rule.name.clone(),
            vms: vms()?,
        }),
        DrsAction::Update { key } => Ok(RuleWrite::Edit {
            key,
            name: rule.name.clone(),
            rule_uuid: rule.rule_uuid.clone(),
            vms: vms()?,
        }),
        // A removal needs only the key.
        DrsAction::Delete { key } => Ok(RuleWrite::Remove { key }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(
        cluster_id: Option<&str>,
        action: DrsAction,
        vm_ids: Option<&[&str]>,
    ) -> DrsRuleChange {
        DrsRuleChange {
            cluster: "dc-east/Cluster".to_string(),
            cluster_id: cluster_id.map(str::to_string),
            name: "vsphere-descheduler:lab:db:StatefulSet/pg".to_string(),
            action,
            vms: vec!["k8s-worker-1".to_string(), "k8s-worker-2".to_string()],
            vm_ids: vm_ids.map(|ids| ids.iter().map(|id| id.to_string()).collect()),
            rule_uuid: Some("uuid-7".to_string()),
            workload: None,
            node_group: None,
        }
    }

    const IDS: Option<&[&str]> = Some(&["vm-20", "vm-21"]);

    #[test]
    fn rule_writes_address_vms_by_id_and_resend_the_rule_uuid() {
        assert_eq!(
            write(&change(
                Some("domain-c7"),
                DrsAction::Update { key: 7 },
                IDS
            )),
            Ok(RuleWrite::Edit {
                key: 7,
                name: "vsphere-descheduler:lab:db:StatefulSet/pg".to_string(),
                rule_uuid: Some("uuid-7".to_string()),
                vms: vec!["vm-20".to_string(), "vm-21".to_string()],
            })
        );
        assert_eq!(
            write(&change(
                Some("domain-c7"),
                DrsAction::Delete { key: 7 },
                None
            )),
            Ok(RuleWrite::Remove { key: 7 }),
            "a removal needs only the key"
        );
        assert_eq!(
            write(&change(
                Some("domain-c7"),
                DrsAction::Keep { key: Some(7) },
                IDS
            )),
            Err(Settled::Keep)
        );
    }

    #[test]
    fn a_change_planned_without_ids_is_unidentified() {
        for action in [DrsAction::Create, DrsAction::Update { key: 7 }] {
            assert_eq!(
                write(&change(Some("domain-c7"), action, None)),
                Err(Settled::Unidentified)
            );
        }
        assert_eq!(
            write(&change(None, DrsAction::Delete { key: 7 }, IDS)),
            Err(Settled::Unidentified),
            "the cluster's id addresses the reconfiguration"
        );
    }

    #[test]
    fn one_batch_per_cluster_holds_its_writes_and_what_is_settled() {
        let mut other = change(Some("domain-c9"), DrsAction::Create, IDS);
        other.cluster = "dc-west/Cluster".to_string();
        let rules = [
            change(Some("domain-c7"), DrsAction::Create, IDS),
            other,
            change(Some("domain-c7"), DrsAction::Keep { key: Some(3) }, IDS),
            change(Some("domain-c7"), DrsAction::Delete { key: 4 }, None),
        ];
        let batches = batches(&rules, SourceKind::Vcenter);
        assert_eq!(batches.len(), 2);
        assert_eq!(batches[0].cluster, "dc-east/Cluster");
        let writes = batches[0].writes.as_ref().expect("writes");
        assert_eq!(writes.cluster_id, "domain-c7");
        let indices: Vec<usize> = writes.changes.iter().map(|(index, _)| *index).collect();
        assert_eq!(indices, [0, 3]);
        assert_eq!(batches[0].settled, [(2, Settled::Keep)]);
        assert_eq!(batches[1].cluster, "dc-west/Cluster");
    }

    #[test]
    fn a_cluster_with_nothing_to_write_sends_no_reconfiguration() {
        let rules = [
            change(Some("domain-c7"), DrsAction::Keep { key: Some(3) }, IDS),
            change(
                None,
                DrsAction::Unaddressable(crate::plan::model::drs_change::Edit::Delete),
                None,
            ),
        ];
        let batches = batches(&rules, SourceKind::Vcenter);
        assert!(batches.iter().all(|batch| batch.writes.is_none()));
    }
}
