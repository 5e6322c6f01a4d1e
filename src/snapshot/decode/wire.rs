//! Nodes, pods and Leases as the API writes them, reduced to the fields conversion reads.
//!
//! k8s-openapi's `Pod` decodes every field of every container (a `Container` is a 2 kB struct
//! before its strings) and parses every timestamp; a 150,000-pod snapshot spent most of its
//! decoding there. These types name only what [`super::convert`] reads: serde skips every other
//! field unread, and annotations and managed fields are filtered while they are read. Small
//! parts that are read whole (taints, tolerations, affinity, spread constraints, owner
//! references, selectors) keep k8s-openapi's types, so they are decoded exactly as before.
//! Snapshot files (JSON text or a YAML tree) and live list pages decode through the same types.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};

use super::annotations::{
    CONFIG_SOURCE_ANNOTATION, EVICT_ANNOTATION, MIRROR_ANNOTATION, PREFER_NO_EVICTION_ANNOTATION,
};

/// Resource amounts by name (`requests`, `allocatable`, `overhead`).
pub type Quantities = BTreeMap<String, Quantity>;

/// `metadata`, the fields any kind read here has.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", expecting = "metadata to be a mapping")]
pub struct Meta {
    pub name: Option<String>,
    pub namespace: Option<String>,
    pub uid: Option<String>,
    pub labels: Option<BTreeMap<String, String>>,
    pub annotations: Option<Annotations>,
    pub creation_timestamp: Option<Time>,
    pub deletion_timestamp: Option<Time>,
    pub owner_references: Option<Vec<OwnerReference>>,
    pub managed_fields: Option<Vec<ManagedFields>>,
}

/// The annotations planning reads; the others are checked to be text and dropped.
#[derive(Default)]
pub struct Annotations {
    pub mirror: bool,
    pub config_source: Option<String>,
    pub force_evict: bool,
    pub prefer_no_eviction: bool,
}

impl<'de> Deserialize<'de> for Annotations {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct AnnotationsVisitor;
        impl<'de> Visitor<'de> for AnnotationsVisitor {
            type Value = Annotations;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("annotations to be a mapping of text to text")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Annotations, A::Error> {
                let mut kept = Annotations::default();
                while let Some(key) = map.next_key::<AnnotationKey>()? {
                    match key {
                        AnnotationKey::ConfigSource => {
                            kept.config_source = Some(map.next_value::<String>()?);
                            continue;
                        }
                        AnnotationKey::Mirror => kept.mirror = true,
                        AnnotationKey::Evict => kept.force_evict = true,
                        AnnotationKey::PreferNoEviction => kept.prefer_no_eviction = true,
                        AnnotationKey::Other => {}
                    }
                    map.next_value::<Text>()?;
                }
                Ok(kept)
            }
        }
        deserializer.deserialize_map(AnnotationsVisitor)
    }
}

/// An annotation key, told apart without copying it.
enum AnnotationKey {
    Mirror,
    ConfigSource,
    Evict,
    PreferNoEviction,
    Other,
}

impl<'de> Deserialize<'de> for AnnotationKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = AnnotationKey;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an annotation key (text)")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<AnnotationKey, E> {
                Ok(match key {
                    MIRROR_ANNOTATION => AnnotationKey::Mirror,
                    CONFIG_SOURCE_ANNOTATION => AnnotationKey::ConfigSource,
                    EVICT_ANNOTATION => AnnotationKey::Evict,
                    PREFER_NO_EVICTION_ANNOTATION => AnnotationKey::PreferNoEviction,
                    _ => AnnotationKey::Other,
                })
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// A text value checked and dropped without a copy.
struct Text;

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl Visitor<'_> for TextVisitor {
            type Value = Text;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Text, E> {
                Ok(Text)
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}

/// A `metadata.managedFields` entry: who manages which label keys (the rest of `fieldsV1` is
/// skipped).
#[derive(Deserialize)]
#[serde(
    rename_all = "camelCase",
    expecting = "a managedFields entry (a mapping)"
)]
pub struct ManagedFields {
    pub manager: Option<String>,
    pub operation: Option<String>,
    #[serde(rename = "fieldsV1")]
    pub fields_v1: Option<ManagedRoot>,
}

/// `fieldsV1` down to `f:metadata`.
#[derive(Deserialize)]
#[serde(expecting = "fieldsV1 to be a mapping")]
pub struct ManagedRoot {
    #[serde(rename = "f:metadata")]
    pub metadata: Option<ManagedMetadata>,
}

/// `f:metadata` down to `f:labels`, whose keys are `f:KEY`.
#[derive(Deserialize)]
#[serde(expecting = "f:metadata to be a mapping")]
pub struct ManagedMetadata {
    #[serde(rename = "f:labels")]
    pub labels: Option<BTreeMap<String, IgnoredAny>>,
}

/// A node's or a pod's condition.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", expecting = "a condition (a mapping)")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: Option<String>,
    pub status: Option<String>,
    pub reason: Option<String>,
    pub last_transition_time: Option<Time>,
}

impl Condition {
    /// `type: Ready, status: "True"`.
    pub fn is_ready(&self) -> bool {
        self.type_.as_deref() == Some("Ready") && self.status.as_deref() == Some("True")
    }
}

#[derive(Deserialize, Default)]
#[serde(expecting = "a Node (a mapping)")]
pub struct Node {
    pub metadata: Option<Meta>,
    pub spec: Option<NodeSpec>,
    pub status: Option<NodeStatus>,
}

#[derive(Deserialize, Default)]
#[serde(expecting = "a node's spec (a mapping)")]
pub struct NodeSpec {
    #[serde(rename = "providerID")]
    pub provider_id: Option<String>,
    pub unschedulable: Option<bool>,
    pub taints: Option<Vec<core::Taint>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", expecting = "a node's status (a mapping)")]
pub struct NodeStatus {
    pub conditions: Option<Vec<Condition>>,
    pub allocatable: Option<Quantities>,
    pub capacity: Option<Quantities>,
    pub node_info: Option<NodeInfo>,
    pub addresses: Option<Vec<core::NodeAddress>>,
}

#[derive(Deserialize)]
#[serde(expecting = "nodeInfo to be a mapping")]
pub struct NodeInfo {
    #[serde(rename = "systemUUID")]
    pub system_uuid: Option<String>,
}

/// A Lease: its name and the annotations, of which only the eviction history's is read.
#[derive(Deserialize, Default)]
#[serde(expecting = "a Lease (a mapping)")]
pub struct Lease {
    pub metadata: Option<LeaseMeta>,
}

#[derive(Deserialize, Default)]
#[serde(expecting = "metadata to be a mapping")]
pub struct LeaseMeta {
    pub name: Option<String>,
    pub namespace: Option<String>,
    pub annotations: Option<BTreeMap<String, String>>,
}

/// A ConfigMap: its name, the annotations (only the eviction history's is read) and its data.
#[derive(Deserialize, Default)]
#[serde(expecting = "a ConfigMap (a mapping)")]
pub struct ConfigMap {
    pub metadata: Option<LeaseMeta>,
    pub data: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize, Default)]
#[serde(expecting = "a Pod (a mapping)")]
pub struct Pod {
    pub metadata: Option<Meta>,
    pub spec: Option<PodSpec>,
    pub status: Option<PodStatus>,
}

/// A pod with its `apiVersion` and `kind`, read in one pass when they are not yet known.
#[derive(Deserialize)]
#[serde(from = "TypedPodFields")]
pub struct TypedPod {
    pub api_version: Option<String>,
    pub kind: Option<String>,
    pub pod: Pod,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", expecting = "a Pod (a mapping)")]
struct TypedPodFields {
    api_version: Option<String>,
    kind: Option<String>,
    metadata: Option<Meta>,
    spec: Option<PodSpec>,
    status: Option<PodStatus>,
}

impl From<TypedPodFields> for TypedPod {
    fn from(fields: TypedPodFields) -> TypedPod {
        TypedPod {
            api_version: fields.api_version,
            kind: fields.kind,
            pod: Pod {
                metadata: fields.metadata,
                spec: fields.spec,
                status: fields.status,
            },
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", expecting = "a pod's spec (a mapping)")]
pub struct PodSpec {
    pub node_name: Option<String>,
    pub node_selector: Option<BTreeMap<String, String>>,
    pub affinity: Option<core::Affinity>,
    pub tolerations: Option<Vec<core::Toleration>>,
    pub topology_spread_constraints: Option<Vec<core::TopologySpreadConstraint>>,
    pub priority: Option<i32>,
    pub priority_class_name: Option<String>,
    pub overhead: Option<Quantities>,
    pub containers: Option<Vec<Container>>,
    pub init_containers: Option<Vec<Container>>,
    pub volumes: Option<Vec<Volume>>,
    pub resource_claims: Option<Vec<IgnoredAny>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", expecting = "a container (a mapping)")]
pub struct Container {
    pub image: Option<String>,
    pub resources: Option<ResourceRequirements>,
    pub restart_policy: Option<String>,
}

#[derive(Deserialize)]
#[serde(expecting = "resources to be a mapping")]
pub struct ResourceRequirements {
    pub limits: Option<Quantities>,
    pub requests: Option<Quantities>,
}

/// A volume: only whether it is local storage, and the claim it mounts.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", expecting = "a volume (a mapping)")]
pub struct Volume {
    pub empty_dir: Option<IgnoredAny>,
    pub host_path: Option<IgnoredAny>,
    pub persistent_volume_claim: Option<ClaimSource>,
}

#[derive(Deserialize)]
#[serde(
    rename_all = "camelCase",
    expecting = "persistentVolumeClaim to be a mapping"
)]
pub struct ClaimSource {
    pub claim_name: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", expecting = "a pod's status (a mapping)")]
pub struct PodStatus {
    pub phase: Option<String>,
    pub qos_class: Option<String>,
    pub start_time: Option<Time>,
    pub conditions: Option<Vec<Condition>>,
    pub reason: Option<String>,
    pub container_statuses: Option<Vec<ContainerStatus>>,
    pub init_container_statuses: Option<Vec<ContainerStatus>>,
    pub ephemeral_container_statuses: Option<Vec<ContainerStatus>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", expecting = "a container status (a mapping)")]
pub struct ContainerStatus {
    pub restart_count: Option<i32>,
    pub state: Option<ContainerState>,
}

#[derive(Deserialize)]
#[serde(expecting = "a container state (a mapping)")]
pub struct ContainerState {
    pub waiting: Option<Waiting>,
    pub terminated: Option<TerminatedState>,
}

#[derive(Deserialize)]
#[serde(expecting = "state.waiting to be a mapping")]
pub struct Waiting {
    pub reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(
    rename_all = "camelCase",
    expecting = "state.terminated to be a mapping"
)]
pub struct TerminatedState {
    pub reason: Option<String>,
    pub exit_code: Option<i32>,
}
