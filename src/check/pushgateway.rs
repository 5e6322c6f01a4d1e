//! The Pushgateway section of `check`: the Pushgateway of `--metrics-push-url` answers its
//! readiness check (`/-/ready`) to a request with the push's credentials and trust. Nothing is
//! pushed.

use std::time::Duration;

use super::{Backend, Item, Section, Status, Subject};
use crate::error_chain;
use crate::metrics::Pushgateway;
use crate::metrics::push::Error;

pub async fn section(pushgateway: &Pushgateway, timeout: Duration) -> Section {
    let url = pushgateway.url().to_string();
    let subject = Subject::PushgatewayReady { url: url.clone() };
    let item = match pushgateway.ready(timeout).await {
        Ok(answer) => Item::new(subject, Status::Ok, answer),
        Err(error) => {
            let fix = fix(&error);
            Item::new(subject, Status::Missing, error_chain(&error)).with_fix(fix)
        }
    };
    Section {
        backend: Backend::Pushgateway,
        target: url,
        items: vec![item],
    }
}

/// What puts the Pushgateway within reach, by how it failed.
fn fix(error: &Error) -> &'static str {
    match error {
        Error::NotReady {
            status: 401 | 403, ..
        } => {
            "the Pushgateway refused the credentials: put the ones it expects in \
             --metrics-push-credentials-dir (a token file, or username and password files)"
        }
        Error::NotReady { .. } => {
            "the Pushgateway is not ready, or --metrics-push-url names something else: it must \
             be the Pushgateway's base URL (its /-/ready answers 200)"
        }
        Error::Tls { .. } => {
            "--metrics-push-ca-file must be a PEM file of the CA that signed the Pushgateway's \
             certificate"
        }
        _ => {
            "start the Pushgateway, or correct --metrics-push-url (and, for https, \
             --metrics-push-ca-file): this machine or pod must reach it"
        }
    }
}
