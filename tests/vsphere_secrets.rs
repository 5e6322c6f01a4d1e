//! Secrets never leak: a wrong password is a clear InvalidLogin error, and neither password
//! appears in errors, Debug output or the most verbose logs.
//!
//! A file of its own because it installs a process-wide log subscriber: tracing caches which
//! call sites are enabled, and a thread-scoped subscriber in a process where other tests log
//! concurrently misses events now and then.

mod support;

use std::io::Write;
use std::sync::{Arc, Mutex};

use support::vcsim::{self, Vcsim};
use vsphere_descheduler::inventory::Inventory;
use vsphere_descheduler::vsphere::{Credentials, Error, VcenterClient};

fn lab() -> Inventory {
    vcsim::load_inventory("vsphere/lab-inventory.yaml")
}

#[derive(Clone, Default)]
struct CapturedLogs(Arc<Mutex<Vec<u8>>>);

impl Write for CapturedLogs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log buffer").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl CapturedLogs {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("log buffer")).into_owned()
    }
}

#[tokio::test]
async fn a_wrong_password_is_an_invalid_login_that_never_shows_the_password() {
    let sim = Vcsim::start(&lab());
    let logs = CapturedLogs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::set_global_default(subscriber)
        .expect("the only subscriber in this process");

    let wrong_password = "Wr0ng&Pa55<word>";
    let mut config = sim.connection_config();
    config.credentials = Credentials::new(vcsim::USERNAME, wrong_password);
    let error = VcenterClient::connect(&config)
        .await
        .expect_err("wrong password");

    let text = vsphere_descheduler::error_chain(&error);
    assert!(matches!(error, Error::Login { .. }), "{error:?}");
    assert_eq!(error.fault().map(|f| f.name.as_str()), Some("InvalidLogin"));
    assert!(text.contains("InvalidLogin"), "{text}");
    assert!(text.contains(vcsim::USERNAME), "{text}");
    for shown in [text, format!("{error:?}"), format!("{config:?}")] {
        assert!(!shown.contains(wrong_password), "{shown}");
        assert!(!shown.contains("Wr0ng"), "{shown}");
    }

    // A successful session, logged at the most verbose level, shows neither password.
    let mut client = VcenterClient::connect(&sim.connection_config())
        .await
        .expect("connect");
    client.observe(&[], &[]).await.expect("observe");
    assert!(!format!("{client:?}").contains(vcsim::PASSWORD));
    client.logout().await;

    let logged = logs.text();
    assert!(logged.contains("Login"), "calls are logged: {logged}");
    assert!(!logged.contains("Wr0ng"), "{logged}");
    assert!(!logged.contains("S3cret"), "{logged}");
}
