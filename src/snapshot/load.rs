//! Reading snapshot files: streams of Kubernetes objects (single objects, `List`s, several
//! YAML documents, or several concatenated JSON documents) and `VSphereInventory` documents.
//!
//! Each document is reduced to the planner's types as soon as it is read, and list items one at
//! a time, so a 150,000-pod `kubectl get pods -o json` never exists as a tree in memory.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use super::convert::{self, ConvertError};
use super::model::{Labels, Node, Pdb, Pod};
use super::quantity::parse_milli;
use crate::inventory::{self, Inventory};

/// Why a snapshot could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("cannot read snapshot file {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "snapshot file {path} is larger than {limit} ({} bytes), the most one file may hold; \
         raise the limit with --max-snapshot-size or split the objects over several files",
        limit.bytes()
    )]
    TooLarge { path: PathBuf, limit: FileSizeLimit },
    #[error("snapshot file {path} is not YAML or JSON text: {problem} at byte {offset}")]
    NotText {
        path: PathBuf,
        offset: u64,
        problem: NotText,
    },
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
    #[error("nothing to plan on: {} no object", holding(.paths))]
    Empty { paths: Vec<PathBuf> },
    #[error(
        "nothing to plan on: {} no Node; record the nodes too (`vsphere-descheduler snapshot -o FILE`, \
         or `kubectl get nodes -o yaml`)",
        holding(.paths)
    )]
    NoNode { paths: Vec<PathBuf> },
}

/// "snapshot file a holds" or "snapshot files a, b hold".
fn holding(paths: &[PathBuf]) -> String {
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    match names.as_slice() {
        [one] => format!("snapshot file {one} holds"),
        many => format!("snapshot files {} hold", many.join(", ")),
    }
}

/// Why the bytes of a file are not snapshot text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NotText {
    #[error("invalid UTF-8")]
    InvalidUtf8,
    /// Neither YAML nor JSON allows a raw control character other than tab, CR and LF.
    #[error("control character {0:#04x}")]
    ControlCharacter(u8),
}

/// The most bytes one snapshot file may hold, so a wrong path (a disk image, a device, a pipe
/// that never ends) fails at a known size instead of exhausting memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileSizeLimit {
    bytes: u64,
}

impl FileSizeLimit {
    /// 1 GiB: four times the generated 300,000-pod benchmark cluster as YAML (README,
    /// "What a snapshot contains", has the measurements).
    pub const DEFAULT: FileSizeLimit = FileSizeLimit { bytes: 1 << 30 };

    pub fn bytes(self) -> u64 {
        self.bytes
    }
}

impl Default for FileSizeLimit {
    fn default() -> FileSizeLimit {
        FileSizeLimit::DEFAULT
    }
}

/// A size that is not a positive whole number of bytes.
#[derive(Debug, thiserror::Error)]
#[error(
    "invalid size {0:?}: expected a positive Kubernetes quantity of bytes such as 512Mi or 2Gi"
)]
pub struct InvalidFileSize(String);

impl FromStr for FileSizeLimit {
    type Err = InvalidFileSize;

    /// A Kubernetes quantity (`512Mi`, `2Gi`, `1500000000`), as resource sizes are written.
    fn from_str(text: &str) -> Result<FileSizeLimit, InvalidFileSize> {
        parse_milli(text)
            .filter(|milli| *milli > 0 && milli % 1000 == 0)
            .and_then(|milli| u64::try_from(milli / 1000).ok())
            .map(|bytes| FileSizeLimit { bytes })
            .ok_or_else(|| InvalidFileSize(text.to_string()))
    }
}

impl fmt::Display for FileSizeLimit {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let unit = [("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)]
            .into_iter()
            .find(|(_, size)| self.bytes.is_multiple_of(*size));
        match unit {
            Some((suffix, size)) => write!(f, "{}{suffix}", self.bytes / size),
            None => write!(f, "{}", self.bytes),
        }
    }
}

/// Objects read from snapshot files, before they are assembled into a `Snapshot`.
#[derive(Debug, Default)]
pub struct Objects {
    pub nodes: Vec<Node>,
    pub pods: Vec<Pod>,
    pub pdbs: Vec<Pdb>,
    pub namespaces: Vec<(String, Labels)>,
    pub priority_classes: Vec<(String, i32)>,
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
        self.priority_classes.extend(other.priority_classes);
        self.inventories.extend(other.inventories);
        self.ignored.extend(other.ignored);
    }
}

/// Read one snapshot file of at most `limit` bytes.
pub fn read_file(path: &Path, limit: FileSizeLimit) -> Result<Objects, SnapshotError> {
    let text = read_text(path, limit)?;
    read_str(&text).map_err(|message| SnapshotError::Parse {
        path: path.to_path_buf(),
        message,
    })
}

/// How much is read at a time; each piece is checked to be text before the next is read.
const CHUNK_BYTES: u64 = 1 << 20;

/// The text of a file, read through a bounded reader: a regular file over the limit is refused
/// by its size, anything else (a device, a pipe) once it has given one byte more than the limit.
/// A byte that cannot be YAML or JSON stops the read where it is, so `/dev/urandom` fails in
/// its first chunk.
fn read_text(path: &Path, limit: FileSizeLimit) -> Result<String, SnapshotError> {
    let read_error = |source| SnapshotError::Read {
        path: path.to_path_buf(),
        source,
    };
    let too_large = || SnapshotError::TooLarge {
        path: path.to_path_buf(),
        limit,
    };
    let file = std::fs::File::open(path).map_err(read_error)?;
    let metadata = file.metadata().map_err(read_error)?;
    if metadata.is_file() && metadata.len() > limit.bytes() {
        return Err(too_large());
    }
    let expected = if metadata.is_file() {
        metadata.len()
    } else {
        0
    };
    let mut bytes = Vec::with_capacity(usize::try_from(expected).unwrap_or(0));
    let mut reader = file.take(limit.bytes() + 1);
    let mut checked = 0;
    loop {
        let read = (&mut reader)
            .take(CHUNK_BYTES)
            .read_to_end(&mut bytes)
            .map_err(read_error)?;
        if read == 0 {
            break;
        }
        checked =
            check_text(&bytes, checked).map_err(|(offset, problem)| SnapshotError::NotText {
                path: path.to_path_buf(),
                offset: offset as u64,
                problem,
            })?;
    }
    if bytes.len() as u64 > limit.bytes() {
        return Err(too_large());
    }
    if checked < bytes.len() {
        // The file ends inside a character.
        return Err(SnapshotError::NotText {
            path: path.to_path_buf(),
            offset: checked as u64,
            problem: NotText::InvalidUtf8,
        });
    }
    Ok(String::from_utf8(bytes).expect("checked as it was read"))
}

/// Checks `bytes[from..]` and returns how far they are valid text: the end, or the start of a
/// character the next chunk completes. `Err` has the offset of the first byte that is not text.
fn check_text(bytes: &[u8], from: usize) -> Result<usize, (usize, NotText)> {
    let unchecked = &bytes[from..];
    let control = unchecked
        .iter()
        .position(|&byte| byte < 0x20 && !matches!(byte, b'\t' | b'\n' | b'\r'))
        .map(|at| (from + at, NotText::ControlCharacter(unchecked[at])));
    let utf8 = match std::str::from_utf8(unchecked) {
        Ok(_) => Ok(bytes.len()),
        Err(error) if error.error_len().is_none() => Ok(from + error.valid_up_to()),
        Err(error) => Err((from + error.valid_up_to(), NotText::InvalidUtf8)),
    };
    match (control, utf8) {
        (Some(control), Err(invalid)) => Err(if control.0 < invalid.0 {
            control
        } else {
            invalid
        }),
        (Some(control), Ok(_)) => Err(control),
        (None, utf8) => utf8,
    }
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
        ("scheduling.k8s.io/v1", "PriorityClass") => {
            let class = source.decode().map_err(|e| described(&e))?;
            objects
                .priority_classes
                .push(convert::priority_class(class).map_err(|e| described(&e))?);
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
    use std::io::Write;

    use super::{
        FileSizeLimit, NotText, PARALLEL_ITEMS, SnapshotError, check_text, read_str, read_text,
    };

    #[test]
    fn a_size_limit_is_a_kubernetes_quantity_of_whole_bytes() {
        let limit = |text: &str| text.parse::<FileSizeLimit>().map(FileSizeLimit::bytes).ok();
        assert_eq!(limit("512Mi"), Some(512 << 20));
        assert_eq!(limit("2G"), Some(2_000_000_000));
        assert_eq!(limit("1500"), Some(1500));
        for invalid in ["0", "-1Gi", "1.5", "lots", ""] {
            assert_eq!(limit(invalid), None, "{invalid:?}");
        }
        for shown in ["1Gi", "512Mi", "3Ki", "1500"] {
            let parsed: FileSizeLimit = shown.parse().expect("valid");
            assert_eq!(parsed.to_string(), shown);
        }
        assert_eq!(FileSizeLimit::DEFAULT.to_string(), "1Gi");
    }

    #[test]
    fn text_is_utf8_without_control_characters_other_than_tab_cr_and_lf() {
        assert_eq!(check_text(b"a: b\r\n\tc\n", 0), Ok(9));
        assert_eq!(check_text("é".as_bytes(), 0), Ok(2));
        assert_eq!(
            check_text(b"a: \x00", 0),
            Err((3, NotText::ControlCharacter(0)))
        );
        assert_eq!(check_text(b"ab\xff\x01", 0), Err((2, NotText::InvalidUtf8)));
        assert_eq!(
            check_text(b"ab\x01\xff", 0),
            Err((2, NotText::ControlCharacter(1)))
        );
    }

    #[test]
    fn a_character_split_between_two_reads_is_checked_once_whole() {
        let text = "name: café".as_bytes();
        let (first, _) = text.split_at(text.len() - 1);
        let checked = check_text(first, 0).expect("valid so far");
        assert_eq!(checked, first.len() - 1, "the half character waits");
        assert_eq!(check_text(text, checked), Ok(text.len()));
    }

    fn file_with(bytes: &[u8]) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().expect("a temporary file");
        file.write_all(bytes).expect("writable");
        file
    }

    #[test]
    fn a_file_over_the_limit_is_refused_naming_it_the_limit_and_the_way_out() {
        let file = file_with(&[b'#'; 2049]);
        let limit: FileSizeLimit = "2Ki".parse().expect("valid");
        let error = read_text(file.path(), limit).expect_err("too large");
        assert!(matches!(error, SnapshotError::TooLarge { .. }), "{error:?}");
        let message = error.to_string();
        for expected in [
            &file.path().display().to_string(),
            "2Ki (2048 bytes)",
            "--max-snapshot-size",
        ] {
            assert!(message.contains(expected), "{expected:?} in {message}");
        }
        let file = file_with(&[b'#'; 2048]);
        assert_eq!(
            read_text(file.path(), limit).expect("at the limit").len(),
            2048
        );
    }

    #[test]
    fn a_file_ending_inside_a_character_is_not_text() {
        let file = file_with(&"a: é".as_bytes()[..4]);
        let error = read_text(file.path(), FileSizeLimit::DEFAULT).expect_err("cut short");
        assert!(
            matches!(
                error,
                SnapshotError::NotText {
                    offset: 3,
                    problem: NotText::InvalidUtf8,
                    ..
                }
            ),
            "{error:?}"
        );
    }

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
