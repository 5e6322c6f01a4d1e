//! `RemovePodsViolatingTopologySpreadConstraint` arguments.

use crate::policy::Namespaces;
use crate::policy::decode::{Decoder, Fields, index};
use crate::policy::selector::label_selector;
use crate::policy::yaml::Node;

use super::{Strategy, namespaces};

#[derive(Clone, Debug, PartialEq)]
pub struct TopologySpreadArgs {
    pub namespaces: Namespaces,
    pub label_selector: Option<kube::core::Selector>,
    /// Balance `DoNotSchedule` constraints (default on).
    pub do_not_schedule: bool,
    /// Balance `ScheduleAnyway` constraints (default off).
    pub schedule_anyway: bool,
    /// `topologyBalanceNodeFit` (default true): only move a pod when some node in a smaller
    /// domain would take it. False: move it even when none would now, whatever `nodeFit` says.
    pub topology_balance_node_fit: bool,
}

impl Default for TopologySpreadArgs {
    fn default() -> Self {
        TopologySpreadArgs {
            namespaces: Namespaces::default(),
            label_selector: None,
            do_not_schedule: true,
            schedule_anyway: false,
            topology_balance_node_fit: true,
        }
    }
}

const FIELDS: [&str; 4] = [
    "namespaces",
    "labelSelector",
    "constraints",
    "topologyBalanceNodeFit",
];

pub(super) fn decode(d: &mut Decoder, node: &Node, path: &str) -> Strategy {
    let mut args = TopologySpreadArgs::default();
    // The descheduler v0.27 argument, replaced by `constraints` in v0.28 and refused upstream
    // since; it is common in old files, so it gets its own answer.
    let hint = |name: &str| {
        (name == "includeSoftConstraints").then(|| {
            "includeSoftConstraints was replaced upstream by constraints; to balance soft \
             constraints too, use constraints: [DoNotSchedule, ScheduleAnyway]"
                .to_string()
        })
    };
    let Some(fields) = d.fields_with_hint(node, path, &FIELDS, hint) else {
        return Strategy::TopologySpread(args);
    };
    args.namespaces = namespaces(d, fields.get("namespaces"), &fields.path("namespaces"));
    args.label_selector = label_selector(
        d,
        fields.get("labelSelector"),
        &fields.path("labelSelector"),
    );
    if let Some(node) = fields.get("constraints") {
        let path = fields.path("constraints");
        let mut constraints = Vec::new();
        for (i, item) in d.list(node, &path).iter().enumerate() {
            let item_path = index(&path, i);
            if let Some(constraint) = d.choice(
                item,
                &item_path,
                "constraint",
                &["DoNotSchedule", "ScheduleAnyway"],
            ) {
                constraints.push(constraint);
            }
        }
        // As upstream's defaulting: an empty list means the default, DoNotSchedule only.
        if !constraints.is_empty() {
            args.do_not_schedule = constraints.iter().any(|c| c == "DoNotSchedule");
            args.schedule_anyway = constraints.iter().any(|c| c == "ScheduleAnyway");
        }
    }
    if let Some(node_fit) = fields.bool(d, "topologyBalanceNodeFit") {
        args.topology_balance_node_fit = node_fit;
    }
    Strategy::TopologySpread(args)
}

pub(super) const LEGACY_PARAMS: &[&str] = &["labelSelector", "includeSoftConstraints"];

/// As upstream's migration: `DoNotSchedule`, plus `ScheduleAnyway` with
/// `includeSoftConstraints`, and `topologyBalanceNodeFit` on.
pub(super) fn from_v1alpha1(
    d: &mut Decoder,
    params: &Fields<'_>,
    namespaces: Namespaces,
) -> Strategy {
    Strategy::TopologySpread(TopologySpreadArgs {
        namespaces,
        label_selector: label_selector(
            d,
            params.get("labelSelector"),
            &params.path("labelSelector"),
        ),
        do_not_schedule: true,
        schedule_anyway: params.bool(d, "includeSoftConstraints").unwrap_or(false),
        topology_balance_node_fit: true,
    })
}

#[cfg(test)]
mod tests {
    use kube::core::Expression;

    use super::super::tests::{strategy, with_args};
    use crate::policy::testing::problem;
    use crate::policy::{Namespaces, Strategy, TopologySpreadArgs};

    const NAME: &str = "RemovePodsViolatingTopologySpreadConstraint";

    #[test]
    fn topology_spread_args_convert() {
        let args = "          constraints: [ScheduleAnyway]\n          topologyBalanceNodeFit: false\n          \
                    labelSelector: {matchLabels: {app: web}}\n          namespaces: {include: [shop]}\n";
        assert_eq!(
            strategy(NAME, args),
            Strategy::TopologySpread(TopologySpreadArgs {
                namespaces: Namespaces {
                    include: vec!["shop".into()],
                    exclude: vec![]
                },
                label_selector: Some(Expression::Equal("app".into(), "web".into()).into()),
                do_not_schedule: false,
                schedule_anyway: true,
                topology_balance_node_fit: false,
            })
        );
    }

    #[test]
    fn an_empty_constraints_list_means_do_not_schedule_only() {
        let args = "          constraints: []\n";
        assert_eq!(
            strategy(NAME, args),
            Strategy::TopologySpread(TopologySpreadArgs::default())
        );
    }

    #[test]
    fn the_old_include_soft_constraints_arg_says_what_replaced_it() {
        let text = with_args(NAME, "          includeSoftConstraints: true\n");
        assert_eq!(
            problem(&text),
            "policy.yaml:9:11: profiles[0].pluginConfig[0].args.includeSoftConstraints: \
             includeSoftConstraints was replaced upstream by constraints; to balance soft \
             constraints too, use constraints: [DoNotSchedule, ScheduleAnyway]"
        );
    }

    #[test]
    fn constraints_are_checked() {
        let text = with_args(NAME, "          constraints: [DoNotSchedul]\n");
        assert_eq!(
            problem(&text),
            "policy.yaml:9:25: profiles[0].pluginConfig[0].args.constraints[0]: unknown constraint \
             \"DoNotSchedul\"; did you mean \"DoNotSchedule\"? valid: DoNotSchedule, ScheduleAnyway"
        );
    }
}
