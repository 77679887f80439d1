//! What the kernel uses of an SMMU, whichever architecture: attach a stream
//! to a stage-1 regime, invalidate what it unmaps, collect faults.
//!
//! The SMMUv3 driver reports faults in an event queue and aborts the
//! transactions; the MMU-500 driver reports them per context bank and
//! stalls them, so its transactions also need
//! [`v2::Mmu500::resume`](crate::v2::Mmu500::resume), driven by the DMA
//! scheduler's `Engine::resume`.

use crate::fault::FaultSet;
use crate::v3::CdParams;
use core::fmt::Debug;
use core::ops::Range;

/// What one [`Iommu::collect_faults`] call found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Collected {
    /// Fault records read.
    pub records: usize,
    /// Faults added to the set (one per stream, page and access).
    pub new_faults: usize,
    /// Of the records, transactions now stalled (MMU-500): each waits for a
    /// resume of its context bank.
    pub stalled: usize,
    /// Faults may have been lost (SMMUv3 event queue overflow, MMU-500
    /// FSR.MULTI): treat every transfer in flight as suspect (the DMA
    /// scheduler's `events_lost`).
    pub lost: bool,
    /// Records are still waiting: call again.
    pub more_pending: bool,
}

/// The kernel-facing interface of an SMMU driver.
pub trait Iommu {
    /// Why an operation failed.
    type Error: Debug;

    /// Translates stream `sid` through the stage-1 regime `params` (the
    /// CPU's table root, T0SZ, ASID, MAIR and output size).
    fn attach(&mut self, sid: u32, params: &CdParams) -> Result<(), Self::Error>;

    /// Stops translating stream `sid`: its traffic faults or aborts.
    fn detach(&mut self, sid: u32) -> Result<(), Self::Error>;

    /// Drops the SMMU's TLB entries for the page holding `va` in `asid`,
    /// and waits until that took effect.
    fn invalidate_va(&mut self, asid: u16, va: u64) -> Result<(), Self::Error>;

    /// Drops the TLB entries of every page overlapping `range` in `asid`
    /// (or the whole ASID for large ranges), and waits.
    fn invalidate_range(&mut self, asid: u16, range: Range<u64>) -> Result<(), Self::Error>;

    /// Drops every TLB entry of `asid`, and waits.
    fn invalidate_asid(&mut self, asid: u16) -> Result<(), Self::Error>;

    /// Reads the pending fault records into `set`, one fault per stream,
    /// page and access.
    fn collect_faults<const N: usize>(&mut self, set: &mut FaultSet<N>) -> Collected;
}

impl<R: crate::v3::Regs, M: crate::v3::DmaAllocator> Iommu for crate::v3::Smmu<R, M> {
    type Error = crate::v3::Error;

    fn attach(&mut self, sid: u32, params: &CdParams) -> Result<(), Self::Error> {
        crate::v3::Smmu::attach(self, sid, params)
    }

    fn detach(&mut self, sid: u32) -> Result<(), Self::Error> {
        crate::v3::Smmu::detach(self, sid)
    }

    fn invalidate_va(&mut self, asid: u16, va: u64) -> Result<(), Self::Error> {
        crate::v3::Smmu::invalidate_va(self, asid, va)
    }

    fn invalidate_range(&mut self, asid: u16, range: Range<u64>) -> Result<(), Self::Error> {
        crate::v3::Smmu::invalidate_range(self, asid, range)
    }

    fn invalidate_asid(&mut self, asid: u16) -> Result<(), Self::Error> {
        crate::v3::Smmu::invalidate_asid(self, asid)
    }

    fn collect_faults<const N: usize>(&mut self, set: &mut FaultSet<N>) -> Collected {
        let d = self.drain_faults_dedup(set);
        Collected {
            records: d.records,
            new_faults: d.new_faults,
            stalled: 0,
            lost: d.events_lost,
            more_pending: d.more_pending,
        }
    }
}

impl<R: crate::v3::Regs> Iommu for crate::v2::Mmu500<R> {
    type Error = crate::v2::Error;

    fn attach(&mut self, sid: u32, params: &CdParams) -> Result<(), Self::Error> {
        crate::v2::Mmu500::attach(self, sid, params).map(|_| ())
    }

    fn detach(&mut self, sid: u32) -> Result<(), Self::Error> {
        crate::v2::Mmu500::detach(self, sid)
    }

    fn invalidate_va(&mut self, asid: u16, va: u64) -> Result<(), Self::Error> {
        crate::v2::Mmu500::invalidate_va(self, asid, va)
    }

    fn invalidate_range(&mut self, asid: u16, range: Range<u64>) -> Result<(), Self::Error> {
        crate::v2::Mmu500::invalidate_range(self, asid, range)
    }

    fn invalidate_asid(&mut self, asid: u16) -> Result<(), Self::Error> {
        crate::v2::Mmu500::invalidate_asid(self, asid)
    }

    fn collect_faults<const N: usize>(&mut self, set: &mut FaultSet<N>) -> Collected {
        crate::v2::Mmu500::collect_faults(self, set)
    }
}
