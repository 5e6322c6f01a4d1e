//! What vSphere HA does with the node VMs of failed hosts, read from each cluster's HA
//! configuration: whether they are restarted, whether failover capacity is reserved for this
//! many failures, and where our anti-affinity rules keep them from going (only when HA is told
//! to respect those rules during failover).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::Serialize;

use crate::inventory::{AdmissionControl, Cluster, HaConfig, RestartPriority, RuleKind};
use crate::plan::view::View;
use crate::policy::SourceKind;

/// Whether HA brings the failed hosts' VMs back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Restart {
    /// HA's configuration was not observed.
    Unknown,
    /// HA is off: the VMs stay down until their host returns.
    HaDisabled,
    /// The cluster's restart priority is `disabled`: HA restarts none of its VMs.
    PriorityDisabled,
    /// Admission control reserves capacity for at least this many host failures.
    CapacityReserved,
    /// HA restarts them where capacity is left: not reserved for this many failures.
    BestEffort,
}

/// One vSphere cluster with failed hosts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HaImpact {
    pub cluster: String,
    pub failed_hosts: Vec<String>,
    /// The node VMs on them.
    pub node_vms: Vec<String>,
    pub restart: Restart,
    /// Why, as its sentence in the report.
    pub detail: HaDetail,
    /// `das.respectVmVmAntiAffinityRules`; absent when not set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub respects_anti_affinity_rules: Option<bool>,
    /// Enabled anti-affinity rules with a VM on a failed host, where HA may restart VMs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<HaRule>,
}

/// An anti-affinity rule with VMs to restart: the hosts its other VMs are on, where HA keeps
/// the restarted ones from going only if it respects the rules.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HaRule {
    pub rule: String,
    /// Its VMs on the failed hosts.
    pub vms: Vec<String>,
    /// Hosts holding its other VMs.
    pub other_hosts: Vec<String>,
    /// HA will not restart the VMs on `other_hosts` (it respects the rules).
    pub held: bool,
}

pub(super) fn assess(view: &View, failed: &BTreeSet<&str>) -> Vec<HaImpact> {
    let inventory = view
        .snapshot
        .inventory
        .as_ref()
        .expect("checked by what_if");
    let names = inventory.cluster_names();
    let mut impacts = Vec::new();
    for (index, cluster) in inventory.clusters.iter().enumerate() {
        // By cluster: VM names repeat across datacenters.
        let node_vms: BTreeSet<&str> = view
            .nodes
            .iter()
            .filter_map(|n| n.placement.as_ref())
            .filter(|p| p.cluster_index == index)
            .filter_map(|p| p.vm.map(|vm| vm.name.as_str()))
            .collect();
        let failed_hosts: Vec<String> = cluster
            .hosts
            .iter()
            .filter(|h| failed.contains(h.name.as_str()))
            .map(|h| h.name.clone())
            .collect();
        if failed_hosts.is_empty() {
            continue;
        }
        let vms: Vec<String> = cluster
            .vms
            .iter()
            .filter(|vm| failed.contains(vm.host.as_str()) && node_vms.contains(vm.name.as_str()))
            .map(|vm| vm.name.clone())
            .collect();
        let (restart, detail) = restart(
            cluster.ha.as_ref(),
            failed_hosts.len(),
            view.policy.vsphere.source,
        );
        let respects = cluster
            .ha
            .as_ref()
            .and_then(|ha| ha.respect_vm_anti_affinity_rules);
        // Where HA restarts nothing, no rule decides where the VMs come back.
        let restarts = !matches!(restart, Restart::HaDisabled | Restart::PriorityDisabled);
        impacts.push(HaImpact {
            cluster: names[index].clone(),
            rules: match restarts {
                true => rules(cluster, failed, respects == Some(true)),
                false => Vec::new(),
            },
            failed_hosts,
            node_vms: vms,
            restart,
            detail,
            respects_anti_affinity_rules: respects,
        });
    }
    impacts
}

/// Whether HA restarts the VMs of `failed` failed hosts, and why. HA's settings are known only
/// through a vCenter account: a source without one says so.
fn restart(ha: Option<&HaConfig>, failed: usize, source: SourceKind) -> (Restart, HaDetail) {
    let Some(ha) = ha else {
        let detail = match source {
            SourceKind::Vcenter => HaDetail::NotObserved,
            SourceKind::Supervisor | SourceKind::NodeLabel => HaDetail::NoVcenterAccount(source),
        };
        return (Restart::Unknown, detail);
    };
    if !ha.enabled {
        return (Restart::HaDisabled, HaDetail::Off);
    }
    if ha.restart_priority == RestartPriority::Disabled {
        return (Restart::PriorityDisabled, HaDetail::PriorityDisabled);
    }
    let reserved = |level: u32, reserve: Reserve| {
        if usize::try_from(level).is_ok_and(|level| level >= failed) {
            (Restart::CapacityReserved, HaDetail::Reserved(reserve))
        } else {
            (
                Restart::BestEffort,
                HaDetail::ReservedTooFew { reserve, failed },
            )
        }
    };
    match &ha.admission_control {
        Some(AdmissionControl::HostFailures { failover_level }) => reserved(
            *failover_level,
            Reserve::HostFailures {
                level: *failover_level,
            },
        ),
        Some(AdmissionControl::ResourcePercentage {
            cpu_percent,
            memory_percent,
            failover_level: Some(level),
        }) => reserved(
            *level,
            Reserve::Percentages {
                cpu_percent: *cpu_percent,
                memory_percent: *memory_percent,
                level: *level,
            },
        ),
        Some(AdmissionControl::ResourcePercentage {
            cpu_percent,
            memory_percent,
            failover_level: None,
        }) => (
            Restart::BestEffort,
            HaDetail::PercentagesOnly {
                cpu_percent: *cpu_percent,
                memory_percent: *memory_percent,
            },
        ),
        Some(AdmissionControl::DedicatedHosts { hosts }) => reserved(
            u32::try_from(hosts.len()).unwrap_or(u32::MAX),
            Reserve::DedicatedHosts {
                hosts: hosts.clone(),
            },
        ),
        None => (Restart::BestEffort, HaDetail::AdmissionControlOff),
    }
}

/// Why HA restarts a cluster's node VMs as [`Restart`] says: its sentence is the what-if
/// report's `detail`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HaDetail {
    NotObserved,
    /// The hosts come from a source without a vCenter account, which alone shows HA's settings.
    NoVcenterAccount(SourceKind),
    Off,
    PriorityDisabled,
    /// Admission control reserves enough for the failed hosts.
    Reserved(Reserve),
    /// Admission control reserves for fewer host failures than `failed`.
    ReservedTooFew {
        reserve: Reserve,
        failed: usize,
    },
    /// Admission control reserves percentages not computed for a number of hosts.
    PercentagesOnly {
        cpu_percent: u32,
        memory_percent: u32,
    },
    AdmissionControlOff,
}

/// What admission control reserves, for a number of host failures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reserve {
    HostFailures {
        level: u32,
    },
    Percentages {
        cpu_percent: u32,
        memory_percent: u32,
        level: u32,
    },
    DedicatedHosts {
        hosts: Vec<String>,
    },
}

impl fmt::Display for Reserve {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reserve::HostFailures { level } => write!(f, "capacity for {level} host failure(s)"),
            Reserve::Percentages {
                cpu_percent,
                memory_percent,
                level,
            } => write!(
                f,
                "{cpu_percent}% CPU and {memory_percent}% memory, computed for {level} host \
                 failure(s)"
            ),
            Reserve::DedicatedHosts { hosts } => write!(
                f,
                "dedicated failover host(s) {}: the restarted node VMs go there, together",
                hosts.join(", ")
            ),
        }
    }
}

impl fmt::Display for HaDetail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HaDetail::NotObserved => {
                f.write_str("HA's configuration was not observed (a snapshot without it)")
            }
            HaDetail::NoVcenterAccount(source) => write!(
                f,
                "HA's configuration is not known: source {source} has no vCenter account"
            ),
            HaDetail::Off => {
                f.write_str("vSphere HA is off: the node VMs stay down until their host is back")
            }
            HaDetail::PriorityDisabled => f.write_str(
                "the cluster's VM restart priority is disabled: HA restarts none of its VMs",
            ),
            HaDetail::Reserved(reserve) => write!(
                f,
                "admission control reserves {reserve}: HA restarts the node VMs elsewhere"
            ),
            HaDetail::ReservedTooFew { reserve, failed } => write!(
                f,
                "admission control reserves {reserve}, fewer than {failed} failed hosts: HA \
                 restarts what the capacity left allows"
            ),
            HaDetail::PercentagesOnly {
                cpu_percent,
                memory_percent,
            } => write!(
                f,
                "admission control reserves {cpu_percent}% CPU and {memory_percent}% memory, \
                 not a number of hosts: HA restarts what that capacity allows"
            ),
            HaDetail::AdmissionControlOff => f.write_str(
                "admission control is off: HA restarts the node VMs where capacity is left",
            ),
        }
    }
}

/// As its sentence.
impl Serialize for HaDetail {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Enabled anti-affinity rules with a VM on a failed host, and the hosts of their other VMs.
fn rules(cluster: &Cluster, failed: &BTreeSet<&str>, held: bool) -> Vec<HaRule> {
    let host_of: BTreeMap<&str, &str> = cluster
        .vms
        .iter()
        .map(|vm| (vm.name.as_str(), vm.host.as_str()))
        .collect();
    cluster
        .rules
        .iter()
        .filter(|rule| rule.enabled && rule.kind == RuleKind::AntiAffinity)
        .filter_map(|rule| {
            let (down, up): (Vec<&String>, Vec<&String>) = rule.vms.iter().partition(|vm| {
                host_of
                    .get(vm.as_str())
                    .is_some_and(|host| failed.contains(host))
            });
            if down.is_empty() {
                return None;
            }
            let other_hosts: BTreeSet<String> = up
                .iter()
                .filter_map(|vm| host_of.get(vm.as_str()).map(|h| h.to_string()))
                .collect();
            Some(HaRule {
                rule: rule.name.clone(),
                vms: down.into_iter().cloned().collect(),
                other_hosts: other_hosts.into_iter().collect(),
                held,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{HaDetail, Reserve, Restart, restart};
    use crate::inventory::{AdmissionControl, HaConfig, RestartPriority};
    use crate::policy::SourceKind;

    fn ha(admission_control: Option<AdmissionControl>) -> HaConfig {
        HaConfig {
            enabled: true,
            admission_control,
            restart_priority: RestartPriority::Medium,
            respect_vm_anti_affinity_rules: None,
        }
    }

    #[test]
    fn each_admission_control_policy_gives_its_restart_and_its_sentence() {
        let cases = [
            (
                HaConfig {
                    restart_priority: RestartPriority::Disabled,
                    ..ha(None)
                },
                Restart::PriorityDisabled,
                HaDetail::PriorityDisabled,
                "the cluster's VM restart priority is disabled: HA restarts none of its VMs",
            ),
            (
                ha(None),
                Restart::BestEffort,
                HaDetail::AdmissionControlOff,
                "admission control is off: HA restarts the node VMs where capacity is left",
            ),
            (
                ha(Some(AdmissionControl::ResourcePercentage {
                    cpu_percent: 25,
                    memory_percent: 30,
                    failover_level: None,
                })),
                Restart::BestEffort,
                HaDetail::PercentagesOnly {
                    cpu_percent: 25,
                    memory_percent: 30,
                },
                "admission control reserves 25% CPU and 30% memory, not a number of hosts: HA \
                 restarts what that capacity allows",
            ),
            (
                ha(Some(AdmissionControl::ResourcePercentage {
                    cpu_percent: 25,
                    memory_percent: 30,
                    failover_level: Some(2),
                })),
                Restart::CapacityReserved,
                HaDetail::Reserved(Reserve::Percentages {
                    cpu_percent: 25,
                    memory_percent: 30,
                    level: 2,
                }),
                "admission control reserves 25% CPU and 30% memory, computed for 2 host \
                 failure(s): HA restarts the node VMs elsewhere",
            ),
            (
                ha(Some(AdmissionControl::DedicatedHosts {
                    hosts: vec!["esxi-9".to_string()],
                })),
                Restart::BestEffort,
                HaDetail::ReservedTooFew {
                    reserve: Reserve::DedicatedHosts {
                        hosts: vec!["esxi-9".to_string()],
                    },
                    failed: 2,
                },
                "admission control reserves dedicated failover host(s) esxi-9: the restarted \
                 node VMs go there, together, fewer than 2 failed hosts: HA restarts what the \
                 capacity left allows",
            ),
        ];
        for (config, kind, detail, text) in cases {
            let (restart, said) = restart(Some(&config), 2, SourceKind::Vcenter);
            assert_eq!((restart, &said), (kind, &detail));
            assert_eq!(said.to_string(), text);
        }
    }

    #[test]
    fn unknown_ha_says_why_a_source_without_vcenter_cannot_know_it() {
        let (kind, detail) = restart(None, 1, SourceKind::Vcenter);
        assert_eq!((kind, detail), (Restart::Unknown, HaDetail::NotObserved));
        let (kind, detail) = restart(None, 1, SourceKind::Supervisor);
        assert_eq!(kind, Restart::Unknown);
        assert_eq!(
            detail.to_string(),
            "HA's configuration is not known: source supervisor has no vCenter account"
        );
    }
}
