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

use std::collections::BTreeMap;

use super::decode::{Decoder, Fields};
use super::evictor::{LegacyFlags, legacy_flags, priority_threshold};
use super::profiles::unsupported_plugin;
use super::selector::{label_selector, selector_string};
use super::strategies::{ExtensionPoint, StrategyKind, namespaces, owner_kinds};
use super::v1alpha2::{VSPHERE_API_VERSION, limits};
use super::yaml::{Node, Value};
use super::{
    AntiAffinityArgs, DuplicatesArgs, EvictorArgs, Policy, Profile, Strategy, TopologySpreadArgs,
    VsphereSettings,
};

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

/// The parameters a strategy reads beyond [`COMMON_PARAMS`].
fn own_params(kind: StrategyKind) -> &'static [&'static str] {
    match kind {
        StrategyKind::InterPodAntiAffinity => &["labelSelector"],
        StrategyKind::TopologySpread => &["labelSelector", "includeSoftConstraints"],
        StrategyKind::Duplicates => &["removeDuplicates"],
    }
}

/// Decodes a `descheduler/v1alpha1` document (apiVersion and kind already checked).
pub(super) fn decode(d: &mut Decoder, root: &Node) -> Policy {
    let Some(top) = d.fields(root, "", &TOP_FIELDS) else {
        return Policy::default();
    };
    if let Some(version) = top.get("apiVersion") {
        d.warning_at(
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
    let no_params = Node {
        position: None,
        value: Value::Null,
    };
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
        for (name, entry) in entries {
            let Some(fields) = d.fields(entry.value, &entry.path, &STRATEGY_FIELDS) else {
                continue;
            };
            let _ = fields.integer::<i64>(d, "weight");
            let params_node = fields.get("params").unwrap_or(&no_params);
            let params = d.fields(params_node, &fields.path("params"), &PARAMS_FIELDS);
            if !fields.bool(d, "enabled").unwrap_or(false) {
                // Dropped, as upstream: whatever a disabled strategy holds has no effect.
                continue;
            }
            let Some(kind) = StrategyKind::from_name(name) else {
                d.problem_at(
                    entry.key,
                    &entry.path,
                    format!(
                        "{}; set enabled: false or remove it",
                        unsupported_plugin(name)
                    ),
                );
                continue;
            };
            let Some(params) = params else { continue };
            if !warned_node_fit
                && let Some(node) = params
                    .get("nodeFit")
                    .filter(|node| node.value == Value::Bool(false))
            {
                warned_node_fit = true;
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
            profiles.push(profile(d, kind, &params, flags));
        }
    }
    Policy {
        node_selector: selector_string(d, top.get("nodeSelector"), "nodeSelector"),
        limits: limits(d, &top),
        profiles,
        vsphere: VsphereSettings {
            drs_rules: super::DrsRuleSettings {
                enabled: false,
                ..Default::default()
            },
            ..Default::default()
        },
        ..Policy::default()
    }
}

/// The profile upstream made of one enabled strategy.
fn profile(
    d: &mut Decoder,
    kind: StrategyKind,
    params: &Fields<'_>,
    flags: LegacyFlags,
) -> Profile {
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
        ..EvictorArgs::default()
    };
    let namespaces = namespaces(d, params.get("namespaces"), &params.path("namespaces"));
    let strategy = match kind {
        StrategyKind::InterPodAntiAffinity => Strategy::InterPodAntiAffinity(AntiAffinityArgs {
            namespaces,
            label_selector: label_selector(
                d,
                params.get("labelSelector"),
                &params.path("labelSelector"),
            ),
        }),
        StrategyKind::TopologySpread => Strategy::TopologySpread(TopologySpreadArgs {
            namespaces,
            label_selector: label_selector(
                d,
                params.get("labelSelector"),
                &params.path("labelSelector"),
            ),
            do_not_schedule: true,
            schedule_anyway: params.bool(d, "includeSoftConstraints").unwrap_or(false),
            topology_balance_node_fit: true,
        }),
        StrategyKind::Duplicates => Strategy::Duplicates(DuplicatesArgs {
            namespaces,
            exclude_owner_kinds: remove_duplicates(d, params),
        }),
    };
    for field in PARAMS_FIELDS {
        if COMMON_PARAMS.contains(&field) || own_params(kind).contains(&field) {
            continue;
        }
        if let Some(node) = params.get(field).filter(|node| !is_zero(node)) {
            d.warning_at(
                node,
                &params.path(field),
                format!(
                    "{field} is not a parameter of {} and is ignored",
                    kind.name()
                ),
            );
        }
    }
    let name = format!("strategy-{}-profile", kind.name());
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

/// `removeDuplicates: {excludeOwnerKinds}`.
fn remove_duplicates(d: &mut Decoder, params: &Fields<'_>) -> Vec<String> {
    let Some(node) = params.get("removeDuplicates") else {
        return Vec::new();
    };
    match d.fields(
        node,
        &params.path("removeDuplicates"),
        &["excludeOwnerKinds"],
    ) {
        Some(fields) => owner_kinds(d, &fields, "excludeOwnerKinds"),
        None => Vec::new(),
    }
}

/// Whether a node holds only zero values (null, false, 0, "", empty or all-zero collections):
/// what a Go marshaller writes for parameters nobody set.
fn is_zero(node: &Node) -> bool {
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
