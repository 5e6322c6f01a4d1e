//! `PodLifeTime` arguments, as upstream's newest `PodLifeTimeArgs`: age, states, conditions,
//! exit codes and owner kinds, each an optional filter; at least one of the pod filters must be
//! given (`namespaces`, `labelSelector` and `ownerKinds` only narrow them).

use crate::policy::Namespaces;
use crate::policy::decode::{Decoder, Fields, index};
use crate::policy::rule::Rule;
use crate::policy::yaml::{Value, YamlNode};

use super::{Strategy, choices, label_selector_of, legacy_section, namespaces, owner_kinds};

/// The `states` upstream accepts: pod phases, pod status reasons, container waiting reasons
/// and container terminated reasons.
pub(super) const STATES: [&str; 24] = [
    // Pod phases.
    "Running",
    "Pending",
    "Succeeded",
    "Failed",
    "Unknown",
    // Pod status reasons.
    "NodeAffinity",
    "NodeLost",
    "Shutdown",
    "UnexpectedAdmissionError",
    // Container waiting reasons.
    "PodInitializing",
    "ContainerCreating",
    "ImagePullBackOff",
    "CrashLoopBackOff",
    "CreateContainerConfigError",
    "ErrImagePull",
    "CreateContainerError",
    "InvalidImageName",
    // Container terminated reasons.
    "OOMKilled",
    "Error",
    "Completed",
    "DeadlineExceeded",
    "Evicted",
    "ContainerCannotRun",
    "StartError",
];

/// What a condition's `status` can be.
const CONDITION_STATUSES: [&str; 3] = ["True", "False", "Unknown"];

#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodLifeTimeArgs {
    pub namespaces: Namespaces,
    pub label_selector: Option<crate::snapshot::Requirements>,
    /// Only pods with an owner of an included kind, or none of an excluded kind.
    pub owner_kinds: OwnerKinds,
    /// When given, only pods created more than this many seconds ago.
    pub max_pod_life_time_seconds: Option<u32>,
    /// When given, only pods whose phase, `status.reason`, or a container's waiting or
    /// terminated reason is one of these.
    pub states: Vec<String>,
    /// When given, only pods with a condition matching one of these.
    pub conditions: Vec<ConditionFilter>,
    /// When given, only pods with a container terminated with one of these exit codes.
    pub exit_codes: Vec<i32>,
    /// Init containers count for `states` and `exitCodes`.
    pub including_init_containers: bool,
    /// Ephemeral containers count for `states` (upstream reads no exit codes of theirs).
    pub including_ephemeral_containers: bool,
}

/// `ownerKinds: {include, exclude}`; at most one of the two is non-empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OwnerKinds {
    pub include: Vec<String>,
    pub exclude: Vec<String>,
}

/// One `conditions` entry: every field given must hold for one of the pod's conditions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConditionFilter {
    pub condition_type: Option<String>,
    pub status: Option<String>,
    pub reason: Option<String>,
    /// The condition's `lastTransitionTime` is at least this many seconds ago (a condition
    /// without one does not match).
    pub min_time_since_last_transition_seconds: Option<u32>,
}

/// The filter users set most; the registry names it when the plugin has no `pluginConfig`
/// (any of [`FILTERS`] would do).
pub(super) const REQUIRED: &str = "maxPodLifeTimeSeconds";

/// The arguments of which upstream wants at least one.
const FILTERS: [&str; 4] = [REQUIRED, "states", "conditions", "exitCodes"];

const FIELDS: [&str; 9] = [
    "namespaces",
    "labelSelector",
    "ownerKinds",
    REQUIRED,
    "states",
    "conditions",
    "exitCodes",
    "includingInitContainers",
    "includingEphemeralContainers",
];

pub(super) fn decode(d: &mut Decoder, node: &YamlNode, path: &str) -> Strategy {
    let Some(fields) = d.fields(node, path, &FIELDS) else {
        return Strategy::PodLifeTime(PodLifeTimeArgs::default());
    };
    let namespaces = namespaces(d, fields.get("namespaces"), &fields.path("namespaces"));
    let args = PodLifeTimeArgs {
        namespaces,
        label_selector: label_selector_of(d, &fields),
        owner_kinds: owner_kind_filter(d, fields.get("ownerKinds"), &fields.path("ownerKinds")),
        max_pod_life_time_seconds: fields.integer::<u32>(d, REQUIRED),
        states: choices(d, &fields, "states", "state", &STATES),
        conditions: condition_filters(d, &fields),
        exit_codes: exit_codes(d, &fields),
        including_init_containers: fields.bool(d, "includingInitContainers").unwrap_or(false),
        including_ephemeral_containers: fields
            .bool(d, "includingEphemeralContainers")
            .unwrap_or(false),
    };
    require_a_filter(d, &fields, node, &args);
    Strategy::PodLifeTime(args)
}

/// Upstream refuses the plugin unless one filter is given; an empty list is no filter.
fn require_a_filter(d: &mut Decoder, fields: &Fields<'_>, node: &YamlNode, args: &PodLifeTimeArgs) {
    // A filter that was given but is invalid has its own problem already.
    let given = FILTERS.iter().any(|name| {
        fields
            .get(name)
            .is_some_and(|node| !matches!(&node.value, Value::Seq(items) if items.is_empty()))
    });
    let valid = args.max_pod_life_time_seconds.is_some()
        || !args.states.is_empty()
        || !args.conditions.is_empty()
        || !args.exit_codes.is_empty();
    if !given && !valid {
        d.problem_at_as(
            Rule::MissingField,
            node,
            &fields.path,
            format!(
                "set at least one of {} (upstream refuses the plugin without a filter)",
                FILTERS.join(", ")
            ),
        );
    }
}

/// `ownerKinds: {include, exclude}`, not both.
fn owner_kind_filter(d: &mut Decoder, node: Option<&YamlNode>, path: &str) -> OwnerKinds {
    let Some(fields) = node.and_then(|node| d.fields(node, path, &["include", "exclude"])) else {
        return OwnerKinds::default();
    };
    let kinds = OwnerKinds {
        include: owner_kinds(d, &fields, "include"),
        exclude: owner_kinds(d, &fields, "exclude"),
    };
    if !kinds.include.is_empty() && !kinds.exclude.is_empty() {
        d.problem_as(
            Rule::Conflict,
            fields.position,
            path,
            "set either include or exclude, not both",
        );
    }
    kinds
}

/// `conditions: [{type, status, reason, minTimeSinceLastTransitionSeconds}]`.
fn condition_filters(d: &mut Decoder, fields: &Fields<'_>) -> Vec<ConditionFilter> {
    const CONDITION_FIELDS: [&str; 4] = [
        "type",
        "status",
        "reason",
        "minTimeSinceLastTransitionSeconds",
    ];
    let path = fields.path("conditions");
    let mut filters = Vec::new();
    for (i, item) in fields.list(d, "conditions").iter().enumerate() {
        let item_path = index(&path, i);
        let Some(entry) = d.fields(item, &item_path, &CONDITION_FIELDS) else {
            continue;
        };
        // Go compares against "", so an empty string is an unset field.
        let text =
            |d: &mut Decoder, name: &str| entry.string(d, name).filter(|text| !text.is_empty());
        let status = match entry.get("status") {
            Some(node) if node.value != Value::Str(String::new()) => d.choice(
                node,
                &entry.path("status"),
                "condition status",
                &CONDITION_STATUSES,
            ),
            _ => None,
        };
        let filter = ConditionFilter {
            condition_type: text(d, "type"),
            status,
            reason: text(d, "reason"),
            min_time_since_last_transition_seconds: entry
                .integer::<u32>(d, "minTimeSinceLastTransitionSeconds"),
        };
        let given = CONDITION_FIELDS.iter().any(|name| {
            entry
                .get(name)
                .is_some_and(|node| node.value != Value::Str(String::new()))
        });
        // A misspelt field has its own problem; an empty filter is one with nothing in it.
        if !given && !has_unknown_keys(item, &CONDITION_FIELDS) {
            d.problem_at_as(
                Rule::MissingField,
                item,
                &item_path,
                format!(
                    "set at least one of {} (an empty filter would match every condition)",
                    CONDITION_FIELDS.join(", ")
                ),
            );
        }
        filters.push(filter);
    }
    filters
}

/// Whether a mapping has a key that is not one of `valid`.
fn has_unknown_keys(node: &YamlNode, valid: &[&str]) -> bool {
    let Value::Map(entries) = &node.value else {
        return false;
    };
    entries
        .iter()
        .any(|(key, _)| !matches!(&key.value, Value::Str(name) if valid.contains(&name.as_str())))
}

/// `exitCodes`: container exit codes (any 32-bit integer).
fn exit_codes(d: &mut Decoder, fields: &Fields<'_>) -> Vec<i32> {
    let path = fields.path("exitCodes");
    let mut codes = Vec::new();
    for (i, item) in fields.list(d, "exitCodes").iter().enumerate() {
        if let Some(code) = d.integer::<i32>(item, &index(&path, i))
            && !codes.contains(&code)
        {
            codes.push(code);
        }
    }
    codes
}

pub(super) const LEGACY_PARAMS: &[&str] = &["labelSelector", "podLifeTime"];

/// `params.podLifeTime: {maxPodLifeTimeSeconds, states, podStatusPhases}`; as upstream's
/// migration, the states are `podStatusPhases` then `states`, and the converted args are
/// checked as v1alpha2 ones are (one filter at least).
pub(super) fn from_v1alpha1(
    d: &mut Decoder,
    params: &Fields<'_>,
    namespaces: Namespaces,
) -> Strategy {
    let mut args = PodLifeTimeArgs {
        namespaces,
        label_selector: label_selector_of(d, params),
        ..PodLifeTimeArgs::default()
    };
    let valid = [REQUIRED, "states", "podStatusPhases"];
    legacy_section(d, params, "podLifeTime", &valid, |d, fields, node| {
        args.max_pod_life_time_seconds = fields.integer::<u32>(d, REQUIRED);
        args.states = choices(d, fields, "podStatusPhases", "state", &STATES);
        for state in choices(d, fields, "states", "state", &STATES) {
            if !args.states.contains(&state) {
                args.states.push(state);
            }
        }
        require_a_filter(d, fields, node, &args);
    });
    Strategy::PodLifeTime(args)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{strategy, with_args};
    use super::{ConditionFilter, OwnerKinds, PodLifeTimeArgs};
    use crate::policy::testing::{problem, problems};
    use crate::policy::{Namespaces, Strategy};

    const NAME: &str = "PodLifeTime";

    /// The args of a valid PodLifeTime entry (each line indented by 10).
    fn args(lines: &[&str]) -> PodLifeTimeArgs {
        let text: String = lines
            .iter()
            .map(|line| format!("          {line}\n"))
            .collect();
        match strategy(NAME, &text) {
            Strategy::PodLifeTime(args) => args,
            other => panic!("expected PodLifeTime, got {other:?}"),
        }
    }

    /// The problems of an invalid one.
    fn refused(lines: &[&str]) -> Vec<String> {
        let text: String = lines
            .iter()
            .map(|line| format!("          {line}\n"))
            .collect();
        problems(&with_args(NAME, &text))
    }

    #[test]
    fn life_time_args_convert() {
        assert_eq!(
            args(&[
                "maxPodLifeTimeSeconds: 86400",
                "states: [Pending, CrashLoopBackOff]"
            ]),
            PodLifeTimeArgs {
                max_pod_life_time_seconds: Some(86400),
                states: vec!["Pending".into(), "CrashLoopBackOff".into()],
                ..PodLifeTimeArgs::default()
            }
        );
    }

    #[test]
    fn every_upstream_argument_converts() {
        let converted = args(&[
            "namespaces: {include: [batch]}",
            "labelSelector: {matchLabels: {app: report}}",
            "ownerKinds: {exclude: [Job]}",
            "maxPodLifeTimeSeconds: 3600",
            "states: [Failed, OOMKilled, NodeAffinity]",
            "conditions:",
            "- {type: Ready, status: \"False\", reason: PodCompleted, \
             minTimeSinceLastTransitionSeconds: 300}",
            "- {minTimeSinceLastTransitionSeconds: 60}",
            "exitCodes: [1, 137]",
            "includingInitContainers: true",
            "includingEphemeralContainers: true",
        ]);
        let PodLifeTimeArgs { label_selector, .. } = &converted;
        assert!(label_selector.is_some());
        assert_eq!(
            converted,
            PodLifeTimeArgs {
                namespaces: Namespaces {
                    include: vec!["batch".into()],
                    exclude: Vec::new(),
                },
                label_selector: label_selector.clone(),
                owner_kinds: OwnerKinds {
                    include: Vec::new(),
                    exclude: vec!["Job".into()],
                },
                max_pod_life_time_seconds: Some(3600),
                states: vec!["Failed".into(), "OOMKilled".into(), "NodeAffinity".into()],
                conditions: vec![
                    ConditionFilter {
                        condition_type: Some("Ready".into()),
                        status: Some("False".into()),
                        reason: Some("PodCompleted".into()),
                        min_time_since_last_transition_seconds: Some(300),
                    },
                    ConditionFilter {
                        min_time_since_last_transition_seconds: Some(60),
                        ..ConditionFilter::default()
                    },
                ],
                exit_codes: vec![1, 137],
                including_init_containers: true,
                including_ephemeral_containers: true,
            }
        );
    }

    #[test]
    fn as_the_operator_writes_it_nulls_and_false_flags_are_absent() {
        assert_eq!(
            args(&[
                "includingEphemeralContainers: false",
                "includingInitContainers: false",
                "labelSelector: null",
                "maxPodLifeTimeSeconds: 86400",
                "namespaces: null",
                "states: null",
                "ownerKinds: {include: null, exclude: []}",
                "conditions: null",
                "exitCodes: null",
            ]),
            PodLifeTimeArgs {
                max_pod_life_time_seconds: Some(86400),
                ..PodLifeTimeArgs::default()
            }
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

    #[test]
    fn misspelt_new_fields_get_suggestions() {
        let found = refused(&[
            "maxPodLifeTimeSeconds: 60",
            "includingEphemeralContainer: true",
            "conditions: [{reasn: PodCompleted}]",
        ]);
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(
            found[0].starts_with(
                "policy.yaml:10:11: profiles[0].pluginConfig[0].args.includingEphemeralContainer: \
                 unknown field \"includingEphemeralContainer\"; did you mean \
                 \"includingEphemeralContainers\"?"
            ),
            "{found:#?}"
        );
        assert_eq!(
            found[1],
            "policy.yaml:11:25: profiles[0].pluginConfig[0].args.conditions[0].reasn: unknown \
             field \"reasn\"; did you mean \"reason\"? valid: type, status, reason, \
             minTimeSinceLastTransitionSeconds"
        );
    }

    #[test]
    fn wrong_types_are_named_where_they_are() {
        assert_eq!(
            refused(&[
                "maxPodLifeTimeSeconds: -1",
                "exitCodes: [one]",
                "includingInitContainers: \"yes\"",
                "conditions: [{status: \"true\", minTimeSinceLastTransitionSeconds: 5m}]",
            ]),
            [
                "policy.yaml:9:34: profiles[0].pluginConfig[0].args.maxPodLifeTimeSeconds: must \
                 not be negative",
                "policy.yaml:10:23: profiles[0].pluginConfig[0].args.exitCodes[0]: expected an \
                 integer, found a string",
                "policy.yaml:11:36: profiles[0].pluginConfig[0].args.includingInitContainers: \
                 expected a boolean (true or false), found a string",
                "policy.yaml:12:33: profiles[0].pluginConfig[0].args.conditions[0].status: \
                 unknown condition status \"true\"; did you mean \"True\"? valid: True, False, \
                 Unknown",
                "policy.yaml:12:76: profiles[0].pluginConfig[0].args.conditions[0].\
                 minTimeSinceLastTransitionSeconds: expected an integer, found a string",
            ]
        );
    }

    // Upstream's validation_test.go and the validation table of pod_lifetime_test.go, case by
    // case: what upstream accepts converts, what it refuses is a problem here too.

    #[test]
    fn upstream_validation_accepts_a_filter_alone_or_with_others() {
        let accepted: [&[&str]; 11] = [
            &["maxPodLifeTimeSeconds: 1", "states: [Running]"],
            &["maxPodLifeTimeSeconds: 1", "states: [Succeeded, Failed]"],
            &["maxPodLifeTimeSeconds: 1", "states: [CrashLoopBackOff]"],
            &["states: [Running]"],
            &["conditions: [{reason: PodCompleted}]"],
            &["maxPodLifeTimeSeconds: 600"],
            &["states: [Running]", "maxPodLifeTimeSeconds: 600"],
            &[
                "states: [Succeeded]",
                "conditions: [{reason: PodCompleted}]",
            ],
            &["exitCodes: [1]"],
            &["conditions: [{reason: PodCompleted, minTimeSinceLastTransitionSeconds: 300}]"],
            &["conditions: [{minTimeSinceLastTransitionSeconds: 300}]"],
        ];
        for lines in accepted {
            args(lines);
        }
    }

    #[test]
    fn upstream_validation_refuses_no_filter_at_all() {
        let no_filter = "policy.yaml:8:9: profiles[0].pluginConfig[0].args: set at least one of \
                         maxPodLifeTimeSeconds, states, conditions, exitCodes (upstream refuses \
                         the plugin without a filter)";
        assert_eq!(refused(&["{}"]), [no_filter.replace("8:9", "9:11")]);
        assert_eq!(
            refused(&["maxPodLifeTimeSeconds: null", "states: []"]),
            [no_filter.replace("8:9", "9:11")]
        );
        assert_eq!(
            problem(&with_args(
                NAME,
                "          includingInitContainers: true\n"
            )),
            no_filter.replace("8:9", "9:11")
        );
    }

    #[test]
    fn upstream_validation_refuses_an_unknown_state_even_without_an_age() {
        // Upstream reports the state alone; the unknown state is the one problem here too.
        let found = refused(&["states: [InvalidState]"]);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(
            found[0].starts_with(
                "policy.yaml:9:20: profiles[0].pluginConfig[0].args.states[0]: unknown state \
                 \"InvalidState\"; valid: Running, Pending,"
            ),
            "{found:#?}"
        );
        assert!(
            found[0].ends_with("ContainerCannotRun, StartError"),
            "{found:#?}"
        );
        let found = refused(&["maxPodLifeTimeSeconds: 1", "states: [NotAState]"]);
        assert_eq!(found.len(), 1, "{found:#?}");
    }

    #[test]
    fn upstream_validation_refuses_both_include_and_exclude() {
        assert_eq!(
            refused(&[
                "states: [Running]",
                "namespaces: {include: [a], exclude: [b]}",
                "ownerKinds: {include: [Job], exclude: [ReplicaSet]}",
            ]),
            [
                "policy.yaml:10:23: profiles[0].pluginConfig[0].args.namespaces: set either \
                 include or exclude, not both",
                "policy.yaml:11:23: profiles[0].pluginConfig[0].args.ownerKinds: set either \
                 include or exclude, not both",
            ]
        );
        // An empty list is no list, as upstream counts them.
        let converted = args(&[
            "states: [Running]",
            "namespaces: {exclude: [], include: [x]}",
            "ownerKinds: {include: [Job], exclude: []}",
        ]);
        assert_eq!(converted.namespaces.include, ["x"]);
        assert_eq!(converted.owner_kinds.include, ["Job"]);
    }

    #[test]
    fn upstream_validation_refuses_an_empty_condition_filter() {
        assert_eq!(
            refused(&["conditions: [{}]"]),
            [
                "policy.yaml:9:24: profiles[0].pluginConfig[0].args.conditions[0]: set at least \
                 one of type, status, reason, minTimeSinceLastTransitionSeconds (an empty filter \
                 would match every condition)"
            ]
        );
        // Go compares the fields against "": empty strings set nothing.
        assert_eq!(
            refused(&["conditions: [{type: \"\", status: \"\", reason: \"\"}]"]).len(),
            1
        );
    }
}
