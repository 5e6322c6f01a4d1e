//! Objects that select pods by label (anti-affinity terms, PodDisruptionBudgets), filed so a
//! pod finds the few that may select it through its own labels instead of scanning them all.
//!
//! An object is filed under one `key=value` its selector requires (every value of an `In`; a
//! pod has one value per key, so it never finds an object twice), or, when its selector
//! requires no particular value, in a short list read for every pod of its scope. What a
//! lookup returns may select the pod; callers confirm with the selector.

use kube::core::Expression;

use crate::hash::HashMap;
use crate::snapshot::{Labels, Requirements};

/// Where a selector applies: one namespace, or every namespace (`None`).
pub type NamespaceScope<'a> = Option<&'a str>;

#[derive(Debug, Default)]
pub struct SelectorIndex<'a> {
    filed: HashMap<(NamespaceScope<'a>, &'a str, &'a str), Vec<usize>>,
    unfiled: HashMap<NamespaceScope<'a>, Vec<usize>>,
}

impl<'a> SelectorIndex<'a> {
    /// File object `item` (the caller's index) with its selector, for pods of `scope`.
    pub fn insert(&mut self, scope: NamespaceScope<'a>, selector: &'a Requirements, item: usize) {
        let required = selector.expressions().iter().find_map(|e| match e {
            Expression::Equal(key, value) => Some((key, vec![value])),
            Expression::In(key, values) => Some((key, values.iter().collect())),
            _ => None,
        });
        match required {
            Some((key, values)) => {
                for value in values {
                    self.filed
                        .entry((scope, key.as_str(), value.as_str()))
                        .or_default()
                        .push(item);
                }
            }
            None => self.unfiled.entry(scope).or_default().push(item),
        }
    }

    /// Objects that may select a pod of `namespace` with `labels`.
    pub fn candidates(
        &self,
        namespace: &'a str,
        labels: &'a Labels,
    ) -> impl Iterator<Item = usize> + '_ {
        let scopes = [Some(namespace), None];
        let filed = labels.iter().flat_map(move |(key, value)| {
            scopes
                .into_iter()
                .flat_map(move |scope| self.filed.get(&(scope, key, value)).into_iter().flatten())
        });
        let unfiled = scopes
            .into_iter()
            .flat_map(|scope| self.unfiled.get(&scope).into_iter().flatten());
        filed.chain(unfiled).copied()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use kube::core::Expression;

    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn found(index: &SelectorIndex, namespace: &str, labels: &Labels) -> BTreeSet<usize> {
        // Lifetimes: the index borrows its selectors; lookups here borrow test data briefly.
        let namespace: &str = namespace;
        index.candidates(namespace, labels).collect()
    }

    #[test]
    fn finds_exactly_the_selectors_a_pod_could_match_in_its_scope() {
        let equal = Requirements::from(Expression::Equal("app".into(), "web".into()));
        let within = Requirements::from(Expression::In(
            "tier".into(),
            ["front".to_string(), "back".to_string()].into(),
        ));
        let exists = Requirements::from(Expression::Exists("app".into()));
        let mut index = SelectorIndex::default();
        index.insert(Some("shop"), &equal, 0);
        index.insert(None, &within, 1);
        index.insert(Some("shop"), &exists, 2);
        index.insert(Some("other"), &equal, 3);

        let web = labels(&[("app", "web"), ("tier", "back")]);
        assert_eq!(found(&index, "shop", &web), BTreeSet::from([0, 1, 2]));
        assert_eq!(found(&index, "other", &web), BTreeSet::from([1, 3]));
        let db = labels(&[("app", "db")]);
        assert_eq!(found(&index, "shop", &db), BTreeSet::from([2]));
        // Each candidate once, even when several of its values are filed.
        let listed: Vec<usize> = index.candidates("shop", &web).collect();
        assert_eq!(listed.len(), 3);
    }
}
