//! `RemoveFailedPods`: pods in phase `Failed`, which stay on their node (and in every listing)
//! until someone deletes them, as upstream: optionally only those older than
//! `minPodLifetimeSeconds`, not owned by an `excludeOwnerKinds` kind, with one of `reasons`
//! (`status.reason`, or a container's waiting or terminated reason) and with a container that
//! terminated with one of `exitCodes`; init containers count with `includingInitContainers`.
//!
//! A failed pod holds no resources and no disruption budget (the Eviction API lets it go), and
//! its eviction changes no other strategy's counts.

use super::{admits, age_seconds, evict_in_order, is_finished_candidate};
use crate::plan::{Context, EvictionReason, Fit, Planner, PodFailure};
use crate::policy::plugins::FailedPodsArgs;
use crate::snapshot::{ContainerStatus, Phase, Pod};

pub fn run(planner: &mut Planner, context: &Context, args: &FailedPodsArgs) {
    let mut violating = Vec::new();
    for pod in planner.view.pod_indices() {
        if !is_finished_candidate(planner, pod)
            || planner.view.pod(pod).phase != Phase::Failed
            || !admits(planner, &args.namespaces, args.label_selector.as_ref(), pod)
        {
            continue;
        }
        let pod_ref = planner.view.pod(pod);
        let excluded_owner = pod_ref.owners.iter().any(|owner| {
            args.exclude_owner_kinds
                .iter()
                .any(|kind| kind == owner.kind.as_str())
        });
        let old_enough = match args.min_pod_lifetime_seconds {
            None => true,
            Some(min) => age_seconds(planner, pod).is_some_and(|age| age > i64::from(min)),
        };
        if excluded_owner
            || !old_enough
            || !has_reason(pod_ref, args)
            || !has_exit_code(pod_ref, args)
        {
            continue;
        }
        violating.push((pod, describe(pod_ref)));
    }
    evict_in_order(planner, context, violating, Fit::Evictor);
}

/// Whether one of `reasons` (when given) is the pod's or a container's.
fn has_reason(pod: &Pod, args: &FailedPodsArgs) -> bool {
    if args.reasons.is_empty() {
        return true;
    }
    let containers = pod
        .statuses(args.including_init_containers)
        .flat_map(ContainerStatus::reasons);
    pod.reason()
        .into_iter()
        .chain(containers)
        .any(|reason| args.reasons.iter().any(|listed| listed == reason))
}

/// Whether a container terminated with one of `exitCodes` (when given).
fn has_exit_code(pod: &Pod, args: &FailedPodsArgs) -> bool {
    args.exit_codes.is_empty()
        || pod
            .statuses(args.including_init_containers)
            .filter_map(|status| status.terminated.as_ref())
            .any(|terminated| args.exit_codes.contains(&terminated.exit_code))
}

/// Why it failed, for the eviction's reason: its own reason, or a container's exit code.
fn describe(pod: &Pod) -> EvictionReason {
    let terminated = pod
        .statuses(true)
        .filter_map(|status| status.terminated.as_ref())
        .find(|terminated| terminated.exit_code != 0);
    EvictionReason::Failed(match (pod.reason(), terminated) {
        (Some(reason), _) => PodFailure::Reason(reason.to_string()),
        (None, Some(terminated)) => PodFailure::ExitCode {
            code: terminated.exit_code,
            reason: terminated.reason.clone(),
        },
        (None, None) => PodFailure::Unknown,
    })
}

#[cfg(test)]
mod tests {
    use crate::plan::testing::*;
    use crate::plan::{EvictionReason, PodFailure, plan};
    use crate::policy::plugins::FailedPodsArgs;
    use crate::policy::{EvictorArgs, Protections, Strategy};
    use crate::snapshot::{ContainerStatus, Terminated};

    fn failed_pods(args: FailedPodsArgs) -> crate::policy::Policy {
        policy(vec![Strategy::FailedPods(args)])
    }

    #[test]
    fn only_failed_pods_go() {
        let snapshot = three_hosts()
            .pod(pod("app/failed").app("a").on("w1").failed())
            .pod(pod("app/running").app("b").on("w1").terminated(1, "Error"))
            .build();
        let plan = plan(&snapshot, &failed_pods(FailedPodsArgs::default()));
        assert_eq!(evicted(&plan), ["app/failed"]);
        assert_eq!(
            plan.evictions[0].reason,
            EvictionReason::Failed(PodFailure::Unknown)
        );
    }

    #[test]
    fn excluded_owner_kinds_and_young_pods_stay() {
        let snapshot = three_hosts()
            .pod(
                pod("app/job")
                    .app("a")
                    .on("w1")
                    .owner("Job", "nightly")
                    .failed(),
            )
            .pod(pod("app/young").app("b").on("w1").age_minutes(5).failed())
            .pod(pod("app/old").app("c").on("w1").age_minutes(120).failed())
            .build();
        let args = FailedPodsArgs {
            exclude_owner_kinds: vec!["Job".to_string()],
            min_pod_lifetime_seconds: Some(3600),
            ..FailedPodsArgs::default()
        };
        let plan = plan(&snapshot, &failed_pods(args));
        assert_eq!(evicted(&plan), ["app/old"]);
        assert!(plan.skipped.is_empty());
    }

    #[test]
    fn reasons_come_from_the_pod_its_containers_and_with_the_flag_its_init_containers() {
        let init_oom = |pod: &mut crate::snapshot::Pod| {
            pod.extras_mut()
                .init_container_statuses
                .push(ContainerStatus {
                    terminated: Some(Terminated {
                        reason: Some("OOMKilled".to_string()),
                        exit_code: 137,
                    }),
                    ..ContainerStatus::default()
                })
        };
        let snapshot = three_hosts()
            .pod(
                pod("app/shutdown")
                    .app("a")
                    .on("w1")
                    .failed()
                    .with(|pod| pod.extras_mut().reason = Some("Shutdown".to_string())),
            )
            .pod(
                pod("app/oom")
                    .app("b")
                    .on("w1")
                    .failed()
                    .terminated(137, "OOMKilled"),
            )
            .pod(
                pod("app/init-oom")
                    .app("c")
                    .on("w1")
                    .failed()
                    .with(init_oom),
            )
            .pod(
                pod("app/error")
                    .app("d")
                    .on("w1")
                    .failed()
                    .terminated(1, "Error"),
            )
            .build();
        let reasons = |including_init_containers| FailedPodsArgs {
            reasons: vec!["Shutdown".to_string(), "OOMKilled".to_string()],
            including_init_containers,
            ..FailedPodsArgs::default()
        };
        assert_eq!(
            evicted(&plan(&snapshot, &failed_pods(reasons(false)))),
            ["app/oom", "app/shutdown"]
        );
        assert_eq!(
            evicted(&plan(&snapshot, &failed_pods(reasons(true)))),
            ["app/init-oom", "app/oom", "app/shutdown"]
        );
    }

    #[test]
    fn exit_codes_select_by_a_terminated_container() {
        let snapshot = three_hosts()
            .pod(
                pod("app/one")
                    .app("a")
                    .on("w1")
                    .failed()
                    .terminated(1, "Error"),
            )
            .pod(
                pod("app/two")
                    .app("b")
                    .on("w1")
                    .failed()
                    .terminated(2, "Error"),
            )
            .build();
        let args = FailedPodsArgs {
            exit_codes: vec![2],
            ..FailedPodsArgs::default()
        };
        assert_eq!(evicted(&plan(&snapshot, &failed_pods(args))), ["app/two"]);
    }

    #[test]
    fn a_failed_bare_pod_goes_only_when_its_protection_is_off() {
        let snapshot = three_hosts()
            .pod(
                pod("app/bare")
                    .on("w1")
                    .failed()
                    .with(|pod| pod.owners = Default::default()),
            )
            .build();
        let plan_default = plan(&snapshot, &failed_pods(FailedPodsArgs::default()));
        assert_eq!(
            skipped(&plan_default),
            [("app/bare".to_string(), "protected")]
        );
        let off = EvictorArgs {
            protections: Protections {
                failed_bare_pods: false,
                ..Protections::default()
            },
            ..EvictorArgs::default()
        };
        let policy = policy_with(off, vec![Strategy::FailedPods(FailedPodsArgs::default())]);
        assert_eq!(evicted(&plan(&snapshot, &policy)), ["app/bare"]);
    }
}
