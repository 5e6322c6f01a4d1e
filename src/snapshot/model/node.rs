//! A node as the planner reads it.

use std::collections::BTreeSet;

use super::{Labels, Resources, Taint};

/// A Kubernetes node.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub name: String,
    /// `metadata.uid`; snapshot files may lack it.
    pub uid: Option<String>,
    pub labels: Labels,
    /// Label keys our field manager holds through server-side apply, from
    /// `metadata.managedFields`; empty when the object came without them (snapshot files).
    pub applied_label_keys: BTreeSet<String>,
    pub provider_id: Option<String>,
    pub system_uuid: Option<String>,
    /// `status.addresses` of type `InternalIP`: an ESXi host node (Supervisor clusters) may be
    /// known to vCenter by one of them.
    pub internal_ips: Vec<String>,
    /// `spec.unschedulable` (cordoned).
    pub unschedulable: bool,
    /// The `Ready` condition is `True`.
    pub ready: bool,
    pub taints: Vec<Taint>,
    pub allocatable: Resources,
}
