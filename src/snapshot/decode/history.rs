//! The eviction history's stored forms, read and written (the types are the model's,
//! [`crate::snapshot::model::history`], which says where it is kept and why).
//!
//! The ConfigMap's form: its annotation [`ANNOTATION`] is `v2 <since>` (the format, and the
//! instant, RFC 3339 in whole seconds, from which its times count); each data key is a
//! namespace and a kind (`shop.Deployment`), each line of its value a workload:
//!
//! ```text
//! web 0,600,1200 web-5d8f7c9b6-x2x9z RemoveDuplicates
//! api 1200
//! ```
//!
//! the workload's name, the times of its evictions in seconds after `since`, oldest first, and
//! for its latest eviction the pod and the plugin, while they fit. Grouping by namespace and
//! kind writes each once; the times as offsets take six digits at most. Entries older than
//! [`RETENTION`] are dropped when it is written; when the times alone would not fit
//! [`MAX_BYTES`] the oldest go (the planner refuses an eviction before that would drop one
//! within its window: [`TimesSize`]), then the pods and plugins, the oldest first.
//!
//! The earlier form, read only: a JSON array of `{at, workload, pod, plugin}` in the run lock
//! Lease's annotation ([`parse`]).

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, TimeDelta, Utc};
use serde::Deserialize;

pub use crate::snapshot::model::history::{
    ANNOTATION, CONFIG_MAP_SUFFIX, Compact, EvictedPod, History, HistoryDefect, LEGACY_MAX_BYTES,
    MAX_BYTES, PastEviction, RETENTION, RecordedHistory, Stored, Unreadable, config_map_name,
};

/// The format this version writes, first in the ConfigMap's annotation.
const FORMAT: &str = "v2";
/// The data key of workloads whose name does not split into namespace, kind and name.
const UNGROUPED: &str = "_";
/// What one eviction's time takes at most: six digits (offsets of up to 999,999 s, beyond the
/// 86,400 of [`RETENTION`]) and a comma.
pub const TIME_BYTES: usize = 7;

/// How a history names the Lease it is kept in.
pub fn lease_object(namespace: &str, name: &str) -> String {
    lease_object_named(&format!("{namespace}/{name}"))
}

/// How a history names the Lease `namespace/name`.
pub fn lease_object_named(lease: &str) -> String {
    format!("Lease {lease}")
}

/// How a history names the ConfigMap `namespace/name`.
pub fn config_map_object(namespace: &str, name: &str) -> String {
    format!("ConfigMap {namespace}/{name}")
}

/// The history of the stored forms found (each with the object it is in, as the reader is to
/// be told): none recorded when there are none, unreadable when one does not read, else their
/// entries together, oldest first. Both forms may be there at once only while a run that wrote
/// the ConfigMap could not remove the earlier annotation: an eviction counted twice then only
/// delays its workload's next one.
pub fn read<'a>(stored: impl IntoIterator<Item = (String, &'a Stored)>) -> History {
    let mut entries = Vec::new();
    for (object, stored) in stored {
        let read = match stored {
            Stored::Lease(value) => parse(value),
            Stored::ConfigMap(compact) => decode(compact),
        };
        match read {
            Ok(read) => entries.extend(read),
            Err(problem) => {
                return History::Unreadable(Unreadable {
                    object,
                    cause: HistoryDefect::Corrupt(problem),
                });
            }
        }
    }
    entries.sort_by_key(|entry| entry.at);
    History::Recorded(entries)
}

/// An entry of the earlier form.
#[derive(Deserialize)]
#[serde(expecting = "an eviction of the history (a mapping)")]
struct LegacyEntry {
    at: DateTime<Utc>,
    workload: String,
    pod: String,
    plugin: String,
}

/// Reads the earlier form (the Lease annotation's JSON array); the problem in words when it is
/// not a history. Fields it does not know are ignored.
pub fn parse(value: &str) -> Result<Vec<PastEviction>, String> {
    if value.len() > LEGACY_MAX_BYTES {
        return Err(format!(
            "it is {} bytes, more than the {LEGACY_MAX_BYTES} this tool ever wrote",
            value.len()
        ));
    }
    let entries: Vec<LegacyEntry> = serde_json::from_str(value)
        .map_err(|error| format!("not a JSON list of evictions ({error})"))?;
    let mut entries: Vec<PastEviction> = entries
        .into_iter()
        .map(|entry| PastEviction::new(entry.at, &entry.workload, &entry.pod, &entry.plugin))
        .collect();
    entries.sort_by_key(|entry| entry.at);
    Ok(entries)
}

/// The data key and the line name of `workload` (`namespace/Kind/name`).
fn split(workload: &str) -> (String, &str) {
    let mut parts = workload.splitn(3, '/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(namespace), Some(kind), Some(name))
            if is_key_part(namespace) && is_key_part(kind) && is_line_part(name) =>
        {
            (format!("{namespace}.{kind}"), name)
        }
        _ => (UNGROUPED.to_string(), workload),
    }
}

/// A namespace or a kind as a data key holds it (a ConfigMap key is `[-._a-zA-Z0-9]+`; the dot
/// separates the two).
fn is_key_part(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// A name a line can hold: no space, no line break.
fn is_line_part(text: &str) -> bool {
    !text.is_empty() && !text.bytes().any(|b| b.is_ascii_whitespace())
}

/// The size the times of a set of evictions take in the ConfigMap, at most, as evictions are
/// added: each data key once, each workload's line with its name, a space and a line break,
/// and [`TIME_BYTES`] per eviction. The planner counts the window's evictions and its own, and
/// refuses one that would take it over [`MAX_BYTES`]; the writer drops the oldest beyond it.
#[derive(Debug, Default)]
pub struct TimesSize {
    keys: HashSet<String>,
    workloads: HashSet<String>,
    bytes: usize,
}

impl TimesSize {
    /// The size with one more eviction of `workload`.
    pub fn with(&self, workload: &str) -> usize {
        self.bytes + self.added(workload)
    }

    /// Counts one more eviction of `workload`.
    pub fn add(&mut self, workload: &str) {
        self.bytes += self.added(workload);
        if !self.workloads.contains(workload) {
            self.keys.insert(split(workload).0);
            self.workloads.insert(workload.to_string());
        }
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    fn added(&self, workload: &str) -> usize {
        if self.workloads.contains(workload) {
            return TIME_BYTES;
        }
        let (key, name) = split(workload);
        let key_bytes = if self.keys.contains(&key) {
            0
        } else {
            key.len()
        };
        key_bytes + name.len() + 2 + TIME_BYTES
    }
}

/// Whole seconds, rounded up: an eviction recorded a fraction later counts a fraction longer.
fn whole_seconds(at: DateTime<Utc>) -> i64 {
    at.timestamp() + i64::from(at.timestamp_subsec_nanos() > 0)
}

/// One workload's line as it is built.
#[derive(Default)]
struct Line {
    offsets: Vec<i64>,
    latest: Option<(DateTime<Utc>, EvictedPod)>,
}

/// The ConfigMap's content for `entries` at `now`: the entries of the last [`RETENTION`]; the
/// oldest of them dropped while their times would not fit [`MAX_BYTES`]; each workload's latest
/// pod and plugin, the newest first, while they fit.
pub fn encode(entries: &[PastEviction], now: DateTime<Utc>) -> Compact {
    let kept = newest_that_fit(entries, now);
    let since = kept
        .first()
        .map_or(whole_seconds(now), |e| whole_seconds(e.at));
    let groups = lines(&kept, since);
    let times_bytes: usize = groups
        .iter()
        .map(|(key, lines)| {
            key.len()
                + lines
                    .iter()
                    .map(|(name, line)| name.len() + 2 + offsets_text(&line.offsets).len())
                    .sum::<usize>()
        })
        .sum();
    let shown = details_that_fit(&groups, MAX_BYTES.saturating_sub(times_bytes));
    let since = DateTime::from_timestamp(since, 0).unwrap_or(now);
    Compact {
        marker: format!(
            "{FORMAT} {}",
            since.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        ),
        data: rendered(&groups, &shown),
    }
}

/// The entries within [`RETENTION`] of `now`, oldest first, from the newest back as far as
/// their times fit in [`MAX_BYTES`].
fn newest_that_fit(entries: &[PastEviction], now: DateTime<Utc>) -> Vec<&PastEviction> {
    let mut kept: Vec<&PastEviction> = entries
        .iter()
        .filter(|entry| now - entry.at <= RETENTION)
        .collect();
    kept.sort_by_key(|entry| entry.at);
    let mut size = TimesSize::default();
    let mut first = kept.len();
    while first > 0 && size.with(&kept[first - 1].workload) <= MAX_BYTES {
        first -= 1;
        size.add(&kept[first].workload);
    }
    kept.split_off(first)
}

/// Each workload's line, by data key (namespace and kind) and name: its times as offsets from
/// `since`, and its latest eviction's pod and plugin where known.
fn lines<'e>(kept: &[&'e PastEviction], since: i64) -> BTreeMap<String, BTreeMap<&'e str, Line>> {
    let mut groups: BTreeMap<String, BTreeMap<&str, Line>> = BTreeMap::new();
    for entry in kept {
        let (key, name) = split(&entry.workload);
        let line = groups.entry(key).or_default().entry(name).or_default();
        line.offsets.push(whole_seconds(entry.at) - since);
        if let Some(pod) = &entry.pod {
            line.latest = Some((entry.at, pod.clone()));
        } else if line.latest.as_ref().is_some_and(|(at, _)| *at < entry.at) {
            // A later eviction whose pod is not known: the earlier one is not its latest.
            line.latest = None;
        }
    }
    groups
}

/// The ConfigMap's data: per key, one text line per workload, with its latest pod and plugin
/// where `shown` lets them in.
fn rendered(
    groups: &BTreeMap<String, BTreeMap<&str, Line>>,
    shown: &HashSet<(&str, &str)>,
) -> BTreeMap<String, String> {
    groups
        .iter()
        .map(|(key, lines)| {
            let mut text = String::new();
            for (name, line) in lines {
                text.push_str(name);
                text.push(' ');
                text.push_str(&offsets_text(&line.offsets));
                if let Some((_, pod)) = &line.latest
                    && shown.contains(&(key.as_str(), *name))
                {
                    text.push(' ');
                    text.push_str(&pod.name);
                    text.push(' ');
                    text.push_str(&pod.plugin);
                }
                text.push('\n');
            }
            (key.clone(), text)
        })
        .collect()
}

fn offsets_text(offsets: &[i64]) -> String {
    offsets
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The workloads (data key, name) whose latest pod and plugin fit in `room` bytes, the newest
/// first. A pod or plugin a line could not hold (a space in it) is not kept.
fn details_that_fit<'a>(
    groups: &'a BTreeMap<String, BTreeMap<&'a str, Line>>,
    mut room: usize,
) -> HashSet<(&'a str, &'a str)> {
    let mut latest: Vec<(DateTime<Utc>, &str, &str, usize)> = groups
        .iter()
        .flat_map(|(key, lines)| {
            lines.iter().filter_map(move |(name, line)| {
                let (at, pod) = line.latest.as_ref()?;
                (is_line_part(&pod.name) && is_line_part(&pod.plugin)).then(|| {
                    let bytes = 2 + pod.name.len() + pod.plugin.len();
                    (*at, key.as_str(), *name, bytes)
                })
            })
        })
        .collect();
    latest.sort_by(|a, b| b.0.cmp(&a.0).then((a.1, a.2).cmp(&(b.1, b.2))));
    let mut shown = HashSet::new();
    for (_, key, name, bytes) in latest {
        if bytes > room {
            break;
        }
        room -= bytes;
        shown.insert((key, name));
    }
    shown
}

/// Reads the ConfigMap's form; the problem in words when it is not a history.
pub fn decode(compact: &Compact) -> Result<Vec<PastEviction>, String> {
    let since = match compact.marker.split_once(' ') {
        Some((FORMAT, since)) => DateTime::parse_from_rfc3339(since)
            .map_err(|error| format!("its annotation's time {since:?} is not RFC 3339 ({error})"))?
            .to_utc(),
        _ => {
            return Err(format!(
                "its annotation {:?} is not `{FORMAT} <time>`, the format this version reads",
                compact.marker
            ));
        }
    };
    let bytes: usize = compact.data.iter().map(|(k, v)| k.len() + v.len()).sum();
    if bytes > MAX_BYTES {
        return Err(format!(
            "its data take {bytes} bytes, more than the {MAX_BYTES} a ConfigMap holds"
        ));
    }
    let mut entries = Vec::new();
    for (key, text) in &compact.data {
        let prefix = match key.split_once('.') {
            Some((namespace, kind)) => format!("{namespace}/{kind}/"),
            None if key == UNGROUPED => String::new(),
            None => return Err(format!("its key {key:?} is not `namespace.Kind`")),
        };
        for (number, line) in text.lines().enumerate() {
            let at_line = |problem: String| format!("{key}, line {}: {problem}", number + 1);
            decode_line(line, since, &prefix, &mut entries).map_err(at_line)?;
        }
    }
    entries.sort_by_key(|entry| entry.at);
    Ok(entries)
}

/// The entries of one workload's line.
fn decode_line(
    line: &str,
    since: DateTime<Utc>,
    prefix: &str,
    entries: &mut Vec<PastEviction>,
) -> Result<(), String> {
    let fields: Vec<&str> = line.split(' ').collect();
    let (name, offsets, pod) = match fields.as_slice() {
        [name, offsets] => (name, offsets, None),
        [name, offsets, pod, plugin] => (
            name,
            offsets,
            Some(EvictedPod {
                name: (*pod).to_string(),
                plugin: (*plugin).to_string(),
            }),
        ),
        _ => {
            return Err(format!(
                "{line:?} is not `name times` or `name times pod plugin`"
            ));
        }
    };
    let workload = format!("{prefix}{name}");
    let mut times = Vec::new();
    for offset in offsets.split(',') {
        let seconds: u32 = offset
            .parse()
            .map_err(|_| format!("{offset:?} is not a number of seconds"))?;
        times.push(since + TimeDelta::seconds(seconds.into()));
    }
    // The pod and plugin are the latest eviction's: the last time, as times are written oldest
    // first.
    let last = times.len() - 1;
    for (index, at) in times.into_iter().enumerate() {
        entries.push(PastEviction {
            at,
            workload: workload.clone(),
            pod: if index == last { pod.clone() } else { None },
        });
    }
    Ok(())
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

    fn entry(minutes: i64, workload: &str, pod: &str) -> PastEviction {
        PastEviction::new(at(minutes), workload, pod, "RemoveDuplicates")
    }

    fn without_pod(mut entry: PastEviction) -> PastEviction {
        entry.pod = None;
        entry
    }

    #[test]
    fn an_encoded_history_reads_back_oldest_first_with_each_workloads_latest_pod() {
        let entries = vec![
            entry(5, "shop/Deployment/web", "web-b"),
            entry(1, "shop/Deployment/web", "web-a"),
            entry(3, "shop/StatefulSet/db", "db-0"),
        ];
        let compact = encode(&entries, at(10));
        assert_eq!(compact.marker, "v2 2026-11-28T12:01:00Z");
        assert_eq!(
            compact.data,
            BTreeMap::from([
                (
                    "shop.Deployment".to_string(),
                    "web 0,240 web-b RemoveDuplicates\n".to_string()
                ),
                (
                    "shop.StatefulSet".to_string(),
                    "db 120 db-0 RemoveDuplicates\n".to_string()
                ),
            ])
        );
        assert_eq!(
            decode(&compact),
            Ok(vec![
                without_pod(entry(1, "shop/Deployment/web", "web-a")),
                entry(3, "shop/StatefulSet/db", "db-0"),
                entry(5, "shop/Deployment/web", "web-b"),
            ])
        );
    }

    #[test]
    fn a_time_within_a_second_counts_from_the_next_whole_second() {
        let mut early = entry(0, "shop/Deployment/web", "web-a");
        early.at += TimeDelta::milliseconds(300);
        let read = decode(&encode(&[early], at(1))).expect("readable");
        assert_eq!(read[0].at, at(0) + TimeDelta::seconds(1));
    }

    #[test]
    fn entries_past_the_retention_are_dropped() {
        let entries = vec![
            entry(-24 * 60 - 1, "shop/Deployment/old", "old"),
            entry(0, "shop/Deployment/new", "new"),
        ];
        let read = decode(&encode(&entries, at(0))).expect("readable");
        assert_eq!(read, vec![entry(0, "shop/Deployment/new", "new")]);
    }

    #[test]
    fn a_workload_name_that_does_not_split_is_kept_whole() {
        let entries = vec![entry(0, "odd", "odd-1"), entry(0, "a/b.c/d", "x")];
        let compact = encode(&entries, at(0));
        assert_eq!(compact.data.keys().collect::<Vec<_>>(), ["_"]);
        let mut read = decode(&compact).expect("readable");
        read.sort_by(|a, b| a.workload.cmp(&b.workload));
        assert_eq!(
            read,
            vec![entry(0, "a/b.c/d", "x"), entry(0, "odd", "odd-1")]
        );
    }

    /// `count` evictions of distinct workloads in 200 namespaces, `minutes` ago from
    /// `at(0)`, with pod names 30 characters long.
    fn many(count: usize, minutes: i64) -> Vec<PastEviction> {
        (0..count)
            .map(|i| {
                entry(
                    -minutes,
                    &format!("team-{:03}/Deployment/service-{i:06}", i % 200),
                    &format!("service-{i:06}-7d9f8c5b4-x2x9z"),
                )
            })
            .collect()
    }

    #[test]
    fn twenty_thousand_evictions_of_distinct_workloads_fit_with_their_times() {
        let entries = many(20_000, 5);
        let compact = encode(&entries, at(0));
        let bytes: usize = compact.data.iter().map(|(k, v)| k.len() + v.len()).sum();
        assert!(bytes <= MAX_BYTES, "{bytes}");
        let read = decode(&compact).expect("readable");
        assert_eq!(read.len(), 20_000);
        // Their times all fit, and so do most pods and plugins.
        let with_pod = read.iter().filter(|e| e.pod.is_some()).count();
        assert!(with_pod > 10_000, "{with_pod}");
        let mut size = TimesSize::default();
        for entry in &entries {
            size.add(&entry.workload);
        }
        assert!(size.bytes() < MAX_BYTES / 2, "{}", size.bytes());
    }

    #[test]
    fn when_the_times_do_not_fit_the_oldest_go_and_the_newest_pods_are_kept() {
        let mut entries = many(40_000, 30);
        entries.extend(many(40_000, 5).into_iter().map(|mut e| {
            e.workload.push_str("-b");
            e
        }));
        let compact = encode(&entries, at(0));
        let bytes: usize = compact.data.iter().map(|(k, v)| k.len() + v.len()).sum();
        assert!(bytes <= MAX_BYTES, "{bytes}");
        let read = decode(&compact).expect("readable");
        assert!(read.len() < 80_000, "{}", read.len());
        // All the newer ones are there; what went was older.
        let newer = read.iter().filter(|e| e.at == at(-5)).count();
        assert_eq!(newer, 40_000);
        let newest_with_pod = read
            .iter()
            .filter(|e| e.pod.is_some())
            .all(|e| e.at == at(-5));
        assert!(newest_with_pod);
    }

    #[test]
    fn the_size_counted_ahead_is_never_less_than_the_size_written() {
        let entries: Vec<PastEviction> = (0..3000)
            .map(|i| {
                let workload = format!("ns-{}/Deployment/app-{}", i % 7, i % 500);
                entry(-(i as i64 % 1400), &workload, "p")
            })
            .collect();
        let mut size = TimesSize::default();
        for entry in &entries {
            size.add(&entry.workload);
        }
        let mut compact = encode(&entries, at(0));
        for text in compact.data.values_mut() {
            *text = text
                .lines()
                .map(|line| line.split(' ').take(2).collect::<Vec<_>>().join(" ") + "\n")
                .collect();
        }
        let written: usize = compact.data.iter().map(|(k, v)| k.len() + v.len()).sum();
        assert!(written <= size.bytes(), "{written} > {}", size.bytes());
        assert!(written * 2 > size.bytes(), "a bound, not a guess");
    }

    #[test]
    fn a_history_not_in_the_format_says_what_is_wrong() {
        let compact = |marker: &str, key: &str, text: &str| Compact {
            marker: marker.to_string(),
            data: BTreeMap::from([(key.to_string(), text.to_string())]),
        };
        let cases = [
            (compact("v3 x", "a.B", "w 1\n"), "is not `v2 <time>`"),
            (compact("v2 yesterday", "a.B", "w 1\n"), "is not RFC 3339"),
            (
                compact("v2 2026-11-28T12:00:00Z", "aB", "w 1\n"),
                "is not `namespace.Kind`",
            ),
            (
                compact("v2 2026-11-28T12:00:00Z", "a.B", "w\n"),
                "a.B, line 1: \"w\" is not `name times`",
            ),
            (
                compact("v2 2026-11-28T12:00:00Z", "a.B", "w 1\nv -1\n"),
                "a.B, line 2: \"-1\" is not a number of seconds",
            ),
        ];
        for (compact, wanted) in cases {
            let problem = decode(&compact).expect_err("not a history");
            assert!(problem.contains(wanted), "{problem}");
        }
    }

    #[test]
    fn the_earlier_form_is_read_and_says_what_is_wrong() {
        let text = r#"[{"at":"2026-11-28T12:05:00Z","workload":"shop/Deployment/web","pod":"web-b","plugin":"RemoveDuplicates"},
                       {"at":"2026-11-28T12:01:00Z","workload":"shop/Deployment/web","pod":"web-a","plugin":"RemoveDuplicates","new":1}]"#;
        assert_eq!(
            parse(text),
            Ok(vec![
                entry(1, "shop/Deployment/web", "web-a"),
                entry(5, "shop/Deployment/web", "web-b")
            ])
        );
        let problem = parse("{\"at\": 1}").expect_err("not a list");
        assert!(
            problem.starts_with("not a JSON list of evictions"),
            "{problem}"
        );
        let problem = parse(&"x".repeat(LEGACY_MAX_BYTES + 1)).expect_err("too long");
        assert!(problem.contains("more than the 32768"), "{problem}");
        let missing = "[{\"at\":\"2026-11-28T12:00:00Z\",\"workload\":\"a/B/c\"}]";
        assert!(parse(missing).is_err());
    }

    #[test]
    fn both_forms_are_read_together_and_a_corrupt_one_names_its_object() {
        assert_eq!(read([]), History::Recorded(Vec::new()));
        let legacy = Stored::Lease(
            r#"[{"at":"2026-11-28T12:05:00Z","workload":"a/B/c","pod":"p","plugin":"RemoveDuplicates"}]"#
                .to_string(),
        );
        let compact = Stored::ConfigMap(encode(&[entry(1, "shop/Deployment/web", "web-a")], at(2)));
        assert_eq!(
            read([
                (lease_object("ops", "x"), &legacy),
                (config_map_object("ops", "x-history"), &compact)
            ]),
            History::Recorded(vec![
                entry(1, "shop/Deployment/web", "web-a"),
                entry(5, "a/B/c", "p")
            ])
        );
        let corrupt = Stored::Lease("[{".to_string());
        let History::Unreadable(unreadable) = read([(lease_object("ops", "x"), &corrupt)]) else {
            panic!("corrupt");
        };
        assert_eq!(unreadable.object, "Lease ops/x");
        assert!(
            unreadable.to_string().contains("Lease ops/x"),
            "{unreadable}"
        );
    }

    #[test]
    fn an_empty_history_encodes_as_no_data() {
        let compact = encode(&[], at(0));
        assert!(compact.data.is_empty());
        assert_eq!(decode(&compact), Ok(Vec::new()));
    }
}
