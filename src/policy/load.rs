//! Reading a policy file: size cap, YAML parsing, format dispatch on `apiVersion`, and the
//! problems and warnings that come out of it.

use crate::policy::rule::Rule;
use std::fmt;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use thiserror::Error;

use super::decode::{Decoder, RawFinding};
use super::v1alpha2::{Flavor, UPSTREAM_API_VERSION, VSPHERE_API_VERSION};
use super::yaml::{self, MAX_FILE_BYTES, Position, Value, YamlNode};
use super::{Policy, v1alpha1, v1alpha2};
use crate::text::{one_line, shown};

/// The `kind` every policy file has.
const KIND: &str = "DeschedulerPolicy";

/// A policy and what the reader should know about it.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedPolicy {
    pub policy: Policy,
    /// Things that are valid but probably not what the author meant (ignored fields, deprecated
    /// formats); each displays like a problem: `FILE:LINE:COL: PATH: MESSAGE`.
    pub warnings: Vec<PolicyProblem>,
}

/// How much a finding matters: an error makes the file invalid, a warning does not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// One thing wrong with a policy file, or (among [`LoadedPolicy::warnings`]) one that works but
/// deserves a look.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyProblem {
    /// What kind of finding it is: a stable id for tools.
    pub rule: Rule,
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

impl PolicyProblem {
    fn new(file: &str, finding: RawFinding) -> PolicyProblem {
        PolicyProblem {
            rule: finding.rule,
            file: file.to_string(),
            position: finding.position,
            path: finding.path,
            message: finding.message,
        }
    }
}

impl fmt::Display for PolicyProblem {
    /// `FILE:LINE:COL: PATH: MESSAGE`, the shape editors and CI annotators understand; parts
    /// that are unknown are left out.
    /// One line of at most [`crate::text::MAX_MESSAGE`] characters: paths and messages quote the file's keys
    /// and values, which may hold anything.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut line = self.file.clone();
        if let Some(position) = self.position {
            line.push_str(&format!(":{position}"));
        }
        if !self.path.is_empty() {
            line.push_str(&format!(": {}", shown(&self.path)));
        }
        line.push_str(&format!(": {}", self.message));
        f.write_str(&one_line(&line))
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
        problems: Vec<PolicyProblem>,
    },
}

fn count(n: usize) -> String {
    if n == 1 {
        "1 problem".to_string()
    } else {
        format!("{n} problems")
    }
}

fn list(problems: &[PolicyProblem]) -> String {
    problems
        .iter()
        .map(PolicyProblem::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Reads and resolves a policy file.
pub fn load_file(path: &Path) -> Result<LoadedPolicy, PolicyError> {
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
            RawFinding {
                rule: Rule::Syntax,
                position: None,
                path: String::new(),
                message: yaml::too_large(),
            },
        ));
    }
    // As kubectl reads files: a byte order mark dropped, UTF-16 with one decoded.
    match crate::encoding::decode(bytes) {
        Ok(text) => load_str(&file_name, &text),
        Err(undecodable) => Err(invalid(
            &file_name,
            RawFinding {
                rule: Rule::Syntax,
                position: Some(end_of(&undecodable.before)),
                path: String::new(),
                message: format!("file is not valid {}", undecodable.encoding),
            },
        )),
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
    Position::new(line, column)
}

/// Resolves a policy held in memory; `file_name` is only used in messages.
pub fn load_str(file_name: &str, text: &str) -> Result<LoadedPolicy, PolicyError> {
    let root = parse(file_name, text)?;
    load_tree(file_name, &root)
}

/// `text` as a positioned YAML tree, or the syntax problem that stops it being one.
pub(super) fn parse(file_name: &str, text: &str) -> Result<YamlNode, PolicyError> {
    yaml::parse(text).map_err(|error| {
        invalid(
            file_name,
            RawFinding {
                rule: Rule::Syntax,
                position: error.position,
                path: String::new(),
                message: error.message,
            },
        )
    })
}

/// Resolves a policy already read as a tree (whose positions are in `file_name`).
pub(super) fn load_tree(file_name: &str, root: &YamlNode) -> Result<LoadedPolicy, PolicyError> {
    let mut d = Decoder::default();
    let policy = decode_document(&mut d, root);
    if !d.problems.is_empty() {
        return Err(PolicyError::Invalid {
            file: file_name.to_string(),
            problems: sorted(file_name, d.problems),
        });
    }
    let warnings = sorted(file_name, d.warnings);
    Ok(LoadedPolicy { policy, warnings })
}

pub(super) fn invalid(file_name: &str, finding: RawFinding) -> PolicyError {
    PolicyError::Invalid {
        file: file_name.to_string(),
        problems: vec![PolicyProblem::new(file_name, finding)],
    }
}

/// File order, then the problems without a position; stable, so one node's problems keep the
/// order they were found in.
fn sorted(file_name: &str, findings: Vec<RawFinding>) -> Vec<PolicyProblem> {
    let mut problems: Vec<PolicyProblem> = findings
        .into_iter()
        .map(|finding| PolicyProblem::new(file_name, finding))
        .collect();
    problems.sort_by_key(|problem| (problem.position.is_none(), problem.position));
    problems.dedup();
    problems
}

/// Checks `kind` and dispatches on `apiVersion`. When either is wrong nothing else is checked:
/// the file is probably not a policy at all, and a list of "unknown field" problems would hide
/// the one that matters.
fn decode_document(d: &mut Decoder, root: &YamlNode) -> Policy {
    let entries = match &root.value {
        Value::Map(entries) => entries,
        Value::Null => {
            d.problem_as(
                Rule::Syntax,
                None,
                "",
                "the file is empty; expected a DeschedulerPolicy",
            );
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
            d.problem_as(
                Rule::Header,
                root.position,
                "apiVersion",
                format!("required; supported: {supported}"),
            );
            None
        }
    };
    let kind_ok = match field("kind") {
        Some(node) => match d.string(node, "kind") {
            Some(kind) if kind == KIND => true,
            Some(kind) => {
                d.problem_at_as(
                    Rule::Header,
                    node,
                    "kind",
                    format!("unsupported kind {kind:?}; expected {KIND}"),
                );
                false
            }
            None => false,
        },
        None => {
            d.problem_as(
                Rule::Header,
                root.position,
                "kind",
                format!("required; expected {KIND}"),
            );
            false
        }
    };
    let Some((api_version, version_node)) = api_version else {
        return Policy::default();
    };
    let decode: fn(&mut Decoder, &YamlNode) -> Policy = match api_version.as_str() {
        VSPHERE_API_VERSION => |d, root| v1alpha2::decode(d, root, Flavor::Vsphere),
        UPSTREAM_API_VERSION => |d, root| v1alpha2::decode(d, root, Flavor::Upstream),
        v1alpha1::API_VERSION => v1alpha1::decode,
        other => {
            d.problem_at_as(
                Rule::Header,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testing::{FILE, OURS, problem, problems, warnings};

    #[test]
    fn every_example_policy_loads_without_problems_or_warnings() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("policies");
        let mut loaded = 0;
        for entry in std::fs::read_dir(&dir).expect("policies/ exists") {
            let path = entry.expect("readable directory").path();
            if path.extension().is_some_and(|ext| ext == "yaml") {
                let policy = load_file(&path).unwrap_or_else(|error| panic!("{error}"));
                assert_eq!(policy.warnings, Vec::new(), "{}", path.display());
                assert!(!policy.policy.profiles.is_empty(), "{}", path.display());
                loaded += 1;
            }
        }
        assert!(
            loaded >= 3,
            "expected the example policies in {}",
            dir.display()
        );
    }

    #[test]
    fn a_file_with_several_problems_reports_all_of_them_with_positions() {
        let text = "\
apiVersion: vsphere-descheduler.io/v1alpha1
kind: DeschedulerPolicy
clusterName: Prod_East
maxNoOfPodsToEvictPerNodes: 2
profiles:
  - name: broken
    pluginConfig:
      - name: DefaultEvictor
        args:
          minPodAge: soon
          nodeFit: \"yes\"
    plugins:
      balance:
        enabled: [LowNodeUtilization]
";
        assert_eq!(
            problems(text),
            [
                "policy.yaml:3:14: clusterName: invalid cluster name \"Prod_East\": must consist \
                 of lowercase alphanumeric characters or '-', and start and end with an \
                 alphanumeric character",
                "policy.yaml:4:1: maxNoOfPodsToEvictPerNodes: unknown field \
                 \"maxNoOfPodsToEvictPerNodes\"; did you mean \"maxNoOfPodsToEvictPerNode\"? \
                 valid: apiVersion, kind, profiles, nodeSelector, maxNoOfPodsToEvictPerNode, \
                 maxNoOfPodsToEvictPerNamespace, maxNoOfPodsToEvictTotal, \
                 maxNoOfPodsToEvictPerWorkload, evictionFailureEventNotification, gracePeriodSeconds, metricsCollector, \
                 metricsProviders, clusterName, vsphere",
                "policy.yaml:10:22: profiles[0].pluginConfig[0].args.minPodAge: invalid duration \
                 \"soon\": expected a Go duration such as \"90s\", \"5m\" or \"1h30m\"",
                "policy.yaml:11:20: profiles[0].pluginConfig[0].args.nodeFit: expected a boolean \
                 (true or false), found a string",
                "policy.yaml:13:7: profiles[0].plugins: LowNodeUtilization is enabled without \
                 a pluginConfig entry, and its thresholds has no default (upstream refuses the \
                 plugin without it): add {name: LowNodeUtilization, args: {thresholds: …}} to \
                 pluginConfig",
            ]
        );
    }

    #[test]
    fn the_error_counts_the_problems_and_lists_one_per_line() {
        let error = load_str("p.yaml", "apiVersion: v1\nkind: Pod\n").expect_err("invalid");
        assert_eq!(
            error.to_string(),
            "policy file p.yaml has 2 problems:\n\
             p.yaml:1:13: apiVersion: unsupported apiVersion \"v1\"; supported: \
             vsphere-descheduler.io/v1alpha1, descheduler/v1alpha2, descheduler/v1alpha1\n\
             p.yaml:2:7: kind: unsupported kind \"Pod\"; expected DeschedulerPolicy"
        );
    }

    #[test]
    fn a_wrong_kind_hides_the_rest_of_the_file() {
        let text =
            "apiVersion: vsphere-descheduler.io/v1alpha1\nkind: VSphereInventory\nclusters: []\n";
        assert_eq!(
            problem(text),
            "policy.yaml:2:7: kind: unsupported kind \"VSphereInventory\"; expected DeschedulerPolicy"
        );
    }

    #[test]
    fn a_missing_api_version_names_the_supported_ones() {
        assert_eq!(
            problem("kind: DeschedulerPolicy\n"),
            "policy.yaml:1:1: apiVersion: required; supported: \
             vsphere-descheduler.io/v1alpha1, descheduler/v1alpha2, descheduler/v1alpha1"
        );
    }

    #[test]
    fn yaml_syntax_errors_report_the_parser_position() {
        let text = format!("{OURS}profiles:\n  - name: a\n   plugins: {{}}\n");
        assert_eq!(
            problem(&text),
            "policy.yaml:6:4: while parsing a block collection, did not find expected '-' indicator"
        );
    }

    #[test]
    fn duplicate_keys_are_refused() {
        let text = format!("{OURS}maxNoOfPodsToEvictTotal: 1\nmaxNoOfPodsToEvictTotal: 2\n");
        assert_eq!(
            problem(&text),
            "policy.yaml:5:1: key \"maxNoOfPodsToEvictTotal\" appears twice in one mapping: \
             which of its values is meant cannot be told, keep one"
        );
    }

    #[test]
    fn a_second_document_is_refused() {
        let text = format!("{OURS}---\n{OURS}");
        assert_eq!(
            problem(&text),
            "policy.yaml:4:1: a policy file holds exactly one YAML document; found a second one"
        );
    }

    #[test]
    fn an_empty_file_is_a_problem() {
        assert_eq!(
            problem("# nothing here\n"),
            "policy.yaml: the file is empty; expected a DeschedulerPolicy"
        );
    }

    #[test]
    fn a_document_that_is_not_a_mapping_is_a_problem() {
        assert_eq!(
            problem("- apiVersion: descheduler/v1alpha2\n"),
            "policy.yaml:1:1: expected a mapping (a DeschedulerPolicy), found a list"
        );
    }

    #[test]
    fn an_alias_bomb_is_refused_by_the_expansion_limit_before_it_expands() {
        // "Billion laughs": nine levels of nine aliases would expand to 9^9 strings.
        let mut text = format!("{OURS}a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
        for (name, previous) in ('b'..='i').zip('a'..='h') {
            let aliases = vec![format!("*{previous}"); 9].join(", ");
            text.push_str(&format!("{name}: &{name} [{aliases}]\n"));
        }
        // The limit's own refusal, not the parser's after expanding: 9^9 strings are never made.
        let problem = problem(&text);
        assert!(
            problem.ends_with(
                "too many aliases or anchors: alias expansion is limited so that a file cannot \
                 multiply itself (\"billion laughs\")"
            ),
            "{problem}"
        );
    }

    #[test]
    fn deep_nesting_is_refused() {
        let text = format!("{OURS}a: {}{}\n", "[".repeat(200), "]".repeat(200));
        assert!(
            problem(&text).ends_with(
                "lists and mappings are nested deeper than 32 levels, deeper than any policy nests"
            ),
            "{}",
            problem(&text)
        );
    }

    #[test]
    fn an_oversized_file_is_refused_before_parsing() {
        let text = format!("{OURS}#{}\n", "x".repeat(MAX_FILE_BYTES));
        assert_eq!(
            problem(&text),
            "policy.yaml: file is larger than 4194304 bytes, the most a policy file may be"
        );
    }

    #[test]
    fn an_oversized_file_on_disk_is_refused_without_reading_it_all() {
        let path = std::env::temp_dir().join(format!("policy-large-{}.yaml", std::process::id()));
        std::fs::write(&path, vec![b'#'; MAX_FILE_BYTES + 10]).expect("temp file is writable");
        let error = load_file(&path).expect_err("too large");
        std::fs::remove_file(&path).expect("temp file is removable");
        let PolicyError::Invalid { problems, .. } = error else {
            panic!("{error}")
        };
        assert_eq!(problems[0].message, yaml::too_large());
    }

    #[test]
    fn a_missing_file_is_a_read_error() {
        let error = load_file(Path::new("/nonexistent/policy.yaml")).expect_err("missing");
        assert!(matches!(error, PolicyError::Read { .. }));
        assert_eq!(
            error.to_string(),
            "cannot read policy file /nonexistent/policy.yaml"
        );
    }

    #[test]
    fn a_file_that_is_not_utf8_is_a_problem_at_the_first_bad_byte() {
        let path =
            std::env::temp_dir().join(format!("policy-not-utf8-{}.yaml", std::process::id()));
        std::fs::write(&path, b"apiVersion: x\nkind: \xff\n").expect("temp file is writable");
        let error = load_file(&path).expect_err("not UTF-8");
        std::fs::remove_file(&path).expect("temp file is removable");
        let PolicyError::Invalid { problems, .. } = error else {
            panic!("{error}")
        };
        assert_eq!(problems[0].position, Some(Position::new(2, 7)));
        assert_eq!(problems[0].message, "file is not valid UTF-8");
    }

    #[test]
    fn a_policy_with_a_byte_order_mark_or_in_utf16_reads_as_in_plain_utf8() {
        let text = include_str!("../../policies/host-spread.yaml");
        let expected = format!("{:?}", load_str("policy.yaml", text).expect("valid").policy);
        let utf16 = |little: bool| -> Vec<u8> {
            let mark: [u8; 2] = if little { [0xff, 0xfe] } else { [0xfe, 0xff] };
            let units = text
                .replace('\n', "\r\n")
                .encode_utf16()
                .collect::<Vec<_>>();
            mark.into_iter()
                .chain(units.into_iter().flat_map(|unit| {
                    if little {
                        unit.to_le_bytes()
                    } else {
                        unit.to_be_bytes()
                    }
                }))
                .collect()
        };
        let marked = [&[0xef, 0xbb, 0xbf][..], text.as_bytes()].concat();
        let directory = tempfile::tempdir().expect("a temporary directory");
        for (name, bytes) in [
            ("bom", marked),
            ("utf16le", utf16(true)),
            ("utf16be", utf16(false)),
        ] {
            let path = directory.path().join(format!("{name}.yaml"));
            std::fs::write(&path, bytes).expect("writable");
            let loaded = load_file(&path).unwrap_or_else(|error| panic!("{name}: {error}"));
            assert_eq!(format!("{:?}", loaded.policy), expected, "{name}");
        }
    }

    /// The rule of each problem: what CI tools group and suppress findings by.
    #[test]
    fn each_problem_carries_the_rule_it_breaks() {
        let rules = |text: &str| -> Vec<Rule> {
            match load_str(FILE, text) {
                Err(PolicyError::Invalid { problems, .. }) => {
                    problems.iter().map(|p| p.rule).collect()
                }
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(rules(""), [Rule::Syntax]);
        assert_eq!(rules("a: [b"), [Rule::Syntax]);
        assert_eq!(rules("apiVersion: descheduler/v1alpha2\n"), [Rule::Header]);
        let v2 = "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n";
        assert_eq!(rules(&format!("{v2}profiles: {{}}\n")), [Rule::WrongType]);
        assert_eq!(rules(&format!("{v2}profile: []\n")), [Rule::UnknownField]);
        assert_eq!(
            rules(&format!("{v2}profiles:\n- pluginConfig: []\n")),
            [Rule::MissingField]
        );
        assert_eq!(
            rules(&format!(
                "{v2}profiles:\n- name: a\n  plugins: {{deschedule: {{enabled: [Nope]}}}}\n"
            )),
            [Rule::UnknownPlugin]
        );
    }

    #[test]
    fn problems_print_only_the_parts_they_have() {
        let problem = |position, path: &str| PolicyProblem {
            rule: Rule::InvalidValue,
            file: FILE.to_string(),
            position,
            path: path.to_string(),
            message: "m".to_string(),
        };
        let at = Some(Position::new(3, 7));
        assert_eq!(problem(at, "a.b").to_string(), "policy.yaml:3:7: a.b: m");
        assert_eq!(problem(None, "a.b").to_string(), "policy.yaml: a.b: m");
        assert_eq!(problem(at, "").to_string(), "policy.yaml:3:7: m");
    }

    #[test]
    fn warnings_are_formatted_like_problems() {
        let text = format!(
            "{OURS}profiles:\n  - name: p\n    plugins:\n      deschedule:\n        \
             enabled: [RemovePodsViolatingInterPodAntiAffinity]\n        disabled: [x]\n"
        );
        assert_eq!(
            warnings(&text),
            [
                "policy.yaml:9:19: profiles[0].plugins.deschedule.disabled: disabled lists are \
              ignored (as upstream): only the enabled plugins run"
            ]
        );
    }
}
