//! The top level of `descheduler/v1alpha2` files and of our `vsphere-descheduler.io/v1alpha1`,
//! which is v1alpha2 plus `clusterName` and `vsphere:`.
//!
//! Upstream ignores unknown top-level keys (so `preEvictionFilter:` or a misspelt limit silently
//! does nothing); here they are problems, in both formats.

use super::decode::{Decoder, Fields, index};
use super::profiles::profiles;
use super::selector::selector_string;
use super::vsphere::vsphere;
use super::yaml::{Value, YamlNode};
use super::{Limits, Policy, Profile, Strategy, VsphereSettings};
use crate::policy::rule::Rule;

/// The apiVersion of our format.
pub(super) const VSPHERE_API_VERSION: &str = "vsphere-descheduler.io/v1alpha1";
/// The apiVersion of upstream's current format.
pub(super) const UPSTREAM_API_VERSION: &str = "descheduler/v1alpha2";

const UPSTREAM_FIELDS: [&str; 11] = [
    "apiVersion",
    "kind",
    "profiles",
    "nodeSelector",
    "maxNoOfPodsToEvictPerNode",
    "maxNoOfPodsToEvictPerNamespace",
    "maxNoOfPodsToEvictTotal",
    "evictionFailureEventNotification",
    "gracePeriodSeconds",
    "metricsCollector",
    "metricsProviders",
];
/// Fields only our format has.
const VSPHERE_ONLY_FIELDS: [&str; 2] = ["clusterName", "vsphere"];
/// Our format's limit of evictions per controller owner; upstream has no such field.
pub(super) const PER_WORKLOAD_LIMIT: &str = "maxNoOfPodsToEvictPerWorkload";

/// The problem with our per-workload limit in an upstream file.
pub(super) fn per_workload_limit_elsewhere(api_version: &str) -> String {
    format!(
        "{PER_WORKLOAD_LIMIT} is only valid with apiVersion {VSPHERE_API_VERSION} (kind \
         DeschedulerPolicy); {api_version} has no per-workload limit"
    )
}

/// Which of the two v1alpha2-shaped formats a file uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Flavor {
    /// `vsphere-descheduler.io/v1alpha1`.
    Vsphere,
    /// `descheduler/v1alpha2`, as upstream writes it.
    Upstream,
}

/// Decodes a v1alpha2-shaped document (apiVersion and kind already checked).
pub(super) fn decode(d: &mut Decoder, root: &YamlNode, flavor: Flavor) -> Policy {
    let mut valid: Vec<&str> = UPSTREAM_FIELDS.to_vec();
    if flavor == Flavor::Vsphere {
        // Beside the other limits, so the list of valid fields reads in order.
        let after_limits = valid
            .iter()
            .position(|field| *field == "maxNoOfPodsToEvictTotal")
            .expect("a limit field")
            + 1;
        valid.insert(after_limits, PER_WORKLOAD_LIMIT);
        valid.extend(VSPHERE_ONLY_FIELDS);
    }
    let hint = |name: &str| match flavor {
        Flavor::Upstream if VSPHERE_ONLY_FIELDS.contains(&name) => Some(format!(
            "{name} is only valid with apiVersion {VSPHERE_API_VERSION}; with \
             {UPSTREAM_API_VERSION}, vSphere settings come from flags and environment"
        )),
        Flavor::Upstream if name == PER_WORKLOAD_LIMIT => {
            Some(per_workload_limit_elsewhere(UPSTREAM_API_VERSION))
        }
        _ => None,
    };
    let Some(top) = d.fields_with_hint(root, "", &valid, hint) else {
        return Policy::default();
    };

    let (cluster_name, vsphere) = match flavor {
        Flavor::Vsphere => vsphere(d, &top),
        Flavor::Upstream => (None, upstream_vsphere_settings()),
    };
    let grace_period_seconds = top.integer::<i64>(d, "gracePeriodSeconds");
    if let (Some(seconds), Some(node)) = (grace_period_seconds, top.get("gracePeriodSeconds"))
        && seconds < 0
    {
        d.problem_at(node, "gracePeriodSeconds", "must not be negative");
    }
    let collection = metrics(d, &top);
    let profiles = profiles(d, top.get("profiles"), "profiles");
    check_metrics_use(d, &top, &profiles, collection);
    Policy {
        cluster_name,
        node_selector: selector_string(d, top.get("nodeSelector"), "nodeSelector"),
        limits: limits(d, &top),
        profiles,
        vsphere,
        eviction_failure_events: top
            .bool(d, "evictionFailureEventNotification")
            .unwrap_or(false),
        grace_period_seconds: grace_period_seconds.filter(|seconds| *seconds >= 0),
    }
}

/// The vSphere settings of an upstream file, which has none: vCenter details come from flags
/// and the environment, and DRS rule sync is off because it needs a cluster name, which only the
/// command line can supply for such a file.
pub(super) fn upstream_vsphere_settings() -> VsphereSettings {
    let mut settings = VsphereSettings::default();
    settings.drs_rules.enabled = false;
    settings
}

/// `maxNoOfPodsToEvict{PerNode,PerNamespace,Total,PerWorkload}`, shared with
/// `descheduler/v1alpha1`. Only our format admits the per-workload field, so in the others it is
/// never present here (it was reported as a problem).
pub(super) fn limits(d: &mut Decoder, top: &Fields<'_>) -> Limits {
    Limits {
        per_node: top.integer(d, "maxNoOfPodsToEvictPerNode"),
        per_namespace: top.integer(d, "maxNoOfPodsToEvictPerNamespace"),
        total: top.integer(d, "maxNoOfPodsToEvictTotal"),
        per_workload: top.integer(d, PER_WORKLOAD_LIMIT),
    }
}

/// Which metrics sources the top level turns on.
#[derive(Clone, Copy, Debug, Default)]
struct MetricsCollection {
    /// `metricsCollector.enabled` or a `KubernetesMetrics` provider: metrics.k8s.io is read.
    kubernetes_metrics: bool,
}

/// `metricsCollector` and `metricsProviders`, checked as upstream checks them.
fn metrics(d: &mut Decoder, top: &Fields<'_>) -> MetricsCollection {
    let mut collector_enabled = false;
    if let Some(node) = top.get("metricsCollector") {
        let path = top.path("metricsCollector");
        if let Some(fields) = d.fields(node, &path, &["enabled"]) {
            collector_enabled = fields.bool(d, "enabled").unwrap_or(false);
        }
    }
    let path = top.path("metricsProviders");
    let providers = top.list(d, "metricsProviders");
    let mut sources: Vec<String> = Vec::new();
    for (i, provider) in providers.iter().enumerate() {
        let item_path = index(&path, i);
        let Some(fields) = d.fields(provider, &item_path, &["source", "prometheus"]) else {
            continue;
        };
        let source = match fields.get("source") {
            Some(node) => d.choice(
                node,
                &fields.path("source"),
                "metrics source",
                &["KubernetesMetrics", "Prometheus"],
            ),
            None => {
                d.problem_as(
                    Rule::MissingField,
                    fields.position,
                    &fields.path("source"),
                    "required (KubernetesMetrics or Prometheus)",
                );
                None
            }
        };
        if let Some(source) = source {
            if sources.contains(&source) {
                d.problem_as(
                    Rule::Duplicate,
                    fields.position,
                    &fields.path("source"),
                    format!("metrics source {source} is listed twice"),
                );
            } else if source == "KubernetesMetrics" && collector_enabled {
                d.problem_as(
                    Rule::Conflict,
                    fields.position,
                    &fields.path("source"),
                    "KubernetesMetrics cannot be combined with metricsCollector.enabled (as \
                     upstream)",
                );
            }
            sources.push(source);
        }
        if let Some(prometheus) = fields.get("prometheus") {
            prometheus_settings(d, prometheus, &fields.path("prometheus"));
        }
    }
    MetricsCollection {
        kubernetes_metrics: collector_enabled || sources.iter().any(|s| s == "KubernetesMetrics"),
    }
}

/// A plugin reading actual usage needs the top level to turn metrics.k8s.io on (upstream
/// refuses to build it otherwise); metrics turned on that no plugin reads are only noted.
fn check_metrics_use(
    d: &mut Decoder,
    top: &Fields<'_>,
    profiles: &[Profile],
    collection: MetricsCollection,
) {
    let readers: Vec<&Profile> = profiles
        .iter()
        .filter(|p| p.balance.iter().any(Strategy::reads_metrics))
        .collect();
    if readers.is_empty() {
        for field in ["metricsCollector", "metricsProviders"] {
            let Some(node) = top.get(field).filter(|n| n.value != Value::Null) else {
                continue;
            };
            // At the first provider, where a reader's eye lands.
            let at = match &node.value {
                Value::Seq(items) => items.first().unwrap_or(node),
                _ => node,
            };
            d.warning_at(
                at,
                &top.path(field),
                format!(
                    "{field} is ignored: no LowNodeUtilization sets metricsUtilization to read \
                     actual usage"
                ),
            );
        }
    } else if !collection.kubernetes_metrics {
        for profile in readers {
            d.problem_as(
                Rule::MissingField,
                top.position,
                "profiles",
                format!(
                    "profile {}: LowNodeUtilization reads actual usage (metricsUtilization), \
                     which needs metricsProviders: [{{source: KubernetesMetrics}}] at the top \
                     level (as upstream)",
                    profile.name
                ),
            );
        }
    }
}

/// `prometheus: {url, authToken: {secretReference: {namespace, name}}}`; shape only.
fn prometheus_settings(d: &mut Decoder, node: &YamlNode, path: &str) {
    let Some(fields) = d.fields(node, path, &["url", "authToken"]) else {
        return;
    };
    let _ = fields.string(d, "url");
    let Some(token) = fields.get("authToken") else {
        return;
    };
    let Some(token) = d.fields(token, &fields.path("authToken"), &["secretReference"]) else {
        return;
    };
    let Some(reference) = token.get("secretReference") else {
        return;
    };
    if let Some(reference) = d.fields(
        reference,
        &token.path("secretReference"),
        &["namespace", "name"],
    ) {
        let _ = reference.string(d, "namespace");
        let _ = reference.string(d, "name");
    }
}

#[cfg(test)]
mod tests {
    use kube::core::Expression;

    use super::*;
    use crate::policy::plugins::{
        AntiAffinityArgs, DuplicatesArgs, PodLifeTimeArgs, TopologySpreadArgs,
    };
    use crate::policy::testing::{OURS, drs_rules_off, load, problem, problems, warnings};
    use crate::policy::{
        DrsRuleSettings, EvictorArgs, LabelKeys, Namespaces, PriorityThreshold, Profile,
        Protections, Strategy, parse_selector,
    };

    #[test]
    fn our_format_converts_to_the_expected_policy() {
        let text = "\
apiVersion: vsphere-descheduler.io/v1alpha1
kind: DeschedulerPolicy
clusterName: prod-east
nodeSelector: node-role.kubernetes.io/worker
maxNoOfPodsToEvictPerNode: 1
maxNoOfPodsToEvictPerNamespace: 2
maxNoOfPodsToEvictTotal: 3
maxNoOfPodsToEvictPerWorkload: 4
evictionFailureEventNotification: true
gracePeriodSeconds: 30
vsphere:
  server: vcenter.example.com
  insecureSkipVerify: true
  caFile: /etc/ca.pem
  datacenters: [dc1]
  clusters: [c1, c2]
  labels: {host: example.com/esxi, cluster: example.com/cluster, datacenter: \"\"}
  drsRules: {enabled: true, namePrefix: k8s}
profiles:
  - name: availability
    pluginConfig:
      - name: DefaultEvictor
        args: {nodeFit: false, minReplicas: 2}
    plugins:
      deschedule:
        enabled: [RemovePodsViolatingInterPodAntiAffinity]
      balance:
        enabled: [RemoveDuplicates, RemovePodsViolatingTopologySpreadConstraint]
";
        let loaded = load(text);
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        let expected = Policy {
            cluster_name: Some("prod-east".into()),
            node_selector: Some(Expression::Exists("node-role.kubernetes.io/worker".into()).into()),
            limits: Limits {
                per_node: Some(1),
                per_namespace: Some(2),
                total: Some(3),
                per_workload: Some(4),
            },
            profiles: vec![Profile {
                name: "availability".into(),
                evictor: EvictorArgs {
                    node_fit: false,
                    min_replicas: 2,
                    ..EvictorArgs::default()
                },
                deschedule: vec![Strategy::InterPodAntiAffinity(AntiAffinityArgs::default())],
                balance: vec![
                    Strategy::Duplicates(DuplicatesArgs::default()),
                    Strategy::TopologySpread(TopologySpreadArgs::default()),
                ],
            }],
            vsphere: VsphereSettings {
                server: Some("vcenter.example.com".into()),
                insecure_skip_verify: true,
                ca_file: Some("/etc/ca.pem".into()),
                datacenters: vec!["dc1".into()],
                clusters: vec!["c1".into(), "c2".into()],
                labels: LabelKeys {
                    host: "example.com/esxi".into(),
                    cluster: Some("example.com/cluster".into()),
                    datacenter: None,
                    site: None,
                },
                drs_rules: DrsRuleSettings {
                    enabled: true,
                    name_prefix: "k8s".into(),
                    // The default follows the custom host label key.
                    topology_keys: vec![
                        "example.com/esxi".into(),
                        "kubernetes.io/hostname".into(),
                        "node.cluster.x-k8s.io/esxi-host".into(),
                    ],
                    node_groups: Vec::new(),
                },
                availability: Default::default(),
                ..VsphereSettings::default()
            },
            eviction_failure_events: true,
            grace_period_seconds: Some(30),
        };
        assert_eq!(loaded.policy, expected);
    }

    #[test]
    fn our_format_with_only_a_cluster_name_takes_every_default() {
        let policy = load(OURS).policy;
        assert_eq!(
            policy,
            Policy {
                cluster_name: Some("test".into()),
                vsphere: VsphereSettings::default(),
                ..Policy::default()
            }
        );
        assert!(policy.vsphere.drs_rules.enabled);
    }

    #[test]
    fn upstream_v1alpha2_converts_with_drs_rule_sync_off() {
        let text = "\
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: \"env in (prod), !legacy\"
maxNoOfPodsToEvictTotal: 10
profiles:
  - name: host-balance
    pluginConfig:
      - name: DefaultEvictor
        args:
          podProtections:
            defaultDisabled: [PodsWithLocalStorage]
            extraEnabled: [PodsWithoutPDB]
          minPodAge: 5m
          priorityThreshold: {value: 100000}
      - name: RemovePodsViolatingInterPodAntiAffinity
        args:
          namespaces: {exclude: [kube-system]}
      - name: RemovePodsViolatingTopologySpreadConstraint
        args:
          constraints: [DoNotSchedule, ScheduleAnyway]
          topologyBalanceNodeFit: false
      - name: RemoveDuplicates
        args:
          excludeOwnerKinds: [Job]
    plugins:
      filter:
        enabled: [DefaultEvictor]
      deschedule:
        enabled: [RemovePodsViolatingInterPodAntiAffinity]
      balance:
        enabled: [RemovePodsViolatingTopologySpreadConstraint, RemoveDuplicates]
";
        let policy = load(text).policy;
        let expected = Policy {
            cluster_name: None,
            node_selector: Some(
                parse_selector("env in (prod),!legacy")
                    .expect("valid")
                    .into(),
            ),
            limits: Limits {
                total: Some(10),
                ..Limits::default()
            },
            profiles: vec![Profile {
                name: "host-balance".into(),
                evictor: EvictorArgs {
                    priority_threshold: PriorityThreshold::Value(100_000),
                    min_pod_age: Some(std::time::Duration::from_secs(300)),
                    protections: Protections {
                        pods_with_local_storage: false,
                        pods_without_pdb: true,
                        ..Protections::default()
                    },
                    ..EvictorArgs::default()
                },
                deschedule: vec![Strategy::InterPodAntiAffinity(AntiAffinityArgs {
                    namespaces: Namespaces {
                        include: vec![],
                        exclude: vec!["kube-system".into()],
                    },
                    label_selector: None,
                    include_soft_constraints: false,
                })],
                balance: vec![
                    Strategy::TopologySpread(TopologySpreadArgs {
                        schedule_anyway: true,
                        topology_balance_node_fit: false,
                        ..TopologySpreadArgs::default()
                    }),
                    Strategy::Duplicates(DuplicatesArgs {
                        exclude_owner_kinds: vec!["Job".into()],
                        ..DuplicatesArgs::default()
                    }),
                ],
            }],
            vsphere: drs_rules_off(),
            ..Policy::default()
        };
        assert_eq!(policy, expected);
    }

    #[test]
    fn nulls_are_absent_fields_in_every_format() {
        let text = "\
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: null
maxNoOfPodsToEvictPerNode: null
gracePeriodSeconds: ~
metricsCollector: null
profiles:
  - name: p
    pluginConfig:
      - name: DefaultEvictor
        args: null
      - name: RemoveDuplicates
        args: {namespaces: null, excludeOwnerKinds: null}
    plugins:
      balance: {enabled: [RemoveDuplicates], disabled: null}
      deschedule: null
";
        let policy = load(text).policy;
        assert_eq!(policy.node_selector, None);
        assert_eq!(policy.limits, Limits::default());
        assert_eq!(policy.profiles[0].evictor, EvictorArgs::default());
        assert_eq!(
            policy.profiles[0].balance,
            [Strategy::Duplicates(DuplicatesArgs::default())]
        );
    }

    /// Issue 19: generators (OpenShift's operator among them) write every optional field, absent
    /// ones as `null`, an unset selector as `""`, an unset PriorityClass name as `""` and an
    /// unused namespace list as `[]`; upstream reads each as absent, and so do we.
    #[test]
    fn generator_style_nulls_and_empty_values_are_absent() {
        let text = "\
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: \"\"
profiles:
  - name: p
    pluginConfig:
      - name: DefaultEvictor
        args:
          labelSelector: null
          minPodAge: null
          nodeSelector: \"\"
          priorityThreshold: {name: low-priority, value: null}
      - name: PodLifeTime
        args: {maxPodLifeTimeSeconds: 60, states: null, labelSelector: null, namespaces: null}
      - name: RemoveDuplicates
        args: {namespaces: {exclude: [], include: [shop]}, excludeOwnerKinds: null}
      - name: LowNodeUtilization
        args:
          thresholds: {cpu: 20}
          targetThresholds: {cpu: 50}
          evictableNamespaces: {exclude: [kube-system], include: null}
    plugins:
      deschedule: {enabled: [PodLifeTime], disabled: null}
      balance: {enabled: [RemoveDuplicates, LowNodeUtilization], disabled: null}
  - name: q
    pluginConfig:
      - name: DefaultEvictor
        args: {priorityThreshold: {name: \"\", value: 1000}}
    plugins:
      balance: {enabled: [RemoveDuplicates]}
";
        let loaded = load(text);
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        let policy = loaded.policy;
        assert_eq!(policy.node_selector, None);
        let profile = &policy.profiles[0];
        assert_eq!(
            profile.evictor,
            EvictorArgs {
                priority_threshold: PriorityThreshold::Name("low-priority".into()),
                ..EvictorArgs::default()
            }
        );
        assert_eq!(
            profile.deschedule,
            [Strategy::PodLifeTime(PodLifeTimeArgs {
                max_pod_life_time_seconds: Some(60),
                ..PodLifeTimeArgs::default()
            })]
        );
        assert_eq!(
            profile.balance[0],
            Strategy::Duplicates(DuplicatesArgs {
                namespaces: Namespaces {
                    include: vec!["shop".into()],
                    exclude: Vec::new(),
                },
                exclude_owner_kinds: Vec::new(),
            })
        );
        let Strategy::LowNodeUtilization(utilization) = &profile.balance[1] else {
            panic!("expected LowNodeUtilization, got {:?}", profile.balance[1]);
        };
        assert_eq!(utilization.evictable_namespaces.exclude, ["kube-system"]);
        assert!(utilization.evictable_namespaces.include.is_empty());
        assert_eq!(
            policy.profiles[1].evictor.priority_threshold,
            PriorityThreshold::Value(1000)
        );
    }

    #[test]
    fn vsphere_fields_in_an_upstream_file_point_to_our_format() {
        let text = "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nvsphere: {}\n";
        assert_eq!(
            problem(text),
            "policy.yaml:3:1: vsphere: vsphere is only valid with apiVersion \
             vsphere-descheduler.io/v1alpha1; with descheduler/v1alpha2, vSphere settings come \
             from flags and environment"
        );
    }

    #[test]
    fn the_per_workload_limit_is_ours_and_an_upstream_file_is_told_so() {
        let text = "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n\
                    maxNoOfPodsToEvictPerWorkload: 1\n";
        assert_eq!(
            problem(text),
            "policy.yaml:3:1: maxNoOfPodsToEvictPerWorkload: maxNoOfPodsToEvictPerWorkload is \
             only valid with apiVersion vsphere-descheduler.io/v1alpha1 (kind DeschedulerPolicy); \
             descheduler/v1alpha2 has no per-workload limit"
        );
        let text = format!("{OURS}maxNoOfPodsToEvictPerWorkloads: 1\n");
        assert!(
            problem(&text).starts_with(
                "policy.yaml:4:1: maxNoOfPodsToEvictPerWorkloads: unknown field \
                 \"maxNoOfPodsToEvictPerWorkloads\"; did you mean \
                 \"maxNoOfPodsToEvictPerWorkload\"? valid: "
            ),
            "{}",
            problem(&text)
        );
        let text = format!("{OURS}maxNoOfPodsToEvictPerWorkload: -1\n");
        assert_eq!(
            problem(&text),
            "policy.yaml:4:32: maxNoOfPodsToEvictPerWorkload: must not be negative"
        );
    }

    #[test]
    fn unknown_top_level_fields_are_problems_unlike_upstream() {
        let text = "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprometheus: {}\n";
        assert!(
            problem(text)
                .starts_with("policy.yaml:3:1: prometheus: unknown field \"prometheus\"; valid: ")
        );
    }

    #[test]
    fn a_limit_with_a_leading_zero_is_octal_as_the_descheduler_reads_it() {
        let text = format!("{OURS}maxNoOfPodsToEvictTotal: 010\nmaxNoOfPodsToEvictPerNode: 0o17\n");
        let limits = load(&text).policy.limits;
        assert_eq!((limits.total, limits.per_node), (Some(8), Some(15)));
    }

    #[test]
    fn limits_must_be_non_negative_integers() {
        let text = format!(
            "{OURS}maxNoOfPodsToEvictPerNode: -1\nmaxNoOfPodsToEvictTotal: \"3\"\ngracePeriodSeconds: -5\n"
        );
        assert_eq!(
            problems(&text),
            [
                "policy.yaml:4:28: maxNoOfPodsToEvictPerNode: must not be negative",
                "policy.yaml:5:26: maxNoOfPodsToEvictTotal: expected an integer, found a string",
                "policy.yaml:6:21: gracePeriodSeconds: must not be negative",
            ]
        );
    }

    #[test]
    fn metrics_settings_are_checked_then_ignored_with_a_warning() {
        let text = format!(
            "{OURS}metricsProviders:\n  - source: Prometheus\n    prometheus:\n      url: \
             https://prometheus:9090\n      authToken: {{secretReference: {{namespace: ns, name: \
             token}}}}\n"
        );
        assert_eq!(
            warnings(&text),
            [
                "policy.yaml:5:5: metricsProviders: metricsProviders is ignored: no \
                 LowNodeUtilization sets metricsUtilization to read actual usage"
            ]
        );
        let text = format!(
            "{OURS}metricsCollector: {{enabled: true}}\nmetricsProviders:\n  - source: \
             KubernetesMetrics\n  - source: Graphite\n"
        );
        assert_eq!(
            problems(&text),
            [
                "policy.yaml:6:5: metricsProviders[0].source: KubernetesMetrics cannot be \
                 combined with metricsCollector.enabled (as upstream)",
                "policy.yaml:7:13: metricsProviders[1].source: unknown metrics source \
                 \"Graphite\"; valid: KubernetesMetrics, Prometheus",
            ]
        );
    }
}
