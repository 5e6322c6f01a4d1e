//! `what-if` live: the binary reads the lab (the vCenter simulator and the fake Kubernetes API
//! server, loaded from `tests/fixtures/e2e/what-if-ha/`) as `run --dry-run` reads it, answers
//! for a host failure or a maintenance, and leaves everything as it was. The answer is checked
//! in its JSON report; "nothing changed" in the fake's objects and requests and in the
//! simulator's inventory observed afresh, against a real run on the same lab that does change
//! them.

#[path = "support/lab.rs"]
mod lab;
mod support;

use std::path::Path;
use std::process::Output;

use lab::Lab;
use serde_json::Value;
use support::fake_apiserver::{FakeApiServer, FakeCluster, read_objects};
use support::vcsim::{self, Vcsim};
use vsphere_descheduler::inventory::{HaConfig, Inventory};
use vsphere_descheduler::vsphere;

const STORY: &str = "what-if-ha";
const HOST_LABEL: &str = "vsphere-descheduler.io/host";
const ESXI_41: &str = "lab-wcp-esxi-41.go-lab.jp";
const ESXI_42: &str = "lab-wcp-esxi-42.go-lab.jp";
const PG_RULE: &str = "vsphere-descheduler:lab:db:StatefulSet/pg";
const STALE_RULE: &str = "vsphere-descheduler:lab:db:StatefulSet/pg-old";
const WEB: &str = "lab-ns-01/Deployment/demo-httpd";
const PG: &str = "db/StatefulSet/pg";

/// The binary's exit code and its JSON report.
struct Outcome {
    code: i32,
    report: Value,
    stdout: String,
    stderr: String,
}

impl Outcome {
    /// The report's workload entry of that name.
    fn workload(&self, name: &str) -> &Value {
        self.report["workloads"]
            .as_array()
            .expect("workloads")
            .iter()
            .find(|w| w["workload"] == name)
            .unwrap_or_else(|| panic!("no workload {name} in {}", self.stdout))
    }

    /// The names of the workloads the scenario touches, in the report's order.
    fn workload_names(&self) -> Vec<&str> {
        self.report["workloads"]
            .as_array()
            .expect("workloads")
            .iter()
            .map(|w| w["workload"].as_str().expect("a name"))
            .collect()
    }
}

impl Lab {
    /// The what-if story, its inventory edited by `edit` before the simulator is built from it.
    fn what_if_story(edit: impl FnOnce(&mut Inventory)) -> Lab {
        let folder = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/e2e")
            .join(STORY);
        let mut objects = read_objects(&folder.join("snapshot.yaml"));
        let mut inventory = objects
            .inventory
            .take()
            .expect("the snapshot has an inventory");
        edit(&mut inventory);
        let simulator = Vcsim::start(&inventory);
        let server = FakeApiServer::start(FakeCluster::new(objects));
        let dir = tempfile::tempdir().expect("a temporary directory");
        server.write_kubeconfig(&dir.path().join("kubeconfig"));
        Lab {
            simulator,
            server,
            policy: folder.join("policy.yaml"),
            dir,
        }
    }

    /// `--output json what-if --policy <story policy>` plus `args`, live.
    fn what_if(&self, args: &[&str]) -> Outcome {
        let policy = self.policy.display().to_string();
        let mut all = vec!["--output", "json", "what-if", "--policy", policy.as_str()];
        all.extend_from_slice(args);
        outcome(self.command(&all).output().expect("the binary runs"))
    }

    /// The simulator's inventory, observed afresh.
    fn observe_vcenter(&self) -> Inventory {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async {
            let mut client = vsphere::VcenterClient::connect(&self.simulator.connection_config())
                .await
                .expect("connect to the simulator");
            let inventory = client.observe(&[], &[]).await.expect("observe");
            client.logout().await;
            inventory
        })
    }

    /// Every object the fake holds, leases and events included, as JSON for comparison.
    fn kubernetes_state(&self) -> Value {
        let cluster = self.server.cluster();
        serde_json::json!({
            "nodes": cluster.nodes.values().map(|n| n.as_ref()).collect::<Vec<_>>(),
            "pods": cluster.pods.values().map(|p| p.as_ref()).collect::<Vec<_>>(),
            "pdbs": cluster.pdbs.values().map(|p| p.as_ref()).collect::<Vec<_>>(),
            "namespaces": cluster.namespaces.values().map(|n| n.as_ref()).collect::<Vec<_>>(),
            "leases": cluster.leases.values().map(|l| l.as_ref()).collect::<Vec<_>>(),
            "events": cluster.events.values().map(|e| e.as_ref()).collect::<Vec<_>>(),
        })
    }

    fn node_label(&self, node: &str) -> Option<String> {
        self.server.cluster().nodes[node]
            .metadata
            .labels
            .as_ref()
            .and_then(|labels| labels.get(HOST_LABEL).cloned())
    }

    /// The names of the DRS rules in the simulator, sorted.
    fn rule_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .observe_vcenter()
            .clusters
            .iter()
            .flat_map(|c| &c.rules)
            .map(|r| r.name.clone())
            .collect();
        names.sort();
        names
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
    Outcome {
        code: output.status.code().expect("exited, not killed"),
        report: serde_json::from_str(&stdout).unwrap_or(Value::Null),
        stdout,
        stderr,
    }
}

/// The story's lab as written: HA on, capacity reserved for one host failure, rules respected.
fn lab() -> Lab {
    Lab::what_if_story(|_| {})
}

#[test]
fn a_live_host_failure_loses_both_web_replicas_and_ha_restarts_away_from_the_rule_s_host() {
    let lab = lab();
    let outcome = lab.what_if(&["--host-fails", "esxi-41"]);
    assert_eq!(outcome.code, 3, "{}\n{}", outcome.stdout, outcome.stderr);
    let report = &outcome.report;
    assert_eq!(report["kind"], "WhatIf");
    assert_eq!(report["mode"], "dry-run");
    assert_eq!(report["exitCode"], 3);
    assert_eq!(report["atRisk"], 1);
    assert_eq!(
        report["errors"],
        serde_json::json!([]),
        "{}",
        outcome.stdout
    );
    assert_eq!(
        report["scenario"]["hostsFail"],
        serde_json::json!([ESXI_41])
    );
    assert_eq!(report["target"]["vCenter"], lab.simulator.url.as_str());
    let api_server = report["target"]["apiServer"].as_str().expect("apiServer");
    assert_eq!(
        api_server.trim_end_matches('/'),
        lab.server.url.trim_end_matches('/')
    );

    // worker-b is labelled esxi-42, but its VM is on esxi-41: both web replicas go with it.
    assert_eq!(
        report["hosts"][0]["nodes"],
        serde_json::json!(["worker-a", "worker-b"])
    );
    let web = outcome.workload(WEB);
    assert_eq!((&web["lost"], &web["pods"]), (&2.into(), &2.into()));
    assert_eq!(
        (&web["class"], &web["exact"]),
        (&"all".into(), &true.into())
    );
    let pg = outcome.workload(PG);
    assert_eq!((&pg["lost"], &pg["pods"]), (&1.into(), &2.into()));
    assert_eq!(pg["class"], "tolerated");

    // HA as the simulator holds it: capacity for one failure, rules respected.
    let ha = &report["ha"][0];
    assert_eq!(ha["cluster"], "wcp-cluster-41");
    assert_eq!(ha["failedHosts"], serde_json::json!([ESXI_41]));
    assert_eq!(ha["nodeVms"], serde_json::json!(["worker-a", "worker-b"]));
    assert_eq!(ha["restart"], "capacity-reserved", "{ha}");
    assert_eq!(ha["respectsAntiAffinityRules"], true);
    assert_eq!(
        ha["rules"],
        serde_json::json!([{
            "rule": PG_RULE,
            "vms": ["worker-a"],
            "otherHosts": [ESXI_42],
            "held": true,
        }]),
        "only enabled rules count: {STALE_RULE} is disabled"
    );
}

#[test]
fn with_ha_disabled_the_failed_host_s_vms_stay_down_and_the_workloads_lose_the_same() {
    let with_ha = lab().what_if(&["--host-fails", "esxi-41"]);
    let lab = Lab::what_if_story(|inventory| {
        let ha = inventory.clusters[0]
            .ha
            .as_mut()
            .expect("the story sets HA");
        *ha = HaConfig {
            enabled: false,
            ..ha.clone()
        };
    });
    let outcome = lab.what_if(&["--host-fails", "esxi-41"]);
    assert_eq!(outcome.code, 3, "{}\n{}", outcome.stdout, outcome.stderr);
    let ha = &outcome.report["ha"][0];
    assert_eq!(ha["restart"], "ha-disabled", "{ha}");
    assert!(
        ha["detail"]
            .as_str()
            .is_some_and(|d| d.contains("HA is off")),
        "{ha}"
    );
    assert_eq!(ha["nodeVms"], serde_json::json!(["worker-a", "worker-b"]));
    // HA decides what happens to the VMs, not what the workloads lose.
    assert_eq!(outcome.report["workloads"], with_ha.report["workloads"]);
    assert_eq!(with_ha.report["ha"][0]["restart"], "capacity-reserved");
}

#[test]
fn a_live_maintenance_keeps_pg_apart_by_its_rule_while_web_may_end_on_one_host() {
    let lab = lab();
    let outcome = lab.what_if(&["--maintenance", ESXI_41]);
    assert_eq!(outcome.code, 3, "{}\n{}", outcome.stdout, outcome.stderr);
    let report = &outcome.report;
    assert_eq!(report["mode"], "dry-run");
    assert_eq!(report["scenario"]["maintenance"], ESXI_41);
    assert_eq!(outcome.workload_names(), [WEB, PG], "worst first");

    // No rule for web: DRS may put both moving VMs on one host.
    let web = outcome.workload(WEB);
    assert_eq!(web["moving"], 2);
    assert_eq!(
        web["busiestHost"],
        serde_json::json!({"atLeast": 1, "atMost": 2})
    );
    assert_eq!(
        (&web["class"], &web["exact"]),
        (&"all".into(), &false.into())
    );
    // pg's rule still holds with two hosts left: worker-a cannot join worker-c.
    let pg = outcome.workload(PG);
    assert_eq!(pg["keptApartBy"], PG_RULE);
    assert_eq!(
        pg["busiestHost"],
        serde_json::json!({"atLeast": 1, "atMost": 1})
    );
    assert_eq!(
        (&pg["class"], &pg["exact"]),
        (&"tolerated".into(), &true.into())
    );

    assert_eq!(
        report["drsRules"],
        serde_json::json!([{
            "rule": PG_RULE,
            "vms": 2,
            "moving": ["worker-a"],
            "hostsLeft": 2,
            "satisfiable": true,
        }]),
        "enabled rules of ours only"
    );
    let capacity = &report["capacity"];
    assert_eq!(
        (&capacity["usableHostsNow"], &capacity["usableHostsAfter"]),
        (&3.into(), &2.into())
    );
    assert_eq!(
        capacity["movingVms"],
        serde_json::json!(["worker-a", "worker-b"])
    );
    assert_eq!(capacity["drsFullyAutomated"], true, "{capacity}");
    assert_eq!(capacity["evacuable"], true);

    // esxi-42 holds worker-c only: pg moves, kept apart, and nothing is at risk.
    let tolerated = lab.what_if(&["--maintenance", "esxi-42"]);
    assert_eq!(tolerated.code, 0, "{}", tolerated.stdout);
    assert_eq!(tolerated.workload_names(), [PG]);
    assert_eq!(tolerated.report["atRisk"], 0);
}

#[test]
fn what_if_live_changes_nothing_in_kubernetes_or_vcenter_where_a_run_changes_both() {
    let lab = lab();
    let kubernetes = lab.kubernetes_state();
    let vcenter = lab.observe_vcenter();
    let calls_before = lab.simulator.calls();

    // Each question's exit code as the tests above find it: 3 where a workload is at risk.
    for (args, code) in [
        (["--host-fails", "esxi-41"], 3),
        (["--host-fails", "esxi-43"], 0),
        (["--maintenance", "esxi-41"], 3),
        (["--maintenance", "esxi-42"], 0),
    ] {
        let outcome = lab.what_if(&args);
        assert_eq!(
            outcome.code, code,
            "{args:?}: {}\n{}",
            outcome.stdout, outcome.stderr
        );
        assert_eq!(outcome.report["kind"], "WhatIf", "{args:?}");
    }

    assert_eq!(lab.kubernetes_state(), kubernetes, "Kubernetes changed");
    let cluster = lab.server.cluster();
    let writes: Vec<String> = cluster
        .requests
        .iter()
        .filter(|r| r.method != "GET")
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(writes.is_empty(), "what-if wrote: {writes:?}");
    assert!(cluster.leases.is_empty(), "what-if took a lock");
    assert_eq!(cluster.count("PATCH", "/nodes/"), 0);
    assert_eq!(cluster.count("POST", "/eviction"), 0);
    drop(cluster);
    assert_eq!(lab.observe_vcenter(), vcenter, "vCenter changed");
    let tasks: Vec<(String, u64)> = lab
        .simulator
        .calls()
        .into_iter()
        .filter(|(method, count)| {
            method.ends_with("_Task") && calls_before.get(method) != Some(count)
        })
        .collect();
    assert!(tasks.is_empty(), "what-if started vCenter tasks: {tasks:?}");

    // The control: a run on the same lab relabels worker-b, evicts a replica and deletes the
    // stale rule, and the same comparisons see it.
    let policy = lab.policy.display().to_string();
    let run = outcome(
        lab.command(&["--output", "json", "run", "--policy", &policy])
            .output()
            .expect("the binary runs"),
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(lab.node_label("worker-b").as_deref(), Some(ESXI_41));
    assert_ne!(
        lab.kubernetes_state(),
        kubernetes,
        "a run changes Kubernetes"
    );
    assert_ne!(lab.observe_vcenter(), vcenter, "a run changes vCenter");
    assert!(!lab.rule_names().contains(&STALE_RULE.to_string()));
    assert!(lab.server.cluster().count("POST", "/eviction") > 0);
}

#[test]
fn with_vcenter_unreachable_what_if_exits_1_and_its_json_report_says_so() {
    let lab = lab();
    let outcome = lab.what_if(&[
        "--host-fails",
        "esxi-41",
        "--vsphere-server",
        "https://127.0.0.1:1/sdk",
        "--request-timeout",
        "2",
    ]);
    assert_eq!(outcome.code, 1, "{}\n{}", outcome.stdout, outcome.stderr);
    let report = &outcome.report;
    assert_eq!(
        report["kind"], "WhatIf",
        "one JSON report: {}",
        outcome.stdout
    );
    assert_eq!(report["mode"], "dry-run");
    assert_eq!(report["exitCode"], 1);
    let errors: Vec<&str> = report["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("vCenter could not be observed")),
        "{errors:?}"
    );
    assert!(report.get("workloads").is_none(), "no answer: {report}");
    assert_eq!(report["target"]["vCenter"], "https://127.0.0.1:1/sdk");
    assert_eq!(lab.node_label("worker-b").as_deref(), Some(ESXI_42));
    assert!(
        lab.server
            .cluster()
            .requests
            .iter()
            .all(|r| r.method == "GET")
    );
    // The unreachable server was asked, not the simulator (whose URL is in the environment).
    assert_eq!(lab.simulator.calls().values().sum::<u64>(), 0);
}
