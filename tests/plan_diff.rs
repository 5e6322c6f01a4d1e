//! Policy review goldens: every folder in `tests/fixtures/plan-diff/` holds a `snapshot.yaml`, a
//! `baseline-policy.yaml` and a `policy.yaml`; what `plan --baseline-policy` prints (JSON and
//! Markdown) must equal the committed insta snapshots, and its exit code says whether anything
//! differs. Review a changed one with `cargo insta review`.

use std::path::Path;
use std::process::Command;

/// The fixtures' fixed "now", so pod ages never drift.
const NOW: &str = "2026-11-21T09:00:00Z";

/// `plan --output FORMAT --baseline-policy …` on the case, run from the repository so the
/// printed file names are the fixtures' relative paths: (exit code, stdout).
fn compare(case: &str, format: &str) -> (i32, String) {
    let folder = format!("tests/fixtures/plan-diff/{case}");
    let output = Command::new(env!("CARGO_BIN_EXE_vsphere-descheduler"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("RUST_LOG")
        .env_remove("VSPHERE_DESCHEDULER_OUTPUT")
        .env_remove("VSPHERE_DESCHEDULER_POLICY")
        .args(["--output", format, "plan", "--now", NOW])
        .args(["--snapshot", &format!("{folder}/snapshot.yaml")])
        .args(["--policy", &format!("{folder}/policy.yaml")])
        .args([
            "--baseline-policy",
            &format!("{folder}/baseline-policy.yaml"),
        ])
        .output()
        .expect("the binary runs");
    (
        output.status.code().expect("exited"),
        String::from_utf8(output.stdout).expect("UTF-8"),
    )
}

#[test]
fn every_comparison_prints_as_recorded_and_exits_by_whether_it_differs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/plan-diff");
    let mut cases: Vec<String> = std::fs::read_dir(&root)
        .expect("tests/fixtures/plan-diff exists")
        .map(|entry| {
            entry
                .expect("a directory entry")
                .file_name()
                .into_string()
                .expect("UTF-8")
        })
        .collect();
    cases.sort();
    assert!(cases.len() >= 3, "{cases:?}");
    for case in &cases {
        let (code, json) = compare(case, "json");
        let report: serde_json::Value = serde_json::from_str(&json).expect("JSON");
        let differs = report["differs"].as_bool().expect("differs");
        // 3, not 1: a CI step accepting a difference must still fail when the review is lost.
        assert_eq!(code, if differs { 3 } else { 0 }, "{case}: exit code");
        let (markdown_code, markdown) = compare(case, "markdown");
        assert_eq!(markdown_code, code, "{case}");
        let (text_code, text) = compare(case, "text");
        assert_eq!(text_code, code, "{case}");
        assert!(text.contains(if differs {
            "they differ"
        } else {
            "no difference"
        }));
        insta::with_settings!({
            omit_expression => true,
            prepend_module_to_snapshot => false,
        }, {
            insta::assert_json_snapshot!(format!("plan-diff-{case}"), report);
            insta::assert_snapshot!(format!("plan-diff-{case}-markdown"), markdown);
        });
    }
}

/// The comparison is for text, JSON and Markdown; other formats, and Markdown without a
/// baseline, are refused as invalid usage.
#[test]
fn formats_a_comparison_cannot_take_are_refused() {
    let (code, _) = compare("same-decisions", "html");
    assert_eq!(code, 2);
    let output = Command::new(env!("CARGO_BIN_EXE_vsphere-descheduler"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["--output", "markdown", "plan", "--snapshot"])
        .arg("tests/fixtures/plan-diff/same-decisions/snapshot.yaml")
        .args([
            "--policy",
            "tests/fixtures/plan-diff/same-decisions/policy.yaml",
        ])
        .output()
        .expect("the binary runs");
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("--output markdown is for plan --baseline-policy, not for plan without"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
