//! Node labels this tool owns, written with server-side apply under [`FIELD_MANAGER`]. What
//! to write is the plan's [`LabelApply`]; this module only sends it.
//!
//! Each apply carries the complete set of our keys that should be on the node: keys owned only
//! by us and left out are removed by the server, keys others own are never touched, and
//! `force` takes over a key someone set by hand. The applied object names the node's `uid`, which
//! makes the apply an update of that very node rather than a create: an apply to a node that was
//! deleted since it was listed is refused with 409 Conflict, and one to a node deleted and
//! recreated under the same name with 422 Invalid on `metadata.uid` (the uid is immutable),
//! instead of creating a bare Node or labelling a different one.
//! A key we must remove but do not own alone (someone else co-owns it) is removed with a merge
//! patch `null`, which answers 404 for a missing node and so never creates one either.
//!
//! One node's apply may take several requests (the apply, removals, their retries): the run's
//! claim on the lock is checked before each, as before each eviction, so none starts after the
//! claim expired or was lost.

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

use super::retry::{self, Stopped};
use super::{Call, Client, Error, FIELD_MANAGER, Lock};
use crate::plan::LabelApply;

/// The server-side apply configuration: our present keys, and the uid as a precondition.
pub(super) fn apply_configuration(apply: &LabelApply) -> Value {
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
    /// Writes one node's labels, checking `lock` (when there is one) before every request.
    /// Without a known uid (nodes always have one when listed live) the apply is replaced by a
    /// merge patch, which cannot create a node either.
    pub async fn apply_labels(&self, apply: &LabelApply, lock: Option<&Lock>) -> Result<(), Error> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let name = apply.node.as_str();
        let call = Call::object("PATCH", nodes.resource_url(), name);
        let may_send = || lock.map_or(Ok(()), Lock::check);
        let failed = |stopped| match stopped {
            Stopped::Refused(error) => error,
            Stopped::Failed(error) => node_error(name, call.failed(error)),
        };
        let live = if apply.uid.is_some() {
            let params = PatchParams::apply(FIELD_MANAGER).force();
            let body = apply_configuration(apply);
            let patch = Patch::Apply(&body);
            retry::guarded("apply node labels", may_send, || {
                nodes.patch(name, &params, &patch)
            })
            .await
            .map_err(failed)?
        } else {
            let mut labels = serde_json::Map::new();
            for (key, value) in &apply.set {
                labels.insert(key.clone(), json!(value));
            }
            for key in &apply.remove {
                labels.insert(key.clone(), Value::Null);
            }
            let params = merge_params();
            let body = json!({"metadata": {"labels": labels}});
            let patch = Patch::Merge(&body);
            return retry::guarded("patch node labels", may_send, || {
                nodes.patch(name, &params, &patch)
            })
            .await
            .map(|_| ())
            .map_err(failed);
        };
        // Keys someone else co-owns survive our apply; remove those explicitly.
        let labels = live.metadata.labels.unwrap_or_default();
        for key in apply.remove.iter().filter(|key| labels.contains_key(*key)) {
            let params = merge_params();
            let body = json!({"metadata": {"labels": {key.as_str(): null}}});
            let patch = Patch::Merge(&body);
            retry::guarded("remove node label", may_send, || {
                nodes.patch(name, &params, &patch)
            })
            .await
            .map_err(|stopped| match stopped {
                Stopped::Refused(error) => error,
                Stopped::Failed(error) => match node_error(name, call.failed(error)) {
                    Error::ApplyLabels { node, source } => Error::RemoveLabel {
                        node,
                        key: key.clone(),
                        source,
                    },
                    replaced => replaced,
                },
            })?;
        }
        Ok(())
    }
}

fn merge_params() -> PatchParams {
    PatchParams {
        field_manager: Some(FIELD_MANAGER.to_string()),
        ..PatchParams::default()
    }
}

/// Turns a refused label write into [`Error::NodeReplaced`] when the node we listed is not there
/// any more, and into [`Error::ApplyLabels`] otherwise.
fn node_error(node: &str, source: super::RequestError) -> Error {
    match source.status() {
        Some(status) if node_vanished(status) => Error::NodeReplaced {
            node: node.to_string(),
        },
        _ => Error::ApplyLabels {
            node: node.to_string(),
            source,
        },
    }
}

/// Whether the server's answer says the listed node is gone, judged by code, reason and causes
/// (never by message text, which servers reword):
/// * 404 NotFound: deleted (the merge patch, which has no uid);
/// * 409 Conflict naming no field (an apply with our `force` has no field-manager conflicts, and
///   we send no `resourceVersion`): the uid names a node that no longer exists;
/// * 422 Invalid whose causes are all on `metadata.uid`: a node of the same name but another
///   uid exists, deleted and recreated since we listed it.
pub(super) fn node_vanished(status: &::kube::core::Status) -> bool {
    let causes = status
        .details
        .as_ref()
        .map(|details| details.causes.as_slice())
        .unwrap_or_default();
    match status.code {
        404 => true,
        409 => status.reason == "Conflict" && causes.iter().all(|cause| cause.field.is_empty()),
        422 => {
            status.reason == "Invalid"
                && !causes.is_empty()
                && causes.iter().all(|cause| cause.field == "metadata.uid")
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;

    fn status(body: Value) -> ::kube::core::Status {
        serde_json::from_value(body).expect("a Status body")
    }

    #[test]
    fn a_node_recreated_under_the_same_name_is_a_422_on_the_uid_alone() {
        // As kube-apiserver 1.32 answered an apply naming the old uid.
        let recreated = status(json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Node \"worker-b\" is invalid: metadata.uid: Invalid value: \"u-1\": field is immutable",
            "reason": "Invalid",
            "details": {"name": "worker-b", "kind": "Node", "causes": [{"reason": "FieldValueInvalid",
                "message": "Invalid value: \"u-1\": field is immutable", "field": "metadata.uid"}]},
            "code": 422
        }));
        assert!(node_vanished(&recreated));
        // Invalid for another reason too: not only a replaced node, so reported as it is.
        let mut other = recreated.clone();
        if let Some(details) = other.details.as_mut() {
            let mut label = details.causes[0].clone();
            label.field = "metadata.labels".to_string();
            details.causes.push(label);
        }
        assert!(!node_vanished(&other));
        let mut no_causes = recreated;
        no_causes.details = None;
        assert!(!node_vanished(&no_causes));
    }

    #[test]
    fn a_deleted_node_is_a_409_naming_no_field_or_a_404() {
        let deleted = status(json!({
            "status": "Failure", "reason": "Conflict", "code": 409,
            "message": "Operation cannot be fulfilled on nodes \"worker-b\": uid mismatch: the provided object specified uid u-1, and no existing object was found",
            "details": {"name": "worker-b", "kind": "nodes"}
        }));
        assert!(node_vanished(&deleted));
        let missing = status(
            json!({"status": "Failure", "reason": "NotFound", "code": 404,
            "message": "nodes \"worker-b\" not found", "details": {"name": "worker-b", "kind": "nodes"}}),
        );
        assert!(node_vanished(&missing));
        let manager_conflict = status(json!({
            "status": "Failure", "reason": "Conflict", "code": 409,
            "message": "Apply failed with 1 conflict: conflict with \"kubectl\": .metadata.labels.k",
            "details": {"causes": [{"reason": "FieldManagerConflict",
                "message": "conflict with \"kubectl\"", "field": ".metadata.labels.k"}]}
        }));
        assert!(!node_vanished(&manager_conflict));
    }

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
