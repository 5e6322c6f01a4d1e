//! The vCenter half of a preflight check: before runs start, ask vCenter whether the account
//! can do what runs do, on the objects they touch, and whether the clusters are set up so DRS
//! enforces the rules runs write and HA keeps them through a host failure.
//!
//! [`preflight`] logs in with the run's [`ConnectionConfig`], reads the inventory of the
//! policy's datacenters and clusters as a run does, asks vCenter (`HasPrivilegeOnEntities`, for
//! its own session) about every line of `privileges.txt` on those objects, reads each cluster's
//! DRS and HA settings, and logs out. It changes nothing and prints nothing: the [`Preflight`] it
//! returns is a value a command shows as a table or as JSON.
//!
//! ```no_run
//! # async fn example() -> Result<(), vsphere_descheduler::vsphere::Error> {
//! use vsphere_descheduler::vsphere::preflight::{DrsRuleWrites, Scope, Status, preflight};
//! use vsphere_descheduler::vsphere::{ConnectionConfig, Credentials};
//!
//! let config = ConnectionConfig::new("vcenter.example.com", Credentials::from_env_or_dir(None)?);
//! let scope = Scope {
//!     datacenters: vec![],
//!     clusters: vec!["dc-1/prod".to_string()],
//!     drs_rule_writes: DrsRuleWrites::Written,
//! };
//! let found = preflight(&config, &scope).await;
//! for row in &found.privileges {
//!     if row.finding.status != Status::Ok {
//!         let fix = row.finding.fix.as_ref().map(ToString::to_string).unwrap_or_default();
//!         eprintln!("{} {} on {}: {}", row.finding.status, row.privilege, row.object, fix);
//!     }
//! }
//! # Ok(())
//! # }
//! ```

mod cluster_checks;
mod detail;
mod fix;
mod privilege_checks;
mod result;
mod scope;

pub use crate::finding::Status;
pub use detail::{PrivilegeNeed, VcenterDetail};
pub use fix::{ClusterName, Fix};
pub use result::{
    ClusterCheck, Preflight, PreflightFinding, PrivilegeCheck, ScopeCheck, Setting, SettingCheck,
    SettingValue, VcenterVersion,
};
pub use scope::{ObjectScope, ScopeFilter};

use super::privileges::{ObjectKind, privilege_lines};
use super::{ConnectionConfig, Error, VcenterClient};
use crate::inventory::Inventory;
use privilege_checks::{Asked, ENTITY_KINDS, entities, privileges_on, rows};

/// Entities per privilege query: one query per thousands of VMs would be a very large request.
const ENTITIES_PER_QUERY: usize = 500;

/// What runs touch: the policy's `vsphere.datacenters` and `vsphere.clusters` (empty: every
/// one), and whether they write DRS rules, which decides how a missing write privilege stands.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scope {
    pub datacenters: Vec<String>,
    pub clusters: Vec<String>,
    pub drs_rule_writes: DrsRuleWrites,
}

/// Whether the runs checked for write DRS rules.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DrsRuleWrites {
    /// They do (`vsphere.drsRules.enabled`, not a dry run): the write privilege is required.
    Written,
    /// They would, but are dry runs: the write privilege is missing for going live, not for
    /// these runs, and the first run after `dryRun=false` fails at the DRS step without it.
    DryRun,
    /// Rule sync is off: no run needs the write privilege.
    #[default]
    Off,
}

/// Checks the account of `config` against what runs over `scope` need. Never fails: what could
/// not be checked is an item that says why.
pub async fn preflight(config: &ConnectionConfig, scope: &Scope) -> Preflight {
    let mut found = Preflight {
        server: config.server.clone(),
        username: config.credentials.username().to_string(),
        vcenter: None,
        login: PreflightFinding::not_checked(VcenterDetail::NotAttempted),
        observation: PreflightFinding::not_checked(VcenterDetail::NotLoggedIn),
        scope: Vec::new(),
        privileges: Vec::new(),
        clusters: Vec::new(),
        inventory: None,
    };
    let mut client = match VcenterClient::reach(config).await {
        Ok(client) => client,
        Err(error) => {
            found.login = login_failed(&error);
            return found;
        }
    };
    found.vcenter = Some(VcenterVersion {
        full_name: client.content().full_name.clone(),
        api_version: client.content().api_version.clone(),
    });
    if let Err(error) = client.login().await {
        found.login = login_failed(&error);
        return found;
    }
    found.login = PreflightFinding::ok(VcenterDetail::LoggedIn {
        server: client.server().to_string(),
        username: found.username.clone(),
        session_user: client
            .session_user()
            .filter(|name| !name.is_empty() && *name != found.username)
            .map(str::to_string),
    });

    let inventory = match client.observe(&scope.datacenters, &scope.clusters).await {
        Ok(inventory) => {
            found.observation = PreflightFinding::ok(observed(&inventory));
            Some(inventory)
        }
        Err(error) => {
            found.observation = unobserved(&error, &client);
            None
        }
    };
    check_privileges(&mut client, inventory.as_ref(), scope, &mut found).await;
    match &inventory {
        Some(inventory) => {
            found.scope =
                cluster_checks::scope_checks(inventory, &scope.datacenters, &scope.clusters);
            found.clusters = inventory
                .clusters
                .iter()
                .map(cluster_checks::cluster_check)
                .collect();
        }
        None => found.scope = unchecked_scope(scope),
    }
    found.inventory = inventory;
    client.logout().await;
    found
}

/// Asks about the root folder on its own (vCenter refuses the whole query when the account
/// cannot read one object asked about), then about the inventory's objects.
async fn check_privileges(
    client: &mut VcenterClient,
    inventory: Option<&Inventory>,
    scope: &Scope,
    found: &mut Preflight,
) {
    let lines = privilege_lines();
    let root = client.content().root_folder.clone();
    let mut root_asked = Asked::default();
    let root_privileges = privileges_on(&lines, &[ObjectKind::RootFolder]);
    root_asked.record(
        client
            .privileges_on(std::slice::from_ref(&root), &root_privileges)
            .await,
    );
    let mut entity_asked = Asked::default();
    if let Some(inventory) = inventory {
        let privileges = privileges_on(&lines, ENTITY_KINDS);
        for chunk in entities(inventory).chunks(ENTITIES_PER_QUERY) {
            entity_asked.record(client.privileges_on(chunk, &privileges).await);
        }
    }
    found.privileges = rows(
        &lines,
        &root,
        inventory,
        &root_asked,
        &entity_asked,
        scope.drs_rule_writes,
    );
}

fn observed(inventory: &Inventory) -> VcenterDetail {
    VcenterDetail::Observed {
        clusters: inventory.clusters.len(),
        hosts: inventory.clusters.iter().map(|c| c.hosts.len()).sum(),
        vms: inventory.clusters.iter().map(|c| c.vms.len()).sum(),
    }
}

/// Observation failed: runs would fail the same way. A refused privilege says what to grant.
fn unobserved(error: &Error, client: &VcenterClient) -> PreflightFinding {
    let found = PreflightFinding::new(Status::Missing, VcenterDetail::Unobserved(error.failure()));
    let missing = error
        .fault()
        .and_then(|fault| fault.missing_privilege.as_ref());
    match missing {
        // The one object observation addresses by itself is the root folder (the view's
        // container); the rest it reads through the view.
        Some(missing) if missing.object == client.content().root_folder.to_string() => found
            .with_fix(Fix::Grant {
                privilege: missing.privilege.clone(),
                on: ObjectScope::RootFolder {
                    id: client.content().root_folder.value.clone(),
                },
                propagate: false,
            }),
        _ => found,
    }
}

/// Why logging in failed, and what to do: the credentials, any permission at all, or the
/// connection.
fn login_failed(error: &Error) -> PreflightFinding {
    let fix = match error {
        Error::Login { fault, .. } if fault.name == "InvalidLogin" => Fix::Credentials,
        Error::Login { fault, .. } if fault.name == "NoPermission" => Fix::AnyPermission,
        Error::MissingCredential { .. }
        | Error::EmptyCredential { .. }
        | Error::ReadCredential { .. }
        | Error::CredentialNotUtf8 { .. } => Fix::Credentials,
        _ => Fix::Connection,
    };
    PreflightFinding::new(Status::Missing, VcenterDetail::LoginFailed(error.failure()))
        .with_fix(fix)
}

fn unchecked_scope(scope: &Scope) -> Vec<ScopeCheck> {
    let not_observed = || PreflightFinding::not_checked(VcenterDetail::InventoryUnread);
    let mut checks: Vec<ScopeCheck> = scope
        .datacenters
        .iter()
        .map(|name| ScopeFilter::Datacenter(name.clone()))
        .chain(
            scope
                .clusters
                .iter()
                .map(|name| ScopeFilter::Cluster(name.clone())),
        )
        .map(|filter| ScopeCheck {
            filter,
            finding: not_observed(),
        })
        .collect();
    if checks.is_empty() {
        checks.push(ScopeCheck {
            filter: ScopeFilter::AllClusters,
            finding: not_observed(),
        });
    }
    checks
}
