//! The real Prometheus Pushgateway (Debian's `prometheus-pushgateway`) as a child process on
//! 127.0.0.1, killed on drop; `scripts/install-pushgateway.sh` installs it when missing, and a
//! test that needs it fails, never skips, when it cannot be had.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use base64::Engine as _;

/// How long the Pushgateway may take to answer `/-/ready`.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

const INSTALL_HINT: &str = "the Pushgateway is missing; it needs Debian's prometheus-pushgateway \
     (`apt-get install -y prometheus-pushgateway`, or `scripts/install-pushgateway.sh`)";

/// A running Pushgateway.
pub struct Pushgateway {
    child: Child,
    /// `127.0.0.1:<port>`.
    pub address: String,
    /// `Authorization` header value for reading it back, when it asks for basic auth.
    authorization: Option<String>,
    _dir: tempfile::TempDir,
}

/// The binary, installed once per test process when missing.
fn binary() -> &'static str {
    static BINARY: OnceLock<String> = OnceLock::new();
    BINARY.get_or_init(|| {
        let binary =
            std::env::var("PUSHGATEWAY_BIN").unwrap_or_else(|_| "prometheus-pushgateway".into());
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let status = Command::new("bash")
            .arg(root.join("scripts/install-pushgateway.sh"))
            .status();
        match status {
            Ok(status) if status.success() => binary,
            Ok(status) => panic!("{INSTALL_HINT} (install-pushgateway.sh exited with {status})"),
            Err(error) => panic!("{INSTALL_HINT} (could not run install-pushgateway.sh: {error})"),
        }
    })
}

impl Pushgateway {
    /// A Pushgateway anyone may push to.
    pub fn start() -> Pushgateway {
        Pushgateway::start_with(None)
    }

    /// A Pushgateway that asks for basic auth: `username` and `password_bcrypt` (a bcrypt hash
    /// of the password, as its `--web.config.file` wants); `password` is for reading it back.
    pub fn start_with_basic_auth(
        username: &str,
        password: &str,
        password_bcrypt: &str,
    ) -> Pushgateway {
        let web_config = format!("basic_auth_users:\n  {username}: '{password_bcrypt}'\n");
        Pushgateway::start_with(Some((&web_config, username, password)))
    }

    fn start_with(web: Option<(&str, &str, &str)>) -> Pushgateway {
        let binary = binary();
        // A port the kernel just gave out and took back; another process taking it in between
        // makes the start fail with its log, which is then retried on a new port.
        for _ in 0..3 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|listener| listener.local_addr())
                .expect("a free port")
                .port();
            let address = format!("127.0.0.1:{port}");
            let dir = tempfile::tempdir().expect("a temporary directory");
            let log = dir.path().join("pushgateway.log");
            let mut command = Command::new(binary);
            command
                .arg(format!("--web.listen-address={address}"))
                .arg("--persistence.file=")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&log).expect("create the log file"));
            if let Some((web_config, _, _)) = web {
                let path = dir.path().join("web-config.yml");
                std::fs::write(&path, web_config).expect("write the web config");
                command.arg(format!("--web.config.file={}", path.display()));
            }
            let child = command.spawn().unwrap_or_else(|error| {
                panic!("{INSTALL_HINT} (failed to start {binary}: {error})")
            });
            let mut pushgateway = Pushgateway {
                child,
                address,
                authorization: web.map(|(_, username, password)| {
                    format!(
                        "Basic {}",
                        base64::engine::general_purpose::STANDARD
                            .encode(format!("{username}:{password}"))
                    )
                }),
                _dir: dir,
            };
            if pushgateway.wait_until_ready() {
                return pushgateway;
            }
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            assert!(
                log.contains("address already in use"),
                "the Pushgateway exited before it was ready; its log:\n{log}"
            );
        }
        panic!("no free port for the Pushgateway after three tries");
    }

    /// Polls `/-/ready` until it answers 200; false when the process exited first.
    fn wait_until_ready(&mut self) -> bool {
        let started = Instant::now();
        loop {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            if let Ok((200, _)) = self.get("/-/ready") {
                return true;
            }
            assert!(
                started.elapsed() < READY_TIMEOUT,
                "the Pushgateway at {} was not ready within {READY_TIMEOUT:?}",
                self.address
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `http://127.0.0.1:<port>`, what `--metrics-push-url` takes.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// The series of pushed groups on `/metrics`, by name and labels as the Pushgateway writes
    /// them (`name{a="1",b="2"}`), without its own `push_*`, `pushgateway_*`, `go_*` and
    /// `process_*` series.
    pub fn pushed_series(&self) -> BTreeMap<String, f64> {
        let (status, body) = self.get("/metrics").expect("the Pushgateway answers");
        assert_eq!(status, 200, "{body}");
        parse_series(&body)
            .into_iter()
            .filter(|(series, _)| {
                series.starts_with("descheduler_") || series.starts_with("vsphere_descheduler_")
            })
            .collect()
    }

    /// The time of the last successful push of the group `cluster`, from the Pushgateway's own
    /// `push_time_seconds`.
    pub fn push_time(&self, cluster: &str) -> Option<f64> {
        let (_, body) = self.get("/metrics").expect("the Pushgateway answers");
        parse_series(&body).into_iter().find_map(|(series, value)| {
            (series.starts_with("push_time_seconds{")
                && series.contains(&format!("cluster=\"{cluster}\"")))
            .then_some(value)
        })
    }

    /// One HTTP/1.0 GET; the status and the body.
    fn get(&self, path: &str) -> std::io::Result<(u16, String)> {
        let mut stream = TcpStream::connect(&self.address)?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        let authorization = self
            .authorization
            .as_ref()
            .map(|value| format!("Authorization: {value}\r\n"))
            .unwrap_or_default();
        write!(
            stream,
            "GET {path} HTTP/1.0\r\nHost: {}\r\n{authorization}\r\n",
            self.address
        )?;
        let mut response = String::new();
        stream.read_to_string(&mut response)?;
        let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or(0);
        Ok((status, body.to_string()))
    }
}

impl Drop for Pushgateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The samples of a text exposition: series (name and labels, as written) to value.
pub fn parse_series(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            Some((series.to_string(), value.parse().ok()?))
        })
        .collect()
}
