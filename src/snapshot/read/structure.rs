//! The shape every snapshot document keeps, whatever its form: lists and mappings nested at most
//! [`MAX_DEPTH`] levels deep, and each key once in a mapping. YAML's reader checks both itself;
//! JSON's would recurse without a limit where a value is skipped, and takes the last of a
//! repeated key where it fills a map, so JSON text is checked here before it is decoded.

use std::collections::HashSet;

/// The deepest nesting of lists and mappings in a snapshot document, counted from the document
/// (its own mapping is level 1, a `List`'s items are level 3). The API's objects nest a few
/// dozen levels at most; the limit keeps every reader's recursion (one call or more per level,
/// on threads of 2 MiB of stack) far from the stack's end, and stays under serde_json's own
/// limit of 128 levels, so that what one form reads the other reads too.
pub const MAX_DEPTH: usize = 100;

/// What a snapshot document holds, as the message on text nested too deep names it.
pub(super) const OBJECT: &str = "Kubernetes object";

/// Where JSON text first nests deeper than `max` levels, the text being enclosed by `depth`
/// levels already: the offset of the bracket that opens one level too many. The text need not
/// be valid: this follows strings and brackets only, so that depth is judged before syntax (a
/// file of a hundred thousand `[` is too deep, whatever follows).
pub fn json_too_deep(text: &[u8], depth: usize, max: usize) -> Option<usize> {
    let mut depth = depth;
    let mut at = 0;
    while at < text.len() {
        match text[at] {
            b'"' => {
                at = string_end(text, at + 1).0;
                continue;
            }
            b'{' | b'[' => {
                depth += 1;
                if depth > max {
                    return Some(at);
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        at += 1;
    }
    None
}

/// What is wrong with the shape of JSON text, and at which byte.
#[derive(Debug, PartialEq, Eq)]
pub enum Shape {
    /// The bracket that opens one level more than [`MAX_DEPTH`].
    TooDeep { offset: usize },
    /// The second of two keys that are the same text in one mapping (its opening quote).
    DuplicateKey { offset: usize, key: String },
}

/// An open object or list, while [`json_shape`] reads what is in it.
struct Open {
    /// Whether it is an object, whose strings alternate between keys and values.
    object: bool,
    /// Where its keys start in the keys of every open object.
    keys_from: usize,
    /// Its keys, once they are too many to compare one by one.
    set: Option<HashSet<String>>,
}

/// A key of an open object: where its text is (in the JSON text, or, when it has escapes, in
/// [`ShapeScratch::decoded`]), and its first bytes and length, which tell most keys apart
/// without comparing their text.
#[derive(Clone, Copy)]
struct Key {
    prefix: u64,
    start: usize,
    end: usize,
    decoded: bool,
}

/// The first eight bytes of `text` (fewer, zero-padded) mixed with its length.
fn prefix(text: &[u8]) -> u64 {
    let first = match text.get(..8) {
        Some(eight) => u64::from_le_bytes(eight.try_into().expect("eight bytes")),
        None => text
            .iter()
            .rev()
            .fold(0, |prefix, &byte| prefix << 8 | u64::from(byte)),
    };
    first ^ (text.len() as u64).rotate_left(56)
}

/// What [`json_shape`] keeps while it reads, kept from one text to the next so that checking
/// a list item allocates nothing.
#[derive(Default)]
pub struct ShapeScratch {
    open: Vec<Open>,
    keys: Vec<Key>,
    /// The text of the keys written with escapes, decoded.
    decoded: String,
}

impl ShapeScratch {
    /// The key whose quoted text is `text[start..end]`.
    fn key(&mut self, text: &str, start: usize, end: usize, escaped: bool) -> Key {
        let inner = (start + 1, end.saturating_sub(1).max(start + 1));
        let decoded = escaped
            .then(|| serde_json::from_str::<String>(&text[start..end]).ok())
            .flatten();
        match decoded {
            Some(decoded) => {
                let from = self.decoded.len();
                self.decoded.push_str(&decoded);
                Key {
                    prefix: prefix(decoded.as_bytes()),
                    start: from,
                    end: self.decoded.len(),
                    decoded: true,
                }
            }
            None => Key {
                prefix: prefix(&text.as_bytes()[inner.0..inner.1]),
                start: inner.0,
                end: inner.1,
                decoded: false,
            },
        }
    }

    /// Records `key` among the innermost open object's keys (and its set, once it has one);
    /// `false` when the object has it already.
    fn record(&mut self, key: Key, text: &str) -> bool {
        let Some(object) = self.open.last_mut() else {
            return true;
        };
        let own = &self.keys[object.keys_from..];
        let decoded = self.decoded.as_str();
        let text_of = |key: &Key| key_text(key, text, decoded);
        let repeated = match &mut object.set {
            Some(set) => !set.insert(text_of(&key).to_string()),
            None => own
                .iter()
                .any(|other| other.prefix == key.prefix && text_of(other) == text_of(&key)),
        };
        if repeated {
            return false;
        }
        if object.set.is_none() && own.len() + 1 >= COMPARED_KEYS {
            let set = own.iter().chain([&key]).map(|key| text_of(key).to_string());
            object.set = Some(set.collect());
        }
        self.keys.push(key);
        true
    }
}

/// The text of `key`, from the JSON text or from the decoded keys.
fn key_text<'t>(key: &Key, text: &'t str, decoded: &'t str) -> &'t str {
    if key.decoded {
        &decoded[key.start..key.end]
    } else {
        &text[key.start..key.end]
    }
}

/// Up to this many keys, a mapping's are compared one by one; past it, through a set, so
/// that a mapping of a million keys costs a million lookups, not a million squared.
const COMPARED_KEYS: usize = 16;

/// Checks valid JSON text, enclosed by `depth` levels already: no deeper than [`MAX_DEPTH`],
/// no key twice in one object (as decoded: `"a"` and `"\u0061"` are the same key).
pub fn json_shape(text: &str, depth: usize) -> Result<(), Shape> {
    json_shape_with(text, depth, &mut ShapeScratch::default())
}

/// [`json_shape`] with the buffers of `scratch`.
pub fn json_shape_with(text: &str, depth: usize, scratch: &mut ShapeScratch) -> Result<(), Shape> {
    scratch.open.clear();
    scratch.keys.clear();
    scratch.decoded.clear();
    let bytes = text.as_bytes();
    let mut depth = depth;
    let mut expect_key = false;
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'"' => {
                let (end, escaped) = string_end(bytes, at + 1);
                if expect_key {
                    let key = scratch.key(text, at, end, escaped);
                    if !scratch.record(key, text) {
                        return Err(Shape::DuplicateKey {
                            offset: at,
                            key: key_text(&key, text, &scratch.decoded).to_string(),
                        });
                    }
                    expect_key = false;
                }
                at = end;
                continue;
            }
            byte @ (b'{' | b'[') => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(Shape::TooDeep { offset: at });
                }
                scratch.open.push(Open {
                    object: byte == b'{',
                    keys_from: scratch.keys.len(),
                    set: None,
                });
                expect_key = byte == b'{';
            }
            b'}' | b']' => {
                if let Some(closed) = scratch.open.pop() {
                    scratch.keys.truncate(closed.keys_from);
                }
                depth = depth.saturating_sub(1);
                expect_key = false;
            }
            b',' => expect_key = scratch.open.last().is_some_and(|open| open.object),
            _ => {}
        }
        at += 1;
    }
    Ok(())
}

/// The offset just past the closing quote of the string whose text starts at `at` (the end of
/// the text when it never closes), and whether it has an escape.
fn string_end(text: &[u8], mut at: usize) -> (usize, bool) {
    let mut escaped = false;
    loop {
        at = quote_or_escape(text, at);
        match text.get(at) {
            Some(b'\\') => {
                escaped = true;
                at += 2;
            }
            Some(_) => return (at + 1, escaped),
            None => return (text.len(), escaped),
        }
    }
}

/// The offset of the first `"` or `\` from `at` (the end of the text when there is none),
/// eight bytes at a time: strings are most of a snapshot's text, and a byte at a time was half
/// of what checking a 120 MB file cost.
pub fn quote_or_escape(text: &[u8], mut at: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // The high bit of each byte of `word` that is `byte`; past the first such byte, others
    // may be marked too, so only the lowest counts.
    let marked = |word: u64, byte: u8| {
        let zeroed = word ^ (ONES * u64::from(byte));
        zeroed.wrapping_sub(ONES) & !zeroed & HIGHS
    };
    while let Some(eight) = text.get(at..at + 8) {
        let word = u64::from_le_bytes(eight.try_into().expect("eight bytes"));
        let found = marked(word, b'"') | marked(word, b'\\');
        if found != 0 {
            return at + (found.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while at < text.len() && !matches!(text[at], b'"' | b'\\') {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::{MAX_DEPTH, Shape, json_shape, json_too_deep, quote_or_escape};
    use crate::snapshot::read::parallel::PARALLEL_ITEMS;
    use crate::snapshot::read::{FileSizeLimit, read_file, read_str};

    /// The ways a snapshot can nest, each read by another of the readers' paths.
    #[derive(Clone, Copy, Debug)]
    enum Form {
        /// `x: [[…]]`, which the YAML fast path rewrites as JSON.
        YamlFlow,
        /// `x:` / `  x:` … block mappings, fast path too.
        YamlBlock,
        /// `x:` / `- - - 1`, block sequences on one line.
        YamlDashes,
        /// An anchor sends the document to serde-saphyr.
        YamlAnchored,
        /// Carriage returns stay on the fast path.
        YamlCrlf,
        /// A byte order mark, and `...` after the document, which serde-saphyr reads.
        YamlMarkedAndEnded,
        /// The node as an item of a `List`: the fast path reads items on their own.
        YamlItem,
        /// An anchored item is read by serde-saphyr on its own.
        YamlAnchoredItem,
        /// The same item among enough others to be read on worker threads.
        YamlManyItems,
        JsonDocument,
        JsonItem,
        JsonManyItems,
    }

    const FORMS: [Form; 12] = [
        Form::YamlFlow,
        Form::YamlBlock,
        Form::YamlDashes,
        Form::YamlAnchored,
        Form::YamlCrlf,
        Form::YamlMarkedAndEnded,
        Form::YamlItem,
        Form::YamlAnchoredItem,
        Form::YamlManyItems,
        Form::JsonDocument,
        Form::JsonItem,
        Form::JsonManyItems,
    ];

    /// A Node whose field `x` nests lists or mappings `depth` levels deep in all, the
    /// document's own mapping counted; and the line of the file where `x` is.
    fn nested_node(form: Form, depth: usize) -> (String, usize) {
        // Levels under the node's own mapping, and under a List's mapping, items and node.
        let under_document = depth - 1;
        let under_item = depth - 3;
        let flow = |levels: usize| format!("{}{}", "[".repeat(levels), "]".repeat(levels));
        let node = "apiVersion: v1\nkind: Node\nmetadata: {name: w1}\n";
        let namespaces = |count: usize| -> String {
            (0..count)
                .map(|i| {
                    format!("- {{apiVersion: v1, kind: Namespace, metadata: {{name: n{i}}}}}\n")
                })
                .collect()
        };
        let json_namespaces = |count: usize| -> String {
            (0..count)
                .map(|i| {
                    format!(
                        r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"n{i}"}}}},"#
                    )
                })
                .collect()
        };
        match form {
            Form::YamlFlow => (format!("{node}x: {}\n", flow(under_document)), 4),
            Form::YamlBlock => {
                // Each `x:` opens a mapping; the innermost holds `y`, where it begins.
                let keys: String = (0..under_document)
                    .map(|level| format!("{}x:\n", "  ".repeat(level)))
                    .collect();
                let text = format!("{node}{keys}{}y: 1\n", "  ".repeat(under_document));
                (text, 4 + under_document)
            }
            Form::YamlDashes => (format!("{node}x:\n{}1\n", "- ".repeat(under_document)), 5),
            Form::YamlAnchored => (
                format!(
                    "apiVersion: v1\nkind: Node\nmetadata: {{name: &n w1}}\nz: *n\nx: {}\n",
                    flow(under_document)
                ),
                5,
            ),
            Form::YamlCrlf => (
                format!("{node}x: {}\n", flow(under_document)).replace('\n', "\r\n"),
                4,
            ),
            Form::YamlMarkedAndEnded => (
                format!("\u{feff}{node}x: {}\n...\n", flow(under_document)),
                4,
            ),
            Form::YamlItem | Form::YamlAnchoredItem | Form::YamlManyItems => {
                let name = if matches!(form, Form::YamlItem) {
                    "w1"
                } else {
                    "&n w1}\n  z: *n\n  other: {a: 1"
                };
                let others = if matches!(form, Form::YamlManyItems) {
                    namespaces(PARALLEL_ITEMS * 2)
                } else {
                    String::new()
                };
                let text = format!(
                    "apiVersion: v1\nkind: List\nitems:\n{others}- apiVersion: v1\n  kind: Node\n  \
                     metadata: {{name: {name}}}\n  x: {}\n",
                    flow(under_item)
                );
                let line = text.lines().count();
                (text, line)
            }
            Form::JsonDocument => (
                format!(
                    r#"{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"w1"}},"x":{}}}"#,
                    flow(under_document)
                ),
                1,
            ),
            Form::JsonItem | Form::JsonManyItems => {
                let others = if matches!(form, Form::JsonManyItems) {
                    json_namespaces(PARALLEL_ITEMS * 2)
                } else {
                    String::new()
                };
                (
                    format!(
                        r#"{{"apiVersion":"v1","kind":"List","items":[{others}{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"w1"}},"x":{}}}]}}"#,
                        flow(under_item)
                    ),
                    1,
                )
            }
        }
    }

    /// Reads `text` as a file would be read (JSON through the stream first) and as text.
    fn both_ways(text: &str) -> [Result<usize, String>; 2] {
        let mut file = tempfile::NamedTempFile::new().expect("a temporary file");
        file.write_all(text.as_bytes()).expect("writable");
        let from_file = read_file(file.path(), FileSizeLimit::DEFAULT)
            .map(|objects| objects.nodes.len())
            .map_err(|error| error.to_string());
        let from_text = read_str(text)
            .map(|objects| objects.nodes.len())
            .map_err(|error| error.to_string());
        [from_file, from_text]
    }

    #[test]
    fn every_reader_takes_a_document_nested_to_the_limit_and_refuses_one_level_more() {
        // A caller with a small stack: the readers decode on threads of their own.
        let reader = std::thread::Builder::new().stack_size(256 << 10);
        reader
            .spawn(|| {
                for form in FORMS {
                    let (legal, _) = nested_node(form, MAX_DEPTH);
                    for read in both_ways(&legal) {
                        assert_eq!(read, Ok(1), "{form:?} at the limit");
                    }
                    let (deep, line) = nested_node(form, MAX_DEPTH + 1);
                    for read in both_ways(&deep) {
                        let Err(error) = read else {
                            panic!("{form:?} one level too deep is read");
                        };
                        assert!(
                            error.contains(&format!("{line}:"))
                                && error.contains(
                                    "lists and mappings are nested deeper than 100 levels, deeper \
                                 than any Kubernetes object nests"
                                ),
                            "{form:?}: {error}"
                        );
                    }
                }
            })
            .expect("a thread starts")
            .join()
            .expect("no reader overflowed the stack");
    }

    fn duplicate(text: &str) -> Option<(usize, String)> {
        match json_shape(text, 0) {
            Err(Shape::DuplicateKey { offset, key }) => Some((offset, key)),
            Err(Shape::TooDeep { .. }) => panic!("not too deep: {text}"),
            Ok(()) => None,
        }
    }

    #[test]
    fn a_key_twice_in_one_object_is_found_at_its_second_appearance() {
        assert_eq!(
            duplicate(r#"{"a":1,"b":2,"a":3}"#),
            Some((13, "a".to_string()))
        );
        // Decoded: an escape spells the same key.
        assert_eq!(
            duplicate(r#"{"a":1,"\u0061":2}"#),
            Some((7, "a".to_string()))
        );
        // Values, list items, nested and sibling objects are other keys' business.
        for fine in [
            r#"{"a":"a","b":["a","a"],"c":{"a":1},"d":{"a":2}}"#,
            r#"[{"a":1},{"a":1}]"#,
            r#"{"a":{"b":{"c":1}},"b":{"a":1},"c":[{"c":1,"d":"c"}]}"#,
            r#"{"a\"b":1,"a\\":2,"a":3}"#,
        ] {
            assert_eq!(duplicate(fine), None, "{fine}");
        }
        // A key after a nested value is still the outer object's.
        assert_eq!(
            duplicate(r#"{"a":{"x":[1,{"y":2}]},"a":0}"#),
            Some((23, "a".to_string()))
        );
    }

    #[test]
    fn a_big_object_is_checked_through_a_set_as_one_by_one() {
        let keys: Vec<String> = (0..5000).map(|i| format!(r#""k{i}":{i}"#)).collect();
        let object = format!("{{{}}}", keys.join(","));
        assert_eq!(duplicate(&object), None);
        let repeated = format!("{{{},\"k17\":0,\"z\":1}}", keys.join(","));
        let at = repeated.rfind("\"k17\"").expect("the repeated key");
        assert_eq!(duplicate(&repeated), Some((at, "k17".to_string())));
        let early = format!("{{\"k3\":0,{}}}", keys[..20].join(","));
        let at = early.rfind("\"k3\"").expect("the repeated key");
        assert_eq!(duplicate(&early), Some((at, "k3".to_string())));
    }

    #[test]
    fn the_first_quote_or_backslash_is_found_wherever_it_is() {
        let text: Vec<u8> = "aé€𝄞bcdefghijklmnopqrstuvwxyz".bytes().collect();
        assert_eq!(quote_or_escape(&text, 0), text.len());
        for at in 0..text.len() {
            for mark in [b'"', b'\\'] {
                let mut marked = text.clone();
                marked[at] = mark;
                // A second mark after the first, in the same eight bytes or not.
                if at + 3 < marked.len() {
                    marked[at + 3] = b'"';
                }
                for from in 0..=at {
                    assert_eq!(quote_or_escape(&marked, from), at, "{at} from {from}");
                }
            }
        }
    }

    #[test]
    fn the_bracket_that_opens_one_level_too_many_is_found() {
        assert_eq!(json_too_deep(b"[[1]]", 0, 2), None);
        assert_eq!(json_too_deep(b"[[[1]]]", 0, 2), Some(2));
        assert_eq!(json_too_deep(br#"{"a":{"b":1}}"#, 1, 2), Some(5));
        // Brackets in strings, escaped quotes included, are text.
        assert_eq!(json_too_deep(br#"["[[[\"[[[", []]"#, 0, 2), None);
        // Siblings do not add up.
        assert_eq!(json_too_deep(b"[[],[],[[]]]", 0, 3), None);
        // Unclosed and broken text is measured as far as it goes.
        assert_eq!(json_too_deep(&[b'['; 100_000], 0, 100), Some(100));
        assert_eq!(json_too_deep(b"[\"unclosed [[[", 0, 1), None);
    }
}
