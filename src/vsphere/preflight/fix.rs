//! What to change when a preflight item is not fine. Each fix is data (for JSON) and a sentence
//! (its `Display`) naming what to change and where: which privilege on which object, with or
//! without propagation, or which cluster setting, and where the vSphere Client has it.

use serde::Serialize;

use super::scope::{ObjectScope, ScopeFilter};

/// A cluster, as a fix names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterName {
    pub datacenter: String,
    pub name: String,
}

impl std::fmt::Display for ClusterName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.datacenter.is_empty() {
            write!(f, "cluster {}", self.name)
        } else {
            write!(f, "cluster {}/{}", self.datacenter, self.name)
        }
    }
}

/// What to change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Fix {
    /// Give the account a role holding `privilege` on `on`.
    Grant {
        privilege: String,
        on: ObjectScope,
        /// Whether the permission must propagate to the objects below `on`.
        propagate: bool,
    },
    /// vCenter refused the user name or password.
    Credentials,
    /// The credentials are valid but the account holds no permission anywhere.
    AnyPermission,
    /// vCenter could not be reached or its answer could not be read; the detail says why.
    Connection,
    /// A scope filter found no cluster the account can see.
    Scope {
        filter: ScopeFilter,
    },
    EnableDrs {
        cluster: ClusterName,
    },
    FullyAutomateDrs {
        cluster: ClusterName,
    },
    EnableHa {
        cluster: ClusterName,
    },
    RespectAntiAffinityDuringFailover {
        cluster: ClusterName,
    },
}

impl std::fmt::Display for Fix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fix::Grant {
                privilege,
                on,
                propagate,
            } => grant(f, privilege, on, *propagate),
            Fix::Credentials => f.write_str(
                "Check the user name and password (VSPHERE_USERNAME and VSPHERE_PASSWORD, or the \
                 username and password files): vCenter refused them.",
            ),
            Fix::AnyPermission => f.write_str(
                "Give the account the permissions of docs/vcenter-role.md: its credentials are \
                 valid, but it holds no permission anywhere in vCenter, so vCenter refuses its \
                 login.",
            ),
            Fix::Connection => f.write_str(
                "Make vCenter reachable from here with a trusted certificate (the server address, \
                 the network, vsphere.caFile): the detail says what failed.",
            ),
            Fix::Scope { filter } => match filter {
                ScopeFilter::AllClusters => f.write_str(
                    "Give the account the ReadOnly role (or the descheduler's role) on each \
                     datacenter that holds node VMs, with \"Propagate to children\" on: it sees \
                     no vSphere cluster.",
                ),
                filter => write!(
                    f,
                    "Check {filter}: no cluster it names is visible to the account. Correct the \
                     name, or give the account the ReadOnly role (or the descheduler's role) on \
                     its datacenter with \"Propagate to children\" on."
                ),
            },
            Fix::EnableDrs { cluster } => write!(
                f,
                "Turn on vSphere DRS for {cluster} (vSphere Client: the cluster > Configure > \
                 Services > vSphere DRS > Edit). Without DRS, vCenter keeps the rules this tool \
                 writes but nothing enforces them; DRS needs a vSphere license edition that \
                 includes it."
            ),
            Fix::FullyAutomateDrs { cluster } => write!(
                f,
                "Set the DRS automation level of {cluster} to Fully Automated (vSphere Client: \
                 the cluster > Configure > Services > vSphere DRS > Edit > Automation): at any \
                 other level DRS only recommends the moves that would make the rules hold."
            ),
            Fix::EnableHa { cluster } => write!(
                f,
                "Turn on vSphere HA for {cluster} (vSphere Client: the cluster > Configure > \
                 Services > vSphere Availability > Edit) if the node VMs of a failed host should \
                 restart elsewhere."
            ),
            Fix::RespectAntiAffinityDuringFailover { cluster } => write!(
                f,
                "Set the HA advanced option das.respectVmVmAntiAffinityRules to true on \
                 {cluster} (vSphere Client: the cluster > Configure > Services > vSphere \
                 Availability > Edit > Advanced Options), so HA does not restart a VM next to \
                 another VM of its anti-affinity rule after a host failure."
            ),
        }
    }
}

/// "Give the account a role holding P on O, with propagation on/off", saying why propagation
/// matters where it does.
fn grant(
    f: &mut std::fmt::Formatter<'_>,
    privilege: &str,
    on: &ObjectScope,
    propagate: bool,
) -> std::fmt::Result {
    // Every role holds the System privileges, so any role will do for those.
    let role = if privilege.starts_with("System.") {
        "a role (ReadOnly is enough)".to_string()
    } else {
        format!("a role holding {privilege}")
    };
    match on {
        ObjectScope::HostFolders {
            datacenter,
            cluster,
        } if datacenter.is_empty() => write!(
            f,
            "Give the account {role} on the datacenter above cluster {cluster}, with \"Propagate \
             to children\" on, so the host folders below it inherit {privilege}."
        ),
        ObjectScope::HostFolders { datacenter, .. }
        | ObjectScope::Hosts { datacenter, .. }
        | ObjectScope::Vms { datacenter, .. } => write!(
            f,
            "Give the account {role} on datacenter {datacenter}, with \"Propagate to children\" \
             on, so {on} inherit {privilege}."
        ),
        on if propagate => write!(
            f,
            "Give the account {role} on {on}, with \"Propagate to children\" on, so the objects \
             below it inherit {privilege}."
        ),
        on => write!(
            f,
            "Give the account {role} on {on}; \"Propagate to children\" is not needed for \
             {privilege}, which is checked on that object itself."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_names_the_privilege_the_object_and_the_propagation() {
        let fix = Fix::Grant {
            privilege: "Host.Inventory.EditCluster".to_string(),
            on: ObjectScope::Cluster {
                datacenter: "dc-1".to_string(),
                name: "prod".to_string(),
                id: Some("domain-c7".to_string()),
            },
            propagate: false,
        };
        assert_eq!(
            fix.to_string(),
            "Give the account a role holding Host.Inventory.EditCluster on cluster dc-1/prod \
             (domain-c7); \"Propagate to children\" is not needed for Host.Inventory.EditCluster, \
             which is checked on that object itself."
        );
        let fix = Fix::Grant {
            privilege: "System.Read".to_string(),
            on: ObjectScope::Vms {
                datacenter: "dc-1".to_string(),
                cluster: "prod".to_string(),
                count: 6,
            },
            propagate: true,
        };
        assert_eq!(
            fix.to_string(),
            "Give the account a role (ReadOnly is enough) on datacenter dc-1, with \"Propagate \
             to children\" on, so the 6 VMs of cluster dc-1/prod inherit System.Read."
        );
    }

    #[test]
    fn fixes_serialize_with_their_kind() {
        let fix = Fix::EnableDrs {
            cluster: ClusterName {
                datacenter: "dc-1".to_string(),
                name: "prod".to_string(),
            },
        };
        assert_eq!(
            serde_json::to_value(&fix).expect("JSON"),
            serde_json::json!({"kind": "enableDrs", "cluster": {"datacenter": "dc-1", "name": "prod"}})
        );
    }
}
