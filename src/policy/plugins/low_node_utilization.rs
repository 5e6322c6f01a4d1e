//! `LowNodeUtilization` arguments.

use crate::policy::Namespaces;
use crate::policy::decode::{Decoder, Fields};
use crate::policy::rule::Rule;
use crate::policy::yaml::YamlNode;

use super::node_utilization::{
    LEGACY_THRESHOLDS, ResourceThresholds, UsageSource, evictable_namespaces, eviction_limits,
    metrics_utilization, only_thresholding_resources, thresholds, unmeasurable,
};
use super::{Strategy, legacy_section};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct LowNodeUtilizationArgs {
    /// A node with every resource at or below these percentages is underutilized.
    pub thresholds: ResourceThresholds,
    /// A node with any resource above these percentages is overutilized.
    pub target_thresholds: ResourceThresholds,
    /// The thresholds are distances below and above the mean utilization of the nodes.
    pub use_deviation_thresholds: bool,
    /// Nothing is done unless more nodes than this are underutilized.
    pub number_of_nodes: u32,
    /// Pods of these namespaces count for utilization but are never evicted (`exclude` only).
    pub evictable_namespaces: Namespaces,
    /// `evictionLimits.node`: at most this many evictions per node by this plugin.
    pub eviction_limit_per_node: Option<u32>,
    pub usage: UsageSource,
    /// `evictionModes: [OnlyThresholdingResources]` (upstream master): only pods requesting
    /// one of the thresholds' resources are evicted.
    pub only_thresholding_resources: bool,
}

/// The args' fields; the first four are also v1alpha1's `nodeResourceUtilizationThresholds`.
const FIELDS: [&str; 8] = [
    "thresholds",
    "targetThresholds",
    "useDeviationThresholds",
    "numberOfNodes",
    "evictableNamespaces",
    "evictionLimits",
    "metricsUtilization",
    "evictionModes",
];

pub(super) fn decode(d: &mut Decoder, node: &YamlNode, path: &str) -> Strategy {
    let Some(fields) = d.fields(node, path, &FIELDS) else {
        return Strategy::LowNodeUtilization(LowNodeUtilizationArgs::default());
    };
    let mut args = threshold_args(d, &fields, node);
    args.evictable_namespaces = evictable_namespaces(d, &fields);
    args.eviction_limit_per_node = eviction_limits(d, &fields);
    args.usage = metrics_utilization(d, &fields);
    args.only_thresholding_resources = only_thresholding_resources(d, &fields);
    if args.usage == UsageSource::KubernetesMetrics {
        warn_unmeasurable(d, &fields, &args.thresholds);
    }
    Strategy::LowNodeUtilization(args)
}

/// Thresholds on a resource that actual usage does not measure make upstream's plugin fail
/// every run (metrics-server reports cpu and memory only, the pod count is counted); the plan
/// then evicts nothing for this plugin, as upstream, and says so. The policy stays valid: upstream
/// loads it, and the profile's other plugins run.
fn warn_unmeasurable(d: &mut Decoder, fields: &Fields<'_>, thresholds: &ResourceThresholds) {
    let unmeasurable = unmeasurable(thresholds);
    if let (Some(first), Some(node)) = (unmeasurable.first(), fields.get("thresholds")) {
        d.warning_at(
            node,
            &fields.path("thresholds"),
            format!(
                "metricsUtilization reads actual usage, which has no {first} (metrics.k8s.io \
                 reports cpu and memory, and pods are counted): this plugin will evict nothing, \
                 as upstream, whose usage client fails on it"
            ),
        );
    }
}

/// The thresholds, deviation flag and node count, spelt the same in v1alpha1's
/// `nodeResourceUtilizationThresholds`.
fn threshold_args(d: &mut Decoder, fields: &Fields<'_>, node: &YamlNode) -> LowNodeUtilizationArgs {
    let low = thresholds(d, fields, "thresholds", node);
    let target = thresholds(d, fields, "targetThresholds", node);
    let deviation = fields.bool(d, "useDeviationThresholds").unwrap_or(false);
    if !low.is_empty() && !target.is_empty() {
        check_pairs(d, fields, node, &low, &target, deviation);
    }
    LowNodeUtilizationArgs {
        thresholds: low,
        target_thresholds: target,
        use_deviation_thresholds: deviation,
        number_of_nodes: fields.integer::<u32>(d, "numberOfNodes").unwrap_or(0),
        ..LowNodeUtilizationArgs::default()
    }
}

/// Both mappings name the same resources, and (unless they are deviations) no threshold is
/// above its target.
fn check_pairs(
    d: &mut Decoder,
    fields: &Fields<'_>,
    node: &YamlNode,
    low: &ResourceThresholds,
    target: &ResourceThresholds,
    deviation: bool,
) {
    let at = fields.get("targetThresholds").unwrap_or(node);
    if low.keys().ne(target.keys()) {
        d.problem_at_as(
            Rule::Conflict,
            at,
            &fields.path("targetThresholds"),
            format!(
                "thresholds and targetThresholds configured different resources ({} and {})",
                low.keys().cloned().collect::<Vec<_>>().join(", "),
                target.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        );
        return;
    }
    for (name, value) in low {
        if !deviation && *value > target[name] {
            d.problem_at_as(
                Rule::Conflict,
                at,
                &fields.path("targetThresholds"),
                format!(
                    "thresholds' {name} percentage ({value}) is greater than targetThresholds' \
                     ({})",
                    target[name]
                ),
            );
        }
    }
}

/// `params.nodeResourceUtilizationThresholds: {thresholds, targetThresholds,
/// useDeviationThresholds, numberOfNodes}`; as upstream's migration, `params.namespaces`
/// becomes `evictableNamespaces`.
pub(super) fn from_v1alpha1(
    d: &mut Decoder,
    params: &Fields<'_>,
    namespaces: Namespaces,
) -> Strategy {
    let mut args = legacy_section(d, params, LEGACY_THRESHOLDS, &FIELDS[..4], threshold_args)
        .unwrap_or_default();
    args.evictable_namespaces = namespaces;
    Strategy::LowNodeUtilization(args)
}

#[cfg(test)]
mod tests {
    use super::super::tests::with_args;
    use super::LowNodeUtilizationArgs;
    use crate::policy::Strategy;
    use crate::policy::plugins::node_utilization::UsageSource;
    use crate::policy::testing::{load, problem, problems, warnings};

    const NAME: &str = "LowNodeUtilization";

    /// The policy with the top-level metrics provider actual usage needs.
    fn with_metrics(text: &str) -> String {
        text.replacen(
            "clusterName: test\n",
            "clusterName: test\nmetricsProviders: [{source: KubernetesMetrics}]\n",
            1,
        )
    }

    #[test]
    fn thresholds_and_options_convert() {
        let args = "          thresholds: {cpu: 20, memory: 20.5}\n          targetThresholds: \
                    {cpu: 50, memory: 60}\n          numberOfNodes: 2\n          \
                    evictableNamespaces: {exclude: [kube-system]}\n          evictionLimits: \
                    {node: 3}\n          metricsUtilization: {source: KubernetesMetrics}\n";
        let text = with_metrics(&with_args(NAME, args));
        let profile = load(&text).policy.profiles.remove(0);
        let Some(Strategy::LowNodeUtilization(args)) = profile.balance.into_iter().next() else {
            panic!("a LowNodeUtilization strategy");
        };
        assert_eq!(args.thresholds["memory"], 20.5);
        assert_eq!(args.target_thresholds["memory"], 60.0);
        assert_eq!(args.number_of_nodes, 2);
        assert_eq!(args.evictable_namespaces.exclude, ["kube-system"]);
        assert_eq!(args.eviction_limit_per_node, Some(3));
        assert_eq!(args.usage, UsageSource::KubernetesMetrics);
        assert!(!args.use_deviation_thresholds);
    }

    #[test]
    fn eviction_modes_convert_as_upstream_master_spells_them() {
        let args = "          thresholds: {cpu: 20}\n          targetThresholds: {cpu: 50}\n          \
                    evictionModes: [OnlyThresholdingResources]\n";
        let profile = load(&with_args(NAME, args)).policy.profiles.remove(0);
        let Some(Strategy::LowNodeUtilization(args)) = profile.balance.into_iter().next() else {
            panic!("a LowNodeUtilization strategy");
        };
        assert!(args.only_thresholding_resources);
        let args = "          thresholds: {cpu: 20}\n          targetThresholds: {cpu: 50}\n          \
                    evictionModes: [OnlyThresholding]\n";
        let problem = problem(&with_args(NAME, args));
        assert!(
            problem.contains("unknown eviction mode \"OnlyThresholding\""),
            "{problem}"
        );
    }

    #[test]
    fn a_misspelt_eviction_modes_gets_a_position_and_a_suggestion() {
        let args = "          thresholds: {cpu: 20}\n          targetThresholds: {cpu: 50}\n          \
                    evictionMode: [OnlyThresholdingResources]\n";
        assert_eq!(
            problem(&with_args(NAME, args)),
            "policy.yaml:11:11: profiles[0].pluginConfig[0].args.evictionMode: unknown field \
             \"evictionMode\"; did you mean \"evictionModes\"? valid: thresholds, \
             targetThresholds, useDeviationThresholds, numberOfNodes, evictableNamespaces, \
             evictionLimits, metricsUtilization, evictionModes"
        );
    }

    #[test]
    fn actual_usage_of_an_extended_resource_warns_that_nothing_will_move() {
        let args = "          thresholds: {cpu: 20, example.com/foo: 20}\n          \
                    targetThresholds: {cpu: 50, example.com/foo: 50}\n          \
                    metricsUtilization: {source: KubernetesMetrics}\n";
        let found = warnings(&with_metrics(&with_args(NAME, args)));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains(
                "thresholds: metricsUtilization reads actual usage, which has no \
                 example.com/foo"
            ),
            "{}",
            found[0]
        );
        // By requests the same thresholds are fine.
        let args = "          thresholds: {cpu: 20, example.com/foo: 20}\n          \
                    targetThresholds: {cpu: 50, example.com/foo: 50}\n";
        assert!(warnings(&with_args(NAME, args)).is_empty());
    }

    #[test]
    fn the_deprecated_metrics_server_flag_reads_actual_usage_too() {
        let args = "          thresholds: {cpu: 20}\n          targetThresholds: {cpu: 50}\n          \
                    metricsUtilization: {metricsServer: true}\n";
        let text = with_metrics(&with_args(NAME, args));
        let profile = load(&text).policy.profiles.remove(0);
        let Some(Strategy::LowNodeUtilization(LowNodeUtilizationArgs { usage, .. })) =
            profile.balance.into_iter().next()
        else {
            panic!("a LowNodeUtilization strategy");
        };
        assert_eq!(usage, UsageSource::KubernetesMetrics);
    }

    #[test]
    fn thresholds_are_required_and_checked_as_upstream_checks_them() {
        let text = with_args(NAME, "          numberOfNodes: 1\n");
        assert_eq!(
            problems(&text)
                .iter()
                .filter(|p| p.ends_with(
                    "must be set (upstream has no default and refuses the \
                                        plugin without it)"
                ))
                .count(),
            2
        );
        let text = with_args(
            NAME,
            "          thresholds: {cpu: 120}\n          targetThresholds: {cpu: 50}\n",
        );
        assert!(problem(&text).ends_with("cpu threshold 120 is not in [0, 100]"));
        let text = with_args(
            NAME,
            "          thresholds: {cpu: 20}\n          targetThresholds: {memory: 50}\n",
        );
        assert!(problem(&text).contains("configured different resources (cpu and memory)"));
        let text = with_args(
            NAME,
            "          thresholds: {cpu: 60}\n          targetThresholds: {cpu: 50}\n",
        );
        assert!(
            problem(&text).ends_with(
                "thresholds' cpu percentage (60) is greater than targetThresholds' (50)"
            )
        );
        let text = with_args(
            NAME,
            "          thresholds: {cpu: 60}\n          targetThresholds: {cpu: 50}\n          useDeviationThresholds: true\n",
        );
        load(&text);
    }

    #[test]
    fn actual_usage_needs_the_top_level_metrics_provider_as_upstream() {
        let text = with_args(
            NAME,
            "          thresholds: {cpu: 20}\n          targetThresholds: {cpu: 50}\n          \
             metricsUtilization: {source: KubernetesMetrics}\n",
        );
        assert_eq!(
            problem(&text),
            "policy.yaml:1:1: profiles: profile p: LowNodeUtilization reads actual usage \
             (metricsUtilization), which needs metricsProviders: [{source: KubernetesMetrics}] at \
             the top level (as upstream)"
        );
    }

    #[test]
    fn included_namespaces_and_prometheus_are_refused() {
        let common = "          thresholds: {cpu: 20}\n          targetThresholds: {cpu: 50}\n";
        let text = with_args(
            NAME,
            &format!("{common}          evictableNamespaces: {{include: [a]}}\n"),
        );
        assert!(problem(&text).ends_with(
            "only exclude namespaces can be set, inclusion is not supported (as upstream)"
        ));
        let text = with_args(
            NAME,
            &format!(
                "{common}          metricsUtilization: {{source: Prometheus, prometheus: {{query: up}}}}\n"
            ),
        );
        assert!(problem(&text).contains("source Prometheus is not supported by this tool"));
        let text = with_metrics(&with_args(
            NAME,
            &format!(
                "{common}          metricsUtilization: {{source: KubernetesMetrics, metricsServer: true}}\n"
            ),
        ));
        assert!(
            problem(&text)
                .contains("not allowed to set both source KubernetesMetrics and metricsServer")
        );
    }
}
