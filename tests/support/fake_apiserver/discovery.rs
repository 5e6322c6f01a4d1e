//! Discovery as kube-apiserver 1.32 answers it (the unaggregated documents, `application/json`):
//! `/api` (APIVersions), `/api/v1`, `/apis` (APIGroupList), `/apis/<group>` (APIGroup) and
//! `/apis/<group>/<version>` (APIResourceList), for the groups and resources the fake serves.
//!
//! Groups are listed in the real server's order (by the aggregator's group priority: the
//! built-in groups, then custom resources' groups at 1000, then metrics-server's at 100). Only
//! what the fake serves is listed: a real server lists every built-in resource. The entries
//! carry what the real server writes for them: names, scope, kind, verbs, short names,
//! categories and the storage version hash. A group or version nobody serves is the last
//! handler's `404 page not found`; metrics-server's group is listed while its APIService is
//! registered, and its version answers as its lists do (404 absent, 503 unavailable).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::metrics::MetricsApi;
use super::vm_operator::{self, page_not_found};
use super::{FakeCluster, Request, plain_text};

/// One resource in a group version's APIResourceList.
struct Served {
    name: &'static str,
    singular: &'static str,
    namespaced: bool,
    kind: &'static str,
    verbs: &'static [&'static str],
    short_names: &'static [&'static str],
    categories: &'static [&'static str],
    /// Empty for subresources and aggregated APIs.
    storage_version_hash: &'static str,
    /// For a subresource of another group's kind (`pods/eviction`: `policy`, `v1`).
    group_version: Option<(&'static str, &'static str)>,
}

const READ_WRITE: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

const fn served(
    name: &'static str,
    singular: &'static str,
    namespaced: bool,
    kind: &'static str,
    verbs: &'static [&'static str],
) -> Served {
    Served {
        name,
        singular,
        namespaced,
        kind,
        verbs,
        short_names: &[],
        categories: &[],
        storage_version_hash: "",
        group_version: None,
    }
}

/// A built-in group version the fake serves, and its resources.
struct GroupVersion {
    group: &'static str,
    version: &'static str,
    resources: Vec<Served>,
}

/// The core group's `v1`.
fn core() -> Vec<Served> {
    vec![
        Served {
            short_names: &["ns"],
            storage_version_hash: "Q3oi5N2YM8M=",
            ..served(
                "namespaces",
                "namespace",
                false,
                "Namespace",
                &[
                    "create", "delete", "get", "list", "patch", "update", "watch",
                ],
            )
        },
        Served {
            short_names: &["no"],
            storage_version_hash: "XwShjMxG9Fs=",
            ..served("nodes", "node", false, "Node", READ_WRITE)
        },
        Served {
            short_names: &["po"],
            categories: &["all"],
            storage_version_hash: "xPOwRZ+Yhw8=",
            ..served("pods", "pod", true, "Pod", READ_WRITE)
        },
        Served {
            group_version: Some(("policy", "v1")),
            ..served("pods/eviction", "", true, "Eviction", &["create"])
        },
    ]
}

/// The built-in groups the fake serves, in the order `/apis` lists them.
fn built_in() -> Vec<GroupVersion> {
    vec![
        GroupVersion {
            group: "events.k8s.io",
            version: "v1",
            resources: vec![Served {
                short_names: &["ev"],
                storage_version_hash: "r2yiGXH7wu8=",
                ..served("events", "event", true, "Event", READ_WRITE)
            }],
        },
        GroupVersion {
            group: "authorization.k8s.io",
            version: "v1",
            resources: vec![served(
                "selfsubjectaccessreviews",
                "selfsubjectaccessreview",
                false,
                "SelfSubjectAccessReview",
                &["create"],
            )],
        },
        GroupVersion {
            group: "policy",
            version: "v1",
            resources: vec![
                Served {
                    short_names: &["pdb"],
                    storage_version_hash: "EVWiDmWqyJw=",
                    ..served(
                        "poddisruptionbudgets",
                        "poddisruptionbudget",
                        true,
                        "PodDisruptionBudget",
                        READ_WRITE,
                    )
                },
                served(
                    "poddisruptionbudgets/status",
                    "",
                    true,
                    "PodDisruptionBudget",
                    &["get", "patch", "update"],
                ),
            ],
        },
        GroupVersion {
            group: "scheduling.k8s.io",
            version: "v1",
            resources: vec![Served {
                short_names: &["pc"],
                storage_version_hash: "1QwjyaZjj3Y=",
                ..served(
                    "priorityclasses",
                    "priorityclass",
                    false,
                    "PriorityClass",
                    READ_WRITE,
                )
            }],
        },
        GroupVersion {
            group: "coordination.k8s.io",
            version: "v1",
            resources: vec![Served {
                storage_version_hash: "gqkMMb/YqFM=",
                ..served("leases", "lease", true, "Lease", READ_WRITE)
            }],
        },
    ]
}

/// metrics-server's group version.
fn metrics() -> GroupVersion {
    GroupVersion {
        group: "metrics.k8s.io",
        version: "v1beta1",
        resources: vec![
            served("nodes", "", false, "NodeMetrics", &["get", "list"]),
            served("pods", "", true, "PodMetrics", &["get", "list"]),
        ],
    }
}

impl Served {
    fn to_json(&self) -> Value {
        let mut entry = json!({
            "name": self.name,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": self.verbs,
        });
        if let Some((group, version)) = self.group_version {
            entry["group"] = json!(group);
            entry["version"] = json!(version);
        }
        if !self.short_names.is_empty() {
            entry["shortNames"] = json!(self.short_names);
        }
        if !self.categories.is_empty() {
            entry["categories"] = json!(self.categories);
        }
        if !self.storage_version_hash.is_empty() {
            entry["storageVersionHash"] = json!(self.storage_version_hash);
        }
        entry
    }
}

impl GroupVersion {
    fn api_version(&self) -> String {
        format!("{}/{}", self.group, self.version)
    }

    fn api_group(&self) -> Value {
        let version = json!({"groupVersion": self.api_version(), "version": self.version});
        json!({"name": self.group, "versions": [version], "preferredVersion": version})
    }

    fn resource_list(&self) -> Value {
        resource_list(&self.api_version(), &self.resources)
    }
}

fn resource_list(group_version: &str, resources: &[Served]) -> Value {
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources.iter().map(Served::to_json).collect::<Vec<_>>(),
    })
}

fn document(body: Value) -> Response {
    (
        StatusCode::OK,
        [("content-type", "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// `GET /api`: the core group's versions and where clients reach the server (the address the
/// request came to).
pub fn core_versions(request: &Request) -> Response {
    let address = request
        .headers
        .get(axum::http::header::HOST)
        .and_then(|host| host.to_str().ok())
        .unwrap_or("127.0.0.1:6443");
    document(json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
    }))
}

/// `GET /api/v1`.
pub fn core_resources() -> Response {
    document(resource_list("v1", &core()))
}

/// `GET /apis`.
pub fn groups(cluster: &FakeCluster) -> Response {
    let mut groups: Vec<Value> = built_in().iter().map(GroupVersion::api_group).collect();
    groups.extend(vm_operator::api_group(cluster));
    if cluster.metrics_api != MetricsApi::Absent {
        groups.push(metrics().api_group());
    }
    document(json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}))
}

/// `GET /apis/<group>` and `GET /apis/<group>/<version>` of the built-in groups and
/// metrics-server's (VM Operator's group is answered by its own module).
pub fn group(cluster: &FakeCluster, group: &str, version: Option<&str>) -> Response {
    let metrics_group = metrics();
    if group == metrics_group.group {
        match cluster.metrics_api {
            MetricsApi::Absent => return page_not_found(),
            // The group is the aggregator's own document; the version is proxied.
            MetricsApi::Unavailable if version.is_some() => {
                return plain_text(503, "service unavailable");
            }
            _ => {}
        }
    }
    let all = built_in();
    let Some(found) = all
        .iter()
        .chain(std::iter::once(&metrics_group))
        .find(|served| served.group == group)
    else {
        return page_not_found();
    };
    match version {
        None => {
            let mut body = found.api_group();
            body["kind"] = json!("APIGroup");
            body["apiVersion"] = json!("v1");
            document(body)
        }
        Some(version) if version == found.version => document(found.resource_list()),
        Some(_) => page_not_found(),
    }
}
