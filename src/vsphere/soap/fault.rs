//! A vim25 fault as the wire carries it: the fault's type, the server's message and, for
//! `NoPermission`, the privilege it names. It belongs to the protocol, not to the adapter's
//! errors, which only wrap it: the parser builds it, the adapter's `Error` carries it.

use crate::cause::Cause;

/// A vim25 fault: its type (`InvalidLogin`, `NotAuthenticated`, `InvalidArgument`, …) and the
/// server's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    pub name: String,
    pub message: String,
    /// For `NoPermission`: the privilege the session lacks and where. Boxed: errors stay small.
    pub missing_privilege: Option<Box<MissingPrivilege>>,
}

/// What a `NoPermission` fault says is missing: its `privilegeId`, on its `object`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MissingPrivilege {
    /// The privilege id, e.g. `Host.Inventory.EditCluster`.
    pub privilege: String,
    /// The object it is missing on, e.g. `ClusterComputeResource:domain-c7`.
    pub object: String,
}

impl Fault {
    /// A fault with no detail beyond its type and message.
    pub fn new(name: impl Into<String>, message: impl Into<String>) -> Fault {
        Fault {
            name: name.into(),
            message: message.into(),
            missing_privilege: None,
        }
    }

    /// `NotAuthenticated`: the session expired or was terminated.
    pub fn is_not_authenticated(&self) -> bool {
        self.name == "NotAuthenticated"
    }
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.name)?;
        if !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        if let Some(missing) = &self.missing_privilege {
            write!(f, " (missing {} on {})", missing.privilege, missing.object)?;
        }
        Ok(())
    }
}

impl std::error::Error for Fault {}

impl Fault {
    /// The kind of a vim25 fault, by its type.
    pub fn cause(&self) -> Cause {
        match self.name.as_str() {
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
