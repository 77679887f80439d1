//! The memory manager as the scheduler sees it.
//!
//! The scheduler never touches page tables; it asks the memory manager to
//! make pages resident (the same resolution the CPU's data-abort handler
//! uses), to pin them for the `Pin` policy, and for the time.

use core::fmt;
use core::ops::Range;

/// What the device does to a page, so the memory manager maps it with the
/// right permission (a device write to a copy-on-write page needs a private
/// copy; a read may be served by a shared zero page).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// The device reads memory (a `ToDevice` transfer).
    Read,
    /// The device writes memory (a `FromDevice` transfer).
    Write,
}

/// Why a page cannot be made resident (or pinned). The scheduler passes it
/// through unchanged in [`crate::TransferError`], so the application learns
/// the memory manager's own reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemError {
    /// The address belongs to no region of the address space.
    NoRegion,
    /// The region does not allow this access (e.g. a device write to a
    /// read-only buffer).
    PermissionDenied,
    /// No frame is left to back the page (or no more pages may be pinned).
    OutOfMemory,
    /// The device was not granted this memory (or not for this access):
    /// an isolation fault, never resolved.
    NotGranted,
}

impl fmt::Display for MemError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(match self {
            MemError::NoRegion => "address is in no region",
            MemError::PermissionDenied => "region does not allow this access",
            MemError::OutOfMemory => "out of memory",
            MemError::NotGranted => "the device was not granted this memory",
        })
    }
}

/// The memory manager, implemented by the kernel (and by fakes in tests).
///
/// Addresses are application virtual addresses, which are also the device's
/// IOVAs. The scheduler calls these methods from `poll` (and `on_fault`)
/// only, never from `submit` or `completed`; `claim` only reads
/// `is_resident` and `page_size`, and a [`Claim`](crate::Claim) resolves
/// its pages through `make_resident` wherever the kernel runs it.
pub trait Memory {
    /// Size of a page in bytes, a power of two (4096 on Faultline). Segments
    /// are cut and faults are deduplicated at this granularity.
    fn page_size(&self) -> usize;

    /// Whether the page holding `va` is mapped right now for `access`, so
    /// that such a device access to it would not fault (a page may be
    /// readable yet not writable: the shared zero block). Must be cheap:
    /// the scheduler asks before every `make_resident` to skip pages that
    /// need nothing.
    fn is_resident(&self, va: usize, access: Access) -> bool;

    /// Resolves the page holding `va` for `access` (demand-zero, swap-in,
    /// huge-page split...), exactly as a CPU fault there would. Calling it on
    /// a resident page must succeed and change nothing.
    fn make_resident(&mut self, va: usize, access: Access) -> Result<(), MemError>;

    /// From now until the matching [`unpin`](Memory::unpin), no page of
    /// `range` (page-aligned) is evicted once resident. Whether pinning also
    /// makes the pages resident is up to the implementation: the scheduler
    /// makes each page resident itself afterwards, so that an error names the
    /// page. On error nothing stays pinned.
    fn pin(&mut self, range: Range<usize>) -> Result<(), MemError>;

    /// Ends a successful [`pin`](Memory::pin) of exactly this `range`.
    fn unpin(&mut self, range: Range<usize>);

    /// Monotonic time in nanoseconds, for statistics only.
    fn now(&self) -> u64;
}
