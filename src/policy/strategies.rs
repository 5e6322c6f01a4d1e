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
