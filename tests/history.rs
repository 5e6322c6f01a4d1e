//! The eviction history against the fake API server, through the real kube client: the run
//! lock reads it and writes it (taking turns with its renewals), a dry run reads it without the
//! lock, and the executor records a plan's paced evictions before sending them and corrects
//! the record afterwards. Plans are built here with `paced_as` set, as the planner sets it.
//! Every test runs the fake in the test's runtime on paused time, so renewals and delays happen
//! at exact instants however busy the machine is.

mod support;

use std::sync::Mutex;
use std::time::Duration;

use axum::http::Method;
use chrono::{DateTime, Utc};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use serde_json::json;
use support::fake_apiserver::{self, FakeCluster, Fault, FaultAction, KubeObjects};
use vsphere_descheduler::kube::{self, LockSettings};
use vsphere_descheduler::outcome::{
    Cause, EvictionOutcome, Halt, NotAttempted, Outcomes, Problem, Verdict,
};
use vsphere_descheduler::plan::{Eviction, EvictionReason, Plan};
use vsphere_descheduler::policy::PluginKind;
use vsphere_descheduler::run::{self, Backends, Stop};
use vsphere_descheduler::snapshot::history::{self, ANNOTATION, History, PastEviction};

const NAMESPACE: &str = "kube-system";

fn settings() -> LockSettings {
    LockSettings {
        namespace: NAMESPACE.to_string(),
        name: kube::LEASE_NAME.to_string(),
        holder: "run-1".to_string(),
        duration: kube::LEASE_DURATION,
    }
}

/// The run lock's Lease as another run left it: released, with `annotation` as its history.
fn lease(annotation: Option<&str>) -> Lease {
    let annotations = annotation.map(|value| json!({ ANNOTATION: value }));
    serde_json::from_value(json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": kube::LEASE_NAME, "namespace": NAMESPACE, "annotations": annotations},
        "spec": {"leaseDurationSeconds": 1, "leaseTransitions": 2}
    }))
    .expect("a lease")
}

fn pod(name: &str, app: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "shop", "labels": {"app": app},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "name": format!("{app}-5d8f7c9b6"), "uid": format!("{app}-rs"), "controller": true}]},
        "spec": {"nodeName": "worker-a", "containers": [{"name": "main", "image": "app:1"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    }))
    .expect("a pod")
}

/// A budget that lets none of `app`'s pods go.
fn no_disruption(app: &str) -> PodDisruptionBudget {
    serde_json::from_value(json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": app, "namespace": "shop"},
        "spec": {"selector": {"matchLabels": {"app": app}}, "minAvailable": 1}
    }))
    .expect("a PDB")
}

/// `web-1` (its PDB refuses), `api-1` and `job-1`, and the run lock's Lease holding
/// `annotation` (none when `None` is given for the Lease itself).
fn cluster(lease: Option<Lease>) -> FakeCluster {
    FakeCluster::new(KubeObjects {
        pods: vec![
            pod("web-1", "web"),
            pod("api-1", "api"),
            pod("job-1", "job"),
        ],
        pdbs: vec![no_disruption("web")],
        leases: lease.into_iter().collect(),
        ..KubeObjects::default()
    })
}

fn eviction(pod: &str, paced_as: Option<&str>) -> Eviction {
    Eviction {
        namespace: "shop".to_string(),
        pod: pod.to_string(),
        node: "worker-a".to_string(),
        host: None,
        strategy: PluginKind::Duplicates,
        profile: "default".to_string(),
        reason: EvictionReason::Duplicates {
            node: "worker-a".to_string(),
            pods: 2,
            owner: "shop/ReplicaSet/web".to_string(),
            share: 1,
            targets: 2,
        },
        fits_on: None,
        uid: None,
        grace_period_seconds: None,
        depends_on_labels_of: Vec::new(),
        landing: None,
        paced_as: paced_as.map(str::to_string),
    }
}

/// Two paced evictions (the first refused by its PDB) around one that is not paced.
fn plan() -> Plan {
    Plan {
        evictions: vec![
            eviction("web-1", Some("shop/Deployment/web")),
            eviction("job-1", None),
            eviction("api-1", Some("shop/Deployment/api")),
        ],
        ..Plan::default()
    }
}

fn entry(at: DateTime<Utc>, workload: &str, pod: &str) -> PastEviction {
    PastEviction {
        at,
        workload: workload.to_string(),
        pod: pod.to_string(),
        plugin: "RemoveDuplicates".to_string(),
    }
}

fn stored_lease(state: &Mutex<FakeCluster>) -> Lease {
    let cluster = state.lock().expect("state");
    (*cluster.leases[&(NAMESPACE.to_string(), kube::LEASE_NAME.to_string())]).clone()
}

fn stored_annotation(state: &Mutex<FakeCluster>) -> Option<String> {
    stored_lease(state)
        .metadata
        .annotations
        .and_then(|mut annotations| annotations.remove(ANNOTATION))
}

/// The entries stored, without their times (the clock is the test's, not the fake's).
fn stored_entries(state: &Mutex<FakeCluster>) -> Vec<(String, String, String)> {
    let text = stored_annotation(state).expect("a history");
    history::parse(&text)
        .expect("a readable history")
        .into_iter()
        .map(|entry| (entry.workload, entry.pod, entry.plugin))
        .collect()
}

fn evicted(state: &Mutex<FakeCluster>, pod: &str) -> bool {
    state.lock().expect("state").pods[&("shop".to_string(), pod.to_string())]
        .metadata
        .deletion_timestamp
        .is_some()
}

/// Takes the lock on `state`'s fake, carries `plan` out as a live run does, releases the lock.
async fn execute_live(plan: &Plan, client: ::kube::Client) -> Outcomes {
    let kubernetes = kube::Client::new(client);
    let lock = kubernetes
        .acquire_lock(settings())
        .await
        .expect("the lock is free");
    let stop = Stop::new();
    let outcomes = run::execute(
        plan,
        Backends {
            kubernetes: &kubernetes,
            vsphere: None,
            dry_run: false,
            stop: &stop,
            lock: Some(&lock),
            instance: "run-1",
        },
    )
    .await;
    lock.release().await.expect("released");
    outcomes
}

fn earlier() -> Vec<PastEviction> {
    let at = Utc::now() - chrono::TimeDelta::minutes(30);
    vec![entry(at, "shop/Deployment/cart", "cart-1")]
}

// --- The lock's reads and writes -------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn the_lock_reads_the_history_the_lease_held_and_keeps_it_through_renewals_and_release() {
    let earlier = earlier();
    let text = history::render(&earlier, Utc::now());
    let (client, state) = fake_apiserver::in_process(cluster(Some(lease(Some(&text)))));
    let lock = kube::Client::new(client)
        .acquire_lock(settings())
        .await
        .expect("free");
    assert_eq!(lock.history(), &History::Recorded(earlier));
    tokio::time::sleep(Duration::from_secs(45)).await;
    assert!(lock.check().is_ok());
    lock.release().await.expect("released");
    assert_eq!(
        state.lock().expect("state").count("PUT", "/leases/"),
        4,
        "taken, renewed twice, released"
    );
    assert_eq!(stored_annotation(&state), Some(text), "kept as it was");
}

#[tokio::test(start_paused = true)]
async fn a_lock_on_a_corrupt_history_reads_it_as_unreadable_naming_the_lease() {
    let (client, state) = fake_apiserver::in_process(cluster(Some(lease(Some("[{\"at\":")))));
    let lock = kube::Client::new(client)
        .acquire_lock(settings())
        .await
        .expect("free");
    let History::Unreadable(unreadable) = lock.history() else {
        panic!("corrupt: {:?}", lock.history());
    };
    assert_eq!(unreadable.object, "Lease kube-system/vsphere-descheduler");
    assert!(
        unreadable.to_string().contains("Remove the annotation"),
        "{unreadable}"
    );
    lock.release().await.expect("released");
    assert_eq!(
        stored_annotation(&state).as_deref(),
        Some("[{\"at\":"),
        "never overwritten"
    );
}

#[tokio::test(start_paused = true)]
async fn a_history_write_waits_for_a_renewal_in_flight_instead_of_racing_it() {
    let (client, state) = fake_apiserver::in_process(cluster(None));
    let lock = kube::Client::new(client)
        .acquire_lock(settings())
        .await
        .expect("free");
    // The first renewal (at 20 s) is answered at 25 s; the history is written at 21 s.
    state.lock().expect("state").inject(
        Fault::action(
            Some(Method::PUT),
            "/leases/",
            FaultAction::Delay(Duration::from_secs(5)),
        )
        .times(1),
    );
    tokio::time::sleep(Duration::from_secs(21)).await;
    let written = history::render(&earlier(), Utc::now());
    lock.write_history(written.clone())
        .await
        .expect("written after the renewal, with its resourceVersion");
    assert!(lock.check().is_ok(), "neither write read as a takeover");
    assert_eq!(stored_annotation(&state), Some(written.clone()));
    // The next renewal keeps what was written.
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert!(lock.check().is_ok());
    lock.release().await.expect("released");
    assert_eq!(stored_annotation(&state), Some(written));
    assert_eq!(
        stored_lease(&state)
            .spec
            .and_then(|spec| spec.holder_identity),
        None
    );
}

#[tokio::test(start_paused = true)]
async fn a_history_write_renews_the_claim() {
    let (client, state) = fake_apiserver::in_process(cluster(None));
    let lock = kube::Client::new(client)
        .acquire_lock(settings())
        .await
        .expect("free");
    // The renewals at 20, 25, 30 and 35 s fail; the history write at 37 s succeeds, and every
    // renewal after it fails.
    state
        .lock()
        .expect("state")
        .inject(Fault::status(Some(Method::PUT), "/leases/", 500).times(4));
    tokio::time::sleep(Duration::from_secs(37)).await;
    lock.write_history("[]".to_string())
        .await
        .expect("the fault is spent");
    state
        .lock()
        .expect("state")
        .inject(Fault::status(Some(Method::PUT), "/leases/", 500));
    // Valid until 50 s after that write, not 50 s after the lock was taken.
    tokio::time::sleep(Duration::from_secs(23)).await;
    assert!(lock.check().is_ok());
    tokio::time::sleep(Duration::from_secs(27)).await;
    let error = lock.check().expect_err("expired 50 s after the write");
    assert!(matches!(error, kube::Error::LockExpired { .. }), "{error}");
    let failed = lock
        .write_history("[]".to_string())
        .await
        .expect_err("no write starts on an expired claim");
    assert!(failed.is_lock_loss(), "{failed}");
    assert!(lock.release().await.is_err(), "the release fails too");
}

#[tokio::test(start_paused = true)]
async fn a_history_write_that_meets_another_runs_write_loses_the_claim() {
    let (client, state) = fake_apiserver::in_process(cluster(None));
    let lock = kube::Client::new(client)
        .acquire_lock(settings())
        .await
        .expect("free");
    state
        .lock()
        .expect("state")
        .inject(Fault::status(Some(Method::PUT), "/leases/", 409).times(1));
    let error = lock
        .write_history("[]".to_string())
        .await
        .expect_err("conflict");
    assert!(error.is_lock_loss(), "{error}");
    assert!(lock.check().is_err(), "lost for good");
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(
        state.lock().expect("state").count("PUT", "/leases/"),
        1,
        "the renewer stopped too"
    );
    lock.release().await.expect("nothing of ours to clear");
}

#[tokio::test(start_paused = true)]
async fn a_dry_run_reads_the_history_without_the_lock() {
    let earlier = earlier();
    let text = history::render(&earlier, Utc::now());
    let (client, state) = fake_apiserver::in_process(cluster(Some(lease(Some(&text)))));
    let kubernetes = kube::Client::new(client);
    let read = kubernetes.read_history(NAMESPACE, kube::LEASE_NAME).await;
    assert_eq!(read, History::Recorded(earlier));
    state.lock().expect("state").leases.clear();
    assert_eq!(
        kubernetes.read_history(NAMESPACE, kube::LEASE_NAME).await,
        History::Recorded(Vec::new()),
        "no lease: nothing recorded yet"
    );
    // RBAC's own refusal: the account may no longer read the lock.
    state.lock().expect("state").rbac =
        fake_apiserver::Rbac::chart().without("coordination.k8s.io", "leases", "get");
    let History::Unreadable(unreadable) =
        kubernetes.read_history(NAMESPACE, kube::LEASE_NAME).await
    else {
        panic!("a refused read fails closed");
    };
    assert_eq!(unreadable.object, "Lease kube-system/vsphere-descheduler");
    let history::HistoryDefect::NotRead(problem) = &unreadable.cause else {
        panic!(
            "a read that failed, not a corrupt annotation: {:?}",
            unreadable.cause
        );
    };
    assert!(problem.text.contains("HTTP 403"), "{problem}");
    assert_eq!(
        problem.cause,
        Cause::Forbidden,
        "the kind read from the status code"
    );
    let cluster = state.lock().expect("state");
    assert!(
        cluster.requests.iter().all(|r| r.method == "GET"),
        "{:?}",
        cluster.requests
    );
}

#[tokio::test(start_paused = true)]
async fn a_snapshot_records_the_lease_with_only_its_history() {
    let text = history::render(&earlier(), Utc::now());
    let (client, _) = fake_apiserver::in_process(cluster(Some(lease(Some(&text)))));
    let kubernetes = kube::Client::new(client);
    let recorded = kubernetes
        .recorded_history(NAMESPACE, kube::LEASE_NAME)
        .await
        .expect("read")
        .expect("a history");
    assert_eq!(
        serde_json::to_value(&recorded).expect("JSON"),
        json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": kube::LEASE_NAME,
                "namespace": NAMESPACE,
                "annotations": {ANNOTATION: text}
            }
        })
    );
    let (client, _) = fake_apiserver::in_process(cluster(Some(lease(None))));
    let none = kube::Client::new(client)
        .recorded_history(NAMESPACE, kube::LEASE_NAME)
        .await
        .expect("read");
    assert_eq!(none, None, "a lease without a history is not recorded");
}

// --- The executor ----------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn paced_evictions_are_recorded_before_they_are_sent_and_those_refused_taken_out_after() {
    let text = history::render(&earlier(), Utc::now());
    let (client, state) = fake_apiserver::in_process(cluster(Some(lease(Some(&text)))));
    let outcomes = execute_live(&plan(), client).await;
    assert!(
        matches!(outcomes.evictions[0], EvictionOutcome::Blocked(_)),
        "{outcomes:?}"
    );
    assert_eq!(outcomes.evictions[1], EvictionOutcome::Evicted);
    assert_eq!(outcomes.evictions[2], EvictionOutcome::Evicted);
    assert_eq!(outcomes.verdict(), Verdict::Done);
    // The earlier entry stays; of the two recorded, the refused one was taken out.
    assert_eq!(
        stored_entries(&state),
        [
            (
                "shop/Deployment/cart".to_string(),
                "cart-1".to_string(),
                "RemoveDuplicates".to_string()
            ),
            (
                "shop/Deployment/api".to_string(),
                "api-1".to_string(),
                "RemoveDuplicates".to_string()
            ),
        ]
    );
    // Recorded before the first eviction was sent, corrected after the last.
    let cluster = state.lock().expect("state");
    let order: Vec<&str> = cluster
        .requests
        .iter()
        .filter(|r| r.method == "PUT" || r.path.ends_with("/eviction"))
        .map(|r| {
            if r.path.ends_with("/eviction") {
                "evict"
            } else {
                "lease"
            }
        })
        .collect();
    assert_eq!(
        order,
        [
            "lease", "lease", "evict", "evict", "evict", "lease", "lease"
        ],
        "take, record, three evictions, correct, release"
    );
}

#[tokio::test(start_paused = true)]
async fn all_recorded_evictions_done_means_no_second_write() {
    let (client, state) = fake_apiserver::in_process(cluster(None));
    let plan = Plan {
        evictions: vec![eviction("api-1", Some("shop/Deployment/api"))],
        ..Plan::default()
    };
    let outcomes = execute_live(&plan, client).await;
    assert_eq!(outcomes.evictions, [EvictionOutcome::Evicted]);
    assert_eq!(
        stored_entries(&state),
        [(
            "shop/Deployment/api".to_string(),
            "api-1".to_string(),
            "RemoveDuplicates".to_string()
        )]
    );
    assert_eq!(
        state.lock().expect("state").count("PUT", "/leases/"),
        2,
        "recorded, then released (the lease was created when taken): not corrected"
    );
}

#[tokio::test(start_paused = true)]
async fn a_history_that_cannot_be_recorded_sends_no_paced_eviction_but_the_others() {
    let text = history::render(&earlier(), Utc::now());
    let (client, state) = fake_apiserver::in_process(cluster(Some(lease(Some(&text)))));
    // The lease is taken with a PUT; the history write after it fails.
    state.lock().expect("state").inject(
        Fault::status(Some(Method::PUT), "/leases/", 500)
            .after(1)
            .times(1),
    );
    let outcomes = execute_live(&plan(), client).await;
    assert_eq!(
        outcomes.evictions,
        [
            EvictionOutcome::NotAttempted(NotAttempted::HistoryNotRecorded),
            EvictionOutcome::Evicted,
            EvictionOutcome::NotAttempted(NotAttempted::HistoryNotRecorded),
        ]
    );
    let [Problem::HistoryNotRecorded(cause)] = outcomes.problems.as_slice() else {
        panic!("{:?}", outcomes.problems);
    };
    assert!(
        cause
            .text
            .starts_with("failed to write lease kube-system/vsphere-descheduler"),
        "{cause}"
    );
    assert_eq!(cause.cause, Cause::ServerError);
    assert_eq!(outcomes.verdict(), Verdict::Failed);
    assert!(!evicted(&state, "web-1") && !evicted(&state, "api-1"));
    assert!(evicted(&state, "job-1"));
    assert_eq!(stored_annotation(&state), Some(text), "as it was");
}

#[tokio::test(start_paused = true)]
async fn a_history_write_that_loses_the_lock_halts_every_eviction() {
    let (client, state) = fake_apiserver::in_process(cluster(Some(lease(None))));
    state.lock().expect("state").inject(
        Fault::status(Some(Method::PUT), "/leases/", 409)
            .after(1)
            .times(1),
    );
    let outcomes = execute_live(&plan(), client).await;
    assert!(
        outcomes.evictions.iter().all(|outcome| matches!(
            outcome,
            EvictionOutcome::NotAttempted(NotAttempted::Halted(_))
        )),
        "{outcomes:?}"
    );
    let Some((Halt::LockLost(lost), _)) = &outcomes.halt else {
        panic!("{:?}", outcomes.halt);
    };
    assert_eq!(lost.cause, Cause::LockLost);
    assert_eq!(state.lock().expect("state").count("POST", "/eviction"), 0);
}

#[tokio::test(start_paused = true)]
async fn an_unreadable_history_is_never_overwritten() {
    let (client, state) = fake_apiserver::in_process(cluster(Some(lease(Some("corrupt")))));
    // The planner plans no paced eviction on an unreadable history; should one come anyway, it
    // is not sent, and the history is not replaced.
    let outcomes = execute_live(&plan(), client).await;
    assert_eq!(
        outcomes.evictions[0],
        EvictionOutcome::NotAttempted(NotAttempted::HistoryNotRecorded)
    );
    assert_eq!(outcomes.evictions[1], EvictionOutcome::Evicted);
    assert_eq!(stored_annotation(&state).as_deref(), Some("corrupt"));
}

#[tokio::test(start_paused = true)]
async fn a_correction_that_fails_leaves_the_history_counting_more() {
    let (client, state) = fake_apiserver::in_process(cluster(Some(lease(None))));
    // Taken, recorded, then the correction fails.
    state.lock().expect("state").inject(
        Fault::status(Some(Method::PUT), "/leases/", 500)
            .after(2)
            .times(1),
    );
    let outcomes = execute_live(&plan(), client).await;
    assert!(matches!(outcomes.evictions[0], EvictionOutcome::Blocked(_)));
    assert_eq!(
        outcomes.verdict(),
        Verdict::Done,
        "a warning, not a failure"
    );
    let pods: Vec<String> = stored_entries(&state)
        .into_iter()
        .map(|(_, pod, _)| pod)
        .collect();
    assert_eq!(pods, ["web-1", "api-1"], "the refused one is still counted");
}

#[tokio::test(start_paused = true)]
async fn a_dry_run_sends_paced_evictions_as_checks_and_writes_no_history() {
    let (client, state) = fake_apiserver::in_process(cluster(Some(lease(None))));
    let kubernetes = kube::Client::new(client);
    let stop = Stop::new();
    let outcomes = run::execute(
        &plan(),
        Backends {
            kubernetes: &kubernetes,
            vsphere: None,
            dry_run: true,
            stop: &stop,
            lock: None,
            instance: "run-1",
        },
    )
    .await;
    assert!(matches!(outcomes.evictions[0], EvictionOutcome::Blocked(_)));
    assert_eq!(outcomes.evictions[2], EvictionOutcome::WouldEvict);
    let cluster = state.lock().expect("state");
    assert_eq!(cluster.count("GET", "/leases/"), 0);
    assert!(
        cluster
            .requests
            .iter()
            .all(|r| r.path.ends_with("/eviction")),
        "{:?}",
        cluster.requests
    );
}
