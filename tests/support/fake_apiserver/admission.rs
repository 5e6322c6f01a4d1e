//! The chart's ValidatingAdmissionPolicy (charts/vsphere-descheduler/templates/
//! admissionpolicy.yaml) as kube-apiserver enforces it on node updates, for the parts a label
//! write can touch: labels outside the owned keys may not be added, changed or removed (former
//! keys may be removed), annotations not changed at all. A denial is what kube-apiserver
//! 1.32 answered: `403 Forbidden`, `nodes "N" is forbidden: ValidatingAdmissionPolicy '<policy>' with
//! binding '<binding>' denied request: <message>`, with that sentence after `forbidden: ` as the
//! one cause. Admission runs after authorization and object validation, and before anything is
//! stored, so a dry run is judged too.
//!
//! The real policy matches only the runs' ServiceAccount; the fake has one identity, so a test
//! that sets the policy says the requests come from it.

use std::collections::BTreeMap;

use axum::response::Response;
use serde_json::json;

use super::status;

/// The chart's admission policy, as installed for one release.
#[derive(Clone, Debug)]
pub struct NodeLabelPolicy {
    /// The policy's name, and its binding's (the chart names both after the release).
    pub name: String,
    /// The label keys the chart's policy value has the runs write (`vsphere.labels`).
    pub owned_keys: Vec<String>,
    /// `admissionPolicy.formerLabelKeys`: may be removed, never set.
    pub former_keys: Vec<String>,
}

impl NodeLabelPolicy {
    /// The policy of the release `fullname` whose runs own `owned_keys`.
    pub fn chart(fullname: &str, owned_keys: &[&str]) -> NodeLabelPolicy {
        NodeLabelPolicy {
            name: fullname.to_string(),
            owned_keys: owned_keys.iter().map(|key| key.to_string()).collect(),
            former_keys: Vec::new(),
        }
    }

    /// The 403 of an update of node `node` from the old labels and annotations to the new, or
    /// `None` when the policy lets it through.
    pub fn judge(
        &self,
        node: &str,
        labels: (&BTreeMap<String, String>, &BTreeMap<String, String>),
        annotations: (&BTreeMap<String, String>, &BTreeMap<String, String>),
    ) -> Option<Response> {
        let who = format!(
            "vsphere-descheduler may change only the node labels {}",
            self.owned_keys.join(", ")
        );
        let owned = |key: &String| self.owned_keys.contains(key);
        let (old_labels, new_labels) = labels;
        let refused_labels: Vec<&String> = new_labels
            .iter()
            .filter(|(key, value)| !owned(key) && old_labels.get(*key) != Some(*value))
            .map(|(key, _)| key)
            .chain(old_labels.keys().filter(|key| {
                !owned(key) && !self.former_keys.contains(key) && !new_labels.contains_key(*key)
            }))
            .collect();
        let (old_annotations, new_annotations) = annotations;
        let refused_annotations: Vec<&String> = new_annotations
            .iter()
            .filter(|(key, value)| old_annotations.get(*key) != Some(*value))
            .map(|(key, _)| key)
            .chain(
                old_annotations
                    .keys()
                    .filter(|key| !new_annotations.contains_key(*key)),
            )
            .collect();
        let message = if let Some(first) = refused_labels.first() {
            change(
                &who,
                "label",
                first,
                old_labels,
                new_labels,
                refused_labels.len(),
            )
        } else if let Some(first) = refused_annotations.first() {
            change(
                &who,
                "annotation",
                first,
                old_annotations,
                new_annotations,
                refused_annotations.len(),
            )
        } else {
            return None;
        };
        let cause = format!(
            "ValidatingAdmissionPolicy '{}' with binding '{}' denied request: {message}",
            self.name, self.name
        );
        Some(status(
            403,
            "Forbidden",
            &format!("nodes \"{node}\" is forbidden: {cause}"),
            Some(json!({"name": node, "kind": "nodes", "causes": [{"message": cause}]})),
        ))
    }
}

/// The policy's messageExpression: the first refused key, how it changed, how many more.
fn change(
    who: &str,
    what: &str,
    key: &str,
    old: &BTreeMap<String, String>,
    new: &BTreeMap<String, String>,
    refused: usize,
) -> String {
    let how = match (old.contains_key(key), new.contains_key(key)) {
        (true, true) => "was changed",
        (true, false) => "was removed",
        _ => "was added",
    };
    let more = if refused > 1 {
        format!(" (and {} more)", refused - 1)
    } else {
        String::new()
    };
    format!("{who}: {what} {key} {how}{more}")
}
