//! Gather/scatter transfers: several pieces of memory moved as one run of
//! device bytes, through faults, on engines that take several pieces per
//! segment (NVMe SGLs) and on engines that take one (the scheduler cuts).

mod common;

use std::ops::Range;

use common::*;
use dma::{Config, Direction, Policy};

/// A log-record-like list: a 30-byte header, an 8 KiB value at an odd
/// address in its own region, a 2-byte trailer right after the header, and
/// a small second value; padded with a last piece to a multiple of 512.
fn pieces() -> Vec<Range<usize>> {
    let value = BASE + 0x10_0000 + 3;
    let small = BASE + 0x20_0000 + 0x7f1;
    let header = BASE..BASE + 30;
    let trailer = BASE + 30..BASE + 32;
    let used: usize = 30 + 8192 + 2 + 100;
    let pad = used.next_multiple_of(512) - used;
    vec![
        header,
        value..value + 8192,
        trailer,
        small..small + 100,
        BASE + 64..BASE + 64 + pad,
    ]
}

fn len(pieces: &[Range<usize>]) -> usize {
    pieces.iter().map(|p| p.len()).sum()
}

/// A machine with the pieces' memory filled (and warm), the given engine,
/// and the bytes the device should end up with.
fn machine(engine: FakeEngine) -> (Rig, dma::EngineId, Vec<u8>) {
    let mut rig = Rig::new(Config::default());
    rig.mem.region(BASE..BASE + 0x30_0000, true);
    let e = rig.add_engine(engine, 4);
    let mut expected = Vec::new();
    for (i, p) in pieces().iter().enumerate() {
        let bytes = random_bytes(&mut Rng::new(i as u64 + 1), p.len());
        rig.mem.store(p.start, &bytes);
        expected.extend_from_slice(&bytes);
    }
    for p in pieces() {
        rig.mem.make_warm(p);
    }
    (rig, e, expected)
}

#[test]
fn a_fault_in_a_middle_piece_retransmits_only_what_it_spoiled() {
    // An NVMe-like engine: 16 pieces per command, 512-byte blocks.
    let (mut rig, e, expected) = machine(FakeEngine::new(1, 64 * KIB, false, MIB).gather(16, 512));
    // The value's second page was evicted: the device reads zeros there.
    let evicted = BASE + 0x10_1000;
    rig.mem.evict(evicted..evicted + PAGE);
    let id = rig.submit_gather(
        e,
        Direction::ToDevice,
        &pieces(),
        0x2000,
        Policy::FaultAware,
    );
    rig.run();
    let report = rig.report(id).stats;
    let device = &rig.engines[e.0].device;
    assert!(
        device[0x2000..0x2000 + expected.len()] == expected[..],
        "data exact"
    );
    assert_eq!(report.segments, 1, "one command for the whole list");
    assert_eq!(report.faults, 1);
    assert_eq!(report.retransmissions, 1);
    // The evicted page holds value bytes 0xffd..0x1ffd, stream bytes
    // 30 + that = 0x101b..0x201b; widened to 512-byte blocks 0x1000..0x2200
    // (the end): the value's tail, the trailer, the small value, the pad.
    let again = rig.engines[e.0].started.last().unwrap().clone();
    assert_eq!(again.id.attempt, 1);
    assert_eq!(again.device_addr, 0x2000 + 0x1000);
    assert_eq!(report.retransmitted_bytes, 0x1200);
    let mut tail = pieces().split_off(2);
    tail.insert(0, pieces()[1].start + 0x1000 - 30..pieces()[1].end);
    assert_eq!(again.pieces, tail);
}

#[test]
fn engines_of_one_piece_see_the_list_cut_at_piece_boundaries() {
    let (mut rig, e, expected) = machine(FakeEngine::new(1, 64 * KIB, false, MIB));
    rig.mem.evict(BASE + 0x10_0000..BASE + 0x10_3000);
    let id = rig.submit_gather(
        e,
        Direction::ToDevice,
        &pieces(),
        0,
        Policy::FaultAwarePrefetch,
    );
    rig.run();
    assert!(rig.engines[e.0].device[..expected.len()] == expected[..]);
    let firsts: Vec<Range<usize>> = rig.engines[e.0]
        .started
        .iter()
        .filter(|s| s.id.attempt == 0)
        .map(|s| s.va())
        .collect();
    assert_eq!(firsts, pieces(), "one segment per piece");
    let again = rig.engines[e.0].started.iter().filter(|s| s.id.attempt > 0);
    assert!(
        again.clone().all(|s| s.pieces.len() == 1),
        "retransmissions too"
    );
    // The probe saw a warm header; the value's three pages faulted once
    // each, and only the value's segment went again.
    let stats = rig.report(id).stats;
    assert_eq!((stats.faults, stats.retransmissions), (3, 1));
    assert_eq!(stats.retransmitted_bytes, 8192);
}

#[test]
fn scatter_reads_land_in_every_piece_through_faults() {
    for policy in Policy::ALL {
        let (mut rig, e, _) = machine(FakeEngine::new(1, 4 * KIB, false, MIB).gather(4, 512));
        let total = len(&pieces());
        let source = random_bytes(&mut Rng::new(99), total);
        rig.engines[e.0].device[..total].copy_from_slice(&source);
        rig.mem.evict(BASE..BASE + 0x30_0000);
        let id = rig.submit_gather(e, Direction::FromDevice, &pieces(), 0, policy);
        rig.run();
        let mut landed = Vec::new();
        for p in pieces() {
            landed.extend(rig.mem.load(p));
        }
        assert!(landed == source, "{policy}");
        assert_eq!(rig.mem.pinned_pages(), 0, "{policy}: unpinned at the end");
        assert!(
            rig.report(id).stats.segments >= 3,
            "{policy}: 4 KiB commands"
        );
    }
}
