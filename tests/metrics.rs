//! The run's metrics in a real Pushgateway (Debian's `prometheus-pushgateway`): the binary runs
//! against the lab (the vCenter simulator and the fake Kubernetes API server) with
//! `--metrics-push-url`, and the test reads the series back from the Pushgateway's `/metrics`.
//! Also: a Pushgateway that cannot be reached is a warning in the log (the push follows the
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
use support::pushgateway::{Pushgateway, Tls, Web, parse_series};
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

/// What the report says, as docs/metrics.md's metric list counts it, worked out from the JSON
/// report: every pushed series but the run's duration and end time.
fn counted_from_report(report: &Value) -> BTreeMap<String, f64> {
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
            "descheduler_pods_evicted_total",
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
            "vsphere_descheduler_pods_skipped",
            &[
                ("strategy", text(&skip["strategy"])),
                ("reason", text(&skip["reason"])),
            ],
        );
    }
    for change in entries("labelChanges") {
        count(
            "vsphere_descheduler_node_label_changes",
            &[("key", text(&change["key"]))],
        );
    }
    for rule in entries("drsRules") {
        count(
            "vsphere_descheduler_drs_rule_changes",
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
    counts.insert(series("vsphere_descheduler_errors", &[]), length("errors"));
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

#[test]
fn a_run_against_the_lab_leaves_its_metrics_in_the_pushgateway_and_the_next_run_replaces_them() {
    let pushgateway = Pushgateway::start();
    let lab = Lab::start("drs-moved-worker");
    lab.simulator.move_vm("worker-b", ESXI_41);
    let before = now_seconds();
    let run = lab.run(&["--metrics-push-url", &pushgateway.url()]);
    let after = now_seconds();
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.warnings().is_empty(), "{:?}", run.warnings());

    let pushed = pushgateway.pushed_series();
    // The story: worker-b's VM moved next to worker-a's, its label follows, one web replica goes.
    let namespace = run.report["evictions"][0]["namespace"]
        .as_str()
        .expect("one eviction");
    let evicted = series(
        "descheduler_pods_evicted_total",
        &[
            ("strategy", ANTI_AFFINITY),
            ("namespace", namespace),
            ("result", "evicted"),
        ],
    );
    assert_eq!(pushed.get(&evicted), Some(&1.0), "{pushed:#?}");
    let relabelled = series(
        "vsphere_descheduler_node_label_changes",
        &[("key", "vsphere-descheduler.io/host")],
    );
    assert!(
        pushed.get(&relabelled).is_some_and(|n| *n >= 1.0),
        "{pushed:#?}"
    );
    assert_eq!(
        pushed.get(&series("vsphere_descheduler_exit_code", &[])),
        Some(&0.0)
    );

    // Every series says what the report says; the two about time lie within the run.
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
    assert_eq!(counted, counted_from_report(&run.report));
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
        assert!(
            listed.contains(&name),
            "{name} is not in metrics/families.txt"
        );
    }

    // A dry run right after finds nothing to do; its push replaces the whole group, so the
    // first run's eviction is no longer there.
    let first_push = pushgateway.push_time(CLUSTER).expect("a push time");
    let dry_run = lab.run(&["--dry-run", "--metrics-push-url", &pushgateway.url()]);
    assert_eq!(dry_run.code, 0, "{}", dry_run.stderr);
    let pushed = pushgateway.pushed_series();
    assert!(
        family(&pushed, "descheduler_pods_evicted_total").is_empty(),
        "{pushed:#?}"
    );
    let info = series(
        "vsphere_descheduler_run_info",
        &[("mode", "dry-run"), ("version", env!("CARGO_PKG_VERSION"))],
    );
    assert_eq!(pushed.get(&info), Some(&1.0), "{pushed:#?}");
    assert!(pushgateway.push_time(CLUSTER).expect("a push time") >= first_push);
}

#[test]
fn a_pushgateway_that_cannot_be_reached_is_a_warning_and_the_exit_code_stays() {
    // A port that was free a moment ago: nothing listens there.
    let dead = {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
        format!("http://{}", listener.local_addr().expect("its address"))
    };
    let lab = Lab::start("drs-moved-worker");
    let run = lab.run(&["--metrics-push-url", &dead]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.report["exitCode"], 0);
    // Pushed after the report is printed: the failure is in the log only.
    assert!(run.warnings().is_empty(), "{:?}", run.warnings());
    let failures = run.push_failures();
    assert_eq!(failures.len(), 1, "{}", run.stderr);
    assert!(
        failures[0].contains("failed to send the metrics to Pushgateway 127.0.0.1:"),
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
        failures.len() == 1 && failures[0].contains("refused the metrics with HTTP 401"),
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
        series_pushed.get(&series("vsphere_descheduler_errors", &[])),
        Some(&1.0)
    );
}

#[test]
fn a_token_file_is_sent_as_a_bearer_token_in_a_put_of_the_text_format() {
    // A one-request HTTP server standing in for a Pushgateway behind a token-checking proxy.
    let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
    let url = format!("http://{}", listener.local_addr().expect("its address"));
    let received = std::thread::spawn(move || {
        let (stream, _) = listener.accept().expect("the push arrives");
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
            .expect("a content length");
        let mut body = vec![0; length];
        reader.read_exact(&mut body).expect("the body");
        reader
            .get_mut()
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .expect("answer");
        (head, String::from_utf8(body).expect("text"))
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

    let (head, body) = received.join().expect("the listener");
    assert_eq!(
        head[0],
        "PUT /metrics/job/vsphere-descheduler/cluster/lab HTTP/1.1"
    );
    let headers: Vec<String> = head[1..].iter().map(|line| line.to_lowercase()).collect();
    assert!(
        headers.contains(&"authorization: bearer t0ken-for-pushing".to_string()),
        "{headers:?}"
    );
    assert!(
        headers.contains(&format!("content-type: {}", metrics::CONTENT_TYPE)),
        "{headers:?}"
    );
    let samples = parse_series(&body);
    assert_eq!(
        samples.get("vsphere_descheduler_exit_code"),
        Some(&2.0),
        "{body}"
    );
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
