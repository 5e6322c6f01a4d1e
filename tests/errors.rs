//! The text of errors about input files, over mutated policies and snapshots (issue 21): every
//! problem is one line of at most 500 characters, positioned where a position exists, with no
//! control character and no Rust or library type name. The mutations are drawn from a fixed
//! seed, so a failure is the same on every run and machine.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use vsphere_descheduler::{error_chain, policy, snapshot};

/// splitmix64: a small, well-mixed generator; the seed fixes every case.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Text an attacker or a slip of the keyboard might put anywhere.
fn hostile(rng: &mut Rng) -> String {
    let long = "x".repeat(20_000);
    let pieces = [
        "\n",
        "\r",
        "\t",
        "\u{1b}[2J",
        "\u{2028}",
        "\u{202e}",
        "\u{85}",
        "\u{7}",
        "\"",
        "'",
        ": ",
        "- ",
        "{",
        "}",
        "[",
        "]",
        "&a ",
        "*a",
        "!!binary ",
        "-1",
        "99999999999999999999",
        "1.5",
        "true",
        "null",
        "~",
        "#",
        long.as_str(),
    ];
    rng.pick(&pieces).to_string()
}

/// Values that are wrong in type or content wherever they land, some with escapes YAML and
/// JSON decode into control characters.
const VALUES: &[&str] = &[
    "3",
    "-7",
    "4294967296",
    "1.5",
    "true",
    "null",
    "[]",
    "{}",
    "[1, 2]",
    "{a: 1}",
    "\"a\\nerror: forged\\u001b[31m\"",
    "\"\\u2028\\u202e\"",
    "\"\"",
    "\"web\\rx\"",
    "x",
];

fn char_boundary(text: &str, rng: &mut Rng) -> usize {
    let mut at = rng.below(text.len() + 1);
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// One to three edits of `text`: hostile insertions, deletions, duplicated lines, values
/// replaced, keys made hostile.
fn mutate(text: &str, rng: &mut Rng, json: bool) -> String {
    let mut text = text.to_string();
    for _ in 0..=rng.below(3) {
        match rng.below(6) {
            0 => {
                let at = char_boundary(&text, rng);
                text.insert_str(at, &hostile(rng));
            }
            1 => {
                let start = char_boundary(&text, rng);
                let end = (start + rng.below(40)).min(text.len());
                let mut end = end;
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                text.replace_range(start..end, "");
            }
            2 => {
                let lines: Vec<&str> = text.lines().collect();
                if lines.is_empty() {
                    continue;
                }
                let line = rng.below(lines.len());
                let mut out: Vec<&str> = lines.clone();
                out.insert(line, lines[line]);
                text = out.join("\n");
            }
            3 | 4 => text = replace_value(&text, rng, json),
            _ => text = hostile_key(&text, rng, json),
        }
    }
    text
}

/// Replaces the value after one `key: ` (`"key": ` in JSON) with a wrong one.
fn replace_value(text: &str, rng: &mut Rng, json: bool) -> String {
    let separator = if json { "\": " } else { ": " };
    let spots: Vec<usize> = text.match_indices(separator).map(|(at, _)| at).collect();
    if spots.is_empty() {
        return text.to_string();
    }
    let start = *rng.pick(&spots) + separator.len();
    let end = text[start..]
        .find(if json { [',', '\n'] } else { ['\n', '\n'] })
        .map_or(text.len(), |at| start + at);
    let mut value = rng.pick(VALUES).to_string();
    if json {
        value = match value.as_str() {
            "x" => "\"x\"".to_string(),
            "{a: 1}" => "{\"a\": 1}".to_string(),
            other => other.to_string(),
        };
    }
    if rng.below(8) == 0 {
        value = format!("\"{}\"", "v".repeat(20_000));
    }
    format!("{}{}{}", &text[..start], value, &text[end..])
}

/// Puts a newline, an escape sequence or a line separator into one key, as an escaped,
/// quoted key that decodes to them.
fn hostile_key(text: &str, rng: &mut Rng, json: bool) -> String {
    let separator = if json { "\": " } else { ": " };
    let spots: Vec<usize> = text.match_indices(separator).map(|(at, _)| at).collect();
    if spots.is_empty() {
        return text.to_string();
    }
    let at = *rng.pick(&spots);
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let key_start = line_start
        + text[line_start..at]
            .find(|c: char| !c.is_whitespace() && c != '-' && c != '"')
            .unwrap_or(0);
    let key = text[key_start..at].trim_matches('"');
    let inserted = rng.pick(&["\\n", "\\u001b[1A", "\\u2028", "\\r"]);
    let end = if json { at + 1 } else { at };
    format!("{}\"{key}{inserted}\"{}", &text[..key_start], &text[end..])
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn fixture_files(name: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("tests/fixtures/plan"))
        .expect("the plan fixtures")
        .map(|entry| entry.expect("an entry").path().join(name))
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    files
}

/// What is wrong with one error text, if anything.
fn flaws(error: &str) -> Vec<String> {
    let mut flaws = Vec::new();
    if let Some(c) = error.chars().find(|c| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')) {
        flaws.push(format!("holds the control character {c:?}"));
    }
    let length = error.chars().count();
    if length > 500 {
        flaws.push(format!("is {length} characters long"));
    }
    for internal in [
        "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64", "usize", "isize",
    ] {
        if error.contains(&format!("expected {internal}"))
            || error.contains(&format!("invalid {internal}"))
        {
            flaws.push(format!("names the Rust type {internal}"));
        }
    }
    if let Some(at) = error.find(", expected ") {
        let word: String = error[at + 11..]
            .chars()
            .take_while(char::is_ascii_alphanumeric)
            .collect();
        let camel = word.chars().next().is_some_and(|c| c.is_ascii_uppercase())
            && word.chars().skip(1).any(|c| c.is_ascii_lowercase())
            && word.chars().skip(1).any(|c| c.is_ascii_uppercase());
        if camel {
            flaws.push(format!("names the type {word}"));
        }
    }
    for debug in [
        "Some(",
        "None)",
        " { ",
        "budget breached",
        "Error(",
        "Status {",
    ] {
        if error.contains(debug) {
            flaws.push(format!("shows debug output {debug:?}"));
        }
    }
    // What the YAML and JSON libraries say of their own options and types (issue 29).
    for library in LIBRARY_WORDING {
        if error.contains(library) {
            flaws.push(format!("speaks the library's words {library:?}"));
        }
    }
    // A Rust path (`core::fmt`), not a user's key that ends in a colon before the message's own.
    let path = error
        .as_bytes()
        .windows(3)
        .any(|w| w[0].is_ascii_alphanumeric() && w[1] == b':' && w[2] == b':')
        && error
            .match_indices("::")
            .any(|(at, _)| error[at + 2..].starts_with(|c: char| c.is_ascii_alphabetic()));
    if path {
        flaws.push("shows a Rust path \"::\"".to_string());
    }
    flaws
}

/// Phrases of the readers' libraries that name their options, their policies or Rust's types:
/// the errors a user reads are about the file.
const LIBRARY_WORDING: &[&str] = &[
    "Option<",
    "DuplicateKeyPolicy",
    "in Options",
    "configured policy",
    "floating point",
    "ignore_binary_tag",
    "serde",
    "saphyr",
    "deserialize",
    "unit struct",
    "enum variant",
    "internal error",
];

struct Findings(Vec<String>);

impl Findings {
    fn check(&mut self, input: &str, error: &str) {
        let flaws = flaws(error);
        if !flaws.is_empty() && self.0.len() < 40 {
            let shown: String = error.chars().take(300).collect();
            let input: String = input.chars().take(0).collect();
            self.0.push(format!("{flaws:?}: {shown:?}{input}"));
        }
    }

    fn positioned(&mut self, error: &str, file: &str) {
        let rest = error.strip_prefix(file).and_then(|r| r.strip_prefix(':'));
        let positioned = rest.is_some_and(|rest| {
            let mut parts = rest.splitn(3, ':');
            let line = parts.next().is_some_and(|p| p.parse::<usize>().is_ok());
            let column = parts.next().is_some_and(|p| p.parse::<usize>().is_ok());
            line && column
        });
        if !positioned && self.0.len() < 40 {
            let shown: String = error.chars().take(300).collect();
            self.0.push(format!("not positioned: {shown:?}"));
        }
    }
}

const CASES: usize = 2000;

#[test]
fn errors_about_mutated_policies_are_single_clean_positioned_lines() {
    let mut originals: Vec<PathBuf> = fixture_files("policy.yaml");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for name in [
        "host-anti-affinity.yaml",
        "host-spread.yaml",
        "upstream-v1alpha2.yaml",
    ] {
        originals.push(root.join("policies").join(name));
    }
    let texts: Vec<String> = originals.iter().map(|p| read(p)).collect();
    let mut rng = Rng(21);
    let mut findings = Findings(Vec::new());
    let mut invalid = 0;
    for _ in 0..CASES {
        let original: &String = rng.pick(&texts);
        let text = mutate(original, &mut rng, false);
        match policy::load_str("policy.yaml", &text) {
            Ok(loaded) => {
                for warning in &loaded.warnings {
                    findings.check(&text, &warning.to_string());
                }
            }
            Err(policy::PolicyError::Invalid { problems, .. }) => {
                invalid += 1;
                for problem in &problems {
                    let line = problem.to_string();
                    findings.check(&text, &line);
                    if problem.position.is_some() {
                        findings.positioned(&line, "policy.yaml");
                    }
                }
            }
            Err(other) => findings.check(&text, &error_chain(&other)),
        }
    }
    assert!(
        invalid > CASES / 4,
        "the mutations rarely break a policy: {invalid}"
    );
    assert!(findings.0.is_empty(), "{:#?}", findings.0);
}

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-21T20:49:09Z")
        .expect("a time")
        .to_utc()
}

/// Reads and assembles one snapshot text as `plan` does; the error lines it yields.
fn snapshot_errors(text: &str) -> Vec<String> {
    let path = PathBuf::from("snapshot.yaml");
    match snapshot::read_str(text) {
        Err(error) => vec![format!("snapshot.yaml:{error}")],
        Ok(objects) => match snapshot::assemble(vec![(path, objects)], now()) {
            Ok(_) => Vec::new(),
            Err(error) => vec![error_chain(&error)],
        },
    }
}

#[test]
fn errors_about_mutated_snapshots_are_single_clean_positioned_lines() {
    let yaml: Vec<String> = fixture_files("snapshot.yaml")
        .iter()
        .map(|p| read(p))
        .collect();
    let json: Vec<String> = yaml
        .iter()
        .take(8)
        .map(|text| {
            let documents: Vec<serde_json::Value> =
                serde_saphyr::from_multiple(text).expect("fixtures are YAML");
            documents
                .iter()
                .map(|d| serde_json::to_string_pretty(d).expect("JSON"))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect();
    let mut rng = Rng(2021);
    let mut findings = Findings(Vec::new());
    let mut failed = 0;
    for case in 0..CASES {
        let is_json = case % 3 == 0;
        let original: &String = if is_json {
            rng.pick(&json)
        } else {
            rng.pick(&yaml)
        };
        let text = mutate(original, &mut rng, is_json);
        for error in snapshot_errors(&text) {
            failed += 1;
            findings.check(&text, &error);
            if error.starts_with("snapshot.yaml:") && !error.starts_with("snapshot.yaml: ") {
                findings.positioned(&error, "snapshot.yaml");
            }
        }
    }
    assert!(
        failed > CASES / 4,
        "the mutations rarely break a snapshot: {failed}"
    );
    assert!(findings.0.is_empty(), "{:#?}", findings.0);
}

/// Snapshot files that provoke each kind of problem the readers word, in YAML and in JSON: file
/// name and bytes.
fn broken_snapshots() -> Vec<(&'static str, Vec<u8>)> {
    let namespace = |rest: &str| format!("apiVersion: v1\nkind: Namespace\n{rest}");
    let pod = |spec: &str| {
        format!(
            "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: \
             {{name: p, namespace: ns}}\n  spec: {{nodeName: w1, containers: [], {spec}}}\n"
        )
    };
    let cases: Vec<(&'static str, String)> = vec![
        ("duplicate.yaml", namespace("metadata:\n  name: a\n  name: b\n")),
        ("duplicate.json", r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a","name":"b"}}"#.to_string()),
        ("duplicate-unread.json", r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"},"x":{"k":1,"\u006b":2}}"#.to_string()),
        ("duplicate-item.json", format!(r#"{{"apiVersion":"v1","kind":"List","items":[{}]}}"#, r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"w1","labels":{"a":"1","a":"2"}}}"#)),
        ("null-key.yaml", namespace("metadata: {name: a}\n~: 1\n")),
        ("infinity.yaml", namespace("metadata: {name: a, labels: {x: .inf}}\n")),
        ("binary.yaml", namespace("metadata: {name: a}\n!!binary /w==: 1\n")),
        ("binary-value.yaml", namespace("metadata: {name: a}\nb: !!binary /w==\n")),
        ("unknown-anchor.yaml", namespace("metadata: {name: *nowhere}\n")),
        ("bad-int-tag.yaml", namespace("metadata: {name: a, generation: !!int abc}\n")),
        ("list.yaml", "- a\n- b\n".to_string()),
        ("items-scalar.yaml", "apiVersion: v1\nkind: List\nitems: 3\n".to_string()),
        ("octal-text.yaml", namespace("metadata: {name: a, labels: {x: 0777}}\n")),
        ("fraction.yaml", pod("priority: 1.5")),
        ("leading-zero.yaml", pod("priority: 09")),
        ("unclosed.yaml", namespace("metadata: {name: a\n")),
        ("tab.yaml", namespace("metadata:\n\tname: a\n")),
        ("alias-bomb.yaml", format!("a: &a [{}]\nb: [{}]\n", "x, ".repeat(1000), "*a, ".repeat(3000))),
        ("deep.yaml", format!("a: {}\n", "[".repeat(1000))),
        ("deep.json", "{\"a\":".repeat(1000)),
        ("garbage.json", r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"}} !"#.to_string()),
        ("escape.json", r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"\x"}}"#.to_string()),
        ("flow-type.yaml", "{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: ns}, spec: {priority: high}}\n".to_string()),
    ];
    let mut files: Vec<(&'static str, Vec<u8>)> = cases
        .into_iter()
        .map(|(name, text)| (name, text.into_bytes()))
        .collect();
    files.push((
        "invalid-utf8.yaml",
        b"apiVersion: v1\nkind: \xff\n".to_vec(),
    ));
    files.push((
        "lone-surrogate.yaml",
        vec![0xff, 0xfe, b'a', 0, b':', 0, b' ', 0, 0x00, 0xdc],
    ));
    files.push(("control.json", b"{\"a\": \"\x07\"}".to_vec()));
    files
}

#[test]
fn every_kind_of_problem_in_a_snapshot_is_told_in_our_words_at_its_position() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let mut findings = Findings(Vec::new());
    let mut duplicates = Vec::new();
    for (name, bytes) in broken_snapshots() {
        let path = directory.path().join(name);
        std::fs::write(&path, &bytes).expect("writable");
        let error = match snapshot::load_files(std::slice::from_ref(&path), now()) {
            Ok(_) => panic!("{name} is read"),
            Err(error) => error_chain(&error),
        };
        let line = error
            .lines()
            .find_map(|line| line.trim().strip_prefix("caused by: "))
            .unwrap_or(&error)
            .to_string();
        assert!(!line.starts_with("nothing to plan on"), "{name} is read");
        findings.check(name, &line);
        findings.positioned(&line, &path.display().to_string());
        if name.starts_with("duplicate") {
            duplicates.push(
                line.split_once(": document 1: ")
                    .map(|(_, m)| m.to_string()),
            );
        }
    }
    assert!(findings.0.is_empty(), "{:#?}", findings.0);
    // One rule, in one sentence, for YAML and JSON.
    for message in &duplicates {
        let message = message.as_deref().unwrap_or_default();
        assert!(
            message.ends_with(
                "appears twice in one mapping: which of its values is meant cannot be told, keep one"
            ),
            "{message}"
        );
    }
    assert_eq!(duplicates.len(), 4);
}

#[test]
fn every_kind_of_problem_in_a_policy_is_told_in_our_words_at_its_position() {
    let header =
        "apiVersion: vsphere-descheduler.io/v1alpha1\nkind: DeschedulerPolicy\nclusterName: c\n";
    let texts: Vec<(&str, String)> = vec![
        ("duplicate", format!("{header}clusterName: d\n")),
        ("null key", format!("{header}~: 1\n")),
        (
            "infinity",
            format!("{header}maxNoOfPodsToEvictTotal: .inf\n"),
        ),
        (
            "fraction",
            format!("{header}maxNoOfPodsToEvictTotal: 1.5\n"),
        ),
        ("binary", format!("{header}!!binary /w==: 1\n")),
        ("unknown anchor", format!("{header}profiles: *nowhere\n")),
        ("merge scalar", format!("{header}vsphere: {{<<: 1}}\n")),
        (
            "bad int tag",
            format!("{header}maxNoOfPodsToEvictTotal: !!int abc\n"),
        ),
        ("unclosed", format!("{header}profiles: [\n")),
        ("tab", format!("{header}vsphere:\n\tserver: a\n")),
        ("second document", format!("{header}---\n{header}")),
        ("deep", format!("{header}a: {}\n", "[".repeat(1000))),
        (
            "alias bomb",
            format!(
                "{header}a: &a [{}]\nb: [{}]\n",
                "x, ".repeat(100),
                "*a, ".repeat(3000)
            ),
        ),
    ];
    let mut findings = Findings(Vec::new());
    for (name, text) in &texts {
        match policy::load_str("policy.yaml", text) {
            Ok(_) => panic!("{name} is read"),
            Err(policy::PolicyError::Invalid { problems, .. }) => {
                for problem in &problems {
                    let line = problem.to_string();
                    findings.check(name, &line);
                    if problem.position.is_some() {
                        findings.positioned(&line, "policy.yaml");
                    }
                }
            }
            Err(other) => findings.check(name, &error_chain(&other)),
        }
    }
    assert!(findings.0.is_empty(), "{:#?}", findings.0);
}
