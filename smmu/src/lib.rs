//! Faultline's SMMU drivers.
//!
//! A device DMAs to application virtual addresses; the SMMU translates them
//! with the kernel's mappings of the memory the device was granted (a view
//! the kernel keeps in step with its own table), so a page the CPU has not
//! faulted in yet is a page fault for the device too, and memory it was not
//! granted is a fault that is never resolved. The SMMU reports such faults in an event queue; the kernel resolves
//! them with the same function its data-abort handler calls and then lets the
//! DMA scheduler retry (see "One device page fault, end to end" in
//! `docs/ARCHITECTURE.md`).
//!
//! - [`fault`]: what a fault is, independent of the SMMU that reported it, and
//!   how floods of identical records are collapsed into one fault per page.
//! - [`grants`]: what each device was given, the rule of device isolation.
//! - [`v3`]: the Arm SMMUv3 driver (QEMU `virt,iommu=smmuv3`).
//! - [`v2`]: the Arm MMU-500 (SMMUv2) driver (ZynqMP), which stalls faulting
//!   transactions and resumes them once the kernel resolved the fault.
//! - [`Iommu`]: what the kernel uses of either.
//!
//! Everything but the register and memory accesses is pure and tested on the
//! host; the drivers reach the hardware only through the [`v3::Regs`] and
//! [`v3::DmaAllocator`] traits.
//!
//! Feature `hw` implements [`v3::Regs`] for `hw::mmio::Mmio`, the kernel's
//! register window type.
#![no_std]
// `unsafe` only where the hardware demands it: the register window
// (`mmio_regs`) and the vector scan of the event queue (`v3::records`).
#![deny(unsafe_code)]

extern crate alloc;

mod address_size;
pub mod fault;
pub mod grants;
mod iommu;
#[cfg(feature = "hw")]
#[allow(unsafe_code)]
mod mmio_regs;
pub mod v2;
pub mod v3;

pub use fault::{Access, Fault, FaultKind};
pub use iommu::{Collected, Iommu};

/// Polls `done` up to `limit` times (at least once): both drivers' wait for
/// a register acknowledgement; `Err(timeout)` if it never comes.
fn poll<E>(limit: u32, timeout: E, mut done: impl FnMut() -> bool) -> Result<(), E> {
    for _ in 0..limit.max(1) {
        if done() {
            return Ok(());
        }
        core::hint::spin_loop();
    }
    Err(timeout)
}
