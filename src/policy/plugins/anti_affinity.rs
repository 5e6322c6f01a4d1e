//! `RemovePodsViolatingInterPodAntiAffinity` arguments.

use crate::policy::Namespaces;
use crate::policy::decode::{Decoder, Fields};
use crate::policy::yaml::YamlNode;

use super::{Strategy, label_selector_of, namespaces};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct AntiAffinityArgs {
    pub namespaces: Namespaces,
    pub label_selector: Option<crate::snapshot::Requirements>,
    /// `includeSoftConstraints` (default false): act on preferred anti-affinity terms too, when
    /// the pod has a place that breaks none of them.
    pub include_soft_constraints: bool,
}

const FIELDS: [&str; 3] = ["namespaces", "labelSelector", "includeSoftConstraints"];

pub(super) fn decode(d: &mut Decoder, node: &YamlNode, path: &str) -> Strategy {
    let Some(fields) = d.fields(node, path, &FIELDS) else {
        return Strategy::InterPodAntiAffinity(AntiAffinityArgs::default());
    };
    Strategy::InterPodAntiAffinity(AntiAffinityArgs {
        namespaces: namespaces(d, fields.get("namespaces"), &fields.path("namespaces")),
        label_selector: label_selector_of(d, &fields),
        include_soft_constraints: fields.bool(d, "includeSoftConstraints").unwrap_or(false),
    })
}

pub(super) const LEGACY_PARAMS: &[&str] = &["labelSelector"];

pub(super) fn from_v1alpha1(
    d: &mut Decoder,
    params: &Fields<'_>,
    namespaces: Namespaces,
) -> Strategy {
    Strategy::InterPodAntiAffinity(AntiAffinityArgs {
        namespaces,
        label_selector: label_selector_of(d, params),
        // Upstream's v1alpha1 had no such param.
        include_soft_constraints: false,
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::{strategy, with_args};
    use super::AntiAffinityArgs;
    use crate::policy::Strategy;
    use crate::policy::testing::problem;

    const NAME: &str = "RemovePodsViolatingInterPodAntiAffinity";

    #[test]
    fn include_soft_constraints_is_read_and_off_by_default() {
        assert_eq!(
            strategy(NAME, "          includeSoftConstraints: true\n"),
            Strategy::InterPodAntiAffinity(AntiAffinityArgs {
                include_soft_constraints: true,
                ..AntiAffinityArgs::default()
            })
        );
        assert_eq!(
            strategy(NAME, "          {}\n"),
            Strategy::InterPodAntiAffinity(AntiAffinityArgs::default())
        );
    }

    #[test]
    fn a_misspelt_include_soft_constraints_gets_a_suggestion() {
        let text = with_args(NAME, "          includeSoftConstraint: true\n");
        assert_eq!(
            problem(&text),
            "policy.yaml:9:11: profiles[0].pluginConfig[0].args.includeSoftConstraint: unknown \
             field \"includeSoftConstraint\"; did you mean \"includeSoftConstraints\"? valid: \
             namespaces, labelSelector, includeSoftConstraints"
        );
    }
}
