//! Label sets as the planner reads them: a sorted slice of shared strings, and the interner
//! that shares them while objects are converted.
//!
//! The replicas of a workload carry the same label keys and mostly the same values; a
//! `BTreeMap<String, String>` per pod held each copy in its own allocation, under a B-tree leaf
//! sized for eleven entries (about 82 MB for 150,000 pods). Here a pod holds one allocation of
//! pointer pairs, and equal texts converted together point at one string.

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::ser::{Serialize, SerializeMap, Serializer};

use super::{Shareable, SharedLists};
use crate::hash::HashSet;

/// Labels of an object (or a pod's node selector), in key order (the order a `BTreeMap` gives
/// them), so output is deterministic. Reads never allocate; a change builds a new set.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Labels(Box<[(Arc<str>, Arc<str>)]>);

impl Labels {
    /// No labels.
    pub fn new() -> Labels {
        Labels::default()
    }

    /// The value of `key`, if the set has it.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.position(key).ok().map(|index| &*self.0[index].1)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.position(key).is_ok()
    }

    /// `(key, value)` pairs in key order.
    pub fn iter(&self) -> Iter<'_> {
        Iter(self.0.iter())
    }

    /// Keys in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(key, _)| &**key)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The set as a map, to change it and turn it back into a set; the texts stay shared.
    pub fn to_map(&self) -> BTreeMap<Arc<str>, Arc<str>> {
        self.0.iter().cloned().collect()
    }

    /// Sets `key` to `value`. The set is rebuilt: for a few changes (test builders, one
    /// label); many go through [`Labels::to_map`].
    pub fn insert(&mut self, key: impl Into<Arc<str>>, value: impl Into<Arc<str>>) {
        let (key, value) = (key.into(), value.into());
        let mut pairs = std::mem::take(&mut self.0).into_vec();
        match position(&pairs, &key) {
            Ok(index) => pairs[index].1 = value,
            Err(index) => pairs.insert(index, (key, value)),
        }
        self.0 = pairs.into_boxed_slice();
    }

    /// Takes `key` out, if the set has it (rebuilding the set, as [`Labels::insert`]).
    pub fn remove(&mut self, key: &str) {
        if let Ok(index) = self.position(key) {
            let mut pairs = std::mem::take(&mut self.0).into_vec();
            pairs.remove(index);
            self.0 = pairs.into_boxed_slice();
        }
    }

    fn position(&self, key: &str) -> Result<usize, usize> {
        position(&self.0, key)
    }

    /// A set from pairs already in strictly ascending key order (a map's).
    fn from_sorted(pairs: impl Iterator<Item = (Arc<str>, Arc<str>)>) -> Labels {
        Labels(pairs.collect())
    }
}

/// Where `key` is in pairs sorted by key, or where it would go.
fn position(pairs: &[(Arc<str>, Arc<str>)], key: &str) -> Result<usize, usize> {
    pairs.binary_search_by(|(own, _)| (**own).cmp(key))
}

/// Pairs in any order; a key given twice keeps its last value, as a map's `collect` does.
impl<K: Into<Arc<str>>, V: Into<Arc<str>>> FromIterator<(K, V)> for Labels {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(pairs: I) -> Labels {
        let map: BTreeMap<Arc<str>, Arc<str>> = pairs
            .into_iter()
            .map(|(key, value)| (key.into(), value.into()))
            .collect();
        Labels::from_sorted(map.into_iter())
    }
}

impl<K: Into<Arc<str>>, V: Into<Arc<str>>, const N: usize> From<[(K, V); N]> for Labels {
    fn from(pairs: [(K, V); N]) -> Labels {
        pairs.into_iter().collect()
    }
}

/// A map's keys are in the order of their text (`Borrow<str>` promises the same order).
impl<K: Into<Arc<str>> + Borrow<str>, V: Into<Arc<str>>> From<BTreeMap<K, V>> for Labels {
    fn from(map: BTreeMap<K, V>) -> Labels {
        Labels::from_sorted(
            map.into_iter()
                .map(|(key, value)| (key.into(), value.into())),
        )
    }
}

/// The iterator of [`Labels::iter`].
#[derive(Clone, Debug)]
pub struct Iter<'a>(std::slice::Iter<'a, (Arc<str>, Arc<str>)>);

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<(&'a str, &'a str)> {
        self.0.next().map(|(key, value)| (&**key, &**value))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a Labels {
    type Item = (&'a str, &'a str);
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// Printed as a map, the way the `BTreeMap` it replaces printed.
impl fmt::Debug for Labels {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// Written as a mapping in key order, as the `BTreeMap` it replaces was.
impl Serialize for Labels {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.len()))?;
        for (key, value) in self {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// One shared string per distinct text seen while converting a batch of objects, and one
/// shared list per distinct list a workload's replicas carry alike ([`SharedLists`]). It takes
/// no lock: each thread converting part of a list has its own, and a live list keeps one per
/// kind across its pages. It only grows, and is dropped with its batch; the strings and lists
/// live on in the objects that point at them.
#[derive(Debug, Default)]
pub struct Interner {
    texts: HashSet<Arc<str>>,
    lists: SharedLists,
}

impl Interner {
    /// The shared string equal to `text`, made the first time the text is seen.
    pub fn intern(&mut self, text: String) -> Arc<str> {
        if let Some(shared) = self.texts.get(text.as_str()) {
            return Arc::clone(shared);
        }
        let shared: Arc<str> = Arc::from(text);
        self.texts.insert(Arc::clone(&shared));
        shared
    }

    /// The shared list equal to `items`, made the first time such a list is seen.
    pub fn share<T: Shareable>(&mut self, items: Vec<T>) -> Arc<[T]> {
        self.lists.share(items)
    }

    /// A decoded label map (absent: no labels) as a set of shared strings.
    pub fn labels(&mut self, map: Option<BTreeMap<String, String>>) -> Labels {
        Labels::from_sorted(
            map.unwrap_or_default()
                .into_iter()
                .map(|(key, value)| (self.intern(key), self.intern(value))),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect()
    }

    #[test]
    fn a_set_reads_like_the_map_it_was_built_from() {
        let pairs = [
            ("tier", "web"),
            ("app", "shop"),
            ("", "empty-key"),
            ("b/c", ""),
        ];
        let labels = Labels::from(pairs);
        let expected = map(&pairs);
        assert_eq!(labels.len(), expected.len());
        assert!(!labels.is_empty());
        assert!(
            labels
                .iter()
                .eq(expected.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        );
        assert!(labels.keys().eq(expected.keys().map(String::as_str)));
        for key in ["tier", "app", "", "b/c", "missing", "ap", "tierx"] {
            assert_eq!(
                labels.get(key),
                expected.get(key).map(String::as_str),
                "{key}"
            );
            assert_eq!(
                labels.contains_key(key),
                expected.contains_key(key),
                "{key}"
            );
        }
        assert_eq!(Labels::from(labels.to_map()), labels);
        assert_eq!(format!("{labels:?}"), format!("{expected:?}"));
        assert_eq!(
            serde_json::to_string(&labels).expect("serialises"),
            serde_json::to_string(&expected).expect("serialises")
        );
    }

    #[test]
    fn a_key_given_twice_keeps_its_last_value_as_a_map_does() {
        let pairs = [("app", "old"), ("tier", "web"), ("app", "new")];
        let labels: Labels = pairs.into_iter().collect();
        let expected: BTreeMap<&str, &str> = pairs.into_iter().collect();
        assert!(labels.iter().eq(expected.into_iter()));
    }

    #[test]
    fn inserting_and_removing_keep_the_key_order_of_a_map() {
        let mut labels = Labels::from([("b", "2")]);
        let mut expected = map(&[("b", "2")]);
        for (key, value) in [("c", "3"), ("a", "1"), ("b", "two"), ("", "empty")] {
            labels.insert(key, value);
            expected.insert(key.to_string(), value.to_string());
        }
        labels.remove("c");
        expected.remove("c");
        labels.remove("missing");
        assert_eq!(labels, Labels::from(expected));
    }

    #[test]
    fn an_empty_set_has_nothing() {
        let labels = Labels::default();
        assert!(labels.is_empty());
        assert_eq!(labels.get(""), None);
        assert_eq!(labels.iter().count(), 0);
        assert_eq!(Labels::from(BTreeMap::<String, String>::new()), labels);
        assert_eq!(Interner::default().labels(None), labels);
    }

    #[test]
    fn equal_texts_interned_together_share_one_string() {
        let mut interner = Interner::default();
        let first = interner.labels(Some(map(&[("app", "web"), ("name", "web-1")])));
        let second = interner.labels(Some(map(&[("app", "web"), ("name", "web-2")])));
        let shared = |labels: &Labels, index: usize| Arc::clone(&labels.0[index].1);
        assert!(Arc::ptr_eq(&first.0[0].0, &second.0[0].0), "the key");
        assert!(
            Arc::ptr_eq(&shared(&first, 0), &shared(&second, 0)),
            "the value"
        );
        assert!(!Arc::ptr_eq(&shared(&first, 1), &shared(&second, 1)));
        assert_eq!(second.get("name"), Some("web-2"));
        // A value equal to a key is the same text, so the same string.
        let key_as_value = interner.labels(Some(map(&[("owner", "app")])));
        assert!(Arc::ptr_eq(&first.0[0].0, &key_as_value.0[0].1));
    }
}
