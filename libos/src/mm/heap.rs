//! The kernel heap behind `alloc`: `talc` (free blocks kept in size bins,
//! so an allocation does not walk every hole as a first-fit list does: a
//! key-value store with a few hundred thousand values spent 94% of its time
//! in a linked-list heap) over an explicit region that grows, a megabyte or
//! more at a time, when an allocation does not fit. Running out of frames
//! makes the allocation fail (null), which Rust reports as an allocation
//! error with its size.

use super::region::Region;
use crate::sync::IrqSpinLock;
use core::alloc::{GlobalAlloc, Layout};
use core::ptr::{null_mut, NonNull};
use talc::base::Talc;
use talc::source::Manual;
use talc::DefaultBinning;

/// Virtual space reserved for the heap.
const HEAP_RESERVE: usize = 16 << 30;
/// Mapped at boot, and the least the heap grows by.
const HEAP_STEP: usize = 1 << 20;

struct State {
    heap: Talc<Manual, DefaultBinning>,
    /// The end of the memory the allocator has claimed so far.
    heap_end: Option<NonNull<u8>>,
    region: Option<Region>,
    mapped: usize,
    /// Bytes handed out and not yet freed.
    used: usize,
}

// SAFETY: the state is only reached through the heap's lock; the pointer
// names memory of the heap region, not data owned by a particular core.
unsafe impl Send for State {}

impl State {
    fn grow(&mut self, at_least: usize) -> bool {
        let Some(region) = self.region.as_mut() else {
            return false;
        };
        let by = at_least.max(HEAP_STEP).next_multiple_of(super::FRAME_SIZE);
        if self.mapped + by > region.len()
            || region.populate(self.mapped..self.mapped + by).is_err()
        {
            return false;
        }
        let (Some(end), new_end) = (
            self.heap_end,
            (region.start() + self.mapped + by) as *mut u8,
        ) else {
            return false;
        };
        // SAFETY: the `by` bytes after the heap's end are now mapped and
        // belong to the heap region alone.
        self.heap_end = Some(unsafe { self.heap.extend(end, new_end) });
        self.mapped += by;
        true
    }
}

struct KernelHeap(IrqSpinLock<State>);

#[global_allocator]
static HEAP: KernelHeap = KernelHeap(IrqSpinLock::new(State {
    heap: Talc::new(Manual),
    heap_end: None,
    region: None,
    mapped: 0,
    used: 0,
}));

/// Reserves the heap region and maps its first megabyte.
pub(super) fn init() {
    let mut region = Region::explicit(HEAP_RESERVE).expect("room for the heap region");
    region
        .populate(0..HEAP_STEP)
        .expect("frames for the initial heap");
    let mut state = HEAP.0.lock();
    // SAFETY: the first HEAP_STEP bytes of the region are mapped and owned by
    // the heap from now on.
    state.heap_end = unsafe { state.heap.claim(region.start() as *mut u8, HEAP_STEP) };
    assert!(
        state.heap_end.is_some(),
        "the first heap step is large enough to claim"
    );
    state.mapped = HEAP_STEP;
    state.region = Some(region);
}

/// (bytes in use, bytes mapped).
pub(super) fn usage() -> (usize, usize) {
    let state = HEAP.0.lock();
    (state.used, state.mapped)
}

// SAFETY: allocation and deallocation go through the locked heap, which
// hands out non-overlapping blocks of the requested layout.
unsafe impl GlobalAlloc for KernelHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let mut state = self.0.lock();
        loop {
            // SAFETY: `GlobalAlloc` callers never ask for zero bytes.
            if let Some(block) = unsafe { state.heap.allocate(layout) } {
                state.used += layout.size();
                return block.as_ptr();
            }
            if !state.grow(layout.size() + layout.align()) {
                return null_mut();
            }
        }
    }

    /// Grows or shrinks in place when the neighbouring memory allows (a
    /// growing `Vec` then copies nothing); else moves the block, copying
    /// outside the lock (a large copy must not hold off interrupts).
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old_size = layout.size();
        {
            let mut state = self.0.lock();
            if new_size <= old_size {
                // SAFETY: `ptr` is this allocator's block of `layout` (the
                // caller's contract); `new_size` is non-zero and not larger.
                unsafe { state.heap.shrink(ptr, layout, new_size) };
                state.used -= old_size - new_size;
                return ptr;
            }
            // SAFETY: as above, and `new_size` is larger.
            if unsafe { state.heap.try_grow_in_place(ptr, layout, new_size) } {
                state.used += new_size - old_size;
                return ptr;
            }
        }
        // SAFETY: the caller guarantees `new_size` rounded up to the
        // alignment does not overflow, so this layout is valid.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: `new_layout` is not zero-sized.
        let moved = unsafe { self.alloc(new_layout) };
        if !moved.is_null() {
            // SAFETY: both blocks are live, distinct, and at least
            // `old_size` long; the old one goes back with its own layout.
            unsafe {
                core::ptr::copy_nonoverlapping(ptr, moved, old_size);
                self.dealloc(ptr, layout);
            }
        }
        moved
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if !ptr.is_null() {
            let mut state = self.0.lock();
            // SAFETY: the caller passes a block this allocator returned, with its layout.
            unsafe { state.heap.deallocate(ptr, layout) };
            state.used -= layout.size();
        }
    }
}
