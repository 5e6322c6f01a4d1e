//! `RemovePodsViolatingTopologySpreadConstraint` arguments.

use crate::policy::Namespaces;
use crate::policy::decode::{Decoder, Fields, index};
use crate::policy::rule::Rule;
use crate::policy::yaml::YamlNode;
use crate::snapshot::WhenUnsatisfiable;

use super::{Strategy, label_selector_of, namespaces};

#[derive(Clone, Debug, PartialEq)]
pub struct TopologySpreadArgs {
    pub namespaces: Namespaces,
    pub label_selector: Option<crate::snapshot::Requirements>,
    /// Balance `DoNotSchedule` constraints (default on).
    pub do_not_schedule: bool,
    /// Balance `ScheduleAnyway` constraints (default off).
    pub schedule_anyway: bool,
    /// `topologyBalanceNodeFit` (default true): only move a pod when some node in a smaller
    /// domain would take it. False: move it even when none would now, whatever `nodeFit` says.
    pub topology_balance_node_fit: bool,
    /// Constraints for pods that declare none (kube-scheduler's `defaultConstraints`, after
    /// `defaultingType`): empty unless the policy asks for them.
    pub default_constraints: Vec<DefaultConstraint>,
}

/// A cluster-default spread constraint, kube-scheduler's `defaultConstraints` item: it has no
/// selector of its own; each pod it applies to gets its owner's.
#[derive(Clone, Debug, PartialEq)]
pub struct DefaultConstraint {
    pub max_skew: i32,
    pub topology_key: String,
    pub when_unsatisfiable: WhenUnsatisfiable,
    pub min_domains: Option<i32>,
    /// `nodeAffinityPolicy: Honor` (the default).
    pub honor_node_affinity: bool,
    /// `nodeTaintsPolicy: Honor` (default Ignore).
    pub honor_node_taints: bool,
}

impl DefaultConstraint {
    fn soft(topology_key: &str, max_skew: i32) -> DefaultConstraint {
        DefaultConstraint {
            max_skew,
            topology_key: topology_key.to_string(),
            when_unsatisfiable: WhenUnsatisfiable::ScheduleAnyway,
            min_domains: None,
            honor_node_affinity: true,
            honor_node_taints: false,
        }
    }

    /// `defaultingType: System`: the scheduler's built-in defaults.
    pub fn system() -> Vec<DefaultConstraint> {
        vec![
            DefaultConstraint::soft("kubernetes.io/hostname", 3),
            DefaultConstraint::soft("topology.kubernetes.io/zone", 5),
        ]
    }
}

impl Default for TopologySpreadArgs {
    fn default() -> Self {
        TopologySpreadArgs {
            namespaces: Namespaces::default(),
            label_selector: None,
            do_not_schedule: true,
            schedule_anyway: false,
            topology_balance_node_fit: true,
            default_constraints: Vec::new(),
        }
    }
}

const FIELDS: [&str; 6] = [
    "namespaces",
    "labelSelector",
    "constraints",
    "topologyBalanceNodeFit",
    "defaultingType",
    "defaultConstraints",
];

const CONSTRAINT_FIELDS: [&str; 6] = [
    "maxSkew",
    "topologyKey",
    "whenUnsatisfiable",
    "minDomains",
    "nodeAffinityPolicy",
    "nodeTaintsPolicy",
];

pub(super) fn decode(d: &mut Decoder, node: &YamlNode, path: &str) -> Strategy {
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
    args.label_selector = label_selector_of(d, &fields);
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
    args.default_constraints = default_constraints(d, &fields);
    Strategy::TopologySpread(args)
}

/// `defaultingType` and `defaultConstraints`, as kube-scheduler's PodTopologySpread args, but
/// for the default: neither set means no default constraints (the scheduler's default is
/// `System`; this strategy never balanced pods without constraints, and still does not unless
/// asked), and `defaultConstraints` alone means `List`.
fn default_constraints(d: &mut Decoder, fields: &Fields<'_>) -> Vec<DefaultConstraint> {
    let defaulting = fields.get("defaultingType").and_then(|node| {
        d.choice(
            node,
            &fields.path("defaultingType"),
            "defaultingType",
            &["System", "List"],
        )
    });
    let listed = list_constraints(d, fields);
    match defaulting.as_deref() {
        Some("System") if !listed.is_empty() => {
            let node = fields.get("defaultConstraints").expect("listed");
            d.problem_at_as(
                Rule::Conflict,
                node,
                &fields.path("defaultConstraints"),
                "must be empty when defaultingType is System (the scheduler's built-in \
                 defaults); set defaultingType: List to use these",
            );
            Vec::new()
        }
        Some("System") => DefaultConstraint::system(),
        _ => listed,
    }
}

/// The `defaultConstraints` items, checked as kube-scheduler checks them: `maxSkew` above 0,
/// a `topologyKey`, a `whenUnsatisfiable`, no selector, one constraint per key and action.
fn list_constraints(d: &mut Decoder, fields: &Fields<'_>) -> Vec<DefaultConstraint> {
    let path = fields.path("defaultConstraints");
    let mut constraints: Vec<DefaultConstraint> = Vec::new();
    for (i, item) in fields.list(d, "defaultConstraints").iter().enumerate() {
        let item_path = index(&path, i);
        let Some(constraint) = list_constraint(d, item, &item_path) else {
            continue;
        };
        let duplicate = constraints.iter().any(|c| {
            c.topology_key == constraint.topology_key
                && c.when_unsatisfiable == constraint.when_unsatisfiable
        });
        if duplicate {
            d.problem_at_as(
                Rule::Duplicate,
                item,
                &item_path,
                format!(
                    "a second constraint on topologyKey {} with the same whenUnsatisfiable",
                    constraint.topology_key
                ),
            );
            continue;
        }
        constraints.push(constraint);
    }
    constraints
}

fn list_constraint(d: &mut Decoder, item: &YamlNode, path: &str) -> Option<DefaultConstraint> {
    let hint = |name: &str| {
        matches!(name, "labelSelector" | "matchLabelKeys").then(|| {
            format!(
                "{name} cannot be set on a default constraint: each pod it applies to gets the \
                 selector of its owner"
            )
        })
    };
    let fields = d.fields_with_hint(item, path, &CONSTRAINT_FIELDS, hint)?;
    let mut complete = true;
    let mut needed = |d: &mut Decoder, name: &str| {
        if fields.get(name).is_none() {
            d.problem_as(
                Rule::MissingField,
                fields.position,
                &fields.path(name),
                "must be set",
            );
            complete = false;
        }
    };
    needed(d, "maxSkew");
    needed(d, "topologyKey");
    needed(d, "whenUnsatisfiable");
    let max_skew = fields.integer::<i32>(d, "maxSkew");
    if let Some(skew) = max_skew.filter(|&skew| skew < 1) {
        let node = fields.get("maxSkew").expect("just read");
        d.problem_at(
            node,
            &fields.path("maxSkew"),
            format!("must be at least 1, not {skew}"),
        );
    }
    let topology_key = fields.string(d, "topologyKey");
    if topology_key.as_deref() == Some("") {
        let node = fields.get("topologyKey").expect("just read");
        d.problem_at(node, &fields.path("topologyKey"), "must not be empty");
    }
    let when = fields.get("whenUnsatisfiable").and_then(|node| {
        d.choice(
            node,
            &fields.path("whenUnsatisfiable"),
            "whenUnsatisfiable",
            &["DoNotSchedule", "ScheduleAnyway"],
        )
    });
    let min_domains = fields.integer::<i32>(d, "minDomains");
    if let Some(min) = min_domains.filter(|&min| min < 1) {
        let node = fields.get("minDomains").expect("just read");
        d.problem_at(
            node,
            &fields.path("minDomains"),
            format!("must be at least 1, not {min}"),
        );
    }
    let policy = |d: &mut Decoder, name: &str, default: bool| {
        fields
            .get(name)
            .and_then(|node| d.choice(node, &fields.path(name), name, &["Honor", "Ignore"]))
            .map_or(default, |value| value == "Honor")
    };
    let honor_node_affinity = policy(d, "nodeAffinityPolicy", true);
    let honor_node_taints = policy(d, "nodeTaintsPolicy", false);
    if !complete {
        return None;
    }
    Some(DefaultConstraint {
        max_skew: max_skew.filter(|&skew| skew >= 1)?,
        topology_key: topology_key.filter(|key| !key.is_empty())?,
        when_unsatisfiable: match when?.as_str() {
            "DoNotSchedule" => WhenUnsatisfiable::DoNotSchedule,
            _ => WhenUnsatisfiable::ScheduleAnyway,
        },
        min_domains: min_domains.filter(|&min| min >= 1),
        honor_node_affinity,
        honor_node_taints,
    })
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
        label_selector: label_selector_of(d, params),
        do_not_schedule: true,
        schedule_anyway: params.bool(d, "includeSoftConstraints").unwrap_or(false),
        topology_balance_node_fit: true,
        // Upstream's v1alpha1 had no default constraints.
        default_constraints: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use kube::core::Expression;

    use super::super::tests::{strategy, with_args};
    use super::{DefaultConstraint, TopologySpreadArgs};
    use crate::policy::testing::{problem, problems};
    use crate::policy::{Namespaces, Strategy};
    use crate::snapshot::WhenUnsatisfiable::{DoNotSchedule, ScheduleAnyway};

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
                default_constraints: Vec::new(),
            })
        );
    }

    fn default_constraints(args: &str) -> Vec<DefaultConstraint> {
        match strategy(NAME, args) {
            Strategy::TopologySpread(args) => args.default_constraints,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn no_defaulting_type_and_no_default_constraints_means_none() {
        assert_eq!(default_constraints("          {}\n"), []);
        assert_eq!(default_constraints("          defaultingType: List\n"), []);
    }

    #[test]
    fn system_defaulting_means_the_schedulers_built_in_constraints() {
        let system = default_constraints("          defaultingType: System\n");
        assert_eq!(system, DefaultConstraint::system());
        assert_eq!(
            system
                .iter()
                .map(|c| (c.topology_key.as_str(), c.max_skew, c.when_unsatisfiable))
                .collect::<Vec<_>>(),
            [
                ("kubernetes.io/hostname", 3, ScheduleAnyway),
                ("topology.kubernetes.io/zone", 5, ScheduleAnyway)
            ]
        );
    }

    #[test]
    fn default_constraints_alone_are_a_list() {
        let args = "          defaultConstraints:\n          - {maxSkew: 1, topologyKey: \
                    vsphere-descheduler.io/host, whenUnsatisfiable: DoNotSchedule, minDomains: 2, \
                    nodeTaintsPolicy: Honor}\n";
        assert_eq!(
            default_constraints(args),
            [DefaultConstraint {
                max_skew: 1,
                topology_key: "vsphere-descheduler.io/host".into(),
                when_unsatisfiable: DoNotSchedule,
                min_domains: Some(2),
                honor_node_affinity: true,
                honor_node_taints: true,
            }]
        );
    }

    #[test]
    fn system_defaulting_with_a_list_is_refused_as_the_scheduler_refuses_it() {
        let args = "          defaultingType: System\n          defaultConstraints:\n          - \
                    {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}\n";
        assert_eq!(
            problem(&with_args(NAME, args)),
            "policy.yaml:11:13: profiles[0].pluginConfig[0].args.defaultConstraints: must be \
             empty when defaultingType is System (the scheduler's built-in defaults); set \
             defaultingType: List to use these"
        );
    }

    #[test]
    fn default_constraints_are_checked_with_positions_and_suggestions() {
        let args = "          defaultingType: Lists\n          defaultConstraints:\n          \
                    - {maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedul}\n          \
                    - {maxSkw: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}\n          \
                    - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, \
                    labelSelector: {}}\n";
        assert_eq!(
            problems(&with_args(NAME, args)),
            [
                "policy.yaml:9:27: profiles[0].pluginConfig[0].args.defaultingType: unknown \
                 defaultingType \"Lists\"; did you mean \"List\"? valid: System, List",
                "policy.yaml:11:23: profiles[0].pluginConfig[0].args.defaultConstraints[0].maxSkew: \
                 must be at least 1, not 0",
                "policy.yaml:11:64: profiles[0].pluginConfig[0].args.defaultConstraints[0].\
                 whenUnsatisfiable: unknown whenUnsatisfiable \"DoNotSchedul\"; did you mean \
                 \"DoNotSchedule\"? valid: DoNotSchedule, ScheduleAnyway",
                "policy.yaml:12:13: profiles[0].pluginConfig[0].args.defaultConstraints[1].maxSkew: \
                 must be set",
                "policy.yaml:12:14: profiles[0].pluginConfig[0].args.defaultConstraints[1].maxSkw: \
                 unknown field \"maxSkw\"; did you mean \"maxSkew\"? valid: maxSkew, topologyKey, \
                 whenUnsatisfiable, minDomains, nodeAffinityPolicy, nodeTaintsPolicy",
                "policy.yaml:13:79: profiles[0].pluginConfig[0].args.defaultConstraints[2].\
                 labelSelector: labelSelector cannot be set on a default constraint: each pod it \
                 applies to gets the selector of its owner",
            ]
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
