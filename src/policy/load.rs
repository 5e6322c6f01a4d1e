//! Reading a policy file: size cap, YAML parsing, format dispatch on `apiVersion`, and the
//! problems and warnings that come out of it.

use std::fmt;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use thiserror::Error;

use super::decode::{Decoder, Finding};
use super::v1alpha2::{Flavor, UPSTREAM_API_VERSION, VSPHERE_API_VERSION};
use super::yaml::{self, MAX_FILE_BYTES, Node, Position, Value};
use super::{Policy, v1alpha1, v1alpha2};

/// The `kind` every policy file has.
const KIND: &str = "DeschedulerPolicy";

/// A policy and what the reader should know about it.
#[derive(Clone, Debug, PartialEq)]
pub struct Loaded {
    pub policy: Policy,
    /// Things that are valid but probably not what the author meant (ignored fields, deprecated
    /// formats), formatted like problems: `FILE:LINE:COL: PATH: MESSAGE`.
    pub warnings: Vec<String>,
}

/// One thing wrong with a policy file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The file name as given to the loader.
    pub file: String,
    /// Where in the file; `None` for problems no single node shows (a missing field).
    pub position: Option<Position>,
    /// The field path, such as `profiles[0].pluginConfig[1].args.minPodAge`; empty for the
    /// document as a whole.
    pub path: String,
    /// Lowercase, without trailing period.
    pub message: String,
}

impl Problem {
    fn new(file: &str, finding: Finding) -> Problem {
        Problem {
            file: file.to_string(),
            position: finding.position,
            path: finding.path,
            message: finding.message,
        }
    }
}

impl fmt::Display for Problem {
    /// `FILE:LINE:COL: PATH: MESSAGE`, the shape editors and CI annotators understand; parts
    /// that are unknown are left out.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(position) = self.position {
            write!(f, ":{position}")?;
        }
        if !self.path.is_empty() {
            write!(f, ": {}", self.path)?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Why a policy could not be loaded.
#[derive(Debug, Error)]
pub enum PolicyError {
    #[error("cannot read policy file {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("policy file {file} has {}:\n{}", count(problems.len()), list(problems))]
    Invalid {
        file: String,
        problems: Vec<Problem>,
    },
}

fn count(n: usize) -> String {
    if n == 1 {
        "1 problem".to_string()
    } else {
        format!("{n} problems")
    }
}

fn list(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(Problem::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Reads and resolves a policy file.
pub fn load_file(path: &Path) -> Result<Loaded, PolicyError> {
    let file_name = path.display().to_string();
    let read_error = |source| PolicyError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read_error)?;
    // Read one byte past the cap so an oversized file is detected without reading it all.
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if bytes.len() > MAX_FILE_BYTES {
        return Err(invalid(
            &file_name,
            Finding {
                position: None,
                path: String::new(),
                message: format!(
                    "file is larger than {MAX_FILE_BYTES} bytes, the most a policy file may be"
                ),
            },
        ));
    }
    match String::from_utf8(bytes) {
        Ok(text) => load_str(&file_name, &text),
        Err(error) => {
            let valid = &error.as_bytes()[..error.utf8_error().valid_up_to()];
            let valid = std::str::from_utf8(valid).expect("valid_up_to marks a valid UTF-8 prefix");
            Err(invalid(
                &file_name,
                Finding {
                    position: Some(end_of(valid)),
                    path: String::new(),
                    message: "file is not valid UTF-8".to_string(),
                },
            ))
        }
    }
}

/// The position just after `text`.
fn end_of(text: &str) -> Position {
    let line = text.matches('\n').count() + 1;
    let column = text
        .rsplit('\n')
        .next()
        .map_or(0, |last| last.chars().count())
        + 1;
    Position {
        line: u32::try_from(line).unwrap_or(u32::MAX),
        column: u32::try_from(column).unwrap_or(u32::MAX),
    }
}

/// Resolves a policy held in memory; `file_name` is only used in messages.
pub fn load_str(file_name: &str, text: &str) -> Result<Loaded, PolicyError> {
    let root = yaml::parse(text).map_err(|error| {
        invalid(
            file_name,
            Finding {
                position: error.position,
                path: String::new(),
                message: error.message,
            },
        )
    })?;
    let mut d = Decoder::default();
    let policy = decode_document(&mut d, &root);
    if !d.problems.is_empty() {
        return Err(PolicyError::Invalid {
            file: file_name.to_string(),
            problems: sorted(file_name, d.problems),
        });
    }
    let warnings = sorted(file_name, d.warnings)
        .iter()
        .map(Problem::to_string)
        .collect();
    Ok(Loaded { policy, warnings })
}

fn invalid(file_name: &str, finding: Finding) -> PolicyError {
    PolicyError::Invalid {
        file: file_name.to_string(),
        problems: vec![Problem::new(file_name, finding)],
    }
}

/// File order, then the problems without a position; stable, so one node's problems keep the
/// order they were found in.
fn sorted(file_name: &str, findings: Vec<Finding>) -> Vec<Problem> {
    let mut problems: Vec<Problem> = findings
        .into_iter()
        .map(|finding| Problem::new(file_name, finding))
        .collect();
    problems.sort_by_key(|problem| (problem.position.is_none(), problem.position));
    problems.dedup();
    problems
}

/// Checks `kind` and dispatches on `apiVersion`. When either is wrong nothing else is checked:
/// the file is probably not a policy at all, and a list of "unknown field" problems would hide
/// the one that matters.
fn decode_document(d: &mut Decoder, root: &Node) -> Policy {
    let entries = match &root.value {
        Value::Map(entries) => entries,
        Value::Null => {
            d.problem(None, "", "the file is empty; expected a DeschedulerPolicy");
            return Policy::default();
        }
        _ => {
            d.expected(root, "", "a mapping (a DeschedulerPolicy)");
            return Policy::default();
        }
    };
    let field = |name: &str| {
        entries
            .iter()
            .find(|(key, value)| {
                key.value == Value::Str(name.to_string()) && value.value != Value::Null
            })
            .map(|(_, value)| value)
    };
    let supported = [
        VSPHERE_API_VERSION,
        UPSTREAM_API_VERSION,
        v1alpha1::API_VERSION,
    ]
    .join(", ");
    let api_version = match field("apiVersion") {
        Some(node) => d.string(node, "apiVersion").map(|version| (version, node)),
        None => {
            d.problem(
                root.position,
                "apiVersion",
                format!("apiVersion is required; supported: {supported}"),
            );
            None
        }
    };
    let kind_ok = match field("kind") {
        Some(node) => match d.string(node, "kind") {
            Some(kind) if kind == KIND => true,
            Some(kind) => {
                d.problem_at(
                    node,
                    "kind",
                    format!("unsupported kind {kind:?}; expected {KIND}"),
                );
                false
            }
            None => false,
        },
        None => {
            d.problem(
                root.position,
                "kind",
                format!("kind is required; expected {KIND}"),
            );
            false
        }
    };
    let Some((api_version, version_node)) = api_version else {
        return Policy::default();
    };
    let decode: fn(&mut Decoder, &Node) -> Policy = match api_version.as_str() {
        VSPHERE_API_VERSION => |d, root| v1alpha2::decode(d, root, Flavor::Vsphere),
        UPSTREAM_API_VERSION => |d, root| v1alpha2::decode(d, root, Flavor::Upstream),
        v1alpha1::API_VERSION => v1alpha1::decode,
        other => {
            d.problem_at(
                version_node,
                "apiVersion",
                format!("unsupported apiVersion {other:?}; supported: {supported}"),
            );
            return Policy::default();
        }
    };
    if !kind_ok {
        return Policy::default();
    }
    decode(d, root)
}
