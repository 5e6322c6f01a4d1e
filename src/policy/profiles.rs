//! `profiles:` of `descheduler/v1alpha2` and our format: plugin sets, plugin configs and their
//! assembly into [`Profile`]s.
//!
//! Two differences from upstream, both on purpose:
//! * A plugin enabled without a `pluginConfig` entry runs with its default args. Upstream refuses
//!   to build such a profile ("unable to find plugin config") and silently skips it, which
//!   leaves a policy that looks active doing nothing.
//! * Unknown plugin names and plugins at the wrong extension point are problems, not silently
//!   dropped keys.

use crate::policy::rule::Rule;
use std::collections::BTreeMap;

use super::decode::{Decoder, Fields, index, unknown};
use super::evictor::{DEFAULT_EVICTOR, evictor_args};
use super::plugins::{ExtensionPoint, PluginKind};
use super::yaml::{Position, Value, YamlNode};
use super::{Profile, Strategy};

const PROFILE_FIELDS: [&str; 3] = ["name", "pluginConfig", "plugins"];
/// The plugin-set keys, exactly as upstream's JSON tags spell them (all lowercase).
const PLUGIN_SETS: [&str; 6] = [
    "presort",
    "sort",
    "deschedule",
    "balance",
    "filter",
    "preevictionfilter",
];

/// Every plugin name this tool accepts.
pub(super) fn supported_plugins() -> Vec<&'static str> {
    std::iter::once(DEFAULT_EVICTOR)
        .chain(PluginKind::all().map(PluginKind::as_str))
        .collect()
}

/// The problem with a plugin name this tool does not support.
pub(super) fn unsupported_plugin(name: &str) -> String {
    unknown("plugin", name, &supported_plugins())
}

/// Reports a name given twice (`problem`), pointing back at the first, where its line is known.
fn duplicate(
    d: &mut Decoder,
    name_node: &YamlNode,
    path: &str,
    problem: String,
    first: Option<Position>,
) {
    let first = first
        .map(|p| format!(" (first at line {})", p.line))
        .unwrap_or_default();
    d.problem_at_as(
        Rule::Duplicate,
        name_node,
        path,
        format!("{problem}{first}"),
    );
}

/// Decodes the `profiles` list.
pub(super) fn profiles(d: &mut Decoder, node: Option<&YamlNode>, path: &str) -> Vec<Profile> {
    let Some(node) = node else { return Vec::new() };
    let mut profiles: Vec<Profile> = Vec::new();
    let mut seen: BTreeMap<String, Option<Position>> = BTreeMap::new();
    for (i, item) in d.list(node, path).iter().enumerate() {
        let item_path = index(path, i);
        let Some((profile, name_node)) = profile(d, item, &item_path) else {
            continue;
        };
        // A missing name was reported already; it is no one's duplicate.
        if let Some(first) = seen.get(&profile.name).filter(|_| !profile.name.is_empty()) {
            let problem = format!("duplicate profile name {:?}", profile.name);
            duplicate(d, name_node, &format!("{item_path}.name"), problem, *first);
            continue;
        }
        seen.insert(profile.name.clone(), name_node.position);
        profiles.push(profile);
    }
    profiles
}

/// One profile and the node of its name (for duplicate-name problems).
fn profile<'n>(d: &mut Decoder, node: &'n YamlNode, path: &str) -> Option<(Profile, &'n YamlNode)> {
    let fields = d.fields(node, path, &PROFILE_FIELDS)?;
    let name_node = fields.get("name");
    let name = match name_node {
        Some(name_node) => d.string(name_node, &fields.path("name")),
        None => None,
    };
    if name_node.is_none() || name.as_deref() == Some("") {
        d.problem_as(
            Rule::MissingField,
            name_node.and_then(|n| n.position).or(fields.position),
            &fields.path("name"),
            "a profile needs a name",
        );
    }

    let configs = plugin_configs(d, &fields);
    let enabled = match fields.get("plugins") {
        Some(plugins) => enabled_strategies(d, plugins, &fields.path("plugins")),
        None => Vec::new(),
    };

    let evictor = evictor_args(d, configs.evictor, &configs.evictor_path);
    let mut profile = Profile {
        name: name.unwrap_or_default(),
        evictor,
        deschedule: Vec::new(),
        balance: Vec::new(),
    };
    for kind in &enabled {
        missing_required_arg(d, &fields, &configs, *kind);
        let strategy = configs
            .strategies
            .get(kind)
            .cloned()
            .unwrap_or_else(|| kind.with_default_args());
        match kind.extension_point() {
            ExtensionPoint::Deschedule => profile.deschedule.push(strategy),
            ExtensionPoint::Balance => profile.balance.push(strategy),
        }
    }
    configured_but_not_enabled(d, &configs, &enabled);
    if enabled.contains(&PluginKind::TopologySpread) {
        unchecked_balance_warning(d, &configs);
    }
    if enabled.is_empty() {
        d.warning_at(
            node,
            path,
            format!(
                "profile {:?} enables no strategy and has no effect",
                profile.name
            ),
        );
    }
    Some((profile, name_node.unwrap_or(node)))
}

/// A strategy enabled without a pluginConfig entry although one of its arguments has no
/// default: a problem, as upstream refuses the plugin.
fn missing_required_arg(
    d: &mut Decoder,
    fields: &Fields<'_>,
    configs: &PluginConfigs,
    kind: PluginKind,
) {
    if let (None, Some(arg), Some(plugins)) = (
        configs.strategies.get(&kind),
        kind.spec().required,
        fields.get("plugins"),
    ) {
        d.problem_at_as(
            Rule::MissingField,
            plugins,
            &fields.path("plugins"),
            format!(
                "{} is enabled without a pluginConfig entry, and its {arg} has no default \
                 (upstream refuses the plugin without it): add {{name: {}, args: {{{arg}: \
                 …}}}} to pluginConfig",
                kind.as_str(),
                kind.as_str()
            ),
        );
    }
}

/// A pluginConfig entry for a strategy the profile does not enable has no effect: a warning.
fn configured_but_not_enabled(d: &mut Decoder, configs: &PluginConfigs, enabled: &[PluginKind]) {
    for (kind, (node, entry_path)) in &configs.entries {
        if !enabled.contains(kind) {
            d.warning_at(
                node,
                entry_path,
                format!(
                    "{} is configured but not enabled; add it to plugins.{}.enabled to run it",
                    kind.as_str(),
                    kind.extension_point().key()
                ),
            );
        }
    }
}

/// `topologyBalanceNodeFit: false` beside an explicit `nodeFit: true`: upstream's nodeFit would
/// still refuse the pods the former lets go; here the strategy's own setting wins, and the
/// warning says so.
fn unchecked_balance_warning(d: &mut Decoder, configs: &PluginConfigs) {
    let kind = PluginKind::TopologySpread;
    let node_fit = field(configs.evictor, "nodeFit");
    let balance_fit = configs
        .args
        .get(&kind)
        .and_then(|args| field(Some(args), "topologyBalanceNodeFit"));
    let (Some(node_fit), Some(balance_fit)) = (node_fit, balance_fit) else {
        return;
    };
    if node_fit.value != Value::Bool(true) || balance_fit.value != Value::Bool(false) {
        return;
    }
    let (_, entry_path) = &configs.entries[&kind];
    d.warning_at_as(
        Rule::Caution,
        balance_fit,
        &format!("{entry_path}.args.topologyBalanceNodeFit"),
        format!(
            "topologyBalanceNodeFit: false lets {} evict pods that no node would take now, \
             although {DEFAULT_EVICTOR} sets nodeFit: true; here topologyBalanceNodeFit wins for \
             this strategy (upstream's nodeFit would still refuse those pods)",
            kind.as_str()
        ),
    );
}

/// A field of a mapping, looked up again after decoding (so no problem is recorded twice).
fn field<'n>(node: Option<&'n YamlNode>, name: &str) -> Option<&'n YamlNode> {
    let Value::Map(entries) = &node?.value else {
        return None;
    };
    entries
        .iter()
        .find(|(key, _)| matches!(&key.value, Value::Str(key) if key == name))
        .map(|(_, value)| value)
}

/// The `pluginConfig` entries of one profile, decoded.
struct PluginConfigs<'n> {
    evictor: Option<&'n YamlNode>,
    evictor_path: String,
    strategies: BTreeMap<PluginKind, Strategy>,
    /// Each strategy entry's name node and path, for "configured but not enabled" warnings.
    entries: BTreeMap<PluginKind, (&'n YamlNode, String)>,
    /// Each strategy entry's `args`, when given, for warnings about combinations.
    args: BTreeMap<PluginKind, &'n YamlNode>,
}

fn plugin_configs<'n>(d: &mut Decoder, profile: &Fields<'n>) -> PluginConfigs<'n> {
    let mut configs = PluginConfigs {
        evictor: None,
        evictor_path: String::new(),
        strategies: BTreeMap::new(),
        entries: BTreeMap::new(),
        args: BTreeMap::new(),
    };
    let path = profile.path("pluginConfig");
    let mut seen: BTreeMap<String, Option<Position>> = BTreeMap::new();
    for (i, item) in profile.list(d, "pluginConfig").iter().enumerate() {
        let item_path = index(&path, i);
        let Some(entry) = d.fields(item, &item_path, &["name", "args"]) else {
            continue;
        };
        let Some(name_node) = entry.get("name") else {
            d.problem_as(
                Rule::MissingField,
                entry.position,
                &entry.path("name"),
                "a pluginConfig entry needs the plugin's name",
            );
            continue;
        };
        let Some(name) = d.string(name_node, &entry.path("name")) else {
            continue;
        };
        if let Some(first) = seen.get(&name) {
            let problem = format!("{name} is configured twice");
            duplicate(d, name_node, &entry.path("name"), problem, *first);
            continue;
        }
        seen.insert(name.clone(), name_node.position);
        let args = entry.get("args");
        let args_path = entry.path("args");
        if name == DEFAULT_EVICTOR {
            configs.evictor = args;
            configs.evictor_path = args_path;
        } else if let Some(kind) = PluginKind::from_name(&name) {
            configs
                .strategies
                .insert(kind, kind.decode_args(d, args, &args_path));
            configs.entries.insert(kind, (name_node, item_path));
            if let Some(args) = args {
                configs.args.insert(kind, args);
            }
        } else {
            d.problem_at_as(
                Rule::UnknownPlugin,
                name_node,
                &entry.path("name"),
                unsupported_plugin(&name),
            );
        }
    }
    configs
}

/// The strategies enabled under `plugins:`, deschedule ones first, each once.
fn enabled_strategies(d: &mut Decoder, node: &YamlNode, path: &str) -> Vec<PluginKind> {
    let mut enabled: Vec<PluginKind> = Vec::new();
    let Some(sets) = d.fields(node, path, &PLUGIN_SETS) else {
        return enabled;
    };
    for set in PLUGIN_SETS {
        let Some(set_node) = sets.get(set) else {
            continue;
        };
        let set_path = sets.path(set);
        let Some(set_fields) = d.fields(set_node, &set_path, &["enabled", "disabled"]) else {
            continue;
        };
        let enabled_path = set_fields.path("enabled");
        for (i, item) in set_fields.list(d, "enabled").iter().enumerate() {
            let item_path = index(&enabled_path, i);
            let Some(name) = d.string(item, &item_path) else {
                continue;
            };
            match placement(set, &name) {
                Ok(Some(kind)) if enabled.contains(&kind) => {
                    d.problem_at_as(
                        Rule::Duplicate,
                        item,
                        &item_path,
                        format!("{name} is enabled twice"),
                    );
                }
                Ok(Some(kind)) => enabled.push(kind),
                // DefaultEvictor as a filter: always there anyway.
                Ok(None) => {}
                Err(message) => d.problem_at_as(Rule::UnknownPlugin, item, &item_path, message),
            }
        }
        if let Some(disabled) = set_fields.get("disabled") {
            let names = set_fields.strings(d, "disabled", |_| None);
            if !names.is_empty() {
                d.warning_at(
                    disabled,
                    &set_fields.path("disabled"),
                    "disabled lists are ignored (as upstream): only the enabled plugins run",
                );
            }
        }
    }
    // Deschedule plugins run before balance plugins whatever the order in the file.
    enabled.sort_by_key(|kind| kind.extension_point() == ExtensionPoint::Balance);
    enabled
}

/// Whether `name` may be enabled in plugin set `set`: the strategy it enables, `None` for the
/// implicit DefaultEvictor filter, or the problem.
fn placement(set: &str, name: &str) -> Result<Option<PluginKind>, String> {
    let is_filter = matches!(set, "filter" | "preevictionfilter");
    if name == DEFAULT_EVICTOR {
        return if is_filter {
            Ok(None)
        } else {
            Err(format!(
                "{DEFAULT_EVICTOR} is a filter plugin; it belongs under plugins.filter or \
                 plugins.preevictionfilter (where it is always enabled anyway)"
            ))
        };
    }
    let Some(kind) = PluginKind::from_name(name) else {
        return Err(if is_filter {
            match super::decode::suggestion(name, &[DEFAULT_EVICTOR]) {
                Some(close) => format!(
                    "unknown filter plugin {name:?}; did you mean {close:?}? only \
                     {DEFAULT_EVICTOR} is supported"
                ),
                None => {
                    format!("unknown filter plugin {name:?}; only {DEFAULT_EVICTOR} is supported")
                }
            }
        } else {
            unsupported_plugin(name)
        });
    };
    let point = kind.extension_point().key();
    if set == point {
        Ok(Some(kind))
    } else {
        Err(format!(
            "{name} is a {point} plugin; list it under plugins.{point}.enabled"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::supported_plugins;
    use crate::policy::Strategy;
    use crate::policy::plugins::AntiAffinityArgs;
    use crate::policy::testing::{OURS, load, problem, problems, warnings};

    fn with_plugins(plugins: &str) -> String {
        format!("{OURS}profiles:\n  - name: p\n    plugins:\n{plugins}")
    }

    #[test]
    fn a_utilization_plugin_without_its_thresholds_is_refused_as_upstream_refuses_it() {
        let text = with_plugins("      balance:\n        enabled: [HighNodeUtilization]\n");
        assert_eq!(
            problem(&text),
            "policy.yaml:7:7: profiles[0].plugins: HighNodeUtilization is enabled without a \
             pluginConfig entry, and its thresholds has no default (upstream refuses the plugin \
             without it): add {name: HighNodeUtilization, args: {thresholds: …}} to pluginConfig"
        );
    }

    #[test]
    fn a_misspelt_plugin_gets_a_suggestion() {
        let text = with_plugins("      balance:\n        enabled: [RemoveDuplicate]\n");
        // The list is the registry's, in its order (a test in plugins.rs holds it to the enum).
        let valid = supported_plugins().join(", ");
        assert_eq!(
            problem(&text),
            format!(
                "policy.yaml:8:19: profiles[0].plugins.balance.enabled[0]: unknown plugin \
                 \"RemoveDuplicate\"; did you mean \"RemoveDuplicates\"? valid: {valid}"
            )
        );
    }

    #[test]
    fn a_misspelt_plugin_set_gets_a_suggestion() {
        let text = with_plugins("      preEvictionFilter:\n        enabled: [DefaultEvictor]\n");
        assert_eq!(
            problem(&text),
            "policy.yaml:7:7: profiles[0].plugins.preEvictionFilter: unknown field \
             \"preEvictionFilter\"; did you mean \"preevictionfilter\"? valid: presort, sort, \
             deschedule, balance, filter, preevictionfilter"
        );
    }

    #[test]
    fn a_strategy_at_the_wrong_extension_point_says_where_it_belongs() {
        let text = with_plugins(
            "      deschedule:\n        enabled: [RemovePodsViolatingTopologySpreadConstraint]\n      \
             sort:\n        enabled: [RemovePodsViolatingInterPodAntiAffinity, DefaultEvictor]\n",
        );
        assert_eq!(
            problems(&text),
            [
                "policy.yaml:8:19: profiles[0].plugins.deschedule.enabled[0]: \
                 RemovePodsViolatingTopologySpreadConstraint is a balance plugin; list it under \
                 plugins.balance.enabled",
                "policy.yaml:10:19: profiles[0].plugins.sort.enabled[0]: \
                 RemovePodsViolatingInterPodAntiAffinity is a deschedule plugin; list it under \
                 plugins.deschedule.enabled",
                "policy.yaml:10:60: profiles[0].plugins.sort.enabled[1]: DefaultEvictor is a \
                 filter plugin; it belongs under plugins.filter or plugins.preevictionfilter \
                 (where it is always enabled anyway)",
            ]
        );
    }

    #[test]
    fn only_default_evictor_is_a_filter_plugin() {
        let text = with_plugins("      filter:\n        enabled: [DefaultEvicter, MyEvictor]\n");
        assert_eq!(
            problems(&text),
            [
                "policy.yaml:8:19: profiles[0].plugins.filter.enabled[0]: unknown filter plugin \
                 \"DefaultEvicter\"; did you mean \"DefaultEvictor\"? only DefaultEvictor is supported",
                "policy.yaml:8:35: profiles[0].plugins.filter.enabled[1]: unknown filter plugin \
                 \"MyEvictor\"; only DefaultEvictor is supported",
            ]
        );
    }

    #[test]
    fn a_plugin_enabled_without_plugin_config_gets_default_args() {
        let text = with_plugins(
            "      filter:\n        enabled: [DefaultEvictor]\n      preevictionfilter:\n        \
             enabled: [DefaultEvictor]\n      deschedule:\n        \
             enabled: [RemovePodsViolatingInterPodAntiAffinity]\n",
        );
        let profile = &load(&text).policy.profiles[0];
        assert_eq!(
            profile.deschedule,
            [Strategy::InterPodAntiAffinity(AntiAffinityArgs::default())]
        );
        assert!(profile.evictor.node_fit);
    }

    #[test]
    fn a_plugin_whose_args_have_no_default_needs_plugin_config() {
        let text = with_plugins(
            "      deschedule:\n        enabled: [RemovePodsHavingTooManyRestarts, PodLifeTime]\n",
        );
        assert_eq!(
            problems(&text),
            [
                "policy.yaml:7:7: profiles[0].plugins: RemovePodsHavingTooManyRestarts is enabled \
                 without a pluginConfig entry, and its podRestartThreshold has no default \
                 (upstream refuses the plugin without it): add {name: \
                 RemovePodsHavingTooManyRestarts, args: {podRestartThreshold: …}} to pluginConfig",
                "policy.yaml:7:7: profiles[0].plugins: PodLifeTime is enabled without a \
                 pluginConfig entry, and its maxPodLifeTimeSeconds has no default (upstream \
                 refuses the plugin without it): add {name: PodLifeTime, args: \
                 {maxPodLifeTimeSeconds: …}} to pluginConfig",
            ]
        );
    }

    #[test]
    fn a_strategy_enabled_twice_is_a_problem() {
        let text =
            with_plugins("      balance:\n        enabled: [RemoveDuplicates, RemoveDuplicates]\n");
        assert_eq!(
            problem(&text),
            "policy.yaml:8:37: profiles[0].plugins.balance.enabled[1]: RemoveDuplicates is enabled twice"
        );
    }

    #[test]
    fn duplicate_profile_names_are_a_problem() {
        let text = format!("{OURS}profiles:\n  - name: a\n  - name: b\n  - name: a\n");
        assert_eq!(
            problem(&text),
            "policy.yaml:7:11: profiles[2].name: duplicate profile name \"a\" (first at line 5)"
        );
    }

    #[test]
    fn a_profile_needs_a_name() {
        let text = format!("{OURS}profiles:\n  - plugins: {{}}\n");
        assert_eq!(
            problem(&text),
            "policy.yaml:5:5: profiles[0].name: a profile needs a name"
        );
    }

    #[test]
    fn plugin_config_is_checked_even_for_plugins_that_are_not_enabled() {
        let text = format!(
            "{OURS}profiles:\n  - name: p\n    pluginConfig:\n      - name: RemoveDuplicates\n        \
             args: {{excludeOwnerKind: [Job]}}\n      - name: RemoveDuplicates\n"
        );
        assert_eq!(
            problems(&text),
            [
                "policy.yaml:8:16: profiles[0].pluginConfig[0].args.excludeOwnerKind: unknown \
                 field \"excludeOwnerKind\"; did you mean \"excludeOwnerKinds\"? valid: \
                 namespaces, excludeOwnerKinds",
                "policy.yaml:9:15: profiles[0].pluginConfig[1].name: RemoveDuplicates is \
                 configured twice (first at line 7)",
            ]
        );
    }

    #[test]
    fn configured_but_not_enabled_strategies_and_empty_profiles_are_warned_about() {
        let text = format!(
            "{OURS}profiles:\n  - name: p\n    pluginConfig:\n      - name: RemoveDuplicates\n"
        );
        assert_eq!(
            warnings(&text),
            [
                "policy.yaml:5:5: profiles[0]: profile \"p\" enables no strategy and has no effect",
                "policy.yaml:7:15: profiles[0].pluginConfig[0]: RemoveDuplicates is configured but not \
                 enabled; add it to plugins.balance.enabled to run it",
            ]
        );
    }

    #[test]
    fn topology_balance_node_fit_off_beside_an_explicit_node_fit_is_warned_about() {
        let text = |node_fit: &str| {
            format!(
                "{OURS}profiles:\n  - name: p\n    pluginConfig:\n      - name: DefaultEvictor\n        \
                 args: {{{node_fit}}}\n      - name: RemovePodsViolatingTopologySpreadConstraint\n        \
                 args:\n          topologyBalanceNodeFit: false\n    plugins:\n      balance:\n        \
                 enabled: [RemovePodsViolatingTopologySpreadConstraint]\n"
            )
        };
        assert_eq!(
            warnings(&text("nodeFit: true")),
            [
                "policy.yaml:11:35: profiles[0].pluginConfig[1].args.topologyBalanceNodeFit: \
                 topologyBalanceNodeFit: false lets RemovePodsViolatingTopologySpreadConstraint \
                 evict pods that no node would take now, although DefaultEvictor sets nodeFit: \
                 true; here topologyBalanceNodeFit wins for this strategy (upstream's nodeFit \
                 would still refuse those pods)"
            ]
        );
        // nodeFit left at its default, or off: nothing contradicts the strategy's setting.
        assert_eq!(warnings(&text("")), Vec::<String>::new());
        assert_eq!(warnings(&text("nodeFit: false")), Vec::<String>::new());
    }
}
