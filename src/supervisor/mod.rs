//! The ESXi host topology as a VKS Supervisor shows it: VM Operator's `VirtualMachine` and
//! `VirtualMachineSetResourcePolicy` objects of a Supervisor namespace, read in every served
//! version ([`documents`]), and turned into the planner's [`Inventory`](crate::inventory::Inventory)
//! with the cluster modules that keep a guest cluster's node VMs apart ([`inventory`]).
//!
//! Pure: no client, no I/O. Snapshot files and the live Supervisor client both hand their
//! objects to these functions, so `plan` and `run` share one conversion.

pub mod documents;
pub mod inventory;

pub use documents::{ModuleStatus, NodeRole, ResourcePolicy, VirtualMachine, VmPowerState};
pub use inventory::{
    Findings, GuestCluster, MissingModule, Module, Topology, Unplaced, UnplacedReason, inventory,
    module_membership, topology, unplaced,
};
