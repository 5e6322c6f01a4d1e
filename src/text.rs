//! How text from outside (input files, API servers, vCenter) is shown in messages: escaped, so a
//! newline, an escape sequence or a line separator in an object name or a policy key can neither
//! forge a line of a report nor send control codes to a terminal, and cut, so a megabyte value
//! does not make a megabyte message.
//!
//! [`shown`] is for each piece of outside text a message quotes; [`from_server`] for a server's
//! own message (an API server's `Status`), whose conclusion comes last; [`escaped`] for outside
//! text a report shows in full (names in the text report); [`one_line`] is the last word on a
//! finished message, whatever it was made of.
//!
//! Where a whole message is too long, its middle goes: the start names the object and what was
//! being done, the end is the innermost cause — for an admission policy's denial, the key it
//! refused.

use std::borrow::Cow;
use std::fmt::{self, Write};

/// The most characters of one outside text a message quotes.
pub const MAX_SHOWN: usize = 200;

/// The most characters of a finished message, its position included.
pub const MAX_MESSAGE: usize = 500;

/// The most characters of a server's own message a message quotes: more than [`MAX_SHOWN`],
/// which is for pieces echoed from input (names, paths, values).
pub const MAX_SERVER_MESSAGE: usize = 1000;

/// What stands for the middle of a message that was too long.
const CUT: &str = " … ";

/// `text` as a message shows it: see the module docs. Printable text is shown as it is.
pub fn shown(text: &str) -> Shown<'_> {
    Shown(text)
}

/// Outside text, escaped and cut as it is displayed.
#[derive(Clone, Copy, Debug)]
pub struct Shown<'a>(&'a str);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut characters = self.0.char_indices();
        for (count, (at, character)) in characters.by_ref().enumerate() {
            if count == MAX_SHOWN {
                let left = self.0.len() - at;
                return write!(f, "…({left} more bytes)");
            }
            write_escaped(f, character)?;
        }
        Ok(())
    }
}

/// A server's own message, escaped as [`shown`] escapes and, past [`MAX_SERVER_MESSAGE`]
/// characters, cut in the middle (see the module docs).
pub fn from_server(message: &str) -> Cow<'_, str> {
    one_line_within(message, MAX_SERVER_MESSAGE)
}

/// `text` escaped as [`shown`] escapes, but not cut: for names a report lists.
pub fn escaped(text: &str) -> Escaped<'_> {
    Escaped(text)
}

/// Outside text, escaped as it is displayed.
#[derive(Clone, Copy, Debug)]
pub struct Escaped<'a>(&'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.0.chars().any(needs_escape) {
            return f.write_str(self.0);
        }
        self.0.chars().try_for_each(|c| write_escaped(f, c))
    }
}

/// A finished message on one line of at most [`MAX_MESSAGE`] characters: characters that
/// [`shown`] escapes are escaped (so text it already escaped is unchanged), and a longer message
/// loses its middle (see the module docs).
pub fn one_line(message: &str) -> Cow<'_, str> {
    one_line_within(message, MAX_MESSAGE)
}

/// [`one_line`] of at most `max` characters, for a message that something (a file name and
/// position) will precede.
pub fn one_line_within(message: &str, max: usize) -> Cow<'_, str> {
    let clean = !message.chars().any(needs_escape);
    let width: usize = if clean {
        message.chars().count()
    } else {
        message.chars().map(escaped_width).sum()
    };
    if width <= max {
        if clean {
            return Cow::Borrowed(message);
        }
        return Cow::Owned(escaped(message).to_string());
    }
    let budget = max.saturating_sub(CUT.chars().count());
    let head = kept(message.chars(), budget - budget / 2);
    let mut tail = kept(message.chars().rev(), budget / 2);
    tail.reverse();
    let mut line = String::with_capacity(max * 4);
    line.extend(head);
    line.push_str(CUT);
    line.extend(tail);
    Cow::Owned(line)
}

/// The escaped forms of `characters`, in their order, as long as they fit in `budget`
/// characters together (an escape is never split).
fn kept(characters: impl Iterator<Item = char>, budget: usize) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut used = 0;
    for character in characters {
        let mut piece = String::new();
        write_escaped(&mut piece, character).expect("writing to a String cannot fail");
        used += piece.chars().count();
        if used > budget {
            break;
        }
        pieces.push(piece);
    }
    pieces
}

/// How many characters `character` takes once escaped.
fn escaped_width(character: char) -> usize {
    if !needs_escape(character) {
        return 1;
    }
    let mut piece = String::new();
    write_escaped(&mut piece, character).expect("writing to a String cannot fail");
    piece.chars().count()
}

/// Whether a character would break a line, move the cursor, change the terminal's state or the
/// direction of the text around it: C0 and C1 controls, DEL, Unicode line and paragraph
/// separators, and the bidirectional formatting characters.
fn needs_escape(character: char) -> bool {
    character.is_control()
        || matches!(
            character,
            '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}' | '\u{061c}' | '\u{feff}'
        )
}

fn write_escaped(out: &mut impl Write, character: char) -> fmt::Result {
    if !needs_escape(character) {
        return out.write_char(character);
    }
    match character {
        '\n' => out.write_str("\\n"),
        '\r' => out.write_str("\\r"),
        '\t' => out.write_str("\\t"),
        other => write!(out, "\\u{{{:x}}}", u32::from(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_and_line_separators_are_escaped() {
        assert_eq!(
            shown("web\nerror: forged\u{1b}[2J\u{2028}x\u{202e}").to_string(),
            "web\\nerror: forged\\u{1b}[2J\\u{2028}x\\u{202e}"
        );
        assert_eq!(
            shown("worker-a.example.com").to_string(),
            "worker-a.example.com"
        );
        assert_eq!(shown("ノード-1").to_string(), "ノード-1");
    }

    #[test]
    fn long_text_is_cut_and_says_how_much_was_left_out() {
        let value = "x".repeat(1_000_000);
        let text = shown(&value).to_string();
        assert_eq!(
            text,
            format!("{}…(999800 more bytes)", "x".repeat(MAX_SHOWN))
        );
        let exact = "y".repeat(MAX_SHOWN);
        assert_eq!(shown(&exact).to_string(), exact);
    }

    #[test]
    fn a_finished_message_is_one_bounded_line_and_escaping_twice_changes_nothing() {
        let once = shown("a\nb\u{85}c").to_string();
        assert_eq!(one_line(&once), once);
        assert_eq!(one_line("x: a\nb"), "x: a\\nb");
        let long = format!("file.yaml:1:1: {}: the end", "z".repeat(10_000));
        let line = one_line(&long);
        assert_eq!(line.chars().count(), MAX_MESSAGE);
        assert!(line.starts_with("file.yaml:1:1: zzz"), "{line}");
        assert!(
            line.contains("z … z") && line.ends_with("zzz: the end"),
            "{line}"
        );
        let escapes = "\u{7}".repeat(1000);
        let line = one_line(&escapes);
        assert!(line.chars().count() <= MAX_MESSAGE, "{line}");
        assert!(
            line.starts_with("\\u{7}") && line.ends_with("\\u{7}") && line.contains(" … "),
            "{line}"
        );
        assert_eq!(one_line(&line), line, "escaping twice changes nothing");
    }

    #[test]
    fn a_servers_message_keeps_its_conclusion() {
        let denial = format!(
            "nodes \"worker-1\" is forbidden: ValidatingAdmissionPolicy '{0}' with binding '{0}' \
             denied request: {0} may change only the node labels vsphere-descheduler.io/host, \
             vsphere-descheduler.io/cluster: label example.com/probe was added",
            "a-release-name-of-sixty-three-characters-is-as-long-as-they-get"
        );
        assert!(denial.chars().count() > MAX_SHOWN);
        assert_eq!(from_server(&denial), denial, "kept whole");
        let chain = format!(
            "label change(s) vsphere-descheduler.io/host=esxi-41 of node {} not applied: \
             PATCH /api/v1/nodes/worker-1: HTTP 403 Forbidden: {denial}",
            "worker-".repeat(40)
        );
        let line = one_line(&chain);
        assert!(line.chars().count() <= MAX_MESSAGE, "{line}");
        assert!(line.starts_with("label change(s) "), "{line}");
        assert!(
            line.ends_with("label example.com/probe was added"),
            "{line}"
        );
        let flood = "x".repeat(1_000_000);
        assert_eq!(from_server(&flood).chars().count(), MAX_SERVER_MESSAGE);
    }
}
