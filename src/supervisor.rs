//! A VKS Supervisor as the topology source (`vsphere.source: supervisor`), the adapter side:
//! reaching it from a mounted Secret or a kubeconfig context ([`access`]), reading VM
//! Operator's objects of one namespace and answering `check`'s access reviews ([`client`]),
//! what it may refuse ([`error`]), and what it listed turned into the topology ([`listed`],
//! through the pure [`crate::vm_operator`]).

pub mod access;
pub mod client;
pub mod error;
pub mod listed;

pub use access::{Access, Flags, Settings, SettingsError};
pub use client::{SUPERVISOR_CALLS, Supervisor, SupervisorRead, observe};
pub use error::Error;
pub use listed::topology_of;
