//! The eviction history: what earlier runs evicted, per workload, so pacing holds across runs.
//!
//! It lives in one annotation of the run lock's Lease ([`ANNOTATION`]), an object the run
//! already owns and writes only while it holds the lock, so RBAC does not grow. The value is a
//! JSON array of [`PastEviction`]s, oldest first, bounded: entries older than [`RETENTION`] are
//! dropped, then the oldest until the text fits [`MAX_BYTES`] (the API server allows 256 KiB for
//! all of an object's annotations together).

use crate::cause::Failure;
use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

/// The Lease annotation that holds the history.
pub const ANNOTATION: &str = "vsphere-descheduler.io/eviction-history";
/// The most the annotation's value may take.
pub const MAX_BYTES: usize = 32 * 1024;
/// How long an entry is kept. Pacing windows may not be longer.
pub const RETENTION: TimeDelta = TimeDelta::hours(24);

/// One eviction an earlier run sent.
/// Fields it does not know are ignored, so a newer version's history stays readable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PastEviction {
    /// When the run sent it (recorded just before sending).
    pub at: DateTime<Utc>,
    /// `namespace/Kind/name`, as the report names workloads (a Deployment, not its ReplicaSet).
    pub workload: String,
    /// The evicted pod's name.
    pub pod: String,
    /// The plugin that evicted it.
    pub plugin: String,
}

/// What the snapshot knows of earlier runs' evictions.
#[derive(Clone, Debug, PartialEq)]
pub enum History {
    /// Read, oldest first; empty when no run recorded any (or the Lease does not exist yet).
    Recorded(Vec<PastEviction>),
    /// Present but unusable: pacing fails closed, no paced eviction is planned.
    Unreadable(Unreadable),
}

impl Default for History {
    fn default() -> History {
        History::Recorded(Vec::new())
    }
}

/// A history as a snapshot file holds it: the Lease's annotation, read once the file it came
/// from is known (an unreadable one names the file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedHistory {
    /// `namespace/name` of the Lease.
    pub lease: String,
    /// The annotation's value, as recorded.
    pub value: String,
}

/// Why the history could not be used, naming the object it was read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unreadable {
    /// `Lease namespace/name`, or the file it was read from.
    pub object: String,
    /// What is wrong: it decides what the reader is told to do.
    pub cause: Cause,
}

/// Why a history is unreadable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cause {
    /// The annotation is there but is not a history this tool writes (the problem in words):
    /// only removing it helps.
    Corrupt(String),
    /// The object that holds it could not be read (the failed request, its kind and its words):
    /// the next run reads it again.
    NotRead(Failure),
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (problem, fix) = match &self.cause {
            Cause::Corrupt(problem) => (problem, "Remove the annotation to start a new history"),
            Cause::NotRead(failure) => (
                &failure.text,
                "The next run reads it again; where it was refused, grant the run `get` on \
                 the Lease (the chart does)",
            ),
        };
        write!(
            f,
            "the eviction history in {} (annotation {ANNOTATION}) cannot be read: {problem}; \
             no workload's pod is evicted while it cannot (pacing fails closed). {fix}",
            self.object
        )
    }
}

/// The history of the annotation `value` of `object` (`Lease namespace/name`, or where it was
/// recorded): none recorded when the annotation is absent, unreadable when it does not parse.
pub fn read(value: Option<&str>, object: impl Into<String>) -> History {
    match value.map(parse) {
        None => History::default(),
        Some(Ok(entries)) => History::Recorded(entries),
        Some(Err(problem)) => History::Unreadable(Unreadable {
            object: object.into(),
            cause: Cause::Corrupt(problem),
        }),
    }
}

/// How a history names the Lease it is kept in.
pub fn lease_object(namespace: &str, name: &str) -> String {
    lease_object_named(&format!("{namespace}/{name}"))
}

/// How a history names the Lease `namespace/name`.
pub fn lease_object_named(lease: &str) -> String {
    format!("Lease {lease}")
}

/// Reads the annotation's value; the problem in words when it is not a history.
pub fn parse(value: &str) -> Result<Vec<PastEviction>, String> {
    if value.len() > MAX_BYTES {
        return Err(format!(
            "it is {} bytes, more than the {MAX_BYTES} this tool ever writes",
            value.len()
        ));
    }
    let mut entries: Vec<PastEviction> = serde_json::from_str(value)
        .map_err(|error| format!("not a JSON list of evictions ({error})"))?;
    entries.sort_by_key(|entry| entry.at);
    Ok(entries)
}

/// The annotation's value for `entries` at `now`: only entries of the last [`RETENTION`], and of
/// those the newest that fit [`MAX_BYTES`].
pub fn render(entries: &[PastEviction], now: DateTime<Utc>) -> String {
    let mut kept: Vec<&PastEviction> = entries
        .iter()
        .filter(|entry| now - entry.at <= RETENTION)
        .collect();
    kept.sort_by_key(|entry| entry.at);
    let lengths: Vec<usize> = kept
        .iter()
        .map(|entry| serde_json::to_string(entry).map_or(0, |text| text.len()))
        .collect();
    // "[" and "]", and a comma between entries.
    let mut total = 2 + lengths.iter().sum::<usize>() + lengths.len().saturating_sub(1);
    let mut first = 0;
    while total > MAX_BYTES && first < kept.len() {
        total -= lengths[first] + usize::from(first + 1 < kept.len());
        first += 1;
    }
    serde_json::to_string(&kept[first..]).expect("a history serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(minutes: i64) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-28T12:00:00Z")
            .expect("a time")
            .with_timezone(&Utc)
            + TimeDelta::minutes(minutes)
    }

    fn entry(minutes: i64, pod: &str) -> PastEviction {
        PastEviction {
            at: at(minutes),
            workload: "shop/Deployment/web".to_string(),
            pod: pod.to_string(),
            plugin: "RemoveDuplicates".to_string(),
        }
    }

    #[test]
    fn a_rendered_history_reads_back_oldest_first() {
        let entries = vec![entry(5, "web-b"), entry(1, "web-a")];
        let text = render(&entries, at(10));
        assert_eq!(parse(&text), Ok(vec![entry(1, "web-a"), entry(5, "web-b")]));
    }

    #[test]
    fn entries_past_the_retention_are_dropped() {
        let entries = vec![entry(-24 * 60 - 1, "old"), entry(0, "new")];
        let text = render(&entries, at(0));
        assert_eq!(parse(&text), Ok(vec![entry(0, "new")]));
    }

    #[test]
    fn the_oldest_go_first_when_the_text_would_be_too_long() {
        let entries: Vec<PastEviction> = (0..1000)
            .map(|i| entry(i / 100, &format!("web-{i:04}")))
            .collect();
        let text = render(&entries, at(20));
        assert!(text.len() <= MAX_BYTES, "{} bytes", text.len());
        let kept = parse(&text).expect("readable");
        assert!(kept.len() > 100 && kept.len() < 1000, "{}", kept.len());
        assert_eq!(kept.last(), entries.last());
        // Exactly the newest ones: one more would not fit.
        let one_more = &entries[entries.len() - kept.len() - 1..];
        assert!(serde_json::to_string(one_more).expect("json").len() > MAX_BYTES);
    }

    #[test]
    fn the_fix_follows_the_cause() {
        let corrupt = Unreadable {
            object: lease_object("ops", "x"),
            cause: Cause::Corrupt("not a JSON list of evictions".to_string()),
        };
        assert!(
            corrupt
                .to_string()
                .ends_with("Remove the annotation to start a new history")
        );
        let refused = Unreadable {
            object: lease_object("ops", "x"),
            cause: Cause::NotRead(Failure::new(
                crate::cause::Cause::Forbidden,
                "the Lease could not be read (403)",
            )),
        };
        let text = refused.to_string();
        assert!(!text.contains("Remove the annotation"), "{text}");
        assert!(text.contains("grant the run `get` on the Lease"), "{text}");
    }

    #[test]
    fn a_corrupt_history_says_what_is_wrong() {
        let problem = parse("{\"at\": 1}").expect_err("not a list");
        assert!(
            problem.starts_with("not a JSON list of evictions"),
            "{problem}"
        );
        let problem = parse(&"x".repeat(MAX_BYTES + 1)).expect_err("too long");
        assert!(problem.contains("more than the 32768"), "{problem}");
        let missing = "[{\"at\":\"2026-11-28T12:00:00Z\",\"workload\":\"a/B/c\"}]";
        assert!(parse(missing).is_err());
    }

    #[test]
    fn an_absent_annotation_is_an_empty_history_and_a_corrupt_one_names_its_object() {
        assert_eq!(read(None, "Lease ops/x"), History::Recorded(Vec::new()));
        let text = render(&[entry(1, "web-a")], at(2));
        assert_eq!(
            read(Some(&text), "Lease ops/x"),
            History::Recorded(vec![entry(1, "web-a")])
        );
        let History::Unreadable(unreadable) = read(Some("[{"), lease_object("ops", "x")) else {
            panic!("corrupt");
        };
        assert_eq!(unreadable.object, "Lease ops/x");
        assert!(
            unreadable.to_string().contains("Lease ops/x"),
            "{unreadable}"
        );
    }

    #[test]
    fn an_empty_history_renders_as_an_empty_list() {
        assert_eq!(render(&[], at(0)), "[]");
        assert_eq!(parse("[]"), Ok(Vec::new()));
    }
}
