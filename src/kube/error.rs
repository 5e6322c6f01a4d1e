//! Errors of the Kubernetes adapter. Messages name the object and what was being done; the
//! cause is only in the source chain, as a [`RequestError`]: one line naming the request, the
//! status code and the server's message (or the first line of a body that is not a `Status`), or
//! the transport problem. kube's own error text is never shown: it prints the whole `Status` in
//! Rust's debug form.

use std::fmt;

use chrono::{DateTime, Utc};

use crate::cause::{Cause, Failure};
use crate::connection::certificate::{CertificateProblem, CertificateRefusal, certificate_problem};
use crate::text::{from_server, shown};

/// Everything that can go wrong talking to the Kubernetes API server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("failed to load the Kubernetes client configuration (kubeconfig or in-cluster)")]
    Config {
        #[source]
        source: super::target::ClientConfigError,
    },
    #[error("failed to set up the Kubernetes client")]
    Client {
        #[source]
        source: ::kube::Error,
    },
    #[error("failed to list {kind}")]
    List {
        kind: &'static str,
        #[source]
        source: RequestError,
    },
    #[error("listing {kind} kept failing with expired continue tokens ({attempts} attempts)")]
    ListExpired { kind: &'static str, attempts: u32 },
    // Not naming NodeMetrics or PodMetrics: both are listed at once and either may fail first.
    #[error(
        "metrics.k8s.io is not served (HTTP {code}): is metrics-server installed and its \
         APIService available?"
    )]
    MetricsUnavailable {
        code: u16,
        #[source]
        source: RequestError,
    },
    #[error(
        "the server does not serve {group} (HTTP {code}): VM Operator is not installed, so this \
         is not a Supervisor",
        group = super::VM_OPERATOR_GROUP
    )]
    VmOperatorAbsent {
        code: u16,
        #[source]
        source: Option<RequestError>,
    },
    #[error("failed to read API group {group} from discovery")]
    Discovery {
        group: &'static str,
        #[source]
        source: RequestError,
    },
    #[error("failed to ask the API server whether {call} is allowed")]
    AccessReview {
        /// The call asked about, as `check` names it (`create pods/eviction`).
        call: String,
        #[source]
        source: RequestError,
    },
    #[error("{kind} {name} could not be read")]
    Convert {
        kind: &'static str,
        name: String,
        #[source]
        source: crate::snapshot::ConvertError,
    },
    #[error("failed to apply labels to node {node}")]
    ApplyLabels {
        node: String,
        #[source]
        source: RequestError,
    },
    #[error("node {node} was deleted or replaced since it was listed; its labels were not changed")]
    NodeReplaced { node: String },
    #[error("failed to remove label {key} from node {node}")]
    RemoveLabel {
        node: String,
        key: String,
        #[source]
        source: RequestError,
    },
    #[error("failed to record event {name} in namespace {namespace}")]
    Event {
        namespace: String,
        name: String,
        #[source]
        source: RequestError,
    },
    #[error("failed to read lease {namespace}/{name}")]
    ReadLease {
        namespace: String,
        name: String,
        #[source]
        source: RequestError,
    },
    #[error("failed to write lease {namespace}/{name}")]
    WriteLease {
        namespace: String,
        name: String,
        #[source]
        source: RequestError,
    },
    #[error("failed to read the eviction history's ConfigMap {namespace}/{name}")]
    ReadHistory {
        namespace: String,
        name: String,
        #[source]
        source: RequestError,
    },
    #[error("failed to write the eviction history's ConfigMap {namespace}/{name}")]
    WriteHistory {
        namespace: String,
        name: String,
        #[source]
        source: RequestError,
    },
    #[error(
        "the eviction history's ConfigMap {namespace}/{name} was written by someone else since \
         this run read it; not writing over it"
    )]
    HistoryChanged { namespace: String, name: String },
    #[error(
        "another run holds lease {namespace}/{name} (holder {holder}, until {until}); \
         not acting at the same time"
    )]
    LockHeld {
        namespace: String,
        name: String,
        holder: String,
        until: DateTime<Utc>,
    },
    #[error("another run took lease {namespace}/{name} at the same moment; not acting")]
    LockRace { namespace: String, name: String },
    #[error("the run lock was not released within {limit:?}")]
    ReleaseTimedOut { limit: std::time::Duration },
    #[error("lease {namespace}/{name} was taken over by another run; stopped acting")]
    LockLost { namespace: String, name: String },
    #[error(
        "lease {namespace}/{name} could not be renewed for {unrenewed_seconds}s, so another run \
         may take it; stopped acting"
    )]
    LockExpired {
        namespace: String,
        name: String,
        unrenewed_seconds: u64,
    },
}

impl Error {
    /// Whether the run lost its claim on the lock (taken over, or not renewed in time): no
    /// further write may start. The run's outcomes say so by the same [`Cause`].
    pub fn is_lock_loss(&self) -> bool {
        self.cause() == Cause::LockLost
    }
}

/// One request to the API server, as messages name it: `GET /api/v1/nodes`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    pub method: &'static str,
    /// The path, without the query.
    pub path: String,
}

impl Call {
    pub fn new(method: &'static str, path: impl Into<String>) -> Call {
        Call {
            method,
            path: path.into(),
        }
    }

    /// The request to the object `name` of a collection whose URL is `collection`.
    pub fn object(method: &'static str, collection: &str, name: &str) -> Call {
        Call::new(method, format!("{collection}/{name}"))
    }

    /// Wraps kube's error of this request.
    pub fn failed(&self, error: ::kube::Error) -> RequestError {
        RequestError(Box::new((self.clone(), error)))
    }
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.method, shown(&self.path))
    }
}

/// A request that failed: which, and kube's error, shown as one line (see [`describe`]). It has
/// no source: the line holds everything worth saying, and kube's own text is a debug dump.
/// Boxed: errors travel in `Result`s of calls that succeed far more often.
#[derive(Debug)]
pub struct RequestError(Box<(Call, ::kube::Error)>);

impl RequestError {
    /// The request that failed.
    pub fn call(&self) -> &Call {
        &self.0.0
    }

    /// kube's error.
    pub fn error(&self) -> &::kube::Error {
        &self.0.1
    }

    /// The API server's `Status`, when it answered.
    pub fn status(&self) -> Option<&::kube::core::Status> {
        api_status(self.error())
    }
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (call, error) = self.0.as_ref();
        match error {
            ::kube::Error::Api(_) => write!(f, "{call} answered {}", describe(error)),
            _ => write!(f, "{call} failed: {}", describe(error)),
        }
    }
}

impl std::error::Error for RequestError {}

/// The reason kube-client (5.0, `handle_api_errors`) gives the `Status` it makes up when an
/// error body is not a `Status` (plain text from an aggregated API that is not served, HTML from
/// a proxy, nothing): its message is then the body. The API server's own reasons are
/// `CamelCase` words, so this never names a real answer.
pub const UNPARSED_BODY_REASON: &str = "Failed to parse error data";

/// The API server's `Status` behind an error, when it answered with one.
pub fn api_status(error: &::kube::Error) -> Option<&::kube::core::Status> {
    match error {
        ::kube::Error::Api(status) => Some(status),
        _ => None,
    }
}

/// Whether a failed request is worth sending again: the server was overloaded or briefly
/// unavailable, or the connection failed. Never used for writes whose repetition could act twice.
pub fn is_transient(error: &::kube::Error) -> bool {
    match error {
        ::kube::Error::Api(status) => matches!(status.code, 429 | 500 | 502 | 503 | 504),
        ::kube::Error::HyperError(_) | ::kube::Error::Service(_) => true,
        _ => false,
    }
}

/// A failed request's answer in one line, for reports: `HTTP 404 NotFound: <the server's
/// message>`; `HTTP 404: <the first line of the body>` when the body was not a `Status`
/// (`HTTP 503 with an empty body` when there was none); a refused certificate in words, with the
/// kubeconfig field that fixes it; else the transport problem. Outside text is escaped and cut:
/// the server's own message within a bound of its own ([`from_server`], which keeps its end, as a
/// policy's denial names the refused key last), everything else as [`shown`]. Never holds
/// credentials (requests carry them in headers, which errors do not show).
pub fn describe(error: &::kube::Error) -> String {
    if let Some(problem) = certificate_problem(error) {
        return format!(
            "the API server's TLS certificate was refused: {}",
            refusal(problem)
        );
    }
    match error {
        ::kube::Error::Api(status) if status.reason == UNPARSED_BODY_REASON => {
            match first_line_of_text(&status.message) {
                Some(line) => format!("HTTP {}: {}", status.code, shown(&line)),
                None => format!("HTTP {} with an empty body", status.code),
            }
        }
        ::kube::Error::Api(status) => {
            let message = if status.message.is_empty() {
                "no message"
            } else {
                status.message.as_str()
            };
            if status.reason.is_empty() {
                format!("HTTP {}: {}", status.code, from_server(message))
            } else {
                format!(
                    "HTTP {} {}: {}",
                    status.code,
                    shown(&status.reason),
                    from_server(message)
                )
            }
        }
        ::kube::Error::HyperError(source) => causes(source),
        ::kube::Error::Service(source) => causes(source.as_ref()),
        ::kube::Error::SerdeError(source) => {
            format!(
                "the answer could not be read as the expected object ({})",
                source_position(source)
            )
        }
        other => causes(other),
    }
}

/// A refused certificate of the API server, with what fixes it: the API server's trust is the
/// kubeconfig's cluster entry (in-cluster, the service account's CA), chosen with
/// `--kubeconfig` and `--context`. Short enough that the whole chain of a failed request fits
/// the 500 characters of a report line.
fn refusal(problem: CertificateProblem) -> CertificateRefusal {
    let remedy = match problem {
        CertificateProblem::UnknownIssuer => Some(
            "give that CA's certificate in the kubeconfig cluster's certificate-authority-data \
             or certificate-authority, chosen with --kubeconfig and --context \
             (insecure-skip-tls-verify: true trusts any server: labs only)",
        ),
        CertificateProblem::CaAsServerCertificate => Some(
            "the API server needs a certificate issued by a CA, named in the kubeconfig \
             cluster's certificate-authority-data or certificate-authority (chosen with \
             --kubeconfig and --context)",
        ),
        CertificateProblem::Expired => Some("renew the API server's certificate"),
        CertificateProblem::NotValidYet => {
            Some("check the clocks of this machine and of the API server")
        }
        CertificateProblem::WrongName => Some(
            "address the API server by a name its certificate holds (the kubeconfig cluster's \
             server), or set that name as the cluster's tls-server-name",
        ),
        CertificateProblem::Revoked
        | CertificateProblem::BadSignature
        | CertificateProblem::Unreadable
        | CertificateProblem::Refused => None,
    };
    CertificateRefusal { problem, remedy }
}

/// The first line of a body that says something: plain text as it is; in an HTML error page
/// (a proxy's), the first line with text outside the tags, which is its title.
fn first_line_of_text(body: &str) -> Option<String> {
    let html = body.trim_start().starts_with('<');
    body.lines()
        .map(|line| {
            if html {
                without_tags(line)
            } else {
                line.to_string()
            }
        })
        .map(|line| line.trim().to_string())
        .find(|line| !line.is_empty())
}

fn without_tags(line: &str) -> String {
    let mut text = String::with_capacity(line.len());
    let mut in_tag = false;
    for character in line.chars() {
        match character {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            other if !in_tag => text.push(other),
            _ => {}
        }
    }
    text
}

/// Where in the answer JSON decoding stopped.
fn source_position(error: &serde_json::Error) -> String {
    format!("line {}, column {}", error.line(), error.column())
}

/// An error and its causes, `: `-separated, leaving out a cause whose text the previous one
/// already ends with (transport errors often repeat their source).
fn causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.ends_with(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    shown(&text).to_string()
}

impl Error {
    /// What kind of failure this is (see [`Cause`]).
    pub fn cause(&self) -> Cause {
        use Error as E;
        match self {
            E::Config { .. } => Cause::Config,
            E::Client { source } => Cause::of_kube_client(source),
            E::List { source, .. }
            | E::MetricsUnavailable { source, .. }
            | E::AccessReview { source, .. }
            | E::Discovery { source, .. }
            | E::ApplyLabels { source, .. }
            | E::RemoveLabel { source, .. }
            | E::Event { source, .. }
            | E::ReadLease { source, .. }
            | E::WriteLease { source, .. }
            | E::ReadHistory { source, .. }
            | E::WriteHistory { source, .. } => Cause::of_kube_client(source.error()),
            E::HistoryChanged { .. } => Cause::Conflict,
            // Every continue token expired (HTTP 410 each time).
            E::ListExpired { .. } => Cause::NotFound,
            E::Convert { .. } => Cause::Unreadable,
            E::VmOperatorAbsent { .. } => Cause::NotFound,
            // The node listed is not there any more (deleted, perhaps recreated under its name).
            E::NodeReplaced { .. } => Cause::NotFound,
            E::LockHeld { .. } | E::LockRace { .. } => Cause::Conflict,
            E::ReleaseTimedOut { .. } => Cause::Timeout,
            E::LockLost { .. } | E::LockExpired { .. } => Cause::LockLost,
        }
    }

    /// The failure, with this error's chain as the report shows it.
    pub fn failure(&self) -> Failure {
        Failure::of(self.cause(), self)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// Issue 31: `Other(OtherError(CaUsedAsEndEntity))` was all a run said of such a server.
    #[test]
    fn a_refused_certificate_of_the_api_server_names_the_kubeconfig_field_that_fixes_it() {
        let ca_as_leaf = rustls::Error::InvalidCertificate(rustls::CertificateError::Other(
            rustls::OtherError(Arc::new(webpki::Error::CaUsedAsEndEntity)),
        ));
        let connect = std::io::Error::other(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            ca_as_leaf,
        ));
        let text = describe(&::kube::Error::Service(Box::new(connect)));
        assert!(
            text.starts_with(
                "the API server's TLS certificate was refused: it is a CA certificate \
                 (basicConstraints CA:TRUE), which cannot identify a server: "
            ),
            "{text}"
        );
        assert!(text.contains("certificate-authority-data"), "{text}");
        assert!(text.contains("--kubeconfig and --context"), "{text}");
        assert!(!text.contains("CaUsedAsEndEntity"), "{text}");
        let unknown = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let text = describe(&::kube::Error::Service(Box::new(std::io::Error::other(
            unknown,
        ))));
        assert!(text.contains("insecure-skip-tls-verify"), "{text}");
    }
}
