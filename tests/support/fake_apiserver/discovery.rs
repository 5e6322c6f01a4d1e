//! Discovery as kube-apiserver 1.32 answers it: `/api` (APIVersions), `/api/v1`, `/apis`
//! (APIGroupList), `/apis/<group>` (APIGroup) and `/apis/<group>/<version>`
//! (APIResourceList); and the aggregated form of `/api` and `/apis` (`apidiscovery.k8s.io/v2`
//! APIGroupDiscoveryList) when the `Accept` header asks for it, as kube's
//! `Discovery::run_aggregated` does.
//!
//! Groups are listed in the real server's order (by the aggregator's group priority: the
//! built-in groups, then custom resources' groups at 1000, then metrics-server's at 100); a
//! group's versions highest first, the first one preferred (for a custom resource, the CRD
//! discovery controller's Kubernetes version order). Only what the fake serves is listed, where
//! a real server lists every built-in resource; the entries carry what the real server writes
//! for them: names, scope, kind, verbs, short names, categories and the storage version hash.
//! A group or version nobody serves is the last handler's `404 page not found`.
//! metrics-server's group is in the unaggregated list while its APIService is registered, and
//! its version document answers as its lists do (404 absent, 503 unavailable); the aggregated
//! list holds it only while it is served (the aggregator has no document of an unavailable one).

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::metrics::MetricsApi;
use super::vm_operator::{self, Resource, page_not_found};
use super::{FakeCluster, Request, plain_text};

/// The media type of aggregated discovery, as kube asks for it and the server answers.
const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// One resource of a group version.
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

/// The verbs the CRD handler serves, in the order its discovery lists them.
const CUSTOM_RESOURCE: &[&str] = &[
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "create",
    "update",
    "watch",
];

const STATUS: &[&str] = &["get", "patch", "update"];

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

/// A group the fake serves, with the same resources in each version.
struct Group {
    /// `""` for the core group.
    name: &'static str,
    /// Highest (preferred) first.
    versions: Vec<&'static str>,
    resources: Vec<Served>,
    /// Whether aggregated discovery names the group and version in a `responseKind`: the CRD
    /// discovery controller does, the built-in groups' leave them empty.
    custom: bool,
}

/// The core group's `v1`.
fn core() -> Group {
    Group {
        name: "",
        versions: vec!["v1"],
        resources: vec![
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
        ],
        custom: false,
    }
}

fn built_in(name: &'static str, resources: Vec<Served>) -> Group {
    Group {
        name,
        versions: vec!["v1"],
        resources,
        custom: false,
    }
}

/// Every group the fake serves but the core one, in the order `/apis` lists them.
fn groups(cluster: &FakeCluster) -> Vec<Group> {
    let mut groups = vec![
        built_in(
            "events.k8s.io",
            vec![Served {
                short_names: &["ev"],
                storage_version_hash: "r2yiGXH7wu8=",
                ..served("events", "event", true, "Event", READ_WRITE)
            }],
        ),
        built_in(
            "authorization.k8s.io",
            vec![served(
                "selfsubjectaccessreviews",
                "selfsubjectaccessreview",
                false,
                "SelfSubjectAccessReview",
                &["create"],
            )],
        ),
        built_in(
            "policy",
            vec![
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
                    STATUS,
                ),
            ],
        ),
        built_in(
            "scheduling.k8s.io",
            vec![Served {
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
        ),
        built_in(
            "coordination.k8s.io",
            vec![Served {
                storage_version_hash: "gqkMMb/YqFM=",
                ..served("leases", "lease", true, "Lease", READ_WRITE)
            }],
        ),
    ];
    groups.extend(vm_operator_group(cluster));
    if cluster.metrics_api != MetricsApi::Absent {
        groups.push(metrics());
    }
    groups
}

/// VM Operator's group on a Supervisor: the release's served versions.
fn vm_operator_group(cluster: &FakeCluster) -> Option<Group> {
    let release = cluster.vm_operator.as_ref()?.release;
    let storage = release.storage_version();
    let mut resources = Vec::new();
    for resource in Resource::ALL {
        resources.push(Served {
            short_names: resource.short_names(),
            storage_version_hash: resource.storage_version_hash(storage),
            ..served(
                resource.plural(),
                resource.singular(),
                true,
                resource.kind(),
                CUSTOM_RESOURCE,
            )
        });
        resources.push(served(
            resource.status_subresource(),
            "",
            true,
            resource.kind(),
            STATUS,
        ));
    }
    Some(Group {
        name: vm_operator::GROUP,
        versions: release
            .served_versions()
            .into_iter()
            .rev()
            .map(|version| version.name())
            .collect(),
        resources,
        custom: true,
    })
}

/// metrics-server's group.
fn metrics() -> Group {
    Group {
        name: "metrics.k8s.io",
        versions: vec!["v1beta1"],
        resources: vec![
            served("nodes", "", false, "NodeMetrics", &["get", "list"]),
            served("pods", "", true, "PodMetrics", &["get", "list"]),
        ],
        custom: false,
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

impl Group {
    fn group_version(&self, version: &str) -> String {
        if self.name.is_empty() {
            version.to_string()
        } else {
            format!("{}/{version}", self.name)
        }
    }

    /// The group as `/apis` lists it (and `/apis/<group>` answers it, with a type).
    fn api_group(&self) -> Value {
        let versions: Vec<Value> = self
            .versions
            .iter()
            .map(|version| json!({"groupVersion": self.group_version(version), "version": version}))
            .collect();
        json!({"name": self.name, "versions": versions, "preferredVersion": versions[0]})
    }

    fn resource_list(&self, version: &str) -> Value {
        json!({
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": self.group_version(version),
            "resources": self.resources.iter().map(Served::to_json).collect::<Vec<_>>(),
        })
    }

    /// The group as aggregated discovery lists it: subresources inside their resource.
    fn aggregated(&self) -> Value {
        let versions: Vec<Value> = self
            .versions
            .iter()
            .map(|version| {
                json!({
                    "version": version,
                    "resources": self.aggregated_resources(version),
                    "freshness": "Current",
                })
            })
            .collect();
        let mut metadata = json!({"creationTimestamp": null});
        if !self.name.is_empty() {
            metadata["name"] = json!(self.name);
        }
        json!({"metadata": metadata, "versions": versions})
    }

    fn aggregated_resources(&self, version: &str) -> Vec<Value> {
        let response_kind = |served: &Served| {
            let (group, version) = match served.group_version {
                Some(other) => other,
                None if self.custom => (self.name, version),
                None => ("", ""),
            };
            json!({"group": group, "version": version, "kind": served.kind})
        };
        let mut resources: Vec<Value> = Vec::new();
        for served in &self.resources {
            if let Some((parent, subresource)) = served.name.split_once('/') {
                let entry = resources
                    .iter_mut()
                    .find(|entry| entry["resource"] == parent)
                    .expect("a subresource follows its resource");
                let subresource = json!({
                    "subresource": subresource,
                    "responseKind": response_kind(served),
                    "verbs": served.verbs,
                });
                // Go omits an empty list of subresources.
                match entry["subresources"].as_array_mut() {
                    Some(subresources) => subresources.push(subresource),
                    None => entry["subresources"] = json!([subresource]),
                }
                continue;
            }
            let mut entry = json!({
                "resource": served.name,
                "responseKind": response_kind(served),
                "scope": if served.namespaced { "Namespaced" } else { "Cluster" },
                "singularResource": served.singular,
                "verbs": served.verbs,
            });
            if !served.short_names.is_empty() {
                entry["shortNames"] = json!(served.short_names);
            }
            if !served.categories.is_empty() {
                entry["categories"] = json!(served.categories);
            }
            resources.push(entry);
        }
        resources
    }
}

fn document(body: Value) -> Response {
    (
        StatusCode::OK,
        [("content-type", "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// Whether the client accepts aggregated discovery.
fn wants_aggregated(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|media_type| media_type.trim().replace(' ', "") == AGGREGATED)
}

fn aggregated(groups: &[Group]) -> Response {
    let body = json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": groups.iter().map(Group::aggregated).collect::<Vec<_>>(),
    });
    (
        StatusCode::OK,
        [("content-type", AGGREGATED), ("vary", "Accept")],
        body.to_string(),
    )
        .into_response()
}

/// `GET /api`: the core group's versions and where clients reach the server (the address the
/// request came to); or the core group aggregated.
pub fn core_versions(request: &Request) -> Response {
    if wants_aggregated(&request.headers) {
        return aggregated(&[core()]);
    }
    let address = request
        .headers
        .get(header::HOST)
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
    document(core().resource_list("v1"))
}

/// `GET /apis`.
pub fn api_groups(cluster: &FakeCluster, request: &Request) -> Response {
    let mut groups = groups(cluster);
    if wants_aggregated(&request.headers) {
        groups.retain(|group| {
            group.name != "metrics.k8s.io" || cluster.metrics_api == MetricsApi::Serving
        });
        return aggregated(&groups);
    }
    document(json!({
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": groups.iter().map(Group::api_group).collect::<Vec<_>>(),
    }))
}

/// `GET /apis/<group>` and `GET /apis/<group>/<version>`.
pub fn group(cluster: &FakeCluster, name: &str, version: Option<&str>) -> Response {
    // The aggregator answers for the group; the version is proxied to metrics-server.
    if name == "metrics.k8s.io"
        && cluster.metrics_api == MetricsApi::Unavailable
        && version.is_some()
    {
        return plain_text(503, "service unavailable");
    }
    let all = groups(cluster);
    let Some(group) = all.iter().find(|group| group.name == name) else {
        return page_not_found();
    };
    match version {
        None => {
            let mut body = group.api_group();
            body["kind"] = json!("APIGroup");
            body["apiVersion"] = json!("v1");
            document(body)
        }
        Some(version) if group.versions.contains(&version) => {
            document(group.resource_list(version))
        }
        Some(_) => page_not_found(),
    }
}
