//! One unfinished transfer: its segments, its progress, its first error,
//! and the helpers every path (start, fault, completion) shares.

use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::ops::Range;

use crate::engine::{Direction, EngineCaps, EngineId, Segment, SegmentId, StreamId};
use crate::layout::Layout;
use crate::memory::{Access, Memory};
use crate::plan::{Cut, Plan};
use crate::prefetch::Prefetcher;
use crate::scheduler::Config;
use crate::segment::{Attempt, Phase, Seg};
use crate::stats::Stats;
use crate::transfer::{Transfer, TransferError, TransferId};

/// A submitted transfer that has not been reported yet.
pub(super) struct Active {
    pub(super) id: TransferId,
    pub(super) engine: EngineId,
    pub(super) stream: StreamId,
    /// The engine stalls on faults (and is resumed) instead of aborting.
    pub(super) stalls: bool,
    max_segment: usize,
    max_pieces: usize,
    /// The engine's block (see [`EngineCaps::block`]).
    pub(super) block: usize,
    pub(super) transfer: Transfer,
    /// Where the transfer's positions lie in memory.
    pub(super) layout: Layout,
    /// Page size, known from the first `poll` on.
    pub(super) page: usize,
    plan: Option<Plan>,
    pub(super) segs: Vec<Seg>,
    /// Next never-started segment.
    pub(super) next: usize,
    /// Segments waiting to retransmit, oldest first.
    pub(super) retransmit: VecDeque<usize>,
    pub(super) done: usize,
    pub(super) in_flight: usize,
    /// The first error; the transfer is failing once set.
    pub(super) error: Option<TransferError>,
    /// Page runs the `Pin` policy pinned, to unpin at the end.
    pub(super) pinned: Vec<Range<usize>>,
    pub(super) prefetch: Prefetcher,
    /// `FaultAwarePrefetch` on an aborting engine found non-resident pages
    /// (in its first segment, or by a fault later): each new segment has its
    /// pages made resident right before it starts (see [`crate::prefetch`]).
    pub(super) cold: bool,
    /// Segments `0..prepared` have had their pages made resident (cold only).
    pub(super) prepared: usize,
    pub(super) stats: Stats,
    pub(super) began_at: u64,
    /// Pages of outstanding claims this transfer holds (a few at most: a
    /// list, the first two inline, so a transfer's first claims allocate
    /// nothing), with how many of its segments hold each: nothing touching
    /// them is retransmitted or resumed, and the transfer is not reported,
    /// until they are resolved.
    pub(super) claimed: smallvec::SmallVec<[(usize, usize); 2]>,
}

impl Active {
    pub(super) fn new(
        id: TransferId,
        engine: EngineId,
        caps: &EngineCaps,
        transfer: Transfer,
        config: &Config,
    ) -> Self {
        let stats = Stats {
            bytes_requested: transfer.len() as u64,
            ..Stats::default()
        };
        Active {
            id,
            engine,
            stream: caps.stream,
            stalls: caps.can_resume,
            max_segment: caps.max_segment,
            max_pieces: caps.max_pieces,
            block: caps.block,
            layout: Layout::new(&transfer.pieces),
            transfer,
            page: 0,
            plan: None,
            segs: Vec::new(),
            next: 0,
            retransmit: VecDeque::new(),
            done: 0,
            in_flight: 0,
            error: None,
            pinned: Vec::new(),
            prefetch: Prefetcher::new(&config.prefetch),
            cold: false,
            prepared: 0,
            stats,
            began_at: 0,
            claimed: smallvec::SmallVec::new(),
        }
    }

    /// Whether the first `poll` has cut it into segments (and set it up).
    pub(super) fn begun(&self) -> bool {
        self.plan.is_some()
    }

    /// Cuts the transfer into segments and runs its policy's setup.
    pub(super) fn begin(&mut self, mem: &mut dyn Memory) {
        self.page = mem.page_size();
        let cut = Cut {
            max_segment: self.max_segment,
            max_pieces: self.max_pieces,
            block: self.block,
            page: self.page,
        };
        let plan = Plan::new(&self.layout, cut);
        self.segs = (0..plan.count())
            .map(|i| Seg::new(plan.segment(i)))
            .collect();
        self.plan = Some(plan);
        self.began_at = mem.now();
        let all = self.layout.positions();
        let setup = match self.transfer.policy {
            crate::Policy::Pin => {
                let mut pinned = Ok(());
                for run in self.layout.page_runs(self.page) {
                    if let Err(e) = mem.pin(run.clone()) {
                        pinned = Err(TransferError::Pin(e));
                        break;
                    }
                    self.pinned.push(run);
                }
                match pinned {
                    Ok(()) => ensure_resident(mem, &self.layout, &all, self.access()),
                    Err(e) => {
                        // On error nothing stays pinned.
                        for run in self.pinned.drain(..) {
                            mem.unpin(run);
                        }
                        Err(e)
                    }
                }
            }
            crate::Policy::Prefault => ensure_resident(mem, &self.layout, &all, self.access()),
            crate::Policy::FaultAware => Ok(0),
            crate::Policy::FaultAwarePrefetch => {
                // The probe: residency of the first segment's pages only, so
                // O(one segment) whatever the buffer size. A stalling engine
                // loses no data to a fault, but each fault still parks it for
                // a trip through the fault service: it is prepared for too.
                let access = self.access();
                self.cold = self.segs.first().is_some_and(|s| {
                    self.layout
                        .pages(s.range.clone(), self.page)
                        .any(|va| !mem.is_resident(va, access))
                });
                Ok(0)
            }
        };
        match setup {
            Ok(pages) => self.stats.pages_setup += pages,
            Err(e) => self.fail(e),
        }
        self.stats.setup_ns = mem.now().saturating_sub(self.began_at);
    }

    /// The access the device makes to the buffer.
    pub(super) fn access(&self) -> Access {
        match self.transfer.direction {
            Direction::ToDevice => Access::Read,
            Direction::FromDevice => Access::Write,
        }
    }

    /// Fails the transfer with `error` (the first error wins): segments that
    /// have not started never will, and stalled ones are owed an abort.
    pub(super) fn fail(&mut self, error: TransferError) {
        if self.error.is_none() {
            self.error = Some(error);
        }
        self.retransmit.clear();
        self.next = self.segs.len();
        for seg in &mut self.segs {
            match &mut seg.phase {
                Phase::Queued | Phase::Retransmit(_) => seg.phase = Phase::Dropped,
                Phase::InFlight(a) if self.stalls && (a.suspect || !a.faulted.is_empty()) => {
                    a.resume_due = true
                }
                _ => {}
            }
        }
    }

    /// The segments whose running attempt moves the byte at address `va`
    /// (usually one, kept inline; more if pieces overlap), each once, with
    /// the position at which it does.
    pub(super) fn running_at(&self, va: usize) -> smallvec::SmallVec<[(usize, usize); 2]> {
        let mut found = smallvec::SmallVec::<[(usize, usize); 2]>::new();
        let Some(plan) = self.plan.as_ref() else {
            return found;
        };
        for pos in self.layout.positions_of(va) {
            let Some(i) = plan.index_of(pos) else {
                continue;
            };
            let running =
                matches!(&self.segs[i].phase, Phase::InFlight(a) if a.span.contains(&pos));
            if running && !found.iter().any(|&(j, _)| j == i) {
                found.push((i, pos));
            }
        }
        found
    }

    /// The running attempt of segment `i`.
    pub(super) fn attempt(&mut self, i: usize) -> Option<&mut Attempt> {
        match &mut self.segs.get_mut(i)?.phase {
            Phase::InFlight(a) => Some(a),
            _ => None,
        }
    }

    /// The segment that should start next on the engine, if any: the
    /// oldest retransmission whose pages no claim holds, else the next new
    /// segment.
    pub(super) fn next_to_start(&self) -> Option<usize> {
        if self.error.is_some() {
            return None;
        }
        let ready = self.retransmit.iter().copied().find(|&i| {
            self.segs[i]
                .next_span()
                .is_some_and(|(span, _)| !self.waits_on_claim(&span))
        });
        ready.or((self.next < self.segs.len()).then_some(self.next))
    }

    /// Whether the memory of positions `span` touches a page of an
    /// outstanding claim of this transfer.
    pub(super) fn waits_on_claim(&self, span: &Range<usize>) -> bool {
        !self.claimed.is_empty()
            && self
                .layout
                .pages(span.clone(), self.page)
                .any(|p| self.claimed.iter().any(|&(c, _)| c == p))
    }

    /// Whether it can be reported: every segment done, or failed with none
    /// in flight; and no claim held.
    pub(super) fn is_over(&self) -> bool {
        self.begun()
            && self.claimed.is_empty()
            && (self.done == self.segs.len() || (self.error.is_some() && self.in_flight == 0))
    }

    /// What the engine is handed for attempt `attempt` of segment `index`
    /// over positions `span`.
    pub(super) fn segment(&self, index: usize, attempt: u32, span: Range<usize>) -> Segment {
        let offset = (span.start - self.layout.positions().start) as u64;
        Segment {
            id: SegmentId {
                transfer: self.id,
                index,
                attempt,
            },
            direction: self.transfer.direction,
            device_addr: self.transfer.device_addr + offset,
            device_key: self.transfer.device_key,
            pieces: self.layout.memory(span).collect(),
        }
    }

    /// Whether segment `i` is a new segment of a cold transfer whose pages
    /// have not been prepared yet.
    pub(super) fn needs_preparing(&self, i: usize) -> bool {
        self.cold && self.error.is_none() && i >= self.prepared && i < self.segs.len()
    }

    /// Makes the pages of new segment `i` (= `self.prepared`) resident, the
    /// same resolution a fault would get, and counts them; before the first
    /// start the time goes to `setup_ns`. An error fails the transfer, as
    /// the device's fault on that page would (false).
    pub(super) fn prepare(&mut self, mem: &mut dyn Memory, i: usize) -> bool {
        let before = mem.now();
        let range = self.segs[i].range.clone();
        let made = ensure_resident(mem, &self.layout, &range, self.access());
        if self.stats.segments == 0 {
            self.stats.setup_ns += mem.now().saturating_sub(before);
        }
        match made {
            Ok(n) => {
                self.stats.pages_prepared += n;
                self.prepared = i + 1;
                true
            }
            Err(e) => {
                self.fail(e);
                false
            }
        }
    }

    /// The engine is full: prepare the next new segment now (one ahead of
    /// the window) so that it can start the moment a slot frees, while the
    /// device still works on the segments in flight.
    pub(super) fn prepare_ahead(&mut self, mem: &mut dyn Memory) {
        if self.needs_preparing(self.next) {
            self.prepare(mem, self.next);
        }
    }

    /// The pages holding the positions numbered `window` (position / page
    /// size; for one piece, pages of the buffer), as far as they lie in the
    /// transfer, in order.
    pub(super) fn window_pages(&self, window: Range<usize>) -> Vec<usize> {
        let all = self.layout.positions();
        let from = window.start.saturating_mul(self.page).max(all.start);
        let to = window.end.saturating_mul(self.page).min(all.end);
        if from >= to {
            return Vec::new();
        }
        self.layout.pages(from..to, self.page).collect()
    }

    /// Makes the pages of [`window_pages`](Self::window_pages) resident now;
    /// stops quietly at the first error (the page will fault on its own and
    /// report it). Returns pages made resident.
    pub(super) fn prefetch(&mut self, mem: &mut dyn Memory, window: Range<usize>) -> usize {
        let access = self.access();
        let mut made = 0;
        for va in self.window_pages(window) {
            if mem.is_resident(va, access) {
                continue;
            }
            if mem.make_resident(va, access).is_err() {
                break;
            }
            made += 1;
        }
        self.stats.pages_prefetched += made as u64;
        made
    }
}

/// Makes every page the memory of positions `span` touches resident.
/// Returns how many needed it.
pub(super) fn ensure_resident(
    mem: &mut dyn Memory,
    layout: &Layout,
    span: &Range<usize>,
    access: Access,
) -> Result<u64, TransferError> {
    let page = mem.page_size();
    ensure_pages(mem, layout.pages(span.clone(), page), access)
}

/// Makes each page (page-aligned address) resident. Returns how many needed it.
pub(super) fn ensure_pages(
    mem: &mut dyn Memory,
    list: impl Iterator<Item = usize>,
    access: Access,
) -> Result<u64, TransferError> {
    let mut made = 0;
    for va in list {
        if !mem.is_resident(va, access) {
            mem.make_resident(va, access)
                .map_err(|error| TransferError::Unresolvable { va, error })?;
            made += 1;
        }
    }
    Ok(made)
}
