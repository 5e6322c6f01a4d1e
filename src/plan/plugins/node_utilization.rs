//! What `LowNodeUtilization` and `HighNodeUtilization` share: measuring nodes and pods (from
//! requests, or from the `metrics.k8s.io` usage the snapshot recorded), thresholds as amounts,
//! and the loop that evicts pods from source nodes towards destination nodes.
//!
//! As upstream: `cpu`, `memory` and `pods` are always judged; a node is underutilized when every
//! judged resource is at or below its threshold and above target when any is above its target;
//! the room destinations have below their ceilings bounds how much moves, and a source stops
//! giving up pods once its own condition no longer holds. Unlike upstream, each pod needs a
//! destination that takes it below its ceiling (the scheduler's choice among those is where it
//! is counted next), so a move never overfills a destination and the next run does not move it
//! back.

use crate::plan::judge::feasibility::{Allowed, Destination, Others};
use crate::plan::model::warning::Warning;
use crate::plan::view::View;
use crate::plan::view::index::{NodeIx, PerNode, PodIx};
use crate::plan::{
    Attempt, Context, EvictionReason, Fit, NodeUtilization, Planner, ResourceUtilization,
    SkipDetail, Usage, UtilizationClass,
};
use crate::policy::{BASIC_RESOURCES, Namespaces, ResourceThresholds, UsageSource};
use crate::snapshot::{Pod, ResourceName, Resources};

/// Resources measured by actual usage when metrics are read; the others (the pod count,
/// extended resources) come from requests either way, as metrics-server reports only these.
const METERED: [ResourceName; 2] = [ResourceName::Cpu, ResourceName::Memory];

/// Utilization of every judged node, in thousandths, per judged resource.
pub(super) struct Utilization {
    /// Judged resource names, sorted.
    pub resources: Vec<String>,
    /// The same names, typed, to read amounts by.
    names: Vec<ResourceName>,
    source: UsageSource,
    /// Usage per node; `None` for a node that is not judged (not considered, or without
    /// NodeMetrics when metrics are read).
    pub usage: PerNode<Option<Vec<i64>>>,
    /// The usage when measured, before any pod moved: what the plan records as `before`.
    measured: PerNode<Option<Vec<i64>>>,
    /// Allocatable per node and judged resource.
    allocatable: PerNode<Vec<i64>>,
}

impl Utilization {
    /// Measures the considered nodes. A node without NodeMetrics, when they are read, is left
    /// out with a warning (upstream fails the whole plugin).
    pub fn measure(
        planner: &mut Planner,
        context: &Context,
        thresholds: &ResourceThresholds,
        source: UsageSource,
    ) -> Utilization {
        let mut resources: Vec<String> = thresholds.keys().cloned().collect();
        for basic in BASIC_RESOURCES {
            if !thresholds.contains_key(basic) {
                resources.push(basic.to_string());
            }
        }
        resources.sort();
        let names: Vec<ResourceName> = resources.iter().map(|r| ResourceName::new(r)).collect();
        let view = &planner.view;
        let metrics = view.snapshot.metrics.as_ref();
        let mut unmetered = Vec::new();
        let mut usage = PerNode::with_capacity(view.nodes.len());
        for (node, state) in view.nodes.enumerate() {
            let measured = match source {
                UsageSource::Requests => None,
                UsageSource::KubernetesMetrics => {
                    let found = metrics.and_then(|m| m.nodes.get(&state.node.name));
                    if found.is_none() && state.considered {
                        unmetered.push(state.node.name.as_str());
                    }
                    found
                }
            };
            let judged =
                state.considered && (source == UsageSource::Requests || measured.is_some());
            usage.push(judged.then(|| amounts(&names, &view.used[node], measured)));
        }
        let allocatable = view
            .nodes
            .iter()
            .map(|n| {
                names
                    .iter()
                    .map(|name| n.node.allocatable.get(name))
                    .collect()
            })
            .collect();
        if !unmetered.is_empty() {
            let warning = Warning::NoNodeMetrics {
                strategy: context.strategy,
                profile: context.profile.to_string(),
                nodes: unmetered.iter().map(|n| n.to_string()).collect(),
            };
            planner.plan.warnings.push(warning);
        }
        Utilization {
            resources,
            names,
            source,
            measured: usage.clone(),
            usage,
            allocatable,
        }
    }

    /// Records each judged node's usage, when measured and now, against its thresholds and
    /// with its class, as plan data for views; decides nothing.
    pub fn record(
        &self,
        planner: &mut Planner,
        context: &Context,
        thresholds: &Thresholds,
        classes: &Classes,
    ) {
        for node in self.judged() {
            let earlier = self.measured[node].as_deref().unwrap_or(self.used(node));
            let resources = (0..self.resources.len())
                .map(|i| ResourceUtilization {
                    resource: self.resources[i].clone(),
                    before: self.percent(node, earlier[i], i),
                    after: self.percent(node, self.used(node)[i], i),
                    low: self.percent(node, thresholds.low[node][i], i),
                    high: thresholds
                        .high
                        .map(|high| self.percent(node, high[node][i], i)),
                })
                .collect();
            planner.plan.utilization.push(NodeUtilization {
                strategy: context.strategy,
                profile: context.profile.to_string(),
                node: planner.view.nodes[node].node.name.clone(),
                class: classes.of(node),
                resources,
            });
        }
    }

    /// The judged nodes.
    pub fn judged(&self) -> impl Iterator<Item = NodeIx> + '_ {
        self.usage
            .indices()
            .filter(|&node| self.usage[node].is_some())
    }

    /// What evicting a pod frees, per judged resource; `None` when metrics are read and the
    /// snapshot has no PodMetrics for it.
    fn pod(&self, view: &View, pod: PodIx) -> Option<Vec<i64>> {
        let pod_ref = view.pod(pod);
        let measured = match self.source {
            UsageSource::Requests => None,
            UsageSource::KubernetesMetrics => Some(
                view.snapshot
                    .metrics
                    .as_ref()?
                    .pods
                    .get(&(pod_ref.namespace.to_string(), pod_ref.name.clone()))?,
            ),
        };
        Some(amounts(&self.names, &pod_ref.requests, measured))
    }

    /// Percentages per judged resource, with `missing` for those the thresholds leave out.
    pub fn percents(&self, thresholds: &ResourceThresholds, missing: f64) -> Vec<f64> {
        self.resources
            .iter()
            .map(|r| thresholds.get(r).copied().unwrap_or(missing))
            .collect()
    }

    /// Percentages as amounts of a node's allocatable (truncated, as upstream).
    pub fn amounts_of(&self, node: NodeIx, percents: &[f64]) -> Vec<i64> {
        self.allocatable[node]
            .iter()
            .zip(percents)
            .map(|(&allocatable, percent)| (percent * 0.01 * allocatable as f64) as i64)
            .collect()
    }

    /// A node's allocatable per judged resource.
    pub fn allocatable(&self, node: NodeIx) -> Vec<i64> {
        self.allocatable[node].clone()
    }

    /// The mean utilization percentage of each resource over the judged nodes.
    pub fn mean_percents(&self) -> Vec<f64> {
        let mut sums = vec![0.0; self.resources.len()];
        let mut count = 0u32;
        for node in self.judged() {
            count += 1;
            for (i, sum) in sums.iter_mut().enumerate() {
                *sum += self.percent(node, self.used(node)[i], i);
            }
        }
        sums.iter()
            .map(|sum| sum / f64::from(count.max(1)))
            .collect()
    }

    fn used(&self, node: NodeIx) -> &[i64] {
        self.usage[node].as_deref().expect("a judged node")
    }

    fn percent(&self, node: NodeIx, amount: i64, resource: usize) -> f64 {
        let allocatable = self.allocatable[node][resource];
        if allocatable > 0 {
            100.0 * amount as f64 / allocatable as f64
        } else {
            0.0
        }
    }

    /// The sum of a node's utilization percentages: the order sources are drained in.
    pub fn load(&self, node: NodeIx) -> f64 {
        (0..self.resources.len())
            .map(|i| self.percent(node, self.used(node)[i], i))
            .sum()
    }

    /// Every judged resource at or below `limits`.
    pub fn all_at_most(&self, node: NodeIx, limits: &[i64]) -> bool {
        self.used(node)
            .iter()
            .zip(limits)
            .all(|(used, limit)| used <= limit)
    }

    /// Some judged resource above `limits`.
    pub fn any_above(&self, node: NodeIx, limits: &[i64]) -> bool {
        !self.all_at_most(node, limits)
    }

    /// The usage and limit, in percent, of the resources (name, used, limit) where `pick`
    /// holds, for an eviction's reason.
    pub fn usage_of(
        &self,
        node: NodeIx,
        limits: &[i64],
        pick: impl Fn(&str, i64, i64) -> bool,
    ) -> Vec<Usage> {
        (0..self.resources.len())
            .filter(|&i| pick(&self.resources[i], self.used(node)[i], limits[i]))
            .map(|i| Usage {
                resource: self.resources[i].clone(),
                used: self.percent(node, self.used(node)[i], i),
                limit: self.percent(node, limits[i], i),
            })
            .collect()
    }
}

/// A plugin's thresholds per node and judged resource, as amounts.
pub(super) struct Thresholds<'a> {
    pub low: &'a PerNode<Vec<i64>>,
    /// `targetThresholds` (LowNodeUtilization only).
    pub high: Option<&'a PerNode<Vec<i64>>>,
}

/// The nodes a plugin found under its thresholds and above its targets (LowNodeUtilization
/// only); every other judged node is appropriately utilized.
pub(super) struct Classes {
    pub underutilized: Vec<NodeIx>,
    pub above_target: Vec<NodeIx>,
}

impl Classes {
    fn of(&self, node: NodeIx) -> UtilizationClass {
        if self.underutilized.contains(&node) {
            UtilizationClass::Underutilized
        } else if self.above_target.contains(&node) {
            UtilizationClass::AboveTarget
        } else {
            UtilizationClass::Appropriate
        }
    }
}

/// A node's amounts per judged resource: metered ones from `measured` when given.
fn amounts(
    names: &[ResourceName],
    requested: &Resources,
    measured: Option<&Resources>,
) -> Vec<i64> {
    names
        .iter()
        .map(|name| match measured {
            Some(measured) if METERED.contains(name) => measured.get(name),
            _ => requested.get(name),
        })
        .collect()
}

/// The thresholds' resources, the pod count aside, for [`requests_any`].
fn thresholding(thresholds: &ResourceThresholds) -> Vec<ResourceName> {
    thresholds
        .keys()
        .map(|name| ResourceName::new(name))
        .filter(|name| *name != ResourceName::Pods)
        .collect()
}

/// Whether a pod requests one of the [`thresholding`] resources
/// (`evictionModes: [OnlyThresholdingResources]`).
fn requests_any(pod: &Pod, thresholding: &[ResourceName]) -> bool {
    thresholding.iter().any(|name| pod.requests.get(name) > 0)
}

/// Pods counted on each node (active ones), in snapshot order.
fn pods_by_node(view: &View) -> PerNode<Vec<PodIx>> {
    let mut by_node: PerNode<Vec<PodIx>> = view.nodes.iter().map(|_| Vec::new()).collect();
    for pod in view.pod_indices() {
        if let Some(node) = view.location(pod, false) {
            by_node[node].push(pod);
        }
    }
    by_node
}

/// Where pods go and how much room there is.
pub(super) struct Destinations {
    /// Whether each node is a destination.
    pub is_destination: PerNode<bool>,
    /// The most each destination may hold, per judged resource.
    pub ceilings: PerNode<Vec<i64>>,
    /// Room left below the ceilings over all destinations, per judged resource.
    pub available: Vec<i64>,
    /// What the destinations are, for skip details.
    pub what: Destination,
}

impl Destinations {
    pub fn new(
        utilization: &Utilization,
        destinations: &[NodeIx],
        ceilings: PerNode<Vec<i64>>,
        what: Destination,
    ) -> Destinations {
        let mut is_destination: PerNode<bool> = utilization.usage.iter().map(|_| false).collect();
        let mut available = vec![0; utilization.resources.len()];
        for &node in destinations {
            is_destination[node] = true;
            for (i, room) in available.iter_mut().enumerate() {
                *room += ceilings[node][i] - utilization.used(node)[i];
            }
        }
        Destinations {
            is_destination,
            ceilings,
            available,
            what,
        }
    }

    /// Room is left in every judged resource (upstream's stop condition).
    pub fn has_room(&self) -> bool {
        self.available.iter().all(|room| *room > 0)
    }

    /// The destinations that take `amount` below their ceiling.
    fn with_room_for(&self, utilization: &Utilization, amount: &[i64]) -> PerNode<bool> {
        self.is_destination
            .indices()
            .map(|node| {
                self.is_destination[node]
                    && utilization
                        .used(node)
                        .iter()
                        .zip(amount)
                        .zip(&self.ceilings[node])
                        .all(|((used, more), ceiling)| used + more <= *ceiling)
            })
            .collect()
    }
}

/// How a plugin's source nodes give up pods.
pub(super) struct Drain<'a> {
    /// The nodes that give up pods, in the order they do.
    pub sources: &'a [NodeIx],
    /// The plugin's thresholds, whose resources a pod must request when
    /// `only_thresholding_resources` (`evictionModes: [OnlyThresholdingResources]`).
    pub thresholds: &'a ResourceThresholds,
    pub only_thresholding_resources: bool,
    pub evictable_namespaces: &'a Namespaces,
    /// At most this many evictions from each source (`evictionLimits.node`).
    pub limit: Option<u32>,
    /// Whether a source still needs to give up pods, judged on its current usage.
    pub keep_going: &'a dyn Fn(&Utilization, NodeIx) -> bool,
    /// Why a source's pods go (given its name), judged as it starts giving them up.
    pub reason: &'a dyn Fn(&Utilization, NodeIx, String) -> EvictionReason,
}

/// Evicts pods from each source in turn, in the sources' order, until the destinations have no
/// room left (upstream's stop condition).
pub(super) fn drain(
    planner: &mut Planner,
    context: &Context,
    utilization: &mut Utilization,
    mut destinations: Destinations,
    drain: &Drain,
) {
    let pods = pods_by_node(&planner.view);
    let thresholding = thresholding(drain.thresholds);
    let admits = |pod: &Pod| {
        drain.evictable_namespaces.admits(&pod.namespace)
            && (!drain.only_thresholding_resources || requests_any(pod, &thresholding))
    };
    for &node in drain.sources {
        let mut order: Vec<PodIx> = pods[node]
            .iter()
            .copied()
            .filter(|&pod| planner.is_candidate(pod) && admits(planner.view.pod(pod)))
            .collect();
        planner
            .view
            .sort_for_eviction(context.evictor.no_eviction_policy, &mut order);
        let name = planner.view.nodes[node].node.name.clone();
        let reason = (drain.reason)(utilization, node, name);
        let source = Source {
            node,
            reason,
            order,
        };
        drain_node(
            planner,
            context,
            utilization,
            &mut destinations,
            &source,
            drain,
        );
        if !destinations.has_room() {
            break;
        }
    }
}

/// One source node: why its pods go, and those that may, in eviction order.
struct Source {
    node: NodeIx,
    reason: EvictionReason,
    order: Vec<PodIx>,
}

/// Evicts the source's pods while it needs to and destinations have room.
fn drain_node(
    planner: &mut Planner,
    context: &Context,
    utilization: &mut Utilization,
    destinations: &mut Destinations,
    source: &Source,
    drain: &Drain,
) {
    let mut evicted = 0;
    for &pod in &source.order {
        if !(drain.keep_going)(utilization, source.node) || !destinations.has_room() {
            return;
        }
        if drain.limit.is_some_and(|limit| evicted >= limit) {
            let detail = SkipDetail::NodeDrainLimit {
                limit: drain.limit.unwrap_or_default(),
                node: planner.view.nodes[source.node].node.name.clone(),
            };
            planner.skip(context, pod, detail);
            return;
        }
        let Some(amount) = utilization.pod(&planner.view, pod) else {
            planner.skip(context, pod, SkipDetail::NoMetrics);
            continue;
        };
        let mask = destinations.with_room_for(utilization, &amount);
        let allowed = Allowed {
            nodes: &mask,
            others: Others::NoRoom(destinations.what),
        };
        let attempt = planner.attempt(
            context,
            pod,
            source.reason.clone(),
            Fit::Required(Some(allowed)),
        );
        if let Attempt::Evicted { landing } = attempt {
            evicted += 1;
            move_amount(utilization, destinations, source.node, landing, &amount);
        }
    }
}

/// Counts a moved pod off its source and onto its landing, and spends the room it takes.
fn move_amount(
    utilization: &mut Utilization,
    destinations: &mut Destinations,
    source: NodeIx,
    landing: Option<NodeIx>,
    amount: &[i64],
) {
    let usage = utilization.usage[source].as_mut().expect("a judged source");
    for (used, moved) in usage.iter_mut().zip(amount) {
        *used -= moved;
    }
    for (room, moved) in destinations.available.iter_mut().zip(amount) {
        *room -= moved;
    }
    if let Some(usage) = landing.and_then(|node| utilization.usage[node].as_mut()) {
        for (used, moved) in usage.iter_mut().zip(amount) {
            *used += moved;
        }
    }
}
