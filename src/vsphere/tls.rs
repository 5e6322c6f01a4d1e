//! TLS for the vCenter connection: the trust every connection of this tool shares
//! ([`crate::connection`]), and what fixes a refused certificate in vCenter's settings.

use rustls::ClientConfig;

use super::{ConnectionConfig, Error};
use crate::connection;
use crate::connection::certificate::{CertificateProblem, CertificateRefusal};

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

/// A refused certificate of vCenter, with what fixes it in vCenter's settings.
pub(crate) fn refusal(problem: CertificateProblem) -> CertificateRefusal {
    let remedy = match problem {
        CertificateProblem::UnknownIssuer => Some(
            "give that CA's certificate (PEM) with --vsphere-ca-file or the policy's \
             vsphere.caFile",
        ),
        CertificateProblem::CaAsServerCertificate => Some(
            "vCenter must present a certificate issued by a CA, and --vsphere-ca-file (or the \
             policy's vsphere.caFile) must name that CA",
        ),
        CertificateProblem::Expired => Some("renew vCenter's certificate"),
        CertificateProblem::NotValidYet => Some("check the clocks of this machine and of vCenter"),
        CertificateProblem::WrongName => Some("address vCenter by a name its certificate holds"),
        CertificateProblem::Revoked
        | CertificateProblem::BadSignature
        | CertificateProblem::Unreadable
        | CertificateProblem::Refused => None,
    };
    CertificateRefusal { problem, remedy }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vsphere::Credentials;

    #[test]
    fn a_refused_certificate_of_vcenter_names_the_setting_that_fixes_it() {
        let text = refusal(CertificateProblem::CaAsServerCertificate).to_string();
        assert_eq!(
            text,
            "it is a CA certificate (basicConstraints CA:TRUE), which cannot identify a server: \
             vCenter must present a certificate issued by a CA, and --vsphere-ca-file (or the \
             policy's vsphere.caFile) must name that CA"
        );
        assert!(!text.contains("CaUsedAsEndEntity"), "{text}");
        assert_eq!(
            refusal(CertificateProblem::Expired).to_string(),
            "it has expired: renew vCenter's certificate"
        );
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
