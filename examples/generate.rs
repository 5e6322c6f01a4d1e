#![allow(clippy::print_stderr)] // a developer tool: its one line of output is a log
//! Generate a synthetic, production-shaped snapshot for benchmarks: nodes spread over ESXi
//! hosts, 10% of node VMs moved by DRS since they were labelled, and workloads of 2–50
//! replicas with a mix of host anti-affinity, host and zone spread, and no constraint, some
//! with PodDisruptionBudgets. Deterministic for a given seed.
//!
//! `cargo run --release --example generate -- --nodes 5000 --pods 150000 --hosts 100 -o cluster.json`

use std::io::Write;

use serde_json::{Value, json};

struct Rng(u64);

impl Rng {
    /// xorshift64*: tiny, fast, reproducible; statistical quality is irrelevant here.
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

struct Options {
    nodes: usize,
    pods: usize,
    hosts: usize,
    seed: u64,
    violation_percent: usize,
    output: String,
    yaml: bool,
}

fn parse_options() -> Options {
    let mut options = Options {
        nodes: 500,
        pods: 15_000,
        hosts: 10,
        seed: 1,
        violation_percent: 5,
        output: "cluster.json".to_string(),
        yaml: false,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let value = args.get(i + 1).cloned().unwrap_or_default();
        let number = || value.parse::<usize>().expect("a number");
        match args[i].as_str() {
            "--nodes" => options.nodes = number(),
            "--pods" => options.pods = number(),
            "--hosts" => options.hosts = number(),
            "--seed" => options.seed = number() as u64,
            "--violations" => options.violation_percent = number(),
            "-o" | "--output" => options.output = value,
            "--yaml" => {
                options.yaml = true;
                i -= 1;
            }
            other => panic!("unknown argument {other}"),
        }
        i += 2;
    }
    options
}

fn uuid(kind: u64, index: usize) -> String {
    format!(
        "42{kind:06x}-{:04x}-{:04x}-8000-{index:012x}",
        index >> 16 & 0xffff,
        index & 0xffff
    )
}

fn main() {
    let o = parse_options();
    let mut rng = Rng(o.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let host_name = |h: usize| format!("esxi-{h:03}.dc1.example.com");
    let zones = 3;

    // Nodes: node i runs on host i % H; 10% have been moved by DRS since labelling.
    let mut items: Vec<Value> = Vec::with_capacity(o.nodes + o.pods + o.pods / 20);
    let mut vms = Vec::with_capacity(o.nodes);
    let mut node_host = Vec::with_capacity(o.nodes);
    for n in 0..o.nodes {
        let labelled = n % o.hosts;
        let actual = if rng.chance(10) {
            rng.below(o.hosts)
        } else {
            labelled
        };
        node_host.push(actual);
        let name = format!("node-{n:05}");
        items.push(json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "topology.kubernetes.io/zone": format!("zone-{}", labelled % zones),
                "vsphere-descheduler.io/host": host_name(labelled),
            }},
            "spec": {"providerID": format!("vsphere://{}", uuid(1, n))},
            "status": {
                "allocatable": {"cpu": "32", "memory": "128Gi", "pods": "250"},
                "conditions": [{"type": "Ready", "status": "True"}],
                "nodeInfo": {"systemUUID": uuid(1, n).to_uppercase()}
            }
        }));
        vms.push(json!({"name": name, "uuid": uuid(1, n), "host": host_name(actual), "powerState": "poweredOn"}));
    }

    // Workloads until the pod count is reached.
    let namespaces = 200;
    let mut made = 0;
    let mut workload = 0;
    while made < o.pods {
        let mut replicas = (2 + rng.below(49)).min(o.pods - made).max(1);
        let namespace = format!("team-{:03}", workload % namespaces);
        let app = format!("app-{workload:05}");
        let statefulset = rng.chance(20);
        let kind_roll = rng.below(100);
        let (anti_affinity, spread_key) = match kind_roll {
            0..25 => (true, None),
            25..50 => (false, Some("vsphere-descheduler.io/host")),
            50..60 => (false, Some("topology.kubernetes.io/zone")),
            _ => (false, None),
        };
        if anti_affinity {
            // Nobody asks for one replica per host with more replicas than hosts.
            replicas = replicas.min(o.hosts.saturating_sub(1).max(1));
        }
        let hash = format!("{:010x}", rng.next() & 0xff_ffff_ffff);
        let violating = rng.chance(o.violation_percent);
        for r in 0..replicas {
            // Constrained workloads start out spread (one replica per host, round robin), as
            // the scheduler placed them; a violating one has its last replica next to its first.
            // Unconstrained ones land anywhere.
            let spread_out = anti_affinity || spread_key.is_some();
            let node = if violating && r == replicas - 1 && r > 0 {
                workload * 7 % o.hosts + o.hosts * rng.below((o.nodes / o.hosts).max(1))
            } else if spread_out {
                let host = (workload * 7 + r) % o.hosts;
                host + o.hosts * rng.below((o.nodes / o.hosts).max(1))
            } else {
                rng.below(o.nodes)
            }
            .min(o.nodes - 1);
            let name = if statefulset {
                format!("{app}-{r}")
            } else {
                format!("{app}-{hash}-{r:05x}")
            };
            let owner = if statefulset {
                json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "name": app, "uid": format!("{app}-uid"), "controller": true})
            } else {
                json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{app}-{hash}"), "uid": format!("{app}-rs-uid"), "controller": true})
            };
            let mut spec = json!({
                "nodeName": format!("node-{node:05}"),
                "priority": 0,
                "containers": [{"name": "main", "image": format!("registry.example/{app}:1"),
                                "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}}]
            });
            if anti_affinity {
                spec["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "vsphere-descheduler.io/host"}]}});
            }
            if let Some(key) = spread_key {
                spec["topologySpreadConstraints"] = json!([{"maxSkew": 1, "topologyKey": key,
                    "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": app}}}]);
            }
            let mut labels = json!({"app": app});
            if !statefulset {
                labels["pod-template-hash"] = json!(hash);
            }
            items.push(json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": namespace, "labels": labels,
                             "uid": format!("{app}-{r}-uid"),
                             "creationTimestamp": format!("2026-11-{:02}T{:02}:00:00Z", 1 + r % 20, r % 24),
                             "ownerReferences": [owner]},
                "spec": spec,
                "status": {"phase": "Running", "qosClass": "Burstable", "startTime": "2026-11-01T00:00:00Z"}
            }));
        }
        if rng.chance(30) {
            items.push(json!({
                "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": {"name": app, "namespace": namespace},
                "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": app}}},
                "status": {"disruptionsAllowed": 1, "currentHealthy": replicas, "desiredHealthy": replicas - 1, "expectedPods": replicas}
            }));
        }
        made += replicas;
        workload += 1;
    }

    let hosts: Vec<Value> = (0..o.hosts)
        .map(|h| json!({"name": host_name(h), "connectionState": "connected", "inMaintenanceMode": false}))
        .collect();
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
    let inventory = json!({
        "apiVersion": "vsphere-descheduler.io/v1alpha1", "kind": "VSphereInventory",
        "clusters": [{"name": "cluster-1", "datacenter": "dc1",
                      "drs": {"enabled": true, "defaultVmBehavior": "fullyAutomated"},
                      "hosts": hosts, "vms": vms, "rules": []}]
    });
    let file = std::fs::File::create(&o.output).expect("create the output file");
    let mut out = std::io::BufWriter::new(file);
    if o.yaml {
        for document in [&list, &inventory] {
            writeln!(out, "---").expect("write");
            write_yaml(&mut out, document, 0, false).expect("write");
        }
    } else {
        serde_json::to_writer(&mut out, &list).expect("write");
        writeln!(out).expect("write");
        serde_json::to_writer(&mut out, &inventory).expect("write");
        writeln!(out).expect("write");
    }
    out.flush().expect("flush");
    eprintln!(
        "{} nodes, {made} pods, {workload} workloads, {} hosts -> {}",
        o.nodes, o.hosts, o.output
    );
}

/// Block-style YAML of a JSON value (strings quoted as JSON, which YAML accepts).
fn write_yaml(
    out: &mut impl Write,
    value: &Value,
    indent: usize,
    in_list: bool,
) -> std::io::Result<()> {
    let pad = " ".repeat(indent);
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (i, (key, v)) in map.iter().enumerate() {
                let lead = if in_list && i == 0 {
                    String::new()
                } else {
                    pad.clone()
                };
                match v {
                    Value::Object(m) if !m.is_empty() => {
                        writeln!(out, "{lead}{key}:")?;
                        write_yaml(out, v, indent + 2, false)?;
                    }
                    Value::Array(a) if !a.is_empty() => {
                        writeln!(out, "{lead}{key}:")?;
                        write_yaml(out, v, indent, false)?;
                    }
                    scalar => writeln!(out, "{lead}{key}: {scalar}")?,
                }
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for item in items {
                write!(out, "{pad}- ")?;
                match item {
                    Value::Object(m) if !m.is_empty() => write_yaml(out, item, indent + 2, true)?,
                    scalar => writeln!(out, "{scalar}")?,
                }
            }
        }
        scalar => writeln!(out, "{pad}{scalar}")?,
    }
    Ok(())
}
