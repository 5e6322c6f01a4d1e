//! Authorization as kube-apiserver's RBAC authorizer does it, for the one identity that sends
//! the requests ([`Rbac`]), and `SelfSubjectAccessReview`s answered from the same grants.
//!
//! Without an [`Rbac`] (the default) every request is allowed, as for a cluster-admin: the
//! tests that do not care about permissions never meet a 403. With one, every request to an API
//! path is authorized first, as the real server does before any handler (and before any
//! admission): a request no granted rule allows is `403 Forbidden` with the authorizer's
//! message. Non-resource paths (discovery, `/version`) are always allowed: Kubernetes grants
//! them to everyone (`system:discovery`, `system:public-info-viewer`).

use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use super::{Request, status};

/// How RBAC names the grant of a cluster-admin (the reason of every review without an [`Rbac`]).
const CLUSTER_ADMIN: &str = "ClusterRoleBinding \"cluster-admin\" of ClusterRole \
                             \"cluster-admin\" to Group \"system:masters\"";

/// How RBAC names Kubernetes's own grant of self-reviews to every authenticated user.
const BASIC_USER: &str = "ClusterRoleBinding \"system:basic-user\" of ClusterRole \
                          \"system:basic-user\" to Group \"system:authenticated\"";

/// One granted rule, flattened: one group, resource and verb.
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
#[derive(Clone, Debug)]
pub struct Rbac {
    /// `system:serviceaccount:<namespace>:<name>`, as 403 messages name it.
    pub user: String,
    pub rules: Vec<GrantedRule>,
}

impl Rbac {
    /// What the chart grants its ServiceAccount `<release namespace>/<fullname>`: the
    /// ClusterRole's and Role's rules as `call_list` (the text of `src/kube/api_calls.txt`,
    /// which the chart tests hold the chart's RBAC to) says, bound as the chart binds them, and
    /// Kubernetes's own `system:basic-user` grants (self-reviews) to every authenticated user.
    pub fn chart(call_list: &str, namespace: &str, fullname: &str) -> Rbac {
        let subject = format!("ServiceAccount \"{fullname}/{namespace}\"");
        let cluster_binding =
            format!("ClusterRoleBinding \"{fullname}\" of ClusterRole \"{fullname}\" to {subject}");
        // The chart names its lease Role and RoleBinding `<fullname>-lease`.
        let role_binding = format!(
            "RoleBinding \"{fullname}-lease/{namespace}\" of Role \"{fullname}-lease\" to {subject}"
        );
        let mut rules = basic_user_rules();
        for line in call_list.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let columns: Vec<&str> = line.split_whitespace().collect();
            let [group, resource, verb, grant] = columns.as_slice() else {
                panic!("four columns: {line}");
            };
            let group = if *group == "core" { "" } else { group };
            let in_namespace = Some(namespace.to_string());
            let (namespace, names, source) = match *grant {
                "Everyone" => continue,
                "ClusterRole" => (None, Vec::new(), cluster_binding.clone()),
                "Role" => (in_namespace, Vec::new(), role_binding.clone()),
                other => match other.strip_prefix("Role/") {
                    Some(name) => (in_namespace, vec![name.to_string()], role_binding.clone()),
                    None => panic!("unknown grant {other}: {line}"),
                },
            };
            rules.push(GrantedRule {
                group: group.to_string(),
                resource: resource.to_string(),
                verb: verb.to_string(),
                namespace,
                names,
                source,
            });
        }
        Rbac {
            user: format!("system:serviceaccount:{namespace}:{fullname}"),
            rules,
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
    /// RBAC's `RuleAllows`, for rules without wildcards, and its binding's reach: a RoleBinding
    /// grants only in its namespace, so never a cluster-wide request.
    fn allows(&self, attributes: &Attributes) -> bool {
        let reach = match &self.namespace {
            None => true,
            Some(namespace) => attributes.namespace == *namespace,
        };
        reach
            && self.verb == attributes.verb
            && self.group == attributes.group
            && self.resource == attributes.rule_resource()
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
pub fn refusal(rbac: Option<&Rbac>, request: &Request) -> Option<Response> {
    let rbac = rbac?;
    let attributes = Attributes::of_request(request)?;
    if rbac.allowing(&attributes).is_some() {
        return None;
    }
    let qualified = if attributes.group.is_empty() {
        attributes.resource.clone()
    } else {
        format!("{}.{}", attributes.resource, attributes.group)
    };
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
    Some(status(
        403,
        "Forbidden",
        &message,
        Some(Value::Object(details)),
    ))
}

/// `POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews`: 201 with the review as the
/// server returns it (`metadata.creationTimestamp: null`, the spec echoed without empty
/// fields) and its `status`: `allowed` with RBAC's reason naming the binding, or not allowed
/// with no reason (RBAC has no opinion on what it does not grant; nothing denies explicitly).
pub fn review(rbac: Option<&Rbac>, request: &Request) -> Response {
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
            match rbac {
                None => Some(CLUSTER_ADMIN.to_string()),
                Some(rbac) => rbac.allowing(&attributes).map(|rule| rule.source.clone()),
            }
        }
        // Discovery and the like: everyone may.
        (None, Some(_)) => Some(match rbac {
            None => CLUSTER_ADMIN.to_string(),
            Some(_) => "ClusterRoleBinding \"system:discovery\" of ClusterRole \
                        \"system:discovery\" to Group \"system:authenticated\""
                .to_string(),
        }),
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
