//! Logs on stderr: the filter from `RUST_LOG` or `-v`, plain or JSON lines, colour only where a
//! person reads them, and outside text escaped in both.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::field::{MakeExt, RecordFields};
use tracing_subscriber::fmt::format::{FormatFields, Writer, debug_fn};

use crate::cli::LogFormat;
use crate::text;

/// The crate's own target, as `RUST_LOG` names it.
const OWN_TARGET: &str = "vsphere_descheduler";

/// Sets up the process's logging, once, before anything logs. `RUST_LOG`, when set, is the
/// filter as written; otherwise `verbose` (the count of `-v`) chooses one.
pub fn init(format: LogFormat, verbose: u8) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(directives(verbose)));
    let no_color = std::env::var_os("NO_COLOR");
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour(std::io::stderr().is_terminal(), no_color.as_deref()))
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Plain => builder.fmt_fields(EscapedFields).init(),
        // JSON escapes every control character itself.
        LogFormat::Json => builder.json().init(),
    }
}

/// The filter without `RUST_LOG`: the tool's own lines at `info`, and nothing from the libraries
/// it uses, whose lines (a refused certificate is a dozen `ERROR kube_client…` lines) say in
/// their words what the tool's own line already says in the user's. `-v` adds the tool's debug
/// lines and the libraries' warnings, `-vv` everything.
fn directives(verbose: u8) -> String {
    match verbose {
        0 => format!("{OWN_TARGET}=info"),
        1 => format!("warn,{OWN_TARGET}=debug"),
        _ => format!("debug,{OWN_TARGET}=trace"),
    }
}

/// Whether log lines carry ANSI colour codes: only on a terminal, and not when `NO_COLOR` is set
/// to anything but the empty string (no-color.org). A CI job's log file, `2>err.txt` or a pipe
/// gets plain text that `grep` finds as it is written.
fn colour(stderr_is_terminal: bool, no_color: Option<&OsStr>) -> bool {
    stderr_is_terminal && no_color.is_none_or(OsStr::is_empty)
}

/// A plain line's message and fields as the default formatter writes them (`message key=value`),
/// each escaped as the text report escapes outside text: an object name from a snapshot file
/// with an escape sequence, a NUL or a line separator can neither colour the terminal nor forge
/// a log line.
struct EscapedFields;

impl<'writer> FormatFields<'writer> for EscapedFields {
    fn format_fields<R: RecordFields>(
        &self,
        writer: Writer<'writer>,
        fields: R,
    ) -> std::fmt::Result {
        let escaping = debug_fn(|writer, field, value| {
            let mut raw = String::new();
            write!(raw, "{value:?}")?;
            let shown = text::escaped(&raw);
            match field.name() {
                "message" => write!(writer, "{shown}"),
                name => write!(writer, "{name}={shown}"),
            }
        })
        .delimited(" ");
        escaping.format_fields(writer, fields)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn colour_is_for_a_terminal_without_no_color() {
        assert!(colour(true, None));
        assert!(colour(true, Some(OsStr::new(""))), "empty is unset");
        assert!(!colour(true, Some(OsStr::new("1"))));
        assert!(!colour(false, None), "a file or a pipe");
        assert!(!colour(false, Some(OsStr::new("1"))));
    }

    #[test]
    fn without_rust_log_the_libraries_are_quiet_unless_asked() {
        assert_eq!(directives(0), "vsphere_descheduler=info");
        assert_eq!(directives(1), "warn,vsphere_descheduler=debug");
        assert_eq!(directives(2), "debug,vsphere_descheduler=trace");
        assert_eq!(directives(9), directives(2));
    }

    /// The lines a plain subscriber writes while `log` runs.
    fn plain_lines(log: impl FnOnce()) -> String {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&buffer);
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .without_time()
            .fmt_fields(EscapedFields)
            .with_writer(move || Sink(Arc::clone(&sink)))
            .finish();
        tracing::subscriber::with_default(subscriber, log);
        let bytes = buffer.lock().expect("not poisoned").clone();
        String::from_utf8(bytes).expect("UTF-8")
    }

    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Sink {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .expect("not poisoned")
                .extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_plain_line_escapes_outside_text_in_its_message_and_fields() {
        let api_version = "v1\u{1b}[2J\u{1b}[31mRED";
        let lines = plain_lines(|| {
            tracing::warn!(first = %api_version, "ignored objects of kind {}", "Widget\u{2028}x\0");
        });
        assert_eq!(lines.lines().count(), 1, "{lines:?}");
        assert!(!lines.contains('\u{1b}'), "{lines:?}");
        assert!(
            !lines.contains('\u{2028}') && !lines.contains('\0'),
            "{lines:?}"
        );
        assert!(
            lines.contains("ignored objects of kind Widget"),
            "the message stays readable: {lines:?}"
        );
        assert!(lines.contains("first=v1"), "{lines:?}");
    }

    #[test]
    fn a_plain_line_of_clean_text_is_written_as_the_default_formatter_writes_it() {
        let lines = plain_lines(|| tracing::info!(node = "worker-1", count = 3, "labelled"));
        assert!(
            lines.ends_with("labelled node=\"worker-1\" count=3\n"),
            "{lines:?}"
        );
    }
}
