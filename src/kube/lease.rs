//! The run lock: a `coordination.k8s.io/v1` Lease, so two runs (a slow CronJob run and the next
//! one, or a run from a laptop) never act at the same time.
//!
//! Acquiring is create-or-compare-and-swap: a missing lease is created; an existing one is taken
//! over only when it is free, ours or expired, with a PUT carrying the `resourceVersion` we read,
//! so of two runs racing for it exactly one wins and the other sees 409. An unexpired lease of
//! another holder is honoured. While held, the lease is renewed in the background; if renewal
//! finds another holder, the lock reports itself lost and the run stops acting. Release clears
//! the holder.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, PostParams};

use super::{Client, Error, api_status, describe, retry};

/// Name of the lease.
pub const LEASE_NAME: &str = "vsphere-descheduler";
/// How long a lease stays ours without renewal. Renewed every third of it.
pub const LEASE_DURATION: Duration = Duration::from_secs(60);
/// Extra time granted to another holder's lease, for clocks that disagree.
const CLOCK_SKEW: chrono::TimeDelta = chrono::TimeDelta::seconds(10);

/// Where the lock lives and who takes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockSettings {
    pub namespace: String,
    pub name: String,
    /// Our `holderIdentity`: unique per run.
    pub holder: String,
    pub duration: Duration,
}

/// The held lock. Call [`Lock::release`] at the end; until then it renews itself.
#[derive(Debug)]
pub struct Lock {
    settings: LockSettings,
    api: Api<Lease>,
    state: Arc<Mutex<State>>,
    renewer: tokio::task::JoinHandle<()>,
}

#[derive(Debug)]
struct State {
    lease: Lease,
    /// Who took the lease from us, once someone did.
    lost_to: Option<String>,
}

/// Who may take a lease now.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Holder {
    /// Nobody, us, or a holder whose lease expired.
    Available,
    Other {
        holder: String,
        until: DateTime<Utc>,
    },
}

fn holder_of(lease: &Lease, me: &str, now: DateTime<Utc>) -> Holder {
    let Some(spec) = &lease.spec else {
        return Holder::Available;
    };
    let holder = spec.holder_identity.as_deref().unwrap_or_default();
    if holder.is_empty() || holder == me {
        return Holder::Available;
    }
    let renewed = spec
        .renew_time
        .as_ref()
        .or(spec.acquire_time.as_ref())
        .and_then(|time| DateTime::from_timestamp(time.0.as_second(), 0));
    let duration = chrono::TimeDelta::seconds(spec.lease_duration_seconds.unwrap_or(0).into());
    match renewed {
        Some(renewed) if renewed + duration + CLOCK_SKEW > now => Holder::Other {
            holder: holder.to_string(),
            until: renewed + duration,
        },
        _ => Holder::Available,
    }
}

fn micro_time(now: DateTime<Utc>) -> MicroTime {
    let nanos = i32::try_from(now.timestamp_subsec_nanos()).expect("sub-second nanoseconds fit");
    MicroTime(
        k8s_openapi::jiff::Timestamp::new(now.timestamp(), nanos)
            .expect("the clock reads a representable instant"),
    )
}

/// The lease as we hold it from `now`, based on what was read (`None`: a new lease).
fn held_lease(read: Option<&Lease>, settings: &LockSettings, now: DateTime<Utc>) -> Lease {
    let previous = read
        .and_then(|lease| lease.spec.clone())
        .unwrap_or_default();
    let previous_holder = previous.holder_identity.clone().unwrap_or_default();
    let transitions = previous.lease_transitions.unwrap_or(0);
    let changed_hands = read.is_some() && previous_holder != settings.holder;
    let duration = i32::try_from(settings.duration.as_secs())
        .unwrap_or(i32::MAX)
        .max(1);
    Lease {
        metadata: ObjectMeta {
            name: Some(settings.name.clone()),
            namespace: Some(settings.namespace.clone()),
            resource_version: read.and_then(|lease| lease.metadata.resource_version.clone()),
            ..read.map(|lease| lease.metadata.clone()).unwrap_or_default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(settings.holder.clone()),
            lease_duration_seconds: Some(duration),
            acquire_time: if previous_holder == settings.holder {
                previous
                    .acquire_time
                    .clone()
                    .or_else(|| Some(micro_time(now)))
            } else {
                Some(micro_time(now))
            },
            renew_time: Some(micro_time(now)),
            lease_transitions: Some(if changed_hands {
                transitions + 1
            } else {
                transitions
            }),
            ..LeaseSpec::default()
        }),
    }
}

impl Client {
    /// Takes the run lock, or says who holds it.
    pub async fn acquire_lock(&self, settings: LockSettings) -> Result<Lock, Error> {
        let api: Api<Lease> = Api::namespaced(self.client.clone(), &settings.namespace);
        let read_error = |source| Error::ReadLease {
            namespace: settings.namespace.clone(),
            name: settings.name.clone(),
            source,
        };
        let write_error = |source| Error::WriteLease {
            namespace: settings.namespace.clone(),
            name: settings.name.clone(),
            source,
        };
        let race = || Error::LockRace {
            namespace: settings.namespace.clone(),
            name: settings.name.clone(),
        };
        let existing = retry::idempotent("read lease", || api.get_opt(&settings.name))
            .await
            .map_err(read_error)?;
        let now = Utc::now();
        let lease = match existing {
            None => {
                let lease = held_lease(None, &settings, now);
                match api.create(&PostParams::default(), &lease).await {
                    Ok(created) => created,
                    Err(error) if api_status(&error).is_some_and(|s| s.code == 409) => {
                        return Err(race());
                    }
                    Err(error) => return Err(write_error(error)),
                }
            }
            Some(existing) => {
                if let Holder::Other { holder, until } = holder_of(&existing, &settings.holder, now)
                {
                    return Err(Error::LockHeld {
                        namespace: settings.namespace.clone(),
                        name: settings.name.clone(),
                        holder,
                        until,
                    });
                }
                let lease = held_lease(Some(&existing), &settings, now);
                match api
                    .replace(&settings.name, &PostParams::default(), &lease)
                    .await
                {
                    Ok(replaced) => replaced,
                    Err(error) if api_status(&error).is_some_and(|s| s.code == 409) => {
                        return Err(race());
                    }
                    Err(error) => return Err(write_error(error)),
                }
            }
        };
        tracing::info!(
            namespace = %settings.namespace,
            name = %settings.name,
            holder = %settings.holder,
            "took the run lock"
        );
        let state = Arc::new(Mutex::new(State {
            lease,
            lost_to: None,
        }));
        let renewer = tokio::spawn(renew(api.clone(), settings.clone(), state.clone()));
        Ok(Lock {
            settings,
            api,
            state,
            renewer,
        })
    }
}

/// Renews the lease every third of its duration until aborted or lost.
async fn renew(api: Api<Lease>, settings: LockSettings, state: Arc<Mutex<State>>) {
    let interval = settings.duration / 3;
    let mut last_renewal = Utc::now();
    loop {
        tokio::time::sleep(interval).await;
        let current = state
            .lock()
            .expect("lock state is never poisoned")
            .lease
            .clone();
        let now = Utc::now();
        let renewed = held_lease(Some(&current), &settings, now);
        let outcome = api
            .replace(&settings.name, &PostParams::default(), &renewed)
            .await;
        let mut state = state.lock().expect("lock state is never poisoned");
        match outcome {
            Ok(lease) => {
                state.lease = lease;
                last_renewal = now;
            }
            Err(error) => {
                let conflict = api_status(&error).is_some_and(|s| s.code == 409);
                let expired = now - last_renewal
                    > chrono::TimeDelta::from_std(settings.duration).unwrap_or_default();
                tracing::warn!(error = %describe(&error), "failed to renew the run lock");
                if conflict || expired {
                    // Whoever wrote it last holds it now; we must not act any more.
                    state.lost_to = Some(if conflict {
                        "another run".to_string()
                    } else {
                        "nobody (our lease expired unrenewed)".to_string()
                    });
                    return;
                }
            }
        }
    }
}

impl Lock {
    /// `Err` once the lease was lost: the run must not make further changes.
    pub fn check(&self) -> Result<(), Error> {
        let state = self.state.lock().expect("lock state is never poisoned");
        match &state.lost_to {
            None => Ok(()),
            Some(holder) => Err(Error::LockLost {
                namespace: self.settings.namespace.clone(),
                name: self.settings.name.clone(),
                holder: holder.clone(),
            }),
        }
    }

    /// Stops renewing and clears the holder, so the next run need not wait for expiry.
    pub async fn release(self) -> Result<(), Error> {
        self.renewer.abort();
        // Wait for the renewer to stop, so it cannot write after the release.
        let _ = self.renewer.await;
        let (mut lease, lost) = {
            let state = self.state.lock().expect("lock state is never poisoned");
            (state.lease.clone(), state.lost_to.is_some())
        };
        if lost {
            return Ok(());
        }
        if let Some(spec) = &mut lease.spec {
            spec.holder_identity = None;
            spec.lease_duration_seconds = Some(1);
        }
        match self
            .api
            .replace(&self.settings.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => {
                tracing::debug!(name = %self.settings.name, "released the run lock");
                Ok(())
            }
            // Someone else wrote it meanwhile: it is not ours to clear.
            Err(error) if api_status(&error).is_some_and(|s| s.code == 409) => Ok(()),
            Err(source) => Err(Error::WriteLease {
                namespace: self.settings.namespace.clone(),
                name: self.settings.name.clone(),
                source,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-21T20:49:09Z")
            .expect("valid")
            .to_utc()
    }

    fn settings() -> LockSettings {
        LockSettings {
            namespace: "kube-system".to_string(),
            name: LEASE_NAME.to_string(),
            holder: "me".to_string(),
            duration: LEASE_DURATION,
        }
    }

    fn lease(holder: &str, renewed_seconds_ago: i64) -> Lease {
        Lease {
            metadata: ObjectMeta {
                name: Some(LEASE_NAME.to_string()),
                resource_version: Some("7".to_string()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(holder.to_string()),
                lease_duration_seconds: Some(60),
                renew_time: Some(micro_time(
                    now() - chrono::TimeDelta::seconds(renewed_seconds_ago),
                )),
                lease_transitions: Some(3),
                ..LeaseSpec::default()
            }),
        }
    }

    #[test]
    fn another_holders_unexpired_lease_is_honoured_with_a_margin_for_skew() {
        assert!(matches!(
            holder_of(&lease("other", 30), "me", now()),
            Holder::Other { .. }
        ));
        // Expired by 5 s, but within the skew allowance.
        assert!(matches!(
            holder_of(&lease("other", 65), "me", now()),
            Holder::Other { .. }
        ));
        assert_eq!(
            holder_of(&lease("other", 75), "me", now()),
            Holder::Available
        );
    }

    #[test]
    fn a_free_or_own_lease_is_available() {
        assert_eq!(holder_of(&lease("", 1), "me", now()), Holder::Available);
        assert_eq!(holder_of(&lease("me", 1), "me", now()), Holder::Available);
    }

    #[test]
    fn taking_over_keeps_the_read_resource_version_and_counts_the_transition() {
        let taken = held_lease(Some(&lease("other", 600)), &settings(), now());
        assert_eq!(taken.metadata.resource_version.as_deref(), Some("7"));
        let spec = taken.spec.expect("spec");
        assert_eq!(spec.holder_identity.as_deref(), Some("me"));
        assert_eq!(spec.lease_transitions, Some(4));
        assert_eq!(spec.lease_duration_seconds, Some(60));
        assert_eq!(spec.acquire_time, spec.renew_time);
    }

    #[test]
    fn a_new_lease_starts_with_no_transitions() {
        let created = held_lease(None, &settings(), now());
        assert_eq!(created.metadata.resource_version, None);
        assert_eq!(created.spec.expect("spec").lease_transitions, Some(0));
    }
}
