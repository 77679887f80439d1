//! The kernel heap behind `alloc`: a linked-list allocator over an explicit
//! region that grows, a megabyte or more at a time, when an allocation does
//! not fit. Running out of frames makes the allocation fail (null), which
//! Rust reports as an allocation error with its size.

use super::region::Region;
use crate::sync::IrqSpinLock;
use core::alloc::{GlobalAlloc, Layout};
use core::ptr::{null_mut, NonNull};
use linked_list_allocator::Heap;

/// Virtual space reserved for the heap.
const HEAP_RESERVE: usize = 16 << 30;
/// Mapped at boot, and the least the heap grows by.
const HEAP_STEP: usize = 1 << 20;

struct State {
    heap: Heap,
    region: Option<Region>,
    mapped: usize,
}

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
        // SAFETY: the `by` bytes after the heap's end are now mapped and
        // belong to the heap region alone.
        unsafe { self.heap.extend(by) };
        self.mapped += by;
        true
    }
}

struct KernelHeap(IrqSpinLock<State>);

#[global_allocator]
static HEAP: KernelHeap = KernelHeap(IrqSpinLock::new(State {
    heap: Heap::empty(),
    region: None,
    mapped: 0,
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
    unsafe { state.heap.init(region.start() as *mut u8, HEAP_STEP) };
    state.mapped = HEAP_STEP;
    state.region = Some(region);
}

/// (bytes in use, bytes mapped).
pub(super) fn usage() -> (usize, usize) {
    let state = HEAP.0.lock();
    (state.heap.used(), state.mapped)
}

// SAFETY: allocation and deallocation go through the locked linked-list
// heap, which hands out non-overlapping blocks of the requested layout.
unsafe impl GlobalAlloc for KernelHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let mut state = self.0.lock();
        loop {
            if let Ok(block) = state.heap.allocate_first_fit(layout) {
                return block.as_ptr();
            }
            if !state.grow(layout.size() + layout.align()) {
                return null_mut();
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if let Some(ptr) = NonNull::new(ptr) {
            // SAFETY: the caller passes a block this allocator returned, with its layout.
            unsafe { self.0.lock().heap.deallocate(ptr, layout) };
        }
    }
}
