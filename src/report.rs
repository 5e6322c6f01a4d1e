//! The report: what a run planned or did, as text for people, one JSON document for machines
//! (the contract in docs/design.md §7), or one self-contained HTML page (`html`, drawing what
//! `placement` gathers). The only module that writes to stdout.
//!
//! Results of evictions: `planned` (plan, dry-run, or a run that stopped before getting to it;
//! `message` then says why), `evicted`, `blocked` (a PodDisruptionBudget refused it), `gone`
//! (the pod was deleted or replaced before we got to it), `failed`, `unknown` (the request was
//! sent but the run stopped waiting for its answer at the deadline: the pod may have been
//! evicted). DRS rule entries: `planned`, `applied` (for `keep`: nothing needed writing),
//! `failed`, `unknown` (the reconfiguration was submitted to vCenter, which completes it on its
//! own, but the run stopped waiting for it).

pub mod diff;
mod document;
mod entry;
mod exposure_text;
pub mod findings;
pub mod guest_clusters;
pub mod html;
pub mod placement;
mod record;
pub mod risk;
mod warning;
pub mod what_if;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::Write as _;

use serde::Serialize;

use crate::text::{escaped, one_line};

use crate::outcome::{Cause, LabelOutcome, NotAttempted, Outcomes, Step};
use crate::plan::{DrsAction, MappedBy, MappedNode, Plan};
pub use entry::{DrsRuleEntry, EvictionEntry};
pub use guest_clusters::GuestClusters;
pub use placement::PlacementView;
pub use warning::{AnyWarning, NowBeforeCreation, ReportWarning};

/// Which Kubernetes API server, kubeconfig context and vCenter a live command talks to, so a
/// user with several clusters sees at once which one a run acts on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Target {
    /// The API server's URL.
    pub api_server: String,
    /// The kubeconfig context used; `null` in-cluster (the pod's service account).
    pub context: Option<String>,
    /// The vCenter server as configured (policy, `--vsphere-server` or `VSPHERE_SERVER`), with
    /// source vcenter.
    #[serde(rename = "vCenter", skip_serializing_if = "Option::is_none")]
    pub vcenter: Option<String>,
    /// With source supervisor: the Supervisor's address (or its kubeconfig context) and the
    /// namespace read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supervisor: Option<SupervisorTarget>,
    /// With source node-label: the label the hosts are read from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_label: Option<String>,
}

/// The Supervisor a command reads, as the report names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SupervisorTarget {
    /// Its address, or `context NAME` of a kubeconfig.
    pub server: String,
    /// `None` until connected where the kubeconfig context names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

impl Target {
    /// `Kubernetes API server https://…, context prod; vCenter vc.example.com` (or the
    /// Supervisor, or the node label, the hosts come from).
    pub fn describe(&self) -> String {
        let (source, value) = self.hosts();
        format!(
            "Kubernetes API server {}, context {}; {source} {value}",
            self.api_server,
            self.context.as_deref().unwrap_or("(in-cluster)"),
        )
    }

    /// Where the hosts come from, as words and the server or label: (`vCenter`,
    /// `vc.example.com`).
    pub fn hosts(&self) -> (&'static str, String) {
        match (&self.vcenter, &self.supervisor, &self.node_label) {
            (Some(vcenter), _, _) => ("vCenter", vcenter.clone()),
            (None, Some(supervisor), _) => (
                "Supervisor",
                format!(
                    "{}, namespace {}",
                    supervisor.server,
                    supervisor.namespace.as_deref().unwrap_or("of the context")
                ),
            ),
            (None, None, Some(key)) => ("hosts from node label", key.clone()),
            (None, None, None) => ("hosts from", "nowhere".to_string()),
        }
    }

    /// Says on stderr, before anything is read or changed, what the command talks to: not a
    /// log line, which `RUST_LOG` could silence.
    pub fn announce(&self) {
        #[allow(clippy::print_stderr)]
        {
            eprintln!("target: {}", self.describe());
        }
    }
}

/// How the report was produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Offline, against recorded state.
    Plan,
    /// Live, nothing changed.
    DryRun,
    /// Live, changes made.
    Run,
}

impl Mode {
    /// The name the JSON report uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Plan => "plan",
            Mode::DryRun => "dry-run",
            Mode::Run => "run",
        }
    }
}

/// What became of a planned action.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Planned,
    Evicted,
    Applied,
    Blocked,
    /// The pod was not there any more (deleted, or replaced under the same name).
    Gone,
    Failed,
    /// Sent, but its answer was not awaited (the run was stopped): it may or may not have
    /// taken effect.
    Unknown,
}

impl Outcome {
    /// The name the JSON report uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Planned => "planned",
            Outcome::Evicted => "evicted",
            Outcome::Applied => "applied",
            Outcome::Blocked => "blocked",
            Outcome::Gone => "gone",
            Outcome::Failed => "failed",
            Outcome::Unknown => "unknown",
        }
    }
}

/// A plan and what became of it. The plan and its outcomes are kept whole and read where they
/// are shown (each action with its outcome through `evictions` and `drs_rules`, the warnings
/// through `warnings`), so a field added to the plan needs no field here: only its key in the
/// JSON document (`document`) and its lines in the text and HTML views.
#[derive(Clone, Debug)]
pub struct Report {
    pub mode: Mode,
    pub plan: Plan,
    /// What became of each action of `plan`, index for index, and what kept the run from
    /// acting.
    pub outcomes: Outcomes,
    /// The report's own warnings told before the plan's (reports have always put them first):
    /// of what it was planned from, the settings and a topology source that replaced the
    /// snapshot's hosts.
    pub warnings_before_plan: Vec<ReportWarning>,
    /// The report's own warnings told after the plan's: Events not recorded, an instant planned
    /// at before pods' creation, node VMs in no cluster module.
    pub warnings_after_plan: Vec<ReportWarning>,
    /// Guest clusters' cluster modules and the VMs on no host (`guestClusters`,
    /// `unplacedVms`), when the hosts come from VM Operator's objects; absent otherwise.
    pub guest_clusters: Option<GuestClusters>,
    pub errors: Vec<String>,
    /// Where the run failed and the kind of each failure (what the metrics count by cause;
    /// the report tells each one in `errors`).
    pub failures: Vec<(Step, Cause)>,
    /// The exit code of a `run` (0 done, 1 some action or backend failed or the run stopped
    /// early, 2 invalid settings), so a report read from logs says how the run ended.
    pub exit_code: Option<u8>,
    /// What a live run talks to; absent for offline plans and for runs that never got as far.
    pub target: Option<Target>,
    /// Hosts, node VMs and workloads for `--output html`, gathered only when asked for.
    pub placement: Option<Box<PlacementView>>,
}

impl Report {
    /// A report of a plan not carried out: every action `planned`.
    pub fn planned(mode: Mode, plan: Plan) -> Report {
        let outcomes = Outcomes::not_attempted(
            plan.label_applies.len(),
            plan.evictions.len(),
            plan.drs_rules.len(),
            &NotAttempted::Offline,
        );
        Report::new(mode, plan, outcomes)
    }

    /// The record of `plan` and what became of it: the errors in the order they happened and
    /// the warnings of the Events, told once here from the outcomes.
    pub fn new(mode: Mode, plan: Plan, outcomes: Outcomes) -> Report {
        Report {
            mode,
            errors: record::errors(&plan, &outcomes),
            failures: outcomes.failures(),
            warnings_before_plan: Vec::new(),
            warnings_after_plan: record::event_warnings(&plan, &outcomes),
            plan,
            outcomes,
            guest_clusters: None,
            exit_code: None,
            target: None,
            placement: None,
        }
    }

    /// Each planned eviction with what became of it, in the plan's order.
    pub fn evictions(&self) -> impl ExactSizeIterator<Item = EvictionEntry<'_>> + Clone {
        let outcomes = &self.outcomes.evictions;
        self.plan
            .evictions
            .iter()
            .zip(outcomes)
            .map(|(eviction, outcome)| EvictionEntry { eviction, outcome })
    }

    /// The eviction at `index` of the plan's, with its outcome.
    pub fn eviction(&self, index: usize) -> EvictionEntry<'_> {
        EvictionEntry {
            eviction: &self.plan.evictions[index],
            outcome: &self.outcomes.evictions[index],
        }
    }

    /// Each DRS rule change (kept rules too) with what became of it.
    pub fn drs_rules(&self) -> impl ExactSizeIterator<Item = DrsRuleEntry<'_>> + Clone {
        let outcomes = &self.outcomes.drs_rules;
        self.plan
            .drs_rules
            .iter()
            .zip(outcomes)
            .map(|(change, outcome)| DrsRuleEntry { change, outcome })
    }

    /// Every warning, in the order the report tells them: those of what it was planned from,
    /// the plan's, then those of what happened beside it.
    pub fn warnings(&self) -> impl Iterator<Item = AnyWarning<'_>> + Clone {
        let before = self.warnings_before_plan.iter().map(AnyWarning::Report);
        let after = self.warnings_after_plan.iter().map(AnyWarning::Report);
        let plan = self.plan.warnings.iter().map(AnyWarning::Plan);
        before.chain(plan).chain(after)
    }

    /// The nodes whose label write the API server confirmed (what the label counter counts;
    /// the report tells a failed write in `errors`).
    pub fn labels_written(&self) -> BTreeSet<&str> {
        let applies = self.plan.label_applies.iter().zip(&self.outcomes.labels);
        applies
            .filter(|(_, outcome)| matches!(outcome, LabelOutcome::Written))
            .map(|(apply, _)| apply.node.as_str())
            .collect()
    }

    /// Gathers what `--output html` draws: the hosts, node VMs and workloads of the snapshot
    /// this report was planned on. Call it once the report's outcomes are final.
    pub fn place(&mut self, snapshot: &crate::snapshot::Snapshot, policy: &crate::policy::Policy) {
        self.placement = Some(Box::new(PlacementView::new(snapshot, policy, self)));
    }

    /// Adds what the Supervisor found beside the hosts (`None`: the hosts do not come from VM
    /// Operator's objects), with the warning of node VMs in no cluster module.
    pub fn show_guest_clusters(&mut self, findings: Option<crate::vm_operator::Findings>) {
        let shown = findings.map(GuestClusters::from);
        self.warnings_after_plan
            .extend(shown.as_ref().and_then(GuestClusters::warning));
        self.guest_clusters = shown;
    }

    /// A report with nothing planned: what a run that could not plan prints, with its errors.
    pub fn empty(mode: Mode) -> Report {
        Report::planned(mode, Plan::default())
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report always serializes")
    }

    /// The human summary.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let heading = match self.mode {
            Mode::Plan => "Plan (offline: nothing was changed)",
            Mode::DryRun => "Dry run (nothing was changed)",
            Mode::Run => "Run",
        };
        let _ = writeln!(out, "{heading}\n");
        if let Some(target) = &self.target {
            let _ = writeln!(out, "Target: {}\n", target.describe());
        }

        let plan = &self.plan;
        section(
            &mut out,
            "Node labels",
            plan.label_changes.len(),
            "to change",
            |out| self.write_label_changes(out),
        );
        section(&mut out, "Evictions", plan.evictions.len(), "", |out| {
            self.write_evictions(out)
        });
        section(&mut out, "Not evicted", plan.skipped.len(), "", |out| {
            self.write_skipped(out)
        });
        let acting = plan
            .drs_rules
            .iter()
            .filter(|rule| !matches!(rule.action, DrsAction::Keep { .. }))
            .count();
        section(&mut out, "DRS rules", acting, "to change", |out| {
            self.write_drs_rules(out)
        });
        if let Some(exposure) = &plan.exposure {
            exposure_text::write(&mut out, exposure);
        }
        if let Some(guest_clusters) = &self.guest_clusters {
            guest_clusters.write_text(&mut out);
        }
        self.write_nodes_and_notices(&mut out);
        let _ = writeln!(
            out,
            "Summary: {} label change(s), {} eviction(s), {} not evicted, {} DRS rule change(s), {} unmapped node(s)",
            plan.label_changes.len(),
            plan.evictions.len(),
            plan.skipped.len(),
            acting,
            plan.unmapped_nodes.len()
        );
        out
    }

    /// One line per label change: node, key, old and new value.
    fn write_label_changes(&self, out: &mut String) {
        for change in &self.plan.label_changes {
            let _ = writeln!(
                out,
                "  {}  {}: {} -> {}",
                escaped(&change.node),
                escaped(&change.key),
                escaped(change.old.as_deref().unwrap_or("(none)")),
                escaped(change.new.as_deref().unwrap_or("(removed)"))
            );
        }
    }

    /// Each eviction with its result, why, where it fits and the executor's note.
    fn write_evictions(&self, out: &mut String) {
        for entry in self.evictions() {
            let e = entry.eviction;
            let host = e
                .host
                .as_deref()
                .map(|h| format!(" on ESXi {}", escaped(h)))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "  [{}] {}/{}  node {}{host}",
                entry.result().as_str(),
                escaped(&e.namespace),
                escaped(&e.pod),
                escaped(&e.node)
            );
            let _ = writeln!(
                out,
                "      why:   {} ({})",
                escaped(&e.reason.to_string()),
                e.strategy
            );
            if let Some(target) = &e.fits_on {
                let _ = writeln!(out, "      fits:  {}", escaped(target));
            }
            if let Some(message) = entry.message() {
                let _ = writeln!(out, "      note:  {}", escaped(&message));
            }
        }
    }

    /// Each pod not evicted with its reason, strategy and detail.
    fn write_skipped(&self, out: &mut String) {
        for skip in &self.plan.skipped {
            let _ = writeln!(
                out,
                "  [{}] {}/{}  ({})\n      {}",
                skip.reason.as_str(),
                escaped(&skip.namespace),
                escaped(&skip.pod),
                skip.strategy,
                escaped(&skip.detail.to_string())
            );
        }
    }

    /// Every DRS rule (kept ones too), with the result once the executor has one.
    fn write_drs_rules(&self, out: &mut String) {
        for entry in self.drs_rules() {
            let rule = entry.change;
            let result = match entry.result() {
                Outcome::Planned => String::new(),
                result => format!(" [{}]", result.as_str()),
            };
            let _ = writeln!(
                out,
                "  {:<6} {}  (cluster {}){result}\n         keep apart: {}",
                rule.action.as_str(),
                escaped(&rule.name),
                escaped(&rule.cluster),
                escaped(&rule.vms.join(", "))
            );
            if let Some(message) = entry.message() {
                let _ = writeln!(out, "         note: {}", escaped(&message));
            }
        }
    }

    /// The mapped and unmapped nodes, then warnings and errors (a blank line after them, when
    /// there are any).
    fn write_nodes_and_notices(&self, out: &mut String) {
        let plan = &self.plan;
        if !plan.mapped_nodes.is_empty() {
            let _ = writeln!(out, "{}\n", mapped_summary(&plan.mapped_nodes));
        }
        if !plan.unmapped_nodes.is_empty() {
            let _ = writeln!(
                out,
                "Unmapped nodes (no vSphere VM found; labels untouched): {}\n",
                escaped(&plan.unmapped_nodes.join(", "))
            );
        }
        for warning in self.warnings() {
            let _ = writeln!(out, "warning: {}", lines(&warning.to_string()));
        }
        for error in &self.errors {
            let _ = writeln!(out, "error: {}", lines(error));
        }
        if self.warnings().next().is_some() || !self.errors.is_empty() {
            out.push('\n');
        }
    }

    /// Write the report to stdout in the chosen format.
    pub fn print(&self, format: OutputFormat) -> std::io::Result<()> {
        print_as(
            self,
            format,
            || self.to_text(),
            || html::render(self, self.placement.as_deref()),
        )
    }
}

/// Writes a report to stdout in `format`: JSON streamed from `report`, text and HTML as `text`
/// and `html` render them. `execute` refuses the findings and markdown formats for a report
/// before it starts (`plan` writes findings itself), so here they cannot occur.
fn print_as<R: Serialize>(
    report: &R,
    format: OutputFormat,
    text: impl FnOnce() -> String,
    html: impl FnOnce() -> String,
) -> std::io::Result<()> {
    let rendered = match format {
        OutputFormat::Text
        | OutputFormat::Sarif
        | OutputFormat::Github
        | OutputFormat::Markdown => text(),
        OutputFormat::Json => return write_json(report, std::io::stdout().lock()),
        OutputFormat::Html => html(),
    };
    write_stdout(rendered.as_bytes())
}

/// A report as pretty JSON and a final newline, streamed rather than built whole.
fn write_json<R: Serialize>(report: &R, out: impl std::io::Write) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::with_capacity(1 << 16, out);
    serde_json::to_writer_pretty(&mut out, report)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Writes bytes to stdout: what the commands print besides reports (completion scripts).
pub fn write_stdout(bytes: &[u8]) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(bytes)?;
    stdout.flush()
}

/// A message's lines (a list of a policy's problems is one per line), each bounded, with
/// anything that could still break it escaped; the lines after the first indented.
fn lines(message: &str) -> String {
    let lines: Vec<_> = message.lines().map(one_line).collect();
    lines.join("\n  ")
}

/// `Mapped nodes: 5 (3 by providerID, 2 as ESXi hosts)`.
fn mapped_summary(nodes: &[MappedNode]) -> String {
    let mut counts: Vec<(MappedBy, usize)> = Vec::new();
    for node in nodes {
        match counts.iter_mut().find(|(by, _)| *by == node.mapped_by) {
            Some((_, count)) => *count += 1,
            None => counts.push((node.mapped_by, 1)),
        }
    }
    counts.sort_by_key(|(by, _)| *by);
    let parts: Vec<String> = counts
        .iter()
        .map(|(by, count)| match by {
            MappedBy::EsxiHost => format!("{count} as ESXi hosts"),
            by => format!("{count} by {}", by.describe()),
        })
        .collect();
    format!("Mapped nodes: {} ({})", nodes.len(), parts.join(", "))
}

/// What the `snapshot` command recorded.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotSummary {
    pub file: String,
    pub nodes: usize,
    pub pods: usize,
    pub pod_disruption_budgets: usize,
    pub namespaces: usize,
    pub priority_classes: usize,
    /// vSphere clusters in the recorded inventory.
    pub vsphere_clusters: usize,
    pub vms: usize,
    /// metrics.k8s.io NodeMetrics recorded; absent when the policy reads no actual usage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_metrics: Option<usize>,
    /// metrics.k8s.io PodMetrics recorded; absent when the policy reads no actual usage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_metrics: Option<usize>,
    /// The run lock's Lease (`namespace/name`) whose eviction history was recorded; absent when
    /// it keeps none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eviction_history: Option<String>,
    /// What the command read from.
    pub target: Target,
}

impl SnapshotSummary {
    /// Write the summary to stdout in the chosen format.
    pub fn print(&self, format: OutputFormat) -> std::io::Result<()> {
        let text = match format {
            OutputFormat::Json => {
                serde_json::to_string_pretty(self).expect("a summary always serializes") + "\n"
            }
            // `execute` refuses the other formats for this command before it starts.
            OutputFormat::Text
            | OutputFormat::Html
            | OutputFormat::Sarif
            | OutputFormat::Github
            | OutputFormat::Markdown => format!(
                "Target: {}\nRecorded {} node(s), {} pod(s), {} PodDisruptionBudget(s), {} namespace(s), {} \
                 PriorityClass(es){}{} and {} vSphere cluster(s) with {} VM(s) in {}\n",
                self.target.describe(),
                self.nodes,
                self.pods,
                self.pod_disruption_budgets,
                self.namespaces,
                self.priority_classes,
                match (self.node_metrics, self.pod_metrics) {
                    (Some(nodes), Some(pods)) => {
                        format!(", {nodes} NodeMetrics, {pods} PodMetrics")
                    }
                    _ => String::new(),
                },
                match &self.eviction_history {
                    Some(lease) => format!(", the eviction history of Lease {lease}"),
                    None => String::new(),
                },
                self.vsphere_clusters,
                self.vms,
                self.file
            ),
        };
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(text.as_bytes())?;
        stdout.flush()
    }
}

/// `--output`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    #[default]
    Text,
    Json,
    /// One self-contained page (`plan`, `run`, `demo` and `what-if`).
    Html,
    /// SARIF 2.1.0 findings about the input files (`validate` and `plan`).
    Sarif,
    /// GitHub Actions workflow commands, one annotation per finding (`validate` and `plan`).
    Github,
    /// A review comment: what one policy does differently from another (`plan
    /// --baseline-policy`).
    Markdown,
}

impl OutputFormat {
    /// The value as `--output` takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            OutputFormat::Text => "text",
            OutputFormat::Json => "json",
            OutputFormat::Html => "html",
            OutputFormat::Sarif => "sarif",
            OutputFormat::Github => "github",
            OutputFormat::Markdown => "markdown",
        }
    }

    /// Whether the format holds findings about input files rather than a report.
    pub fn is_findings(self) -> bool {
        matches!(self, OutputFormat::Sarif | OutputFormat::Github)
    }
}

fn section(
    out: &mut String,
    title: &str,
    count: usize,
    suffix: &str,
    body: impl FnOnce(&mut String),
) {
    if count == 0 {
        let _ = writeln!(out, "{title}: none\n");
        return;
    }
    let suffix = if suffix.is_empty() {
        String::new()
    } else {
        format!(" {suffix}")
    };
    let _ = writeln!(out, "{title} ({count}{suffix})");
    body(out);
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_written_as_it_is_serialised_is_the_json_text_and_a_newline() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-11-21T09:00:00Z")
            .expect("a valid time")
            .to_utc();
        let snapshot = crate::snapshot::from_str(include_str!("command/demo/snapshot.yaml"), now)
            .expect("the demo snapshot");
        let policy = crate::policy::load_str("demo", include_str!("command/demo/policy.yaml"))
            .expect("the demo policy")
            .policy;
        let report = Report::planned(Mode::Plan, crate::plan::plan(&snapshot, &policy));
        assert!(
            !report.plan.evictions.is_empty(),
            "the demo plans evictions"
        );
        let mut written = Vec::new();
        write_json(&report, &mut written).expect("a Vec takes it");
        assert_eq!(String::from_utf8(written).unwrap(), report.to_json() + "\n");
    }

    #[test]
    fn outcome_and_mode_names_are_the_json_report_s() {
        let outcomes = [
            Outcome::Planned,
            Outcome::Evicted,
            Outcome::Applied,
            Outcome::Blocked,
            Outcome::Gone,
            Outcome::Failed,
            Outcome::Unknown,
        ];
        for outcome in outcomes {
            assert_eq!(serde_json::json!(outcome), outcome.as_str());
        }
        for mode in [Mode::Plan, Mode::DryRun, Mode::Run] {
            assert_eq!(serde_json::json!(mode), mode.as_str());
        }
    }

    #[test]
    fn names_from_the_input_cannot_forge_lines_or_send_control_codes() {
        let mut report = Report::empty(Mode::Plan);
        report.plan.label_changes.push(crate::plan::LabelChange {
            node: "worker-a\nerror: forged\u{1b}[2J".to_string(),
            key: "vsphere-descheduler.io/host".to_string(),
            old: None,
            new: Some("esxi\u{2028}41".to_string()),
        });
        report.plan.unmapped_nodes.push("ghost\r".to_string());
        report
            .errors
            .push("snapshot file s.yaml: Pod a\nerror: forged appears more than once".to_string());
        let text = report.to_text();
        assert!(
            text.lines().all(|line| !line.starts_with("error: forged")),
            "{text}"
        );
        assert!(
            !text
                .chars()
                .any(|c| c.is_control() && c != '\n' || c == '\u{2028}'),
            "{text:?}"
        );
        assert!(text.contains("worker-a\\nerror: forged\\u{1b}[2J  vsphere-descheduler.io/host"));
        // A newline left in a message continues it, indented: it cannot start a line of its own.
        assert!(text.contains("error: snapshot file s.yaml: Pod a\n  error: forged appears"));
        // A message of several lines (a policy's problems) keeps one per line, indented.
        report
            .errors
            .push("policy file p.yaml has 2 problems:\np.yaml:1:1: a\np.yaml:2:1: b".to_string());
        assert!(
            report.to_text().contains(
                "error: policy file p.yaml has 2 problems:\n  p.yaml:1:1: a\n  p.yaml:2:1: b\n"
            ),
            "{}",
            report.to_text()
        );
    }
}
