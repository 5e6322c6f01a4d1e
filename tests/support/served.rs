//! A server binary of the tests (the Pushgateway, Prometheus) as a child process on a free port
//! of 127.0.0.1, waited for until it answers, killed on drop.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server may take to answer that it is ready.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// A running server, its temporary directory (configuration, data, log) kept while it runs.
pub struct Served {
    child: Child,
    /// `127.0.0.1:<port>`.
    pub address: String,
    _dir: tempfile::TempDir,
}

impl Served {
    /// Starts `binary` with the arguments `args` gives for its listen address and its temporary
    /// directory, and waits until `ready` says it answers at that address. The port is one the
    /// kernel just gave out and took back; another process taking it in between makes the start
    /// fail with "address already in use" in its log, and it is started again on a new port.
    /// `what` names the server in messages; `install_hint` says how to get the binary.
    pub fn start(
        what: &str,
        binary: &str,
        install_hint: &str,
        args: impl Fn(&str, &Path) -> Vec<String>,
        ready: impl Fn(&str) -> bool,
    ) -> Served {
        for _ in 0..3 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|listener| listener.local_addr())
                .expect("a free port")
                .port();
            let address = format!("127.0.0.1:{port}");
            let dir = tempfile::tempdir().expect("a temporary directory");
            let log = dir.path().join("server.log");
            let child = Command::new(binary)
                .args(args(&address, dir.path()))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&log).expect("create the log file"))
                .spawn()
                .unwrap_or_else(|error| {
                    panic!("{install_hint} (failed to start {binary}: {error})")
                });
            let mut served = Served {
                child,
                address,
                _dir: dir,
            };
            if served.wait_until_ready(what, &ready) {
                return served;
            }
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            assert!(
                log.contains("address already in use"),
                "{what} exited before it was ready; its log:\n{log}"
            );
        }
        panic!("no free port for {what} after three tries");
    }

    /// Polls `ready` until it holds; false when the process exited first.
    fn wait_until_ready(&mut self, what: &str, ready: &impl Fn(&str) -> bool) -> bool {
        let started = Instant::now();
        loop {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            if ready(&self.address) {
                return true;
            }
            assert!(
                started.elapsed() < READY_TIMEOUT,
                "{what} at {} was not ready within {READY_TIMEOUT:?}",
                self.address
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
