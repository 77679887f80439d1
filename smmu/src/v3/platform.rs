//! What the driver needs from the platform: register access and memory the
//! SMMU can reach by DMA.

use super::dma::DmaBuf;
use super::error::{Allocation, Error};
use core::sync::atomic::{fence, Ordering};

/// Access to the SMMU's register window (offsets from its base, see
/// [`regs`](super::regs)). The kernel implements it on its MMIO window; tests
/// implement it on a software model of the SMMU.
pub trait Regs {
    /// Reads the 32-bit register at `offset`.
    fn read32(&self, offset: usize) -> u32;
    /// Writes the 32-bit register at `offset`.
    fn write32(&self, offset: usize, value: u32);
    /// Reads the 64-bit register at `offset` in one access.
    fn read64(&self, offset: usize) -> u64;
    /// Writes the 64-bit register at `offset` in one access.
    fn write64(&self, offset: usize, value: u64);
    /// Orders the CPU's accesses to memory shared with the SMMU (tables,
    /// queues) against each other and against register accesses: the
    /// driver calls it between filling an entry and publishing it, and
    /// between reading EVENTQ_PROD and reading the records.
    ///
    /// The default is a full fence for the compiler and the inner-shareable
    /// domain (`dmb ish` on AArch64); an implementation for real hardware may
    /// need a stronger barrier (`dmb osh`).
    fn dma_fence(&self) {
        fence(Ordering::SeqCst);
    }
}

impl<T: Regs + ?Sized> Regs for &T {
    fn read32(&self, offset: usize) -> u32 {
        (**self).read32(offset)
    }
    fn write32(&self, offset: usize, value: u32) {
        (**self).write32(offset, value)
    }
    fn read64(&self, offset: usize) -> u64 {
        (**self).read64(offset)
    }
    fn write64(&self, offset: usize, value: u64) {
        (**self).write64(offset, value)
    }
    fn dma_fence(&self) {
        (**self).dma_fence()
    }
}

/// Memory for the stream table, context descriptors and queues.
pub trait QueueMemory {
    /// Returns `bytes` of zeroed, physically contiguous memory aligned to
    /// `align` (a power of two), identity-mapped as normal write-back
    /// cacheable memory (so its address is also its physical address), and
    /// never freed; `None` if there is none.
    fn alloc(&mut self, bytes: usize, align: usize) -> Option<&'static mut [u64]>;
}

/// Allocates a DMA buffer of at least `bytes`, aligned to `align`.
pub(crate) fn alloc<M: QueueMemory>(
    mem: &mut M,
    bytes: usize,
    align: usize,
    what: Allocation,
) -> Result<DmaBuf, Error> {
    let words = mem.alloc(bytes, align).ok_or(Error::OutOfMemory(what))?;
    let buf = DmaBuf::new(words);
    if buf.len() * 8 < bytes || !buf.addr().is_multiple_of(align as u64) {
        return Err(Error::BadMemory(what));
    }
    Ok(buf)
}
