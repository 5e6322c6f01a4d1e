//! A Helm values file of the chart (`validate --values`): its `policy` as the chart renders it
//! into the runs' `policy.yaml` (`charts/vsphere-descheduler/templates/_helpers.tpl`,
//! `vsphere-descheduler.policyText`), checked with positions in the values file.
//!
//! As Helm: the file's values are merged over the chart's own `values.yaml` (mappings key by
//! key, a null deleting the chart's key, anything else replacing it). A string `policy` is a
//! whole policy file used as it is; an object `policy` loses its null keys and, in our format,
//! gets `clusterName` and `vsphere.server` from the values when they are set.

use std::path::Path;

use super::decode::RawFinding;
use super::load::{self, LoadedPolicy, PolicyError, PolicyProblem};
use super::rule::Rule;
use super::v1alpha2::VSPHERE_API_VERSION;
use super::yaml::{Position, Value, YamlNode};

/// The chart's own values, which Helm merges a values file over.
const CHART_VALUES: &str = include_str!("../../charts/vsphere-descheduler/values.yaml");

/// Reads and resolves the policy a values file gives the chart.
pub fn load_values_file(path: &Path) -> Result<LoadedPolicy, PolicyError> {
    let text = std::fs::read(path).map_err(|source| PolicyError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let file_name = path.display().to_string();
    match crate::encoding::decode(text) {
        Ok(text) => load_values_str(&file_name, &text),
        Err(undecodable) => Err(load::invalid(
            &file_name,
            RawFinding {
                rule: Rule::Syntax,
                position: None,
                path: String::new(),
                message: format!("file is not valid {}", undecodable.encoding),
            },
        )),
    }
}

/// [`load_values_file`] of text; `file_name` is only used in messages.
pub fn load_values_str(file_name: &str, text: &str) -> Result<LoadedPolicy, PolicyError> {
    let values = load::parse(file_name, text)?;
    let chart = load::parse("values.yaml", CHART_VALUES)
        .expect("the chart's values.yaml is a policy-readable YAML document");
    let given = values.get("policy");
    match given.map(|node| &node.value) {
        Some(Value::Str(policy)) => {
            let at = given.and_then(|node| node.position);
            string_policy(file_name, text, policy, at)
        }
        Some(Value::Map(_)) | Some(Value::Null) | None => {
            let default = chart
                .get("policy")
                .map(unpositioned)
                .unwrap_or_else(|| node(Value::Null));
            let mut policy = match given {
                Some(
                    node @ YamlNode {
                        value: Value::Map(_),
                        ..
                    },
                ) => merged(default, node),
                _ => default,
            };
            written_in(&mut policy, &values, &chart);
            load::load_tree(file_name, &policy)
        }
        Some(other) => Err(load::invalid(
            file_name,
            RawFinding {
                rule: Rule::WrongType,
                position: given.and_then(|node| node.position),
                path: "policy".to_string(),
                message: format!(
                    "expected a mapping (the policy as an object) or a string (a whole policy \
                     file), found {}",
                    other.kind()
                ),
            },
        )),
    }
}

fn node(value: Value) -> YamlNode {
    YamlNode {
        position: None,
        value,
    }
}

/// The chart's default, without positions: they are in the chart's file, not the one read.
fn unpositioned(node: &YamlNode) -> YamlNode {
    let value = match &node.value {
        Value::Map(entries) => Value::Map(
            entries
                .iter()
                .map(|(key, value)| (unpositioned(key), unpositioned(value)))
                .collect(),
        ),
        Value::Seq(items) => Value::Seq(items.iter().map(unpositioned).collect()),
        other => other.clone(),
    };
    YamlNode {
        position: None,
        value,
    }
}

/// `given` over `default` as Helm merges values: mappings key by key, a null deleting the key,
/// anything else (lists included) replacing it.
fn merged(default: YamlNode, given: &YamlNode) -> YamlNode {
    let (Value::Map(mut entries), Value::Map(over)) = (default.value, &given.value) else {
        return given.clone();
    };
    for (key, value) in over {
        let at = entries.iter().position(|(k, _)| k.value == key.value);
        match (at, &value.value) {
            (Some(at), Value::Null) => {
                entries.remove(at);
            }
            (Some(at), _) => {
                let (_, old) = entries.remove(at);
                entries.insert(at, (key.clone(), merged(old, value)));
            }
            (None, _) => entries.push((key.clone(), value.clone())),
        }
    }
    YamlNode {
        position: given.position,
        value: Value::Map(entries),
    }
}

/// What the chart writes into an object policy: its null keys dropped, and in our format
/// `clusterName` and `vsphere.server` from the values when they are set (the given file's,
/// else the chart's). Each written value keeps the place the values file gives it.
fn written_in(policy: &mut YamlNode, values: &YamlNode, chart: &YamlNode) {
    let Value::Map(entries) = &mut policy.value else {
        return;
    };
    entries.retain(|(_, value)| value.value != Value::Null);
    let ours = entries.iter().any(|(key, value)| {
        key.value == Value::Str("apiVersion".to_string())
            && value.value == Value::Str(VSPHERE_API_VERSION.to_string())
    });
    if !ours {
        return;
    }
    let setting = |path: &[&str]| -> Option<YamlNode> {
        let find = |root: &YamlNode| {
            let mut node = root;
            for key in path {
                node = node.get(key)?;
            }
            Some(node.clone())
        };
        find(values)
            .or_else(|| find(chart).map(|node| unpositioned(&node)))
            .filter(|node| {
                !matches!(&node.value, Value::Null) && node.value != Value::Str(String::new())
            })
    };
    if let Some(cluster_name) = setting(&["clusterName"]) {
        set(entries, "clusterName", cluster_name);
    }
    if let Some(server) = setting(&["vsphere", "server"]) {
        let at = entries
            .iter()
            .position(|(key, _)| key.value == Value::Str("vsphere".to_string()));
        let mut vsphere = match at {
            Some(at) => entries.remove(at).1,
            None => node(Value::Map(Vec::new())),
        };
        if let Value::Map(fields) = &mut vsphere.value {
            set(fields, "server", server);
        }
        // Where the chart puts it back: `set` on a dict, which is then written sorted.
        entries.insert(at.unwrap_or(entries.len()), (key("vsphere"), vsphere));
    }
}

fn key(name: &str) -> YamlNode {
    node(Value::Str(name.to_string()))
}

/// Sets `name` to `value`, in place when the mapping has it.
fn set(entries: &mut Vec<(YamlNode, YamlNode)>, name: &str, value: YamlNode) {
    match entries
        .iter_mut()
        .find(|(key, _)| key.value == Value::Str(name.to_string()))
    {
        Some((_, old)) => *old = value,
        None => entries.push((key(name), value)),
    }
}

/// A `policy` string: a whole policy file, used as it is. A block scalar (`policy: |`) is
/// placed in the values file (its lines start on the line after the key, at the block's
/// indentation); a string written otherwise is placed within itself.
fn string_policy(
    file_name: &str,
    values_text: &str,
    policy: &str,
    at: Option<Position>,
) -> Result<LoadedPolicy, PolicyError> {
    let shift = at.and_then(|at| block_shift(values_text, at));
    let place = |mut problem: PolicyProblem| {
        match shift {
            Some((lines, columns)) => {
                problem.position = problem
                    .position
                    .map(|p| Position::new(p.line + lines, p.column + columns));
            }
            None => problem.file = format!("{file_name} (policy)"),
        }
        problem
    };
    match load::load_str(file_name, policy) {
        Ok(mut loaded) => {
            loaded.warnings = loaded.warnings.into_iter().map(place).collect();
            Ok(loaded)
        }
        Err(PolicyError::Invalid { file, problems }) => Err(PolicyError::Invalid {
            file,
            problems: problems.into_iter().map(place).collect(),
        }),
        Err(other) => Err(other),
    }
}

/// For a block scalar (`policy: |`) whose text starts at `at`: how many lines and columns its
/// text is shifted by in the values file. `None` for a string written otherwise.
fn block_shift(values_text: &str, at: Position) -> Option<(usize, usize)> {
    let key_line = values_text.lines().nth(at.line.checked_sub(2)?)?;
    let (_, after_key) = key_line.split_once(": ")?;
    let header = after_key.split(" #").next().unwrap_or_default().trim();
    let mut chars = header.chars();
    let block = matches!(chars.next(), Some('|' | '>'))
        && chars.all(|c| c == '-' || c == '+' || c.is_ascii_digit());
    block.then(|| (at.line - 1, at.column - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(text: &str) -> Vec<String> {
        match load_values_str("values.yaml", text) {
            Ok(_) => Vec::new(),
            Err(PolicyError::Invalid { problems, .. }) => {
                problems.iter().map(ToString::to_string).collect()
            }
            Err(other) => panic!("{other}"),
        }
    }

    #[test]
    fn the_charts_default_policy_is_valid_once_the_values_name_the_cluster() {
        let loaded = load_values_str("values.yaml", "clusterName: prod-east\n").expect("valid");
        assert_eq!(loaded.policy.cluster_name.as_deref(), Some("prod-east"));
    }

    #[test]
    fn an_object_policy_is_merged_over_the_charts_and_placed_in_the_values_file() {
        let text = "clusterName: prod-east\nvsphere:\n  server: vc.example.com\npolicy:\n  \
                    maxNoOfPodsToEvictTotal: many\n";
        assert_eq!(
            problems(text),
            ["values.yaml:5:28: maxNoOfPodsToEvictTotal: expected an integer, found a string"]
        );
    }

    #[test]
    fn cluster_name_and_server_come_from_the_values_as_the_chart_writes_them() {
        let text = "clusterName: prod-east\nvsphere:\n  server: vc.example.com\n";
        let loaded = load_values_str("values.yaml", text).expect("valid");
        assert_eq!(loaded.policy.cluster_name.as_deref(), Some("prod-east"));
        assert_eq!(
            loaded.policy.vsphere.server.as_deref(),
            Some("vc.example.com")
        );
        // A cluster name the policy could not hold is placed where the values give it.
        let bad = problems("clusterName: Prod_East\n");
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert!(
            bad[0].starts_with("values.yaml:1:14: clusterName: "),
            "{bad:?}"
        );
    }

    #[test]
    fn a_string_policy_is_used_as_it_is_and_placed_in_its_block() {
        let text = "clusterName: ignored-for-strings\npolicy: |\n  apiVersion: descheduler/v1alpha2\n  \
                    kind: DeschedulerPolicy\n  profiles:\n  - name: p\n    plugins:\n      \
                    deschedule:\n        enabled: [RemovePodsViolatingNodeTaint]\n";
        let found = problems(text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("values.yaml:9:19: profiles[0].plugins.deschedule.enabled[0]: "),
            "{found:?}"
        );
    }

    #[test]
    fn a_policy_neither_object_nor_string_is_named() {
        assert_eq!(
            problems("policy: [a]\n"),
            [
                "values.yaml:1:9: policy: expected a mapping (the policy as an object) or a string \
              (a whole policy file), found a list"
            ]
        );
    }

    #[test]
    fn a_null_in_the_values_deletes_the_charts_key() {
        let text = "clusterName: prod-east\npolicy:\n  maxNoOfPodsToEvictTotal: null\n";
        let loaded = load_values_str("values.yaml", text).expect("valid");
        assert_eq!(loaded.policy.limits.total, None);
    }
}
