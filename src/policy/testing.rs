//! Helpers for the policy tests: load inline YAML and look at the outcome.

use super::{DrsRuleSettings, LoadedPolicy, PolicyError, VsphereSettings, load_str};

/// The name inline test documents are loaded under.
pub(super) const FILE: &str = "policy.yaml";

/// Header of a policy in our format, for tests that only care about what follows.
pub(super) const OURS: &str =
    "apiVersion: vsphere-descheduler.io/v1alpha1\nkind: DeschedulerPolicy\nclusterName: test\n";

/// The vSphere settings of a policy in an upstream format: it writes no DRS rules.
pub(super) fn drs_rules_off() -> VsphereSettings {
    VsphereSettings {
        drs_rules: DrsRuleSettings {
            enabled: false,
            ..DrsRuleSettings::default()
        },
        ..VsphereSettings::default()
    }
}

/// Loads a policy that must be valid.
pub(super) fn load(text: &str) -> LoadedPolicy {
    load_str(FILE, text).unwrap_or_else(|error| panic!("{error}"))
}

/// The warnings of a policy that must be valid, as `validate` prints them.
pub(super) fn warnings(text: &str) -> Vec<String> {
    load(text)
        .warnings
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// The problems of a policy that must be invalid, as `validate` prints them.
pub(super) fn problems(text: &str) -> Vec<String> {
    match load_str(FILE, text) {
        Ok(loaded) => panic!("expected problems, got {:#?}", loaded.policy),
        Err(PolicyError::Invalid { problems, .. }) => {
            problems.iter().map(ToString::to_string).collect()
        }
        Err(error) => panic!("expected problems, got {error}"),
    }
}

/// The only problem of a policy that must be invalid.
pub(super) fn problem(text: &str) -> String {
    let mut problems = problems(text);
    assert_eq!(problems.len(), 1, "expected one problem, got {problems:#?}");
    problems.remove(0)
}
