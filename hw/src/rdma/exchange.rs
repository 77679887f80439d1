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
    fn hex_fields_refuse_what_is_not_hex() {
        assert_eq!(parse_hex(b"00ff"), Some(255));
        assert_eq!(parse_hex(b"FF"), Some(255));
        assert_eq!(parse_hex(b""), None);
        assert_eq!(parse_hex(b"-1"), None);
        assert_eq!(parse_hex(b"0123456789abcdef0"), None);
    }
}
