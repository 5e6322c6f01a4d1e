//! `check` end to end: the binary against the lab (the fake API server, with the chart's RBAC
//! grants and admission policy where a test installs them, and the vCenter simulator its
//! settings name), and the real Pushgateway. Each test asserts the exit code, the items that
//! name what is missing, and that nothing was written.

#[path = "support/lab.rs"]
mod lab;
mod support;

use std::sync::Arc;

use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use lab::Lab;
use serde_json::Value;
use support::closed_port::ClosedPort;
use support::fake_apiserver::{
    CHART_NAMESPACE, CHART_RBAC, CHART_SERVICE_ACCOUNT, Fault, MetricsApi, NodeLabelPolicy, Rbac,
    RequestRecord,
};
use support::pushgateway::Pushgateway;

const LOCK_NAMESPACE: &str = "kube-system";
/// The chart's objects' name for release `vsd` (its ServiceAccount, roles, admission policy).
const FULLNAME: &str = "vsd-vsphere-descheduler";
const HOST_LABEL: &str = "vsphere-descheduler.io/host";

/// The binary's verdict and its JSON report.
struct Checked {
    code: i32,
    report: Value,
    stdout: String,
    stderr: String,
}

impl Checked {
    /// Every item of every section.
    fn items(&self) -> Vec<&Value> {
        self.report["sections"]
            .as_array()
            .expect("sections")
            .iter()
            .flat_map(|section| section["items"].as_array().expect("items"))
            .collect()
    }

    /// The items of one backend's section (`kubernetes`, `vcenter`, `pushgateway`).
    fn items_in(&self, backend: &str) -> Vec<&Value> {
        self.report["sections"]
            .as_array()
            .expect("sections")
            .iter()
            .filter(|section| section["backend"] == backend)
            .flat_map(|section| section["items"].as_array().expect("items"))
            .collect()
    }

    /// The items of one kind (`check`).
    fn items_of(&self, check: &str) -> Vec<&Value> {
        self.items()
            .into_iter()
            .filter(|item| item["check"] == check)
            .collect()
    }

    /// The one item of a kind.
    fn item(&self, check: &str) -> &Value {
        let found = self.items_of(check);
        assert_eq!(found.len(), 1, "one {check} item in {}", self.stdout);
        found[0]
    }

    /// The permission item of a call (`resource` with its subresource).
    fn permission(&self, group: &str, resource: &str, verb: &str) -> &Value {
        self.items_of("permission")
            .into_iter()
            .find(|item| {
                item["group"] == group && item["resource"] == resource && item["verb"] == verb
            })
            .unwrap_or_else(|| panic!("no item for {verb} {resource}: {}", self.stdout))
    }

    /// The items whose status is `status`, as `check: detail`.
    fn with_status(&self, status: &str) -> Vec<String> {
        self.items()
            .into_iter()
            .filter(|item| item["status"] == status)
            .map(|item| format!("{}: {}", item["check"], item["detail"]))
            .collect()
    }
}

impl Lab {
    /// A lab whose API server grants exactly what the chart grants its ServiceAccount (the
    /// fake's default) and enforces the chart's admission policy for the story policy's host
    /// label.
    fn installed(story: &str) -> Lab {
        let lab = Lab::start(story);
        lab.server.cluster().node_admission = Some(NodeLabelPolicy::chart(FULLNAME, &[HOST_LABEL]));
        lab
    }

    /// `--output json check --policy <story policy> --lock-namespace kube-system` plus `args`.
    fn check(&self, args: &[&str]) -> Checked {
        let policy = self.policy.display().to_string();
        let mut all = vec![
            "--output",
            "json",
            "check",
            "--policy",
            policy.as_str(),
            "--lock-namespace",
            LOCK_NAMESPACE,
        ];
        all.extend_from_slice(args);
        let output = self.command(&all).output().expect("the binary runs");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        Checked {
            code: output.status.code().unwrap_or(-1),
            report: serde_json::from_str(&stdout).unwrap_or(Value::Null),
            stdout,
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// What the fake holds that a write could change, to compare before and after.
    fn state(&self) -> String {
        let cluster = self.server.cluster();
        format!(
            "{:?}",
            (
                &cluster.nodes,
                &cluster.pods,
                &cluster.pdbs,
                &cluster.leases,
                &cluster.events,
                &cluster.priority_classes,
                cluster.label_owners("worker-a"),
            )
        )
    }

    fn requests(&self) -> Vec<RequestRecord> {
        self.server.cluster().requests.clone()
    }

    /// Writes `text` as a policy file in the lab's directory and points the lab at it.
    fn with_policy(mut self, text: &str) -> Lab {
        let path = self.dir.path().join("check-policy.yaml");
        std::fs::write(&path, text).expect("write the policy");
        self.policy = path;
        self
    }
}

/// What the chart grants its ServiceAccount `kube-system/vsd-vsphere-descheduler`.
fn chart_grants() -> Rbac {
    Rbac::chart()
}

/// The lines of the call list a policy without actual usage makes.
fn listed_calls_without_metrics() -> usize {
    vsphere_descheduler::kube::api_calls()
        .iter()
        .filter(|call| !call.needs_metrics())
        .count()
}

#[test]
fn an_install_with_everything_in_place_passes_with_every_item_ok() {
    let lab = Lab::installed("drs-moved-worker");
    let pushgateway = Pushgateway::start();
    let before = lab.state();
    let checked = lab.check(&["--metrics-push-url", &pushgateway.url()]);
    assert_eq!(checked.code, 0, "{}\n{}", checked.stdout, checked.stderr);
    let statuses: Vec<&Value> = ["kubernetes", "pushgateway"]
        .iter()
        .flat_map(|backend| checked.items_in(backend))
        .map(|item| &item["status"])
        .collect();
    assert!(
        statuses.iter().all(|status| *status == "ok"),
        "{}",
        checked.stdout
    );
    // The simulator's administrator holds every privilege; its cluster runs DRS, not HA.
    let vcenter = checked.items_in("vcenter");
    assert!(
        vcenter
            .iter()
            .filter(|item| item["check"] != "clusterSetting")
            .all(|item| item["status"] == "ok"),
        "{}",
        checked.stdout
    );
    assert!(
        vcenter
            .iter()
            .any(|item| item["check"] == "vcenterPrivilege"
                && item["privilege"] == "Host.Inventory.EditCluster"),
        "{}",
        checked.stdout
    );
    assert_eq!(
        checked.items_of("permission").len(),
        listed_calls_without_metrics(),
        "one item per line of the call list"
    );
    // RBAC's words: the binding that grants it.
    assert_eq!(
        checked.permission("", "pods/eviction", "create")["detail"],
        format!(
            "RBAC: allowed by ClusterRoleBinding \"{FULLNAME}\" of ClusterRole \"{FULLNAME}\" to \
             ServiceAccount \"{FULLNAME}/{LOCK_NAMESPACE}\""
        )
    );
    let lease = checked.permission("coordination.k8s.io", "leases", "get");
    assert_eq!(lease["namespace"], LOCK_NAMESPACE);
    assert_eq!(lease["name"], "vsphere-descheduler");
    // The chart's admission policy refuses a label outside the policy's keys: confined.
    let confinement = checked.item("labelConfinement");
    assert!(
        confinement["detail"]
            .as_str()
            .expect("detail")
            .contains(&format!("ValidatingAdmissionPolicy '{FULLNAME}'")),
        "{confinement}"
    );
    assert_eq!(checked.item("pushgatewayReady")["detail"], "HTTP 200: OK");
    assert_eq!(checked.report["summary"]["missing"], 0);

    // Read-only: the same state, and no request that could write but dry runs and reviews.
    assert_eq!(lab.state(), before);
    for request in lab.requests() {
        match request.method.as_str() {
            "GET" => {}
            "POST" => assert_eq!(
                request.path,
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
            ),
            "PATCH" => assert!(request.query.contains("dryRun=All"), "{request:?}"),
            _ => panic!("a request that writes: {request:?}"),
        }
    }
    assert!(pushgateway.pushed_series().is_empty(), "nothing pushed");
}

#[test]
fn a_missing_rbac_line_fails_the_check_and_names_the_rule_that_grants_it() {
    let lab = Lab::installed("drs-moved-worker");
    lab.server.cluster().rbac = chart_grants()
        .without("", "pods/eviction", "create")
        .without("coordination.k8s.io", "leases", "get");
    let checked = lab.check(&[]);
    assert_eq!(checked.code, 1, "{}", checked.stdout);
    let eviction = checked.permission("", "pods/eviction", "create");
    assert_eq!(eviction["status"], "missing");
    // RBAC has no opinion on what it does not grant: the review says only "not allowed".
    assert_eq!(eviction["detail"], "not allowed");
    let fix = eviction["fix"].as_str().expect("a fix");
    assert!(
        fix.contains(
            "{apiGroups: [\"\"], resources: [\"pods/eviction\"], verbs: [\"create\"]} to a \
             ClusterRole"
        ),
        "{fix}"
    );
    let lease = checked.permission("coordination.k8s.io", "leases", "get");
    let fix = lease["fix"].as_str().expect("a fix");
    assert!(
        fix.contains("resourceNames: [\"vsphere-descheduler\"]")
            && fix.contains(&format!("a Role in namespace {LOCK_NAMESPACE}")),
        "{fix}"
    );
    assert_eq!(
        checked.with_status("missing").len(),
        2,
        "only those two: {}",
        checked.stdout
    );
}

/// The grant the code needs most often forgotten when a call is added: the chart's rendered
/// RBAC as a chart without its Events rule would render it. The fake's reviews answer from those
/// grants, as a real API server's from the installed chart.
#[test]
fn a_chart_whose_rendered_rbac_lacks_a_rule_the_code_needs_fails_the_check_naming_it() {
    let events_rule =
        "- apiGroups:\n  - events.k8s.io\n  resources:\n  - events\n  verbs:\n  - create\n";
    assert!(CHART_RBAC.contains(events_rule), "the chart grants Events");
    let without_events = CHART_RBAC.replace(events_rule, "");
    let lab = Lab::installed("drs-moved-worker");
    lab.server.cluster().rbac =
        Rbac::rendered(&without_events, CHART_NAMESPACE, CHART_SERVICE_ACCOUNT);
    let checked = lab.check(&[]);
    assert_eq!(checked.code, 1, "{}", checked.stdout);
    let events = checked.permission("events.k8s.io", "events", "create");
    assert_eq!(events["status"], "missing");
    let fix = events["fix"].as_str().expect("a fix");
    assert!(
        fix.contains(
            "{apiGroups: [\"events.k8s.io\"], resources: [\"events\"], verbs: [\"create\"]} \
             to a ClusterRole"
        ),
        "{fix}"
    );
    assert_eq!(
        checked.with_status("missing").len(),
        1,
        "only that one: {}",
        checked.stdout
    );
}

#[test]
fn without_patch_on_nodes_the_label_write_is_not_tried() {
    let lab = Lab::installed("drs-moved-worker");
    lab.server.cluster().rbac = chart_grants().without("", "nodes", "patch");
    let checked = lab.check(&[]);
    assert_eq!(checked.code, 1, "{}", checked.stdout);
    assert_eq!(
        checked.permission("", "nodes", "patch")["status"],
        "missing"
    );
    assert_eq!(checked.item("labelWrite")["status"], "not-checked");
    assert_eq!(checked.item("labelConfinement")["status"], "not-checked");
    assert!(
        lab.requests()
            .iter()
            .all(|request| request.method != "PATCH"),
        "no write was tried"
    );
}

#[test]
fn an_admission_policy_refusing_the_label_write_fails_the_check_quoting_its_denial() {
    let lab = Lab::installed("drs-moved-worker");
    // The chart was given a policy with another host key than the one checked.
    lab.server.cluster().node_admission =
        Some(NodeLabelPolicy::chart(FULLNAME, &["example.com/esxi-host"]));
    let before = lab.state();
    let checked = lab.check(&[]);
    assert_eq!(checked.code, 1, "{}", checked.stdout);
    let write = checked.item("labelWrite");
    assert_eq!(write["status"], "missing");
    assert_eq!(write["node"], "worker-a");
    assert_eq!(
        write["detail"],
        format!(
            "nodes \"worker-a\" is forbidden: ValidatingAdmissionPolicy '{FULLNAME}' with \
             binding '{FULLNAME}' denied request: vsphere-descheduler may change only the node \
             labels example.com/esxi-host: label {HOST_LABEL} was changed"
        )
    );
    // Both values that let a run through: the keys it sets, and the former keys it removes.
    let fix = write["fix"].as_str().expect("a fix");
    for value in ["vsphere.labels", "admissionPolicy.formerLabelKeys"] {
        assert!(fix.contains(value), "{value} in {write}");
    }
    assert_eq!(checked.item("labelConfinement")["status"], "not-checked");
    assert_eq!(lab.state(), before);
}

#[test]
fn writes_no_policy_confines_are_a_warning_not_a_failure() {
    let lab = Lab::installed("drs-moved-worker");
    lab.server.cluster().node_admission = None;
    let checked = lab.check(&[]);
    assert_eq!(checked.code, 0, "{}", checked.stdout);
    let confinement = checked.item("labelConfinement");
    assert_eq!(confinement["status"], "warning");
    assert!(
        confinement["fix"]
            .as_str()
            .expect("a fix")
            .contains("admissionPolicy.enabled"),
        "{confinement}"
    );
    let warnings = checked
        .items_in("kubernetes")
        .into_iter()
        .filter(|item| item["status"] == "warning")
        .count();
    assert_eq!(warnings, 1);
}

#[test]
fn a_node_gone_during_the_label_write_leaves_it_unchecked() {
    let lab = Lab::installed("drs-moved-worker");
    // An apply naming the uid of a node that no longer exists: 409 naming no field.
    lab.server
        .cluster()
        .inject(Fault::status(Some(axum::http::Method::PATCH), "/api/v1/nodes/", 409).times(1));
    let checked = lab.check(&[]);
    let write = checked.item("labelWrite");
    assert_eq!(write["status"], "not-checked", "{write}");
    assert!(
        write["detail"]
            .as_str()
            .expect("detail")
            .contains("run check again"),
        "{write}"
    );
}

#[test]
fn a_policy_reading_actual_usage_fails_the_check_without_the_metrics_api() {
    let lab = Lab::installed("low-node-utilization-metrics");
    lab.server.cluster().metrics_api = MetricsApi::Absent;
    let checked = lab.check(&[]);
    assert_eq!(checked.code, 1, "{}", checked.stdout);
    let metrics = checked.item("metricsApi");
    assert_eq!(metrics["status"], "missing");
    assert!(
        metrics["fix"]
            .as_str()
            .expect("a fix")
            .contains("install metrics-server"),
        "{metrics}"
    );
    // The metrics lines of the call list are asked about for this policy.
    assert_eq!(
        checked.permission("metrics.k8s.io", "nodes", "list")["status"],
        "ok"
    );

    lab.server.cluster().metrics_api = MetricsApi::Serving;
    let checked = lab.check(&[]);
    assert_eq!(checked.code, 0, "{}", checked.stdout);
    assert_eq!(checked.item("metricsApi")["status"], "ok");
}

#[test]
fn a_policy_without_actual_usage_neither_needs_nor_asks_about_the_metrics_api() {
    let lab = Lab::installed("drs-moved-worker");
    let checked = lab.check(&[]);
    assert!(
        checked.items_of("metricsApi").is_empty(),
        "{}",
        checked.stdout
    );
    assert!(
        lab.requests()
            .iter()
            .all(|request| !request.path.contains("metrics.k8s.io")),
        "metrics-server was not asked"
    );
}

#[test]
fn a_priority_class_the_policy_names_must_exist() {
    let lab = Lab::installed("drs-moved-worker").with_policy(
        "apiVersion: vsphere-descheduler.io/v1alpha1
kind: DeschedulerPolicy
clusterName: lab
profiles:
- name: batch
  pluginConfig:
  - name: DefaultEvictor
    args:
      priorityThreshold:
        name: batch-low
  plugins:
    deschedule:
      enabled: [RemovePodsViolatingInterPodAntiAffinity]
",
    );
    let checked = lab.check(&[]);
    assert_eq!(checked.code, 1, "{}\n{}", checked.stdout, checked.stderr);
    let class = checked.item("priorityClass");
    assert_eq!(class["status"], "missing");
    assert_eq!(class["name"], "batch-low");
    assert_eq!(class["profile"], "batch");
    assert!(
        class["fix"]
            .as_str()
            .expect("a fix")
            .starts_with("create PriorityClass batch-low"),
        "{class}"
    );

    lab.server.cluster().priority_classes.insert(
        "batch-low".to_string(),
        Arc::new(PriorityClass {
            metadata: ObjectMeta {
                name: Some("batch-low".to_string()),
                ..ObjectMeta::default()
            },
            value: 1000,
            ..PriorityClass::default()
        }),
    );
    let checked = lab.check(&[]);
    assert_eq!(checked.code, 0, "{}", checked.stdout);
    assert_eq!(checked.item("priorityClass")["status"], "ok");
}

#[test]
fn a_pushgateway_that_is_down_fails_the_check_and_is_named() {
    let lab = Lab::installed("drs-moved-worker");
    // Down: its port is held, never listening, so nothing else can answer there either.
    let closed = ClosedPort::bind();
    let url = format!("http://{}", closed.address());
    let checked = lab.check(&["--metrics-push-url", &url]);
    assert_eq!(checked.code, 1, "{}", checked.stdout);
    let ready = checked.item("pushgatewayReady");
    assert_eq!(ready["status"], "missing");
    assert_eq!(ready["url"], format!("{url}/"));
    assert!(
        ready["detail"]
            .as_str()
            .expect("detail")
            .starts_with("cannot reach Pushgateway 127.0.0.1:"),
        "{ready}"
    );
    assert!(
        ready["fix"]
            .as_str()
            .expect("a fix")
            .contains("--metrics-push-url"),
        "{ready}"
    );
    // The rest is in place: only the Pushgateway is missing.
    assert_eq!(
        checked.with_status("missing").len(),
        1,
        "{}",
        checked.stdout
    );
}

#[test]
fn refused_access_reviews_are_one_missing_item_and_leave_the_permissions_unchecked() {
    let lab = Lab::installed("drs-moved-worker");
    lab.server.cluster().rbac =
        chart_grants().without("authorization.k8s.io", "selfsubjectaccessreviews", "create");
    let checked = lab.check(&[]);
    assert_eq!(checked.code, 1, "{}", checked.stdout);
    let review = checked.permission("authorization.k8s.io", "selfsubjectaccessreviews", "create");
    assert_eq!(review["status"], "missing");
    assert!(
        review["fix"]
            .as_str()
            .expect("a fix")
            .contains("system:basic-user"),
        "{review}"
    );
    let unchecked = checked
        .items_of("permission")
        .into_iter()
        .filter(|item| item["status"] == "not-checked")
        .count();
    assert_eq!(unchecked, listed_calls_without_metrics() - 1);
}

#[test]
fn the_json_report_is_sections_of_typed_items_with_a_summary() {
    let lab = Lab::installed("drs-moved-worker");
    let checked = lab.check(&[]);
    let report = &checked.report;
    assert_eq!(report["apiVersion"], "vsphere-descheduler.io/v1alpha1");
    assert_eq!(report["kind"], "CheckReport");
    assert_eq!(report["exitCode"], 0);
    let sections = report["sections"].as_array().expect("sections");
    assert_eq!(sections.len(), 2, "no Pushgateway configured");
    assert_eq!(sections[0]["backend"], "kubernetes");
    assert_eq!(sections[1]["backend"], "vcenter");
    assert!(
        sections[0]["target"]
            .as_str()
            .expect("target")
            .starts_with("http://127.0.0.1:"),
        "{}",
        sections[0]
    );
    let item = checked.permission("", "nodes", "list");
    let keys: Vec<&str> = item
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys.iter()
            .copied()
            .collect::<std::collections::BTreeSet<_>>(),
        [
            "check",
            "group",
            "resource",
            "verb",
            "namespace",
            "name",
            "status",
            "detail",
            "fix"
        ]
        .into_iter()
        .collect()
    );
    let write = checked.item("labelWrite");
    assert_eq!(
        write["labels"],
        serde_json::json!({HOST_LABEL: "vsphere-descheduler-check"})
    );
    let summary = &report["summary"];
    let counted: u64 = ["ok", "missing", "warnings", "notChecked"]
        .iter()
        .map(|key| summary[key].as_u64().expect("a count"))
        .sum();
    assert_eq!(counted, checked.items().len() as u64);
}

#[test]
fn the_text_report_is_a_table_per_section_with_each_fix_under_its_item() {
    let lab = Lab::installed("drs-moved-worker");
    lab.server.cluster().rbac = chart_grants().without("", "pods/eviction", "create");
    let policy = lab.policy.display().to_string();
    let output = lab
        .command(&[
            "check",
            "--policy",
            &policy,
            "--lock-namespace",
            LOCK_NAMESPACE,
        ])
        .output()
        .expect("the binary runs");
    assert_eq!(output.status.code(), Some(1));
    let text = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("kubernetes: http://127.0.0.1:"),
        "{text}"
    );
    assert!(lines[1].starts_with("  STATUS       CHECK"), "{text}");
    let missing = lines
        .iter()
        .position(|line| line.starts_with("  missing      create pods/eviction (cluster-wide)"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        lines[missing + 1].starts_with("               fix: add the rule"),
        "{text}"
    );
    assert!(
        text.ends_with("exit code 1\n") && text.contains("1 missing"),
        "{text}"
    );
}

#[test]
fn an_invalid_policy_is_a_usage_error() {
    let lab = Lab::installed("drs-moved-worker").with_policy(
        "apiVersion: vsphere-descheduler.io/v1alpha1\nkind: DeschedulerPolicy\nprofilez: []\n",
    );
    let checked = lab.check(&[]);
    assert_eq!(checked.code, 2, "{}", checked.stderr);
    assert!(checked.stderr.contains("invalid"), "{}", checked.stderr);
    assert!(lab.requests().is_empty(), "nothing was asked");
}

#[test]
fn check_takes_every_flag_of_run() {
    let lab = Lab::installed("drs-moved-worker");
    let checked = lab.check(&[
        "--dry-run",
        "--deadline",
        "100s",
        "--lock-duration",
        "60s",
        "--cluster-name",
        "lab",
        "--request-timeout",
        "20",
    ]);
    assert_eq!(checked.code, 0, "{}\n{}", checked.stdout, checked.stderr);
    // Still read-only, --dry-run or not.
    assert!(
        lab.requests()
            .iter()
            .all(|request| request.method != "PATCH" || request.query.contains("dryRun=All"))
    );
}

#[test]
fn an_api_server_that_cannot_be_reached_is_one_missing_item() {
    let lab = Lab::installed("drs-moved-worker");
    let kubeconfig = lab.dir.path().join("unreachable-kubeconfig");
    // A port nothing listens on, held until the test ends so that nothing else can.
    let closed = ClosedPort::bind();
    let port = closed.port();
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: gone\n  cluster:\n    server: \
             http://127.0.0.1:{port}\nusers:\n- name: u\n  user: {{}}\ncontexts:\n- name: gone\n  \
             context:\n    cluster: gone\n    user: u\ncurrent-context: gone\n"
        ),
    )
    .expect("write the kubeconfig");
    let checked = lab.check(&["--kubeconfig", kubeconfig.to_str().expect("UTF-8")]);
    assert_eq!(checked.code, 1, "{}", checked.stdout);
    let items = checked.items_in("kubernetes");
    assert_eq!(items.len(), 1, "{}", checked.stdout);
    assert_eq!(items[0]["check"], "apiServer");
    assert_eq!(items[0]["status"], "missing");
    assert!(
        items[0]["detail"]
            .as_str()
            .expect("detail")
            .starts_with("failed to ask the API server whether"),
        "{}",
        items[0]
    );
    assert_eq!(
        checked.report["sections"][0]["target"],
        format!("http://127.0.0.1:{port}/ (context gone)")
    );
}

/// A vCenter account set up as docs/vcenter-role.md says, but without the one write privilege:
/// `check` fails and names that privilege, the cluster, and the fix; for dry runs (issue 39)
/// the privilege is missing for going live, with exit code 3, which the chart's hook of a
/// dry-run install accepts.
#[test]
fn a_vcenter_account_without_the_write_privilege_is_named_with_its_fix() {
    let lab = Lab::installed("drs-moved-worker");
    let lines = vsphere_descheduler::vsphere::privilege_lines();
    let mut privileges: Vec<&str> = lines
        .iter()
        .map(|line| line.privilege)
        .filter(|privilege| *privilege != "Host.Inventory.EditCluster")
        .collect();
    privileges.sort_unstable();
    privileges.dedup();
    let (account, password) = ("descheduler@vsphere.local", "an0ther&pass");
    lab.simulator.add_user(account, password);
    lab.simulator.add_role("vsphere-descheduler", &privileges);
    lab.simulator
        .set_permission(account, "ReadOnly", "/", false);
    lab.simulator
        .set_permission(account, "vsphere-descheduler", "/go-lab", true);
    let as_account = |args: &[&str]| {
        let policy = lab.policy.display().to_string();
        let mut all = vec!["--output", "json", "check", "--policy", policy.as_str()];
        all.extend_from_slice(args);
        let output = lab
            .command(&all)
            .env("VSPHERE_USERNAME", account)
            .env("VSPHERE_PASSWORD", password)
            .output()
            .expect("the binary runs");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        (
            output.status.code(),
            serde_json::from_str::<Value>(&stdout).unwrap_or(Value::Null),
            stdout,
        )
    };
    let (code, report, stdout) = as_account(&["--lock-namespace", LOCK_NAMESPACE]);
    assert_eq!(code, Some(1), "{stdout}");
    assert_write_privilege_is(&report, "missing", &stdout);
    assert_eq!(report["exitCode"], 1);

    // Dry runs do without it; going live does not: its own status and exit code.
    let dry = ["--lock-namespace", LOCK_NAMESPACE, "--dry-run"];
    let (code, report, stdout) = as_account(&dry);
    assert_eq!(code, Some(3), "{stdout}");
    assert_write_privilege_is(&report, "missing-for-going-live", &stdout);
    assert_eq!(report["exitCode"], 3);
    assert_eq!(report["summary"]["missingForGoingLive"], 1, "{stdout}");
    assert_eq!(report["summary"]["missing"], 0, "{stdout}");

    // As the chart's hook of a dry-run install asks: passing, and still saying it.
    let accepted = [&dry[..], &["--accept-missing-for-going-live"]].concat();
    let (code, report, stdout) = as_account(&accepted);
    assert_eq!(code, Some(0), "{stdout}");
    assert_write_privilege_is(&report, "missing-for-going-live", &stdout);
    assert_eq!(report["exitCode"], 0);

    // Text says it too, in the table and in the summary line.
    let policy = lab.policy.display().to_string();
    let output = lab
        .command(&["check", "--policy", &policy])
        .args(dry)
        .env("VSPHERE_USERNAME", account)
        .env("VSPHERE_PASSWORD", password)
        .output()
        .expect("the binary runs");
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(3), "{text}");
    assert!(
        text.contains("  missing-for-going-live  Host.Inventory.EditCluster on cluster go-lab/"),
        "{text}"
    );
    assert!(
        text.contains("\n0 missing, 1 missing for going live (dryRun=false), "),
        "{text}"
    );
    assert!(text.trim_end().ends_with("exit code 3"), "{text}");
}

/// The one vCenter item missing, now or for going live: the write privilege on the lab's
/// cluster, with `status` and the fix that grants it.
fn assert_write_privilege_is(report: &Value, status: &str, stdout: &str) {
    let vcenter = &report["sections"][1];
    assert_eq!(vcenter["backend"], "vcenter", "{stdout}");
    let not_ok: Vec<&Value> = vcenter["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|item| item["status"] == "missing" || item["status"] == "missing-for-going-live")
        .collect();
    assert_eq!(not_ok.len(), 1, "{stdout}");
    let missing = not_ok;
    assert_eq!(missing[0]["status"], status, "{stdout}");
    assert_eq!(missing[0]["privilege"], "Host.Inventory.EditCluster");
    assert!(
        missing[0]["object"]
            .as_str()
            .expect("object")
            .starts_with("cluster go-lab/"),
        "{stdout}"
    );
    assert!(
        missing[0]["fix"]
            .as_str()
            .expect("a fix")
            .starts_with("Give the account a role holding Host.Inventory.EditCluster on cluster"),
        "{stdout}"
    );
}

/// An account given its role on the cluster instead of the datacenter (docs/vcenter-role.md
/// grants it on the datacenter, propagated): vCenter leaves the datacenter and the host folders
/// above the cluster out of everything the account reads (the simulator filters reads by
/// privilege, tests/support/vcsim/authorization.go), so runs cannot place the cluster in its
/// datacenter. `check` names the read privilege, the objects and the fix; the cluster, its hosts
/// and its VMs (through their resource pool) stay readable. Once the fix is applied, nothing is
/// missing.
#[test]
fn a_vcenter_account_granted_only_on_the_cluster_is_told_to_grant_read_on_the_datacenter() {
    let lab = Lab::installed("drs-moved-worker");
    let lines = vsphere_descheduler::vsphere::privilege_lines();
    let mut privileges: Vec<&str> = lines.iter().map(|line| line.privilege).collect();
    privileges.sort_unstable();
    privileges.dedup();
    let (account, password) = ("descheduler@vsphere.local", "an0ther&pass");
    let cluster = "wcp-cluster-41";
    lab.simulator.add_user(account, password);
    lab.simulator.add_role("vsphere-descheduler", &privileges);
    lab.simulator
        .set_permission(account, "ReadOnly", "/", false);
    lab.simulator.set_permission(
        account,
        "vsphere-descheduler",
        &format!("/go-lab/host/{cluster}"),
        true,
    );
    let check = || {
        let policy = lab.policy.display().to_string();
        let args = ["--output", "json", "check", "--policy", &policy];
        let output = lab
            .command(&args)
            .args(["--lock-namespace", LOCK_NAMESPACE])
            .env("VSPHERE_USERNAME", account)
            .env("VSPHERE_PASSWORD", password)
            .output()
            .expect("the binary runs");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let report: Value = serde_json::from_str(&stdout).unwrap_or(Value::Null);
        (output.status.code(), report, stdout)
    };
    // The vCenter items that are not ok, as (status, privilege, object, detail, fix).
    let vcenter_gaps = |report: &Value| -> Vec<[String; 5]> {
        let vcenter = &report["sections"][1];
        assert_eq!(vcenter["backend"], "vcenter");
        let text = |value: &Value| value.as_str().unwrap_or_default().to_string();
        vcenter["items"]
            .as_array()
            .expect("items")
            .iter()
            .filter(|item| item["check"] == "vcenterPrivilege" && item["status"] != "ok")
            .map(|item| {
                [
                    text(&item["status"]),
                    text(&item["privilege"]),
                    text(&item["object"]),
                    text(&item["detail"]),
                    text(&item["fix"]),
                ]
            })
            .collect()
    };

    let (code, report, stdout) = check();

    assert_eq!(code, Some(1), "{stdout}");
    assert_eq!(
        vcenter_gaps(&report),
        [[
            "missing".to_string(),
            "System.Read".to_string(),
            format!("the host folders above cluster {cluster}"),
            format!(
                "Observation found no datacenter above cluster {cluster}: the account cannot \
                 read System.Read on the host folders between them."
            ),
            format!(
                "Give the account a role (ReadOnly is enough) on the datacenter above cluster \
                 {cluster}, with \"Propagate to children\" on, so the host folders below it \
                 inherit System.Read."
            ),
        ]],
        "{stdout}"
    );
    assert_eq!(report["summary"]["missing"], 1, "{stdout}");
    let inventory = &report["sections"][1]["items"][1];
    assert_eq!(inventory["check"], "vcenterInventory", "{stdout}");
    assert_eq!(
        inventory["detail"], "Observation as runs do it found 1 cluster(s), 3 host(s) and 3 VM(s).",
        "{stdout}"
    );

    // The fix as it says: a role on the datacenter, propagated.
    lab.simulator
        .set_permission(account, "ReadOnly", "/go-lab", true);
    let (code, report, stdout) = check();
    assert_eq!(code, Some(0), "{stdout}");
    assert_eq!(vcenter_gaps(&report), Vec::<[String; 5]>::new(), "{stdout}");
}

/// The stretched-cluster story's sites checked live: from its vSAN fault domains (the story's
/// policy) every host is in one site, one ok item naming them; DRS host groups that leave site
/// B's hosts out and name a group no cluster has are two missing items, each with its code and
/// fix, and the check fails as `plan` and `run` would refuse the policy.
#[test]
fn the_sites_the_policy_reads_are_checked_against_the_hosts_observed() {
    let mut lab = Lab::installed("stretched-cluster");
    let checked = lab.check(&[]);
    let sites = checked.items_of("sites");
    assert_eq!(sites.len(), 1, "{}", checked.stdout);
    assert_eq!(sites[0]["source"], "vsanFaultDomains");
    assert_eq!(sites[0]["status"], "ok");
    assert_eq!(
        sites[0]["detail"],
        "every observed host is in one site: site-a (3 host(s)), site-b (3 host(s))"
    );

    let policy = std::fs::read_to_string(&lab.policy)
        .expect("the story's policy")
        .replace(
            "source: vsanFaultDomains",
            "source: hostGroups\n    hostGroups: [site-a-hosts, site-c-hosts]",
        );
    let file = lab.dir.path().join("sites-policy.yaml");
    std::fs::write(&file, policy).expect("write the policy");
    lab.policy = file;
    let checked = lab.check(&[]);
    assert_eq!(checked.code, 1, "{}", checked.stdout);
    let sites = checked.items_of("sites");
    let found: Vec<(&str, &str)> = sites
        .iter()
        .map(|item| {
            (
                item["status"].as_str().expect("status"),
                item["detail"].as_str().expect("detail"),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            (
                "missing",
                "host group \"site-c-hosts\" is in no vSphere cluster [site-group-not-found]"
            ),
            (
                "missing",
                "3 host(s) of cluster metro-cluster are in no site host group, so in no site: \
                 lab-esxi-b1.go-lab.jp, lab-esxi-b2.go-lab.jp, lab-esxi-b3.go-lab.jp \
                 [site-hosts-without-site]"
            ),
        ],
        "{}",
        checked.stdout
    );
    assert_eq!(
        sites[0]["fix"],
        "create the DRS host group in vCenter, or correct vsphere.sites.hostGroups"
    );
    assert!(checked.report["summary"]["missing"].as_u64() >= Some(2));
}
