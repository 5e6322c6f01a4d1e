//! The real Prometheus server of Debian's `prometheus` package as a child process on 127.0.0.1,
//! scraping one target every second with `honor_labels: true` (as a Pushgateway must be
//! scraped), killed on drop; its HTTP API for queries; and the package's `promtool`.
//! `scripts/install-prometheus.sh` installs the package when missing, and a test that needs it
//! fails, never skips, when it cannot be had.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::served::Served;

/// How long a pushed value may take to be scraped.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

const INSTALL_HINT: &str = "Prometheus is missing; it needs Debian's prometheus \
     (`apt-get install -y prometheus`, or `scripts/install-prometheus.sh`)";

/// The server and promtool, installed once per test process when missing.
fn binaries() -> &'static (String, String) {
    static BINARIES: OnceLock<(String, String)> = OnceLock::new();
    BINARIES.get_or_init(|| {
        let server = std::env::var("PROMETHEUS_BIN").unwrap_or_else(|_| "prometheus".into());
        let promtool = std::env::var("PROMTOOL_BIN").unwrap_or_else(|_| "promtool".into());
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let status = Command::new("bash")
            .arg(root.join("scripts/install-prometheus.sh"))
            .status();
        match status {
            Ok(status) if status.success() => (server, promtool),
            Ok(status) => panic!("{INSTALL_HINT} (install-prometheus.sh exited with {status})"),
            Err(error) => panic!("{INSTALL_HINT} (could not run install-prometheus.sh: {error})"),
        }
    })
}

/// `promtool check metrics` of `text` (what a run pushes): its complaints, if any.
pub fn check_metrics(text: &str) -> Result<(), String> {
    let (_, promtool) = binaries();
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("{INSTALL_HINT} (failed to start {promtool}: {error})"));
    child
        .stdin
        .take()
        .expect("a pipe")
        .write_all(text.as_bytes())
        .expect("promtool reads the metrics");
    let output = child.wait_with_output().expect("promtool ends");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    if output.status.success() && said.trim().is_empty() {
        Ok(())
    } else {
        Err(said)
    }
}

/// One series of a query's answer: its labels and value.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// A running Prometheus server.
pub struct Prometheus {
    served: Served,
}

impl Prometheus {
    /// A server scraping `target` (`host:port`) every second, as the chart asks Prometheus to
    /// scrape the Pushgateway: with `honor_labels: true`, so `job` and `cluster` stay the
    /// pushed ones.
    pub fn scraping(target: &str) -> Prometheus {
        let (binary, _) = binaries();
        let args = |address: &str, dir: &Path| {
            let config = dir.join("prometheus.yml");
            std::fs::write(
                &config,
                format!(
                    "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  \
                     evaluation_interval: 1s\nscrape_configs:\n- job_name: pushgateway\n  \
                     honor_labels: true\n  static_configs:\n  - targets: ['{target}']\n"
                ),
            )
            .expect("write the configuration");
            vec![
                format!("--config.file={}", config.display()),
                format!("--storage.tsdb.path={}", dir.join("data").display()),
                format!("--web.listen-address={address}"),
            ]
        };
        let ready = |address: &str| matches!(get(address, "/-/ready", &[]), Ok((200, _)));
        let served = Served::start("Prometheus", binary, INSTALL_HINT, args, ready);
        Prometheus { served }
    }

    /// The instant vector (or scalar, as one unlabelled sample) `expr` evaluates to at `at`
    /// (seconds since the epoch, millisecond precision), or now.
    pub fn query(&self, expr: &str, at: Option<f64>) -> Vec<Sample> {
        let time = at.map(|at| format!("{at:.3}"));
        let mut parameters = vec![("query", expr)];
        if let Some(time) = &time {
            parameters.push(("time", time));
        }
        let data = self.api("/api/v1/query", &parameters);
        let value = |pair: &Value| -> f64 {
            pair[1]
                .as_str()
                .and_then(|text| text.parse().ok())
                .unwrap_or_else(|| panic!("a value: {pair}"))
        };
        match data["resultType"].as_str() {
            Some("vector") => data["result"]
                .as_array()
                .expect("a vector")
                .iter()
                .map(|sample| Sample {
                    labels: serde_json::from_value(sample["metric"].clone()).expect("labels"),
                    value: value(&sample["value"]),
                })
                .collect(),
            Some("scalar") => vec![Sample {
                labels: BTreeMap::new(),
                value: value(&data["result"]),
            }],
            other => panic!("{expr}: an answer of type {other:?}"),
        }
    }

    /// The values of `label` over the series `selector` selects.
    pub fn label_values(&self, label: &str, selector: &str) -> Vec<String> {
        let data = self.api(
            &format!("/api/v1/label/{label}/values"),
            &[("match[]", selector)],
        );
        serde_json::from_value(data).expect("label values")
    }

    /// Polls `expr` (one series) until its value is `value`; the time of the sample that showed
    /// it first (seconds since the epoch).
    pub fn wait_for_value(&self, expr: &str, value: f64) -> f64 {
        let started = Instant::now();
        loop {
            if let [sample] = self.query(expr, None).as_slice()
                && sample.value == value
            {
                return self.sample_time(expr);
            }
            assert!(
                started.elapsed() < READY_TIMEOUT,
                "Prometheus did not scrape {expr} = {value} within {READY_TIMEOUT:?}: {:?}",
                self.query(expr, None)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Polls until `expr` (one series) has a sample later than `after`; that sample's time.
    pub fn wait_for_sample_after(&self, expr: &str, after: f64) -> f64 {
        let started = Instant::now();
        loop {
            let time = self.sample_time(expr);
            if time > after {
                return time;
            }
            assert!(
                started.elapsed() < READY_TIMEOUT,
                "Prometheus did not scrape {expr} again within {READY_TIMEOUT:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The time of the latest sample of `expr` (one series), in seconds since the epoch.
    fn sample_time(&self, expr: &str) -> f64 {
        match self.query(&format!("timestamp({expr})"), None).as_slice() {
            [sample] => sample.value,
            other => panic!("timestamp({expr}): {other:?}"),
        }
    }

    /// The `data` of a successful API answer.
    fn api(&self, path: &str, parameters: &[(&str, &str)]) -> Value {
        let (status, body) =
            get(&self.served.address, path, parameters).expect("Prometheus answers");
        let answer: Value = serde_json::from_str(&body).expect("JSON");
        assert!(
            status == 200 && answer["status"] == "success",
            "{path} {parameters:?}: HTTP {status} {body}"
        );
        answer["data"].clone()
    }
}

/// One GET of the Prometheus at `address`; the status and body.
fn get(address: &str, path: &str, parameters: &[(&str, &str)]) -> Result<(u16, String), String> {
    let url = reqwest::Url::parse_with_params(&format!("http://{address}{path}"), parameters)
        .map_err(|error| error.to_string())?;
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(async {
            let client = reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .tls_backend_preconfigured(super::pushgateway::trusting(None))
                .build()
                .map_err(|error| error.to_string())?;
            let response = client.get(url).send().await.map_err(|e| e.to_string())?;
            let status = response.status().as_u16();
            let body = response.text().await.map_err(|e| e.to_string())?;
            Ok((status, body))
        })
}
