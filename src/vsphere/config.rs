//! How to reach vCenter: server address, credentials, TLS trust and timeouts.
//!
//! Credentials come only from the environment or from files (a mounted Secret), never from the
//! policy, and the password is never shown: not by Debug, not by Display, not in errors.

use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::Url;
use secrecy::{ExposeSecret, SecretString};

use super::Error;
use crate::connection::{SecretProblem, UrlProblem, checked_url, read_secret_file};

/// Environment variable holding the vCenter user name.
pub const USERNAME_ENV: &str = "VSPHERE_USERNAME";
/// Environment variable holding the vCenter password.
pub const PASSWORD_ENV: &str = "VSPHERE_PASSWORD";

/// Default time limit of each request to vCenter.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Everything needed to open a session.
#[derive(Clone, Debug)]
pub struct ConnectionConfig {
    /// `host`, `host:port` or an `https://` URL; the SOAP path defaults to `/sdk`.
    pub server: String,
    pub credentials: Credentials,
    /// Accept any server certificate. Only when asked for; the caller warns.
    pub insecure_skip_verify: bool,
    /// PEM file with CA certificates trusted in addition to the system's (a private CA).
    pub ca_file: Option<PathBuf>,
    /// Time limit of each request (connection included).
    pub timeout: Duration,
}

impl ConnectionConfig {
    /// A configuration with TLS verification on, no extra CA and [`DEFAULT_TIMEOUT`].
    pub fn new(server: impl Into<String>, credentials: Credentials) -> ConnectionConfig {
        ConnectionConfig {
            server: server.into(),
            credentials,
            insecure_skip_verify: false,
            ca_file: None,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// The SOAP endpoint: `https://<server>/sdk` unless `server` is a URL with its own path.
    pub(crate) fn endpoint(&self) -> Result<Url, Error> {
        let server = self.server.trim();
        let invalid = |problem| Error::InvalidServer {
            server: server.to_string(),
            problem,
        };
        if server.is_empty() {
            return Err(invalid("it is empty"));
        }
        let text = if server.contains("://") {
            server.to_string()
        } else {
            format!("https://{server}")
        };
        let mut url = checked_url(&text, &["https"]).map_err(|problem| match problem {
            UrlProblem::Credentials => Error::CredentialsInServerAddress,
            UrlProblem::NotAUrl => invalid("it is neither host[:port] nor a URL"),
            UrlProblem::Scheme => invalid("vCenter is only reached over https"),
            UrlProblem::NoHost => invalid("it has no host"),
            UrlProblem::QueryOrFragment => invalid("it has a query or fragment"),
        })?;
        if url.path() == "/" || url.path().is_empty() {
            url.set_path("/sdk");
        }
        Ok(url)
    }
}

/// A vCenter user name and password. Debug and Display show the user name only.
#[derive(Clone)]
pub struct Credentials {
    username: String,
    password: SecretString,
}

impl Credentials {
    pub fn new(username: impl Into<String>, password: impl Into<String>) -> Credentials {
        Credentials {
            username: username.into(),
            password: SecretString::from(password.into()),
        }
    }

    /// Reads `username` and `password` files from `dir` (a mounted Secret) when given, else the
    /// `VSPHERE_USERNAME` and `VSPHERE_PASSWORD` environment variables. One trailing newline is
    /// dropped from files, since `echo` and editors add one.
    pub fn from_env_or_dir(dir: Option<&Path>) -> Result<Credentials, Error> {
        match dir {
            Some(dir) => Credentials::from_dir(dir),
            None => Credentials::from_lookup(|name| std::env::var(name).ok()),
        }
    }

    fn from_dir(dir: &Path) -> Result<Credentials, Error> {
        let read = |file: &str| -> Result<String, Error> {
            let path = dir.join(file);
            read_secret_file(&path).map_err(|problem| match problem {
                SecretProblem::Unreadable(source) => Error::ReadCredential { path, source },
                SecretProblem::NotUtf8 => Error::CredentialNotUtf8 { path },
                SecretProblem::Empty => Error::EmptyCredential {
                    name: path.display().to_string(),
                },
            })
        };
        Ok(Credentials::new(read("username")?, read("password")?))
    }

    fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Credentials, Error> {
        let get = |name: &str| match lookup(name) {
            None => Err(Error::MissingCredential {
                name: name.to_string(),
            }),
            Some(value) if value.is_empty() => Err(Error::EmptyCredential {
                name: name.to_string(),
            }),
            Some(value) => Ok(value),
        };
        Ok(Credentials::new(get(USERNAME_ENV)?, get(PASSWORD_ENV)?))
    }

    pub fn username(&self) -> &str {
        &self.username
    }

    pub(crate) fn password(&self) -> &str {
        self.password.expose_secret()
    }
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

impl std::fmt::Display for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.username)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(server: &str) -> ConnectionConfig {
        ConnectionConfig::new(server, Credentials::new("u", "p"))
    }

    #[test]
    fn host_and_port_become_the_https_sdk_endpoint() {
        let url = config("vcenter.example.com").endpoint().expect("valid");
        assert_eq!(url.as_str(), "https://vcenter.example.com/sdk");
        let url = config("10.0.0.5:8443").endpoint().expect("valid");
        assert_eq!(url.as_str(), "https://10.0.0.5:8443/sdk");
    }

    #[test]
    fn a_url_keeps_its_path() {
        let url = config("https://vc.example.com/").endpoint().expect("valid");
        assert_eq!(url.as_str(), "https://vc.example.com/sdk");
        let url = config("https://vc.example.com/proxy/sdk")
            .endpoint()
            .expect("valid");
        assert_eq!(url.as_str(), "https://vc.example.com/proxy/sdk");
    }

    #[test]
    fn plain_http_and_empty_addresses_are_refused() {
        assert!(matches!(
            config("http://vc.example.com").endpoint(),
            Err(Error::InvalidServer { .. })
        ));
        assert!(matches!(
            config(" ").endpoint(),
            Err(Error::InvalidServer { .. })
        ));
    }

    #[test]
    fn credentials_in_the_address_are_refused_without_echoing_them() {
        let error = config("https://admin:s3cret@vc.example.com")
            .endpoint()
            .expect_err("credentials in the URL");
        assert!(matches!(error, Error::CredentialsInServerAddress));
        assert!(!error.to_string().contains("s3cret"));
        assert!(!format!("{error:?}").contains("s3cret"));
    }

    #[test]
    fn debug_and_display_never_show_the_password() {
        let credentials = Credentials::new("administrator@vsphere.local", "VMware1!");
        let config = ConnectionConfig::new("vc", credentials.clone());
        for shown in [
            format!("{credentials:?}"),
            format!("{credentials}"),
            format!("{config:?}"),
            format!("{config:#?}"),
        ] {
            assert!(!shown.contains("VMware1!"), "{shown}");
            assert!(shown.contains("administrator@vsphere.local"), "{shown}");
        }
    }

    #[test]
    fn credentials_are_read_from_a_secret_directory_without_the_trailing_newline() {
        let dir = tempfile::tempdir().expect("temporary directory");
        std::fs::write(dir.path().join("username"), "administrator@vsphere.local\n")
            .expect("write");
        std::fs::write(dir.path().join("password"), " pass word \r\n").expect("write");
        let credentials = Credentials::from_env_or_dir(Some(dir.path())).expect("readable");
        assert_eq!(credentials.username(), "administrator@vsphere.local");
        assert_eq!(credentials.password(), " pass word ");
    }

    #[test]
    fn a_missing_or_empty_credential_file_is_named() {
        let dir = tempfile::tempdir().expect("temporary directory");
        std::fs::write(dir.path().join("username"), "admin").expect("write");
        let error = Credentials::from_env_or_dir(Some(dir.path())).expect_err("no password");
        assert!(matches!(&error, Error::ReadCredential { path, .. } if path.ends_with("password")));

        std::fs::write(dir.path().join("password"), "\n").expect("write");
        let error = Credentials::from_env_or_dir(Some(dir.path())).expect_err("empty password");
        assert!(matches!(&error, Error::EmptyCredential { name } if name.ends_with("password")));
    }

    #[test]
    fn credentials_are_read_from_the_environment_variables() {
        let credentials = Credentials::from_lookup(|name| match name {
            USERNAME_ENV => Some("admin".to_string()),
            PASSWORD_ENV => Some("secret".to_string()),
            _ => None,
        })
        .expect("both set");
        assert_eq!(credentials.username(), "admin");
        assert_eq!(credentials.password(), "secret");

        let error =
            Credentials::from_lookup(|name| (name == USERNAME_ENV).then(|| "admin".to_string()))
                .expect_err("no password");
        assert_eq!(
            error.to_string(),
            "vSphere credential VSPHERE_PASSWORD is not set"
        );
    }
}
