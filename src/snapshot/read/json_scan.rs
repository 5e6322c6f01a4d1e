//! Finding the top-level documents of a JSON stream, and the items of each document's `items`
//! list, in text that arrives block by block, without holding the text.
//!
//! Hand-written because serde_json cannot do this: its stream reader gives the documents but
//! not the byte range of an element inside one (a `List`'s items are one document), and
//! reading from an `io::Read` is slower than from a slice. The scanner only follows structure
//! (nesting depth, strings, escapes); the text it hands on is decoded, and so checked, by
//! serde_json. It is strict where it decides something (the separators of the document's keys
//! and of the items) and refuses whatever it does not handle, so that the caller can read the
//! file the ordinary way instead.

use super::structure::{MAX_DEPTH, quote_or_escape};

/// Where the scanner is in the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum At {
    /// Between documents: whitespace, or the `{` of the next one.
    Between,
    /// Before a key of a document's object (or its `}` when it has none yet).
    Key { first: bool },
    /// Inside a key of a document's object.
    InKey,
    /// After a key, before its `:`.
    Colon,
    /// After a `:`, before the value.
    Value,
    /// Inside a number, `true`, `false` or `null` of the document's own fields.
    Scalar,
    /// Inside a string, object or list of the document's own fields.
    Nested,
    /// After a value of the document's own fields, before `,` or `}`.
    AfterValue,
    /// Inside `items`, before an item (or its `]` when it has none yet).
    Item { first: bool },
    /// Inside an item.
    InItem,
    /// After an item, before `,` or `]`.
    AfterItem,
}

/// What the scanner could not follow: the caller then reads the file as a whole, which words
/// the problem if there is one.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScanError {
    #[error("unexpected byte {byte:#04x} at byte {offset}")]
    Unexpected { offset: u64, byte: u8 },
    #[error("a key of a document's object is written with an escape, at byte {offset}")]
    EscapedKey { offset: u64 },
    #[error("the document nests deeper than {MAX_DEPTH} levels, at byte {offset}")]
    TooDeep { offset: u64 },
    #[error("the text ends inside a document")]
    Truncated,
}

/// The deepest nesting of a list item that is handed on: the document's mapping and its `items`
/// enclose it. A document nested deeper is left to the reader of the whole file, which refuses
/// it where it goes too deep.
const MAX_ITEM_DEPTH: u32 = MAX_DEPTH as u32 - 2;

/// The deepest nesting of a value of the document's own fields: the document's mapping
/// encloses it.
const MAX_FIELD_DEPTH: u32 = MAX_DEPTH as u32 - 1;

/// Receives what the scanner finds, in the order of the text.
pub trait Sink {
    /// The `[` of a document's `items` was reached; `header` is the document's text up to it,
    /// its own fields before `items` included.
    fn items(&mut self, header: &[u8]);
    /// One whole item of a document's `items`, from its `{` to its `}`.
    fn item(&mut self, text: &[u8]);
    /// A document ended. `header` is its text with the items of its `items` left out (`[]`);
    /// `listed` says whether it had items that were handed on by `item`.
    fn document(&mut self, header: &[u8], listed: bool);
}

/// Nesting inside a value the scanner skips through.
#[derive(Clone, Copy, Debug, Default)]
struct Nest {
    depth: u32,
    string: bool,
    escaped: bool,
}

impl Nest {
    /// Follows `bytes` to the end of the value: `Some(index after its last byte)`, or `None`
    /// when the value goes on past them. `Err` when it nests deeper than `max_depth`, with the
    /// index of the byte that does.
    fn close(&mut self, bytes: &[u8], max_depth: u32) -> Result<Option<usize>, usize> {
        let mut index = 0;
        while index < bytes.len() {
            if self.string {
                if self.escaped {
                    self.escaped = false;
                } else {
                    // Strings are most of the text: skipped to their next quote or escape.
                    index = quote_or_escape(bytes, index);
                    let Some(&byte) = bytes.get(index) else {
                        break;
                    };
                    if byte == b'\\' {
                        self.escaped = true;
                    } else {
                        self.string = false;
                        if self.depth == 0 {
                            return Ok(Some(index + 1));
                        }
                    }
                }
                index += 1;
                continue;
            }
            match bytes[index] {
                b'"' => self.string = true,
                b'{' | b'[' => {
                    self.depth += 1;
                    if self.depth > max_depth {
                        return Err(index);
                    }
                }
                b'}' | b']' => {
                    // A closing bracket too many ends the value early; serde_json refuses it.
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        return Ok(Some(index + 1));
                    }
                }
                _ => {}
            }
            index += 1;
        }
        Ok(None)
    }
}

/// JSON's whitespace, as serde_json skips it.
fn is_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\n' | b'\r' | b'\t')
}

/// Where `feed` goes after a byte.
enum Step {
    /// To the next byte.
    Next,
    /// Back to the same byte, in the state it led to.
    Again,
    /// To this position in the block.
    To(usize),
    /// To the next block: the rest of this one is read.
    Rest,
}

/// Follows a stream of JSON documents fed in blocks of any size.
#[derive(Debug)]
pub struct Scanner {
    at: At,
    nest: Nest,
    /// The current document's text, its items left out.
    header: Vec<u8>,
    /// The key being read, or the last one read.
    key: Vec<u8>,
    /// The start of an item that began in an earlier block.
    pending: Vec<u8>,
    /// Where the item being read starts in the block being fed, when it starts in it.
    item_start: Option<usize>,
    /// Whether the current document's items were handed on.
    listed: bool,
    /// The stream offset of the block being fed.
    offset: u64,
    documents: usize,
}

impl Default for Scanner {
    fn default() -> Scanner {
        Scanner::new()
    }
}

impl Scanner {
    pub fn new() -> Scanner {
        Scanner {
            at: At::Between,
            nest: Nest::default(),
            header: Vec::new(),
            key: Vec::new(),
            pending: Vec::new(),
            item_start: None,
            listed: false,
            offset: 0,
            documents: 0,
        }
    }

    /// The documents that ended so far.
    pub fn documents(&self) -> usize {
        self.documents
    }

    /// Follows the next block of the stream.
    pub fn feed(&mut self, block: &[u8], sink: &mut impl Sink) -> Result<(), ScanError> {
        let mut index = 0;
        self.item_start = None;
        while index < block.len() {
            let step = match self.at {
                At::Item { .. } | At::InItem | At::AfterItem => {
                    self.item_step(block, index, sink)?
                }
                _ => self.header_step(block, index, sink)?,
            };
            match step {
                Step::Next => index += 1,
                Step::Again => {}
                Step::To(next) => index = next,
                Step::Rest => break,
            }
        }
        if self.at == At::InItem {
            // The item goes on in the next block.
            self.pending
                .extend_from_slice(&block[self.item_start.unwrap_or(0)..]);
        }
        self.offset += block.len() as u64;
        Ok(())
    }

    /// The byte at `index` of the block being read is not one the JSON grammar allows there.
    fn unexpected(&self, index: usize, byte: u8) -> ScanError {
        ScanError::Unexpected {
            offset: self.offset + index as u64,
            byte,
        }
    }

    /// The byte at `index` is outside `items`: in the document's own fields, or between
    /// documents.
    fn header_step(
        &mut self,
        block: &[u8],
        index: usize,
        sink: &mut impl Sink,
    ) -> Result<Step, ScanError> {
        let byte = block[index];
        // What any byte the grammar does not allow here is refused with (no allocation).
        let unexpected = self.unexpected(index, byte);
        match self.at {
            At::Between => {
                if byte == b'{' {
                    self.header.clear();
                    self.header.push(byte);
                    self.listed = false;
                    self.at = At::Key { first: true };
                } else if !is_space(byte) {
                    return Err(unexpected);
                }
            }
            At::Key { first } => {
                self.header.push(byte);
                match byte {
                    b'"' => {
                        self.key.clear();
                        self.at = At::InKey;
                    }
                    b'}' if first => self.end_document(sink),
                    _ if is_space(byte) => {}
                    _ => return Err(unexpected),
                }
            }
            At::InKey => return self.key_text(block, index),
            At::Colon => {
                self.header.push(byte);
                if byte == b':' {
                    self.at = At::Value;
                } else if !is_space(byte) {
                    return Err(unexpected);
                }
            }
            At::Value => return Ok(self.value_start(byte, sink)),
            At::Scalar => {
                if is_space(byte) || matches!(byte, b',' | b'}' | b']') {
                    self.at = At::AfterValue;
                    return Ok(Step::Again);
                }
                self.header.push(byte);
            }
            At::Nested => return self.nested(block, index),
            At::AfterValue => {
                self.header.push(byte);
                match byte {
                    b',' => self.at = At::Key { first: false },
                    b'}' => self.end_document(sink),
                    _ if is_space(byte) => {}
                    _ => return Err(unexpected),
                }
            }
            At::Item { .. } | At::InItem | At::AfterItem => {
                unreachable!("feed hands items to item_step")
            }
        }
        Ok(Step::Next)
    }

    /// Inside a key: read up to its closing quote (keys written with escapes are not followed).
    fn key_text(&mut self, block: &[u8], index: usize) -> Result<Step, ScanError> {
        let rest = &block[index..];
        let Some(end) = rest.iter().position(|&b| b == b'"' || b == b'\\') else {
            self.key.extend_from_slice(rest);
            self.header.extend_from_slice(rest);
            return Ok(Step::Rest);
        };
        if rest[end] == b'\\' {
            return Err(ScanError::EscapedKey {
                offset: self.offset + (index + end) as u64,
            });
        }
        self.key.extend_from_slice(&rest[..end]);
        self.header.extend_from_slice(&rest[..=end]);
        self.at = At::Colon;
        Ok(Step::To(index + end + 1))
    }

    /// After a key's `:`: `items` with a list, or a value of the document's own fields.
    fn value_start(&mut self, byte: u8, sink: &mut impl Sink) -> Step {
        if is_space(byte) {
            self.header.push(byte);
        } else if byte == b'[' && self.key == b"items" {
            self.header.push(byte);
            self.listed = true;
            sink.items(&self.header);
            self.at = At::Item { first: true };
        } else if matches!(byte, b'{' | b'[' | b'"') {
            self.nest = Nest {
                depth: u32::from(byte != b'"'),
                string: byte == b'"',
                escaped: false,
            };
            self.header.push(byte);
            self.at = At::Nested;
        } else {
            // A number or a literal: serde_json checks it in the header.
            self.at = At::Scalar;
            return Step::Again;
        }
        Step::Next
    }

    /// Inside a string, object or list of the document's own fields: read to its end.
    fn nested(&mut self, block: &[u8], index: usize) -> Result<Step, ScanError> {
        let rest = &block[index..];
        let Some(end) = self.close_nest(block, index, MAX_FIELD_DEPTH)? else {
            self.header.extend_from_slice(rest);
            return Ok(Step::Rest);
        };
        self.header.extend_from_slice(&rest[..end]);
        self.at = At::AfterValue;
        Ok(Step::To(index + end))
    }

    /// [`Nest::close`] from the byte at `index`, a value nested too deep placed in the stream.
    fn close_nest(
        &mut self,
        block: &[u8],
        index: usize,
        max_depth: u32,
    ) -> Result<Option<usize>, ScanError> {
        self.nest
            .close(&block[index..], max_depth)
            .map_err(|at| ScanError::TooDeep {
                offset: self.offset + (index + at) as u64,
            })
    }

    /// The byte at `index` is inside a document's `items`.
    fn item_step(
        &mut self,
        block: &[u8],
        index: usize,
        sink: &mut impl Sink,
    ) -> Result<Step, ScanError> {
        let byte = block[index];
        // What any byte the grammar does not allow here is refused with (no allocation).
        let unexpected = self.unexpected(index, byte);
        match self.at {
            At::Item { first } => match byte {
                b'{' => {
                    self.nest = Nest {
                        depth: 1,
                        ..Nest::default()
                    };
                    self.item_start = Some(index);
                    self.at = At::InItem;
                }
                b']' if first => self.end_items(),
                _ if is_space(byte) => {}
                _ => return Err(unexpected),
            },
            At::InItem => {
                let Some(end) = self.close_nest(block, index, MAX_ITEM_DEPTH)? else {
                    return Ok(Step::Rest);
                };
                // An item begun in an earlier block has its start in `pending`.
                let start = self.item_start.unwrap_or(0);
                let end = index + end;
                if self.pending.is_empty() {
                    sink.item(&block[start..end]);
                } else {
                    self.pending.extend_from_slice(&block[start..end]);
                    sink.item(&self.pending);
                    self.pending.clear();
                }
                self.item_start = None;
                self.at = At::AfterItem;
                return Ok(Step::To(end));
            }
            At::AfterItem => match byte {
                b',' => self.at = At::Item { first: false },
                b']' => self.end_items(),
                _ if is_space(byte) => {}
                _ => return Err(unexpected),
            },
            _ => unreachable!("feed hands the document's own fields to header_step"),
        }
        Ok(Step::Next)
    }

    /// The stream ended: `Err` when it ended inside a document.
    pub fn finish(&self) -> Result<(), ScanError> {
        match self.at {
            At::Between => Ok(()),
            _ => Err(ScanError::Truncated),
        }
    }

    fn end_items(&mut self) {
        self.header.push(b']');
        self.at = At::AfterValue;
    }

    fn end_document(&mut self, sink: &mut impl Sink) {
        sink.document(&self.header, self.listed);
        self.documents += 1;
        self.at = At::Between;
    }
}

#[cfg(test)]
mod tests {
    use super::{MAX_FIELD_DEPTH, MAX_ITEM_DEPTH, ScanError, Scanner, Sink};

    /// What a scanner found, as text.
    #[derive(Debug, Default, PartialEq)]
    struct Found {
        events: Vec<String>,
    }

    impl Sink for Found {
        fn items(&mut self, header: &[u8]) {
            self.events
                .push(format!("items after {}", String::from_utf8_lossy(header)));
        }
        fn item(&mut self, text: &[u8]) {
            self.events
                .push(format!("item {}", String::from_utf8_lossy(text)));
        }
        fn document(&mut self, header: &[u8], listed: bool) {
            let listed = if listed { "list" } else { "document" };
            self.events
                .push(format!("{listed} {}", String::from_utf8_lossy(header)));
        }
    }

    /// What scanning `text` in blocks of `block` bytes finds, and how it ends.
    fn scan(text: &[u8], block: usize) -> (Found, Result<usize, ScanError>) {
        let mut scanner = Scanner::new();
        let mut found = Found::default();
        for piece in text.chunks(block) {
            if let Err(error) = scanner.feed(piece, &mut found) {
                return (found, Err(error));
            }
        }
        let end = scanner.finish().map(|()| scanner.documents());
        (found, end)
    }

    const STREAM: &str = r#" {"apiVersion": "v1", "items": [ {"a": "}]\"{", "b": [1, {"c": null}]},
{"d":"é\\"} ], "kind":"List","metadata":{"x":[1,2]},"n":-1.5e3}
{"kind":"Pod","items":null,"s":"[{"}{}"#;

    #[test]
    fn items_and_documents_are_found_whole_whatever_the_blocks() {
        let expected = [
            r#"items after {"apiVersion": "v1", "items": ["#,
            r#"item {"a": "}]\"{", "b": [1, {"c": null}]}"#,
            r#"item {"d":"é\\"}"#,
            r#"list {"apiVersion": "v1", "items": [], "kind":"List","metadata":{"x":[1,2]},"n":-1.5e3}"#,
            r#"document {"kind":"Pod","items":null,"s":"[{"}"#,
            "document {}",
        ];
        for block in 1..=STREAM.len() {
            let (found, end) = scan(STREAM.as_bytes(), block);
            assert_eq!(found.events, expected, "blocks of {block}");
            assert_eq!(end, Ok(3), "blocks of {block}");
        }
    }

    #[test]
    fn what_the_scanner_does_not_follow_is_refused_where_it_is() {
        let unexpected = |offset, byte| Err(ScanError::Unexpected { offset, byte });
        let item_depth = MAX_ITEM_DEPTH as usize;
        let field_depth = MAX_FIELD_DEPTH as usize;
        let cases: [(&str, Result<usize, ScanError>); 10] = [
            (r#"{"items":[{} {}]}"#, unexpected(13, b'{')),
            (r#"{"items":[1]}"#, unexpected(10, b'1')),
            (r#"{"items":[{},]}"#, unexpected(13, b']')),
            (r#"{"a":1,}"#, unexpected(7, b'}')),
            (r#"{"a" 1}"#, unexpected(5, b'1')),
            (r#"[{"a":1}]"#, unexpected(0, b'[')),
            (
                r#"{"it\u0065ms":[]}"#,
                Err(ScanError::EscapedKey { offset: 4 }),
            ),
            (r#"{"items":[{"a":1}"#, Err(ScanError::Truncated)),
            // The item's own `{` is its first level; then `[`s from byte 15.
            (
                &format!(r#"{{"items":[{{"a":{}]}}"#, "[".repeat(100)),
                Err(ScanError::TooDeep {
                    offset: 15 + item_depth as u64 - 1,
                }),
            ),
            (
                &format!(r#"{{"a":{}"#, "[".repeat(200)),
                Err(ScanError::TooDeep {
                    offset: 5 + field_depth as u64,
                }),
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(scan(text.as_bytes(), 4).1, expected, "{text}");
        }
    }

    #[test]
    fn an_empty_list_and_whitespace_between_documents_are_read() {
        let (found, end) = scan(b"\n{ \"items\" : [ ] }\r\n\t{\"a\":true}\n", 3);
        assert_eq!(end, Ok(2));
        assert_eq!(
            found.events.last().map(String::as_str),
            Some(r#"document {"a":true}"#)
        );
        assert_eq!(found.events[1], r#"list { "items" : [] }"#);
    }
}
