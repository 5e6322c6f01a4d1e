//! The vim25 SOAP wire format: the only part of the crate that knows XML.
//!
//! [`request`] writes envelopes for the dozen calls the client makes; [`response`] reads replies
//! into typed values through the namespace-aware element tree of [`xml`]. Everything above this
//! module sees [`MoRef`]s, typed property values and [`Fault`]s.

mod fault;
mod request;
mod response;
mod xml;

pub(crate) use request::{
    AntiAffinityRule, PropertySpec, Request, RuleOperation, TraversalSpec,
    cancel_retrieve_properties, continue_retrieve_properties, create_container_view, destroy_view,
    has_privilege_on_entities, login, logout, reconfigure_rules, retrieve_properties,
    retrieve_service_content,
};
pub(crate) use response::{
    AdmissionControlPolicy, ClusterConfig, DasConfig, EntityPrivileges, GroupInfo, ObjectContent,
    PropertyValue, Reply, Response, RuleInfo, RuleType, ServiceContent, UserSession,
    entity_privileges, envelope, retrieve_result, returned_reference, service_content,
    user_session,
};
pub use xml::XmlParseError;

#[cfg(test)]
pub(crate) use response::{DrsVmOverride, OptionValue, RetrieveResult, VmHostGroups};

pub use fault::{Fault, MissingPrivilege};

/// A managed object reference: the type and server-side id of a vCenter object
/// (`VirtualMachine:vm-43`). Ids are only unique per type and per vCenter.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct MoRef {
    pub kind: String,
    pub value: String,
}

impl MoRef {
    pub fn new(kind: impl Into<String>, value: impl Into<String>) -> MoRef {
        MoRef {
            kind: kind.into(),
            value: value.into(),
        }
    }
}

impl std::fmt::Display for MoRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.kind, self.value)
    }
}

/// Reads a recorded reply from `tests/fixtures/vsphere/`.
#[cfg(test)]
pub(crate) fn fixture(name: &str) -> Reply {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/vsphere")
        .join(name);
    let document = std::fs::read(&path).expect("fixture is readable");
    envelope(&document).expect("fixture is a SOAP envelope")
}

/// Reads a recorded successful reply from `tests/fixtures/vsphere/`.
#[cfg(test)]
pub(crate) fn fixture_response(name: &str) -> Response {
    match fixture(name) {
        Reply::Response(response) => response,
        Reply::Fault(fault) => panic!("fixture {name} is a fault: {fault}"),
    }
}

#[cfg(test)]
mod tests;
