//! The vSphere adapter against the real vCenter simulator (govmomi's vcsim, built from
//! `tests/support/vcsim/main.go`): observation, DRS moves, rule changes, sessions, faults, TLS
//! and timeouts. Nothing on our side is faked.

#[path = "support/lab.rs"]
mod lab;
mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use lab::Lab;
use support::closed_port::ClosedPort;
use support::fake_apiserver::read_objects;
use support::vcsim::{self, Options, Template, Vcsim};
use vsphere_descheduler::inventory::{
    AdmissionControl, Cluster, ConnectionState, DrsBehavior, DrsConfig, DrsRule, HaConfig, Host,
    Inventory, MaintenanceMode, RestartPriority,
};
use vsphere_descheduler::vsphere::preflight::{
    self, DrsRuleWrites, Fix, ObjectScope, Preflight, Scope, ScopeFilter, Setting, Status,
};
use vsphere_descheduler::vsphere::{
    ConnectionConfig, Credentials, Error, RuleWrite, VcenterClient, privilege_lines,
};

fn lab() -> Inventory {
    vcsim::load_inventory("vsphere/lab-inventory.yaml")
}

/// The inventory as a fixture states it: observation gives every cluster, datacenter, host and
/// VM its managed object id, every rule its key, uuid and VM ids, and every DRS group its
/// members' ids, which vCenter assigns.
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
        for group in &mut cluster.host_groups {
            assert_eq!(group.host_ids.len(), group.hosts.len(), "{group:?}");
            group.host_ids.clear();
        }
        for group in &mut cluster.vm_groups {
            assert_eq!(group.vm_ids.len(), group.vms.len(), "{group:?}");
            group.vm_ids.clear();
        }
        for rule in &mut cluster.vm_host_rules {
            assert!(rule.key.take().is_some(), "{rule:?}");
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

fn rules_of<'a>(inventory: &'a Inventory, cluster: &str) -> &'a [DrsRule] {
    &cluster_of(inventory, cluster).rules
}

fn rule<'a>(inventory: &'a Inventory, cluster: &str, name: &str) -> Option<&'a DrsRule> {
    rules_of(inventory, cluster).iter().find(|r| r.name == name)
}

fn names(vms: &[&str]) -> Vec<String> {
    vms.iter().map(|vm| vm.to_string()).collect()
}

const LAB: &str = "wcp-cluster-41";
const OWNED_PREFIX: &str = "vsphere-descheduler:lab:";

/// Every rule of the cluster that this Kubernetes cluster does not own.
fn foreign_rules(inventory: &Inventory) -> Vec<DrsRule> {
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
    let mut client = VcenterClient::connect(&sim.connection_config())
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
    let mut client = VcenterClient::connect(&sim.connection_config())
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

/// vCenter leaves out of a retrieval what the account cannot read, and the simulator does too
/// (tests/support/vcsim/authorization.go): with the documented role on datacenter go-lab only,
/// dc-2's cluster is out of sight; a VM with a NoAccess permission of its own is too, though its
/// resource pool would pass the role down. Paged results are filtered before they are paged.
#[tokio::test]
async fn observation_sees_only_what_the_account_may_read() {
    for page_size in [None, Some(3)] {
        let options = Options {
            page_size,
            ..Options::default()
        };
        let sim = Vcsim::start_with(&lab(), &options);
        let config = account_with(&sim, &listed_privileges());
        sim.set_permission(ACCOUNT, "NoAccess", "/go-lab/vm/worker-e", false);
        let mut client = VcenterClient::connect(&config).await.expect("connect");

        let observed = client.observe(&[], &[]).await.expect("observe");
        client.logout().await;

        let seen: Vec<(String, Vec<&str>)> = observed
            .clusters
            .iter()
            .map(|cluster| {
                let vms = cluster.vms.iter().map(|vm| vm.name.as_str()).collect();
                (cluster.qualified_name(), vms)
            })
            .collect();
        assert_eq!(
            seen,
            [(
                format!("go-lab/{LAB}"),
                vec![
                    "control-plane-1",
                    "worker-a",
                    "worker-b",
                    "worker-c",
                    "worker-d"
                ]
            )],
            "page size {page_size:?}"
        );
        assert_eq!(observed.clusters[0].hosts.len(), 4);
    }
}

#[tokio::test]
async fn observation_is_limited_to_the_given_datacenters_and_clusters() {
    let sim = Vcsim::start(&lab());
    let mut client = VcenterClient::connect(&sim.connection_config())
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
    let mut client = VcenterClient::connect(&sim.connection_config())
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
    let mut client = VcenterClient::connect(&sim.connection_config())
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
    let mut client = VcenterClient::connect(&sim.connection_config())
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
    let mut client = VcenterClient::connect(&sim.connection_config())
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
    let mut client = VcenterClient::connect(&sim.connection_config())
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

/// The helper the "nothing listens here" tests rely on: refused, and not to be taken.
#[test]
fn a_closed_port_refuses_connections_and_nobody_can_listen_on_it_while_held() {
    let closed = ClosedPort::bind();
    let refused = std::net::TcpStream::connect(closed.address()).expect_err("refused");
    assert_eq!(
        refused.kind(),
        std::io::ErrorKind::ConnectionRefused,
        "{refused}"
    );
    let taken = std::net::TcpListener::bind(closed.address()).expect_err("taken");
    assert_eq!(taken.kind(), std::io::ErrorKind::AddrInUse, "{taken}");
}

#[tokio::test]
async fn a_server_that_is_down_fails_fast() {
    // Bound, never listening, held to the end: connections are refused and nobody can take it.
    let closed = ClosedPort::bind();
    let port = closed.port();
    let mut config = ConnectionConfig::new(
        format!("127.0.0.1:{port}"),
        Credentials::new("user", "password"),
    );
    // Far longer than any test runs: a refusal waited out to the timeout would be a timeout
    // error, not the request error asserted below.
    config.timeout = Duration::from_secs(600);

    let error = VcenterClient::connect(&config)
        .await
        .expect_err("nothing listens");
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
    // The guard only stops a hang (no timeout applied at all) from blocking the suite; how
    // soon after the timeout the error comes is up to a loaded machine and not asserted.
    let error = tokio::time::timeout(Duration::from_secs(600), VcenterClient::connect(&config))
        .await
        .expect("the client's own timeout ends the connect")
        .expect_err("no answer");
    let elapsed = started.elapsed();
    drop(listener);

    assert!(matches!(error, Error::Timeout { .. }), "{error:?}");
    // Not before the timeout.
    assert!(elapsed >= Duration::from_secs(1), "{elapsed:?}");
}

#[tokio::test]
async fn tls_is_verified_by_default_and_fails_closed_without_the_ca() {
    let sim = Vcsim::start(&lab());

    // With the simulator's CA: verified, works (every other test does this too).
    let client = VcenterClient::connect(&sim.connection_config())
        .await
        .expect("verified connection");
    client.logout().await;

    // Without it, the certificate is not trusted and nothing is sent past the handshake.
    let mut config = sim.connection_config();
    config.ca_file = None;
    let error = VcenterClient::connect(&config)
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
    let client = VcenterClient::connect(&config)
        .await
        .expect("unverified connection when asked");
    client.logout().await;
}

#[tokio::test]
async fn a_run_that_stopped_waiting_is_told_its_task_was_submitted_not_awaited() {
    let sim = Vcsim::start(&lab());
    let mut client = VcenterClient::connect(&sim.connection_config())
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
    let mut client = VcenterClient::connect(&sim.connection_config())
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
        vsan_fault_domain: None,
    };
    Cluster {
        name: name.to_string(),
        datacenter: "dc-ha".to_string(),
        drs: Some(DrsConfig {
            enabled: true,
            default_vm_behavior: DrsBehavior::FullyAutomated,
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
    let mut client = VcenterClient::connect(&sim.connection_config())
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

/// Every privilege of `privileges.txt`, each once: what the documented role holds.
fn listed_privileges() -> Vec<&'static str> {
    let mut privileges: Vec<&'static str> = Vec::new();
    for line in privilege_lines() {
        if !privileges.contains(&line.privilege) {
            privileges.push(line.privilege);
        }
    }
    privileges
}

const ACCOUNT: &str = "descheduler@vsphere.local";
const ACCOUNT_PASSWORD: &str = "an0ther&pass";

/// The account as docs/vcenter-role.md sets it up: ReadOnly on the root folder, not propagated,
/// and a role holding `privileges` on the datacenter, propagated.
fn account_with(sim: &Vcsim, privileges: &[&str]) -> ConnectionConfig {
    sim.add_user(ACCOUNT, ACCOUNT_PASSWORD);
    sim.add_role("vsphere-descheduler", privileges);
    sim.set_permission(ACCOUNT, "ReadOnly", "/", false);
    sim.set_permission(ACCOUNT, "vsphere-descheduler", "/go-lab", true);
    sim.connection_config_as(ACCOUNT, ACCOUNT_PASSWORD)
}

fn lab_scope() -> Scope {
    Scope {
        datacenters: vec![],
        clusters: vec![format!("go-lab/{LAB}")],
        drs_rule_writes: DrsRuleWrites::Written,
    }
}

/// Every item that is not ok, as `(what, status, detail)`.
fn not_ok(found: &Preflight) -> Vec<(String, Status, String)> {
    let mut items = Vec::new();
    let mut push = |what: String, finding: &preflight::PreflightFinding| {
        if finding.status != Status::Ok {
            items.push((what, finding.status, finding.detail.to_string()));
        }
    };
    push("login".to_string(), &found.login);
    push("observation".to_string(), &found.observation);
    for check in &found.scope {
        push(check.filter.to_string(), &check.finding);
    }
    for row in &found.privileges {
        push(format!("{} on {}", row.privilege, row.object), &row.finding);
    }
    for cluster in &found.clusters {
        for setting in &cluster.settings {
            push(
                format!("{} of {}", setting.setting, cluster.name),
                &setting.finding,
            );
        }
    }
    items
}

#[tokio::test]
async fn an_account_with_the_documented_role_passes_every_preflight_item() {
    let sim = Vcsim::start(&lab());
    let config = account_with(&sim, &listed_privileges());

    let found = preflight::preflight(&config, &lab_scope()).await;

    assert_eq!(not_ok(&found), [], "{found:#?}");
    assert_eq!(found.worst(), Status::Ok);
    let version = found.vcenter.as_ref().expect("the version is read");
    assert!(
        version.full_name.starts_with("VMware vCenter Server"),
        "{version:?}"
    );
    assert!(!version.api_version.is_empty());
    // Every line of privileges.txt has its row: the root folder, the datacenter, the host
    // folders, the cluster, its hosts and its VMs.
    for line in privilege_lines() {
        assert!(
            found
                .privileges
                .iter()
                .any(|row| row.privilege == line.privilege
                    && row.methods.iter().any(|m| m == line.method)),
            "no row for {line:?}"
        );
    }
    let [cluster] = found.clusters.as_slice() else {
        panic!("one cluster: {:?}", found.clusters);
    };
    assert_eq!(cluster.settings.len(), 4);
    // The JSON a command prints: typed statuses, objects and values.
    let json = serde_json::to_value(&found).expect("JSON");
    assert_eq!(json["login"]["status"], "ok");
    assert!(
        json["privileges"]
            .as_array()
            .expect("privileges")
            .iter()
            .any(|row| row["privilege"] == "Host.Inventory.EditCluster"
                && row["object"]["kind"] == "cluster"
                && row["neededFor"] == serde_json::json!(["drs-rule-writes"]))
    );
    assert_eq!(
        json["clusters"][0]["settings"][3]["setting"],
        "haRespectsVmAntiAffinityRules"
    );
    assert_eq!(json["clusters"][0]["settings"][3]["value"], true);
}

#[tokio::test]
async fn an_account_missing_the_write_privilege_is_told_which_privilege_on_which_cluster() {
    let sim = Vcsim::start(&lab());
    let without_write: Vec<&str> = listed_privileges()
        .into_iter()
        .filter(|privilege| *privilege != "Host.Inventory.EditCluster")
        .collect();
    let config = account_with(&sim, &without_write);

    let found = preflight::preflight(&config, &lab_scope()).await;

    let cluster_id = found.clusters[0].id.clone().expect("an observed id");
    assert_eq!(
        not_ok(&found),
        [(
            format!("Host.Inventory.EditCluster on cluster go-lab/{LAB} ({cluster_id})"),
            Status::Missing,
            format!(
                "The account lacks Host.Inventory.EditCluster on cluster go-lab/{LAB} \
                 ({cluster_id}), which DRS rule writes need."
            )
        )]
    );
    let row = found
        .privileges
        .iter()
        .find(|row| row.finding.status == Status::Missing)
        .expect("the missing row");
    assert_eq!(row.methods, ["ReconfigureComputeResource_Task"]);
    let fix = row.finding.fix.as_ref().expect("a fix");
    assert!(matches!(
        fix,
        Fix::Grant { on: ObjectScope::Cluster { name, .. }, propagate: false, .. } if name == LAB
    ));
    assert_eq!(
        fix.to_string(),
        format!(
            "Give the account a role holding Host.Inventory.EditCluster on cluster go-lab/{LAB} \
             ({cluster_id}); \"Propagate to children\" is not needed for \
             Host.Inventory.EditCluster, which is checked on that object itself."
        )
    );

    // For runs that write no DRS rule, the same gap is only worth a warning.
    let observe_only = Scope {
        drs_rule_writes: DrsRuleWrites::Off,
        ..lab_scope()
    };
    let found = preflight::preflight(&config, &observe_only).await;
    assert_eq!(found.worst(), Status::Warning, "{:#?}", not_ok(&found));

    // For dry runs of a policy that writes rules, it is missing for going live (issue 39).
    let dry_runs = Scope {
        drs_rule_writes: DrsRuleWrites::DryRun,
        ..lab_scope()
    };
    let found = preflight::preflight(&config, &dry_runs).await;
    assert_eq!(
        found.worst(),
        Status::MissingForGoingLive,
        "{:#?}",
        not_ok(&found)
    );
}

#[tokio::test]
async fn an_account_without_a_permission_on_the_root_folder_is_told_to_add_one() {
    let sim = Vcsim::start(&lab());
    sim.add_user(ACCOUNT, ACCOUNT_PASSWORD);
    sim.add_role("vsphere-descheduler", &listed_privileges());
    sim.set_permission(ACCOUNT, "vsphere-descheduler", "/go-lab", true);
    let config = sim.connection_config_as(ACCOUNT, ACCOUNT_PASSWORD);

    let found = preflight::preflight(&config, &lab_scope()).await;

    // vCenter refuses to answer about an object the account cannot read, naming the privilege.
    let root_rows: Vec<(&str, Status)> = found
        .privileges
        .iter()
        .filter(|row| matches!(row.object, ObjectScope::RootFolder { .. }))
        .map(|row| (row.privilege.as_str(), row.finding.status))
        .collect();
    assert_eq!(
        root_rows,
        [
            ("System.Anonymous", Status::NotChecked),
            ("System.Read", Status::Warning),
            ("System.View", Status::NotChecked),
        ]
    );
    let read = found
        .privileges
        .iter()
        .find(|row| {
            matches!(row.object, ObjectScope::RootFolder { .. }) && row.privilege == "System.Read"
        })
        .expect("the root folder's read row");
    assert!(matches!(
        read.finding.fix,
        Some(Fix::Grant {
            on: ObjectScope::RootFolder { .. },
            propagate: false,
            ..
        })
    ));
    // Everything below the datacenter is answered.
    assert!(
        found
            .privileges
            .iter()
            .filter(|row| !matches!(row.object, ObjectScope::RootFolder { .. }))
            .all(|row| row.finding.status == Status::Ok),
        "{:#?}",
        not_ok(&found)
    );
}

#[tokio::test]
async fn a_wrong_password_is_a_missing_login_that_says_to_check_the_credentials() {
    let sim = Vcsim::start(&lab());
    let config = sim.connection_config_as(vcsim::USERNAME, "wrong");

    let found = preflight::preflight(&config, &lab_scope()).await;

    assert_eq!(found.login.status, Status::Missing);
    assert_eq!(found.login.fix, Some(Fix::Credentials));
    assert!(
        found.login.detail.to_string().contains("InvalidLogin"),
        "{}",
        found.login.detail
    );
    assert!(found.vcenter.is_some(), "the version needs no login");
    assert!(found.privileges.is_empty() && found.clusters.is_empty());
    assert_eq!(found.observation.status, Status::NotChecked);
    assert_eq!(sim.calls_of("HasPrivilegeOnEntities"), 0);
}

#[tokio::test]
async fn cluster_settings_that_leave_rules_unenforced_are_warnings_with_their_fixes() {
    let sim = Vcsim::start(&lab());
    let scope = Scope {
        datacenters: vec!["dc-2".to_string(), "dc-9".to_string()],
        clusters: vec![],
        drs_rule_writes: DrsRuleWrites::Written,
    };

    let found = preflight::preflight(&sim.connection_config(), &scope).await;

    let [edge] = found.clusters.as_slice() else {
        panic!("only dc-2's cluster: {:?}", found.clusters);
    };
    let settings: Vec<(Setting, Status)> = edge
        .settings
        .iter()
        .map(|s| (s.setting, s.finding.status))
        .collect();
    assert_eq!(
        settings,
        [
            (Setting::DrsEnabled, Status::Warning),
            (Setting::DrsAutomationLevel, Status::NotChecked),
            (Setting::HaEnabled, Status::Warning),
            (Setting::HaRespectsVmAntiAffinityRules, Status::NotChecked),
        ]
    );
    assert!(matches!(
        edge.settings[0].finding.fix,
        Some(Fix::EnableDrs { .. })
    ));
    let scope_checks: Vec<(&ScopeFilter, Status)> = found
        .scope
        .iter()
        .map(|check| (&check.filter, check.finding.status))
        .collect();
    assert_eq!(
        scope_checks,
        [
            (&ScopeFilter::Datacenter("dc-2".to_string()), Status::Ok),
            (
                &ScopeFilter::Datacenter("dc-9".to_string()),
                Status::Missing
            ),
        ]
    );
    // The administrator holds everything.
    assert!(
        found
            .privileges
            .iter()
            .all(|row| row.finding.status == Status::Ok)
    );
}

/// privileges.txt holds the client to the methods it sends: every method the simulator served
/// (counted server side) is listed, and every listed method is sent by one of the client's
/// paths: observation (paged, and with a page that fails), a rule change and its task, the
/// preflight, logout.
#[tokio::test]
async fn every_method_the_client_sends_is_listed_in_privileges_txt_and_every_listed_one_is_sent() {
    let options = Options {
        page_size: Some(4),
        ..Options::default()
    };
    let sim = Vcsim::start_with(&lab(), &options);
    let mut client = VcenterClient::connect(&sim.connection_config())
        .await
        .expect("connect");
    let observed = client.observe(&[], &[]).await.expect("observe");

    // A page that fails ends the retrieval: the rest is cancelled, and the error is returned.
    sim.fail_next_page();
    let error = client.observe(&[], &[]).await.expect_err("a page failed");
    assert_eq!(
        error.fault().map(|fault| fault.name.as_str()),
        Some("InvalidArgument"),
        "{error}"
    );
    assert_eq!(sim.calls_of("CancelRetrievePropertiesEx"), 1);

    let vms = vm_ids(&observed, &["worker-a", "worker-b"]);
    client
        .apply_rule_changes(
            &lab_id(&observed),
            &[RuleWrite::Add {
                name: format!("{OWNED_PREFIX}shop:Deployment/web"),
                vms,
            }],
        )
        .await
        .expect("add a rule");
    client.logout().await;
    let found = preflight::preflight(&sim.connection_config(), &lab_scope()).await;
    assert_eq!(found.worst(), Status::Ok, "{:#?}", not_ok(&found));

    let listed: std::collections::BTreeSet<&str> =
        privilege_lines().iter().map(|line| line.method).collect();
    let sent = sim.calls();
    let unlisted: Vec<&String> = sent
        .keys()
        .filter(|method| !listed.contains(method.as_str()))
        .collect();
    assert!(
        unlisted.is_empty(),
        "sent but not in src/vsphere/privileges.txt: {unlisted:?}"
    );
    let unsent: Vec<&&str> = listed
        .iter()
        .filter(|method| !sent.contains_key(**method))
        .collect();
    assert!(unsent.is_empty(), "listed but never sent: {unsent:?}");
}

/// The stretched-cluster story (issue 41): its snapshot's inventory, and the simulator's extras
/// (the vSAN witness) from its `simulator.yaml`.
fn stretched() -> (Inventory, Options) {
    let snapshot = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/e2e")
        .join(STRETCHED_STORY)
        .join("snapshot.yaml");
    let inventory = read_objects(&snapshot)
        .inventory
        .expect("the story has an inventory");
    (inventory, Options::beside(&snapshot))
}

const STRETCHED_STORY: &str = "stretched-cluster";
const STRETCHED: &str = "metro-cluster";
const WITNESS: &str = "lab-vsan-witness.go-lab.jp";

async fn observe_as(config: &ConnectionConfig) -> Inventory {
    let mut client = VcenterClient::connect(config).await.expect("connect");
    let observed = client.observe(&[], &[]).await.expect("observe");
    client.logout().await;
    observed
}

#[tokio::test]
async fn the_stretched_cluster_is_observed_with_its_groups_vm_host_rules_and_fault_domains() {
    let (expected, options) = stretched();
    assert_eq!(options.standalone_hosts.len(), 1, "the witness");
    let sim = Vcsim::start_with(&expected, &options);

    let observed = observe_as(&sim.connection_config()).await;

    let cluster = cluster_of(&observed, STRETCHED);
    let domains: Vec<(&str, Option<&str>)> = cluster
        .hosts
        .iter()
        .map(|h| (h.name.as_str(), h.vsan_fault_domain.as_deref()))
        .collect();
    assert_eq!(
        domains,
        [
            ("lab-esxi-a1.go-lab.jp", Some("site-a")),
            ("lab-esxi-a2.go-lab.jp", Some("site-a")),
            ("lab-esxi-a3.go-lab.jp", Some("site-a")),
            ("lab-esxi-b1.go-lab.jp", Some("site-b")),
            ("lab-esxi-b2.go-lab.jp", Some("site-b")),
            ("lab-esxi-b3.go-lab.jp", Some("site-b")),
        ]
    );
    let groups: Vec<(&str, usize)> = cluster
        .host_groups
        .iter()
        .map(|g| (g.name.as_str(), g.host_ids.len()))
        .collect();
    assert_eq!(groups, [("site-a-hosts", 3), ("site-b-hosts", 3)]);
    let rules: Vec<(&str, bool, bool)> = cluster
        .vm_host_rules
        .iter()
        .map(|r| (r.name.as_str(), r.enabled, r.mandatory))
        .collect();
    assert_eq!(
        rules,
        [
            ("site-a-vms-should-run-on-site-a", true, false),
            ("site-b-vms-should-run-on-site-b", true, false),
            ("site-b-vms-must-run-on-site-b", false, true),
        ]
    );
    // A VM/Host rule is the same rule as its entry among the rules: same name, same key.
    for vm_host_rule in &cluster.vm_host_rules {
        let listed = rule(&observed, STRETCHED, &vm_host_rule.name).expect("among the rules");
        assert_eq!(listed.key, vm_host_rule.key);
    }
    // The witness is a standalone host: in no cluster, so not observed at all.
    assert!(
        observed
            .clusters
            .iter()
            .flat_map(|c| &c.hosts)
            .all(|h| h.name != WITNESS)
    );
    // Everything else, group members and VMs included, as the story states it.
    assert_eq!(as_built(observed), expected);
}

#[tokio::test]
async fn hosts_without_vsan_have_no_fault_domain_and_clusters_without_groups_none() {
    let sim = Vcsim::start(&lab());

    let observed = observe_as(&sim.connection_config()).await;

    for cluster in &observed.clusters {
        assert!(
            cluster.hosts.iter().all(|h| h.vsan_fault_domain.is_none()),
            "{cluster:?}"
        );
        assert!(cluster.host_groups.is_empty() && cluster.vm_groups.is_empty());
        assert!(cluster.vm_host_rules.is_empty(), "{cluster:?}");
    }
}

/// The harness turns vSAN on for a host given a fault domain: a named one is observed by name,
/// vSAN's default domain as the empty name (vcsim leaves an empty string out of its answer, as
/// it does every empty value, where vCenter sends it), and the other hosts have none.
#[tokio::test]
async fn a_named_and_the_default_fault_domain_are_observed_as_built() {
    let mut expected = lab();
    let hosts = &mut expected
        .clusters
        .iter_mut()
        .find(|c| c.name == LAB)
        .expect("the lab cluster")
        .hosts;
    hosts[0].vsan_fault_domain = Some("rack-1".to_string());
    hosts[1].vsan_fault_domain = Some(String::new());
    let sim = Vcsim::start(&expected);

    let observed = observe_as(&sim.connection_config()).await;

    let domains: Vec<Option<&str>> = cluster_of(&observed, LAB)
        .hosts
        .iter()
        .map(|h| h.vsan_fault_domain.as_deref())
        .collect();
    assert_eq!(domains[..3], [Some("rack-1"), Some(""), None]);
    assert_eq!(as_built(observed), expected);
}

/// Sites need no privilege beyond what observation holds: an account with only the read
/// privileges every role has (docs/vcenter-role.md) observes the same groups, rules and fault
/// domains as the administrator.
#[tokio::test]
async fn a_read_only_account_observes_the_sites_as_the_administrator_does() {
    let (inventory, options) = stretched();
    let sim = Vcsim::start_with(&inventory, &options);
    let read_only = account_with(&sim, &[]);

    let as_administrator = observe_as(&sim.connection_config()).await;
    let as_read_only = observe_as(&read_only).await;

    assert_eq!(as_read_only, as_administrator);
}

/// `snapshot` against the lab records the groups, VM/Host rules and fault domains, and the file
/// reads back as the inventory observed.
#[test]
fn a_snapshot_of_the_stretched_lab_records_its_sites_and_reads_back_equal() {
    let lab = Lab::start(STRETCHED_STORY);
    let file = lab.dir.path().join("stretched.yaml");

    let output = lab
        .command(&["snapshot", "-o", file.to_str().expect("UTF-8")])
        .output()
        .expect("the binary runs");

    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = std::fs::read_to_string(&file).expect("the snapshot file");
    for field in [
        "hostGroups:",
        "vmGroups:",
        "vmHostRules:",
        "vsanFaultDomain: site-a",
    ] {
        assert!(text.contains(field), "{field} missing from:\n{text}");
    }
    let loaded = vsphere_descheduler::snapshot::load_files(&[file], chrono::Utc::now())
        .expect("the snapshot file reads back");
    let recorded = loaded
        .snapshot
        .inventory
        .expect("the inventory is recorded");
    let observed = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(observe_as(&lab.simulator.connection_config()));
    assert_eq!(recorded, observed);
}

/// A run writes its own DRS rule in the stretched cluster and leaves what the admins own as it
/// was: the host and VM groups, the VM/Host rules (the disabled one too) and the fault domains.
#[test]
fn a_run_on_the_stretched_lab_leaves_the_site_groups_and_vm_host_rules_as_they_were() {
    let lab = Lab::start(STRETCHED_STORY);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let observe = || runtime.block_on(observe_as(&lab.simulator.connection_config()));
    let before = observe();
    let policy = lab.policy.display().to_string();

    let output = lab
        .command(&["run", "--policy", policy.as_str()])
        .output()
        .expect("the binary runs");

    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let after = observe();
    let owned = "vsphere-descheduler:lab:db:StatefulSet/pg";
    assert!(rule(&before, STRETCHED, owned).is_none());
    assert!(rule(&after, STRETCHED, owned).is_some(), "{after:?}");
    let sites = |inventory: &Inventory| {
        let cluster = cluster_of(inventory, STRETCHED).clone();
        let domains: Vec<Option<String>> = cluster
            .hosts
            .iter()
            .map(|h| h.vsan_fault_domain.clone())
            .collect();
        (
            cluster.host_groups,
            cluster.vm_groups,
            cluster.vm_host_rules,
            domains,
        )
    };
    assert_eq!(sites(&after), sites(&before));
}
