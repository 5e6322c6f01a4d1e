//! The shape every snapshot document keeps, whatever its form: lists and mappings nested at most
//! [`MAX_DEPTH`] levels deep, and each key once in a mapping. YAML's reader checks both itself;
//! JSON's would recurse without a limit where a value is skipped, and takes the last of a
//! repeated key where it fills a map, so JSON text is checked here before it is decoded.

use std::borrow::Cow;
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
                at = string_end(text, at + 1);
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
struct Open<'t> {
    /// Whether it is an object, whose strings alternate between keys and values.
    object: bool,
    /// Where its keys start in the keys of every open object.
    keys_from: usize,
    /// Its keys, once they are too many to compare one by one.
    set: Option<HashSet<Cow<'t, str>>>,
}

/// Up to this many keys, a mapping's are compared one by one; past it, through a set, so
/// that a mapping of a million keys costs a million lookups, not a million squared.
const COMPARED_KEYS: usize = 16;

/// Checks valid JSON text, enclosed by `depth` levels already: no deeper than [`MAX_DEPTH`],
/// no key twice in one object (as decoded: `"a"` and `"\u0061"` are the same key).
pub fn json_shape(text: &str, depth: usize) -> Result<(), Shape> {
    let bytes = text.as_bytes();
    let mut depth = depth;
    let mut open: Vec<Open> = Vec::new();
    let mut keys: Vec<Cow<str>> = Vec::new();
    let mut expect_key = false;
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'"' => {
                let end = string_end(bytes, at + 1);
                if expect_key && let Some(object) = open.last_mut() {
                    record(object, &mut keys, key_text(&text[at..end])).map_err(|key| {
                        Shape::DuplicateKey {
                            offset: at,
                            key: key.into_owned(),
                        }
                    })?;
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
                open.push(Open {
                    object: byte == b'{',
                    keys_from: keys.len(),
                    set: None,
                });
                expect_key = byte == b'{';
            }
            b'}' | b']' => {
                if let Some(closed) = open.pop() {
                    keys.truncate(closed.keys_from);
                }
                depth = depth.saturating_sub(1);
                expect_key = false;
            }
            b',' => expect_key = open.last().is_some_and(|open| open.object),
            _ => {}
        }
        at += 1;
    }
    Ok(())
}

/// The text of a JSON string, its quotes included, as a key: escapes decoded when it has any.
fn key_text(quoted: &str) -> Cow<'_, str> {
    let inner = &quoted[1..quoted.len().saturating_sub(1).max(1)];
    if inner.contains('\\') {
        serde_json::from_str::<String>(quoted).map_or(Cow::Borrowed(inner), Cow::Owned)
    } else {
        Cow::Borrowed(inner)
    }
}

/// Records `key` among `object`'s keys (`keys[object.keys_from..]`, and its set once it has
/// one); gives the key back when the object has it already.
fn record<'t>(
    object: &mut Open<'t>,
    keys: &mut Vec<Cow<'t, str>>,
    key: Cow<'t, str>,
) -> Result<(), Cow<'t, str>> {
    let own = &keys[object.keys_from..];
    let repeated = match &mut object.set {
        Some(set) => !set.insert(key.clone()),
        None => own.contains(&key),
    };
    if repeated {
        return Err(key);
    }
    if object.set.is_none() && own.len() + 1 >= COMPARED_KEYS {
        object.set = Some(own.iter().cloned().chain([key.clone()]).collect());
    }
    keys.push(key);
    Ok(())
}

/// The offset just past the closing quote of the string whose text starts at `at` (the end of
/// the text when it never closes).
fn string_end(text: &[u8], mut at: usize) -> usize {
    while at < text.len() {
        match text[at] {
            b'\\' => at += 2,
            b'"' => return at + 1,
            _ => at += 1,
        }
    }
    text.len()
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::super::load::{FileSizeLimit, PARALLEL_ITEMS, read_file, read_str};
    use super::{MAX_DEPTH, Shape, json_shape, json_too_deep};

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
        /// Carriage returns send the document to serde-saphyr too.
        YamlCrlf,
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

    const FORMS: [Form; 11] = [
        Form::YamlFlow,
        Form::YamlBlock,
        Form::YamlDashes,
        Form::YamlAnchored,
        Form::YamlCrlf,
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
