//! The Pushgateway section of `check`: the Pushgateway of `--metrics-push-url` answers its
//! readiness check (`/-/ready`) to a request with the push's credentials and trust. Nothing is
//! pushed.

use std::time::Duration;

use super::{Backend, Item, PushgatewayFix, Section, Status, Subject};
use crate::metrics::Pushgateway;
use crate::metrics::push::Error;

pub async fn section(pushgateway: &Pushgateway, timeout: Duration) -> Section {
    let url = pushgateway.url().to_string();
    let subject = Subject::PushgatewayReady { url: url.clone() };
    let item = match pushgateway.ready(timeout).await {
        Ok(answer) => Item::new(subject, Status::Ok, answer),
        Err(error) => {
            let fix = fix(&error);
            Item::new(subject, Status::Missing, error.failure()).with_fix(fix)
        }
    };
    Section {
        backend: Backend::Pushgateway,
        target: url,
        items: vec![item],
    }
}

/// What puts the Pushgateway within reach, by how it failed.
fn fix(error: &Error) -> PushgatewayFix {
    match error {
        Error::NotReady {
            status: 401 | 403, ..
        } => PushgatewayFix::Credentials,
        Error::NotReady { .. } => PushgatewayFix::NotReady,
        Error::Tls { .. } => PushgatewayFix::CaFile,
        _ => PushgatewayFix::Reach,
    }
}
