//! Node label writes: server-side apply with per-key ownership, and merge
//! patches. Only `metadata.labels` (and, for merge patches, `metadata.annotations`) of nodes
//! are modelled; a body touching anything else is refused with 400 rather than half-applied.
//! An update passes the installed admission policy ([`NodeLabelPolicy`]) after validation and
//! before it is stored; with `dryRun=All` it goes through all of that and nothing is stored:
//! the answer is the node as it would be, at its present `resourceVersion`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::Response;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    FieldsV1, ManagedFieldsEntry, ObjectMeta, Time,
};
use serde_json::{Value, json};

use super::admission::NodeLabelPolicy;
use super::{FakeCluster, Request, authorization, not_found, now, object, status};

/// One entry of a node's label ownership: a manager, how it wrote, and the keys it owns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelOwner {
    pub manager: String,
    /// `Apply` or `Update`.
    pub operation: String,
    pub time: k8s_openapi::jiff::Timestamp,
    pub keys: BTreeSet<String>,
}

impl LabelOwner {
    /// Label ownership recorded in a loaded node's `managedFields`. Labels no entry claims are
    /// attributed to an `Update` by `kubelet`, which writes most node labels.
    pub fn from_managed_fields(node: &Node) -> Vec<LabelOwner> {
        let mut owners: Vec<LabelOwner> = Vec::new();
        for entry in node.metadata.managed_fields.iter().flatten() {
            let keys: BTreeSet<String> = entry
                .fields_v1
                .as_ref()
                .and_then(|f| f.0.get("f:metadata"))
                .and_then(|m| m.get("f:labels"))
                .and_then(Value::as_object)
                .map(|labels| {
                    labels
                        .keys()
                        .filter_map(|k| k.strip_prefix("f:"))
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            if keys.is_empty() {
                continue;
            }
            owners.push(LabelOwner {
                manager: entry.manager.clone().unwrap_or_default(),
                operation: entry
                    .operation
                    .clone()
                    .unwrap_or_else(|| "Update".to_string()),
                time: entry.time.as_ref().map_or_else(now, |t| t.0),
                keys,
            });
        }
        let claimed: BTreeSet<&String> = owners.iter().flat_map(|o| &o.keys).collect();
        let unclaimed: BTreeSet<String> = node
            .metadata
            .labels
            .iter()
            .flatten()
            .map(|(key, _)| key)
            .filter(|key| !claimed.contains(key))
            .cloned()
            .collect();
        if !unclaimed.is_empty() {
            owners.push(LabelOwner {
                manager: "kubelet".to_string(),
                operation: "Update".to_string(),
                time: now(),
                keys: unclaimed,
            });
        }
        owners
    }

    fn describe(&self) -> String {
        if self.operation == "Apply" {
            format!("\"{}\"", self.manager)
        } else {
            format!(
                "\"{}\" using v1 at {}",
                self.manager,
                self.time.strftime("%Y-%m-%dT%H:%M:%SZ")
            )
        }
    }
}

impl FakeCluster {
    /// Writes the ownership table into the node's `managedFields`, as the server shows it.
    pub(super) fn render_label_owners(&mut self, node: &str) {
        let owners = self.label_owners.get(node).cloned().unwrap_or_default();
        let Some(stored) = self.nodes.get_mut(node) else {
            return;
        };
        let entries: Vec<ManagedFieldsEntry> = owners
            .iter()
            .filter(|owner| !owner.keys.is_empty())
            .map(|owner| {
                let labels: serde_json::Map<String, Value> = owner
                    .keys
                    .iter()
                    .map(|key| (format!("f:{key}"), json!({})))
                    .collect();
                ManagedFieldsEntry {
                    manager: Some(owner.manager.clone()),
                    operation: Some(owner.operation.clone()),
                    api_version: Some("v1".to_string()),
                    time: Some(Time(owner.time)),
                    fields_type: Some("FieldsV1".to_string()),
                    fields_v1: Some(FieldsV1(json!({"f:metadata": {"f:labels": labels}}))),
                    subresource: None,
                }
            })
            .collect();
        Arc::make_mut(stored).metadata.managed_fields = (!entries.is_empty()).then_some(entries);
    }
}

/// `PATCH /api/v1/nodes/{name}`.
pub fn patch_node(cluster: &mut FakeCluster, request: &Request, name: &str) -> Response {
    let content_type = request
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    let force = request.param("force").is_some_and(|v| v == "true");
    let dry_run = match request.param("dryRun") {
        None => false,
        Some("All") => true,
        Some(other) => {
            return status(
                422,
                "Invalid",
                &format!(
                    "PatchOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: \
                     []string{{\"{other}\"}}: supported values: \"All\""
                ),
                None,
            );
        }
    };
    match content_type.as_str() {
        "application/apply-patch+yaml" => {
            let Some(manager) = request.param("fieldManager").filter(|m| !m.is_empty()) else {
                return status(
                    422,
                    "Invalid",
                    "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is \
                     required for apply patch",
                    None,
                );
            };
            match serde_json::from_slice::<Value>(&request.body) {
                Ok(body) => apply(cluster, name, manager, force, dry_run, &body),
                Err(error) => status(
                    400,
                    "BadRequest",
                    &format!("invalid apply body: {error}"),
                    None,
                ),
            }
        }
        "application/merge-patch+json" | "application/strategic-merge-patch+json" => {
            if force {
                return status(
                    422,
                    "Invalid",
                    "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be \
                     specified for non-apply patch",
                    None,
                );
            }
            let manager = request.param("fieldManager").unwrap_or("unknown");
            match serde_json::from_slice::<Value>(&request.body) {
                Ok(body) => merge(cluster, name, manager, dry_run, &body),
                Err(error) => status(400, "BadRequest", &format!("invalid patch: {error}"), None),
            }
        }
        other => status(
            415,
            "UnsupportedMediaType",
            &format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml (got {other})"
            ),
            None,
        ),
    }
}

fn labels_of(value: &Value) -> Result<BTreeMap<String, String>, String> {
    match value {
        Value::Null => Ok(BTreeMap::new()),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                other => Err(format!("label {k} must be a string, not {other}")),
            })
            .collect(),
        other => Err(format!("metadata.labels must be a map, not {other}")),
    }
}

fn conflict(name: &str, message: &str) -> Response {
    status(
        409,
        "Conflict",
        &format!("Operation cannot be fulfilled on nodes \"{name}\": {message}"),
        Some(json!({"name": name, "kind": "nodes"})),
    )
}

/// What the real server answers an apply whose uid is not the live node's (a node deleted and
/// recreated under the same name): the update's validation refuses to change the uid, 422.
fn uid_immutable(name: &str, uid: &str) -> Response {
    let problem = format!("Invalid value: \"{uid}\": field is immutable");
    status(
        422,
        "Invalid",
        &format!("Node \"{name}\" is invalid: metadata.uid: {problem}"),
        Some(json!({
            "name": name,
            "kind": "Node",
            "causes": [{"reason": "FieldValueInvalid", "message": problem, "field": "metadata.uid"}]
        })),
    )
}

/// Server-side apply of a label set by `manager`.
fn apply(
    cluster: &mut FakeCluster,
    name: &str,
    manager: &str,
    force: bool,
    dry_run: bool,
    body: &Value,
) -> Response {
    let version = body
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if version != "v1" {
        return status(
            400,
            "BadRequest",
            &format!(
                "Incorrect version specified in apply patch. Specified patch version: {version}, expected: v1"
            ),
            None,
        );
    }
    let metadata = body.get("metadata").cloned().unwrap_or(Value::Null);
    if metadata.get("managedFields").is_some() {
        return status(
            400,
            "BadRequest",
            "metadata.managedFields must be nil",
            None,
        );
    }
    let unsupported_top = body
        .as_object()
        .into_iter()
        .flat_map(|m| m.keys())
        .find(|k| !matches!(k.as_str(), "apiVersion" | "kind" | "metadata"));
    let unsupported_meta = metadata
        .as_object()
        .into_iter()
        .flat_map(|m| m.keys())
        .find(|k| !matches!(k.as_str(), "name" | "uid" | "resourceVersion" | "labels"));
    if let Some(field) = unsupported_top.or(unsupported_meta) {
        return status(
            400,
            "BadRequest",
            &format!("the fake API server applies only metadata.labels of nodes, not {field}"),
            None,
        );
    }
    if let Some(body_name) = metadata.get("name").and_then(Value::as_str)
        && body_name != name
    {
        return status(
            400,
            "BadRequest",
            &format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            ),
            None,
        );
    }
    let applied = match labels_of(metadata.get("labels").unwrap_or(&Value::Null)) {
        Ok(labels) => labels,
        Err(message) => return status(422, "Invalid", &message, None),
    };
    let uid = metadata.get("uid").and_then(Value::as_str);

    let Some(existing) = cluster.nodes.get(name).cloned() else {
        if let Some(uid) = uid {
            // A uid makes the apply an update of that object: a missing one is not created.
            return conflict(
                name,
                &format!(
                    "uid mismatch: the provided object specified uid {uid}, and no existing \
                     object was found"
                ),
            );
        }
        // An apply creates what is missing, which must be allowed to create as well (dry run
        // or not).
        if let Some(refusal) = authorization::create_refusal(&cluster.rbac, "", "nodes", "", name) {
            return refusal;
        }
        let node = Node {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                labels: (!applied.is_empty()).then(|| applied.clone()),
                ..ObjectMeta::default()
            },
            ..Node::default()
        };
        if dry_run {
            // Not stored, so given no uid or resourceVersion of the store's.
            return object(StatusCode::CREATED, &node);
        }
        let node = cluster.stamp(node, |n| &mut n.metadata);
        cluster.label_owners.insert(
            name.to_string(),
            vec![LabelOwner {
                manager: manager.to_string(),
                operation: "Apply".to_string(),
                time: now(),
                keys: applied.keys().cloned().collect(),
            }],
        );
        cluster.nodes.insert(name.to_string(), Arc::new(node));
        cluster.render_label_owners(name);
        return object(StatusCode::CREATED, cluster.nodes[name].as_ref());
    };
    let live_uid = existing.metadata.uid.clone().unwrap_or_default();
    if let Some(uid) = uid
        && uid != live_uid
    {
        return uid_immutable(name, uid);
    }
    if let Some(version) = metadata.get("resourceVersion").and_then(Value::as_str)
        && Some(version) != existing.metadata.resource_version.as_deref()
    {
        return conflict(
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        );
    }

    let live = existing.metadata.labels.clone().unwrap_or_default();
    let mut owners = cluster.label_owners.get(name).cloned().unwrap_or_default();
    let is_me = |owner: &LabelOwner| owner.manager == manager && owner.operation == "Apply";
    let mut conflicts: Vec<(String, String)> = Vec::new();
    for (key, value) in &applied {
        if live.get(key) == Some(value) {
            continue;
        }
        for owner in owners.iter().filter(|o| !is_me(o) && o.keys.contains(key)) {
            conflicts.push((owner.describe(), key.clone()));
        }
    }
    if !conflicts.is_empty() && !force {
        let message = match conflicts.as_slice() {
            [(owner, key)] => format!(
                "Apply failed with 1 conflict: conflict with {owner}: .metadata.labels.{key}"
            ),
            many => {
                let mut by_owner: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
                for (owner, key) in many {
                    by_owner.entry(owner).or_default().push(key);
                }
                let mut text = format!("Apply failed with {} conflicts:", many.len());
                for (owner, keys) in by_owner {
                    text.push_str(&format!(" conflicts with {owner}:"));
                    for key in keys {
                        text.push_str(&format!("\n- .metadata.labels.{key}"));
                    }
                }
                text
            }
        };
        let causes: Vec<Value> = conflicts
            .iter()
            .map(|(owner, key)| {
                json!({"reason": "FieldManagerConflict", "message": format!("conflict with {owner}"), "field": format!(".metadata.labels.{key}")})
            })
            .collect();
        return status(409, "Conflict", &message, Some(json!({"causes": causes})));
    }
    let mut labels = live.clone();
    // Forced (or equal-valued) keys: conflicting owners lose them.
    for (key, value) in &applied {
        if live.get(key) != Some(value) {
            for owner in owners.iter_mut().filter(|o| !is_me(o)) {
                owner.keys.remove(key);
            }
        }
        labels.insert(key.clone(), value.clone());
    }
    // Keys only we applied, and no longer apply, are deleted.
    let previously: BTreeSet<String> = owners
        .iter()
        .filter(|o| is_me(o))
        .flat_map(|o| o.keys.clone())
        .collect();
    for key in previously.difference(&applied.keys().cloned().collect()) {
        let co_owned = owners.iter().any(|o| !is_me(o) && o.keys.contains(key));
        if !co_owned {
            labels.remove(key);
        }
    }
    match owners.iter_mut().find(|o| is_me(o)) {
        Some(mine) => mine.keys = applied.keys().cloned().collect(),
        None => owners.push(LabelOwner {
            manager: manager.to_string(),
            operation: "Apply".to_string(),
            time: now(),
            keys: applied.keys().cloned().collect(),
        }),
    }
    owners.retain(|o| !o.keys.is_empty());
    let annotations = existing.metadata.annotations.clone().unwrap_or_default();
    if let Some(refusal) = admit(
        cluster.node_admission.as_ref(),
        name,
        (&live, &labels),
        (&annotations, &annotations),
    ) {
        return refusal;
    }
    store(cluster, name, labels, owners, None, dry_run)
}

/// The admission policy's 403 for this update of node `name`, if it refuses it.
fn admit(
    policy: Option<&NodeLabelPolicy>,
    name: &str,
    labels: (&BTreeMap<String, String>, &BTreeMap<String, String>),
    annotations: (&BTreeMap<String, String>, &BTreeMap<String, String>),
) -> Option<Response> {
    policy?.judge(name, labels, annotations)
}

/// Merge (or strategic merge) patch of labels and annotations by an `Update` manager.
fn merge(
    cluster: &mut FakeCluster,
    name: &str,
    manager: &str,
    dry_run: bool,
    body: &Value,
) -> Response {
    let Some(existing) = cluster.nodes.get(name).cloned() else {
        return not_found("nodes", "", name);
    };
    let metadata = body.get("metadata").cloned().unwrap_or(Value::Null);
    let unsupported = body
        .as_object()
        .into_iter()
        .flat_map(|m| m.keys())
        .find(|k| k.as_str() != "metadata")
        .or_else(|| {
            metadata
                .as_object()
                .into_iter()
                .flat_map(|m| m.keys())
                .find(|k| !matches!(k.as_str(), "labels" | "annotations" | "resourceVersion"))
        });
    if let Some(field) = unsupported {
        return status(
            400,
            "BadRequest",
            &format!(
                "the fake API server merges only metadata.labels and annotations of nodes, not {field}"
            ),
            None,
        );
    }
    if let Some(version) = metadata.get("resourceVersion").and_then(Value::as_str)
        && Some(version) != existing.metadata.resource_version.as_deref()
    {
        return conflict(
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        );
    }
    let mut labels = existing.metadata.labels.clone().unwrap_or_default();
    let mut owners = cluster.label_owners.get(name).cloned().unwrap_or_default();
    let mut mine = BTreeSet::new();
    for (key, value) in metadata
        .get("labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        match value {
            Value::Null => {
                labels.remove(key);
                for owner in &mut owners {
                    owner.keys.remove(key);
                }
            }
            Value::String(value) => {
                if labels.get(key) != Some(value) {
                    labels.insert(key.clone(), value.clone());
                    for owner in &mut owners {
                        owner.keys.remove(key);
                    }
                    mine.insert(key.clone());
                }
            }
            other => {
                return status(
                    422,
                    "Invalid",
                    &format!("label {key} must be a string, not {other}"),
                    None,
                );
            }
        }
    }
    let mut annotations = existing.metadata.annotations.clone().unwrap_or_default();
    for (key, value) in metadata
        .get("annotations")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        match value {
            Value::Null => {
                annotations.remove(key);
            }
            Value::String(value) => {
                annotations.insert(key.clone(), value.clone());
            }
            other => {
                return status(
                    422,
                    "Invalid",
                    &format!("annotation {key} must be a string, not {other}"),
                    None,
                );
            }
        }
    }
    if !mine.is_empty() {
        match owners
            .iter_mut()
            .find(|o| o.manager == manager && o.operation == "Update")
        {
            Some(entry) => {
                entry.keys.extend(mine);
                entry.time = now();
            }
            None => owners.push(LabelOwner {
                manager: manager.to_string(),
                operation: "Update".to_string(),
                time: now(),
                keys: mine,
            }),
        }
    }
    owners.retain(|o| !o.keys.is_empty());
    let old_labels = existing.metadata.labels.clone().unwrap_or_default();
    let old_annotations = existing.metadata.annotations.clone().unwrap_or_default();
    if let Some(refusal) = admit(
        cluster.node_admission.as_ref(),
        name,
        (&old_labels, &labels),
        (&old_annotations, &annotations),
    ) {
        return refusal;
    }
    store(cluster, name, labels, owners, Some(annotations), dry_run)
}

/// Stores a node's new labels and ownership; bumps the revision only on a real change. A dry
/// run answers the node as it would be and leaves everything as it was.
fn store(
    cluster: &mut FakeCluster,
    name: &str,
    labels: BTreeMap<String, String>,
    owners: Vec<LabelOwner>,
    annotations: Option<BTreeMap<String, String>>,
    dry_run: bool,
) -> Response {
    let existing = cluster.nodes[name].clone();
    let old_owners = cluster.label_owners.get(name).cloned().unwrap_or_default();
    let same_owners = old_owners.len() == owners.len()
        && old_owners
            .iter()
            .zip(&owners)
            .all(|(a, b)| a.manager == b.manager && a.operation == b.operation && a.keys == b.keys);
    let old_labels = existing.metadata.labels.clone().unwrap_or_default();
    let old_annotations = existing.metadata.annotations.clone().unwrap_or_default();
    let same_annotations = annotations.as_ref().is_none_or(|a| *a == old_annotations);
    if old_labels == labels && same_owners && same_annotations {
        return object(StatusCode::OK, existing.as_ref());
    }
    let saved_revision = cluster.revision;
    let saved_owners = cluster.label_owners.get(name).cloned();
    let revision = cluster.bump();
    let node = Arc::make_mut(cluster.nodes.get_mut(name).expect("the node exists"));
    node.metadata.labels = (!labels.is_empty()).then_some(labels);
    if let Some(annotations) = annotations {
        node.metadata.annotations = (!annotations.is_empty()).then_some(annotations);
    }
    node.metadata.resource_version = Some(revision);
    cluster.label_owners.insert(name.to_string(), owners);
    cluster.render_label_owners(name);
    if !dry_run {
        return object(StatusCode::OK, cluster.nodes[name].as_ref());
    }
    let mut answer = cluster.nodes[name].as_ref().clone();
    answer.metadata.resource_version = existing.metadata.resource_version.clone();
    cluster.nodes.insert(name.to_string(), existing);
    match saved_owners {
        Some(owners) => cluster.label_owners.insert(name.to_string(), owners),
        None => cluster.label_owners.remove(name),
    };
    cluster.revision = saved_revision;
    object(StatusCode::OK, &answer)
}
