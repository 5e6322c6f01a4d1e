//! Reading a policy file into the positioned YAML tree ([`crate::yaml_tree`]).
//!
//! serde-saphyr parses the text under a budget (so a hostile file cannot exhaust memory or time)
//! and rejects duplicate keys; the tree it yields is then walked by [`super::decode`], which
//! reports every problem at once instead of stopping at the first, as a serde derive would.

use serde_saphyr::{DuplicateKeyPolicy, MergeKeyPolicy, NonFiniteFloatPolicy, Spanned};

use crate::stack::on_reader_stack;
use crate::yaml_error::{is_too_deep, message, original, too_deep};
pub use crate::yaml_tree::{Position, Value, YamlNode};
use crate::yaml_tree::{node, position_of};

/// Largest policy file read, checked before parsing: real policies are a few KiB.
pub(super) const MAX_FILE_BYTES: usize = 4 * 1024 * 1024;

/// Why a file could not be parsed as YAML at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct SyntaxError {
    pub position: Option<Position>,
    pub message: String,
}

/// Parses one YAML document under a budget.
pub(super) fn parse(text: &str) -> Result<YamlNode, SyntaxError> {
    if text.len() > MAX_FILE_BYTES {
        return Err(SyntaxError {
            position: None,
            message: too_large(),
        });
    }
    // The tree is built recursively, a level of the file at a time.
    on_reader_stack(|| {
        let document: Option<Spanned<Value>> = serde_saphyr::from_str_with_options(text, options())
            .map_err(|error| syntax_error(&error))?;
        Ok(match document {
            Some(spanned) => node(spanned),
            // An empty file or one holding only comments.
            None => YamlNode {
                position: None,
                value: Value::Null,
            },
        })
    })
}

/// The problem with a file over [`MAX_FILE_BYTES`].
pub(super) fn too_large() -> String {
    format!("file is larger than {MAX_FILE_BYTES} bytes, the most a policy file may be")
}

/// Deepest nesting accepted; a policy nests about eight levels. The decoder walks the tree
/// recursively, so the limit also bounds its stack.
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
            // The parser reads flow collections (`[[[…`) ahead of the depth count: held to the
            // same limit, so that no form nests deeper.
            flow_nesting_limit: MAX_DEPTH,
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
        // Numbers as the descheduler's own reader (YAML 1.1) reads them: `0777` is octal 511.
        legacy_octal_numbers: true,
        // Problems are reported as FILE:LINE:COL lines; the renderer's snippets would not fit.
        with_snippet: false,
    }
}

fn syntax_error(error: &serde_saphyr::Error) -> SyntaxError {
    let position = error.location().and_then(position_of);
    SyntaxError {
        position,
        message: syntax_message(original(error)),
    }
}

fn syntax_message(error: &serde_saphyr::Error) -> String {
    use serde_saphyr::Error;
    use serde_saphyr::budget::BudgetBreach;

    const ALIASES: &str = "too many aliases or anchors: alias expansion is limited so that a \
                           file cannot multiply itself (\"billion laughs\")";
    match error {
        _ if is_too_deep(error) => too_deep(MAX_DEPTH, "policy"),
        Error::Budget {
            breach: BudgetBreach::Documents { .. },
            ..
        } => "a policy file holds exactly one YAML document; found a second one".to_string(),
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
            "the file is larger or more complex than a policy can be".to_string()
        }
        other => message(other, MAX_DEPTH, "policy"),
    }
}
