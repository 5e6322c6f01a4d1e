//! What `check`'s items found and what they ask to change, as data per backend, and the one
//! place they become words: each type's `Display`, which the text and JSON reports write. A
//! server's own words (an admission denial, an authorizer's reason, the Pushgateway's answer)
//! are carried whole in the variant that says what they answer; a request that failed is its
//! [`Failure`], its kind beside its words.

use std::fmt::{self, Display, Formatter};

use serde::Serialize;

use crate::cause::Failure;
use crate::kube::VM_OPERATOR_GROUP;
use crate::metrics::push::Readiness;
use crate::sites::SiteFinding;
use crate::vsphere::preflight::{Fix, VcenterDetail};

/// What one item found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ItemDetail {
    Kubernetes(KubernetesDetail),
    Supervisor(SupervisorDetail),
    Vcenter(VcenterDetail),
    Site(SiteDetail),
    /// The Pushgateway answered its readiness check.
    Pushgateway(Readiness),
    /// A request that failed: its kind, and its error chain as a report writes it.
    Failed(Failure),
}

/// What to change for one item; in JSON, its sentence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(into = "String")]
pub enum ItemFix {
    Kubernetes(KubernetesFix),
    Supervisor(SupervisorFix),
    Pushgateway(PushgatewayFix),
    Vcenter(Fix),
    /// A site finding's fix, in the policy or in vCenter.
    Site(SiteFinding),
}

/// Each backend's vocabulary is one case of the item's.
macro_rules! widen {
    ($wide:ident: $($case:ident($narrow:ty)),*) => {$(
        impl From<$narrow> for $wide {
            fn from(narrow: $narrow) -> $wide {
                $wide::$case(narrow)
            }
        }
    )*};
}

widen!(ItemDetail: Kubernetes(KubernetesDetail), Supervisor(SupervisorDetail),
    Vcenter(VcenterDetail), Site(SiteDetail), Pushgateway(Readiness), Failed(Failure));
widen!(ItemFix: Kubernetes(KubernetesFix), Supervisor(SupervisorFix),
    Pushgateway(PushgatewayFix), Vcenter(Fix), Site(SiteFinding));

/// What the sites check found against the observed inventory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SiteDetail {
    /// Every observed host is in exactly one site: each site with its number of hosts.
    Partitioned(Vec<(String, usize)>),
    /// The inventory could not be read (its own item says why).
    NotObserved,
    /// One reason the sites do not partition the hosts; runs refuse to plan on them.
    Refused(SiteFinding),
}

/// What a Kubernetes item found, beyond the server's own words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KubernetesDetail {
    /// A call every authenticated user may make: the review was answered.
    AnsweredToEveryone,
    ReviewsRefused,
    /// Not asked about: reviews are refused, which an item above says.
    ReviewsRefusedAbove,
    /// Allowed, with the authorizer's reason (empty when it gave none).
    Allowed {
        reason: String,
    },
    /// Not allowed (`denied`: explicitly), with the authorizer's reason and evaluation error.
    NotAllowed {
        denied: bool,
        reason: String,
        evaluation_error: String,
    },
    NeedsNodeWrites,
    NeedsMetricsList,
    NeedsPriorityClassList,
    NoNodes,
    NoNodeToWrite,
    OwnLabelsRefused,
    /// A dry-run write passed RBAC, validation and admission.
    Admitted,
    NodeGone {
        node: String,
    },
    OtherLabelAccepted,
    /// A dry-run write was refused, in the API server's words (an admission policy's message).
    DryRunRefused {
        message: String,
    },
    MetricsListed,
    PriorityClassExists,
    NoSuchPriorityClass {
        profile: String,
    },
}

/// What to change for a Kubernetes item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KubernetesFix {
    NameKubeconfig,
    ReachApiServer,
    AddRule {
        rule: RbacRule,
        to: RuleHolder,
    },
    /// A request failed without saying anything is missing: the API server must answer it.
    TryAgain(RetriedRequest),
    /// An admission policy or webhook refuses the runs' label writes.
    LetLabelWrites,
    /// Nothing confines this identity's node writes to the policy's labels.
    ConfineLabelWrites,
    InstallMetricsServer,
    CreatePriorityClass {
        name: String,
        existing: Vec<String>,
    },
}

/// One RBAC rule, as a role's YAML writes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RbacRule {
    /// `""` for the core group.
    pub group: String,
    /// With its subresource: `pods/eviction`.
    pub resource: String,
    /// The one object the rule is restricted to.
    pub name: Option<String>,
    pub verb: String,
}

/// Where a rule belongs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuleHolder {
    ClusterRole,
    Role {
        namespace: String,
    },
    /// Kubernetes' own ClusterRole `system:basic-user`, bound to every authenticated user.
    BasicUser,
}

/// A request the API server must answer for the check to tell anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetriedRequest {
    AccessReview,
    NodeList,
    DryRunLabelWrite,
    NodeMetricsList,
    PriorityClassList,
}

/// What a Supervisor item found, beyond the server's own words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SupervisorDetail {
    /// What a run's read of VM Operator's objects found.
    Read {
        virtual_machines: usize,
        version: String,
        hosts: usize,
        resource_policies: usize,
    },
    GrantMissingAbove,
    /// The access review's answer, in the authorizer's words (empty when it gave none).
    Reviewed {
        reason: String,
    },
}

/// What to change for a Supervisor item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SupervisorFix {
    /// The Role of docs/vks.md, bound to the credentials' ServiceAccount.
    GrantRole,
    Reach,
    GiveCredentials,
    /// The credentials name a guest cluster, or something else, as the Supervisor.
    NameSupervisorServer,
    SeeRecipe,
}

/// What to change for the Pushgateway to be reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PushgatewayFix {
    Credentials,
    /// It answered, but not ready: not ready yet, or not a Pushgateway's base URL.
    NotReady,
    CaFile,
    Reach,
}

impl Display for ItemDetail {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            ItemDetail::Kubernetes(detail) => detail.fmt(f),
            ItemDetail::Supervisor(detail) => detail.fmt(f),
            ItemDetail::Vcenter(detail) => detail.fmt(f),
            ItemDetail::Site(detail) => detail.fmt(f),
            ItemDetail::Pushgateway(Readiness { status, body }) => {
                write!(f, "HTTP {status}: {body}")
            }
            ItemDetail::Failed(failure) => failure.fmt(f),
        }
    }
}

impl From<ItemFix> for String {
    fn from(fix: ItemFix) -> String {
        fix.to_string()
    }
}

impl Display for ItemFix {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            ItemFix::Kubernetes(fix) => fix.fmt(f),
            ItemFix::Supervisor(fix) => fix.fmt(f),
            ItemFix::Pushgateway(fix) => fix.fmt(f),
            ItemFix::Vcenter(fix) => fix.fmt(f),
            ItemFix::Site(finding) => f.write_str(finding.fix()),
        }
    }
}

impl Display for SiteDetail {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            SiteDetail::Partitioned(sites) if sites.is_empty() => {
                f.write_str("no cluster observed, so no site")
            }
            SiteDetail::Partitioned(sites) => {
                f.write_str("every observed host is in one site: ")?;
                let listed: Vec<String> = sites
                    .iter()
                    .map(|(site, hosts)| format!("{site} ({hosts} host(s))"))
                    .collect();
                f.write_str(&listed.join(", "))
            }
            SiteDetail::NotObserved => {
                f.write_str("not checked: the inventory could not be read (see above)")
            }
            SiteDetail::Refused(finding) => write!(f, "{finding} [{}]", finding.code()),
        }
    }
}

impl Display for KubernetesDetail {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        use KubernetesDetail::*;
        match self {
            AnsweredToEveryone => f.write_str("answered (every authenticated user may ask)"),
            ReviewsRefused => {
                f.write_str("the API server refused to answer SelfSubjectAccessReviews")
            }
            ReviewsRefusedAbove => f.write_str("SelfSubjectAccessReviews are refused (see above)"),
            Allowed { reason } if reason.is_empty() => f.write_str("allowed"),
            Allowed { reason } => f.write_str(reason),
            NotAllowed {
                denied,
                reason,
                evaluation_error,
            } => {
                f.write_str(if *denied { "denied" } else { "not allowed" })?;
                for words in [reason, evaluation_error] {
                    if !words.is_empty() {
                        write!(f, ": {words}")?;
                    }
                }
                Ok(())
            }
            NeedsNodeWrites => f.write_str("needs list and patch on nodes (missing above)"),
            NeedsMetricsList => f.write_str("needs list on nodes.metrics.k8s.io (missing above)"),
            NeedsPriorityClassList => f.write_str("needs list on priorityclasses (missing above)"),
            NoNodes => f.write_str("the cluster has no nodes"),
            NoNodeToWrite => f.write_str("no node to write to (above)"),
            OwnLabelsRefused => {
                f.write_str("the write of the policy's own labels did not pass (above)")
            }
            Admitted => f.write_str("authorized, validated and admitted; nothing stored"),
            NodeGone { node } => write!(
                f,
                "node {node} was deleted or replaced while checking; run check again"
            ),
            OtherLabelAccepted => f.write_str(
                "a dry-run write of a label outside the policy's keys was accepted: nothing \
                 confines this identity's node writes to the policy's labels",
            ),
            DryRunRefused { message } => f.write_str(message),
            MetricsListed => f.write_str("NodeMetrics listed"),
            PriorityClassExists => f.write_str("exists"),
            NoSuchPriorityClass { profile } => write!(
                f,
                "profile {profile} names it as its priorityThreshold; the cluster has no such \
                 PriorityClass"
            ),
        }
    }
}

impl Display for KubernetesFix {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        use KubernetesFix::*;
        match self {
            NameKubeconfig => f.write_str(
                "name a kubeconfig (--kubeconfig, KUBECONFIG or ~/.kube/config) and --context, \
                 or run in a pod with a service account",
            ),
            ReachApiServer => f.write_str(
                "the kubeconfig's cluster (or the in-cluster service) must reach the API server: \
                 check its address, the network and its certificate",
            ),
            AddRule { rule, to } => add_rule(f, rule, to),
            TryAgain(request) => write!(f, "the API server must {}; try again", request.verb()),
            LetLabelWrites => f.write_str(
                "an admission policy or webhook refuses the runs' label writes to nodes. The \
                 chart's ValidatingAdmissionPolicy lets the runs set only the label keys of the \
                 policy the chart was given (vsphere.labels) and remove only the keys listed in \
                 admissionPolicy.formerLabelKeys: for a label the denial says was added or \
                 changed, give the chart the policy this check read; for one it says was removed \
                 (a key of the runs before a rename or drop), list that key in \
                 admissionPolicy.formerLabelKeys; for a policy or webhook of your own, let this \
                 identity change these labels",
            ),
            ConfineLabelWrites => f.write_str(
                "install the chart with admissionPolicy.enabled=true on Kubernetes 1.30 or later; \
                 its policy confines only the runs' ServiceAccount, so checked as anyone else \
                 this warning is expected",
            ),
            InstallMetricsServer => f.write_str(
                "install metrics-server and wait until its APIService v1beta1.metrics.k8s.io is \
                 Available, or use a policy whose utilization plugins read requests \
                 (metricsUtilization without KubernetesMetrics)",
            ),
            CreatePriorityClass { name, existing } => write!(
                f,
                "create PriorityClass {name}, or name one of the cluster's in the policy: {}",
                if existing.is_empty() {
                    "(none)".to_string()
                } else {
                    existing.join(", ")
                }
            ),
        }
    }
}

/// The one sentence that says which rule to add to which role.
fn add_rule(f: &mut Formatter<'_>, rule: &RbacRule, to: &RuleHolder) -> fmt::Result {
    match to {
        RuleHolder::ClusterRole => write!(
            f,
            "add the rule {rule} to a ClusterRole bound to this identity with a \
             ClusterRoleBinding (the chart's ClusterRole has it when rbac.create is true)"
        ),
        RuleHolder::Role { namespace } => write!(
            f,
            "add the rule {rule} to a Role in namespace {namespace} bound to this identity there \
             (the chart's Role has it when rbac.create is true; the run lock lives in \
             --lock-namespace, POD_NAMESPACE in the chart's pods)"
        ),
        RuleHolder::BasicUser => write!(
            f,
            "Kubernetes grants {rule} to every authenticated user through the ClusterRole \
             system:basic-user and its ClusterRoleBinding to group system:authenticated: restore \
             them"
        ),
    }
}

impl Display for RbacRule {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{{apiGroups: [\"{}\"], resources: [\"{}\"]",
            self.group, self.resource
        )?;
        if let Some(name) = &self.name {
            write!(f, ", resourceNames: [\"{name}\"]")?;
        }
        write!(f, ", verbs: [\"{}\"]}}", self.verb)
    }
}

impl RetriedRequest {
    /// What the API server must do, after "the API server must".
    fn verb(self) -> &'static str {
        match self {
            RetriedRequest::AccessReview => "answer SelfSubjectAccessReviews",
            RetriedRequest::NodeList => "list nodes",
            RetriedRequest::DryRunLabelWrite => "answer a dry-run label write to a node",
            RetriedRequest::NodeMetricsList => "list metrics.k8s.io NodeMetrics",
            RetriedRequest::PriorityClassList => "list PriorityClasses",
        }
    }
}

impl Display for SupervisorDetail {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            SupervisorDetail::Read {
                virtual_machines,
                version,
                hosts,
                resource_policies,
            } => write!(
                f,
                "{virtual_machines} VirtualMachines ({VM_OPERATOR_GROUP}/{version}) on {hosts} \
                 ESXi hosts, {resource_policies} VirtualMachineSetResourcePolicies"
            ),
            SupervisorDetail::GrantMissingAbove => {
                f.write_str("not read: a grant above is missing")
            }
            SupervisorDetail::Reviewed { reason } => f.write_str(reason),
        }
    }
}

impl Display for SupervisorFix {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SupervisorFix::GrantRole => {
                "grant it in the Supervisor namespace with the Role of docs/vks.md (apiGroups: \
                 [vmoperator.vmware.com], resources: [virtualmachines, \
                 virtualmachinesetresourcepolicies], verbs: [get, list]) bound to the \
                 ServiceAccount whose token the credentials hold"
            }
            SupervisorFix::Reach => "make the Supervisor reachable with these credentials",
            SupervisorFix::GiveCredentials => {
                "give --supervisor-credentials-dir a directory with the Supervisor's server, \
                 ca.crt and token (docs/vks.md), or --supervisor-kubeconfig/--supervisor-context"
            }
            SupervisorFix::NameSupervisorServer => {
                "put the Supervisor's address in the credentials' server file (the address \
                 `kubectl vsphere login --server` takes)"
            }
            SupervisorFix::SeeRecipe => "see the detail; docs/vks.md has the recipe",
        })
    }
}

impl Display for PushgatewayFix {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PushgatewayFix::Credentials => {
                "the Pushgateway refused the credentials: put the ones it expects in \
                 --metrics-push-credentials-dir (a token file, or username and password files)"
            }
            PushgatewayFix::NotReady => {
                "the Pushgateway is not ready, or --metrics-push-url names something else: it \
                 must be the Pushgateway's base URL (its /-/ready answers 200)"
            }
            PushgatewayFix::CaFile => {
                "--metrics-push-ca-file must be a PEM file of the CA that signed the \
                 Pushgateway's certificate"
            }
            PushgatewayFix::Reach => {
                "start the Pushgateway, or correct --metrics-push-url (and, for https, \
                 --metrics-push-ca-file): this machine or pod must reach it"
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(name: Option<&str>) -> RbacRule {
        RbacRule {
            group: "coordination.k8s.io".to_string(),
            resource: "leases".to_string(),
            name: name.map(str::to_string),
            verb: "update".to_string(),
        }
    }

    #[test]
    fn a_rule_is_written_as_a_roles_yaml_in_the_sentence_of_its_holder() {
        let fix = KubernetesFix::AddRule {
            rule: rule(Some("vsphere-descheduler")),
            to: RuleHolder::Role {
                namespace: "ops".to_string(),
            },
        };
        assert_eq!(
            ItemFix::from(fix).to_string(),
            "add the rule {apiGroups: [\"coordination.k8s.io\"], resources: [\"leases\"], \
             resourceNames: [\"vsphere-descheduler\"], verbs: [\"update\"]} to a Role in \
             namespace ops bound to this identity there (the chart's Role has it when \
             rbac.create is true; the run lock lives in --lock-namespace, POD_NAMESPACE in the \
             chart's pods)"
        );
        let everyone = KubernetesFix::AddRule {
            rule: rule(None),
            to: RuleHolder::BasicUser,
        };
        assert_eq!(
            everyone.to_string(),
            "Kubernetes grants {apiGroups: [\"coordination.k8s.io\"], resources: [\"leases\"], \
             verbs: [\"update\"]} to every authenticated user through the ClusterRole \
             system:basic-user and its ClusterRoleBinding to group system:authenticated: \
             restore them"
        );
    }

    #[test]
    fn a_decision_quotes_the_authorizer_and_says_allowed_where_it_gave_no_reason() {
        let allowed = |reason: &str| KubernetesDetail::Allowed {
            reason: reason.to_string(),
        };
        assert_eq!(allowed("").to_string(), "allowed");
        assert_eq!(allowed("RBAC: yes").to_string(), "RBAC: yes");
        let refused = |denied, reason: &str, evaluation_error: &str| KubernetesDetail::NotAllowed {
            denied,
            reason: reason.to_string(),
            evaluation_error: evaluation_error.to_string(),
        };
        assert_eq!(refused(true, "", "").to_string(), "denied");
        assert_eq!(
            refused(false, "no binding", "role \"r\" not found").to_string(),
            "not allowed: no binding: role \"r\" not found"
        );
    }

    #[test]
    fn a_missing_priority_class_lists_the_clusters_classes_or_says_there_are_none() {
        let fix = |existing: &[&str]| KubernetesFix::CreatePriorityClass {
            name: "critical".to_string(),
            existing: existing.iter().map(|name| name.to_string()).collect(),
        };
        assert_eq!(
            fix(&[]).to_string(),
            "create PriorityClass critical, or name one of the cluster's in the policy: (none)"
        );
        assert!(fix(&["high", "low"]).to_string().ends_with(": high, low"));
    }

    #[test]
    fn a_fix_is_its_sentence_in_json_and_a_servers_words_are_kept_whole() {
        let fix = ItemFix::from(KubernetesFix::TryAgain(RetriedRequest::NodeList));
        assert_eq!(
            serde_json::to_value(&fix).expect("serializes"),
            "the API server must list nodes; try again"
        );
        let ready = ItemDetail::from(Readiness {
            status: 200,
            body: "OK".to_string(),
        });
        assert_eq!(ready.to_string(), "HTTP 200: OK");
        let refused = KubernetesDetail::DryRunRefused {
            message: "ValidatingAdmissionPolicy 'x' denied request: no".to_string(),
        };
        assert_eq!(
            refused.to_string(),
            "ValidatingAdmissionPolicy 'x' denied request: no"
        );
    }
}
