use serde_json::Value;

use super::*;
use crate::vm_operator::documents::{NodeRole, RESOURCE_POLICY, VIRTUAL_MACHINE, VmPowerState};

const STORY: &str = include_str!("../../../tests/fixtures/vm-operator/tkc-1/v1alpha5.yaml");

fn story() -> (Vec<VirtualMachine>, Vec<ResourcePolicy>) {
    let list: Value = serde_saphyr::from_str(STORY).expect("the fixture is YAML");
    let mut vms = Vec::new();
    let mut policies = Vec::new();
    for item in list["items"].as_array().expect("a List") {
        match item["kind"].as_str() {
            Some(VIRTUAL_MACHINE) => vms.push(serde_json::from_value(item.clone()).expect("VM")),
            Some(RESOURCE_POLICY) => {
                policies.push(serde_json::from_value(item.clone()).expect("policy"))
            }
            other => panic!("an item of kind {other:?}"),
        }
    }
    (vms, policies)
}

/// A worker of guest cluster tkc-1 in namespace team-a, created, on `host`, in the workers'
/// module `module-w`.
fn worker(name: &str, host: &str) -> VirtualMachine {
    VirtualMachine {
        namespace: "team-a".to_string(),
        name: name.to_string(),
        host: Some(host.to_string()),
        bios_uuid: Some(format!("uuid-{name}")),
        unique_id: Some(format!("vm-{name}")),
        power_state: Some(VmPowerState::PoweredOn),
        zone: None,
        resource_policy: Some("tkc-1".to_string()),
        module_group: Some("tkc-1-workers-0".to_string()),
        module_uuid: Some("module-w".to_string()),
        guest_cluster: Some("tkc-1".to_string()),
        role: Some(NodeRole::Worker),
        deployment: Some("tkc-1-md-0".to_string()),
    }
}

fn module(group: &str, uuid: &str, cluster_id: &str) -> ModuleStatus {
    ModuleStatus {
        group: group.to_string(),
        uuid: uuid.to_string(),
        cluster_id: cluster_id.to_string(),
    }
}

fn policy(modules: Vec<ModuleStatus>) -> ResourcePolicy {
    ResourcePolicy {
        namespace: "team-a".to_string(),
        name: "tkc-1".to_string(),
        groups: vec!["tkc-1-workers-0".to_string()],
        modules,
    }
}

fn host(name: &str) -> Host {
    Host {
        name: name.to_string(),
        id: None,
        connection_state: ConnectionState::Connected,
        in_maintenance_mode: MaintenanceMode::Off,
        vsan_fault_domain: None,
    }
}

fn vm(name: &str, id: &str, uuid: &str, host: &str) -> Vm {
    Vm {
        name: name.to_string(),
        id: Some(id.to_string()),
        uuid: uuid.to_string(),
        host: host.to_string(),
        power_state: PowerState::PoweredOn,
        drs_behavior: None,
    }
}

fn module_rule(name: &str, uuid: &str, members: &[(&str, &str)]) -> DrsRule {
    DrsRule {
        name: name.to_string(),
        key: None,
        kind: RuleKind::ClusterModule,
        enabled: true,
        mandatory: false,
        user_created: false,
        uuid: Some(uuid.to_string()),
        vms: members.iter().map(|(name, _)| name.to_string()).collect(),
        vm_ids: members.iter().map(|(_, id)| id.to_string()).collect(),
    }
}

#[test]
fn the_story_is_one_zone_cluster_of_three_hosts_with_its_two_modules_as_rules() {
    let (vms, policies) = story();
    let pool = "tkc-1-node-pool-1-wh5j2-5b7c9d8f6";
    let uuid = |n: u8| format!("4210a1f0-6c2e-8d3b-1f4a-5e6b7c8d9e{n:02}");
    let (cp, a, b, c) = (
        "tkc-1-6fz2k-lq8pm".to_string(),
        format!("{pool}-7xk2p"),
        format!("{pool}-9pnvt"),
        format!("{pool}-rc4sd"),
    );
    let expected = Inventory {
        clusters: vec![Cluster {
            name: "zone-a".to_string(),
            id: Some("domain-c10".to_string()),
            hosts: vec![
                host("esxi-01.lab.example"),
                host("esxi-02.lab.example"),
                host("esxi-03.lab.example"),
            ],
            vms: vec![
                vm(&cp, "vm-1041", &uuid(1), "esxi-02.lab.example"),
                vm(&a, "vm-1043", &uuid(2), "esxi-01.lab.example"),
                vm(&b, "vm-1044", &uuid(3), "esxi-01.lab.example"),
                vm(&c, "vm-1045", &uuid(4), "esxi-03.lab.example"),
            ],
            rules: vec![
                module_rule(
                    "tkc-1/tkc-1-control-plane",
                    "52a1f0c4-3b7e-4d21-9f0a-6c8e2d4b1a01",
                    &[(&cp, "vm-1041")],
                ),
                module_rule(
                    "tkc-1/tkc-1-workers-0",
                    "52a1f0c4-3b7e-4d21-9f0a-6c8e2d4b1a02",
                    &[(&a, "vm-1043"), (&b, "vm-1044"), (&c, "vm-1045")],
                ),
            ],
            ..Cluster::default()
        }],
    };
    assert_eq!(inventory(&vms, &policies), expected);
}

#[test]
fn the_story_reports_the_worker_being_created_as_unplaced_and_outside_no_module() {
    let (vms, policies) = story();
    let creating = "tkc-1-node-pool-1-wh5j2-5b7c9d8f6-zt6hw";
    let found = topology(&vms, &policies);
    assert_eq!(
        found.findings.unplaced,
        [UnplacedVm {
            namespace: "team-a".to_string(),
            name: creating.to_string(),
            reason: UnplacedReason::NotCreated,
        }]
    );
    let [guest] = found.findings.guest_clusters.as_slice() else {
        panic!("{:?}", found.findings.guest_clusters);
    };
    assert_eq!((&*guest.namespace, &*guest.name), ("team-a", "tkc-1"));
    let groups: Vec<(&str, usize)> = guest
        .modules
        .iter()
        .map(|m| (m.group.as_str(), m.vms.len()))
        .collect();
    assert_eq!(groups, [("tkc-1-control-plane", 1), ("tkc-1-workers-0", 4)]);
    assert!(guest.modules[1].vms.iter().any(|vm| vm == creating));
    assert_eq!(guest.outside_modules, []);
}

#[test]
fn input_order_does_not_change_the_inventory_or_the_findings() {
    let (mut vms, mut policies) = story();
    let forward = topology(&vms, &policies);
    vms.reverse();
    policies.reverse();
    assert_eq!(topology(&vms, &policies), forward);
}

#[test]
fn vms_without_a_zone_are_in_their_namespaces_cluster_and_zones_are_clusters_of_their_own() {
    let mut east = worker("w1", "esxi-1");
    east.zone = Some("zone-east".to_string());
    let mut west = worker("w2", "esxi-2");
    west.zone = Some("zone-west".to_string());
    west.module_uuid = Some("module-w-west".to_string());
    let plain = VirtualMachine {
        module_group: None,
        module_uuid: None,
        guest_cluster: None,
        resource_policy: None,
        ..worker("db-0", "esxi-3")
    };
    let policies = [policy(vec![
        module("tkc-1-workers-0", "module-w", "domain-c7"),
        module("tkc-1-workers-0", "module-w-west", "domain-c9"),
    ])];
    let found = inventory(&[east, west, plain], &policies);
    let clusters: Vec<(&str, Option<&str>, Vec<&str>)> = found
        .clusters
        .iter()
        .map(|c| {
            let rules = c
                .rules
                .iter()
                .map(|r| r.uuid.as_deref().unwrap_or_default());
            (c.name.as_str(), c.id.as_deref(), rules.collect())
        })
        .collect();
    assert_eq!(
        clusters,
        [
            ("team-a", None, vec![]),
            ("zone-east", Some("domain-c7"), vec!["module-w"]),
            ("zone-west", Some("domain-c9"), vec!["module-w-west"]),
        ]
    );
}

#[test]
fn a_cluster_whose_vms_are_in_modules_of_two_vsphere_clusters_claims_no_id() {
    let mut other = worker("w2", "esxi-2");
    other.module_uuid = Some("module-w-2".to_string());
    let policies = [policy(vec![
        module("tkc-1-workers-0", "module-w", "domain-c7"),
        module("tkc-1-workers-0", "module-w-2", "domain-c9"),
    ])];
    let found = inventory(&[worker("w1", "esxi-1"), other], &policies);
    assert_eq!(found.clusters.len(), 1);
    assert_eq!(found.clusters[0].id, None);
    assert_eq!(found.clusters[0].rules.len(), 2, "each beside its members");
}

#[test]
fn a_vm_without_a_host_is_left_out_as_not_created_or_without_host() {
    let created = VirtualMachine {
        host: None,
        ..worker("w2", "esxi-1")
    };
    let not_created = VirtualMachine {
        host: None,
        unique_id: None,
        ..worker("w3", "esxi-1")
    };
    let vms = [worker("w1", "esxi-1"), created, not_created];
    let found = topology(
        &vms,
        &[policy(vec![module("tkc-1-workers-0", "module-w", "c")])],
    );
    let names: Vec<&str> = found.inventory.clusters[0]
        .vms
        .iter()
        .map(|vm| vm.name.as_str())
        .collect();
    assert_eq!(names, ["w1"]);
    assert_eq!(found.inventory.clusters[0].rules[0].vms, ["w1"]);
    let reasons: Vec<(&str, UnplacedReason)> = found
        .findings
        .unplaced
        .iter()
        .map(|u| (u.name.as_str(), u.reason))
        .collect();
    assert_eq!(
        reasons,
        [
            ("w2", UnplacedReason::NoHost),
            ("w3", UnplacedReason::NotCreated)
        ]
    );
}

#[test]
fn a_vm_whose_power_state_is_not_reported_yet_says_so_instead_of_powered_on() {
    let quiet = VirtualMachine {
        power_state: None,
        ..worker("w1", "esxi-1")
    };
    let found = inventory(&[quiet], &[]);
    assert_eq!(
        found.clusters[0].vms[0].power_state,
        PowerState::Other("unknown".to_string())
    );
}

#[test]
fn each_reason_a_guest_node_vm_is_in_no_module_is_told() {
    let no_group = VirtualMachine {
        module_group: None,
        module_uuid: None,
        ..worker("a-no-group", "esxi-1")
    };
    let no_policy = VirtualMachine {
        resource_policy: None,
        ..worker("b-no-policy", "esxi-1")
    };
    let unknown_policy = VirtualMachine {
        resource_policy: Some("tkc-9".to_string()),
        ..worker("c-unknown-policy", "esxi-1")
    };
    let other_group = VirtualMachine {
        module_group: Some("tkc-1-workers-1".to_string()),
        module_uuid: None,
        ..worker("d-other-group", "esxi-1")
    };
    let stale = VirtualMachine {
        module_uuid: Some("module-gone".to_string()),
        ..worker("e-stale", "esxi-1")
    };
    let policies = [policy(vec![module("tkc-1-workers-0", "module-w", "c")])];
    let vms = [
        stale,
        other_group,
        unknown_policy,
        no_policy,
        no_group,
        worker("f-member", "esxi-2"),
    ];
    let guests = module_membership(&vms, &policies);
    let text = |s: &str| s.to_string();
    assert_eq!(
        guests[0].outside_modules,
        [
            MissingModule::NoGroupAnnotation {
                vm: text("a-no-group")
            },
            MissingModule::NoResourcePolicy {
                vm: text("b-no-policy"),
                group: text("tkc-1-workers-0")
            },
            MissingModule::PolicyNotFound {
                vm: text("c-unknown-policy"),
                policy: text("tkc-9")
            },
            MissingModule::GroupWithoutModule {
                vm: text("d-other-group"),
                policy: text("tkc-1"),
                group: text("tkc-1-workers-1")
            },
            MissingModule::StaleModule {
                vm: text("e-stale"),
                group: text("tkc-1-workers-0"),
                uuid: text("module-gone")
            },
        ]
    );
    assert_eq!(guests[0].modules[0].vms, ["f-member"]);
}

#[test]
fn without_its_uuid_a_vm_is_in_its_groups_only_module_and_in_none_of_several() {
    let unannotated = VirtualMachine {
        module_uuid: None,
        ..worker("w1", "esxi-1")
    };
    let one = [policy(vec![module("tkc-1-workers-0", "module-w", "c")])];
    let guests = module_membership(std::slice::from_ref(&unannotated), &one);
    assert_eq!(guests[0].modules[0].vms, ["w1"]);

    let two = [policy(vec![
        module("tkc-1-workers-0", "module-w", "domain-c7"),
        module("tkc-1-workers-0", "module-w-2", "domain-c9"),
    ])];
    let guests = module_membership(&[unannotated], &two);
    assert!(guests[0].modules.iter().all(|m| m.vms.is_empty()));
    assert_eq!(
        guests[0].outside_modules,
        [MissingModule::ModuleUndetermined {
            vm: "w1".to_string(),
            group: "tkc-1-workers-0".to_string()
        }]
    );
}

#[test]
fn a_module_no_placed_vm_is_in_is_a_rule_of_its_cluster_when_the_id_is_known_else_of_none() {
    let policies = [policy(vec![
        module("tkc-1-workers-0", "module-w", "domain-c7"),
        module("tkc-1-control-plane", "module-cp", "domain-c7"),
        module("tkc-1-workers-0", "module-elsewhere", "domain-c9"),
    ])];
    let found = inventory(&[worker("w1", "esxi-1")], &policies);
    let rules: Vec<(&str, &[String])> = found.clusters[0]
        .rules
        .iter()
        .map(|r| (r.name.as_str(), r.vms.as_slice()))
        .collect();
    assert_eq!(
        rules,
        [
            ("tkc-1/tkc-1-control-plane", &[][..]),
            ("tkc-1/tkc-1-workers-0", &["w1".to_string()][..]),
        ]
    );
}

#[test]
fn findings_serialize_with_camel_case_names_and_a_tagged_reason() {
    let finding = MissingModule::GroupWithoutModule {
        vm: "w1".to_string(),
        policy: "tkc-1".to_string(),
        group: "tkc-1-workers-1".to_string(),
    };
    assert_eq!(
        serde_json::to_value(&finding).expect("JSON"),
        serde_json::json!({"reason": "groupWithoutModule", "vm": "w1", "policy": "tkc-1",
                           "group": "tkc-1-workers-1"})
    );
    let unplaced = UnplacedVm {
        namespace: "team-a".to_string(),
        name: "w2".to_string(),
        reason: UnplacedReason::NotCreated,
    };
    assert_eq!(
        serde_json::to_value(&unplaced).expect("JSON")["reason"],
        "notCreated"
    );
}
