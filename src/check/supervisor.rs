//! The Supervisor section of `check` (source supervisor): connected as runs connect, it asks
//! discovery whether VM Operator is served, asks the Supervisor about each call of its call list
//! in the namespace (a SelfSubjectAccessReview each), then reads the namespace's VM Operator
//! objects as a run does. A read that depends on a permission found missing is not made.

use super::{Backend, Item, Section, Status, Subject, SupervisorDetail, SupervisorFix};
use crate::kube::Grant;
use crate::settings::RunConfig;
use crate::supervisor::{self, Supervisor};

/// The Supervisor section: connects, then checks.
pub async fn section(settings: &supervisor::Settings, config: &RunConfig) -> Section {
    let supervisor = match Supervisor::connect(settings).await {
        Ok(supervisor) => supervisor,
        Err(error) => {
            return Section {
                backend: Backend::Supervisor,
                target: "(no Supervisor)".to_string(),
                items: vec![unreachable(&error)],
            };
        }
    };
    let target = format!("{}, namespace {}", supervisor.server, supervisor.namespace);
    let guest = crate::kube::Client::connect(&config.kubernetes, config.timeout)
        .await
        .ok()
        .map(|(_, endpoint)| endpoint.api_server);
    Section {
        backend: Backend::Supervisor,
        target,
        items: check(&supervisor, guest.as_deref()).await,
    }
}

async fn check(supervisor: &Supervisor, guest: Option<&str>) -> Vec<Item> {
    let mut items = Vec::new();
    let permissions: Vec<Item> = supervisor
        .review_access()
        .await
        .into_iter()
        .filter(|(call, _)| call.grant != Grant::Everyone)
        .map(|(call, answer)| {
            let subject = Subject::Permission {
                group: call.group.clone(),
                resource: call.rule_resource(),
                verb: call.verb.clone(),
                namespace: Some(supervisor.namespace.clone()),
                name: None,
            };
            match answer {
                Ok(decision) if decision.allowed => {
                    let reviewed = SupervisorDetail::Reviewed {
                        reason: decision.reason,
                    };
                    Item::new(subject, Status::Ok, reviewed)
                }
                Ok(decision) => {
                    let reviewed = SupervisorDetail::Reviewed {
                        reason: decision.reason,
                    };
                    Item::new(subject, Status::Missing, reviewed).with_fix(SupervisorFix::GrantRole)
                }
                Err(error) => Item::new(subject, Status::Missing, error.failure())
                    .with_fix(SupervisorFix::Reach),
            }
        })
        .collect();
    let all_granted = permissions
        .iter()
        .all(|item| item.finding.status == Status::Ok);
    items.extend(permissions);
    let read = if all_granted {
        match supervisor.read_topology(guest).await {
            Ok(read) => Item::new(
                Subject::SupervisorRead,
                Status::Ok,
                SupervisorDetail::Read {
                    virtual_machines: read.objects.virtual_machines.len(),
                    version: read.objects.version.clone(),
                    hosts: read
                        .topology
                        .inventory
                        .clusters
                        .iter()
                        .map(|c| c.hosts.len())
                        .sum(),
                    resource_policies: read.objects.resource_policies.len(),
                },
            ),
            Err(error) => unreadable(&error),
        }
    } else {
        Item::new(
            Subject::SupervisorRead,
            Status::NotChecked,
            SupervisorDetail::GrantMissingAbove,
        )
    };
    items.push(read);
    items
}

fn unreachable(error: &supervisor::Error) -> Item {
    Item::new(Subject::SupervisorRead, Status::Missing, error.failure())
        .with_fix(SupervisorFix::GiveCredentials)
}

fn unreadable(error: &supervisor::Error) -> Item {
    let fix = match error {
        supervisor::Error::GuestCluster { .. } | supervisor::Error::NotSupervisor { .. } => {
            SupervisorFix::NameSupervisorServer
        }
        _ => SupervisorFix::SeeRecipe,
    };
    Item::new(Subject::SupervisorRead, Status::Missing, error.failure()).with_fix(fix)
}
