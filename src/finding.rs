//! What one check found, for `check` and the vCenter preflight alike: how the item stands, what
//! was found and what to change, both typed by the area that checked ([`CheckFinding`]). Words
//! come only from their `Display`, where a report writes them. A finding about a file
//! (`validate`, `plan`'s problems) is placed rather than checked: `report::findings::Finding`,
//! with a typed rule (`FindingRule`), a severity, its file, line, column and path.

use std::fmt::Display;

use serde::{Serialize, Serializer};

/// How an item stands. Ordered from fine to worst, so the worst item is the maximum.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Ok,
    /// Could not be checked (the detail says why); nothing is known against it.
    NotChecked,
    /// Works, but not as this tool is meant to work (rules not enforced, HA not keeping them).
    Warning,
    /// Dry runs work without it, and runs once `dryRun` is off will need it (the DRS rule
    /// write privilege): going live fails at the DRS step until it is granted.
    MissingForGoingLive,
    /// Something runs need is missing: they will fail or do less than asked.
    Missing,
}

impl Status {
    /// As reports write it: the same word as its JSON form.
    pub fn word(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::NotChecked => "not-checked",
            Status::Warning => "warning",
            Status::MissingForGoingLive => "missing-for-going-live",
            Status::Missing => "missing",
        }
    }
}

impl Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.word())
    }
}

/// One item's finding: its status, what was found (`D`, the area's detail) and, when something
/// is to be done, what to change (`F`, the area's fix). In JSON the detail is its sentence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(bound(serialize = "D: Display, F: Serialize"))]
pub struct CheckFinding<D, F> {
    pub status: Status,
    #[serde(serialize_with = "as_words")]
    pub detail: D,
    pub fix: Option<F>,
}

/// A value as the sentence its `Display` writes: the JSON edge of the vocabularies.
fn as_words<T: Display, S: Serializer>(value: &T, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(value)
}

impl<D, F> CheckFinding<D, F> {
    pub fn new(status: Status, detail: impl Into<D>) -> Self {
        CheckFinding {
            status,
            detail: detail.into(),
            fix: None,
        }
    }

    pub fn ok(detail: impl Into<D>) -> Self {
        Self::new(Status::Ok, detail)
    }

    pub fn not_checked(detail: impl Into<D>) -> Self {
        Self::new(Status::NotChecked, detail)
    }

    pub fn with_fix(mut self, fix: impl Into<F>) -> Self {
        self.fix = Some(fix.into());
        self
    }

    /// The same finding in a wider vocabulary (an area's, as one of `check`'s sections).
    pub fn map<D2, F2>(
        self,
        detail: impl FnOnce(D) -> D2,
        fix: impl FnOnce(F) -> F2,
    ) -> CheckFinding<D2, F2> {
        CheckFinding {
            status: self.status,
            detail: detail(self.detail),
            fix: self.fix.map(fix),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finding_serializes_its_detail_as_its_sentence_and_its_fix_as_it_is() {
        let finding: CheckFinding<String, String> =
            CheckFinding::new(Status::MissingForGoingLive, "found").with_fix("change");
        assert_eq!(
            serde_json::to_value(&finding).expect("serializes"),
            serde_json::json!({
                "status": "missing-for-going-live", "detail": "found", "fix": "change"
            })
        );
        let fine: CheckFinding<String, String> = CheckFinding::ok("fine");
        assert_eq!(
            serde_json::to_value(&fine).expect("serializes")["fix"],
            serde_json::Value::Null
        );
    }

    #[test]
    fn the_worst_status_is_the_greatest() {
        let statuses = [Status::Warning, Status::Missing, Status::Ok];
        assert_eq!(statuses.iter().max(), Some(&Status::Missing));
        assert!(Status::MissingForGoingLive < Status::Missing);
        assert!(Status::NotChecked < Status::Warning);
    }
}
