//! The Eviction subresource, the graceful pod deletion it ends in, and the
//! disruption controller's budget arithmetic that the fake runs after every pod change
//! (unless `pdb_controller_frozen`).
//!
//! `expectedPods` is the disruption controller's: the number of selected pods for
//! `minAvailable: N`, otherwise the replicas of the selected pods' controllers (a Deployment's
//! through its ReplicaSet), each controller once. A controller that cannot be found fails the
//! sync, and the controller's fail-safe leaves the budget at 0 with condition `SyncFailed`.

use std::sync::Arc;

use axum::response::Response;
use k8s_openapi::api::core::v1::{Pod, PodCondition};
use k8s_openapi::api::policy::v1::PodDisruptionBudgetStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, OwnerReference, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::core::{Selector, SelectorExt};
use serde_json::{Value, json};

use super::{FakeCluster, ReceivedEviction, Request, not_found, now, status, success};

/// A disrupted pod counts as unhealthy this long (the controller's `DeletionTimeout`).
const DELETION_TIMEOUT_SECONDS: i64 = 120;
const BLOCKED: &str = "Cannot evict pod as it would violate the pod's disruption budget.";

/// The client's delete options, from the camelCase `deleteOptions` only (kube's
/// `delete_options` is dropped by the real server, so it is here).
#[derive(Default)]
struct DeleteOptions {
    grace_period_seconds: Option<i64>,
    uid: Option<String>,
    resource_version: Option<String>,
    dry_run: bool,
}

/// `POST /api/v1/namespaces/{ns}/pods/{name}/eviction`, in the real handler's order.
pub fn evict(
    cluster: &mut FakeCluster,
    request: &Request,
    namespace: &str,
    name: &str,
) -> Response {
    // 1. Decode and validate.
    let body: Value = match serde_json::from_slice(&request.body) {
        Ok(body) => body,
        Err(error) => {
            return status(
                400,
                "BadRequest",
                &format!("invalid Eviction: {error}"),
                None,
            );
        }
    };
    if let Some(version) = body.get("apiVersion").and_then(Value::as_str)
        && version != "policy/v1"
        && version != "policy/v1beta1"
    {
        return status(
            400,
            "BadRequest",
            &format!(
                "the API version in the data ({version}) does not match the expected API version (policy/v1)"
            ),
            None,
        );
    }
    let metadata = body.get("metadata").cloned().unwrap_or(Value::Null);
    if metadata.get("name").and_then(Value::as_str) != Some(name) {
        return status(
            400,
            "BadRequest",
            "name in URL does not match name in Eviction object",
            None,
        );
    }
    if let Some(body_namespace) = metadata.get("namespace").and_then(Value::as_str)
        && !body_namespace.is_empty()
        && body_namespace != namespace
    {
        return status(
            400,
            "BadRequest",
            "the namespace of the provided object does not match the namespace sent on the request",
            None,
        );
    }
    let raw = body.get("deleteOptions").cloned().unwrap_or(Value::Null);
    if raw.get("ignoreStoreReadErrorWithClusterBreakingPotential") == Some(&json!(true)) {
        return status(
            422,
            "Invalid",
            "deleteOptions.ignoreStoreReadErrorWithClusterBreakingPotential: Invalid value: true: can not be set for pod eviction, try after removing the option",
            None,
        );
    }
    let body_dry_run: Option<Vec<String>> = raw
        .get("dryRun")
        .and_then(|v| serde_json::from_value(v.clone()).ok());
    let query_dry_run: Option<Vec<String>> = request.param("dryRun").map(|v| vec![v.to_string()]);
    let dry_run = match (&query_dry_run, &body_dry_run) {
        (Some(query), Some(body)) if query != body => {
            return status(
                500,
                "",
                &format!(
                    "Non-matching dry-run options in request and content: {query:?} and {body:?}"
                ),
                None,
            );
        }
        (query, body) => query
            .as_ref()
            .or(body.as_ref())
            .is_some_and(|v| v.iter().any(|x| x == "All")),
    };
    let options = DeleteOptions {
        grace_period_seconds: raw.get("gracePeriodSeconds").and_then(Value::as_i64),
        uid: raw
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
            .map(str::to_string),
        resource_version: raw
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_string),
        dry_run,
    };
    let annotations = metadata
        .get("annotations")
        .and_then(|a| serde_json::from_value(a.clone()).ok())
        .unwrap_or_default();
    cluster.evictions.push(ReceivedEviction {
        namespace: namespace.to_string(),
        name: name.to_string(),
        dry_run,
        annotations,
    });

    // 2. The pod.
    let key = (namespace.to_string(), name.to_string());
    let Some(pod) = cluster.pods.get(&key).cloned() else {
        return not_found("pods", "", name);
    };

    // 3. Pods that skip the budget.
    let phase = pod
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Pending");
    if matches!(phase, "Pending" | "Succeeded" | "Failed")
        || pod.metadata.deletion_timestamp.is_some()
    {
        return delete_pod(cluster, &key, &options);
    }

    // 4.–5. The budgets that select it.
    let budgets = matching_pdbs(cluster, &pod);
    let pdb_key = match budgets.as_slice() {
        [] => return delete_pod(cluster, &key, &options),
        [one] => one.clone(),
        _ => {
            return status(
                500,
                "",
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
                None,
            );
        }
    };
    let pdb = cluster.pdbs[&pdb_key].clone();
    let pdb_name = pdb_key.1.clone();
    let pdb_status = pdb.status.clone().unwrap_or_default();

    // 7. An unready pod may go without spending the budget.
    if !is_ready(&pod) {
        let always = pdb
            .spec
            .as_ref()
            .and_then(|s| s.unhealthy_pod_eviction_policy.as_deref())
            == Some("AlwaysAllow");
        if always
            || (pdb_status.current_healthy >= pdb_status.desired_healthy
                && pdb_status.desired_healthy > 0)
        {
            return delete_pod(cluster, &key, &options);
        }
    }

    // 8. Check and spend the budget.
    let cause =
        |message: String| json!({"causes": [{"reason": "DisruptionBudget", "message": message}]});
    let generation = pdb.metadata.generation.unwrap_or(0);
    if pdb_status.observed_generation.unwrap_or(0) < generation {
        let mut details = cause(format!(
            "The disruption budget {pdb_name} is still being processed by the server."
        ));
        details["retryAfterSeconds"] = json!(10);
        return status(429, "TooManyRequests", BLOCKED, Some(details));
    }
    let forbidden = |problem: &str| {
        status(
            403,
            "Forbidden",
            &format!("poddisruptionbudget.policy \"{pdb_name}\" is forbidden: {problem}"),
            Some(json!({"name": pdb_name, "group": "policy", "kind": "poddisruptionbudget"})),
        )
    };
    if pdb_status.disruptions_allowed < 0 {
        return forbidden("pdb disruptions allowed is negative");
    }
    if pdb_status
        .disrupted_pods
        .as_ref()
        .is_some_and(|d| d.len() > 2000)
    {
        return forbidden(
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        );
    }
    if pdb_status.disruptions_allowed == 0 {
        return status(
            429,
            "TooManyRequests",
            BLOCKED,
            Some(cause(format!(
                "The disruption budget {pdb_name} needs {} healthy pods and has {} currently",
                pdb_status.desired_healthy, pdb_status.current_healthy
            ))),
        );
    }
    if !options.dry_run {
        let revision = cluster.bump();
        let stored = Arc::make_mut(cluster.pdbs.get_mut(&pdb_key).expect("the PDB exists"));
        let status = stored.status.get_or_insert_with(Default::default);
        status.disruptions_allowed -= 1;
        if status.disruptions_allowed == 0 {
            let observed = status.observed_generation;
            set_condition(status, "False", "InsufficientPods", observed);
        }
        status
            .disrupted_pods
            .get_or_insert_with(Default::default)
            .insert(name.to_string(), Time(now()));
        stored.metadata.resource_version = Some(revision);
    }
    // 9.–10. Delete with the client's options.
    delete_pod(cluster, &key, &options)
}

/// The pod's `Ready` condition is `True`.
fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        })
}

/// PDBs of the pod's namespace whose selector matches it: `{}` matches every pod, no selector
/// (or an invalid one) none.
fn matching_pdbs(cluster: &FakeCluster, pod: &Pod) -> Vec<(String, String)> {
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    cluster
        .pdbs
        .iter()
        .filter(|((ns, _), _)| *ns == namespace)
        .filter(|(_, pdb)| {
            pdb.spec
                .as_ref()
                .and_then(|s| s.selector.clone())
                .and_then(|selector| Selector::try_from(selector).ok())
                .is_some_and(|selector| selector.matches(&labels))
        })
        .map(|(key, _)| key.clone())
        .collect()
}

/// The graceful pod delete an eviction ends in.
fn delete_pod(
    cluster: &mut FakeCluster,
    key: &(String, String),
    options: &DeleteOptions,
) -> Response {
    let pod = cluster.pods[key].clone();
    let name = &key.1;
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let version = pod.metadata.resource_version.clone().unwrap_or_default();
    let precondition_failed = |what: &str, wanted: &str, actual: &str| {
        let message = if options.dry_run {
            format!(
                "Operation cannot be fulfilled on pods \"{name}\": Precondition failed: {what} in precondition: {wanted}, {what} in object meta: {actual}"
            )
        } else if what == "UID" {
            format!(
                "Operation cannot be fulfilled on Pod \"{name}\": the UID in the precondition ({wanted}) does not match the UID in record ({actual}). The object might have been deleted and then recreated"
            )
        } else {
            format!(
                "Operation cannot be fulfilled on Pod \"{name}\": the ResourceVersion in the precondition ({wanted}) does not match the ResourceVersion in record ({actual}). The object might have been modified"
            )
        };
        let kind = if options.dry_run { "pods" } else { "Pod" };
        status(
            409,
            "Conflict",
            &message,
            Some(json!({"name": name, "kind": kind})),
        )
    };
    if let Some(wanted) = &options.uid
        && *wanted != uid
    {
        return precondition_failed("UID", wanted, &uid);
    }
    if let Some(wanted) = &options.resource_version
        && *wanted != version
    {
        return precondition_failed("ResourceVersion", wanted, &version);
    }
    if options.dry_run {
        return success(201);
    }
    let spec = pod.spec.clone().unwrap_or_default();
    let phase = pod
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Pending");
    let mut grace = options
        .grace_period_seconds
        .or(spec.termination_grace_period_seconds)
        .unwrap_or(30);
    if spec.node_name.as_deref().unwrap_or_default().is_empty()
        || matches!(phase, "Succeeded" | "Failed")
    {
        grace = 0;
    }
    if grace < 0 {
        grace = 1;
    }
    let revision = cluster.bump();
    if grace == 0 || cluster.kubelet_finishes_terminations {
        let removed = cluster.pods.remove(key).expect("the pod exists");
        cluster.pod_changed(&removed);
        return success(201);
    }
    let stored = Arc::make_mut(cluster.pods.get_mut(key).expect("the pod exists"));
    let status = stored.status.get_or_insert_with(Default::default);
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    if !conditions.iter().any(|c| c.type_ == "DisruptionTarget") {
        conditions.push(PodCondition {
            type_: "DisruptionTarget".to_string(),
            status: "True".to_string(),
            reason: Some("EvictionByEvictionAPI".to_string()),
            message: Some("Eviction API: evicting".to_string()),
            last_transition_time: Some(Time(now())),
            ..PodCondition::default()
        });
    }
    let deadline = now()
        .checked_add(k8s_openapi::jiff::SignedDuration::from_secs(grace))
        .expect("a representable deadline");
    // A second eviction may shorten the deadline, never lengthen it.
    let earlier = stored
        .metadata
        .deletion_timestamp
        .as_ref()
        .is_none_or(|t| deadline < t.0);
    if earlier {
        stored.metadata.deletion_timestamp = Some(Time(deadline));
        stored.metadata.deletion_grace_period_seconds = Some(grace);
    }
    stored.metadata.resource_version = Some(revision);
    let changed = stored.clone();
    cluster.pod_changed(&changed);
    success(201)
}

fn set_condition(
    status: &mut PodDisruptionBudgetStatus,
    value: &str,
    reason: &str,
    observed: Option<i64>,
) {
    set_condition_saying(status, value, reason, "", observed);
}

/// Sets `DisruptionAllowed`, with a message (the controller's sync error).
fn set_condition_saying(
    status: &mut PodDisruptionBudgetStatus,
    value: &str,
    reason: &str,
    message: &str,
    observed: Option<i64>,
) {
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    let existing = conditions
        .iter_mut()
        .find(|c| c.type_ == "DisruptionAllowed");
    match existing {
        Some(condition) => {
            if condition.status != value {
                condition.last_transition_time = Time(now());
            }
            condition.status = value.to_string();
            condition.reason = reason.to_string();
            condition.message = message.to_string();
            condition.observed_generation = observed;
        }
        None => conditions.push(Condition {
            type_: "DisruptionAllowed".to_string(),
            status: value.to_string(),
            reason: reason.to_string(),
            message: message.to_string(),
            observed_generation: observed,
            last_transition_time: Time(now()),
        }),
    }
}

impl FakeCluster {
    /// A pod was added, changed or removed: the disruption controller re-syncs the budgets that
    /// select it.
    pub(super) fn pod_changed(&mut self, pod: &Pod) {
        if self.pdb_controller_frozen {
            return;
        }
        for key in matching_pdbs(self, pod) {
            self.reconcile_pdb(&key);
        }
    }

    /// Re-syncs every budget (a controller tick).
    pub fn reconcile_pdbs(&mut self) {
        let keys: Vec<(String, String)> = self.pdbs.keys().cloned().collect();
        for key in keys {
            self.reconcile_pdb(&key);
        }
    }

    /// The disruption controller's sync of one budget.
    pub(super) fn reconcile_pdb(&mut self, key: &(String, String)) {
        let Some(pdb) = self.pdbs.get(key).cloned() else {
            return;
        };
        let spec = pdb.spec.clone().unwrap_or_default();
        let selector = spec
            .selector
            .clone()
            .and_then(|s| Selector::try_from(s).ok());
        let selected: Vec<&Arc<Pod>> = self
            .pods
            .iter()
            .filter(|((ns, _), _)| *ns == key.0)
            .map(|(_, pod)| pod)
            .filter(|pod| {
                selector
                    .as_ref()
                    .is_some_and(|s| s.matches(&pod.metadata.labels.clone().unwrap_or_default()))
            })
            .collect();
        let percent = |value: &str, of: i32| -> i32 {
            let p: i64 = value.trim_end_matches('%').parse().unwrap_or(0);
            ((p * i64::from(of) + 99) / 100) as i32
        };
        let scale = || self.expected_scale(&key.0, &selected);
        let counted = match (&spec.min_available, &spec.max_unavailable) {
            (Some(IntOrString::Int(n)), _) => Ok((selected.len() as i32, *n)),
            (Some(IntOrString::String(p)), _) => scale().map(|e| (e, percent(p, e))),
            (None, Some(IntOrString::Int(n))) => scale().map(|e| (e, (e - n).max(0))),
            (None, Some(IntOrString::String(p))) => {
                scale().map(|e| (e, (e - percent(p, e)).max(0)))
            }
            (None, None) => Ok((0, 0)),
        };
        let (expected, desired) = match counted {
            Ok(counted) => counted,
            Err(message) => return self.fail_safe(key, &message),
        };
        let previous = pdb.status.clone().unwrap_or_default();
        let current_time = now();
        let recent =
            |time: &Time| current_time.as_second() - time.0.as_second() < DELETION_TIMEOUT_SECONDS;
        let disrupted: std::collections::BTreeMap<String, Time> = previous
            .disrupted_pods
            .clone()
            .unwrap_or_default()
            .into_iter()
            .filter(|(pod, time)| {
                recent(time)
                    && selected.iter().any(|p| {
                        p.metadata.name.as_deref() == Some(pod.as_str())
                            && p.metadata.deletion_timestamp.is_none()
                    })
            })
            .collect();
        let healthy = selected
            .iter()
            .filter(|pod| {
                pod.metadata.deletion_timestamp.is_none()
                    && !disrupted.contains_key(pod.metadata.name.as_deref().unwrap_or_default())
                    && is_ready(pod)
            })
            .count() as i32;
        let allowed = if expected <= 0 {
            0
        } else {
            (healthy - desired).max(0)
        };
        let generation = pdb.metadata.generation.unwrap_or(1);
        let mut status = PodDisruptionBudgetStatus {
            conditions: previous.conditions.clone(),
            current_healthy: healthy,
            desired_healthy: desired,
            disrupted_pods: (!disrupted.is_empty()).then_some(disrupted),
            disruptions_allowed: allowed,
            expected_pods: expected,
            observed_generation: Some(generation),
        };
        if allowed > 0 {
            set_condition(&mut status, "True", "SufficientPods", Some(generation));
        } else {
            set_condition(&mut status, "False", "InsufficientPods", Some(generation));
        }
        self.write_pdb_status(key, status);
    }

    /// The controller's fail-safe for a sync error: the old status with no disruption allowed
    /// and condition `SyncFailed`; `observedGeneration` is not advanced.
    fn fail_safe(&mut self, key: &(String, String), message: &str) {
        let Some(pdb) = self.pdbs.get(key) else {
            return;
        };
        let mut status = pdb.status.clone().unwrap_or_default();
        status.disruptions_allowed = 0;
        let observed = status.observed_generation;
        set_condition_saying(&mut status, "False", "SyncFailed", message, observed);
        self.write_pdb_status(key, status);
    }

    /// Stores a PDB's status; the revision changes only when the status does.
    fn write_pdb_status(&mut self, key: &(String, String), status: PodDisruptionBudgetStatus) {
        if self.pdbs.get(key).and_then(|pdb| pdb.status.as_ref()) == Some(&status) {
            return;
        }
        let revision = self.bump();
        let stored = Arc::make_mut(self.pdbs.get_mut(key).expect("the PDB exists"));
        stored.status = Some(status);
        stored.metadata.resource_version = Some(revision);
    }

    /// The sum of the replicas of the selected pods' controllers, each controller once; pods
    /// without a controller are skipped (the controller warns `UnmanagedPods`). Errs, as the
    /// controller does, when a pod's controller cannot be found.
    fn expected_scale(&self, namespace: &str, pods: &[&Arc<Pod>]) -> Result<i32, String> {
        let mut controllers: std::collections::BTreeMap<String, i32> = Default::default();
        for pod in pods {
            let Some(reference) = controller_of(&pod.metadata) else {
                continue;
            };
            let found = self.controller_scale(namespace, reference).ok_or_else(|| {
                format!(
                    "found no controllers for pod {:?}",
                    pod.metadata.name.as_deref().unwrap_or_default()
                )
            })?;
            controllers.insert(found.0, found.1);
        }
        Ok(controllers.values().sum())
    }

    /// The controller a pod's controller reference stands for, as the disruption controller's
    /// finders resolve it: a ReplicaSet owned by a Deployment counts as the Deployment, a bare
    /// ReplicaSet, StatefulSet or ReplicationController as itself; (uid, replicas).
    fn controller_scale(
        &self,
        namespace: &str,
        reference: &OwnerReference,
    ) -> Option<(String, i32)> {
        let resolve = |kind: &str, reference: &OwnerReference| {
            self.workloads
                .get(&(
                    namespace.to_string(),
                    kind.to_string(),
                    reference.name.clone(),
                ))
                .filter(|w| w.metadata.uid.as_deref() == Some(reference.uid.as_str()))
        };
        let workload = match reference.kind.as_str() {
            "ReplicaSet" => {
                let replica_set = resolve("ReplicaSet", reference)?;
                match controller_of(&replica_set.metadata) {
                    Some(owner) if owner.kind == "Deployment" => resolve("Deployment", owner)?,
                    _ => replica_set,
                }
            }
            kind @ ("StatefulSet" | "ReplicationController") => resolve(kind, reference)?,
            // Other kinds count through `/scale`, which the fake does not model.
            _ => return None,
        };
        Some((workload.metadata.uid.clone()?, workload.replicas))
    }
}

/// The `controller: true` owner reference.
fn controller_of(metadata: &ObjectMeta) -> Option<&OwnerReference> {
    metadata
        .owner_references
        .iter()
        .flatten()
        .find(|reference| reference.controller == Some(true))
}
