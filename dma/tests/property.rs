//! Property: whatever the sizes, offsets, segment limits, windows, device
//! speeds, resident pages, evictions and lost events, every transfer ends
//! byte-exact and nothing stays pinned. A few hundred deterministic
//! pseudo-random cases; a failing case prints its number to replay.

mod common;

use common::*;
use dma::{Policy, Stats};

const SLOT: usize = 96 * KIB;

fn one_case(case: u64) -> Stats {
    let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15 ^ (case + 1).wrapping_mul(0x1000_0000_01b3));
    let segments = [PAGE, 2 * PAGE, 3 * PAGE, 5000, 16 * KIB, 64 * KIB];
    let (mut rig, engines) = Rig::random(&mut rng, SLOT, &segments, &[1, 2, 3, 100]);
    // Random warm pages.
    let warm = rng.below(4);
    for p in 0..8 * SLOT / PAGE {
        if rng.below(4) < warm {
            rig.mem.make_warm(BASE + p * PAGE..BASE + p * PAGE + 1);
        }
    }
    let mut jobs = Vec::new();
    for slot in 0..1 + rng.below(6) as usize {
        let job = submit_random(&mut rig, &mut rng, &engines, (slot, SLOT), 3 * PAGE, 64);
        jobs.push(job);
    }
    rig.lose_events_for = rng.below(4) as usize;
    let evictions = rng.below(3);
    let mut evict_rng = Rng::new(rng.next_u64());
    rig.after_step = Some(Box::new(move |mem: &mut SimMemory, _| {
        for _ in 0..evictions {
            let p = BASE + evict_rng.below((8 * SLOT / PAGE) as u64) as usize * PAGE;
            mem.evict(p..p + 1);
        }
    }));
    rig.run();
    let mut total = Stats::default();
    for (id, engine, dir, va, dev, source) in jobs {
        let report = rig.report(id);
        assert!(
            destination(&rig, engine, dir, va.clone(), dev) == source,
            "case {case}: {:?} {dir:?} {va:x?} {}: data differs",
            report.policy,
            report.stats
        );
        if report.policy == Policy::Pin {
            assert_eq!(
                report.stats.faults, 0,
                "case {case}: a pinned transfer faulted"
            );
        }
        total.add(&report.stats);
    }
    assert_eq!(rig.mem.pinned_pages(), 0, "case {case}: pages left pinned");
    for e in &rig.engines {
        assert_eq!(
            e.queued(),
            0,
            "case {case}: engine still busy after the report"
        );
    }
    total
}

#[test]
fn random_transfers_end_byte_exact() {
    let mut total = Stats::default();
    for case in 0..300 {
        total.add(&one_case(case));
    }
    println!("{total}");
    // The cases did reach every path.
    assert!(total.faults > 0 && total.retransmissions > 0 && total.resumes > 0);
    assert!(total.lost_event_segments > 0 && total.pages_prefetched > 0 && total.pages_setup > 0);
}
