//! What a report says of VKS guest clusters when the hosts come from VM Operator's objects: each
//! guest cluster's cluster modules and the node VMs in them, its node VMs in none (and why), and
//! the VMs on no host yet. The inventory holds the modules as rules; this is the part only the
//! Supervisor's findings know. `run`, `plan` and `what-if` reports carry it alike.

use std::fmt::Write as _;

use serde::Serialize;

use super::ReportWarning;
use crate::text::escaped;
use crate::vm_operator::{Findings, GuestCluster, MissingModule, UnplacedReason, UnplacedVm};

/// The Supervisor's findings as a report shows them, beside its other fields (`guestClusters`,
/// `unplacedVms`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GuestClusters {
    pub guest_clusters: Vec<GuestCluster>,
    /// VMs VM Operator shows on no ESXi host: left out of the inventory.
    pub unplaced_vms: Vec<UnplacedVm>,
}

impl From<Findings> for GuestClusters {
    fn from(findings: Findings) -> GuestClusters {
        GuestClusters {
            guest_clusters: findings.guest_clusters,
            unplaced_vms: findings.unplaced,
        }
    }
}

impl GuestClusters {
    /// The one warning of node VMs in no cluster module, when there are any: DRS keeps them
    /// apart from nothing, whatever the guest cluster's spread asks.
    pub fn warning(&self) -> Option<ReportWarning> {
        let vms: Vec<String> = self
            .guest_clusters
            .iter()
            .flat_map(|guest| {
                guest
                    .outside_modules
                    .iter()
                    .map(move |missing| format!("{}/{}", guest.namespace, missing.vm()))
            })
            .collect();
        (!vms.is_empty()).then_some(ReportWarning::OutsideClusterModules { vms })
    }

    /// The text report's section: one block per guest cluster, then the VMs on no host.
    pub fn write_text(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "Guest clusters ({}; cluster modules from the Supervisor, soft: DRS keeps their \
             members apart when it can)",
            self.guest_clusters.len()
        );
        for guest in &self.guest_clusters {
            write_guest(out, guest);
        }
        if !self.unplaced_vms.is_empty() {
            let _ = writeln!(out, "  On no ESXi host yet:");
            for vm in &self.unplaced_vms {
                let _ = writeln!(
                    out,
                    "    {}/{}  ({})",
                    escaped(&vm.namespace),
                    escaped(&vm.name),
                    unplaced_reason(vm.reason)
                );
            }
        }
        out.push('\n');
    }
}

fn write_guest(out: &mut String, guest: &GuestCluster) {
    let _ = writeln!(
        out,
        "  {}/{}",
        escaped(&guest.namespace),
        escaped(&guest.name)
    );
    for module in &guest.modules {
        let vms = match module.vms.is_empty() {
            true => "(no VM yet)".to_string(),
            false => escaped(&module.vms.join(", ")).to_string(),
        };
        let _ = writeln!(
            out,
            "    module {}/{} (cluster {}): {vms}",
            escaped(&module.policy),
            escaped(&module.group),
            escaped(&module.cluster_id)
        );
    }
    for missing in &guest.outside_modules {
        let _ = writeln!(
            out,
            "    in no module: {}  ({})",
            escaped(missing.vm()),
            escaped(&missing_reason(missing))
        );
    }
}

/// Why a node VM is in no module, in a sentence's words.
pub fn missing_reason(missing: &MissingModule) -> String {
    match missing {
        MissingModule::NoGroupAnnotation { .. } => {
            "no vsphere-cluster-module-group annotation".to_string()
        }
        MissingModule::NoResourcePolicy { group, .. } => {
            format!("group {group} names no resource policy")
        }
        MissingModule::PolicyNotFound { policy, .. } => {
            format!("resource policy {policy} was not read")
        }
        MissingModule::GroupWithoutModule { policy, group, .. } => {
            format!("resource policy {policy} has no module of group {group}")
        }
        MissingModule::StaleModule { group, uuid, .. } => {
            format!("module {uuid} of group {group} is no longer in its resource policy")
        }
        MissingModule::ModuleUndetermined { group, .. } => {
            format!("group {group} has a module in several vSphere clusters and the VM names none")
        }
    }
}

/// Why a VM is on no host, in a sentence's words.
pub fn unplaced_reason(reason: UnplacedReason) -> &'static str {
    match reason {
        UnplacedReason::NotCreated => "not created in vSphere yet",
        UnplacedReason::NoHost => "VM Operator reports no host",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vm_operator::Module;

    fn guest(outside: Vec<MissingModule>) -> GuestClusters {
        GuestClusters {
            guest_clusters: vec![GuestCluster {
                namespace: "team-a".to_string(),
                name: "tkc-1".to_string(),
                modules: vec![Module {
                    policy: "tkc-1".to_string(),
                    group: "tkc-1-workers-0".to_string(),
                    uuid: "52a1".to_string(),
                    cluster_id: "domain-c8".to_string(),
                    vms: vec!["worker-a".to_string(), "worker-b".to_string()],
                }],
                outside_modules: outside,
            }],
            unplaced_vms: vec![UnplacedVm {
                namespace: "team-a".to_string(),
                name: "worker-c".to_string(),
                reason: UnplacedReason::NotCreated,
            }],
        }
    }

    #[test]
    fn node_vms_in_no_module_give_one_warning_naming_each() {
        let shown = guest(vec![
            MissingModule::NoGroupAnnotation {
                vm: "cp-1".to_string(),
            },
            MissingModule::PolicyNotFound {
                vm: "worker-d".to_string(),
                policy: "gone".to_string(),
            },
        ]);
        assert_eq!(
            shown.warning(),
            Some(ReportWarning::OutsideClusterModules {
                vms: vec!["team-a/cp-1".to_string(), "team-a/worker-d".to_string()]
            })
        );
        assert_eq!(guest(vec![]).warning(), None);
    }

    #[test]
    fn the_text_names_each_module_its_vms_and_the_vms_on_no_host() {
        let mut out = String::new();
        guest(vec![MissingModule::GroupWithoutModule {
            vm: "worker-d".to_string(),
            policy: "tkc-1".to_string(),
            group: "tkc-1-workers-1".to_string(),
        }])
        .write_text(&mut out);
        assert!(
            out.contains(
                "    module tkc-1/tkc-1-workers-0 (cluster domain-c8): worker-a, worker-b\n"
            ),
            "{out}"
        );
        assert!(
            out.contains(
                "    in no module: worker-d  (resource policy tkc-1 has no module of group \
                 tkc-1-workers-1)\n"
            ),
            "{out}"
        );
        assert!(
            out.contains("    team-a/worker-c  (not created in vSphere yet)\n"),
            "{out}"
        );
    }

    #[test]
    fn the_json_names_the_fields_in_camel_case() {
        let json = serde_json::to_value(guest(vec![])).expect("serializes");
        assert_eq!(
            json["guestClusters"][0]["modules"][0]["clusterId"],
            "domain-c8"
        );
        assert_eq!(json["unplacedVms"][0]["reason"], "notCreated");
    }
}
