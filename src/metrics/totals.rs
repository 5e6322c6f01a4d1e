//! The running totals of the counter and histogram families: what a live run counts
//! ([`Totals::of_run`]), what the group's last push held ([`Totals::from_pushgateway`]), and
//! their sum, which the run pushes.
//!
//! A Pushgateway keeps only the last push of a group, so a counter can only go on counting if
//! each run carries the totals forward: it reads them back from the Pushgateway it is about to
//! push to, adds its own counts and pushes the sum. A series of the last push that this run did
//! not count is pushed again unchanged, so a counter never goes down — unless the totals were
//! lost (the Pushgateway restarted without persistence, the group was deleted, or its series
//! were of another type or label set, as an older version pushed them): the counters then start
//! again from this run's counts, which Prometheus' `increase()` and `rate()` read as a counter
//! reset.
//!
//! Only live runs count (`mode` `run`): a dry run's evictions, skips and errors are what a run
//! would do, and upstream's habit of counting them as successes is what makes its counter
//! useless for "evictions this week" on a cluster that tried dry runs.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{Family, FamilyKind, RunTiming, families};
use crate::outcome::{DrsOutcome, EvictionOutcome};
use crate::plan::DrsAction;
use crate::report::{EvictionEntry, Mode, Outcome, Report};

pub const UPSTREAM_EVICTIONS: &str = "descheduler_pods_evicted_total";
pub const LOOP_DURATION: &str = "descheduler_loop_duration_seconds";
pub const EVICTIONS: &str = "vsphere_descheduler_evictions_total";
pub const SKIPPED: &str = "vsphere_descheduler_pods_skipped_total";
pub const SKIPPED_BY_CODE: &str = "vsphere_descheduler_pods_skipped_by_code_total";
pub const LABEL_CHANGES: &str = "vsphere_descheduler_node_label_changes_total";
pub const DRS_RULES: &str = "vsphere_descheduler_drs_rule_changes_total";
pub const ERRORS: &str = "vsphere_descheduler_errors_total";
pub const FAILURES: &str = "vsphere_descheduler_failures_total";

/// Upstream descheduler's buckets of its loop duration histogram, in seconds: a push with
/// other bounds could not be added to, so they are part of the family's identity.
pub const LOOP_DURATION_BUCKETS: [f64; 15] = [
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0,
];

/// The labels the Pushgateway adds to every series of a group besides its grouping key.
const PUSHGATEWAY_LABELS: [&str; 1] = ["instance"];

/// One histogram series: how many observations fell at or below each bound (cumulative, in
/// the order of [`LOOP_DURATION_BUCKETS`]), how many there were and their sum.
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    pub cumulative: Vec<f64>,
    pub count: f64,
    pub sum: f64,
}

impl Histogram {
    fn empty() -> Histogram {
        Histogram {
            cumulative: vec![0.0; LOOP_DURATION_BUCKETS.len()],
            count: 0.0,
            sum: 0.0,
        }
    }

    fn observe(&mut self, value: f64) {
        for (bound, cumulative) in LOOP_DURATION_BUCKETS.iter().zip(&mut self.cumulative) {
            if value <= *bound {
                *cumulative += 1.0;
            }
        }
        self.count += 1.0;
        self.sum += value;
    }

    fn add(&mut self, other: &Histogram) {
        for (mine, theirs) in self.cumulative.iter_mut().zip(&other.cumulative) {
            *mine += theirs;
        }
        self.count += other.count;
        self.sum += other.sum;
    }
}

/// Per family, each series' value, the series named by its label values in the family's
/// label order. Ordered, so the same totals always give the same text.
pub type Series<T> = BTreeMap<&'static str, BTreeMap<Vec<String>, T>>;

/// Running totals of the counter and histogram families.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Totals {
    pub counters: Series<f64>,
    pub histograms: Series<Histogram>,
}

impl Totals {
    /// What `report`'s run adds to the totals: nothing for a dry run (see the module docs).
    pub fn of_run(report: &Report, timing: &RunTiming) -> Totals {
        let mut totals = Totals::default();
        if report.mode != Mode::Run {
            return totals;
        }
        for entry in report.evictions() {
            count_eviction(&mut totals, &entry);
        }
        for skip in &report.plan.skipped {
            totals.count(SKIPPED, &[skip.strategy.as_str(), skip.reason.as_str()]);
            let code = skip.detail.code().as_str();
            totals.count(SKIPPED_BY_CODE, &[skip.strategy.as_str(), code]);
        }
        let written = report.labels_written();
        for change in &report.plan.label_changes {
            if written.contains(change.node.as_str()) {
                totals.count(LABEL_CHANGES, &[&change.key]);
            }
        }
        for entry in report.drs_rules() {
            let submitted = !matches!(entry.change.action, DrsAction::Keep { .. })
                && !matches!(entry.outcome, DrsOutcome::NotAttempted(_));
            if submitted {
                let labels = [entry.change.action.as_str(), entry.result().as_str()];
                totals.count(DRS_RULES, &labels);
            }
        }
        totals.add_to::<&str>(ERRORS, &[], report.errors.len() as f64);
        for (step, cause) in &report.failures {
            totals.count(FAILURES, &[step.as_str(), cause.as_str()]);
        }
        totals
            .histograms
            .entry(LOOP_DURATION)
            .or_default()
            .entry(Vec::new())
            .or_insert_with(Histogram::empty)
            .observe(timing.duration.as_secs_f64());
        totals
    }

    /// The totals of the group `grouping` (its grouping key: `job` and, when there is one,
    /// `cluster`) in the Pushgateway's `/api/v1/metrics` answer: none when the group is not
    /// there. Series that do not fit a family of [`families`] (another type, other labels,
    /// other buckets, a value that is no count) are dropped: their counters restart.
    pub fn from_pushgateway(
        answer: &Value,
        grouping: &BTreeMap<String, String>,
    ) -> Result<Totals, NotMetrics> {
        let groups = answer
            .get("data")
            .and_then(Value::as_array)
            .ok_or(NotMetrics)?;
        let group = groups.iter().find(|group| {
            group
                .get("labels")
                .and_then(Value::as_object)
                .is_some_and(|labels| {
                    labels.len() == grouping.len()
                        && grouping
                            .iter()
                            .all(|(name, value)| labels.get(name) == Some(&Value::from(&**value)))
                })
        });
        let mut totals = Totals::default();
        let Some(group) = group else {
            return Ok(totals);
        };
        for family in families() {
            let Some(pushed) = group.get(family.name) else {
                continue;
            };
            let kind = pushed.get("type").and_then(Value::as_str);
            let metrics = pushed.get("metrics").and_then(Value::as_array);
            let Some(metrics) = metrics else {
                continue;
            };
            for metric in metrics {
                let Some(labels) = series_labels(&family, metric, grouping) else {
                    continue;
                };
                match (family.kind, kind) {
                    (FamilyKind::Counter, Some("COUNTER")) => {
                        if let Some(value) = metric.get("value").and_then(count) {
                            totals.add_to(family.name, &labels, value);
                        }
                    }
                    (FamilyKind::Histogram, Some("HISTOGRAM")) => {
                        if let Some(histogram) = histogram(metric) {
                            totals
                                .histograms
                                .entry(family.name)
                                .or_default()
                                .insert(labels, histogram);
                        }
                    }
                    _ => {}
                }
            }
        }
        Ok(totals)
    }

    /// Adds `other` to these totals, series by series.
    pub fn add(&mut self, other: &Totals) {
        for (family, series) in &other.counters {
            for (labels, value) in series {
                *self
                    .counters
                    .entry(family)
                    .or_default()
                    .entry(labels.clone())
                    .or_insert(0.0) += value;
            }
        }
        for (family, series) in &other.histograms {
            for (labels, histogram) in series {
                self.histograms
                    .entry(family)
                    .or_default()
                    .entry(labels.clone())
                    .or_insert_with(Histogram::empty)
                    .add(histogram);
            }
        }
    }

    fn count(&mut self, family: &'static str, labels: &[&str]) {
        self.add_to(family, labels, 1.0);
    }

    fn add_to<S: AsRef<str>>(&mut self, family: &'static str, labels: &[S], value: f64) {
        let labels = labels.iter().map(|l| l.as_ref().to_string()).collect();
        *self
            .counters
            .entry(family)
            .or_default()
            .entry(labels)
            .or_insert(0.0) += value;
    }
}

/// The Pushgateway's answer is not its metrics JSON (`{"status": …, "data": [groups]}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotMetrics;

/// Counts one eviction of a live run, in upstream's family and ours, when it was sent.
fn count_eviction(totals: &mut Totals, entry: &EvictionEntry) {
    let eviction = entry.eviction;
    if let Some(result) = upstream_result(entry.outcome) {
        let labels = [
            result,
            eviction.strategy.as_str(),
            &eviction.profile,
            &eviction.namespace,
            &eviction.node,
        ];
        totals.count(UPSTREAM_EVICTIONS, &labels);
    }
    let result = entry.result();
    if result != Outcome::Planned {
        let labels = [
            eviction.strategy.as_str(),
            &eviction.namespace,
            result.as_str(),
        ];
        totals.count(EVICTIONS, &labels);
    }
}

/// The `result` upstream descheduler would count an eviction of a live run under: `success`
/// when the API server evicted the pod, `error` when it refused (a PodDisruptionBudget, a pod
/// gone, any other failure). An eviction not sent, or whose answer the run did not wait for,
/// is none of them (upstream counts neither).
pub fn upstream_result(outcome: &EvictionOutcome) -> Option<&'static str> {
    match outcome {
        EvictionOutcome::Evicted => Some("success"),
        EvictionOutcome::Blocked(_) | EvictionOutcome::Gone(_) | EvictionOutcome::Failed(_) => {
            Some("error")
        }
        EvictionOutcome::WouldEvict
        | EvictionOutcome::Unknown(_)
        | EvictionOutcome::NotAttempted(_) => None,
    }
}

/// A pushed series' label values in `family`'s order, without the labels the Pushgateway adds
/// (the grouping key, `instance`); `None` when it has labels the family does not. A label the
/// family has and the series lacks is empty (Prometheus does not tell the two apart).
fn series_labels(
    family: &Family,
    metric: &Value,
    grouping: &BTreeMap<String, String>,
) -> Option<Vec<String>> {
    let labels = metric.get("labels").and_then(Value::as_object)?;
    let known: BTreeSet<&str> = family.labels.iter().copied().collect();
    let extra = labels.keys().any(|name| {
        !known.contains(name.as_str())
            && !grouping.contains_key(name)
            && !PUSHGATEWAY_LABELS.contains(&name.as_str())
    });
    if extra {
        return None;
    }
    family
        .labels
        .iter()
        .map(|name| match labels.get(*name) {
            Some(value) => value.as_str().map(str::to_string),
            None => Some(String::new()),
        })
        .collect()
}

/// A count as the Pushgateway writes it: a decimal string of a finite number not below 0.
fn count(value: &Value) -> Option<f64> {
    let value: f64 = value.as_str()?.parse().ok()?;
    (value.is_finite() && value >= 0.0).then_some(value)
}

/// A histogram series of the Pushgateway's JSON with exactly [`LOOP_DURATION_BUCKETS`] (and
/// `+Inf`, which is its count).
fn histogram(metric: &Value) -> Option<Histogram> {
    let buckets = metric.get("buckets").and_then(Value::as_object)?;
    let mut pushed: Vec<(f64, f64)> = Vec::with_capacity(buckets.len());
    for (bound, value) in buckets {
        if bound == "+Inf" {
            continue;
        }
        let bound: f64 = bound.parse().ok()?;
        pushed.push((bound, count(value)?));
    }
    pushed.sort_by(|a, b| a.0.total_cmp(&b.0));
    let bounds: Vec<f64> = pushed.iter().map(|(bound, _)| *bound).collect();
    if bounds != LOOP_DURATION_BUCKETS {
        return None;
    }
    let sum: f64 = metric.get("sum")?.as_str()?.parse().ok()?;
    Some(Histogram {
        cumulative: pushed.into_iter().map(|(_, value)| value).collect(),
        count: count(metric.get("count")?)?,
        sum: sum.is_finite().then_some(sum)?,
    })
}
