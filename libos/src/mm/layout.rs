//! Where things are in the single address space.
//!
//! ```text
//!  identity map (VA = PA)         RAM, with the image mapped W^X inside it:
//!                                   text RX | rodata R | data+bss RW | stacks RW
//!                                 MMIO of the board (device memory)
//!  0x10_0000_0000..0x40_0000_0000 regions: heap, demand-zero buffers, ...
//! ```
//!
//! Each core has `[guard][thread stack][guard][exception stack]`; the guards
//! are never mapped, so a stack overflow faults instead of corrupting.

use core::ops::Range;
use hw::layout::{CORE_STACKS_SIZE, EXCEPTION_STACK_SIZE, MAIN_STACK_SIZE, MAX_CORES, PAGE_SIZE};

/// Virtual addresses handed out to regions (64 GiB to 256 GiB): above every
/// board's RAM, below QEMU virt's PCIe ECAM, inside the 39-bit VA space.
pub const REGION_WINDOW: Range<usize> = 0x10_0000_0000..0x40_0000_0000;

/// Address ranges of the kernel image's parts, from the linker script.
#[derive(Clone, Debug)]
pub struct ImageLayout {
    /// Code (read-only, executable).
    pub text: Range<usize>,
    /// Constants and the boot arguments (read-only).
    pub rodata: Range<usize>,
    /// Initialized data and BSS (read-write).
    pub data: Range<usize>,
    /// Per-core stacks with their guards.
    pub stacks: Range<usize>,
    /// The whole image.
    pub image: Range<usize>,
}

#[cfg(target_os = "none")]
mod symbols {
    unsafe extern "C" {
        pub static __image_start: u8;
        pub static __text_start: u8;
        pub static __text_end: u8;
        pub static __rodata_start: u8;
        pub static __rodata_end: u8;
        pub static __data_start: u8;
        pub static __data_end: u8;
        pub static __stacks_start: u8;
        pub static __stacks_end: u8;
        pub static __image_end: u8;
    }
}

/// The running image's layout.
#[cfg(target_os = "none")]
pub fn image() -> ImageLayout {
    use core::ptr::addr_of;
    use symbols::*;
    // Only the addresses of the linker symbols are taken; nothing is read.
    ImageLayout {
        text: addr_of!(__text_start) as usize..addr_of!(__text_end) as usize,
        rodata: addr_of!(__rodata_start) as usize..addr_of!(__rodata_end) as usize,
        data: addr_of!(__data_start) as usize..addr_of!(__data_end) as usize,
        stacks: addr_of!(__stacks_start) as usize..addr_of!(__stacks_end) as usize,
        image: addr_of!(__image_start) as usize..addr_of!(__image_end) as usize,
    }
}

/// The stacks of one core, given where the stack area starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreStacks {
    /// Guard below the thread stack.
    pub thread_guard: Range<usize>,
    /// The thread stack (SP_EL0).
    pub thread: Range<usize>,
    /// Guard below the exception stack.
    pub exception_guard: Range<usize>,
    /// The exception stack (SP_EL1).
    pub exception: Range<usize>,
}

/// Stacks of `core` within a stack area starting at `area_start`.
pub fn core_stacks(area_start: usize, core: usize) -> CoreStacks {
    assert!(core < MAX_CORES);
    let base = area_start + core * CORE_STACKS_SIZE;
    let thread = base + PAGE_SIZE;
    let guard2 = thread + MAIN_STACK_SIZE;
    let exception = guard2 + PAGE_SIZE;
    CoreStacks {
        thread_guard: base..thread,
        thread: thread..guard2,
        exception_guard: guard2..exception,
        exception: exception..exception + EXCEPTION_STACK_SIZE,
    }
}

/// Whether `addr` lies in some core's (mapped) thread or exception stack.
#[cfg(target_os = "none")]
pub fn is_stack(addr: usize) -> bool {
    let area = image().stacks.start;
    (0..MAX_CORES).any(|c| {
        let s = core_stacks(area, c);
        s.thread.contains(&addr) || s.exception.contains(&addr)
    })
}

/// Whether `addr` lies in a stack guard page.
#[cfg(target_os = "none")]
pub fn is_stack_guard(addr: usize) -> bool {
    let area = image().stacks.start;
    (0..MAX_CORES).any(|c| {
        let s = core_stacks(area, c);
        s.thread_guard.contains(&addr) || s.exception_guard.contains(&addr)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stacks_of_consecutive_cores_tile_the_area_with_guards_between() {
        let a = core_stacks(0x1000_0000, 0);
        let b = core_stacks(0x1000_0000, 1);
        assert_eq!(a.thread_guard.start, 0x1000_0000);
        assert_eq!(a.thread_guard.end, a.thread.start);
        assert_eq!(a.thread.end, a.exception_guard.start);
        assert_eq!(a.exception_guard.end, a.exception.start);
        assert_eq!(a.exception.end, b.thread_guard.start);
        assert_eq!(b.exception.end - 0x1000_0000, 2 * CORE_STACKS_SIZE);
    }
}
