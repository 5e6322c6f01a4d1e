//! `RemovePodsViolatingNodeTaints` arguments.

use crate::policy::Namespaces;
use crate::policy::decode::{Decoder, Fields};
use crate::policy::rule::Rule;
use crate::policy::yaml::YamlNode;

use super::{Strategy, label_selector_of, namespaces};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeTaintsArgs {
    pub namespaces: Namespaces,
    pub label_selector: Option<crate::snapshot::Requirements>,
    /// Untolerated `PreferNoSchedule` taints count too (only `NoSchedule` by default).
    pub include_prefer_no_schedule: bool,
    /// Taints, as `key` or `key=value`, that never count.
    pub excluded_taints: Vec<String>,
    /// When given, only these taints (`key` or `key=value`) count; an empty list, none.
    pub included_taints: Option<Vec<String>>,
}

const FIELDS: [&str; 5] = [
    "namespaces",
    "labelSelector",
    "includePreferNoSchedule",
    "excludedTaints",
    "includedTaints",
];

pub(super) fn decode(d: &mut Decoder, node: &YamlNode, path: &str) -> Strategy {
    let Some(fields) = d.fields(node, path, &FIELDS) else {
        return Strategy::NodeTaints(NodeTaintsArgs::default());
    };
    let namespaces = namespaces(d, fields.get("namespaces"), &fields.path("namespaces"));
    Strategy::NodeTaints(args(d, &fields, namespaces))
}

/// The arguments other than `namespaces`, which v1alpha1 `params` spell the same way.
fn args(d: &mut Decoder, fields: &Fields<'_>, namespaces: Namespaces) -> NodeTaintsArgs {
    let taint = |text: &str| {
        let key = text.split_once('=').map_or(text, |(key, _)| key);
        key.is_empty()
            .then(|| format!("invalid taint {text:?}: expected key or key=value"))
    };
    let included_taints = fields.get("includedTaints").map(|node| {
        let taints = fields.strings(d, "includedTaints", taint);
        if taints.is_empty() {
            d.warning_at(
                node,
                &fields.path("includedTaints"),
                "an empty includedTaints counts no taint, so RemovePodsViolatingNodeTaints \
                 evicts nothing (as upstream); leave it out to count every taint",
            );
        }
        taints
    });
    let excluded_taints = fields.strings(d, "excludedTaints", taint);
    if let (Some(node), Some(included)) = (fields.get("includedTaints"), &included_taints)
        && !included.is_empty()
        && !excluded_taints.is_empty()
    {
        d.problem_at_as(
            Rule::Conflict,
            node,
            &fields.path("includedTaints"),
            "either includedTaints or excludedTaints can be set, but not both (as upstream)",
        );
    }
    NodeTaintsArgs {
        namespaces,
        label_selector: label_selector_of(d, fields),
        include_prefer_no_schedule: fields.bool(d, "includePreferNoSchedule").unwrap_or(false),
        excluded_taints,
        included_taints,
    }
}

pub(super) const LEGACY_PARAMS: &[&str] = &[
    "labelSelector",
    "includePreferNoSchedule",
    "excludedTaints",
    "includedTaints",
];

pub(super) fn from_v1alpha1(
    d: &mut Decoder,
    params: &Fields<'_>,
    namespaces: Namespaces,
) -> Strategy {
    Strategy::NodeTaints(args(d, params, namespaces))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{strategy, with_args};
    use super::NodeTaintsArgs;
    use crate::policy::Strategy;
    use crate::policy::testing::{problem, warnings};

    const NAME: &str = "RemovePodsViolatingNodeTaints";

    #[test]
    fn taint_args_convert() {
        let args =
            "          includePreferNoSchedule: true\n          excludedTaints: [dedicated=gpu]\n";
        assert_eq!(
            strategy(NAME, args),
            Strategy::NodeTaints(NodeTaintsArgs {
                include_prefer_no_schedule: true,
                excluded_taints: vec!["dedicated=gpu".into()],
                ..NodeTaintsArgs::default()
            })
        );
        let args = "          includedTaints: [maintenance]\n";
        assert_eq!(
            strategy(NAME, args),
            Strategy::NodeTaints(NodeTaintsArgs {
                included_taints: Some(vec!["maintenance".into()]),
                ..NodeTaintsArgs::default()
            })
        );
    }

    #[test]
    fn included_and_excluded_taints_together_are_a_problem_as_upstream() {
        let text = with_args(
            NAME,
            "          excludedTaints: [dedicated=gpu]\n          includedTaints: [maintenance]\n",
        );
        assert_eq!(
            problem(&text),
            "policy.yaml:10:27: profiles[0].pluginConfig[0].args.includedTaints: either \
             includedTaints or excludedTaints can be set, but not both (as upstream)"
        );
    }

    #[test]
    fn a_taint_without_a_key_is_a_problem_and_an_empty_include_list_a_warning() {
        let text = with_args(NAME, "          excludedTaints: [\"=x\"]\n");
        assert!(problem(&text).ends_with("invalid taint \"=x\": expected key or key=value"));
        let text = with_args(NAME, "          includedTaints: []\n");
        assert!(warnings(&text)[0].contains("an empty includedTaints counts no taint"));
    }
}
