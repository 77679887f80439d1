//! Faults outside every transfer that a device waits on (an RDMA engine's
//! incoming WRITEs): the scheduler claims the page and a window ahead that
//! grows while the device streams through memory; the kernel resolves the
//! page, tells the device at once, then makes the window resident (which
//! stops at the end of the region), and reports back.

mod common;

use common::*;
use dma::{Access, Scheduler, StreamId};

#[test]
fn an_incoming_stream_is_told_first_then_prefetched_ahead() {
    let mut mem = SimMemory::default();
    mem.region(0x10_0000..0x10_0000 + 1024 * PAGE, true);
    let mut s = Scheduler::default();
    let stream = StreamId(3);
    let first = s.claim_incoming(&mem, stream, 0x10_0000 + 8, Access::Write);
    assert!(first.incoming);
    assert_eq!(first.page, Some(0x10_0000));
    assert_eq!(first.window.len(), 4, "the initial window");
    let page = first.resolve_page(&mut mem);
    assert_eq!(page, Ok(()), "the device hears of its page first");
    assert!(
        !mem.is_resident_page(0x10_0000 + PAGE),
        "the window comes after"
    );
    let prefetched = first.prefetch(&mut mem, page);
    assert_eq!(prefetched, 4);
    assert_eq!(s.outstanding_claims(), 1);
    let resolution = dma::Resolution { page, prefetched };
    assert_eq!(s.resolved(first.id, resolution), Ok(()));
    assert_eq!(s.resolved(first.id, resolution), Err(dma::UnknownClaim));
    assert_eq!(s.outstanding_claims(), 0);
    // The device comes back past the window: a stream, the window grows.
    let next = 0x10_0000 + 5 * PAGE;
    let second = s.claim_incoming(&mem, stream, next, Access::Write);
    let done = second.resolve(&mut mem);
    assert!(done.prefetched > prefetched, "{done:?}");
    assert!(mem.is_resident_page(next + PAGE));
    s.resolved(second.id, done).expect("outstanding");
}

#[test]
fn an_unresolvable_incoming_fault_is_reported_and_nothing_is_prefetched() {
    let mut mem = SimMemory::default();
    mem.region(0x10_0000..0x10_0000 + 4 * PAGE, false);
    let mut s = Scheduler::default();
    let claim = s.claim_incoming(&mem, StreamId(1), 0x10_0000, Access::Write);
    let done = claim.resolve(&mut mem);
    assert_eq!(
        done.page,
        Err(dma::MemError::PermissionDenied),
        "a write to read-only memory"
    );
    assert_eq!(done.prefetched, 0);
    s.resolved(claim.id, done).expect("outstanding");
    // Near the end of a region the window stops there.
    let mut mem = SimMemory::default();
    mem.region(0x20_0000..0x20_0000 + 2 * PAGE, true);
    let claim = s.claim_incoming(&mem, StreamId(2), 0x20_0000, Access::Read);
    let done = claim.resolve(&mut mem);
    assert_eq!((done.page, done.prefetched), (Ok(()), 1));
}
