//! A label selector as the planner reads it: its requirements, answered from a pod's labels or
//! the label index.

use kube::core::{Expression, Selector};

use super::Labels;

/// A label selector as its requirements, all of which must hold; empty selects everything.
///
/// kube's `Selector` hides its expressions; the planner needs to read them to answer a
/// selector from its label index (the most selective `key=value` first) without a copy.
/// Ordered (by its expressions) so that equal lists of the terms holding it can be shared.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Requirements(Vec<Expression>);

impl Requirements {
    pub fn matches(&self, labels: &Labels) -> bool {
        self.0
            .iter()
            .all(|expression| expression_matches(expression, labels))
    }

    pub fn selects_all(&self) -> bool {
        self.0.is_empty()
    }

    pub fn expressions(&self) -> &[Expression] {
        &self.0
    }

    pub fn push(&mut self, expression: Expression) {
        self.0.push(expression);
    }
}

/// kube's `Expression::matches` reads a `BTreeMap<String, String>`; this is the same rule
/// over [`Labels`]. A missing key satisfies `NotIn` and `NotEqual`, as in Kubernetes.
fn expression_matches(expression: &Expression, labels: &Labels) -> bool {
    match expression {
        Expression::In(key, values) => labels.get(key).is_some_and(|v| values.contains(v)),
        Expression::NotIn(key, values) => !labels.get(key).is_some_and(|v| values.contains(v)),
        Expression::Equal(key, value) => labels.get(key) == Some(value.as_str()),
        Expression::NotEqual(key, value) => labels.get(key) != Some(value.as_str()),
        Expression::Exists(key) => labels.contains_key(key),
        Expression::DoesNotExist(key) => !labels.contains_key(key),
    }
}

impl From<Selector> for Requirements {
    fn from(selector: Selector) -> Requirements {
        Requirements(selector.into_iter().collect())
    }
}

/// Written as kube writes a `Selector`: `app=web,tier in (a,b)`.
impl std::fmt::Display for Requirements {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        for (index, expression) in self.0.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            write!(f, "{expression}")?;
        }
        Ok(())
    }
}

impl FromIterator<Expression> for Requirements {
    fn from_iter<I: IntoIterator<Item = Expression>>(expressions: I) -> Requirements {
        Requirements(expressions.into_iter().collect())
    }
}

impl From<Expression> for Requirements {
    fn from(expression: Expression) -> Requirements {
        Requirements(vec![expression])
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use kube::core::SelectorExt;

    use super::*;

    /// Every operator, on a key present with the value named, present with another value, and
    /// absent: the result must be kube's `Expression::matches` on the same labels as a map.
    #[test]
    fn requirements_match_labels_as_kubes_expressions_match_a_map() {
        let set = |values: &[&str]| values.iter().map(|v| v.to_string()).collect();
        let key = || "app".to_string();
        let expressions = [
            Expression::In(key(), set(&["web", "api"])),
            Expression::In(key(), set(&[])),
            Expression::In(key(), set(&[""])),
            Expression::NotIn(key(), set(&["web", "api"])),
            Expression::NotIn(key(), set(&[])),
            Expression::NotIn(key(), set(&[""])),
            Expression::Equal(key(), "web".to_string()),
            Expression::Equal(key(), String::new()),
            Expression::NotEqual(key(), "web".to_string()),
            Expression::NotEqual(key(), String::new()),
            Expression::Exists(key()),
            Expression::DoesNotExist(key()),
        ];
        let label_sets: [&[(&str, &str)]; 6] = [
            &[("app", "web")],
            &[("app", "db")],
            &[("app", "")],
            &[("tier", "web")],
            &[],
            &[("ap", "web"), ("app", "api"), ("apps", "web")],
        ];
        for pairs in label_sets {
            let map: BTreeMap<String, String> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let labels = Labels::from(map.clone());
            for expression in &expressions {
                assert_eq!(
                    Requirements::from(expression.clone()).matches(&labels),
                    expression.matches(&map),
                    "{expression} on {map:?}"
                );
            }
            // Exists and NotIn together: every expression must hold.
            let both = [expressions[10].clone(), expressions[3].clone()];
            let kubes = both.iter().all(|e| e.matches(&map));
            assert_eq!(
                Requirements(both.to_vec()).matches(&labels),
                kubes,
                "{map:?}"
            );
        }
        assert!(Requirements::default().matches(&Labels::default()));
    }
}
