//! From `privileges.txt` and vCenter's answers to privilege rows: one row per privilege and
//! object (the hosts and the VMs of a cluster each make one row), with the methods that need it
//! there, whether the account holds it, and where to grant it when not.

use std::collections::{BTreeSet, HashMap};

use super::DrsRuleWrites;
use super::detail::{PrivilegeNeed, VcenterDetail};
use super::fix::Fix;
use super::result::{PreflightFinding, PrivilegeCheck};
use super::scope::ObjectScope;
use crate::cause::Failure;
use crate::finding::Status;
use crate::inventory::{Cluster, Inventory};
use crate::vsphere::Error;
use crate::vsphere::privileges::{NeededFor, ObjectKind, PrivilegeLine};
use crate::vsphere::soap::{EntityPrivileges, MissingPrivilege, MoRef};

/// What vCenter answered to one privilege query (or to its chunks): privileges by entity, or
/// why it did not answer.
#[derive(Debug, Default)]
pub(super) struct Asked {
    granted: HashMap<MoRef, HashMap<String, bool>>,
    failure: Option<Refusal>,
}

/// A privilege query vCenter refused or could not answer.
#[derive(Debug)]
struct Refusal {
    failure: Failure,
    /// What vCenter said was missing, when it refused with `NoPermission`.
    missing: Option<MissingPrivilege>,
}

impl Asked {
    pub(super) fn record(&mut self, answer: Result<Vec<EntityPrivileges>, Error>) {
        match answer {
            Ok(entities) => {
                for entity in entities {
                    self.granted
                        .entry(entity.entity)
                        .or_default()
                        .extend(entity.privileges);
                }
            }
            // The first failure says why; later chunks fail for the same reason.
            Err(error) if self.failure.is_none() => {
                self.failure = Some(Refusal {
                    failure: error.failure(),
                    missing: error
                        .fault()
                        .and_then(|f| f.missing_privilege.as_deref().cloned()),
                });
            }
            Err(_) => {}
        }
    }
}

/// The privileges of the lines checked on objects of `kinds`, each once, in file order.
pub(super) fn privileges_on(lines: &[PrivilegeLine], kinds: &[ObjectKind]) -> Vec<&'static str> {
    let mut privileges: Vec<&'static str> = Vec::new();
    for line in lines.iter().filter(|line| kinds.contains(&line.object)) {
        if !privileges.contains(&line.privilege) {
            privileges.push(line.privilege);
        }
    }
    privileges
}

/// The object kinds asked about entity by entity (host folders are judged by whether the
/// datacenter above each cluster was found through them).
pub(super) const ENTITY_KINDS: &[ObjectKind] = &[
    ObjectKind::Datacenter,
    ObjectKind::Cluster,
    ObjectKind::Host,
    ObjectKind::Vm,
];

/// Every datacenter, cluster, host and VM of the inventory, each once.
pub(super) fn entities(inventory: &Inventory) -> Vec<MoRef> {
    let mut entities: Vec<MoRef> = Vec::new();
    let mut push = |kind: &str, id: &Option<String>| {
        if let Some(id) = id {
            let entity = MoRef::new(kind, id.as_str());
            if !entities.contains(&entity) {
                entities.push(entity);
            }
        }
    };
    for cluster in &inventory.clusters {
        push("Datacenter", &cluster.datacenter_id);
        push("ClusterComputeResource", &cluster.id);
        for host in &cluster.hosts {
            push("HostSystem", &host.id);
        }
        for vm in &cluster.vms {
            push("VirtualMachine", &vm.id);
        }
    }
    entities
}

/// The lines of one privilege on one kind of object, merged.
struct Group {
    privilege: &'static str,
    object: ObjectKind,
    needed_for: BTreeSet<NeededFor>,
    methods: BTreeSet<&'static str>,
}

fn groups(lines: &[PrivilegeLine]) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    for line in lines {
        match groups
            .iter_mut()
            .find(|g| g.privilege == line.privilege && g.object == line.object)
        {
            Some(group) => {
                group.needed_for.insert(line.needed_for);
                group.methods.insert(line.method);
            }
            None => groups.push(Group {
                privilege: line.privilege,
                object: line.object,
                needed_for: BTreeSet::from([line.needed_for]),
                methods: BTreeSet::from([line.method]),
            }),
        }
    }
    groups.sort_by(|a, b| (a.object, a.privilege).cmp(&(b.object, b.privilege)));
    groups
}

/// Objects one row is about: the entities asked about, by name, and where the fix grants.
struct Target {
    scope: ObjectScope,
    members: Vec<(Option<MoRef>, String)>,
    grant_on: ObjectScope,
    propagate: bool,
}

/// One row per privilege and object of `lines`: the root folder from `root_asked`, the
/// inventory's objects from `entity_asked` (none without an inventory: it could not be read).
/// DRS-rule-write privileges count as required only when the runs write DRS rules.
pub(super) fn rows(
    lines: &[PrivilegeLine],
    root: &MoRef,
    inventory: Option<&Inventory>,
    root_asked: &Asked,
    entity_asked: &Asked,
    drs_rule_writes: DrsRuleWrites,
) -> Vec<PrivilegeCheck> {
    let mut rows = Vec::new();
    for group in groups(lines) {
        let required = group.needed_for.contains(&NeededFor::Observe)
            || (drs_rule_writes == DrsRuleWrites::Written
                && group.needed_for.contains(&NeededFor::DrsRuleWrites));
        if group.object == ObjectKind::RootFolder {
            let target = root_target(root);
            rows.push(row(&group, target, root_asked, required, drs_rule_writes));
            continue;
        }
        let Some(inventory) = inventory else {
            continue;
        };
        if group.object == ObjectKind::HostFolder {
            for cluster in &inventory.clusters {
                rows.push(host_folder_row(&group, cluster, required));
            }
            continue;
        }
        for target in targets(group.object, group.privilege, inventory) {
            rows.push(row(&group, target, entity_asked, required, drs_rule_writes));
        }
    }
    rows
}

fn root_target(root: &MoRef) -> Target {
    let scope = ObjectScope::RootFolder {
        id: root.value.clone(),
    };
    Target {
        members: vec![(Some(root.clone()), scope.to_string())],
        grant_on: scope.clone(),
        scope,
        propagate: false,
    }
}

/// The rows' objects for one kind: each datacenter or cluster, or each cluster's hosts or VMs.
fn targets(kind: ObjectKind, privilege: &str, inventory: &Inventory) -> Vec<Target> {
    let reference = |kind: &str, id: &Option<String>| id.as_ref().map(|id| MoRef::new(kind, id));
    let datacenter = |cluster: &Cluster| ObjectScope::Datacenter {
        name: cluster.datacenter.clone(),
        id: cluster.datacenter_id.clone(),
    };
    let mut targets: Vec<Target> = Vec::new();
    for cluster in &inventory.clusters {
        let target = match kind {
            ObjectKind::Datacenter => {
                // A datacenter observation did not find has no id to ask about: the account
                // cannot read it or the host folders below it, which their row says with the fix.
                if cluster.datacenter_id.is_none()
                    || targets.iter().any(|t| t.scope == datacenter(cluster))
                {
                    continue;
                }
                Target {
                    scope: datacenter(cluster),
                    members: vec![(
                        reference("Datacenter", &cluster.datacenter_id),
                        cluster.datacenter.clone(),
                    )],
                    grant_on: datacenter(cluster),
                    propagate: true,
                }
            }
            ObjectKind::Cluster => {
                let scope = ObjectScope::Cluster {
                    datacenter: cluster.datacenter.clone(),
                    name: cluster.name.clone(),
                    id: cluster.id.clone(),
                };
                // Reading is granted from the datacenter down; a write only where it is made.
                let (grant_on, propagate) = if privilege.starts_with("System.") {
                    (datacenter(cluster), true)
                } else {
                    (scope.clone(), false)
                };
                Target {
                    members: vec![(
                        reference("ClusterComputeResource", &cluster.id),
                        cluster.qualified_name(),
                    )],
                    scope,
                    grant_on,
                    propagate,
                }
            }
            ObjectKind::Host => {
                let scope = ObjectScope::Hosts {
                    datacenter: cluster.datacenter.clone(),
                    cluster: cluster.name.clone(),
                    count: cluster.hosts.len(),
                };
                Target {
                    members: cluster
                        .hosts
                        .iter()
                        .map(|host| (reference("HostSystem", &host.id), host.name.clone()))
                        .collect(),
                    grant_on: scope.clone(),
                    scope,
                    propagate: true,
                }
            }
            ObjectKind::Vm => {
                let scope = ObjectScope::Vms {
                    datacenter: cluster.datacenter.clone(),
                    cluster: cluster.name.clone(),
                    count: cluster.vms.len(),
                };
                Target {
                    members: cluster
                        .vms
                        .iter()
                        .map(|vm| (reference("VirtualMachine", &vm.id), vm.name.clone()))
                        .collect(),
                    grant_on: scope.clone(),
                    scope,
                    propagate: true,
                }
            }
            ObjectKind::RootFolder | ObjectKind::HostFolder => continue,
        };
        targets.push(target);
    }
    targets
}

/// What needs a privilege, in words.
/// Who needs a privilege the account lacks: the runs checked for (`required`), only this
/// check, or only the DRS rule writes these runs make, would make going live, or do not make.
fn privilege_need(group: &Group, required: bool, drs_rule_writes: DrsRuleWrites) -> PrivilegeNeed {
    if required {
        PrivilegeNeed::Runs
    } else if !group.needed_for.contains(&NeededFor::DrsRuleWrites) {
        PrivilegeNeed::OnlyThisCheck
    } else {
        match drs_rule_writes {
            DrsRuleWrites::Written => PrivilegeNeed::OnlyThisCheck,
            DrsRuleWrites::DryRun => PrivilegeNeed::GoingLive,
            DrsRuleWrites::Off => PrivilegeNeed::NoRuleWrites,
        }
    }
}

fn row(
    group: &Group,
    target: Target,
    asked: &Asked,
    required: bool,
    drs_rule_writes: DrsRuleWrites,
) -> PrivilegeCheck {
    let privilege = group.privilege;
    let scope = &target.scope;
    let mut missing: Vec<String> = Vec::new();
    let mut unanswered: Vec<String> = Vec::new();
    for (entity, name) in &target.members {
        let answer = entity.as_ref().and_then(|entity| {
            asked
                .granted
                .get(entity)
                .and_then(|privileges| privileges.get(privilege))
        });
        match (answer, &asked.failure) {
            (Some(true), _) => {}
            (Some(false), _) => missing.push(name.clone()),
            (
                None,
                Some(Refusal {
                    missing: Some(refused),
                    ..
                }),
            ) if refused.privilege == privilege
                && entity.as_ref().map(MoRef::to_string) == Some(refused.object.clone()) =>
            {
                missing.push(name.clone())
            }
            (None, _) => unanswered.push(name.clone()),
        }
    }
    let fix = Fix::Grant {
        privilege: privilege.to_string(),
        on: target.grant_on.clone(),
        propagate: target.propagate,
    };
    let lacking = if target.members.len() > 1 {
        missing.clone()
    } else {
        Vec::new()
    };
    let finding = if !missing.is_empty() {
        let need = privilege_need(group, required, drs_rule_writes);
        let status = match need {
            PrivilegeNeed::Runs => Status::Missing,
            PrivilegeNeed::GoingLive => Status::MissingForGoingLive,
            PrivilegeNeed::OnlyThisCheck | PrivilegeNeed::NoRuleWrites => Status::Warning,
        };
        let detail = VcenterDetail::Lacks {
            privilege: privilege.to_string(),
            on: scope.clone(),
            lacking: lacking.clone(),
            needed_for: group.needed_for.iter().copied().collect(),
            need,
        };
        PreflightFinding::new(status, detail).with_fix(fix)
    } else if !unanswered.is_empty() {
        PreflightFinding::not_checked(match &asked.failure {
            Some(refusal) => VcenterDetail::Unanswered {
                privilege: privilege.to_string(),
                on: scope.clone(),
                failure: refusal.failure.clone(),
            },
            None => VcenterDetail::NoAnswerFor {
                privilege: privilege.to_string(),
                objects: unanswered,
            },
        })
    } else {
        PreflightFinding::ok(VcenterDetail::Holds {
            privilege: privilege.to_string(),
            on: scope.clone(),
        })
    };
    PrivilegeCheck {
        privilege: privilege.to_string(),
        object: target.scope,
        needed_for: group.needed_for.iter().copied().collect(),
        methods: group.methods.iter().map(|m| m.to_string()).collect(),
        missing_on: lacking,
        finding,
    }
}

/// Observation reads the host folders above each cluster to find its datacenter: the
/// datacenter found means they were readable.
fn host_folder_row(group: &Group, cluster: &Cluster, required: bool) -> PrivilegeCheck {
    let scope = ObjectScope::HostFolders {
        datacenter: cluster.datacenter.clone(),
        cluster: cluster.name.clone(),
    };
    let finding = if cluster.datacenter_id.is_some() {
        PreflightFinding::ok(VcenterDetail::HostFoldersRead { on: scope.clone() })
    } else {
        let status = if required {
            Status::Missing
        } else {
            Status::Warning
        };
        let detail = VcenterDetail::NoDatacenterAbove {
            cluster: cluster.name.clone(),
            privilege: group.privilege.to_string(),
        };
        PreflightFinding::new(status, detail).with_fix(Fix::Grant {
            privilege: group.privilege.to_string(),
            on: scope.clone(),
            propagate: true,
        })
    };
    PrivilegeCheck {
        privilege: group.privilege.to_string(),
        object: scope,
        needed_for: group.needed_for.iter().copied().collect(),
        methods: group.methods.iter().map(|m| m.to_string()).collect(),
        missing_on: Vec::new(),
        finding,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::{ConnectionState, Host, MaintenanceMode, PowerState, Vm};
    use crate::vsphere::privileges::privilege_lines;

    fn inventory() -> Inventory {
        let host = |name: &str, id: &str| Host {
            name: name.to_string(),
            id: Some(id.to_string()),
            connection_state: ConnectionState::Connected,
            in_maintenance_mode: MaintenanceMode::Off,
            vsan_fault_domain: None,
        };
        let vm = |name: &str, id: &str| Vm {
            name: name.to_string(),
            id: Some(id.to_string()),
            uuid: String::new(),
            host: String::new(),
            power_state: PowerState::PoweredOn,
            drs_behavior: None,
        };
        Inventory {
            clusters: vec![Cluster {
                name: "prod".to_string(),
                id: Some("domain-c7".to_string()),
                datacenter: "dc-1".to_string(),
                datacenter_id: Some("datacenter-2".to_string()),
                hosts: vec![host("esxi-1", "host-10"), host("esxi-2", "host-11")],
                vms: vec![vm("worker-a", "vm-20"), vm("worker-b", "vm-21")],
                ..Cluster::default()
            }],
        }
    }

    fn root() -> MoRef {
        MoRef::new("Folder", "group-d1")
    }

    /// Answers granting every privilege asked about on every entity, except `denied`.
    fn answers(entities: &[MoRef], privileges: &[&str], denied: &[(&str, &str)]) -> Asked {
        let mut asked = Asked::default();
        asked.record(Ok(entities
            .iter()
            .map(|entity| EntityPrivileges {
                entity: entity.clone(),
                privileges: privileges
                    .iter()
                    .map(|privilege| {
                        let denied = denied.contains(&(entity.value.as_str(), privilege));
                        (privilege.to_string(), !denied)
                    })
                    .collect(),
            })
            .collect()));
        asked
    }

    fn all_rows(denied: &[(&str, &str)], drs_rule_writes: DrsRuleWrites) -> Vec<PrivilegeCheck> {
        let lines = privilege_lines();
        let inventory = inventory();
        let root_asked = answers(
            &[root()],
            &privileges_on(&lines, &[ObjectKind::RootFolder]),
            denied,
        );
        let entity_asked = answers(
            &entities(&inventory),
            &privileges_on(&lines, ENTITY_KINDS),
            denied,
        );
        rows(
            &lines,
            &root(),
            Some(&inventory),
            &root_asked,
            &entity_asked,
            drs_rule_writes,
        )
    }

    #[test]
    fn every_privilege_held_everywhere_is_ok_and_each_line_has_its_row() {
        let rows = all_rows(&[], DrsRuleWrites::Written);
        assert!(
            rows.iter().all(|row| row.finding.status == Status::Ok),
            "{rows:#?}"
        );
        for line in privilege_lines() {
            assert!(
                rows.iter().any(|row| row.privilege == line.privilege
                    && row.methods.iter().any(|m| m == line.method)
                    && row.needed_for.contains(&line.needed_for)),
                "no row for {line:?}"
            );
        }
    }

    /// The one row whose status is not ok.
    fn only_row_not_ok(rows: &[PrivilegeCheck]) -> &PrivilegeCheck {
        let not_ok: Vec<&PrivilegeCheck> = rows
            .iter()
            .filter(|row| row.finding.status != Status::Ok)
            .collect();
        let [row] = not_ok.as_slice() else {
            panic!("one row: {not_ok:#?}");
        };
        row
    }

    #[test]
    fn a_missing_write_privilege_names_the_cluster_and_how_to_grant_it() {
        let rows = all_rows(
            &[("domain-c7", "Host.Inventory.EditCluster")],
            DrsRuleWrites::Written,
        );
        let row = only_row_not_ok(&rows);
        assert_eq!(row.privilege, "Host.Inventory.EditCluster");
        assert_eq!(row.finding.status, Status::Missing);
        assert_eq!(row.methods, ["ReconfigureComputeResource_Task"]);
        assert_eq!(
            row.finding.detail.to_string(),
            "The account lacks Host.Inventory.EditCluster on cluster dc-1/prod (domain-c7), \
             which DRS rule writes need."
        );
        assert!(matches!(
            &row.finding.fix,
            Some(Fix::Grant { on: ObjectScope::Cluster { id: Some(id), .. }, propagate: false, .. })
                if id == "domain-c7"
        ));
    }

    #[test]
    fn a_write_privilege_dry_runs_do_without_is_missing_for_going_live() {
        let rows = all_rows(
            &[("domain-c7", "Host.Inventory.EditCluster")],
            DrsRuleWrites::DryRun,
        );
        let row = only_row_not_ok(&rows);
        assert_eq!(row.privilege, "Host.Inventory.EditCluster");
        assert_eq!(row.finding.status, Status::MissingForGoingLive);
        assert_eq!(
            row.finding.detail.to_string(),
            "The account lacks Host.Inventory.EditCluster on cluster dc-1/prod (domain-c7), \
             which DRS rule writes need. Dry runs write no DRS rule and do without it; the first \
             run after going live (dryRun=false) fails at the DRS step unless it is granted."
        );
        assert!(row.finding.fix.is_some());
    }

    #[test]
    fn a_write_privilege_runs_do_not_use_is_only_a_warning() {
        let rows = all_rows(
            &[("domain-c7", "Host.Inventory.EditCluster")],
            DrsRuleWrites::Off,
        );
        let row = rows
            .iter()
            .find(|row| row.privilege == "Host.Inventory.EditCluster")
            .expect("the write row");
        assert_eq!(row.finding.status, Status::Warning);
        assert!(
            row.finding
                .detail
                .to_string()
                .ends_with("this check was told they write none.")
        );
    }

    #[test]
    fn vms_lacking_read_are_named_in_one_row_for_their_cluster() {
        let rows = all_rows(&[("vm-21", "System.Read")], DrsRuleWrites::Written);
        let row = rows
            .iter()
            .find(|row| {
                matches!(row.object, ObjectScope::Vms { .. }) && row.privilege == "System.Read"
            })
            .expect("the VM row");
        assert_eq!(row.finding.status, Status::Missing);
        assert_eq!(row.missing_on, ["worker-b"]);
        assert_eq!(
            row.finding.fix.as_ref().map(ToString::to_string).as_deref(),
            Some(
                "Give the account a role (ReadOnly is enough) on datacenter dc-1, with \
                 \"Propagate to children\" on, so the 2 VMs of cluster dc-1/prod inherit \
                 System.Read."
            )
        );
    }

    #[test]
    fn a_refused_root_query_marks_the_privilege_vcenter_named_and_leaves_the_rest_unchecked() {
        let lines = privilege_lines();
        let mut root_asked = Asked::default();
        let mut fault = crate::vsphere::Fault::new("NoPermission", "denied");
        fault.missing_privilege = Some(Box::new(MissingPrivilege {
            privilege: "System.Read".to_string(),
            object: "Folder:group-d1".to_string(),
        }));
        root_asked.record(Err(Error::Fault {
            method: "HasPrivilegeOnEntities",
            object: "AuthorizationManager:AuthorizationManager".to_string(),
            fault,
        }));
        let rows = rows(
            &lines,
            &root(),
            None,
            &root_asked,
            &Asked::default(),
            DrsRuleWrites::Written,
        );
        let statuses: Vec<(&str, Status)> = rows
            .iter()
            .map(|row| (row.privilege.as_str(), row.finding.status))
            .collect();
        assert_eq!(
            statuses,
            [
                ("System.Anonymous", Status::NotChecked),
                // Only the check itself reads the root folder.
                ("System.Read", Status::Warning),
                ("System.View", Status::NotChecked),
            ]
        );
    }

    #[test]
    fn a_cluster_without_its_datacenter_lacks_read_on_its_host_folders() {
        let lines = privilege_lines();
        let mut inventory = inventory();
        inventory.clusters[0].datacenter_id = None;
        inventory.clusters[0].datacenter = String::new();
        let rows = rows(
            &lines,
            &root(),
            Some(&inventory),
            &Asked::default(),
            &Asked::default(),
            DrsRuleWrites::Written,
        );
        let row = rows
            .iter()
            .find(|row| matches!(row.object, ObjectScope::HostFolders { .. }))
            .expect("the host folder row");
        assert_eq!(row.finding.status, Status::Missing);
        // No row for a datacenter it has no id of, which could only say nothing was asked.
        assert!(
            !rows
                .iter()
                .any(|row| matches!(row.object, ObjectScope::Datacenter { .. })),
            "{rows:#?}"
        );
    }
}
