//! What each finding in a policy file is about, as a stable identifier: CI tools group, filter
//! and suppress findings by it (SARIF's `ruleId`, `validate --output json`'s `rule`), so an id
//! never changes meaning once published; new kinds get new ids.

use serde::Serialize;

/// The kind of a problem or warning in a policy file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// The file cannot be read as a YAML document: syntax, encoding, size, or empty.
    Syntax,
    /// `apiVersion` or `kind` is missing or not one this tool reads.
    Header,
    /// A field the format does not have (with the nearest valid name when there is one).
    UnknownField,
    /// A value of the wrong type: a list where a mapping belongs, a number for a string.
    WrongType,
    /// A required field or setting is missing.
    MissingField,
    /// A value outside what the field accepts.
    InvalidValue,
    /// Settings that exclude each other.
    Conflict,
    /// The same name twice where names must differ.
    Duplicate,
    /// A plugin or strategy name this tool does not run.
    UnknownPlugin,
    /// A setting upstream has that this tool does not support.
    Unsupported,
    /// Warning: a setting that has no effect.
    NoEffect,
    /// Warning: a setting upstream has deprecated.
    Deprecated,
    /// Warning: a setting that works, but likely not as meant.
    Caution,
    /// A setting that does not fit the vSphere inventory it is planned against (`vsphere.sites`
    /// naming host groups no cluster has): found by `plan` and `run`, not by `validate`.
    Inventory,
}

impl Rule {
    /// Every rule, in the order tools list them.
    pub const ALL: [Rule; 14] = [
        Rule::Syntax,
        Rule::Header,
        Rule::UnknownField,
        Rule::WrongType,
        Rule::MissingField,
        Rule::InvalidValue,
        Rule::Conflict,
        Rule::Duplicate,
        Rule::UnknownPlugin,
        Rule::Unsupported,
        Rule::NoEffect,
        Rule::Deprecated,
        Rule::Caution,
        Rule::Inventory,
    ];

    /// The stable id.
    pub fn id(self) -> &'static str {
        match self {
            Rule::Syntax => "syntax",
            Rule::Header => "header",
            Rule::UnknownField => "unknown-field",
            Rule::WrongType => "wrong-type",
            Rule::MissingField => "missing-field",
            Rule::InvalidValue => "invalid-value",
            Rule::Conflict => "conflict",
            Rule::Duplicate => "duplicate",
            Rule::UnknownPlugin => "unknown-plugin",
            Rule::Unsupported => "unsupported",
            Rule::NoEffect => "no-effect",
            Rule::Deprecated => "deprecated",
            Rule::Caution => "caution",
            Rule::Inventory => "inventory",
        }
    }

    /// One sentence on what the rule finds.
    pub fn description(self) -> &'static str {
        match self {
            Rule::Syntax => "The file cannot be read as a YAML document.",
            Rule::Header => "apiVersion or kind is missing or not one this tool reads.",
            Rule::UnknownField => "A field the policy format does not have.",
            Rule::WrongType => "A value of the wrong type.",
            Rule::MissingField => "A required field or setting is missing.",
            Rule::InvalidValue => "A value outside what the field accepts.",
            Rule::Conflict => "Settings that exclude each other.",
            Rule::Duplicate => "The same name twice where names must differ.",
            Rule::UnknownPlugin => "A plugin or strategy name this tool does not run.",
            Rule::Unsupported => {
                "A setting upstream descheduler has that this tool does not support."
            }
            Rule::NoEffect => "A setting that has no effect.",
            Rule::Deprecated => "A setting upstream descheduler has deprecated.",
            Rule::Caution => "A setting that works, but likely not as meant.",
            Rule::Inventory => "A setting that does not fit the vSphere inventory planned on.",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_distinct_and_serialize_as_themselves() {
        let ids: std::collections::BTreeSet<&str> = Rule::ALL.iter().map(|r| r.id()).collect();
        assert_eq!(ids.len(), Rule::ALL.len());
        for rule in Rule::ALL {
            assert_eq!(
                serde_json::to_value(rule).expect("serializes"),
                serde_json::Value::from(rule.id())
            );
        }
    }
}
