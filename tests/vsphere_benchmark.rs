//! One observation of a large inventory (2,000 VMs on 64 hosts in two clusters, with rules) in
//! the vCenter simulator: how long it takes and how many SOAP calls it makes.
//!
//! Ignored by default because building the inventory in the simulator takes a while. Run with
//! `cargo test --release --test vsphere_benchmark -- --ignored --nocapture`.

mod support;

use std::time::{Duration, Instant};

use support::vcsim::{Options, Vcsim};
use vsphere_descheduler::inventory::{
    Cluster, ConnectionState, DrsBehavior, DrsConfig, DrsRule, Host, Inventory, MaintenanceMode,
    PowerState, RuleKind, Vm,
};
use vsphere_descheduler::vsphere::VcenterClient;

const CLUSTERS: usize = 2;
const HOSTS_PER_CLUSTER: usize = 32;
const VMS_PER_CLUSTER: usize = 1000;
const RULES_PER_CLUSTER: usize = 25;

fn large_inventory() -> Inventory {
    let clusters = (0..CLUSTERS)
        .map(|c| {
            let hosts: Vec<Host> = (0..HOSTS_PER_CLUSTER)
                .map(|h| Host {
                    name: format!("esxi-{c}-{h:02}.example.com"),
                    id: None,
                    connection_state: ConnectionState::Connected,
                    in_maintenance_mode: MaintenanceMode::Off,
                    vsan_fault_domain: None,
                })
                .collect();
            let vms: Vec<Vm> = (0..VMS_PER_CLUSTER)
                .map(|v| Vm {
                    name: format!("node-{c}-{v:04}"),
                    id: None,
                    uuid: format!("42000000-0000-4000-8{c:03}-{v:012}"),
                    host: hosts[v % HOSTS_PER_CLUSTER].name.clone(),
                    power_state: PowerState::PoweredOn,
                    drs_behavior: None,
                })
                .collect();
            let rules = (0..RULES_PER_CLUSTER)
                .map(|r| DrsRule {
                    name: format!("vsphere-descheduler:bench:ns:Deployment/app-{r}"),
                    key: None,
                    kind: RuleKind::AntiAffinity,
                    enabled: true,
                    mandatory: false,
                    user_created: true,
                    uuid: None,
                    vms: (0..3).map(|i| vms[r * 3 + i].name.clone()).collect(),
                    vm_ids: Vec::new(),
                })
                .collect();
            Cluster {
                name: format!("cluster-{c}"),
                id: None,
                datacenter: "dc".to_string(),
                datacenter_id: None,
                drs: Some(DrsConfig {
                    enabled: true,
                    default_vm_behavior: DrsBehavior::FullyAutomated,
                }),
                ha: None,
                hosts,
                vms,
                rules,
                ..Cluster::default()
            }
        })
        .collect();
    Inventory { clusters }
}

#[tokio::test]
#[ignore = "builds 2,000 VMs in the simulator; run explicitly to measure"]
#[allow(clippy::print_stdout)] // the measurement is the output
async fn observing_two_thousand_vms_on_sixty_four_hosts() {
    let inventory = large_inventory();
    let build_started = Instant::now();
    let options = Options {
        ready_timeout: Duration::from_secs(900),
        ..Options::default()
    };
    let sim = Vcsim::start_with(&inventory, &options);
    let build_time = build_started.elapsed();
    let mut client = VcenterClient::connect(&sim.connection_config())
        .await
        .expect("connect");

    let mut samples = Vec::new();
    for _ in 0..5 {
        let calls_before: u64 = sim.calls().values().sum();
        let started = Instant::now();
        let observed = client.observe(&[], &[]).await.expect("observe");
        let elapsed = started.elapsed();
        let calls = sim.calls().values().sum::<u64>() - calls_before;
        let vms: usize = observed.clusters.iter().map(|c| c.vms.len()).sum();
        let hosts: usize = observed.clusters.iter().map(|c| c.hosts.len()).sum();
        assert_eq!(
            (vms, hosts),
            (CLUSTERS * VMS_PER_CLUSTER, CLUSTERS * HOSTS_PER_CLUSTER)
        );
        samples.push((elapsed, calls));
    }
    client.logout().await;

    println!("simulator built the inventory in {build_time:?}");
    for (elapsed, calls) in &samples {
        println!("observation of 2000 VMs / 64 hosts: {elapsed:?}, {calls} SOAP calls");
    }
}
