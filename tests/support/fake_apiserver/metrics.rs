//! metrics-server's `metrics.k8s.io/v1beta1` as the aggregated API serves it: `NodeMetricsList`
//! and `PodMetricsList` (all namespaces or one) in a single page whatever `limit` asks (it does
//! not page), items without `kind` and `apiVersion`, each with `metadata` (name, namespace,
//! labels, creation time), `timestamp`, `window` and `usage` (nodes) or `containers[].usage`
//! (pods). An absent metrics-server is a 404, an unavailable APIService the aggregator's 503,
//! both with a plain-text body as kube-apiserver sends them (not a `Status`): the group is
//! unknown to every handler, so Go's `http.NotFound` answers `404 page not found`; the
//! aggregator's proxy answers an APIService it marked unavailable with `http.Error`'s
//! `service unavailable`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::{FakeCluster, plain_text};

/// The API group and version metrics-server registers.
pub const API_VERSION: &str = "metrics.k8s.io/v1beta1";

/// Whether the cluster serves `metrics.k8s.io`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MetricsApi {
    /// No metrics-server installed: the group is unknown (404, `404 page not found`).
    #[default]
    Absent,
    /// The APIService is registered but its backend is down or its Service missing (503 from
    /// the aggregator, `service unavailable`).
    Unavailable,
    /// metrics-server answers.
    Serving,
}

/// The two collections metrics-server serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Nodes,
    Pods,
}

/// `GET` of `/apis/metrics.k8s.io/v1beta1/nodes`, `/pods` or `/namespaces/NS/pods`.
pub fn serve(cluster: &FakeCluster, kind: Kind, namespace: Option<&str>) -> Response {
    match cluster.metrics_api {
        MetricsApi::Absent => return plain_text(404, "404 page not found"),
        MetricsApi::Unavailable => return plain_text(503, "service unavailable"),
        MetricsApi::Serving => {}
    }
    let (list_kind, items): (&str, Vec<Value>) = match kind {
        Kind::Nodes => (
            "NodeMetricsList",
            cluster.node_metrics.values().map(measured).collect(),
        ),
        Kind::Pods => (
            "PodMetricsList",
            cluster
                .pod_metrics
                .iter()
                .filter(|((ns, _), _)| namespace.is_none_or(|wanted| wanted == ns))
                .map(|(_, metrics)| measured(metrics))
                .collect(),
        ),
    };
    let body = json!({
        "kind": list_kind,
        "apiVersion": API_VERSION,
        "metadata": {},
        "items": items,
    });
    (
        StatusCode::OK,
        [("content-type", "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// A loaded NodeMetrics or PodMetrics as a list item: no `kind` or `apiVersion`, and the
/// measurement's instant and window filled in when the fixture leaves them out.
fn measured(metrics: &Value) -> Value {
    let mut item = metrics.clone();
    if let Some(fields) = item.as_object_mut() {
        fields.remove("kind");
        fields.remove("apiVersion");
        let now = super::now().to_string();
        fields.entry("timestamp").or_insert_with(|| json!(now));
        fields.entry("window").or_insert_with(|| json!("20.05s"));
        if let Some(Value::Object(metadata)) = fields.get_mut("metadata") {
            metadata
                .entry("creationTimestamp")
                .or_insert_with(|| json!(now));
        }
    }
    item
}
