//! Test support shared by integration tests (`mod support;`) and the lab example (which
//! includes this file with `#[path]`).

// Each test binary uses only part of the support code.
#![allow(dead_code, unused_imports)]

pub mod fake_apiserver;
pub mod vcsim;

/// An error with its causes, one per line, as `main` prints it.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str("\ncaused by: ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
