//! The lab of the end-to-end tests: the vCenter simulator and the fake Kubernetes API server,
//! both loaded from one story's snapshot file, and the binary wired to reach them. Each test
//! file adds the methods it needs in its own `impl Lab`.
//!
//! Not in `support/mod.rs`: it runs this package's binary, which only integration tests know
//! (`CARGO_BIN_EXE_*`), and the lab example includes that file. Test files take it with
//! `#[path = "support/lab.rs"] mod lab;`.

// Each test binary uses only part of it (the metrics tests never read the fake's state, but it
// must live as long as the lab).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::fake_apiserver::{FakeApiServer, FakeCluster, read_objects};
use crate::support::vcsim::{self, Options, Vcsim};

/// The simulator and the fake API server of one story, and what the binary needs to reach them.
pub struct Lab {
    pub simulator: Vcsim,
    pub server: FakeApiServer,
    pub policy: PathBuf,
    pub dir: tempfile::TempDir,
}

impl Lab {
    /// The story in `tests/fixtures/e2e/<story>/` (`snapshot.yaml`, `policy.yaml`, and the
    /// simulator's extras in `simulator.yaml` where the story has them).
    pub fn start(story: &str) -> Lab {
        let folder = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/e2e")
            .join(story);
        let snapshot = folder.join("snapshot.yaml");
        let options = Options::beside(&snapshot);
        Lab::from_snapshot_with(&snapshot, folder.join("policy.yaml"), &options)
    }

    /// A lab loaded from any snapshot file (Kubernetes objects plus a VSphereInventory).
    pub fn from_snapshot(snapshot: &Path, policy: PathBuf) -> Lab {
        Lab::from_snapshot_with(snapshot, policy, &Options::default())
    }

    /// A lab loaded from a snapshot file, the simulator started with `options`.
    pub fn from_snapshot_with(snapshot: &Path, policy: PathBuf, options: &Options) -> Lab {
        let mut objects = read_objects(snapshot);
        let inventory = objects
            .inventory
            .take()
            .expect("the snapshot has an inventory");
        let simulator = Vcsim::start_with(&inventory, options);
        let server = FakeApiServer::start(FakeCluster::new(objects));
        let dir = tempfile::tempdir().expect("a temporary directory");
        server.write_kubeconfig(&dir.path().join("kubeconfig"));
        Lab {
            simulator,
            server,
            policy,
            dir,
        }
    }

    /// The binary with the lab's connection settings (TLS verified against the simulator's CA)
    /// and a clean environment otherwise.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_vsphere-descheduler"));
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .env("KUBECONFIG", self.dir.path().join("kubeconfig"))
            .env("VSPHERE_SERVER", &self.simulator.url)
            .env("VSPHERE_USERNAME", vcsim::USERNAME)
            .env("VSPHERE_PASSWORD", vcsim::PASSWORD)
            .env(
                "VSPHERE_DESCHEDULER_VSPHERE_CA_FILE",
                &self.simulator.ca_file,
            )
            .env("RUST_LOG", "info");
        command
    }
}
