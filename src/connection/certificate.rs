//! What is wrong with a certificate a server presented, found in the error of a request whose
//! TLS handshake refused it: shared by the clients of vCenter and of the API server, which both
//! verify with rustls. Each says what fixes it in the words of its own settings
//! ([`CertificateRefusal`]):
//! the flags and policy fields of vCenter, the kubeconfig fields of the API server.

use std::fmt;

/// What is wrong with the certificate a server presented.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CertificateProblem {
    /// Issued by a CA that is not trusted (a private CA this tool was not given).
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

/// What is wrong, without what fixes it (that depends on whose certificate it is).
impl fmt::Display for CertificateProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CertificateProblem::UnknownIssuer => "it was issued by a CA this tool does not trust",
            CertificateProblem::CaAsServerCertificate => {
                "it is a CA certificate (basicConstraints CA:TRUE), which cannot identify a server"
            }
            CertificateProblem::Expired => "it has expired",
            CertificateProblem::NotValidYet => "it is not valid yet",
            CertificateProblem::WrongName => "it was issued for another name",
            CertificateProblem::Revoked => "it has been revoked",
            CertificateProblem::BadSignature => "its signature does not verify",
            CertificateProblem::Unreadable => "it could not be read as a certificate",
            CertificateProblem::Refused => "it failed verification",
        })
    }
}

/// A refused certificate in words a user can act on: what is wrong with it, then what fixes
/// that in the settings of the server that presented it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CertificateRefusal {
    pub problem: CertificateProblem,
    /// What fixes it; `None` when nothing in this tool's settings can.
    pub remedy: Option<&'static str>,
}

impl fmt::Display for CertificateRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.remedy {
            Some(remedy) => write!(f, "{}: {remedy}", self.problem),
            None => self.problem.fmt(f),
        }
    }
}

/// The certificate problem behind a failed request, when its handshake failed on one: rustls's
/// error is found in the chain, inside the I/O errors the TLS stream and the connector wrap it
/// in (an I/O error shows its inner error but does not list it as its source).
pub fn certificate_problem(
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

    #[test]
    fn certificate_problems_are_found_behind_the_io_errors_hyper_wraps_them_in() {
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
        let unrelated = std::io::Error::other("connection reset");
        assert_eq!(certificate_problem(&unrelated), None);
    }

    #[test]
    fn a_refusal_says_what_is_wrong_then_what_fixes_it() {
        let refusal = CertificateRefusal {
            problem: CertificateProblem::Expired,
            remedy: Some("renew it"),
        };
        assert_eq!(refusal.to_string(), "it has expired: renew it");
        let without = CertificateRefusal {
            problem: CertificateProblem::Revoked,
            remedy: None,
        };
        assert_eq!(without.to_string(), "it has been revoked");
    }
}
