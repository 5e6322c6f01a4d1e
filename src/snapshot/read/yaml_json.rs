//! Block-style YAML, as `kubectl get -o yaml` and generators write it, rewritten as JSON text,
//! so that a big YAML snapshot is decoded by the same serde_json visitors as a JSON one.
//!
//! Hand-written because no YAML parser we can have reads fast enough: serde-saphyr takes 8.6 s
//! and libyaml (serde_yaml) 6.3 s merely to parse the 139 MB 150,000-pod snapshot, before any
//! conversion, against a budget of three times the whole JSON command (about 3 s). This reads
//! a subset, its lines ended by LF or CR LF: block mappings and sequences indented with
//! spaces; one-line plain, single- and double-quoted scalars; `|` and `|-` literal scalars;
//! one-line flow collections (`[a, b]`, `{k: v}`); comments. Anything else (anchors, aliases, tags, multi-line flow scalars and
//! collections, folded scalars, duplicate keys, escapes JSON does not share, plain scalars
//! whose type is not certain) is `Unsupported`, and the caller reads that part with
//! serde-saphyr instead. What it takes it reads exactly as serde-saphyr does: the tests
//! compare the two on every form it takes, on every plain scalar it types, on every YAML
//! fixture of the project and on thousands of broken variants of them.

use std::borrow::Cow;

use super::structure::MAX_DEPTH;

/// A form this reader does not take; the caller reads the text with serde-saphyr instead,
/// which also words the problem if there is one.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Unsupported;

type Result<T> = std::result::Result<T, Unsupported>;

/// A document's top-level mapping: its fields other than `items`, as a JSON object, and the
/// text of each item of `items` (each starting with its `- `), when it has `items`.
pub(super) struct Document<'t> {
    pub(super) fields: String,
    pub(super) items: Option<Vec<&'t str>>,
}

/// What reading a list item found besides its JSON: whether it names `apiVersion` or `kind`
/// itself (an item that names neither is of its typed list's kind).
pub(super) struct ListItem {
    pub(super) typed: bool,
}

/// Read one YAML document (without its `---`) as a top-level mapping, leaving its `items`
/// as the text of each item.
pub(super) fn document(text: &str) -> Result<Document<'_>> {
    // The document's own mapping encloses its values.
    let mut cursor = Cursor::new(text, 1);
    // A document with no content is left to serde-saphyr; the loop checks every line's form.
    cursor.skip_blank()?.ok_or(Unsupported)?;
    let mut fields = String::new();
    let mut items = None;
    let mut keys = Vec::new();
    fields.push('{');
    while let Some(line) = cursor.skip_blank()? {
        if line.indent != 0 {
            return Err(Unsupported);
        }
        let (key, rest) = split_key(line.content)?.ok_or(Unsupported)?;
        if keys.contains(&key) {
            return Err(Unsupported);
        }
        cursor.next_line(&line);
        if key == "items" {
            items = Some(item_texts(&mut cursor, rest)?);
        } else {
            if fields.len() > 1 {
                fields.push(',');
            }
            json_string(&mut fields, &key);
            fields.push(':');
            value(&mut cursor, &mut fields, 0, rest)?;
        }
        keys.push(key);
    }
    fields.push('}');
    Ok(Document { fields, items })
}

/// The text of each item of `items:` whose value starts with `rest`: the lines from each
/// `- ` at the sequence's indentation to the next.
fn item_texts<'t>(cursor: &mut Cursor<'t>, rest: &str) -> Result<Vec<&'t str>> {
    match rest {
        "[]" => return Ok(Vec::new()),
        _ if rest.is_empty() || rest.starts_with('#') => {}
        _ => return Err(Unsupported),
    }
    let Some(first) = cursor.skip_blank()? else {
        return Ok(Vec::new());
    };
    if !is_entry(first.content) {
        // `items:` with nothing under it is null: no items.
        return if first.indent == 0 {
            Ok(Vec::new())
        } else {
            Err(Unsupported)
        };
    }
    let indent = first.indent;
    let mut starts = Vec::new();
    while let Some(line) = cursor.skip_blank()? {
        if line.indent < indent || (line.indent == indent && !is_entry(line.content)) {
            break;
        }
        if line.indent == indent {
            starts.push(line.start);
        }
        cursor.next_line(&line);
    }
    let end = cursor.pos;
    let text = cursor.text;
    let ends = starts.iter().skip(1).copied().chain([end]);
    Ok(starts
        .iter()
        .zip(ends)
        .map(|(&start, end)| &text[start..end])
        .collect())
}

/// Write one list item (its text from its `- `) to `out` as JSON.
pub(super) fn item(text: &str, out: &mut String) -> Result<ListItem> {
    // The document's mapping and its `items` enclose the item.
    let mut cursor = Cursor::new(text, 2);
    let line = cursor.skip_blank()?.ok_or(Unsupported)?;
    let content = entry_content(&mut cursor, &line)?;
    if split_key(content)?.is_none() {
        return Err(Unsupported);
    }
    let indent = cursor.col;
    let typed = mapping(&mut cursor, out, indent)?;
    if cursor.skip_blank()?.is_some() {
        return Err(Unsupported);
    }
    Ok(ListItem { typed })
}

/// A line, or the rest of one after a sequence entry's `- `.
#[derive(Clone, Copy)]
struct Line<'t> {
    /// The column of its first character other than a space.
    indent: usize,
    /// From that character to the end of the line, without the line break.
    content: &'t str,
    /// Where the line (or its rest) starts in the text.
    start: usize,
    /// Where `content` starts in the text.
    content_start: usize,
    /// Where the next line starts (the end of the text after the last).
    next: usize,
}

struct Cursor<'t> {
    text: &'t str,
    /// The keys of the mappings being read, innermost last (one vector for all of them, not
    /// one allocation per mapping).
    keys: Vec<Cow<'t, str>>,
    /// Where the rest of the current line starts.
    pos: usize,
    /// The column of `pos`: 0 at the start of a line, more after a `- `.
    col: usize,
    /// How many mappings and sequences enclose `pos`, from the document's.
    depth: usize,
}

impl<'t> Cursor<'t> {
    fn new(text: &'t str, depth: usize) -> Cursor<'t> {
        Cursor {
            text,
            keys: Vec::new(),
            pos: 0,
            col: 0,
            depth,
        }
    }

    /// Into a mapping or a sequence; one nested deeper than [`MAX_DEPTH`] is left to
    /// serde-saphyr, which refuses it, so that reading recurses a bounded number of times.
    fn enter(&mut self) -> Result<()> {
        self.depth = deeper(self.depth)?;
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// The current line, or `None` at the end of the text.
    fn line(&self) -> Option<Line<'t>> {
        if self.pos >= self.text.len() {
            return None;
        }
        let rest = &self.text[self.pos..];
        let (line, next) = match rest.find('\n') {
            Some(end) => (&rest[..end], self.pos + end + 1),
            None => (rest, self.text.len()),
        };
        // CR LF ends a line as LF does (the caller leaves a carriage return alone to
        // serde-saphyr).
        let line = line.strip_suffix('\r').unwrap_or(line);
        let content = line.trim_start_matches(' ');
        let spaces = line.len() - content.len();
        Some(Line {
            indent: self.col + spaces,
            content,
            start: self.pos,
            content_start: self.pos + spaces,
            next,
        })
    }

    /// Past blank and comment lines to the next line with content, if any; a tab where
    /// indentation is is `Unsupported`.
    fn skip_blank(&mut self) -> Result<Option<Line<'t>>> {
        while let Some(line) = self.line() {
            if line.content.starts_with('\t') {
                return Err(Unsupported);
            }
            if !line.content.is_empty() && !line.content.starts_with('#') {
                return Ok(Some(line));
            }
            self.next_line(&line);
        }
        Ok(None)
    }

    fn next_line(&mut self, line: &Line) {
        self.pos = line.next;
        self.col = 0;
    }
}

/// One level deeper than `depth`, when that is within [`MAX_DEPTH`].
fn deeper(depth: usize) -> Result<usize> {
    if depth < MAX_DEPTH {
        Ok(depth + 1)
    } else {
        Err(Unsupported)
    }
}

/// Whether a line's content is a sequence entry (`- …` or a lone `-`).
fn is_entry(content: &str) -> bool {
    content == "-" || content.starts_with("- ") || content.starts_with("-\t")
}

/// A mapping key and what follows its `:`, when the content starts with one. Keys are plain
/// or quoted one-line scalars; forms serde-saphyr would read otherwise are `Unsupported`.
fn split_key(content: &str) -> Result<Option<(Cow<'_, str>, &str)>> {
    let (key, after) = match content.as_bytes().first() {
        Some(b'"' | b'\'') => {
            let Some((key, used)) = quoted(content)? else {
                return Ok(None);
            };
            (key, &content[used..])
        }
        Some(b'[' | b'{') => return Ok(None),
        _ if !plain_may_start(content) => return Err(Unsupported),
        _ => {
            let Some(colon) = key_colon(content) else {
                return Ok(None);
            };
            let key = &content[..colon];
            if comment_mark(key).is_some() || key.ends_with(' ') || key.contains('\t') {
                return Err(Unsupported);
            }
            // serde-saphyr refuses a null key, and merges `<<`.
            if matches!(key, "~" | "null" | "Null" | "NULL" | "<<") {
                return Err(Unsupported);
            }
            (Cow::Borrowed(key), &content[colon..])
        }
    };
    match after.strip_prefix(':') {
        Some("") => Ok(Some((key, ""))),
        Some(rest) if rest.starts_with(' ') => Ok(Some((key, rest.trim_start_matches(' ')))),
        _ => Ok(None),
    }
}

/// Where the `:` ending a plain key is: the first one followed by a space or the line's end.
fn key_colon(content: &str) -> Option<usize> {
    let bytes = content.as_bytes();
    let mut from = 0;
    while let Some(found) = content[from..].find(':') {
        let at = from + found;
        if matches!(bytes.get(at + 1), None | Some(b' ')) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// A quoted scalar at the start of `text`, and how many bytes it takes with its quotes;
/// `None` when it does not end on this line (a multi-line scalar is read by serde-saphyr).
fn quoted(text: &str) -> Result<Option<(Cow<'_, str>, usize)>> {
    if text.starts_with('"') {
        double_quoted(text)
    } else {
        Ok(single_quoted(text))
    }
}

/// A double-quoted scalar. Only the escapes JSON shares with YAML, with the same meaning, are
/// taken, so that the text between the quotes can be written to JSON as it is.
fn double_quoted(text: &str) -> Result<Option<(Cow<'_, str>, usize)>> {
    let bytes = text.as_bytes();
    let mut at = 1;
    let mut plain = true;
    while at < bytes.len() {
        match bytes[at] {
            b'"' => {
                let inner = &text[1..at];
                let value = if plain {
                    Cow::Borrowed(inner)
                } else {
                    Cow::Owned(unescape(inner)?)
                };
                return Ok(Some((value, at + 1)));
            }
            b'\\' => {
                plain = false;
                at += escape_length(&bytes[at..])?;
            }
            _ => at += 1,
        }
    }
    Ok(None)
}

/// The length of the escape at the start of `bytes`, when JSON reads it as YAML does.
fn escape_length(bytes: &[u8]) -> Result<usize> {
    match bytes.get(1) {
        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(2),
        Some(b'u') => {
            let hex = bytes.get(2..6).ok_or(Unsupported)?;
            let hex = std::str::from_utf8(hex).map_err(|_| Unsupported)?;
            let code = u32::from_str_radix(hex, 16).map_err(|_| Unsupported)?;
            // A surrogate is one half of a pair, which YAML does not write this way.
            if (0xD800..0xE000).contains(&code) {
                return Err(Unsupported);
            }
            Ok(6)
        }
        _ => Err(Unsupported),
    }
}

/// The text of a double-quoted scalar whose escapes `escape_length` took.
fn unescape(inner: &str) -> Result<String> {
    serde_json::from_str(&format!("\"{inner}\"")).map_err(|_| Unsupported)
}

/// A single-quoted scalar (`''` is a quote), when it ends on this line.
fn single_quoted(text: &str) -> Option<(Cow<'_, str>, usize)> {
    let bytes = text.as_bytes();
    let mut at = 1;
    let mut doubled = false;
    while at < bytes.len() {
        if bytes[at] == b'\'' {
            if bytes.get(at + 1) == Some(&b'\'') {
                doubled = true;
                at += 2;
                continue;
            }
            let inner = &text[1..at];
            let value = if doubled {
                Cow::Owned(inner.replace("''", "'"))
            } else {
                Cow::Borrowed(inner)
            };
            return Some((value, at + 1));
        }
        at += 1;
    }
    None
}

/// A mapping whose keys are at `indent`, the cursor on its first key. Returns whether it
/// has an `apiVersion` or `kind` key.
fn mapping(cursor: &mut Cursor, out: &mut String, indent: usize) -> Result<bool> {
    cursor.enter()?;
    let outer = cursor.keys.len();
    out.push('{');
    while let Some(line) = cursor.skip_blank()? {
        if line.indent < indent {
            break;
        }
        if line.indent > indent || is_entry(line.content) {
            return Err(Unsupported);
        }
        let (key, rest) = split_key(line.content)?.ok_or(Unsupported)?;
        if cursor.keys[outer..].contains(&key) {
            return Err(Unsupported);
        }
        if cursor.keys.len() > outer {
            out.push(',');
        }
        json_string(out, &key);
        out.push(':');
        cursor.keys.push(key);
        cursor.next_line(&line);
        value(cursor, out, indent, rest)?;
    }
    out.push('}');
    let typed = cursor.keys[outer..]
        .iter()
        .any(|key| key == "apiVersion" || key == "kind");
    cursor.keys.truncate(outer);
    cursor.leave();
    Ok(typed)
}

/// The value of a mapping key at `indent`: `rest` of its line, or the lines below it.
/// The cursor is on the line after the key's.
fn value(cursor: &mut Cursor, out: &mut String, indent: usize, rest: &str) -> Result<()> {
    if rest.is_empty() || rest.starts_with('#') {
        return nested(cursor, out, indent, true);
    }
    if rest.starts_with('|') {
        return literal(cursor, out, indent, rest);
    }
    scalar(out, rest, cursor.depth)?;
    no_continuation(cursor, indent)
}

/// The value written on the lines below a key or an entry at `indent`: more indented, or a
/// sequence at the key's own indentation (`same_indent_sequence`), else null.
fn nested(
    cursor: &mut Cursor,
    out: &mut String,
    indent: usize,
    same_indent_sequence: bool,
) -> Result<()> {
    let Some(line) = cursor.skip_blank()? else {
        out.push_str("null");
        return Ok(());
    };
    let deeper = line.indent > indent;
    let sequence_here = same_indent_sequence && line.indent == indent && is_entry(line.content);
    if !deeper && !sequence_here {
        out.push_str("null");
        return Ok(());
    }
    if is_entry(line.content) {
        return sequence(cursor, out, line.indent);
    }
    if split_key(line.content)?.is_some() {
        mapping(cursor, out, line.indent)?;
        return Ok(());
    }
    // A scalar on a line of its own, perhaps continued on the next.
    Err(Unsupported)
}

/// A sequence whose entries' `-` are at `indent`, the cursor on its first entry.
fn sequence(cursor: &mut Cursor<'_>, out: &mut String, indent: usize) -> Result<()> {
    cursor.enter()?;
    out.push('[');
    let mut first = true;
    while let Some(line) = cursor.skip_blank()? {
        if line.indent < indent || (line.indent == indent && !is_entry(line.content)) {
            break;
        }
        if line.indent > indent {
            return Err(Unsupported);
        }
        if !first {
            out.push(',');
        }
        first = false;
        entry(cursor, out, &line)?;
    }
    out.push(']');
    cursor.leave();
    Ok(())
}

/// One sequence entry, `line` being its `- …`.
fn entry<'t>(cursor: &mut Cursor<'t>, out: &mut String, line: &Line<'t>) -> Result<()> {
    let content = entry_content(cursor, line)?;
    if content.is_empty() || content.starts_with('#') {
        cursor.next_line(line);
        return nested(cursor, out, line.indent, false);
    }
    let indent = cursor.col;
    if is_entry(content) {
        return sequence(cursor, out, indent);
    }
    if content.starts_with('|') {
        cursor.next_line(line);
        return literal(cursor, out, line.indent, content);
    }
    if split_key(content)?.is_some() {
        mapping(cursor, out, indent)?;
        return Ok(());
    }
    cursor.next_line(line);
    scalar(out, content, cursor.depth)?;
    no_continuation(cursor, line.indent)
}

/// Moves the cursor past an entry's `- ` (to the column its content starts at) and returns
/// that content.
fn entry_content<'t>(cursor: &mut Cursor<'t>, line: &Line<'t>) -> Result<&'t str> {
    if !is_entry(line.content) {
        return Err(Unsupported);
    }
    let after = &line.content[1..];
    let content = after.trim_start_matches(' ');
    if content.starts_with('\t') {
        return Err(Unsupported);
    }
    let skipped = line.content.len() - content.len();
    cursor.pos = line.content_start + skipped;
    cursor.col = line.indent + skipped;
    Ok(content)
}

/// After a one-line value of a key or entry at `indent`, the next line must not be more
/// indented: that would continue a multi-line scalar, which serde-saphyr reads. The cursor is
/// on the line after the value's.
fn no_continuation(cursor: &mut Cursor, indent: usize) -> Result<()> {
    match cursor.skip_blank()? {
        Some(next) if next.indent > indent => Err(Unsupported),
        _ => Ok(()),
    }
}

/// A `|` or `|-` literal scalar of a key or entry at `indent`, `header` the rest of its line:
/// the following lines indented as the first of them is, that indentation removed. The cursor
/// is on the line after the header's.
fn literal(cursor: &mut Cursor, out: &mut String, indent: usize, header: &str) -> Result<()> {
    let chomp = match header.split_once(' ') {
        Some((chomp, comment)) if comment.trim_start_matches(' ').starts_with('#') => chomp,
        Some(_) => return Err(Unsupported),
        None => header,
    };
    let clip = match chomp {
        "|" => true,
        "|-" => false,
        _ => return Err(Unsupported),
    };
    let lines = literal_lines(cursor, indent)?;
    let mut text = lines.join("\n");
    if clip && !text.is_empty() {
        text.push('\n');
    }
    json_string(out, &text);
    Ok(())
}

/// The lines of a literal scalar of a key or entry at `indent`, their indentation removed,
/// without the empty lines at its end; the cursor moves past them.
fn literal_lines<'t>(cursor: &mut Cursor<'t>, indent: usize) -> Result<Vec<&'t str>> {
    let mut lines: Vec<&'t str> = Vec::new();
    // The indentation of the content: that of its first line that is not empty.
    let mut width: Option<usize> = None;
    let mut widest_leading_blank = 0;
    while let Some(line) = cursor.line() {
        let raw = cursor.text[line.start..line.next].trim_end_matches('\n');
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        if line.content.is_empty() {
            match width {
                None => widest_leading_blank = widest_leading_blank.max(raw.len()),
                // Spaces past the indentation are content, which serde-saphyr reads.
                Some(width) if raw.len() > width => return Err(Unsupported),
                Some(_) => {}
            }
            lines.push("");
            cursor.next_line(&line);
            continue;
        }
        let width = *width.get_or_insert(line.indent);
        if width <= indent || line.indent < width {
            break;
        }
        // A tab right after the indentation is content too: left to serde-saphyr.
        if line.indent == width && line.content.starts_with('\t') {
            return Err(Unsupported);
        }
        lines.push(&raw[width..]);
        cursor.next_line(&line);
    }
    if width.is_some_and(|width| width > indent && widest_leading_blank > width) {
        return Err(Unsupported);
    }
    while lines.last() == Some(&"") {
        lines.pop();
    }
    Ok(lines)
}

/// A one-line value: quoted, `{}`, `[]`, or plain, with a comment after it perhaps; `depth`
/// collections enclose it.
fn scalar(out: &mut String, text: &str, depth: usize) -> Result<()> {
    match text.as_bytes()[0] {
        b'"' | b'\'' => {
            let (value, used) = quoted(text)?.ok_or(Unsupported)?;
            only_comment(&text[used..])?;
            json_string(out, &value);
            Ok(())
        }
        b'{' | b'[' => {
            let used = flow(out, text, depth)?;
            only_comment(&text[used..])
        }
        _ => plain(out, text),
    }
}

/// A flow collection that ends on its line (`[a, b]`, `{k: v, l: [1]}`), its scalars taken as
/// in block style, `depth` collections enclosing it; how many bytes it takes.
fn flow(out: &mut String, text: &str, depth: usize) -> Result<usize> {
    let depth = deeper(depth)?;
    let bytes = text.as_bytes();
    let (close, mapping) = match bytes[0] {
        b'[' => (b']', false),
        _ => (b'}', true),
    };
    out.push(if mapping { '{' } else { '[' });
    let mut at = flow_space(text, 1);
    let mut keys: Vec<Cow<str>> = Vec::new();
    let mut first = true;
    while bytes.get(at) != Some(&close) {
        if !first {
            out.push(',');
        }
        first = false;
        if mapping {
            let (key, used) = flow_key(&text[at..])?;
            if keys.contains(&key) {
                return Err(Unsupported);
            }
            json_string(out, &key);
            out.push(':');
            keys.push(key);
            at = flow_space(text, at + used);
        }
        at += flow_node(out, &text[at..], depth)?;
        at = flow_space(text, at);
        match bytes.get(at) {
            Some(b',') => at = flow_space(text, at + 1),
            Some(&byte) if byte == close => {}
            _ => return Err(Unsupported),
        }
    }
    out.push(close as char);
    Ok(at + 1)
}

/// Past the spaces from `at`.
fn flow_space(text: &str, at: usize) -> usize {
    at + text[at..].len() - text[at..].trim_start_matches(' ').len()
}

/// A key of a flow mapping and its `: `; how many bytes they take.
fn flow_key(text: &str) -> Result<(Cow<'_, str>, usize)> {
    let (key, used) = match text.as_bytes().first() {
        Some(b'"' | b'\'') => quoted(text)?.ok_or(Unsupported)?,
        _ => {
            let end = text.find(": ").ok_or(Unsupported)?;
            let key = &text[..end];
            let odd = key.ends_with(' ') || key.contains([',', '[', ']', '{', '}', '#', '\t']);
            if key.is_empty() || odd {
                return Err(Unsupported);
            }
            if plain_type(key) == Some(PlainType::Null) || !plain_may_start(key) {
                return Err(Unsupported);
            }
            (Cow::Borrowed(key), end)
        }
    };
    if !text[used..].starts_with(": ") {
        return Err(Unsupported);
    }
    Ok((key, used + 2))
}

/// One value inside a flow collection at `depth`; how many bytes it takes.
fn flow_node(out: &mut String, text: &str, depth: usize) -> Result<usize> {
    match text.as_bytes().first() {
        Some(b'[' | b'{') => flow(out, text, depth),
        Some(b'"' | b'\'') => {
            let (value, used) = quoted(text)?.ok_or(Unsupported)?;
            json_string(out, &value);
            Ok(used)
        }
        Some(_) => {
            let end = text.find([',', ']', '}']).unwrap_or(text.len());
            let value = text[..end].trim_end_matches(' ');
            if value.is_empty()
                || value.contains(['[', '{', '#', '\t'])
                || key_colon(value).is_some()
            {
                return Err(Unsupported);
            }
            plain(out, value)?;
            Ok(end)
        }
        None => Err(Unsupported),
    }
}

/// What follows a quoted scalar or `{}`: nothing, or a comment after a space.
fn only_comment(rest: &str) -> Result<()> {
    let trimmed = rest.trim_start_matches(' ');
    if trimmed.is_empty() || (trimmed.starts_with('#') && trimmed.len() < rest.len()) {
        Ok(())
    } else {
        Err(Unsupported)
    }
}

/// A plain scalar, up to a comment, written as serde-saphyr types it: a string, a decimal
/// integer, `true`, `false` or null; any other form is `Unsupported`.
fn plain(out: &mut String, text: &str) -> Result<()> {
    let text = match comment_mark(text) {
        Some(comment) => &text[..comment],
        None => text,
    }
    .trim_end_matches(' ');
    if !plain_may_start(text) {
        return Err(Unsupported);
    }
    if key_colon(text).is_some() || text.contains('\t') {
        return Err(Unsupported);
    }
    match plain_type(text) {
        Some(PlainType::String) => json_string(out, text),
        Some(PlainType::Literal) => out.push_str(text),
        Some(PlainType::Null) => out.push_str("null"),
        None => return Err(Unsupported),
    }
    Ok(())
}

/// Where a comment starts: the first `#` after a space.
fn comment_mark(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    (1..bytes.len()).find(|&at| bytes[at] == b'#' && bytes[at - 1] == b' ')
}

/// Whether a plain scalar may start as `text` does: not with an indicator, but for `-`, `?`
/// and `:` followed by a character other than a space.
fn plain_may_start(text: &str) -> bool {
    let bytes = text.as_bytes();
    match bytes.first() {
        None => false,
        Some(b'-' | b'?' | b':') => bytes.len() > 1 && bytes[1] != b' ',
        Some(byte) => !b",[]{}#&*!|>'\"%@`".contains(byte),
    }
}

/// How a plain scalar is written in JSON.
#[derive(Debug, PartialEq, Eq)]
enum PlainType {
    /// A string.
    String,
    /// As it is: a decimal integer, `true` or `false`.
    Literal,
    /// `null`.
    Null,
}

/// The words serde-saphyr reads as booleans or null, in any case.
const WORDS: [&str; 9] = ["true", "false", "yes", "no", "on", "off", "y", "n", "null"];

/// The type serde-saphyr gives a plain scalar, where it is certain; `None` otherwise.
fn plain_type(text: &str) -> Option<PlainType> {
    match text {
        "true" | "false" => return Some(PlainType::Literal),
        "null" | "~" => return Some(PlainType::Null),
        _ => {}
    }
    if WORDS.iter().any(|word| word.eq_ignore_ascii_case(text)) {
        return None;
    }
    if !matches!(text.as_bytes()[0], b'0'..=b'9' | b'+' | b'-' | b'.' | b'~') {
        return Some(PlainType::String);
    }
    if decimal_integer(text) {
        return Some(PlainType::Literal);
    }
    if number_like(text) {
        None
    } else {
        Some(PlainType::String)
    }
}

/// Whether a plain scalar that starts like a number may be one in some form serde-saphyr reads
/// (decimal, `0x`, `0o`, `0b`, with `_`, a point or an exponent, `.inf`, `.nan`): what is
/// not (`128Mi`, `100m`, a UUID, `10.0.0.1`, `12:30`) is a string.
fn number_like(text: &str) -> bool {
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    let bytes = unsigned.as_bytes();
    if radix_number(bytes) || unsigned.starts_with('.') && bytes.iter().any(u8::is_ascii_alphabetic)
    {
        return true;
    }
    let dots = bytes.iter().filter(|&&b| b == b'.').count();
    let exponent = |at: usize| at > 0 && matches!(bytes[at - 1], b'e' | b'E');
    let signs_inside = (0..bytes.len()).any(|at| matches!(bytes[at], b'+' | b'-') && !exponent(at));
    let letters: Vec<u8> = bytes
        .iter()
        .copied()
        .filter(u8::is_ascii_alphabetic)
        .collect();
    let only_an_exponent = letters.is_empty() || letters.eq_ignore_ascii_case(b"e");
    let numeric = bytes
        .iter()
        .all(|&b| b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'+' | b'-' | b'e' | b'E'));
    numeric && only_an_exponent && dots < 2 && !signs_inside
}

/// Whether `bytes` are `0x`, `0o` or `0b` and digits of that base (with `_`): a UUID or a hash
/// that merely starts so (`0b6f0e4e-…`) is not.
fn radix_number(bytes: &[u8]) -> bool {
    let digit: fn(&u8) -> bool = match bytes.get(..2) {
        Some(b"0x" | b"0X") => u8::is_ascii_hexdigit,
        Some(b"0o" | b"0O") => |b| (b'0'..=b'7').contains(b),
        Some(b"0b" | b"0B") => |b| matches!(b, b'0' | b'1'),
        _ => return false,
    };
    bytes.len() > 2 && bytes[2..].iter().all(|b| digit(b) || *b == b'_')
}

/// `0`, or an optional `-` and up to 18 digits without a leading zero: an `i64` that JSON
/// writes as YAML does.
fn decimal_integer(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let bytes = digits.as_bytes();
    if text == "0" {
        return true;
    }
    !bytes.is_empty()
        && bytes.len() <= 18
        && bytes[0] != b'0'
        && bytes.iter().all(u8::is_ascii_digit)
}

/// `text` as a JSON string.
fn json_string(out: &mut String, text: &str) {
    out.push('"');
    let mut from = 0;
    for (at, byte) in text.bytes().enumerate() {
        let escaped = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\t' => "\\t",
            b'\r' => "\\r",
            0..0x20 => {
                out.push_str(&text[from..at]);
                out.push_str(&format!("\\u{byte:04x}"));
                from = at + 1;
                continue;
            }
            _ => continue,
        };
        out.push_str(&text[from..at]);
        out.push_str(escaped);
        from = at + 1;
    }
    out.push_str(&text[from..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::{MAX_DEPTH, PlainType, Unsupported, document, item, plain_type};

    /// What serde-saphyr makes of `text` as the value of a key, as the snapshot reader runs it.
    fn by_serde_saphyr(text: &str) -> Option<Value> {
        let document = format!("k: {text}\n");
        let options = crate::snapshot::read::yaml_options::yaml_options(document.len());
        let read: std::collections::BTreeMap<String, Value> =
            serde_saphyr::from_str_with_options(&document, options).ok()?;
        read.get("k").cloned()
    }

    #[test]
    fn a_plain_scalar_is_typed_as_serde_saphyr_types_it_or_left_to_it() {
        let candidates = [
            "true",
            "True",
            "TRUE",
            "tRUE",
            "false",
            "FALSE",
            "yes",
            "No",
            "on",
            "OFF",
            "y",
            "N",
            "null",
            "Null",
            "NULL",
            "nULL",
            "~",
            "~x",
            "nan",
            "NaN",
            "inf",
            "Inf",
            ".inf",
            "-.Inf",
            "+.inf",
            ".nan",
            ".NaN",
            "Infinity",
            "0",
            "10",
            "-5",
            "+5",
            "-0",
            "007",
            "08",
            "00",
            "0777",
            "0x1F",
            "0xff",
            "0xZZ",
            "0o17",
            "0b101",
            "0b",
            "0x",
            "1_000",
            "1__0",
            "_1",
            "12:30",
            "190:20:30",
            "1.5",
            "1.",
            ".5",
            "-.5",
            "1e3",
            "1E3",
            "1e+3",
            "1e",
            "12e",
            "0e0",
            "-0.0",
            "128Mi",
            "100m",
            "2Gi",
            "1Ki",
            "1Ei",
            "500n",
            "1inf",
            "0.5",
            "1.25",
            "10.244.1.5",
            "0.1.2",
            "1,000",
            "2001-12-14",
            "2001-12-14t21:59:43.10-05:00",
            "2026-11-01T00:00:00Z",
            "9223372036854775807",
            "922337203685477580",
            "99999999999999999999",
            "-9223372036854775809",
            "abc",
            "a b",
            "nginx:1.25",
            "/dev/termination-log",
            "=",
            "+",
            "--",
            "-foo",
            ".git",
            ".foo",
            "fd00::1",
            "2001:db8::1",
            "app.kubernetes.io/name",
            "é",
            "x-y_z",
            "Always",
            "IfNotPresent",
            "ClusterFirst",
            "RollingUpdate",
            "25%",
            "$(VAR)",
            "a\\b",
            "a'b",
            "a\"b",
            "5d8f7c9b6",
            "42110001-aaaa-bbbb-cccc-000000000001",
            "02001142-AAAA-BBBB-CCCC-000000000002",
            "maintenance",
            "infra",
            "1-2",
            "+-5",
            "1e5e5",
            "123abc",
            "0E0",
            "1.5e-3",
            "1e-3x",
            "0.0.0.0",
            "4.0Gi",
            "-1Gi",
            "1e",
        ];
        let mut typed = 0;
        for text in candidates {
            let expected = by_serde_saphyr(text);
            let Some(kind) = plain_type(text) else {
                continue;
            };
            typed += 1;
            let ours = match kind {
                PlainType::String => Value::String(text.to_string()),
                PlainType::Literal => serde_json::from_str(text).expect("JSON"),
                PlainType::Null => Value::Null,
            };
            assert_eq!(Some(ours), expected, "{text}");
        }
        assert!(typed > 40, "most forms are typed here: {typed}");
    }

    /// `text` read here and by serde-saphyr: `None` when this reader does not take it.
    fn both(text: &str) -> (Option<Value>, Value) {
        let options = crate::snapshot::read::yaml_options::yaml_options(text.len());
        let expected: Value =
            serde_saphyr::from_str_with_options(text, options).expect("the test's YAML is valid");
        let ours = document(text).ok().map(|read| {
            assert!(read.items.is_none(), "no items in these tests");
            serde_json::from_str(&read.fields).expect("our output is JSON")
        });
        (ours, expected)
    }

    #[test]
    fn block_forms_read_as_serde_saphyr_reads_them() {
        let documents = [
            "a: 1\nb: \"two\"\nc: 'three'\nd: four\n",
            "a:\n  b:\n    c: d\n  e: f\ng: h\n",
            "list:\n- a\n- b\nnext: 1\n",
            "list:\n  - a\n  - b\n",
            "list:\n- a: 1\n  b: 2\n- c: 3\n",
            "list:\n- - a\n  - b\n- - c\n",
            "list:\n-\n  a: 1\n- \n- x\n",
            "empty:\nnothing: ~\n",
            "a: {}\nb: []\nc: \"\"\nd: ''\n",
            "a: [x, 'y', \"z\", 1, true, ~]\nb: {k: v, \"q\": [1, {n: m}], e: {}}\n",
            "a: [ spaced , items ]  # comment\nb: {k: v,}\nc: [a,]\n",
            "list:\n- {name: a, value: \"1\"}\n- [nested, [deeper]]\n",
            "a: 'it''s'\nb: \"say \\\"hi\\\" \\\\ \\/ \\t \\n \\u00e9\"\n",
            "a: x # a comment\n# a line of comment\nb: \"y\" # another\nc: {} # and\n",
            "a: |\n  line one\n    indented\n\n  line three\n\nb: 1\n",
            "a: |-\n  no newline\n  at the end\nb: 1\n",
            "a: |\n\n  after an empty line\n",
            "a: |\nb: 1\n",
            "list:\n- |\n  in a list\n- |-\n  stripped\n",
            "\"quoted key\": 1\n'single': 2\nkey with spaces: 3\n",
            "a:   spaced value   \n",
            "url: http://example.com:8080/path\n",
            "a: b:c\n",
            "tab: \"a\tb\"\n",
            "deep:\n  - name: x\n    env:\n    - name: A\n      value: \"1\"\n    ports:\n    - 80\n",
            "# leading comment\n\na: 1\n",
            "unicode: ünïcödé € 𝄞\n",
        ];
        for text in documents {
            let (ours, expected) = both(text);
            assert_eq!(ours, Some(expected.clone()), "{text}");
            // CR LF ends lines as LF does, in literal text too.
            let crlf = text.replace('\n', "\r\n");
            let (ours, crlf_expected) = both(&crlf);
            assert_eq!(crlf_expected, expected, "{crlf:?}");
            assert_eq!(ours, Some(expected), "{crlf:?}");
        }
    }

    #[test]
    fn forms_it_does_not_take_are_left_to_serde_saphyr() {
        let documents = [
            "a: &anchor 1\nb: *anchor\n",
            "a: !!str 1\n",
            "a: {b: 1, b: 2}\n",
            "a: [1,\n  2]\n",
            "a: [b: 1]\n",
            "a: {b}\n",
            "a: [x, , y]\n",
            "a: {b : 1}\n",
            "a: [1.5]\n",
            "a: [&x 1, *x]\n",
            "a: >\n  folded\n  text\n",
            "a: |+\n  kept\n\n",
            "a: |2\n    indented\n",
            "a: plain\n  continued\n",
            "a: \"quoted\n  continued\"\n",
            "a: 1\na: 2\n",
            "a:\n\tb: 1\n",
            "? complex\n: key\n",
            "<<: {a: 1}\n",
            "a: yes\n",
            "a: 1.5\n",
            "a: 0x10\n",
            "a:\n  scalar on its own line\n",
            "a: \"\\x41\"\n",
            "a: \"\\ud83d\"\n",
        ];
        for text in documents {
            assert!(document(text).is_err(), "{text}");
        }
        // Not YAML at all: refused here too.
        for text in ["a: b: c\n", "a: 1\n b: 2\n", "- a\nb: 1\n", "a: \"open\n"] {
            assert!(document(text).is_err(), "{text}");
        }
    }

    #[test]
    fn nesting_past_the_limit_is_left_to_serde_saphyr_without_following_it() {
        let at_limit = format!(
            "a: {}{}\n",
            "[".repeat(MAX_DEPTH - 1),
            "]".repeat(MAX_DEPTH - 1)
        );
        assert!(document(&at_limit).is_ok());
        let one_more = format!("a: {}{}\n", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(document(&one_more).is_err());
        // Far more than a thread's stack would hold, were each level a call.
        for text in [
            format!("a: {}\n", "[".repeat(100_000)),
            format!("a:\n{}x\n", "- ".repeat(100_000)),
            format!("a: {}\n", "{b: ".repeat(100_000)),
        ] {
            assert_eq!(document(&text).err(), Some(Unsupported));
        }
        // The List's mapping, its items and the item's mapping enclose `a`'s lists.
        let item_at_limit = format!("- a:\n{}x\n", "  - ".repeat(MAX_DEPTH - 3));
        assert!(item(&item_at_limit, &mut String::new()).is_ok());
        let item_too_deep = format!("- a:\n{}x\n", "  - ".repeat(MAX_DEPTH - 2));
        assert_eq!(
            item(&item_too_deep, &mut String::new()).err(),
            Some(Unsupported)
        );
    }

    #[test]
    fn a_list_item_names_its_type_or_not() {
        let mut out = String::new();
        let read = item(
            "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: a\n",
            &mut out,
        )
        .expect("taken");
        assert!(read.typed);
        let value: Value = serde_json::from_str(&out).expect("JSON");
        assert_eq!(value["metadata"]["name"], "a");
        out.clear();
        let read = item("- metadata:\n    name: b\n", &mut out).expect("taken");
        assert!(!read.typed);
        // An item whose nested mapping names `kind` does not name its own type.
        out.clear();
        let read = item("- spec:\n    kind: x\n", &mut out).expect("taken");
        assert!(!read.typed);
        out.clear();
        assert_eq!(item("- just a scalar\n", &mut out).err(), Some(Unsupported));
        assert_eq!(item("- a: 1\n- b: 2\n", &mut out).err(), Some(Unsupported));
    }

    #[test]
    fn a_documents_items_are_the_text_of_each_entry() {
        let text = "apiVersion: v1\nitems:\n- a: 1\n  b: 2\n# between\n- c: 3\nkind: List\n";
        let read = document(text).expect("taken");
        assert_eq!(
            read.items,
            Some(vec!["- a: 1\n  b: 2\n# between\n", "- c: 3\n"])
        );
        let fields: Value = serde_json::from_str(&read.fields).expect("JSON");
        assert_eq!(
            fields,
            serde_json::json!({"apiVersion": "v1", "kind": "List"})
        );
        let indented = document("items:\n  - a: 1\n  - b: 2\nkind: List\n").expect("taken");
        assert_eq!(indented.items, Some(vec!["  - a: 1\n", "  - b: 2\n"]));
        for empty in ["items: []\n", "items:\nkind: List\n", "items:\n"] {
            assert_eq!(
                document(empty).expect("taken").items,
                Some(vec![]),
                "{empty}"
            );
        }
    }
}
