//! A change to one DRS rule as the plan states it: part of the plan's vocabulary, below both
//! the rule planning in `drs` and the `Plan` that carries the changes, so neither imports the
//! other in a circle.

use serde::ser::{Serialize, SerializeMap, Serializer};

/// A change to one DRS rule. Edits and removals carry vCenter's rule key in the action, so
/// whoever carries the change out never meets a rule it cannot address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DrsRuleChange {
    /// The vSphere cluster as reports name it: its name, or `datacenter/name` where another
    /// cluster has that name ([`crate::inventory::Inventory::cluster_names`]).
    pub cluster: String,
    /// The cluster's managed object id, which the change is addressed to; a snapshot file may
    /// lack it (a run always observes it).
    pub cluster_id: Option<String>,
    pub name: String,
    pub action: DrsAction,
    /// The rule's VMs after the change (for `delete`, the VMs it had).
    pub vms: Vec<String>,
    /// Managed object ids of `vms`, in their order, when the inventory has every one; a rule
    /// names its VMs by these. Not in the report.
    pub vm_ids: Option<Vec<String>>,
    /// vCenter's `ruleUuid` of the rule updated, resent so that the edit keeps it. Not in the
    /// report.
    pub rule_uuid: Option<String>,
    /// `namespace/Kind/name` of the workload the rule keeps apart.
    pub workload: Option<String>,
    /// The node group (`vsphere.drsRules.nodeGroups`) the rule keeps apart.
    pub node_group: Option<String>,
}

/// What is done to a rule; `key` is vCenter's rule key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum DrsAction {
    Create,
    Update {
        key: i32,
    },
    Delete {
        key: i32,
    },
    /// Nothing to write; the key is known unless the inventory (a snapshot file) omitted it.
    Keep {
        key: Option<i32>,
    },
    /// An update or delete of an owned rule recorded without its key (snapshot files may omit
    /// keys; vCenter always reports them). vCenter addresses rules by key, so it is shown as
    /// planned, with a warning, and never carried out.
    Unaddressable(Edit),
}

/// The actions that address an existing rule by its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Edit {
    Update,
    Delete,
}

impl DrsAction {
    pub fn as_str(self) -> &'static str {
        match self {
            DrsAction::Create => "create",
            DrsAction::Update { .. } => "update",
            DrsAction::Delete { .. } => "delete",
            DrsAction::Keep { .. } => "keep",
            DrsAction::Unaddressable(Edit::Update) => "update",
            DrsAction::Unaddressable(Edit::Delete) => "delete",
        }
    }

    /// vCenter's rule key, for every action but `create` (and those it is unknown for).
    pub fn key(self) -> Option<i32> {
        match self {
            DrsAction::Create | DrsAction::Unaddressable(_) => None,
            DrsAction::Update { key } | DrsAction::Delete { key } => Some(key),
            DrsAction::Keep { key } => key,
        }
    }

    /// Whether the rule goes.
    pub fn is_delete(self) -> bool {
        matches!(
            self,
            DrsAction::Delete { .. } | DrsAction::Unaddressable(Edit::Delete)
        )
    }

    /// Whether DRS gets a new or changed rule to enforce from it.
    pub fn is_create_or_update(self) -> bool {
        matches!(self, DrsAction::Create | DrsAction::Update { .. })
    }
}

/// The report's shape (docs/design.md §7): `action` as a word, the key beside it when known.
impl Serialize for DrsRuleChange {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let key = self.action.key();
        let fields = 4
            + usize::from(self.cluster_id.is_some())
            + usize::from(key.is_some())
            + usize::from(self.workload.is_some())
            + usize::from(self.node_group.is_some());
        let mut map = serializer.serialize_map(Some(fields))?;
        map.serialize_entry("cluster", &self.cluster)?;
        if let Some(id) = &self.cluster_id {
            map.serialize_entry("clusterId", id)?;
        }
        map.serialize_entry("name", &self.name)?;
        map.serialize_entry("action", self.action.as_str())?;
        map.serialize_entry("vms", &self.vms)?;
        if let Some(key) = key {
            map.serialize_entry("key", &key)?;
        }
        if let Some(workload) = &self.workload {
            map.serialize_entry("workload", workload)?;
        }
        if let Some(group) = &self.node_group {
            map.serialize_entry("nodeGroup", group)?;
        }
        map.end()
    }
}
