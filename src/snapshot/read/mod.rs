//! Reading snapshot files: streams of Kubernetes objects (single objects, `List`s, several
//! YAML documents, or several concatenated JSON documents) and `VSphereInventory` documents.
//!
//! Each document is reduced to the planner's types as soon as it is read, and list items one at
//! a time, so a 150,000-pod `kubectl get pods -o json` never exists as a tree in memory.

#[cfg(test)]
mod forms;
mod json_scan;
pub(super) mod locate;
mod position;
mod stream;
mod structure;
pub(super) mod yaml_items;
mod yaml_json;

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::encoding::{Utf16, Utf16Decoder, without_mark};
use crate::inventory::{self, Inventory};
use crate::snapshot::decode::convert::{self, ConvertError};
use crate::snapshot::decode::history::{self as eviction_history, RecordedHistory};
use crate::snapshot::decode::quantity::parse_milli;
use crate::snapshot::decode::wire;
use crate::snapshot::model::{Interner, Labels, Metrics, Node, Pdb, Pod};
use crate::stack::{on_reader_stack, reader_thread};
use crate::text::shown;
use crate::yaml_error::{duplicate_key, too_deep};
pub use position::{ParseError, Position};
use position::{at_offset, json_error_offset, json_message, line_column, offset_in};
pub use structure::MAX_DEPTH;
use structure::{OBJECT, Shape, json_shape, json_too_deep};

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
    #[error("{}:{at}: not YAML or JSON text: {problem} at byte {offset}", path.display())]
    NotText {
        path: PathBuf,
        at: Position,
        offset: u64,
        problem: NotText,
    },
    #[error("{}:{error}", path.display())]
    Parse { path: PathBuf, error: ParseError },
    /// Two records of one cluster id, or two of one `datacenter/name` that lack the ids to tell
    /// them apart.
    #[error(
        "{}: {}",
        place(path, at.as_deref()),
        duplicate_cluster(&format!("{datacenter}/{name}"), id.as_deref())
    )]
    DuplicateCluster {
        path: PathBuf,
        /// Where the later record starts, when the file could be read again to find it (boxed:
        /// errors travel in `Result`s).
        at: Option<Box<Position>>,
        datacenter: String,
        name: String,
        /// The id both records carry; `None` when they cannot be told apart.
        id: Option<String>,
    },
    #[error("{}: {kind} {} appears more than once", place(path, at.as_deref()), shown(name))]
    Duplicate {
        path: PathBuf,
        /// Where the later copy starts, when the file could be read again to find it.
        at: Option<Box<Position>>,
        kind: &'static str,
        name: String,
    },
    /// Two Leases carry an eviction history: which one the run keeps its history in cannot be
    /// told.
    #[error(
        "{}: the eviction history (annotation {}) appears more than once, in Lease {} and in \
         Lease {}: keep the run lock's only",
        place(path, at.as_deref()),
        eviction_history::ANNOTATION,
        shown(first),
        shown(second)
    )]
    DuplicateHistory {
        path: PathBuf,
        /// Where the later Lease starts, when the file could be read again to find it.
        at: Option<Box<Position>>,
        /// `namespace/name` of the Lease read first.
        first: String,
        /// `namespace/name` of the Lease read later.
        second: String,
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

/// `FILE:LINE:COL: document N` where that is known, else `snapshot file FILE`.
fn place(path: &Path, at: Option<&Position>) -> String {
    match at {
        Some(at) => format!("{}:{at}", path.display()),
        None => format!("snapshot file {}", path.display()),
    }
}

fn duplicate_cluster(cluster: &str, id: Option<&str>) -> String {
    let cluster = shown(cluster);
    match id {
        Some(id) => format!("vSphere cluster {cluster} ({id}) appears more than once"),
        None => format!(
            "vSphere cluster {cluster} appears more than once, and without an `id` on each the \
             records cannot be told apart: give each its managed object id, or remove one"
        ),
    }
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
    /// Half of a UTF-16 surrogate pair alone, in a file a byte order mark says is UTF-16.
    #[error("invalid UTF-16")]
    InvalidUtf16,
}

/// The most bytes one snapshot file may hold, so a wrong path (a disk image, a device, a pipe
/// that never ends) fails at a known size instead of exhausting memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileSizeLimit {
    bytes: u64,
}

impl FileSizeLimit {
    /// 1 GiB: four times the generated 300,000-pod benchmark cluster as YAML
    /// (docs/snapshots.md, "What a snapshot contains", has the measurements).
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
    /// `metrics.k8s.io` usage, when any NodeMetrics or PodMetrics was read.
    pub metrics: Option<Metrics>,
    /// Eviction histories of Leases (the run lock's), as recorded: a snapshot has one at most.
    pub histories: Vec<RecordedHistory>,
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
        append(&mut self.histories, other.histories, growth);
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

/// Read one snapshot file of at most `limit` bytes. A JSON file is read as a stream, its text
/// never held whole; anything the stream does not take (YAML, a problem, a pipe) is read
/// whole, which is also what words every error.
pub fn read_file(path: &Path, limit: FileSizeLimit) -> Result<Objects, SnapshotError> {
    match stream::read_file(path, limit) {
        Ok(objects) => Ok(objects),
        Err(fallback) => {
            tracing::debug!(path = %path.display(), reason = %fallback, "reading the snapshot file whole");
            read_whole_file(path, limit)
        }
    }
}

/// Read one snapshot file of at most `limit` bytes, holding its text while it is decoded.
pub(super) fn read_whole_file(path: &Path, limit: FileSizeLimit) -> Result<Objects, SnapshotError> {
    let text = read_text(path, limit)?;
    read_str(&text).map_err(|error| SnapshotError::Parse {
        path: path.to_path_buf(),
        error,
    })
}

/// How much is read at a time; each piece is checked to be text before the next is read.
pub(super) const CHUNK_BYTES: u64 = 1 << 20;

/// The text of a file, read through a bounded reader: a regular file over the limit is refused
/// by its size, anything else (a device, a pipe) once it has given one byte more than the limit.
/// A byte that cannot be YAML or JSON stops the read where it is, so `/dev/urandom` fails in
/// its first chunk. UTF-8 text keeps the byte order mark it may start with ([`read_str`] drops
/// it); UTF-16 with a byte order mark is decoded, as kubectl decodes it.
pub(super) fn read_text(path: &Path, limit: FileSizeLimit) -> Result<String, SnapshotError> {
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
    let mut sniffed = false;
    loop {
        let read = (&mut reader)
            .take(CHUNK_BYTES)
            .read_to_end(&mut bytes)
            .map_err(read_error)?;
        if !sniffed && (bytes.len() >= 2 || read == 0) {
            sniffed = true;
            if let Some(order) = Utf16::marked(&bytes) {
                return utf16_text(path, reader, &bytes[2..], order, limit);
            }
        }
        if read == 0 {
            break;
        }
        checked = check_text(&bytes, checked)
            .map_err(|(offset, problem)| not_text(path, &bytes, offset, problem))?;
    }
    if bytes.len() as u64 > limit.bytes() {
        return Err(too_large());
    }
    if checked < bytes.len() {
        // The file ends inside a character.
        return Err(not_text(path, &bytes, checked, NotText::InvalidUtf8));
    }
    Ok(String::from_utf8(bytes).expect("checked as it was read"))
}

/// The error for a byte that is not text, positioned by the text before it (which is valid:
/// the check stops at the first bad byte).
fn not_text(path: &Path, bytes: &[u8], offset: usize, problem: NotText) -> SnapshotError {
    let before = std::str::from_utf8(&bytes[..offset]).unwrap_or_default();
    not_text_after(path, before, offset as u64, problem)
}

/// The error for the byte at `offset` of the file, which follows the text `before`.
fn not_text_after(path: &Path, before: &str, offset: u64, problem: NotText) -> SnapshotError {
    // Editors do not show a byte order mark: columns count from the character after it.
    let before = without_mark(before);
    SnapshotError::NotText {
        path: path.to_path_buf(),
        at: at_offset(before, before.len()),
        offset,
        problem,
    }
}

/// The text of a UTF-16 file whose bytes after the byte order mark begin with `first`, the
/// rest to come from `reader`: decoded and checked a chunk at a time, as UTF-8 is.
fn utf16_text(
    path: &Path,
    mut reader: impl Read,
    first: &[u8],
    order: Utf16,
    limit: FileSizeLimit,
) -> Result<String, SnapshotError> {
    let mut decoder = Utf16Decoder::new(order);
    let mut text = String::new();
    let mut chunk = first.to_vec();
    let mut total = 2 + chunk.len() as u64;
    loop {
        let checked = text.len();
        decoder.push(&chunk, &mut text).map_err(|invalid| {
            not_text_after(path, &text, invalid.offset, NotText::InvalidUtf16)
        })?;
        if let Err((at, problem)) = check_text(text.as_bytes(), checked) {
            // Two bytes for each UTF-16 unit before it, and two for the mark.
            let offset = 2 + 2 * text[..at].encode_utf16().count() as u64;
            return Err(not_text_after(path, &text[..at], offset, problem));
        }
        chunk.clear();
        let read = (&mut reader)
            .take(CHUNK_BYTES)
            .read_to_end(&mut chunk)
            .map_err(|source| SnapshotError::Read {
                path: path.to_path_buf(),
                source,
            })?;
        if read == 0 {
            break;
        }
        total += read as u64;
        if total > limit.bytes() {
            return Err(SnapshotError::TooLarge {
                path: path.to_path_buf(),
                limit,
            });
        }
    }
    decoder
        .finish()
        .map_err(|invalid| not_text_after(path, &text, invalid.offset, NotText::InvalidUtf16))?;
    Ok(text)
}

/// Checks `bytes[from..]` and returns how far they are valid text: the end, or the start of a
/// character the next chunk completes. `Err` has the offset of the first byte that is not text.
pub(super) fn check_text(bytes: &[u8], from: usize) -> Result<usize, (usize, NotText)> {
    let unchecked = &bytes[from..];
    let control =
        first_control(unchecked).map(|at| (from + at, NotText::ControlCharacter(unchecked[at])));
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

/// Where the first control character other than tab, CR and LF is. Blocks of 64 bytes are
/// tested without a branch per byte, which the compiler turns into vector instructions (a
/// byte-at-a-time search was a tenth of reading a 120 MB file); the byte itself is looked for
/// only in the block that holds one.
fn first_control(bytes: &[u8]) -> Option<usize> {
    let is_control = |byte: u8| byte < 0x20 && !matches!(byte, b'\t' | b'\n' | b'\r');
    bytes
        .chunks(64)
        .enumerate()
        .find(|(_, block)| {
            block
                .iter()
                .fold(false, |any, &byte| any | is_control(byte))
        })
        .and_then(|(index, block)| {
            let at = block.iter().position(|&byte| is_control(byte))?;
            Some(index * 64 + at)
        })
}

/// Read snapshot text (YAML or JSON, one or more documents), on a thread whose stack holds
/// the deepest document the readers take, whatever the caller's.
pub fn read_str(text: &str) -> Result<Objects, ParseError> {
    // kubectl drops a byte order mark; so do editors, which do not count it as a column.
    let text = without_mark(text);
    on_reader_stack(|| {
        if position::is_json(text) {
            read_json(text)
        } else {
            read_yaml(text)
        }
    })
}

/// JSON is read without building trees: each document, and each list item, is kept as its raw
/// text and decoded straight into its type once its kind is known.
fn read_json(text: &str) -> Result<Objects, ParseError> {
    // Depth first, as the YAML reader judges it: serde_json skips what it does not decode
    // however deep it goes, and refuses what it decodes past a limit of its own.
    if let Some(offset) = json_too_deep(text.as_bytes(), 0, MAX_DEPTH) {
        return Err(ParseError {
            at: at_offset(text, offset),
            message: too_deep(MAX_DEPTH, OBJECT),
        });
    }
    let mut objects = Objects::default();
    let mut documents = serde_json::Deserializer::from_str(text).into_iter::<&RawValue>();
    let mut index = 0;
    loop {
        let start = documents.byte_offset();
        let Some(document) = documents.next() else {
            return Ok(objects);
        };
        // The stream's own errors are positioned in the whole text, the rest within a slice.
        let positioned = |problem: Problem| {
            let (line, column) = line_column(text, problem.offset);
            ParseError {
                at: Position::in_document(line, column, index + 1),
                message: problem.message,
            }
        };
        let document = match document {
            Ok(document) => {
                let raw = document.get();
                json_shape(raw, 0).map_err(|shape| shape_error(text, raw, shape))?;
                document
            }
            Err(error) if error.is_syntax() || error.is_eof() => {
                let json = positioned(Problem::json(text, text, &error));
                objects.extend(yaml_after_json(text, start, index, json)?);
                return Ok(objects);
            }
            Err(error) => return Err(positioned(Problem::json(text, text, &error))),
        };
        let read = read_document(text, document.get(), &mut Interner::default());
        objects.extend(read.map_err(positioned)?);
        index += 1;
    }
}

/// The shape problem of `raw`, a JSON document of `text`, positioned in `text`.
fn shape_error(text: &str, raw: &str, shape: Shape) -> ParseError {
    let (offset, message) = match shape {
        Shape::TooDeep { offset } => (offset, too_deep(MAX_DEPTH, OBJECT)),
        Shape::DuplicateKey { offset, key } => (offset, duplicate_key(&key)),
    };
    ParseError {
        at: at_offset(text, offset_in(text, raw) + offset),
        message,
    }
}

/// Text that starts like JSON but stops being JSON at `start`, after `documents` documents, is
/// read on from there as YAML, as kubectl reads it: flow-style YAML (`{apiVersion: v1, …}`),
/// or JSON documents separated by `---`. When that is not YAML either, the error is the one
/// found further into the text, `json`'s on a tie: that reader understood more of it.
fn yaml_after_json(
    text: &str,
    start: usize,
    documents: usize,
    json: ParseError,
) -> Result<Objects, ParseError> {
    // The JSON documents already read blanked out, so that lines and columns stay the file's.
    let mut rest: String = text[..start]
        .chars()
        .map(|c| if c == '\n' { '\n' } else { ' ' })
        .collect();
    rest.push_str(&text[start..]);
    let later_documents = |mut error: ParseError| {
        error.at.document = error.at.document.map(|document| document + documents);
        error
    };
    match read_yaml_as(&rest) {
        Ok(objects) => Ok(objects),
        Err(YamlFailure::Object(error)) => Err(later_documents(error)),
        Err(YamlFailure::NotYaml(error)) => {
            let further = (error.at.line, error.at.column) > (json.at.line, json.at.column);
            Err(if further {
                later_documents(error)
            } else {
                json
            })
        }
    }
}

/// One JSON document, `raw`, a slice of `text`: a list's items (each thread converting them
/// with its own interner), or the document as one object, its labels shared through `interner`.
pub(super) fn read_document(
    text: &str,
    raw: &str,
    interner: &mut Interner,
) -> Result<Objects, Problem> {
    let list: ListHeader = serde_json::from_str(raw).map_err(|e| Problem::json(text, raw, &e))?;
    match list.items {
        Some(items) => convert_items(text, &items, ItemType::of(&list.api_version, &list.kind)),
        None => object(Source::Raw(raw), None, interner).map_err(|e| e.within(text, raw)),
    }
}

/// The options of every serde-saphyr read of snapshot documents, `len` bytes of text.
pub(super) fn yaml_options(len: usize) -> serde_saphyr::Options {
    yaml_options_within(len, 0)
}

/// The options of a serde-saphyr read of `len` bytes of snapshot text that sit `enclosed`
/// levels deeper in their document than they do alone, so that they may nest as deep as their
/// document allows and no deeper.
pub(super) fn yaml_options_within(len: usize, enclosed: usize) -> serde_saphyr::Options {
    serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            // Scale with the input: big snapshots are legitimate, amplification is not.
            max_events: len.max(1_000_000),
            max_nodes: len.max(250_000),
            max_documents: len.max(1_024),
            // Tags count as the parser spells them out: `!!str ` (6 bytes) as
            // `tag:yaml.org,2002:str` (21), so a file that tags every scalar, as PyYAML's
            // canonical form does, counts more than its size.
            max_total_scalar_bytes: len.saturating_mul(4).max(1 << 20),
            max_reader_input_bytes: None,
            // An anchor or an alias takes two bytes at least: these never bind before the
            // text's size does.
            max_anchors: len.max(50_000),
            max_aliases: len.max(50_000),
            max_merge_keys: len.max(10_000),
            max_recorded_anchor_events: len.max(1_000_000),
            max_recorded_anchor_bytes: len.max(64 << 20),
            // PyYAML writes an anchor on a mapping a script reuses and an alias at every
            // reuse: one anchor used thousands of times is an ordinary file. What aliases may
            // cost is bounded by the events they replay instead (below).
            enforce_alias_anchor_ratio: false,
            max_depth: MAX_DEPTH - enclosed,
            // The parser reads flow collections (`[[[…`) ahead of the depth count: held to the
            // same limit, so that no form nests deeper.
            flow_nesting_limit: MAX_DEPTH - enclosed,
        },
        // What aliases replay grows with the text, never past it: a "billion laughs" of a few
        // lines is refused.
        alias_limits: serde_saphyr::alias_limits! {
            max_total_replayed_events: len.max(1_000_000),
        },
        // Numbers as kubectl reads them (YAML 1.1): `0777` is octal 511.
        legacy_octal_numbers: true,
    }
}

/// YAML is read through JSON where the text has the block form `yaml_json` takes (all that
/// kubectl writes); otherwise, and to word any problem, documents are read one at a time by
/// serde-saphyr's streaming reader, list items converted as they are read.
fn read_yaml(text: &str) -> Result<Objects, ParseError> {
    read_yaml_as(text).map_err(YamlFailure::error)
}

/// Why YAML text did not read.
enum YamlFailure {
    /// It is not a stream of YAML mappings.
    NotYaml(ParseError),
    /// It is, but an object in it does not convert.
    Object(ParseError),
}

impl YamlFailure {
    fn error(self) -> ParseError {
        match self {
            YamlFailure::NotYaml(error) | YamlFailure::Object(error) => error,
        }
    }
}

/// [`read_yaml`], telling text that is not YAML from objects that do not convert.
fn read_yaml_as(text: &str) -> Result<Objects, YamlFailure> {
    match yaml_items::read(text) {
        Ok(objects) => Ok(objects),
        Err(fallback) => {
            tracing::debug!(reason = %fallback, "reading the YAML snapshot with serde-saphyr");
            yaml_documents(text)
        }
    }
}

/// YAML read by serde-saphyr, document by document.
#[cfg(test)]
pub(super) fn read_yaml_documents(text: &str) -> Result<Objects, ParseError> {
    yaml_documents(text).map_err(YamlFailure::error)
}

/// YAML read by serde-saphyr, document by document, list items converted as they are read.
fn yaml_documents(text: &str) -> Result<Objects, YamlFailure> {
    let options = yaml_options(text.len());
    let documents: Vec<serde_saphyr::Spanned<Document>> =
        serde_saphyr::from_str_multiple_with_options(text, options)
            .map_err(|e| YamlFailure::NotYaml(position::yaml_error(text, &e)))?;
    let mut objects = Objects::default();
    for document in documents {
        match document.value.0 {
            Ok(read) => objects.extend(read),
            Err(misplaced) => {
                let at = misplaced.at.unwrap_or(document.referenced);
                let (line, column) =
                    field_position(text, at, &misplaced.path).unwrap_or((at.line(), at.column()));
                return Err(YamlFailure::Object(position::yaml_at(
                    text,
                    line,
                    column,
                    misplaced.message,
                )));
            }
        }
    }
    Ok(objects)
}

/// The steps of a serde path, as far as they name keys and list indices.
fn steps(path: &serde_path_to_error::Path) -> Vec<Step> {
    use serde_path_to_error::Segment;
    path.iter()
        .map_while(|segment| match segment {
            Segment::Map { key } => Some(Step::Key(key.clone())),
            Segment::Seq { index } => Some(Step::Index(*index)),
            Segment::Enum { .. } | Segment::Unknown => None,
        })
        .collect()
}

/// Where the value at `path` inside the object that starts at `at` is written (line, column).
/// A YAML object is decoded from a tree without positions; only when one is refused is its own
/// text (not the whole file, which may be a 150,000-pod List) read again into the positioned
/// tree, to find the value. `None` when it cannot be found.
fn field_position(text: &str, at: serde_saphyr::Location, path: &[Step]) -> Option<(u64, u64)> {
    use crate::yaml_tree::Value;
    if path.is_empty() {
        return None;
    }
    let (own, first_line) = object_text(text, at)?;
    let object = crate::yaml_tree::parse_document(&own, yaml_options(own.len()))?;
    let mut node = &object;
    for step in path {
        node = match (step, &node.value) {
            (Step::Key(key), _) => node.get(key)?,
            (Step::Index(index), Value::Seq(items)) => items.get(*index)?,
            (Step::Index(_), _) => return None,
        };
    }
    let position = node.position?;
    Some((
        first_line + u64::try_from(position.line).ok()? - 1,
        u64::try_from(position.column).ok()?,
    ))
}

/// The lines of the object that starts at `at`, the list item's `- ` blanked so that columns
/// stay as they are, and the line it starts on: the following lines indented at least as far,
/// up to the end of the document.
fn object_text(text: &str, at: serde_saphyr::Location) -> Option<(String, u64)> {
    let first_line = at.line();
    let indent = usize::try_from(at.column()).ok()?.checked_sub(1)?;
    let mut lines = text
        .lines()
        .skip(usize::try_from(first_line).ok()?.checked_sub(1)?);
    let first = lines.next()?;
    let mut own = format!("{}{}\n", " ".repeat(indent), first.get(indent..)?);
    for line in lines {
        let content = line.trim_start_matches(' ');
        let blank = content.is_empty() || content.starts_with('#');
        if line.starts_with("---") || line.starts_with("...") {
            break;
        }
        // The next item of the list, or the list's own next key.
        if indent > 0 && !blank && line.len() - content.len() < indent {
            break;
        }
        own.push_str(line);
        own.push('\n');
    }
    Some((own, first_line))
}

/// What is wrong with one object, and at which byte of the text being read.
#[derive(Debug)]
pub(super) struct Problem {
    offset: usize,
    message: String,
    /// Where in an unpositioned YAML object the value at fault is (mapping keys and list
    /// indices from the object down); empty when unknown or when `offset` says where.
    path: Vec<Step>,
}

/// One step down a YAML object's tree to the value a type error is about.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

impl Problem {
    /// A serde_json error from parsing `part`, a slice of `text`.
    fn json(text: &str, part: &str, error: &serde_json::Error) -> Problem {
        Problem {
            offset: offset_in(text, part) + json_error_offset(part, error),
            message: json_message(error),
            path: Vec::new(),
        }
    }

    /// A problem found in `part` (offset relative to it), moved into the terms of `text`.
    fn within(self, text: &str, part: &str) -> Problem {
        Problem {
            offset: offset_in(text, part) + self.offset,
            message: self.message,
            path: self.path,
        }
    }

    fn message(message: String) -> Problem {
        Problem {
            offset: 0,
            message,
            path: Vec::new(),
        }
    }
}

/// One YAML document, already reduced. Its `Deserialize` streams `items` of a `List`.
///
/// An object that cannot be converted does not fail the reader (its errors carry no
/// position): the document keeps the problem, and where the object begins, and reads on.
struct Document(Result<Objects, Misplaced>);

/// What is wrong with an object of a YAML document, and where the object begins (`None`: the
/// document is the object).
struct Misplaced {
    message: String,
    at: Option<serde_saphyr::Location>,
    /// From the object down to the value at fault, when known.
    path: Vec<Step>,
}

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
        let mut items = None;
        let mut fields = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if key == "items" {
                items = Some(map.next_value::<Items>()?);
            } else {
                fields.insert(key, map.next_value::<Value>()?);
            }
        }
        let text = |key| fields.get(key).and_then(Value::as_str).unwrap_or_default();
        let kind = text("kind");
        if let Some(items) = items {
            return Ok(Document(
                items.finish(ItemType::of(text("apiVersion"), kind)),
            ));
        }
        if kind == "List" || kind.ends_with("List") {
            return Ok(Document(Ok(Objects::default())));
        }
        Ok(Document(
            object(
                Source::Tree(Value::Object(fields)),
                None,
                &mut Interner::default(),
            )
            .map_err(|problem| Misplaced {
                message: problem.message,
                at: None,
                path: problem.path,
            }),
        ))
    }
}

/// The `items` of a `List`, each converted as soon as it is read; after a problem, the rest
/// are only read through. Items without `apiVersion` and `kind` wait for the list's own kind,
/// which YAML may give after them.
struct Items {
    read: Result<Objects, Misplaced>,
    untyped: Vec<serde_saphyr::Spanned<Value>>,
    /// Shares label texts across the list's items.
    interner: Interner,
}

impl Items {
    /// The items converted, those without a type as `item_type`.
    fn finish(mut self, item_type: Option<ItemType>) -> Result<Objects, Misplaced> {
        let mut objects = self.read?;
        for item in self.untyped {
            match object(Source::Tree(item.value), item_type, &mut self.interner) {
                Ok(converted) => objects.extend(converted),
                Err(problem) => {
                    return Err(Misplaced {
                        message: problem.message,
                        at: Some(item.referenced),
                        path: problem.path,
                    });
                }
            }
        }
        Ok(objects)
    }
}

impl<'de> Deserialize<'de> for Items {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ItemsVisitor;
        impl<'de> Visitor<'de> for ItemsVisitor {
            type Value = Items;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of Kubernetes objects")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Items, E> {
                Ok(Items {
                    read: Ok(Objects::default()),
                    untyped: Vec::new(),
                    interner: Interner::default(),
                })
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Items, A::Error> {
                let mut objects = Objects::default();
                let mut untyped = Vec::new();
                let mut interner = Interner::default();
                while let Some(item) = seq.next_element::<serde_saphyr::Spanned<Value>>()? {
                    if item.value.get("apiVersion").is_none() && item.value.get("kind").is_none() {
                        untyped.push(item);
                        continue;
                    }
                    match object(Source::Tree(item.value), None, &mut interner) {
                        Ok(converted) => objects.extend(converted),
                        Err(problem) => {
                            while seq.next_element::<de::IgnoredAny>()?.is_some() {}
                            return Ok(Items {
                                read: Err(Misplaced {
                                    message: problem.message,
                                    at: Some(item.referenced),
                                    path: problem.path,
                                }),
                                untyped,
                                interner,
                            });
                        }
                    }
                }
                Ok(Items {
                    read: Ok(objects),
                    untyped,
                    interner,
                })
            }
        }
        deserializer.deserialize_any(ItemsVisitor)
    }
}

/// Below this many items a list is converted on one thread: spawning costs more than it saves.
pub(super) const PARALLEL_ITEMS: usize = 4096;

/// Convert the raw items of a list, in parallel chunks on big lists (decoding is most of a big
/// `plan`'s time). Chunks are merged in order, so the result does not depend on the threads.
/// Each chunk shares its label texts through its own interner (no lock between threads).
/// Errors are positioned in `text`, which the items are slices of.
fn convert_items(
    text: &str,
    items: &[&RawValue],
    item_type: Option<ItemType<'_>>,
) -> Result<Objects, Problem> {
    let convert_chunk = |chunk: &[&RawValue]| -> Result<Objects, Problem> {
        let mut objects = Objects::default();
        let mut interner = Interner::default();
        for item in chunk {
            let raw = item.get();
            let read = object(Source::Raw(raw), item_type, &mut interner);
            objects.extend_growing(read.map_err(|e| e.within(text, raw))?, Growth::Doubling);
        }
        objects.shrink_to_fit();
        Ok(objects)
    };
    let mut objects = Objects::default();
    for result in in_chunks(items, convert_chunk) {
        objects.extend(result?);
    }
    Ok(objects)
}

/// `convert` applied to `items`: on this thread for a short list, else to one chunk per core
/// on threads of their own, the results in the order of the chunks, so that they do not
/// depend on the threads.
pub(super) fn in_chunks<I: Sync, R: Send>(
    items: &[I],
    convert: impl Fn(&[I]) -> R + Sync,
) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    if threads < 2 || items.len() < PARALLEL_ITEMS {
        return vec![convert(items)];
    }
    let chunk_size = items.len().div_ceil(threads);
    let convert = &convert;
    std::thread::scope(|scope| {
        let workers: Vec<_> = items
            .chunks(chunk_size)
            .map(|chunk| {
                reader_thread()
                    .spawn_scoped(scope, move || convert(chunk))
                    .expect("a conversion thread starts")
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().expect("a conversion thread does not panic"))
            .collect()
    })
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
    fn header(&self) -> Result<Header, Problem> {
        match self {
            Source::Tree(value) => Header::deserialize(value).map_err(|e| self.problem(&e)),
            Source::Raw(text) => serde_json::from_str(text).map_err(|e| self.problem(&e)),
        }
    }

    /// A decoding error, positioned in the raw text (a tree has no positions: its reader
    /// positions the error).
    fn problem(&self, error: &serde_json::Error) -> Problem {
        match self {
            Source::Tree(_) => Problem::message(json_message(error)),
            Source::Raw(text) => Problem::json(text, text, error),
        }
    }

    fn decode<T: serde::de::DeserializeOwned>(self) -> Result<T, Problem> {
        match self {
            Source::Tree(value) => serde_path_to_error::deserialize(value).map_err(|e| Problem {
                path: steps(e.path()),
                ..Problem::message(json_message(e.inner()))
            }),
            Source::Raw(text) => {
                serde_json::from_str(text).map_err(|e| Problem::json(text, text, &e))
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
) -> Result<Objects, Problem> {
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
    let described = |problem: Problem| Problem {
        message: format!("{kind} {name}: {}", problem.message),
        ..problem
    };
    let converted = |e: ConvertError| described(Problem::message(e.to_string()));
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
        ("coordination.k8s.io/v1", "Lease") => {
            let lease = source.decode().map_err(described)?;
            match convert::lease_history(lease).map_err(converted)? {
                Some(history) => objects.histories.push(history),
                // Another Lease, or the run lock before any run recorded an eviction.
                None => objects.ignored.push(format!("{api_version} {kind} {name}")),
            }
        }
        ("", "") => {
            return Err(Problem::message(format!(
                "object {name} has no apiVersion and no kind"
            )));
        }
        ("", _) => {
            return Err(Problem::message(format!("{kind} {name} has no apiVersion")));
        }
        (_, "") => {
            return Err(Problem::message(format!(
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
) -> Option<Result<Objects, Problem>> {
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
            .map_err(|e| Problem::message(format!("Pod {name}: {e}"))),
    )
}

/// A `VSphereInventory` document: its fields other than the object header.
fn inventory_document(source: Source) -> Result<Inventory, Problem> {
    let in_inventory = |problem: Problem| Problem {
        message: format!("{}: {}", inventory::KIND, problem.message),
        ..problem
    };
    let mut value: Value = source.decode().map_err(in_inventory)?;
    if let Some(fields) = value.as_object_mut() {
        fields.remove("apiVersion");
        fields.remove("kind");
        fields.remove("metadata");
    }
    serde_json::from_value(value).map_err(|e| in_inventory(Problem::message(json_message(&e))))
}

#[cfg(test)]
pub(super) mod tests {
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
        // Past the first blocks of the search, and in a last, shorter one.
        for at in [63, 64, 130, 199] {
            let mut text = vec![b'a'; 200];
            text[at] = 0x1b;
            assert_eq!(
                check_text(&text, 0),
                Err((at, NotText::ControlCharacter(0x1b))),
                "{at}"
            );
        }
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
    fn utf16_is_decoded_and_where_it_is_not_text_is_told_in_the_files_terms() {
        let text = "apiVersion: v1\nkind: Namespace\nmetadata: {name: é}\n";
        let mut bytes = vec![0xfe, 0xff];
        bytes.extend(text.encode_utf16().flat_map(u16::to_be_bytes));
        let file = file_with(&bytes);
        let read = read_text(file.path(), FileSizeLimit::DEFAULT).expect("UTF-16");
        assert_eq!(read, text);
        // A lone low surrogate after `a: `: the fourth unit, bytes 8 and 9 with the mark.
        let lone = [0xff, 0xfe, b'a', 0, b':', 0, b' ', 0, 0x00, 0xdc];
        let file = file_with(&lone);
        let error = read_text(file.path(), FileSizeLimit::DEFAULT).expect_err("not UTF-16");
        assert!(
            error
                .to_string()
                .ends_with(":1:4: document 1: not YAML or JSON text: invalid UTF-16 at byte 8"),
            "{error}"
        );
        let control = [0xff, 0xfe, b'a', 0, b'\n', 0, 0x1b, 0];
        let file = file_with(&control);
        let error = read_text(file.path(), FileSizeLimit::DEFAULT).expect_err("a control");
        assert!(
            error.to_string().ends_with(
                ":2:1: document 1: not YAML or JSON text: control character 0x1b at byte 6"
            ),
            "{error}"
        );
    }

    #[test]
    fn a_byte_order_mark_is_not_a_column() {
        let error = read_str("\u{feff}apiVersion: [v1\n").expect_err("unclosed");
        let without = read_str("apiVersion: [v1\n").expect_err("unclosed");
        assert_eq!(error, without);
        let file = file_with(b"\xef\xbb\xbfab\x01");
        let error = read_text(file.path(), FileSizeLimit::DEFAULT).expect_err("a control");
        assert!(
            error.to_string().ends_with(
                ":1:3: document 1: not YAML or JSON text: control character 0x01 at byte 5"
            ),
            "{error}"
        );
    }

    #[test]
    fn text_that_stops_being_json_is_read_on_as_yaml_and_a_problem_in_either_is_told() {
        let namespace = r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"}}"#;
        let flow = "{apiVersion: v1, kind: Namespace, metadata: {name: b}}";
        let names = |text: &str| -> Vec<String> {
            read_str(text)
                .unwrap_or_else(|error| panic!("{text}: {error}"))
                .namespaces
                .into_iter()
                .map(|(name, _)| name)
                .collect()
        };
        assert_eq!(names(flow), ["b"]);
        assert_eq!(names(&format!("{namespace}\n---\n{flow}\n")), ["a", "b"]);
        assert_eq!(
            names(&format!("{namespace} {namespace}\n---\n{flow}\n")),
            ["a", "a", "b"]
        );
        // A problem of an object of the YAML part is its, in the file's documents.
        let wrong = "{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: s}, spec: {priority: high}}";
        let error = read_str(&format!("{namespace}\n---\n{wrong}\n")).expect_err("a string");
        assert_eq!(error.at.line, 3);
        assert_eq!(error.at.document, Some(2));
        assert!(error.message.contains("Pod s/p: invalid type"), "{error}");
        // Broken JSON is not YAML either: JSON's error, where JSON saw it.
        let broken = r#"{"apiVersion": "v1", "kind": "Namespace" "metadata": {}}"#;
        let error = read_str(broken).expect_err("a missing comma");
        assert_eq!((error.at.line, error.at.column), (1, 42), "{error}");
        assert!(error.message.contains("expected `,` or `}`"), "{error}");
    }

    #[test]
    fn integers_are_read_as_kubectl_reads_them_leading_zero_octal_included() {
        // What kubectl 1.32 makes of each as a pod's priority (`kubectl label --local -f … -o
        // json`): YAML 1.1's integers.
        let kubectl = [
            ("0777", 511),
            ("-0777", -511),
            ("012", 10),
            ("0o17", 15),
            ("0x1F", 31),
            ("0b101", 5),
            ("1_000", 1000),
            ("+12", 12),
            ("0", 0),
        ];
        for (written, read) in kubectl {
            let text = format!(
                "apiVersion: v1\nkind: Pod\nmetadata: {{name: p, namespace: ns}}\nspec:\n  \
                 priority: {written}\n  containers: []\n"
            );
            let objects = read_str(&text).unwrap_or_else(|error| panic!("{written}: {error}"));
            assert_eq!(objects.pods[0].priority, read, "{written}");
        }
    }

    #[test]
    fn a_file_ending_inside_a_character_is_not_text() {
        let file = file_with(&"a: é".as_bytes()[..4]);
        let error = read_text(file.path(), FileSizeLimit::DEFAULT).expect_err("cut short");
        assert!(
            matches!(
                error,
                SnapshotError::NotText {
                    at: super::Position {
                        line: 1,
                        column: 4,
                        document: Some(1)
                    },
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
        .expect_err("the bad quantity")
        .to_string();
        assert!(
            error.contains("Node n: invalid quantity \"lots\""),
            "{error}"
        );
    }

    /// The error of reading `text`, as `LINE:COLUMN: document N: MESSAGE`.
    fn yaml_error(text: &str) -> String {
        read_str(text)
            .expect_err("a value of the wrong type")
            .to_string()
    }

    #[test]
    fn a_yaml_value_of_the_wrong_type_is_positioned_at_the_value_not_the_object() {
        let in_a_list = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  \
                         metadata: {name: a, namespace: ns}\n  spec:\n    nodeName: w1\n    \
                         priority: high\n    containers: []\n";
        assert_eq!(
            yaml_error(in_a_list),
            "9:15: document 1: Pod ns/a: invalid type: string \"high\", expected an integer"
        );
        let a_document = "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n---\n\
                          apiVersion: v1\nkind: Pod\nmetadata: {name: b, namespace: ns}\nspec:\n  \
                          containers:\n  - name: c\n    resources:\n      requests:\n        \
                          cpu: [1]\n";
        assert!(
            yaml_error(a_document)
                .starts_with("13:14: document 2: Pod ns/b: invalid type: sequence"),
            "{}",
            yaml_error(a_document)
        );
        let flow_items = "kind: PodList\napiVersion: v1\nitems:\n  - {apiVersion: v1, kind: Pod, \
                          metadata: {name: ok, namespace: ns}, spec: {containers: []}}\n  - \
                          apiVersion: v1\n    kind: Pod\n    metadata: {name: c, namespace: ns}\n    \
                          spec: {priority: \"x\", containers: []}\n";
        assert_eq!(
            yaml_error(flow_items),
            "8:22: document 1: Pod ns/c: invalid type: string \"x\", expected an integer"
        );
    }

    #[test]
    fn a_yaml_problem_found_after_decoding_keeps_the_objects_position() {
        // A quantity is checked when the pod is converted, with no path to follow.
        let text = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  \
                    metadata: {name: a, namespace: ns}\n  spec:\n    containers:\n    - name: c\n      \
                    resources: {requests: {cpu: lots}}\n";
        assert!(
            yaml_error(text).starts_with("4:3: document 1: Pod ns/a: "),
            "{}",
            yaml_error(text)
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

    const FIXTURE: &str =
        include_str!("../../../tests/fixtures/plan/drs-moved-worker/snapshot.yaml");

    /// The fixture as JSON: concatenated documents, and one `List` of them all.
    pub(crate) fn json_fixtures() -> [String; 2] {
        let documents: Vec<serde_json::Value> =
            serde_saphyr::from_str_multiple(FIXTURE).expect("the fixture is YAML");
        let stream: Vec<String> = documents
            .iter()
            .map(|document| serde_json::to_string_pretty(document).expect("JSON"))
            .collect();
        let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": documents});
        [
            stream.join("\n"),
            serde_json::to_string_pretty(&list).expect("JSON"),
        ]
    }

    /// Deterministic variants of `text`: cut short, a byte replaced by one that often breaks
    /// YAML or JSON, or a bit flipped, at places drawn from a fixed-seed generator.
    pub(crate) fn variants(text: &str, count: usize) -> Vec<Vec<u8>> {
        const BREAKING: &[u8] = b"\"{}[]:,-\n #&*!|>'\x01\xff\xc3";
        let bytes = text.as_bytes();
        let mut state: u64 = 0x5eed;
        let mut next = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            usize::try_from(state >> 33).expect("31 bits")
        };
        (0..count)
            .map(|i| {
                let mut variant = bytes.to_vec();
                let at = next() % bytes.len();
                match i % 3 {
                    0 => variant.truncate(at),
                    1 => variant[at] = BREAKING[next() % BREAKING.len()],
                    _ => variant[at] ^= 1 << (next() % 8),
                }
                variant
            })
            .collect()
    }

    /// `FILE:LINE:COLUMN: document N: ` with each number from 1, the line within the file.
    fn assert_positioned(message: &str, path: &str, lines: usize) {
        let rest = message
            .strip_prefix(&format!("{path}:"))
            .unwrap_or_else(|| panic!("names the file: {message}"));
        let mut parts = rest.splitn(4, ':');
        let number = |part: Option<&str>| -> usize {
            part.and_then(|part| part.trim().parse().ok())
                .filter(|number| *number >= 1)
                .unwrap_or_else(|| panic!("a position: {message}"))
        };
        let line = number(parts.next());
        number(parts.next());
        let document = parts
            .next()
            .and_then(|part| part.strip_prefix(" document "));
        number(document);
        assert!(line <= lines + 1, "line {line} of {lines}: {message}");
        for internal in [
            "struct",
            "enum ",
            "HeaderMetadata",
            "ListHeader",
            "Misplaced",
            "RawValue",
            "DrsConfig",
            "RuleKind",
        ] {
            assert!(!message.contains(internal), "{internal:?} in {message}");
        }
    }

    #[test]
    fn every_error_of_a_mutated_snapshot_names_the_file_a_position_and_no_internal_type() {
        let directory = tempfile::tempdir().expect("a temporary directory");
        let [stream, list] = json_fixtures();
        let mut errors = 0;
        for (name, text) in [
            ("snapshot.yaml", FIXTURE),
            ("stream.json", &stream),
            ("list.json", &list),
        ] {
            let path = directory.path().join(name);
            for variant in variants(text, 200) {
                std::fs::write(&path, &variant).expect("writable");
                if let Err(error) = super::read_file(&path, FileSizeLimit::DEFAULT) {
                    errors += 1;
                    let lines = variant.iter().filter(|&&byte| byte == b'\n').count() + 1;
                    assert_positioned(&error.to_string(), &path.display().to_string(), lines);
                }
            }
        }
        assert!(
            errors > 200,
            "the variants break the files: {errors} errors"
        );
    }

    #[test]
    fn typed_list_items_without_a_kind_are_of_the_lists_kind_and_v1_list_items_need_theirs() {
        // As `kubectl get --raw /apis/metrics.k8s.io/v1beta1/nodes` prints them.
        let json = r#"{"kind":"NodeMetricsList","apiVersion":"metrics.k8s.io/v1beta1","metadata":{},"items":[{"metadata":{"name":"w1"},"timestamp":"2026-11-21T08:59:45Z","window":"20s","usage":{"cpu":"1500m","memory":"1Gi"}}]}
{"kind":"PodMetricsList","apiVersion":"metrics.k8s.io/v1beta1","metadata":{},"items":[{"metadata":{"name":"web-0","namespace":"shop"},"containers":[{"name":"a","usage":{"cpu":"250m","memory":"1Mi"}},{"name":"b","usage":{"cpu":"50m","memory":"1Mi"}}]}]}"#;
        // YAML prints keys sorted: the items come before the list's kind.
        let yaml = "apiVersion: metrics.k8s.io/v1beta1\nitems:\n- metadata: {name: w1}\n  usage: {cpu: 1500m, memory: 1Gi}\nkind: NodeMetricsList\n---\napiVersion: metrics.k8s.io/v1beta1\nitems:\n- metadata: {name: web-0, namespace: shop}\n  containers:\n  - {name: a, usage: {cpu: 250m, memory: 1Mi}}\n  - {name: b, usage: {cpu: 50m, memory: 1Mi}}\nkind: PodMetricsList\n";
        for text in [json, yaml] {
            let metrics = read_str(text).expect("readable").metrics.expect("metrics");
            assert_eq!(
                metrics.nodes["w1"].get(&crate::snapshot::ResourceName::Cpu),
                1500,
                "{text}"
            );
            let pod = &metrics.pods[&("shop".to_string(), "web-0".to_string())];
            assert_eq!(pod.get(&crate::snapshot::ResourceName::Cpu), 300, "{text}");
        }
        let untyped_in_v1_list = [
            r#"{"apiVersion":"v1","kind":"List","items":[{"metadata":{"name":"w1"}}]}"#,
            "apiVersion: v1\nitems:\n- metadata: {name: w1}\nkind: List\n",
        ];
        for text in untyped_in_v1_list {
            let error = read_str(text).expect_err("an item of no kind");
            assert!(
                error
                    .message
                    .contains("object w1 has no apiVersion and no kind"),
                "{error:?}"
            );
        }
    }
}
