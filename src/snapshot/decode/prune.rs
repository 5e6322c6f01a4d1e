//! What `snapshot -o` records of each Kubernetes object: exactly the fields the conversion to
//! the planner's types reads (`convert/`), and nothing else, so a snapshot can be attached to
//! a bug report without containers' environment, commands, `last-applied-configuration` or any
//! other field the planner never looks at.
//!
//! The tables below are the one list of kept fields. A field the conversion starts reading must
//! be added here too: the tests at the bottom convert every fixture object pruned and unpruned,
//! and the planted-secrets e2e fixture uses every field read today, so they fail as soon as a
//! fixture carries a newly read field the table lacks.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use serde::Serialize;
use serde_json::Value;

use super::annotations::{
    CONFIG_SOURCE_ANNOTATION, EVICT_ANNOTATION, MIRROR_ANNOTATION, PREFER_NO_EVICTION_ANNOTATION,
};
use super::history;
use crate::identity::FIELD_MANAGER;

/// A Kubernetes object reduced to the fields planning reads (`apiVersion` and `kind` included,
/// so the object still reads as itself). Only this module makes one.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Pruned(Value);

/// A Node, pruned.
pub fn node(node: core::Node) -> Pruned {
    pruned(&NODE, node)
}

/// A Pod, pruned.
pub fn pod(pod: core::Pod) -> Pruned {
    pruned(&POD, pod)
}

/// A PodDisruptionBudget, pruned.
pub fn pdb(pdb: PodDisruptionBudget) -> Pruned {
    pruned(&PDB, pdb)
}

/// A Namespace, pruned.
pub fn namespace(namespace: core::Namespace) -> Pruned {
    pruned(&NAMESPACE, namespace)
}

/// A PriorityClass, pruned.
pub fn priority_class(class: PriorityClass) -> Pruned {
    pruned(&PRIORITY_CLASS, class)
}

/// A Lease, pruned to its name and the eviction history (the run lock's, see `history`).
pub fn lease(lease: Lease) -> Pruned {
    pruned(&LEASE, lease)
}

/// The eviction history's ConfigMap, pruned to its name, its marking annotation and its data.
pub fn config_map(config_map: core::ConfigMap) -> Pruned {
    pruned(&CONFIG_MAP, config_map)
}

/// A metrics.k8s.io NodeMetrics (as JSON, with its apiVersion and kind), pruned.
pub fn node_metrics(metrics: Value) -> Pruned {
    pruned(&NODE_METRICS, metrics)
}

/// A metrics.k8s.io PodMetrics (as JSON, with its apiVersion and kind), pruned.
pub fn pod_metrics(metrics: Value) -> Pruned {
    pruned(&POD_METRICS, metrics)
}

/// What is kept of one kind of object.
struct Kept {
    /// The kept paths (`*_PATHS`) as a tree, built once.
    tree: LazyLock<Tree>,
    /// Keys of `metadata.annotations` that are kept.
    annotations: &'static [&'static str],
    /// Field managers whose `metadata.managedFields` entries are kept.
    managers: &'static [&'static str],
}

// Kept fields, as paths: `.` steps into an object, `[]` marks a list whose every item is pruned
// alike, and a trailing `{}` keeps a field as an empty object (only its presence is read). A
// kept path keeps everything below it.

const NODE_PATHS: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata.name",
    // Label writes name the node's uid, so an apply cannot create a node.
    "metadata.uid",
    "metadata.labels",
    "spec.providerID",
    "spec.unschedulable",
    "spec.taints[].key",
    "spec.taints[].value",
    "spec.taints[].effect",
    "status.conditions[].type",
    "status.conditions[].status",
    "status.allocatable",
    // Read when allocatable is not reported.
    "status.capacity",
    "status.nodeInfo.systemUUID",
    // An ESXi host node (Supervisor clusters) may be known to vCenter by its InternalIP.
    "status.addresses[].type",
    "status.addresses[].address",
];

static NODE: Kept = Kept {
    tree: LazyLock::new(|| Tree::of(NODE_PATHS)),
    annotations: &[],
    // Which label keys this tool applied: ours to remove when they go stale, nobody else's.
    managers: &[FIELD_MANAGER],
};

const POD_PATHS: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "metadata.labels",
    "metadata.creationTimestamp",
    "metadata.deletionTimestamp",
    "metadata.ownerReferences[].kind",
    "metadata.ownerReferences[].name",
    "metadata.ownerReferences[].uid",
    "metadata.ownerReferences[].controller",
    "spec.nodeName",
    "spec.nodeSelector",
    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
    // RemovePodsViolatingNodeAffinity with nodeAffinityType preferred… scores nodes by it.
    "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution",
    "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution",
    // includeSoftConstraints acts on them; the scheduler model scores by both.
    "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution",
    "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution",
    "spec.tolerations[].key",
    "spec.tolerations[].operator",
    "spec.tolerations[].value",
    "spec.tolerations[].effect",
    "spec.topologySpreadConstraints",
    "spec.priority",
    "spec.priorityClassName",
    "spec.overhead",
    // Names are not read, but every container and volume has one: kept so readers of
    // the file still see valid lists.
    "spec.containers[].name",
    "spec.containers[].image",
    "spec.containers[].resources.requests",
    "spec.containers[].resources.limits",
    "spec.initContainers[].name",
    // `Always` makes it a native sidecar, whose request adds to the containers'.
    "spec.initContainers[].restartPolicy",
    "spec.initContainers[].resources.requests",
    "spec.initContainers[].resources.limits",
    "spec.volumes[].name",
    "spec.volumes[].emptyDir{}",
    "spec.volumes[].hostPath{}",
    "spec.volumes[].persistentVolumeClaim.claimName",
    "spec.resourceClaims[].name",
    "status.phase",
    "status.qosClass",
    "status.startTime",
    // Whether it is Ready: the Eviction API lets some unready pods go without the budget;
    // reasons and transition times are what PodLifeTime's `conditions` filters read.
    "status.conditions[].type",
    "status.conditions[].status",
    "status.conditions[].reason",
    "status.conditions[].lastTransitionTime",
    // What PodLifeTime's states, RemoveFailedPods' reasons and exit codes and
    // RemovePodsHavingTooManyRestarts read; names kept so the lists stay valid.
    "status.reason",
    "status.containerStatuses[].name",
    "status.containerStatuses[].restartCount",
    "status.containerStatuses[].state.waiting.reason",
    "status.containerStatuses[].state.terminated.reason",
    "status.containerStatuses[].state.terminated.exitCode",
    "status.initContainerStatuses[].name",
    "status.initContainerStatuses[].restartCount",
    "status.initContainerStatuses[].state.waiting.reason",
    "status.initContainerStatuses[].state.terminated.reason",
    "status.initContainerStatuses[].state.terminated.exitCode",
    // Ephemeral (debug) containers never restart: only their states are read.
    "status.ephemeralContainerStatuses[].name",
    "status.ephemeralContainerStatuses[].state.waiting.reason",
    "status.ephemeralContainerStatuses[].state.terminated.reason",
    "status.ephemeralContainerStatuses[].state.terminated.exitCode",
];

static POD: Kept = Kept {
    tree: LazyLock::new(|| Tree::of(POD_PATHS)),
    annotations: &[
        MIRROR_ANNOTATION,
        CONFIG_SOURCE_ANNOTATION,
        EVICT_ANNOTATION,
        PREFER_NO_EVICTION_ANNOTATION,
    ],
    managers: &[],
};

const PDB_PATHS: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata.name",
    "metadata.namespace",
    // Ahead of status.observedGeneration: the API server refuses evictions until it catches up.
    "metadata.generation",
    "spec.selector",
    "spec.unhealthyPodEvictionPolicy",
    "status.observedGeneration",
    "status.disruptionsAllowed",
    "status.currentHealthy",
    "status.desiredHealthy",
    "status.expectedPods",
    // Only its size is read (the API server refuses evictions past 2000 entries).
    "status.disruptedPods",
];

static PDB: Kept = Kept {
    tree: LazyLock::new(|| Tree::of(PDB_PATHS)),
    annotations: &[],
    managers: &[],
};

const NAMESPACE_PATHS: &[&str] = &["apiVersion", "kind", "metadata.name", "metadata.labels"];

static NAMESPACE: Kept = Kept {
    tree: LazyLock::new(|| Tree::of(NAMESPACE_PATHS)),
    annotations: &[],
    managers: &[],
};

const PRIORITY_CLASS_PATHS: &[&str] = &["apiVersion", "kind", "metadata.name", "value"];

static PRIORITY_CLASS: Kept = Kept {
    tree: LazyLock::new(|| Tree::of(PRIORITY_CLASS_PATHS)),
    annotations: &[],
    managers: &[],
};

// The run lock's holder and times are of no use offline: only the history is read.
const LEASE_PATHS: &[&str] = &["apiVersion", "kind", "metadata.name", "metadata.namespace"];

static LEASE: Kept = Kept {
    tree: LazyLock::new(|| Tree::of(LEASE_PATHS)),
    annotations: &[history::ANNOTATION],
    managers: &[],
};

// The history ConfigMap: its data is the history, its annotation the format and when its times
// count from.
const CONFIG_MAP_PATHS: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata.name",
    "metadata.namespace",
    "data",
];

static CONFIG_MAP: Kept = Kept {
    tree: LazyLock::new(|| Tree::of(CONFIG_MAP_PATHS)),
    annotations: &[history::ANNOTATION],
    managers: &[],
};

// Usage is all a utilization plugin reads: `timestamp` and `window` say when and over how long
// it was measured, which planning takes as "now".
const NODE_METRICS_PATHS: &[&str] = &["apiVersion", "kind", "metadata.name", "usage"];

static NODE_METRICS: Kept = Kept {
    tree: LazyLock::new(|| Tree::of(NODE_METRICS_PATHS)),
    annotations: &[],
    managers: &[],
};

const POD_METRICS_PATHS: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata.name",
    "metadata.namespace",
    // Names are not read: kept so readers of the file still see which container used what.
    "containers[].name",
    "containers[].usage",
];

static POD_METRICS: Kept = Kept {
    tree: LazyLock::new(|| Tree::of(POD_METRICS_PATHS)),
    annotations: &[],
    managers: &[],
};

fn pruned(kept: &Kept, object: impl Serialize) -> Pruned {
    let value = serde_json::to_value(object).expect("Kubernetes objects serialize to JSON");
    Pruned(prune(&kept.tree, kept.annotations, kept.managers, value))
}

/// The object with only the kept fields (`tree`), annotations and managers' managed-fields
/// entries left.
fn prune(tree: &Tree, annotations: &[&str], managers: &[&str], mut object: Value) -> Value {
    let metadata = object.get_mut("metadata").and_then(Value::as_object_mut);
    let (annotations_found, managed_fields) = match metadata {
        Some(metadata) => (
            metadata.remove("annotations"),
            metadata.remove("managedFields"),
        ),
        None => (None, None),
    };
    tree.prune(&mut object);
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return object;
    };
    if let Some(Value::Object(mut found)) = annotations_found {
        found.retain(|key, _| annotations.contains(&key.as_str()));
        if !found.is_empty() {
            metadata.insert("annotations".to_string(), Value::Object(found));
        }
    }
    if let Some(Value::Array(mut entries)) = managed_fields {
        entries.retain(|entry| {
            entry["manager"]
                .as_str()
                .is_some_and(|manager| managers.contains(&manager))
        });
        if !entries.is_empty() {
            metadata.insert("managedFields".to_string(), Value::Array(entries));
        }
    }
    object
}

/// Kept paths as a tree of field names.
#[derive(Debug, Default)]
struct Tree {
    /// Everything below is kept.
    whole: bool,
    fields: BTreeMap<&'static str, Tree>,
}

impl Tree {
    fn of(paths: &[&'static str]) -> Tree {
        let mut root = Tree::default();
        for path in paths {
            let (path, presence_only) = match path.strip_suffix("{}") {
                Some(path) => (path, true),
                None => (*path, false),
            };
            let mut tree = &mut root;
            for step in path.split('.') {
                // Lists are stepped through item by item whether marked or not; the mark is for
                // the reader of the table.
                let name = step.strip_suffix("[]").unwrap_or(step);
                tree = tree.fields.entry(name).or_default();
            }
            tree.whole = !presence_only;
        }
        root
    }

    fn prune(&self, value: &mut Value) {
        match value {
            Value::Object(fields) => fields.retain(|name, value| {
                let Some(kept) = self.fields.get(name.as_str()) else {
                    return false;
                };
                if !kept.whole {
                    kept.prune(value);
                }
                true
            }),
            Value::Array(items) => items.iter_mut().for_each(|item| self.prune(item)),
            // A scalar where the API has an object cannot come from the API server; the
            // conversion refuses it either way.
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use serde_json::json;

    use super::*;
    use crate::snapshot::Interner;
    use crate::snapshot::decode::convert;

    fn typed<T: serde::de::DeserializeOwned>(value: Value) -> T {
        serde_json::from_value(value).expect("a valid Kubernetes object")
    }

    #[test]
    fn a_node_keeps_identity_labels_taints_readiness_allocatable_and_our_label_ownership() {
        let node = json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": "worker-a",
                "uid": "4b1c",
                "resourceVersion": "991",
                "labels": {"kubernetes.io/hostname": "worker-a"},
                "annotations": {"node.alpha.kubernetes.io/ttl": "0", "secret-note": "planted"},
                "managedFields": [
                    {"manager": "kubelet", "operation": "Update",
                     "fieldsV1": {"f:metadata": {"f:labels": {"f:kubernetes.io/hostname": {}}}}},
                    {"manager": FIELD_MANAGER, "operation": "Apply", "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:metadata": {"f:labels": {"f:vsphere-descheduler.io/host": {}}}}}
                ]
            },
            "spec": {
                "providerID": "vsphere://4211b599",
                "podCIDR": "10.0.0.0/24",
                "unschedulable": true,
                "taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule",
                            "timeAdded": "2026-11-01T00:00:00Z"}]
            },
            "status": {
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                "message": "kubelet is posting ready status"}],
                "allocatable": {"cpu": "4", "memory": "16Gi"},
                "capacity": {"cpu": "4", "memory": "16Gi"},
                "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}],
                "images": [{"names": ["registry.example.com/app@sha256:abc"], "sizeBytes": 1}],
                "nodeInfo": {"systemUUID": "99b51142", "machineID": "m", "bootID": "b",
                             "kernelVersion": "6.1", "osImage": "Ubuntu"}
            }
        });
        assert_eq!(
            super::node(typed(node)).0,
            json!({
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": "worker-a",
                    "uid": "4b1c",
                    "labels": {"kubernetes.io/hostname": "worker-a"},
                    "managedFields": [
                        {"manager": FIELD_MANAGER, "operation": "Apply", "fieldsType": "FieldsV1",
                         "fieldsV1": {"f:metadata": {"f:labels": {"f:vsphere-descheduler.io/host": {}}}}}
                    ]
                },
                "spec": {
                    "providerID": "vsphere://4211b599",
                    "unschedulable": true,
                    "taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]
                },
                "status": {
                    "conditions": [{"type": "Ready", "status": "True"}],
                    "allocatable": {"cpu": "4", "memory": "16Gi"},
                    "capacity": {"cpu": "4", "memory": "16Gi"},
                    "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}],
                    "nodeInfo": {"systemUUID": "99b51142"}
                }
            })
        );
    }

    #[test]
    fn a_node_without_our_managed_fields_keeps_none() {
        let node = json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "worker-a", "managedFields": [{"manager": "kubelet"}]}
        });
        assert_eq!(
            super::node(typed(node)).0,
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-a"}})
        );
    }

    #[test]
    fn a_pod_keeps_scheduling_protection_ordering_and_lifecycle_fields_and_drops_the_rest() {
        let pod = json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "web-1",
                "namespace": "shop",
                "uid": "77aa",
                "generateName": "web-",
                "labels": {"app": "web"},
                "annotations": {
                    "kubectl.kubernetes.io/last-applied-configuration": "{\"password\":\"planted\"}",
                    "kubernetes.io/config.source": "api",
                    "descheduler.alpha.kubernetes.io/evict": "",
                    "example.com/token": "planted"
                },
                "creationTimestamp": "2026-11-20T08:00:00Z",
                "deletionTimestamp": "2026-11-21T08:00:00Z",
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                     "name": "web-7d", "uid": "r1", "controller": true,
                                     "blockOwnerDeletion": true}],
                "managedFields": [{"manager": "kube-controller-manager"}]
            },
            "spec": {
                "nodeName": "worker-a",
                "nodeSelector": {"disk": "ssd"},
                "serviceAccountName": "web",
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                        ]},
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 1, "preference": {"matchExpressions": [
                                {"key": "rack", "operator": "Exists"}]}}
                        ]
                    },
                    "podAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "db"}}}
                        ],
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 10, "podAffinityTerm": {"topologyKey": "zone",
                             "labelSelector": {"matchLabels": {"app": "cache"}}}}
                        ]
                    },
                    "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {"topologyKey": "vsphere-descheduler.io/host",
                             "labelSelector": {"matchLabels": {"app": "web"}},
                             "matchLabelKeys": ["pod-template-hash"]}
                        ],
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                             "labelSelector": {"matchLabels": {"app": "web"}}}}
                        ]
                    }
                },
                "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoExecute",
                                 "tolerationSeconds": 30}],
                "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                                               "whenUnsatisfiable": "DoNotSchedule",
                                               "labelSelector": {"matchLabels": {"app": "web"}}}],
                "priority": 100,
                "priorityClassName": "high",
                "overhead": {"cpu": "10m"},
                "containers": [{
                    "name": "main",
                    "image": "web:1",
                    "command": ["/bin/web", "--token=planted"],
                    "args": ["--password", "planted"],
                    "env": [{"name": "PASSWORD", "value": "planted"}],
                    "envFrom": [{"secretRef": {"name": "web-secrets"}}],
                    "ports": [{"containerPort": 8080}],
                    "resources": {"requests": {"cpu": "100m"}, "limits": {"memory": "1Gi"}},
                    "livenessProbe": {"exec": {"command": ["check", "planted"]}}
                }],
                "initContainers": [{
                    "name": "setup",
                    "image": "setup:1",
                    "restartPolicy": "Always",
                    "env": [{"name": "TOKEN", "value": "planted"}],
                    "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}
                }],
                "volumes": [
                    {"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}},
                    {"name": "logs", "hostPath": {"path": "/var/log/planted", "type": "Directory"}},
                    {"name": "data", "persistentVolumeClaim": {"claimName": "data-0", "readOnly": true}},
                    {"name": "creds", "secret": {"secretName": "planted"}}
                ],
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}]
            },
            "status": {
                "phase": "Running",
                "qosClass": "Burstable",
                "startTime": "2026-11-20T08:00:05Z",
                "podIP": "10.1.2.3",
                "conditions": [{"type": "Ready", "status": "True", "reason": "PodCompleted",
                                "message": "planted", "lastProbeTime": "2026-11-20T08:00:09Z",
                                "lastTransitionTime": "2026-11-20T08:00:09Z"}],
                "reason": "Evicted",
                "message": "planted",
                "containerStatuses": [{"name": "main", "ready": true, "restartCount": 3,
                                       "image": "web:1", "imageID": "sha256:planted",
                                       "state": {"terminated": {"exitCode": 137,
                                                                "reason": "OOMKilled",
                                                                "message": "planted",
                                                                "containerID": "planted"}},
                                       "lastState": {"waiting": {"reason": "planted"}}}],
                "initContainerStatuses": [{"name": "setup", "ready": true, "restartCount": 1,
                                           "image": "setup:1", "imageID": "sha256:planted",
                                           "state": {"waiting": {"reason": "CrashLoopBackOff",
                                                                 "message": "planted"}}}],
                "ephemeralContainerStatuses": [{"name": "debugger", "ready": false,
                                                "restartCount": 0, "image": "busybox:1",
                                                "imageID": "sha256:planted",
                                                "state": {"terminated": {"exitCode": 130,
                                                                         "reason": "Error",
                                                                         "message": "planted"}}}]
            }
        });
        assert_eq!(
            super::pod(typed(pod)).0,
            json!({
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": "web-1",
                    "namespace": "shop",
                    "uid": "77aa",
                    "labels": {"app": "web"},
                    "annotations": {
                        "kubernetes.io/config.source": "api",
                        "descheduler.alpha.kubernetes.io/evict": ""
                    },
                    "creationTimestamp": "2026-11-20T08:00:00Z",
                    "deletionTimestamp": "2026-11-21T08:00:00Z",
                    "ownerReferences": [{"kind": "ReplicaSet", "name": "web-7d", "uid": "r1",
                                         "controller": true}]
                },
                "spec": {
                    "nodeName": "worker-a",
                    "nodeSelector": {"disk": "ssd"},
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                            ]},
                            "preferredDuringSchedulingIgnoredDuringExecution": [
                                {"weight": 1, "preference": {"matchExpressions": [
                                    {"key": "rack", "operator": "Exists"}]}}
                            ]
                        },
                        "podAffinity": {
                            "preferredDuringSchedulingIgnoredDuringExecution": [
                                {"weight": 10, "podAffinityTerm": {"topologyKey": "zone",
                                 "labelSelector": {"matchLabels": {"app": "cache"}}}}
                            ]
                        },
                        "podAntiAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": [
                                {"topologyKey": "vsphere-descheduler.io/host",
                                 "labelSelector": {"matchLabels": {"app": "web"}},
                                 "matchLabelKeys": ["pod-template-hash"]}
                            ],
                            "preferredDuringSchedulingIgnoredDuringExecution": [
                                {"weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                 "labelSelector": {"matchLabels": {"app": "web"}}}}
                            ]
                        }
                    },
                    "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoExecute"}],
                    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                                                   "whenUnsatisfiable": "DoNotSchedule",
                                                   "labelSelector": {"matchLabels": {"app": "web"}}}],
                    "priority": 100,
                    "priorityClassName": "high",
                    "overhead": {"cpu": "10m"},
                    "containers": [{
                        "name": "main",
                        "image": "web:1",
                        "resources": {"requests": {"cpu": "100m"}, "limits": {"memory": "1Gi"}}
                    }],
                    "initContainers": [{
                        "name": "setup",
                        "restartPolicy": "Always",
                        "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}
                    }],
                    "volumes": [
                        {"name": "scratch", "emptyDir": {}},
                        {"name": "logs", "hostPath": {}},
                        {"name": "data", "persistentVolumeClaim": {"claimName": "data-0"}},
                        {"name": "creds"}
                    ],
                    "resourceClaims": [{"name": "gpu"}]
                },
                "status": {
                    "phase": "Running",
                    "qosClass": "Burstable",
                    "startTime": "2026-11-20T08:00:05Z",
                    "conditions": [{"type": "Ready", "status": "True", "reason": "PodCompleted",
                                    "lastTransitionTime": "2026-11-20T08:00:09Z"}],
                    "reason": "Evicted",
                    "containerStatuses": [{"name": "main", "restartCount": 3,
                                           "state": {"terminated": {"exitCode": 137,
                                                                    "reason": "OOMKilled"}}}],
                    "initContainerStatuses": [{"name": "setup", "restartCount": 1,
                                               "state": {"waiting": {"reason": "CrashLoopBackOff"}}}],
                    "ephemeralContainerStatuses": [{"name": "debugger",
                                                    "state": {"terminated": {"exitCode": 130,
                                                                             "reason": "Error"}}}]
                }
            })
        );
    }

    #[test]
    fn a_pdb_keeps_its_selector_generations_health_counts_and_unhealthy_pod_policy() {
        let pdb = json!({
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "shop", "uid": "p1", "generation": 3,
                         "resourceVersion": "42",
                         "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "planted"}},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}},
                     "unhealthyPodEvictionPolicy": "AlwaysAllow"},
            "status": {"disruptionsAllowed": 1, "currentHealthy": 2, "desiredHealthy": 1,
                       "expectedPods": 2, "observedGeneration": 3,
                       "disruptedPods": {"web-0": "2026-11-21T08:59:30Z"},
                       "conditions": [{"type": "DisruptionAllowed", "status": "True",
                                       "reason": "SufficientPods", "message": "planted",
                                       "lastTransitionTime": "2026-11-21T08:59:30Z"}]}
        });
        assert_eq!(
            super::pdb(typed(pdb)).0,
            json!({
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "web", "namespace": "shop", "generation": 3},
                "spec": {"selector": {"matchLabels": {"app": "web"}},
                         "unhealthyPodEvictionPolicy": "AlwaysAllow"},
                "status": {"disruptionsAllowed": 1, "currentHealthy": 2, "desiredHealthy": 1,
                           "expectedPods": 2, "observedGeneration": 3,
                           "disruptedPods": {"web-0": "2026-11-21T08:59:30Z"}}
            })
        );
    }

    #[test]
    fn a_lease_keeps_its_name_and_only_the_eviction_history() {
        let lease = json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": "vsphere-descheduler",
                "namespace": "kube-system",
                "resourceVersion": "42",
                "annotations": {
                    history::ANNOTATION: "[]",
                    "secret-note": "planted"
                }
            },
            "spec": {"holderIdentity": "run-7", "leaseDurationSeconds": 60, "leaseTransitions": 3}
        });
        assert_eq!(
            super::lease(typed(lease)).0,
            json!({
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {
                    "name": "vsphere-descheduler",
                    "namespace": "kube-system",
                    "annotations": {history::ANNOTATION: "[]"}
                }
            })
        );
    }

    #[test]
    fn a_namespace_keeps_its_name_and_labels() {
        let namespace = json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "shop", "uid": "n1", "labels": {"team": "web"},
                         "annotations": {"owner-email": "planted@example.com"}},
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"}
        });
        assert_eq!(
            super::namespace(typed(namespace)).0,
            json!({"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": "shop", "labels": {"team": "web"}}})
        );
    }

    #[test]
    fn metrics_keep_their_names_and_usage_and_drop_when_and_how_long_they_were_measured() {
        let node = json!({
            "apiVersion": "metrics.k8s.io/v1beta1",
            "kind": "NodeMetrics",
            "metadata": {"name": "w1", "creationTimestamp": "2026-11-21T09:00:00Z",
                         "labels": {"kubernetes.io/hostname": "w1"}},
            "timestamp": "2026-11-21T08:59:45Z",
            "window": "20.05s",
            "usage": {"cpu": "1500m", "memory": "3Gi"}
        });
        assert_eq!(
            super::node_metrics(node).0,
            json!({"apiVersion": "metrics.k8s.io/v1beta1", "kind": "NodeMetrics",
                   "metadata": {"name": "w1"}, "usage": {"cpu": "1500m", "memory": "3Gi"}})
        );
        let pod = json!({
            "apiVersion": "metrics.k8s.io/v1beta1",
            "kind": "PodMetrics",
            "metadata": {"name": "web-0", "namespace": "shop",
                         "labels": {"app": "web", "secret-ish": "planted"}},
            "timestamp": "2026-11-21T08:59:45Z",
            "window": "18.2s",
            "containers": [{"name": "main", "usage": {"cpu": "250m", "memory": "200Mi"}}]
        });
        assert_eq!(
            super::pod_metrics(pod).0,
            json!({"apiVersion": "metrics.k8s.io/v1beta1", "kind": "PodMetrics",
                   "metadata": {"name": "web-0", "namespace": "shop"},
                   "containers": [{"name": "main", "usage": {"cpu": "250m", "memory": "200Mi"}}]})
        );
    }

    /// Every `snapshot.yaml` under `tests/fixtures`.
    fn fixture_snapshots(folder: &Path, found: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(folder).expect("a readable fixture folder") {
            let path = entry.expect("a fixture entry").path();
            if path.is_dir() {
                fixture_snapshots(&path, found);
            } else if path.file_name().is_some_and(|name| name == "snapshot.yaml") {
                found.push(path);
            }
        }
    }

    /// The objects of a document: itself, or the items of a List.
    fn objects(document: Value) -> Vec<Value> {
        match document.get("items") {
            Some(Value::Array(items)) => items.clone(),
            _ => vec![document],
        }
    }

    /// Asserts that an object converts to the same planner value (or the same error) pruned.
    /// A conversion with an interner of its own.
    fn interned<W, T>(
        convert: fn(W, &mut Interner) -> Result<T, convert::ConvertError>,
    ) -> impl Fn(W) -> Result<T, convert::ConvertError> {
        move |object| convert(object, &mut Interner::default())
    }

    fn assert_converts_the_same<K, W, T>(
        object: &Value,
        prune: fn(K) -> Pruned,
        convert: impl Fn(W) -> Result<T, convert::ConvertError>,
        context: &str,
    ) where
        K: serde::de::DeserializeOwned,
        W: serde::de::DeserializeOwned,
        T: PartialEq + std::fmt::Debug,
    {
        let original = convert(typed(object.clone()));
        let pruned = convert(typed(prune(typed(object.clone())).0));
        match (original, pruned) {
            (Ok(original), Ok(pruned)) => assert_eq!(pruned, original, "{context}"),
            (Err(original), Err(pruned)) => {
                assert_eq!(pruned.to_string(), original.to_string(), "{context}")
            }
            (original, pruned) => panic!("{context}: {original:?} became {pruned:?}"),
        }
    }

    /// Every object in every `snapshot.yaml` under `tests/fixtures`, with where it came from.
    fn fixture_objects() -> Vec<(String, Value)> {
        let mut files = Vec::new();
        fixture_snapshots(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"),
            &mut files,
        );
        assert!(files.len() > 10, "fixtures found: {files:?}");
        let mut found = Vec::new();
        for file in files {
            let text = std::fs::read_to_string(&file).expect("a readable fixture");
            let documents: Vec<Value> = serde_saphyr::from_multiple(&text).expect("valid YAML");
            for object in documents.into_iter().flat_map(objects) {
                let context = format!(
                    "{}: {} {}",
                    file.display(),
                    object["kind"],
                    object["metadata"]["name"]
                );
                found.push((context, object));
            }
        }
        found
    }

    #[test]
    fn every_fixture_object_converts_the_same_pruned_and_unpruned() {
        let mut compared = 0;
        for (context, object) in fixture_objects() {
            match object["kind"].as_str().unwrap_or_default() {
                "Node" => {
                    assert_converts_the_same(&object, node, interned(convert::node), &context)
                }
                "Pod" => assert_converts_the_same(&object, pod, interned(convert::pod), &context),
                "PodDisruptionBudget" => {
                    assert_converts_the_same(&object, pdb, convert::pdb, &context)
                }
                "Namespace" => assert_converts_the_same(
                    &object,
                    namespace,
                    interned(convert::namespace),
                    &context,
                ),
                "PriorityClass" => assert_converts_the_same(
                    &object,
                    priority_class,
                    convert::priority_class,
                    &context,
                ),
                "NodeMetrics" => assert_converts_the_same(
                    &object,
                    node_metrics,
                    convert::untyped_node_metrics,
                    &context,
                ),
                "PodMetrics" => assert_converts_the_same(
                    &object,
                    pod_metrics,
                    convert::untyped_pod_metrics,
                    &context,
                ),
                "Lease" => {
                    assert_converts_the_same(&object, lease, convert::lease_history, &context)
                }
                "ConfigMap" => assert_converts_the_same(
                    &object,
                    config_map,
                    convert::config_map_history,
                    &context,
                ),
                _ => continue,
            }
            compared += 1;
        }
        assert!(compared > 100, "{compared} objects compared");
    }

    /// One kind's table, and its conversion (the result printed, for comparison).
    struct Table {
        kind: &'static str,
        paths: &'static [&'static str],
        kept: &'static Kept,
        /// Paths kept although the conversion does not read them.
        not_converted: &'static [&'static str],
        converted: fn(Value) -> String,
    }

    impl Table {
        fn converted(
            &self,
            paths: &[&'static str],
            annotations: &[&str],
            object: &Value,
        ) -> String {
            let pruned = prune(
                &Tree::of(paths),
                annotations,
                self.kept.managers,
                object.clone(),
            );
            (self.converted)(pruned)
        }

        /// Asserts that keeping only `paths` and `annotations` (the table without `field`)
        /// changes what some fixture object of this kind converts to.
        fn assert_read(
            &self,
            objects: &[&Value],
            field: &str,
            paths: &[&'static str],
            annotations: &[&str],
        ) {
            let changed = objects.iter().any(|object| {
                self.converted(paths, annotations, object)
                    != self.converted(self.paths, self.kept.annotations, object)
            });
            assert!(
                changed,
                "{} {field} is kept, but no fixture object converts differently without it",
                self.kind
            );
        }
    }

    #[test]
    fn every_kept_field_is_read_by_the_conversion_except_names_and_the_nodes_identity() {
        fn printed<T: std::fmt::Debug>(converted: Result<T, convert::ConvertError>) -> String {
            converted.map_or_else(
                |error| format!("error: {error}"),
                |value| format!("{value:?}"),
            )
        }
        // apiVersion and kind choose the conversion; list items keep their names so the lists
        // stay valid; a node's uid and our managedFields entries are read by label writes.
        let tables = [
            Table {
                kind: "Node",
                paths: NODE_PATHS,
                kept: &NODE,
                not_converted: &["apiVersion", "kind", "metadata.uid"],
                converted: |v| printed(convert::node(typed(v), &mut Interner::default())),
            },
            Table {
                kind: "Pod",
                paths: POD_PATHS,
                kept: &POD,
                not_converted: &[
                    "apiVersion",
                    "kind",
                    "spec.containers[].name",
                    "spec.initContainers[].name",
                    "spec.volumes[].name",
                    "spec.resourceClaims[].name",
                    "status.containerStatuses[].name",
                    "status.initContainerStatuses[].name",
                    "status.ephemeralContainerStatuses[].name",
                ],
                converted: |v| printed(convert::pod(typed(v), &mut Interner::default())),
            },
            Table {
                kind: "PodDisruptionBudget",
                paths: PDB_PATHS,
                kept: &PDB,
                not_converted: &["apiVersion", "kind"],
                converted: |v| printed(convert::pdb(typed(v))),
            },
            Table {
                kind: "Namespace",
                paths: NAMESPACE_PATHS,
                kept: &NAMESPACE,
                not_converted: &["apiVersion", "kind"],
                converted: |v| printed(convert::namespace(typed(v), &mut Interner::default())),
            },
            Table {
                kind: "PriorityClass",
                paths: PRIORITY_CLASS_PATHS,
                kept: &PRIORITY_CLASS,
                not_converted: &["apiVersion", "kind"],
                // `value` is required: without it the object does not even decode.
                converted: |v| {
                    serde_json::from_value::<PriorityClass>(v).map_or_else(
                        |error| format!("error: {error}"),
                        |class| printed(convert::priority_class(class)),
                    )
                },
            },
            Table {
                kind: "NodeMetrics",
                paths: NODE_METRICS_PATHS,
                kept: &NODE_METRICS,
                not_converted: &["apiVersion", "kind"],
                converted: |v| printed(convert::untyped_node_metrics(v)),
            },
            Table {
                kind: "PodMetrics",
                paths: POD_METRICS_PATHS,
                kept: &POD_METRICS,
                not_converted: &["apiVersion", "kind", "containers[].name"],
                converted: |v| printed(convert::untyped_pod_metrics(v)),
            },
            Table {
                kind: "Lease",
                paths: LEASE_PATHS,
                kept: &LEASE,
                not_converted: &["apiVersion", "kind"],
                converted: |v| printed(convert::lease_history(typed(v))),
            },
            Table {
                kind: "ConfigMap",
                paths: CONFIG_MAP_PATHS,
                kept: &CONFIG_MAP,
                not_converted: &["apiVersion", "kind"],
                converted: |v| printed(convert::config_map_history(typed(v))),
            },
        ];
        let fixtures = fixture_objects();
        for table in &tables {
            let objects: Vec<&Value> = fixtures
                .iter()
                .map(|(_, object)| object)
                .filter(|object| object["kind"] == table.kind)
                .collect();
            for path in table.paths {
                if table.not_converted.contains(path) {
                    continue;
                }
                let without: Vec<&'static str> =
                    table.paths.iter().copied().filter(|p| p != path).collect();
                table.assert_read(&objects, path, &without, table.kept.annotations);
            }
            for annotation in table.kept.annotations {
                let without: Vec<&str> = table
                    .kept
                    .annotations
                    .iter()
                    .copied()
                    .filter(|a| a != annotation)
                    .collect();
                let field = format!("annotation {annotation}");
                table.assert_read(&objects, &field, table.paths, &without);
            }
        }
    }
}
