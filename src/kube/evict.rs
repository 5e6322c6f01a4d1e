//! Evictions through the `policy/v1` Eviction subresource.
//!
//! The Eviction is built by hand and sent with `create_subresource`: kube's own `evict()` puts
//! its delete options under a key the API server drops, so the policy's grace period and our
//! uid precondition would never arrive. The answer is classified, not retried: 201 evicted (or,
//! on a dry run, would be), 429 with a DisruptionBudget cause blocked by a PDB, 404 (or a uid
//! precondition conflict) gone already, anything else failed with the server's message.
//!
//! Every Eviction says who asked for it and why, in annotations of its own (the Eviction's, not
//! the pod's: the API server passes them to admission webhooks and writes them to the audit log,
//! and keeps nothing of them). The requester and the reason are under upstream descheduler's
//! keys (`requested-by`, `reason: "triggered by <profile>/<strategy>: <reason>"`, as upstream
//! sends since v0.34), so a webhook written for upstream reads ours; the strategy and profile
//! are also under this tool's own keys, for webhooks that match on them. A webhook can then tell
//! our evictions from a drain's, and explain or rank them.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::Eviction;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{DeleteOptions, ObjectMeta, Preconditions};
use kube::api::{Api, PostParams};
use kube::core::Status;

use super::{Client, describe};
use crate::cause::{Cause, Failure};
use crate::text;

/// Who asks for every eviction this tool sends ([`REQUESTED_BY`]); upstream sends
/// `sigs.k8s.io/descheduler`, so a webhook tells the two apart.
pub const REQUESTER: &str = "vsphere-descheduler";
/// The annotation naming who asked for the eviction (upstream's key): always [`REQUESTER`].
pub const REQUESTED_BY: &str = "requested-by";
/// The annotation with why (upstream's key and form): `triggered by <profile>/<strategy>:
/// <the report's reason>`, at most [`MAX_REASON`] characters (a longer one loses its middle).
pub const REASON: &str = "reason";
/// The annotation naming the strategy (plugin) that chose the pod.
pub const STRATEGY: &str = "vsphere-descheduler.io/strategy";
/// The annotation naming the policy profile the strategy ran in.
pub const PROFILE: &str = "vsphere-descheduler.io/profile";
/// The most characters of the reason an Eviction carries: enough for the rule and the pods it
/// names, far below what an object's annotations may hold (256 KiB).
pub const MAX_REASON: usize = 1000;

/// One pod to evict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvictionRequest<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    /// The uid the pod had when planned: a pod recreated under the same name is not evicted.
    pub uid: Option<&'a str>,
    /// `deleteOptions.gracePeriodSeconds`; the pod's own when `None`.
    pub grace_period_seconds: Option<i64>,
    /// Ask the server to check without acting (`dryRun=All`).
    pub dry_run: bool,
    /// The strategy (plugin) that chose the pod.
    pub strategy: &'a str,
    /// The policy profile the strategy ran in.
    pub profile: &'a str,
    /// Why, in words (the report's `reason`).
    pub reason: &'a str,
}

impl EvictionRequest<'_> {
    /// The Eviction object the server receives.
    pub fn body(&self) -> Eviction {
        Eviction {
            metadata: ObjectMeta {
                name: Some(self.name.to_string()),
                namespace: Some(self.namespace.to_string()),
                annotations: Some(self.annotations()),
                ..ObjectMeta::default()
            },
            delete_options: Some(DeleteOptions {
                grace_period_seconds: self.grace_period_seconds,
                preconditions: self.uid.map(|uid| Preconditions {
                    uid: Some(uid.to_string()),
                    resource_version: None,
                }),
                dry_run: self.dry_run.then(|| vec!["All".to_string()]),
                ..DeleteOptions::default()
            }),
        }
    }
}

impl EvictionRequest<'_> {
    /// Who asked and why (see the module docs).
    pub fn annotations(&self) -> BTreeMap<String, String> {
        let triggered = format!(
            "triggered by {}/{}: {}",
            self.profile, self.strategy, self.reason
        );
        let reason = text::one_line_within(&triggered, MAX_REASON);
        [
            (REQUESTED_BY, REQUESTER),
            (REASON, &*reason),
            (STRATEGY, self.strategy),
            (PROFILE, self.profile),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect()
    }
}

/// What became of an eviction request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EvictionResult {
    /// 201: the pod is being deleted.
    Evicted,
    /// 201 on a dry run: the server would evict it now.
    WouldEvict,
    /// A PodDisruptionBudget refuses it now (429, or 403 for a broken budget); the message says
    /// which and why.
    Blocked(Failure),
    /// The pod is not there any more (404), or was replaced by another of the same name.
    Gone(Failure),
    /// Anything else, with the server's message or the transport problem.
    Failed(Failure),
}

impl Client {
    /// Sends one eviction and classifies the answer. Never retried: a refusal is recorded and
    /// the next run looks again.
    pub async fn evict(&self, request: &EvictionRequest<'_>) -> EvictionResult {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), request.namespace);
        let params = PostParams {
            dry_run: request.dry_run,
            ..PostParams::default()
        };
        let answer = pods
            .create_subresource::<_, Status>("eviction", request.name, &params, &request.body())
            .await;
        classify(answer, request.dry_run)
    }
}

/// The meaning of the server's answer to an eviction.
pub fn classify(answer: Result<Status, ::kube::Error>, dry_run: bool) -> EvictionResult {
    let error = match answer {
        Ok(_) if dry_run => return EvictionResult::WouldEvict,
        Ok(_) => return EvictionResult::Evicted,
        Err(error) => error,
    };
    let ::kube::Error::Api(status) = &error else {
        return EvictionResult::Failed(failure(&error));
    };
    let budget_cause = status
        .details
        .iter()
        .flat_map(|details| &details.causes)
        .find(|cause| cause.reason == "DisruptionBudget")
        .map(|cause| cause.message.clone());
    let budget_details = status
        .details
        .as_ref()
        .is_some_and(|details| details.kind == "poddisruptionbudget");
    match status.code {
        429 if budget_cause.is_some() => {
            let mut message = budget_cause.unwrap_or_default();
            if let Some(seconds) = status
                .details
                .as_ref()
                .map(|details| details.retry_after_seconds)
                .filter(|seconds| *seconds > 0)
            {
                message.push_str(&format!(" (the server asks to retry after {seconds}s)"));
            }
            EvictionResult::Blocked(Failure::new(Cause::TooManyRequests, message))
        }
        403 if budget_details || budget_cause.is_some() => EvictionResult::Blocked(Failure::new(
            Cause::Forbidden,
            budget_cause.unwrap_or_else(|| status.message.clone()),
        )),
        404 => EvictionResult::Gone(Failure::new(Cause::NotFound, "the pod no longer exists")),
        // We send only a uid precondition, so a conflict on the pod itself means its uid
        // changed: another pod of the same name. (A conflict on the PDB's status names the PDB.)
        409 if conflict_on_pod(status) => EvictionResult::Gone(Failure::new(
            Cause::Conflict,
            "the pod was replaced by another of the same name since it was planned",
        )),
        _ => EvictionResult::Failed(failure(&error)),
    }
}

/// A failed eviction's kind, and the answer in one line.
fn failure(error: &::kube::Error) -> Failure {
    Failure::new(Cause::of_kube_client(error), describe(error))
}

/// Whether a 409 is about the pod (`details.kind` `Pod` or `pods`, as the server names it).
fn conflict_on_pod(status: &::kube::core::Status) -> bool {
    status
        .details
        .as_ref()
        .is_some_and(|details| matches!(details.kind.as_str(), "Pod" | "pods"))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    /// The answer kube gives for an error body exactly as the API server sends it.
    fn answer(body: Value) -> Result<Status, ::kube::Error> {
        let status: Status = serde_json::from_value(body).expect("a Status body");
        Err(::kube::Error::Api(Box::new(status)))
    }

    #[test]
    fn created_means_evicted_or_on_a_dry_run_would_be() {
        let success: Status = serde_json::from_value(
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
        )
        .expect("a Status body");
        assert_eq!(
            classify(Ok(success.clone()), false),
            EvictionResult::Evicted
        );
        assert_eq!(classify(Ok(success), true), EvictionResult::WouldEvict);
    }

    #[test]
    fn a_pdb_refusal_is_blocked_with_the_budgets_words() {
        let body = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Cannot evict pod as it would violate the pod's disruption budget.",
            "reason": "TooManyRequests",
            "details": {"causes": [{"reason": "DisruptionBudget",
                "message": "The disruption budget web needs 2 healthy pods and has 2 currently"}]},
            "code": 429
        });
        assert_eq!(
            classify(answer(body), false),
            EvictionResult::Blocked(Failure::new(
                Cause::TooManyRequests,
                "The disruption budget web needs 2 healthy pods and has 2 currently"
            ))
        );
    }

    #[test]
    fn a_stale_pdb_is_blocked_and_says_when_to_look_again() {
        let body = json!({
            "status": "Failure", "reason": "TooManyRequests", "code": 429,
            "message": "Cannot evict pod as it would violate the pod's disruption budget.",
            "details": {"retryAfterSeconds": 10, "causes": [{"reason": "DisruptionBudget",
                "message": "The disruption budget web is still being processed by the server."}]}
        });
        let EvictionResult::Blocked(message) = classify(answer(body), false) else {
            panic!("blocked");
        };
        assert!(
            message
                .text
                .ends_with("(the server asks to retry after 10s)"),
            "{message}"
        );
    }

    #[test]
    fn throttling_without_a_budget_cause_is_a_failure() {
        let body = json!({"status": "Failure", "reason": "TooManyRequests", "code": 429,
            "message": "too many requests, please try again later",
            "details": {"retryAfterSeconds": 1}});
        assert_eq!(
            classify(answer(body), false),
            EvictionResult::Failed(Failure::new(
                Cause::TooManyRequests,
                "HTTP 429 TooManyRequests: too many requests, please try again later"
            ))
        );
    }

    #[test]
    fn several_pdbs_fail_with_the_servers_message() {
        let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
            "code": 500});
        assert_eq!(
            classify(answer(body), false),
            EvictionResult::Failed(Failure::new(
                Cause::ServerError,
                "HTTP 500: This pod has more than one PodDisruptionBudget, which the eviction \
                 subresource does not support."
            ))
        );
    }

    #[test]
    fn a_missing_or_replaced_pod_is_gone() {
        let missing = json!({"status": "Failure", "reason": "NotFound", "code": 404,
            "message": "pods \"web-1\" not found", "details": {"name": "web-1", "kind": "pods"}});
        assert!(matches!(
            classify(answer(missing), false),
            EvictionResult::Gone(_)
        ));
        let replaced = json!({"status": "Failure", "reason": "Conflict", "code": 409,
            "message": "Operation cannot be fulfilled on Pod \"web-1\": the UID in the precondition (a) does not match the UID in record (b). The object might have been deleted and then recreated",
            "details": {"name": "web-1", "kind": "Pod"}});
        assert!(matches!(
            classify(answer(replaced), false),
            EvictionResult::Gone(_)
        ));
        // The storage layer's wording of the same conflict.
        let replaced = json!({"status": "Failure", "reason": "Conflict", "code": 409,
            "message": "Operation cannot be fulfilled on pods \"web-1\": Precondition failed: UID in precondition: a, UID in object meta: b",
            "details": {"name": "web-1", "kind": "pods"}});
        assert!(matches!(
            classify(answer(replaced), false),
            EvictionResult::Gone(_)
        ));
    }

    #[test]
    fn a_conflict_on_the_budget_fails_whatever_its_message_says() {
        let conflict = json!({"status": "Failure", "reason": "Conflict", "code": 409,
            "message": "Operation cannot be fulfilled on poddisruptionbudgets.policy \"web\" (UID web-uid): the object has been modified; please apply your changes to the latest version and try again",
            "details": {"name": "web", "group": "policy", "kind": "poddisruptionbudgets"}});
        assert!(matches!(
            classify(answer(conflict), false),
            EvictionResult::Failed(_)
        ));
    }

    #[test]
    fn a_negative_budget_is_blocked_but_a_missing_permission_fails() {
        let negative = json!({"status": "Failure", "reason": "Forbidden", "code": 403,
            "message": "poddisruptionbudget.policy \"web\" is forbidden: pdb disruptions allowed is negative",
            "details": {"name": "web", "group": "policy", "kind": "poddisruptionbudget"}});
        assert!(matches!(
            classify(answer(negative), false),
            EvictionResult::Blocked(_)
        ));
        let rbac = json!({"status": "Failure", "reason": "Forbidden", "code": 403,
            "message": "pods \"web-1\" is forbidden: User \"x\" cannot create resource \"pods/eviction\"",
            "details": {"name": "web-1", "kind": "pods"}});
        assert!(matches!(
            classify(answer(rbac), false),
            EvictionResult::Failed(_)
        ));
    }

    #[test]
    fn the_eviction_carries_grace_period_uid_and_dry_run_under_delete_options() {
        let request = EvictionRequest {
            namespace: "shop",
            name: "web-1",
            uid: Some("u-1"),
            grace_period_seconds: Some(5),
            dry_run: true,
            strategy: "RemovePodsViolatingInterPodAntiAffinity",
            profile: "host-availability",
            reason: "shares ESXi host esxi-41 with shop/web-2",
        };
        let body = serde_json::to_value(request.body()).expect("serialises");
        assert_eq!(
            body,
            json!({
                "apiVersion": "policy/v1",
                "kind": "Eviction",
                "metadata": {"name": "web-1", "namespace": "shop", "annotations": {
                    "requested-by": "vsphere-descheduler",
                    "reason": "triggered by host-availability/RemovePodsViolatingInterPodAntiAffinity: shares ESXi host esxi-41 with shop/web-2",
                    "vsphere-descheduler.io/strategy": "RemovePodsViolatingInterPodAntiAffinity",
                    "vsphere-descheduler.io/profile": "host-availability"
                }},
                "deleteOptions": {
                    "gracePeriodSeconds": 5,
                    "preconditions": {"uid": "u-1"},
                    "dryRun": ["All"]
                }
            })
        );
    }

    #[test]
    fn a_long_reason_keeps_its_start_and_end_on_one_line() {
        let reason = format!("violates {}\nrule end", "x".repeat(3000));
        let request = EvictionRequest {
            namespace: "shop",
            name: "web-1",
            uid: None,
            grace_period_seconds: None,
            dry_run: false,
            strategy: "RemovePodsViolatingTopologySpreadConstraint",
            profile: "p",
            reason: &reason,
        };
        let annotations = request.annotations();
        let kept = &annotations[REASON];
        assert!(kept.chars().count() <= MAX_REASON, "{kept}");
        assert!(
            kept.starts_with(
                "triggered by p/RemovePodsViolatingTopologySpreadConstraint: violates xxx"
            ) && kept.ends_with("rule end"),
            "{kept}"
        );
        assert!(!kept.contains('\n'), "{kept}");
        assert_eq!(annotations[REQUESTED_BY], REQUESTER);
    }
}
