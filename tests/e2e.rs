//! End to end: the `vsphere-descheduler` binary against the lab harness, the real vCenter
//! simulator plus the fake Kubernetes API server, both loaded from one fixture under
//! `tests/fixtures/e2e/<story>/`. Every test checks the state left behind (the fake's objects,
//! the simulator's rules observed afresh), not only what the report claims.

#[path = "support/lab.rs"]
mod lab;
mod support;
// The benchmarks' generator; this file uses JSON only, not its YAML writer.
#[allow(dead_code)]
#[path = "../benches/support/cluster.rs"]
mod cluster;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::Method;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use lab::Lab;
use serde_json::Value;
use support::fake_apiserver::{Fault, FaultAction, Gate, KubeObjects, MetricsApi, read_objects};
use support::vcsim;
use vsphere_descheduler::inventory::{DrsRule, HaConfig, Inventory};
use vsphere_descheduler::snapshot::{History, PastEviction};
use vsphere_descheduler::vsphere;

const HOST_LABEL: &str = "vsphere-descheduler.io/host";
const ESXI_41: &str = "lab-wcp-esxi-41.go-lab.jp";
const ESXI_42: &str = "lab-wcp-esxi-42.go-lab.jp";
const CLUSTER: &str = "wcp-cluster-41";

/// The binary's verdict.
struct Outcome {
    code: i32,
    report: Value,
    stdout: String,
    stderr: String,
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
    /// `run --output json --policy <story policy>` plus `args`.
    fn run(&self, args: &[&str]) -> Outcome {
        let policy = self.policy.display().to_string();
        let mut all = vec!["--output", "json", "run", "--policy", policy.as_str()];
        all.extend_from_slice(args);
        let output = self.command(&all).output().expect("the binary runs");
        outcome(output)
    }

    /// `what-if --output json --policy <story policy>` plus `args`, against the lab.
    fn what_if(&self, args: &[&str]) -> Outcome {
        let policy = self.policy.display().to_string();
        let mut all = vec!["--output", "json", "what-if", "--policy", policy.as_str()];
        all.extend_from_slice(args);
        outcome(self.command(&all).output().expect("the binary runs"))
    }

    /// The simulator's inventory, observed afresh.
    fn observe_vcenter(&self) -> Inventory {
        runtime().block_on(async {
            let mut client = vsphere::VcenterClient::connect(&self.simulator.connection_config())
                .await
                .expect("connect to the simulator");
            let inventory = client.observe(&[], &[]).await.expect("observe");
            client.logout().await;
            inventory
        })
    }

    fn rules(&self) -> Vec<DrsRule> {
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

fn outcome(output: Output) -> Outcome {
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
    assert_eq!(
        evicted,
        [format!("lab-ns-01/{HTTPD_B}")],
        "worker-b's replica"
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
fn a_stale_pdb_is_a_pdb_skip_and_no_eviction_is_sent() {
    let lab = Lab::start("pdb-stale");
    let outcome = lab.run(&[]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let skipped = outcome.report["skipped"].as_array().expect("skipped");
    assert_eq!(skipped.len(), 2, "{}", outcome.stdout);
    assert!(
        skipped.iter().all(|s| s["reason"] == "pdb"
            && s["detail"]
                .as_str()
                .is_some_and(|d| d.contains("still being processed"))),
        "{skipped:?}"
    );
    assert_eq!(lab.server.cluster().count("POST", "/eviction"), 0);
    assert!(lab.evicted_pods().is_empty());
}

/// Runs `pdb-edited-mid-run` with the eviction held until its PDB is edited: the plan read a
/// synced PDB, the server judges an edited one its controller has not caught up with.
fn run_with_pdb_edited_before_the_eviction(args: &[&str]) -> (Lab, Outcome) {
    let lab = Lab::start("pdb-edited-mid-run");
    let gate = hold_evictions(&lab, 0);
    let run = Running::start(&lab, args);
    gate.wait_for_arrivals(1, Duration::from_secs(60));
    {
        let mut cluster = lab.server.cluster();
        cluster.pdb_controller_frozen = true;
        let pdb = cluster.pdbs.values_mut().next().expect("the PDB");
        Arc::make_mut(pdb).metadata.generation = Some(2);
    }
    gate.open();
    let outcome = run.finish();
    (lab, outcome)
}

#[test]
fn a_pdb_refusal_from_the_server_is_reported_blocked_at_once() {
    let (lab, outcome) = run_with_pdb_edited_before_the_eviction(&[]);
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
    // The server asked for Retry-After: 10; kube's default retry would have waited it out
    // (the count above says it was not retried at all, however busy the machine is).
}

#[test]
fn drs_rules_are_created_and_stale_owned_ones_deleted_while_others_stay() {
    let lab = Lab::start("hostname-anti-affinity-to-drs");
    let before = lab.rules();
    let outcome = lab.run(&[]);
    assert_eq!(outcome.code, 0, "{}\n{}", outcome.stdout, outcome.stderr);

    let after = lab.rules();
    let by_name: BTreeMap<&str, &DrsRule> = after.iter().map(|r| (r.name.as_str(), r)).collect();
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
    let started = chrono::Utc::now();
    let recorded = lab
        .command(&["snapshot", "-o", file.to_str().expect("UTF-8")])
        .output()
        .expect("the binary runs");
    let recorded = outcome_of(recorded);
    assert_eq!(recorded.code, 0, "{}", recorded.stderr);
    let text = std::fs::read_to_string(&file).expect("the snapshot file");
    assert!(!text.contains("managedFields"));
    let loaded = vsphere_descheduler::snapshot::load_files(&[file], chrono::Utc::now())
        .expect("plan reads what snapshot writes");
    // When it was recorded (issue 39), which `plan` plans at without --now.
    let recorded_at = loaded.recorded_at.expect("a recordedAt");
    let seconds = |time: chrono::DateTime<chrono::Utc>| time.timestamp();
    assert!(
        seconds(started) <= seconds(recorded_at) && recorded_at <= chrono::Utc::now(),
        "{started} <= {recorded_at}"
    );
    let loaded = loaded.snapshot;
    assert_eq!(loaded.nodes.len(), 4);
    assert_eq!(loaded.pods.len(), 3);
    let inventory = loaded.inventory.expect("the inventory is recorded");
    let observed = lab.observe_vcenter();
    let ha = |inventory: &Inventory| -> Vec<Option<HaConfig>> {
        inventory.clusters.iter().map(|c| c.ha.clone()).collect()
    };
    assert_eq!(ha(&inventory), ha(&observed), "HA is recorded as observed");
    assert!(ha(&inventory).iter().all(Option::is_some), "{inventory:?}");
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
        .expect("plan reads JSON snapshots too");
    assert!(loaded.recorded_at.is_some(), "JSON records it too");
    let loaded = loaded.snapshot;
    assert_eq!(loaded.pods.len(), 3);
    assert!(loaded.inventory.is_some());
}

#[test]
fn a_dry_run_reports_which_evictions_a_pdb_would_block() {
    let (lab, outcome) = run_with_pdb_edited_before_the_eviction(&["--dry-run"]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert_eq!(
        outcome.evictions_with("blocked").len(),
        1,
        "{}",
        outcome.stdout
    );
    assert!(lab.evicted_pods().is_empty());
    let cluster = lab.server.cluster();
    let pdb = cluster.pdbs.values().next().expect("the PDB");
    let status = pdb.status.as_ref().expect("a status");
    assert_eq!(status.disruptions_allowed, 1, "a dry run spends nothing");
}

fn outcome_of(output: Output) -> Outcome {
    outcome(output)
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

/// The strategy of each eviction of a report, as `namespace/pod strategy`.
fn evictions_by_strategy(outcome: &Outcome) -> Vec<String> {
    let evictions = outcome.report["evictions"].as_array().expect("evictions");
    sorted(
        evictions
            .iter()
            .map(|e| {
                let field = |name: &str| e[name].as_str().unwrap_or_default().to_string();
                format!(
                    "{}/{} {}",
                    field("namespace"),
                    field("pod"),
                    field("strategy")
                )
            })
            .collect(),
    )
}

#[test]
fn lifecycle_plugins_plan_in_a_dry_run_and_evict_in_a_run() {
    let lab = Lab::start("lifecycle-plugins");
    let state = lab.kubernetes_state();
    let dry = lab.run(&["--dry-run"]);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    let expected = [
        "shop/api-5d8f7c9b6-aaaaa RemovePodsViolatingNodeTaints",
        "shop/cache-5d8f7c9b6-aaaaa RemoveFailedPods",
    ];
    assert_eq!(evictions_by_strategy(&dry), expected, "{}", dry.stdout);
    assert_eq!(dry.evictions_with("planned").len(), 2, "{}", dry.stdout);
    assert_eq!(
        lab.kubernetes_state(),
        state,
        "the dry run changed Kubernetes"
    );

    let run = lab.run(&[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(evictions_by_strategy(&run), expected, "{}", run.stdout);
    assert_eq!(run.evictions_with("evicted").len(), 2, "{}", run.stdout);
    // The running pod terminates gracefully; the failed one, which runs nothing, is deleted at
    // once, as the API server deletes finished pods.
    assert_eq!(lab.evicted_pods(), ["shop/api-5d8f7c9b6-aaaaa"]);
    let cluster = lab.server.cluster();
    let key = ("shop".to_string(), "cache-5d8f7c9b6-aaaaa".to_string());
    assert!(
        !cluster.pods.contains_key(&key),
        "the failed pod is still there"
    );
    assert!(
        cluster
            .pods
            .contains_key(&("shop".to_string(), "agent-5d8f7c9b6-aaaaa".to_string()))
    );
}

/// `namespace/pod reason` of each skipped pod.
fn skips(outcome: &Outcome) -> Vec<String> {
    let skipped = outcome.report["skipped"].as_array().expect("skipped");
    sorted(
        skipped
            .iter()
            .map(|s| {
                let field = |name: &str| s[name].as_str().unwrap_or_default().to_string();
                format!(
                    "{}/{} {}",
                    field("namespace"),
                    field("pod"),
                    field("reason")
                )
            })
            .collect(),
    )
}

/// Requests the fake answered for metrics.k8s.io, sorted: the two lists run at once, so their
/// order is the scheduler's.
fn metrics_requests(lab: &Lab) -> Vec<String> {
    sorted(
        lab.server
            .cluster()
            .requests
            .iter()
            .filter(|r| r.path.starts_with("/apis/metrics.k8s.io/"))
            .map(|r| format!("{} {} {}", r.method, r.path, r.status))
            .collect(),
    )
}

/// The story's LowNodeUtilization reads metrics-server: by requests every node is idle, by
/// actual usage worker-1 is at 85% cpu. Newest first, web-02 and web-01 move, which brings
/// worker-1 to 45%, under its 50% target: web-00 stays (its policy turns the availability gate
/// and pacing off, so reaching the target is what stops it).
const METRICS_EVICTIONS: [&str; 2] = [
    "shop/web-01 LowNodeUtilization",
    "shop/web-02 LowNodeUtilization",
];
/// web-03 has no PodMetrics: what moving it frees is unknown.
const METRICS_SKIPS: [&str; 1] = ["shop/web-03 no-metrics"];

#[test]
fn low_node_utilization_evicts_by_metrics_server_usage_in_a_dry_run_and_a_run() {
    let lab = Lab::start("low-node-utilization-metrics");
    let state = lab.kubernetes_state();
    let dry = lab.run(&["--dry-run"]);
    assert_eq!(dry.code, 0, "{}\n{}", dry.stdout, dry.stderr);
    assert_eq!(
        evictions_by_strategy(&dry),
        METRICS_EVICTIONS,
        "{}",
        dry.stdout
    );
    assert_eq!(dry.evictions_with("planned").len(), 2, "{}", dry.stdout);
    assert_eq!(skips(&dry), METRICS_SKIPS, "{}", dry.stdout);
    assert_eq!(
        lab.kubernetes_state(),
        state,
        "the dry run changed Kubernetes"
    );
    assert_eq!(
        metrics_requests(&lab),
        [
            "GET /apis/metrics.k8s.io/v1beta1/nodes 200",
            "GET /apis/metrics.k8s.io/v1beta1/pods 200"
        ]
    );

    let run = lab.run(&[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(
        evictions_by_strategy(&run),
        METRICS_EVICTIONS,
        "{}",
        run.stdout
    );
    assert_eq!(run.evictions_with("evicted").len(), 2, "{}", run.stdout);
    assert_eq!(lab.evicted_pods(), ["shop/web-01", "shop/web-02"]);
    // Stop at target: once worker-1 is under 50%, the oldest replica is left where it is.
    let web_00 = lab.pod("shop", "web-00").expect("web-00 is still there");
    assert_eq!(
        web_00.metadata.deletion_timestamp, None,
        "web-00 was evicted"
    );
}

#[test]
fn a_cluster_without_metrics_server_is_a_report_error_and_nothing_moves_by_usage() {
    // kube-apiserver answers both in plain text, not with a Status.
    for (api, code, body) in [
        (MetricsApi::Absent, 404, "404 page not found"),
        (MetricsApi::Unavailable, 503, "service unavailable"),
    ] {
        let lab = Lab::start("low-node-utilization-metrics");
        lab.server.cluster().metrics_api = api;
        let dry = lab.run(&["--dry-run"]);
        assert_eq!(dry.code, 1, "{api:?}: {}\n{}", dry.stdout, dry.stderr);
        // NodeMetrics and PodMetrics are listed at once: either may fail first.
        let expected = |list: &str| {
            format!(
                "actual usage could not be read, so the plugins reading it planned without \
                 metrics (their pods are skipped as no-metrics): metrics.k8s.io is not served \
                 (HTTP {code}): is metrics-server installed and its APIService available?: GET \
                 /apis/metrics.k8s.io/v1beta1/{list} answered HTTP {code}: {body}"
            )
        };
        let errors = dry.errors();
        assert!(
            errors == [expected("nodes")] || errors == [expected("pods")],
            "{api:?}: {errors:?}"
        );
        assert!(
            dry.report["evictions"]
                .as_array()
                .expect("evictions")
                .is_empty(),
            "{api:?}: {}",
            dry.stdout
        );
    }
}

#[test]
fn a_snapshot_records_metrics_server_usage_and_plans_as_the_run() {
    let lab = Lab::start("low-node-utilization-metrics");
    let policy = lab.policy.display().to_string();
    let file = lab.dir.path().join("recorded.json");
    let snapshot = outcome_of(
        lab.command(&[
            "--output",
            "json",
            "snapshot",
            "--policy",
            &policy,
            "-o",
            file.to_str().expect("UTF-8"),
        ])
        .output()
        .expect("the binary runs"),
    );
    assert_eq!(snapshot.code, 0, "{}", snapshot.stderr);
    assert_eq!(snapshot.report["nodeMetrics"], 3, "{}", snapshot.stdout);
    assert_eq!(snapshot.report["podMetrics"], 4, "{}", snapshot.stdout);
    let recorded = std::fs::read_to_string(&file).expect("the snapshot was written");
    assert!(
        recorded.contains(r#""kind":"NodeMetrics""#) && !recorded.contains("window"),
        "metrics recorded, pruned to usage: {recorded}"
    );
    let planned = outcome_of(
        lab.command(&[
            "--output",
            "json",
            "plan",
            "--policy",
            &policy,
            "--snapshot",
            file.to_str().expect("UTF-8"),
        ])
        .output()
        .expect("the binary runs"),
    );
    assert_eq!(planned.code, 0, "{}", planned.stderr);
    assert_eq!(
        evictions_by_strategy(&planned),
        METRICS_EVICTIONS,
        "{}",
        planned.stdout
    );
    assert_eq!(skips(&planned), METRICS_SKIPS, "{}", planned.stdout);
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
    // The autoscaler deleted worker-b between our list and our write, and a new machine joined
    // under the same name: the apply names the old uid and the server refuses it (422 Invalid on
    // metadata.uid, as kube-apiserver 1.32 answers). The write is held until the node is replaced.
    let gate = Gate::new();
    lab.server.cluster().inject(Fault::action(
        Some(Method::PATCH),
        "/api/v1/nodes/worker-b",
        FaultAction::Hold(gate.clone()),
    ));
    let run = Running::start(&lab, &[]);
    gate.wait_for_arrivals(1, Duration::from_secs(60));
    let replacement = {
        let mut cluster = lab.server.cluster();
        let old = cluster
            .nodes
            .remove("worker-b")
            .expect("worker-b was listed");
        let mut new = old.as_ref().clone();
        new.metadata.uid = None;
        new.metadata.managed_fields = None;
        cluster.load(KubeObjects {
            nodes: vec![new],
            ..KubeObjects::default()
        });
        assert_ne!(cluster.nodes["worker-b"].metadata.uid, old.metadata.uid);
        cluster.nodes["worker-b"].metadata.uid.clone()
    };
    gate.open();
    let outcome = run.finish();
    assert_eq!(outcome.code, 1, "{}", outcome.stdout);
    let patches: Vec<u16> = lab
        .server
        .cluster()
        .requests
        .iter()
        .filter(|r| r.method == "PATCH" && r.path == "/api/v1/nodes/worker-b")
        .map(|r| r.status)
        .collect();
    assert_eq!(
        patches,
        [422],
        "one apply, refused as the real server refuses it"
    );
    assert!(
        outcome
            .errors()
            .iter()
            .any(|e| e.contains("node worker-b not applied") && e.contains("deleted or replaced")),
        "{:?}",
        outcome.errors()
    );
    let cluster = lab.server.cluster();
    let new = &cluster.nodes["worker-b"];
    assert_eq!(new.metadata.uid, replacement, "the new node is left alone");
    assert_eq!(
        new.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(HOST_LABEL))
            .map(String::as_str),
        Some(ESXI_42)
    );
    drop(cluster);

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
    // The first eviction is held until the run is over: it times out however fast the machine.
    let gate = Gate::new();
    lab.server.cluster().inject(
        Fault::action(
            Some(Method::POST),
            "/eviction",
            FaultAction::Hold(gate.clone()),
        )
        .times(1),
    );
    let outcome = lab.run(&["--request-timeout", "1"]);
    gate.wait_for_arrivals(1, Duration::from_secs(60));
    assert_eq!(outcome.code, 1, "{}", outcome.stdout);
    assert_eq!(
        outcome.evictions_with("failed").len(),
        1,
        "{}",
        outcome.stdout
    );
    assert_eq!(outcome.evictions_with("evicted").len(), 2);
    budgets_hold(&lab);
    // The abandoned request, let through late, changes nothing the budgets forbid: one pod per
    // PDB at most, whether the server still handled it or dropped it with its connection.
    gate.open();
    gate.wait_for_departures(1, Duration::from_secs(60));
    budgets_hold(&lab);
}

#[test]
fn a_claim_expiring_between_two_label_requests_of_a_node_stops_the_rest_and_says_so() {
    // DRS moved worker-b's VM next to worker-a: its host label is to change.
    let lab = Lab::start("label-write-fails");
    // The apply is held; once it arrived, renewals fail, and the test waits for the run to say
    // its claim expired before letting the apply through, answered 503: the retry that would
    // follow is a second label request, which the expired claim must stop.
    let gate = Gate::new();
    lab.server.cluster().inject(
        Fault::action(
            Some(Method::PATCH),
            "/api/v1/nodes/worker-b",
            FaultAction::HoldThen(
                gate.clone(),
                Box::new(FaultAction::Status {
                    code: 503,
                    reason: "ServiceUnavailable".to_string(),
                    message: "injected fault: HTTP 503".to_string(),
                    retry_after_seconds: 0,
                }),
            ),
        )
        .times(1),
    );
    let run = Running::start(&lab, &["--lock-duration", "6s"]);
    gate.wait_for_arrivals(1, Duration::from_secs(60));
    lab.server
        .cluster()
        .inject(Fault::status(Some(Method::PUT), "/leases/", 500));
    run.wait_for_log("the run lock could not be renewed in time");
    gate.open();
    let outcome = run.finish();
    assert_eq!(outcome.code, 1, "{}", outcome.stdout);
    let patches: Vec<u16> = lab
        .server
        .cluster()
        .requests
        .iter()
        .filter(|r| r.method == "PATCH" && r.path == "/api/v1/nodes/worker-b")
        .map(|r| r.status)
        .collect();
    assert_eq!(patches, [503], "the apply in flight, and no retry after it");
    assert_eq!(lab.node_label("worker-b").as_deref(), Some(ESXI_42));
    let errors = outcome.errors();
    assert!(
        errors.iter().any(|e| e.starts_with("label change(s) ")
            && e.contains("of node worker-b not applied: lease ")
            && e.contains("could not be renewed")),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.ends_with("stopped acting: the remaining actions were not carried out")),
        "{errors:?}"
    );
    assert_eq!(lab.server.cluster().count("POST", "/eviction"), 0);
    assert!(
        not_attempted(&outcome)
            .iter()
            .all(|m| m.starts_with("not attempted: ")),
        "{}",
        outcome.stdout
    );
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
    // Nor retried after the Retry-After: that no time is spent waiting it out is shown on
    // paused time in tests/kube.rs (a_storm_of_429s_is_not_waited_out).
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

/// The binary running in the background, its stderr read as it comes so a test can wait for a
/// log line (a barrier: the binary said it got there) instead of for time to pass.
struct Running {
    child: std::process::Child,
    log: std::sync::mpsc::Receiver<String>,
    stderr: std::thread::JoinHandle<String>,
}

impl Running {
    fn start(lab: &Lab, args: &[&str]) -> Running {
        let policy = lab.policy.display().to_string();
        let mut all = vec!["--output", "json", "run", "--policy", policy.as_str()];
        all.extend_from_slice(args);
        let mut child = lab
            .command(&all)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("the binary starts");
        let stderr = child.stderr.take().expect("stderr is piped");
        let (sender, log) = std::sync::mpsc::channel();
        let stderr = std::thread::spawn(move || {
            let mut all = String::new();
            for line in std::io::BufRead::lines(std::io::BufReader::new(stderr)) {
                let line = line.unwrap_or_default();
                let _ = sender.send(line.clone());
                all.push_str(&line);
                all.push('\n');
            }
            all
        });
        Running { child, log, stderr }
    }

    /// Waits until the binary logs a line containing `needle`.
    fn wait_for_log(&self, needle: &str) {
        let limit = Instant::now() + Duration::from_secs(60);
        loop {
            let left = limit.saturating_duration_since(Instant::now());
            match self.log.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return,
                Ok(_) => {}
                Err(error) => panic!("the binary never logged {needle:?}: {error}"),
            }
        }
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
    }

    fn finish(self) -> Outcome {
        let Running { child, stderr, .. } = self;
        let mut output = child.wait_with_output().expect("the binary ends");
        output.stderr = stderr.join().expect("stderr was read").into_bytes();
        outcome(output)
    }
}

/// Holds evictions at a gate after `first_through` went through.
fn hold_evictions(lab: &Lab, first_through: usize) -> Gate {
    let gate = Gate::new();
    lab.server.cluster().inject(
        Fault::action(
            Some(Method::POST),
            "/eviction",
            FaultAction::Hold(gate.clone()),
        )
        .after(first_through),
    );
    gate
}

fn not_attempted(outcome: &Outcome) -> Vec<String> {
    outcome.report["evictions"]
        .as_array()
        .expect("evictions")
        .iter()
        .filter(|e| e["result"] == "planned")
        .map(|e| e["message"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn lock_holder(lab: &Lab) -> Option<String> {
    let cluster = lab.server.cluster();
    let lease = cluster.leases.values().next().expect("the run lock");
    lease.spec.as_ref().and_then(|s| s.holder_identity.clone())
}

#[test]
fn sigterm_between_evictions_lets_the_one_in_flight_finish_and_starts_no_other() {
    let lab = Lab::start("several-violations");
    let gate = hold_evictions(&lab, 1);
    let run = Running::start(&lab, &[]);
    gate.wait_for_arrivals(1, Duration::from_secs(60));
    run.signal("-TERM");
    run.wait_for_log("asked to stop");
    gate.open();
    let outcome = run.finish();
    assert_eq!(outcome.code, 1, "{}", outcome.stderr);
    assert_eq!(outcome.report["exitCode"], 1);
    let evicted = outcome.evictions_with("evicted");
    assert_eq!(evicted.len(), 2, "{}", outcome.stdout);
    assert_eq!(
        sorted(evicted),
        lab.evicted_pods(),
        "the report tells what was done"
    );
    let not_attempted = not_attempted(&outcome);
    assert_eq!(not_attempted.len(), 1, "{}", outcome.stdout);
    assert!(not_attempted[0].contains("not attempted: the run was stopped by SIGTERM"));
    assert_eq!(lab.server.cluster().count("POST", "/eviction"), 2);
    budgets_hold(&lab);
    assert_eq!(lock_holder(&lab), None, "released");
}

#[test]
fn a_second_signal_exits_at_once() {
    let lab = Lab::start("several-violations");
    let gate = hold_evictions(&lab, 0);
    let run = Running::start(&lab, &[]);
    gate.wait_for_arrivals(1, Duration::from_secs(60));
    run.signal("-INT");
    run.wait_for_log("asked to stop");
    run.signal("-INT");
    let outcome = run.finish();
    gate.open();
    assert_eq!(outcome.code, 130, "{}", outcome.stderr);
    assert!(outcome.stdout.is_empty(), "{}", outcome.stdout);
}

/// The run ends by its deadline while a request hangs: it reports, and releases the lock. The
/// deadline's timing is tests/deadline.rs's (paused time); here nothing is timed. The gate tells
/// what the run had sent when the deadline passed: normally the first eviction, hanging; on a
/// machine too busy to reach it in time, nothing, and the run must end all the same.
#[test]
fn at_the_deadline_a_run_stuck_on_a_request_reports_and_releases_the_lock() {
    let lab = Lab::start("several-violations");
    let gate = hold_evictions(&lab, 0);
    // Only a hang guard: a run the deadline did not end gets its eviction answered after ten
    // minutes, and then fails the assertions below instead of hanging the suite.
    let guard = gate.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(600));
        guard.open();
    });
    let run = Running::start(&lab, &["--deadline", "10s"]);
    let outcome = run.finish();
    let hung = gate.arrived();
    assert_eq!(outcome.code, 1, "{}", outcome.stderr);
    assert_eq!(outcome.report["exitCode"], 1);
    assert_eq!(lock_holder(&lab), None, "released after the deadline");
    // Evictions go one at a time: at most the first was sent, and it is the one unconfirmed.
    assert!(hung <= 1, "{hung} evictions sent at once");
    assert!(
        outcome.evictions_with("evicted").is_empty(),
        "{}",
        outcome.stdout
    );
    let unknown = outcome.evictions_with("unknown");
    assert_eq!(unknown.len(), hung, "{}", outcome.stdout);
    let deadline = "the run's deadline of 10s passed";
    if hung == 1 {
        let not_attempted = not_attempted(&outcome);
        assert_eq!(not_attempted.len(), 2, "{}", outcome.stdout);
        assert!(
            not_attempted.iter().all(|m| m.contains(deadline)),
            "{not_attempted:?}"
        );
        // No pod was evicted, so no Event was due: the deadline cut none off.
        assert!(
            !outcome.stdout.contains("events were"),
            "{}",
            outcome.stdout
        );
    } else {
        let errors = outcome.errors();
        assert!(errors.iter().any(|e| e.contains(deadline)), "{errors:?}");
    }
    gate.open();
}

/// Issue 31: the report is printed before the lock is released and the vCenter session ended,
/// as docs/commands.md says (at the deadline the report must be out first). stdout and stderr
/// share one pipe here, so what it holds is in the order the binary wrote it.
#[test]
fn the_report_is_printed_before_the_lock_is_released_and_vcenter_logged_out_of() {
    let lab = Lab::start("lifecycle-plugins");
    let policy = lab.policy.display().to_string();
    let (mut reader, writer) = std::io::pipe().expect("a pipe");
    let mut command = lab.command(&["--output", "json", "run", "--policy", &policy]);
    command
        .env("RUST_LOG", "info,vsphere_descheduler=debug")
        .stdout(writer.try_clone().expect("a second writer"))
        .stderr(writer);
    let mut child = command.spawn().expect("the binary starts");
    // The command holds the pipe's write ends: reading ends only once they are closed.
    drop(command);
    let mut output = String::new();
    std::io::Read::read_to_string(&mut reader, &mut output).expect("the output");
    assert!(child.wait().expect("the binary ends").success(), "{output}");
    // The JSON report's last line; log lines start with their time.
    let report_end = output.find("\n}\n").expect("a report");
    let released = output.find("released the run lock").expect("released");
    let logged_out = output.find("logged out of vCenter").expect("logged out");
    assert!(report_end < released, "{output}");
    assert!(report_end < logged_out, "{output}");
    assert_eq!(lock_holder(&lab), None);
}

#[test]
fn a_run_whose_lock_cannot_be_renewed_starts_no_write_after_the_claim_expires() {
    let lab = Lab::start("several-violations");
    let gate = hold_evictions(&lab, 0);
    // A 6 s lease, renewed every 2 s: the run may act for 5 s after its last renewal.
    let run = Running::start(&lab, &["--lock-duration", "6s"]);
    gate.wait_for_arrivals(1, Duration::from_secs(60));
    // Renewals succeeded until now, so the claim was current when the eviction was sent,
    // however slowly the run got here. From now on every lease write fails (the release too).
    lab.server
        .cluster()
        .inject(Fault::status(Some(Method::PUT), "/leases/", 500));
    // The binary says its claim expired: the eviction in flight straddles the expiry.
    run.wait_for_log("the run lock could not be renewed in time");
    gate.open();
    let outcome = run.finish();
    assert_eq!(outcome.code, 1, "{}", outcome.stderr);
    assert_eq!(
        outcome.evictions_with("evicted").len(),
        1,
        "{}",
        outcome.stdout
    );
    let not_attempted = not_attempted(&outcome);
    assert_eq!(not_attempted.len(), 2, "{}", outcome.stdout);
    assert!(
        not_attempted
            .iter()
            .all(|m| m.contains("could not be renewed")),
        "{not_attempted:?}"
    );
    assert_eq!(lab.server.cluster().count("POST", "/eviction"), 1);
}

#[test]
fn a_run_whose_lock_was_taken_over_makes_no_further_change() {
    let lab = Lab::start("several-violations");
    let gate = hold_evictions(&lab, 0);
    let run = Running::start(&lab, &["--lock-duration", "6s"]);
    gate.wait_for_arrivals(1, Duration::from_secs(60));
    // Another run writes the lease once the first eviction is on its way: the next renewal
    // finds out (until then renewals succeed, however slowly the run got here).
    lab.server
        .cluster()
        .inject(Fault::status(Some(Method::PUT), "/leases/", 409));
    run.wait_for_log("another run wrote the run lock");
    gate.open();
    let outcome = run.finish();
    assert_eq!(outcome.code, 1, "{}", outcome.stderr);
    let not_attempted = not_attempted(&outcome);
    assert_eq!(not_attempted.len(), 2, "{}", outcome.stdout);
    assert!(
        not_attempted.iter().all(|m| m.contains("taken over")),
        "{not_attempted:?}"
    );
    assert_eq!(lab.server.cluster().count("POST", "/eviction"), 1);
    assert_eq!(
        lab.server.cluster().count("POST", "/events"),
        1,
        "what was done is still recorded"
    );
}

#[test]
fn a_run_lock_held_by_another_run_is_honoured() {
    let lab = Lab::start("several-violations");
    let now = k8s_openapi::jiff::Timestamp::now();
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some("vsphere-descheduler".to_string()),
            namespace: Some("kube-system".to_string()),
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
        ("kube-system".to_string(), "vsphere-descheduler".to_string()),
        Arc::new(lease),
    );
    let state = lab.kubernetes_state();
    // In the chart's release namespace, where its Role grants the lock.
    let outcome = lab.run(&["--lock-namespace", "kube-system"]);
    assert_eq!(outcome.code, 1);
    assert!(
        outcome.stderr.contains("cronjob-pod-1234"),
        "{}",
        outcome.stderr
    );
    // A machine reading stdout learns why too.
    assert_eq!(outcome.report["kind"], "Report");
    assert_eq!(outcome.report["exitCode"], 1);
    assert!(
        outcome
            .errors()
            .iter()
            .any(|e| e.contains("cronjob-pod-1234")),
        "{}",
        outcome.stdout
    );
    assert!(
        outcome.report["evictions"]
            .as_array()
            .expect("evictions")
            .is_empty()
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
        // The PDBs (maxUnavailable) count their controllers' replicas, as the real controller.
        controllers: true,
        ..cluster::Shape::default()
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let snapshot = dir.path().join("snapshot.json");
    std::fs::write(&snapshot, cluster::text(&shape, cluster::Format::Json))
        .expect("write the snapshot");
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
    let (pods, nodes, pdbs, namespaces, classes) = (
        cluster.pods.len(),
        cluster.nodes.len(),
        cluster.pdbs.len(),
        cluster.namespaces.len(),
        cluster.priority_classes.len(),
    );
    assert_eq!((pods, nodes), (shape.pods, shape.nodes));
    let pages = |objects: usize| objects.div_ceil(500).max(1);
    let lists = cluster
        .requests
        .iter()
        .filter(|r| r.method == "GET" && r.query.contains("limit=500"))
        .count();
    assert!(
        lists <= pages(pods) + pages(nodes) + pages(pdbs) + pages(namespaces) + pages(classes),
        "{lists} list requests for {pods} pods, {nodes} nodes, {pdbs} PDBs, {namespaces} \
         namespaces, {classes} PriorityClasses"
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
    // Read, record before the evictions, and correct after them: one object however many
    // evictions are recorded.
    let history = cluster
        .requests
        .iter()
        .filter(|r| r.path.contains("/configmaps"))
        .count();
    assert!(history <= 3, "{history} history requests");
    assert_eq!(
        cluster.requests.len(),
        lists + relabelled.len() + 2 * count("evictions") + lock + history,
        "every request is a list page, an action, the lock or the history"
    );
    let agent = concat!("vsphere-descheduler/", env!("CARGO_PKG_VERSION"));
    let strangers: Vec<_> = cluster
        .requests
        .iter()
        .filter(|r| r.user_agent != agent)
        .collect();
    assert!(
        strangers.is_empty(),
        "requests without our User-Agent: {strangers:?}"
    );
}

/// One request as RBAC authorizes it: API group (`core` for the core group), resource (with its
/// subresource), verb, and the namespace and name it names.
#[derive(Debug)]
struct ApiCall {
    group: String,
    resource: String,
    verb: &'static str,
    namespace: Option<String>,
    name: Option<String>,
}

/// How the API server's authorizer sees a request the fake recorded (the paths this tool uses:
/// no watch, no collection deletes).
fn api_call(method: &str, path: &str) -> ApiCall {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let (group, rest) = match segments.as_slice() {
        ["api", _version, rest @ ..] => ("core", rest),
        ["apis", group, _version, rest @ ..] => (*group, rest),
        _ => panic!("not a Kubernetes API path: {path}"),
    };
    let (namespace, rest) = match rest {
        ["namespaces", namespace, resource, rest @ ..] => (
            Some(namespace.to_string()),
            [&[*resource][..], rest].concat(),
        ),
        other => (None, other.to_vec()),
    };
    let (resource, name) = match rest.as_slice() {
        [resource] => (resource.to_string(), None),
        [resource, name] => (resource.to_string(), Some(name.to_string())),
        [resource, name, sub] => (format!("{resource}/{sub}"), Some(name.to_string())),
        _ => panic!("unexpected path {path}"),
    };
    let verb = match (method, name.is_some()) {
        ("GET", true) => "get",
        ("GET", false) => "list",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", _) => "delete",
        _ => panic!("unexpected method {method} {path}"),
    };
    ApiCall {
        group: group.to_string(),
        resource,
        verb,
        namespace,
        name,
    }
}

/// Issue 43: the fake runs as the chart's ServiceAccount with exactly the chart's rendered RBAC
/// unless a test asks otherwise, so a live run, a what-if and a check through the binary need
/// nothing the chart does not grant: no request of theirs is refused.
#[test]
fn a_run_a_what_if_and_a_check_need_nothing_the_chart_does_not_grant() {
    let lab = Lab::start("what-if-ha");
    assert_eq!(
        lab.server.cluster().rbac,
        support::fake_apiserver::Rbac::chart(),
        "the default identity is the chart's"
    );
    let policy = lab.policy.display().to_string();
    let run = lab.run(&[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let what_if = lab.what_if(&["--host-fails", "esxi-41"]);
    assert_eq!(what_if.code, 0, "{}", what_if.stderr);
    let check = outcome_of(
        lab.command(&["--output", "json", "check", "--policy", &policy])
            .output()
            .expect("the binary runs"),
    );
    assert_eq!(check.code, 0, "{}\n{}", check.stdout, check.stderr);
    let requests = lab.server.cluster().requests.clone();
    let writes = requests.iter().filter(|r| r.method != "GET").count();
    assert!(
        writes > 0,
        "the run wrote (took the lock at least): {requests:?}"
    );
    let refused: Vec<_> = requests.iter().filter(|r| r.status == 403).collect();
    assert!(refused.is_empty(), "refused: {refused:?}");
}

/// The lines of `kube::API_CALLS`: (group, resource, verb) and the grant.
fn listed_api_calls() -> BTreeMap<(String, String, String), String> {
    vsphere_descheduler::kube::API_CALLS
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            let columns: Vec<&str> = line.split_whitespace().collect();
            let [group, resource, verb, grant] = columns.as_slice() else {
                panic!("four columns: {line}");
            };
            (
                (group.to_string(), resource.to_string(), verb.to_string()),
                grant.to_string(),
            )
        })
        .collect()
}

#[test]
fn every_request_is_a_listed_api_call_and_every_listed_call_is_made() {
    let lab = Lab::start("label-write-fails");
    let lock_namespace = "kube-system";
    let dry_run = lab.run(&["--dry-run", "--lock-namespace", lock_namespace]);
    assert_eq!(dry_run.code, 0, "{}", dry_run.stderr);
    let file = lab.dir.path().join("recorded.yaml");
    let snapshot = outcome_of(
        lab.command(&["snapshot", "-o", file.to_str().expect("UTF-8")])
            .output()
            .expect("the binary runs"),
    );
    assert_eq!(snapshot.code, 0, "{}", snapshot.stderr);
    // The first eviction finds its pod gone: the history is created before the evictions, then
    // replaced without the one that did not happen.
    lab.server
        .cluster()
        .inject(Fault::status(Some(Method::POST), "/eviction", 404).times(1));
    let run = lab.run(&["--lock-namespace", lock_namespace]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        !run.evictions_with("evicted").is_empty()
            && !run.report["labelChanges"]
                .as_array()
                .expect("labelChanges")
                .is_empty(),
        "the run acts: {}",
        run.stdout
    );

    // A policy without actual usage never asks metrics-server.
    assert_eq!(metrics_requests(&lab), Vec::<String>::new());
    // One that reads it lists metrics.k8s.io in a run and in a snapshot.
    let metrics_lab = Lab::start("low-node-utilization-metrics");
    let metrics_run = metrics_lab.run(&["--lock-namespace", lock_namespace]);
    assert_eq!(metrics_run.code, 0, "{}", metrics_run.stderr);
    let metrics_policy = metrics_lab.policy.display().to_string();
    let metrics_file = metrics_lab.dir.path().join("recorded.yaml");
    let metrics_snapshot = outcome_of(
        metrics_lab
            .command(&[
                "snapshot",
                "--policy",
                &metrics_policy,
                "-o",
                metrics_file.to_str().expect("UTF-8"),
            ])
            .output()
            .expect("the binary runs"),
    );
    assert_eq!(metrics_snapshot.code, 0, "{}", metrics_snapshot.stderr);
    // `check` asks about each call, with the policies of both.
    for (lab, policy) in [
        (&lab, lab.policy.display().to_string()),
        (&metrics_lab, metrics_policy),
    ] {
        let checked = outcome_of(
            lab.command(&[
                "--output",
                "json",
                "check",
                "--policy",
                &policy,
                "--lock-namespace",
                lock_namespace,
            ])
            .output()
            .expect("the binary runs"),
        );
        assert_eq!(checked.code, 0, "{}\n{}", checked.stdout, checked.stderr);
    }

    let listed = listed_api_calls();
    let mut used = std::collections::BTreeSet::new();
    let requests: Vec<_> = [&lab, &metrics_lab]
        .iter()
        .flat_map(|lab| lab.server.cluster().requests.clone())
        .collect();
    for request in &requests {
        let call = api_call(&request.method, &request.path);
        let key = (
            call.group.clone(),
            call.resource.clone(),
            call.verb.to_string(),
        );
        let grant = listed
            .get(&key)
            .unwrap_or_else(|| panic!("{request:?} is {call:?}, not in src/kube/api_calls.txt"));
        // What the grant allows: a Role reaches only the lock namespace, a Role/NAME only NAME.
        if let Some(role) = grant.strip_prefix("Role") {
            assert_eq!(call.namespace.as_deref(), Some(lock_namespace), "{call:?}");
            if let Some(name) = role.strip_prefix('/') {
                assert_eq!(call.name.as_deref(), Some(name), "{call:?}");
            }
        }
        used.insert(key);
    }
    let unused: Vec<_> = listed.keys().filter(|call| !used.contains(*call)).collect();
    assert!(unused.is_empty(), "listed but never called: {unused:?}");

    // The same runs' vCenter side: every SOAP method the simulator served is in
    // src/vsphere/privileges.txt (tests/vsphere.rs sends every method listed there).
    let listed_methods: std::collections::BTreeSet<&str> = vsphere::privilege_lines()
        .iter()
        .map(|line| line.method)
        .collect();
    for lab in [&lab, &metrics_lab] {
        let sent = lab.simulator.calls();
        let unlisted: Vec<&String> = sent
            .keys()
            .filter(|method| !listed_methods.contains(method.as_str()))
            .collect();
        assert!(
            unlisted.is_empty(),
            "sent to vCenter but not in src/vsphere/privileges.txt: {unlisted:?}"
        );
    }
}

/// The account of docs/vcenter-role.md without its one write privilege: the run observes,
/// labels and evicts as usual, but vCenter refuses the DRS reconfiguration (the harness refuses
/// it as vCenter does: vcsim itself checks no privilege), so the rules stay as they were, the
/// report says which privilege is missing on which cluster, and the run exits 1.
#[test]
fn a_run_whose_account_lacks_the_drs_write_privilege_says_so_and_changes_no_rule() {
    let lab = Lab::start("hostname-anti-affinity-to-drs");
    let (user, password) = ("descheduler@vsphere.local", "read-0nly");
    lab.simulator.add_user(user, password);
    lab.simulator.add_role(
        "vsphere-descheduler-observe",
        &["System.Anonymous", "System.View", "System.Read"],
    );
    lab.simulator.set_permission(user, "ReadOnly", "/", false);
    lab.simulator
        .set_permission(user, "vsphere-descheduler-observe", "/go-lab", true);
    let before = lab.rules();

    let policy = lab.policy.display().to_string();
    let outcome = outcome_of(
        lab.command(&["--output", "json", "run", "--policy", &policy])
            .env("VSPHERE_USERNAME", user)
            .env("VSPHERE_PASSWORD", password)
            .output()
            .expect("the binary runs"),
    );

    assert_eq!(outcome.code, 1, "{}\n{}", outcome.stdout, outcome.stderr);
    assert_eq!(lab.rules(), before, "no rule changed");
    let entries = outcome.report["drsRules"].as_array().expect("drsRules");
    let written: Vec<&Value> = entries.iter().filter(|e| e["action"] != "keep").collect();
    assert!(
        !written.is_empty(),
        "the plan writes rules: {}",
        outcome.stdout
    );
    for entry in &written {
        assert_eq!(entry["result"], "failed", "{entry}");
        let message = entry["message"].as_str().expect("a message");
        assert!(
            message.contains("NoPermission")
                && message
                    .contains("missing Host.Inventory.EditCluster on ClusterComputeResource:"),
            "{message}"
        );
    }
    let errors = outcome.errors();
    assert!(
        errors.iter().any(|e| e.starts_with(&format!(
            "DRS rules of vSphere cluster {CLUSTER} were not changed: ReconfigureComputeResource_Task on ClusterComputeResource:"
        )) && e.contains("Host.Inventory.EditCluster")),
        "{errors:?}"
    );
    // The run observed vCenter with this account; the refused write is its only error.
    assert_eq!(
        outcome.report["mappedNodes"].as_array().map(Vec::len),
        Some(4),
        "{}",
        outcome.stdout
    );
    assert_eq!(errors.len(), 1, "{errors:?}");
}

/// Every `PLANTED-…` string in a text.
fn planted_strings(text: &str) -> std::collections::BTreeSet<String> {
    text.match_indices("PLANTED-")
        .map(|(at, _)| {
            text[at..]
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || *c == '-')
                .collect()
        })
        .collect()
}

/// Issue 10: a recorded snapshot can be attached to a bug report. Strings planted where the
/// planner never looks (env values, envFrom, commands and args, unread container and node
/// fields, last-applied-configuration and unknown annotations) are nowhere in the file, and
/// planning on it gives the plan of the objects as the API server serves them, unpruned.
#[test]
fn a_recorded_snapshot_holds_no_planted_secret_and_plans_like_the_originals() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/e2e/planted-secrets/snapshot.yaml");
    let planted = planted_strings(&std::fs::read_to_string(fixture).expect("the fixture"));
    assert!(planted.len() >= 15, "{planted:?}");
    let lab = Lab::start("planted-secrets");
    fn json<T: serde::Serialize>(object: &T) -> Value {
        serde_json::to_value(object).expect("Kubernetes objects serialize")
    }
    let served: Vec<Value> = {
        let cluster = lab.server.cluster();
        cluster
            .nodes
            .values()
            .map(|node| json(node.as_ref()))
            .chain(cluster.pods.values().map(|pod| json(pod.as_ref())))
            .chain(cluster.pdbs.values().map(|pdb| json(pdb.as_ref())))
            .chain(cluster.namespaces.values().map(|ns| json(ns.as_ref())))
            .collect()
    };
    let served_text = serde_json::to_string(&served).expect("JSON");
    for secret in &planted {
        assert!(
            served_text.contains(secret),
            "{secret} is served by the API"
        );
    }

    let record = |name: &str| {
        let path = lab.dir.path().join(name);
        let recorded = outcome_of(
            lab.command(&["snapshot", "-o", path.to_str().expect("UTF-8")])
                .output()
                .expect("the binary runs"),
        );
        assert_eq!(recorded.code, 0, "{}", recorded.stderr);
        let text = std::fs::read_to_string(&path).expect("the snapshot file");
        assert_eq!(planted_strings(&text), Default::default(), "in {name}");
        path
    };
    let yaml = record("recorded.yaml");
    let json = record("recorded.json");

    // Our field manager's label ownership is kept, and nobody else's.
    let recorded = read_objects(&json);
    let managers: BTreeMap<String, Vec<String>> = recorded
        .nodes
        .iter()
        .map(|node| {
            let managers = node.metadata.managed_fields.iter().flatten();
            let names = managers.filter_map(|entry| entry.manager.clone()).collect();
            (node.metadata.name.clone().unwrap_or_default(), names)
        })
        .collect();
    assert_eq!(managers["worker-a"], ["vsphere-descheduler"]);
    assert!(managers["worker-b"].is_empty(), "{managers:?}");

    // The originals: every object as served, with the inventory the snapshot recorded.
    let originals = lab.dir.path().join("originals.json");
    let inventory = recorded.inventory.expect("the inventory is recorded");
    let documents = [
        serde_json::json!({"apiVersion": "v1", "kind": "List", "items": served}),
        serde_json::json!({
            "apiVersion": vsphere_descheduler::inventory::API_VERSION,
            "kind": vsphere_descheduler::inventory::KIND,
            "clusters": inventory.clusters,
        }),
    ];
    let text: Vec<String> = documents.iter().map(Value::to_string).collect();
    std::fs::write(&originals, text.join("\n")).expect("write the originals");

    let policy = lab.policy.display().to_string();
    let plan = |snapshot: &Path| -> Value {
        let snapshot = snapshot.display().to_string();
        let planned = outcome_of(
            lab.command(&[
                "--output",
                "json",
                "plan",
                "--now",
                "2026-11-21T09:00:00Z",
                "--policy",
                &policy,
                "--snapshot",
                &snapshot,
            ])
            .output()
            .expect("the binary runs"),
        );
        assert_eq!(planned.code, 0, "{}", planned.stderr);
        planned.report
    };
    let expected = plan(&originals);
    assert_eq!(expected["labelChanges"][0]["node"], "worker-b");
    assert_eq!(
        expected["evictions"][0]["pod"], "web-5d8f9c7b6-d3e4f",
        "{expected:#}"
    );
    assert_eq!(plan(&yaml), expected);
    assert_eq!(plan(&json), expected);
}

/// Two datacenters, each with a cluster named `Cluster` and node VMs named `k8s-worker-1` and
/// `k8s-worker-2`: every rule change goes to its own cluster, over its own VMs, by id.
#[test]
fn same_named_clusters_and_vms_in_two_datacenters_get_their_own_rules() {
    let lab = Lab::start("twin-clusters");
    let before = lab.observe_vcenter();
    let outcome = lab.run(&[]);
    assert_eq!(outcome.code, 0, "{}\n{}", outcome.stdout, outcome.stderr);

    let changes: Vec<(String, String, String)> = outcome.report["drsRules"]
        .as_array()
        .expect("drsRules")
        .iter()
        .map(|r| {
            let field = |name: &str| r[name].as_str().unwrap_or_default().to_string();
            (field("cluster"), field("name"), field("result"))
        })
        .collect();
    let pg = "vsphere-descheduler:lab:db:StatefulSet/pg";
    let gone = "vsphere-descheduler:lab:db:StatefulSet/gone";
    let entry = |cluster: &str, name: &str, result: &str| {
        (cluster.to_string(), name.to_string(), result.to_string())
    };
    assert_eq!(
        changes,
        [
            entry("dc-east/Cluster", pg, "applied"),
            entry("dc-west/Cluster", gone, "applied"),
            entry("dc-west/Cluster", pg, "applied"),
        ],
        "{}",
        outcome.stdout
    );

    let after = lab.observe_vcenter();
    let cluster = |inventory: &Inventory, datacenter: &str| {
        inventory
            .clusters
            .iter()
            .find(|c| c.datacenter == datacenter && c.name == "Cluster")
            .cloned()
            .expect("the cluster")
    };
    let (east_before, east) = (cluster(&before, "dc-east"), cluster(&after, "dc-east"));
    assert_eq!(
        east.rules, east_before.rules,
        "dc-east's rules are untouched"
    );
    let west = cluster(&after, "dc-west");
    let [rule] = west.rules.as_slice() else {
        panic!("dc-west holds one rule: {:?}", west.rules);
    };
    assert_eq!(rule.name, pg);
    let west_vms: Vec<String> = sorted(west.vms.iter().filter_map(|vm| vm.id.clone()).collect());
    assert_eq!(sorted(rule.vm_ids.clone()), west_vms, "dc-west's own VMs");
    assert_ne!(west.id, east.id);
    for entry in outcome.report["drsRules"].as_array().expect("drsRules") {
        let id = if entry["cluster"] == "dc-east/Cluster" {
            &east.id
        } else {
            &west.id
        };
        assert_eq!(entry["clusterId"].as_str(), id.as_deref(), "{entry}");
    }
}

/// The rules of the story's only cluster, by name, keys and order left out.
fn rules_by_name(inventory: &Inventory) -> BTreeMap<String, DrsRule> {
    let [cluster] = inventory.clusters.as_slice() else {
        panic!("one cluster: {inventory:?}");
    };
    cluster
        .rules
        .iter()
        .map(|rule| {
            let mut rule = rule.clone();
            (rule.key, rule.uuid) = (None, None);
            rule.vms.sort();
            rule.vm_ids.clear();
            (rule.name.clone(), rule)
        })
        .collect()
}

/// A node group's rule is written over its nodes' VMs, kept up to date, and deleted with the
/// group; a stale group's rule goes, and rules that are not ours stay as they were.
#[test]
fn node_group_rules_are_updated_and_deleted_while_other_rules_stay() {
    let lab = Lab::start("control-plane-apart");
    let before = rules_by_name(&lab.observe_vcenter());
    let outcome = lab.run(&[]);
    assert_eq!(outcome.code, 0, "{}\n{}", outcome.stdout, outcome.stderr);

    let group = "vsphere-descheduler:lab:nodes:control-plane";
    let after = rules_by_name(&lab.observe_vcenter());
    assert_eq!(after[group].vms, ["cp-1", "cp-2", "cp-3"]);
    assert!(after[group].enabled && !after[group].mandatory);
    assert!(!after.contains_key("vsphere-descheduler:lab:nodes:etcd"));
    for untouched in [
        "vsphere-descheduler:other-k8s:nodes:control-plane",
        "user-keep-apart",
    ] {
        assert_eq!(after[untouched], before[untouched], "{untouched} changed");
    }
    let entry = outcome.report["drsRules"]
        .as_array()
        .expect("drsRules")
        .iter()
        .find(|r| r["name"] == group)
        .cloned()
        .expect("the group's rule is reported");
    assert_eq!(
        (entry["action"].as_str(), entry["result"].as_str()),
        (Some("update"), Some("applied"))
    );
    assert_eq!(entry["nodeGroup"], "control-plane");

    // The group leaves the policy: its rule goes too.
    let without_group = lab.dir.path().join("no-groups.yaml");
    let policy = std::fs::read_to_string(&lab.policy).expect("the story's policy");
    let (head, _) = policy.split_once("vsphere:\n").expect("a vsphere section");
    let (_, tail) = policy.split_once("profiles:\n").expect("profiles");
    std::fs::write(&without_group, format!("{head}profiles:\n{tail}")).expect("writable");
    let policy_arg = without_group.to_str().expect("UTF-8");
    let second = outcome_of(
        lab.command(&["--output", "json", "run", "--policy", policy_arg])
            .output()
            .expect("the binary runs"),
    );
    assert_eq!(second.code, 0, "{}\n{}", second.stdout, second.stderr);
    let last = rules_by_name(&lab.observe_vcenter());
    assert!(!last.contains_key(group), "{last:?}");
    assert_eq!(
        last.len(),
        2,
        "only the rules that are not ours remain: {last:?}"
    );
}

/// A Supervisor cluster: the worker nodes are the ESXi hosts. They get their own host as label,
/// a vSphere Pod moves between them, and no DRS rule names them; the control-plane VMs get the
/// node group's rule.
#[test]
fn supervisor_host_nodes_are_labelled_and_used_but_in_no_drs_rule() {
    let story = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/plan/supervisor-hosts");
    let lab = Lab::from_snapshot(&story.join("snapshot.yaml"), story.join("policy.yaml"));
    let outcome = lab.run(&[]);
    assert_eq!(outcome.code, 0, "{}\n{}", outcome.stdout, outcome.stderr);

    for (node, host) in [
        ("esxi-41.example.com", "esxi-41.example.com"),
        ("esxi-42.example.com", "esxi-42.example.com"),
        ("esxi-43.example.com", "10.0.0.43"),
    ] {
        assert_eq!(lab.node_label(node).as_deref(), Some(host), "{node}");
    }
    assert_eq!(lab.evicted_pods().len(), 1, "{}", outcome.stdout);
    let mapped_as_hosts = outcome.report["mappedNodes"]
        .as_array()
        .expect("mappedNodes")
        .iter()
        .filter(|m| m["mappedBy"] == "esxiHost" && m.get("vm").is_none())
        .count();
    assert_eq!(mapped_as_hosts, 3);

    let rules = rules_by_name(&lab.observe_vcenter());
    let names: Vec<&String> = rules.keys().collect();
    assert_eq!(
        names,
        ["vsphere-descheduler:supervisor:nodes:control-plane"]
    );
    let rule = rules.values().next().expect("one rule");
    assert_eq!(
        rule.vms,
        [
            "SupervisorControlPlaneVM (1)",
            "SupervisorControlPlaneVM (2)",
            "SupervisorControlPlaneVM (3)"
        ]
    );
}

// --- The eviction history (issue 31, point 3) ------------------------------------------------
//
// Tests marked "needs the planner's pacing" rely on the planner setting `paced_as` (for pods with
// a controller, pacing on by default: one eviction per workload per 10 minutes); the rest hold
// whatever the planner paces.

const LOCK_NAMESPACE: &str = "kube-system";
const LOCK_NAME: &str = "vsphere-descheduler";

impl Lab {
    /// Puts the run lock's Lease in place as an earlier run left it: released, with `history` as
    /// its eviction history.
    fn history_lease(&self, history: &str) {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(LOCK_NAME.to_string()),
                namespace: Some(LOCK_NAMESPACE.to_string()),
                resource_version: Some("1".to_string()),
                annotations: Some(
                    [(HISTORY.to_string(), history.to_string())]
                        .into_iter()
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                lease_duration_seconds: Some(60),
                lease_transitions: Some(1),
                ..LeaseSpec::default()
            }),
        };
        self.server.cluster().leases.insert(
            (LOCK_NAMESPACE.to_string(), LOCK_NAME.to_string()),
            Arc::new(lease),
        );
    }

    /// The history annotation of the run lock's Lease as the fake holds it.
    fn stored_history(&self) -> Option<String> {
        let cluster = self.server.cluster();
        let lease = cluster
            .leases
            .get(&(LOCK_NAMESPACE.to_string(), LOCK_NAME.to_string()))?;
        lease.metadata.annotations.as_ref()?.get(HISTORY).cloned()
    }

    /// The entries of the history ConfigMap as the fake holds it, oldest first.
    fn stored_config_history(&self) -> Option<Vec<PastEviction>> {
        use vsphere_descheduler::snapshot::history;
        let cluster = self.server.cluster();
        let config_map = cluster.config_maps.get(&(
            LOCK_NAMESPACE.to_string(),
            history::config_map_name(LOCK_NAME),
        ))?;
        let compact = history::Compact {
            marker: config_map
                .metadata
                .annotations
                .as_ref()?
                .get(HISTORY)?
                .clone(),
            data: config_map.data.clone().unwrap_or_default(),
        };
        Some(history::decode(&compact).expect("a readable history"))
    }

    /// Puts an earlier run's history ConfigMap in place, holding `entries`.
    fn history_config_map(&self, entries: &[PastEviction]) {
        use vsphere_descheduler::snapshot::history;
        let compact = history::encode(entries, chrono::Utc::now());
        let config_map = k8s_openapi::api::core::v1::ConfigMap {
            metadata: ObjectMeta {
                name: Some(history::config_map_name(LOCK_NAME)),
                namespace: Some(LOCK_NAMESPACE.to_string()),
                resource_version: Some("1".to_string()),
                annotations: Some(
                    [(HISTORY.to_string(), compact.marker)]
                        .into_iter()
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            data: Some(compact.data),
            ..Default::default()
        };
        self.server.cluster().config_maps.insert(
            (
                LOCK_NAMESPACE.to_string(),
                history::config_map_name(LOCK_NAME),
            ),
            Arc::new(config_map),
        );
    }

    /// `plan --output json --policy <story policy> --snapshot FILE`.
    fn plan_snapshot(&self, file: &Path) -> Outcome {
        let policy = self.policy.display().to_string();
        let file = file.display().to_string();
        outcome_of(
            self.command(&[
                "--output",
                "json",
                "plan",
                "--policy",
                &policy,
                "--snapshot",
                &file,
            ])
            .output()
            .expect("the binary runs"),
        )
    }

    /// `snapshot -o FILE` (JSON summary).
    fn snapshot(&self, file: &Path) -> Outcome {
        outcome_of(
            self.command(&[
                "--output",
                "json",
                "snapshot",
                "-o",
                file.to_str().expect("UTF-8"),
            ])
            .output()
            .expect("the binary runs"),
        )
    }
}

const HISTORY: &str = vsphere_descheduler::snapshot::history::ANNOTATION;
const ANTI_AFFINITY: &str = "RemovePodsViolatingInterPodAntiAffinity";

/// The history of several-violations' `web` evicted a minute ago (its pods have no
/// `pod-template-hash` label, so their workload is the ReplicaSet), in whole seconds as the
/// history keeps times.
fn web_evicted_a_minute_ago() -> Vec<PastEviction> {
    let at = chrono::Utc::now() - chrono::TimeDelta::minutes(1);
    vec![PastEviction::new(
        chrono::DateTime::from_timestamp(at.timestamp(), 0).expect("a time"),
        "shop/ReplicaSet/web-5d8f7c9b6",
        "web-5d8f7c9b6-zzzzz",
        ANTI_AFFINITY,
    )]
}

/// `entries` in the form versions before the ConfigMap wrote: the Lease annotation's JSON list.
fn render(entries: &[PastEviction]) -> String {
    let list: Vec<Value> = entries
        .iter()
        .map(|entry| {
            let pod = entry.pod.as_ref().expect("a pod");
            serde_json::json!({"at": entry.at, "workload": entry.workload, "pod": pod.name,
                "plugin": pod.plugin})
        })
        .collect();
    serde_json::to_string(&list).expect("JSON")
}

fn lease_gets(lab: &Lab) -> usize {
    lab.server.cluster().count("GET", "/leases/")
}

fn history_gets(lab: &Lab) -> usize {
    lab.server.cluster().count("GET", "/configmaps/")
}

/// A run of several-violations after `web_evicted_a_minute_ago`: api and cart are evicted, web
/// is paced. Returns the pods evicted.
fn evicts_all_but_the_paced_web(lab: &Lab) -> Vec<String> {
    let outcome = lab.run(&[]);
    assert_eq!(outcome.code, 0, "{}\n{}", outcome.stdout, outcome.stderr);
    let evicted = outcome.evictions_with("evicted");
    assert_eq!(evicted.len(), 2, "api and cart: {}", outcome.stdout);
    assert!(
        evicted.iter().all(|pod| !pod.starts_with("shop/web-")),
        "{evicted:?}"
    );
    evicted
}

/// A history already in its ConfigMap (as every run since the move writes it) paces the run as
/// the earlier form did, and the run's own evictions join it there.
#[test]
fn a_run_honours_the_history_its_config_map_holds() {
    let lab = Lab::start("several-violations");
    let earlier = web_evicted_a_minute_ago();
    lab.history_config_map(&earlier);
    let evicted = evicts_all_but_the_paced_web(&lab);
    assert_eq!(sorted(evicted), lab.evicted_pods());
    let recorded = lab.stored_config_history().expect("a history");
    assert_eq!(recorded.len(), 3, "{recorded:?}");
    assert_eq!(recorded[0], earlier[0], "the earlier run's entry stays");
}

/// Needs the planner's pacing: each workload's eviction is recorded with its pod and plugin, in
/// the history ConfigMap (the earlier run's Lease annotation moved there), and a workload evicted
/// a minute ago by an earlier run is not evicted again.
#[test]
fn a_run_records_its_paced_evictions_and_honours_those_of_earlier_runs() {
    let lab = Lab::start("several-violations");
    let earlier = web_evicted_a_minute_ago();
    lab.history_lease(&render(&earlier));
    let evicted = evicts_all_but_the_paced_web(&lab);
    assert_eq!(sorted(evicted.clone()), lab.evicted_pods());

    let recorded = lab.stored_config_history().expect("a history");
    assert_eq!(recorded.len(), 3, "{recorded:?}");
    assert_eq!(recorded[0], earlier[0], "the earlier run's entry stays");
    assert_eq!(
        lab.stored_history(),
        None,
        "moved from the Lease into the ConfigMap"
    );
    let mut new: Vec<(String, String, String)> = recorded[1..]
        .iter()
        .map(|e| {
            let pod = e.pod.as_ref().expect("kept");
            (
                e.workload.clone(),
                format!("shop/{}", pod.name),
                pod.plugin.clone(),
            )
        })
        .collect();
    new.sort();
    let mut expected: Vec<(String, String, String)> = evicted
        .iter()
        .map(|pod| {
            let app = pod
                .trim_start_matches("shop/")
                .split('-')
                .next()
                .expect("app");
            (
                format!("shop/ReplicaSet/{app}-5d8f7c9b6"),
                pod.clone(),
                ANTI_AFFINITY.to_string(),
            )
        })
        .collect();
    expected.sort();
    assert_eq!(new, expected);
    // The history keeps whole seconds, rounding up (a window then lasts a little longer, never
    // shorter), so an eviction of the last second may read as the next one.
    let latest = chrono::Utc::now() + chrono::TimeDelta::seconds(1);
    assert!(
        recorded[1..]
            .iter()
            .all(|e| e.at > earlier[0].at && e.at <= latest),
        "{recorded:?}"
    );
    assert_eq!(lock_holder(&lab), None, "released, the history kept");
}

/// A dry run reads the history (one `get` of the Lease, one of the ConfigMap) and writes
/// nothing, neither the Lease nor anything else.
#[test]
fn a_dry_run_reads_the_history_and_writes_nothing() {
    let lab = Lab::start("several-violations");
    lab.history_lease(&render(&web_evicted_a_minute_ago()));
    let leases = lab.leases();
    let state = lab.kubernetes_state();
    let outcome = lab.run(&["--dry-run"]);
    assert_eq!(outcome.code, 0, "{}\n{}", outcome.stdout, outcome.stderr);
    assert_eq!(lab.leases(), leases, "the Lease is as it was");
    assert_eq!(lab.kubernetes_state(), state);
    assert_eq!(lease_gets(&lab), 1);
    assert_eq!(history_gets(&lab), 1);
    let cluster = lab.server.cluster();
    assert!(
        cluster
            .requests
            .iter()
            .all(|r| r.method == "GET" || r.path.ends_with("/eviction")),
        "{:?}",
        cluster.requests
    );
}

fn assert_names_the_corrupt_history(outcome: &Outcome, object: &str) {
    let errors = outcome.errors();
    assert!(
        errors.iter().any(|e| e.contains(&format!(
            "the eviction history in {object} (annotation {HISTORY}) cannot be read"
        )) && e.contains("Remove the annotation")),
        "{errors:#?}"
    );
}

/// A corrupt history fails closed: a run and a dry run report which Lease and what to do, exit
/// 1, and the run never writes over it.
#[test]
fn a_corrupt_history_is_a_report_error_and_is_never_overwritten() {
    let lab = Lab::start("history-corrupt");
    let corrupt = lab.stored_history().expect("the story's history");
    let dry_run = lab.run(&["--dry-run"]);
    assert_eq!(dry_run.code, 1, "{}", dry_run.stderr);
    assert_eq!(dry_run.report["exitCode"], 1);
    assert_names_the_corrupt_history(&dry_run, "Lease kube-system/vsphere-descheduler");

    let run = lab.run(&[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.report["exitCode"], 1);
    assert_names_the_corrupt_history(&run, "Lease kube-system/vsphere-descheduler");
    assert_eq!(lab.stored_history(), Some(corrupt), "never overwritten");
    assert_eq!(lock_holder(&lab), None, "released");
}

/// Needs the planner's pacing: on a corrupt history no paced eviction is sent (all three pods
/// have a controller), by a run or a dry run.
#[test]
fn a_corrupt_history_sends_no_paced_eviction() {
    let lab = Lab::start("history-corrupt");
    let dry_run = lab.run(&["--dry-run"]);
    assert_eq!(dry_run.code, 1, "{}", dry_run.stderr);
    let run = lab.run(&[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    for outcome in [&dry_run, &run] {
        assert!(
            outcome.report["evictions"]
                .as_array()
                .expect("evictions")
                .is_empty(),
            "{}",
            outcome.stdout
        );
    }
    assert_eq!(lab.server.cluster().count("POST", "/eviction"), 0);
    assert!(lab.evicted_pods().is_empty());
}

/// `snapshot` records the Lease (its name and history only) and `plan --snapshot` reads the same
/// history the run reads, so it plans the evictions a dry run plans; a corrupt history is
/// recorded as it is, and the plan of it fails closed and says so, naming the file.
#[test]
fn a_snapshot_records_the_history_and_a_plan_of_it_reads_it_as_the_run_does() {
    let lab = Lab::start("several-violations");
    let earlier = web_evicted_a_minute_ago();
    lab.history_lease(&render(&earlier));
    let yaml = lab.dir.path().join("recorded.yaml");
    let json = lab.dir.path().join("recorded.json");
    for file in [&yaml, &json] {
        let recorded = lab.snapshot(file);
        assert_eq!(recorded.code, 0, "{}", recorded.stderr);
        assert_eq!(
            recorded.report["evictionHistory"],
            "kube-system/vsphere-descheduler"
        );
        let loaded = vsphere_descheduler::snapshot::load_files(
            std::slice::from_ref(file),
            chrono::Utc::now(),
        )
        .expect("plan reads what snapshot writes")
        .snapshot;
        assert_eq!(loaded.history, History::Recorded(earlier.clone()));
    }
    let text = std::fs::read_to_string(&yaml).expect("the file");
    assert!(!text.contains("holderIdentity") && !text.contains("leaseTransitions"));

    let dry_run = lab.run(&["--dry-run"]);
    assert_eq!(dry_run.code, 0, "{}", dry_run.stderr);
    let planned = |outcome: &Outcome| -> Vec<String> {
        sorted(
            outcome.report["evictions"]
                .as_array()
                .expect("evictions")
                .iter()
                .map(|e| format!("{}/{}", e["namespace"], e["pod"]))
                .collect(),
        )
    };
    for file in [&yaml, &json] {
        let plan = lab.plan_snapshot(file);
        assert_eq!(plan.code, 0, "{}", plan.stderr);
        assert_eq!(planned(&plan), planned(&dry_run), "{}", file.display());
        assert!(plan.errors().is_empty(), "{:?}", plan.errors());
    }

    let corrupt = Lab::start("history-corrupt");
    let file = corrupt.dir.path().join("recorded.yaml");
    let recorded = corrupt.snapshot(&file);
    assert_eq!(recorded.code, 0, "{}", recorded.stderr);
    assert!(
        std::fs::read_to_string(&file)
            .expect("the file")
            .contains("evicted yesterday"),
        "recorded as it is"
    );
    let plan = corrupt.plan_snapshot(&file);
    assert_eq!(plan.code, 0, "a plan is made: {}", plan.stderr);
    assert_names_the_corrupt_history(
        &plan,
        &format!(
            "Lease kube-system/vsphere-descheduler in {}",
            file.display()
        ),
    );
}

/// RBAC's refusal of `get` on the lock's Lease, as a real API server words it.
fn lease_get_refused() -> Fault {
    Fault::action(
        Some(Method::GET),
        "/leases/vsphere-descheduler",
        FaultAction::Status {
            code: 403,
            reason: "Forbidden".to_string(),
            message: "leases.coordination.k8s.io \"vsphere-descheduler\" is forbidden: User \
                      \"system:serviceaccount:ops:laptop\" cannot get resource \"leases\" in \
                      API group \"coordination.k8s.io\" in the namespace \"kube-system\""
                .to_string(),
            retry_after_seconds: 0,
        },
    )
}

/// A Lease the dry run may not read fails closed too, but its error says to grant the read, not
/// to remove an annotation nobody has seen.
#[test]
fn a_history_that_could_not_be_read_fails_closed_with_its_own_fix() {
    let lab = Lab::start("several-violations");
    lab.server.cluster().inject(lease_get_refused());
    let outcome = lab.run(&["--dry-run"]);
    assert_eq!(outcome.code, 1, "{}\n{}", outcome.stdout, outcome.stderr);
    assert!(
        outcome.evictions_with("planned").is_empty(),
        "{}",
        outcome.stdout
    );
    let errors = outcome.errors();
    assert!(
        errors.iter().any(|e| e.starts_with(
            "the eviction history in Lease kube-system/vsphere-descheduler (annotation \
             vsphere-descheduler.io/eviction-history) cannot be read: the Lease could not be read"
        ) && e.contains("cannot get resource")
            && e.contains("grant the run `get` on the Lease")
            && !e.contains("Remove the annotation")),
        "{errors:#?}"
    );
}

/// `snapshot` that cannot read the Lease writes no file: one without the history would plan as
/// if nothing had been evicted, more than the run (which fails closed) would evict.
#[test]
fn a_snapshot_that_cannot_read_the_lease_fails_and_writes_nothing() {
    let lab = Lab::start("several-violations");
    lab.server.cluster().inject(lease_get_refused());
    let file = lab.dir.path().join("recorded.yaml");
    let output = lab
        .command(&["snapshot", "-o", file.to_str().expect("UTF-8")])
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(!file.exists(), "no file written");
    assert!(
        stderr.contains("lease kube-system/vsphere-descheduler") && stderr.contains("forbidden"),
        "{stderr}"
    );
}

// --- The availability gate across runs (issue 31, points 1 and 4) ------------------------------

impl Lab {
    /// What the ReplicaSet controller and the kubelet would do after evictions: the evicted pods
    /// are gone, and each has a replacement, Pending (no node yet).
    fn replace_evicted_with_pending(&self) -> Vec<String> {
        let mut cluster = self.server.cluster();
        let evicted: Vec<Arc<Pod>> = cluster
            .pods
            .values()
            .filter(|pod| pod.metadata.deletion_timestamp.is_some())
            .cloned()
            .collect();
        cluster.finish_terminations();
        let mut replacements = Vec::new();
        for old in evicted {
            let mut pod = (*old).clone();
            let name = format!("{}-new", old.metadata.name.as_deref().expect("a name"));
            pod.metadata.name = Some(name.clone());
            pod.metadata.uid = Some(format!(
                "{}-new",
                old.metadata.uid.as_deref().expect("a uid")
            ));
            pod.metadata.deletion_timestamp = None;
            pod.metadata.resource_version = None;
            let spec = pod.spec.as_mut().expect("a spec");
            spec.node_name = None;
            pod.status = Some(k8s_openapi::api::core::v1::PodStatus {
                phase: Some("Pending".to_string()),
                ..Default::default()
            });
            let namespace = pod.metadata.namespace.clone().expect("a namespace");
            cluster
                .pods
                .insert((namespace.clone(), name.clone()), Arc::new(pod));
            replacements.push(format!("{namespace}/{name}"));
        }
        replacements
    }

    /// The scheduler places the Pending pod `namespace/name` on `node` and it becomes Ready.
    fn becomes_ready_on(&self, pod: &str, node: &str) {
        let (namespace, name) = pod.split_once('/').expect("namespace/name");
        let mut cluster = self.server.cluster();
        let stored = cluster
            .pods
            .get_mut(&(namespace.to_string(), name.to_string()))
            .expect("the pod exists");
        let pod = Arc::make_mut(stored);
        pod.spec.as_mut().expect("a spec").node_name = Some(node.to_string());
        pod.status = Some(k8s_openapi::api::core::v1::PodStatus {
            phase: Some("Running".to_string()),
            conditions: Some(vec![k8s_openapi::api::core::v1::PodCondition {
                type_: "Ready".to_string(),
                status: "True".to_string(),
                ..Default::default()
            }]),
            ..Default::default()
        });
    }
}

/// Three runs in a row, no PDB, pacing off: the first evicts one of web's three replicas (the
/// gate holds the other two), the second — its replacement still Pending — evicts no sibling and
/// says which pod blocks, the third — the replacement Ready on another host — evicts the next.
#[test]
fn a_workload_loses_its_next_pod_only_once_the_replacement_is_ready() {
    let lab = Lab::start("replacement-pending");
    let web = |outcome: &Outcome| -> Vec<String> {
        outcome
            .evictions_with("evicted")
            .into_iter()
            .filter(|pod| pod.starts_with("shop/web-"))
            .collect()
    };

    let first = lab.run(&[]);
    assert_eq!(first.code, 0, "{}\n{}", first.stdout, first.stderr);
    assert_eq!(web(&first).len(), 1, "one at a time: {}", first.stdout);
    assert!(
        skips(&first)
            .iter()
            .filter(|s| s.ends_with(" workload-unavailable"))
            .count()
            == 2,
        "{:?}",
        skips(&first)
    );
    let replacements = lab.replace_evicted_with_pending();
    assert_eq!(replacements.len(), 1);

    let second = lab.run(&[]);
    assert_eq!(second.code, 0, "{}\n{}", second.stdout, second.stderr);
    assert_eq!(web(&second), Vec::<String>::new(), "{}", second.stdout);
    let blocked: Vec<&Value> = second.report["skipped"]
        .as_array()
        .expect("skipped")
        .iter()
        .filter(|s| s["reason"] == "workload-unavailable")
        .collect();
    assert_eq!(
        blocked.len(),
        2,
        "both remaining replicas: {}",
        second.stdout
    );
    assert!(
        blocked.iter().all(|s| s["detail"]
            .as_str()
            .unwrap_or_default()
            .contains(&format!("({} is Pending)", replacements[0]))),
        "{blocked:?}"
    );

    lab.becomes_ready_on(&replacements[0], "worker-c");
    let third = lab.run(&[]);
    assert_eq!(third.code, 0, "{}\n{}", third.stdout, third.stderr);
    let evicted = web(&third);
    assert_eq!(evicted.len(), 1, "the next one: {}", third.stdout);
    assert!(!evicted.contains(&replacements[0]), "{evicted:?}");
}

// --- Former label keys (issue 28) --------------------------------------------------------------

const RACK: &str = "example.com/rack";

impl Lab {
    /// Node `name` as an earlier run left it under a policy that also had the runs write
    /// `example.com/rack`: the label on the node, and in our field manager's apply entry.
    fn carries_a_former_key(&self, name: &str) {
        let mut cluster = self.server.cluster();
        let old = cluster.nodes.remove(name).expect("the node exists");
        let mut node = old.as_ref().clone();
        node.metadata
            .labels
            .get_or_insert_default()
            .insert(RACK.to_string(), "r7".to_string());
        let host = node.metadata.labels.as_ref().expect("labels")[HOST_LABEL].clone();
        assert!(!host.is_empty());
        node.metadata.managed_fields = Some(vec![
            k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry {
                manager: Some(vsphere_descheduler::identity::FIELD_MANAGER.to_string()),
                operation: Some("Apply".to_string()),
                api_version: Some("v1".to_string()),
                fields_type: Some("FieldsV1".to_string()),
                fields_v1: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1(
                    serde_json::json!({"f:metadata": {"f:labels": {
                        format!("f:{HOST_LABEL}"): {},
                        format!("f:{RACK}"): {},
                    }}}),
                )),
                ..Default::default()
            },
        ]);
        cluster.load(KubeObjects {
            nodes: vec![node],
            ..KubeObjects::default()
        });
    }

    fn has_label(&self, node: &str, key: &str) -> bool {
        self.server.cluster().nodes[node]
            .metadata
            .labels
            .as_ref()
            .is_some_and(|labels| labels.contains_key(key))
    }
}

/// A key the policy no longer names goes from every node our applies left it on, though no host
/// label changes there, and the report shows each removal; the next run has nothing to do.
#[test]
fn a_former_label_key_is_removed_from_every_node_that_carries_it_and_reported() {
    let lab = Lab::start("several-violations");
    lab.carries_a_former_key("worker-c");
    lab.carries_a_former_key("worker-d");
    let outcome = lab.run(&["--dry-run"]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let removals: Vec<(String, Value, Value)> = outcome.report["labelChanges"]
        .as_array()
        .expect("labelChanges")
        .iter()
        .filter(|c| c["key"] == RACK)
        .map(|c| {
            (
                c["node"].as_str().unwrap_or_default().to_string(),
                c["old"].clone(),
                c["new"].clone(),
            )
        })
        .collect();
    assert_eq!(
        removals,
        [
            ("worker-c".to_string(), Value::from("r7"), Value::Null),
            ("worker-d".to_string(), Value::from("r7"), Value::Null),
        ]
    );
    let text = lab
        .command(&[
            "run",
            "--dry-run",
            "--policy",
            lab.policy.to_str().expect("UTF-8"),
        ])
        .output()
        .expect("the binary runs");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(&format!("worker-c  {RACK}: r7 -> (removed)")),
        "{text}"
    );

    let run = lab.run(&[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    for node in ["worker-c", "worker-d"] {
        assert!(!lab.has_label(node, RACK), "{node}");
        assert!(
            lab.has_label(node, HOST_LABEL),
            "{node} keeps its host label"
        );
    }
    let again = lab.run(&["--dry-run"]);
    assert!(
        again.report["labelChanges"]
            .as_array()
            .expect("labelChanges")
            .iter()
            .all(|c| c["key"] != RACK),
        "{}",
        again.stdout
    );
}

/// The chart's admission policy refuses the removal of a key not listed in `formerLabelKeys`:
/// the report says so with the key the policy names, however long the release's name makes the
/// server's message.
#[test]
fn an_admission_denial_reaches_the_report_with_the_key_it_names() {
    let lab = Lab::start("several-violations");
    lab.carries_a_former_key("worker-c");
    let release = "a-release-name-of-sixty-three-characters-is-as-long-as-they-get";
    let denial = format!(
        "nodes \"worker-c\" is forbidden: ValidatingAdmissionPolicy '{release}' with binding \
         '{release}' denied request: {release} may change only the node labels {HOST_LABEL}: \
         label {RACK} was removed"
    );
    lab.server.cluster().inject(Fault::action(
        Some(Method::PATCH),
        "/api/v1/nodes/worker-c",
        FaultAction::Status {
            code: 403,
            reason: "Forbidden".to_string(),
            message: denial.clone(),
            retry_after_seconds: 0,
        },
    ));
    let outcome = lab.run(&[]);
    assert_eq!(outcome.code, 1, "{}", outcome.stdout);
    let errors = outcome.errors();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("worker-c") && e.ends_with(&format!("label {RACK} was removed"))),
        "{errors:#?}"
    );
    assert!(lab.has_label("worker-c", RACK), "refused, so still there");
}

#[test]
fn every_eviction_request_says_who_asked_why_and_by_which_strategy_and_profile() {
    let lab = Lab::start("several-violations");
    let dry_run = lab.run(&["--dry-run"]);
    assert_eq!(dry_run.code, 0, "{}", dry_run.stderr);
    let run = lab.run(&[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.evictions_with("evicted").is_empty(), "{}", run.stdout);

    // What each report says of its evictions, as the annotations must repeat it.
    let expected = |outcome: &Outcome, dry_run: bool| -> Vec<(String, String, bool, Value)> {
        outcome.report["evictions"]
            .as_array()
            .expect("evictions")
            .iter()
            .map(|e| {
                let annotations = serde_json::json!({
                    "requested-by": "vsphere-descheduler",
                    "reason": format!(
                        "triggered by host-availability/{}: {}",
                        e["strategy"].as_str().expect("strategy"),
                        e["reason"].as_str().expect("reason")
                    ),
                    "vsphere-descheduler.io/strategy": e["strategy"],
                    "vsphere-descheduler.io/profile": "host-availability",
                });
                let text = |key: &str| e[key].as_str().expect(key).to_string();
                (text("namespace"), text("pod"), dry_run, annotations)
            })
            .collect()
    };
    let mut wanted = expected(&dry_run, true);
    wanted.extend(expected(&run, false));
    let cluster = lab.server.cluster();
    let received: Vec<(String, String, bool, Value)> = cluster
        .evictions
        .iter()
        .map(|e| {
            let annotations = serde_json::to_value(&e.annotations).expect("a map");
            (e.namespace.clone(), e.name.clone(), e.dry_run, annotations)
        })
        .collect();
    assert_eq!(received, wanted);
    // They describe the request; no pod carries them.
    for pod in cluster.pods.values() {
        let annotations = pod.metadata.annotations.clone().unwrap_or_default();
        assert!(
            !annotations
                .keys()
                .any(|k| k.starts_with("vsphere-descheduler.io/")),
            "{annotations:?}"
        );
    }
}

// --- A stretched cluster's sites --------------------------------------------------------------

/// The value of `key` on node `name` in the fake.
fn label_of(lab: &Lab, name: &str, key: &str) -> Option<String> {
    lab.server.cluster().nodes[name]
        .metadata
        .labels
        .as_ref()
        .and_then(|labels| labels.get(key).cloned())
}

/// The stretched-cluster story end to end, its sites from the simulator's vSAN fault domains:
/// HA left worker-b1's VM on a site A host. A run relabels its host and site (never the cloud
/// provider's zone, which it reports as stale), evicts one of web's two replicas, which keep
/// apart by site, and reports the exposure per site; `what-if --site-fails site-a` then says
/// what HA does with each of site A's node VMs by its VM/Host rule, and what pg loses.
#[test]
fn a_stretched_cluster_is_relabelled_by_site_respread_and_assessed_for_a_site_failure() {
    const SITE: &str = "vsphere-descheduler.io/site";
    const ZONE: &str = "topology.kubernetes.io/zone";
    let lab = Lab::start("stretched-cluster");

    let run = lab.run(&[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let worker_b1 = |key| label_of(&lab, "worker-b1", key);
    assert_eq!(
        worker_b1(HOST_LABEL).as_deref(),
        Some("lab-esxi-a3.go-lab.jp")
    );
    assert_eq!(worker_b1(SITE).as_deref(), Some("site-a"));
    assert_eq!(
        worker_b1(ZONE).as_deref(),
        Some("site-b"),
        "the zone is not ours"
    );
    assert_eq!(label_of(&lab, "worker-a1", SITE).as_deref(), Some("site-a"));
    assert_eq!(run.evictions_with("evicted"), ["shop/web-5d8f7c9b64-k7m2q"]);
    assert_eq!(lab.evicted_pods(), ["shop/web-5d8f7c9b64-k7m2q"]);
    let sites = &run.report["exposure"]["sites"];
    assert_eq!(sites["sites"], serde_json::json!(["site-a", "site-b"]));
    assert_eq!(sites["before"]["all"], 1, "web: both replicas on site A");
    assert_eq!(sites["after"]["all"], 0, "{sites}");
    let warnings = run.report["warnings"].to_string();
    assert!(
        warnings.contains(
            "node worker-b1: topology.kubernetes.io/zone says site-b but its VM runs in site \
             site-a now"
        ),
        "{warnings}"
    );

    let what_if = lab.what_if(&["--site-fails", "site-a"]);
    assert_eq!(what_if.code, 3, "pg is at risk: {}", what_if.stderr);
    let failover = &what_if.report["siteFailover"];
    assert_eq!(failover["otherSites"], serde_json::json!(["site-b"]));
    let fates: Vec<(String, String, bool)> = failover["vms"]
        .as_array()
        .expect("the node VMs")
        .iter()
        .map(|vm| {
            (
                vm["vm"].as_str().expect("a VM").to_string(),
                vm["fate"].as_str().expect("a fate").to_string(),
                vm["rules"][0]["holds"].as_bool().expect("its rule"),
            )
        })
        .collect();
    let restarted = |vm: &str, holds| {
        (
            vm.to_string(),
            "restarted-if-capacity-allows".to_string(),
            holds,
        )
    };
    assert_eq!(
        fates,
        [
            restarted("worker-a1", false),
            restarted("worker-a2", false),
            restarted("worker-a3", false),
            // Its should rule ties it to site B: failing over puts it back where it belongs.
            restarted("worker-b1", true),
        ]
    );
    assert_eq!(
        what_if.report["pdbs"][0],
        serde_json::json!({"pdb": "db/pg", "lost": 2, "disruptionsAllowed": 1, "breached": true})
    );
}
