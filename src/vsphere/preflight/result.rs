//! What a preflight found, as values: every item has a [`Status`], what was found (a
//! [`VcenterDetail`]), and, when something is to be done, a [`Fix`]. Sections keep the order a person works
//! through them: reach vCenter and log in, see the clusters, hold the privileges, set the
//! clusters up.

use serde::Serialize;

use super::detail::VcenterDetail;
use super::fix::Fix;
use super::scope::{ObjectScope, ScopeFilter};
use crate::finding::{CheckFinding, Status};
use crate::inventory::Inventory;
use crate::vsphere::privileges::NeededFor;

/// What the preflight found for one item: what vCenter showed, and what to change.
pub type PreflightFinding = CheckFinding<VcenterDetail, Fix>;

/// The result of [`preflight`](super::preflight).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Preflight {
    /// The vCenter address, as configured.
    pub server: String,
    /// The account checked.
    pub username: String,
    /// What vCenter says it is; `None` when it could not be reached.
    pub vcenter: Option<VcenterVersion>,
    /// Reaching vCenter and logging in.
    pub login: PreflightFinding,
    /// Reading the inventory as runs do.
    pub observation: PreflightFinding,
    /// Whether the datacenters and clusters runs are told to touch are visible.
    pub scope: Vec<ScopeCheck>,
    /// Each privilege of `privileges.txt` on the objects runs touch.
    pub privileges: Vec<PrivilegeCheck>,
    /// The DRS and HA settings of each observed cluster.
    pub clusters: Vec<ClusterCheck>,
    /// What observation read, for what `check` judges of the policy against it (the sites);
    /// `None` when it could not be read. Not part of the preflight's own JSON.
    #[serde(skip)]
    pub inventory: Option<Inventory>,
}

impl Preflight {
    /// The worst status of any item.
    pub fn worst(&self) -> Status {
        std::iter::once(&self.login)
            .chain(std::iter::once(&self.observation))
            .chain(self.scope.iter().map(|check| &check.finding))
            .chain(self.privileges.iter().map(|check| &check.finding))
            .chain(
                self.clusters
                    .iter()
                    .flat_map(|cluster| cluster.settings.iter().map(|check| &check.finding)),
            )
            .map(|finding| finding.status)
            .max()
            .unwrap_or(Status::Ok)
    }
}

/// `ServiceContent.about`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VcenterVersion {
    /// `fullName`, e.g. `VMware vCenter Server 8.0.3 build-24022515`.
    pub full_name: String,
    /// `apiVersion`, e.g. `8.0.3.0`.
    pub api_version: String,
}

/// Whether a filter finds a cluster the account can see.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScopeCheck {
    pub filter: ScopeFilter,
    #[serde(flatten)]
    pub finding: PreflightFinding,
}

/// One privilege on one object (or on the hosts or VMs of one cluster), for the methods of
/// `privileges.txt` that need it there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PrivilegeCheck {
    /// The privilege id, e.g. `Host.Inventory.EditCluster`.
    pub privilege: String,
    pub object: ObjectScope,
    /// What needs it here, from `privileges.txt`.
    pub needed_for: Vec<NeededFor>,
    /// The SOAP methods that need it here.
    pub methods: Vec<String>,
    /// The objects, by name, that lack it (hosts and VMs are checked one by one).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing_on: Vec<String>,
    #[serde(flatten)]
    pub finding: PreflightFinding,
}

/// The settings of one observed cluster that decide whether DRS enforces the rules this tool
/// writes and whether HA keeps them through a host failure.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterCheck {
    pub datacenter: String,
    pub name: String,
    pub id: Option<String>,
    pub settings: Vec<SettingCheck>,
}

/// A cluster setting the preflight reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Setting {
    /// `drsConfig.enabled`.
    DrsEnabled,
    /// `drsConfig.defaultVmBehavior`: DRS's default automation level.
    DrsAutomationLevel,
    /// `dasConfig.enabled`.
    HaEnabled,
    /// The HA advanced option `das.respectVmVmAntiAffinityRules`.
    HaRespectsVmAntiAffinityRules,
}

impl std::fmt::Display for Setting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Setting::DrsEnabled => "vSphere DRS",
            Setting::DrsAutomationLevel => "DRS automation level",
            Setting::HaEnabled => "vSphere HA",
            Setting::HaRespectsVmAntiAffinityRules => "das.respectVmVmAntiAffinityRules",
        })
    }
}

/// A setting's value as vCenter reported it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum SettingValue {
    Flag(bool),
    /// An automation level (`fullyAutomated`, `partiallyAutomated`, `manual`).
    Level(String),
    /// Not set, or not readable.
    Unset,
}

impl std::fmt::Display for SettingValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SettingValue::Flag(true) => f.write_str("on"),
            SettingValue::Flag(false) => f.write_str("off"),
            SettingValue::Level(level) => f.write_str(level),
            SettingValue::Unset => f.write_str("unset"),
        }
    }
}

/// One setting of one cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SettingCheck {
    pub setting: Setting,
    pub value: SettingValue,
    #[serde(flatten)]
    pub finding: PreflightFinding,
}
