//! What an application asks for (a [`Transfer`] with a [`Policy`]) and what
//! it gets back (a [`TransferReport`] or a [`TransferError`]).

use alloc::vec;
use alloc::vec::Vec;
use core::fmt;
use core::ops::Range;

use crate::engine::{Direction, EngineError};
use crate::memory::MemError;
use crate::stats::Stats;

/// Names a submitted transfer; ids are never reused by one scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TransferId(pub u64);

/// How the scheduler deals with non-resident pages of a transfer: the four
/// strategies the benchmarks compare (see `docs/ARCHITECTURE.md`, "DMA policies").
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Policy {
    /// Pin the whole buffer and make every page resident before the first
    /// segment starts; unpin when the transfer ends. Faults cannot happen;
    /// the cost is setup time and locked memory.
    Pin,
    /// Make every page resident before the first segment starts, without
    /// pinning. Pages may be evicted again, so faults are still handled.
    Prefault,
    /// Do nothing up front; resolve each page when the device faults on it,
    /// then resume or retransmit.
    FaultAware,
    /// Like `FaultAware`, and on a fault also make the next pages of the
    /// transfer resident, with an adaptive window; on an aborting engine, a
    /// cold buffer (first segment not all resident) has each segment's pages
    /// made resident just before it starts, pipelined with the DMA of the
    /// previous ones (see [`crate::prefetch`]).
    FaultAwarePrefetch,
}

impl Policy {
    /// Every policy, in the order reports print them.
    pub const ALL: [Policy; 4] = [
        Policy::Pin,
        Policy::Prefault,
        Policy::FaultAware,
        Policy::FaultAwarePrefetch,
    ];

    /// Position in [`Policy::ALL`], for per-policy tables.
    pub fn index(self) -> usize {
        self as usize
    }

    /// Short lower-case name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Pin => "pin",
            Policy::Prefault => "prefault",
            Policy::FaultAware => "fault-aware",
            Policy::FaultAwarePrefetch => "fault-aware+prefetch",
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One DMA transfer on application virtual addresses, as submitted.
///
/// The memory side is a gather/scatter list: `pieces` of virtual memory
/// taken one after the other, as if they were one buffer (a plain transfer
/// is one piece). The device side is one contiguous range from
/// `device_addr`. Engines that take several pieces per segment (NVMe SGLs)
/// move them in one command; for the others the scheduler cuts segments at
/// piece boundaries (see [`EngineCaps::max_pieces`](crate::EngineCaps)).
///
/// ```
/// use dma::{Direction, Policy, Transfer};
/// // A 12-byte header, a value somewhere else, and a 2-byte trailer,
/// // written to the device as 12 + 4096 + 2 consecutive bytes.
/// let t = Transfer {
///     direction: Direction::ToDevice,
///     pieces: vec![0x1000..0x100c, 0x5_0003..0x5_1003, 0x100c..0x100e],
///     device_addr: 0,
///     device_key: 0,
///     policy: Policy::FaultAwarePrefetch,
/// };
/// assert_eq!(t.len(), 4110);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transfer {
    /// Which way the bytes go.
    pub direction: Direction,
    /// The memory, in order: any byte alignment and length (none empty, at
    /// least one). Pieces may share pages, or even bytes (a `ToDevice`
    /// transfer may send the same bytes twice).
    pub pieces: Vec<Range<usize>>,
    /// Device-side address matching the first byte of the first piece
    /// (RDMA: remote address).
    /// Segments are assumed idempotent: copying the same bytes to or from the
    /// same device address twice is harmless, which is what makes
    /// retransmission correct.
    pub device_addr: u64,
    /// A word the engine needs with every segment besides the address,
    /// passed through unchanged: for RDMA the remote key that grants
    /// access at `device_addr` on the other node; 0 for engines that take
    /// none.
    pub device_key: u64,
    /// How non-resident pages are dealt with.
    pub policy: Policy,
}

impl Transfer {
    /// A transfer of one contiguous buffer (no device key).
    pub fn contiguous(
        direction: Direction,
        va: Range<usize>,
        device_addr: u64,
        policy: Policy,
    ) -> Self {
        Transfer {
            direction,
            pieces: vec![va],
            device_addr,
            device_key: 0,
            policy,
        }
    }

    /// Bytes it moves: the pieces' lengths summed.
    pub fn len(&self) -> usize {
        self.pieces.iter().map(|p| p.len()).sum()
    }

    /// Whether it moves nothing (no piece, or only empty ones).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Why `submit` refused a transfer (nothing was queued).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SubmitError {
    /// No engine with that id was registered.
    UnknownEngine,
    /// There is no piece, or a piece is empty (`start >= end`).
    Empty,
    /// The device-side range wraps around.
    AddressOverflow,
    /// The engine declared `max_segment == 0` (or `max_pieces == 0`).
    ZeroMaxSegment,
    /// The engine cannot carry these pieces: it moves whole blocks, and too
    /// many pieces begin within one block for one segment (for an engine of
    /// one piece per segment: a piece boundary is not on a block boundary).
    PiecesTooFine,
    /// The engine moves physical addresses with no SMMU in front of it
    /// ([`EngineCaps::physical`](crate::EngineCaps::physical)): only
    /// `Policy::Pin` keeps every page of the buffer in place for the whole
    /// transfer; this policy needs an SMMU.
    NeedsSmmu(Policy),
    /// A piece lies outside the memory the transfer holds (libos's forms
    /// that own or borrow a buffer check this before anything is queued).
    NotInBuffer,
}

impl fmt::Display for SubmitError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        if let SubmitError::NeedsSmmu(policy) = self {
            return write!(
                f,
                "the engine moves physical addresses with no SMMU in front of it: \
                 only pin keeps the buffer in place, {} needs an SMMU",
                policy.name()
            );
        }
        f.write_str(match self {
            SubmitError::NeedsSmmu(_) => unreachable!("written above"),
            SubmitError::UnknownEngine => "no such engine",
            SubmitError::Empty => "empty buffer or piece",
            SubmitError::AddressOverflow => "device range overflows",
            SubmitError::ZeroMaxSegment => "engine takes segments of 0 bytes",
            SubmitError::PiecesTooFine => "pieces too fine for the engine's blocks",
            SubmitError::NotInBuffer => "a piece lies outside the transfer's buffer",
        })
    }
}

/// Why a transfer failed. A failed transfer is reported only once none of
/// its segments is in flight any more, so the buffer may be reused at once.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TransferError {
    /// A page of the buffer cannot be made resident (at setup, on a fault, or
    /// before a retransmission); `va` is the page's address.
    Unresolvable {
        /// Page-aligned address of the page.
        va: usize,
        /// The memory manager's reason.
        error: MemError,
    },
    /// A segment kept faulting: it was retransmitted or resumed on a page it
    /// had already faulted on more often than the configured bound.
    RetriesExhausted {
        /// The segment's positions (see [`crate::Segment`]).
        segment: Range<usize>,
        /// Retries it took.
        retries: u32,
    },
    /// The `Pin` policy could not pin the buffer.
    Pin(MemError),
    /// The engine refused a segment or ended one with an error.
    Engine(EngineError),
    /// The transfer was refused before it was queued.
    Submit(SubmitError),
}

impl fmt::Display for TransferError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            TransferError::Unresolvable { va, error } => {
                write!(f, "page {va:#x} cannot be made resident: {error}")
            }
            TransferError::RetriesExhausted { segment, retries } => write!(
                f,
                "segment {:#x}..{:#x} still faulting after {retries} retries",
                segment.start, segment.end
            ),
            TransferError::Pin(e) => write!(f, "cannot pin the buffer: {e}"),
            TransferError::Submit(e) => write!(f, "refused: {e}"),
            TransferError::Engine(EngineError::Busy) => f.write_str("engine busy"),
            TransferError::Engine(EngineError::TimedOut) => {
                f.write_str("the device stopped completing: timed out, and the device was stopped")
            }
            TransferError::Engine(EngineError::Device(code)) => {
                write!(f, "device error {code:#x}")
            }
        }
    }
}

/// What a successful transfer reports: its policy and its own statistics
/// (the same counters the scheduler sums per policy).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransferReport {
    /// The policy it ran with.
    pub policy: Policy,
    /// Its counters and times.
    pub stats: Stats,
}
