//! The planner: `plan(&Snapshot, &Policy) -> Plan`, pure and deterministic.
//!
//! It refreshes node labels from the vSphere inventory, runs the deschedule strategies of every
//! profile and then the balance ones on one shared working state, and derives the DRS rules the
//! resulting placement needs. Every decision, and every candidate it decided not to evict, is
//! data in the returned [`Plan`]; nothing here does I/O or reads a clock.

// The layers, bottom first: each imports only those above it in this list (the plugins and
// what-if stand on all of them), so a reader can start at `model` and never meet a name that
// is defined further up.
mod drs;
pub mod exposure;
mod judge;
mod model;
#[doc(hidden)]
#[cfg(feature = "bench")]
pub mod phases;
mod plugins;
mod view;
mod vocabulary;
mod vsphere;
pub mod what_if;

#[cfg(test)]
pub(crate) mod testing;

use std::collections::BTreeSet;
use std::sync::Arc;

pub use drs::{DrsAction, DrsRuleChange, Edit, Workload, rule_name, workload};
pub use exposure::{Exposure, ExposureClass};
pub use model::warning::{Candidates, UnwritableRule, Warning};
pub use model::workload::belongs_to_its_node;
pub use vocabulary::events::{EVENT_ACTION, EventIntent, EventReason};
pub use vocabulary::reasons::{
    EvictionCode, EvictionReason, LifeTime, PodFailure, SharedDomain, Skew, SkipCode, SkipDetail,
    Strength, Usage,
};
pub use vocabulary::{
    Eviction, NodeUtilization, Plan, ResourceUtilization, Skip, SkipReason, UtilizationClass,
};
pub use vsphere::drs_batch::{ClusterWrites, DrsBatch, RuleWrite, Settled};
pub use vsphere::labels::{LabelApply, LabelChange, MappedBy, MappedNode};

use crate::policy::{
    EvictorArgs, PluginKind, Policy, PriorityThreshold, Profile, SourceKind, Strategy,
};
use crate::snapshot::{Labels, Snapshot};
use judge::budget::Budget;
use view::index::{NodeIx, PodIx};
use view::{NodeRefusal, NodeState, PodState, View};
use vsphere::sites::SiteLabels;

/// A profile's `priorityThreshold` names a PriorityClass the snapshot does not have.
#[derive(Debug, thiserror::Error)]
#[error(
    "profile {profile}: priorityThreshold names PriorityClass {name}, which the cluster does not \
     have (it has {})",
    listed(known)
)]
pub struct UnknownPriorityClass {
    pub profile: String,
    pub name: String,
    /// Every class the name could have been.
    pub known: Vec<String>,
}

/// The classes a cluster has, as a message lists them: the first few, and how many more (a
/// cluster with hundreds would make a line of thousands of characters).
fn listed(known: &[String]) -> String {
    const SHOWN: usize = 8;
    let mut text = known
        .iter()
        .take(SHOWN)
        .map(|name| crate::text::shown(name).to_string())
        .collect::<Vec<_>>()
        .join(", ");
    if known.len() > SHOWN {
        text.push_str(&format!(" and {} more", known.len() - SHOWN));
    }
    text
}

/// Where the policy meets the snapshot: every PriorityClass a threshold names must exist (as
/// upstream, which reads the class and fails without it). Called before [`plan`], which
/// protects every pod of a profile whose class is unknown rather than guess its value.
pub fn check_priority_classes(
    snapshot: &Snapshot,
    policy: &Policy,
) -> Result<(), UnknownPriorityClass> {
    for profile in &policy.profiles {
        if let PriorityThreshold::Name(name) = &profile.evictor.priority_threshold
            && judge::evictor::priority_class_value(snapshot, name).is_none()
        {
            return Err(UnknownPriorityClass {
                profile: profile.name.clone(),
                name: name.clone(),
                known: judge::evictor::priority_class_names(snapshot)
                    .into_iter()
                    .map(str::to_string)
                    .collect(),
            });
        }
    }
    Ok(())
}

/// Plan a run. Pure: the same snapshot and policy always give the same plan.
pub fn plan(snapshot: &Snapshot, policy: &Policy) -> Plan {
    let mut planner = Planner::new(snapshot, policy);
    planner.run_strategies();
    planner.finish()
}

#[derive(Clone, Copy)]
enum Phase {
    Deschedule,
    Balance,
}

/// Compute label changes and the planning view of every node.
fn refresh_nodes<'a>(
    snapshot: &'a Snapshot,
    policy: &'a Policy,
    plan: &mut Plan,
) -> Vec<NodeState<'a>> {
    let keys = &policy.vsphere.labels;
    let mapping = snapshot.inventory.as_ref().map(|inventory| {
        let mut mapping = vsphere::labels::map_nodes(&snapshot.nodes, inventory);
        if policy.vsphere.source == SourceKind::NodeLabel {
            mapping.placed_by_node_label();
        }
        mapping
    });
    if mapping.is_none() {
        plan.warnings.push(Warning::NoInventory);
    }
    let resolution = resolve_sites(snapshot, policy, plan);
    let sites = SiteLabels::of(resolution.as_ref());
    let mut nodes = Vec::with_capacity(snapshot.nodes.len());
    for (index, node) in snapshot.nodes.iter().enumerate() {
        let placement = mapping.as_ref().and_then(|m| m.placements[index].clone());
        let mut node_labels = node.labels.to_map();
        let site = placement.as_ref().and_then(|p| sites.site_of(p));
        match &placement {
            Some(placement) => {
                if let Some(warning) = vsphere::labels::stale_capv_label(node, placement) {
                    plan.warnings.push(warning);
                }
                if let (SiteLabels::Trusted(map), Some(site)) = (sites, site)
                    && let Some(warning) = vsphere::sites::stale_zone_label(node, map, site)
                {
                    plan.warnings.push(warning);
                }
                // With source node-label the hosts are the label's values: nothing to write.
                let desired = if policy.vsphere.source.writes_labels() {
                    let mut desired = vsphere::labels::desired_labels(keys, placement);
                    // Its site, or none (its VM on a host outside every site): only on sites
                    // that hold together is a site label written or removed.
                    if let (Some(key), SiteLabels::Trusted(_)) = (&keys.site, sites) {
                        desired.insert(key.clone(), site.map(str::to_string));
                    }
                    desired
                } else {
                    Default::default()
                };
                let mut changes = vsphere::labels::changes(&node.name, &node.labels, &desired);
                if policy.vsphere.source.writes_labels() {
                    changes.extend(vsphere::labels::former_keys(node, keys.owned()));
                }
                if !changes.is_empty() {
                    plan.label_applies
                        .push(vsphere::labels::apply(node, keys.owned(), &changes));
                }
                for removed in changes.iter().filter(|change| change.new.is_none()) {
                    node_labels.remove(removed.key.as_str());
                }
                plan.label_changes.extend(changes);
                let set = desired
                    .into_iter()
                    .filter_map(|(k, v)| Some((k.into(), v?.into())));
                node_labels.extend(set);
            }
            None => {
                // Unmapped, or vSphere not observed: whatever host label it carries is stale
                // or unverifiable, so it puts the node in no host domain.
                for key in keys.owned() {
                    node_labels.remove(key);
                }
            }
        }
        if let (SiteLabels::Untrusted, Some(key)) = (sites, &keys.site) {
            // Kept on the node (nothing is written on sites that do not hold together), but
            // no site domain is judged from it.
            node_labels.remove(key.as_str());
        }
        let node_labels = Labels::from(node_labels);
        let selected = policy
            .node_selector
            .as_ref()
            .is_none_or(|s| s.matches(&node_labels));
        let host_usable = placement
            .as_ref()
            .and_then(|p| p.host)
            .is_some_and(|h| h.is_usable());
        let refusal = if !node.ready {
            Some(NodeRefusal::NotReady)
        } else if node.unschedulable {
            Some(NodeRefusal::Cordoned)
        } else if !selected {
            Some(NodeRefusal::NotSelected)
        } else if mapping.is_some() && placement.is_none() {
            Some(NodeRefusal::Unmapped)
        } else if mapping.is_some() && !host_usable {
            Some(NodeRefusal::HostUnusable)
        } else {
            None
        };
        nodes.push(NodeState {
            node,
            labels: node_labels,
            placement,
            considered: node.ready && selected,
            can_receive: refusal.is_none(),
            refusal,
            site: site.map(str::to_string),
        });
    }
    if let Some(mapping) = mapping {
        plan.warnings.extend(mapping.warnings);
        if let (SiteLabels::Trusted(map), Some(inventory)) = (sites, &snapshot.inventory) {
            let warnings = vsphere::sites::rule_warnings(inventory, map, &mapping.placements);
            plan.warnings.extend(warnings);
        }
        if let Some(warning) = vsphere::source::unmapped(&policy.vsphere, &mapping.unmapped) {
            plan.warnings.push(warning);
        }
        plan.mapped_nodes = mapping.mapped;
        plan.unmapped_nodes = mapping.unmapped;
    }
    nodes
}

/// The sites of the inventory, where the policy has them; a warning when they do not hold
/// together (commands refuse such a policy first, see [`crate::sites`]).
fn resolve_sites(
    snapshot: &Snapshot,
    policy: &Policy,
    plan: &mut Plan,
) -> Option<crate::sites::SiteResolution> {
    let settings = policy.vsphere.site_settings()?;
    let resolution = crate::sites::resolve(snapshot.inventory.as_ref()?, settings);
    if !resolution.findings.is_empty() {
        plan.warnings.push(Warning::SitesUntrusted {
            findings: resolution.findings.len(),
        });
    }
    Some(resolution)
}

/// The profile and strategy a decision is made for.
#[derive(Clone)]
pub(crate) struct Context<'p> {
    pub profile: &'p str,
    pub strategy: PluginKind,
    pub evictor: &'p EvictorArgs,
    pub priority_threshold: judge::evictor::Threshold<'p>,
    /// A plugin of the profile that would evict a moved pod's replacement again where it
    /// lands (the registry says which: [`plugins::would_return`]); such a move is no move.
    pub would_return: Option<WouldReturn<'p>>,
}

/// One plugin's verdict on where a replacement lands: true when that plugin would evict the
/// replacement of `pod` again on that node. The core asks it of every move without knowing
/// which plugin answers.
pub(crate) type WouldReturn<'p> = Arc<dyn Fn(&View, PodIx, NodeIx) -> bool + Send + Sync + 'p>;

/// Working state shared by the strategies.
pub(crate) struct Planner<'a> {
    pub view: View<'a>,
    budget: Budget,
    pub plan: Plan,
    /// (pod, strategy) pairs already skipped, so a pod is reported once per strategy.
    tried: BTreeSet<(PodIx, PluginKind)>,
    /// Nodes with planned label changes, which evictions may depend on.
    relabelled: judge::dependencies::Relabelling,
    /// Workloads rolling out, none of whose pods is evicted.
    rollouts: judge::rollout::Rollouts,
    /// The availability gate and pacing.
    guard: judge::availability::Guard,
}

/// What an eviction needs in the way of a better place.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Fit<'c> {
    /// The profile's `nodeFit` decides: when on, some other node must take the pod. For
    /// strategies that restart pods (lifetime, restarts, failures, taints): a replacement on the
    /// same node is as good as any.
    Evictor,
    /// As `Evictor`, for strategies that evict to move the pod (anti-affinity, duplicates): a
    /// replacement the scheduler would put back on its node is no move, and the pod stays.
    Move,
    /// `topologyBalanceNodeFit: true`: some other node must take the pod without breaking
    /// this spread constraint either, whatever `nodeFit` says.
    Balance(&'c crate::snapshot::SpreadConstraint),
    /// `topologyBalanceNodeFit: false`: evict even when no node would take the pod now (as
    /// upstream users set it, so a cluster autoscaler adds one), whatever `nodeFit` says.
    Unchecked,
    /// `includeSoftConstraints`: the pod moves for a preferred anti-affinity term only to a node
    /// that breaks no preferred anti-affinity, its own or another pod's against it, whatever
    /// `nodeFit` says (a soft violation is worth a move only when a clean place exists).
    AvoidPreferred,
    /// The strategy itself needs another node to take the pod, whatever `nodeFit` says (as
    /// upstream's node affinity plugin checks); with a mask, only the nodes it marks qualify.
    Required(Option<judge::feasibility::Allowed<'c>>),
}

/// What became of one attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Attempt {
    Evicted { landing: Option<NodeIx> },
    Skipped(SkipReason),
}

impl<'a> Planner<'a> {
    /// Map nodes to VMs, refresh their labels and build the working state.
    fn new(snapshot: &'a Snapshot, policy: &'a Policy) -> Planner<'a> {
        let mut plan = Plan::default();
        // The node refresh runs beside the label index, which needs no node.
        let view = View::new(snapshot, policy, || {
            refresh_nodes(snapshot, policy, &mut plan)
        });
        let budget = Budget::new(&view);
        let guard = judge::availability::Guard::new(&view, &policy.vsphere.availability);
        let relabelled = judge::dependencies::relabelled(&view, &plan.label_changes);
        Planner {
            view,
            budget,
            plan,
            tried: BTreeSet::new(),
            relabelled,
            rollouts: judge::rollout::Rollouts::find(snapshot),
            guard,
        }
    }

    /// Every profile's deschedule strategies, then every profile's balance strategies.
    fn run_strategies(&mut self) {
        let ready = self.view.nodes.iter().filter(|n| n.considered).count();
        if ready < 2 {
            // As upstream: with fewer than two candidate nodes there is nowhere to move anything.
            self.plan.warnings.push(Warning::TooFewReadyNodes { ready });
            return;
        }
        let policy = self.view.policy;
        for phase in [Phase::Deschedule, Phase::Balance] {
            for profile in &policy.profiles {
                let strategies = match phase {
                    Phase::Deschedule => &profile.deschedule,
                    Phase::Balance => &profile.balance,
                };
                for strategy in strategies {
                    self.run_strategy(profile, strategy);
                }
            }
        }
    }

    fn run_strategy(&mut self, profile: &Profile, strategy: &Strategy) {
        let context = self.context(profile, strategy.kind());
        plugins::run(self, &context, strategy);
    }

    /// Derive the DRS rules the final placement needs.
    fn finish(self) -> Plan {
        let Planner { view, mut plan, .. } = self;
        drs::plan_rules(&view, &mut plan);
        plan.exposure = exposure::assess(&view, &plan.drs_rules);
        let source = view.policy.vsphere.source;
        plan.drs_batches = vsphere::drs_batch::batches(&plan.drs_rules, source);
        if let Some(warning) = vsphere::drs_batch::unwritable(&plan.drs_rules, source) {
            plan.warnings.push(warning);
        }
        plan.events_on_failure = view.policy.eviction_failure_events;
        plan
    }

    fn context<'p>(&self, profile: &'p Profile, strategy: PluginKind) -> Context<'p> {
        Context {
            profile: &profile.name,
            strategy,
            evictor: &profile.evictor,
            priority_threshold: judge::evictor::Threshold::resolve(
                self.view.snapshot,
                &profile.evictor.priority_threshold,
            ),
            would_return: plugins::would_return(profile),
        }
    }

    /// Whether a pod may be chosen by a strategy at all: active, on a considered node.
    pub fn is_candidate(&self, pod: PodIx) -> bool {
        self.view.state[pod] == PodState::Active
            && self.view.pod_node[pod].is_some_and(|node| self.view.nodes[node].considered)
    }

    /// Try to evict a pod: protections, a rollout, then a better place, then PDBs and limits,
    /// then the availability gate and pacing. On
    /// success the working state is updated at once, so later decisions see the pod gone.
    pub fn attempt(
        &mut self,
        context: &Context,
        pod: PodIx,
        reason: EvictionReason,
        fit: Fit,
    ) -> Attempt {
        let protections = judge::evictor::protections(
            &self.view,
            context.evictor,
            context.priority_threshold,
            pod,
        );
        if !protections.is_empty() {
            return self.skip(context, pod, SkipDetail::Protected(protections));
        }
        // A running replica only: evicting a finished pod takes nothing the rollout needs.
        if self.view.state[pod] == PodState::Active
            && let Some(rollout) = self.rollouts.of(self.view.pod(pod))
        {
            let detail = SkipDetail::RollingOut(rollout.clone());
            return self.skip(context, pod, detail);
        }
        let landing = match self.landing(context, pod, fit) {
            Ok(landing) => landing,
            Err(detail) => return self.skip(context, pod, detail),
        };
        let charge = match self.budget.check(&self.view, pod) {
            Ok(charge) => charge,
            Err(refusal) => return self.skip(context, pod, SkipDetail::Budget(refusal)),
        };
        let paced_as = match self.guard.check(&self.view, pod) {
            Ok(paced_as) => paced_as,
            Err(refusal) => return self.skip(context, pod, SkipDetail::Guard(refusal)),
        };
        self.budget.spend(&self.view, pod, charge);
        self.guard.spend(&self.view, pod, paced_as.as_deref());
        let depends_on_labels_of = judge::dependencies::of(&self.view, &self.relabelled, pod);
        let pod_ref = self.view.pod(pod);
        let from = self.view.pod_node[pod].expect("candidates are bound to a known node");
        // A finished pod (RemoveFailedPods, PodLifeTime) holds nothing and its controller has
        // replaced it already: its eviction frees nothing and lands nowhere.
        let holds_resources = self.view.state[pod] == PodState::Active;
        if holds_resources {
            self.view.move_requests(pod, from, landing);
        }
        self.view.state[pod] = PodState::Evicted {
            landing: landing.filter(|_| holds_resources),
        };
        let node = &self.view.nodes[from];
        self.plan.evictions.push(Eviction {
            namespace: pod_ref.namespace.to_string(),
            pod: pod_ref.name.clone(),
            node: node.node.name.clone(),
            host: node.host().map(str::to_string),
            strategy: context.strategy,
            profile: context.profile.to_string(),
            reason,
            fits_on: landing.map(|n| describe_node(&self.view, n)),
            uid: Some(pod_ref.uid.clone()).filter(|uid| !uid.is_empty()),
            grace_period_seconds: self.view.policy.grace_period_seconds,
            depends_on_labels_of,
            landing: landing.map(|n| self.view.nodes[n].node.name.clone()),
            paced_as,
        });
        Attempt::Evicted { landing }
    }

    /// The node the scheduler would give the pod's replacement, when the check `fit` asks for
    /// is made; `Err` says why no other node would take it, or that the scheduler would put the
    /// replacement back where the pod leaves: on its node, or (balancing a spread constraint) in
    /// its domain.
    fn landing(
        &self,
        context: &Context,
        pod: PodIx,
        fit: Fit,
    ) -> Result<Option<NodeIx>, SkipDetail> {
        let (fix, among) = match fit {
            Fit::Evictor | Fit::Move if context.evictor.node_fit => (None, None),
            Fit::Balance(constraint) => (Some(constraint), None),
            Fit::Required(among) => (None, among),
            Fit::AvoidPreferred => (None, None),
            Fit::Evictor | Fit::Move | Fit::Unchecked => return Ok(None),
        };
        let found = if let Fit::AvoidPreferred = fit {
            judge::feasibility::find_node_avoiding_preferred(&self.view, pod, context.evictor)
        } else {
            judge::feasibility::find_node_among(&self.view, pod, context.evictor, fix, among)
        };
        let landing = found.map_err(|none| SkipDetail::NoFeasibleNode(none.into_owned()))?;
        let from = self.view.pod_node[pod].expect("candidates are bound to a known node");
        let key = fix.map(|constraint| constraint.topology_key.as_str());
        let same_domain = key
            .and_then(|key| self.view.domains(key))
            .is_some_and(|d| d.of_node[from].is_some() && d.of_node[from] == d.of_node[landing]);
        let moves = matches!(fit, Fit::Move | Fit::Balance(_) | Fit::AvoidPreferred);
        // RemoveDuplicates' own evictions included: a replacement on a node where its group is
        // then over the even share would be moved again.
        if moves
            && landing != from
            && let Some(would_return) = &context.would_return
            && would_return(&self.view, pod, landing)
        {
            return Err(SkipDetail::WouldReturnOverShare {
                node: describe_node(&self.view, landing),
            });
        }
        if moves && (landing == from || same_domain) {
            return Err(SkipDetail::WouldReturn {
                node: describe_node(&self.view, landing),
                key: key.filter(|_| landing != from).map(str::to_string),
            });
        }
        Ok(Some(landing))
    }

    fn skip(&mut self, context: &Context, pod: PodIx, detail: SkipDetail) -> Attempt {
        let reason = detail.reason();
        if self.tried.insert((pod, context.strategy)) {
            let pod_ref = self.view.pod(pod);
            self.plan.skipped.push(Skip {
                namespace: pod_ref.namespace.to_string(),
                pod: pod_ref.name.clone(),
                node: pod_ref.node_name.as_deref().map(str::to_string),
                strategy: context.strategy,
                profile: context.profile.to_string(),
                reason,
                detail,
            });
        }
        Attempt::Skipped(reason)
    }
}

/// `node (host)` for messages.
fn describe_node(view: &View, node: NodeIx) -> String {
    let state = &view.nodes[node];
    match state.host() {
        Some(host) => format!("{} ({host})", state.node.name),
        None => state.node.name.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_priority_class_lists_a_few_of_the_cluster_s_and_counts_the_rest() {
        let error = |count: usize| UnknownPriorityClass {
            profile: "p".to_string(),
            name: "gold".to_string(),
            known: (0..count).map(|i| format!("class-{i:03}")).collect(),
        };
        assert_eq!(
            error(2).to_string(),
            "profile p: priorityThreshold names PriorityClass gold, which the cluster does not \
             have (it has class-000, class-001)"
        );
        let many = error(500).to_string();
        assert!(
            many.ends_with("class-006, class-007 and 492 more)"),
            "{many}"
        );
        assert!(many.chars().count() < 200, "{many}");
    }
}
