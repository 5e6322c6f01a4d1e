//! Typed values read from vim25 responses: the envelope and its faults, the service content, and
//! property-collector results with the few data object types observation needs.

use secrecy::SecretString;

use super::xml::{Element, XmlParseError, parse};
use super::{Fault, MissingPrivilege, MoRef};

/// The service content singletons this client uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ServiceContent {
    pub root_folder: MoRef,
    pub property_collector: MoRef,
    pub view_manager: MoRef,
    pub session_manager: MoRef,
    /// `about.apiVersion`, e.g. `8.0.3.0`; selects the wire version in `SOAPAction`.
    pub api_version: String,
    /// `about.fullName`, for logs.
    pub full_name: String,
    /// Absent on servers without roles and permissions (a standalone ESXi answers with one).
    pub authorization_manager: Option<MoRef>,
}

/// The `UserSession` a `Login` returns.
#[derive(Clone)]
pub(crate) struct UserSession {
    /// The session's id, as the privilege queries name a session. A credential while the session
    /// lasts (vCenter may use it as the cookie's value): kept as a secret, never shown.
    pub key: SecretString,
    /// The user name as vCenter knows it (e.g. `VSPHERE.LOCAL\user`).
    pub user_name: String,
}

impl std::fmt::Debug for UserSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserSession")
            .field("user_name", &self.user_name)
            .finish_non_exhaustive()
    }
}

/// One `EntityPrivilege` of `HasPrivilegeOnEntities`: whether the session holds each privilege
/// asked about on one entity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EntityPrivileges {
    pub entity: MoRef,
    /// `(privilege id, granted)` in the server's order.
    pub privileges: Vec<(String, bool)>,
}

/// One page of `RetrievePropertiesEx` / `ContinueRetrievePropertiesEx`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct RetrieveResult {
    /// Set when more pages follow.
    pub token: Option<String>,
    pub objects: Vec<ObjectContent>,
}

/// The requested properties of one managed object.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ObjectContent {
    pub obj: MoRef,
    /// Properties that are set; unset ones are absent, as on the wire.
    pub properties: Vec<(String, PropertyValue)>,
    /// Properties the server could not read (`missingSet`), with the reason.
    pub missing: Vec<(String, Fault)>,
}

impl ObjectContent {
    pub fn property(&self, path: &str) -> Option<&PropertyValue> {
        self.properties
            .iter()
            .find(|(name, _)| name == path)
            .map(|(_, value)| value)
    }
}

/// A property value, typed by its `xsi:type`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum PropertyValue {
    /// `xsd:string` and enumerations (`VirtualMachinePowerState`, `TaskInfoState`, …).
    String(String),
    Boolean(bool),
    Reference(MoRef),
    ClusterConfig(ClusterConfig),
    /// `LocalizedMethodFault`, e.g. a task's `info.error`.
    Fault(Fault),
    /// Any other data object, which this client does not read; the type name is kept for
    /// messages.
    Other(String),
}

impl PropertyValue {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            PropertyValue::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            PropertyValue::Boolean(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_reference(&self) -> Option<&MoRef> {
        match self {
            PropertyValue::Reference(r) => Some(r),
            _ => None,
        }
    }
}

/// The parts of `ClusterConfigInfoEx` that decide whether DRS enforces rules, and what vSphere HA
/// does when a host fails.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ClusterConfig {
    /// `drsConfig.enabled`; `None` when the server left it out.
    pub drs_enabled: Option<bool>,
    /// `drsConfig.defaultVmBehavior`.
    pub drs_default_vm_behavior: Option<String>,
    /// `drsVmConfig`: per-VM overrides.
    pub drs_vm_overrides: Vec<DrsVmOverride>,
    pub rules: Vec<RuleInfo>,
    /// `group` entries of type `ClusterHostGroup`, in the server's order.
    pub host_groups: Vec<GroupInfo>,
    /// `group` entries of type `ClusterVmGroup`, in the server's order.
    pub vm_groups: Vec<GroupInfo>,
    /// `dasConfig`; every field unset when the server sent it empty (vcsim does for a cluster
    /// created without one) or left it out.
    pub das: DasConfig,
}

/// `ClusterDasConfigInfo`: the cluster's vSphere HA configuration, as the wire has it (unset
/// fields stay `None`; what they default to is the caller's decision).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct DasConfig {
    pub enabled: Option<bool>,
    /// `failoverLevel` of the configuration itself, from before admission control policies
    /// (vSphere 4.0): the host failures to tolerate when `admissionControlPolicy` is unset.
    pub failover_level: Option<u32>,
    pub admission_control_enabled: Option<bool>,
    pub admission_control_policy: Option<AdmissionControlPolicy>,
    /// `defaultVmSettings.restartPriority`.
    pub restart_priority: Option<String>,
    /// `option`: HA's advanced options, in the order the server sent them.
    pub options: Vec<OptionValue>,
}

/// A `ClusterDasAdmissionControlPolicy`, by its `xsi:type`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum AdmissionControlPolicy {
    /// `ClusterFailoverLevelAdmissionControlPolicy`.
    FailoverLevel { failover_level: u32 },
    /// `ClusterFailoverResourcesAdmissionControlPolicy`.
    FailoverResources {
        cpu_percent: u32,
        memory_percent: u32,
        failover_level: Option<u32>,
    },
    /// `ClusterFailoverHostAdmissionControlPolicy`: the dedicated failover hosts.
    FailoverHosts { hosts: Vec<MoRef> },
    /// A policy type this client does not read, by type name.
    Other(String),
}

/// One `OptionValue`: an advanced option's key and its value's text (`None` when unset).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct OptionValue {
    pub key: String,
    pub value: Option<String>,
}

/// One DRS group (`ClusterHostGroup` or `ClusterVmGroup`): its name and members, hosts or VMs
/// by the group's type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GroupInfo {
    pub name: String,
    pub members: Vec<MoRef>,
}

/// The groups a `ClusterVmHostRuleInfo` ties together, by name, as the wire has them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct VmHostGroups {
    /// `vmGroupName`; empty when the server sent none.
    pub vm_group: String,
    /// `affineHostGroupName`.
    pub affine_host_group: Option<String>,
    /// `antiAffineHostGroupName`.
    pub anti_affine_host_group: Option<String>,
}

/// One `ClusterDrsVmConfigInfo`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DrsVmOverride {
    pub vm: MoRef,
    pub enabled: Option<bool>,
    pub behavior: Option<String>,
}

/// The kind of a cluster rule, from its `xsi:type`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RuleType {
    /// `ClusterAntiAffinityRuleSpec`.
    AntiAffinity,
    /// `ClusterAffinityRuleSpec`.
    Affinity,
    /// VM-Host, dependency and any future rule type, by type name. Kept so it is known and never
    /// rewritten.
    Other(String),
}

/// One `ClusterRuleInfo` of any kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RuleInfo {
    pub kind: RuleType,
    pub key: Option<i32>,
    pub name: String,
    pub enabled: Option<bool>,
    pub mandatory: Option<bool>,
    pub user_created: Option<bool>,
    pub rule_uuid: Option<String>,
    /// Member VMs of VM-VM rules; empty for other kinds.
    pub vms: Vec<MoRef>,
    /// The groups of a `ClusterVmHostRuleInfo`; `None` for other kinds.
    pub vm_host: Option<VmHostGroups>,
}

/// The `<Method>Response` element of a successful call, read by the functions below.
#[derive(Clone, Debug)]
pub(crate) struct Response(Element);

/// What a reply held: the method's response, or a SOAP fault.
pub(crate) enum Reply {
    Response(Response),
    Fault(Fault),
}

/// Reads an envelope: the first element of the body is either a fault or `<Method>Response`.
pub(crate) fn envelope(document: &[u8]) -> Result<Reply, XmlParseError> {
    let root = parse(document)?;
    let body = root
        .children
        .into_iter()
        .find(|c| c.name == "Body")
        .ok_or_else(|| XmlParseError::Missing {
            parent: "Envelope".to_string(),
            child: "Body".to_string(),
        })?;
    let first = body
        .children
        .into_iter()
        .next()
        .ok_or_else(|| XmlParseError::Missing {
            parent: "Body".to_string(),
            child: "a response".to_string(),
        })?;
    if first.name == "Fault" {
        return Ok(Reply::Fault(soap_fault(&first)));
    }
    Ok(Reply::Response(Response(first)))
}

/// `<soapenv:Fault>`: `faultstring` and `detail/<XFault xsi:type="X">`.
fn soap_fault(fault: &Element) -> Fault {
    let message = fault
        .child_text("faultstring")
        .unwrap_or_default()
        .to_string();
    let detail = fault
        .child("detail")
        .and_then(|detail| detail.children.first());
    let name = detail.map(fault_type).unwrap_or_else(|| {
        // No detail: a fault of the SOAP layer itself, e.g. a request the server could not
        // read.
        fault
            .child_text("faultcode")
            .map(|code| code.rsplit(':').next().unwrap_or(code).to_string())
            .unwrap_or_else(|| "SoapFault".to_string())
    });
    let missing_privilege = detail.and_then(|detail| missing_privilege(&name, detail));
    Fault {
        name,
        message,
        missing_privilege,
    }
}

/// A `NoPermission` fault's `privilegeId` and `object`. Only for that type: `NotAuthenticated`
/// extends it, but names `System.View` for a session that is simply gone.
fn missing_privilege(name: &str, detail: &Element) -> Option<Box<MissingPrivilege>> {
    if name != "NoPermission" {
        return None;
    }
    let privilege = detail.child_text("privilegeId")?.trim().to_string();
    let object = detail
        .child("object")
        .and_then(|object| reference(object).ok())
        .map(|object| object.to_string())
        .unwrap_or_default();
    Some(Box::new(MissingPrivilege { privilege, object }))
}

/// The vim25 fault type of a detail element: its `xsi:type`, else its name without the `Fault`
/// suffix the wire adds (`InvalidLoginFault` → `InvalidLogin`).
fn fault_type(detail: &Element) -> String {
    detail.xsi_type.clone().unwrap_or_else(|| {
        detail
            .name
            .strip_suffix("Fault")
            .unwrap_or(&detail.name)
            .to_string()
    })
}

/// `LocalizedMethodFault`: `fault` (typed) and `localizedMessage`.
fn localized_fault(element: &Element) -> Fault {
    let detail = element.child("fault");
    let name = detail
        .map(fault_type)
        .unwrap_or_else(|| "MethodFault".to_string());
    let message = element
        .child_text("localizedMessage")
        .unwrap_or_default()
        .to_string();
    let missing_privilege = detail.and_then(|detail| missing_privilege(&name, detail));
    Fault {
        name,
        message,
        missing_privilege,
    }
}

pub(crate) fn reference(element: &Element) -> Result<MoRef, XmlParseError> {
    let kind = element
        .attribute("type")
        .ok_or_else(|| XmlParseError::Missing {
            parent: element.name.clone(),
            child: "@type".to_string(),
        })?;
    Ok(MoRef::new(kind, element.text.trim()))
}

/// `returnval` holding a managed object reference (`CreateContainerView`, `*_Task`).
pub(crate) fn returned_reference(response: &Response) -> Result<MoRef, XmlParseError> {
    reference(response.0.required("returnval")?)
}

pub(crate) fn service_content(response: &Response) -> Result<ServiceContent, XmlParseError> {
    let content = response.0.required("returnval")?;
    let about = content.required("about")?;
    Ok(ServiceContent {
        root_folder: reference(content.required("rootFolder")?)?,
        property_collector: reference(content.required("propertyCollector")?)?,
        view_manager: reference(content.required("viewManager")?)?,
        session_manager: reference(content.required("sessionManager")?)?,
        api_version: about.required("apiVersion")?.text.trim().to_string(),
        full_name: about.child_text("fullName").unwrap_or_default().to_string(),
        authorization_manager: content
            .child("authorizationManager")
            .map(reference)
            .transpose()?,
    })
}

/// `LoginResponse`: the `UserSession`'s key and user name.
pub(crate) fn user_session(response: &Response) -> Result<UserSession, XmlParseError> {
    let session = response.0.required("returnval")?;
    Ok(UserSession {
        key: SecretString::from(session.required("key")?.text.trim().to_string()),
        user_name: session
            .child_text("userName")
            .unwrap_or_default()
            .trim()
            .to_string(),
    })
}

/// `HasPrivilegeOnEntitiesResponse`: one `EntityPrivilege` per entity asked about.
pub(crate) fn entity_privileges(
    response: &Response,
) -> Result<Vec<EntityPrivileges>, XmlParseError> {
    response
        .0
        .children_named("returnval")
        .map(|entity| {
            let privileges = entity
                .children_named("privAvailability")
                .map(|availability| {
                    Ok((
                        availability.required("privId")?.text.trim().to_string(),
                        availability.required("isGranted")?.boolean()?,
                    ))
                })
                .collect::<Result<_, XmlParseError>>()?;
            Ok(EntityPrivileges {
                entity: reference(entity.required("entity")?)?,
                privileges,
            })
        })
        .collect()
}

/// `RetrievePropertiesExResponse` or `ContinueRetrievePropertiesExResponse`. An empty response
/// (no `returnval`) means no object matched.
pub(crate) fn retrieve_result(response: &Response) -> Result<RetrieveResult, XmlParseError> {
    let Some(result) = response.0.child("returnval") else {
        return Ok(RetrieveResult::default());
    };
    let token = result
        .child_text("token")
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string);
    let objects = result
        .children_named("objects")
        .map(object_content)
        .collect::<Result<_, _>>()?;
    Ok(RetrieveResult { token, objects })
}

fn object_content(objects: &Element) -> Result<ObjectContent, XmlParseError> {
    let obj = reference(objects.required("obj")?)?;
    let mut properties = Vec::new();
    for property in objects.children_named("propSet") {
        let name = property.required("name")?.text.clone();
        let Some(val) = property.child("val") else {
            continue;
        };
        properties.push((name, value(val)?));
    }
    let missing = objects
        .children_named("missingSet")
        .map(|missing| {
            let path = missing.child_text("path").unwrap_or_default().to_string();
            let fault = missing
                .child("fault")
                .map(localized_fault)
                .unwrap_or_else(|| Fault::new("MethodFault", ""));
            (path, fault)
        })
        .collect();
    Ok(ObjectContent {
        obj,
        properties,
        missing,
    })
}

fn value(val: &Element) -> Result<PropertyValue, XmlParseError> {
    let kind = val.xsi_type.as_deref().unwrap_or("string");
    Ok(match kind {
        "boolean" => PropertyValue::Boolean(val.boolean()?),
        "ManagedObjectReference" => PropertyValue::Reference(reference(val)?),
        "ClusterConfigInfoEx" => PropertyValue::ClusterConfig(cluster_config(val)?),
        "LocalizedMethodFault" => PropertyValue::Fault(localized_fault(val)),
        // Strings and enumerations are leaves; anything with structure is a data object.
        _ if val.children.is_empty() => PropertyValue::String(val.text.clone()),
        other => PropertyValue::Other(other.to_string()),
    })
}

fn cluster_config(config: &Element) -> Result<ClusterConfig, XmlParseError> {
    let drs = config.child("drsConfig");
    let drs_enabled = drs
        .map(|d| d.child_boolean("enabled"))
        .transpose()?
        .flatten();
    let drs_default_vm_behavior = drs
        .and_then(|d| d.child_text("defaultVmBehavior"))
        .map(str::to_string);
    let drs_vm_overrides = config
        .children_named("drsVmConfig")
        .map(|o| {
            Ok(DrsVmOverride {
                vm: reference(o.required("key")?)?,
                enabled: o.child_boolean("enabled")?,
                behavior: o.child_text("behavior").map(str::to_string),
            })
        })
        .collect::<Result<_, XmlParseError>>()?;
    let rules = config
        .children_named("rule")
        .map(rule_info)
        .collect::<Result<_, _>>()?;
    let (host_groups, vm_groups) = groups(config)?;
    let das = config
        .child("dasConfig")
        .map(das_config)
        .transpose()?
        .unwrap_or_default();
    Ok(ClusterConfig {
        drs_enabled,
        drs_default_vm_behavior,
        drs_vm_overrides,
        rules,
        host_groups,
        vm_groups,
        das,
    })
}

/// `group` entries by their `xsi:type`: host groups list `host`, VM groups `vm`. Other and
/// untyped groups are left out: nothing here reads them.
fn groups(config: &Element) -> Result<(Vec<GroupInfo>, Vec<GroupInfo>), XmlParseError> {
    let mut host_groups = Vec::new();
    let mut vm_groups = Vec::new();
    for group in config.children_named("group") {
        let (groups, member) = match group.xsi_type.as_deref() {
            Some("ClusterHostGroup") => (&mut host_groups, "host"),
            Some("ClusterVmGroup") => (&mut vm_groups, "vm"),
            _ => continue,
        };
        groups.push(GroupInfo {
            name: group.required("name")?.text.clone(),
            members: group
                .children_named(member)
                .map(reference)
                .collect::<Result<_, _>>()?,
        });
    }
    Ok((host_groups, vm_groups))
}

/// The group names of a `ClusterVmHostRuleInfo`. The WSDL makes all three optional; a rule
/// without `vmGroupName` (which vCenter does not create) reads with an empty one.
fn vm_host_groups(rule: &Element) -> VmHostGroups {
    let name = |child: &str| rule.child_text(child).map(str::to_string);
    VmHostGroups {
        vm_group: name("vmGroupName").unwrap_or_default(),
        affine_host_group: name("affineHostGroupName"),
        anti_affine_host_group: name("antiAffineHostGroupName"),
    }
}

fn das_config(das: &Element) -> Result<DasConfig, XmlParseError> {
    Ok(DasConfig {
        enabled: das.child_boolean("enabled")?,
        failover_level: das.child("failoverLevel").map(Element::count).transpose()?,
        admission_control_enabled: das.child_boolean("admissionControlEnabled")?,
        admission_control_policy: das
            .child("admissionControlPolicy")
            .map(admission_control_policy)
            .transpose()?,
        restart_priority: das
            .child("defaultVmSettings")
            .and_then(|settings| settings.child_text("restartPriority"))
            .map(|priority| priority.trim().to_string()),
        options: das
            .children_named("option")
            .map(|option| {
                Ok(OptionValue {
                    key: option.required("key")?.text.trim().to_string(),
                    value: option.child_text("value").map(str::to_string),
                })
            })
            .collect::<Result<_, XmlParseError>>()?,
    })
}

fn admission_control_policy(policy: &Element) -> Result<AdmissionControlPolicy, XmlParseError> {
    let count = |name: &str| policy.required(name).and_then(Element::count);
    Ok(match policy.xsi_type.as_deref() {
        Some("ClusterFailoverLevelAdmissionControlPolicy") => {
            AdmissionControlPolicy::FailoverLevel {
                failover_level: count("failoverLevel")?,
            }
        }
        Some("ClusterFailoverResourcesAdmissionControlPolicy") => {
            AdmissionControlPolicy::FailoverResources {
                cpu_percent: count("cpuFailoverResourcesPercent")?,
                memory_percent: count("memoryFailoverResourcesPercent")?,
                failover_level: policy
                    .child("failoverLevel")
                    .map(Element::count)
                    .transpose()?,
            }
        }
        Some("ClusterFailoverHostAdmissionControlPolicy") => {
            AdmissionControlPolicy::FailoverHosts {
                hosts: policy
                    .children_named("failoverHosts")
                    .map(reference)
                    .collect::<Result<_, _>>()?,
            }
        }
        Some(other) => AdmissionControlPolicy::Other(other.to_string()),
        // Without a type the policy is the abstract base type, which reserves nothing known.
        None => AdmissionControlPolicy::Other("ClusterDasAdmissionControlPolicy".to_string()),
    })
}

fn rule_info(rule: &Element) -> Result<RuleInfo, XmlParseError> {
    let kind = match rule.xsi_type.as_deref() {
        Some("ClusterAntiAffinityRuleSpec") => RuleType::AntiAffinity,
        Some("ClusterAffinityRuleSpec") => RuleType::Affinity,
        Some(other) => RuleType::Other(other.to_string()),
        None => RuleType::Other("ClusterRuleInfo".to_string()),
    };
    let vms = match kind {
        RuleType::AntiAffinity | RuleType::Affinity => rule
            .children_named("vm")
            .map(reference)
            .collect::<Result<_, _>>()?,
        RuleType::Other(_) => Vec::new(),
    };
    let vm_host = match rule.xsi_type.as_deref() {
        Some("ClusterVmHostRuleInfo") => Some(vm_host_groups(rule)),
        _ => None,
    };
    Ok(RuleInfo {
        kind,
        key: rule.child("key").map(Element::int).transpose()?,
        name: rule.child_text("name").unwrap_or_default().to_string(),
        enabled: rule.child_boolean("enabled")?,
        mandatory: rule.child_boolean("mandatory")?,
        user_created: rule.child_boolean("userCreated")?,
        rule_uuid: rule.child_text("ruleUuid").map(str::to_string),
        vms,
        vm_host,
    })
}
