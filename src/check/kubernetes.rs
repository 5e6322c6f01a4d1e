//! The Kubernetes section of `check`: connected as `run` connects, it asks about every call of
//! the call list this policy makes (a SelfSubjectAccessReview each: cluster-wide for the
//! ClusterRole's calls, in the lock namespace for the Role's), sends a run's label write (a
//! change of the host label) to one node as a dry run (RBAC, validation and admission all run;
//! nothing is stored), then a dry run of a label outside the policy's keys (refused where the chart's admission policy confines
//! the runs), reads one NodeMetrics when the policy reads actual usage, and lists the
//! PriorityClasses the policy names.
//!
//! A check that depends on a permission found missing is not made (its item says so): the
//! permission's own item carries the fix, once.

use std::collections::BTreeMap;

use futures_util::future::join_all;

use super::{
    Backend, Item, KubernetesDetail, KubernetesFix, RbacRule, RetriedRequest, RuleHolder, Section,
    Status, Subject,
};
use crate::kube::{self, AccessDecision, ApiCall, DryRunAnswer, Grant, ProbeNode};
use crate::plan::LabelApply;
use crate::policy::{Policy, PriorityThreshold};
use crate::settings::RunConfig;

/// The host label's value in the dry-run write: a change (see [`probe_labels`]), stored nowhere.
pub const PROBE_HOST_VALUE: &str = "vsphere-descheduler-check";

/// [`PROBE_HOST_VALUE`]'s stand-in on a node that already carries it.
const PROBE_HOST_OTHER_VALUE: &str = "vsphere-descheduler-check-2";

/// The label key of the confinement probe: one no policy owns, whose write the chart's admission
/// policy refuses.
pub const CONFINEMENT_PROBE_KEY: &str = "check.vsphere-descheduler.io/not-owned";

/// The Kubernetes section: connects, then checks.
pub async fn section(config: &RunConfig) -> Section {
    match kube::Client::connect(&config.kubernetes, config.timeout).await {
        Ok((client, endpoint)) => {
            let target = match &endpoint.context {
                Some(context) => format!("{} (context {context})", endpoint.api_server),
                None => format!("{} (in-cluster)", endpoint.api_server),
            };
            Section {
                backend: Backend::Kubernetes,
                target,
                items: check(&client, &config.policy, &config.lock.namespace).await,
            }
        }
        Err(error) => Section {
            backend: Backend::Kubernetes,
            target: "(no API server)".to_string(),
            items: vec![
                Item::new(Subject::ApiServer, Status::Missing, error.failure())
                    .with_fix(KubernetesFix::NameKubeconfig),
            ],
        },
    }
}

/// Every Kubernetes item for `policy`, through `client`; the Role's grants are looked for in
/// `lock_namespace`.
pub async fn check(client: &kube::Client, policy: &Policy, lock_namespace: &str) -> Vec<Item> {
    let calls: Vec<ApiCall> = kube::api_calls()
        .into_iter()
        .filter(|call| policy.reads_metrics() || !call.needs_metrics())
        .collect();
    let permissions = match permissions(client, &calls, lock_namespace).await {
        Ok(permissions) => permissions,
        Err(error) => return vec![unreachable_api_server(&error)],
    };
    let allowed = |group: &str, resource: &str, verb: &str| {
        permissions.iter().any(|(call, item)| {
            call.group == group
                && call.rule_resource() == resource
                && call.verb == verb
                && item.finding.status == Status::Ok
        })
    };
    let mut items: Vec<Item> = permissions.iter().map(|(_, item)| item.clone()).collect();
    let writes = allowed("", "nodes", "list") && allowed("", "nodes", "patch");
    items.extend(label_writes(client, policy, writes).await);
    if policy.reads_metrics() {
        items.push(metrics_api(client, allowed("metrics.k8s.io", "nodes", "list")).await);
    }
    let classes = allowed("scheduling.k8s.io", "priorityclasses", "list");
    items.extend(priority_classes(client, policy, classes).await);
    items
}

/// One item per call, with the call it is about; the first failure when the API server could
/// not be reached at all (then nothing else can be checked either).
async fn permissions(
    client: &kube::Client,
    calls: &[ApiCall],
    lock_namespace: &str,
) -> Result<Vec<(ApiCall, Item)>, kube::Error> {
    // Everyone's calls need no review: an answer to any other says they are allowed.
    let asked: Vec<&ApiCall> = calls
        .iter()
        .filter(|call| call.grant != Grant::Everyone)
        .collect();
    let mut reviews = join_all(
        asked
            .iter()
            .map(|call| client.review_access(call, lock_namespace)),
    )
    .await;
    if !reviews.is_empty() && reviews.iter().all(unanswered) {
        return Err(reviews
            .swap_remove(0)
            .expect_err("unanswered reviews failed"));
    }
    // The review itself: if it was refused, no answer about the others means anything.
    let reviews_refused = reviews
        .iter()
        .any(|review| matches!(review, Err(error) if forbidden(error)));
    let mut items = Vec::new();
    for call in calls.iter().filter(|call| call.grant == Grant::Everyone) {
        let item = if reviews_refused {
            Item::new(
                subject(call, lock_namespace),
                Status::Missing,
                KubernetesDetail::ReviewsRefused,
            )
            .with_fix(rule_fix(call, lock_namespace))
        } else {
            Item::new(
                subject(call, lock_namespace),
                Status::Ok,
                KubernetesDetail::AnsweredToEveryone,
            )
        };
        items.push((call.clone(), item));
    }
    for (call, review) in asked.into_iter().zip(reviews) {
        let item = match review {
            Ok(decision) => decided(call, &decision, lock_namespace),
            Err(_) if reviews_refused => Item::new(
                subject(call, lock_namespace),
                Status::NotChecked,
                KubernetesDetail::ReviewsRefusedAbove,
            ),
            Err(error) => Item::new(
                subject(call, lock_namespace),
                Status::Missing,
                error.failure(),
            )
            .with_fix(KubernetesFix::TryAgain(RetriedRequest::AccessReview)),
        };
        items.push((call.clone(), item));
    }
    // The list's order, whatever the grant.
    items.sort_by_key(|(call, _)| calls.iter().position(|listed| listed == call));
    Ok(items)
}

/// Whether a review got no answer from the API server at all (the connection failed).
fn unanswered(review: &Result<AccessDecision, kube::Error>) -> bool {
    match review {
        Err(kube::Error::AccessReview { source, .. }) => source.status().is_none(),
        _ => false,
    }
}

/// Whether the API server answered 403 Forbidden.
fn forbidden(error: &kube::Error) -> bool {
    match error {
        kube::Error::AccessReview { source, .. } => source.status().is_some_and(|s| s.code == 403),
        _ => false,
    }
}

/// The item of an API server that answered no review, with the first failure.
fn unreachable_api_server(error: &kube::Error) -> Item {
    Item::new(Subject::ApiServer, Status::Missing, error.failure())
        .with_fix(KubernetesFix::ReachApiServer)
}

/// A call's item from the API server's decision.
fn decided(call: &ApiCall, decision: &AccessDecision, lock_namespace: &str) -> Item {
    let subject = subject(call, lock_namespace);
    let reason = decision.reason.clone();
    if decision.allowed {
        return Item::new(subject, Status::Ok, KubernetesDetail::Allowed { reason });
    }
    let detail = KubernetesDetail::NotAllowed {
        denied: decision.denied,
        reason,
        evaluation_error: decision.evaluation_error.clone(),
    };
    Item::new(subject, Status::Missing, detail).with_fix(rule_fix(call, lock_namespace))
}

fn subject(call: &ApiCall, lock_namespace: &str) -> Subject {
    Subject::Permission {
        group: call.group.clone(),
        resource: call.rule_resource(),
        verb: call.verb.clone(),
        namespace: call.is_namespaced().then(|| lock_namespace.to_string()),
        name: call.name().map(str::to_string),
    }
}

/// What grants `call`: its RBAC rule, and the role it belongs to.
pub fn rule_fix(call: &ApiCall, lock_namespace: &str) -> KubernetesFix {
    let rule = RbacRule {
        group: call.group.clone(),
        resource: call.rule_resource(),
        name: call.name().map(str::to_string),
        verb: call.verb.clone(),
    };
    let to = match &call.grant {
        Grant::ClusterRole => RuleHolder::ClusterRole,
        Grant::Role | Grant::RoleNamed(_) => RuleHolder::Role {
            namespace: lock_namespace.to_string(),
        },
        Grant::Everyone => RuleHolder::BasicUser,
    };
    KubernetesFix::AddRule { rule, to }
}

/// The dry-run write of the policy's labels to one node, then of a label outside them;
/// `allowed` says whether this identity may list and patch nodes at all.
async fn label_writes(client: &kube::Client, policy: &Policy, allowed: bool) -> Vec<Item> {
    let write = |node: Option<&ProbeNode>| Subject::LabelWrite {
        node: node.map(|node| node.name.clone()),
        labels: node
            .map(|node| probe_labels(node, policy))
            .unwrap_or_default(),
    };
    let confinement = |node: Option<&ProbeNode>| Subject::LabelConfinement {
        node: node.map(|node| node.name.clone()),
        key: CONFINEMENT_PROBE_KEY.to_string(),
    };
    let unchecked = |detail: KubernetesDetail| {
        vec![
            Item::new(write(None), Status::NotChecked, detail.clone()),
            Item::new(confinement(None), Status::NotChecked, detail),
        ]
    };
    if !allowed {
        return unchecked(KubernetesDetail::NeedsNodeWrites);
    }
    let node = match client.probe_node().await {
        Ok(Some(node)) => node,
        Ok(None) => return unchecked(KubernetesDetail::NoNodes),
        Err(error) => {
            return vec![
                Item::new(write(None), Status::Missing, error.failure())
                    .with_fix(KubernetesFix::TryAgain(RetriedRequest::NodeList)),
                Item::new(
                    confinement(None),
                    Status::NotChecked,
                    KubernetesDetail::NoNodeToWrite,
                ),
            ];
        }
    };
    let labels = probe_labels(&node, policy);
    let apply = LabelApply {
        node: node.name.clone(),
        uid: node.uid.clone(),
        set: labels.clone(),
        remove: Default::default(),
    };
    let written = own_label_write(client, &apply, write(Some(&node))).await;
    let confined = if written.finding.status == Status::Ok {
        confinement_probe(client, apply, confinement(Some(&node))).await
    } else {
        Item::new(
            confinement(Some(&node)),
            Status::NotChecked,
            KubernetesDetail::OwnLabelsRefused,
        )
    };
    vec![written, confined]
}

/// The labels of the dry-run write to `node`: the policy's keys the node carries, as they are,
/// and the host label changed to [`PROBE_HOST_VALUE`] (added where the node has none). A
/// change, not the value the node has: an admission policy judges the keys an update changes
/// (the chart's refuses other keys only when they change), so a write that changes nothing
/// would pass where a run's relabelling after a DRS move is refused. The value a run would
/// write needs vCenter; the write is stored nowhere.
fn probe_labels(node: &ProbeNode, policy: &Policy) -> BTreeMap<String, String> {
    let keys = &policy.vsphere.labels;
    let mut labels: BTreeMap<String, String> = keys
        .owned()
        .filter_map(|key| Some((key.to_string(), node.labels.get(key)?.clone())))
        .collect();
    let value = if labels.get(&keys.host).map(String::as_str) == Some(PROBE_HOST_VALUE) {
        PROBE_HOST_OTHER_VALUE
    } else {
        PROBE_HOST_VALUE
    };
    labels.insert(keys.host.clone(), value.to_string());
    labels
}

async fn own_label_write(client: &kube::Client, apply: &LabelApply, subject: Subject) -> Item {
    match client.dry_run_labels(apply).await {
        Ok(DryRunAnswer::Accepted) => Item::new(subject, Status::Ok, KubernetesDetail::Admitted),
        Ok(DryRunAnswer::Forbidden { message }) => {
            let refused = KubernetesDetail::DryRunRefused { message };
            Item::new(subject, Status::Missing, refused).with_fix(KubernetesFix::LetLabelWrites)
        }
        Ok(DryRunAnswer::NodeGone) => node_gone(subject, apply),
        Err(error) => Item::new(subject, Status::Missing, error.failure())
            .with_fix(KubernetesFix::TryAgain(RetriedRequest::DryRunLabelWrite)),
    }
}

/// A dry-run write of [`CONFINEMENT_PROBE_KEY`] besides the policy's labels: refused where an
/// admission policy confines this identity to its labels (the chart's, for the runs'
/// ServiceAccount), accepted elsewhere. Either way a run works: a warning at most.
async fn confinement_probe(client: &kube::Client, mut apply: LabelApply, subject: Subject) -> Item {
    apply
        .set
        .insert(CONFINEMENT_PROBE_KEY.to_string(), "probe".to_string());
    match client.dry_run_labels(&apply).await {
        Ok(DryRunAnswer::Forbidden { message }) => Item::new(
            subject,
            Status::Ok,
            KubernetesDetail::DryRunRefused { message },
        ),
        Ok(DryRunAnswer::Accepted) => Item::new(
            subject,
            Status::Warning,
            KubernetesDetail::OtherLabelAccepted,
        )
        .with_fix(KubernetesFix::ConfineLabelWrites),
        Ok(DryRunAnswer::NodeGone) => node_gone(subject, &apply),
        Err(error) => Item::new(subject, Status::Warning, error.failure()),
    }
}

/// A probe whose node was deleted or replaced between finding it and writing to it.
fn node_gone(subject: Subject, apply: &LabelApply) -> Item {
    let node = apply.node.clone();
    Item::new(
        subject,
        Status::NotChecked,
        KubernetesDetail::NodeGone { node },
    )
}

/// metrics-server's API, for a policy that reads actual usage; `allowed` says whether this
/// identity may list NodeMetrics.
async fn metrics_api(client: &kube::Client, allowed: bool) -> Item {
    if !allowed {
        return Item::new(
            Subject::MetricsApi,
            Status::NotChecked,
            KubernetesDetail::NeedsMetricsList,
        );
    }
    match client.metrics_served().await {
        Ok(()) => Item::new(
            Subject::MetricsApi,
            Status::Ok,
            KubernetesDetail::MetricsListed,
        ),
        Err(error) => {
            let fix = match error {
                kube::Error::MetricsUnavailable { .. } => KubernetesFix::InstallMetricsServer,
                _ => KubernetesFix::TryAgain(RetriedRequest::NodeMetricsList),
            };
            Item::new(Subject::MetricsApi, Status::Missing, error.failure()).with_fix(fix)
        }
    }
}

/// One item per PriorityClass the policy names; `allowed` says whether this identity may list
/// them.
async fn priority_classes(client: &kube::Client, policy: &Policy, allowed: bool) -> Vec<Item> {
    let named: Vec<(&str, &str)> = policy
        .profiles
        .iter()
        .filter_map(|profile| match &profile.evictor.priority_threshold {
            PriorityThreshold::Name(name) => Some((profile.name.as_str(), name.as_str())),
            PriorityThreshold::Value(_) => None,
        })
        .collect();
    if named.is_empty() {
        return Vec::new();
    }
    let subject = |profile: &str, name: &str| Subject::PriorityClass {
        name: name.to_string(),
        profile: profile.to_string(),
    };
    let existing = if allowed {
        client.priority_class_names().await
    } else {
        let detail = || KubernetesDetail::NeedsPriorityClassList;
        return named
            .iter()
            .map(|(profile, name)| Item::new(subject(profile, name), Status::NotChecked, detail()))
            .collect();
    };
    named
        .iter()
        .map(|(profile, name)| match &existing {
            Ok(names) if names.iter().any(|existing| existing == name) => Item::new(
                subject(profile, name),
                Status::Ok,
                KubernetesDetail::PriorityClassExists,
            ),
            Ok(names) => Item::new(
                subject(profile, name),
                Status::Missing,
                KubernetesDetail::NoSuchPriorityClass {
                    profile: profile.to_string(),
                },
            )
            .with_fix(KubernetesFix::CreatePriorityClass {
                name: name.to_string(),
                existing: names.clone(),
            }),
            Err(error) => Item::new(subject(profile, name), Status::Missing, error.failure())
                .with_fix(KubernetesFix::TryAgain(RetriedRequest::PriorityClassList)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(line: &str) -> ApiCall {
        kube::parse_call_list(line).expect("a call line").remove(0)
    }

    #[test]
    fn a_missing_cluster_wide_call_names_its_rule_for_a_cluster_role() {
        let fix = rule_fix(&call("core pods/eviction create ClusterRole"), "ops").to_string();
        assert!(
            fix.starts_with(
                "add the rule {apiGroups: [\"\"], resources: [\"pods/eviction\"], verbs: \
                 [\"create\"]} to a ClusterRole"
            ),
            "{fix}"
        );
    }

    #[test]
    fn a_missing_lease_call_names_its_rule_for_a_role_in_the_lock_namespace() {
        let fix = rule_fix(
            &call("coordination.k8s.io leases get Role/vsphere-descheduler"),
            "ops",
        )
        .to_string();
        assert!(
            fix.starts_with(
                "add the rule {apiGroups: [\"coordination.k8s.io\"], resources: [\"leases\"], \
                 resourceNames: [\"vsphere-descheduler\"], verbs: [\"get\"]} to a Role in \
                 namespace ops"
            ),
            "{fix}"
        );
    }

    #[test]
    fn an_allowed_call_quotes_the_binding_and_a_refused_one_the_authorizer() {
        let call = call("core nodes list ClusterRole");
        let allowed = decided(
            &call,
            &AccessDecision {
                allowed: true,
                denied: false,
                reason: "RBAC: allowed by ClusterRoleBinding \"x\"".into(),
                evaluation_error: String::new(),
            },
            "ops",
        );
        assert_eq!(allowed.finding.status, Status::Ok);
        assert_eq!(
            allowed.finding.detail.to_string(),
            "RBAC: allowed by ClusterRoleBinding \"x\""
        );
        let refused = decided(
            &call,
            &AccessDecision {
                allowed: false,
                denied: false,
                reason: String::new(),
                evaluation_error: "role \"r\" not found".into(),
            },
            "ops",
        );
        assert_eq!(refused.finding.status, Status::Missing);
        assert_eq!(
            refused.finding.detail.to_string(),
            "not allowed: role \"r\" not found"
        );
        assert!(refused.finding.fix.is_some());
    }

    #[test]
    fn the_probe_changes_the_host_label_and_keeps_the_other_keys_as_they_are() {
        let mut policy = Policy::default();
        policy.vsphere.labels.cluster = Some("example.com/cluster".into());
        let node = |labels: &[(&str, &str)]| ProbeNode {
            name: "worker-a".into(),
            uid: Some("u".into()),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        let host = policy.vsphere.labels.host.clone();
        assert_eq!(
            probe_labels(&node(&[("kubernetes.io/hostname", "worker-a")]), &policy),
            BTreeMap::from([(host.clone(), PROBE_HOST_VALUE.to_string())])
        );
        assert_eq!(
            probe_labels(
                &node(&[(host.as_str(), "esxi-41"), ("example.com/cluster", "c1")]),
                &policy
            ),
            BTreeMap::from([
                (host.clone(), PROBE_HOST_VALUE.to_string()),
                ("example.com/cluster".to_string(), "c1".to_string())
            ])
        );
        assert_eq!(
            probe_labels(&node(&[(host.as_str(), PROBE_HOST_VALUE)]), &policy),
            BTreeMap::from([(host, PROBE_HOST_OTHER_VALUE.to_string())])
        );
    }
}
