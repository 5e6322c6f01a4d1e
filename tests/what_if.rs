//! `what-if` golden tests: every folder in `tests/fixtures/what-if/` holds a `snapshot.yaml`, a
//! `policy.yaml` and `args`, the command's flags (`--host-fails HOST…`, `--maintenance HOST`,
//! `--site-fails SITE` or `--maintenance-site SITE`); the JSON
//! report of the answer must equal the committed insta snapshot
//! `tests/snapshots/what-if-<folder>.snap`, and its text report the `.txt` one beside it.
//!
//! Review a changed answer with `cargo insta review`; never accept one you cannot explain.

use std::path::Path;

use vsphere_descheduler::plan::what_if::{self, Scenario};
use vsphere_descheduler::report::Mode;
use vsphere_descheduler::report::what_if::WhatIfReport;
use vsphere_descheduler::{policy, snapshot};

/// The fixtures' fixed "now", as the planner's golden tests have it.
const NOW: &str = "2026-11-21T09:00:00Z";

/// The scenario of a fixture's `args`: `what-if`'s own flags, `--host-fails HOST` (repeated),
/// `--maintenance HOST`, `--site-fails SITE` or `--maintenance-site SITE`.
fn scenario(case: &Path) -> Scenario {
    let text = std::fs::read_to_string(case.join("args")).expect("args");
    let words: Vec<&str> = text.split_whitespace().collect();
    let hosts = |flag: &str| -> Vec<String> {
        words
            .windows(2)
            .filter(|pair| pair[0] == flag)
            .map(|pair| pair[1].to_string())
            .collect()
    };
    let site = |flag: &str| hosts(flag).pop();
    match (hosts("--host-fails"), hosts("--maintenance").as_slice()) {
        (failing, []) if !failing.is_empty() => Scenario::HostsFail(failing),
        (failing, [host]) if failing.is_empty() => Scenario::Maintenance(host.clone()),
        _ => match (site("--site-fails"), site("--maintenance-site")) {
            (Some(site), None) => Scenario::SiteFails(site),
            (None, Some(site)) => Scenario::SiteMaintenance(site),
            _ => panic!(
                "{}: --host-fails HOST…, --maintenance HOST, --site-fails SITE or \
                 --maintenance-site SITE",
                case.display()
            ),
        },
    }
}

fn report(case: &Path) -> WhatIfReport {
    let now = chrono::DateTime::parse_from_rfc3339(NOW)
        .expect("a valid time")
        .to_utc();
    let policy = policy::load_file(&case.join("policy.yaml"))
        .unwrap_or_else(|e| panic!("{}: {e}", case.display()))
        .policy;
    let loaded = snapshot::load_files(&[case.join("snapshot.yaml")], now)
        .unwrap_or_else(|e| panic!("{}: {e}", case.display()));
    let answer = what_if::what_if(&loaded.snapshot, &policy, &scenario(case))
        .unwrap_or_else(|e| panic!("{}: {e}", case.display()));
    let mut report = WhatIfReport::new(Mode::Plan, answer);
    // As `what-if --snapshot` does: a snapshot of VM Operator's objects shows its guest clusters.
    report.show_guest_clusters(loaded.supervisor);
    report
}

#[test]
fn every_what_if_fixture_answers_as_recorded() {
    let mut count = 0;
    insta::glob!("fixtures/what-if/*/args", |path| {
        count += 1;
        let case = path.parent().expect("a fixture folder");
        let name = case
            .file_name()
            .and_then(|n| n.to_str())
            .expect("a UTF-8 folder name");
        let report = report(case);
        let json: serde_json::Value = serde_json::to_value(&report).expect("the report is JSON");
        insta::with_settings!({
            omit_expression => true,
            prepend_module_to_snapshot => false,
            snapshot_suffix => "",
        }, {
            insta::assert_yaml_snapshot!(format!("what-if-{name}"), json);
            insta::assert_snapshot!(format!("what-if-{name}-text"), report.to_text());
        });
    });
    assert!(count >= 8, "fixtures went missing: {count}");
}

#[test]
fn the_exit_code_says_whether_anything_is_left_at_risk() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/what-if");
    for (case, code) in [
        ("host-without-nodes-fails", 0),
        ("maintenance-host-already-in-maintenance", 0),
        ("host-fails-ha-respects-rules", 3),
        ("maintenance-bounds-and-rules", 3),
        ("maintenance-vks-cluster-module-cannot-hold", 3),
        ("maintenance-vks-cluster-module-keeps-apart", 3),
    ] {
        let report = report(&root.join(case));
        assert_eq!(report.exit_code, code, "{case}");
        let answer = report.answer.as_ref().expect("answered");
        assert_eq!(answer.tolerated(), code == 0, "{case}");
    }
}
