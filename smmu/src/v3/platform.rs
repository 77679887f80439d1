//! What the driver needs from the platform: register access and memory the
//! SMMU can reach by DMA.

use super::error::{Allocation, Error};
use core::sync::atomic::{fence, Ordering};
use hw::dma_memory::{DmaAllocator, DmaMemory};

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

/// Allocates memory for the stream table, context descriptors or a queue:
/// at least `bytes`, aligned to `align`, mapped as normal write-back
/// cacheable memory.
pub(crate) fn alloc<M: DmaAllocator>(
    mem: &mut M,
    bytes: usize,
    align: usize,
    what: Allocation,
) -> Result<DmaMemory, Error> {
    let buf = mem.alloc(bytes, align).ok_or(Error::OutOfMemory(what))?;
    if buf.len() < bytes || !buf.addr().is_multiple_of(align as u64) {
        return Err(Error::BadMemory(what));
    }
    Ok(buf)
}
