//! The IPv4 and UDP headers of a received RoCEv2 packet, as a raw socket
//! hands them over: what the ICRC check needs ([`Ipv4Path`]) and where the
//! UDP payload is. Anything that is not one whole IPv4 packet carrying UDP
//! is refused; so is a fragment (RoCE packets never are) and a header with
//! options (the ICRC's pseudo-header has none).

use super::packet::Ipv4Path;

/// Bytes of an IPv4 header without options.
const IP_LEN: usize = 20;
/// Bytes of a UDP header.
const UDP_LEN: usize = 8;
/// IPv4's protocol number for UDP.
const UDP: u8 = 17;

/// Why a raw packet is not one RoCE candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderError {
    /// Shorter than its headers say, not IPv4, not UDP, or with options.
    Malformed,
    /// A fragment of a larger datagram.
    Fragment,
}

/// Splits one raw IPv4 packet into its path and its UDP payload.
pub fn split(d: &[u8]) -> Result<(Ipv4Path, &[u8]), HeaderError> {
    if d.len() < IP_LEN + UDP_LEN || d[0] != 0x45 || d[9] != UDP {
        return Err(HeaderError::Malformed);
    }
    let word = |i: usize| u16::from_be_bytes([d[i], d[i + 1]]);
    let total = usize::from(word(2));
    let flags = word(6);
    // More Fragments set, or an offset: part of something larger.
    if flags & 0x3fff != 0 {
        return Err(HeaderError::Fragment);
    }
    if total > d.len() || total < IP_LEN + UDP_LEN {
        return Err(HeaderError::Malformed);
    }
    let udp = &d[IP_LEN..total];
    let udp_len = usize::from(u16::from_be_bytes([udp[4], udp[5]]));
    if udp_len != udp.len() {
        return Err(HeaderError::Malformed);
    }
    let path = Ipv4Path {
        src: [d[12], d[13], d[14], d[15]],
        dst: [d[16], d[17], d[18], d[19]],
        src_port: u16::from_be_bytes([udp[0], udp[1]]),
        dst_port: u16::from_be_bytes([udp[2], udp[3]]),
        id: word(4),
        flags,
    };
    Ok((path, &udp[UDP_LEN..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4/UDP packet as a peer's kernel would build it.
    fn raw(id: u16, flags: u16, payload: &[u8]) -> Vec<u8> {
        let total = (IP_LEN + UDP_LEN + payload.len()) as u16;
        let mut d = vec![0x45, 0];
        d.extend(total.to_be_bytes());
        d.extend(id.to_be_bytes());
        d.extend(flags.to_be_bytes());
        d.extend([64, UDP, 0, 0, 10, 47, 0, 9, 10, 47, 0, 1]);
        d.extend(52705u16.to_be_bytes());
        d.extend(4791u16.to_be_bytes());
        d.extend((UDP_LEN as u16 + payload.len() as u16).to_be_bytes());
        d.extend([0, 0]);
        d.extend(payload);
        d
    }

    #[test]
    fn a_packet_from_rxe_gives_its_identification_and_payload() {
        let d = raw(0xa06a, 0x4000, b"roce");
        let (path, payload) = split(&d).unwrap();
        assert_eq!(payload, b"roce");
        assert_eq!(path.id, 0xa06a);
        assert_eq!(path.flags, 0x4000);
        assert_eq!((path.src, path.dst), ([10, 47, 0, 9], [10, 47, 0, 1]));
        assert_eq!((path.src_port, path.dst_port), (52705, 4791));
    }

    #[test]
    fn fragments_options_and_short_packets_are_refused() {
        assert_eq!(
            split(&raw(1, 0x2000, b"x")).unwrap_err(),
            HeaderError::Fragment
        );
        assert_eq!(
            split(&raw(1, 0x0008, b"x")).unwrap_err(),
            HeaderError::Fragment
        );
        let mut opts = raw(1, 0, b"x");
        opts[0] = 0x46;
        assert_eq!(split(&opts).unwrap_err(), HeaderError::Malformed);
        let d = raw(1, 0, b"four");
        for n in 0..d.len() {
            assert!(split(&d[..n]).is_err(), "{n} bytes");
        }
        let mut bad_udp = raw(1, 0, b"four");
        bad_udp[25] += 1;
        assert_eq!(split(&bad_udp).unwrap_err(), HeaderError::Malformed);
    }
}
