//! What the HTML view says about host-failure exposure, gathered from the report's `exposure`:
//! what each ESXi host's failure would take now and after the plan, which hosts are at risk,
//! and the class of each drawn workload. Pure, and it judges nothing itself: the classes are
//! the plan's (`plan/exposure.rs`), applied to one host at a time.

use std::cmp::Reverse;
use std::collections::BTreeMap;

use super::placement::WorkloadView;
use crate::plan::exposure::{Exposure, ExposureClass, Spread, WorkloadExposure};

/// The exposure of one report, arranged by host and by workload.
#[derive(Clone, Debug, PartialEq)]
pub struct Risk<'a> {
    pub exposure: &'a Exposure,
    /// Every host whose failure takes too much of something, now or after the plan.
    pub hosts: BTreeMap<&'a str, HostRisk<'a>>,
    workloads: BTreeMap<&'a str, &'a WorkloadExposure>,
}

/// What one host's failure takes: each workload or node group it takes too much of.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostRisk<'a> {
    /// Worst first.
    pub now: Vec<Loss<'a>>,
    /// The same after the plan; node groups as now (the plan moves no node VM).
    pub after: Vec<Loss<'a>>,
}

/// `lost` of `of` pods (or nodes) gone with one host, and what that makes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loss<'a> {
    pub lost: Lost<'a>,
    pub count: usize,
    pub of: usize,
    pub class: ExposureClass,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Lost<'a> {
    /// `namespace/Kind/name`.
    Workload(&'a str),
    NodeGroup(&'a str),
}

/// The class a drawn workload gets on the page.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Badge<'a> {
    /// At risk before or after: the report lists it.
    Listed(&'a WorkloadExposure),
    /// Two or more pods, not listed: the plan counted it tolerated before and after.
    Tolerated,
}

impl<'a> Risk<'a> {
    pub fn new(exposure: &'a Exposure) -> Risk<'a> {
        let mut hosts: BTreeMap<&str, HostRisk> = BTreeMap::new();
        for workload in &exposure.workloads {
            let tolerates = workload.budget.as_ref().map(|b| b.tolerates);
            let lost = Lost::Workload(&workload.workload);
            for (host, loss) in losses(&workload.before, lost, tolerates) {
                hosts.entry(host).or_default().now.push(loss);
            }
            for (host, loss) in losses(&workload.after, lost, tolerates) {
                hosts.entry(host).or_default().after.push(loss);
            }
        }
        for group in &exposure.node_groups {
            let lost = Lost::NodeGroup(&group.node_group);
            let total = group.nodes;
            for (host, &count) in &group.hosts {
                let class = ExposureClass::of(total, count, None);
                if class.at_risk() {
                    let loss = Loss {
                        lost,
                        count,
                        of: total,
                        class,
                    };
                    let host = hosts.entry(host.as_str()).or_default();
                    host.now.push(loss);
                    host.after.push(loss);
                }
            }
        }
        for host in hosts.values_mut() {
            host.now.sort_by_key(Loss::rank);
            host.after.sort_by_key(Loss::rank);
        }
        let workloads = exposure
            .workloads
            .iter()
            .map(|w| (w.workload.as_str(), w))
            .collect();
        Risk {
            exposure,
            hosts,
            workloads,
        }
    }

    /// The class a drawn workload shows: none when the plan does not judge it (a DaemonSet, a
    /// pod without a controller) or it has fewer than two pods.
    pub fn badge(&self, workload: &WorkloadView) -> Option<Badge<'a>> {
        if let Some(listed) = self.workloads.get(workload.name.as_str()) {
            return Some(Badge::Listed(listed));
        }
        (workload.assessed && workload.pods() >= 2).then_some(Badge::Tolerated)
    }

    /// Whether the report lists the workload: at risk now or after the plan.
    pub fn at_risk(&self, workload: &str) -> bool {
        self.workloads.contains_key(workload)
    }

    /// The classes a workload sorts by, worst after the plan first: tolerated when not listed.
    pub fn rank(&self, workload: &str) -> (ExposureClass, ExposureClass) {
        self.workloads
            .get(workload)
            .map_or((ExposureClass::Tolerated, ExposureClass::Tolerated), |w| {
                (w.after.class, w.before.class)
            })
    }

    /// The hosts at risk, the worst after the plan first, then the worst now; among equals the
    /// one whose failure takes more.
    pub fn hosts_at_risk(&self) -> Vec<(&'a str, &HostRisk<'a>)> {
        let mut hosts: Vec<(&str, &HostRisk)> = self.hosts.iter().map(|(h, r)| (*h, r)).collect();
        hosts.sort_by_key(|(name, risk)| {
            (
                worst(&risk.after),
                Reverse(risk.after.len()),
                worst(&risk.now),
                Reverse(risk.now.len()),
                *name,
            )
        });
        hosts
    }

    /// How many hosts take too much of something with them, now and after the plan.
    pub fn hosts_counted(&self) -> (usize, usize) {
        let now = self.hosts.values().filter(|h| !h.now.is_empty()).count();
        let after = self.hosts.values().filter(|h| !h.after.is_empty()).count();
        (now, after)
    }
}

impl<'a> Loss<'a> {
    /// Worst class first, then the larger share (in thousandths), then by name.
    fn rank(&self) -> (ExposureClass, Reverse<usize>, Lost<'a>) {
        let share = self.count * 1000 / self.of.max(1);
        (self.class, Reverse(share), self.lost)
    }
}

/// The worst class in a host's losses; tolerated when it has none.
fn worst(losses: &[Loss]) -> ExposureClass {
    losses
        .iter()
        .map(|l| l.class)
        .min()
        .unwrap_or(ExposureClass::Tolerated)
}

/// Each host of a spread whose failure alone would put the workload at risk.
fn losses<'a>(
    spread: &'a Spread,
    lost: Lost<'a>,
    tolerates: Option<usize>,
) -> impl Iterator<Item = (&'a str, Loss<'a>)> {
    let total = spread.total();
    spread.pods.iter().filter_map(move |(host, &count)| {
        let class = ExposureClass::of(total, count, tolerates);
        class.at_risk().then_some((
            host.as_str(),
            Loss {
                lost,
                count,
                of: total,
                class,
            },
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::exposure::NodeGroupExposure;

    const ESXI_41: &str = "lab-wcp-esxi-41.go-lab.jp";
    const WEB: &str = "lab-ns-01/Deployment/demo-httpd";
    const DB: &str = "db/StatefulSet/pg";

    fn loss(lost: Lost, count: usize, of: usize, class: ExposureClass) -> Loss {
        Loss {
            lost,
            count,
            of,
            class,
        }
    }

    #[test]
    fn the_demo_s_esxi_41_takes_all_of_the_web_and_most_of_the_database_until_the_plan() {
        let report = crate::command::demo::placed_report();
        let exposure = report.plan.exposure.as_ref();
        let risk = Risk::new(exposure.expect("the demo has an inventory"));
        let all = ExposureClass::All;
        let majority = ExposureClass::Majority;
        let esxi_41 = HostRisk {
            now: vec![
                loss(Lost::Workload(WEB), 2, 2, all),
                loss(Lost::Workload(DB), 2, 3, majority),
            ],
            after: vec![loss(Lost::Workload(DB), 2, 3, majority)],
        };
        // esxi-43 holds one of each after the plan: its failure takes neither too far.
        assert_eq!(risk.hosts, BTreeMap::from([(ESXI_41, esxi_41)]));
        assert_eq!(risk.hosts_counted(), (1, 1));
    }

    #[test]
    fn drawn_workloads_get_their_listed_class_or_tolerated_when_the_plan_judged_them() {
        let report = crate::command::demo::placed_report();
        let exposure = report.plan.exposure.as_ref();
        let risk = Risk::new(exposure.expect("the demo has an inventory"));
        let placement = report.placement.as_deref().expect("placed");
        let web = placement
            .workloads
            .iter()
            .find(|w| w.name == WEB)
            .expect("the web workload is drawn");
        let Some(Badge::Listed(listed)) = risk.badge(web) else {
            panic!("the web workload is listed")
        };
        assert_eq!(
            (listed.before.class, listed.after.class),
            (ExposureClass::All, ExposureClass::Tolerated)
        );
        let mut spread = web.clone();
        spread.name = "lab-ns-01/Deployment/spread".to_string();
        assert_eq!(risk.badge(&spread), Some(Badge::Tolerated));
        let mut daemons = spread.clone();
        daemons.assessed = false;
        assert_eq!(risk.badge(&daemons), None);
        let mut single = spread;
        single.hosts.truncate(1);
        single.hosts[0].before = 1;
        assert_eq!(risk.badge(&single), None);
    }

    #[test]
    fn a_host_holding_most_of_a_node_group_takes_it_now_and_after_the_plan() {
        let exposure = Exposure {
            node_groups: vec![NodeGroupExposure {
                node_group: "control-plane".to_string(),
                nodes: 3,
                class: ExposureClass::Majority,
                worst_host: Some("esxi-1".to_string()),
                worst_host_nodes: 2,
                hosts: BTreeMap::from([("esxi-1".to_string(), 2), ("esxi-2".to_string(), 1)]),
                unplaced: 0,
                usable_hosts: 2,
                best_worst_host: 2,
                unavoidable: true,
                drs_rule: None,
            }],
            ..Exposure::default()
        };
        let risk = Risk::new(&exposure);
        let taken = vec![loss(
            Lost::NodeGroup("control-plane"),
            2,
            3,
            ExposureClass::Majority,
        )];
        let esxi_1 = HostRisk {
            now: taken.clone(),
            after: taken,
        };
        assert_eq!(risk.hosts, BTreeMap::from([("esxi-1", esxi_1)]));
    }

    #[test]
    fn hosts_at_risk_after_the_plan_come_before_those_the_plan_relieves() {
        let report = crate::command::demo::placed_report();
        let mut exposure = report.plan.exposure.expect("the demo has an inventory");
        // A second host that holds all of the web workload now but nothing after.
        let web = exposure
            .workloads
            .iter_mut()
            .find(|w| w.workload == WEB)
            .expect("listed");
        web.before.pods = BTreeMap::from([("esxi-0".to_string(), 2)]);
        let risk = Risk::new(&exposure);
        let order: Vec<&str> = risk.hosts_at_risk().iter().map(|(h, _)| *h).collect();
        assert_eq!(order, [ESXI_41, "esxi-0"]);
    }
}
