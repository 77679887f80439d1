//! Every policy on cold, warm and evicted buffers: the data ends byte-exact,
//! and each policy pays what it should (faults, retransmissions, pins).

mod common;

use common::*;
use dma::{Config, Direction, Policy, Stats};

const DIRECTIONS: [Direction; 2] = [Direction::ToDevice, Direction::FromDevice];

/// One transfer of `len` bytes at an unaligned address, run to the end.
fn one_transfer(
    policy: Policy,
    dir: Direction,
    len: usize,
    warm: bool,
    burst: usize,
) -> (Rig, Stats) {
    let mut rig = Rig::new(Config::default());
    rig.mem.region(BASE..BASE + 8 * MIB, true);
    let mut engine = FakeEngine::new(1, 16 * KIB, false, 8 * MIB);
    engine.burst = burst;
    let e = rig.add_engine(engine, 4);
    let va = BASE + 0x123..BASE + 0x123 + len;
    let dev = 0x40;
    let source = fill_source(&mut rig, e, dir, va.clone(), dev, 7);
    if warm {
        rig.mem.make_warm(va.clone());
    }
    let id = rig.submit(e, dir, va.clone(), dev as u64, policy);
    rig.run();
    let report = rig.report(id);
    assert_eq!(report.policy, policy);
    assert!(
        destination(&rig, e, dir, va, dev) == source,
        "{policy} {dir:?}: data differs"
    );
    assert_eq!(rig.mem.pinned_pages(), 0, "{policy}: pages left pinned");
    (rig, report.stats)
}

#[test]
fn cold_buffers_end_byte_exact_for_every_policy() {
    for dir in DIRECTIONS {
        for policy in Policy::ALL {
            for burst in [1, 64] {
                let (rig, s) = one_transfer(policy, dir, 200_000, false, burst);
                assert_eq!(s.bytes_requested, 200_000);
                assert_eq!(s.bytes_moved, 200_000 + s.retransmitted_bytes);
                assert_eq!(s.segments, 13);
                match policy {
                    Policy::Pin | Policy::Prefault => {
                        assert_eq!((s.faults, s.retransmissions), (0, 0), "{policy}");
                        assert_eq!(s.pages_setup, 49);
                    }
                    Policy::FaultAware => {
                        // Every page faults exactly once; every fault is
                        // resolved once; every page is sent again once.
                        assert_eq!(s.faults, 49);
                        assert_eq!(s.retransmitted_bytes, 200_000);
                        assert_eq!(rig.mem.resolve_calls.len(), 49);
                        assert!(rig.mem.resolve_calls.values().all(|&n| n == 1));
                    }
                    Policy::FaultAwarePrefetch => assert!(s.faults < 49),
                }
                assert_eq!(rig.sched.stats(policy).transfers, 1);
            }
        }
    }
}

#[test]
fn warm_buffers_take_no_faults_and_no_retransmissions() {
    for dir in DIRECTIONS {
        for policy in Policy::ALL {
            let (rig, s) = one_transfer(policy, dir, 300_000, true, 64);
            assert_eq!(
                (s.faults, s.fault_events, s.retransmissions),
                (0, 0, 0),
                "{policy}"
            );
            assert_eq!(s.pages_setup, 0, "{policy}: nothing to set up");
            assert_eq!(rig.actions, Actions::default());
        }
    }
}

/// Evicts the whole buffer every third step, as memory pressure would.
fn evicting(rig: &mut Rig) {
    rig.after_step = Some(Box::new(|mem: &mut SimMemory, step: usize| {
        if step.is_multiple_of(3) {
            mem.evict(BASE..BASE + 8 * MIB);
        }
    }));
}

#[test]
fn pin_takes_no_faults_even_under_eviction_and_unpins_at_the_end() {
    for dir in DIRECTIONS {
        let mut rig = Rig::new(Config::default());
        rig.mem.region(BASE..BASE + MIB, true);
        let e = rig.add_engine(FakeEngine::new(1, 16 * KIB, false, MIB), 2);
        evicting(&mut rig);
        let va = BASE + 5..BASE + 5 + 256 * KIB;
        let source = fill_source(&mut rig, e, dir, va.clone(), 0, 3);
        let id = rig.submit(e, dir, va.clone(), 0, Policy::Pin);
        rig.run();
        let s = rig.report(id).stats;
        assert_eq!((s.faults, s.retransmissions), (0, 0));
        assert_eq!(s.pages_setup, 65);
        assert!(s.setup_ns > 0 && s.total_ns >= s.setup_ns);
        assert!(destination(&rig, e, dir, va, 0) == source);
        assert_eq!(
            (rig.mem.pins, rig.mem.unpins, rig.mem.pinned_pages()),
            (1, 1, 0)
        );
    }
}

#[test]
fn prefault_survives_eviction_after_setup() {
    for dir in DIRECTIONS {
        let mut rig = Rig::new(Config::default());
        rig.mem.region(BASE..BASE + MIB, true);
        let e = rig.add_engine(FakeEngine::new(1, 16 * KIB, false, MIB), 2);
        evicting(&mut rig);
        let va = BASE..BASE + 256 * KIB;
        let source = fill_source(&mut rig, e, dir, va.clone(), 0, 4);
        let id = rig.submit(e, dir, va.clone(), 0, Policy::Prefault);
        rig.run();
        let s = rig.report(id).stats;
        assert_eq!(s.pages_setup, 64);
        assert!(
            s.faults > 0 && s.retransmissions > 0,
            "evictions must have caused faults: {s}"
        );
        assert!(destination(&rig, e, dir, va, 0) == source);
    }
}

/// The benchmark case: 4 MiB cold, 64 KiB segments, a window of `window`.
fn four_mib_cold(policy: Policy, dir: Direction, window: usize, burst: usize) -> Stats {
    let mut rig = Rig::new(Config::default());
    rig.mem.region(BASE..BASE + 4 * MIB, true);
    let mut engine = FakeEngine::new(1, 64 * KIB, false, 4 * MIB);
    engine.burst = burst;
    let e = rig.add_engine(engine, window);
    let va = BASE..BASE + 4 * MIB;
    let source = fill_source(&mut rig, e, dir, va.clone(), 0, 11);
    let id = rig.submit(e, dir, va.clone(), 0, policy);
    rig.run();
    assert!(
        destination(&rig, e, dir, va, 0) == source,
        "{policy}: data differs"
    );
    rig.report(id).stats
}

/// Prints the table the report quotes, and checks what the design promises.
#[test]
fn prefetch_beats_fault_aware_on_a_4_mib_cold_transfer() {
    // (window, burst): a device the kernel keeps up with (one segment runs
    // between two drains), and devices that run their whole window before
    // the kernel sees the first fault (QEMU-like).
    for (window, burst) in [(4, 1), (4, 4), (2, 2)] {
        println!("4 MiB cold, 64 KiB segments, window {window}, {burst} segment(s) per drain:");
        let mut fa = Stats::default();
        for dir in DIRECTIONS {
            for policy in Policy::ALL {
                let s = four_mib_cold(policy, dir, window, burst);
                let pct = s.retransmitted_bytes as f64 * 100.0 / (4 * MIB) as f64;
                println!(
                    "  {dir:?} {policy:<21} faults {:>5} (events {:>7}) prefetched {:>4} \
                     retransmitted {:>7} B ({pct:5.2}%) setup {:>8} ns total {:>8} ns",
                    s.faults,
                    s.fault_events,
                    s.pages_prefetched,
                    s.retransmitted_bytes,
                    s.setup_ns,
                    s.total_ns
                );
                match policy {
                    Policy::Pin | Policy::Prefault => {
                        assert_eq!((s.faults, s.retransmitted_bytes), (0, 0))
                    }
                    Policy::FaultAware => {
                        assert_eq!(s.faults, 1024);
                        assert_eq!(s.retransmitted_bytes, 4 * MIB as u64);
                        fa = s;
                    }
                    Policy::FaultAwarePrefetch => {
                        assert!(s.faults < fa.faults);
                        // The first window of segments runs cold before any
                        // fault is seen; after that the window runs ahead.
                        let first_window = (burst * 64 * KIB) as u64;
                        assert!(s.retransmitted_bytes <= first_window, "{s}");
                        if window * burst <= 4 {
                            assert!(
                                s.retransmitted_bytes * 20 < 4 * MIB as u64,
                                "not below 5%: {s}"
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn an_engine_without_an_smmu_takes_only_pinned_transfers() {
    // A DMA controller that moves physical addresses (the ZynqMP's ZDMA
    // with no MMU-500 in front of it): nothing would fault if a page moved
    // away mid-transfer, so only `Pin` is safe, and the rest is refused
    // before anything is queued.
    let mut rig = Rig::new(Config::default());
    rig.mem.region(BASE..BASE + MIB, true);
    let mut engine = FakeEngine::new(1, 16 * KIB, false, MIB);
    engine.caps.physical = true;
    let e = rig.add_engine(engine, 4);
    let va = BASE..BASE + 64 * KIB;
    for policy in [
        Policy::Prefault,
        Policy::FaultAware,
        Policy::FaultAwarePrefetch,
    ] {
        let refused = rig.sched.submit(
            e,
            dma::Transfer::contiguous(Direction::FromDevice, va.clone(), 0, policy),
        );
        assert_eq!(refused, Err(dma::SubmitError::NeedsSmmu(policy)));
        assert!(
            refused.unwrap_err().to_string().contains("needs an SMMU"),
            "the error says what is missing"
        );
    }
    assert_eq!(rig.sched.unfinished(), 0, "nothing was queued");
    let source = fill_source(&mut rig, e, Direction::FromDevice, va.clone(), 0, 3);
    let id = rig.submit(e, Direction::FromDevice, va.clone(), 0, Policy::Pin);
    rig.run();
    assert_eq!(rig.report(id).policy, Policy::Pin);
    assert!(destination(&rig, e, Direction::FromDevice, va, 0) == source);
}
