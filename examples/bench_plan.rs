//! Time the phases of `plan` on a snapshot file: decode, then `plan()` (best of N runs).
//!
//! `cargo run --release --example bench_plan -- SNAPSHOT POLICY [RUNS]`
#![allow(clippy::print_stdout)] // a developer tool that prints its measurements

use std::path::PathBuf;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let snapshot_path = PathBuf::from(args.first().expect("SNAPSHOT"));
    let policy_path = PathBuf::from(args.get(1).expect("POLICY"));
    let runs: usize = args
        .get(2)
        .map_or(3, |r| r.parse().expect("RUNS is a number"));

    let policy = vsphere_descheduler::policy::load_file(&policy_path)
        .expect("a valid policy")
        .policy;
    let start = Instant::now();
    let loaded = vsphere_descheduler::snapshot::load_files(&[snapshot_path], chrono::Utc::now())
        .expect("a valid snapshot");
    let decode = start.elapsed();
    let snapshot = loaded.snapshot;

    let mut best = None;
    let mut plan = None;
    for _ in 0..runs {
        let start = Instant::now();
        let result = vsphere_descheduler::plan::plan(&snapshot, &policy);
        let took = start.elapsed();
        best = Some(best.map_or(took, |b: std::time::Duration| b.min(took)));
        plan = Some(result);
    }
    let plan = plan.expect("at least one run");
    let best = best.expect("at least one run");
    println!(
        "nodes={} pods={} decode_ms={} plan_ms={} per_pod_us={:.2} evictions={} skipped={} label_changes={} drs_rules={}",
        snapshot.nodes.len(),
        snapshot.pods.len(),
        decode.as_millis(),
        best.as_millis(),
        best.as_secs_f64() * 1e6 / snapshot.pods.len().max(1) as f64,
        plan.evictions.len(),
        plan.skipped.len(),
        plan.label_changes.len(),
        plan.drs_rules.len(),
    );
}
