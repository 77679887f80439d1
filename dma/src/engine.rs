//! DMA engines as the scheduler sees them, and the segments it hands them.
//!
//! A driver only starts segments and, if its SMMU stream stalls on faults,
//! resumes them; it reports completions back through
//! [`Scheduler::completed`](crate::Scheduler::completed), so the scheduler
//! never blocks and never owns an interrupt.

use alloc::vec::Vec;
use core::ops::Range;

use crate::transfer::TransferId;

/// An SMMU StreamID: which device an event came from. Faults are matched to
/// transfers by stream first, so two devices using the same buffer never
/// take each other's faults.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId(pub u32);

/// Index of an engine registered with
/// [`Scheduler::add_engine`](crate::Scheduler::add_engine); it is also the
/// engine's position in the slice passed to `poll`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EngineId(pub usize);

/// Which way the bytes go, which also says what access the device makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Memory to device: the device reads the buffer (a faulted read
    /// returns zeros to the device).
    ToDevice,
    /// Device to memory: the device writes the buffer (a faulted write is
    /// dropped).
    FromDevice,
}

/// What the scheduler needs to know about an engine to cut and place work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineCaps {
    /// Largest segment the engine takes, in bytes. Segments are cut at page
    /// boundaries, so a value that is not a page multiple is rounded down.
    pub max_segment: usize,
    /// How many pieces of memory one segment may carry (at least 1): an
    /// engine with a gather/scatter list per command declares its length;
    /// one that takes a single address declares 1, and the scheduler then
    /// cuts segments at piece boundaries.
    pub max_pieces: usize,
    /// The device moves whole blocks of this many bytes (a power of two, at
    /// most a page; 1 for byte-addressed engines): every segment and every
    /// retransmission starts and ends a multiple of it from the transfer's
    /// start (or at the transfer's end). Retransmissions are widened to it.
    pub block: usize,
    /// Whether the engine's SMMU stream stalls on a fault (and waits for
    /// [`Engine::resume`]) instead of aborting the access.
    pub can_resume: bool,
    /// The StreamID its accesses carry.
    pub stream: StreamId,
    /// The engine moves physical addresses and nothing translates them (no
    /// SMMU in front of it): a page that moved or went away would be read
    /// or written where it used to be, and nothing faults. Such an engine
    /// takes only `Policy::Pin` transfers; the others are refused with
    /// [`SubmitError::NeedsSmmu`](crate::SubmitError::NeedsSmmu).
    pub physical: bool,
}

/// Names one attempt at one segment: what a driver hands back to
/// [`Scheduler::completed`](crate::Scheduler::completed). The attempt number
/// lets the scheduler tell a retransmission from the attempt it replaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SegmentId {
    /// The transfer this segment belongs to.
    pub transfer: TransferId,
    /// Position of the segment within its transfer, from 0.
    pub index: usize,
    /// 0 for the first start, +1 for each retransmission.
    pub attempt: u32,
}

/// One piece of work for an engine: move [`len`](Segment::len) bytes
/// between the memory `pieces` (concatenated) and `device_addr`. A
/// retransmission covers only the spoiled part of its segment, so it may be
/// shorter than the segment's first attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Identity to report in the completion.
    pub id: SegmentId,
    /// Direction of the copy.
    pub direction: Direction,
    /// Application virtual addresses (= IOVAs) the device accesses, in
    /// order: never empty, none empty, at most the engine's `max_pieces`.
    pub pieces: Vec<Range<usize>>,
    /// Device-side address matching the first byte of the first piece.
    pub device_addr: u64,
    /// The transfer's [`device_key`](crate::Transfer::device_key).
    pub device_key: u64,
}

impl Segment {
    /// Bytes to move.
    pub fn len(&self) -> usize {
        self.pieces.iter().map(|p| p.len()).sum()
    }

    /// Whether there is nothing to move (never, for a scheduled segment).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The memory of an engine that takes one piece per segment.
    pub fn va(&self) -> Range<usize> {
        self.pieces.first().cloned().unwrap_or(0..0)
    }
}

/// Why an engine refused a segment or ended one with an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EngineError {
    /// The engine cannot take another segment now; the scheduler tries again
    /// at the next `poll` (this is not an error of the transfer).
    Busy,
    /// The device reported an error (driver-specific code); the transfer
    /// fails with it.
    Device(u32),
    /// The device held the segment and completed nothing for its deadline
    /// ([`crate::watchdog`]): it was stopped and is not used again.
    TimedOut,
}

/// How an engine reports the end of a segment. Note that an aborting SMMU
/// does not tell the device about a fault: such a segment completes `Ok` with
/// spoiled data, and only the fault events reveal it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Completion {
    /// The device finished the segment.
    Ok,
    /// The device gave up on the segment.
    Error(EngineError),
}

/// What to do with a stalled access (SMMUv3 `CMD_RESUME` / SMMUv2 resume
/// register), passed to [`Engine::resume`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Resume {
    /// The page is resident now: retry the stalled access.
    Retry,
    /// Give the stalled access an abort response; the transfer has failed and
    /// the scheduler waits for the segment's completion (with any status).
    Abort,
}

/// A DMA engine driver.
pub trait Engine {
    /// Constant capabilities, read once when the engine is registered.
    fn caps(&self) -> EngineCaps;

    /// Queues `seg` on the device. Must not block; `Err(Busy)` defers it.
    fn start(&mut self, seg: &Segment) -> Result<(), EngineError>;

    /// Ends the stall of `seg` (only for engines with `can_resume`). Calling
    /// it on a segment that is not stalled must be harmless: after lost fault
    /// events the scheduler resumes every in-flight segment of the stream,
    /// because it cannot know which ones stalled.
    fn resume(&mut self, seg: &Segment, how: Resume) {
        let _ = (seg, how);
    }
}
