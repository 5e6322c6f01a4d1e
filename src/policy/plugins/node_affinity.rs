//! `RemovePodsViolatingNodeAffinity` arguments.

use crate::policy::Namespaces;
use crate::policy::decode::{Decoder, Fields};
use crate::policy::rule::Rule;
use crate::policy::yaml::YamlNode;

use super::{Strategy, choices, label_selector_of, namespaces};

/// `nodeAffinityType`: which of a pod's node affinities to enforce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeAffinityType {
    /// Evict pods whose node no longer matches their required node affinity.
    Required,
    /// Evict pods that another node would suit better by their preferred node affinity.
    Preferred,
}

const REQUIRED: &str = "requiredDuringSchedulingIgnoredDuringExecution";
const PREFERRED: &str = "preferredDuringSchedulingIgnoredDuringExecution";

impl NodeAffinityType {
    pub fn as_str(self) -> &'static str {
        match self {
            NodeAffinityType::Required => REQUIRED,
            NodeAffinityType::Preferred => PREFERRED,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct NodeAffinityArgs {
    pub namespaces: Namespaces,
    pub label_selector: Option<crate::snapshot::Requirements>,
    /// In the order given; each type is one pass over the pods, as upstream.
    pub node_affinity_types: Vec<NodeAffinityType>,
}

impl Default for NodeAffinityArgs {
    /// Upstream refuses the plugin without `nodeAffinityType`; here it means the required
    /// affinity only, what upstream's Helm chart enables.
    fn default() -> Self {
        NodeAffinityArgs {
            namespaces: Namespaces::default(),
            label_selector: None,
            node_affinity_types: vec![NodeAffinityType::Required],
        }
    }
}

pub(super) fn decode(d: &mut Decoder, node: &YamlNode, path: &str) -> Strategy {
    let valid = ["namespaces", "labelSelector", "nodeAffinityType"];
    let Some(fields) = d.fields(node, path, &valid) else {
        return Strategy::NodeAffinity(NodeAffinityArgs::default());
    };
    let mut args = NodeAffinityArgs {
        namespaces: namespaces(d, fields.get("namespaces"), &fields.path("namespaces")),
        label_selector: label_selector_of(d, &fields),
        ..NodeAffinityArgs::default()
    };
    if let Some(types) = affinity_types(d, &fields) {
        args.node_affinity_types = types;
    }
    Strategy::NodeAffinity(args)
}

/// `nodeAffinityType`, when given: a non-empty list of the two types.
fn affinity_types(d: &mut Decoder, fields: &Fields<'_>) -> Option<Vec<NodeAffinityType>> {
    let node = fields.get("nodeAffinityType")?;
    let names = choices(
        d,
        fields,
        "nodeAffinityType",
        "nodeAffinityType",
        &[REQUIRED, PREFERRED],
    );
    if d.list(node, &fields.path("nodeAffinityType")).is_empty() {
        d.problem_at_as(
            Rule::MissingField,
            node,
            &fields.path("nodeAffinityType"),
            format!("nodeAffinityType needs at least one of {REQUIRED}, {PREFERRED}"),
        );
    }
    let mut types: Vec<NodeAffinityType> = Vec::new();
    for name in names {
        let kind = if name == REQUIRED {
            NodeAffinityType::Required
        } else {
            NodeAffinityType::Preferred
        };
        if !types.contains(&kind) {
            types.push(kind);
        }
    }
    Some(types)
}

pub(super) const LEGACY_PARAMS: &[&str] = &["labelSelector", "nodeAffinityType"];

pub(super) fn from_v1alpha1(
    d: &mut Decoder,
    params: &Fields<'_>,
    namespaces: Namespaces,
) -> Strategy {
    let mut args = NodeAffinityArgs {
        namespaces,
        label_selector: label_selector_of(d, params),
        ..NodeAffinityArgs::default()
    };
    if let Some(types) = affinity_types(d, params) {
        args.node_affinity_types = types;
    }
    Strategy::NodeAffinity(args)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{strategy, with_args};
    use super::{NodeAffinityArgs, NodeAffinityType};
    use crate::policy::Strategy;
    use crate::policy::testing::problem;

    const NAME: &str = "RemovePodsViolatingNodeAffinity";

    #[test]
    fn both_affinity_types_are_read_in_order() {
        let args = "          nodeAffinityType:\n          - preferredDuringSchedulingIgnoredDuringExecution\n          \
                    - requiredDuringSchedulingIgnoredDuringExecution\n";
        assert_eq!(
            strategy(NAME, args),
            Strategy::NodeAffinity(NodeAffinityArgs {
                node_affinity_types: vec![NodeAffinityType::Preferred, NodeAffinityType::Required],
                ..NodeAffinityArgs::default()
            })
        );
    }

    #[test]
    fn a_misspelt_affinity_type_gets_a_suggestion() {
        let text = with_args(
            NAME,
            "          nodeAffinityType: [requiredDuringSchedulingIgnoredDuringExecutio]\n",
        );
        assert_eq!(
            problem(&text),
            "policy.yaml:9:30: profiles[0].pluginConfig[0].args.nodeAffinityType[0]: unknown \
             nodeAffinityType \"requiredDuringSchedulingIgnoredDuringExecutio\"; did you mean \
             \"requiredDuringSchedulingIgnoredDuringExecution\"? valid: \
             requiredDuringSchedulingIgnoredDuringExecution, \
             preferredDuringSchedulingIgnoredDuringExecution"
        );
    }

    #[test]
    fn an_empty_affinity_type_list_is_a_problem() {
        let text = with_args(NAME, "          nodeAffinityType: []\n");
        assert!(problem(&text).ends_with(
            "nodeAffinityType needs at least one of \
            requiredDuringSchedulingIgnoredDuringExecution, \
            preferredDuringSchedulingIgnoredDuringExecution"
        ));
    }
}
