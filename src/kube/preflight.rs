//! What `check` asks the API server, none of which changes anything: whether this client's
//! identity may make each call of the call list (a `SelfSubjectAccessReview` each), a node to
//! try a label write on, and that write sent as a dry run (`dryRun=All`), which is authorized,
//! validated and admitted as a real one, and stores nothing.

use std::collections::BTreeMap;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};

use super::labels::{apply_configuration, node_vanished};
use super::{ApiCall, Call, Client, Error, FIELD_MANAGER, retry};
use crate::plan::LabelApply;

/// The API server's answer to a `SelfSubjectAccessReview`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessDecision {
    pub allowed: bool,
    /// An authorizer refused explicitly. RBAC never does (it allows or has no opinion), so a
    /// missing grant is `allowed: false, denied: false`.
    pub denied: bool,
    /// The authorizers' words: RBAC names the binding that allowed the call. Often empty for a
    /// call that is not allowed.
    pub reason: String,
    /// An authorizer that failed to decide (a role binding naming a role that does not exist).
    pub evaluation_error: String,
}

/// A node to try a label write on, as listed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeNode {
    pub name: String,
    pub uid: Option<String>,
    pub labels: BTreeMap<String, String>,
}

/// What the API server made of a dry-run label write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DryRunAnswer {
    /// Validation and admission passed: a run's write would be stored.
    Accepted,
    /// 403 Forbidden (RBAC, or an admission policy or webhook), with the server's message.
    Forbidden { message: String },
    /// The node was deleted, or replaced under the same name, since it was listed.
    NodeGone,
}

impl Client {
    /// Whether this client's identity may make `call`: cluster-wide for ClusterRole grants, in
    /// `lock_namespace` for the Role's, on the one object a named grant is restricted to.
    pub async fn review_access(
        &self,
        call: &ApiCall,
        lock_namespace: &str,
    ) -> Result<AccessDecision, Error> {
        let reviews: Api<SelfSubjectAccessReview> = Api::all(self.client.clone());
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    group: Some(call.group.clone()),
                    resource: Some(call.resource.clone()),
                    subresource: call.subresource.clone(),
                    verb: Some(call.verb.clone()),
                    namespace: call.is_namespaced().then(|| lock_namespace.to_string()),
                    name: call.name().map(str::to_string),
                    ..ResourceAttributes::default()
                }),
                ..SelfSubjectAccessReviewSpec::default()
            },
            ..SelfSubjectAccessReview::default()
        };
        let request = Call::new("POST", reviews.resource_url());
        let params = PostParams::default();
        // A review changes nothing: sending it again is harmless.
        let answer = retry::idempotent("review access", || reviews.create(&params, &review))
            .await
            .map_err(|error| Error::AccessReview {
                call: call.to_string(),
                source: request.failed(error),
            })?;
        let status = answer.status.unwrap_or_default();
        Ok(AccessDecision {
            allowed: status.allowed,
            denied: status.denied.unwrap_or(false),
            reason: status.reason.unwrap_or_default(),
            evaluation_error: status.evaluation_error.unwrap_or_default(),
        })
    }

    /// A node to try a label write on: the first the API server lists (`limit=1`); `None` in
    /// a cluster without nodes.
    pub async fn probe_node(&self) -> Result<Option<ProbeNode>, Error> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let call = Call::new("GET", nodes.resource_url());
        let params = ListParams::default().limit(1);
        let page = retry::idempotent("nodes", || nodes.list(&params))
            .await
            .map_err(|error| Error::List {
                kind: "nodes",
                source: call.failed(error),
            })?;
        Ok(page.items.into_iter().next().map(|node| ProbeNode {
            name: node.metadata.name.unwrap_or_default(),
            uid: node.metadata.uid,
            labels: node.metadata.labels.unwrap_or_default(),
        }))
    }

    /// Sends `apply` as a run sends it (server-side apply under [`FIELD_MANAGER`], forced,
    /// the node's uid as a precondition), but as a dry run: the API server authorizes,
    /// validates and admits it, and stores nothing.
    pub async fn dry_run_labels(&self, apply: &LabelApply) -> Result<DryRunAnswer, Error> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let name = apply.node.as_str();
        let call = Call::object("PATCH", nodes.resource_url(), name);
        let mut params = PatchParams::apply(FIELD_MANAGER).force();
        params.dry_run = true;
        let body = apply_configuration(apply);
        let patch = Patch::Apply(&body);
        let answer =
            retry::idempotent("dry-run node labels", || nodes.patch(name, &params, &patch)).await;
        let error = match answer {
            Ok(_) => return Ok(DryRunAnswer::Accepted),
            Err(error) => error,
        };
        match super::api_status(&error) {
            Some(status) if status.code == 403 => Ok(DryRunAnswer::Forbidden {
                message: status.message.clone(),
            }),
            Some(status) if node_vanished(status) => Ok(DryRunAnswer::NodeGone),
            _ => Err(Error::ApplyLabels {
                node: name.to_string(),
                source: call.failed(error),
            }),
        }
    }
}
