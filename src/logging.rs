//! Logs on stderr: the filter from `RUST_LOG`, plain or JSON lines, and colour only where a
//! person reads them.

use std::ffi::OsStr;
use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

use crate::cli::LogFormat;

/// Sets up the process's logging, once, before anything logs.
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let no_color = std::env::var_os("NO_COLOR");
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour(std::io::stderr().is_terminal(), no_color.as_deref()))
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Plain => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// Whether log lines carry ANSI colour codes: only on a terminal, and not when `NO_COLOR` is set
/// to anything but the empty string (no-color.org). A CI job's log file, `2>err.txt` or a pipe
/// gets plain text that `grep` finds as it is written.
fn colour(stderr_is_terminal: bool, no_color: Option<&OsStr>) -> bool {
    stderr_is_terminal && no_color.is_none_or(OsStr::is_empty)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_is_for_a_terminal_without_no_color() {
        assert!(colour(true, None));
        assert!(colour(true, Some(OsStr::new(""))), "empty is unset");
        assert!(!colour(true, Some(OsStr::new("1"))));
        assert!(!colour(false, None), "a file or a pipe");
        assert!(!colour(false, Some(OsStr::new("1"))));
    }
}
