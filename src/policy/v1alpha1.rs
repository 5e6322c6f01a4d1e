//! Upstream's legacy `descheduler/v1alpha1` format (`strategies:`), converted as upstream's
//! `V1alpha1ToInternal` did until v0.30, but deterministically: one profile per enabled
//! strategy, named `strategy-<Name>-profile`, in strategy-name order (upstream followed Go map
//! order, which changes from run to run).
//!
//! Files written by Go marshallers, such as the OpenShift descheduler operator's, carry every
//! parameter of every strategy with its zero value (`thresholdPriority: null`,
//! `thresholdPriorityClassName: ""`, `nodeFit: false`, …). Those are accepted as "unset".
//! One consequence is deliberate: `nodeFit: false` cannot be told apart from an unset field, so
//! it leaves this tool's default (nodeFit on) in place; a warning says so.

use crate::policy::rule::Rule;
use std::collections::BTreeMap;

use super::decode::{Decoder, Entry, Fields};
use super::evictor::{LegacyFlags, legacy_flags, priority_threshold};
use super::plugins::{ExtensionPoint, PluginKind};
use super::profiles::unsupported_plugin;
use super::selector::selector_string;
use super::v1alpha2::{
    PER_WORKLOAD_LIMIT, VSPHERE_API_VERSION, limits, per_workload_limit_elsewhere,
    upstream_vsphere_settings,
};
use super::yaml::{Value, YamlNode};
use super::{EvictorArgs, Policy, Profile};

/// The apiVersion of upstream's legacy format.
pub(super) const API_VERSION: &str = "descheduler/v1alpha1";

const TOP_FIELDS: [&str; 12] = [
    "apiVersion",
    "kind",
    "strategies",
    "nodeSelector",
    "evictFailedBarePods",
    "evictLocalStoragePods",
    "evictSystemCriticalPods",
    "evictDaemonSetPods",
    "ignorePvcPods",
    "maxNoOfPodsToEvictPerNode",
    "maxNoOfPodsToEvictPerNamespace",
    // In the type shortly before v1alpha1 was removed, never converted upstream; honoured here.
    "maxNoOfPodsToEvictTotal",
];

const STRATEGY_FIELDS: [&str; 3] = ["enabled", "weight", "params"];

/// Every field of upstream's `StrategyParameters`.
const PARAMS_FIELDS: [&str; 15] = [
    "nodeResourceUtilizationThresholds",
    "nodeAffinityType",
    "podsHavingTooManyRestarts",
    "podLifeTime",
    "removeDuplicates",
    "failedPods",
    "includeSoftConstraints",
    "namespaces",
    "thresholdPriority",
    "thresholdPriorityClassName",
    "labelSelector",
    "nodeFit",
    "includePreferNoSchedule",
    "excludedTaints",
    "includedTaints",
];

/// The parameters every supported strategy reads (into its args or its DefaultEvictor).
const COMMON_PARAMS: [&str; 4] = [
    "namespaces",
    "thresholdPriority",
    "thresholdPriorityClassName",
    "nodeFit",
];

/// Decodes a `descheduler/v1alpha1` document (apiVersion and kind already checked).
pub(super) fn decode(d: &mut Decoder, root: &YamlNode) -> Policy {
    let hint = |name: &str| {
        (name == PER_WORKLOAD_LIMIT).then(|| per_workload_limit_elsewhere(API_VERSION))
    };
    let Some(top) = d.fields_with_hint(root, "", &TOP_FIELDS, hint) else {
        return Policy::default();
    };
    if let Some(version) = top.get("apiVersion") {
        d.warning_at_as(
            Rule::Deprecated,
            version,
            "apiVersion",
            format!(
                "{API_VERSION} is deprecated upstream (removed in descheduler v0.31.0); each \
                 enabled strategy becomes its own profile; consider converting the file to \
                 {VSPHERE_API_VERSION}"
            ),
        );
    }
    // The top level has no `ignorePodsWithoutPDB`, so that flag reads as false.
    let flags = legacy_flags(d, &top);
    let mut warned_node_fit = false;
    let mut profiles = Vec::new();
    if let Some(strategies) = top.get("strategies") {
        // Sorted by name so that the profile order does not depend on the file's key order
        // (upstream's depended on Go map iteration).
        let entries: BTreeMap<&str, _> = d
            .entries(strategies, "strategies")
            .into_iter()
            .map(|entry| (entry.name, entry))
            .collect();
        for entry in entries.into_values() {
            if let Some(profile) = strategy_profile(d, entry, flags, &mut warned_node_fit) {
                profiles.push(profile);
            }
        }
    }
    Policy {
        node_selector: selector_string(d, top.get("nodeSelector"), "nodeSelector"),
        limits: limits(d, &top),
        profiles,
        vsphere: upstream_vsphere_settings(),
        ..Policy::default()
    }
}

/// The profile of one entry of `strategies`: none when the strategy is disabled, not
/// supported, or its fields are unreadable (each problem reported on `d`). `nodeFit: false`
/// is warned about once per file (`warned_node_fit`).
fn strategy_profile(
    d: &mut Decoder,
    entry: Entry<'_>,
    flags: LegacyFlags,
    warned_node_fit: &mut bool,
) -> Option<Profile> {
    let name = entry.name;
    let fields = d.fields(entry.value, &entry.path, &STRATEGY_FIELDS)?;
    let _ = fields.integer::<i64>(d, "weight");
    // Absent params read as null at the strategy's name, so a problem with a required
    // parameter points there.
    let no_params = YamlNode {
        position: entry.key.position,
        value: Value::Null,
    };
    let params_node = fields.get("params").unwrap_or(&no_params);
    let params = d.fields(params_node, &fields.path("params"), &PARAMS_FIELDS);
    if !fields.bool(d, "enabled").unwrap_or(false) {
        // Dropped, as upstream: whatever a disabled strategy holds has no effect.
        return None;
    }
    let Some(kind) = PluginKind::from_name(name) else {
        d.problem_at_as(
            Rule::UnknownPlugin,
            entry.key,
            &entry.path,
            format!(
                "{}; set enabled: false or remove it",
                unsupported_plugin(name)
            ),
        );
        return None;
    };
    let params = params?;
    if !*warned_node_fit
        && kind.spec().legacy_node_fit
        && let Some(node) = params
            .get("nodeFit")
            .filter(|node| node.value == Value::Bool(false))
    {
        *warned_node_fit = true;
        d.warning_at(
            node,
            &params.path("nodeFit"),
            format!(
                "nodeFit: false is read as unset in {API_VERSION} (Go wrote false for \
                 unset fields), so nodeFit stays on; convert the file to \
                 {VSPHERE_API_VERSION} to turn it off"
            ),
        );
    }
    Some(profile(d, kind, &params, flags))
}

/// The profile upstream made of one enabled strategy.
fn profile(d: &mut Decoder, kind: PluginKind, params: &Fields<'_>, flags: LegacyFlags) -> Profile {
    let threshold = priority_threshold(
        d,
        params.position,
        &params.path,
        params
            .get("thresholdPriority")
            .map(|node| (node, params.path("thresholdPriority"))),
        params
            .get("thresholdPriorityClassName")
            .map(|node| (node, params.path("thresholdPriorityClassName"))),
    );
    // Validated even though false changes nothing (see the module comment).
    let _ = params.bool(d, "nodeFit");
    let evictor = EvictorArgs {
        priority_threshold: threshold,
        protections: flags.protections(),
        node_fit: kind.spec().legacy_node_fit,
        ..EvictorArgs::default()
    };
    let strategy = kind.convert_v1alpha1(d, params);
    for field in PARAMS_FIELDS {
        if COMMON_PARAMS.contains(&field) || kind.spec().legacy_params.contains(&field) {
            continue;
        }
        if let Some(node) = params.get(field).filter(|node| !is_zero(node)) {
            d.warning_at(
                node,
                &params.path(field),
                format!(
                    "{field} is not a parameter of {} and is ignored",
                    kind.as_str()
                ),
            );
        }
    }
    let name = format!("strategy-{}-profile", kind.as_str());
    let (deschedule, balance) = match kind.extension_point() {
        ExtensionPoint::Deschedule => (vec![strategy], Vec::new()),
        ExtensionPoint::Balance => (Vec::new(), vec![strategy]),
    };
    // Upstream also put DefaultEvictor in filter and preevictionfilter; it is implicit here.
    Profile {
        name,
        evictor,
        deschedule,
        balance,
    }
}

/// Whether a node holds only zero values (null, false, 0, "", empty or all-zero collections):
/// what a Go marshaller writes for parameters nobody set.
fn is_zero(node: &YamlNode) -> bool {
    match &node.value {
        Value::Null => true,
        Value::Bool(value) => !value,
        Value::Int(value) => *value == 0,
        Value::Float(value) => *value == 0.0,
        Value::Str(value) => value.is_empty(),
        Value::Seq(items) => items.iter().all(is_zero),
        Value::Map(entries) => entries.iter().all(|(_, value)| is_zero(value)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::plugins::{
        AntiAffinityArgs, DuplicatesArgs, FailedPodsArgs, NodeTaintsArgs, PodLifeTimeArgs,
        TopologySpreadArgs,
    };
    use crate::policy::profiles::supported_plugins;
    use crate::policy::testing::{drs_rules_off, load, problem, problems, warnings};
    use crate::policy::{
        Limits, Namespaces, PriorityThreshold, Protections, Strategy, parse_selector,
    };

    /// Roughly what the OpenShift descheduler operator wrote before it moved to v1alpha2: every
    /// parameter of every strategy, zero values included, and strategies it does not run.
    const OPENSHIFT: &str = "\
apiVersion: descheduler/v1alpha1
kind: DeschedulerPolicy
ignorePvcPods: true
maxNoOfPodsToEvictPerNode: null
maxNoOfPodsToEvictPerNamespace: null
nodeSelector: null
strategies:
  RemovePodsViolatingTopologySpreadConstraint:
    enabled: true
    weight: 0
    params:
      excludedTaints: null
      includePreferNoSchedule: false
      includeSoftConstraints: true
      includedTaints: null
      labelSelector: null
      namespaces:
        exclude:
        - kube-system
        - openshift-monitoring
        include: null
      nodeAffinityType: null
      nodeFit: false
      nodeResourceUtilizationThresholds: null
      podLifeTime: null
      podsHavingTooManyRestarts: null
      removeDuplicates: null
      failedPods: null
      thresholdPriority: null
      thresholdPriorityClassName: \"\"
  RemoveDuplicates:
    enabled: true
    params:
      includePreferNoSchedule: false
      includeSoftConstraints: false
      labelSelector: null
      namespaces: {exclude: [kube-system], include: null}
      nodeFit: false
      thresholdPriority: null
      thresholdPriorityClassName: \"\"
  LowNodeUtilization:
    enabled: false
    params:
      nodeResourceUtilizationThresholds:
        thresholds: {cpu: 20, memory: 20, pods: 20}
        targetThresholds: {cpu: 50, memory: 50, pods: 50}
  PodLifeTime:
    enabled: false
    params:
      podLifeTime: {maxPodLifeTimeSeconds: 86400}
";

    #[test]
    fn an_openshift_generated_file_with_nulls_everywhere_loads() {
        let loaded = load(OPENSHIFT);
        let evictor = EvictorArgs {
            protections: Protections {
                pods_with_pvc: true,
                ..Protections::default()
            },
            ..EvictorArgs::default()
        };
        let expected = Policy {
            profiles: vec![
                Profile {
                    name: "strategy-RemoveDuplicates-profile".into(),
                    evictor: evictor.clone(),
                    deschedule: vec![],
                    balance: vec![Strategy::Duplicates(DuplicatesArgs {
                        namespaces: Namespaces {
                            include: vec![],
                            exclude: vec!["kube-system".into()],
                        },
                        exclude_owner_kinds: vec![],
                    })],
                },
                Profile {
                    name: "strategy-RemovePodsViolatingTopologySpreadConstraint-profile".into(),
                    evictor,
                    deschedule: vec![],
                    balance: vec![Strategy::TopologySpread(TopologySpreadArgs {
                        namespaces: Namespaces {
                            include: vec![],
                            exclude: vec!["kube-system".into(), "openshift-monitoring".into()],
                        },
                        schedule_anyway: true,
                        ..TopologySpreadArgs::default()
                    })],
                },
            ],
            vsphere: drs_rules_off(),
            ..Policy::default()
        };
        assert_eq!(loaded.policy, expected);
        assert_eq!(
            loaded
                .warnings
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            [
                "policy.yaml:1:13: apiVersion: descheduler/v1alpha1 is deprecated upstream \
                 (removed in descheduler v0.31.0); each enabled strategy becomes its own profile; \
                 consider converting the file to vsphere-descheduler.io/v1alpha1",
                "policy.yaml:38:16: strategies.RemoveDuplicates.params.nodeFit: nodeFit: false is \
                 read as unset in descheduler/v1alpha1 (Go wrote false for unset fields), so \
                 nodeFit stays on; convert the file to vsphere-descheduler.io/v1alpha1 to turn it \
                 off",
            ]
        );
    }

    #[test]
    fn the_upstream_example_converts_one_profile_per_strategy_in_name_order() {
        let text = "\
apiVersion: \"descheduler/v1alpha1\"
kind: \"DeschedulerPolicy\"
nodeSelector: \"node-role.kubernetes.io/worker\"
evictLocalStoragePods: true
evictSystemCriticalPods: true
maxNoOfPodsToEvictPerNode: 2
maxNoOfPodsToEvictPerNamespace: 3
maxNoOfPodsToEvictTotal: 4
strategies:
  \"RemovePodsViolatingTopologySpreadConstraint\":
    enabled: true
    params:
      nodeFit: true
      thresholdPriorityClassName: \"system-cluster-critical\"
      labelSelector: {matchLabels: {app: web}}
  \"RemovePodsViolatingInterPodAntiAffinity\":
    enabled: true
    params:
      thresholdPriority: 10000
  \"RemoveDuplicates\":
    enabled: true
    params:
      removeDuplicates:
        excludeOwnerKinds: [\"Job\"]
";
        let policy = load(text).policy;
        let protections = Protections {
            pods_with_local_storage: false,
            system_critical_pods: false,
            ..Protections::default()
        };
        let evictor = |threshold| EvictorArgs {
            priority_threshold: threshold,
            protections: protections.clone(),
            ..EvictorArgs::default()
        };
        assert_eq!(
            policy.node_selector,
            Some(
                parse_selector("node-role.kubernetes.io/worker")
                    .expect("valid")
                    .into()
            )
        );
        assert_eq!(
            policy.limits,
            Limits {
                per_node: Some(2),
                per_namespace: Some(3),
                total: Some(4),
                per_workload: None,
            }
        );
        assert_eq!(
            policy.profiles,
            [
                Profile {
                    name: "strategy-RemoveDuplicates-profile".into(),
                    evictor: evictor(PriorityThreshold::Value(2_000_000_000)),
                    deschedule: vec![],
                    balance: vec![Strategy::Duplicates(DuplicatesArgs {
                        namespaces: Namespaces::default(),
                        exclude_owner_kinds: vec!["Job".into()],
                    })],
                },
                Profile {
                    name: "strategy-RemovePodsViolatingInterPodAntiAffinity-profile".into(),
                    evictor: evictor(PriorityThreshold::Value(10_000)),
                    deschedule: vec![Strategy::InterPodAntiAffinity(AntiAffinityArgs::default())],
                    balance: vec![],
                },
                Profile {
                    name: "strategy-RemovePodsViolatingTopologySpreadConstraint-profile".into(),
                    evictor: evictor(PriorityThreshold::Name("system-cluster-critical".into())),
                    deschedule: vec![],
                    balance: vec![Strategy::TopologySpread(TopologySpreadArgs {
                        label_selector: Some(parse_selector("app=web").expect("valid").into()),
                        ..TopologySpreadArgs::default()
                    })],
                },
            ]
        );
        assert_eq!(policy.cluster_name, None);
        assert!(!policy.vsphere.drs_rules.enabled);
    }

    #[test]
    fn an_enabled_strategy_this_tool_does_not_implement_is_a_problem() {
        let text = "\
apiVersion: descheduler/v1alpha1
kind: DeschedulerPolicy
strategies:
  LowNodeUtilization:
    enabled: true
  RemoveDuplicate:
    enabled: true
";
        assert_eq!(
            problems(text),
            [
                "policy.yaml:4:3: strategies.LowNodeUtilization.params.\
                 nodeResourceUtilizationThresholds: thresholds must be set (upstream has no \
                 default and refuses the plugin without it)"
                    .to_string(),
                "policy.yaml:4:3: strategies.LowNodeUtilization.params.\
                 nodeResourceUtilizationThresholds: targetThresholds must be set (upstream has no \
                 default and refuses the plugin without it)"
                    .to_string(),
                format!(
                    "policy.yaml:6:3: strategies.RemoveDuplicate: unknown plugin \
                     \"RemoveDuplicate\"; did you mean \"RemoveDuplicates\"? valid: \
                     {}; set enabled: false or remove it",
                    supported_plugins().join(", ")
                ),
            ]
        );
    }

    #[test]
    fn a_misspelt_strategy_field_is_caught_even_when_the_strategy_would_be_dropped() {
        let text = "\
apiVersion: descheduler/v1alpha1
kind: DeschedulerPolicy
strategies:
  RemoveDuplicates:
    enable: true
";
        assert_eq!(
            problem(text),
            "policy.yaml:5:5: strategies.RemoveDuplicates.enable: unknown field \"enable\"; did you \
             mean \"enabled\"? valid: enabled, weight, params"
        );
    }

    #[test]
    fn a_threshold_value_and_class_name_together_are_a_problem() {
        let text = "\
apiVersion: descheduler/v1alpha1
kind: DeschedulerPolicy
strategies:
  RemovePodsViolatingInterPodAntiAffinity:
    enabled: true
    params: {thresholdPriority: 100, thresholdPriorityClassName: high}
";
        assert_eq!(
            problem(text),
            "policy.yaml:6:13: strategies.RemovePodsViolatingInterPodAntiAffinity.params: set \
             either a priority value or a PriorityClass name, not both"
        );
    }

    #[test]
    fn parameters_another_strategy_reads_are_ignored_with_a_warning() {
        let text = "\
apiVersion: descheduler/v1alpha1
kind: DeschedulerPolicy
strategies:
  RemovePodsViolatingInterPodAntiAffinity:
    enabled: true
    params:
      podLifeTime: {maxPodLifeTimeSeconds: 60}
";
        assert_eq!(
            warnings(text)[1],
            "policy.yaml:7:20: strategies.RemovePodsViolatingInterPodAntiAffinity.params.podLifeTime: \
             podLifeTime is not a parameter of RemovePodsViolatingInterPodAntiAffinity and is ignored"
        );
    }

    #[test]
    fn lifecycle_strategies_convert_as_upstream_did_pod_life_time_without_node_fit() {
        let text = "\
apiVersion: descheduler/v1alpha1
kind: DeschedulerPolicy
strategies:
  PodLifeTime:
    enabled: true
    params:
      podLifeTime:
        maxPodLifeTimeSeconds: 86400
        podStatusPhases: [Pending]
        states: [CrashLoopBackOff, Pending]
  RemoveFailedPods:
    enabled: true
    params:
      failedPods: {reasons: [NodeAffinity], excludeOwnerKinds: [Job]}
  RemovePodsViolatingNodeTaints:
    enabled: true
    params: {includePreferNoSchedule: true, excludedTaints: [dedicated]}
";
        let profiles = load(text).policy.profiles;
        let names: Vec<&str> = profiles.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "strategy-PodLifeTime-profile",
                "strategy-RemoveFailedPods-profile",
                "strategy-RemovePodsViolatingNodeTaints-profile"
            ]
        );
        assert!(!profiles[0].evictor.node_fit);
        assert!(profiles[1].evictor.node_fit);
        assert_eq!(
            profiles[0].deschedule,
            [Strategy::PodLifeTime(PodLifeTimeArgs {
                max_pod_life_time_seconds: Some(86400),
                states: vec!["Pending".into(), "CrashLoopBackOff".into()],
                ..PodLifeTimeArgs::default()
            })]
        );
        assert_eq!(
            profiles[1].deschedule,
            [Strategy::FailedPods(FailedPodsArgs {
                reasons: vec!["NodeAffinity".into()],
                exclude_owner_kinds: vec!["Job".into()],
                ..FailedPodsArgs::default()
            })]
        );
        assert_eq!(
            profiles[2].deschedule,
            [Strategy::NodeTaints(NodeTaintsArgs {
                include_prefer_no_schedule: true,
                excluded_taints: vec!["dedicated".into()],
                ..NodeTaintsArgs::default()
            })]
        );
    }

    #[test]
    fn too_many_restarts_without_a_threshold_is_a_problem() {
        let text = "\
apiVersion: descheduler/v1alpha1
kind: DeschedulerPolicy
strategies:
  RemovePodsHavingTooManyRestarts:
    enabled: true
    params:
      podsHavingTooManyRestarts: {includingInitContainers: true}
";
        assert_eq!(
            problem(text),
            "policy.yaml:7:34: strategies.RemovePodsHavingTooManyRestarts.params.\
             podsHavingTooManyRestarts: podRestartThreshold must be set (upstream has no default \
             and refuses the plugin without it)"
        );
    }

    #[test]
    fn v1alpha2_fields_in_a_v1alpha1_file_are_unknown() {
        let text = "apiVersion: descheduler/v1alpha1\nkind: DeschedulerPolicy\nprofiles: []\n";
        assert!(problem(text).starts_with("policy.yaml:3:1: profiles: unknown field \"profiles\""));
    }

    #[test]
    fn the_per_workload_limit_points_to_our_format() {
        let text = "apiVersion: descheduler/v1alpha1\nkind: DeschedulerPolicy\n\
                    maxNoOfPodsToEvictPerWorkload: 1\n";
        assert_eq!(
            problem(text),
            "policy.yaml:3:1: maxNoOfPodsToEvictPerWorkload: maxNoOfPodsToEvictPerWorkload is \
             only valid with apiVersion vsphere-descheduler.io/v1alpha1 (kind DeschedulerPolicy); \
             descheduler/v1alpha1 has no per-workload limit"
        );
    }
}
