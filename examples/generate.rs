#![allow(clippy::print_stderr)] // a developer tool: its one line of output is a log
//! Write a synthetic, production-shaped snapshot file for benchmarks; the cluster's make-up is
//! described in `benches/support/cluster.rs`, which `cargo bench` uses directly. Objects are
//! written as they are made, so a million pods on 33,000 nodes (an 800 MB file) take about
//! 65 MB and a few seconds in a release build, where the whole cluster as a tree grew past 20 GB.
//!
//! `cargo run --release --example generate -- --nodes 5000 --pods 150000 --hosts 100 -o cluster.json`
//!
//! Flags: `--nodes`, `--pods`, `--hosts`, `--seed`, `--violations` (percent of workloads),
//! `--yaml`, `--vm-operator` (the hosts as a VKS Supervisor's VirtualMachines instead of a
//! `VSphereInventory`), `--sites N` (the hosts in N DRS host groups `site-1`…, the nodes
//! labelled with their site, the zone-spread workloads spreading over sites instead), `-o`/`--output`, and `--history N FILE`: also an eviction history of
//! `N` evictions of the cluster's workloads, written to `FILE` as the history ConfigMap a run
//! writes, their times spread evenly over the 12 hours before now (so about one in 72 falls
//! within a 10-minute pacing window), each workload in turn; a snapshot file to give `plan`
//! beside the cluster's.

// The whole text in memory (`cluster::text`) is for the benchmarks; this writes a file.
#[allow(dead_code)]
#[path = "../benches/support/cluster.rs"]
mod cluster;

use std::fs::File;
use std::io::{BufWriter, Write};

struct Options {
    shape: cluster::Shape,
    output: String,
    format: cluster::Format,
    /// How many evictions, and the file of the history holding them.
    history: Option<(usize, String)>,
}

fn parse_options() -> Options {
    let mut options = Options {
        shape: cluster::Shape::default(),
        output: "cluster.json".to_string(),
        format: cluster::Format::Json,
        history: None,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let value = args.get(i + 1).cloned().unwrap_or_default();
        let number = || value.parse::<usize>().expect("a number");
        match args[i].as_str() {
            "--nodes" => options.shape.nodes = number(),
            "--pods" => options.shape.pods = number(),
            "--hosts" => options.shape.hosts = number(),
            "--seed" => options.shape.seed = number() as u64,
            "--violations" => options.shape.violation_percent = number(),
            "-o" | "--output" => options.output = value,
            "--yaml" => {
                options.format = cluster::Format::Yaml;
                i -= 1;
            }
            "--history" => {
                let file = args.get(i + 2).cloned().expect("--history N FILE");
                options.history = Some((number(), file));
                i += 1;
            }
            "--sites" => options.shape.sites = number(),
            "--vm-operator" => {
                options.shape.hosts_from = cluster::HostsFrom::VmOperator;
                i -= 1;
            }
            other => panic!("unknown argument {other}"),
        }
        i += 2;
    }
    options
}

fn main() {
    let options = parse_options();
    let file = File::create(&options.output).expect("create the output file");
    // Objects arrive a few hundred bytes at a time; a large buffer keeps writes to the file few.
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let summary =
        cluster::write(&options.shape, options.format, &mut out).expect("write the output file");
    out.flush().expect("write the output file");
    eprintln!("{summary} -> {}", options.output);
    if let Some((evictions, file)) = &options.history {
        write_history(&summary.workloads, *evictions, file);
        eprintln!("an eviction history of {evictions} evictions -> {file}");
    }
}

/// The history ConfigMap of `evictions` evictions of `workloads`, each in turn, spread over the
/// last 12 hours, the newest now.
fn write_history(workloads: &[String], evictions: usize, file: &str) {
    use vsphere_descheduler::snapshot::history::{self, PastEviction};
    let now = chrono::Utc::now();
    let spread = chrono::TimeDelta::hours(12);
    let entries: Vec<PastEviction> = (0..evictions)
        .map(|i| {
            let workload = &workloads[i % workloads.len()];
            let ago = spread * i32::try_from(i).expect("a count")
                / i32::try_from(evictions).expect("a count");
            let name = workload.rsplit('/').next().expect("a name");
            PastEviction::new(
                now - ago,
                workload,
                &format!("{name}-{i:05x}"),
                "RemovePodsViolatingInterPodAntiAffinity",
            )
        })
        .collect();
    let compact = history::encode(&entries, now);
    let document = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": history::config_map_name("vsphere-descheduler"),
                     "namespace": "kube-system",
                     "annotations": {history::ANNOTATION: compact.marker}},
        "data": compact.data
    });
    std::fs::write(file, serde_json::to_string(&document).expect("JSON"))
        .expect("write the history file");
}
