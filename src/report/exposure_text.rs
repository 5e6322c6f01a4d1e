//! The text report's host-failure exposure: one summary line, then each workload and node group
//! at risk, now and after the plan.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::plan::exposure::{
    DisruptionAllowance, Exposure, ExposureClass, IgnoredBudget, NodeGroupExposure, Spread,
    WorkloadExposure,
};
use crate::text::escaped;

/// Workloads listed one by one; the JSON report lists every one.
const LISTED: usize = 50;

/// `Host-failure exposure: …` and the entries at risk, then a blank line.
pub fn write(out: &mut String, exposure: &Exposure) {
    let _ = writeln!(out, "{}", summary(exposure));
    if let Some(sites) = site_summary(exposure) {
        let _ = writeln!(out, "{sites}");
    }
    for workload in exposure.workloads.iter().take(LISTED) {
        write_workload(out, workload);
    }
    if exposure.workloads.len() > LISTED {
        let _ = writeln!(
            out,
            "  … and {} more workload(s) at risk (--output json lists every one)",
            exposure.workloads.len() - LISTED
        );
    }
    for group in exposure.node_groups.iter().filter(|g| g.class.at_risk()) {
        write_node_group(out, group);
    }
    out.push('\n');
}

/// `Host-failure exposure: 2 at risk now (1 all, 1 majority), 1 after this plan (1 majority)`:
/// workloads and node groups one host failure would take all, a majority, or more than their
/// budget of.
pub fn summary(exposure: &Exposure) -> String {
    let (now, after) = (exposure.at_risk_before(), exposure.at_risk_after());
    let workloads = exposure.before.at_risk() + exposure.before.tolerated;
    if now == 0 && after == 0 {
        return format!(
            "Host-failure exposure: none at risk; {workloads} workload(s) of two or more pods, {} \
             node group(s) assessed",
            exposure.node_groups.len()
        );
    }
    let groups = |after: bool| {
        let mut counts: BTreeMap<_, usize> = BTreeMap::new();
        let workloads = exposure.workloads.iter().map(|w| match after {
            false => w.before.class,
            true => w.after.class,
        });
        let nodes = exposure.node_groups.iter().map(|g| g.class);
        for class in workloads.chain(nodes).filter(|c| c.at_risk()) {
            *counts.entry(class).or_default() += 1;
        }
        let parts: Vec<String> = counts
            .iter()
            .map(|(class, n)| format!("{n} {}", class.as_str()))
            .collect();
        match parts.is_empty() {
            true => String::new(),
            false => format!(" ({})", parts.join(", ")),
        }
    };
    format!(
        "Host-failure exposure: {now} at risk now{}, {after} after this plan{}; {workloads} \
         workload(s) of two or more pods, {} node group(s) assessed",
        groups(false),
        groups(true),
        exposure.node_groups.len()
    )
}

/// `Site-failure exposure: 1 at risk now (1 majority), 0 after this plan; 3 workload(s) over
/// sites site-a, site-b`: the same classes with the site as the failure domain; `None` without
/// sites.
pub fn site_summary(exposure: &Exposure) -> Option<String> {
    let sites = exposure.sites.as_ref()?;
    let classes = |after: bool| {
        let parts: Vec<String> = ExposureClass::ALL
            .into_iter()
            .filter(|class| class.at_risk())
            .filter_map(|class| {
                let counts = if after { &sites.after } else { &sites.before };
                let n = counts.get(class);
                (n > 0).then(|| format!("{n} {}", class.as_str()))
            })
            .collect();
        match parts.is_empty() {
            true => String::new(),
            false => format!(" ({})", parts.join(", ")),
        }
    };
    Some(format!(
        "Site-failure exposure: {} at risk now{}, {} after this plan{}; {} workload(s) over \
         site(s) {}",
        sites.before.at_risk(),
        classes(false),
        sites.after.at_risk(),
        classes(true),
        sites.before.at_risk() + sites.before.tolerated,
        escaped(&sites.sites.join(", "))
    ))
}

/// A workload's disruption budget in words: the one that counts, else the one ignored and why,
/// else none. The text reports of exposure and what-if both say it so.
pub(super) fn budget_words(
    budget: Option<&DisruptionAllowance>,
    ignored: Option<&IgnoredBudget>,
) -> String {
    match (budget, ignored) {
        (Some(budget), _) => format!(
            "PodDisruptionBudget {} lets {} go at once",
            escaped(&budget.pdb),
            budget.tolerates
        ),
        (None, Some(ignored)) => ignored.to_string(),
        (None, None) => "no PodDisruptionBudget".to_string(),
    }
}

fn write_workload(out: &mut String, workload: &WorkloadExposure) {
    let budget = budget_words(workload.budget.as_ref(), workload.ignored_budget.as_ref());
    let _ = writeln!(
        out,
        "  [{} -> {}] {}  {} pod(s), {budget}",
        workload.before.class.as_str(),
        workload.after.class.as_str(),
        escaped(&workload.workload),
        workload.pods
    );
    let _ = writeln!(out, "      now:   {}", placement(&workload.before));
    let _ = writeln!(out, "      after: {}", placement(&workload.after));
    if let Some(site) = &workload.site {
        let _ = writeln!(
            out,
            "      site:  [{} -> {}] now: {}; after: {}",
            site.before.class.as_str(),
            site.after.class.as_str(),
            placement(&site.before),
            placement(&site.after)
        );
    }
    if let Some(rule) = &workload.drs_rule {
        let _ = writeln!(
            out,
            "      drs:   rule {} will keep its node VMs apart",
            escaped(rule)
        );
    }
    if workload.unavoidable {
        let best = workload.best_class();
        let _ = writeln!(
            out,
            "      best:  {} on the busiest host, spread over the {} host(s) its pods can be on: \
             still {}",
            workload.best_worst_host,
            workload.usable_hosts,
            best.as_str()
        );
    }
}

fn write_node_group(out: &mut String, group: &NodeGroupExposure) {
    let _ = writeln!(
        out,
        "  [{}] node group {}  {} node(s)",
        group.class.as_str(),
        escaped(&group.node_group),
        group.nodes
    );
    let _ = writeln!(
        out,
        "      now:   {}",
        per_host(&group.hosts, group.unplaced, "on no known host")
    );
    if let Some(rule) = &group.drs_rule {
        let _ = writeln!(
            out,
            "      drs:   rule {} will keep its node VMs apart",
            escaped(rule)
        );
    }
    if group.unavoidable {
        let best = group.best_class();
        let _ = writeln!(
            out,
            "      best:  {} on the busiest host, spread over the {} usable host(s) of its \
             cluster: still {}",
            group.best_worst_host,
            group.usable_hosts,
            best.as_str()
        );
    }
}

/// `2 on esxi-41, 1 on esxi-43`, busiest first.
fn placement(spread: &Spread) -> String {
    per_host(
        &spread.pods,
        spread.unplaced,
        "placed where the plan does not say",
    )
}

fn per_host(counts: &BTreeMap<String, usize>, unplaced: usize, unplaced_words: &str) -> String {
    let mut hosts: Vec<(&String, &usize)> = counts.iter().collect();
    hosts.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let mut parts: Vec<String> = hosts
        .iter()
        .map(|(host, n)| format!("{n} on {}", escaped(host)))
        .collect();
    if unplaced > 0 {
        parts.push(format!("{unplaced} {unplaced_words}"));
    }
    parts.join(", ")
}
