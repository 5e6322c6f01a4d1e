//! A YAML stream cut into its documents, each read on its own (by serde-saphyr, under limits of
//! its own size: [`yaml_options`](super::yaml_options)), so that what one document may cost
//! does not grow with the rest of the file.
//!
//! The cuts follow the markers at the start of a line, which YAML forbids inside any value
//! (a `---` or `...` line ends a block or quoted value that runs into it): a document starts at
//! its `---` line, with the directives and comments before it, and ends at a `...` line or
//! where the next starts. Text with a carriage return alone, which YAML also reads as a line
//! break, is not cut: its lines would be counted differently from the parser's.
//!
//! Why by hand: serde-saphyr takes one set of options per call, and the limits scale with the
//! text of that call; handed the whole stream, every document's limits would grow with the file
//! around it, and it has no call that reads one document of a stream at a time. This only finds
//! the cuts (a scan for marker lines); serde-saphyr still parses every document.

use std::borrow::Cow;

/// A part of a YAML stream holding one document (or none: comments after the last), and how
/// many lines of the stream precede it.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Part<'t> {
    pub(super) text: &'t str,
    pub(super) lines_before: u64,
}

/// The parts of `text`, in order, that together are the whole of it.
pub(super) fn parts(text: &str) -> Vec<Part<'_>> {
    if has_lone_carriage_return(text) {
        return vec![Part {
            text,
            lines_before: 0,
        }];
    }
    let mut parts = Vec::new();
    let mut cut = Cut::default();
    let (mut at, mut line) = (0, 0u64);
    for text_line in text.split_inclusive('\n') {
        if is_marker(text_line, "---") && cut.has_content {
            cut.push(text, at, line, &mut parts);
        }
        at += text_line.len();
        line += 1;
        if is_marker(text_line, "...") {
            cut.push(text, at, line, &mut parts);
        } else if !is_outside_documents(text_line) {
            cut.has_content = true;
        }
    }
    if cut.start < text.len() || parts.is_empty() {
        cut.push(text, text.len(), line, &mut parts);
    }
    parts
}

/// Where the part being gathered starts, and whether it has begun a document yet.
#[derive(Default)]
struct Cut {
    start: usize,
    lines_before: u64,
    has_content: bool,
}

impl Cut {
    /// Ends the part being gathered at byte `end`, line `line`, and starts the next there.
    fn push<'t>(&mut self, text: &'t str, end: usize, line: u64, parts: &mut Vec<Part<'t>>) {
        parts.push(Part {
            text: &text[self.start..end],
            lines_before: self.lines_before,
        });
        *self = Cut {
            start: end,
            lines_before: line,
            has_content: false,
        };
    }
}

/// The text with a line break after its last line, which kubectl's reader gives every line it
/// reads (apimachinery's `LineReader`, below `kubectl apply -f` and `create -f`): in a file
/// that ends inside a `|` or `|+` block, the block keeps the line break the last line is given,
/// as YAML keeps a last line's break.
pub(super) fn line_ended(text: &str) -> Cow<'_, str> {
    if text.is_empty() || text.ends_with('\n') {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(format!("{text}\n"))
    }
}

/// Whether a line is a document marker (`---` or `...` alone or before a space, a tab or the
/// line break).
fn is_marker(line: &str, marker: &str) -> bool {
    line.strip_prefix(marker)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r', '\n']))
}

/// Whether a line may stand between documents: blank, a comment, or a directive (`%YAML`),
/// which belongs to the document its `---` starts.
fn is_outside_documents(line: &str) -> bool {
    let line = line.trim_start_matches([' ', '\t']);
    line.trim_end().is_empty() || line.starts_with('#') || line.starts_with('%')
}

/// Whether the text has a carriage return that is not followed by a line feed.
fn has_lone_carriage_return(text: &str) -> bool {
    text.match_indices('\r')
        .any(|(at, _)| text.as_bytes().get(at + 1) != Some(&b'\n'))
}

#[cfg(test)]
mod tests {
    use super::{Part, parts};

    /// The parts' texts and the lines before each.
    fn cut(text: &str) -> Vec<(&str, u64)> {
        parts(text)
            .into_iter()
            .map(|Part { text, lines_before }| (text, lines_before))
            .collect()
    }

    #[test]
    fn a_stream_is_cut_before_each_document_marker_with_the_directives_before_it() {
        assert_eq!(
            cut("a: 1\n---\nb: 2\n# after b\n--- # c\nc: 3\n"),
            [
                ("a: 1\n", 0),
                ("---\nb: 2\n# after b\n", 1),
                ("--- # c\nc: 3\n", 4)
            ]
        );
        assert_eq!(
            cut("# head\n---\na: 1\n...\n%YAML 1.2\n---\nb: |\n  text\n"),
            [
                ("# head\n---\na: 1\n...\n", 0),
                ("%YAML 1.2\n---\nb: |\n  text\n", 4)
            ]
        );
        assert_eq!(
            cut("---\r\na: 1\r\n---\r\nb: 2"),
            [("---\r\na: 1\r\n", 0), ("---\r\nb: 2", 2)]
        );
    }

    #[test]
    fn text_that_is_not_a_marker_is_not_cut_at() {
        for text in [
            "a: 1\n----\nb: 2\n",
            "a: |\n  ---\nb: 2\n",
            "a: ---x\n",
            "a: 1\r---\rb: 2\r",
            "",
            "# only a comment\n",
        ] {
            assert_eq!(cut(text), [(text, 0)], "{text:?}");
        }
    }

    #[test]
    fn the_parts_are_the_whole_text() {
        for text in [
            "---\n---\n---\n",
            "...\n...\na: 1\n...\n",
            "a: 1\n---",
            "--- |\n  a\n--- >\n  b\n",
        ] {
            let parts = parts(text);
            assert_eq!(parts.iter().map(|part| part.text).collect::<String>(), text);
            let mut lines = 0;
            for part in &parts {
                assert_eq!(part.lines_before, lines, "{text:?}");
                lines += part.text.matches('\n').count() as u64;
            }
        }
    }
}
