//! What the YAML reader's (serde-saphyr's) errors mean, in this program's words: the policy and
//! snapshot readers decide from the error's kind, never from its text, and never show the
//! library's own text where it speaks of its options or of Rust types ("use Option<String>",
//! "set DuplicateKeyPolicy in Options", "rejected by the configured policy"). The sentences
//! both formats share (a key twice, nesting too deep) are here, and JSON's reader says them too.

use serde_saphyr::budget::BudgetBreach;
use serde_saphyr::granit_parser::ErrorKind;
use serde_saphyr::{Error, ExternalMessageSource, MessageFormatter};

use crate::text::shown;

/// The error behind the wrappers that only add a snippet or an alias's location.
pub(crate) fn original(mut error: &Error) -> &Error {
    while let Error::AliasError { error: inner, .. } | Error::WithSnippet { error: inner, .. } =
        error
    {
        error = inner;
    }
    error
}

/// Whether the text nests lists and mappings deeper than the reader allows: the budget's depth,
/// or the parser's own limit on flow collections (`[[[…`), which it meets first because it
/// reads flow collections ahead of the events the budget counts.
pub(crate) fn is_too_deep(error: &Error) -> bool {
    match original(error) {
        Error::Budget {
            breach: BudgetBreach::Depth { .. },
            ..
        } => true,
        Error::ExternalMessage { source, .. } => matches!(
            &**source,
            ExternalMessageSource::Parser(scan)
                if matches!(scan.kind(), ErrorKind::RecursionLimitExceeded)
        ),
        _ => false,
    }
}

/// The problem with text that nests lists and mappings deeper than `limit` levels, in a file
/// that holds `what` ("Kubernetes object", "policy").
pub(crate) fn too_deep(limit: usize, what: &str) -> String {
    format!(
        "lists and mappings are nested deeper than {limit} levels, deeper than any {what} nests"
    )
}

/// The problem with a key written twice in one mapping, in YAML or JSON alike: refused, as which
/// of its values is meant cannot be told (kubectl would silently take the last).
pub(crate) fn duplicate_key(key: &str) -> String {
    format!(
        "key \"{}\" appears twice in one mapping: which of its values is meant cannot be told, \
         keep one",
        shown(key)
    )
}

/// A YAML reading error in words, for a file that holds `what` and may nest `depth` levels.
/// Limits of size (the budget, alias replays) are the caller's to word: what they are depends
/// on the file.
pub(crate) fn message(error: &Error, depth: usize, what: &str) -> String {
    if is_too_deep(error) {
        return too_deep(depth, what);
    }
    let error = original(error);
    match error {
        Error::DuplicateMappingKey { key: Some(key), .. } => duplicate_key(key),
        Error::DuplicateMappingKey { key: None, .. } => {
            "a key appears twice in one mapping: which of its values is meant cannot be told, \
             keep one"
                .to_string()
        }
        Error::NullIntoString { .. } | Error::InvalidCharNull { .. } => {
            "null where text is expected (a key, or a value such as a name): write the text, \
             or quote it ('~', 'null') to mean those characters"
                .to_string()
        }
        Error::NonFiniteFloat { value, .. } => format!(
            "the value {} is not a finite number, which no {what} field holds: quote it to mean \
             the text",
            shown(value)
        ),
        Error::BinaryNotUtf8 { .. } | Error::TaggedScalarCannotDeserializeIntoString { .. } => {
            "a tagged value (such as !!binary) where text is expected: remove the tag".to_string()
        }
        Error::InvalidBinaryBase64 { .. } => "a !!binary value that is not base64".to_string(),
        Error::InvalidBooleanStrict { .. } => "expected true or false".to_string(),
        Error::MergeValueNotMapOrSeqOfMaps { .. } => {
            "a merge key (<<) takes a mapping or a list of mappings".to_string()
        }
        Error::UnknownAnchor { .. } => {
            "an alias (*name) refers to no anchor (&name) defined before it".to_string()
        }
        Error::Eof { .. } => "the text ends where more was expected".to_string(),
        Error::InvalidScalar { ty, .. } => format!("this value is not {}", scalar_kind(ty)),
        Error::Unexpected { expected, .. } => format!("expected {}", words_for(expected)),
        Error::SerdeInvalidType {
            unexpected,
            expected,
            ..
        } => format!(
            "invalid type: {}, expected {expected}",
            plain_value(unexpected)
        ),
        Error::SerdeInvalidValue {
            unexpected,
            expected,
            ..
        } => format!(
            "invalid value: {}, expected {expected}",
            plain_value(unexpected)
        ),
        other => formatted(other),
    }
}

/// What the library's deserializer says it expected, in the file's words.
fn words_for(expected: &str) -> &str {
    match expected {
        "mapping start" => "a mapping",
        "sequence start" => "a list",
        "scalar" => "a single value",
        other => other,
    }
}

/// What a scalar the library could not read as its Rust type `ty` was meant to be.
fn scalar_kind(ty: &str) -> &'static str {
    match ty {
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" | "u8" | "u16" | "u32" | "u64" | "u128"
        | "usize" => "a valid integer",
        "f32" | "f64" | "floating point" => "a valid number",
        "bool" | "boolean" => "true or false",
        _ => "valid here",
    }
}

/// serde's words for a value, without Rust's: `floating point` is a number in YAML and JSON.
pub(crate) fn plain_value(unexpected: &str) -> String {
    unexpected.replace("floating point `", "number `")
}

/// The library's own message for the errors this program does not word itself (the parser's
/// syntax errors, chiefly, which describe the text), on one line, lowercase first.
fn formatted(error: &Error) -> String {
    let message = serde_saphyr::UserMessageFormatter.format_message(error);
    // Called below the renderer, so control characters are ours to neutralise.
    let message: String = message
        .trim()
        .chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            }
        })
        .collect();
    let mut chars = message.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}
