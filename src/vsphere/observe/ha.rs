//! A cluster's vSphere HA configuration, from `configurationEx.dasConfig` to [`HaConfig`]: the
//! defaults vSphere applies to what the server left unset, admission control policies by kind,
//! dedicated failover hosts by name, and the one advanced option that matters for placement.

use crate::inventory::{AdmissionControl, HaConfig, RestartPriority};
use crate::vsphere::soap::{AdmissionControlPolicy, DasConfig, MoRef, PropertyValue};

use super::Objects;

/// The HA advanced option behind "HA must respect VM anti-affinity rules during failover".
const RESPECT_VM_ANTI_AFFINITY_OPTION: &str = "das.respectVmVmAntiAffinityRules";

/// The cluster's HA configuration, with vSphere's defaults for what the server left unset (an
/// empty `dasConfig` is a cluster where HA was never turned on), its failover hosts by name.
pub(super) fn config(das: &DasConfig, objects: &Objects<'_>, name: &str, id: &MoRef) -> HaConfig {
    HaConfig {
        // Unset is off, as for DRS: what-if must not count on restarts that may not happen.
        enabled: das.enabled.unwrap_or(false),
        admission_control: admission_control(das, objects, name, id),
        // vSphere restarts VMs at medium priority where neither the cluster nor the VM says.
        restart_priority: das
            .restart_priority
            .clone()
            .filter(|priority| !priority.is_empty())
            .map_or(RestartPriority::Medium, RestartPriority::from),
        respect_vm_anti_affinity_rules: respect_vm_anti_affinity_rules(das, name, id),
    }
}

/// The failover capacity admission control reserves; `None` when it is off, or when it is on
/// with a policy this program cannot read (logged, so what-if says "unknown" rather than
/// guess).
fn admission_control(
    das: &DasConfig,
    objects: &Objects<'_>,
    name: &str,
    id: &MoRef,
) -> Option<AdmissionControl> {
    // vCenter sends the flag whenever HA has been configured; unset is the API's default, off.
    if das.admission_control_enabled != Some(true) {
        return None;
    }
    match &das.admission_control_policy {
        Some(AdmissionControlPolicy::FailoverLevel { failover_level }) => {
            Some(AdmissionControl::HostFailures {
                failover_level: *failover_level,
            })
        }
        Some(AdmissionControlPolicy::FailoverResources {
            cpu_percent,
            memory_percent,
            failover_level,
        }) => Some(AdmissionControl::ResourcePercentage {
            cpu_percent: *cpu_percent,
            memory_percent: *memory_percent,
            failover_level: *failover_level,
        }),
        Some(AdmissionControlPolicy::FailoverHosts { hosts }) => {
            Some(AdmissionControl::DedicatedHosts {
                hosts: failover_host_names(hosts, objects, name, id),
            })
        }
        Some(AdmissionControlPolicy::Other(policy)) => {
            tracing::warn!(
                cluster = name,
                cluster_id = %id.value,
                policy = %policy,
                "HA admission control policy of a type this program does not read; admission \
                 control left unknown"
            );
            None
        }
        // Before admission control policies (vSphere 4.0) the configuration's own failover
        // level was the policy; a server may still answer that way.
        None => match das.failover_level {
            Some(failover_level) => Some(AdmissionControl::HostFailures { failover_level }),
            None => {
                tracing::warn!(
                    cluster = name,
                    cluster_id = %id.value,
                    "HA admission control is on without a policy; admission control left unknown"
                );
                None
            }
        },
    }
}

/// Names of the dedicated failover hosts, sorted: the policy holds a set. A host that is not
/// among the observed ones has no name to give and is left out.
fn failover_host_names(
    hosts: &[MoRef],
    objects: &Objects<'_>,
    name: &str,
    id: &MoRef,
) -> Vec<String> {
    let mut names: Vec<String> = hosts
        .iter()
        .filter_map(|host| {
            let host_name = objects
                .get(host)
                .and_then(|object| object.property("name"))
                .and_then(PropertyValue::as_str);
            if host_name.is_none() {
                tracing::warn!(
                    cluster = name,
                    cluster_id = %id.value,
                    host = %host,
                    "HA failover host is not among the observed hosts; left out"
                );
            }
            host_name.map(str::to_string)
        })
        .collect();
    names.sort();
    names
}

/// The advanced option `das.respectVmVmAntiAffinityRules`: HA reads option keys regardless of
/// case, so this does too. A value other than `true` or `false` is logged and read as unset.
fn respect_vm_anti_affinity_rules(das: &DasConfig, name: &str, id: &MoRef) -> Option<bool> {
    let option = das.options.iter().find(|option| {
        option
            .key
            .eq_ignore_ascii_case(RESPECT_VM_ANTI_AFFINITY_OPTION)
    })?;
    let value = option.value.as_deref().unwrap_or_default().trim();
    if value.eq_ignore_ascii_case("true") {
        Some(true)
    } else if value.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        tracing::warn!(
            cluster = name,
            cluster_id = %id.value,
            option = %option.key,
            value,
            "HA advanced option is neither true nor false; read as unset"
        );
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::Inventory;
    use crate::vsphere::observe::build;
    use crate::vsphere::soap::{ObjectContent, fixture_response, retrieve_result};

    /// What `build` logs at warning level and above, as plain text.
    fn build_logging(objects: &[ObjectContent]) -> (Inventory, String) {
        #[derive(Clone, Default)]
        struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
        impl std::io::Write for Captured {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().expect("log buffer").extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::WARN)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        // Scoped to this thread: tests running beside this one keep their own logging.
        let inventory = tracing::subscriber::with_default(subscriber, || {
            build(objects, &[], &[]).expect("complete objects")
        });
        let logged = String::from_utf8(captured.0.lock().expect("log buffer").clone())
            .expect("logs are UTF-8");
        (inventory, logged)
    }

    fn ha_of<'a>(inventory: &'a Inventory, cluster: &str) -> Option<&'a HaConfig> {
        inventory
            .clusters
            .iter()
            .find(|c| c.name == cluster)
            .unwrap_or_else(|| panic!("cluster {cluster} observed"))
            .ha
            .as_ref()
    }

    #[test]
    fn ha_is_observed_with_each_admission_control_policy_and_the_anti_affinity_option() {
        let response = fixture_response("retrieve-properties-ha.xml");
        let objects = retrieve_result(&response).expect("objects").objects;
        let (inventory, logged) = build_logging(&objects);
        let ha = |enabled, admission_control, restart_priority, respect| {
            Some(HaConfig {
                enabled,
                admission_control,
                restart_priority,
                respect_vm_anti_affinity_rules: respect,
            })
        };
        let observed: Vec<(&str, Option<HaConfig>)> = inventory
            .clusters
            .iter()
            .map(|c| (c.name.as_str(), c.ha.clone()))
            .collect();
        assert_eq!(
            observed,
            [
                (
                    "admission-off",
                    ha(true, None, RestartPriority::Medium, None)
                ),
                (
                    "dedicated",
                    ha(
                        true,
                        Some(AdmissionControl::DedicatedHosts {
                            hosts: vec![
                                "esxi-21.example.com".to_string(),
                                "esxi-22.example.com".to_string()
                            ]
                        }),
                        RestartPriority::Disabled,
                        None
                    )
                ),
                (
                    "future-policy",
                    ha(true, None, RestartPriority::Highest, Some(true))
                ),
                (
                    "ha-never-configured",
                    ha(false, None, RestartPriority::Medium, None)
                ),
                (
                    "host-failures",
                    ha(
                        true,
                        Some(AdmissionControl::HostFailures { failover_level: 2 }),
                        RestartPriority::High,
                        Some(true)
                    )
                ),
                (
                    "legacy",
                    ha(
                        false,
                        Some(AdmissionControl::HostFailures { failover_level: 1 }),
                        RestartPriority::Lowest,
                        None
                    )
                ),
                (
                    "percentages",
                    ha(
                        true,
                        Some(AdmissionControl::ResourcePercentage {
                            cpu_percent: 25,
                            memory_percent: 30,
                            failover_level: Some(1)
                        }),
                        RestartPriority::Low,
                        Some(false)
                    )
                ),
                (
                    "percentages-fixed",
                    ha(
                        true,
                        Some(AdmissionControl::ResourcePercentage {
                            cpu_percent: 50,
                            memory_percent: 40,
                            failover_level: None
                        }),
                        RestartPriority::Medium,
                        None
                    )
                ),
                ("unreadable", None),
            ]
        );

        let warnings: Vec<&str> = logged.lines().collect();
        let warned = |needles: &[&str]| {
            warnings
                .iter()
                .any(|line| needles.iter().all(|needle| line.contains(needle)))
        };
        assert!(
            warned(&[
                "HA admission control policy of a type this program does not read",
                "cluster=\"future-policy\"",
                "cluster_id=domain-c15",
                "policy=ClusterFailoverFutureAdmissionControlPolicy",
            ]),
            "{logged}"
        );
        assert!(
            warned(&[
                "HA failover host is not among the observed hosts",
                "cluster=\"dedicated\"",
                "host=HostSystem:host-99",
            ]),
            "{logged}"
        );
        assert!(
            warned(&[
                "HA advanced option is neither true nor false",
                "cluster=\"admission-off\"",
                "value=\"maybe\"",
            ]),
            "{logged}"
        );
        assert!(
            warned(&[
                "cluster configuration is unreadable",
                "cluster=\"unreadable\""
            ]),
            "{logged}"
        );
        assert_eq!(
            warnings.len(),
            4,
            "nothing else is worth a warning: {logged}"
        );
    }

    #[test]
    fn ha_survives_a_round_trip_through_a_snapshot_file() {
        let response = fixture_response("retrieve-properties-ha.xml");
        let objects = retrieve_result(&response).expect("objects").objects;
        let inventory = build(&objects, &[], &[]).expect("complete objects");
        let yaml = serde_saphyr::to_string(&inventory).expect("YAML");
        let read: Inventory = serde_saphyr::from_str(&yaml).expect("reads back");
        assert_eq!(read, inventory);
        assert_eq!(
            ha_of(&read, "dedicated").map(|ha| &ha.admission_control),
            Some(&Some(AdmissionControl::DedicatedHosts {
                hosts: vec![
                    "esxi-21.example.com".to_string(),
                    "esxi-22.example.com".to_string()
                ]
            }))
        );
    }
}
