//! Whole JSON text: one or more documents, each kept as its raw text and decoded straight into
//! its type once its kind is known; text that stops being JSON is read on as YAML.

use serde_json::value::RawValue;

use super::parallel::in_chunks;
use super::position::{ParseError, Position, at_offset, line_column, offset_in};
use super::sink::{Growth, ItemType, ListHeader, ObjectProblem, Objects, Source, object};
use super::structure::{MAX_DEPTH, OBJECT, Shape, json_shape, json_too_deep};
use super::yaml::{YamlFailure, read_yaml_as};
use crate::snapshot::model::Interner;
use crate::yaml_error::{duplicate_key, too_deep};

/// JSON is read without building trees: each document, and each list item, is kept as its raw
/// text and decoded straight into its type once its kind is known.
pub(super) fn read_json(text: &str) -> Result<Objects, ParseError> {
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
        let positioned = |problem: ObjectProblem| {
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
                let json = positioned(ObjectProblem::json(text, text, &error));
                objects.extend(yaml_after_json(text, start, index, json)?);
                return Ok(objects);
            }
            Err(error) => return Err(positioned(ObjectProblem::json(text, text, &error))),
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
) -> Result<Objects, ObjectProblem> {
    let list: ListHeader =
        serde_json::from_str(raw).map_err(|e| ObjectProblem::json(text, raw, &e))?;
    match list.items {
        Some(items) => convert_items(text, &items, ItemType::of(&list.api_version, &list.kind)),
        None => object(Source::Raw(raw), None, interner).map_err(|e| e.within(text, raw)),
    }
}

/// Convert the raw items of a list, in parallel chunks on big lists (decoding is most of a big
/// `plan`'s time). Chunks are merged in order, so the result does not depend on the threads.
/// Each chunk shares its label texts through its own interner (no lock between threads).
/// Errors are positioned in `text`, which the items are slices of.
fn convert_items(
    text: &str,
    items: &[&RawValue],
    item_type: Option<ItemType<'_>>,
) -> Result<Objects, ObjectProblem> {
    let convert_chunk = |chunk: &[&RawValue]| -> Result<Objects, ObjectProblem> {
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
