//! The arguments of the three strategies this tool implements, as upstream names them.

use super::decode::{Decoder, Fields};
use super::names::check_dns_label;
use super::selector::label_selector;
use super::yaml::Node;
use super::{
    AntiAffinityArgs, DuplicatesArgs, Namespaces, STRATEGY_NAMES, Strategy, TopologySpreadArgs,
};

/// Where a strategy runs: upstream's extension points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ExtensionPoint {
    Deschedule,
    Balance,
}

impl ExtensionPoint {
    /// The key under `plugins:`.
    pub fn key(self) -> &'static str {
        match self {
            ExtensionPoint::Deschedule => "deschedule",
            ExtensionPoint::Balance => "balance",
        }
    }
}

/// A supported strategy, before its arguments are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum StrategyKind {
    InterPodAntiAffinity,
    TopologySpread,
    Duplicates,
}

impl StrategyKind {
    pub const ALL: [StrategyKind; 3] = [
        StrategyKind::InterPodAntiAffinity,
        StrategyKind::TopologySpread,
        StrategyKind::Duplicates,
    ];

    pub fn from_name(name: &str) -> Option<StrategyKind> {
        StrategyKind::ALL
            .into_iter()
            .find(|kind| kind.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            StrategyKind::InterPodAntiAffinity => STRATEGY_NAMES[0],
            StrategyKind::TopologySpread => STRATEGY_NAMES[1],
            StrategyKind::Duplicates => STRATEGY_NAMES[2],
        }
    }

    /// The extension point the plugin implements upstream.
    pub fn extension_point(self) -> ExtensionPoint {
        match self {
            StrategyKind::InterPodAntiAffinity => ExtensionPoint::Deschedule,
            StrategyKind::TopologySpread | StrategyKind::Duplicates => ExtensionPoint::Balance,
        }
    }

    /// The strategy with its default arguments.
    pub fn with_default_args(self) -> Strategy {
        match self {
            StrategyKind::InterPodAntiAffinity => {
                Strategy::InterPodAntiAffinity(AntiAffinityArgs::default())
            }
            StrategyKind::TopologySpread => Strategy::TopologySpread(TopologySpreadArgs::default()),
            StrategyKind::Duplicates => Strategy::Duplicates(DuplicatesArgs::default()),
        }
    }

    /// Decodes the plugin's `args`; absent or null args are the defaults.
    pub fn decode_args(self, d: &mut Decoder, node: Option<&Node>, path: &str) -> Strategy {
        let Some(node) = node else {
            return self.with_default_args();
        };
        match self {
            StrategyKind::InterPodAntiAffinity => {
                Strategy::InterPodAntiAffinity(anti_affinity_args(d, node, path))
            }
            StrategyKind::TopologySpread => {
                Strategy::TopologySpread(topology_spread_args(d, node, path))
            }
            StrategyKind::Duplicates => Strategy::Duplicates(duplicates_args(d, node, path)),
        }
    }
}

/// "RemovePodsViolatingInterPodAntiAffinity (deschedule), …", for messages.
pub(super) fn supported_strategies() -> String {
    StrategyKind::ALL
        .iter()
        .map(|kind| format!("{} ({})", kind.name(), kind.extension_point().key()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn anti_affinity_args(d: &mut Decoder, node: &Node, path: &str) -> AntiAffinityArgs {
    let Some(fields) = d.fields(node, path, &["namespaces", "labelSelector"]) else {
        return AntiAffinityArgs::default();
    };
    AntiAffinityArgs {
        namespaces: namespaces(d, fields.get("namespaces"), &fields.path("namespaces")),
        label_selector: label_selector(
            d,
            fields.get("labelSelector"),
            &fields.path("labelSelector"),
        ),
    }
}

const TOPOLOGY_SPREAD_FIELDS: [&str; 4] = [
    "namespaces",
    "labelSelector",
    "constraints",
    "topologyBalanceNodeFit",
];

fn topology_spread_args(d: &mut Decoder, node: &Node, path: &str) -> TopologySpreadArgs {
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
    let Some(fields) = d.fields_with_hint(node, path, &TOPOLOGY_SPREAD_FIELDS, hint) else {
        return args;
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
            let item_path = super::decode::index(&path, i);
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
    args
}

fn duplicates_args(d: &mut Decoder, node: &Node, path: &str) -> DuplicatesArgs {
    let Some(fields) = d.fields(node, path, &["namespaces", "excludeOwnerKinds"]) else {
        return DuplicatesArgs::default();
    };
    DuplicatesArgs {
        namespaces: namespaces(d, fields.get("namespaces"), &fields.path("namespaces")),
        exclude_owner_kinds: owner_kinds(d, &fields, "excludeOwnerKinds"),
    }
}

/// A list of owner kinds (`ReplicaSet`, `Job`, …).
pub(super) fn owner_kinds(d: &mut Decoder, fields: &Fields<'_>, name: &str) -> Vec<String> {
    fields.strings(d, name, |kind| {
        let valid = kind.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && kind.chars().all(|c| c.is_ascii_alphanumeric());
        (!valid).then(|| {
            format!("invalid kind {kind:?}: expected a Kubernetes kind such as ReplicaSet or Job")
        })
    })
}

/// `namespaces: {include, exclude}`; at most one of the two may be non-empty.
pub(super) fn namespaces(d: &mut Decoder, node: Option<&Node>, path: &str) -> Namespaces {
    let Some(node) = node else {
        return Namespaces::default();
    };
    let Some(fields) = d.fields(node, path, &["include", "exclude"]) else {
        return Namespaces::default();
    };
    let check = |name: &str| {
        check_dns_label(name)
            .err()
            .map(|error| format!("invalid namespace name {name:?}: {error}"))
    };
    let include = fields.strings(d, "include", check);
    let exclude = fields.strings(d, "exclude", check);
    if !include.is_empty() && !exclude.is_empty() {
        d.problem(
            fields.position,
            path,
            "set either include or exclude, not both",
        );
    }
    Namespaces { include, exclude }
}

#[cfg(test)]
mod tests {
    use kube::core::Expression;

    use crate::policy::testing::{OURS, load, problem, problems};
    use crate::policy::{Namespaces, Strategy, TopologySpreadArgs};

    fn with_args(plugin: &str, args: &str) -> String {
        let point = if plugin == "RemovePodsViolatingInterPodAntiAffinity" {
            "deschedule"
        } else {
            "balance"
        };
        format!(
            "{OURS}profiles:\n  - name: p\n    pluginConfig:\n      - name: {plugin}\n        args:\n{args}    \
             plugins:\n      {point}:\n        enabled: [{plugin}]\n"
        )
    }

    fn strategy(plugin: &str, args: &str) -> Strategy {
        let profile = load(&with_args(plugin, args)).policy.profiles.remove(0);
        profile
            .deschedule
            .into_iter()
            .chain(profile.balance)
            .next()
            .expect("one strategy")
    }

    #[test]
    fn topology_spread_args_convert() {
        let args = "          constraints: [ScheduleAnyway]\n          topologyBalanceNodeFit: false\n          \
                    labelSelector: {matchLabels: {app: web}}\n          namespaces: {include: [shop]}\n";
        assert_eq!(
            strategy("RemovePodsViolatingTopologySpreadConstraint", args),
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
            strategy("RemovePodsViolatingTopologySpreadConstraint", args),
            Strategy::TopologySpread(TopologySpreadArgs::default())
        );
    }

    #[test]
    fn the_old_include_soft_constraints_arg_says_what_replaced_it() {
        let text = with_args(
            "RemovePodsViolatingTopologySpreadConstraint",
            "          includeSoftConstraints: true\n",
        );
        assert_eq!(
            problem(&text),
            "policy.yaml:9:11: profiles[0].pluginConfig[0].args.includeSoftConstraints: \
             includeSoftConstraints was replaced upstream by constraints; to balance soft \
             constraints too, use constraints: [DoNotSchedule, ScheduleAnyway]"
        );
    }

    #[test]
    fn unknown_args_list_the_valid_ones() {
        let text = with_args(
            "RemovePodsViolatingInterPodAntiAffinity",
            "          podSelector: {}\n",
        );
        assert_eq!(
            problem(&text),
            "policy.yaml:9:11: profiles[0].pluginConfig[0].args.podSelector: unknown field \
             \"podSelector\"; valid: namespaces, labelSelector"
        );
    }

    #[test]
    fn namespaces_may_be_included_or_excluded_but_not_both() {
        let text = with_args(
            "RemoveDuplicates",
            "          namespaces:\n            include: [a]\n            exclude: [b, Kube_System]\n",
        );
        assert_eq!(
            problems(&text),
            [
                "policy.yaml:10:13: profiles[0].pluginConfig[0].args.namespaces: set either \
                 include or exclude, not both",
                "policy.yaml:11:26: profiles[0].pluginConfig[0].args.namespaces.exclude[1]: \
                 invalid namespace name \"Kube_System\": must consist of lowercase alphanumeric \
                 characters or '-', and start and end with an alphanumeric character",
            ]
        );
    }

    #[test]
    fn constraints_and_owner_kinds_are_checked() {
        let text = with_args(
            "RemovePodsViolatingTopologySpreadConstraint",
            "          constraints: [DoNotSchedul]\n",
        );
        assert_eq!(
            problem(&text),
            "policy.yaml:9:25: profiles[0].pluginConfig[0].args.constraints[0]: unknown constraint \
             \"DoNotSchedul\"; did you mean \"DoNotSchedule\"? valid: DoNotSchedule, ScheduleAnyway"
        );
        let text = with_args(
            "RemoveDuplicates",
            "          excludeOwnerKinds: [\"Replica Set\"]\n",
        );
        assert!(problem(&text).ends_with(
            "invalid kind \"Replica Set\": expected a Kubernetes kind such as ReplicaSet or Job"
        ));
    }
}
