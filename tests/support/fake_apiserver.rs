//! A fake Kubernetes API server for tests and the local lab: stateful, HTTP (or HTTPS) on
//! 127.0.0.1, driven through the real `kube` client, reproducing the server behaviour this tool
//! relies on, as a real kube-apiserver 1.32 was measured to answer, for every call it makes:
//!
//! * lists of nodes, pods, PodDisruptionBudgets, namespaces, PriorityClasses, leases and events,
//!   paged with
//!   `limit`/`continue` from a snapshot fixed by the first page; `410 Expired` (with a fresh
//!   token) once snapshots are expired, 400 for malformed tokens and for `continue` with a
//!   `resourceVersion`;
//! * node label writes: server-side apply with per-key ownership under field managers
//!   (conflicts, `force`, removal of keys only their applier owned, creation of a missing node
//!   unless the applied object names a `uid`: then 409 for a missing node and 422 Invalid on
//!   `metadata.uid` for one recreated under the same name), and merge patches with `null`
//!   deletion;
//! * the Eviction subresource, step by step as the real handler (PDB arithmetic, 201/429/403/
//!   404/500, `dryRun=All`, the PDB bypass for pending, finished and terminating pods, stale-PDB
//!   429 with `Retry-After`, `deleteOptions` read from the camelCase key only), the PDB status it
//!   writes, graceful pod deletion, and a PDB controller that re-computes budgets;
//! * metrics-server's `metrics.k8s.io/v1beta1` NodeMetrics and PodMetrics lists, or the 404 of
//!   a cluster without it and the 503 of an unavailable APIService;
//! * discovery (`/api`, `/api/v1`, `/apis`, `/apis/<group>[/<version>]`) of what it serves,
//!   unaggregated or (`/api`, `/apis`) aggregated, and the plain-text `404 page not found` of a
//!   group it does not serve;
//! * as a vSphere Supervisor ([`FakeCluster::supervisor`]), VM Operator's VirtualMachines and
//!   VirtualMachineSetResourcePolicies of one vSphere release: discovery, paged lists in a
//!   namespace or all, gets, each in any served version as the conversion webhook converts it;
//! * `events.k8s.io/v1` Event creation with the server's validation;
//! * Leases: create, get, PUT with `resourceVersion` preconditions (409) replacing labels,
//!   annotations and spec (annotation keys and their 256 KiB total validated), delete;
//! * ConfigMaps (the eviction history's): create, get, PUT (a stale `resourceVersion` is 409,
//!   none is unconditional, a missing one 404), keys and the 1 MiB total of values validated
//!   (422), a body over 3 MiB refused (413);
//! * authorization as RBAC does it for one identity ([`Rbac`]: by default the chart's
//!   ServiceAccount with exactly the chart's rendered RBAC; a test asks for a cluster-admin, or
//!   the chart's rules less one, and says why): every API request is authorized before it is
//!   handled, `403 Forbidden` with the authorizer's message when no rule allows it; a `PUT` or
//!   apply that would create a missing object is authorized for `create` too, as the real
//!   handlers do; `SelfSubjectAccessReview`s answered from the same grants (201, the spec echoed,
//!   `allowed` with RBAC's reason naming the binding, or not allowed with no reason), and
//!   granted to every identity as Kubernetes's `system:basic-user` does;
//! * the chart's ValidatingAdmissionPolicy on node updates when a test installs it
//!   ([`NodeLabelPolicy`]): a label outside the owned keys added, changed or removed, or an
//!   annotation changed, is `403 Forbidden` naming the policy and binding (as kube-apiserver 1.32 denied it);
//! * `dryRun=All` on node label writes: authorized, validated and admitted, nothing stored;
//! * fault injection per method and path (status codes, bodies that are not a `Status` as a
//!   proxy sends them, delays, dropped connections, expired continue tokens, requests held at a
//!   gate until the test opens it — then handled, or failed — with the gate telling the test
//!   when they arrived and when they were done with) and a log of every request.
//!
//! It serves on a socket of its own ([`FakeApiServer::start`]) or inside the test's runtime
//! ([`in_process`]): the kube client then calls the router directly, with no I/O, so a test can
//! pause tokio's clock and every timer — the client's, the fake's delays — runs on paused time.
//!
//! Known approximations, all documented where they apply: only the label part of
//! `managedFields` is modelled (loaded objects keep no other field ownership); pod controllers
//! (Deployments, ReplicaSets, StatefulSets, ReplicationControllers) are held only for the PDB
//! controller's `expectedPods`, not served; field selectors on lists are not supported (400).
//!
//! Tests assert the state this leaves behind (`FakeApiServer::cluster`), not the calls made.

#[path = "fake_apiserver/admission.rs"]
mod admission;
#[path = "fake_apiserver/apply.rs"]
mod apply;
#[path = "fake_apiserver/authorization.rs"]
mod authorization;
#[path = "fake_apiserver/config_maps.rs"]
mod config_maps;
#[path = "fake_apiserver/discovery.rs"]
mod discovery;
#[path = "fake_apiserver/eviction.rs"]
mod eviction;
#[path = "fake_apiserver/label_selector.rs"]
mod label_selector;
#[path = "fake_apiserver/leases_events.rs"]
mod leases_events;
#[path = "fake_apiserver/list.rs"]
mod list;
mod metrics;
#[path = "fake_apiserver/objects.rs"]
mod objects;
#[path = "fake_apiserver/tls.rs"]
mod tls;
#[path = "fake_apiserver/vm_operator.rs"]
pub mod vm_operator;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use serde_json::{Value, json};

use super::certificates::Certificates;

pub use admission::NodeLabelPolicy;
pub use apply::LabelOwner;
pub use authorization::{CHART_NAMESPACE, CHART_RBAC, CHART_SERVICE_ACCOUNT, GrantedRule, Rbac};
pub use metrics::MetricsApi;
pub use objects::{KubeObjects, Workload, read_objects};
pub use vm_operator::{Release, VmOperator};

/// What the fake holds. Lock it through [`FakeApiServer::cluster`] to set up or inspect state.
#[derive(Default)]
pub struct FakeCluster {
    /// The global `resourceVersion`, bumped by every change.
    revision: u64,
    uids: u64,
    pub nodes: BTreeMap<String, Arc<Node>>,
    /// By `(namespace, name)`.
    pub pods: BTreeMap<(String, String), Arc<Pod>>,
    pub pdbs: BTreeMap<(String, String), Arc<PodDisruptionBudget>>,
    pub namespaces: BTreeMap<String, Arc<Namespace>>,
    pub priority_classes: BTreeMap<String, Arc<k8s_openapi::api::scheduling::v1::PriorityClass>>,
    pub leases: BTreeMap<(String, String), Arc<Lease>>,
    /// By `(namespace, name)`: the eviction history's.
    pub config_maps: BTreeMap<(String, String), Arc<k8s_openapi::api::core::v1::ConfigMap>>,
    pub events: BTreeMap<(String, String), Arc<Event>>,
    /// metrics-server's NodeMetrics by node name, as loaded.
    pub node_metrics: BTreeMap<String, Value>,
    /// metrics-server's PodMetrics by `(namespace, name)`, as loaded.
    pub pod_metrics: BTreeMap<(String, String), Value>,
    /// Whether `metrics.k8s.io` is served: from loading metrics on, unless a test says otherwise.
    pub metrics_api: MetricsApi,
    /// VM Operator's objects and release when the fake plays a Supervisor
    /// ([`FakeCluster::supervisor`]); `None`: the group is not served.
    pub vm_operator: Option<VmOperator>,
    /// Pod controllers by `(namespace, kind, name)`, for PDBs' `expectedPods`.
    pub workloads: BTreeMap<(String, String, String), Workload>,
    /// Label ownership of each node (the label part of `managedFields`).
    label_owners: BTreeMap<String, Vec<LabelOwner>>,
    /// Frozen list results by (path kind, revision), for paging.
    list_snapshots: BTreeMap<(String, u64), list::Frozen>,
    /// While set, PDB statuses are left as they are (a stalled disruption controller).
    pub pdb_controller_frozen: bool,
    /// When set, pods given a grace period are removed at once, as if the kubelet had finished.
    pub kubelet_finishes_terminations: bool,
    /// Who sends the requests and what RBAC grants them: by default the chart's ServiceAccount
    /// with exactly the chart's rendered RBAC ([`Rbac::chart`]).
    pub rbac: Rbac,
    /// The chart's admission policy on node updates, when installed.
    pub node_admission: Option<NodeLabelPolicy>,
    faults: Vec<Fault>,
    /// Every request, in arrival order.
    pub requests: Vec<RequestRecord>,
    /// Every Eviction the server decoded, in arrival order: what a real server hands to
    /// admission webhooks and writes to the audit log (its annotations reach neither the pod
    /// nor any stored object).
    pub evictions: Vec<ReceivedEviction>,
}

/// One Eviction as the server received it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReceivedEviction {
    pub namespace: String,
    pub name: String,
    pub dry_run: bool,
    /// `metadata.annotations` of the Eviction.
    pub annotations: BTreeMap<String, String>,
}

/// One request the fake answered (or dropped).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestRecord {
    pub method: String,
    pub path: String,
    pub query: String,
    /// 0 when the connection was dropped.
    pub status: u16,
    /// The `User-Agent` header ("" when absent): the real server names the field manager of a
    /// write without `fieldManager` after it, and audit logs show it.
    pub user_agent: String,
}

/// A fault to inject into matching requests.
#[derive(Clone, Debug)]
pub struct Fault {
    /// Only requests of this method (any when `None`).
    pub method: Option<Method>,
    /// Only requests whose path contains this.
    pub path_contains: String,
    /// Let this many matching requests through first.
    pub skip: usize,
    /// Inject into at most this many (after `skip`); `None` for every one.
    pub times: Option<usize>,
    pub action: FaultAction,
}

/// What a fault does.
#[derive(Clone, Debug)]
pub enum FaultAction {
    /// Answer with this status code and a Failure `Status`; nothing is changed.
    Status {
        code: u16,
        reason: String,
        message: String,
        retry_after_seconds: u32,
    },
    /// Wait this long, then handle the request normally (if the client is still there).
    Delay(Duration),
    /// Close the connection without a valid response.
    Drop,
    /// Answer 200 and the first bytes of a list, then close the connection: the client's read of
    /// the body fails after the headers said all was well.
    BreakOff,
    /// Expire every list snapshot before handling the request (its continue token gets 410).
    ExpireListSnapshots,
    /// Wait at the gate until the test opens it, then handle the request normally.
    Hold(Gate),
    /// Wait at the gate until the test opens it, then act as the inner fault: a failure that
    /// comes only when the test says so.
    HoldThen(Gate, Box<FaultAction>),
    /// Answer with this status code and a body that is not a `Status`, as a proxy or load
    /// balancer in front of the API server does (an HTML error page, or nothing at all).
    Body {
        code: u16,
        content_type: &'static str,
        body: String,
    },
}

/// Holds requests until opened, and tells the test how many arrived: a barrier between a test
/// and the binary it drives, so no test depends on a delay winning a race.
#[derive(Clone)]
pub struct Gate(Arc<GateState>);

struct GateState {
    /// Requests that arrived, and requests done with: answered, or abandoned by their client
    /// (the server then drops the handler, held or not).
    counts: Mutex<GateCounts>,
    changed: std::sync::Condvar,
    open: tokio::sync::watch::Sender<bool>,
}

#[derive(Default)]
struct GateCounts {
    arrived: usize,
    departed: usize,
}

/// A request that arrived at a gate: counted as departed when dropped, at the end of its
/// handler or when the server abandons it.
pub(crate) struct Passage(Gate);

impl Drop for Passage {
    fn drop(&mut self) {
        self.0.update(|counts| counts.departed += 1);
    }
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate").finish_non_exhaustive()
    }
}

impl Default for Gate {
    fn default() -> Gate {
        Gate(Arc::new(GateState {
            counts: Mutex::new(GateCounts::default()),
            changed: std::sync::Condvar::new(),
            open: tokio::sync::watch::channel(false).0,
        }))
    }
}

impl Gate {
    pub fn new() -> Gate {
        Gate::default()
    }

    /// How many requests arrived at the gate so far.
    pub fn arrived(&self) -> usize {
        self.0
            .counts
            .lock()
            .expect("the gate is never poisoned")
            .arrived
    }

    /// Blocks until `count` requests arrived at the gate; panics after `limit`.
    pub fn wait_for_arrivals(&self, count: usize, limit: Duration) {
        self.wait_until("arrived at", limit, |counts| counts.arrived >= count);
    }

    /// Blocks until `count` requests that arrived are done with (answered, or abandoned by
    /// their client); panics after `limit`.
    pub fn wait_for_departures(&self, count: usize, limit: Duration) {
        self.wait_until("left", limit, |counts| counts.departed >= count);
    }

    fn wait_until(&self, what: &str, limit: Duration, done: impl Fn(&GateCounts) -> bool) {
        let counts = self.0.counts.lock().expect("the gate is never poisoned");
        let (counts, timeout) = self
            .0
            .changed
            .wait_timeout_while(counts, limit, |counts| !done(counts))
            .expect("the gate is never poisoned");
        assert!(
            !timeout.timed_out(),
            "within {limit:?}, {} requests arrived at the gate and {} left; not enough {what} it",
            counts.arrived,
            counts.departed
        );
    }

    /// Lets every held request, and every later one, through.
    pub fn open(&self) {
        self.0.open.send_replace(true);
    }

    fn update(&self, change: impl FnOnce(&mut GateCounts)) {
        change(&mut self.0.counts.lock().expect("the gate is never poisoned"));
        self.0.changed.notify_all();
    }

    /// Waits until the gate is open. Keep the passage until the request is answered.
    async fn pass(&self) -> Passage {
        let mut open = self.0.open.subscribe();
        self.update(|counts| counts.arrived += 1);
        let passage = Passage(self.clone());
        let _ = open.wait_for(|open| *open).await;
        passage
    }
}

impl Fault {
    /// Every matching request fails with `code`.
    pub fn status(method: Option<Method>, path_contains: &str, code: u16) -> Fault {
        let reason = match code {
            409 => "Conflict",
            429 => "TooManyRequests",
            500 => "InternalError",
            503 => "ServiceUnavailable",
            504 => "Timeout",
            _ => "",
        };
        Fault {
            method,
            path_contains: path_contains.to_string(),
            skip: 0,
            times: None,
            action: FaultAction::Status {
                code,
                reason: reason.to_string(),
                message: format!("injected fault: HTTP {code}"),
                retry_after_seconds: 0,
            },
        }
    }

    pub fn action(method: Option<Method>, path_contains: &str, action: FaultAction) -> Fault {
        Fault {
            method,
            path_contains: path_contains.to_string(),
            skip: 0,
            times: None,
            action,
        }
    }

    /// Only after `skip` matching requests went through.
    pub fn after(mut self, skip: usize) -> Fault {
        self.skip = skip;
        self
    }

    /// Only `times` matching requests.
    pub fn times(mut self, times: usize) -> Fault {
        self.times = Some(times);
        self
    }

    fn matches(&self, method: &Method, path: &str) -> bool {
        self.method.as_ref().is_none_or(|m| m == method) && path.contains(&self.path_contains)
    }
}

impl FakeCluster {
    /// A cluster holding `objects` as if created in that order.
    pub fn new(objects: KubeObjects) -> FakeCluster {
        let mut cluster = FakeCluster::default();
        cluster.load(objects);
        cluster
    }

    /// The next `resourceVersion`.
    fn bump(&mut self) -> String {
        self.revision += 1;
        self.revision.to_string()
    }

    fn new_uid(&mut self) -> String {
        self.uids += 1;
        format!("fa4e0000-0000-4000-8000-{:012x}", self.uids)
    }

    /// Adds a fault; faults are checked in the order added, the first match applies.
    pub fn inject(&mut self, fault: Fault) {
        self.faults.push(fault);
    }

    pub fn clear_faults(&mut self) {
        self.faults.clear();
    }

    /// Expires every list snapshot: continuing a paged list now gets 410.
    pub fn expire_list_snapshots(&mut self) {
        self.list_snapshots.clear();
    }

    /// Requests so far whose method is `method` and whose path contains `path_contains`.
    pub fn count(&self, method: &str, path_contains: &str) -> usize {
        self.requests
            .iter()
            .filter(|r| r.method == method && r.path.contains(path_contains))
            .count()
    }

    /// A node's label ownership.
    pub fn label_owners(&self, node: &str) -> Vec<LabelOwner> {
        self.label_owners.get(node).cloned().unwrap_or_default()
    }

    /// Removes every pod that is terminating, as the kubelet does once containers stopped.
    pub fn finish_terminations(&mut self) {
        let terminating: Vec<(String, String)> = self
            .pods
            .iter()
            .filter(|(_, pod)| pod.metadata.deletion_timestamp.is_some())
            .map(|(key, _)| key.clone())
            .collect();
        for key in terminating {
            if let Some(pod) = self.pods.remove(&key) {
                self.bump();
                self.pod_changed(&pod);
            }
        }
    }

    fn fault_for(&mut self, method: &Method, path: &str) -> Option<FaultAction> {
        for fault in &mut self.faults {
            if !fault.matches(method, path) {
                continue;
            }
            if fault.skip > 0 {
                fault.skip -= 1;
                continue;
            }
            match &mut fault.times {
                Some(0) => continue,
                Some(times) => *times -= 1,
                None => {}
            }
            return Some(fault.action.clone());
        }
        None
    }
}

fn router(state: Arc<Mutex<FakeCluster>>) -> axum::Router {
    // Bodies beyond the API server's own limit (3 MiB) reach the handlers, which refuse them
    // as it does (axum's default would answer 2 MB and more with its own words).
    axum::Router::new()
        .fallback(handle)
        .layer(axum::extract::DefaultBodyLimit::max(
            4 * config_maps::MAX_BODY_BYTES,
        ))
        .with_state(state)
}

/// The fake inside the caller's runtime: a kube client whose requests go straight to the router
/// (no socket, no timeouts of its own), and the state it serves.
pub fn in_process(cluster: FakeCluster) -> (kube::Client, Arc<Mutex<FakeCluster>>) {
    let state = Arc::new(Mutex::new(cluster));
    let client = kube::Client::new(router(state.clone()), "default");
    (client, state)
}

/// A running fake API server. Stops when dropped.
pub struct FakeApiServer {
    /// `http://127.0.0.1:PORT` (`https://` when started with [`FakeApiServer::start_tls`]).
    pub url: String,
    state: Arc<Mutex<FakeCluster>>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeApiServer {
    /// Serves `cluster` on a free port of 127.0.0.1, from a thread of its own (so tests need no
    /// runtime of their own).
    pub fn start(cluster: FakeCluster) -> FakeApiServer {
        FakeApiServer::start_on(cluster, "127.0.0.1:0".parse().expect("a socket address"))
    }

    pub fn start_on(cluster: FakeCluster, address: SocketAddr) -> FakeApiServer {
        FakeApiServer::serve(cluster, address, None)
    }

    /// Serves `cluster` over HTTPS with `certificates` (a certificate for 127.0.0.1) on a free
    /// port, as a Supervisor is reached; `url` is `https://127.0.0.1:PORT`.
    pub fn start_tls(cluster: FakeCluster, certificates: &Certificates) -> FakeApiServer {
        let address = "127.0.0.1:0".parse().expect("a socket address");
        FakeApiServer::serve(cluster, address, Some(certificates))
    }

    fn serve(
        cluster: FakeCluster,
        address: SocketAddr,
        certificates: Option<&Certificates>,
    ) -> FakeApiServer {
        let state = Arc::new(Mutex::new(cluster));
        let (ready_sender, ready) = std::sync::mpsc::channel();
        let (shutdown, shutdown_signal) = tokio::sync::oneshot::channel::<()>();
        let shared = state.clone();
        let tls = certificates.cloned();
        let scheme = if tls.is_some() { "https" } else { "http" };
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a runtime for the fake API server");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind(address)
                    .await
                    .expect("bind the fake API server");
                let bound = listener.local_addr().expect("a bound address");
                ready_sender.send(bound).expect("the starter waits");
                let app = router(shared);
                let stopped = async {
                    let _ = shutdown_signal.await;
                };
                let served = match tls {
                    Some(certificates) => {
                        axum::serve(tls::TlsListener::new(listener, &certificates), app)
                            .with_graceful_shutdown(stopped)
                            .await
                    }
                    None => {
                        axum::serve(listener, app)
                            .with_graceful_shutdown(stopped)
                            .await
                    }
                };
                served.expect("the fake API server serves");
            });
        });
        let bound = ready
            .recv_timeout(Duration::from_secs(10))
            .expect("the fake API server starts");
        FakeApiServer {
            url: format!("{scheme}://{bound}"),
            state,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    /// The state, locked. Keep the guard short: requests wait for it.
    pub fn cluster(&self) -> MutexGuard<'_, FakeCluster> {
        self.state
            .lock()
            .expect("the fake's state is never poisoned")
    }

    /// A kubeconfig that points kubectl or kube at this server (no credentials).
    pub fn kubeconfig(&self) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {}\n\
             users:\n- name: fake\n  user: {{}}\ncontexts:\n- name: fake\n  context:\n    \
             cluster: fake\n    user: fake\n    namespace: default\ncurrent-context: fake\n",
            self.url
        )
    }

    /// Writes [`FakeApiServer::kubeconfig`] to `path`.
    pub fn write_kubeconfig(&self, path: &Path) {
        std::fs::write(path, self.kubeconfig()).expect("write the kubeconfig");
    }

    /// A kube client for this server, without kube's retry layer (as the tool builds it).
    pub fn client(&self) -> kube::Client {
        let mut config = kube::Config::new(self.url.parse().expect("a URI"));
        config.default_retry = false;
        config.read_timeout = Some(Duration::from_secs(10));
        kube::Client::try_from(config).expect("a client")
    }
}

impl Drop for FakeApiServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A parsed request, as the handlers see it.
pub(crate) struct Request {
    pub method: Method,
    pub segments: Vec<String>,
    pub query: BTreeMap<String, String>,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Request {
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query.get(name).map(String::as_str)
    }
}

/// The one handler: faults, routing, logging.
async fn handle(
    State(state): State<Arc<Mutex<FakeCluster>>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    let raw_query = uri.query().unwrap_or_default().to_string();
    let user_agent = headers
        .get(axum::http::header::USER_AGENT)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let fault = state
        .lock()
        .expect("the fake's state is never poisoned")
        .fault_for(&method, &path);
    let record = |status: u16| {
        state
            .lock()
            .expect("the fake's state is never poisoned")
            .requests
            .push(RequestRecord {
                method: method.to_string(),
                path: path.clone(),
                query: raw_query.clone(),
                status,
                user_agent: user_agent.clone(),
            });
    };
    // Held until the request is answered (or the handler dropped), for `Gate::wait_for_departures`.
    let mut passage = None;
    let fault = match fault {
        Some(FaultAction::HoldThen(gate, then)) => {
            passage = Some(gate.pass().await);
            Some(*then)
        }
        other => other,
    };
    match fault {
        Some(FaultAction::Status {
            code,
            reason,
            message,
            retry_after_seconds,
        }) => {
            record(code);
            let details = (retry_after_seconds > 0)
                .then(|| json!({"retryAfterSeconds": retry_after_seconds}));
            return status(code, &reason, &message, details);
        }
        Some(FaultAction::Body {
            code,
            content_type,
            body,
        }) => {
            record(code);
            return Response::builder()
                .status(code)
                .header("content-type", content_type)
                .body(Body::from(body))
                .expect("a response");
        }
        Some(FaultAction::Delay(delay)) => tokio::time::sleep(delay).await,
        Some(FaultAction::Hold(gate)) => passage = Some(gate.pass().await),
        // A hold nested in another waits at its own gate after the first.
        Some(FaultAction::HoldThen(gate, _)) => passage = Some(gate.pass().await),
        Some(FaultAction::Drop) => {
            record(0);
            return dropped();
        }
        Some(FaultAction::BreakOff) => {
            record(0);
            return broken_off();
        }
        Some(FaultAction::ExpireListSnapshots) => state
            .lock()
            .expect("the fake's state is never poisoned")
            .expire_list_snapshots(),
        None => {}
    }
    let request = Request {
        method: method.clone(),
        segments: path
            .split('/')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
        query: parse_query(&raw_query),
        headers,
        body,
    };
    let response = {
        let mut cluster = state.lock().expect("the fake's state is never poisoned");
        // Authorization comes before any handler, as in the real server.
        match authorization::refusal(&cluster.rbac, &request) {
            Some(refusal) => refusal,
            None => route(&mut cluster, &request),
        }
    };
    record(response.status().as_u16());
    drop(passage);
    response
}

/// Tolerates an empty query, a leading `&` and percent-encoding (kube sends `?&a=b`).
fn parse_query(query: &str) -> BTreeMap<String, String> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(key), percent_decode(value))
        })
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(byte) => {
                        out.push(byte);
                        i += 3;
                        continue;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Dispatch by path. Only the endpoints the tool calls (and tests inspect) exist.
fn route(cluster: &mut FakeCluster, request: &Request) -> Response {
    let segments: Vec<&str> = request.segments.iter().map(String::as_str).collect();
    let method = &request.method;
    match (method, segments.as_slice()) {
        (&Method::GET, ["api"]) => discovery::core_versions(request),
        (&Method::GET, ["api", "v1"]) => discovery::core_resources(),
        (&Method::GET, ["apis"]) => discovery::api_groups(cluster, request),
        (&Method::GET, ["apis", group]) => discovery::group(cluster, group, None),
        (&Method::GET, ["apis", group, version]) => discovery::group(cluster, group, Some(version)),
        (_, ["apis", vm_operator::GROUP, version, rest @ ..]) => {
            vm_operator::serve(cluster, request, version, rest)
        }
        (&Method::GET, ["api", "v1", "nodes"]) => {
            list::serve(cluster, request, list::Kind::Nodes, None)
        }
        (&Method::GET, ["api", "v1", "pods"]) => {
            list::serve(cluster, request, list::Kind::Pods, None)
        }
        (&Method::GET, ["api", "v1", "namespaces"]) => {
            list::serve(cluster, request, list::Kind::Namespaces, None)
        }
        (&Method::GET, ["apis", "scheduling.k8s.io", "v1", "priorityclasses"]) => {
            list::serve(cluster, request, list::Kind::PriorityClasses, None)
        }
        (&Method::GET, ["api", "v1", "namespaces", ns, "pods"]) => {
            list::serve(cluster, request, list::Kind::Pods, Some(ns))
        }
        (&Method::GET, ["apis", "policy", "v1", "poddisruptionbudgets"]) => {
            list::serve(cluster, request, list::Kind::Pdbs, None)
        }
        (
            &Method::GET,
            [
                "apis",
                "policy",
                "v1",
                "namespaces",
                ns,
                "poddisruptionbudgets",
            ],
        ) => list::serve(cluster, request, list::Kind::Pdbs, Some(ns)),
        (
            &Method::GET,
            [
                "apis",
                "coordination.k8s.io",
                "v1",
                "namespaces",
                ns,
                "leases",
            ],
        ) => list::serve(cluster, request, list::Kind::Leases, Some(ns)),
        (&Method::GET, ["apis", "events.k8s.io", "v1", "events"]) => {
            list::serve(cluster, request, list::Kind::Events, None)
        }
        (&Method::GET, ["apis", "events.k8s.io", "v1", "namespaces", ns, "events"]) => {
            list::serve(cluster, request, list::Kind::Events, Some(ns))
        }
        (&Method::GET, ["apis", "metrics.k8s.io", "v1beta1", "nodes"]) => {
            metrics::serve(cluster, metrics::Kind::Nodes, None)
        }
        (&Method::GET, ["apis", "metrics.k8s.io", "v1beta1", "pods"]) => {
            metrics::serve(cluster, metrics::Kind::Pods, None)
        }
        (
            &Method::GET,
            [
                "apis",
                "metrics.k8s.io",
                "v1beta1",
                "namespaces",
                ns,
                "pods",
            ],
        ) => metrics::serve(cluster, metrics::Kind::Pods, Some(ns)),
        (&Method::GET, ["api", "v1", "nodes", name]) => match cluster.nodes.get(*name) {
            Some(node) => object(StatusCode::OK, node.as_ref()),
            None => not_found("nodes", "", name),
        },
        (&Method::GET, ["api", "v1", "namespaces", ns, "pods", name]) => {
            match cluster.pods.get(&(ns.to_string(), name.to_string())) {
                Some(pod) => object(StatusCode::OK, pod.as_ref()),
                None => not_found("pods", "", name),
            }
        }
        (&Method::PATCH, ["api", "v1", "nodes", name]) => apply::patch_node(cluster, request, name),
        (
            &Method::POST,
            [
                "apis",
                "authorization.k8s.io",
                "v1",
                "selfsubjectaccessreviews",
            ],
        ) => authorization::review(&cluster.rbac, request),
        (&Method::POST, ["api", "v1", "namespaces", ns, "pods", name, "eviction"]) => {
            eviction::evict(cluster, request, ns, name)
        }
        (&Method::POST, ["apis", "events.k8s.io", "v1", "namespaces", ns, "events"]) => {
            leases_events::create_event(cluster, request, ns)
        }
        (
            method,
            [
                "apis",
                "coordination.k8s.io",
                "v1",
                "namespaces",
                ns,
                "leases",
                rest @ ..,
            ],
        ) => leases_events::lease(cluster, request, method, ns, rest.first().copied()),
        (method, ["api", "v1", "namespaces", ns, "configmaps", rest @ ..]) => {
            config_maps::config_map(cluster, request, method, ns, rest.first().copied())
        }
        _ => status(
            404,
            "NotFound",
            &format!(
                "the fake API server does not serve {} {}",
                request.method,
                request.segments.join("/")
            ),
            None,
        ),
    }
}

/// A plain-text answer as Go's `http.Error` writes it (the body ends with a newline): what
/// kube-apiserver sends where no handler of its own answers.
pub(crate) fn plain_text(code: u16, text: &str) -> Response {
    Response::builder()
        .status(code)
        .header("content-type", "text/plain; charset=utf-8")
        .header("x-content-type-options", "nosniff")
        .body(Body::from(format!("{text}\n")))
        .expect("a response")
}

/// A Failure `Status` with the HTTP status equal to its code; `Retry-After` when the details
/// ask for a wait.
pub(crate) fn status(code: u16, reason: &str, message: &str, details: Option<Value>) -> Response {
    let mut body = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "code": code,
    });
    if !reason.is_empty() {
        body["reason"] = json!(reason);
    }
    let retry_after = details
        .as_ref()
        .and_then(|d| d.get("retryAfterSeconds"))
        .and_then(Value::as_u64)
        .filter(|seconds| *seconds > 0);
    if let Some(details) = details {
        body["details"] = details;
    }
    let mut response = (
        StatusCode::from_u16(code).expect("a valid status code"),
        [("content-type", "application/json")],
        body.to_string(),
    )
        .into_response();
    if let Some(seconds) = retry_after {
        response.headers_mut().insert(
            "retry-after",
            seconds.to_string().parse().expect("a header value"),
        );
    }
    response
}

/// A Success `Status` (evictions and deletes answer with one).
pub(crate) fn success(code: u16) -> Response {
    (
        StatusCode::from_u16(code).expect("a valid status code"),
        [("content-type", "application/json")],
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code})
            .to_string(),
    )
        .into_response()
}

/// `404 NotFound` for `resource` (plural, with `group` when not core).
pub(crate) fn not_found(resource: &str, group: &str, name: &str) -> Response {
    let qualified = if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    };
    let mut details = json!({"name": name, "kind": resource});
    if !group.is_empty() {
        details["group"] = json!(group);
    }
    status(
        404,
        "NotFound",
        &format!("{qualified} \"{name}\" not found"),
        Some(details),
    )
}

/// An object as JSON.
pub(crate) fn object<T: serde::Serialize>(code: StatusCode, value: &T) -> Response {
    (
        code,
        [("content-type", "application/json")],
        serde_json::to_string(value).expect("objects serialise"),
    )
        .into_response()
}

/// A response whose body fails: the client sees the connection break mid-response.
fn dropped() -> Response {
    let failing = futures_util::stream::once(async {
        Err::<Bytes, std::io::Error>(std::io::Error::other("injected fault: connection dropped"))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/json")
        .body(Body::from_stream(failing))
        .expect("a response")
}

/// A 200 answer whose body stops after its first bytes: the client has read the headers and
/// part of the body when the connection breaks.
fn broken_off() -> Response {
    use futures_util::StreamExt;
    let start = futures_util::stream::once(async {
        Ok::<Bytes, std::io::Error>(Bytes::from_static(br#"{"kind":"List","items":["#))
    });
    let failing = futures_util::stream::once(async {
        // Pending once, so the server sends what it has before the body fails.
        tokio::task::yield_now().await;
        Err(std::io::Error::other(
            "injected fault: connection broke off",
        ))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/json")
        .body(Body::from_stream(start.chain(failing)))
        .expect("a response")
}

/// The current time as the API's `Time`.
pub(crate) fn now() -> k8s_openapi::jiff::Timestamp {
    k8s_openapi::jiff::Timestamp::now()
}
