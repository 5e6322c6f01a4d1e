//! DRS rules: for each workload whose pods must not share a host, one VM-VM anti-affinity rule
//! over the node VMs that run them (after the planned evictions), per vSphere cluster, so DRS
//! never undoes the spread.
//!
//! Ownership is by name: `<namePrefix>:<clusterName>:<namespace>:<Kind>/<name>`. Only rules
//! under this run's `<namePrefix>:<clusterName>:` are ever updated or deleted, and only if they
//! are user-created VM-VM anti-affinity rules; user rules, system rules and other Kubernetes
//! clusters' rules are left alone.
//!
//! Identity is by managed object id: clusters are told apart by their position in the inventory
//! (names repeat across datacenters), and each change carries the cluster's and its VMs' ids, by
//! which vCenter addresses them.

use std::collections::{BTreeMap, BTreeSet};

use crate::hash::{HashMap, HashSet};
use crate::inventory::{Cluster, DrsBehavior, DrsRule, RuleKind, Vm};
pub use crate::plan::model::drs_change::{DrsAction, DrsRuleChange, Edit};
use crate::plan::model::warning::Warning;
pub use crate::plan::model::workload::{Workload, workload};
use crate::plan::view::{PodState, View};
use crate::plan::vocabulary::Plan;
use crate::plan::vsphere::labels::fnv1a32;

/// vCenter rejects longer rule names.
const MAX_RULE_NAME: usize = 80;

/// The owned rule name for a workload, shortened with a hash past 80 characters.
pub fn rule_name(
    prefix: &str,
    cluster_name: &str,
    namespace: &str,
    kind: &str,
    name: &str,
) -> String {
    shortened(format!("{prefix}:{cluster_name}:{namespace}:{kind}/{name}"))
}

/// The owned rule name for a node group, `<prefix>:<clusterName>:nodes:<group>`. It never equals
/// a workload's: those end in `<Kind>/<name>`, and group names hold no `/`.
pub fn node_group_rule_name(prefix: &str, cluster_name: &str, group: &str) -> String {
    shortened(format!("{prefix}:{cluster_name}:nodes:{group}"))
}

/// `full` if vCenter takes it, else cut and ended with a hash of the whole, so two long names
/// stay distinct.
fn shortened(full: String) -> String {
    if full.len() <= MAX_RULE_NAME {
        return full;
    }
    let hash = format!("~{:08x}", fnv1a32(full.as_bytes()));
    let mut cut = MAX_RULE_NAME - hash.len();
    while !full.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{hash}", &full[..cut])
}

/// Desired rules, diffed against the inventory's, appended to the plan.
pub fn plan_rules(view: &View, plan: &mut Plan) {
    let settings = &view.policy.vsphere.drs_rules;
    let Some(inventory) = &view.snapshot.inventory else {
        return;
    };
    if !settings.enabled {
        return;
    }
    let Some(cluster_name) = &view.policy.cluster_name else {
        plan.warnings.push(Warning::NoClusterName);
        return;
    };
    let owned_prefix = format!("{}:{cluster_name}:", settings.name_prefix);
    let wanted = wanted_workloads(view);
    let mut members = workload_vms(view, &wanted);
    members.extend(node_group_vms(view, plan));

    let cluster_names = inventory.cluster_names();
    let mut desired: BTreeMap<(usize, String), Desired> = BTreeMap::new();
    for ((cluster, subject), vms) in members {
        if vms.len() < 2 {
            continue;
        }
        let usable = inventory.clusters[cluster]
            .hosts
            .iter()
            .filter(|h| h.is_usable())
            .count();
        if vms.len() > usable {
            plan.warnings.push(Warning::UnsatisfiableRule {
                subject: subject.display(),
                vms: vms.len(),
                cluster: cluster_names[cluster].to_string(),
                usable,
            });
            continue;
        }
        let name = subject.rule_name(&settings.name_prefix, cluster_name);
        desired.insert((cluster, name), Desired { subject, vms });
    }

    for (index, cluster) in inventory.clusters.iter().enumerate() {
        let target = Target {
            cluster,
            name: &cluster_names[index],
        };
        let wanted = desired
            .range((index, String::new())..(index + 1, String::new()))
            .map(|((_, name), rule)| (name.as_str(), rule));
        let changes = diff_cluster(&target, &owned_prefix, wanted, plan);
        enforcement_warnings(&target, &changes, plan);
        plan.drs_rules.extend(changes);
    }
}

/// The VMs each rule keeps apart, per cluster (by position in the inventory: names repeat).
type Members<'a> = BTreeMap<(usize, Subject<'a>), BTreeSet<VmRef<'a>>>;

/// Workloads whose pods exclude each other on a host-level key, by controller uid (so the pass
/// over every pod does not build names).
fn wanted_workloads<'a>(view: &View<'a>) -> HashMap<&'a str, Workload> {
    let settings = &view.policy.vsphere.drs_rules;
    let mut wanted: HashMap<&str, Workload> = HashMap::default();
    for (index, pod) in view.pods() {
        if view.state[index] != PodState::Active || pod.anti_affinity.is_empty() {
            continue;
        }
        let Some(owner) = pod.controller() else {
            continue;
        };
        if wanted.contains_key(owner.uid.as_ref()) {
            // Already wanted: its other replicas cannot change that.
            continue;
        }
        let keeps_apart = pod.anti_affinity.iter().any(|term| {
            settings.topology_keys.contains(&term.topology_key)
                && view.term_selects(index, term, index)
        });
        if keeps_apart && let Some(workload) = workload(pod) {
            wanted.insert(owner.uid.as_ref(), workload);
        }
    }
    wanted
}

/// The VMs the wanted workloads' pods run on after the planned evictions. Keyed by workload,
/// not controller: two ReplicaSets of a Deployment mid-rollout share one rule.
fn workload_vms<'a>(view: &View<'a>, wanted: &'a HashMap<&str, Workload>) -> Members<'a> {
    let mut members = Members::new();
    for (index, pod) in view.pods() {
        if view.state[index] != PodState::Active {
            continue;
        }
        let Some(workload) = pod.controller().and_then(|o| wanted.get(o.uid.as_ref())) else {
            continue;
        };
        // A node that is an ESXi host has no VM for DRS to keep apart.
        let placement = view.pod_node[index].and_then(|n| view.nodes[n].placement.as_ref());
        if let Some(placement) = placement
            && let Some(vm) = placement.vm
        {
            members
                .entry((placement.cluster_index, Subject::Workload(workload)))
                .or_default()
                .insert(VmRef::of(vm));
        }
    }
    members
}

/// The VMs of each node group's nodes; nodes of a group that map to no VM are named in a
/// warning, as no rule can hold them.
fn node_group_vms<'a>(view: &View<'a>, plan: &mut Plan) -> Members<'a> {
    let mut members = Members::new();
    for group in &view.policy.vsphere.drs_rules.node_groups {
        let mut unmapped = Vec::new();
        for node in &view.nodes {
            if !group.node_selector.matches(&node.labels) {
                continue;
            }
            match &node.placement {
                Some(placement) => {
                    // A node that is an ESXi host has no VM for DRS to keep apart.
                    if let Some(vm) = placement.vm {
                        members
                            .entry((placement.cluster_index, Subject::NodeGroup(&group.name)))
                            .or_default()
                            .insert(VmRef::of(vm));
                    }
                }
                None => unmapped.push(node.node.name.as_str()),
            }
        }
        if !unmapped.is_empty() && view.snapshot.inventory.is_some() {
            plan.warnings.push(Warning::UnmappedGroupNodes {
                group: group.name.clone(),
                nodes: unmapped.iter().map(|n| n.to_string()).collect(),
            });
        }
    }
    members
}

/// What a rule keeps apart: the pods of a workload, or the nodes of a node group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Subject<'a> {
    Workload(&'a Workload),
    NodeGroup(&'a str),
}

impl Subject<'_> {
    /// How warnings name it.
    fn display(&self) -> String {
        match self {
            Subject::Workload(workload) => workload.display(),
            Subject::NodeGroup(name) => format!("node group {name}"),
        }
    }

    fn rule_name(&self, prefix: &str, cluster_name: &str) -> String {
        match self {
            Subject::Workload(w) => rule_name(prefix, cluster_name, &w.namespace, &w.kind, &w.name),
            Subject::NodeGroup(name) => node_group_rule_name(prefix, cluster_name, name),
        }
    }
}

/// A VM in a desired rule: its name, and its id where the inventory has one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct VmRef<'a> {
    name: &'a str,
    id: Option<&'a str>,
}

impl<'a> VmRef<'a> {
    fn of(vm: &'a Vm) -> VmRef<'a> {
        VmRef {
            name: &vm.name,
            id: vm.id.as_deref(),
        }
    }
}

/// The rule one workload or node group needs in one cluster.
struct Desired<'a> {
    subject: Subject<'a>,
    vms: BTreeSet<VmRef<'a>>,
}

/// The cluster whose rules are diffed, and how the report names it.
struct Target<'a> {
    cluster: &'a Cluster,
    name: &'a str,
}

impl Target<'_> {
    fn change(&self, name: &str, action: DrsAction, vms: Vec<String>) -> DrsRuleChange {
        DrsRuleChange {
            cluster: self.name.to_string(),
            cluster_id: self.cluster.id.clone(),
            name: name.to_string(),
            action,
            vms,
            vm_ids: None,
            rule_uuid: None,
            workload: None,
            node_group: None,
        }
    }
}

/// The changes that bring one cluster's owned rules to the desired ones, sorted by rule name.
fn diff_cluster<'a>(
    target: &Target<'_>,
    owned_prefix: &str,
    desired: impl Iterator<Item = (&'a str, &'a Desired<'a>)>,
    plan: &mut Plan,
) -> Vec<DrsRuleChange> {
    let cluster = target.cluster;
    // Only user-created VM-VM anti-affinity rules under our prefix are ours to edit or delete.
    let owned: Vec<&DrsRule> = cluster
        .rules
        .iter()
        .filter(|r| r.name.starts_with(owned_prefix) && is_ours(r))
        .collect();
    // Looked up by name; of two owned rules with one name, the first is the one kept or
    // edited.
    let mut owned_by_name: HashMap<&str, &DrsRule> = HashMap::default();
    for rule in &owned {
        owned_by_name.entry(rule.name.as_str()).or_insert(rule);
    }
    let mut changes = Vec::new();
    let mut kept = HashSet::default();
    for (name, wanted) in desired {
        kept.insert(name);
        if cluster.rules.iter().any(|r| r.name == name && !is_ours(r)) {
            plan.warnings.push(Warning::ForeignRule {
                rule: name.to_string(),
                cluster: target.name.to_string(),
                subject: wanted.subject.display(),
            });
            continue;
        }
        let existing = owned_by_name.get(name).copied();
        let mut change = desired_change(target, name, wanted, existing, plan);
        match wanted.subject {
            Subject::Workload(workload) => change.workload = Some(workload.display()),
            Subject::NodeGroup(group) => change.node_group = Some(group.to_string()),
        }
        changes.push(change);
    }
    for rule in owned {
        if kept.contains(rule.name.as_str()) {
            continue;
        }
        let action = match rule.key {
            Some(key) => DrsAction::Delete { key },
            None => {
                plan.warnings
                    .push(without_key(rule, target.name, Edit::Delete));
                DrsAction::Unaddressable(Edit::Delete)
            }
        };
        changes.push(target.change(&rule.name, action, rule.vms.clone()));
    }
    changes.sort_by(|a, b| a.name.cmp(&b.name));
    changes
}

/// A rule this tool may edit or delete, given our name: user-created and VM-VM anti-affinity.
fn is_ours(rule: &DrsRule) -> bool {
    rule.user_created && rule.kind == RuleKind::AntiAffinity
}

/// Create, keep or update the rule `name` so that it holds the desired VMs.
fn desired_change(
    target: &Target<'_>,
    name: &str,
    wanted: &Desired<'_>,
    existing: Option<&DrsRule>,
    plan: &mut Plan,
) -> DrsRuleChange {
    let names: Vec<String> = wanted.vms.iter().map(|vm| vm.name.to_string()).collect();
    let ids: Option<Vec<String>> = wanted
        .vms
        .iter()
        .map(|vm| vm.id.map(str::to_string))
        .collect();
    let action = match existing {
        None => DrsAction::Create,
        Some(rule) => {
            let same = holds_exactly(rule, &wanted.vms);
            if same && !rule.enabled {
                plan.warnings.push(Warning::RuleDisabled {
                    rule: name.to_string(),
                    cluster: target.name.to_string(),
                });
            }
            match (same, rule.key) {
                (true, key) => DrsAction::Keep { key },
                (false, Some(key)) => DrsAction::Update { key },
                (false, None) => {
                    plan.warnings
                        .push(without_key(rule, target.name, Edit::Update));
                    DrsAction::Unaddressable(Edit::Update)
                }
            }
        }
    };
    let mut change = target.change(name, action, names);
    change.vm_ids = ids;
    change.rule_uuid = existing.and_then(|rule| rule.uuid.clone());
    change
}

/// Whether a rule's members are exactly `vms`: by id where the rule and every VM have one
/// (names repeat across VM folders), else by name.
fn holds_exactly(rule: &DrsRule, vms: &BTreeSet<VmRef<'_>>) -> bool {
    let ids: Option<BTreeSet<&str>> = vms.iter().map(|vm| vm.id).collect();
    match ids {
        Some(ids) if !rule.vm_ids.is_empty() => {
            rule.vm_ids
                .iter()
                .map(String::as_str)
                .collect::<BTreeSet<_>>()
                == ids
        }
        _ => {
            rule.vms.iter().map(String::as_str).collect::<BTreeSet<_>>()
                == vms.iter().map(|vm| vm.name).collect()
        }
    }
}

/// An owned rule needs a change that can only address it by key, and the inventory has none.
fn without_key(rule: &DrsRule, cluster: &str, edit: Edit) -> Warning {
    Warning::RuleWithoutKey {
        rule: rule.name.clone(),
        cluster: cluster.to_string(),
        edit,
    }
}

/// Warn when DRS will not act on the rules it is given: once per cluster for its DRS
/// settings, once per node VM with an override.
fn enforcement_warnings(target: &Target<'_>, changes: &[DrsRuleChange], plan: &mut Plan) {
    let acting: Vec<&DrsRuleChange> = changes
        .iter()
        .filter(|c| c.action.is_create_or_update())
        .collect();
    if acting.is_empty() {
        return;
    }
    let cluster = target.cluster;
    if let Some(drs) = &cluster.drs {
        if !drs.enabled {
            plan.warnings.push(Warning::DrsDisabled {
                cluster: target.name.to_string(),
                rules: acting.len(),
            });
        } else if drs.default_vm_behavior != DrsBehavior::FullyAutomated {
            plan.warnings.push(Warning::DrsNotFullyAutomated {
                cluster: target.name.to_string(),
                behavior: drs.default_vm_behavior.clone(),
            });
        }
    }
    // By id where known: two VMs of one name may be in the cluster, one of them in no rule.
    let in_rules: HashSet<&str> = acting
        .iter()
        .flat_map(|c| c.vm_ids.as_deref().unwrap_or(&c.vms))
        .map(String::as_str)
        .collect();
    for vm in &cluster.vms {
        if let Some(behavior) = vm
            .drs_behavior
            .as_ref()
            .filter(|b| **b != DrsBehavior::FullyAutomated)
            && in_rules.contains(vm.id.as_deref().unwrap_or(&vm.name))
        {
            plan.warnings.push(Warning::VmDrsOverride {
                vm: vm.name.clone(),
                behavior: behavior.clone(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{DrsAction, DrsRuleChange, Edit, Warning, rule_name};
    use crate::inventory::{DrsBehavior, DrsRule, MaintenanceMode, RuleKind};
    use crate::plan::plan;
    use crate::plan::testing::*;

    /// pg's replica `i`, kept apart per node, on node `w{i + 1}`.
    fn pg_replica(i: usize) -> PodBuilder {
        pod(&format!("db/pg-{i}"))
            .app("pg")
            .owner("StatefulSet", "pg")
            .on(&format!("w{}", i + 1))
            .anti_affinity(HOSTNAME)
    }

    fn pg(lab: Lab) -> Lab {
        lab.pod(pg_replica(0)).pod(pg_replica(1)).pod(pg_replica(2))
    }

    /// The first DRS rule of the snapshot's first vSphere cluster.
    fn first_rule(s: &mut crate::snapshot::Snapshot) -> &mut DrsRule {
        &mut s.inventory.as_mut().expect("inventory").clusters[0].rules[0]
    }

    fn actions(plan: &crate::plan::Plan) -> Vec<(String, DrsAction, Vec<String>)> {
        plan.drs_rules
            .iter()
            .map(|r| (r.name.clone(), r.action, r.vms.clone()))
            .collect()
    }

    const PG_RULE: &str = "vsphere-descheduler:k8s:db:StatefulSet/pg";

    #[test]
    fn a_workload_kept_apart_per_node_gets_a_rule_over_its_vms() {
        let plan = plan(&pg(three_hosts()).build(), &policy(vec![anti_affinity()]));
        assert_eq!(
            actions(&plan),
            [(
                PG_RULE.to_string(),
                DrsAction::Create,
                vec!["w1".into(), "w2".into(), "w3".into()]
            )]
        );
    }

    #[test]
    fn of_two_owned_rules_with_one_name_the_first_is_edited_and_the_other_left_alone() {
        let plan = plan(
            &pg(three_hosts())
                .rule(PG_RULE, 7, &["w1", "w2"])
                .rule(PG_RULE, 8, &["w1"])
                .build(),
            &policy(vec![]),
        );
        let changes: Vec<DrsAction> = plan.drs_rules.iter().map(|c| c.action).collect();
        assert_eq!(changes, [DrsAction::Update { key: 7 }]);
    }

    #[test]
    fn an_unchanged_rule_is_kept_and_a_changed_one_updated_by_key() {
        let kept = plan(
            &pg(three_hosts())
                .rule(PG_RULE, 7, &["w3", "w2", "w1"])
                .build(),
            &policy(vec![]),
        );
        assert_eq!(kept.drs_rules[0].action, DrsAction::Keep { key: Some(7) });
        let updated = plan(
            &pg(three_hosts()).rule(PG_RULE, 7, &["w1", "w2"]).build(),
            &policy(vec![]),
        );
        assert_eq!(updated.drs_rules[0].action, DrsAction::Update { key: 7 });
    }

    #[test]
    fn only_this_clusters_owned_rules_are_ever_deleted() {
        let snapshot = three_hosts()
            .rule(
                "vsphere-descheduler:k8s:db:StatefulSet/gone",
                1,
                &["w1", "w2"],
            )
            .rule(
                "vsphere-descheduler:other-k8s:db:StatefulSet/gone",
                2,
                &["w1", "w2"],
            )
            .rule("keep-vcenter-apart", 3, &["w1", "w2"])
            .with(|s| {
                let cluster = &mut s.inventory.as_mut().expect("inventory").clusters[0];
                cluster.rules.push(DrsRule {
                    user_created: false,
                    name: "vsphere-descheduler:k8s:system".into(),
                    ..cluster.rules[0].clone()
                });
            })
            .build();
        let plan = plan(&snapshot, &policy(vec![]));
        assert_eq!(
            actions(&plan),
            [(
                "vsphere-descheduler:k8s:db:StatefulSet/gone".to_string(),
                DrsAction::Delete { key: 1 },
                vec!["w1".into(), "w2".into()]
            )]
        );
    }

    #[test]
    fn no_rule_for_more_vms_than_usable_hosts() {
        let snapshot = pg(Lab::new()
            .host("esxi-1")
            .host("esxi-2")
            .node("w1", "esxi-1")
            .node("w2", "esxi-2")
            .node("w3", "esxi-2"))
        .build();
        let plan = plan(&snapshot, &policy(vec![]));
        assert!(plan.drs_rules.is_empty());
        assert!(
            plan.warnings
                .iter()
                .any(|w| matches!(w, Warning::UnsatisfiableRule { .. })),
            "{:?}",
            plan.warnings
        );
    }

    #[test]
    fn a_rule_vcenter_disabled_is_reported_not_fought() {
        let snapshot = pg(three_hosts())
            .rule(PG_RULE, 7, &["w1", "w2", "w3"])
            .with(|s| first_rule(s).enabled = false)
            .build();
        let plan = plan(&snapshot, &policy(vec![]));
        assert_eq!(plan.drs_rules[0].action, DrsAction::Keep { key: Some(7) });
        assert!(
            plan.warnings.contains(&Warning::RuleDisabled {
                rule: PG_RULE.to_string(),
                cluster: "c1".to_string(),
            }),
            "{:?}",
            plan.warnings
        );
    }

    #[test]
    fn deployments_are_named_after_the_deployment_not_the_replicaset() {
        let snapshot = three_hosts()
            .pod(
                pod("shop/web-1")
                    .app("web")
                    .owner("ReplicaSet", "web-5d8f7c9b6")
                    .on("w1")
                    .anti_affinity(HOST)
                    .with(|p| {
                        p.labels.insert("pod-template-hash", "5d8f7c9b6");
                    }),
            )
            .pod(
                pod("shop/web-2")
                    .app("web")
                    .owner("ReplicaSet", "web-5d8f7c9b6")
                    .on("w2")
                    .anti_affinity(HOST)
                    .with(|p| {
                        p.labels.insert("pod-template-hash", "5d8f7c9b6");
                    }),
            )
            .build();
        let plan = plan(&snapshot, &policy(vec![]));
        assert_eq!(
            plan.drs_rules[0].name,
            "vsphere-descheduler:k8s:shop:Deployment/web"
        );
    }

    #[test]
    fn drs_warnings_name_clusters_where_rules_are_not_enforced() {
        let snapshot = pg(three_hosts())
            .with(|s| {
                s.inventory.as_mut().expect("inventory").clusters[0]
                    .drs
                    .as_mut()
                    .expect("drs")
                    .default_vm_behavior = DrsBehavior::Manual
            })
            .build();
        let plan = plan(&snapshot, &policy(vec![]));
        assert!(
            plan.warnings.contains(&Warning::DrsNotFullyAutomated {
                cluster: "c1".to_string(),
                behavior: DrsBehavior::Manual,
            }),
            "{:?}",
            plan.warnings
        );
    }

    /// The inventory of a snapshot file may record owned rules without their keys.
    fn without_keys(lab: Lab) -> Lab {
        lab.with(|s| {
            for rule in &mut s.inventory.as_mut().expect("inventory").clusters[0].rules {
                rule.key = None;
            }
        })
    }

    #[test]
    fn an_owned_rule_without_a_key_is_shown_as_an_update_that_cannot_be_carried_out() {
        let snapshot = without_keys(pg(three_hosts()).rule(PG_RULE, 7, &["w1", "w2"])).build();
        let plan = plan(&snapshot, &policy(vec![]));
        assert_eq!(
            actions(&plan),
            [(
                PG_RULE.to_string(),
                DrsAction::Unaddressable(Edit::Update),
                vec!["w1".into(), "w2".into(), "w3".into()]
            )]
        );
        assert!(
            plan.warnings.contains(&Warning::RuleWithoutKey {
                rule: PG_RULE.to_string(),
                cluster: "c1".to_string(),
                edit: Edit::Update,
            }),
            "{:?}",
            plan.warnings
        );
    }

    #[test]
    fn a_stale_owned_rule_without_a_key_is_shown_as_a_delete_that_cannot_be_carried_out() {
        let gone = "vsphere-descheduler:k8s:db:StatefulSet/gone";
        let snapshot = without_keys(three_hosts().rule(gone, 1, &["w1", "w2"])).build();
        let plan = plan(&snapshot, &policy(vec![]));
        assert_eq!(
            plan.drs_rules[0].action,
            DrsAction::Unaddressable(Edit::Delete)
        );
        assert!(
            plan.warnings.contains(&Warning::RuleWithoutKey {
                rule: gone.to_string(),
                cluster: "c1".to_string(),
                edit: Edit::Delete,
            }),
            "{:?}",
            plan.warnings
        );
        // The report still says what a run would do.
        let json = serde_json::to_value(&plan.drs_rules[0]).expect("serializes");
        assert_eq!(json["action"], "delete");
        assert!(json.get("key").is_none());
    }

    #[test]
    fn an_unchanged_owned_rule_without_a_key_is_kept_without_one() {
        let snapshot =
            without_keys(pg(three_hosts()).rule(PG_RULE, 7, &["w1", "w2", "w3"])).build();
        let plan = plan(&snapshot, &policy(vec![]));
        assert_eq!(actions(&plan)[0].1, DrsAction::Keep { key: None });
        assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);
    }

    #[test]
    fn the_report_shape_keeps_action_as_a_word_and_the_key_beside_it() {
        let change = |action| DrsRuleChange {
            cluster: "c1".to_string(),
            cluster_id: None,
            vm_ids: Some(vec!["vm-1".to_string(), "vm-2".to_string()]),
            rule_uuid: None,
            node_group: None,
            name: PG_RULE.to_string(),
            action,
            vms: vec!["w1".to_string(), "w2".to_string()],
            workload: Some("db/StatefulSet/pg".to_string()),
        };
        assert_eq!(
            serde_json::to_value(change(DrsAction::Update { key: 7 })).expect("serializes"),
            serde_json::json!({
                "cluster": "c1",
                "name": PG_RULE,
                "action": "update",
                "vms": ["w1", "w2"],
                "key": 7,
                "workload": "db/StatefulSet/pg"
            })
        );
        let created = serde_json::to_value(DrsRuleChange {
            workload: None,
            ..change(DrsAction::Create)
        })
        .expect("serializes");
        assert_eq!(
            created,
            serde_json::json!({
                "cluster": "c1", "name": PG_RULE, "action": "create", "vms": ["w1", "w2"]
            })
        );
        let kept = serde_json::to_value(change(DrsAction::Keep { key: None })).expect("serializes");
        assert_eq!(kept["action"], "keep");
        assert!(kept.get("key").is_none());
    }

    /// Two clusters named c1, in datacenters dc1 and dc2: pg's replicas on w1..w3 in dc1 (three
    /// usable hosts), and on w4, w5 in dc2, whose second host is in maintenance.
    fn twin_clusters() -> Lab {
        let lab = pg(three_hosts()
            .host("esxi-4")
            .host("esxi-5")
            .node("w4", "esxi-4")
            .node("w5", "esxi-5"))
        .pod(pg_replica(3))
        .pod(pg_replica(4));
        lab.with(|s| {
            let clusters = &mut s.inventory.as_mut().expect("inventory").clusters;
            let mut second = clusters[0].clone();
            second.id = Some("domain-c2".into());
            second.datacenter = "dc2".into();
            second.datacenter_id = Some("datacenter-2".into());
            second
                .hosts
                .retain(|h| ["esxi-4", "esxi-5"].contains(&h.name.as_str()));
            second.hosts[1].in_maintenance_mode = MaintenanceMode::On;
            second
                .vms
                .retain(|vm| ["w4", "w5"].contains(&vm.name.as_str()));
            clusters[0].hosts.retain(|h| !second.hosts.contains(h));
            clusters[0]
                .vms
                .retain(|vm| !second.vms.iter().any(|v| v.name == vm.name));
            clusters.push(second);
        })
    }

    #[test]
    fn clusters_of_one_name_in_two_datacenters_are_planned_apart() {
        let plan = plan(&twin_clusters().build(), &policy(vec![]));
        let changes: Vec<(&str, Option<&str>, &[String])> = plan
            .drs_rules
            .iter()
            .map(|c| {
                (
                    c.cluster.as_str(),
                    c.cluster_id.as_deref(),
                    c.vms.as_slice(),
                )
            })
            .collect();
        let dc1 = ["w1".to_string(), "w2".to_string(), "w3".to_string()];
        // dc2/c1 has one usable host for two VMs: no rule there, and its hosts did not count
        // for dc1/c1 (nor dc1's for it).
        assert_eq!(changes, [("dc1/c1", Some("domain-c1"), &dc1[..])]);
        assert_eq!(
            plan.drs_rules[0].vm_ids,
            Some(vec![vm_id("w1"), vm_id("w2"), vm_id("w3")])
        );
        assert!(
            plan.warnings.iter().any(|w| matches!(
                w,
                Warning::UnsatisfiableRule { vms: 2, cluster, usable: 1, .. } if cluster == "dc2/c1"
            )),
            "{:?}",
            plan.warnings
        );
        let json = serde_json::to_value(&plan.drs_rules[0]).expect("serializes");
        assert_eq!(json["cluster"], "dc1/c1");
        assert_eq!(json["clusterId"], "domain-c1");
        assert!(
            json.get("vmIds").is_none(),
            "VM ids are the executor's, not the report's"
        );
    }

    #[test]
    fn each_clusters_owned_rule_is_kept_by_its_own_key() {
        let snapshot = twin_clusters()
            .with(|s| {
                let clusters = &mut s.inventory.as_mut().expect("inventory").clusters;
                // Both clusters hold the rule; only dc2's is stale (its workload cannot have one).
                clusters[1].hosts[1].in_maintenance_mode = MaintenanceMode::Off;
                clusters[1].rules.push(DrsRule {
                    name: PG_RULE.into(),
                    key: Some(9),
                    kind: RuleKind::AntiAffinity,
                    enabled: true,
                    mandatory: false,
                    user_created: true,
                    uuid: Some("uuid-9".into()),
                    vms: vec!["w4".into(), "w5".into()],
                    vm_ids: vec![vm_id("w4"), vm_id("w5")],
                });
            })
            .rule(PG_RULE, 7, &["w1", "w2", "w3"])
            .build();
        let plan = plan(&snapshot, &policy(vec![]));
        let changes: Vec<(&str, DrsAction)> = plan
            .drs_rules
            .iter()
            .map(|c| (c.cluster.as_str(), c.action))
            .collect();
        assert_eq!(
            changes,
            [
                ("dc1/c1", DrsAction::Keep { key: Some(7) }),
                ("dc2/c1", DrsAction::Keep { key: Some(9) })
            ]
        );
    }

    #[test]
    fn membership_is_compared_by_vm_id_where_names_repeat() {
        // The rule names w1..w3, but its w3 is another VM of that name (another folder).
        let snapshot = pg(three_hosts())
            .rule(PG_RULE, 7, &["w1", "w2", "w3"])
            .with(|s| first_rule(s).vm_ids[2] = "vm-1077".into())
            .build();
        let plan = plan(&snapshot, &policy(vec![]));
        assert_eq!(plan.drs_rules[0].action, DrsAction::Update { key: 7 });
        assert_eq!(plan.drs_rules[0].rule_uuid.as_deref(), Some("uuid-7"));
    }

    #[test]
    fn without_ids_membership_is_compared_by_name_and_nothing_is_addressable() {
        let snapshot = pg(three_hosts())
            .rule(PG_RULE, 7, &["w1", "w2", "w3"])
            .host("esxi-4")
            .node("w4", "esxi-4")
            .pod(pg_replica(3))
            .with(|s| {
                let cluster = &mut s.inventory.as_mut().expect("inventory").clusters[0];
                cluster.id = None;
                for vm in &mut cluster.vms {
                    vm.id = None;
                }
                cluster.rules[0].vm_ids.clear();
            })
            .build();
        let plan = plan(&snapshot, &policy(vec![]));
        let change = &plan.drs_rules[0];
        assert_eq!(change.action, DrsAction::Update { key: 7 });
        assert_eq!(
            (change.cluster.as_str(), change.cluster_id.as_deref()),
            ("c1", None)
        );
        assert_eq!(change.vm_ids, None);
    }

    /// pg's wanted rule is there, made not ours by `foreign`: left alone, with a warning.
    fn assert_foreign_rule_left_alone(foreign: fn(&mut DrsRule)) {
        let snapshot = pg(three_hosts())
            .rule(PG_RULE, 7, &["w1", "w2"])
            .with(|s| foreign(first_rule(s)))
            .build();
        let plan = plan(&snapshot, &policy(vec![]));
        assert!(plan.drs_rules.is_empty(), "{:?}", plan.drs_rules);
        assert!(
            plan.warnings.contains(&Warning::ForeignRule {
                rule: PG_RULE.to_string(),
                cluster: "c1".to_string(),
                subject: "db/StatefulSet/pg".to_string(),
            }),
            "{:?}",
            plan.warnings
        );
    }

    #[test]
    fn a_foreign_rule_with_our_name_is_left_alone_and_said_so() {
        assert_foreign_rule_left_alone(|rule| rule.kind = RuleKind::Affinity);
    }

    /// A cluster module read from a Supervisor: VKS's, never ours, whatever its name.
    fn as_cluster_module(rule: &mut DrsRule) {
        rule.kind = RuleKind::ClusterModule;
        rule.user_created = false;
        rule.key = None;
    }

    #[test]
    fn a_cluster_module_is_never_deleted_even_under_our_prefix() {
        let snapshot = three_hosts()
            .rule(
                "vsphere-descheduler:k8s:db:StatefulSet/gone",
                1,
                &["w1", "w2"],
            )
            .with(|s| as_cluster_module(first_rule(s)))
            .build();
        let plan = plan(&snapshot, &policy(vec![]));
        assert!(plan.drs_rules.is_empty(), "{:?}", plan.drs_rules);
    }

    #[test]
    fn a_cluster_module_with_a_wanted_rules_name_is_left_alone_and_said_so() {
        assert_foreign_rule_left_alone(as_cluster_module);
    }

    const CONTROL_PLANE: &str = "node-role.kubernetes.io/control-plane";
    const CP_RULE: &str = "vsphere-descheduler:k8s:nodes:control-plane";

    fn with_control_plane_group() -> crate::policy::Policy {
        let mut policy = policy(vec![]);
        policy
            .vsphere
            .drs_rules
            .node_groups
            .push(crate::policy::NodeGroup {
                name: "control-plane".into(),
                node_selector: crate::policy::parse_selector(CONTROL_PLANE)
                    .expect("valid")
                    .into(),
            });
        policy
    }

    /// Three control-plane nodes cp1..cp3 on esxi-1..3 beside the workers.
    fn control_plane(lab: Lab) -> Lab {
        lab.node("cp1", "esxi-1")
            .node("cp2", "esxi-2")
            .node("cp3", "esxi-3")
            .label("cp1", CONTROL_PLANE, "")
            .label("cp2", CONTROL_PLANE, "")
            .label("cp3", CONTROL_PLANE, "")
    }

    #[test]
    fn a_node_group_gets_one_rule_over_its_nodes_vms() {
        let plan = plan(
            &control_plane(three_hosts()).build(),
            &with_control_plane_group(),
        );
        assert_eq!(
            actions(&plan),
            [(
                CP_RULE.to_string(),
                DrsAction::Create,
                vec!["cp1".into(), "cp2".into(), "cp3".into()]
            )]
        );
        let json = serde_json::to_value(&plan.drs_rules[0]).expect("serializes");
        assert_eq!(json["nodeGroup"], "control-plane");
        assert!(json.get("workload").is_none());
    }

    #[test]
    fn a_node_group_rule_follows_its_nodes_and_goes_with_the_group() {
        let snapshot = control_plane(three_hosts())
            .rule(CP_RULE, 4, &["cp1", "cp2"])
            .build();
        let updated = plan(&snapshot, &with_control_plane_group());
        assert_eq!(updated.drs_rules[0].action, DrsAction::Update { key: 4 });
        // The group is gone from the policy: its rule is deleted.
        let removed = plan(&snapshot, &policy(vec![]));
        assert_eq!(
            actions(&removed),
            [(
                CP_RULE.to_string(),
                DrsAction::Delete { key: 4 },
                vec!["cp1".into(), "cp2".into()]
            )]
        );
    }

    #[test]
    fn a_node_group_needs_two_vms_and_no_more_than_the_usable_hosts() {
        let one = three_hosts()
            .node("cp1", "esxi-1")
            .label("cp1", CONTROL_PLANE, "")
            .build();
        let plan_one = plan(&one, &with_control_plane_group());
        assert!(plan_one.drs_rules.is_empty());
        assert!(plan_one.warnings.is_empty(), "{:?}", plan_one.warnings);

        let crowded = control_plane(three_hosts())
            .with(|s| {
                s.inventory.as_mut().expect("inventory").clusters[0].hosts[2].in_maintenance_mode =
                    MaintenanceMode::On
            })
            .build();
        let plan_crowded = plan(&crowded, &with_control_plane_group());
        assert!(plan_crowded.drs_rules.is_empty());
        assert!(
            plan_crowded.warnings.contains(&Warning::UnsatisfiableRule {
                subject: "node group control-plane".to_string(),
                vms: 3,
                cluster: "c1".to_string(),
                usable: 2,
            }),
            "{:?}",
            plan_crowded.warnings
        );
    }

    #[test]
    fn unmapped_nodes_of_a_group_are_named() {
        let snapshot = control_plane(three_hosts())
            .with(|s| {
                let cluster = &mut s.inventory.as_mut().expect("inventory").clusters[0];
                cluster.vms.retain(|vm| vm.name != "cp3");
                let cp3 = s.nodes.iter_mut().find(|n| n.name == "cp3").expect("cp3");
                cp3.provider_id = None;
            })
            .build();
        let plan = plan(&snapshot, &with_control_plane_group());
        assert_eq!(plan.drs_rules[0].vms, ["cp1", "cp2"]);
        assert!(
            plan.warnings.contains(&Warning::UnmappedGroupNodes {
                group: "control-plane".to_string(),
                nodes: vec!["cp3".to_string()],
            }),
            "{:?}",
            plan.warnings
        );
    }

    #[test]
    fn node_group_rule_names_never_equal_workload_rule_names() {
        assert_eq!(
            super::node_group_rule_name("vsphere-descheduler", "lab", "etcd"),
            "vsphere-descheduler:lab:nodes:etcd"
        );
        // A workload in a namespace called `nodes` still ends in Kind/name.
        assert_ne!(
            rule_name("vsphere-descheduler", "lab", "nodes", "Deployment", "etcd"),
            super::node_group_rule_name("vsphere-descheduler", "lab", "etcd")
        );
        assert_eq!(
            super::node_group_rule_name("p", &"c".repeat(60), &"g".repeat(40)).len(),
            80
        );
    }

    #[test]
    fn pods_kept_apart_on_cluster_apis_host_label_get_a_rule_by_default() {
        let capv = crate::policy::CAPV_HOST_LABEL;
        let snapshot = three_hosts()
            .label("w1", capv, "esxi-1")
            .label("w2", capv, "esxi-2")
            .pod(web("web-1", "w1", 30).anti_affinity(capv))
            .pod(web("web-2", "w2", 20).anti_affinity(capv))
            .build();
        let plan = plan(&snapshot, &policy(vec![]));
        assert_eq!(plan.drs_rules.len(), 1, "{:?}", plan.drs_rules);
        assert_eq!(plan.drs_rules[0].vms, ["w1", "w2"]);
    }

    #[test]
    fn short_rule_names_are_readable() {
        assert_eq!(
            rule_name("vsphere-descheduler", "lab", "db", "StatefulSet", "pg"),
            "vsphere-descheduler:lab:db:StatefulSet/pg"
        );
    }

    #[test]
    fn long_rule_names_are_cut_to_80_characters_and_stay_distinct() {
        let a = rule_name(
            "vsphere-descheduler",
            "production-cluster-01",
            "payments",
            "Deployment",
            &"a".repeat(60),
        );
        let b = rule_name(
            "vsphere-descheduler",
            "production-cluster-01",
            "payments",
            "Deployment",
            &format!("{}b", "a".repeat(59)),
        );
        assert_eq!(a.len(), 80);
        assert!(a.starts_with("vsphere-descheduler:production-cluster-01:"));
        assert_ne!(a, b);
    }
}
