//! What vSphere HA does with the node VMs of failed hosts, read from each cluster's HA
//! configuration: whether they are restarted, whether failover capacity is reserved for this
//! many failures, and where our anti-affinity rules keep them from going (only when HA is told
//! to respect those rules during failover).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::super::view::View;
use crate::inventory::{AdmissionControl, Cluster, HaConfig, RestartPriority, RuleKind};

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
    /// Why, in words.
    pub detail: String,
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
        let (restart, detail) = restart(cluster.ha.as_ref(), failed_hosts.len());
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

/// Whether HA restarts the VMs of `failed` failed hosts, and why, in words.
fn restart(ha: Option<&HaConfig>, failed: usize) -> (Restart, String) {
    let Some(ha) = ha else {
        return (
            Restart::Unknown,
            "HA's configuration was not observed (a snapshot without it)".to_string(),
        );
    };
    if !ha.enabled {
        return (
            Restart::HaDisabled,
            "vSphere HA is off: the node VMs stay down until their host is back".to_string(),
        );
    }
    if ha.restart_priority == RestartPriority::Disabled {
        return (
            Restart::PriorityDisabled,
            "the cluster's VM restart priority is disabled: HA restarts none of its VMs"
                .to_string(),
        );
    }
    let reserved = |level: u32, how: String| {
        if usize::try_from(level).is_ok_and(|level| level >= failed) {
            (
                Restart::CapacityReserved,
                format!("admission control reserves {how}: HA restarts the node VMs elsewhere"),
            )
        } else {
            (
                Restart::BestEffort,
                format!(
                    "admission control reserves {how}, fewer than {failed} failed hosts: HA \
                     restarts what the capacity left allows"
                ),
            )
        }
    };
    match &ha.admission_control {
        Some(AdmissionControl::HostFailures { failover_level }) => reserved(
            *failover_level,
            format!("capacity for {failover_level} host failure(s)"),
        ),
        Some(AdmissionControl::ResourcePercentage {
            cpu_percent,
            memory_percent,
            failover_level: Some(level),
        }) => reserved(
            *level,
            format!(
                "{cpu_percent}% CPU and {memory_percent}% memory, computed for {level} host \
                 failure(s)"
            ),
        ),
        Some(AdmissionControl::ResourcePercentage {
            cpu_percent,
            memory_percent,
            failover_level: None,
        }) => (
            Restart::BestEffort,
            format!(
                "admission control reserves {cpu_percent}% CPU and {memory_percent}% memory, \
                 not a number of hosts: HA restarts what that capacity allows"
            ),
        ),
        Some(AdmissionControl::DedicatedHosts { hosts }) => reserved(
            u32::try_from(hosts.len()).unwrap_or(u32::MAX),
            format!(
                "dedicated failover host(s) {}: the restarted node VMs go there, together",
                hosts.join(", ")
            ),
        ),
        None => (
            Restart::BestEffort,
            "admission control is off: HA restarts the node VMs where capacity is left".to_string(),
        ),
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
