//! A VKS Supervisor as the topology source (`vsphere.source: supervisor`): reaching it
//! ([`access`], [`client`]) and what it may refuse ([`error`]).

pub mod access;
pub mod client;
pub mod error;

pub use access::{Access, Flags, Settings, SettingsError};
pub use client::{SUPERVISOR_CALLS, Supervisor};
pub use error::Error;
