//! Convergence: plan, carry the plan out as the cluster would (each evicted pod replaced by its
//! controller on the node the plan predicts the scheduler gives it, label changes written), plan
//! again, until a plan evicts nothing. Over generated clusters (`benches/support/cluster.rs`):
//!
//! - no replacement is ever evicted (an eviction that the next run undoes is churn);
//! - every eviction after the first run is of a pod an earlier run left in place with a reason:
//!   `pdb` or `limit` (budgets refill as replacements become Ready), or a place that was not
//!   there yet (`no-feasible-node`, `would-return`) and is once other pods moved; never a pod no
//!   run had a reason to move;
//! - the rounds end.
//!
//! PodDisruptionBudgets keep their recorded status between rounds: once the replacements are
//! Ready, the disruption controller computes the same one again.

#[allow(dead_code)]
#[path = "../benches/support/cluster.rs"]
mod cluster;

use std::collections::BTreeSet;

use vsphere_descheduler::plan::{self, Plan};
use vsphere_descheduler::policy;
use vsphere_descheduler::snapshot::{self, Snapshot};

const POLICY: &str = "apiVersion: vsphere-descheduler.io/v1alpha1
kind: DeschedulerPolicy
clusterName: converge
maxNoOfPodsToEvictPerNode: 4
profiles:
- name: all
  pluginConfig:
  - name: DefaultEvictor
    args: {nodeFit: true}
  plugins:
    deschedule: {enabled: [RemovePodsViolatingInterPodAntiAffinity]}
    balance: {enabled: [RemovePodsViolatingTopologySpreadConstraint, RemoveDuplicates]}
";

/// Rounds a plan can take before the test calls it a loop.
const MAX_ROUNDS: usize = 40;

/// What converging took.
#[derive(Debug)]
struct Rounds {
    /// Evictions per round, the last one 0.
    evictions: Vec<usize>,
}

fn generated(shape: &cluster::Shape) -> Snapshot {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("cluster.json");
    std::fs::write(&path, cluster::text(shape, cluster::Format::Json)).expect("writable");
    snapshot::load_files(&[path], chrono::Utc::now())
        .expect("the generated cluster loads")
        .snapshot
}

/// The node part of a report's `node (host)`.
fn node_of(fits_on: &str) -> &str {
    fits_on.split(" (").next().unwrap_or(fits_on)
}

/// What the cluster does with a plan: labels written, evicted pods replaced where the scheduler
/// puts them (as the plan predicts). Returns the replacements' keys.
fn carry_out(snapshot: &mut Snapshot, plan: &Plan, round: usize) -> Vec<String> {
    for change in &plan.label_changes {
        let node = snapshot
            .nodes
            .iter_mut()
            .find(|n| n.name == change.node)
            .expect("a planned node");
        match &change.new {
            Some(value) => node.labels.insert(change.key.clone(), value.clone()),
            None => node.labels.remove(&change.key),
        };
    }
    // Where each evicted pod's replacement goes, by the evicted pod's key.
    let targets: std::collections::HashMap<(&str, &str), &str> = plan
        .evictions
        .iter()
        .map(|e| {
            let target = e
                .fits_on
                .as_deref()
                .map(node_of)
                .expect("nodeFit is on: every eviction names where the replacement goes");
            ((e.namespace.as_str(), e.pod.as_str()), target)
        })
        .collect();
    let mut evicted = Vec::new();
    snapshot.pods.retain(|pod| {
        let gone = targets.contains_key(&(&*pod.namespace, pod.name.as_str()));
        if gone {
            evicted.push(pod.clone());
        }
        !gone
    });
    let mut replacements = Vec::new();
    for mut pod in evicted {
        let target = targets[&(&*pod.namespace, pod.name.as_str())];
        pod.name = format!("{}-r{round}", pod.name);
        pod.uid = format!("{}-r{round}", pod.uid);
        pod.node_name = Some(target.into());
        pod.created = Some(snapshot.now);
        pod.started = Some(snapshot.now);
        pod.ready = true;
        replacements.push(format!("{}/{}", pod.namespace, pod.name));
        snapshot.pods.push(pod);
    }
    snapshot
        .pods
        .sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    replacements
}

/// Plans and carries out until a plan evicts nothing, checking the properties on the way.
fn converge(shape: &cluster::Shape) -> Rounds {
    let policy = policy::load_str("policy.yaml", POLICY)
        .expect("the policy is valid")
        .policy;
    let mut snapshot = generated(shape);
    let mut replacements: BTreeSet<String> = BTreeSet::new();
    // Pods a run left in place with a reason: the only ones a later run may evict.
    let mut waiting: BTreeSet<String> = BTreeSet::new();
    let mut evictions = Vec::new();
    for round in 0..MAX_ROUNDS {
        let plan = plan::plan(&snapshot, &policy);
        let evicted: Vec<String> = plan
            .evictions
            .iter()
            .map(|e| format!("{}/{}", e.namespace, e.pod))
            .collect();
        evictions.push(evicted.len());
        for pod in &evicted {
            let why = plan
                .evictions
                .iter()
                .find(|e| format!("{}/{}", e.namespace, e.pod) == *pod)
                .map(|e| format!("{}: {}", e.strategy, e.reason))
                .unwrap_or_default();
            assert!(
                !replacements.contains(pod),
                "{shape:?} round {round}: the replacement {pod} is evicted again ({why})"
            );
            assert!(
                round == 0 || waiting.contains(pod),
                "{shape:?} round {round}: {pod} is evicted ({why}), but no earlier run held it \
                 back for a budget or a limit"
            );
        }
        if evicted.is_empty() {
            return Rounds { evictions };
        }
        // `protected` pods never move; every other skip is a pod with a reason to move.
        waiting.extend(
            plan.skipped
                .iter()
                .filter(|s| s.reason.as_str() != "protected")
                .map(|s| format!("{}/{}", s.namespace, s.pod)),
        );
        for pod in &evicted {
            waiting.remove(pod);
        }
        replacements.extend(carry_out(&mut snapshot, &plan, round));
    }
    panic!("{shape:?}: still evicting after {MAX_ROUNDS} rounds: {evictions:?}");
}

#[test]
fn replacements_stay_where_the_scheduler_puts_them_and_the_rounds_end() {
    for seed in 1..=4 {
        let shape = cluster::Shape {
            nodes: 40,
            pods: 1_500,
            hosts: 8,
            seed,
            violation_percent: 20,
            controllers: false,
        };
        let rounds = converge(&shape);
        assert!(rounds.evictions[0] > 0, "{shape:?}: the first run has work");
    }
}

/// Rounds to zero at 15k and 150k pods, for BENCHMARKS.md:
/// `cargo test --release --test convergence -- --ignored --nocapture`.
#[test]
#[ignore = "plans the 15k and 150k clusters round after round; run explicitly to measure"]
#[allow(clippy::print_stdout)] // the measurement is the output
fn rounds_to_zero_at_scale() {
    for (nodes, pods, hosts) in [(500, 15_000, 10), (5_000, 150_000, 100)] {
        let shape = cluster::Shape {
            nodes,
            pods,
            hosts,
            ..cluster::Shape::default()
        };
        let started = std::time::Instant::now();
        let rounds = converge(&shape);
        println!(
            "{pods} pods, {nodes} nodes, {hosts} hosts: {} rounds to zero, evictions per round \
             {:?}, {:.1} s",
            rounds.evictions.len() - 1,
            rounds.evictions,
            started.elapsed().as_secs_f64()
        );
    }
}
