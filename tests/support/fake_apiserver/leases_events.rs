//! Leases and `events.k8s.io/v1` Event creation with the server's validation of an Event's
//! fields.

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use axum::response::Response;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::events::v1::Event;
use serde_json::{Value, json};

use super::{FakeCluster, Request, authorization, not_found, object, status, success};

const LEASES: &str = "leases";
const COORDINATION: &str = "coordination.k8s.io";

fn invalid(kind: &str, name: &str, causes: Vec<(String, String)>) -> Response {
    let message = format!(
        "{kind} \"{name}\" is invalid: [{}]",
        causes
            .iter()
            .map(|(field, problem)| format!("{field}: {problem}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let causes: Vec<Value> = causes
        .iter()
        .map(|(field, problem)| json!({"reason": "FieldValueInvalid", "message": problem, "field": field}))
        .collect();
    status(
        422,
        "Invalid",
        &message,
        Some(json!({"name": name, "kind": kind, "causes": causes})),
    )
}

/// The most all of an object's annotations may hold together, keys and values
/// (`TotalAnnotationSizeLimitB` of apimachinery's object-meta validation).
const TOTAL_ANNOTATION_BYTES: usize = 256 * 1024;

fn validate_lease(lease: &Lease) -> Vec<(String, String)> {
    let mut problems = Vec::new();
    if let Some(annotations) = &lease.metadata.annotations {
        for key in annotations.keys() {
            if !is_qualified_name(key) {
                problems.push((
                    "metadata.annotations".to_string(),
                    format!("Invalid value: \"{key}\": must be a qualified name"),
                ));
            }
        }
        let total: usize = annotations.iter().map(|(k, v)| k.len() + v.len()).sum();
        if total > TOTAL_ANNOTATION_BYTES {
            problems.push((
                "metadata.annotations".to_string(),
                format!("Too long: may not be more than {TOTAL_ANNOTATION_BYTES} bytes"),
            ));
        }
    }
    if let Some(spec) = &lease.spec {
        if spec.lease_duration_seconds.is_some_and(|d| d <= 0) {
            problems.push((
                "spec.leaseDurationSeconds".to_string(),
                "must be greater than 0".to_string(),
            ));
        }
        if spec.lease_transitions.is_some_and(|t| t < 0) {
            problems.push((
                "spec.leaseTransitions".to_string(),
                "must be greater than or equal to 0".to_string(),
            ));
        }
        if spec.preferred_holder.is_some() && spec.strategy.is_none() {
            problems.push((
                "spec.preferredHolder".to_string(),
                "Forbidden: may only be specified if `strategy` is defined".to_string(),
            ));
        }
    }
    problems
}

/// Lease routes: collection `POST`, and `GET`/`PUT`/`DELETE` of one lease.
pub fn lease(
    cluster: &mut FakeCluster,
    request: &Request,
    method: &Method,
    namespace: &str,
    name: Option<&str>,
) -> Response {
    match (method, name) {
        (&Method::POST, None) => {
            let mut lease: Lease = match serde_json::from_slice(&request.body) {
                Ok(lease) => lease,
                Err(error) => {
                    return status(400, "BadRequest", &format!("invalid Lease: {error}"), None);
                }
            };
            let Some(name) = lease.metadata.name.clone() else {
                return invalid(
                    "Lease.coordination.k8s.io",
                    "",
                    vec![(
                        "metadata.name".to_string(),
                        "Required value: name or generateName is required".to_string(),
                    )],
                );
            };
            let problems = validate_lease(&lease);
            if !problems.is_empty() {
                return invalid("Lease.coordination.k8s.io", &name, problems);
            }
            let key = (namespace.to_string(), name.clone());
            if cluster.leases.contains_key(&key) {
                return status(
                    409,
                    "AlreadyExists",
                    &format!("{LEASES}.{COORDINATION} \"{name}\" already exists"),
                    Some(json!({"name": name, "group": COORDINATION, "kind": LEASES})),
                );
            }
            lease.metadata.namespace = Some(namespace.to_string());
            lease.metadata.uid = None;
            lease.metadata.creation_timestamp = None;
            let lease = cluster.stamp(lease, |l| &mut l.metadata);
            cluster.leases.insert(key.clone(), Arc::new(lease));
            object(StatusCode::CREATED, cluster.leases[&key].as_ref())
        }
        (&Method::GET, Some(name)) => match cluster
            .leases
            .get(&(namespace.to_string(), name.to_string()))
        {
            Some(lease) => object(StatusCode::OK, lease.as_ref()),
            None => not_found(LEASES, COORDINATION, name),
        },
        (&Method::PUT, Some(name)) => {
            let mut lease: Lease = match serde_json::from_slice(&request.body) {
                Ok(lease) => lease,
                Err(error) => {
                    return status(400, "BadRequest", &format!("invalid Lease: {error}"), None);
                }
            };
            if lease.metadata.name.as_deref() != Some(name) {
                return status(
                    400,
                    "BadRequest",
                    "the name of the object does not match the name on the URL",
                    None,
                );
            }
            let problems = validate_lease(&lease);
            if !problems.is_empty() {
                return invalid("Lease.coordination.k8s.io", name, problems);
            }
            let key = (namespace.to_string(), name.to_string());
            let Some(existing) = cluster.leases.get(&key).cloned() else {
                // Leases allow create on update, which must be allowed to create as well.
                if let Some(refusal) = authorization::create_refusal(
                    &cluster.rbac,
                    COORDINATION,
                    LEASES,
                    namespace,
                    name,
                ) {
                    return refusal;
                }
                lease.metadata.namespace = Some(namespace.to_string());
                lease.metadata.resource_version = None;
                let lease = cluster.stamp(lease, |l| &mut l.metadata);
                cluster.leases.insert(key.clone(), Arc::new(lease));
                return object(StatusCode::CREATED, cluster.leases[&key].as_ref());
            };
            let Some(version) = lease
                .metadata
                .resource_version
                .clone()
                .filter(|v| !v.is_empty())
            else {
                return invalid(
                    "Lease.coordination.k8s.io",
                    name,
                    vec![(
                        "metadata.resourceVersion".to_string(),
                        "Invalid value: 0x0: must be specified for an update".to_string(),
                    )],
                );
            };
            if Some(&version) != existing.metadata.resource_version.as_ref() {
                return status(
                    409,
                    "Conflict",
                    &format!(
                        "Operation cannot be fulfilled on {LEASES}.{COORDINATION} \"{name}\": the object has been modified; please apply your changes to the latest version and try again"
                    ),
                    Some(json!({"name": name, "group": COORDINATION, "kind": LEASES})),
                );
            }
            // An update that changes nothing is not written: the resourceVersion stays.
            if existing.spec == lease.spec
                && existing.metadata.labels == lease.metadata.labels
                && existing.metadata.annotations == lease.metadata.annotations
            {
                return object(StatusCode::OK, existing.as_ref());
            }
            let revision = cluster.bump();
            let stored = Arc::make_mut(cluster.leases.get_mut(&key).expect("the lease exists"));
            // What the client sends replaces what was stored (an update is not a merge); the
            // server's own fields (uid, creationTimestamp) stay.
            stored.spec = lease.spec;
            stored.metadata.labels = lease.metadata.labels;
            stored.metadata.annotations = lease.metadata.annotations;
            stored.metadata.resource_version = Some(revision);
            object(StatusCode::OK, cluster.leases[&key].as_ref())
        }
        (&Method::DELETE, Some(name)) => {
            let key = (namespace.to_string(), name.to_string());
            let Some(existing) = cluster.leases.get(&key).cloned() else {
                return not_found(LEASES, COORDINATION, name);
            };
            let options: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
            let wanted_uid = options
                .pointer("/preconditions/uid")
                .and_then(Value::as_str);
            let wanted_version = options
                .pointer("/preconditions/resourceVersion")
                .and_then(Value::as_str);
            if wanted_uid.is_some_and(|u| Some(u) != existing.metadata.uid.as_deref())
                || wanted_version
                    .is_some_and(|v| Some(v) != existing.metadata.resource_version.as_deref())
            {
                return status(
                    409,
                    "Conflict",
                    &format!(
                        "Operation cannot be fulfilled on {LEASES}.{COORDINATION} \"{name}\": Precondition failed"
                    ),
                    None,
                );
            }
            cluster.leases.remove(&key);
            cluster.bump();
            success(200)
        }
        _ => status(
            405,
            "MethodNotAllowed",
            "the fake API server does not support this lease request",
            None,
        ),
    }
}

/// The characters of an RFC 1123 subdomain (the length is checked on its own): dot-separated
/// labels of lowercase alphanumerics and `-`, each starting and ending alphanumeric.
fn is_dns_subdomain(text: &str) -> bool {
    text.split('.').all(|label| {
        !label.is_empty()
            && label
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    })
}

/// A qualified name: optional DNS-subdomain prefix and `/`, then at most 63 of `[A-Za-z0-9_.-]`
/// starting and ending alphanumeric.
fn is_qualified_name(text: &str) -> bool {
    let name = match text.split_once('/') {
        Some((prefix, name)) => {
            if prefix.is_empty()
                || prefix.len() > 253
                || !prefix
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
            {
                return false;
            }
            name
        }
        None => text,
    };
    !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
}

/// `POST /apis/events.k8s.io/v1/namespaces/{ns}/events`.
pub fn create_event(cluster: &mut FakeCluster, request: &Request, namespace: &str) -> Response {
    let mut event: Event = match serde_json::from_slice(&request.body) {
        Ok(event) => event,
        Err(error) => return status(400, "BadRequest", &format!("invalid Event: {error}"), None),
    };
    let name = event.metadata.name.clone().unwrap_or_default();
    let mut problems: Vec<(String, String)> = Vec::new();
    let mut problem =
        |field: &str, text: &str| problems.push((field.to_string(), text.to_string()));
    if name.is_empty() && event.metadata.generate_name.is_none() {
        problem(
            "metadata.name",
            "Required value: name or generateName is required",
        );
    }
    if !name.is_empty() {
        if name.len() > 253 {
            problem(
                "metadata.name",
                &format!("Invalid value: \"{name}\": must be no more than 253 characters"),
            );
        }
        if !is_dns_subdomain(&name) {
            problem(
                "metadata.name",
                &format!(
                    "Invalid value: \"{name}\": a lowercase RFC 1123 subdomain must consist of \
                     lower case alphanumeric characters, '-' or '.', and must start and end with \
                     an alphanumeric character (e.g. 'example.com', regex used for validation is \
                     '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
                ),
            );
        }
    }
    if event
        .metadata
        .namespace
        .as_deref()
        .is_some_and(|ns| ns != namespace)
    {
        problem(
            "metadata.namespace",
            "Invalid value: does not match the namespace of the request",
        );
    }
    if event.event_time.is_none() {
        problem("eventTime", "Required value");
    }
    match event.type_.as_deref() {
        Some("Normal") | Some("Warning") => {}
        _ => problem(
            "type",
            "Unsupported value: supported values: \"Normal\", \"Warning\"",
        ),
    }
    match event.reporting_controller.as_deref() {
        None | Some("") => problem("reportingController", "Required value"),
        Some(controller) if !is_qualified_name(controller) => problem(
            "reportingController",
            "Invalid value: must be a qualified name",
        ),
        _ => {}
    }
    for (field, value, limit) in [
        ("reportingInstance", &event.reporting_instance, 128),
        ("action", &event.action, 128),
        ("reason", &event.reason, 128),
    ] {
        match value.as_deref() {
            None | Some("") => problem(field, "Required value"),
            Some(text) if text.len() > limit => problem(
                field,
                &format!("Too long: may not be more than {limit} bytes"),
            ),
            _ => {}
        }
    }
    if event.note.as_deref().is_some_and(|note| note.len() > 1024) {
        problem("note", "Too long: may not be more than 1024 bytes");
    }
    let regarding_namespace = event
        .regarding
        .as_ref()
        .and_then(|r| r.namespace.clone())
        .unwrap_or_default();
    let cluster_scoped = regarding_namespace.is_empty();
    if (!cluster_scoped && regarding_namespace != namespace)
        || (cluster_scoped && namespace != "default" && namespace != "kube-system")
    {
        problem(
            "involvedObject.namespace",
            "Invalid value: does not match event.namespace",
        );
    }
    if let Some(series) = &event.series
        && series.count < 2
    {
        problem("series.count", "Invalid value: should be at least 2");
    }
    if event.deprecated_source.is_some()
        || event.deprecated_first_timestamp.is_some()
        || event.deprecated_last_timestamp.is_some()
        || event.deprecated_count.is_some()
    {
        problem("deprecatedSource", "Invalid value: must be unset on create");
    }
    if !problems.is_empty() {
        return invalid("Event.events.k8s.io", &name, problems);
    }
    let key = (namespace.to_string(), name.clone());
    if cluster.events.contains_key(&key) {
        return status(
            409,
            "AlreadyExists",
            &format!("events.events.k8s.io \"{name}\" already exists"),
            None,
        );
    }
    event.metadata.namespace = Some(namespace.to_string());
    let event = cluster.stamp(event, |e| &mut e.metadata);
    cluster.events.insert(key.clone(), Arc::new(event));
    object(StatusCode::CREATED, cluster.events[&key].as_ref())
}
