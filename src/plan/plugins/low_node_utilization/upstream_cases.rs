//! Upstream's `TestLowNodeUtilization` table (kubernetes-sigs/descheduler,
//! `pkg/framework/plugins/nodeutilization/lownodeutilization_test.go`, master), each case run
//! twice as upstream runs it: by requests, and by actual usage (`metricsUtilization: {source:
//! KubernetesMetrics}`) from the NodeMetrics and PodMetrics the case records. Nodes, pods and
//! metrics are upstream's, in its units (millicores, bytes, pods), and its evictor's `nodeFit:
//! true`; each node runs on an ESXi host of its own, so host awareness changes nothing here.
//!
//! Every count is upstream's but where a comment says otherwise: those differ because a pod
//! moves here only to a destination it leaves at or below its target (upstream only checks that
//! the destinations' total room was positive before the move, so the last pod may overfill one);
//! docs/differences-from-upstream.md works the first of them through.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::plan::plan;
use crate::plan::testing::{Lab, PodBuilder, policy};
use crate::policy::plugins::LowNodeUtilizationArgs;
use crate::policy::{Namespaces, Strategy, UsageSource};
use crate::snapshot::{
    Labels, Metrics, NodeOperator, NodeRequirement, NodeSelectorTerm, Owner, Qos, ResourceName,
    Resources,
};

const EXTENDED: &str = "example.com/foo";
/// Upstream's `utils.SystemCriticalPriority`.
const SYSTEM_CRITICAL: i32 = 2_000_000_000;
const LOW_PRIORITY: i32 = 0;
const HIGH_PRIORITY: i32 = 10_000;

/// Upstream's units in ours: millicores, bytes (ours are milli-bytes), pods (ours are
/// thousandths).
fn amounts(cpu: i64, memory: i64, pods: i64) -> Resources {
    Resources::from_iter([
        (ResourceName::Cpu, cpu),
        (ResourceName::Memory, memory * 1000),
        (ResourceName::Pods, pods * 1000),
    ])
}

/// `BuildTestNode(name, cpu, memory, pods)` on a host of its own.
fn node(lab: Lab, name: &str, cpu: i64, memory: i64, pods: i64) -> Lab {
    let host = format!("esxi-{name}");
    let name = name.to_string();
    lab.host(&host).node(&name, &host).with(move |snapshot| {
        let node = snapshot
            .nodes
            .iter_mut()
            .find(|n| n.name == name)
            .expect("the node");
        node.allocatable = amounts(cpu, memory, pods);
    })
}

/// n1 (9 pods), n2 and a cordoned n3, 4 cpus and 3000 bytes each: most cases' nodes.
fn three_nodes() -> Lab {
    let lab = node(Lab::new(), "n1", 4000, 3000, 9);
    let lab = node(lab, "n2", 4000, 3000, 10);
    cordoned(node(lab, "n3", 4000, 3000, 10), "n3")
}

fn cordoned(lab: Lab, name: &str) -> Lab {
    let name = name.to_string();
    lab.with(move |snapshot| {
        for node in snapshot.nodes.iter_mut().filter(|n| n.name == name) {
            node.unschedulable = true;
        }
    })
}

fn with_extended(lab: Lab, name: &str, count: i64) -> Lab {
    let name = name.to_string();
    lab.with(move |snapshot| {
        for node in snapshot.nodes.iter_mut().filter(|n| n.name == name) {
            node.allocatable
                .set(ResourceName::new(EXTENDED), count * 1000);
        }
    })
}

/// `BuildTestPod(name, cpu, memory, node)` with a ReplicaSet owner (`SetRSOwnerRef`).
fn pod(name: &str, cpu: i64, memory: i64, node: &str) -> PodBuilder {
    crate::plan::testing::pod(&format!("default/{name}"))
        .on(node)
        .with(|pod| pod.requests = amounts(cpu, memory, 1))
}

fn daemon_set(pod: PodBuilder) -> PodBuilder {
    pod.owner("DaemonSet", "ds")
}

/// `SetNormalOwnerRef`: owned, by no controller kind the evictor protects.
fn normal_owner(pod: PodBuilder) -> PodBuilder {
    pod.with(|pod| {
        pod.owners = Arc::from([Owner {
            kind: "Pod".into(),
            name: "owner".into(),
            uid: "owner-uid".into(),
            controller: false,
        }]);
    })
}

/// Upstream's pod with a hostPath and emptyDir volume that is also a mirror pod.
fn local_storage_mirror(pod: PodBuilder) -> PodBuilder {
    normal_owner(pod).with(|pod| {
        pod.local_storage = true;
        pod.mirror = true;
    })
}

fn critical(pod: PodBuilder) -> PodBuilder {
    pod.with(|pod| {
        pod.namespace = "kube-system".into();
        pod.priority = SYSTEM_CRITICAL;
    })
}

fn bare(pod: PodBuilder) -> PodBuilder {
    pod.with(|pod| pod.owners = Default::default())
}

fn priority(pod: PodBuilder, priority: i32) -> PodBuilder {
    pod.with(|pod| pod.priority = priority)
}

/// `MakeBestEffortPod`: no requests at all.
fn best_effort(pod: PodBuilder) -> PodBuilder {
    pod.with(|pod| {
        pod.qos = Qos::BestEffort;
        pod.requests = amounts(0, 0, 1);
    })
}

fn extended_request(pod: PodBuilder, count: i64) -> PodBuilder {
    pod.with(|pod| {
        pod.requests.set(ResourceName::new(EXTENDED), count * 1000);
    })
}

fn in_namespace(pod: PodBuilder, namespace: &str) -> PodBuilder {
    let namespace = namespace.to_string();
    pod.with(|pod| pod.namespace = namespace.into())
}

/// A pod that only nodes labelled `datacenter=west` take, by selector or by affinity.
fn west_only(pod: PodBuilder, by_affinity: bool) -> PodBuilder {
    normal_owner(pod).with(|pod| {
        if by_affinity {
            pod.extras_mut().node_affinity = Some(vec![NodeSelectorTerm {
                expressions: vec![NodeRequirement {
                    key: "datacenter".to_string(),
                    operator: NodeOperator::In,
                    values: vec!["west".to_string()],
                }],
                fields: Vec::new(),
            }]);
        } else {
            pod.node_selector = Labels::from([("datacenter".to_string(), "west".to_string())]);
        }
    })
}

/// p1–p5 (400m, ReplicaSet) and the protected p6 (DaemonSet), p7 (local storage, mirror) and
/// p8 (system-critical) on n1; p9 (400m) on n2: the pods of most cases.
fn usual_pods(lab: Lab) -> Lab {
    let lab = (1..=5).fold(lab, |lab, i| lab.pod(pod(&format!("p{i}"), 400, 0, "n1")));
    lab.pod(daemon_set(pod("p6", 400, 0, "n1")))
        .pod(local_storage_mirror(pod("p7", 400, 0, "n1")))
        .pod(critical(normal_owner(pod("p8", 400, 0, "n1"))))
        .pod(pod("p9", 400, 0, "n2"))
}

/// NodeMetrics (cpu, memory bytes) and PodMetrics of namespace `default`.
fn metrics(
    nodes: &[(&str, i64, i64)],
    pods: impl IntoIterator<Item = (String, i64, i64)>,
) -> Metrics {
    Metrics {
        nodes: nodes
            .iter()
            .map(|&(name, cpu, memory)| (name.to_string(), amounts(cpu, memory, 0)))
            .collect(),
        pods: pods
            .into_iter()
            .map(|(name, cpu, memory)| (("default".to_string(), name), amounts(cpu, memory, 0)))
            .collect(),
    }
}

/// PodMetrics of pods `p<first>`..=`p<last>`, each using `cpu` and `memory`.
fn pods_using(
    numbers: std::ops::RangeInclusive<u32>,
    cpu: i64,
    memory: i64,
) -> Vec<(String, i64, i64)> {
    numbers.map(|i| (format!("p{i}"), cpu, memory)).collect()
}

/// The usual metrics: n1 at 3201m, n2 at 401m, n3 at `n3_cpu`; p1–p5 at 401m each.
fn usual_metrics(n3_cpu: i64) -> Metrics {
    let nodes = [("n1", 3201, 0), ("n2", 401, 0), ("n3", n3_cpu, 0)];
    metrics(&nodes, pods_using(1..=5, 401, 0))
}

fn thresholds(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
    pairs
        .iter()
        .map(|&(name, percent)| (name.to_string(), percent))
        .collect()
}

/// cpu and pods underutilized at 30%, above target over 50%: most cases' arguments.
fn cpu_and_pods() -> LowNodeUtilizationArgs {
    LowNodeUtilizationArgs {
        thresholds: thresholds(&[("cpu", 30.0), ("pods", 30.0)]),
        target_thresholds: thresholds(&[("cpu", 50.0), ("pods", 50.0)]),
        ..LowNodeUtilizationArgs::default()
    }
}

/// The evicted pods' names, by requests and by actual usage.
fn run(lab: Lab, metrics: Metrics, args: LowNodeUtilizationArgs) -> (Vec<String>, Vec<String>) {
    let mut snapshot = lab.build();
    let by_requests = plan(
        &snapshot,
        &policy(vec![Strategy::LowNodeUtilization(args.clone())]),
    );
    snapshot.metrics = Some(metrics);
    let args = LowNodeUtilizationArgs {
        usage: UsageSource::KubernetesMetrics,
        ..args
    };
    let by_usage = plan(&snapshot, &policy(vec![Strategy::LowNodeUtilization(args)]));
    let names = |plan: crate::plan::Plan| plan.evictions.into_iter().map(|e| e.pod).collect();
    (names(by_requests), names(by_usage))
}

/// The eviction counts by requests and by actual usage.
fn counts(lab: Lab, metrics: Metrics, args: LowNodeUtilizationArgs) -> (usize, usize) {
    let (by_requests, by_usage) = run(lab, metrics, args);
    (by_requests.len(), by_usage.len())
}

#[test]
fn no_evictable_pods() {
    let lab = (1..=4).fold(three_nodes(), |lab, i| {
        lab.pod(daemon_set(pod(&format!("p{i}"), 400, 0, "n1")))
    });
    let lab = lab
        .pod(local_storage_mirror(pod("p5", 400, 0, "n1")))
        .pod(critical(bare(pod("p6", 400, 0, "n1"))))
        .pod(pod("p9", 400, 0, "n2"));
    let memory = 1_714_978_816;
    let nodes = [
        ("n1", 2401, memory),
        ("n2", 401, memory),
        ("n3", 10, memory),
    ];
    let metrics = metrics(&nodes, pods_using(1..=5, 401, 0));
    assert_eq!(counts(lab, metrics, cpu_and_pods()), (0, 0));
}

#[test]
fn without_priorities() {
    let lab = usual_pods(three_nodes());
    // Upstream: (4, 4). By usage n2 (401m) holds three 401m pods below its 2000m target; the
    // fourth would take it to 2005m.
    assert_eq!(counts(lab, usual_metrics(11), cpu_and_pods()), (4, 3));
}

#[test]
fn without_priorities_but_excluding_namespaces() {
    let lab = (1..=5).fold(three_nodes(), |lab, i| {
        let pod = normal_owner(pod(&format!("p{i}"), 400, 0, "n1"));
        lab.pod(in_namespace(pod, "namespace1"))
    });
    let lab = lab
        .pod(daemon_set(pod("p6", 400, 0, "n1")))
        .pod(local_storage_mirror(pod("p7", 400, 0, "n1")))
        .pod(critical(bare(pod("p8", 400, 0, "n1"))))
        .pod(pod("p9", 400, 0, "n2"));
    let args = LowNodeUtilizationArgs {
        evictable_namespaces: Namespaces {
            include: Vec::new(),
            exclude: vec!["namespace1".to_string()],
        },
        ..cpu_and_pods()
    };
    assert_eq!(counts(lab, usual_metrics(11), args), (0, 0));
}

#[test]
fn without_priorities_but_include_only_default_namespace() {
    // Validation refuses `include` (as upstream's); the plan is handed it anyway, as upstream's
    // test hands it to the plugin, and p3–p5 are bare pods, protected either way.
    let lab = three_nodes()
        .pod(pod("p1", 400, 0, "n1"))
        .pod(pod("p2", 400, 0, "n1"));
    let lab = (3..=5).fold(lab, |lab, i| {
        let pod = bare(pod(&format!("p{i}"), 400, 0, "n1"));
        lab.pod(in_namespace(pod, &format!("namespace{i}")))
    });
    let lab = lab
        .pod(daemon_set(pod("p6", 400, 0, "n1")))
        .pod(local_storage_mirror(pod("p7", 400, 0, "n1")))
        .pod(critical(normal_owner(pod("p8", 400, 0, "n1"))))
        .pod(pod("p9", 400, 0, "n2"));
    let args = LowNodeUtilizationArgs {
        evictable_namespaces: Namespaces {
            include: vec!["default".to_string()],
            exclude: Vec::new(),
        },
        ..cpu_and_pods()
    };
    assert_eq!(counts(lab, usual_metrics(11), args), (2, 2));
}

#[test]
fn without_priorities_stop_when_cpu_capacity_is_depleted() {
    let lab = usual_pods(three_nodes());
    // Upstream: (4, 4); the fourth pod would take n2 above its target, as without priorities.
    assert_eq!(counts(lab, usual_metrics(0), cpu_and_pods()), (4, 3));
}

#[test]
fn with_priorities() {
    let lab = (1..=4).fold(three_nodes(), |lab, i| {
        lab.pod(priority(pod(&format!("p{i}"), 400, 0, "n1"), HIGH_PRIORITY))
    });
    let lab = lab
        .pod(priority(pod("p5", 400, 0, "n1"), LOW_PRIORITY))
        .pod(priority(daemon_set(pod("p6", 400, 0, "n1")), HIGH_PRIORITY))
        .pod(priority(
            local_storage_mirror(pod("p7", 400, 0, "n1")),
            LOW_PRIORITY,
        ))
        .pod(critical(normal_owner(pod("p8", 400, 0, "n1"))))
        .pod(pod("p9", 400, 0, "n2"));
    let (by_requests, by_usage) = run(lab, usual_metrics(11), cpu_and_pods());
    // The low-priority pod goes first.
    assert_eq!(by_requests, ["p5", "p1", "p2", "p3"]);
    // Upstream: 4 by usage too; the fourth would take n2 above its target.
    assert_eq!(by_usage, ["p5", "p1", "p2"]);
}

#[test]
fn without_priorities_evicting_best_effort_pods_only() {
    let lab = three_nodes()
        .pod(best_effort(pod("p1", 400, 0, "n1")))
        .pod(best_effort(pod("p2", 400, 0, "n1")))
        .pod(pod("p3", 400, 0, "n1"))
        .pod(best_effort(pod("p4", 400, 0, "n1")))
        .pod(best_effort(pod("p5", 400, 0, "n1")))
        .pod(daemon_set(pod("p6", 400, 0, "n1")))
        .pod(local_storage_mirror(pod("p7", 400, 0, "n1")))
        .pod(critical(normal_owner(pod("p8", 400, 0, "n1"))))
        .pod(pod("p9", 400, 0, "n2"));
    let (by_requests, by_usage) = run(lab, usual_metrics(11), cpu_and_pods());
    assert_eq!(by_requests, ["p1", "p2", "p4", "p5"]);
    // Upstream: p1, p2, p4, p5; the fourth would take n2 above its target.
    assert_eq!(by_usage, ["p1", "p2", "p4"]);
}

/// n1 and n2 with 8 of the extended resource, n3 cordoned without it; pods and targets in
/// pods and the extended resource.
fn extended_args(low: f64, high: f64, pods_low: f64, pods_high: f64) -> LowNodeUtilizationArgs {
    LowNodeUtilizationArgs {
        thresholds: thresholds(&[("pods", pods_low), (EXTENDED, low)]),
        target_thresholds: thresholds(&[("pods", pods_high), (EXTENDED, high)]),
        ..LowNodeUtilizationArgs::default()
    }
}

#[test]
fn with_extended_resource() {
    let lab = with_extended(with_extended(three_nodes(), "n1", 8), "n2", 8);
    let lab = (1..=5).fold(lab, |lab, i| {
        lab.pod(extended_request(pod(&format!("p{i}"), 0, 0, "n1"), 1))
    });
    let lab = lab
        .pod(extended_request(normal_owner(pod("p6", 0, 0, "n1")), 1))
        .pod(extended_request(
            local_storage_mirror(pod("p7", 0, 0, "n1")),
            1,
        ))
        .pod(extended_request(
            critical(normal_owner(pod("p8", 0, 0, "n1"))),
            1,
        ))
        .pod(extended_request(pod("p9", 0, 0, "n2"), 1));
    // By requests, the extended resource's room on n2 runs out after three pods. By usage,
    // nothing: the metrics have no extended resource, and upstream's plugin fails on it.
    let args = extended_args(30.0, 50.0, 30.0, 50.0);
    assert_eq!(counts(lab, usual_metrics(11), args), (3, 0));
}

#[test]
fn with_extended_resource_in_some_of_nodes() {
    let lab = with_extended(three_nodes(), "n1", 8)
        .pod(extended_request(pod("p1", 0, 0, "n1"), 1))
        .pod(pod("p9", 0, 0, "n2"));
    // n2 has none of the extended resource, so no room for pods that request it.
    let args = extended_args(30.0, 50.0, 30.0, 50.0);
    assert_eq!(counts(lab, usual_metrics(11), args), (0, 0));
}

#[test]
fn with_extended_resource_in_some_of_nodes_with_deviation() {
    let lab = node(Lab::new(), "n1", 4000, 3000, 10);
    let lab = node(lab, "n2", 4000, 3000, 10);
    let lab = cordoned(node(lab, "n3", 4000, 3000, 10), "n3");
    let lab = with_extended(with_extended(lab, "n1", 8), "n2", 8)
        .pod(extended_request(pod("p1", 0, 0, "n1"), 1))
        .pod(extended_request(pod("p2", 0, 0, "n2"), 7))
        .pod(pod("p3", 0, 0, "n2"))
        .pod(pod("p8", 0, 0, "n3"))
        .pod(pod("p9", 0, 0, "n3"));
    let args = LowNodeUtilizationArgs {
        use_deviation_thresholds: true,
        ..extended_args(10.0, 10.0, 5.0, 5.0)
    };
    assert_eq!(counts(lab, usual_metrics(11), args), (1, 0));
}

#[test]
fn without_priorities_but_only_other_node_is_unschedulable() {
    let lab = node(Lab::new(), "n1", 4000, 3000, 9);
    let lab = cordoned(node(lab, "n2", 4000, 3000, 10), "n2");
    let lab = (1..=5).fold(lab, |lab, i| lab.pod(pod(&format!("p{i}"), 400, 0, "n1")));
    let lab = lab
        .pod(daemon_set(pod("p6", 400, 0, "n1")))
        .pod(local_storage_mirror(pod("p7", 400, 0, "n1")))
        .pod(critical(normal_owner(pod("p8", 400, 0, "n1"))));
    assert_eq!(counts(lab, usual_metrics(11), cpu_and_pods()), (0, 0));
}

/// n1 and n2 (`datacenter=east`); p1–p3 may go anywhere, p4 and p5 only to `west`.
fn east_and_west(by_affinity: bool, p9_cpu: Option<i64>) -> Lab {
    let lab = node(Lab::new(), "n1", 4000, 3000, 9);
    let lab = node(lab, "n2", 4000, 3000, 10).label("n2", "datacenter", "east");
    let lab = (1..=3).fold(lab, |lab, i| lab.pod(pod(&format!("p{i}"), 400, 0, "n1")));
    let lab = lab
        .pod(west_only(pod("p4", 400, 0, "n1"), by_affinity))
        .pod(west_only(pod("p5", 400, 0, "n1"), by_affinity))
        .pod(daemon_set(pod("p6", 400, 0, "n1")))
        .pod(local_storage_mirror(pod("p7", 400, 0, "n1")))
        .pod(critical(normal_owner(pod("p8", 400, 0, "n1"))));
    match p9_cpu {
        Some(cpu) => lab.pod(pod("p9", cpu, 0, "n2")),
        None => lab,
    }
}

fn east_and_west_metrics(pod_cpu: i64) -> Metrics {
    metrics(
        &[("n1", 3201, 0), ("n2", 401, 0)],
        pods_using(1..=3, pod_cpu, 0),
    )
}

#[test]
fn without_priorities_but_only_other_node_does_not_match_node_selector_for_p4_and_p5() {
    let lab = east_and_west(false, None);
    assert_eq!(
        counts(lab, east_and_west_metrics(401), cpu_and_pods()),
        (3, 3)
    );
}

#[test]
fn without_priorities_but_only_other_node_does_not_match_node_affinity_for_p4_and_p5() {
    let lab = east_and_west(true, Some(0));
    assert_eq!(
        counts(lab, east_and_west_metrics(401), cpu_and_pods()),
        (3, 3)
    );
}

#[test]
fn deviation_thresholds() {
    let lab = usual_pods(three_nodes());
    let args = LowNodeUtilizationArgs {
        use_deviation_thresholds: true,
        thresholds: thresholds(&[("cpu", 5.0), ("pods", 5.0)]),
        target_thresholds: thresholds(&[("cpu", 5.0), ("pods", 5.0)]),
        ..LowNodeUtilizationArgs::default()
    };
    assert_eq!(counts(lab, usual_metrics(11), args), (2, 2));
}

#[test]
fn deviation_thresholds_and_overevicting_memory() {
    // n1 and n2 have their memory fully used; the mean of cpu is 30%, of pods 30%.
    let lab = node(Lab::new(), "n1", 4000, 3000, 10);
    let lab = node(lab, "n2", 4000, 3000, 10);
    let lab = cordoned(node(lab, "n3", 4000, 3000, 10), "n3");
    let lab = (1..=5).fold(lab, |lab, i| lab.pod(pod(&format!("p{i}"), 400, 375, "n1")));
    let lab = lab
        .pod(daemon_set(pod("p6", 400, 375, "n1")))
        .pod(local_storage_mirror(pod("p7", 400, 375, "n1")))
        .pod(critical(normal_owner(pod("p8", 400, 375, "n1"))))
        .pod(pod("p9", 400, 3000, "n2"));
    let mut pods = pods_using(1..=8, 400, 375);
    pods.extend(pods_using(9..=9, 400, 3000));
    let full = [("n1", 4000, 3000), ("n2", 4000, 3000), ("n3", 4000, 3000)];
    let args = LowNodeUtilizationArgs {
        use_deviation_thresholds: true,
        thresholds: thresholds(&[("cpu", 5.0), ("pods", 5.0)]),
        target_thresholds: thresholds(&[("cpu", 5.0), ("pods", 5.0)]),
        ..LowNodeUtilizationArgs::default()
    };
    assert_eq!(counts(lab, metrics(&full, pods), args), (0, 0));
}

#[test]
fn without_priorities_different_evictions_for_requested_and_actual_resources() {
    let lab = east_and_west(true, Some(0));
    // Upstream: (3, 2). By usage n2 (401m) takes one 801m pod (1202m); a second would take it
    // to 2003m, above its 2000m target, where upstream still saw 798m of room and moved it.
    assert_eq!(
        counts(lab, east_and_west_metrics(801), cpu_and_pods()),
        (3, 1)
    );
}

#[test]
fn without_priorities_with_node_eviction_limit() {
    let lab = three_nodes();
    let lab = (1..=5).fold(lab, |lab, i| lab.pod(pod(&format!("p{i}"), 400, 0, "n1")));
    let lab = lab
        .pod(daemon_set(pod("p6", 400, 0, "n1")))
        .pod(local_storage_mirror(pod("p7", 400, 0, "n1")))
        .pod(critical(bare(pod("p8", 400, 0, "n1"))))
        .pod(pod("p9", 400, 0, "n2"));
    let args = LowNodeUtilizationArgs {
        eviction_limit_per_node: Some(2),
        ..cpu_and_pods()
    };
    assert_eq!(counts(lab, usual_metrics(11), args), (2, 2));
}
