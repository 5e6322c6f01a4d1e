//! The objects a live read listed (JSON values, as recorded in snapshots) into the topology: the
//! same conversion snapshot files go through, so a run and a plan of its snapshot agree.

use serde_json::Value;

use super::error::Error;
use crate::kube::VmOperatorObjects;
use crate::vm_operator::documents::{RESOURCE_POLICY, VIRTUAL_MACHINE};
use crate::vm_operator::inventory::{Topology, topology};

/// The inventory and findings of the listed objects; an object that is not one of its kind's
/// served shapes is an error naming it.
pub fn topology_of(objects: &VmOperatorObjects) -> Result<Topology, Error> {
    let vms = decode_all(&objects.virtual_machines, VIRTUAL_MACHINE)?;
    let policies = decode_all(&objects.resource_policies, RESOURCE_POLICY)?;
    Ok(topology(&vms, &policies))
}

fn decode_all<T: serde::de::DeserializeOwned>(
    items: &[Value],
    kind: &'static str,
) -> Result<Vec<T>, Error> {
    items
        .iter()
        .map(|item| {
            serde_json::from_value(item.clone()).map_err(|source| Error::Decode {
                kind,
                name: name_of(item),
                source,
            })
        })
        .collect()
}

/// `namespace/name` of a listed object, for messages.
fn name_of(item: &Value) -> String {
    let metadata = &item["metadata"];
    let part = |key: &str| metadata[key].as_str().unwrap_or("?").to_string();
    format!("{}/{}", part("namespace"), part("name"))
}
