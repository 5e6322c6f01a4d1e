//! What a preflight item found, as data: the account, the objects, the privilege, the cluster
//! setting. Its `Display` is the sentence a report shows; a request that failed is carried as
//! its [`Failure`], its kind beside vCenter's and the client's own words.

use super::fix::ClusterName;
use super::scope::{ObjectScope, ScopeFilter};
use crate::cause::Failure;
use crate::inventory::DrsBehavior;
use crate::vsphere::privileges::NeededFor;

/// What one preflight item found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VcenterDetail {
    NotAttempted,
    NotLoggedIn,
    /// `session_user`: the name vCenter gives the session, where it differs from the account's.
    LoggedIn {
        server: String,
        username: String,
        session_user: Option<String>,
    },
    /// Reaching vCenter or logging in failed.
    LoginFailed(Failure),
    Observed {
        clusters: usize,
        hosts: usize,
        vms: usize,
    },
    Unobserved(Failure),
    InventoryUnread,
    ScopeFinds {
        filter: ScopeFilter,
        clusters: usize,
    },
    ScopeFindsNone {
        filter: ScopeFilter,
    },
    ConfigurationUnreadable(ClusterName),
    DrsOn(ClusterName),
    DrsOff(ClusterName),
    AutomationMoot(ClusterName),
    FullyAutomated(ClusterName),
    NotFullyAutomated(ClusterName, DrsBehavior),
    HaOn(ClusterName),
    HaOff(ClusterName),
    HaRestartsNothing(ClusterName),
    HaRespectsRules(ClusterName),
    HaIgnoresRules(ClusterName),
    HaRuleRespectUnset(ClusterName),
    Holds {
        privilege: String,
        on: ObjectScope,
    },
    /// `lacking`: the objects of `on` that lack it, where `on` is more than one.
    Lacks {
        privilege: String,
        on: ObjectScope,
        lacking: Vec<String>,
        needed_for: Vec<NeededFor>,
        need: PrivilegeNeed,
    },
    /// vCenter refused or failed the privilege query.
    Unanswered {
        privilege: String,
        on: ObjectScope,
        failure: Failure,
    },
    /// vCenter answered, but not about these objects.
    NoAnswerFor {
        privilege: String,
        objects: Vec<String>,
    },
    HostFoldersRead {
        on: ObjectScope,
    },
    NoDatacenterAbove {
        cluster: String,
        privilege: String,
    },
}

/// Who needs a privilege the account lacks, beyond what its row lists: why a lack is missing,
/// missing for going live, or a warning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrivilegeNeed {
    /// The runs checked for need it.
    Runs,
    OnlyThisCheck,
    /// Only DRS rule writes need it, and the runs checked for are dry runs.
    GoingLive,
    /// Only DRS rule writes need it, and the runs checked for write none.
    NoRuleWrites,
}

impl std::fmt::Display for VcenterDetail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use VcenterDetail::*;
        match self {
            NotAttempted => f.write_str("Not attempted."),
            NotLoggedIn => f.write_str("Not logged in."),
            LoggedIn {
                server,
                username,
                session_user: Some(name),
            } => write!(
                f,
                "Logged in to {server} as {username} (vCenter names the session's user {name}; \
                 permissions name it so)."
            ),
            LoggedIn {
                server, username, ..
            } => write!(f, "Logged in to {server} as {username}."),
            LoginFailed(failure) => write!(f, "{failure}."),
            Observed {
                clusters,
                hosts,
                vms,
            } => write!(
                f,
                "Observation as runs do it found {clusters} cluster(s), {hosts} host(s) and \
                 {vms} VM(s)."
            ),
            Unobserved(failure) => write!(f, "Runs cannot observe vCenter: {failure}."),
            InventoryUnread => f.write_str("The inventory could not be read."),
            ScopeFinds { filter, clusters } => write!(f, "{filter} finds {clusters} cluster(s)."),
            ScopeFindsNone { filter } => {
                write!(f, "{filter} finds no cluster the account can see.")
            }
            ConfigurationUnreadable(name) => {
                write!(f, "The configuration of {name} is unreadable.")
            }
            DrsOn(name) => write!(f, "vSphere DRS is on for {name}."),
            DrsOff(name) => write!(
                f,
                "vSphere DRS is off for {name}: vCenter keeps the rules this tool writes, but \
                 nothing moves VMs to satisfy them, and runs warn that they are not enforced."
            ),
            AutomationMoot(name) => {
                write!(f, "DRS is off for {name}; its automation level is moot.")
            }
            FullyAutomated(name) => write!(f, "DRS is fully automated on {name}."),
            NotFullyAutomated(name, level) => write!(
                f,
                "DRS is {level} on {name}: it only recommends the moves that would make the \
                 rules hold, and runs warn about it."
            ),
            HaOn(name) => write!(f, "vSphere HA is on for {name}."),
            HaOff(name) => write!(
                f,
                "vSphere HA is off for {name}: the node VMs of a failed host stay down until it \
                 is back."
            ),
            HaRestartsNothing(name) => write!(
                f,
                "vSphere HA is off for {name}: it restarts nothing, so it breaks no rule."
            ),
            HaRespectsRules(name) => write!(
                f,
                "HA on {name} respects VM anti-affinity rules during failover."
            ),
            HaIgnoresRules(name) => write!(
                f,
                "HA on {name} is told not to respect VM anti-affinity rules during failover: it \
                 may restart a node VM next to another VM of its rule, and their pods come back \
                 on one host."
            ),
            HaRuleRespectUnset(name) => write!(
                f,
                "das.respectVmVmAntiAffinityRules is not set on {name}: this tool does not \
                 assume what vCenter does by default, and what-if reports HA as free to restart \
                 a node VM next to another VM of its rule."
            ),
            Holds { privilege, on } => write!(f, "The account holds {privilege} on {on}."),
            Lacks {
                privilege,
                on,
                lacking,
                needed_for,
                need,
            } => lacks(f, privilege, on, lacking, needed_for, *need),
            Unanswered {
                privilege,
                on,
                failure,
            } => write!(
                f,
                "vCenter did not answer whether the account holds {privilege} on {on}: {failure}."
            ),
            NoAnswerFor { privilege, objects } => write!(
                f,
                "vCenter gave no answer about {privilege} for {}.",
                objects.join(", ")
            ),
            HostFoldersRead { on } => write!(
                f,
                "The account reads {on}: observation found the datacenter through them."
            ),
            NoDatacenterAbove { cluster, privilege } => write!(
                f,
                "Observation found no datacenter above cluster {cluster}: the account cannot \
                 read {privilege} on the host folders between them."
            ),
        }
    }
}

/// "The account lacks P on O, which … need.", and who else needs it.
fn lacks(
    f: &mut std::fmt::Formatter<'_>,
    privilege: &str,
    on: &ObjectScope,
    lacking: &[String],
    needed_for: &[NeededFor],
    need: PrivilegeNeed,
) -> std::fmt::Result {
    f.write_str("The account lacks ")?;
    match lacking {
        [] => write!(f, "{privilege} on {on}")?,
        _ => write!(
            f,
            "{privilege} on {} of {on}: {}",
            lacking.len(),
            lacking.join(", ")
        )?,
    }
    let needers: Vec<&str> = needed_for
        .iter()
        .map(|need| match need {
            NeededFor::Observe => "every run",
            NeededFor::DrsRuleWrites => "DRS rule writes",
            NeededFor::Preflight => "this check",
        })
        .collect();
    write!(f, ", which {} need.", needers.join(" and "))?;
    f.write_str(match need {
        PrivilegeNeed::Runs => "",
        PrivilegeNeed::OnlyThisCheck => " Only this check needs it.",
        PrivilegeNeed::GoingLive => {
            " Dry runs write no DRS rule and do without it; the first run after going live \
             (dryRun=false) fails at the DRS step unless it is granted."
        }
        PrivilegeNeed::NoRuleWrites => {
            " Runs need it only to write DRS rules, and this check was told they write none."
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lacked_privilege_names_the_objects_lacking_it_and_who_else_needs_it() {
        let detail = VcenterDetail::Lacks {
            privilege: "System.Read".to_string(),
            on: ObjectScope::Hosts {
                datacenter: "dc-1".to_string(),
                cluster: "prod".to_string(),
                count: 3,
            },
            lacking: vec!["esxi-1".to_string(), "esxi-2".to_string()],
            needed_for: vec![NeededFor::Observe, NeededFor::Preflight],
            need: PrivilegeNeed::Runs,
        };
        assert_eq!(
            detail.to_string(),
            "The account lacks System.Read on 2 of the 3 hosts of cluster dc-1/prod: esxi-1, \
             esxi-2, which every run and this check need."
        );
    }

    #[test]
    fn a_login_names_the_session_user_only_where_vcenter_names_it_otherwise() {
        let logged_in = |session_user: Option<&str>| VcenterDetail::LoggedIn {
            server: "vc".to_string(),
            username: "svc@vsphere.local".to_string(),
            session_user: session_user.map(str::to_string),
        };
        assert_eq!(
            logged_in(None).to_string(),
            "Logged in to vc as svc@vsphere.local."
        );
        assert_eq!(
            logged_in(Some("VSPHERE.LOCAL\\svc")).to_string(),
            "Logged in to vc as svc@vsphere.local (vCenter names the session's user \
             VSPHERE.LOCAL\\svc; permissions name it so)."
        );
    }
}
