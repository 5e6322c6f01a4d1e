//! `RemovePodsHavingTooManyRestarts` arguments.

use crate::policy::Namespaces;
use crate::policy::decode::{Decoder, Fields};
use crate::policy::yaml::YamlNode;

use super::{Strategy, choices, label_selector_of, legacy_section, namespaces, required};

/// The `states` upstream accepts: a pod phase and a container waiting reason.
pub(super) const STATES: [&str; 2] = ["Running", "CrashLoopBackOff"];

#[derive(Clone, Debug, Default, PartialEq)]
pub struct TooManyRestartsArgs {
    pub namespaces: Namespaces,
    pub label_selector: Option<crate::snapshot::Requirements>,
    /// Pods whose containers restarted at least this often in all are evicted (at least 1).
    pub pod_restart_threshold: i32,
    /// Init containers' restarts (and states) count too.
    pub including_init_containers: bool,
    /// When given, only pods in one of these states: phase `Running`, or a container waiting
    /// in `CrashLoopBackOff`.
    pub states: Vec<String>,
}

/// The one argument without a default: upstream refuses a threshold below 1.
pub(super) const REQUIRED: &str = "podRestartThreshold";

const FIELDS: [&str; 5] = [
    "namespaces",
    "labelSelector",
    "podRestartThreshold",
    "includingInitContainers",
    "states",
];

pub(super) fn decode(d: &mut Decoder, node: &YamlNode, path: &str) -> Strategy {
    let Some(fields) = d.fields(node, path, &FIELDS) else {
        return Strategy::TooManyRestarts(TooManyRestartsArgs::default());
    };
    let mut args = TooManyRestartsArgs {
        namespaces: namespaces(d, fields.get("namespaces"), &fields.path("namespaces")),
        label_selector: label_selector_of(d, &fields),
        ..TooManyRestartsArgs::default()
    };
    threshold_and_init(d, &fields, node, &mut args);
    args.states = choices(d, &fields, "states", "state", &STATES);
    Strategy::TooManyRestarts(args)
}

/// `podRestartThreshold` (at least 1, required) and `includingInitContainers`, which v1alpha1
/// keeps under `podsHavingTooManyRestarts`.
fn threshold_and_init(
    d: &mut Decoder,
    fields: &Fields<'_>,
    node: &YamlNode,
    args: &mut TooManyRestartsArgs,
) {
    match fields.integer::<i32>(d, REQUIRED) {
        Some(threshold) if threshold >= 1 => args.pod_restart_threshold = threshold,
        Some(_) => d.problem_at(
            fields.get(REQUIRED).expect("just read"),
            &fields.path(REQUIRED),
            "must be at least 1",
        ),
        None if fields.get(REQUIRED).is_none() => required(d, node, &fields.path, REQUIRED),
        None => {}
    }
    args.including_init_containers = fields.bool(d, "includingInitContainers").unwrap_or(false);
}

pub(super) const LEGACY_PARAMS: &[&str] = &["labelSelector", "podsHavingTooManyRestarts"];

/// `params.podsHavingTooManyRestarts: {podRestartThreshold, includingInitContainers}`.
pub(super) fn from_v1alpha1(
    d: &mut Decoder,
    params: &Fields<'_>,
    namespaces: Namespaces,
) -> Strategy {
    let mut args = TooManyRestartsArgs {
        namespaces,
        label_selector: label_selector_of(d, params),
        ..TooManyRestartsArgs::default()
    };
    let valid = [REQUIRED, "includingInitContainers"];
    legacy_section(
        d,
        params,
        "podsHavingTooManyRestarts",
        &valid,
        |d, fields, node| {
            threshold_and_init(d, fields, node, &mut args);
        },
    );
    Strategy::TooManyRestarts(args)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{strategy, with_args};
    use super::TooManyRestartsArgs;
    use crate::policy::Strategy;
    use crate::policy::testing::{problem, problems};

    const NAME: &str = "RemovePodsHavingTooManyRestarts";

    #[test]
    fn restart_args_convert() {
        let args = "          podRestartThreshold: 100\n          includingInitContainers: true\n          \
                    states: [CrashLoopBackOff]\n";
        assert_eq!(
            strategy(NAME, args),
            Strategy::TooManyRestarts(TooManyRestartsArgs {
                pod_restart_threshold: 100,
                including_init_containers: true,
                states: vec!["CrashLoopBackOff".into()],
                ..TooManyRestartsArgs::default()
            })
        );
    }

    #[test]
    fn the_threshold_is_required_and_positive_and_states_are_checked() {
        let text = with_args(NAME, "          includingInitContainers: true\n");
        assert_eq!(
            problem(&text),
            "policy.yaml:9:11: profiles[0].pluginConfig[0].args: podRestartThreshold must be set \
             (upstream has no default and refuses the plugin without it)"
        );
        let text = with_args(
            NAME,
            "          podRestartThreshold: 0\n          states: [Pending]\n",
        );
        assert_eq!(
            problems(&text),
            [
                "policy.yaml:9:32: profiles[0].pluginConfig[0].args.podRestartThreshold: must be \
                 at least 1",
                "policy.yaml:10:20: profiles[0].pluginConfig[0].args.states[0]: unknown state \
                 \"Pending\"; valid: Running, CrashLoopBackOff",
            ]
        );
    }
}
