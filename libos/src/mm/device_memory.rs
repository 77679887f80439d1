//! Frames for memory shared with devices ([`DmaMemory`]): queues, rings,
//! descriptor tables and PRP lists that a device reads and writes by
//! physical address. Every driver gets such memory here, and only here.
//!
//! The frames come zeroed, contiguous and identity-mapped (so the address a
//! driver hands a device is also where the kernel sees the bytes), and are
//! pinned for as long as the [`DmaMemory`] lives: the memory manager never
//! evicts or moves a frame it gave out.

use super::FRAME_SIZE;
use hw::dma_memory::{DmaAllocator, DmaMemory};

/// The kernel's frames as a [`DmaAllocator`].
pub struct DeviceFrames;

impl DmaAllocator for DeviceFrames {
    fn alloc(&mut self, bytes: usize, align: usize) -> Option<DmaMemory> {
        let pages = bytes.max(1).div_ceil(FRAME_SIZE);
        let start = super::alloc_contiguous(pages, align.max(FRAME_SIZE)).ok()?;
        let words = pages * FRAME_SIZE / 8;
        // SAFETY: the frames were just allocated to this call and nothing
        // else refers to them; they are identity-mapped read-write normal
        // memory, frame-aligned (so aligned for u64), zeroed here before
        // the slice is made, and the frame allocator never hands them out
        // again unless `free` gives them back.
        let words = unsafe {
            core::ptr::write_bytes(start as *mut u8, 0, pages * FRAME_SIZE);
            core::slice::from_raw_parts_mut(start as *mut u64, words)
        };
        Some(DmaMemory::new(words))
    }
}

/// Gives `memory` (from [`DeviceFrames`]) back to the frame allocator: for
/// memory no device was ever told about (a bring-up that failed half way).
pub fn free(memory: DmaMemory) {
    let pages = memory.len() / FRAME_SIZE;
    super::free_contiguous(memory.addr() as usize, pages);
}

/// Hands `memory` over as a bare address, for a driver library that keeps
/// device memory by address (virtio-drivers' queues); it comes back with
/// [`free_raw`].
pub fn into_raw(memory: DmaMemory) -> usize {
    memory.addr() as usize
}

/// Gives back `pages` frames at `addr` from [`into_raw`].
pub fn free_raw(addr: usize, pages: usize) {
    super::free_contiguous(addr, pages);
}
