//! The top level of `descheduler/v1alpha2` files and of our `vsphere-descheduler.io/v1alpha1`,
//! which is v1alpha2 plus `clusterName` and `vsphere:`.
//!
//! Upstream ignores unknown top-level keys (so `preEvictionFilter:` or a misspelt limit silently
//! does nothing); here they are problems, in both formats.

use super::decode::{Decoder, Fields, index};
use super::profiles::profiles;
use super::selector::selector_string;
use super::vsphere::vsphere;
use super::yaml::Node;
use super::{Limits, Policy, VsphereSettings};

/// The apiVersion of our format.
pub(super) const VSPHERE_API_VERSION: &str = "vsphere-descheduler.io/v1alpha1";
/// The apiVersion of upstream's current format.
pub(super) const UPSTREAM_API_VERSION: &str = "descheduler/v1alpha2";

const UPSTREAM_FIELDS: [&str; 11] = [
    "apiVersion",
    "kind",
    "profiles",
    "nodeSelector",
    "maxNoOfPodsToEvictPerNode",
    "maxNoOfPodsToEvictPerNamespace",
    "maxNoOfPodsToEvictTotal",
    "evictionFailureEventNotification",
    "gracePeriodSeconds",
    "metricsCollector",
    "metricsProviders",
];
/// Fields only our format has.
const VSPHERE_ONLY_FIELDS: [&str; 2] = ["clusterName", "vsphere"];

/// Which of the two v1alpha2-shaped formats a file uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Flavor {
    /// `vsphere-descheduler.io/v1alpha1`.
    Vsphere,
    /// `descheduler/v1alpha2`, as upstream writes it.
    Upstream,
}

/// Decodes a v1alpha2-shaped document (apiVersion and kind already checked).
pub(super) fn decode(d: &mut Decoder, root: &Node, flavor: Flavor) -> Policy {
    let mut valid: Vec<&str> = UPSTREAM_FIELDS.to_vec();
    if flavor == Flavor::Vsphere {
        valid.extend(VSPHERE_ONLY_FIELDS);
    }
    let hint = |name: &str| {
        (flavor == Flavor::Upstream && VSPHERE_ONLY_FIELDS.contains(&name)).then(|| {
            format!(
                "{name} is only valid with apiVersion {VSPHERE_API_VERSION}; with \
                 {UPSTREAM_API_VERSION}, vSphere settings come from flags and environment"
            )
        })
    };
    let Some(top) = d.fields_with_hint(root, "", &valid, hint) else {
        return Policy::default();
    };

    let (cluster_name, vsphere) = match flavor {
        Flavor::Vsphere => vsphere(d, &top),
        // vCenter details then come from flags and the environment; rule sync needs a cluster
        // name, which only the command line can supply for an upstream file.
        Flavor::Upstream => {
            let mut settings = VsphereSettings::default();
            settings.drs_rules.enabled = false;
            (None, settings)
        }
    };
    let grace_period_seconds = top.integer::<i64>(d, "gracePeriodSeconds");
    if let (Some(seconds), Some(node)) = (grace_period_seconds, top.get("gracePeriodSeconds"))
        && seconds < 0
    {
        d.problem_at(node, "gracePeriodSeconds", "must not be negative");
    }
    metrics(d, &top);
    Policy {
        cluster_name,
        node_selector: selector_string(d, top.get("nodeSelector"), "nodeSelector"),
        limits: limits(d, &top),
        profiles: profiles(d, top.get("profiles"), "profiles"),
        vsphere,
        eviction_failure_events: top
            .bool(d, "evictionFailureEventNotification")
            .unwrap_or(false),
        grace_period_seconds: grace_period_seconds.filter(|seconds| *seconds >= 0),
    }
}

/// `maxNoOfPodsToEvict{PerNode,PerNamespace,Total}`, shared with `descheduler/v1alpha1`.
pub(super) fn limits(d: &mut Decoder, top: &Fields<'_>) -> Limits {
    Limits {
        per_node: top.integer(d, "maxNoOfPodsToEvictPerNode"),
        per_namespace: top.integer(d, "maxNoOfPodsToEvictPerNamespace"),
        total: top.integer(d, "maxNoOfPodsToEvictTotal"),
    }
}

/// `metricsCollector` and `metricsProviders` are checked as upstream checks them, then ignored:
/// they only feed LowNodeUtilization and HighNodeUtilization, which this tool does not run.
fn metrics(d: &mut Decoder, top: &Fields<'_>) {
    let mut collector_enabled = false;
    if let Some(node) = top.get("metricsCollector") {
        let path = top.path("metricsCollector");
        if let Some(fields) = d.fields(node, &path, &["enabled"]) {
            collector_enabled = fields.bool(d, "enabled").unwrap_or(false);
            if collector_enabled {
                d.warning_at(node, &path, "metricsCollector is ignored: only LowNodeUtilization and HighNodeUtilization use it");
            }
        }
    }
    let path = top.path("metricsProviders");
    let providers = top.list(d, "metricsProviders");
    let mut sources: Vec<String> = Vec::new();
    for (i, provider) in providers.iter().enumerate() {
        let item_path = index(&path, i);
        let Some(fields) = d.fields(provider, &item_path, &["source", "prometheus"]) else {
            continue;
        };
        let source = match fields.get("source") {
            Some(node) => d.choice(
                node,
                &fields.path("source"),
                "metrics source",
                &["KubernetesMetrics", "Prometheus"],
            ),
            None => {
                d.problem(
                    fields.position,
                    &fields.path("source"),
                    "source is required (KubernetesMetrics or Prometheus)",
                );
                None
            }
        };
        if let Some(source) = source {
            if sources.contains(&source) {
                d.problem(
                    fields.position,
                    &fields.path("source"),
                    format!("metrics source {source} is listed twice"),
                );
            } else if source == "KubernetesMetrics" && collector_enabled {
                d.problem(
                    fields.position,
                    &fields.path("source"),
                    "KubernetesMetrics cannot be combined with metricsCollector.enabled (as upstream)",
                );
            }
            sources.push(source);
        }
        if let Some(prometheus) = fields.get("prometheus") {
            prometheus_settings(d, prometheus, &fields.path("prometheus"));
        }
    }
    if let Some(first) = providers.first() {
        d.warning_at(
            first,
            &path,
            "metricsProviders is ignored: only LowNodeUtilization and HighNodeUtilization use it",
        );
    }
}

/// `prometheus: {url, authToken: {secretReference: {namespace, name}}}`; shape only.
fn prometheus_settings(d: &mut Decoder, node: &Node, path: &str) {
    let Some(fields) = d.fields(node, path, &["url", "authToken"]) else {
        return;
    };
    let _ = fields.string(d, "url");
    let Some(token) = fields.get("authToken") else {
        return;
    };
    let Some(token) = d.fields(token, &fields.path("authToken"), &["secretReference"]) else {
        return;
    };
    let Some(reference) = token.get("secretReference") else {
        return;
    };
    if let Some(reference) = d.fields(
        reference,
        &token.path("secretReference"),
        &["namespace", "name"],
    ) {
        let _ = reference.string(d, "namespace");
        let _ = reference.string(d, "name");
    }
}
