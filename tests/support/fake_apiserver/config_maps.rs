//! ConfigMaps in a namespace (the eviction history's): `GET`, `POST` and `PUT` of one, validated
//! as kube-apiserver validates them: keys of `[-._a-zA-Z0-9]`, at most 1 MiB of values
//! together (422), and a request body over 3 MiB refused before it is read (413).

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use axum::response::Response;
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::json;

use super::{FakeCluster, Request, not_found, object, status};

const CONFIG_MAPS: &str = "configmaps";
/// The most a ConfigMap's values may take together (`MaxSecretSize` of the core validation).
pub const MAX_DATA_BYTES: usize = 1024 * 1024;
/// The most a request body may take (the API server's `MaxRequestBodyBytes`).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// What is wrong with `config_map` as the server's validation words it: `(field, problem)`.
fn validate(config_map: &ConfigMap) -> Vec<(String, String)> {
    let mut problems = Vec::new();
    let mut total = 0;
    for (key, value) in config_map.data.iter().flatten() {
        total += value.len();
        let valid = !key.is_empty()
            && key.len() <= 253
            && key != "."
            && key != ".."
            && key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if !valid {
            problems.push((
                format!("data[{key}]"),
                format!(
                    "Invalid value: \"{key}\": a valid config key must consist of alphanumeric \
                     characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or \
                     'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
                ),
            ));
        }
    }
    for value in config_map.binary_data.iter().flatten().map(|(_, v)| v) {
        total += value.0.len();
    }
    if total > MAX_DATA_BYTES {
        problems.push((
            "[]".to_string(),
            format!("Too long: may not be more than {MAX_DATA_BYTES} bytes"),
        ));
    }
    problems
}

fn invalid(name: &str, problems: Vec<(String, String)>) -> Response {
    let message = problems
        .iter()
        .map(|(field, problem)| format!("{field}: {problem}"))
        .collect::<Vec<_>>()
        .join(", ");
    let causes: Vec<_> = problems
        .iter()
        .map(|(field, problem)| {
            json!({"reason": "FieldValueInvalid", "message": problem, "field": field})
        })
        .collect();
    status(
        422,
        "Invalid",
        &format!("ConfigMap \"{name}\" is invalid: {message}"),
        Some(json!({"name": name, "kind": CONFIG_MAPS, "causes": causes})),
    )
}

/// The ConfigMap of a request's body, or the answer refusing it.
fn decoded(request: &Request, name: Option<&str>) -> Result<(ConfigMap, String), Box<Response>> {
    if request.body.len() > MAX_BODY_BYTES {
        return Err(Box::new(status(
            413,
            "RequestEntityTooLarge",
            &format!("Request entity too large: limit is {MAX_BODY_BYTES}"),
            None,
        )));
    }
    let config_map: ConfigMap = serde_json::from_slice(&request.body).map_err(|error| {
        Box::new(status(
            400,
            "BadRequest",
            &format!("invalid ConfigMap: {error}"),
            None,
        ))
    })?;
    let Some(found) = config_map.metadata.name.clone() else {
        return Err(Box::new(status(
            422,
            "Invalid",
            "ConfigMap \"\" is invalid: metadata.name: Required value: name or generateName is \
             required",
            None,
        )));
    };
    if name.is_some_and(|name| name != found) {
        return Err(Box::new(status(
            400,
            "BadRequest",
            "the name of the object does not match the name on the URL",
            None,
        )));
    }
    let problems = validate(&config_map);
    if !problems.is_empty() {
        return Err(Box::new(invalid(&found, problems)));
    }
    Ok((config_map, found))
}

/// ConfigMap routes: collection `POST`, and `GET`/`PUT` of one.
pub fn config_map(
    cluster: &mut FakeCluster,
    request: &Request,
    method: &Method,
    namespace: &str,
    name: Option<&str>,
) -> Response {
    match (method, name) {
        (&Method::GET, Some(name)) => {
            match cluster
                .config_maps
                .get(&(namespace.to_string(), name.to_string()))
            {
                Some(config_map) => object(StatusCode::OK, config_map.as_ref()),
                None => not_found(CONFIG_MAPS, "", name),
            }
        }
        (&Method::POST, None) => {
            let (mut config_map, name) = match decoded(request, None) {
                Ok(decoded) => decoded,
                Err(refusal) => return *refusal,
            };
            let key = (namespace.to_string(), name.clone());
            if cluster.config_maps.contains_key(&key) {
                return status(
                    409,
                    "AlreadyExists",
                    &format!("{CONFIG_MAPS} \"{name}\" already exists"),
                    Some(json!({"name": name, "kind": CONFIG_MAPS})),
                );
            }
            config_map.metadata.namespace = Some(namespace.to_string());
            config_map.metadata.resource_version = None;
            let config_map = cluster.stamp(config_map, |c| &mut c.metadata);
            cluster
                .config_maps
                .insert(key.clone(), Arc::new(config_map));
            object(StatusCode::CREATED, cluster.config_maps[&key].as_ref())
        }
        (&Method::PUT, Some(name)) => {
            let (config_map, name) = match decoded(request, Some(name)) {
                Ok(decoded) => decoded,
                Err(refusal) => return *refusal,
            };
            let key = (namespace.to_string(), name.clone());
            // ConfigMaps do not allow create on update.
            let Some(existing) = cluster.config_maps.get(&key).cloned() else {
                return not_found(CONFIG_MAPS, "", &name);
            };
            // An update without a resourceVersion is unconditional, as ConfigMaps allow.
            if let Some(version) = config_map
                .metadata
                .resource_version
                .as_ref()
                .filter(|v| !v.is_empty())
                && Some(version) != existing.metadata.resource_version.as_ref()
            {
                return status(
                    409,
                    "Conflict",
                    &format!(
                        "Operation cannot be fulfilled on {CONFIG_MAPS} \"{name}\": the object \
                         has been modified; please apply your changes to the latest version and \
                         try again"
                    ),
                    Some(json!({"name": name, "kind": CONFIG_MAPS})),
                );
            }
            if existing.data == config_map.data
                && existing.binary_data == config_map.binary_data
                && existing.metadata.labels == config_map.metadata.labels
                && existing.metadata.annotations == config_map.metadata.annotations
            {
                return object(StatusCode::OK, existing.as_ref());
            }
            let revision = cluster.bump();
            let stored = Arc::make_mut(cluster.config_maps.get_mut(&key).expect("it exists"));
            stored.data = config_map.data;
            stored.binary_data = config_map.binary_data;
            stored.metadata.labels = config_map.metadata.labels;
            stored.metadata.annotations = config_map.metadata.annotations;
            stored.metadata.resource_version = Some(revision);
            object(StatusCode::OK, cluster.config_maps[&key].as_ref())
        }
        _ => status(
            405,
            "MethodNotAllowed",
            "the fake API server does not support this ConfigMap request",
            None,
        ),
    }
}
