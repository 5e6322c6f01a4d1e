//! The vSphere adapter against the real vCenter simulator (govmomi's vcsim, built from
//! `tests/support/vcsim/main.go`): observation, DRS moves, rule changes, sessions, faults, TLS
//! and timeouts. Nothing on our side is faked.

mod support;

use std::time::{Duration, Instant};

use support::vcsim::{self, Options, Template, Vcsim};
use vsphere_descheduler::inventory::{
    AdmissionControl, Cluster, ConnectionState, DrsConfig, HaConfig, Host, Inventory,
    MaintenanceMode, RestartPriority, Rule,
};
use vsphere_descheduler::vsphere::{Client, ConnectionConfig, Credentials, Error, RuleWrite};

fn lab() -> Inventory {
    vcsim::load_inventory("vsphere/lab-inventory.yaml")
}

/// The inventory as a fixture states it: observation gives every cluster, datacenter, host and
/// VM its managed object id, and every rule its key, uuid and VM ids, which vCenter assigns.
fn as_built(mut inventory: Inventory) -> Inventory {
    for cluster in &mut inventory.clusters {
        assert!(
            cluster.id.is_some() && cluster.datacenter_id.is_some(),
            "{cluster:?}"
        );
        (cluster.id, cluster.datacenter_id) = (None, None);
        for host in &mut cluster.hosts {
            assert!(host.id.take().is_some(), "{host:?}");
        }
        for vm in &mut cluster.vms {
            assert!(vm.id.take().is_some(), "{vm:?}");
        }
        for rule in &mut cluster.rules {
            assert!(rule.key.take().is_some(), "{rule:?}");
            assert_eq!(rule.vm_ids.len(), rule.vms.len(), "{rule:?}");
            rule.vm_ids.clear();
            rule.uuid = None;
        }
    }
    inventory
}

fn cluster_of<'a>(inventory: &'a Inventory, cluster: &str) -> &'a Cluster {
    inventory
        .clusters
        .iter()
        .find(|c| c.name == cluster)
        .unwrap_or_else(|| panic!("cluster {cluster} observed"))
}

/// The managed object id of the lab cluster, as a rule change addresses it.
fn lab_id(inventory: &Inventory) -> String {
    cluster_of(inventory, LAB)
        .id
        .clone()
        .expect("an observed id")
}

/// The managed object ids of the named VMs of the lab cluster.
fn vm_ids(inventory: &Inventory, vms: &[&str]) -> Vec<String> {
    let cluster = cluster_of(inventory, LAB);
    vms.iter()
        .map(|name| {
            let vm = cluster.vms.iter().find(|vm| vm.name == *name);
            vm.and_then(|vm| vm.id.clone())
                .unwrap_or_else(|| panic!("vm {name} observed with its id"))
        })
        .collect()
}

fn rules_of<'a>(inventory: &'a Inventory, cluster: &str) -> &'a [Rule] {
    &cluster_of(inventory, cluster).rules
}

fn rule<'a>(inventory: &'a Inventory, cluster: &str, name: &str) -> Option<&'a Rule> {
    rules_of(inventory, cluster).iter().find(|r| r.name == name)
}

fn names(vms: &[&str]) -> Vec<String> {
    vms.iter().map(|vm| vm.to_string()).collect()
}

const LAB: &str = "wcp-cluster-41";
const OWNED_PREFIX: &str = "vsphere-descheduler:lab:";

/// Every rule of the cluster that this Kubernetes cluster does not own.
fn foreign_rules(inventory: &Inventory) -> Vec<Rule> {
    rules_of(inventory, LAB)
        .iter()
        .filter(|r| !r.name.starts_with(OWNED_PREFIX))
        .cloned()
        .collect()
}

#[tokio::test]
async fn observation_returns_the_inventory_the_simulator_was_built_from() {
    let expected = lab();
    let template = Template {
        name: "ubuntu-2404-template".to_string(),
        cluster: LAB.to_string(),
        host: "lab-wcp-esxi-42.go-lab.jp".to_string(),
    };
    let options = Options {
        templates: vec![template],
        ..Options::default()
    };
    let sim = Vcsim::start_with(&expected, &options);
    let mut client = Client::connect(&sim.connection_config())
        .await
        .expect("connect");

    let observed = client.observe(&[], &[]).await.expect("observe");
    client.logout().await;

    let calls = sim.calls();
    assert_eq!(
        calls.get("RetrievePropertiesEx"),
        Some(&1),
        "one pass: {calls:?}"
    );
    assert_eq!(
        calls.get("DestroyView"),
        calls.get("CreateContainerView"),
        "no view is left behind"
    );
    assert_eq!(calls.get("Logout"), Some(&1));
    assert!(
        observed
            .clusters
            .iter()
            .flat_map(|c| &c.rules)
            .all(|r| r.key.is_some()),
        "every observed rule has its key"
    );
    // The fixture lists clusters by datacenter, hosts and VMs by name, like observation.
    assert_eq!(as_built(observed), expected);
}

#[tokio::test]
async fn paged_results_are_continued_until_the_last_page() {
    let expected = lab();
    let options = Options {
        page_size: Some(4),
        ..Options::default()
    };
    let sim = Vcsim::start_with(&expected, &options);
    let mut client = Client::connect(&sim.connection_config())
        .await
        .expect("connect");

    let observed = client.observe(&[], &[]).await.expect("observe");
    client.logout().await;

    // 8 VMs, 6 hosts, 2 clusters and the folders and datacenters above them: several pages.
    assert!(
        sim.calls_of("ContinueRetrievePropertiesEx") >= 4,
        "{:?}",
        sim.calls()
    );
    assert_eq!(sim.calls_of("CancelRetrievePropertiesEx"), 0);
    assert_eq!(as_built(observed), expected);
}

#[tokio::test]
async fn observation_is_limited_to_the_given_datacenters_and_clusters() {
    let sim = Vcsim::start(&lab());
    let mut client = Client::connect(&sim.connection_config())
        .await
        .expect("connect");

    let by_datacenter = client
        .observe(&["dc-2".to_string()], &[])
        .await
        .expect("observe dc-2");
    let by_cluster = client
        .observe(&[], &[LAB.to_string()])
        .await
        .expect("observe the lab cluster");
    let nothing = client
        .observe(&["dc-2".to_string()], &[LAB.to_string()])
        .await
        .expect("observe nothing");
    client.logout().await;

    let cluster_names = |inventory: &Inventory| -> Vec<String> {
        inventory.clusters.iter().map(|c| c.name.clone()).collect()
    };
    assert_eq!(cluster_names(&by_datacenter), ["edge"]);
    assert_eq!(cluster_names(&by_cluster), [LAB]);
    assert!(nothing.clusters.is_empty());
}

#[tokio::test]
async fn a_vm_moved_by_relocation_is_observed_on_its_new_host() {
    let sim = Vcsim::start(&lab());
    let mut client = Client::connect(&sim.connection_config())
        .await
        .expect("connect");
    let host_of = |inventory: &Inventory, vm: &str| -> String {
        inventory
            .clusters
            .iter()
            .flat_map(|c| &c.vms)
            .find(|v| v.name == vm)
            .map(|v| v.host.clone())
            .unwrap_or_else(|| panic!("vm {vm} observed"))
    };

    let before = client.observe(&[], &[]).await.expect("observe");
    assert_eq!(host_of(&before, "worker-c"), "lab-wcp-esxi-43.go-lab.jp");

    sim.move_vm("worker-c", "lab-wcp-esxi-41.go-lab.jp");
    let after = client.observe(&[], &[]).await.expect("observe again");
    client.logout().await;

    assert_eq!(host_of(&after, "worker-c"), "lab-wcp-esxi-41.go-lab.jp");
    assert_eq!(host_of(&after, "worker-a"), "lab-wcp-esxi-41.go-lab.jp");
}

#[tokio::test]
async fn owned_rules_are_created_updated_and_deleted_while_other_rules_survive() {
    let sim = Vcsim::start(&lab());
    let mut client = Client::connect(&sim.connection_config())
        .await
        .expect("connect");
    let initial = client.observe(&[], &[]).await.expect("observe");
    let untouchable = foreign_rules(&initial);
    assert_eq!(
        untouchable.len(),
        4,
        "user, other cluster's, affinity and system rules"
    );
    let web = "vsphere-descheduler:lab:shop:Deployment/web";
    let api = "vsphere-descheduler:lab:shop:Deployment/api";

    // Create.
    client
        .apply_rule_changes(
            &lab_id(&initial),
            &[RuleWrite::Add {
                name: web.to_string(),
                vms: vm_ids(&initial, &["worker-b", "worker-a"]),
            }],
        )
        .await
        .expect("add");
    let created = client.observe(&[], &[]).await.expect("observe");
    let created_rule = rule(&created, LAB, web).expect("created rule").clone();
    assert_eq!(created_rule.vms, names(&["worker-a", "worker-b"]));
    assert!(created_rule.enabled && !created_rule.mandatory && created_rule.user_created);
    assert_eq!(foreign_rules(&created), untouchable);

    // Update one rule, remove another, in one reconfiguration.
    let web_key = created_rule.key.expect("key");
    let api_key = rule(&created, LAB, api)
        .and_then(|r| r.key)
        .expect("api key");
    let reconfigures = sim.calls_of("ReconfigureComputeResource_Task");
    client
        .apply_rule_changes(
            &lab_id(&created),
            &[
                RuleWrite::Edit {
                    key: web_key,
                    name: web.to_string(),
                    rule_uuid: created_rule.uuid.clone(),
                    vms: vm_ids(&created, &["worker-a", "worker-b", "worker-c"]),
                },
                RuleWrite::Remove { key: api_key },
            ],
        )
        .await
        .expect("edit and remove");
    assert_eq!(
        sim.calls_of("ReconfigureComputeResource_Task"),
        reconfigures + 1,
        "all changes of a cluster go in one reconfiguration"
    );
    let updated = client.observe(&[], &[]).await.expect("observe");
    let updated_rule = rule(&updated, LAB, web).expect("updated rule");
    assert_eq!(updated_rule.key, Some(web_key));
    assert_eq!(
        updated_rule.vms,
        names(&["worker-a", "worker-b", "worker-c"])
    );
    assert!(updated_rule.enabled && !updated_rule.mandatory && updated_rule.user_created);
    assert_eq!(
        updated_rule.uuid, created_rule.uuid,
        "the edit kept the rule's uuid"
    );
    assert!(rule(&updated, LAB, api).is_none());
    assert_eq!(foreign_rules(&updated), untouchable);

    // Delete.
    client
        .apply_rule_changes(&lab_id(&updated), &[RuleWrite::Remove { key: web_key }])
        .await
        .expect("remove");
    let deleted = client.observe(&[], &[]).await.expect("observe");
    client.logout().await;
    assert!(rule(&deleted, LAB, web).is_none());
    assert_eq!(foreign_rules(&deleted), untouchable);
    assert_eq!(rules_of(&deleted, LAB).len(), untouchable.len());
}

#[tokio::test]
async fn an_empty_change_list_makes_no_call() {
    let sim = Vcsim::start(&lab());
    let mut client = Client::connect(&sim.connection_config())
        .await
        .expect("connect");
    let observed = client.observe(&[], &[]).await.expect("observe");
    let before = sim.calls();

    client
        .apply_rule_changes(&lab_id(&observed), &[])
        .await
        .expect("nothing to do");

    assert_eq!(sim.calls(), before);
    client.logout().await;
}

#[tokio::test]
async fn a_failed_reconfiguration_task_is_an_error_naming_the_fault() {
    let sim = Vcsim::start(&lab());
    let mut client = Client::connect(&sim.connection_config())
        .await
        .expect("connect");
    let observed = client.observe(&[], &[]).await.expect("observe");

    // vcsim refuses a second rule with an existing name, as a failed task.
    let error = client
        .apply_rule_changes(
            &lab_id(&observed),
            &[RuleWrite::Add {
                name: "user-db-separation".to_string(),
                vms: vm_ids(&observed, &["worker-a", "worker-b"]),
            }],
        )
        .await
        .expect_err("duplicate name");
    client.logout().await;

    assert!(matches!(error, Error::Task { .. }), "{error:?}");
    assert_eq!(
        error.fault().map(|f| f.name.as_str()),
        Some("InvalidArgument")
    );
    assert!(
        error
            .to_string()
            .contains("ReconfigureComputeResource_Task on ClusterComputeResource:"),
        "{error}"
    );
}

#[tokio::test]
async fn an_expired_session_is_renewed_once_and_the_call_retried() {
    let sim = Vcsim::start(&lab());
    let mut client = Client::connect(&sim.connection_config())
        .await
        .expect("connect");
    client.observe(&[], &[]).await.expect("observe");
    let logins = sim.calls_of("Login");

    assert!(sim.terminate_sessions() >= 1);
    let inventory = client
        .observe(&[], &[])
        .await
        .expect("observe after the session ended");

    assert_eq!(sim.calls_of("Login"), logins + 1);
    assert_eq!(as_built(inventory.clone()), lab());

    assert!(sim.terminate_sessions() >= 1);
    client
        .apply_rule_changes(
            &lab_id(&inventory),
            &[RuleWrite::Add {
                name: "vsphere-descheduler:lab:shop:Deployment/web".to_string(),
                vms: vm_ids(&inventory, &["worker-a", "worker-b"]),
            }],
        )
        .await
        .expect("rule change after the session ended");
    assert_eq!(sim.calls_of("Login"), logins + 2);
    client.logout().await;
}

/// A tracing writer that keeps everything logged, to search it afterwards.

#[tokio::test]
async fn a_server_that_is_down_fails_fast() {
    // A port that was just free: nothing listens on it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("free port")
        .port();
    let mut config = ConnectionConfig::new(
        format!("127.0.0.1:{port}"),
        Credentials::new("user", "password"),
    );
    config.timeout = Duration::from_secs(60);

    let started = Instant::now();
    let error = Client::connect(&config).await.expect_err("nothing listens");
    // Refused at once, not waited out to the timeout.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(error, Error::Request { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        format!("RetrieveServiceContent request to vCenter 127.0.0.1:{port} failed")
    );
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_within_the_timeout() {
    // Accepts connections (the kernel does) but never speaks TLS.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("address").port();
    let mut config = ConnectionConfig::new(
        format!("127.0.0.1:{port}"),
        Credentials::new("user", "password"),
    );
    config.timeout = Duration::from_secs(1);

    let started = Instant::now();
    let error = Client::connect(&config).await.expect_err("no answer");
    let elapsed = started.elapsed();
    drop(listener);

    assert!(matches!(error, Error::Timeout { .. }), "{error:?}");
    // Not before the timeout; and well before "hangs" (the slack is for a busy machine).
    assert!(
        elapsed >= Duration::from_secs(1) && elapsed < Duration::from_secs(15),
        "{elapsed:?}"
    );
}

#[tokio::test]
async fn tls_is_verified_by_default_and_fails_closed_without_the_ca() {
    let sim = Vcsim::start(&lab());

    // With the simulator's CA: verified, works (every other test does this too).
    let client = Client::connect(&sim.connection_config())
        .await
        .expect("verified connection");
    client.logout().await;

    // Without it, the certificate is not trusted and nothing is sent past the handshake.
    let mut config = sim.connection_config();
    config.ca_file = None;
    let error = Client::connect(&config)
        .await
        .expect_err("untrusted certificate");
    let text = vsphere_descheduler::error_chain(&error);
    assert!(
        matches!(error, Error::UntrustedCertificate { .. }),
        "{text}"
    );
    assert!(
        text.starts_with("vCenter 127.0.0.1:")
            && text.ends_with(
                " presented a TLS certificate that was refused: it was issued by a CA this tool \
                 does not trust: give that CA's certificate (PEM) with --vsphere-ca-file or the \
                 policy's vsphere.caFile"
            ),
        "{text}"
    );
    assert_eq!(
        sim.calls_of("Login"),
        1,
        "only the verified client logged in"
    );

    // Only when asked, any certificate is accepted.
    config.insecure_skip_verify = true;
    let client = Client::connect(&config)
        .await
        .expect("unverified connection when asked");
    client.logout().await;
}

#[tokio::test]
async fn a_run_that_stopped_waiting_is_told_its_task_was_submitted_not_awaited() {
    let sim = Vcsim::start(&lab());
    let mut client = Client::connect(&sim.connection_config())
        .await
        .expect("connect");
    let observed = client.observe(&[], &[]).await.expect("observe");
    let stop = tokio_util::sync::CancellationToken::new();
    client.stop_waiting_on(stop.clone());
    // Stopped before the task is even polled: the reconfiguration is sent, its wait ends at once.
    stop.cancel();
    let web = "vsphere-descheduler:lab:shop:Deployment/web";
    let error = client
        .apply_rule_changes(
            &lab_id(&observed),
            &[RuleWrite::Add {
                name: web.to_string(),
                vms: vm_ids(&observed, &["worker-a", "worker-b"]),
            }],
        )
        .await
        .expect_err("not awaited");
    assert!(matches!(error, Error::TaskNotAwaited { .. }), "{error:?}");
    assert_eq!(sim.calls_of("ReconfigureComputeResource_Task"), 1);
    // vCenter carried it out on its own.
    let after = client.observe(&[], &[]).await.expect("observe");
    assert!(rule(&after, LAB, web).is_some());
    client.logout().await;
}

/// Two datacenters each holding a cluster `Cluster` with VMs `k8s-worker-1` and `k8s-worker-2`.
fn twins() -> Inventory {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/e2e/twin-clusters/snapshot.yaml");
    vsphere_descheduler::snapshot::load_files(&[path], chrono::Utc::now())
        .expect("the twin-clusters story loads")
        .snapshot
        .inventory
        .expect("with an inventory")
}

#[tokio::test]
async fn same_named_clusters_are_observed_apart_filtered_by_datacenter_and_changed_by_id() {
    let sim = Vcsim::start(&twins());
    let mut client = Client::connect(&sim.connection_config())
        .await
        .expect("connect");
    let observed = client.observe(&[], &[]).await.expect("observe");
    assert_eq!(
        observed.cluster_names(),
        ["dc-east/Cluster", "dc-west/Cluster"]
    );
    let west_only = client
        .observe(&[], &["dc-west/Cluster".to_string()])
        .await
        .expect("observe one");
    let [west] = west_only.clusters.as_slice() else {
        panic!("one cluster: {west_only:?}");
    };
    assert_eq!(west.datacenter, "dc-west");
    assert_eq!(Some(west), observed.clusters.get(1));

    let west_id = west.id.clone().expect("an id");
    let west_vms: Vec<String> = west.vms.iter().filter_map(|vm| vm.id.clone()).collect();
    let name = "vsphere-descheduler:lab:db:StatefulSet/pg";
    client
        .apply_rule_changes(
            &west_id,
            &[RuleWrite::Add {
                name: name.to_string(),
                vms: west_vms.clone(),
            }],
        )
        .await
        .expect("add");
    let after = client.observe(&[], &[]).await.expect("observe");
    client.logout().await;
    assert_eq!(
        after.clusters[0].rules, observed.clusters[0].rules,
        "dc-east untouched"
    );
    let created = after.clusters[1]
        .rules
        .iter()
        .find(|r| r.name == name)
        .expect("created in dc-west");
    assert_eq!(created.vm_ids, west_vms);
    assert_eq!(created.vms, ["k8s-worker-1", "k8s-worker-2"]);
}

/// A cluster of two connected hosts, `<name>-esxi-1` and `<name>-esxi-2`, no VMs, with `ha`.
fn ha_cluster(name: &str, ha: Option<HaConfig>) -> Cluster {
    let host = |n: u32| Host {
        name: format!("{name}-esxi-{n}"),
        id: None,
        connection_state: ConnectionState::Connected,
        in_maintenance_mode: MaintenanceMode::Off,
    };
    Cluster {
        name: name.to_string(),
        datacenter: "dc-ha".to_string(),
        drs: Some(DrsConfig {
            enabled: true,
            default_vm_behavior: "fullyAutomated".to_string(),
        }),
        ha,
        hosts: vec![host(1), host(2)],
        ..Cluster::default()
    }
}

#[tokio::test]
async fn ha_configuration_is_observed_as_the_simulator_was_given_it() {
    let host_failures = HaConfig {
        enabled: true,
        admission_control: Some(AdmissionControl::HostFailures { failover_level: 1 }),
        restart_priority: RestartPriority::High,
        respect_vm_anti_affinity_rules: Some(true),
    };
    // Turned off, HA keeps its settings; observation reports them as they are.
    let disabled = HaConfig {
        enabled: false,
        admission_control: None,
        restart_priority: RestartPriority::Low,
        respect_vm_anti_affinity_rules: None,
    };
    let dedicated = HaConfig {
        enabled: true,
        admission_control: Some(AdmissionControl::DedicatedHosts {
            hosts: vec!["ha-dedicated-esxi-2".to_string()],
        }),
        restart_priority: RestartPriority::Disabled,
        respect_vm_anti_affinity_rules: Some(false),
    };
    let percentages = HaConfig {
        enabled: true,
        admission_control: Some(AdmissionControl::ResourcePercentage {
            cpu_percent: 25,
            memory_percent: 30,
            failover_level: Some(1),
        }),
        restart_priority: RestartPriority::Medium,
        respect_vm_anti_affinity_rules: None,
    };
    let inventory = Inventory {
        clusters: vec![
            ha_cluster("ha-dedicated", Some(dedicated.clone())),
            ha_cluster("ha-host-failures", Some(host_failures.clone())),
            // No `ha`: the simulator leaves vcsim's empty dasConfig, a cluster where HA was
            // never configured.
            ha_cluster("ha-never-configured", None),
            ha_cluster("ha-off", Some(disabled.clone())),
            ha_cluster("ha-percentages", Some(percentages.clone())),
        ],
    };
    let sim = Vcsim::start(&inventory);
    let mut client = Client::connect(&sim.connection_config())
        .await
        .expect("connect");

    let observed = client.observe(&[], &[]).await.expect("observe");
    client.logout().await;

    let never_configured = HaConfig {
        enabled: false,
        admission_control: None,
        restart_priority: RestartPriority::Medium,
        respect_vm_anti_affinity_rules: None,
    };
    let ha: Vec<(&str, Option<&HaConfig>)> = observed
        .clusters
        .iter()
        .map(|c| (c.name.as_str(), c.ha.as_ref()))
        .collect();
    assert_eq!(
        ha,
        [
            ("ha-dedicated", Some(&dedicated)),
            ("ha-host-failures", Some(&host_failures)),
            ("ha-never-configured", Some(&never_configured)),
            ("ha-off", Some(&disabled)),
            ("ha-percentages", Some(&percentages)),
        ]
    );
    assert_eq!(
        sim.calls_of("RetrievePropertiesEx"),
        1,
        "HA comes with the one retrieval"
    );
}
