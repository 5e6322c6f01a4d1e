//! The real Prometheus Pushgateway (Debian's `prometheus-pushgateway`) as a child process on
//! 127.0.0.1, killed on drop; `scripts/install-pushgateway.sh` installs it when missing, and a
//! test that needs it fails, never skips, when it cannot be had.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;

use super::served::Served;

const INSTALL_HINT: &str = "the Pushgateway is missing; it needs Debian's prometheus-pushgateway \
     (`apt-get install -y prometheus-pushgateway`, or `scripts/install-pushgateway.sh`)";

/// How the Pushgateway is reached: its web config (`--web.config.file`) and what a client
/// needs to read it back.
#[derive(Clone, Debug, Default)]
pub struct Web {
    /// Basic auth: the user, the password, and its bcrypt hash for the web config.
    pub basic_auth: Option<(String, String, String)>,
    /// https: the server's certificate and key (PEM files) and the CA that signed it.
    pub tls: Option<Tls>,
}

/// The files of an https Pushgateway.
#[derive(Clone, Debug)]
pub struct Tls {
    pub certificate: PathBuf,
    pub key: PathBuf,
    pub ca: PathBuf,
}

/// A running Pushgateway.
pub struct Pushgateway {
    served: Served,
    web: Web,
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
    /// A Pushgateway anyone may push to, over plain http.
    pub fn start() -> Pushgateway {
        Pushgateway::start_with(Web::default())
    }

    /// A Pushgateway that asks for basic auth: `username` and `password_bcrypt` (a bcrypt hash
    /// of the password, as its `--web.config.file` wants); `password` is for reading it back.
    pub fn start_with_basic_auth(
        username: &str,
        password: &str,
        password_bcrypt: &str,
    ) -> Pushgateway {
        Pushgateway::start_with(Web {
            basic_auth: Some((
                username.to_string(),
                password.to_string(),
                password_bcrypt.to_string(),
            )),
            tls: None,
        })
    }

    pub fn start_with(web: Web) -> Pushgateway {
        let args = |address: &str, dir: &Path| {
            let mut args = vec![
                format!("--web.listen-address={address}"),
                "--persistence.file=".to_string(),
            ];
            if let Some(config) = web_config(&web) {
                let path = dir.join("web-config.yml");
                std::fs::write(&path, config).expect("write the web config");
                args.push(format!("--web.config.file={}", path.display()));
            }
            args
        };
        let ready = |address: &str| matches!(get(address, &web, "/-/ready"), Ok((200, _)));
        let served = Served::start("the Pushgateway", binary(), INSTALL_HINT, args, ready);
        Pushgateway { served, web }
    }

    /// `http(s)://127.0.0.1:<port>`, what `--metrics-push-url` takes.
    pub fn url(&self) -> String {
        url(&self.served.address, &self.web)
    }

    /// `127.0.0.1:<port>`.
    pub fn address(&self) -> &str {
        &self.served.address
    }

    /// The series of pushed groups on `/metrics`, by name and labels as the Pushgateway writes
    /// them (`name{a="1",b="2"}`), without its own `push_*`, `pushgateway_*`, `go_*` and
    /// `process_*` series.
    pub fn pushed_series(&self) -> BTreeMap<String, f64> {
        let (status, body) =
            get(&self.served.address, &self.web, "/metrics").expect("the Pushgateway answers");
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
        let (_, body) =
            get(&self.served.address, &self.web, "/metrics").expect("the Pushgateway answers");
        parse_series(&body).into_iter().find_map(|(series, value)| {
            (series.starts_with("push_time_seconds{")
                && series.contains(&format!("cluster=\"{cluster}\"")))
            .then_some(value)
        })
    }
}

/// One GET of the Pushgateway at `address`, with the web config's credentials and trusting its
/// CA; the status and body.
fn get(address: &str, web: &Web, path: &str) -> Result<(u16, String), reqwest::Error> {
    let ca = web.tls.as_ref().map(|tls| tls.ca.as_path());
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .tls_backend_preconfigured(trusting(ca))
        .build()?;
    let mut request = client.get(format!("{}{path}", url(address, web)));
    if let Some((username, password, _)) = &web.basic_auth {
        request = request.basic_auth(username, Some(password));
    }
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(async {
            let response = request.send().await?;
            let status = response.status().as_u16();
            Ok((status, response.text().await?))
        })
}

/// `http(s)://address`, by whether `web` serves TLS.
fn url(address: &str, web: &Web) -> String {
    let scheme = if web.tls.is_some() { "https" } else { "http" };
    format!("{scheme}://{address}")
}

/// The `--web.config.file` of `web`, if it needs one.
fn web_config(web: &Web) -> Option<String> {
    let mut config = String::new();
    if let Some((username, _, bcrypt)) = &web.basic_auth {
        config.push_str(&format!("basic_auth_users:\n  {username}: '{bcrypt}'\n"));
    }
    if let Some(tls) = &web.tls {
        config.push_str(&format!(
            "tls_server_config:\n  cert_file: {}\n  key_file: {}\n",
            tls.certificate.display(),
            tls.key.display()
        ));
    }
    (!config.is_empty()).then_some(config)
}

/// A rustls client configuration that trusts only the certificates of `ca` (none without one:
/// plain http needs no trust, but reqwest wants a TLS backend all the same).
pub fn trusting(ca: Option<&Path>) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    if let Some(ca) = ca {
        for certificate in CertificateDer::pem_file_iter(ca).expect("the CA file") {
            roots
                .add(certificate.expect("a PEM certificate"))
                .expect("a usable CA certificate");
        }
    }
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth()
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

/// A proxy in front of a Pushgateway that forwards every request as it came and keeps the body
/// of each PUT: exactly what a run pushed. Stops when dropped.
pub struct Recorder {
    /// `http://127.0.0.1:<port>`, what `--metrics-push-url` takes.
    pub url: String,
    pushes: Arc<std::sync::Mutex<Vec<String>>>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// What the proxy forwards with.
struct Forward {
    target: String,
    client: reqwest::Client,
    pushes: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Recorder {
    /// A recorder forwarding to `pushgateway` (plain http).
    pub fn in_front_of(pushgateway: &Pushgateway) -> Recorder {
        let pushes = Arc::new(std::sync::Mutex::new(Vec::new()));
        let forward = Arc::new(Forward {
            target: pushgateway.url(),
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .tls_backend_preconfigured(trusting(None))
                .build()
                .expect("a client"),
            pushes: pushes.clone(),
        });
        let (ready_sender, ready) = std::sync::mpsc::channel();
        let (shutdown, shutdown_signal) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for the recorder");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind the recorder");
                ready_sender
                    .send(listener.local_addr().expect("a bound address"))
                    .expect("the starter waits");
                let app = axum::Router::new()
                    .fallback(forward_one)
                    .with_state(forward);
                axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = shutdown_signal.await;
                    })
                    .await
                    .expect("the recorder serves");
            });
        });
        let bound = ready
            .recv_timeout(Duration::from_secs(10))
            .expect("the recorder starts");
        Recorder {
            url: format!("http://{bound}"),
            pushes,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    /// The body of every PUT so far, in order.
    pub fn pushes(&self) -> Vec<String> {
        self.pushes.lock().expect("never poisoned").clone()
    }
}

/// Forwards one request: method, path and query, body, and the headers a push sends.
async fn forward_one(
    axum::extract::State(forward): axum::extract::State<Arc<Forward>>,
    method: axum::http::Method,
    uri: axum::http::Uri,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> (axum::http::StatusCode, String) {
    if method == axum::http::Method::PUT {
        let text = String::from_utf8_lossy(&body).into_owned();
        forward.pushes.lock().expect("never poisoned").push(text);
    }
    let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let mut request = forward
        .client
        .request(method, format!("{}{path}", forward.target))
        .body(body);
    for name in [
        axum::http::header::CONTENT_TYPE,
        axum::http::header::AUTHORIZATION,
    ] {
        if let Some(value) = headers.get(&name) {
            request = request.header(name, value);
        }
    }
    match request.send().await {
        Ok(response) => {
            let status = response.status();
            (status, response.text().await.unwrap_or_default())
        }
        Err(error) => (axum::http::StatusCode::BAD_GATEWAY, error.to_string()),
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
