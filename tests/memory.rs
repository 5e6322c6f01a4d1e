//! Memory as a budget: `plan` on a generated cluster stays within the memory the run's own
//! estimate (`footprint::estimate`, which `run` compares with the container's limit) promises,
//! measured as the peak resident memory the binary logs about itself. Memory is deterministic
//! enough to assert on a loaded machine; time is not, and is not asserted.

// The generator also writes YAML, which this test does not use.
#[allow(dead_code)]
#[path = "../benches/support/cluster.rs"]
mod cluster;

use std::process::Command;

use vsphere_descheduler::footprint;

const POLICY: &str = "apiVersion: vsphere-descheduler.io/v1alpha1
kind: DeschedulerPolicy
clusterName: bench
profiles:
- name: all
  plugins:
    deschedule: {enabled: [RemovePodsViolatingInterPodAntiAffinity]}
    balance: {enabled: [RemovePodsViolatingTopologySpreadConstraint, RemoveDuplicates]}
";

/// The `resources used` line `plan --log-format json` logs last: its peak resident memory.
fn peak_rss_bytes(stderr: &str) -> u64 {
    stderr
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|line| line["fields"]["message"] == "resources used")
        .and_then(|line| line["fields"]["peak_rss_bytes"].as_u64())
        .unwrap_or_else(|| panic!("a resources used line in {stderr}"))
}

/// The peak resident memory of `plan` on a generated cluster of this shape.
fn plan_peak(shape: &cluster::Shape) -> u64 {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let snapshot = dir.path().join("cluster.json");
    let text = cluster::generate(shape).json();
    std::fs::write(&snapshot, &text).expect("writable");
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).expect("writable");
    let output = Command::new(env!("CARGO_BIN_EXE_vsphere-descheduler"))
        .args([
            "plan",
            "--output",
            "json",
            "--log-format",
            "json",
            "--snapshot",
        ])
        .arg(&snapshot)
        .arg("--policy")
        .arg(&policy)
        .env("RUST_LOG", "info")
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    peak_rss_bytes(&stderr)
}

/// The memory that grows with the cluster, which is what the estimate's rates promise: the
/// difference between two sizes, so the binary's own size (larger in a debug build) cancels
/// out. A JSON file is read as a stream, its text never held whole (a window of a few MiB, the
/// same at both sizes), so the rates hold it with nothing on top: holding the text again would
/// add the files' difference (10.6 MB) and fail. Measured 45.0–45.5 MB in a debug build against
/// 48.6 MB allowed.
#[test]
fn memory_grows_with_the_cluster_no_faster_than_the_rates_the_run_checks_its_limit_by() {
    let small = cluster::Shape {
        nodes: 50,
        pods: 1_500,
        hosts: 5,
        ..cluster::Shape::default()
    };
    let large = cluster::Shape {
        nodes: 500,
        pods: 15_000,
        hosts: 10,
        ..cluster::Shape::default()
    };
    let small_peak = plan_peak(&small);
    let large_peak = plan_peak(&large);
    let grown = large_peak.saturating_sub(small_peak);
    let allowed =
        footprint::estimate(large.nodes, large.pods) - footprint::estimate(small.nodes, small.pods);
    assert!(
        grown <= allowed,
        "{} more pods took {} KiB more at the peak ({} KiB -> {} KiB), over the {} KiB the \
         rates allow (footprint::PER_POD_BYTES, PER_NODE_BYTES)",
        large.pods - small.pods,
        grown >> 10,
        small_peak >> 10,
        large_peak >> 10,
        allowed >> 10
    );
}
