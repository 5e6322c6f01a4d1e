//! Reading snapshot files: streams of Kubernetes objects (single objects, `List`s, several
//! YAML documents, or several concatenated JSON documents) and `VSphereInventory` documents.
//!
//! Each document is reduced to the planner's types as soon as it is read, and list items one at
//! a time, so a 150,000-pod `kubectl get pods -o json` never exists as a tree in memory.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use super::convert::{self, ConvertError};
use super::model::{Labels, Node, Pdb, Pod};
use crate::inventory::{self, Inventory};

/// Largest snapshot file read, so a wrong path (a disk image, /dev/zero) fails fast.
const MAX_FILE_BYTES: u64 = 4 << 30;

/// Why a snapshot could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("cannot read snapshot file {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("snapshot file {path} is larger than {limit} bytes")]
    TooLarge { path: PathBuf, limit: u64 },
    #[error("invalid snapshot file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("snapshot file {path}: vSphere cluster {cluster} appears more than once")]
    DuplicateCluster { path: PathBuf, cluster: String },
    #[error("snapshot file {path}: {kind} {name} appears more than once")]
    Duplicate {
        path: PathBuf,
        kind: &'static str,
        name: String,
    },
}

/// Objects read from snapshot files, before they are assembled into a `Snapshot`.
#[derive(Debug, Default)]
pub struct Objects {
    pub nodes: Vec<Node>,
    pub pods: Vec<Pod>,
    pub pdbs: Vec<Pdb>,
    pub namespaces: Vec<(String, Labels)>,
    pub inventories: Vec<Inventory>,
    /// Kinds that were present but are not used (e.g. Deployments in `kubectl get all`).
    pub ignored: Vec<String>,
}

impl Objects {
    fn extend(&mut self, other: Objects) {
        self.nodes.extend(other.nodes);
        self.pods.extend(other.pods);
        self.pdbs.extend(other.pdbs);
        self.namespaces.extend(other.namespaces);
        self.inventories.extend(other.inventories);
        self.ignored.extend(other.ignored);
    }
}

/// Read one snapshot file.
pub fn read_file(path: &Path) -> Result<Objects, SnapshotError> {
    let read_error = |source| SnapshotError::Read {
        path: path.to_path_buf(),
        source,
    };
    let size = std::fs::metadata(path).map_err(read_error)?.len();
    if size > MAX_FILE_BYTES {
        return Err(SnapshotError::TooLarge {
            path: path.to_path_buf(),
            limit: MAX_FILE_BYTES,
        });
    }
    let text = std::fs::read_to_string(path).map_err(read_error)?;
    read_str(&text).map_err(|message| SnapshotError::Parse {
        path: path.to_path_buf(),
        message,
    })
}

/// Read snapshot text (YAML or JSON, one or more documents).
pub fn read_str(text: &str) -> Result<Objects, String> {
    let mut objects = Objects::default();
    if text.trim_start().starts_with(['{', '[']) {
        // JSON is read without building trees: each document, and each list item, is kept as
        // its raw text and decoded straight into its type once its kind is known.
        for (index, document) in serde_json::Deserializer::from_str(text)
            .into_iter::<&RawValue>()
            .enumerate()
        {
            let in_document = |e: &dyn fmt::Display| format!("document {}: {e}", index + 1);
            let document = document.map_err(|e| in_document(&e))?;
            let list: ListHeader =
                serde_json::from_str(document.get()).map_err(|e| in_document(&e))?;
            match list.items {
                Some(items) => objects.extend(convert_items(&items).map_err(|e| in_document(&e))?),
                None => objects
                    .extend(object(Source::Raw(document.get())).map_err(|e| in_document(&e))?),
            }
        }
    } else {
        let options = serde_saphyr::options! {
            budget: serde_saphyr::budget! {
                // Scale with the input: big snapshots are legitimate, amplification is not.
                max_events: text.len().max(1_000_000),
                max_nodes: text.len().max(250_000),
                max_documents: text.len().max(1_024),
                max_total_scalar_bytes: text.len().max(1 << 20),
                max_reader_input_bytes: None,
            },
        };
        let documents: Vec<Document> = serde_saphyr::from_str_multiple_with_options(text, options)
            .map_err(|e| e.to_string())?;
        for document in documents {
            objects.extend(document.0);
        }
    }
    Ok(objects)
}

/// One document, already reduced. Its `Deserialize` streams `items` of a `List`.
struct Document(Objects);

impl<'de> Deserialize<'de> for Document {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(DocumentVisitor)
    }
}

struct DocumentVisitor;

impl<'de> Visitor<'de> for DocumentVisitor {
    type Value = Document;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Kubernetes object, a List, or a VSphereInventory")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Document, A::Error> {
        let mut objects = Objects::default();
        let mut fields = serde_json::Map::new();
        let mut had_items = false;
        while let Some(key) = map.next_key::<String>()? {
            if key == "items" {
                had_items = true;
                objects.extend(map.next_value::<Items>()?.0);
            } else {
                fields.insert(key, map.next_value::<Value>()?);
            }
        }
        let kind = fields
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if had_items || kind == "List" || kind.ends_with("List") {
            return Ok(Document(objects));
        }
        objects.extend(object(Source::Tree(Value::Object(fields))).map_err(de::Error::custom)?);
        Ok(Document(objects))
    }
}

/// The `items` of a `List`, each converted as soon as it is read.
struct Items(Objects);

impl<'de> Deserialize<'de> for Items {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ItemsVisitor;
        impl<'de> Visitor<'de> for ItemsVisitor {
            type Value = Items;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of Kubernetes objects")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Items, E> {
                Ok(Items(Objects::default()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Items, A::Error> {
                let mut objects = Objects::default();
                while let Some(item) = seq.next_element::<Value>()? {
                    objects.extend(object(Source::Tree(item)).map_err(de::Error::custom)?);
                }
                Ok(Items(objects))
            }
        }
        deserializer.deserialize_any(ItemsVisitor)
    }
}

/// Below this many items a list is converted on one thread: spawning costs more than it saves.
const PARALLEL_ITEMS: usize = 4096;

/// Convert the raw items of a list, in parallel chunks on big lists (decoding is most of a big
/// `plan`'s time). Chunks are merged in order, so the result does not depend on the threads.
fn convert_items(items: &[&RawValue]) -> Result<Objects, String> {
    let convert_chunk = |chunk: &[&RawValue]| -> Result<Objects, String> {
        let mut objects = Objects::default();
        for item in chunk {
            objects.extend(object(Source::Raw(item.get()))?);
        }
        Ok(objects)
    };
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    if threads < 2 || items.len() < PARALLEL_ITEMS {
        return convert_chunk(items);
    }
    let chunk_size = items.len().div_ceil(threads);
    let results: Vec<Result<Objects, String>> = std::thread::scope(|scope| {
        let workers: Vec<_> = items
            .chunks(chunk_size)
            .map(|chunk| scope.spawn(move || convert_chunk(chunk)))
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().expect("a conversion thread does not panic"))
            .collect()
    });
    let mut objects = Objects::default();
    for result in results {
        objects.extend(result?);
    }
    Ok(objects)
}

/// The items of a JSON `List`, left as raw text.
#[derive(serde::Deserialize)]
struct ListHeader<'a> {
    #[serde(borrow, default)]
    items: Option<Vec<&'a RawValue>>,
}

/// What identifies an object, read without decoding the rest.
#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Header {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    metadata: HeaderMetadata,
}

#[derive(serde::Deserialize, Default)]
struct HeaderMetadata {
    name: Option<String>,
    namespace: Option<String>,
}

/// One object: a tree (from YAML) or raw JSON text (decoded straight into its type).
enum Source<'a> {
    Tree(Value),
    Raw(&'a str),
}

impl Source<'_> {
    fn header(&self) -> Result<Header, String> {
        match self {
            Source::Tree(value) => Header::deserialize(value).map_err(|e| e.to_string()),
            Source::Raw(text) => serde_json::from_str(text).map_err(|e| e.to_string()),
        }
    }

    fn decode<T: serde::de::DeserializeOwned>(self) -> Result<T, serde_json::Error> {
        match self {
            Source::Tree(value) => serde_json::from_value(value),
            Source::Raw(text) => serde_json::from_str(text),
        }
    }

    fn into_value(self) -> Result<Value, serde_json::Error> {
        match self {
            Source::Tree(value) => Ok(value),
            Source::Raw(text) => serde_json::from_str(text),
        }
    }
}

/// Convert one object by its `apiVersion` and `kind`.
fn object(source: Source) -> Result<Objects, String> {
    let header = source.header()?;
    let (api_version, kind) = (header.api_version.as_str(), header.kind.as_str());
    let name = match (&header.metadata.namespace, &header.metadata.name) {
        (Some(namespace), Some(name)) => format!("{namespace}/{name}"),
        (None, Some(name)) => name.clone(),
        _ => "(unnamed)".to_string(),
    };
    let mut objects = Objects::default();
    let described = |e: &dyn fmt::Display| format!("{kind} {name}: {e}");
    match (api_version, kind) {
        ("v1", "Node") => {
            let node = source.decode().map_err(|e| described(&e))?;
            objects
                .nodes
                .push(convert::node(node).map_err(|e| described(&e))?);
        }
        ("v1", "Pod") => {
            let pod = source.decode().map_err(|e| described(&e))?;
            objects
                .pods
                .push(convert::pod(pod).map_err(|e| described(&e))?);
        }
        ("policy/v1", "PodDisruptionBudget") => {
            let pdb = source.decode().map_err(|e| described(&e))?;
            objects
                .pdbs
                .push(convert::pdb(pdb).map_err(|e| described(&e))?);
        }
        ("v1", "Namespace") => {
            let namespace = source.decode().map_err(|e| described(&e))?;
            objects
                .namespaces
                .push(convert::namespace(namespace).map_err(|e| described(&e))?);
        }
        (inventory::API_VERSION, inventory::KIND) => {
            let mut value = source.into_value().map_err(|e| format!("{kind}: {e}"))?;
            if let Some(fields) = value.as_object_mut() {
                fields.remove("apiVersion");
                fields.remove("kind");
                fields.remove("metadata");
            }
            let inventory: Inventory =
                serde_json::from_value(value).map_err(|e| format!("{kind}: {e}"))?;
            objects.inventories.push(inventory);
        }
        ("", _) | (_, "") => {
            return Err(format!("object {name} has no apiVersion or kind"));
        }
        (_, "PodDisruptionBudget") => {
            return Err(described(&ConvertError::Enum {
                field: "apiVersion".to_string(),
                value: format!("{api_version} (only policy/v1 is read)"),
            }));
        }
        _ => objects.ignored.push(format!("{api_version} {kind} {name}")),
    }
    Ok(objects)
}

#[cfg(test)]
mod tests {
    use super::{PARALLEL_ITEMS, read_str};

    fn namespace_list(count: usize, bad_at: Option<usize>) -> String {
        let items: Vec<String> = (0..count)
            .map(|i| {
                if Some(i) == bad_at {
                    r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"},"status":{"allocatable":{"cpu":"lots"}}}"#.to_string()
                } else {
                    format!(r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"ns-{i:05}"}}}}"#)
                }
            })
            .collect();
        format!(
            r#"{{"apiVersion":"v1","kind":"List","items":[{}]}}"#,
            items.join(",")
        )
    }

    #[test]
    fn a_big_json_list_is_converted_whole_and_in_order_whatever_the_threads() {
        let count = PARALLEL_ITEMS * 2 + 3;
        let objects = read_str(&namespace_list(count, None)).expect("valid");
        let names: Vec<&str> = objects
            .namespaces
            .iter()
            .map(|(name, _)| name.as_str())
            .collect();
        assert_eq!(names.len(), count);
        assert!(
            names.windows(2).all(|pair| pair[0] < pair[1]),
            "items kept their order"
        );
    }

    #[test]
    fn a_bad_item_late_in_a_big_list_is_reported_by_name() {
        let error = read_str(&namespace_list(
            PARALLEL_ITEMS * 2,
            Some(PARALLEL_ITEMS * 2 - 1),
        ))
        .expect_err("the bad quantity");
        assert!(
            error.contains("Node n: invalid quantity \"lots\""),
            "{error}"
        );
    }

    #[test]
    fn yaml_and_json_streams_read_the_same_objects() {
        let yaml = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Namespace, metadata: {name: b}}\n";
        let json = r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"}} {"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"b"}}]}"#;
        let names = |text: &str| -> Vec<String> {
            read_str(text)
                .expect("valid")
                .namespaces
                .into_iter()
                .map(|(name, _)| name)
                .collect()
        };
        assert_eq!(names(yaml), ["a", "b"]);
        assert_eq!(names(json), ["a", "b"]);
    }
}
