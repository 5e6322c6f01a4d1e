//! The vSphere adapter: a small vim25 SOAP client for what this tool needs from vCenter.
//!
//! [`VcenterClient::observe`] reads every cluster's hosts, VMs, DRS and HA configuration and
//! rules in one property-collector pass and returns the same
//! [`Inventory`](crate::inventory::Inventory) that snapshot files hold, every object with its
//! managed object id.
//! [`VcenterClient::apply_rule_changes`] adds, edits and removes VM-VM anti-affinity rules of
//! one cluster, addressed by those ids, in one reconfiguration task; the client keeps no state
//! between calls. Only the private `soap` module knows XML.
//!
//! [`PRIVILEGES`] lists every SOAP method the client sends with the privilege vCenter checks for
//! it and where; [`preflight::preflight`] asks vCenter whether an account holds them on the
//! objects runs touch, and whether the clusters are set up for the rules.
//!
//! ```no_run
//! # async fn example() -> Result<(), vsphere_descheduler::vsphere::Error> {
//! use vsphere_descheduler::vsphere::{ConnectionConfig, Credentials, RuleWrite, VcenterClient};
//!
//! let credentials = Credentials::from_env_or_dir(None)?;
//! let config = ConnectionConfig::new("vcenter.example.com", credentials);
//! let mut client = VcenterClient::connect(&config).await?;
//! let inventory = client.observe(&[], &["dc-1/cluster-a".to_string()]).await?;
//! if let Some(cluster) = inventory.clusters.first().and_then(|c| c.id.as_deref()) {
//!     client
//!         .apply_rule_changes(cluster, &[RuleWrite::Add {
//!             name: "vsphere-descheduler:prod:shop:Deployment/web".to_string(),
//!             vms: vec!["vm-42".to_string(), "vm-43".to_string()],
//!         }])
//!         .await?;
//! }
//! client.logout().await;
//! # Ok(())
//! # }
//! ```

mod client;
mod config;
mod error;
mod observe;
pub mod preflight;
mod privileges;
mod soap;
mod tls;
mod transport;

/// What [`VcenterClient::apply_rule_changes`] sends: the plan's rule writes, as the plan
/// addressed them.
pub use crate::plan::RuleWrite;
pub use client::{TASK_WAIT_LIMIT, VcenterClient};
pub use config::{ConnectionConfig, Credentials, DEFAULT_TIMEOUT, PASSWORD_ENV, USERNAME_ENV};
pub use error::Error;
pub use privileges::{NeededFor, ObjectKind, PRIVILEGES, PrivilegeLine, privilege_lines};
pub use soap::XmlParseError;
pub use soap::{Fault, MissingPrivilege};
