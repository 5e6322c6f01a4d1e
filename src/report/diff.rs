//! What a policy change would do differently: two plans of one recorded cluster compared, for a
//! review (`plan --policy NEW --baseline-policy OLD`), as text, JSON or Markdown.
//!
//! Items are matched by what they do, not by their words: an eviction by its pod, plugin and
//! profile (a reworded reason is no difference), a skip by its pod, plugin, profile and reason, a
//! label change by node, key and new value, a DRS change by cluster, rule, action and VMs.

use std::collections::BTreeSet;
use std::fmt::Write;

use serde::Serialize;

use crate::plan::{DrsRuleChange, Eviction, LabelChange, Plan, Skip};
use crate::text::{escaped, one_line};

/// Items of one kind the proposed plan has and the baseline lacks (`added`), and the other way
/// round (`removed`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Changes<T> {
    pub added: Vec<T>,
    pub removed: Vec<T>,
}

impl<T: Clone> Changes<T> {
    fn between<K: Ord>(baseline: &[T], proposed: &[T], key: impl Fn(&T) -> K) -> Changes<T> {
        let keys = |items: &[T]| items.iter().map(&key).collect::<BTreeSet<K>>();
        let (old, new) = (keys(baseline), keys(proposed));
        Changes {
            added: proposed
                .iter()
                .filter(|item| !old.contains(&key(item)))
                .cloned()
                .collect(),
            removed: baseline
                .iter()
                .filter(|item| !new.contains(&key(item)))
                .cloned()
                .collect(),
        }
    }

    fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty()
    }
}

/// The comparison document.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanDiff {
    pub api_version: &'static str,
    pub kind: &'static str,
    /// The policy file proposed.
    pub policy: String,
    /// The policy file it is compared with.
    pub baseline_policy: String,
    /// Whether anything differs (the exit code says it too).
    pub differs: bool,
    pub evictions: Changes<Eviction>,
    pub skipped: Changes<Skip>,
    pub label_changes: Changes<LabelChange>,
    pub drs_rules: Changes<DrsRuleChange>,
}

impl PlanDiff {
    /// What `proposed` (made with `policy`) does that `baseline` (made with `baseline_policy`)
    /// does not, and the other way round.
    pub fn between(
        baseline: &Plan,
        proposed: &Plan,
        baseline_policy: String,
        policy: String,
    ) -> PlanDiff {
        let evictions = Changes::between(&baseline.evictions, &proposed.evictions, |e| {
            (
                e.namespace.clone(),
                e.pod.clone(),
                e.strategy,
                e.profile.clone(),
            )
        });
        let skipped = Changes::between(&baseline.skipped, &proposed.skipped, |s| {
            (
                s.namespace.clone(),
                s.pod.clone(),
                s.strategy,
                s.profile.clone(),
                s.reason,
            )
        });
        let label_changes =
            Changes::between(&baseline.label_changes, &proposed.label_changes, |c| {
                (c.node.clone(), c.key.clone(), c.new.clone())
            });
        let drs_rules = Changes::between(&baseline.drs_rules, &proposed.drs_rules, |r| {
            (
                r.cluster.clone(),
                r.name.clone(),
                r.action.as_str(),
                r.vms.clone(),
            )
        });
        let differs = !(evictions.is_empty()
            && skipped.is_empty()
            && label_changes.is_empty()
            && drs_rules.is_empty());
        PlanDiff {
            api_version: "vsphere-descheduler.io/v1alpha1",
            kind: "PlanDiff",
            policy,
            baseline_policy,
            differs,
            evictions,
            skipped,
            label_changes,
            drs_rules,
        }
    }

    /// For people: each kind with its counts, then each item, `+` added and `-` removed.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "Plan of {} compared with {}: {}\n",
            escaped(&self.policy),
            escaped(&self.baseline_policy),
            if self.differs {
                "they differ"
            } else {
                "no difference"
            }
        );
        for section in self.sections() {
            let _ = writeln!(
                out,
                "\n{} (+{} -{})",
                section.title,
                section.added.len(),
                section.removed.len()
            );
            for line in &section.added {
                let _ = writeln!(out, "  + {}", one_line(&line.join("  ")));
            }
            for line in &section.removed {
                let _ = writeln!(out, "  - {}", one_line(&line.join("  ")));
            }
        }
        out
    }

    /// For a review comment: a table of counts, then a table per kind and direction that has
    /// items.
    pub fn to_markdown(&self) -> String {
        let mut out = format!(
            "### vsphere-descheduler: `{}` compared with `{}`\n\n",
            code(&self.policy),
            code(&self.baseline_policy)
        );
        if !self.differs {
            out.push_str("No difference: both policies plan the same on this snapshot.\n");
            return out;
        }
        let sections = self.sections();
        out.push_str("| | ");
        out.push_str(
            &sections
                .iter()
                .map(|s| s.title)
                .collect::<Vec<_>>()
                .join(" | "),
        );
        out.push_str(" |\n|---|");
        out.push_str(&"---|".repeat(sections.len()));
        for (name, pick) in [("added", true), ("removed", false)] {
            let counts: Vec<String> = sections
                .iter()
                .map(|s| if pick { s.added.len() } else { s.removed.len() }.to_string())
                .collect();
            let _ = write!(out, "\n| {name} | {} |", counts.join(" | "));
        }
        out.push('\n');
        for section in &sections {
            for (name, rows) in [("added", &section.added), ("removed", &section.removed)] {
                if rows.is_empty() {
                    continue;
                }
                let _ = write!(
                    out,
                    "\n#### {} {name}\n\n| {} |\n|{}\n",
                    section.title,
                    section.columns.join(" | "),
                    "---|".repeat(section.columns.len())
                );
                for row in rows {
                    let cells: Vec<String> = row.iter().map(|cell| cell_text(cell)).collect();
                    let _ = writeln!(out, "| {} |", cells.join(" | "));
                }
            }
        }
        out
    }

    fn sections(&self) -> Vec<Section> {
        vec![
            Section::of(
                "Evictions",
                &["pod", "node", "plugin", "profile", "why"],
                &self.evictions,
                |e| {
                    vec![
                        format!("{}/{}", e.namespace, e.pod),
                        e.node.clone(),
                        e.strategy.as_str().to_string(),
                        e.profile.clone(),
                        e.reason.to_string(),
                    ]
                },
            ),
            Section::of(
                "Not evicted",
                &["pod", "plugin", "profile", "reason", "detail"],
                &self.skipped,
                |s| {
                    vec![
                        format!("{}/{}", s.namespace, s.pod),
                        s.strategy.as_str().to_string(),
                        s.profile.clone(),
                        s.reason.as_str().to_string(),
                        s.detail.to_string(),
                    ]
                },
            ),
            Section::of(
                "Label changes",
                &["node", "key", "from", "to"],
                &self.label_changes,
                |c| {
                    vec![
                        c.node.clone(),
                        c.key.clone(),
                        c.old.clone().unwrap_or_else(|| "(none)".to_string()),
                        c.new.clone().unwrap_or_else(|| "(removed)".to_string()),
                    ]
                },
            ),
            Section::of(
                "DRS rules",
                &["action", "rule", "cluster", "VMs"],
                &self.drs_rules,
                |r| {
                    vec![
                        r.action.as_str().to_string(),
                        r.name.clone(),
                        r.cluster.clone(),
                        r.vms.join(", "),
                    ]
                },
            ),
        ]
    }
}

/// One kind of item, as rows of cells.
struct Section {
    title: &'static str,
    columns: &'static [&'static str],
    added: Vec<Vec<String>>,
    removed: Vec<Vec<String>>,
}

impl Section {
    fn of<T>(
        title: &'static str,
        columns: &'static [&'static str],
        changes: &Changes<T>,
        row: impl Fn(&T) -> Vec<String>,
    ) -> Section {
        Section {
            title,
            columns,
            added: changes.added.iter().map(&row).collect(),
            removed: changes.removed.iter().map(&row).collect(),
        }
    }
}

/// A table cell: one line, with the characters that would end the cell or start markup
/// escaped (names and reasons come from the cluster).
fn cell_text(text: &str) -> String {
    let line = one_line(text);
    let mut cell = String::with_capacity(line.len());
    for character in line.chars() {
        if matches!(
            character,
            '|' | '\\' | '`' | '*' | '_' | '<' | '>' | '[' | ']'
        ) {
            cell.push('\\');
        }
        cell.push(character);
    }
    cell
}

/// Text inside a code span: backticks cannot be escaped there, so they become quotes.
fn code(text: &str) -> String {
    one_line(text).replace('`', "'")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::testing::eviction;
    use crate::policy::PluginKind;

    fn plan_of(evictions: Vec<Eviction>) -> Plan {
        Plan {
            evictions,
            ..Plan::default()
        }
    }

    #[test]
    fn evictions_match_by_pod_plugin_and_profile_not_by_their_words() {
        let mut reworded = eviction("shop", "web-1", PluginKind::InterPodAntiAffinity);
        reworded.reason = crate::plan::testing::shares_host_with("shop/web-9");
        let baseline = plan_of(vec![
            eviction("shop", "web-1", PluginKind::InterPodAntiAffinity),
            eviction("shop", "api-1", PluginKind::InterPodAntiAffinity),
        ]);
        let proposed = plan_of(vec![
            reworded,
            eviction("shop", "cart-1", PluginKind::InterPodAntiAffinity),
        ]);
        let diff = PlanDiff::between(&baseline, &proposed, "old.yaml".into(), "new.yaml".into());
        assert!(diff.differs);
        let pods = |items: &[Eviction]| items.iter().map(|e| e.pod.clone()).collect::<Vec<_>>();
        assert_eq!(pods(&diff.evictions.added), ["cart-1"]);
        assert_eq!(pods(&diff.evictions.removed), ["api-1"]);
        let same = PlanDiff::between(&baseline, &baseline, "a".into(), "a".into());
        assert!(!same.differs);
        assert!(same.to_markdown().contains("No difference"));
    }

    #[test]
    fn markdown_cells_cannot_break_the_table() {
        assert_eq!(cell_text("a|b `c` <x>"), "a\\|b \\`c\\` \\<x\\>");
        assert_eq!(code("we`ird.yaml"), "we'ird.yaml");
    }
}
