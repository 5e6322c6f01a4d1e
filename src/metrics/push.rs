//! Pushing a run's metrics to a Prometheus Pushgateway: one GET of the Pushgateway's metrics
//! (`/api/v1/metrics`), for the running totals of the group's last push, then one PUT that
//! replaces the group `job="vsphere-descheduler", cluster="<clusterName>"` with this run's
//! gauges and the totals plus this run's counts ([`super::totals`]). No series of an earlier
//! run lingers but the counters, which go on counting.
//!
//! When the totals cannot be read, nothing is pushed: pushing this run's counts as totals would
//! lower the counters, and a counter that goes down and up again loses what it went up by.
//! The run's metrics are lost then, never counted twice.
//!
//! Credentials come only from files (a mounted Secret), never from the URL or the policy, and
//! are never shown: Debug redacts them, errors do not hold them. TLS is verified as vCenter's
//! is (the system's roots plus an optional private CA). The push comes after the report is
//! printed, so one that fails is a warning in the log, never a failed run: the report on stdout
//! and the exit code are the run's verdict.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use reqwest::Url;
use reqwest::header::CONTENT_TYPE;
use secrecy::{ExposeSecret, SecretString};

use super::RunTiming;
use super::totals::{NotMetrics, Totals};
use crate::cause::{Cause, Failure};
use crate::connection::{self, SecretProblem, UrlProblem, checked_url, read_secret_file};
use crate::report::{Report, ReportWarning};

/// The `job` of the group every run replaces.
pub const JOB: &str = "vsphere-descheduler";

/// The most of a refusal's body kept in the warning (Pushgateway explains in one line).
const MAX_REFUSAL: usize = 300;

/// Why metrics could not be pushed, or the push settings are unusable.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid --metrics-push-url {url:?}: {problem}")]
    InvalidUrl { url: String, problem: &'static str },
    /// The URL itself is not echoed: it holds credentials.
    #[error(
        "--metrics-push-url must not contain a user name or password; put them in \
         --metrics-push-credentials-dir"
    )]
    CredentialsInUrl,
    #[error("failed to read Pushgateway credential file {path}")]
    ReadCredential {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("Pushgateway credential file {path} is empty or not UTF-8")]
    UnusableCredential { path: PathBuf },
    #[error(
        "Pushgateway credentials directory {dir} holds neither a token file nor username and \
         password files"
    )]
    NoCredentials { dir: PathBuf },
    #[error(
        "Pushgateway credentials directory {dir} holds a token file and a username or password \
         file; keep the one the Pushgateway expects"
    )]
    AmbiguousCredentials { dir: PathBuf },
    #[error("cannot set up TLS for Pushgateway {server}")]
    Tls {
        server: String,
        #[source]
        source: crate::connection::Error,
    },
    #[error("cannot set up the HTTP client for Pushgateway {server}")]
    HttpClient {
        server: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("Pushgateway {server} did not answer within {}s", limit.as_secs_f64())]
    TimedOut { server: String, limit: Duration },
    #[error("failed to send the metrics to Pushgateway {server}")]
    Send {
        server: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("cannot reach Pushgateway {server}")]
    Unreachable {
        server: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("Pushgateway {server} answered its readiness check with HTTP {status}: {body}")]
    NotReady {
        server: String,
        status: u16,
        body: String,
    },
    #[error("Pushgateway {server} refused the metrics with HTTP {status}: {body}")]
    Refused {
        server: String,
        status: u16,
        body: String,
    },
    #[error("failed to read the running totals from Pushgateway {server}, so nothing was pushed")]
    ReadTotals {
        server: String,
        #[source]
        source: reqwest::Error,
    },
    #[error(
        "Pushgateway {server} refused to show its metrics (the running totals) with HTTP \
         {status}, so nothing was pushed: {body}"
    )]
    TotalsRefused {
        server: String,
        status: u16,
        body: String,
    },
    #[error(
        "Pushgateway {server} answered /api/v1/metrics with something other than its metrics, \
         so the running totals are unknown and nothing was pushed"
    )]
    TotalsUnreadable { server: String },
}

impl Error {
    /// The kind of this failure, from the settings, the transport or the Pushgateway's status.
    pub fn cause(&self) -> Cause {
        match self {
            Error::InvalidUrl { .. }
            | Error::CredentialsInUrl
            | Error::ReadCredential { .. }
            | Error::UnusableCredential { .. }
            | Error::NoCredentials { .. }
            | Error::AmbiguousCredentials { .. }
            | Error::HttpClient { .. } => Cause::Config,
            Error::Tls { .. } => Cause::Tls,
            Error::TimedOut { .. } => Cause::Timeout,
            Error::Send { source, .. }
            | Error::Unreachable { source, .. }
            | Error::ReadTotals { source, .. } => {
                crate::cause::transport(source).unwrap_or(Cause::Connection)
            }
            Error::NotReady { status, .. }
            | Error::Refused { status, .. }
            | Error::TotalsRefused { status, .. } => Cause::of_http(*status),
            Error::TotalsUnreadable { .. } => Cause::Unreadable,
        }
    }

    /// The failure, with this error's chain as a report or a log line shows it.
    pub fn failure(&self) -> Failure {
        Failure::of(self.cause(), self)
    }
}

/// The Pushgateway's answer to its readiness check: its HTTP status and the start of its body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Readiness {
    pub status: u16,
    pub body: String,
}

/// How the Pushgateway wants to be authenticated. Debug shows the user name only.
#[derive(Clone, Debug)]
enum Auth {
    Basic {
        username: String,
        password: SecretString,
    },
    Bearer(SecretString),
}

/// The push settings of one run as the command line gives them, before any file is read; built
/// where the run's other settings are resolved (`crate::settings`).
#[derive(Clone, Debug, Default)]
pub struct PushSettings {
    /// `--metrics-push-url`, as given.
    pub url: String,
    /// `--metrics-push-credentials-dir`.
    pub credentials_dir: Option<PathBuf>,
    /// `--metrics-push-ca-file`.
    pub ca_file: Option<PathBuf>,
}

/// Where and how to push, resolved from the command line.
#[derive(Clone, Debug)]
pub struct Pushgateway {
    /// The Pushgateway's base URL (a path prefix kept), without a trailing `/`.
    url: Url,
    auth: Option<Auth>,
    ca_file: Option<PathBuf>,
}

impl Pushgateway {
    /// The Pushgateway of `settings`, its URL checked and its credentials read.
    pub fn resolve(settings: &PushSettings) -> Result<Pushgateway, Error> {
        let auth = match &settings.credentials_dir {
            Some(dir) => Some(read_auth(dir)?),
            None => None,
        };
        Ok(Pushgateway {
            url: base_url(&settings.url)?,
            auth,
            ca_file: settings.ca_file.clone(),
        })
    }

    /// `<url>/metrics/job/vsphere-descheduler[/cluster/<clusterName>]`: the group's grouping
    /// key. Without a cluster name the group is `job="vsphere-descheduler"` alone, which
    /// Prometheus reads as `cluster=""`.
    pub fn group_url(&self, cluster: Option<&str>) -> Url {
        let mut url = self.url.clone();
        {
            let mut segments = url
                .path_segments_mut()
                .expect("an http(s) URL has path segments");
            segments.pop_if_empty();
            segments.extend(["metrics"]);
            segments.extend(grouping_segments("job", JOB));
            if let Some(cluster) = cluster {
                segments.extend(grouping_segments("cluster", cluster));
            }
        }
        url
    }

    /// `host[:port]` of the Pushgateway, for messages.
    fn server(&self) -> String {
        let host = self.url.host_str().unwrap_or_default();
        match self.url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_string(),
        }
    }

    /// Pushes `report`'s metrics, for a run of `timing`, into the group of `cluster`, within
    /// `limit`. A failure is a log line, never more: the report is printed before the push.
    pub async fn push_report(
        &self,
        report: &Report,
        cluster: Option<&str>,
        timing: &RunTiming,
        limit: Duration,
    ) {
        match self.push(report, cluster, timing, limit).await {
            Ok(()) => tracing::info!(server = %self.server(), "pushed the run's metrics"),
            Err(error) => {
                let cause = error.failure();
                tracing::warn!("{}", ReportWarning::MetricsNotPushed { cause });
            }
        }
    }

    /// Reads the group's running totals, then replaces the group with `report`'s metrics and
    /// the totals plus this run's counts; both within `limit`.
    pub async fn push(
        &self,
        report: &Report,
        cluster: Option<&str>,
        timing: &RunTiming,
        limit: Duration,
    ) -> Result<(), Error> {
        let server = self.server();
        let http = self.http_client(limit)?;
        let timed_out = |_| Error::TimedOut {
            server: server.clone(),
            limit,
        };
        tokio::time::timeout(limit, async {
            let carried = self.read_totals(&http, cluster, limit).await?;
            let body = super::metrics(report, timing, &carried);
            self.put(&http, cluster, body, limit).await
        })
        .await
        .map_err(timed_out)?
    }

    /// Whether the Pushgateway answers its readiness endpoint (`<url>/-/ready`, 200 when ready)
    /// to a request with the push's credentials, within `limit`; what it answered.
    pub async fn ready(&self, limit: Duration) -> Result<Readiness, Error> {
        let server = self.server();
        let http = self.http_client(limit)?;
        let request = self.authorized(http.get(self.ready_url()));
        let response = request.send().await.map_err(|source| {
            request_failed(&server, limit, source, |server, source| {
                Error::Unreachable { server, source }
            })
        })?;
        let status = response.status();
        let text: String = response
            .text()
            .await
            .unwrap_or_default()
            .trim()
            .chars()
            .take(MAX_REFUSAL)
            .collect();
        if status.is_success() {
            return Ok(Readiness {
                status: status.as_u16(),
                body: text,
            });
        }
        Err(Error::NotReady {
            server,
            status: status.as_u16(),
            body: text,
        })
    }

    /// The Pushgateway's URL as configured, for reports (it never holds credentials).
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// `<url>/-/ready`.
    pub fn ready_url(&self) -> Url {
        let mut url = self.url.clone();
        url.path_segments_mut()
            .expect("an http(s) URL has path segments")
            .pop_if_empty()
            .extend(["-", "ready"]);
        url
    }

    /// The client of one push: TLS as configured, every request within `limit`, no redirects.
    fn http_client(&self, limit: Duration) -> Result<reqwest::Client, Error> {
        let server = self.server();
        let tls = connection::client_config(self.ca_file.as_deref(), false).map_err(|source| {
            Error::Tls {
                server: server.clone(),
                source,
            }
        })?;
        reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .timeout(limit)
            .connect_timeout(limit)
            .user_agent(crate::identity::USER_AGENT)
            // A redirect would carry the metrics, and the credentials, somewhere not configured.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|source| Error::HttpClient { server, source })
    }

    /// `request` with the configured credentials.
    fn authorized(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.auth {
            Some(Auth::Basic { username, password }) => {
                request.basic_auth(username, Some(password.expose_secret()))
            }
            Some(Auth::Bearer(token)) => request.bearer_auth(token.expose_secret()),
            None => request,
        }
    }

    /// The totals of the group's last push, from the Pushgateway's `/api/v1/metrics`: none when
    /// the group is not there (yet, or any more).
    async fn read_totals(
        &self,
        http: &reqwest::Client,
        cluster: Option<&str>,
        limit: Duration,
    ) -> Result<Totals, Error> {
        let server = self.server();
        let failed = |source| {
            request_failed(&server, limit, source, |server, source| Error::ReadTotals {
                server,
                source,
            })
        };
        let response = self
            .authorized(http.get(self.api_url()))
            .send()
            .await
            .map_err(failed)?;
        let status = response.status();
        let text = response.text().await.map_err(failed)?;
        if !status.is_success() {
            return Err(Error::TotalsRefused {
                server,
                status: status.as_u16(),
                body: refusal(&text),
            });
        }
        let unreadable = || Error::TotalsUnreadable {
            server: server.clone(),
        };
        let answer: serde_json::Value = serde_json::from_str(&text).map_err(|_| unreadable())?;
        Totals::from_pushgateway(&answer, &grouping_key(cluster)).map_err(|NotMetrics| unreadable())
    }

    /// One PUT of `body` to the group's URL.
    async fn put(
        &self,
        http: &reqwest::Client,
        cluster: Option<&str>,
        body: String,
        limit: Duration,
    ) -> Result<(), Error> {
        let server = self.server();
        let request = http
            .put(self.group_url(cluster))
            .header(CONTENT_TYPE, super::CONTENT_TYPE)
            .body(body);
        let response = self.authorized(request).send().await.map_err(|source| {
            request_failed(&server, limit, source, |server, source| Error::Send {
                server,
                source,
            })
        })?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        let text = response.text().await.unwrap_or_default();
        Err(Error::Refused {
            server,
            status: status.as_u16(),
            body: refusal(&text),
        })
    }

    /// `<url>/api/v1/metrics`: every group's metrics, as JSON.
    fn api_url(&self) -> Url {
        let mut url = self.url.clone();
        url.path_segments_mut()
            .expect("an http(s) URL has path segments")
            .pop_if_empty()
            .extend(["api", "v1", "metrics"]);
        url
    }
}

/// The grouping key of the group of `cluster`, as the Pushgateway's JSON names it.
fn grouping_key(cluster: Option<&str>) -> BTreeMap<String, String> {
    let mut key = BTreeMap::from([("job".to_string(), JOB.to_string())]);
    if let Some(cluster) = cluster {
        key.insert("cluster".to_string(), cluster.to_string());
    }
    key
}

/// A request to `server` that failed: out of time after `limit`, or else the error `failed`
/// makes of the server and the cause.
fn request_failed(
    server: &str,
    limit: Duration,
    source: reqwest::Error,
    failed: fn(String, reqwest::Error) -> Error,
) -> Error {
    let server = server.to_string();
    if source.is_timeout() {
        Error::TimedOut { server, limit }
    } else {
        failed(server, source)
    }
}

/// The start of a refusal's body (Pushgateway explains in one line).
fn refusal(body: &str) -> String {
    body.trim().chars().take(MAX_REFUSAL).collect()
}

/// How long the push may take: the request timeout, but at most `after_stop` past the run's
/// deadline (`deadline_left` is what remains of it), and at most `after_stop` after a stop
/// signal (Kubernetes kills the pod its grace period after SIGTERM). The caller chooses
/// `after_stop`: the run gives the push as long as releasing its lock may take.
pub fn push_limit(
    request_timeout: Duration,
    deadline_left: Option<Duration>,
    stopped_by_signal: bool,
    after_stop: Duration,
) -> Duration {
    let mut limit = request_timeout;
    if let Some(left) = deadline_left {
        limit = limit.min(left + after_stop);
    }
    if stopped_by_signal {
        limit = limit.min(after_stop);
    }
    limit
}

/// Checks `--metrics-push-url`: http or https, a host, no credentials, no query or fragment.
fn base_url(text: &str) -> Result<Url, Error> {
    let invalid = |problem| Error::InvalidUrl {
        url: text.trim().to_string(),
        problem,
    };
    checked_url(text, &["http", "https"]).map_err(|problem| match problem {
        UrlProblem::Credentials => Error::CredentialsInUrl,
        UrlProblem::NotAUrl => {
            invalid("it is not a URL such as http://pushgateway.monitoring:9091")
        }
        UrlProblem::Scheme => invalid("only http and https are supported"),
        UrlProblem::NoHost => invalid("it has no host"),
        UrlProblem::QueryOrFragment => invalid("it has a query or fragment"),
    })
}

/// One label of the grouping key as path segments: `name/value`, or `name@base64/<value in
/// URL-safe base64>` when the value cannot be a path segment (it holds a `/`, or is empty,
/// which Pushgateway writes as `=`).
fn grouping_segments(name: &str, value: &str) -> [String; 2] {
    if value.is_empty() {
        [format!("{name}@base64"), "=".to_string()]
    } else if value.contains('/') {
        [
            format!("{name}@base64"),
            base64::engine::general_purpose::URL_SAFE.encode(value),
        ]
    } else {
        [name.to_string(), value.to_string()]
    }
}

/// `token` (a bearer token) or `username` and `password` (basic auth) from `dir`.
fn read_auth(dir: &Path) -> Result<Auth, Error> {
    let token = read_optional_secret(&dir.join("token"))?;
    let username = read_optional_secret(&dir.join("username"))?;
    let password = read_optional_secret(&dir.join("password"))?;
    match (token, username, password) {
        (Some(token), None, None) => Ok(Auth::Bearer(SecretString::from(token))),
        (None, Some(username), Some(password)) => Ok(Auth::Basic {
            username,
            password: SecretString::from(password),
        }),
        (None, _, _) => Err(Error::NoCredentials {
            dir: dir.to_path_buf(),
        }),
        (Some(_), _, _) => Err(Error::AmbiguousCredentials {
            dir: dir.to_path_buf(),
        }),
    }
}

/// The secret file's text (see [`read_secret_file`]), or `None` when there is no such file.
fn read_optional_secret(path: &Path) -> Result<Option<String>, Error> {
    match read_secret_file(path) {
        Ok(text) => Ok(Some(text)),
        Err(SecretProblem::Unreadable(error)) if error.kind() == std::io::ErrorKind::NotFound => {
            Ok(None)
        }
        Err(SecretProblem::Unreadable(source)) => Err(Error::ReadCredential {
            path: path.to_path_buf(),
            source,
        }),
        Err(SecretProblem::NotUtf8 | SecretProblem::Empty) => Err(Error::UnusableCredential {
            path: path.to_path_buf(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(url: &str, credentials: Option<&Path>) -> PushSettings {
        PushSettings {
            url: url.to_string(),
            credentials_dir: credentials.map(Path::to_path_buf),
            ca_file: None,
        }
    }

    fn gateway(url: &str) -> Pushgateway {
        Pushgateway::resolve(&settings(url, None)).expect("a valid URL")
    }

    #[test]
    fn the_group_is_the_job_and_the_cluster_under_any_path_prefix() {
        let group = |url: &str, cluster| gateway(url).group_url(cluster).to_string();
        assert_eq!(
            group("http://pgw.monitoring:9091", Some("prod-east")),
            "http://pgw.monitoring:9091/metrics/job/vsphere-descheduler/cluster/prod-east"
        );
        assert_eq!(
            group("https://gw.example.com/pushgateway/", Some("prod-east")),
            "https://gw.example.com/pushgateway/metrics/job/vsphere-descheduler/cluster/prod-east"
        );
        assert_eq!(
            group("http://pgw:9091", None),
            "http://pgw:9091/metrics/job/vsphere-descheduler"
        );
    }

    #[test]
    fn the_running_totals_are_read_from_the_metrics_api_under_any_path_prefix() {
        assert_eq!(
            gateway("http://pgw.monitoring:9091").api_url().to_string(),
            "http://pgw.monitoring:9091/api/v1/metrics"
        );
        assert_eq!(
            gateway("https://gw.example.com/pushgateway/")
                .api_url()
                .to_string(),
            "https://gw.example.com/pushgateway/api/v1/metrics"
        );
        assert_eq!(
            grouping_key(Some("prod-east")),
            BTreeMap::from([
                ("cluster".to_string(), "prod-east".to_string()),
                ("job".to_string(), JOB.to_string()),
            ])
        );
        assert_eq!(
            grouping_key(None),
            BTreeMap::from([("job".to_string(), JOB.to_string())])
        );
    }

    #[test]
    fn values_that_cannot_be_a_path_segment_use_the_base64_form() {
        assert_eq!(grouping_segments("cluster", "prod"), ["cluster", "prod"]);
        assert_eq!(
            grouping_segments("cluster", "a/b"),
            ["cluster@base64", "YS9i"]
        );
        // URL-safe: '/' and '+' of standard base64 would break the path.
        assert_eq!(
            grouping_segments("cluster", "??>/"),
            ["cluster@base64", "Pz8-Lw=="]
        );
        assert_eq!(grouping_segments("cluster", ""), ["cluster@base64", "="]);
    }

    #[test]
    fn urls_without_a_host_with_credentials_or_another_scheme_are_refused() {
        let error = |url: &str| Pushgateway::resolve(&settings(url, None)).expect_err(url);
        assert!(matches!(
            error("http://user:secret@pgw:9091"),
            Error::CredentialsInUrl
        ));
        assert!(
            !error("http://user:secret@pgw:9091")
                .to_string()
                .contains("secret")
        );
        assert!(matches!(error("ftp://pgw"), Error::InvalidUrl { .. }));
        assert!(matches!(error("pgw:9091"), Error::InvalidUrl { .. }));
        assert!(matches!(
            error("http://pgw:9091/?a=b"),
            Error::InvalidUrl { .. }
        ));
        assert!(matches!(error("not a url"), Error::InvalidUrl { .. }));
    }

    #[test]
    fn credentials_are_a_token_or_a_user_and_password_and_never_shown() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let resolve = || Pushgateway::resolve(&settings("http://pgw:9091", Some(dir.path())));
        assert!(matches!(resolve(), Err(Error::NoCredentials { .. })));

        std::fs::write(dir.path().join("token"), "tok-en-secret\n").expect("write");
        let bearer = resolve().expect("a token");
        assert!(
            matches!(&bearer.auth, Some(Auth::Bearer(token)) if token.expose_secret() == "tok-en-secret")
        );
        assert!(!format!("{bearer:?}").contains("tok-en-secret"));

        std::fs::write(dir.path().join("username"), "pusher\n").expect("write");
        assert!(matches!(resolve(), Err(Error::AmbiguousCredentials { .. })));

        std::fs::remove_file(dir.path().join("token")).expect("remove");
        assert!(matches!(resolve(), Err(Error::NoCredentials { .. })));
        std::fs::write(dir.path().join("password"), "pass-word-secret\r\n").expect("write");
        let basic = resolve().expect("a user and password");
        assert!(matches!(
            &basic.auth,
            Some(Auth::Basic { username, password })
                if username == "pusher" && password.expose_secret() == "pass-word-secret"
        ));
        let shown = format!("{basic:?}");
        assert!(
            shown.contains("pusher") && !shown.contains("pass-word-secret"),
            "{shown}"
        );

        std::fs::write(dir.path().join("password"), "\n").expect("write");
        assert!(matches!(resolve(), Err(Error::UnusableCredential { .. })));
    }

    #[test]
    fn the_push_ends_a_few_seconds_after_the_deadline_or_a_signal() {
        let timeout = Duration::from_secs(30);
        let after_stop = Duration::from_secs(5);
        let limit = |left, signal| push_limit(timeout, left, signal, after_stop);
        assert_eq!(limit(None, false), timeout);
        assert_eq!(limit(Some(Duration::from_secs(60)), false), timeout);
        assert_eq!(
            limit(Some(Duration::from_secs(2)), false),
            Duration::from_secs(2) + after_stop
        );
        assert_eq!(limit(Some(Duration::ZERO), false), after_stop);
        assert_eq!(limit(None, true), after_stop);
        assert_eq!(
            push_limit(Duration::from_secs(1), None, true, after_stop),
            Duration::from_secs(1)
        );
    }

    #[tokio::test]
    async fn a_ca_file_that_cannot_be_read_fails_the_push_naming_it() {
        let mut pushgateway = gateway("https://127.0.0.1:9");
        pushgateway.ca_file = Some("/nonexistent/pushgateway-ca.pem".into());
        let timing = RunTiming {
            duration: Duration::from_secs(1),
            finished: chrono::Utc::now(),
        };
        let report = Report::empty(crate::report::Mode::Run);
        let error = pushgateway
            .push(&report, Some("lab"), &timing, Duration::from_secs(1))
            .await
            .expect_err("no CA file");
        assert!(matches!(error, Error::Tls { .. }), "{error}");
        assert!(
            error
                .failure()
                .text
                .contains("/nonexistent/pushgateway-ca.pem")
        );
    }
}
