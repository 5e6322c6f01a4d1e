//! End to end: the `vsphere-descheduler` binary on a VKS guest cluster whose ESXi hosts come
//! from its Supervisor (source `supervisor`: VM Operator's VirtualMachines read over https with
//! a ServiceAccount token, as the chart mounts it) or from a node label something else keeps
//! (source `node-label`). Two fake API servers play the guest cluster and the Supervisor
//! (`GuestClusterStory`: workers 1 and 2 on one host); each test checks the state and requests
//! the fakes saw, not only the report.

mod support;

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};
use support::certificates::{Certificates, private_ca_and_server_certificate};
use support::fake_apiserver::{
    FakeApiServer, FakeCluster, Fault, FaultAction, KubeObjects, Rbac, RequestRecord, Workload,
};
use support::vm_operator::{GROUP, GuestClusterStory, GuestVm, Release, Role};

const HOST_LABEL: &str = "vsphere-descheduler.io/host";
const CAPI_HOST_LABEL: &str = "node.cluster.x-k8s.io/esxi-host";
/// A guest node of the node-label story without Cluster API's host label, or of the
/// Supervisor story without a VirtualMachine in the namespace read.
const UNLABELLED_NODE: &str = "tkc-1-control-plane-x9k4t";
const SERVICE_ACCOUNT: &str = GuestClusterStory::SERVICE_ACCOUNT;
const APP_NAMESPACE: &str = "shop";
const DEPLOYMENT_UID: &str = "0f1e2d3c-4b5a-4697-8877-665544332211";
const REPLICA_SET: &str = "web-6c9f8d7b5d";
const REPLICA_SET_UID: &str = "7b6a5c4d-3e2f-4101-9a8b-c7d6e5f4a3b2";

/// The guest cluster's policy with hosts from its Supervisor: the namespace comes from the
/// credentials' `namespace` file, as the chart mounts it.
const SUPERVISOR_POLICY: &str = "\
apiVersion: vsphere-descheduler.io/v1alpha1
kind: DeschedulerPolicy
clusterName: tkc-1
vsphere:
  source: supervisor
profiles:
- name: host-availability
  plugins:
    deschedule:
      enabled:
      - RemovePodsViolatingInterPodAntiAffinity
";

/// The same without a source: `--topology-source node-label` chooses it.
const NODE_LABEL_POLICY: &str = "\
apiVersion: vsphere-descheduler.io/v1alpha1
kind: DeschedulerPolicy
clusterName: tkc-1
profiles:
- name: host-availability
  plugins:
    deschedule:
      enabled:
      - RemovePodsViolatingInterPodAntiAffinity
";

/// Replica `index` of Deployment `web`, Ready on `node`, which no other replica may share a
/// value of `topology_key` with.
fn web_pod(index: usize, node: &str, topology_key: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": format!("{REPLICA_SET}-{index}"),
            "namespace": APP_NAMESPACE,
            "labels": {"app": "web", "pod-template-hash": "6c9f8d7b5d"},
            "ownerReferences": [{
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": REPLICA_SET,
                "uid": REPLICA_SET_UID,
                "controller": true,
                "blockOwnerDeletion": true,
            }],
        },
        "spec": {
            "nodeName": node,
            "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                "labelSelector": {"matchLabels": {"app": "web"}},
                "topologyKey": topology_key,
            }]}},
            "containers": [{
                "name": "web",
                "image": "registry.example/web:1.4.2",
                "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}},
            }],
            "terminationGracePeriodSeconds": 30,
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "PodScheduled", "status": "True"},
            ],
        },
    }))
    .expect("a pod")
}

/// The guest cluster's API server: the story's Nodes (with `node_labels` added to each), and one
/// `web` replica per worker, anti-affine on `topology_key`.
fn guest_objects(
    story: &GuestClusterStory,
    topology_key: &str,
    node_labels: impl Fn(&GuestVm) -> Vec<(String, String)>,
) -> KubeObjects {
    let nodes = story
        .vms
        .iter()
        .map(|vm| {
            let mut node = vm.node();
            let labels = node.metadata.labels.get_or_insert_with(Default::default);
            labels.extend(node_labels(vm));
            node
        })
        .collect();
    let pods = story
        .workers()
        .enumerate()
        .map(|(index, vm)| web_pod(index + 1, &vm.name, topology_key))
        .collect::<Vec<_>>();
    let workloads = vec![
        Workload::new(
            "Deployment",
            APP_NAMESPACE,
            "web",
            DEPLOYMENT_UID,
            pods.len() as i32,
            None,
        ),
        Workload::new(
            "ReplicaSet",
            APP_NAMESPACE,
            REPLICA_SET,
            REPLICA_SET_UID,
            pods.len() as i32,
            Some(("web", DEPLOYMENT_UID)),
        ),
    ];
    KubeObjects {
        nodes,
        pods,
        workloads,
        ..KubeObjects::default()
    }
}

/// The binary's exit code, its report (JSON when asked) and its output.
struct Outcome {
    code: i32,
    report: Value,
    stdout: String,
    stderr: String,
}

impl Outcome {
    fn of(output: Output) -> Outcome {
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(
            !stdout.contains(TOKEN) && !stderr.contains(TOKEN),
            "the Supervisor token leaked into the output"
        );
        Outcome {
            code: output.status.code().expect("exited, not killed"),
            report: serde_json::from_str(&stdout).unwrap_or(Value::Null),
            stdout,
            stderr,
        }
    }

    /// `namespace/pod` of each eviction of the report, with its result, sorted.
    fn evictions(&self) -> Vec<(String, String)> {
        let mut evictions: Vec<(String, String)> = self.report["evictions"]
            .as_array()
            .unwrap_or_else(|| panic!("evictions in {}", self.stdout))
            .iter()
            .map(|e| {
                (
                    format!(
                        "{}/{}",
                        e["namespace"].as_str().unwrap_or_default(),
                        e["pod"].as_str().unwrap_or_default()
                    ),
                    e["result"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect();
        evictions.sort();
        evictions
    }

    fn evicted_pods(&self) -> Vec<String> {
        self.evictions().into_iter().map(|(pod, _)| pod).collect()
    }

    fn strings(&self, key: &str) -> Vec<String> {
        self.report[key]
            .as_array()
            .unwrap_or_else(|| panic!("{key} in {}", self.stdout))
            .iter()
            .map(|e| e.as_str().unwrap_or_default().to_string())
            .collect()
    }

    fn warnings(&self) -> Vec<String> {
        self.strings("warnings")
    }

    fn errors(&self) -> Vec<String> {
        self.strings("errors")
    }

    fn context(&self) -> String {
        format!("exit {}\n{}\n{}", self.code, self.stdout, self.stderr)
    }
}

/// The token the credentials hold: a made-up value the output must never show.
const TOKEN: &str = "eyJhbGciOiJSUzI1NiJ9.planted-supervisor-token.c2lnbmF0dXJl";

/// The guest cluster, its Supervisor (over https), a credentials directory like the chart's
/// mounted Secret, and the policy.
struct Lab {
    story: GuestClusterStory,
    guest: FakeApiServer,
    supervisor: FakeApiServer,
    certificates: Certificates,
    dir: tempfile::TempDir,
    policy: PathBuf,
}

impl Lab {
    /// The story's guest cluster with pods anti-affine on the tool's host label, and its
    /// Supervisor of `release` answering as the recipe's ServiceAccount (exactly its Role).
    fn new(release: Release) -> Lab {
        let story = GuestClusterStory::new();
        let supervisor = story.supervisor(release);
        Lab::with(story, supervisor, |_| Vec::new())
    }

    fn with(
        story: GuestClusterStory,
        supervisor: FakeCluster,
        node_labels: impl Fn(&GuestVm) -> Vec<(String, String)>,
    ) -> Lab {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let tls = dir.path().join("tls");
        std::fs::create_dir(&tls).expect("a directory for the certificates");
        let certificates = private_ca_and_server_certificate(&tls);
        let guest = FakeApiServer::start(FakeCluster::new(guest_objects(
            &story,
            HOST_LABEL,
            node_labels,
        )));
        guest.write_kubeconfig(&dir.path().join("kubeconfig"));
        let supervisor = FakeApiServer::start_tls(supervisor, &certificates);
        let policy = dir.path().join("policy.yaml");
        std::fs::write(&policy, SUPERVISOR_POLICY).expect("write the policy");
        let lab = Lab {
            story,
            guest,
            supervisor,
            certificates,
            dir,
            policy,
        };
        lab.write_credentials(&lab.supervisor.url);
        lab
    }

    /// The credentials directory as the chart mounts the guest Secret: `server`, `ca.crt`,
    /// `token`, `namespace`.
    fn credentials(&self) -> PathBuf {
        self.dir.path().join("supervisor-credentials")
    }

    fn write_credentials(&self, server: &str) {
        let dir = self.credentials();
        std::fs::create_dir_all(&dir).expect("the credentials directory");
        std::fs::write(dir.join("server"), format!("{server}\n")).expect("write server");
        std::fs::copy(&self.certificates.ca, dir.join("ca.crt")).expect("write ca.crt");
        std::fs::write(dir.join("token"), TOKEN).expect("write token");
        std::fs::write(dir.join("namespace"), GuestClusterStory::NAMESPACE)
            .expect("write namespace");
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_vsphere-descheduler"));
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .env("KUBECONFIG", self.dir.path().join("kubeconfig"))
            .env("RUST_LOG", "info");
        command
    }

    /// `--output FORMAT SUBCOMMAND --policy P --supervisor-credentials-dir D` plus `args`.
    fn supervised(&self, format: &str, subcommand: &str, args: &[&str]) -> Outcome {
        let policy = self.policy.display().to_string();
        let credentials = self.credentials().display().to_string();
        let mut all = vec![
            "--output",
            format,
            subcommand,
            "--policy",
            policy.as_str(),
            "--supervisor-credentials-dir",
            credentials.as_str(),
        ];
        all.extend_from_slice(args);
        Outcome::of(self.command(&all).output().expect("the binary runs"))
    }

    fn run(&self, args: &[&str]) -> Outcome {
        self.supervised("json", "run", args)
    }

    fn check(&self) -> Outcome {
        self.supervised("json", "check", &[])
    }

    fn node_label(&self, node: &str, key: &str) -> Option<String> {
        self.guest.cluster().nodes[node]
            .metadata
            .labels
            .as_ref()
            .and_then(|labels| labels.get(key).cloned())
    }

    fn guest_pod(&self, name: &str) -> Option<Arc<Pod>> {
        self.guest
            .cluster()
            .pods
            .get(&(APP_NAMESPACE.to_string(), name.to_string()))
            .cloned()
    }

    /// `shop/<pod>` of the two replicas on the crowded host.
    fn crowded_pods(&self) -> Vec<String> {
        let crowded = self.crowded_host();
        self.story
            .workers()
            .enumerate()
            .filter(|(_, vm)| vm.host == crowded)
            .map(|(index, _)| format!("{APP_NAMESPACE}/{REPLICA_SET}-{}", index + 1))
            .collect()
    }

    /// The host that holds two workers.
    fn crowded_host(&self) -> String {
        let hosts: Vec<&str> = self.story.workers().map(|vm| vm.host.as_str()).collect();
        hosts
            .iter()
            .find(|host| hosts.iter().filter(|h| h == host).count() == 2)
            .expect("two workers on one host")
            .to_string()
    }

    fn supervisor_requests(&self) -> Vec<RequestRecord> {
        self.supervisor.cluster().requests.clone()
    }

    fn guest_requests(&self) -> Vec<RequestRecord> {
        self.guest.cluster().requests.clone()
    }
}

/// The recipe's Supervisor grant: the Role reading VM Operator's objects in the namespace.
fn reader() -> Rbac {
    Rbac::vm_operator_reader(GuestClusterStory::NAMESPACE, SERVICE_ACCOUNT)
}

/// Whether a Supervisor request is one the tool may make: discovery, or a get or list of
/// VirtualMachines or VirtualMachineSetResourcePolicies in the guest's namespace.
fn is_discovery_or_a_read_of_vm_operator(request: &RequestRecord) -> bool {
    let segments: Vec<&str> = request.path.trim_matches('/').split('/').collect();
    let discovery = matches!(
        segments.as_slice(),
        ["api"] | ["api", _] | ["apis"] | ["apis", GROUP] | ["apis", GROUP, _]
    );
    let read = match segments.as_slice() {
        [
            "apis",
            GROUP,
            _,
            "namespaces",
            namespace,
            resource,
            rest @ ..,
        ] => {
            *namespace == GuestClusterStory::NAMESPACE
                && ["virtualmachines", "virtualmachinesetresourcepolicies"].contains(resource)
                && rest.len() <= 1
        }
        _ => false,
    };
    request.method == "GET" && (discovery || read)
}

#[test]
fn a_run_labels_each_node_with_its_vm_s_host_and_evicts_from_the_crowded_host() {
    let lab = Lab::new(Release::V9_0_1);
    let outcome = lab.run(&[]);
    assert_eq!(outcome.code, 0, "{}", outcome.context());

    for vm in &lab.story.vms {
        assert_eq!(
            lab.node_label(&vm.name, HOST_LABEL).as_deref(),
            Some(vm.host.as_str()),
            "{}: labelled with its VM's host",
            vm.name
        );
    }
    let evicted = outcome.evicted_pods();
    let [pod] = evicted.as_slice() else {
        panic!("one eviction: {}", outcome.context());
    };
    assert!(lab.crowded_pods().contains(pod), "{pod} {}", outcome.stdout);
    assert_eq!(outcome.evictions()[0].1, "evicted", "{}", outcome.stdout);
    let name = pod.trim_start_matches("shop/");
    let gone_or_terminating = lab
        .guest_pod(name)
        .is_none_or(|pod| pod.metadata.deletion_timestamp.is_some());
    assert!(gone_or_terminating, "{pod} is evicted in the guest cluster");

    // The plan wants a DRS rule for web; with no vCenter account it is planned, not written,
    // and a warning names it.
    let rules = outcome.report["drsRules"].as_array().expect("drsRules");
    let [rule] = rules.as_slice() else {
        panic!("one DRS rule: {}", outcome.stdout);
    };
    assert_eq!(rule["result"], "planned", "{rule}");
    let rule_name = rule["name"].as_str().expect("a rule name");
    assert!(
        outcome.warnings().iter().any(|w| {
            w.starts_with("source supervisor: no vCenter account") && w.contains(rule_name)
        }),
        "{}",
        outcome.stdout
    );
    let target = &outcome.report["target"]["supervisor"];
    assert_eq!(
        target["server"].as_str().map(|s| s.trim_end_matches('/')),
        Some(lab.supervisor.url.as_str()),
        "{}",
        outcome.stdout
    );
    assert_eq!(target["namespace"], GuestClusterStory::NAMESPACE);
    assert!(outcome.report["target"].get("vCenter").is_none());

    let requests = lab.supervisor_requests();
    assert!(!requests.is_empty());
    for request in &requests {
        assert!(
            is_discovery_or_a_read_of_vm_operator(request),
            "an unexpected request to the Supervisor: {request:?}"
        );
        assert!(request.status < 400, "refused: {request:?}");
    }
    assert!(
        requests
            .iter()
            .any(|r| r.path.ends_with("/namespaces/team-a/virtualmachines")),
        "{requests:?}"
    );
}

#[test]
fn a_dry_run_reports_the_exposure_in_json_and_renders_html_and_changes_nothing() {
    let lab = Lab::new(Release::V8_0_3);
    let before = serde_json::to_value(lab.guest.cluster().nodes.clone()).expect("nodes");
    let outcome = lab.run(&["--dry-run"]);
    assert_eq!(outcome.code, 0, "{}", outcome.context());
    let evicted = outcome.evicted_pods();
    assert_eq!(evicted.len(), 1, "{}", outcome.stdout);
    assert!(lab.crowded_pods().contains(&evicted[0]));
    // Two of web's three pods on one host: a majority lost with it, before; one a host after.
    let exposure = &outcome.report["exposure"];
    assert_eq!(exposure["before"]["majority"], 1, "{exposure}");
    assert_eq!(exposure["after"]["tolerated"], 1, "{exposure}");
    assert_eq!(
        exposure["workloads"][0]["before"]["worst"].as_str(),
        Some(lab.crowded_host().as_str()),
        "{exposure}"
    );
    assert_eq!(
        serde_json::to_value(lab.guest.cluster().nodes.clone()).expect("nodes"),
        before,
        "a dry run writes no label"
    );
    assert!(
        lab.guest_requests().iter().all(|r| r.method == "GET"
            || r.query.contains("dryRun=All")
            || r.path.contains("leases")),
        "{:?}",
        lab.guest_requests()
    );

    let html = lab.supervised("html", "run", &["--dry-run"]);
    assert_eq!(html.code, 0, "{}", html.context());
    assert!(html.stdout.contains("<html"), "{}", html.stdout);
    assert!(html.stdout.contains(&lab.crowded_host()));
}

#[test]
fn what_if_the_crowded_host_fails_reads_the_supervisor_and_loses_two_web_replicas() {
    let lab = Lab::new(Release::V9_0_1);
    let crowded = lab.crowded_host();
    let outcome = lab.supervised("json", "what-if", &["--host-fails", crowded.as_str()]);
    assert_eq!(outcome.code, 3, "a workload at risk: {}", outcome.context());
    assert_eq!(outcome.report["scenario"]["hostsFail"], json!([crowded]));
    let web = outcome.report["workloads"]
        .as_array()
        .unwrap_or_else(|| panic!("workloads in {}", outcome.context()))
        .iter()
        .find(|w| w["workload"] == "shop/Deployment/web")
        .unwrap_or_else(|| panic!("web in {}", outcome.stdout))
        .clone();
    assert_eq!(
        (web["pods"].as_u64(), web["lost"].as_u64()),
        (Some(3), Some(2)),
        "{web}"
    );
    assert_eq!(web["class"], "majority", "{web}");
    assert!(
        lab.guest_requests().iter().all(|r| r.method == "GET"),
        "what-if changes nothing in the guest cluster"
    );
    assert!(
        lab.supervisor_requests()
            .iter()
            .all(is_discovery_or_a_read_of_vm_operator),
        "{:?}",
        lab.supervisor_requests()
    );
}

/// The check report's items of a section.
fn section<'a>(report: &'a Value, backend: &str) -> Option<&'a Value> {
    report["sections"]
        .as_array()
        .expect("sections")
        .iter()
        .find(|s| s["backend"] == backend)
}

fn backends(report: &Value) -> Vec<String> {
    report["sections"]
        .as_array()
        .expect("sections")
        .iter()
        .map(|s| s["backend"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn check_passes_every_supervisor_item_under_the_recipe_s_role() {
    let lab = Lab::new(Release::V9_0_1);
    let checked = lab.check();
    assert_eq!(checked.code, 0, "{}", checked.context());
    let supervisor = section(&checked.report, "supervisor")
        .unwrap_or_else(|| panic!("a supervisor section: {}", checked.context()));
    let items = supervisor["items"].as_array().expect("items");
    assert_eq!(items.len(), 5, "four grants and the read: {supervisor}");
    for item in items {
        assert_eq!(item["status"], "ok", "{item}");
    }
    assert!(
        supervisor["target"]
            .as_str()
            .is_some_and(|t| t.ends_with("namespace team-a")),
        "{supervisor}"
    );
    assert!(!backends(&checked.report).contains(&"vcenter".to_string()));
}

#[test]
fn check_names_the_missing_list_on_virtualmachines_and_fails() {
    let story = GuestClusterStory::new();
    let mut supervisor = story.supervisor(Release::V9_0_1);
    supervisor.rbac = reader().without(GROUP, "virtualmachines", "list");
    let lab = Lab::with(story, supervisor, |_| Vec::new());
    let checked = lab.check();
    assert_eq!(checked.code, 1, "{}", checked.context());
    let supervisor = section(&checked.report, "supervisor").expect("a supervisor section");
    let missing: Vec<&Value> = supervisor["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|item| item["status"] == "missing")
        .collect();
    let [item] = missing.as_slice() else {
        panic!("one missing item: {supervisor}");
    };
    assert_eq!(item["resource"], "virtualmachines", "{item}");
    assert_eq!(item["verb"], "list", "{item}");
    assert_eq!(item["namespace"], GuestClusterStory::NAMESPACE, "{item}");
    assert!(
        item["fix"].as_str().is_some_and(|f| f.contains("Role")),
        "{item}"
    );
}

#[test]
fn a_server_without_vm_operator_is_not_a_supervisor_and_the_run_fails_with_its_report() {
    let story = GuestClusterStory::new();
    let lab = Lab::with(story.clone(), story.guest(), |_| Vec::new());
    let outcome = lab.run(&[]);
    assert_eq!(outcome.code, 1, "{}", outcome.context());
    assert!(
        outcome
            .errors()
            .iter()
            .any(|e| e.contains("is not a Supervisor")),
        "{}",
        outcome.stdout
    );
    assert!(outcome.evictions().is_empty());
    assert!(lab.node_label(&story.vms[0].name, HOST_LABEL).is_none());
}

#[test]
fn the_guest_cluster_s_own_api_server_given_as_the_supervisor_is_named_so() {
    let story = GuestClusterStory::new();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let certificates = private_ca_and_server_certificate(dir.path());
    // The guest cluster served over https, and the credentials pointing at it.
    let guest = FakeApiServer::start_tls(
        FakeCluster::new(guest_objects(&story, HOST_LABEL, |_| Vec::new())),
        &certificates,
    );
    let lab = Lab::with(story.clone(), story.guest(), |_| Vec::new());
    let kubeconfig = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: guest\n  cluster:\n    server: {}\n    \
         certificate-authority: {}\nusers:\n- name: guest\n  user: {{}}\ncontexts:\n- name: guest\n  \
         context:\n    cluster: guest\n    user: guest\n    namespace: default\n\
         current-context: guest\n",
        guest.url,
        certificates.ca.display()
    );
    std::fs::write(lab.dir.path().join("kubeconfig"), kubeconfig).expect("write the kubeconfig");
    std::fs::copy(&certificates.ca, lab.credentials().join("ca.crt")).expect("write ca.crt");
    std::fs::write(lab.credentials().join("server"), &guest.url).expect("write server");

    let outcome = lab.run(&[]);
    assert_eq!(outcome.code, 1, "{}", outcome.context());
    assert!(
        outcome
            .errors()
            .iter()
            .any(|e| e.contains("this cluster's own API server")),
        "{}",
        outcome.stdout
    );
    assert!(outcome.evictions().is_empty());
    assert!(
        guest
            .cluster()
            .requests
            .iter()
            .any(|r| r.path == format!("/apis/{GROUP}")),
        "the guest's own server was asked for VM Operator's group"
    );
    assert!(lab.supervisor_requests().is_empty());
}

#[test]
fn a_refused_token_fails_the_run_with_its_report() {
    let lab = Lab::new(Release::V9_0_1);
    lab.supervisor.cluster().inject(Fault::action(
        None,
        "/",
        FaultAction::Status {
            code: 401,
            reason: "Unauthorized".to_string(),
            message: "Unauthorized".to_string(),
            retry_after_seconds: 0,
        },
    ));
    let outcome = lab.run(&[]);
    assert_eq!(outcome.code, 1, "{}", outcome.context());
    assert!(
        outcome
            .errors()
            .iter()
            .any(|e| e.contains("the Supervisor could not be read") && e.contains("401")),
        "{}",
        outcome.stdout
    );
    assert!(outcome.evictions().is_empty(), "{}", outcome.stdout);
    for vm in &lab.story.vms {
        assert!(lab.node_label(&vm.name, HOST_LABEL).is_none());
    }
}

#[test]
fn a_guest_node_matching_no_vm_is_unmapped_and_named() {
    let story = GuestClusterStory::new();
    let supervisor = story.supervisor(Release::V9_0_1);
    // A guest Node whose VM is in no Supervisor namespace the tool reads.
    let mut guest = story.clone();
    guest.vms.push(GuestVm::new(
        "team-b",
        GuestClusterStory::CLUSTER,
        UNLABELLED_NODE,
        Role::ControlPlane,
        &story.hosts[2],
        5,
    ));
    let lab = Lab::with(guest, supervisor, |_| Vec::new());
    let outcome = lab.run(&["--dry-run"]);
    assert_eq!(outcome.code, 0, "{}", outcome.context());
    assert_eq!(outcome.report["unmappedNodes"], json!([UNLABELLED_NODE]));
    assert!(
        outcome
            .warnings()
            .iter()
            .any(|w| w.contains("match no VirtualMachine") && w.contains(UNLABELLED_NODE)),
        "{}",
        outcome.stdout
    );
    assert_eq!(outcome.evicted_pods().len(), 1, "{}", outcome.stdout);
}

#[test]
fn a_snapshot_in_supervisor_mode_plans_offline_as_the_dry_run() {
    let lab = Lab::new(Release::V9_0_1);
    let dry_run = lab.run(&["--dry-run"]);
    assert_eq!(dry_run.code, 0, "{}", dry_run.context());
    let file = lab.dir.path().join("snapshot.yaml");
    let file_arg = file.display().to_string();
    let snapshot = lab.supervised("json", "snapshot", &["-o", file_arg.as_str()]);
    assert_eq!(snapshot.code, 0, "{}", snapshot.context());
    let text = std::fs::read_to_string(&file).expect("the snapshot");
    assert!(!text.contains(TOKEN), "no token in the snapshot");
    assert!(
        text.contains("VirtualMachineSetResourcePolicy"),
        "the snapshot records VM Operator's objects"
    );

    let policy = lab.policy.display().to_string();
    let planned = Outcome::of(
        lab.command(&[
            "--output",
            "json",
            "plan",
            "--snapshot",
            file_arg.as_str(),
            "--policy",
            policy.as_str(),
        ])
        .env("KUBECONFIG", lab.dir.path().join("nowhere"))
        .output()
        .expect("the binary runs"),
    );
    assert_eq!(planned.code, 0, "{}", planned.context());
    assert_eq!(planned.evicted_pods(), dry_run.evicted_pods());
}

/// The story's guest cluster with Cluster API's host label on every node, pods anti-affine on
/// that label, plus a second control plane node nothing labelled yet; no Supervisor access at
/// all.
fn node_label_lab() -> Lab {
    let mut story = GuestClusterStory::new();
    let unlabelled = GuestVm::new(
        GuestClusterStory::NAMESPACE,
        GuestClusterStory::CLUSTER,
        UNLABELLED_NODE,
        Role::ControlPlane,
        &story.hosts[2],
        5,
    );
    story.vms.push(unlabelled);
    let lab = Lab::with(story.clone(), story.guest(), |vm| {
        if vm.name == UNLABELLED_NODE {
            Vec::new()
        } else {
            vec![(CAPI_HOST_LABEL.to_string(), vm.host.clone())]
        }
    });
    // Pods anti-affine on Cluster API's label instead of the tool's.
    {
        let mut guest = lab.guest.cluster();
        let pods: Vec<Pod> = guest
            .pods
            .values()
            .map(|pod| {
                let mut value = serde_json::to_value(pod.as_ref()).expect("a pod");
                value["spec"]["affinity"]["podAntiAffinity"]
                    ["requiredDuringSchedulingIgnoredDuringExecution"][0]["topologyKey"] =
                    json!(CAPI_HOST_LABEL);
                serde_json::from_value(value).expect("a pod")
            })
            .collect();
        for pod in pods {
            let key = (
                pod.metadata.namespace.clone().expect("a namespace"),
                pod.metadata.name.clone().expect("a name"),
            );
            guest.pods.insert(key, Arc::new(pod));
        }
    }
    std::fs::write(&lab.policy, NODE_LABEL_POLICY).expect("write the policy");
    lab
}

impl Lab {
    fn node_labelled(&self, subcommand: &str, args: &[&str]) -> Outcome {
        let policy = self.policy.display().to_string();
        let mut all = vec![
            "--output",
            "json",
            subcommand,
            "--policy",
            policy.as_str(),
            "--topology-source",
            "node-label",
        ];
        all.extend_from_slice(args);
        Outcome::of(self.command(&all).output().expect("the binary runs"))
    }
}

#[test]
fn node_label_mode_evicts_by_cluster_api_s_label_and_writes_no_label() {
    let lab = node_label_lab();
    let outcome = lab.node_labelled("run", &["--dry-run"]);
    assert_eq!(outcome.code, 0, "{}", outcome.context());
    let evicted = outcome.evicted_pods();
    assert_eq!(evicted.len(), 1, "{}", outcome.stdout);
    assert!(lab.crowded_pods().contains(&evicted[0]));
    assert_eq!(outcome.report["unmappedNodes"], json!([UNLABELLED_NODE]));
    assert!(
        outcome
            .warnings()
            .iter()
            .any(|w| w.contains(UNLABELLED_NODE) && w.contains(CAPI_HOST_LABEL)),
        "{}",
        outcome.stdout
    );
    let patches: Vec<RequestRecord> = lab
        .guest_requests()
        .into_iter()
        .filter(|r| r.path.contains("/nodes") && r.method != "GET")
        .collect();
    assert!(patches.is_empty(), "no node write: {patches:?}");
    assert_eq!(
        outcome.report["target"]["nodeLabel"], CAPI_HOST_LABEL,
        "{}",
        outcome.stdout
    );
    assert!(lab.supervisor_requests().is_empty());
}

#[test]
fn node_label_mode_checks_neither_vcenter_nor_a_supervisor() {
    let lab = node_label_lab();
    let checked = lab.node_labelled("check", &[]);
    let backends = backends(&checked.report);
    assert!(
        backends.contains(&"kubernetes".to_string()),
        "{}",
        checked.context()
    );
    assert!(!backends.contains(&"vcenter".to_string()), "{backends:?}");
    assert!(
        !backends.contains(&"supervisor".to_string()),
        "{backends:?}"
    );
    assert!(lab.supervisor_requests().is_empty());
}

#[test]
fn the_credentials_directory_reads_a_supervisor_served_over_https_only_with_its_ca() {
    let lab = Lab::new(Release::V9_0_1);
    let other = tempfile::tempdir().expect("a temporary directory");
    let stranger = private_ca_and_server_certificate(other.path());
    std::fs::copy(&stranger.ca, lab.credentials().join("ca.crt")).expect("write ca.crt");
    let outcome = lab.run(&["--dry-run"]);
    assert_eq!(outcome.code, 1, "{}", outcome.context());
    assert!(
        lab.supervisor_requests().is_empty(),
        "no request passed TLS"
    );
    assert!(!outcome.errors().is_empty(), "{}", outcome.stdout);
}
