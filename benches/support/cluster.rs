//! A synthetic, production-shaped cluster for benchmarks: nodes spread over ESXi hosts, 10% of
//! node VMs moved by DRS since they were labelled, and Deployments and StatefulSets of 2–50
//! replicas: 25% with required host anti-affinity (capped at hosts − 1 replicas), 25% with host
//! topology spread, 10% with zone spread, the rest unconstrained; 30% with a
//! PodDisruptionBudget; `violation_percent` of workloads with a replica placed next to another;
//! with `controllers`, the Deployments, ReplicaSets and StatefulSets themselves.
//! Deterministic for a given shape and seed.
//!
//! Each object is written as soon as it is made, never the whole cluster held as a tree: a
//! million pods grew past 20 GB that way. Only the node VMs' hosts wait for the inventory.
//!
//! Shared by `examples/generate.rs` (files) and `benches/plan.rs` (in memory), hence plain
//! `#[path]`-included source rather than a crate.

use std::fmt;
use std::io;

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
    /// Where the node VMs' hosts are written: a `VSphereInventory` (as vCenter gives them), or
    /// VM Operator's VirtualMachines and one VirtualMachineSetResourcePolicy (as a VKS
    /// Supervisor gives them).
    pub hosts_from: HostsFrom,
    /// Sites (0: none): the hosts split in that many DRS host groups `site-1`, `site-2`, …
    /// of consecutive hosts, each node labelled with its host's site, and the workloads that
    /// would spread over zones spreading over the site label instead.
    pub sites: usize,
}

/// The document kind that holds the node VMs' hosts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HostsFrom {
    #[default]
    Inventory,
    /// Made by `examples/generate --vm-operator` (scripts/bench); the other targets that
    /// include this file only plan vCenter's shape.
    #[allow(dead_code)]
    VmOperator,
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
            hosts_from: HostsFrom::Inventory,
            sites: 0,
        }
    }
}

/// How a snapshot file is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// One document per line.
    Json,
    /// Block style, two documents.
    Yaml,
}

/// What was generated, for the line a tool logs about it.
pub struct Summary {
    shape: Shape,
    /// Each workload as the report names it (`namespace/Kind/name`), in the order made.
    pub workloads: Vec<String>,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} nodes, {} pods, {} workloads, {} hosts",
            self.shape.nodes,
            self.shape.pods,
            self.workloads.len(),
            self.shape.hosts
        )
    }
}

/// The snapshot text of the cluster of `shape`, held whole, for sizes that fit in memory.
pub fn text(shape: &Shape, format: Format) -> String {
    let mut text = Vec::new();
    write(shape, format, &mut text).expect("writing to memory cannot fail");
    String::from_utf8(text).expect("the generator writes only UTF-8")
}

/// Write the cluster of `shape` as a snapshot file: a Kubernetes `List`, then a
/// `VSphereInventory`.
pub fn write(shape: &Shape, format: Format, out: impl io::Write) -> io::Result<Summary> {
    let mut rng = Rng(shape.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut list = List::begin(out, format)?;
    let vm_hosts = nodes(shape, &mut rng, &mut list)?;
    let workloads = workloads(shape, &mut rng, &mut list)?;
    let mut out = list.end()?;
    let hosts = match shape.hosts_from {
        HostsFrom::Inventory => inventory(shape, &vm_hosts),
        HostsFrom::VmOperator => vm_operator(&vm_hosts),
    };
    write_document(&mut out, &hosts, format)?;
    Ok(Summary {
        shape: *shape,
        workloads,
    })
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

const ZONES: usize = 3;
const NAMESPACES: usize = 200;

fn uuid(kind: u64, index: usize) -> String {
    format!(
        "42{kind:06x}-{:04x}-{:04x}-8000-{index:012x}",
        index >> 16 & 0xffff,
        index & 0xffff
    )
}

fn host_name(host: usize) -> String {
    format!("esxi-{host:03}.dc1.example.com")
}

fn node_name(node: usize) -> String {
    format!("node-{node:05}")
}

/// The nodes, each written as it is made: node i is labelled with host i % H, and 10% have been
/// moved by DRS since. Returns the host each node's VM runs on, for the inventory.
fn nodes<W: io::Write>(shape: &Shape, rng: &mut Rng, list: &mut List<W>) -> io::Result<Vec<usize>> {
    let mut vm_hosts = Vec::with_capacity(shape.nodes);
    for n in 0..shape.nodes {
        let labelled = n % shape.hosts;
        let actual = if rng.chance(10) {
            rng.below(shape.hosts)
        } else {
            labelled
        };
        list.push(&node(shape, n, labelled))?;
        vm_hosts.push(actual);
    }
    Ok(vm_hosts)
}

/// The site label every node carries when the cluster has sites.
const SITE_LABEL: &str = "vsphere-descheduler.io/site";

/// The name of host `host`'s site: consecutive hosts share one.
fn site_name(shape: &Shape, host: usize) -> String {
    format!("site-{}", host * shape.sites / shape.hosts + 1)
}

fn node(shape: &Shape, n: usize, labelled_host: usize) -> Value {
    let name = node_name(n);
    let mut labels = json!({
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "topology.kubernetes.io/zone": format!("zone-{}", labelled_host % ZONES),
        "vsphere-descheduler.io/host": host_name(labelled_host),
    });
    if shape.sites > 0 {
        labels[SITE_LABEL] = json!(site_name(shape, labelled_host));
    }
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"providerID": format!("vsphere://{}", uuid(1, n))},
        "status": {
            "allocatable": {"cpu": "32", "memory": "128Gi", "pods": "250"},
            "conditions": [{"type": "Ready", "status": "True"}],
            "nodeInfo": {"systemUUID": uuid(1, n).to_uppercase()}
        }
    })
}

/// Workloads until the pod count is reached, each one's pods, controllers and budget written as
/// they are made. Returns the workloads, as the report names them.
fn workloads<W: io::Write>(
    shape: &Shape,
    rng: &mut Rng,
    list: &mut List<W>,
) -> io::Result<Vec<String>> {
    let mut made = 0;
    let mut index = 0;
    let mut names = Vec::new();
    while made < shape.pods {
        let workload = Workload::draw(index, shape.pods - made, shape, rng);
        for r in 0..workload.replicas {
            let node = workload.node(r, shape, rng);
            list.push(&workload.pod(r, node))?;
        }
        if shape.controllers {
            for controller in workload.controllers() {
                list.push(&controller)?;
            }
        }
        if rng.chance(30) {
            list.push(&workload.budget())?;
        }
        made += workload.replicas;
        index += 1;
        let kind = if workload.statefulset {
            "StatefulSet"
        } else {
            "Deployment"
        };
        names.push(format!("{}/{kind}/{}", workload.namespace, workload.app));
    }
    Ok(names)
}

/// A Deployment or StatefulSet: what its pods, controllers and budget are made of.
struct Workload {
    index: usize,
    namespace: String,
    app: String,
    /// The ReplicaSet's pod-template-hash (unused by a StatefulSet, but drawn all the same).
    hash: String,
    replicas: usize,
    statefulset: bool,
    anti_affinity: bool,
    spread_key: Option<&'static str>,
    /// Whether its last replica is placed next to its first.
    violating: bool,
}

impl Workload {
    /// The next workload, with at most `remaining` replicas. The draws' order is the cluster's
    /// identity for a seed: changing it changes every benchmark's cluster.
    fn draw(index: usize, remaining: usize, shape: &Shape, rng: &mut Rng) -> Workload {
        let mut replicas = (2 + rng.below(49)).min(remaining).max(1);
        let statefulset = rng.chance(20);
        let (anti_affinity, spread_key) = match rng.below(100) {
            0..25 => (true, None),
            25..50 => (false, Some("vsphere-descheduler.io/host")),
            50..60 if shape.sites > 0 => (false, Some(SITE_LABEL)),
            50..60 => (false, Some("topology.kubernetes.io/zone")),
            _ => (false, None),
        };
        if anti_affinity {
            // Nobody asks for one replica per host with more replicas than hosts.
            replicas = replicas.min(shape.hosts.saturating_sub(1).max(1));
        }
        let hash = format!("{:010x}", rng.next() & 0xff_ffff_ffff);
        let violating = rng.chance(shape.violation_percent);
        Workload {
            index,
            namespace: format!("team-{:03}", index % NAMESPACES),
            app: format!("app-{index:05}"),
            hash,
            replicas,
            statefulset,
            anti_affinity,
            spread_key,
            violating,
        }
    }

    /// The node replica `r` runs on. Constrained workloads start out spread (one replica per
    /// host, round robin), as the scheduler placed them; a violating one has its last replica
    /// next to its first. Unconstrained ones land anywhere.
    fn node(&self, r: usize, shape: &Shape, rng: &mut Rng) -> usize {
        let per_host = (shape.nodes / shape.hosts).max(1);
        let node = if self.violating && r == self.replicas - 1 && r > 0 {
            self.index * 7 % shape.hosts + shape.hosts * rng.below(per_host)
        } else if self.anti_affinity || self.spread_key.is_some() {
            let host = (self.index * 7 + r) % shape.hosts;
            host + shape.hosts * rng.below(per_host)
        } else {
            rng.below(shape.nodes)
        };
        node.min(shape.nodes - 1)
    }

    fn pod(&self, r: usize, node: usize) -> Value {
        let app = &self.app;
        let (name, owner) = if self.statefulset {
            let owner = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "name": app,
                               "uid": format!("{app}-uid"), "controller": true});
            (format!("{app}-{r}"), owner)
        } else {
            let owner = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": self.replica_set(),
                               "uid": format!("{app}-rs-uid"), "controller": true});
            (format!("{}-{r:05x}", self.replica_set()), owner)
        };
        let mut labels = json!({"app": app});
        if !self.statefulset {
            labels["pod-template-hash"] = json!(self.hash);
        }
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": self.namespace, "labels": labels,
                         "uid": format!("{app}-{r}-uid"),
                         "creationTimestamp": format!("2026-11-{:02}T{:02}:00:00Z", 1 + r % 20, r % 24),
                         "ownerReferences": [owner]},
            "spec": self.pod_spec(node),
            "status": {"phase": "Running", "qosClass": "Burstable", "startTime": "2026-11-01T00:00:00Z",
                       "conditions": [{"type": "Ready", "status": "True"}]}
        })
    }

    fn pod_spec(&self, node: usize) -> Value {
        let app = &self.app;
        let mut spec = json!({
            "nodeName": node_name(node),
            "priority": 0,
            "containers": [{"name": "main", "image": format!("registry.example/{app}:1"),
                            "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}}]
        });
        if self.anti_affinity {
            spec["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "vsphere-descheduler.io/host"}]}});
        }
        if let Some(key) = self.spread_key {
            spec["topologySpreadConstraints"] = json!([{"maxSkew": 1, "topologyKey": key,
                "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": app}}}]);
        }
        spec
    }

    fn replica_set(&self) -> String {
        format!("{}-{}", self.app, self.hash)
    }

    /// The StatefulSet, or the Deployment and its ReplicaSet.
    fn controllers(&self) -> Vec<Value> {
        let (app, namespace, replicas) = (&self.app, &self.namespace, self.replicas);
        if self.statefulset {
            return vec![json!({
                "apiVersion": "apps/v1", "kind": "StatefulSet",
                "metadata": {"name": app, "namespace": namespace, "uid": format!("{app}-uid")},
                "spec": {"replicas": replicas}
            })];
        }
        vec![
            json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": app, "namespace": namespace, "uid": format!("{app}-deploy-uid")},
                "spec": {"replicas": replicas}
            }),
            json!({
                "apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": self.replica_set(), "namespace": namespace,
                             "uid": format!("{app}-rs-uid"),
                             "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": app,
                                                  "uid": format!("{app}-deploy-uid"), "controller": true}]},
                "spec": {"replicas": replicas}
            }),
        ]
    }

    fn budget(&self) -> Value {
        let (app, replicas) = (&self.app, self.replicas);
        json!({
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": app, "namespace": self.namespace},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": app}}},
            "status": {"disruptionsAllowed": 1, "currentHealthy": replicas, "desiredHealthy": replicas - 1, "expectedPods": replicas}
        })
    }
}

/// The inventory: one DRS cluster of all hosts, with each node's VM on the host it runs on.
fn inventory(shape: &Shape, vm_hosts: &[usize]) -> Value {
    let hosts: Vec<Value> = (0..shape.hosts)
        .map(|h| json!({"name": host_name(h), "connectionState": "connected", "inMaintenanceMode": false}))
        .collect();
    let vms: Vec<Value> = vm_hosts
        .iter()
        .enumerate()
        .map(|(n, &host)| json!({"name": node_name(n), "uuid": uuid(1, n), "host": host_name(host), "powerState": "poweredOn"}))
        .collect();
    let mut cluster = json!({"name": "cluster-1", "datacenter": "dc1",
                             "drs": {"enabled": true, "defaultVmBehavior": "fullyAutomated"},
                             "hosts": hosts, "vms": vms, "rules": []});
    if shape.sites > 0 {
        let groups: Vec<Value> = (1..=shape.sites)
            .map(|site| {
                let name = format!("site-{site}");
                let members: Vec<String> = (0..shape.hosts)
                    .filter(|&h| site_name(shape, h) == name)
                    .map(host_name)
                    .collect();
                json!({"name": name, "hosts": members})
            })
            .collect();
        cluster["hostGroups"] = json!(groups);
    }
    json!({
        "apiVersion": "vsphere-descheduler.io/v1alpha1", "kind": "VSphereInventory",
        "clusters": [cluster]
    })
}

/// The same hosts as VM Operator's v1alpha5 objects of one Supervisor namespace: each node's
/// VirtualMachine, all workers of one guest cluster in one cluster module.
fn vm_operator(vm_hosts: &[usize]) -> Value {
    let policy = "bench";
    let group = "bench-workers-0";
    let mut items: Vec<Value> = vm_hosts
        .iter()
        .enumerate()
        .map(|(n, &host)| {
            json!({
                "apiVersion": "vmoperator.vmware.com/v1alpha5", "kind": "VirtualMachine",
                "metadata": {"name": node_name(n), "namespace": "team-bench",
                             "labels": {"capv.vmware.com/cluster.name": policy},
                             "annotations": {"vsphere-cluster-module-group": group}},
                "spec": {"className": "best-effort-large", "reserved": {"resourcePolicyName": policy}},
                "status": {"nodeName": host_name(host), "biosUUID": uuid(1, n),
                           "uniqueID": format!("vm-{}", 1000 + n), "powerState": "PoweredOn",
                           "zone": "cluster-1"}
            })
        })
        .collect();
    items.push(json!({
        "apiVersion": "vmoperator.vmware.com/v1alpha5", "kind": "VirtualMachineSetResourcePolicy",
        "metadata": {"name": policy, "namespace": "team-bench"},
        "spec": {"clusterModuleGroups": [group]},
        "status": {"clustermodules": [{"groupName": group, "clusterMoID": "domain-c8",
                                        "moduleUUID": "52a1b2c3-d4e5-f607-1829-3a4b5c6d7e8f"}]}
    }));
    json!({"apiVersion": "v1", "kind": "List", "items": items})
}

/// The Kubernetes `List` document, written item by item. Its keys come in the order serde_json
/// writes a map's (sorted, as every other object here): `items` between `apiVersion` and `kind`.
struct List<W> {
    out: W,
    format: Format,
    items: usize,
}

impl<W: io::Write> List<W> {
    fn begin(mut out: W, format: Format) -> io::Result<List<W>> {
        match format {
            Format::Json => out.write_all(br#"{"apiVersion":"v1","items":["#)?,
            Format::Yaml => out.write_all(b"---\napiVersion: \"v1\"\n")?,
        }
        Ok(List {
            out,
            format,
            items: 0,
        })
    }

    fn push(&mut self, item: &Value) -> io::Result<()> {
        match self.format {
            Format::Json => {
                if self.items > 0 {
                    self.out.write_all(b",")?;
                }
                serde_json::to_writer(&mut self.out, item)?;
            }
            Format::Yaml => {
                // Only a list with items has the block form; `end` writes an empty one's.
                if self.items == 0 {
                    self.out.write_all(b"items:\n")?;
                }
                write_yaml_element(&mut self.out, item, 0)?;
            }
        }
        self.items += 1;
        Ok(())
    }

    /// Close the list, giving back the writer for the document after it.
    fn end(mut self) -> io::Result<W> {
        match self.format {
            Format::Json => self.out.write_all(b"],\"kind\":\"List\"}\n")?,
            Format::Yaml if self.items == 0 => {
                self.out.write_all(b"items: []\nkind: \"List\"\n")?
            }
            Format::Yaml => self.out.write_all(b"kind: \"List\"\n")?,
        }
        Ok(self.out)
    }
}

/// A whole document: JSON on one line, or YAML after its `---`.
fn write_document(out: &mut impl io::Write, document: &Value, format: Format) -> io::Result<()> {
    match format {
        Format::Json => {
            serde_json::to_writer(&mut *out, document)?;
            out.write_all(b"\n")
        }
        Format::Yaml => {
            out.write_all(b"---\n")?;
            write_yaml(out, document, 0, false)
        }
    }
}

/// Block-style YAML of a JSON value (strings quoted as JSON, which YAML accepts).
fn write_yaml<W: io::Write>(
    out: &mut W,
    value: &Value,
    indent: usize,
    in_list: bool,
) -> io::Result<()> {
    let pad = " ".repeat(indent);
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (i, (key, v)) in map.iter().enumerate() {
                let lead = if in_list && i == 0 { "" } else { pad.as_str() };
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
                write_yaml_element(out, item, indent)?;
            }
        }
        scalar => writeln!(out, "{pad}{scalar}")?,
    }
    Ok(())
}

/// One element of a block sequence, its `- ` at `indent`.
fn write_yaml_element<W: io::Write>(out: &mut W, item: &Value, indent: usize) -> io::Result<()> {
    write!(out, "{:indent$}- ", "")?;
    match item {
        Value::Object(m) if !m.is_empty() => write_yaml(out, item, indent + 2, true),
        scalar => writeln!(out, "{scalar}"),
    }
}
