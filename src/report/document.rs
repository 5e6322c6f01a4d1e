//! The JSON report, the contract of docs/design.md §7: its keys in order, each borrowed from
//! where it lives (the plan's fields from the plan the report keeps, each action beside its
//! outcome). A plan field the report shows is added here, in its place: serde writes the keys
//! in the order they are declared, and the goldens hold that order.

use serde::{Serialize, Serializer};

use super::{AnyWarning, DrsRuleEntry, EvictionEntry, GuestClusters, Mode, Report, Target};
use crate::plan::{Exposure, LabelChange, MappedNode, Skip};

/// The report as its JSON document.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Document<'a> {
    api_version: &'static str,
    kind: &'static str,
    mode: Mode,
    label_changes: &'a [LabelChange],
    evictions: Vec<EvictionEntry<'a>>,
    skipped: &'a [Skip],
    drs_rules: Vec<DrsRuleEntry<'a>>,
    /// Empty without an inventory, and then left out.
    #[serde(skip_serializing_if = "<[MappedNode]>::is_empty")]
    mapped_nodes: &'a [MappedNode],
    unmapped_nodes: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    exposure: Option<&'a Exposure>,
    /// `guestClusters` and `unplacedVms`, or nothing.
    #[serde(flatten)]
    guest_clusters: Option<&'a GuestClusters>,
    warnings: Vec<AnyWarning<'a>>,
    errors: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    exit_code: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<&'a Target>,
}

impl Serialize for Report {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let plan = &self.plan;
        Document {
            api_version: "vsphere-descheduler.io/v1alpha1",
            kind: "Report",
            mode: self.mode,
            label_changes: &plan.label_changes,
            evictions: self.evictions().collect(),
            skipped: &plan.skipped,
            drs_rules: self.drs_rules().collect(),
            mapped_nodes: &plan.mapped_nodes,
            unmapped_nodes: &plan.unmapped_nodes,
            exposure: plan.exposure.as_ref(),
            guest_clusters: self.guest_clusters.as_ref(),
            warnings: self.warnings().collect(),
            errors: &self.errors,
            exit_code: self.exit_code,
            target: self.target.as_ref(),
        }
        .serialize(serializer)
    }
}
