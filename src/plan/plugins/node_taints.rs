//! `RemovePodsViolatingNodeTaints`: pods on a node with a `NoSchedule` taint (and, when asked,
//! `PreferNoSchedule`) they do not tolerate, typically added after they were scheduled.
//!
//! As upstream: `excludedTaints` never count and, when given, only `includedTaints` do, each
//! as `key` or `key=value`; `NoExecute` taints are left to the kubelet, which evicts by itself.
//! Unlike upstream, finished pods are not considered (they run nothing and hold nothing), and
//! pods are taken in the eviction order.

use super::{admits, evict_in_order};
use crate::plan::view::index::PodIx;
use crate::plan::{Context, EvictionReason, Fit, Planner};
use crate::policy::plugins::NodeTaintsArgs;
use crate::snapshot::{Taint, TaintEffect};

pub fn run(planner: &mut Planner, context: &Context, args: &NodeTaintsArgs) {
    let mut violating: Vec<(PodIx, EvictionReason)> = Vec::new();
    for pod in planner.view.pod_indices() {
        if !planner.is_candidate(pod)
            || !admits(planner, &args.namespaces, args.label_selector.as_ref(), pod)
        {
            continue;
        }
        let node = planner.view.pod_node[pod].expect("candidates are bound to a known node");
        let pod_ref = planner.view.pod(pod);
        let untolerated = planner.view.nodes[node].node.taints.iter().find(|taint| {
            counts(args, taint) && !pod_ref.tolerations().iter().any(|t| t.tolerates(taint))
        });
        if let Some(taint) = untolerated {
            let reason = EvictionReason::NodeTaint {
                node: planner.view.nodes[node].node.name.clone(),
                key: taint.key.clone(),
                value: taint.value.clone(),
                effect: taint.effect,
            };
            violating.push((pod, reason));
        }
    }
    evict_in_order(planner, context, violating, Fit::Evictor);
}

/// Whether a taint counts under the plugin's arguments.
fn counts(args: &NodeTaintsArgs, taint: &Taint) -> bool {
    let effect = match taint.effect {
        TaintEffect::NoSchedule => true,
        TaintEffect::PreferNoSchedule => args.include_prefer_no_schedule,
        TaintEffect::NoExecute => false,
    };
    let named = |list: &[String]| {
        list.iter().any(|entry| {
            entry == &taint.key
                || (!taint.value.is_empty() && *entry == format!("{}={}", taint.key, taint.value))
        })
    };
    effect && !named(&args.excluded_taints) && args.included_taints.as_deref().is_none_or(named)
}

#[cfg(test)]
mod tests {
    use crate::plan::plan;
    use crate::plan::testing::*;
    use crate::policy::plugins::NodeTaintsArgs;
    use crate::policy::{EvictorArgs, Strategy};
    use crate::snapshot::{TaintEffect, Toleration};

    fn taints(args: NodeTaintsArgs) -> crate::policy::Policy {
        policy(vec![Strategy::NodeTaints(args)])
    }

    fn tolerating(key: &str, effect: TaintEffect) -> impl FnOnce(&mut crate::snapshot::Pod) {
        let key = key.to_string();
        move |pod| {
            pod.extras_mut().tolerations.push(Toleration {
                key: Some(key),
                exists: true,
                value: String::new(),
                effect: Some(effect),
            })
        }
    }

    /// w1 tainted `key=value:effect`, two pods on it: `app/a` tolerates nothing, `app/b`
    /// tolerates the key with `effect`.
    fn tainted(key: &str, value: &str, effect: TaintEffect) -> crate::snapshot::Snapshot {
        three_hosts()
            .taint("w1", key, value, effect)
            .pod(pod("app/a").app("a").on("w1"))
            .pod(pod("app/b").app("b").on("w1").with(tolerating(key, effect)))
            .build()
    }

    #[test]
    fn a_pod_not_tolerating_a_no_schedule_taint_is_evicted_and_a_tolerating_one_stays() {
        let plan = plan(
            &tainted("maintenance", "", TaintEffect::NoSchedule),
            &taints(NodeTaintsArgs::default()),
        );
        assert_eq!(evicted(&plan), ["app/a"]);
        assert_eq!(
            plan.evictions[0].reason.to_string(),
            "node w1 has taint maintenance:NoSchedule, which it does not tolerate"
        );
    }

    #[test]
    fn prefer_no_schedule_taints_count_only_when_asked() {
        let snapshot = tainted("spot", "", TaintEffect::PreferNoSchedule);
        assert!(
            plan(&snapshot, &taints(NodeTaintsArgs::default()))
                .evictions
                .is_empty()
        );
        let asked = NodeTaintsArgs {
            include_prefer_no_schedule: true,
            ..NodeTaintsArgs::default()
        };
        assert_eq!(evicted(&plan(&snapshot, &taints(asked))), ["app/a"]);
    }

    #[test]
    fn no_execute_taints_are_left_to_the_kubelet() {
        let snapshot = tainted("broken", "", TaintEffect::NoExecute);
        assert!(
            plan(&snapshot, &taints(NodeTaintsArgs::default()))
                .evictions
                .is_empty()
        );
    }

    #[test]
    fn excluded_taints_match_by_key_or_by_key_and_value() {
        let snapshot = tainted("dedicated", "infra", TaintEffect::NoSchedule);
        for excluded in ["dedicated", "dedicated=infra"] {
            let args = NodeTaintsArgs {
                excluded_taints: vec![excluded.to_string()],
                ..NodeTaintsArgs::default()
            };
            assert!(
                plan(&snapshot, &taints(args)).evictions.is_empty(),
                "{excluded}"
            );
        }
        let other_value = NodeTaintsArgs {
            excluded_taints: vec!["dedicated=gpu".to_string()],
            ..NodeTaintsArgs::default()
        };
        assert_eq!(evicted(&plan(&snapshot, &taints(other_value))), ["app/a"]);
    }

    #[test]
    fn only_included_taints_count_when_given() {
        let snapshot = tainted("dedicated", "infra", TaintEffect::NoSchedule);
        let included = |taints: Vec<&str>| NodeTaintsArgs {
            included_taints: Some(taints.into_iter().map(str::to_string).collect()),
            ..NodeTaintsArgs::default()
        };
        assert_eq!(
            evicted(&plan(&snapshot, &taints(included(vec!["dedicated=infra"])))),
            ["app/a"]
        );
        assert!(
            plan(&snapshot, &taints(included(vec!["maintenance"])))
                .evictions
                .is_empty()
        );
        assert!(
            plan(&snapshot, &taints(included(vec![])))
                .evictions
                .is_empty()
        );
    }

    #[test]
    fn a_pod_no_other_node_would_take_is_skipped_unless_node_fit_is_off() {
        // Every node is tainted: nowhere else to go.
        let snapshot = three_hosts()
            .taint("w1", "maintenance", "", TaintEffect::NoSchedule)
            .taint("w2", "maintenance", "", TaintEffect::NoSchedule)
            .taint("w3", "maintenance", "", TaintEffect::NoSchedule)
            .pod(pod("app/a").app("a").on("w1"))
            .build();
        let plan_fit = plan(&snapshot, &taints(NodeTaintsArgs::default()));
        assert_eq!(
            skipped(&plan_fit),
            [("app/a".to_string(), "no-feasible-node")]
        );
        let no_fit = EvictorArgs {
            node_fit: false,
            ..EvictorArgs::default()
        };
        let policy = policy_with(
            no_fit,
            vec![Strategy::NodeTaints(NodeTaintsArgs::default())],
        );
        assert_eq!(evicted(&plan(&snapshot, &policy)), ["app/a"]);
    }
}
