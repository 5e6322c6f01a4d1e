//! The plugin registry, planner side: one module per strategy, named after the upstream plugin,
//! and the one dispatch from a policy's [`Strategy`] to its rule. Adding a plugin touches this
//! file and the plugin's own module (its arguments have their registry in `policy/plugins/`).
//!
//! Every rule works on the planner's one working state and decides through
//! [`Planner::attempt`], so protections, PDBs, limits and the better-place check are the same
//! for all of them, and a pod one rule evicts is gone for the next.

mod anti_affinity;
mod duplicates;
mod topology_spread;

use super::{Context, Planner};
use crate::policy::Strategy;

/// Runs one strategy of a profile on the working state.
pub(super) fn run(planner: &mut Planner, context: &Context, strategy: &Strategy) {
    match strategy {
        Strategy::InterPodAntiAffinity(args) => anti_affinity::run(planner, context, args),
        Strategy::TopologySpread(args) => topology_spread::run(planner, context, args),
        Strategy::Duplicates(args) => duplicates::run(planner, context, args),
    }
}
