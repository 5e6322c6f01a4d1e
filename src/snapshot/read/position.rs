//! Where in a snapshot file something is wrong: the line and column, and which document of
//! the stream (YAML `---` documents, or concatenated JSON documents) holds it.
//!
//! Positions are worked out only once something has failed, so reading a valid file costs
//! nothing more.

use serde::de::IgnoredAny;

use super::structure::{MAX_DEPTH, OBJECT};
use serde_saphyr::budget::BudgetBreach;

use crate::text::{MAX_MESSAGE, one_line_within};
use crate::yaml_error::{self, is_too_deep, original};

/// Room kept for what precedes a problem's message: a file name and its position.
const POSITIONED: usize = 100;

pub use crate::position::Position;

/// Something wrong in a snapshot's text, and where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{at}: {}", one_line_within(message, MAX_MESSAGE - POSITIONED))]
pub struct ParseError {
    pub at: Position,
    pub message: String,
}

/// Whether snapshot text is read as JSON (else as YAML).
pub fn is_json(text: &str) -> bool {
    text.trim_start().starts_with(['{', '['])
}

/// The position of byte `offset` of a whole snapshot text.
pub fn at_offset(text: &str, offset: usize) -> Position {
    let (line, column) = line_column(text, offset);
    let document = if is_json(text) {
        json_document(&text[..floor_char(text, offset)])
    } else {
        yaml_document(text, line)
    };
    Position::in_document(line, column, document)
}

/// Line and column (in characters, both from 1) of byte `offset` of `text`.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..floor_char(text, offset)];
    let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
    (
        before.matches('\n').count() + 1,
        before[line_start..].chars().count() + 1,
    )
}

/// `offset` moved back to the start of the character it falls in.
fn floor_char(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// Byte offset of `part` (a slice of `text`) in `text`.
pub fn offset_in(text: &str, part: &str) -> usize {
    (part.as_ptr() as usize).saturating_sub(text.as_ptr() as usize)
}

/// Byte offset in `text` of a serde_json error found while parsing `text` (serde_json counts
/// lines from 1 and columns in bytes from 1; 0 when it has no position).
pub fn json_error_offset(text: &str, error: &serde_json::Error) -> usize {
    let line_start: usize = text
        .split_inclusive('\n')
        .take(error.line().saturating_sub(1))
        .map(str::len)
        .sum();
    (line_start + error.column().saturating_sub(1)).min(text.len())
}

/// What the text just before a serde_json error shows, where serde_json's own words say less
/// ("number out of range", "unexpected end of hex escape"): a number no field can hold, or half
/// of a UTF-16 surrogate pair alone. `None` for every other error.
pub fn read_at_the_error(part: &str, at: usize) -> Option<String> {
    let at = floor_char(part, at);
    non_finite_number(part, at).or_else(|| lone_surrogate(&part[..at]))
}

/// The number literal around `at` (serde_json stops at or just after its last digit), when it
/// is too large for a finite number.
fn non_finite_number(part: &str, at: usize) -> Option<String> {
    let in_number = |c: char| c.is_ascii_digit() || "eE+-.".contains(c);
    // Every character of a number is ASCII: one byte each.
    let start = at
        - part[..at]
            .chars()
            .rev()
            .take_while(|&c| in_number(c))
            .count();
    let end = at + part[at..].chars().take_while(|&c| in_number(c)).count();
    let literal = &part[start..end];
    let value: f64 = literal.parse().ok()?;
    (!value.is_finite()).then(|| {
        format!(
            "the value {literal} is not a finite number, which no Kubernetes object field holds: \
             quote it to mean the text"
        )
    })
}

/// The `\uXXXX` escape just before the error, when it is a surrogate (D800 to DFFF): JSON
/// writes a character beyond U+FFFF as a pair of them, never one alone.
fn lone_surrogate(before: &str) -> Option<String> {
    // The escape, and the one after it that should have been its other half.
    const REACH: usize = 12;
    let start = floor_char(before, before.len().saturating_sub(REACH));
    let tail = &before[start..];
    let hex = tail
        .match_indices("\\u")
        .filter_map(|(at, _)| tail.get(at + 2..at + 6))
        .find(|hex| u16::from_str_radix(hex, 16).is_ok_and(|u| (0xD800..=0xDFFF).contains(&u)))?;
    Some(format!(
        "\\u{hex} is half of a UTF-16 surrogate pair without its other half, which is no \
         character: write the pair (such as \\uD83D\\uDE00) or the character itself"
    ))
}

/// serde_json's message without the " at line L column C" it appends: the position is shown
/// once, in the file's terms, in front.
pub fn json_message(error: &serde_json::Error) -> String {
    let message = error.to_string();
    let suffix = format!(" at line {} column {}", error.line(), error.column());
    let bare = message.strip_suffix(&suffix).unwrap_or(&message);
    plain_expectation(bare)
}

/// serde's `expected X` in words instead of Rust's (`i32`) or k8s-openapi's (`PodSpec`,
/// `ObjectMeta`) type names: a type error is about what the file holds, not about our types.
/// A value serde calls a `floating point` is a number.
fn plain_expectation(message: &str) -> String {
    let message = yaml_error::plain_value(message);
    let Some((before, after)) = message.rsplit_once(", expected ") else {
        return message;
    };
    let words = match after {
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "an integer",
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => "a non-negative integer",
        "f32" | "f64" => "a number",
        "IntOrString" => "an integer or a string",
        "Quantity" => "a quantity (a string such as 500m or 2Gi)",
        "Time" | "MicroTime" => "a time (RFC 3339, such as 2026-11-21T20:49:09Z)",
        // k8s-openapi names each object type: all of them are mappings in the file.
        name if is_type_name(name) => "a mapping",
        _ => return message,
    };
    format!("{before}, expected {words}")
}

/// `PodSpec`, `ObjectMeta`: one CamelCase word, as k8s-openapi's visitors name their types.
fn is_type_name(word: &str) -> bool {
    let mut characters = word.chars();
    characters.next().is_some_and(|c| c.is_ascii_uppercase())
        && word.chars().all(|c| c.is_ascii_alphanumeric())
        && characters.any(|c| c.is_ascii_lowercase())
}

/// The document of a JSON stream that begins with `before`: one more than the documents that
/// are complete in it.
fn json_document(before: &str) -> usize {
    serde_json::Deserializer::from_str(before)
        .into_iter::<IgnoredAny>()
        .take_while(Result::is_ok)
        .count()
        + 1
}

/// The document of a YAML stream that holds `line`: each `---` starts one, and so does content
/// after the start of the stream or after a `...` end marker.
pub fn yaml_document(text: &str, line: usize) -> usize {
    let mut documents = 0;
    let mut open = false;
    for text_line in text.lines().take(line) {
        let trimmed = text_line.trim();
        if is_marker(text_line, "---") {
            documents += 1;
            open = true;
        } else if is_marker(text_line, "...") {
            open = false;
        } else if !open && !trimmed.is_empty() && !trimmed.starts_with(['#', '%']) {
            documents += 1;
            open = true;
        }
    }
    documents.max(1)
}

fn is_marker(line: &str, marker: &str) -> bool {
    line.strip_prefix(marker)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r']))
}

/// A YAML reader's error, positioned in `text`, in words (never the library's own, which speak
/// of its options and of Rust types), found reading the part of `text` that follows its first
/// `lines_before` lines (one document of it, or all of it).
pub fn yaml_error_below(text: &str, lines_before: u64, error: &serde_saphyr::Error) -> ParseError {
    let message = match original(error) {
        serde_saphyr::Error::Budget { breach, .. } if !is_too_deep(error) => budget_message(breach),
        serde_saphyr::Error::AliasReplayLimitExceeded { .. }
        | serde_saphyr::Error::AliasExpansionLimitExceeded { .. }
        | serde_saphyr::Error::AliasReplayStackDepthExceeded { .. }
        | serde_saphyr::Error::AliasReplayCounterOverflow { .. } => ALIASES_MULTIPLY.to_string(),
        _ => yaml_error::message(error, MAX_DEPTH, OBJECT),
    };
    match error.location() {
        Some(location) => yaml_at(
            text,
            location.line() + lines_before,
            location.column(),
            message,
        ),
        None => ParseError {
            at: yaml_position(text, lines_before + 1, 1),
            message,
        },
    }
}

/// What aliases that repeat too much are told: what they may repeat is a fixed amount per
/// document, not a size.
const ALIASES_MULTIPLY: &str = "aliases here repeat more than one document's aliases may \
     (an alias repeats what its anchor holds; a document cannot multiply itself)";

/// A limit of the YAML reader, which grows with the document (docs/snapshots.md, "The forms
/// kubectl reads") but for what aliases repeat, in words.
fn budget_message(breach: &BudgetBreach) -> String {
    let what = match breach {
        BudgetBreach::RecordedAnchorEvents { .. } | BudgetBreach::RecordedAnchorBytes { .. } => {
            return ALIASES_MULTIPLY.to_string();
        }
        BudgetBreach::Aliases { .. }
        | BudgetBreach::Anchors { .. }
        | BudgetBreach::AliasAnchorRatio { .. } => "anchors and aliases",
        BudgetBreach::MergeKeys { .. } => "merge keys (<<)",
        BudgetBreach::Documents { .. } => "documents",
        BudgetBreach::ScalarBytes { .. } => "text in values and tags",
        _ => "values, lists and mappings",
    };
    format!("the document holds more {what} than its size allows")
}

/// A YAML problem at a line and column (1-based, as serde-saphyr counts them; 0 is unknown).
pub fn yaml_at(text: &str, line: u64, column: u64, message: String) -> ParseError {
    ParseError {
        at: yaml_position(text, line, column),
        message,
    }
}

/// The position of a line and column of YAML `text` (1-based; 0, unknown, counts as 1), with the
/// document that holds it.
pub fn yaml_position(text: &str, line: u64, column: u64) -> Position {
    let line = usize::try_from(line).unwrap_or(1).max(1);
    let column = usize::try_from(column).unwrap_or(1).max(1);
    Position::in_document(line, column, yaml_document(text, line))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_too_large_for_any_field_is_named_at_the_error() {
        let text = r#"{"cpu":1e999}"#;
        assert_eq!(
            read_at_the_error(text, 12).as_deref(),
            Some(
                "the value 1e999 is not a finite number, which no Kubernetes object field holds: \
                 quote it to mean the text"
            )
        );
        assert_eq!(
            read_at_the_error(r#"{"cpu":12}"#, 9),
            None,
            "a finite number"
        );
    }

    #[test]
    fn half_a_surrogate_pair_is_named_at_the_error() {
        for (text, at, hex) in [
            (r#"{"name":"a\ud800b"}"#, 16, "ud800"),
            (r#"{"name":"a\udc00"}"#, 16, "udc00"),
            (r#"{"name":"a\uD83D\u0041"}"#, 22, "uD83D"),
        ] {
            let message = read_at_the_error(text, at).unwrap_or_else(|| panic!("{text}"));
            assert!(
                message.starts_with(&format!("\\{hex} is half of a UTF-16 surrogate pair")),
                "{message}"
            );
        }
        assert_eq!(read_at_the_error(r#"{"name":"\u0041x"#, 16), None);
    }

    use super::{at_offset, line_column, plain_expectation, yaml_document};

    #[test]
    fn type_errors_say_what_the_file_should_hold_not_which_rust_type() {
        assert_eq!(
            plain_expectation("invalid type: string \"x\", expected i32"),
            "invalid type: string \"x\", expected an integer"
        );
        assert_eq!(
            plain_expectation("invalid type: sequence, expected PodSpec"),
            "invalid type: sequence, expected a mapping"
        );
        assert_eq!(
            plain_expectation("invalid type: integer `3`, expected ObjectMeta"),
            "invalid type: integer `3`, expected a mapping"
        );
        assert_eq!(
            plain_expectation("invalid value: integer `-1`, expected u32"),
            "invalid value: integer `-1`, expected a non-negative integer"
        );
        let kept = "unknown variant `x`, expected `Always` or `Never`";
        assert_eq!(plain_expectation(kept), kept);
        assert_eq!(
            plain_expectation("invalid type: map, expected a string"),
            "invalid type: map, expected a string"
        );
    }

    #[test]
    fn a_reader_budget_breach_is_told_in_words() {
        // Each alias replays the anchor's thousand scalars: far more than the text's size.
        let text = format!(
            "a: &a [{}]\nb: [{}]\n",
            "x, ".repeat(1000),
            "*a, ".repeat(3000)
        );
        let error =
            crate::snapshot::read::read_str(&text).expect_err("too many nodes for its size");
        assert!(
            !error.message.contains("budget breached"),
            "{}",
            error.message
        );
        assert_eq!(
            error.message,
            "the document holds more values, lists and mappings than its size allows"
        );
    }

    #[test]
    fn columns_count_characters_and_lines_count_from_one() {
        let text = "a: 1\nname: café x\n";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, text.find('x').expect("x")), (2, 12));
        // Inside a character: the character's own column.
        assert_eq!(line_column(text, text.find('é').expect("é") + 1), (2, 10));
        assert_eq!(line_column(text, text.len() + 5), (3, 1));
    }

    #[test]
    fn a_yaml_document_starts_at_each_marker_and_at_content_after_an_end() {
        let text = "# comment\n%YAML 1.2\n---\na: 1\n---\nb: 2\n...\n# between\nc: 3\n";
        let documents: Vec<usize> = (1..=9).map(|line| yaml_document(text, line)).collect();
        assert_eq!(documents, [1, 1, 1, 1, 2, 2, 2, 2, 3]);
        assert_eq!(
            yaml_document("a: 1\n---\nb: 2\n", 3),
            2,
            "no leading marker"
        );
        assert_eq!(yaml_document("a: '---'\n---x: 1\n", 2), 1, "not a marker");
    }

    #[test]
    fn a_json_document_is_one_more_than_those_complete_before_it() {
        let text = "{\"a\": 1}\n{\"b\": [1,\n2]} {\"c\": 3}";
        let document = |needle: &str| at_offset(text, text.find(needle).expect("in text")).document;
        assert_eq!(document("\"a\""), Some(1));
        assert_eq!(document("2]"), Some(2));
        assert_eq!(document("{\"c\""), Some(3));
        assert_eq!(at_offset(text, text.find("2]").expect("2")).line, 3);
    }
}
