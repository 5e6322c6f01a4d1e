//! The plugin registry, policy side: every strategy this tool runs, with its upstream name, its
//! extension point, and how its arguments are read (from `pluginConfig` args and from a
//! `descheduler/v1alpha1` strategy's `params`) and defaulted.
//!
//! Each plugin's arguments live in a module of their own, named after the plugin; this file
//! lists them once, in the table [`PLUGINS`], so adding a plugin touches its module, its row
//! there and its variants of [`PluginKind`] and [`Strategy`] (the planner has its registry in
//! `plan/plugins/`). CONTRIBUTING.md has the whole recipe.

mod anti_affinity;
mod duplicates;
mod failed_pods;
mod high_node_utilization;
mod low_node_utilization;
mod node_affinity;
mod node_taints;
mod node_utilization;
mod pod_life_time;
mod too_many_restarts;
mod topology_spread;

pub use anti_affinity::AntiAffinityArgs;
pub use duplicates::DuplicatesArgs;
pub use failed_pods::FailedPodsArgs;
pub use high_node_utilization::HighNodeUtilizationArgs;
pub use low_node_utilization::LowNodeUtilizationArgs;
pub use node_affinity::{NodeAffinityArgs, NodeAffinityType};
pub use node_taints::NodeTaintsArgs;
pub use node_utilization::{BASIC_RESOURCES, ResourceThresholds, UsageSource, unmeasurable};
pub use pod_life_time::{ConditionFilter, OwnerKinds, PodLifeTimeArgs};
pub use too_many_restarts::TooManyRestartsArgs;
pub use topology_spread::{DefaultConstraint, TopologySpreadArgs};

use crate::policy::rule::Rule;
use crate::snapshot::Requirements;
use std::fmt;

use serde::{Serialize, Serializer};

use super::Namespaces;
use super::decode::{Decoder, Fields, index};
use super::names::check_dns_label;
use super::selector::label_selector;
use super::yaml::{Value, YamlNode};

/// A strategy with its arguments.
#[derive(Clone, Debug, PartialEq)]
pub enum Strategy {
    InterPodAntiAffinity(AntiAffinityArgs),
    TopologySpread(TopologySpreadArgs),
    Duplicates(DuplicatesArgs),
    NodeAffinity(NodeAffinityArgs),
    NodeTaints(NodeTaintsArgs),
    TooManyRestarts(TooManyRestartsArgs),
    PodLifeTime(PodLifeTimeArgs),
    FailedPods(FailedPodsArgs),
    LowNodeUtilization(LowNodeUtilizationArgs),
    HighNodeUtilization(HighNodeUtilizationArgs),
}

impl Strategy {
    /// Whether the strategy reads actual usage from `metrics.k8s.io`.
    pub fn reads_metrics(&self) -> bool {
        matches!(self, Strategy::LowNodeUtilization(args) if args.usage == UsageSource::KubernetesMetrics)
    }

    /// Which plugin this is: what reports, events and metrics name it by.
    pub fn kind(&self) -> PluginKind {
        match self {
            Strategy::InterPodAntiAffinity(_) => PluginKind::InterPodAntiAffinity,
            Strategy::TopologySpread(_) => PluginKind::TopologySpread,
            Strategy::Duplicates(_) => PluginKind::Duplicates,
            Strategy::NodeAffinity(_) => PluginKind::NodeAffinity,
            Strategy::NodeTaints(_) => PluginKind::NodeTaints,
            Strategy::TooManyRestarts(_) => PluginKind::TooManyRestarts,
            Strategy::PodLifeTime(_) => PluginKind::PodLifeTime,
            Strategy::FailedPods(_) => PluginKind::FailedPods,
            Strategy::LowNodeUtilization(_) => PluginKind::LowNodeUtilization,
            Strategy::HighNodeUtilization(_) => PluginKind::HighNodeUtilization,
        }
    }
}

/// Where a strategy runs: upstream's extension points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExtensionPoint {
    Deschedule,
    Balance,
}

impl ExtensionPoint {
    /// The key under `plugins:`.
    pub fn key(self) -> &'static str {
        match self {
            ExtensionPoint::Deschedule => "deschedule",
            ExtensionPoint::Balance => "balance",
        }
    }
}

/// A supported plugin (a strategy, before its arguments are read): the one name of a strategy
/// wherever the policy, the plan, the report and the metrics speak of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PluginKind {
    InterPodAntiAffinity,
    TopologySpread,
    Duplicates,
    NodeAffinity,
    NodeTaints,
    TooManyRestarts,
    PodLifeTime,
    FailedPods,
    LowNodeUtilization,
    HighNodeUtilization,
}

/// What the registry knows of one plugin: a row of [`PLUGINS`].
pub(super) struct PluginSpec {
    kind: PluginKind,
    /// The upstream plugin name, which is also its `descheduler/v1alpha1` strategy name: what
    /// policies enable, reports and events show and metrics label.
    name: &'static str,
    point: ExtensionPoint,
    /// The strategy with its default arguments (what an enabled plugin without `pluginConfig`
    /// gets).
    default: fn() -> Strategy,
    /// Decodes `pluginConfig[].args` (a mapping or null).
    decode: fn(&mut Decoder, &YamlNode, &str) -> Strategy,
    /// The `descheduler/v1alpha1` strategy `params` this plugin reads beyond the common ones
    /// (`namespaces`, the priority threshold, `nodeFit`).
    pub legacy_params: &'static [&'static str],
    /// Converts a v1alpha1 strategy's `params` (its namespaces already read).
    legacy: fn(&mut Decoder, &Fields<'_>, Namespaces) -> Strategy,
    /// The argument that has no default, when one has none: the plugin cannot run without a
    /// `pluginConfig` entry setting it (upstream refuses it too).
    pub required: Option<&'static str>,
    /// Whether a v1alpha1 strategy keeps the evictor's nodeFit (upstream's migration turned it
    /// off for PodLifeTime: an old pod is replaced wherever it may land).
    pub legacy_node_fit: bool,
}

/// The registry: one row per plugin, in [`PluginKind`]'s order (a test holds it to the enum).
static PLUGINS: [PluginSpec; 10] = [
    PluginSpec {
        kind: PluginKind::InterPodAntiAffinity,
        name: "RemovePodsViolatingInterPodAntiAffinity",
        point: ExtensionPoint::Deschedule,
        default: || Strategy::InterPodAntiAffinity(AntiAffinityArgs::default()),
        decode: anti_affinity::decode,
        legacy_params: anti_affinity::LEGACY_PARAMS,
        legacy: anti_affinity::from_v1alpha1,
        required: None,
        legacy_node_fit: true,
    },
    PluginSpec {
        kind: PluginKind::TopologySpread,
        name: "RemovePodsViolatingTopologySpreadConstraint",
        point: ExtensionPoint::Balance,
        default: || Strategy::TopologySpread(TopologySpreadArgs::default()),
        decode: topology_spread::decode,
        legacy_params: topology_spread::LEGACY_PARAMS,
        legacy: topology_spread::from_v1alpha1,
        required: None,
        legacy_node_fit: true,
    },
    PluginSpec {
        kind: PluginKind::Duplicates,
        name: "RemoveDuplicates",
        point: ExtensionPoint::Balance,
        default: || Strategy::Duplicates(DuplicatesArgs::default()),
        decode: duplicates::decode,
        legacy_params: duplicates::LEGACY_PARAMS,
        legacy: duplicates::from_v1alpha1,
        required: None,
        legacy_node_fit: true,
    },
    PluginSpec {
        kind: PluginKind::NodeAffinity,
        name: "RemovePodsViolatingNodeAffinity",
        point: ExtensionPoint::Deschedule,
        default: || Strategy::NodeAffinity(NodeAffinityArgs::default()),
        decode: node_affinity::decode,
        legacy_params: node_affinity::LEGACY_PARAMS,
        legacy: node_affinity::from_v1alpha1,
        required: None,
        legacy_node_fit: true,
    },
    PluginSpec {
        kind: PluginKind::NodeTaints,
        name: "RemovePodsViolatingNodeTaints",
        point: ExtensionPoint::Deschedule,
        default: || Strategy::NodeTaints(NodeTaintsArgs::default()),
        decode: node_taints::decode,
        legacy_params: node_taints::LEGACY_PARAMS,
        legacy: node_taints::from_v1alpha1,
        required: None,
        legacy_node_fit: true,
    },
    PluginSpec {
        kind: PluginKind::TooManyRestarts,
        name: "RemovePodsHavingTooManyRestarts",
        point: ExtensionPoint::Deschedule,
        default: || Strategy::TooManyRestarts(TooManyRestartsArgs::default()),
        decode: too_many_restarts::decode,
        legacy_params: too_many_restarts::LEGACY_PARAMS,
        legacy: too_many_restarts::from_v1alpha1,
        required: Some(too_many_restarts::REQUIRED),
        legacy_node_fit: true,
    },
    PluginSpec {
        kind: PluginKind::PodLifeTime,
        name: "PodLifeTime",
        point: ExtensionPoint::Deschedule,
        default: || Strategy::PodLifeTime(PodLifeTimeArgs::default()),
        decode: pod_life_time::decode,
        legacy_params: pod_life_time::LEGACY_PARAMS,
        legacy: pod_life_time::from_v1alpha1,
        required: Some(pod_life_time::REQUIRED),
        legacy_node_fit: false,
    },
    PluginSpec {
        kind: PluginKind::FailedPods,
        name: "RemoveFailedPods",
        point: ExtensionPoint::Deschedule,
        default: || Strategy::FailedPods(FailedPodsArgs::default()),
        decode: failed_pods::decode,
        legacy_params: failed_pods::LEGACY_PARAMS,
        legacy: failed_pods::from_v1alpha1,
        required: None,
        legacy_node_fit: true,
    },
    PluginSpec {
        kind: PluginKind::LowNodeUtilization,
        name: "LowNodeUtilization",
        point: ExtensionPoint::Balance,
        default: || Strategy::LowNodeUtilization(LowNodeUtilizationArgs::default()),
        decode: low_node_utilization::decode,
        legacy_params: node_utilization::LEGACY_PARAMS,
        legacy: low_node_utilization::from_v1alpha1,
        required: Some(node_utilization::REQUIRED),
        legacy_node_fit: true,
    },
    PluginSpec {
        kind: PluginKind::HighNodeUtilization,
        name: "HighNodeUtilization",
        point: ExtensionPoint::Balance,
        default: || Strategy::HighNodeUtilization(HighNodeUtilizationArgs::default()),
        decode: high_node_utilization::decode,
        legacy_params: node_utilization::LEGACY_PARAMS,
        legacy: high_node_utilization::from_v1alpha1,
        required: Some(node_utilization::REQUIRED),
        legacy_node_fit: true,
    },
];

impl PluginKind {
    /// Every plugin, in the registry's order.
    pub fn all() -> impl Iterator<Item = PluginKind> {
        PLUGINS.iter().map(|spec| spec.kind)
    }

    /// The plugin's row of the registry.
    pub(super) fn spec(self) -> &'static PluginSpec {
        &PLUGINS[self as usize]
    }

    /// The upstream plugin name: what policies enable, reports and events show and metrics
    /// label.
    pub fn as_str(self) -> &'static str {
        self.spec().name
    }

    /// The plugin of an upstream name, when this tool implements it.
    pub fn from_name(name: &str) -> Option<PluginKind> {
        PLUGINS
            .iter()
            .find(|spec| spec.name == name)
            .map(|spec| spec.kind)
    }

    /// The extension point the plugin implements upstream.
    pub fn extension_point(self) -> ExtensionPoint {
        self.spec().point
    }

    /// The strategy with its default arguments.
    pub(super) fn with_default_args(self) -> Strategy {
        (self.spec().default)()
    }

    /// Decodes the plugin's `args`; absent args are the defaults.
    pub(super) fn decode_args(
        self,
        d: &mut Decoder,
        node: Option<&YamlNode>,
        path: &str,
    ) -> Strategy {
        match node {
            Some(node) => (self.spec().decode)(d, node, path),
            None => self.with_default_args(),
        }
    }

    /// The strategy a v1alpha1 entry's `params` describe.
    pub(super) fn convert_v1alpha1(self, d: &mut Decoder, params: &Fields<'_>) -> Strategy {
        let namespaces = namespaces(d, params.get("namespaces"), &params.path("namespaces"));
        (self.spec().legacy)(d, params, namespaces)
    }
}

impl fmt::Display for PluginKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// As its upstream name, exactly as reports have always written it.
impl Serialize for PluginKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// A list of strings that must each be one of `valid` (did-you-mean for near misses).
pub(super) fn choices(
    d: &mut Decoder,
    fields: &Fields<'_>,
    name: &str,
    what: &str,
    valid: &[&str],
) -> Vec<String> {
    let path = fields.path(name);
    let mut chosen = Vec::new();
    for (i, item) in fields.list(d, name).iter().enumerate() {
        if let Some(choice) = d.choice(item, &index(&path, i), what, valid)
            && !chosen.contains(&choice)
        {
            chosen.push(choice);
        }
    }
    chosen
}

/// Records that an argument without a default is missing from `args` (at `node`).
pub(super) fn required(d: &mut Decoder, node: &YamlNode, path: &str, name: &str) {
    d.problem_at_as(
        Rule::MissingField,
        node,
        path,
        format!("{name} must be set (upstream has no default and refuses the plugin without it)"),
    );
}

/// A list of owner kinds (`ReplicaSet`, `Job`, …).
pub(super) fn owner_kinds(d: &mut Decoder, fields: &Fields<'_>, name: &str) -> Vec<String> {
    fields.strings(d, name, |kind| {
        let valid = kind.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && kind.chars().all(|c| c.is_ascii_alphanumeric());
        (!valid).then(|| {
            format!("invalid kind {kind:?}: expected a Kubernetes kind such as ReplicaSet or Job")
        })
    })
}

/// Reads a v1alpha1 `params` section (`podLifeTime`, `nodeResourceUtilizationThresholds`, …),
/// its fields `valid`, with `read`. An absent section reads as null at `params`, so a required
/// argument missing from it is reported there; `None` when the section is not a mapping.
pub(super) fn legacy_section<T>(
    d: &mut Decoder,
    params: &Fields<'_>,
    name: &str,
    valid: &[&str],
    read: impl FnOnce(&mut Decoder, &Fields<'_>, &YamlNode) -> T,
) -> Option<T> {
    let absent = YamlNode {
        position: params.position,
        value: Value::Null,
    };
    let node = params.get(name).unwrap_or(&absent);
    let fields = d.fields(node, &params.path(name), valid)?;
    Some(read(d, &fields, node))
}

/// `labelSelector`, spelt the same in `args` and in v1alpha1 `params`.
pub(super) fn label_selector_of(d: &mut Decoder, fields: &Fields<'_>) -> Option<Requirements> {
    label_selector(
        d,
        fields.get("labelSelector"),
        &fields.path("labelSelector"),
    )
}

/// `namespaces: {include, exclude}`; at most one of the two may be non-empty.
pub(super) fn namespaces(d: &mut Decoder, node: Option<&YamlNode>, path: &str) -> Namespaces {
    let Some(node) = node else {
        return Namespaces::default();
    };
    let Some(fields) = d.fields(node, path, &["include", "exclude"]) else {
        return Namespaces::default();
    };
    let check = |name: &str| {
        check_dns_label(name)
            .err()
            .map(|error| format!("invalid namespace name {name:?}: {error}"))
    };
    let include = fields.strings(d, "include", check);
    let exclude = fields.strings(d, "exclude", check);
    if !include.is_empty() && !exclude.is_empty() {
        d.problem_as(
            Rule::Conflict,
            fields.position,
            path,
            "set either include or exclude, not both",
        );
    }
    Namespaces { include, exclude }
}

#[cfg(test)]
pub(super) mod tests {
    use crate::policy::Strategy;
    use crate::policy::testing::{OURS, load, problem, problems};

    use super::{ExtensionPoint, PLUGINS, PluginKind};

    /// A policy in our format enabling one plugin with the given args (indented by 10).
    pub fn with_args(plugin: &str, args: &str) -> String {
        let kind = PluginKind::from_name(plugin).expect("a registered plugin");
        let point = kind.extension_point().key();
        format!(
            "{OURS}profiles:\n  - name: p\n    pluginConfig:\n      - name: {plugin}\n        args:\n{args}    \
             plugins:\n      {point}:\n        enabled: [{plugin}]\n"
        )
    }

    /// The one strategy of such a policy.
    pub fn strategy(plugin: &str, args: &str) -> Strategy {
        let profile = load(&with_args(plugin, args)).policy.profiles.remove(0);
        profile
            .deschedule
            .into_iter()
            .chain(profile.balance)
            .next()
            .expect("one strategy")
    }

    /// The plugin declared after `kind`, by a match the compiler holds complete: a new variant
    /// fails to build here until it is placed, so walking it visits every variant.
    fn next(kind: PluginKind) -> Option<PluginKind> {
        match kind {
            PluginKind::InterPodAntiAffinity => Some(PluginKind::TopologySpread),
            PluginKind::TopologySpread => Some(PluginKind::Duplicates),
            PluginKind::Duplicates => Some(PluginKind::NodeAffinity),
            PluginKind::NodeAffinity => Some(PluginKind::NodeTaints),
            PluginKind::NodeTaints => Some(PluginKind::TooManyRestarts),
            PluginKind::TooManyRestarts => Some(PluginKind::PodLifeTime),
            PluginKind::PodLifeTime => Some(PluginKind::FailedPods),
            PluginKind::FailedPods => Some(PluginKind::LowNodeUtilization),
            PluginKind::LowNodeUtilization => Some(PluginKind::HighNodeUtilization),
            PluginKind::HighNodeUtilization => None,
        }
    }

    #[test]
    fn the_registry_has_one_row_per_plugin_in_the_enums_order() {
        let variants: Vec<PluginKind> =
            std::iter::successors(Some(PluginKind::InterPodAntiAffinity), |&kind| next(kind))
                .collect();
        assert_eq!(PluginKind::all().collect::<Vec<_>>(), variants);
        for (i, kind) in variants.into_iter().enumerate() {
            assert_eq!(kind as usize, i, "{kind} is out of the enum's order");
        }
    }

    #[test]
    fn every_plugin_is_registered_once_under_its_own_name() {
        let mut names: Vec<&str> = PLUGINS.iter().map(|spec| spec.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), PLUGINS.len(), "two plugins share a name");
        for kind in PluginKind::all() {
            assert_eq!(PluginKind::from_name(kind.as_str()), Some(kind));
            assert_eq!(kind.with_default_args().kind(), kind);
        }
        assert_eq!(
            PluginKind::InterPodAntiAffinity.extension_point(),
            ExtensionPoint::Deschedule
        );
    }

    #[test]
    fn a_plugin_is_shown_and_serialized_by_its_upstream_name() {
        for kind in PluginKind::all() {
            let json = serde_json::to_string(&kind).expect("a name serializes");
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
            assert_eq!(kind.to_string(), kind.as_str());
        }
        assert_eq!(
            PluginKind::TopologySpread.as_str(),
            "RemovePodsViolatingTopologySpreadConstraint"
        );
        assert_eq!(
            PluginKind::from_name("RemovePodsViolatingNodeAffinity"),
            Some(PluginKind::NodeAffinity)
        );
        assert_eq!(PluginKind::from_name("Descheduler"), None);
    }

    #[test]
    fn unknown_args_list_the_valid_ones() {
        let text = with_args(
            "RemovePodsViolatingInterPodAntiAffinity",
            "          podSelector: {}\n",
        );
        assert_eq!(
            problem(&text),
            "policy.yaml:9:11: profiles[0].pluginConfig[0].args.podSelector: unknown field \
             \"podSelector\"; valid: namespaces, labelSelector, includeSoftConstraints"
        );
    }

    #[test]
    fn namespaces_may_be_included_or_excluded_but_not_both() {
        let text = with_args(
            "RemoveDuplicates",
            "          namespaces:\n            include: [a]\n            exclude: [b, Kube_System]\n",
        );
        assert_eq!(
            problems(&text),
            [
                "policy.yaml:10:13: profiles[0].pluginConfig[0].args.namespaces: set either \
                 include or exclude, not both",
                "policy.yaml:11:26: profiles[0].pluginConfig[0].args.namespaces.exclude[1]: \
                 invalid namespace name \"Kube_System\": must consist of lowercase alphanumeric \
                 characters or '-', and start and end with an alphanumeric character",
            ]
        );
    }
}
