//! TLS for the vCenter connection: rustls on the *ring* provider (as kube uses; no aws-lc/cmake).
//!
//! Verification is on by default against the system's roots, plus the certificates of `ca_file`
//! for a private CA. `insecure_skip_verify` accepts any certificate, but handshake signatures
//! are still checked so the connection is at least internally consistent.

use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};

use super::{ConnectionConfig, Error};

/// The rustls client configuration for `config`.
pub(crate) fn client_config(config: &ConnectionConfig) -> Result<ClientConfig, Error> {
    client_config_trusting(config.ca_file.as_deref(), config.insecure_skip_verify)
}

/// TLS that trusts the system's roots plus the certificates of `ca_file`, or any certificate
/// when `insecure_skip_verify`. The Pushgateway connection (`crate::metrics::push`) uses it too,
/// so every server this tool talks to is verified alike.
pub(crate) fn client_config_trusting(
    ca_file: Option<&Path>,
    insecure_skip_verify: bool,
) -> Result<ClientConfig, Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|source| Error::Tls { source })?;
    let verifier: Arc<dyn ServerCertVerifier> = if insecure_skip_verify {
        Arc::new(AcceptAnyCertificate { provider })
    } else {
        let extra_roots = match ca_file {
            Some(path) => read_ca_file(path)?,
            None => Vec::new(),
        };
        let verifier =
            rustls_platform_verifier::Verifier::new_with_extra_roots(extra_roots, provider)
                .map_err(|source| match ca_file {
                    Some(path) => Error::InvalidCaCertificate {
                        path: path.to_path_buf(),
                        source: Box::new(source),
                    },
                    None => Error::Tls { source },
                })?;
        Arc::new(verifier)
    };
    Ok(builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth())
}

fn read_ca_file(path: &Path) -> Result<Vec<CertificateDer<'static>>, Error> {
    let pem = std::fs::read(path).map_err(|source| Error::ReadCaFile {
        path: path.to_path_buf(),
        source,
    })?;
    let certificates = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| Error::InvalidCaCertificate {
            path: path.to_path_buf(),
            source: Box::new(source),
        })?;
    if certificates.is_empty() {
        return Err(Error::NoCaCertificate {
            path: path.to_path_buf(),
        });
    }
    Ok(certificates)
}

/// Accepts any server certificate; used only with `insecure_skip_verify`.
#[derive(Debug)]
struct AcceptAnyCertificate {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
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
        assert!(matches!(error, Error::NoCaCertificate { .. }));
        assert!(error.to_string().contains("ca.pem"));
    }

    #[test]
    fn a_missing_ca_file_is_an_error_naming_it() {
        let mut config = ConnectionConfig::new("vc", Credentials::new("u", "p"));
        config.ca_file = Some("/nonexistent/ca.pem".into());
        let error = client_config(&config).expect_err("missing file");
        assert!(matches!(error, Error::ReadCaFile { .. }));
        assert!(error.to_string().contains("/nonexistent/ca.pem"));
    }

    #[test]
    fn insecure_mode_needs_no_roots() {
        let mut config = ConnectionConfig::new("vc", Credentials::new("u", "p"));
        config.insecure_skip_verify = true;
        client_config(&config).expect("any certificate accepted");
    }
}
