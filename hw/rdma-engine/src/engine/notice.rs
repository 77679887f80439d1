//! The one thing Faultline adds between two Faultline nodes: a notice that
//! a WRITE is coming, sent before the first packet of a large WRITE (and of
//! a small one whose own source just faulted), so that the responder's
//! libOS resolves the destination while ours reads or resolves the source,
//! instead of after the data arrives. One notice covers the queued WRITEs
//! that continue the first (a transfer's segments).
//!
//! ```text
//!  requester: a WRITE of 64 KiB or more, or one whose source faults,
//!  about to go on the wire
//!     ── READ Response Only, PSN far behind, payload "FLTLPREP" va len R_Key ──▶
//!  responder (a Faultline node): R_Key, range and right checked as for a
//!     WRITE; one page per 2 MiB of the range probed (faults start resolving)
//! ```
//!
//! It is a valid RoCEv2 packet that a standard peer ignores: a READ
//! response whose PSN lies far behind what its requester expects is an old
//! duplicate there, dropped. Nothing waits for it and nothing depends on
//! it: a lost notice only means the destination faults when data comes.

use super::{Engine, HOLD_SPAN};
use crate::dma::Dma;
use crate::roce::packet::{psn_add, Aeth, Opcode as Rc, Packet, Syndrome, CREDITS_UNLIMITED};

/// First bytes of a notice's payload.
const MAGIC: &[u8; 8] = b"FLTLPREP";
/// Bytes of a notice's payload: magic, address, length, R_Key, flags.
const LEN: usize = 8 + 8 + 8 + 4 + 4;
/// Spans of [`HOLD_SPAN`] one notice probes at most (64 MiB).
const SPANS: u64 = 32;

/// A WRITE that is coming: where, how long, under which key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Coming {
    pub va: u64,
    pub len: u64,
    pub rkey: u32,
}

impl Coming {
    fn encode(&self) -> [u8; LEN] {
        let mut b = [0u8; LEN];
        b[..8].copy_from_slice(MAGIC);
        b[8..16].copy_from_slice(&self.va.to_be_bytes());
        b[16..24].copy_from_slice(&self.len.to_be_bytes());
        b[24..28].copy_from_slice(&self.rkey.to_be_bytes());
        b
    }

    /// The notice in a READ Response Only's payload, if it is one.
    pub fn decode(payload: &[u8]) -> Option<Self> {
        if payload.len() != LEN || &payload[..8] != MAGIC {
            return None;
        }
        let va = u64::from_be_bytes(payload[8..16].try_into().ok()?);
        let len = u64::from_be_bytes(payload[16..24].try_into().ok()?);
        let rkey = u32::from_be_bytes(payload[24..28].try_into().ok()?);
        Some(Self { va, len, rkey })
    }
}

impl Engine {
    /// Tells `peer` that a WRITE of `coming` is on its way.
    pub(super) fn send_notice(&mut self, peer: u16, coming: Coming) {
        // Far behind anything the peer's requester still expects: an old
        // duplicate to a standard peer.
        let psn = psn_add(self.responders[usize::from(peer)].expected(), 0x80_0000);
        let payload = coming.encode();
        let p = Packet {
            bth: self.bth(peer, Rc::ReadResponseOnly, psn, false),
            reth: None,
            imm: None,
            aeth: Some(Aeth {
                syndrome: Syndrome::Ack {
                    credits: CREDITS_UNLIMITED,
                },
                msn: 0,
            }),
            payload: &payload,
        };
        self.counters.notices_sent += 1;
        self.emit(peer, &p);
    }

    /// A notice from a Faultline peer: if its key grants the WRITE, the
    /// range is probed so that this node's libOS starts resolving it.
    pub(super) fn on_notice(&mut self, coming: Coming, dma: &mut dyn Dma) {
        let Some(end) = coming.va.checked_add(coming.len) else {
            return;
        };
        if coming.len == 0
            || self
                .exposures
                .check(coming.rkey, coming.va..end, true)
                .is_err()
        {
            self.counters.refused += 1;
            return;
        }
        self.counters.notices_taken += 1;
        let mut at = coming.va;
        for _ in 0..SPANS {
            if at >= end {
                break;
            }
            let _ = dma.probe(at, true);
            at = (at & !(HOLD_SPAN - 1)) + HOLD_SPAN;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notice_round_trips_and_nothing_else_is_one() {
        let c = Coming {
            va: 0x1400_0000_0000,
            len: 4 << 20,
            rkey: 0xdead_beef,
        };
        assert_eq!(Coming::decode(&c.encode()), Some(c));
        assert_eq!(Coming::decode(&[0; LEN]), None);
        assert_eq!(Coming::decode(&c.encode()[..LEN - 1]), None);
        assert_eq!(Coming::decode(b"FLTLPREP"), None);
    }
}
