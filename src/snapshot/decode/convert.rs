//! Kubernetes API objects (as `kubectl get -o yaml|json` prints them) → the planner's types.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference};
use kube::core::{Expression, Selector};

use super::history::{self, RecordedHistory};
use super::quantity::parse_milli;
use super::wire;
use crate::identity::FIELD_MANAGER;
use crate::snapshot::model::Interner;
use crate::snapshot::model::{
    AffinityTerm, ConfigSource, ContainerStatus, Labels, Node, NodeOperator, NodeRequirement,
    NodeSelectorTerm, Owner, OwnerKind, Pdb, Phase, Pod, PodCondition, PodExtras, PreferredTerm,
    Qos, Requirements, SpreadConstraint, Taint, TaintEffect, Terminated, Toleration,
    UnhealthyPodEvictionPolicy, WeightedAffinityTerm, WhenUnsatisfiable,
};
use crate::snapshot::model::{ResourceName, Resources};

/// Why an object could not be understood; the loader adds the file and object name.
#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    #[error("invalid quantity {value:?} for {field}")]
    Quantity { field: String, value: String },
    #[error("invalid label selector in {field}: {message}")]
    Selector { field: String, message: String },
    #[error("invalid {field} {value:?}")]
    Enum { field: String, value: String },
    #[error("missing {field}")]
    Missing { field: &'static str },
    #[error("unreadable: {message}")]
    Unreadable { message: String },
}

/// A node; its label texts are shared through `interner` with the other objects converted
/// with it.
pub fn node(node: wire::Node, interner: &mut Interner) -> Result<Node, ConvertError> {
    let meta = node.metadata.unwrap_or_default();
    let name = meta.name.ok_or(ConvertError::Missing {
        field: "metadata.name",
    })?;
    let spec = node.spec.unwrap_or_default();
    let status = node.status.unwrap_or_default();
    let ready = status
        .conditions
        .unwrap_or_default()
        .iter()
        .any(wire::Condition::is_ready);
    let taints = spec
        .taints
        .unwrap_or_default()
        .into_iter()
        .map(|t| {
            Ok(Taint {
                effect: taint_effect(&t.effect, "spec.taints[].effect")?,
                key: t.key,
                value: t.value.unwrap_or_default(),
            })
        })
        .collect::<Result<_, ConvertError>>()?;
    let allocatable = resources(
        status.allocatable.or(status.capacity).unwrap_or_default(),
        "status.allocatable",
    )?;
    Ok(exact_node(Node {
        name,
        uid: meta.uid.filter(|uid| !uid.is_empty()),
        labels: interner.labels(meta.labels),
        applied_label_keys: applied_label_keys(meta.managed_fields.unwrap_or_default()),
        provider_id: spec.provider_id.filter(|id| !id.is_empty()),
        internal_ips: status
            .addresses
            .unwrap_or_default()
            .into_iter()
            .filter(|address| address.type_ == "InternalIP" && !address.address.is_empty())
            .map(|address| address.address)
            .collect(),
        system_uuid: status
            .node_info
            .and_then(|info| info.system_uuid)
            .filter(|id| !id.is_empty()),
        unschedulable: spec.unschedulable.unwrap_or(false),
        ready,
        taints,
        allocatable,
    }))
}

/// A node's lists at their exact size (see [`exact_pod`]).
fn exact_node(mut node: Node) -> Node {
    node.taints.shrink_to_fit();
    node.internal_ips.shrink_to_fit();
    node
}

/// Label keys our field manager holds through server-side apply: those in the `fieldsV1` of
/// its `Apply` entries (`{"f:metadata":{"f:labels":{"f:KEY":{}}}}`). Keys it wrote with an
/// update-style patch are not counted: an apply that leaves them out would not remove them.
fn applied_label_keys(entries: Vec<wire::ManagedFields>) -> BTreeSet<String> {
    entries
        .into_iter()
        .filter(|entry| {
            entry.manager.as_deref() == Some(FIELD_MANAGER)
                && entry.operation.as_deref() == Some("Apply")
        })
        .filter_map(|entry| entry.fields_v1?.metadata?.labels)
        .flat_map(BTreeMap::into_keys)
        .filter_map(|key| key.strip_prefix("f:").map(str::to_string))
        .collect()
}

/// A pod; its label and node selector texts are shared through `interner` with the other
/// objects converted with it.
pub fn pod(pod: wire::Pod, interner: &mut Interner) -> Result<Pod, ConvertError> {
    let meta = pod.metadata.unwrap_or_default();
    let name = meta.name.ok_or(ConvertError::Missing {
        field: "metadata.name",
    })?;
    let namespace = interner.intern(meta.namespace.unwrap_or_else(|| "default".to_string()));
    let labels = interner.labels(meta.labels);
    let annotations = meta.annotations.unwrap_or_default();
    let spec = pod.spec.unwrap_or_default();
    let status = pod.status.unwrap_or_default();

    let mut containers = spec.containers.unwrap_or_default();
    let (requests, qos) = requests_and_qos(
        &mut containers,
        spec.init_containers.unwrap_or_default(),
        spec.overhead,
        status.qos_class.as_deref(),
    )?;

    let affinity = spec.affinity.unwrap_or_default();
    let (node_affinity, preferred_node_affinity) = node_affinity(affinity.node_affinity)?;
    let (anti_affinity, preferred_anti_affinity) =
        pod_anti_affinity(affinity.pod_anti_affinity, &labels)?;
    let preferred_affinity = pod_affinity(affinity.pod_affinity, &labels)?;
    let spread_constraints = spread_constraints(spec.topology_spread_constraints, &labels)?;
    let tolerations = tolerations(spec.tolerations)?;
    let (local_storage, claims) = volumes(spec.volumes.unwrap_or_default());
    let images = images(containers, interner);

    Ok(exact_pod(Pod {
        uid: meta.uid.unwrap_or_default(),
        node_name: spec
            .node_name
            .filter(|n| !n.is_empty())
            .map(|n| interner.intern(n)),
        phase: phase(status.phase.as_deref()),
        terminating: meta.deletion_timestamp.is_some(),
        ready: status
            .conditions
            .as_ref()
            .is_some_and(|c| c.iter().any(wire::Condition::is_ready)),
        created: meta.creation_timestamp.and_then(|t| timestamp(t.0)),
        started: status.start_time.and_then(|t| timestamp(t.0)),
        priority: spec.priority.unwrap_or(0),
        qos,
        owners: owners(meta.owner_references.unwrap_or_default(), interner).into(),
        images: images.into(),
        requests,
        node_selector: interner.labels(spec.node_selector),
        anti_affinity: anti_affinity.into(),
        spread_constraints: spread_constraints.into(),
        mirror: annotations.mirror,
        force_evict: annotations.force_evict,
        prefer_no_eviction: annotations.prefer_no_eviction,
        local_storage,
        resource_claims: spec
            .resource_claims
            .is_some_and(|claims| !claims.is_empty()),
        conditions: conditions(status.conditions, interner).into(),
        extras: PodExtras {
            priority_class: spec.priority_class_name.filter(|n| !n.is_empty()),
            node_affinity,
            preferred_node_affinity,
            tolerations,
            preferred_anti_affinity,
            preferred_affinity,
            config_source: annotations.config_source.map(ConfigSource::from),
            claims,
            reason: status.reason.filter(|reason| !reason.is_empty()),
            container_statuses: container_statuses(status.container_statuses),
            init_container_statuses: container_statuses(status.init_container_statuses),
            ephemeral_container_statuses: container_statuses(status.ephemeral_container_statuses),
        }
        .boxed(),
        namespace,
        name,
        labels,
    }))
}

/// The pod's request as the scheduler sums it (containers, then the init sequence's largest
/// step, then the overhead, plus one `pods` slot) and its QoS class. The containers' resources
/// are taken out of them: the caller still needs their images.
fn requests_and_qos(
    containers: &mut [wire::Container],
    init_containers: Vec<wire::Container>,
    overhead: Option<wire::Quantities>,
    qos_class: Option<&str>,
) -> Result<(Resources, Qos), ConvertError> {
    let mut requests = Resources::default();
    let mut limits = Resources::default();
    let mut all_requests_equal_limits = true;
    let mut any_resources = false;
    for container in containers {
        let (request, limit) = container_resources(container.resources.take())?;
        any_resources |= !request.is_empty() || !limit.is_empty();
        all_requests_equal_limits &= guaranteed_container(&request, &limit);
        requests.add(&request);
        limits.add(&limit);
    }
    let init_step = init_requests(init_containers, &mut requests)?;
    requests.max_with(&init_step);
    if let Some(overhead) = overhead {
        requests.add(&resources(overhead, "spec.overhead")?);
    }
    requests.set(ResourceName::Pods, 1000);

    let qos = match qos_class {
        Some("Guaranteed") => Qos::Guaranteed,
        Some("Burstable") => Qos::Burstable,
        Some("BestEffort") => Qos::BestEffort,
        // Not recorded: derive it the way the API server does.
        _ if !any_resources => Qos::BestEffort,
        _ if all_requests_equal_limits => Qos::Guaranteed,
        _ => Qos::Burstable,
    };
    Ok((requests, qos))
}

/// `spec.affinity.nodeAffinity` as its required terms (none when absent, which differs from
/// an empty list) and its preferred terms.
fn node_affinity(
    affinity: Option<core::NodeAffinity>,
) -> Result<(Option<Vec<NodeSelectorTerm>>, Vec<PreferredTerm>), ConvertError> {
    let (required, preferred) = affinity
        .map(|a| {
            (
                a.required_during_scheduling_ignored_during_execution,
                a.preferred_during_scheduling_ignored_during_execution,
            )
        })
        .unwrap_or_default();
    let preferred = preferred
        .unwrap_or_default()
        .into_iter()
        .map(|term| {
            Ok(PreferredTerm {
                weight: term.weight,
                preference: node_selector_term(term.preference)?,
            })
        })
        .collect::<Result<_, ConvertError>>()?;
    let required = required
        .map(|selector| {
            selector
                .node_selector_terms
                .into_iter()
                .map(node_selector_term)
                .collect()
        })
        .transpose()?;
    Ok((required, preferred))
}

/// `spec.affinity.podAffinity` as its preferred terms. Required pod affinity is not read: no
/// strategy acts on it, and the scheduler's filter for it matters only for pods that use it,
/// which feasibility does not model.
fn pod_affinity(
    affinity: Option<core::PodAffinity>,
    labels: &Labels,
) -> Result<Vec<WeightedAffinityTerm>, ConvertError> {
    weighted_terms(
        affinity.and_then(|a| a.preferred_during_scheduling_ignored_during_execution),
        labels,
        "spec.affinity.podAffinity",
    )
}

/// `spec.topologySpreadConstraints` (the pod's `labels` fill their `matchLabelKeys`).
fn spread_constraints(
    constraints: Option<Vec<core::TopologySpreadConstraint>>,
    labels: &Labels,
) -> Result<Vec<SpreadConstraint>, ConvertError> {
    constraints
        .unwrap_or_default()
        .into_iter()
        .map(|c| spread_constraint(c, labels))
        .collect()
}

/// `spec.tolerations`; an unknown effect or operator is an error.
fn tolerations(
    tolerations: Option<Vec<core::Toleration>>,
) -> Result<Vec<Toleration>, ConvertError> {
    tolerations
        .unwrap_or_default()
        .into_iter()
        .map(toleration)
        .collect()
}

/// The containers' images, sorted, so that pods with the same images compare equal whatever
/// their order (RemoveDuplicates groups pods by them).
fn images(containers: Vec<wire::Container>, interner: &mut Interner) -> Vec<Arc<str>> {
    let mut images: Vec<Arc<str>> = containers
        .into_iter()
        .filter_map(|c| c.image)
        .map(|image| interner.intern(image))
        .collect();
    images.sort();
    images
}

/// Whether the pod uses local storage (`emptyDir` or `hostPath`), and the names of its
/// PersistentVolumeClaims.
fn volumes(volumes: Vec<wire::Volume>) -> (bool, Vec<String>) {
    let local_storage = volumes
        .iter()
        .any(|v| v.empty_dir.is_some() || v.host_path.is_some());
    let claims = volumes
        .into_iter()
        .filter_map(|v| v.persistent_volume_claim)
        .map(|c| c.claim_name.unwrap_or_default())
        .collect();
    (local_storage, claims)
}

/// `spec.affinity.podAntiAffinity` as its required and preferred terms (the pod's `labels`
/// fill their `matchLabelKeys` and `mismatchLabelKeys`).
fn pod_anti_affinity(
    affinity: Option<core::PodAntiAffinity>,
    labels: &Labels,
) -> Result<(Vec<AffinityTerm>, Vec<WeightedAffinityTerm>), ConvertError> {
    let (required, preferred) = affinity
        .map(|a| {
            (
                a.required_during_scheduling_ignored_during_execution,
                a.preferred_during_scheduling_ignored_during_execution,
            )
        })
        .unwrap_or_default();
    let required = required
        .unwrap_or_default()
        .into_iter()
        .map(|term| affinity_term(term, labels, "spec.affinity.podAntiAffinity"))
        .collect::<Result<_, _>>()?;
    let preferred = weighted_terms(preferred, labels, "spec.affinity.podAntiAffinity")?;
    Ok((required, preferred))
}

/// `status.phase`; an absent or unknown phase reads as `Pending`.
fn phase(phase: Option<&str>) -> Phase {
    match phase {
        Some("Running") => Phase::Running,
        Some("Succeeded") => Phase::Succeeded,
        Some("Failed") => Phase::Failed,
        Some("Unknown") => Phase::Unknown,
        _ => Phase::Pending,
    }
}

/// `metadata.ownerReferences`; an absent `controller` reads as false.
fn owners(references: Vec<OwnerReference>, interner: &mut Interner) -> Vec<Owner> {
    references
        .into_iter()
        .map(|o| Owner {
            kind: OwnerKind::known(&o.kind)
                .unwrap_or_else(|| OwnerKind::Other(interner.intern(o.kind))),
            name: interner.intern(o.name),
            uid: interner.intern(o.uid),
            controller: o.controller.unwrap_or(false),
        })
        .collect()
}

/// A pod's lists at their exact size. `collect` from a consumed vector reuses its allocation,
/// sized for the API's larger items (an owner reference, a container): kept, that would be
/// about 1 kB of unused memory per pod. (The pod's own lists are boxed slices, exact already.)
fn exact_pod(mut pod: Pod) -> Pod {
    if let Some(extras) = pod.extras.as_deref_mut() {
        extras.tolerations.shrink_to_fit();
        extras.preferred_anti_affinity.shrink_to_fit();
        extras.preferred_affinity.shrink_to_fit();
        extras.preferred_node_affinity.shrink_to_fit();
        if let Some(terms) = &mut extras.node_affinity {
            terms.shrink_to_fit();
        }
        extras.claims.shrink_to_fit();
        extras.container_statuses.shrink_to_fit();
        extras.init_container_statuses.shrink_to_fit();
        extras.ephemeral_container_statuses.shrink_to_fit();
    }
    pod
}

/// `status.conditions` as PodLifeTime's `conditions` filter reads them.
fn conditions(
    conditions: Option<Vec<wire::Condition>>,
    interner: &mut Interner,
) -> Vec<PodCondition> {
    conditions
        .unwrap_or_default()
        .into_iter()
        .map(|condition| PodCondition {
            condition_type: interner.intern(condition.type_.unwrap_or_default()),
            status: interner.intern(condition.status.unwrap_or_default()),
            reason: condition
                .reason
                .filter(|reason| !reason.is_empty())
                .map(|reason| interner.intern(reason)),
            last_transition: condition.last_transition_time.and_then(|t| timestamp(t.0)),
        })
        .collect()
}

/// Restart counts and current states of containers (`status.containerStatuses` or
/// `status.initContainerStatuses`).
fn container_statuses(statuses: Option<Vec<wire::ContainerStatus>>) -> Vec<ContainerStatus> {
    let reason = |reason: Option<String>| reason.filter(|reason| !reason.is_empty());
    statuses
        .unwrap_or_default()
        .into_iter()
        .map(|status| {
            let (waiting, terminated) = status
                .state
                .map(|state| (state.waiting, state.terminated))
                .unwrap_or_default();
            ContainerStatus {
                restart_count: status.restart_count.unwrap_or(0),
                waiting_reason: waiting.and_then(|waiting| reason(waiting.reason)),
                terminated: terminated.map(|terminated| Terminated {
                    reason: reason(terminated.reason),
                    exit_code: terminated.exit_code.unwrap_or(0),
                }),
            }
        })
        .collect()
}

pub fn pdb(pdb: PodDisruptionBudget) -> Result<Pdb, ConvertError> {
    let spec = pdb.spec.unwrap_or_default();
    // A PDB the controller has not processed yet has no status: it allows nothing, as the API
    // server treats it.
    let status = pdb.status.unwrap_or_default();
    let unhealthy_pod_eviction_policy = match spec.unhealthy_pod_eviction_policy.as_deref() {
        None | Some("") | Some("IfHealthyBudget") => UnhealthyPodEvictionPolicy::IfHealthyBudget,
        Some("AlwaysAllow") => UnhealthyPodEvictionPolicy::AlwaysAllow,
        Some(_) => UnhealthyPodEvictionPolicy::Unrecognised,
    };
    Ok(Pdb {
        namespace: pdb
            .metadata
            .namespace
            .unwrap_or_else(|| "default".to_string()),
        name: pdb.metadata.name.ok_or(ConvertError::Missing {
            field: "metadata.name",
        })?,
        selector: spec
            .selector
            .map(|s| selector(s, "spec.selector"))
            .transpose()?,
        generation: pdb.metadata.generation.unwrap_or(0),
        observed_generation: status.observed_generation.unwrap_or(0),
        disruptions_allowed: status.disruptions_allowed,
        current_healthy: status.current_healthy,
        desired_healthy: status.desired_healthy,
        expected_pods: status.expected_pods,
        disrupted_pods: status.disrupted_pods.map_or(0, |pods| pods.len()),
        unhealthy_pod_eviction_policy,
    })
}

/// A namespace as its name and labels (texts shared through `interner`).
pub fn namespace(
    namespace: core::Namespace,
    interner: &mut Interner,
) -> Result<(String, Labels), ConvertError> {
    let name = namespace.metadata.name.ok_or(ConvertError::Missing {
        field: "metadata.name",
    })?;
    Ok((name, interner.labels(namespace.metadata.labels)))
}

/// A PriorityClass as its name and value (`globalDefault` is not read: admission already
/// wrote every pod's priority into it).
pub fn priority_class(class: PriorityClass) -> Result<(String, i32), ConvertError> {
    let name = class.metadata.name.ok_or(ConvertError::Missing {
        field: "metadata.name",
    })?;
    Ok((name, class.value))
}

/// The eviction history a Lease holds (the run lock's), as recorded; `None` when it holds none.
pub fn lease_history(lease: wire::Lease) -> Result<Option<RecordedHistory>, ConvertError> {
    let metadata = lease.metadata.unwrap_or_default();
    let name = metadata.name.ok_or(ConvertError::Missing {
        field: "metadata.name",
    })?;
    let Some(value) = metadata
        .annotations
        .and_then(|mut annotations| annotations.remove(history::ANNOTATION))
    else {
        return Ok(None);
    };
    let lease = match metadata.namespace {
        Some(namespace) if !namespace.is_empty() => format!("{namespace}/{name}"),
        _ => name,
    };
    Ok(Some(RecordedHistory { lease, value }))
}

/// k8s-openapi speaks jiff; the planner keeps to chrono, the project's one time library.
fn timestamp(t: k8s_openapi::jiff::Timestamp) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::from_timestamp(t.as_second(), t.subsec_nanosecond().try_into().ok()?)
}

/// A `LabelSelector` as its requirements.
pub fn selector(selector: LabelSelector, field: &str) -> Result<Requirements, ConvertError> {
    Selector::try_from(selector)
        .map(Requirements::from)
        .map_err(|e| ConvertError::Selector {
            field: field.to_string(),
            message: e.0,
        })
}

fn container_resources(
    resources_of: Option<wire::ResourceRequirements>,
) -> Result<(Resources, Resources), ConvertError> {
    let Some(reqs) = resources_of else {
        return Ok(Default::default());
    };
    let limits = resources(reqs.limits.unwrap_or_default(), "resources.limits")?;
    let mut requests = resources(reqs.requests.unwrap_or_default(), "resources.requests")?;
    // A limit without a request means request = limit, as the API server defaults it.
    requests.fill_from(&limits);
    Ok((requests, limits))
}

/// What the init containers add to the pod's request, as the scheduler sums it
/// (`resourcehelper.PodRequests`): native sidecars (`restartPolicy: Always`) keep running
/// beside the containers, so they are added to `requests`; the result is the largest step of
/// the init sequence, each ordinary init container running beside the sidecars started before
/// it, for the caller to take the larger of it and the running pod.
fn init_requests(
    init_containers: Vec<wire::Container>,
    requests: &mut Resources,
) -> Result<Resources, ConvertError> {
    let mut sidecars = Resources::default();
    let mut largest_step = Resources::default();
    for container in init_containers {
        let (mut request, _) = container_resources(container.resources)?;
        if container.restart_policy.as_deref() == Some("Always") {
            requests.add(&request);
            sidecars.add(&request);
            largest_step.max_with(&sidecars);
        } else {
            request.add(&sidecars);
            largest_step.max_with(&request);
        }
    }
    Ok(largest_step)
}

fn guaranteed_container(requests: &Resources, limits: &Resources) -> bool {
    [ResourceName::Cpu, ResourceName::Memory]
        .iter()
        .all(|name| limits.contains(name) && requests.get(name) == limits.get(name))
}

fn resources(quantities: wire::Quantities, field: &str) -> Result<Resources, ConvertError> {
    quantities
        .into_iter()
        .map(|(name, quantity)| match parse_milli(&quantity.0) {
            Some(amount) => Ok((ResourceName::new(&name), amount)),
            None => Err(ConvertError::Quantity {
                field: format!("{field}.{name}"),
                value: quantity.0,
            }),
        })
        .collect()
}

/// `metrics.k8s.io/v1beta1` NodeMetrics as metrics-server serves it (the fields read).
#[derive(serde::Deserialize)]
pub struct NodeMetrics {
    metadata: MetricsMeta,
    #[serde(default)]
    usage: BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
}

/// `metrics.k8s.io/v1beta1` PodMetrics: usage per container.
#[derive(serde::Deserialize)]
pub struct PodMetrics {
    metadata: MetricsMeta,
    #[serde(default)]
    containers: Vec<ContainerMetrics>,
}

#[derive(serde::Deserialize)]
struct MetricsMeta {
    name: Option<String>,
    namespace: Option<String>,
}

#[derive(serde::Deserialize)]
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

fn taint_effect(effect: &str, field: &str) -> Result<TaintEffect, ConvertError> {
    match effect {
        "NoSchedule" => Ok(TaintEffect::NoSchedule),
        "PreferNoSchedule" => Ok(TaintEffect::PreferNoSchedule),
        "NoExecute" => Ok(TaintEffect::NoExecute),
        other => Err(ConvertError::Enum {
            field: field.to_string(),
            value: other.to_string(),
        }),
    }
}

fn toleration(t: core::Toleration) -> Result<Toleration, ConvertError> {
    let effect = match t.effect.as_deref() {
        None | Some("") => None,
        Some(effect) => Some(taint_effect(effect, "spec.tolerations[].effect")?),
    };
    let exists = match t.operator.as_deref() {
        None | Some("") | Some("Equal") => false,
        Some("Exists") => true,
        Some(other) => {
            return Err(ConvertError::Enum {
                field: "spec.tolerations[].operator".to_string(),
                value: other.to_string(),
            });
        }
    };
    Ok(Toleration {
        key: t.key.filter(|k| !k.is_empty()),
        exists,
        value: t.value.unwrap_or_default(),
        effect,
    })
}

fn node_selector_term(term: core::NodeSelectorTerm) -> Result<NodeSelectorTerm, ConvertError> {
    let requirements = |list: Option<Vec<core::NodeSelectorRequirement>>| {
        list.unwrap_or_default()
            .into_iter()
            .map(|r| {
                let operator = match r.operator.as_str() {
                    "In" => NodeOperator::In,
                    "NotIn" => NodeOperator::NotIn,
                    "Exists" => NodeOperator::Exists,
                    "DoesNotExist" => NodeOperator::DoesNotExist,
                    "Gt" => NodeOperator::Gt,
                    "Lt" => NodeOperator::Lt,
                    other => {
                        return Err(ConvertError::Enum {
                            field: "nodeSelectorTerms[].operator".to_string(),
                            value: other.to_string(),
                        });
                    }
                };
                Ok(NodeRequirement {
                    key: r.key,
                    operator,
                    values: r.values.unwrap_or_default(),
                })
            })
            .collect::<Result<Vec<_>, _>>()
    };
    Ok(NodeSelectorTerm {
        expressions: requirements(term.match_expressions)?,
        fields: requirements(term.match_fields)?,
    })
}

/// Fold `matchLabelKeys` (and `mismatchLabelKeys`) into the selector with the owning pod's
/// values, as the scheduler does; keys the pod lacks are ignored.
fn with_label_keys(
    selector: Option<Requirements>,
    labels: &Labels,
    match_keys: Option<Vec<String>>,
    mismatch_keys: Option<Vec<String>>,
) -> Option<Requirements> {
    let mut selector = selector?;
    for key in match_keys.unwrap_or_default() {
        if let Some(value) = labels.get(&key) {
            selector.push(Expression::In(key, [value.to_string()].into()));
        }
    }
    for key in mismatch_keys.unwrap_or_default() {
        if let Some(value) = labels.get(&key) {
            selector.push(Expression::NotIn(key, [value.to_string()].into()));
        }
    }
    Some(selector)
}

fn affinity_term(
    term: core::PodAffinityTerm,
    labels: &Labels,
    field: &str,
) -> Result<AffinityTerm, ConvertError> {
    let label_selector = term
        .label_selector
        .map(|s| selector(s, field))
        .transpose()?;
    Ok(AffinityTerm {
        selector: with_label_keys(
            label_selector,
            labels,
            term.match_label_keys,
            term.mismatch_label_keys,
        ),
        namespaces: term.namespaces.unwrap_or_default(),
        namespace_selector: term
            .namespace_selector
            .map(|s| selector(s, field))
            .transpose()?,
        topology_key: term.topology_key,
    })
}

fn weighted_terms(
    terms: Option<Vec<core::WeightedPodAffinityTerm>>,
    labels: &Labels,
    field: &str,
) -> Result<Vec<WeightedAffinityTerm>, ConvertError> {
    terms
        .unwrap_or_default()
        .into_iter()
        .map(|weighted| {
            Ok(WeightedAffinityTerm {
                weight: weighted.weight,
                term: affinity_term(weighted.pod_affinity_term, labels, field)?,
            })
        })
        .collect()
}

fn spread_constraint(
    c: core::TopologySpreadConstraint,
    labels: &Labels,
) -> Result<SpreadConstraint, ConvertError> {
    let field = "spec.topologySpreadConstraints";
    let policy = |value: Option<String>, default_honor: bool, name: &str| match value.as_deref() {
        None | Some("") => Ok(default_honor),
        Some("Honor") => Ok(true),
        Some("Ignore") => Ok(false),
        Some(other) => Err(ConvertError::Enum {
            field: format!("{field}[].{name}"),
            value: other.to_string(),
        }),
    };
    let label_selector = c.label_selector.map(|s| selector(s, field)).transpose()?;
    Ok(SpreadConstraint {
        max_skew: c.max_skew,
        when_unsatisfiable: match c.when_unsatisfiable.as_str() {
            "DoNotSchedule" => WhenUnsatisfiable::DoNotSchedule,
            "ScheduleAnyway" => WhenUnsatisfiable::ScheduleAnyway,
            other => {
                return Err(ConvertError::Enum {
                    field: format!("{field}[].whenUnsatisfiable"),
                    value: other.to_string(),
                });
            }
        },
        selector: with_label_keys(label_selector, labels, c.match_label_keys, None),
        min_domains: c.min_domains,
        honor_node_affinity: policy(c.node_affinity_policy, true, "nodeAffinityPolicy")?,
        honor_node_taints: policy(c.node_taints_policy, false, "nodeTaintsPolicy")?,
        topology_key: c.topology_key,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn entry(manager: &str, operation: &str, keys: &[&str]) -> Value {
        let labels: serde_json::Map<String, Value> = keys
            .iter()
            .map(|key| (format!("f:{key}"), json!({})))
            .collect();
        json!({
            "manager": manager,
            "operation": operation,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": labels}, "f:spec": {"f:taints": {}}}
        })
    }

    /// A node named worker-a with the metadata fields given.
    fn named(mut metadata: Value) -> wire::Node {
        metadata["name"] = json!("worker-a");
        serde_json::from_value(json!({"metadata": metadata})).expect("a node")
    }

    #[test]
    fn only_keys_our_manager_applied_count_as_ours() {
        let converted = node(
            named(json!({
            "uid": "u-1",
            "managedFields": [
                entry(FIELD_MANAGER, "Apply", &["vsphere-descheduler.io/host"]),
                entry(FIELD_MANAGER, "Update", &["vsphere-descheduler.io/cluster"]),
                entry("kubelet", "Update", &["kubernetes.io/hostname"]),
                entry("other-tool", "Apply", &["example.com/zone"]),
            ]
            })),
            &mut Interner::default(),
        )
        .expect("converts");
        assert_eq!(converted.uid.as_deref(), Some("u-1"));
        assert_eq!(
            converted.applied_label_keys,
            BTreeSet::from(["vsphere-descheduler.io/host".to_string()])
        );
    }

    fn converted_pod(spec: Value, status: Value) -> Pod {
        let object = json!({"metadata": {"name": "web-1"}, "spec": spec, "status": status});
        let mut interner = Interner::default();
        pod(
            serde_json::from_value(object).expect("a pod"),
            &mut interner,
        )
        .expect("converts")
    }

    #[test]
    fn requests_add_native_sidecars_to_the_containers_and_take_the_largest_init_step() {
        let cpu = |amount: &str| json!({"requests": {"cpu": amount}});
        let converted = converted_pod(
            json!({
                "containers": [{"name": "main", "resources": cpu("500m")}],
                "initContainers": [
                    {"name": "migrate", "resources": cpu("200m")},
                    {"name": "proxy", "restartPolicy": "Always", "resources": cpu("1500m")},
                    {"name": "warm-up", "resources": cpu("1800m")}
                ],
                "overhead": {"cpu": "250m"}
            }),
            json!({}),
        );
        // Running: 500m + the sidecar's 1500m = 2000m. Warming up: 1800m beside the sidecar =
        // 3300m, the largest step. Plus 250m overhead. (Maxing the sidecar with the init
        // containers would give 1800m + 250m.)
        assert_eq!(converted.requests.get(&ResourceName::Cpu), 3550);
        assert_eq!(converted.requests.get(&ResourceName::Pods), 1000);

        let without_warm_up = converted_pod(
            json!({
                "containers": [{"name": "main", "resources": cpu("500m")}],
                "initContainers": [
                    {"name": "migrate", "resources": cpu("200m")},
                    {"name": "proxy", "restartPolicy": "Always", "resources": cpu("1500m")}
                ]
            }),
            json!({}),
        );
        assert_eq!(without_warm_up.requests.get(&ResourceName::Cpu), 2000);
    }

    #[test]
    fn a_pod_is_ready_only_with_a_ready_condition_that_is_true() {
        let ready = |conditions: Value| {
            converted_pod(json!({"containers": []}), json!({"conditions": conditions})).ready
        };
        assert!(ready(json!([{"type": "Ready", "status": "True"}])));
        assert!(!ready(json!([{"type": "Ready", "status": "False"}])));
        assert!(!ready(
            json!([{"type": "ContainersReady", "status": "True"}])
        ));
        assert!(!converted_pod(json!({"containers": []}), json!({})).ready);
    }

    #[test]
    fn conditions_keep_type_status_reason_and_transition_and_an_empty_reason_is_none() {
        let pod = converted_pod(
            json!({"containers": []}),
            json!({"conditions": [
                {"type": "Initialized", "status": "True", "reason": "PodCompleted",
                 "lastTransitionTime": "2026-11-20T08:00:09Z"},
                {"type": "Ready", "status": "False", "reason": ""}
            ]}),
        );
        let transition = chrono::DateTime::parse_from_rfc3339("2026-11-20T08:00:09Z")
            .expect("a time")
            .to_utc();
        assert_eq!(
            pod.conditions[..],
            [
                PodCondition {
                    condition_type: "Initialized".into(),
                    status: "True".into(),
                    reason: Some("PodCompleted".into()),
                    last_transition: Some(transition),
                },
                PodCondition {
                    condition_type: "Ready".into(),
                    status: "False".into(),
                    reason: None,
                    last_transition: None,
                },
            ]
        );
    }

    #[test]
    fn ephemeral_container_statuses_are_read_like_the_others() {
        let pod = converted_pod(
            json!({"containers": []}),
            json!({"ephemeralContainerStatuses": [
                {"name": "debugger", "restartCount": 0, "image": "busybox", "imageID": "",
                 "ready": false,
                 "state": {"terminated": {"exitCode": 130, "reason": "Error"}}}
            ]}),
        );
        assert_eq!(
            pod.ephemeral_container_statuses(),
            [ContainerStatus {
                restart_count: 0,
                waiting_reason: None,
                terminated: Some(Terminated {
                    reason: Some("Error".to_string()),
                    exit_code: 130,
                }),
            }]
        );
        assert!(pod.container_statuses().is_empty());
    }

    #[test]
    fn a_pdb_reads_its_generations_health_counts_and_policy_and_zero_when_absent() {
        let converted = |object: Value| pdb(serde_json::from_value(object).expect("a PDB"));
        let full = converted(json!({
            "metadata": {"name": "web", "namespace": "shop", "generation": 3},
            "spec": {"unhealthyPodEvictionPolicy": "AlwaysAllow"},
            "status": {"observedGeneration": 2, "disruptionsAllowed": 1, "currentHealthy": 3,
                       "desiredHealthy": 2, "expectedPods": 3,
                       "disruptedPods": {"web-0": "2026-11-21T08:59:30Z"}}
        }))
        .expect("converts");
        assert_eq!(
            (
                full.generation,
                full.observed_generation,
                full.disruptions_allowed
            ),
            (3, 2, 1)
        );
        assert_eq!(
            (
                full.current_healthy,
                full.desired_healthy,
                full.expected_pods,
                full.disrupted_pods
            ),
            (3, 2, 3, 1)
        );
        assert_eq!(
            full.unhealthy_pod_eviction_policy,
            UnhealthyPodEvictionPolicy::AlwaysAllow
        );
        let bare = converted(json!({"metadata": {"name": "web"}})).expect("converts");
        assert_eq!((bare.generation, bare.observed_generation), (0, 0));
        assert_eq!((bare.disruptions_allowed, bare.disrupted_pods), (0, 0));
        assert_eq!(
            bare.unhealthy_pod_eviction_policy,
            UnhealthyPodEvictionPolicy::IfHealthyBudget
        );
        let newer = converted(json!({"metadata": {"name": "web"},
                                     "spec": {"unhealthyPodEvictionPolicy": "Sometimes"}}))
        .expect("an unknown policy is not an error");
        assert_eq!(
            newer.unhealthy_pod_eviction_policy,
            UnhealthyPodEvictionPolicy::Unrecognised
        );
    }

    #[test]
    fn a_node_recorded_without_managed_fields_or_uid_has_neither() {
        let converted =
            node(named(json!({"uid": ""})), &mut Interner::default()).expect("converts");
        assert_eq!(converted.uid, None);
        assert!(converted.applied_label_keys.is_empty());
    }
}
