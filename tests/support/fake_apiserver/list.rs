//! Paged lists: items ordered by storage key, at most `limit` per page, a
//! `continue` token while more remain, every page served from the snapshot the first page fixed;
//! with a `labelSelector`, only the items it selects (pages filled to `limit` with them, as the
//! server reads on until it has enough, and no `remainingItemCount`). Field selectors are 400.
//! Tokens are upstream's format: base64url of `{"v":"meta.k8s.io/v1","rv":N,"start":"KEY\u0000"}`.

use std::borrow::Borrow;
use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use k8s_openapi::Metadata;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;
use serde_json::{Value, json};

use super::label_selector::LabelSelector;
use super::vm_operator::{Resource, Version};
use super::{FakeCluster, Request, status};

/// List snapshots kept for continuation.
const MAX_SNAPSHOTS: usize = 32;

/// The kinds that can be listed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Nodes,
    Pods,
    Pdbs,
    Namespaces,
    PriorityClasses,
    Leases,
    Events,
    /// VM Operator's resources, read in a served version.
    VmOperator(Resource, Version),
}

impl Kind {
    fn list_kind(self) -> (&'static str, &'static str) {
        match self {
            Kind::Nodes => ("v1", "NodeList"),
            Kind::Pods => ("v1", "PodList"),
            Kind::Pdbs => ("policy/v1", "PodDisruptionBudgetList"),
            Kind::Namespaces => ("v1", "NamespaceList"),
            Kind::PriorityClasses => ("scheduling.k8s.io/v1", "PriorityClassList"),
            Kind::Leases => ("coordination.k8s.io/v1", "LeaseList"),
            Kind::Events => ("events.k8s.io/v1", "EventList"),
            Kind::VmOperator(resource, version) => (version.api_version(), resource.list_kind()),
        }
    }

    /// What a snapshot is kept under: the stored objects, whichever version reads them.
    fn snapshot_key(self, namespace: Option<&str>) -> String {
        let namespace = namespace.unwrap_or("");
        match self {
            Kind::VmOperator(resource, _) => format!("{resource:?}/{namespace}"),
            other => format!("{other:?}/{namespace}"),
        }
    }
}

/// A list's items as of one revision: storage key and object, in key order.
#[derive(Clone)]
pub enum Frozen {
    Nodes(Vec<(String, Arc<k8s_openapi::api::core::v1::Node>)>),
    Pods(Vec<(String, Arc<k8s_openapi::api::core::v1::Pod>)>),
    Pdbs(
        Vec<(
            String,
            Arc<k8s_openapi::api::policy::v1::PodDisruptionBudget>,
        )>,
    ),
    Namespaces(Vec<(String, Arc<k8s_openapi::api::core::v1::Namespace>)>),
    PriorityClasses(Vec<(String, Arc<k8s_openapi::api::scheduling::v1::PriorityClass>)>),
    Leases(Vec<(String, Arc<k8s_openapi::api::coordination::v1::Lease>)>),
    Events(Vec<(String, Arc<k8s_openapi::api::events::v1::Event>)>),
    /// In the storage version.
    VmOperator(Vec<(String, Arc<Value>)>),
}

fn keyed<T>(
    map: &std::collections::BTreeMap<(String, String), Arc<T>>,
    namespace: Option<&str>,
) -> Vec<(String, Arc<T>)> {
    map.iter()
        .filter(|((ns, _), _)| namespace.is_none_or(|wanted| wanted == ns))
        .map(|((ns, name), object)| {
            // Namespaced lists are keyed by name, all-namespace lists by namespace/name.
            let key = match namespace {
                Some(_) => name.clone(),
                None => format!("{ns}/{name}"),
            };
            (key, object.clone())
        })
        .collect()
}

fn freeze(cluster: &FakeCluster, kind: Kind, namespace: Option<&str>) -> Frozen {
    match kind {
        Kind::Nodes => Frozen::Nodes(
            cluster
                .nodes
                .iter()
                .map(|(name, node)| (name.clone(), node.clone()))
                .collect(),
        ),
        Kind::Namespaces => Frozen::Namespaces(
            cluster
                .namespaces
                .iter()
                .map(|(name, namespace)| (name.clone(), namespace.clone()))
                .collect(),
        ),
        Kind::PriorityClasses => Frozen::PriorityClasses(
            cluster
                .priority_classes
                .iter()
                .map(|(name, class)| (name.clone(), class.clone()))
                .collect(),
        ),
        Kind::Pods => Frozen::Pods(keyed(&cluster.pods, namespace)),
        Kind::Pdbs => Frozen::Pdbs(keyed(&cluster.pdbs, namespace)),
        Kind::Leases => Frozen::Leases(keyed(&cluster.leases, namespace)),
        Kind::Events => Frozen::Events(keyed(&cluster.events, namespace)),
        Kind::VmOperator(resource, _) => Frozen::VmOperator(
            cluster
                .vm_operator
                .as_ref()
                .map(|operator| keyed(operator.objects(resource), namespace))
                .unwrap_or_default(),
        ),
    }
}

/// Which items of a frozen list a page holds.
#[derive(Clone, Copy)]
struct Window<'a> {
    /// The key the previous page ended at (exclusive).
    start: Option<&'a str>,
    limit: Option<usize>,
    selector: Option<&'a LabelSelector>,
}

/// The selected items after the window's start, at most its limit, as JSON without kind and
/// apiVersion; the last key served when more remain; how many remain.
fn page<T: Serialize + Metadata<Ty = ObjectMeta>>(
    items: &[(String, Arc<T>)],
    window: Window,
) -> (Vec<String>, Option<String>, usize) {
    page_rendered(
        items,
        window,
        |object| {
            let labels = object.metadata().labels.as_ref();
            window.selector.is_none_or(|selector| {
                selector.matches(|key| {
                    labels
                        .and_then(|labels| labels.get(key))
                        .map(String::as_str)
                })
            })
        },
        |object| without_type(serde_json::to_string(object).expect("objects serialise")),
    )
}

/// [`page`] with each item selected by `selected` and written by `render`.
fn page_rendered<T>(
    items: &[(String, Arc<T>)],
    window: Window,
    selected: impl Fn(&T) -> bool,
    render: impl Fn(&T) -> String,
) -> (Vec<String>, Option<String>, usize) {
    let first = match window.start {
        Some(start) => items.partition_point(|(key, _)| key.as_str() <= start),
        None => 0,
    };
    let rest = &items[first..];
    match window.selector {
        // The slice as it is: no copy of a list of 150,000 pods per page.
        None => window_of(rest, window.limit, render),
        Some(_) => {
            let candidates: Vec<&(String, Arc<T>)> =
                rest.iter().filter(|(_, object)| selected(object)).collect();
            window_of(&candidates, window.limit, render)
        }
    }
}

/// The first `limit` of `candidates` rendered; the last key served when more remain; how many
/// remain.
fn window_of<I: Borrow<(String, Arc<T>)>, T>(
    candidates: &[I],
    limit: Option<usize>,
    render: impl Fn(&T) -> String,
) -> (Vec<String>, Option<String>, usize) {
    let end = limit.map_or(candidates.len(), |limit| limit.min(candidates.len()));
    let values = candidates[..end]
        .iter()
        .map(|item| render(item.borrow().1.as_ref()))
        .collect();
    let last = (end < candidates.len() && end > 0).then(|| candidates[end - 1].borrow().0.clone());
    (values, last, candidates.len() - end)
}

/// List items carry no kind or apiVersion. k8s-openapi writes both first, so they are cut from
/// the text (much cheaper than a round trip through `Value` for 150,000 pods).
fn without_type(json: String) -> String {
    let Some(mut rest) = json.strip_prefix('{') else {
        return json;
    };
    for field in ["\"apiVersion\":\"", "\"kind\":\""] {
        // Both values are plain strings without escapes.
        let Some(value) = rest.strip_prefix(field) else {
            return json;
        };
        let Some(close) = value.find('"') else {
            return json;
        };
        let Some(tail) = value[close + 1..].strip_prefix(',') else {
            return json;
        };
        rest = tail;
    }
    format!("{{{rest}")
}

fn page_of(
    cluster: &FakeCluster,
    kind: Kind,
    frozen: &Frozen,
    window: Window,
) -> (Vec<String>, Option<String>, usize) {
    match frozen {
        Frozen::Nodes(items) => page(items, window),
        Frozen::Pods(items) => page(items, window),
        Frozen::Pdbs(items) => page(items, window),
        Frozen::Namespaces(items) => page(items, window),
        Frozen::PriorityClasses(items) => page(items, window),
        Frozen::Leases(items) => page(items, window),
        Frozen::Events(items) => page(items, window),
        // Custom resources' list items keep their kind and apiVersion, in the version asked for.
        Frozen::VmOperator(items) => {
            let (Kind::VmOperator(resource, version), Some(operator)) =
                (kind, cluster.vm_operator.as_ref())
            else {
                unreachable!("VM Operator's objects are frozen only for its kinds");
            };
            let selected = |stored: &Value| {
                window.selector.is_none_or(|selector| {
                    selector.matches(|key| stored["metadata"]["labels"][key].as_str())
                })
            };
            page_rendered(items, window, selected, |stored| {
                operator.served(resource, stored, version).to_string()
            })
        }
    }
}

fn encode_token(revision: i64, start: &str) -> String {
    let token = json!({"v": "meta.k8s.io/v1", "rv": revision, "start": format!("{start}\u{0}")});
    URL_SAFE_NO_PAD.encode(token.to_string())
}

fn decode_token(token: &str) -> Option<(i64, String)> {
    let bytes = URL_SAFE_NO_PAD.decode(token).ok()?;
    let value: Value = serde_json::from_slice(&bytes).ok()?;
    if value.get("v")?.as_str()? != "meta.k8s.io/v1" {
        return None;
    }
    let revision = value.get("rv")?.as_i64()?;
    let start = value
        .get("start")?
        .as_str()?
        .strip_suffix('\u{0}')?
        .to_string();
    Some((revision, start))
}

/// `GET` of a collection.
pub fn serve(
    cluster: &mut FakeCluster,
    request: &Request,
    kind: Kind,
    namespace: Option<&str>,
) -> Response {
    if request
        .param("fieldSelector")
        .is_some_and(|s| !s.is_empty())
    {
        return status(
            400,
            "BadRequest",
            "the fake API server does not support field selectors on lists",
            None,
        );
    }
    let selector = match request.param("labelSelector").filter(|s| !s.is_empty()) {
        None => None,
        Some(text) => match LabelSelector::parse(text) {
            Ok(selector) => Some(selector),
            Err(why) => {
                return status(
                    400,
                    "BadRequest",
                    &format!("unable to parse requirement: {why}"),
                    None,
                );
            }
        },
    };
    let limit = match request.param("limit").map(str::parse::<i64>) {
        None => None,
        Some(Ok(limit)) if limit > 0 => Some(limit as usize),
        Some(Ok(_)) => None,
        Some(Err(_)) => {
            return status(400, "BadRequest", "limit must be an integer", None);
        }
    };
    let resource_version = request.param("resourceVersion").unwrap_or_default();
    let kind_key = kind.snapshot_key(namespace);
    let (revision, frozen, start) = match request.param("continue").filter(|t| !t.is_empty()) {
        Some(token) => {
            if !resource_version.is_empty() && resource_version != "0" {
                return status(
                    400,
                    "BadRequest",
                    "specifying resource version is not allowed when using continue",
                    None,
                );
            }
            let Some((revision, start)) = decode_token(token) else {
                return status(
                    400,
                    "BadRequest",
                    "invalid continue token: continue key is not valid",
                    None,
                );
            };
            let snapshot = u64::try_from(revision)
                .ok()
                .and_then(|revision| cluster.list_snapshots.get(&(kind_key.clone(), revision)));
            match snapshot {
                Some(frozen) => (revision as u64, frozen.clone(), Some(start)),
                None if revision == -1 => {
                    // An inconsistent continuation at the latest state, as upstream allows.
                    (
                        cluster.revision,
                        freeze(cluster, kind, namespace),
                        Some(start),
                    )
                }
                None => {
                    let message = "The provided continue parameter is too old to display a \
                        consistent list result. You can start a new list without the continue \
                        parameter, or use the continue token in this response to retrieve the \
                        remainder of the results. Continuing with the provided token results in \
                        an inconsistent list - objects that were created, modified, or deleted \
                        between the time the first chunk was returned and now may show up in \
                        the list.";
                    let mut response = status(410, "Expired", message, None);
                    let body = json!({
                        "kind": "Status",
                        "apiVersion": "v1",
                        "metadata": {"continue": encode_token(-1, &start)},
                        "status": "Failure",
                        "message": message,
                        "reason": "Expired",
                        "code": 410,
                    });
                    *response.body_mut() = body.to_string().into();
                    return response;
                }
            }
        }
        None => {
            let frozen = freeze(cluster, kind, namespace);
            if limit.is_some() {
                cluster
                    .list_snapshots
                    .insert((kind_key.clone(), cluster.revision), frozen.clone());
                // Like etcd compaction, old snapshots go; keep enough for concurrent lists.
                while cluster.list_snapshots.len() > MAX_SNAPSHOTS {
                    let oldest = cluster
                        .list_snapshots
                        .keys()
                        .min_by_key(|(_, revision)| *revision)
                        .cloned()
                        .expect("not empty");
                    cluster.list_snapshots.remove(&oldest);
                }
            }
            (cluster.revision, frozen, None)
        }
    };
    let window = Window {
        start: start.as_deref(),
        limit,
        selector: selector.as_ref(),
    };
    let (items, last, remaining) = page_of(cluster, kind, &frozen, window);
    let mut metadata = json!({"resourceVersion": revision.to_string()});
    if let Some(last) = last {
        metadata["continue"] = json!(encode_token(revision as i64, &last));
        // The server cannot count what a selector would keep of the rest.
        if selector.is_none() {
            metadata["remainingItemCount"] = json!(remaining);
        }
    }
    let (api_version, list_kind) = kind.list_kind();
    let body = format!(
        r#"{{"kind":"{list_kind}","apiVersion":"{api_version}","metadata":{metadata},"items":[{}]}}"#,
        items.join(",")
    );
    (StatusCode::OK, [("content-type", "application/json")], body).into_response()
}
