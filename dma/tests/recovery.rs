//! The hard cases of the fault path: lost fault events, engines that stall,
//! several transfers and streams at once, and the state machine step by step.

mod common;

use common::*;
use dma::{Access, Config, Direction, FaultAction, Policy, SegmentState, StreamId, TransferState};

const DIRECTIONS: [Direction; 2] = [Direction::ToDevice, Direction::FromDevice];

#[test]
fn lost_fault_events_still_end_byte_exact() {
    for dir in DIRECTIONS {
        for policy in Policy::ALL {
            for stalls in [false, true] {
                let mut rig = Rig::new(Config::default());
                rig.mem.region(BASE..BASE + MIB, true);
                let mut engine = FakeEngine::new(1, 16 * KIB, stalls, MIB);
                engine.burst = 4;
                let e = rig.add_engine(engine, 4);
                let va = BASE + 10..BASE + 200 * KIB;
                let source = fill_source(&mut rig, e, dir, va.clone(), 0x10, 21);
                // Some pages warm, so "resident all along" pages are present.
                rig.mem.make_warm(BASE + 64 * KIB..BASE + 96 * KIB);
                // Every event of the first window of segments is lost.
                rig.lose_events_for = 2;
                // Evict the buffer once after the first poll, so that pages a
                // cold `FaultAwarePrefetch` transfer prepared fault too.
                rig.after_step = Some(Box::new(|mem: &mut SimMemory, step: usize| {
                    if step == 1 {
                        mem.evict(BASE..BASE + MIB);
                    }
                }));
                let id = rig.submit(e, dir, va.clone(), 0x10, policy);
                rig.run();
                let s = rig.report(id).stats;
                assert!(
                    destination(&rig, e, dir, va, 0x10) == source,
                    "{policy} {dir:?} stalls {stalls}"
                );
                // Pin and Prefault take no faults here, so lose no events.
                if matches!(policy, Policy::FaultAware | Policy::FaultAwarePrefetch) {
                    assert!(s.lost_event_segments > 0, "{policy}");
                }
                assert_eq!(rig.mem.pinned_pages(), 0);
            }
        }
    }
}

#[test]
fn a_stalling_engine_is_resumed_not_retransmitted() {
    for dir in DIRECTIONS {
        for policy in [Policy::FaultAware, Policy::FaultAwarePrefetch] {
            let mut rig = Rig::new(Config::default());
            rig.mem.region(BASE..BASE + MIB, true);
            let e = rig.add_engine(FakeEngine::new(4, 64 * KIB, true, MIB), 2);
            let va = BASE + 0x80..BASE + 512 * KIB;
            let source = fill_source(&mut rig, e, dir, va.clone(), 0, 8);
            let id = rig.submit(e, dir, va.clone(), 0, policy);
            rig.run();
            let s = rig.report(id).stats;
            assert!(destination(&rig, e, dir, va, 0) == source);
            assert_eq!(
                (s.retransmissions, s.retransmitted_bytes),
                (0, 0),
                "{policy}"
            );
            assert_eq!(s.resumes, rig.engines[e.0].resumes);
            // One stall per page, no duplicates: a stalled engine waits.
            assert_eq!(s.faults, s.fault_events);
            match policy {
                Policy::FaultAware => assert_eq!(s.resumes, 128),
                _ => assert!(s.resumes < 10, "prefetch should spare most stalls: {s}"),
            }
        }
    }
}

#[test]
fn transfers_on_two_streams_keep_their_faults_apart() {
    let mut rig = Rig::new(Config::default());
    rig.mem.region(BASE..BASE + 4 * MIB, true);
    let mut a = FakeEngine::new(1, 8 * KIB, false, MIB);
    a.burst = 3;
    let a = rig.add_engine(a, 3);
    let b = rig.add_engine(FakeEngine::new(2, 16 * KIB, false, MIB), 2);
    let mut jobs = Vec::new();
    for (i, (engine, dir)) in [
        (a, Direction::FromDevice),
        (b, Direction::ToDevice),
        (a, Direction::ToDevice),
        (b, Direction::FromDevice),
    ]
    .into_iter()
    .enumerate()
    {
        let va = BASE + i * 256 * KIB + 0x40..BASE + i * 256 * KIB + 100 * KIB;
        let dev = 0x100 + i * 128 * KIB;
        let source = fill_source(&mut rig, engine, dir, va.clone(), dev, i as u64 + 30);
        let id = rig.submit(engine, dir, va.clone(), dev as u64, Policy::FaultAware);
        jobs.push((id, engine, dir, va, dev, source));
    }
    rig.run();
    for (id, engine, dir, va, dev, source) in jobs {
        let s = rig.report(id).stats;
        // Each transfer saw exactly its own 25 cold pages, once each.
        assert_eq!(s.faults, 25, "{id:?}");
        assert_eq!(s.retransmitted_bytes, va.len() as u64);
        assert!(destination(&rig, engine, dir, va, dev) == source);
    }
    assert_eq!(rig.sched.stray_faults(), 0);
}

#[test]
fn a_fault_on_another_stream_does_not_touch_a_transfer_on_the_same_pages() {
    let mut rig = Rig::new(Config::default());
    rig.mem.region(BASE..BASE + MIB, true);
    let _a = rig.add_engine(FakeEngine::new(1, 16 * KIB, false, MIB), 4);
    let b = rig.add_engine(FakeEngine::new(2, 16 * KIB, false, MIB), 4);
    let va = BASE..BASE + 64 * KIB;
    rig.mem.make_warm(va.clone());
    let source = fill_source(&mut rig, b, Direction::ToDevice, va.clone(), 0, 1);
    let id = rig.submit(b, Direction::ToDevice, va.clone(), 0, Policy::FaultAware);
    rig.step();
    // Device 1 faults on the very pages device 2 is reading.
    assert_eq!(
        rig.sched
            .on_fault(&mut rig.mem, StreamId(1), BASE + 0x1000, Access::Read),
        FaultAction::Stray
    );
    assert_eq!(rig.sched.segment_state(id, 0), Some(SegmentState::InFlight));
    rig.run();
    let s = rig.report(id).stats;
    assert_eq!((s.faults, s.retransmissions), (0, 0));
    assert!(destination(&rig, b, Direction::ToDevice, va, 0) == source);
}

/// Walks one segment through the state machine of `dma::scheduler`, on an
/// aborting engine and on a stalling one.
#[test]
fn the_segment_state_machine_step_by_step() {
    for stalls in [false, true] {
        let mut rig = Rig::new(Config::default());
        rig.mem.region(BASE..BASE + MIB, true);
        let e = rig.add_engine(FakeEngine::new(1, 16 * KIB, stalls, MIB), 1);
        let va = BASE..BASE + 8 * KIB;
        rig.mem.make_warm(BASE + 4 * KIB..BASE + 8 * KIB);
        let id = rig.submit(e, Direction::FromDevice, va, 0, Policy::FaultAware);
        assert_eq!(rig.sched.transfer_state(id), Some(TransferState::Queued));

        rig.step(); // poll: cut into one segment, start it
        assert_eq!(
            rig.sched.transfer_state(id),
            Some(TransferState::Active {
                segments: 1,
                done: 0
            })
        );
        assert_eq!(rig.sched.segment_state(id, 0), Some(SegmentState::InFlight));

        // The device runs: the first page is not resident.
        let (mem, events) = (&mut rig.mem, &mut rig.events);
        rig.engines[e.0].execute(mem, events);
        let ev = rig.events.events[0];
        let action = rig
            .sched
            .on_fault(&mut rig.mem, ev.stream, ev.iova, ev.access);
        assert_eq!(
            action,
            FaultAction::Handled {
                segments: 1,
                prefetched: 0
            }
        );
        assert!(rig.mem.is_resident_page(BASE), "resolved during the drain");
        let again = rig
            .sched
            .on_fault(&mut rig.mem, ev.stream, ev.iova + 4, ev.access);
        assert_eq!(again, FaultAction::Duplicate);
        rig.events.events.clear();

        if stalls {
            assert_eq!(rig.sched.segment_state(id, 0), Some(SegmentState::Resume));
            rig.step(); // poll resumes it
            assert_eq!(rig.engines[e.0].resumes, 1);
        } else {
            assert_eq!(
                rig.sched.segment_state(id, 0),
                Some(SegmentState::FaultWait)
            );
            let done = rig.engines[e.0].take_completions();
            rig.sched.completed(e, done[0].0, done[0].1).unwrap();
            assert_eq!(
                rig.sched.segment_state(id, 0),
                Some(SegmentState::Retransmit)
            );
            rig.step(); // poll restarts the spoiled page only
            let last = rig.engines[e.0].started.last().unwrap().clone();
            assert_eq!((last.id.attempt, last.va()), (1, BASE..BASE + 4 * KIB));
            assert_eq!(rig.sched.segment_state(id, 0), Some(SegmentState::InFlight));
        }
        rig.run();
        let s = rig.report(id).stats;
        assert_eq!(s.faults, 1);
        assert_eq!(rig.sched.transfer_state(id), None, "reported, forgotten");
    }
}

/// Why the kernel must drain the SMMU event queue before handing
/// completions over: the other way round, the scheduler sees a clean
/// completion, reports the transfer done, and the fault arrives too late
/// (`Stray`). This test shows the broken order on purpose.
#[test]
fn a_completion_handed_over_before_the_drain_hides_the_fault() {
    let mut rig = Rig::new(Config::default());
    rig.mem.region(BASE..BASE + MIB, true);
    let e = rig.add_engine(FakeEngine::new(1, 16 * KIB, false, MIB), 1);
    let va = BASE..BASE + 4 * KIB;
    let source = fill_source(&mut rig, e, Direction::FromDevice, va.clone(), 0, 6);
    rig.submit(e, Direction::FromDevice, va.clone(), 0, Policy::FaultAware);
    rig.step();
    let (mem, events) = (&mut rig.mem, &mut rig.events);
    rig.engines[e.0].execute(mem, events);
    // Wrong order: completion first...
    let (seg, status) = rig.engines[e.0].take_completions()[0];
    rig.sched.completed(e, seg, status).unwrap();
    let mut engines: Vec<&mut dyn dma::Engine> = vec![&mut rig.engines[0]];
    rig.sched.poll(&mut engines, &mut rig.mem);
    assert!(rig.sched.take_finished()[0].1.is_ok(), "reported done...");
    // ...then the drain: the fault no longer matches anything.
    let ev = rig.events.events[0];
    let late = rig
        .sched
        .on_fault(&mut rig.mem, ev.stream, ev.iova, ev.access);
    assert_eq!(late, FaultAction::Stray);
    assert!(
        destination(&rig, e, Direction::FromDevice, va, 0) != source,
        "...with wrong data"
    );
}
