//! The shape every snapshot document keeps, whatever its form: lists and mappings nested at most
//! [`MAX_DEPTH`] levels deep. YAML's reader counts the levels itself; JSON's would recurse
//! without a limit where a value is skipped, so JSON text is measured here before it is decoded.

/// The deepest nesting of lists and mappings in a snapshot document, counted from the document
/// (its own mapping is level 1, a `List`'s items are level 3). The API's objects nest a few
/// dozen levels at most; the limit keeps every reader's recursion (one call or more per level,
/// on threads of 2 MiB of stack) far from the stack's end, and stays under serde_json's own
/// limit of 128 levels, so that what one form reads the other reads too.
pub const MAX_DEPTH: usize = 100;

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
    use super::{MAX_DEPTH, json_too_deep};

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
