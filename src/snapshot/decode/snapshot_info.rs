//! `SnapshotInfo`: what a snapshot file says about itself, in a document of its own kind, so
//! that readers older than it skip it as a kind they do not use (a field on an existing
//! document would make their strict readers refuse the file).
//!
//! `recordedAt` is when the state was recorded: `plan` and `what-if` plan at that instant when
//! no `--now` is given, so pod ages are those the cluster had when it was recorded, and a
//! plan of an old file judges as a run would have then.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// `apiVersion` of a `SnapshotInfo` document (the one our own kinds share).
pub const API_VERSION: &str = crate::inventory::API_VERSION;
/// `kind` of a `SnapshotInfo` document.
pub const KIND: &str = "SnapshotInfo";

/// A `SnapshotInfo` document's fields other than the object header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "a SnapshotInfo (a mapping with recordedAt)"
)]
pub struct SnapshotInfo {
    /// When the state was recorded (RFC 3339).
    pub recorded_at: DateTime<Utc>,
}

impl SnapshotInfo {
    /// The document as the `snapshot` command writes it: header first, then the fields.
    pub fn document(&self) -> serde_json::Value {
        serde_json::json!({
            "apiVersion": API_VERSION,
            "kind": KIND,
            // Seconds are what `creationTimestamp` has; finer would only look precise.
            "recordedAt": self.recorded_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_written_reads_back_as_the_same_instant() {
        let recorded_at = DateTime::parse_from_rfc3339("2026-11-21T09:00:00Z")
            .expect("a valid timestamp")
            .to_utc();
        let document = SnapshotInfo { recorded_at }.document();
        assert_eq!(document["recordedAt"], "2026-11-21T09:00:00Z");
        assert_eq!(document["kind"], KIND);
        let mut fields = document.clone();
        let fields = fields.as_object_mut().expect("a mapping");
        fields.remove("apiVersion");
        fields.remove("kind");
        let read: SnapshotInfo =
            serde_json::from_value(serde_json::Value::Object(fields.clone())).expect("reads");
        assert_eq!(read.recorded_at, recorded_at);
    }
}
