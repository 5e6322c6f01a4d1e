//! The findings in the forms CI systems read (docs/commands.md, "Findings for CI"), from the
//! binary itself: `--output sarif` is validated against the SARIF 2.1.0 JSON schema
//! (tests/fixtures/sarif/sarif-schema-2.1.0.json, formats included) and its results compared
//! whole; `--output github` is read line by line by the workflow-command grammar
//! (`::error file=F,line=L,col=C,title=T::message`, with `%`, CR and LF escaped everywhere and
//! `:` and `,` in property values) and compared line for line.
//!
//! The policies are written into a temporary directory and named relative to it, so the file
//! names in the output are exactly those below; their names hold the characters each format
//! must escape.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use vsphere_descheduler::policy::Rule;

/// One of each kind of error a CI job meets, each placed where the reader should look: an
/// unknown field (a typo) at its key, line 8, column 7; another whose name holds `%`, which the
/// GitHub form escapes (line 9, column 7); a conflict at the mapping that holds both settings
/// (line 13, column 19); the second of a duplicate plugin (line 16, column 30).
const BROKEN: &str = "\
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: p
  pluginConfig:
  - name: DefaultEvictor
    args:
      nodeFitt: true
      100%: true
  - name: PodLifeTime
    args:
      maxPodLifeTimeSeconds: 60
      namespaces: {include: [a], exclude: [b]}
  plugins:
    deschedule:
      enabled: [PodLifeTime, PodLifeTime]
";

/// Valid, with one warning: `evictLocalStoragePods` is deprecated, placed at its value (line 8,
/// column 30).
const WITH_WARNING: &str = "\
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: p
  pluginConfig:
  - name: DefaultEvictor
    args:
      evictLocalStoragePods: true
  - name: PodLifeTime
    args:
      maxPodLifeTimeSeconds: 60
  plugins:
    deschedule:
      enabled: [PodLifeTime]
";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A directory holding `files` (name, content).
fn directory(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    for (name, content) in files {
        std::fs::write(dir.path().join(name), content).expect("write a policy");
    }
    dir
}

/// The binary's exit code and stdout, run in `dir`.
fn run(dir: &Path, args: &[&str]) -> (i32, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_vsphere-descheduler"))
        .args(args)
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .output()
        .expect("the binary runs");
    let stdout = String::from_utf8(output.stdout).expect("UTF-8 output");
    let code = output.status.code().expect("an exit code");
    assert!(
        code != 101,
        "the binary panicked: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    (code, stdout)
}

/// The `language` pattern of the SARIF schema (twice): its lone `]` is a literal in the
/// JavaScript regex dialect the schema was written in, and an error where a regex is read
/// strictly, as jsonschema reads one when it checks the schema against draft 4's meta-schema.
const LANGUAGE_PATTERN: &str = r#""^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$""#;
/// The same pattern with that `]` escaped: the same language, in either reading.
const LANGUAGE_PATTERN_ESCAPED: &str = r#""^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}\\]?$""#;

/// The SARIF 2.1.0 schema (draft 4), checking formats (`uri`, `uri-reference`) too.
fn sarif_validator() -> jsonschema::Validator {
    let path = root().join("tests/fixtures/sarif/sarif-schema-2.1.0.json");
    let text = std::fs::read_to_string(&path).expect("the vendored SARIF schema");
    assert_eq!(
        text.matches(LANGUAGE_PATTERN).count(),
        2,
        "the schema as vendored"
    );
    let text = text.replace(LANGUAGE_PATTERN, LANGUAGE_PATTERN_ESCAPED);
    let schema: Value = serde_json::from_str(&text).expect("the schema is JSON");
    jsonschema::draft4::options()
        .should_validate_formats(true)
        .build(&schema)
        .expect("the SARIF schema compiles")
}

/// Every way `log` breaks the SARIF schema, one line each (empty: valid).
fn schema_errors(log: &Value) -> Vec<String> {
    sarif_validator()
        .iter_errors(log)
        .map(|error| format!("{}: {error}", error.instance_path()))
        .collect()
}

/// `stdout` as a SARIF log that the schema accepts, with one run of this tool describing each
/// rule once: every policy rule and the three that are not about a policy.
fn valid_log(stdout: &str) -> Value {
    let log: Value = serde_json::from_str(stdout).expect("SARIF is JSON");
    assert_eq!(schema_errors(&log), Vec::<String>::new(), "{stdout}");
    assert_eq!(log["version"], "2.1.0");
    let runs = log["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 1);
    let driver = &runs[0]["tool"]["driver"];
    assert_eq!(driver["name"], "vsphere-descheduler");
    assert_eq!(driver["version"], env!("CARGO_PKG_VERSION"));
    let ids: Vec<&str> = driver["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .map(|rule| rule["id"].as_str().expect("a rule id"))
        .collect();
    let mut expected: Vec<&str> = Rule::ALL.iter().map(|rule| rule.id()).collect();
    expected.extend(["input", "max-evictions", "now-before-creation"]);
    assert_eq!(ids, expected);
    log
}

/// A result at a place in a policy file.
fn result_at(rule: &str, level: &str, uri: &str, at: (u64, u64), path: &str, text: &str) -> Value {
    json!({
        "ruleId": rule,
        "level": level,
        "message": {"text": format!("{path}: {text}")},
        "locations": [{
            "physicalLocation": {
                "artifactLocation": {"uri": uri},
                "region": {"startLine": at.0, "startColumn": at.1},
            },
            "logicalLocations": [{"fullyQualifiedName": path}],
        }],
    })
}

/// What a DefaultEvictor argument may be named, as the binary lists them.
const EVICTOR_ARGS: &str = "nodeSelector, labelSelector, namespaceLabelSelector, \
     priorityThreshold, nodeFit, minReplicas, minPodAge, noEvictionPolicy, podProtections, \
     evictLocalStoragePods, evictDaemonSetPods, evictSystemCriticalPods, evictFailedBarePods, \
     ignorePvcPods, ignorePodsWithoutPDB";

/// BROKEN's findings in a file named by `uri` (SARIF's form of its name), in order: rule, level,
/// line and column, field path, message.
fn broken_results(uri: &str) -> Vec<Value> {
    vec![
        result_at(
            "unknown-field",
            "error",
            uri,
            (8, 7),
            "profiles[0].pluginConfig[0].args.nodeFitt",
            &format!("unknown field \"nodeFitt\"; did you mean \"nodeFit\"? valid: {EVICTOR_ARGS}"),
        ),
        result_at(
            "unknown-field",
            "error",
            uri,
            (9, 7),
            "profiles[0].pluginConfig[0].args.100%",
            &format!("unknown field \"100%\"; valid: {EVICTOR_ARGS}"),
        ),
        result_at(
            "conflict",
            "error",
            uri,
            (13, 19),
            "profiles[0].pluginConfig[1].args.namespaces",
            "set either include or exclude, not both",
        ),
        result_at(
            "duplicate",
            "error",
            uri,
            (16, 30),
            "profiles[0].plugins.deschedule.enabled[1]",
            "PodLifeTime is enabled twice",
        ),
    ]
}

/// WITH_WARNING's one finding, in a file named by `uri`.
fn warning_result(uri: &str) -> Value {
    result_at(
        "deprecated",
        "warning",
        uri,
        (8, 30),
        "profiles[0].pluginConfig[0].args.evictLocalStoragePods",
        "evictLocalStoragePods is deprecated upstream; use podProtections",
    )
}

#[test]
fn validate_sarif_is_valid_sarif_with_each_finding_at_its_file_line_and_column() {
    let dir = directory(&[("broken policy.yaml", BROKEN), ("fine.yaml", WITH_WARNING)]);

    let (code, stdout) = run(
        dir.path(),
        &[
            "--output",
            "sarif",
            "validate",
            "broken policy.yaml",
            "fine.yaml",
        ],
    );

    assert_eq!(code, 1, "{stdout}");
    let log = valid_log(&stdout);
    let mut expected = broken_results("broken%20policy.yaml");
    expected.push(warning_result("fine.yaml"));
    assert_eq!(log["runs"][0]["results"], json!(expected), "{stdout}");
}

#[test]
fn plan_sarif_gives_the_policy_s_problems_and_exits_as_plan_does() {
    let dir = directory(&[("broken policy.yaml", BROKEN)]);
    let snapshot = snapshot_fixture();

    let (code, stdout) = run(
        dir.path(),
        &[
            "--output",
            "sarif",
            "plan",
            "--snapshot",
            snapshot.to_str().expect("a UTF-8 path"),
            "--policy",
            "broken policy.yaml",
        ],
    );

    assert_eq!(code, 2, "{stdout}");
    let log = valid_log(&stdout);
    assert_eq!(
        log["runs"][0]["results"],
        json!(broken_results("broken%20policy.yaml")),
        "{stdout}"
    );
}

#[test]
fn plan_sarif_past_max_evictions_is_an_error_without_a_place_beside_the_policy_s_warning() {
    let dir = over_limit();

    let (code, stdout) = run(
        dir.path(),
        &[
            "--output",
            "sarif",
            "plan",
            "--snapshot",
            "over limit.yaml",
            "--policy",
            "policy.yaml",
            "--max-evictions",
            "8",
        ],
    );

    assert_eq!(code, 3, "{stdout}");
    let log = valid_log(&stdout);
    assert_eq!(
        log["runs"][0]["results"],
        json!([
            result_at(
                "deprecated",
                "warning",
                "policy.yaml",
                (45, 22),
                "profiles[0].pluginConfig[3].args.ignorePvcPods",
                "ignorePvcPods is deprecated upstream; use podProtections",
            ),
            {
                "ruleId": "max-evictions",
                "level": "error",
                "message": {"text": "the plan evicts 9 pods, more than --max-evictions 8 allows"},
            },
        ]),
        "{stdout}"
    );
}

/// The GitHub form of one finding, as the runner reads it back.
#[derive(Debug, PartialEq, Eq)]
struct WorkflowCommand {
    name: String,
    properties: Vec<(String, String)>,
    message: String,
}

/// `line` by the workflow-command grammar: `::NAME` then, after one space, `KEY=VALUE` pairs
/// joined by `,`, then `::` and the message. A property value escapes `%`, CR, LF, `:` and `,`
/// (`%25`, `%0D`, `%0A`, `%3A`, `%2C`); the message escapes `%`, CR and LF. Any other `%`
/// is not one of these escapes, so it is refused.
fn parse_command(line: &str) -> WorkflowCommand {
    let rest = line
        .strip_prefix("::")
        .unwrap_or_else(|| panic!("{line:?} starts with ::"));
    let (head, message) = rest
        .split_once("::")
        .unwrap_or_else(|| panic!("{line:?} has :: before its message"));
    let (name, properties) = head.split_once(' ').unwrap_or((head, ""));
    assert!(
        !name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase()),
        "{line:?}: a command name"
    );
    let properties = properties
        .split(',')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair
                .split_once('=')
                .unwrap_or_else(|| panic!("{line:?}: {pair:?} is KEY=VALUE"));
            (key.to_string(), unescape(value, true))
        })
        .collect();
    WorkflowCommand {
        name: name.to_string(),
        properties,
        message: unescape(message, false),
    }
}

fn unescape(text: &str, property: bool) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let escape = rest.get(at..at + 3).unwrap_or(&rest[at..]);
        out.push(match escape {
            "%25" => '%',
            "%0D" => '\r',
            "%0A" => '\n',
            "%3A" if property => ':',
            "%2C" if property => ',',
            other => panic!("{text:?}: {other:?} is not an escape here"),
        });
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    out
}

/// `(key, value)` pairs as the parser gives them.
fn pairs(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect()
}

/// A finding's command: `name` with the file's place and the rule's title, and its message.
fn command_at(
    name: &str,
    file: &str,
    at: (u32, u32),
    rule: &str,
    message: &str,
) -> WorkflowCommand {
    WorkflowCommand {
        name: name.to_string(),
        properties: pairs(&[
            ("file", file),
            ("line", &at.0.to_string()),
            ("col", &at.1.to_string()),
            ("title", &format!("vsphere-descheduler {rule}")),
        ]),
        message: message.to_string(),
    }
}

/// `stdout`'s lines, each also read by the grammar, which must give back `expected`.
fn assert_commands(stdout: &str, lines: &[String], expected: &[WorkflowCommand]) {
    let written: Vec<&str> = stdout.lines().collect();
    assert_eq!(written, lines, "{stdout}");
    let read: Vec<WorkflowCommand> = written.iter().map(|line| parse_command(line)).collect();
    assert_eq!(read, expected, "{stdout}");
}

#[test]
fn validate_github_writes_one_workflow_command_per_finding_escaped_as_the_runner_reads_it() {
    // `%`, `,` and `:` in a file name are escaped in the `file` property; `%` in a field name is
    // escaped in the message.
    let name = "100%,a:b.yaml";
    let dir = directory(&[(name, BROKEN), ("fine.yaml", WITH_WARNING)]);

    let (code, stdout) = run(
        dir.path(),
        &["--output", "github", "validate", name, "fine.yaml"],
    );

    assert_eq!(code, 1, "{stdout}");
    let file = "file=100%25%2Ca%3Ab.yaml";
    let title = "title=vsphere-descheduler";
    let evictor = "profiles[0].pluginConfig[0].args";
    assert_commands(
        &stdout,
        &[
            format!(
                "::error {file},line=8,col=7,{title} unknown-field::{evictor}.nodeFitt: unknown \
                 field \"nodeFitt\"; did you mean \"nodeFit\"? valid: {EVICTOR_ARGS}"
            ),
            format!(
                "::error {file},line=9,col=7,{title} unknown-field::{evictor}.100%25: unknown \
                 field \"100%25\"; valid: {EVICTOR_ARGS}"
            ),
            format!(
                "::error {file},line=13,col=19,{title} conflict::profiles[0].pluginConfig[1]\
                 .args.namespaces: set either include or exclude, not both"
            ),
            format!(
                "::error {file},line=16,col=30,{title} duplicate::profiles[0].plugins.deschedule\
                 .enabled[1]: PodLifeTime is enabled twice"
            ),
            format!(
                "::warning file=fine.yaml,line=8,col=30,{title} deprecated::{evictor}\
                 .evictLocalStoragePods: evictLocalStoragePods is deprecated upstream; use \
                 podProtections"
            ),
        ],
        &[
            command_at(
                "error",
                name,
                (8, 7),
                "unknown-field",
                &format!(
                    "{evictor}.nodeFitt: unknown field \"nodeFitt\"; did you mean \"nodeFit\"? \
                     valid: {EVICTOR_ARGS}"
                ),
            ),
            command_at(
                "error",
                name,
                (9, 7),
                "unknown-field",
                &format!("{evictor}.100%: unknown field \"100%\"; valid: {EVICTOR_ARGS}"),
            ),
            command_at(
                "error",
                name,
                (13, 19),
                "conflict",
                "profiles[0].pluginConfig[1].args.namespaces: set either include or exclude, \
                 not both",
            ),
            command_at(
                "error",
                name,
                (16, 30),
                "duplicate",
                "profiles[0].plugins.deschedule.enabled[1]: PodLifeTime is enabled twice",
            ),
            command_at(
                "warning",
                "fine.yaml",
                (8, 30),
                "deprecated",
                &format!(
                    "{evictor}.evictLocalStoragePods: evictLocalStoragePods is deprecated \
                     upstream; use podProtections"
                ),
            ),
        ],
    );
}

#[test]
fn plan_github_places_a_plan_made_too_early_at_the_youngest_pod_and_names_no_file_for_the_limit() {
    let dir = over_limit();
    let plan = |extra: &[&str]| {
        let mut args = vec![
            "--output",
            "github",
            "plan",
            "--snapshot",
            "over limit.yaml",
            "--policy",
            "policy.yaml",
        ];
        args.extend_from_slice(extra);
        run(dir.path(), &args)
    };
    let title = "title=vsphere-descheduler";
    let deprecated_line = format!(
        "::warning file=policy.yaml,line=45,col=22,{title} deprecated::profiles[0]\
         .pluginConfig[3].args.ignorePvcPods: ignorePvcPods is deprecated upstream; use \
         podProtections"
    );
    let deprecated = command_at(
        "warning",
        "policy.yaml",
        (45, 22),
        "deprecated",
        "profiles[0].pluginConfig[3].args.ignorePvcPods: ignorePvcPods is deprecated upstream; \
         use podProtections",
    );

    // Before the pods were created: a warning at the youngest pod's document (line 673).
    let (code, stdout) = plan(&["--now", "2020-01-01T00:00:00Z"]);
    assert_eq!(code, 0, "{stdout}");
    let too_early = "pod search/search-3e2d-ccccc was created at 2026-11-21T06:11:00Z, after \
         the instant planned at, 2020-01-01T00:00:00Z: it is judged as just started (younger \
         than any minPodAge), and so are the 17 other pods created after it; give a later \
         --now, or none to plan at the snapshot's recordedAt";
    assert_commands(
        &stdout,
        &[
            deprecated_line.clone(),
            format!(
                "::warning file=over limit.yaml,line=673,col=1,{title} \
                 now-before-creation::{too_early}"
            ),
        ],
        &[
            deprecated,
            command_at(
                "warning",
                "over limit.yaml",
                (673, 1),
                "now-before-creation",
                too_early,
            ),
        ],
    );

    // Past the limit: an error about the plan as a whole, so no file.
    let (code, stdout) = plan(&["--max-evictions", "8"]);
    assert_eq!(code, 3, "{stdout}");
    let limit = "the plan evicts 9 pods, more than --max-evictions 8 allows";
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        [
            deprecated_line,
            format!("::error {title} max-evictions::{limit}")
        ],
        "{stdout}"
    );
    assert_eq!(
        parse_command(stdout.lines().nth(1).expect("the second line")),
        WorkflowCommand {
            name: "error".to_string(),
            properties: pairs(&[("title", "vsphere-descheduler max-evictions")]),
            message: limit.to_string(),
        }
    );
}

#[test]
fn the_schema_check_refuses_what_sarif_does_not_allow() {
    let dir = directory(&[("fine.yaml", WITH_WARNING)]);
    let (_, stdout) = run(dir.path(), &["--output", "sarif", "validate", "fine.yaml"]);
    let log = valid_log(&stdout);

    let mut unknown_level = log.clone();
    unknown_level["runs"][0]["results"][0]["level"] = json!("fatal");
    let mut line_zero = log.clone();
    line_zero["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] =
        json!(0);
    // `$schema` is a `uri`, which must be absolute.
    let mut not_a_uri = log;
    not_a_uri["$schema"] = json!("sarif-2.1.0.json");

    for broken in [unknown_level, line_zero, not_a_uri] {
        assert_ne!(schema_errors(&broken), Vec::<String>::new(), "{broken:#}");
    }
}

/// The snapshot of a story of the repository, for plans of a broken policy (which never read it).
fn snapshot_fixture() -> PathBuf {
    root().join("tests/fixtures/e2e/several-violations/snapshot.yaml")
}

/// The CI gate's snapshot of nine pods past their lifetime (`over limit.yaml`, a name SARIF
/// must encode) and its policy (`policy.yaml`, with one deprecated field at line 45, column 22).
fn over_limit() -> tempfile::TempDir {
    let fixtures = root().join("tests/fixtures/ci-gate");
    let read =
        |name: &str| std::fs::read_to_string(fixtures.join(name)).expect("a CI gate fixture");
    let snapshot = read("over-limit.yaml");
    let policy = read("over-limit-policy.yaml");
    directory(&[("over limit.yaml", &snapshot), ("policy.yaml", &policy)])
}
