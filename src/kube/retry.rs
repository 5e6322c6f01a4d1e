//! A short, explicit retry for idempotent requests (lists, label applies): a few attempts with a
//! growing pause, honouring a short `Retry-After`. Never used for evictions or lease writes.

use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;

use super::error::is_transient;

/// Attempts in all, the first included.
const ATTEMPTS: u32 = 3;
/// Pause before the second attempt; doubled before each later one.
const FIRST_PAUSE: Duration = Duration::from_millis(250);
/// Longest pause, whatever `Retry-After` asks for: a run should not sit waiting on one call.
const MAX_PAUSE: Duration = Duration::from_secs(5);

/// Why a guarded request ended without an answer to use.
#[derive(Debug)]
pub enum Stopped<E> {
    /// The guard refused before an attempt: nothing more was sent.
    Refused(E),
    /// The request failed for good, or its attempts ran out.
    Failed(::kube::Error),
}

/// Runs `request` until it succeeds, fails for good, or the attempts run out.
pub async fn idempotent<T, F, Fut>(what: &str, request: F) -> Result<T, ::kube::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ::kube::Error>>,
{
    match guarded(what, || Ok::<(), Infallible>(()), request).await {
        Ok(answer) => Ok(answer),
        Err(Stopped::Failed(error)) => Err(error),
        Err(Stopped::Refused(never)) => match never {},
    }
}

/// As [`idempotent`], asking `may_send` before every attempt, the first and each retry: once it
/// refuses, nothing more is sent (a write must not start after the run lost its lock, however
/// its earlier attempts went).
pub async fn guarded<T, E, F, Fut>(
    what: &str,
    may_send: impl Fn() -> Result<(), E>,
    mut request: F,
) -> Result<T, Stopped<E>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ::kube::Error>>,
{
    let mut pause = FIRST_PAUSE;
    let mut attempt = 1;
    loop {
        may_send().map_err(Stopped::Refused)?;
        match request().await {
            Err(error) if attempt < ATTEMPTS && is_transient(&error) => {
                let asked = super::api_status(&error)
                    .and_then(|status| status.details.as_ref())
                    .map(|details| Duration::from_secs(u64::from(details.retry_after_seconds)))
                    .unwrap_or_default();
                let wait = pause.max(asked).min(MAX_PAUSE);
                tracing::debug!(
                    request = what,
                    attempt,
                    error = %super::describe(&error),
                    wait_ms = wait.as_millis() as u64,
                    "transient Kubernetes API failure; trying again"
                );
                tokio::time::sleep(wait).await;
                pause *= 2;
                attempt += 1;
            }
            other => return other.map_err(Stopped::Failed),
        }
    }
}
