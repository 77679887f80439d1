//! The kernel's MMIO window as the SMMUv3 driver's register access.

use crate::v3::Regs;
use hw::mmio::Mmio;

impl Regs for Mmio {
    fn read32(&self, offset: usize) -> u32 {
        self.read(offset)
    }

    fn write32(&self, offset: usize, value: u32) {
        self.write(offset, value)
    }

    fn read64(&self, offset: usize) -> u64 {
        Mmio::read64(self, offset)
    }

    fn write64(&self, offset: usize, value: u64) {
        Mmio::write64(self, offset, value)
    }

    /// `dmb osh`: the SMMU is an observer in the outer-shareable domain, so
    /// the inner-shareable default is not enough on hardware.
    fn dma_fence(&self) {
        #[cfg(target_arch = "aarch64")]
        // SAFETY: a data memory barrier reads and writes no memory or
        // registers; it only orders the accesses around it.
        unsafe {
            core::arch::asm!("dmb osh", options(nostack, preserves_flags));
        }
        #[cfg(not(target_arch = "aarch64"))]
        core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
    }
}
