//! A run's metrics: what its report says, as Prometheus' text exposition format (0.0.4), pushed
//! to a Pushgateway at the end of every run ([`push`]), because a CronJob's pod is gone before
//! Prometheus could scrape it.
//!
//! [`metrics`] is pure: the report and the run's timing in, the text out. The families, their
//! types, labels and help text are the table in `metrics/families.txt` ([`FAMILIES`]), which the
//! chart's tests also read, so the dashboard and alerts can only name what is pushed.
//!
//! Every value is the last run's (the push replaces the group), so all families are gauges,
//! `descheduler_pods_evicted_total` too: the name is upstream descheduler's, kept so dashboards
//! carry over, but per run it is a count, not a running total.
//!
//! Host-failure exposure is pushed when the run assessed it (its plan had an inventory): every
//! class, zeros too, and the worst-host share of the workloads the report lists (those at risk
//! before or after the plan), so the series stay as few as the workloads at risk.

pub mod push;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::outcome::{DrsOutcome, EvictionOutcome};
use crate::plan::{Exposure, ExposureClass};
use crate::report::Report;

pub use push::{PushSettings, Pushgateway, push_limit};

/// The metric families, one per line: name, type, label names, help (see the file's header).
pub const FAMILIES: &str = include_str!("metrics/families.txt");

/// The `Content-Type` of what [`metrics`] writes.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

const EVICTIONS: &str = "descheduler_pods_evicted_total";
const SKIPPED: &str = "vsphere_descheduler_pods_skipped";
const LABEL_CHANGES: &str = "vsphere_descheduler_node_label_changes";
const DRS_RULES: &str = "vsphere_descheduler_drs_rule_changes";
const UNMAPPED_NODES: &str = "vsphere_descheduler_unmapped_nodes";
const NOT_ATTEMPTED: &str = "vsphere_descheduler_actions_not_attempted";
const ERRORS: &str = "vsphere_descheduler_errors";
const WARNINGS: &str = "vsphere_descheduler_warnings";
const DURATION: &str = "vsphere_descheduler_run_duration_seconds";
const FINISHED: &str = "vsphere_descheduler_last_run_timestamp_seconds";
const EXIT_CODE: &str = "vsphere_descheduler_exit_code";
const RUN_INFO: &str = "vsphere_descheduler_run_info";
const EXPOSURE_WORKLOADS: &str = "vsphere_descheduler_exposure_workloads";
const EXPOSURE_NODE_GROUPS: &str = "vsphere_descheduler_exposure_node_groups";
const WORST_HOST_SHARE: &str = "vsphere_descheduler_exposure_worst_host_share";

/// What a report does not say about its run: when it ended and how long it took.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunTiming {
    pub duration: Duration,
    pub finished: DateTime<Utc>,
}

/// One line of [`FAMILIES`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Family {
    pub name: &'static str,
    /// `gauge` for every family (see the module docs).
    pub kind: &'static str,
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
            let kind = next_column(&mut rest);
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

/// The run's metrics in the text exposition format: the families of [`FAMILIES`] that have a
/// series, each with its HELP and TYPE lines.
pub fn metrics(report: &Report, timing: &RunTiming) -> String {
    render(&samples(report, timing))
}

fn samples(report: &Report, timing: &RunTiming) -> Samples {
    let mut samples = Samples::new();
    let mut count = |family: &'static str, labels: &[&str]| {
        *samples
            .entry(family)
            .or_default()
            .entry(labels.iter().map(|label| label.to_string()).collect())
            .or_insert(0.0) += 1.0;
    };
    for entry in &report.evictions {
        let eviction = &entry.eviction;
        count(
            EVICTIONS,
            &[
                eviction.strategy.as_str(),
                &eviction.namespace,
                entry.result().as_str(),
            ],
        );
        if matches!(&entry.outcome, EvictionOutcome::NotAttempted(why) if why.is_withheld()) {
            count(NOT_ATTEMPTED, &["eviction"]);
        }
    }
    for skip in &report.skipped {
        count(SKIPPED, &[skip.strategy.as_str(), skip.reason.as_str()]);
    }
    for change in &report.label_changes {
        count(LABEL_CHANGES, &[&change.key]);
    }
    for entry in &report.drs_rules {
        count(
            DRS_RULES,
            &[entry.change.action.as_str(), entry.result().as_str()],
        );
        if matches!(&entry.outcome, DrsOutcome::NotAttempted(why) if why.is_withheld()) {
            count(NOT_ATTEMPTED, &["drs-rule"]);
        }
    }
    let mut gauge = |family, labels: &[&str], value| set(&mut samples, family, labels, value);
    gauge(UNMAPPED_NODES, &[], report.unmapped_nodes.len() as f64);
    gauge(ERRORS, &[], report.errors.len() as f64);
    gauge(WARNINGS, &[], report.warnings.len() as f64);
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
    if let Some(exposure) = &report.exposure {
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

fn render(samples: &Samples) -> String {
    let families = families();
    let mut out = String::new();
    for (name, series) in samples {
        let family = families
            .iter()
            .find(|family| family.name == *name)
            .expect("every family the code fills is listed in metrics/families.txt");
        let _ = writeln!(out, "# HELP {name} {}", escape_help(family.help));
        let _ = writeln!(out, "# TYPE {name} {}", family.kind);
        for (values, value) in series {
            out.push_str(name);
            if !values.is_empty() {
                let pairs: Vec<String> = family
                    .labels
                    .iter()
                    .zip(values)
                    .map(|(label, value)| format!("{label}=\"{}\"", escape_label_value(value)))
                    .collect();
                let _ = write!(out, "{{{}}}", pairs.join(","));
            }
            let _ = writeln!(out, " {value}");
        }
    }
    out
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
    use crate::outcome::{Halt, NotAttempted, Outcomes, Signal, StopReason};
    use crate::plan::exposure::{ClassCounts, Spread, WorkloadExposure};
    use crate::plan::{
        DrsAction, DrsRuleChange, Eviction, LabelChange, Plan, Skip, SkipReason, Warning,
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
            detail: String::new(),
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
                behavior: "manual".to_string(),
            }],
            exposure: Some(exposure()),
            ..Plan::default()
        };
        let stopped = NotAttempted::Halted(Halt::Stopped(StopReason::Signal(Signal::Terminate)));
        let outcomes = Outcomes {
            evictions: vec![
                EvictionOutcome::Evicted,
                EvictionOutcome::Evicted,
                EvictionOutcome::Blocked("PDB".to_string()),
                EvictionOutcome::Failed("500".to_string()),
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

    #[test]
    fn a_busy_run_is_counted_by_strategy_reason_action_and_result() {
        let text = metrics(&busy_run(), &timing());
        let expected = [
            r#"descheduler_pods_evicted_total{strategy="RemovePodsViolatingInterPodAntiAffinity",namespace="shop",result="blocked"} 1"#,
            r#"descheduler_pods_evicted_total{strategy="RemovePodsViolatingInterPodAntiAffinity",namespace="shop",result="evicted"} 2"#,
            r#"descheduler_pods_evicted_total{strategy="RemovePodsViolatingTopologySpreadConstraint",namespace="db",result="failed"} 1"#,
            r#"descheduler_pods_evicted_total{strategy="RemovePodsViolatingTopologySpreadConstraint",namespace="db",result="planned"} 1"#,
            r#"vsphere_descheduler_pods_skipped{strategy="RemovePodsViolatingInterPodAntiAffinity",reason="pdb"} 2"#,
            r#"vsphere_descheduler_pods_skipped{strategy="RemovePodsViolatingTopologySpreadConstraint",reason="no-feasible-node"} 1"#,
            r#"vsphere_descheduler_node_label_changes{key="vsphere-descheduler.io/host"} 1"#,
            r#"vsphere_descheduler_drs_rule_changes{action="create",result="applied"} 1"#,
            r#"vsphere_descheduler_drs_rule_changes{action="delete",result="planned"} 1"#,
            r#"vsphere_descheduler_drs_rule_changes{action="keep",result="applied"} 1"#,
            r#"vsphere_descheduler_actions_not_attempted{kind="drs-rule"} 1"#,
            r#"vsphere_descheduler_actions_not_attempted{kind="eviction"} 1"#,
            "vsphere_descheduler_unmapped_nodes 1",
            "vsphere_descheduler_errors 1",
            "vsphere_descheduler_warnings 1",
            "vsphere_descheduler_run_duration_seconds 12.25",
            "vsphere_descheduler_last_run_timestamp_seconds 1767225600.5",
            "vsphere_descheduler_exit_code 1",
            concat!(
                r#"vsphere_descheduler_run_info{mode="run",version=""#,
                env!("CARGO_PKG_VERSION"),
                r#""} 1"#
            ),
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
        ];
        assert_eq!(series(&text), expected.into_iter().collect(), "{text}");
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
        let text = metrics(&demo(true), &timing());
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
        assert!(report.exposure.is_none(), "no host is known");
        let text = metrics(&report, &timing());
        assert!(!text.contains("_exposure_"), "{text}");
        assert!(text.contains(RUN_INFO), "the rest is pushed: {text}");
        // Nor does a run that could not plan.
        let text = metrics(&Report::empty(Mode::Run), &timing());
        assert!(!text.contains("_exposure_"), "{text}");
    }

    #[test]
    fn every_listed_family_is_pushed_with_its_labels_and_nothing_else_is() {
        let samples = samples(&busy_run(), &timing());
        let listed = families();
        let names: BTreeSet<&str> = listed.iter().map(|family| family.name).collect();
        assert_eq!(samples.keys().copied().collect::<BTreeSet<_>>(), names);
        for family in &listed {
            assert_eq!(family.kind, "gauge", "{}", family.name);
            assert!(!family.help.is_empty(), "{}", family.name);
            for labels in samples[family.name].keys() {
                assert_eq!(labels.len(), family.labels.len(), "{}", family.name);
            }
        }
    }

    #[test]
    fn each_family_has_one_help_and_one_type_line_before_its_series() {
        let text = metrics(&busy_run(), &timing());
        let mut seen = BTreeSet::new();
        let mut current = "";
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                current = rest.split(' ').next().expect("a name");
                assert!(seen.insert(current), "{current} twice");
            } else if let Some(rest) = line.strip_prefix("# TYPE ") {
                assert_eq!(rest, format!("{current} gauge"));
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
        let text = metrics(&report, &timing());
        assert!(
            text.contains("\nvsphere_descheduler_exit_code 2\n"),
            "{text}"
        );
        assert!(text.contains("\nvsphere_descheduler_errors 1\n"), "{text}");
        assert!(text.contains(r#"{mode="dry-run","#), "{text}");
        assert!(!text.contains("descheduler_pods_evicted_total"), "{text}");
    }

    #[test]
    fn a_checked_dry_run_eviction_is_planned_but_not_unattempted() {
        let mut report = Report::empty(Mode::DryRun);
        report.evictions = busy_run().evictions;
        for entry in &mut report.evictions {
            entry.outcome = EvictionOutcome::WouldEvict;
        }
        let text = metrics(&report, &timing());
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
        report.label_changes.push(LabelChange {
            node: "n".to_string(),
            key: "odd\"key".to_string(),
            old: None,
            new: Some("x".to_string()),
        });
        let text = metrics(&report, &timing());
        assert!(
            text.contains(r#"vsphere_descheduler_node_label_changes{key="odd\"key"} 1"#),
            "{text}"
        );
    }
}
