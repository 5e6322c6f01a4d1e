//! Authorization as kube-apiserver's RBAC authorizer does it, for the one identity that sends
//! the requests ([`Rbac`]), and `SelfSubjectAccessReview`s answered from the same grants.
//!
//! By default the identity is the chart's ServiceAccount `kube-system/vsd-vsphere-descheduler`
//! with exactly the RBAC the chart renders ([`Rbac::chart`]): the ClusterRole, Role and their
//! bindings in `tests/fixtures/rbac/chart.yaml`, which `tests/chart/test_chart.py` renders
//! afresh and holds equal to the committed file (regenerate it with
//! `.venv/bin/python scripts/rbac-fixture.py`). So a client call the chart does not grant fails
//! under `cargo test` as it would on a real cluster. A test that needs more says so and why:
//! [`Rbac::cluster_admin`] (every right, as `system:masters`), [`Rbac::without`] (the chart less
//! one rule, to show `check` names it) or [`Rbac::vm_operator_reader`] (a Supervisor namespace's
//! reader). Objects a test seeds through the fake's own store ([`super::FakeCluster::new`],
//! the public maps) bypass HTTP and need no grant.
//!
//! Every request to an API path is authorized first, as the real server does before any
//! handler (and before any admission): a request no granted rule allows is `403 Forbidden` with
//! the authorizer's message. Non-resource paths (discovery, `/version`) are always allowed:
//! Kubernetes grants them to everyone (`system:discovery`, `system:public-info-viewer`).
//!
//! A write that creates what it names is authorized twice, as the real server does: a `PUT` to
//! a missing Lease (Leases allow create on update) and a server-side apply `PATCH` to a missing
//! node are authorized as `update`/`patch` by the filter, then, once the store finds nothing
//! to update, as `create` ([`create_refusal`]).

use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{Request, status};

/// How RBAC names the grant of a cluster-admin.
const CLUSTER_ADMIN: &str = "ClusterRoleBinding \"cluster-admin\" of ClusterRole \
                             \"cluster-admin\" to Group \"system:masters\"";

/// How RBAC names Kubernetes's own grant of self-reviews to every authenticated user.
const BASIC_USER: &str = "ClusterRoleBinding \"system:basic-user\" of ClusterRole \
                          \"system:basic-user\" to Group \"system:authenticated\"";

/// How RBAC names Kubernetes's own grant of discovery to every authenticated user.
const DISCOVERY: &str = "ClusterRoleBinding \"system:discovery\" of ClusterRole \
                         \"system:discovery\" to Group \"system:authenticated\"";

/// RBAC's wildcard: any group, resource or verb.
const ANY: &str = "*";

/// The chart's RBAC as Helm renders it with default values, release `vsd` in `kube-system`
/// (`tests/chart/test_chart.py` holds it equal to a fresh render).
pub const CHART_RBAC: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/rbac/chart.yaml"
));

/// The namespace the chart's fixture is rendered into (the release's and the lock's).
pub const CHART_NAMESPACE: &str = "kube-system";

/// The chart's ServiceAccount in the fixture: the fullname of release `vsd`.
pub const CHART_SERVICE_ACCOUNT: &str = "vsd-vsphere-descheduler";

/// One granted rule, flattened: one group, resource and verb (each may be RBAC's `*`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrantedRule {
    /// `""` for the core group.
    pub group: String,
    /// With its subresource, as rules write it: `pods/eviction`.
    pub resource: String,
    pub verb: String,
    /// `None` for a ClusterRoleBinding (every namespace and cluster-scoped objects); the
    /// namespace of a RoleBinding.
    pub namespace: Option<String>,
    /// `resourceNames`: empty for every object.
    pub names: Vec<String>,
    /// The binding, as RBAC names it in an allowed review's reason.
    pub source: String,
}

/// The identity every request comes from, and what RBAC grants it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rbac {
    /// `system:serviceaccount:<namespace>:<name>`, as 403 messages name it.
    pub user: String,
    pub rules: Vec<GrantedRule>,
    /// The binding that allows non-resource URLs (discovery), as a review's reason names it.
    pub non_resource_source: String,
}

/// The chart's grants: what every fake runs with unless a test asks otherwise.
impl Default for Rbac {
    fn default() -> Rbac {
        Rbac::chart()
    }
}

/// The part of an RBAC object (ClusterRole, Role, ClusterRoleBinding, RoleBinding) the
/// authorizer reads.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RbacObject {
    kind: String,
    metadata: ObjectName,
    #[serde(default)]
    rules: Vec<PolicyRule>,
    role_ref: Option<RoleRef>,
    #[serde(default)]
    subjects: Vec<Subject>,
}

#[derive(Deserialize)]
struct ObjectName {
    name: String,
    namespace: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PolicyRule {
    #[serde(default)]
    api_groups: Vec<String>,
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(default)]
    resource_names: Vec<String>,
    #[serde(default, rename = "nonResourceURLs")]
    non_resource_urls: Vec<String>,
}

#[derive(Deserialize)]
struct RoleRef {
    kind: String,
    name: String,
}

#[derive(Deserialize)]
struct Subject {
    kind: String,
    name: String,
    namespace: Option<String>,
}

impl Rbac {
    /// What the chart grants its ServiceAccount `kube-system/vsd-vsphere-descheduler`, read from
    /// the chart's rendered RBAC (`tests/fixtures/rbac/chart.yaml`), and Kubernetes's own
    /// `system:basic-user` grants (self-reviews) to every authenticated user.
    pub fn chart() -> Rbac {
        Rbac::rendered(CHART_RBAC, CHART_NAMESPACE, CHART_SERVICE_ACCOUNT)
    }

    /// What the RBAC objects in `manifests` (YAML documents) grant the ServiceAccount
    /// `<namespace>/<name>`, as the RBAC authorizer reads them: each binding naming it binds
    /// its role's rules, cluster-wide for a ClusterRoleBinding, in the binding's namespace for
    /// a RoleBinding (of a Role or a ClusterRole); the reason names binding, role and subject.
    /// Rules for non-resource URLs are not modelled (every identity may read discovery here):
    /// a manifest with one is refused rather than half read.
    pub fn rendered(manifests: &str, namespace: &str, name: &str) -> Rbac {
        let objects: Vec<RbacObject> = serde_saphyr::from_multiple(manifests)
            .unwrap_or_else(|error| panic!("RBAC manifests do not parse: {error}"));
        let subject = format!("ServiceAccount \"{name}/{namespace}\"");
        let mut rules = basic_user_rules();
        for binding in objects.iter().filter(|o| o.binds(namespace, name)) {
            rules.extend(binding_grants(&objects, binding, &subject));
        }
        Rbac {
            user: format!("system:serviceaccount:{namespace}:{name}"),
            rules,
            non_resource_source: DISCOVERY.to_string(),
        }
    }

    /// Every right, as the `cluster-admin` ClusterRole grants it to `system:masters` (the
    /// identity of an admin kubeconfig): for tests that set up objects through the API or make
    /// calls outside the chart's grants on purpose.
    pub fn cluster_admin() -> Rbac {
        Rbac {
            user: "kubernetes-admin".to_string(),
            rules: vec![GrantedRule {
                group: ANY.to_string(),
                resource: ANY.to_string(),
                verb: ANY.to_string(),
                namespace: None,
                names: Vec::new(),
                source: CLUSTER_ADMIN.to_string(),
            }],
            non_resource_source: CLUSTER_ADMIN.to_string(),
        }
    }

    /// What a Supervisor namespace's owner grants a ServiceAccount `<namespace>/<name>` of their
    /// own to read VM Operator's objects in that namespace: a Role `<name>` with exactly `get`
    /// and `list` on `virtualmachines` and `virtualmachinesetresourcepolicies` of
    /// `vmoperator.vmware.com`, bound by a RoleBinding `<name>`; and `system:basic-user`.
    pub fn vm_operator_reader(namespace: &str, name: &str) -> Rbac {
        let source = format!(
            "RoleBinding \"{name}/{namespace}\" of Role \"{name}\" to ServiceAccount \"{name}/{namespace}\""
        );
        let mut rules = basic_user_rules();
        for resource in ["virtualmachines", "virtualmachinesetresourcepolicies"] {
            for verb in ["get", "list"] {
                rules.push(GrantedRule {
                    group: super::vm_operator::GROUP.to_string(),
                    resource: resource.to_string(),
                    verb: verb.to_string(),
                    namespace: Some(namespace.to_string()),
                    names: Vec::new(),
                    source: source.clone(),
                });
            }
        }
        Rbac {
            user: format!("system:serviceaccount:{namespace}:{name}"),
            rules,
            non_resource_source: DISCOVERY.to_string(),
        }
    }

    /// The same grants without any rule for this call (`resource` with its subresource).
    pub fn without(mut self, group: &str, resource: &str, verb: &str) -> Rbac {
        let before = self.rules.len();
        self.rules.retain(|rule| {
            !(rule.group == group && rule.resource == resource && rule.verb == verb)
        });
        assert!(
            self.rules.len() < before,
            "no granted rule for {verb} {resource} in group {group:?}"
        );
        self
    }

    /// The rule that allows `attributes`, if one does.
    fn allowing(&self, attributes: &Attributes) -> Option<&GrantedRule> {
        self.rules.iter().find(|rule| rule.allows(attributes))
    }
}

impl RbacObject {
    /// Whether this is a binding with the ServiceAccount `<namespace>/<name>` among its subjects.
    fn binds(&self, namespace: &str, name: &str) -> bool {
        matches!(self.kind.as_str(), "ClusterRoleBinding" | "RoleBinding")
            && self.subjects.iter().any(|s| {
                s.kind == "ServiceAccount"
                    && s.name == name
                    && s.namespace.as_deref() == Some(namespace)
            })
    }

    /// Where a binding grants: everywhere for a ClusterRoleBinding (`None`), in its own
    /// namespace for a RoleBinding.
    fn scope(&self) -> Option<String> {
        (self.kind == "RoleBinding").then(|| {
            self.metadata
                .namespace
                .clone()
                .unwrap_or_else(|| panic!("RoleBinding {} has no namespace", self.metadata.name))
        })
    }
}

/// The rules `binding` grants `subject` (as RBAC describes it): its role's, found among
/// `objects` (a Role in the binding's namespace, or a ClusterRole), within the binding's scope,
/// with the reason RBAC gives (`RoleBinding "<name>/<namespace>" of Role "<role>" to …`).
fn binding_grants(objects: &[RbacObject], binding: &RbacObject, subject: &str) -> Vec<GrantedRule> {
    let scope = binding.scope();
    let role_ref = binding.role_ref.as_ref().expect("a binding has a roleRef");
    let role = objects
        .iter()
        .find(|object| {
            object.kind == role_ref.kind
                && object.metadata.name == role_ref.name
                && (role_ref.kind == "ClusterRole" || object.metadata.namespace == scope)
        })
        .unwrap_or_else(|| {
            panic!(
                "a binding refers to a missing {} {}",
                role_ref.kind, role_ref.name
            )
        });
    let binding_name = match &scope {
        None => binding.metadata.name.clone(),
        Some(scope) => format!("{}/{scope}", binding.metadata.name),
    };
    let source = format!(
        "{} \"{binding_name}\" of {} \"{}\" to {subject}",
        binding.kind, role_ref.kind, role_ref.name
    );
    role.rules
        .iter()
        .flat_map(|rule| flattened(rule, scope.as_ref(), &source))
        .collect()
}

/// One rule of a role as the grants of a binding: one [`GrantedRule`] per group, resource and
/// verb it lists.
fn flattened(rule: &PolicyRule, scope: Option<&String>, source: &str) -> Vec<GrantedRule> {
    assert!(
        rule.non_resource_urls.is_empty(),
        "{source}: rules for non-resource URLs are not modelled"
    );
    let mut granted = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                granted.push(GrantedRule {
                    group: group.clone(),
                    resource: resource.clone(),
                    verb: verb.clone(),
                    namespace: scope.cloned(),
                    names: rule.resource_names.clone(),
                    source: source.to_string(),
                });
            }
        }
    }
    granted
}

/// Kubernetes's `system:basic-user` ClusterRole, bound to every authenticated user.
fn basic_user_rules() -> Vec<GrantedRule> {
    [
        ("authorization.k8s.io", "selfsubjectaccessreviews"),
        ("authorization.k8s.io", "selfsubjectrulesreviews"),
        ("authentication.k8s.io", "selfsubjectreviews"),
    ]
    .into_iter()
    .map(|(group, resource)| GrantedRule {
        group: group.to_string(),
        resource: resource.to_string(),
        verb: "create".to_string(),
        namespace: None,
        names: Vec::new(),
        source: BASIC_USER.to_string(),
    })
    .collect()
}

impl GrantedRule {
    /// RBAC's `RuleAllows` (`*` for any verb, group or resource, `*/<subresource>` for that
    /// subresource of any resource; `resourceNames` only for requests that name an object), and
    /// its binding's reach: a RoleBinding grants only in its namespace, so never a cluster-wide
    /// request.
    fn allows(&self, attributes: &Attributes) -> bool {
        let reach = match &self.namespace {
            None => true,
            Some(namespace) => attributes.namespace == *namespace,
        };
        let resource = attributes.rule_resource();
        let resource_matches = self.resource == ANY
            || self.resource == resource
            || (!attributes.subresource.is_empty()
                && self.resource == format!("{ANY}/{}", attributes.subresource));
        reach
            && (self.verb == ANY || self.verb == attributes.verb)
            && (self.group == ANY || self.group == attributes.group)
            && resource_matches
            && (self.names.is_empty() || self.names.contains(&attributes.name))
    }
}

/// A resource request as the authorizer sees it; empty strings for what it does not have.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attributes {
    pub verb: String,
    pub group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
}

impl Attributes {
    /// `pods/eviction`.
    fn rule_resource(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.clone()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }

    /// The attributes of `request`: [`Attributes::of`], and `watch` for a collection `GET` with
    /// `watch` set to anything but `false` or `0`, as the server's request-info resolver reads it.
    pub fn of_request(request: &Request) -> Option<Attributes> {
        let mut attributes = Attributes::of(&request.method, &request.segments)?;
        let watch = request
            .param("watch")
            .is_some_and(|value| !matches!(value.to_ascii_lowercase().as_str(), "false" | "0"));
        if attributes.verb == "list" && watch {
            attributes.verb = "watch".to_string();
        }
        Some(attributes)
    }

    /// The attributes of a request to an API path; `None` for other paths (non-resource URLs).
    pub fn of(method: &Method, segments: &[String]) -> Option<Attributes> {
        let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
        let (group, rest) = match segments.as_slice() {
            ["api", _version, rest @ ..] if !rest.is_empty() => ("", rest),
            ["apis", group, _version, rest @ ..] if !rest.is_empty() => (*group, rest),
            _ => return None,
        };
        let (namespace, rest): (&str, Vec<&str>) = match rest {
            ["namespaces", namespace, resource, rest @ ..] => {
                (namespace, [&[*resource][..], rest].concat())
            }
            other => ("", other.to_vec()),
        };
        let (resource, name, subresource) = match rest.as_slice() {
            [resource] => (*resource, "", ""),
            [resource, name] => (*resource, *name, ""),
            [resource, name, subresource] => (*resource, *name, *subresource),
            _ => return None,
        };
        // `GET /api/v1/namespaces/NAME` is a namespace, not a collection in one.
        let verb = match (method.as_str(), name.is_empty()) {
            ("GET", true) => "list",
            ("GET", false) => "get",
            ("POST", _) => "create",
            ("PUT", _) => "update",
            ("PATCH", _) => "patch",
            ("DELETE", true) => "deletecollection",
            ("DELETE", false) => "delete",
            _ => return None,
        };
        Some(Attributes {
            verb: verb.to_string(),
            group: group.to_string(),
            resource: resource.to_string(),
            subresource: subresource.to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        })
    }
}

/// The 403 of a request `rbac` does not allow, as kube-apiserver writes it
/// (`responsewriters.Forbidden`: the resource without its subresource, the object's name when
/// the request has one, and the authorizer's words); `None` when the request is allowed.
pub fn refusal(rbac: &Rbac, request: &Request) -> Option<Response> {
    let attributes = Attributes::of_request(request)?;
    if rbac.allowing(&attributes).is_some() {
        return None;
    }
    let scope = if attributes.namespace.is_empty() {
        "at the cluster scope".to_string()
    } else {
        format!("in the namespace \"{}\"", attributes.namespace)
    };
    let reason = format!(
        "User \"{}\" cannot {} resource \"{}\" in API group \"{}\" {scope}",
        rbac.user,
        attributes.verb,
        attributes.rule_resource(),
        attributes.group
    );
    Some(forbidden(&attributes, &reason))
}

/// The 403 of a write that would create `<resource> <name>` (a `PUT` to a missing Lease, an
/// apply to a missing node) when `rbac` does not allow `create` of it; `None` when it does.
///
/// The real server's update and patch handlers authorize `create` only once the store finds
/// nothing to update, through the create validation they hand it (`withAuthorization` in the
/// apiserver's `handlers/rest.go`): after the filter allowed `update`/`patch`, after the
/// object's own validation and the uid precondition of an apply (409 for a missing object),
/// before admission, and for dry runs too. Its refusal is `errors.NewForbidden` with the
/// authorizer's reason, not the filter's "User … cannot …" sentence, and RBAC gives no reason
/// when no rule allows (it has no opinion; only evaluation errors are reported), so the message
/// ends in `is forbidden: `.
pub fn create_refusal(
    rbac: &Rbac,
    group: &str,
    resource: &str,
    namespace: &str,
    name: &str,
) -> Option<Response> {
    let attributes = Attributes {
        verb: "create".to_string(),
        group: group.to_string(),
        resource: resource.to_string(),
        subresource: String::new(),
        namespace: namespace.to_string(),
        name: name.to_string(),
    };
    if rbac.allowing(&attributes).is_some() {
        return None;
    }
    Some(forbidden(&attributes, ""))
}

/// `errors.NewForbidden` for the request `attributes` describe: the resource qualified by its
/// group, the name when there is one, `details` with name, group and the resource as `kind`.
fn forbidden(attributes: &Attributes, reason: &str) -> Response {
    let qualified = if attributes.group.is_empty() {
        attributes.resource.clone()
    } else {
        format!("{}.{}", attributes.resource, attributes.group)
    };
    let message = if attributes.name.is_empty() {
        format!("{qualified} is forbidden: {reason}")
    } else {
        format!("{qualified} \"{}\" is forbidden: {reason}", attributes.name)
    };
    let mut details = Map::new();
    if !attributes.name.is_empty() {
        details.insert("name".into(), json!(attributes.name));
    }
    if !attributes.group.is_empty() {
        details.insert("group".into(), json!(attributes.group));
    }
    details.insert("kind".into(), json!(attributes.resource));
    status(403, "Forbidden", &message, Some(Value::Object(details)))
}

/// `POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews`: 201 with the review as the
/// server returns it (`metadata.creationTimestamp: null`, the spec echoed without empty
/// fields) and its `status`: `allowed` with RBAC's reason naming the binding, or not allowed
/// with no reason (RBAC has no opinion on what it does not grant; nothing denies explicitly).
pub fn review(rbac: &Rbac, request: &Request) -> Response {
    let body: Value = match serde_json::from_slice(&request.body) {
        Ok(body) => body,
        Err(error) => {
            return status(
                400,
                "BadRequest",
                &format!("invalid SelfSubjectAccessReview body: {error}"),
                None,
            );
        }
    };
    let spec = body.get("spec").cloned().unwrap_or(Value::Null);
    let resource = spec.get("resourceAttributes").filter(|v| !v.is_null());
    let non_resource = spec.get("nonResourceAttributes").filter(|v| !v.is_null());
    let decision = match (resource, non_resource) {
        (Some(attributes), None) => {
            let text = |field: &str| {
                attributes
                    .get(field)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            let attributes = Attributes {
                verb: text("verb"),
                group: text("group"),
                resource: text("resource"),
                subresource: text("subresource"),
                namespace: text("namespace"),
                name: text("name"),
            };
            rbac.allowing(&attributes).map(|rule| rule.source.clone())
        }
        // Discovery and the like: everyone may.
        (None, Some(_)) => Some(rbac.non_resource_source.clone()),
        _ => {
            return status(
                422,
                "Invalid",
                "SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: \
                 spec.resourceAttributes: Invalid value: \"null\": exactly one of \
                 nonResourceAttributes or resourceAttributes must be specified",
                None,
            );
        }
    };
    let mut review_status = json!({"allowed": decision.is_some()});
    if let Some(source) = decision {
        review_status["reason"] = json!(format!("RBAC: allowed by {source}"));
    }
    let answer = json!({
        "kind": "SelfSubjectAccessReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {"creationTimestamp": null},
        "spec": without_empty_fields(spec),
        "status": review_status,
    });
    (
        StatusCode::CREATED,
        [("content-type", "application/json")],
        answer.to_string(),
    )
        .into_response()
}

/// A JSON value without its empty strings and nulls (at any depth), as Go's `omitempty` writes
/// a decoded request back.
fn without_empty_fields(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null() && v.as_str() != Some(""))
                .map(|(k, v)| (k, without_empty_fields(v)))
                .collect(),
        ),
        other => other,
    }
}
