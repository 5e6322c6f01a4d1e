//! `PodLifeTime` arguments.

use crate::policy::Namespaces;
use crate::policy::decode::{Decoder, Fields};
use crate::policy::selector::label_selector;
use crate::policy::yaml::{Node, Value};

use super::{Strategy, choices, namespaces, required};

/// The `states` upstream accepts: pod phases, pod status reasons and container waiting reasons.
pub(super) const STATES: [&str; 17] = [
    "Running",
    "Pending",
    "Succeeded",
    "Failed",
    "Unknown",
    "NodeAffinity",
    "NodeLost",
    "Shutdown",
    "UnexpectedAdmissionError",
    "PodInitializing",
    "ContainerCreating",
    "ImagePullBackOff",
    "CrashLoopBackOff",
    "CreateContainerConfigError",
    "ErrImagePull",
    "CreateContainerError",
    "InvalidImageName",
];

#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodLifeTimeArgs {
    pub namespaces: Namespaces,
    pub label_selector: Option<kube::core::Selector>,
    /// Pods created more than this many seconds ago are evicted.
    pub max_pod_life_time_seconds: u32,
    /// When given, only pods whose phase, `status.reason` or a container's waiting reason is
    /// one of these.
    pub states: Vec<String>,
}

/// The one argument without a default: upstream refuses the plugin without it.
pub(super) const REQUIRED: &str = "maxPodLifeTimeSeconds";

const FIELDS: [&str; 4] = ["namespaces", "labelSelector", REQUIRED, "states"];

pub(super) fn decode(d: &mut Decoder, node: &Node, path: &str) -> Strategy {
    let Some(fields) = d.fields(node, path, &FIELDS) else {
        return Strategy::PodLifeTime(PodLifeTimeArgs::default());
    };
    let namespaces = namespaces(d, fields.get("namespaces"), &fields.path("namespaces"));
    let mut args = PodLifeTimeArgs {
        namespaces,
        label_selector: label_selector(
            d,
            fields.get("labelSelector"),
            &fields.path("labelSelector"),
        ),
        ..PodLifeTimeArgs::default()
    };
    args.max_pod_life_time_seconds = max_life_time(d, &fields, node);
    args.states = choices(d, &fields, "states", "state", &STATES);
    Strategy::PodLifeTime(args)
}

fn max_life_time(d: &mut Decoder, fields: &Fields<'_>, node: &Node) -> u32 {
    if fields.get(REQUIRED).is_none() {
        required(d, node, &fields.path, REQUIRED);
    }
    fields.integer::<u32>(d, REQUIRED).unwrap_or(0)
}

pub(super) const LEGACY_PARAMS: &[&str] = &["labelSelector", "podLifeTime"];

/// `params.podLifeTime: {maxPodLifeTimeSeconds, states, podStatusPhases}`; as upstream's
/// migration, the states are `podStatusPhases` then `states`.
pub(super) fn from_v1alpha1(
    d: &mut Decoder,
    params: &Fields<'_>,
    namespaces: Namespaces,
) -> Strategy {
    let mut args = PodLifeTimeArgs {
        namespaces,
        label_selector: label_selector(
            d,
            params.get("labelSelector"),
            &params.path("labelSelector"),
        ),
        ..PodLifeTimeArgs::default()
    };
    let absent = Node {
        position: params.position,
        value: Value::Null,
    };
    let node = params.get("podLifeTime").unwrap_or(&absent);
    let valid = [REQUIRED, "states", "podStatusPhases"];
    if let Some(fields) = d.fields(node, &params.path("podLifeTime"), &valid) {
        args.max_pod_life_time_seconds = max_life_time(d, &fields, node);
        args.states = choices(d, &fields, "podStatusPhases", "state", &STATES);
        for state in choices(d, &fields, "states", "state", &STATES) {
            if !args.states.contains(&state) {
                args.states.push(state);
            }
        }
    }
    Strategy::PodLifeTime(args)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{strategy, with_args};
    use super::PodLifeTimeArgs;
    use crate::policy::Strategy;
    use crate::policy::testing::problem;

    const NAME: &str = "PodLifeTime";

    #[test]
    fn life_time_args_convert() {
        let args = "          maxPodLifeTimeSeconds: 86400\n          states: [Pending, CrashLoopBackOff]\n";
        assert_eq!(
            strategy(NAME, args),
            Strategy::PodLifeTime(PodLifeTimeArgs {
                max_pod_life_time_seconds: 86400,
                states: vec!["Pending".into(), "CrashLoopBackOff".into()],
                ..PodLifeTimeArgs::default()
            })
        );
    }

    #[test]
    fn a_misspelt_state_gets_a_suggestion() {
        let text = with_args(
            NAME,
            "          maxPodLifeTimeSeconds: 60\n          states: [CrashLoopBackof]\n",
        );
        assert!(
            problem(&text).starts_with(
                "policy.yaml:10:20: profiles[0].pluginConfig[0].args.states[0]: unknown state \
                 \"CrashLoopBackof\"; did you mean \"CrashLoopBackOff\"?"
            ),
            "{}",
            problem(&text)
        );
    }
}
