//! SIGTERM and SIGINT: the run finishes the request in flight, makes no further change, reports
//! what it did and exits 1. Kubernetes sends SIGTERM when a CronJob's pod is deleted.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

// 0 (the default): running.
const TERMINATED: u8 = 1;
const INTERRUPTED: u8 = 2;

/// Whether the run was asked to stop. Cheap to clone and check.
#[derive(Clone, Debug, Default)]
pub struct Stop(Arc<AtomicU8>);

impl Stop {
    /// A stop that only [`Stop::request`] triggers.
    pub fn new() -> Stop {
        Stop::default()
    }

    /// Listens for SIGTERM and SIGINT from now on. Call inside the runtime.
    pub fn on_signals() -> std::io::Result<Stop> {
        use tokio::signal::unix::{SignalKind, signal};
        let stop = Stop::new();
        let mut terminate = signal(SignalKind::terminate())?;
        let mut interrupt = signal(SignalKind::interrupt())?;
        let flag = stop.clone();
        tokio::spawn(async move {
            let state = tokio::select! {
                _ = terminate.recv() => TERMINATED,
                _ = interrupt.recv() => INTERRUPTED,
            };
            tracing::warn!(
                signal = if state == TERMINATED {
                    "SIGTERM"
                } else {
                    "SIGINT"
                },
                "asked to stop: finishing the request in flight, then making no further change"
            );
            flag.0.store(state, Ordering::SeqCst);
        });
        Ok(stop)
    }

    /// Asks the run to stop (as SIGTERM does).
    pub fn request(&self) {
        self.0.store(TERMINATED, Ordering::SeqCst);
    }

    /// The signal that asked the run to stop, if one did.
    pub fn requested(&self) -> Option<&'static str> {
        match self.0.load(Ordering::SeqCst) {
            TERMINATED => Some("SIGTERM"),
            INTERRUPTED => Some("SIGINT"),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_is_seen_by_every_clone() {
        let stop = Stop::new();
        let seen = stop.clone();
        assert_eq!(seen.requested(), None);
        stop.request();
        assert_eq!(seen.requested(), Some("SIGTERM"));
    }
}
