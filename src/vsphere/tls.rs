//! TLS for the vCenter connection: the trust every connection of this tool shares
//! ([`crate::connection`]), and what a refused certificate means in words a user can act on.

use rustls::ClientConfig;

use super::{ConnectionConfig, Error};
use crate::connection;

/// The rustls client configuration for `config`: [`connection::client_config`]'s trust, a setup
/// failure named as vCenter's.
pub(crate) fn client_config(config: &ConnectionConfig) -> Result<ClientConfig, Error> {
    connection::client_config(config.ca_file.as_deref(), config.insecure_skip_verify).map_err(
        |error| match error {
            connection::Error::Tls { source } => Error::Tls { source },
            error => Error::Trust(error),
        },
    )
}

/// What is wrong with the certificate a server presented, in words a user can act on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CertificateProblem {
    /// Issued by a CA that is not trusted (a private CA not given with `--vsphere-ca-file`).
    UnknownIssuer,
    /// A CA certificate (basicConstraints CA:TRUE) presented as the server's own.
    CaAsServerCertificate,
    Expired,
    NotValidYet,
    /// Issued for another name than the one in the server address.
    WrongName,
    Revoked,
    BadSignature,
    Unreadable,
    /// Refused for a reason none of the above names.
    Refused,
}

impl std::fmt::Display for CertificateProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CertificateProblem::UnknownIssuer => {
                "it was issued by a CA this tool does not trust: give that CA's certificate (PEM) \
                 with --vsphere-ca-file or the policy's vsphere.caFile"
            }
            CertificateProblem::CaAsServerCertificate => {
                "it is a CA certificate (basicConstraints CA:TRUE), which cannot identify a \
                 server: vCenter must present a certificate issued by a CA, and \
                 --vsphere-ca-file (or the policy's vsphere.caFile) must name that CA"
            }
            CertificateProblem::Expired => "it has expired: renew vCenter's certificate",
            CertificateProblem::NotValidYet => {
                "it is not valid yet: check the clocks of this machine and of vCenter"
            }
            CertificateProblem::WrongName => {
                "it was issued for another name: address vCenter by a name its certificate holds"
            }
            CertificateProblem::Revoked => "it has been revoked",
            CertificateProblem::BadSignature => "its signature does not verify",
            CertificateProblem::Unreadable => "it could not be read as a certificate",
            CertificateProblem::Refused => "it failed verification",
        })
    }
}

/// The certificate problem behind a failed request, when its handshake failed on one: rustls's
/// error is found in the chain, inside the I/O errors the TLS stream and the connector wrap it
/// in (an I/O error shows its inner error but does not list it as its source).
pub(crate) fn certificate_problem(
    error: &(dyn std::error::Error + 'static),
) -> Option<CertificateProblem> {
    let mut current = Some(error);
    while let Some(error) = current {
        let mut inner: &(dyn std::error::Error + 'static) = error;
        while let Some(wrapped) = inner
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
        {
            inner = wrapped;
        }
        if let Some(rustls::Error::InvalidCertificate(problem)) =
            inner.downcast_ref::<rustls::Error>()
        {
            return Some(problem_of(problem));
        }
        current = error.source();
    }
    None
}

fn problem_of(error: &rustls::CertificateError) -> CertificateProblem {
    use rustls::CertificateError as E;
    match error {
        E::UnknownIssuer => CertificateProblem::UnknownIssuer,
        E::Expired | E::ExpiredContext { .. } => CertificateProblem::Expired,
        E::NotValidYet | E::NotValidYetContext { .. } => CertificateProblem::NotValidYet,
        E::NotValidForName | E::NotValidForNameContext { .. } => CertificateProblem::WrongName,
        E::Revoked => CertificateProblem::Revoked,
        E::BadSignature => CertificateProblem::BadSignature,
        E::BadEncoding => CertificateProblem::Unreadable,
        E::Other(other) => match other.0.downcast_ref::<webpki::Error>() {
            Some(webpki::Error::CaUsedAsEndEntity) => CertificateProblem::CaAsServerCertificate,
            Some(webpki::Error::UnknownIssuer) => CertificateProblem::UnknownIssuer,
            _ => CertificateProblem::Refused,
        },
        _ => CertificateProblem::Refused,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::vsphere::Credentials;

    #[test]
    fn certificate_problems_are_told_in_words_behind_the_io_error_hyper_wraps_them_in() {
        let ca_as_leaf = rustls::Error::InvalidCertificate(rustls::CertificateError::Other(
            rustls::OtherError(Arc::new(webpki::Error::CaUsedAsEndEntity)),
        ));
        let wrapped = std::io::Error::other(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            ca_as_leaf,
        ));
        assert_eq!(
            certificate_problem(&wrapped),
            Some(CertificateProblem::CaAsServerCertificate)
        );
        let expired = rustls::Error::InvalidCertificate(rustls::CertificateError::Expired);
        assert_eq!(
            certificate_problem(&expired),
            Some(CertificateProblem::Expired)
        );
        let text = CertificateProblem::CaAsServerCertificate.to_string();
        assert!(text.contains("--vsphere-ca-file"), "{text}");
        assert!(!text.contains("CaUsedAsEndEntity"), "{text}");
        let unrelated = std::io::Error::other("connection reset");
        assert_eq!(certificate_problem(&unrelated), None);
    }

    fn config_with_ca(contents: &str) -> (tempfile::TempDir, ConnectionConfig) {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, contents).expect("write");
        let mut config = ConnectionConfig::new("vc", Credentials::new("u", "p"));
        config.ca_file = Some(path);
        (dir, config)
    }

    #[test]
    fn a_ca_file_without_certificates_is_an_error_naming_it() {
        let (_dir, config) = config_with_ca("not a certificate\n");
        let error = client_config(&config).expect_err("no certificate");
        assert!(matches!(
            error,
            Error::Trust(connection::Error::NoCaCertificate { .. })
        ));
        assert!(error.to_string().contains("ca.pem"));
    }

    #[test]
    fn a_missing_ca_file_is_an_error_naming_it() {
        let mut config = ConnectionConfig::new("vc", Credentials::new("u", "p"));
        config.ca_file = Some("/nonexistent/ca.pem".into());
        let error = client_config(&config).expect_err("missing file");
        assert!(matches!(
            error,
            Error::Trust(connection::Error::ReadCaFile { .. })
        ));
        assert!(error.to_string().contains("/nonexistent/ca.pem"));
    }

    #[test]
    fn insecure_mode_needs_no_roots() {
        let mut config = ConnectionConfig::new("vc", Credentials::new("u", "p"));
        config.insecure_skip_verify = true;
        client_config(&config).expect("any certificate accepted");
    }
}
