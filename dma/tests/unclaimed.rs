//! Faults outside every transfer that a device waits on (an RDMA engine's
//! incoming WRITEs): the scheduler resolves the page, tells the device at
//! once, then makes a window ahead resident that grows while the device
//! streams through memory, and stops at the end of the region.

mod common;

use common::*;
use dma::{Access, Scheduler, StreamId};

#[test]
fn an_incoming_stream_is_told_first_then_prefetched_ahead() {
    let mut mem = SimMemory::default();
    mem.region(0x10_0000..0x10_0000 + 1024 * PAGE, true);
    let mut s = Scheduler::default();
    let stream = StreamId(3);
    let mut told = Vec::new();
    let first = s.on_unclaimed_fault(&mut mem, stream, 0x10_0000 + 8, Access::Write, |ok| {
        told.push(ok)
    });
    assert_eq!(told, vec![true], "the device hears of its page first");
    assert!(first.resolved);
    assert_eq!(first.prefetched, 4, "the initial window");
    // The device comes back past the window: a stream, the window grows.
    let next = 0x10_0000 + 5 * PAGE;
    let second = s.on_unclaimed_fault(&mut mem, stream, next, Access::Write, |_| {});
    assert!(second.prefetched > first.prefetched, "{second:?}");
    assert!(mem.is_resident_page(next + PAGE));
}

#[test]
fn an_unresolvable_incoming_fault_is_reported_and_nothing_is_prefetched() {
    let mut mem = SimMemory::default();
    mem.region(0x10_0000..0x10_0000 + 4 * PAGE, false);
    let mut s = Scheduler::default();
    let mut told = None;
    let done = s.on_unclaimed_fault(&mut mem, StreamId(1), 0x10_0000, Access::Write, |ok| {
        told = Some(ok)
    });
    assert_eq!(told, Some(false), "a write to read-only memory");
    assert_eq!((done.resolved, done.prefetched), (false, 0));
    // Near the end of a region the window stops there.
    let mut mem = SimMemory::default();
    mem.region(0x20_0000..0x20_0000 + 2 * PAGE, true);
    let done = s.on_unclaimed_fault(&mut mem, StreamId(2), 0x20_0000, Access::Read, |_| {});
    assert_eq!((done.resolved, done.prefetched), (true, 1));
}
