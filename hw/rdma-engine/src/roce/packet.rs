//! RoCEv2 packets as they travel in UDP datagrams to port 4791: the Base
//! Transport Header, the extended headers a Reliable Connection uses, the
//! payload with its pad, and the invariant CRC (InfiniBand Architecture
//! Specification, volume 1, chapter 9, and annex A17 for RoCEv2).
//!
//! ```text
//!  UDP payload: BTH (12) | RETH (16)? | ImmDt (4)? | AETH (4)? | payload | pad 0-3 | ICRC (4)
//!  BTH: opcode | SE M pad:2 tver:4 | P_Key:16 | F B resv:6 | dest QP:24 | A resv:7 | PSN:24
//!  RETH: virtual address:64 | R_Key:32 | DMA length:32
//!  AETH: syndrome:8 (ACK / RNR NAK + timer / NAK + code) | MSN:24
//! ```
//!
//! Every field is big-endian. Which extended headers follow the BTH is
//! fixed by the opcode ([`Opcode::headers`]); a packet whose length does
//! not fit its opcode, whose transport version is not 0, or whose ICRC is
//! wrong decodes to an error and is dropped by the caller.
//!
//! The ICRC covers the packet as an end-to-end check: it is computed over
//! the IPv4 and UDP headers and the BTH with the fields routers may change
//! replaced by ones (IPv4 type of service, TTL and checksum; UDP checksum;
//! the BTH's FECN/BECN byte), preceded by eight bytes of ones where
//! InfiniBand has its local route header, then over the rest of the packet.
//! The engine sends from a UDP socket and builds the header it computes
//! over as the kernel sends it ([`Ipv4Path::outgoing`]): no options, Don't
//! Fragment set, identification 0 (what Linux gives a datagram that must not
//! fragment on a socket that is not connected). It receives through a raw
//! socket that shows the header as it arrived ([`crate::roce::ipv4`]), so a
//! peer that numbers its packets (Linux's rxe counts the identification,
//! and its ICRC covers it) checks out as well.

/// The UDP destination port of RoCEv2.
pub const ROCE_PORT: u16 = 4791;
/// Bytes of the Base Transport Header.
pub const BTH_LEN: usize = 12;
/// Bytes of the RDMA Extended Transport Header.
pub const RETH_LEN: usize = 16;
/// Bytes of the ACK Extended Transport Header.
pub const AETH_LEN: usize = 4;
/// Bytes of the Immediate Data header.
pub const IMM_LEN: usize = 4;
/// Bytes of the invariant CRC at the end of every packet.
pub const ICRC_LEN: usize = 4;
/// The default partition key (full membership of the default partition).
pub const DEFAULT_PKEY: u16 = 0xffff;
/// PSNs are 24-bit numbers that wrap.
pub const PSN_MASK: u32 = 0x00ff_ffff;
/// Queue pair numbers are 24 bits.
pub const QPN_MASK: u32 = 0x00ff_ffff;

/// The Reliable Connection opcodes (transport bits 000 of the BTH opcode).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Opcode {
    /// First packet of a multi-packet SEND.
    SendFirst = 0x00,
    /// Middle packet of a SEND.
    SendMiddle = 0x01,
    /// Last packet of a SEND.
    SendLast = 0x02,
    /// Last packet of a SEND with immediate data.
    SendLastImm = 0x03,
    /// A SEND in one packet.
    SendOnly = 0x04,
    /// A SEND with immediate data in one packet.
    SendOnlyImm = 0x05,
    /// First packet of a multi-packet RDMA WRITE (carries the RETH).
    WriteFirst = 0x06,
    /// Middle packet of an RDMA WRITE.
    WriteMiddle = 0x07,
    /// Last packet of an RDMA WRITE.
    WriteLast = 0x08,
    /// Last packet of an RDMA WRITE with immediate data.
    WriteLastImm = 0x09,
    /// An RDMA WRITE in one packet.
    WriteOnly = 0x0a,
    /// An RDMA WRITE with immediate data in one packet.
    WriteOnlyImm = 0x0b,
    /// RDMA READ request (RETH: what to read).
    ReadRequest = 0x0c,
    /// First packet of a multi-packet READ response.
    ReadResponseFirst = 0x0d,
    /// Middle packet of a READ response.
    ReadResponseMiddle = 0x0e,
    /// Last packet of a READ response.
    ReadResponseLast = 0x0f,
    /// A READ response in one packet.
    ReadResponseOnly = 0x10,
    /// Acknowledge: ACK, RNR NAK or NAK (AETH).
    Acknowledge = 0x11,
}

/// Which extended headers follow the BTH.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Headers {
    /// An RDMA Extended Transport Header.
    pub reth: bool,
    /// Immediate data.
    pub imm: bool,
    /// An ACK Extended Transport Header.
    pub aeth: bool,
    /// Whether the packet may carry payload.
    pub payload: bool,
}

impl Opcode {
    /// Decodes an opcode byte; `None` for anything but the RC opcodes this
    /// engine speaks (atomics, other transports, vendor opcodes).
    pub fn from_u8(v: u8) -> Option<Self> {
        use Opcode::*;
        Some(match v {
            0x00 => SendFirst,
            0x01 => SendMiddle,
            0x02 => SendLast,
            0x03 => SendLastImm,
            0x04 => SendOnly,
            0x05 => SendOnlyImm,
            0x06 => WriteFirst,
            0x07 => WriteMiddle,
            0x08 => WriteLast,
            0x09 => WriteLastImm,
            0x0a => WriteOnly,
            0x0b => WriteOnlyImm,
            0x0c => ReadRequest,
            0x0d => ReadResponseFirst,
            0x0e => ReadResponseMiddle,
            0x0f => ReadResponseLast,
            0x10 => ReadResponseOnly,
            0x11 => Acknowledge,
            _ => return None,
        })
    }

    /// The extended headers of this opcode, in wire order RETH, ImmDt, AETH.
    pub fn headers(self) -> Headers {
        use Opcode::*;
        let (reth, imm, aeth, payload) = match self {
            SendFirst | SendMiddle | SendLast | SendOnly => (false, false, false, true),
            SendLastImm | SendOnlyImm => (false, true, false, true),
            WriteFirst | WriteOnly => (true, false, false, true),
            WriteMiddle | WriteLast => (false, false, false, true),
            WriteLastImm => (false, true, false, true),
            WriteOnlyImm => (true, true, false, true),
            ReadRequest => (true, false, false, false),
            ReadResponseFirst | ReadResponseLast | ReadResponseOnly => (false, false, true, true),
            ReadResponseMiddle => (false, false, false, true),
            Acknowledge => (false, false, true, false),
        };
        Headers {
            reth,
            imm,
            aeth,
            payload,
        }
    }

    /// Whether the requester sends it (else the responder does).
    pub fn is_request(self) -> bool {
        (self as u8) <= Opcode::ReadRequest as u8
    }
}

/// The Base Transport Header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bth {
    /// What the packet is.
    pub opcode: Opcode,
    /// Solicited event.
    pub solicited: bool,
    /// Partition key.
    pub pkey: u16,
    /// The destination queue pair (24 bits).
    pub dest_qp: u32,
    /// The requester asks for an acknowledgement of this packet.
    pub ack_req: bool,
    /// Packet sequence number (24 bits).
    pub psn: u32,
}

/// The RDMA Extended Transport Header: where a WRITE or READ goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reth {
    /// Virtual address at the responder.
    pub va: u64,
    /// The responder's remote key for it.
    pub rkey: u32,
    /// Bytes of the whole WRITE or READ.
    pub len: u32,
}

/// Why a responder refused a request (the NAK codes of the AETH).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum NakCode {
    /// A packet arrived with a PSN past the one expected.
    PsnSequenceError = 0,
    /// Malformed or unsupported request, or out of sequence opcode.
    InvalidRequest = 1,
    /// The R_Key, range or rights did not allow the access.
    RemoteAccessError = 2,
    /// The responder could not complete the request for its own reasons.
    RemoteOperationalError = 3,
}

/// The syndrome of an AETH.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syndrome {
    /// Positive acknowledgement; `credits` is the end-to-end credit field
    /// (31: not limited).
    Ack {
        /// Credit count code (5 bits).
        credits: u8,
    },
    /// Receiver not ready: resend from this PSN after the encoded time.
    Rnr {
        /// The RNR timer code (5 bits; see [`rnr_delay_us`]).
        timer: u8,
    },
    /// Negative acknowledgement.
    Nak(NakCode),
}

/// The credit code of an ACK that does not limit the requester.
pub const CREDITS_UNLIMITED: u8 = 31;

impl Syndrome {
    fn encode(self) -> u8 {
        match self {
            Syndrome::Ack { credits } => credits & 0x1f,
            Syndrome::Rnr { timer } => 0x20 | (timer & 0x1f),
            Syndrome::Nak(code) => 0x60 | code as u8,
        }
    }

    fn decode(b: u8) -> Option<Self> {
        let low = b & 0x1f;
        Some(match b >> 5 {
            0 => Syndrome::Ack { credits: low },
            1 => Syndrome::Rnr { timer: low },
            3 => Syndrome::Nak(match low {
                0 => NakCode::PsnSequenceError,
                1 => NakCode::InvalidRequest,
                2 => NakCode::RemoteAccessError,
                3 => NakCode::RemoteOperationalError,
                _ => return None,
            }),
            _ => return None,
        })
    }
}

/// The ACK Extended Transport Header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Aeth {
    /// ACK, RNR NAK or NAK.
    pub syndrome: Syndrome,
    /// Message sequence number: messages the responder has completed.
    pub msn: u32,
}

/// The RNR NAK timer codes of the specification (table "Encoding for RNR
/// NAK Timer Field"), in microseconds; code 0 means 655.36 ms.
const RNR_US: [u32; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1_280, 1_920, 2_560, 3_840,
    5_120, 7_680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840,
    245_760, 327_680, 491_520,
];

/// The wait an RNR NAK timer code asks for, in microseconds.
pub fn rnr_delay_us(code: u8) -> u64 {
    u64::from(RNR_US[usize::from(code & 0x1f)])
}

/// The smallest RNR timer code whose wait is at least `us` microseconds.
pub fn rnr_code_for(us: u64) -> u8 {
    (1..32u8).find(|&c| rnr_delay_us(c) >= us).unwrap_or(0)
}

/// What the IPv4 and UDP headers around a packet say, for the ICRC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv4Path {
    /// Source address.
    pub src: [u8; 4],
    /// Destination address.
    pub dst: [u8; 4],
    /// UDP source port.
    pub src_port: u16,
    /// UDP destination port.
    pub dst_port: u16,
    /// The IPv4 identification (covered by the ICRC).
    pub id: u16,
    /// The IPv4 flags and fragment offset word (Don't Fragment: 0x4000).
    pub flags: u16,
}

/// The IPv4 flags word with only Don't Fragment set.
pub const DONT_FRAGMENT: u16 = 0x4000;

impl Ipv4Path {
    /// The header of a packet this engine sends from `src` to `dst` (both on
    /// `port`): identification 0, Don't Fragment.
    pub fn outgoing(src: [u8; 4], dst: [u8; 4], port: u16) -> Self {
        Self {
            src,
            dst,
            src_port: port,
            dst_port: port,
            id: 0,
            flags: DONT_FRAGMENT,
        }
    }
}

/// One decoded packet (payload borrowed from the datagram).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet<'a> {
    /// The base header.
    pub bth: Bth,
    /// The RETH, if the opcode has one.
    pub reth: Option<Reth>,
    /// Immediate data, if the opcode has it.
    pub imm: Option<u32>,
    /// The AETH, if the opcode has one.
    pub aeth: Option<Aeth>,
    /// The payload without pad.
    pub payload: &'a [u8],
}

/// Why a datagram is not a packet this engine takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketError {
    /// Shorter than its headers and ICRC, or a pad count that does not fit.
    Truncated,
    /// An opcode outside the RC opcodes spoken here.
    UnknownOpcode,
    /// Transport header version other than 0.
    BadVersion,
    /// Payload on an opcode that carries none, or a header field out of range.
    Malformed,
    /// The invariant CRC does not match.
    BadIcrc,
}

/// Bytes of the headers (BTH and extended) of `op`.
pub fn header_len(op: Opcode) -> usize {
    let h = op.headers();
    BTH_LEN
        + if h.reth { RETH_LEN } else { 0 }
        + if h.imm { IMM_LEN } else { 0 }
        + if h.aeth { AETH_LEN } else { 0 }
}

/// Bytes on the wire (UDP payload) of a packet of `op` with `payload` bytes.
pub fn wire_len(op: Opcode, payload: usize) -> usize {
    header_len(op) + payload.next_multiple_of(4) + ICRC_LEN
}

/// Appends the packet to `out` as it goes into a UDP datagram on `path`,
/// ICRC included.
pub fn encode(p: &Packet<'_>, path: &Ipv4Path, out: &mut Vec<u8>) {
    let start = out.len();
    let pad = (4 - p.payload.len() % 4) % 4;
    let b = &p.bth;
    out.push(b.opcode as u8);
    out.push((u8::from(b.solicited) << 7) | ((pad as u8) << 4));
    out.extend_from_slice(&b.pkey.to_be_bytes());
    out.extend_from_slice(&(b.dest_qp & QPN_MASK).to_be_bytes());
    out.extend_from_slice(&((u32::from(b.ack_req) << 31) | (b.psn & PSN_MASK)).to_be_bytes());
    let h = b.opcode.headers();
    if h.reth {
        let r = p.reth.unwrap_or(Reth {
            va: 0,
            rkey: 0,
            len: 0,
        });
        out.extend_from_slice(&r.va.to_be_bytes());
        out.extend_from_slice(&r.rkey.to_be_bytes());
        out.extend_from_slice(&r.len.to_be_bytes());
    }
    if h.imm {
        out.extend_from_slice(&p.imm.unwrap_or(0).to_be_bytes());
    }
    if h.aeth {
        let a = p.aeth.unwrap_or(Aeth {
            syndrome: Syndrome::Ack {
                credits: CREDITS_UNLIMITED,
            },
            msn: 0,
        });
        out.extend_from_slice(
            &((u32::from(a.syndrome.encode()) << 24) | (a.msn & PSN_MASK)).to_be_bytes(),
        );
    }
    out.extend_from_slice(p.payload);
    out.extend_from_slice(&[0u8; 3][..pad]);
    let icrc = icrc(path, &out[start..]);
    out.extend_from_slice(&icrc.to_le_bytes());
}

/// Decodes one UDP payload that came on `path`; the ICRC is checked.
pub fn decode<'a>(d: &'a [u8], path: &Ipv4Path) -> Result<Packet<'a>, PacketError> {
    if d.len() < BTH_LEN + ICRC_LEN {
        return Err(PacketError::Truncated);
    }
    let opcode = Opcode::from_u8(d[0]).ok_or(PacketError::UnknownOpcode)?;
    if d[1] & 0x0f != 0 {
        return Err(PacketError::BadVersion);
    }
    let hdr = header_len(opcode);
    let pad = usize::from((d[1] >> 4) & 3);
    let body_end = d.len() - ICRC_LEN;
    if d.len() < hdr + ICRC_LEN || body_end - hdr < pad {
        return Err(PacketError::Truncated);
    }
    let (body, crc) = d.split_at(body_end);
    let want = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
    if icrc(path, body) != want {
        return Err(PacketError::BadIcrc);
    }
    let be32 = |at: usize| u32::from_be_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]]);
    let w2 = be32(8);
    let bth = Bth {
        opcode,
        solicited: d[1] & 0x80 != 0,
        pkey: u16::from_be_bytes([d[2], d[3]]),
        dest_qp: be32(4) & QPN_MASK,
        ack_req: w2 & 0x8000_0000 != 0,
        psn: w2 & PSN_MASK,
    };
    let h = opcode.headers();
    let mut at = BTH_LEN;
    let mut reth = None;
    if h.reth {
        let va = u64::from_be_bytes(
            d[at..at + 8]
                .try_into()
                .map_err(|_| PacketError::Truncated)?,
        );
        reth = Some(Reth {
            va,
            rkey: be32(at + 8),
            len: be32(at + 12),
        });
        at += RETH_LEN;
    }
    let mut imm = None;
    if h.imm {
        imm = Some(be32(at));
        at += IMM_LEN;
    }
    let mut aeth = None;
    if h.aeth {
        let w = be32(at);
        let syndrome = Syndrome::decode((w >> 24) as u8).ok_or(PacketError::Malformed)?;
        aeth = Some(Aeth {
            syndrome,
            msn: w & PSN_MASK,
        });
        at += AETH_LEN;
    }
    let payload = &body[at..body.len() - pad];
    if !h.payload && !payload.is_empty() {
        return Err(PacketError::Malformed);
    }
    Ok(Packet {
        bth,
        reth,
        imm,
        aeth,
        payload,
    })
}

/// The invariant CRC of `body` (the UDP payload up to the ICRC) on `path`.
pub fn icrc(path: &Ipv4Path, body: &[u8]) -> u32 {
    let udp_len = (8 + body.len() + ICRC_LEN) as u16;
    let total = 20 + udp_len;
    let mut pseudo = [0xffu8; 8 + 20 + 8 + BTH_LEN];
    // IPv4: version 4, IHL 5; TOS masked; total length; identification;
    // flags; TTL masked; UDP; checksum masked; addresses.
    let ip = &mut pseudo[8..28];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip[4..6].copy_from_slice(&path.id.to_be_bytes());
    ip[6..8].copy_from_slice(&path.flags.to_be_bytes());
    ip[9] = 17;
    ip[12..16].copy_from_slice(&path.src);
    ip[16..20].copy_from_slice(&path.dst);
    let udp = &mut pseudo[28..36];
    udp[0..2].copy_from_slice(&path.src_port.to_be_bytes());
    udp[2..4].copy_from_slice(&path.dst_port.to_be_bytes());
    udp[4..6].copy_from_slice(&udp_len.to_be_bytes());
    let n = body.len().min(BTH_LEN);
    let bth = &mut pseudo[36..36 + n];
    bth.copy_from_slice(&body[..n]);
    if n > 4 {
        bth[4] = 0xff;
    }
    let mut h = crc32fast::Hasher::new();
    h.update(&pseudo[..36 + n]);
    h.update(&body[n..]);
    h.finalize()
}

/// `a - b` in PSN space, as a signed distance (-2^23 ..= 2^23 - 1).
pub fn psn_diff(a: u32, b: u32) -> i32 {
    ((a.wrapping_sub(b) & PSN_MASK) << 8) as i32 >> 8
}

/// `psn + n` in PSN space.
pub fn psn_add(psn: u32, n: u32) -> u32 {
    psn.wrapping_add(n) & PSN_MASK
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path() -> Ipv4Path {
        Ipv4Path::outgoing([10, 47, 0, 1], [10, 47, 0, 2], ROCE_PORT)
    }

    fn bth(opcode: Opcode, psn: u32) -> Bth {
        Bth {
            opcode,
            solicited: false,
            pkey: DEFAULT_PKEY,
            dest_qp: 0x11,
            ack_req: true,
            psn,
        }
    }

    #[test]
    fn a_write_first_round_trips_with_its_reth_and_pad() {
        let p = Packet {
            bth: bth(Opcode::WriteFirst, 0xff_fffe),
            reth: Some(Reth {
                va: 0x1400_0000_1000,
                rkey: 0xdead_beef,
                len: 3000,
            }),
            imm: None,
            aeth: None,
            payload: b"hello",
        };
        let mut out = Vec::new();
        encode(&p, &path(), &mut out);
        assert_eq!(out.len(), wire_len(Opcode::WriteFirst, 5));
        assert_eq!(out.len(), 12 + 16 + 8 + 4);
        assert_eq!(out[1] >> 4, 3, "pad count");
        assert_eq!(decode(&out, &path()), Ok(p));
    }

    #[test]
    fn acknowledgements_carry_their_syndromes() {
        for s in [
            Syndrome::Ack { credits: 31 },
            Syndrome::Rnr { timer: 14 },
            Syndrome::Nak(NakCode::PsnSequenceError),
            Syndrome::Nak(NakCode::RemoteAccessError),
        ] {
            let p = Packet {
                bth: bth(Opcode::Acknowledge, 7),
                reth: None,
                imm: None,
                aeth: Some(Aeth {
                    syndrome: s,
                    msn: 0x12_3456,
                }),
                payload: &[],
            };
            let mut out = Vec::new();
            encode(&p, &path(), &mut out);
            assert_eq!(out.len(), 20);
            assert_eq!(decode(&out, &path()), Ok(p));
        }
    }

    #[test]
    fn every_flipped_bit_outside_the_masked_fields_fails_the_icrc() {
        let p = Packet {
            bth: bth(Opcode::WriteOnlyImm, 1),
            reth: Some(Reth {
                va: 4096,
                rkey: 9,
                len: 8,
            }),
            imm: Some(0xabcd),
            aeth: None,
            payload: &[1, 2, 3, 4, 5, 6, 7, 8],
        };
        let mut out = Vec::new();
        encode(&p, &path(), &mut out);
        for byte in 0..out.len() - ICRC_LEN {
            for bit in 0..8 {
                let mut bad = out.clone();
                bad[byte] ^= 1 << bit;
                let r = decode(&bad, &path());
                if byte == 4 {
                    // The FECN/BECN byte is masked: a router may set it.
                    assert!(r.is_ok(), "byte 4 bit {bit}");
                } else {
                    assert!(r.is_err(), "byte {byte} bit {bit} went unnoticed");
                }
            }
        }
        let mut other = path();
        other.src[3] = 9;
        assert_eq!(decode(&out, &other), Err(PacketError::BadIcrc));
    }

    #[test]
    fn short_and_strange_datagrams_are_errors_not_panics() {
        let mut out = Vec::new();
        encode(
            &Packet {
                bth: bth(Opcode::ReadRequest, 3),
                reth: Some(Reth {
                    va: 1,
                    rkey: 2,
                    len: 3,
                }),
                imm: None,
                aeth: None,
                payload: &[],
            },
            &path(),
            &mut out,
        );
        for n in 0..out.len() {
            assert!(decode(&out[..n], &path()).is_err(), "{n} bytes");
        }
        let mut vendor = out.clone();
        vendor[0] = 0xc0;
        assert_eq!(decode(&vendor, &path()), Err(PacketError::UnknownOpcode));
        let mut tver = out.clone();
        tver[1] |= 1;
        assert_eq!(decode(&tver, &path()), Err(PacketError::BadVersion));
    }

    #[test]
    fn psns_wrap_at_24_bits() {
        assert_eq!(psn_add(PSN_MASK, 1), 0);
        assert_eq!(psn_diff(0, PSN_MASK), 1);
        assert_eq!(psn_diff(PSN_MASK, 0), -1);
        assert_eq!(psn_diff(5, 5), 0);
        assert_eq!(psn_diff(0x80_0000, 0), -0x80_0000);
    }

    #[test]
    fn rnr_timer_codes_follow_the_table() {
        assert_eq!(rnr_delay_us(0), 655_360);
        assert_eq!(rnr_delay_us(1), 10);
        assert_eq!(rnr_code_for(100), 7);
        assert_eq!(rnr_delay_us(rnr_code_for(100)), 120);
        assert_eq!(rnr_code_for(1), 1);
    }
}
