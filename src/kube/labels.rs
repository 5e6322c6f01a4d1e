//! Node labels this tool owns, written with server-side apply under [`FIELD_MANAGER`]. What
//! to write is the plan's [`LabelApply`]; this module only sends it.
//!
//! Each apply carries the complete set of our keys that should be on the node: keys owned only
//! by us and left out are removed by the server, keys others own are never touched, and
//! `force` takes over a key someone set by hand. The applied object names the node's `uid`, which
//! makes the apply a precondition rather than a create: an apply to a node that was deleted (or
//! deleted and recreated) since it was listed is refused with 409 instead of creating a bare Node.
//! A key we must remove but do not own alone (someone else co-owns it) is removed with a merge
//! patch `null`, which answers 404 for a missing node and so never creates one either.

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

use super::{Client, Error, FIELD_MANAGER, api_status, retry};
use crate::plan::LabelApply;

/// The server-side apply configuration: our present keys, and the uid as a precondition.
fn apply_configuration(apply: &LabelApply) -> Value {
    let mut metadata = json!({
        "name": apply.node,
        "labels": apply.set,
    });
    if let Some(uid) = &apply.uid {
        metadata["uid"] = json!(uid);
    }
    json!({"apiVersion": "v1", "kind": "Node", "metadata": metadata})
}

impl Client {
    /// Writes one node's labels. Without a known uid (nodes always have one when listed live)
    /// the apply is replaced by a merge patch, which cannot create a node either.
    pub async fn apply_labels(&self, apply: &LabelApply) -> Result<(), Error> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let name = apply.node.as_str();
        let live = if apply.uid.is_some() {
            let params = PatchParams::apply(FIELD_MANAGER).force();
            let body = apply_configuration(apply);
            let patch = Patch::Apply(&body);
            retry::idempotent("apply node labels", || nodes.patch(name, &params, &patch))
                .await
                .map_err(|source| node_error(name, source))?
        } else {
            let mut labels = serde_json::Map::new();
            for (key, value) in &apply.set {
                labels.insert(key.clone(), json!(value));
            }
            for key in &apply.remove {
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
        for key in apply.remove.iter().filter(|key| labels.contains_key(*key)) {
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
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;

    #[test]
    fn the_applied_configuration_holds_present_keys_and_the_uid_precondition() {
        let apply = LabelApply {
            node: "worker-b".to_string(),
            uid: Some("u-2".to_string()),
            set: BTreeMap::from([(
                "vsphere-descheduler.io/host".to_string(),
                "esxi-41".to_string(),
            )]),
            remove: BTreeSet::from(["vsphere-descheduler.io/cluster".to_string()]),
        };
        assert_eq!(
            apply_configuration(&apply),
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
