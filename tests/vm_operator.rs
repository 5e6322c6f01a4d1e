//! VM Operator's objects as the source of ESXi hosts in snapshot files. The tkc-1 story is
//! rendered once per version a Supervisor stores (`tests/fixtures/vm-operator/tkc-1/`, written by
//! `scripts/vm-operator-fixtures.py`); read beside the guest cluster's nodes and pods, every
//! rendering, as YAML and as JSON, must plan byte for byte as the planner golden
//! `tests/fixtures/plan/vks-guest-cluster-drs-moved/` (its v1alpha5 rendering) does.

use std::path::{Path, PathBuf};

use serde_json::Value;
use vsphere_descheduler::report::{Mode, Report};
use vsphere_descheduler::{plan, policy, snapshot};

/// The planner goldens' fixed "now".
const NOW: &str = "2026-11-21T09:00:00Z";
const VERSIONS: [&str; 5] = ["v1alpha1", "v1alpha2", "v1alpha3", "v1alpha4", "v1alpha5"];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn golden() -> PathBuf {
    fixtures().join("plan/vks-guest-cluster-drs-moved")
}

fn story(name: &str) -> PathBuf {
    fixtures().join("vm-operator/tkc-1").join(name)
}

/// The JSON report of planning the snapshot files against the golden's policy.
fn report(paths: &[PathBuf]) -> String {
    let now = chrono::DateTime::parse_from_rfc3339(NOW)
        .expect("a valid time")
        .to_utc();
    let policy = policy::load_file(&golden().join("policy.yaml"))
        .expect("the golden's policy")
        .policy;
    let snapshot = snapshot::load_files(paths, now)
        .unwrap_or_else(|error| panic!("{paths:?}: {error}"))
        .snapshot;
    Report::planned(Mode::Plan, plan::plan(&snapshot, &policy)).to_json()
}

/// The documents of a YAML file.
fn documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("a readable fixture");
    serde_saphyr::from_multiple(&text).expect("YAML")
}

#[test]
fn every_version_of_the_supervisor_objects_plans_as_the_v1alpha5_golden_does() {
    let expected = report(&[golden().join("snapshot.yaml")]);
    assert!(expected.contains("web-6c9f8d7b5d-m4k9s"), "{expected}");
    let directory = tempfile::tempdir().expect("a temporary directory");
    for version in VERSIONS {
        let yaml = story(&format!("{version}.yaml"));
        assert_eq!(
            report(&[story("guest.yaml"), yaml.clone()]),
            expected,
            "{version} as YAML"
        );
        // As `kubectl get vm,virtualmachinesetresourcepolicy -o json` prints it.
        let json = directory.path().join(format!("{version}.json"));
        let [list] = documents(&yaml).try_into().expect("one List");
        std::fs::write(&json, serde_json::to_string_pretty(&list).expect("JSON")).expect("written");
        assert_eq!(
            report(&[story("guest.yaml"), json]),
            expected,
            "{version} as JSON"
        );
    }
}

#[test]
fn the_golden_holds_the_guest_objects_and_the_v1alpha5_rendering() {
    let mut written = documents(&story("guest.yaml"));
    written.extend(documents(&story("v1alpha5.yaml")));
    assert_eq!(documents(&golden().join("snapshot.yaml")), written);
}
