//! The report's errors and warnings, told from a plan and its typed outcomes in the order
//! things happened: the problems found before acting, then each action that went wrong, the
//! halt where the executor stopped, and last where the deadline cut the Events off.

use crate::outcome::{DrsOutcome, EvictionOutcome, Halt, HaltedAt, LabelOutcome, Outcomes};
use crate::plan::{LabelApply, Plan};

use super::ReportWarning;

/// Every error of the run, in order.
pub fn errors(plan: &Plan, outcomes: &Outcomes) -> Vec<String> {
    let mut errors: Vec<String> = outcomes.problems.iter().map(ToString::to_string).collect();
    let halt_at = |at: HaltedAt, errors: &mut Vec<String>| {
        if let Some((halt, halted_at)) = &outcomes.halt
            && *halted_at == at
        {
            errors.push(halted(halt));
        }
    };
    for (index, (apply, outcome)) in plan.label_applies.iter().zip(&outcomes.labels).enumerate() {
        halt_at(HaltedAt::BeforeLabel(index), &mut errors);
        errors.extend(label_error(plan, apply, outcome));
        halt_at(HaltedAt::AfterLabel(index), &mut errors);
    }
    for (index, (eviction, outcome)) in plan.evictions.iter().zip(&outcomes.evictions).enumerate() {
        halt_at(HaltedAt::BeforeEviction(index), &mut errors);
        let pod = format!("{}/{}", eviction.namespace, eviction.pod);
        match outcome {
            EvictionOutcome::Unknown(reason) => {
                errors.push(format!("eviction of pod {pod} was not confirmed: {reason}"));
            }
            EvictionOutcome::Failed(message) => {
                errors.push(format!("eviction of pod {pod} failed: {message}"));
            }
            _ => {}
        }
    }
    for (index, batch) in plan.drs_batches.iter().enumerate() {
        halt_at(HaltedAt::BeforeDrsBatch(index), &mut errors);
        let Some((first, _)) = batch.writes.as_ref().and_then(|w| w.changes.first()) else {
            continue;
        };
        let cluster = &batch.cluster;
        match &outcomes.drs_rules[*first] {
            DrsOutcome::Unknown(unconfirmed) => errors.push(format!(
                "DRS rule changes of vSphere cluster {cluster} were not confirmed: {unconfirmed}"
            )),
            DrsOutcome::Failed(message) => errors.push(format!(
                "DRS rules of vSphere cluster {cluster} were not changed: {message}"
            )),
            _ => {}
        }
    }
    errors.extend(outcomes.events_cut.map(|cut| cut.to_string()));
    errors
}

/// The error of the executor's halt.
fn halted(halt: &Halt) -> String {
    format!("{halt}: the remaining actions were not carried out")
}

/// The error of a node's label apply that was not written, naming the keys it changes.
fn label_error(plan: &Plan, apply: &LabelApply, outcome: &LabelOutcome) -> Option<String> {
    let node = &apply.node;
    match outcome {
        LabelOutcome::Failed(cause) => {
            let keys: Vec<&str> = plan
                .label_changes
                .iter()
                .filter(|change| change.node == *node)
                .map(|change| change.key.as_str())
                .collect();
            Some(format!(
                "label change(s) {} of node {node} not applied: {cause}",
                keys.join(", ")
            ))
        }
        LabelOutcome::Unconfirmed(reason) => Some(format!(
            "the label changes of node {node} were not confirmed: {reason}"
        )),
        LabelOutcome::Written | LabelOutcome::NotAttempted(_) => None,
    }
}

/// The warnings of the Events: each one the API server did not record. (Where the deadline cut
/// them off is an error: the run stopped short.)
pub fn event_warnings(plan: &Plan, outcomes: &Outcomes) -> Vec<ReportWarning> {
    outcomes
        .events
        .iter()
        .filter_map(|(index, published)| {
            let eviction = &plan.evictions[*index];
            published
                .as_ref()
                .err()
                .map(|failure| ReportWarning::EventNotRecorded {
                    namespace: eviction.namespace.clone(),
                    pod: eviction.pod.clone(),
                    cause: failure.text.clone(),
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::outcome::{Cause, EventsCut, Failure, NotAttempted, StopReason};
    use crate::plan::{Eviction, LabelChange};
    use crate::policy::PluginKind;

    fn eviction(pod: &str) -> Eviction {
        crate::plan::testing::eviction("shop", pod, PluginKind::InterPodAntiAffinity)
    }

    fn apply(node: &str) -> LabelApply {
        LabelApply {
            node: node.to_string(),
            uid: None,
            set: Default::default(),
            remove: Default::default(),
        }
    }

    const DEADLINE: StopReason = StopReason::Deadline(Duration::from_secs(60));

    #[test]
    fn errors_are_told_in_the_order_they_happened_with_the_halt_where_it_fell() {
        let plan = Plan {
            label_changes: vec![LabelChange {
                node: "worker-b".to_string(),
                key: "vsphere-descheduler.io/host".to_string(),
                old: None,
                new: Some("esxi-41".to_string()),
            }],
            label_applies: vec![apply("worker-b")],
            evictions: vec![eviction("web-1"), eviction("web-2")],
            ..Plan::default()
        };
        let halt = Halt::Stopped(DEADLINE);
        let outcomes = Outcomes {
            labels: vec![LabelOutcome::Failed(Failure::new(
                Cause::ServerError,
                "500",
            ))],
            evictions: vec![
                EvictionOutcome::Unknown(DEADLINE),
                EvictionOutcome::NotAttempted(NotAttempted::Halted(halt.clone())),
            ],
            halt: Some((halt, HaltedAt::BeforeEviction(1))),
            ..Outcomes::default()
        };
        assert_eq!(
            errors(&plan, &outcomes),
            [
                "label change(s) vsphere-descheduler.io/host of node worker-b not applied: 500",
                "eviction of pod shop/web-1 was not confirmed: the run's deadline of 60s passed",
                "the run's deadline of 60s passed: the remaining actions were not carried out",
            ]
        );
    }

    /// Issue 31: the deadline cutting off the Events was a warning only, and the run exited 0.
    #[test]
    fn events_cut_off_at_the_deadline_are_an_error_and_those_refused_a_warning() {
        let plan = Plan {
            evictions: vec![eviction("web-1"), eviction("web-2")],
            ..Plan::default()
        };
        let outcomes = Outcomes {
            evictions: vec![EvictionOutcome::Evicted, EvictionOutcome::Evicted],
            events: vec![(0, Err(Failure::new(Cause::Forbidden, "403")))],
            events_cut: Some(EventsCut::Midway(DEADLINE)),
            ..Outcomes::default()
        };
        assert_eq!(
            event_warnings(&plan, &outcomes),
            [ReportWarning::EventNotRecorded {
                namespace: "shop".to_string(),
                pod: "web-1".to_string(),
                cause: "403".to_string(),
            }]
        );
        assert_eq!(
            errors(&plan, &outcomes),
            ["the remaining events were not recorded: the run's deadline of 60s passed"]
        );
    }
}
