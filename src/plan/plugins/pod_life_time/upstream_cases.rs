//! Upstream's `pod_lifetime_test.go` (kubernetes-sigs/descheduler master,
//! `pkg/framework/plugins/podlifetime/`), every table case, in its order and under its
//! description. Upstream's cases run one node with nodeFit off; these run w1 of the three-host
//! lab with nodeFit off, in namespace `default` as upstream's pods. Upstream's "old" pods were
//! created in 2009, its "new" ones now; its transitions are two hours ("old") or one minute
//! ("new") ago.

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};

use crate::plan::plan;
use crate::plan::testing::*;
use crate::policy::plugins::{ConditionFilter, OwnerKinds, PodLifeTimeArgs};
use crate::policy::{EvictorArgs, Limits, Strategy};
use crate::snapshot::{ContainerStatus, Owner, Phase, Pod, PodCondition, Terminated};

/// One upstream case: the pods PodLifeTime with `args` evicts, by name, and how many.
struct Case {
    description: &'static str,
    args: PodLifeTimeArgs,
    pods: Vec<PodBuilder>,
    evictor: EvictorArgs,
    limits: Limits,
    /// The pods upstream names as evicted (a subset, as upstream checks; `count` is exact).
    expected: &'static [&'static str],
    count: usize,
}

impl Case {
    fn new(description: &'static str, args: PodLifeTimeArgs, pods: Vec<PodBuilder>) -> Case {
        Case {
            description,
            args,
            pods,
            evictor: EvictorArgs {
                node_fit: false,
                ..EvictorArgs::default()
            },
            limits: Limits::default(),
            expected: &[],
            count: 0,
        }
    }

    fn evicts(mut self, count: usize, expected: &'static [&'static str]) -> Case {
        self.count = count;
        self.expected = expected;
        self
    }

    fn run(self) {
        let mut lab = three_hosts();
        for pod in self.pods {
            lab = lab.pod(pod);
        }
        let mut policy = policy_with(self.evictor, vec![Strategy::PodLifeTime(self.args)]);
        policy.limits = self.limits;
        let plan = plan(&lab.build(), &policy);
        let names: Vec<&str> = plan.evictions.iter().map(|e| e.pod.as_str()).collect();
        assert_eq!(names.len(), self.count, "{}: {names:?}", self.description);
        for name in self.expected {
            assert!(names.contains(name), "{}: {names:?}", self.description);
        }
    }
}

fn max(seconds: u32) -> PodLifeTimeArgs {
    PodLifeTimeArgs {
        max_pod_life_time_seconds: Some(seconds),
        ..PodLifeTimeArgs::default()
    }
}

fn max_and_states(seconds: u32, states: &[&str]) -> PodLifeTimeArgs {
    PodLifeTimeArgs {
        states: states.iter().map(|s| s.to_string()).collect(),
        ..max(seconds)
    }
}

fn states(states: &[&str]) -> PodLifeTimeArgs {
    PodLifeTimeArgs {
        states: states.iter().map(|s| s.to_string()).collect(),
        ..PodLifeTimeArgs::default()
    }
}

fn with_conditions(base: PodLifeTimeArgs, filters: Vec<ConditionFilter>) -> PodLifeTimeArgs {
    PodLifeTimeArgs {
        conditions: filters,
        ..base
    }
}

fn filter(
    condition_type: &str,
    status: &str,
    reason: &str,
    min_seconds: Option<u32>,
) -> ConditionFilter {
    let given = |text: &str| (!text.is_empty()).then(|| text.to_string());
    ConditionFilter {
        condition_type: given(condition_type),
        status: given(status),
        reason: given(reason),
        min_time_since_last_transition_seconds: min_seconds,
    }
}

pub(super) fn hours_ago(hours: i64) -> DateTime<Utc> {
    now() - Duration::hours(hours)
}

fn old_transition() -> DateTime<Utc> {
    hours_ago(2)
}

fn new_transition() -> DateTime<Utc> {
    now() - Duration::minutes(1)
}

pub(super) fn condition(
    condition_type: &str,
    status: &str,
    reason: &str,
    at: DateTime<Utc>,
) -> PodCondition {
    PodCondition {
        condition_type: condition_type.into(),
        status: status.into(),
        reason: (!reason.is_empty()).then(|| reason.into()),
        last_transition: Some(at),
    }
}

fn waiting(reason: &str) -> ContainerStatus {
    ContainerStatus {
        waiting_reason: Some(reason.to_string()),
        ..ContainerStatus::default()
    }
}

fn terminated(reason: &str, exit_code: i32) -> ContainerStatus {
    ContainerStatus {
        terminated: Some(Terminated {
            reason: (!reason.is_empty()).then(|| reason.to_string()),
            exit_code,
        }),
        ..ContainerStatus::default()
    }
}

/// Upstream's pods: `default/<name>` on the one node, owned by a ReplicaSet.
fn upstream_pod(name: &str) -> PodBuilder {
    pod(&format!("default/{name}")).on("w1")
}

/// Created in 2009, as upstream's `olderPodCreationTime`.
fn older(name: &str) -> PodBuilder {
    upstream_pod(name).with(|pod| {
        pod.created = Some(
            DateTime::parse_from_rfc3339("2009-11-10T23:00:00Z")
                .expect("a time")
                .to_utc(),
        );
    })
}

/// Created now, as upstream's `newerPodCreationTime`.
fn newer(name: &str) -> PodBuilder {
    upstream_pod(name).with(|pod| pod.created = Some(now()))
}

fn older_pending(name: &str) -> PodBuilder {
    older(name).with(|pod| pod.phase = Phase::Pending)
}

fn created_seconds_ago(name: &str, seconds: i64) -> PodBuilder {
    upstream_pod(name).with(|pod| pod.created = Some(now() - Duration::seconds(seconds)))
}

fn bare(builder: PodBuilder) -> PodBuilder {
    builder.with(|pod| pod.owners = Default::default())
}

fn job_owned(builder: PodBuilder) -> PodBuilder {
    builder.with(|pod| {
        pod.owners = Arc::from([Owner {
            kind: "Job".into(),
            name: "job1".into(),
            uid: "job1-uid".into(),
            controller: false,
        }]);
    })
}

fn in_phase(builder: PodBuilder, phase: Phase) -> PodBuilder {
    builder.with(|pod| pod.phase = phase)
}

fn containers(builder: PodBuilder, statuses: Vec<ContainerStatus>) -> PodBuilder {
    builder.with(|pod| pod.extras_mut().container_statuses = statuses)
}

fn init_containers(builder: PodBuilder, statuses: Vec<ContainerStatus>) -> PodBuilder {
    builder.with(|pod| pod.extras_mut().init_container_statuses = statuses)
}

fn ephemeral_containers(builder: PodBuilder, statuses: Vec<ContainerStatus>) -> PodBuilder {
    builder.with(|pod| pod.extras_mut().ephemeral_container_statuses = statuses)
}

fn with_pod_conditions(builder: PodBuilder, conditions: Vec<PodCondition>) -> PodBuilder {
    builder.with(|pod| pod.conditions = conditions.into())
}

fn foo_bar_selector() -> Option<crate::snapshot::Requirements> {
    Some(
        crate::policy::parse_selector("foo=bar")
            .expect("a valid selector")
            .into(),
    )
}

fn run_all(cases: Vec<Case>) {
    for case in cases {
        case.run();
    }
}

#[test]
fn upstream_pod_life_time() {
    run_all(vec![Case::new(
        "No pod should be evicted since pod terminating",
        PodLifeTimeArgs {
            label_selector: foo_bar_selector(),
            ..max(600)
        },
        vec![
            older("p14").with(|pod| pod.terminating = true),
            older("p15").with(|pod| pod.terminating = true),
        ],
    )]);
}

#[test]
fn upstream_evictor_configuration() {
    let with_claim = |pod: &mut Pod| pod.extras_mut().claims = vec!["foo".to_string()];
    let mut ignoring_claims = Case::new(
        "Does not evict pvc pods with ignorePvcPods set to true",
        max(600),
        vec![older("p11").with(with_claim)],
    );
    ignoring_claims.evictor.protections.pods_with_pvc = true;
    run_all(vec![
        ignoring_claims,
        Case::new(
            "Evicts pvc pods with ignorePvcPods set to false (or unset)",
            max(600),
            vec![older("p11").with(with_claim)],
        )
        .evicts(1, &[]),
    ]);
}

#[test]
fn upstream_generic_filtering() {
    run_all(vec![
        Case::new(
            "1 pod matching label selector should be evicted",
            PodLifeTimeArgs {
                label_selector: foo_bar_selector(),
                ..max(600)
            },
            vec![
                older("p12").label("foo", "bar"),
                older("p13").label("foo", "bar1"),
            ],
        )
        .evicts(1, &["p12"]),
    ]);
}

#[test]
fn upstream_eviction_limits() {
    let limited = |description, limits: Limits| {
        let mut case =
            Case::new(description, max(600), vec![newer("p1"), older("p2")]).evicts(1, &["p2"]);
        case.limits = limits;
        case
    };
    run_all(vec![
        Case::new(
            "2 Oldest pods should be evicted when maxPodsToEvictPerNode and \
             maxPodsToEvictPerNamespace are not set",
            max(600),
            vec![newer("p1"), older("p2"), older_pending("p9")],
        )
        .evicts(2, &["p2", "p9"]),
        limited(
            "1 Oldest pod should be evicted when maxPodsToEvictPerNamespace is set to 1",
            Limits {
                per_namespace: Some(1),
                ..Limits::default()
            },
        ),
        limited(
            "1 Oldest pod should be evicted when maxPodsToEvictTotal is set to 1",
            Limits {
                per_namespace: Some(2),
                total: Some(1),
                ..Limits::default()
            },
        ),
        limited(
            "1 Oldest pod should be evicted when maxPodsToEvictPerNode is set to 1",
            Limits {
                per_node: Some(1),
                ..Limits::default()
            },
        ),
    ]);
}

#[test]
fn upstream_container_waiting_reasons() {
    let stuck_in = |state: &'static str, description: &'static str| {
        Case::new(
            description,
            max_and_states(600, &[state]),
            vec![containers(older_pending("p9"), vec![waiting(state)])],
        )
        .evicts(1, &[])
    };
    run_all(vec![
        Case::new(
            "Two pods, one with ContainerCreating state. 1 should be evicted.",
            max_and_states(600, &["ContainerCreating"]),
            vec![
                older_pending("p9"),
                containers(
                    older("container-creating-stuck"),
                    vec![waiting("ContainerCreating")],
                ),
            ],
        )
        .evicts(1, &[]),
        Case::new(
            "Two pods, one with PodInitializing state. 1 should be evicted.",
            max_and_states(600, &["PodInitializing"]),
            vec![
                older_pending("p9"),
                containers(
                    older("pod-initializing-stuck"),
                    vec![waiting("PodInitializing")],
                ),
            ],
        )
        .evicts(1, &[]),
        stuck_in(
            "ImagePullBackOff",
            "1 pod with container status ImagePullBackOff should be evicted",
        ),
        stuck_in(
            "CrashLoopBackOff",
            "1 pod with container status CrashLoopBackOff should be evicted",
        ),
        stuck_in(
            "CreateContainerConfigError",
            "1 pod with container status CreateContainerConfigError should be evicted",
        ),
        stuck_in(
            "ErrImagePull",
            "1 pod with container status ErrImagePull should be evicted",
        ),
        Case::new(
            "1 pod with init container status CreateContainerError should not be evicted \
             without includingInitContainers",
            max_and_states(600, &["CreateContainerError"]),
            vec![init_containers(
                older_pending("p9"),
                vec![waiting("CreateContainerError")],
            )],
        ),
        Case::new(
            "1 pod with init container status CreateContainerError should be evicted with \
             includingInitContainers",
            PodLifeTimeArgs {
                including_init_containers: true,
                ..max_and_states(600, &["CreateContainerError"])
            },
            vec![init_containers(
                older_pending("p9"),
                vec![waiting("CreateContainerError")],
            )],
        )
        .evicts(1, &[]),
        Case::new(
            "1 pod with ephemeral container status CreateContainerError should not be \
             evicted without includingEphemeralContainers",
            max_and_states(600, &["CreateContainerError"]),
            vec![ephemeral_containers(
                older_pending("p9"),
                vec![waiting("CreateContainerError")],
            )],
        ),
        Case::new(
            "1 pod with ephemeral container status CreateContainerError should be evicted \
             with includingEphemeralContainers",
            PodLifeTimeArgs {
                including_ephemeral_containers: true,
                ..max_and_states(600, &["CreateContainerError"])
            },
            vec![ephemeral_containers(
                older_pending("p9"),
                vec![waiting("CreateContainerError")],
            )],
        )
        .evicts(1, &[]),
        stuck_in(
            "CreateContainerError",
            "1 pod with container status CreateContainerError should be evicted",
        ),
        stuck_in(
            "InvalidImageName",
            "1 pod with container status InvalidImageName should be evicted",
        ),
        Case::new(
            "1 pod with ImagePullBackOff status should be ignored when States filter is \
             ContainerCreating",
            max_and_states(600, &["ContainerCreating"]),
            vec![containers(
                older_pending("p9"),
                vec![waiting("ImagePullBackOff")],
            )],
        ),
    ]);
}

#[test]
fn upstream_pod_status_reasons() {
    let with_reason = |reason: &'static str, description: &'static str| {
        Case::new(
            description,
            max_and_states(600, &[reason]),
            vec![
                older_pending("p9").with(|pod| pod.extras_mut().reason = Some(reason.to_string())),
            ],
        )
        .evicts(1, &[])
    };
    run_all(vec![
        with_reason(
            "NodeLost",
            "1 pod with pod status reason NodeLost should be evicted",
        ),
        with_reason(
            "NodeAffinity",
            "1 pod with pod status reason NodeAffinity should be evicted",
        ),
        with_reason(
            "Shutdown",
            "1 pod with pod status reason Shutdown should be evicted",
        ),
        with_reason(
            "UnexpectedAdmissionError",
            "1 pod with pod status reason UnexpectedAdmissionError should be evicted",
        ),
    ]);
}

#[test]
fn upstream_age_threshold() {
    run_all(vec![
        Case::new(
            "Two pods in the default namespace, 1 is new and 1 very is old. 1 should be \
             evicted.",
            max(600),
            vec![newer("p1"), older("p2")],
        )
        .evicts(1, &["p2"]),
        Case::new(
            "Two pods in the default namespace, 2 are new and 0 are old. 0 should be \
             evicted.",
            max(600),
            vec![newer("p3"), newer("p4")],
        ),
        Case::new(
            "Two pods in the default namespace, 1 created 605 seconds ago. 1 should be \
             evicted.",
            max(600),
            vec![newer("p5"), created_seconds_ago("p6", 605)],
        )
        .evicts(1, &["p6"]),
        Case::new(
            "Two pods in the default namespace, 1 created 595 seconds ago. 0 should be \
             evicted.",
            max(600),
            vec![bare(newer("p7")), bare(created_seconds_ago("p8", 595))],
        ),
    ]);
}

#[test]
fn upstream_pod_phase_states() {
    let in_state = |phase: Phase, description: &'static str| {
        Case::new(
            description,
            max_and_states(600, &[phase.as_str()]),
            vec![in_phase(older("p16"), phase)],
        )
        .evicts(1, &[])
    };
    run_all(vec![
        Case::new(
            "Two old pods with different states. 1 should be evicted.",
            max_and_states(600, &["Pending"]),
            vec![older_pending("p9"), in_phase(older("p10"), Phase::Running)],
        )
        .evicts(1, &["p9"]),
        in_state(
            Phase::Succeeded,
            "1 pod with pod status phase v1.PodSucceeded should be evicted",
        ),
        in_state(
            Phase::Failed,
            "1 pod with pod status phase v1.PodFailed should be evicted",
        ),
        in_state(
            Phase::Unknown,
            "1 pod with pod status phase v1.PodUnknown should be evicted",
        ),
    ]);
}

#[test]
fn upstream_states_with_terminated_reasons() {
    run_all(vec![
        Case::new(
            "evict pod with matching terminated reason via states",
            states(&["Failed", "NodeAffinity"]),
            vec![containers(
                in_phase(upstream_pod("p1"), Phase::Failed),
                vec![terminated("NodeAffinity", 0)],
            )],
        )
        .evicts(1, &[]),
        Case::new(
            "evict pod with matching pod status reason via states",
            states(&["Shutdown"]),
            vec![
                in_phase(upstream_pod("p1"), Phase::Failed)
                    .with(|pod| pod.extras_mut().reason = Some("Shutdown".to_string())),
            ],
        )
        .evicts(1, &[]),
        Case::new(
            "states matches terminated reason on init container",
            PodLifeTimeArgs {
                including_init_containers: true,
                ..states(&["CreateContainerConfigError"])
            },
            vec![init_containers(
                upstream_pod("p1"),
                vec![terminated("CreateContainerConfigError", 0)],
            )],
        )
        .evicts(1, &[]),
        Case::new(
            "states does not match terminated reason on init container without flag",
            states(&["CreateContainerConfigError"]),
            vec![init_containers(
                upstream_pod("p1"),
                vec![terminated("CreateContainerConfigError", 0)],
            )],
        ),
    ]);
}

#[test]
fn upstream_condition_filtering() {
    let none = PodLifeTimeArgs::default;
    run_all(vec![
        Case::new(
            "evict pod with matching condition reason",
            with_conditions(none(), vec![filter("", "True", "PodCompleted", None)]),
            vec![
                with_pod_conditions(
                    upstream_pod("p1"),
                    vec![condition(
                        "Initialized",
                        "True",
                        "PodCompleted",
                        old_transition(),
                    )],
                ),
                with_pod_conditions(
                    upstream_pod("p2"),
                    vec![condition(
                        "Initialized",
                        "True",
                        "OtherReason",
                        old_transition(),
                    )],
                ),
            ],
        )
        .evicts(1, &["p1"]),
        Case::new(
            "evict pod matching condition type only",
            with_conditions(none(), vec![filter("Ready", "", "", None)]),
            vec![with_pod_conditions(
                upstream_pod("p1"),
                vec![condition("Ready", "False", "", old_transition())],
            )],
        )
        .evicts(1, &[]),
        Case::new(
            "no matching conditions, 0 evictions",
            with_conditions(none(), vec![filter("", "", "PodCompleted", None)]),
            vec![with_pod_conditions(
                upstream_pod("p1"),
                vec![PodCondition {
                    last_transition: None,
                    ..condition("Ready", "True", "SomethingElse", old_transition())
                }],
            )],
        ),
    ]);
}

#[test]
fn upstream_transition_time_filtering() {
    let succeeded = || in_phase(upstream_pod("p1"), Phase::Succeeded);
    run_all(vec![
        Case::new(
            "evict pod with old transition time",
            with_conditions(
                states(&["Succeeded"]),
                vec![filter("", "True", "PodCompleted", Some(300))],
            ),
            vec![with_pod_conditions(
                succeeded(),
                vec![
                    condition("Initialized", "True", "PodCompleted", old_transition()),
                    condition("Ready", "False", "PodCompleted", old_transition()),
                ],
            )],
        )
        .evicts(1, &["p1"]),
        Case::new(
            "do not evict pod with recent transition time",
            with_conditions(
                states(&["Succeeded"]),
                vec![filter("", "", "", Some(14400))],
            ),
            vec![with_pod_conditions(
                succeeded(),
                vec![condition("Ready", "False", "", new_transition())],
            )],
        ),
        Case::new(
            "transition time scoped to matching conditions only",
            with_conditions(
                PodLifeTimeArgs::default(),
                vec![filter("", "", "PodCompleted", Some(300))],
            ),
            vec![with_pod_conditions(
                upstream_pod("p1"),
                vec![
                    condition("Initialized", "", "PodCompleted", old_transition()),
                    condition("Ready", "", "OtherReason", new_transition()),
                ],
            )],
        )
        .evicts(1, &["p1"]),
        Case::new(
            "no conditions on pod, transition time filter returns false",
            with_conditions(states(&["Running"]), vec![filter("", "", "", Some(300))]),
            vec![in_phase(upstream_pod("p1"), Phase::Running)],
        ),
    ]);
}

#[test]
fn upstream_owner_kinds_filtering() {
    let failed_pods = || {
        vec![
            job_owned(in_phase(upstream_pod("p1"), Phase::Failed)),
            in_phase(upstream_pod("p2"), Phase::Failed),
        ]
    };
    run_all(vec![
        Case::new(
            "exclude Job owner kind",
            PodLifeTimeArgs {
                owner_kinds: OwnerKinds {
                    include: Vec::new(),
                    exclude: vec!["Job".to_string()],
                },
                ..states(&["Failed"])
            },
            failed_pods(),
        )
        .evicts(1, &["p2"]),
        Case::new(
            "include only Job owner kind",
            PodLifeTimeArgs {
                owner_kinds: OwnerKinds {
                    include: vec!["Job".to_string()],
                    exclude: Vec::new(),
                },
                ..states(&["Failed"])
            },
            failed_pods(),
        )
        .evicts(1, &["p1"]),
    ]);
}

#[test]
fn upstream_states_with_ephemeral_containers() {
    let oom_killed_debugger =
        || ephemeral_containers(upstream_pod("p1"), vec![terminated("OOMKilled", 0)]);
    run_all(vec![
        Case::new(
            "states matches terminated reason on ephemeral container",
            PodLifeTimeArgs {
                including_ephemeral_containers: true,
                ..states(&["OOMKilled"])
            },
            vec![oom_killed_debugger()],
        )
        .evicts(1, &[]),
        Case::new(
            "states does not match ephemeral container without flag",
            states(&["OOMKilled"]),
            vec![oom_killed_debugger()],
        ),
    ]);
}

#[test]
fn upstream_exit_codes_filtering() {
    let exited_with_1 = || {
        containers(
            in_phase(upstream_pod("p1"), Phase::Failed),
            vec![terminated("", 1)],
        )
    };
    run_all(vec![
        Case::new(
            "evict pod with matching exit code",
            PodLifeTimeArgs {
                exit_codes: vec![1],
                ..states(&["Failed"])
            },
            vec![exited_with_1()],
        )
        .evicts(1, &[]),
        Case::new(
            "exit code not matched, 0 evictions",
            PodLifeTimeArgs {
                exit_codes: vec![2],
                ..states(&["Failed"])
            },
            vec![exited_with_1()],
        ),
    ]);
}

#[test]
fn upstream_combined_filters() {
    run_all(vec![
        Case::new(
            "user scenario: Succeeded + PodCompleted condition + transition time threshold",
            with_conditions(
                states(&["Succeeded"]),
                vec![filter("", "True", "PodCompleted", Some(300))],
            ),
            vec![
                with_pod_conditions(
                    in_phase(upstream_pod("stale-completed"), Phase::Succeeded),
                    vec![
                        condition("Initialized", "True", "PodCompleted", old_transition()),
                        condition("Ready", "False", "PodCompleted", old_transition()),
                    ],
                ),
                with_pod_conditions(
                    in_phase(upstream_pod("recent-completed"), Phase::Succeeded),
                    vec![condition(
                        "Initialized",
                        "True",
                        "PodCompleted",
                        new_transition(),
                    )],
                ),
                in_phase(upstream_pod("running-pod"), Phase::Running),
            ],
        )
        .evicts(1, &["stale-completed"]),
        Case::new(
            "failed pod removal compat: Failed + min age + exclude Job",
            PodLifeTimeArgs {
                owner_kinds: OwnerKinds {
                    include: Vec::new(),
                    exclude: vec!["Job".to_string()],
                },
                ..max_and_states(0, &["Failed"])
            },
            vec![
                containers(
                    in_phase(upstream_pod("failed-rs"), Phase::Failed),
                    vec![terminated("Error", 0)],
                ),
                job_owned(in_phase(upstream_pod("failed-job"), Phase::Failed)),
            ],
        )
        .evicts(1, &["failed-rs"]),
    ]);
}
