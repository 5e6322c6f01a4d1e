//! A local lab: the vCenter simulator built from a snapshot's `VSphereInventory`, and the fake
//! Kubernetes API server loaded with the snapshot's nodes, pods, PDBs and namespaces, so `run`,
//! `run --dry-run` and `snapshot` can be tried on a laptop. The fake API server grants exactly
//! what the chart's RBAC grants its ServiceAccount (tests/fixtures/rbac/chart.yaml), so the lock
//! is in `kube-system` (the default `--lock-namespace`) and anything else is refused as an
//! installed chart's account would be.
//!
//! `cargo run --release --example lab -- SNAPSHOT_FILE [--port PORT]`
//!
//! Prints `KEY=VALUE` lines (values shell-quoted where needed) for `KUBECONFIG`,
//! `VSPHERE_SERVER`, `VSPHERE_USERNAME`, `VSPHERE_PASSWORD` and `VSPHERE_INSECURE`, then `ready`,
//! and serves until SIGTERM or Ctrl-C. In a shell:
//!
//! ```text
//! cargo run --release --example lab -- snapshot.yaml > lab.env &
//! until grep -q '^ready$' lab.env; do sleep 1; done
//! set -a; . <(grep = lab.env); set +a
//! vsphere-descheduler run --dry-run --policy policy.yaml
//! ```
#![allow(clippy::print_stdout, clippy::print_stderr)] // a developer tool: its output is the interface

#[path = "../tests/support/mod.rs"]
mod support;

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use support::fake_apiserver::{FakeApiServer, FakeCluster, read_objects};
use support::vcsim::{self, Options, Vcsim};

fn main() {
    let mut args = std::env::args().skip(1);
    let mut snapshot = None;
    let mut port = 0u16;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => {
                port = args
                    .next()
                    .and_then(|p| p.parse().ok())
                    .expect("--port takes a port number");
            }
            "-h" | "--help" => {
                println!("usage: lab SNAPSHOT_FILE [--port PORT]");
                return;
            }
            file => snapshot = Some(PathBuf::from(file)),
        }
    }
    let snapshot = snapshot.expect("usage: lab SNAPSHOT_FILE [--port PORT]");

    let mut objects = read_objects(&snapshot);
    let inventory = objects
        .inventory
        .take()
        .expect("the snapshot has a VSphereInventory document");
    let vms: usize = inventory.clusters.iter().map(|c| c.vms.len()).sum();
    eprintln!(
        "lab: building the simulator ({} cluster(s), {vms} VM(s)) and loading {} node(s), {} pod(s)",
        inventory.clusters.len(),
        objects.nodes.len(),
        objects.pods.len()
    );
    let simulator = Vcsim::start_with(
        &inventory,
        &Options {
            ready_timeout: Duration::from_secs(1800),
            // A story's simulator.yaml beside the snapshot (e.g. the stretched cluster's witness).
            ..Options::beside(&snapshot)
        },
    );
    let address = format!("127.0.0.1:{port}")
        .parse()
        .expect("a socket address");
    let server = FakeApiServer::start_on(FakeCluster::new(objects), address);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig);

    let mut out = std::io::stdout().lock();
    for (key, value) in [
        ("KUBECONFIG", kubeconfig.display().to_string()),
        ("VSPHERE_SERVER", simulator.url.clone()),
        ("VSPHERE_USERNAME", vcsim::USERNAME.to_string()),
        ("VSPHERE_PASSWORD", vcsim::PASSWORD.to_string()),
        ("VSPHERE_INSECURE", "true".to_string()),
    ] {
        writeln!(out, "{key}={}", shell_quote(&value)).expect("write to stdout");
    }
    writeln!(out, "ready").expect("write to stdout");
    out.flush().expect("flush stdout");
    drop(out);

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        let mut terminate = signal(SignalKind::terminate()).expect("SIGTERM handler");
        tokio::select! {
            _ = terminate.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    });
    eprintln!(
        "lab: stopping after {} Kubernetes request(s)",
        server.cluster().requests.len()
    );
    drop(server);
    drop(simulator);
}

/// The value as a POSIX shell word: as is when harmless, else single-quoted.
fn shell_quote(value: &str) -> String {
    let harmless = |c: char| c.is_ascii_alphanumeric() || "_./:@-+,".contains(c);
    if !value.is_empty() && value.chars().all(harmless) {
        value.to_string()
    } else {
        format!("'{}'", value.replace('\'', r"'\''"))
    }
}
