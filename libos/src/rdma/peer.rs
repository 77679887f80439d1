//! Queue pairs with peers outside the cluster: a Linux host with soft-RoCE
//! (`rdma_rxe`) or a RoCE NIC, reached at its own IPv4 address.
//!
//! ```text
//!  let qp = rdma.create_peer_qp()?;             // QPN and first PSN chosen
//!  tell the peer qp.qpn(), qp.first_psn(), our GID   (out of band: TCP)
//!  learn its QPN, first PSN, GID                      (same exchange)
//!  let to_peer = qp.connect(&PeerAddress { .. })?;    // packets may flow
//!  to_peer.send(..) / write(..) / read(..)            // as with a node
//!  drop(qp)                                           // the QP ends
//! ```
//!
//! The cluster's own nodes need none of this: their queue pairs exist from
//! the start ([`Rdma::queue_pair`]). A peer reaches only memory this node
//! exposed, under the key it was told, exactly as a node does.

extern crate alloc;

use super::verbs::{Op, QueuePair, Rdma, RdmaError};
use alloc::vec::Vec;
use hw::rdma::wire::{Opcode, Status, WorkRequest};

/// What the out-of-band exchange told about the peer's end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerAddress {
    /// Its IPv4 address (the last four bytes of its IPv4-mapped GID).
    pub addr: [u8; 4],
    /// Its queue pair number (24 bits).
    pub qpn: u32,
    /// The PSN of its first packet (24 bits).
    pub psn: u32,
    /// The path MTU both ends use: 256, 512, 1024, 2048 or 4096.
    pub mtu: u32,
}

/// This node's end of a queue pair with a peer outside the cluster, until
/// dropped (which ends it: its unfinished work completes with
/// `PeerUnreachable`, and its packets are dropped from then on).
#[derive(Debug)]
pub struct PeerQp {
    rdma: Rdma,
    handle: u16,
    qpn: u32,
    psn: u32,
}

impl Rdma {
    /// Makes a queue pair for a peer outside the cluster; connect it with
    /// [`PeerQp::connect`] once the peer's numbers are known.
    pub fn create_peer_qp(&self) -> Result<PeerQp, RdmaError> {
        let wc = self.control(Opcode::QpCreate, WorkRequest::default())?;
        Ok(PeerQp {
            rdma: *self,
            handle: wc.node,
            qpn: wc.key as u32,
            psn: wc.imm.unwrap_or(0),
        })
    }

    /// Posts one control request and waits for its completion.
    fn control(&self, opcode: Opcode, wr: WorkRequest) -> Result<super::WorkCompletion, RdmaError> {
        let wr = WorkRequest {
            opcode: opcode as u8,
            ..wr
        };
        let id = self.direct(Op::QueuePair, wr, Vec::new(), None, None)?;
        let wc = self.wait(id)?;
        if wc.status != Status::Success {
            return Err(RdmaError::QueuePair(wc.status));
        }
        Ok(wc)
    }
}

impl PeerQp {
    /// The queue pair number the peer must send to.
    pub fn qpn(&self) -> u32 {
        self.qpn
    }

    /// The PSN of this end's first packet (random, as RC asks).
    pub fn first_psn(&self) -> u32 {
        self.psn
    }

    /// Connects to the peer; the returned queue pair sends, writes and
    /// reads as one to a node does (it stops working when `self` is
    /// dropped).
    pub fn connect(&self, peer: &PeerAddress) -> Result<QueuePair, RdmaError> {
        let wr = WorkRequest {
            node: self.handle,
            remote_va: u64::from(u32::from_be_bytes(peer.addr)),
            key: u64::from(peer.qpn),
            imm: peer.psn,
            len: u64::from(peer.mtu),
            ..WorkRequest::default()
        };
        self.rdma.control(Opcode::QpConnect, wr)?;
        Ok(QueuePair::with_handle(self.rdma, self.handle))
    }
}

impl Drop for PeerQp {
    fn drop(&mut self) {
        let wr = WorkRequest {
            node: self.handle,
            ..WorkRequest::default()
        };
        if let Err(e) = self.rdma.control(Opcode::QpDestroy, wr) {
            log::error!("rdma: ending queue pair {:#x}: {e:?}", self.qpn);
        }
    }
}
