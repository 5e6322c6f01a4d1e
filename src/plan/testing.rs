//! Builders for planner tests: `Lab::new().host("esxi-1").node("w1", "esxi-1")` and
//! `pod("ns/a").on("w1").app("web").anti_affinity(HOST)`.

use std::collections::BTreeSet;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use kube::core::Expression;

use crate::inventory::{
    Cluster, ConnectionState, DrsBehavior, DrsConfig, DrsRule, Host, HostGroup, Inventory,
    MaintenanceMode, PowerState, RuleKind, Vm, VmGroup, VmHostRule,
};
use crate::plan::judge::availability::GuardRefusal;
use crate::plan::judge::budget::{BudgetRefusal, LimitReached, PdbRefusal};
use crate::plan::judge::feasibility::NoNode;
use crate::plan::vocabulary::Eviction;
use crate::plan::vocabulary::reasons::{
    EvictionReason, SharedDomain, SkipDetail, SkipReason, Strength,
};
use crate::policy::plugins::{AntiAffinityArgs, DuplicatesArgs, TopologySpreadArgs};
use crate::policy::{
    Allowance, Availability, DEFAULT_HOST_LABEL, DEFAULT_SITE_LABEL, EvictorArgs, ExtensionPoint,
    HostGroupSelection, Pacing, PluginKind, Policy, Profile, SiteSettings, SiteSource, Strategy,
    VsphereSettings,
};
use crate::snapshot::{
    AffinityTerm, ContainerStatus, Labels, Node, Owner, Pdb, Phase, Pod, Qos, Requirements,
    ResourceName, Resources, Snapshot, SpreadConstraint, Taint, TaintEffect, Terminated,
    UnhealthyPodEvictionPolicy, WeightedAffinityTerm, WhenUnsatisfiable,
};

pub const HOST: &str = DEFAULT_HOST_LABEL;
pub const HOSTNAME: &str = "kubernetes.io/hostname";
pub const SITE: &str = DEFAULT_SITE_LABEL;

pub fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-21T12:00:00Z")
        .expect("valid")
        .to_utc()
}

pub fn resources(cpu_milli: i64, memory_mi: i64, pods: i64) -> Resources {
    Resources::from_iter([
        (ResourceName::Cpu, cpu_milli),
        (ResourceName::Memory, memory_mi * 1024 * 1024 * 1000),
        (ResourceName::Pods, pods * 1000),
    ])
}

/// Appends to one of a pod's lists, which are shared slices (copied on write).
pub fn push<T: Clone>(list: &mut Arc<[T]>, item: T) {
    let mut items = list.to_vec();
    items.push(item);
    *list = items.into();
}

/// The managed object id the lab gives the VM of node `name`.
pub fn vm_id(name: &str) -> String {
    format!("vm-{name}")
}

/// A Ready, uncordoned node of 4 CPUs and 16 GiB, labelled with its hostname.
fn ready_node(name: &str, provider_id: Option<String>) -> Node {
    Node {
        name: name.to_string(),
        uid: Some(format!("uid-{name}")),
        applied_label_keys: BTreeSet::new(),
        labels: Labels::from([(HOSTNAME.to_string(), name.to_string())]),
        provider_id,
        system_uuid: None,
        internal_ips: Vec::new(),
        unschedulable: false,
        ready: true,
        taints: Vec::new(),
        allocatable: resources(4000, 16 * 1024, 110),
    }
}

/// A cluster under construction: one vSphere cluster `c1`, hosts, node VMs, pods.
pub struct Lab {
    snapshot: Snapshot,
}

impl Lab {
    pub fn new() -> Lab {
        Lab {
            snapshot: Snapshot {
                now: now(),
                inventory: Some(Inventory {
                    clusters: vec![Cluster {
                        name: "c1".to_string(),
                        id: Some("domain-c1".to_string()),
                        datacenter: "dc1".to_string(),
                        datacenter_id: Some("datacenter-1".to_string()),
                        drs: Some(DrsConfig {
                            enabled: true,
                            default_vm_behavior: DrsBehavior::FullyAutomated,
                        }),
                        ..Cluster::default()
                    }],
                }),
                ..Snapshot::default()
            },
        }
    }

    fn cluster(&mut self) -> &mut Cluster {
        &mut self
            .snapshot
            .inventory
            .as_mut()
            .expect("inventory")
            .clusters[0]
    }

    pub fn host(mut self, name: &str) -> Lab {
        self.cluster().hosts.push(Host {
            name: name.to_string(),
            id: Some(format!("host-{name}")),
            connection_state: ConnectionState::Connected,
            in_maintenance_mode: MaintenanceMode::Off,
            vsan_fault_domain: None,
        });
        self
    }

    /// A Ready node whose VM (same name) runs on `host`, labelled with that host.
    pub fn node(mut self, name: &str, host: &str) -> Lab {
        let uuid = format!(
            "4200{:04x}-0000-0000-0000-{:012x}",
            self.snapshot.nodes.len(),
            self.snapshot.nodes.len()
        );
        self.cluster().vms.push(Vm {
            name: name.to_string(),
            id: Some(vm_id(name)),
            uuid: uuid.clone(),
            host: host.to_string(),
            power_state: PowerState::PoweredOn,
            drs_behavior: None,
        });
        let mut node = ready_node(name, Some(format!("vsphere://{uuid}")));
        node.labels.insert(HOST.to_string(), host.to_string());
        self.snapshot.nodes.push(node);
        self.snapshot.nodes.sort_by(|a, b| a.name.cmp(&b.name));
        self
    }

    /// A Ready node that is the ESXi host `name` itself (a Supervisor cluster's worker): no VM,
    /// no providerID, no host label yet.
    pub fn host_node(mut self, name: &str) -> Lab {
        self.snapshot.nodes.push(ready_node(name, None));
        self.snapshot.nodes.sort_by(|a, b| a.name.cmp(&b.name));
        self
    }

    /// `count` pods `app/<node>-NN` on `node`, with the pod builder's requests.
    pub fn pods_on(self, node: &str, count: usize) -> Lab {
        (0..count).fold(self, |lab, i| {
            lab.pod(pod(&format!("app/{node}-{i:02}")).on(node))
        })
    }

    pub fn pod(mut self, pod: PodBuilder) -> Lab {
        self.snapshot.pods.push(pod.0);
        self.snapshot
            .pods
            .sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        self
    }

    pub fn pdb(mut self, key: &str, app: &str, allowed: i32) -> Lab {
        let (namespace, name) = key.split_once('/').expect("ns/name");
        self.snapshot.pdbs.push(Pdb {
            namespace: namespace.to_string(),
            name: name.to_string(),
            selector: Some(app_selector(app)),
            generation: 1,
            observed_generation: 1,
            disruptions_allowed: allowed,
            current_healthy: 0,
            desired_healthy: 0,
            expected_pods: 0,
            disrupted_pods: 0,
            unhealthy_pod_eviction_policy: UnhealthyPodEvictionPolicy::IfHealthyBudget,
        });
        self
    }

    pub fn rule(mut self, name: &str, key: i32, vms: &[&str]) -> Lab {
        self.cluster().rules.push(DrsRule {
            name: name.to_string(),
            key: Some(key),
            kind: RuleKind::AntiAffinity,
            enabled: true,
            mandatory: false,
            user_created: true,
            uuid: Some(format!("uuid-{key}")),
            vms: vms.iter().map(|v| v.to_string()).collect(),
            vm_ids: vms.iter().map(|v| vm_id(v)).collect(),
        });
        self
    }

    /// Adds a vSphere cluster module named `<policy>/<group>` over these VMs, as the Supervisor
    /// source records one: soft, VKS's own, enabled.
    pub fn module(mut self, name: &str, vms: &[&str]) -> Lab {
        self.cluster().rules.push(DrsRule {
            name: name.to_string(),
            key: None,
            kind: RuleKind::ClusterModule,
            enabled: true,
            mandatory: false,
            user_created: false,
            uuid: Some(format!("module-{name}")),
            vms: vms.iter().map(|v| v.to_string()).collect(),
            vm_ids: vms.iter().map(|v| vm_id(v)).collect(),
        });
        self
    }

    /// Adds a DRS host group over these hosts (by name and id, as observed).
    pub fn host_group(mut self, name: &str, hosts: &[&str]) -> Lab {
        self.cluster().host_groups.push(HostGroup {
            name: name.to_string(),
            hosts: hosts.iter().map(|h| h.to_string()).collect(),
            host_ids: hosts.iter().map(|h| format!("host-{h}")).collect(),
        });
        self
    }

    /// Puts a host in a vSAN fault domain (`""`: vSAN's default one).
    pub fn fault_domain(mut self, host: &str, domain: &str) -> Lab {
        let host = self
            .cluster()
            .hosts
            .iter_mut()
            .find(|h| h.name == host)
            .expect("the host");
        host.vsan_fault_domain = Some(domain.to_string());
        self
    }

    /// Adds a DRS VM group over these VMs.
    pub fn vm_group(mut self, name: &str, vms: &[&str]) -> Lab {
        self.cluster().vm_groups.push(VmGroup {
            name: name.to_string(),
            vms: vms.iter().map(|v| v.to_string()).collect(),
            vm_ids: vms.iter().map(|v| vm_id(v)).collect(),
        });
        self
    }

    /// Adds a "should" VM/Host rule keeping `vm_group` on `host_group`.
    pub fn vm_host_rule(
        mut self,
        name: &str,
        vm_group: &str,
        host_group: &str,
        enabled: bool,
    ) -> Lab {
        self.cluster().vm_host_rules.push(VmHostRule {
            name: name.to_string(),
            key: None,
            enabled,
            mandatory: false,
            vm_group: vm_group.to_string(),
            affine_host_group: Some(host_group.to_string()),
            anti_affine_host_group: None,
        });
        self
    }

    /// Adds a taint to a node.
    pub fn taint(self, node: &str, key: &str, value: &str, effect: TaintEffect) -> Lab {
        self.with(|snapshot| {
            snapshot
                .nodes
                .iter_mut()
                .find(|n| n.name == node)
                .expect("the node")
                .taints
                .push(Taint {
                    key: key.to_string(),
                    value: value.to_string(),
                    effect,
                });
        })
    }

    /// Sets a label on a node as recorded (a stale one, say).
    pub fn label(self, node: &str, key: &str, value: &str) -> Lab {
        self.with(|snapshot| {
            snapshot
                .nodes
                .iter_mut()
                .find(|n| n.name == node)
                .expect("the node")
                .labels
                .insert(key.to_string(), value.to_string());
        })
    }

    pub fn with(mut self, change: impl FnOnce(&mut Snapshot)) -> Lab {
        change(&mut self.snapshot);
        self
    }

    pub fn build(self) -> Snapshot {
        self.snapshot
    }
}

pub fn app_selector(app: &str) -> Requirements {
    Requirements::from(Expression::Equal("app".to_string(), app.to_string()))
}

/// A pod under construction.
pub struct PodBuilder(pub Pod);

/// A running, Burstable pod `namespace/name` owned by ReplicaSet `rs`, created at `now - 1h`.
pub fn pod(key: &str) -> PodBuilder {
    let (namespace, name) = key.split_once('/').expect("ns/name");
    PodBuilder(Pod {
        namespace: namespace.into(),
        name: name.to_string(),
        uid: format!("uid-{key}"),
        labels: Labels::new(),
        node_name: None,
        phase: Phase::Running,
        terminating: false,
        ready: true,
        created: Some(now() - Duration::hours(1)),
        started: Some(now() - Duration::hours(1)),
        priority: 0,
        qos: Qos::Burstable,
        owners: Arc::from([Owner {
            kind: "ReplicaSet".into(),
            name: "rs".into(),
            uid: "rs-uid".into(),
            controller: true,
        }]),
        images: Arc::from(["app:1".into()]),
        requests: resources(100, 128, 1),
        node_selector: Labels::new(),
        anti_affinity: Default::default(),
        spread_constraints: Default::default(),
        mirror: false,
        force_evict: false,
        prefer_no_eviction: false,
        local_storage: false,
        resource_claims: false,
        conditions: Box::default(),
        extras: None,
    })
}

impl PodBuilder {
    pub fn on(mut self, node: &str) -> Self {
        self.0.node_name = Some(node.into());
        self
    }

    /// Label `app=<app>`, owned by ReplicaSet `<app>-rs`.
    pub fn app(mut self, app: &str) -> Self {
        self.0.labels.insert("app".to_string(), app.to_string());
        let owner = &mut Arc::make_mut(&mut self.0.owners)[0];
        owner.name = format!("{app}-rs").into();
        owner.uid = format!("{app}-rs-uid").into();
        self
    }

    pub fn owner(mut self, kind: &str, name: &str) -> Self {
        self.0.owners = Arc::from([Owner {
            kind: kind.into(),
            name: name.into(),
            uid: format!("{name}-uid").into(),
            controller: true,
        }]);
        self
    }

    /// Required anti-affinity against its own app on `key`.
    pub fn anti_affinity(mut self, key: &str) -> Self {
        let app = self.0.labels.get("app").expect("app() first").to_string();
        push(
            &mut self.0.anti_affinity,
            AffinityTerm {
                selector: Some(app_selector(&app)),
                namespaces: Vec::new(),
                namespace_selector: None,
                topology_key: key.to_string(),
            },
        );
        self
    }

    /// Preferred anti-affinity against its own app on `key`, with `weight`.
    pub fn soft_anti_affinity(mut self, key: &str, weight: i32) -> Self {
        let app = self.0.labels.get("app").expect("app() first").to_string();
        self.0
            .extras_mut()
            .preferred_anti_affinity
            .push(WeightedAffinityTerm {
                weight,
                term: AffinityTerm {
                    selector: Some(app_selector(&app)),
                    namespaces: Vec::new(),
                    namespace_selector: None,
                    topology_key: key.to_string(),
                },
            });
        self
    }

    /// Preferred affinity on `key` towards pods of app `app`, with `weight`.
    pub fn soft_affinity(mut self, key: &str, app: &str, weight: i32) -> Self {
        self.0
            .extras_mut()
            .preferred_affinity
            .push(WeightedAffinityTerm {
                weight,
                term: AffinityTerm {
                    selector: Some(app_selector(app)),
                    namespaces: Vec::new(),
                    namespace_selector: None,
                    topology_key: key.to_string(),
                },
            });
        self
    }

    /// Sets one label.
    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.0.labels.insert(key.to_string(), value.to_string());
        self
    }

    /// Required anti-affinity on topology key `topology` against pods labelled `key=value`.
    pub fn anti_affinity_against(mut self, topology: &str, key: &str, value: &str) -> Self {
        push(
            &mut self.0.anti_affinity,
            AffinityTerm {
                selector: Some(Requirements::from(Expression::Equal(
                    key.to_string(),
                    value.to_string(),
                ))),
                namespaces: Vec::new(),
                namespace_selector: None,
                topology_key: topology.to_string(),
            },
        );
        self
    }

    /// A spread constraint over its own app on `key`.
    pub fn spread(mut self, key: &str, max_skew: i32, when: WhenUnsatisfiable) -> Self {
        let app = self.0.labels.get("app").expect("app() first").to_string();
        push(
            &mut self.0.spread_constraints,
            SpreadConstraint {
                max_skew,
                topology_key: key.to_string(),
                when_unsatisfiable: when,
                selector: Some(app_selector(&app)),
                min_domains: None,
                honor_node_affinity: true,
                honor_node_taints: false,
            },
        );
        self
    }

    /// Phase `Failed`, as a pod whose containers all ended is.
    pub fn failed(mut self) -> Self {
        self.0.phase = Phase::Failed;
        self.0.ready = false;
        self
    }

    /// One container status with this many restarts, waiting for `waiting` when given.
    pub fn restarts(mut self, count: i32, waiting: Option<&str>) -> Self {
        self.0
            .extras_mut()
            .container_statuses
            .push(ContainerStatus {
                restart_count: count,
                waiting_reason: waiting.map(str::to_string),
                terminated: None,
            });
        self
    }

    /// One container status: terminated with this exit code and reason.
    pub fn terminated(mut self, exit_code: i32, reason: &str) -> Self {
        self.0
            .extras_mut()
            .container_statuses
            .push(ContainerStatus {
                restart_count: 0,
                waiting_reason: None,
                terminated: Some(Terminated {
                    reason: Some(reason.to_string()),
                    exit_code,
                }),
            });
        self
    }

    /// Created this many minutes before `now` (newer pods go first).
    pub fn age_minutes(mut self, minutes: i64) -> Self {
        self.0.created = Some(now() - Duration::minutes(minutes));
        self.0.started = self.0.created;
        self
    }

    pub fn with(mut self, change: impl FnOnce(&mut Pod)) -> Self {
        change(&mut self.0);
        self
    }
}

/// A planned eviction of `namespace/pod` from worker-a, for tests of what reads a plan (the
/// report, metrics, Events).
/// The reason of a pod sharing ESXi host esxi-2 with `partner` (on worker-b) against its own
/// required anti-affinity.
pub fn shares_host_with(partner: &str) -> EvictionReason {
    EvictionReason::AntiAffinity(SharedDomain {
        strength: Strength::Required,
        key: HOST.to_string(),
        value: "esxi-2".to_string(),
        is_host: true,
        partner: partner.to_string(),
        partner_node: "worker-b".to_string(),
        own: true,
        partners: 1,
    })
}

/// A detail the report files under `reason`, for skips built by hand.
pub fn detail_of(reason: SkipReason) -> SkipDetail {
    match reason {
        SkipReason::Protected => SkipDetail::Protected(vec![]),
        SkipReason::NoFeasibleNode => SkipDetail::NoFeasibleNode(NoNode { refusals: vec![] }),
        SkipReason::Pdb => SkipDetail::Budget(BudgetRefusal::Pdb(PdbRefusal::Several(vec![
            "shop/a".to_string(),
            "shop/b".to_string(),
        ]))),
        SkipReason::Limit => {
            SkipDetail::Budget(BudgetRefusal::Limit(LimitReached::Total { max: 1 }))
        }
        SkipReason::WouldReturn => SkipDetail::WouldReturn {
            node: "worker-a".to_string(),
            key: None,
        },
        SkipReason::NoMetrics => SkipDetail::NoMetrics,
        SkipReason::RolloutInProgress => {
            SkipDetail::RollingOut(crate::plan::judge::rollout::Rollout {
                workload: "shop/Deployment/web".to_string(),
                from: crate::plan::judge::rollout::From::ReplicaSets,
                revisions: vec!["web-1".to_string(), "web-2".to_string()],
            })
        }
        SkipReason::WorkloadUnavailable => SkipDetail::Guard(GuardRefusal::Unavailable {
            workload: "shop/Deployment/web".to_string(),
            unavailable: 1,
            sibling: "shop/web-2".to_string(),
            why: crate::plan::judge::availability::Unavailable::Pending,
            allowance: crate::policy::Allowance::Pods(0),
            allowed: 0,
            pods: 2,
        }),
        SkipReason::Paced => SkipDetail::Guard(GuardRefusal::HistoryFull {
            workload: "shop/Deployment/web".to_string(),
            window: std::time::Duration::from_secs(600),
        }),
        SkipReason::HistoryUnreadable => SkipDetail::Guard(GuardRefusal::HistoryUnreadable(
            crate::snapshot::history::Unreadable {
                object: "Lease kube-system/vsphere-descheduler".to_string(),
                cause: crate::snapshot::history::HistoryDefect::Corrupt("not a list".to_string()),
            },
        )),
    }
}

pub fn eviction(namespace: &str, pod: &str, strategy: PluginKind) -> Eviction {
    Eviction {
        namespace: namespace.to_string(),
        pod: pod.to_string(),
        node: "worker-a".to_string(),
        host: None,
        strategy,
        profile: "default".to_string(),
        reason: shares_host_with("shop/web-2"),
        fits_on: None,
        uid: None,
        grace_period_seconds: None,
        depends_on_labels_of: Vec::new(),
        landing: None,
        paced_as: None,
    }
}

/// A policy with one profile running the given strategies (deschedule ones first, as upstream).
pub fn policy(strategies: Vec<Strategy>) -> Policy {
    policy_with(EvictorArgs::default(), strategies)
}

pub fn policy_with(evictor: EvictorArgs, strategies: Vec<Strategy>) -> Policy {
    let (deschedule, balance) = strategies
        .into_iter()
        .partition(|s| s.kind().extension_point() == ExtensionPoint::Deschedule);
    Policy {
        cluster_name: Some("k8s".to_string()),
        node_selector: None,
        limits: Default::default(),
        profiles: vec![Profile {
            name: "test".to_string(),
            evictor,
            deschedule,
            balance,
        }],
        vsphere: VsphereSettings {
            availability: ungated(),
            ..VsphereSettings::default()
        },
        ..Policy::default()
    }
}

/// No availability gate and no pacing: what upstream does, for tests of a plugin's own
/// decisions (the gate and pacing have theirs, with [`Availability::default`]).
pub fn ungated() -> Availability {
    Availability {
        max_unavailable_per_workload: Allowance::Percent(100),
        pacing: Pacing {
            max_evictions_per_workload: 0,
            ..Pacing::default()
        },
    }
}

pub fn anti_affinity() -> Strategy {
    Strategy::InterPodAntiAffinity(AntiAffinityArgs::default())
}

pub fn spread() -> Strategy {
    Strategy::TopologySpread(TopologySpreadArgs::default())
}

pub fn duplicates() -> Strategy {
    Strategy::Duplicates(DuplicatesArgs::default())
}

/// `namespace/pod` of every eviction, in order.
pub fn evicted(plan: &crate::plan::Plan) -> Vec<String> {
    plan.evictions
        .iter()
        .map(|e| format!("{}/{}", e.namespace, e.pod))
        .collect()
}

/// `(namespace/pod, reason)` of every skip.
pub fn skipped(plan: &crate::plan::Plan) -> Vec<(String, &'static str)> {
    plan.skipped
        .iter()
        .map(|s| (format!("{}/{}", s.namespace, s.pod), s.reason.as_str()))
        .collect()
}

/// Three hosts with one node each: the seed lab.
pub fn three_hosts() -> Lab {
    Lab::new()
        .host("esxi-1")
        .host("esxi-2")
        .host("esxi-3")
        .node("w1", "esxi-1")
        .node("w2", "esxi-2")
        .node("w3", "esxi-3")
}

/// Two hosts with one node each.
pub fn two_hosts() -> Lab {
    Lab::new()
        .host("esxi-1")
        .host("esxi-2")
        .node("w1", "esxi-1")
        .node("w2", "esxi-2")
}

/// The seed lab after a DRS move: w2's VM went from esxi-2 onto esxi-1, next to w1, and its host
/// label still says esxi-2, so the plan relabels it.
pub fn moved_worker() -> Lab {
    Lab::new()
        .host("esxi-1")
        .host("esxi-2")
        .host("esxi-3")
        .node("w1", "esxi-1")
        .node("w2", "esxi-1")
        .node("w3", "esxi-3")
        .label("w2", HOST, "esxi-2")
}

/// Two hosts, three nodes: w1 and w2 share esxi-1, w3 is alone on esxi-2.
pub fn crowded() -> Lab {
    Lab::new()
        .host("esxi-1")
        .host("esxi-2")
        .node("w1", "esxi-1")
        .node("w2", "esxi-1")
        .node("w3", "esxi-2")
}

/// Four hosts, five nodes: w1 and w2 share esxi-1, w3, w4 and w5 have esxi-2, esxi-3 and esxi-4
/// to themselves.
pub fn four_hosts_one_shared() -> Lab {
    Lab::new()
        .host("esxi-1")
        .host("esxi-2")
        .host("esxi-3")
        .host("esxi-4")
        .node("w1", "esxi-1")
        .node("w2", "esxi-1")
        .node("w3", "esxi-2")
        .node("w4", "esxi-3")
        .node("w5", "esxi-4")
}

/// A web replica that must not share an ESXi host with another, `age` minutes old.
pub fn web(name: &str, node: &str, age: i64) -> PodBuilder {
    pod(&format!("shop/{name}"))
        .app("web")
        .on(node)
        .anti_affinity(HOST)
        .age_minutes(age)
}

/// `policy` with sites read from the DRS host groups `site-a` and `site-b`, and the site label.
pub fn with_sites(mut policy: Policy) -> Policy {
    let groups = vec!["site-a".to_string(), "site-b".to_string()];
    policy.vsphere.sites = Some(SiteSettings {
        source: SiteSource::HostGroups(HostGroupSelection::Named(groups)),
        position: None,
    });
    policy.vsphere.labels.site = Some(SITE.to_string());
    policy
}

/// A stretched cluster: hosts esxi-a1, esxi-a2 in DRS host group `site-a`, esxi-b1, esxi-b2 in
/// `site-b`; one node per host (w1 to w4), each labelled with its site as the last run left it.
pub fn stretched() -> Lab {
    Lab::new()
        .host("esxi-a1")
        .host("esxi-a2")
        .host("esxi-b1")
        .host("esxi-b2")
        .host_group("site-a", &["esxi-a1", "esxi-a2"])
        .host_group("site-b", &["esxi-b1", "esxi-b2"])
        .node("w1", "esxi-a1")
        .node("w2", "esxi-a2")
        .node("w3", "esxi-b1")
        .node("w4", "esxi-b2")
        .label("w1", SITE, "site-a")
        .label("w2", SITE, "site-a")
        .label("w3", SITE, "site-b")
        .label("w4", SITE, "site-b")
}

/// [`stretched`] after DRS (or HA) moved w3's VM onto esxi-a2 in site-a: its host and site
/// labels still say esxi-b1 and site-b.
pub fn moved_across_sites() -> Lab {
    stretched().with(|snapshot| {
        let cluster = &mut snapshot.inventory.as_mut().expect("inventory").clusters[0];
        let vm = cluster
            .vms
            .iter_mut()
            .find(|vm| vm.name == "w3")
            .expect("w3");
        vm.host = "esxi-a2".to_string();
    })
}

/// Ties the VMs to a host group by a VM/Host rule (`must`: mandatory), through a VM group of
/// the rule's name.
pub fn vm_host_rule(lab: Lab, rule: &str, must: bool, host_group: &str, vms: &[&str]) -> Lab {
    lab.with(|s| {
        let cluster = &mut s.inventory.as_mut().expect("inventory").clusters[0];
        cluster.vm_groups.push(crate::inventory::VmGroup {
            name: format!("{rule}-vms"),
            vms: vms.iter().map(|v| v.to_string()).collect(),
            vm_ids: Vec::new(),
        });
        cluster.vm_host_rules.push(crate::inventory::VmHostRule {
            name: rule.to_string(),
            key: None,
            enabled: true,
            mandatory: must,
            vm_group: format!("{rule}-vms"),
            affine_host_group: Some(host_group.to_string()),
            anti_affine_host_group: None,
        });
    })
}
