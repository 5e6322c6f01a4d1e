//! The report as one self-contained HTML page: ESXi hosts as columns with the node VMs on them,
//! each drawn workload's replicas per host before and after the plan, every eviction and skip
//! with its reason, the DRS rules as the VM groups they keep apart, and the utilization plugins'
//! measurements. Inline CSS and SVG only, no script, and a Content-Security-Policy that lets
//! the browser load nothing, so the page reads the same offline, as a CI artifact or attached
//! to a change request.
//!
//! It leads with what one ESXi host failure would take (`exposure`): the summary at the top,
//! each host's losses in its column, each workload's class. Every state is written out in
//! words beside its colour, and every text that comes from the cluster (names, reasons) is
//! escaped: names may hold `<`, `&` or quotes.
//!
//! A large cluster's page folds its bulk into `<details>`, one click away and still without a
//! script, by one rule ([`FOLD_PAST`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::guest_clusters;
use super::placement::{HostState, HostView, NodeView, PlacementView, WorkloadView, leaves};
use super::risk::Risk;
use super::{DrsRuleEntry, EvictionEntry, Mode, Outcome, Report};
use crate::plan::{
    DrsAction, DrsRuleChange, NodeUtilization, ResourceUtilization, Skip, SkipCode,
    UtilizationClass,
};

/// The browser may load nothing: no scripts, fonts, images or connections; only the inline
/// styles (and the inline SVG, which is part of the document).
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'";

const STYLE: &str = include_str!("html/style.css");

/// A workload on at most this many hosts has every host listed.
const HOSTS_LISTED: usize = 8;

/// The folding rule: a list of more than this many entries folds. A list ranked by risk (the
/// hosts and workloads at risk, a host's losses, the drawn workloads) shows this many of its
/// worst and folds the rest; a list with no such rank (a host's node VMs, the DRS rules, the
/// nodes judged for utilization) folds whole, its `<summary>` counting what it holds. So a
/// small cluster's page shows everything, and a large one opens on what is at risk.
pub const FOLD_PAST: usize = 10;

/// Text for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The page of a report; without a placement (a run that could not plan) only its summary,
/// warnings and errors.
pub fn render(report: &Report, placement: Option<&PlacementView>) -> String {
    let risk = report.plan.exposure.as_ref().map(Risk::new);
    let mut page = Page {
        out: String::with_capacity(64 * 1024),
        report,
        risk: risk.as_ref(),
    };
    page.head();
    page.summary();
    page.exposure();
    page.legend();
    if let Some(placement) = placement {
        page.hosts(placement);
        page.workloads(placement);
    }
    page.unattached(placement);
    page.drs_rules();
    page.guest_clusters();
    page.utilization();
    page.notes();
    page.out.push_str("</main>\n</body>\n</html>\n");
    page.out
}

struct Page<'a> {
    out: String,
    report: &'a Report,
    /// The report's exposure by host and workload; `None` without an inventory.
    risk: Option<&'a Risk<'a>>,
}

/// `writeln!` into the page; writing to a `String` cannot fail.
macro_rules! put {
    ($page:expr, $($arg:tt)*) => {
        let _ = writeln!($page.out, $($arg)*);
    };
}

// After `put!`, which it writes with.
mod exposure;

impl Page<'_> {
    fn head(&mut self) {
        let title = heading(self.report.mode);
        put!(
            self,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta http-equiv=\"Content-Security-Policy\" content=\"{CONTENT_SECURITY_POLICY}\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <title>vsphere-descheduler: {title}</title>\n<style>\n{STYLE}</style>\n</head>\n\
             <body>\n<main>\n<h1>vsphere-descheduler <span class=\"mode\">{title}</span></h1>"
        );
    }

    fn summary(&mut self) {
        let report = self.report;
        if let Some(target) = &report.target {
            let (source, hosts) = target.hosts();
            put!(
                self,
                "<p class=\"target\" id=\"target\">Target: Kubernetes API server <b>{}</b>, \
                 context <b>{}</b>, {source} <b>{}</b></p>",
                escape(&target.api_server),
                escape(target.context.as_deref().unwrap_or("(in-cluster)")),
                escape(&hosts)
            );
        }
        let changing = report
            .plan
            .drs_rules
            .iter()
            .filter(|rule| !matches!(rule.action, DrsAction::Keep { .. }))
            .count();
        put!(
            self,
            "<ul class=\"counts\" id=\"counts\"><li><b>{}</b> label change(s)</li>\
             <li><b>{}</b> eviction(s)</li><li><b>{}</b> not evicted</li>\
             <li><b>{changing}</b> DRS rule change(s)</li><li><b>{}</b> unmapped node(s)</li></ul>",
            report.plan.label_changes.len(),
            report.plan.evictions.len(),
            report.plan.skipped.len(),
            report.plan.unmapped_nodes.len()
        );
        self.skip_codes();
    }

    /// How many candidates stay for each skip code, most first, so a page of many skips says
    /// at once what holds pods back.
    fn skip_codes(&mut self) {
        let mut counts: BTreeMap<SkipCode, usize> = BTreeMap::new();
        for skip in &self.report.plan.skipped {
            *counts.entry(skip.detail.code()).or_default() += 1;
        }
        if counts.is_empty() {
            return;
        }
        let mut counts: Vec<(SkipCode, usize)> = counts.into_iter().collect();
        counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        put!(
            self,
            "<ul class=\"counts\" id=\"skip-codes\"><li>not evicted, by code:</li>"
        );
        for (code, count) in counts {
            put!(self, "<li><b>{count}</b> {code}</li>");
        }
        put!(self, "</ul>");
    }

    fn legend(&mut self) {
        put!(
            self,
            "<p class=\"legend\">Legend: <span class=\"tag evict\">evict</span> a pod leaves \
             <span class=\"tag arrive\">arrives</span> a replacement is expected \
             <span class=\"tag skip\">not evicted</span> a candidate that stays, with why \
             <span class=\"tag moved\">moved</span> DRS moved the node VM since it was labelled \
             <span class=\"tag down\">maintenance / disconnected</span> takes no pods{}</p>",
            match self.risk {
                Some(_) =>
                    " <span class=\"tag r-all\">all</span> → <span class=\"tag \
                            r-tolerated\">tolerated</span> what one ESXi host's failure takes of \
                            a workload, now → after this plan",
                None => "",
            }
        );
    }

    fn hosts(&mut self, placement: &PlacementView) {
        put!(
            self,
            "<section id=\"hosts\">\n<h2>ESXi hosts and node VMs</h2>"
        );
        if placement.clusters.is_empty() {
            put!(
                self,
                "<p class=\"note\">No vSphere inventory: hosts are unknown, host labels are not \
                 trusted.</p>"
            );
        }
        for cluster in &placement.clusters {
            put!(
                self,
                "<h3>vSphere cluster <span class=\"name\">{}</span> ({} hosts)</h3>\n\
                 <div class=\"hosts\">",
                escape(&cluster.name),
                cluster.hosts.len()
            );
            for host in &cluster.hosts {
                self.host(host);
            }
            put!(self, "</div>");
        }
        if !placement.unplaced_nodes.is_empty() {
            put!(
                self,
                "<h3>Nodes on no known host</h3>\n<div class=\"hosts\"><div class=\"host\">"
            );
            self.nodes(&placement.unplaced_nodes);
            put!(self, "</div></div>");
        }
        put!(self, "</section>");
    }

    fn host(&mut self, host: &HostView) {
        let (class, label) = match host.state {
            HostState::Connected => ("host", String::new()),
            state => (
                "host down",
                format!(" <span class=\"tag down\">{}</span>", state.as_str()),
            ),
        };
        put!(
            self,
            "<div class=\"{class}\" data-host=\"{}\"><h4><svg class=\"icon\" viewBox=\"0 0 16 16\" \
             aria-hidden=\"true\"><rect x=\"1\" y=\"3\" width=\"14\" height=\"10\" rx=\"1\"/>\
             <line x1=\"3\" y1=\"6\" x2=\"13\" y2=\"6\"/><line x1=\"3\" y1=\"10\" x2=\"13\" \
             y2=\"10\"/></svg>{}{label}</h4>",
            escape(&host.name),
            escape(&host.name)
        );
        self.host_risk(&host.name);
        self.nodes(&host.nodes);
        if host.other_pods > 0 {
            put!(
                self,
                "<p class=\"others\">{} other pod(s), summarised</p>",
                host.other_pods
            );
        }
        put!(self, "</div>");
    }

    /// Node VMs as cards, folded whole past [`FOLD_PAST`] under what they hold.
    fn nodes(&mut self, nodes: &[NodeView]) {
        self.fold_whole(
            nodes.len(),
            || nodes_summary(nodes),
            |page| {
                put!(page, "<ul class=\"nodes\">");
                for node in nodes {
                    page.node(node);
                }
                put!(page, "</ul>");
            },
        );
    }

    fn node(&mut self, node: &NodeView) {
        let mut notes = String::new();
        if let Some(vm) = &node.vm {
            let _ = write!(notes, "<span class=\"vm\">VM {}</span>", escape(vm));
        }
        if let Some(moved) = &node.moved {
            let _ = write!(
                notes,
                "<span class=\"tag moved\">moved</span> <span class=\"move\">was on {} → is \
                 on {}</span>",
                escape(moved.was.as_deref().unwrap_or("(no label)")),
                escape(moved.now.as_deref().unwrap_or("(no label)"))
            );
        }
        for key in &node.removed_labels {
            let _ = write!(
                notes,
                "<span class=\"tag moved\">label removed</span> <span class=\"move\">{}</span>",
                escape(key)
            );
        }
        if !node.ready {
            notes.push_str("<span class=\"tag down\">NotReady</span>");
        }
        if node.cordoned {
            notes.push_str("<span class=\"tag down\">cordoned</span>");
        }
        let mut flow = format!("<i>{} pod(s)</i>", node.pods);
        if node.leaving > 0 {
            let _ = write!(
                flow,
                " <span class=\"tag evict\">−{} evict</span>",
                node.leaving
            );
        }
        if node.arriving > 0 {
            let _ = write!(
                flow,
                " <span class=\"tag arrive\">+{} arrives</span>",
                node.arriving
            );
        }
        put!(self, "<li><b>{}</b> {notes}{flow}</li>", escape(&node.node));
    }

    fn workloads(&mut self, placement: &PlacementView) {
        let summary = &placement.summary;
        put!(
            self,
            "<section id=\"workloads\">\n<h2>Workloads: replicas per host, before → after</h2>\n\
             <p class=\"note\">{} pod(s) in {} workload(s). Drawn one by one: the workloads the \
             plan touches (it evicts or skips one of their pods){}. Summarised, as other pods \
             per host: {} untouched workload(s) without a host-level constraint{}.</p>",
            summary.pods,
            summary.workloads,
            if summary.constrained_not_drawn > 0 {
                String::new()
            } else {
                ", then the untouched ones with a host-level constraint".to_string()
            },
            summary.unconstrained,
            if summary.constrained_not_drawn > 0 {
                format!(
                    " and {} untouched workload(s) with one (more than {} would not stay \
                     readable)",
                    summary.constrained_not_drawn,
                    super::placement::UNTOUCHED_DRAWN_LIMIT
                )
            } else {
                String::new()
            }
        );
        let mut ranked: Vec<&WorkloadView> = placement.workloads.iter().collect();
        if let Some(risk) = self.risk {
            // Stable: by name among workloads of one class, as drawn without exposure.
            ranked.sort_by_key(|w| risk.rank(&w.name));
        }
        let (touched, untouched): (Vec<&WorkloadView>, Vec<&WorkloadView>) =
            ranked.into_iter().partition(|w| w.touched);
        for (title, group) in [
            ("Touched by the plan", touched),
            ("Unchanged, with a host-level constraint", untouched),
        ] {
            if group.is_empty() {
                continue;
            }
            put!(self, "<h3>{title} ({})</h3>", group.len());
            let rest = self.workloads_folded(group.get(FOLD_PAST..).unwrap_or_default());
            self.ranked(("", ""), &group, &rest, |page, workload| {
                page.workload(workload)
            });
        }
        put!(self, "</section>");
    }

    /// `1458 more workload(s), 212 of them at risk`: the summary of a folded rest.
    fn workloads_folded(&self, rest: &[&WorkloadView]) -> String {
        let at_risk = match self.risk {
            Some(risk) => rest.iter().filter(|w| risk.at_risk(&w.name)).count(),
            None => 0,
        };
        match at_risk {
            0 => format!("{} more workload(s)", rest.len()),
            n => format!("{} more workload(s), {n} of them at risk", rest.len()),
        }
    }

    fn workload(&mut self, workload: &WorkloadView) {
        put!(self, "<article><h4>{}</h4>", escape(&workload.name));
        self.badge(workload);
        if !workload.constraints.is_empty() {
            let words: Vec<String> = workload.constraints.iter().map(|c| escape(c)).collect();
            put!(self, "<p class=\"constraints\">{}</p>", words.join("; "));
        }
        self.out.push_str("<ul class=\"per-host\">");
        self.host_counts(workload);
        self.out.push_str("</ul>\n");
        // Grouped by strategy, named once: a workload's evictions mostly share one.
        let mut named = None;
        for &index in &workload.evictions {
            let entry = self.report.eviction(index);
            let strategy = entry.eviction.strategy;
            if named != Some(strategy) {
                named = Some(strategy);
                put!(self, "<h5>{strategy}:</h5>");
            }
            self.eviction(&entry, false);
        }
        for &index in &workload.skips {
            let skip = &self.report.plan.skipped[index];
            let strategy = skip.strategy;
            if named != Some(strategy) {
                named = Some(strategy);
                put!(self, "<h5>{strategy}:</h5>");
            }
            self.skip(skip, false);
        }
        put!(self, "</article>");
    }

    /// A workload's replicas per host, before → after. A workload on many hosts lists the
    /// hosts that change or hold more than one replica, and counts the others, so that a page
    /// of thousands of workloads on a hundred hosts stays readable (and small).
    fn host_counts(&mut self, workload: &WorkloadView) {
        let all = workload.hosts.len() <= HOSTS_LISTED;
        let mut others: BTreeMap<usize, usize> = BTreeMap::new();
        for count in &workload.hosts {
            let changed = count.before != count.after;
            if !all && !changed && count.before < 2 {
                *others.entry(count.before).or_default() += 1;
                continue;
            }
            let host = count.host.as_deref().unwrap_or("(no known host)");
            let _ = write!(
                self.out,
                "<li{}>{}: {} → {}</li>",
                if changed { " class=mv" } else { "" },
                escape(host),
                count.before,
                count.after
            );
        }
        for (replicas, hosts) in others {
            let _ = write!(
                self.out,
                "<li>{replicas} → {replicas} on each of {hosts} other host(s)</li>"
            );
        }
        if workload.unplaced_after > 0 {
            let _ = write!(
                self.out,
                "<li class=mv>somewhere the scheduler picks: +{}</li>",
                workload.unplaced_after
            );
        }
    }

    /// An eviction; inside its workload's article the pod's namespace goes without saying.
    fn eviction(&mut self, entry: &EvictionEntry, with_namespace: bool) {
        let e = entry.eviction;
        let from = match &e.host {
            Some(host) => format!("{} ({})", escape(&e.node), escape(host)),
            None => escape(&e.node),
        };
        let to = match &e.fits_on {
            Some(target) => format!("fits on {}", escape(target)),
            None => "wherever the scheduler puts it (not checked)".to_string(),
        };
        let tag = if leaves(entry) { "evict" } else { "skip" };
        let note = entry
            .message()
            .map(|m| format!("<br>note: {}", escape(&m)))
            .unwrap_or_default();
        put!(
            self,
            "<p class=ev><span class=\"tag {tag}\">evict: {result}</span> <b>{pod}</b> from \
             {from} → {to}<small>violation: {reason}{note}</small></p>",
            pod = pod_name(&e.namespace, &e.pod, with_namespace),
            result = entry.result().as_str(),
            reason = escape(&e.reason.to_string()),
        );
    }

    fn skip(&mut self, skip: &Skip, with_namespace: bool) {
        put!(
            self,
            "<p class=sk><span class=\"tag skip\">not evicted: {reason}</span> \
             <b>{pod}</b>{node}<small>{detail}</small></p>",
            pod = pod_name(&skip.namespace, &skip.pod, with_namespace),
            reason = skip.reason.as_str(),
            node = skip
                .node
                .as_deref()
                .map(|n| format!(" on {}", escape(n)))
                .unwrap_or_default(),
            detail = escape(&skip.detail.to_string()),
        );
    }

    /// Evictions and skips of pods no drawn workload holds (no placement, or a pod the
    /// snapshot does not have): every action is on the page once.
    fn unattached(&mut self, placement: Option<&PlacementView>) {
        let report = self.report;
        let mut evictions = vec![true; report.plan.evictions.len()];
        let mut skips = vec![true; report.plan.skipped.len()];
        for workload in placement
            .map(|p| p.workloads.as_slice())
            .unwrap_or_default()
        {
            workload
                .evictions
                .iter()
                .for_each(|&i| evictions[i] = false);
            workload.skips.iter().for_each(|&i| skips[i] = false);
        }
        if !evictions.contains(&true) && !skips.contains(&true) {
            return;
        }
        put!(
            self,
            "<section id=\"actions\">\n<h2>Evictions and skips</h2>"
        );
        for (entry, _) in report.evictions().zip(&evictions).filter(|(_, l)| **l) {
            put!(self, "<h5>{}:</h5>", entry.eviction.strategy);
            self.eviction(&entry, true);
        }
        for (skip, _) in report.plan.skipped.iter().zip(&skips).filter(|(_, l)| **l) {
            put!(self, "<h5>{}:</h5>", skip.strategy);
            self.skip(skip, true);
        }
        put!(self, "</section>");
    }

    fn drs_rules(&mut self) {
        if self.report.plan.drs_rules.is_empty() {
            return;
        }
        put!(
            self,
            "<section id=\"drs\">\n<h2>DRS rules: node VMs kept apart</h2>"
        );
        let report = self.report;
        self.fold_whole(
            report.plan.drs_rules.len(),
            || rules_summary(&report.plan.drs_rules),
            |page| {
                put!(page, "<ul class=\"rules\">");
                for entry in report.drs_rules() {
                    page.rule(&entry);
                }
                put!(page, "</ul>");
            },
        );
        put!(self, "</section>");
    }

    /// Each guest cluster's cluster modules with their node VMs, its node VMs in none and why,
    /// and the VMs on no host: when the hosts come from VM Operator's objects.
    fn guest_clusters(&mut self) {
        let Some(shown) = &self.report.guest_clusters else {
            return;
        };
        put!(
            self,
            "<section id=\"guest-clusters\">\n<h2>Guest clusters: cluster modules (soft: DRS \
             keeps their members apart when it can)</h2>"
        );
        for guest in &shown.guest_clusters {
            put!(
                self,
                "<h3>{}/{}</h3>\n<ul class=\"rules\">",
                escape(&guest.namespace),
                escape(&guest.name)
            );
            for module in &guest.modules {
                let vms: Vec<String> = module.vms.iter().map(|vm| escape(vm)).collect();
                put!(
                    self,
                    "<li><b>{}/{}</b> (cluster {}) keeps apart {} VMs: <span class=vms>{}</span></li>",
                    escape(&module.policy),
                    escape(&module.group),
                    escape(&module.cluster_id),
                    module.vms.len(),
                    vms.join(", ")
                );
            }
            for missing in &guest.outside_modules {
                put!(
                    self,
                    "<li class=\"warning\">in no module: <b>{}</b> ({})</li>",
                    escape(missing.vm()),
                    escape(&guest_clusters::missing_reason(missing))
                );
            }
            put!(self, "</ul>");
        }
        if !shown.unplaced_vms.is_empty() {
            put!(self, "<h3>On no ESXi host yet</h3>\n<ul>");
            for vm in &shown.unplaced_vms {
                put!(
                    self,
                    "<li>{}/{} ({})</li>",
                    escape(&vm.namespace),
                    escape(&vm.name),
                    guest_clusters::unplaced_reason(vm.reason)
                );
            }
            put!(self, "</ul>");
        }
        put!(self, "</section>");
    }

    fn rule(&mut self, entry: &DrsRuleEntry) {
        let rule = entry.change;
        let action = rule.action.as_str();
        let result = match entry.result() {
            Outcome::Planned => String::new(),
            result => format!(" <span class=\"tag\">{}</span>", result.as_str()),
        };
        let owner = match (&rule.workload, &rule.node_group) {
            (Some(workload), _) => format!("for workload {}", escape(workload)),
            (None, Some(group)) => format!("for node group {}", escape(group)),
            (None, None) => String::new(),
        };
        // One list per rule, not a chip per VM: a large cluster has thousands of rules.
        let vms: Vec<String> = rule.vms.iter().map(|vm| escape(vm)).collect();
        put!(
            self,
            "<li><span class=\"tag rule-{action}\">\
             {action}</span>{result} <b>{name}</b> (cluster {cluster}) {owner}<br>keeps apart \
             {count} VMs: <span class=vms>{vms}</span></li>",
            name = escape(&rule.name),
            cluster = escape(&rule.cluster),
            count = rule.vms.len(),
            vms = vms.join(", ")
        );
    }

    fn utilization(&mut self) {
        if self.report.plan.utilization.is_empty() {
            return;
        }
        put!(
            self,
            "<section id=\"utilization\">\n<h2>Node utilization against thresholds</h2>\n\
             <p class=\"note\">Bars: usage before the plan (solid) and after (outline); the \
             marks are the thresholds (low) and targetThresholds (high).</p>"
        );
        let nodes = &self.report.plan.utilization;
        self.fold_whole(
            nodes.len(),
            || utilization_summary(nodes),
            |page| {
                put!(
                    page,
                    "<table><thead><tr><th>node</th><th>plugin</th><th>judged</th>\
                     <th>resources</th></tr></thead><tbody>"
                );
                for node in nodes {
                    page.node_utilization(node);
                }
                put!(page, "</tbody></table>");
            },
        );
        put!(self, "</section>");
    }

    fn node_utilization(&mut self, node: &NodeUtilization) {
        let resources: Vec<String> = node.resources.iter().map(resource_bar).collect();
        put!(
            self,
            "<tr data-node=\"{name}\"><td>{name}</td><td>{strategy}</td><td><span class=\"tag \
             class-{class}\">{words}</span></td><td>{bars}</td></tr>",
            name = escape(&node.node),
            strategy = node.strategy,
            class = match node.class {
                UtilizationClass::Underutilized => "under",
                UtilizationClass::AboveTarget => "above",
                UtilizationClass::Appropriate => "ok",
            },
            words = node.class.as_str(),
            bars = resources.join("")
        );
    }

    /// What `body` writes, inside a `<details>` under `summary` when `count` passes
    /// [`FOLD_PAST`]: a list with no rank by risk folds whole.
    fn fold_whole(
        &mut self,
        count: usize,
        summary: impl FnOnce() -> String,
        body: impl FnOnce(&mut Self),
    ) {
        let fold = count > FOLD_PAST;
        if fold {
            put!(
                self,
                "<details class=\"fold\"><summary>{}</summary>",
                summary()
            );
        }
        body(self);
        if fold {
            put!(self, "</details>");
        }
    }

    /// A list ranked by risk, worst first, between `tags` (its opening and closing tags): its
    /// first [`FOLD_PAST`] entries, then the rest inside a `<details>` under `rest`.
    fn ranked<T>(
        &mut self,
        tags: (&str, &str),
        items: &[T],
        rest: &str,
        mut write: impl FnMut(&mut Self, &T),
    ) {
        let (shown, folded) = items.split_at(items.len().min(FOLD_PAST));
        self.out.push_str(tags.0);
        shown.iter().for_each(|item| write(self, item));
        self.out.push_str(tags.1);
        if folded.is_empty() {
            return;
        }
        put!(self, "<details class=\"fold\"><summary>{rest}</summary>");
        self.out.push_str(tags.0);
        folded.iter().for_each(|item| write(self, item));
        self.out.push_str(tags.1);
        put!(self, "</details>");
    }

    fn notes(&mut self) {
        let report = self.report;
        let unmapped = &report.plan.unmapped_nodes;
        if unmapped.is_empty() && report.warnings().next().is_none() && report.errors.is_empty() {
            return;
        }
        put!(self, "<section id=\"notes\">\n<h2>Notes</h2>\n<ul>");
        if !unmapped.is_empty() {
            let names: Vec<String> = unmapped.iter().map(|n| escape(n)).collect();
            put!(
                self,
                "<li>Unmapped nodes (no vSphere VM found; labels untouched): {}</li>",
                names.join(", ")
            );
        }
        for warning in report.warnings() {
            put!(
                self,
                "<li class=\"warning\">warning: {}</li>",
                escape(&warning.to_string())
            );
        }
        for error in &report.errors {
            put!(self, "<li class=\"error\">error: {}</li>", escape(error));
        }
        put!(self, "</ul>\n</section>");
    }
}

/// `50 node VMs, 1500 pods, −12 evict, +9 arrive, 1 moved`: what a folded host column holds.
fn nodes_summary(nodes: &[NodeView]) -> String {
    let sum = |count: fn(&NodeView) -> usize| nodes.iter().map(count).sum::<usize>();
    let mut words = format!("{} node VMs, {} pods", nodes.len(), sum(|node| node.pods));
    let notable = [
        (sum(|node| node.leaving), "−", " evict"),
        (sum(|node| node.arriving), "+", " arrive"),
        (sum(|node| usize::from(node.moved.is_some())), "", " moved"),
        (
            sum(|node| usize::from(!node.ready || node.cordoned)),
            "",
            " NotReady or cordoned",
        ),
    ];
    for (count, sign, what) in notable.into_iter().filter(|(count, ..)| *count > 0) {
        let _ = write!(words, ", {sign}{count}{what}");
    }
    words
}

/// `1452 DRS rules: 3 create, 1449 keep`.
fn rules_summary(rules: &[DrsRuleChange]) -> String {
    let mut actions: BTreeMap<&str, usize> = BTreeMap::new();
    for rule in rules {
        *actions.entry(rule.action.as_str()).or_default() += 1;
    }
    let parts: Vec<String> = actions.iter().map(|(a, n)| format!("{n} {a}")).collect();
    format!("{} DRS rules: {}", rules.len(), parts.join(", "))
}

/// `40 nodes judged: 3 above target, 5 underutilized, 32 appropriately utilized`.
fn utilization_summary(nodes: &[NodeUtilization]) -> String {
    let mut classes: BTreeMap<&str, usize> = BTreeMap::new();
    for node in nodes {
        *classes.entry(node.class.as_str()).or_default() += 1;
    }
    let parts: Vec<String> = classes.iter().map(|(c, n)| format!("{n} {c}")).collect();
    format!("{} nodes judged: {}", nodes.len(), parts.join(", "))
}

/// One resource as a bar of 0–100 % with its usage before and after and threshold marks,
/// followed by the same in words.
fn resource_bar(resource: &ResourceUtilization) -> String {
    let clamp = |percent: f64| percent.clamp(0.0, 100.0);
    let mut marks = format!(
        "<line class=\"low\" x1=\"{low:.1}\" y1=\"0\" x2=\"{low:.1}\" y2=\"10\"/>",
        low = clamp(resource.low)
    );
    let mut words = format!(
        "{} {:.0}% → {:.0}% (low {:.0}%",
        escape(&resource.resource),
        resource.before,
        resource.after,
        resource.low
    );
    if let Some(high) = resource.high {
        let _ = write!(
            marks,
            "<line class=\"high\" x1=\"{high:.1}\" y1=\"0\" x2=\"{high:.1}\" y2=\"10\"/>",
            high = clamp(high)
        );
        let _ = write!(words, ", target {high:.0}%");
    }
    words.push(')');
    format!(
        "<div class=\"resource\"><svg class=\"bar\" viewBox=\"0 0 100 10\" \
         preserveAspectRatio=\"none\" aria-hidden=\"true\"><rect class=\"track\" width=\"100\" \
         height=\"10\"/><rect class=\"before\" width=\"{before:.1}\" height=\"6\" y=\"2\"/>\
         <rect class=\"after\" width=\"{after:.1}\" height=\"6\" y=\"2\"/>{marks}</svg> \
         {words}</div>",
        before = clamp(resource.before),
        after = clamp(resource.after)
    )
}

/// `namespace/name`, or the name alone where the namespace is already said.
fn pod_name(namespace: &str, name: &str, with_namespace: bool) -> String {
    if with_namespace {
        format!("{}/{}", escape(namespace), escape(name))
    } else {
        escape(name)
    }
}

fn heading(mode: Mode) -> &'static str {
    match mode {
        Mode::Plan => "plan (offline: nothing was changed)",
        Mode::DryRun => "dry run (nothing was changed)",
        Mode::Run => "run",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::exposure::{
        DisruptionAllowance, Exposure, ExposureClass, NodeGroupExposure, Spread, WorkloadExposure,
    };
    use crate::plan::{Eviction, EvictionReason, Plan, PodFailure, SkipDetail, SkipReason};
    use crate::policy::PluginKind;
    use crate::report::ReportWarning;
    use crate::report::placement::{ClusterView, HostView};

    /// `pods` pods, all on `host`.
    fn on_one_host(host: &str, pods: usize) -> Spread {
        Spread {
            class: ExposureClass::All,
            worst: Some(host.to_string()),
            worst_pods: pods,
            pods: BTreeMap::from([(host.to_string(), pods)]),
            unplaced: 0,
        }
    }

    /// A workload at risk before and after: all its pods on `host`.
    fn all_on(name: &str, host: &str) -> WorkloadExposure {
        WorkloadExposure {
            workload: name.to_string(),
            pods: 2,
            budget: None,
            ignored_budget: None,
            before: on_one_host(host, 2),
            after: on_one_host(host, 2),
            usable_hosts: 1,
            best_worst_host: 2,
            unavoidable: true,
            drs_rule: None,
            topologies: Vec::new(),
            site: None,
        }
    }

    fn node_card(name: &str) -> NodeView {
        NodeView {
            node: name.to_string(),
            vm: None,
            moved: None,
            removed_labels: Vec::new(),
            ready: true,
            cordoned: false,
            pods: 3,
            leaving: 0,
            arriving: 0,
        }
    }

    fn hostile_report() -> Report {
        let plan = Plan {
            evictions: vec![Eviction {
                namespace: "shop".to_string(),
                pod: "web-<script>alert(1)</script>".to_string(),
                node: "worker-\"a\"".to_string(),
                host: Some("esxi-'1'&co".to_string()),
                strategy: PluginKind::InterPodAntiAffinity,
                profile: "default".to_string(),
                reason: EvictionReason::Failed(PodFailure::Reason("<b>a host</b>".to_string())),
                fits_on: None,
                uid: None,
                grace_period_seconds: None,
                depends_on_labels_of: Vec::new(),
                landing: None,
                paced_as: None,
            }],
            skipped: vec![Skip {
                namespace: "shop".to_string(),
                pod: "<img src=x>".to_string(),
                node: None,
                strategy: PluginKind::InterPodAntiAffinity,
                profile: "default".to_string(),
                reason: SkipReason::Limit,
                detail: SkipDetail::NodeDrainLimit {
                    limit: 1,
                    node: "\"quoted\" & <tagged>".to_string(),
                },
            }],
            ..Plan::default()
        };
        let mut report = Report::planned(Mode::Plan, plan);
        // Policy findings quote the file, which may hold anything.
        report
            .warnings_after_plan
            .push(ReportWarning::Policy("<warning>".to_string()));
        report
    }

    #[test]
    fn text_from_the_cluster_is_escaped_everywhere() {
        let mut report = hostile_report();
        let mut workload = all_on("shop/Deployment/<script>w", "esxi-<h>");
        workload.budget = Some(DisruptionAllowance {
            pdb: "shop/<pdb>".to_string(),
            tolerates: 1,
        });
        workload.drs_rule = Some("<rule>".to_string());
        report.plan.exposure = Some(Exposure {
            workloads: vec![workload],
            node_groups: vec![NodeGroupExposure {
                node_group: "<group>".to_string(),
                nodes: 2,
                class: ExposureClass::All,
                worst_host: Some("esxi-<h>".to_string()),
                worst_host_nodes: 2,
                hosts: BTreeMap::from([("esxi-<h>".to_string(), 2)]),
                unplaced: 0,
                usable_hosts: 1,
                best_worst_host: 2,
                unavoidable: true,
                drs_rule: Some("<group rule>".to_string()),
            }],
            ..Exposure::default()
        });
        let snapshot = crate::snapshot::Snapshot::default();
        report.place(&snapshot, &crate::policy::Policy::default());
        let page = render(&report, report.placement.as_deref());
        assert!(page.contains("id=\"exposure\""), "the exposure is drawn");
        for raw in [
            "<script>",
            "<b>a host",
            "<img src=x>",
            "<tagged>",
            "<warning>",
            "<h>",
            "<pdb>",
            "<rule>",
            "<group",
        ] {
            assert!(!page.contains(raw), "{raw} is not escaped");
        }
        for escaped in [
            "web-&lt;script&gt;alert(1)&lt;/script&gt;",
            "worker-&quot;a&quot;",
            "esxi-&#39;1&#39;&amp;co",
            "&quot;quoted&quot; &amp; &lt;tagged&gt;",
            "shop/Deployment/&lt;script&gt;w",
            "esxi-&lt;h&gt;",
            "shop/&lt;pdb&gt;",
            "&lt;rule&gt;",
            "node group <b>&lt;group&gt;</b>",
        ] {
            assert!(page.contains(escaped), "{escaped} missing");
        }
    }

    #[test]
    fn guest_clusters_are_drawn_with_their_modules_and_names_escaped() {
        use crate::vm_operator::{
            Findings, GuestCluster, MissingModule, Module, UnplacedReason, UnplacedVm,
        };
        let mut report = Report::planned(Mode::Plan, Plan::default());
        assert!(!render(&report, None).contains("id=\"guest-clusters\""));
        report.show_guest_clusters(Some(Findings {
            guest_clusters: vec![GuestCluster {
                namespace: "team-a".to_string(),
                name: "<tkc>".to_string(),
                modules: vec![Module {
                    policy: "tkc-1".to_string(),
                    group: "workers".to_string(),
                    uuid: "52a1".to_string(),
                    cluster_id: "domain-c8".to_string(),
                    vms: vec!["w-<1>".to_string(), "w-2".to_string()],
                }],
                outside_modules: vec![MissingModule::NoGroupAnnotation {
                    vm: "cp-&".to_string(),
                }],
            }],
            unplaced: vec![UnplacedVm {
                namespace: "team-a".to_string(),
                name: "w-3".to_string(),
                reason: UnplacedReason::NotCreated,
            }],
        }));
        let page = render(&report, None);
        for drawn in [
            "id=\"guest-clusters\"",
            "<h3>team-a/&lt;tkc&gt;</h3>",
            "<b>tkc-1/workers</b> (cluster domain-c8) keeps apart 2 VMs",
            "w-&lt;1&gt;, w-2",
            "in no module: <b>cp-&amp;</b> (no vsphere-cluster-module-group annotation)",
            "team-a/w-3 (not created in vSphere yet)",
            "warning: 1 node VM(s) of guest clusters in no cluster module",
        ] {
            assert!(page.contains(drawn), "{drawn} missing");
        }
    }

    /// The stretched-cluster demo's page: the site summary under the host summary, and each
    /// listed workload's busiest site before and after with its classes.
    #[test]
    fn the_site_exposure_is_drawn_beside_the_hosts() {
        let (snapshot, policy) =
            crate::command::demo::story(crate::cli::DemoStory::StretchedCluster)
                .expect("the story reads");
        let report = Report::planned(Mode::Plan, crate::plan::plan(&snapshot, &policy));
        let page = render(&report, None);
        for drawn in [
            "<p class=\"lead\" id=\"site-exposure\">Site-failure exposure: 1 at risk now (1 all), \
             1 after this plan (1 majority)",
            "<b>db/StatefulSet/pg</b> 3 pods",
            "; busiest site: 3 on site-a-hosts → 2 on site-a-hosts (all → majority)",
        ] {
            assert!(page.contains(drawn), "{drawn} missing");
        }
        let (snapshot, mut policy) = (snapshot, policy);
        policy.vsphere.sites = None;
        let report = Report::planned(Mode::Plan, crate::plan::plan(&snapshot, &policy));
        assert!(
            !render(&report, None).contains("site-exposure"),
            "no sites, no line"
        );
    }

    #[test]
    fn a_report_without_placement_still_renders_its_actions_and_notes() {
        let report = hostile_report();
        let page = render(&report, None);
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert!(page.contains("<li class=\"warning\">warning: &lt;warning&gt;</li>"));
        assert!(!page.contains("id=\"hosts\""));
        assert!(page.trim_end().ends_with("</html>"));
    }

    #[test]
    fn skips_are_counted_by_code_most_first() {
        let skip = |pod: &str, reason: SkipReason| Skip {
            namespace: "shop".to_string(),
            pod: pod.to_string(),
            node: None,
            strategy: PluginKind::InterPodAntiAffinity,
            profile: "default".to_string(),
            reason,
            detail: crate::plan::testing::detail_of(reason),
        };
        let plan = Plan {
            skipped: vec![
                skip("a", SkipReason::NoMetrics),
                skip("b", SkipReason::Pdb),
                skip("c", SkipReason::Pdb),
            ],
            ..Plan::default()
        };
        let page = render(&Report::planned(Mode::Plan, plan), None);
        assert!(
            page.contains(
                "<ul class=\"counts\" id=\"skip-codes\"><li>not evicted, by code:</li>\n\
                 <li><b>2</b> pdb-several</li>\n<li><b>1</b> no-metrics</li>\n</ul>"
            ),
            "{page}"
        );
        let none = render(&Report::planned(Mode::Plan, Plan::default()), None);
        assert!(!none.contains("skip-codes"));
    }

    #[test]
    fn a_ranked_list_past_the_fold_shows_its_worst_ten_and_folds_the_rest() {
        let mut report = Report::empty(Mode::Plan);
        let workloads: Vec<WorkloadExposure> = (0..FOLD_PAST + 2)
            .map(|n| all_on(&format!("shop/Deployment/w-{n:02}"), "esxi-1"))
            .collect();
        report.plan.exposure = Some(Exposure {
            workloads,
            ..Exposure::default()
        });
        let page = render(&report, None);
        let at = |text: &str| page.find(text).unwrap_or_else(|| panic!("{text} missing"));
        let fold = at("<details class=\"fold\"><summary>2 more workload(s)</summary>");
        assert!(at("<b>shop/Deployment/w-09</b>") < fold);
        assert!(fold < at("<b>shop/Deployment/w-10</b>"));
        // The one host at risk is not past the fold.
        assert_eq!(page.matches("<details").count(), 1, "{page}");
    }

    #[test]
    fn a_node_card_names_each_label_the_report_removes() {
        let mut node = node_card("w1");
        node.removed_labels = vec!["example.com/<rack>".to_string()];
        let placement = PlacementView {
            clusters: vec![ClusterView {
                name: "c1".to_string(),
                hosts: vec![HostView {
                    name: "esxi-1".to_string(),
                    state: HostState::Connected,
                    nodes: vec![node],
                    other_pods: 0,
                }],
            }],
            ..PlacementView::default()
        };
        let page = render(&Report::empty(Mode::Plan), Some(&placement));
        assert!(
            page.contains(
                "<span class=\"tag moved\">label removed</span> <span \
                 class=\"move\">example.com/&lt;rack&gt;</span>"
            ),
            "{page}"
        );
    }

    #[test]
    fn a_host_with_more_node_vms_than_the_fold_has_them_folded_whole() {
        let host = |name: &str, nodes: usize| HostView {
            name: name.to_string(),
            state: HostState::Connected,
            nodes: (0..nodes)
                .map(|n| node_card(&format!("{name}-node-{n}")))
                .collect(),
            other_pods: 0,
        };
        let placement = PlacementView {
            clusters: vec![ClusterView {
                name: "c1".to_string(),
                hosts: vec![host("esxi-1", FOLD_PAST + 1), host("esxi-2", FOLD_PAST)],
            }],
            ..PlacementView::default()
        };
        let page = render(&Report::empty(Mode::Plan), Some(&placement));
        let column = |name: &str| {
            page.split(&format!("data-host=\"{name}\""))
                .nth(1)
                .and_then(|rest| rest.split("data-host=").next())
                .expect("the host's column")
        };
        assert!(
            column("esxi-1").contains(
                "<details class=\"fold\"><summary>11 node VMs, 33 pods</summary>\n\
                 <ul class=\"nodes\">"
            ),
            "{page}"
        );
        assert!(!column("esxi-2").contains("<details"), "{page}");
        // Without an inventory's exposure, a column says nothing about host failures.
        assert!(!page.contains("if this host fails"), "{page}");
    }
}
