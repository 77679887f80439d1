//! Transfers that cannot succeed end with a clear error, promptly, with
//! nothing left pinned; events that fit no transfer are reported, not fatal.

mod common;

use common::*;
use dma::{
    Completion, Config, Direction, EngineError, EngineId, FaultAction, MemError, Policy, SegmentId,
    StreamId, SubmitError, Transfer, TransferError, TransferId, UnknownSegment,
};

/// 64 KiB writable, then 64 KiB read-only, then nothing.
fn half_read_only() -> (Rig, EngineId) {
    let mut rig = Rig::new(Config::default());
    rig.mem.region(BASE..BASE + 64 * KIB, true);
    rig.mem.region(BASE + 64 * KIB..BASE + 128 * KIB, false);
    let e = rig.add_engine(FakeEngine::new(1, 16 * KIB, false, MIB), 4);
    (rig, e)
}

#[test]
fn a_page_the_device_may_not_write_fails_the_transfer_with_that_error() {
    for policy in Policy::ALL {
        let (mut rig, e) = half_read_only();
        let id = rig.submit(e, Direction::FromDevice, BASE..BASE + 128 * KIB, 0, policy);
        rig.run();
        let bad = BASE + 64 * KIB;
        assert_eq!(
            rig.result(id),
            &Err(TransferError::Unresolvable {
                va: bad,
                error: MemError::PermissionDenied
            }),
            "{policy}"
        );
        // No loop: the page was asked for once (twice with prefetch: the
        // window tried it quietly before the device faulted on it).
        assert!(
            rig.mem.resolve_calls[&bad] <= 2,
            "{policy}: {:?}",
            rig.mem.resolve_calls[&bad]
        );
        assert!(rig.steps < 20, "{policy}: {} steps", rig.steps);
        assert_eq!(rig.mem.pinned_pages(), 0);
        assert_eq!(rig.sched.stats(policy).failures, 1);
        assert_eq!(
            rig.sched.in_flight(e),
            0,
            "{policy}: reported before the engine was done"
        );
    }
}

#[test]
fn reading_the_same_read_only_buffer_is_fine() {
    for policy in Policy::ALL {
        let (mut rig, e) = half_read_only();
        let va = BASE..BASE + 128 * KIB;
        let source = fill_source(&mut rig, e, Direction::ToDevice, va.clone(), 0, 5);
        let id = rig.submit(e, Direction::ToDevice, va.clone(), 0, policy);
        rig.run();
        rig.report(id);
        assert!(destination(&rig, e, Direction::ToDevice, va, 0) == source);
    }
}

#[test]
fn a_hole_in_the_buffer_fails_with_no_region_and_pin_says_so_up_front() {
    for policy in Policy::ALL {
        let (mut rig, e) = half_read_only();
        let id = rig.submit(
            e,
            Direction::ToDevice,
            BASE + 100 * KIB..BASE + 200 * KIB,
            0,
            policy,
        );
        rig.run();
        let expected = match policy {
            Policy::Pin => TransferError::Pin(MemError::NoRegion),
            _ => TransferError::Unresolvable {
                va: BASE + 128 * KIB,
                error: MemError::NoRegion,
            },
        };
        assert_eq!(rig.result(id), &Err(expected), "{policy}");
        assert_eq!(rig.mem.pinned_pages(), 0);
    }
}

#[test]
fn running_out_of_frames_fails_with_out_of_memory() {
    for policy in Policy::ALL {
        let (mut rig, e) = half_read_only();
        rig.mem.frames_left = Some(3);
        let id = rig.submit(e, Direction::FromDevice, BASE..BASE + 64 * KIB, 0, policy);
        rig.run();
        match rig.result(id) {
            Err(TransferError::Unresolvable {
                error: MemError::OutOfMemory,
                ..
            }) => {}
            other => panic!("{policy}: {other:?}"),
        }
        assert_eq!(rig.mem.pinned_pages(), 0);
    }
}

#[test]
fn memory_that_forgets_every_page_exhausts_the_retry_bound() {
    for stalls in [false, true] {
        for policy in [
            Policy::FaultAware,
            Policy::FaultAwarePrefetch,
            Policy::Prefault,
        ] {
            let (mut rig, _) = half_read_only();
            rig.mem.forgetful = true;
            let e = rig.add_engine(FakeEngine::new(2, 16 * KIB, stalls, MIB), 1);
            let id = rig.submit(e, Direction::FromDevice, BASE..BASE + 32 * KIB, 0, policy);
            rig.run();
            match rig.result(id) {
                Err(TransferError::RetriesExhausted { segment, retries }) => {
                    assert_eq!(segment, &(BASE..BASE + 16 * KIB));
                    assert_eq!(*retries, 8, "{policy}");
                }
                other => panic!("{policy}, stalls {stalls}: {other:?}"),
            }
            let engine = &rig.engines[e.0];
            if stalls {
                // Resumed once after the first fault (progress), 8 more
                // times on the same page (retries), then aborted.
                assert_eq!((engine.starts, engine.resumes, engine.aborts), (1, 9, 1));
            } else {
                // The first attempt and 8 retransmissions.
                assert_eq!(engine.starts, 9, "{policy}");
            }
        }
    }
}

#[test]
fn a_stray_fault_is_reported_and_changes_nothing() {
    let (mut rig, e) = half_read_only();
    // Nothing in flight at all.
    assert_eq!(
        rig.sched
            .on_fault(&mut rig.mem, StreamId(1), BASE, dma::Access::Read),
        FaultAction::Stray
    );
    let va = BASE..BASE + 64 * KIB;
    rig.mem.make_warm(va.clone());
    let source = fill_source(&mut rig, e, Direction::ToDevice, va.clone(), 0, 9);
    let id = rig.submit(e, Direction::ToDevice, va.clone(), 0, Policy::FaultAware);
    rig.step();
    assert_eq!(rig.sched.in_flight(e), 4);
    // In flight, but: another stream; outside the buffer; no such stream.
    for (stream, iova) in [
        (StreamId(9), BASE),
        (StreamId(1), BASE + 100 * KIB),
        (StreamId(1), 0),
    ] {
        assert_eq!(
            rig.sched
                .on_fault(&mut rig.mem, stream, iova, dma::Access::Read),
            FaultAction::Stray
        );
    }
    assert_eq!(rig.sched.stray_faults(), 4);
    rig.run();
    let s = rig.report(id).stats;
    assert_eq!((s.faults, s.retransmissions), (0, 0));
    assert!(destination(&rig, e, Direction::ToDevice, va, 0) == source);
}

#[test]
fn a_device_error_fails_the_transfer() {
    let (mut rig, e) = half_read_only();
    rig.engines[e.0].device_error = Some(7);
    let id = rig.submit(
        e,
        Direction::ToDevice,
        BASE..BASE + 64 * KIB,
        0,
        Policy::FaultAware,
    );
    rig.run();
    assert_eq!(
        rig.result(id),
        &Err(TransferError::Engine(dma::EngineError::Device(7)))
    );
    assert_eq!(
        rig.engines[e.0].starts, 4,
        "nothing started after the failure"
    );
}

#[test]
fn a_busy_engine_only_delays_segments() {
    let (mut rig, e) = half_read_only();
    rig.engines[e.0].busy_at = Some(1);
    let va = BASE + 3..BASE + 60 * KIB;
    let source = fill_source(&mut rig, e, Direction::FromDevice, va.clone(), 0, 2);
    let id = rig.submit(
        e,
        Direction::FromDevice,
        va.clone(),
        0,
        Policy::FaultAwarePrefetch,
    );
    rig.run();
    rig.report(id);
    assert!(destination(&rig, e, Direction::FromDevice, va, 0) == source);
}

#[test]
fn bad_submissions_and_completions_are_refused() {
    let (mut rig, e) = half_read_only();
    let t =
        |va, device_addr| Transfer::contiguous(Direction::ToDevice, va, device_addr, Policy::Pin);
    assert_eq!(
        rig.sched.submit(EngineId(5), t(BASE..BASE + 1, 0)),
        Err(SubmitError::UnknownEngine)
    );
    assert_eq!(
        rig.sched.submit(e, t(BASE..BASE, 0)),
        Err(SubmitError::Empty)
    );
    assert_eq!(
        rig.sched.submit(e, t(BASE..BASE + 2, u64::MAX)),
        Err(SubmitError::AddressOverflow)
    );
    let zero = rig.add_engine(FakeEngine::new(3, 0, false, 0), 1);
    assert_eq!(
        rig.sched.submit(zero, t(BASE..BASE + 1, 0)),
        Err(SubmitError::ZeroMaxSegment)
    );
    let no_pieces = Transfer {
        pieces: vec![],
        ..t(BASE..BASE + 1, 0)
    };
    assert_eq!(rig.sched.submit(e, no_pieces), Err(SubmitError::Empty));
    // A 512-byte-block engine of one piece per segment cannot start a
    // segment at a 100-byte piece boundary.
    let blocks = rig.add_engine(FakeEngine::new(4, 16 * KIB, false, MIB).gather(1, 512), 1);
    let odd = Transfer {
        pieces: vec![BASE..BASE + 100, BASE + 4096..BASE + 4096 + 924],
        ..t(BASE..BASE + 1, 0)
    };
    assert_eq!(
        rig.sched.submit(blocks, odd),
        Err(SubmitError::PiecesTooFine)
    );
    let bogus = SegmentId {
        transfer: TransferId(77),
        index: 0,
        attempt: 0,
    };
    assert_eq!(
        rig.sched.completed(e, bogus, dma::Completion::Ok),
        Err(UnknownSegment)
    );
    assert_eq!(rig.sched.unfinished(), 0);
}

#[test]
fn a_device_that_never_completes_ends_its_transfers_with_a_timeout() {
    for policy in Policy::ALL {
        let mut rig = Rig::new(Config::default());
        rig.mem.region(BASE..BASE + 256 * KIB, true);
        let mut stuck = FakeEngine::new(1, 16 * KIB, false, MIB);
        stuck.burst = 0; // takes segments, never finishes one
        let e = rig.add_engine(stuck, 4);
        let id = rig.submit(e, Direction::FromDevice, BASE..BASE + 128 * KIB, 0, policy);
        // One step is one time unit; the deadline is 50 of them.
        let mut watchdog = dma::Watchdog::new(50);
        let mut fired_at = None;
        for now in 0..1_000u64 {
            rig.step();
            let busy = rig.sched.in_flight(e) > 0;
            if watchdog.check(now, busy, false) {
                fired_at = Some(now);
                for seg in rig.engines[e.0].stop() {
                    let timed_out = Completion::Error(EngineError::TimedOut);
                    rig.sched.completed(e, seg, timed_out).unwrap();
                }
                break;
            }
        }
        let fired_at = fired_at.expect("the watchdog fired");
        assert!((50..60).contains(&fired_at), "{policy}: {fired_at}");
        rig.run();
        assert_eq!(
            rig.result(id),
            &Err(TransferError::Engine(EngineError::TimedOut)),
            "{policy}"
        );
        assert_eq!(rig.mem.pinned_pages(), 0, "{policy}: nothing left pinned");
    }
}
