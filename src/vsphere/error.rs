//! Errors of the vSphere adapter. Messages name the object and the call; the cause is only in
//! the source chain. No variant holds a password or a session cookie.

use crate::cause::{Cause, Failure};
use std::path::PathBuf;
use std::time::Duration;

use super::soap::{Fault, XmlParseError};

/// Everything that can go wrong talking to vCenter.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("vSphere credential {name} is not set")]
    MissingCredential { name: String },
    #[error("vSphere credential {name} is empty")]
    EmptyCredential { name: String },
    #[error("failed to read vSphere credential file {path}")]
    ReadCredential {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("vSphere credential file {path} is not UTF-8")]
    CredentialNotUtf8 { path: PathBuf },
    /// The address itself is not echoed: it may hold credentials.
    #[error("vCenter server address must not contain a user name or password")]
    CredentialsInServerAddress,
    #[error("invalid vCenter server address {server:?}: {problem}")]
    InvalidServer {
        server: String,
        problem: &'static str,
    },
    /// The CA file is unusable (its own message names it).
    #[error(transparent)]
    Trust(crate::connection::Error),
    #[error("failed to set up TLS for vCenter")]
    Tls {
        #[source]
        source: rustls::Error,
    },
    #[error("failed to set up the HTTP client for vCenter")]
    HttpClient {
        #[source]
        source: reqwest::Error,
    },
    #[error("{method} request to vCenter {server} failed")]
    Request {
        method: &'static str,
        server: String,
        #[source]
        source: reqwest::Error,
    },
    /// The handshake failed on the certificate vCenter presented; what is wrong says what to do.
    #[error("vCenter {server} presented a TLS certificate that was refused: {refusal}")]
    UntrustedCertificate {
        server: String,
        refusal: crate::connection::certificate::CertificateRefusal,
    },
    #[error("{method} request to vCenter {server} timed out after {timeout:?}")]
    Timeout {
        method: &'static str,
        server: String,
        timeout: Duration,
    },
    #[error("{method} request to vCenter {server} answered HTTP {status}")]
    Status {
        method: &'static str,
        server: String,
        status: u16,
    },
    #[error("unreadable {method} response from vCenter {server}")]
    Response {
        method: &'static str,
        server: String,
        #[source]
        source: XmlParseError,
    },
    #[error("{method} on {object} failed")]
    Fault {
        method: &'static str,
        object: String,
        #[source]
        fault: Fault,
    },
    #[error("login to vCenter {server} as {username} failed")]
    Login {
        server: String,
        username: String,
        #[source]
        fault: Fault,
    },
    #[error("task {task} ({method} on {object}) failed")]
    Task {
        task: String,
        method: &'static str,
        object: String,
        #[source]
        fault: Fault,
    },
    /// The run was asked to stop while the task ran; vCenter carries it out regardless.
    #[error(
        "task {task} ({method} on {object}) was submitted, but the run stopped waiting for it \
         before it finished; vCenter completes it on its own"
    )]
    TaskNotAwaited {
        task: String,
        method: &'static str,
        object: String,
    },
    #[error("task {task} ({method} on {object}) did not finish within {waited:?}")]
    TaskTimeout {
        task: String,
        method: &'static str,
        object: String,
        waited: Duration,
    },
    /// The server has no roles and permissions to ask about (a standalone ESXi host, not
    /// vCenter).
    #[error("vCenter {server} has no authorization manager to ask about privileges")]
    NoAuthorizationManager { server: String },
    /// A property observation cannot do without was absent, or unreadable (the fault says why,
    /// e.g. `NoPermission`).
    #[error("{object} has no readable {property}")]
    MissingProperty {
        object: String,
        property: &'static str,
        #[source]
        fault: Option<Fault>,
    },
}

impl Error {
    /// The vim25 fault behind this error, if vCenter answered with one.
    pub fn fault(&self) -> Option<&Fault> {
        match self {
            Error::Fault { fault, .. } | Error::Login { fault, .. } | Error::Task { fault, .. } => {
                Some(fault)
            }
            _ => None,
        }
    }

    pub(crate) fn is_not_authenticated(&self) -> bool {
        self.fault().is_some_and(Fault::is_not_authenticated)
    }
}

impl Error {
    /// What kind of failure this is (see [`Cause`]).
    pub fn cause(&self) -> Cause {
        use Error as E;
        match self {
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
            E::Request { source, .. } => {
                crate::cause::transport(source).unwrap_or(Cause::Connection)
            }
            E::Timeout { .. } | E::TaskTimeout { .. } => Cause::Timeout,
            E::Status { status, .. } => Cause::of_http(*status),
            E::Response { .. } => Cause::Unreadable,
            E::Fault { fault, .. } | E::Login { fault, .. } | E::Task { fault, .. } => {
                fault.cause()
            }
            E::TaskNotAwaited { .. } => Cause::Stopped,
            E::NoAuthorizationManager { .. } => Cause::Refused,
            E::MissingProperty {
                fault: Some(fault), ..
            } => fault.cause(),
            E::MissingProperty { fault: None, .. } => Cause::Unreadable,
        }
    }

    /// The failure, with this error's chain as the report shows it.
    pub fn failure(&self) -> Failure {
        Failure::of(self.cause(), self)
    }
}
