//! Kubernetes API objects (as `kubectl get -o yaml|json` prints them) → the planner's types: one
//! module per kind (nodes, pods with the scheduling terms they carry, PodDisruptionBudgets,
//! `metrics.k8s.io` usage), and here what they share and the small kinds (namespaces,
//! PriorityClasses, the eviction history of the Lease and the ConfigMap).

mod metrics;
mod node;
mod pdb;
mod pod;
mod scheduling;

pub use metrics::{node_metrics, pod_metrics, untyped_node_metrics, untyped_pod_metrics};
pub use node::node;
pub use pdb::pdb;
pub use pod::pod;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::core::Selector;

use crate::snapshot::decode::history::{self, Compact, RecordedHistory, Stored};
use crate::snapshot::decode::quantity::parse_milli;
use crate::snapshot::decode::wire;
use crate::snapshot::model::{Interner, Labels, Requirements, ResourceName, Resources};

/// Why an object could not be understood; the loader adds the file and object name.
#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    #[error("invalid quantity {value:?} for {field}")]
    Quantity { field: String, value: String },
    #[error("invalid label selector in {field}: {message}")]
    Selector { field: String, message: String },
    #[error("invalid {field} {value:?}")]
    Enum { field: String, value: String },
    #[error("missing {field}")]
    Missing { field: &'static str },
    #[error("unreadable: {message}")]
    Unreadable { message: String },
}

/// A namespace as its name and labels (texts shared through `interner`).
pub fn namespace(
    namespace: core::Namespace,
    interner: &mut Interner,
) -> Result<(String, Labels), ConvertError> {
    let name = namespace.metadata.name.ok_or(ConvertError::Missing {
        field: "metadata.name",
    })?;
    Ok((name, interner.labels(namespace.metadata.labels)))
}

/// A PriorityClass as its name and value (`globalDefault` is not read: admission already
/// wrote every pod's priority into it).
pub fn priority_class(class: PriorityClass) -> Result<(String, i32), ConvertError> {
    let name = class.metadata.name.ok_or(ConvertError::Missing {
        field: "metadata.name",
    })?;
    Ok((name, class.value))
}

/// The eviction history a Lease holds (the run lock's, in the earlier form), as recorded;
/// `None` when it holds none.
pub fn lease_history(lease: wire::Lease) -> Result<Option<RecordedHistory>, ConvertError> {
    let Some((namespace, name, value)) = marked(lease.metadata)? else {
        return Ok(None);
    };
    Ok(Some(RecordedHistory {
        namespace,
        name,
        stored: Stored::Lease(value),
    }))
}

/// The eviction history a ConfigMap holds, as recorded; `None` when it is not the history's
/// (it has no [`history::ANNOTATION`]).
pub fn config_map_history(
    config_map: wire::ConfigMap,
) -> Result<Option<RecordedHistory>, ConvertError> {
    let Some((namespace, name, marker)) = marked(config_map.metadata)? else {
        return Ok(None);
    };
    Ok(Some(RecordedHistory {
        namespace,
        name,
        stored: Stored::ConfigMap(Compact {
            marker,
            data: config_map.data.unwrap_or_default(),
        }),
    }))
}

/// The namespace, name and history annotation of an object that has one.
fn marked(
    metadata: Option<wire::LeaseMeta>,
) -> Result<Option<(String, String, String)>, ConvertError> {
    let metadata = metadata.unwrap_or_default();
    let name = metadata.name.ok_or(ConvertError::Missing {
        field: "metadata.name",
    })?;
    let Some(value) = metadata
        .annotations
        .and_then(|mut annotations| annotations.remove(history::ANNOTATION))
    else {
        return Ok(None);
    };
    Ok(Some((metadata.namespace.unwrap_or_default(), name, value)))
}

/// k8s-openapi speaks jiff; the planner keeps to chrono, the project's one time library.
fn timestamp(t: k8s_openapi::jiff::Timestamp) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::from_timestamp(t.as_second(), t.subsec_nanosecond().try_into().ok()?)
}

/// A `LabelSelector` as its requirements.
pub fn selector(selector: LabelSelector, field: &str) -> Result<Requirements, ConvertError> {
    Selector::try_from(selector)
        .map(Requirements::from)
        .map_err(|e| ConvertError::Selector {
            field: field.to_string(),
            message: e.0,
        })
}

fn resources(quantities: wire::Quantities, field: &str) -> Result<Resources, ConvertError> {
    quantities
        .into_iter()
        .map(|(name, quantity)| match parse_milli(&quantity.0) {
            Some(amount) => Ok((ResourceName::new(&name), amount)),
            None => Err(ConvertError::Quantity {
                field: format!("{field}.{name}"),
                value: quantity.0,
            }),
        })
        .collect()
}
