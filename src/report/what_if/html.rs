//! The `what-if` report as one self-contained page: the question and the verdict first, then
//! every workload and node group it touches with its class, then what HA, the PodDisruptionBudgets,
//! the scheduler model or DRS make of it. As the plan's page: inline CSS, no script, a
//! Content-Security-Policy that loads nothing, every outside text escaped, every class written
//! out in words beside its colour.

use std::fmt::Write as _;

use super::{
    Unit, WhatIfReport, budget, fate_line, fates_line, outcome, restart_words, rule_impact_line,
    rule_line, tag, verdict,
};
use crate::plan::what_if::{Impact, NodeGroupImpact, WhatIf, WorkloadImpact};
use crate::report::html::{CONTENT_SECURITY_POLICY, escape};

const STYLE: &str = "\
body { margin: 0; font: 14px/1.4 system-ui, -apple-system, \"Segoe UI\", sans-serif; color: #1d2733; }
main { padding: 16px 24px; }
h1 { font-size: 22px; margin: 0 0 8px; } h1 .how { font-weight: normal; color: #5b6775; }
h2 { font-size: 18px; border-bottom: 1px solid #d3d9e0; padding-bottom: 4px; margin-top: 24px; }
table { border-collapse: collapse; } td, th { text-align: left; padding: 3px 10px 3px 0;
  vertical-align: top; overflow-wrap: anywhere; }
.verdict { padding: 8px 12px; border-radius: 4px; border: 1px solid; font-weight: bold; }
.verdict.ok { color: #1a7f37; background: #eefbf1; } .verdict.risk { color: #b42318; background: #fdf0ef; }
.tag { display: inline-block; border-radius: 3px; padding: 0 5px; font-size: 12px;
  border: 1px solid currentColor; white-space: nowrap; }
.tag.all, .tag.majority { color: #b42318; } .tag.over-budget { color: #9a6700; }
.tag.tolerated { color: #1a7f37; } .note { color: #5b6775; }
";

/// The page of a what-if report.
pub fn render(report: &WhatIfReport) -> String {
    let mut out = String::with_capacity(16 * 1024);
    let question = escape(&report.question());
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{CONTENT_SECURITY_POLICY}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>vsphere-descheduler: {question}</title>\n<style>\n{STYLE}</style>\n</head>\n\
         <body>\n<main>\n<h1>{question} <span class=\"how\">({})</span></h1>",
        report.how()
    );
    let tolerated = report.answer.as_ref().is_some_and(WhatIf::tolerated);
    let _ = writeln!(
        out,
        "<p class=\"verdict {}\" id=\"verdict\">{}</p>",
        if tolerated { "ok" } else { "risk" },
        escape(&verdict(report))
    );
    if let Some(answer) = &report.answer {
        hosts(&mut out, answer);
        workloads(&mut out, &answer.workloads);
        node_groups(&mut out, &answer.node_groups);
        consequences(&mut out, answer);
        sites(&mut out, answer);
    }
    if let Some(shown) = &report.guest_clusters {
        // The text report's section as it is: a what-if page reads the modules, it does not
        // act on them.
        let mut text = String::new();
        shown.write_text(&mut text);
        let _ = writeln!(
            out,
            "<section id=\"guest-clusters\">\n<pre>{}</pre>\n</section>",
            escape(text.trim_end())
        );
    }
    for warning in &report.warnings {
        let _ = writeln!(
            out,
            "<p class=\"note\">warning: {}</p>",
            escape(&warning.to_string())
        );
    }
    for error in &report.errors {
        let _ = writeln!(
            out,
            "<p class=\"verdict risk\">error: {}</p>",
            escape(error)
        );
    }
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

fn badge(outcome: &Impact) -> String {
    format!(
        "<span class=\"tag {}\">{}</span>",
        outcome.class.as_str(),
        tag(outcome)
    )
}

fn hosts(out: &mut String, answer: &WhatIf) {
    let _ = writeln!(out, "<h2>Hosts</h2>\n<table id=\"hosts\">");
    for host in &answer.hosts {
        let _ = writeln!(
            out,
            "<tr><td><b>{}</b></td><td>cluster {}</td><td>{}</td><td>{}</td></tr>",
            escape(&host.host),
            escape(&host.cluster),
            if host.in_maintenance_mode {
                "in maintenance mode already"
            } else if host.usable {
                "usable now"
            } else {
                "not connected now"
            },
            match host.nodes.is_empty() {
                true => "no Kubernetes node".to_string(),
                false => format!("nodes {}", escape(&host.nodes.join(", "))),
            }
        );
    }
    out.push_str("</table>\n");
}

fn workloads(out: &mut String, workloads: &[WorkloadImpact]) {
    let _ = writeln!(out, "<h2>Workloads</h2>");
    if workloads.is_empty() {
        out.push_str("<p class=\"note\">None touched.</p>\n");
        return;
    }
    out.push_str("<table id=\"workloads\">\n");
    for workload in workloads {
        // The text report's sentences; `escaped` there leaves nothing HTML would read as markup.
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td><b>{}</b></td><td>{}</td><td>{}</td></tr>",
            badge(&workload.outcome),
            escape(&workload.workload),
            escape(&outcome(&workload.outcome, workload.pods, Unit::Pods)),
            escape(&budget(workload))
        );
        if let Some(fates) = &workload.comes_back {
            let _ = writeln!(
                out,
                "<tr><td></td><td></td><td colspan=\"2\" class=\"note\">comes back: {}</td></tr>",
                escape(&fates_line(fates))
            );
        }
    }
    out.push_str("</table>\n");
}

fn node_groups(out: &mut String, groups: &[NodeGroupImpact]) {
    if groups.is_empty() {
        return;
    }
    let _ = writeln!(out, "<h2>Node groups</h2>\n<table id=\"node-groups\">");
    for group in groups {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td><b>{}</b></td><td>{}</td></tr>",
            badge(&group.outcome),
            escape(&group.node_group),
            escape(&outcome(&group.outcome, group.nodes, Unit::Nodes))
        );
    }
    out.push_str("</table>\n");
}

/// PDBs, rescheduling and HA after a failure; rules and capacity for maintenance.
fn consequences(out: &mut String, answer: &WhatIf) {
    if !answer.pdbs.is_empty() {
        let _ = writeln!(out, "<h2>PodDisruptionBudgets</h2>\n<ul id=\"pdbs\">");
        for pdb in &answer.pdbs {
            let _ = writeln!(
                out,
                "<li><b>{}</b> loses {} ready pod(s), allows {}{}</li>",
                escape(&pdb.pdb),
                pdb.lost,
                pdb.disruptions_allowed,
                if pdb.breached {
                    ": <b>breached</b>"
                } else {
                    ""
                }
            );
        }
        out.push_str("</ul>\n");
    }
    if let Some(r) = &answer.rescheduling {
        let _ = writeln!(
            out,
            "<h2>Rescheduling</h2>\n<p id=\"rescheduling\">{} of {} lost pod(s) fit on the \
             remaining nodes.</p>",
            r.placed, r.pods
        );
        for unplaced in &r.unplaced {
            let _ = writeln!(
                out,
                "<p class=\"note\">{}: {}</p>",
                escape(&unplaced.pod),
                escape(&unplaced.reason.to_string())
            );
        }
    }
    for ha in &answer.ha {
        let _ = writeln!(
            out,
            "<h2>vSphere HA, cluster {}</h2>\n<p class=\"ha\"><b>{}</b>: {}</p>",
            escape(&ha.cluster),
            restart_words(ha.restart),
            escape(&ha.detail.to_string())
        );
        if !ha.node_vms.is_empty() {
            let _ = writeln!(out, "<p>Node VMs: {}</p>", escape(&ha.node_vms.join(", ")));
        }
        if !ha.rules.is_empty() {
            out.push_str("<ul class=\"ha-rules\">\n");
            for rule in &ha.rules {
                let _ = writeln!(
                    out,
                    "<li>rule <b>{}</b>: {}</li>",
                    escape(&rule.rule),
                    escape(&rule_line(ha, rule))
                );
            }
            out.push_str("</ul>\n");
        }
    }
    if !answer.drs_rules.is_empty() {
        let _ = writeln!(out, "<h2>DRS rules of ours</h2>\n<ul id=\"rules\">");
        for rule in &answer.drs_rules {
            let _ = writeln!(out, "<li>{}</li>", escape(&rule_impact_line(rule)));
        }
        out.push_str("</ul>\n");
    }
    if let Some(c) = &answer.capacity {
        let _ = writeln!(
            out,
            "<h2>Capacity</h2>\n<p id=\"capacity\">Cluster {}: {} → {} usable hosts for {} node \
             VMs, {} moving.{}</p>",
            escape(&c.cluster),
            c.usable_hosts_now,
            c.usable_hosts_after,
            c.node_vms,
            c.moving_vms.len(),
            if c.evacuable {
                ""
            } else {
                " No other usable host: maintenance cannot complete."
            }
        );
    }
}

/// What HA does with a failed site's node VMs, or what its maintenance moves.
fn sites(out: &mut String, answer: &WhatIf) {
    if let Some(failover) = &answer.site_failover {
        let _ = writeln!(
            out,
            "<h2>Site {} failover by VM/Host rules</h2>\n<p class=\"note\">Other site(s): {}</p>\n\
             <ul id=\"site-failover\">",
            escape(&failover.site),
            escape(&failover.other_sites.join(", "))
        );
        for vm in &failover.vms {
            let _ = writeln!(
                out,
                "<li><b>{}</b> (node {}, cluster {}) <span class=\"tag\">{}</span> {}</li>",
                escape(&vm.vm),
                escape(&vm.node),
                escape(&vm.cluster),
                vm.fate.as_str(),
                escape(&fate_line(vm))
            );
        }
        out.push_str("</ul>\n");
    }
    if let Some(site) = &answer.site_maintenance {
        let _ = writeln!(
            out,
            "<h2>Site {} maintenance</h2>\n<p id=\"site-maintenance\">{} node VM(s) move to {} \
             usable host(s) of site(s) {}.{}</p>",
            escape(&site.site),
            site.moving_vms.len(),
            site.hosts_left,
            escape(&site.other_sites.join(", ")),
            if site.evacuable {
                ""
            } else {
                " Maintenance cannot complete."
            }
        );
        out.push_str("<ul class=\"site-rules\">\n");
        for blocked in &site.blocked {
            let _ = writeln!(
                out,
                "<li><b>{}</b>: must rule {} keeps it on the site</li>",
                escape(&blocked.vm),
                escape(&blocked.rule)
            );
        }
        for broken in &site.should_rules_broken {
            let _ = writeln!(
                out,
                "<li><b>{}</b>: DRS moves it against should rule {}</li>",
                escape(&broken.vm),
                escape(&broken.rule)
            );
        }
        out.push_str("</ul>\n");
    }
}
