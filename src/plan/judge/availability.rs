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
//! Finished pods (RemoveFailedPods, PodLifeTime on completed pods) pass both: their controller
//! replaced them already, and evicting them takes nothing away.

use crate::duration;
use crate::hash::HashMap;
use crate::plan::model::workload::{Controller, controller, workload};
use crate::plan::view::View;
use crate::plan::view::index::PodIx;
use crate::policy::{Allowance, Availability as Settings, Pacing};
use crate::snapshot::{History, PastEviction, Phase, Pod, history};

use chrono::{DateTime, Utc};

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
    /// The eviction history cannot hold another eviction within the window.
    HistoryFull {
        workload: String,
        window: std::time::Duration,
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
                "the eviction history cannot hold another eviction within {} (at most {} \
                 bytes): {workload} waits for the next run",
                duration::show(*window),
                history::MAX_BYTES
            ),
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
                match last {
                    Some(last) => write!(
                        f,
                        " within {window} (the latest, {}, at {} by {})",
                        last.pod,
                        last.at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                        last.plugin
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
        /// Bytes the history's entries within the window take, with this plan's: the history
        /// keeps at most [`history::MAX_BYTES`], and an entry it could not keep would let the
        /// next run evict again within the window.
        bytes: usize,
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
        self.pacing.check(view.snapshot.now, pod_ref)
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
        if let (Paced::On { planned, bytes, .. }, Some(workload)) = (&mut self.pacing, paced_as) {
            *planned.entry(workload.to_string()).or_insert(0) += 1;
            *bytes += planned_len(view.snapshot.now, workload, pod_ref);
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
        // "[" and "]", less the comma the first entry goes without (each entry is counted with
        // one): the history's exact length, so an entry that fits to the byte is kept.
        let mut bytes = 1;
        // Oldest first, so the entry kept is the latest.
        for entry in entries.iter().filter(|entry| entry.at > since) {
            bytes += entry_len(entry);
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
            bytes,
        }
    }

    fn check(&self, now: DateTime<Utc>, pod: &Pod) -> Result<Option<String>, GuardRefusal> {
        let Some(name) = workload(pod).map(|workload| workload.display()) else {
            return Ok(None);
        };
        let (settings, past, planned, bytes) = match self {
            Paced::Off => return Ok(None),
            Paced::Blind(why) => return Err(GuardRefusal::HistoryUnreadable(why.clone())),
            Paced::On {
                settings,
                past,
                planned,
                bytes,
            } => (settings, past, planned, *bytes),
        };
        if bytes + planned_len(now, &name, pod) > history::MAX_BYTES {
            return Err(GuardRefusal::HistoryFull {
                workload: name,
                window: settings.window,
            });
        }
        let before = past.get(&name);
        let here = planned.get(&name).copied().unwrap_or(0);
        let count = before.map_or(0, |(count, _)| *count) + here;
        if count < settings.max_evictions_per_workload {
            return Ok(Some(name));
        }
        Err(GuardRefusal::Paced {
            workload: name,
            count,
            last: before.map(|(_, last)| Box::new(last.clone())),
            window: settings.window,
            max: settings.max_evictions_per_workload,
        })
    }
}

/// The longest plugin name, for the size of an entry before its plugin is known.
const LONGEST_PLUGIN: &str = "RemovePodsViolatingTopologySpreadConstraint";

/// What one entry takes in the history, with the comma before it.
fn entry_len(entry: &PastEviction) -> usize {
    serde_json::to_string(entry).map_or(0, |text| text.len()) + 1
}

/// What the entry of the pod's eviction would take, at most.
fn planned_len(now: DateTime<Utc>, workload: &str, pod: &Pod) -> usize {
    entry_len(&PastEviction {
        at: now,
        workload: workload.to_string(),
        pod: pod.name.clone(),
        plugin: LONGEST_PLUGIN.to_string(),
    })
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
    use crate::policy::{Allowance, Availability, PodLifeTimeArgs, Policy, Strategy};
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
        Lab::new()
            .host("esxi-1")
            .host("esxi-2")
            .host("esxi-3")
            .host("esxi-4")
            .node("w1", "esxi-1")
            .node("w2", "esxi-1")
            .node("w3", "esxi-2")
            .node("w4", "esxi-3")
            .node("w5", "esxi-4")
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
        PastEviction {
            at: now() - TimeDelta::minutes(minutes_ago),
            workload: "shop/Deployment/web".to_string(),
            pod: pod.to_string(),
            plugin: "RemovePodsViolatingInterPodAntiAffinity".to_string(),
        }
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

    /// The bytes of one history entry as the annotation holds it (docs/commands.md: a JSON list
    /// of `{at, workload, pod, plugin}`), counted by hand: `{"at":"` (7), the time (20:
    /// `2026-11-21T11:55:00Z`), `","workload":"` (14), `","pod":"` (9), `","plugin":"` (12)
    /// and `"}` (2) are 64 bytes around the three names.
    fn entry_bytes(workload: &str, pod: &str, plugin: &str) -> usize {
        64 + workload.len() + pod.len() + plugin.len()
    }

    /// `count` entries of other workloads five minutes ago, within the window, the first one's
    /// pod name `pad` bytes longer than the others': a history of `1 + 136 × count + pad`
    /// bytes (`[`, `]` and the commas between 135-byte entries).
    fn others(count: usize, pad: usize) -> Vec<PastEviction> {
        (0..count)
            .map(|i| {
                let mut entry = past(5, &format!("api-{i:04}"));
                entry.workload = format!("shop/Deployment/api-{i:04}");
                if i == 0 {
                    entry.pod.push_str(&"x".repeat(pad));
                }
                assert_eq!(
                    entry_bytes(&entry.workload, &entry.pod, &entry.plugin),
                    135 + if i == 0 { pad } else { 0 }
                );
                entry
            })
            .collect()
    }

    /// The history's limit as documented (docs/commands.md: at most 32 KiB), and the room the
    /// planner keeps for one eviction of `web`: its entry, its plugin not known yet so counted
    /// as the longest plugin name, and the comma before it.
    const LIMIT: usize = 32 * 1024;
    fn room_for_one_web_eviction() -> usize {
        let longest_plugin = "RemovePodsViolatingTopologySpreadConstraint";
        entry_bytes("shop/Deployment/web", "web-a", longest_plugin) + 1
    }

    #[test]
    fn a_history_one_entry_short_of_its_limit_takes_exactly_one_more_eviction() {
        let policy = gated(Availability {
            max_unavailable_per_workload: Allowance::Percent(100),
            ..Availability::default()
        });
        // 239 entries (32,505 bytes) and a pad that leaves exactly one web entry's room.
        let room = room_for_one_web_eviction();
        assert_eq!(room, 132);
        let pad = LIMIT - room - (1 + 136 * 239);
        assert_eq!(pad, 131);
        let history = others(239, pad);
        let plan = make_plan(
            &with_history(crowded_web(), History::Recorded(history)),
            &policy,
        );
        // web-a fills the history to the byte; web-b would need 132 more.
        assert_eq!(evicted(&plan), ["shop/web-a"]);
        let codes: Vec<_> = plan
            .skipped
            .iter()
            .map(|skip| (skip.pod.as_str(), skip.detail.code().as_str()))
            .collect();
        assert_eq!(
            codes,
            [("web-b", "history-full"), ("web-c", "history-full")]
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
    }

    #[test]
    fn a_history_one_byte_short_of_room_for_an_entry_paces_every_workload() {
        let policy = gated(Availability {
            max_unavailable_per_workload: Allowance::Percent(100),
            ..Availability::default()
        });
        let pad = LIMIT - room_for_one_web_eviction() - (1 + 136 * 239) + 1;
        let plan = make_plan(
            &with_history(crowded_web(), History::Recorded(others(239, pad))),
            &policy,
        );
        assert!(evicted(&plan).is_empty(), "{:?}", evicted(&plan));
        let codes: Vec<_> = plan
            .skipped
            .iter()
            .map(|skip| (skip.pod.as_str(), skip.detail.code().as_str()))
            .collect();
        assert_eq!(
            codes,
            [
                ("web-a", "history-full"),
                ("web-b", "history-full"),
                ("web-c", "history-full")
            ]
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
