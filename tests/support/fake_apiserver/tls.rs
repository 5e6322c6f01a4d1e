//! HTTPS for the fake: a listener that completes each connection's TLS handshake with the
//! test's certificate before axum reads the request, as a Supervisor's API server (always
//! https, with a private CA) is reached. A handshake that fails (a client refusing the
//! certificate) closes that connection only.

use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use super::super::certificates::Certificates;

/// The TCP listener and the acceptor that does each connection's handshake.
pub struct TlsListener {
    tcp: TcpListener,
    acceptor: TlsAcceptor,
}

impl TlsListener {
    pub fn new(tcp: TcpListener, certificates: &Certificates) -> TlsListener {
        TlsListener {
            tcp,
            acceptor: TlsAcceptor::from(Arc::new(server_config(certificates))),
        }
    }
}

/// A server configuration presenting `certificates`' certificate, with ring as the provider
/// (the crate's own, no aws-lc).
fn server_config(certificates: &Certificates) -> rustls::ServerConfig {
    let chain = CertificateDer::pem_file_iter(&certificates.certificate)
        .expect("the certificate file")
        .collect::<Result<Vec<_>, _>>()
        .expect("PEM certificates");
    let key = PrivateKeyDer::from_pem_file(&certificates.key).expect("a PEM key");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("a usable certificate and key");
    // The fake speaks HTTP/1.1 only.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    config
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((stream, address)) = self.tcp.accept().await else {
                continue;
            };
            if let Ok(tls) = self.acceptor.accept(stream).await {
                return (tls, address);
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}
