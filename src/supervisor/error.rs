//! Why the Supervisor could not be read.

use crate::cause::{Cause, Failure};
use crate::kube;

use super::access::SettingsError;

/// Everything that can go wrong reading the Supervisor.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("unusable Supervisor settings")]
    Settings(#[source] SettingsError),
    #[error("cannot set up the client of the Supervisor")]
    Connect(#[source] kube::Error),
    #[error(
        "no Supervisor namespace: set vsphere.supervisor.namespace or --supervisor-namespace, or \
         give the credentials a namespace file"
    )]
    NoNamespace,
    #[error(
        "the Supervisor address {server} is this cluster's own API server: give the Supervisor's \
         address (the one `kubectl vsphere login --server` takes), not the guest cluster's"
    )]
    GuestCluster { server: String },
    #[error(
        "{server} is not a Supervisor: check that the credentials or kubeconfig name the \
         Supervisor (the address `kubectl vsphere login --server` takes) and that its vSphere \
         release has VM Operator"
    )]
    NotSupervisor {
        server: String,
        #[source]
        source: kube::Error,
    },
    #[error("{kind} {name} is not one VM Operator serves")]
    Decode {
        kind: &'static str,
        name: String,
        #[source]
        source: serde_json::Error,
    },
    #[error(
        "cannot read VM Operator's objects in namespace {namespace} of the Supervisor {server}"
    )]
    Read {
        server: String,
        namespace: String,
        // Boxed: kube's error is large, and every result of this module carries this one.
        #[source]
        source: Box<kube::Error>,
    },
}

impl Error {
    /// What kind of failure this is.
    pub fn cause(&self) -> Cause {
        match self {
            Error::Settings(_) | Error::NoNamespace | Error::GuestCluster { .. } => Cause::Config,
            Error::Decode { .. } => Cause::Unreadable,
            Error::Connect(source) | Error::NotSupervisor { source, .. } => source.cause(),
            Error::Read { source, .. } => source.cause(),
        }
    }

    /// The failure, with this error's chain as the report shows it.
    pub fn failure(&self) -> Failure {
        Failure::of(self.cause(), self)
    }
}
