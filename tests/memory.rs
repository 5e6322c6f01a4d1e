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

/// What `plan` itself may grow by per pod, tighter than the run's estimate
/// (`footprint::PER_POD_BYTES`, which also covers a live run and is set from a run of the lab).
/// Measured from 1,500 to 15,000 pods in a debug build: 2.0 KiB per pod once labels were
/// interned, no allowance for the file's text once a JSON file was read as a stream, then
/// 1.7 KiB beyond the text with compact resources and the slim pod record (BENCHMARKS.md).
/// With all three: 22.8–23.3 MB for 13,500 more pods and 450 more nodes; with owners, images,
/// conditions, namespaces and node names interned too, 19.6–19.9 MB: 1.21 KiB per pod beyond the
/// nodes' rate. The bound keeps a fifth of margin for the allocator and the build profile; a
/// regression of a third of a KiB per pod fails here first.
const PLAN_PER_POD_BYTES: u64 = 1536;

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
    let text = cluster::text(shape, cluster::Format::Json);
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
/// add the files' difference (10.6 MB) and fail.
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
    let plan_allowed = PLAN_PER_POD_BYTES * (large.pods - small.pods) as u64
        + footprint::PER_NODE_BYTES * (large.nodes - small.nodes) as u64;
    assert!(
        grown <= plan_allowed,
        "{} more pods took {} KiB more at the peak, over the {} KiB `plan` may grow by \
         (PLAN_PER_POD_BYTES, footprint::PER_NODE_BYTES)",
        large.pods - small.pods,
        grown >> 10,
        plan_allowed >> 10
    );
}
