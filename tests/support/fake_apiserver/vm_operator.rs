//! The fake as a vSphere Supervisor: VM Operator's `VirtualMachine` and
//! `VirtualMachineSetResourcePolicy` custom resources (group `vmoperator.vmware.com`), served as
//! kube-apiserver serves them with VM Operator's CRDs and conversion webhook installed.
//!
//! A [`Release`] chooses the served versions: every version from v1alpha1 up to the release's
//! storage version, which is also the one discovery prefers (the CRD discovery controller prefers
//! the highest served version by Kubernetes version order, and a release stores its highest).
//! Objects are held in the storage version and converted on every read as VM Operator's webhook
//! converts them: `status.host` (up to v1alpha3) and `status.nodeName` (v1alpha4 on),
//! `poweredOn` and `PoweredOn`, `trySoft` and `TrySoft`, v1alpha1's `spec.resourcePolicyName`
//! and later `spec.reserved.resourcePolicyName`, the policy's `spec.clustermodules[].groupname`
//! and `spec.clusterModuleGroups`, `status.clustermodules[].groupname` and `groupName`;
//! `spec.promoteDisksMode` exists from v1alpha4 (`Online` by the CRD's default). A
//! VirtualMachine read in a version older than the stored one carries the webhook's
//! `vmoperator.vmware.com/conversion` annotation: the stored object without its metadata, so a
//! write back loses nothing. Policies get none (their conversion keeps no such data).
//!
//! A fake without VM Operator (a guest cluster, or any plain cluster) knows nothing of the group:
//! every path under it is the `404 page not found` of the API server's last handler, plain text
//! (Go's `http.NotFound`, not a `Status`: kube makes one of it, reason `Failed to parse error
//! data`), and `/apis` does not list it. A version the release does not serve answers the same.
//!
//! Served: discovery of the group and of each version (by [`super::discovery`]), lists of both
//! resources in a namespace or in all namespaces (paged and label-selected as every list of the
//! fake), and gets by name (of the object or its `status`). Watches and writes through the API
//! are not served (`405`, once RBAC allowed them). Objects keep no `managedFields`; writes go
//! through [`FakeCluster`]'s methods, as VM Operator writes them.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::http::{Method, StatusCode};
use axum::response::Response;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::{Map, Value, json};

use super::{FakeCluster, Request, list, not_found, plain_text};

/// VM Operator's API group.
pub const GROUP: &str = "vmoperator.vmware.com";

/// The annotation in which VM Operator's webhook keeps the stored object on down-conversion.
pub const CONVERSION_ANNOTATION: &str = "vmoperator.vmware.com/conversion";

/// A served version of the group, in Kubernetes version order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Version {
    V1alpha1,
    V1alpha2,
    V1alpha3,
    V1alpha4,
    V1alpha5,
}

impl Version {
    pub const ALL: [Version; 5] = [
        Version::V1alpha1,
        Version::V1alpha2,
        Version::V1alpha3,
        Version::V1alpha4,
        Version::V1alpha5,
    ];

    /// `v1alpha2`.
    pub fn name(self) -> &'static str {
        match self {
            Version::V1alpha1 => "v1alpha1",
            Version::V1alpha2 => "v1alpha2",
            Version::V1alpha3 => "v1alpha3",
            Version::V1alpha4 => "v1alpha4",
            Version::V1alpha5 => "v1alpha5",
        }
    }

    /// `vmoperator.vmware.com/v1alpha2`.
    pub fn api_version(self) -> &'static str {
        match self {
            Version::V1alpha1 => "vmoperator.vmware.com/v1alpha1",
            Version::V1alpha2 => "vmoperator.vmware.com/v1alpha2",
            Version::V1alpha3 => "vmoperator.vmware.com/v1alpha3",
            Version::V1alpha4 => "vmoperator.vmware.com/v1alpha4",
            Version::V1alpha5 => "vmoperator.vmware.com/v1alpha5",
        }
    }

    pub fn parse(name: &str) -> Option<Version> {
        Version::ALL
            .into_iter()
            .find(|version| version.name() == name)
    }

    /// The version an `apiVersion` names, if it is one of the group's.
    pub fn of_api_version(api_version: &str) -> Option<Version> {
        Version::ALL
            .into_iter()
            .find(|version| version.api_version() == api_version)
    }

    /// The `status` field that holds the ESXi host's name: `nodeName` from v1alpha4, `host`
    /// before.
    pub fn host_field(self) -> &'static str {
        if self >= Version::V1alpha4 {
            "nodeName"
        } else {
            "host"
        }
    }

    fn next(self) -> Option<Version> {
        Version::ALL.into_iter().find(|version| *version > self)
    }

    fn previous(self) -> Option<Version> {
        Version::ALL
            .into_iter()
            .rev()
            .find(|version| *version < self)
    }
}

/// A vSphere release's VM Operator: what it serves and stores (vks.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    /// vSphere 8.0.3: v1alpha1–v1alpha2, stores v1alpha2.
    V8_0_3,
    /// vSphere 9.0.0: up to v1alpha3.
    V9_0_0,
    /// vSphere 9.0.1: up to v1alpha4.
    V9_0_1,
    /// vSphere 9.1: up to v1alpha5.
    V9_1,
}

impl Release {
    pub const ALL: [Release; 4] = [
        Release::V8_0_3,
        Release::V9_0_0,
        Release::V9_0_1,
        Release::V9_1,
    ];

    /// The version objects are stored in, and discovery's preferred version.
    pub fn storage_version(self) -> Version {
        match self {
            Release::V8_0_3 => Version::V1alpha2,
            Release::V9_0_0 => Version::V1alpha3,
            Release::V9_0_1 => Version::V1alpha4,
            Release::V9_1 => Version::V1alpha5,
        }
    }

    /// Every served version, oldest first.
    pub fn served_versions(self) -> Vec<Version> {
        let storage = self.storage_version();
        Version::ALL
            .into_iter()
            .filter(|version| *version <= storage)
            .collect()
    }

    pub fn serves(self, version: Version) -> bool {
        version <= self.storage_version()
    }
}

/// The two resources of the group the fake serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Resource {
    VirtualMachines,
    ResourcePolicies,
}

impl Resource {
    pub const ALL: [Resource; 2] = [Resource::VirtualMachines, Resource::ResourcePolicies];

    pub fn plural(self) -> &'static str {
        match self {
            Resource::VirtualMachines => "virtualmachines",
            Resource::ResourcePolicies => "virtualmachinesetresourcepolicies",
        }
    }

    pub fn singular(self) -> &'static str {
        match self {
            Resource::VirtualMachines => "virtualmachine",
            Resource::ResourcePolicies => "virtualmachinesetresourcepolicy",
        }
    }

    pub fn kind(self) -> &'static str {
        match self {
            Resource::VirtualMachines => "VirtualMachine",
            Resource::ResourcePolicies => "VirtualMachineSetResourcePolicy",
        }
    }

    pub fn list_kind(self) -> &'static str {
        match self {
            Resource::VirtualMachines => "VirtualMachineList",
            Resource::ResourcePolicies => "VirtualMachineSetResourcePolicyList",
        }
    }

    pub fn short_names(self) -> &'static [&'static str] {
        match self {
            Resource::VirtualMachines => &["vm"],
            Resource::ResourcePolicies => &[],
        }
    }

    /// The `status` subresource, as discovery names it.
    pub fn status_subresource(self) -> &'static str {
        match self {
            Resource::VirtualMachines => "virtualmachines/status",
            Resource::ResourcePolicies => "virtualmachinesetresourcepolicies/status",
        }
    }

    fn parse(plural: &str) -> Option<Resource> {
        Resource::ALL
            .into_iter()
            .find(|resource| resource.plural() == plural)
    }

    /// Discovery's `storageVersionHash`: base64 of the first 8 bytes of the SHA-256 of
    /// `group/version/kind` of the storage version (values computed once, as the server does).
    pub fn storage_version_hash(self, storage: Version) -> &'static str {
        match (self, storage) {
            (Resource::VirtualMachines, Version::V1alpha1) => "aM7DdrFp5p0=",
            (Resource::VirtualMachines, Version::V1alpha2) => "Cp1InMacykw=",
            (Resource::VirtualMachines, Version::V1alpha3) => "VjaHpaPk6VM=",
            (Resource::VirtualMachines, Version::V1alpha4) => "ekA0kkVxja4=",
            (Resource::VirtualMachines, Version::V1alpha5) => "THPj1iok4ik=",
            (Resource::ResourcePolicies, Version::V1alpha1) => "/wAG3l2kQQo=",
            (Resource::ResourcePolicies, Version::V1alpha2) => "dIoYnayF37Y=",
            (Resource::ResourcePolicies, Version::V1alpha3) => "r1u/7DJLN9Q=",
            (Resource::ResourcePolicies, Version::V1alpha4) => "e6TkmPgi4To=",
            (Resource::ResourcePolicies, Version::V1alpha5) => "/ZfCIE54kz0=",
        }
    }
}

/// VM Operator on a Supervisor: the release and the objects, each in the storage version.
#[derive(Clone, Debug)]
pub struct VmOperator {
    pub release: Release,
    /// By `(namespace, name)`.
    pub virtual_machines: BTreeMap<(String, String), Arc<Value>>,
    /// By `(namespace, name)`.
    pub resource_policies: BTreeMap<(String, String), Arc<Value>>,
}

impl VmOperator {
    pub fn new(release: Release) -> VmOperator {
        VmOperator {
            release,
            virtual_machines: BTreeMap::new(),
            resource_policies: BTreeMap::new(),
        }
    }

    pub fn objects(&self, resource: Resource) -> &BTreeMap<(String, String), Arc<Value>> {
        match resource {
            Resource::VirtualMachines => &self.virtual_machines,
            Resource::ResourcePolicies => &self.resource_policies,
        }
    }

    fn objects_mut(&mut self, resource: Resource) -> &mut BTreeMap<(String, String), Arc<Value>> {
        match resource {
            Resource::VirtualMachines => &mut self.virtual_machines,
            Resource::ResourcePolicies => &mut self.resource_policies,
        }
    }

    /// A stored object as a client reading `version` receives it.
    pub fn served(&self, resource: Resource, stored: &Value, version: Version) -> Value {
        let storage = self.release.storage_version();
        let mut object = convert(resource, stored, version);
        if resource == Resource::VirtualMachines && version < storage {
            let mut kept = stored.clone();
            if let Some(fields) = kept.as_object_mut() {
                fields.remove("metadata");
            }
            let annotations = &mut object["metadata"]["annotations"];
            if !annotations.is_object() {
                *annotations = json!({});
            }
            annotations[CONVERSION_ANNOTATION] = json!(sorted(kept).to_string());
        }
        object
    }
}

/// A Kubernetes object of the group, in `to`: one version step at a time, as the webhook's
/// conversions through the hub amount to for the fields the fake's objects hold.
pub fn convert(resource: Resource, object: &Value, to: Version) -> Value {
    let mut object = object.clone();
    let mut at = object["apiVersion"]
        .as_str()
        .and_then(Version::of_api_version)
        .unwrap_or_else(|| panic!("a {} of {GROUP}: {object}", resource.kind()));
    while at != to {
        let step = if at < to { at.next() } else { at.previous() }.expect("a version between");
        match (resource, at.min(step)) {
            (Resource::VirtualMachines, Version::V1alpha1) => {
                virtual_machine_v1alpha1(&mut object, step > at)
            }
            (Resource::VirtualMachines, Version::V1alpha3) => {
                virtual_machine_v1alpha3(&mut object, step > at)
            }
            (Resource::ResourcePolicies, Version::V1alpha1) => {
                resource_policy_v1alpha1(&mut object, step > at)
            }
            // Nothing the fake's objects hold differs between the other neighbours.
            _ => {}
        }
        at = step;
    }
    object["apiVersion"] = json!(to.api_version());
    object
}

/// v1alpha1 ↔ v1alpha2 of a VirtualMachine: power states and modes change case
/// (`poweredOn` ↔ `PoweredOn`, `trySoft` ↔ `TrySoft`), and the policy's name moves into
/// `spec.reserved`.
fn virtual_machine_v1alpha1(object: &mut Value, up: bool) {
    let case = if up { capitalized } else { uncapitalized };
    for field in [
        "/spec/powerState",
        "/spec/powerOffMode",
        "/spec/restartMode",
        "/spec/suspendMode",
        "/status/powerState",
    ] {
        if let Some(value) = object.pointer_mut(field)
            && let Some(text) = value.as_str()
        {
            *value = json!(case(text));
        }
    }
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if up {
        if let Some(name) = spec.remove("resourcePolicyName") {
            spec.insert("reserved".into(), json!({"resourcePolicyName": name}));
        }
    } else if let Some(reserved) = spec.remove("reserved")
        && let Some(name) = reserved.get("resourcePolicyName")
    {
        spec.insert("resourcePolicyName".into(), name.clone());
    }
}

/// v1alpha3 ↔ v1alpha4 of a VirtualMachine: the host is `status.host` below, `status.nodeName`
/// above; `spec.promoteDisksMode` exists only above (the CRD defaults it to `Online`).
fn virtual_machine_v1alpha3(object: &mut Value, up: bool) {
    let (from, to) = if up {
        ("host", "nodeName")
    } else {
        ("nodeName", "host")
    };
    if let Some(status) = object.get_mut("status").and_then(Value::as_object_mut)
        && let Some(host) = status.remove(from)
    {
        status.insert(to.into(), host);
    }
    if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
        if up {
            spec.entry("promoteDisksMode").or_insert(json!("Online"));
        } else {
            spec.remove("promoteDisksMode");
        }
    }
}

/// v1alpha1 ↔ v1alpha2 of a VirtualMachineSetResourcePolicy: the module groups are
/// `spec.clustermodules[].groupname` below and `spec.clusterModuleGroups[]` above; the folder
/// `spec.folder.name` below and `spec.folder` above; the pool `spec.resourcepool` below and
/// `spec.resourcePool` above; the status's entries spell `groupname` below and `groupName` above.
fn resource_policy_v1alpha1(object: &mut Value, up: bool) {
    if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
        let (pool_from, pool_to) = if up {
            ("resourcepool", "resourcePool")
        } else {
            ("resourcePool", "resourcepool")
        };
        if let Some(pool) = spec.remove(pool_from) {
            spec.insert(pool_to.into(), pool);
        }
        if let Some(folder) = spec.remove("folder") {
            let folder = if up {
                folder.get("name").cloned().unwrap_or(Value::Null)
            } else {
                json!({"name": folder})
            };
            spec.insert("folder".into(), folder);
        }
        if up {
            if let Some(Value::Array(modules)) = spec.remove("clustermodules") {
                let groups: Vec<Value> = modules
                    .iter()
                    .filter_map(|module| module.get("groupname").cloned())
                    .collect();
                spec.insert("clusterModuleGroups".into(), Value::Array(groups));
            }
        } else if let Some(Value::Array(groups)) = spec.remove("clusterModuleGroups") {
            let modules: Vec<Value> = groups
                .into_iter()
                .map(|group| json!({"groupname": group}))
                .collect();
            spec.insert("clustermodules".into(), Value::Array(modules));
        }
    }
    let (from, to) = if up {
        ("groupname", "groupName")
    } else {
        ("groupName", "groupname")
    };
    if let Some(Value::Array(modules)) = object.pointer_mut("/status/clustermodules") {
        for module in modules.iter_mut().filter_map(Value::as_object_mut) {
            if let Some(name) = module.remove(from) {
                module.insert(to.into(), name);
            }
        }
    }
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|first| first.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

fn uncapitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|first| first.to_ascii_lowercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

/// A JSON value with every object's keys in order, as Go's encoder writes a map.
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let ordered: BTreeMap<String, Value> =
                map.into_iter().map(|(k, v)| (k, sorted(v))).collect();
            Value::Object(ordered.into_iter().collect::<Map<String, Value>>())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

impl FakeCluster {
    /// A Supervisor whose VM Operator is of `release`, holding `objects` (VirtualMachines and
    /// VirtualMachineSetResourcePolicies of any served version) as if created in that order.
    /// Its identity is the default one (the guest chart's ServiceAccount, granted nothing in VM
    /// Operator's group): a test names the Supervisor's reader ([`super::Rbac::vm_operator_reader`]),
    /// as `GuestClusterStory::supervisor` does, or a cluster-admin.
    pub fn supervisor(release: Release, objects: impl IntoIterator<Item = Value>) -> FakeCluster {
        let mut cluster = FakeCluster {
            vm_operator: Some(VmOperator::new(release)),
            ..FakeCluster::default()
        };
        for object in objects {
            cluster.store_vm_operator_object(object);
        }
        cluster
    }

    /// Stores a VirtualMachine or VirtualMachineSetResourcePolicy, status included (as VM
    /// Operator writes it through `/status`), converted to the storage version, with the
    /// metadata the server sets (uid, `resourceVersion`, `generation`, creation time). Replaces
    /// an object of the same name.
    pub fn store_vm_operator_object(&mut self, object: Value) {
        let resource = match object["kind"].as_str() {
            Some("VirtualMachine") => Resource::VirtualMachines,
            Some("VirtualMachineSetResourcePolicy") => Resource::ResourcePolicies,
            other => panic!("not an object of {GROUP}: kind {other:?}"),
        };
        let storage = self.vm_operator().release.storage_version();
        let mut object = convert(resource, &object, storage);
        let key = (
            object["metadata"]["namespace"]
                .as_str()
                .expect("a namespaced object")
                .to_string(),
            object["metadata"]["name"]
                .as_str()
                .expect("a named object")
                .to_string(),
        );
        let uid = self.new_uid();
        let revision = self.bump();
        let metadata = object["metadata"]
            .as_object_mut()
            .expect("metadata is an object");
        metadata.insert("uid".into(), json!(uid));
        metadata.insert("resourceVersion".into(), json!(revision));
        metadata.insert("generation".into(), json!(1));
        metadata
            .entry("creationTimestamp")
            .or_insert_with(|| json!(Time(super::now())));
        self.vm_operator_mut()
            .objects_mut(resource)
            .insert(key, Arc::new(object));
    }

    /// Deletes a VirtualMachine or VirtualMachineSetResourcePolicy (a new `resourceVersion` for
    /// the collection); whether it was there.
    pub fn delete_vm_operator_object(
        &mut self,
        resource: Resource,
        namespace: &str,
        name: &str,
    ) -> bool {
        let key = (namespace.to_string(), name.to_string());
        let removed = self
            .vm_operator_mut()
            .objects_mut(resource)
            .remove(&key)
            .is_some();
        if removed {
            self.bump();
        }
        removed
    }

    /// Moves VirtualMachine `namespace/name` to ESXi host `host`: the status write VM Operator
    /// makes when DRS or vMotion moved the VM (a new `resourceVersion`, the same `generation`).
    pub fn move_virtual_machine(&mut self, namespace: &str, name: &str, host: &str) {
        let field = self.vm_operator().release.storage_version().host_field();
        let revision = self.bump();
        let key = (namespace.to_string(), name.to_string());
        let stored = self
            .vm_operator_mut()
            .virtual_machines
            .get_mut(&key)
            .unwrap_or_else(|| panic!("no VirtualMachine {namespace}/{name}"));
        let object = Arc::make_mut(stored);
        object["status"][field] = json!(host);
        object["metadata"]["resourceVersion"] = json!(revision);
    }

    /// The stored VirtualMachine `namespace/name` as a client of `version` reads it.
    pub fn virtual_machine(&self, namespace: &str, name: &str, version: Version) -> Option<Value> {
        let operator = self.vm_operator.as_ref()?;
        let stored = operator
            .virtual_machines
            .get(&(namespace.to_string(), name.to_string()))?;
        Some(operator.served(Resource::VirtualMachines, stored, version))
    }

    fn vm_operator(&self) -> &VmOperator {
        self.vm_operator
            .as_ref()
            .expect("a Supervisor: FakeCluster::supervisor")
    }

    fn vm_operator_mut(&mut self) -> &mut VmOperator {
        self.vm_operator
            .as_mut()
            .expect("a Supervisor: FakeCluster::supervisor")
    }
}

/// Requests for objects under `/apis/vmoperator.vmware.com/<version>/` (`rest` follows the
/// version; discovery documents are [`super::discovery`]'s).
pub fn serve(
    cluster: &mut FakeCluster,
    request: &Request,
    version: &str,
    rest: &[&str],
) -> Response {
    let Some(release) = cluster
        .vm_operator
        .as_ref()
        .map(|operator| operator.release)
    else {
        return page_not_found();
    };
    let Some(version) = Version::parse(version).filter(|version| release.serves(*version)) else {
        return page_not_found();
    };
    let (namespace, rest) = match rest {
        ["namespaces", namespace, rest @ ..] if !rest.is_empty() => (Some(*namespace), rest),
        rest => (None, rest),
    };
    // The `status` subresource reads as the object does.
    let (resource, name) = match rest {
        [plural] => (Resource::parse(plural), None),
        [plural, name] | [plural, name, "status"] => (Resource::parse(plural), Some(*name)),
        _ => (None, None),
    };
    let Some(resource) = resource else {
        return page_not_found();
    };
    let watch = request
        .param("watch")
        .is_some_and(|value| !matches!(value.to_ascii_lowercase().as_str(), "false" | "0"));
    match (&request.method, name) {
        (&Method::GET, None) if !watch => list::serve(
            cluster,
            request,
            list::Kind::VmOperator(resource, version),
            namespace,
        ),
        (&Method::GET, Some(name)) => get(cluster, resource, version, namespace, name),
        _ => super::status(
            405,
            "MethodNotAllowed",
            &format!(
                "the fake API server does not serve {} of {}.{GROUP}",
                request.method,
                resource.plural()
            ),
            None,
        ),
    }
}

fn get(
    cluster: &FakeCluster,
    resource: Resource,
    version: Version,
    namespace: Option<&str>,
    name: &str,
) -> Response {
    let operator = cluster.vm_operator();
    // A name without a namespace is no route of a namespaced resource.
    let Some(namespace) = namespace else {
        return page_not_found();
    };
    match operator
        .objects(resource)
        .get(&(namespace.to_string(), name.to_string()))
    {
        Some(stored) => super::object(StatusCode::OK, &operator.served(resource, stored, version)),
        None => not_found(resource.plural(), GROUP, name),
    }
}

/// What kube-apiserver's last handler answers for a path nothing serves.
pub fn page_not_found() -> Response {
    plain_text(404, "404 page not found")
}
