//! What `LowNodeUtilization` and `HighNodeUtilization` share: resource thresholds, the
//! evictable namespaces (exclusion only, as upstream) and where utilization comes from.

use crate::policy::rule::Rule;
use std::collections::BTreeMap;

use crate::policy::Namespaces;
use crate::policy::decode::{Decoder, Fields};
use crate::policy::yaml::{Value, YamlNode};

use super::{choices, namespaces};

/// Percentages of a node's allocatable per resource name (`cpu`, `memory`, `pods`, or an
/// extended resource), in file order's sorted form.
pub type ResourceThresholds = BTreeMap<String, f64>;

/// The resources a threshold left out is taken to have (as upstream): `cpu`, `memory` and
/// `pods` are always judged.
pub const BASIC_RESOURCES: [&str; 3] = ["cpu", "memory", "pods"];

/// The resources thresholds name that actual usage does not measure: it has metrics-server's
/// `cpu` and `memory`, and `pods`, which upstream counts itself; not extended resources.
pub fn unmeasurable(thresholds: &ResourceThresholds) -> Vec<&str> {
    thresholds
        .keys()
        .map(String::as_str)
        .filter(|name| !BASIC_RESOURCES.contains(name))
        .collect()
}

/// The argument without a default, in both plugins (LowNodeUtilization checks
/// `targetThresholds` beside it).
pub(super) const REQUIRED: &str = "thresholds";

/// The v1alpha1 `params` section both plugins' thresholds are in.
pub(super) const LEGACY_THRESHOLDS: &str = "nodeResourceUtilizationThresholds";

/// The v1alpha1 `params` both plugins read beyond the common ones.
pub(super) const LEGACY_PARAMS: &[&str] = &[LEGACY_THRESHOLDS];

/// Where a node's and a pod's utilization comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UsageSource {
    /// The pods' resource requests (upstream's default).
    #[default]
    Requests,
    /// Actual usage from the `metrics.k8s.io` API (metrics-server), recorded in the snapshot.
    KubernetesMetrics,
}

/// A required thresholds mapping: at least one resource, every value a percentage in [0, 100].
pub(super) fn thresholds(
    d: &mut Decoder,
    fields: &Fields<'_>,
    name: &str,
    owner: &YamlNode,
) -> ResourceThresholds {
    let path = fields.path(name);
    let Some(node) = fields.get(name) else {
        super::required(d, owner, &fields.path, name);
        return ResourceThresholds::new();
    };
    let mut thresholds = ResourceThresholds::new();
    let entries = d.entries(node, &path);
    if entries.is_empty() {
        d.problem_at_as(
            Rule::MissingField,
            node,
            &path,
            "no resource threshold is configured",
        );
    }
    for entry in entries {
        let percent = match entry.value.value {
            Value::Int(value) => value as f64,
            Value::Float(value) => value,
            _ => {
                d.expected(entry.value, &entry.path, "a percentage");
                continue;
            }
        };
        if !(0.0..=100.0).contains(&percent) {
            d.problem_at(
                entry.value,
                &entry.path,
                format!("{} threshold {percent} is not in [0, 100]", entry.name),
            );
            continue;
        }
        thresholds.insert(entry.name.to_string(), percent);
    }
    thresholds
}

/// `evictableNamespaces`: upstream only supports `exclude`.
pub(super) fn evictable_namespaces(d: &mut Decoder, fields: &Fields<'_>) -> Namespaces {
    let path = fields.path("evictableNamespaces");
    let node = fields.get("evictableNamespaces");
    let namespaces = namespaces(d, node, &path);
    if let Some(node) = node
        && !namespaces.include.is_empty()
    {
        d.problem_at_as(
            Rule::Unsupported,
            node,
            &path,
            "only exclude namespaces can be set, inclusion is not supported (as upstream)",
        );
    }
    namespaces
}

/// `metricsUtilization: {metricsServer, source, prometheus}`.
pub(super) fn metrics_utilization(d: &mut Decoder, fields: &Fields<'_>) -> UsageSource {
    let path = fields.path("metricsUtilization");
    let Some(node) = fields.get("metricsUtilization") else {
        return UsageSource::Requests;
    };
    let Some(metrics) = d.fields(node, &path, &["metricsServer", "source", "prometheus"]) else {
        return UsageSource::Requests;
    };
    let metrics_server = metrics.bool(d, "metricsServer").unwrap_or(false);
    let source = metrics.get("source").and_then(|source| {
        d.choice(
            source,
            &metrics.path("source"),
            "metrics source",
            &["KubernetesMetrics", "Prometheus"],
        )
    });
    match source.as_deref() {
        Some("Prometheus") => {
            d.problem_at_as(
                Rule::Unsupported,
                node,
                &metrics.path("source"),
                "source Prometheus is not supported by this tool: use KubernetesMetrics \
                 (metrics-server), which snapshots record so plans stay reproducible",
            );
            UsageSource::Requests
        }
        Some(_) if metrics_server => {
            d.problem_at_as(
                Rule::Conflict,
                node,
                &path,
                "it is not allowed to set both source KubernetesMetrics and metricsServer \
                 (as upstream)",
            );
            UsageSource::KubernetesMetrics
        }
        Some(_) => {
            if metrics.get("prometheus").is_some() {
                d.problem_at_as(
                    Rule::Conflict,
                    node,
                    &metrics.path("prometheus"),
                    "prometheus is not allowed when source is KubernetesMetrics (as upstream)",
                );
            }
            UsageSource::KubernetesMetrics
        }
        None if metrics.get("prometheus").is_some() => {
            d.problem_at_as(
                Rule::Unsupported,
                node,
                &metrics.path("prometheus"),
                "Prometheus as a metrics source is not supported by this tool: use source \
                 KubernetesMetrics",
            );
            UsageSource::Requests
        }
        None if metrics_server => UsageSource::KubernetesMetrics,
        None => UsageSource::Requests,
    }
}

/// `evictionModes: [OnlyThresholdingResources]`, upstream's only mode.
pub(super) fn only_thresholding_resources(d: &mut Decoder, fields: &Fields<'_>) -> bool {
    !choices(
        d,
        fields,
        "evictionModes",
        "eviction mode",
        &["OnlyThresholdingResources"],
    )
    .is_empty()
}

/// `evictionLimits: {node}`: at most this many evictions per node by the plugin.
pub(super) fn eviction_limits(d: &mut Decoder, fields: &Fields<'_>) -> Option<u32> {
    let node = fields.get("evictionLimits")?;
    let limits = d.fields(node, &fields.path("evictionLimits"), &["node"])?;
    limits.integer::<u32>(d, "node")
}
