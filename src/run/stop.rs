//! When a run stops early, and why.
//!
//! Two levels, because a request already sent is not the same as one not yet sent:
//!
//! * **halt** (the first SIGTERM or SIGINT, or the deadline): no new change starts; waits that
//!   are not a request in flight (retry pauses, polling a vCenter task) end at once; reads still
//!   under way are abandoned. A write already sent is allowed to get its answer, so the report
//!   can say what it did.
//! * **abort** (the deadline): every wait ends, a request in flight included; its outcome is
//!   reported as unknown. Then the report is printed and the lock released, before the pod is
//!   killed.
//!
//! A second SIGTERM or SIGINT exits at once with code 130.

use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

pub use crate::outcome::{Signal, StopReason};

/// Exit code of a run ended by a second signal (128 + SIGINT, as shells report an interrupt).
pub const EXIT_INTERRUPTED_TWICE: i32 = 130;

/// Whether, and why, the run was asked to stop. Cheap to clone; every clone sees the same.
#[derive(Clone, Debug, Default)]
pub struct Stop {
    halt: CancellationToken,
    abort: CancellationToken,
    /// The first reason given; later ones do not replace it.
    reason: Arc<OnceLock<StopReason>>,
}

impl Stop {
    /// A stop that only [`Stop::halt`] and a deadline trigger.
    pub fn new() -> Stop {
        Stop::default()
    }

    /// Listens for SIGTERM and SIGINT from now on: the first halts the run, the second exits the
    /// process at once with [`EXIT_INTERRUPTED_TWICE`]. Call inside the runtime.
    pub fn on_signals() -> std::io::Result<Stop> {
        use tokio::signal::unix::{SignalKind, signal};
        let stop = Stop::new();
        let mut terminate = signal(SignalKind::terminate())?;
        let mut interrupt = signal(SignalKind::interrupt())?;
        let listener = stop.clone();
        tokio::spawn(async move {
            let mut next = async || {
                tokio::select! {
                    _ = terminate.recv() => Signal::Terminate,
                    _ = interrupt.recv() => Signal::Interrupt,
                }
            };
            let first = next().await;
            tracing::warn!(
                signal = %first,
                "asked to stop: no further change is made; a second signal exits at once"
            );
            listener.halt(StopReason::Signal(first));
            let second = next().await;
            tracing::error!(signal = %second, "asked to stop again: exiting at once");
            std::process::exit(EXIT_INTERRUPTED_TWICE);
        });
        Ok(stop)
    }

    /// Aborts the run `deadline` from now (see the module docs). Call inside the runtime.
    pub fn abort_after(&self, deadline: Duration) {
        let stop = self.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = tokio::time::sleep(deadline) => {
                    tracing::warn!(deadline_seconds = deadline.as_secs(), "the run's deadline passed");
                    stop.halt(StopReason::Deadline(deadline));
                    stop.abort.cancel();
                }
                // Nothing is left to bound once the run is aborted another way.
                () = stop.abort.cancelled() => {}
            }
        });
    }

    /// Halts the run for `reason` (the first reason given is the one kept).
    pub fn halt(&self, reason: StopReason) {
        let _ = self.reason.set(reason);
        self.halt.cancel();
    }

    /// Why the run was halted, once it was.
    pub fn halted(&self) -> Option<StopReason> {
        self.halt
            .is_cancelled()
            .then(|| self.reason.get().copied())
            .flatten()
    }

    /// Whether every wait, a request in flight included, must end now.
    pub fn aborted(&self) -> bool {
        self.abort.is_cancelled()
    }

    /// The token that is cancelled when the run halts, for adapters to end their own waits.
    pub fn halt_token(&self) -> &CancellationToken {
        &self.halt
    }

    /// `work`, unless the run halts first (then it is dropped).
    pub async fn unless_halted<F: Future>(&self, work: F) -> Result<F::Output, StopReason> {
        tokio::select! {
            biased;
            () = self.halt.cancelled() => Err(self.reason_given()),
            output = work => Ok(output),
        }
    }

    /// `work`, unless the run is aborted first (then it is dropped).
    pub async fn unless_aborted<F: Future>(&self, work: F) -> Result<F::Output, StopReason> {
        tokio::select! {
            biased;
            () = self.abort.cancelled() => Err(self.reason_given()),
            output = work => Ok(output),
        }
    }

    fn reason_given(&self) -> StopReason {
        *self
            .reason
            .get()
            .expect("a reason is set before a token is cancelled")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_halt_is_seen_by_every_clone_and_keeps_its_first_reason() {
        let stop = Stop::new();
        let seen = stop.clone();
        assert_eq!(seen.halted(), None);
        stop.halt(StopReason::Signal(Signal::Terminate));
        stop.halt(StopReason::Signal(Signal::Interrupt));
        assert_eq!(seen.halted(), Some(StopReason::Signal(Signal::Terminate)));
        assert!(
            !seen.aborted(),
            "a signal does not abort requests in flight"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_deadline_halts_and_aborts_what_is_in_flight() {
        let stop = Stop::new();
        stop.abort_after(Duration::from_secs(100));
        let slow = stop.unless_aborted(tokio::time::sleep(Duration::from_secs(3600)));
        let started = tokio::time::Instant::now();
        assert_eq!(
            slow.await,
            Err(StopReason::Deadline(Duration::from_secs(100)))
        );
        assert_eq!(started.elapsed(), Duration::from_secs(100));
        assert!(stop.aborted());
        assert_eq!(
            stop.halted(),
            Some(StopReason::Deadline(Duration::from_secs(100)))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_signal_ends_waits_but_lets_a_request_in_flight_finish() {
        let stop = Stop::new();
        let halter = stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            halter.halt(StopReason::Signal(Signal::Terminate));
        });
        let wait = stop.unless_halted(tokio::time::sleep(Duration::from_secs(60)));
        assert_eq!(wait.await, Err(StopReason::Signal(Signal::Terminate)));
        let request = stop.unless_aborted(async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            "answered"
        });
        assert_eq!(request.await, Ok("answered"));
    }

    #[tokio::test(start_paused = true)]
    async fn work_that_ends_before_the_deadline_is_not_disturbed() {
        let stop = Stop::new();
        stop.abort_after(Duration::from_secs(10));
        let quick = stop.unless_aborted(tokio::time::sleep(Duration::from_secs(1)));
        assert_eq!(quick.await, Ok(()));
        assert_eq!(stop.halted(), None);
    }
}
