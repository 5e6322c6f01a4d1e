//! Reading a JSON snapshot file as a stream: blocks of the file are checked to be text and
//! followed by the scanner, list items are converted in batches on every core as soon as they
//! are whole, and each block and batch is dropped once it has been used. Memory holds the
//! objects and a window of a few blocks, never the file's text (120 MB at 150,000 pods).
//!
//! The stream decides nothing about errors: on anything it does not take (a problem in the
//! file, an object that does not convert, a form it does not follow) it gives up, and the file
//! is read whole, which words the problem exactly as it always has. The whole-file reader goes
//! on from the bytes the stream read when it gave up within its first block (YAML and UTF-16
//! are found there), else reads the file again from its start through the same handle: the
//! stream keeps no more than a block, so that a 120 MB file is never held twice.

use std::io::Read;
use std::sync::Arc;

use super::error::FileSizeLimit;
use super::json::read_document;
use super::json_scan::{ScanError, Scanner, Sink};
use super::parallel::{Jobs, in_order};
use super::sink::{Growth, ItemType, ListHeader, Objects, Source, object};
use super::structure::{ShapeScratch, json_shape, json_shape_with};
use super::text::{CHUNK_BYTES, Opened, check_text};
use crate::snapshot::model::Interner;

/// Why a file is not read as a stream (logged at debug level; the file is then read whole).
#[derive(Debug, thiserror::Error)]
pub enum Fallback {
    #[error("not a regular file, which could not be read from its start again")]
    NotAFile,
    #[error("cannot read the file")]
    Read(#[source] std::io::Error),
    #[error("the file is larger than its limit")]
    TooLarge,
    #[error("not text at byte {0}")]
    NotText(u64),
    #[error("not a stream of JSON objects the scanner follows")]
    Scan(#[from] ScanError),
    #[error("a list's fields do not read as its header")]
    ListHeader,
    #[error("an object does not convert")]
    Conversion,
    #[error("no document")]
    Empty,
}

/// The UTF-8 encoding of the byte order mark.
const UTF8_MARK: &[u8] = "\u{feff}".as_bytes();

/// How much item text is converted at a time by one thread: enough to make handing it over
/// cheap, small enough that the items waiting for a thread are a few MiB.
const BATCH_BYTES: usize = 1 << 20;

/// Read an opened JSON snapshot file as a stream; `Err` says why it was not, and the file is
/// left for the whole-file reader: with every byte read so far, when the stream gave up within
/// its first block (YAML, UTF-16, a small file), else to be read again from its start.
pub fn read(opened: &mut Opened, limit: FileSizeLimit) -> Result<Objects, Fallback> {
    let block_bytes = usize::try_from(CHUNK_BYTES).expect("a block fits in memory");
    read_in_blocks(opened, limit, block_bytes, BATCH_BYTES)
}

/// [`read`] reading `block_bytes` at a time and converting batches of `batch_bytes`.
fn read_in_blocks(
    opened: &mut Opened,
    limit: FileSizeLimit,
    block_bytes: usize,
    batch_bytes: usize,
) -> Result<Objects, Fallback> {
    // What a pipe or a device has given could not all be handed over once blocks are dropped.
    if !opened.regular {
        return Err(Fallback::NotAFile);
    }
    let mut objects = Objects::default();
    let (fed, complete) = in_order(
        convert,
        |jobs| feed(opened, limit, block_bytes, batch_bytes, jobs),
        |batch| objects.extend_growing(batch, Growth::Doubling),
    );
    fed?;
    if !complete {
        return Err(Fallback::Conversion);
    }
    objects.shrink_to_fit();
    Ok(objects)
}

/// Reads, checks and scans the file block by block, giving batches to `jobs`. The bytes read
/// are kept in `opened` while they are one block at most, for the whole-file reader.
fn feed(
    opened: &mut Opened,
    limit: FileSizeLimit,
    block_bytes: usize,
    batch_bytes: usize,
    jobs: &mut Jobs<'_, Batch, Objects>,
) -> Result<(), Fallback> {
    let mut scanner = Scanner::new();
    let mut batcher = Batcher::new(jobs, batch_bytes);
    // A block, after the start of a character the previous block ended inside.
    let mut block = Vec::with_capacity(block_bytes + 4);
    let mut offset = 0u64;
    loop {
        let before = block.len();
        let read = (&mut opened.reader)
            .take(block_bytes as u64)
            .read_to_end(&mut block)
            .map_err(|error| {
                opened.read = None;
                Fallback::Read(error)
            })?;
        keep(&mut opened.read, &block[before..], block_bytes);
        if read == 0 {
            break;
        }
        // kubectl drops a byte order mark; the whole-file reader does too.
        if offset == 0 && block.starts_with(UTF8_MARK) {
            block.drain(..UTF8_MARK.len());
            offset = UTF8_MARK.len() as u64;
        }
        if offset + block.len() as u64 > limit.bytes() {
            return Err(Fallback::TooLarge);
        }
        let text =
            check_text(&block, 0).map_err(|(at, _)| Fallback::NotText(offset + at as u64))?;
        scanner.feed(&block[..text], &mut batcher)?;
        if let Some(problem) = batcher.problem.take() {
            return Err(problem);
        }
        offset += text as u64;
        block.drain(..text);
        if !batcher.jobs.keep_going() {
            return Err(Fallback::Conversion);
        }
    }
    if !block.is_empty() {
        // The file ends inside a character.
        return Err(Fallback::NotText(offset));
    }
    scanner.finish()?;
    if scanner.documents() == 0 {
        return Err(Fallback::Empty);
    }
    batcher.send();
    batcher.problem.map_or(Ok(()), Err)
}

/// Adds the bytes just read to those kept, while all of them fit in one block; past that they
/// are dropped, and the whole-file reader, should it be needed, reads the file from its start.
fn keep(kept: &mut Option<Vec<u8>>, read: &[u8], block_bytes: usize) {
    if let Some(bytes) = kept {
        if bytes.len() + read.len() <= block_bytes {
            bytes.extend_from_slice(read);
        } else {
            *kept = None;
        }
    }
}

/// The type a list gives its items that name none, as read from the list's fields.
#[derive(Debug, PartialEq, Eq)]
struct ListItemType {
    api_version: String,
    kind: String,
}

impl ListItemType {
    /// The item type of a list whose header (its fields, items left out) is `header`: `None`
    /// when its fields give none, or do not read.
    fn of(header: &[u8]) -> Option<ListItemType> {
        let list: ListHeader = serde_json::from_slice(header).ok()?;
        ItemType::of(&list.api_version, &list.kind).map(|item| ListItemType {
            api_version: item.api_version.to_string(),
            kind: item.kind.to_string(),
        })
    }

    fn borrowed(&self) -> ItemType<'_> {
        ItemType {
            api_version: &self.api_version,
            kind: &self.kind,
        }
    }
}

/// What one piece of a batch's text is.
enum Piece {
    /// An item of a list, and the type the list's fields before it give its items, if any.
    Item(Option<Arc<ListItemType>>),
    /// A whole document.
    Document,
}

/// Items and documents converted together, their texts one after the other in one buffer.
#[derive(Default)]
struct Batch {
    text: Vec<u8>,
    /// Each piece and where its text ends.
    pieces: Vec<(usize, Piece)>,
}

/// Gathers what the scanner finds into batches and gives each to the threads when it is full.
struct Batcher<'j, 'a> {
    batch: Batch,
    jobs: &'j mut Jobs<'a, Batch, Objects>,
    batch_bytes: usize,
    /// The item type of the list being read, as far as its fields before `items` tell.
    item_type: Option<Arc<ListItemType>>,
    problem: Option<Fallback>,
}

impl<'j, 'a> Batcher<'j, 'a> {
    fn new(jobs: &'j mut Jobs<'a, Batch, Objects>, batch_bytes: usize) -> Batcher<'j, 'a> {
        Batcher {
            batch: Batch::default(),
            jobs,
            batch_bytes,
            item_type: None,
            problem: None,
        }
    }

    fn add(&mut self, text: &[u8], piece: Piece) {
        self.batch.text.extend_from_slice(text);
        self.batch.pieces.push((self.batch.text.len(), piece));
        if self.batch.text.len() >= self.batch_bytes {
            self.send();
        }
    }

    fn send(&mut self) {
        if self.batch.pieces.is_empty() {
            return;
        }
        self.jobs.send(std::mem::take(&mut self.batch));
    }
}

impl Sink for Batcher<'_, '_> {
    fn items(&mut self, header: &[u8]) {
        // The list's fields so far, closed: items converted before the list's later fields
        // are read take the type these give, which the whole header must confirm.
        let mut closed = header.to_vec();
        closed.extend_from_slice(b"]}");
        self.item_type = ListItemType::of(&closed).map(Arc::new);
    }

    fn item(&mut self, text: &[u8]) {
        self.add(text, Piece::Item(self.item_type.clone()));
    }

    fn document(&mut self, header: &[u8], listed: bool) {
        if !listed {
            self.add(header, Piece::Document);
            return;
        }
        // An item that converted without the list's type names its own, and converts the same
        // with it; one that took a type must have taken the list's.
        let assumed = self.item_type.take();
        // Its own fields are checked as the whole-file reader checks every document.
        let shaped = std::str::from_utf8(header).is_ok_and(|header| json_shape(header, 0).is_ok());
        let confirmed = shaped
            && serde_json::from_slice::<ListHeader>(header).is_ok_and(|list| list.items.is_some())
            && assumed.is_none_or(|assumed| ListItemType::of(header).as_ref() == Some(&assumed));
        if !confirmed {
            self.problem.get_or_insert(Fallback::ListHeader);
        }
    }
}

/// What each conversion thread keeps for the batches it converts: their label texts are
/// shared through one interner, as a thread of the whole-file reader shares them.
#[derive(Default)]
struct Converter {
    interner: Interner,
    scratch: ShapeScratch,
}

/// The objects of a batch, as the whole-file reader converts the same texts.
fn convert(batch: Batch, converter: &mut Converter) -> Option<Objects> {
    let Converter { interner, scratch } = converter;
    let text = std::str::from_utf8(&batch.text).ok()?;
    let mut objects = Objects::default();
    let mut start = 0;
    for (end, piece) in &batch.pieces {
        let raw = text.get(start..*end)?;
        // What the whole-file reader refuses before decoding: a key twice, nesting too deep.
        let enclosing = match piece {
            Piece::Item(_) => 2,
            Piece::Document => 0,
        };
        json_shape_with(raw, enclosing, scratch).ok()?;
        let read = match piece {
            Piece::Item(item_type) => object(
                Source::Raw(raw),
                item_type.as_deref().map(ListItemType::borrowed),
                interner,
            ),
            Piece::Document => read_document(raw, raw, interner),
        };
        objects.extend_growing(read.ok()?, Growth::Doubling);
        start = *end;
    }
    objects.shrink_to_fit();
    Some(objects)
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use chrono::Utc;

    use super::{Fallback, read_in_blocks};
    use crate::snapshot::read::tests::{json_fixtures, seeded};
    use crate::snapshot::read::text::open;
    use crate::snapshot::read::{self as load, FileSizeLimit, read_whole_file};

    /// The file at `path` read as a stream in blocks of `block` bytes, batches of `batch`.
    fn streamed(path: &Path, block: usize, batch: usize) -> Result<load::Objects, Fallback> {
        let mut opened = open(path, FileSizeLimit::DEFAULT).expect("readable");
        read_in_blocks(&mut opened, FileSizeLimit::DEFAULT, block, batch)
    }

    fn written(directory: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let path = directory.join(name);
        std::fs::write(&path, bytes).expect("writable");
        path
    }

    /// What a reader made of a file: its objects, or its error, as text.
    fn outcome<E: std::fmt::Display>(read: Result<load::Objects, E>) -> String {
        match read {
            Ok(objects) => format!("{objects:?}"),
            Err(error) => format!("error: {error}"),
        }
    }

    fn whole(path: &Path) -> String {
        outcome(read_whole_file(path, FileSizeLimit::DEFAULT))
    }

    /// `kubectl get --raw` prints a typed list's kind first, its items without a type.
    const METRICS_LIST: &str = r#"{"kind":"PodMetricsList","apiVersion":"metrics.k8s.io/v1beta1","metadata":{},"items":[{"metadata":{"name":"web-0","namespace":"shop"},"containers":[{"name":"a","usage":{"cpu":"250m","memory":"1Mi"}}]}]}"#;

    #[test]
    fn a_streamed_file_reads_the_objects_the_whole_file_reads_whatever_the_blocks() {
        let directory = tempfile::tempdir().expect("a temporary directory");
        let [stream, list] = json_fixtures();
        let café = r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"café","labels":{"ü":"ö€𝄞"}}}"#;
        for (name, text) in [
            ("stream.json", stream.as_str()),
            ("list.json", &list),
            ("metrics.json", METRICS_LIST),
            ("unicode.json", café),
        ] {
            let path = written(directory.path(), name, text.as_bytes());
            let expected = whole(&path);
            assert!(!expected.starts_with("error"), "{name}: {expected}");
            for (block, batch) in [(1, 1), (5, 300), (64, 1), (4096, 1 << 20)] {
                let streamed = streamed(&path, block, batch);
                assert!(
                    streamed.is_ok(),
                    "{name} in blocks of {block}: {streamed:?}"
                );
                assert_eq!(outcome(streamed), expected, "{name} in blocks of {block}");
            }
        }
    }

    #[test]
    fn a_list_typing_its_items_after_them_an_escaped_items_key_or_yaml_is_read_whole_alike() {
        let directory = tempfile::tempdir().expect("a temporary directory");
        // YAML turned into JSON prints keys sorted: the list's kind after its untyped items.
        let sorted = r#"{"apiVersion":"metrics.k8s.io/v1beta1","items":[{"metadata":{"name":"w1"},"usage":{"cpu":"1500m","memory":"1Gi"}}],"kind":"NodeMetricsList"}"#;
        // A key the scanner does not compare, which serde_json reads as `items`.
        let escaped = format!(
            r#"{{"kind":"List","it\u0065ms":[{}]}}"#,
            pod("w1", r#"{"containers":[]}"#)
        );
        // Not JSON, but YAML, which kubectl reads it as, and so does the whole-file reader.
        let trailing_comma = format!(r#"{{"items":[{},]}}"#, pod("w1", r#"{"containers":[]}"#));
        for text in [sorted, &escaped, &trailing_comma] {
            let path = written(directory.path(), "unstreamed.json", text.as_bytes());
            assert!(streamed(&path, 16, 16).is_err());
            let read = outcome(load::read_file(&path, FileSizeLimit::DEFAULT));
            assert!(read.contains("w1"), "{read}");
            assert_eq!(read, whole(&path));
        }
    }

    fn pod(name: &str, spec: &str) -> String {
        format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"ns"}},"spec":{spec}}}"#
        )
    }

    fn list(items: &[String]) -> String {
        format!(
            r#"{{"apiVersion":"v1","items":[{}],"kind":"List"}}"#,
            items.join(",")
        )
    }

    /// Bad files, each as the stream meets it: the message is the whole-file reader's.
    fn bad_files() -> Vec<(&'static str, Vec<u8>)> {
        let good = pod("a", r#"{"containers":[]}"#);
        let namespaces: Vec<String> = (0..20_000)
            .map(|i| {
                format!(r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"n{i}"}}}}"#)
            })
            .collect();
        let mut late_invalid = list(&namespaces).into_bytes();
        let at = late_invalid.len() - 40;
        late_invalid[at] = 0xff;
        let mut cut_in_a_character = list(&[pod("é", r#"{"containers":[]}"#)]).into_bytes();
        let at = cut_in_a_character
            .iter()
            .position(|&byte| byte == 0xc3)
            .expect("é");
        cut_in_a_character.truncate(at + 1);
        vec![
            ("missing comma", format!(r#"{{"items":[{good} {good}]}}"#).into_bytes()),
            ("unclosed list", list(std::slice::from_ref(&good)).as_bytes()[..60].to_vec()),
            ("item not an object", br#"{"apiVersion":"v1","kind":"List","items":[1]}"#.to_vec()),
            (
                "wrong type deep in a pod",
                list(&[good.clone(), pod("b", r#"{"containers":[{"name":"c","resources":{"requests":{"cpu":[1]}}}]}"#)]).into_bytes(),
            ),
            ("wrong type at the top of a pod", list(&[pod("b", r#"{"priority":"high","containers":[]}"#)]).into_bytes()),
            ("bad quantity", list(&[pod("b", r#"{"containers":[{"name":"c","resources":{"requests":{"cpu":"lots"}}}]}"#)]).into_bytes()),
            ("control character", list(&[pod("a\u{1}b", r#"{"containers":[]}"#)]).into_bytes()),
            ("invalid UTF-8 late in the file", late_invalid),
            ("ends inside a character", cut_in_a_character),
            ("a bad document that is no list", pod("b", r#"{"priority":"x"}"#).into_bytes()),
            (
                "a bad untyped item of a list typed after it",
                br#"{"apiVersion":"metrics.k8s.io/v1beta1","items":[{"metadata":{"name":"w1"},"usage":{"cpu":"lots"}}],"kind":"NodeMetricsList"}"#.to_vec(),
            ),
            ("an untyped item of a v1 List", br#"{"apiVersion":"v1","kind":"List","items":[{"metadata":{"name":"w1"}}]}"#.to_vec()),
            ("items twice", format!(r#"{{"items":[{good}],"items":[]}}"#).into_bytes()),
            ("kind twice", format!(r#"{{"kind":"PodList","apiVersion":"v1","kind":"List","items":[{good}]}}"#).into_bytes()),
            ("kind not a string", format!(r#"{{"kind":3,"items":[{good}]}}"#).into_bytes()),
            ("bad metadata of a list", format!(r#"{{"kind":"List","items":[{good}],"metadata":{{"a" 1}}}}"#).into_bytes()),
            ("text after the documents", format!("{} x", list(std::slice::from_ref(&good))).into_bytes()),
            ("a list as a document", format!("[{good}]").into_bytes()),
            ("an empty object", b"{}".to_vec()),
        ]
    }

    #[test]
    fn every_bad_file_is_left_to_the_whole_file_reader_and_words_its_message() {
        let directory = tempfile::tempdir().expect("a temporary directory");
        for (name, bytes) in bad_files() {
            let path = written(directory.path(), "bad.json", &bytes);
            let expected = whole(&path);
            assert!(expected.starts_with("error: "), "{name}: {expected}");
            assert!(streamed(&path, 64, 256).is_err(), "{name}: streamed");
            let read = outcome(load::read_file(&path, FileSizeLimit::DEFAULT));
            assert_eq!(read, expected, "{name}");
        }
    }

    #[test]
    fn a_file_over_the_limit_and_a_duplicate_are_worded_as_by_the_whole_file_reader() {
        let directory = tempfile::tempdir().expect("a temporary directory");
        let [_, list] = json_fixtures();
        let path = written(directory.path(), "list.json", list.as_bytes());
        let limit: FileSizeLimit = "1Ki".parse().expect("valid");
        assert_eq!(
            outcome(load::read_file(&path, limit)),
            outcome(read_whole_file(&path, limit))
        );
        let namespace = r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"twice"}}"#;
        let node = r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"w1"}}"#;
        let text = list_of(&[node, namespace, namespace]);
        let path = written(directory.path(), "twice.json", text.as_bytes());
        let now = Utc::now();
        let streamed =
            crate::snapshot::load_files(std::slice::from_ref(&path), now).expect_err("a duplicate");
        let objects = read_whole_file(&path, FileSizeLimit::DEFAULT).expect("readable");
        let whole = crate::snapshot::assemble(vec![(path.clone(), objects)], now)
            .map_err(|error| crate::snapshot::assemble::located(error, FileSizeLimit::DEFAULT))
            .expect_err("a duplicate");
        assert_eq!(streamed.to_string(), whole.to_string());
        assert!(streamed.to_string().contains("twice"), "{streamed}");
    }

    fn list_of(items: &[&str]) -> String {
        format!(
            r#"{{"apiVersion":"v1","kind":"List","items":[{}]}}"#,
            items.join(",")
        )
    }

    #[test]
    fn mutated_json_snapshots_read_the_same_streamed_or_whole() {
        let directory = tempfile::tempdir().expect("a temporary directory");
        const BREAKING: &[u8] = b"\"{}[]:,\\ x1\x01\xff\xc3";
        let mut next = seeded();
        let mut failed = 0;
        for text in json_fixtures() {
            for i in 0..150 {
                let mut bytes = text.clone().into_bytes();
                let at = next() % bytes.len();
                match i % 3 {
                    0 => bytes.truncate(at),
                    1 => bytes[at] = BREAKING[next() % BREAKING.len()],
                    _ => bytes.insert(at, BREAKING[next() % BREAKING.len()]),
                }
                let path = written(directory.path(), "mutated.json", &bytes);
                let expected = whole(&path);
                failed += usize::from(expected.starts_with("error: "));
                assert_eq!(
                    outcome(load::read_file(&path, FileSizeLimit::DEFAULT)),
                    expected,
                    "{}",
                    String::from_utf8_lossy(&bytes)
                );
            }
        }
        assert!(failed > 100, "the mutations break the files: {failed}");
    }
}
