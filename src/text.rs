//! How text from outside (input files, API servers, vCenter) is shown in messages: escaped, so a
//! newline, an escape sequence or a line separator in an object name or a policy key can neither
//! forge a line of a report nor send control codes to a terminal, and cut, so a megabyte value
//! does not make a megabyte message.
//!
//! [`shown`] is for each piece of outside text a message quotes; [`escaped`] for outside text
//! a report shows in full (names in the text report); [`one_line`] is the last word on a
//! finished message, whatever it was made of.

use std::borrow::Cow;
use std::fmt::{self, Write};

/// The most characters of one outside text a message quotes.
pub const MAX_SHOWN: usize = 200;

/// The most characters of a finished message, its position included.
pub const MAX_MESSAGE: usize = 500;

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
/// is cut with `…`.
pub fn one_line(message: &str) -> Cow<'_, str> {
    one_line_within(message, MAX_MESSAGE)
}

/// [`one_line`] of at most `max` characters, for a message that something (a file name and
/// position) will precede.
pub fn one_line_within(message: &str, max: usize) -> Cow<'_, str> {
    let clean = !message.chars().any(needs_escape);
    if clean && message.chars().nth(max).is_none() {
        return Cow::Borrowed(message);
    }
    let mut line = String::with_capacity(message.len().min(max * 4));
    let mut count = 0;
    for character in message.chars() {
        let before = line.len();
        write_escaped(&mut line, character).expect("writing to a String cannot fail");
        count += line[before..].chars().count();
        if count > max - 1 {
            // What came before fits: this character's escape would not.
            line.truncate(before);
            line.push('…');
            break;
        }
    }
    Cow::Owned(line)
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
        let long = format!("file.yaml:1:1: {}", "z".repeat(10_000));
        let line = one_line(&long);
        assert_eq!(line.chars().count(), MAX_MESSAGE);
        assert!(line.ends_with('…'));
        let escapes = "\u{7}".repeat(1000);
        let line = one_line(&escapes);
        assert!(line.chars().count() <= MAX_MESSAGE, "{line}");
        assert!(line.ends_with("\\u{7}…"), "{line}");
    }
}
