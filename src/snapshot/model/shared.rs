//! The lists a workload's replicas carry alike (owners, images, required anti-affinity terms,
//! spread constraints), shared while objects are converted: each distinct list is allocated
//! once and every pod that carries it points at it.
//!
//! The replicas of a workload are stamped from one template, so these lists are equal across
//! them. Held per pod they were each a few allocations of their own (a spread constraint with
//! its topology key and selector is five), about a quarter of a live run's memory at 150,000
//! pods beside the pods themselves (BENCHMARKS.md, "A live run at 150,000 pods").

use std::collections::BTreeSet;
use std::sync::Arc;

use super::{AffinityTerm, Owner, SpreadConstraint};

/// The distinct lists seen while converting a batch of objects, one set per kind of item. Like
/// the [`Interner`](super::Interner) that holds it, it only grows and is dropped with its
/// batch; the lists live on in the pods that point at them.
#[derive(Debug, Default)]
pub struct SharedLists {
    owners: BTreeSet<Arc<[Owner]>>,
    images: BTreeSet<Arc<[Arc<str>]>>,
    anti_affinity: BTreeSet<Arc<[AffinityTerm]>>,
    spread_constraints: BTreeSet<Arc<[SpreadConstraint]>>,
}

impl SharedLists {
    /// The shared list equal to `items`, made the first time such a list is seen. Equal lists
    /// are found by their order (the items' selectors are not hashable).
    pub fn share<T: Shareable>(&mut self, items: Vec<T>) -> Arc<[T]> {
        let set = T::set(self);
        if let Some(shared) = set.get(items.as_slice()) {
            return Arc::clone(shared);
        }
        let shared: Arc<[T]> = Arc::from(items);
        set.insert(Arc::clone(&shared));
        shared
    }
}

/// An item of a list that [`SharedLists`] shares: which of its sets holds such lists.
pub trait Shareable: Ord + Sized {
    fn set(lists: &mut SharedLists) -> &mut BTreeSet<Arc<[Self]>>;
}

impl Shareable for Owner {
    fn set(lists: &mut SharedLists) -> &mut BTreeSet<Arc<[Owner]>> {
        &mut lists.owners
    }
}

impl Shareable for Arc<str> {
    fn set(lists: &mut SharedLists) -> &mut BTreeSet<Arc<[Arc<str>]>> {
        &mut lists.images
    }
}

impl Shareable for AffinityTerm {
    fn set(lists: &mut SharedLists) -> &mut BTreeSet<Arc<[AffinityTerm]>> {
        &mut lists.anti_affinity
    }
}

impl Shareable for SpreadConstraint {
    fn set(lists: &mut SharedLists) -> &mut BTreeSet<Arc<[SpreadConstraint]>> {
        &mut lists.spread_constraints
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::model::{OwnerKind, Requirements, WhenUnsatisfiable};
    use kube::core::Expression;

    fn constraint(key: &str, app: &str) -> SpreadConstraint {
        SpreadConstraint {
            max_skew: 1,
            topology_key: key.to_string(),
            when_unsatisfiable: WhenUnsatisfiable::DoNotSchedule,
            selector: Some(Requirements::from(Expression::Equal(
                "app".to_string(),
                app.to_string(),
            ))),
            min_domains: None,
            honor_node_affinity: true,
            honor_node_taints: false,
        }
    }

    #[test]
    fn equal_lists_share_one_allocation_and_different_ones_do_not() {
        let mut lists = SharedLists::default();
        let zone = "topology.kubernetes.io/zone";
        let first = lists.share(vec![constraint(zone, "web")]);
        let second = lists.share(vec![constraint(zone, "web")]);
        let other_app = lists.share(vec![constraint(zone, "api")]);
        let other_key = lists.share(vec![constraint("kubernetes.io/hostname", "web")]);
        assert!(Arc::ptr_eq(&first, &second));
        assert!(!Arc::ptr_eq(&first, &other_app));
        assert!(!Arc::ptr_eq(&first, &other_key));
        assert_eq!(*first, [constraint(zone, "web")]);
        assert_eq!(*other_app, [constraint(zone, "api")]);
    }

    #[test]
    fn each_kind_of_list_is_shared_apart_and_empty_lists_too() {
        let mut lists = SharedLists::default();
        let owner = || Owner {
            kind: OwnerKind::ReplicaSet,
            name: "web-7d9f".into(),
            uid: "uid-1".into(),
            controller: true,
        };
        let owners = lists.share(vec![owner()]);
        assert!(Arc::ptr_eq(&owners, &lists.share(vec![owner()])));
        let images = lists.share::<Arc<str>>(vec!["registry.example/web:1".into()]);
        assert!(Arc::ptr_eq(
            &images,
            &lists.share::<Arc<str>>(vec!["registry.example/web:1".into()])
        ));
        let none = lists.share::<AffinityTerm>(Vec::new());
        assert!(none.is_empty());
        assert!(Arc::ptr_eq(&none, &lists.share::<AffinityTerm>(Vec::new())));
        let reversed = lists.share(vec![constraint("b", "web"), constraint("a", "web")]);
        let ordered = lists.share(vec![constraint("a", "web"), constraint("b", "web")]);
        assert!(!Arc::ptr_eq(&reversed, &ordered), "the order is kept");
    }
}
