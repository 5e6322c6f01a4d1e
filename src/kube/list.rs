//! Paginated lists of nodes, pods, PodDisruptionBudgets, namespaces and PriorityClasses, and of
//! metrics-server's NodeMetrics and PodMetrics when a policy reads actual usage.
//!
//! kube has no auto-pager: pages of [`PAGE_SIZE`] are followed by their `continue` token until it
//! is empty (pages may be short, even empty, and still carry one). A `410 Expired` token means the
//! server compacted the list's snapshot; the list then starts again from scratch, so every kind
//! is one consistent read.

use std::fmt::Debug;

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::Resource;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, TypeMeta};
use serde::de::DeserializeOwned;

use super::error::Call;
use super::{Client, Error, PAGE_SIZE, api_status, retry};
use crate::snapshot::prune::{self, Pruned};
use crate::snapshot::{self, ConvertError, METRICS_API_VERSION, Metrics, Objects};

/// How often one kind is listed again from scratch after `410 Expired` before giving up.
const MAX_RESTARTS: u32 = 3;

/// The objects as the API returned them, pruned to the fields planning reads (for snapshot
/// files: see [`prune`]).
#[derive(Debug, Default)]
pub struct RawObjects {
    pub nodes: Vec<Pruned>,
    pub pods: Vec<Pruned>,
    pub pdbs: Vec<Pruned>,
    pub namespaces: Vec<Pruned>,
    pub priority_classes: Vec<Pruned>,
}

/// metrics-server's objects as the API returned them, pruned to what planning reads.
#[derive(Debug, Default)]
pub struct RawMetrics {
    pub nodes: Vec<Pruned>,
    pub pods: Vec<Pruned>,
}

impl Client {
    /// Lists everything planning reads, converted to the planner's types as each page arrives
    /// (so a large cluster never sits in memory as API objects).
    pub async fn observe(&self) -> Result<Objects, Error> {
        let client = &self.client;
        let (nodes, pods, pdbs, namespaces, priority_classes) = tokio::try_join!(
            list_all(
                Api::<Node>::all(client.clone()),
                "nodes",
                converting("node", snapshot::node)
            ),
            list_all(
                Api::<Pod>::all(client.clone()),
                "pods",
                converting("pod", snapshot::pod)
            ),
            list_all(
                Api::<PodDisruptionBudget>::all(client.clone()),
                "poddisruptionbudgets",
                converting("poddisruptionbudget", snapshot::pdb)
            ),
            list_all(
                Api::<Namespace>::all(client.clone()),
                "namespaces",
                converting("namespace", snapshot::namespace)
            ),
            list_all(
                Api::<PriorityClass>::all(client.clone()),
                "priorityclasses",
                converting("priorityclass", snapshot::priority_class)
            ),
        )?;
        tracing::info!(
            nodes = nodes.len(),
            pods = pods.len(),
            pdbs = pdbs.len(),
            namespaces = namespaces.len(),
            priority_classes = priority_classes.len(),
            "listed Kubernetes objects"
        );
        Ok(Objects {
            nodes,
            pods,
            pdbs,
            namespaces,
            priority_classes,
            ..Objects::default()
        })
    }

    /// Lists the same objects as [`Client::observe`] for a snapshot file, each pruned as its
    /// page arrives to what planning reads.
    pub async fn list_objects(&self) -> Result<RawObjects, Error> {
        let client = &self.client;
        let (nodes, pods, pdbs, namespaces, priority_classes) = tokio::try_join!(
            list_all(Api::<Node>::all(client.clone()), "nodes", |node| Ok(
                prune::node(node)
            )),
            list_all(Api::<Pod>::all(client.clone()), "pods", |pod| Ok(
                prune::pod(pod)
            )),
            list_all(
                Api::<PodDisruptionBudget>::all(client.clone()),
                "poddisruptionbudgets",
                |pdb| Ok(prune::pdb(pdb))
            ),
            list_all(
                Api::<Namespace>::all(client.clone()),
                "namespaces",
                |namespace| Ok(prune::namespace(namespace))
            ),
            list_all(
                Api::<PriorityClass>::all(client.clone()),
                "priorityclasses",
                |class| Ok(prune::priority_class(class))
            ),
        )?;
        Ok(RawObjects {
            nodes,
            pods,
            pdbs,
            namespaces,
            priority_classes,
        })
    }
}

impl Client {
    /// metrics-server's current usage of every node and pod. An API server without the
    /// metrics API (404), or whose metrics APIService is unavailable (503), gives
    /// [`Error::MetricsUnavailable`].
    pub async fn observe_metrics(&self) -> Result<Metrics, Error> {
        let (nodes, pods) = tokio::try_join!(
            metrics_of_kind(&self.client, NODE_METRICS, |object| {
                let name = object_name(&object.metadata);
                snapshot::untyped_node_metrics(untyped(object, &NODE_METRICS)).map_err(|source| {
                    Error::Convert {
                        kind: "nodemetrics",
                        name,
                        source,
                    }
                })
            }),
            metrics_of_kind(&self.client, POD_METRICS, |object| {
                let name = object_name(&object.metadata);
                snapshot::untyped_pod_metrics(untyped(object, &POD_METRICS)).map_err(|source| {
                    Error::Convert {
                        kind: "podmetrics",
                        name,
                        source,
                    }
                })
            }),
        )?;
        tracing::info!(
            nodes = nodes.len(),
            pods = pods.len(),
            "listed metrics.k8s.io usage"
        );
        Ok(Metrics {
            nodes: nodes.into_iter().collect(),
            pods: pods.into_iter().collect(),
        })
    }

    /// The same usage as [`Client::observe_metrics`] for a snapshot file, pruned.
    pub async fn list_metrics(&self) -> Result<RawMetrics, Error> {
        let (nodes, pods) = tokio::try_join!(
            metrics_of_kind(&self.client, NODE_METRICS, |object| Ok(
                prune::node_metrics(untyped(object, &NODE_METRICS))
            )),
            metrics_of_kind(&self.client, POD_METRICS, |object| Ok(prune::pod_metrics(
                untyped(object, &POD_METRICS)
            ))),
        )?;
        Ok(RawMetrics { nodes, pods })
    }
}

/// One kind of metrics-server's API: its kind, plural and the name of its list for logs.
struct MetricsKind {
    kind: &'static str,
    plural: &'static str,
    list: &'static str,
}

const NODE_METRICS: MetricsKind = MetricsKind {
    kind: "NodeMetrics",
    plural: "nodes",
    list: "nodemetrics",
};

const POD_METRICS: MetricsKind = MetricsKind {
    kind: "PodMetrics",
    plural: "pods",
    list: "podmetrics",
};

/// Every object of one metrics kind, paged as the other lists (metrics-server answers in one
/// page); an absent or unavailable metrics API is told apart from other failures.
async fn metrics_of_kind<T>(
    client: &::kube::Client,
    metrics: MetricsKind,
    keep: impl FnMut(DynamicObject) -> Result<T, Error>,
) -> Result<Vec<T>, Error> {
    let (group, version) = METRICS_API_VERSION
        .split_once('/')
        .expect("a group and a version");
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(group, version, metrics.kind),
        metrics.plural,
    );
    let api = Api::<DynamicObject>::all_with(client.clone(), &resource);
    match list_all(api, metrics.list, keep).await {
        Err(Error::List { kind, source }) => match source.status().map(|s| s.code) {
            Some(code @ (404 | 503)) => Err(Error::MetricsUnavailable { code, source }),
            _ => Err(Error::List { kind, source }),
        },
        other => other,
    }
}

/// A listed metrics object as one JSON object, with the `apiVersion` and `kind` that list
/// items lack (a `NodeMetricsList`'s items carry none).
fn untyped(mut object: DynamicObject, metrics: &MetricsKind) -> serde_json::Value {
    object.types = Some(TypeMeta {
        api_version: METRICS_API_VERSION.to_string(),
        kind: metrics.kind.to_string(),
    });
    serde_json::to_value(object).expect("a listed object serializes")
}

/// Every object of one kind, page by page, each passed through `keep` as its page arrives.
async fn list_all<K, T>(
    api: Api<K>,
    kind: &'static str,
    mut keep: impl FnMut(K) -> Result<T, Error>,
) -> Result<Vec<T>, Error>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let call = Call::new("GET", api.resource_url());
    let mut restarts = 0;
    'from_scratch: loop {
        let mut items = Vec::new();
        let mut params = ListParams::default().limit(PAGE_SIZE);
        let mut pages = 0u32;
        loop {
            let page = match retry::idempotent(kind, || api.list(&params)).await {
                Ok(page) => page,
                Err(error) if api_status(&error).is_some_and(|s| s.code == 410) => {
                    restarts += 1;
                    if restarts > MAX_RESTARTS {
                        return Err(Error::ListExpired {
                            kind,
                            attempts: restarts,
                        });
                    }
                    tracing::info!(
                        kind,
                        pages,
                        "list continue token expired; listing again from the start"
                    );
                    continue 'from_scratch;
                }
                Err(error) => {
                    return Err(Error::List {
                        kind,
                        source: call.failed(error),
                    });
                }
            };
            pages += 1;
            items.reserve(page.items.len());
            for item in page.items {
                items.push(keep(item)?);
            }
            match page.metadata.continue_ {
                Some(token) if !token.is_empty() => params = params.continue_token(&token),
                _ => {
                    tracing::debug!(kind, pages, items = items.len(), "listed");
                    return Ok(items);
                }
            }
        }
    }
}

/// Convert each listed object, naming the one that does not convert.
fn converting<K: Resource, T>(
    kind: &'static str,
    convert: fn(K) -> Result<T, ConvertError>,
) -> impl FnMut(K) -> Result<T, Error> {
    move |object| {
        let name = object_name(object.meta());
        convert(object).map_err(|source| Error::Convert { kind, name, source })
    }
}

fn object_name(metadata: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    match (&metadata.namespace, &metadata.name) {
        (Some(namespace), Some(name)) => format!("{namespace}/{name}"),
        (None, Some(name)) => name.clone(),
        _ => "(unnamed)".to_string(),
    }
}
