//! One segment's state machine (drawn in [`crate::scheduler`]): what it is
//! waiting for, which pages its running attempt faulted on, and what its
//! completion means.

use core::mem;
use core::ops::Range;

use crate::layout::Layout;
use crate::pages::PageSet;
use crate::scheduler::SegmentState;

/// How many times looser the bound on lost-event retransmissions is.
const LOST_EVENT_RETRY_FACTOR: u32 = 8;

/// One attempt of a segment on its engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Attempt {
    /// 0 for the first start, +1 per retransmission.
    pub(crate) number: u32,
    /// Positions this attempt covers (the whole segment, or the spoiled part
    /// of it for a retransmission).
    pub(crate) span: Range<usize>,
    /// Pages faulted on since the start (or, on stalling engines, since the
    /// last resume): the dedup set of fault events.
    pub(crate) faulted: PageSet,
    /// Fault events of the stream were lost while this attempt ran: treat
    /// every page as spoiled.
    pub(crate) suspect: bool,
    /// The engine stalls and `poll` owes it a resume.
    pub(crate) resume_due: bool,
}

/// Where a segment is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Never started.
    Queued,
    /// On the engine.
    InFlight(Attempt),
    /// Completed with these positions spoiled; waits to start again.
    Retransmit(Range<usize>),
    /// Completed with correct data.
    Done,
    /// The transfer failed; this segment will not run (again).
    Dropped,
}

/// What a clean engine completion of the running attempt means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Finish {
    /// The data is right.
    Done,
    /// These positions were spoiled and will be sent again.
    Retransmit(Range<usize>),
    /// Spoiled again, and the retry bound is reached.
    Exhausted(u32),
}

/// A segment of a transfer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Seg {
    /// The segment's positions (see [`crate::layout`]).
    pub(crate) range: Range<usize>,
    /// Retries taken (retransmissions, plus resumes on an already-faulted
    /// page).
    pub(crate) retries: u32,
    /// Retransmissions caused only by lost fault events.
    pub(crate) lost_event_retries: u32,
    /// Pages this segment faulted on in earlier rounds (stalling engines: a
    /// fault on one of them again is a retry, not progress).
    pub(crate) history: PageSet,
    pub(crate) phase: Phase,
    starts: u32,
}

impl Seg {
    pub(crate) fn new(range: Range<usize>) -> Self {
        Seg {
            range,
            retries: 0,
            lost_event_retries: 0,
            history: PageSet::default(),
            phase: Phase::Queued,
            starts: 0,
        }
    }

    /// The running attempt, if its span holds position `pos`.
    #[cfg(test)]
    pub(crate) fn attempt_at(&mut self, pos: usize) -> Option<&mut Attempt> {
        match &mut self.phase {
            Phase::InFlight(a) if a.span.contains(&pos) => Some(a),
            _ => None,
        }
    }

    /// What would start next: the span, and whether it is a retransmission.
    pub(crate) fn next_span(&self) -> Option<(Range<usize>, bool)> {
        match &self.phase {
            Phase::Queued => Some((self.range.clone(), false)),
            Phase::Retransmit(span) => Some((span.clone(), true)),
            _ => None,
        }
    }

    /// Number the next attempt will carry.
    pub(crate) fn next_attempt(&self) -> u32 {
        self.starts
    }

    /// The engine took `span`: returns the attempt number.
    pub(crate) fn started(&mut self, span: Range<usize>) -> u32 {
        let number = self.starts;
        self.starts += 1;
        self.phase = Phase::InFlight(Attempt {
            number,
            span,
            faulted: PageSet::default(),
            suspect: false,
            resume_due: false,
        });
        number
    }

    /// The running attempt ended `Ok`; `layout` maps its faulted pages to
    /// positions, `page` is the page size and `block` the engine's block.
    pub(crate) fn finish(
        &mut self,
        max_retries: u32,
        layout: &Layout,
        page: usize,
        block: usize,
    ) -> Finish {
        let Phase::InFlight(mut a) = mem::replace(&mut self.phase, Phase::Done) else {
            return Finish::Done;
        };
        let Some(spoiled) = spoiled(&a, layout, page, block) else {
            return Finish::Done;
        };
        // A retransmission forced only by lost events (no fault of this
        // attempt was seen) has its own, looser bound: its pages were all
        // made resident before it started, so it is spoiled again only while
        // other segments still overflow the event queue, which their own
        // (strict) bound ends.
        if a.suspect && a.faulted.is_empty() {
            if self.lost_event_retries >= max_retries * LOST_EVENT_RETRY_FACTOR {
                self.phase = Phase::Dropped;
                return Finish::Exhausted(self.retries + self.lost_event_retries);
            }
            self.lost_event_retries += 1;
        } else {
            if self.retries >= max_retries {
                self.phase = Phase::Dropped;
                return Finish::Exhausted(self.retries);
            }
            self.retries += 1;
        }
        a.faulted.drain_into(&mut self.history);
        self.phase = Phase::Retransmit(spoiled.clone());
        Finish::Retransmit(spoiled)
    }

    /// A stalled attempt is about to be resumed with `Retry`: counts faults
    /// on pages faulted before as retries. Past the bound, Err(retries taken
    /// so far).
    pub(crate) fn resume_retry(&mut self, max_retries: u32) -> Result<(), u32> {
        let Phase::InFlight(a) = &mut self.phase else {
            return Ok(());
        };
        a.resume_due = false;
        let retries = self.retries + a.faulted.drain_into(&mut self.history);
        if retries > max_retries {
            return Err(self.retries);
        }
        self.retries = retries;
        Ok(())
    }

    /// The public view of the phase.
    pub(crate) fn state(&self, stalls: bool, failing: bool) -> SegmentState {
        match &self.phase {
            Phase::Queued if failing => SegmentState::Failed,
            Phase::Queued => SegmentState::Queued,
            Phase::InFlight(_) if failing => SegmentState::Failed,
            Phase::InFlight(a) if a.resume_due => SegmentState::Resume,
            Phase::InFlight(a) if a.suspect || !a.faulted.is_empty() => {
                if stalls {
                    SegmentState::Resume
                } else {
                    SegmentState::FaultWait
                }
            }
            Phase::InFlight(_) => SegmentState::InFlight,
            Phase::Retransmit(_) => SegmentState::Retransmit,
            Phase::Done => SegmentState::Done,
            Phase::Dropped => SegmentState::Failed,
        }
    }
}

/// The positions of attempt `a` its faults spoiled: all it covers if
/// events were lost, else the smallest range holding every position whose
/// byte lies in a faulted page; widened to whole blocks of the engine
/// (counted from the transfer's start) and kept within the attempt.
fn spoiled(a: &Attempt, layout: &Layout, page: usize, block: usize) -> Option<Range<usize>> {
    let hull = if a.suspect {
        a.span.clone()
    } else {
        let (mut lo, mut hi) = (usize::MAX, 0);
        for p in a.faulted.iter() {
            for r in layout.page_positions(p, page, &a.span) {
                lo = lo.min(r.start);
                hi = hi.max(r.end);
            }
        }
        if lo >= hi {
            return None;
        }
        lo..hi
    };
    let origin = layout.positions().start;
    let block = block.max(1);
    let lo = origin + (hull.start - origin) / block * block;
    let hi = origin.saturating_add((hull.end - origin).div_ceil(block).saturating_mul(block));
    Some(lo.max(a.span.start)..hi.min(a.span.end))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: usize = 0x1000;

    /// A one-piece transfer over the segment: positions are addresses.
    fn finish(s: &mut Seg, max: u32) -> Finish {
        let layout = Layout::new(core::slice::from_ref(&s.range));
        s.finish(max, &layout, PAGE, 1)
    }

    fn faulted(seg: &mut Seg, va: usize) -> bool {
        seg.attempt_at(va)
            .expect("in flight")
            .faulted
            .insert(va - va % PAGE)
    }

    #[test]
    fn clean_completion_is_done() {
        let mut s = Seg::new(0x1000..0x5000);
        assert_eq!(s.next_span(), Some((0x1000..0x5000, false)));
        assert_eq!(s.started(0x1000..0x5000), 0);
        assert_eq!(finish(&mut s, 8), Finish::Done);
        assert_eq!(s.next_span(), None);
    }

    #[test]
    fn only_the_spoiled_pages_are_retransmitted() {
        let mut s = Seg::new(0x1800..0x5000);
        s.started(0x1800..0x5000);
        assert!(faulted(&mut s, 0x1900));
        assert!(!faulted(&mut s, 0x1904), "same page: duplicate");
        assert!(faulted(&mut s, 0x2010));
        assert_eq!(finish(&mut s, 8), Finish::Retransmit(0x1800..0x3000));
        assert_eq!(s.next_span(), Some((0x1800..0x3000, true)));
        assert_eq!(s.started(0x1800..0x3000), 1);
        assert!(
            s.attempt_at(0x4000).is_none(),
            "outside the retransmitted span"
        );
        assert_eq!(finish(&mut s, 8), Finish::Done);
    }

    #[test]
    fn suspect_attempts_retransmit_everything_and_retries_are_bounded() {
        // Lost events alone: a looser bound (max_retries * LOST_EVENT_RETRY_FACTOR).
        let bound = 2 * LOST_EVENT_RETRY_FACTOR;
        let mut s = Seg::new(0x1000..0x3000);
        for round in 0..=bound {
            s.started(0x1000..0x3000);
            if let Phase::InFlight(a) = &mut s.phase {
                a.suspect = true;
            }
            let f = finish(&mut s, 2);
            if round < bound {
                assert_eq!(f, Finish::Retransmit(0x1000..0x3000));
            } else {
                assert_eq!(f, Finish::Exhausted(bound));
            }
        }
        assert_eq!(s.phase, Phase::Dropped);
    }

    #[test]
    fn faulted_suspect_attempts_count_against_the_strict_bound() {
        let mut s = Seg::new(0x1000..0x3000);
        for round in 0..3 {
            s.started(0x1000..0x3000);
            faulted(&mut s, 0x1000);
            if let Phase::InFlight(a) = &mut s.phase {
                a.suspect = true;
            }
            let f = finish(&mut s, 2);
            if round < 2 {
                assert_eq!(f, Finish::Retransmit(0x1000..0x3000));
            } else {
                assert_eq!(f, Finish::Exhausted(2));
            }
        }
    }

    #[test]
    fn a_fault_in_a_middle_piece_spoils_only_its_positions() {
        // 0x100 header bytes, a value at an odd address over two pages, a
        // 0x10-byte trailer in the header's page: positions from 0x1000.
        let layout = Layout::new(&[0x1000..0x1100, 0x8_0ff3..0x8_2ff3, 0x1100..0x1110]);
        let all = layout.positions();
        let mut s = Seg::new(all.clone());
        s.started(all.clone());
        assert!(faulted_at(&mut s, &layout, 0x8_1000));
        // The page 0x8_1000 holds value bytes 0xd..0x100d: positions
        // 0x110d..0x210d; on 512-byte blocks from 0x1000: 0x1000..0x2200.
        let mut byte = s.clone();
        assert_eq!(
            byte.finish(8, &layout, PAGE, 1),
            Finish::Retransmit(0x110d..0x210d)
        );
        assert_eq!(
            s.finish(8, &layout, PAGE, 512),
            Finish::Retransmit(0x1000..0x2200)
        );
    }

    fn faulted_at(s: &mut Seg, layout: &Layout, va: usize) -> bool {
        let pos = layout.positions_of(va).next().expect("in the transfer");
        s.attempt_at(pos)
            .expect("in flight")
            .faulted
            .insert(va - va % PAGE)
    }

    #[test]
    fn resumes_count_only_repeated_pages() {
        let mut s = Seg::new(0x0..0x4000);
        s.started(0x0..0x4000);
        for va in [0x0, 0x1000, 0x2000] {
            faulted(&mut s, va);
            assert_eq!(s.resume_retry(1), Ok(()), "new page: progress");
        }
        faulted(&mut s, 0x1000);
        assert_eq!(s.resume_retry(1), Ok(()));
        faulted(&mut s, 0x1000);
        assert_eq!(s.resume_retry(1), Err(1));
    }
}
