//! The `what-if` report: the answer of `plan::what_if` with how it was got (offline or live),
//! its warnings and errors, as text, one JSON document, or one HTML page (`html`).

mod html;

use std::fmt::Write as _;

use serde::Serialize;

use super::{GuestClusters, Mode, OutputFormat, ReportWarning, Target};
use crate::plan::what_if::{
    Fate, HaImpact, HaRule, Impact, KeptApartBy, NodeGroupImpact, PodFates, Restart, RuleImpact,
    Scenario, VmFailover, VmHostRuleKind, WhatIf, WorkloadImpact,
};
use crate::text::escaped;

/// Exit code of `what-if` when a workload or node group would be left `all`, `majority` or
/// `over-budget`: distinct from 1 (a backend failed) and 2 (invalid input), so a rolling-upgrade
/// pipeline can gate on it.
pub const AT_RISK: u8 = 3;

/// The `what-if` document.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WhatIfReport {
    pub api_version: &'static str,
    pub kind: &'static str,
    /// `plan` offline, `dry-run` live.
    pub mode: Mode,
    /// The answer; absent when the question could not be answered (`errors` say why).
    #[serde(flatten)]
    pub answer: Option<WhatIf>,
    /// Guest clusters' cluster modules and the VMs on no host (`guestClusters`,
    /// `unplacedVms`), when the hosts come from VM Operator's objects; absent otherwise.
    #[serde(flatten)]
    pub guest_clusters: Option<GuestClusters>,
    pub warnings: Vec<ReportWarning>,
    pub errors: Vec<String>,
    /// 0 every workload and node group stays tolerated, 3 some would not, 1 a backend failed,
    /// 2 invalid input.
    pub exit_code: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
}

impl WhatIfReport {
    pub fn new(mode: Mode, answer: WhatIf) -> WhatIfReport {
        let exit_code = if answer.tolerated() { 0 } else { AT_RISK };
        WhatIfReport {
            api_version: "vsphere-descheduler.io/v1alpha1",
            kind: "WhatIf",
            mode,
            answer: Some(answer),
            guest_clusters: None,
            warnings: Vec::new(),
            errors: Vec::new(),
            exit_code,
            target: None,
        }
    }

    /// A report of a question that could not be answered, and why.
    pub fn failed(mode: Mode, errors: Vec<String>, exit_code: u8) -> WhatIfReport {
        WhatIfReport {
            api_version: "vsphere-descheduler.io/v1alpha1",
            kind: "WhatIf",
            mode,
            answer: None,
            guest_clusters: None,
            warnings: Vec::new(),
            errors,
            exit_code,
            target: None,
        }
    }

    /// Adds what the Supervisor found beside the hosts (`None`: the hosts do not come from VM
    /// Operator's objects), with the warning of node VMs in no cluster module.
    pub fn show_guest_clusters(&mut self, findings: Option<crate::vm_operator::Findings>) {
        let shown = findings.map(GuestClusters::from);
        self.warnings
            .extend(shown.as_ref().and_then(GuestClusters::warning));
        self.guest_clusters = shown;
    }

    /// Write the report to stdout in the chosen format.
    pub fn print(&self, format: OutputFormat) -> std::io::Result<()> {
        super::print_as(self, format, || self.to_text(), || html::render(self))
    }

    /// The question in words: `What if esxi-41 fails`.
    pub fn question(&self) -> String {
        match self.answer.as_ref().map(|a| &a.scenario) {
            Some(Scenario::HostsFail(hosts)) if hosts.len() == 1 => {
                format!("What if {} fails", hosts[0])
            }
            Some(Scenario::HostsFail(hosts)) => format!("What if {} fail", hosts.join(" and ")),
            Some(Scenario::Maintenance(host)) => {
                format!("What if {host} enters maintenance mode")
            }
            Some(Scenario::SiteFails(site)) => format!("What if site {site} fails"),
            Some(Scenario::SiteMaintenance(site)) => {
                format!("What if every host of site {site} enters maintenance mode")
            }
            None => "What if".to_string(),
        }
    }

    /// `offline: nothing was changed` or `live: nothing was changed`.
    pub fn how(&self) -> &'static str {
        match self.mode {
            Mode::Plan => "offline: nothing was changed",
            _ => "live: nothing was changed",
        }
    }

    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{} ({})\n", escaped(&self.question()), self.how());
        if let Some(target) = &self.target {
            let _ = writeln!(out, "Target: {}\n", target.describe());
        }
        if let Some(answer) = &self.answer {
            write_answer(&mut out, answer);
        }
        if let Some(guest_clusters) = &self.guest_clusters {
            guest_clusters.write_text(&mut out);
        }
        for warning in &self.warnings {
            let _ = writeln!(out, "warning: {}", escaped(&warning.to_string()));
        }
        for error in &self.errors {
            let _ = writeln!(out, "error: {}", escaped(error));
        }
        let _ = writeln!(out, "{}", verdict(self));
        out
    }
}

/// `Verdict: …` with the exit code.
pub fn verdict(report: &WhatIfReport) -> String {
    match &report.answer {
        Some(answer) if answer.tolerated() => {
            "Verdict: every workload and node group stays tolerated (exit 0)".to_string()
        }
        Some(answer) => format!(
            "Verdict: {} workload(s) or node group(s) would be at risk (exit {})",
            answer.at_risk, report.exit_code
        ),
        None => format!("Verdict: no answer (exit {})", report.exit_code),
    }
}

fn write_answer(out: &mut String, answer: &WhatIf) {
    let _ = writeln!(out, "Hosts");
    for host in &answer.hosts {
        let state = match (host.usable, host.in_maintenance_mode) {
            (_, true) => "in maintenance mode already",
            (true, false) => "usable now",
            (false, false) => "not connected now",
        };
        let nodes = match host.nodes.is_empty() {
            true => "no Kubernetes node".to_string(),
            false => format!("nodes {}", escaped(&host.nodes.join(", "))),
        };
        let _ = writeln!(
            out,
            "  {}  (cluster {}, {state}): {nodes}",
            escaped(&host.host),
            escaped(&host.cluster)
        );
    }
    out.push('\n');
    write_workloads(out, answer);
    write_node_groups(out, &answer.node_groups);
    write_failure(out, answer);
    write_site_failover(out, answer);
    write_maintenance(out, answer);
    write_site_maintenance(out, answer);
}

fn write_workloads(out: &mut String, answer: &WhatIf) {
    let at_risk = answer
        .workloads
        .iter()
        .filter(|w| w.outcome.class.at_risk())
        .count();
    if answer.workloads.is_empty() {
        let _ = writeln!(out, "Workloads: none touched\n");
        return;
    }
    let _ = writeln!(
        out,
        "Workloads ({} touched, {at_risk} at risk)",
        answer.workloads.len()
    );
    for workload in &answer.workloads {
        let _ = writeln!(
            out,
            "  [{}] {}  {}, {}",
            tag(&workload.outcome),
            escaped(&workload.workload),
            outcome(&workload.outcome, workload.pods, Unit::Pods),
            budget(workload)
        );
        if let Some(fates) = &workload.comes_back {
            let _ = writeln!(out, "      comes back: {}", fates_line(fates));
        }
    }
    out.push('\n');
}

/// `2 return with their node VM(s) (HA capacity reserved), 1 stay(s) down with their node
/// VM(s)`: a site failure's lost pods by what HA does with their node VMs.
pub fn fates_line(fates: &PodFates) -> String {
    let parts: Vec<String> = [
        (
            fates.restarted,
            "return with their node VM(s) (HA capacity reserved)",
        ),
        (
            fates.if_capacity_allows,
            "return with their node VM(s) if HA capacity allows",
        ),
        (fates.unknown, "on node VM(s) whose HA was not observed"),
        (fates.stay_down, "stay(s) down with their node VM(s)"),
    ]
    .into_iter()
    .filter(|(count, _)| *count > 0)
    .map(|(count, words)| format!("{count} {words}"))
    .collect();
    match parts.is_empty() {
        true => "nothing lost".to_string(),
        false => parts.join(", "),
    }
}

/// `all` for a certain outcome, `majority at worst` for a bound.
fn tag(outcome: &Impact) -> String {
    match outcome.exact {
        true => outcome.class.as_str().to_string(),
        false => format!("{} at worst", outcome.class.as_str()),
    }
}

/// What a workload's pods are counted in, or a node group's nodes.
#[derive(Clone, Copy)]
enum Unit {
    Pods,
    Nodes,
}

/// `loses 2 of 3 pod(s)`, or what moves and the busiest host then, with the rule that keeps
/// the VMs apart.
fn outcome(outcome: &Impact, total: usize, unit: Unit) -> String {
    let (things, movers) = match unit {
        Unit::Pods => ("pod(s)", "pod(s) move with their VMs"),
        Unit::Nodes => ("node(s)", "node VM(s) move"),
    };
    if let Some(lost) = outcome.lost {
        return format!("loses {lost} of {total} {things}");
    }
    let Some(bound) = outcome.busiest_host else {
        return format!("none of its {total} {things} moves");
    };
    let busiest = match bound.at_least == bound.at_most {
        true => bound.at_most.to_string(),
        false => format!("{} to {}", bound.at_least, bound.at_most),
    };
    let kept = match &outcome.kept_apart_by {
        Some(KeptApartBy::Rule(rule)) => format!(" (rule {} keeps its VMs apart)", escaped(rule)),
        Some(KeptApartBy::Module(module)) => format!(
            " (cluster module {} keeps its VMs apart, DRS permitting)",
            escaped(module)
        ),
        None => String::new(),
    };
    format!(
        "{} {movers}; the busiest host then holds {busiest} of {total}{kept}",
        outcome.moving.unwrap_or(0)
    )
}

/// A touched workload's budget in words, as the exposure report says it.
fn budget(workload: &WorkloadImpact) -> String {
    super::exposure_text::budget_words(workload.budget.as_ref(), workload.ignored_budget.as_ref())
}

fn write_node_groups(out: &mut String, groups: &[NodeGroupImpact]) {
    if groups.is_empty() {
        return;
    }
    let _ = writeln!(out, "Node groups");
    for group in groups {
        let _ = writeln!(
            out,
            "  [{}] {}  {}",
            tag(&group.outcome),
            escaped(&group.node_group),
            outcome(&group.outcome, group.nodes, Unit::Nodes)
        );
    }
    out.push('\n');
}

fn write_failure(out: &mut String, answer: &WhatIf) {
    if !answer.pdbs.is_empty() {
        let _ = writeln!(out, "PodDisruptionBudgets");
        for pdb in &answer.pdbs {
            let _ = writeln!(
                out,
                "  {}  loses {} ready pod(s), allows {}{}",
                escaped(&pdb.pdb),
                pdb.lost,
                pdb.disruptions_allowed,
                if pdb.breached { ": breached" } else { "" }
            );
        }
        out.push('\n');
    }
    if let Some(rescheduling) = &answer.rescheduling {
        let _ = writeln!(
            out,
            "Rescheduling: {} of {} lost pod(s) fit on the remaining nodes",
            rescheduling.placed, rescheduling.pods
        );
        for unplaced in &rescheduling.unplaced {
            let _ = writeln!(
                out,
                "  [unplaced] {}  {}",
                escaped(&unplaced.pod),
                escaped(&unplaced.reason.to_string())
            );
        }
        if !rescheduling.not_recreated.is_empty() {
            let _ = writeln!(
                out,
                "  not recreated (no controller): {}",
                escaped(&rescheduling.not_recreated.join(", "))
            );
        }
        out.push('\n');
    }
    for ha in &answer.ha {
        write_ha(out, ha);
    }
}

fn write_ha(out: &mut String, ha: &HaImpact) {
    let _ = writeln!(
        out,
        "vSphere HA (cluster {}): {}",
        escaped(&ha.cluster),
        restart_words(ha.restart)
    );
    let _ = writeln!(out, "  {}", escaped(&ha.detail.to_string()));
    if !ha.node_vms.is_empty() {
        let _ = writeln!(out, "  node VMs: {}", escaped(&ha.node_vms.join(", ")));
    }
    for rule in &ha.rules {
        let _ = writeln!(
            out,
            "  rule {}: {}",
            escaped(&rule.rule),
            escaped(&rule_line(ha, rule))
        );
    }
    out.push('\n');
}

/// Where HA may restart a rule's VMs, in words.
pub fn rule_line(ha: &HaImpact, rule: &HaRule) -> String {
    let hosts = rule.other_hosts.join(", ");
    let vms = rule.vms.join(", ");
    let why_not = match (ha.restart, ha.respects_anti_affinity_rules) {
        (Restart::Unknown, _) => "HA's configuration was not observed",
        (_, Some(false)) => "it is told not to respect anti-affinity rules during failover",
        _ => "das.respectVmVmAntiAffinityRules is not set",
    };
    // With every VM of the rule down there is no other host to keep them from: what the rule
    // still decides is whether they may come back on one host together.
    match (rule.held, rule.other_hosts.is_empty()) {
        (true, false) => format!("HA will not restart {vms} on {hosts}"),
        (false, false) => {
            format!("HA may restart {vms} on {hosts}, next to another VM of the rule: {why_not}")
        }
        (true, true) => format!(
            "every VM of the rule is on a failed host ({vms}): HA will not restart two of them \
             on one host"
        ),
        (false, true) => format!(
            "every VM of the rule is on a failed host ({vms}): HA may restart them on one host \
             together: {why_not}"
        ),
    }
}

pub fn restart_words(restart: Restart) -> &'static str {
    match restart {
        Restart::Unknown => "unknown",
        Restart::HaDisabled => "the node VMs stay down",
        Restart::PriorityDisabled => "the node VMs are not restarted",
        Restart::CapacityReserved => "the node VMs are restarted on other hosts",
        Restart::BestEffort => "the node VMs are restarted where capacity allows",
    }
}

/// `rule  3 VM(s), 2 host(s) left: cannot hold; moving: worker-d`, unescaped.
fn rule_impact_line(rule: &RuleImpact) -> String {
    let moving = match rule.moving.is_empty() {
        true => String::new(),
        false => format!("; moving: {}", rule.moving.join(", ")),
    };
    let holds = if rule.satisfiable {
        "still holds"
    } else {
        "cannot hold"
    };
    format!(
        "{}  {} VM(s), {} host(s) left: {holds}{moving}",
        rule.rule, rule.vms, rule.hosts_left
    )
}

fn write_maintenance(out: &mut String, answer: &WhatIf) {
    if !answer.drs_rules.is_empty() {
        let _ = writeln!(out, "DRS rules of ours");
        for rule in &answer.drs_rules {
            let _ = writeln!(out, "  {}", escaped(&rule_impact_line(rule)));
        }
        out.push('\n');
    }
    if let Some(capacity) = &answer.capacity {
        let _ = writeln!(
            out,
            "Capacity (cluster {}): {} -> {} usable host(s) for {} node VM(s), {} of them moving; \
             DRS {}{}\n",
            escaped(&capacity.cluster),
            capacity.usable_hosts_now,
            capacity.usable_hosts_after,
            capacity.node_vms,
            capacity.moving_vms.len(),
            if capacity.drs_fully_automated {
                "moves them by itself"
            } else if !capacity.drs_observed {
                "is not observed (VKS requires it fully automated: taken to move them by itself)"
            } else {
                "is not fully automated: its recommendations must be applied"
            },
            if capacity.evacuable {
                ""
            } else {
                "; no other usable host: maintenance cannot complete"
            }
        );
    }
}

fn write_site_failover(out: &mut String, answer: &WhatIf) {
    let Some(failover) = &answer.site_failover else {
        return;
    };
    let others = match failover.other_sites.is_empty() {
        true => "no other site has a usable host".to_string(),
        false => format!(
            "other site(s): {}",
            escaped(&failover.other_sites.join(", "))
        ),
    };
    let _ = writeln!(
        out,
        "Site {} failover by VM/Host rules ({others})",
        escaped(&failover.site)
    );
    if failover.vms.is_empty() {
        let _ = writeln!(out, "  no node VM on the site");
    }
    for vm in &failover.vms {
        let _ = writeln!(
            out,
            "  [{}] {} (node {}, cluster {}): {}",
            vm.fate.as_str(),
            escaped(&vm.vm),
            escaped(&vm.node),
            escaped(&vm.cluster),
            escaped(&fate_line(vm))
        );
    }
    out.push('\n');
}

/// What becomes of a failed site's node VM, in words, unescaped.
pub fn fate_line(vm: &VmFailover) -> String {
    let rule = |kind: VmHostRuleKind| vm.rules.iter().find(|r| r.kind == kind && !r.holds);
    let place = match vm.sites.is_empty() {
        true => vm.hosts.join(", "),
        false => format!("site {} ({})", vm.sites.join(", "), vm.hosts.join(", ")),
    };
    let broken = match rule(VmHostRuleKind::Should) {
        Some(should) => format!(", breaking should rule {}", should.rule),
        None => String::new(),
    };
    match vm.fate {
        Fate::Restarted => format!("HA restarts it on {place}{broken}"),
        Fate::RestartedIfCapacityAllows => {
            format!("HA restarts it on {place} if capacity allows{broken}")
        }
        Fate::Unknown => {
            format!("HA's configuration was not observed; its rules allow {place}{broken}")
        }
        Fate::HeldDownByRule => match rule(VmHostRuleKind::Must) {
            Some(must) => format!(
                "must rule {} allows it only on the failed site: it stays down",
                must.rule
            ),
            None => "its must rules allow no host left: it stays down".to_string(),
        },
        Fate::NotRestarted => "HA restarts nothing in its cluster: it stays down".to_string(),
        Fate::NoHostLeft => "no usable host is left in its cluster: it stays down".to_string(),
    }
}

fn write_site_maintenance(out: &mut String, answer: &WhatIf) {
    let Some(site) = &answer.site_maintenance else {
        return;
    };
    let _ = writeln!(
        out,
        "Site {} maintenance: {} node VM(s) move to {} usable host(s) of site(s) {}{}",
        escaped(&site.site),
        site.moving_vms.len(),
        site.hosts_left,
        escaped(&site.other_sites.join(", ")),
        if site.evacuable {
            ""
        } else {
            "; maintenance cannot complete"
        }
    );
    if !site.moving_vms.is_empty() {
        let _ = writeln!(out, "  moving: {}", escaped(&site.moving_vms.join(", ")));
    }
    for blocked in &site.blocked {
        let _ = writeln!(
            out,
            "  [blocked] {}  must rule {} keeps it on the site",
            escaped(&blocked.vm),
            escaped(&blocked.rule)
        );
    }
    for broken in &site.should_rules_broken {
        let _ = writeln!(
            out,
            "  [should rule broken] {}  DRS moves it against should rule {}",
            escaped(&broken.vm),
            escaped(&broken.rule)
        );
    }
    out.push('\n');
}
