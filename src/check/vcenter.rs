//! The vCenter section: the preflight of [`crate::vsphere::preflight`] (login, the objects runs
//! touch, each privilege on them, DRS and HA settings) as check items, and the policy's sites
//! against the inventory it observed.

use crate::finding::Status;
use crate::inventory::Inventory;
use crate::policy::SiteSettings;
use crate::settings::RunConfig;
use crate::sites;
use crate::vsphere::ConnectionConfig;
use crate::vsphere::preflight::{self, DrsRuleWrites, Preflight, PreflightFinding, Scope};

use super::{Backend, Item, ItemDetail, ItemFix, Section, SiteDetail, Subject};

/// Asks vCenter about everything runs of `config` need from it.
pub async fn section(connection: &ConnectionConfig, config: &RunConfig) -> Section {
    let settings = &config.policy.vsphere;
    let scope = Scope {
        datacenters: settings.datacenters.clone(),
        clusters: settings.clusters.clone(),
        drs_rule_writes: match (settings.drs_rules.enabled, config.dry_run) {
            (false, _) => DrsRuleWrites::Off,
            (true, true) => DrsRuleWrites::DryRun,
            (true, false) => DrsRuleWrites::Written,
        },
    };
    let mut found = preflight::preflight(connection, &scope).await;
    let inventory = found.inventory.take();
    let mut section = items(found);
    if let Some(settings) = settings.site_settings() {
        section
            .items
            .extend(site_items(inventory.as_ref(), settings));
    }
    section
}

/// Whether the sites `settings` reads partition the hosts observed: one item when they do (or
/// could not be checked), one missing item per finding when they do not, since runs refuse to
/// plan on such sites.
fn site_items(inventory: Option<&Inventory>, settings: &SiteSettings) -> Vec<Item> {
    let subject = Subject::Sites {
        source: (&settings.source).into(),
    };
    let Some(inventory) = inventory else {
        return vec![Item::new(
            subject,
            Status::NotChecked,
            SiteDetail::NotObserved,
        )];
    };
    let resolution = sites::resolve(inventory, settings);
    if resolution.findings.is_empty() {
        let map = &resolution.map;
        let counts = (map.names().into_iter())
            .map(|site| (site.to_string(), map.hosts_of(site).count()))
            .collect();
        return vec![Item::new(
            subject,
            Status::Ok,
            SiteDetail::Partitioned(counts),
        )];
    }
    (resolution.findings.into_iter())
        .map(|finding| {
            Item::new(
                subject.clone(),
                Status::Missing,
                SiteDetail::Refused(finding.clone()),
            )
            .with_fix(finding)
        })
        .collect()
}

/// The section of a preflight's result, in its order: login, inventory, scope, privileges,
/// cluster settings.
fn items(found: Preflight) -> Section {
    let mut target = format!("{} as {}", found.server, found.username);
    if let Some(version) = &found.vcenter {
        target.push_str(&format!(
            " ({}, API {})",
            version.full_name, version.api_version
        ));
    }
    let mut items = vec![
        item(Subject::VcenterLogin, found.login),
        item(Subject::VcenterInventory, found.observation),
    ];
    items.extend(found.scope.into_iter().map(|check| {
        item(
            Subject::VcenterScope {
                filter: check.filter.to_string(),
            },
            check.finding,
        )
    }));
    items.extend(found.privileges.into_iter().map(|check| {
        item(
            Subject::VcenterPrivilege {
                privilege: check.privilege,
                object: check.object.to_string(),
                missing_on: check.missing_on,
            },
            check.finding,
        )
    }));
    for cluster in found.clusters {
        let name = if cluster.datacenter.is_empty() {
            cluster.name.clone()
        } else {
            format!("{}/{}", cluster.datacenter, cluster.name)
        };
        items.extend(cluster.settings.into_iter().map(|check| {
            item(
                Subject::ClusterSetting {
                    cluster: name.clone(),
                    setting: check.setting.to_string(),
                    value: check.value.to_string(),
                },
                check.finding,
            )
        }));
    }
    Section {
        backend: Backend::Vcenter,
        target,
        items,
    }
}

fn item(subject: Subject, finding: PreflightFinding) -> Item {
    Item {
        subject,
        finding: finding.map(ItemDetail::Vcenter, ItemFix::Vcenter),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vsphere::preflight::{ClusterName, Fix, Status, VcenterDetail};

    #[test]
    fn a_preflight_finding_becomes_an_item_whose_detail_and_fix_are_their_sentences() {
        let cluster = ClusterName {
            datacenter: "dc-1".to_string(),
            name: "prod".to_string(),
        };
        let finding = PreflightFinding::new(Status::Warning, VcenterDetail::HaOn(cluster.clone()))
            .with_fix(Fix::EnableHa {
                cluster: cluster.clone(),
            });
        let subject = Subject::ClusterSetting {
            cluster: "dc-1/prod".to_string(),
            setting: "vSphere HA".to_string(),
            value: "on".to_string(),
        };
        let json = serde_json::to_value(item(subject, finding)).expect("serializes");
        assert_eq!(json["status"], "warning");
        assert_eq!(json["detail"], "vSphere HA is on for cluster dc-1/prod.");
        assert_eq!(json["fix"], Fix::EnableHa { cluster }.to_string().as_str());
    }
}
