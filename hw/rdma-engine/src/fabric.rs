//! The fabric's transport: one UDP socket per engine bound to its node's
//! IPv4 address and RoCEv2's port 4791; peers are the other nodes'
//! addresses. Every datagram goes with Don't Fragment set, so a RoCE packet
//! is one IP packet or nothing. For tests the transmit path can impair the
//! link, seeded and reproducible: drop, hold back (reorder) or duplicate
//! outgoing packets. Reliability is the engine's job, so a failed send is
//! just a lost packet.

use crate::stats::Stats;
use crate::sys;
use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Socket buffer asked for each way: a window of packets fits.
const SOCKET_BUFFER: i32 = 8 << 20;

/// A deterministic generator (splitmix64) for impairments.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// The generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// A number uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// What the transmit path does to the link, as fractions of packets.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Impairment {
    /// Packets dropped.
    pub loss: f64,
    /// Packets held back and sent after the next one.
    pub reorder: f64,
    /// Packets sent twice.
    pub duplicate: f64,
}

/// The fate of one outgoing packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Sent as it is.
    Send,
    /// Dropped.
    Drop,
    /// Held back, sent after the next packet.
    Hold,
    /// Sent twice.
    Twice,
}

/// Seeded impairment decisions.
#[derive(Clone, Debug)]
pub struct Impair {
    what: Impairment,
    rng: Rng,
}

impl Impair {
    /// Impairs with `what`, chosen from `seed`.
    pub fn new(what: Impairment, seed: u64) -> Self {
        Self {
            what,
            rng: Rng::new(seed),
        }
    }

    /// What happens to the next packet.
    pub fn next_fate(&mut self) -> Fate {
        let w = self.what;
        if w.loss + w.reorder + w.duplicate <= 0.0 {
            return Fate::Send;
        }
        let x = self.rng.unit();
        if x < w.loss {
            Fate::Drop
        } else if x < w.loss + w.reorder {
            Fate::Hold
        } else if x < w.loss + w.reorder + w.duplicate {
            Fate::Twice
        } else {
            Fate::Send
        }
    }
}

/// Bytes of one receive slot: the link's MTU (a datagram larger than any
/// RoCE packet of the largest path MTU is cut short and dropped).
const SLOT: usize = 9000;
/// Datagrams taken from the socket in one call.
const BATCH: usize = 32;

/// This engine's end of the fabric. Packets to send wait in a queue until
/// [`Fabric::flush`] hands them to the kernel in one call; received ones
/// come a batch per call ([`Fabric::recv_batch`]).
pub struct Fabric {
    sock: UdpSocket,
    peers: Vec<SocketAddrV4>,
    impair: Impair,
    held: Option<(u16, Vec<u8>)>,
    stats: Arc<Stats>,
    out: Vec<(SocketAddrV4, Vec<u8>)>,
    slots: Vec<u8>,
    got: Vec<sys::Received>,
    /// The batch as handed out: (rank, port, slot index).
    batch: Vec<(u16, u16, usize)>,
    last_full: bool,
}

impl Fabric {
    /// Binds `addrs[rank]`, UDP port `port` (RoCEv2's 4791 but in tests),
    /// nonblocking; the other nodes listen on the same port.
    pub fn bind(
        rank: u16,
        addrs: &[Ipv4Addr],
        port: u16,
        impair: Impair,
        stats: Arc<Stats>,
    ) -> io::Result<Self> {
        let me = *addrs
            .get(usize::from(rank))
            .ok_or_else(|| io::Error::other("rank outside the node list"))?;
        let sock = UdpSocket::bind(SocketAddrV4::new(me, port))
            .map_err(|e| io::Error::new(e.kind(), format!("binding {me}:{port}: {e}")))?;
        let peers = addrs.iter().map(|&a| SocketAddrV4::new(a, port)).collect();
        Self::with_socket(sock, peers, impair, stats)
    }

    /// Uses an already bound socket; `peers` by rank.
    pub fn with_socket(
        sock: UdpSocket,
        peers: Vec<SocketAddrV4>,
        impair: Impair,
        stats: Arc<Stats>,
    ) -> io::Result<Self> {
        sock.set_nonblocking(true)?;
        sys::set_socket_buffers(sock.as_raw_fd(), SOCKET_BUFFER);
        sys::set_dont_fragment(sock.as_raw_fd())?;
        Ok(Self {
            sock,
            peers,
            impair,
            held: None,
            stats,
            out: Vec::new(),
            slots: vec![0; SLOT * BATCH],
            got: Vec::with_capacity(BATCH),
            batch: Vec::with_capacity(BATCH),
            last_full: false,
        })
    }

    /// For poll.
    pub fn fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }

    fn put(&mut self, dst: u16, bytes: Vec<u8>) {
        if let Some(&to) = self.peers.get(usize::from(dst)) {
            self.out.push((to, bytes));
        }
    }

    /// Queues one packet to node `dst`, through the impairment.
    pub fn send(&mut self, dst: u16, bytes: Vec<u8>) {
        match self.impair.next_fate() {
            Fate::Drop => {
                self.stats.dropped.fetch_add(1, Ordering::Relaxed);
                return;
            }
            Fate::Hold => {
                self.stats.reordered.fetch_add(1, Ordering::Relaxed);
                if let Some((d, b)) = self.held.replace((dst, bytes)) {
                    self.put(d, b);
                }
                return;
            }
            Fate::Twice => {
                self.stats.duplicated.fetch_add(1, Ordering::Relaxed);
                self.put(dst, bytes.clone());
            }
            Fate::Send => {}
        }
        self.put(dst, bytes);
        if let Some((d, b)) = self.held.take() {
            self.put(d, b);
        }
    }

    /// Hands every queued packet to the kernel (a packet held back for
    /// reordering goes last, so nothing waits for a next packet that does
    /// not come). A full socket buffer or a dead peer loses packets: the
    /// engine's timers deal with it.
    pub fn flush(&mut self) {
        if let Some((d, b)) = self.held.take() {
            self.put(d, b);
        }
        if !self.out.is_empty() {
            sys::send_many(self.sock.as_raw_fd(), &self.out);
            self.out.clear();
        }
    }

    /// Takes the datagrams waiting (up to a batch) and returns how many of
    /// them came from nodes; [`Fabric::received`] hands them out. A batch
    /// that is not full means the socket is empty. Datagrams from any other
    /// address, and ones too long for a slot, are dropped and counted.
    pub fn recv_batch(&mut self) -> usize {
        self.batch.clear();
        let n = sys::recv_many(self.sock.as_raw_fd(), &mut self.slots, SLOT, &mut self.got);
        for (i, r) in self.got.iter().enumerate() {
            let rank = r
                .from
                .and_then(|from| self.peers.iter().position(|p| p.ip() == from.ip()));
            match (rank, r.from) {
                (Some(rank), Some(from)) if !r.truncated => {
                    self.batch.push((rank as u16, from.port(), i))
                }
                _ => {
                    self.stats.strangers.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        self.last_full = n == BATCH;
        self.batch.len()
    }

    /// Whether the last batch was full (more may be waiting).
    pub fn more(&self) -> bool {
        self.last_full
    }

    /// Packet `i` of the last batch: the node's rank, its UDP source port
    /// and the bytes.
    pub fn received(&self, i: usize) -> (u16, u16, &[u8]) {
        let (rank, port, slot) = self.batch[i];
        let len = self.got[slot].len;
        (rank, port, &self.slots[slot * SLOT..slot * SLOT + len])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    #[test]
    fn impairment_is_seeded_and_close_to_its_fractions() {
        let w = Impairment {
            loss: 0.01,
            reorder: 0.05,
            duplicate: 0.01,
        };
        let mut a = Impair::new(w, 7);
        let mut b = Impair::new(w, 7);
        let fa: Vec<Fate> = (0..100_000).map(|_| a.next_fate()).collect();
        let fb: Vec<Fate> = (0..100_000).map(|_| b.next_fate()).collect();
        assert_eq!(fa, fb, "same seed, same fates");
        let count = |f| fa.iter().filter(|&&x| x == f).count();
        assert!(
            (800..1200).contains(&count(Fate::Drop)),
            "{}",
            count(Fate::Drop)
        );
        assert!((4500..5500).contains(&count(Fate::Hold)));
        assert!((800..1200).contains(&count(Fate::Twice)));
        assert_eq!(
            Impair::new(Impairment::default(), 1).next_fate(),
            Fate::Send
        );
    }

    #[test]
    fn two_endpoints_exchange_packets_and_ignore_strangers() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.2:0").unwrap();
        let v4 = |s: &UdpSocket| match s.local_addr().unwrap() {
            SocketAddr::V4(v) => v,
            _ => unreachable!(),
        };
        let peers = vec![v4(&a), v4(&b)];
        let stats = Arc::new(Stats::default());
        let none = || Impair::new(Impairment::default(), 0);
        let mut fa = Fabric::with_socket(a, peers.clone(), none(), stats.clone()).unwrap();
        let mut fb = Fabric::with_socket(b, peers.clone(), none(), stats.clone()).unwrap();
        let stranger = UdpSocket::bind("127.0.0.3:0").unwrap();
        stranger.send_to(b"who", peers[1]).unwrap();
        fa.send(1, b"hello".to_vec());
        fa.flush();
        let mut got = None;
        for _ in 0..100 {
            sys::poll_readable(&[fb.fd()], 50).unwrap();
            if fb.recv_batch() > 0 {
                let (from, port, d) = fb.received(0);
                got = Some((from, port, d.to_vec()));
                break;
            }
        }
        assert_eq!(
            got,
            Some((0, peers[0].port(), b"hello".to_vec())),
            "from rank 0"
        );
        assert_eq!(stats.strangers.load(Ordering::Relaxed), 1);
    }
}
