//! What kind of failure an action or a step met, derived once from the adapters' typed errors
//! (the API server's status code and reason, vCenter's fault type and HTTP status, the transport
//! error's kind, the run lock's state), never from a message. The verdict and metrics read the
//! kind; the report shows the error chain, kept beside it as it always was.
//!
//! A leaf: each adapter derives the cause of its own errors beside them (`kube::Error::cause`,
//! `vsphere::Error::cause`), so no adapter and this module import each other.

use std::fmt;

use crate::connection::certificate::certificate_problem;

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

    /// Its name in kebab case, as the metrics label it (`vsphere_descheduler_failures_total`).
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::Timeout => "timeout",
            Cause::Unauthorized => "unauthorized",
            Cause::Forbidden => "forbidden",
            Cause::NotFound => "not-found",
            Cause::Conflict => "conflict",
            Cause::TooManyRequests => "too-many-requests",
            Cause::Invalid => "invalid",
            Cause::ServerError => "server-error",
            Cause::Refused => "refused",
            Cause::LockLost => "lock-lost",
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
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A transport error's kind, from the error types in its chain: TLS when rustls failed, a
/// timeout when an I/O error timed out; `None` when neither is in it.
pub(crate) fn transport(error: &(dyn std::error::Error + 'static)) -> Option<Cause> {
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

    /// A failure told by `error` and its sources: the one place a module's typed error becomes
    /// the report's line.
    pub fn of(cause: Cause, error: &dyn std::error::Error) -> Failure {
        Failure::new(cause, crate::error_chain(error))
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}
