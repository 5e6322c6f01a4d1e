//! The eviction history's annotation: read from a Lease's value, and written back bounded
//! (the types it reads into are the model's, [`crate::snapshot::model::history`]).

use chrono::{DateTime, Utc};

pub use crate::snapshot::model::history::{
    ANNOTATION, History, HistoryDefect, MAX_BYTES, PastEviction, RETENTION, RecordedHistory,
    Unreadable,
};

/// The history of the annotation `value` of `object` (`Lease namespace/name`, or where it was
/// recorded): none recorded when the annotation is absent, unreadable when it does not parse.
pub fn read(value: Option<&str>, object: impl Into<String>) -> History {
    match value.map(parse) {
        None => History::default(),
        Some(Ok(entries)) => History::Recorded(entries),
        Some(Err(problem)) => History::Unreadable(Unreadable {
            object: object.into(),
            cause: HistoryDefect::Corrupt(problem),
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
    use chrono::TimeDelta;

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
