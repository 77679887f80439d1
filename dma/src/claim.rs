//! Claims: the pages one device fault needs, handed to the kernel to make
//! resident while the scheduler is not held.
//!
//! ```text
//!  Scheduler::claim(&mem, stream, iova, access)     (under the kernel's lock)
//!     └─► ClaimOutcome::Claimed(Claim { page, window, .. })
//!  Claim::resolve(&mut mem)                          (no lock: mm::resolve, views)
//!     ├─ resolve_page: the faulted page ─► Err: the transfers that wanted it fail
//!     └─ prefetch: the window after it, in order, stops at the first error
//!  Scheduler::resolved(claim.id, resolution)         (under the kernel's lock)
//! ```
//!
//! A claim only reads [`Memory`] through a shared reference when it is made
//! (`is_resident`, `page_size`): the type says the scheduler resolves
//! nothing then. The invariants that make the gap between `claim` and
//! `resolved` safe are the scheduler's; see [`crate::scheduler`].

use alloc::vec::Vec;
use core::fmt;

use crate::engine::StreamId;
use crate::memory::{Access, MemError, Memory};

/// Names one outstanding claim, from [`Scheduler::claim`](crate::Scheduler::claim)
/// until [`Scheduler::resolved`](crate::Scheduler::resolved).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClaimId(pub(crate) u64);

/// What the kernel must make resident for one device fault, without the
/// scheduler, before it reports back with [`Scheduler::resolved`](crate::Scheduler::resolved).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    /// The name to report the outcome under.
    pub id: ClaimId,
    /// The device stream that faulted.
    pub stream: StreamId,
    /// The faulting address, as the SMMU reported it (for `page_ready`).
    pub iova: usize,
    /// What the device did there.
    pub access: Access,
    /// The faulted page (page-aligned) to make resident; `None` when there
    /// is nothing to do (it was resident when claimed, or only transfers
    /// that are failing anyway wanted it).
    pub page: Option<usize>,
    /// Pages to make resident after it, in order (the prefetch window).
    pub window: Vec<usize>,
    /// The fault matched no transfer; its device waits on it itself
    /// (incoming RDMA) and must be told once the page is resolved.
    pub incoming: bool,
}

/// What became of a claim's pages: its one argument to `resolved`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resolution {
    /// The faulted page is resident (or needed nothing), or why it cannot be.
    pub page: Result<(), MemError>,
    /// Window pages made resident by this resolution (the first ones of the
    /// window; it stops at the first error).
    pub prefetched: usize,
}

impl Claim {
    /// Makes the faulted page resident, if the claim names one.
    pub fn resolve_page(&self, mem: &mut dyn Memory) -> Result<(), MemError> {
        match self.page {
            Some(page) if !mem.is_resident(page, self.access) => {
                mem.make_resident(page, self.access)
            }
            _ => Ok(()),
        }
    }

    /// Makes the window resident after the page came out as `page`: nothing
    /// if it failed; pages already resident are skipped, and the first
    /// error stops it quietly (that page will fault on its own and report
    /// the error then). Returns the pages it made resident.
    pub fn prefetch(&self, mem: &mut dyn Memory, page: Result<(), MemError>) -> usize {
        if page.is_err() {
            return 0;
        }
        let mut made = 0;
        for &va in &self.window {
            if mem.is_resident(va, self.access) {
                continue;
            }
            if mem.make_resident(va, self.access).is_err() {
                break;
            }
            made += 1;
        }
        made
    }

    /// The page, then the window: the whole resolution in one call, for
    /// callers with nothing to do in between (an incoming fault's device is
    /// told between the two; see [`Claim::incoming`]).
    pub fn resolve(&self, mem: &mut dyn Memory) -> Resolution {
        let page = self.resolve_page(mem);
        Resolution {
            page,
            prefetched: self.prefetch(mem, page),
        }
    }
}

/// What [`Scheduler::claim`](crate::Scheduler::claim) made of one SMMU
/// fault event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// New to some in-flight segment: resolve the claim, then report it.
    Claimed(Claim),
    /// Every segment it matches already knew this page: nothing to do (the
    /// SMMU reports a faulting page once per small access).
    Duplicate,
    /// No in-flight segment of that stream covers the address: a device
    /// bug, an event that came after its completion was handed over, or a
    /// device's own (incoming) access: see
    /// [`Scheduler::claim_incoming`](crate::Scheduler::claim_incoming).
    Stray,
}

/// `resolved` named a claim that is not outstanding (never made, or
/// reported twice). Nothing changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownClaim;

impl fmt::Display for UnknownClaim {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("resolution of a claim that is not outstanding")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use core::ops::Range;

    /// Pages 0x1000..0x4000 can be made resident; the rest cannot.
    struct Pages {
        resident: Vec<usize>,
    }

    impl Memory for Pages {
        fn page_size(&self) -> usize {
            0x1000
        }
        fn is_resident(&self, va: usize, _: Access) -> bool {
            self.resident.contains(&va)
        }
        fn make_resident(&mut self, va: usize, _: Access) -> Result<(), MemError> {
            if !(0x1000..0x4000).contains(&va) {
                return Err(MemError::NoRegion);
            }
            self.resident.push(va);
            Ok(())
        }
        fn pin(&mut self, _: Range<usize>) -> Result<(), MemError> {
            Ok(())
        }
        fn unpin(&mut self, _: Range<usize>) {}
        fn now(&self) -> u64 {
            0
        }
    }

    fn claim(page: Option<usize>, window: &[usize]) -> Claim {
        Claim {
            id: ClaimId(1),
            stream: StreamId(0),
            iova: page.unwrap_or(0) + 8,
            access: Access::Write,
            page,
            window: window.to_vec(),
            incoming: false,
        }
    }

    #[test]
    fn the_window_follows_the_page_and_stops_at_the_first_error() {
        let mut mem = Pages {
            resident: vec![0x3000],
        };
        let c = claim(Some(0x1000), &[0x2000, 0x3000, 0x4000, 0x2000]);
        let r = c.resolve(&mut mem);
        assert_eq!(r.page, Ok(()));
        assert_eq!(r.prefetched, 1, "0x3000 was resident; 0x4000 stops it");
        assert_eq!(mem.resident, vec![0x3000, 0x1000, 0x2000]);
    }

    #[test]
    fn a_page_that_cannot_be_resolved_prefetches_nothing() {
        let mut mem = Pages {
            resident: Vec::new(),
        };
        let r = claim(Some(0x8000), &[0x1000]).resolve(&mut mem);
        assert_eq!(r.page, Err(MemError::NoRegion));
        assert_eq!(r.prefetched, 0);
        assert!(mem.resident.is_empty());
        let nothing = claim(None, &[]).resolve(&mut mem);
        assert_eq!((nothing.page, nothing.prefetched), (Ok(()), 0));
    }
}
