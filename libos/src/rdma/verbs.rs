//! Verbs: what an app calls to move data between nodes.
//!
//! ```text
//!  let rdma = rdma::open()?;                      // this node's engine
//!  // node 1: let node 0 write 1 MiB of its region, and tell it where
//!  let exposure = unsafe { rdma.expose(region.range(), Access::REMOTE_WRITE)? };
//!  qp_to_0.send(&exposure.remote().to_bytes())?;
//!  // node 0: the descriptor arrived in a RECV
//!  let remote = RemoteRegion::from_bytes(&wc.data).ok_or(..)?;
//!  let qp = rdma.queue_pair(1)?;                  // to node 1
//!  let id = unsafe { qp.write(buf.range(), remote.at(0), Policy::FaultAware)? };
//!  let wc = rdma.wait(id)?;                       // or rdma.poll()
//!  assert_eq!(wc.status, Status::Success);
//! ```
//!
//! A peer reaches only what a node exposed: every WRITE and READ names the
//! target's remote key ([`RemoteAddr`]), and the target's engine checks key,
//! bounds and rights before touching anything (else the initiator's
//! completion says [`Status::RemoteProtectionError`]). Exposing pins
//! nothing: pages of an exposed range fault and resolve as anywhere.
//! Dropping the [`Exposure`] revokes the key.
//!
//! Work is identified by a [`WorkId`]; completions come back in the order
//! they finish. One completion queue per node is enough for a library OS
//! (every app thread shares the address space).

extern crate alloc;

use super::device::{Device, DeviceError};
use super::engine::{EngineCounters, RdmaEngine, State, STATE};
use crate::dma::{self as kdma, Policy, Transfer, TransferError, TransferId, TransferReport};
use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::vec;
use alloc::vec::Vec;
use core::ops::Range;
use core::time::Duration;
use dma::{Direction, EngineId};
use hw::rdma::request::device_address;
use hw::rdma::wire::{
    Completion, Opcode, Status, WorkRequest, CQE_HAS_IMM, EXPOSE_REMOTE_READ, EXPOSE_REMOTE_WRITE,
    MAX_SEND, WRITE_WITH_IMM,
};

/// How long the engine may stay silent before work is reported as lost.
pub const DEVICE_TIMEOUT: Duration = Duration::from_secs(20);

/// Why a verb could not be carried out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RdmaError {
    /// No RDMA engine on this node (not started with `--nodes`?).
    NotFound,
    /// The engine is there but could not be brought up.
    Device(DeviceError),
    /// The engine did not answer within [`DEVICE_TIMEOUT`]: its process
    /// has probably died.
    NotResponding,
    /// No such node.
    BadNode(u16),
    /// A SEND longer than the engine takes, or an empty buffer.
    BadLength(usize),
    /// The DMA scheduler refused the transfer.
    Submit(kdma::SubmitError),
    /// No such work in flight.
    UnknownWork(WorkId),
    /// The engine refused to expose the range (empty, no access, or too
    /// many exposures held).
    Expose(Status),
    /// The engine could not be granted the memory (see `libos::dma::grant`).
    Grant(kdma::GrantError),
    /// A remote address that is no virtual address (above 48 bits).
    BadAddress(usize),
    /// The engine refused to make, connect or end a queue pair for a peer
    /// outside the cluster (too many, or parameters it cannot use).
    QueuePair(Status),
}

bitflags::bitflags! {
    /// What peers may do with exposed memory.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Access: u8 {
        /// Peers may RDMA READ it.
        const REMOTE_READ = EXPOSE_REMOTE_READ;
        /// Peers may RDMA WRITE it.
        const REMOTE_WRITE = EXPOSE_REMOTE_WRITE;
    }
}

/// Where a WRITE or READ lands on the remote node: the target's remote key
/// and a virtual address inside what that key exposes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoteAddr {
    /// The key the target's [`Exposure`] carries.
    pub key: u64,
    /// The address on the target.
    pub va: usize,
}

/// What a peer needs to reach memory another node exposed: the key and the
/// exposed range. Apps pass it to peers as bytes ([`RemoteRegion::to_bytes`],
/// for example in a SEND).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoteRegion {
    /// The remote key.
    pub key: u64,
    /// First exposed address.
    pub start: usize,
    /// Exposed bytes.
    pub len: usize,
}

impl RemoteRegion {
    /// Bytes of [`RemoteRegion::to_bytes`].
    pub const BYTES: usize = 24;

    /// The address `offset` bytes into the region (the target checks the
    /// bounds; an address outside fails there with a protection error).
    pub fn at(&self, offset: usize) -> RemoteAddr {
        RemoteAddr {
            key: self.key,
            va: self.start.wrapping_add(offset),
        }
    }

    /// The descriptor as 24 little-endian bytes: key, start, length.
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut b = [0u8; Self::BYTES];
        b[0..8].copy_from_slice(&self.key.to_le_bytes());
        b[8..16].copy_from_slice(&(self.start as u64).to_le_bytes());
        b[16..24].copy_from_slice(&(self.len as u64).to_le_bytes());
        b
    }

    /// Reads a descriptor a peer sent; `None` unless exactly
    /// [`RemoteRegion::BYTES`] long.
    pub fn from_bytes(b: &[u8]) -> Option<Self> {
        if b.len() != Self::BYTES {
            return None;
        }
        let word = |at: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[at..at + 8]);
            u64::from_le_bytes(w)
        };
        Some(Self {
            key: word(0),
            start: usize::try_from(word(8)).ok()?,
            len: usize::try_from(word(16)).ok()?,
        })
    }
}

/// Memory of this node that peers may reach with its key, until this
/// handle is dropped (which revokes the key: later requests fail with a
/// protection error; one the engine is carrying out finishes first).
#[derive(Debug)]
pub struct Exposure {
    rdma: Rdma,
    remote: RemoteRegion,
    /// The engine's grant of the memory (dropped after the key is revoked).
    _grant: kdma::Grant,
}

impl Exposure {
    /// What to hand peers so that they can reach the memory.
    pub fn remote(&self) -> RemoteRegion {
        self.remote
    }
}

impl Drop for Exposure {
    fn drop(&mut self) {
        let wr = WorkRequest {
            opcode: Opcode::Revoke as u8,
            key: self.remote.key,
            ..Default::default()
        };
        let done = self
            .rdma
            .direct(Op::Revoke, wr, Vec::new(), None, None)
            .and_then(|id| self.rdma.wait(id));
        match done {
            Ok(wc) if wc.status == Status::Success => {}
            other => log::error!("rdma: revoking key {:#x}: {other:?}", self.remote.key),
        }
    }
}

/// Names one posted piece of work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WorkId(pub u64);

/// What a piece of work was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Local copy.
    Copy,
    /// RDMA WRITE (with or without an immediate value).
    Write,
    /// RDMA READ.
    Read,
    /// Two-sided send.
    Send,
    /// A receive buffer that was filled (by a SEND or a WRITE's immediate).
    Recv,
    /// Memory exposed to peers ([`Rdma::expose`]).
    Expose,
    /// An exposure withdrawn (dropping an [`Exposure`]).
    Revoke,
    /// A queue pair for a peer outside the cluster made, connected or
    /// ended ([`crate::rdma::PeerQp`]).
    QueuePair,
}

/// The end of one piece of work.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkCompletion {
    /// Which work.
    pub id: WorkId,
    /// What it was.
    pub op: Op,
    /// The peer node (RECV: the sender).
    pub node: u16,
    /// How it ended.
    pub status: Status,
    /// Bytes moved (RECV: received).
    pub len: u64,
    /// The immediate value that came with a RECV completion.
    pub imm: Option<u32>,
    /// Received bytes (RECV only).
    pub data: Vec<u8>,
    /// Engine-side counters (faults on each side, bytes sent again).
    pub engine: EngineCounters,
    /// The scheduler's report for COPY/WRITE/READ (policy, faults
    /// resolved on this node, setup and total time).
    pub report: Option<TransferReport>,
    /// Address that could not be made present, for access errors.
    pub fault_va: u64,
    /// EXPOSE: the new remote key.
    pub key: u64,
}

/// Work the verbs layer is waiting for.
enum Pending {
    /// A scheduler transfer; `imm` is sent once the data is placed.
    Transfer {
        id: WorkId,
        op: Op,
        node: u16,
        imm: Option<u32>,
    },
    /// A direct request; `buffer` keeps a SEND's bytes or a RECV's room
    /// alive until the engine is done with it.
    Direct {
        id: WorkId,
        op: Op,
        node: u16,
        buffer: Vec<u8>,
        /// The engine's grant of `buffer`'s pages, for as long as it works
        /// on it.
        grant: Option<kdma::Grant>,
        /// For the immediate of a WRITE: the transfer's outcome so far
        /// (boxed: most direct requests have none).
        report: Option<alloc::boxed::Box<(TransferReport, EngineCounters)>>,
    },
}

struct Verbs {
    engine: EngineId,
    /// The engine's SMMU stream.
    stream: u32,
    /// The engine stopped answering and was cut off from memory: every
    /// verb fails with `NotResponding` from then on.
    cut_off: bool,
    rank: u16,
    nodes: u16,
    addr: [u8; 4],
    mtu: u32,
    next: u64,
    transfers: BTreeMap<TransferId, Pending>,
    direct: BTreeMap<u64, Pending>,
    done: Vec<WorkCompletion>,
}

static VERBS: crate::sync::IrqSpinLock<Option<Verbs>> = crate::sync::IrqSpinLock::new(None);

/// This node's RDMA engine: rank, node count, and the verbs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rdma {
    rank: u16,
    nodes: u16,
    addr: [u8; 4],
    mtu: u32,
}

/// A connection to one remote node (the engine keeps no per-pair state, so
/// this is just the node and a handle).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueuePair {
    rdma: Rdma,
    node: u16,
}

fn find_engine() -> Option<hw::pci::Function> {
    crate::pci::functions().into_iter().find(|f| {
        crate::pci::is_virtio_net(f)
            && crate::pci::virtio_net_mac(f).is_some_and(|m| hw::rdma::is_engine_mac(&m))
    })
}

/// Opens this node's engine (once; later calls return the same handle),
/// asks it for the rank and node count, and registers it with the DMA
/// scheduler.
pub fn open() -> Result<Rdma, RdmaError> {
    if let Some(v) = VERBS.lock().as_ref() {
        return Ok(Rdma {
            rank: v.rank,
            nodes: v.nodes,
            addr: v.addr,
            mtu: v.mtu,
        });
    }
    let f = find_engine().ok_or(RdmaError::NotFound)?;
    if !crate::iommu::present() {
        return Err(RdmaError::Device(DeviceError::NoAccessPlatform));
    }
    let mut device = Device::open(&f).map_err(RdmaError::Device)?;
    let hello = WorkRequest {
        opcode: Opcode::Hello as u8,
        wr_id: 1,
        ..Default::default()
    };
    if !device.post(&hello) {
        return Err(RdmaError::NotResponding);
    }
    let start = crate::time::now();
    let answer = loop {
        let mut got = None;
        device.poll(|c| got = got.or(Some(c)));
        if let Some(c) = got {
            break c;
        }
        if start.elapsed() > DEVICE_TIMEOUT {
            return Err(RdmaError::NotResponding);
        }
        crate::time::sleep(Duration::from_micros(200));
    };
    let (rank, nodes) = (answer.node, answer.imm as u16);
    let addr = (answer.key as u32).to_be_bytes();
    let mtu = u32::try_from(answer.len).unwrap_or(0);
    *STATE.lock() = Some(State::new(device));
    let stream = f.bdf.requester_id() as u32;
    let engine = kdma::add_engine(Box::new(RdmaEngine { stream }), super::engine::WINDOW);
    kdma::register_intx(f.intid);
    *VERBS.lock() = Some(Verbs {
        engine,
        stream,
        cut_off: false,
        rank,
        nodes,
        addr,
        mtu,
        next: 1,
        transfers: BTreeMap::new(),
        direct: BTreeMap::new(),
        done: Vec::new(),
    });
    log::info!(
        "rdma: engine {:?}, node {rank} of {nodes}, RoCEv2 on {}.{}.{}.{}",
        f.bdf,
        addr[0],
        addr[1],
        addr[2],
        addr[3]
    );
    Ok(Rdma {
        rank,
        nodes,
        addr,
        mtu,
    })
}

/// The addresses a slice covers.
fn address_range(s: &[u8]) -> Range<usize> {
    let r = s.as_ptr_range();
    r.start as usize..r.end as usize
}

fn with_verbs<R>(f: impl FnOnce(&mut Verbs) -> R) -> R {
    f(VERBS
        .lock()
        .as_mut()
        .expect("rdma::open succeeded before any verb"))
}

fn status_of(result: &Result<TransferReport, TransferError>) -> (Status, u64) {
    match result {
        Ok(_) => (Status::Success, 0),
        Err(TransferError::Engine(dma::EngineError::Device(code))) => {
            (Status::from_u8(*code as u8), 0)
        }
        Err(TransferError::Unresolvable { va, .. }) => (Status::LocalAccessError, *va as u64),
        Err(TransferError::Pin(_)) => (Status::LocalAccessError, 0),
        Err(TransferError::RetriesExhausted { .. }) => (Status::RetriesExhausted, 0),
        Err(TransferError::Engine(dma::EngineError::Busy) | TransferError::Submit(_)) => {
            (Status::BadRequest, 0)
        }
        // Not reached today (the RDMA engine is not stopped by the DMA
        // watchdog), but a stopped device is a transfer that never ends.
        Err(TransferError::Engine(dma::EngineError::TimedOut)) => (Status::RetriesExhausted, 0),
    }
}

impl Rdma {
    /// This node's rank, from 0.
    pub fn rank(&self) -> u16 {
        self.rank
    }

    /// How many nodes the fabric has.
    pub fn nodes(&self) -> u16 {
        self.nodes
    }

    /// The path MTU of this node's engine (payload bytes per RoCE packet;
    /// 0 from an engine that does not say): what benchmarks print beside
    /// their figures.
    pub fn mtu(&self) -> u32 {
        self.mtu
    }

    /// The IPv4 address this node's engine sends RoCEv2 from: what a peer
    /// outside the cluster is told (as the GID `::ffff:a.b.c.d`).
    pub fn address(&self) -> [u8; 4] {
        self.addr
    }

    /// A queue pair to `node` (any node but this one).
    pub fn queue_pair(&self, node: u16) -> Result<QueuePair, RdmaError> {
        if node >= self.nodes || node == self.rank {
            return Err(RdmaError::BadNode(node));
        }
        Ok(QueuePair { rdma: *self, node })
    }

    /// Copies `src` to `dst` on this node with the engine.
    ///
    /// # Safety
    ///
    /// Until the work completion is taken ([`Rdma::wait`], [`Rdma::poll`]),
    /// or [`Rdma::wait`] returned `NotResponding` (the engine is then cut
    /// off from memory), `src` and `dst..dst + src.len()` must stay
    /// allocated, `src` must not be written and the destination not read or
    /// written by anything else (the contract of `libos::dma::submit`).
    /// [`Rdma::copy_between`] is the safe form.
    pub unsafe fn copy(
        &self,
        src: Range<usize>,
        dst: usize,
        policy: Policy,
    ) -> Result<WorkId, RdmaError> {
        let dst = RemoteAddr { key: 0, va: dst };
        // SAFETY: the caller keeps the contract for both ranges.
        unsafe { self.transfer(Op::Copy, None, Direction::ToDevice, src, dst, policy, None) }
    }

    /// Copies `src` into `dst` (the same length) with the engine, and waits:
    /// both are borrowed until the engine is done with them (or has been
    /// cut off from memory).
    pub fn copy_between(
        &self,
        src: &[u8],
        dst: &mut [u8],
        policy: Policy,
    ) -> Result<WorkCompletion, RdmaError> {
        if src.len() != dst.len() {
            return Err(RdmaError::BadLength(dst.len()));
        }
        let _grants = [
            self.lend(address_range(src), kdma::Rights::Read)?,
            self.lend(address_range(dst), kdma::Rights::ReadWrite)?,
        ];
        let dst = address_range(dst).start;
        // SAFETY: both slices are borrowed (`dst` exclusively) until this
        // returns, after the completion or the cut-off (`wait`).
        let id = unsafe { self.copy(address_range(src), dst, policy) }?;
        self.wait(id)
    }

    /// Lets this node's engine reach `memory` (whole pages of one region,
    /// not the heap) with `rights`, until the [`kdma::Grant`] is dropped:
    /// what the raw verbs ([`QueuePair::write`], [`QueuePair::read`],
    /// [`Rdma::copy`]) move locally must be granted, else the engine's
    /// access fails as an isolation fault. Pins and touches nothing; one
    /// grant serves every transfer on the memory while it lives.
    pub fn grant(
        &self,
        memory: Range<usize>,
        rights: kdma::Rights,
    ) -> Result<kdma::Grant, RdmaError> {
        let engine = with_verbs(|v| v.engine);
        kdma::grant(engine, memory, rights).map_err(RdmaError::Grant)
    }

    /// Grants the engine the pages of a borrowed buffer for one operation
    /// of the safe verbs.
    fn lend(&self, memory: Range<usize>, rights: kdma::Rights) -> Result<kdma::Grant, RdmaError> {
        let engine = with_verbs(|v| v.engine);
        // SAFETY: the safe verbs hold the borrow of `memory` until the
        // operation is over, and drop the grant then; the rest of its
        // pages is reachable meanwhile (an SMMU maps whole pages).
        unsafe { kdma::grant_memory(engine, memory, rights) }.map_err(RdmaError::Grant)
    }

    /// Lets peers reach `memory` with `access`, under a new unguessable
    /// key, until the returned handle is dropped. Nothing is pinned or
    /// touched: pages that are not present fault and are resolved when a
    /// peer reaches them, as for any device access.
    ///
    /// # Safety
    ///
    /// Until the [`Exposure`] is dropped, `memory` must stay allocated, and
    /// with [`Access::REMOTE_WRITE`] its bytes may change at any moment:
    /// no Rust reference may read or write them while a peer may be
    /// writing (the app's protocol, for example a WRITE with immediate,
    /// says when it is done). With [`Access::REMOTE_READ`] peers may read
    /// it at any moment.
    pub unsafe fn expose(
        &self,
        memory: Range<usize>,
        access: Access,
    ) -> Result<Exposure, RdmaError> {
        let rights = if access.contains(Access::REMOTE_WRITE) {
            kdma::Rights::ReadWrite
        } else {
            kdma::Rights::Read
        };
        let engine = with_verbs(|v| v.engine);
        // SAFETY: the caller keeps `memory` allocated and gives it to peers
        // until the exposure is dropped, which drops the grant with it.
        let grant = unsafe { kdma::grant_memory(engine, memory.clone(), rights) }
            .map_err(RdmaError::Grant)?;
        let wr = WorkRequest {
            opcode: Opcode::Expose as u8,
            flags: access.bits(),
            local_va: memory.start as u64,
            len: memory.len() as u64,
            ..Default::default()
        };
        let id = self.direct(Op::Expose, wr, Vec::new(), None, None)?;
        let wc = self.wait(id)?;
        if wc.status != Status::Success {
            return Err(RdmaError::Expose(wc.status));
        }
        Ok(Exposure {
            rdma: *self,
            remote: RemoteRegion {
                key: wc.key,
                start: memory.start,
                len: memory.len(),
            },
            _grant: grant,
        })
    }

    /// Posts a transfer on `local`.
    ///
    /// # Safety
    ///
    /// As for [`Rdma::copy`], for `local`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn transfer(
        &self,
        op: Op,
        node: Option<u16>,
        direction: Direction,
        local: Range<usize>,
        other: RemoteAddr,
        policy: Policy,
        imm: Option<u32>,
    ) -> Result<WorkId, RdmaError> {
        let (engine, cut_off) = with_verbs(|v| (v.engine, v.cut_off));
        if cut_off {
            return Err(RdmaError::NotResponding);
        }
        let device = device_address(node, other.va).ok_or(RdmaError::BadAddress(other.va))?;
        let small = local.len() <= super::engine::MAX_SEGMENT;
        let mut transfer = Transfer::contiguous(direction, local, device, policy);
        transfer.device_key = other.key;
        // A small transfer's completion may come before its waiter looks:
        // no interrupt for it while it is being posted, nor after it if it
        // is the engine's only one (its waiter looks at the ring itself).
        // Else a completion that came meanwhile is taken by a pass here.
        let quiet = super::engine::Quiet::new();
        // SAFETY: the caller keeps `local` as `libos::dma::submit` asks
        // until the completion, which is taken after the transfer's outcome.
        let submitted = unsafe { kdma::submit(engine, transfer) };
        let quiet = match submitted {
            Ok(_) if small => quiet.hold_if_lone(),
            _ => Some(quiet),
        };
        if quiet.is_some_and(|q| q.end()) {
            kdma::poke();
        }
        let tid = submitted.map_err(RdmaError::Submit)?;
        Ok(with_verbs(|v| {
            v.next += 1;
            let id = WorkId(v.next);
            v.transfers.insert(
                tid,
                Pending::Transfer {
                    id,
                    op,
                    node: node.unwrap_or(self.rank),
                    imm,
                },
            );
            id
        }))
    }

    /// Posts a direct request; `buffer` stays with the driver until the
    /// request completes.
    pub(super) fn direct(
        &self,
        op: Op,
        mut wr: WorkRequest,
        buffer: Vec<u8>,
        id: Option<WorkId>,
        report: Option<(TransferReport, EngineCounters)>,
    ) -> Result<WorkId, RdmaError> {
        let (engine, cut_off) = with_verbs(|v| (v.engine, v.cut_off));
        if cut_off {
            return Err(RdmaError::NotResponding);
        }
        let grant = if buffer.is_empty() {
            None
        } else {
            let rights = match op {
                Op::Recv => kdma::Rights::ReadWrite,
                _ => kdma::Rights::Read,
            };
            let memory = buffer.as_ptr() as usize..buffer.as_ptr() as usize + buffer.len();
            // SAFETY: `buffer` is this request's own (moved into the
            // pending entry below, kept until the completion); its heap
            // pages are reachable by the engine until then.
            Some(unsafe { kdma::grant_memory(engine, memory, rights) }.map_err(RdmaError::Grant)?)
        };
        let start = crate::time::now();
        let tag = loop {
            let posted = STATE.lock().as_mut().and_then(|s| {
                let tag = s.direct_tag();
                wr.wr_id = tag;
                s.post(&wr).then_some(tag)
            });
            if let Some(tag) = posted {
                break tag;
            }
            if start.elapsed() > DEVICE_TIMEOUT {
                return Err(RdmaError::NotResponding);
            }
            kdma::poke();
            crate::time::wait_for_interrupt_or(Duration::from_millis(1));
        };
        Ok(with_verbs(|v| {
            let id = id.unwrap_or_else(|| {
                v.next += 1;
                WorkId(v.next)
            });
            v.direct.insert(
                tag,
                Pending::Direct {
                    id,
                    op,
                    node: wr.node,
                    buffer,
                    grant,
                    report: report.map(alloc::boxed::Box::new),
                },
            );
            id
        }))
    }

    /// Posts a receive buffer of `capacity` bytes for one SEND (or one
    /// WRITE's immediate value) from any node.
    pub fn post_recv(&self, capacity: usize) -> Result<WorkId, RdmaError> {
        let buffer = vec![0u8; capacity.max(1)];
        let wr = WorkRequest {
            opcode: Opcode::Recv as u8,
            local_va: buffer.as_ptr() as u64,
            len: capacity as u64,
            ..Default::default()
        };
        self.direct(Op::Recv, wr, buffer, None, None)
    }

    /// Collects what has finished; returns one completion if any.
    pub fn poll(&self) -> Option<WorkCompletion> {
        self.progress();
        with_verbs(|v| (!v.done.is_empty()).then(|| v.done.remove(0)))
    }

    /// Waits for work `id` (other completions stay queued for `poll`).
    ///
    /// `NotResponding` if the engine stays silent for [`DEVICE_TIMEOUT`]:
    /// it has then been cut off from memory in the SMMU
    /// ([`crate::iommu::cut_off`]) before this returns, so whatever memory
    /// its work held may be reused, and every later verb fails.
    pub fn wait(&self, id: WorkId) -> Result<WorkCompletion, RdmaError> {
        match self.wait_for(id, DEVICE_TIMEOUT) {
            Err(RdmaError::NotResponding) => {
                self.cut_off();
                Err(RdmaError::NotResponding)
            }
            other => other,
        }
    }

    /// Stops an engine that stopped answering from ever touching memory
    /// again (and from being used).
    fn cut_off(&self) {
        let stream = with_verbs(|v| {
            let first = !v.cut_off;
            v.cut_off = true;
            first.then_some(v.stream)
        });
        if let Some(stream) = stream {
            match crate::iommu::cut_off(stream) {
                Ok(()) => log::error!(
                    "rdma: the engine stopped answering; it is cut off from memory (stream {stream:#x})"
                ),
                Err(e) => log::error!("rdma: cutting off the silent engine failed: {e:?}"),
            }
        }
    }

    /// [`wait`](Self::wait) with an explicit bound, and nothing more: on
    /// `NotResponding` the work may still be running, and the memory it
    /// was given stays the engine's.
    pub fn wait_for(&self, id: WorkId, limit: Duration) -> Result<WorkCompletion, RdmaError> {
        let start = crate::time::now();
        // A small transfer is back sooner than an interrupt would wake this
        // core: the first looks, a spin on the ring and the looks after it
        // go without completion interrupts (the engine checks for them
        // after it returned a completion: turned on as soon as the spin
        // saw it, they would often still be asked for).
        let mut quiet = Some(super::engine::Quiet::new());
        let mut spun = None;
        loop {
            // Each round looks first at what a pass elsewhere (an
            // interrupt, the poster's own, another core) finished already,
            // then runs one.
            for pass in [false, true] {
                if pass {
                    kdma::poke();
                }
                self.gather();
                let found = with_verbs(|v| {
                    let at = v.done.iter().position(|c| c.id == id);
                    match at {
                        Some(i) => Some(Ok(v.done.remove(i))),
                        None if !v.knows(id) => Some(Err(RdmaError::UnknownWork(id))),
                        None => None,
                    }
                });
                if let Some(r) = found {
                    return r;
                }
            }
            if start.elapsed() > limit {
                return Err(RdmaError::NotResponding);
            }
            if let Some(q) = quiet.take() {
                q.spin();
                spun = Some(q);
                continue;
            }
            if let Some(q) = spun.take() {
                // Interrupts on, then one more look before sleeping: a
                // completion that came while they were off is found there.
                drop(q);
                continue;
            }
            crate::time::wait_for_interrupt_or(Duration::from_millis(1));
        }
    }

    /// Engine counters since boot (every transfer and message).
    pub fn totals(&self) -> EngineCounters {
        STATE.lock().as_ref().map(|s| s.totals).unwrap_or_default()
    }

    /// Faults the kernel resolved for the engine outside any local
    /// transfer (incoming WRITEs and READs, COPY destinations).
    pub fn pages_ready(&self) -> u64 {
        STATE
            .lock()
            .as_ref()
            .map(|s| s.pages_ready)
            .unwrap_or_default()
    }

    /// Runs the DMA service, then moves finished transfers and direct
    /// completions to the done list.
    fn progress(&self) {
        kdma::poke();
        self.gather();
    }

    /// Moves the transfers the service finished and the direct completions
    /// it collected to the done list.
    fn gather(&self) {
        let tids: Vec<TransferId> = with_verbs(|v| v.transfers.keys().copied().collect());
        for tid in tids {
            let Some(result) = kdma::take_finished(tid) else {
                continue;
            };
            let counters = STATE
                .lock()
                .as_mut()
                .and_then(|s| s.counters.remove(&tid))
                .unwrap_or_default();
            let Some(Pending::Transfer { id, op, node, imm }) =
                with_verbs(|v| v.transfers.remove(&tid))
            else {
                continue;
            };
            let (status, mut fault_va) = status_of(&result);
            if fault_va == 0 {
                fault_va = counters.fault_va;
            }
            let report = result.ok();
            if let (Some(imm), Status::Success, Some(r)) = (imm, status, report) {
                // The data is placed (every segment was acknowledged by the
                // target): now deliver the immediate value.
                let wr = WorkRequest {
                    opcode: Opcode::Write as u8,
                    flags: WRITE_WITH_IMM,
                    node,
                    imm,
                    ..Default::default()
                };
                if self
                    .direct(Op::Write, wr, Vec::new(), Some(id), Some((r, counters)))
                    .is_ok()
                {
                    continue;
                }
            }
            let len = report.as_ref().map_or(0, |r| r.stats.bytes_moved);
            with_verbs(|v| {
                v.done.push(WorkCompletion {
                    id,
                    op,
                    node,
                    status,
                    len,
                    imm: None,
                    data: Vec::new(),
                    engine: counters,
                    report,
                    fault_va,
                    key: 0,
                })
            });
        }
        let cqes: Vec<Completion> = STATE
            .lock()
            .as_mut()
            .map(|s| s.direct.drain(..).collect())
            .unwrap_or_default();
        for c in cqes {
            with_verbs(|v| v.finish_direct(c));
        }
    }
}

impl Verbs {
    fn knows(&self, id: WorkId) -> bool {
        let matches = |p: &Pending| match p {
            Pending::Transfer { id: i, .. } | Pending::Direct { id: i, .. } => *i == id,
        };
        self.transfers.values().any(matches) || self.direct.values().any(matches)
    }

    fn finish_direct(&mut self, c: Completion) {
        let Some(Pending::Direct {
            id,
            op,
            node,
            mut buffer,
            grant,
            report,
        }) = self.direct.remove(&c.wr_id)
        else {
            log::warn!("rdma: completion for unknown work {:#x}", c.wr_id);
            return;
        };
        // The engine is done with the buffer: it reaches it no more.
        drop(grant);
        let mut engine = EngineCounters::default();
        engine.add(&c);
        let (report, len) = match report {
            Some(b) => {
                let (r, before) = *b;
                engine.local_faults += before.local_faults;
                engine.remote_faults += before.remote_faults;
                engine.retransmitted_bytes += before.retransmitted_bytes;
                engine.remote_wait_us += before.remote_wait_us;
                let len = r.stats.bytes_moved;
                (Some(r), len)
            }
            None => (None, c.len),
        };
        let received = op == Op::Recv;
        if received {
            buffer.truncate((c.len as usize).min(buffer.len()));
        } else {
            buffer.clear();
        }
        self.done.push(WorkCompletion {
            id,
            op,
            // A RECV's sender and a new queue pair's handle come from the
            // engine.
            node: if received || op == Op::QueuePair {
                c.node
            } else {
                node
            },
            status: c.status(),
            len,
            imm: (c.flags & CQE_HAS_IMM != 0).then_some(c.imm),
            data: buffer,
            engine,
            report,
            fault_va: c.fault_va,
            key: c.key,
        });
    }
}

impl QueuePair {
    /// The queue pair the engine calls `handle` (a peer outside the
    /// cluster, connected by `peer.rs`).
    pub(super) fn with_handle(rdma: Rdma, handle: u16) -> Self {
        Self { rdma, node: handle }
    }

    /// The engine this queue pair belongs to.
    pub(super) fn rdma(&self) -> Rdma {
        self.rdma
    }

    /// The remote node.
    pub fn node(&self) -> u16 {
        self.node
    }

    /// RDMA WRITE of `local` to `remote` on the remote node (inside memory
    /// it exposed with [`Access::REMOTE_WRITE`]).
    ///
    /// # Safety
    ///
    /// Until the work completion is taken, or [`Rdma::wait`] returned
    /// `NotResponding`, `local` must stay allocated and not be written by
    /// anything else. [`QueuePair::write_from`] is the safe form.
    pub unsafe fn write(
        &self,
        local: Range<usize>,
        remote: RemoteAddr,
        policy: Policy,
    ) -> Result<WorkId, RdmaError> {
        // SAFETY: the caller's contract.
        unsafe { self.post_write(local, remote, None, policy) }
    }

    /// # Safety
    ///
    /// As for [`QueuePair::write`].
    unsafe fn post_write(
        &self,
        local: Range<usize>,
        remote: RemoteAddr,
        imm: Option<u32>,
        policy: Policy,
    ) -> Result<WorkId, RdmaError> {
        let node = Some(self.node);
        let dir = Direction::ToDevice;
        // SAFETY: the caller's contract, for a WRITE's local side.
        unsafe {
            self.rdma
                .transfer(Op::Write, node, dir, local, remote, policy, imm)
        }
    }

    /// RDMA WRITE followed, once the data is placed, by `imm` delivered to a
    /// RECV posted on the remote node (so it learns the data is there).
    ///
    /// # Safety
    ///
    /// As for [`QueuePair::write`].
    pub unsafe fn write_with_imm(
        &self,
        local: Range<usize>,
        remote: RemoteAddr,
        imm: u32,
        policy: Policy,
    ) -> Result<WorkId, RdmaError> {
        // SAFETY: the caller's contract.
        unsafe { self.post_write(local, remote, Some(imm), policy) }
    }

    /// RDMA READ of the remote node's `remote` (inside memory it exposed
    /// with [`Access::REMOTE_READ`]) into `local`.
    ///
    /// # Safety
    ///
    /// Until the work completion is taken, or [`Rdma::wait`] returned
    /// `NotResponding`, `local` must stay allocated and not be read or
    /// written by anything else (the engine writes it).
    /// [`QueuePair::read_into`] is the safe form.
    pub unsafe fn read(
        &self,
        local: Range<usize>,
        remote: RemoteAddr,
        policy: Policy,
    ) -> Result<WorkId, RdmaError> {
        let node = Some(self.node);
        // SAFETY: the caller's contract, for a READ's local side.
        unsafe {
            self.rdma.transfer(
                Op::Read,
                node,
                Direction::FromDevice,
                local,
                remote,
                policy,
                None,
            )
        }
    }

    /// RDMA WRITE of `local` to `remote`, and the wait for its end: `local`
    /// is borrowed, so nothing changes it, until the engine is done with it
    /// (or, if the engine stops answering, has been cut off from memory).
    pub fn write_from(
        &self,
        local: &[u8],
        remote: RemoteAddr,
        policy: Policy,
    ) -> Result<WorkCompletion, RdmaError> {
        let _grant = self.rdma.lend(address_range(local), kdma::Rights::Read)?;
        // SAFETY: `local` is borrowed until this returns, which is after
        // the completion was taken or the engine was cut off (`wait`).
        let id = unsafe { self.write(address_range(local), remote, policy) }?;
        self.rdma.wait(id)
    }

    /// RDMA READ of `remote` into `local`, and the wait for its end: `local`
    /// is borrowed mutably, so nothing reads or writes it, until the engine
    /// is done with it (or has been cut off from memory).
    pub fn read_into(
        &self,
        local: &mut [u8],
        remote: RemoteAddr,
        policy: Policy,
    ) -> Result<WorkCompletion, RdmaError> {
        let _grant = self
            .rdma
            .lend(address_range(local), kdma::Rights::ReadWrite)?;
        // SAFETY: as in `write_from`, with the exclusive borrow of `local`.
        let id = unsafe { self.read(address_range(local), remote, policy) }?;
        self.rdma.wait(id)
    }

    /// Sends `data` (at most 4 KiB) to a RECV posted on the remote node.
    pub fn send(&self, data: &[u8]) -> Result<WorkId, RdmaError> {
        if data.is_empty() || data.len() as u64 > MAX_SEND {
            return Err(RdmaError::BadLength(data.len()));
        }
        let buffer = data.to_vec();
        let wr = WorkRequest {
            opcode: Opcode::Send as u8,
            node: self.node,
            local_va: buffer.as_ptr() as u64,
            len: buffer.len() as u64,
            ..Default::default()
        };
        self.rdma.direct(Op::Send, wr, buffer, None, None)
    }
}
