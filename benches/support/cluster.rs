//! A synthetic, production-shaped cluster for benchmarks: nodes spread over ESXi hosts, 10% of
//! node VMs moved by DRS since they were labelled, and Deployments and StatefulSets of 2–50
//! replicas: 25% with required host anti-affinity (capped at hosts − 1 replicas), 25% with host
//! topology spread, 10% with zone spread, the rest unconstrained; 30% with a
//! PodDisruptionBudget; `violation_percent` of workloads with a replica placed next to another;
//! with `controllers`, the Deployments, ReplicaSets and StatefulSets themselves.
//! Deterministic for a given shape and seed.
//!
//! Shared by `examples/generate.rs` (files) and `benches/plan.rs` (in memory), hence plain
//! `#[path]`-included source rather than a crate.

use std::fmt::{self, Write};

use serde_json::{Value, json};

/// The size and make-up of a generated cluster.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub nodes: usize,
    pub pods: usize,
    pub hosts: usize,
    pub seed: u64,
    /// Share of workloads, in percent, with a replica moved next to another one.
    pub violation_percent: usize,
    /// Also the pods' controllers (each Deployment with its ReplicaSet, each StatefulSet), which
    /// the fake API server's disruption controller reads replicas from; planning ignores them.
    pub controllers: bool,
}

impl Default for Shape {
    fn default() -> Shape {
        Shape {
            nodes: 500,
            pods: 15_000,
            hosts: 10,
            seed: 1,
            violation_percent: 5,
            controllers: false,
        }
    }
}

/// A generated cluster: a Kubernetes `List` and a `VSphereInventory`, the two documents of a
/// snapshot file.
pub struct Generated {
    shape: Shape,
    workloads: usize,
    list: Value,
    inventory: Value,
}

impl Generated {
    /// Snapshot text as JSON: one document per line.
    pub fn json(&self) -> String {
        let mut text = String::new();
        for document in [&self.list, &self.inventory] {
            text.push_str(&document.to_string());
            text.push('\n');
        }
        text
    }

    /// Snapshot text as YAML: block style, two documents.
    pub fn yaml(&self) -> String {
        let mut text = String::new();
        for document in [&self.list, &self.inventory] {
            text.push_str("---\n");
            write_yaml(&mut text, document, 0, false).expect("writing to a String cannot fail");
        }
        text
    }
}

impl fmt::Display for Generated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} nodes, {} pods, {} workloads, {} hosts",
            self.shape.nodes, self.shape.pods, self.workloads, self.shape.hosts
        )
    }
}

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

fn uuid(kind: u64, index: usize) -> String {
    format!(
        "42{kind:06x}-{:04x}-{:04x}-8000-{index:012x}",
        index >> 16 & 0xffff,
        index & 0xffff
    )
}

/// Generate the cluster of `shape`.
pub fn generate(shape: &Shape) -> Generated {
    let mut rng = Rng(shape.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let host_name = |h: usize| format!("esxi-{h:03}.dc1.example.com");
    let zones = 3;

    // Nodes: node i runs on host i % H; 10% have been moved by DRS since labelling.
    let mut items: Vec<Value> = Vec::with_capacity(shape.nodes + shape.pods + shape.pods / 20);
    let mut vms = Vec::with_capacity(shape.nodes);
    for n in 0..shape.nodes {
        let labelled = n % shape.hosts;
        let actual = if rng.chance(10) {
            rng.below(shape.hosts)
        } else {
            labelled
        };
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
    while made < shape.pods {
        let mut replicas = (2 + rng.below(49)).min(shape.pods - made).max(1);
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
            replicas = replicas.min(shape.hosts.saturating_sub(1).max(1));
        }
        let hash = format!("{:010x}", rng.next() & 0xff_ffff_ffff);
        let violating = rng.chance(shape.violation_percent);
        for r in 0..replicas {
            // Constrained workloads start out spread (one replica per host, round robin), as
            // the scheduler placed them; a violating one has its last replica next to its first.
            // Unconstrained ones land anywhere.
            let spread_out = anti_affinity || spread_key.is_some();
            let node = if violating && r == replicas - 1 && r > 0 {
                workload * 7 % shape.hosts
                    + shape.hosts * rng.below((shape.nodes / shape.hosts).max(1))
            } else if spread_out {
                let host = (workload * 7 + r) % shape.hosts;
                host + shape.hosts * rng.below((shape.nodes / shape.hosts).max(1))
            } else {
                rng.below(shape.nodes)
            }
            .min(shape.nodes - 1);
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
                "status": {"phase": "Running", "qosClass": "Burstable", "startTime": "2026-11-01T00:00:00Z",
                           "conditions": [{"type": "Ready", "status": "True"}]}
            }));
        }
        if shape.controllers && statefulset {
            items.push(json!({
                "apiVersion": "apps/v1", "kind": "StatefulSet",
                "metadata": {"name": app, "namespace": namespace, "uid": format!("{app}-uid")},
                "spec": {"replicas": replicas}
            }));
        } else if shape.controllers {
            items.push(json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": app, "namespace": namespace, "uid": format!("{app}-deploy-uid")},
                "spec": {"replicas": replicas}
            }));
            items.push(json!({
                "apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": format!("{app}-{hash}"), "namespace": namespace,
                             "uid": format!("{app}-rs-uid"),
                             "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": app,
                                                  "uid": format!("{app}-deploy-uid"), "controller": true}]},
                "spec": {"replicas": replicas}
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

    let hosts: Vec<Value> = (0..shape.hosts)
        .map(|h| json!({"name": host_name(h), "connectionState": "connected", "inMaintenanceMode": false}))
        .collect();
    Generated {
        shape: *shape,
        workloads: workload,
        list: json!({"apiVersion": "v1", "kind": "List", "items": items}),
        inventory: json!({
            "apiVersion": "vsphere-descheduler.io/v1alpha1", "kind": "VSphereInventory",
            "clusters": [{"name": "cluster-1", "datacenter": "dc1",
                          "drs": {"enabled": true, "defaultVmBehavior": "fullyAutomated"},
                          "hosts": hosts, "vms": vms, "rules": []}]
        }),
    }
}

/// Block-style YAML of a JSON value (strings quoted as JSON, which YAML accepts).
fn write_yaml(out: &mut String, value: &Value, indent: usize, in_list: bool) -> fmt::Result {
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
