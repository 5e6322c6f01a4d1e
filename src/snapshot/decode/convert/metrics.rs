//! `metrics.k8s.io/v1beta1` NodeMetrics and PodMetrics → actual usage per node and pod.

use std::collections::BTreeMap;

use crate::snapshot::model::Resources;

use super::{ConvertError, resources};

/// `metrics.k8s.io/v1beta1` NodeMetrics as metrics-server serves it (the fields read).
#[derive(serde::Deserialize)]
#[serde(expecting = "a NodeMetrics (a mapping)")]
pub struct NodeMetrics {
    metadata: MetricsMeta,
    #[serde(default)]
    usage: BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
}

/// `metrics.k8s.io/v1beta1` PodMetrics: usage per container.
#[derive(serde::Deserialize)]
#[serde(expecting = "a PodMetrics (a mapping)")]
pub struct PodMetrics {
    metadata: MetricsMeta,
    #[serde(default)]
    containers: Vec<ContainerMetrics>,
}

#[derive(serde::Deserialize)]
#[serde(expecting = "metadata to be a mapping")]
struct MetricsMeta {
    name: Option<String>,
    namespace: Option<String>,
}

#[derive(serde::Deserialize)]
#[serde(expecting = "a container's usage (a mapping with name and usage)")]
struct ContainerMetrics {
    #[serde(default)]
    usage: BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
}

/// A node's usage, by node name.
pub fn node_metrics(metrics: NodeMetrics) -> Result<(String, Resources), ConvertError> {
    let name = metrics.metadata.name.ok_or(ConvertError::Missing {
        field: "metadata.name",
    })?;
    Ok((name, resources(metrics.usage, "usage")?))
}

/// [`node_metrics`] of an object the API returned untyped (metrics.k8s.io has no typed client).
pub fn untyped_node_metrics(
    object: serde_json::Value,
) -> Result<(String, Resources), ConvertError> {
    node_metrics(untyped(object)?)
}

/// [`pod_metrics`] of an object the API returned untyped.
pub fn untyped_pod_metrics(
    object: serde_json::Value,
) -> Result<((String, String), Resources), ConvertError> {
    pod_metrics(untyped(object)?)
}

fn untyped<T: serde::de::DeserializeOwned>(object: serde_json::Value) -> Result<T, ConvertError> {
    serde_json::from_value(object).map_err(|error| ConvertError::Unreadable {
        message: error.to_string(),
    })
}

/// A pod's usage (the sum of its containers'), by namespace and name.
pub fn pod_metrics(metrics: PodMetrics) -> Result<((String, String), Resources), ConvertError> {
    let name = metrics.metadata.name.ok_or(ConvertError::Missing {
        field: "metadata.name",
    })?;
    let namespace = metrics.metadata.namespace.ok_or(ConvertError::Missing {
        field: "metadata.namespace",
    })?;
    let mut usage = Resources::default();
    for container in metrics.containers {
        usage.add(&resources(container.usage, "containers[].usage")?);
    }
    Ok(((namespace, name), usage))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Issue 42: `invalid type: boolean false, expected struct ContainerMetrics`: the message
    /// names what was expected in the user's words, never a Rust type.
    #[test]
    fn a_container_of_the_wrong_shape_is_refused_in_words() {
        let object = json!({
            "metadata": {"name": "p", "namespace": "shop"},
            "containers": [false],
        });
        let error = untyped_pod_metrics(object).expect_err("a boolean is no container");
        let message = error.to_string();
        assert!(
            message.contains("expected a container's usage (a mapping with name and usage)"),
            "{message}"
        );
        assert!(!message.contains("struct"), "{message}");
    }

    #[test]
    fn a_pod_metrics_that_is_no_mapping_is_refused_in_words() {
        let error = untyped_pod_metrics(json!("p")).expect_err("a string is no PodMetrics");
        assert!(
            error
                .to_string()
                .contains("expected a PodMetrics (a mapping)"),
            "{error}"
        );
    }
}
