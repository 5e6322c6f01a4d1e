//! The text of a snapshot file: read in bounded chunks, each checked to be text (UTF-8
//! without control characters, or UTF-16 behind a byte order mark, decoded) before the next.

use std::fs::File;
use std::io::{Read, Seek, Take};
use std::path::Path;

use super::error::{FileSizeLimit, NotText, SnapshotError};
use super::position::at_offset;
use crate::encoding::{Utf16, Utf16Decoder, without_mark};

/// How much is read at a time; each piece is checked to be text before the next is read.
pub(super) const CHUNK_BYTES: u64 = 1 << 20;

/// A snapshot file opened once, and what has been read of it: the stream reader starts on it
/// and, when it gives up, hands it to the whole-file reader with the bytes it still holds, so
/// that the file is never opened twice (a named pipe gives its bytes once; a path may name
/// another file by then).
pub(super) struct Opened {
    /// The file, bounded to one byte more than the limit.
    pub(super) reader: Take<File>,
    /// Whether it is a regular file, which can be read from its start again.
    pub(super) regular: bool,
    /// Its size, when it is a regular file.
    expected: u64,
    /// Every byte read from `reader` so far; `None` when they were not all kept (a big
    /// streamed file), and the next reader starts again from the file's start.
    pub(super) read: Option<Vec<u8>>,
}

/// Opens a snapshot file; a regular file over the limit is refused by its size.
pub(super) fn open(path: &Path, limit: FileSizeLimit) -> Result<Opened, SnapshotError> {
    let read_error = |source| SnapshotError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(read_error)?;
    let metadata = file.metadata().map_err(read_error)?;
    if metadata.is_dir() {
        return Err(SnapshotError::Directory {
            path: path.to_path_buf(),
        });
    }
    let regular = metadata.is_file();
    if regular && metadata.len() > limit.bytes() {
        return Err(SnapshotError::TooLarge {
            path: path.to_path_buf(),
            limit,
        });
    }
    Ok(Opened {
        reader: file.take(limit.bytes() + 1),
        regular,
        expected: if regular { metadata.len() } else { 0 },
        read: Some(Vec::new()),
    })
}

/// The text of a file ([`text_of`] the file [`open`]ed).
pub(in crate::snapshot) fn read_text(
    path: &Path,
    limit: FileSizeLimit,
) -> Result<String, SnapshotError> {
    text_of(path, open(path, limit)?, limit)
}

/// The text of an opened file, read on from the bytes read before through a bounded reader: a
/// regular file over the limit is refused by its size, anything else (a device, a pipe) once
/// it has given one byte more than the limit. A byte that cannot be YAML or JSON stops the
/// read where it is, so `/dev/urandom` fails in its first chunk. UTF-8 text keeps the byte
/// order mark it may start with ([`read_str`](super::read_str) drops it); UTF-16 with a byte
/// order mark is decoded, as kubectl decodes it.
pub(super) fn text_of(
    path: &Path,
    opened: Opened,
    limit: FileSizeLimit,
) -> Result<String, SnapshotError> {
    let read_error = |source| SnapshotError::Read {
        path: path.to_path_buf(),
        source,
    };
    let too_large = || SnapshotError::TooLarge {
        path: path.to_path_buf(),
        limit,
    };
    let Opened {
        mut reader,
        expected,
        read,
        ..
    } = opened;
    let mut bytes = match read {
        Some(bytes) => bytes,
        None => {
            reader.get_mut().rewind().map_err(read_error)?;
            reader.set_limit(limit.bytes() + 1);
            Vec::new()
        }
    };
    bytes.reserve_exact(
        usize::try_from(expected)
            .unwrap_or(0)
            .saturating_sub(bytes.len()),
    );
    let mut checked = 0;
    let mut sniffed = false;
    loop {
        let read = (&mut reader)
            .take(CHUNK_BYTES)
            .read_to_end(&mut bytes)
            .map_err(read_error)?;
        if !sniffed && (bytes.len() >= 2 || read == 0) {
            sniffed = true;
            if let Some(order) = Utf16::marked(&bytes) {
                return utf16_text(path, reader, &bytes[2..], order, limit);
            }
        }
        // Before the end is known: the first bytes may have been read by the stream.
        checked = check_text(&bytes, checked)
            .map_err(|(offset, problem)| not_text(path, &bytes, offset, problem))?;
        if read == 0 {
            break;
        }
    }
    if bytes.len() as u64 > limit.bytes() {
        return Err(too_large());
    }
    if checked < bytes.len() {
        // The file ends inside a character.
        return Err(not_text(path, &bytes, checked, NotText::InvalidUtf8));
    }
    Ok(String::from_utf8(bytes).expect("checked as it was read"))
}

/// The error for a byte that is not text, positioned by the text before it (which is valid:
/// the check stops at the first bad byte).
fn not_text(path: &Path, bytes: &[u8], offset: usize, problem: NotText) -> SnapshotError {
    let before = std::str::from_utf8(&bytes[..offset]).unwrap_or_default();
    not_text_after(path, before, offset as u64, problem)
}

/// The error for the byte at `offset` of the file, which follows the text `before`.
fn not_text_after(path: &Path, before: &str, offset: u64, problem: NotText) -> SnapshotError {
    // Editors do not show a byte order mark: columns count from the character after it.
    let before = without_mark(before);
    SnapshotError::NotText {
        path: path.to_path_buf(),
        at: at_offset(before, before.len()),
        offset,
        problem,
    }
}

/// The text of a UTF-16 file whose bytes after the byte order mark begin with `first`, the
/// rest to come from `reader`: decoded and checked a chunk at a time, as UTF-8 is.
fn utf16_text(
    path: &Path,
    mut reader: impl Read,
    first: &[u8],
    order: Utf16,
    limit: FileSizeLimit,
) -> Result<String, SnapshotError> {
    let mut decoder = Utf16Decoder::new(order);
    let mut text = String::new();
    let mut chunk = first.to_vec();
    let mut total = 2 + chunk.len() as u64;
    loop {
        let checked = text.len();
        decoder.push(&chunk, &mut text).map_err(|invalid| {
            not_text_after(path, &text, invalid.offset, NotText::InvalidUtf16)
        })?;
        if let Err((at, problem)) = check_text(text.as_bytes(), checked) {
            // Two bytes for each UTF-16 unit before it, and two for the mark.
            let offset = 2 + 2 * text[..at].encode_utf16().count() as u64;
            return Err(not_text_after(path, &text[..at], offset, problem));
        }
        chunk.clear();
        let read = (&mut reader)
            .take(CHUNK_BYTES)
            .read_to_end(&mut chunk)
            .map_err(|source| SnapshotError::Read {
                path: path.to_path_buf(),
                source,
            })?;
        if read == 0 {
            break;
        }
        total += read as u64;
        if total > limit.bytes() {
            return Err(SnapshotError::TooLarge {
                path: path.to_path_buf(),
                limit,
            });
        }
    }
    decoder
        .finish()
        .map_err(|invalid| not_text_after(path, &text, invalid.offset, NotText::InvalidUtf16))?;
    Ok(text)
}

/// Checks `bytes[from..]` and returns how far they are valid text: the end, or the start of a
/// character the next chunk completes. `Err` has the offset of the first byte that is not text.
pub(super) fn check_text(bytes: &[u8], from: usize) -> Result<usize, (usize, NotText)> {
    let unchecked = &bytes[from..];
    let control =
        first_control(unchecked).map(|at| (from + at, NotText::ControlCharacter(unchecked[at])));
    let utf8 = match std::str::from_utf8(unchecked) {
        Ok(_) => Ok(bytes.len()),
        Err(error) if error.error_len().is_none() => Ok(from + error.valid_up_to()),
        Err(error) => Err((from + error.valid_up_to(), NotText::InvalidUtf8)),
    };
    match (control, utf8) {
        (Some(control), Err(invalid)) => Err(if control.0 < invalid.0 {
            control
        } else {
            invalid
        }),
        (Some(control), Ok(_)) => Err(control),
        (None, utf8) => utf8,
    }
}

/// Where the first control character other than tab, CR and LF is. Blocks of 64 bytes are
/// tested without a branch per byte, which the compiler turns into vector instructions (a
/// byte-at-a-time search was a tenth of reading a 120 MB file); the byte itself is looked for
/// only in the block that holds one.
fn first_control(bytes: &[u8]) -> Option<usize> {
    let is_control = |byte: u8| byte < 0x20 && !matches!(byte, b'\t' | b'\n' | b'\r');
    bytes
        .chunks(64)
        .enumerate()
        .find(|(_, block)| {
            block
                .iter()
                .fold(false, |any, &byte| any | is_control(byte))
        })
        .and_then(|(index, block)| {
            let at = block.iter().position(|&byte| is_control(byte))?;
            Some(index * 64 + at)
        })
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::{check_text, read_text};
    use crate::snapshot::read::{FileSizeLimit, NotText, Position, SnapshotError};

    fn file_with(bytes: &[u8]) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().expect("a temporary file");
        file.write_all(bytes).expect("writable");
        file
    }

    #[test]
    fn a_directory_is_refused_naming_the_files_to_give_instead() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let Err(error) = super::open(dir.path(), FileSizeLimit::default()) else {
            panic!("a directory is no snapshot file");
        };
        assert!(
            matches!(error, SnapshotError::Directory { .. }),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            format!(
                "snapshot file {} is a directory: give the files in it, such as {}/*.yaml",
                dir.path().display(),
                dir.path().display()
            )
        );
    }

    #[test]
    fn text_is_utf8_without_control_characters_other_than_tab_cr_and_lf() {
        assert_eq!(check_text(b"a: b\r\n\tc\n", 0), Ok(9));
        assert_eq!(check_text("é".as_bytes(), 0), Ok(2));
        assert_eq!(
            check_text(b"a: \x00", 0),
            Err((3, NotText::ControlCharacter(0)))
        );
        assert_eq!(check_text(b"ab\xff\x01", 0), Err((2, NotText::InvalidUtf8)));
        assert_eq!(
            check_text(b"ab\x01\xff", 0),
            Err((2, NotText::ControlCharacter(1)))
        );
        // Past the first blocks of the search, and in a last, shorter one.
        for at in [63, 64, 130, 199] {
            let mut text = vec![b'a'; 200];
            text[at] = 0x1b;
            assert_eq!(
                check_text(&text, 0),
                Err((at, NotText::ControlCharacter(0x1b))),
                "{at}"
            );
        }
    }

    #[test]
    fn a_character_split_between_two_reads_is_checked_once_whole() {
        let text = "name: café".as_bytes();
        let (first, _) = text.split_at(text.len() - 1);
        let checked = check_text(first, 0).expect("valid so far");
        assert_eq!(checked, first.len() - 1, "the half character waits");
        assert_eq!(check_text(text, checked), Ok(text.len()));
    }

    #[test]
    fn a_file_over_the_limit_is_refused_naming_it_the_limit_and_the_way_out() {
        let file = file_with(&[b'#'; 2049]);
        let limit: FileSizeLimit = "2Ki".parse().expect("valid");
        let error = read_text(file.path(), limit).expect_err("too large");
        assert!(matches!(error, SnapshotError::TooLarge { .. }), "{error:?}");
        let message = error.to_string();
        for expected in [
            &file.path().display().to_string(),
            "2Ki (2048 bytes)",
            "--max-snapshot-size",
        ] {
            assert!(message.contains(expected), "{expected:?} in {message}");
        }
        let file = file_with(&[b'#'; 2048]);
        assert_eq!(
            read_text(file.path(), limit).expect("at the limit").len(),
            2048
        );
    }

    #[test]
    fn utf16_is_decoded_and_where_it_is_not_text_is_told_in_the_files_terms() {
        let text = "apiVersion: v1\nkind: Namespace\nmetadata: {name: é}\n";
        let mut bytes = vec![0xfe, 0xff];
        bytes.extend(text.encode_utf16().flat_map(u16::to_be_bytes));
        let file = file_with(&bytes);
        let read = read_text(file.path(), FileSizeLimit::DEFAULT).expect("UTF-16");
        assert_eq!(read, text);
        // A lone low surrogate after `a: `: the fourth unit, bytes 8 and 9 with the mark.
        let lone = [0xff, 0xfe, b'a', 0, b':', 0, b' ', 0, 0x00, 0xdc];
        let file = file_with(&lone);
        let error = read_text(file.path(), FileSizeLimit::DEFAULT).expect_err("not UTF-16");
        assert!(
            error
                .to_string()
                .ends_with(":1:4: document 1: not YAML or JSON text: invalid UTF-16 at byte 8"),
            "{error}"
        );
        let control = [0xff, 0xfe, b'a', 0, b'\n', 0, 0x1b, 0];
        let file = file_with(&control);
        let error = read_text(file.path(), FileSizeLimit::DEFAULT).expect_err("a control");
        assert!(
            error.to_string().ends_with(
                ":2:1: document 1: not YAML or JSON text: control character 0x1b at byte 6"
            ),
            "{error}"
        );
    }

    #[test]
    fn a_file_ending_inside_a_character_is_not_text() {
        let file = file_with(&"a: é".as_bytes()[..4]);
        let error = read_text(file.path(), FileSizeLimit::DEFAULT).expect_err("cut short");
        assert!(
            matches!(
                error,
                SnapshotError::NotText {
                    at: Position {
                        line: 1,
                        column: 4,
                        document: Some(1)
                    },
                    offset: 3,
                    problem: NotText::InvalidUtf8,
                    ..
                }
            ),
            "{error:?}"
        );
    }
}
