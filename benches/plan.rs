//! The planner on generated clusters (`support/cluster.rs`) of 1.5k to 300k pods: snapshot
//! decoding, each phase of `plan()` apart (`plan::phases`), and the whole `plan()`.
//!
//! `cargo bench --bench plan` runs every size; `BENCH_SIZES=1.5k,15k` picks some, and a filter
//! picks benchmarks (`cargo bench --bench plan -- plan/`). Under `cargo test`, criterion runs
//! each benchmark once, and only at 1.5k unless `BENCH_SIZES` says otherwise, so CI stays fast.

#[path = "support/cluster.rs"]
mod cluster;

use std::sync::OnceLock;
use std::time::Duration;

use chrono::{DateTime, Utc};
use criterion::measurement::WallTime;
use criterion::{
    BatchSize, Bencher, BenchmarkGroup, BenchmarkId, Criterion, Throughput, criterion_group,
    criterion_main,
};
use vsphere_descheduler::plan::phases::{self, Phases};
use vsphere_descheduler::policy::{self, PluginKind, Policy};
use vsphere_descheduler::snapshot::{self, Snapshot};

use cluster::{HostsFrom, Shape};

const ANTI_AFFINITY: PluginKind = PluginKind::InterPodAntiAffinity;
const SPREAD: PluginKind = PluginKind::TopologySpread;
const DUPLICATES: PluginKind = PluginKind::Duplicates;
const PROFILE: &str = "bench";

/// Strategy benchmarks: name, and the plugin a policy of its own enables.
const STRATEGIES: [(&str, PluginKind); 3] = [
    ("anti-affinity", ANTI_AFFINITY),
    ("topology-spread", SPREAD),
    ("duplicates", DUPLICATES),
];

/// One cluster size, generated the first time a benchmark needs it and kept for the others:
/// generating and decoding 300k pods takes seconds.
struct Size {
    label: &'static str,
    shape: Shape,
    /// Whether to decode YAML too. Not at 300k: about 50 s per iteration on two cores (another
    /// build running), and criterion takes at least 11 (warm-up and 10 samples), which alone is
    /// half of the suite's 20 minutes.
    yaml: bool,
    cluster: OnceLock<Cluster>,
}

struct Cluster {
    json: String,
    yaml: OnceLock<String>,
    snapshot: Snapshot,
}

static SIZES: [Size; 4] = [
    Size::new("1.5k", 50, 1_500, 5, true),
    Size::new("15k", 500, 15_000, 10, true),
    Size::new("150k", 5_000, 150_000, 100, true),
    Size::new("300k", 10_000, 300_000, 100, false),
];

impl Size {
    const fn new(label: &'static str, nodes: usize, pods: usize, hosts: usize, yaml: bool) -> Size {
        Size {
            label,
            shape: Shape {
                nodes,
                pods,
                hosts,
                seed: 1,
                violation_percent: 5,
                controllers: false,
                hosts_from: HostsFrom::Inventory,
                sites: 0,
            },
            yaml,
            cluster: OnceLock::new(),
        }
    }

    fn cluster(&self) -> &Cluster {
        self.cluster.get_or_init(|| {
            let json = cluster::text(&self.shape, cluster::Format::Json);
            let snapshot = snapshot::from_str(&json, now()).expect("a valid snapshot");
            Cluster {
                json,
                yaml: OnceLock::new(),
                snapshot,
            }
        })
    }

    /// Generated again rather than kept from the first time: most runs never need it.
    fn yaml(&self) -> &str {
        self.cluster()
            .yaml
            .get_or_init(|| cluster::text(&self.shape, cluster::Format::Yaml))
    }

    fn is_large(&self) -> bool {
        self.shape.pods > 20_000
    }
}

/// A fixed instant after every generated pod started, so that pod ages, and with them the
/// plan, do not depend on the day the benchmarks run.
fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-12-01T00:00:00Z")
        .expect("a valid instant")
        .to_utc()
}

/// The sizes to run: `BENCH_SIZES`, else 1.5k in criterion's test mode and all of them
/// otherwise.
fn sizes() -> Vec<&'static Size> {
    match std::env::var("BENCH_SIZES") {
        Ok(list) => list
            .split(',')
            .map(|label| {
                SIZES
                    .iter()
                    .find(|size| size.label == label.trim())
                    .unwrap_or_else(|| panic!("BENCH_SIZES: no size {label:?}"))
            })
            .collect(),
        Err(_) if test_mode() => vec![&SIZES[0]],
        Err(_) => SIZES.iter().collect(),
    }
}

/// Criterion's own rule (`Criterion::configure_from_args`), which it does not expose: without
/// `--bench` (`cargo test`) or with `--test`, each benchmark runs once, unmeasured.
fn test_mode() -> bool {
    let has = |flag: &str| std::env::args().any(|arg| arg == flag);
    has("--test") || !has("--bench")
}

fn policy(deschedule: &[PluginKind], balance: &[PluginKind]) -> Policy {
    let names = |plugins: &[PluginKind]| plugins.iter().map(|p| p.as_str()).collect::<Vec<_>>();
    let text = format!(
        "apiVersion: vsphere-descheduler.io/v1alpha1\n\
         kind: DeschedulerPolicy\n\
         clusterName: bench\n\
         profiles:\n\
         - name: {PROFILE}\n  \
           plugins:\n    \
             deschedule: {{enabled: [{}]}}\n    \
             balance: {{enabled: [{}]}}\n",
        names(deschedule).join(", "),
        names(balance).join(", "),
    );
    policy::load_str("bench.yaml", &text)
        .expect("a valid policy")
        .policy
}

/// The policy of BENCHMARKS.md: all three strategies in one profile.
fn full_policy() -> Policy {
    policy(&[ANTI_AFFINITY], &[SPREAD, DUPLICATES])
}

/// A policy enabling one strategy, where upstream files it.
fn single_policy(plugin: PluginKind) -> Policy {
    if plugin == ANTI_AFFINITY {
        policy(&[plugin], &[])
    } else {
        policy(&[], &[plugin])
    }
}

/// Per-size settings, with 10 samples everywhere (`config`). From 150k an iteration takes up to
/// seconds: criterion then runs one per sample, and the whole suite takes about 20 minutes on
/// two cores.
fn configure(group: &mut BenchmarkGroup<'_, WallTime>, size: &Size) {
    group.throughput(Throughput::Elements(size.shape.pods as u64));
    if size.is_large() {
        group
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(10));
    } else {
        group
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(3));
    }
}

fn decode(c: &mut Criterion) {
    let mut group = c.benchmark_group("decode");
    for size in sizes() {
        configure(&mut group, size);
        group.bench_function(BenchmarkId::new("json", size.label), |b| {
            let text = &size.cluster().json;
            b.iter_with_large_drop(|| snapshot::from_str(text, now()).expect("a valid snapshot"));
        });
        if size.yaml {
            group.bench_function(BenchmarkId::new("yaml", size.label), |b| {
                let text = size.yaml();
                b.iter_with_large_drop(|| {
                    snapshot::from_str(text, now()).expect("a valid snapshot")
                });
            });
        }
    }
    group.finish();
}

/// A group with one benchmark per size, each given that size's decoded snapshot.
fn per_size(c: &mut Criterion, name: &str, mut bench: impl FnMut(&mut Bencher<'_>, &Snapshot)) {
    let mut group = c.benchmark_group(name);
    for size in sizes() {
        configure(&mut group, size);
        group.bench_function(BenchmarkId::from_parameter(size.label), |b| {
            bench(b, &size.cluster().snapshot)
        });
    }
    group.finish();
}

fn mapping(c: &mut Criterion) {
    per_size(c, "mapping", |b, snapshot| {
        b.iter(|| phases::map_nodes(snapshot))
    });
}

fn prepare(c: &mut Criterion) {
    let policy = full_policy();
    per_size(c, "prepare", |b, snapshot| {
        b.iter_with_large_drop(|| Phases::new(snapshot, &policy))
    });
}

fn strategies(c: &mut Criterion) {
    let mut group = c.benchmark_group("strategy");
    for (name, plugin) in STRATEGIES {
        let policy = single_policy(plugin);
        for size in sizes() {
            configure(&mut group, size);
            group.bench_function(BenchmarkId::new(name, size.label), |b| {
                let snapshot = &size.cluster().snapshot;
                b.iter_batched(
                    || Phases::new(snapshot, &policy),
                    |mut state| {
                        state.run_strategy(PROFILE, plugin);
                        state
                    },
                    BatchSize::LargeInput,
                );
            });
        }
    }
    group.finish();
}

fn feasibility(c: &mut Criterion) {
    let policy = full_policy();
    per_size(c, "feasibility", |b, snapshot| {
        let state = Phases::new(snapshot, &policy);
        b.iter(|| state.feasible(100));
    });
}

fn drs(c: &mut Criterion) {
    let policy = full_policy();
    per_size(c, "drs", |b, snapshot| {
        // As in `plan()`: rules for the placement the strategies leave.
        b.iter_batched(
            || {
                let mut state = Phases::new(snapshot, &policy);
                state.run_strategies();
                state
            },
            Phases::drs_rules,
            BatchSize::LargeInput,
        );
    });
}

fn plan(c: &mut Criterion) {
    let policy = full_policy();
    per_size(c, "plan", |b, snapshot| {
        b.iter(|| vsphere_descheduler::plan::plan(snapshot, &policy))
    });
}

fn config() -> Criterion {
    Criterion::default().sample_size(10)
}

criterion_group! {
    name = benches;
    config = config();
    targets = decode, mapping, prepare, strategies, feasibility, drs, plan
}
criterion_main!(benches);
