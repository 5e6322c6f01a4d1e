//! `RemovePodsHavingTooManyRestarts`: pods whose containers restarted at least
//! `podRestartThreshold` times in all (init containers too with `includingInitContainers`),
//! optionally only in the given `states` (phase `Running`, or a container waiting in
//! `CrashLoopBackOff`), as upstream. A pod that keeps failing on one node may run on another.
//!
//! Unlike upstream, finished pods are not considered, and pods are taken in the eviction order.

use super::{admits, evict_in_order};
use crate::plan::{Context, EvictionReason, Fit, Planner};
use crate::policy::plugins::TooManyRestartsArgs;
use crate::snapshot::Pod;

pub fn run(planner: &mut Planner, context: &Context, args: &TooManyRestartsArgs) {
    let mut violating = Vec::new();
    for pod in planner.view.pod_indices() {
        if !planner.is_candidate(pod)
            || !admits(planner, &args.namespaces, args.label_selector.as_ref(), pod)
        {
            continue;
        }
        let pod_ref = planner.view.pod(pod);
        let restarts = restarts(pod_ref, args.including_init_containers);
        if restarts < i64::from(args.pod_restart_threshold) || !in_states(pod_ref, args) {
            continue;
        }
        let reason = EvictionReason::TooManyRestarts {
            restarts,
            threshold: args.pod_restart_threshold,
        };
        violating.push((pod, reason));
    }
    evict_in_order(planner, context, violating, Fit::Evictor);
}

/// Restarts of the pod's containers, summed.
fn restarts(pod: &Pod, including_init: bool) -> i64 {
    pod.statuses(including_init)
        .map(|status| i64::from(status.restart_count))
        .sum()
}

/// Whether the pod is in one of `states`, when given: its phase, or a container's waiting
/// reason (init containers' too with `includingInitContainers`).
fn in_states(pod: &Pod, args: &TooManyRestartsArgs) -> bool {
    args.states.is_empty()
        || args.states.iter().any(|state| state == pod.phase.as_str())
        || pod
            .statuses(args.including_init_containers)
            .filter_map(|status| status.waiting_reason.as_ref())
            .any(|reason| args.states.contains(reason))
}

#[cfg(test)]
mod tests {
    use crate::plan::plan;
    use crate::plan::testing::*;
    use crate::policy::Strategy;
    use crate::policy::plugins::TooManyRestartsArgs;
    use crate::snapshot::ContainerStatus;

    fn restarts(args: TooManyRestartsArgs) -> crate::policy::Policy {
        policy(vec![Strategy::TooManyRestarts(args)])
    }

    fn threshold(threshold: i32) -> TooManyRestartsArgs {
        TooManyRestartsArgs {
            pod_restart_threshold: threshold,
            ..TooManyRestartsArgs::default()
        }
    }

    #[test]
    fn pods_at_or_over_the_threshold_are_evicted() {
        let snapshot = three_hosts()
            .pod(pod("app/over").app("a").on("w1").restarts(30, None))
            .pod(
                pod("app/at")
                    .app("b")
                    .on("w1")
                    .restarts(25, None)
                    .restarts(0, None),
            )
            .pod(pod("app/under").app("c").on("w1").restarts(24, None))
            .build();
        let plan = plan(&snapshot, &restarts(threshold(25)));
        assert_eq!(evicted(&plan), ["app/at", "app/over"]);
        assert_eq!(
            plan.evictions[1].reason.to_string(),
            "its containers restarted 30 times, at least podRestartThreshold 25"
        );
    }

    #[test]
    fn init_containers_count_only_when_asked() {
        let snapshot = three_hosts()
            .pod(
                pod("app/a")
                    .app("a")
                    .on("w1")
                    .restarts(5, None)
                    .with(|pod| {
                        pod.extras_mut()
                            .init_container_statuses
                            .push(ContainerStatus {
                                restart_count: 5,
                                ..ContainerStatus::default()
                            })
                    }),
            )
            .build();
        assert!(
            plan(&snapshot, &restarts(threshold(10)))
                .evictions
                .is_empty()
        );
        let including = TooManyRestartsArgs {
            including_init_containers: true,
            ..threshold(10)
        };
        assert_eq!(evicted(&plan(&snapshot, &restarts(including))), ["app/a"]);
    }

    #[test]
    fn states_restrict_to_running_pods_or_crash_looping_containers() {
        let snapshot = three_hosts()
            .pod(
                pod("app/looping")
                    .app("a")
                    .on("w1")
                    .restarts(9, Some("CrashLoopBackOff")),
            )
            .pod(pod("app/running").app("b").on("w1").restarts(9, None))
            .pod(
                pod("app/pending")
                    .app("c")
                    .on("w1")
                    .restarts(9, Some("ImagePullBackOff"))
                    .with(|pod| pod.phase = crate::snapshot::Phase::Pending),
            )
            .build();
        let in_states = |states: &[&str]| TooManyRestartsArgs {
            states: states.iter().map(|s| s.to_string()).collect(),
            ..threshold(5)
        };
        assert_eq!(
            evicted(&plan(
                &snapshot,
                &restarts(in_states(&["CrashLoopBackOff"]))
            )),
            ["app/looping"]
        );
        assert_eq!(
            evicted(&plan(&snapshot, &restarts(in_states(&["Running"])))),
            ["app/looping", "app/running"]
        );
        assert_eq!(
            evicted(&plan(&snapshot, &restarts(threshold(5)))),
            ["app/looping", "app/pending", "app/running"]
        );
    }
}
