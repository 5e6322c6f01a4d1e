//! Time the phases of `plan` on a snapshot file: decode, node↔VM mapping, the working state,
//! each strategy, feasibility on every 100th pod, DRS derivation, and the whole `plan()`
//! (best of N runs). A quick look at one file; `cargo bench` is the careful measurement.
//!
//! `cargo run --release --example bench_plan -- SNAPSHOT POLICY [RUNS]`
#![allow(clippy::print_stdout)] // a developer tool that prints its measurements

use std::path::PathBuf;
use std::time::{Duration, Instant};

use vsphere_descheduler::plan::phases::{self, Phases};

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let value = f();
    (value, start.elapsed())
}

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
    let (loaded, decode) = timed(|| {
        vsphere_descheduler::snapshot::load_files(&[snapshot_path], chrono::Utc::now())
            .expect("a valid snapshot")
    });
    let snapshot = loaded.snapshot;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "nodes={} pods={} decode_ms={:.0}",
        snapshot.nodes.len(),
        snapshot.pods.len(),
        ms(decode)
    );

    // Each phase, best of RUNS (the machine is shared: the minimum is the least disturbed).
    let mut best_phase: Vec<(String, Duration, usize)> = Vec::new();
    let mut record = |name: String, took: Duration, count: usize| match best_phase
        .iter_mut()
        .find(|(n, _, _)| *n == name)
    {
        Some(entry) => entry.1 = entry.1.min(took),
        None => best_phase.push((name, took, count)),
    };
    for _ in 0..runs.max(1) {
        let (mapped, took) = timed(|| phases::map_nodes(&snapshot));
        record("mapping".into(), took, mapped);
        let (mut state, took) = timed(|| Phases::new(&snapshot, &policy));
        record("prepare".into(), took, 0);
        let (fit, took) = timed(|| state.feasible(100));
        record("feasibility (every 100th pod)".into(), took, fit);
        for profile in &policy.profiles {
            for strategy in profile.deschedule.iter().chain(&profile.balance) {
                let (evictions, took) =
                    timed(|| state.run_strategy(&profile.name, strategy.kind()));
                record(
                    format!("{}/{}", profile.name, strategy.kind()),
                    took,
                    evictions,
                );
            }
        }
        let (plan, took) = timed(|| state.drs_rules());
        record("drs".into(), took, plan.drs_rules.len());
    }
    for (name, took, count) in &best_phase {
        println!("  {name:<60} {:>9.1} ms  ({count})", ms(*took));
    }

    let mut best = Duration::MAX;
    let mut plan = None;
    for _ in 0..runs.max(1) {
        let (result, took) = timed(|| vsphere_descheduler::plan::plan(&snapshot, &policy));
        best = best.min(took);
        plan = Some(result);
    }
    let plan = plan.expect("at least one run");
    println!(
        "plan_ms={:.0} per_pod_us={:.2} evictions={} skipped={} label_changes={} drs_rules={}",
        ms(best),
        best.as_secs_f64() * 1e6 / snapshot.pods.len().max(1) as f64,
        plan.evictions.len(),
        plan.skipped.len(),
        plan.label_changes.len(),
        plan.drs_rules.len(),
    );
}
