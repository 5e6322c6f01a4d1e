//! The `DefaultEvictor` plugin's arguments: which pods may be evicted at all.
//!
//! Names, defaults and validation follow upstream's `DefaultEvictorArgs`, with one deliberate
//! difference: `nodeFit` defaults to **true** here (upstream: false). Evicting a pod that no
//! other node would take only recreates it where it was, every run; feasibility checking is
//! what stops such eviction loops, so it is on unless a policy turns it off.

use crate::policy::rule::Rule;
use std::time::Duration;

use super::decode::{Decoder, Fields, index, unknown};
use super::names::check_dns_subdomain;
use super::selector::{label_selector, selector_string};
use super::yaml::{Position, Value, YamlNode};
use super::{
    EvictorArgs, NoEvictionPolicy, PriorityThreshold, Protections, SYSTEM_CRITICAL_PRIORITY,
};
use crate::duration::go_duration;

/// The plugin name, as upstream spells it.
pub(super) const DEFAULT_EVICTOR: &str = "DefaultEvictor";

/// Protections on unless a policy disables them (`podProtections.defaultDisabled`).
const DEFAULT_PROTECTIONS: [&str; 4] = [
    "PodsWithLocalStorage",
    "SystemCriticalPods",
    "FailedBarePods",
    "DaemonSetPods",
];
/// Protections off unless a policy enables them (`podProtections.extraEnabled`).
const EXTRA_PROTECTIONS: [&str; 3] = ["PodsWithPVC", "PodsWithoutPDB", "PodsWithResourceClaims"];

/// Upstream's deprecated booleans, replaced by `podProtections` (descheduler v0.34).
const DEPRECATED_FLAGS: [&str; 6] = [
    "evictLocalStoragePods",
    "evictDaemonSetPods",
    "evictSystemCriticalPods",
    "evictFailedBarePods",
    "ignorePvcPods",
    "ignorePodsWithoutPDB",
];

const FIELDS: [&str; 15] = [
    "nodeSelector",
    "labelSelector",
    "namespaceLabelSelector",
    "priorityThreshold",
    "nodeFit",
    "minReplicas",
    "minPodAge",
    "noEvictionPolicy",
    "podProtections",
    "evictLocalStoragePods",
    "evictDaemonSetPods",
    "evictSystemCriticalPods",
    "evictFailedBarePods",
    "ignorePvcPods",
    "ignorePodsWithoutPDB",
];

/// The protection-related booleans of upstream's legacy formats (DefaultEvictor args before
/// v0.34, and the top level of `descheduler/v1alpha1`). `true` turns a default protection off
/// (`evict*`) or an extra protection on (`ignore*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct LegacyFlags {
    pub evict_local_storage_pods: bool,
    pub evict_daemonset_pods: bool,
    pub evict_system_critical_pods: bool,
    pub evict_failed_bare_pods: bool,
    pub ignore_pvc_pods: bool,
    pub ignore_pods_without_pdb: bool,
}

impl LegacyFlags {
    fn any(&self) -> bool {
        *self != LegacyFlags::default()
    }

    /// The protections these flags describe, as upstream's `legacyGetPodProtections` does.
    pub fn protections(&self) -> Protections {
        Protections {
            pods_with_local_storage: !self.evict_local_storage_pods,
            system_critical_pods: !self.evict_system_critical_pods,
            failed_bare_pods: !self.evict_failed_bare_pods,
            daemonset_pods: !self.evict_daemonset_pods,
            pods_with_pvc: self.ignore_pvc_pods,
            pods_without_pdb: self.ignore_pods_without_pdb,
            ..Protections::default()
        }
    }
}

/// Reads the six legacy flags from a mapping that allows them.
pub(super) fn legacy_flags(d: &mut Decoder, fields: &Fields<'_>) -> LegacyFlags {
    let mut flag = |name: &str| fields.bool(d, name).unwrap_or(false);
    LegacyFlags {
        evict_local_storage_pods: flag("evictLocalStoragePods"),
        evict_daemonset_pods: flag("evictDaemonSetPods"),
        evict_system_critical_pods: flag("evictSystemCriticalPods"),
        evict_failed_bare_pods: flag("evictFailedBarePods"),
        ignore_pvc_pods: flag("ignorePvcPods"),
        ignore_pods_without_pdb: flag("ignorePodsWithoutPDB"),
    }
}

/// Decodes `DefaultEvictor` args; absent or null args are the defaults.
pub(super) fn evictor_args(d: &mut Decoder, node: Option<&YamlNode>, path: &str) -> EvictorArgs {
    let mut args = EvictorArgs::default();
    let Some(node) = node else { return args };
    let Some(fields) = d.fields(node, path, &FIELDS) else {
        return args;
    };

    args.node_selector =
        selector_string(d, fields.get("nodeSelector"), &fields.path("nodeSelector"));
    args.label_selector = label_selector(
        d,
        fields.get("labelSelector"),
        &fields.path("labelSelector"),
    );
    args.namespace_label_selector = label_selector(
        d,
        fields.get("namespaceLabelSelector"),
        &fields.path("namespaceLabelSelector"),
    );
    if let Some(threshold) = fields.get("priorityThreshold") {
        args.priority_threshold =
            priority_threshold_field(d, threshold, &fields.path("priorityThreshold"));
    }
    if let Some(node_fit) = fields.bool(d, "nodeFit") {
        args.node_fit = node_fit;
    }
    if let Some(min_replicas) = fields.integer::<u32>(d, "minReplicas") {
        args.min_replicas = min_replicas;
    }
    if let Some(age) = fields.get("minPodAge") {
        args.min_pod_age = min_pod_age(d, age, &fields.path("minPodAge"));
    }
    if let Some(policy) = fields.get("noEvictionPolicy") {
        args.no_eviction_policy = no_eviction_policy(d, policy, &fields.path("noEvictionPolicy"));
    }

    let legacy = legacy_flags(d, &fields);
    for flag in DEPRECATED_FLAGS {
        if let Some(node) = fields
            .get(flag)
            .filter(|node| node.value == Value::Bool(true))
        {
            d.warning_at_as(
                Rule::Deprecated,
                node,
                &fields.path(flag),
                format!("{flag} is deprecated upstream; use podProtections"),
            );
        }
    }
    args.protections = match fields.get("podProtections") {
        Some(protections) => {
            pod_protections(d, protections, &fields.path("podProtections"), legacy)
        }
        None => legacy.protections(),
    };
    args
}

/// `priorityThreshold: {value | name}`.
fn priority_threshold_field(d: &mut Decoder, node: &YamlNode, path: &str) -> PriorityThreshold {
    let Some(fields) = d.fields(node, path, &["value", "name"]) else {
        return PriorityThreshold::Value(SYSTEM_CRITICAL_PRIORITY);
    };
    let value = fields.get("value").map(|node| (node, fields.path("value")));
    let name = fields.get("name").map(|node| (node, fields.path("name")));
    priority_threshold(d, fields.position, path, value, name)
}

/// Resolves a threshold given as a priority value or a PriorityClass name (not both).
///
/// Shared with `descheduler/v1alpha1` (`thresholdPriority`, `thresholdPriorityClassName`), whose
/// Go marshaller writes `""` for an unset name, so an empty name counts as absent.
pub(super) fn priority_threshold(
    d: &mut Decoder,
    position: Option<Position>,
    path: &str,
    value: Option<(&YamlNode, String)>,
    name: Option<(&YamlNode, String)>,
) -> PriorityThreshold {
    let value = value.and_then(|(node, path)| {
        // Read wider than i32 so that a too-large value gets the message naming upstream's limit.
        let value = d.integer::<i64>(node, &path)?;
        if value > i64::from(SYSTEM_CRITICAL_PRIORITY) {
            d.problem_at(
                node,
                &path,
                format!(
                    "must be at most {SYSTEM_CRITICAL_PRIORITY} (the system-critical priority)"
                ),
            );
            return None;
        }
        match i32::try_from(value) {
            Ok(value) => Some(value),
            Err(_) => {
                d.problem_at(node, &path, format!("must be at least {}", i32::MIN));
                None
            }
        }
    });
    let name = name.and_then(|(node, path)| {
        let name = d.string(node, &path).filter(|name| !name.is_empty())?;
        if let Err(error) = check_dns_subdomain(&name) {
            d.problem_at(
                node,
                &path,
                format!("invalid PriorityClass name {name:?}: {error}"),
            );
        }
        Some(name)
    });
    match (value, name) {
        (Some(_), Some(_)) => {
            d.problem_as(
                Rule::Conflict,
                position,
                path,
                "set either a priority value or a PriorityClass name, not both",
            );
            PriorityThreshold::Value(SYSTEM_CRITICAL_PRIORITY)
        }
        (Some(value), None) => PriorityThreshold::Value(value),
        (None, Some(name)) => PriorityThreshold::Name(name),
        (None, None) => PriorityThreshold::Value(SYSTEM_CRITICAL_PRIORITY),
    }
}

/// `minPodAge`: a Go duration string such as `5m` or `1h30m`.
fn min_pod_age(d: &mut Decoder, node: &YamlNode, path: &str) -> Option<Duration> {
    let text = d.string(node, path)?;
    match go_duration(&text) {
        Ok(duration) => Some(duration),
        Err(message) => {
            d.problem_at(node, path, message);
            None
        }
    }
}

fn no_eviction_policy(d: &mut Decoder, node: &YamlNode, path: &str) -> NoEvictionPolicy {
    match d
        .choice(
            node,
            path,
            "noEvictionPolicy",
            &["", "Preferred", "Mandatory"],
        )
        .as_deref()
    {
        Some("Preferred") => NoEvictionPolicy::Preferred,
        Some("Mandatory") => NoEvictionPolicy::Mandatory,
        _ => NoEvictionPolicy::None,
    }
}

/// `podProtections: {defaultDisabled, extraEnabled, config}`.
fn pod_protections(
    d: &mut Decoder,
    node: &YamlNode,
    path: &str,
    legacy: LegacyFlags,
) -> Protections {
    let mut protections = legacy.protections();
    let Some(fields) = d.fields(node, path, &["defaultDisabled", "extraEnabled", "config"]) else {
        return protections;
    };
    let disabled = protection_names(
        d,
        &fields,
        "defaultDisabled",
        &DEFAULT_PROTECTIONS,
        &EXTRA_PROTECTIONS,
    );
    let enabled = protection_names(
        d,
        &fields,
        "extraEnabled",
        &EXTRA_PROTECTIONS,
        &DEFAULT_PROTECTIONS,
    );
    // Upstream compares the lists as written, valid names or not.
    let listed = |name: &str| {
        fields
            .get(name)
            .is_some_and(|node| matches!(&node.value, Value::Seq(items) if !items.is_empty()))
    };
    if legacy.any() && (listed("defaultDisabled") || listed("extraEnabled")) {
        // As upstream: two spellings of one setting would leave the reader guessing which wins.
        d.problem_as(
            Rule::Conflict,
            fields.position,
            path,
            format!(
                "podProtections.defaultDisabled and extraEnabled cannot be combined with the \
                 deprecated {}; use podProtections alone",
                DEPRECATED_FLAGS.join(", ")
            ),
        );
    }
    if !disabled.is_empty() || !enabled.is_empty() {
        protections = Protections::default();
    }
    for name in &disabled {
        match name.as_str() {
            "PodsWithLocalStorage" => protections.pods_with_local_storage = false,
            "SystemCriticalPods" => protections.system_critical_pods = false,
            "FailedBarePods" => protections.failed_bare_pods = false,
            _ => protections.daemonset_pods = false,
        }
    }
    for name in &enabled {
        match name.as_str() {
            "PodsWithPVC" => protections.pods_with_pvc = true,
            "PodsWithoutPDB" => protections.pods_without_pdb = true,
            _ => protections.pods_with_resource_claims = true,
        }
    }
    if let Some(config) = fields.get("config") {
        protections.protected_storage_classes =
            protection_config(d, config, &fields.path("config"));
        if !protections.protected_storage_classes.is_empty() && !protections.pods_with_pvc {
            d.warning_at(
                config,
                &fields.path("config"),
                "config.PodsWithPVC has no effect unless PodsWithPVC is in extraEnabled",
            );
        }
    }
    protections
}

/// The names of one protection list, checked against the names it may hold.
fn protection_names(
    d: &mut Decoder,
    fields: &Fields<'_>,
    list: &str,
    valid: &[&str],
    other_list: &[&str],
) -> Vec<String> {
    let path = fields.path(list);
    let mut names: Vec<String> = Vec::new();
    for (i, item) in fields.list(d, list).iter().enumerate() {
        let item_path = index(&path, i);
        let Some(name) = d.string(item, &item_path) else {
            continue;
        };
        if names.contains(&name) {
            d.problem_at_as(
                Rule::Duplicate,
                item,
                &item_path,
                format!("{name} is listed twice"),
            );
        } else if valid.contains(&name.as_str()) {
            names.push(name);
        } else if other_list.contains(&name.as_str()) {
            let message = if list == "extraEnabled" {
                format!(
                    "{name} is a default protection, already on; to turn it off, list it under \
                     defaultDisabled"
                )
            } else {
                format!(
                    "{name} is an extra protection, off by default; to turn it on, list it under \
                     extraEnabled"
                )
            };
            d.problem_at(item, &item_path, message);
        } else {
            d.problem_at(item, &item_path, unknown("protection", &name, valid));
        }
    }
    names
}

/// `config: {PodsWithPVC: {protectedStorageClasses: [{name}]}}`.
fn protection_config(d: &mut Decoder, node: &YamlNode, path: &str) -> Vec<String> {
    let Some(fields) = d.fields(node, path, &["PodsWithPVC"]) else {
        return Vec::new();
    };
    let Some(pvc) = fields.get("PodsWithPVC") else {
        return Vec::new();
    };
    let pvc_path = fields.path("PodsWithPVC");
    let Some(pvc) = d.fields(pvc, &pvc_path, &["protectedStorageClasses"]) else {
        return Vec::new();
    };
    let classes_path = pvc.path("protectedStorageClasses");
    let mut classes = Vec::new();
    for (i, item) in pvc.list(d, "protectedStorageClasses").iter().enumerate() {
        let item_path = index(&classes_path, i);
        let Some(class) = d.fields(item, &item_path, &["name"]) else {
            continue;
        };
        let Some(name_node) = class.get("name") else {
            d.problem_as(
                Rule::MissingField,
                class.position,
                &item_path,
                "name is required",
            );
            continue;
        };
        let Some(name) = d.string(name_node, &class.path("name")) else {
            continue;
        };
        match check_dns_subdomain(&name) {
            Ok(()) => classes.push(name),
            Err(error) => d.refused_at(
                name_node,
                &class.path("name"),
                format_args!("invalid StorageClass name {name:?}"),
                &error,
            ),
        }
    }
    classes
}

#[cfg(test)]
mod tests {
    use kube::core::Expression;

    use super::*;
    use crate::policy::testing::{OURS, load, problem, problems};

    fn with_args(args: &str) -> String {
        format!(
            "{OURS}profiles:\n  - name: p\n    pluginConfig:\n      - name: DefaultEvictor\n        \
             args:\n{args}    plugins:\n      deschedule:\n        \
             enabled: [RemovePodsViolatingInterPodAntiAffinity]\n"
        )
    }

    fn evictor(args: &str) -> EvictorArgs {
        load(&with_args(args)).policy.profiles.remove(0).evictor
    }

    #[test]
    fn node_fit_is_on_by_default_unlike_upstream() {
        assert!(evictor("          {}\n").node_fit);
        assert!(!evictor("          nodeFit: false\n").node_fit);
    }

    #[test]
    fn every_default_evictor_arg_converts() {
        let args = "          nodeSelector: \"zone=a\"
          labelSelector: {matchLabels: {tier: web}}
          namespaceLabelSelector: {matchExpressions: [{key: team, operator: Exists}]}
          priorityThreshold: {name: high-priority}
          minReplicas: 3
          minPodAge: 90s
          noEvictionPolicy: Mandatory
          podProtections:
            defaultDisabled: [DaemonSetPods, FailedBarePods]
            extraEnabled: [PodsWithPVC, PodsWithResourceClaims]
            config:
              PodsWithPVC:
                protectedStorageClasses: [{name: local-path}]
";
        assert_eq!(
            evictor(args),
            EvictorArgs {
                node_selector: Some(Expression::Equal("zone".into(), "a".into()).into()),
                label_selector: Some(Expression::Equal("tier".into(), "web".into()).into()),
                namespace_label_selector: Some(Expression::Exists("team".into()).into()),
                priority_threshold: PriorityThreshold::Name("high-priority".into()),
                node_fit: true,
                min_replicas: 3,
                min_pod_age: Some(Duration::from_secs(90)),
                no_eviction_policy: NoEvictionPolicy::Mandatory,
                protections: Protections {
                    daemonset_pods: false,
                    failed_bare_pods: false,
                    pods_with_pvc: true,
                    protected_storage_classes: vec!["local-path".into()],
                    pods_with_resource_claims: true,
                    ..Protections::default()
                },
            }
        );
    }

    #[test]
    fn deprecated_flags_still_set_protections_with_a_warning() {
        let text =
            with_args("          evictLocalStoragePods: true\n          ignorePvcPods: true\n");
        let loaded = load(&text);
        assert_eq!(
            loaded.policy.profiles[0].evictor.protections,
            Protections {
                pods_with_local_storage: false,
                pods_with_pvc: true,
                ..Protections::default()
            }
        );
        assert_eq!(
            loaded
                .warnings
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            [
                "policy.yaml:9:34: profiles[0].pluginConfig[0].args.evictLocalStoragePods: \
                 evictLocalStoragePods is deprecated upstream; use podProtections",
                "policy.yaml:10:26: profiles[0].pluginConfig[0].args.ignorePvcPods: ignorePvcPods \
                 is deprecated upstream; use podProtections",
            ]
        );
    }

    #[test]
    fn deprecated_flags_and_pod_protections_do_not_mix() {
        let text = with_args(
            "          evictDaemonSetPods: true\n          podProtections: {defaultDisabled: [DaemonSetPods]}\n",
        );
        assert_eq!(
            problem(&text),
            "policy.yaml:10:27: profiles[0].pluginConfig[0].args.podProtections: \
             podProtections.defaultDisabled and extraEnabled cannot be combined with the deprecated \
             evictLocalStoragePods, evictDaemonSetPods, evictSystemCriticalPods, \
             evictFailedBarePods, ignorePvcPods, ignorePodsWithoutPDB; use podProtections alone"
        );
    }

    #[test]
    fn a_protection_in_the_wrong_list_says_which_list_it_belongs_to() {
        let text = with_args(
            "          podProtections:\n            defaultDisabled: [PodsWithoutPDB, PodsWithLocalStorge]\n            \
             extraEnabled: [SystemCriticalPods]\n",
        );
        assert_eq!(
            problems(&text),
            [
                "policy.yaml:10:31: profiles[0].pluginConfig[0].args.podProtections.defaultDisabled[0]: \
                 PodsWithoutPDB is an extra protection, off by default; to turn it on, list it \
                 under extraEnabled",
                "policy.yaml:10:47: profiles[0].pluginConfig[0].args.podProtections.defaultDisabled[1]: \
                 unknown protection \"PodsWithLocalStorge\"; did you mean \"PodsWithLocalStorage\"? \
                 valid: PodsWithLocalStorage, SystemCriticalPods, FailedBarePods, DaemonSetPods",
                "policy.yaml:11:28: profiles[0].pluginConfig[0].args.podProtections.extraEnabled[0]: \
                 SystemCriticalPods is a default protection, already on; to turn it off, list it \
                 under defaultDisabled",
            ]
        );
    }

    #[test]
    fn priority_thresholds_take_a_value_or_a_name_up_to_system_critical() {
        let text = with_args("          priorityThreshold: {value: 10, name: low}\n");
        assert_eq!(
            problem(&text),
            "policy.yaml:9:30: profiles[0].pluginConfig[0].args.priorityThreshold: set either a \
             priority value or a PriorityClass name, not both"
        );
        let text = with_args("          priorityThreshold: {value: 2000000001}\n");
        assert_eq!(
            problem(&text),
            "policy.yaml:9:38: profiles[0].pluginConfig[0].args.priorityThreshold.value: must be at \
             most 2000000000 (the system-critical priority)"
        );
        assert_eq!(
            evictor("          priorityThreshold: {value: -5}\n").priority_threshold,
            PriorityThreshold::Value(-5)
        );
    }

    #[test]
    fn min_pod_age_must_not_be_negative() {
        let text = with_args("          minPodAge: -1m\n");
        assert_eq!(
            problem(&text),
            "policy.yaml:9:22: profiles[0].pluginConfig[0].args.minPodAge: must not be negative, \
             found \"-1m\""
        );
    }

    #[test]
    fn unknown_evictor_args_are_problems() {
        let text = with_args("          nodefit: true\n          evictSystemCriticalPod: true\n");
        let problems = problems(&text);
        assert_eq!(problems.len(), 2);
        assert!(problems[0].contains("unknown field \"nodefit\"; did you mean \"nodeFit\"?"));
        assert!(problems[1].contains("did you mean \"evictSystemCriticalPods\"?"));
    }
}
