//! Posting SOAP envelopes to vCenter: HTTP, the session cookie, timeouts, and turning HTTP 500
//! fault replies into [`Error::Fault`].
//!
//! The session cookie is handled here rather than by a cookie jar so that a re-login can drop it
//! deliberately and so that it is stored as a secret and sent as a sensitive header.

use std::time::{Duration, Instant};

use reqwest::header::{CONTENT_TYPE, COOKIE, HeaderValue, SET_COOKIE};
use reqwest::{StatusCode, Url};
use secrecy::{ExposeSecret, SecretString};

use super::soap::{self, MoRef, Reply, Request};
use super::{ConnectionConfig, Error, tls};
use crate::connection::certificate::certificate_problem;

/// Name of vCenter's SOAP session cookie.
const SESSION_COOKIE: &str = "vmware_soap_session";

pub(crate) struct Transport {
    http: reqwest::Client,
    url: Url,
    /// `host:port`, for messages.
    server: String,
    /// `SOAPAction` header: `urn:vim25/<apiVersion>` once the server's version is known.
    soap_action: String,
    timeout: Duration,
    session: Option<SecretString>,
}

impl Transport {
    pub fn new(config: &ConnectionConfig) -> Result<Transport, Error> {
        let url = config.endpoint()?;
        let server = match url.port() {
            Some(port) => format!("{}:{port}", url.host_str().unwrap_or_default()),
            None => url.host_str().unwrap_or_default().to_string(),
        };
        let http = reqwest::Client::builder()
            .tls_backend_preconfigured(tls::client_config(config)?)
            .timeout(config.timeout)
            .connect_timeout(config.timeout)
            .user_agent(concat!("vsphere-descheduler/", env!("CARGO_PKG_VERSION")))
            // vCenter's SOAP endpoint does not redirect; following one would resend the login
            // (or the session cookie) to wherever it points.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|source| Error::HttpClient { source })?;
        Ok(Transport {
            http,
            url,
            server,
            soap_action: "urn:vim25".to_string(),
            timeout: config.timeout,
            session: None,
        })
    }

    /// `host[:port]` of vCenter.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// Selects the wire version for later calls.
    pub fn set_api_version(&mut self, api_version: &str) {
        self.soap_action = format!("urn:vim25/{api_version}");
    }

    /// Forgets the session cookie (after logout, or before logging in again).
    pub fn clear_session(&mut self) {
        self.session = None;
    }

    /// Posts `request` addressed to `this` and returns the method's response element.
    pub async fn call(&mut self, request: Request, this: &MoRef) -> Result<soap::Response, Error> {
        let method = request.method;
        let started = Instant::now();
        let mut builder = self
            .http
            .post(self.url.clone())
            .header(CONTENT_TYPE, "text/xml; charset=utf-8")
            .header("SOAPAction", self.soap_action.as_str())
            .body(request.body);
        if let Some(session) = &self.session {
            let mut cookie =
                HeaderValue::from_str(&format!("{SESSION_COOKIE}={}", session.expose_secret()))
                    .expect("the cookie value was read from a valid header");
            cookie.set_sensitive(true);
            builder = builder.header(COOKIE, cookie);
        }

        let response = builder
            .send()
            .await
            .map_err(|e| self.transport_error(method, e))?;
        let status = response.status();
        if let Some(session) = session_cookie(response.headers().get_all(SET_COOKIE).iter()) {
            self.session = Some(session);
        }
        let body = response
            .bytes()
            .await
            .map_err(|e| self.transport_error(method, e))?;
        tracing::debug!(
            method,
            object = %this,
            status = status.as_u16(),
            bytes = body.len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "vCenter call"
        );

        if status != StatusCode::OK && status != StatusCode::INTERNAL_SERVER_ERROR {
            return Err(Error::Status {
                method,
                server: self.server.clone(),
                status: status.as_u16(),
            });
        }
        // vim25 answers faults with HTTP 500 and a SOAP fault; a 500 without one is an HTTP error.
        let reply = soap::envelope(&body).map_err(|source| {
            if status == StatusCode::OK {
                Error::Response {
                    method,
                    server: self.server.clone(),
                    source,
                }
            } else {
                Error::Status {
                    method,
                    server: self.server.clone(),
                    status: status.as_u16(),
                }
            }
        })?;
        match reply {
            Reply::Response(response) => Ok(response),
            Reply::Fault(fault) => Err(Error::Fault {
                method,
                object: this.to_string(),
                fault,
            }),
        }
    }

    fn transport_error(&self, method: &'static str, source: reqwest::Error) -> Error {
        if let Some(problem) = certificate_problem(&source) {
            Error::UntrustedCertificate {
                server: self.server.clone(),
                refusal: tls::refusal(problem),
            }
        } else if source.is_timeout() {
            Error::Timeout {
                method,
                server: self.server.clone(),
                timeout: self.timeout,
            }
        } else {
            Error::Request {
                method,
                server: self.server.clone(),
                source,
            }
        }
    }

    /// Reads a response body element into a typed value.
    pub fn read<T>(
        &self,
        method: &'static str,
        response: &soap::Response,
        read: impl FnOnce(&soap::Response) -> Result<T, soap::XmlParseError>,
    ) -> Result<T, Error> {
        read(response).map_err(|source| Error::Response {
            method,
            server: self.server.clone(),
            source,
        })
    }
}

/// The value of `vmware_soap_session` among `Set-Cookie` headers. Real vCenter quotes it; the
/// quotes are part of the value the server expects back.
fn session_cookie<'a>(headers: impl Iterator<Item = &'a HeaderValue>) -> Option<SecretString> {
    headers
        .filter_map(|header| header.to_str().ok())
        .filter_map(|header| header.split(';').next())
        .filter_map(|pair| pair.split_once('='))
        .find(|(name, _)| name.trim() == SESSION_COOKIE)
        .map(|(_, value)| SecretString::from(value.trim().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_cookie_is_found_quoted_or_not() {
        let headers = [
            HeaderValue::from_static("other=1; Path=/"),
            HeaderValue::from_static(r#"vmware_soap_session="52a1-b2"; Path=/; HttpOnly; Secure"#),
        ];
        let session = session_cookie(headers.iter()).expect("cookie present");
        assert_eq!(session.expose_secret(), r#""52a1-b2""#);

        let headers = [HeaderValue::from_static(
            "vmware_soap_session=42ae; HttpOnly",
        )];
        let session = session_cookie(headers.iter()).expect("cookie present");
        assert_eq!(session.expose_secret(), "42ae");

        let headers = [HeaderValue::from_static("vmware_api_session=1")];
        assert!(session_cookie(headers.iter()).is_none());
    }
}
