//! What a preflight row is about: the policy's filter entry, or the vCenter objects one privilege
//! is checked on. Below both the result and the fix, which each name them.

use serde::Serialize;

/// One entry of the policy's `vsphere.datacenters` or `vsphere.clusters`, or, without either,
/// "every cluster".
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "name", rename_all = "kebab-case")]
pub enum ScopeFilter {
    Datacenter(String),
    Cluster(String),
    AllClusters,
}

impl std::fmt::Display for ScopeFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScopeFilter::Datacenter(name) => write!(f, "vsphere.datacenters entry {name:?}"),
            ScopeFilter::Cluster(name) => write!(f, "vsphere.clusters entry {name:?}"),
            ScopeFilter::AllClusters => f.write_str("every cluster (no vsphere filters)"),
        }
    }
}

/// The objects one privilege row is about.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(
    tag = "kind",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum ObjectScope {
    /// vCenter's root folder.
    RootFolder {
        id: String,
    },
    Datacenter {
        name: String,
        id: Option<String>,
    },
    /// The host folders between a cluster and its datacenter.
    HostFolders {
        datacenter: String,
        cluster: String,
    },
    Cluster {
        datacenter: String,
        name: String,
        id: Option<String>,
    },
    /// The ESXi hosts of one cluster.
    Hosts {
        datacenter: String,
        cluster: String,
        count: usize,
    },
    /// The VMs of one cluster.
    Vms {
        datacenter: String,
        cluster: String,
        count: usize,
    },
}

impl std::fmt::Display for ObjectScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let qualified = |datacenter: &str, cluster: &str| {
            if datacenter.is_empty() {
                cluster.to_string()
            } else {
                format!("{datacenter}/{cluster}")
            }
        };
        match self {
            ObjectScope::RootFolder { id } => write!(f, "the vCenter root folder ({id})"),
            ObjectScope::Datacenter { name, id: Some(id) } => {
                write!(f, "datacenter {name} ({id})")
            }
            ObjectScope::Datacenter { name, id: None } => write!(f, "datacenter {name}"),
            ObjectScope::HostFolders {
                datacenter,
                cluster,
            } => write!(
                f,
                "the host folders above cluster {}",
                qualified(datacenter, cluster)
            ),
            ObjectScope::Cluster {
                datacenter,
                name,
                id,
            } => {
                write!(f, "cluster {}", qualified(datacenter, name))?;
                match id {
                    Some(id) => write!(f, " ({id})"),
                    None => Ok(()),
                }
            }
            ObjectScope::Hosts {
                datacenter,
                cluster,
                count,
            } => write!(
                f,
                "the {count} hosts of cluster {}",
                qualified(datacenter, cluster)
            ),
            ObjectScope::Vms {
                datacenter,
                cluster,
                count,
            } => write!(
                f,
                "the {count} VMs of cluster {}",
                qualified(datacenter, cluster)
            ),
        }
    }
}
