//! The engine's queue pairs, one per peer, and what each is connected to.
//!
//! ```text
//!   handle 0 .. nodes-1     the cluster's nodes: made at start, QPN 0x100+rank,
//!                           first PSN 0 both ways (the cluster's agreement)
//!   handle nodes ..         queue pairs for other peers (a Linux host): made by
//!                           QP_CREATE (fresh QPN, random first PSN), given an
//!                           address and the peer's numbers by QP_CONNECT, ended
//!                           by QP_DESTROY (the handle may be made again; its
//!                           QPN never is)
//! ```
//!
//! A packet belongs to the queue pair its BTH names, and only if it comes
//! from that queue pair's peer address: anything else is dropped.

use std::net::Ipv4Addr;

/// Queue pairs for peers outside the cluster that may exist at once.
pub const MAX_EXTRA: usize = 64;
/// The first queue pair number given to a peer outside the cluster (the
/// cluster's own are 0x100 + rank, below it).
const FIRST_EXTRA_QPN: u32 = 0x1_0000;

/// One queue pair's connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peer {
    /// Where its packets go and must come from; `None` until connected.
    pub addr: Option<Ipv4Addr>,
    /// This end's queue pair number: what the peer's packets name.
    pub local_qpn: u32,
    /// The peer's queue pair number: what this end's packets name.
    pub remote_qpn: u32,
    /// Path MTU: payload bytes per packet.
    pub mtu: u32,
    /// A Faultline node of the cluster: it takes the "WRITE coming"
    /// notices (`notice.rs`), which other peers are never sent.
    pub faultline: bool,
}

/// Why a queue pair operation is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeerError {
    /// [`MAX_EXTRA`] queue pairs for other peers exist already.
    Full,
    /// The handle names no queue pair made by QP_CREATE.
    NoSuchQp,
    /// A path MTU outside 256..=4096, an unusable address (unspecified,
    /// broadcast, multicast) or a QPN wider than 24 bits.
    BadParameters,
}

/// The queue pairs by handle.
#[derive(Debug)]
pub struct Peers {
    slots: Vec<Option<Peer>>,
    nodes: usize,
    next_qpn: u32,
}

impl Peers {
    /// The cluster of `addrs` (by rank) seen from node `rank`.
    pub fn cluster(rank: u16, addrs: &[Ipv4Addr], mtu: u32) -> Self {
        let slots = addrs
            .iter()
            .enumerate()
            .map(|(p, &a)| {
                Some(Peer {
                    addr: Some(a),
                    local_qpn: super::qpn_for(p as u16),
                    remote_qpn: super::qpn_for(rank),
                    mtu,
                    faultline: true,
                })
            })
            .collect();
        Self {
            slots,
            nodes: addrs.len(),
            next_qpn: FIRST_EXTRA_QPN,
        }
    }

    /// Handles in use or usable (the cluster's nodes, then other peers).
    pub fn handles(&self) -> usize {
        self.slots.len()
    }

    /// The cluster's size.
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// The queue pair `handle`, if it exists.
    pub fn get(&self, handle: u16) -> Option<&Peer> {
        self.slots.get(usize::from(handle)).and_then(Option::as_ref)
    }

    /// The queue pair `handle` if it is connected: its peer's address.
    pub fn connected(&self, handle: u16) -> Option<(&Peer, Ipv4Addr)> {
        self.get(handle).and_then(|p| p.addr.map(|a| (p, a)))
    }

    /// The queue pair a packet naming `qpn` from `src` belongs to.
    pub fn for_packet(&self, qpn: u32, src: Ipv4Addr) -> Option<u16> {
        let i = if qpn >= FIRST_EXTRA_QPN {
            self.slots
                .iter()
                .skip(self.nodes)
                .position(|s| s.as_ref().is_some_and(|p| p.local_qpn == qpn))?
                + self.nodes
        } else {
            usize::try_from(qpn.checked_sub(super::qpn_for(0))?).ok()?
        };
        let p = self.slots.get(i)?.as_ref()?;
        (p.local_qpn == qpn && p.addr == Some(src)).then_some(i as u16)
    }

    /// Whether any connected queue pair's peer has address `src`.
    pub fn knows(&self, src: Ipv4Addr) -> bool {
        self.slots.iter().flatten().any(|p| p.addr == Some(src))
    }

    /// Makes a queue pair for a peer outside the cluster, not yet
    /// connected; returns its handle and QPN.
    pub fn create(&mut self, mtu: u32) -> Result<(u16, u32), PeerError> {
        let free = self.slots.iter().skip(self.nodes).position(Option::is_none);
        let i = match free {
            Some(i) => i + self.nodes,
            None if self.slots.len() - self.nodes < MAX_EXTRA => {
                self.slots.push(None);
                self.slots.len() - 1
            }
            None => return Err(PeerError::Full),
        };
        let qpn = self.next_qpn;
        // QPNs are 24 bits; after 16 million queue pairs they start over
        // above the cluster's, skipping any still in use.
        self.next_qpn = if qpn + 1 > 0xff_ffff {
            FIRST_EXTRA_QPN
        } else {
            qpn + 1
        };
        self.slots[i] = Some(Peer {
            addr: None,
            local_qpn: qpn,
            remote_qpn: 0,
            mtu,
            faultline: false,
        });
        Ok((i as u16, qpn))
    }

    /// Connects queue pair `handle` (made by [`Peers::create`]).
    pub fn connect(
        &mut self,
        handle: u16,
        addr: Ipv4Addr,
        remote_qpn: u32,
        mtu: u32,
    ) -> Result<(), PeerError> {
        if !(256..=4096).contains(&mtu)
            || remote_qpn > 0xff_ffff
            || addr.is_unspecified()
            || addr.is_broadcast()
            || addr.is_multicast()
        {
            return Err(PeerError::BadParameters);
        }
        let p = self.extra_mut(handle)?;
        p.addr = Some(addr);
        p.remote_qpn = remote_qpn;
        p.mtu = mtu;
        Ok(())
    }

    /// Ends queue pair `handle` (made by [`Peers::create`]).
    pub fn destroy(&mut self, handle: u16) -> Result<(), PeerError> {
        self.extra_mut(handle)?;
        self.slots[usize::from(handle)] = None;
        Ok(())
    }

    fn extra_mut(&mut self, handle: u16) -> Result<&mut Peer, PeerError> {
        let i = usize::from(handle);
        if i < self.nodes {
            return Err(PeerError::NoSuchQp);
        }
        self.slots
            .get_mut(i)
            .and_then(Option::as_mut)
            .ok_or(PeerError::NoSuchQp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(last: u8) -> Ipv4Addr {
        Ipv4Addr::new(10, 47, 0, last)
    }

    #[test]
    fn the_clusters_nodes_are_known_from_the_start() {
        let peers = Peers::cluster(1, &[addr(1), addr(2)], 1024);
        let (p, a) = peers.connected(0).unwrap();
        assert_eq!((p.local_qpn, p.remote_qpn, a), (0x100, 0x101, addr(1)));
        assert_eq!(peers.for_packet(0x100, addr(1)), Some(0));
        assert_eq!(peers.for_packet(0x100, addr(2)), None, "wrong sender");
        assert_eq!(peers.for_packet(0x102, addr(1)), None, "no such QP");
        assert_eq!(peers.for_packet(0xff, addr(1)), None);
    }

    #[test]
    fn a_linux_peer_is_made_connected_and_ended() {
        let mut peers = Peers::cluster(0, &[addr(1)], 1024);
        let (h, qpn) = peers.create(1024).unwrap();
        assert_eq!(h, 1);
        assert!(peers.connected(h).is_none(), "not connected yet");
        assert_eq!(peers.for_packet(qpn, addr(9)), None);
        peers.connect(h, addr(9), 0x11, 4096).unwrap();
        assert_eq!(peers.for_packet(qpn, addr(9)), Some(h));
        assert_eq!(peers.get(h).unwrap().remote_qpn, 0x11);
        assert!(!peers.get(h).unwrap().faultline);
        peers.destroy(h).unwrap();
        assert_eq!(peers.for_packet(qpn, addr(9)), None);
        let (h2, qpn2) = peers.create(1024).unwrap();
        assert_eq!(h2, h, "the handle is used again");
        assert_ne!(qpn2, qpn, "the QPN is not");
    }

    #[test]
    fn bad_handles_and_parameters_are_refused() {
        let mut peers = Peers::cluster(0, &[addr(1)], 1024);
        assert_eq!(peers.destroy(0), Err(PeerError::NoSuchQp), "a node");
        assert_eq!(peers.connect(5, addr(9), 1, 1024), Err(PeerError::NoSuchQp));
        let (h, _) = peers.create(1024).unwrap();
        for (a, q, mtu) in [
            (addr(9), 1, 100),
            (addr(9), 1 << 24, 1024),
            (Ipv4Addr::UNSPECIFIED, 1, 1024),
            (Ipv4Addr::BROADCAST, 1, 1024),
            (Ipv4Addr::new(224, 0, 0, 1), 1, 1024),
        ] {
            assert_eq!(peers.connect(h, a, q, mtu), Err(PeerError::BadParameters));
        }
        for _ in 1..MAX_EXTRA {
            peers.create(1024).unwrap();
        }
        assert_eq!(peers.create(1024), Err(PeerError::Full));
    }
}
