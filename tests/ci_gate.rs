//! The CI gate as the README documents it, run as written on recorded snapshots: it fails
//! (exit 3) when the plan evicts more than its limit and passes under it. And what makes that
//! hold: a plan without `--now` is made at the snapshot's `recordedAt`, and a plan at an
//! instant before pods of the snapshot existed says so, placed at the youngest of them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(name: &str) -> String {
    root()
        .join("tests/fixtures/ci-gate")
        .join(name)
        .display()
        .to_string()
}

/// The demo's snapshot with a `recordedAt`, and a policy that evicts none of it (the upstream
/// example's strategies find nothing to do there): within any limit the README may set, 0
/// included.
fn within_limit() -> (String, String) {
    let policy = root().join("policies/upstream-v1alpha2.yaml");
    (fixture("within-limit.yaml"), policy.display().to_string())
}

/// Nine pods past their lifetime at the snapshot's `recordedAt`.
fn over_limit() -> (String, String) {
    (
        fixture("over-limit.yaml"),
        fixture("over-limit-policy.yaml"),
    )
}

/// The README's CI gate: the command of its fenced `sh` block that runs `plan` with
/// `--max-evictions`, its continuation lines joined, its comment kept.
fn documented_gate() -> String {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let mut in_block = false;
    let mut command: Option<String> = None;
    let complete = |joined: &String| joined.contains("--max-evictions") && !joined.ends_with('\\');
    for line in readme.lines() {
        let trimmed = line.trim();
        if let Some(joined) = command.as_ref().filter(|joined| complete(joined)) {
            return joined.clone();
        }
        if trimmed.starts_with("```") {
            in_block = !in_block && trimmed == "```sh";
            continue;
        }
        if !in_block {
            continue;
        }
        match &mut command {
            Some(joined) if joined.ends_with('\\') => {
                joined.pop();
                joined.push(' ');
                joined.push_str(trimmed);
            }
            _ if trimmed.starts_with("vsphere-descheduler plan ") => {
                command = Some(trimmed.to_string());
            }
            _ => command = None,
        }
    }
    command
        .filter(complete)
        .expect("README.md documents a CI gate: `vsphere-descheduler plan … --max-evictions N`")
}

/// `command` with the files after `--snapshot` and `--policy` replaced, and nothing else.
fn with_files(command: &str, snapshot: &str, policy: &str) -> String {
    let mut words: Vec<String> = command.split(' ').map(str::to_string).collect();
    let mut replaced = (false, false);
    for index in 1..words.len() {
        match words[index - 1].as_str() {
            "--snapshot" => {
                words[index] = snapshot.to_string();
                replaced.0 = true;
            }
            "--policy" => {
                words[index] = policy.to_string();
                replaced.1 = true;
            }
            _ => {}
        }
    }
    assert_eq!(replaced, (true, true), "{command}");
    words.join(" ")
}

/// Runs `command` with `sh`, the binary under test first on the PATH; the exit code and stderr.
fn shell(command: &str) -> (i32, String) {
    let binary = Path::new(env!("CARGO_BIN_EXE_vsphere-descheduler"));
    let directory = binary.parent().expect("the binary's directory");
    let path = std::env::join_paths(std::iter::once(directory.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("a PATH");
    let Output { status, stderr, .. } = Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(root())
        .env("PATH", path)
        .env_remove("RUST_LOG")
        .env_remove("VSPHERE_DESCHEDULER_OUTPUT")
        .output()
        .expect("sh runs");
    (
        status.code().expect("exited, not killed"),
        String::from_utf8(stderr).expect("UTF-8 stderr"),
    )
}

#[test]
fn the_readmes_ci_gate_fails_when_the_plan_evicts_more_than_its_limit() {
    let (snapshot, policy) = over_limit();
    let command = with_files(&documented_gate(), &snapshot, &policy);
    let (code, stderr) = shell(&command);
    assert_eq!(code, 3, "{command}\n{stderr}");
    assert!(
        stderr.contains("the plan evicts more pods than --max-evictions allows evictions=9"),
        "{stderr}"
    );
}

#[test]
fn the_readmes_ci_gate_passes_when_the_plan_evicts_within_its_limit() {
    let (snapshot, policy) = within_limit();
    let command = with_files(&documented_gate(), &snapshot, &policy);
    let (code, stderr) = shell(&command);
    assert_eq!(code, 0, "{command}\n{stderr}");
    assert!(!stderr.contains("now-before-creation"), "{stderr}");
}

fn binary() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_vsphere-descheduler"));
    command
        .env_remove("RUST_LOG")
        .env_remove("VSPHERE_DESCHEDULER_OUTPUT");
    command
}

/// `plan --output json` of the demo's recorded snapshot with the repository's
/// host-anti-affinity policy (one eviction), with `args` after it.
fn plan_json(args: &[&str]) -> (i32, serde_json::Value) {
    let (snapshot, _) = within_limit();
    let policy = root()
        .join("policies/host-anti-affinity.yaml")
        .display()
        .to_string();
    let output = binary()
        .args([
            "--output",
            "json",
            "plan",
            "--snapshot",
            &snapshot,
            "--policy",
            &policy,
        ])
        .args(args)
        .output()
        .expect("the binary runs");
    let report = serde_json::from_slice(&output.stdout).expect("one JSON report");
    (output.status.code().expect("exited"), report)
}

#[test]
fn a_plan_without_now_is_made_at_the_snapshots_recorded_at_and_evicts_what_it_calls_for() {
    let (code, report) = plan_json(&[]);
    assert_eq!(code, 0);
    assert_eq!(report["evictions"].as_array().expect("evictions").len(), 1);
    assert_eq!(report["warnings"], serde_json::json!([]));
}

#[test]
fn a_plan_before_pods_were_created_warns_at_the_youngest_and_keeps_its_exit_code() {
    let (code, report) = plan_json(&["--now", "2026-01-01T00:00:00Z", "--max-evictions", "0"]);
    assert_eq!(code, 0, "no eviction, and only a warning");
    assert_eq!(report["evictions"], serde_json::json!([]));
    let warnings = report["warnings"].as_array().expect("warnings");
    let (snapshot, _) = within_limit();
    let expected = format!(
        "{snapshot}:149:1: document 10: pod lab-ns-01/demo-httpd-68979c6d58-dhrpc was created \
         at 2026-11-20T10:00:13Z, after the instant planned at, 2026-01-01T00:00:00Z: it is \
         judged as just started (younger than any minPodAge), and so are the 4 other pods \
         created after it; give a later --now, or none to plan at the snapshot's recordedAt"
    );
    assert_eq!(warnings, &[serde_json::Value::String(expected)]);
}

#[test]
fn strict_turns_a_plan_before_pods_were_created_into_exit_2() {
    let (code, report) = plan_json(&["--now", "2026-01-01T00:00:00Z", "--strict"]);
    assert_eq!(code, 2);
    assert_eq!(report["warnings"].as_array().expect("warnings").len(), 1);
    let (code, _) = plan_json(&["--strict"]);
    assert_eq!(code, 0, "at recordedAt every pod exists");
}

#[test]
fn github_annotations_place_a_plan_before_pods_were_created_at_the_youngest_pod() {
    let (snapshot, policy) = within_limit();
    let output = binary()
        .args([
            "--output",
            "github",
            "plan",
            "--snapshot",
            &snapshot,
            "--policy",
            &policy,
        ])
        .args(["--now", "2026-01-01T00:00:00Z"])
        .output()
        .expect("the binary runs");
    let stdout = String::from_utf8(output.stdout).expect("UTF-8");
    assert_eq!(output.status.code(), Some(0));
    assert!(
        stdout.starts_with(&format!(
            "::warning file={snapshot},line=149,col=1,title=vsphere-descheduler \
             now-before-creation::pod lab-ns-01/demo-httpd-68979c6d58-dhrpc was created"
        )),
        "{stdout}"
    );
}

#[test]
fn what_if_without_now_judges_at_the_snapshots_recorded_at() {
    let (snapshot, _) = within_limit();
    let judged = |args: &[&str]| -> serde_json::Value {
        let output = binary()
            .args(["--output", "json", "what-if", "--snapshot", &snapshot])
            .args(["--host-fails", "lab-wcp-esxi-41.go-lab.jp"])
            .args(args)
            .output()
            .expect("the binary runs");
        serde_json::from_slice(&output.stdout).expect("one JSON report")
    };
    let recorded = judged(&[]);
    assert_eq!(recorded["warnings"], serde_json::json!([]));
    let mut at_recorded = judged(&["--now", "2026-11-21T09:00:00Z"]);
    assert_eq!(recorded, at_recorded);
    at_recorded = judged(&["--now", "2026-01-01T00:00:00Z"]);
    let warnings = at_recorded["warnings"].as_array().expect("warnings");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0]
            .as_str()
            .is_some_and(|w| w.contains("after the instant planned at, 2026-01-01T00:00:00Z")),
        "{warnings:?}"
    );
}

/// What `snapshot` writes first is what a hand-made file gives too.
#[test]
fn a_hand_made_snapshot_info_is_the_document_snapshot_writes() {
    let written = vsphere_descheduler::snapshot::SnapshotInfo {
        recorded_at: chrono::DateTime::parse_from_rfc3339("2026-11-21T09:00:00Z")
            .expect("a valid timestamp")
            .to_utc(),
    }
    .document();
    let text = std::fs::read_to_string(fixture("within-limit.yaml")).expect("the fixture");
    let hand_made = text
        .split("\n---\n")
        .next()
        .expect("a first document")
        .lines()
        .filter(|line| !line.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    let hand_made: serde_json::Value =
        serde_saphyr::from_str(&hand_made).expect("the SnapshotInfo reads");
    assert_eq!(hand_made, written);
}
