//! Loading: snapshot-style files (the `plan --snapshot` format) as typed Kubernetes objects and
//! the vSphere inventory, and putting objects into the fake as if they had been created.

use std::path::Path;
use std::sync::Arc;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use serde_json::Value;
use vsphere_descheduler::inventory::{self, Inventory};

use super::FakeCluster;
use super::apply::LabelOwner;

/// Kubernetes objects for the fake, and the inventory for the simulator.
#[derive(Clone, Debug, Default)]
pub struct KubeObjects {
    pub nodes: Vec<Node>,
    pub pods: Vec<Pod>,
    pub pdbs: Vec<PodDisruptionBudget>,
    pub namespaces: Vec<Namespace>,
    pub priority_classes: Vec<PriorityClass>,
    /// Leases, such as the run lock with the eviction history a snapshot recorded.
    pub leases: Vec<Lease>,
    /// ConfigMaps, such as the eviction history's.
    pub config_maps: Vec<k8s_openapi::api::core::v1::ConfigMap>,
    pub workloads: Vec<Workload>,
    /// metrics.k8s.io NodeMetrics and PodMetrics, as written in the file.
    pub node_metrics: Vec<Value>,
    pub pod_metrics: Vec<Value>,
    pub inventory: Option<Inventory>,
}

/// A pod controller (apps/v1 Deployment, ReplicaSet, StatefulSet, v1 ReplicationController),
/// held only for the disruption controller's `expectedPods`: not served, never changed.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    pub kind: String,
    /// Name, namespace, uid and (for a Deployment's ReplicaSet) the controller reference.
    pub metadata: ObjectMeta,
    /// `spec.replicas`, 1 when unset (as the API server defaults it).
    pub replicas: i32,
}

impl Workload {
    /// `kind` `namespace/name` with `replicas`, owned by the Deployment `owner` when given.
    pub fn new(
        kind: &str,
        namespace: &str,
        name: &str,
        uid: &str,
        replicas: i32,
        owner: Option<(&str, &str)>,
    ) -> Workload {
        let owner_references = owner.map(|(name, uid)| {
            vec![OwnerReference {
                api_version: "apps/v1".to_string(),
                kind: "Deployment".to_string(),
                name: name.to_string(),
                uid: uid.to_string(),
                controller: Some(true),
                block_owner_deletion: None,
            }]
        });
        Workload {
            kind: kind.to_string(),
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                namespace: Some(namespace.to_string()),
                uid: Some(uid.to_string()),
                owner_references,
                ..ObjectMeta::default()
            },
            replicas,
        }
    }

    fn from_value(kind: &str, value: Value, path: &Path) -> Workload {
        let replicas = value
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(1) as i32;
        let metadata = value.get("metadata").cloned().unwrap_or(Value::Null);
        Workload {
            kind: kind.to_string(),
            metadata: serde_json::from_value(metadata)
                .unwrap_or_else(|error| panic!("{}: {kind}: {error}", path.display())),
            replicas,
        }
    }
}

/// Reads a snapshot file: YAML or JSON, one or more documents, objects or `List`s of them
/// (nodes, pods, PDBs, namespaces, PriorityClasses, Leases, the pod controllers PDBs count
/// replicas of, and
/// metrics.k8s.io NodeMetrics and PodMetrics), and a
/// `VSphereInventory`. Other kinds are ignored.
pub fn read_objects(path: &Path) -> KubeObjects {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|error| panic!("read {}: {error}", path.display()));
    let documents: Vec<Value> = if text.trim_start().starts_with(['{', '[']) {
        serde_json::Deserializer::from_str(&text)
            .into_iter::<Value>()
            .collect::<Result<_, _>>()
            .unwrap_or_else(|error| panic!("parse {}: {error}", path.display()))
    } else {
        serde_saphyr::from_multiple(&text)
            .unwrap_or_else(|error| panic!("parse {}: {error}", path.display()))
    };
    let mut objects = KubeObjects::default();
    for document in documents {
        add(&mut objects, document, path);
    }
    objects
}

fn add(objects: &mut KubeObjects, mut value: Value, path: &Path) {
    let text = |key: &str| {
        value
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    fn parse<T: serde::de::DeserializeOwned>(value: Value, path: &Path, kind: &str) -> T {
        serde_json::from_value(value)
            .unwrap_or_else(|error| panic!("{}: {kind}: {error}", path.display()))
    }
    match (api_version.as_str(), kind.as_str()) {
        (_, list) if list == "List" || list.ends_with("List") => {
            let items = value
                .get_mut("items")
                .map(Value::take)
                .and_then(|items| match items {
                    Value::Array(items) => Some(items),
                    _ => None,
                })
                .unwrap_or_default();
            for item in items {
                add(objects, item, path);
            }
        }
        ("v1", "Node") => objects.nodes.push(parse(value, path, &kind)),
        ("v1", "Pod") => objects.pods.push(parse(value, path, &kind)),
        ("policy/v1", "PodDisruptionBudget") => objects.pdbs.push(parse(value, path, &kind)),
        ("v1", "Namespace") => objects.namespaces.push(parse(value, path, &kind)),
        ("scheduling.k8s.io/v1", "PriorityClass") => {
            objects.priority_classes.push(parse(value, path, &kind))
        }
        ("coordination.k8s.io/v1", "Lease") => objects.leases.push(parse(value, path, &kind)),
        ("v1", "ConfigMap") => objects.config_maps.push(parse(value, path, &kind)),
        ("apps/v1", "Deployment" | "ReplicaSet" | "StatefulSet")
        | ("v1", "ReplicationController") => objects
            .workloads
            .push(Workload::from_value(&kind, value, path)),
        (super::metrics::API_VERSION, "NodeMetrics") => objects.node_metrics.push(value),
        (super::metrics::API_VERSION, "PodMetrics") => objects.pod_metrics.push(value),
        (inventory::API_VERSION, inventory::KIND) => {
            if let Some(fields) = value.as_object_mut() {
                fields.remove("apiVersion");
                fields.remove("kind");
                fields.remove("metadata");
            }
            let part: Inventory = serde_json::from_value(value)
                .unwrap_or_else(|error| panic!("{}: inventory: {error}", path.display()));
            objects
                .inventory
                .get_or_insert_with(Inventory::default)
                .clusters
                .extend(part.clusters);
        }
        _ => {}
    }
}

impl FakeCluster {
    /// Adds objects as if they had been created now (uids, resource versions, creation times
    /// filled in where missing). Namespaces of pods and PDBs are created when not given.
    pub fn load(&mut self, objects: KubeObjects) {
        for namespace in objects.namespaces {
            let name = namespace
                .metadata
                .name
                .clone()
                .expect("namespaces have names");
            let namespace = self.stamp(namespace, |n| &mut n.metadata);
            self.namespaces.insert(name, Arc::new(namespace));
        }
        for class in objects.priority_classes {
            let name = class
                .metadata
                .name
                .clone()
                .expect("PriorityClasses have names");
            let class = self.stamp(class, |c| &mut c.metadata);
            self.priority_classes.insert(name, Arc::new(class));
        }
        for lease in objects.leases {
            let key = self.namespaced_key(&lease.metadata);
            let mut lease = self.stamp(lease, |l| &mut l.metadata);
            lease.metadata.namespace = Some(key.0.clone());
            self.leases.insert(key, Arc::new(lease));
        }
        for config_map in objects.config_maps {
            let key = self.namespaced_key(&config_map.metadata);
            let mut config_map = self.stamp(config_map, |c| &mut c.metadata);
            config_map.metadata.namespace = Some(key.0.clone());
            self.config_maps.insert(key, Arc::new(config_map));
        }
        for node in objects.nodes {
            let name = node.metadata.name.clone().expect("nodes have names");
            let owners = LabelOwner::from_managed_fields(&node);
            let mut node = self.stamp(node, |n| &mut n.metadata);
            node.metadata.managed_fields = None;
            self.label_owners.insert(name.clone(), owners);
            self.nodes.insert(name.clone(), Arc::new(node));
            self.render_label_owners(&name);
        }
        for workload in objects.workloads {
            let (namespace, name) = self.namespaced_key(&workload.metadata);
            let workload = self.stamp(workload, |w| &mut w.metadata);
            self.workloads
                .insert((namespace, workload.kind.clone(), name), workload);
        }
        for pod in objects.pods {
            let key = self.namespaced_key(&pod.metadata);
            let pod = self.stamp(pod, |p| &mut p.metadata);
            self.pods.insert(key, Arc::new(pod));
        }
        for metrics in objects.node_metrics {
            let name = metrics["metadata"]["name"]
                .as_str()
                .expect("NodeMetrics have names");
            self.node_metrics.insert(name.to_string(), metrics);
            self.metrics_api = super::MetricsApi::Serving;
        }
        for metrics in objects.pod_metrics {
            let key = (
                metrics["metadata"]["namespace"]
                    .as_str()
                    .expect("PodMetrics have namespaces"),
                metrics["metadata"]["name"]
                    .as_str()
                    .expect("PodMetrics have names"),
            );
            self.pod_metrics
                .insert((key.0.to_string(), key.1.to_string()), metrics.clone());
            self.metrics_api = super::MetricsApi::Serving;
        }
        let mut unprocessed = Vec::new();
        for pdb in objects.pdbs {
            let key = self.namespaced_key(&pdb.metadata);
            let mut pdb = self.stamp(pdb, |p| &mut p.metadata);
            let generation = *pdb.metadata.generation.get_or_insert(1);
            match &mut pdb.status {
                // A recorded status counts as processed by the controller.
                Some(status) => {
                    status.observed_generation.get_or_insert(generation);
                }
                None => unprocessed.push(key.clone()),
            }
            self.pdbs.insert(key, Arc::new(pdb));
        }
        for key in unprocessed {
            self.reconcile_pdb(&key);
        }
    }

    fn namespaced_key(&mut self, metadata: &ObjectMeta) -> (String, String) {
        let namespace = metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".to_string());
        let name = metadata.name.clone().expect("objects have names");
        if !self.namespaces.contains_key(&namespace) {
            let created = self.stamp(
                Namespace {
                    metadata: ObjectMeta {
                        name: Some(namespace.clone()),
                        ..ObjectMeta::default()
                    },
                    ..Namespace::default()
                },
                |n| &mut n.metadata,
            );
            self.namespaces.insert(namespace.clone(), Arc::new(created));
        }
        (namespace, name)
    }

    /// Fills in uid, creation time and a new resource version.
    pub(super) fn stamp<T>(
        &mut self,
        mut object: T,
        metadata: impl Fn(&mut T) -> &mut ObjectMeta,
    ) -> T {
        let revision = self.bump();
        let uid = self.new_uid();
        let meta = metadata(&mut object);
        if meta.uid.as_deref().is_none_or(str::is_empty) {
            meta.uid = Some(uid);
        }
        if meta.creation_timestamp.is_none() {
            meta.creation_timestamp = Some(Time(super::now()));
        }
        meta.resource_version = Some(revision);
        object
    }
}
