//! The ESXi host topology as a VKS Supervisor shows it (`vsphere.source: supervisor`): VM
//! Operator's `VirtualMachine` and `VirtualMachineSetResourcePolicy` objects of a Supervisor
//! namespace, read in every served version ([`documents`]) and turned into the planner's
//! [`Inventory`](crate::inventory::Inventory) with the cluster modules that keep a guest
//! cluster's node VMs apart ([`inventory`], pure: snapshot files and the live client share it);
//! reaching the Supervisor ([`access`], [`client`]) and what it may refuse ([`error`]).

pub mod access;
pub mod client;
pub mod documents;
pub mod error;
pub mod inventory;
pub mod listed;

pub use access::{Access, Flags, Settings, SettingsError};
pub use client::{SUPERVISOR_CALLS, Supervisor};
pub use documents::{ModuleStatus, NodeRole, ResourcePolicy, VirtualMachine, VmPowerState};
pub use error::Error;
pub use inventory::{
    Findings, GuestCluster, MissingModule, Module, Topology, Unplaced, UnplacedReason, inventory,
    module_membership, topology, unplaced,
};
pub use listed::topology_of;
