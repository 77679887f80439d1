//! The fabric's transport: one UDP socket per engine on loopback, peers at
//! known addresses (`127.0.0.1:BASE+rank`), with optional seeded loss of
//! outgoing datagrams for tests. Reliability is the engine's job, so a
//! failed send is just a lost datagram.

use crate::stats::Stats;
use crate::sys;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Socket buffer asked for each way: a window of large datagrams fits.
const SOCKET_BUFFER: i32 = 8 << 20;

/// A deterministic generator (splitmix64) for loss injection.
#[derive(Clone, Debug)]
pub struct Loss {
    fraction: f64,
    state: u64,
}

impl Loss {
    /// Drops `fraction` (0..=1) of the datagrams, chosen from `seed`.
    pub fn new(fraction: f64, seed: u64) -> Self {
        Self {
            fraction,
            state: seed,
        }
    }

    /// Whether to drop the next datagram.
    pub fn drop_next(&mut self) -> bool {
        if self.fraction <= 0.0 {
            return false;
        }
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        ((z >> 11) as f64 / (1u64 << 53) as f64) < self.fraction
    }
}

/// This engine's end of the fabric.
pub struct Fabric {
    sock: UdpSocket,
    peers: Vec<SocketAddr>,
    loss: Loss,
    stats: Arc<Stats>,
    buf: Vec<u8>,
}

impl Fabric {
    /// Binds `peers[rank]` (nonblocking).
    pub fn bind(
        rank: u16,
        peers: Vec<SocketAddr>,
        loss: Loss,
        stats: Arc<Stats>,
    ) -> io::Result<Self> {
        let me = *peers
            .get(rank as usize)
            .ok_or_else(|| io::Error::other("rank outside the peer list"))?;
        let sock = UdpSocket::bind(me)?;
        Self::with_socket(sock, peers, loss, stats)
    }

    /// Uses an already bound socket (the self-benchmark binds port 0).
    pub fn with_socket(
        sock: UdpSocket,
        peers: Vec<SocketAddr>,
        loss: Loss,
        stats: Arc<Stats>,
    ) -> io::Result<Self> {
        sock.set_nonblocking(true)?;
        sys::set_socket_buffers(sock.as_raw_fd(), SOCKET_BUFFER);
        Ok(Self {
            sock,
            peers,
            loss,
            stats,
            buf: vec![0; 65536],
        })
    }

    /// The loopback addresses of `nodes` engines from `base_port`.
    pub fn loopback_peers(base_port: u16, nodes: u16) -> Vec<SocketAddr> {
        (0..nodes)
            .map(|r| SocketAddr::from(([127, 0, 0, 1], base_port.wrapping_add(r))))
            .collect()
    }

    /// For poll.
    pub fn fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }

    /// Sends one datagram to node `dst` (unless loss injection eats it).
    pub fn send(&mut self, dst: u16, bytes: &[u8]) {
        if self.loss.drop_next() {
            self.stats.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if let Some(to) = self.peers.get(dst as usize) {
            // A full socket buffer or a dead peer is a lost datagram: the
            // engine's timers deal with it.
            let _ = self.sock.send_to(bytes, to);
        }
    }

    /// The next datagram from a peer, if one is waiting, with the rank
    /// of the peer whose address sent it (the engine checks that the
    /// datagram claims no other sender).
    pub fn recv(&mut self) -> Option<(u16, &[u8])> {
        loop {
            match self.sock.recv_from(&mut self.buf) {
                Ok((n, from)) => {
                    // Anyone else is not one of ours.
                    if let Some(rank) = self.peers.iter().position(|p| *p == from) {
                        return Some((rank as u16, &self.buf[..n]));
                    }
                    self.stats.strangers.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => continue,
                Err(_) => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_is_seeded_and_close_to_the_fraction() {
        let mut a = Loss::new(0.25, 7);
        let mut b = Loss::new(0.25, 7);
        let da: Vec<bool> = (0..10_000).map(|_| a.drop_next()).collect();
        let db: Vec<bool> = (0..10_000).map(|_| b.drop_next()).collect();
        assert_eq!(da, db, "same seed, same losses");
        let n = da.iter().filter(|&&d| d).count();
        assert!((2000..3000).contains(&n), "{n} of 10000 dropped");
        assert!(!Loss::new(0.0, 1).drop_next());
    }

    #[test]
    fn two_endpoints_exchange_datagrams_and_ignore_strangers() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        let peers = vec![a.local_addr().unwrap(), b.local_addr().unwrap()];
        let stats = Arc::new(Stats::default());
        let mut fa =
            Fabric::with_socket(a, peers.clone(), Loss::new(0.0, 0), stats.clone()).unwrap();
        let mut fb =
            Fabric::with_socket(b, peers.clone(), Loss::new(0.0, 0), stats.clone()).unwrap();
        let stranger = UdpSocket::bind("127.0.0.1:0").unwrap();
        stranger.send_to(b"who", peers[1]).unwrap();
        fa.send(1, b"hello");
        // Loopback delivery is immediate but asynchronous: wait on poll.
        sys::poll_readable(&[fb.fd()], 5000).unwrap();
        let mut got = None;
        for _ in 0..100 {
            if let Some((from, d)) = fb.recv() {
                got = Some((from, d.to_vec()));
                break;
            }
            sys::poll_readable(&[fb.fd()], 50).unwrap();
        }
        assert_eq!(got, Some((0, b"hello".to_vec())), "from rank 0");
        assert_eq!(stats.strangers.load(Ordering::Relaxed), 1);
    }
}
