//! The vCenter simulator as a child process: built by `scripts/build-vcsim.sh` when missing,
//! started with an inventory, killed on drop.
//!
//! The simulator is govmomi's (Debian's golang-github-vmware-govmomi-dev 0.24.2) driven by
//! `tests/support/vcsim/*.go`. It serves https with a leaf certificate signed by a CA it
//! writes to `ca_file`, accepts `USERNAME`/`PASSWORD` (the Admin role on the root folder) and the
//! users a test adds, with roles and permissions it enforces where vcsim does not (privilege
//! queries, cluster reconfiguration, and reads: a retrieval leaves out what the user cannot
//! read; see `authorization.go`), and has a plain-http control
//! endpoint to move VMs (RelocateVM_Task), count SOAP calls by method, end sessions, manage
//! users, roles and permissions, and fail a page of a paged retrieval.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use vsphere_descheduler::inventory::{Cluster, Inventory};
use vsphere_descheduler::vsphere::{ConnectionConfig, Credentials};

/// The user the simulator starts with: the Admin role on the root folder, propagated.
pub const USERNAME: &str = "administrator@vsphere.local";
/// Its password; characters that need escaping in XML on purpose.
pub const PASSWORD: &str = "S3cret&<pässword>\"'";

/// How long a small inventory may take to build before the test fails.
pub const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(60);

const INSTALL_HINT: &str = "the vCenter simulator could not be built; it needs Debian's \
     golang-go and golang-github-vmware-govmomi-dev (`apt-get install -y golang-go \
     golang-github-vmware-govmomi-dev`, then `scripts/build-vcsim.sh`)";

/// A VM template to create besides the inventory (observation must leave it out).
#[derive(Clone, Debug, Serialize)]
pub struct Template {
    pub name: String,
    pub cluster: String,
    pub host: String,
}

/// A host outside every cluster, in a compute resource of its own (as a vSAN stretched
/// cluster's witness is), which observation leaves out. With a fault domain, vSAN is on for it.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StandaloneHost {
    pub name: String,
    pub datacenter: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vsan_fault_domain: Option<String>,
}

/// A story's `simulator.yaml`: what the simulator builds beside the snapshot's inventory.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Extras {
    #[serde(default)]
    standalone_hosts: Vec<StandaloneHost>,
}

/// How to start the simulator besides its inventory.
#[derive(Clone, Debug)]
pub struct Options {
    /// VM templates to create too.
    pub templates: Vec<Template>,
    /// Hosts outside the clusters to create too.
    pub standalone_hosts: Vec<StandaloneHost>,
    /// Page property retrievals by this many objects, as real vCenter does.
    pub page_size: Option<usize>,
    /// How long building the inventory may take before the test fails.
    pub ready_timeout: Duration,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            templates: Vec::new(),
            standalone_hosts: Vec::new(),
            page_size: None,
            ready_timeout: DEFAULT_READY_TIMEOUT,
        }
    }
}

impl Options {
    /// The options of the snapshot file's story: its `simulator.yaml`, beside it, when there is
    /// one (e.g. `tests/fixtures/e2e/stretched-cluster/`), else the defaults.
    pub fn beside(snapshot: &Path) -> Options {
        let path = snapshot.with_file_name("simulator.yaml");
        if !path.exists() {
            return Options::default();
        }
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|error| panic!("read {}: {error}", path.display()));
        let extras: Extras = serde_saphyr::from_str(&text)
            .unwrap_or_else(|error| panic!("parse {}: {error}", path.display()));
        Options {
            standalone_hosts: extras.standalone_hosts,
            ..Options::default()
        }
    }
}

/// What the harness builds: the inventory plus harness-only extras.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Scenario<'a> {
    clusters: &'a [Cluster],
    templates: &'a [Template],
    standalone_hosts: &'a [StandaloneHost],
}

#[derive(Deserialize)]
struct Ready {
    url: String,
    control: String,
}

/// A running simulator.
pub struct Vcsim {
    child: Child,
    /// The SOAP endpoint, `https://127.0.0.1:<port>/sdk`.
    pub url: String,
    control: String,
    /// PEM of the CA that signed the server's certificate.
    pub ca_file: PathBuf,
    _dir: tempfile::TempDir,
}

/// The simulator binary, built once per test process.
fn binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let status = Command::new("bash")
            .arg(root.join("scripts/build-vcsim.sh"))
            .status();
        match status {
            Ok(status) if status.success() => {}
            Ok(status) => panic!("{INSTALL_HINT} (build-vcsim.sh exited with {status})"),
            Err(error) => panic!("{INSTALL_HINT} (could not run build-vcsim.sh: {error})"),
        }
        let binary = root.join("target/vcsim/vcsim");
        assert!(
            binary.exists(),
            "{INSTALL_HINT} ({} is missing)",
            binary.display()
        );
        binary
    })
}

impl Vcsim {
    pub fn start(inventory: &Inventory) -> Vcsim {
        Vcsim::start_with(inventory, &Options::default())
    }

    /// Starts the simulator with `inventory` and waits until it is built.
    pub fn start_with(inventory: &Inventory, options: &Options) -> Vcsim {
        let ready_timeout = options.ready_timeout;
        let binary = binary();
        let dir = tempfile::tempdir().expect("temporary directory");
        let inventory_path = dir.path().join("inventory.json");
        let scenario = Scenario {
            clusters: &inventory.clusters,
            templates: &options.templates,
            standalone_hosts: &options.standalone_hosts,
        };
        std::fs::write(
            &inventory_path,
            serde_json::to_vec(&scenario).expect("inventory serialises"),
        )
        .expect("write inventory");
        let ca_file = dir.path().join("ca.pem");
        let stderr_path = dir.path().join("stderr.txt");
        let stderr = std::fs::File::create(&stderr_path).expect("create stderr file");

        let mut command = Command::new(binary);
        if let Some(page_size) = options.page_size {
            command.arg("-page-size").arg(page_size.to_string());
        }
        let mut child = command
            .arg("-inventory")
            .arg(&inventory_path)
            .arg("-ca-out")
            .arg(&ca_file)
            .arg("-username")
            .arg(USERNAME)
            .arg("-password")
            .arg(PASSWORD)
            // The simulator exits when this pipe closes, even if the test process is killed.
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|error| panic!("failed to start {}: {error}", binary.display()));

        let stdout = child.stdout.take().expect("stdout is piped");
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let result = BufReader::new(stdout).read_line(&mut line).map(|_| line);
            let _ = sender.send(result);
        });
        let line = match receiver.recv_timeout(ready_timeout) {
            Ok(Ok(line)) if !line.trim().is_empty() => line,
            outcome => {
                let _ = child.kill();
                let _ = child.wait();
                let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
                panic!(
                    "the simulator did not become ready within {ready_timeout:?} \
                     ({outcome:?}); its stderr:\n{stderr}"
                );
            }
        };
        let ready: Ready = serde_json::from_str(&line)
            .unwrap_or_else(|error| panic!("unexpected readiness line {line:?}: {error}"));
        Vcsim {
            child,
            url: ready.url,
            control: ready.control,
            ca_file,
            _dir: dir,
        }
    }

    /// How to reach this simulator: its CA trusted, its credentials, a short timeout.
    pub fn connection_config(&self) -> ConnectionConfig {
        self.connection_config_as(USERNAME, PASSWORD)
    }

    /// How to reach this simulator as another user.
    pub fn connection_config_as(&self, username: &str, password: &str) -> ConnectionConfig {
        let mut config = ConnectionConfig::new(&self.url, Credentials::new(username, password));
        config.ca_file = Some(self.ca_file.clone());
        config.timeout = Duration::from_secs(20);
        config
    }

    /// A user Login accepts from now on; it holds no permission until given one.
    pub fn add_user(&self, name: &str, password: &str) {
        let body = serde_json::json!({"name": name, "password": password});
        self.control_post("/users", &body);
    }

    /// A role with these privileges (vCenter adds System.Anonymous, System.View and
    /// System.Read), created through the SOAP API as `govc role.create` does.
    pub fn add_role(&self, name: &str, privileges: &[&str]) {
        let body = serde_json::json!({"name": name, "privileges": privileges});
        self.control_post("/roles", &body);
    }

    /// `principal` gets `role` on the object at inventory `path` (`/` is the root folder,
    /// `/dc-1` a datacenter, `/dc-1/host/c` a cluster), as `govc permissions.set` does.
    pub fn set_permission(&self, principal: &str, role: &str, path: &str, propagate: bool) {
        let body = serde_json::json!({
            "principal": principal, "role": role, "path": path, "propagate": propagate,
        });
        self.control_post("/permissions", &body);
    }

    /// The next ContinueRetrievePropertiesEx fails as for an expired token (needs
    /// `Options::page_size`).
    pub fn fail_next_page(&self) {
        self.control_post("/pages/fail-next", &serde_json::json!({}));
    }

    /// Moves a VM to a host with RelocateVM_Task, as a DRS vMotion would.
    pub fn move_vm(&self, vm: &str, host: &str) {
        let reply = self.control_request("POST", &format!("/move?vm={vm}&host={host}"));
        assert_eq!(reply["to"], host, "move of {vm} failed: {reply}");
    }

    /// SOAP calls the simulator served to clients so far, by method.
    pub fn calls(&self) -> BTreeMap<String, u64> {
        let reply = self.control_request("GET", "/stats");
        serde_json::from_value(reply).expect("call counts")
    }

    /// SOAP calls of one method served so far.
    pub fn calls_of(&self, method: &str) -> u64 {
        self.calls().get(method).copied().unwrap_or(0)
    }

    /// Ends every client session, as vCenter's idle timeout would.
    pub fn terminate_sessions(&self) -> u64 {
        let reply = self.control_request("POST", "/sessions/terminate");
        reply["terminated"].as_u64().expect("terminated count")
    }

    fn control_post(&self, path: &str, body: &serde_json::Value) -> serde_json::Value {
        self.control_request_with("POST", path, &body.to_string())
    }

    /// One HTTP/1.0 request to the control endpoint (plain http on 127.0.0.1).
    fn control_request(&self, method: &str, path: &str) -> serde_json::Value {
        self.control_request_with(method, path, "")
    }

    fn control_request_with(&self, method: &str, path: &str, body: &str) -> serde_json::Value {
        let address = self
            .control
            .strip_prefix("http://")
            .expect("control URL is http");
        let mut stream = TcpStream::connect(address).expect("control endpoint reachable");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("set timeout");
        // One write: the whole request is there when the server reads it.
        let request = format!(
            "{method} {path} HTTP/1.0\r\nHost: {address}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream
            .write_all(request.as_bytes())
            .expect("send control request");
        let mut response = String::new();
        stream
            .read_to_string(&mut response)
            .expect("read control reply");
        let (head, body) = response
            .split_once("\r\n\r\n")
            .expect("HTTP reply with a body");
        assert!(
            head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
            "{method} {path} failed: {head}\n{body}"
        );
        serde_json::from_str(body).expect("JSON reply")
    }
}

impl Drop for Vcsim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `VSphereInventory` document shape: the inventory with its header.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct InventoryDocument {
    api_version: String,
    kind: String,
    clusters: Vec<Cluster>,
}

/// Reads a `VSphereInventory` YAML fixture from `tests/fixtures/`.
pub fn load_inventory(relative: &str) -> Inventory {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(relative);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("read {}: {error}", path.display()));
    let document: InventoryDocument = serde_saphyr::from_str(&text)
        .unwrap_or_else(|error| panic!("parse {}: {error}", path.display()));
    assert_eq!(
        document.api_version,
        vsphere_descheduler::inventory::API_VERSION
    );
    assert_eq!(document.kind, vsphere_descheduler::inventory::KIND);
    Inventory {
        clusters: document.clusters,
    }
}
