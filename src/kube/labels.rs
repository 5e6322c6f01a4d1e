//! Node labels this tool owns, written with server-side apply under [`FIELD_MANAGER`].
//!
//! Each apply carries the complete set of our keys that should be on the node: keys owned only
//! by us and left out are removed by the server, keys others own are never touched, and
//! `force` takes over a key someone set by hand. The applied object names the node's `uid`, which
//! makes the apply a precondition rather than a create: an apply to a node that was deleted (or
//! deleted and recreated) since it was listed is refused with 409 instead of creating a bare Node.
//! A key we must remove but do not own alone (someone else co-owns it) is removed with a merge
//! patch `null`, which answers 404 for a missing node and so never creates one either.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

use super::{Client, Error, FIELD_MANAGER, api_status, retry};

/// What label writes need to know of a listed node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeIdentity {
    pub name: String,
    pub uid: Option<String>,
    /// Label keys our field manager holds through server-side apply.
    pub applied_label_keys: BTreeSet<String>,
}

impl NodeIdentity {
    /// Reads the uid and our apply-owned label keys from a node's metadata.
    pub fn of(node: &Node) -> NodeIdentity {
        let metadata = &node.metadata;
        let applied_label_keys = metadata
            .managed_fields
            .iter()
            .flatten()
            .filter(|entry| {
                entry.manager.as_deref() == Some(FIELD_MANAGER)
                    && entry.operation.as_deref() == Some("Apply")
            })
            .filter_map(|entry| entry.fields_v1.as_ref())
            .flat_map(|fields| label_keys_in(&fields.0))
            .collect();
        NodeIdentity {
            name: metadata.name.clone().unwrap_or_default(),
            uid: metadata.uid.clone().filter(|uid| !uid.is_empty()),
            applied_label_keys,
        }
    }
}

/// Label keys in a `fieldsV1` set: `{"f:metadata":{"f:labels":{"f:KEY":{}}}}`.
fn label_keys_in(fields: &Value) -> Vec<String> {
    fields
        .get("f:metadata")
        .and_then(|metadata| metadata.get("f:labels"))
        .and_then(Value::as_object)
        .map(|labels| {
            labels
                .keys()
                .filter_map(|key| key.strip_prefix("f:"))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// The labels of our keys one node should carry after the write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelUpdate {
    pub node: NodeIdentity,
    /// Every one of our keys that should be present, with its value.
    pub present: BTreeMap<String, String>,
    /// Our keys that should be absent.
    pub absent: BTreeSet<String>,
}

impl LabelUpdate {
    /// The server-side apply configuration: our present keys, and the uid as a precondition.
    pub fn apply_configuration(&self) -> Value {
        let mut metadata = json!({
            "name": self.node.name,
            "labels": self.present,
        });
        if let Some(uid) = &self.node.uid {
            metadata["uid"] = json!(uid);
        }
        json!({"apiVersion": "v1", "kind": "Node", "metadata": metadata})
    }
}

impl Client {
    /// Writes one node's labels. Without a known uid (nodes always have one when listed live)
    /// the apply is replaced by a merge patch, which cannot create a node either.
    pub async fn apply_labels(&self, update: &LabelUpdate) -> Result<(), Error> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let name = update.node.name.as_str();
        let live = if update.node.uid.is_some() {
            let params = PatchParams::apply(FIELD_MANAGER).force();
            let body = update.apply_configuration();
            let patch = Patch::Apply(&body);
            retry::idempotent("apply node labels", || nodes.patch(name, &params, &patch))
                .await
                .map_err(|source| node_error(name, source))?
        } else {
            let mut labels = serde_json::Map::new();
            for (key, value) in &update.present {
                labels.insert(key.clone(), json!(value));
            }
            for key in &update.absent {
                labels.insert(key.clone(), Value::Null);
            }
            let params = PatchParams {
                field_manager: Some(FIELD_MANAGER.to_string()),
                ..PatchParams::default()
            };
            let body = json!({"metadata": {"labels": labels}});
            let patch = Patch::Merge(&body);
            return retry::idempotent("patch node labels", || nodes.patch(name, &params, &patch))
                .await
                .map(|_| ())
                .map_err(|source| node_error(name, source));
        };
        // Keys someone else co-owns survive our apply; remove those explicitly.
        let labels = live.metadata.labels.unwrap_or_default();
        for key in update.absent.iter().filter(|key| labels.contains_key(*key)) {
            let params = PatchParams {
                field_manager: Some(FIELD_MANAGER.to_string()),
                ..PatchParams::default()
            };
            let body = json!({"metadata": {"labels": {key.as_str(): null}}});
            let patch = Patch::Merge(&body);
            retry::idempotent("remove node label", || nodes.patch(name, &params, &patch))
                .await
                .map_err(|source| match api_status(&source) {
                    Some(status) if status.code == 404 => Error::NodeReplaced {
                        node: name.to_string(),
                    },
                    _ => Error::RemoveLabel {
                        node: name.to_string(),
                        key: key.clone(),
                        source,
                    },
                })?;
        }
        Ok(())
    }
}

/// 409 (the uid precondition) and 404 both mean the node we listed is not there any more.
fn node_error(node: &str, source: ::kube::Error) -> Error {
    match api_status(&source) {
        Some(status) if status.code == 404 || status.code == 409 => Error::NodeReplaced {
            node: node.to_string(),
        },
        _ => Error::ApplyLabels {
            node: node.to_string(),
            source,
        },
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
        FieldsV1, ManagedFieldsEntry, ObjectMeta,
    };

    use super::*;

    fn entry(manager: &str, operation: &str, keys: &[&str]) -> ManagedFieldsEntry {
        let labels: serde_json::Map<String, Value> = keys
            .iter()
            .map(|key| (format!("f:{key}"), json!({})))
            .collect();
        ManagedFieldsEntry {
            manager: Some(manager.to_string()),
            operation: Some(operation.to_string()),
            fields_type: Some("FieldsV1".to_string()),
            fields_v1: Some(FieldsV1(json!({"f:metadata": {"f:labels": labels}}))),
            ..ManagedFieldsEntry::default()
        }
    }

    #[test]
    fn only_keys_our_manager_applied_count_as_ours() {
        let node = Node {
            metadata: ObjectMeta {
                name: Some("worker-a".to_string()),
                uid: Some("u-1".to_string()),
                managed_fields: Some(vec![
                    entry(FIELD_MANAGER, "Apply", &["vsphere-descheduler.io/host"]),
                    entry(FIELD_MANAGER, "Update", &["vsphere-descheduler.io/cluster"]),
                    entry("kubelet", "Update", &["kubernetes.io/hostname"]),
                ]),
                ..ObjectMeta::default()
            },
            ..Node::default()
        };
        let identity = NodeIdentity::of(&node);
        assert_eq!(identity.uid.as_deref(), Some("u-1"));
        assert_eq!(
            identity.applied_label_keys,
            BTreeSet::from(["vsphere-descheduler.io/host".to_string()])
        );
    }

    #[test]
    fn the_applied_configuration_holds_present_keys_and_the_uid_precondition() {
        let update = LabelUpdate {
            node: NodeIdentity {
                name: "worker-b".to_string(),
                uid: Some("u-2".to_string()),
                applied_label_keys: BTreeSet::new(),
            },
            present: BTreeMap::from([(
                "vsphere-descheduler.io/host".to_string(),
                "esxi-41".to_string(),
            )]),
            absent: BTreeSet::from(["vsphere-descheduler.io/cluster".to_string()]),
        };
        assert_eq!(
            update.apply_configuration(),
            json!({
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": "worker-b",
                    "uid": "u-2",
                    "labels": {"vsphere-descheduler.io/host": "esxi-41"}
                }
            })
        );
    }
}
