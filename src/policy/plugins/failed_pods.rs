//! `RemoveFailedPods` arguments.

use crate::policy::Namespaces;
use crate::policy::decode::{Decoder, Fields, index};
use crate::policy::yaml::YamlNode;

use super::{Strategy, label_selector_of, namespaces, owner_kinds};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct FailedPodsArgs {
    pub namespaces: Namespaces,
    pub label_selector: Option<crate::snapshot::Requirements>,
    /// Failed pods with an owner of one of these kinds stay (e.g. `Job`, whose failed pods
    /// are its record).
    pub exclude_owner_kinds: Vec<String>,
    /// Only failed pods created more than this many seconds ago.
    pub min_pod_lifetime_seconds: Option<u32>,
    /// When given, only failed pods whose `status.reason` or a container's waiting or
    /// terminated reason is one of these.
    pub reasons: Vec<String>,
    /// When given, only failed pods with a container terminated with one of these exit codes.
    pub exit_codes: Vec<i32>,
    /// Init containers' reasons and exit codes count too.
    pub including_init_containers: bool,
}

const FIELDS: [&str; 7] = [
    "namespaces",
    "labelSelector",
    "excludeOwnerKinds",
    "minPodLifetimeSeconds",
    "reasons",
    "exitCodes",
    "includingInitContainers",
];

pub(super) fn decode(d: &mut Decoder, node: &YamlNode, path: &str) -> Strategy {
    let Some(fields) = d.fields(node, path, &FIELDS) else {
        return Strategy::FailedPods(FailedPodsArgs::default());
    };
    let namespaces = namespaces(d, fields.get("namespaces"), &fields.path("namespaces"));
    let mut args = FailedPodsArgs {
        namespaces,
        label_selector: label_selector_of(d, &fields),
        ..FailedPodsArgs::default()
    };
    own_args(d, &fields, &mut args);
    let path = fields.path("exitCodes");
    for (i, item) in fields.list(d, "exitCodes").iter().enumerate() {
        if let Some(code) = d.integer::<i32>(item, &index(&path, i)) {
            args.exit_codes.push(code);
        }
    }
    Strategy::FailedPods(args)
}

/// The arguments v1alpha1's `params.failedPods` holds too.
fn own_args(d: &mut Decoder, fields: &Fields<'_>, args: &mut FailedPodsArgs) {
    args.exclude_owner_kinds = owner_kinds(d, fields, "excludeOwnerKinds");
    args.min_pod_lifetime_seconds = fields.integer::<u32>(d, "minPodLifetimeSeconds");
    args.reasons = fields.strings(d, "reasons", |reason| {
        reason
            .is_empty()
            .then(|| "a reason must not be empty".to_string())
    });
    args.including_init_containers = fields.bool(d, "includingInitContainers").unwrap_or(false);
}

pub(super) const LEGACY_PARAMS: &[&str] = &["labelSelector", "failedPods"];

/// `params.failedPods: {excludeOwnerKinds, minPodLifetimeSeconds, reasons,
/// includingInitContainers}` (v1alpha1 had no exit codes).
pub(super) fn from_v1alpha1(
    d: &mut Decoder,
    params: &Fields<'_>,
    namespaces: Namespaces,
) -> Strategy {
    let mut args = FailedPodsArgs {
        namespaces,
        label_selector: label_selector_of(d, params),
        ..FailedPodsArgs::default()
    };
    if let Some(node) = params.get("failedPods") {
        let valid = [
            "excludeOwnerKinds",
            "minPodLifetimeSeconds",
            "reasons",
            "includingInitContainers",
        ];
        if let Some(fields) = d.fields(node, &params.path("failedPods"), &valid) {
            own_args(d, &fields, &mut args);
        }
    }
    Strategy::FailedPods(args)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{strategy, with_args};
    use super::FailedPodsArgs;
    use crate::policy::Strategy;
    use crate::policy::testing::problem;

    const NAME: &str = "RemoveFailedPods";

    #[test]
    fn failed_pod_args_convert() {
        let args = "          excludeOwnerKinds: [Job]\n          minPodLifetimeSeconds: 3600\n          \
                    reasons: [NodeAffinity, OOMKilled]\n          exitCodes: [1, 137]\n          \
                    includingInitContainers: true\n";
        assert_eq!(
            strategy(NAME, args),
            Strategy::FailedPods(FailedPodsArgs {
                exclude_owner_kinds: vec!["Job".into()],
                min_pod_lifetime_seconds: Some(3600),
                reasons: vec!["NodeAffinity".into(), "OOMKilled".into()],
                exit_codes: vec![1, 137],
                including_init_containers: true,
                ..FailedPodsArgs::default()
            })
        );
        assert_eq!(
            strategy(NAME, "          {}\n"),
            Strategy::FailedPods(FailedPodsArgs::default())
        );
    }

    #[test]
    fn exit_codes_are_integers() {
        let text = with_args(NAME, "          exitCodes: [one]\n");
        assert_eq!(
            problem(&text),
            "policy.yaml:9:23: profiles[0].pluginConfig[0].args.exitCodes[0]: expected an \
             integer, found a string"
        );
    }
}
