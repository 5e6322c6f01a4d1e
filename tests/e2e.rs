//! End to end: the `vsphere-descheduler` binary against the lab harness, the real vCenter
//! simulator plus the fake Kubernetes API server, both loaded from one fixture under
//! `tests/fixtures/e2e/<story>/`. Every test checks the state left behind (the fake's objects,
//! the simulator's rules observed afresh), not only what the report claims.

mod support;
// The benchmarks' generator; this file uses JSON only, not its YAML writer.
#[allow(dead_code)]
#[path = "../benches/support/cluster.rs"]
mod cluster;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::Method;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use serde_json::Value;
use support::fake_apiserver::{FakeApiServer, FakeCluster, Fault, FaultAction, read_objects};
use support::vcsim::{self, Vcsim};
use vsphere_descheduler::inventory::{Inventory, Rule};
use vsphere_descheduler::vsphere;

const HOST_LABEL: &str = "vsphere-descheduler.io/host";
const ESXI_41: &str = "lab-wcp-esxi-41.go-lab.jp";
const ESXI_42: &str = "lab-wcp-esxi-42.go-lab.jp";
const CLUSTER: &str = "wcp-cluster-41";

/// The simulator and the fake API server of one story, and what the binary needs to reach them.
struct Lab {
    simulator: Vcsim,
    server: FakeApiServer,
    policy: PathBuf,
    dir: tempfile::TempDir,
}

/// The binary's verdict.
struct Outcome {
    code: i32,
    report: Value,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

impl Outcome {
    fn evictions_with(&self, result: &str) -> Vec<String> {
        self.report["evictions"]
            .as_array()
            .expect("evictions")
            .iter()
            .filter(|e| e["result"] == result)
            .map(|e| {
                format!(
                    "{}/{}",
                    e["namespace"].as_str().unwrap_or_default(),
                    e["pod"].as_str().unwrap_or_default()
                )
            })
            .collect()
    }

    fn errors(&self) -> Vec<String> {
        self.report["errors"]
            .as_array()
            .expect("errors")
            .iter()
            .map(|e| e.as_str().unwrap_or_default().to_string())
            .collect()
    }
}

impl Lab {
    fn start(story: &str) -> Lab {
        let folder = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/e2e")
            .join(story);
        Lab::from_snapshot(&folder.join("snapshot.yaml"), folder.join("policy.yaml"))
    }

    /// A lab loaded from any snapshot file (Kubernetes objects plus a VSphereInventory).
    fn from_snapshot(snapshot: &Path, policy: PathBuf) -> Lab {
        let mut objects = read_objects(snapshot);
        let inventory = objects
            .inventory
            .take()
            .expect("the snapshot has an inventory");
        let simulator = Vcsim::start(&inventory);
        let server = FakeApiServer::start(FakeCluster::new(objects));
        let dir = tempfile::tempdir().expect("a temporary directory");
        server.write_kubeconfig(&dir.path().join("kubeconfig"));
        Lab {
            simulator,
            server,
            policy,
            dir,
        }
    }

    /// The binary with the lab's connection settings (TLS verified against the simulator's CA).
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_vsphere-descheduler"));
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .env("KUBECONFIG", self.dir.path().join("kubeconfig"))
            .env("VSPHERE_SERVER", &self.simulator.url)
            .env("VSPHERE_USERNAME", vcsim::USERNAME)
            .env("VSPHERE_PASSWORD", vcsim::PASSWORD)
            .env(
                "VSPHERE_DESCHEDULER_VSPHERE_CA_FILE",
                &self.simulator.ca_file,
            )
            .env("RUST_LOG", "info");
        command
    }

    /// `run --output json --policy <story policy>` plus `args`.
    fn run(&self, args: &[&str]) -> Outcome {
        let policy = self.policy.display().to_string();
        let mut all = vec!["--output", "json", "run", "--policy", policy.as_str()];
        all.extend_from_slice(args);
        let started = Instant::now();
        let output = self.command(&all).output().expect("the binary runs");
        outcome(output, started.elapsed())
    }

    /// The simulator's inventory, observed afresh.
    fn observe_vcenter(&self) -> Inventory {
        runtime().block_on(async {
            let mut client = vsphere::Client::connect(&self.simulator.connection_config())
                .await
                .expect("connect to the simulator");
            let inventory = client.observe(&[], &[]).await.expect("observe");
            client.logout().await;
            inventory
        })
    }

    fn rules(&self) -> Vec<Rule> {
        let mut rules = self
            .observe_vcenter()
            .clusters
            .into_iter()
            .find(|c| c.name == CLUSTER)
            .expect("the cluster")
            .rules;
        for rule in &mut rules {
            rule.key = None;
            rule.vms.sort();
        }
        rules.sort_by(|a, b| a.name.cmp(&b.name));
        rules
    }

    fn node_label(&self, node: &str) -> Option<String> {
        self.server.cluster().nodes[node]
            .metadata
            .labels
            .as_ref()
            .and_then(|labels| labels.get(HOST_LABEL).cloned())
    }

    fn pod(&self, namespace: &str, name: &str) -> Option<Arc<Pod>> {
        self.server
            .cluster()
            .pods
            .get(&(namespace.to_string(), name.to_string()))
            .cloned()
    }

    /// Pods that are being deleted (evicted with a grace period) or gone.
    fn evicted_pods(&self) -> Vec<String> {
        let cluster = self.server.cluster();
        cluster
            .pods
            .iter()
            .filter(|(_, pod)| pod.metadata.deletion_timestamp.is_some())
            .map(|((ns, name), _)| format!("{ns}/{name}"))
            .collect()
    }

    /// Everything in the fake except leases (a run takes and releases the lock) and the request
    /// log, as JSON for comparison.
    fn kubernetes_state(&self) -> Value {
        let cluster = self.server.cluster();
        serde_json::json!({
            "nodes": cluster.nodes.values().map(|n| n.as_ref()).collect::<Vec<_>>(),
            "pods": cluster.pods.values().map(|p| p.as_ref()).collect::<Vec<_>>(),
            "pdbs": cluster.pdbs.values().map(|p| p.as_ref()).collect::<Vec<_>>(),
            "namespaces": cluster.namespaces.values().map(|n| n.as_ref()).collect::<Vec<_>>(),
            "events": cluster.events.values().map(|e| e.as_ref()).collect::<Vec<_>>(),
        })
    }

    fn leases(&self) -> Value {
        let cluster = self.server.cluster();
        serde_json::to_value(
            cluster
                .leases
                .values()
                .map(|l| l.as_ref())
                .collect::<Vec<_>>(),
        )
        .expect("leases serialise")
    }
}

fn outcome(output: Output, elapsed: Duration) -> Outcome {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    for text in [&stdout, &stderr] {
        assert!(
            !text.contains(vcsim::PASSWORD),
            "the password leaked into the output"
        );
    }
    let report = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    Outcome {
        code: output.status.code().unwrap_or(-1),
        report,
        stdout,
        stderr,
        elapsed,
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

fn sorted(mut items: Vec<String>) -> Vec<String> {
    items.sort();
    items
}

const HTTPD_A: &str = "demo-httpd-68979c6d58-bvlgx";
const HTTPD_B: &str = "demo-httpd-68979c6d58-dhrpc";

#[test]
fn the_host_label_follows_a_drs_move_and_one_replica_is_evicted() {
    let lab = Lab::start("drs-moved-worker");
    let settled = lab.run(&[]);
    assert_eq!(settled.code, 0, "{}", settled.stderr);
    assert!(
        settled.report["evictions"]
            .as_array()
            .expect("evictions")
            .is_empty()
    );
    assert_eq!(lab.node_label("worker-b").as_deref(), Some(ESXI_42));

    lab.simulator.move_vm("worker-b", ESXI_41);
    let moved = lab.run(&[]);
    assert_eq!(moved.code, 0, "{}\n{}", moved.stdout, moved.stderr);
    assert_eq!(
        lab.node_label("worker-b").as_deref(),
        Some(ESXI_41),
        "the label followed"
    );
    assert_eq!(lab.node_label("worker-a").as_deref(), Some(ESXI_41));
    let evicted = lab.evicted_pods();
    assert_eq!(evicted.len(), 1, "exactly one replica goes: {evicted:?}");
    assert_eq!(moved.evictions_with("evicted"), evicted);
    assert!(
        evicted[0].ends_with(HTTPD_A) || evicted[0].ends_with(HTTPD_B),
        "{evicted:?}"
    );
    // The evicted pod carries the DisruptionTarget condition and an event names its move.
    let (namespace, name) = evicted[0].split_once('/').expect("ns/name");
    let pod = lab
        .pod(namespace, name)
        .expect("terminating, still visible");
    assert!(
        pod.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "DisruptionTarget"))
    );
    let cluster = lab.server.cluster();
    let events: Vec<_> = cluster.events.values().collect();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].action.as_deref(), Some("Descheduled"));
    assert_eq!(
        events[0].reason.as_deref(),
        Some("RemovePodsViolatingInterPodAntiAffinity")
    );
    let note = events[0].note.clone().unwrap_or_default();
    assert!(
        note.contains("worker-b") && note.contains(ESXI_41),
        "{note}"
    );
    // The lock was released.
    let lease = cluster.leases.values().next().expect("the run lock");
    assert_eq!(
        lease.spec.as_ref().and_then(|s| s.holder_identity.clone()),
        None
    );
}

#[test]
fn a_second_run_right_after_changes_nothing() {
    let lab = Lab::start("drs-moved-worker");
    lab.simulator.move_vm("worker-b", ESXI_41);
    let first = lab.run(&[]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(first.evictions_with("evicted").len(), 1);
    let state = lab.kubernetes_state();
    let rules = lab.rules();

    let second = lab.run(&[]);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert!(
        second.report["labelChanges"]
            .as_array()
            .expect("labels")
            .is_empty()
    );
    assert!(
        second.report["evictions"]
            .as_array()
            .expect("evictions")
            .is_empty()
    );
    assert_eq!(
        lab.kubernetes_state(),
        state,
        "the second run wrote something"
    );
    assert_eq!(lab.rules(), rules);
}

#[test]
fn a_pdb_that_allows_no_disruption_keeps_both_replicas_and_the_drs_rule_is_still_written() {
    let lab = Lab::start("pdb-blocks");
    let outcome = lab.run(&[]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert!(lab.evicted_pods().is_empty());
    let skipped = outcome.report["skipped"].as_array().expect("skipped");
    assert_eq!(skipped.len(), 2);
    assert!(skipped.iter().all(|s| s["reason"] == "pdb"));
    assert_eq!(lab.server.cluster().count("POST", "/eviction"), 0);
    let rules = lab.rules();
    assert_eq!(rules.len(), 1, "{rules:?}");
    assert_eq!(
        rules[0].name,
        "vsphere-descheduler:lab:shop:ReplicaSet/web-5d8f7c9b6"
    );
    assert_eq!(rules[0].vms, ["worker-a", "worker-b"]);
    assert!(rules[0].enabled && !rules[0].mandatory);
}

#[test]
fn a_pdb_refusal_from_the_server_is_reported_blocked_at_once() {
    let lab = Lab::start("pdb-stale");
    let outcome = lab.run(&[]);
    assert_eq!(
        outcome.code, 0,
        "a PDB block is a normal outcome: {}",
        outcome.stderr
    );
    let blocked = outcome.evictions_with("blocked");
    assert_eq!(blocked.len(), 1, "{}", outcome.stdout);
    let message = outcome.report["evictions"][0]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(message.contains("still being processed"), "{message}");
    assert!(lab.evicted_pods().is_empty());
    assert_eq!(
        lab.server.cluster().count("POST", "/eviction"),
        1,
        "not retried"
    );
    // The server asked for Retry-After: 10; kube's default retry would have waited it out.
    assert!(
        outcome.elapsed < Duration::from_secs(8),
        "{:?}",
        outcome.elapsed
    );
}

#[test]
fn drs_rules_are_created_and_stale_owned_ones_deleted_while_others_stay() {
    let lab = Lab::start("hostname-anti-affinity-to-drs");
    let before = lab.rules();
    let outcome = lab.run(&[]);
    assert_eq!(outcome.code, 0, "{}\n{}", outcome.stdout, outcome.stderr);

    let after = lab.rules();
    let by_name: BTreeMap<&str, &Rule> = after.iter().map(|r| (r.name.as_str(), r)).collect();
    let created = by_name["vsphere-descheduler:lab:db:StatefulSet/pg"];
    assert_eq!(created.vms, ["worker-a", "worker-b", "worker-c"]);
    assert!(created.enabled && !created.mandatory && created.user_created);
    assert!(!by_name.contains_key("vsphere-descheduler:lab:db:StatefulSet/pg-old"));
    for untouched in [
        "user-keep-vcenter-apart",
        "vsphere-descheduler:other-k8s:db:StatefulSet/pg",
    ] {
        let was = before
            .iter()
            .find(|r| r.name == untouched)
            .expect("in the fixture");
        assert_eq!(by_name[untouched], was, "{untouched} changed");
    }
    assert_eq!(after.len(), 3, "{after:?}");

    // The snapshot command records the same rules, in a file `plan` reads.
    let file = lab.dir.path().join("recorded.yaml");
    let recorded = lab
        .command(&["snapshot", "-o", file.to_str().expect("UTF-8")])
        .output()
        .expect("the binary runs");
    let recorded = outcome_of(recorded);
    assert_eq!(recorded.code, 0, "{}", recorded.stderr);
    let text = std::fs::read_to_string(&file).expect("the snapshot file");
    assert!(!text.contains("managedFields"));
    let loaded = vsphere_descheduler::snapshot::load_files(&[file], chrono::Utc::now())
        .expect("plan reads what snapshot writes")
        .snapshot;
    assert_eq!(loaded.nodes.len(), 4);
    assert_eq!(loaded.pods.len(), 3);
    let inventory = loaded.inventory.expect("the inventory is recorded");
    let mut names: Vec<String> = inventory.clusters[0]
        .rules
        .iter()
        .map(|r| r.name.clone())
        .collect();
    names.sort();
    assert_eq!(
        names,
        sorted(after.iter().map(|r| r.name.clone()).collect())
    );

    let json = lab.dir.path().join("recorded.json");
    let recorded = outcome_of(
        lab.command(&[
            "--output",
            "json",
            "snapshot",
            "-o",
            json.to_str().expect("UTF-8"),
        ])
        .output()
        .expect("the binary runs"),
    );
    assert_eq!(recorded.code, 0, "{}", recorded.stderr);
    assert_eq!(recorded.report["pods"], 3);
    let loaded = vsphere_descheduler::snapshot::load_files(&[json], chrono::Utc::now())
        .expect("plan reads JSON snapshots too")
        .snapshot;
    assert_eq!(loaded.pods.len(), 3);
    assert!(loaded.inventory.is_some());
}

#[test]
fn a_dry_run_reports_which_evictions_a_pdb_would_block() {
    let lab = Lab::start("pdb-stale");
    let state = lab.kubernetes_state();
    let outcome = lab.run(&["--dry-run"]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert_eq!(
        outcome.evictions_with("blocked").len(),
        1,
        "{}",
        outcome.stdout
    );
    assert_eq!(lab.kubernetes_state(), state);
}

fn outcome_of(output: Output) -> Outcome {
    outcome(output, Duration::ZERO)
}

#[test]
fn a_dry_run_changes_nothing_anywhere() {
    for story in [
        "drs-moved-worker",
        "hostname-anti-affinity-to-drs",
        "several-violations",
    ] {
        let lab = Lab::start(story);
        if story == "drs-moved-worker" {
            lab.simulator.move_vm("worker-b", ESXI_41);
        }
        let state = lab.kubernetes_state();
        let leases = lab.leases();
        let inventory = lab.observe_vcenter();
        let outcome = lab.run(&["--dry-run"]);
        assert_eq!(outcome.code, 0, "{story}: {}", outcome.stderr);
        assert_eq!(outcome.report["mode"], "dry-run");
        let planned = outcome.report["evictions"].as_array().expect("evictions");
        assert!(
            planned.iter().all(|e| e["result"] == "planned"),
            "{story}: {planned:?}"
        );
        assert_eq!(lab.kubernetes_state(), state, "{story}: Kubernetes changed");
        assert_eq!(lab.leases(), leases, "{story}: the dry run took the lock");
        assert_eq!(lab.observe_vcenter(), inventory, "{story}: vCenter changed");
        // Evictions were checked by the server, with dryRun=All.
        let cluster = lab.server.cluster();
        let checks: Vec<_> = cluster
            .requests
            .iter()
            .filter(|r| r.path.ends_with("/eviction"))
            .collect();
        assert_eq!(checks.len(), planned.len());
        assert!(checks.iter().all(|r| r.query.contains("dryRun=All")));
        assert!(
            cluster
                .requests
                .iter()
                .all(|r| r.method == "GET" || r.path.ends_with("/eviction"))
        );
    }
}

#[test]
fn api_server_errors_fail_the_actions_they_hit_and_nothing_else() {
    let lab = Lab::start("several-violations");
    // The second eviction fails with 500; the others go through.
    lab.server.cluster().inject(
        Fault::status(Some(Method::POST), "/eviction", 500)
            .after(1)
            .times(1),
    );
    let outcome = lab.run(&[]);
    assert_eq!(outcome.code, 1, "{}", outcome.stdout);
    assert_eq!(outcome.evictions_with("evicted").len(), 2);
    assert_eq!(outcome.evictions_with("failed").len(), 1);
    assert_eq!(
        sorted(outcome.evictions_with("evicted")),
        lab.evicted_pods()
    );
    assert!(
        outcome
            .errors()
            .iter()
            .any(|e| e.contains("injected fault: HTTP 500")),
        "{:?}",
        outcome.errors()
    );
}

#[test]
fn failing_label_writes_stop_the_evictions_that_depend_on_them() {
    let lab = Lab::start("drs-moved-worker");
    lab.simulator.move_vm("worker-b", ESXI_41);
    lab.server
        .cluster()
        .inject(Fault::status(Some(Method::PATCH), "/api/v1/nodes/", 500));
    let outcome = lab.run(&[]);
    assert_eq!(outcome.code, 1);
    assert_eq!(lab.node_label("worker-b").as_deref(), Some(ESXI_42));
    assert!(lab.evicted_pods().is_empty());
    // The one eviction runs from (or next to) the relabelled worker-b: it waits for its labels.
    let entry = &outcome.report["evictions"][0];
    assert_eq!(entry["result"], "planned");
    assert_eq!(entry["dependsOnLabelsOf"], serde_json::json!(["worker-b"]));
    assert!(
        entry["message"]
            .as_str()
            .unwrap_or_default()
            .contains("not attempted: the labels of node worker-b could not be written"),
        "{entry}"
    );
}

const HTTPD_ON_WORKER_A: &str = "lab-ns-01/demo-httpd-68979c6d58-bvlgx";
const API_ON_WORKER_C: &str = "lab-ns-01/demo-api-7c4f9d5b8f-m7q4w";

/// The report's eviction entry of `namespace/pod`.
fn eviction_entry<'a>(outcome: &'a Outcome, key: &str) -> &'a Value {
    outcome.report["evictions"]
        .as_array()
        .expect("evictions")
        .iter()
        .find(|e| {
            format!(
                "{}/{}",
                e["namespace"].as_str().unwrap_or_default(),
                e["pod"].as_str().unwrap_or_default()
            ) == key
        })
        .unwrap_or_else(|| panic!("no eviction of {key}: {}", outcome.stdout))
}

#[test]
fn a_label_write_failing_for_one_node_holds_back_only_the_evictions_relying_on_it() {
    let lab = Lab::start("label-write-fails");
    // The autoscaler deleted worker-b between our list and our write: the apply's uid
    // precondition fails, answered as the API server answers it for a missing node.
    lab.server.cluster().inject(Fault {
        action: FaultAction::Status {
            code: 409,
            reason: "Conflict".to_string(),
            message: "Precondition failed: UID in precondition: \
                      53d19daf-cd4e-01bd-59cb-d0d59ebf4ab6, UID in object meta: "
                .to_string(),
            retry_after_seconds: 0,
        },
        ..Fault::status(Some(Method::PATCH), "/api/v1/nodes/worker-b", 409)
    });
    let outcome = lab.run(&[]);
    assert_eq!(outcome.code, 1, "{}", outcome.stdout);
    assert!(
        outcome
            .errors()
            .iter()
            .any(|e| e.contains("node worker-b not applied") && e.contains("deleted or replaced")),
        "{:?}",
        outcome.errors()
    );
    assert_eq!(lab.node_label("worker-b").as_deref(), Some(ESXI_42));

    // The httpd replica on worker-a shares a host with worker-b only by worker-b's new label.
    let httpd = eviction_entry(&outcome, HTTPD_ON_WORKER_A);
    assert_eq!(httpd["result"], "planned");
    assert_eq!(httpd["dependsOnLabelsOf"], serde_json::json!(["worker-b"]));
    assert!(
        httpd["message"]
            .as_str()
            .unwrap_or_default()
            .starts_with("not attempted: the labels of node worker-b could not be written"),
        "{httpd}"
    );
    // The api replica's decision involves no relabelled node: it goes all the same.
    let api = eviction_entry(&outcome, API_ON_WORKER_C);
    assert!(api.get("dependsOnLabelsOf").is_none(), "{api}");
    assert_eq!(api["result"], "evicted");
    assert_eq!(lab.evicted_pods(), [API_ON_WORKER_C]);
    assert_eq!(lab.server.cluster().count("POST", "/eviction"), 1);
}

#[test]
fn a_request_that_times_out_fails_and_the_run_goes_on() {
    let lab = Lab::start("several-violations");
    lab.server.cluster().inject(
        Fault::action(
            Some(Method::POST),
            "/eviction",
            FaultAction::Delay(Duration::from_secs(4)),
        )
        .times(1),
    );
    let outcome = lab.run(&["--request-timeout", "1"]);
    assert_eq!(outcome.code, 1, "{}", outcome.stdout);
    assert_eq!(
        outcome.evictions_with("failed").len(),
        1,
        "{}",
        outcome.stdout
    );
    assert_eq!(outcome.evictions_with("evicted").len(), 2);
    std::thread::sleep(Duration::from_secs(4));
    // However the abandoned request ended, no budget was overspent: one pod per PDB at most.
    budgets_hold(&lab);
}

/// Each workload of `several-violations` has a PDB allowing one disruption: at most one of its
/// pods may be evicted, whatever happened.
fn budgets_hold(lab: &Lab) {
    let evicted = lab.evicted_pods();
    for app in ["web", "api", "cart"] {
        let count = evicted
            .iter()
            .filter(|p| p.starts_with(&format!("shop/{app}-")))
            .count();
        assert!(count <= 1, "{app}: {evicted:?}");
    }
}

#[test]
fn a_storm_of_429s_fails_fast_without_evicting() {
    let lab = Lab::start("several-violations");
    lab.server.cluster().inject(Fault {
        action: FaultAction::Status {
            code: 429,
            reason: "TooManyRequests".to_string(),
            message: "too many requests, please try again later".to_string(),
            retry_after_seconds: 30,
        },
        ..Fault::status(Some(Method::POST), "/eviction", 429)
    });
    let outcome = lab.run(&[]);
    assert_eq!(outcome.code, 1);
    assert_eq!(outcome.evictions_with("failed").len(), 3);
    assert!(lab.evicted_pods().is_empty());
    assert_eq!(
        lab.server.cluster().count("POST", "/eviction"),
        3,
        "each sent once"
    );
    assert!(
        outcome.elapsed < Duration::from_secs(10),
        "{:?}",
        outcome.elapsed
    );
}

#[test]
fn with_vcenter_down_no_label_changes_and_no_host_level_decision_is_taken() {
    let lab = Lab::start("drs-moved-worker");
    lab.simulator.move_vm("worker-b", ESXI_41);
    let policy = lab.policy.display().to_string();
    let output = lab
        .command(&[
            "--output",
            "json",
            "run",
            "--policy",
            &policy,
            "--request-timeout",
            "2",
        ])
        .env("VSPHERE_SERVER", "https://127.0.0.1:9/sdk")
        .output()
        .expect("the binary runs");
    let outcome = outcome_of(output);
    assert_eq!(outcome.code, 1);
    assert!(
        outcome
            .errors()
            .iter()
            .any(|e| e.contains("vCenter could not be observed")),
        "{:?}",
        outcome.errors()
    );
    assert_eq!(
        lab.node_label("worker-b").as_deref(),
        Some(ESXI_42),
        "stale, but untouched"
    );
    assert!(lab.evicted_pods().is_empty());
    assert!(
        outcome.report["labelChanges"]
            .as_array()
            .expect("labels")
            .is_empty()
    );
    assert_eq!(lab.server.cluster().count("PATCH", "/nodes/"), 0);
}

#[test]
fn sigterm_between_evictions_stops_before_the_next_one() {
    let lab = Lab::start("several-violations");
    lab.server.cluster().inject(Fault::action(
        Some(Method::POST),
        "/eviction",
        FaultAction::Delay(Duration::from_millis(700)),
    ));
    let policy = lab.policy.display().to_string();
    let child = lab
        .command(&["--output", "json", "run", "--policy", &policy])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let deadline = Instant::now() + Duration::from_secs(30);
    while lab.evicted_pods().is_empty() {
        assert!(Instant::now() < deadline, "no eviction happened");
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let outcome = outcome_of(child.wait_with_output().expect("the binary ends"));
    assert_eq!(outcome.code, 1, "{}", outcome.stderr);
    let evicted = outcome.evictions_with("evicted");
    assert!(
        !evicted.is_empty() && evicted.len() < 3,
        "{}",
        outcome.stdout
    );
    assert_eq!(
        sorted(evicted.clone()),
        lab.evicted_pods(),
        "the report tells what was done"
    );
    let not_attempted: Vec<&Value> = outcome.report["evictions"]
        .as_array()
        .expect("evictions")
        .iter()
        .filter(|e| e["result"] == "planned")
        .collect();
    assert_eq!(not_attempted.len(), 3 - evicted.len());
    assert!(not_attempted.iter().all(|e| {
        e["message"]
            .as_str()
            .unwrap_or_default()
            .contains("SIGTERM")
    }));
    assert!(outcome.errors().iter().any(|e| e.contains("SIGTERM")));
    budgets_hold(&lab);
    let cluster = lab.server.cluster();
    let lease = cluster.leases.values().next().expect("the run lock");
    assert_eq!(
        lease.spec.as_ref().and_then(|s| s.holder_identity.clone()),
        None,
        "released"
    );
}

#[test]
fn a_run_lock_held_by_another_run_is_honoured() {
    let lab = Lab::start("several-violations");
    let now = k8s_openapi::jiff::Timestamp::now();
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some("vsphere-descheduler".to_string()),
            namespace: Some("ops".to_string()),
            resource_version: Some("1".to_string()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some("cronjob-pod-1234".to_string()),
            lease_duration_seconds: Some(60),
            acquire_time: Some(MicroTime(now)),
            renew_time: Some(MicroTime(now)),
            lease_transitions: Some(0),
            ..LeaseSpec::default()
        }),
    };
    lab.server.cluster().leases.insert(
        ("ops".to_string(), "vsphere-descheduler".to_string()),
        Arc::new(lease),
    );
    let state = lab.kubernetes_state();
    let outcome = lab.run(&["--lock-namespace", "ops"]);
    assert_eq!(outcome.code, 1);
    assert!(
        outcome.stderr.contains("cronjob-pod-1234"),
        "{}",
        outcome.stderr
    );
    assert_eq!(lab.kubernetes_state(), state);
}

/// Kubernetes traffic grows with the cluster only through list pages: a run reads every
/// collection in pages of 500 and then makes one request per action it takes (label patch,
/// eviction, event) plus the lock's. Nothing is requested per pod × node or retried blindly.
#[test]
fn requests_are_list_pages_plus_one_per_action() {
    let shape = cluster::Shape {
        nodes: 60,
        pods: 3_000,
        hosts: 6,
        ..cluster::Shape::default()
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let snapshot = dir.path().join("snapshot.json");
    std::fs::write(&snapshot, cluster::generate(&shape).json()).expect("write the snapshot");
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: vsphere-descheduler.io/v1alpha1\nkind: DeschedulerPolicy\nclusterName: scale\n\
         profiles:\n- name: spread\n  plugins:\n    deschedule: {enabled: [RemovePodsViolatingInterPodAntiAffinity]}\n    \
         balance: {enabled: [RemovePodsViolatingTopologySpreadConstraint]}\n",
    )
    .expect("write the policy");
    let lab = Lab::from_snapshot(&snapshot, policy);

    let outcome = lab.run(&[]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let cluster = lab.server.cluster();
    let (pods, nodes, pdbs, namespaces) = (
        cluster.pods.len(),
        cluster.nodes.len(),
        cluster.pdbs.len(),
        cluster.namespaces.len(),
    );
    assert_eq!((pods, nodes), (shape.pods, shape.nodes));
    let pages = |objects: usize| objects.div_ceil(500).max(1);
    let lists = cluster
        .requests
        .iter()
        .filter(|r| r.method == "GET" && r.query.contains("limit=500"))
        .count();
    assert!(
        lists <= pages(pods) + pages(nodes) + pages(pdbs) + pages(namespaces),
        "{lists} list requests for {pods} pods, {nodes} nodes, {pdbs} PDBs, {namespaces} namespaces"
    );

    let report = &outcome.report;
    let count = |key: &str| report[key].as_array().map_or(0, Vec::len);
    let relabelled: std::collections::BTreeSet<&str> = report["labelChanges"]
        .as_array()
        .expect("labelChanges")
        .iter()
        .filter_map(|c| c["node"].as_str())
        .collect();
    assert!(
        !relabelled.is_empty() && count("evictions") > 0,
        "the run acts"
    );
    assert_eq!(cluster.count("PATCH", "/api/v1/nodes/"), relabelled.len());
    assert_eq!(cluster.count("POST", "/eviction"), count("evictions"));
    assert_eq!(cluster.count("POST", "/events"), count("evictions"));
    let lock = cluster
        .requests
        .iter()
        .filter(|r| r.path.contains("/leases"))
        .count();
    // Take, release, and a renewal every 20 s of a run that takes a few seconds.
    assert!(lock <= 6, "{lock} lease requests");
    assert_eq!(
        cluster.requests.len(),
        lists + relabelled.len() + 2 * count("evictions") + lock,
        "every request is a list page, an action or the lock"
    );
}
