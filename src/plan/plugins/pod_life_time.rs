//! `PodLifeTime`, as upstream's newest: the pods that pass every filter given — created more
//! than `maxPodLifeTimeSeconds` ago, in one of `states`, with a condition matching one of
//! `conditions`, with a container terminated with one of `exitCodes`, owned (or not) by
//! `ownerKinds` — oldest first. Filter categories AND together; entries within one OR.
//!
//! `states` match the pod's phase, its `status.reason`, or a container's waiting or terminated
//! reason; init containers count with `includingInitContainers`, ephemeral ones with
//! `includingEphemeralContainers`. `exitCodes` read the containers and, with
//! `includingInitContainers`, the init containers (upstream reads no ephemeral exit codes).
//!
//! Finished pods count as upstream counts them: `states: [Succeeded]` deletes old completed
//! pods, and without `states` an old finished pod goes like any other.

use chrono::{DateTime, Utc};

use super::{admits, is_finished_candidate};
use crate::plan::view::index::PodIx;
use crate::plan::{Context, EvictionReason, Fit, LifeTime, Planner};
use crate::policy::plugins::{ConditionFilter, OwnerKinds, PodLifeTimeArgs};
use crate::snapshot::{ContainerStatus, Pod, PodCondition};

pub fn run(planner: &mut Planner, context: &Context, args: &PodLifeTimeArgs) {
    let now = planner.view.snapshot.now;
    let mut matching: Vec<(Option<DateTime<Utc>>, PodIx, LifeTime)> = Vec::new();
    for pod in planner.view.pod_indices() {
        if !(planner.is_candidate(pod) || is_finished_candidate(planner, pod))
            || !admits(planner, &args.namespaces, args.label_selector.as_ref(), pod)
        {
            continue;
        }
        let pod_ref = planner.view.pod(pod);
        if let Some(reason) = matches(pod_ref, args, now) {
            matching.push((pod_ref.created, pod, reason));
        }
    }
    // Oldest first, so limits and budgets keep the youngest; a pod without a creation time is
    // oldest (upstream reads it as the zero time). The index (namespace/name order) breaks ties.
    matching.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
    for (_, pod, reason) in matching {
        planner.attempt(context, pod, EvictionReason::LifeTime(reason), Fit::Evictor);
    }
}

/// Why the pod passes every filter given, or `None` when one fails. The reason names the first
/// filter given, in upstream's order: the age, the state, the condition, the exit code.
fn matches(pod: &Pod, args: &PodLifeTimeArgs, now: DateTime<Utc>) -> Option<LifeTime> {
    let mut reasons = Vec::new();
    if let Some(max) = args.max_pod_life_time_seconds {
        // Without a creation time the age is unknown: not old enough.
        let age = now.signed_duration_since(pod.created?).num_seconds();
        if age <= i64::from(max) {
            return None;
        }
        reasons.push(LifeTime::Age {
            age_seconds: age,
            max,
        });
    }
    if !args.states.is_empty() {
        let state = state_of(pod, args)?;
        reasons.push(LifeTime::State(state.to_string()));
    }
    if !owner_kinds_admit(pod, &args.owner_kinds) {
        return None;
    }
    if !args.conditions.is_empty() {
        let condition = args
            .conditions
            .iter()
            .find_map(|filter| matching_condition(pod, filter, now))?;
        reasons.push(describe(condition, now));
    }
    if !args.exit_codes.is_empty() {
        let code = exit_code_of(pod, args)?;
        reasons.push(LifeTime::ExitCode(code));
    }
    reasons.into_iter().next()
}

/// The first of `states` the pod is in: its phase, its `status.reason`, or a container's
/// waiting or terminated reason (init and ephemeral containers when asked).
fn state_of<'a>(pod: &'a Pod, args: &PodLifeTimeArgs) -> Option<&'a str> {
    let listed = |state: &str| args.states.iter().any(|s| s == state);
    if listed(pod.phase.as_str()) {
        return Some(pod.phase.as_str());
    }
    if let Some(reason) = pod.reason().filter(|reason| listed(reason)) {
        return Some(reason);
    }
    containers(
        pod,
        args.including_init_containers,
        args.including_ephemeral_containers,
    )
    .flat_map(ContainerStatus::reasons)
    .find(|reason| listed(reason))
}

/// The exit code of a container terminated with one of `exitCodes` (init containers when
/// asked; never ephemeral ones, as upstream).
fn exit_code_of(pod: &Pod, args: &PodLifeTimeArgs) -> Option<i32> {
    containers(pod, args.including_init_containers, false)
        .filter_map(|status| status.terminated.as_ref())
        .map(|terminated| terminated.exit_code)
        .find(|code| args.exit_codes.contains(code))
}

/// The containers' statuses, then the init and ephemeral containers' when asked.
fn containers(
    pod: &Pod,
    including_init: bool,
    including_ephemeral: bool,
) -> impl Iterator<Item = &ContainerStatus> {
    let ephemeral: &[ContainerStatus] = if including_ephemeral {
        pod.ephemeral_container_statuses()
    } else {
        &[]
    };
    pod.statuses(including_init).chain(ephemeral)
}

/// `ownerKinds`: an owner of an included kind, or none of an excluded kind. A pod without
/// owners has no included kind.
fn owner_kinds_admit(pod: &Pod, kinds: &OwnerKinds) -> bool {
    let owned_by = |listed: &[String]| {
        pod.owners
            .iter()
            .any(|owner| listed.iter().any(|kind| kind == owner.kind.as_str()))
    };
    if !kinds.include.is_empty() {
        return owned_by(&kinds.include);
    }
    !owned_by(&kinds.exclude)
}

/// The pod's first condition the filter matches: every field given equal, and the last
/// transition at least `minTimeSinceLastTransitionSeconds` ago when that is given (a condition
/// without a transition time, or with one after `now`, then does not match).
fn matching_condition<'a>(
    pod: &'a Pod,
    filter: &ConditionFilter,
    now: DateTime<Utc>,
) -> Option<&'a PodCondition> {
    let equal = |wanted: &Option<String>, actual: Option<&str>| {
        wanted
            .as_deref()
            .is_none_or(|wanted| actual == Some(wanted))
    };
    pod.conditions.iter().find(|condition| {
        equal(&filter.condition_type, Some(&condition.condition_type))
            && equal(&filter.status, Some(&condition.status))
            && equal(&filter.reason, condition.reason.as_deref())
            && filter
                .min_time_since_last_transition_seconds
                .is_none_or(|min| {
                    condition.last_transition.is_some_and(|at| {
                        let idle = now.signed_duration_since(at).num_seconds();
                        idle >= 0 && idle >= i64::from(min)
                    })
                })
    })
}

/// The condition as the eviction's reason names it, with how long it has held.
fn describe(condition: &PodCondition, now: DateTime<Utc>) -> LifeTime {
    LifeTime::Condition {
        condition_type: condition.condition_type.to_string(),
        status: condition.status.to_string(),
        reason: condition.reason.as_ref().map(|reason| reason.to_string()),
        for_seconds: condition
            .last_transition
            .map(|at| now.signed_duration_since(at).num_seconds()),
    }
}

#[cfg(test)]
mod upstream_cases;

#[cfg(test)]
mod tests {
    use chrono::Duration;

    use crate::plan::plan;
    use crate::plan::testing::*;
    use crate::policy::plugins::{ConditionFilter, PodLifeTimeArgs};
    use crate::policy::{Limits, Namespaces, Policy, Strategy};
    use crate::snapshot::Phase;

    use super::upstream_cases::{condition, hours_ago};

    fn life_time(seconds: u32, states: &[&str]) -> Policy {
        policy(vec![Strategy::PodLifeTime(PodLifeTimeArgs {
            max_pod_life_time_seconds: Some(seconds),
            states: states.iter().map(|s| s.to_string()).collect(),
            ..PodLifeTimeArgs::default()
        })])
    }

    #[test]
    fn pods_older_than_the_limit_go_oldest_first_and_one_exactly_at_it_stays() {
        let snapshot = three_hosts()
            .pod(pod("app/old").app("a").on("w1").age_minutes(120))
            .pod(pod("app/older").app("b").on("w1").age_minutes(180))
            .pod(pod("app/exact").app("c").on("w1").age_minutes(60))
            .pod(pod("app/young").app("d").on("w1").age_minutes(10))
            .build();
        let plan = plan(&snapshot, &life_time(3600, &[]));
        assert_eq!(evicted(&plan), ["app/older", "app/old"]);
        assert_eq!(
            plan.evictions[0].reason.to_string(),
            "created 10800s ago, more than maxPodLifeTimeSeconds 3600"
        );
    }

    #[test]
    fn limits_hold_back_the_youngest() {
        let snapshot = three_hosts()
            .pod(pod("app/a").app("a").on("w1").age_minutes(120))
            .pod(pod("app/b").app("b").on("w1").age_minutes(180))
            .build();
        let mut policy = life_time(60, &[]);
        policy.limits = Limits {
            total: Some(1),
            ..Limits::default()
        };
        let plan = plan(&snapshot, &policy);
        assert_eq!(evicted(&plan), ["app/b"]);
        assert_eq!(skipped(&plan), [("app/a".to_string(), "limit")]);
    }

    #[test]
    fn states_match_the_phase_the_pod_reason_or_a_waiting_container() {
        let snapshot = three_hosts()
            .pod(
                pod("app/pending")
                    .app("a")
                    .on("w1")
                    .with(|pod| pod.phase = Phase::Pending),
            )
            .pod(
                pod("app/lost")
                    .app("b")
                    .on("w1")
                    .with(|pod| pod.extras_mut().reason = Some("NodeLost".to_string())),
            )
            .pod(
                pod("app/pulling")
                    .app("c")
                    .on("w1")
                    .restarts(0, Some("ImagePullBackOff")),
            )
            .pod(pod("app/running").app("d").on("w1"))
            .build();
        let evicted_in = |states: &[&str]| evicted(&plan(&snapshot, &life_time(60, states)));
        assert_eq!(evicted_in(&["Pending"]), ["app/pending"]);
        assert_eq!(evicted_in(&["NodeLost"]), ["app/lost"]);
        assert_eq!(evicted_in(&["ImagePullBackOff"]), ["app/pulling"]);
        assert_eq!(evicted_in(&["Running"]).len(), 3);
    }

    #[test]
    fn finished_pods_count_as_upstream_counts_them() {
        let snapshot = three_hosts()
            .pod(
                pod("app/done")
                    .app("a")
                    .on("w1")
                    .owner("Job", "nightly")
                    .with(|pod| pod.phase = Phase::Succeeded),
            )
            .pod(pod("app/failed").app("b").on("w1").failed())
            .build();
        assert_eq!(
            evicted(&plan(&snapshot, &life_time(60, &["Succeeded"]))),
            ["app/done"]
        );
        assert_eq!(
            evicted(&plan(&snapshot, &life_time(60, &[]))),
            ["app/done", "app/failed"]
        );
    }

    #[test]
    fn the_reason_names_the_first_filter_given() {
        let snapshot = three_hosts()
            .pod(
                pod("app/crashing")
                    .app("a")
                    .on("w1")
                    .restarts(4, Some("CrashLoopBackOff")),
            )
            .pod(
                pod("app/killed")
                    .app("b")
                    .on("w1")
                    .terminated(137, "OOMKilled"),
            )
            .pod(pod("app/completed").app("c").on("w1").with(|pod| {
                pod.conditions =
                    Box::new([condition("Ready", "False", "PodCompleted", hours_ago(2))]);
            }))
            .build();
        let reasons = |args: PodLifeTimeArgs| -> Vec<String> {
            let plan = plan(&snapshot, &policy(vec![Strategy::PodLifeTime(args)]));
            plan.evictions
                .iter()
                .map(|e| e.reason.to_string())
                .collect()
        };
        assert_eq!(
            reasons(PodLifeTimeArgs {
                states: vec!["CrashLoopBackOff".into()],
                ..PodLifeTimeArgs::default()
            }),
            ["in state CrashLoopBackOff"]
        );
        assert_eq!(
            reasons(PodLifeTimeArgs {
                exit_codes: vec![137],
                ..PodLifeTimeArgs::default()
            }),
            ["a container exited with code 137"]
        );
        assert_eq!(
            reasons(PodLifeTimeArgs {
                conditions: vec![ConditionFilter {
                    reason: Some("PodCompleted".into()),
                    min_time_since_last_transition_seconds: Some(300),
                    ..ConditionFilter::default()
                }],
                ..PodLifeTimeArgs::default()
            }),
            ["condition Ready=False (PodCompleted) for 7200s"]
        );
    }

    #[test]
    fn a_transition_in_the_future_is_not_old_enough() {
        let snapshot = three_hosts()
            .pod(pod("app/skewed").app("a").on("w1").with(|pod| {
                pod.conditions =
                    Box::new([condition("Ready", "True", "", now() + Duration::hours(1))]);
            }))
            .build();
        let args = PodLifeTimeArgs {
            conditions: vec![ConditionFilter {
                min_time_since_last_transition_seconds: Some(0),
                ..ConditionFilter::default()
            }],
            ..PodLifeTimeArgs::default()
        };
        let plan = plan(&snapshot, &policy(vec![Strategy::PodLifeTime(args)]));
        assert!(plan.evictions.is_empty(), "{:?}", evicted(&plan));
    }

    #[test]
    fn a_pod_without_creation_time_goes_first_but_is_never_old_enough() {
        let snapshot = three_hosts()
            .pod(pod("app/old").app("a").on("w1").age_minutes(120))
            .pod(
                pod("app/unknown")
                    .app("b")
                    .on("w1")
                    .with(|pod| pod.created = None),
            )
            .build();
        let running = PodLifeTimeArgs {
            states: vec!["Running".into()],
            ..PodLifeTimeArgs::default()
        };
        let plan_with = |args| plan(&snapshot, &policy(vec![Strategy::PodLifeTime(args)]));
        // Upstream reads a missing creation time as the zero time: the oldest of all.
        assert_eq!(
            evicted(&plan_with(running.clone())),
            ["app/unknown", "app/old"]
        );
        // Its age is unknown, so no maxPodLifeTimeSeconds is exceeded (upstream: always).
        let aged = PodLifeTimeArgs {
            max_pod_life_time_seconds: Some(60),
            ..running
        };
        assert_eq!(evicted(&plan_with(aged)), ["app/old"]);
    }

    #[test]
    fn namespaces_narrow_every_filter() {
        let args = PodLifeTimeArgs {
            namespaces: Namespaces {
                include: vec!["batch".to_string()],
                exclude: Vec::new(),
            },
            states: vec!["Running".to_string()],
            ..PodLifeTimeArgs::default()
        };
        let snapshot = three_hosts()
            .pod(pod("batch/a").app("a").on("w1"))
            .pod(pod("shop/b").app("b").on("w1"))
            .build();
        let plan = plan(&snapshot, &policy(vec![Strategy::PodLifeTime(args)]));
        assert_eq!(evicted(&plan), ["batch/a"]);
    }
}
