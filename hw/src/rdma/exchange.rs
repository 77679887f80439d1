//! The out-of-band messages Linux's RDMA test programs send over TCP
//! before their queue pairs can talk, so a Faultline app can stand on the
//! other end of them unchanged.
//!
//! rdma-core's `ibv_rc_pingpong` (TCP port 18515): each side sends
//! `"LLLL:QQQQQQ:PPPPPP:GGGG…G"` and a NUL (52 bytes): LID, queue pair
//! number and first PSN in hex, then the GID as 32 hex digits, its 16
//! bytes in order. The client writes first, reads the server's, then
//! writes `"done"` and a NUL.
//!
//! perftest's programs (`ib_write_bw`, `ib_read_bw`, …; TCP port 18515)
//! exchange, in this order, each as "the client writes, then the server
//! answers the same size": the version (16 bytes, a NUL-padded string),
//! the page and cache-line sizes (two 4-byte big-endian numbers), the
//! path MTU (2 bytes: the ibverbs MTU code in decimal and a NUL), then
//! [`PerftestDest`] messages (108 bytes: LID, outstanding READs, QPN, PSN,
//! R_Key, address, GID, SRQ number, in hex separated by `:`) three times,
//! the test runs, one more [`PerftestDest`] each way, the client's
//! measurement (five 8-byte big-endian numbers, [`PerftestReport`]), a
//! last [`PerftestDest`] each way, and `"done"` with a NUL from both.
//!
//! On RoCE the LID is 0 and the GID of an IPv4 port is the address mapped
//! into IPv6 (`::ffff:a.b.c.d`): that is where the peer's packets go.

/// Bytes of one `ibv_rc_pingpong` address message (with its NUL).
pub const PINGPONG_MSG_LEN: usize = 52;
/// What the `ibv_rc_pingpong` client sends once it has the server's
/// address.
pub const PINGPONG_DONE: &[u8; 5] = b"done\0";

/// Why a message from a peer is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExchangeError {
    /// Not the length the format has.
    Length(usize),
    /// A field is not what the format says (which field, from 0).
    Field(usize),
}

/// One end's numbers in `ibv_rc_pingpong`'s exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PingpongDest {
    /// InfiniBand local identifier (0 on RoCE).
    pub lid: u16,
    /// Queue pair number (24 bits).
    pub qpn: u32,
    /// First PSN (24 bits).
    pub psn: u32,
    /// The port's GID (all zero when the program was not given `-g`).
    pub gid: [u8; 16],
}

impl PingpongDest {
    /// The message, NUL included.
    pub fn encode(&self) -> [u8; PINGPONG_MSG_LEN] {
        let mut out = [0u8; PINGPONG_MSG_LEN];
        let mut at = put_hex(&mut out, 0, u64::from(self.lid), 4);
        out[at] = b':';
        at = put_hex(&mut out, at + 1, u64::from(self.qpn & 0xff_ffff), 6);
        out[at] = b':';
        at = put_hex(&mut out, at + 1, u64::from(self.psn & 0xff_ffff), 6);
        out[at] = b':';
        at += 1;
        for &b in &self.gid {
            at = put_hex(&mut out, at, u64::from(b), 2);
        }
        out
    }

    /// Reads a peer's message (`msg` as received: 52 bytes, NUL last).
    pub fn decode(msg: &[u8]) -> Result<Self, ExchangeError> {
        if msg.len() != PINGPONG_MSG_LEN {
            return Err(ExchangeError::Length(msg.len()));
        }
        if msg[4] != b':' || msg[11] != b':' || msg[18] != b':' || msg[51] != 0 {
            return Err(ExchangeError::Field(4));
        }
        let lid = parse_hex(&msg[0..4]).ok_or(ExchangeError::Field(0))?;
        let qpn = parse_hex(&msg[5..11]).ok_or(ExchangeError::Field(1))?;
        let psn = parse_hex(&msg[12..18]).ok_or(ExchangeError::Field(2))?;
        let mut gid = [0u8; 16];
        for (i, b) in gid.iter_mut().enumerate() {
            let at = 19 + 2 * i;
            *b = parse_hex(&msg[at..at + 2]).ok_or(ExchangeError::Field(3))? as u8;
        }
        Ok(Self {
            lid: lid as u16,
            qpn: qpn as u32,
            psn: psn as u32,
            gid,
        })
    }
}

/// Bytes of a perftest version message.
pub const PERFTEST_VERSION_LEN: usize = 16;
/// The perftest version whose exchange this module speaks (Debian 12's
/// perftest 4.5-0.17 calls itself 6.06); peers older than 5.70 refuse it.
pub const PERFTEST_VERSION: &[u8] = b"6.06";
/// Bytes of one [`PerftestDest`] message (with its NUL).
pub const PERFTEST_DEST_LEN: usize = 108;

/// One end's numbers in perftest's exchange (with a GID, as on RoCE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerftestDest {
    /// InfiniBand local identifier (0 on RoCE).
    pub lid: u16,
    /// READs this end takes outstanding (the peer's `max_rd_atomic`).
    pub out_reads: u16,
    /// Queue pair number (24 bits).
    pub qpn: u32,
    /// First PSN (24 bits).
    pub psn: u32,
    /// The key of its buffer.
    pub rkey: u32,
    /// The address of its buffer.
    pub vaddr: u64,
    /// The port's GID.
    pub gid: [u8; 16],
    /// Shared receive queue number (0: none).
    pub srqn: u32,
}

impl PerftestDest {
    /// The message, NUL included.
    pub fn encode(&self) -> [u8; PERFTEST_DEST_LEN] {
        let mut out = [0u8; PERFTEST_DEST_LEN];
        let mut at = 0;
        for (value, digits) in [
            (u64::from(self.lid), 4),
            (u64::from(self.out_reads), 4),
            (u64::from(self.qpn & 0xff_ffff), 6),
            (u64::from(self.psn & 0xff_ffff), 6),
            (u64::from(self.rkey), 8),
            (self.vaddr, 16),
        ] {
            at = put_hex(&mut out, at, value, digits);
            out[at] = b':';
            at += 1;
        }
        for &b in &self.gid {
            at = put_hex(&mut out, at, u64::from(b), 2);
            out[at] = b':';
            at += 1;
        }
        at = put_hex(&mut out, at, u64::from(self.srqn), 8);
        out[at] = b':';
        out
    }

    /// Reads a peer's message (108 bytes as received).
    pub fn decode(msg: &[u8]) -> Result<Self, ExchangeError> {
        if msg.len() != PERFTEST_DEST_LEN {
            return Err(ExchangeError::Length(msg.len()));
        }
        let text = msg.split(|&b| b == 0).next().unwrap_or(&[]);
        let mut fields = text.split(|&b| b == b':');
        let mut next = |i: usize| {
            fields
                .next()
                .and_then(parse_hex)
                .ok_or(ExchangeError::Field(i))
        };
        let lid = next(0)?;
        let out_reads = next(1)?;
        let qpn = next(2)?;
        let psn = next(3)?;
        let rkey = next(4)?;
        let vaddr = next(5)?;
        let mut gid = [0u8; 16];
        for b in gid.iter_mut() {
            *b = u8::try_from(next(6)?).map_err(|_| ExchangeError::Field(6))?;
        }
        let srqn = next(7)?;
        let narrow = |v: u64, i: usize, max: u64| {
            if v > max {
                Err(ExchangeError::Field(i))
            } else {
                Ok(v)
            }
        };
        Ok(Self {
            lid: narrow(lid, 0, 0xffff)? as u16,
            out_reads: narrow(out_reads, 1, 0xffff)? as u16,
            qpn: narrow(qpn, 2, 0xff_ffff)? as u32,
            psn: narrow(psn, 3, 0xff_ffff)? as u32,
            rkey: narrow(rkey, 4, 0xffff_ffff)? as u32,
            vaddr,
            gid,
            srqn: narrow(srqn, 7, 0xffff_ffff)? as u32,
        })
    }
}

/// A bandwidth test's measurement as perftest's client hands it to the
/// server at the end (the server prints it).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PerftestReport {
    /// Bytes per message.
    pub size: u64,
    /// Messages.
    pub iters: u64,
    /// Best bandwidth, MiB/s.
    pub bw_peak: f64,
    /// Average bandwidth, MiB/s.
    pub bw_avg: f64,
    /// Messages per second, millions.
    pub msg_rate: f64,
}

impl PerftestReport {
    /// The five 8-byte fields, each its own exchange, in order.
    pub fn fields(&self) -> [[u8; 8]; 5] {
        [
            self.size.to_be_bytes(),
            self.iters.to_be_bytes(),
            self.bw_peak.to_bits().to_be_bytes(),
            self.bw_avg.to_bits().to_be_bytes(),
            self.msg_rate.to_bits().to_be_bytes(),
        ]
    }

    /// The report from the five fields a peer sent.
    pub fn from_fields(f: &[[u8; 8]; 5]) -> Self {
        let float = |b: [u8; 8]| f64::from_bits(u64::from_be_bytes(b));
        Self {
            size: u64::from_be_bytes(f[0]),
            iters: u64::from_be_bytes(f[1]),
            bw_peak: float(f[2]),
            bw_avg: float(f[3]),
            msg_rate: float(f[4]),
        }
    }
}

/// A perftest version message's value as (major, minor), e.g. "6.06" →
/// (6, 6); `None` if it is not one.
pub fn perftest_version(msg: &[u8]) -> Option<(u32, u32)> {
    let text = msg.split(|&b| b == 0).next()?;
    let text = core::str::from_utf8(text).ok()?;
    let (major, minor) = text.split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// The ibverbs code of a path MTU (`IBV_MTU_256` = 1 … `IBV_MTU_4096` =
/// 5), as perftest exchanges it; `None` for other sizes.
pub fn mtu_code(mtu: u32) -> Option<u8> {
    match mtu {
        256 => Some(1),
        512 => Some(2),
        1024 => Some(3),
        2048 => Some(4),
        4096 => Some(5),
        _ => None,
    }
}

/// The path MTU of an ibverbs MTU code.
pub fn mtu_of_code(code: u8) -> Option<u32> {
    (1..=5).contains(&code).then(|| 128u32 << code)
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Writes `value` as `digits` lower-case hex digits at `out[at..]`;
/// returns where the next field starts.
fn put_hex(out: &mut [u8], at: usize, value: u64, digits: usize) -> usize {
    for d in 0..digits {
        let shift = 4 * (digits - 1 - d);
        out[at + d] = HEX[((value >> shift) & 0xf) as usize];
    }
    at + digits
}

/// A run of hex digits (either case) as a number; `None` for anything
/// else or more than 16 digits.
pub fn parse_hex(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    digits.iter().try_fold(0u64, |v, &c| {
        let d = (c as char).to_digit(16)?;
        Some((v << 4) | u64::from(d))
    })
}

/// The RoCEv2 GID of an IPv4 address: `::ffff:a.b.c.d`.
pub fn ipv4_gid(addr: [u8; 4]) -> [u8; 16] {
    let mut gid = [0u8; 16];
    gid[10] = 0xff;
    gid[11] = 0xff;
    gid[12..].copy_from_slice(&addr);
    gid
}

/// The IPv4 address an IPv4-mapped GID names; `None` for any other GID
/// (a RoCE peer on IPv6, or a program run without `-g`).
pub fn gid_ipv4(gid: &[u8; 16]) -> Option<[u8; 4]> {
    (gid[..10] == [0; 10] && gid[10..12] == [0xff, 0xff]).then(|| {
        let mut a = [0u8; 4];
        a.copy_from_slice(&gid[12..]);
        a
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pingpong_message_reads_as_rdma_core_writes_it() {
        // What ibv_rc_pingpong on a Linux rxe port at 10.47.0.9 sends.
        let mut wire = *b"0000:000011:a3c2f1:00000000000000000000ffff0a2f0009\0";
        let d = PingpongDest::decode(&wire).unwrap();
        assert_eq!((d.lid, d.qpn, d.psn), (0, 0x11, 0xa3c2f1));
        assert_eq!(gid_ipv4(&d.gid), Some([10, 47, 0, 9]));
        assert_eq!(d.encode(), wire, "and writes back the same bytes");
        wire[20] = b'x';
        assert_eq!(PingpongDest::decode(&wire), Err(ExchangeError::Field(3)));
        assert_eq!(
            PingpongDest::decode(&wire[..51]),
            Err(ExchangeError::Length(51))
        );
    }

    #[test]
    fn our_message_carries_the_engines_address_as_gid() {
        let ours = PingpongDest {
            lid: 0,
            qpn: 0x1_0000,
            psn: 0xabcdef,
            gid: ipv4_gid([10, 47, 0, 1]),
        };
        assert_eq!(
            &ours.encode()[..],
            &b"0000:010000:abcdef:00000000000000000000ffff0a2f0001\0"[..]
        );
        assert_eq!(PingpongDest::decode(&ours.encode()), Ok(ours));
        assert_eq!(gid_ipv4(&[0; 16]), None, "no -g: no IPv4 GID");
    }

    #[test]
    fn a_perftest_message_reads_as_perftest_writes_it() {
        let wire: &[u8] = b"0000:0010:000012:b4c1e0:00001234:0000ffff8ac01000:\
00:00:00:00:00:00:00:00:00:00:ff:ff:0a:2f:00:64:00000000:\0";
        assert_eq!(wire.len(), PERFTEST_DEST_LEN);
        let d = PerftestDest::decode(wire).unwrap();
        assert_eq!((d.lid, d.out_reads, d.qpn, d.psn), (0, 16, 0x12, 0xb4c1e0));
        assert_eq!((d.rkey, d.vaddr), (0x1234, 0xffff_8ac0_1000));
        assert_eq!(gid_ipv4(&d.gid), Some([10, 47, 0, 100]));
        assert_eq!(&d.encode()[..], wire, "and writes back the same bytes");
        let mut bad = [0u8; PERFTEST_DEST_LEN];
        bad.copy_from_slice(wire);
        bad[6] = b'g';
        assert_eq!(PerftestDest::decode(&bad), Err(ExchangeError::Field(1)));
        assert!(PerftestDest::decode(&[0u8; PERFTEST_DEST_LEN]).is_err());
    }

    #[test]
    fn perftest_numbers_travel_big_endian() {
        let r = PerftestReport {
            size: 65536,
            iters: 5000,
            bw_peak: 512.5,
            bw_avg: 500.25,
            msg_rate: 0.008,
        };
        let f = r.fields();
        assert_eq!(f[0], [0, 0, 0, 0, 0, 1, 0, 0]);
        assert_eq!(f[2], 512.5f64.to_be_bytes());
        assert_eq!(PerftestReport::from_fields(&f), r);
        assert_eq!(
            perftest_version(b"6.06\0\0\0\0\0\0\0\0\0\0\0\0"),
            Some((6, 6))
        );
        assert_eq!(perftest_version(b"x"), None);
        assert_eq!((mtu_code(1024), mtu_of_code(5)), (Some(3), Some(4096)));
        assert_eq!((mtu_code(1000), mtu_of_code(0)), (None, None));
    }

    #[test]
    fn hex_fields_refuse_what_is_not_hex() {
        assert_eq!(parse_hex(b"00ff"), Some(255));
        assert_eq!(parse_hex(b"FF"), Some(255));
        assert_eq!(parse_hex(b""), None);
        assert_eq!(parse_hex(b"-1"), None);
        assert_eq!(parse_hex(b"0123456789abcdef0"), None);
    }
}
