//! Walking the YAML tree into typed values while collecting every problem.
//!
//! A serde derive stops at the first error and forgets where a value came from. The policy is
//! written by people who run `validate` in CI, so the decoder keeps going: each problem is
//! recorded with the node's position and its field path (`profiles[0].plugins.balance`), and
//! decoding continues with a default value in place of the bad one. The caller rejects the file
//! if any problem was recorded, so those defaults are never used.
//!
//! Two conventions hold everywhere: YAML `null` means "absent" (upstream files written by Go
//! marshallers are full of `null`s), and unknown fields are problems, with a suggestion when the
//! name is a near miss of a valid one.

use super::rule::Rule;
use super::yaml::{Position, Value, YamlNode};

/// A problem or warning before it is tied to a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct RawFinding {
    pub rule: Rule,
    pub position: Option<Position>,
    pub path: String,
    pub message: String,
}

/// Collects findings while a document is decoded.
#[derive(Debug, Default)]
pub(super) struct Decoder {
    pub problems: Vec<RawFinding>,
    pub warnings: Vec<RawFinding>,
}

impl Decoder {
    /// Records a value a field does not accept at a position (or none, for a problem no single
    /// node shows).
    pub fn problem(&mut self, position: Option<Position>, path: &str, message: impl Into<String>) {
        self.problem_as(Rule::InvalidValue, position, path, message);
    }

    /// Records a problem of `rule` at a position.
    pub fn problem_as(
        &mut self,
        rule: Rule,
        position: Option<Position>,
        path: &str,
        message: impl Into<String>,
    ) {
        self.problems.push(RawFinding {
            rule,
            position,
            path: path.to_string(),
            message: message.into(),
        });
    }

    /// Records a value a field does not accept at a node.
    pub fn problem_at(&mut self, node: &YamlNode, path: &str, message: impl Into<String>) {
        self.problem_as(Rule::InvalidValue, node.position, path, message);
    }

    /// Records a value refused at a node, `what` naming it and `error` saying why: the policy's
    /// one place where a check's error and its sources become the problem's words.
    pub fn refused_at(
        &mut self,
        node: &YamlNode,
        path: &str,
        what: impl std::fmt::Display,
        error: &dyn std::error::Error,
    ) {
        let message = format!("{what}: {}", crate::error_chain(error));
        self.problem_at(node, path, message);
    }

    /// Records a problem of `rule` at a node.
    pub fn problem_at_as(
        &mut self,
        rule: Rule,
        node: &YamlNode,
        path: &str,
        message: impl Into<String>,
    ) {
        self.problem_as(rule, node.position, path, message);
    }

    /// Records a warning: the file is valid, but something in it has no effect.
    pub fn warning_at(&mut self, node: &YamlNode, path: &str, message: impl Into<String>) {
        self.warning_at_as(Rule::NoEffect, node, path, message);
    }

    /// Records a warning of `rule` at a node.
    pub fn warning_at_as(
        &mut self,
        rule: Rule,
        node: &YamlNode,
        path: &str,
        message: impl Into<String>,
    ) {
        self.warnings.push(RawFinding {
            rule,
            position: node.position,
            path: path.to_string(),
            message: message.into(),
        });
    }

    /// Records that a node has the wrong type.
    pub fn expected(&mut self, node: &YamlNode, path: &str, what: &str) {
        self.problem_at_as(
            Rule::WrongType,
            node,
            path,
            format!("expected {what}, found {}", node.value.kind()),
        );
    }

    /// Checks a mapping's keys against the valid field names.
    ///
    /// Null counts as an empty mapping. Returns `None` (after recording a problem) when the node
    /// is not a mapping at all.
    pub fn fields<'n>(
        &mut self,
        node: &'n YamlNode,
        path: &str,
        valid: &[&str],
    ) -> Option<Fields<'n>> {
        self.fields_with_hint(node, path, valid, |_| None)
    }

    /// Like [`Decoder::fields`], with a hint for unknown names that deserve a specific answer
    /// (for example, credentials or a field that only another apiVersion has).
    pub fn fields_with_hint<'n>(
        &mut self,
        node: &'n YamlNode,
        path: &str,
        valid: &[&str],
        hint: impl Fn(&str) -> Option<String>,
    ) -> Option<Fields<'n>> {
        let mut fields = Fields {
            path: path.to_string(),
            position: node.position,
            entries: Vec::new(),
        };
        let entries = match &node.value {
            Value::Null => return Some(fields),
            Value::Map(entries) => entries,
            _ => {
                self.expected(node, path, "a mapping");
                return None;
            }
        };
        for (key, value) in entries {
            let Some(name) = self.key(key, path) else {
                continue;
            };
            let field_path = child(path, name);
            if valid.contains(&name) {
                fields.entries.push((name, value));
            } else if let Some(message) = hint(name) {
                self.problem_at_as(Rule::UnknownField, key, &field_path, message);
            } else {
                self.problem_at_as(
                    Rule::UnknownField,
                    key,
                    &field_path,
                    unknown("field", name, valid),
                );
            }
        }
        Some(fields)
    }

    /// The entries of a mapping whose keys are data (label keys, strategy names), not fields.
    pub fn entries<'n>(&mut self, node: &'n YamlNode, path: &str) -> Vec<Entry<'n>> {
        let entries = match &node.value {
            Value::Null => return Vec::new(),
            Value::Map(entries) => entries,
            _ => {
                self.expected(node, path, "a mapping");
                return Vec::new();
            }
        };
        entries
            .iter()
            .filter_map(|(key, value)| {
                let name = self.key(key, path)?;
                Some(Entry {
                    name,
                    key,
                    value,
                    path: child(path, name),
                })
            })
            .collect()
    }

    /// A mapping key as text. Plain scalars that YAML reads as numbers or booleans are not field
    /// names anyway, so only strings are accepted.
    fn key<'n>(&mut self, key: &'n YamlNode, path: &str) -> Option<&'n str> {
        match &key.value {
            Value::Str(name) => Some(name),
            _ => {
                self.problem_at_as(
                    Rule::WrongType,
                    key,
                    path,
                    format!(
                        "expected a string as mapping key, found {}",
                        key.value.kind()
                    ),
                );
                None
            }
        }
    }

    /// A string value.
    pub fn string(&mut self, node: &YamlNode, path: &str) -> Option<String> {
        match &node.value {
            Value::Str(text) => Some(text.clone()),
            Value::Bool(_) | Value::Int(_) | Value::Float(_) => {
                let found = node.value.kind();
                self.problem_at_as(
                    Rule::WrongType,
                    node,
                    path,
                    format!("expected a string, found {found}; quote it to make it a string"),
                );
                None
            }
            _ => {
                self.expected(node, path, "a string");
                None
            }
        }
    }

    /// A boolean value (YAML 1.2: `true` or `false`).
    pub fn bool(&mut self, node: &YamlNode, path: &str) -> Option<bool> {
        match &node.value {
            Value::Bool(value) => Some(*value),
            _ => {
                self.expected(node, path, "a boolean (true or false)");
                None
            }
        }
    }

    /// An integer that must fit `T` (for example `u32` for counts, which rejects negatives).
    pub fn integer<T>(&mut self, node: &YamlNode, path: &str) -> Option<T>
    where
        T: Integer,
    {
        let value = match &node.value {
            Value::Int(value) => *value,
            Value::Float(value) if value.fract() == 0.0 => {
                // An integer too large for YAML's integer type arrives as a float.
                self.problem_at(node, path, out_of_range::<T>(*value < 0.0));
                return None;
            }
            _ => {
                self.expected(node, path, "an integer");
                return None;
            }
        };
        match T::try_from(value) {
            Ok(value) => Some(value),
            Err(_) => {
                self.problem_at(node, path, out_of_range::<T>(value < 0));
                None
            }
        }
    }

    /// The items of a list; null is an empty list.
    pub fn list<'n>(&mut self, node: &'n YamlNode, path: &str) -> &'n [YamlNode] {
        match &node.value {
            Value::Null => &[],
            Value::Seq(items) => items,
            _ => {
                self.expected(node, path, "a list");
                &[]
            }
        }
    }

    /// A list of strings, each checked by `check` (which returns why a string is invalid).
    pub fn strings(
        &mut self,
        node: &YamlNode,
        path: &str,
        check: impl Fn(&str) -> Option<String>,
    ) -> Vec<String> {
        let mut strings = Vec::new();
        for (i, item) in self.list(node, path).iter().enumerate() {
            let item_path = index(path, i);
            let Some(text) = self.string(item, &item_path) else {
                continue;
            };
            match check(&text) {
                Some(message) => self.problem_at(item, &item_path, message),
                None => strings.push(text),
            }
        }
        strings
    }

    /// A string that must be one of `choices`.
    pub fn choice(
        &mut self,
        node: &YamlNode,
        path: &str,
        what: &str,
        choices: &[&str],
    ) -> Option<String> {
        let text = self.string(node, path)?;
        if choices.contains(&text.as_str()) {
            Some(text)
        } else {
            self.problem_at(node, path, unknown(what, &text, choices));
            None
        }
    }
}

/// Integer types a field may hold, with their range for messages.
pub(super) trait Integer: TryFrom<i128> {
    const MIN: i128;
    const MAX: i128;
}

macro_rules! integer {
    ($($t:ty),*) => {$(
        impl Integer for $t {
            const MIN: i128 = <$t>::MIN as i128;
            const MAX: i128 = <$t>::MAX as i128;
        }
    )*};
}

integer!(i32, i64, u32);

fn out_of_range<T: Integer>(negative: bool) -> String {
    match (negative, T::MIN) {
        (true, 0) => "must not be negative".to_string(),
        (true, min) => format!("must be at least {min}"),
        (false, _) => format!("must be at most {}", T::MAX),
    }
}

/// A mapping whose keys were checked; gives access to the valid fields present.
#[derive(Debug)]
pub(super) struct Fields<'n> {
    pub path: String,
    /// Where the mapping starts, for problems about the mapping as a whole.
    pub position: Option<Position>,
    entries: Vec<(&'n str, &'n YamlNode)>,
}

impl<'n> Fields<'n> {
    /// A field's value; `None` when it is absent or null.
    pub fn get(&self, name: &str) -> Option<&'n YamlNode> {
        self.entries
            .iter()
            .find(|(key, value)| *key == name && value.value != Value::Null)
            .map(|(_, value)| *value)
    }

    /// The path of a field of this mapping.
    pub fn path(&self, name: &str) -> String {
        child(&self.path, name)
    }

    pub fn string(&self, d: &mut Decoder, name: &str) -> Option<String> {
        self.get(name)
            .and_then(|node| d.string(node, &self.path(name)))
    }

    pub fn bool(&self, d: &mut Decoder, name: &str) -> Option<bool> {
        self.get(name)
            .and_then(|node| d.bool(node, &self.path(name)))
    }

    pub fn integer<T>(&self, d: &mut Decoder, name: &str) -> Option<T>
    where
        T: Integer,
    {
        self.get(name)
            .and_then(|node| d.integer(node, &self.path(name)))
    }

    pub fn strings(
        &self,
        d: &mut Decoder,
        name: &str,
        check: impl Fn(&str) -> Option<String>,
    ) -> Vec<String> {
        match self.get(name) {
            Some(node) => d.strings(node, &self.path(name), check),
            None => Vec::new(),
        }
    }

    pub fn list(&self, d: &mut Decoder, name: &str) -> &'n [YamlNode] {
        match self.get(name) {
            Some(node) => d.list(node, &self.path(name)),
            None => &[],
        }
    }
}

/// One entry of a data mapping (see [`Decoder::entries`]).
#[derive(Debug)]
pub(super) struct Entry<'n> {
    pub name: &'n str,
    pub key: &'n YamlNode,
    pub value: &'n YamlNode,
    /// Path of the value.
    pub path: String,
}

/// The path of a field under `parent`.
pub(super) fn child(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}.{name}")
    }
}

/// The path of a list item under `parent`.
pub(super) fn index(parent: &str, i: usize) -> String {
    format!("{parent}[{i}]")
}

/// "unknown field \"x\"; did you mean \"y\"? valid fields: a, b" and its variants for other kinds
/// of names (`what` is "field", "plugin", …).
pub(super) fn unknown(what: &str, name: &str, valid: &[&str]) -> String {
    let valid_list = valid.join(", ");
    match suggestion(name, valid) {
        Some(close) => {
            format!("unknown {what} {name:?}; did you mean {close:?}? valid: {valid_list}")
        }
        None => format!("unknown {what} {name:?}; valid: {valid_list}"),
    }
}

/// The valid name a misspelt one most likely meant: the same name in another case, or one at
/// most one or two edits away (two only for longer names, so short names are not "corrected"
/// into unrelated ones).
pub(super) fn suggestion<'a>(name: &str, valid: &[&'a str]) -> Option<&'a str> {
    let lower = name.to_lowercase();
    if let Some(same) = valid
        .iter()
        .find(|candidate| candidate.to_lowercase() == lower)
    {
        return Some(same);
    }
    let allowed = if name.chars().count() >= 8 { 2 } else { 1 };
    valid
        .iter()
        .map(|candidate| (edit_distance(&lower, &candidate.to_lowercase()), *candidate))
        .filter(|(distance, _)| *distance <= allowed)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// Levenshtein distance with adjacent transpositions (optimal string alignment), so `sotr` is one
/// edit from `sort`.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows suffice: the transposition looks two rows back.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        current[0] = i;
        for j in 1..=b.len() {
            let substitution = usize::from(a[i - 1] != b[j - 1]);
            current[j] = (previous[j] + 1)
                .min(current[j - 1] + 1)
                .min(previous[j - 1] + substitution);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                current[j] = current[j].min(before[j - 2] + 1);
            }
        }
        std::mem::swap(&mut before, &mut previous);
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(value: Value) -> YamlNode {
        YamlNode {
            position: Some(Position::new(1, 1)),
            value,
        }
    }

    #[test]
    fn a_different_case_is_suggested_before_any_edit() {
        let valid = ["filter", "preevictionfilter"];
        assert_eq!(
            suggestion("preEvictionFilter", &valid),
            Some("preevictionfilter")
        );
    }

    #[test]
    fn one_extra_letter_is_suggested() {
        let valid = [
            "maxNoOfPodsToEvictPerNode",
            "maxNoOfPodsToEvictPerNamespace",
        ];
        assert_eq!(
            suggestion("maxNoOfPodsToEvictPerNodes", &valid),
            Some("maxNoOfPodsToEvictPerNode")
        );
    }

    #[test]
    fn swapped_letters_count_as_one_edit() {
        assert_eq!(suggestion("sotr", &["sort", "balance"]), Some("sort"));
    }

    #[test]
    fn short_names_are_not_corrected_into_unrelated_ones() {
        assert_eq!(suggestion("args", &["name", "plugins"]), None);
        assert_eq!(suggestion("tag", &["name", "args"]), None);
    }

    #[test]
    fn unknown_names_list_the_valid_ones() {
        assert_eq!(
            unknown("field", "enable", &["enabled", "disabled"]),
            "unknown field \"enable\"; did you mean \"enabled\"? valid: enabled, disabled"
        );
        assert_eq!(
            unknown("field", "x", &["enabled", "disabled"]),
            "unknown field \"x\"; valid: enabled, disabled"
        );
    }

    #[test]
    fn integers_outside_the_target_type_name_the_limit() {
        let mut d = Decoder::default();
        assert_eq!(d.integer::<u32>(&node(Value::Int(-1)), "n"), None);
        assert_eq!(d.integer::<u32>(&node(Value::Int(1 << 40)), "n"), None);
        assert_eq!(d.integer::<i32>(&node(Value::Float(1e30)), "n"), None);
        assert_eq!(d.integer::<u32>(&node(Value::Str("3".into())), "n"), None);
        assert_eq!(d.integer::<u32>(&node(Value::Int(3)), "n"), Some(3));
        let messages: Vec<&str> = d.problems.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "must not be negative",
                "must be at most 4294967295",
                "must be at most 2147483647",
                "expected an integer, found a string"
            ]
        );
    }

    #[test]
    fn null_fields_are_absent() {
        let mut d = Decoder::default();
        let map = node(Value::Map(vec![
            (node(Value::Str("a".into())), node(Value::Null)),
            (node(Value::Str("b".into())), node(Value::Bool(true))),
        ]));
        let fields = d.fields(&map, "", &["a", "b"]).expect("a mapping");
        assert!(fields.get("a").is_none());
        assert_eq!(fields.bool(&mut d, "b"), Some(true));
        assert!(d.problems.is_empty());
    }

    #[test]
    fn a_null_mapping_has_no_fields() {
        let mut d = Decoder::default();
        let null = node(Value::Null);
        let fields = d.fields(&null, "args", &["a"]).expect("null is empty");
        assert!(fields.get("a").is_none());
        assert!(d.problems.is_empty());
    }
}
