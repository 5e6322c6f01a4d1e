//! `PodLifeTime`: pods created more than `maxPodLifeTimeSeconds` ago, optionally only in the
//! given `states` (a phase, `status.reason`, or a container's waiting reason), oldest first,
//! as upstream. Finished pods count as upstream counts them: `states: [Succeeded]` deletes old
//! completed pods, and without `states` an old finished pod goes like any other.

use super::{admits, age_seconds, is_finished_candidate};
use crate::plan::{Context, Fit, Planner};
use crate::policy::PodLifeTimeArgs;
use crate::snapshot::Pod;

pub fn run(planner: &mut Planner, context: &Context, args: &PodLifeTimeArgs) {
    let max = i64::from(args.max_pod_life_time_seconds);
    let mut old: Vec<(i64, usize)> = Vec::new();
    for pod in 0..planner.view.snapshot.pods.len() {
        if !(planner.is_candidate(pod) || is_finished_candidate(planner, pod))
            || !admits(planner, &args.namespaces, args.label_selector.as_ref(), pod)
        {
            continue;
        }
        match age_seconds(planner, pod) {
            Some(age) if age > max && in_states(planner.view.pod(pod), &args.states) => {
                old.push((age, pod));
            }
            _ => {}
        }
    }
    // Oldest first, so limits and budgets keep the youngest; the index (namespace/name order)
    // breaks ties.
    old.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for (age, pod) in old {
        let reason = format!("created {age}s ago, more than maxPodLifeTimeSeconds {max}");
        planner.attempt(context, pod, reason, Fit::Evictor);
    }
}

/// Whether the pod is in one of `states`, when given: its phase, its `status.reason`, or a
/// container's waiting reason.
fn in_states(pod: &Pod, states: &[String]) -> bool {
    states.is_empty()
        || states
            .iter()
            .any(|state| state == pod.phase.as_str() || pod.reason.as_ref() == Some(state))
        || pod
            .statuses(false)
            .filter_map(|status| status.waiting_reason.as_ref())
            .any(|reason| states.contains(reason))
}

#[cfg(test)]
mod tests {
    use crate::plan::plan;
    use crate::plan::testing::*;
    use crate::policy::{Limits, PodLifeTimeArgs, Strategy};
    use crate::snapshot::Phase;

    fn life_time(seconds: u32, states: &[&str]) -> crate::policy::Policy {
        policy(vec![Strategy::PodLifeTime(PodLifeTimeArgs {
            max_pod_life_time_seconds: seconds,
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
            plan.evictions[0].reason,
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
                    .with(|pod| pod.reason = Some("NodeLost".to_string())),
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
}
