//! The RDMA engine's interface as the guest sees it: work requests the
//! driver posts and completions the engine returns.
//!
//! The engine presents itself as a virtio-net PCI device (vhost-user in stock
//! QEMU); its two queues carry this protocol instead of Ethernet frames:
//!
//! ```text
//!  driver ── TX queue (1): [virtio_net_hdr][WorkRequest] ──▶ engine
//!  driver ◀─ RX queue (0): [virtio_net_hdr][Completion]  ─── engine
//! ```
//!
//! Every buffer starts with the 12-byte virtio-net header (all zero, ignored
//! on both sides). Addresses are the application's virtual addresses: with
//! `VIRTIO_F_ACCESS_PLATFORM` every access of the engine is translated by the
//! node's SMMU, which maps what the engine was granted at the same virtual
//! addresses as the CPU, so a VA is the IOVA.
//!
//! Encoding is fixed little-endian at fixed offsets, so the engine (a host
//! process) and the driver (the guest) share this module and cannot disagree.

/// Bytes of the virtio-net header that precedes each message in a buffer.
pub const NET_HDR_SIZE: usize = 12;
/// Encoded size of a [`WorkRequest`].
pub const WR_SIZE: usize = 64;
/// Encoded size of a [`Completion`].
pub const CQE_SIZE: usize = 64;
/// Index of the queue that carries completions (virtio-net receive queue).
pub const COMPLETION_QUEUE: u16 = 0;
/// Index of the queue that carries work requests (virtio-net transmit queue).
pub const REQUEST_QUEUE: u16 = 1;
/// Largest SEND payload, in bytes (one message; 64 packets at the default
/// path MTU): perftest's `ib_send_bw` sends 64 KiB by default.
pub const MAX_SEND: u64 = 64 * 1024;

/// What a work request asks the engine to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Opcode {
    /// Copy `len` bytes from `local_va` to `remote_va`, both on this node.
    Copy = 1,
    /// RDMA WRITE: `local_va` on this node to `remote_va` on node `node`.
    Write = 2,
    /// RDMA READ: `remote_va` on node `node` to `local_va` on this node.
    Read = 3,
    /// Two-sided send of `len` (<= [`MAX_SEND`]) bytes at `local_va` to
    /// node `node`; it lands in the oldest RECV posted there.
    Send = 4,
    /// Posts a receive buffer (`local_va`, `len`) for SENDs and for WRITEs
    /// with an immediate value from any node.
    Recv = 5,
    /// Control: the stalled work request `wr_id` may go on (`flags` bit 0
    /// clear) or must fail (bit 0 set, [`RESUME_ABORT`]). Produces no
    /// completion of its own.
    Resume = 16,
    /// Control: the libOS has dealt with a fault of this engine at
    /// `local_va` (a page of this node, written by an incoming WRITE, read by
    /// an incoming READ, or the destination of a COPY). `flags` bit 0 set
    /// ([`PAGE_READY_FAILED`]) means the page cannot be made present: the
    /// access it stalled fails. Produces no completion.
    PageReady = 17,
    /// Control: asks for this node's rank and the node count; completes with
    /// them in [`Completion::node`] and [`Completion::imm`], and the IPv4
    /// address its engine uses in the low 32 bits of [`Completion::key`].
    Hello = 18,
    /// Control: let other nodes reach `len` bytes at `local_va` with the
    /// rights in `flags` ([`EXPOSE_REMOTE_READ`], [`EXPOSE_REMOTE_WRITE`]).
    /// Completes with the new remote key in [`Completion::key`]; nothing
    /// is pinned or touched (faults inside the range resolve as anywhere).
    Expose = 20,
    /// Control: withdraw the exposure whose key is [`WorkRequest::key`].
    /// Completes once no later remote request can pass with it
    /// (`BadRequest` for a key that names no exposure).
    Revoke = 21,
    /// Control: makes a queue pair for a peer that is not a node of the
    /// cluster (a Linux host, for example), to be connected by
    /// [`Opcode::QpConnect`] once the peer's numbers are known. Completes
    /// with its handle in [`Completion::node`] (used as
    /// [`WorkRequest::node`] from then on), its queue pair number in
    /// [`Completion::key`] and the first PSN it sends in
    /// [`Completion::imm`]: what the peer must be told out of band.
    QpCreate = 22,
    /// Control: connects queue pair [`WorkRequest::node`] (from
    /// [`Opcode::QpCreate`]) to the peer at IPv4 address
    /// [`WorkRequest::remote_va`] (the address's 32 bits), whose queue pair
    /// number is [`WorkRequest::key`] and whose first PSN is
    /// [`WorkRequest::imm`], with path MTU [`WorkRequest::len`] (256 to
    /// 4096; 0 for the engine's). Completes when packets may flow.
    QpConnect = 23,
    /// Control: ends queue pair [`WorkRequest::node`]: its requests not yet
    /// done complete with `PeerUnreachable`, and packets for it are
    /// dropped from now on. Completes at once.
    QpDestroy = 24,
}

impl Opcode {
    /// Decodes an opcode byte; `None` for anything unknown.
    pub fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            1 => Self::Copy,
            2 => Self::Write,
            3 => Self::Read,
            4 => Self::Send,
            5 => Self::Recv,
            16 => Self::Resume,
            17 => Self::PageReady,
            18 => Self::Hello,
            20 => Self::Expose,
            21 => Self::Revoke,
            22 => Self::QpCreate,
            23 => Self::QpConnect,
            24 => Self::QpDestroy,
            _ => return None,
        })
    }

    /// Whether this opcode is a control message that produces no completion.
    pub fn is_control(self) -> bool {
        matches!(self, Self::Resume | Self::PageReady)
    }
}

/// [`WorkRequest::flags`] of a WRITE: deliver `imm` to the target as a RECV
/// completion (consuming one posted RECV there) after the data is placed.
pub const WRITE_WITH_IMM: u8 = 1 << 0;
/// [`WorkRequest::flags`] of a RESUME: fail the stalled request instead.
pub const RESUME_ABORT: u8 = 1 << 0;
/// [`WorkRequest::flags`] of a PAGE_READY: the page could not be resolved.
pub const PAGE_READY_FAILED: u8 = 1 << 0;
/// [`WorkRequest::flags`] of an EXPOSE: peers may READ the range.
pub const EXPOSE_REMOTE_READ: u8 = 1 << 0;
/// [`WorkRequest::flags`] of an EXPOSE: peers may WRITE the range.
pub const EXPOSE_REMOTE_WRITE: u8 = 1 << 1;
/// [`Completion::flags`]: `imm` carries a WRITE's immediate value.
pub const CQE_HAS_IMM: u32 = 1 << 0;

/// One request from the driver. Fields an opcode does not use are zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkRequest {
    /// [`Opcode`] as a byte (kept raw so a bad value can be reported).
    pub opcode: u8,
    /// Opcode-specific flags ([`WRITE_WITH_IMM`], [`RESUME_ABORT`], ...).
    pub flags: u8,
    /// Remote node rank for WRITE, READ and SEND.
    pub node: u16,
    /// Immediate value of a WRITE with [`WRITE_WITH_IMM`].
    pub imm: u32,
    /// The driver's tag, returned in the completion.
    pub wr_id: u64,
    /// Address on this node (source of COPY/WRITE/SEND, destination of
    /// READ/RECV, the page of a PAGE_READY).
    pub local_va: u64,
    /// Address on the remote node (destination of COPY on this node).
    pub remote_va: u64,
    /// Length in bytes.
    pub len: u64,
    /// The target's remote key for WRITE and READ (from its EXPOSE; RoCE's
    /// R_Key, 32 bits); the key to withdraw for REVOKE.
    pub key: u64,
}

/// How a work request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Status {
    /// Done; the fault counters say whether it took faults on the way.
    Success = 0,
    /// The remote node could not make an address present (outside every
    /// region, or a write to read-only memory). Nothing was placed past it.
    RemoteAccessError = 1,
    /// A local address could not be made present (the libOS aborted it).
    LocalAccessError = 2,
    /// The retry bound was reached (faults or losses that never cleared).
    RetriesExhausted = 3,
    /// The remote node's engine stopped answering.
    PeerUnreachable = 4,
    /// The request itself was invalid (unknown opcode or node, too long).
    BadRequest = 5,
    /// The remote node had no RECV posted for a SEND, within the retry bound.
    ReceiverNotReady = 6,
    /// The remote node refused the access: its key names no exposure
    /// (wrong, or revoked), the range is outside the exposed one, or the
    /// exposure does not grant that access. Nothing was read or written
    /// there by the refused request (like `IBV_WC_REM_ACCESS_ERR`).
    RemoteProtectionError = 7,
}

impl Status {
    /// Decodes a status byte; unknown values read as `BadRequest`.
    pub fn from_u8(v: u8) -> Self {
        match v {
            0 => Self::Success,
            1 => Self::RemoteAccessError,
            2 => Self::LocalAccessError,
            3 => Self::RetriesExhausted,
            4 => Self::PeerUnreachable,
            6 => Self::ReceiverNotReady,
            7 => Self::RemoteProtectionError,
            _ => Self::BadRequest,
        }
    }
}

/// The engine's answer to one work request, or an incoming message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Completion {
    /// Opcode of the request this completes (RECV for incoming messages).
    pub opcode: u8,
    /// [`Status`] as a byte.
    pub status: u8,
    /// Peer node (HELLO: this node's rank).
    pub node: u16,
    /// Immediate value (see [`CQE_HAS_IMM`]); HELLO: the node count.
    pub imm: u32,
    /// The request's `wr_id`.
    pub wr_id: u64,
    /// Bytes moved (RECV: bytes received; HELLO: the path MTU).
    pub len: u64,
    /// Faults taken on this node's side.
    pub local_faults: u32,
    /// Faults taken on the remote node's side.
    pub remote_faults: u32,
    /// Bytes sent again over the fabric (after losses or remote faults).
    pub retransmitted_bytes: u64,
    /// For an access error: the address that could not be made present.
    pub fault_va: u64,
    /// [`CQE_HAS_IMM`].
    pub flags: u32,
    /// Microseconds the request's queue pair waited on the remote node
    /// (RNR NAKs: its page faults), from each RNR NAK to the send again.
    pub remote_wait_us: u32,
    /// EXPOSE: the remote key peers name to reach the exposed range.
    pub key: u64,
}

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}
fn get16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn get32(b: &[u8], at: usize) -> u32 {
    let mut a = [0; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}
fn get64(b: &[u8], at: usize) -> u64 {
    let mut a = [0; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

impl WorkRequest {
    /// Encodes into `WR_SIZE` bytes (reserved bytes zero).
    pub fn encode(&self) -> [u8; WR_SIZE] {
        let mut b = [0u8; WR_SIZE];
        b[0] = self.opcode;
        b[1] = self.flags;
        put16(&mut b, 2, self.node);
        put32(&mut b, 4, self.imm);
        put64(&mut b, 8, self.wr_id);
        put64(&mut b, 16, self.local_va);
        put64(&mut b, 24, self.remote_va);
        put64(&mut b, 32, self.len);
        put64(&mut b, 40, self.key);
        b
    }

    /// Decodes the first `WR_SIZE` bytes; `None` if `b` is shorter.
    pub fn decode(b: &[u8]) -> Option<Self> {
        if b.len() < WR_SIZE {
            return None;
        }
        Some(Self {
            opcode: b[0],
            flags: b[1],
            node: get16(b, 2),
            imm: get32(b, 4),
            wr_id: get64(b, 8),
            local_va: get64(b, 16),
            remote_va: get64(b, 24),
            len: get64(b, 32),
            key: get64(b, 40),
        })
    }
}

impl Completion {
    /// Encodes into `CQE_SIZE` bytes (reserved bytes zero).
    pub fn encode(&self) -> [u8; CQE_SIZE] {
        let mut b = [0u8; CQE_SIZE];
        b[0] = self.opcode;
        b[1] = self.status;
        put16(&mut b, 2, self.node);
        put32(&mut b, 4, self.imm);
        put64(&mut b, 8, self.wr_id);
        put64(&mut b, 16, self.len);
        put32(&mut b, 24, self.local_faults);
        put32(&mut b, 28, self.remote_faults);
        put64(&mut b, 32, self.retransmitted_bytes);
        put64(&mut b, 40, self.fault_va);
        put32(&mut b, 48, self.flags);
        put32(&mut b, 52, self.remote_wait_us);
        put64(&mut b, 56, self.key);
        b
    }

    /// Decodes the first `CQE_SIZE` bytes; `None` if `b` is shorter.
    pub fn decode(b: &[u8]) -> Option<Self> {
        if b.len() < CQE_SIZE {
            return None;
        }
        Some(Self {
            opcode: b[0],
            status: b[1],
            node: get16(b, 2),
            imm: get32(b, 4),
            wr_id: get64(b, 8),
            len: get64(b, 16),
            local_faults: get32(b, 24),
            remote_faults: get32(b, 28),
            retransmitted_bytes: get64(b, 32),
            fault_va: get64(b, 40),
            flags: get32(b, 48),
            remote_wait_us: get32(b, 52),
            key: get64(b, 56),
        })
    }

    /// The decoded status.
    pub fn status(&self) -> Status {
        Status::from_u8(self.status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_request_round_trips() {
        let wr = WorkRequest {
            opcode: Opcode::Write as u8,
            flags: WRITE_WITH_IMM,
            node: 3,
            imm: 0xdead_beef,
            wr_id: 42,
            local_va: 0x4000_1000,
            remote_va: 0x8000_0000,
            len: 1 << 20,
            key: 0x1234_5678_9abc_def0,
        };
        assert_eq!(WorkRequest::decode(&wr.encode()), Some(wr));
        assert_eq!(WorkRequest::decode(&[0; WR_SIZE - 1]), None);
    }

    #[test]
    fn completion_round_trips() {
        let c = Completion {
            opcode: Opcode::Read as u8,
            status: Status::RemoteAccessError as u8,
            node: 1,
            imm: 7,
            wr_id: u64::MAX,
            len: 4096,
            local_faults: 2,
            remote_faults: 3,
            retransmitted_bytes: 8192,
            fault_va: 0xdead_0000,
            flags: CQE_HAS_IMM,
            remote_wait_us: 1_280,
            key: u64::MAX - 1,
        };
        assert_eq!(Completion::decode(&c.encode()), Some(c));
        assert_eq!(c.status(), Status::RemoteAccessError);
    }

    #[test]
    fn unknown_bytes_decode_to_clear_values() {
        assert_eq!(Opcode::from_u8(0), None);
        assert_eq!(Opcode::from_u8(Opcode::Hello as u8), Some(Opcode::Hello));
        assert_eq!(Status::from_u8(200), Status::BadRequest);
        assert_eq!(Status::from_u8(7), Status::RemoteProtectionError);
        assert_eq!(Opcode::from_u8(20), Some(Opcode::Expose));
        assert_eq!(Opcode::from_u8(21), Some(Opcode::Revoke));
        assert!(Opcode::Resume.is_control() && !Opcode::Write.is_control());
    }
}
