//! What every connection this tool opens to a server of its own configuration (vCenter, the
//! Pushgateway) shares: the checks of the server's URL, secrets read from files (a mounted
//! Secret), and TLS trust.
//!
//! TLS is rustls on the *ring* provider (as kube uses; no aws-lc/cmake). Verification is on by
//! default against the system's roots, plus the certificates of a CA file for a private CA.
//! `insecure_skip_verify` accepts any certificate, but handshake signatures are still checked
//! so the connection is at least internally consistent. Callers name the server in their own
//! errors; these name the file. What is wrong with a certificate a server presented is told
//! apart in [`certificate`], for the API server's client too (kube's TLS, not this one).

pub mod certificate;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use reqwest::Url;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};

/// Why the TLS trust is unusable.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("failed to read CA file {path}")]
    ReadCaFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("CA file {path} holds no PEM certificate")]
    NoCaCertificate { path: PathBuf },
    #[error("CA file {path} holds an unusable certificate")]
    InvalidCaCertificate {
        path: PathBuf,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("failed to set up TLS")]
    Tls {
        #[source]
        source: rustls::Error,
    },
}

/// Why a secret file is unusable. Callers name the file and the secret in their own words.
#[derive(Debug)]
pub enum SecretProblem {
    Unreadable(std::io::Error),
    NotUtf8,
    Empty,
}

/// What is wrong with a server's URL. Callers say it in their own words, naming their flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UrlProblem {
    /// It does not parse as a URL.
    NotAUrl,
    /// It holds a user name or password (the URL is then never echoed).
    Credentials,
    /// Its scheme is not one of those allowed.
    Scheme,
    NoHost,
    QueryOrFragment,
}

/// `text` (trimmed) as a URL with one of `schemes`, a host, no credentials, no query and no
/// fragment. A text that does not parse but holds an `@` counts as holding credentials.
pub fn checked_url(text: &str, schemes: &[&str]) -> Result<Url, UrlProblem> {
    let text = text.trim();
    let url = Url::parse(text).map_err(|_| {
        if text.contains('@') {
            UrlProblem::Credentials
        } else {
            UrlProblem::NotAUrl
        }
    })?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(UrlProblem::Credentials);
    }
    if !schemes.contains(&url.scheme()) {
        return Err(UrlProblem::Scheme);
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(UrlProblem::NoHost);
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(UrlProblem::QueryOrFragment);
    }
    Ok(url)
}

/// The text of the secret file `path` without one trailing newline (`echo` and editors add
/// one); an empty secret is a problem.
pub fn read_secret_file(path: &Path) -> Result<String, SecretProblem> {
    let bytes = std::fs::read(path).map_err(SecretProblem::Unreadable)?;
    let mut text = String::from_utf8(bytes).map_err(|_| SecretProblem::NotUtf8)?;
    if text.ends_with('\n') {
        text.pop();
        if text.ends_with('\r') {
            text.pop();
        }
    }
    if text.is_empty() {
        return Err(SecretProblem::Empty);
    }
    Ok(text)
}

/// TLS that trusts the system's roots plus the certificates of `ca_file`, or any certificate
/// when `insecure_skip_verify`.
pub fn client_config(
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

pub fn read_ca_file(path: &Path) -> Result<Vec<CertificateDer<'static>>, Error> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_in_order_and_never_echo_credentials() {
        let https = ["https"];
        assert_eq!(
            checked_url(" https://vc.example.com/sdk ", &https).map(String::from),
            Ok("https://vc.example.com/sdk".to_string())
        );
        assert_eq!(checked_url("not a url", &https), Err(UrlProblem::NotAUrl));
        assert_eq!(checked_url("a@b c", &https), Err(UrlProblem::Credentials));
        assert_eq!(
            checked_url("http://user:pw@vc", &https),
            Err(UrlProblem::Credentials)
        );
        assert_eq!(checked_url("http://vc", &https), Err(UrlProblem::Scheme));
        assert_eq!(
            checked_url("https://vc/?a=b", &https),
            Err(UrlProblem::QueryOrFragment)
        );
        assert_eq!(
            checked_url("https://vc/#top", &https),
            Err(UrlProblem::QueryOrFragment)
        );
    }

    #[test]
    fn secret_files_lose_one_trailing_newline_and_must_not_be_empty() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("password");
        std::fs::write(&path, " pass word \r\n").expect("write");
        assert_eq!(read_secret_file(&path).expect("readable"), " pass word ");
        std::fs::write(&path, "\n").expect("write");
        assert!(matches!(read_secret_file(&path), Err(SecretProblem::Empty)));
        std::fs::write(&path, [0xff, 0xfe]).expect("write");
        assert!(matches!(
            read_secret_file(&path),
            Err(SecretProblem::NotUtf8)
        ));
        let missing = read_secret_file(&dir.path().join("token")).expect_err("no such file");
        assert!(
            matches!(&missing, SecretProblem::Unreadable(source) if source.kind() == std::io::ErrorKind::NotFound)
        );
    }

    #[test]
    fn a_ca_file_without_certificates_or_missing_is_an_error_naming_it() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, "not a certificate\n").expect("write");
        let error = client_config(Some(&path), false).expect_err("no certificate");
        assert!(matches!(error, Error::NoCaCertificate { .. }));
        assert!(error.to_string().contains("ca.pem"));
        let missing = Path::new("/nonexistent/ca.pem");
        let error = client_config(Some(missing), false).expect_err("missing file");
        assert!(matches!(error, Error::ReadCaFile { .. }));
        assert!(error.to_string().contains("/nonexistent/ca.pem"));
    }

    #[test]
    fn insecure_mode_needs_no_roots() {
        client_config(None, true).expect("any certificate accepted");
    }
}
