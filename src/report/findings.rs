//! Findings about input files (a policy's problems and warnings, a plan's input errors) in the
//! forms CI systems read natively: JSON objects, SARIF 2.1.0 (code-scanning uploads, editors)
//! and GitHub Actions workflow commands (annotations on the pull request's lines).

use std::fmt::Write;

use serde::Serialize;
use serde_json::{Value, json};

use crate::policy::{PolicyProblem, Rule, Severity};
use crate::text::one_line;

/// What SARIF calls the tool.
const TOOL: &str = "vsphere-descheduler";

/// What a finding is about, as its stable id names it: one of the policy's [`Rule`]s, or one of
/// the rules about an input as a whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(into = "&'static str")]
pub enum FindingRule {
    Policy(Rule),
    /// A file that could not be read or planned as a whole (a snapshot, an unreadable policy
    /// file).
    Input,
    /// `plan --max-evictions N` when the plan evicts more than N pods.
    MaxEvictions,
    /// `plan` planning at an instant before pods of its snapshot were created.
    NowBeforeCreation,
}

impl FindingRule {
    /// Every rule, in the order a SARIF log describes them.
    pub fn all() -> impl Iterator<Item = FindingRule> {
        (Rule::ALL.into_iter().map(FindingRule::Policy)).chain([
            FindingRule::Input,
            FindingRule::MaxEvictions,
            FindingRule::NowBeforeCreation,
        ])
    }

    pub fn id(self) -> &'static str {
        match self {
            FindingRule::Policy(rule) => rule.id(),
            FindingRule::Input => "input",
            FindingRule::MaxEvictions => "max-evictions",
            FindingRule::NowBeforeCreation => "now-before-creation",
        }
    }

    fn description(self) -> &'static str {
        match self {
            FindingRule::Policy(rule) => rule.description(),
            FindingRule::Input => "An input file could not be read or used as a whole.",
            FindingRule::MaxEvictions => "The plan evicts more pods than --max-evictions allows.",
            FindingRule::NowBeforeCreation => {
                "The plan is made at an instant before pods of its snapshot were created."
            }
        }
    }

    /// Warnings are their own rules; every other rule is an error.
    fn default_severity(self) -> Severity {
        match self {
            FindingRule::Policy(Rule::NoEffect | Rule::Deprecated | Rule::Caution)
            | FindingRule::NowBeforeCreation => Severity::Warning,
            _ => Severity::Error,
        }
    }
}

impl From<FindingRule> for &'static str {
    fn from(rule: FindingRule) -> &'static str {
        rule.id()
    }
}

impl std::fmt::Display for FindingRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// One finding, as the JSON report lists it and the other forms are made from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    pub rule: FindingRule,
    pub severity: Severity,
    /// The file as named on the command line; `None` when no one file is to blame.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    /// The field path in the document, such as `profiles[0].pluginConfig[1].args.minPodAge`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// The message alone (lowercase), without file, position or path.
    pub message: String,
}

impl Finding {
    /// A policy problem (`Severity::Error`) or warning.
    pub fn of(problem: &PolicyProblem, severity: Severity) -> Finding {
        Finding {
            rule: FindingRule::Policy(problem.rule),
            severity,
            file: Some(problem.file.clone()),
            line: problem.position.map(|p| p.line),
            column: problem.position.map(|p| p.column),
            path: problem.path.clone(),
            message: one_line(&problem.message).into_owned(),
        }
    }

    /// An input that failed as a whole: the error chain in one line.
    pub fn input(file: Option<String>, message: &str) -> Finding {
        Finding {
            rule: FindingRule::Input,
            severity: Severity::Error,
            file,
            line: None,
            column: None,
            path: String::new(),
            message: one_line(message).into_owned(),
        }
    }

    /// An input that failed as a whole by `error`: its chain in one line.
    pub fn failed(file: Option<String>, error: &dyn std::error::Error) -> Finding {
        Finding::input(file, &crate::error_chain(error))
    }

    /// A plan made at an instant before a pod of the snapshot was created, placed at that pod.
    pub fn now_before_creation(warning: &crate::report::NowBeforeCreation) -> Finding {
        Finding {
            rule: FindingRule::NowBeforeCreation,
            severity: Severity::Warning,
            file: Some(warning.file.clone()),
            line: warning.position.map(|p| p.line),
            column: warning.position.map(|p| p.column),
            path: String::new(),
            message: one_line(&warning.message()).into_owned(),
        }
    }

    /// The message with the field path first, as annotations show it.
    fn headline(&self) -> String {
        if self.path.is_empty() {
            self.message.clone()
        } else {
            format!("{}: {}", self.path, self.message)
        }
    }
}

/// A SARIF 2.1.0 log with one run of this tool: every policy rule described (so a viewer can
/// show what each id means), one result per finding.
pub fn sarif(findings: &[Finding]) -> Value {
    let rules: Vec<Value> = FindingRule::all()
        .map(|rule| {
            json!({
                "id": rule.id(),
                "shortDescription": {"text": rule.description()},
                "defaultConfiguration": {"level": level(rule.default_severity())},
            })
        })
        .collect();
    let results: Vec<Value> = findings.iter().map(sarif_result).collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": TOOL,
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "results": results,
        }],
    })
}

fn sarif_result(finding: &Finding) -> Value {
    let mut result = json!({
        "ruleId": finding.rule,
        "level": level(finding.severity),
        "message": {"text": finding.headline()},
    });
    if let Some(file) = &finding.file {
        let mut physical = json!({"artifactLocation": {"uri": uri_reference(file)}});
        if let Some(line) = finding.line {
            let mut region = json!({"startLine": line});
            if let Some(column) = finding.column {
                region["startColumn"] = json!(column);
            }
            physical["region"] = region;
        }
        let mut location = json!({"physicalLocation": physical});
        if !finding.path.is_empty() {
            location["logicalLocations"] = json!([{"fullyQualifiedName": finding.path}]);
        }
        result["locations"] = json!([location]);
    }
    result
}

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

/// A file path as a SARIF `uri` (a URI reference): `/` kept, everything outside RFC 3986's
/// unreserved characters percent-encoded, so a path with spaces or `#` still names the file.
fn uri_reference(path: &str) -> String {
    let mut uri = String::with_capacity(path.len());
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~' | b'/') {
            uri.push(char::from(byte));
        } else {
            let _ = write!(uri, "%{byte:02X}");
        }
    }
    uri
}

/// `found` as `format` writes it: a SARIF log, or GitHub workflow commands (the two findings
/// formats; anything else is GitHub's, the callers never ask for it).
pub fn render(found: &[Finding], format: crate::report::OutputFormat) -> String {
    match format {
        crate::report::OutputFormat::Sarif => {
            serde_json::to_string_pretty(&sarif(found)).expect("a log serializes") + "\n"
        }
        _ => github(found),
    }
}

/// One GitHub Actions workflow command per finding (`::error file=…,line=…,col=…,title=…::…`),
/// which the runner turns into annotations on those lines.
pub fn github(findings: &[Finding]) -> String {
    let mut out = String::new();
    for finding in findings {
        let mut properties = Vec::new();
        if let Some(file) = &finding.file {
            properties.push(format!("file={}", property(file)));
            if let Some(line) = finding.line {
                properties.push(format!("line={line}"));
            }
            if let Some(column) = finding.column {
                properties.push(format!("col={column}"));
            }
        }
        properties.push(format!(
            "title={}",
            property(&format!("{TOOL} {}", finding.rule))
        ));
        let _ = writeln!(
            out,
            "::{} {}::{}",
            level(finding.severity),
            properties.join(","),
            data(&finding.headline())
        );
    }
    out
}

/// A workflow command's message: `%`, CR and LF escaped, as the runner unescapes them.
fn data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A workflow command's property value: as [`data`], and `:` and `,`, which end a property.
fn property(text: &str) -> String {
    data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Position;

    fn problem() -> PolicyProblem {
        PolicyProblem {
            rule: Rule::UnknownField,
            file: "policies/a b,c.yaml".to_string(),
            position: Some(Position::new(7, 5)),
            path: "profiles[0].pluginConfig[0].args.nodeFitt".to_string(),
            message: "unknown field nodeFitt; did you mean nodeFit?".to_string(),
        }
    }

    #[test]
    fn a_finding_keeps_the_problems_parts_apart() {
        let finding = Finding::of(&problem(), Severity::Error);
        assert_eq!(
            serde_json::to_value(&finding).expect("serializes"),
            json!({
                "rule": "unknown-field",
                "severity": "error",
                "file": "policies/a b,c.yaml",
                "line": 7,
                "column": 5,
                "path": "profiles[0].pluginConfig[0].args.nodeFitt",
                "message": "unknown field nodeFitt; did you mean nodeFit?",
            })
        );
    }

    #[test]
    fn github_commands_escape_what_would_end_a_property_or_the_line() {
        let mut finding = Finding::of(&problem(), Severity::Warning);
        finding.message = "100% sure:\nnot".to_string();
        assert_eq!(
            github(&[finding]),
            "::warning file=policies/a b%2Cc.yaml,line=7,col=5,title=vsphere-descheduler \
             unknown-field::profiles[0].pluginConfig[0].args.nodeFitt: 100%25 sure:%0Anot\n"
        );
        let input = Finding::input(None, "cannot read snapshot");
        assert_eq!(
            github(&[input]),
            "::error title=vsphere-descheduler input::cannot read snapshot\n"
        );
    }

    #[test]
    fn sarif_results_point_at_the_file_line_column_and_field() {
        let log = sarif(&[Finding::of(&problem(), Severity::Error)]);
        let result = &log["runs"][0]["results"][0];
        assert_eq!(result["ruleId"], "unknown-field");
        assert_eq!(result["level"], "error");
        let location = &result["locations"][0];
        assert_eq!(
            location["physicalLocation"]["artifactLocation"]["uri"],
            "policies/a%20b%2Cc.yaml"
        );
        assert_eq!(location["physicalLocation"]["region"]["startLine"], 7);
        assert_eq!(location["physicalLocation"]["region"]["startColumn"], 5);
        assert_eq!(
            location["logicalLocations"][0]["fullyQualifiedName"],
            "profiles[0].pluginConfig[0].args.nodeFitt"
        );
        let rules = log["runs"][0]["tool"]["driver"]["rules"]
            .as_array()
            .expect("rules");
        assert_eq!(rules.len(), Rule::ALL.len() + 3);
    }
}
