//! What the topology source (`vsphere.source`) changes in planning: why nodes are unmapped, as
//! the source can tell. Label writes (none with `node-label`) are decided where labels are
//! refreshed, DRS writes (none without vCenter) where the batches are cut.

use crate::plan::model::warning::Warning;
use crate::policy::{SourceKind, VsphereSettings};

/// Why the source left nodes unmapped, where it tells more than "no VM matched".
pub(in crate::plan) fn unmapped(
    settings: &VsphereSettings,
    unmapped: &[String],
) -> Option<Warning> {
    if unmapped.is_empty() {
        return None;
    }
    let nodes = unmapped.to_vec();
    match settings.source {
        SourceKind::Vcenter => None,
        SourceKind::Supervisor => Some(Warning::NodesWithoutVirtualMachine { nodes }),
        SourceKind::NodeLabel => Some(Warning::NodesWithoutSourceLabel {
            key: settings.node_label.key.clone(),
            nodes,
        }),
    }
}

#[cfg(test)]
mod tests {
    use crate::outcome::NotAttempted;
    use crate::plan::testing::*;
    use crate::plan::vsphere::drs_batch::Settled;
    use crate::plan::{DrsAction, MappedBy, Warning, plan};
    use crate::policy::{CAPV_HOST_LABEL, SourceKind};
    use crate::topology;

    /// Three guest nodes labelled by Cluster API, w1 and w2 on one host, w4 without the label.
    fn labelled() -> crate::snapshot::Snapshot {
        let mut snapshot = Lab::new()
            .host("esxi-1")
            .host("esxi-2")
            .host("esxi-3")
            .node("w1", "esxi-1")
            .node("w2", "esxi-1")
            .node("w3", "esxi-3")
            .node("w4", "esxi-3")
            .label("w1", CAPV_HOST_LABEL, "esxi-1")
            .label("w2", CAPV_HOST_LABEL, "esxi-1")
            .label("w3", CAPV_HOST_LABEL, "esxi-3")
            .pod(web("web-1", "w1", 30).anti_affinity(CAPV_HOST_LABEL))
            .pod(web("web-2", "w2", 20).anti_affinity(CAPV_HOST_LABEL))
            .build();
        snapshot.inventory = Some(topology::from_node_label(&snapshot.nodes, CAPV_HOST_LABEL));
        snapshot
    }

    /// A StatefulSet whose pods must not share a node, one on each of three hosts.
    fn statefulset() -> Lab {
        let member = |name: &str, node: &str| {
            pod(&format!("db/{name}"))
                .app("pg")
                .owner("StatefulSet", "pg")
                .on(node)
                .anti_affinity(HOSTNAME)
        };
        three_hosts()
            .pod(member("pg-0", "w1"))
            .pod(member("pg-1", "w2"))
            .pod(member("pg-2", "w3"))
    }

    #[test]
    fn source_node_label_plans_on_the_label_as_it_is_and_writes_no_label() {
        let mut policy = policy(vec![anti_affinity()]);
        policy.vsphere.source = SourceKind::NodeLabel;
        let plan = plan(&labelled(), &policy);
        assert_eq!(evicted(&plan), ["shop/web-2"]);
        assert!(plan.label_changes.is_empty(), "{:?}", plan.label_changes);
        assert!(plan.label_applies.is_empty(), "{:?}", plan.label_applies);
        assert!(
            plan.mapped_nodes
                .iter()
                .all(|mapped| mapped.mapped_by == MappedBy::NodeLabel),
            "{:?}",
            plan.mapped_nodes
        );
        assert_eq!(plan.unmapped_nodes, ["w4"]);
        assert!(
            plan.warnings.contains(&Warning::NodesWithoutSourceLabel {
                key: CAPV_HOST_LABEL.to_string(),
                nodes: vec!["w4".to_string()],
            }),
            "{:?}",
            plan.warnings
        );
    }

    #[test]
    fn without_a_vcenter_account_each_drs_rule_is_named_and_none_is_written() {
        let mut policy = policy(vec![anti_affinity()]);
        policy.vsphere.source = SourceKind::Supervisor;
        let plan = plan(&statefulset().build(), &policy);
        assert!(!plan.drs_rules.is_empty());
        assert!(
            plan.drs_rules
                .iter()
                .all(|rule| rule.action == DrsAction::Create)
        );
        for batch in &plan.drs_batches {
            assert_eq!(batch.writes, None);
            assert!(
                batch
                    .settled
                    .iter()
                    .all(|(_, settled)| *settled
                        == Settled::NoVcenterAccount(SourceKind::Supervisor))
            );
        }
        let warnings: Vec<String> = plan
            .warnings
            .iter()
            .filter(|w| matches!(w, Warning::DrsRulesNeedVcenter { .. }))
            .map(ToString::to_string)
            .collect();
        let [warning] = warnings.as_slice() else {
            panic!("one warning: {:?}", plan.warnings);
        };
        let rule = &plan.drs_rules[0];
        assert!(
            warning.starts_with(&format!(
                "source supervisor: no vCenter account, so no DRS rule is written; with one, this \
                 plan would create rule {} keeping the node VMs of db/StatefulSet/pg apart (w1, \
                 w2, w3)",
                rule.name
            )),
            "{warning}"
        );
        assert_eq!(
            NotAttempted::NoVcenterAccount(SourceKind::Supervisor).to_string(),
            "source supervisor: no vCenter account"
        );
    }

    #[test]
    fn with_vcenter_the_same_plan_writes_its_rules() {
        let plan = plan(&statefulset().build(), &policy(vec![anti_affinity()]));
        assert!(plan.drs_batches.iter().all(|batch| batch.writes.is_some()));
        assert!(
            !plan
                .warnings
                .iter()
                .any(|w| matches!(w, Warning::DrsRulesNeedVcenter { .. }))
        );
    }
}
