//! How a file's bytes become text, as kubectl reads files: UTF-8, a byte order mark before it
//! dropped, or UTF-16 (little or big endian) when a byte order mark says so, as Windows tools
//! write it. Without a mark the bytes are UTF-8; a file that is neither is refused where it
//! stops being text.

/// The byte order mark, as the first character of decoded text.
pub const BYTE_ORDER_MARK: char = '\u{feff}';

/// `text` without the byte order mark it may start with.
pub fn without_mark(text: &str) -> &str {
    text.strip_prefix(BYTE_ORDER_MARK).unwrap_or(text)
}

/// The byte order of UTF-16 text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Utf16 {
    Little,
    Big,
}

impl Utf16 {
    /// The UTF-16 byte order the first bytes of a file mark, if they mark one.
    pub fn marked(bytes: &[u8]) -> Option<Utf16> {
        match bytes {
            [0xff, 0xfe, ..] => Some(Utf16::Little),
            [0xfe, 0xff, ..] => Some(Utf16::Big),
            _ => None,
        }
    }

    fn unit(self, pair: [u8; 2]) -> u16 {
        match self {
            Utf16::Little => u16::from_le_bytes(pair),
            Utf16::Big => u16::from_be_bytes(pair),
        }
    }
}

/// A code unit that is half of a surrogate pair without its other half: not text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InvalidUtf16 {
    /// Where it is in the file, its byte order mark counted.
    pub offset: u64,
}

/// UTF-16 text decoded as its bytes arrive, so that a file that is not text fails early.
#[derive(Debug)]
pub struct Utf16Decoder {
    order: Utf16,
    /// The bytes of an incomplete character: an odd byte, or a high surrogate and what follows.
    pending: Vec<u8>,
    /// File bytes decoded so far, the byte order mark counted.
    decoded: u64,
}

impl Utf16Decoder {
    /// A decoder of the bytes after the two of the byte order mark.
    pub fn new(order: Utf16) -> Utf16Decoder {
        Utf16Decoder {
            order,
            pending: Vec::new(),
            decoded: 2,
        }
    }

    /// Decodes the next bytes of the file onto `text`; a character they end inside waits for
    /// the next.
    pub fn push(&mut self, bytes: &[u8], text: &mut String) -> Result<(), InvalidUtf16> {
        self.pending.extend_from_slice(bytes);
        let units: Vec<u16> = self
            .pending
            .chunks_exact(2)
            .map(|pair| self.order.unit([pair[0], pair[1]]))
            .collect();
        // A high surrogate last waits for its low half.
        let complete = match units.last() {
            Some(unit) if (0xd800..0xdc00).contains(unit) => units.len() - 1,
            _ => units.len(),
        };
        let mut at = self.decoded;
        for decoded in char::decode_utf16(units[..complete].iter().copied()) {
            let character = decoded.map_err(|_| InvalidUtf16 { offset: at })?;
            text.push(character);
            at += 2 * character.len_utf16() as u64;
        }
        self.decoded = at;
        self.pending.drain(..2 * complete);
        Ok(())
    }

    /// The end of the file: `Err` where a character is left incomplete.
    pub fn finish(&self) -> Result<(), InvalidUtf16> {
        if self.pending.is_empty() {
            Ok(())
        } else {
            Err(InvalidUtf16 {
                offset: self.decoded,
            })
        }
    }
}

/// Where a file stops being text in the encoding it is read in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Undecodable {
    /// The encoding: `UTF-8` or `UTF-16`.
    pub encoding: &'static str,
    /// The byte of the file where it stops, its byte order mark counted.
    pub offset: u64,
    /// The text before it.
    pub before: String,
}

/// The text of a whole file, read as [`Utf16Decoder`] and UTF-8 read it.
pub fn decode(bytes: Vec<u8>) -> Result<String, Undecodable> {
    if let Some(order) = Utf16::marked(&bytes) {
        let mut text = String::new();
        let mut decoder = Utf16Decoder::new(order);
        return match decoder
            .push(&bytes[2..], &mut text)
            .and_then(|()| decoder.finish())
        {
            Ok(()) => Ok(text),
            Err(invalid) => Err(Undecodable {
                encoding: "UTF-16",
                offset: invalid.offset,
                before: text,
            }),
        };
    }
    match String::from_utf8(bytes) {
        Ok(text) => Ok(match text.strip_prefix(BYTE_ORDER_MARK) {
            Some(rest) => rest.to_string(),
            None => text,
        }),
        Err(error) => {
            let valid = error.utf8_error().valid_up_to();
            let before = String::from_utf8_lossy(&error.as_bytes()[..valid]).into_owned();
            Err(Undecodable {
                encoding: "UTF-8",
                offset: valid as u64,
                before: without_mark(&before).to_string(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{InvalidUtf16, Undecodable, Utf16, Utf16Decoder, decode};

    fn utf16(text: &str, order: Utf16) -> Vec<u8> {
        let mut bytes = match order {
            Utf16::Little => vec![0xff, 0xfe],
            Utf16::Big => vec![0xfe, 0xff],
        };
        for unit in text.encode_utf16() {
            bytes.extend(match order {
                Utf16::Little => unit.to_le_bytes(),
                Utf16::Big => unit.to_be_bytes(),
            });
        }
        bytes
    }

    #[test]
    fn utf16_with_a_byte_order_mark_decodes_whatever_the_pieces_it_arrives_in() {
        let text = "name: café 𝄞\r\n";
        for order in [Utf16::Little, Utf16::Big] {
            let bytes = utf16(text, order);
            assert_eq!(decode(bytes.clone()).as_deref(), Ok(text), "{order:?}");
            for piece in 1..=5 {
                let mut decoder = Utf16Decoder::new(order);
                let mut decoded = String::new();
                for part in bytes[2..].chunks(piece) {
                    decoder.push(part, &mut decoded).expect("valid");
                }
                decoder.finish().expect("complete");
                assert_eq!(decoded, text, "{order:?} in pieces of {piece}");
            }
        }
    }

    fn undecodable(encoding: &'static str, offset: u64, before: &str) -> Undecodable {
        Undecodable {
            encoding,
            offset,
            before: before.to_string(),
        }
    }

    #[test]
    fn a_lone_surrogate_or_half_a_unit_is_not_text_and_says_where() {
        // "ab", then a low surrogate alone.
        let bytes = [0xff, 0xfe, b'a', 0, b'b', 0, 0x00, 0xdc, b'c', 0];
        assert_eq!(decode(bytes.to_vec()), Err(undecodable("UTF-16", 6, "ab")));
        let mut decoder = Utf16Decoder::new(Utf16::Little);
        let mut text = String::new();
        decoder
            .push(&[b'a', 0, 0x3d, 0xd8], &mut text)
            .expect("waits");
        assert_eq!(text, "a");
        assert_eq!(decoder.finish(), Err(InvalidUtf16 { offset: 4 }));
        assert_eq!(
            decode(vec![0xfe, 0xff, 0, b'a', 0]),
            Err(undecodable("UTF-16", 4, "a"))
        );
    }

    #[test]
    fn utf8_loses_its_byte_order_mark_and_other_bytes_are_not_text() {
        assert_eq!(
            decode(b"\xef\xbb\xbfa: 1\n".to_vec()).as_deref(),
            Ok("a: 1\n")
        );
        assert_eq!(decode(b"a: 1\n".to_vec()).as_deref(), Ok("a: 1\n"));
        assert_eq!(
            decode(b"\xef\xbb\xbfa: \xff".to_vec()),
            Err(undecodable("UTF-8", 6, "a: "))
        );
    }
}
