//! How to reach the Supervisor, resolved from the command line and the policy: a mounted
//! Secret holding `server`, `ca.crt`, `token` and optionally `namespace` (the guest Secret of
//! docs/vks.md), or a kubeconfig context (`kubectl vsphere login` writes one); and which
//! Supervisor namespace to read. Secrets are read here, once, and never shown.

use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::Url;
use rustls_pki_types::CertificateDer;
use secrecy::SecretString;

use crate::connection::{self, SecretProblem, UrlProblem, checked_url, read_secret_file};
use crate::kube::Selection;
use crate::policy::check_dns_label;

/// The files of a Supervisor credentials directory, as the guest Secret's keys name them.
pub const SERVER_FILE: &str = "server";
pub const CA_FILE: &str = "ca.crt";
pub const TOKEN_FILE: &str = "token";
pub const NAMESPACE_FILE: &str = "namespace";

/// How to reach the Supervisor and which namespace to read.
#[derive(Clone, Debug)]
pub struct Settings {
    pub access: Access,
    /// `--supervisor-namespace`, else the policy's `vsphere.supervisor.namespace`, else the
    /// credentials' `namespace` file, else the kubeconfig context's namespace.
    pub namespace: Option<String>,
    /// Time limit of each request.
    pub timeout: Duration,
}

/// Where the Supervisor's address and credentials come from.
#[derive(Clone, Debug)]
pub enum Access {
    /// A credentials directory (a mounted Secret).
    Token(TokenAccess),
    /// A kubeconfig and context naming the Supervisor; never the in-cluster account, which
    /// is the guest cluster's.
    Kubeconfig(Selection),
}

/// A credentials directory, read.
#[derive(Clone, Debug)]
pub struct TokenAccess {
    pub dir: PathBuf,
    pub server: Url,
    /// The CA certificates of `ca.crt`; `None` trusts the system's roots.
    pub ca: Option<Vec<CertificateDer<'static>>>,
    pub token: SecretString,
    /// The `namespace` file, when present.
    pub namespace: Option<String>,
}

/// Why the Supervisor settings are unusable.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error(
        "source supervisor needs a way to reach the Supervisor: --supervisor-credentials-dir (a \
         mounted Secret with server, ca.crt, token), or --supervisor-kubeconfig or \
         --supervisor-context (a context of `kubectl vsphere login`)"
    )]
    NoAccess,
    #[error(
        "--supervisor-credentials-dir and --supervisor-kubeconfig/--supervisor-context exclude each other"
    )]
    TwoAccesses,
    #[error("cannot read {}", path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not UTF-8 text", path.display())]
    NotUtf8 { path: PathBuf },
    #[error("{} is empty", path.display())]
    Empty { path: PathBuf },
    #[error("{} does not hold an https:// URL of the Supervisor ({})", path.display(), url_problem(*problem))]
    Server { path: PathBuf, problem: UrlProblem },
    #[error("unusable CA certificate of the Supervisor")]
    Ca(#[source] connection::Error),
    #[error("invalid Supervisor namespace {namespace:?} ({from})")]
    Namespace {
        namespace: String,
        from: String,
        #[source]
        source: crate::policy::NameError,
    },
}

fn url_problem(problem: UrlProblem) -> &'static str {
    match problem {
        UrlProblem::NotAUrl => "not a URL",
        UrlProblem::Credentials => "it carries credentials",
        UrlProblem::Scheme => "not https",
        UrlProblem::NoHost => "no host",
        UrlProblem::QueryOrFragment => "a query or fragment",
    }
}

/// The command line's ways to reach the Supervisor.
#[derive(Clone, Debug, Default)]
pub struct Flags<'a> {
    pub credentials_dir: Option<&'a Path>,
    pub kubeconfig: Option<&'a Path>,
    pub context: Option<&'a str>,
    pub namespace: Option<&'a str>,
}

impl Settings {
    /// The settings the flags and the policy's namespace give; the credentials directory is
    /// read now, so that a missing or empty file is a usage error before anything is read.
    pub fn resolve(
        flags: &Flags<'_>,
        policy_namespace: Option<&str>,
        timeout: Duration,
    ) -> Result<Settings, SettingsError> {
        let by_kubeconfig = flags.kubeconfig.is_some() || flags.context.is_some();
        let access = match (flags.credentials_dir, by_kubeconfig) {
            (Some(_), true) => return Err(SettingsError::TwoAccesses),
            (Some(dir), false) => Access::Token(TokenAccess::read(dir)?),
            (None, true) => Access::Kubeconfig(Selection {
                kubeconfig: flags.kubeconfig.map(Path::to_path_buf),
                context: flags.context.map(str::to_string),
            }),
            (None, false) => return Err(SettingsError::NoAccess),
        };
        let chosen = [
            (flags.namespace, "--supervisor-namespace"),
            (policy_namespace, "vsphere.supervisor.namespace"),
        ]
        .into_iter()
        .find_map(|(namespace, from)| Some((namespace?.to_string(), from.to_string())));
        let from_file = match &access {
            Access::Token(token) => token.namespace.clone().map(|namespace| {
                let from = token.dir.join(NAMESPACE_FILE).display().to_string();
                (namespace, from)
            }),
            Access::Kubeconfig(_) => None,
        };
        let namespace = match chosen.or(from_file) {
            Some((namespace, from)) => Some(checked_namespace(namespace, from)?),
            None => None,
        };
        Ok(Settings {
            access,
            namespace,
            timeout,
        })
    }
}

fn checked_namespace(namespace: String, from: String) -> Result<String, SettingsError> {
    match check_dns_label(&namespace) {
        Ok(()) => Ok(namespace),
        Err(source) => Err(SettingsError::Namespace {
            namespace,
            from,
            source,
        }),
    }
}

impl TokenAccess {
    /// Reads `server`, `token`, and `ca.crt` and `namespace` where present, from `dir`.
    pub fn read(dir: &Path) -> Result<TokenAccess, SettingsError> {
        let server_path = dir.join(SERVER_FILE);
        let server = read(&server_path)?;
        let server = checked_url(&server, &["https"]).map_err(|problem| SettingsError::Server {
            path: server_path,
            problem,
        })?;
        let token = SecretString::from(read(&dir.join(TOKEN_FILE))?);
        let ca_path = dir.join(CA_FILE);
        let ca = if ca_path.exists() {
            Some(connection::read_ca_file(&ca_path).map_err(SettingsError::Ca)?)
        } else {
            None
        };
        let namespace_path = dir.join(NAMESPACE_FILE);
        let namespace = if namespace_path.exists() {
            Some(read(&namespace_path)?.trim().to_string())
        } else {
            None
        };
        Ok(TokenAccess {
            dir: dir.to_path_buf(),
            server,
            ca,
            token,
            namespace,
        })
    }
}

fn read(path: &Path) -> Result<String, SettingsError> {
    read_secret_file(path).map_err(|problem| match problem {
        SecretProblem::Unreadable(source) => SettingsError::Unreadable {
            path: path.to_path_buf(),
            source,
        },
        SecretProblem::NotUtf8 => SettingsError::NotUtf8 {
            path: path.to_path_buf(),
        },
        SecretProblem::Empty => SettingsError::Empty {
            path: path.to_path_buf(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credentials(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("a temporary directory");
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).expect("write");
        }
        dir
    }

    fn resolve(flags: &Flags<'_>, policy: Option<&str>) -> Result<Settings, SettingsError> {
        Settings::resolve(flags, policy, Duration::from_secs(5))
    }

    #[test]
    fn a_credentials_directory_gives_server_token_and_namespace_never_shown() {
        let dir = credentials(&[
            ("server", "https://10.0.0.10:6443\n"),
            ("token", "s3cr3t-token\n"),
            ("namespace", "team-a\n"),
        ]);
        let flags = Flags {
            credentials_dir: Some(dir.path()),
            ..Flags::default()
        };
        let settings = resolve(&flags, None).expect("usable");
        assert_eq!(settings.namespace.as_deref(), Some("team-a"));
        let Access::Token(token) = &settings.access else {
            panic!("token access");
        };
        assert_eq!(token.server.as_str(), "https://10.0.0.10:6443/");
        assert!(token.ca.is_none());
        assert!(!format!("{settings:?}").contains("s3cr3t"));
    }

    #[test]
    fn the_flag_then_the_policy_then_the_file_names_the_namespace() {
        let dir = credentials(&[
            ("server", "https://sv.example.com"),
            ("token", "t"),
            ("namespace", "from-file"),
        ]);
        let mut flags = Flags {
            credentials_dir: Some(dir.path()),
            ..Flags::default()
        };
        let namespace =
            |flags: &Flags<'_>, policy| resolve(flags, policy).expect("usable").namespace;
        assert_eq!(
            namespace(&flags, Some("from-policy")).as_deref(),
            Some("from-policy")
        );
        flags.namespace = Some("from-flag");
        assert_eq!(
            namespace(&flags, Some("from-policy")).as_deref(),
            Some("from-flag")
        );
        flags.namespace = None;
        assert_eq!(namespace(&flags, None).as_deref(), Some("from-file"));
    }

    #[test]
    fn missing_or_bad_settings_name_the_file_or_flag() {
        assert!(matches!(
            resolve(&Flags::default(), None),
            Err(SettingsError::NoAccess)
        ));
        let dir = credentials(&[("server", "http://sv.example.com"), ("token", "t")]);
        let flags = Flags {
            credentials_dir: Some(dir.path()),
            ..Flags::default()
        };
        let error = resolve(&flags, None).expect_err("not https");
        assert!(
            error
                .to_string()
                .ends_with("/server does not hold an https:// URL of the Supervisor (not https)"),
            "{error}"
        );
        let dir = credentials(&[("server", "https://sv.example.com"), ("token", "\n")]);
        let flags = Flags {
            credentials_dir: Some(dir.path()),
            ..Flags::default()
        };
        let error = resolve(&flags, None).expect_err("empty token");
        assert!(error.to_string().ends_with("/token is empty"), "{error}");
        let flags = Flags {
            credentials_dir: Some(dir.path()),
            context: Some("sv"),
            ..Flags::default()
        };
        assert!(matches!(
            resolve(&flags, None),
            Err(SettingsError::TwoAccesses)
        ));
        let flags = Flags {
            context: Some("sv"),
            namespace: Some("Team_A"),
            ..Flags::default()
        };
        let error = resolve(&flags, None).expect_err("not a DNS label");
        assert!(
            error
                .to_string()
                .starts_with("invalid Supervisor namespace \"Team_A\" (--supervisor-namespace)"),
            "{error}"
        );
    }
}
