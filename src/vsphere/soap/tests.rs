//! Parsing recorded replies: captured from vcsim 0.24.2, plus hand-made ones in real vCenter's
//! style for what the simulator cannot produce (paging, other `xsi:type` prefixes, missingSet).

use super::*;

fn reference(kind: &str, value: &str) -> MoRef {
    MoRef::new(kind, value)
}

#[test]
fn service_content_gives_the_singletons_and_the_api_version() {
    let response = fixture_response("retrieve-service-content-vcsim.xml");
    let content = service_content(&response).expect("service content");
    assert_eq!(content.root_folder, reference("Folder", "group-d1"));
    assert_eq!(
        content.property_collector,
        reference("PropertyCollector", "propertyCollector")
    );
    assert_eq!(
        content.view_manager,
        reference("ViewManager", "ViewManager")
    );
    assert_eq!(
        content.session_manager,
        reference("SessionManager", "SessionManager")
    );
    assert_eq!(content.api_version, "6.5");
    assert_eq!(
        content.full_name,
        "VMware vCenter Server 6.5.0 build-5973321"
    );
}

#[test]
fn invalid_login_fault_is_named_by_its_type() {
    let Reply::Fault(fault) = fixture("login-invalid-login.xml") else {
        panic!("expected a fault");
    };
    assert_eq!(fault.name, "InvalidLogin");
    assert_eq!(fault.message, "Login failure");
    assert_eq!(fault.to_string(), "InvalidLogin: Login failure");
}

#[test]
fn not_authenticated_fault_is_recognised() {
    let Reply::Fault(fault) = fixture("not-authenticated.xml") else {
        panic!("expected a fault");
    };
    assert!(fault.is_not_authenticated());
    assert_eq!(fault.to_string(), "NotAuthenticated");
}

#[test]
fn a_fault_without_xsi_type_is_named_after_its_element() {
    let document = br#"<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body><soapenv:Fault><faultcode>ServerFaultCode</faultcode><faultstring>gone</faultstring><detail><ManagedObjectNotFoundFault xmlns="urn:vim25"/></detail></soapenv:Fault></soapenv:Body></soapenv:Envelope>"#;
    let Reply::Fault(fault) = envelope(document).expect("envelope") else {
        panic!("expected a fault");
    };
    assert_eq!(fault.name, "ManagedObjectNotFound");
    assert_eq!(fault.message, "gone");
}

#[test]
fn a_fault_without_detail_is_named_after_its_code() {
    let document = br#"<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body><soapenv:Fault><faultcode>soapenv:Client</faultcode><faultstring>unreadable request</faultstring></soapenv:Fault></soapenv:Body></soapenv:Envelope>"#;
    let Reply::Fault(fault) = envelope(document).expect("envelope") else {
        panic!("expected a fault");
    };
    assert_eq!(fault.name, "Client");
}

#[test]
fn a_reply_without_body_is_an_error() {
    let document =
        br#"<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"/>"#;
    assert!(matches!(
        envelope(document),
        Err(XmlParseError::Missing { child, .. }) if child == "Body"
    ));
}

#[test]
fn reconfigure_returns_its_task() {
    let response = fixture_response("reconfigure-task.xml");
    assert_eq!(
        returned_reference(&response).expect("task"),
        reference("Task", "task-43")
    );
}

#[test]
fn failed_task_info_carries_the_localized_fault() {
    let response = fixture_response("task-info-error.xml");
    let result = retrieve_result(&response).expect("task info");
    let task = &result.objects[0];
    assert_eq!(task.obj, reference("Task", "task-43"));
    assert_eq!(
        task.property("info.state"),
        Some(&PropertyValue::String("error".to_string()))
    );
    assert_eq!(
        task.property("info.error"),
        Some(&PropertyValue::Fault(Fault::new(
            "InvalidArgument",
            "*types.InvalidArgument"
        )))
    );
}

#[test]
fn vcsim_properties_are_typed_with_its_xml_schema_instance_prefix() {
    let response = fixture_response("retrieve-properties-vcsim.xml");
    let result = retrieve_result(&response).expect("objects");
    assert_eq!(result.token, None);
    let vm = result
        .objects
        .iter()
        .find(|o| o.obj == reference("VirtualMachine", "vm-36"))
        .expect("worker-a");
    assert_eq!(
        vm.property("name"),
        Some(&PropertyValue::String("worker-a".to_string()))
    );
    assert_eq!(
        vm.property("config.template"),
        Some(&PropertyValue::Boolean(false))
    );
    assert_eq!(
        vm.property("runtime.host"),
        Some(&PropertyValue::Reference(reference(
            "HostSystem",
            "host-17"
        )))
    );
    assert_eq!(
        vm.property("runtime.powerState"),
        Some(&PropertyValue::String("poweredOn".to_string()))
    );

    let cluster = result
        .objects
        .iter()
        .find(|o| o.obj.kind == "ClusterComputeResource")
        .expect("a cluster");
    let Some(PropertyValue::ClusterConfig(config)) = cluster.property("configurationEx") else {
        panic!("configurationEx is a ClusterConfigInfoEx");
    };
    assert_eq!(config.drs_enabled, Some(true));
    assert_eq!(
        config.drs_default_vm_behavior.as_deref(),
        Some("fullyAutomated")
    );
    assert_eq!(config.rules.len(), 2);
    assert_eq!(
        config.rules[0],
        RuleInfo {
            kind: RuleType::AntiAffinity,
            key: Some(1),
            name: "user & rule".to_string(),
            enabled: Some(true),
            mandatory: Some(false),
            user_created: Some(true),
            rule_uuid: Some("24128833-5559-4085-b39a-4e2ba01da903".to_string()),
            vms: vec![
                reference("VirtualMachine", "vm-36"),
                reference("VirtualMachine", "vm-39")
            ],
            vm_host: None,
        }
    );
    assert_eq!(
        config.rules[1].kind,
        RuleType::Other("ClusterVmHostRuleInfo".to_string())
    );
    assert_eq!(config.rules[1].user_created, Some(false));
}

#[test]
fn first_page_with_xsi_prefix_ends_in_a_token() {
    let response = fixture_response("retrieve-properties-page1-token.xml");
    let result = retrieve_result(&response).expect("objects");
    assert_eq!(result.token.as_deref(), Some("2"));
    assert_eq!(result.objects.len(), 5);

    let cluster = &result.objects[0];
    assert_eq!(
        cluster.property("name"),
        Some(&PropertyValue::String("prod & test".to_string()))
    );
    let Some(PropertyValue::ClusterConfig(config)) = cluster.property("configurationEx") else {
        panic!("configurationEx is a ClusterConfigInfoEx");
    };
    assert_eq!(
        config.drs_default_vm_behavior.as_deref(),
        Some("partiallyAutomated")
    );
    assert_eq!(
        config.drs_vm_overrides,
        vec![
            DrsVmOverride {
                vm: reference("VirtualMachine", "vm-101"),
                enabled: Some(false),
                behavior: None
            },
            DrsVmOverride {
                vm: reference("VirtualMachine", "vm-102"),
                enabled: Some(true),
                behavior: Some("manual".to_string())
            },
        ]
    );
    let kinds: Vec<&RuleType> = config.rules.iter().map(|r| &r.kind).collect();
    assert_eq!(
        kinds,
        [
            &RuleType::AntiAffinity,
            &RuleType::Other("ClusterVmHostRuleInfo".to_string()),
            &RuleType::Other("ClusterDependencyRuleInfo".to_string()),
        ]
    );
    // Groups share the element name `vm` with rules but are not rules.
    assert!(config.rules.iter().all(|r| r.name != "app"));
}

#[test]
fn continuation_page_with_underscore_prefix_has_no_token_and_keeps_missing_properties() {
    let response = fixture_response("continue-retrieve-properties-page2.xml");
    let result = retrieve_result(&response).expect("objects");
    assert_eq!(result.token, None);
    let host = &result.objects[0];
    assert_eq!(
        host.property("runtime.inMaintenanceMode"),
        Some(&PropertyValue::Boolean(true))
    );
    assert_eq!(
        host.property("parent"),
        Some(&PropertyValue::Reference(reference(
            "ClusterComputeResource",
            "domain-c8"
        )))
    );
    let orphaned = result
        .objects
        .iter()
        .find(|o| o.obj.value == "vm-104")
        .expect("orphaned VM");
    assert_eq!(orphaned.property("config.uuid"), None);
    assert_eq!(orphaned.missing.len(), 1);
    assert_eq!(orphaned.missing[0].0, "config.uuid");
    assert_eq!(orphaned.missing[0].1.name, "NoPermission");
}

#[test]
fn an_empty_retrieval_has_no_objects() {
    let document = br#"<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body><RetrievePropertiesExResponse xmlns="urn:vim25"></RetrievePropertiesExResponse></soapenv:Body></soapenv:Envelope>"#;
    let Reply::Response(response) = envelope(document).expect("envelope") else {
        panic!("expected a response");
    };
    assert_eq!(
        retrieve_result(&response).expect("empty"),
        RetrieveResult::default()
    );
}

/// The `dasConfig` of one cluster of the HA fixture.
fn das_config_of(result: &RetrieveResult, cluster: &str) -> DasConfig {
    let object = result
        .objects
        .iter()
        .find(|o| o.obj == reference("ClusterComputeResource", cluster))
        .unwrap_or_else(|| panic!("cluster {cluster} in the fixture"));
    match object.property("configurationEx") {
        Some(PropertyValue::ClusterConfig(config)) => config.das.clone(),
        other => panic!("configurationEx of {cluster} is a ClusterConfigInfoEx, not {other:?}"),
    }
}

fn option(key: &str, value: &str) -> OptionValue {
    OptionValue {
        key: key.to_string(),
        value: Some(value.to_string()),
    }
}

#[test]
fn ha_configuration_is_read_with_each_admission_control_policy_by_its_type() {
    let response = fixture_response("retrieve-properties-ha.xml");
    let result = retrieve_result(&response).expect("objects");

    // The slot policy, monitoring settings and heartbeat datastores are read past, not into.
    assert_eq!(
        das_config_of(&result, "domain-c10"),
        DasConfig {
            enabled: Some(true),
            failover_level: Some(1),
            admission_control_enabled: Some(true),
            admission_control_policy: Some(AdmissionControlPolicy::FailoverLevel {
                failover_level: 2
            }),
            restart_priority: Some("high".to_string()),
            options: vec![
                option("das.isolationaddress0", "10.0.0.1"),
                option("das.respectVmVmAntiAffinityRules", "true"),
            ],
        }
    );
    assert_eq!(
        das_config_of(&result, "domain-c11").admission_control_policy,
        Some(AdmissionControlPolicy::FailoverResources {
            cpu_percent: 25,
            memory_percent: 30,
            failover_level: Some(1),
        })
    );
    assert_eq!(
        das_config_of(&result, "domain-c12").admission_control_policy,
        Some(AdmissionControlPolicy::FailoverResources {
            cpu_percent: 50,
            memory_percent: 40,
            failover_level: None,
        })
    );
    let dedicated = das_config_of(&result, "domain-c13");
    assert_eq!(
        dedicated.admission_control_policy,
        Some(AdmissionControlPolicy::FailoverHosts {
            hosts: vec![
                reference("HostSystem", "host-22"),
                reference("HostSystem", "host-99"),
                reference("HostSystem", "host-21"),
            ]
        })
    );
    assert_eq!(dedicated.restart_priority.as_deref(), Some("disabled"));
    let off = das_config_of(&result, "domain-c14");
    assert_eq!(off.admission_control_enabled, Some(false));
    assert_eq!(off.restart_priority, None);
    assert_eq!(
        das_config_of(&result, "domain-c15").admission_control_policy,
        Some(AdmissionControlPolicy::Other(
            "ClusterFailoverFutureAdmissionControlPolicy".to_string()
        ))
    );
    let legacy = das_config_of(&result, "domain-c16");
    assert_eq!(
        (
            legacy.enabled,
            legacy.failover_level,
            &legacy.admission_control_policy
        ),
        (Some(false), Some(1), &None)
    );
}

#[test]
fn an_empty_das_config_reads_as_every_field_unset() {
    let response = fixture_response("retrieve-properties-ha.xml");
    let result = retrieve_result(&response).expect("objects");
    assert_eq!(das_config_of(&result, "domain-c17"), DasConfig::default());

    // vcsim sends `<dasConfig></dasConfig>` for a cluster created without one.
    let response = fixture_response("retrieve-properties-vcsim.xml");
    let result = retrieve_result(&response).expect("objects");
    assert_eq!(
        das_config_of(&result, "clustercomputeresource-10"),
        DasConfig::default()
    );
}

/// A `RetrievePropertiesEx` reply holding one cluster whose `configurationEx` is `config`.
fn cluster_with(config: &str) -> Vec<u8> {
    format!(
        r#"<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soapenv:Body><RetrievePropertiesExResponse xmlns="urn:vim25"><returnval><objects><obj type="ClusterComputeResource">domain-c1</obj><propSet><name>configurationEx</name><val xsi:type="ClusterConfigInfoEx">{config}</val></propSet></objects></returnval></RetrievePropertiesExResponse></soapenv:Body></soapenv:Envelope>"#
    )
    .into_bytes()
}

#[test]
fn a_cluster_configuration_without_das_config_reads_as_every_field_unset() {
    let Reply::Response(response) = envelope(&cluster_with(
        "<drsConfig><enabled>true</enabled></drsConfig>",
    ))
    .expect("envelope") else {
        panic!("expected a response");
    };
    let result = retrieve_result(&response).expect("objects");
    assert_eq!(das_config_of(&result, "domain-c1"), DasConfig::default());
}

#[test]
fn a_negative_or_missing_count_in_a_policy_is_an_error_naming_the_element() {
    let read = |policy: &str| {
        let document = cluster_with(&format!("<dasConfig>{policy}</dasConfig>"));
        let Reply::Response(response) = envelope(&document).expect("envelope") else {
            panic!("expected a response");
        };
        retrieve_result(&response).map(|_| ())
    };
    let negative = read(
        r#"<admissionControlPolicy xsi:type="ClusterFailoverLevelAdmissionControlPolicy"><failoverLevel>-1</failoverLevel></admissionControlPolicy>"#,
    )
    .expect_err("a failover level cannot be negative");
    assert_eq!(
        negative.to_string(),
        r#"<failoverLevel> holds "-1", not a non-negative integer"#
    );
    let missing = read(
        r#"<admissionControlPolicy xsi:type="ClusterFailoverResourcesAdmissionControlPolicy"><cpuFailoverResourcesPercent>25</cpuFailoverResourcesPercent></admissionControlPolicy>"#,
    )
    .expect_err("the memory percentage is not optional");
    assert_eq!(
        missing.to_string(),
        "<admissionControlPolicy> has no <memoryFailoverResourcesPercent>"
    );
}

const ENVELOPE_START: &str = r#"<?xml version="1.0" encoding="UTF-8"?><soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soapenv:Body>"#;
const ENVELOPE_END: &str = "</soapenv:Body></soapenv:Envelope>";

fn reply(body: &str) -> Reply {
    envelope(format!("{ENVELOPE_START}{body}{ENVELOPE_END}").as_bytes()).expect("envelope")
}

fn response(body: &str) -> Response {
    match reply(body) {
        Reply::Response(response) => response,
        Reply::Fault(fault) => panic!("a response, not {fault}"),
    }
}

#[test]
fn a_no_permission_fault_names_the_missing_privilege_and_its_object() {
    // As vCenter answers a method the session may not call.
    let Reply::Fault(fault) = reply(concat!(
        r#"<soapenv:Fault><faultcode>ServerFaultCode</faultcode>"#,
        r#"<faultstring>Permission to perform this operation was denied.</faultstring><detail>"#,
        r#"<NoPermissionFault xmlns="urn:vim25" xsi:type="NoPermission">"#,
        r#"<object type="ClusterComputeResource">domain-c7</object>"#,
        r#"<privilegeId>Host.Inventory.EditCluster</privilegeId></NoPermissionFault>"#,
        r#"</detail></soapenv:Fault>"#
    )) else {
        panic!("expected a fault");
    };
    assert_eq!(
        fault.missing_privilege.as_deref(),
        Some(&MissingPrivilege {
            privilege: "Host.Inventory.EditCluster".to_string(),
            object: "ClusterComputeResource:domain-c7".to_string(),
        })
    );
    assert_eq!(
        fault.to_string(),
        "NoPermission: Permission to perform this operation was denied. (missing \
         Host.Inventory.EditCluster on ClusterComputeResource:domain-c7)"
    );
}

#[test]
fn not_authenticated_names_no_missing_privilege() {
    let Reply::Fault(fault) = fixture("not-authenticated.xml") else {
        panic!("expected a fault");
    };
    assert_eq!(fault.missing_privilege, None);
}

#[test]
fn service_content_gives_the_authorization_manager() {
    let response = fixture_response("retrieve-service-content-vcsim.xml");
    let content = service_content(&response).expect("service content");
    assert_eq!(
        content.authorization_manager,
        Some(reference("AuthorizationManager", "AuthorizationManager"))
    );
}

#[test]
fn login_gives_the_session_key_and_user_name_and_debug_hides_the_key() {
    let response = response(concat!(
        r#"<LoginResponse xmlns="urn:vim25"><returnval><key>52b1-secret</key>"#,
        r#"<userName>VSPHERE.LOCAL\descheduler</userName><fullName>descheduler</fullName>"#,
        r#"</returnval></LoginResponse>"#
    ));
    let session = user_session(&response).expect("a user session");
    assert_eq!(
        secrecy::ExposeSecret::expose_secret(&session.key),
        "52b1-secret"
    );
    assert_eq!(session.user_name, r"VSPHERE.LOCAL\descheduler");
    assert!(!format!("{session:?}").contains("52b1-secret"));
}

#[test]
fn privilege_answers_are_read_per_entity() {
    let response = response(concat!(
        r#"<HasPrivilegeOnEntitiesResponse xmlns="urn:vim25">"#,
        r#"<returnval><entity type="Folder">group-d1</entity>"#,
        r#"<privAvailability><privId>System.View</privId><isGranted>true</isGranted></privAvailability>"#,
        r#"</returnval><returnval><entity type="ClusterComputeResource">domain-c7</entity>"#,
        r#"<privAvailability><privId>System.Read</privId><isGranted>true</isGranted></privAvailability>"#,
        r#"<privAvailability><privId>Host.Inventory.EditCluster</privId><isGranted>false</isGranted></privAvailability>"#,
        r#"</returnval></HasPrivilegeOnEntitiesResponse>"#
    ));
    let answers = entity_privileges(&response).expect("answers");
    assert_eq!(
        answers,
        [
            EntityPrivileges {
                entity: reference("Folder", "group-d1"),
                privileges: vec![("System.View".to_string(), true)],
            },
            EntityPrivileges {
                entity: reference("ClusterComputeResource", "domain-c7"),
                privileges: vec![
                    ("System.Read".to_string(), true),
                    ("Host.Inventory.EditCluster".to_string(), false)
                ],
            }
        ]
    );
}

/// The `configurationEx` of the one cluster of the stretched-cluster fixture.
fn stretched_config() -> ClusterConfig {
    let response = fixture_response("retrieve-properties-stretched.xml");
    let result = retrieve_result(&response).expect("objects");
    let cluster = result
        .objects
        .into_iter()
        .find(|o| o.obj.kind == "ClusterComputeResource")
        .expect("a cluster");
    match cluster.property("configurationEx") {
        Some(PropertyValue::ClusterConfig(config)) => config.clone(),
        other => panic!("configurationEx is a ClusterConfigInfoEx, not {other:?}"),
    }
}

fn group(name: &str, kind: &str, members: &[&str]) -> GroupInfo {
    GroupInfo {
        name: name.to_string(),
        members: members.iter().map(|m| reference(kind, m)).collect(),
    }
}

#[test]
fn host_and_vm_groups_are_told_apart_by_their_xsi_type_and_untyped_ones_left_out() {
    let config = stretched_config();
    assert_eq!(
        config.host_groups,
        [
            group("site-b-hosts", "HostSystem", &["host-32", "host-31"]),
            group(
                "site-a-hosts",
                "HostSystem",
                &["host-22", "host-21", "host-99"]
            ),
            group("empty hosts", "HostSystem", &[]),
        ]
    );
    assert_eq!(
        config.vm_groups,
        [
            group("site-a-vms", "VirtualMachine", &["vm-202", "vm-201"]),
            group("site-b-vms", "VirtualMachine", &["vm-203"]),
        ]
    );
}

#[test]
fn vm_host_rules_keep_their_group_names_and_other_rules_have_none() {
    let config = stretched_config();
    let groups: Vec<(Option<i32>, Option<VmHostGroups>)> = config
        .rules
        .iter()
        .map(|rule| (rule.key, rule.vm_host.clone()))
        .collect();
    let affine = |vms: &str, hosts: &str| VmHostGroups {
        vm_group: vms.to_string(),
        affine_host_group: Some(hosts.to_string()),
        anti_affine_host_group: None,
    };
    assert_eq!(
        groups,
        [
            (Some(12), Some(affine("site-b-vms", "site-b-hosts"))),
            (Some(11), Some(affine("site-a-vms", "site-a-hosts"))),
            (Some(13), Some(affine("site-a-vms", "site-b-hosts"))),
            (
                Some(14),
                Some(VmHostGroups {
                    vm_group: "site-a-vms".to_string(),
                    affine_host_group: None,
                    anti_affine_host_group: Some("site-b-hosts".to_string()),
                })
            ),
            (Some(15), None),
        ]
    );
    // Still a rule of a kind this client never rewrites.
    assert_eq!(
        config.rules[0].kind,
        RuleType::Other("ClusterVmHostRuleInfo".to_string())
    );
    assert_eq!(config.rules[2].mandatory, None);
}

#[test]
fn a_vm_host_rule_without_group_names_reads_with_an_empty_vm_group_and_no_host_group() {
    // The WSDL makes every group name of the rule optional: not a reason to fail observation.
    let document = cluster_with(
        r#"<rule xsi:type="ClusterVmHostRuleInfo"><key>1</key><name>pin</name></rule>"#,
    );
    let Reply::Response(response) = envelope(&document).expect("envelope") else {
        panic!("expected a response");
    };
    let result = retrieve_result(&response).expect("a schema-valid rule");
    let Some(PropertyValue::ClusterConfig(config)) = result.objects[0].property("configurationEx")
    else {
        panic!("configurationEx is a ClusterConfigInfoEx");
    };
    assert_eq!(config.rules[0].vm_host, Some(VmHostGroups::default()));
}

#[test]
fn a_host_group_member_without_its_type_is_an_error_naming_the_element() {
    let document = cluster_with(
        r#"<group xsi:type="ClusterHostGroup"><name>site-a</name><host>host-1</host></group>"#,
    );
    let Reply::Response(response) = envelope(&document).expect("envelope") else {
        panic!("expected a response");
    };
    let error = retrieve_result(&response).expect_err("a reference has a type");
    assert_eq!(error.to_string(), "<host> has no <@type>");
}

#[test]
fn fault_domain_paths_read_as_strings_and_booleans_and_unreadable_ones_as_missing() {
    let response = fixture_response("retrieve-properties-stretched.xml");
    let result = retrieve_result(&response).expect("objects");
    let host = |id: &str| {
        result
            .objects
            .iter()
            .find(|o| o.obj == reference("HostSystem", id))
            .expect("host")
    };
    const ENABLED: &str = "config.vsanHostConfig.enabled";
    const NAME: &str = "config.vsanHostConfig.faultDomainInfo.name";
    assert_eq!(
        host("host-21").property(NAME),
        Some(&PropertyValue::String("site-a".to_string()))
    );
    assert_eq!(
        host("host-32").property(NAME),
        Some(&PropertyValue::String(String::new()))
    );
    assert_eq!(
        host("host-41").property(ENABLED),
        Some(&PropertyValue::Boolean(false))
    );
    let unreadable = host("host-42");
    assert_eq!(unreadable.property(ENABLED), None);
    let missing: Vec<(&str, &str)> = unreadable
        .missing
        .iter()
        .map(|(path, fault)| (path.as_str(), fault.name.as_str()))
        .collect();
    assert_eq!(missing, [(ENABLED, "NoPermission"), (NAME, "NoPermission")]);
}
