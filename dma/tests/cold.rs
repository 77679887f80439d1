//! `FaultAwarePrefetch` on cold buffers behind an aborting SMMU: each new
//! segment's pages are prepared right before it starts (one segment ahead of
//! the window), so almost nothing is spoiled; warm buffers pay only the probe
//! of the first segment; setup before the first byte is one segment, however
//! large the buffer.

mod common;

use std::cell::Cell;
use std::collections::BTreeSet;
use std::ops::Range;
use std::rc::Rc;

use common::*;
use dma::{
    Access, Completion, Config, Direction, Engine, EngineCaps, EngineError, MemError, Memory,
    Policy, Scheduler, Segment, SegmentId, Stats, StreamId, Transfer,
};

const DIRECTIONS: [Direction; 2] = [Direction::ToDevice, Direction::FromDevice];

/// A transfer of `len` bytes at `BASE` on an engine taking `segment` bytes
/// with `window` in flight, running `burst` segments between two drains.
#[derive(Clone, Copy)]
struct Case {
    len: usize,
    segment: usize,
    window: usize,
    burst: usize,
}

/// The benchmark case: 4 MiB, 64 KiB segments, a window of 4, the whole
/// window run before a drain.
const BENCH: Case = Case {
    len: 4 * MIB,
    segment: 64 * KIB,
    window: 4,
    burst: 4,
};

/// The NVMe case of the issue: 1 MiB, 512 KiB segments, 16 in flight, the
/// whole window run before a drain.
const NVME: Case = Case {
    len: MIB,
    segment: 512 * KIB,
    window: 16,
    burst: 16,
};

/// Runs one cold (or warm) transfer to the end and checks it byte-exact.
fn run_one(
    policy: Policy,
    dir: Direction,
    c: Case,
    warm: bool,
    setup: impl FnOnce(&mut Rig),
) -> (Rig, Stats) {
    let mut rig = Rig::new(Config::default());
    rig.mem.region(BASE..BASE + c.len, true);
    let mut engine = FakeEngine::new(1, c.segment, false, c.len);
    engine.burst = c.burst;
    let e = rig.add_engine(engine, c.window);
    let va = BASE..BASE + c.len;
    let source = fill_source(&mut rig, e, dir, va.clone(), 0, 5);
    if warm {
        rig.mem.make_warm(va.clone());
    }
    setup(&mut rig);
    let id = rig.submit(e, dir, va.clone(), 0, policy);
    rig.run();
    let s = rig.report(id).stats;
    assert!(
        destination(&rig, e, dir, va, 0) == source,
        "{policy} {dir:?}: data differs"
    );
    assert_eq!(s.bytes_moved, c.len as u64 + s.retransmitted_bytes);
    (rig, s)
}

fn pct(part: u64, whole: u64) -> f64 {
    part as f64 * 100.0 / whole as f64
}

/// Runs case `c` cold with `Pin` and `FaultAwarePrefetch` in `dirs`, prints
/// the numbers and checks the targets of the issue.
fn cold_case(c: Case, dirs: &[Direction]) {
    let pages = (c.len / PAGE) as u64;
    for &dir in dirs {
        let (_, pin) = run_one(Policy::Pin, dir, c, false, |_| {});
        let (_, s) = run_one(Policy::FaultAwarePrefetch, dir, c, false, |_| {});
        println!(
            "{} KiB cold, {} KiB segments, window {}, burst {}, {dir:?}: \
             faults {} (events {}), prepared {} pages, retransmitted {} B ({:.2}% of moved), \
             setup {} ns (pin {} ns), total {} ns (pin {} ns, {:.2}x pin throughput)",
            c.len / KIB,
            c.segment / KIB,
            c.window,
            c.burst,
            s.faults,
            s.fault_events,
            s.pages_prepared,
            s.retransmitted_bytes,
            pct(s.retransmitted_bytes, s.bytes_moved),
            s.setup_ns,
            pin.setup_ns,
            s.total_ns,
            pin.total_ns,
            pin.total_ns as f64 / s.total_ns as f64,
        );
        assert!(s.retransmitted_bytes * 20 < s.bytes_moved, "{s}");
        assert!(s.faults * 10 < pages, "{s}");
        assert_eq!(s.pages_prepared + s.pages_prefetched + s.faults, pages);
        assert!(s.total_ns <= pin.total_ns, "slower than pin: {s} / {pin}");
        let first_segment = (c.segment / PAGE) as u64 * RESOLVE_NS;
        assert!(s.setup_ns <= first_segment, "setup beyond one segment: {s}");
    }
}

#[test]
fn cold_4_mib_prepared_with_a_device_the_kernel_keeps_up_with() {
    cold_case(Case { burst: 1, ..BENCH }, &DIRECTIONS);
}

#[test]
fn cold_4_mib_prepared_with_a_device_that_runs_its_whole_window() {
    cold_case(BENCH, &DIRECTIONS);
}

#[test]
fn cold_1_mib_prepared_on_nvme_like_segments() {
    cold_case(NVME, &DIRECTIONS);
}

/// 16 MiB, one test per direction so that they run in parallel.
#[test]
fn cold_16_mib_to_device_prepared_on_nvme_like_segments() {
    let c = Case {
        len: 16 * MIB,
        ..NVME
    };
    cold_case(c, &[Direction::ToDevice]);
}

#[test]
fn cold_16_mib_from_device_prepared_on_nvme_like_segments() {
    let c = Case {
        len: 16 * MIB,
        ..NVME
    };
    cold_case(c, &[Direction::FromDevice]);
}

#[test]
fn warm_transfers_only_probe_the_first_segment() {
    for dir in DIRECTIONS {
        let (_, pin) = run_one(Policy::Pin, dir, BENCH, true, |_| {});
        let (rig, s) = run_one(Policy::FaultAwarePrefetch, dir, BENCH, true, |rig| {
            rig.mem.residency_checks.set(0)
        });
        assert!(rig.mem.resolve_calls.is_empty(), "make_resident called");
        assert_eq!(rig.mem.residency_checks.get(), (64 * KIB / PAGE) as u64);
        assert_eq!(
            (
                s.faults,
                s.retransmitted_bytes,
                s.pages_prepared,
                s.pages_prefetched
            ),
            (0, 0, 0, 0)
        );
        assert!(s.total_ns * 100 <= pin.total_ns * 102, "{s} / {pin}");
    }
}

#[test]
fn pages_lost_after_preparation_fault_and_end_byte_exact() {
    // Three pages in different segments are "evicted" right after being
    // prepared: each faults once, and only that page is sent again.
    let lost = [3 * 16 + 5, 7 * 16, 20 * 16 + 15].map(|p| BASE + p * PAGE);
    for dir in DIRECTIONS {
        let (_, s) = run_one(Policy::FaultAwarePrefetch, dir, BENCH, false, |rig| {
            rig.mem.forget_once = lost.into_iter().collect()
        });
        assert_eq!(s.faults, 3, "{s}");
        assert_eq!(
            (s.retransmissions, s.retransmitted_bytes),
            (3, 3 * PAGE as u64)
        );
    }
    // The whole buffer evicted every third step.
    for dir in DIRECTIONS {
        let small = Case {
            len: MIB,
            burst: 2,
            ..BENCH
        };
        let (_, s) = run_one(Policy::FaultAwarePrefetch, dir, small, false, |rig| {
            rig.after_step = Some(Box::new(|mem: &mut SimMemory, step: usize| {
                if step.is_multiple_of(3) {
                    mem.evict(BASE..BASE + MIB);
                }
            }))
        });
        assert!(s.faults > 0 && s.retransmissions > 0, "{s}");
    }
}

/// Memory with a billion-byte buffer, no data, and counters shared with the
/// engine below.
struct Counting {
    resident: BTreeSet<usize>,
    made: Rc<Cell<u64>>,
}

impl Memory for Counting {
    fn page_size(&self) -> usize {
        PAGE
    }
    fn is_resident(&self, va: usize, _: Access) -> bool {
        self.resident.contains(&(va - va % PAGE))
    }
    fn make_resident(&mut self, va: usize, _: Access) -> Result<(), MemError> {
        self.made.set(self.made.get() + 1);
        self.resident.insert(va - va % PAGE);
        Ok(())
    }
    fn pin(&mut self, _: Range<usize>) -> Result<(), MemError> {
        Ok(())
    }
    fn unpin(&mut self, _: Range<usize>) {}
    fn now(&self) -> u64 {
        0
    }
}

/// Records how many pages were made resident before its first start.
struct Recorder {
    made: Rc<Cell<u64>>,
    before_first_start: Option<u64>,
    started: Vec<SegmentId>,
}

impl Engine for Recorder {
    fn caps(&self) -> EngineCaps {
        EngineCaps {
            max_segment: 512 * KIB,
            max_pieces: 1,
            block: 1,
            can_resume: false,
            stream: StreamId(1),
            physical: false,
        }
    }
    fn start(&mut self, seg: &Segment) -> Result<(), EngineError> {
        self.before_first_start.get_or_insert(self.made.get());
        self.started.push(seg.id);
        Ok(())
    }
}

#[test]
fn setup_before_the_first_byte_is_one_segment_for_a_1_gib_buffer() {
    const GIB: usize = 1024 * MIB;
    let per_segment = (512 * KIB / PAGE) as u64;
    let made = Rc::new(Cell::new(0));
    let mut mem = Counting {
        resident: BTreeSet::new(),
        made: made.clone(),
    };
    let mut engine = Recorder {
        made: made.clone(),
        before_first_start: None,
        started: Vec::new(),
    };
    let mut sched = Scheduler::new(Config::default());
    let e = sched.add_engine(&engine, 16);
    sched
        .submit(
            e,
            Transfer::contiguous(
                Direction::FromDevice,
                BASE..BASE + GIB,
                0,
                Policy::FaultAwarePrefetch,
            ),
        )
        .unwrap();
    sched.poll(&mut [&mut engine], &mut mem);
    assert_eq!(engine.before_first_start, Some(per_segment));
    // The first poll fills the window and prepares one segment ahead.
    assert_eq!(engine.started.len(), 16);
    assert_eq!(made.get(), 17 * per_segment);
    // Each completion then costs one more segment's pages, no more.
    for round in 0..3 {
        let done = engine.started[round];
        sched.completed(e, done, Completion::Ok).unwrap();
        sched.poll(&mut [&mut engine], &mut mem);
        assert_eq!(engine.started.len(), 17 + round);
        assert_eq!(made.get(), (18 + round as u64) * per_segment);
    }
}
