//! The eviction history against the fake API server, through the real kube client and under
//! the chart's RBAC (the fake enforces it): the run lock reads it (the ConfigMap beside the
//! lock, and the earlier form in the Lease's annotation) and writes it (the ConfigMap with its
//! resourceVersion; the Lease without the earlier form, taking turns with its renewals), a dry
//! run reads it without the lock, and the executor records a plan's paced evictions before
//! sending them and corrects the record afterwards. Plans are built here with `paced_as` set,
//! as the planner sets it. Every test runs the fake in the test's runtime on paused time, so
//! renewals and delays happen at exact instants however busy the machine is.

mod support;

use std::sync::Mutex;
use std::time::Duration;

use axum::http::Method;
use chrono::{DateTime, Utc};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
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

/// The run lock's Lease as another run left it: released, with `annotation` as its history
/// (the earlier form).
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

/// `web-1` (its PDB refuses), `api-1` and `job-1`, and the run lock's Lease (none when `None`).
fn cluster(lease: Option<Lease>) -> FakeCluster {
    with_config_map(lease, None)
}

/// As [`cluster`], with the history ConfigMap holding `entries` when given.
fn with_config_map(lease: Option<Lease>, entries: Option<&[PastEviction]>) -> FakeCluster {
    FakeCluster::new(KubeObjects {
        pods: vec![
            pod("web-1", "web"),
            pod("api-1", "api"),
            pod("job-1", "job"),
        ],
        pdbs: vec![no_disruption("web")],
        leases: lease.into_iter().collect(),
        config_maps: entries.map(config_map).into_iter().collect(),
        ..KubeObjects::default()
    })
}

const CONFIG_MAP: &str = "vsphere-descheduler-history";

/// The history ConfigMap holding `entries`, as a run writes it.
fn config_map(entries: &[PastEviction]) -> ConfigMap {
    let compact = history::encode(entries, Utc::now());
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": CONFIG_MAP, "namespace": NAMESPACE,
            "annotations": {ANNOTATION: compact.marker}},
        "data": compact.data
    }))
    .expect("a ConfigMap")
}

/// `entries` in the earlier form: the Lease annotation's JSON list.
fn legacy(entries: &[PastEviction]) -> String {
    let list: Vec<_> = entries
        .iter()
        .map(|entry| {
            let pod = entry.pod.as_ref().expect("a pod");
            json!({"at": entry.at, "workload": entry.workload, "pod": pod.name, "plugin": pod.plugin})
        })
        .collect();
    serde_json::to_string(&list).expect("JSON")
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
    PastEviction::new(at, workload, pod, "RemoveDuplicates")
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

/// The history ConfigMap as stored.
fn stored_config_map(state: &Mutex<FakeCluster>) -> Option<ConfigMap> {
    let cluster = state.lock().expect("state");
    cluster
        .config_maps
        .get(&(NAMESPACE.to_string(), CONFIG_MAP.to_string()))
        .map(|config_map| (**config_map).clone())
}

/// The entries the ConfigMap holds, oldest first.
fn stored_history(state: &Mutex<FakeCluster>) -> Vec<PastEviction> {
    let config_map = stored_config_map(state).expect("a history ConfigMap");
    let compact = history::Compact {
        marker: config_map.metadata.annotations.expect("annotated")[ANNOTATION].clone(),
        data: config_map.data.unwrap_or_default(),
    };
    history::decode(&compact).expect("a readable history")
}

/// The entries stored, without their times (the clock is the test's, not the fake's): the
/// workload, and the pod and plugin where kept.
fn stored_entries(state: &Mutex<FakeCluster>) -> Vec<(String, String, String)> {
    stored_history(state)
        .into_iter()
        .map(|entry| {
            let pod = entry.pod.unwrap_or_else(|| history::EvictedPod {
                name: String::new(),
                plugin: String::new(),
            });
            (entry.workload, pod.name, pod.plugin)
        })
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

/// An eviction of an earlier run, half an hour ago, in whole seconds (as the history keeps
/// times).
fn earlier() -> Vec<PastEviction> {
    let at = Utc::now() - chrono::TimeDelta::minutes(30);
    let at = DateTime::from_timestamp(at.timestamp(), 0).expect("a time");
    vec![entry(at, "shop/Deployment/cart", "cart-1")]
}

// --- The lock's reads and writes -------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn the_lock_reads_the_earlier_form_the_lease_held_and_keeps_it_through_renewals_and_release()
{
    let earlier = earlier();
    let text = legacy(&earlier);
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
    assert_eq!(stored_config_map(&state), None, "nothing written");
}

/// Today's format is still read: the committed fixture of a Lease written before the ConfigMap.
#[tokio::test(start_paused = true)]
async fn the_committed_fixture_of_the_earlier_form_is_read_through_the_lock() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/history/legacy-lease/snapshot.yaml");
    let objects = fake_apiserver::read_objects(&path);
    let (client, _) = fake_apiserver::in_process(FakeCluster::new(objects));
    let lock = kube::Client::new(client)
        .acquire_lock(settings())
        .await
        .expect("free");
    let History::Recorded(entries) = lock.history() else {
        panic!("{:?}", lock.history());
    };
    let read: Vec<(&str, &str)> = entries
        .iter()
        .map(|e| {
            (
                e.workload.as_str(),
                e.pod.as_ref().expect("kept").name.as_str(),
            )
        })
        .collect();
    assert_eq!(
        read,
        [
            ("shop/Deployment/web", "web-5d8f7c9b6-aaaaa"),
            ("shop/StatefulSet/db", "db-1")
        ]
    );
    lock.release().await.expect("released");
}

#[tokio::test(start_paused = true)]
async fn the_lock_reads_the_config_maps_history_with_the_earlier_form() {
    let earlier = earlier();
    let older = vec![entry(
        earlier[0].at - chrono::TimeDelta::minutes(5),
        "shop/Deployment/web",
        "web-0",
    )];
    let (client, _) = fake_apiserver::in_process(with_config_map(
        Some(lease(Some(&legacy(&older)))),
        Some(&earlier),
    ));
    let lock = kube::Client::new(client)
        .acquire_lock(settings())
        .await
        .expect("free");
    assert_eq!(
        lock.history(),
        &History::Recorded(older.into_iter().chain(earlier).collect())
    );
    lock.release().await.expect("released");
}

#[tokio::test(start_paused = true)]
async fn a_lock_on_a_corrupt_history_reads_it_as_unreadable_naming_its_object() {
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
    // A ConfigMap whose data is not a history.
    let mut corrupt = config_map(&earlier());
    corrupt
        .data
        .get_or_insert_with(Default::default)
        .insert("shop.Deployment".to_string(), "web yesterday\n".to_string());
    let mut fake = cluster(None);
    fake.config_maps.insert(
        (NAMESPACE.to_string(), CONFIG_MAP.to_string()),
        std::sync::Arc::new(corrupt),
    );
    let (client, _) = fake_apiserver::in_process(fake);
    let lock = kube::Client::new(client)
        .acquire_lock(settings())
        .await
        .expect("free");
    let History::Unreadable(unreadable) = lock.history() else {
        panic!("corrupt: {:?}", lock.history());
    };
    assert_eq!(
        unreadable.object,
        "ConfigMap kube-system/vsphere-descheduler-history"
    );
    lock.release().await.expect("released");
}

#[tokio::test(start_paused = true)]
async fn the_first_write_moves_the_earlier_form_into_the_config_map_taking_turns_with_a_renewal() {
    let earlier = earlier();
    let (client, state) = fake_apiserver::in_process(cluster(Some(lease(Some(&legacy(&earlier))))));
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
    let History::Recorded(read) = lock.history().clone() else {
        panic!("readable");
    };
    lock.write_history(history::encode(&read, Utc::now()))
        .await
        .expect("written, the Lease after the renewal, with its resourceVersion");
    assert!(lock.check().is_ok(), "neither write read as a takeover");
    assert_eq!(stored_history(&state), earlier);
    assert_eq!(stored_annotation(&state), None, "moved into the ConfigMap");
    // The next renewal and the next write leave it so; the Lease is not written again.
    tokio::time::sleep(Duration::from_secs(30)).await;
    let puts = state.lock().expect("state").count("PUT", "/leases/");
    lock.write_history(history::encode(&read, Utc::now()))
        .await
        .expect("written");
    assert_eq!(state.lock().expect("state").count("PUT", "/leases/"), puts);
    assert!(lock.check().is_ok());
    lock.release().await.expect("released");
    assert_eq!(stored_annotation(&state), None);
    assert_eq!(stored_history(&state), earlier);
    assert_eq!(
        stored_lease(&state)
            .spec
            .and_then(|spec| spec.holder_identity),
        None
    );
}

#[tokio::test(start_paused = true)]
async fn no_history_write_starts_on_an_expired_claim() {
    let (client, state) = fake_apiserver::in_process(cluster(None));
    let lock = kube::Client::new(client)
        .acquire_lock(settings())
        .await
        .expect("free");
    // Every renewal fails.
    state
        .lock()
        .expect("state")
        .inject(Fault::status(Some(Method::PUT), "/leases/", 500));
    tokio::time::sleep(Duration::from_secs(49)).await;
    lock.write_history(history::encode(&earlier(), Utc::now()))
        .await
        .expect("still valid");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let error = lock
        .check()
        .expect_err("expired 50 s after the lock was taken");
    assert!(matches!(error, kube::Error::LockExpired { .. }), "{error}");
    let failed = lock
        .write_history(history::encode(&[], Utc::now()))
        .await
        .expect_err("no write starts on an expired claim");
    assert!(failed.is_lock_loss(), "{failed}");
    assert_eq!(stored_history(&state), earlier(), "the first write stands");
    assert!(lock.release().await.is_err(), "the release fails too");
}

#[tokio::test(start_paused = true)]
async fn removing_the_earlier_form_when_another_run_wrote_the_lease_loses_the_claim() {
    let (client, state) =
        fake_apiserver::in_process(cluster(Some(lease(Some(&legacy(&earlier()))))));
    let lock = kube::Client::new(client)
        .acquire_lock(settings())
        .await
        .expect("free");
    state
        .lock()
        .expect("state")
        .inject(Fault::status(Some(Method::PUT), "/leases/", 409).times(1));
    let error = lock
        .write_history(history::encode(&earlier(), Utc::now()))
        .await
        .expect_err("conflict");
    assert!(error.is_lock_loss(), "{error}");
    assert!(lock.check().is_err(), "lost for good");
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(
        state.lock().expect("state").count("PUT", "/leases/"),
        2,
        "taken, then the write refused: the renewer stopped too"
    );
    lock.release().await.expect("nothing of ours to clear");
}

#[tokio::test(start_paused = true)]
async fn a_config_map_someone_else_changed_is_not_written_over() {
    let (client, state) = fake_apiserver::in_process(with_config_map(None, Some(&earlier())));
    let lock = kube::Client::new(client)
        .acquire_lock(settings())
        .await
        .expect("free");
    // Someone edits the ConfigMap after the lock read it.
    {
        let mut cluster = state.lock().expect("state");
        let key = (NAMESPACE.to_string(), CONFIG_MAP.to_string());
        let stored = std::sync::Arc::make_mut(cluster.config_maps.get_mut(&key).expect("there"));
        stored.metadata.resource_version = Some("999999".to_string());
    }
    let error = lock
        .write_history(history::encode(&[], Utc::now()))
        .await
        .expect_err("a conflict");
    assert!(
        matches!(error, kube::Error::HistoryChanged { .. }),
        "{error}"
    );
    assert_eq!(error.cause(), Cause::Conflict);
    assert!(!error.is_lock_loss(), "the lock is still ours");
    assert!(lock.check().is_ok());
    assert_eq!(stored_history(&state), earlier(), "not written over");
    lock.release().await.expect("released");
}

#[tokio::test(start_paused = true)]
async fn a_dry_run_reads_the_history_without_the_lock() {
    let earlier = earlier();
    let (client, state) =
        fake_apiserver::in_process(with_config_map(Some(lease(None)), Some(&earlier)));
    let kubernetes = kube::Client::new(client);
    let read = kubernetes.read_history(NAMESPACE, kube::LEASE_NAME).await;
    assert_eq!(read, History::Recorded(earlier));
    {
        let mut cluster = state.lock().expect("state");
        cluster.leases.clear();
        cluster.config_maps.clear();
    }
    assert_eq!(
        kubernetes.read_history(NAMESPACE, kube::LEASE_NAME).await,
        History::Recorded(Vec::new()),
        "neither object: nothing recorded yet"
    );
    // RBAC's own refusals: the account may no longer read the history, or the lock.
    for (group, resource, object) in [
        (
            "",
            "configmaps",
            "ConfigMap kube-system/vsphere-descheduler-history",
        ),
        (
            "coordination.k8s.io",
            "leases",
            "Lease kube-system/vsphere-descheduler",
        ),
    ] {
        state.lock().expect("state").rbac =
            fake_apiserver::Rbac::chart().without(group, resource, "get");
        let History::Unreadable(unreadable) =
            kubernetes.read_history(NAMESPACE, kube::LEASE_NAME).await
        else {
            panic!("a refused read fails closed");
        };
        assert_eq!(unreadable.object, object);
        let history::HistoryDefect::NotRead(problem) = &unreadable.cause else {
            panic!(
                "a read that failed, not a corrupt one: {:?}",
                unreadable.cause
            );
        };
        assert!(problem.text.contains("403"), "{problem}");
        assert_eq!(
            problem.cause,
            Cause::Forbidden,
            "the kind read from the status code"
        );
    }
    let cluster = state.lock().expect("state");
    assert!(
        cluster.requests.iter().all(|r| r.method == "GET"),
        "{:?}",
        cluster.requests
    );
}

#[tokio::test(start_paused = true)]
async fn a_snapshot_records_the_config_map_and_the_lease_with_only_its_history() {
    let text = legacy(&earlier());
    let (client, _) =
        fake_apiserver::in_process(with_config_map(Some(lease(Some(&text))), Some(&earlier())));
    let kubernetes = kube::Client::new(client);
    let recorded = kubernetes
        .recorded_history(NAMESPACE, kube::LEASE_NAME)
        .await
        .expect("read");
    let recorded = serde_json::to_value(&recorded).expect("JSON");
    let written = config_map(&earlier());
    assert_eq!(
        recorded,
        json!([
            {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {
                    "name": kube::LEASE_NAME,
                    "namespace": NAMESPACE,
                    "annotations": {ANNOTATION: text}
                }
            },
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": CONFIG_MAP,
                    "namespace": NAMESPACE,
                    "annotations": written.metadata.annotations
                },
                "data": written.data
            }
        ])
    );
    let (client, _) = fake_apiserver::in_process(cluster(Some(lease(None))));
    let none = kube::Client::new(client)
        .recorded_history(NAMESPACE, kube::LEASE_NAME)
        .await
        .expect("read");
    assert!(none.is_empty(), "a lease without a history is not recorded");
}

// --- The executor ----------------------------------------------------------------------------

/// The requests that write: the Lease's, the ConfigMap's and evictions, in order.
fn writes(state: &Mutex<FakeCluster>) -> Vec<&'static str> {
    let cluster = state.lock().expect("state");
    cluster
        .requests
        .iter()
        .filter(|r| r.method == "PUT" || r.method == "POST" && !r.path.contains("/events"))
        .map(|r| {
            if r.path.ends_with("/eviction") {
                "evict"
            } else if r.path.contains("/configmaps") {
                "history"
            } else {
                "lease"
            }
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn paced_evictions_are_recorded_before_they_are_sent_and_those_refused_taken_out_after() {
    let (client, state) =
        fake_apiserver::in_process(cluster(Some(lease(Some(&legacy(&earlier()))))));
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
    assert_eq!(stored_annotation(&state), None, "moved into the ConfigMap");
    // Recorded before the first eviction was sent, corrected after the last.
    assert_eq!(
        writes(&state),
        [
            "lease", "history", "lease", "evict", "evict", "evict", "history", "lease"
        ],
        "take, record (and remove the earlier form), three evictions, correct, release"
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
        writes(&state),
        ["lease", "history", "evict", "lease"],
        "taken (created), recorded, evicted, released: not corrected"
    );
}

#[tokio::test(start_paused = true)]
async fn a_history_that_cannot_be_recorded_sends_no_paced_eviction_but_the_others() {
    let (client, state) = fake_apiserver::in_process(with_config_map(None, Some(&earlier())));
    state
        .lock()
        .expect("state")
        .inject(Fault::status(Some(Method::PUT), "/configmaps/", 500).times(1));
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
        cause.text.starts_with(
            "failed to write the eviction history's ConfigMap \
             kube-system/vsphere-descheduler-history"
        ),
        "{cause}"
    );
    assert_eq!(cause.cause, Cause::ServerError);
    assert_eq!(outcomes.verdict(), Verdict::Failed);
    assert!(!evicted(&state, "web-1") && !evicted(&state, "api-1"));
    assert!(evicted(&state, "job-1"));
    assert_eq!(stored_history(&state), earlier(), "as it was");
}

#[tokio::test(start_paused = true)]
async fn a_history_write_that_loses_the_lock_halts_every_eviction() {
    let (client, state) =
        fake_apiserver::in_process(cluster(Some(lease(Some(&legacy(&earlier()))))));
    // Taken with a PUT; the one removing the earlier form meets another run's write.
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
    assert_eq!(stored_config_map(&state), None);
}

#[tokio::test(start_paused = true)]
async fn a_correction_that_fails_leaves_the_history_counting_more() {
    let (client, state) = fake_apiserver::in_process(cluster(Some(lease(None))));
    // Created when recorded; the correction fails.
    state
        .lock()
        .expect("state")
        .inject(Fault::status(Some(Method::PUT), "/configmaps/", 500).times(1));
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
    assert_eq!(pods, ["api-1", "web-1"], "the refused one is still counted");
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

// --- At scale --------------------------------------------------------------------------------

/// `count` pods of as many Deployments, `shop/Deployment/app-<i>`, none under a PDB.
fn many_pods(first: usize, count: usize) -> Vec<Pod> {
    (first..first + count)
        .map(|i| pod(&format!("app-{i:05}-1"), &format!("app-{i:05}")))
        .collect()
}

/// A plan evicting each of `pods`, paced under its Deployment.
fn plan_of(pods: &[Pod]) -> Plan {
    Plan {
        evictions: pods
            .iter()
            .map(|pod| {
                let name = pod.metadata.name.clone().expect("named");
                let app = &pod.metadata.labels.as_ref().expect("labelled")["app"];
                eviction(&name, Some(&format!("shop/Deployment/{app}")))
            })
            .collect(),
        ..Plan::default()
    }
}

/// Two runs of 1,000 paced evictions each, ten times what the Lease annotation's 32 KiB held
/// in a window (about 190): the second run reads the first run's 1,000, and records its own
/// beside them; a dry run reads all 2,000 back. Through the real client, under the chart's
/// RBAC, which the fake enforces.
#[tokio::test(start_paused = true)]
async fn two_runs_record_and_read_back_two_thousand_evictions() {
    let (first, second) = (many_pods(0, 1000), many_pods(1000, 1000));
    let (client, state) = fake_apiserver::in_process(FakeCluster::new(KubeObjects {
        pods: first.iter().chain(&second).cloned().collect(),
        ..KubeObjects::default()
    }));
    let outcomes = execute_live(&plan_of(&first), client.clone()).await;
    assert!(
        outcomes
            .evictions
            .iter()
            .all(|o| *o == EvictionOutcome::Evicted),
        "{:?}",
        outcomes.problems
    );
    let lock = kube::Client::new(client.clone())
        .acquire_lock(settings())
        .await
        .expect("free");
    let History::Recorded(read) = lock.history() else {
        panic!("{:?}", lock.history());
    };
    assert_eq!(read.len(), 1000, "the next run reads every one");
    lock.release().await.expect("released");
    let outcomes = execute_live(&plan_of(&second), client.clone()).await;
    assert_eq!(outcomes.verdict(), Verdict::Done, "{:?}", outcomes.problems);
    let read = kube::Client::new(client)
        .read_history(NAMESPACE, kube::LEASE_NAME)
        .await;
    let History::Recorded(read) = read else {
        panic!("{read:?}");
    };
    assert_eq!(read.len(), 2000);
    let workloads: std::collections::BTreeSet<&str> =
        read.iter().map(|e| e.workload.as_str()).collect();
    assert_eq!(workloads.len(), 2000, "each its own workload");
    assert!(read.iter().all(|e| e.pod.is_some()), "every pod kept");
    let cluster = state.lock().expect("state");
    assert_eq!(cluster.count("POST", "/configmaps"), 1, "created once");
    assert_eq!(cluster.count("PUT", "/configmaps/"), 1, "replaced once");
}

/// The fake answers for the history ConfigMap as kube-apiserver does: 1 MiB of values at most
/// (422 naming the limit), a body over 3 MiB refused before it is read (413), a stale
/// resourceVersion 409, and a ConfigMap a run may not create beyond what the chart grants 403.
#[tokio::test(start_paused = true)]
async fn the_fake_limits_a_config_map_as_the_api_server_does() {
    use ::kube::api::{Api, PostParams};
    let (client, state) = fake_apiserver::in_process(cluster(None));
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
    let with_data = |bytes: usize| -> ConfigMap {
        serde_json::from_value(json!({
            "metadata": {"name": CONFIG_MAP, "namespace": NAMESPACE},
            "data": {"a.B": "x".repeat(bytes)}
        }))
        .expect("a ConfigMap")
    };
    let status = |error: ::kube::Error| match error {
        ::kube::Error::Api(status) => (status.code, status.message),
        other => panic!("{other}"),
    };
    let (code, message) = status(
        api.create(&PostParams::default(), &with_data(1024 * 1024 + 1))
            .await
            .expect_err("too long"),
    );
    assert_eq!(code, 422);
    assert!(
        message.contains("Too long: may not be more than 1048576 bytes"),
        "{message}"
    );
    let (code, message) = status(
        api.create(&PostParams::default(), &with_data(3 * 1024 * 1024))
            .await
            .expect_err("too large"),
    );
    assert_eq!(code, 413);
    assert_eq!(message, "Request entity too large: limit is 3145728");
    let created = api
        .create(&PostParams::default(), &with_data(1024 * 1024))
        .await
        .expect("exactly 1 MiB is allowed");
    let mut stale = created.clone();
    api.replace(CONFIG_MAP, &PostParams::default(), &with_data(10))
        .await
        .expect("an unconditional update");
    stale.data = Some([("a.B".to_string(), "y".to_string())].into());
    let (code, _) = status(
        api.replace(CONFIG_MAP, &PostParams::default(), &stale)
            .await
            .expect_err("stale"),
    );
    assert_eq!(code, 409);
    // The chart grants get and update on the history's ConfigMap only.
    let mut other = with_data(1);
    other.metadata.name = Some("someone-elses".to_string());
    api.create(&PostParams::default(), &other)
        .await
        .expect("create cannot be limited by name");
    let (code, _) = status(
        api.get("someone-elses")
            .await
            .expect_err("not ours to read"),
    );
    assert_eq!(code, 403);
    assert_eq!(state.lock().expect("state").config_maps.len(), 2);
}
