//! The page's host-failure exposure: the summary it opens with (the report's summary line, the
//! workloads per class now → after the plan, the hosts and workloads at risk), what each host's
//! failure takes in its column, and each drawn workload's class.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{FOLD_PAST, Page, escape};
use crate::plan::exposure::{Exposure, ExposureClass, NodeGroupExposure, WorkloadExposure};
use crate::report::exposure_text;
use crate::report::placement::WorkloadView;
use crate::report::risk::{Badge, HostRisk, Loss, Lost, Risk};

/// What a class means, for the summary's key.
const CLASS_WORDS: [(ExposureClass, &str); 4] = [
    (ExposureClass::All, "one host holds every pod"),
    (ExposureClass::Majority, "one host holds more than half"),
    (
        ExposureClass::OverBudget,
        "one host holds more than the PodDisruptionBudget lets go at once",
    ),
    (ExposureClass::Tolerated, "none of these"),
];

impl Page<'_> {
    /// The block the page opens with; nothing without an inventory, where no host is known.
    pub(super) fn exposure(&mut self) {
        let Some(risk) = self.risk else {
            return;
        };
        put!(
            self,
            "<section id=\"exposure\" class=\"exposure\">\n<h2>If one ESXi host fails</h2>\n\
             <p class=\"lead\">{}</p>",
            escape(&exposure_text::summary(risk.exposure))
        );
        if let Some(sites) = exposure_text::site_summary(risk.exposure) {
            put!(
                self,
                "<p class=\"lead\" id=\"site-exposure\">{}</p>",
                escape(&sites)
            );
        }
        self.class_counts(risk);
        self.hosts_at_risk(risk);
        self.workloads_at_risk(risk.exposure);
        self.node_groups_at_risk(risk.exposure);
        put!(self, "</section>");
    }

    /// The hosts whose failure takes too much, ranked (see `Risk::hosts_at_risk`).
    fn hosts_at_risk(&mut self, risk: &Risk) {
        let (now, after) = risk.hosts_counted();
        put!(
            self,
            "<h3>Hosts at risk: {now} now, {after} after this plan</h3>"
        );
        let hosts = risk.hosts_at_risk();
        let rest = format!(
            "{} more host(s) at risk",
            hosts.len().saturating_sub(FOLD_PAST)
        );
        self.ranked(
            ("<ul class=\"at-risk host-list\">", "</ul>\n"),
            &hosts,
            &rest,
            |page, (host, losses)| page.host_at_risk(host, losses),
        );
    }

    /// The workloads the report lists, in its order: the worst after the plan first.
    fn workloads_at_risk(&mut self, exposure: &Exposure) {
        put!(
            self,
            "<h3>Workloads at risk: {} now, {} after this plan</h3>",
            exposure.before.at_risk(),
            exposure.after.at_risk()
        );
        let listed = &exposure.workloads;
        let rest = format!(
            "{} more workload(s)",
            listed.len().saturating_sub(FOLD_PAST)
        );
        self.ranked(
            ("<ul class=\"at-risk workload-list\">", "</ul>\n"),
            listed,
            &rest,
            |page, workload| page.workload_at_risk(workload),
        );
    }

    fn node_groups_at_risk(&mut self, exposure: &Exposure) {
        let groups: Vec<&NodeGroupExposure> = exposure
            .node_groups
            .iter()
            .filter(|g| g.class.at_risk())
            .collect();
        if groups.is_empty() {
            return;
        }
        put!(self, "<h3>Node groups at risk: {}</h3>", groups.len());
        let rest = format!(
            "{} more node group(s)",
            groups.len().saturating_sub(FOLD_PAST)
        );
        self.ranked(
            ("<ul class=\"at-risk\">", "</ul>\n"),
            &groups,
            &rest,
            |page, group| page.node_group_at_risk(group),
        );
    }

    /// Workloads per class, now → after the plan, with what each class means.
    fn class_counts(&mut self, risk: &Risk) {
        let exposure = risk.exposure;
        self.out.push_str("<ul class=\"classes\">");
        for (class, meaning) in CLASS_WORDS {
            let _ = write!(
                self.out,
                "<li>{} <b>{}</b> → <b>{}</b> <small>{meaning}</small></li>",
                tag(class),
                exposure.before.get(class),
                exposure.after.get(class)
            );
        }
        let groups = exposure.node_groups.len();
        let groups_at_risk = exposure
            .node_groups
            .iter()
            .filter(|g| g.class.at_risk())
            .count();
        put!(
            self,
            "</ul>\n<p class=\"note\">Workloads of two or more pods by what one host's failure \
             would take of them, now → after this plan; {groups} node group(s), \
             {groups_at_risk} at risk (the plan moves no node VM).</p>"
        );
    }

    /// `esxi-41: now 1 all, 1 majority; after this plan 1 majority`.
    fn host_at_risk(&mut self, host: &str, losses: &HostRisk) {
        put!(
            self,
            "<li><b>{}</b>: now {}; after this plan {}</li>",
            escape(host),
            class_tally(&losses.now),
            class_tally(&losses.after)
        );
    }

    /// A workload at risk: its classes, budget, busiest host now and after, rule, best spread.
    fn workload_at_risk(&mut self, workload: &WorkloadExposure) {
        let budget = match (&workload.budget, &workload.ignored_budget) {
            (Some(budget), _) => format!(
                ", PodDisruptionBudget {} lets {} go",
                escape(&budget.pdb),
                budget.tolerates
            ),
            (None, Some(ignored)) => format!(", {}", escape(&ignored.to_string())),
            (None, None) => String::new(),
        };
        let busiest = |spread: &crate::plan::exposure::Spread| match &spread.worst {
            Some(host) => format!("{} on {}", spread.worst_pods, escape(host)),
            None => "none on a known host".to_string(),
        };
        let site = match &workload.site {
            Some(site) => format!(
                "; busiest site: {} → {} ({} → {})",
                busiest(&site.before),
                busiest(&site.after),
                site.before.class.as_str(),
                site.after.class.as_str()
            ),
            None => String::new(),
        };
        put!(
            self,
            "<li>{} <b>{}</b> {} pods{budget}; busiest host: {} → {}{}{site}</li>",
            badge(workload.before.class, workload.after.class),
            escape(&workload.workload),
            workload.pods,
            busiest(&workload.before),
            busiest(&workload.after),
            rule_and_best(workload)
        );
    }

    fn node_group_at_risk(&mut self, group: &NodeGroupExposure) {
        let rule = match &group.drs_rule {
            Some(rule) => format!("; DRS rule {} will keep its node VMs apart", escape(rule)),
            None => String::new(),
        };
        let best = match group.unavoidable {
            true => format!(
                "; unavoidable: at best {} on one host, over the {} usable host(s) of its cluster",
                group.best_worst_host, group.usable_hosts
            ),
            false => String::new(),
        };
        put!(
            self,
            "<li>{} node group <b>{}</b> {} nodes, {} of them on {}{rule}{best}</li>",
            tag(group.class),
            escape(&group.node_group),
            group.nodes,
            group.worst_host_nodes,
            escape(group.worst_host.as_deref().unwrap_or("no known host"))
        );
    }

    /// In a host's column: what its failure takes now, and after the plan when that differs.
    pub(super) fn host_risk(&mut self, host: &str) {
        let Some(risk) = self.risk else {
            return;
        };
        match risk.hosts.get(host) {
            None => {
                put!(
                    self,
                    "<p class=\"fails\">if this host fails: nothing at risk</p>"
                );
            }
            Some(losses) => {
                self.losses("if this host fails now", &losses.now);
                if losses.after != losses.now {
                    self.losses("after this plan", &losses.after);
                }
            }
        }
    }

    fn losses(&mut self, when: &str, losses: &[Loss]) {
        if losses.is_empty() {
            put!(self, "<p class=\"fails\">{when}: nothing at risk</p>");
            return;
        }
        put!(self, "<p class=\"fails\">{when}:</p>");
        let rest = format!("{} more at risk", losses.len().saturating_sub(FOLD_PAST));
        self.ranked(
            ("<ul class=\"losses\">", "</ul>\n"),
            losses,
            &rest,
            |page, loss| {
                let (name, unit) = match loss.lost {
                    Lost::Workload(name) => (escape(name), ""),
                    Lost::NodeGroup(name) => (format!("node group {}", escape(name)), " nodes"),
                };
                let _ = write!(
                    page.out,
                    "<li class=r-{class}>{name} loses {} of {}{unit} ({class})</li>",
                    loss.count,
                    loss.of,
                    class = loss.class.as_str()
                );
            },
        );
    }

    /// Under a drawn workload's name: its class now → after, the rule that will keep it apart,
    /// and the best it can be when even that is at risk.
    pub(super) fn badge(&mut self, workload: &WorkloadView) {
        let Some(risk) = self.risk else {
            return;
        };
        let line = match risk.badge(workload) {
            None => return,
            Some(Badge::Tolerated) => badge(ExposureClass::Tolerated, ExposureClass::Tolerated),
            Some(Badge::Listed(listed)) => format!(
                "{}{}",
                badge(listed.before.class, listed.after.class),
                rule_and_best(listed)
            ),
        };
        // Terse: a large page draws thousands; the legend says what the classes are.
        put!(self, "<p class=xp>{line}</p>");
    }
}

/// `<all> → <tolerated>`, each class a tag in its colour.
fn badge(before: ExposureClass, after: ExposureClass) -> String {
    format!("{} → {}", tag(before), tag(after))
}

fn tag(class: ExposureClass) -> String {
    format!(
        "<span class=\"tag r-{class}\">{class}</span>",
        class = class.as_str()
    )
}

/// `; DRS rule … will keep its node VMs apart; unavoidable: …`, as far as either applies.
fn rule_and_best(workload: &WorkloadExposure) -> String {
    let mut words = String::new();
    if let Some(rule) = &workload.drs_rule {
        let _ = write!(
            words,
            "; DRS rule <b>{}</b> will keep its node VMs apart",
            escape(rule)
        );
    }
    if workload.unavoidable {
        let _ = write!(
            words,
            "; unavoidable: at best {} of {} on one host, over the {} host(s) its pods can be \
             on: still {}",
            workload.best_worst_host,
            workload.pods,
            workload.usable_hosts,
            workload.best_class().as_str()
        );
    }
    words
}

/// `1 all, 2 over-budget`, or `nothing at risk`.
fn class_tally(losses: &[Loss]) -> String {
    let mut counts: BTreeMap<ExposureClass, usize> = BTreeMap::new();
    for loss in losses {
        *counts.entry(loss.class).or_default() += 1;
    }
    if counts.is_empty() {
        return "nothing at risk".to_string();
    }
    let parts: Vec<String> = counts
        .iter()
        .map(|(class, n)| format!("{n} {}", tag(*class)))
        .collect();
    parts.join(", ")
}
