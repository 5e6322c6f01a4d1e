//! The binary as users and scripts see it: exit codes, stdout for results, stderr for
//! everything else, and error messages that name the file and the object.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn binary() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_vsphere-descheduler"));
    command
        .env_remove("RUST_LOG")
        .env_remove("VSPHERE_DESCHEDULER_OUTPUT");
    command
}

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path)
}

fn run(command: &mut Command) -> (i32, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = command.output().expect("the binary runs");
    (
        status.code().expect("exited, not killed"),
        String::from_utf8(stdout).expect("UTF-8 stdout"),
        String::from_utf8(stderr).expect("UTF-8 stderr"),
    )
}

fn plan_case(case: &str) -> Command {
    let mut command = binary();
    command
        .arg("plan")
        .arg("--snapshot")
        .arg(fixture(&format!("plan/{case}/snapshot.yaml")))
        .arg("--policy")
        .arg(fixture(&format!("plan/{case}/policy.yaml")))
        .args(["--now", "2026-11-21T09:00:00Z"]);
    command
}

#[test]
fn demo_explains_the_seed_lab_in_plain_words() {
    let (code, stdout, _) = run(binary().arg("demo"));
    assert_eq!(code, 0);
    for expected in [
        "worker-b  vsphere-descheduler.io/host: lab-wcp-esxi-42.go-lab.jp -> lab-wcp-esxi-41.go-lab.jp",
        "Evictions (1)",
        "lab-ns-01/demo-httpd-68979c6d58-dhrpc",
        "fits:  worker-c (lab-wcp-esxi-43.go-lab.jp)",
        "create vsphere-descheduler:lab:db:StatefulSet/pg",
        "create vsphere-descheduler:lab:nodes:control-plane",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in:\n{stdout}"
        );
    }
}

#[test]
fn json_output_is_exactly_one_report_document_even_with_debug_logs() {
    let (code, stdout, stderr) = run(plan_case("drs-moved-worker")
        .args(["--output", "json"])
        .env("RUST_LOG", "debug"));
    assert_eq!(code, 0, "{stderr}");
    let report: serde_json::Value =
        serde_json::from_str(&stdout).expect("stdout is one JSON document");
    assert_eq!(report["kind"], "Report");
    assert_eq!(report["mode"], "plan");
    assert_eq!(report["evictions"].as_array().map(Vec::len), Some(1));
    assert_eq!(report["evictions"][0]["result"], "planned");
}

#[test]
fn demo_json_is_a_report_too() {
    let (code, stdout, _) = run(binary().args(["demo", "--output", "json"]));
    assert_eq!(code, 0);
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON document");
    assert_eq!(report["labelChanges"][0]["node"], "worker-b");
}

#[test]
fn max_evictions_gate_exits_3_when_the_plan_evicts_more() {
    let (code, _, stderr) = run(plan_case("drs-moved-worker").args(["--max-evictions", "0"]));
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("max"), "{stderr}");
    let (code, _, _) = run(plan_case("drs-moved-worker").args(["--max-evictions", "1"]));
    assert_eq!(code, 0);
}

#[test]
fn a_missing_snapshot_file_exits_2_naming_it() {
    let (code, stdout, stderr) = run(binary()
        .args([
            "plan",
            "--snapshot",
            "/nonexistent/cluster.yaml",
            "--policy",
        ])
        .arg(fixture("plan/drs-moved-worker/policy.yaml")));
    assert_eq!(code, 2);
    assert!(
        stdout.is_empty(),
        "nothing on stdout for a failure: {stdout}"
    );
    assert!(stderr.contains("/nonexistent/cluster.yaml"), "{stderr}");
}

#[test]
fn a_bad_object_in_a_snapshot_exits_2_naming_file_and_object() {
    let (code, _, stderr) = run(binary()
        .arg("plan")
        .arg("--snapshot")
        .arg(fixture("cli/bad-quantity.yaml"))
        .arg("--policy")
        .arg(fixture("plan/drs-moved-worker/policy.yaml")));
    assert_eq!(code, 2);
    assert!(stderr.contains("bad-quantity.yaml"), "{stderr}");
    assert!(stderr.contains("Pod shop/web-1"), "{stderr}");
    assert!(stderr.contains("\"lots\""), "{stderr}");
}

#[test]
fn an_invalid_policy_makes_plan_exit_2_with_positions() {
    let (code, _, stderr) = run(binary()
        .arg("plan")
        .arg("--snapshot")
        .arg(fixture("plan/drs-moved-worker/snapshot.yaml"))
        .arg("--policy")
        .arg(fixture("cli/bad-policy.yaml")));
    assert_eq!(code, 2);
    assert!(stderr.contains("bad-policy.yaml:4:1"), "{stderr}");
}

#[test]
fn validate_reports_every_problem_with_its_position_and_exits_1() {
    let (code, stdout, _) = run(binary().arg("validate").arg(fixture("cli/bad-policy.yaml")));
    assert_eq!(code, 1);
    // The misspelt limit (did you mean), the unknown plugin (with the valid ones),
    // and the bad duration: all three, not just the first.
    assert!(stdout.contains("bad-policy.yaml:4:1"), "{stdout}");
    assert!(stdout.contains("maxNoOfPodsToEvictPerNode"), "{stdout}");
    assert!(stdout.contains("bad-policy.yaml:10:9"), "{stdout}");
    assert!(
        stdout.contains("RemovePodsViolatingInterPodAntiAffinity"),
        "{stdout}"
    );
    assert!(stdout.contains("bad-policy.yaml:14:18"), "{stdout}");
}

/// Every policy under `policies/`, its subfolders (`openshift/`) included.
fn example_policies(folder: &Path, found: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(folder).expect("a readable policies folder") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            example_policies(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "yaml") {
            found.push(path);
        }
    }
}

#[test]
fn validate_accepts_every_example_policy() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("policies");
    let mut examples = Vec::new();
    example_policies(&root, &mut examples);
    // The OpenShift operator's profiles are there, as it renders them.
    let openshift = root.join("openshift");
    let profiles = examples
        .iter()
        .filter(|path| path.parent() == Some(openshift.as_path()))
        .count();
    assert!(profiles >= 10, "{examples:?}");
    let (code, stdout, _) = run(binary().arg("validate").args(&examples));
    assert_eq!(code, 0, "{stdout}");
}

#[test]
fn validate_json_lists_each_file_with_its_verdict() {
    let (code, stdout, _) = run(binary()
        .args(["validate", "--output", "json"])
        .arg(fixture("cli/bad-policy.yaml"))
        .arg(fixture("plan/drs-moved-worker/policy.yaml")));
    assert_eq!(code, 1);
    let results: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON document");
    assert_eq!(results[0]["valid"], false);
    assert!(results[0]["problems"].as_array().map_or(0, Vec::len) >= 3);
    assert_eq!(results[1]["valid"], true);
}

#[test]
fn unknown_commands_and_missing_arguments_are_usage_errors() {
    let (code, _, _) = run(binary().arg("frobnicate"));
    assert_eq!(code, 2);
    let (code, _, stderr) = run(binary().arg("plan"));
    assert_eq!(code, 2);
    assert!(stderr.contains("--snapshot"), "{stderr}");
}

/// `run` against servers that are not there: the API server and vCenter at a closed port.
fn run_against_nothing(dir: &Path) -> Command {
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: gone\n  cluster:\n    server: \
         http://127.0.0.1:9\nusers:\n- name: gone\n  user: {}\ncontexts:\n- name: gone\n  \
         context:\n    cluster: gone\n    user: gone\ncurrent-context: gone\n",
    )
    .expect("write the kubeconfig");
    let mut command = binary();
    command
        .env("KUBECONFIG", &kubeconfig)
        .env("VSPHERE_SERVER", "https://127.0.0.1:9/sdk")
        .env("VSPHERE_USERNAME", "admin")
        .env("VSPHERE_PASSWORD", "not-printed")
        .args(["--output", "json", "run", "--request-timeout", "2"]);
    command
}

#[test]
fn a_run_that_cannot_reach_the_api_server_still_prints_one_json_report() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (code, stdout, stderr) =
        run(run_against_nothing(dir.path()).env("VSPHERE_INSECURE", "true"));
    assert_eq!(code, 1, "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON document");
    assert_eq!(report["kind"], "Report");
    assert_eq!(report["mode"], "run");
    assert_eq!(report["exitCode"], 1);
    let errors = report["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{report}");
    assert!(
        errors[0]
            .as_str()
            .is_some_and(|e| e.starts_with("cannot take the run lock")),
        "{report}"
    );
    let warnings = report["warnings"].as_array().expect("warnings");
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().is_some_and(|w| w.contains("TLS verification"))),
        "{report}"
    );
    assert!(!stdout.contains("not-printed") && !stderr.contains("not-printed"));
}

#[test]
fn a_run_with_an_invalid_policy_prints_a_json_report_and_exits_2() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let policy = fixture("cli/bad-policy.yaml");
    let (code, stdout, stderr) = run(run_against_nothing(dir.path())
        .arg("--dry-run")
        .arg("--policy")
        .arg(&policy));
    assert_eq!(code, 2, "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON document");
    assert_eq!(report["mode"], "dry-run");
    assert_eq!(report["exitCode"], 2);
    assert!(
        report["errors"][0]
            .as_str()
            .is_some_and(|e| e.contains("invalid policy")),
        "{report}"
    );
    assert!(stderr.contains("error: invalid configuration"), "{stderr}");
}

/// `plan` with the drs-moved-worker policy on these snapshot files.
fn plan_on(snapshot: &Path) -> Command {
    let mut command = binary();
    command
        .arg("plan")
        .arg("--snapshot")
        .arg(snapshot)
        .arg("--policy")
        .arg(fixture("plan/drs-moved-worker/policy.yaml"));
    command
}

#[test]
fn a_snapshot_file_over_the_size_limit_exits_2_naming_the_file_the_limit_and_the_flag() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let huge = dir.path().join("huge.json");
    // Sparse: one byte over the default limit without writing a gigabyte.
    std::fs::File::create(&huge)
        .and_then(|file| file.set_len((1 << 30) + 1))
        .expect("a sparse file");
    let (code, stdout, stderr) = run(&mut plan_on(&huge));
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    for expected in [
        huge.display().to_string().as_str(),
        "larger than 1Gi (1073741824 bytes)",
        "--max-snapshot-size",
    ] {
        assert!(stderr.contains(expected), "{expected:?} in {stderr}");
    }
}

#[test]
fn max_snapshot_size_lowers_and_raises_the_limit() {
    let snapshot = fixture("plan/drs-moved-worker/snapshot.yaml");
    let (code, _, stderr) = run(plan_on(&snapshot).args(["--max-snapshot-size", "1Ki"]));
    assert_eq!(code, 2);
    assert!(stderr.contains("larger than 1Ki (1024 bytes)"), "{stderr}");
    let (code, _, stderr) = run(plan_on(&snapshot).args(["--max-snapshot-size", "1Mi"]));
    assert_eq!(code, 0, "{stderr}");
    let (code, _, stderr) = run(plan_on(&snapshot).args(["--max-snapshot-size", "lots"]));
    assert_eq!(code, 2);
    assert!(
        stderr.contains("512Mi"),
        "the error shows the syntax: {stderr}"
    );
}

/// Regression (issue 10): `/dev/urandom` as a snapshot grew to 1.9 GB before anything stopped it.
#[test]
fn dev_urandom_as_a_snapshot_exits_2_within_its_first_megabyte() {
    let (code, stdout, stderr) = run(&mut plan_on(Path::new("/dev/urandom")));
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains("/dev/urandom:") && stderr.contains(": not YAML or JSON text: "),
        "{stderr}"
    );
    // Reads are checked a megabyte at a time: the first bad byte ends the read.
    let offset: u64 = stderr
        .split("at byte ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|number| number.parse().ok())
        .unwrap_or_else(|| panic!("an offset in {stderr}"));
    assert!(offset < 1 << 20, "{offset}");
}

#[test]
fn a_pipe_that_gives_more_than_the_limit_is_stopped_at_the_limit() {
    let mut child = plan_on(Path::new("/dev/stdin"))
        .args(["--max-snapshot-size", "64Ki"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let mut stdin = child.stdin.take().expect("a piped stdin");
    // Valid YAML (comments) until the reader hangs up; 64 MiB at most, so an unbounded reader
    // ends too, with another error, instead of hanging the test.
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let line = b"# padding that is valid YAML\n".repeat(1024);
        let mut written = 0;
        while written < 64 << 20 && stdin.write_all(&line).is_ok() {
            written += line.len();
        }
        written
    });
    let output = child.wait_with_output().expect("the binary ends");
    let written = writer.join().expect("the writer ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("snapshot file /dev/stdin is larger than 64Ki (65536 bytes)"),
        "{stderr}"
    );
    assert!(
        written < 64 << 20,
        "the reader stopped early: {written} bytes written"
    );
}

#[test]
fn an_empty_snapshot_exits_2_with_nothing_to_plan_on() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let empty = dir.path().join("empty.yaml");
    std::fs::write(&empty, "").expect("writable");
    let (code, stdout, stderr) = run(&mut plan_on(&empty));
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains(&format!(
            "nothing to plan on: snapshot file {} holds no object",
            empty.display()
        )),
        "{stderr}"
    );
}

#[test]
fn a_snapshot_without_nodes_exits_2_with_nothing_to_plan_on_naming_the_files() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let pods = dir.path().join("pods.yaml");
    std::fs::write(
        &pods,
        "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: web-1, namespace: shop}}\n",
    )
    .expect("writable");
    let inventory = fixture("vsphere/lab-inventory.yaml");
    let (code, stdout, stderr) = run(plan_on(&pods).arg("--snapshot").arg(&inventory));
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains(&format!(
            "nothing to plan on: snapshot files {}, {} hold no Node",
            pods.display(),
            inventory.display()
        )),
        "{stderr}"
    );
}

#[test]
fn a_priority_threshold_naming_an_unknown_class_makes_plan_exit_2_naming_it_and_the_classes() {
    let (code, stdout, stderr) = run(binary()
        .arg("plan")
        .arg("--snapshot")
        .arg(fixture("plan/priority-class-threshold/snapshot.yaml"))
        .arg("--policy")
        .arg(fixture("cli/unknown-priority-class.yaml")));
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(stdout, "", "no plan is printed");
    assert!(
        stderr.contains(
            "profile host-availability: priorityThreshold names PriorityClass gold, which the \
             cluster does not have (it has batch, business-critical, payments, \
             system-cluster-critical, system-node-critical)"
        ),
        "{stderr}"
    );
}

/// `plan` on one snapshot fixture that cannot be read: exit 2, and the reason, shaped
/// `FILE:LINE:COLUMN: document N: MESSAGE` (docs/snapshots.md).
fn snapshot_error(name: &str) -> String {
    let snapshot = fixture(&format!("cli/{name}"));
    let (code, _, stderr) = run(binary()
        .arg("plan")
        .arg("--snapshot")
        .arg(&snapshot)
        .arg("--policy")
        .arg(fixture("plan/drs-moved-worker/policy.yaml")));
    assert_eq!(code, 2, "{stderr}");
    let prefix = format!("{}:", snapshot.display());
    let at = stderr.find(&prefix).expect("the file is named") + prefix.len();
    stderr[at..].lines().next().unwrap_or_default().to_string()
}

#[test]
fn a_kind_that_is_not_text_is_positioned_in_its_yaml_document() {
    assert_eq!(
        snapshot_error("kind-not-text.yaml"),
        "5:1: document 2: kind must be a string, not the number 3"
    );
}

#[test]
fn metadata_that_is_not_a_mapping_is_positioned_in_its_json_document() {
    assert_eq!(
        snapshot_error("metadata-not-mapping.json"),
        "3:20: document 2: invalid type: string \"web-1\", expected metadata to be a mapping"
    );
}

#[test]
fn a_list_item_without_kind_is_positioned_where_it_begins() {
    assert_eq!(
        snapshot_error("no-kind.json"),
        "3:3: document 1: object web-1 has no apiVersion and no kind"
    );
}

#[test]
fn invalid_utf8_is_positioned_by_line_and_character() {
    assert_eq!(
        snapshot_error("invalid-utf8.yaml"),
        "8:21: document 2: not YAML or JSON text: invalid UTF-8 at byte 113"
    );
}

#[test]
fn a_control_character_is_positioned_in_its_json_document() {
    assert_eq!(
        snapshot_error("control-character.json"),
        "3:25: document 2: not YAML or JSON text: control character 0x01 at byte 138"
    );
}

#[test]
fn a_bad_yaml_list_item_is_positioned_where_it_begins() {
    assert_eq!(
        snapshot_error("bad-list-item.yaml"),
        "7:3: document 1: Node worker-a: invalid quantity \"lots\" for status.allocatable.cpu"
    );
}

#[test]
fn a_yaml_syntax_error_is_positioned_in_its_document() {
    assert_eq!(
        snapshot_error("unclosed-bracket.yaml"),
        "7:18: document 2: unclosed bracket '['"
    );
}

#[test]
fn a_json_field_of_the_wrong_type_is_positioned_at_the_value() {
    assert_eq!(
        snapshot_error("wrong-field-type.json"),
        "2:21: document 1: Node worker-a: invalid type: integer `3`, expected a sequence"
    );
}

#[test]
fn a_bad_yaml_object_is_positioned_at_its_document() {
    assert_eq!(
        snapshot_error("bad-quantity.yaml"),
        "1:1: document 1: Pod shop/web-1: invalid quantity \"lots\" for resources.requests.cpu"
    );
}

/// `what-if` offline on a snapshot, with `run`'s built-in default policy.
fn what_if_on(snapshot: &Path, args: &[&str]) -> Command {
    let mut command = binary();
    command
        .arg("what-if")
        .arg("--snapshot")
        .arg(snapshot)
        .args(["--now", "2026-11-21T09:00:00Z"])
        .args(args);
    command
}

fn what_if(args: &[&str]) -> Command {
    what_if_on(&fixture("cli/what-if.yaml"), args)
}

/// Runs `what-if --output json` and returns its exit code and its one JSON document, after
/// checking the document's `exitCode` is the process's.
fn what_if_json(args: &[&str]) -> (i32, serde_json::Value) {
    let (code, stdout, stderr) = run(what_if(args).args(["--output", "json"]));
    let report: serde_json::Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|error| panic!("stdout is one JSON document ({error}): {stdout}{stderr}"));
    assert_eq!(report["kind"], "WhatIf", "{report}");
    assert_eq!(report["mode"], "plan", "offline");
    assert_eq!(report["exitCode"], code, "{report}");
    (code, report)
}

#[test]
fn what_if_a_host_without_nodes_fails_exits_0_with_nothing_touched() {
    let (code, report) = what_if_json(&["--host-fails", "b-esxi-1"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["atRisk"], 0);
    assert_eq!(
        report["scenario"]["hostsFail"],
        serde_json::json!(["b-esxi-1.lab.example"])
    );
    assert_eq!(report["hosts"][0]["nodes"], serde_json::json!([]));
    assert_eq!(report["workloads"], serde_json::json!([]));
    assert_eq!(report["counts"]["tolerated"], 2, "web and db, untouched");
}

#[test]
fn what_if_a_host_holding_every_replica_of_a_workload_fails_exits_3() {
    let (code, report) = what_if_json(&["--host-fails", "A-ESXI-1.lab.example"]);
    assert_eq!(code, 3, "{report}");
    assert_eq!(report["atRisk"], 1);
    assert_eq!(report["hosts"][0]["host"], "a-esxi-1.lab.example");
    let web = &report["workloads"][0];
    assert_eq!(web["workload"], "shop/StatefulSet/web");
    assert_eq!((&web["lost"], &web["class"]), (&2.into(), &"all".into()));
    let db = &report["workloads"][1];
    assert_eq!(
        (&db["lost"], &db["class"]),
        (&1.into(), &"tolerated".into())
    );

    let (code, stdout, _) = run(&mut what_if(&["--host-fails", "a-esxi-1"]));
    assert_eq!(code, 3);
    assert!(
        stdout.contains("Verdict: 1 workload(s) or node group(s) would be at risk (exit 3)"),
        "{stdout}"
    );
}

#[test]
fn what_if_a_maintenance_exits_0_where_a_rule_keeps_the_moving_vm_apart_and_3_without_it() {
    let (code, report) = what_if_json(&["--maintenance", "esxi-2"]);
    assert_eq!(code, 0, "{report}");
    let db = &report["workloads"][0];
    assert_eq!(db["workload"], "db/StatefulSet/db");
    assert_eq!(db["keptApartBy"], "keep-db-apart");
    assert_eq!(
        (&db["class"], &db["exact"]),
        (&"tolerated".into(), &true.into())
    );

    // The same cluster with the rule disabled: DRS may put w3 next to w1.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let text = std::fs::read_to_string(fixture("cli/what-if.yaml")).expect("the fixture");
    let enabled = "name: keep-db-apart, type: antiAffinity, enabled: true";
    assert!(text.contains(enabled));
    let disabled = dir.path().join("what-if.yaml");
    std::fs::write(
        &disabled,
        text.replace(enabled, &enabled.replace("true", "false")),
    )
    .expect("write the copy");
    let (code, stdout, stderr) = run(&mut what_if_on(&disabled, &["--maintenance", "esxi-2"]));
    assert_eq!(code, 3, "{stdout}{stderr}");
    assert!(
        stdout.contains("[all at worst] db/StatefulSet/db"),
        "{stdout}"
    );
}

#[test]
fn what_if_an_unknown_host_exits_2_listing_the_hosts() {
    let (code, stdout, stderr) = run(&mut what_if(&["--host-fails", "esxi-9"]));
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains(
            "no ESXi host \"esxi-9\" in the inventory (it has a-esxi-1.lab.example, \
             a-esxi-2.lab.example, b-esxi-1.lab.example)"
        ),
        "{stderr}"
    );
}

#[test]
fn what_if_a_short_name_two_hosts_end_with_exits_2_naming_both() {
    let (code, stdout, stderr) = run(&mut what_if(&["--maintenance", "esxi-1"]));
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains(
            "\"esxi-1\" names several ESXi hosts (a-esxi-1.lab.example, b-esxi-1.lab.example)"
        ),
        "{stderr}"
    );
}

#[test]
fn what_if_needs_exactly_one_of_host_fails_and_maintenance() {
    let (code, stdout, stderr) = run(&mut what_if(&[
        "--host-fails",
        "a-esxi-1",
        "--maintenance",
        "a-esxi-2",
    ]));
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(stderr.contains("cannot be used with"), "{stderr}");
    let (code, stdout, stderr) = run(&mut what_if(&[]));
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains("required") && stderr.contains("--host-fails"),
        "{stderr}"
    );
}

/// `what-if` on the stretched-cluster demo's cluster, with its policy (sites from host groups).
fn what_if_stretched(args: &[&str]) -> Command {
    let case = fixture("what-if/site-fails-stretched-cluster");
    let mut command = what_if_on(&case.join("snapshot.yaml"), args);
    command.arg("--policy").arg(case.join("policy.yaml"));
    command
}

#[test]
fn what_if_an_unknown_site_exits_2_listing_the_sites() {
    let (code, stdout, stderr) = run(&mut what_if_stretched(&["--site-fails", "site-c"]));
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains("no site \"site-c\" (the sites are site-a-hosts, site-b-hosts)"),
        "{stderr}"
    );
    let (code, _, stderr) = run(&mut what_if(&["--maintenance-site", "site-a-hosts"]));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("a site's what-if needs vsphere.sites in the policy"),
        "{stderr}"
    );
}

#[test]
fn what_if_a_site_failing_exits_3_and_names_what_ha_brings_back() {
    let (code, stdout, stderr) =
        run(what_if_stretched(&["--site-fails", "site-a-hosts"]).args(["--output", "json"]));
    assert_eq!(code, 3, "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON document");
    assert_eq!(report["scenario"]["siteFails"], "site-a-hosts", "{report}");
    assert_eq!(
        report["siteFailover"]["vms"][0]["fate"],
        "held-down-by-rule"
    );
    assert_eq!(report["workloads"][0]["comesBack"]["restarted"], 2);
}

#[test]
fn what_if_takes_one_site_question_at_a_time() {
    let (code, _, stderr) = run(&mut what_if_stretched(&[
        "--site-fails",
        "site-a-hosts",
        "--host-fails",
        "esxi-b1",
    ]));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("cannot be used with"), "{stderr}");
}

#[test]
fn what_if_on_a_snapshot_without_an_inventory_exits_2_saying_it_needs_one() {
    let (code, stdout, stderr) = run(&mut what_if_on(
        &fixture("cli/what-if-no-inventory.yaml"),
        &["--host-fails", "a-esxi-1"],
    ));
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains("what-if needs the vSphere inventory, and the snapshot has none"),
        "{stderr}"
    );
}

#[test]
fn what_if_with_an_invalid_policy_exits_2_with_positions() {
    let (code, stdout, stderr) = run(what_if(&["--host-fails", "a-esxi-1"])
        .arg("--policy")
        .arg(fixture("cli/bad-policy.yaml")));
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(stderr.contains("bad-policy.yaml:4:1"), "{stderr}");
}

/// Regression: a rule whose every VM is on a failed host has no other host, and the text named
/// none ("HA may restart w1, w3 on ").
#[test]
fn what_if_says_so_when_every_vm_of_a_rule_is_on_a_failed_host() {
    let (code, stdout, stderr) = run(&mut what_if(&[
        "--host-fails",
        "a-esxi-1",
        "--host-fails",
        "a-esxi-2",
    ]));
    assert_eq!(code, 3, "{stderr}");
    let line = stdout
        .lines()
        .find(|line| line.contains("rule keep-db-apart:"))
        .unwrap_or_else(|| panic!("no line for the rule in:\n{stdout}"));
    assert_eq!(
        line.trim(),
        "rule keep-db-apart: every VM of the rule is on a failed host (w1, w3): HA may restart \
         them on one host together: HA's configuration was not observed"
    );
}

/// Logs written to a file or a pipe (a CI job's log, `2>err.txt`) are plain text: no ANSI
/// colour codes, whatever `NO_COLOR` says; a terminal gets colour unless `NO_COLOR` is set.
#[test]
fn logs_to_a_file_or_a_pipe_carry_no_colour_codes() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let snapshot = dir.path().join("snapshot.yaml");
    let recorded = std::fs::read_to_string(fixture("e2e/several-violations/snapshot.yaml"))
        .expect("the story's snapshot");
    std::fs::write(
        &snapshot,
        format!("{recorded}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: shop\n"),
    )
    .expect("writable");
    for no_color in [None, Some("1")] {
        let mut command = binary();
        command
            .arg("plan")
            .arg("--snapshot")
            .arg(&snapshot)
            .arg("--policy")
            .arg(fixture("e2e/several-violations/policy.yaml"));
        if let Some(value) = no_color {
            command.env("NO_COLOR", value);
        } else {
            command.env_remove("NO_COLOR");
        }
        let (code, _, stderr) = run(&mut command);
        assert_eq!(code, 0, "{stderr}");
        assert!(stderr.contains("ignored objects"), "a log line: {stderr}");
        assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
    }
}

/// Text nested far past any reader's limit, as a runaway generator or an attacker writes it:
/// file name, text, and where the readers stop, in snapshots and in policies.
fn deeply_nested() -> [(&'static str, String, &'static str, &'static str); 5] {
    [
        // The parser reads flow collections ahead and stops at the bracket after the one
        // that goes too deep.
        (
            "brackets.yaml",
            format!("a: {}\n", "[".repeat(100_000)),
            "1:104",
            "1:36",
        ),
        ("brackets.json", "[".repeat(100_000), "1:101", "1:33"),
        (
            "dashes.yaml",
            format!("items:\n{}x\n", "- ".repeat(30_000)),
            "2:199",
            "2:63",
        ),
        ("objects.json", "{\"a\":".repeat(30_000), "1:501", "1:161"),
        (
            "objects.yaml",
            format!("a: {}\n", "{\"a\": ".repeat(30_000)),
            "1:598",
            "1:190",
        ),
    ]
}

#[test]
fn a_snapshot_nested_past_the_limit_exits_2_with_where_it_goes_too_deep_never_a_crash() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    for (name, text, at, _) in deeply_nested() {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("writable");
        let (code, stdout, stderr) = run(&mut plan_on(&path));
        assert_eq!(code, 2, "{name}: {stderr}");
        assert!(stdout.is_empty(), "{stdout}");
        let expected = format!(
            "{}:{at}: document 1: lists and mappings are nested deeper than 100 levels, deeper \
             than any Kubernetes object nests",
            path.display()
        );
        assert!(stderr.contains(&expected), "{expected}\n{stderr}");
    }
    // A document that is a list is refused as one, however deep the list goes.
    let path = dir.path().join("list.yaml");
    std::fs::write(&path, format!("{}x\n", "- ".repeat(30_000))).expect("writable");
    let (code, _, stderr) = run(&mut plan_on(&path));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!("{}:1:1: document 1: ", path.display())),
        "{stderr}"
    );
}

#[test]
fn a_policy_nested_past_the_limit_is_a_positioned_problem_never_a_crash() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    for (name, text, _, at) in deeply_nested() {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("writable");
        let expected = format!(
            "{}:{at}: lists and mappings are nested deeper than 32 levels, deeper than any \
             policy nests",
            path.display()
        );
        let (code, stdout, stderr) = run(binary().arg("validate").arg(&path));
        assert_eq!(code, 1, "{name}: {stderr}");
        assert!(stdout.contains(&expected), "{expected}\n{stdout}");
        let (code, _, stderr) = run(binary()
            .arg("plan")
            .arg("--snapshot")
            .arg(fixture("plan/drs-moved-worker/snapshot.yaml"))
            .arg("--policy")
            .arg(&path));
        assert_eq!(code, 2, "{name}: {stderr}");
        assert!(stderr.contains(&expected), "{expected}\n{stderr}");
    }
}

#[test]
fn plan_and_what_if_on_vm_operator_objects_show_the_guest_clusters_modules() {
    let case = "vks-guest-cluster-drs-moved";
    let (code, stdout, stderr) = run(plan_case(case).args(["--output", "json"]));
    assert_eq!(code, 0, "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON document");
    let guest = &report["guestClusters"][0];
    assert_eq!(
        (&guest["namespace"], &guest["name"]),
        (&"team-a".into(), &"tkc-1".into())
    );
    let groups: Vec<&str> = guest["modules"]
        .as_array()
        .expect("modules")
        .iter()
        .map(|m| m["group"].as_str().expect("a group"))
        .collect();
    assert_eq!(groups, ["tkc-1-control-plane", "tkc-1-workers-0"]);
    assert_eq!(
        report["unplacedVms"][0]["name"],
        "tkc-1-node-pool-1-wh5j2-5b7c9d8f6-zt6hw"
    );

    let (code, stdout, stderr) = run(&mut plan_case(case));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("    module tkc-1/tkc-1-workers-0 (cluster domain-c10): "),
        "{stdout}"
    );

    let (code, stdout, stderr) = run(what_if_on(
        &fixture(&format!("plan/{case}/snapshot.yaml")),
        &["--maintenance", "esxi-03.lab.example", "--output", "json"],
    )
    .arg("--policy")
    .arg(fixture(&format!("plan/{case}/policy.yaml"))));
    assert_eq!(code, 0, "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON document");
    assert_eq!(report["guestClusters"][0]["name"], "tkc-1", "{report}");
}

#[test]
fn plan_of_a_snapshot_without_vm_operator_objects_has_no_guest_clusters() {
    let (code, stdout, stderr) = run(plan_case("drs-moved-worker").args(["--output", "json"]));
    assert_eq!(code, 0, "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON document");
    assert!(report.get("guestClusters").is_none(), "{report}");
    assert!(report.get("unplacedVms").is_none(), "{report}");
}

/// Issue 39: a stray `VSPHERE_DESCHEDULER_OUTPUT` no longer changes what stdout holds; only
/// `--output` does.
#[test]
fn the_report_format_comes_from_the_command_line_only() {
    let (code, stdout, _) = run(binary()
        .env("VSPHERE_DESCHEDULER_OUTPUT", "json")
        .arg("demo"));
    assert_eq!(code, 0);
    assert!(stdout.starts_with("Demo: a built-in lab."), "{stdout}");
}

/// Issue 39: `snapshot --output FILE` is told which flag names the file, as a usage error.
#[test]
fn snapshot_given_a_file_as_its_output_format_names_output_file() {
    let (code, stdout, stderr) = run(binary().args(["snapshot", "--output", "prod-east.yaml"]));
    assert_eq!(code, 2);
    assert_eq!(stdout, "");
    assert!(
        stderr.contains("The snapshot file is -o/--output-file:\n  vsphere-descheduler snapshot -o prod-east.yaml"),
        "{stderr}"
    );
}

/// Issue 39: a chart user's policy lives in a values file; `validate --values` checks it as the
/// chart renders it and places each problem in that file.
#[test]
fn validate_values_places_the_problems_of_a_values_files_policy_in_it() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let values = dir.path().join("prod-east.values.yaml");
    std::fs::write(
        &values,
        "clusterName: prod-east\nvsphere:\n  server: vcenter.example.com\npolicy:\n  \
         maxNoOfPodsToEvictTotal: five\n",
    )
    .expect("writable");
    let values = values.display().to_string();
    let (code, stdout, _) =
        run(binary().args(["--output", "github", "validate", "--values", &values]));
    assert_eq!(code, 1);
    assert!(
        stdout.starts_with(&format!(
            "::error file={values},line=5,col=28,title=vsphere-descheduler wrong-type::"
        )),
        "{stdout}"
    );
    std::fs::write(
        &values,
        "clusterName: prod-east\nvsphere:\n  server: vcenter.example.com\n",
    )
    .expect("writable");
    let (code, stdout, _) = run(binary().args(["validate", "--values", &values]));
    assert_eq!((code, stdout), (0, format!("{values}: valid\n")));
}

#[test]
fn sites_that_do_not_partition_the_hosts_make_plan_exit_2_at_vsphere_sites_with_the_fix() {
    let policy = fixture("cli/sites-unknown-group.yaml");
    let (code, stdout, stderr) = run(binary()
        .arg("plan")
        .arg("--snapshot")
        .arg(fixture("plan/sites-host-groups/snapshot.yaml"))
        .arg("--policy")
        .arg(&policy));
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(stdout, "", "no plan is printed");
    let at = format!("{}:6:5: vsphere.sites: ", policy.display());
    for finding in [
        "host group \"site-c-hosts\" is in no vSphere cluster [site-group-not-found]; create the \
         DRS host group in vCenter, or correct vsphere.sites.hostGroups",
        "2 host(s) of cluster stretched-1 are in no site host group, so in no site: \
         esxi-b1.lab.example, esxi-b2.lab.example [site-hosts-without-site]; add each host to \
         one site's DRS host group, or leave the cluster out with vsphere.clusters",
    ] {
        assert!(stderr.contains(&format!("{at}{finding}")), "{stderr}");
    }
}
