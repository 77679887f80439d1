//! Datagrams between engines of different nodes (the "fabric"), encoded at
//! fixed little-endian offsets. Anything a peer sends is checked: a short,
//! foreign or oversized datagram decodes to `None` and is dropped.
//!
//! ```text
//!  0 magic u16 | 2 kind u8 | 3 reason u8 | 4 src u16 | 6 zero u16
//!  8 xfer u64   (the initiator's transfer id)
//! 16 seg u32    (segment index in the transfer) | 20 imm u32
//! 24 offset u64 (byte offset of the segment in the transfer)
//! 32 va u64     (data: target VA of the segment; NACK/RETRY: the page)
//! 40 len u64    (READ_REQ: bytes wanted; WRITE/IMM/PREPARE: transfer length)
//! 48 key u64    (requests on the target's memory: the remote key of its
//!                exposure; answers and SEND/IMM: 0)
//! 56 payload
//! ```
//!
//! DIRECT_WRITE / DIRECT_READ carry no data but the initiator's lent memory
//! (see `lease`), for the target to copy from / into with one memcpy:
//!
//! ```text
//! 56 lease slot u32 | 60 extent count u32 | 64 lease seq u64
//! 72 extents: region u32 | zero u32 | offset u64 | len u64  (24 bytes each)
//! ```

/// First two bytes of every datagram.
pub const MAGIC: u16 = 0xfa17;
/// Header bytes before the payload.
pub const HDR: usize = 56;
/// Largest payload (fits one UDP datagram on loopback with the header).
pub const MAX_PAYLOAD: usize = 61440;

use crate::dma::{Extent, Lent};
use crate::lease::Lease;

/// What a datagram is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Initiator → target: one segment of a WRITE.
    WriteData = 1,
    /// Initiator → target: send me `len` bytes at `va` (one READ segment).
    ReadReq = 2,
    /// Target → initiator: the bytes of one READ segment.
    ReadData = 3,
    /// Initiator → target: a SEND's payload, for the oldest posted RECV.
    Send = 4,
    /// Initiator → target: a WRITE with immediate finished; consume a RECV.
    Imm = 5,
    /// Target → initiator: segment `seg` is placed / delivered.
    Ack = 6,
    /// Target → initiator: segment `seg` was refused for `reason`.
    Nack = 7,
    /// Target → initiator: the page `va` that faulted is ready, send again.
    Retry = 8,
    /// Initiator → target: copy `len` bytes from my lent memory (payload)
    /// to your `va` (one WRITE segment on the direct path).
    DirectWrite = 9,
    /// Initiator → target: copy `len` bytes at your `va` into my lent
    /// memory (one READ segment on the direct path); answered by ACK.
    DirectRead = 10,
    /// Initiator → target: a WRITE (`imm` 1) or READ (`imm` 0) of `len`
    /// bytes at your `va` is coming, but its local side is faulting first:
    /// translate it now so that both nodes resolve pages at the same time.
    /// Each page that faults is answered NACK(fault, page) with segment
    /// [`PREPARE_SEG`], for the initiator's fault count.
    Prepare = 11,
}

/// The segment index of answers to [`Kind::Prepare`] (no segment's).
pub const PREPARE_SEG: u32 = u32::MAX;

impl Kind {
    fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            1 => Self::WriteData,
            2 => Self::ReadReq,
            3 => Self::ReadData,
            4 => Self::Send,
            5 => Self::Imm,
            6 => Self::Ack,
            7 => Self::Nack,
            8 => Self::Retry,
            9 => Self::DirectWrite,
            10 => Self::DirectRead,
            11 => Self::Prepare,
            _ => return None,
        })
    }
}

/// Why a target refused a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Reason {
    /// The page `va` faulted in the target's SMMU; wait for RETRY.
    Fault = 1,
    /// The page `va` cannot be made present: the transfer fails.
    AccessError = 2,
    /// No RECV is posted: try again later.
    NotReady = 3,
    /// The message does not fit the posted RECV, or is malformed.
    BadRequest = 4,
    /// The initiator took its lent memory back after `offset`: lend the
    /// rest again.
    Revoked = 5,
    /// The target cannot map the initiator's memory: use datagrams.
    Unshared = 6,
    /// A fault on page `va`, in the same 2 MiB as the request, is being
    /// resolved: the request was not tried; wait for RETRY(va) like a fault.
    Held = 7,
    /// The key names no exposure of the target, or the range is outside
    /// it, or it does not grant the access: the transfer fails with
    /// `RemoteProtectionError`, and nothing was placed or read for it.
    Protection = 8,
}

impl Reason {
    fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            1 => Self::Fault,
            2 => Self::AccessError,
            3 => Self::NotReady,
            4 => Self::BadRequest,
            5 => Self::Revoked,
            6 => Self::Unshared,
            7 => Self::Held,
            8 => Self::Protection,
            _ => return None,
        })
    }
}

/// One decoded datagram.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Msg {
    /// What it is.
    pub kind: Kind,
    /// For [`Kind::Nack`].
    pub reason: Option<Reason>,
    /// Rank of the sender.
    pub src: u16,
    /// Initiator's transfer id.
    pub xfer: u64,
    /// Segment index.
    pub seg: u32,
    /// Immediate value ([`Kind::Imm`]).
    pub imm: u32,
    /// Byte offset of the segment in the transfer.
    pub offset: u64,
    /// Target VA (data) or page (NACK/RETRY).
    pub va: u64,
    /// Bytes wanted (READ_REQ) or transfer length.
    pub len: u64,
    /// The target's remote key (requests on its memory).
    pub key: u64,
    /// Data.
    pub payload: Vec<u8>,
}

impl Msg {
    /// A message with no payload and zero fields.
    pub fn new(kind: Kind, src: u16, xfer: u64, seg: u32) -> Self {
        Self {
            kind,
            reason: None,
            src,
            xfer,
            seg,
            imm: 0,
            offset: 0,
            va: 0,
            len: 0,
            key: 0,
            payload: Vec::new(),
        }
    }

    /// Encodes header and payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = self.header().to_vec();
        b.extend_from_slice(&self.payload);
        b
    }

    /// A datagram of this header and `len` payload bytes that `fill`
    /// writes in place (the engine reads guest memory straight into it).
    pub fn encode_with<E>(
        &self,
        len: usize,
        fill: impl FnOnce(&mut [u8]) -> Result<(), E>,
    ) -> Result<Vec<u8>, E> {
        let mut b = vec![0u8; HDR + len];
        fill(&mut b[HDR..])?;
        b[..HDR].copy_from_slice(&self.header());
        Ok(b)
    }

    /// The encoded header alone.
    pub fn header(&self) -> [u8; HDR] {
        let mut b = Vec::with_capacity(HDR);
        b.extend_from_slice(&MAGIC.to_le_bytes());
        b.push(self.kind as u8);
        b.push(self.reason.map_or(0, |r| r as u8));
        b.extend_from_slice(&self.src.to_le_bytes());
        b.extend_from_slice(&[0, 0]);
        b.extend_from_slice(&self.xfer.to_le_bytes());
        b.extend_from_slice(&self.seg.to_le_bytes());
        b.extend_from_slice(&self.imm.to_le_bytes());
        b.extend_from_slice(&self.offset.to_le_bytes());
        b.extend_from_slice(&self.va.to_le_bytes());
        b.extend_from_slice(&self.len.to_le_bytes());
        b.extend_from_slice(&self.key.to_le_bytes());
        b.try_into().expect("header is HDR bytes")
    }

    /// Decodes a datagram; `None` for anything that is not one of ours.
    pub fn decode(b: &[u8]) -> Option<Self> {
        let (mut m, payload) = Self::decode_split(b)?;
        m.payload = payload.to_vec();
        Some(m)
    }

    /// Decodes the header and borrows the payload (no copy).
    pub fn decode_split(b: &[u8]) -> Option<(Self, &[u8])> {
        if b.len() < HDR || b.len() > HDR + MAX_PAYLOAD {
            return None;
        }
        let u16_at = |at: usize| u16::from_le_bytes([b[at], b[at + 1]]);
        let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
        let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
        if u16_at(0) != MAGIC {
            return None;
        }
        let kind = Kind::from_u8(b[2])?;
        let reason = match kind {
            Kind::Nack => Some(Reason::from_u8(b[3])?),
            _ if b[3] != 0 => return None,
            _ => None,
        };
        // Reserved bytes are zero; control messages carry no payload.
        if u16_at(6) != 0 {
            return None;
        }
        let carries = matches!(
            kind,
            Kind::WriteData | Kind::ReadData | Kind::Send | Kind::DirectWrite | Kind::DirectRead
        );
        if !carries && b.len() > HDR {
            return None;
        }
        let m = Self {
            kind,
            reason,
            src: u16_at(4),
            xfer: u64_at(8),
            seg: u32_at(16),
            imm: u32_at(20),
            offset: u64_at(24),
            va: u64_at(32),
            len: u64_at(40),
            key: u64_at(48),
            payload: Vec::new(),
        };
        Some((m, &b[HDR..]))
    }
}

/// Bytes of one extent in a direct request.
const EXTENT: usize = 24;
/// Bytes before the extents in a direct request.
const LENT_HDR: usize = 16;
/// Most extents one direct request carries.
pub const MAX_EXTENTS: usize = (MAX_PAYLOAD - LENT_HDR) / EXTENT;

/// The payload of a direct request: the lease and the lent extents.
pub fn encode_lent(l: &Lent) -> Vec<u8> {
    let mut b = Vec::with_capacity(LENT_HDR + EXTENT * l.extents.len());
    b.extend_from_slice(&l.lease.slot.to_le_bytes());
    b.extend_from_slice(&(l.extents.len() as u32).to_le_bytes());
    b.extend_from_slice(&l.lease.seq.to_le_bytes());
    for e in &l.extents {
        b.extend_from_slice(&e.region.to_le_bytes());
        b.extend_from_slice(&[0; 4]);
        b.extend_from_slice(&e.offset.to_le_bytes());
        b.extend_from_slice(&e.len.to_le_bytes());
    }
    b
}

/// Decodes a direct request's payload; None if malformed (wrong size,
/// lengths that overflow).
pub fn decode_lent(b: &[u8]) -> Option<Lent> {
    let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
    let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
    if b.len() < LENT_HDR {
        return None;
    }
    let n = u32_at(4) as usize;
    if n > MAX_EXTENTS || b.len() != LENT_HDR + EXTENT * n {
        return None;
    }
    let extents = (0..n)
        .map(|i| {
            let at = LENT_HDR + EXTENT * i;
            Extent {
                region: u32_at(at),
                offset: u64_at(at + 8),
                len: u64_at(at + 16),
            }
        })
        .collect();
    let l = Lent {
        lease: Lease {
            slot: u32_at(0),
            seq: u64_at(8),
        },
        extents,
    };
    l.len().map(|_| l)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lent_memory_round_trips_and_nonsense_is_refused() {
        let l = Lent {
            lease: Lease {
                slot: 7,
                seq: 1 << 40,
            },
            extents: vec![
                Extent {
                    region: 3,
                    offset: 0x1000,
                    len: 0x3000,
                },
                Extent {
                    region: 4,
                    offset: 9,
                    len: 1,
                },
            ],
        };
        let b = encode_lent(&l);
        assert_eq!(decode_lent(&b), Some(l.clone()));
        assert_eq!(decode_lent(&b[..b.len() - 1]), None);
        assert_eq!(decode_lent(&b[..3]), None);
        let mut big = l;
        big.extents[0].len = u64::MAX;
        assert_eq!(decode_lent(&encode_lent(&big)), None, "overflowing length");
    }

    #[test]
    fn a_nack_round_trips_with_its_reason() {
        let mut m = Msg::new(Kind::Nack, 3, 77, 5);
        m.reason = Some(Reason::Fault);
        m.va = 0x4000_3000;
        assert_eq!(Msg::decode(&m.encode()), Some(m));
        let mut m = Msg::new(Kind::Nack, 1, 9, 0);
        m.reason = Some(Reason::Protection);
        assert_eq!(Msg::decode(&m.encode()), Some(m));
    }

    #[test]
    fn a_request_carries_the_targets_key() {
        let mut m = Msg::new(Kind::ReadReq, 0, 5, 2);
        m.va = 0x4000_0000;
        m.len = 4096;
        m.key = 0x0123_4567_89ab_cdef;
        let b = m.encode();
        assert_eq!(b.len(), HDR);
        assert_eq!(Msg::decode(&b).map(|d| d.key), Some(m.key));
    }

    #[test]
    fn foreign_or_broken_datagrams_are_dropped() {
        let mut w = Msg::new(Kind::WriteData, 1, 2, 0);
        w.payload = vec![7; 100];
        let good = w.encode();
        assert_eq!(Msg::decode(&good).unwrap().payload.len(), 100);
        assert_eq!(Msg::decode(&good[..HDR - 1]), None);
        let mut bad = good.clone();
        bad[0] ^= 1;
        assert_eq!(Msg::decode(&bad), None, "magic");
        let mut bad = good.clone();
        bad[2] = 99;
        assert_eq!(Msg::decode(&bad), None, "kind");
        let mut nack = Msg::new(Kind::Nack, 1, 2, 0).encode();
        nack[3] = 0;
        assert_eq!(Msg::decode(&nack), None, "a NACK needs a reason");
        assert_eq!(Msg::decode(&vec![0; HDR + MAX_PAYLOAD + 1]), None);
    }

    #[test]
    fn malformed_headers_are_refused() {
        let ack = Msg::new(Kind::Ack, 1, 2, 0).encode();
        assert!(Msg::decode(&ack).is_some());
        let mut bad = ack.clone();
        bad[6] = 1;
        assert_eq!(Msg::decode(&bad), None, "reserved bytes");
        let mut bad = ack.clone();
        bad[3] = Reason::Fault as u8;
        assert_eq!(Msg::decode(&bad), None, "a reason on an ACK");
        let mut bad = ack.clone();
        bad.push(0);
        assert_eq!(Msg::decode(&bad), None, "payload on an ACK");
        for kind in [Kind::ReadReq, Kind::Imm, Kind::Retry, Kind::Prepare] {
            let mut m = Msg::new(kind, 0, 1, 0);
            assert!(Msg::decode(&m.encode()).is_some());
            m.payload = vec![1];
            assert_eq!(Msg::decode(&m.encode()), None, "{kind:?} with payload");
        }
        let mut nack = Msg::new(Kind::Nack, 1, 2, 0).encode();
        nack[3] = 200;
        assert_eq!(Msg::decode(&nack), None, "unknown reason");
        // Every truncation and every single-byte corruption of the header
        // decodes or not, never panics.
        let mut w = Msg::new(Kind::DirectWrite, 1, 2, 3);
        w.payload = vec![9; 64];
        let good = w.encode();
        for n in 0..good.len() {
            let _ = Msg::decode(&good[..n]);
        }
        for at in 0..HDR {
            for v in [0u8, 1, 0x7f, 0xff] {
                let mut b = good.clone();
                b[at] = v;
                let _ = Msg::decode(&b);
            }
        }
    }
}
