//! Errors of the Kubernetes adapter. Messages name the object and what was being done; the
//! cause (the API server's `Status`, a transport error) is only in the source chain.

use chrono::{DateTime, Utc};

/// Everything that can go wrong talking to the Kubernetes API server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("failed to load the Kubernetes client configuration (kubeconfig or in-cluster)")]
    Config {
        #[source]
        source: super::target::ConfigError,
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
        source: ::kube::Error,
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
        source: ::kube::Error,
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
        source: ::kube::Error,
    },
    #[error("node {node} was deleted or replaced since it was listed; its labels were not changed")]
    NodeReplaced { node: String },
    #[error("failed to remove label {key} from node {node}")]
    RemoveLabel {
        node: String,
        key: String,
        #[source]
        source: ::kube::Error,
    },
    #[error("failed to record event {name} in namespace {namespace}")]
    Event {
        namespace: String,
        name: String,
        #[source]
        source: ::kube::Error,
    },
    #[error("failed to read lease {namespace}/{name}")]
    ReadLease {
        namespace: String,
        name: String,
        #[source]
        source: ::kube::Error,
    },
    #[error("failed to write lease {namespace}/{name}")]
    WriteLease {
        namespace: String,
        name: String,
        #[source]
        source: ::kube::Error,
    },
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

/// A short description of a failed request for reports: the server's message, or the transport
/// problem. Never holds credentials (requests carry them in headers, which errors do not show).
pub fn describe(error: &::kube::Error) -> String {
    match error {
        ::kube::Error::Api(status) => {
            let message = if status.message.is_empty() {
                "no message"
            } else {
                status.message.as_str()
            };
            if status.reason.is_empty() {
                format!("HTTP {}: {message}", status.code)
            } else {
                format!("HTTP {} {}: {message}", status.code, status.reason)
            }
        }
        other => {
            let mut text = other.to_string();
            let mut source = std::error::Error::source(other);
            while let Some(cause) = source {
                text.push_str(": ");
                text.push_str(&cause.to_string());
                source = cause.source();
            }
            text
        }
    }
}
