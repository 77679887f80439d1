//! A device fault allocates nothing in the scheduler once it has run a
//! while: `claim` and `resolved` keep their short lists inline (a
//! segment's faulted pages, a claim's holders, a transfer's claimed pages)
//! or in memory kept from earlier faults (the list of outstanding claims).
//! The inline lists hold two entries: a segment attempt that faults on a
//! third distinct page moves its set to the heap, once.
//! The kernel's fault path keeps its own buffers the same way, so that a
//! storm of faults does not become a storm of allocations. A counting
//! allocator checks it.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use common::*;
use dma::{ClaimOutcome, Config, Direction, Policy};

/// The system allocator, counting this thread's allocations while asked.
struct Counting;

thread_local! {
    /// `Some(n)` while counting: allocations so far.
    static COUNT: Cell<Option<usize>> = const { Cell::new(None) };
}

// SAFETY: every call is passed on unchanged to the system allocator; the
// count is a thread-local cell with no destructor, which never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        COUNT.with(|c| c.set(c.get().map(|n| n + 1)));
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` above, i.e. from `System`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// `f`'s result and the allocations it made on this thread.
fn allocations<R>(f: impl FnOnce() -> R) -> (R, usize) {
    COUNT.with(|c| c.set(Some(0)));
    let result = f();
    (result, COUNT.with(|c| c.replace(None)).unwrap_or(0))
}

#[test]
fn claiming_and_resolving_device_faults_allocates_nothing() {
    let mut rig = Rig::new(Config::default());
    rig.mem.region(BASE..BASE + MIB, true);
    // Two-page segments: each attempt's faulted pages stay inline.
    let e = rig.add_engine(FakeEngine::new(1, 2 * PAGE, false, MIB), 1);
    for round in 0..3 {
        // A cold read of four pages in two segments: the device runs the
        // first, faults on each of its pages once per 4-byte word (as QEMU
        // reports it), and drops the data.
        let va = BASE + round * 4 * PAGE..BASE + (round + 1) * 4 * PAGE;
        let id = rig.submit(e, Direction::FromDevice, va, 0, Policy::FaultAware);
        rig.poll();
        rig.engines[0].execute(&mut rig.mem, &mut rig.events);
        let events = std::mem::take(&mut rig.events.events);
        assert!(events.len() > 4, "a storm of records: {}", events.len());
        let (mut claimed, mut allocated) = (0, 0);
        for ev in events {
            let (outcome, n) =
                allocations(|| rig.sched.claim(&rig.mem, ev.stream, ev.iova, ev.access));
            allocated += n;
            if let ClaimOutcome::Claimed(claim) = outcome {
                claimed += 1;
                // The kernel's part (here a simulated memory): not counted.
                let resolution = claim.resolve(&mut rig.mem);
                let (done, n) = allocations(|| rig.sched.resolved(claim.id, resolution));
                done.expect("the claim was outstanding");
                allocated += n;
            }
        }
        assert_eq!(claimed, 2, "one claim per page of the first segment");
        // The first round grows the list of outstanding claims once.
        if round > 0 {
            assert_eq!(allocated, 0, "round {round}: {allocated} allocations");
        }
        rig.run();
        assert_eq!(rig.report(id).stats.faults, 4);
    }
}
