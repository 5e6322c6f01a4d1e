//! vim25 request envelopes.
//!
//! Element order inside every data object follows the WSDL sequence: vcsim does not care, but
//! real vCenter's deserializer is strict. Polymorphic values carry `xsi:type` (`spec`, `info`,
//! `removeKey`, `selectSet`): without it vCenter rejects the request and vcsim silently stores a
//! rule without its VMs.

use std::fmt::Write as _;

use quick_xml::escape::escape;

use super::MoRef;

/// A request ready to post: the method name (for logs and errors) and its envelope.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Request {
    pub method: &'static str,
    pub body: String,
}

/// `Login` carries the password: its body never goes into Debug output.
impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("method", &self.method)
            .finish_non_exhaustive()
    }
}

/// One `PropertySpec`: which properties to read from objects of one type.
pub(crate) struct PropertySpec<'a> {
    pub kind: &'a str,
    pub paths: &'a [&'a str],
}

/// One `TraversalSpec`: from objects of `kind`, follow property `path`, then the named specs.
pub(crate) struct TraversalSpec<'a> {
    pub name: &'a str,
    pub kind: &'a str,
    pub path: &'a str,
    pub select: &'a [&'a str],
}

/// A VM-VM anti-affinity rule as sent in `ClusterConfigSpecEx.rulesSpec`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AntiAffinityRule {
    /// The server-assigned key; set for edits.
    pub key: Option<i32>,
    pub name: String,
    pub enabled: bool,
    pub mandatory: bool,
    pub user_created: bool,
    /// Echoed on edits: the whole rule is replaced, and vcsim drops an unsent uuid.
    pub rule_uuid: Option<String>,
    pub vms: Vec<MoRef>,
}

/// One `ClusterRuleSpec`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RuleOperation {
    Add(AntiAffinityRule),
    Edit(AntiAffinityRule),
    Remove { key: i32 },
}

fn envelope(method: &'static str, this: &MoRef, inner: &str) -> Request {
    let mut body = String::with_capacity(512 + inner.len());
    body.push_str(
        r#"<?xml version="1.0" encoding="UTF-8"?><soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soapenv:Body>"#,
    );
    let _ = write!(body, r#"<{method} xmlns="urn:vim25">"#);
    push_reference(&mut body, "_this", this);
    body.push_str(inner);
    let _ = write!(body, "</{method}></soapenv:Body></soapenv:Envelope>");
    Request { method, body }
}

fn push_reference(out: &mut String, element: &str, reference: &MoRef) {
    let _ = write!(
        out,
        r#"<{element} type="{}">{}</{element}>"#,
        escape(reference.kind.as_str()),
        escape(reference.value.as_str())
    );
}

fn push_text(out: &mut String, element: &str, text: &str) {
    let _ = write!(out, "<{element}>{}</{element}>", escape(text));
}

pub(crate) fn retrieve_service_content() -> Request {
    envelope(
        "RetrieveServiceContent",
        &MoRef::new("ServiceInstance", "ServiceInstance"),
        "",
    )
}

pub(crate) fn login(session_manager: &MoRef, username: &str, password: &str) -> Request {
    let mut inner = String::new();
    push_text(&mut inner, "userName", username);
    push_text(&mut inner, "password", password);
    envelope("Login", session_manager, &inner)
}

pub(crate) fn logout(session_manager: &MoRef) -> Request {
    envelope("Logout", session_manager, "")
}

pub(crate) fn create_container_view(
    view_manager: &MoRef,
    container: &MoRef,
    kinds: &[&str],
) -> Request {
    let mut inner = String::new();
    push_reference(&mut inner, "container", container);
    for kind in kinds {
        push_text(&mut inner, "type", kind);
    }
    inner.push_str("<recursive>true</recursive>");
    envelope("CreateContainerView", view_manager, &inner)
}

pub(crate) fn destroy_view(view: &MoRef) -> Request {
    envelope("DestroyView", view, "")
}

/// `HasPrivilegeOnEntities`: whether the session `session_id` (a `UserSession.key`) holds each
/// of `privileges` on each of `entities`. WSDL order: entity, sessionId, privId.
pub(crate) fn has_privilege_on_entities(
    authorization_manager: &MoRef,
    entities: &[MoRef],
    session_id: &str,
    privileges: &[&str],
) -> Request {
    let mut inner = String::new();
    for entity in entities {
        push_reference(&mut inner, "entity", entity);
    }
    push_text(&mut inner, "sessionId", session_id);
    for privilege in privileges {
        push_text(&mut inner, "privId", privilege);
    }
    envelope("HasPrivilegeOnEntities", authorization_manager, &inner)
}

/// `RetrievePropertiesEx` with one `PropertyFilterSpec`: the properties, starting from `root`
/// (skipped when `traversal` is not empty, i.e. when it is a view to traverse).
pub(crate) fn retrieve_properties(
    property_collector: &MoRef,
    properties: &[PropertySpec<'_>],
    root: &MoRef,
    traversal: &[TraversalSpec<'_>],
    max_objects: Option<u32>,
) -> Request {
    let mut inner = String::from("<specSet>");
    for spec in properties {
        inner.push_str("<propSet>");
        push_text(&mut inner, "type", spec.kind);
        for path in spec.paths {
            push_text(&mut inner, "pathSet", path);
        }
        inner.push_str("</propSet>");
    }
    inner.push_str("<objectSet>");
    push_reference(&mut inner, "obj", root);
    if !traversal.is_empty() {
        inner.push_str("<skip>true</skip>");
        for spec in traversal {
            inner.push_str(r#"<selectSet xsi:type="TraversalSpec">"#);
            push_text(&mut inner, "name", spec.name);
            push_text(&mut inner, "type", spec.kind);
            push_text(&mut inner, "path", spec.path);
            inner.push_str("<skip>false</skip>");
            for name in spec.select {
                inner.push_str("<selectSet>");
                push_text(&mut inner, "name", name);
                inner.push_str("</selectSet>");
            }
            inner.push_str("</selectSet>");
        }
    }
    inner.push_str("</objectSet></specSet>");
    match max_objects {
        Some(max) => {
            let _ = write!(inner, "<options><maxObjects>{max}</maxObjects></options>");
        }
        None => inner.push_str("<options></options>"),
    }
    envelope("RetrievePropertiesEx", property_collector, &inner)
}

pub(crate) fn continue_retrieve_properties(property_collector: &MoRef, token: &str) -> Request {
    let mut inner = String::new();
    push_text(&mut inner, "token", token);
    envelope("ContinueRetrievePropertiesEx", property_collector, &inner)
}

pub(crate) fn cancel_retrieve_properties(property_collector: &MoRef, token: &str) -> Request {
    let mut inner = String::new();
    push_text(&mut inner, "token", token);
    envelope("CancelRetrievePropertiesEx", property_collector, &inner)
}

/// `ReconfigureComputeResource_Task` with a `ClusterConfigSpecEx` holding only `rulesSpec`, and
/// `modify=true` so nothing else of the configuration changes.
pub(crate) fn reconfigure_rules(cluster: &MoRef, operations: &[RuleOperation]) -> Request {
    let mut inner = String::from(r#"<spec xsi:type="ClusterConfigSpecEx">"#);
    for operation in operations {
        inner.push_str("<rulesSpec>");
        match operation {
            RuleOperation::Add(rule) => {
                inner.push_str("<operation>add</operation>");
                push_rule(&mut inner, rule);
            }
            RuleOperation::Edit(rule) => {
                inner.push_str("<operation>edit</operation>");
                push_rule(&mut inner, rule);
            }
            RuleOperation::Remove { key } => {
                // Untyped, vcsim's handler panics and real vCenter cannot read the value.
                let _ = write!(
                    inner,
                    r#"<operation>remove</operation><removeKey xsi:type="xsd:int">{key}</removeKey>"#
                );
            }
        }
        inner.push_str("</rulesSpec>");
    }
    inner.push_str("</spec><modify>true</modify>");
    envelope("ReconfigureComputeResource_Task", cluster, &inner)
}

/// `ClusterRuleInfo` sequence: key, status, enabled, name, mandatory, userCreated, inCompliance,
/// ruleUuid; then the `ClusterAntiAffinityRuleSpec` extension: vm.
fn push_rule(out: &mut String, rule: &AntiAffinityRule) {
    out.push_str(r#"<info xsi:type="ClusterAntiAffinityRuleSpec">"#);
    if let Some(key) = rule.key {
        let _ = write!(out, "<key>{key}</key>");
    }
    let _ = write!(out, "<enabled>{}</enabled>", rule.enabled);
    push_text(out, "name", &rule.name);
    let _ = write!(out, "<mandatory>{}</mandatory>", rule.mandatory);
    let _ = write!(out, "<userCreated>{}</userCreated>", rule.user_created);
    if let Some(uuid) = &rule.rule_uuid {
        push_text(out, "ruleUuid", uuid);
    }
    for vm in &rule.vms {
        push_reference(out, "vm", vm);
    }
    out.push_str("</info>");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule() -> AntiAffinityRule {
        AntiAffinityRule {
            key: None,
            name: "vsphere-descheduler:lab:shop:Deployment/web & <db>".to_string(),
            enabled: true,
            mandatory: false,
            user_created: true,
            rule_uuid: None,
            vms: vec![
                MoRef::new("VirtualMachine", "vm-43"),
                MoRef::new("VirtualMachine", "vm-46"),
            ],
        }
    }

    #[test]
    fn login_escapes_the_credentials_and_hides_them_from_debug() {
        let request = login(
            &MoRef::new("SessionManager", "SessionManager"),
            "administrator@vsphere.local",
            r#"p<a>&"s's"#,
        );
        assert!(
            request
                .body
                .contains("<password>p&lt;a&gt;&amp;&quot;s&apos;s</password>"),
            "{}",
            request.body
        );
        assert!(!format!("{request:?}").contains("p<a>"));
    }

    #[test]
    fn added_rule_is_typed_and_follows_the_wsdl_order() {
        let request = reconfigure_rules(
            &MoRef::new("ClusterComputeResource", "domain-c7"),
            &[RuleOperation::Add(rule())],
        );
        let expected = concat!(
            r#"<ReconfigureComputeResource_Task xmlns="urn:vim25">"#,
            r#"<_this type="ClusterComputeResource">domain-c7</_this>"#,
            r#"<spec xsi:type="ClusterConfigSpecEx"><rulesSpec><operation>add</operation>"#,
            r#"<info xsi:type="ClusterAntiAffinityRuleSpec"><enabled>true</enabled>"#,
            r#"<name>vsphere-descheduler:lab:shop:Deployment/web &amp; &lt;db&gt;</name>"#,
            r#"<mandatory>false</mandatory><userCreated>true</userCreated>"#,
            r#"<vm type="VirtualMachine">vm-43</vm><vm type="VirtualMachine">vm-46</vm></info>"#,
            r#"</rulesSpec></spec><modify>true</modify></ReconfigureComputeResource_Task>"#,
        );
        assert!(request.body.contains(expected), "{}", request.body);
    }

    #[test]
    fn edited_rule_carries_its_key_first_and_its_uuid_before_the_vms() {
        let mut edited = rule();
        edited.key = Some(7);
        edited.rule_uuid = Some("c1ff419e".to_string());
        let request = reconfigure_rules(
            &MoRef::new("ClusterComputeResource", "domain-c7"),
            &[RuleOperation::Edit(edited)],
        );
        assert!(request.body.contains(
            r#"<operation>edit</operation><info xsi:type="ClusterAntiAffinityRuleSpec"><key>7</key><enabled>true</enabled>"#
        ));
        assert!(
            request
                .body
                .contains(r#"<ruleUuid>c1ff419e</ruleUuid><vm type="VirtualMachine">vm-43</vm>"#)
        );
    }

    #[test]
    fn removal_sends_a_typed_key_and_no_info() {
        let request = reconfigure_rules(
            &MoRef::new("ClusterComputeResource", "domain-c7"),
            &[RuleOperation::Remove { key: 2 }],
        );
        assert!(request.body.contains(
            r#"<rulesSpec><operation>remove</operation><removeKey xsi:type="xsd:int">2</removeKey></rulesSpec>"#
        ));
        assert!(!request.body.contains("<info"));
    }

    #[test]
    fn retrieval_skips_the_view_and_traverses_it() {
        let request = retrieve_properties(
            &MoRef::new("PropertyCollector", "propertyCollector"),
            &[PropertySpec {
                kind: "VirtualMachine",
                paths: &["name", "runtime.host"],
            }],
            &MoRef::new("ContainerView", "session[1]2"),
            &[TraversalSpec {
                name: "view",
                kind: "ContainerView",
                path: "view",
                select: &["parent"],
            }],
            Some(100),
        );
        assert!(request.body.contains(concat!(
            r#"<specSet><propSet><type>VirtualMachine</type><pathSet>name</pathSet><pathSet>runtime.host</pathSet></propSet>"#,
            r#"<objectSet><obj type="ContainerView">session[1]2</obj><skip>true</skip>"#,
            r#"<selectSet xsi:type="TraversalSpec"><name>view</name><type>ContainerView</type><path>view</path><skip>false</skip>"#,
            r#"<selectSet><name>parent</name></selectSet></selectSet></objectSet></specSet>"#,
            r#"<options><maxObjects>100</maxObjects></options>"#,
        )));
    }

    #[test]
    fn a_privilege_query_lists_entities_then_the_session_then_the_privileges() {
        let request = has_privilege_on_entities(
            &MoRef::new("AuthorizationManager", "AuthorizationManager"),
            &[
                MoRef::new("Folder", "group-d1"),
                MoRef::new("ClusterComputeResource", "domain-c7"),
            ],
            "52b1",
            &["System.View", "Host.Inventory.EditCluster"],
        );
        assert!(request.body.contains(concat!(
            r#"<HasPrivilegeOnEntities xmlns="urn:vim25"><_this type="AuthorizationManager">AuthorizationManager</_this>"#,
            r#"<entity type="Folder">group-d1</entity><entity type="ClusterComputeResource">domain-c7</entity>"#,
            r#"<sessionId>52b1</sessionId><privId>System.View</privId>"#,
            r#"<privId>Host.Inventory.EditCluster</privId></HasPrivilegeOnEntities>"#,
        )));
        assert!(!format!("{request:?}").contains("52b1"));
    }

    #[test]
    fn a_single_object_read_has_no_traversal() {
        let request = retrieve_properties(
            &MoRef::new("PropertyCollector", "propertyCollector"),
            &[PropertySpec {
                kind: "Task",
                paths: &["info.state", "info.error"],
            }],
            &MoRef::new("Task", "task-53"),
            &[],
            None,
        );
        assert!(request.body.contains(
            r#"<objectSet><obj type="Task">task-53</obj></objectSet></specSet><options></options>"#
        ));
    }
}
