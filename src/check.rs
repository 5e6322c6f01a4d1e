//! `check`: whether everything a run needs is in place, read-only. The result is one section
//! per backend (the Kubernetes API server, vCenter, the Pushgateway when one is configured), each a list
//! of typed items with a [`Status`] and, when something is missing, the fix. A backend's checks
//! only add a section: nothing here knows which backends exist beyond the ones it runs.
//!
//! Nothing is written anywhere: permissions are asked about (SelfSubjectAccessReviews), the one
//! write a run makes to nodes is sent as a dry run (`dryRun=All`), everything else is read.

mod kubernetes;
mod pushgateway;
mod supervisor;
mod text;
mod vcenter;
mod vocabulary;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::finding::CheckFinding;
use crate::settings::{RunConfig, TopologySource};
use crate::sites::SiteSourceKind;
pub use vocabulary::{
    ItemDetail, ItemFix, KubernetesDetail, KubernetesFix, PushgatewayFix, RbacRule, RetriedRequest,
    RuleHolder, SiteDetail, SupervisorDetail, SupervisorFix,
};

/// The `apiVersion` of the JSON document.
pub const API_VERSION: &str = "vsphere-descheduler.io/v1alpha1";

/// Exit code when nothing is missing for the runs checked (dry runs) but something is for
/// going live: distinct from 1 (missing now) and 2 (usage), so the chart's `helm test` of a
/// dry-run install can pass on it and a script can tell it apart.
pub const EXIT_MISSING_FOR_GOING_LIVE: u8 = 3;

/// How one item stands: the preflight's own, so vCenter's items need no mapping.
pub use crate::finding::Status;

/// Which system a section is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Backend {
    Kubernetes,
    Vcenter,
    Supervisor,
    Pushgateway,
}

impl Backend {
    pub fn word(self) -> &'static str {
        match self {
            Backend::Kubernetes => "kubernetes",
            Backend::Vcenter => "vcenter",
            Backend::Supervisor => "supervisor",
            Backend::Pushgateway => "pushgateway",
        }
    }
}

/// What one item checked. JSON carries the kind as `check` and its fields beside it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "check", rename_all = "camelCase")]
pub enum Subject {
    /// The API server could be reached at all (an item only when it could not).
    ApiServer,
    /// One call of the call list (`src/kube/api_calls.txt`), as RBAC sees it.
    #[serde(rename_all = "camelCase")]
    Permission {
        /// `""` for the core group.
        group: String,
        /// With its subresource: `pods/eviction`.
        resource: String,
        verb: String,
        /// The lock namespace for the Role's grants; cluster-wide otherwise.
        namespace: Option<String>,
        /// The one object a grant is restricted to.
        name: Option<String>,
    },
    /// A run's label write to a node, sent as a dry run: RBAC, validation and admission.
    #[serde(rename_all = "camelCase")]
    LabelWrite {
        node: Option<String>,
        labels: BTreeMap<String, String>,
    },
    /// Whether writes to a label outside the policy's keys are refused (the chart's admission
    /// policy confines the runs to their own labels).
    #[serde(rename_all = "camelCase")]
    LabelConfinement { node: Option<String>, key: String },
    /// metrics-server's `metrics.k8s.io` API, for a policy that reads actual usage.
    MetricsApi,
    /// A PriorityClass the policy names (`priorityThreshold.name`).
    #[serde(rename_all = "camelCase")]
    PriorityClass { name: String, profile: String },
    /// The Pushgateway answers its readiness check.
    #[serde(rename_all = "camelCase")]
    PushgatewayReady { url: String },
    /// Reaching vCenter and logging in with the run's account.
    VcenterLogin,
    /// Reading the inventory (datacenters, clusters, hosts, VMs) as runs do.
    VcenterInventory,
    /// A datacenter or cluster the policy names (`vsphere.datacenters`, `vsphere.clusters`) is
    /// visible to the account.
    #[serde(rename_all = "camelCase")]
    VcenterScope { filter: String },
    /// One privilege of `src/vsphere/privileges.txt` on the objects runs touch.
    #[serde(rename_all = "camelCase")]
    VcenterPrivilege {
        privilege: String,
        object: String,
        /// The objects (hosts, VMs) that lack it, where not all of them do.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        missing_on: Vec<String>,
    },
    /// Reading VM Operator's objects of the Supervisor namespace as runs do (source
    /// supervisor).
    SupervisorRead,
    /// A DRS or HA setting of a cluster that decides whether the rules runs write are kept.
    #[serde(rename_all = "camelCase")]
    ClusterSetting {
        cluster: String,
        setting: String,
        value: String,
    },
    /// Whether the sites `vsphere.sites` reads partition the observed hosts, as runs require
    /// before they plan.
    #[serde(rename_all = "camelCase")]
    Sites { source: SiteSourceKind },
}

impl Subject {
    /// The item's name in the text table.
    pub fn describe(&self) -> String {
        match self {
            Subject::ApiServer => "API server reachable".to_string(),
            Subject::Permission {
                group,
                resource,
                verb,
                namespace,
                name,
            } => {
                let mut text = format!("{verb} {resource}");
                if !group.is_empty() {
                    text.push_str(&format!(".{group}"));
                }
                if let Some(name) = name {
                    text.push_str(&format!(" {name}"));
                }
                match namespace {
                    Some(namespace) => text.push_str(&format!(" in {namespace}")),
                    None => text.push_str(" (cluster-wide)"),
                }
                text
            }
            Subject::LabelWrite { node, .. } => match node {
                Some(node) => format!("label write on node {node} (dry run)"),
                None => "label write on a node (dry run)".to_string(),
            },
            Subject::LabelConfinement { .. } => {
                "writes of other labels refused (dry run)".to_string()
            }
            Subject::MetricsApi => "metrics.k8s.io served".to_string(),
            Subject::PriorityClass { name, .. } => format!("PriorityClass {name}"),
            Subject::PushgatewayReady { .. } => "Pushgateway ready".to_string(),
            Subject::VcenterLogin => "login".to_string(),
            Subject::SupervisorRead => "VM Operator's objects readable".to_string(),
            Subject::VcenterInventory => "inventory readable".to_string(),
            Subject::VcenterScope { filter } => format!("{filter} visible"),
            Subject::VcenterPrivilege {
                privilege, object, ..
            } => format!("{privilege} on {object}"),
            Subject::ClusterSetting {
                cluster,
                setting,
                value,
            } => format!("{setting} of cluster {cluster}: {value}"),
            Subject::Sites {
                source: SiteSourceKind::HostGroups,
            } => "sites from DRS host groups".to_string(),
            Subject::Sites {
                source: SiteSourceKind::VsanFaultDomains,
            } => "sites from vSAN fault domains".to_string(),
        }
    }
}

/// One thing checked: the subject, and what was found (the fix, also for some warnings, says
/// how to put a missing item in place).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Item {
    #[serde(flatten)]
    pub subject: Subject,
    #[serde(flatten)]
    pub finding: CheckFinding<ItemDetail, ItemFix>,
}

impl Item {
    pub fn new(subject: Subject, status: Status, detail: impl Into<ItemDetail>) -> Item {
        Item {
            subject,
            finding: CheckFinding::new(status, detail),
        }
    }

    pub fn with_fix(mut self, fix: impl Into<ItemFix>) -> Item {
        self.finding.fix = Some(fix.into());
        self
    }
}

/// The items of one backend.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Section {
    pub backend: Backend,
    /// What was checked: the API server and context, the Pushgateway's URL.
    pub target: String,
    pub items: Vec<Item>,
}

/// How many items stand how.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub ok: usize,
    pub missing: usize,
    /// Items dry runs do without and runs need once `dryRun` is off.
    pub missing_for_going_live: usize,
    pub warnings: usize,
    pub not_checked: usize,
}

/// The whole result, as `--output json` prints it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckReport {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub sections: Vec<Section>,
    pub summary: Summary,
    /// 0 when nothing is missing (warnings allowed), 1 when something is,
    /// [`EXIT_MISSING_FOR_GOING_LIVE`] when only going live misses something.
    pub exit_code: u8,
}

impl CheckReport {
    /// The report of these sections, its summary and exit code counted from their items.
    pub fn new(sections: Vec<Section>) -> CheckReport {
        let mut summary = Summary::default();
        for item in sections.iter().flat_map(|section| &section.items) {
            match item.finding.status {
                Status::Ok => summary.ok += 1,
                Status::Missing => summary.missing += 1,
                Status::MissingForGoingLive => summary.missing_for_going_live += 1,
                Status::Warning => summary.warnings += 1,
                Status::NotChecked => summary.not_checked += 1,
            }
        }
        CheckReport {
            api_version: API_VERSION,
            kind: "CheckReport",
            sections,
            exit_code: if summary.missing > 0 {
                1
            } else if summary.missing_for_going_live > 0 {
                EXIT_MISSING_FOR_GOING_LIVE
            } else {
                0
            },
            summary,
        }
    }

    /// The report as one JSON document.
    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a check report serializes") + "\n"
    }

    /// The report as text tables, one per section, and a summary line.
    pub fn text(&self) -> String {
        text::render(self)
    }
}

/// Runs every check `config` calls for, each backend at once.
pub async fn check(config: &RunConfig) -> CheckReport {
    let pushgateway = async {
        match &config.metrics_push {
            Some(pushgateway) => Some(pushgateway::section(pushgateway, config.timeout).await),
            None => None,
        }
    };
    // The hosts' source: vCenter, the Supervisor, or nothing to reach (node-label).
    let hosts = async {
        match &config.topology {
            TopologySource::Vcenter(vcenter) => Some(vcenter::section(vcenter, config).await),
            TopologySource::Supervisor(settings) => {
                Some(supervisor::section(settings, config).await)
            }
            TopologySource::NodeLabel => None,
        }
    };
    let (kubernetes, hosts, pushgateway) =
        tokio::join!(kubernetes::section(config), hosts, pushgateway);
    let sections = std::iter::once(kubernetes)
        .chain(hosts)
        .chain(pushgateway)
        .collect();
    CheckReport::new(sections)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(status: Status) -> Item {
        Item::new(Subject::MetricsApi, status, KubernetesDetail::MetricsListed)
    }

    #[test]
    fn only_a_missing_item_fails_the_check() {
        let sections = |statuses: &[Status]| {
            vec![Section {
                backend: Backend::Kubernetes,
                target: "t".into(),
                items: statuses.iter().copied().map(item).collect(),
            }]
        };
        let passing =
            CheckReport::new(sections(&[Status::Ok, Status::Warning, Status::NotChecked]));
        assert_eq!(passing.exit_code, 0);
        assert_eq!(
            passing.summary,
            Summary {
                ok: 1,
                missing: 0,
                missing_for_going_live: 0,
                warnings: 1,
                not_checked: 1
            }
        );
        let failing = CheckReport::new(sections(&[Status::Ok, Status::Missing]));
        assert_eq!(failing.exit_code, 1);
    }

    #[test]
    fn missing_only_for_going_live_has_its_own_exit_code_and_missing_now_wins() {
        let sections = |statuses: &[Status]| {
            vec![Section {
                backend: Backend::Vcenter,
                target: "t".into(),
                items: statuses.iter().copied().map(item).collect(),
            }]
        };
        let dry = CheckReport::new(sections(&[Status::Ok, Status::MissingForGoingLive]));
        assert_eq!(dry.exit_code, EXIT_MISSING_FOR_GOING_LIVE);
        assert_eq!(dry.summary.missing_for_going_live, 1);
        let json = serde_json::to_value(&dry).expect("serializes");
        assert_eq!(json["summary"]["missingForGoingLive"], 1);
        assert_eq!(
            json["sections"][0]["items"][1]["status"],
            "missing-for-going-live"
        );
        let both = CheckReport::new(sections(&[Status::MissingForGoingLive, Status::Missing]));
        assert_eq!(both.exit_code, 1);
    }

    #[test]
    fn an_item_in_json_names_its_check_beside_its_fields() {
        let item = Item::new(
            Subject::Permission {
                group: "".into(),
                resource: "pods/eviction".into(),
                verb: "create".into(),
                namespace: None,
                name: None,
            },
            Status::NotChecked,
            KubernetesDetail::ReviewsRefusedAbove,
        )
        .with_fix(KubernetesFix::TryAgain(RetriedRequest::AccessReview));
        assert_eq!(
            serde_json::to_value(&item).expect("serializes"),
            serde_json::json!({
                "check": "permission", "group": "", "resource": "pods/eviction",
                "verb": "create", "namespace": null, "name": null,
                "status": "not-checked",
                "detail": "SelfSubjectAccessReviews are refused (see above)",
                "fix": "the API server must answer SelfSubjectAccessReviews; try again"
            })
        );
        assert_eq!(
            item.subject.describe(),
            "create pods/eviction (cluster-wide)"
        );
    }
}
