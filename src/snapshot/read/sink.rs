//! The bottom of the reading layer, where every reader puts what it reads: one object at a
//! time ([`object`]), from a tree or from raw JSON, converted by its `apiVersion` and `kind`
//! into [`Objects`]. Every problem is an [`ObjectProblem`] its reader positions.

use serde::de::{self, Deserialize, Deserializer};
use serde_json::Value;
use serde_json::value::RawValue;

use super::position::{json_error_offset, json_message, offset_in, read_at_the_error};
use crate::inventory::{self, Inventory};
use crate::snapshot::decode::convert::{self, ConvertError};
use crate::snapshot::decode::history::RecordedHistory;
use crate::snapshot::decode::snapshot_info::{self, SnapshotInfo};
use crate::snapshot::decode::wire;
use crate::snapshot::model::{Interner, Labels, Metrics, Node, Pdb, Pod};
use crate::vm_operator::documents::{
    self as vm_operator, RESOURCE_POLICY, ResourcePolicy, VIRTUAL_MACHINE, VirtualMachine,
};

/// Objects read from snapshot files, before they are assembled into a `Snapshot`.
#[derive(Debug, Default)]
pub struct Objects {
    pub nodes: Vec<Node>,
    pub pods: Vec<Pod>,
    pub pdbs: Vec<Pdb>,
    pub namespaces: Vec<(String, Labels)>,
    pub priority_classes: Vec<(String, i32)>,
    pub inventories: Vec<Inventory>,
    /// VM Operator's objects (`vmoperator.vmware.com`, any served version): assembled into the
    /// inventory, in place of a `VSphereInventory`.
    pub virtual_machines: Vec<VirtualMachine>,
    pub resource_policies: Vec<ResourcePolicy>,
    /// `metrics.k8s.io` usage, when any NodeMetrics or PodMetrics was read.
    pub metrics: Option<Metrics>,
    /// Eviction histories of Leases (the run lock's, the earlier form) and ConfigMaps, as
    /// recorded: a snapshot has one of each at most.
    pub histories: Vec<RecordedHistory>,
    /// The `recordedAt` of each `SnapshotInfo` read, in the order read.
    pub recorded_at: Vec<chrono::DateTime<chrono::Utc>>,
    /// Kinds that were present but are not used (e.g. Deployments in `kubectl get all`).
    pub ignored: Vec<String>,
}

/// The API metrics-server serves (`kubectl top` reads it).
pub const METRICS_API_VERSION: &str = "metrics.k8s.io/v1beta1";

impl Objects {
    fn metrics_mut(&mut self) -> &mut Metrics {
        self.metrics.get_or_insert_with(Metrics::default)
    }

    /// Gives back what the vectors reserved beyond their objects while they grew.
    pub(super) fn shrink_to_fit(&mut self) {
        self.nodes.shrink_to_fit();
        self.pods.shrink_to_fit();
        self.pdbs.shrink_to_fit();
    }

    pub(super) fn extend(&mut self, other: Objects) {
        self.extend_growing(other, Growth::Exact);
    }

    /// `other` after these objects, the vectors growing as `growth` says.
    pub(super) fn extend_growing(&mut self, other: Objects, growth: Growth) {
        append(&mut self.nodes, other.nodes, growth);
        append(&mut self.pods, other.pods, growth);
        append(&mut self.pdbs, other.pdbs, growth);
        append(&mut self.namespaces, other.namespaces, growth);
        append(&mut self.priority_classes, other.priority_classes, growth);
        append(&mut self.inventories, other.inventories, growth);
        append(&mut self.virtual_machines, other.virtual_machines, growth);
        append(&mut self.resource_policies, other.resource_policies, growth);
        append(&mut self.histories, other.histories, growth);
        self.recorded_at.extend(other.recorded_at);
        if let Some(metrics) = other.metrics {
            let mine = self.metrics.get_or_insert_with(Metrics::default);
            mine.nodes.extend(metrics.nodes);
            mine.pods.extend(metrics.pods);
        }
        self.ignored.extend(other.ignored);
    }
}

/// How a vector of objects grows when more are appended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Growth {
    /// To the exact size: doubling would leave up to half of it unused for the rest of the run.
    Exact,
    /// By doubling, for many small appends (exact growth would reallocate at each); the
    /// caller gives back the spare room when done.
    Doubling,
}

/// `other` after `mine`, taking `other` whole when `mine` is empty (moving a 150,000-pod vector
/// into an empty one would hold both at once), else growing `mine` as `growth` says.
fn append<T>(mine: &mut Vec<T>, mut other: Vec<T>, growth: Growth) {
    if mine.is_empty() {
        *mine = other;
    } else {
        if growth == Growth::Exact {
            mine.reserve_exact(other.len());
        }
        mine.append(&mut other);
    }
}

/// The steps of a serde path, as far as they name keys and list indices.
fn steps(path: &serde_path_to_error::Path) -> Vec<PathStep> {
    use serde_path_to_error::Segment;
    path.iter()
        .map_while(|segment| match segment {
            Segment::Map { key } => Some(PathStep::Key(key.clone())),
            Segment::Seq { index } => Some(PathStep::Index(*index)),
            Segment::Enum { .. } | Segment::Unknown => None,
        })
        .collect()
}

/// What is wrong with one object, and at which byte of the text being read.
#[derive(Debug)]
pub(super) struct ObjectProblem {
    pub(super) offset: usize,
    pub(super) message: String,
    /// Where in an unpositioned YAML object the value at fault is (mapping keys and list
    /// indices from the object down); empty when unknown or when `offset` says where.
    pub(super) path: Vec<PathStep>,
}

/// One step down a YAML object's tree to the value a type error is about.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum PathStep {
    Key(String),
    Index(usize),
}

impl ObjectProblem {
    /// A serde_json error from parsing `part`, a slice of `text`.
    pub(super) fn json(text: &str, part: &str, error: &serde_json::Error) -> ObjectProblem {
        let at = json_error_offset(part, error);
        ObjectProblem {
            offset: offset_in(text, part) + at,
            message: read_at_the_error(part, at).unwrap_or_else(|| json_message(error)),
            path: Vec::new(),
        }
    }

    /// A problem found in `part` (offset relative to it), moved into the terms of `text`.
    pub(super) fn within(self, text: &str, part: &str) -> ObjectProblem {
        ObjectProblem {
            offset: offset_in(text, part) + self.offset,
            message: self.message,
            path: self.path,
        }
    }

    pub(super) fn message(message: String) -> ObjectProblem {
        ObjectProblem {
            offset: 0,
            message,
            path: Vec::new(),
        }
    }
}

/// The items of a JSON `List`, left as raw text.
#[derive(serde::Deserialize)]
#[serde(expecting = "a Kubernetes object, a List, or a VSphereInventory (a JSON object)")]
pub(super) struct ListHeader<'a> {
    #[serde(borrow, default)]
    pub(super) items: Option<Vec<&'a RawValue>>,
    #[serde(default, rename = "apiVersion", deserialize_with = "api_version")]
    pub(super) api_version: String,
    #[serde(default, deserialize_with = "kind")]
    pub(super) kind: String,
}

/// The type of the items of a typed list (`NodeList`, `NodeMetricsList`): the API server
/// leaves `apiVersion` and `kind` out of them (`kubectl get --raw` shows them so), so an item
/// without either is read as the list's. `v1 List` items name their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct ItemType<'a> {
    pub(super) api_version: &'a str,
    pub(super) kind: &'a str,
}

impl<'a> ItemType<'a> {
    pub(super) fn of(api_version: &'a str, list_kind: &'a str) -> Option<ItemType<'a>> {
        match list_kind.strip_suffix("List") {
            Some(kind) if !kind.is_empty() && !api_version.is_empty() => {
                Some(ItemType { api_version, kind })
            }
            _ => None,
        }
    }
}

/// What identifies an object, read without decoding the rest. Every message names the field
/// in the user's words: serde's own would name these types.
#[derive(serde::Deserialize, Default)]
#[serde(
    rename_all = "camelCase",
    expecting = "a Kubernetes object (a mapping with apiVersion and kind)"
)]
struct Header {
    #[serde(default, deserialize_with = "api_version")]
    api_version: String,
    #[serde(default, deserialize_with = "kind")]
    kind: String,
    #[serde(default)]
    metadata: HeaderMetadata,
}

#[derive(serde::Deserialize, Default)]
#[serde(expecting = "metadata to be a mapping")]
struct HeaderMetadata {
    #[serde(default, deserialize_with = "name")]
    name: Option<String>,
    #[serde(default, deserialize_with = "namespace")]
    namespace: Option<String>,
}

fn api_version<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(text_field("apiVersion", deserializer)?.unwrap_or_default())
}

fn kind<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(text_field("kind", deserializer)?.unwrap_or_default())
}

fn name<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    text_field("metadata.name", deserializer)
}

fn namespace<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    text_field("metadata.namespace", deserializer)
}

/// A string field that may be absent or null.
fn text_field<'de, D: Deserializer<'de>>(
    field: &str,
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    match Option::<Value>::deserialize(deserializer)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(other) => Err(de::Error::custom(format!(
            "{field} must be a string, not {}",
            describe(&other)
        ))),
    }
}

/// A value as the user wrote it, in YAML's and JSON's words.
fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(flag) => format!("{flag}"),
        Value::Number(number) => format!("the number {number}"),
        Value::String(text) => format!("{text:?}"),
        Value::Array(_) => "a list".to_string(),
        Value::Object(_) => "a mapping".to_string(),
    }
}

/// One object: a tree (from YAML) or raw JSON text (decoded straight into its type).
pub(super) enum Source<'a> {
    Tree(Value),
    Raw(&'a str),
}

impl Source<'_> {
    fn header(&self) -> Result<Header, ObjectProblem> {
        match self {
            Source::Tree(value) => Header::deserialize(value).map_err(|e| self.problem(&e)),
            Source::Raw(text) => serde_json::from_str(text).map_err(|e| self.problem(&e)),
        }
    }

    /// A decoding error, positioned in the raw text (a tree has no positions: its reader
    /// positions the error).
    fn problem(&self, error: &serde_json::Error) -> ObjectProblem {
        match self {
            Source::Tree(_) => ObjectProblem::message(json_message(error)),
            Source::Raw(text) => ObjectProblem::json(text, text, error),
        }
    }

    fn decode<T: serde::de::DeserializeOwned>(self) -> Result<T, ObjectProblem> {
        match self {
            Source::Tree(value) => {
                serde_path_to_error::deserialize(value).map_err(|e| ObjectProblem {
                    path: steps(e.path()),
                    ..ObjectProblem::message(json_message(e.inner()))
                })
            }
            Source::Raw(text) => {
                serde_json::from_str(text).map_err(|e| ObjectProblem::json(text, text, &e))
            }
        }
    }
}

/// Convert one object by its `apiVersion` and `kind`. A problem is positioned in the object's
/// raw text, or at its start when it is about the object as a whole.
/// An item of a typed list without `apiVersion` and `kind` is of `item_type`.
pub(super) fn object(
    source: Source,
    item_type: Option<ItemType>,
    interner: &mut Interner,
) -> Result<Objects, ObjectProblem> {
    if let Source::Raw(text) = source
        && let Some(read) = pod_in_one_pass(text, item_type, interner)
    {
        return read;
    }
    let header = source.header()?;
    let (api_version, kind) = type_of(&header.api_version, &header.kind, item_type);
    let name = display_name(
        header.metadata.namespace.as_deref(),
        header.metadata.name.as_deref(),
    );
    let mut objects = Objects::default();
    let described = |problem: ObjectProblem| ObjectProblem {
        message: format!("{kind} {name}: {}", problem.message),
        ..problem
    };
    let converted = |e: ConvertError| described(ObjectProblem::message(e.to_string()));
    match (api_version, kind) {
        ("v1", "Node") => {
            let node = source.decode().map_err(described)?;
            objects
                .nodes
                .push(convert::node(node, interner).map_err(converted)?);
        }
        ("v1", "Pod") => {
            let pod = source.decode().map_err(described)?;
            objects
                .pods
                .push(convert::pod(pod, interner).map_err(converted)?);
        }
        ("policy/v1", "PodDisruptionBudget") => {
            let pdb = source.decode().map_err(described)?;
            objects.pdbs.push(convert::pdb(pdb).map_err(converted)?);
        }
        ("v1", "Namespace") => {
            let namespace = source.decode().map_err(described)?;
            objects
                .namespaces
                .push(convert::namespace(namespace, interner).map_err(converted)?);
        }
        ("scheduling.k8s.io/v1", "PriorityClass") => {
            let class = source.decode().map_err(described)?;
            objects
                .priority_classes
                .push(convert::priority_class(class).map_err(converted)?);
        }
        (METRICS_API_VERSION, "NodeMetrics") => {
            let metrics = source.decode().map_err(described)?;
            let (node, usage) = convert::node_metrics(metrics).map_err(converted)?;
            objects.metrics_mut().nodes.insert(node, usage);
        }
        (METRICS_API_VERSION, "PodMetrics") => {
            let metrics = source.decode().map_err(described)?;
            let (pod, usage) = convert::pod_metrics(metrics).map_err(converted)?;
            objects.metrics_mut().pods.insert(pod, usage);
        }
        (inventory::API_VERSION, inventory::KIND) => {
            objects.inventories.push(inventory_document(source)?);
        }
        (snapshot_info::API_VERSION, snapshot_info::KIND) => {
            objects.recorded_at.push(info_document(source)?.recorded_at);
        }
        ("v1", "ConfigMap") => {
            let config_map = source.decode().map_err(described)?;
            match convert::config_map_history(config_map).map_err(converted)? {
                Some(history) => objects.histories.push(history),
                None => objects.ignored.push(format!("{api_version} {kind} {name}")),
            }
        }
        ("coordination.k8s.io/v1", "Lease") => {
            let lease = source.decode().map_err(described)?;
            match convert::lease_history(lease).map_err(converted)? {
                Some(history) => objects.histories.push(history),
                // Another Lease, or the run lock before any run recorded an eviction.
                None => objects.ignored.push(format!("{api_version} {kind} {name}")),
            }
        }
        (api_version, VIRTUAL_MACHINE) if vm_operator::is_read_version(api_version) => {
            let vm = source.decode().map_err(described)?;
            objects.virtual_machines.push(vm);
        }
        (api_version, RESOURCE_POLICY) if vm_operator::is_read_version(api_version) => {
            let policy = source.decode().map_err(described)?;
            objects.resource_policies.push(policy);
        }
        (api_version, VIRTUAL_MACHINE | RESOURCE_POLICY)
            if api_version.split('/').next() == Some(vm_operator::API_GROUP) =>
        {
            return Err(converted(ConvertError::Enum {
                field: "apiVersion".to_string(),
                value: format!(
                    "{api_version} (only {} v1alpha1 to v1alpha6 are read)",
                    vm_operator::API_GROUP
                ),
            }));
        }
        ("", "") => {
            return Err(ObjectProblem::message(format!(
                "object {name} has no apiVersion and no kind"
            )));
        }
        ("", _) => {
            return Err(ObjectProblem::message(format!(
                "{kind} {name} has no apiVersion"
            )));
        }
        (_, "") => {
            return Err(ObjectProblem::message(format!(
                "object {name} ({api_version}) has no kind"
            )));
        }
        (_, "PodDisruptionBudget") => {
            return Err(converted(ConvertError::Enum {
                field: "apiVersion".to_string(),
                value: format!("{api_version} (only policy/v1 is read)"),
            }));
        }
        _ => objects.ignored.push(format!("{api_version} {kind} {name}")),
    }
    Ok(objects)
}

/// The type of an object: its own, or its typed list's when it names neither.
fn type_of<'a>(
    api_version: &'a str,
    kind: &'a str,
    item_type: Option<ItemType<'a>>,
) -> (&'a str, &'a str) {
    match (api_version, kind, item_type) {
        ("", "", Some(item)) => (item.api_version, item.kind),
        (api_version, kind, _) => (api_version, kind),
    }
}

/// How an object is named in messages: `namespace/name`, `name`, or `(unnamed)`.
fn display_name(namespace: Option<&str>, name: Option<&str>) -> String {
    match (namespace, name) {
        (Some(namespace), Some(name)) => format!("{namespace}/{name}"),
        (None, Some(name)) => name.to_string(),
        _ => "(unnamed)".to_string(),
    }
}

/// Pods are most of a big snapshot: raw JSON is first read as a pod with its `apiVersion` and
/// `kind`, in one pass instead of a header pass and a second one. Anything that is not a pod,
/// or does not read as one, is `None` and takes the general path, which also words the errors.
fn pod_in_one_pass(
    text: &str,
    item_type: Option<ItemType>,
    interner: &mut Interner,
) -> Option<Result<Objects, ObjectProblem>> {
    let typed: wire::TypedPod = serde_json::from_str(text).ok()?;
    let api_version = typed.api_version.as_deref().unwrap_or_default();
    let kind = typed.kind.as_deref().unwrap_or_default();
    if type_of(api_version, kind, item_type) != ("v1", "Pod") {
        return None;
    }
    let pod = typed.pod;
    let meta = pod.metadata.as_ref();
    let name = display_name(
        meta.and_then(|m| m.namespace.as_deref()),
        meta.and_then(|m| m.name.as_deref()),
    );
    Some(
        convert::pod(pod, interner)
            .map(|pod| Objects {
                pods: vec![pod],
                ..Objects::default()
            })
            .map_err(|e| ObjectProblem::message(format!("Pod {name}: {e}"))),
    )
}

/// A `VSphereInventory` document: its fields other than the object header.
fn inventory_document(source: Source) -> Result<Inventory, ObjectProblem> {
    own_document(source, inventory::KIND)
}

/// A `SnapshotInfo` document: its fields other than the object header.
fn info_document(source: Source) -> Result<SnapshotInfo, ObjectProblem> {
    own_document(source, snapshot_info::KIND)
}

/// A document of one of our own kinds, read strictly: its fields other than the object header.
fn own_document<T: serde::de::DeserializeOwned>(
    source: Source,
    kind: &str,
) -> Result<T, ObjectProblem> {
    let in_kind = |problem: ObjectProblem| ObjectProblem {
        message: format!("{kind}: {}", problem.message),
        ..problem
    };
    let mut value: Value = source.decode().map_err(in_kind)?;
    if let Some(fields) = value.as_object_mut() {
        fields.remove("apiVersion");
        fields.remove("kind");
        fields.remove("metadata");
    }
    serde_json::from_value(value).map_err(|e| in_kind(ObjectProblem::message(json_message(&e))))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 42: serde_json's "number out of range" and "unexpected end of hex escape" said
    /// nothing of the value; the problem is worded from the text at its position.
    #[test]
    fn a_pod_with_a_number_no_field_holds_or_half_a_surrogate_is_refused_naming_it() {
        let pod = |spec: &str| {
            format!(
                r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"p","namespace":"x"}},"spec":{spec}}}"#
            )
        };
        let number = pod(r#"{"containers":[{"name":"c","resources":{"requests":{"cpu":1e999}}}]}"#);
        let problem = object(Source::Raw(&number), None, &mut Interner::default())
            .expect_err("1e999 is no quantity");
        assert_eq!(
            problem.message,
            "Pod x/p: the value 1e999 is not a finite number, which no Kubernetes object field \
             holds: quote it to mean the text"
        );
        let surrogate = pod(r#"{"nodeName":"a\ud800b"}"#);
        let problem = object(Source::Raw(&surrogate), None, &mut Interner::default())
            .expect_err("half a surrogate pair is no text");
        assert!(
            problem
                .message
                .contains("\\ud800 is half of a UTF-16 surrogate pair"),
            "{}",
            problem.message
        );
    }
}
