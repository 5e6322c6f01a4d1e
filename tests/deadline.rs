//! The end of a run at its deadline, on paused time (issue 31): the run against the fake API
//! server in this test's runtime ([`fake_apiserver::in_process`]), so the deadline, the release
//! limit and every wait fall at exact instants however busy the machine is. Requests the test
//! wants unanswered wait at a gate that is never opened.
//!
//! vCenter is not reached: its address is refused before any request is sent (no I/O, which
//! paused time would race), so every report here also carries that error.

mod support;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::Method;
use support::fake_apiserver::{self, FakeCluster, Fault, FaultAction, Gate, read_objects};
use tokio::time::Instant;
use vsphere_descheduler::kube::{self, LEASE_NAME, LockSettings};
use vsphere_descheduler::run::{self, Finished, Stop};
use vsphere_descheduler::settings::{self, RELEASE_LIMIT, RunConfig, TopologySource};
use vsphere_descheduler::vsphere::{ConnectionConfig, Credentials};

const DEADLINE: Duration = Duration::from_secs(30);
const HOLDER: &str = "run-1";

/// A live run of the lifecycle story (two evictions that need no vCenter: a pod on a tainted
/// node and a failed one), with `--deadline`.
fn config() -> RunConfig {
    let policy = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/e2e/lifecycle-plugins/policy.yaml");
    let (mut policy, _) = settings::load_policy(Some(&policy)).expect("the story's policy");
    // The Lease writes held here stand for the release at the end; pacing's history write
    // before the evictions is a Lease write too, and is tested in tests/history.rs.
    policy
        .vsphere
        .availability
        .pacing
        .max_evictions_per_workload = 0;
    RunConfig {
        policy,
        warnings: Vec::new(),
        deadline: Some(DEADLINE),
        dry_run: false,
        // Refused as it is read: vCenter is only reached over https.
        topology: TopologySource::Vcenter(ConnectionConfig::new(
            "http://vcenter.invalid",
            Credentials::new("u", "p"),
        )),
        lock: LockSettings {
            namespace: "kube-system".to_string(),
            name: LEASE_NAME.to_string(),
            holder: HOLDER.to_string(),
            duration: Duration::from_secs(60),
        },
        timeout: Duration::from_secs(30),
        metrics_push: None,
        kubernetes: kube::Selection::default(),
        placement: false,
    }
}

/// The lifecycle story served in process, with `faults`.
fn cluster(faults: Vec<Fault>) -> (kube::Client, Arc<Mutex<FakeCluster>>) {
    let story = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/e2e/lifecycle-plugins/snapshot.yaml");
    let mut objects = read_objects(&story);
    objects.inventory = None;
    let (client, state) = fake_apiserver::in_process(FakeCluster::new(objects));
    for fault in faults {
        state.lock().expect("state").inject(fault);
    }
    (kube::Client::new(client), state)
}

/// Requests of `method` to paths containing `path` wait at a gate that never opens.
fn never_answered(method: Method, path: &str) -> Fault {
    Fault::action(Some(method), path, FaultAction::Hold(Gate::new()))
}

/// Runs with the deadline armed now.
async fn run_with_deadline(kubernetes: &kube::Client) -> Finished {
    let stop = Stop::new();
    stop.abort_after(DEADLINE);
    let endpoint = kube::Endpoint {
        api_server: "http://fake-apiserver.in-process".to_string(),
        context: None,
        namespace: "default".to_string(),
    };
    run::run_on(&config(), kubernetes, endpoint, &stop).await
}

fn lock_holder(state: &Mutex<FakeCluster>) -> Option<String> {
    let cluster = state.lock().expect("state");
    let lease = cluster.leases.values().next().expect("the run lock");
    lease.spec.as_ref().and_then(|s| s.holder_identity.clone())
}

fn evictions_with(finished: &Finished, result: &str) -> usize {
    finished
        .report
        .evictions()
        .filter(|entry| entry.result().as_str() == result)
        .count()
}

/// Issue 31: with the API server stalled at the end of a run, the report came out after the
/// lock release gave up (5 s past the deadline), and a run whose deadline cut off only the
/// Events and the release exited 0 with no error.
#[tokio::test(start_paused = true)]
async fn at_the_deadline_the_report_comes_first_and_says_the_deadline_cut_the_events_off() {
    let (kubernetes, state) = cluster(vec![
        never_answered(Method::POST, "/events"),
        never_answered(Method::PUT, "/leases/"),
    ]);
    let started = Instant::now();
    let finished = run_with_deadline(&kubernetes).await;

    // The report is ready at the deadline, before the lock is released.
    assert_eq!(started.elapsed(), DEADLINE);
    assert_eq!(lock_holder(&state).as_deref(), Some(HOLDER));
    assert_eq!(
        evictions_with(&finished, "evicted"),
        2,
        "the actions were done"
    );
    let errors = &finished.report.errors;
    assert_eq!(errors.len(), 2, "{errors:#?}");
    assert!(
        errors[0].starts_with("vCenter could not be observed"),
        "{errors:#?}"
    );
    assert_eq!(
        errors[1],
        "the remaining events were not recorded: the run's deadline of 30s passed"
    );
    assert_eq!(finished.verdict.exit_code(), 1);

    // Then the release, bounded: the API server never answers it.
    let released = finished.teardown.finish().await;
    assert!(
        matches!(released, Err(kube::Error::ReleaseTimedOut { .. })),
        "{released:?}"
    );
    assert_eq!(started.elapsed(), DEADLINE + RELEASE_LIMIT);
    assert_eq!(lock_holder(&state).as_deref(), Some(HOLDER));
}

#[tokio::test(start_paused = true)]
async fn a_deadline_that_cuts_nothing_short_adds_no_error_and_the_release_follows_the_report() {
    let (kubernetes, state) = cluster(Vec::new());
    let started = Instant::now();
    let finished = run_with_deadline(&kubernetes).await;

    assert!(started.elapsed() < DEADLINE, "{:?}", started.elapsed());
    assert_eq!(lock_holder(&state).as_deref(), Some(HOLDER));
    assert_eq!(evictions_with(&finished, "evicted"), 2);
    let errors = &finished.report.errors;
    assert_eq!(errors.len(), 1, "only vCenter's: {errors:#?}");
    assert_eq!(state.lock().expect("state").count("POST", "/events"), 2);

    finished.teardown.finish().await.expect("released");
    assert_eq!(lock_holder(&state), None);
}

#[tokio::test(start_paused = true)]
async fn the_deadline_passing_before_the_events_cuts_them_all_off() {
    // The second eviction is never answered: the deadline ends the wait for it, so the Events
    // are not started.
    let (kubernetes, state) = cluster(vec![never_answered(Method::POST, "/eviction").after(1)]);
    let finished = run_with_deadline(&kubernetes).await;

    assert_eq!(evictions_with(&finished, "evicted"), 1);
    assert_eq!(evictions_with(&finished, "unknown"), 1);
    let errors = &finished.report.errors;
    assert_eq!(
        errors.last().map(String::as_str),
        Some("no events were recorded: the run's deadline of 30s passed"),
        "{errors:#?}"
    );
    assert_eq!(finished.verdict.exit_code(), 1);
    assert_eq!(state.lock().expect("state").count("POST", "/events"), 0);
    finished.teardown.finish().await.expect("released");
}
