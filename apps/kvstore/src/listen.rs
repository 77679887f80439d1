//! A small pool of listening sockets on the server's port, refilled as
//! SYNs claim them.
//!
//! smoltcp has no accept queue: a listening socket *becomes* the
//! connection. Rather than one preallocated socket per possible client
//! (every one of which smoltcp walks on every poll), the server keeps
//! [`POOL`] listeners; after each received frame it moves any listener a
//! SYN claimed into the handshakes list and adds a fresh one, so a burst of
//! SYNs always finds a listener. Handshakes in progress are capped at
//! [`MAX_HANDSHAKES`], like a SYN backlog: past it, SYNs are refused with a
//! reset instead of consuming memory. A handshake that never completes
//! times out ([`HANDSHAKE_TIMEOUT`]).

extern crate alloc;

use alloc::vec;
use alloc::vec::Vec;
use libos::net::smoltcp::iface::{SocketHandle, SocketSet};
use libos::net::smoltcp::socket::tcp;
use libos::net::smoltcp::time::Duration;

/// Listening sockets kept ready.
pub const POOL: usize = 8;
/// Most connections in the SYN-RECEIVED state at once.
pub const MAX_HANDSHAKES: usize = 256;
/// How long a handshake may take before its socket is dropped.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Receive buffer per connection: the TCP window; room for pipelined
/// requests without a large footprint per client.
pub const RX_BUFFER: usize = 16 * 1024;
/// Send buffer per connection: replies in flight.
pub const TX_BUFFER: usize = 32 * 1024;

/// The listeners, and the sockets SYNs took from them.
pub struct Listeners {
    port: u16,
    pool: Vec<SocketHandle>,
    /// Sockets past LISTEN whose handshake the server has not collected.
    pub handshakes: Vec<SocketHandle>,
}

fn listener(sockets: &mut SocketSet<'static>, port: u16) -> SocketHandle {
    let mut socket = tcp::Socket::new(
        tcp::SocketBuffer::new(vec![0; RX_BUFFER]),
        tcp::SocketBuffer::new(vec![0; TX_BUFFER]),
    );
    socket.set_timeout(Some(HANDSHAKE_TIMEOUT));
    socket.set_nagle_enabled(false);
    socket.set_ack_delay(None);
    // A fresh socket on a valid port always listens.
    let _ = socket.listen(port);
    sockets.add(socket)
}

impl Listeners {
    /// [`POOL`] sockets listening on `port`.
    pub fn new(sockets: &mut SocketSet<'static>, port: u16) -> Listeners {
        Listeners {
            port,
            pool: (0..POOL).map(|_| listener(sockets, port)).collect(),
            handshakes: Vec::new(),
        }
    }

    /// Moves listeners that left LISTEN to [`handshakes`](Self::handshakes)
    /// and replaces them, while the handshake cap allows. Cheap enough to
    /// run after every frame.
    pub fn refill(&mut self, sockets: &mut SocketSet<'static>) {
        for i in 0..self.pool.len() {
            let handle = self.pool[i];
            if sockets.get::<tcp::Socket>(handle).state() == tcp::State::Listen {
                continue;
            }
            if self.handshakes.len() >= MAX_HANDSHAKES {
                // Keep the claimed socket in the pool so it is collected
                // next time; no new listener until handshakes finish.
                continue;
            }
            self.handshakes.push(handle);
            self.pool[i] = listener(sockets, self.port);
        }
    }
}
