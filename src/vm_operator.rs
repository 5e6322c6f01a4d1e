//! The ESXi host topology as a VKS Supervisor's VM Operator records it, pure: its
//! `VirtualMachine` and `VirtualMachineSetResourcePolicy` objects read in every served version
//! ([`documents`]) and turned into the planner's [`Inventory`](crate::inventory::Inventory) with
//! the cluster modules that keep a guest cluster's node VMs apart ([`inventory`]). No client, no
//! I/O: snapshot files and the live Supervisor client ([`crate::supervisor`]) both hand their
//! objects to these functions, so `plan` and `run` share one conversion.

pub mod documents;
pub mod inventory;

pub use documents::{ModuleStatus, NodeRole, ResourcePolicy, VirtualMachine, VmPowerState};
pub use inventory::{
    Findings, GuestCluster, MissingModule, Module, Topology, UnplacedReason, UnplacedVm, inventory,
    module_membership, topology, unplaced,
};
