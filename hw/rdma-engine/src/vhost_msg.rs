//! The vhost-user messages this engine speaks, encoded and decoded by hand
//! (little-endian, fixed offsets), so that every malformed message from the
//! socket is a clear [`MsgError`] rather than a panic.
//!
//! Only what a virtio-net device behind an IOMMU needs: features, memory
//! table, vring setup, the backend channel and IOTLB messages.

/// Header flag: protocol version 1 (always set).
pub const FLAG_VERSION: u32 = 0x1;
/// Header flag: this message is a reply.
pub const FLAG_REPLY: u32 = 0x4;
/// Header flag: the sender wants an ack (REPLY_ACK protocol feature).
pub const FLAG_NEED_REPLY: u32 = 0x8;
/// Bytes of the header: request, flags, payload size (u32 each).
pub const HEADER_SIZE: usize = 12;
/// Largest payload we accept (the memory table with 8 regions is 328 bytes).
pub const MAX_PAYLOAD: usize = 4096;

/// Virtio feature: virtio 1.x.
pub const F_VERSION_1: u64 = 1 << 32;
/// Virtio feature: the device's accesses are translated by the platform IOMMU.
pub const F_IOMMU_PLATFORM: u64 = 1 << 33;
/// vhost-user feature: protocol features may be negotiated.
pub const F_PROTOCOL_FEATURES: u64 = 1 << 30;
/// The device features we offer.
pub const OFFERED_FEATURES: u64 = F_VERSION_1 | F_IOMMU_PLATFORM | F_PROTOCOL_FEATURES;

/// Protocol feature: acks for messages with [`FLAG_NEED_REPLY`].
pub const PF_REPLY_ACK: u64 = 1 << 3;
/// Protocol feature: the backend channel (SLAVE_REQ / BACKEND_REQ).
pub const PF_BACKEND_REQ: u64 = 1 << 5;
/// The protocol features we offer: what QEMU requires for an IOMMU.
pub const OFFERED_PROTOCOL_FEATURES: u64 = PF_REPLY_ACK | PF_BACKEND_REQ;

/// Flag in the u64 payload of SET_VRING_KICK/CALL/ERR: no fd attached.
pub const VRING_NOFD: u64 = 1 << 8;

/// Frontend (QEMU) → backend requests we know by name.
#[allow(missing_docs)]
pub mod req {
    pub const GET_FEATURES: u32 = 1;
    pub const SET_FEATURES: u32 = 2;
    pub const SET_OWNER: u32 = 3;
    pub const RESET_OWNER: u32 = 4;
    pub const SET_MEM_TABLE: u32 = 5;
    pub const SET_VRING_NUM: u32 = 8;
    pub const SET_VRING_ADDR: u32 = 9;
    pub const SET_VRING_BASE: u32 = 10;
    pub const GET_VRING_BASE: u32 = 11;
    pub const SET_VRING_KICK: u32 = 12;
    pub const SET_VRING_CALL: u32 = 13;
    pub const SET_VRING_ERR: u32 = 14;
    pub const GET_PROTOCOL_FEATURES: u32 = 15;
    pub const SET_PROTOCOL_FEATURES: u32 = 16;
    pub const SET_VRING_ENABLE: u32 = 18;
    pub const SET_BACKEND_REQ_FD: u32 = 21;
    pub const IOTLB_MSG: u32 = 22;
}

/// Backend → frontend request on the backend channel: an IOTLB message (miss).
pub const BACKEND_IOTLB_MSG: u32 = 1;

/// IOTLB message type: the backend asks for a translation.
pub const IOTLB_MISS: u8 = 1;
/// IOTLB message type: the frontend gives a translation.
pub const IOTLB_UPDATE: u8 = 2;
/// IOTLB message type: the frontend withdraws translations.
pub const IOTLB_INVALIDATE: u8 = 3;
/// Encoded size of an IOTLB message (`struct vhost_iotlb_msg`, padded).
pub const IOTLB_SIZE: usize = 32;

/// A message that cannot be understood.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MsgError {
    /// Fewer bytes than the header or the payload it announces.
    Short {
        /// Bytes needed.
        want: usize,
        /// Bytes there were.
        got: usize,
    },
    /// A payload size over [`MAX_PAYLOAD`].
    TooBig(u32),
    /// Wrong version bits in the flags.
    Version(u32),
    /// A field out of range (what, value).
    Field(&'static str, u64),
}

impl std::fmt::Display for MsgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MsgError::Short { want, got } => write!(f, "message too short: {got} of {want} bytes"),
            MsgError::TooBig(n) => write!(f, "payload of {n} bytes is too big"),
            MsgError::Version(fl) => write!(f, "unsupported flags/version {fl:#x}"),
            MsgError::Field(what, v) => write!(f, "bad {what}: {v:#x}"),
        }
    }
}

/// The fixed header of every vhost-user message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Request code.
    pub request: u32,
    /// [`FLAG_VERSION`], [`FLAG_REPLY`], [`FLAG_NEED_REPLY`].
    pub flags: u32,
    /// Payload bytes that follow.
    pub size: u32,
}

impl Header {
    /// Decodes and checks a header.
    pub fn decode(b: &[u8]) -> Result<Self, MsgError> {
        if b.len() < HEADER_SIZE {
            return Err(MsgError::Short {
                want: HEADER_SIZE,
                got: b.len(),
            });
        }
        let h = Header {
            request: u32_at(b, 0),
            flags: u32_at(b, 4),
            size: u32_at(b, 8),
        };
        if h.flags & 0x3 != FLAG_VERSION {
            return Err(MsgError::Version(h.flags));
        }
        if h.size as usize > MAX_PAYLOAD {
            return Err(MsgError::TooBig(h.size));
        }
        Ok(h)
    }

    /// Whether the sender asked for an ack.
    pub fn need_reply(&self) -> bool {
        self.flags & FLAG_NEED_REPLY != 0
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn need(b: &[u8], want: usize) -> Result<(), MsgError> {
    if b.len() < want {
        return Err(MsgError::Short { want, got: b.len() });
    }
    Ok(())
}

/// Encodes a message: header with `flags` (version added) and `payload`.
pub fn encode(request: u32, flags: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_SIZE + payload.len());
    out.extend_from_slice(&request.to_le_bytes());
    out.extend_from_slice(&(flags | FLAG_VERSION).to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// A reply to `request` carrying one u64 (features, or an ack: 0 = success).
pub fn reply_u64(request: u32, v: u64) -> Vec<u8> {
    encode(request, FLAG_REPLY, &v.to_le_bytes())
}

/// Decodes a u64 payload (features, fd messages, acks).
pub fn decode_u64(p: &[u8]) -> Result<u64, MsgError> {
    need(p, 8)?;
    Ok(u64_at(p, 0))
}

/// `struct vhost_vring_state`: a queue index and a number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VringState {
    /// Queue index.
    pub index: u32,
    /// Size, base index or enable flag, by request.
    pub num: u32,
}

impl VringState {
    /// Decodes 8 bytes.
    pub fn decode(p: &[u8]) -> Result<Self, MsgError> {
        need(p, 8)?;
        Ok(Self {
            index: u32_at(p, 0),
            num: u32_at(p, 4),
        })
    }

    /// Encodes 8 bytes.
    pub fn encode(&self) -> [u8; 8] {
        let mut b = [0; 8];
        b[..4].copy_from_slice(&self.index.to_le_bytes());
        b[4..].copy_from_slice(&self.num.to_le_bytes());
        b
    }
}

/// `struct vhost_vring_addr`: where a queue's parts are. With an IOMMU these
/// are IOVAs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VringAddr {
    /// Queue index.
    pub index: u32,
    /// Descriptor table.
    pub desc: u64,
    /// Used ring.
    pub used: u64,
    /// Available ring.
    pub avail: u64,
}

impl VringAddr {
    /// Decodes the 40-byte payload (flags and log address are ignored).
    pub fn decode(p: &[u8]) -> Result<Self, MsgError> {
        need(p, 40)?;
        Ok(Self {
            index: u32_at(p, 0),
            desc: u64_at(p, 8),
            used: u64_at(p, 16),
            avail: u64_at(p, 24),
        })
    }
}

/// One region of the memory table: guest memory QEMU shares through an fd.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemRegion {
    /// Guest-physical start.
    pub guest_phys: u64,
    /// Bytes.
    pub size: u64,
    /// Where QEMU has it mapped (IOTLB updates name these addresses).
    pub uaddr: u64,
    /// Offset of the region in the fd.
    pub mmap_offset: u64,
}

/// Decodes SET_MEM_TABLE: `nregions`, padding, then 32 bytes per region.
pub fn decode_mem_table(p: &[u8]) -> Result<Vec<MemRegion>, MsgError> {
    need(p, 8)?;
    let n = u32_at(p, 0) as usize;
    if n > 8 {
        return Err(MsgError::Field("region count", n as u64));
    }
    need(p, 8 + 32 * n)?;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let r = &p[8 + 32 * i..];
        let reg = MemRegion {
            guest_phys: u64_at(r, 0),
            size: u64_at(r, 8),
            uaddr: u64_at(r, 16),
            mmap_offset: u64_at(r, 24),
        };
        if reg.size == 0
            || reg.uaddr.checked_add(reg.size).is_none()
            || reg.mmap_offset.checked_add(reg.size).is_none()
        {
            return Err(MsgError::Field("region size", reg.size));
        }
        out.push(reg);
    }
    Ok(out)
}

/// `struct vhost_iotlb_msg`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IotlbMsg {
    /// First IOVA.
    pub iova: u64,
    /// Bytes.
    pub size: u64,
    /// QEMU's address of the first byte (UPDATE).
    pub uaddr: u64,
    /// Access bits (read 1, write 2).
    pub perm: u8,
    /// [`IOTLB_MISS`], [`IOTLB_UPDATE`], [`IOTLB_INVALIDATE`].
    pub kind: u8,
}

impl IotlbMsg {
    /// Decodes the 32-byte payload.
    pub fn decode(p: &[u8]) -> Result<Self, MsgError> {
        need(p, 26)?;
        Ok(Self {
            iova: u64_at(p, 0),
            size: u64_at(p, 8),
            uaddr: u64_at(p, 16),
            perm: p[24],
            kind: p[25],
        })
    }

    /// Encodes the 32-byte payload.
    pub fn encode(&self) -> [u8; IOTLB_SIZE] {
        let mut b = [0u8; IOTLB_SIZE];
        b[0..8].copy_from_slice(&self.iova.to_le_bytes());
        b[8..16].copy_from_slice(&self.size.to_le_bytes());
        b[16..24].copy_from_slice(&self.uaddr.to_le_bytes());
        b[24] = self.perm;
        b[25] = self.kind;
        b
    }
}

/// Human name of a request, for logs.
pub fn name(request: u32) -> &'static str {
    match request {
        req::GET_FEATURES => "GET_FEATURES",
        req::SET_FEATURES => "SET_FEATURES",
        req::SET_OWNER => "SET_OWNER",
        req::RESET_OWNER => "RESET_OWNER",
        req::SET_MEM_TABLE => "SET_MEM_TABLE",
        req::SET_VRING_NUM => "SET_VRING_NUM",
        req::SET_VRING_ADDR => "SET_VRING_ADDR",
        req::SET_VRING_BASE => "SET_VRING_BASE",
        req::GET_VRING_BASE => "GET_VRING_BASE",
        req::SET_VRING_KICK => "SET_VRING_KICK",
        req::SET_VRING_CALL => "SET_VRING_CALL",
        req::SET_VRING_ERR => "SET_VRING_ERR",
        req::GET_PROTOCOL_FEATURES => "GET_PROTOCOL_FEATURES",
        req::SET_PROTOCOL_FEATURES => "SET_PROTOCOL_FEATURES",
        req::SET_VRING_ENABLE => "SET_VRING_ENABLE",
        req::SET_BACKEND_REQ_FD => "SET_BACKEND_REQ_FD",
        req::IOTLB_MSG => "IOTLB_MSG",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_features_reply_is_header_plus_u64() {
        let m = reply_u64(req::GET_FEATURES, OFFERED_FEATURES);
        let h = Header::decode(&m).unwrap();
        assert_eq!(
            (h.request, h.flags, h.size),
            (1, FLAG_VERSION | FLAG_REPLY, 8)
        );
        assert_eq!(decode_u64(&m[HEADER_SIZE..]).unwrap(), OFFERED_FEATURES);
        assert_ne!(OFFERED_FEATURES & F_IOMMU_PLATFORM, 0);
    }

    #[test]
    fn headers_from_outside_are_checked() {
        assert!(matches!(
            Header::decode(&[0; 5]),
            Err(MsgError::Short { .. })
        ));
        assert_eq!(Header::decode(&encode(1, 0, &[])[..]).unwrap().size, 0);
        let mut bad = encode(1, 0, &[]);
        bad[4] = 2; // version 2
        assert_eq!(Header::decode(&bad), Err(MsgError::Version(2)));
        let mut big = encode(1, 0, &[]);
        big[8..12].copy_from_slice(&100_000u32.to_le_bytes());
        assert_eq!(Header::decode(&big), Err(MsgError::TooBig(100_000)));
    }

    #[test]
    fn a_memory_table_decodes_region_by_region() {
        let mut p = vec![0u8; 8 + 32];
        p[0] = 1;
        p[8..16].copy_from_slice(&0x4000_0000u64.to_le_bytes());
        p[16..24].copy_from_slice(&(2u64 << 30).to_le_bytes());
        p[24..32].copy_from_slice(&0x7f12_0000_0000u64.to_le_bytes());
        let r = decode_mem_table(&p).unwrap();
        assert_eq!(
            r,
            vec![MemRegion {
                guest_phys: 0x4000_0000,
                size: 2 << 30,
                uaddr: 0x7f12_0000_0000,
                mmap_offset: 0
            }]
        );
        p[0] = 2;
        assert!(matches!(decode_mem_table(&p), Err(MsgError::Short { .. })));
        p[0] = 200;
        assert_eq!(
            decode_mem_table(&p),
            Err(MsgError::Field("region count", 200))
        );
    }

    #[test]
    fn iotlb_messages_round_trip() {
        let m = IotlbMsg {
            iova: 0x4000_1000,
            size: 4096,
            uaddr: 0x7f00_1000,
            perm: 3,
            kind: IOTLB_UPDATE,
        };
        assert_eq!(IotlbMsg::decode(&m.encode()).unwrap(), m);
        assert!(IotlbMsg::decode(&[0; 10]).is_err());
        let a = VringAddr::decode(&[0; 40]).unwrap();
        assert_eq!(a, VringAddr::default());
        assert_eq!(
            VringState::decode(&VringState { index: 1, num: 256 }.encode())
                .unwrap()
                .num,
            256
        );
    }
}
