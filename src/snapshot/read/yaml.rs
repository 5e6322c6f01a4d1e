//! Whole YAML text: through JSON where [`yaml_items`](super::yaml_items) takes its form, else
//! document by document by serde-saphyr, which also words every problem.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::position::{self, ParseError};
use super::sink::{ItemType, Objects, PathStep, Source, object};
use super::yaml_items;
use super::yaml_options::yaml_options;
use super::yaml_split::{self, Part, line_ended};
use crate::snapshot::model::Interner;

/// YAML is read through JSON where the text has the block form `yaml_json` takes (all that
/// kubectl writes); otherwise, and to word any problem, documents are read one at a time by
/// serde-saphyr's streaming reader, list items converted as they are read.
pub(super) fn read_yaml(text: &str) -> Result<Objects, ParseError> {
    read_yaml_as(text).map_err(YamlFailure::error)
}

/// Why YAML text did not read.
pub(super) enum YamlFailure {
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
pub(super) fn read_yaml_as(text: &str) -> Result<Objects, YamlFailure> {
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
/// Each document is read on its own, under limits of its own size (`yaml_split`), so that a
/// file's other documents do not raise what one may cost.
fn yaml_documents(text: &str) -> Result<Objects, YamlFailure> {
    let mut objects = Objects::default();
    for part in yaml_split::parts(text) {
        objects.extend(part_documents(text, &part)?);
    }
    Ok(objects)
}

/// The objects of the documents of `part` of `text`, problems positioned in `text`. A part
/// that ends the file without a line break is read with one, as kubectl's reader reads it
/// (`line_ended`); a problem in it is worded from its own text, so that it is positioned where
/// the file has it.
fn part_documents(text: &str, part: &Part) -> Result<Objects, YamlFailure> {
    let ended = line_ended(part.text);
    match documents_of(text, part.lines_before, &ended) {
        Err(failure) if ended.len() != part.text.len() => {
            Err(documents_of(text, part.lines_before, part.text)
                .err()
                .unwrap_or(failure))
        }
        read => read,
    }
}

/// The objects of `documents`, which follow the first `lines_before` lines of `text`, problems
/// positioned in `text`.
fn documents_of(text: &str, lines_before: u64, documents: &str) -> Result<Objects, YamlFailure> {
    let part = Part {
        text: documents,
        lines_before,
    };
    let options = yaml_options(part.text.len());
    let documents: Vec<serde_saphyr::Spanned<Document>> =
        serde_saphyr::from_str_multiple_with_options(part.text, options).map_err(|e| {
            YamlFailure::NotYaml(position::yaml_error_below(text, part.lines_before, &e))
        })?;
    let mut objects = Objects::default();
    for document in documents {
        match document.value.0 {
            Ok(read) => objects.extend(read),
            Err(misplaced) => {
                let at = misplaced.at.unwrap_or(document.referenced);
                let (line, column) = field_position(part.text, at, &misplaced.path)
                    .unwrap_or((at.line(), at.column()));
                return Err(YamlFailure::Object(position::yaml_at(
                    text,
                    line + part.lines_before,
                    column,
                    misplaced.message,
                )));
            }
        }
    }
    Ok(objects)
}

/// Where the value at `path` inside the object that starts at `at` is written (line, column).
/// A YAML object is decoded from a tree without positions; only when one is refused is its own
/// text (not the whole file, which may be a 150,000-pod List) read again into the positioned
/// tree, to find the value. `None` when it cannot be found.
fn field_position(text: &str, at: serde_saphyr::Location, path: &[PathStep]) -> Option<(u64, u64)> {
    use crate::yaml_tree::Value;
    if path.is_empty() {
        return None;
    }
    let (own, first_line) = object_text(text, at)?;
    let object = crate::yaml_tree::parse_document(&own, yaml_options(own.len()))?;
    let mut node = &object;
    for step in path {
        node = match (step, &node.value) {
            (PathStep::Key(key), _) => node.get(key)?,
            (PathStep::Index(index), Value::Seq(items)) => items.get(*index)?,
            (PathStep::Index(_), _) => return None,
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
    path: Vec<PathStep>,
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

#[cfg(test)]
mod tests {
    use super::read_yaml_documents;
    use crate::snapshot::read::{Objects, read_str};

    /// The value of label `k` of the one namespace `objects` hold.
    fn label(objects: &Objects) -> String {
        let [(_, labels)] = objects.namespaces.as_slice() else {
            panic!("one namespace: {objects:?}");
        };
        labels.get("k").expect("a label k").to_string()
    }

    /// Label `k` of a namespace, its block text `block` the last thing in the file, as the
    /// block-YAML reader (through JSON) and serde-saphyr read it.
    fn read_both(block: &str) -> [String; 2] {
        let text = format!(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns\n  labels:\n    k: {block}"
        );
        [read_str(&text), read_yaml_documents(&text)]
            .map(|read| label(&read.unwrap_or_else(|error| panic!("{block:?}: {error}"))))
    }

    #[test]
    fn a_block_that_ends_the_file_without_a_line_break_reads_as_kubectl_reads_it() {
        // kubectl's reader gives the last line the break it lacks, which `|` and `|+` keep.
        for (block, expected) in [
            ("|\n      text", "text\n"),
            ("|-\n      text", "text"),
            ("|+\n      text", "text\n"),
            ("|\n      one\n      two", "one\ntwo\n"),
            ("|+\n      text\n", "text\n"),
            ("|+\n      text\n\n", "text\n\n"),
            ("|\n      text\n\n", "text\n"),
            ("|-\n      text\n", "text"),
            ("|\n      text\n      ", "text\n"),
            ("|+\n      text\n      ", "text\n\n"),
            ("|+\n      text\n    ", "text\n\n"),
            ("|-\n      text\n      ", "text"),
            ("|+\n      text\n\n      ", "text\n\n\n"),
        ] {
            assert_eq!(read_both(block), [expected, expected], "{block:?}");
        }
    }

    #[test]
    fn a_block_in_the_middle_of_a_file_reads_as_yaml_has_it() {
        for (block, expected) in [
            ("|\n      text\n", "text\n"),
            ("|-\n      text\n", "text"),
            ("|+\n      text\n\n", "text\n\n"),
        ] {
            let [fast, full] = read_both(&format!("{block}    other: x\n"));
            assert_eq!(
                [fast.as_str(), full.as_str()],
                [expected, expected],
                "{block:?}"
            );
        }
    }
}
