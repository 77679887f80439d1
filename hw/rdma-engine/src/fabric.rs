//! The fabric's transport: a UDP socket per engine bound to its node's IPv4
//! address and RoCEv2's port 4791, to send; a raw socket on the same
//! address, to receive each packet with the IPv4 header it came with (the
//! ICRC covers the header's identification, which Linux's rxe counts and a
//! UDP socket never shows). The UDP socket keeps the port bound but queues
//! nothing. Every datagram goes with Don't Fragment set, so a RoCE packet
//! is one IP packet or nothing. For tests the transmit path can impair the
//! link, seeded and reproducible: drop, hold back (reorder) or duplicate
//! outgoing packets. Reliability is the engine's job, so a failed send is
//! just a lost packet.

use crate::roce::ipv4;
use crate::roce::packet::Ipv4Path;
use crate::stats::Stats;
use crate::sys;
use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
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

/// Bytes of one receive slot: the link's MTU (a packet larger than any
/// RoCE packet of the largest path MTU is cut short and dropped).
const SLOT: usize = 9000;
/// Packets taken from the socket in one call.
const BATCH: usize = 32;

/// This engine's end of the fabric. Packets to send wait in a queue until
/// [`Fabric::flush`] hands them to the kernel in one call; received ones
/// come a batch per call ([`Fabric::recv_batch`]).
pub struct Fabric {
    sock: UdpSocket,
    raw: OwnedFd,
    port: u16,
    impair: Impair,
    held: Option<(Ipv4Addr, Vec<u8>)>,
    stats: Arc<Stats>,
    out: Vec<(SocketAddrV4, Vec<u8>)>,
    slots: Vec<u8>,
    got: Vec<sys::Received>,
    /// The batch as handed out: the headers, and where the UDP payload
    /// lies in the slots.
    batch: Vec<(Ipv4Path, std::ops::Range<usize>)>,
    last_full: bool,
}

impl Fabric {
    /// Binds `me`, UDP port `port` (RoCEv2's 4791 but in tests),
    /// nonblocking; every peer listens on the same port.
    pub fn bind(me: Ipv4Addr, port: u16, impair: Impair, stats: Arc<Stats>) -> io::Result<Self> {
        let sock = UdpSocket::bind(SocketAddrV4::new(me, port))
            .map_err(|e| io::Error::new(e.kind(), format!("binding {me}:{port}: {e}")))?;
        let port = sock.local_addr()?.port();
        let raw = sys::raw_udp_receiver(me).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "a raw socket on {me} (the engine reads each packet's IPv4 header for \
                     the ICRC; it needs CAP_NET_RAW: run it as root or give the binary \
                     cap_net_raw): {e}"
                ),
            )
        })?;
        sock.set_nonblocking(true)?;
        sys::set_socket_buffers(sock.as_raw_fd(), SOCKET_BUFFER);
        sys::set_socket_buffers(raw.as_raw_fd(), SOCKET_BUFFER);
        sys::set_dont_fragment(sock.as_raw_fd())?;
        sys::drop_all_input(sock.as_raw_fd())?;
        Ok(Self {
            sock,
            raw,
            port,
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

    /// The UDP port it listens on (the one asked for, or the one the
    /// kernel chose for 0).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// For poll.
    pub fn fd(&self) -> RawFd {
        self.raw.as_raw_fd()
    }

    fn put(&mut self, dst: Ipv4Addr, bytes: Vec<u8>) {
        self.out.push((SocketAddrV4::new(dst, self.port), bytes));
    }

    /// Queues one packet to the peer at `dst`, through the impairment.
    pub fn send(&mut self, dst: Ipv4Addr, bytes: Vec<u8>) {
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

    /// Takes the packets waiting (up to a batch) and returns how many of
    /// them are UDP datagrams to this engine's port; [`Fabric::received`]
    /// hands them out. A batch that is not full means the socket is empty.
    /// UDP for other ports is left to whoever listens there; packets cut
    /// short or whose headers do not hold together are dropped and counted.
    pub fn recv_batch(&mut self) -> usize {
        self.batch.clear();
        let n = sys::recv_many(self.raw.as_raw_fd(), &mut self.slots, SLOT, &mut self.got);
        for (i, r) in self.got.iter().enumerate() {
            let at = i * SLOT;
            let d = &self.slots[at..at + r.len];
            match ipv4::split(d) {
                Ok((path, payload)) if !r.truncated => {
                    if path.dst_port == self.port {
                        let start = at + (payload.as_ptr() as usize - d.as_ptr() as usize);
                        self.batch.push((path, start..start + payload.len()));
                    }
                }
                _ => {
                    self.stats.bad_headers.fetch_add(1, Ordering::Relaxed);
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

    /// Packet `i` of the last batch: its IPv4/UDP headers and the UDP
    /// payload.
    pub fn received(&self, i: usize) -> (&Ipv4Path, &[u8]) {
        let (path, range) = &self.batch[i];
        (path, &self.slots[range.clone()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn packets_arrive_with_the_header_they_were_sent_with() {
        let stats = Arc::new(Stats::default());
        let none = || Impair::new(Impairment::default(), 0);
        let a_addr = Ipv4Addr::new(127, 0, 0, 1);
        let b_addr = Ipv4Addr::new(127, 0, 0, 2);
        let mut fa = Fabric::bind(a_addr, 0, none(), stats.clone()).unwrap();
        let mut fb = Fabric::bind(b_addr, fa.port(), none(), stats.clone()).unwrap();
        // UDP to another port of the same address is not the engine's.
        let other = UdpSocket::bind("127.0.0.3:0").unwrap();
        other.send_to(b"other port", (b_addr, 9)).unwrap();
        fa.send(b_addr, b"hello".to_vec());
        fa.flush();
        let mut got = None;
        for _ in 0..100 {
            sys::poll_readable(&[fb.fd()], 50).unwrap();
            if fb.recv_batch() > 0 {
                let (path, d) = fb.received(0);
                got = Some((*path, d.to_vec()));
                break;
            }
        }
        let (path, d) = got.expect("a packet");
        assert_eq!(d, b"hello");
        assert_eq!((path.src, path.dst), (a_addr.octets(), b_addr.octets()));
        assert_eq!((path.src_port, path.dst_port), (fa.port(), fa.port()));
        // What the ICRC of our packets assumes: identification 0, DF.
        assert_eq!((path.id, path.flags), (0, 0x4000));
        assert_eq!(stats.bad_headers.load(Ordering::Relaxed), 0);
    }
}
