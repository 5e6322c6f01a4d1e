//! The run lock: a `coordination.k8s.io/v1` Lease, so two runs (a slow CronJob run and the next
//! one, or a run from a laptop) never act at the same time.
//!
//! Acquiring is create-or-compare-and-swap: a missing lease is created; an existing one is taken
//! over only when it is free, ours or expired, with a PUT carrying the `resourceVersion` we read,
//! so of two runs racing for it exactly one wins and the other sees 409. An unexpired lease of
//! another holder is honoured.
//!
//! The lock fails closed. What we hold is a claim with an expiry: the instant our last
//! successful write of the lease was *sent*, plus the lease duration, minus a margin for clocks
//! that disagree. [`Lock::check`] compares it with the clock, and the run checks before every
//! write, so a run whose renewals fail stops acting before anyone else may take the lease —
//! without waiting to be told. A renewal answered 409 means another run wrote the lease: the
//! claim is lost at once. Renewals go on in the background (every third of the duration, sooner
//! after a failure); a renewal that succeeds after the claim expired is safe to trust again,
//! because its compare-and-swap proves nobody wrote the lease in between. Release clears the
//! holder.
//!
//! The lock also keeps the eviction history (`snapshot::history`; its objects in
//! [`super::history`]): it reads it as acquired ([`Lock::history`]) and writes it only while
//! held ([`Lock::write_history`]): the ConfigMap with the `resourceVersion` it read, then, once,
//! the Lease without the earlier form's annotation, with the same compare-and-swap as a renewal,
//! which it also is. Renewals and history writes take turns, so each carries the
//! `resourceVersion` the one before it got back: two writes of ours in flight at once would
//! fail one of them with 409, which reads as a takeover. A run that does not take the lock (a
//! dry run) reads the history with [`Client::read_history`]; `snapshot` records it with
//! [`Client::recorded_history`].

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use chrono::{DateTime, Utc};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};

use super::history as objects;
use super::{Call, Client, Error, api_status, describe, micro_time, retry};
use crate::snapshot::history::{self, Compact, History};

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
    claim: Arc<Mutex<Claim>>,
    /// Held across each write of the lease (renewal or history), so that they take turns.
    writing: Arc<tokio::sync::Mutex<()>>,
    /// The eviction history as it was when the lock was taken.
    history: History,
    config_maps: Api<ConfigMap>,
    /// The history ConfigMap as last read or written (`None`: there is none yet), and whether
    /// the Lease still holds the earlier form's annotation.
    stored: Mutex<(Option<ConfigMap>, bool)>,
    renewer: tokio::task::JoinHandle<()>,
}

/// What we hold, and until when.
#[derive(Debug)]
struct Claim {
    /// The lease as last written by us (its `resourceVersion` is the one to renew against).
    lease: Lease,
    /// When the write that produced `lease` was sent.
    renewed_at: Instant,
    /// After this instant no write may start.
    valid_until: Instant,
    /// Another run wrote the lease.
    taken_over: bool,
}

impl Claim {
    fn new(lease: Lease, sent_at: Instant, duration: Duration) -> Claim {
        Claim {
            lease,
            renewed_at: sent_at,
            valid_until: sent_at + duration - expiry_margin(duration),
            taken_over: false,
        }
    }

    /// `Err` once the claim is lost or expired at `now`.
    fn check(&self, now: Instant, settings: &LockSettings) -> Result<(), Error> {
        if self.taken_over {
            return Err(Error::LockLost {
                namespace: settings.namespace.clone(),
                name: settings.name.clone(),
            });
        }
        if now >= self.valid_until {
            return Err(Error::LockExpired {
                namespace: settings.namespace.clone(),
                name: settings.name.clone(),
                unrenewed_seconds: (now - self.renewed_at).as_secs(),
            });
        }
        Ok(())
    }
}

/// How long before the lease expires we stop acting: others judge expiry by their own clocks
/// (with [`CLOCK_SKEW`] on top), and a write we start must not land after someone took over.
fn expiry_margin(duration: Duration) -> Duration {
    (duration / 6).min(Duration::from_secs(10))
}

/// Pause before trying again after a failed renewal.
const RENEWAL_RETRY: Duration = Duration::from_secs(5);

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
        let read_error = |error| Error::ReadLease {
            namespace: settings.namespace.clone(),
            name: settings.name.clone(),
            source: Call::object("GET", api.resource_url(), &settings.name).failed(error),
        };
        let create = Call::new("POST", api.resource_url());
        let replace = Call::object("PUT", api.resource_url(), &settings.name);
        let write_error = |call: &Call, error| Error::WriteLease {
            namespace: settings.namespace.clone(),
            name: settings.name.clone(),
            source: call.failed(error),
        };
        let race = || Error::LockRace {
            namespace: settings.namespace.clone(),
            name: settings.name.clone(),
        };
        let existing = retry::idempotent("read lease", || api.get_opt(&settings.name))
            .await
            .map_err(read_error)?;
        let now = Utc::now();
        let sent_at = Instant::now();
        let lease = match existing {
            None => {
                let lease = held_lease(None, &settings, now);
                match api.create(&PostParams::default(), &lease).await {
                    Ok(created) => created,
                    Err(error) if api_status(&error).is_some_and(|s| s.code == 409) => {
                        return Err(race());
                    }
                    Err(error) => return Err(write_error(&create, error)),
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
                    Err(error) => return Err(write_error(&replace, error)),
                }
            }
        };
        tracing::info!(
            namespace = %settings.namespace,
            name = %settings.name,
            holder = %settings.holder,
            "took the run lock"
        );
        let legacy = objects::legacy(&lease).is_some();
        let (history, config_map) = self.held_history(&settings, &lease).await;
        let claim = Arc::new(Mutex::new(Claim::new(lease, sent_at, settings.duration)));
        let writing = Arc::new(tokio::sync::Mutex::new(()));
        let renewer = tokio::spawn(renew(
            api.clone(),
            settings.clone(),
            claim.clone(),
            writing.clone(),
        ));
        Ok(Lock {
            config_maps: Api::namespaced(self.client.clone(), &settings.namespace),
            settings,
            api,
            claim,
            writing,
            history,
            stored: Mutex::new((config_map, legacy)),
            renewer,
        })
    }

    /// The eviction history as the lock finds it: the ConfigMap beside `lease` and what the
    /// lease's earlier form holds, and the ConfigMap as read (to write over). Unreadable: pacing
    /// fails closed, and nothing writes the history.
    async fn held_history(
        &self,
        settings: &LockSettings,
        lease: &Lease,
    ) -> (History, Option<ConfigMap>) {
        let (namespace, name) = (&settings.namespace, &settings.name);
        match self.history_config_map(namespace, name).await {
            Ok(config_map) => (
                objects::history_of(Some(lease), config_map.as_ref(), namespace, name),
                config_map,
            ),
            Err(error) => {
                let object = history::config_map_object(namespace, &history::config_map_name(name));
                (objects::not_read(object, &error), None)
            }
        }
    }
}

/// Renews the lease every third of its duration (sooner after a failure) until aborted or taken
/// over, taking turns with the history's writes (`writing`).
async fn renew(
    api: Api<Lease>,
    settings: LockSettings,
    claim: Arc<Mutex<Claim>>,
    writing: Arc<tokio::sync::Mutex<()>>,
) {
    let interval = settings.duration / 3;
    let mut pause = interval;
    loop {
        tokio::time::sleep(pause).await;
        let _writing = writing.lock().await;
        let current = {
            let claim = lock_claim(&claim);
            // A history write found the lease taken over meanwhile.
            if claim.taken_over {
                return;
            }
            claim.lease.clone()
        };
        let sent_at = Instant::now();
        let renewed = held_lease(Some(&current), &settings, Utc::now());
        let outcome = api
            .replace(&settings.name, &PostParams::default(), &renewed)
            .await;
        let mut claim = lock_claim(&claim);
        match outcome {
            Ok(lease) => {
                *claim = Claim::new(lease, sent_at, settings.duration);
                pause = interval;
            }
            Err(error) if api_status(&error).is_some_and(|s| s.code == 409) => {
                tracing::warn!(
                    error = %describe(&error),
                    "another run wrote the run lock: making no further change"
                );
                claim.taken_over = true;
                return;
            }
            Err(error) => {
                let now = Instant::now();
                if now >= claim.valid_until {
                    tracing::warn!(
                        error = %describe(&error),
                        unrenewed_seconds = (now - claim.renewed_at).as_secs(),
                        "the run lock could not be renewed in time: no change starts until a \
                         renewal succeeds"
                    );
                } else {
                    tracing::warn!(
                        error = %describe(&error),
                        valid_for_seconds = (claim.valid_until - now).as_secs(),
                        "failed to renew the run lock"
                    );
                }
                pause = RENEWAL_RETRY.min(interval);
            }
        }
    }
}

fn lock_claim(claim: &Mutex<Claim>) -> std::sync::MutexGuard<'_, Claim> {
    claim.lock().expect("the claim is never poisoned")
}

fn lock_stored(
    stored: &Mutex<(Option<ConfigMap>, bool)>,
) -> std::sync::MutexGuard<'_, (Option<ConfigMap>, bool)> {
    stored
        .lock()
        .expect("the history's state is never poisoned")
}

impl Lock {
    /// `Ok` while the lock may be acted under: not taken over, and not expired by the clock.
    pub fn check(&self) -> Result<(), Error> {
        lock_claim(&self.claim).check(Instant::now(), &self.settings)
    }

    /// The eviction history as it was when the lock was taken (the run's own writes do not
    /// change it: they are made from it).
    pub fn history(&self) -> &History {
        &self.history
    }

    /// Writes the eviction history `compact`, while the claim holds: the ConfigMap, with the
    /// `resourceVersion` read (409: someone else wrote it, [`Error::HistoryChanged`]); then,
    /// while the Lease still holds the earlier form's annotation (read into this history), the
    /// Lease without it, a compare-and-swap that also renews the claim. A 409 there means
    /// another run wrote the lease: the claim is lost, as when a renewal meets one.
    pub async fn write_history(&self, compact: Compact) -> Result<(), Error> {
        let _writing = self.writing.lock().await;
        self.check()?;
        let (previous, legacy) = lock_stored(&self.stored).clone();
        let namespace = &self.settings.namespace;
        let desired =
            objects::config_map(namespace, &self.settings.name, compact, previous.as_ref());
        let name = history::config_map_name(&self.settings.name);
        let params = PostParams::default();
        let (written, call) = match previous {
            None => (
                self.config_maps.create(&params, &desired).await,
                Call::new("POST", self.config_maps.resource_url()),
            ),
            Some(_) => (
                self.config_maps.replace(&name, &params, &desired).await,
                Call::object("PUT", self.config_maps.resource_url(), &name),
            ),
        };
        match written {
            Ok(written) => lock_stored(&self.stored).0 = Some(written),
            Err(error) if api_status(&error).is_some_and(|s| s.code == 409) => {
                return Err(Error::HistoryChanged {
                    namespace: namespace.clone(),
                    name,
                });
            }
            Err(error) => {
                return Err(Error::WriteHistory {
                    namespace: namespace.clone(),
                    name,
                    source: call.failed(error),
                });
            }
        }
        if legacy {
            self.remove_legacy().await?;
        }
        Ok(())
    }

    /// Writes the Lease without the earlier form's annotation, now that the ConfigMap holds
    /// its entries. Failing to is not the write's failure: the next write tries again, and an
    /// eviction counted twice meanwhile only delays its workload's next one. Losing the claim
    /// is.
    async fn remove_legacy(&self) -> Result<(), Error> {
        let current = lock_claim(&self.claim).lease.clone();
        let mut lease = held_lease(Some(&current), &self.settings, Utc::now());
        if let Some(annotations) = &mut lease.metadata.annotations {
            annotations.remove(history::ANNOTATION);
        }
        let sent_at = Instant::now();
        let outcome = self
            .api
            .replace(&self.settings.name, &PostParams::default(), &lease)
            .await;
        let mut claim = lock_claim(&self.claim);
        match outcome {
            Ok(written) => {
                *claim = Claim::new(written, sent_at, self.settings.duration);
                lock_stored(&self.stored).1 = false;
                Ok(())
            }
            Err(error) if api_status(&error).is_some_and(|s| s.code == 409) => {
                tracing::warn!(
                    error = %describe(&error),
                    "another run wrote the run lock: making no further change"
                );
                claim.taken_over = true;
                Err(Error::LockLost {
                    namespace: self.settings.namespace.clone(),
                    name: self.settings.name.clone(),
                })
            }
            Err(error) => {
                tracing::warn!(
                    error = %describe(&error),
                    "the eviction history's earlier form stays on the run lock until the next \
                     write: its evictions are counted twice meanwhile"
                );
                Ok(())
            }
        }
    }

    /// Stops renewing and clears the holder, so the next run need not wait for expiry.
    pub async fn release(self) -> Result<(), Error> {
        self.renewer.abort();
        // Wait for the renewer to stop, so it cannot write after the release.
        let _ = self.renewer.await;
        let (mut lease, taken_over) = {
            let claim = lock_claim(&self.claim);
            (claim.lease.clone(), claim.taken_over)
        };
        if taken_over {
            return Ok(());
        }
        // Even an expired claim is cleared: the write carries the resourceVersion we last wrote,
        // so it fails (409) if anyone wrote the lease since.
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
            Err(error) => Err(Error::WriteLease {
                namespace: self.settings.namespace.clone(),
                name: self.settings.name.clone(),
                source: Call::object("PUT", self.api.resource_url(), &self.settings.name)
                    .failed(error),
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

    #[tokio::test(start_paused = true)]
    async fn a_claim_expires_a_margin_before_the_lease_unless_renewed() {
        let settings = settings();
        let sent = Instant::now();
        let claim = Claim::new(lease("me", 0), sent, settings.duration);
        assert!(
            claim
                .check(sent + Duration::from_secs(49), &settings)
                .is_ok()
        );
        let error = claim
            .check(sent + Duration::from_secs(50), &settings)
            .expect_err("60 s lease, 10 s margin");
        assert!(
            matches!(
                error,
                Error::LockExpired {
                    unrenewed_seconds: 50,
                    ..
                }
            ),
            "{error}"
        );
        let renewed = Claim::new(
            lease("me", 0),
            sent + Duration::from_secs(40),
            settings.duration,
        );
        assert!(
            renewed
                .check(sent + Duration::from_secs(89), &settings)
                .is_ok()
        );
    }

    #[test]
    fn short_leases_keep_most_of_their_duration() {
        assert_eq!(
            expiry_margin(Duration::from_secs(60)),
            Duration::from_secs(10)
        );
        assert_eq!(
            expiry_margin(Duration::from_secs(6)),
            Duration::from_secs(1)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_claim_taken_over_is_lost_whatever_the_clock_says() {
        let settings = settings();
        let now = Instant::now();
        let mut claim = Claim::new(lease("me", 0), now, settings.duration);
        claim.taken_over = true;
        assert!(matches!(
            claim.check(now, &settings),
            Err(Error::LockLost { .. })
        ));
    }

    #[test]
    fn a_new_lease_starts_with_no_transitions() {
        let created = held_lease(None, &settings(), now());
        assert_eq!(created.metadata.resource_version, None);
        assert_eq!(created.spec.expect("spec").lease_transitions, Some(0));
    }
}
