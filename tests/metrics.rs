//! The run's metrics in a real Pushgateway (Debian's `prometheus-pushgateway`): the binary runs
//! against the lab (the vCenter simulator and the fake Kubernetes API server) with
//! `--metrics-push-url`, and the test reads the series back from the Pushgateway's `/metrics`.
//! Three live runs then count on a real Prometheus (Debian's `prometheus`) scraping the
//! Pushgateway: upstream descheduler's dashboard queries, every query of the chart's dashboard
//! and every alert expression answer what the runs' reports say, and `promtool check metrics`
//! finds nothing to say about what each run pushed. Also: a Pushgateway that cannot be reached is a warning in the log (the push follows the
//! report), not a failed run; basic auth and https with a private CA against the real
//! Pushgateway (certificates made with the `openssl` command); the bearer token as a local
//! listener receives it.

#[path = "support/lab.rs"]
mod lab;
mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use lab::Lab;
use serde_json::Value;
use support::certificates;
use support::closed_port::ClosedPort;
use support::fake_apiserver::{KubeObjects, read_objects};
use support::prometheus::{Prometheus, check_metrics};
use support::pushgateway::{Pushgateway, Recorder, Tls, Web, parse_series};
use support::vcsim;
use vsphere_descheduler::metrics;

const ESXI_41: &str = "lab-wcp-esxi-41.go-lab.jp";
/// The clusterName of the e2e stories' policies.
const CLUSTER: &str = "lab";
const ANTI_AFFINITY: &str = "RemovePodsViolatingInterPodAntiAffinity";

/// The Pushgateway user of the basic-auth test, its password and the password's bcrypt hash
/// (cost 4, so checking it costs nothing; made with `crypt(3)`).
const PUSH_USER: &str = "pusher";
const PUSH_PASSWORD: &str = "p@ss-w0rd-for-pushing";
const PUSH_PASSWORD_BCRYPT: &str = "$2y$04$vsphereDeschedulerSaleJirgbNSS0kQGHnQmnyTOMORqOFcXDse";

/// How a run of the binary ended.
struct Outcome {
    code: i32,
    report: Value,
    stdout: String,
    stderr: String,
}

impl Outcome {
    fn warnings(&self) -> Vec<String> {
        self.report["warnings"]
            .as_array()
            .expect("warnings")
            .iter()
            .map(|warning| warning.as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// The log lines saying the push failed: it comes after the report, so only the log tells.
    fn push_failures(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|line| line.contains("the run's metrics were not pushed: "))
            .collect()
    }
}

impl Lab {
    /// `run --output json --policy <the story's>` plus `args`, connected to the lab.
    fn run(&self, args: &[&str]) -> Outcome {
        let policy = self.policy.display().to_string();
        let mut command = self.command(&["--output", "json", "run", "--policy", &policy]);
        command.args(args);
        outcome(&mut command)
    }
}

/// The binary with a clean environment.
fn binary(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_vsphere-descheduler"));
    command
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("RUST_LOG", "info");
    command
}

fn outcome(command: &mut Command) -> Outcome {
    let output = command.output().expect("the binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    for text in [&stdout, &stderr] {
        assert!(!text.contains(vcsim::PASSWORD), "a password leaked");
        assert!(!text.contains(PUSH_PASSWORD), "a password leaked");
    }
    Outcome {
        code: output.status.code().unwrap_or(-1),
        report: serde_json::from_str(&stdout).unwrap_or(Value::Null),
        stdout,
        stderr,
    }
}

/// A run whose settings are unusable (no vCenter server): it reports exit code 2 without
/// reaching anything, and pushes that report.
fn unusable_run(args: &[&str]) -> Outcome {
    let mut all = vec!["--output", "json", "run", "--cluster-name", CLUSTER];
    all.extend_from_slice(args);
    outcome(&mut binary(&all))
}

/// A series as the Pushgateway writes it: the group's labels added, all labels sorted.
fn series(name: &str, labels: &[(&str, &str)]) -> String {
    let mut all: BTreeMap<&str, &str> = labels.iter().copied().collect();
    all.insert("cluster", CLUSTER);
    all.insert("instance", "");
    all.insert("job", "vsphere-descheduler");
    let pairs: Vec<String> = all
        .iter()
        .map(|(label, value)| format!("{label}=\"{value}\""))
        .collect();
    format!("{name}{{{}}}", pairs.join(","))
}

/// The gauges of a run as its JSON report says them: every pushed gauge but the run's duration
/// and end time (which the report does not hold).
fn gauges_from_report(report: &Value) -> BTreeMap<String, f64> {
    let entries = |field: &str| report[field].as_array().expect(field).clone();
    let text = |value: &Value| value.as_str().expect("a string").to_string();
    let mut counts: BTreeMap<String, f64> = BTreeMap::new();
    let mut count = |name: &str, labels: &[(&str, String)]| {
        let labels: Vec<(&str, &str)> = labels.iter().map(|(l, v)| (*l, v.as_str())).collect();
        *counts.entry(series(name, &labels)).or_default() += 1.0;
    };
    let not_attempted =
        |entry: &Value| entry["result"] == "planned" && entry["message"].is_string();
    for eviction in entries("evictions") {
        count(
            "vsphere_descheduler_run_evictions",
            &[
                ("strategy", text(&eviction["strategy"])),
                ("namespace", text(&eviction["namespace"])),
                ("result", text(&eviction["result"])),
            ],
        );
        if not_attempted(&eviction) {
            count(
                "vsphere_descheduler_actions_not_attempted",
                &[("kind", "eviction".into())],
            );
        }
    }
    for skip in entries("skipped") {
        count(
            "vsphere_descheduler_run_pods_skipped",
            &[
                ("strategy", text(&skip["strategy"])),
                ("reason", text(&skip["reason"])),
            ],
        );
        count(
            "vsphere_descheduler_run_pods_skipped_by_code",
            &[
                ("strategy", text(&skip["strategy"])),
                ("code", text(&skip["code"])),
            ],
        );
    }
    for change in entries("labelChanges") {
        count(
            "vsphere_descheduler_run_node_label_changes",
            &[("key", text(&change["key"]))],
        );
    }
    for rule in entries("drsRules") {
        count(
            "vsphere_descheduler_run_drs_rule_changes",
            &[
                ("action", text(&rule["action"])),
                ("result", text(&rule["result"])),
            ],
        );
        if not_attempted(&rule) {
            count(
                "vsphere_descheduler_actions_not_attempted",
                &[("kind", "drs-rule".into())],
            );
        }
    }
    let length = |field: &str| entries(field).len() as f64;
    counts.insert(
        series("vsphere_descheduler_unmapped_nodes", &[]),
        length("unmappedNodes"),
    );
    counts.insert(
        series("vsphere_descheduler_run_errors", &[]),
        length("errors"),
    );
    counts.insert(
        series("vsphere_descheduler_warnings", &[]),
        length("warnings"),
    );
    counts.insert(
        series("vsphere_descheduler_exit_code", &[]),
        report["exitCode"].as_f64().expect("an exit code"),
    );
    let mode = text(&report["mode"]);
    counts.insert(
        series(
            "vsphere_descheduler_run_info",
            &[("mode", &mode), ("version", env!("CARGO_PKG_VERSION"))],
        ),
        1.0,
    );
    if let Some(exposure) = report.get("exposure") {
        counts.extend(exposure_from_report(exposure));
    }
    counts
}

/// What a live run adds to the counters, as its JSON report says (docs/metrics.md): each
/// eviction sent, in upstream's family (`success` or `error`) and ours; each skip; each label
/// change (written: the runs this is asked of succeeded); each DRS rule change submitted; the
/// errors; one run observed in the loop histogram. A dry run adds nothing.
fn counts_from_report(report: &Value) -> BTreeMap<String, f64> {
    let mut counts: BTreeMap<String, f64> = BTreeMap::new();
    if report["mode"] != "run" {
        return counts;
    }
    assert_eq!(report["exitCode"], 0, "a run that wrote every label change");
    let entries = |field: &str| report[field].as_array().expect(field).clone();
    let text = |value: &Value| value.as_str().expect("a string").to_string();
    let mut count = |name: &str, labels: &[(&str, String)]| {
        let labels: Vec<(&str, &str)> = labels.iter().map(|(l, v)| (*l, v.as_str())).collect();
        *counts.entry(series(name, &labels)).or_default() += 1.0;
    };
    for eviction in entries("evictions") {
        let result = text(&eviction["result"]);
        let upstream = match result.as_str() {
            "evicted" => Some("success"),
            "blocked" | "gone" | "failed" => Some("error"),
            _ => None,
        };
        if let Some(upstream) = upstream {
            count(
                "descheduler_pods_evicted_total",
                &[
                    ("result", upstream.to_string()),
                    ("strategy", text(&eviction["strategy"])),
                    ("profile", text(&eviction["profile"])),
                    ("namespace", text(&eviction["namespace"])),
                    ("node", text(&eviction["node"])),
                ],
            );
        }
        if result != "planned" {
            count(
                "vsphere_descheduler_evictions_total",
                &[
                    ("strategy", text(&eviction["strategy"])),
                    ("namespace", text(&eviction["namespace"])),
                    ("result", result),
                ],
            );
        }
    }
    for skip in entries("skipped") {
        count(
            "vsphere_descheduler_pods_skipped_total",
            &[
                ("strategy", text(&skip["strategy"])),
                ("reason", text(&skip["reason"])),
            ],
        );
        count(
            "vsphere_descheduler_pods_skipped_by_code_total",
            &[
                ("strategy", text(&skip["strategy"])),
                ("code", text(&skip["code"])),
            ],
        );
    }
    for change in entries("labelChanges") {
        count(
            "vsphere_descheduler_node_label_changes_total",
            &[("key", text(&change["key"]))],
        );
    }
    for rule in entries("drsRules") {
        if rule["action"] != "keep" && rule["result"] != "planned" {
            count(
                "vsphere_descheduler_drs_rule_changes_total",
                &[
                    ("action", text(&rule["action"])),
                    ("result", text(&rule["result"])),
                ],
            );
        }
    }
    *counts
        .entry(series("vsphere_descheduler_errors_total", &[]))
        .or_default() += entries("errors").len() as f64;
    *counts
        .entry(series("descheduler_loop_duration_seconds_count", &[]))
        .or_default() += 1.0;
    counts
}

/// The exposure series of a report's `exposure`: every class, before and after, and each listed
/// workload's busiest host.
fn exposure_from_report(exposure: &Value) -> BTreeMap<String, f64> {
    let mut counts = BTreeMap::new();
    let classes = [
        ("all", "all"),
        ("majority", "majority"),
        ("over-budget", "overBudget"),
        ("tolerated", "tolerated"),
    ];
    let node_groups = exposure["nodeGroups"].as_array().expect("nodeGroups");
    for (class, field) in classes {
        for when in ["before", "after"] {
            counts.insert(
                series(
                    "vsphere_descheduler_exposure_workloads",
                    &[("class", class), ("when", when)],
                ),
                exposure[when][field].as_f64().expect("a count"),
            );
        }
        let groups = node_groups.iter().filter(|g| g["class"] == class).count();
        counts.insert(
            series(
                "vsphere_descheduler_exposure_node_groups",
                &[("class", class)],
            ),
            groups as f64,
        );
    }
    for workload in exposure["workloads"].as_array().expect("workloads") {
        let name = workload["workload"].as_str().expect("a name");
        let (namespace, kind_name) = name.split_once('/').expect("namespace/Kind/name");
        let pods = workload["pods"].as_f64().expect("pods");
        for when in ["before", "after"] {
            let spread = &workload[when];
            let labels = [
                ("namespace", namespace),
                ("workload", kind_name),
                ("when", when),
                ("class", spread["class"].as_str().expect("a class")),
            ];
            counts.insert(
                series("vsphere_descheduler_exposure_worst_host_share", &labels),
                spread["worstPods"].as_f64().expect("worstPods") / pods,
            );
        }
    }
    counts
}

fn now_seconds() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs_f64()
}

/// The series named `name` (any labels).
fn family<'a>(pushed: &'a BTreeMap<String, f64>, name: &str) -> Vec<(&'a String, &'a f64)> {
    pushed
        .iter()
        .filter(|(series, _)| series.starts_with(&format!("{name}{{")))
        .collect()
}

/// The series of the loop duration histogram (`_bucket`, `_sum`, `_count`), taken out of
/// `pushed`.
fn take_histogram(pushed: &mut BTreeMap<String, f64>) -> BTreeMap<String, f64> {
    let histogram: BTreeMap<String, f64> = pushed
        .iter()
        .filter(|(series, _)| series.starts_with("descheduler_loop_duration_seconds_"))
        .map(|(series, value)| (series.clone(), *value))
        .collect();
    pushed.retain(|series, _| !histogram.contains_key(series));
    histogram
}

#[test]
fn a_run_against_the_lab_leaves_its_metrics_in_the_pushgateway_and_a_dry_run_keeps_the_counters() {
    let pushgateway = Pushgateway::start();
    let lab = Lab::start("drs-moved-worker");
    lab.simulator.move_vm("worker-b", ESXI_41);
    let before = now_seconds();
    let run = lab.run(&["--metrics-push-url", &pushgateway.url()]);
    let after = now_seconds();
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.warnings().is_empty(), "{:?}", run.warnings());
    assert!(run.push_failures().is_empty(), "{}", run.stderr);

    let pushed = pushgateway.pushed_series();
    // The story: worker-b's VM moved next to worker-a's, its label follows, one web replica goes.
    let eviction = &run.report["evictions"][0];
    let text = |key: &str| eviction[key].as_str().expect(key);
    let evicted = series(
        "descheduler_pods_evicted_total",
        &[
            ("result", "success"),
            ("strategy", ANTI_AFFINITY),
            ("profile", text("profile")),
            ("namespace", text("namespace")),
            ("node", text("node")),
        ],
    );
    assert_eq!(pushed.get(&evicted), Some(&1.0), "{pushed:#?}");
    let relabelled = series(
        "vsphere_descheduler_node_label_changes_total",
        &[("key", "vsphere-descheduler.io/host")],
    );
    // Every node is labelled already; worker-b's label is the one change.
    assert_eq!(pushed.get(&relabelled), Some(&1.0), "{pushed:#?}");
    assert_eq!(
        pushed.get(&series("vsphere_descheduler_exit_code", &[])),
        Some(&0.0)
    );

    // Every series says what the report says (the counters start at this run's counts); the
    // two about time lie within the run, and the histogram observed the same duration.
    let mut counted = pushed.clone();
    let duration = counted
        .remove(&series("vsphere_descheduler_run_duration_seconds", &[]))
        .expect("the run's duration");
    let finished = counted
        .remove(&series(
            "vsphere_descheduler_last_run_timestamp_seconds",
            &[],
        ))
        .expect("the run's end");
    let histogram = take_histogram(&mut counted);
    let mut expected = gauges_from_report(&run.report);
    expected.extend(counts_from_report(&run.report));
    let loop_count = series("descheduler_loop_duration_seconds_count", &[]);
    assert_eq!(expected.remove(&loop_count), Some(1.0));
    assert_eq!(counted, expected);
    assert_eq!(histogram.get(&loop_count), Some(&1.0), "{histogram:#?}");
    assert_eq!(
        histogram.get(&series("descheduler_loop_duration_seconds_sum", &[])),
        Some(&duration)
    );
    assert_eq!(
        histogram.get(&series(
            "descheduler_loop_duration_seconds_bucket",
            &[("le", "+Inf")]
        )),
        Some(&1.0)
    );
    // The lab has an inventory: the exposure is pushed, every class of it.
    assert_eq!(
        family(&pushed, "vsphere_descheduler_exposure_workloads").len(),
        8,
        "{pushed:#?}"
    );
    assert!(duration > 0.0 && duration <= after - before, "{duration}");
    assert!(before <= finished && finished <= after, "{finished}");

    // Only listed families are pushed (the dashboard and alerts are checked against the list).
    let listed: Vec<&str> = metrics::families().iter().map(|f| f.name).collect();
    for series in pushed.keys() {
        let name = series.split('{').next().expect("a name");
        let family = name
            .strip_suffix("_bucket")
            .or_else(|| name.strip_suffix("_sum"))
            .or_else(|| name.strip_suffix("_count"))
            .filter(|family| *family == "descheduler_loop_duration_seconds")
            .unwrap_or(name);
        assert!(
            listed.contains(&family),
            "{name} is not in metrics/families.txt"
        );
    }

    // A dry run right after finds nothing to do. Its push replaces the whole group: the first
    // run's per-run eviction is gone, and the counters are pushed again as they were (a dry run
    // counts nothing).
    let counters: BTreeMap<String, f64> = pushed
        .iter()
        .filter(|(series, _)| {
            series
                .split('{')
                .next()
                .is_some_and(|name| name.ends_with("_total"))
                || series.starts_with("descheduler_loop_duration_seconds_")
        })
        .map(|(series, value)| (series.clone(), *value))
        .collect();
    let first_push = pushgateway.push_time(CLUSTER).expect("a push time");
    let dry_run = lab.run(&["--dry-run", "--metrics-push-url", &pushgateway.url()]);
    assert_eq!(dry_run.code, 0, "{}", dry_run.stderr);
    assert!(dry_run.push_failures().is_empty(), "{}", dry_run.stderr);
    assert_eq!(
        dry_run.report["evictions"],
        serde_json::json!([]),
        "nothing left to do"
    );
    // Exactly the dry run's gauges and the first run's counters, nothing else: no per-run
    // eviction series, and nothing missing.
    let mut pushed = pushgateway.pushed_series();
    let duration = pushed
        .remove(&series("vsphere_descheduler_run_duration_seconds", &[]))
        .expect("the dry run's duration");
    assert!(duration > 0.0, "{duration}");
    let finished = pushed
        .remove(&series(
            "vsphere_descheduler_last_run_timestamp_seconds",
            &[],
        ))
        .expect("the dry run's end");
    assert!(
        finished >= after,
        "{finished} after the first run's end {after}"
    );
    let mut expected = gauges_from_report(&dry_run.report);
    let info = series(
        "vsphere_descheduler_run_info",
        &[("mode", "dry-run"), ("version", env!("CARGO_PKG_VERSION"))],
    );
    assert_eq!(expected.get(&info), Some(&1.0), "{expected:#?}");
    expected.extend(counters.clone());
    assert_eq!(pushed, expected);
    assert!(pushgateway.push_time(CLUSTER).expect("a push time") >= first_push);
    // The counters pushed again are the first run's, not zeros.
    assert_eq!(counters.get(&evicted), Some(&1.0), "{counters:#?}");
    assert_eq!(counters.get(&relabelled), Some(&1.0), "{counters:#?}");
}

#[test]
fn a_pushgateway_that_cannot_be_reached_is_a_warning_and_the_exit_code_stays() {
    // A port held, never listening, to the end of the test: nothing answers there.
    let closed = ClosedPort::bind();
    let dead = format!("http://{}", closed.address());
    let lab = Lab::start("drs-moved-worker");
    let run = lab.run(&["--metrics-push-url", &dead]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.report["exitCode"], 0);
    // Pushed after the report is printed: the failure is in the log only.
    assert!(run.warnings().is_empty(), "{:?}", run.warnings());
    let failures = run.push_failures();
    assert_eq!(failures.len(), 1, "{}", run.stderr);
    // The running totals are read first: that is what fails, and nothing is pushed.
    assert!(
        failures[0].contains("failed to read the running totals from Pushgateway 127.0.0.1:"),
        "{failures:?}"
    );

    // A run that fails keeps its own exit code too.
    let unusable = unusable_run(&["--metrics-push-url", &dead]);
    assert_eq!(unusable.code, 2, "{}", unusable.stderr);
    assert_eq!(unusable.report["exitCode"], 2);
    assert!(unusable.warnings().is_empty(), "{:?}", unusable.warnings());
    assert_eq!(unusable.push_failures().len(), 1, "{}", unusable.stderr);
}

#[test]
fn a_run_that_cannot_start_is_pushed_with_basic_auth_and_a_wrong_password_is_refused() {
    let pushgateway =
        Pushgateway::start_with_basic_auth(PUSH_USER, PUSH_PASSWORD, PUSH_PASSWORD_BCRYPT);
    let credentials = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(
        credentials.path().join("username"),
        format!("{PUSH_USER}\n"),
    )
    .expect("write");
    std::fs::write(credentials.path().join("password"), "not-the-password\n").expect("write");
    let dir = credentials.path().display().to_string();
    let args = [
        "--metrics-push-url",
        &pushgateway.url(),
        "--metrics-push-credentials-dir",
        &dir,
    ];

    let refused = unusable_run(&args);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    let failures = refused.push_failures();
    assert!(
        failures.len() == 1
            && failures[0]
                .contains("refused to show its metrics (the running totals) with HTTP 401"),
        "{failures:?}"
    );
    assert!(pushgateway.pushed_series().is_empty());

    std::fs::write(credentials.path().join("password"), PUSH_PASSWORD).expect("write");
    let pushed = unusable_run(&args);
    assert_eq!(pushed.code, 2, "{}", pushed.stderr);
    assert!(pushed.push_failures().is_empty(), "{}", pushed.stderr);
    let series_pushed = pushgateway.pushed_series();
    assert_eq!(
        series_pushed.get(&series("vsphere_descheduler_exit_code", &[])),
        Some(&2.0),
        "{series_pushed:#?}"
    );
    assert_eq!(
        series_pushed.get(&series("vsphere_descheduler_run_errors", &[])),
        Some(&1.0)
    );
    // A live run that could not start counts its error, and what kind of failure it was.
    assert_eq!(
        series_pushed.get(&series("vsphere_descheduler_errors_total", &[])),
        Some(&1.0)
    );
    let by_cause = [("step", "settings"), ("cause", "config")];
    for name in [
        "vsphere_descheduler_failures_total",
        "vsphere_descheduler_run_failures",
    ] {
        assert_eq!(
            series_pushed.get(&series(name, &by_cause)),
            Some(&1.0),
            "{series_pushed:#?}"
        );
    }
}

#[test]
fn a_token_file_is_sent_as_a_bearer_token_in_a_get_of_the_totals_and_a_put_of_the_text_format() {
    // An HTTP server standing in for a Pushgateway behind a token-checking proxy: it answers
    // the read of the running totals (no group yet), then takes the push.
    let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
    let url = format!("http://{}", listener.local_addr().expect("its address"));
    let received = std::thread::spawn(move || {
        let mut requests = Vec::new();
        loop {
            let (stream, _) = listener.accept().expect("a request arrives");
            let (head, body) = read_request(stream);
            let put = head[0].starts_with("PUT ");
            requests.push((head, body));
            if put {
                return requests;
            }
        }
    });
    let credentials = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(credentials.path().join("token"), "t0ken-for-pushing\n").expect("write");
    let dir = credentials.path().display().to_string();

    let run = unusable_run(&[
        "--metrics-push-url",
        &url,
        "--metrics-push-credentials-dir",
        &dir,
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.warnings().is_empty(), "{:?}", run.warnings());
    assert!(!run.stdout.contains("t0ken") && !run.stderr.contains("t0ken"));

    let requests = received.join().expect("the listener");
    assert_eq!(requests.len(), 2, "{requests:?}");
    let (read, _) = &requests[0];
    assert_eq!(read[0], "GET /api/v1/metrics HTTP/1.1");
    let (head, body) = &requests[1];
    assert_eq!(
        head[0],
        "PUT /metrics/job/vsphere-descheduler/cluster/lab HTTP/1.1"
    );
    for head in [read, head] {
        let headers: Vec<String> = head[1..].iter().map(|line| line.to_lowercase()).collect();
        assert!(
            headers.contains(&"authorization: bearer t0ken-for-pushing".to_string()),
            "{headers:?}"
        );
    }
    let headers: Vec<String> = head[1..].iter().map(|line| line.to_lowercase()).collect();
    assert!(
        headers.contains(&format!("content-type: {}", metrics::CONTENT_TYPE)),
        "{headers:?}"
    );
    let samples = parse_series(body);
    assert_eq!(
        samples.get("vsphere_descheduler_exit_code"),
        Some(&2.0),
        "{body}"
    );
}

/// Reads one HTTP/1.1 request (head lines and body) and answers it, closing the connection: a
/// read of the Pushgateway's metrics with an empty list of groups, anything else with 200.
fn read_request(stream: std::net::TcpStream) -> (Vec<String>, String) {
    let mut reader = BufReader::new(stream);
    let mut head = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("a header line");
        if line.trim().is_empty() {
            break;
        }
        head.push(line.trim().to_string());
    }
    let length: usize = head
        .iter()
        .find_map(|line| {
            line.to_lowercase()
                .strip_prefix("content-length: ")
                .map(str::to_string)
        })
        .and_then(|value| value.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).expect("the body");
    let answer = if head[0].starts_with("GET /api/v1/metrics ") {
        r#"{"status":"success","data":[]}"#
    } else {
        ""
    };
    let response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{answer}",
        answer.len()
    );
    reader
        .get_mut()
        .write_all(response.as_bytes())
        .expect("answer");
    (head, String::from_utf8(body).expect("text"))
}

#[test]
fn an_https_pushgateway_is_trusted_through_the_ca_file_and_refused_without_it() {
    let certificates = tempfile::tempdir().expect("a temporary directory");
    let made = certificates::private_ca_and_server_certificate(certificates.path());
    let tls = Tls {
        certificate: made.certificate,
        key: made.key,
        ca: made.ca,
    };
    let ca = tls.ca.display().to_string();
    let pushgateway = Pushgateway::start_with(Web {
        basic_auth: None,
        tls: Some(tls),
    });
    let url = pushgateway.url();
    assert!(url.starts_with("https://"), "{url}");

    // The system's roots do not know the private CA: verified, refused, logged.
    let untrusted = unusable_run(&["--metrics-push-url", &url]);
    assert_eq!(untrusted.code, 2, "{}", untrusted.stderr);
    let failures = untrusted.push_failures();
    assert!(
        failures.len() == 1 && failures[0].to_lowercase().contains("certificate"),
        "{failures:?}"
    );
    assert!(pushgateway.pushed_series().is_empty());

    let trusted = unusable_run(&["--metrics-push-url", &url, "--metrics-push-ca-file", &ca]);
    assert_eq!(trusted.code, 2, "{}", trusted.stderr);
    assert!(trusted.push_failures().is_empty(), "{}", trusted.stderr);
    assert_eq!(
        pushgateway
            .pushed_series()
            .get(&series("vsphere_descheduler_exit_code", &[])),
        Some(&2.0)
    );
}

/// The story of the counting test: three workloads with a replica on worker-a and one on
/// worker-b, whose VMs share an ESXi host, so each run evicts one replica of each.
const COUNTING_STORY: &str = "several-violations";
const ESXI_42: &str = "lab-wcp-esxi-42.go-lab.jp";
const ESXI_43: &str = "lab-wcp-esxi-43.go-lab.jp";
const DASHBOARD: &str = "charts/vsphere-descheduler/dashboards/vsphere-descheduler.json";
/// The chart's alert rules for the cluster "lab" (tests/chart/test_alerts_promtool.py holds
/// them to the chart).
const ALERT_RULES: &str = "tests/fixtures/metrics/alert-rules.yaml";

impl Lab {
    /// Puts the counting story back as it began: the pods the last run evicted finish
    /// terminating, and their controllers recreate them where they were (as the scheduler would
    /// not, but the next run must find the same violations to count them again); and the run
    /// lock's Lease goes, with the eviction history whose pacing would otherwise hold the same
    /// workloads for ten minutes.
    fn re_arm(&self) {
        let story = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/e2e")
            .join(COUNTING_STORY)
            .join("snapshot.yaml");
        let original = read_objects(&story).pods;
        let mut cluster = self.server.cluster();
        cluster.finish_terminations();
        let missing: Vec<_> = original
            .into_iter()
            .filter(|pod| {
                let key = (
                    pod.metadata.namespace.clone().unwrap_or_default(),
                    pod.metadata.name.clone().unwrap_or_default(),
                );
                !cluster.pods.contains_key(&key)
            })
            .collect();
        assert!(!missing.is_empty(), "the last run evicted nothing");
        cluster.load(KubeObjects {
            pods: missing,
            ..KubeObjects::default()
        });
        cluster.reconcile_pdbs();
        // The lock, and the eviction history beside it: each run evicts the same replicas anew.
        cluster.leases.clear();
        cluster.config_maps.clear();
    }
}

/// A series' labels.
type Labels = BTreeMap<String, String>;
/// What an instant query answers: each series' labels and value.
type Answer = BTreeMap<Labels, f64>;

/// A series as [`series`] names it, split into its name and labels; `instance=""` left out, as
/// Prometheus treats an empty label as none.
fn split_series(series: &str) -> (String, Labels) {
    let (name, rest) = series.split_once('{').unwrap_or((series, "}"));
    let labels = rest
        .trim_end_matches('}')
        .split("\",")
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (label, value) = pair.split_once("=\"").expect("label=\"value\"");
            (label.to_string(), value.trim_end_matches('"').to_string())
        })
        .filter(|(label, value)| !(label == "instance" && value.is_empty()))
        .collect();
    (name.to_string(), labels)
}

/// The series the three runs left, as their reports and pushes say them.
struct Model {
    /// The gauges of the last run.
    last: BTreeMap<(String, Labels), f64>,
    /// The counters (and the loop histogram's `_count` and `_sum`) after each run.
    totals: Vec<BTreeMap<(String, Labels), f64>>,
}

impl Model {
    /// Builds it from each run's report and push.
    fn of(reports: &[Value], pushes: &[String]) -> Model {
        let split = |series: BTreeMap<String, f64>| -> BTreeMap<(String, Labels), f64> {
            series
                .into_iter()
                .map(|(series, value)| (split_series(&series), value))
                .collect()
        };
        let mut totals = Vec::new();
        let mut running: BTreeMap<String, f64> = BTreeMap::new();
        let mut durations = 0.0;
        for (report, push) in reports.iter().zip(pushes) {
            for (series, value) in counts_from_report(report) {
                *running.entry(series).or_default() += value;
            }
            let pushed = parse_series(push);
            durations += pushed["vsphere_descheduler_run_duration_seconds"];
            let mut after = running.clone();
            after.insert(
                series("descheduler_loop_duration_seconds_sum", &[]),
                durations,
            );
            totals.push(split(after));
        }
        let last_push = parse_series(pushes.last().expect("a push"));
        let mut last = gauges_from_report(reports.last().expect("a report"));
        for name in [
            "vsphere_descheduler_run_duration_seconds",
            "vsphere_descheduler_last_run_timestamp_seconds",
        ] {
            last.insert(series(name, &[]), last_push[name]);
        }
        Model {
            last: split(last),
            totals,
        }
    }

    /// `sum by (by) (name{…})` over `source`, the series `keep` keeps.
    fn sum_by(
        source: &BTreeMap<(String, Labels), f64>,
        name: &str,
        by: &[&str],
        keep: impl Fn(&Labels) -> bool,
    ) -> Answer {
        let mut answer = Answer::new();
        for ((family, labels), value) in source {
            if family != name || !keep(labels) {
                continue;
            }
            let group: Labels = by
                .iter()
                .filter_map(|label| labels.get(*label).map(|v| (label.to_string(), v.clone())))
                .collect();
            *answer.entry(group).or_default() += value;
        }
        answer
    }

    /// `name{…}` over `source` as Prometheus returns it: every label and `__name__`.
    fn raw(source: &BTreeMap<(String, Labels), f64>, name: &str) -> Answer {
        source
            .iter()
            .filter(|((family, _), _)| family == name)
            .map(|((family, labels), value)| {
                let mut labels = labels.clone();
                labels.insert("__name__".to_string(), family.clone());
                (labels, *value)
            })
            .collect()
    }

    /// The counters after the last run.
    fn counters(&self) -> &BTreeMap<(String, Labels), f64> {
        self.totals.last().expect("three runs")
    }

    /// What each counter went up by from the first run's push to the last's: what `increase()`
    /// over a window from a sample of the first push to one of the last gives, every series
    /// having been there since the first push.
    fn increase(&self) -> BTreeMap<(String, Labels), f64> {
        let first = &self.totals[0];
        self.counters()
            .iter()
            .map(|(key, value)| {
                let start = first
                    .get(key)
                    .unwrap_or_else(|| panic!("{key:?} was not pushed by the first run"));
                (key.clone(), value - start)
            })
            .collect()
    }
}

/// The labels of one group of an answer.
fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(label, value)| (label.to_string(), value.to_string()))
        .collect()
}

/// An answer of one series.
fn one(pairs: &[(&str, &str)], value: f64) -> Answer {
    Answer::from([(labels(pairs), value)])
}

/// Asserts that `query` answered `expected`: the same series, values equal up to rounding.
fn assert_answer(query: &str, got: &[support::prometheus::Sample], expected: &Answer) {
    let got: Answer = got
        .iter()
        .map(|sample| (sample.labels.clone(), sample.value))
        .collect();
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0);
    let same = got.len() == expected.len()
        && got
            .iter()
            .zip(expected)
            .all(|((gl, gv), (el, ev))| gl == el && close(*gv, *ev));
    assert!(
        same,
        "{query}\n  answered: {got:?}\n  the reports say: {expected:?}"
    );
}

/// Every query of the chart's dashboard: each panel target's, and each query variable's.
fn dashboard_queries() -> Vec<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(DASHBOARD);
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("the dashboard")).expect("JSON");
    let mut queries = Vec::new();
    let mut panels: Vec<Value> = dashboard["panels"].as_array().expect("panels").clone();
    while let Some(panel) = panels.pop() {
        panels.extend(panel["panels"].as_array().cloned().unwrap_or_default());
        for target in panel["targets"].as_array().cloned().unwrap_or_default() {
            queries.push(target["expr"].as_str().expect("an expr").to_string());
        }
    }
    for variable in dashboard["templating"]["list"]
        .as_array()
        .expect("variables")
    {
        if variable["type"] == "query" {
            queries.push(
                variable["query"]["query"]
                    .as_str()
                    .expect("a query")
                    .to_string(),
            );
        }
    }
    queries
}

/// The expression of each alert of the chart's rules for the cluster "lab".
fn alert_expressions() -> BTreeMap<String, String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(ALERT_RULES);
    let rules: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(path).expect("the rules")).expect("YAML");
    let mut expressions = BTreeMap::new();
    for group in rules["groups"].as_array().expect("groups") {
        for rule in group["rules"].as_array().expect("rules") {
            expressions.insert(
                rule["alert"].as_str().expect("an alert").to_string(),
                rule["expr"].as_str().expect("an expr").to_string(),
            );
        }
    }
    expressions
}

#[test]
fn three_runs_count_on_a_real_prometheus_as_their_reports_say() {
    let pushgateway = Pushgateway::start();
    let recorder = Recorder::in_front_of(&pushgateway);
    let prometheus = Prometheus::scraping(pushgateway.address());
    let lab = Lab::start(COUNTING_STORY);
    let last_run = format!(
        "vsphere_descheduler_last_run_timestamp_seconds{{job=\"vsphere-descheduler\",cluster=\"{CLUSTER}\"}}"
    );

    // Three live runs, each evicting the same replicas again and writing worker-c's host label
    // (its VM moves before each); the time of the first sample Prometheus scraped of each push.
    let mut reports = Vec::new();
    let mut scraped = Vec::new();
    for (run, host) in [ESXI_42, ESXI_43, ESXI_42].into_iter().enumerate() {
        if run > 0 {
            lab.re_arm();
        }
        lab.simulator.move_vm("worker-c", host);
        let outcome = lab.run(&["--metrics-push-url", &recorder.url]);
        assert_eq!(outcome.code, 0, "{}\n{}", outcome.stdout, outcome.stderr);
        assert!(outcome.push_failures().is_empty(), "{}", outcome.stderr);
        let evicted = outcome.report["evictions"]
            .as_array()
            .expect("evictions")
            .iter()
            .filter(|e| e["result"] == "evicted")
            .count();
        assert!(evicted > 0, "run {run} evicted nothing: {}", outcome.stdout);
        let pushes = recorder.pushes();
        assert_eq!(pushes.len(), run + 1);
        // What a run pushes is clean by Prometheus' own lint.
        if let Err(complaints) = check_metrics(&pushes[run]) {
            panic!("promtool check metrics:\n{complaints}\n{}", pushes[run]);
        }
        let finished = parse_series(&pushes[run])["vsphere_descheduler_last_run_timestamp_seconds"];
        scraped.push(prometheus.wait_for_value(&last_run, finished));
        reports.push(outcome.report);
    }
    let pushes = recorder.pushes();
    let model = Model::of(&reports, &pushes);
    // Evaluated at a later sample of the last push, so that every series of it has two; over a
    // window from the first sample of the first push, so that Prometheus' increase() counts
    // exactly what the second and third runs added (its extrapolation adds nothing when the
    // window starts and ends on samples).
    let at = prometheus.wait_for_sample_after(&last_run, scraped[2]);
    let window_ms = ((at - scraped[0]) * 1000.0).round() as i64;
    let window_seconds = window_ms as f64 / 1000.0;
    let ask = |query: &str| {
        let query = query
            .replace("$cluster", CLUSTER)
            .replace("$window", &format!("{window_ms}ms"));
        prometheus.query(&query, Some(at))
    };
    let counters = model.counters();
    let increase = model.increase();
    let last = &model.last;
    let finished = model.last[&(
        "vsphere_descheduler_last_run_timestamp_seconds".to_string(),
        labels(&[("job", "vsphere-descheduler"), ("cluster", CLUSTER)]),
    )];
    let any = |_: &Labels| true;
    let is = |label: &'static str, value: &'static str| {
        move |labels: &Labels| labels.get(label).map(String::as_str) == Some(value)
    };

    // Upstream descheduler's dashboard queries over its own counter.
    let upstream = "descheduler_pods_evicted_total";
    let upstream_queries: Vec<(&str, Answer)> = vec![
        (
            r#"sum(descheduler_pods_evicted_total{result="success"})"#,
            Model::sum_by(counters, upstream, &[], is("result", "success")),
        ),
        (
            "sum by (strategy) (descheduler_pods_evicted_total)",
            Model::sum_by(counters, upstream, &["strategy"], any),
        ),
        (
            "sum by (result) (descheduler_pods_evicted_total)",
            Model::sum_by(counters, upstream, &["result"], any),
        ),
        (
            "sum by (profile, namespace, node) (descheduler_pods_evicted_total)",
            Model::sum_by(counters, upstream, &["profile", "namespace", "node"], any),
        ),
        (
            r#"sum(increase(descheduler_pods_evicted_total{result="success"}[$window]))"#,
            Model::sum_by(&increase, upstream, &[], is("result", "success")),
        ),
        (
            "sum by (strategy) (increase(descheduler_pods_evicted_total[$window]))",
            Model::sum_by(&increase, upstream, &["strategy"], any),
        ),
        (
            r#"sum(rate(descheduler_pods_evicted_total{result="success"}[$window]))"#,
            Model::sum_by(&increase, upstream, &[], is("result", "success"))
                .into_iter()
                .map(|(labels, value)| (labels, value / window_seconds))
                .collect(),
        ),
        (
            "sum(increase(descheduler_loop_duration_seconds_count[$window]))",
            one(&[], 2.0),
        ),
    ];
    for (query, expected) in &upstream_queries {
        assert_answer(query, &ask(query), expected);
    }
    // The runs did count: two more successes than the first run had.
    let successes = Model::sum_by(&increase, upstream, &[], is("result", "success"));
    assert!(
        successes.values().all(|n| *n >= 2.0) && !successes.is_empty(),
        "{successes:?}"
    );

    // Every query of the chart's dashboard.
    let not_keep = |l: &Labels| l.get("action").map(String::as_str) != Some("keep");
    let at_risk = |l: &Labels| l.get("class").map(String::as_str) != Some("tolerated");
    let after = |l: &Labels| at_risk(l) && l.get("when").map(String::as_str) == Some("after");
    let average = {
        let sum = Model::sum_by(&increase, "descheduler_loop_duration_seconds_sum", &[], any);
        let count = Model::sum_by(
            &increase,
            "descheduler_loop_duration_seconds_count",
            &[],
            any,
        );
        one(&[], sum[&Labels::new()] / count[&Labels::new()])
    };
    let cluster = [("cluster", CLUSTER)];
    let dashboard: BTreeMap<&str, Answer> = [
        (
            r#"time() - max by (cluster) (vsphere_descheduler_last_run_timestamp_seconds{cluster=~"$cluster"})"#,
            one(&cluster, at - finished),
        ),
        (
            r#"max by (cluster) (vsphere_descheduler_exit_code{cluster=~"$cluster"})"#,
            Model::sum_by(last, "vsphere_descheduler_exit_code", &["cluster"], any),
        ),
        (
            r#"max by (cluster, mode, version) (vsphere_descheduler_run_info{cluster=~"$cluster"})"#,
            Model::sum_by(last, "vsphere_descheduler_run_info", &["cluster", "mode", "version"], any),
        ),
        (
            r#"max by (cluster) (vsphere_descheduler_unmapped_nodes{cluster=~"$cluster"})"#,
            Model::sum_by(last, "vsphere_descheduler_unmapped_nodes", &["cluster"], any),
        ),
        (
            r#"sum by (strategy, result) (vsphere_descheduler_run_evictions{cluster=~"$cluster"})"#,
            Model::sum_by(last, "vsphere_descheduler_run_evictions", &["strategy", "result"], any),
        ),
        (
            r#"sum by (reason) (vsphere_descheduler_run_pods_skipped{cluster=~"$cluster"})"#,
            Model::sum_by(last, "vsphere_descheduler_run_pods_skipped", &["reason"], any),
        ),
        (
            r#"sum by (key) (vsphere_descheduler_run_node_label_changes{cluster=~"$cluster"})"#,
            Model::sum_by(last, "vsphere_descheduler_run_node_label_changes", &["key"], any),
        ),
        (
            r#"sum by (action, result) (vsphere_descheduler_run_drs_rule_changes{cluster=~"$cluster", action!="keep"})"#,
            Model::sum_by(last, "vsphere_descheduler_run_drs_rule_changes", &["action", "result"], not_keep),
        ),
        (
            r#"vsphere_descheduler_run_duration_seconds{cluster=~"$cluster"}"#,
            Model::raw(last, "vsphere_descheduler_run_duration_seconds"),
        ),
        (
            r#"vsphere_descheduler_exit_code{cluster=~"$cluster"}"#,
            Model::raw(last, "vsphere_descheduler_exit_code"),
        ),
        (
            r#"vsphere_descheduler_run_errors{cluster=~"$cluster"}"#,
            Model::raw(last, "vsphere_descheduler_run_errors"),
        ),
        (
            r#"sum by (kind) (vsphere_descheduler_actions_not_attempted{cluster=~"$cluster"})"#,
            Model::sum_by(last, "vsphere_descheduler_actions_not_attempted", &["kind"], any),
        ),
        (
            r#"sum(vsphere_descheduler_warnings{cluster=~"$cluster"})"#,
            Model::sum_by(last, "vsphere_descheduler_warnings", &[], any),
        ),
        (
            r#"sum by (class) (vsphere_descheduler_exposure_workloads{cluster=~"$cluster", when="after", class!="tolerated"})"#,
            Model::sum_by(last, "vsphere_descheduler_exposure_workloads", &["class"], after),
        ),
        (
            r#"sum by (class) (vsphere_descheduler_exposure_node_groups{cluster=~"$cluster", class!="tolerated"})"#,
            Model::sum_by(last, "vsphere_descheduler_exposure_node_groups", &["class"], at_risk),
        ),
        (
            r#"sum by (when) (vsphere_descheduler_exposure_workloads{cluster=~"$cluster", class!="tolerated"})"#,
            Model::sum_by(last, "vsphere_descheduler_exposure_workloads", &["when"], at_risk),
        ),
        (
            r#"sum by (strategy, result) (increase(descheduler_pods_evicted_total{cluster=~"$cluster"}[$window]))"#,
            Model::sum_by(&increase, upstream, &["strategy", "result"], any),
        ),
        (
            r#"sum by (result) (increase(vsphere_descheduler_evictions_total{cluster=~"$cluster"}[$window]))"#,
            Model::sum_by(&increase, "vsphere_descheduler_evictions_total", &["result"], any),
        ),
        (
            r#"sum by (reason) (increase(vsphere_descheduler_pods_skipped_total{cluster=~"$cluster"}[$window]))"#,
            Model::sum_by(&increase, "vsphere_descheduler_pods_skipped_total", &["reason"], any),
        ),
        (
            r#"sum(increase(descheduler_loop_duration_seconds_count{cluster=~"$cluster"}[$window]))"#,
            one(&[], 2.0),
        ),
        (
            r#"sum(increase(descheduler_loop_duration_seconds_sum{cluster=~"$cluster"}[$window])) / sum(increase(descheduler_loop_duration_seconds_count{cluster=~"$cluster"}[$window]))"#,
            average,
        ),
        (
            r#"sum by (key) (increase(vsphere_descheduler_node_label_changes_total{cluster=~"$cluster"}[$window]))"#,
            Model::sum_by(&increase, "vsphere_descheduler_node_label_changes_total", &["key"], any),
        ),
        (
            r#"sum by (action, result) (increase(vsphere_descheduler_drs_rule_changes_total{cluster=~"$cluster"}[$window]))"#,
            Model::sum_by(&increase, "vsphere_descheduler_drs_rule_changes_total", &["action", "result"], any),
        ),
        (
            r#"sum(increase(vsphere_descheduler_errors_total{cluster=~"$cluster"}[$window]))"#,
            Model::sum_by(&increase, "vsphere_descheduler_errors_total", &[], any),
        ),
        (
            r#"sum by (code) (increase(vsphere_descheduler_pods_skipped_by_code_total{cluster=~"$cluster"}[$window]))"#,
            Model::sum_by(&increase, "vsphere_descheduler_pods_skipped_by_code_total", &["code"], any),
        ),
        (
            // The runs wrote every change (their reports have no errors): no failure to count.
            r#"sum by (step, cause) (increase(vsphere_descheduler_failures_total{cluster=~"$cluster"}[$window]))"#,
            Model::sum_by(&increase, "vsphere_descheduler_failures_total", &["step", "cause"], any),
        ),
    ]
    .into_iter()
    .collect();
    let variable = "label_values(vsphere_descheduler_run_info, cluster)";
    let queries = dashboard_queries();
    for query in &queries {
        if query == variable {
            // Grafana's own function: the label's values over the series.
            let values = prometheus.label_values("cluster", "vsphere_descheduler_run_info");
            assert_eq!(values, [CLUSTER]);
            continue;
        }
        let expected = dashboard
            .get(query.as_str())
            .unwrap_or_else(|| panic!("no expectation for the dashboard's query {query}"));
        assert_answer(query, &ask(query), expected);
    }
    let asked: Vec<&str> = queries.iter().map(String::as_str).collect();
    for query in dashboard.keys() {
        assert!(
            asked.contains(query),
            "the dashboard no longer asks {query}"
        );
    }

    // Every alert expression of the chart, evaluated (not fired: that needs its `for`).
    // All three runs succeeded a moment ago, so neither failing runs nor a missing success
    // show; the pdb trend needs a day of 10-minute steps, two of which the runs' minutes do not
    // hold; the workloads at risk are those of the last report.
    assert!(reports.iter().all(|r| r["exitCode"] == 0));
    assert!(at - finished < 600.0);
    let at_risk_after: Answer = Model::sum_by(
        last,
        "vsphere_descheduler_exposure_workloads",
        &["job", "cluster"],
        after,
    )
    .into_iter()
    .filter(|(_, count)| *count > 0.0)
    .collect();
    let alerts: BTreeMap<&str, Answer> = [
        ("VsphereDeschedulerRunFailing", Answer::new()),
        ("VsphereDeschedulerNoSuccessfulRun", Answer::new()),
        ("VsphereDeschedulerPdbSkipsGrowing", Answer::new()),
        ("VsphereDeschedulerWorkloadsAtRisk", at_risk_after),
    ]
    .into_iter()
    .collect();
    let expressions = alert_expressions();
    assert_eq!(
        expressions.keys().map(String::as_str).collect::<Vec<_>>(),
        alerts.keys().copied().collect::<Vec<_>>()
    );
    for (alert, expression) in &expressions {
        assert_answer(expression, &ask(expression), &alerts[alert.as_str()]);
    }

    // The silent ones, each where it should say something.
    let ask_at = |query: &str, time: f64| {
        let query = query.replace("$cluster", CLUSTER);
        prometheus.query(&query, Some(time))
    };
    let group = [("job", "vsphere-descheduler"), ("cluster", CLUSTER)];
    // The pdb trend's operand is the last run's pdb skips (0 when it had none, not nothing):
    // what the day of 10-minute steps is taken over. Its firing over a day is
    // tests/chart/test_alerts_promtool.py's.
    let pdb_trend = &expressions["VsphereDeschedulerPdbSkipsGrowing"];
    let operand = pdb_trend
        .strip_prefix("delta(")
        .and_then(|rest| rest.split_once("[1d:10m])"))
        .map(|(operand, _)| operand)
        .unwrap_or_else(|| panic!("delta(<operand>[1d:10m]) …: {pdb_trend}"));
    let pdb_skips = Model::sum_by(
        last,
        "vsphere_descheduler_run_pods_skipped",
        &["job", "cluster"],
        is("reason", "pdb"),
    );
    let pdb_skips = if pdb_skips.is_empty() {
        one(&group, 0.0)
    } else {
        pdb_skips
    };
    assert_answer(operand, &ask(operand), &pdb_skips);

    // A run that fails: its exit code fires the failing alert, and one failure among successes
    // is no "no successful run".
    let failed = unusable_run(&["--metrics-push-url", &recorder.url]);
    assert_eq!(failed.code, 2, "{}", failed.stderr);
    let exit_code = format!(
        "vsphere_descheduler_exit_code{{job=\"vsphere-descheduler\",cluster=\"{CLUSTER}\"}}"
    );
    let failed_at = prometheus.wait_for_value(&exit_code, 2.0);
    let mut failing = labels(&group);
    failing.insert(
        "__name__".to_string(),
        "vsphere_descheduler_exit_code".to_string(),
    );
    let failing = Answer::from([(failing, 2.0)]);
    let run_failing = &expressions["VsphereDeschedulerRunFailing"];
    assert_answer(run_failing, &ask_at(run_failing, failed_at), &failing);
    let no_success = &expressions["VsphereDeschedulerNoSuccessfulRun"];
    assert_answer(no_success, &ask_at(no_success, failed_at), &Answer::new());
    // Ten minutes on with nothing pushed since (asked of a time ahead, where nothing more was
    // scraped): every step of the window sees the failed run's exit code, none a success (the
    // value is the window's best, 0).
    let silent_at = failed_at + 601.0;
    assert_answer(
        no_success,
        &ask_at(no_success, silent_at),
        &one(&group, 0.0),
    );
    assert_answer(run_failing, &ask_at(run_failing, silent_at), &Answer::new());
}
