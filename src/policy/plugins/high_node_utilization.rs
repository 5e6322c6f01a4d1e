//! `HighNodeUtilization` arguments.

use crate::policy::Namespaces;
use crate::policy::decode::{Decoder, Fields};
use crate::policy::yaml::YamlNode;

use super::node_utilization::{
    LEGACY_THRESHOLDS, ResourceThresholds, evictable_namespaces, only_thresholding_resources,
    thresholds,
};
use super::{Strategy, legacy_section};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct HighNodeUtilizationArgs {
    /// A node with every resource at or below these percentages is underutilized: its pods
    /// are evicted so the others pack tighter.
    pub thresholds: ResourceThresholds,
    /// Nothing is done unless more nodes than this are underutilized.
    pub number_of_nodes: u32,
    /// Pods of these namespaces count for utilization but are never evicted (`exclude` only).
    pub evictable_namespaces: Namespaces,
    /// `evictionModes: [OnlyThresholdingResources]`: only pods requesting one of the
    /// thresholds' resources are evicted.
    pub only_thresholding_resources: bool,
}

/// The args' fields; the first two are also v1alpha1's `nodeResourceUtilizationThresholds`.
const FIELDS: [&str; 4] = [
    "thresholds",
    "numberOfNodes",
    "evictableNamespaces",
    "evictionModes",
];

pub(super) fn decode(d: &mut Decoder, node: &YamlNode, path: &str) -> Strategy {
    let Some(fields) = d.fields(node, path, &FIELDS) else {
        return Strategy::HighNodeUtilization(HighNodeUtilizationArgs::default());
    };
    let mut args = threshold_args(d, &fields, node);
    args.evictable_namespaces = evictable_namespaces(d, &fields);
    args.only_thresholding_resources = only_thresholding_resources(d, &fields);
    Strategy::HighNodeUtilization(args)
}

fn threshold_args(
    d: &mut Decoder,
    fields: &Fields<'_>,
    node: &YamlNode,
) -> HighNodeUtilizationArgs {
    HighNodeUtilizationArgs {
        thresholds: thresholds(d, fields, "thresholds", node),
        number_of_nodes: fields.integer::<u32>(d, "numberOfNodes").unwrap_or(0),
        ..HighNodeUtilizationArgs::default()
    }
}

/// `params.nodeResourceUtilizationThresholds: {thresholds, numberOfNodes}`; `params.namespaces`
/// becomes `evictableNamespaces`, as upstream's migration.
pub(super) fn from_v1alpha1(
    d: &mut Decoder,
    params: &Fields<'_>,
    namespaces: Namespaces,
) -> Strategy {
    let mut args = legacy_section(d, params, LEGACY_THRESHOLDS, &FIELDS[..2], threshold_args)
        .unwrap_or_default();
    args.evictable_namespaces = namespaces;
    Strategy::HighNodeUtilization(args)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{strategy, with_args};
    use super::HighNodeUtilizationArgs;
    use crate::policy::Strategy;
    use crate::policy::testing::problem;

    const NAME: &str = "HighNodeUtilization";

    #[test]
    fn thresholds_and_eviction_modes_convert() {
        let args = "          thresholds: {cpu: 20, nvidia.com/gpu: 10}\n          numberOfNodes: \
                    1\n          evictionModes: [OnlyThresholdingResources]\n";
        let Strategy::HighNodeUtilization(args) = strategy(NAME, args) else {
            panic!("a HighNodeUtilization strategy");
        };
        assert_eq!(
            args,
            HighNodeUtilizationArgs {
                thresholds: [("cpu".into(), 20.0), ("nvidia.com/gpu".into(), 10.0)].into(),
                number_of_nodes: 1,
                only_thresholding_resources: true,
                ..HighNodeUtilizationArgs::default()
            }
        );
    }

    #[test]
    fn an_unknown_eviction_mode_and_empty_thresholds_are_problems() {
        let text = with_args(
            NAME,
            "          thresholds: {cpu: 20}\n          evictionModes: [Everything]\n",
        );
        assert!(problem(&text).contains("unknown eviction mode \"Everything\""));
        let text = with_args(NAME, "          thresholds: {}\n");
        assert!(problem(&text).ends_with("no resource threshold is configured"));
    }
}
