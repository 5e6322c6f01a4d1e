//! Paginated lists of nodes, pods, PodDisruptionBudgets, namespaces and PriorityClasses, and of
//! metrics-server's NodeMetrics and PodMetrics when a policy reads actual usage.
//!
//! kube has no auto-pager: pages of [`PAGE_SIZE`] are followed by their `continue` token until it
//! is empty (pages may be short, even empty, and still carry one). A `410 Expired` token means the
//! server compacted the list's snapshot; the list then starts again from scratch, so every kind
//! is one consistent read.
//!
//! Each page is read into a buffer the list reuses, and its items are decoded one at a time
//! straight into the type their consumer reads (for planning, the slim [`wire`] types) and
//! converted at once (see [`page`]), so a run holds the planner's model of the cluster and, for
//! each kind being listed, one page's text and one item, never the API's objects.

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::Resource;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams, TypeMeta};
use serde::de::DeserializeOwned;

use super::error::Call;
use super::page::{self, PageError};
use super::{Client, Error, PAGE_SIZE, api_status, retry};
use crate::snapshot::prune::{self, Pruned};
use crate::snapshot::wire;
use crate::snapshot::{self, ConvertError, Interner, METRICS_API_VERSION, Metrics, Objects};

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
                client,
                path_of::<Node>(),
                "nodes",
                converting("node", interning(snapshot::node))
            ),
            list_all(
                client,
                path_of::<Pod>(),
                "pods",
                converting("pod", interning(snapshot::pod))
            ),
            list_all(
                client,
                path_of::<PodDisruptionBudget>(),
                "poddisruptionbudgets",
                converting("poddisruptionbudget", snapshot::pdb)
            ),
            list_all(
                client,
                path_of::<Namespace>(),
                "namespaces",
                converting("namespace", interning(snapshot::namespace))
            ),
            list_all(
                client,
                path_of::<PriorityClass>(),
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
            list_all(client, path_of::<Node>(), "nodes", |node| Ok(prune::node(
                node
            ))),
            list_all(client, path_of::<Pod>(), "pods", |pod| Ok(prune::pod(pod))),
            list_all(
                client,
                path_of::<PodDisruptionBudget>(),
                "poddisruptionbudgets",
                |pdb| Ok(prune::pdb(pdb))
            ),
            list_all(
                client,
                path_of::<Namespace>(),
                "namespaces",
                |namespace| Ok(prune::namespace(namespace))
            ),
            list_all(
                client,
                path_of::<PriorityClass>(),
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

impl Client {
    /// Whether metrics-server's API answers: one NodeMetrics at most (`limit=1`), read and
    /// dropped. An API server without the metrics API (404), or whose metrics APIService is
    /// unavailable (503), gives [`Error::MetricsUnavailable`].
    pub async fn metrics_served(&self) -> Result<(), Error> {
        let resource = metrics_resource(&NODE_METRICS);
        let nodes: kube::Api<DynamicObject> = kube::Api::all_with(self.client.clone(), &resource);
        let call = Call::new("GET", DynamicObject::url_path(&resource, None));
        let params = ListParams::default().limit(1);
        let answer = retry::idempotent(NODE_METRICS.list, || nodes.list(&params)).await;
        match answer {
            Ok(_) => Ok(()),
            Err(error) => {
                let source = call.failed(error);
                match source.status().map(|status| status.code) {
                    Some(code @ (404 | 503)) => Err(Error::MetricsUnavailable { code, source }),
                    _ => Err(Error::List {
                        kind: NODE_METRICS.list,
                        source,
                    }),
                }
            }
        }
    }

    /// The names of the cluster's PriorityClasses.
    pub async fn priority_class_names(&self) -> Result<Vec<String>, Error> {
        list_all(
            &self.client,
            path_of::<PriorityClass>(),
            "priorityclasses",
            |class: PriorityClass| Ok(class.metadata.name.unwrap_or_default()),
        )
        .await
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
    let resource = metrics_resource(&metrics);
    let path = DynamicObject::url_path(&resource, None);
    match list_all(client, path, metrics.list, keep).await {
        Err(Error::List { kind, source }) => match source.status().map(|s| s.code) {
            Some(code @ (404 | 503)) => Err(Error::MetricsUnavailable { code, source }),
            _ => Err(Error::List { kind, source }),
        },
        other => other,
    }
}

/// The API resource of one metrics kind.
fn metrics_resource(metrics: &MetricsKind) -> ApiResource {
    let (group, version) = METRICS_API_VERSION
        .split_once('/')
        .expect("a group and a version");
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(group, version, metrics.kind),
        metrics.plural,
    )
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

/// The cluster-wide list path of a built-in kind (`/api/v1/pods`).
pub(super) fn path_of<K: Resource<DynamicType = ()>>() -> String {
    K::url_path(&(), None)
}

/// Every object of one kind, page by page, each passed through `keep` as it is decoded.
pub(super) async fn list_all<K, T>(
    client: &::kube::Client,
    path: String,
    kind: &'static str,
    mut keep: impl FnMut(K) -> Result<T, Error>,
) -> Result<Vec<T>, Error>
where
    K: DeserializeOwned,
{
    let call = Call::new("GET", path.as_str());
    let mut restarts = 0;
    // One buffer for every page of the list: see `page` for why pages are not read as kube does.
    let mut body = Vec::new();
    'from_scratch: loop {
        let mut items = Vec::new();
        let mut params = ListParams::default().limit(PAGE_SIZE);
        let mut pages = 0u32;
        loop {
            let fetched = retry::idempotent(kind, || {
                page::fetch(client, &path, &params, std::mem::take(&mut body))
            })
            .await;
            match fetched {
                Ok(answer) => body = answer,
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
            }
            pages += 1;
            let metadata = decode_page(&body, &mut items, &mut keep, kind, &call)?;
            reserve_for(&mut items, &metadata);
            match metadata.continue_ {
                Some(token) if !token.is_empty() => params = params.continue_token(&token),
                _ => {
                    tracing::debug!(kind, pages, items = items.len(), "listed");
                    items.shrink_to_fit();
                    return Ok(items);
                }
            }
        }
    }
}

/// The items of the page in `body` through `keep` onto `items`; the page's metadata.
fn decode_page<K: DeserializeOwned, T>(
    body: &[u8],
    items: &mut Vec<T>,
    keep: &mut impl FnMut(K) -> Result<T, Error>,
    kind: &'static str,
    call: &Call,
) -> Result<kube::core::ListMeta, Error> {
    page::decode(body, items, keep).map_err(|error| match error {
        PageError::Item(error) => error,
        // kube's own error for an answer that is not the expected object: `describe` words it
        // with the position where decoding stopped.
        PageError::Decode(error) => Error::List {
            kind,
            source: call.failed(::kube::Error::SerdeError(error)),
        },
    })
}

/// Room for the items after a page. The server tells how many follow (`remainingItemCount`), so
/// the whole list is reserved once, at its size, after the first page: grown by doubling,
/// 150,000 pods would leave up to half as much again unused, and hold the old and the new vector
/// at once while it moves. Without the count (it is optional), the vector grows as vectors do.
fn reserve_for<T>(items: &mut Vec<T>, metadata: &kube::core::ListMeta) {
    if let Some(remaining) = metadata
        .remaining_item_count
        .and_then(|count| usize::try_from(count).ok())
    {
        items.reserve_exact(remaining);
    }
}

/// Convert each listed object, naming the one that does not convert.
fn converting<K: Named, T>(
    kind: &'static str,
    mut convert: impl FnMut(K) -> Result<T, ConvertError>,
) -> impl FnMut(K) -> Result<T, Error> {
    move |object| {
        let name = object.name();
        convert(object).map_err(|source| Error::Convert { kind, name, source })
    }
}

/// A conversion that shares label texts across every page of its list through one interner
/// (each kind has its own: the lists are read concurrently).
fn interning<K, T>(
    convert: fn(K, &mut Interner) -> Result<T, ConvertError>,
) -> impl FnMut(K) -> Result<T, ConvertError> {
    let mut interner = Interner::default();
    move |object| convert(object, &mut interner)
}

/// How a listed object is named in an error: `namespace/name`, or `name`.
trait Named {
    fn name(&self) -> String;
}

impl Named for wire::Node {
    fn name(&self) -> String {
        wire_name(self.metadata.as_ref())
    }
}

impl Named for wire::Pod {
    fn name(&self) -> String {
        wire_name(self.metadata.as_ref())
    }
}

fn wire_name(metadata: Option<&wire::Meta>) -> String {
    let metadata = metadata.map(|m| (m.namespace.as_deref(), m.name.as_deref()));
    name_of(metadata.unwrap_or_default())
}

macro_rules! named_by_metadata {
    ($($kind:ty),*) => {$(
        impl Named for $kind {
            fn name(&self) -> String {
                object_name(self.meta())
            }
        }
    )*};
}

named_by_metadata!(PodDisruptionBudget, Namespace, PriorityClass);

fn object_name(metadata: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    name_of((metadata.namespace.as_deref(), metadata.name.as_deref()))
}

fn name_of((namespace, name): (Option<&str>, Option<&str>)) -> String {
    match (namespace, name) {
        (Some(namespace), Some(name)) => format!("{namespace}/{name}"),
        (None, Some(name)) => name.to_string(),
        _ => "(unnamed)".to_string(),
    }
}
