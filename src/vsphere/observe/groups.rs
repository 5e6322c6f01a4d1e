//! A cluster's DRS groups and VM/Host rules, from `configurationEx` to [`HostGroup`],
//! [`VmGroup`] and [`VmHostRule`]: members by name beside their managed object ids, as sets.
//! These are what a site can be read from (`vsphere.sites`); vCenter owns them, nothing here
//! writes them.

use crate::inventory::{HostGroup, VmGroup, VmHostRule};
use crate::vsphere::soap::{ClusterConfig, GroupInfo, MoRef, PropertyValue, RuleInfo};

use super::Objects;

/// The cluster's host groups, by name, each host by name with its id.
pub(super) fn host_groups(
    config: &ClusterConfig,
    objects: &Objects<'_>,
    cluster: &MoRef,
) -> Vec<HostGroup> {
    let mut groups: Vec<HostGroup> = config
        .host_groups
        .iter()
        .map(|group| {
            let (hosts, host_ids) = members(group, objects, cluster);
            HostGroup {
                name: group.name.clone(),
                hosts,
                host_ids,
            }
        })
        .collect();
    groups.sort_by(|a, b| a.name.cmp(&b.name));
    groups
}

/// The cluster's VM groups, by name, each VM by name with its id.
pub(super) fn vm_groups(
    config: &ClusterConfig,
    objects: &Objects<'_>,
    cluster: &MoRef,
) -> Vec<VmGroup> {
    let mut groups: Vec<VmGroup> = config
        .vm_groups
        .iter()
        .map(|group| {
            let (vms, vm_ids) = members(group, objects, cluster);
            VmGroup {
                name: group.name.clone(),
                vms,
                vm_ids,
            }
        })
        .collect();
    groups.sort_by(|a, b| a.name.cmp(&b.name));
    groups
}

/// The cluster's VM/Host rules, in the order of `rules` (by key): the groups they name are kept
/// as vCenter has them, even where no such group exists (vCenter allows neither, but a rule
/// read back after a group was removed is the user's to see).
pub(super) fn vm_host_rules(config: &ClusterConfig) -> Vec<VmHostRule> {
    let mut rules: Vec<VmHostRule> = config.rules.iter().filter_map(vm_host_rule).collect();
    rules.sort_by(|a, b| (a.key.is_none(), a.key, &a.name).cmp(&(b.key.is_none(), b.key, &b.name)));
    rules
}

fn vm_host_rule(info: &RuleInfo) -> Option<VmHostRule> {
    let groups = info.vm_host.as_ref()?;
    Some(VmHostRule {
        name: info.name.clone(),
        key: info.key,
        // vim25 defaults, as for every rule: unset `enabled` is off, unset `mandatory` "should".
        enabled: info.enabled.unwrap_or(false),
        mandatory: info.mandatory.unwrap_or(false),
        vm_group: groups.vm_group.clone(),
        affine_host_group: groups.affine_host_group.clone(),
        anti_affine_host_group: groups.anti_affine_host_group.clone(),
    })
}

/// A group's members as (names, ids), sorted by name: a group is a set, so observations compare
/// equal whatever order vCenter keeps. A member the retrieval did not bring (out of the
/// account's sight, or gone) has no name to give and is left out.
fn members(
    group: &GroupInfo,
    objects: &Objects<'_>,
    cluster: &MoRef,
) -> (Vec<String>, Vec<String>) {
    let mut members: Vec<(&str, &str)> = group
        .members
        .iter()
        .filter_map(|member| {
            let name = objects
                .get(member)
                .and_then(|object| object.property("name"))
                .and_then(PropertyValue::as_str);
            if name.is_none() {
                tracing::warn!(
                    cluster = %cluster.value,
                    group = %group.name,
                    member = %member,
                    "DRS group names an object that was not observed; left out"
                );
            }
            name.map(|name| (name, member.value.as_str()))
        })
        .collect();
    members.sort();
    members
        .into_iter()
        .map(|(name, id)| (name.to_string(), id.to_string()))
        .unzip()
}
