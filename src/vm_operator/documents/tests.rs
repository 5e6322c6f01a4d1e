use serde_json::{Value, json};

use super::*;

/// The story's renderings, one per version a Supervisor stores (scripts/vm-operator-fixtures.py).
const RENDERINGS: [(&str, &str); 5] = [
    (
        "v1alpha1",
        include_str!("../../../tests/fixtures/vm-operator/tkc-1/v1alpha1.yaml"),
    ),
    (
        "v1alpha2",
        include_str!("../../../tests/fixtures/vm-operator/tkc-1/v1alpha2.yaml"),
    ),
    (
        "v1alpha3",
        include_str!("../../../tests/fixtures/vm-operator/tkc-1/v1alpha3.yaml"),
    ),
    (
        "v1alpha4",
        include_str!("../../../tests/fixtures/vm-operator/tkc-1/v1alpha4.yaml"),
    ),
    (
        "v1alpha5",
        include_str!("../../../tests/fixtures/vm-operator/tkc-1/v1alpha5.yaml"),
    ),
];

/// The items of a rendering's `v1 List`, each checked to be of `version`.
fn items(version: &str, text: &str) -> Vec<Value> {
    let list: Value = serde_saphyr::from_str(text).expect("the fixture is YAML");
    let items = list["items"].as_array().expect("a List").clone();
    for item in &items {
        assert_eq!(
            item["apiVersion"],
            format!("{API_GROUP}/{version}"),
            "{item}"
        );
    }
    items
}

fn decoded(version: &str, text: &str) -> (Vec<VirtualMachine>, Vec<ResourcePolicy>) {
    let mut vms = Vec::new();
    let mut policies = Vec::new();
    for item in items(version, text) {
        match item["kind"].as_str() {
            Some(VIRTUAL_MACHINE) => vms.push(serde_json::from_value(item).expect(version)),
            Some(RESOURCE_POLICY) => policies.push(serde_json::from_value(item).expect(version)),
            other => panic!("{version}: an item of kind {other:?}"),
        }
    }
    (vms, policies)
}

#[test]
fn every_version_of_the_story_reads_as_the_same_objects() {
    let (expected_vms, expected_policies) = decoded(RENDERINGS[4].0, RENDERINGS[4].1);
    for (version, text) in RENDERINGS {
        let (vms, policies) = decoded(version, text);
        assert_eq!(vms, expected_vms, "{version}");
        assert_eq!(policies, expected_policies, "{version}");
    }
}

#[test]
fn a_v1alpha5_worker_reads_its_host_uuids_zone_policy_module_and_guest_cluster() {
    let (vms, _) = decoded(RENDERINGS[4].0, RENDERINGS[4].1);
    let worker = vms
        .iter()
        .find(|vm| vm.name.ends_with("-9pnvt"))
        .expect("worker 9pnvt");
    assert_eq!(
        worker,
        &VirtualMachine {
            namespace: "team-a".to_string(),
            name: "tkc-1-node-pool-1-wh5j2-5b7c9d8f6-9pnvt".to_string(),
            host: Some("esxi-01.lab.example".to_string()),
            bios_uuid: Some("4210a1f0-6c2e-8d3b-1f4a-5e6b7c8d9e03".to_string()),
            unique_id: Some("vm-1044".to_string()),
            power_state: Some(VmPowerState::PoweredOn),
            zone: Some("zone-a".to_string()),
            resource_policy: Some("tkc-1".to_string()),
            module_group: Some("tkc-1-workers-0".to_string()),
            module_uuid: Some("52a1f0c4-3b7e-4d21-9f0a-6c8e2d4b1a02".to_string()),
            guest_cluster: Some("tkc-1".to_string()),
            role: Some(NodeRole::Worker),
            deployment: Some("tkc-1-node-pool-1-wh5j2".to_string()),
        }
    );
    let creating = vms
        .iter()
        .find(|vm| vm.name.ends_with("-zt6hw"))
        .expect("worker zt6hw");
    assert_eq!(
        (&creating.host, &creating.unique_id, &creating.power_state),
        (&None, &None, &None)
    );
    let control_plane = vms.iter().find(|vm| vm.name == "tkc-1-6fz2k-lq8pm");
    assert_eq!(
        control_plane.and_then(|vm| vm.role.clone()),
        Some(NodeRole::ControlPlane)
    );
}

#[test]
fn a_v1alpha1_policy_and_a_v1alpha5_policy_read_the_same_groups_and_modules() {
    let (_, policies) = decoded(RENDERINGS[0].0, RENDERINGS[0].1);
    assert_eq!(
        policies,
        [ResourcePolicy {
            namespace: "team-a".to_string(),
            name: "tkc-1".to_string(),
            groups: vec![
                "tkc-1-control-plane".to_string(),
                "tkc-1-workers-0".to_string()
            ],
            modules: vec![
                ModuleStatus {
                    group: "tkc-1-control-plane".to_string(),
                    uuid: "52a1f0c4-3b7e-4d21-9f0a-6c8e2d4b1a01".to_string(),
                    cluster_id: "domain-c10".to_string(),
                },
                ModuleStatus {
                    group: "tkc-1-workers-0".to_string(),
                    uuid: "52a1f0c4-3b7e-4d21-9f0a-6c8e2d4b1a02".to_string(),
                    cluster_id: "domain-c10".to_string(),
                },
            ],
        }]
    );
}

#[test]
fn the_host_is_read_from_node_name_or_host_in_any_version_node_name_first() {
    let vm = |status: Value| -> VirtualMachine {
        serde_json::from_value(json!({
            "apiVersion": "vmoperator.vmware.com/v1alpha5", "kind": "VirtualMachine",
            "metadata": {"name": "w1", "namespace": "team-a"}, "status": status,
        }))
        .expect("a VM")
    };
    // Served as stored, without the conversion webhook: v1alpha3's field in a v1alpha5 reply.
    assert_eq!(
        vm(json!({"host": "esxi-1"})).host.as_deref(),
        Some("esxi-1")
    );
    assert_eq!(
        vm(json!({"nodeName": "esxi-2"})).host.as_deref(),
        Some("esxi-2")
    );
    assert_eq!(
        vm(json!({"host": "esxi-1", "nodeName": "esxi-2"}))
            .host
            .as_deref(),
        Some("esxi-2")
    );
    assert_eq!(
        vm(json!({"host": "esxi-1", "nodeName": ""}))
            .host
            .as_deref(),
        Some("esxi-1"),
        "an empty field says nothing"
    );
    assert_eq!(vm(json!({"host": null})).host, None);
}

#[test]
fn power_states_of_both_spellings_are_typed_and_an_unknown_one_is_kept() {
    let state = |text: &str| VmPowerState::from(text.to_string());
    assert_eq!(state("poweredOn"), VmPowerState::PoweredOn);
    assert_eq!(state("PoweredOn"), VmPowerState::PoweredOn);
    assert_eq!(state("poweredOff"), VmPowerState::PoweredOff);
    assert_eq!(state("PoweredOff"), VmPowerState::PoweredOff);
    assert_eq!(state("suspended"), VmPowerState::Suspended);
    assert_eq!(state("Suspended"), VmPowerState::Suspended);
    assert_eq!(
        PowerState::from(state("Hibernated")),
        PowerState::Other("Hibernated".to_string())
    );
    assert_eq!(PowerState::from(state("Suspended")), PowerState::Suspended);
}

#[test]
fn a_field_of_the_wrong_type_is_refused_naming_what_was_expected() {
    let error = serde_json::from_value::<VirtualMachine>(json!({
        "metadata": {"name": "w1"}, "status": {"nodeName": 5}
    }))
    .expect_err("a number is no host");
    assert_eq!(
        error.to_string(),
        "invalid type: integer `5`, expected a string"
    );
    let error = serde_json::from_value::<ResourcePolicy>(json!({
        "metadata": {"name": "tkc-1"}, "status": {"clustermodules": [{"groupName": "g"}]}
    }))
    .expect_err("a module without its uuid");
    assert_eq!(error.to_string(), "missing field `moduleUUID`");
}

#[test]
fn only_vm_operators_group_in_a_served_version_is_read() {
    for version in VERSIONS {
        assert!(is_read_version(&format!("vmoperator.vmware.com/{version}")));
    }
    for other in [
        "vmoperator.vmware.com/v1alpha7",
        "vmoperator.vmware.com",
        "vmoperator.vmware.comv1alpha1",
        "kubevirt.io/v1",
    ] {
        assert!(!is_read_version(other), "{other}");
    }
}
