//! The Kubernetes Events an eviction records, decided with the plan: their reason and their
//! text, and whether a failure gets one (the policy's `evictionFailureEventNotification`,
//! upstream's default off). The executor only sends them.

use std::fmt;

use super::{Eviction, Plan};
use crate::policy::PluginKind;

/// The `action` of every Event this tool writes, as upstream's descheduler.
pub const EVENT_ACTION: &str = "Descheduled";

/// What an Event says: its `reason` and `note`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventIntent {
    pub reason: EventReason,
    pub note: String,
}

/// The `reason` of an Event, as upstream's descheduler gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventReason {
    /// The pod was evicted: the plugin that evicted it.
    Evicted(PluginKind),
    /// The eviction failed (a Warning).
    EvictionFailed,
}

impl fmt::Display for EventReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EventReason::Evicted(plugin) => plugin.fmt(f),
            EventReason::EvictionFailed => f.write_str("EvictionFailed"),
        }
    }
}

impl Eviction {
    /// The Normal Event once the pod is evicted: the plugin as reason, the why as note.
    pub fn evicted_event(&self) -> EventIntent {
        EventIntent {
            reason: EventReason::Evicted(self.strategy),
            note: format!(
                "pod evicted from {} by vsphere-descheduler: {}",
                self.place(),
                self.reason
            ),
        }
    }

    /// `node worker-1 (ESXi host esxi-41)`, or without the host when unmapped.
    fn place(&self) -> String {
        match &self.host {
            Some(host) => format!("node {} (ESXi host {host})", self.node),
            None => format!("node {}", self.node),
        }
    }
}

impl Plan {
    /// The Warning Event of eviction `index` failing for `cause`, when the policy asks for one.
    pub fn failure_event(&self, index: usize, cause: &str) -> Option<EventIntent> {
        let eviction = &self.evictions[index];
        self.events_on_failure.then(|| EventIntent {
            reason: EventReason::EvictionFailed,
            note: format!(
                "pod eviction from {} by vsphere-descheduler failed: {cause}",
                eviction.place()
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eviction(host: Option<&str>) -> Eviction {
        Eviction {
            host: host.map(str::to_string),
            ..crate::plan::testing::eviction("shop", "web-1", PluginKind::InterPodAntiAffinity)
        }
    }

    #[test]
    fn an_evicted_pod_s_event_names_the_plugin_the_node_and_its_host() {
        assert_eq!(
            eviction(Some("esxi-41")).evicted_event(),
            EventIntent {
                reason: EventReason::Evicted(PluginKind::InterPodAntiAffinity),
                note: "pod evicted from node worker-a (ESXi host esxi-41) by \
                       vsphere-descheduler: shares ESXi host esxi-2 with shop/web-2 on node \
                       worker-b, against its required anti-affinity on vsphere-descheduler.io/host"
                    .to_string(),
            }
        );
        assert!(
            eviction(None)
                .evicted_event()
                .note
                .starts_with("pod evicted from node worker-a by")
        );
    }

    #[test]
    fn an_event_reason_is_the_plugin_or_eviction_failed_as_upstream_writes_them() {
        assert_eq!(
            EventReason::Evicted(PluginKind::InterPodAntiAffinity).to_string(),
            "RemovePodsViolatingInterPodAntiAffinity"
        );
        assert_eq!(EventReason::EvictionFailed.to_string(), "EvictionFailed");
    }

    #[test]
    fn a_failure_is_an_event_only_when_the_policy_asks_for_it() {
        let mut plan = Plan {
            evictions: vec![eviction(None)],
            ..Plan::default()
        };
        assert_eq!(plan.failure_event(0, "500"), None);
        plan.events_on_failure = true;
        assert_eq!(
            plan.failure_event(0, "500"),
            Some(EventIntent {
                reason: EventReason::EvictionFailed,
                note: "pod eviction from node worker-a by vsphere-descheduler failed: 500"
                    .to_string(),
            })
        );
    }
}
