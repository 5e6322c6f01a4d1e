//! The Kubernetes adapter against the fake API server, through the real kube client: paging,
//! label writes, evictions, events and the run lock. Each test sets up state, acts through the
//! adapter, and checks the state the fake holds afterwards.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use axum::http::Method;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use serde_json::json;
use support::fake_apiserver::{
    self, FakeApiServer, FakeCluster, Fault, FaultAction, Gate, KubeObjects, Workload,
};
use vsphere_descheduler::kube::{
    self, EventKind, EventSpec, EvictionRequest, EvictionResult, FIELD_MANAGER, LockSettings,
};
use vsphere_descheduler::outcome::Cause;
use vsphere_descheduler::plan::LabelApply;
use vsphere_descheduler::snapshot;

const HOST: &str = "vsphere-descheduler.io/host";

fn node(name: &str, labels: serde_json::Value) -> Node {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}
    }))
    .expect("a node")
}

fn pod(namespace: &str, name: &str, app: &str, node: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": app},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{app}-rs"),
                "uid": format!("{app}-rs-uid"), "controller": true}]},
        "spec": {"nodeName": node, "containers": [{"name": "main", "image": "app:1"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    }))
    .expect("a pod")
}

fn pdb(namespace: &str, name: &str, app: &str, min_available: i32) -> PodDisruptionBudget {
    serde_json::from_value(json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"matchLabels": {"app": app}}, "minAvailable": min_available}
    }))
    .expect("a PDB")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

fn client(server: &FakeApiServer) -> kube::Client {
    kube::Client::new(server.client())
}

fn labels_of(server: &FakeApiServer, node: &str) -> BTreeMap<String, String> {
    server.cluster().nodes[node]
        .metadata
        .labels
        .clone()
        .unwrap_or_default()
}

/// The node as a listing gives it to the planner: with its uid and the label keys we applied.
fn listed(server: &FakeApiServer, node: &str) -> snapshot::Node {
    as_listed(server.cluster().nodes[node].as_ref())
}

/// An API node as the planner reads it from a list page.
fn as_listed(node: &Node) -> snapshot::Node {
    let object = serde_json::to_value(node).expect("JSON");
    let mut interner = snapshot::Interner::default();
    snapshot::node(
        serde_json::from_value(object).expect("a node"),
        &mut interner,
    )
    .expect("a node converts")
}

/// A label write for a listed node.
fn label_apply(node: &snapshot::Node, set: &[(&str, &str)], remove: &[&str]) -> LabelApply {
    LabelApply {
        node: node.name.clone(),
        uid: node.uid.clone(),
        set: set
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        remove: remove.iter().map(|k| k.to_string()).collect(),
    }
}

/// `count` pods named web-0000, web-0001, … in namespace shop, on n0.
fn web_pods(count: usize) -> Vec<Pod> {
    (0..count)
        .map(|i| pod("shop", &format!("web-{i:04}"), "web", "n0"))
        .collect()
}

/// The statuses the server answered the pod list's pages with, in order (0: broken off).
fn pod_list_statuses(server: &FakeApiServer) -> Vec<u16> {
    server
        .cluster()
        .requests
        .iter()
        .filter(|r| r.path == "/api/v1/pods")
        .map(|r| r.status)
        .collect()
}

#[test]
fn a_large_listing_is_read_page_by_page_into_the_planners_types() {
    let objects = KubeObjects {
        nodes: (0..3).map(|i| node(&format!("n{i}"), json!({}))).collect(),
        pods: web_pods(1203),
        ..KubeObjects::default()
    };
    let server = FakeApiServer::start(FakeCluster::new(objects));
    let observation = runtime()
        .block_on(async { client(&server).observe().await })
        .expect("observed");
    assert_eq!(observation.pods.len(), 1203);
    assert_eq!(observation.nodes.len(), 3);
    // 1203 pods at 500 a page.
    assert_eq!(server.cluster().count("GET", "/api/v1/pods"), 3);
}

#[test]
fn an_expired_continue_token_restarts_the_listing_from_scratch() {
    let objects = KubeObjects {
        pods: web_pods(1100),
        ..KubeObjects::default()
    };
    let server = FakeApiServer::start(FakeCluster::new(objects));
    // The second page request finds the snapshot compacted, once.
    server.cluster().inject(
        Fault::action(
            Some(Method::GET),
            "/api/v1/pods",
            FaultAction::ExpireListSnapshots,
        )
        .after(1)
        .times(1),
    );
    let observation = runtime()
        .block_on(async { client(&server).observe().await })
        .expect("observed");
    assert_eq!(observation.pods.len(), 1100, "no pod lost or doubled");
    assert_eq!(pod_list_statuses(&server), [200, 410, 200, 200, 200]);
}

#[test]
fn transient_list_failures_are_retried_but_not_forever() {
    let server = FakeApiServer::start(FakeCluster::new(KubeObjects {
        nodes: vec![node("n0", json!({}))],
        ..KubeObjects::default()
    }));
    server
        .cluster()
        .inject(Fault::status(Some(Method::GET), "/api/v1/nodes", 503).times(2));
    let observation = runtime()
        .block_on(async { client(&server).observe().await })
        .expect("the third attempt succeeds");
    assert_eq!(observation.nodes.len(), 1);

    server
        .cluster()
        .inject(Fault::status(Some(Method::GET), "/api/v1/nodes", 500));
    let error = runtime()
        .block_on(async { client(&server).observe().await })
        .expect_err("always failing");
    assert_eq!(error.to_string(), "failed to list nodes");
}

#[test]
fn a_list_page_whose_answer_breaks_off_is_asked_for_again() {
    let objects = KubeObjects {
        pods: web_pods(600),
        ..KubeObjects::default()
    };
    let server = FakeApiServer::start(FakeCluster::new(objects));
    // The second page's body fails after its headers said 200.
    server.cluster().inject(
        Fault::action(Some(Method::GET), "/api/v1/pods", FaultAction::BreakOff)
            .after(1)
            .times(1),
    );
    let observation = runtime()
        .block_on(async { client(&server).observe().await })
        .expect("observed");
    let names: Vec<&str> = observation.pods.iter().map(|p| p.name.as_str()).collect();
    let expected: Vec<String> = (0..600).map(|i| format!("web-{i:04}")).collect();
    assert_eq!(names, expected, "every pod once, in order");
    assert_eq!(pod_list_statuses(&server), [200, 0, 200]);
}

/// The API server's refusals of a label write, as the fake answers them on the wire, reach the
/// run as their cause, whatever their message says.
#[test]
fn each_refusal_of_a_label_write_becomes_its_cause() {
    let server = FakeApiServer::start(FakeCluster::new(KubeObjects {
        nodes: vec![node(
            "worker-b",
            json!({"kubernetes.io/hostname": "worker-b"}),
        )],
        ..KubeObjects::default()
    }));
    let apply = label_apply(&listed(&server, "worker-b"), &[(HOST, "esxi-41")], &[]);
    for (code, cause) in [
        (403, Cause::Forbidden),
        (404, Cause::NotFound),
        // A conflict naming no field says the node listed is gone (its uid is not there).
        (409, Cause::NotFound),
        (429, Cause::TooManyRequests),
        (500, Cause::ServerError),
        (503, Cause::ServerError),
        (504, Cause::Timeout),
    ] {
        // A transient answer is sent again, three times in all, before it is the error.
        let attempts = if matches!(code, 429 | 500 | 503 | 504) {
            3
        } else {
            1
        };
        server
            .cluster()
            .inject(Fault::status(Some(Method::PATCH), "/api/v1/nodes/", code).times(attempts));
        let error = runtime()
            .block_on(async { client(&server).apply_labels(&apply, None).await })
            .expect_err("refused");
        assert_eq!(
            error.cause(),
            cause,
            "{}",
            vsphere_descheduler::error_chain(&error)
        );
    }
    server
        .cluster()
        .inject(Fault::action(Some(Method::PATCH), "/api/v1/nodes/", FaultAction::Drop).times(3));
    let error = runtime()
        .block_on(async { client(&server).apply_labels(&apply, None).await })
        .expect_err("dropped");
    assert_eq!(
        error.cause(),
        Cause::Connection,
        "{}",
        vsphere_descheduler::error_chain(&error)
    );
}

#[test]
fn applying_labels_sets_our_key_and_takes_it_over_from_a_manual_label() {
    let server = FakeApiServer::start(FakeCluster::new(KubeObjects {
        nodes: vec![node(
            "worker-b",
            json!({"kubernetes.io/hostname": "worker-b", HOST: "esxi-42"}),
        )],
        ..KubeObjects::default()
    }));
    let apply = label_apply(&listed(&server, "worker-b"), &[(HOST, "esxi-41")], &[]);
    runtime()
        .block_on(async { client(&server).apply_labels(&apply, None).await })
        .expect("applied");
    let labels = labels_of(&server, "worker-b");
    assert_eq!(labels[HOST], "esxi-41");
    assert_eq!(
        labels["kubernetes.io/hostname"], "worker-b",
        "others' labels stay"
    );
    let owners = server.cluster().label_owners("worker-b");
    let ours = owners
        .iter()
        .find(|o| o.manager == FIELD_MANAGER)
        .expect("we own a key");
    assert_eq!(ours.operation, "Apply");
    assert_eq!(ours.keys, BTreeSet::from([HOST.to_string()]));
    assert!(
        owners
            .iter()
            .filter(|o| o.manager != FIELD_MANAGER)
            .all(|o| !o.keys.contains(HOST)),
        "the forced apply took the key over: {owners:?}"
    );
    // The listing shows what we own now.
    assert!(
        listed(&server, "worker-b")
            .applied_label_keys
            .contains(HOST)
    );
}

#[test]
fn a_key_left_out_is_removed_whether_we_own_it_alone_or_not() {
    let server = FakeApiServer::start(FakeCluster::new(KubeObjects {
        nodes: vec![node(
            "worker-a",
            json!({"vsphere-descheduler.io/cluster": "old"}),
        )],
        ..KubeObjects::default()
    }));
    let runtime = runtime();
    let apply = |present: &[(&str, &str)], absent: &[&str]| {
        let apply = label_apply(&listed(&server, "worker-a"), present, absent);
        runtime
            .block_on(async { client(&server).apply_labels(&apply, None).await })
            .expect("applied");
    };
    apply(&[(HOST, "esxi-41")], &[]);
    assert_eq!(labels_of(&server, "worker-a")[HOST], "esxi-41");
    // Ours alone: dropping it from the apply removes it.
    apply(&[], &[HOST]);
    assert!(!labels_of(&server, "worker-a").contains_key(HOST));
    // Set by someone else (kubelet here): removed by the explicit merge patch.
    apply(&[], &["vsphere-descheduler.io/cluster"]);
    assert!(!labels_of(&server, "worker-a").contains_key("vsphere-descheduler.io/cluster"));
}

/// The status the fake answered the last PATCH of `node` with.
fn last_patch_status(server: &FakeApiServer, node: &str) -> u16 {
    let path = format!("/api/v1/nodes/{node}");
    server
        .cluster()
        .requests
        .iter()
        .rev()
        .find(|r| r.method == "PATCH" && r.path == path)
        .expect("a patch of the node")
        .status
}

#[test]
fn labels_of_a_node_deleted_since_it_was_listed_are_not_written_and_it_is_not_created() {
    let server = FakeApiServer::start(FakeCluster::new(KubeObjects {
        nodes: vec![node("worker-c", json!({}))],
        ..KubeObjects::default()
    }));
    let apply = label_apply(&listed(&server, "worker-c"), &[(HOST, "esxi-43")], &[]);
    server.cluster().nodes.remove("worker-c");
    let error = runtime()
        .block_on(async { client(&server).apply_labels(&apply, None).await })
        .expect_err("the node is gone");
    assert!(
        matches!(error, kube::Error::NodeReplaced { .. }),
        "{error:?}"
    );
    // kube-apiserver 1.32: "uid mismatch: ... no existing object was found", 409 Conflict.
    assert_eq!(last_patch_status(&server, "worker-c"), 409);
    assert!(!server.cluster().nodes.contains_key("worker-c"));
}

#[test]
fn labels_of_a_node_recreated_under_the_same_name_are_not_written() {
    let server = FakeApiServer::start(FakeCluster::new(KubeObjects {
        nodes: vec![node("worker-c", json!({}))],
        ..KubeObjects::default()
    }));
    let apply = label_apply(&listed(&server, "worker-c"), &[(HOST, "esxi-43")], &[]);
    server.cluster().nodes.remove("worker-c");
    server.cluster().load(KubeObjects {
        nodes: vec![node("worker-c", json!({}))],
        ..KubeObjects::default()
    });
    assert_ne!(
        listed(&server, "worker-c").uid,
        apply.uid,
        "another node of the same name"
    );
    let error = runtime()
        .block_on(async { client(&server).apply_labels(&apply, None).await })
        .expect_err("another node now");
    assert!(
        matches!(error, kube::Error::NodeReplaced { .. }),
        "{error:?}"
    );
    // kube-apiserver 1.32: 422 Invalid, "metadata.uid: ... field is immutable".
    assert_eq!(last_patch_status(&server, "worker-c"), 422);
    assert!(!labels_of(&server, "worker-c").contains_key(HOST));
}

fn web_cluster(min_available: i32) -> FakeCluster {
    FakeCluster::new(KubeObjects {
        nodes: vec![node("n0", json!({})), node("n1", json!({}))],
        pods: vec![
            pod("shop", "web-1", "web", "n0"),
            pod("shop", "web-2", "web", "n0"),
            pod("shop", "web-3", "web", "n1"),
        ],
        pdbs: vec![pdb("shop", "web", "web", min_available)],
        ..KubeObjects::default()
    })
}

fn evict(server: &FakeApiServer, name: &str, grace: Option<i64>, dry_run: bool) -> EvictionResult {
    let uid = server.cluster().pods[&("shop".to_string(), name.to_string())]
        .metadata
        .uid
        .clone();
    let request = EvictionRequest {
        namespace: "shop",
        name,
        uid: uid.as_deref(),
        grace_period_seconds: grace,
        dry_run,

        strategy: "RemovePodsViolatingInterPodAntiAffinity",
        profile: "default",
        reason: "shares a host",
    };
    runtime().block_on(async { client(server).evict(&request).await })
}

#[test]
fn an_eviction_spends_the_budget_and_the_next_one_is_blocked() {
    let server = FakeApiServer::start(web_cluster(2));
    assert_eq!(
        evict(&server, "web-1", Some(5), false),
        EvictionResult::Evicted
    );
    {
        let cluster = server.cluster();
        let evicted = &cluster.pods[&("shop".to_string(), "web-1".to_string())];
        assert_eq!(
            evicted.metadata.deletion_grace_period_seconds,
            Some(5),
            "the policy's grace period reached the server"
        );
        let status = cluster.pdbs[&("shop".to_string(), "web".to_string())]
            .status
            .clone()
            .expect("a status");
        assert_eq!(status.disruptions_allowed, 0);
    }
    let EvictionResult::Blocked(message) = evict(&server, "web-2", None, false) else {
        panic!("the budget is spent");
    };
    assert!(
        message.text.contains("needs 2 healthy pods and has 2"),
        "{message}"
    );
    assert_eq!(message.cause, Cause::TooManyRequests);
    assert!(
        server.cluster().pods[&("shop".to_string(), "web-2".to_string())]
            .metadata
            .deletion_timestamp
            .is_none()
    );
    // A second eviction of the terminating pod skips the budget.
    assert_eq!(
        evict(&server, "web-1", None, false),
        EvictionResult::Evicted
    );
}

#[test]
fn a_dry_run_eviction_answers_without_changing_anything() {
    let server = FakeApiServer::start(web_cluster(2));
    let before = server.cluster().pods.clone();
    assert_eq!(
        evict(&server, "web-1", None, true),
        EvictionResult::WouldEvict
    );
    assert_eq!(server.cluster().pods, before);
    let server = FakeApiServer::start(web_cluster(3));
    assert!(matches!(
        evict(&server, "web-1", None, true),
        EvictionResult::Blocked(_)
    ));
}

#[test]
fn a_missing_pod_is_gone_and_several_budgets_fail_with_the_servers_words() {
    let server = FakeApiServer::start(web_cluster(1));
    let request = EvictionRequest {
        namespace: "shop",
        name: "nope",
        uid: None,
        grace_period_seconds: None,
        dry_run: false,

        strategy: "RemovePodsViolatingInterPodAntiAffinity",
        profile: "default",
        reason: "shares a host",
    };
    let EvictionResult::Gone(gone) =
        runtime().block_on(async { client(&server).evict(&request).await })
    else {
        panic!("the pod is not there");
    };
    assert_eq!(gone.cause, Cause::NotFound);
    server.cluster().load(KubeObjects {
        pdbs: vec![pdb("shop", "web-too", "web", 1)],
        ..KubeObjects::default()
    });
    let EvictionResult::Failed(message) = evict(&server, "web-1", None, false) else {
        panic!("two budgets");
    };
    assert!(
        message.text.contains("more than one PodDisruptionBudget"),
        "{message}"
    );
    assert_eq!(message.cause, Cause::ServerError);
}

/// A 429 TooManyRequests asking to retry after 30 s fails at once and is not resent, on
/// paused time: a wait would show as time passed however busy the machine is.
#[tokio::test(start_paused = true)]
async fn a_storm_of_429s_is_not_waited_out() {
    let mut cluster = web_cluster(1);
    let uid = cluster.pods[&("shop".to_string(), "web-1".to_string())]
        .metadata
        .uid
        .clone();
    cluster.inject(Fault {
        action: FaultAction::Status {
            code: 429,
            reason: "TooManyRequests".to_string(),
            message: "too many requests, please try again later".to_string(),
            retry_after_seconds: 30,
        },
        ..Fault::status(Some(Method::POST), "/eviction", 429)
    });
    let (client, state) = fake_apiserver::in_process(cluster);
    let request = EvictionRequest {
        namespace: "shop",
        name: "web-1",
        uid: uid.as_deref(),
        grace_period_seconds: None,
        dry_run: false,
        strategy: "RemovePodsViolatingInterPodAntiAffinity",
        profile: "default",
        reason: "shares a host",
    };
    let started = tokio::time::Instant::now();
    let result = kube::Client::new(client).evict(&request).await;
    // Not a PDB's refusal (no DisruptionBudget cause): a failure, as in the e2e storm.
    let EvictionResult::Failed(failure) = result else {
        panic!("failed: {result:?}");
    };
    assert_eq!(failure.cause, Cause::TooManyRequests);
    assert_eq!(started.elapsed(), Duration::ZERO);
    assert_eq!(
        state.lock().expect("state").count("POST", "/eviction"),
        1,
        "not resent"
    );
}

/// In this runtime on paused time, so that a wait would show as time passed however busy the
/// machine is: the clock moves only when the client sleeps.
#[tokio::test(start_paused = true)]
async fn a_pdb_refusal_returns_at_once_even_when_the_server_asks_to_wait() {
    let mut cluster = web_cluster(1);
    // A budget the controller has not processed yet: 429 with Retry-After: 10.
    let pdb = cluster
        .pdbs
        .get_mut(&("shop".to_string(), "web".to_string()))
        .expect("the PDB");
    std::sync::Arc::make_mut(pdb).metadata.generation = Some(2);
    let uid = cluster.pods[&("shop".to_string(), "web-1".to_string())]
        .metadata
        .uid
        .clone();
    let (client, state) = fake_apiserver::in_process(cluster);
    let request = EvictionRequest {
        namespace: "shop",
        name: "web-1",
        uid: uid.as_deref(),
        grace_period_seconds: None,
        dry_run: false,
        strategy: "RemovePodsViolatingInterPodAntiAffinity",
        profile: "default",
        reason: "shares a host",
    };
    let started = tokio::time::Instant::now();
    let result = kube::Client::new(client).evict(&request).await;
    assert!(matches!(result, EvictionResult::Blocked(_)), "{result:?}");
    // Retry-After: 10 was not waited out: no time passed at all.
    assert_eq!(started.elapsed(), Duration::ZERO);
    assert_eq!(
        state.lock().expect("state").count("POST", "/eviction"),
        1,
        "not retried"
    );
}

#[test]
fn events_pass_the_servers_validation() {
    let server = FakeApiServer::start(web_cluster(1));
    let spec = EventSpec {
        namespace: "shop".to_string(),
        pod: "web-1".to_string(),
        pod_uid: None,
        kind: EventKind::Normal,
        reason: "RemovePodsViolatingInterPodAntiAffinity".to_string(),
        action: "Descheduled".to_string(),
        note: "pod evicted from node n0 (ESXi host esxi-41) by vsphere-descheduler".to_string(),
    };
    runtime()
        .block_on(async { client(&server).publish_event(&spec, "run-1").await })
        .expect("accepted");
    let cluster = server.cluster();
    let event = cluster.events.values().next().expect("one event");
    assert_eq!(
        event.reason.as_deref(),
        Some("RemovePodsViolatingInterPodAntiAffinity")
    );
    assert_eq!(event.type_.as_deref(), Some("Normal"));
}

#[test]
fn an_event_about_a_pod_with_the_longest_name_is_accepted() {
    let server = FakeApiServer::start(web_cluster(1));
    let pod = format!("{}-{}", "w".repeat(240), "x".repeat(12));
    let spec = EventSpec {
        namespace: "shop".to_string(),
        pod: pod.clone(),
        pod_uid: None,
        kind: EventKind::Normal,
        reason: "RemovePodsViolatingInterPodAntiAffinity".to_string(),
        action: "Descheduled".to_string(),
        note: "pod evicted".to_string(),
    };
    runtime()
        .block_on(async { client(&server).publish_event(&spec, "run-1").await })
        .expect("accepted");
    let cluster = server.cluster();
    let event = cluster.events.values().next().expect("one event");
    let name = event.metadata.name.as_deref().expect("a name");
    assert!(
        name.len() <= 253 && name.starts_with(&"w".repeat(236)),
        "{name}"
    );
    assert_eq!(
        event.regarding.as_ref().and_then(|r| r.name.as_deref()),
        Some(pod.as_str()),
        "the event still names the whole pod"
    );
}

#[test]
fn the_fake_refuses_event_names_the_api_server_refuses() {
    let server = FakeApiServer::start(FakeCluster::default());
    for (name, expected) in [
        ("x".repeat(254), "must be no more than 253 characters"),
        ("Web-1.abc".to_string(), "a lowercase RFC 1123 subdomain"),
        ("web-.abc".to_string(), "a lowercase RFC 1123 subdomain"),
    ] {
        let body = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": name, "namespace": "shop"},
            "eventTime": "2026-11-21T20:49:09.123456Z", "type": "Normal",
            "reportingController": "vsphere-descheduler.io/vsphere-descheduler",
            "reportingInstance": "run-1", "action": "Descheduled", "reason": "Test",
            "regarding": {"apiVersion": "v1", "kind": "Pod", "name": "web-1", "namespace": "shop"}
        });
        let request = axum::http::Request::post("/apis/events.k8s.io/v1/namespaces/shop/events")
            .header("content-type", "application/json")
            .body(serde_json::to_vec(&body).expect("JSON"))
            .expect("a request");
        let error = runtime()
            .block_on(async { server.client().request_text(request).await })
            .expect_err("refused");
        let ::kube::Error::Api(status) = &error else {
            panic!("{error}");
        };
        assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
        assert!(status.message.contains(expected), "{}", status.message);
    }
}

fn lock(holder: &str) -> LockSettings {
    LockSettings {
        namespace: "kube-system".to_string(),
        name: kube::LEASE_NAME.to_string(),
        holder: holder.to_string(),
        duration: kube::LEASE_DURATION,
    }
}

#[test]
fn the_run_lock_is_exclusive_until_released() {
    let server = FakeApiServer::start(FakeCluster::default());
    let runtime = runtime();
    let first = runtime
        .block_on(async { client(&server).acquire_lock(lock("run-1")).await })
        .expect("free");
    let error = runtime
        .block_on(async { client(&server).acquire_lock(lock("run-2")).await })
        .expect_err("held");
    assert!(
        matches!(error, kube::Error::LockHeld { ref holder, .. } if holder == "run-1"),
        "{error}"
    );
    runtime.block_on(first.release()).expect("released");
    let lease: Lease = (*server.cluster().leases
        [&("kube-system".to_string(), kube::LEASE_NAME.to_string())])
        .clone();
    assert_eq!(lease.spec.and_then(|s| s.holder_identity), None);
    let second = runtime
        .block_on(async { client(&server).acquire_lock(lock("run-2")).await })
        .expect("free again");
    runtime.block_on(second.release()).expect("released");
}

/// The run lock as a run that stopped without releasing it left it: held by `crashed-run` for
/// `duration_seconds`, last renewed (and taken) at `renewed`, after two changes of hands.
fn abandoned_lock(renewed: chrono::DateTime<chrono::Utc>, duration_seconds: i32) -> Lease {
    let time = renewed.to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    serde_json::from_value(json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": kube::LEASE_NAME, "namespace": "kube-system"},
        "spec": {"holderIdentity": "crashed-run", "leaseDurationSeconds": duration_seconds,
            "acquireTime": time, "renewTime": time, "leaseTransitions": 2}
    }))
    .expect("a lease")
}

/// The lock expires: a run that stopped renewing holds it for its Lease's duration from its
/// last renewal, and once that and the allowance for clocks that disagree (docs/commands.md: at
/// most 10 s) have passed, another run takes it over. The times are set in the past through the
/// fake, with room on the side that the clock moving on cannot cross: a held lease is held for
/// minutes more, and an expired one only gets older.
#[test]
fn an_abandoned_lock_is_held_for_its_lease_duration_then_another_run_takes_it() {
    use chrono::{SubsecRound, TimeDelta, Utc};
    // Whole seconds: a Lease's times are judged to the second.
    let now = Utc::now().trunc_subsecs(0);
    let runtime = runtime();
    let key = ("kube-system".to_string(), kube::LEASE_NAME.to_string());

    // Renewed 100 s ago for 300 s: held until the renewal plus 300 s, as the refusal says.
    let renewed = now - TimeDelta::seconds(100);
    let server = FakeApiServer::start(FakeCluster::new(KubeObjects {
        leases: vec![abandoned_lock(renewed, 300)],
        ..KubeObjects::default()
    }));
    let error = runtime
        .block_on(async { client(&server).acquire_lock(lock("run-2")).await })
        .expect_err("held");
    match &error {
        kube::Error::LockHeld { holder, until, .. } => {
            assert_eq!(holder, "crashed-run");
            assert_eq!(*until, renewed + TimeDelta::seconds(300));
        }
        other => panic!("expected the lock held: {other}"),
    }
    let untouched = server.cluster().leases[&key].spec.clone().expect("a spec");
    assert_eq!(untouched.holder_identity.as_deref(), Some("crashed-run"));

    // Renewed 300 + 10 + 1 s ago: its duration and the allowance have passed.
    let renewed = now - TimeDelta::seconds(300 + 10 + 1);
    let server = FakeApiServer::start(FakeCluster::new(KubeObjects {
        leases: vec![abandoned_lock(renewed, 300)],
        ..KubeObjects::default()
    }));
    let taken = runtime
        .block_on(async { client(&server).acquire_lock(lock("run-2")).await })
        .expect("expired: taken over");
    let spec = server.cluster().leases[&key].spec.clone().expect("a spec");
    assert_eq!(spec.holder_identity.as_deref(), Some("run-2"));
    assert_eq!(spec.lease_transitions, Some(3), "one more change of hands");
    assert_eq!(
        spec.lease_duration_seconds,
        Some(60),
        "the new holder's own"
    );
    let acquired = spec.acquire_time.expect("taken at").0;
    assert_eq!(spec.renew_time.expect("renewed at").0, acquired);
    assert!(
        acquired.as_second() >= now.timestamp(),
        "taken now, not at the abandoned renewal: {acquired:?}"
    );
    runtime.block_on(taken.release()).expect("released");
}

#[test]
fn of_two_runs_racing_for_the_lock_one_wins() {
    let server = FakeApiServer::start(FakeCluster::default());
    let runtime = runtime();
    // Both creates are held until both arrived: so both runs read "no lease" (neither create
    // was handled yet), and of the two creates the server refuses the second with 409
    // AlreadyExists, however the two runs are scheduled. (Holding the reads instead is not
    // enough: one run's create can be handled before the other's read.)
    let gate = Gate::new();
    server.cluster().inject(
        Fault::action(
            Some(Method::POST),
            "/leases",
            FaultAction::Hold(gate.clone()),
        )
        .times(2),
    );
    let opener = std::thread::spawn(move || {
        gate.wait_for_arrivals(2, Duration::from_secs(60));
        gate.open();
    });
    let (a, b) = runtime.block_on(async {
        let a = client(&server);
        let b = client(&server);
        tokio::join!(a.acquire_lock(lock("run-a")), b.acquire_lock(lock("run-b")))
    });
    opener.join().expect("the gate opened");
    let (winner, loser) = match (a, b) {
        (Ok(winner), Err(loser)) | (Err(loser), Ok(winner)) => (winner, loser),
        other => panic!("exactly one must win: {other:?}"),
    };
    assert!(
        matches!(loser, kube::Error::LockRace { .. }),
        "{loser} {:?}",
        server.cluster().requests
    );
    runtime.block_on(winner.release()).expect("released");
}

/// The fake answers Lease writes as the API server does: an update replaces
/// labels, annotations and spec and bumps the resourceVersion, one that changes nothing keeps it,
/// a stale resourceVersion is a 409 that changes nothing, and annotations are validated. The
/// lease is the lock the chart grants its ServiceAccount by name.
#[test]
fn the_fake_keeps_a_leases_annotations_and_compares_and_swaps_on_its_resource_version() {
    use ::kube::api::{Api, PostParams};
    let server = FakeApiServer::start(FakeCluster::default());
    let lease = |annotations: serde_json::Value, version: Option<&str>| -> Lease {
        serde_json::from_value(json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "vsphere-descheduler", "annotations": annotations, "resourceVersion": version},
            "spec": {"holderIdentity": "run-1", "leaseDurationSeconds": 60}
        }))
        .expect("a lease")
    };
    runtime().block_on(async {
        let leases: Api<Lease> = Api::namespaced(server.client(), "kube-system");
        let put = PostParams::default();
        let created = leases
            .create(&put, &lease(json!({"a/b": "1"}), None))
            .await
            .expect("created");
        let first = created
            .metadata
            .resource_version
            .clone()
            .expect("a version");
        let read = leases.get("vsphere-descheduler").await.expect("read");
        assert_eq!(read.metadata.annotations, created.metadata.annotations);

        let replaced = leases
            .replace(
                "vsphere-descheduler",
                &put,
                &lease(json!({"a/b": "2", "c/d": "x"}), Some(&first)),
            )
            .await
            .expect("replaced");
        let second = replaced
            .metadata
            .resource_version
            .clone()
            .expect("a version");
        assert_ne!(second, first, "a change bumps the resourceVersion");
        let annotations = replaced.metadata.annotations.clone().expect("annotations");
        assert_eq!(
            (annotations["a/b"].as_str(), annotations["c/d"].as_str()),
            ("2", "x")
        );
        assert_eq!(replaced.metadata.uid, created.metadata.uid);

        let stale = leases
            .replace(
                "vsphere-descheduler",
                &put,
                &lease(json!({"a/b": "3"}), Some(&first)),
            )
            .await
            .expect_err("stale");
        assert_eq!(kube::api_status(&stale).map(|s| s.code), Some(409));
        let unchanged = leases
            .replace(
                "vsphere-descheduler",
                &put,
                &lease(json!({"a/b": "2", "c/d": "x"}), Some(&second)),
            )
            .await
            .expect("nothing to change");
        assert_eq!(
            unchanged.metadata.resource_version.as_deref(),
            Some(second.as_str()),
            "an update that changes nothing keeps the version"
        );
        let removed = leases
            .replace(
                "vsphere-descheduler",
                &put,
                &lease(json!(null), Some(&second)),
            )
            .await
            .expect("replaced");
        assert_eq!(
            removed.metadata.annotations, None,
            "an update is not a merge"
        );

        let version = removed
            .metadata
            .resource_version
            .clone()
            .expect("a version");
        let too_big = "x".repeat(256 * 1024);
        let refused = leases
            .replace(
                "vsphere-descheduler",
                &put,
                &lease(json!({"a/b": too_big}), Some(&version)),
            )
            .await
            .expect_err("too big");
        let status = kube::api_status(&refused).expect("a status");
        assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
        assert!(
            status.message.contains("metadata.annotations: Too long"),
            "{}",
            status.message
        );
    });
}

/// The lock against the fake in this runtime, so the test can pause the clock: renewals and
/// expiry then happen at exact instants, however busy the machine is.
async fn lock_in_process(
    holder: &str,
) -> (
    kube::Lock,
    std::sync::Arc<std::sync::Mutex<FakeCluster>>,
    tokio::time::Instant,
) {
    let (client, state) = fake_apiserver::in_process(FakeCluster::default());
    let acquired = tokio::time::Instant::now();
    let lock = kube::Client::new(client)
        .acquire_lock(lock(holder))
        .await
        .expect("free");
    (lock, state, acquired)
}

/// Sleeps until `at` (paused time), then says whether the lock may still be acted under.
async fn lock_valid_at(lock: &kube::Lock, at: tokio::time::Instant) -> Result<(), kube::Error> {
    tokio::time::sleep_until(at).await;
    lock.check()
}

#[tokio::test(start_paused = true)]
async fn a_lock_whose_renewals_fail_stops_acting_before_the_lease_expires() {
    let (lock, state, acquired) = lock_in_process("run-1").await;
    state
        .lock()
        .expect("state")
        .inject(Fault::status(Some(Method::PUT), "/leases/", 500));
    let seconds = |s: u64| acquired + Duration::from_secs(s);
    assert!(lock_valid_at(&lock, seconds(49)).await.is_ok());
    let error = lock_valid_at(&lock, seconds(50))
        .await
        .expect_err("expired");
    assert!(matches!(error, kube::Error::LockExpired { .. }), "{error}");
    // Renewed every 20 s, retried every 5 s after a failure: at 20, 25, … 45.
    assert_eq!(state.lock().expect("state").count("PUT", "/leases/"), 6);
    assert!(
        lock.release().await.is_err(),
        "the release fails like the renewals"
    );
}

#[tokio::test(start_paused = true)]
async fn a_renewal_that_succeeds_after_the_expiry_is_trusted_again() {
    let (lock, state, acquired) = lock_in_process("run-1").await;
    // Renewals at 20, 25, … 50 fail; the one at 55 succeeds.
    state
        .lock()
        .expect("state")
        .inject(Fault::status(Some(Method::PUT), "/leases/", 500).times(7));
    let seconds = |s: u64| acquired + Duration::from_secs(s);
    assert!(lock_valid_at(&lock, seconds(52)).await.is_err());
    assert!(lock_valid_at(&lock, seconds(56)).await.is_ok());
    // Valid until 50 s after the renewal was sent.
    assert!(lock_valid_at(&lock, seconds(104)).await.is_ok());
    lock.release().await.expect("released");
}

#[tokio::test(start_paused = true)]
async fn a_lock_another_run_wrote_is_lost_at_the_next_renewal() {
    let (lock, state, acquired) = lock_in_process("run-1").await;
    state
        .lock()
        .expect("state")
        .inject(Fault::status(Some(Method::PUT), "/leases/", 409));
    let seconds = |s: u64| acquired + Duration::from_secs(s);
    assert!(lock_valid_at(&lock, seconds(19)).await.is_ok());
    let error = lock_valid_at(&lock, seconds(21)).await.expect_err("lost");
    assert!(matches!(error, kube::Error::LockLost { .. }), "{error}");
    assert!(
        lock_valid_at(&lock, seconds(600)).await.is_err(),
        "lost for good"
    );
    assert_eq!(state.lock().expect("state").count("PUT", "/leases/"), 1);
    lock.release().await.expect("nothing of ours to clear");
}

#[tokio::test(start_paused = true)]
async fn a_renewed_lock_stays_valid_for_as_long_as_the_run_lasts() {
    let (lock, state, acquired) = lock_in_process("run-1").await;
    assert!(
        lock_valid_at(&lock, acquired + Duration::from_secs(3610))
            .await
            .is_ok()
    );
    assert_eq!(state.lock().expect("state").count("PUT", "/leases/"), 180);
    lock.release().await.expect("released");
}

#[test]
fn list_items_carry_no_kind_and_pages_say_what_remains() {
    let server = FakeApiServer::start(web_cluster(1));
    let text = runtime().block_on(async {
        let request = axum::http::Request::get("/api/v1/pods?&limit=2")
            .body(Vec::new())
            .expect("a request");
        server.client().request_text(request).await.expect("a page")
    });
    let page: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(page["kind"], "PodList");
    assert_eq!(page["items"].as_array().expect("items").len(), 2);
    assert!(page["items"][0].get("kind").is_none());
    assert!(page["items"][0].get("apiVersion").is_none());
    assert_eq!(page["items"][0]["metadata"]["name"], "web-1");
    assert_eq!(page["metadata"]["remainingItemCount"], 1);
    assert!(
        page["metadata"]["continue"]
            .as_str()
            .is_some_and(|t| !t.is_empty())
    );
}

// --- the fake's disruption controller ------------------------------------------------------------

/// A pod of app `web` in `shop`, controlled by `owner` (kind, name, uid) when given.
fn web_pod(name: &str, owner: Option<(&str, &str, &str)>, ready: bool, terminating: bool) -> Pod {
    let mut pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "shop", "labels": {"app": "web"}},
        "spec": {"nodeName": "n0", "containers": [{"name": "main", "image": "app:1"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}
    });
    if let Some((kind, owner, uid)) = owner {
        pod["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": kind,
            "name": owner, "uid": uid, "controller": true}]);
    }
    if terminating {
        pod["metadata"]["deletionTimestamp"] = json!("2026-11-23T10:00:00Z");
    }
    serde_json::from_value(pod).expect("a pod")
}

/// A budget over app `web` with `spec` (minAvailable or maxUnavailable).
fn web_pdb(spec: serde_json::Value) -> PodDisruptionBudget {
    let mut spec = spec;
    spec["selector"] = json!({"matchLabels": {"app": "web"}});
    serde_json::from_value(json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "shop"}, "spec": spec
    }))
    .expect("a PDB")
}

const REPLICA_SET: (&str, &str, &str) = ("ReplicaSet", "web-6d4f", "web-6d4f-uid");

/// A Deployment `web` of `replicas` and its ReplicaSet, which the pods name as controller.
fn deployment(replicas: i32) -> Vec<Workload> {
    vec![
        Workload::new("Deployment", "shop", "web", "web-uid", replicas, None),
        // The ReplicaSet's own replicas are not what counts: its Deployment's are.
        Workload::new(
            "ReplicaSet",
            "shop",
            REPLICA_SET.1,
            REPLICA_SET.2,
            replicas + 5,
            Some(("web", "web-uid")),
        ),
    ]
}

/// A budget's (expectedPods, desiredHealthy, currentHealthy, disruptionsAllowed).
type Budget = (i32, i32, i32, i32);

/// One worked example: what it shows, the budget, the pods, their controllers, the status.
type Row = (
    &'static str,
    PodDisruptionBudget,
    Vec<Pod>,
    Vec<Workload>,
    Budget,
);

/// The status the fake's controller computes for `pdb` over `pods` and `workloads`.
fn budget(pdb: PodDisruptionBudget, pods: Vec<Pod>, workloads: Vec<Workload>) -> Budget {
    let cluster = FakeCluster::new(KubeObjects {
        pods,
        pdbs: vec![pdb],
        workloads,
        ..KubeObjects::default()
    });
    let status = cluster.pdbs[&("shop".to_string(), "web".to_string())]
        .status
        .clone()
        .expect("the controller wrote a status");
    (
        status.expected_pods,
        status.desired_healthy,
        status.current_healthy,
        status.disruptions_allowed,
    )
}

#[test]
fn the_fake_pdb_controller_computes_every_worked_example_of_the_disruption_controller() {
    let managed = |name: &str| web_pod(name, Some(REPLICA_SET), true, false);
    let stateful = |name: &str| {
        web_pod(
            name,
            Some(("StatefulSet", "web", "web-sts-uid")),
            true,
            false,
        )
    };
    let bare = |name: &str| web_pod(name, None, true, false);
    let three = |make: &dyn Fn(&str) -> Pod| vec![make("web-0"), make("web-1"), make("web-2")];
    let four = |make: &dyn Fn(&str) -> Pod| {
        vec![make("web-0"), make("web-1"), make("web-2"), make("web-3")]
    };
    let rows: Vec<Row> = vec![
        (
            "minAvailable 2, 3 pods (Deployment replicas 3)",
            web_pdb(json!({"minAvailable": 2})),
            three(&managed),
            deployment(3),
            (3, 2, 3, 1),
        ),
        (
            "minAvailable 2, 2 Ready + 1 not Ready",
            web_pdb(json!({"minAvailable": 2})),
            vec![
                managed("web-0"),
                managed("web-1"),
                web_pod("web-2", Some(REPLICA_SET), false, false),
            ],
            deployment(3),
            (3, 2, 2, 0),
        ),
        (
            "maxUnavailable 1, Deployment replicas 3, 3 pods, 1 terminating",
            web_pdb(json!({"maxUnavailable": 1})),
            vec![
                managed("web-0"),
                managed("web-1"),
                web_pod("web-2", Some(REPLICA_SET), true, true),
            ],
            deployment(3),
            (3, 2, 2, 0),
        ),
        (
            "maxUnavailable 1, 3 bare pods",
            web_pdb(json!({"maxUnavailable": 1})),
            three(&bare),
            vec![],
            (0, 0, 3, 0),
        ),
        (
            "maxUnavailable 50%, StatefulSet replicas 3",
            web_pdb(json!({"maxUnavailable": "50%"})),
            three(&stateful),
            vec![Workload::new(
                "StatefulSet",
                "shop",
                "web",
                "web-sts-uid",
                3,
                None,
            )],
            (3, 1, 3, 2),
        ),
        (
            "minAvailable 100%, Deployment replicas 4",
            web_pdb(json!({"minAvailable": "100%"})),
            four(&managed),
            deployment(4),
            (4, 4, 4, 0),
        ),
        (
            "maxUnavailable 0, Deployment replicas 4",
            web_pdb(json!({"maxUnavailable": 0})),
            four(&managed),
            deployment(4),
            (4, 4, 4, 0),
        ),
        (
            "minAvailable 0, 2 pods",
            web_pdb(json!({"minAvailable": 0})),
            vec![bare("web-0"), bare("web-1")],
            vec![],
            (2, 0, 2, 2),
        ),
        (
            // As kube-apiserver 1.32 answered when measured: the owner's replicas, not the pods that exist.
            "maxUnavailable 1, bare ReplicaSet replicas 3 with 2 pods",
            web_pdb(json!({"maxUnavailable": 1})),
            vec![managed("web-0"), managed("web-1")],
            vec![Workload::new(
                "ReplicaSet",
                "shop",
                REPLICA_SET.1,
                REPLICA_SET.2,
                3,
                None,
            )],
            (3, 2, 2, 0),
        ),
    ];
    for (row, pdb, pods, workloads, expected) in rows {
        assert_eq!(budget(pdb, pods, workloads), expected, "{row}");
    }
}

#[test]
fn a_budget_whose_pods_controller_is_missing_fails_its_sync_and_allows_nothing() {
    for spec in [json!({"maxUnavailable": 1}), json!({"minAvailable": "50%"})] {
        let cluster = FakeCluster::new(KubeObjects {
            nodes: vec![node("n0", json!({}))],
            pods: ["web-0", "web-1", "web-2"]
                .map(|name| web_pod(name, Some(REPLICA_SET), true, false))
                .to_vec(),
            pdbs: vec![web_pdb(spec.clone())],
            ..KubeObjects::default()
        });
        let key = ("shop".to_string(), "web".to_string());
        let status = cluster.pdbs[&key]
            .status
            .clone()
            .expect("the fail-safe status");
        assert_eq!(status.disruptions_allowed, 0, "{spec}");
        assert_eq!(status.observed_generation, None, "{spec}: not processed");
        let condition = status
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == "DisruptionAllowed")
            .expect("the condition");
        assert_eq!(
            (condition.status.as_str(), condition.reason.as_str()),
            ("False", "SyncFailed"),
            "{spec}"
        );
        assert!(condition.message.contains("found no controllers for pod"));
        // So an eviction gets the stale-budget 429, and the pod stays.
        let server = FakeApiServer::start(cluster);
        let result = evict_from(&server, "shop", "web-0");
        let EvictionResult::Blocked(message) = result else {
            panic!("{spec}: {result:?}");
        };
        assert!(message.text.contains("still being processed"), "{message}");
        assert!(
            server.cluster().pods[&("shop".to_string(), "web-0".to_string())]
                .metadata
                .deletion_timestamp
                .is_none()
        );
    }
}

/// Evicts `namespace/name` with its uid, no grace period of its own.
fn evict_from(server: &FakeApiServer, namespace: &str, name: &str) -> EvictionResult {
    let uid = server.cluster().pods[&(namespace.to_string(), name.to_string())]
        .metadata
        .uid
        .clone();
    let request = EvictionRequest {
        namespace,
        name,
        uid: uid.as_deref(),
        grace_period_seconds: None,
        dry_run: false,

        strategy: "RemovePodsViolatingInterPodAntiAffinity",
        profile: "default",
        reason: "shares a host",
    };
    runtime().block_on(async { client(server).evict(&request).await })
}

/// The nodes list failing as `fault` makes it, as its error chain reads in a report.
fn nodes_list_error(fault: FaultAction) -> String {
    let server = FakeApiServer::start(FakeCluster::new(KubeObjects {
        nodes: vec![node("n0", json!({}))],
        ..KubeObjects::default()
    }));
    server
        .cluster()
        .inject(Fault::action(Some(Method::GET), "/api/v1/nodes", fault));
    let error = runtime()
        .block_on(async { client(&server).observe().await })
        .expect_err("the list fails");
    vsphere_descheduler::error_chain(&error)
}

#[test]
fn an_html_error_page_from_a_proxy_is_one_line_naming_the_call_code_and_title() {
    let page = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n\
                <center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n\
                </body>\r\n</html>\r\n";
    assert_eq!(
        nodes_list_error(FaultAction::Body {
            code: 502,
            content_type: "text/html",
            body: page.to_string(),
        }),
        "failed to list nodes: GET /api/v1/nodes answered HTTP 502: 502 Bad Gateway"
    );
}

#[test]
fn an_empty_error_body_says_it_was_empty() {
    assert_eq!(
        nodes_list_error(FaultAction::Body {
            code: 503,
            content_type: "text/plain",
            body: String::new(),
        }),
        "failed to list nodes: GET /api/v1/nodes answered HTTP 503 with an empty body"
    );
}

#[test]
fn a_plain_text_body_shows_its_first_line_escaped() {
    assert_eq!(
        nodes_list_error(FaultAction::Body {
            code: 403,
            content_type: "text/plain",
            body: "\n  denied by the gateway\u{1b}[31m\nrequest id 7\n".to_string(),
        }),
        "failed to list nodes: GET /api/v1/nodes answered HTTP 403: denied by the \
         gateway\\u{1b}[31m"
    );
}

#[test]
fn a_status_answer_shows_its_code_reason_and_message() {
    assert_eq!(
        nodes_list_error(FaultAction::Status {
            code: 500,
            reason: "InternalError".to_string(),
            message: "etcdserver: request timed out".to_string(),
            retry_after_seconds: 0,
        }),
        "failed to list nodes: GET /api/v1/nodes answered HTTP 500 InternalError: etcdserver: \
         request timed out"
    );
}

#[test]
fn an_api_server_without_metrics_server_answers_plain_text_and_the_error_says_so() {
    for (api, code, body) in [
        (
            fake_apiserver::MetricsApi::Absent,
            404,
            "404 page not found",
        ),
        (
            fake_apiserver::MetricsApi::Unavailable,
            503,
            "service unavailable",
        ),
    ] {
        let mut cluster = FakeCluster::default();
        cluster.metrics_api = api;
        let server = FakeApiServer::start(cluster);
        let error = runtime()
            .block_on(async { client(&server).observe_metrics().await })
            .expect_err("not served");
        // Both lists are sent at once; either may fail first.
        let expected = |list: &str| {
            format!(
                "metrics.k8s.io is not served (HTTP {code}): is metrics-server installed and its \
                 APIService available?: GET /apis/metrics.k8s.io/v1beta1/{list} answered HTTP \
                 {code}: {body}"
            )
        };
        let chain = vsphere_descheduler::error_chain(&error);
        assert!(
            chain == expected("nodes") || chain == expected("pods"),
            "{api:?}: {chain}"
        );
        let requests = server.cluster().requests.clone();
        assert!(requests.iter().all(|r| r.status == code), "{requests:?}");
    }
}

/// A node whose `vsphere-descheduler.io/cluster` label someone else owns too: an apply that
/// drops the key is followed by a merge patch removing it, two requests for one node.
fn co_owned_cluster() -> FakeCluster {
    FakeCluster::new(KubeObjects {
        nodes: vec![node(
            "worker-a",
            json!({"vsphere-descheduler.io/cluster": "old"}),
        )],
        ..KubeObjects::default()
    })
}

/// Takes the lock with `settings` in this runtime (paused time), then makes every renewal fail.
async fn lock_then_fail_renewals(
    client: &kube::Client,
    state: &std::sync::Mutex<FakeCluster>,
    settings: LockSettings,
) -> kube::Lock {
    let lock = client.acquire_lock(settings).await.expect("free");
    state
        .lock()
        .expect("state")
        .inject(Fault::status(Some(Method::PUT), "/leases/", 500));
    lock
}

fn node_label_writes(state: &std::sync::Mutex<FakeCluster>) -> Vec<u16> {
    state
        .lock()
        .expect("state")
        .requests
        .iter()
        .filter(|r| r.method == "PATCH" && r.path == "/api/v1/nodes/worker-a")
        .map(|r| r.status)
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_claim_expiring_between_two_label_requests_of_a_node_stops_the_second() {
    let (client, state) = fake_apiserver::in_process(co_owned_cluster());
    let client = kube::Client::new(client);
    let lock = lock_then_fail_renewals(&client, &state, lock("run-1")).await;
    // The apply takes a minute to be answered: the claim (60 s lease, 10 s margin) expires
    // while it is in flight.
    state.lock().expect("state").inject(
        Fault::action(
            Some(Method::PATCH),
            "/api/v1/nodes/",
            FaultAction::Delay(Duration::from_secs(60)),
        )
        .times(1),
    );
    let listed = as_listed(state.lock().expect("state").nodes["worker-a"].as_ref());
    let apply = label_apply(
        &listed,
        &[(HOST, "esxi-41")],
        &["vsphere-descheduler.io/cluster"],
    );
    let error = client
        .apply_labels(&apply, Some(&lock))
        .await
        .expect_err("the claim expired");
    assert_eq!(
        vsphere_descheduler::error_chain(&error),
        "lease kube-system/vsphere-descheduler could not be renewed for 60s, so another run may \
         take it; stopped acting"
    );
    assert!(error.is_lock_loss());
    assert_eq!(node_label_writes(&state), [200], "the removal was not sent");
    let labels = state.lock().expect("state").nodes["worker-a"]
        .metadata
        .labels
        .clone()
        .unwrap_or_default();
    assert_eq!(labels["vsphere-descheduler.io/cluster"], "old");
    let _ = lock.release().await;
}

#[tokio::test(start_paused = true)]
async fn a_claim_expiring_while_a_label_write_waits_to_retry_stops_the_retry() {
    let (client, state) = fake_apiserver::in_process(co_owned_cluster());
    let client = kube::Client::new(client);
    // A 3 s lease: the claim lasts 2.5 s without renewal.
    let settings = LockSettings {
        duration: Duration::from_secs(3),
        ..lock("run-1")
    };
    let lock = lock_then_fail_renewals(&client, &state, settings).await;
    // Overloaded, come back in 5 s: the claim has expired by then.
    state.lock().expect("state").inject(Fault::action(
        Some(Method::PATCH),
        "/api/v1/nodes/",
        FaultAction::Status {
            code: 429,
            reason: "TooManyRequests".to_string(),
            message: "too many requests, please try again later".to_string(),
            retry_after_seconds: 5,
        },
    ));
    let listed = as_listed(state.lock().expect("state").nodes["worker-a"].as_ref());
    let apply = label_apply(&listed, &[(HOST, "esxi-41")], &[]);
    let error = client
        .apply_labels(&apply, Some(&lock))
        .await
        .expect_err("the claim expired");
    assert!(matches!(error, kube::Error::LockExpired { .. }), "{error}");
    assert_eq!(node_label_writes(&state), [429], "one attempt of three");
    let _ = lock.release().await;
}

// --- what `check` asks: access reviews, RBAC's refusals, dry-run label writes -----------------

const FULLNAME: &str = "vsd-vsphere-descheduler";

/// The chart's grants to its ServiceAccount in kube-system (the fake's default identity).
fn chart_rbac() -> fake_apiserver::Rbac {
    fake_apiserver::Rbac::chart()
}

/// One raw request through kube's client: the body of a success, or the `Status` of a failure.
fn raw(
    server: &FakeApiServer,
    method: Method,
    path: &str,
    body: serde_json::Value,
) -> Result<serde_json::Value, Box<::kube::core::Status>> {
    runtime().block_on(async {
        let request = axum::http::Request::builder()
            .header("content-type", content_type(&method))
            .method(method)
            .uri(path)
            .body(serde_json::to_vec(&body).expect("JSON"))
            .expect("a request");
        match server.client().request_text(request).await {
            Ok(text) => Ok(serde_json::from_str(&text).expect("a JSON body")),
            Err(::kube::Error::Api(status)) => Err(status),
            Err(other) => panic!("no answer: {other}"),
        }
    })
}

/// A PATCH here is a server-side apply; anything else is JSON.
fn content_type(method: &Method) -> &'static str {
    if method == Method::PATCH {
        "application/apply-patch+yaml"
    } else {
        "application/json"
    }
}

const REVIEWS: &str = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";

#[test]
fn an_access_review_is_answered_as_kube_apiservers_rbac_answers_it() {
    let server = FakeApiServer::start(web_cluster(1));
    let review = |attributes: serde_json::Value| {
        raw(
            &server,
            Method::POST,
            REVIEWS,
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": attributes}}),
        )
        .expect("201")
    };
    // kube sends empty strings for the core group; the server's echo leaves them out.
    assert_eq!(
        review(
            json!({"group": "", "resource": "pods", "subresource": "eviction", "verb": "create"})
        ),
        json!({
            "kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1",
            "metadata": {"creationTimestamp": null},
            "spec": {"resourceAttributes": {"resource": "pods", "subresource": "eviction", "verb": "create"}},
            "status": {"allowed": true, "reason": format!(
                "RBAC: allowed by ClusterRoleBinding \"{FULLNAME}\" of ClusterRole \"{FULLNAME}\" \
                 to ServiceAccount \"{FULLNAME}/kube-system\"")}
        })
    );
    // The Role grants the lock by name in its namespace only: elsewhere, or another name, RBAC
    // has no opinion, which is "not allowed" with no reason.
    let lease = |namespace: &str, name: &str| {
        review(
            json!({"group": "coordination.k8s.io", "resource": "leases", "verb": "get",
            "namespace": namespace, "name": name}),
        )["status"]
            .clone()
    };
    assert_eq!(
        lease("kube-system", "vsphere-descheduler"),
        json!({"allowed": true, "reason": format!(
            "RBAC: allowed by RoleBinding \"{FULLNAME}-lease/kube-system\" of Role \
             \"{FULLNAME}-lease\" to ServiceAccount \"{FULLNAME}/kube-system\"")})
    );
    assert_eq!(
        lease("default", "vsphere-descheduler"),
        json!({"allowed": false})
    );
    assert_eq!(lease("kube-system", "other"), json!({"allowed": false}));
    // Everyone may ask.
    assert_eq!(
        review(
            json!({"group": "authorization.k8s.io", "resource": "selfsubjectaccessreviews",
            "verb": "create"})
        )["status"]["reason"],
        "RBAC: allowed by ClusterRoleBinding \"system:basic-user\" of ClusterRole \
         \"system:basic-user\" to Group \"system:authenticated\""
    );
    let invalid = raw(&server, Method::POST, REVIEWS, json!({"spec": {}})).expect_err("422");
    assert_eq!((invalid.code, invalid.reason.as_str()), (422, "Invalid"));
}

/// RBAC objects as the fake reads them, as the RBAC authorizer does: a RoleBinding of a
/// ClusterRole grants its rules in the binding's namespace only, `*` is any verb,
/// `resourceNames` allows only the named object (never a list), and a binding of another subject
/// grants nothing.
#[test]
fn rbac_objects_grant_as_the_rbac_authorizer_reads_them() {
    let manifests = "\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: reader}
rules:
- apiGroups: ['']
  resources: [pods]
  verbs: ['*']
- apiGroups: [policy]
  resources: [poddisruptionbudgets]
  resourceNames: [web]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: read-shop, namespace: shop}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: reader}
subjects: [{kind: ServiceAccount, name: app, namespace: ops}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: read-everywhere}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: reader}
subjects: [{kind: ServiceAccount, name: other, namespace: ops}]
";
    let mut cluster = web_cluster(1);
    cluster.rbac = fake_apiserver::Rbac::rendered(manifests, "ops", "app");
    let server = FakeApiServer::start(cluster);
    let review = |attributes: serde_json::Value| {
        raw(
            &server,
            Method::POST,
            REVIEWS,
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": attributes}}),
        )
        .expect("201")["status"]
            .clone()
    };
    assert_eq!(
        review(json!({"resource": "pods", "verb": "delete", "namespace": "shop", "name": "web-1"})),
        json!({"allowed": true, "reason": "RBAC: allowed by RoleBinding \"read-shop/shop\" of \
            ClusterRole \"reader\" to ServiceAccount \"app/ops\""})
    );
    let not_allowed = json!({"allowed": false});
    for attributes in [
        json!({"resource": "pods", "verb": "list", "namespace": "default"}),
        json!({"resource": "pods", "verb": "list"}),
        json!({"group": "policy", "resource": "poddisruptionbudgets", "verb": "get",
            "namespace": "shop", "name": "other"}),
        json!({"group": "policy", "resource": "poddisruptionbudgets", "verb": "list",
            "namespace": "shop"}),
    ] {
        assert_eq!(review(attributes.clone()), not_allowed, "{attributes}");
    }
    assert_eq!(
        review(
            json!({"group": "policy", "resource": "poddisruptionbudgets", "verb": "get",
            "namespace": "shop", "name": "web"})
        )["allowed"],
        true
    );
    // Requests are authorized from the same grants.
    let pods = raw(
        &server,
        Method::GET,
        "/api/v1/namespaces/shop/pods",
        json!(null),
    );
    assert_eq!(
        pods.expect("listed")["items"].as_array().map(Vec::len),
        Some(3)
    );
    let everywhere = raw(&server, Method::GET, "/api/v1/pods", json!(null)).expect_err("403");
    assert_eq!(
        everywhere.message,
        "pods is forbidden: User \"system:serviceaccount:ops:app\" cannot list resource \"pods\" \
         in API group \"\" at the cluster scope"
    );
}

#[test]
fn the_adapter_reads_a_review_into_a_decision() {
    let mut cluster = web_cluster(1);
    cluster.rbac = chart_rbac().without("", "pods/eviction", "create");
    let server = FakeApiServer::start(cluster);
    let calls = kube::api_calls();
    let call = |resource: &str, verb: &str| {
        calls
            .iter()
            .find(|call| call.rule_resource() == resource && call.verb == verb)
            .expect("a listed call")
    };
    let (eviction, list) = runtime().block_on(async {
        let client = client(&server);
        (
            client
                .review_access(call("pods/eviction", "create"), "kube-system")
                .await,
            client
                .review_access(call("nodes", "list"), "kube-system")
                .await,
        )
    });
    assert_eq!(
        eviction.expect("answered"),
        kube::AccessDecision {
            allowed: false,
            denied: false,
            reason: String::new(),
            evaluation_error: String::new(),
        }
    );
    assert!(list.expect("answered").allowed);
}

#[test]
fn a_request_rbac_does_not_allow_is_forbidden_in_the_authorizers_words() {
    let mut cluster = web_cluster(1);
    cluster.rbac = chart_rbac().without("", "pods/eviction", "create");
    let server = FakeApiServer::start(cluster);
    let refused = raw(
        &server,
        Method::POST,
        "/api/v1/namespaces/shop/pods/web-1/eviction",
        json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "web-1", "namespace": "shop"}}),
    )
    .expect_err("403");
    let user = format!("system:serviceaccount:kube-system:{FULLNAME}");
    assert_eq!((refused.code, refused.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        refused.message,
        format!(
            "pods \"web-1\" is forbidden: User \"{user}\" cannot create resource \"pods/eviction\" \
             in API group \"\" in the namespace \"shop\""
        )
    );
    let details = refused.details.expect("details");
    assert_eq!(
        (details.name.as_str(), details.kind.as_str()),
        ("web-1", "pods")
    );
    // Nothing was evicted: authorization comes before the handler.
    assert_eq!(server.cluster().pods.len(), 3);

    let mut cluster = web_cluster(1);
    cluster.rbac = chart_rbac().without("", "nodes", "list");
    let server = FakeApiServer::start(cluster);
    let refused = raw(&server, Method::GET, "/api/v1/nodes", json!(null)).expect_err("403");
    assert_eq!(
        refused.message,
        format!(
            "nodes is forbidden: User \"{user}\" cannot list resource \"nodes\" in API group \"\" \
             at the cluster scope"
        )
    );
}

/// One request over HTTP/1.1 to the fake's socket, and the status and JSON body exactly as the
/// server wrote them (kube's client keeps only the fields of its own `Status` type).
fn exchange(
    server: &FakeApiServer,
    method: &str,
    path: &str,
    content_type: &str,
    body: &serde_json::Value,
) -> (u16, serde_json::Value) {
    use std::io::{Read, Write};
    let address = server.url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(address).expect("the fake listens");
    let body = body.to_string();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: {content_type}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("the request is sent");
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .expect("the response is read");
    let (head, payload) = response.split_once("\r\n\r\n").expect("head and body");
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("a status line");
    (code, serde_json::from_str(payload).expect("a JSON body"))
}

/// The body kube-apiserver writes when a write that would create its object may not create
/// (`errors.NewForbidden` with RBAC's empty reason: see `create_refusal` in the fake's
/// authorization.rs): the group in `details` only for a named group.
fn create_on_update_refusal(
    qualified: &str,
    name: &str,
    group: &str,
    resource: &str,
) -> serde_json::Value {
    let mut details = json!({"name": name, "kind": resource});
    if !group.is_empty() {
        details["group"] = json!(group);
    }
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("{qualified} \"{name}\" is forbidden: "),
        "reason": "Forbidden", "details": details, "code": 403
    })
}

const LOCK: &str = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/vsphere-descheduler";

/// What a client PUTs to take a lock that does not exist yet: no resourceVersion.
fn new_lock() -> serde_json::Value {
    json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "vsphere-descheduler", "namespace": "kube-system"},
        "spec": {"holderIdentity": "run-1", "leaseDurationSeconds": 60}})
}

#[test]
fn a_put_that_would_create_a_missing_lease_needs_create_as_well_as_update() {
    let mut cluster = web_cluster(1);
    // `update` of the lock by name stays granted: only the create is taken away.
    cluster.rbac = chart_rbac().without("coordination.k8s.io", "leases", "create");
    let server = FakeApiServer::start(cluster);
    assert_eq!(
        exchange(&server, "PUT", LOCK, "application/json", &new_lock()),
        (
            403,
            create_on_update_refusal(
                "leases.coordination.k8s.io",
                "vsphere-descheduler",
                "coordination.k8s.io",
                "leases",
            )
        )
    );
    assert!(server.cluster().leases.is_empty(), "nothing created");

    // The chart grants create in the lock's namespace: the same PUT creates the lock.
    server.cluster().rbac = chart_rbac();
    let created = raw(&server, Method::PUT, LOCK, new_lock()).expect("201");
    assert_eq!(created["spec"]["holderIdentity"], "run-1");
    assert_eq!(server.cluster().leases.len(), 1);
}

#[test]
fn an_apply_that_would_create_a_missing_node_is_refused_because_the_chart_grants_no_node_create() {
    let server = FakeApiServer::start(web_cluster(1));
    let apply = |name: &str, dry_run: &str| {
        raw(
            &server,
            Method::PATCH,
            &format!("/api/v1/nodes/{name}?fieldManager=vsphere-descheduler&force=true{dry_run}"),
            json!({"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": {HOST: "esxi-41"}}}),
        )
    };
    let nodes_before = server.cluster().nodes.clone();
    // `patch` is granted, so the filter lets the apply through; the store finds no node and the
    // create it would be is not allowed, dry run or not.
    for dry_run in ["", "&dryRun=All"] {
        let path =
            format!("/api/v1/nodes/worker-z?fieldManager=vsphere-descheduler&force=true{dry_run}");
        let body = json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "worker-z", "labels": {HOST: "esxi-41"}}});
        assert_eq!(
            exchange(
                &server,
                "PATCH",
                &path,
                "application/apply-patch+yaml",
                &body
            ),
            (
                403,
                create_on_update_refusal("nodes", "worker-z", "", "nodes")
            ),
            "{path}"
        );
    }
    assert_eq!(server.cluster().nodes, nodes_before, "no node created");
    // An existing node is only patched: no create is asked for.
    let first = nodes_before.keys().next().expect("a node").clone();
    assert_eq!(
        apply(&first, "").expect("200")["metadata"]["labels"][HOST],
        "esxi-41"
    );

    // A cluster-admin may create nodes by applying them.
    server.cluster().rbac = fake_apiserver::Rbac::cluster_admin();
    let created = apply("worker-z", "").expect("201");
    assert_eq!(created["metadata"]["name"], "worker-z");
}

#[test]
fn an_apply_naming_a_uid_of_a_missing_node_is_a_conflict_before_any_create_is_authorized() {
    let server = FakeApiServer::start(web_cluster(1));
    let refused = raw(
        &server,
        Method::PATCH,
        "/api/v1/nodes/worker-z?fieldManager=vsphere-descheduler&force=true",
        json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "worker-z", "uid": "0f0e", "labels": {HOST: "esxi-41"}}}),
    )
    .expect_err("409");
    assert_eq!((refused.code, refused.reason.as_str()), (409, "Conflict"));
}

#[test]
fn deleting_a_pod_directly_is_refused_in_the_authorizers_words() {
    let server = FakeApiServer::start(web_cluster(1));
    let pods_before = server.cluster().pods.clone();
    let refused = exchange(
        &server,
        "DELETE",
        "/api/v1/namespaces/shop/pods/web-1",
        "application/json",
        &json!({}),
    );
    let expected = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!(
            "pods \"web-1\" is forbidden: User \"system:serviceaccount:kube-system:{FULLNAME}\" \
             cannot delete resource \"pods\" in API group \"\" in the namespace \"shop\""
        ),
        "reason": "Forbidden", "details": {"name": "web-1", "kind": "pods"}, "code": 403
    });
    assert_eq!(refused, (403, expected));
    assert_eq!(server.cluster().pods, pods_before, "the pod is still there");
}

#[test]
fn a_dry_run_label_write_is_admitted_or_refused_and_stores_nothing() {
    let server = FakeApiServer::start(FakeCluster::new(KubeObjects {
        nodes: vec![node("worker-a", json!({HOST: "esxi-41", "team": "a"}))],
        ..KubeObjects::default()
    }));
    let before = server.cluster().nodes["worker-a"].clone();
    let owners = server.cluster().label_owners("worker-a");
    let write = |set: &[(&str, &str)]| {
        let apply = label_apply(&listed(&server, "worker-a"), set, &[]);
        runtime()
            .block_on(async { client(&server).dry_run_labels(&apply).await })
            .expect("an answer")
    };
    assert_eq!(write(&[(HOST, "esxi-42")]), kube::DryRunAnswer::Accepted);

    server.cluster().node_admission =
        Some(fake_apiserver::NodeLabelPolicy::chart(FULLNAME, &[HOST]));
    assert_eq!(write(&[(HOST, "esxi-42")]), kube::DryRunAnswer::Accepted);
    let cause = format!(
        "ValidatingAdmissionPolicy '{FULLNAME}' with binding '{FULLNAME}' denied request: \
         vsphere-descheduler may change only the node labels {HOST}: label example.com/x was added"
    );
    assert_eq!(
        write(&[(HOST, "esxi-42"), ("example.com/x", "1")]),
        kube::DryRunAnswer::Forbidden {
            message: format!("nodes \"worker-a\" is forbidden: {cause}")
        }
    );
    // The denial's one cause is the policy's sentence, as kube-apiserver writes it.
    let refused = raw(
        &server,
        Method::PATCH,
        "/api/v1/nodes/worker-a?fieldManager=m&force=true&dryRun=All",
        json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "worker-a", "labels": {"example.com/x": "1"}}}),
    )
    .expect_err("403");
    let details = refused.details.expect("details");
    assert_eq!(
        (details.name.as_str(), details.kind.as_str()),
        ("worker-a", "nodes")
    );
    assert_eq!(details.causes.len(), 1);
    assert_eq!(details.causes[0].message, cause);
    assert_eq!(
        (
            details.causes[0].reason.as_str(),
            details.causes[0].field.as_str()
        ),
        ("", "")
    );
    let unsupported = raw(
        &server,
        Method::PATCH,
        "/api/v1/nodes/worker-a?fieldManager=m&dryRun=Some",
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-a"}}),
    )
    .expect_err("422");
    assert_eq!(
        (unsupported.code, unsupported.reason.as_str()),
        (422, "Invalid")
    );

    // Nothing stored: not the labels, not the ownership, not the resourceVersion.
    assert_eq!(server.cluster().nodes["worker-a"], before);
    assert_eq!(server.cluster().label_owners("worker-a"), owners);

    server.cluster().nodes.remove("worker-a");
    let apply = label_apply(&as_listed(&before), &[(HOST, "esxi-42")], &[]);
    let gone = runtime().block_on(async { client(&server).dry_run_labels(&apply).await });
    assert_eq!(gone.expect("an answer"), kube::DryRunAnswer::NodeGone);
}
