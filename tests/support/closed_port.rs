//! An address on 127.0.0.1 where connections are refused for as long as the test holds it.
//!
//! A port bound and then released ("bind port 0, drop the listener") is free for anyone: a
//! simulator, fake API server or Pushgateway started by a parallel test can take it, and the
//! test then talks to that instead of nothing. Here the socket stays bound but never listens:
//! the kernel answers a connection with a reset (connection refused), and no other socket can
//! bind the port while this one holds it (it is bound without `SO_REUSEADDR`, so even a
//! socket that sets it conflicts).

use std::net::SocketAddr;

/// A bound, never listening socket on 127.0.0.1. Keep it alive for as long as the address must
/// stay refused.
pub struct ClosedPort {
    _socket: tokio::net::TcpSocket,
    address: SocketAddr,
}

impl ClosedPort {
    /// Binds a port the kernel picks on 127.0.0.1, without listening on it.
    pub fn bind() -> ClosedPort {
        let socket = tokio::net::TcpSocket::new_v4().expect("a TCP socket");
        socket
            .bind("127.0.0.1:0".parse().expect("a socket address"))
            .expect("bind a port on 127.0.0.1");
        let address = socket.local_addr().expect("the bound address");
        ClosedPort {
            _socket: socket,
            address,
        }
    }

    /// The port number.
    pub fn port(&self) -> u16 {
        self.address.port()
    }

    /// `127.0.0.1:<port>`.
    pub fn address(&self) -> String {
        self.address.to_string()
    }
}
