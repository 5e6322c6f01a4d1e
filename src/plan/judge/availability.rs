//! The availability gate and pacing across runs (`vsphere.availability`).
//!
//! The gate: a pod that is available (Running, Ready, not terminating) is evicted only while its
//! workload (its controller) has at most `maxUnavailablePerWorkload` other pods unavailable —
//! Pending, not Ready, terminating, or evicted earlier in this plan. With the default 0, a
//! workload loses one pod at a time, and only while all its siblings are Ready: a PDB is not
//! needed for that, and where one exists the stricter of the two holds (both are checked).
//! A pod that is unavailable already loses the workload nothing and is not gated.
//!
//! Pacing: at most `pacing.maxEvictionsPerWorkload` pods of one workload within
//! `pacing.window`, counting the evictions earlier runs recorded in the eviction history and
//! those planned in this plan. A workload is named as the report names it (a Deployment, not
//! its ReplicaSet), so a rollout does not reset its count. A history that cannot be read paces
//! every workload to nothing (fails closed).
//!
//! That rule is the only limit pacing imposes, unless the policy sets a cluster-wide one,
//! `pacing.maxEvictionsPerWindow`: at most that many paced evictions within `window`, of all
//! workloads together, the history's and this plan's (`cluster-rate`). The history's storage
//! holds the window's times of tens of thousands of evictions; an eviction whose time it could
//! not hold beside the window's others is refused (`history-full`), the only case where its
//! size decides.
//!
//! Finished pods (RemoveFailedPods, PodLifeTime on completed pods) pass both: their controller
//! replaced them already, and evicting them takes nothing away.

use crate::duration;
use crate::hash::HashMap;
use crate::plan::model::workload::{Controller, controller, workload};
use crate::plan::view::View;
use crate::plan::view::index::PodIx;
use crate::policy::{Allowance, Availability as Settings, Pacing};
use crate::snapshot::history::TimesSize;
use crate::snapshot::{History, PastEviction, Phase, Pod, history};

/// Why a pod counts as unavailable to its workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unavailable {
    Pending,
    NotReady,
    Terminating,
    /// Evicted earlier in this plan.
    Evicted,
}

impl Unavailable {
    fn of(pod: &Pod) -> Option<Unavailable> {
        if pod.terminating {
            Some(Unavailable::Terminating)
        } else if pod.phase != Phase::Running {
            Some(Unavailable::Pending)
        } else if !pod.ready {
            Some(Unavailable::NotReady)
        } else {
            None
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Unavailable::Pending => "Pending",
            Unavailable::NotReady => "not Ready",
            Unavailable::Terminating => "terminating",
            Unavailable::Evicted => "evicted by this plan",
        }
    }
}

/// Why the availability gate or pacing keeps a pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GuardRefusal {
    /// Its workload has more pods unavailable than `maxUnavailablePerWorkload` allows beside it.
    Unavailable {
        workload: String,
        unavailable: usize,
        /// The first unavailable pod, `namespace/name`, and why it is.
        sibling: String,
        why: Unavailable,
        allowance: Allowance,
        allowed: usize,
        pods: usize,
    },
    /// The eviction history cannot be read (why, in words).
    HistoryUnreadable(history::Unreadable),
    /// The eviction history cannot hold the time of another eviction beside the window's.
    HistoryFull {
        workload: String,
        window: std::time::Duration,
    },
    /// The cluster lost as many pods within the window as `maxEvictionsPerWindow` allows.
    ClusterRate {
        count: u32,
        window: std::time::Duration,
        max: u32,
    },
    /// The workload lost as many pods within the window as pacing allows.
    Paced {
        workload: String,
        count: u32,
        /// The latest eviction of the history, when there was one (boxed: the refusal is
        /// rare, and it keeps the `Result` of every check small).
        last: Option<Box<PastEviction>>,
        window: std::time::Duration,
        max: u32,
    },
}

impl std::fmt::Display for GuardRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GuardRefusal::Unavailable {
                workload,
                unavailable,
                sibling,
                why,
                allowance,
                allowed,
                pods,
            } => {
                let plural = if *unavailable == 1 { "" } else { "s" };
                write!(
                    f,
                    "{workload} has {unavailable} unavailable pod{plural} ({sibling} is {}); \
                     maxUnavailablePerWorkload {allowance} allows {allowed} of its {pods} while \
                     one of its pods is evicted",
                    why.as_str(),
                )
            }
            GuardRefusal::HistoryUnreadable(why) => why.fmt(f),
            GuardRefusal::HistoryFull { workload, window } => write!(
                f,
                "the eviction history cannot hold the time of another eviction beside those \
                 within {} (its ConfigMap holds {} bytes): {workload} waits for the next run",
                duration::show(*window),
                history::MAX_BYTES
            ),
            GuardRefusal::ClusterRate { count, window, max } => {
                let window = duration::show(*window);
                write!(
                    f,
                    "the cluster lost {count} pod{} to paced evictions within {window}; \
                     pacing.maxEvictionsPerWindow allows {max} per {window}",
                    if *count == 1 { "" } else { "s" }
                )
            }
            GuardRefusal::Paced {
                workload,
                count,
                last,
                window,
                max,
            } => {
                let window = duration::show(*window);
                let plural = if *count == 1 { "" } else { "s" };
                write!(f, "{workload} lost {count} pod{plural}")?;
                match last.as_deref() {
                    Some(PastEviction {
                        at, pod: Some(pod), ..
                    }) => write!(
                        f,
                        " within {window} (the latest, {}, at {} by {})",
                        pod.name,
                        at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                        pod.plugin
                    )?,
                    Some(PastEviction { at, pod: None, .. }) => write!(
                        f,
                        " within {window} (the latest at {})",
                        at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                    )?,
                    None => f.write_str(" in this plan")?,
                }
                write!(f, "; pacing allows {max} per {window}")
            }
        }
    }
}

/// Where a workload stands: its pods, and those unavailable.
#[derive(Debug, Default)]
struct Standing {
    /// Pods that are not finished or terminating: what a percentage is of.
    pods: usize,
    unavailable: usize,
    /// The first unavailable pod (snapshot order, then evictions in plan order), named in skips.
    first: Option<(PodIx, Unavailable)>,
}

/// The gate and pacing over one plan.
pub struct Guard {
    allowance: Allowance,
    standings: HashMap<Controller, Standing>,
    pacing: Paced,
}

/// Pacing as the history lets it be judged.
enum Paced {
    Off,
    /// The history cannot be read: no workload's pod may go.
    Blind(history::Unreadable),
    On {
        settings: Pacing,
        /// Earlier runs' evictions within the window, by workload: how many, and the latest.
        past: HashMap<String, (u32, PastEviction)>,
        /// This plan's evictions, by workload.
        planned: HashMap<String, u32>,
        /// Paced evictions within the window, of every workload: the history's and this
        /// plan's.
        total: u32,
        /// What the times of the window's evictions take in the history, with this plan's: an
        /// eviction whose time it could not keep would let the next run evict again within the
        /// window.
        size: TimesSize,
    },
}

impl Guard {
    pub fn new(view: &View, settings: &Settings) -> Guard {
        let mut standings: HashMap<Controller, Standing> = HashMap::default();
        for (ix, pod) in view.pods() {
            if matches!(pod.phase, Phase::Succeeded | Phase::Failed) {
                continue;
            }
            let Some(key) = controller(pod) else {
                continue;
            };
            let standing = standings.entry(key).or_default();
            standing.pods += usize::from(!pod.terminating);
            if let Some(why) = Unavailable::of(pod) {
                standing.unavailable += 1;
                standing.first.get_or_insert((ix, why));
            }
        }
        Guard {
            allowance: settings.max_unavailable_per_workload,
            standings,
            pacing: Paced::new(view, &settings.pacing),
        }
    }

    /// Whether the pod may go: `Ok` with the workload the history records it under when paced.
    pub fn check(&self, view: &View, pod: PodIx) -> Result<Option<String>, GuardRefusal> {
        let pod_ref = view.pod(pod);
        if matches!(pod_ref.phase, Phase::Succeeded | Phase::Failed) {
            return Ok(None);
        }
        self.check_gate(view, pod_ref)?;
        self.pacing.check(pod_ref)
    }

    fn check_gate(&self, view: &View, pod: &Pod) -> Result<(), GuardRefusal> {
        if Unavailable::of(pod).is_some() {
            return Ok(());
        }
        let Some(standing) = controller(pod).and_then(|key| self.standings.get(&key)) else {
            return Ok(());
        };
        let allowed = self.allowance.of(standing.pods);
        if standing.unavailable <= allowed {
            return Ok(());
        }
        let (sibling, why) = standing.first.expect("an unavailable pod was counted");
        let sibling = view.pod(sibling);
        Err(GuardRefusal::Unavailable {
            workload: workload_name(pod),
            unavailable: standing.unavailable,
            sibling: format!("{}/{}", sibling.namespace, sibling.name),
            why,
            allowance: self.allowance,
            allowed,
            pods: standing.pods,
        })
    }

    /// Records an eviction [`Guard::check`] let go.
    pub fn spend(&mut self, view: &View, pod: PodIx, paced_as: Option<&str>) {
        let pod_ref = view.pod(pod);
        if Unavailable::of(pod_ref).is_none()
            && let Some(standing) = controller(pod_ref).and_then(|key| self.standings.get_mut(&key))
        {
            standing.unavailable += 1;
            standing.first.get_or_insert((pod, Unavailable::Evicted));
        }
        if let (
            Paced::On {
                planned,
                total,
                size,
                ..
            },
            Some(workload),
        ) = (&mut self.pacing, paced_as)
        {
            *planned.entry(workload.to_string()).or_insert(0) += 1;
            *total += 1;
            size.add(workload);
        }
    }
}

impl Paced {
    fn new(view: &View, settings: &Pacing) -> Paced {
        if !settings.is_on() {
            return Paced::Off;
        }
        let entries = match &view.snapshot.history {
            History::Recorded(entries) => entries,
            History::Unreadable(unreadable) => return Paced::Blind(unreadable.clone()),
        };
        let window = chrono::TimeDelta::from_std(settings.window).unwrap_or(chrono::TimeDelta::MAX);
        let since = view.snapshot.now - window;
        let mut past: HashMap<String, (u32, PastEviction)> = HashMap::default();
        let mut size = TimesSize::default();
        let mut total = 0;
        // Oldest first, so the entry kept is the latest.
        for entry in entries.iter().filter(|entry| entry.at > since) {
            size.add(&entry.workload);
            total += 1;
            let counted = past
                .entry(entry.workload.clone())
                .or_insert_with(|| (0, entry.clone()));
            counted.0 += 1;
            counted.1 = entry.clone();
        }
        Paced::On {
            settings: settings.clone(),
            past,
            planned: HashMap::default(),
            total,
            size,
        }
    }

    fn check(&self, pod: &Pod) -> Result<Option<String>, GuardRefusal> {
        let Some(name) = workload(pod).map(|workload| workload.display()) else {
            return Ok(None);
        };
        let (settings, past, planned, total, size) = match self {
            Paced::Off => return Ok(None),
            Paced::Blind(why) => return Err(GuardRefusal::HistoryUnreadable(why.clone())),
            Paced::On {
                settings,
                past,
                planned,
                total,
                size,
            } => (settings, past, planned, *total, size),
        };
        let before = past.get(&name);
        let here = planned.get(&name).copied().unwrap_or(0);
        let count = before.map_or(0, |(count, _)| *count) + here;
        if count >= settings.max_evictions_per_workload {
            return Err(GuardRefusal::Paced {
                workload: name,
                count,
                last: before.map(|(_, last)| Box::new(last.clone())),
                window: settings.window,
                max: settings.max_evictions_per_workload,
            });
        }
        if let Some(max) = settings.max_evictions_per_window
            && total >= max.get()
        {
            return Err(GuardRefusal::ClusterRate {
                count: total,
                window: settings.window,
                max: max.get(),
            });
        }
        if size.with(&name) > history::MAX_BYTES {
            return Err(GuardRefusal::HistoryFull {
                workload: name,
                window: settings.window,
            });
        }
        Ok(Some(name))
    }
}

/// The pod's workload as the report names it.
fn workload_name(pod: &Pod) -> String {
    workload(pod).map_or_else(
        || format!("{}/{}", pod.namespace, pod.name),
        |w| w.display(),
    )
}

#[cfg(test)]
mod tests {
    use chrono::TimeDelta;

    use super::{GuardRefusal, Unavailable};
    use crate::plan::SkipDetail;
    use crate::plan::plan as make_plan;
    use crate::plan::testing::*;
    use crate::policy::plugins::PodLifeTimeArgs;
    use crate::policy::{Allowance, Availability, Policy, Strategy};
    use crate::snapshot::{History, PastEviction, Phase, Snapshot, history};

    /// A replica of Deployment `web` (ReplicaSet `web-1111`) that must not share a host.
    fn replica(name: &str, node: &str) -> PodBuilder {
        web(name, node, 30)
            .owner("ReplicaSet", "web-1111")
            .label("pod-template-hash", "1111")
    }

    /// Three replicas of `web` crowded on esxi-1's two nodes, against their host anti-affinity;
    /// esxi-2, esxi-3 and esxi-4 have room: two of them would move.
    fn crowded_web() -> Lab {
        four_hosts_one_shared()
            .pod(replica("web-a", "w1"))
            .pod(replica("web-b", "w2"))
            .pod(replica("web-c", "w1"))
    }

    fn gated(availability: Availability) -> Policy {
        let mut policy = policy(vec![anti_affinity()]);
        policy.vsphere.availability = availability;
        policy
    }

    fn gate_only(allowance: Allowance) -> Policy {
        gated(Availability {
            max_unavailable_per_workload: allowance,
            pacing: ungated().pacing,
        })
    }

    fn with_history(lab: Lab, entries: History) -> Snapshot {
        lab.with(|snapshot| snapshot.history = entries).build()
    }

    fn past(minutes_ago: i64, pod: &str) -> PastEviction {
        PastEviction::new(
            now() - TimeDelta::minutes(minutes_ago),
            "shop/Deployment/web",
            pod,
            "RemovePodsViolatingInterPodAntiAffinity",
        )
    }

    #[test]
    fn by_default_a_workload_loses_one_pod_while_its_siblings_are_ready() {
        let plan = make_plan(&crowded_web().build(), &gated(Availability::default()));
        assert_eq!(evicted(&plan), ["shop/web-a"]);
        assert_eq!(
            plan.evictions[0].paced_as.as_deref(),
            Some("shop/Deployment/web")
        );
    }

    #[test]
    fn a_sibling_not_ready_holds_the_workload_and_is_named() {
        let lab = crowded_web().pod(replica("web-u", "w5").with(|p| p.ready = false));
        let snapshot = lab.build();
        let plan = make_plan(&snapshot, &gate_only(Allowance::Pods(0)));
        assert!(evicted(&plan).is_empty(), "{:?}", evicted(&plan));
        assert_eq!(
            skipped(&plan),
            [
                ("shop/web-a".to_string(), "workload-unavailable"),
                ("shop/web-b".to_string(), "workload-unavailable"),
                ("shop/web-c".to_string(), "workload-unavailable"),
            ]
        );
        assert_eq!(
            plan.skipped[0].detail.to_string(),
            "shop/Deployment/web has 1 unavailable pod (shop/web-u is not Ready); \
             maxUnavailablePerWorkload 0 allows 0 of its 4 while one of its pods is evicted"
        );
        // One more allowed: one goes, and then the workload has two unavailable.
        let plan = make_plan(&snapshot, &gate_only(Allowance::Pods(1)));
        assert_eq!(evicted(&plan), ["shop/web-a"]);
        assert!(matches!(
            plan.skipped[0].detail,
            SkipDetail::Guard(GuardRefusal::Unavailable { unavailable: 2, .. })
        ));
    }

    #[test]
    fn pending_and_terminating_siblings_count_and_a_percentage_rounds_down() {
        let lab = crowded_web()
            .pod(replica("web-p", "w5").with(|p| p.phase = Phase::Pending))
            .pod(replica("web-t", "w5").with(|p| p.terminating = true));
        // 4 pods that count (the terminating one does not); 50% of 4 is 2, 2 are unavailable;
        // 49% is 1.
        let snapshot = lab.build();
        let plan = make_plan(&snapshot, &gate_only(Allowance::Percent(49)));
        assert!(evicted(&plan).is_empty());
        assert!(matches!(
            &plan.skipped[0].detail,
            SkipDetail::Guard(GuardRefusal::Unavailable { sibling, why: Unavailable::Pending, .. })
                if sibling == "shop/web-p"
        ));
        let plan = make_plan(&snapshot, &gate_only(Allowance::Percent(50)));
        assert_eq!(evicted(&plan), ["shop/web-a"]);
    }

    /// `replicas` ready replicas of `web` on w1, each past a 1-hour lifetime: every one is a
    /// candidate, so only the gate decides how many go.
    fn old_replicas(replicas: usize) -> Snapshot {
        (0..replicas)
            .fold(three_hosts(), |lab, i| {
                lab.pod(
                    pod(&format!("shop/web-{i}"))
                        .app("web")
                        .on("w1")
                        .age_minutes(120)
                        .owner("ReplicaSet", "web-1111")
                        .label("pod-template-hash", "1111"),
                )
            })
            .build()
    }

    #[test]
    fn the_allowance_rounds_a_percentage_down_and_takes_a_number_as_it_is() {
        // (allowance, replicas, what it allows by hand: docs/how-it-decides.md says a
        // percentage is of the workload's pods, rounded down). A pod goes while at most that
        // many *other* pods are unavailable, those evicted earlier in the plan included, so a
        // plan evicts one more than the allowance, or every replica.
        let cases = [
            (Allowance::Percent(25), 3, 0),  // 0.75
            (Allowance::Percent(25), 4, 1),  // 1
            (Allowance::Percent(25), 5, 1),  // 1.25
            (Allowance::Percent(25), 7, 1),  // 1.75
            (Allowance::Percent(25), 8, 2),  // 2
            (Allowance::Percent(50), 3, 1),  // 1.5
            (Allowance::Percent(99), 5, 4),  // 4.95
            (Allowance::Percent(0), 5, 0),   // 0
            (Allowance::Percent(100), 5, 5), // 5
            (Allowance::Pods(2), 5, 2),
            (Allowance::Pods(7), 5, 7), // more than there are: every replica may go
        ];
        let lifetime = Strategy::PodLifeTime(PodLifeTimeArgs {
            max_pod_life_time_seconds: Some(3600),
            ..PodLifeTimeArgs::default()
        });
        for (allowance, replicas, allowed) in cases {
            let mut policy = policy(vec![lifetime.clone()]);
            policy.vsphere.availability = Availability {
                max_unavailable_per_workload: allowance,
                pacing: ungated().pacing,
            };
            let plan = make_plan(&old_replicas(replicas), &policy);
            let case = format!("{allowance} of {replicas}");
            assert_eq!(
                plan.evictions.len(),
                (allowed + 1).min(replicas),
                "{case}: {:?}",
                evicted(&plan)
            );
            let held: Vec<String> = plan.skipped.iter().map(|s| s.detail.to_string()).collect();
            assert_eq!(held.len(), replicas - plan.evictions.len(), "{case}");
            for detail in held {
                assert!(
                    detail.ends_with(&format!(
                        "maxUnavailablePerWorkload {allowance} allows {allowed} of its \
                         {replicas} while one of its pods is evicted"
                    )),
                    "{case}: {detail}"
                );
            }
        }
    }

    #[test]
    fn a_pod_that_is_unavailable_already_is_not_gated() {
        let lab = crowded_web().with(|snapshot| {
            for pod in &mut snapshot.pods {
                pod.ready = false;
            }
        });
        let plan = make_plan(&lab.build(), &gate_only(Allowance::Pods(0)));
        assert_eq!(evicted(&plan), ["shop/web-a", "shop/web-b"]);
    }

    #[test]
    fn pacing_counts_the_history_within_its_window() {
        let policy = gated(Availability {
            max_unavailable_per_workload: Allowance::Percent(100),
            ..Availability::default()
        });
        let recent = History::Recorded(vec![past(9, "web-z")]);
        let plan = make_plan(&with_history(crowded_web(), recent), &policy);
        assert!(evicted(&plan).is_empty());
        assert_eq!(plan.skipped[0].reason.as_str(), "paced");
        assert_eq!(
            plan.skipped[0].detail.to_string(),
            format!(
                "shop/Deployment/web lost 1 pod within 10m (the latest, web-z, at {} by \
                 RemovePodsViolatingInterPodAntiAffinity); pacing allows 1 per 10m",
                (now() - TimeDelta::minutes(9)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            )
        );
        // Older than the window, or of another workload: not counted.
        let mut other = past(1, "api-a");
        other.workload = "shop/Deployment/api".to_string();
        let old = History::Recorded(vec![past(11, "web-z"), other]);
        let plan = make_plan(&with_history(crowded_web(), old), &policy);
        assert_eq!(evicted(&plan), ["shop/web-a"]);
        // Within this plan too: the second replica waits for the window.
        assert_eq!(
            skipped(&plan),
            [
                ("shop/web-b".to_string(), "paced"),
                ("shop/web-c".to_string(), "paced"),
            ],
            "{:?}",
            plan.skipped
        );
        assert!(matches!(
            plan.skipped[0].detail,
            SkipDetail::Guard(GuardRefusal::Paced {
                count: 1,
                last: None,
                max: 1,
                ..
            })
        ));
    }

    /// `count` evictions of other workloads (each its own) five minutes ago, within the window;
    /// their names `extra` bytes longer than `shop/Deployment/api-000000`.
    fn others(count: usize, extra: usize) -> Vec<PastEviction> {
        (0..count)
            .map(|i| {
                let mut entry = past(5, &format!("api-{i:06}-x"));
                entry.workload = format!("shop/Deployment/api-{i:06}{}", "x".repeat(extra));
                entry
            })
            .collect()
    }

    fn paced_without_gate() -> Policy {
        gated(Availability {
            max_unavailable_per_workload: Allowance::Percent(100),
            ..Availability::default()
        })
    }

    fn codes(plan: &crate::plan::Plan) -> Vec<(&str, &str)> {
        plan.skipped
            .iter()
            .map(|skip| (skip.pod.as_str(), skip.detail.code().as_str()))
            .collect()
    }

    #[test]
    fn twenty_thousand_evictions_within_the_window_do_not_stop_another_workloads() {
        let history = History::Recorded(others(20_000, 0));
        let plan = make_plan(&with_history(crowded_web(), history), &paced_without_gate());
        // web's own pacing holds its second and third pod, nothing else.
        assert_eq!(evicted(&plan), ["shop/web-a"]);
        assert_eq!(codes(&plan), [("web-b", "paced"), ("web-c", "paced")]);
    }

    /// The history's times within the window: a key `shop.Deployment` (15 bytes), and per
    /// workload its name (`api-000000` and `extra` bytes), a space, a line break and at most 7
    /// bytes of time.
    fn times_bytes(count: usize, extra: usize) -> usize {
        15 + count * (10 + extra + 2 + 7)
    }

    #[test]
    fn only_a_window_whose_times_fill_the_config_map_stops_an_eviction() {
        // Names padded so that each workload's time takes 52 bytes: 20,164 workloads take
        // 1,048,543 of the 1,048,576, and web's line (`web`, in the key `shop.Deployment`
        // already there) the 12 more it leaves room for; one workload more leaves none.
        let extra = 33;
        assert_eq!(times_bytes(20_164, extra), 1_048_543);
        assert_eq!(history::MAX_BYTES - times_bytes(20_164, extra), 33);
        let full = History::Recorded(others(20_165, extra));
        let plan = make_plan(&with_history(crowded_web(), full), &paced_without_gate());
        assert!(evicted(&plan).is_empty(), "{:?}", evicted(&plan));
        assert_eq!(
            codes(&plan),
            [
                ("web-a", "history-full"),
                ("web-b", "history-full"),
                ("web-c", "history-full")
            ]
        );
        assert!(
            matches!(
                &plan.skipped[0].detail,
                SkipDetail::Guard(GuardRefusal::HistoryFull { workload, .. })
                    if workload == "shop/Deployment/web"
            ),
            "{}",
            plan.skipped[0].detail
        );
        let fits = History::Recorded(others(20_164, extra));
        let plan = make_plan(&with_history(crowded_web(), fits), &paced_without_gate());
        assert_eq!(evicted(&plan), ["shop/web-a"]);
    }

    #[test]
    fn a_cluster_wide_rate_counts_every_workloads_evictions_within_the_window() {
        let mut policy = paced_without_gate();
        policy.vsphere.availability.pacing.max_evictions_per_window = std::num::NonZeroU32::new(3);
        // Two of other workloads within the window, one older: one more may go.
        let mut history = others(2, 0);
        history.push(past(11, "web-old"));
        let plan = make_plan(
            &with_history(crowded_web(), History::Recorded(history)),
            &policy,
        );
        assert_eq!(evicted(&plan), ["shop/web-a"]);
        assert_eq!(codes(&plan), [("web-b", "paced"), ("web-c", "paced")]);
        // Three within the window: none.
        let plan = make_plan(
            &with_history(crowded_web(), History::Recorded(others(3, 0))),
            &policy,
        );
        assert!(evicted(&plan).is_empty());
        assert_eq!(
            codes(&plan),
            [
                ("web-a", "cluster-rate"),
                ("web-b", "cluster-rate"),
                ("web-c", "cluster-rate")
            ]
        );
        assert_eq!(plan.skipped[0].reason.as_str(), "paced");
        assert_eq!(
            plan.skipped[0].detail.to_string(),
            "the cluster lost 3 pods to paced evictions within 10m; \
             pacing.maxEvictionsPerWindow allows 3 per 10m"
        );
        // Without the setting, no cluster-wide limit.
        let plan = make_plan(
            &with_history(crowded_web(), History::Recorded(others(3, 0))),
            &paced_without_gate(),
        );
        assert_eq!(evicted(&plan), ["shop/web-a"]);
    }

    #[test]
    fn a_latest_eviction_whose_pod_was_not_kept_is_named_by_its_time() {
        let mut entry = past(9, "web-z");
        entry.pod = None;
        let plan = make_plan(
            &with_history(crowded_web(), History::Recorded(vec![entry])),
            &paced_without_gate(),
        );
        assert_eq!(
            plan.skipped[0].detail.to_string(),
            format!(
                "shop/Deployment/web lost 1 pod within 10m (the latest at {}); pacing allows 1 \
                 per 10m",
                (now() - TimeDelta::minutes(9)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            )
        );
    }

    #[test]
    fn an_unreadable_history_paces_every_workload_to_nothing() {
        let unreadable = History::Unreadable(history::Unreadable {
            object: "Lease kube-system/vsphere-descheduler".to_string(),
            cause: history::HistoryDefect::Corrupt("not a JSON list of evictions".to_string()),
        });
        let plan = make_plan(
            &with_history(crowded_web(), unreadable),
            &gated(Availability::default()),
        );
        assert!(evicted(&plan).is_empty());
        assert_eq!(plan.skipped.len(), 3);
        assert!(
            plan.skipped
                .iter()
                .all(|skip| skip.reason.as_str() == "history-unreadable")
        );
        assert!(
            matches!(
                &plan.skipped[0].detail,
                SkipDetail::Guard(GuardRefusal::HistoryUnreadable(why))
                    if why.object == "Lease kube-system/vsphere-descheduler"
            ),
            "{}",
            plan.skipped[0].detail
        );
    }

    #[test]
    fn finished_pods_pass_the_gate_and_pacing() {
        let lab = crowded_web().pod(
            pod("shop/web-done")
                .owner("ReplicaSet", "web-1111")
                .label("pod-template-hash", "1111")
                .on("w3")
                .failed(),
        );
        let policy = {
            let mut policy = policy(vec![
                crate::policy::Strategy::FailedPods(Default::default()),
            ]);
            policy.vsphere.availability = Availability::default();
            policy
        };
        let recent = History::Recorded(vec![past(1, "web-z")]);
        let plan = make_plan(&with_history(lab, recent), &policy);
        assert_eq!(evicted(&plan), ["shop/web-done"], "{:?}", plan.skipped);
    }
}
