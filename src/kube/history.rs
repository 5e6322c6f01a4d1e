//! The eviction history's objects (`snapshot::history` says what it keeps, where and why): the
//! ConfigMap named after the run lock, and the earlier form's annotation on the lock's Lease,
//! read together. The ConfigMap is written only by the lock ([`super::Lock::write_history`]),
//! with the `resourceVersion` it read, so a write over a ConfigMap someone changed meanwhile
//! fails (409) rather than losing their evictions.

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::Api;

use super::{Call, Client, Error, retry};
use crate::cause::{Cause, Failure};
use crate::snapshot::history::{
    self, ANNOTATION, Compact, History, HistoryDefect, Stored, Unreadable, config_map_name,
};
use crate::snapshot::prune::{self, Pruned};

/// The earlier form's annotation on the run lock's Lease, when it has one.
pub(super) fn legacy(lease: &Lease) -> Option<&str> {
    lease
        .metadata
        .annotations
        .as_ref()?
        .get(ANNOTATION)
        .map(String::as_str)
}

/// The history a ConfigMap holds, when it is the history's (it has the annotation).
fn compact(config_map: &ConfigMap) -> Option<Compact> {
    let marker = config_map.metadata.annotations.as_ref()?.get(ANNOTATION)?;
    Some(Compact {
        marker: marker.clone(),
        data: config_map.data.clone().unwrap_or_default(),
    })
}

/// The history the lock's Lease `namespace/lease_name` and the ConfigMap beside it hold
/// together (`None`: the object does not exist).
pub(super) fn history_of(
    lease: Option<&Lease>,
    config_map: Option<&ConfigMap>,
    namespace: &str,
    lease_name: &str,
) -> History {
    let legacy = lease
        .and_then(legacy)
        .map(|value| Stored::Lease(value.to_string()));
    let compact = config_map.and_then(compact).map(Stored::ConfigMap);
    history::read(
        legacy
            .iter()
            .map(|stored| (history::lease_object(namespace, lease_name), stored))
            .chain(compact.iter().map(|stored| {
                let name = config_map_name(lease_name);
                (history::config_map_object(namespace, &name), stored)
            })),
    )
}

/// The history as unreadable because `object` could not be read (`error`, in words).
pub(super) fn not_read(object: String, error: &Error) -> History {
    History::Unreadable(Unreadable {
        object,
        cause: HistoryDefect::NotRead(Failure::of(error.cause(), error)),
    })
}

/// The ConfigMap holding `compact`, written over `previous` (its labels kept, and its
/// `resourceVersion`, which makes the write a compare-and-swap).
pub(super) fn config_map(
    namespace: &str,
    lease_name: &str,
    compact: Compact,
    previous: Option<&ConfigMap>,
) -> ConfigMap {
    let mut metadata = previous.map_or_else(ObjectMeta::default, |cm| cm.metadata.clone());
    metadata.name = Some(config_map_name(lease_name));
    metadata.namespace = Some(namespace.to_string());
    metadata.managed_fields = None;
    metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(ANNOTATION.to_string(), compact.marker);
    ConfigMap {
        metadata,
        data: Some(compact.data),
        ..ConfigMap::default()
    }
}

impl Client {
    /// The history ConfigMap beside the lock `namespace/lease_name`; `None` when there is none.
    pub(super) async fn history_config_map(
        &self,
        namespace: &str,
        lease_name: &str,
    ) -> Result<Option<ConfigMap>, Error> {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), namespace);
        let name = config_map_name(lease_name);
        retry::idempotent("read the eviction history", || api.get_opt(&name))
            .await
            .map_err(|error| Error::ReadHistory {
                namespace: namespace.to_string(),
                name: name.clone(),
                source: Call::object("GET", api.resource_url(), &name).failed(error),
            })
    }

    /// The eviction history beside the run lock `namespace/name`, read without taking the lock
    /// (a dry run writes nothing): none recorded when neither the Lease's annotation nor the
    /// ConfigMap exists; unreadable, so that pacing fails closed, when either cannot be read or
    /// does not hold a history.
    pub async fn read_history(&self, namespace: &str, name: &str) -> History {
        let lease_api: Api<Lease> = Api::namespaced(self.client.clone(), namespace);
        let (lease, config_map) = tokio::join!(
            retry::idempotent("read lease", || lease_api.get_opt(name)),
            self.history_config_map(namespace, name)
        );
        let lease = match lease {
            Ok(lease) => lease,
            Err(error) => {
                let error = Call::object("GET", lease_api.resource_url(), name).failed(error);
                return History::Unreadable(Unreadable {
                    object: history::lease_object(namespace, name),
                    cause: HistoryDefect::NotRead(Failure::new(
                        Cause::of_kube_client(error.error()),
                        format!("the Lease could not be read ({error})"),
                    )),
                });
            }
        };
        match config_map {
            Ok(config_map) => history_of(lease.as_ref(), config_map.as_ref(), namespace, name),
            Err(error) => not_read(
                history::config_map_object(namespace, &config_map_name(name)),
                &error,
            ),
        }
    }

    /// The history's objects beside the run lock `namespace/name`, as a snapshot records them:
    /// the Lease when it holds the earlier form (its name, namespace and that annotation only)
    /// and the ConfigMap (its name, namespace, annotation and data), each as it is (an
    /// unreadable one too, so that a plan of the file fails closed as the run does). Empty when
    /// neither holds a history.
    pub async fn recorded_history(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Vec<Pruned>, Error> {
        let api: Api<Lease> = Api::namespaced(self.client.clone(), namespace);
        let lease = retry::idempotent("read lease", || api.get_opt(name))
            .await
            .map_err(|error| Error::ReadLease {
                namespace: namespace.to_string(),
                name: name.to_string(),
                source: Call::object("GET", api.resource_url(), name).failed(error),
            })?;
        let config_map = self.history_config_map(namespace, name).await?;
        Ok(lease
            .filter(|lease| legacy(lease).is_some())
            .map(prune::lease)
            .into_iter()
            .chain(
                config_map
                    .filter(|cm| compact(cm).is_some())
                    .map(prune::config_map),
            )
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::history::PastEviction;

    fn at(minutes: i64) -> chrono::DateTime<chrono::Utc> {
        chrono::DateTime::parse_from_rfc3339("2026-11-28T12:00:00Z")
            .expect("a time")
            .to_utc()
            + chrono::TimeDelta::minutes(minutes)
    }

    #[test]
    fn a_written_config_map_reads_back_with_the_leases_earlier_form() {
        let earlier = r#"[{"at":"2026-11-28T12:01:00Z","workload":"shop/Deployment/api","pod":"api-1","plugin":"RemoveDuplicates"}]"#;
        let lease: Lease = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "lock", "annotations": {ANNOTATION: earlier}}
        }))
        .expect("a lease");
        let web = PastEviction::new(at(2), "shop/Deployment/web", "web-1", "RemoveDuplicates");
        let written = config_map(
            "ops",
            "lock",
            history::encode(std::slice::from_ref(&web), at(3)),
            None,
        );
        assert_eq!(written.metadata.name.as_deref(), Some("lock-history"));
        let api = PastEviction::new(at(1), "shop/Deployment/api", "api-1", "RemoveDuplicates");
        assert_eq!(
            history_of(Some(&lease), Some(&written), "ops", "lock"),
            History::Recorded(vec![api, web])
        );
    }

    #[test]
    fn a_config_map_without_the_annotation_is_no_history_and_a_corrupt_one_is_named() {
        let plain = ConfigMap {
            metadata: ObjectMeta {
                name: Some("lock-history".to_string()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        assert_eq!(
            history_of(None, Some(&plain), "ops", "lock"),
            History::default()
        );
        let mut corrupt = config_map("ops", "lock", Compact::default(), None);
        corrupt
            .data
            .get_or_insert_with(Default::default)
            .insert("a.B".to_string(), "x".to_string());
        let History::Unreadable(unreadable) = history_of(None, Some(&corrupt), "ops", "lock")
        else {
            panic!("corrupt");
        };
        assert_eq!(unreadable.object, "ConfigMap ops/lock-history");
    }
}
