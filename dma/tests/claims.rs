//! The two-phase fault path: `claim` under the kernel's lock, the pages
//! made resident outside it, `resolved` under it again, with anything in
//! between (other claims, completions believed, lost events, polls), as
//! when several cores run the DMA service at once.
//!
//! First the invariants one at a time, as examples; then a property:
//! random interleavings of device steps, completions observed and
//! believed, drains and claims, resolutions (in any order, late, some
//! failing), lost events, evictions and polls. Every transfer ends
//! byte-exact or with the error a failed resolution gave it; no
//! retransmission or resume starts on a page whose claim is outstanding;
//! no transfer is reported while it holds a claim; no claim is lost.

mod common;

use std::collections::BTreeSet;
use std::ops::Range;

use common::*;
use dma::{
    Access, Claim, ClaimOutcome, Completion, Config, Direction, EngineId, MemError, Policy,
    Resolution, Resume, SegmentId, SegmentState, Stats, StreamId, TransferError, TransferId,
    TransferState, UnknownClaim,
};

/// Runs the engines and observes their completions (one device step).
fn run_devices(rig: &mut Rig) -> Vec<(EngineId, SegmentId, Completion)> {
    let mut observed = Vec::new();
    for (i, e) in rig.engines.iter_mut().enumerate() {
        e.execute(&mut rig.mem, &mut rig.events);
        observed.extend(
            e.take_completions()
                .into_iter()
                .map(|(s, c)| (EngineId(i), s, c)),
        );
    }
    observed
}

/// Drains the event queue into claims (the first phase only).
fn drain_claims(rig: &mut Rig) -> Vec<Claim> {
    let mut claims = Vec::new();
    for ev in std::mem::take(&mut rig.events.events) {
        if let ClaimOutcome::Claimed(c) = rig.sched.claim(&rig.mem, ev.stream, ev.iova, ev.access) {
            claims.push(c);
        }
    }
    claims
}

fn believe(rig: &mut Rig, observed: Vec<(EngineId, SegmentId, Completion)>) {
    for (engine, seg, status) in observed {
        rig.sched
            .completed(engine, seg, status)
            .expect("completion of a known segment");
    }
}

/// A cold transfer on an aborting engine: the device spoils its first
/// segment and completes it Ok.
fn spoiled_segment(stalls: bool) -> (Rig, TransferId, Vec<(EngineId, SegmentId, Completion)>) {
    let mut rig = Rig::new(Config::default());
    rig.mem.region(BASE..BASE + MIB, true);
    let e = rig.add_engine(FakeEngine::new(1, 4 * PAGE, stalls, MIB), 1);
    let va = BASE..BASE + 4 * PAGE;
    let source = fill_source(&mut rig, e, Direction::ToDevice, va.clone(), 0, 7);
    let id = rig.submit(e, Direction::ToDevice, va, 0, Policy::FaultAware);
    assert_eq!(source.len(), 4 * PAGE);
    rig.poll();
    let observed = run_devices(&mut rig);
    (rig, id, observed)
}

#[test]
fn a_completion_believed_under_a_claim_retransmits_only_after_resolved() {
    let (mut rig, id, observed) = spoiled_segment(false);
    assert_eq!(observed.len(), 1, "the aborting device completed Ok");
    let claims = drain_claims(&mut rig);
    assert_eq!(claims.len(), 4, "one claim per page");
    assert!(claims
        .iter()
        .all(|c| c.page.is_some() && c.window.is_empty()));
    // Another core believes the completion before this one resolves.
    believe(&mut rig, observed);
    assert_eq!(
        rig.sched.segment_state(id, 0),
        Some(SegmentState::Retransmit)
    );
    rig.poll();
    assert_eq!(rig.engines[0].starts, 1, "no retransmission under a claim");
    // Resolving three of four pages is not enough: the retransmission
    // covers the fourth.
    for c in &claims[..3] {
        let r = c.resolve(&mut rig.mem);
        rig.sched.resolved(c.id, r).unwrap();
    }
    rig.poll();
    assert_eq!(rig.engines[0].starts, 1);
    let last = claims[3].resolve(&mut rig.mem);
    rig.sched.resolved(claims[3].id, last).unwrap();
    assert_eq!(rig.sched.outstanding_claims(), 0);
    rig.poll();
    assert_eq!(rig.engines[0].starts, 2, "retransmitted once resolved");
    rig.run();
    assert_eq!(rig.report(id).stats.retransmissions, 1);
}

#[test]
fn a_stalled_segment_is_resumed_only_after_its_claim_resolves() {
    let (mut rig, id, observed) = spoiled_segment(true);
    assert!(observed.is_empty(), "the stalling device waits");
    let claims = drain_claims(&mut rig);
    assert_eq!(claims.len(), 1, "it stalled on the first access");
    // Lost events ask for a resume too; the claim still holds it back.
    rig.sched.events_lost(StreamId(1));
    rig.poll();
    assert!(rig.engines[0].resumed.is_empty());
    assert_eq!(rig.sched.segment_state(id, 0), Some(SegmentState::Resume));
    let r = claims[0].resolve(&mut rig.mem);
    rig.sched.resolved(claims[0].id, r).unwrap();
    rig.poll();
    assert_eq!(rig.engines[0].resumed.len(), 1);
    assert_eq!(rig.engines[0].resumed[0].1, Resume::Retry);
    rig.run();
    let report = rig.report(id);
    assert_eq!(report.stats.lost_event_segments, 1);
}

#[test]
fn an_unresolvable_claim_fails_the_transfer_once_it_is_reported() {
    let (mut rig, id, observed) = spoiled_segment(false);
    let claims = drain_claims(&mut rig);
    believe(&mut rig, observed);
    let failed = Resolution {
        page: Err(MemError::OutOfMemory),
        prefetched: 0,
    };
    rig.sched.resolved(claims[1].id, failed).unwrap();
    assert!(matches!(
        rig.sched.transfer_state(id),
        Some(TransferState::Failing(_))
    ));
    rig.poll();
    assert!(
        rig.finished.is_empty(),
        "not reported while it holds claims"
    );
    for c in [&claims[0], &claims[2], &claims[3]] {
        let r = c.resolve(&mut rig.mem);
        rig.sched.resolved(c.id, r).unwrap();
    }
    assert_eq!(rig.sched.resolved(claims[0].id, failed), Err(UnknownClaim));
    rig.poll();
    assert_eq!(
        rig.result(id),
        &Err(TransferError::Unresolvable {
            va: BASE + PAGE,
            error: MemError::OutOfMemory
        })
    );
}

#[test]
fn a_resident_page_is_claimed_with_nothing_to_resolve() {
    let (mut rig, _, _) = spoiled_segment(false);
    rig.mem.make_warm(BASE..BASE + PAGE);
    let claims = drain_claims(&mut rig);
    assert_eq!(claims[0].page, None, "resident by the time it is claimed");
    assert_eq!(claims[1].page, Some(BASE + PAGE));
    let again = rig
        .sched
        .claim(&rig.mem, StreamId(1), BASE + 4, Access::Read);
    assert_eq!(again, ClaimOutcome::Duplicate);
    let other = rig.sched.claim(&rig.mem, StreamId(9), BASE, Access::Read);
    assert_eq!(other, ClaimOutcome::Stray);
}

/// Pages of `range` (page-aligned addresses).
fn pages_of(range: &Range<usize>) -> impl Iterator<Item = usize> {
    (range.start - range.start % PAGE..range.end).step_by(PAGE)
}

/// The interleaving driver: the kernel's steps in random order, as cores
/// would run them, under the ordering rule (a completion is believed only
/// after a drain that began after it was observed).
struct Interleaving {
    rig: Rig,
    rng: Rng,
    /// Observed completions, and whether a drain began since.
    observed: Vec<((EngineId, SegmentId, Completion), bool)>,
    /// Claims made, not yet resolved by the "kernel".
    claims: Vec<Claim>,
    /// Resolved, not yet reported to the scheduler.
    resolutions: Vec<(Claim, Resolution)>,
    /// Reported claims (a second report must be refused).
    reported: Vec<dma::ClaimId>,
    /// Resolutions that failed on purpose, per 1000.
    fail_per_mille: u64,
    /// Pages a failed resolution named.
    failed_pages: BTreeSet<usize>,
    made: u64,
    /// Each transfer's memory.
    memory: Vec<(TransferId, Range<usize>)>,
}

impl Interleaving {
    /// Pages of (stream, page) whose claims are outstanding.
    fn claimed(&self) -> BTreeSet<(StreamId, usize)> {
        let of = |c: &Claim| (c.stream, c.iova - c.iova % PAGE);
        self.claims
            .iter()
            .map(of)
            .chain(self.resolutions.iter().map(|(c, _)| of(c)))
            .collect()
    }

    fn drain(&mut self) {
        for o in &mut self.observed {
            o.1 = true;
        }
        for ev in std::mem::take(&mut self.rig.events.events) {
            match self
                .rig
                .sched
                .claim(&self.rig.mem, ev.stream, ev.iova, ev.access)
            {
                ClaimOutcome::Claimed(c) => {
                    self.made += 1;
                    self.claims.push(c);
                }
                ClaimOutcome::Duplicate | ClaimOutcome::Stray => {}
            }
        }
        if std::mem::take(&mut self.rig.events.overflowed) {
            for s in [StreamId(0), StreamId(1)] {
                self.rig.sched.events_lost(s);
            }
        }
    }

    fn resolve_one(&mut self) {
        if self.claims.is_empty() {
            return;
        }
        let i = self.rng.below(self.claims.len() as u64) as usize;
        let c = self.claims.swap_remove(i);
        let r = if c.page.is_some() && self.rng.below(1000) < self.fail_per_mille {
            self.failed_pages.insert(c.iova - c.iova % PAGE);
            Resolution {
                page: Err(MemError::OutOfMemory),
                prefetched: 0,
            }
        } else {
            c.resolve(&mut self.rig.mem)
        };
        self.resolutions.push((c, r));
    }

    fn report_one(&mut self) {
        if self.resolutions.is_empty() {
            return;
        }
        let i = self.rng.below(self.resolutions.len() as u64) as usize;
        let (c, r) = self.resolutions.swap_remove(i);
        assert_eq!(self.rig.sched.resolved(c.id, r), Ok(()));
        self.reported.push(c.id);
        if self.rng.below(8) == 0 {
            let old = self.reported[self.rng.below(self.reported.len() as u64) as usize];
            assert_eq!(self.rig.sched.resolved(old, r), Err(UnknownClaim));
        }
    }

    fn believe(&mut self) {
        let (ready, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.observed)
            .into_iter()
            .partition(|o| o.1);
        self.observed = waiting;
        believe(&mut self.rig, ready.into_iter().map(|o| o.0).collect());
    }

    /// Polls, and checks what it started, resumed and reported against
    /// the claims outstanding.
    fn poll(&mut self, case: u64) {
        let before: Vec<(usize, usize)> = (self.rig.engines.iter())
            .map(|e| (e.started.len(), e.resumed.len()))
            .collect();
        let claimed = self.claimed();
        let known: BTreeSet<TransferId> = self.rig.finished.keys().copied().collect();
        self.rig.poll();
        for (e, &(started, resumed)) in self.rig.engines.iter().zip(&before) {
            let stream = e.caps.stream;
            let touches = |seg: &dma::Segment| {
                seg.pieces
                    .iter()
                    .flat_map(pages_of)
                    .any(|p| claimed.contains(&(stream, p)))
            };
            for seg in &e.started[started..] {
                assert!(
                    seg.id.attempt == 0 || !touches(seg),
                    "case {case}: retransmission {:?} under a claim",
                    seg.id
                );
            }
            for (seg, how) in &e.resumed[resumed..] {
                assert!(
                    *how == Resume::Abort || !touches(seg),
                    "case {case}: resume of {:?} under a claim",
                    seg.id
                );
            }
        }
        for id in self.rig.finished.keys().filter(|id| !known.contains(id)) {
            let (_, va) = self.memory.iter().find(|m| m.0 == *id).expect("submitted");
            assert!(
                !pages_of(va).any(|p| claimed.iter().any(|&(_, c)| c == p)),
                "case {case}: {id:?} reported while it holds a claim"
            );
        }
    }

    /// One random kernel (or device) step.
    fn random_step(&mut self, case: u64) {
        match self.rng.below(16) {
            0..=2 => {
                let observed = run_devices(&mut self.rig);
                self.observed
                    .extend(observed.into_iter().map(|o| (o, false)));
            }
            3 | 4 => self.drain(),
            5 | 6 => self.believe(),
            7..=9 => self.resolve_one(),
            10 | 11 => self.report_one(),
            12 | 13 => self.poll(case),
            14 => {
                let p = BASE + self.rng.below((8 * SLOT / PAGE) as u64) as usize * PAGE;
                self.rig.mem.evict(p..p + 1);
            }
            _ => self.rig.events.lose = self.rng.below(4) == 0,
        }
    }

    /// Every step once, in the service's order, claims resolved at once:
    /// what ends a case whose random part is over.
    fn fair_step(&mut self, case: u64) {
        self.rig.events.lose = false;
        let observed = run_devices(&mut self.rig);
        self.observed
            .extend(observed.into_iter().map(|o| (o, false)));
        self.drain();
        while !self.claims.is_empty() {
            self.resolve_one();
        }
        while !self.resolutions.is_empty() {
            self.report_one();
        }
        self.believe();
        self.poll(case);
    }
}

const SLOT: usize = 64 * KIB;

/// Runs one case: claims made, transfers failed, sums of the others.
fn interleaved_case(case: u64) -> (u64, u64, Stats) {
    let mut rng = Rng::new(0x2545_f491_4f6c_dd1d ^ (case + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let segments = [PAGE, 3 * PAGE, 5000, 16 * KIB];
    let (mut rig, engines) = Rig::random(&mut rng, SLOT, &segments, &[1, 2, 100]);
    for p in 0..8 * SLOT / PAGE {
        if rng.below(4) == 0 {
            rig.mem.make_warm(BASE + p * PAGE..BASE + p * PAGE + 1);
        }
    }
    let mut jobs = Vec::new();
    for slot in 0..1 + rng.below(5) as usize {
        let job = submit_random(&mut rig, &mut rng, &engines, (slot, SLOT), 2 * PAGE, 0);
        jobs.push(job);
    }
    let fail_per_mille = [0, 0, 5, 30][rng.below(4) as usize];
    let mut run = Interleaving {
        rig,
        rng: Rng::new(rng.next_u64()),
        observed: Vec::new(),
        claims: Vec::new(),
        resolutions: Vec::new(),
        reported: Vec::new(),
        fail_per_mille,
        failed_pages: BTreeSet::new(),
        made: 0,
        memory: jobs.iter().map(|j| (j.0, j.3.clone())).collect(),
    };
    let mut steps = 0;
    while run.rig.sched.unfinished() > 0 {
        steps += 1;
        assert!(steps < 100_000, "case {case}: no progress");
        if steps < 3_000 {
            run.random_step(case);
        } else {
            run.fair_step(case);
        }
    }
    assert_eq!(
        run.rig.sched.outstanding_claims(),
        0,
        "case {case}: claims left"
    );
    assert!(
        run.claims.is_empty() && run.resolutions.is_empty(),
        "case {case}: a finished transfer left claims unresolved"
    );
    assert_eq!(
        run.reported.len() as u64,
        run.made,
        "case {case}: a claim lost"
    );
    for (id, engine, dir, va, dev, source) in jobs {
        match run.rig.result(id) {
            Ok(_) => assert!(
                destination(&run.rig, engine, dir, va.clone(), dev) == source,
                "case {case}: {dir:?} {va:x?}: data differs"
            ),
            Err(TransferError::Unresolvable { va: page, error }) => {
                assert_eq!(*error, MemError::OutOfMemory, "case {case}");
                assert!(
                    run.failed_pages.contains(page) && va.start < page + PAGE && *page < va.end,
                    "case {case}: failed on {page:#x}, which no resolution failed"
                );
            }
            Err(e) => panic!("case {case}: {id:?} failed: {e}"),
        }
    }
    assert_eq!(
        run.rig.mem.pinned_pages(),
        0,
        "case {case}: pages left pinned"
    );
    let mut total = Stats::default();
    for report in run.rig.finished.values().flatten() {
        total.add(&report.stats);
    }
    let failed = run.rig.finished.values().filter(|r| r.is_err()).count() as u64;
    (run.made, failed, total)
}

#[test]
fn random_interleavings_of_claims_end_byte_exact_or_with_the_resolution_error() {
    let (mut claims, mut failed, mut total) = (0, 0, Stats::default());
    for case in 0..400 {
        let (c, f, stats) = interleaved_case(case);
        claims += c;
        failed += f;
        total.add(&stats);
    }
    println!("{claims} claims, {failed} transfers failed by a resolution; {total}");
    // The cases did reach both endings, and every path.
    assert!(claims > 1000 && failed > 0);
    assert!(total.retransmissions > 0 && total.resumes > 0 && total.lost_event_segments > 0);
    assert!(total.pages_prefetched > 0);
}
