//! `RemoveDuplicates` arguments.

use crate::policy::Namespaces;
use crate::policy::decode::{Decoder, Fields};
use crate::policy::yaml::YamlNode;

use super::{Strategy, namespaces, owner_kinds};

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DuplicatesArgs {
    pub namespaces: Namespaces,
    /// Owner kinds whose pods are never treated as duplicates (e.g. `ReplicaSet`, `Job`).
    pub exclude_owner_kinds: Vec<String>,
}

pub(super) fn decode(d: &mut Decoder, node: &YamlNode, path: &str) -> Strategy {
    let Some(fields) = d.fields(node, path, &["namespaces", "excludeOwnerKinds"]) else {
        return Strategy::Duplicates(DuplicatesArgs::default());
    };
    Strategy::Duplicates(DuplicatesArgs {
        namespaces: namespaces(d, fields.get("namespaces"), &fields.path("namespaces")),
        exclude_owner_kinds: owner_kinds(d, &fields, "excludeOwnerKinds"),
    })
}

pub(super) const LEGACY_PARAMS: &[&str] = &["removeDuplicates"];

/// `params.removeDuplicates: {excludeOwnerKinds}`.
pub(super) fn from_v1alpha1(
    d: &mut Decoder,
    params: &Fields<'_>,
    namespaces: Namespaces,
) -> Strategy {
    let exclude_owner_kinds = match params.get("removeDuplicates") {
        Some(node) => match d.fields(
            node,
            &params.path("removeDuplicates"),
            &["excludeOwnerKinds"],
        ) {
            Some(fields) => owner_kinds(d, &fields, "excludeOwnerKinds"),
            None => Vec::new(),
        },
        None => Vec::new(),
    };
    Strategy::Duplicates(DuplicatesArgs {
        namespaces,
        exclude_owner_kinds,
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::with_args;
    use crate::policy::testing::problem;

    #[test]
    fn owner_kinds_are_checked() {
        let text = with_args(
            "RemoveDuplicates",
            "          excludeOwnerKinds: [\"Replica Set\"]\n",
        );
        assert!(problem(&text).ends_with(
            "invalid kind \"Replica Set\": expected a Kubernetes kind such as ReplicaSet or Job"
        ));
    }
}
