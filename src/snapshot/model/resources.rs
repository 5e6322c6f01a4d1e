//! Resource amounts (requests, allocatable, usage) as a short sorted list keyed by a typed
//! name: the names every pod and node carries are enum variants, compared as integers; the
//! rest (extended resources, hugepages) are shared strings, so a copy of a name costs a
//! reference count, not an allocation.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

/// A resource name (`cpu`, `memory`, `nvidia.com/gpu`, …). Names order as their text does,
/// so [`Resources`] lists them in the order a map keyed by the text would.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum ResourceName {
    Cpu,
    EphemeralStorage,
    Memory,
    Pods,
    /// Any other name; never one of the names above (built by [`ResourceName::new`] only).
    Other(OtherName),
}

/// The text of a resource name that has no variant of its own. An `Arc<String>`, not an
/// `Arc<str>`: one pointer wide, so a name stays two words (an `Arc<str>` would make every
/// amount of every object a word larger). Freed with the last object naming it; nothing is held for the process.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct OtherName(Arc<String>);

impl ResourceName {
    /// The name of a resource as Kubernetes writes it.
    pub fn new(name: &str) -> ResourceName {
        match name {
            "cpu" => ResourceName::Cpu,
            "ephemeral-storage" => ResourceName::EphemeralStorage,
            "memory" => ResourceName::Memory,
            "pods" => ResourceName::Pods,
            other => ResourceName::Other(OtherName(Arc::new(other.to_string()))),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            ResourceName::Cpu => "cpu",
            ResourceName::EphemeralStorage => "ephemeral-storage",
            ResourceName::Memory => "memory",
            ResourceName::Pods => "pods",
            ResourceName::Other(name) => name.0.as_str(),
        }
    }

    /// The place of a named variant in the text order (`cpu` < `ephemeral-storage` <
    /// `memory` < `pods`); `None` for other names.
    fn rank(&self) -> Option<u8> {
        match self {
            ResourceName::Cpu => Some(0),
            ResourceName::EphemeralStorage => Some(1),
            ResourceName::Memory => Some(2),
            ResourceName::Pods => Some(3),
            ResourceName::Other(_) => None,
        }
    }
}

impl Ord for ResourceName {
    fn cmp(&self, other: &ResourceName) -> Ordering {
        match (self.rank(), other.rank()) {
            (Some(mine), Some(theirs)) => mine.cmp(&theirs),
            _ => self.as_str().cmp(other.as_str()),
        }
    }
}

impl PartialOrd for ResourceName {
    fn partial_cmp(&self, other: &ResourceName) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl From<&str> for ResourceName {
    fn from(name: &str) -> ResourceName {
        ResourceName::new(name)
    }
}

impl fmt::Display for ResourceName {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for ResourceName {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

/// Resource amounts in thousandths of the base unit (millicores, millibytes, millipods), so
/// one integer type holds every quantity Kubernetes accepts without rounding. Sorted by name,
/// each name once; a name absent counts as 0 but is not the same as a name at 0 (a node that
/// does not list a resource has none of it to give).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Resources(Box<[(ResourceName, i64)]>);

impl Resources {
    /// The amount of a resource, 0 when absent.
    pub fn get(&self, name: &ResourceName) -> i64 {
        self.amount(name).unwrap_or(0)
    }

    /// The amount of a resource, `None` when absent.
    pub fn amount(&self, name: &ResourceName) -> Option<i64> {
        self.0
            .iter()
            .find(|(mine, _)| mine == name)
            .map(|&(_, amount)| amount)
    }

    pub fn contains(&self, name: &ResourceName) -> bool {
        self.amount(name).is_some()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The names and amounts, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&ResourceName, i64)> {
        self.0.iter().map(|(name, amount)| (name, *amount))
    }

    /// Sets a resource's amount, adding the name when absent.
    pub fn set(&mut self, name: ResourceName, amount: i64) {
        let entry = Resources(Box::new([(name, amount)]));
        self.combine(&entry, |_, theirs| theirs);
    }

    pub fn add(&mut self, other: &Resources) {
        self.combine(other, |mine, theirs| mine.unwrap_or(0) + theirs);
    }

    pub fn subtract(&mut self, other: &Resources) {
        self.combine(other, |mine, theirs| mine.unwrap_or(0) - theirs);
    }

    /// Raise every amount to at least the other's (init containers run one at a time).
    pub fn max_with(&mut self, other: &Resources) {
        self.combine(other, |mine, theirs| mine.unwrap_or(0).max(theirs));
    }

    /// Takes the other's amount for every resource this one lacks.
    pub fn fill_from(&mut self, other: &Resources) {
        self.combine(other, |mine, theirs| mine.unwrap_or(theirs));
    }

    /// Folds each of the other's amounts into this one's (`None` where this one lacks the
    /// name). In place when every name is here already, as for a node's running sum after
    /// its first pods; otherwise the two sorted lists are merged into one new allocation.
    fn combine(&mut self, other: &Resources, fold: impl Fn(Option<i64>, i64) -> i64) {
        let position = |list: &[(ResourceName, i64)], name: &ResourceName| {
            list.binary_search_by(|(mine, _)| mine.cmp(name))
        };
        if other
            .0
            .iter()
            .all(|(name, _)| position(&self.0, name).is_ok())
        {
            for (name, theirs) in other.iter() {
                let index = position(&self.0, name).expect("checked above");
                self.0[index].1 = fold(Some(self.0[index].1), theirs);
            }
            return;
        }
        self.0 = merged(&self.0, &other.0, fold);
    }
}

/// Two sorted lists as one, each of `theirs` folded into `mine`'s amount of the same name.
fn merged(
    mine: &[(ResourceName, i64)],
    theirs: &[(ResourceName, i64)],
    fold: impl Fn(Option<i64>, i64) -> i64,
) -> Box<[(ResourceName, i64)]> {
    let mut merged = Vec::with_capacity(mine.len() + theirs.len());
    let (mut i, mut j) = (0, 0);
    while i < mine.len() || j < theirs.len() {
        let order = match (mine.get(i), theirs.get(j)) {
            (Some(a), Some(b)) => a.0.cmp(&b.0),
            (Some(_), None) => Ordering::Less,
            _ => Ordering::Greater,
        };
        match order {
            Ordering::Less => {
                merged.push(mine[i].clone());
                i += 1;
            }
            Ordering::Greater => {
                merged.push((theirs[j].0.clone(), fold(None, theirs[j].1)));
                j += 1;
            }
            Ordering::Equal => {
                merged.push((mine[i].0.clone(), fold(Some(mine[i].1), theirs[j].1)));
                i += 1;
                j += 1;
            }
        }
    }
    merged.into_boxed_slice()
}

/// Collects amounts by name; a name given twice keeps its last amount, as a map would.
impl FromIterator<(ResourceName, i64)> for Resources {
    fn from_iter<I: IntoIterator<Item = (ResourceName, i64)>>(entries: I) -> Resources {
        let mut entries: Vec<(ResourceName, i64)> = entries.into_iter().collect();
        // Stable: of equal names, the last one given stays last, and is the one kept.
        entries.sort_by(|(a, _), (b, _)| a.cmp(b));
        let mut kept: Vec<(ResourceName, i64)> = Vec::with_capacity(entries.len());
        for entry in entries {
            match kept.last_mut() {
                Some(last) if last.0 == entry.0 => *last = entry,
                _ => kept.push(entry),
            }
        }
        Resources(kept.into_boxed_slice())
    }
}

/// As a map of names to amounts, as it printed when it was one.
impl fmt::Debug for Resources {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn amounts(entries: &[(&str, i64)]) -> Resources {
        entries
            .iter()
            .map(|&(name, amount)| (ResourceName::new(name), amount))
            .collect()
    }

    fn names(resources: &Resources) -> Vec<&str> {
        resources.iter().map(|(name, _)| name.as_str()).collect()
    }

    #[test]
    fn names_order_as_their_text_whatever_their_kind() {
        let mut texts = [
            "pods",
            "nvidia.com/gpu",
            "memory",
            "hugepages-2Mi",
            "example.com/dongle",
            "ephemeral-storage",
            "cpu",
            "amd.com/gpu",
        ];
        let mut typed: Vec<ResourceName> = texts.iter().map(|t| ResourceName::new(t)).collect();
        typed.sort();
        texts.sort();
        let typed: Vec<&str> = typed.iter().map(ResourceName::as_str).collect();
        assert_eq!(typed, texts);
    }

    #[test]
    fn the_four_common_names_are_variants_and_the_rest_are_owned_by_the_objects_naming_them() {
        assert_eq!(ResourceName::new("cpu"), ResourceName::Cpu);
        assert_eq!(
            ResourceName::new("ephemeral-storage"),
            ResourceName::EphemeralStorage
        );
        let gpu = ResourceName::new("nvidia.com/gpu");
        assert_eq!(gpu, ResourceName::new("nvidia.com/gpu"));
        let ResourceName::Other(name) = &gpu else {
            panic!("an extended resource is not a variant");
        };
        // Issue 29: no process-wide table keeps a name alive once its objects are gone.
        assert_eq!(Arc::strong_count(&name.0), 1);
        let copy = gpu.clone();
        let ResourceName::Other(copied) = &copy else {
            panic!("a copy is the same kind of name");
        };
        assert!(Arc::ptr_eq(&name.0, &copied.0), "a copy shares the text");
        assert_eq!(
            std::mem::size_of::<ResourceName>(),
            16,
            "a name stays two words, as the interned one was"
        );
    }

    #[test]
    fn collecting_sorts_and_keeps_the_last_amount_of_a_name() {
        let collected = amounts(&[("pods", 1), ("nvidia.com/gpu", 2), ("cpu", 3), ("pods", 4)]);
        assert_eq!(names(&collected), ["cpu", "nvidia.com/gpu", "pods"]);
        assert_eq!(collected.get(&ResourceName::Pods), 4);
    }

    #[test]
    fn adding_merges_new_names_in_order_and_counts_absent_ones_as_zero() {
        let mut sum = amounts(&[("cpu", 100), ("memory", 5)]);
        sum.add(&amounts(&[
            ("amd.com/gpu", 1000),
            ("cpu", 50),
            ("pods", 1000),
        ]));
        assert_eq!(names(&sum), ["amd.com/gpu", "cpu", "memory", "pods"]);
        assert_eq!(
            sum.iter().map(|(_, amount)| amount).collect::<Vec<_>>(),
            [1000, 150, 5, 1000]
        );
        sum.subtract(&amounts(&[("cpu", 150), ("hugepages-1Gi", 7)]));
        assert_eq!(sum.amount(&ResourceName::Cpu), Some(0), "kept at 0");
        assert_eq!(sum.get(&ResourceName::new("hugepages-1Gi")), -7);
        assert_eq!(sum.amount(&ResourceName::EphemeralStorage), None);
    }

    #[test]
    fn the_larger_amount_wins_and_an_absent_name_starts_from_zero() {
        let mut largest = amounts(&[("cpu", 100), ("memory", 5)]);
        largest.max_with(&amounts(&[("cpu", 50), ("memory", 9), ("pods", -3)]));
        assert_eq!(
            largest,
            amounts(&[("cpu", 100), ("memory", 9), ("pods", 0)])
        );
    }

    #[test]
    fn filling_takes_only_the_names_missing_and_setting_overwrites() {
        let mut requests = amounts(&[("cpu", 100)]);
        requests.fill_from(&amounts(&[("cpu", 200), ("memory", 300)]));
        assert_eq!(requests, amounts(&[("cpu", 100), ("memory", 300)]));
        requests.set(ResourceName::Pods, 1000);
        requests.set(ResourceName::Cpu, 1);
        assert_eq!(
            requests,
            amounts(&[("cpu", 1), ("memory", 300), ("pods", 1000)])
        );
    }

    #[test]
    fn debug_prints_a_map_of_names() {
        let resources = amounts(&[("memory", 2), ("cpu", 1)]);
        assert_eq!(format!("{resources:?}"), r#"{"cpu": 1, "memory": 2}"#);
    }
}
