//! The planner's phases one at a time, for the benchmarks in `benches/` (not a stable API).
//!
//! [`plan`](crate::plan::plan) is exactly `Phases::new`, every strategy in policy order, then
//! `drs_rules`; timing them apart shows which one grows with the cluster.

use crate::plan::{Planner, judge::feasibility, vsphere::labels};
use crate::policy::{PluginKind, Policy, Strategy};
use crate::snapshot::Snapshot;

/// A planner stopped between phases.
pub struct Phases<'a> {
    planner: Planner<'a>,
}

impl<'a> Phases<'a> {
    /// Node↔VM mapping, label refresh and the working state with its indexes.
    pub fn new(snapshot: &'a Snapshot, policy: &'a Policy) -> Phases<'a> {
        Phases {
            planner: Planner::new(snapshot, policy),
        }
    }

    /// Run one strategy of the policy, by profile name and plugin, on the working state.
    /// Returns how many evictions the plan holds afterwards.
    ///
    /// # Panics
    /// When the policy has no such strategy.
    pub fn run_strategy(&mut self, profile: &str, strategy: PluginKind) -> usize {
        let policy = self.planner.view.policy;
        let profile = policy
            .profiles
            .iter()
            .find(|p| p.name == profile)
            .unwrap_or_else(|| panic!("no profile {profile}"));
        let found: &Strategy = profile
            .deschedule
            .iter()
            .chain(&profile.balance)
            .find(|s| s.kind() == strategy)
            .unwrap_or_else(|| panic!("no strategy {strategy} in profile {}", profile.name));
        self.planner.run_strategy(profile, found);
        self.planner.plan.evictions.len()
    }

    /// Every strategy, as `plan()` runs them.
    pub fn run_strategies(&mut self) {
        self.planner.run_strategies();
    }

    /// The feasibility check ("would another node take it?") for every `step`-th candidate
    /// pod, with the first profile's evictor. Returns how many have a place.
    pub fn feasible(&self, step: usize) -> usize {
        let Some(profile) = self.planner.view.policy.profiles.first() else {
            return 0;
        };
        self.planner
            .view
            .pod_indices()
            .step_by(step.max(1))
            .filter(|&pod| self.planner.is_candidate(pod))
            .filter(|&pod| {
                feasibility::find_node(&self.planner.view, pod, &profile.evictor, None).is_ok()
            })
            .count()
    }

    /// DRS rule derivation on the current state; returns the finished plan.
    pub fn drs_rules(self) -> crate::plan::Plan {
        self.planner.finish()
    }
}

/// Node↔VM mapping alone; returns how many nodes mapped.
pub fn map_nodes(snapshot: &Snapshot) -> usize {
    snapshot.inventory.as_ref().map_or(0, |inventory| {
        labels::map_nodes(&snapshot.nodes, inventory)
            .placements
            .iter()
            .flatten()
            .count()
    })
}
