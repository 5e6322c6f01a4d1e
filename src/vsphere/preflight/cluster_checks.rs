//! From the observed inventory to the cluster items: whether the policy's datacenter and
//! cluster filters find clusters, and, per cluster, whether DRS enforces the rules this tool
//! writes (DRS on, fully automated) and whether HA keeps them through a host failure (HA on,
//! `das.respectVmVmAntiAffinityRules` true).

use super::detail::VcenterDetail;
use super::fix::{ClusterName, Fix};
use super::result::{
    ClusterCheck, PreflightFinding, ScopeCheck, Setting, SettingCheck, SettingValue,
};
use super::scope::ScopeFilter;
use crate::finding::Status;
use crate::inventory::{Cluster, DrsBehavior, Inventory};

/// One item per filter entry (one for "every cluster" without filters): found or not.
pub(super) fn scope_checks(
    inventory: &Inventory,
    datacenters: &[String],
    clusters: &[String],
) -> Vec<ScopeCheck> {
    let count = |matches: &dyn Fn(&Cluster) -> bool| {
        inventory.clusters.iter().filter(|c| matches(c)).count()
    };
    let check = |filter: ScopeFilter, found: usize| ScopeCheck {
        finding: if found > 0 {
            PreflightFinding::ok(VcenterDetail::ScopeFinds {
                filter: filter.clone(),
                clusters: found,
            })
        } else {
            PreflightFinding::new(
                Status::Missing,
                VcenterDetail::ScopeFindsNone {
                    filter: filter.clone(),
                },
            )
            .with_fix(Fix::Scope {
                filter: filter.clone(),
            })
        },
        filter,
    };
    let mut checks = Vec::new();
    for datacenter in datacenters {
        let found = count(&|c| &c.datacenter == datacenter);
        checks.push(check(ScopeFilter::Datacenter(datacenter.clone()), found));
    }
    for entry in clusters {
        // As observation reads an entry: `datacenter/name`, or a name in any datacenter.
        let found = count(&|c| match entry.split_once('/') {
            Some((datacenter, name)) => c.datacenter == datacenter && c.name == name,
            None => &c.name == entry,
        });
        checks.push(check(ScopeFilter::Cluster(entry.clone()), found));
    }
    if datacenters.is_empty() && clusters.is_empty() {
        checks.push(check(ScopeFilter::AllClusters, inventory.clusters.len()));
    }
    checks
}

/// The DRS and HA settings of one observed cluster.
pub(super) fn cluster_check(cluster: &Cluster) -> ClusterCheck {
    let name = ClusterName {
        datacenter: cluster.datacenter.clone(),
        name: cluster.name.clone(),
    };
    let mut settings = drs_settings(cluster, &name);
    settings.extend(ha_settings(cluster, &name));
    ClusterCheck {
        datacenter: cluster.datacenter.clone(),
        name: cluster.name.clone(),
        id: cluster.id.clone(),
        settings,
    }
}

fn setting(setting: Setting, value: SettingValue, finding: PreflightFinding) -> SettingCheck {
    SettingCheck {
        setting,
        value,
        finding,
    }
}

fn warning(detail: VcenterDetail, fix: Fix) -> PreflightFinding {
    PreflightFinding::new(Status::Warning, detail).with_fix(fix)
}

fn drs_settings(cluster: &Cluster, name: &ClusterName) -> Vec<SettingCheck> {
    let Some(drs) = &cluster.drs else {
        let unread =
            || PreflightFinding::not_checked(VcenterDetail::ConfigurationUnreadable(name.clone()));
        return vec![
            setting(Setting::DrsEnabled, SettingValue::Unset, unread()),
            setting(Setting::DrsAutomationLevel, SettingValue::Unset, unread()),
        ];
    };
    let enabled = if drs.enabled {
        PreflightFinding::ok(VcenterDetail::DrsOn(name.clone()))
    } else {
        warning(
            VcenterDetail::DrsOff(name.clone()),
            Fix::EnableDrs {
                cluster: name.clone(),
            },
        )
    };
    let level = &drs.default_vm_behavior;
    let automation = if !drs.enabled {
        PreflightFinding::not_checked(VcenterDetail::AutomationMoot(name.clone()))
    } else if *level == DrsBehavior::FullyAutomated {
        PreflightFinding::ok(VcenterDetail::FullyAutomated(name.clone()))
    } else {
        warning(
            VcenterDetail::NotFullyAutomated(name.clone(), level.clone()),
            Fix::FullyAutomateDrs {
                cluster: name.clone(),
            },
        )
    };
    vec![
        setting(
            Setting::DrsEnabled,
            SettingValue::Flag(drs.enabled),
            enabled,
        ),
        setting(
            Setting::DrsAutomationLevel,
            SettingValue::Level(level.to_string()),
            automation,
        ),
    ]
}

fn ha_settings(cluster: &Cluster, name: &ClusterName) -> Vec<SettingCheck> {
    let Some(ha) = &cluster.ha else {
        let unread =
            || PreflightFinding::not_checked(VcenterDetail::ConfigurationUnreadable(name.clone()));
        return vec![
            setting(Setting::HaEnabled, SettingValue::Unset, unread()),
            setting(
                Setting::HaRespectsVmAntiAffinityRules,
                SettingValue::Unset,
                unread(),
            ),
        ];
    };
    let enabled = if ha.enabled {
        PreflightFinding::ok(VcenterDetail::HaOn(name.clone()))
    } else {
        warning(
            VcenterDetail::HaOff(name.clone()),
            Fix::EnableHa {
                cluster: name.clone(),
            },
        )
    };
    let respect_fix = || Fix::RespectAntiAffinityDuringFailover {
        cluster: name.clone(),
    };
    let respect = match (ha.enabled, ha.respect_vm_anti_affinity_rules) {
        (false, _) => PreflightFinding::not_checked(VcenterDetail::HaRestartsNothing(name.clone())),
        (true, Some(true)) => PreflightFinding::ok(VcenterDetail::HaRespectsRules(name.clone())),
        (true, Some(false)) => warning(VcenterDetail::HaIgnoresRules(name.clone()), respect_fix()),
        (true, None) => warning(
            VcenterDetail::HaRuleRespectUnset(name.clone()),
            respect_fix(),
        ),
    };
    vec![
        setting(Setting::HaEnabled, SettingValue::Flag(ha.enabled), enabled),
        setting(
            Setting::HaRespectsVmAntiAffinityRules,
            ha.respect_vm_anti_affinity_rules
                .map_or(SettingValue::Unset, SettingValue::Flag),
            respect,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::{DrsConfig, HaConfig, RestartPriority};

    fn cluster(drs: Option<DrsConfig>, ha: Option<HaConfig>) -> Cluster {
        Cluster {
            name: "prod".to_string(),
            id: Some("domain-c7".to_string()),
            datacenter: "dc-1".to_string(),
            datacenter_id: Some("datacenter-2".to_string()),
            drs,
            ha,
            ..Cluster::default()
        }
    }

    fn drs(enabled: bool, level: &str) -> Option<DrsConfig> {
        Some(DrsConfig {
            enabled,
            default_vm_behavior: level.into(),
        })
    }

    fn ha(enabled: bool, respect: Option<bool>) -> Option<HaConfig> {
        Some(HaConfig {
            enabled,
            admission_control: None,
            restart_priority: RestartPriority::Medium,
            respect_vm_anti_affinity_rules: respect,
        })
    }

    fn statuses(check: &ClusterCheck) -> Vec<(Setting, Status)> {
        check
            .settings
            .iter()
            .map(|s| (s.setting, s.finding.status))
            .collect()
    }

    #[test]
    fn a_cluster_set_up_for_the_rules_is_ok_throughout() {
        let check = cluster_check(&cluster(drs(true, "fullyAutomated"), ha(true, Some(true))));
        assert_eq!(
            statuses(&check),
            [
                (Setting::DrsEnabled, Status::Ok),
                (Setting::DrsAutomationLevel, Status::Ok),
                (Setting::HaEnabled, Status::Ok),
                (Setting::HaRespectsVmAntiAffinityRules, Status::Ok),
            ]
        );
    }

    #[test]
    fn drs_off_and_ha_unset_are_warnings_that_say_what_to_change() {
        let check = cluster_check(&cluster(drs(false, "fullyAutomated"), ha(true, None)));
        assert_eq!(
            statuses(&check),
            [
                (Setting::DrsEnabled, Status::Warning),
                (Setting::DrsAutomationLevel, Status::NotChecked),
                (Setting::HaEnabled, Status::Ok),
                (Setting::HaRespectsVmAntiAffinityRules, Status::Warning),
            ]
        );
        let fix = check.settings[3].finding.fix.as_ref().expect("a fix");
        assert!(
            fix.to_string()
                .starts_with("Set the HA advanced option das.respectVmVmAntiAffinityRules to true on cluster dc-1/prod"),
            "{fix}"
        );
        assert_eq!(check.settings[3].value, SettingValue::Unset);
    }

    #[test]
    fn partial_automation_is_a_warning_and_unreadable_configuration_is_not_checked() {
        let check = cluster_check(&cluster(drs(true, "manual"), None));
        assert_eq!(
            statuses(&check),
            [
                (Setting::DrsEnabled, Status::Ok),
                (Setting::DrsAutomationLevel, Status::Warning),
                (Setting::HaEnabled, Status::NotChecked),
                (Setting::HaRespectsVmAntiAffinityRules, Status::NotChecked),
            ]
        );
    }

    #[test]
    fn filters_that_find_no_cluster_are_missing() {
        let inventory = Inventory {
            clusters: vec![cluster(None, None)],
        };
        let strings = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let checks = scope_checks(
            &inventory,
            &strings(&["dc-1", "dc-2"]),
            &strings(&["dc-1/prod", "test"]),
        );
        let statuses: Vec<(&ScopeFilter, Status)> = checks
            .iter()
            .map(|c| (&c.filter, c.finding.status))
            .collect();
        assert_eq!(
            statuses,
            [
                (&ScopeFilter::Datacenter("dc-1".to_string()), Status::Ok),
                (
                    &ScopeFilter::Datacenter("dc-2".to_string()),
                    Status::Missing
                ),
                (&ScopeFilter::Cluster("dc-1/prod".to_string()), Status::Ok),
                (&ScopeFilter::Cluster("test".to_string()), Status::Missing),
            ]
        );
        let none = scope_checks(&Inventory::default(), &[], &[]);
        assert_eq!(none[0].finding.status, Status::Missing);
    }
}
