//! What kind of failure an action or a step met, derived once from the adapters' typed errors
//! (the API server's status code and reason, vCenter's fault type and HTTP status, the transport
//! error's kind, the run lock's state), never from a message. The verdict and metrics read the
//! kind; the report shows the error chain, kept beside it as it always was.

use std::fmt;

use crate::connection::certificate::certificate_problem;
use crate::{error_chain, kube, vsphere};

/// The kind of a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cause {
    /// A request, a task or a wait ran out of time.
    Timeout,
    /// The credentials were refused or the session ended (HTTP 401, `NotAuthenticated`,
    /// `InvalidLogin`).
    Unauthorized,
    /// The identity may not do this (HTTP 403, `NoPermission`), a PodDisruptionBudget's
    /// refusal of a broken budget included.
    Forbidden,
    /// The object is not there (HTTP 404, `ManagedObjectNotFound`).
    NotFound,
    /// The object changed under the request (HTTP 409, `ConcurrentAccess`), or another run holds
    /// the run lock.
    Conflict,
    /// The server asks to come back later (HTTP 429), a PodDisruptionBudget's refusal included.
    TooManyRequests,
    /// The server found the request invalid (HTTP 400, 422, `InvalidArgument`).
    Invalid,
    /// The server failed (HTTP 5xx other than a timeout).
    ServerError,
    /// Any other refusal the server answered with: another HTTP status or vim25 fault.
    Refused,
    /// The run lock was taken over or could not be renewed in time.
    LockLost,
    /// The connection could not be made or broke off.
    Connection,
    /// The TLS handshake failed, a refused certificate included.
    Tls,
    /// The answer could not be read.
    Unreadable,
    /// The run was stopped (a signal or its deadline) before the answer came.
    Stopped,
    /// The local setup: client configuration, credentials, the trusted CA file.
    Config,
    /// Anything else that went wrong on this side.
    Other,
}

impl Cause {
    /// Every cause, in order.
    pub const ALL: [Cause; 16] = [
        Cause::Timeout,
        Cause::Unauthorized,
        Cause::Forbidden,
        Cause::NotFound,
        Cause::Conflict,
        Cause::TooManyRequests,
        Cause::Invalid,
        Cause::ServerError,
        Cause::Refused,
        Cause::LockLost,
        Cause::Connection,
        Cause::Tls,
        Cause::Unreadable,
        Cause::Stopped,
        Cause::Config,
        Cause::Other,
    ];

    /// Its name in snake case, as a metric label would hold it.
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::Timeout => "timeout",
            Cause::Unauthorized => "unauthorized",
            Cause::Forbidden => "forbidden",
            Cause::NotFound => "not_found",
            Cause::Conflict => "conflict",
            Cause::TooManyRequests => "too_many_requests",
            Cause::Invalid => "invalid",
            Cause::ServerError => "server_error",
            Cause::Refused => "refused",
            Cause::LockLost => "lock_lost",
            Cause::Connection => "connection",
            Cause::Tls => "tls",
            Cause::Unreadable => "unreadable",
            Cause::Stopped => "stopped",
            Cause::Config => "config",
            Cause::Other => "other",
        }
    }

    /// The kind of an HTTP error status. A 504, and the API server's `Timeout` reason, are a
    /// timeout: the server gave up waiting, not failed.
    pub fn of_http(code: u16) -> Cause {
        match code {
            401 => Cause::Unauthorized,
            403 => Cause::Forbidden,
            404 | 410 => Cause::NotFound,
            409 => Cause::Conflict,
            429 => Cause::TooManyRequests,
            400 | 422 => Cause::Invalid,
            408 | 504 => Cause::Timeout,
            500..=599 => Cause::ServerError,
            _ => Cause::Refused,
        }
    }

    /// The kind of an error of the Kubernetes adapter.
    pub fn of_kube(error: &kube::Error) -> Cause {
        use kube::Error as E;
        match error {
            E::Config { .. } => Cause::Config,
            E::Client { source } => Cause::of_kube_client(source),
            E::List { source, .. }
            | E::MetricsUnavailable { source, .. }
            | E::AccessReview { source, .. }
            | E::ApplyLabels { source, .. }
            | E::RemoveLabel { source, .. }
            | E::Event { source, .. }
            | E::ReadLease { source, .. }
            | E::WriteLease { source, .. } => Cause::of_kube_client(source.error()),
            // Every continue token expired (HTTP 410 each time).
            E::ListExpired { .. } => Cause::NotFound,
            E::Convert { .. } => Cause::Unreadable,
            // The node listed is not there any more (deleted, perhaps recreated under its name).
            E::NodeReplaced { .. } => Cause::NotFound,
            E::LockHeld { .. } | E::LockRace { .. } => Cause::Conflict,
            E::ReleaseTimedOut { .. } => Cause::Timeout,
            E::LockLost { .. } | E::LockExpired { .. } => Cause::LockLost,
        }
    }

    /// The kind of kube's own error of one request: the API server's status when it answered,
    /// else the transport problem's kind.
    pub fn of_kube_client(error: &::kube::Error) -> Cause {
        if certificate_problem(error).is_some() {
            return Cause::Tls;
        }
        match error {
            ::kube::Error::Api(status) if status.reason == "Timeout" => Cause::Timeout,
            // kube-client makes up a `Status` when the body is not one; its code is still the
            // server's.
            ::kube::Error::Api(status) => Cause::of_http(status.code),
            ::kube::Error::SerdeError(_) => Cause::Unreadable,
            ::kube::Error::HyperError(_) | ::kube::Error::Service(_) => {
                transport(error).unwrap_or(Cause::Connection)
            }
            other => transport(other).unwrap_or(Cause::Other),
        }
    }

    /// The kind of an error of the vSphere adapter.
    pub fn of_vsphere(error: &vsphere::Error) -> Cause {
        use vsphere::Error as E;
        match error {
            E::MissingCredential { .. }
            | E::EmptyCredential { .. }
            | E::ReadCredential { .. }
            | E::CredentialNotUtf8 { .. }
            | E::CredentialsInServerAddress
            | E::InvalidServer { .. }
            | E::Trust(_)
            | E::HttpClient { .. } => Cause::Config,
            E::Tls { .. } | E::UntrustedCertificate { .. } => Cause::Tls,
            E::Request { source, .. } if source.is_timeout() => Cause::Timeout,
            E::Request { source, .. } => transport(source).unwrap_or(Cause::Connection),
            E::Timeout { .. } | E::TaskTimeout { .. } => Cause::Timeout,
            E::Status { status, .. } => Cause::of_http(*status),
            E::Response { .. } => Cause::Unreadable,
            E::Fault { fault, .. } | E::Login { fault, .. } | E::Task { fault, .. } => {
                Cause::of_fault(fault)
            }
            E::TaskNotAwaited { .. } => Cause::Stopped,
            E::NoAuthorizationManager { .. } => Cause::Refused,
            E::MissingProperty {
                fault: Some(fault), ..
            } => Cause::of_fault(fault),
            E::MissingProperty { fault: None, .. } => Cause::Unreadable,
        }
    }

    /// The kind of a vim25 fault, by its type.
    pub fn of_fault(fault: &vsphere::Fault) -> Cause {
        match fault.name.as_str() {
            "NoPermission" => Cause::Forbidden,
            "NotAuthenticated" | "InvalidLogin" => Cause::Unauthorized,
            "ManagedObjectNotFound" => Cause::NotFound,
            "ConcurrentAccess" => Cause::Conflict,
            "InvalidArgument" | "InvalidRequest" => Cause::Invalid,
            "Timedout" => Cause::Timeout,
            "RequestCanceled" => Cause::Stopped,
            _ => Cause::Refused,
        }
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A transport error's kind, from the error types in its chain: TLS when rustls failed, a
/// timeout when an I/O error timed out; `None` when neither is in it.
fn transport(error: &(dyn std::error::Error + 'static)) -> Option<Cause> {
    let mut current = Some(error);
    while let Some(error) = current {
        let mut inner: &(dyn std::error::Error + 'static) = error;
        loop {
            if inner.is::<rustls::Error>() {
                return Some(Cause::Tls);
            }
            let Some(io) = inner.downcast_ref::<std::io::Error>() else {
                break;
            };
            if io.kind() == std::io::ErrorKind::TimedOut {
                return Some(Cause::Timeout);
            }
            match io.get_ref() {
                Some(wrapped) => inner = wrapped,
                None => break,
            }
        }
        current = error.source();
    }
    None
}

/// A failure: its kind, and the error chain that tells it, as the report shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub cause: Cause,
    pub text: String,
}

impl Failure {
    pub fn new(cause: Cause, text: impl Into<String>) -> Failure {
        Failure {
            cause,
            text: text.into(),
        }
    }

    /// An error of the Kubernetes adapter, with its chain.
    pub fn of_kube(error: &kube::Error) -> Failure {
        Failure::new(Cause::of_kube(error), error_chain(error))
    }

    /// An error of the vSphere adapter, with its chain.
    pub fn of_vsphere(error: &vsphere::Error) -> Failure {
        Failure::new(Cause::of_vsphere(error), error_chain(error))
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use serde_json::{Value, json};

    use super::*;
    use crate::kube::Call;

    /// kube's error for an error body exactly as the API server sends it, as the adapter wraps
    /// it for a label apply.
    fn answered(body: Value) -> kube::Error {
        let status: ::kube::core::Status = serde_json::from_value(body).expect("a Status body");
        kube::Error::ApplyLabels {
            node: "worker-a".to_string(),
            source: Call::new("PATCH", "/api/v1/nodes/worker-a")
                .failed(::kube::Error::Api(Box::new(status))),
        }
    }

    fn status(code: u16, reason: &str, message: &str) -> Value {
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code})
    }

    /// kube's error when the request could not be carried: `source` as the connector gives it.
    fn unsent(source: std::io::Error) -> kube::Error {
        kube::Error::ReadLease {
            namespace: "ops".to_string(),
            name: "vsphere-descheduler".to_string(),
            source: Call::new(
                "GET",
                "/apis/coordination.k8s.io/v1/namespaces/ops/leases/x",
            )
            .failed(::kube::Error::Service(Box::new(source))),
        }
    }

    #[test]
    fn each_answer_of_the_api_server_becomes_its_cause() {
        let answers = [
            (
                status(
                    403,
                    "Forbidden",
                    "nodes \"worker-a\" is forbidden: User \"x\" cannot patch resource \"nodes\"",
                ),
                Cause::Forbidden,
            ),
            (
                status(
                    409,
                    "Conflict",
                    "Operation cannot be fulfilled on nodes \"worker-a\": the object has been \
                     modified",
                ),
                Cause::Conflict,
            ),
            (
                status(404, "NotFound", "nodes \"worker-a\" not found"),
                Cause::NotFound,
            ),
            (
                status(
                    429,
                    "TooManyRequests",
                    "too many requests, please try again later",
                ),
                Cause::TooManyRequests,
            ),
            (
                status(500, "InternalError", "Internal error occurred: etcdserver"),
                Cause::ServerError,
            ),
            (
                status(503, "ServiceUnavailable", "the server is currently unable"),
                Cause::ServerError,
            ),
            (
                status(
                    504,
                    "Timeout",
                    "Timeout: request did not complete within 60s",
                ),
                Cause::Timeout,
            ),
            (
                status(401, "Unauthorized", "Unauthorized"),
                Cause::Unauthorized,
            ),
            (
                status(422, "Invalid", "Node \"worker-a\" is invalid"),
                Cause::Invalid,
            ),
        ];
        for (body, cause) in answers {
            let error = answered(body);
            assert_eq!(Cause::of_kube(&error), cause, "{}", error_chain(&error));
            let failure = Failure::of_kube(&error);
            assert_eq!(failure.to_string(), error_chain(&error));
        }
    }

    #[test]
    fn the_cause_never_comes_from_the_message() {
        // A 500 whose message speaks of a timeout and a forbidden key is a server error.
        let error = answered(status(
            500,
            "InternalError",
            "request timed out: forbidden: not found: conflict",
        ));
        assert_eq!(Cause::of_kube(&error), Cause::ServerError);
    }

    #[test]
    fn a_timed_out_refused_or_untrusted_connection_becomes_its_cause() {
        let timed_out = unsent(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "deadline has elapsed",
        ));
        assert_eq!(Cause::of_kube(&timed_out), Cause::Timeout);
        let refused = unsent(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "connection refused",
        ));
        assert_eq!(Cause::of_kube(&refused), Cause::Connection);
        let untrusted = unsent(std::io::Error::other(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(rustls::CertificateError::Other(rustls::OtherError(
                Arc::new(webpki::Error::CaUsedAsEndEntity),
            ))),
        )));
        assert_eq!(Cause::of_kube(&untrusted), Cause::Tls);
        let handshake = unsent(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::AlertReceived(rustls::AlertDescription::HandshakeFailure),
        ));
        assert_eq!(Cause::of_kube(&handshake), Cause::Tls);
    }

    #[test]
    fn a_lost_or_expired_lock_is_lock_lost_and_a_held_one_a_conflict() {
        let lost = kube::Error::LockLost {
            namespace: "ops".to_string(),
            name: "vsphere-descheduler".to_string(),
        };
        let expired = kube::Error::LockExpired {
            namespace: "ops".to_string(),
            name: "vsphere-descheduler".to_string(),
            unrenewed_seconds: 30,
        };
        assert_eq!(Cause::of_kube(&lost), Cause::LockLost);
        assert_eq!(Cause::of_kube(&expired), Cause::LockLost);
        let race = kube::Error::LockRace {
            namespace: "ops".to_string(),
            name: "vsphere-descheduler".to_string(),
        };
        assert_eq!(Cause::of_kube(&race), Cause::Conflict);
    }

    #[test]
    fn each_failure_of_vcenter_becomes_its_cause() {
        let task = |fault: vsphere::Fault| vsphere::Error::Task {
            task: "task-7".to_string(),
            method: "ReconfigureComputeResource_Task",
            object: "ClusterComputeResource:domain-c7".to_string(),
            fault,
        };
        let mut no_permission = vsphere::Fault::new(
            "NoPermission",
            "Permission to perform this operation was denied.",
        );
        no_permission.missing_privilege = Some(Box::new(vsphere::MissingPrivilege {
            privilege: "Host.Inventory.EditCluster".to_string(),
            object: "ClusterComputeResource:domain-c7".to_string(),
        }));
        let failures = [
            (task(no_permission), Cause::Forbidden),
            (
                task(vsphere::Fault::new("ManagedObjectNotFound", "gone")),
                Cause::NotFound,
            ),
            (
                task(vsphere::Fault::new("ConcurrentAccess", "busy")),
                Cause::Conflict,
            ),
            (
                task(vsphere::Fault::new(
                    "InvalidArgument",
                    "A specified parameter was not correct: spec.rulesSpec",
                )),
                Cause::Invalid,
            ),
            (
                task(vsphere::Fault::new("NotAuthenticated", "")),
                Cause::Unauthorized,
            ),
            (task(vsphere::Fault::new("DrsFault", "no")), Cause::Refused),
            (
                vsphere::Error::Status {
                    method: "POST",
                    server: "vc.example".to_string(),
                    status: 503,
                },
                Cause::ServerError,
            ),
            (
                vsphere::Error::Status {
                    method: "POST",
                    server: "vc.example".to_string(),
                    status: 429,
                },
                Cause::TooManyRequests,
            ),
            (
                vsphere::Error::Timeout {
                    method: "POST",
                    server: "vc.example".to_string(),
                    timeout: Duration::from_secs(30),
                },
                Cause::Timeout,
            ),
            (
                vsphere::Error::TaskTimeout {
                    task: "task-7".to_string(),
                    method: "ReconfigureComputeResource_Task",
                    object: "ClusterComputeResource:domain-c7".to_string(),
                    waited: Duration::from_secs(300),
                },
                Cause::Timeout,
            ),
            (
                vsphere::Error::TaskNotAwaited {
                    task: "task-7".to_string(),
                    method: "ReconfigureComputeResource_Task",
                    object: "ClusterComputeResource:domain-c7".to_string(),
                },
                Cause::Stopped,
            ),
        ];
        for (error, cause) in failures {
            assert_eq!(Cause::of_vsphere(&error), cause, "{}", error_chain(&error));
        }
    }

    #[test]
    fn every_cause_has_its_own_name() {
        let names: std::collections::BTreeSet<&str> =
            Cause::ALL.iter().map(|cause| cause.as_str()).collect();
        assert_eq!(names.len(), Cause::ALL.len());
    }
}
