//! The plugin registry, planner side: one module per strategy, named after the upstream plugin,
//! and the one dispatch from a policy's [`Strategy`] to its rule. Adding a plugin touches this
//! file and the plugin's own module (its arguments have their registry in `policy/plugins/`),
//! and, for why it evicts, a variant of `EvictionReason` with its code in `plan/vocabulary/reasons.rs`
//! (a test holds docs/commands.md's table of codes to them); CONTRIBUTING.md's recipe "Add a
//! plugin" lists every file.
//!
//! Every rule works on the planner's one working state and decides through
//! [`Planner::attempt`], so protections, PDBs, limits and the better-place check are the same
//! for all of them, and a pod one rule evicts is gone for the next.

mod anti_affinity;
mod duplicates;
mod failed_pods;
mod high_node_utilization;
mod low_node_utilization;
mod node_affinity;
mod node_taints;
mod node_utilization;
mod pod_life_time;
mod too_many_restarts;
mod topology_spread;

use std::sync::Arc;

use crate::hash::HashMap;
use crate::plan::view::PodState;
use crate::plan::view::index::PodIx;
use crate::plan::{Context, EvictionReason, Fit, Planner, WouldReturn};
use crate::policy::{Namespaces, Profile, Strategy};
use crate::snapshot::{Phase, Requirements};

/// Runs one strategy of a profile on the working state.
pub(super) fn run(planner: &mut Planner, context: &Context, strategy: &Strategy) {
    match strategy {
        Strategy::InterPodAntiAffinity(args) => anti_affinity::run(planner, context, args),
        Strategy::TopologySpread(args) => topology_spread::run(planner, context, args),
        Strategy::Duplicates(args) => duplicates::run(planner, context, args),
        Strategy::NodeAffinity(args) => node_affinity::run(planner, context, args),
        Strategy::NodeTaints(args) => node_taints::run(planner, context, args),
        Strategy::TooManyRestarts(args) => too_many_restarts::run(planner, context, args),
        Strategy::PodLifeTime(args) => pod_life_time::run(planner, context, args),
        Strategy::FailedPods(args) => failed_pods::run(planner, context, args),
        Strategy::LowNodeUtilization(args) => low_node_utilization::run(planner, context, args),
        Strategy::HighNodeUtilization(args) => high_node_utilization::run(planner, context, args),
    }
}

/// The check a profile's plugins put on every move, if one of them has one: RemoveDuplicates
/// would evict a replacement that lands where its group is then over the even share, so a move
/// there (by any plugin, its own included) would only move the excess.
pub(super) fn would_return(profile: &Profile) -> Option<WouldReturn<'_>> {
    profile
        .balance
        .iter()
        .find_map(|strategy| match strategy {
            Strategy::Duplicates(args) => Some(args),
            _ => None,
        })
        .map(|args| -> WouldReturn<'_> {
            Arc::new(move |view, pod, node| duplicates::over_share_on(view, args, pod, node))
        })
}

/// Whether a plugin's `namespaces` and `labelSelector` let it act on a pod.
fn admits(
    planner: &Planner,
    namespaces: &Namespaces,
    label_selector: Option<&Requirements>,
    pod: PodIx,
) -> bool {
    let pod = planner.view.pod(pod);
    namespaces.admits(&pod.namespace) && label_selector.is_none_or(|s| s.matches(&pod.labels))
}

/// Whether a finished pod (`Succeeded` or `Failed`, not terminating) may be chosen: it is on a
/// considered node and no strategy chose it yet. Finished pods count for nothing in the other
/// strategies; only the lifecycle ones (PodLifeTime, RemoveFailedPods) evict them, as upstream.
fn is_finished_candidate(planner: &Planner, pod: PodIx) -> bool {
    let view = &planner.view;
    let pod_ref = view.pod(pod);
    matches!(pod_ref.phase, Phase::Succeeded | Phase::Failed)
        && !pod_ref.terminating
        && view.state[pod] == PodState::Gone
        && view.pod_node[pod].is_some_and(|node| view.nodes[node].considered)
}

/// Age in whole seconds at the snapshot's `now`, from `metadata.creationTimestamp` (as
/// upstream's lifetime checks); `None` when not recorded.
fn age_seconds(planner: &Planner, pod: PodIx) -> Option<i64> {
    let created = planner.view.pod(pod).created?;
    Some(
        planner
            .view
            .snapshot
            .now
            .signed_duration_since(created)
            .num_seconds(),
    )
}

/// Attempts each violating pod with its reason, in the eviction order (lowest priority first,
/// then BestEffort, then the newest: `View::sort_for_eviction`).
fn evict_in_order(
    planner: &mut Planner,
    context: &Context,
    violating: Vec<(PodIx, EvictionReason)>,
    fit: Fit,
) {
    let mut order: Vec<PodIx> = violating.iter().map(|(pod, _)| *pod).collect();
    let mut reasons: HashMap<PodIx, EvictionReason> = violating.into_iter().collect();
    planner
        .view
        .sort_for_eviction(context.evictor.no_eviction_policy, &mut order);
    for pod in order {
        let reason = reasons.remove(&pod).expect("one reason per violating pod");
        planner.attempt(context, pod, reason, fit);
    }
}
