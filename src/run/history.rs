//! What a live run writes into the eviction history (`snapshot::history`), as values the
//! executor sends through the run lock: before the evictions, the history the lock read plus
//! one entry per paced eviction; after them, the same without the entries of evictions that
//! certainly did not happen. Entries of evictions that may have happened (an answer not
//! awaited) stay: counting one too many only delays the workload's next eviction.

use chrono::{DateTime, Utc};

use crate::outcome::EvictionOutcome;
use crate::plan::Plan;
use crate::snapshot::history::{self, Compact, PastEviction};

/// A run's record of its paced evictions.
#[derive(Clone, Debug, PartialEq)]
pub struct PacingRecord {
    /// What the history held when the lock was taken.
    earlier: Vec<PastEviction>,
    /// Each paced eviction of the plan: its index and its entry.
    sent: Vec<(usize, PastEviction)>,
    /// When they were recorded.
    at: DateTime<Utc>,
}

impl PacingRecord {
    /// The paced evictions of `plan` (those with `paced_as`), recorded `at` after `earlier`;
    /// `None` when the plan paces none.
    pub fn of(plan: &Plan, earlier: &[PastEviction], at: DateTime<Utc>) -> Option<PacingRecord> {
        let sent: Vec<(usize, PastEviction)> = plan
            .evictions
            .iter()
            .enumerate()
            .filter_map(|(index, eviction)| {
                let workload = eviction.paced_as.clone()?;
                Some((
                    index,
                    PastEviction::new(at, &workload, &eviction.pod, eviction.strategy.as_str()),
                ))
            })
            .collect();
        (!sent.is_empty()).then(|| PacingRecord {
            earlier: earlier.to_vec(),
            sent,
            at,
        })
    }

    /// How many evictions it records.
    pub fn len(&self) -> usize {
        self.sent.len()
    }

    /// The history to write before the evictions are sent.
    pub fn before(&self) -> Compact {
        self.render(|_| true)
    }

    /// The history once `outcomes` (one per eviction of the plan) are known: without
    /// the entries of evictions that certainly did not happen. `None` when every recorded
    /// eviction may have happened, so [`PacingRecord::before`] stands.
    pub fn after(&self, outcomes: &[EvictionOutcome]) -> Option<Compact> {
        let happened = |index: usize| outcomes.get(index).is_some_and(|o| o.may_have_evicted());
        if self.sent.iter().all(|(index, _)| happened(*index)) {
            return None;
        }
        Some(self.render(happened))
    }

    /// The earlier entries and those of the evictions `kept` keeps.
    fn render(&self, kept: impl Fn(usize) -> bool) -> Compact {
        let entries: Vec<PastEviction> = self
            .earlier
            .iter()
            .cloned()
            .chain(
                self.sent
                    .iter()
                    .filter(|(index, _)| kept(*index))
                    .map(|(_, entry)| entry.clone()),
            )
            .collect();
        history::encode(&entries, self.at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::{Cause, Failure, NotAttempted, Signal, StopReason};
    use crate::plan::Eviction;
    use crate::policy::PluginKind;

    fn at(minutes: i64) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-28T12:00:00Z")
            .expect("a time")
            .to_utc()
            + chrono::TimeDelta::minutes(minutes)
    }

    fn eviction(pod: &str, paced_as: Option<&str>) -> Eviction {
        Eviction {
            paced_as: paced_as.map(str::to_string),
            ..crate::plan::testing::eviction("shop", pod, PluginKind::Duplicates)
        }
    }

    fn entry(minutes: i64, workload: &str, pod: &str) -> PastEviction {
        PastEviction::new(at(minutes), workload, pod, "RemoveDuplicates")
    }

    fn plan() -> Plan {
        Plan {
            evictions: vec![
                eviction("web-1", Some("shop/Deployment/web")),
                eviction("job-1", None),
                eviction("api-1", Some("shop/Deployment/api")),
            ],
            ..Plan::default()
        }
    }

    #[test]
    fn a_plan_without_paced_evictions_records_nothing() {
        let plan = Plan {
            evictions: vec![eviction("job-1", None)],
            ..Plan::default()
        };
        assert_eq!(PacingRecord::of(&plan, &[], at(0)), None);
    }

    #[test]
    fn every_paced_eviction_is_appended_to_the_history_the_lease_held() {
        let earlier = [entry(-5, "shop/Deployment/cart", "cart-1")];
        let recording = PacingRecord::of(&plan(), &earlier, at(0)).expect("paced evictions");
        assert_eq!(recording.len(), 2);
        assert_eq!(
            history::decode(&recording.before()),
            Ok(vec![
                entry(-5, "shop/Deployment/cart", "cart-1"),
                entry(0, "shop/Deployment/api", "api-1"),
                entry(0, "shop/Deployment/web", "web-1"),
            ])
        );
    }

    #[test]
    fn evictions_that_certainly_did_not_happen_are_taken_out_afterwards() {
        let recording = PacingRecord::of(&plan(), &[], at(0)).expect("paced evictions");
        let all_may_have = [
            EvictionOutcome::Evicted,
            EvictionOutcome::Failed(Failure::new(Cause::ServerError, "not paced")),
            EvictionOutcome::Unknown(StopReason::Signal(Signal::Terminate)),
        ];
        assert_eq!(recording.after(&all_may_have), None, "nothing to correct");
        let refused = [
            EvictionOutcome::Evicted,
            EvictionOutcome::Evicted,
            EvictionOutcome::Blocked(Failure::new(Cause::TooManyRequests, "pdb api")),
        ];
        let after = recording.after(&refused).expect("one to take out");
        assert_eq!(
            history::decode(&after),
            Ok(vec![entry(0, "shop/Deployment/web", "web-1")])
        );
        let none_sent = [
            EvictionOutcome::NotAttempted(NotAttempted::HistoryNotRecorded),
            EvictionOutcome::Evicted,
            EvictionOutcome::Gone(Failure::new(Cause::NotFound, "not found")),
        ];
        let after = recording.after(&none_sent).expect("both to take out");
        assert_eq!(history::decode(&after), Ok(Vec::new()));
    }
}
