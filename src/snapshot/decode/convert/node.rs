//! A Node → the planner's [`Node`]: its labels, taints, allocatable resources, readiness, and
//! the label keys our field manager applied.

use std::collections::{BTreeMap, BTreeSet};

use crate::identity::FIELD_MANAGER;
use crate::snapshot::decode::wire;
use crate::snapshot::model::{Interner, Node, Taint};

use super::scheduling::taint_effect;
use super::{ConvertError, resources};

/// A node; its label texts are shared through `interner` with the other objects converted
/// with it.
pub fn node(node: wire::Node, interner: &mut Interner) -> Result<Node, ConvertError> {
    let meta = node.metadata.unwrap_or_default();
    let name = meta.name.ok_or(ConvertError::Missing {
        field: "metadata.name",
    })?;
    let spec = node.spec.unwrap_or_default();
    let status = node.status.unwrap_or_default();
    let ready = status
        .conditions
        .unwrap_or_default()
        .iter()
        .any(wire::Condition::is_ready);
    let taints = spec
        .taints
        .unwrap_or_default()
        .into_iter()
        .map(|t| {
            Ok(Taint {
                effect: taint_effect(&t.effect, "spec.taints[].effect")?,
                key: t.key,
                value: t.value.unwrap_or_default(),
            })
        })
        .collect::<Result<_, ConvertError>>()?;
    let allocatable = resources(
        status.allocatable.or(status.capacity).unwrap_or_default(),
        "status.allocatable",
    )?;
    Ok(exact_node(Node {
        name,
        uid: meta.uid.filter(|uid| !uid.is_empty()),
        labels: interner.labels(meta.labels),
        applied_label_keys: applied_label_keys(meta.managed_fields.unwrap_or_default()),
        provider_id: spec.provider_id.filter(|id| !id.is_empty()),
        internal_ips: status
            .addresses
            .unwrap_or_default()
            .into_iter()
            .filter(|address| address.type_ == "InternalIP" && !address.address.is_empty())
            .map(|address| address.address)
            .collect(),
        system_uuid: status
            .node_info
            .and_then(|info| info.system_uuid)
            .filter(|id| !id.is_empty()),
        unschedulable: spec.unschedulable.unwrap_or(false),
        ready,
        taints,
        allocatable,
    }))
}

/// A node's lists at their exact size (see [`exact_pod`]).
fn exact_node(mut node: Node) -> Node {
    node.taints.shrink_to_fit();
    node.internal_ips.shrink_to_fit();
    node
}

/// Label keys our field manager holds through server-side apply: those in the `fieldsV1` of
/// its `Apply` entries (`{"f:metadata":{"f:labels":{"f:KEY":{}}}}`). Keys it wrote with an
/// update-style patch are not counted: an apply that leaves them out would not remove them.
fn applied_label_keys(entries: Vec<wire::ManagedFields>) -> BTreeSet<String> {
    entries
        .into_iter()
        .filter(|entry| {
            entry.manager.as_deref() == Some(FIELD_MANAGER)
                && entry.operation.as_deref() == Some("Apply")
        })
        .filter_map(|entry| entry.fields_v1?.metadata?.labels)
        .flat_map(BTreeMap::into_keys)
        .filter_map(|key| key.strip_prefix("f:").map(str::to_string))
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn entry(manager: &str, operation: &str, keys: &[&str]) -> Value {
        let labels: serde_json::Map<String, Value> = keys
            .iter()
            .map(|key| (format!("f:{key}"), json!({})))
            .collect();
        json!({
            "manager": manager,
            "operation": operation,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": labels}, "f:spec": {"f:taints": {}}}
        })
    }

    /// A node named worker-a with the metadata fields given.
    fn named(mut metadata: Value) -> wire::Node {
        metadata["name"] = json!("worker-a");
        serde_json::from_value(json!({"metadata": metadata})).expect("a node")
    }

    #[test]
    fn only_keys_our_manager_applied_count_as_ours() {
        let converted = node(
            named(json!({
            "uid": "u-1",
            "managedFields": [
                entry(FIELD_MANAGER, "Apply", &["vsphere-descheduler.io/host"]),
                entry(FIELD_MANAGER, "Update", &["vsphere-descheduler.io/cluster"]),
                entry("kubelet", "Update", &["kubernetes.io/hostname"]),
                entry("other-tool", "Apply", &["example.com/zone"]),
            ]
            })),
            &mut Interner::default(),
        )
        .expect("converts");
        assert_eq!(converted.uid.as_deref(), Some("u-1"));
        assert_eq!(
            converted.applied_label_keys,
            BTreeSet::from(["vsphere-descheduler.io/host".to_string()])
        );
    }

    #[test]
    fn a_node_recorded_without_managed_fields_or_uid_has_neither() {
        let converted =
            node(named(json!({"uid": ""})), &mut Interner::default()).expect("converts");
        assert_eq!(converted.uid, None);
        assert!(converted.applied_label_keys.is_empty());
    }
}
