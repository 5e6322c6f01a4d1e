//! A run's metrics: what its report says, as Prometheus' text exposition format (0.0.4), pushed
//! to a Pushgateway at the end of every run ([`push`]), because a CronJob's pod is gone before
//! Prometheus could scrape it.
//!
//! [`metrics`] is pure: the report, the run's timing and the totals the group's last push held
//! in, the text out. The families, their types, labels and help text are the table in
//! `metrics/families.txt` ([`FAMILIES`]), which the chart's tests also read, so the dashboard and
//! alerts can only name what is pushed.
//!
//! Two kinds of family. Counters (and upstream's loop duration histogram) are running totals
//! across runs: the run adds its counts to the totals of the group's last push ([`totals`]), so
//! `increase()` and `rate()` mean what they say, and upstream descheduler's
//! `descheduler_pods_evicted_total` keeps its labels and results. Gauges are the last run's
//! values, replaced by the next push.
//!
//! Host-failure exposure is pushed when the run assessed it (its plan had an inventory): every
//! class, zeros too, and the worst-host share of the workloads the report lists (those at risk
//! before or after the plan), so the series stay as few as the workloads at risk.

pub mod push;
pub mod totals;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::outcome::{DrsOutcome, EvictionOutcome};
use crate::plan::{Exposure, ExposureClass};
use crate::report::Report;

pub use push::{PushSettings, Pushgateway, push_limit};
pub use totals::{Histogram, Totals};

/// The metric families, one per line: name, type, label names, help (see the file's header).
pub const FAMILIES: &str = include_str!("metrics/families.txt");

/// The `Content-Type` of what [`metrics`] writes.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

const RUN_EVICTIONS: &str = "vsphere_descheduler_run_evictions";
const RUN_SKIPPED: &str = "vsphere_descheduler_run_pods_skipped";
const RUN_SKIPPED_BY_CODE: &str = "vsphere_descheduler_run_pods_skipped_by_code";
const RUN_LABEL_CHANGES: &str = "vsphere_descheduler_run_node_label_changes";
const RUN_DRS_RULES: &str = "vsphere_descheduler_run_drs_rule_changes";
const RUN_ERRORS: &str = "vsphere_descheduler_run_errors";
const RUN_FAILURES: &str = "vsphere_descheduler_run_failures";
const UNMAPPED_NODES: &str = "vsphere_descheduler_unmapped_nodes";
const NOT_ATTEMPTED: &str = "vsphere_descheduler_actions_not_attempted";
const WARNINGS: &str = "vsphere_descheduler_warnings";
const DURATION: &str = "vsphere_descheduler_run_duration_seconds";
const FINISHED: &str = "vsphere_descheduler_last_run_timestamp_seconds";
const EXIT_CODE: &str = "vsphere_descheduler_exit_code";
const RUN_INFO: &str = "vsphere_descheduler_run_info";
const EXPOSURE_WORKLOADS: &str = "vsphere_descheduler_exposure_workloads";
const EXPOSURE_NODE_GROUPS: &str = "vsphere_descheduler_exposure_node_groups";
const WORST_HOST_SHARE: &str = "vsphere_descheduler_exposure_worst_host_share";
const EXPOSURE_SITE_WORKLOADS: &str = "vsphere_descheduler_exposure_site_workloads";

/// What a report does not say about its run: when it ended and how long it took.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunTiming {
    pub duration: Duration,
    pub finished: DateTime<Utc>,
}

/// The Prometheus type of a family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FamilyKind {
    /// A running total across runs.
    Counter,
    /// Running bucket counts, sum and count across runs.
    Histogram,
    /// The last run's value.
    Gauge,
}

impl FamilyKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FamilyKind::Counter => "counter",
            FamilyKind::Histogram => "histogram",
            FamilyKind::Gauge => "gauge",
        }
    }
}

/// One line of [`FAMILIES`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Family {
    pub name: &'static str,
    pub kind: FamilyKind,
    pub labels: Vec<&'static str>,
    pub help: &'static str,
}

/// The families of [`FAMILIES`], in its order.
pub fn families() -> Vec<Family> {
    FAMILIES
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            let mut rest = line;
            let name = next_column(&mut rest);
            let kind = match next_column(&mut rest) {
                "counter" => FamilyKind::Counter,
                "histogram" => FamilyKind::Histogram,
                "gauge" => FamilyKind::Gauge,
                other => panic!("metrics/families.txt: {name} has the unknown type {other:?}"),
            };
            let labels = match next_column(&mut rest) {
                "-" => Vec::new(),
                labels => labels.split(',').collect(),
            };
            let help = rest.trim();
            assert!(
                !help.is_empty(),
                "metrics/families.txt: {name} needs a type, labels and help"
            );
            Family {
                name,
                kind,
                labels,
                help,
            }
        })
        .collect()
}

/// The next whitespace-separated column of `rest`, which is left after it.
fn next_column(rest: &mut &'static str) -> &'static str {
    let text = rest.trim_start();
    let end = text.find(char::is_whitespace).unwrap_or(text.len());
    let (column, after) = text.split_at(end);
    *rest = after;
    column
}

/// Per family, the value of each series, the series named by its label values in the family's
/// label order. Ordered, so the same report always gives the same text.
type Samples = BTreeMap<&'static str, BTreeMap<Vec<String>, f64>>;

/// The run's metrics in the text exposition format: the gauges of this run, and the counters
/// and histograms as `carried` (the group's last push) plus what this run counted; every family
/// of [`FAMILIES`] that has a series, each with its HELP and TYPE lines.
pub fn metrics(report: &Report, timing: &RunTiming, carried: &Totals) -> String {
    let mut totals = carried.clone();
    totals.add(&Totals::of_run(report, timing));
    render(&samples(report, timing), &totals)
}

/// The gauges of the run.
fn samples(report: &Report, timing: &RunTiming) -> Samples {
    let mut samples = Samples::new();
    let mut count = |family: &'static str, labels: &[&str]| {
        *samples
            .entry(family)
            .or_default()
            .entry(labels.iter().map(|label| label.to_string()).collect())
            .or_insert(0.0) += 1.0;
    };
    for entry in report.evictions() {
        let eviction = entry.eviction;
        count(
            RUN_EVICTIONS,
            &[
                eviction.strategy.as_str(),
                &eviction.namespace,
                entry.result().as_str(),
            ],
        );
        if matches!(entry.outcome, EvictionOutcome::NotAttempted(why) if why.is_withheld()) {
            count(NOT_ATTEMPTED, &["eviction"]);
        }
    }
    for skip in &report.plan.skipped {
        count(RUN_SKIPPED, &[skip.strategy.as_str(), skip.reason.as_str()]);
        let code = skip.detail.code().as_str();
        count(RUN_SKIPPED_BY_CODE, &[skip.strategy.as_str(), code]);
    }
    for change in &report.plan.label_changes {
        count(RUN_LABEL_CHANGES, &[&change.key]);
    }
    for entry in report.drs_rules() {
        count(
            RUN_DRS_RULES,
            &[entry.change.action.as_str(), entry.result().as_str()],
        );
        if matches!(entry.outcome, DrsOutcome::NotAttempted(why) if why.is_withheld()) {
            count(NOT_ATTEMPTED, &["drs-rule"]);
        }
    }
    for (step, cause) in &report.failures {
        count(RUN_FAILURES, &[step.as_str(), cause.as_str()]);
    }
    let mut gauge = |family, labels: &[&str], value| set(&mut samples, family, labels, value);
    gauge(UNMAPPED_NODES, &[], report.plan.unmapped_nodes.len() as f64);
    gauge(RUN_ERRORS, &[], report.errors.len() as f64);
    gauge(WARNINGS, &[], report.warnings().count() as f64);
    gauge(DURATION, &[], timing.duration.as_secs_f64());
    gauge(
        FINISHED,
        &[],
        timing.finished.timestamp_millis() as f64 / 1000.0,
    );
    if let Some(code) = report.exit_code {
        gauge(EXIT_CODE, &[], f64::from(code));
    }
    gauge(
        RUN_INFO,
        &[report.mode.as_str(), env!("CARGO_PKG_VERSION")],
        1.0,
    );
    if let Some(exposure) = &report.plan.exposure {
        exposure_samples(&mut samples, exposure);
    }
    samples
}

/// Workloads and node groups per class (every class, zeros too: "none at risk" is not "not
/// assessed"), and each listed workload's share of pods on its busiest host, before and after.
fn exposure_samples(samples: &mut Samples, exposure: &Exposure) {
    let mut gauge = |family, labels: &[&str], value| set(samples, family, labels, value);
    for class in ExposureClass::ALL {
        let name = class.as_str();
        for (when, counts) in [("before", &exposure.before), ("after", &exposure.after)] {
            gauge(EXPOSURE_WORKLOADS, &[name, when], counts.get(class) as f64);
        }
        let groups = exposure.node_groups.iter().filter(|g| g.class == class);
        gauge(EXPOSURE_NODE_GROUPS, &[name], groups.count() as f64);
        // Only where sites are set: no series says no site is known, as no exposure series says
        // no host is.
        if let Some(sites) = &exposure.sites {
            for (when, counts) in [("before", &sites.before), ("after", &sites.after)] {
                gauge(
                    EXPOSURE_SITE_WORKLOADS,
                    &[name, when],
                    counts.get(class) as f64,
                );
            }
        }
    }
    for workload in &exposure.workloads {
        // `namespace/Kind/name`: a namespace holds no `/`, so the first one ends it.
        let (namespace, kind_name) = workload
            .workload
            .split_once('/')
            .unwrap_or(("", &workload.workload));
        for (when, spread) in [("before", &workload.before), ("after", &workload.after)] {
            let share = spread.worst_pods as f64 / workload.pods.max(1) as f64;
            let labels = [namespace, kind_name, when, spread.class.as_str()];
            gauge(WORST_HOST_SHARE, &labels, share);
        }
    }
}

/// One series of a family, named by its label values.
fn set(samples: &mut Samples, family: &'static str, labels: &[&str], value: f64) {
    let labels = labels.iter().map(|label| label.to_string()).collect();
    samples.entry(family).or_default().insert(labels, value);
}

/// The text of every family that has a series, in the order of [`FAMILIES`].
fn render(samples: &Samples, totals: &Totals) -> String {
    let mut out = String::new();
    for family in families() {
        let mut text = String::new();
        match family.kind {
            FamilyKind::Gauge => write_values(&mut text, &family, samples.get(family.name)),
            FamilyKind::Counter => {
                write_values(&mut text, &family, totals.counters.get(family.name));
            }
            FamilyKind::Histogram => {
                for (values, histogram) in totals.histograms.get(family.name).into_iter().flatten()
                {
                    write_histogram(&mut text, &family, values, histogram);
                }
            }
        }
        if text.is_empty() {
            continue;
        }
        let _ = writeln!(out, "# HELP {} {}", family.name, escape_help(family.help));
        let _ = writeln!(out, "# TYPE {} {}", family.name, family.kind.as_str());
        out.push_str(&text);
    }
    out
}

/// One sample line per series of a gauge or counter.
fn write_values(out: &mut String, family: &Family, series: Option<&BTreeMap<Vec<String>, f64>>) {
    for (values, value) in series.into_iter().flatten() {
        write_sample(out, family.name, &pairs(family, values), *value);
    }
}

/// `name="value"` of each label of `family`, in its order.
fn pairs(family: &Family, values: &[String]) -> Vec<String> {
    family
        .labels
        .iter()
        .zip(values)
        .map(|(label, value)| format!("{label}=\"{}\"", escape_label_value(value)))
        .collect()
}

/// One sample line.
fn write_sample(out: &mut String, name: &str, pairs: &[String], value: f64) {
    out.push_str(name);
    if !pairs.is_empty() {
        let _ = write!(out, "{{{}}}", pairs.join(","));
    }
    let _ = writeln!(out, " {value}");
}

/// A histogram series: its cumulative buckets (`le`, then `+Inf`), sum and count.
fn write_histogram(out: &mut String, family: &Family, values: &[String], histogram: &Histogram) {
    let labels = pairs(family, values);
    let bucket = format!("{}_bucket", family.name);
    let bounds = totals::LOOP_DURATION_BUCKETS.iter().map(f64::to_string);
    let cumulative = histogram.cumulative.iter().copied();
    for (bound, value) in bounds
        .zip(cumulative)
        .chain(std::iter::once(("+Inf".to_string(), histogram.count)))
    {
        let mut with_le = labels.clone();
        with_le.push(format!("le=\"{bound}\""));
        write_sample(out, &bucket, &with_le, value);
    }
    write_sample(out, &format!("{}_sum", family.name), &labels, histogram.sum);
    write_sample(
        out,
        &format!("{}_count", family.name),
        &labels,
        histogram.count,
    );
}

/// HELP text escapes backslashes and line feeds.
fn escape_help(text: &str) -> String {
    text.replace('\\', r"\\").replace('\n', r"\n")
}

/// Label values also escape double quotes.
fn escape_label_value(text: &str) -> String {
    escape_help(text).replace('"', "\\\"")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use chrono::TimeZone;

    use super::*;
    use crate::outcome::LabelOutcome;
    use crate::outcome::{Cause, Failure, Halt, NotAttempted, Outcomes, Signal, StopReason};
    use crate::plan::exposure::{ClassCounts, SiteCounts, Spread, WorkloadExposure};
    use crate::plan::{
        DrsAction, DrsRuleChange, Eviction, LabelApply, LabelChange, Plan, Skip, SkipReason,
        Warning,
    };
    use crate::policy::PluginKind;
    use crate::report::Mode;

    const ANTI_AFFINITY: PluginKind = PluginKind::InterPodAntiAffinity;
    const SPREAD: PluginKind = PluginKind::TopologySpread;

    fn eviction(namespace: &str, pod: &str, strategy: PluginKind) -> Eviction {
        crate::plan::testing::eviction(namespace, pod, strategy)
    }

    fn skip(pod: &str, strategy: PluginKind, reason: SkipReason) -> Skip {
        Skip {
            namespace: "shop".to_string(),
            pod: pod.to_string(),
            node: None,
            strategy,
            profile: "default".to_string(),
            reason,
            detail: crate::plan::testing::detail_of(reason),
        }
    }

    fn rule(name: &str, action: DrsAction) -> DrsRuleChange {
        DrsRuleChange {
            cluster: "c1".to_string(),
            cluster_id: Some("domain-c1".to_string()),
            name: name.to_string(),
            action,
            vms: vec!["worker-a".to_string(), "worker-b".to_string()],
            vm_ids: Some(vec!["vm-1".to_string(), "vm-2".to_string()]),
            rule_uuid: None,
            workload: None,
            node_group: None,
        }
    }

    /// Pods per host, the busiest first.
    fn spread(class: ExposureClass, pods: &[(&str, usize)]) -> Spread {
        Spread {
            class,
            worst: Some(pods[0].0.to_string()),
            worst_pods: pods[0].1,
            pods: pods.iter().map(|(h, n)| (h.to_string(), *n)).collect(),
            unplaced: 0,
        }
    }

    /// A web Deployment all on one host until the plan spreads it, four workloads tolerated.
    fn exposure() -> Exposure {
        let web = WorkloadExposure {
            workload: "shop/Deployment/web".to_string(),
            pods: 3,
            budget: None,
            ignored_budget: None,
            before: spread(ExposureClass::All, &[("esxi-41", 3)]),
            after: spread(
                ExposureClass::Tolerated,
                &[("esxi-41", 1), ("esxi-42", 1), ("esxi-43", 1)],
            ),
            usable_hosts: 3,
            best_worst_host: 1,
            unavoidable: false,
            drs_rule: None,
            topologies: Vec::new(),
            site: None,
        };
        Exposure {
            before: ClassCounts {
                all: 1,
                tolerated: 4,
                ..ClassCounts::default()
            },
            after: ClassCounts {
                tolerated: 5,
                ..ClassCounts::default()
            },
            workloads: vec![web],
            node_groups: Vec::new(),
            sites: Some(SiteCounts {
                sites: vec!["site-a".to_string(), "site-b".to_string()],
                before: ClassCounts {
                    all: 1,
                    ..ClassCounts::default()
                },
                after: ClassCounts {
                    tolerated: 1,
                    ..ClassCounts::default()
                },
            }),
        }
    }

    /// A run that did a bit of everything: evictions with every kind of result, skips, label
    /// changes, DRS rules, an unmapped node, a warning, an error, a workload at risk.
    fn busy_run() -> Report {
        let plan = Plan {
            label_changes: vec![LabelChange {
                node: "worker-b".to_string(),
                key: "vsphere-descheduler.io/host".to_string(),
                old: Some("esxi-42".to_string()),
                new: Some("esxi-41".to_string()),
            }],
            label_applies: vec![LabelApply {
                node: "worker-b".to_string(),
                uid: None,
                set: [(
                    "vsphere-descheduler.io/host".to_string(),
                    "esxi-41".to_string(),
                )]
                .into(),
                remove: Default::default(),
            }],
            evictions: vec![
                eviction("shop", "web-1", ANTI_AFFINITY),
                eviction("shop", "web-2", ANTI_AFFINITY),
                eviction("shop", "web-3", ANTI_AFFINITY),
                eviction("db", "pg-1", SPREAD),
                eviction("db", "pg-2", SPREAD),
            ],
            skipped: vec![
                skip("web-4", ANTI_AFFINITY, SkipReason::Pdb),
                skip("web-5", ANTI_AFFINITY, SkipReason::Pdb),
                skip("pg-3", SPREAD, SkipReason::NoFeasibleNode),
            ],
            drs_rules: vec![
                rule("r1", DrsAction::Create),
                rule("r2", DrsAction::Keep { key: Some(2) }),
                rule("r3", DrsAction::Delete { key: 3 }),
            ],
            unmapped_nodes: vec!["edge-1".to_string()],
            warnings: vec![Warning::DrsNotFullyAutomated {
                cluster: "c1".to_string(),
                behavior: crate::inventory::DrsBehavior::Manual,
            }],
            exposure: Some(exposure()),
            ..Plan::default()
        };
        let stopped = NotAttempted::Halted(Halt::Stopped(StopReason::Signal(Signal::Terminate)));
        let outcomes = Outcomes {
            labels: vec![LabelOutcome::Written],
            evictions: vec![
                EvictionOutcome::Evicted,
                EvictionOutcome::Evicted,
                EvictionOutcome::Blocked(Failure::new(Cause::TooManyRequests, "PDB")),
                EvictionOutcome::Failed(Failure::new(Cause::ServerError, "500")),
                EvictionOutcome::NotAttempted(stopped.clone()),
            ],
            drs_rules: vec![
                DrsOutcome::Applied,
                DrsOutcome::Applied,
                DrsOutcome::NotAttempted(stopped),
            ],
            ..Outcomes::default()
        };
        let mut report = Report::new(Mode::Run, plan, outcomes);
        report.exit_code = Some(1);
        report
    }

    fn timing() -> RunTiming {
        RunTiming {
            duration: Duration::from_millis(12_250),
            finished: Utc
                .timestamp_millis_opt(1_767_225_600_500)
                .single()
                .expect("a valid instant"),
        }
    }

    /// The sample lines (no comments), as a set.
    fn series(text: &str) -> BTreeSet<&str> {
        text.lines().filter(|line| !line.starts_with('#')).collect()
    }

    /// The run's metrics with nothing carried from an earlier push.
    fn first_push(report: &Report) -> String {
        metrics(report, &timing(), &Totals::default())
    }

    #[test]
    fn a_busy_run_is_counted_by_strategy_reason_action_and_result() {
        let text = first_push(&busy_run());
        let version = env!("CARGO_PKG_VERSION");
        let run_info =
            format!(r#"vsphere_descheduler_run_info{{mode="run",version="{version}"}} 1"#);
        let expected = [
            // Upstream's counter: the two evicted succeeded, the blocked and the failed one are
            // errors, the one not attempted is not counted.
            r#"descheduler_pods_evicted_total{result="error",strategy="RemovePodsViolatingInterPodAntiAffinity",profile="default",namespace="shop",node="worker-a"} 1"#,
            r#"descheduler_pods_evicted_total{result="success",strategy="RemovePodsViolatingInterPodAntiAffinity",profile="default",namespace="shop",node="worker-a"} 2"#,
            r#"descheduler_pods_evicted_total{result="error",strategy="RemovePodsViolatingTopologySpreadConstraint",profile="default",namespace="db",node="worker-a"} 1"#,
            r#"vsphere_descheduler_evictions_total{strategy="RemovePodsViolatingInterPodAntiAffinity",namespace="shop",result="blocked"} 1"#,
            r#"vsphere_descheduler_evictions_total{strategy="RemovePodsViolatingInterPodAntiAffinity",namespace="shop",result="evicted"} 2"#,
            r#"vsphere_descheduler_evictions_total{strategy="RemovePodsViolatingTopologySpreadConstraint",namespace="db",result="failed"} 1"#,
            r#"vsphere_descheduler_pods_skipped_total{strategy="RemovePodsViolatingInterPodAntiAffinity",reason="pdb"} 2"#,
            r#"vsphere_descheduler_pods_skipped_total{strategy="RemovePodsViolatingTopologySpreadConstraint",reason="no-feasible-node"} 1"#,
            r#"vsphere_descheduler_pods_skipped_by_code_total{strategy="RemovePodsViolatingInterPodAntiAffinity",code="pdb-several"} 2"#,
            r#"vsphere_descheduler_pods_skipped_by_code_total{strategy="RemovePodsViolatingTopologySpreadConstraint",code="no-other-node"} 1"#,
            r#"vsphere_descheduler_node_label_changes_total{key="vsphere-descheduler.io/host"} 1"#,
            // Keep is no change, and the delete was not submitted.
            r#"vsphere_descheduler_drs_rule_changes_total{action="create",result="applied"} 1"#,
            "vsphere_descheduler_errors_total 1",
            // The one failure, by where and what kind; the PDB's refusal is an outcome.
            r#"vsphere_descheduler_failures_total{step="eviction",cause="server-error"} 1"#,
            r#"vsphere_descheduler_run_evictions{strategy="RemovePodsViolatingInterPodAntiAffinity",namespace="shop",result="blocked"} 1"#,
            r#"vsphere_descheduler_run_evictions{strategy="RemovePodsViolatingInterPodAntiAffinity",namespace="shop",result="evicted"} 2"#,
            r#"vsphere_descheduler_run_evictions{strategy="RemovePodsViolatingTopologySpreadConstraint",namespace="db",result="failed"} 1"#,
            r#"vsphere_descheduler_run_evictions{strategy="RemovePodsViolatingTopologySpreadConstraint",namespace="db",result="planned"} 1"#,
            r#"vsphere_descheduler_run_pods_skipped{strategy="RemovePodsViolatingInterPodAntiAffinity",reason="pdb"} 2"#,
            r#"vsphere_descheduler_run_pods_skipped{strategy="RemovePodsViolatingTopologySpreadConstraint",reason="no-feasible-node"} 1"#,
            r#"vsphere_descheduler_run_pods_skipped_by_code{strategy="RemovePodsViolatingInterPodAntiAffinity",code="pdb-several"} 2"#,
            r#"vsphere_descheduler_run_pods_skipped_by_code{strategy="RemovePodsViolatingTopologySpreadConstraint",code="no-other-node"} 1"#,
            r#"vsphere_descheduler_run_node_label_changes{key="vsphere-descheduler.io/host"} 1"#,
            r#"vsphere_descheduler_run_drs_rule_changes{action="create",result="applied"} 1"#,
            r#"vsphere_descheduler_run_drs_rule_changes{action="delete",result="planned"} 1"#,
            r#"vsphere_descheduler_run_drs_rule_changes{action="keep",result="applied"} 1"#,
            r#"vsphere_descheduler_actions_not_attempted{kind="drs-rule"} 1"#,
            r#"vsphere_descheduler_actions_not_attempted{kind="eviction"} 1"#,
            "vsphere_descheduler_unmapped_nodes 1",
            "vsphere_descheduler_run_errors 1",
            r#"vsphere_descheduler_run_failures{step="eviction",cause="server-error"} 1"#,
            "vsphere_descheduler_warnings 1",
            "vsphere_descheduler_run_duration_seconds 12.25",
            "vsphere_descheduler_last_run_timestamp_seconds 1767225600.5",
            "vsphere_descheduler_exit_code 1",
            &run_info,
            r#"vsphere_descheduler_exposure_workloads{class="all",when="before"} 1"#,
            r#"vsphere_descheduler_exposure_workloads{class="all",when="after"} 0"#,
            r#"vsphere_descheduler_exposure_workloads{class="majority",when="before"} 0"#,
            r#"vsphere_descheduler_exposure_workloads{class="majority",when="after"} 0"#,
            r#"vsphere_descheduler_exposure_workloads{class="over-budget",when="before"} 0"#,
            r#"vsphere_descheduler_exposure_workloads{class="over-budget",when="after"} 0"#,
            r#"vsphere_descheduler_exposure_workloads{class="tolerated",when="before"} 4"#,
            r#"vsphere_descheduler_exposure_workloads{class="tolerated",when="after"} 5"#,
            r#"vsphere_descheduler_exposure_node_groups{class="all"} 0"#,
            r#"vsphere_descheduler_exposure_node_groups{class="majority"} 0"#,
            r#"vsphere_descheduler_exposure_node_groups{class="over-budget"} 0"#,
            r#"vsphere_descheduler_exposure_node_groups{class="tolerated"} 0"#,
            r#"vsphere_descheduler_exposure_worst_host_share{namespace="shop",workload="Deployment/web",when="before",class="all"} 1"#,
            r#"vsphere_descheduler_exposure_worst_host_share{namespace="shop",workload="Deployment/web",when="after",class="tolerated"} 0.3333333333333333"#,
            r#"vsphere_descheduler_exposure_site_workloads{class="all",when="before"} 1"#,
            r#"vsphere_descheduler_exposure_site_workloads{class="all",when="after"} 0"#,
            r#"vsphere_descheduler_exposure_site_workloads{class="majority",when="before"} 0"#,
            r#"vsphere_descheduler_exposure_site_workloads{class="majority",when="after"} 0"#,
            r#"vsphere_descheduler_exposure_site_workloads{class="over-budget",when="before"} 0"#,
            r#"vsphere_descheduler_exposure_site_workloads{class="over-budget",when="after"} 0"#,
            r#"vsphere_descheduler_exposure_site_workloads{class="tolerated",when="before"} 0"#,
            r#"vsphere_descheduler_exposure_site_workloads{class="tolerated",when="after"} 1"#,
        ];
        let without_histogram: BTreeSet<&str> = series(&text)
            .into_iter()
            .filter(|line| !line.starts_with(totals::LOOP_DURATION))
            .collect();
        assert_eq!(without_histogram, expected.into_iter().collect(), "{text}");
    }

    #[test]
    fn the_run_duration_is_observed_in_upstreams_buckets() {
        let text = first_push(&busy_run());
        let histogram: Vec<&str> = text
            .lines()
            .filter(|line| line.starts_with(totals::LOOP_DURATION))
            .collect();
        // 12.25 s: above the 10 s bucket, within 25 s.
        assert_eq!(
            histogram,
            [
                r#"descheduler_loop_duration_seconds_bucket{le="0.01"} 0"#,
                r#"descheduler_loop_duration_seconds_bucket{le="0.025"} 0"#,
                r#"descheduler_loop_duration_seconds_bucket{le="0.05"} 0"#,
                r#"descheduler_loop_duration_seconds_bucket{le="0.1"} 0"#,
                r#"descheduler_loop_duration_seconds_bucket{le="0.25"} 0"#,
                r#"descheduler_loop_duration_seconds_bucket{le="0.5"} 0"#,
                r#"descheduler_loop_duration_seconds_bucket{le="1"} 0"#,
                r#"descheduler_loop_duration_seconds_bucket{le="2.5"} 0"#,
                r#"descheduler_loop_duration_seconds_bucket{le="5"} 0"#,
                r#"descheduler_loop_duration_seconds_bucket{le="10"} 0"#,
                r#"descheduler_loop_duration_seconds_bucket{le="25"} 1"#,
                r#"descheduler_loop_duration_seconds_bucket{le="50"} 1"#,
                r#"descheduler_loop_duration_seconds_bucket{le="100"} 1"#,
                r#"descheduler_loop_duration_seconds_bucket{le="250"} 1"#,
                r#"descheduler_loop_duration_seconds_bucket{le="500"} 1"#,
                r#"descheduler_loop_duration_seconds_bucket{le="+Inf"} 1"#,
                "descheduler_loop_duration_seconds_sum 12.25",
                "descheduler_loop_duration_seconds_count 1",
            ]
        );
    }

    #[test]
    fn counters_go_on_from_the_totals_of_the_last_push() {
        let first = first_push(&busy_run());
        let carried = Totals::from_pushgateway(
            &pushgateway_answer(&first),
            &[("job".to_string(), push::JOB.to_string())].into(),
        )
        .expect("metrics JSON");
        let second = metrics(&busy_run(), &timing(), &carried);
        let value = |text: &str, series: &str| -> f64 {
            text.lines()
                .find_map(|line| line.strip_prefix(series))
                .and_then(|rest| rest.trim().parse().ok())
                .unwrap_or_else(|| panic!("{series} in {text}"))
        };
        let success = r#"descheduler_pods_evicted_total{result="success",strategy="RemovePodsViolatingInterPodAntiAffinity",profile="default",namespace="shop",node="worker-a"}"#;
        assert_eq!(value(&first, success), 2.0);
        assert_eq!(value(&second, success), 4.0);
        assert_eq!(value(&second, "vsphere_descheduler_errors_total"), 2.0);
        assert_eq!(
            value(
                &second,
                r#"descheduler_loop_duration_seconds_bucket{le="25"}"#
            ),
            2.0
        );
        assert_eq!(
            value(&second, "descheduler_loop_duration_seconds_sum"),
            24.5
        );
        // Gauges are the run's own.
        assert_eq!(value(&second, "vsphere_descheduler_run_errors"), 1.0);
    }

    /// What the Pushgateway's `/api/v1/metrics` answers once `text` is the group `job` alone,
    /// as Pushgateway 1.5 writes it (values as strings, the grouping labels on every series).
    fn pushgateway_answer(text: &str) -> serde_json::Value {
        let group = serde_json::json!({"job": push::JOB});
        let mut pushed = serde_json::Map::new();
        for family in families() {
            let lines: Vec<&str> = text
                .lines()
                .filter(|line| !line.starts_with('#') && line.starts_with(family.name))
                .collect();
            let metrics: Vec<serde_json::Value> = match family.kind {
                FamilyKind::Histogram if !lines.is_empty() => {
                    let mut buckets = serde_json::Map::new();
                    let (mut sum, mut count) = (String::new(), String::new());
                    for line in lines {
                        let (series, value) = line.rsplit_once(' ').expect("a sample");
                        if let Some(le) = series.split("le=\"").nth(1) {
                            buckets.insert(le.trim_end_matches("\"}").to_string(), value.into());
                        } else if series.ends_with("_sum") {
                            sum = value.to_string();
                        } else {
                            count = value.to_string();
                        }
                    }
                    vec![
                        serde_json::json!({"labels": group, "buckets": buckets, "sum": sum, "count": count}),
                    ]
                }
                _ => lines
                    .iter()
                    .filter_map(|line| {
                        let (series, value) = line.rsplit_once(' ')?;
                        let name = series.split('{').next()?;
                        (name == family.name).then_some(())?;
                        let mut labels = serde_json::Map::new();
                        labels.insert("job".to_string(), push::JOB.into());
                        labels.insert("instance".to_string(), "".into());
                        if let Some(inner) =
                            series.split_once('{').map(|(_, l)| l.trim_end_matches('}'))
                        {
                            for pair in inner.split("\",").filter(|p| !p.is_empty()) {
                                let (label, value) = pair.split_once("=\"").expect("label=value");
                                labels
                                    .insert(label.to_string(), value.trim_end_matches('"').into());
                            }
                        }
                        Some(serde_json::json!({"labels": labels, "value": value}))
                    })
                    .collect(),
            };
            if metrics.is_empty() {
                continue;
            }
            let kind = family.kind.as_str().to_uppercase();
            pushed.insert(
                family.name.to_string(),
                serde_json::json!({"type": kind, "help": family.help, "metrics": metrics}),
            );
        }
        pushed.insert("labels".to_string(), group);
        serde_json::json!({"status": "success", "data": [pushed]})
    }

    #[test]
    fn a_dry_run_counts_nothing_and_pushes_the_totals_unchanged() {
        let carried = Totals::from_pushgateway(
            &pushgateway_answer(&first_push(&busy_run())),
            &[("job".to_string(), push::JOB.to_string())].into(),
        )
        .expect("metrics JSON");
        let mut dry_run = busy_run();
        dry_run.mode = Mode::DryRun;
        assert_eq!(Totals::of_run(&dry_run, &timing()), Totals::default());
        let mut totals = carried.clone();
        totals.add(&Totals::of_run(&dry_run, &timing()));
        assert_eq!(totals, carried);
        let text = metrics(&dry_run, &timing(), &carried);
        assert!(
            text.contains("\nvsphere_descheduler_errors_total 1\n"),
            "{text}"
        );
    }

    #[test]
    fn totals_of_another_type_labels_or_buckets_are_dropped_and_other_groups_ignored() {
        let grouping: BTreeMap<String, String> = [
            ("job".to_string(), push::JOB.to_string()),
            ("cluster".to_string(), "lab".to_string()),
        ]
        .into();
        let labels = |extra: serde_json::Value| {
            let mut labels =
                serde_json::json!({"job": push::JOB, "cluster": "lab", "instance": ""});
            for (key, value) in extra.as_object().expect("an object") {
                labels[key] = value.clone();
            }
            labels
        };
        let answer = serde_json::json!({"status": "success", "data": [
            {"labels": {"job": push::JOB, "cluster": "other"},
             "vsphere_descheduler_errors_total": {"type": "COUNTER", "metrics": [
                 {"labels": {"job": push::JOB, "cluster": "other", "instance": ""}, "value": "9"}]}},
            {"labels": {"job": push::JOB, "cluster": "lab"},
             // As an older version pushed it: a gauge of other labels.
             "descheduler_pods_evicted_total": {"type": "GAUGE", "metrics": [
                 {"labels": labels(serde_json::json!({"strategy": "s", "namespace": "n", "result": "evicted"})), "value": "1"}]},
             "vsphere_descheduler_pods_skipped_total": {"type": "COUNTER", "metrics": [
                 {"labels": labels(serde_json::json!({"strategy": "s", "reason": "pdb"})), "value": "3"},
                 {"labels": labels(serde_json::json!({"strategy": "s", "reason": "pdb", "extra": "x"})), "value": "5"},
                 {"labels": labels(serde_json::json!({"strategy": "s", "reason": "limit"})), "value": "-1"}]},
             "vsphere_descheduler_errors_total": {"type": "COUNTER", "metrics": [
                 {"labels": labels(serde_json::json!({})), "value": "4"}]},
             "descheduler_loop_duration_seconds": {"type": "HISTOGRAM", "metrics": [
                 {"labels": labels(serde_json::json!({})), "buckets": {"1": "1", "+Inf": "1"}, "sum": "0.5", "count": "1"}]}}
        ]});
        let totals = Totals::from_pushgateway(&answer, &grouping).expect("metrics JSON");
        let mut expected = Totals::default();
        expected
            .counters
            .entry(totals::SKIPPED)
            .or_default()
            .insert(vec!["s".to_string(), "pdb".to_string()], 3.0);
        expected
            .counters
            .entry(totals::ERRORS)
            .or_default()
            .insert(Vec::new(), 4.0);
        assert_eq!(totals, expected);
        // A group not pushed yet: nothing carried. An answer that is no metrics: an error.
        let other: BTreeMap<String, String> = [("job".to_string(), "other".to_string())].into();
        assert_eq!(
            Totals::from_pushgateway(&answer, &other),
            Ok(Totals::default())
        );
        assert!(Totals::from_pushgateway(&serde_json::json!({"data": 1}), &grouping).is_err());
    }

    /// The demo planned, with its vSphere inventory or without.
    fn demo(with_inventory: bool) -> Report {
        let (mut snapshot, policy) =
            crate::command::demo::scenario().expect("the demo scenario reads");
        if !with_inventory {
            snapshot.inventory = None;
        }
        Report::planned(Mode::Plan, crate::plan::plan(&snapshot, &policy))
    }

    /// The series of one family.
    fn family_series<'a>(text: &'a str, family: &str) -> BTreeSet<&'a str> {
        let prefix = format!("{family}{{");
        series(text)
            .into_iter()
            .filter(|line| line.starts_with(&prefix))
            .collect()
    }

    #[test]
    fn the_demo_pushes_its_exposure_per_class_and_the_busiest_host_of_each_workload_at_risk() {
        let text = first_push(&demo(true));
        let classes = [
            r#"vsphere_descheduler_exposure_workloads{class="all",when="before"} 1"#,
            r#"vsphere_descheduler_exposure_workloads{class="all",when="after"} 0"#,
            r#"vsphere_descheduler_exposure_workloads{class="majority",when="before"} 1"#,
            r#"vsphere_descheduler_exposure_workloads{class="majority",when="after"} 1"#,
            r#"vsphere_descheduler_exposure_workloads{class="over-budget",when="before"} 0"#,
            r#"vsphere_descheduler_exposure_workloads{class="over-budget",when="after"} 0"#,
            r#"vsphere_descheduler_exposure_workloads{class="tolerated",when="before"} 0"#,
            r#"vsphere_descheduler_exposure_workloads{class="tolerated",when="after"} 1"#,
        ];
        assert_eq!(
            family_series(&text, EXPOSURE_WORKLOADS),
            classes.into_iter().collect(),
            "{text}"
        );
        // The control plane's three VMs are on three hosts.
        let groups = [
            r#"vsphere_descheduler_exposure_node_groups{class="all"} 0"#,
            r#"vsphere_descheduler_exposure_node_groups{class="majority"} 0"#,
            r#"vsphere_descheduler_exposure_node_groups{class="over-budget"} 0"#,
            r#"vsphere_descheduler_exposure_node_groups{class="tolerated"} 1"#,
        ];
        assert_eq!(
            family_series(&text, EXPOSURE_NODE_GROUPS),
            groups.into_iter().collect(),
            "{text}"
        );
        // Both web replicas on esxi-41 until the plan moves one; two of pg's three, before and
        // after (its DRS rule is not a predicted move).
        let shares = [
            r#"vsphere_descheduler_exposure_worst_host_share{namespace="db",workload="StatefulSet/pg",when="before",class="majority"} 0.6666666666666666"#,
            r#"vsphere_descheduler_exposure_worst_host_share{namespace="db",workload="StatefulSet/pg",when="after",class="majority"} 0.6666666666666666"#,
            r#"vsphere_descheduler_exposure_worst_host_share{namespace="lab-ns-01",workload="Deployment/demo-httpd",when="before",class="all"} 1"#,
            r#"vsphere_descheduler_exposure_worst_host_share{namespace="lab-ns-01",workload="Deployment/demo-httpd",when="after",class="tolerated"} 0.5"#,
        ];
        assert_eq!(
            family_series(&text, WORST_HOST_SHARE),
            shares.into_iter().collect(),
            "{text}"
        );
    }

    #[test]
    fn a_run_without_an_inventory_pushes_no_exposure_series() {
        let report = demo(false);
        assert!(report.plan.exposure.is_none(), "no host is known");
        let text = first_push(&report);
        assert!(!text.contains("_exposure_"), "{text}");
        assert!(text.contains(RUN_INFO), "the rest is pushed: {text}");
        // Nor does a run that could not plan.
        let text = first_push(&Report::empty(Mode::Run));
        assert!(!text.contains("_exposure_"), "{text}");
    }

    #[test]
    fn every_listed_family_is_pushed_with_its_labels_and_nothing_else_is() {
        let gauges = samples(&busy_run(), &timing());
        let totals = Totals::of_run(&busy_run(), &timing());
        let listed = families();
        let names: BTreeSet<&str> = listed.iter().map(|family| family.name).collect();
        let pushed: BTreeSet<&str> = gauges
            .keys()
            .chain(totals.counters.keys())
            .chain(totals.histograms.keys())
            .copied()
            .collect();
        assert_eq!(pushed, names);
        for family in &listed {
            assert!(!family.help.is_empty(), "{}", family.name);
            let label_sets: Vec<&Vec<String>> = match family.kind {
                FamilyKind::Gauge => gauges[family.name].keys().collect(),
                FamilyKind::Counter => totals.counters[family.name].keys().collect(),
                FamilyKind::Histogram => totals.histograms[family.name].keys().collect(),
            };
            for labels in label_sets {
                assert_eq!(labels.len(), family.labels.len(), "{}", family.name);
            }
        }
    }

    #[test]
    fn counters_are_named_total_and_gauges_are_not() {
        for family in families() {
            let total = family.name.ends_with("_total");
            assert_eq!(
                total,
                family.kind == FamilyKind::Counter,
                "{}: counters, and only they, end in _total",
                family.name
            );
        }
    }

    #[test]
    fn each_family_has_one_help_and_one_type_line_before_its_series() {
        let text = first_push(&busy_run());
        let mut seen = BTreeSet::new();
        let mut current = "";
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                current = rest.split(' ').next().expect("a name");
                assert!(seen.insert(current), "{current} twice");
            } else if let Some(rest) = line.strip_prefix("# TYPE ") {
                let family = families()
                    .into_iter()
                    .find(|family| family.name == current)
                    .expect("a listed family");
                assert_eq!(rest, format!("{current} {}", family.kind.as_str()));
            } else {
                assert!(line.starts_with(current), "{line} outside its family");
            }
        }
        assert_eq!(seen.len(), families().len());
    }

    #[test]
    fn a_run_that_could_not_plan_still_says_how_it_ended() {
        let mut report = Report::empty(Mode::DryRun);
        report.errors.push("invalid policy".to_string());
        report.exit_code = Some(2);
        let text = first_push(&report);
        assert!(
            text.contains("\nvsphere_descheduler_exit_code 2\n"),
            "{text}"
        );
        assert!(
            text.contains("\nvsphere_descheduler_run_errors 1\n"),
            "{text}"
        );
        assert!(text.contains(r#"{mode="dry-run","#), "{text}");
        // A dry run counts nothing: no counter has a series yet.
        assert!(!text.contains("_total"), "{text}");
        assert!(!text.contains(totals::LOOP_DURATION), "{text}");
        // A live run that could not plan counts its error and its duration.
        report.mode = Mode::Run;
        let text = first_push(&report);
        assert!(
            text.contains("\nvsphere_descheduler_errors_total 1\n"),
            "{text}"
        );
        assert!(
            text.contains("\ndescheduler_loop_duration_seconds_count 1\n"),
            "{text}"
        );
    }

    #[test]
    fn a_checked_dry_run_eviction_is_planned_but_not_unattempted() {
        let mut report = Report::empty(Mode::DryRun);
        report.plan.evictions = busy_run().plan.evictions;
        report.outcomes.evictions = vec![EvictionOutcome::WouldEvict; report.plan.evictions.len()];
        let text = first_push(&report);
        assert!(!text.contains(NOT_ATTEMPTED), "{text}");
    }

    #[test]
    fn the_metrics_doc_lists_every_family() {
        let doc = include_str!("../docs/metrics.md");
        let table = doc
            .split("\n## The metrics\n")
            .nth(1)
            .and_then(|rest| rest.split("\n## ").next())
            .expect("docs/metrics.md has a section \"The metrics\"");
        for family in families() {
            assert!(
                table.contains(&format!("`{}`", family.name)),
                "the section \"The metrics\" of docs/metrics.md does not list {}",
                family.name
            );
        }
    }

    #[test]
    fn label_values_and_help_are_escaped() {
        assert_eq!(escape_label_value("a\"b\\c\nd"), r#"a\"b\\c\nd"#);
        assert_eq!(escape_help("a\"b\\c\nd"), r#"a"b\\c\nd"#);
        let mut report = Report::empty(Mode::Run);
        report.plan.label_changes.push(LabelChange {
            node: "n".to_string(),
            key: "odd\"key".to_string(),
            old: None,
            new: Some("x".to_string()),
        });
        let text = first_push(&report);
        assert!(
            text.contains(r#"vsphere_descheduler_run_node_label_changes{key="odd\"key"} 1"#),
            "{text}"
        );
    }
}
