//! `RemovePodsViolatingInterPodAntiAffinity`: pods that share a topology domain (an ESXi host,
//! a node, a zone) with a pod their required anti-affinity excludes.
//!
//! Candidates are the pods that own a violated term, taken most-evictable first; each eviction
//! is applied before the next pod is examined, so a pair of replicas loses one pod, not two.
//! A candidate that cannot go (PDB, protection, nowhere better) stays, and its partner is
//! tried instead.

use kube::core::SelectorExt;

use super::view::PodState;
use super::{Context, Planner};
use crate::policy::AntiAffinityArgs;

pub fn run(planner: &mut Planner, context: &Context, args: &AntiAffinityArgs) {
    let view = &planner.view;
    let mut candidates: Vec<usize> = (0..view.snapshot.pods.len())
        .filter(|&p| !view.pod(p).anti_affinity.is_empty())
        .filter(|&p| planner.is_candidate(p))
        .filter(|&p| args.namespaces.admits(&view.pod(p).namespace))
        .filter(|&p| {
            args.label_selector
                .as_ref()
                .is_none_or(|s| s.matches(&view.pod(p).labels))
        })
        .collect();
    view.sort_for_eviction(context.evictor.no_eviction_policy, &mut candidates);

    for pod in candidates {
        if planner.view.state[pod] != PodState::Active {
            continue;
        }
        if let Some(reason) = violation(planner, pod) {
            planner.attempt(context, pod, reason, None, false);
        }
    }
}

/// Why the pod violates one of its required anti-affinity terms right now, if it does.
fn violation(planner: &Planner, pod: usize) -> Option<String> {
    let view = &planner.view;
    let node = view.pod_node[pod]?;
    let host_key = &view.policy.vsphere.labels.host;
    for term in &view.pod(pod).anti_affinity {
        // Domains are numbered per key: the inner loop compares integers.
        let Some(domains) = view.domains(&term.topology_key) else {
            continue;
        };
        let Some(domain) = domains.of_node[node] else {
            continue;
        };
        for other in view.term_matches(pod, term) {
            if view.state[other] != PodState::Active {
                continue;
            }
            let Some(other_node) = view.pod_node[other] else {
                continue;
            };
            if domains.of_node[other_node] != Some(domain) {
                continue;
            }
            let value = &domains.names[domain as usize];
            let other_pod = view.pod(other);
            let other_node_name = &view.nodes[other_node].node.name;
            let place = if &term.topology_key == host_key {
                format!("ESXi host {value}")
            } else {
                format!("{}={value}", term.topology_key)
            };
            return Some(format!(
                "shares {place} with {} on node {other_node_name}, against its required anti-affinity on {}",
                other_pod.key(),
                term.topology_key
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use crate::plan::plan;
    use crate::plan::testing::*;
    use crate::policy::{EvictorArgs, Protections};

    /// Two hosts: w1 and w2 on esxi-1, w3 on esxi-2.

    #[test]
    fn replicas_sharing_a_host_lose_exactly_the_newest_one() {
        let snapshot = crowded()
            .pod(web("web-old", "w1", 60))
            .pod(web("web-new", "w2", 5))
            .build();
        let plan = plan(&snapshot, &policy(vec![anti_affinity()]));
        assert_eq!(evicted(&plan), ["shop/web-new"]);
        assert_eq!(plan.evictions[0].fits_on.as_deref(), Some("w3 (esxi-2)"));
        assert!(plan.skipped.is_empty());
    }

    #[test]
    fn three_replicas_on_one_host_lose_two_when_two_hosts_are_free() {
        let snapshot = Lab::new()
            .host("esxi-1")
            .host("esxi-2")
            .host("esxi-3")
            .node("w1", "esxi-1")
            .node("w2", "esxi-1")
            .node("w3", "esxi-1")
            .node("w4", "esxi-2")
            .node("w5", "esxi-3")
            .pod(web("web-a", "w1", 30))
            .pod(web("web-b", "w2", 20))
            .pod(web("web-c", "w3", 10))
            .build();
        let plan = plan(&snapshot, &policy(vec![anti_affinity()]));
        assert_eq!(evicted(&plan), ["shop/web-c", "shop/web-b"]);
        // The second eviction must not count on the host the first one will take.
        assert_ne!(plan.evictions[0].fits_on, plan.evictions[1].fits_on);
    }

    #[test]
    fn a_pod_with_nowhere_better_to_go_stays_and_says_why() {
        let snapshot = crowded()
            .pod(web("web-a", "w1", 30))
            .pod(web("web-b", "w2", 20))
            .pod(web("web-c", "w3", 10))
            .build();
        let plan = plan(&snapshot, &policy(vec![anti_affinity()]));
        assert!(plan.evictions.is_empty());
        assert_eq!(
            skipped(&plan),
            [
                ("shop/web-b".to_string(), "no-feasible-node"),
                ("shop/web-a".to_string(), "no-feasible-node")
            ]
        );
        assert!(
            plan.skipped[0].detail.contains("anti-affinity"),
            "{}",
            plan.skipped[0].detail
        );
    }

    #[test]
    fn when_the_preferred_pod_is_protected_its_partner_goes_instead() {
        let snapshot = crowded()
            .pod(web("web-old", "w1", 60))
            .pod(web("web-new", "w2", 5).with(|p| p.local_storage = true))
            .build();
        let plan = plan(&snapshot, &policy(vec![anti_affinity()]));
        assert_eq!(evicted(&plan), ["shop/web-old"]);
        assert_eq!(skipped(&plan), [("shop/web-new".to_string(), "protected")]);
    }

    #[test]
    fn a_terminating_partner_is_not_a_peer() {
        let snapshot = crowded()
            .pod(web("web-old", "w1", 60).with(|p| p.terminating = true))
            .pod(web("web-new", "w2", 5))
            .build();
        let plan = plan(&snapshot, &policy(vec![anti_affinity()]));
        assert!(plan.evictions.is_empty(), "{:?}", evicted(&plan));
    }

    #[test]
    fn a_stale_host_label_is_refreshed_before_planning() {
        // w2's VM moved to esxi-1, but its label still says esxi-2.
        let snapshot = moved_worker()
            .pod(web("web-old", "w1", 60))
            .pod(web("web-new", "w2", 5))
            .build();
        let plan = plan(&snapshot, &policy(vec![anti_affinity()]));
        assert_eq!(plan.label_changes.len(), 1);
        assert_eq!(plan.label_changes[0].new.as_deref(), Some("esxi-1"));
        assert_eq!(evicted(&plan), ["shop/web-new"]);
    }

    #[test]
    fn pods_on_unmapped_nodes_are_not_peers_and_unmapped_nodes_are_not_targets() {
        let snapshot = crowded()
            .with(|s| {
                // w2 has no VM any more (e.g. a bare-metal node joined with the same labels).
                let cluster = &mut s.inventory.as_mut().expect("inventory").clusters[0];
                cluster.vms.retain(|vm| vm.name != "w2");
                s.nodes[1].provider_id = None;
            })
            .pod(web("web-old", "w1", 60))
            .pod(web("web-new", "w2", 5))
            .build();
        let plan = plan(&snapshot, &policy(vec![anti_affinity()]));
        assert_eq!(plan.unmapped_nodes, ["w2"]);
        assert!(plan.evictions.is_empty());
        assert!(plan.label_changes.iter().all(|c| c.node != "w2"));
    }

    #[test]
    fn without_an_inventory_host_labels_are_not_trusted() {
        let snapshot = crowded()
            .pod(web("web-old", "w1", 60))
            .pod(web("web-new", "w2", 5))
            .with(|s| s.inventory = None)
            .build();
        let plan = plan(&snapshot, &policy(vec![anti_affinity()]));
        assert!(plan.evictions.is_empty());
        assert!(
            plan.warnings
                .iter()
                .any(|w| w.contains("no vSphere inventory"))
        );
    }

    #[test]
    fn node_level_anti_affinity_is_acted_on_too() {
        let snapshot = three_hosts()
            .pod(
                pod("db/pg-0")
                    .app("pg")
                    .on("w1")
                    .anti_affinity(HOSTNAME)
                    .age_minutes(60),
            )
            .pod(
                pod("db/pg-1")
                    .app("pg")
                    .on("w1")
                    .anti_affinity(HOSTNAME)
                    .age_minutes(1),
            )
            .build();
        let plan = plan(&snapshot, &policy(vec![anti_affinity()]));
        assert_eq!(evicted(&plan), ["db/pg-1"]);
    }

    #[test]
    fn the_force_evict_annotation_overrides_protections() {
        let snapshot = crowded()
            .pod(web("web-old", "w1", 60).with(|p| p.local_storage = true))
            .pod(web("web-new", "w2", 5).with(|p| {
                p.local_storage = true;
                p.force_evict = true;
            }))
            .build();
        let plan = plan(&snapshot, &policy(vec![anti_affinity()]));
        assert_eq!(evicted(&plan), ["shop/web-new"]);
    }

    #[test]
    fn with_node_fit_off_no_better_place_is_required() {
        let snapshot = Lab::new()
            .host("esxi-1")
            .node("w1", "esxi-1")
            .node("w2", "esxi-1")
            .pod(web("web-old", "w1", 60))
            .pod(web("web-new", "w2", 5))
            .build();
        let evictor = EvictorArgs {
            node_fit: false,
            protections: Protections::default(),
            ..EvictorArgs::default()
        };
        let plan = plan(&snapshot, &policy_with(evictor, vec![anti_affinity()]));
        assert_eq!(evicted(&plan), ["shop/web-new"]);
        assert_eq!(plan.evictions[0].fits_on, None);
    }
}
