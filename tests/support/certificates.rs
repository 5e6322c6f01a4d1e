//! Certificates for TLS tests, made with the `openssl` command (which Debian's ca-certificates
//! depends on), and a server that presents one: enough of a TLS handshake for a client to refuse
//! the certificate, nothing after it.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// A server's certificate and key, and the CA certificate a client trusts it by.
#[derive(Clone, Debug)]
pub struct Certificates {
    pub certificate: PathBuf,
    pub key: PathBuf,
    pub ca: PathBuf,
}

/// Runs `openssl args` in `dir`.
pub fn openssl(dir: &Path, args: &[&str]) {
    let output = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|error| {
            panic!("the TLS test needs the openssl command (apt-get install -y openssl): {error}")
        });
    assert!(
        output.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Options of `openssl req` for a new P-256 key, unencrypted.
const NEW_KEY: [&str; 5] = [
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
];

/// A self-signed CA certificate (`ca.pem`, `ca.key`) for 127.0.0.1 in `dir`: `extensions` are
/// `-addext` values on top of the CA's.
fn self_signed_ca(dir: &Path, subject: &str, extensions: &[&str]) {
    let mut ca = vec!["req", "-x509", "-days", "2", "-subj", subject];
    ca.extend(NEW_KEY);
    ca.extend(["-keyout", "ca.key", "-out", "ca.pem"]);
    for extension in [
        "basicConstraints=critical,CA:TRUE",
        "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
    ]
    .iter()
    .chain(extensions)
    {
        ca.extend(["-addext", extension]);
    }
    openssl(dir, &ca);
}

/// A private CA and a certificate it signed for 127.0.0.1, in `dir`.
pub fn private_ca_and_server_certificate(dir: &Path) -> Certificates {
    self_signed_ca(dir, "/CN=test CA", &[]);
    let mut request = vec!["req", "-subj", "/CN=127.0.0.1"];
    request.extend(NEW_KEY);
    request.extend(["-keyout", "server.key", "-out", "server.csr"]);
    openssl(dir, &request);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n\
         keyUsage=critical,digitalSignature\n",
    )
    .expect("write the extensions");
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "server.ext",
            "-out",
            "server.pem",
        ],
    );
    Certificates {
        certificate: dir.join("server.pem"),
        key: dir.join("server.key"),
        ca: dir.join("ca.pem"),
    }
}

/// A CA certificate for 127.0.0.1 that the server presents as its own, and that the client is
/// given as its CA: a slip that happens when a lab's CA is reused as the server's certificate.
pub fn ca_as_server_certificate(dir: &Path) -> Certificates {
    self_signed_ca(dir, "/CN=127.0.0.1", &["subjectAltName=IP:127.0.0.1"]);
    Certificates {
        certificate: dir.join("ca.pem"),
        key: dir.join("ca.key"),
        ca: dir.join("ca.pem"),
    }
}

/// Serves TLS with `certificates` on 127.0.0.1, from a thread of its own, for as long as the
/// test runs: each connection gets the handshake and nothing more. Returns the port.
pub fn serve_tls(certificates: &Certificates) -> u16 {
    let chain = CertificateDer::pem_file_iter(&certificates.certificate)
        .expect("the certificate file")
        .collect::<Result<Vec<_>, _>>()
        .expect("PEM certificates");
    let key = PrivateKeyDer::from_pem_file(&certificates.key).expect("a PEM key");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("a usable certificate and key");
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a port");
    let port = listener.local_addr().expect("an address").port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let Ok(mut connection) = rustls::ServerConnection::new(config.clone()) else {
                continue;
            };
            // The client refuses the certificate and hangs up: the handshake ends in an error.
            let _ = connection.complete_io(&mut stream);
        }
    });
    port
}
