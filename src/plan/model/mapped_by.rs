//! How a node was matched to the inventory: the mapping's word, below both the mapping
//! (`labels.rs`) and the warnings that name it, so neither imports the other to share it.

use serde::Serialize;

/// How a node was matched to the inventory, in the order they are tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum MappedBy {
    #[serde(rename = "providerID")]
    ProviderId,
    #[serde(rename = "systemUUID")]
    SystemUuid,
    /// The `systemUUID` with its first three fields byte-swapped (SMBIOS 2.7).
    #[serde(rename = "systemUUIDSwapped")]
    SystemUuidSwapped,
    #[serde(rename = "vmName")]
    VmName,
    /// The node is the ESXi host of that name (by node name or an InternalIP).
    #[serde(rename = "esxiHost")]
    EsxiHost,
    /// Source `node-label`: the node's own label names its host.
    #[serde(rename = "nodeLabel")]
    NodeLabel,
}

impl MappedBy {
    /// How messages say it.
    pub fn describe(self) -> &'static str {
        match self {
            MappedBy::ProviderId => "providerID",
            MappedBy::SystemUuid => "systemUUID",
            MappedBy::SystemUuidSwapped => "systemUUID (byte-swapped)",
            MappedBy::VmName => "VM name",
            MappedBy::EsxiHost => "ESXi host name or InternalIP",
            MappedBy::NodeLabel => "its node label",
        }
    }
}
