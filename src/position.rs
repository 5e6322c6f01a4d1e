//! Where something is written in a file this tool reads: the one position type of the policy
//! reader and the snapshot reader, so both place a problem alike (`LINE:COLUMN`, and in a
//! stream of documents `LINE:COLUMN: document N`).

use std::fmt;

/// A line and column as editors count them (from 1, columns in characters), and, in a file
/// that is a stream of documents (a snapshot), which document holds it, from 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Position {
    pub line: usize,
    pub column: usize,
    /// Set by readers of document streams; a policy is one document and says none.
    pub document: Option<usize>,
}

impl Position {
    /// A place in a file read as one document.
    pub const fn new(line: usize, column: usize) -> Position {
        Position {
            line,
            column,
            document: None,
        }
    }

    /// A place in document `document` (from 1) of a stream.
    pub const fn in_document(line: usize, column: usize, document: usize) -> Position {
        Position {
            line,
            column,
            document: Some(document),
        }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)?;
        match self.document {
            Some(document) => write!(f, ": document {document}"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Position;

    #[test]
    fn a_position_names_its_document_only_in_a_stream() {
        assert_eq!(Position::new(3, 7).to_string(), "3:7");
        assert_eq!(
            Position::in_document(3, 7, 2).to_string(),
            "3:7: document 2"
        );
    }
}
