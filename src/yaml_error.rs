//! What the YAML reader's (serde-saphyr's) errors mean, in this program's words: the policy and
//! snapshot readers decide from the error's kind, never from its text, which speaks of the
//! library's options and of Rust types.

use serde_saphyr::budget::BudgetBreach;
use serde_saphyr::granit_parser::ErrorKind;
use serde_saphyr::{Error, ExternalMessageSource};

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
