//! Planner golden tests: every folder in `tests/fixtures/plan/` holds a `snapshot.yaml` and a
//! `policy.yaml`; the JSON report of planning one against the other must equal the committed
//! insta snapshot `tests/snapshots/<folder>.snap`. One folder per behaviour (or bug); every
//! changed plan is reported, not only the first.
//!
//! Review a changed plan with `cargo insta review`; never accept one you cannot explain.

use std::path::{Path, PathBuf};

use vsphere_descheduler::report::{Mode, Report};
use vsphere_descheduler::{plan, policy, snapshot};

// In a folder of its own: a file beside this one would be a test target of its own.
#[path = "plan/descriptions.rs"]
mod descriptions;

/// The fixtures' fixed "now", so pod ages never drift.
const NOW: &str = "2026-11-21T09:00:00Z";

fn cases() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/plan");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("tests/fixtures/plan exists")
        .map(|entry| entry.expect("a readable directory entry").path())
        .filter(|path| path.join("snapshot.yaml").is_file())
        .collect();
    cases.sort();
    cases
}

fn report(case: &Path) -> serde_json::Value {
    let now = chrono::DateTime::parse_from_rfc3339(NOW)
        .expect("a valid time")
        .to_utc();
    let policy = policy::load_file(&case.join("policy.yaml"))
        .unwrap_or_else(|e| panic!("{}: {e}", case.display()))
        .policy;
    let snapshot = snapshot::load_files(&[case.join("snapshot.yaml")], now)
        .unwrap_or_else(|e| panic!("{}: {e}", case.display()))
        .snapshot;
    // As `plan` does: the policy's PriorityClass names must be in the snapshot.
    plan::check_priority_classes(&snapshot, &policy)
        .unwrap_or_else(|e| panic!("{}: {e}", case.display()));
    // And its sites must partition the inventory's hosts.
    vsphere_descheduler::sites::check(snapshot.inventory.as_ref(), &policy.vsphere)
        .unwrap_or_else(|e| panic!("{}: {e}", case.display()));
    let plan = plan::plan(&snapshot, &policy);
    serde_json::from_str(&Report::planned(Mode::Plan, plan).to_json()).expect("the report is JSON")
}

/// One snapshot per fixture; insta's `glob!` checks every fixture and reports every changed one
/// (not only the first) before failing.
#[test]
fn every_fixture_plans_as_recorded() {
    assert!(cases().len() >= 10, "fixtures went missing: {:?}", cases());
    insta::glob!("fixtures/plan/*/snapshot.yaml", |path| {
        let case = path.parent().expect("a fixture folder");
        let name = case
            .file_name()
            .and_then(|n| n.to_str())
            .expect("a UTF-8 folder name");
        insta::with_settings!({
            description => description(case),
            omit_expression => true,
            prepend_module_to_snapshot => false,
            snapshot_suffix => "",
        }, {
            insta::assert_yaml_snapshot!(name, report(case));
        });
    });
}

#[test]
fn planning_is_deterministic() {
    for case in cases() {
        let first = report(&case);
        for _ in 0..3 {
            assert_eq!(
                report(&case),
                first,
                "{} planned differently twice",
                case.display()
            );
        }
    }
}

/// The story a fixture tells: the comment on the first line of its snapshot.
fn description(case: &Path) -> String {
    let text = std::fs::read_to_string(case.join("snapshot.yaml")).expect("readable");
    text.lines()
        .next()
        .unwrap_or_default()
        .trim_start_matches("# ")
        .to_string()
}
