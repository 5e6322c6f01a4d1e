//! Typed positions of pods and nodes, and the vectors they index.
//!
//! Planning refers to a pod by its position in `snapshot.pods` and to a node by its position
//! in `snapshot.nodes` (the view keeps both orders). Both used to be bare `usize`, so a pod
//! passed where a node was meant compiled; [`PodIx`] and [`NodeIx`] make that a type error,
//! and [`PerPod`] / [`PerNode`] only accept their own kind of index.

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

/// A position that indexes a [`Table`]: made from a `usize` once, read back as one.
pub trait TablePosition: Copy {
    fn at(position: usize) -> Self;
    fn position(self) -> usize;
}

macro_rules! position {
    ($(#[$doc:meta])* $name:ident, $one:literal, $many:literal) => {
        $(#[$doc])*
        // u32 halves the per-pod tables (`Option<NodeIx>` is 8 bytes, not 16); the bound is
        // checked here, where every index is made.
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(u32);

        impl TablePosition for $name {
            fn at(position: usize) -> $name {
                $name(u32::try_from(position).expect(concat!("fewer than 2^32 ", $many)))
            }

            fn position(self) -> usize {
                self.0 as usize
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}#{}", $one, self.0)
            }
        }
    };
}

position!(
    /// A pod's position in `snapshot.pods`.
    PodIx,
    "pod",
    "pods"
);
position!(
    /// A node's position in `snapshot.nodes` (and the view's nodes).
    NodeIx,
    "node",
    "nodes"
);

/// A vector indexed by one kind of position only.
#[derive(Clone, PartialEq, Eq)]
pub struct Table<I, T> {
    items: Vec<T>,
    // `fn(I)`: the table neither owns nor drops an `I`, so it stays Send/Sync whatever `I` is.
    kind: PhantomData<fn(I)>,
}

/// One value per pod, in snapshot order.
pub type PerPod<T> = Table<PodIx, T>;
/// One value per node, in snapshot order.
pub type PerNode<T> = Table<NodeIx, T>;

impl<I: TablePosition, T> Table<I, T> {
    pub fn with_capacity(capacity: usize) -> Table<I, T> {
        Vec::with_capacity(capacity).into()
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn push(&mut self, item: T) {
        self.items.push(item);
    }

    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.items.iter()
    }

    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, T> {
        self.items.iter_mut()
    }

    /// Each value with its position.
    pub fn enumerate(&self) -> impl DoubleEndedIterator<Item = (I, &T)> + ExactSizeIterator {
        self.items.iter().enumerate().map(|(i, t)| (I::at(i), t))
    }

    /// Every position, in order.
    pub fn indices(&self) -> impl DoubleEndedIterator<Item = I> + ExactSizeIterator + use<I, T> {
        (0..self.items.len()).map(I::at)
    }

    pub fn get(&self, index: I) -> Option<&T> {
        self.items.get(index.position())
    }

    /// The position of the value `compare` finds, in a table sorted by it.
    pub fn binary_search_by(&self, compare: impl FnMut(&T) -> std::cmp::Ordering) -> Option<I> {
        self.items.binary_search_by(compare).ok().map(I::at)
    }
}

impl<I, T> Default for Table<I, T> {
    fn default() -> Table<I, T> {
        Vec::new().into()
    }
}

impl<I, T> From<Vec<T>> for Table<I, T> {
    fn from(items: Vec<T>) -> Table<I, T> {
        Table {
            items,
            kind: PhantomData,
        }
    }
}

impl<I, T> FromIterator<T> for Table<I, T> {
    fn from_iter<It: IntoIterator<Item = T>>(iter: It) -> Table<I, T> {
        Vec::from_iter(iter).into()
    }
}

// With `Default`, lets `unzip` fill two tables at once.
impl<I, T> Extend<T> for Table<I, T> {
    fn extend<It: IntoIterator<Item = T>>(&mut self, iter: It) {
        self.items.extend(iter);
    }
}

impl<'t, I, T> IntoIterator for &'t Table<I, T> {
    type Item = &'t T;
    type IntoIter = std::slice::Iter<'t, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

impl<I: TablePosition, T> Index<I> for Table<I, T> {
    type Output = T;

    fn index(&self, index: I) -> &T {
        &self.items[index.position()]
    }
}

impl<I: TablePosition, T> IndexMut<I> for Table<I, T> {
    fn index_mut(&mut self, index: I) -> &mut T {
        &mut self.items[index.position()]
    }
}

impl<I, T: fmt::Debug> fmt::Debug for Table<I, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.items.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_is_read_back_at_the_positions_it_was_filled_in() {
        let table: PerNode<&str> = vec!["a", "b", "c"].into();
        let read: Vec<(usize, &str)> = table
            .enumerate()
            .map(|(node, name)| (node.position(), *name))
            .collect();
        assert_eq!(read, [(0, "a"), (1, "b"), (2, "c")]);
        assert_eq!(table[NodeIx::at(1)], "b");
        assert_eq!(table.indices().last(), Some(NodeIx::at(2)));
    }

    #[test]
    fn an_index_beyond_u32_is_refused_where_it_is_made() {
        let made = std::panic::catch_unwind(|| PodIx::at(u32::MAX as usize + 1));
        assert!(made.is_err());
    }
}
