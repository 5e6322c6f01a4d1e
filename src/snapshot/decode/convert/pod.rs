//! A Pod → the planner's [`Pod`]: what the scheduler model and the evictor read (requests and
//! QoS, affinity, spread, tolerations, owners, volumes, state).

use std::sync::Arc;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use crate::snapshot::decode::wire;
use crate::snapshot::model::{
    AffinityTerm, ConfigSource, ContainerStatus, Interner, Labels, NodeSelectorTerm, Owner,
    OwnerKind, Phase, Pod, PodCondition, PodExtras, PreferredTerm, Qos, ResourceName, Resources,
    SpreadConstraint, Terminated, Toleration, WeightedAffinityTerm,
};

use super::scheduling::{
    affinity_term, node_selector_term, spread_constraint, toleration, weighted_terms,
};
use super::{ConvertError, resources, timestamp};

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
    let owners = owners(meta.owner_references.unwrap_or_default(), interner);

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
        owners,
        images: interner.share(images),
        requests,
        node_selector: interner.labels(spec.node_selector),
        anti_affinity: interner.share(anti_affinity),
        spread_constraints: interner.share(spread_constraints),
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
fn owners(references: Vec<OwnerReference>, interner: &mut Interner) -> Arc<[Owner]> {
    let owners = references
        .into_iter()
        .map(|o| Owner {
            kind: OwnerKind::known(&o.kind)
                .unwrap_or_else(|| OwnerKind::Other(interner.intern(o.kind))),
            name: interner.intern(o.name),
            uid: interner.intern(o.uid),
            controller: o.controller.unwrap_or(false),
        })
        .collect();
    interner.share(owners)
}

/// A pod's lists at their exact size. `collect` from a consumed vector reuses its allocation,
/// sized for the API's larger items (an owner reference, a container): kept, that would be
/// about 1 kB of unused memory per pod. (The pod's own lists are boxed or shared slices,
/// exact already.)
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

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

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
}
