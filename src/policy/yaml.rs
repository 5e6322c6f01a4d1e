//! A small YAML tree in which every node and every mapping key remembers where it was written.
//!
//! serde-saphyr parses the text under a budget (so a hostile file cannot exhaust memory or time)
//! and rejects duplicate keys; the tree it yields is then walked by [`super::decode`], which
//! reports every problem at once instead of stopping at the first, as a serde derive would.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::{
    DuplicateKeyPolicy, Location, MergeKeyPolicy, MessageFormatter, NonFiniteFloatPolicy, Spanned,
};

/// Largest policy file read, checked before parsing: real policies are a few KiB.
pub(super) const MAX_FILE_BYTES: usize = 4 * 1024 * 1024;

/// A line and column, both 1-based, as editors count them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Position {
    pub line: u32,
    pub column: u32,
}

impl Position {
    fn from_location(location: Location) -> Option<Position> {
        // serde-saphyr reports line 0 for "unknown"; such positions are dropped, not printed.
        let line = u32::try_from(location.line()).unwrap_or(u32::MAX);
        let column = u32::try_from(location.column()).unwrap_or(u32::MAX);
        (line > 0).then_some(Position { line, column })
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// A YAML node and where it starts.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Node {
    pub position: Option<Position>,
    pub value: Value,
}

/// The value of a [`Node`], as YAML 1.2's core schema resolves it.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Value {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    /// Entries in file order; keys are nodes because YAML allows any node as a key.
    Map(Vec<(Node, Node)>),
}

impl Value {
    /// How a value of this type is named in messages ("expected a list, found a string").
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }
}

/// Why a file could not be parsed as YAML at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct SyntaxError {
    pub position: Option<Position>,
    pub message: String,
}

/// Parses one YAML document under a budget.
pub(super) fn parse(text: &str) -> Result<Node, SyntaxError> {
    if text.len() > MAX_FILE_BYTES {
        return Err(SyntaxError {
            position: None,
            message: too_large(),
        });
    }
    let document: Option<Spanned<Value>> = serde_saphyr::from_str_with_options(text, options())
        .map_err(|error| syntax_error(&error))?;
    Ok(match document {
        Some(spanned) => node(spanned),
        // An empty file or one holding only comments.
        None => Node {
            position: None,
            value: Value::Null,
        },
    })
}

/// The problem with a file over [`MAX_FILE_BYTES`].
pub(super) fn too_large() -> String {
    format!("file is larger than {MAX_FILE_BYTES} bytes, the most a policy file may be")
}

/// Deepest nesting accepted; a policy nests about eight levels.
const MAX_DEPTH: usize = 32;

/// Limits far above any real policy (a few hundred nodes) and far below what would hurt.
fn options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_reader_input_bytes: Some(MAX_FILE_BYTES),
            max_events: 200_000,
            max_nodes: 100_000,
            max_aliases: 1_000,
            max_anchors: 1_000,
            max_recorded_anchor_events: 10_000,
            max_recorded_anchor_bytes: MAX_FILE_BYTES,
            max_depth: MAX_DEPTH,
            max_documents: 1,
            max_total_scalar_bytes: MAX_FILE_BYTES,
            max_merge_keys: 100,
        },
        alias_limits: serde_saphyr::alias_limits! {
            max_total_replayed_events: 10_000,
            max_replay_stack_depth: 16,
        },
        duplicate_keys: DuplicateKeyPolicy::Error,
        merge_keys: MergeKeyPolicy::Merge,
        // Only `true` and `false` are booleans. Go's YAML 1.1 reader would also take `yes` or
        // `on`; here `nodeFit: yes` is a clear type problem instead, and a label value `on`
        // stays the string it looks like.
        strict_booleans: true,
        // `.inf` and `.nan` stay strings, so they fail as "expected an integer" where it matters.
        non_finite_float_policy: NonFiniteFloatPolicy::AsString,
        // Problems are reported as FILE:LINE:COL lines; the renderer's snippets would not fit.
        with_snippet: false,
    }
}

fn syntax_error(error: &serde_saphyr::Error) -> SyntaxError {
    let position = error.location().and_then(Position::from_location);
    SyntaxError {
        position,
        message: syntax_message(original(error)),
    }
}

/// The error behind alias and snippet wrappers, which only add locations we report already.
fn original(mut error: &serde_saphyr::Error) -> &serde_saphyr::Error {
    while let serde_saphyr::Error::AliasError { error: inner, .. }
    | serde_saphyr::Error::WithSnippet { error: inner, .. } = error
    {
        error = inner;
    }
    error
}

fn syntax_message(error: &serde_saphyr::Error) -> String {
    use serde_saphyr::Error;
    use serde_saphyr::budget::BudgetBreach;

    const ALIASES: &str = "too many aliases or anchors: alias expansion is limited so that a \
                           file cannot multiply itself (\"billion laughs\")";
    match error {
        Error::DuplicateMappingKey { key: Some(key), .. } => {
            format!("duplicate key {key:?}: keys must be unique within a mapping")
        }
        Error::DuplicateMappingKey { key: None, .. } => {
            "duplicate key: keys must be unique within a mapping".to_string()
        }
        Error::Budget {
            breach: BudgetBreach::Documents { .. },
            ..
        } => "a policy file holds exactly one YAML document; found a second one".to_string(),
        Error::Budget {
            breach: BudgetBreach::Depth { .. },
            ..
        } => {
            format!("nesting is deeper than {MAX_DEPTH} levels")
        }
        Error::Budget {
            breach:
                BudgetBreach::Aliases { .. }
                | BudgetBreach::Anchors { .. }
                | BudgetBreach::AliasAnchorRatio { .. }
                | BudgetBreach::RecordedAnchorEvents { .. }
                | BudgetBreach::RecordedAnchorBytes { .. },
            ..
        }
        | Error::AliasReplayLimitExceeded { .. }
        | Error::AliasExpansionLimitExceeded { .. }
        | Error::AliasReplayStackDepthExceeded { .. }
        | Error::AliasReplayCounterOverflow { .. } => ALIASES.to_string(),
        Error::Budget { .. } => {
            "the file is larger or more complex than a policy can be (parser budget exceeded)"
                .to_string()
        }
        other => {
            let message = serde_saphyr::UserMessageFormatter.format_message(other);
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
            lowercase_first(&message)
        }
    }
}

fn lowercase_first(message: &str) -> String {
    let mut chars = message.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn node(spanned: Spanned<Value>) -> Node {
    Node {
        position: Position::from_location(spanned.referenced),
        value: spanned.value,
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        Value::deserialize(deserializer)
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Int(value.into()))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Int(value.into()))
    }

    fn visit_i128<E: de::Error>(self, value: i128) -> Result<Value, E> {
        Ok(Value::Int(value))
    }

    fn visit_u128<E: de::Error>(self, value: u128) -> Result<Value, E> {
        // Beyond i128 only a float can hold it; range checks reject it later either way.
        Ok(i128::try_from(value).map_or(Value::Float(value as f64), Value::Int))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Value, E> {
        Ok(Value::Float(value))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Value, E> {
        Ok(Value::Str(value.to_string()))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<Value, E> {
        Ok(Value::Str(value))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Value>>()? {
            items.push(node(item));
        }
        Ok(Value::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Spanned<Value>>()? {
            let value = map.next_value::<Spanned<Value>>()?;
            entries.push((node(key), node(value)));
        }
        Ok(Value::Map(entries))
    }
}
