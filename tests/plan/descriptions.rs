//! Each golden's description (the first line of its fixture's `snapshot.yaml`) held to its
//! report. What a description says moves, stays and changes is written out here by hand, from
//! the description alone: a golden accepted without reading cannot then contradict the story it
//! tells (as seven did once the availability gate became the default). A fixture whose
//! description states nothing countable is listed with the reason instead, and a new fixture in
//! neither list fails the test.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use super::{cases, description, report};

/// Where an evicted pod's replacement fits (the report's `fitsOn`, `node (host)`).
#[derive(Clone, Copy, Debug)]
enum To {
    /// The description does not say.
    Any,
    /// On one of these, each a node or a host name.
    Among(&'static [&'static str]),
    /// Nowhere now (no `fitsOn`): the eviction goes ahead without room for the replacement.
    Nowhere,
}

impl To {
    fn admits(self, fits_on: &Value) -> bool {
        match (self, fits_on.as_str()) {
            (To::Any, _) => true,
            (To::Nowhere, place) => place.is_none(),
            (To::Among(places), Some(place)) => {
                let (node, host) = split_place(place);
                places.iter().any(|p| *p == node || Some(*p) == host)
            }
            (To::Among(_), None) => false,
        }
    }
}

/// `worker-2 (esxi-2.lab.example)` → (`worker-2`, `esxi-2.lab.example`).
fn split_place(place: &str) -> (&str, Option<&str>) {
    match place.split_once(" (") {
        Some((node, rest)) => (node, rest.strip_suffix(')')),
        None => (place, None),
    }
}

/// What one fixture's description promises about its plan; only what is filled in is checked.
struct Promise {
    fixture: &'static str,
    /// How many pods are evicted, where the description says.
    evictions: Option<usize>,
    /// Pods said to be evicted (`namespace/name`), with where they go.
    evicted: Vec<(&'static str, To)>,
    /// Where every eviction goes.
    all_to: Option<To>,
    /// The hosts the evictions go to, one per eviction, sorted.
    hosts: Option<&'static [&'static str]>,
    /// Pods said to stay: not evicted, whatever the reason.
    stays: Vec<&'static str>,
    /// Pods said to be skipped, with the report's skip `code`.
    skipped: Vec<(&'static str, &'static str)>,
    /// How many skips carry a `code`, exactly.
    skips: Vec<(&'static str, usize)>,
    /// Exactly the nodes whose host label changes, with the new value where it is said.
    labels: Option<&'static [(&'static str, Option<&'static str>)]>,
    /// Exactly the DRS rule changes: (action, rule name).
    rules: Option<&'static [(&'static str, &'static str)]>,
    /// Exactly the nodes mapped to no VM.
    unmapped: Option<&'static [&'static str]>,
    /// How many warnings.
    warnings: Option<usize>,
    /// Exposure classes of workloads: (workload, before, after).
    exposure: Vec<(&'static str, &'static str, &'static str)>,
}

fn promise(fixture: &'static str) -> Promise {
    Promise {
        fixture,
        evictions: None,
        evicted: Vec::new(),
        all_to: None,
        hosts: None,
        stays: Vec::new(),
        skipped: Vec::new(),
        skips: Vec::new(),
        labels: None,
        rules: None,
        unmapped: None,
        warnings: None,
        exposure: Vec::new(),
    }
}

impl Promise {
    fn evictions(mut self, count: usize) -> Self {
        self.evictions = Some(count);
        self
    }

    fn evicts(self, pod: &'static str) -> Self {
        self.evicts_to(pod, To::Any)
    }

    fn evicts_to(mut self, pod: &'static str, to: To) -> Self {
        self.evicted.push((pod, to));
        self
    }

    fn all_to(mut self, to: To) -> Self {
        self.all_to = Some(to);
        self
    }

    fn going_to_hosts(mut self, hosts: &'static [&'static str]) -> Self {
        self.hosts = Some(hosts);
        self
    }

    fn stays(mut self, pod: &'static str) -> Self {
        self.stays.push(pod);
        self
    }

    fn skipped(mut self, pod: &'static str, code: &'static str) -> Self {
        self.skipped.push((pod, code));
        self
    }

    fn skips(mut self, code: &'static str, count: usize) -> Self {
        self.skips.push((code, count));
        self
    }

    fn labels(mut self, labels: &'static [(&'static str, Option<&'static str>)]) -> Self {
        self.labels = Some(labels);
        self
    }

    fn rules(mut self, rules: &'static [(&'static str, &'static str)]) -> Self {
        self.rules = Some(rules);
        self
    }

    fn unmapped(mut self, nodes: &'static [&'static str]) -> Self {
        self.unmapped = Some(nodes);
        self
    }

    fn warnings(mut self, count: usize) -> Self {
        self.warnings = Some(count);
        self
    }

    fn exposure(
        mut self,
        workload: &'static str,
        before: &'static str,
        after: &'static str,
    ) -> Self {
        self.exposure.push((workload, before, after));
        self
    }

    /// Every promise the report breaks, each as a line naming the fixture.
    fn broken_by(&self, report: &Value) -> Vec<String> {
        let mut broken = self.broken_evictions(report);
        broken.extend(self.broken_skips(report));
        broken.extend(self.broken_changes(report));
        broken
            .into_iter()
            .map(|line| format!("{}: {line}", self.fixture))
            .collect()
    }

    fn broken_evictions(&self, report: &Value) -> Vec<String> {
        let evictions = list(report, "evictions");
        let evicted: Vec<String> = evictions.iter().map(pod_key).collect();
        let mut broken = Vec::new();
        if let Some(count) = self.evictions
            && evictions.len() != count
        {
            broken.push(format!("{count} evictions promised, {evicted:?} planned"));
        }
        for (pod, to) in &self.evicted {
            match evictions.iter().find(|e| pod_key(e) == *pod) {
                None => broken.push(format!("{pod} is not evicted")),
                Some(eviction) if !to.admits(&eviction["fitsOn"]) => {
                    broken.push(format!("{pod} fits on {}, not {to:?}", eviction["fitsOn"]))
                }
                Some(_) => {}
            }
        }
        if let Some(to) = self.all_to {
            for eviction in evictions.iter().filter(|e| !to.admits(&e["fitsOn"])) {
                broken.push(format!(
                    "{} fits on {}, not {to:?}",
                    pod_key(eviction),
                    eviction["fitsOn"]
                ));
            }
        }
        if let Some(hosts) = self.hosts {
            let mut found: Vec<&str> = evictions
                .iter()
                .filter_map(|e| split_place(e["fitsOn"].as_str()?).1)
                .collect();
            found.sort_unstable();
            if found != hosts {
                broken.push(format!("evictions go to {found:?}, not {hosts:?}"));
            }
        }
        for pod in self
            .stays
            .iter()
            .filter(|pod| evicted.contains(&pod.to_string()))
        {
            broken.push(format!("{pod} is evicted"));
        }
        broken
    }

    fn broken_skips(&self, report: &Value) -> Vec<String> {
        let skipped = list(report, "skipped");
        let codes: Vec<(String, &str)> = skipped
            .iter()
            .map(|s| (pod_key(s), s["code"].as_str().unwrap_or_default()))
            .collect();
        let mut broken = Vec::new();
        for (pod, code) in &self.skipped {
            if !codes.iter().any(|(p, c)| p == pod && c == code) {
                broken.push(format!("{pod} is not skipped as {code}: {codes:?}"));
            }
        }
        for (code, count) in &self.skips {
            let found = codes.iter().filter(|(_, c)| c == code).count();
            if found != *count {
                broken.push(format!("{count} {code} skips promised, {found} reported"));
            }
        }
        broken
    }

    fn broken_changes(&self, report: &Value) -> Vec<String> {
        let mut broken = Vec::new();
        if let Some(labels) = self.labels {
            let changes = list(report, "labelChanges");
            let nodes: BTreeSet<&str> = changes.iter().filter_map(|c| c["node"].as_str()).collect();
            let promised: BTreeSet<&str> = labels.iter().map(|(node, _)| *node).collect();
            if nodes != promised {
                broken.push(format!("labels change on {nodes:?}, not {promised:?}"));
            }
            for (node, value) in labels {
                let Some(value) = value else { continue };
                if !changes
                    .iter()
                    .any(|c| c["node"] == *node && c["new"] == *value)
                {
                    broken.push(format!("{node}'s label does not become {value}"));
                }
            }
        }
        if let Some(rules) = self.rules {
            let changes: BTreeSet<(&str, &str)> = list(report, "drsRules")
                .iter()
                .filter_map(|r| Some((r["action"].as_str()?, r["name"].as_str()?)))
                .collect();
            let promised: BTreeSet<(&str, &str)> = rules.iter().copied().collect();
            if changes != promised {
                broken.push(format!("DRS rules {changes:?}, not {promised:?}"));
            }
        }
        if let Some(nodes) = self.unmapped {
            let unmapped: Vec<&str> = list(report, "unmappedNodes")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            if unmapped != nodes {
                broken.push(format!("unmapped nodes {unmapped:?}, not {nodes:?}"));
            }
        }
        if let Some(count) = self.warnings {
            let warnings = list(report, "warnings");
            if warnings.len() != count {
                broken.push(format!("{count} warnings promised: {warnings:?}"));
            }
        }
        let workloads = report["exposure"]["workloads"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for (workload, before, after) in &self.exposure {
            let found = workloads.iter().find(|w| w["workload"] == *workload);
            let classes = found.map(|w| (&w["before"]["class"], &w["after"]["class"]));
            if classes.is_none_or(|(b, a)| b != before || a != after) {
                broken.push(format!(
                    "{workload} is not {before} before and {after} after: {found:?}"
                ));
            }
        }
        broken
    }
}

fn list<'a>(report: &'a Value, field: &str) -> &'a [Value] {
    report[field]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_else(|| panic!("the report has a list {field}"))
}

/// `namespace/name` of an eviction or a skip.
fn pod_key(entry: &Value) -> String {
    format!(
        "{}/{}",
        entry["namespace"].as_str().unwrap_or_default(),
        entry["pod"].as_str().unwrap_or_default()
    )
}

const WORKER_2: To = To::Among(&["worker-2"]);
/// The chart fixtures' idle nodes.
const IDLE: To = To::Among(&["worker-3", "worker-4"]);

/// Written from each description, read as a reviewer reads it.
fn promises() -> Vec<Promise> {
    const GPU: To = To::Among(&["worker-c"]);
    vec![
        promise("anti-affinity-namespace-selector")
            .evictions(1)
            .evicts("pay-api/gateway-5d8f7c9b6-aaaaa")
            .stays("pay-db/ledger-0"),
        promise("anti-affinity-one-eviction-clears-three")
            .evictions(1)
            .evicts("shop/cache-0"),
        promise("anti-affinity-protected-match-owners-go")
            .evictions(2)
            .evicts("shop/api-5d8f7c9b6-aaaaa")
            .evicts("shop/api-5d8f7c9b6-bbbbb")
            .skipped("shop/ledger-0", "protected"),
        promise("anti-affinity-protected-match-owners-go-gated")
            .evictions(1)
            .skipped("shop/ledger-0", "protected")
            .skips("workload-unavailable", 1),
        promise("anti-affinity-soft-constraints")
            .evictions(1)
            .evicts_to("web/web-b", To::Among(&["esxi-43.lab.example"]))
            .skipped("shop/web-a", "no-feasible-node")
            .skipped("shop/web-b", "no-feasible-node"),
        promise("drs-moved-worker")
            .evictions(1)
            .evicts("web/web-5d8f7c9b6-bbbbb")
            .labels(&[("worker-b", Some("esxi-41.lab.example"))]),
        promise("sites-host-groups")
            .evictions(1)
            .evicts_to("db/db-5d8f7c9b6-bbbbb", To::Among(&["worker-d"]))
            .stays("db/db-5d8f7c9b6-aaaaa")
            .labels(&[("worker-c", Some("site-a-hosts"))])
            .rules(&[]),
        promise("sites-vsan-fault-domains")
            .evictions(1)
            .evicts_to(
                "web/web-5d8f7c9b6-bbbbb",
                To::Among(&["worker-c", "worker-d"]),
            )
            .labels(&[
                ("worker-a", Some("preferred")),
                ("worker-b", Some("preferred")),
                ("worker-c", Some("secondary")),
                ("worker-d", Some("secondary")),
            ]),
        promise("sites-zone-label-stale")
            .evictions(0)
            .labels(&[("worker-c", Some("site-a-hosts"))])
            .rules(&[])
            .warnings(3),
        promise("sites-spread")
            .evictions(1)
            .evicts_to("api/api-5d8f7c9b6-ccccc", To::Among(&["worker-d"]))
            .labels(&[("worker-c", Some("site-a-hosts"))]),
        promise("drs-rules-ownership").evictions(0).rules(&[
            ("create", "vsphere-descheduler:lab:db:StatefulSet/pg"),
            ("delete", "vsphere-descheduler:lab:db:StatefulSet/pg-old"),
            ("keep", "vsphere-descheduler:lab:cache:StatefulSet/redis"),
        ]),
        promise("duplicates-targets-from-whole-group")
            .evictions(1)
            .evicts("shop/api-5d8f7c9b6-bbbbb"),
        promise("duplicates-would-return")
            .evictions(0)
            .skipped("shop/api-7c9d8-aaaaa", "would-return-to-node")
            .skipped("shop/api-7c9d8-bbbbb", "would-return-to-node"),
        promise("exposure-classes")
            .evictions(1)
            .exposure("shop/Deployment/web", "all", "all")
            .exposure("shop/Deployment/front", "all", "tolerated")
            .exposure("mq/StatefulSet/queue", "majority", "majority")
            .exposure("jobs/Deployment/batch", "all", "all")
            .exposure("shop/Deployment/api", "over-budget", "over-budget"),
        promise("high-node-utilization-packs")
            .evictions(1)
            .evicts_to("batch/report-0", To::Among(&["worker-1", "worker-2"]))
            .stays("batch/cache-0"),
        promise("host-names-and-mapping")
            .evictions(0)
            .labels(&[("worker-a", None), ("worker-b", None), ("worker-c", None)])
            .unmapped(&["worker-x"]),
        promise("low-node-utilization-host-aware")
            .evictions(3)
            .all_to(WORKER_2)
            .skips("limit-node-drain", 1)
            .stays("kube-system/coredns-1"),
        promise("low-node-utilization-host-aware-gated")
            .evictions(1)
            .evicts_to("shop/web-11", WORKER_2)
            .skips("workload-unavailable", 11)
            .stays("kube-system/coredns-1"),
        promise("low-node-utilization-metrics")
            .evictions(2)
            .evicts("shop/web-02")
            .evicts("shop/web-01")
            .stays("shop/web-00")
            .skipped("shop/web-03", "no-metrics"),
        promise("low-node-utilization-metrics-extended-resource")
            .evictions(0)
            .warnings(1),
        promise("native-sidecar-does-not-fit")
            .evictions(0)
            .skipped("shop/web-a", "no-feasible-node")
            .skipped("shop/web-b", "no-feasible-node"),
        promise("node-affinity-labels-changed")
            .evictions(2)
            .evicts("shop/db-7c9f-aaaaa")
            .evicts_to("shop/render-8a1e-aaaaa", GPU)
            .skipped("shop/legacy-6b4d-aaaaa", "no-feasible-node")
            .stays("shop/render-8a1e-bbbbb"),
        promise("node-fit-is-domain-wide")
            .evictions(0)
            .skipped("web/web-5d8f7c9b6-bbbbb", "no-feasible-node"),
        promise("node-recovered").evictions(1),
        promise("node-taints-after-scheduling")
            .evictions(2)
            .evicts("shop/api-4f7a-aaaaa")
            .evicts("shop/cart-3e1b-aaaaa")
            .stays("shop/agent-2c3d-aaaaa")
            .stays("shop/web-5d8f-aaaaa")
            .skipped("kube-system/node-exporter-x7k2p", "protected"),
        promise("pdb-blocks")
            .evictions(0)
            .skipped("shop/web-5d8f7c9b6-aaaaa", "pdb-exhausted")
            .skipped("shop/web-5d8f7c9b6-bbbbb", "pdb-exhausted")
            .rules(&[("create", "vsphere-descheduler:lab:shop:Deployment/web")]),
        promise("pdb-not-ready-replica")
            .evictions(2)
            .evicts("shop/web-c")
            .evicts("shop/api-b")
            .skipped("shop/queue-b", "pdb-exhausted")
            .stays("shop/queue-a"),
        promise("pdb-stale")
            .evictions(0)
            .skipped("shop/web-a", "pdb-unprocessed")
            .skipped("shop/web-b", "pdb-unprocessed"),
        promise("pod-life-time-filters")
            .evictions(5)
            .evicts("batch/report-28001-aaaaa")
            .stays("batch/report-28002-bbbbb")
            .evicts("shop/worker-3a4b-ddddd")
            .evicts("shop/init-broken-5b6c-bbbbb")
            .stays("batch/migrate-28003-ccccc")
            .stays("shop/worker-3a4b-eeeee")
            .evicts("shop/oom-4d5e-ccccc")
            .evicts("shop/debugged-7f8e-aaaaa")
            .stays("batch/probe-6c9d-ddddd"),
        promise("pod-life-time-oldest-first")
            .evictions(3)
            .evicts("shop/web-5d8f-aaaaa")
            .evicts("shop/web-5d8f-bbbbb")
            .skipped("shop/web-5d8f-ccccc", "limit-per-namespace")
            .stays("shop/web-5d8f-ddddd")
            .stays("shop/stuck-7e8f-aaaaa")
            .evicts("batch/report-28001-abcde"),
        promise("priority-class-threshold")
            .evictions(1)
            .skipped("shop/payments-7f6b4-aaaaa", "protected")
            .skipped("shop/payments-7f6b4-bbbbb", "protected"),
        promise("protections-and-limits")
            .evictions(2)
            .skipped("infra/agent-aaaaa", "protected")
            .skipped("infra/agent-bbbbb", "protected")
            .stays("infra/dns-5d8f7c9b6-aaaaa")
            .evicts("infra/dns-5d8f7c9b6-bbbbb")
            .skipped("web/tool", "protected")
            .skipped("web/tool-twin", "protected")
            .skipped("web/web-5d8f7c9b6-aaaaa", "protected")
            .skips("limit-total", 1),
        promise("remove-failed-pods")
            .evictions(3)
            .evicts("shop/api-4f7a-aaaaa")
            .evicts("shop/cache-3c4d-aaaaa")
            .evicts("shop/seed-9a8b-aaaaa")
            .stays("shop/fresh-5e6f-aaaaa")
            .stays("shop/odd-1a2b-aaaaa")
            .stays("batch/import-28002-fghij")
            .stays("shop/web-5d8f-aaaaa")
            .skipped("shop/debug", "protected"),
        promise("spread-balance-node-fit-off")
            .evictions(2)
            .all_to(To::Nowhere),
        promise("spread-counts-protected-pods").evictions(0),
        promise("spread-default-constraints")
            .evictions(2)
            .going_to_hosts(&["esxi-42.lab.example", "esxi-43.lab.example"])
            .skipped("db/db-0", "rollout-in-progress")
            .skipped("db/db-1", "rollout-in-progress")
            .stays("logs/logs-1")
            .stays("logs/logs-2")
            .stays("queue/queue-1")
            .stays("queue/queue-2")
            .stays("queue/queue-3"),
        promise("spread-min-domains")
            .evictions(0)
            .skips("no-feasible-node", 2),
        promise("target-host-in-maintenance")
            .evictions(0)
            .skipped("web/web-5d8f7c9b6-bbbbb", "no-feasible-node"),
        promise("terminating-partner-is-gone").evictions(0),
        promise("too-many-restarts-v1alpha1")
            .evictions(2)
            .evicts("shop/api-4f7a-aaaaa")
            .evicts("shop/worker-6a2b-aaaaa")
            .stays("shop/calm-1b2c-aaaaa")
            .skipped("pay/ledger-8d9e-aaaaa", "pdb-exhausted"),
        chart_default_policy("upstream-chart-default-policy"),
        chart_default_policy("upstream-chart-default-policy-v1alpha1"),
        promise("upstream-chart-default-policy-ungated")
            .evictions(8)
            .evicts("shop/api-05")
            .evicts("shop/api-04")
            .evicts("shop/api-03")
            .evicts("shop/api-02")
            .evicts_to("shop/web-11", WORKER_2)
            .evicts_to("shop/web-10", IDLE)
            .evicts_to("shop/web-09", IDLE)
            .evicts_to("shop/web-08", IDLE)
            .skips("workload-unavailable", 0),
        promise("upstream-v1alpha1-openshift")
            .stays("openshift-monitoring/prom-7c9-x1")
            .stays("openshift-monitoring/prom-7c9-x2"),
        promise("vks-guest-cluster-drs-moved")
            .evictions(1)
            .all_to(To::Among(&["esxi-03.lab.example"]))
            .labels(&[(
                "tkc-1-node-pool-1-wh5j2-5b7c9d8f6-9pnvt",
                Some("esxi-01.lab.example"),
            )]),
        promise("workload-pacing")
            .evictions(1)
            .skips("limit-per-workload", 2),
    ]
}

/// The two chart fixtures share one cluster and one description.
fn chart_default_policy(fixture: &'static str) -> Promise {
    promise(fixture)
        .evictions(5)
        .evicts_to("shop/web-11", IDLE)
        .evicts_to("shop/web-10", IDLE)
        .evicts_to("shop/web-09", IDLE)
        .evicts_to("shop/web-08", IDLE)
        .evicts("shop/api-05")
        .skips("workload-unavailable", 5)
}

/// Fixtures whose description states nothing a table could hold, each with a reviewer's why.
const UNCOUNTED: &[(&str, &str)] = &[
    (
        "capv-stale-host-label",
        "tells the cluster's state (a stale Cluster API label), not what the plan does; the \
         snapshot tests read its labels",
    ),
    (
        "plugin-without-plugin-config",
        "says only that the plugin runs; what it finds is the golden's",
    ),
    (
        "supervisor-hosts",
        "describes a Supervisor inventory (hosts as nodes), not a plan",
    ),
    (
        "twin-clusters-by-id",
        "describes an inventory recorded with managed object ids, not a plan",
    ),
    ("openshift-affinity-and-taints", OPENSHIFT),
    ("openshift-compact-and-scale-minimal", OPENSHIFT),
    ("openshift-compact-and-scale-moderate", OPENSHIFT),
    ("openshift-compact-and-scale-modest", OPENSHIFT),
    (
        "openshift-lifecycle-and-utilization-evict-pods-with-pvc",
        OPENSHIFT,
    ),
    ("openshift-lifecycle-and-utilization-high", OPENSHIFT),
    ("openshift-lifecycle-and-utilization-low", OPENSHIFT),
    ("openshift-lifecycle-and-utilization-medium", OPENSHIFT),
    (
        "openshift-lifecycle-and-utilization-pod-life-time-5m",
        OPENSHIFT,
    ),
    (
        "openshift-lifecycle-and-utilization-threshold-priority-class-name",
        OPENSHIFT,
    ),
    (
        "openshift-lifecycle-and-utilization-threshold-priority",
        OPENSHIFT,
    ),
    (
        "openshift-long-lifecycle-evict-pods-with-local-storage",
        OPENSHIFT,
    ),
    ("openshift-long-lifecycle", OPENSHIFT),
    ("openshift-soft-topology-and-duplicates", OPENSHIFT),
    ("openshift-topology-and-duplicates", OPENSHIFT),
];

const OPENSHIFT: &str = "shares tests/fixtures/openshift/cluster.yaml's description of the \
                         cluster with every OpenShift profile; what each profile does is its \
                         policy's (policies/openshift/), not the description's";

fn fixture_name(case: &Path) -> String {
    case.file_name()
        .and_then(|n| n.to_str())
        .expect("a UTF-8 folder name")
        .to_string()
}

#[test]
fn every_description_that_says_what_moves_holds_for_its_plan() {
    let promises = promises();
    let broken: Vec<String> = cases()
        .iter()
        .filter_map(|case| {
            let name = fixture_name(case);
            let promise = promises.iter().find(|p| p.fixture == name)?;
            Some(promise.broken_by(&report(case)))
        })
        .flatten()
        .collect();
    assert!(broken.is_empty(), "\n{}", broken.join("\n"));
}

#[test]
fn every_fixture_has_its_description_checked_or_a_reason_why_not() {
    let fixtures: BTreeSet<String> = cases().iter().map(|case| fixture_name(case)).collect();
    let promised: Vec<&str> = promises().iter().map(|p| p.fixture).collect();
    let uncounted: Vec<&str> = UNCOUNTED.iter().map(|(fixture, _)| *fixture).collect();
    let listed: BTreeSet<String> = promised
        .iter()
        .chain(&uncounted)
        .map(|name| name.to_string())
        .collect();
    assert_eq!(
        listed.len(),
        promised.len() + uncounted.len(),
        "a fixture is listed twice"
    );
    let unlisted: Vec<&String> = fixtures.difference(&listed).collect();
    assert!(
        unlisted.is_empty(),
        "write down what each description promises (promises()) or why it cannot \
         (UNCOUNTED): {unlisted:?}"
    );
    let gone: Vec<&String> = listed.difference(&fixtures).collect();
    assert!(gone.is_empty(), "no such fixtures: {gone:?}");
}

/// insta compares a golden's content only: a description edited in the fixture would leave the
/// golden telling the old story.
#[test]
fn every_golden_carries_its_fixtures_description() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots");
    for case in cases() {
        let name = fixture_name(&case);
        let golden = std::fs::read_to_string(root.join(format!("{name}.snap")))
            .unwrap_or_else(|e| panic!("the golden of {name}: {e}"));
        let header = golden
            .strip_prefix("---\n")
            .and_then(|rest| rest.split_once("\n---\n"))
            .map(|(header, _)| header)
            .unwrap_or_else(|| panic!("{name}.snap starts with a --- header"));
        let header: Value =
            serde_saphyr::from_str(header).unwrap_or_else(|e| panic!("{name}.snap's header: {e}"));
        assert_eq!(
            header["description"],
            description(&case),
            "{name}.snap's description is not its fixture's first line"
        );
    }
}

/// A `-gated` or `-ungated` fixture tells its original's story with the gate the other way: it
/// holds a copy of the original's cluster (its own first line, for its own description), which
/// must not drift from it.
#[test]
fn every_gated_or_ungated_twin_holds_its_originals_cluster() {
    let body = |case: &Path| {
        let text = std::fs::read_to_string(case.join("snapshot.yaml")).expect("readable");
        text.split_once('\n')
            .map(|(_, body)| body.to_string())
            .unwrap_or_default()
    };
    let twins: Vec<_> = cases()
        .into_iter()
        .filter_map(|case| {
            let name = fixture_name(&case);
            let original = name
                .strip_suffix("-ungated")
                .or_else(|| name.strip_suffix("-gated"))?
                .to_string();
            Some((case, original))
        })
        .collect();
    assert!(
        !twins.is_empty(),
        "the gated and ungated twins went missing"
    );
    for (case, original) in twins {
        let original = case.with_file_name(&original);
        assert!(
            body(&case) == body(&original),
            "{} is not {}'s cluster",
            case.display(),
            original.display()
        );
    }
}
