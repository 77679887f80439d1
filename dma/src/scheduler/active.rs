//! One unfinished transfer: its segments, its progress, its first error,
//! and the helpers every path (start, fault, completion) shares.

use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::ops::Range;

use crate::engine::{Direction, EngineCaps, EngineId, Segment, SegmentId, StreamId};
use crate::memory::{Access, Memory};
use crate::pages;
use crate::plan::Plan;
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
    pub(super) transfer: Transfer,
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
    pub(super) pinned: Option<Range<usize>>,
    pub(super) prefetch: Prefetcher,
    /// `FaultAwarePrefetch` on an aborting engine found non-resident pages
    /// (in its first segment, or by a fault later): each new segment has its
    /// pages made resident right before it starts (see [`crate::prefetch`]).
    pub(super) cold: bool,
    /// Segments `0..prepared` have had their pages made resident (cold only).
    pub(super) prepared: usize,
    pub(super) stats: Stats,
    pub(super) began_at: u64,
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
            bytes_requested: transfer.va.len() as u64,
            ..Stats::default()
        };
        Active {
            id,
            engine,
            stream: caps.stream,
            stalls: caps.can_resume,
            max_segment: caps.max_segment,
            transfer,
            page: 0,
            plan: None,
            segs: Vec::new(),
            next: 0,
            retransmit: VecDeque::new(),
            done: 0,
            in_flight: 0,
            error: None,
            pinned: None,
            prefetch: Prefetcher::new(&config.prefetch),
            cold: false,
            prepared: 0,
            stats,
            began_at: 0,
        }
    }

    /// Whether the first `poll` has cut it into segments (and set it up).
    pub(super) fn begun(&self) -> bool {
        self.plan.is_some()
    }

    /// Cuts the transfer into segments and runs its policy's setup.
    pub(super) fn begin(&mut self, mem: &mut dyn Memory) {
        self.page = mem.page_size();
        let plan = Plan::new(self.transfer.va.clone(), self.max_segment, self.page);
        self.segs = (0..plan.count())
            .map(|i| Seg::new(plan.segment(i)))
            .collect();
        self.plan = Some(plan);
        self.began_at = mem.now();
        let va = self.transfer.va.clone();
        let setup = match self.transfer.policy {
            crate::Policy::Pin => {
                let hull = pages::hull(&va, self.page);
                match mem.pin(hull.clone()) {
                    Ok(()) => {
                        self.pinned = Some(hull);
                        ensure_resident(mem, &va, self.access())
                    }
                    Err(e) => Err(TransferError::Pin(e)),
                }
            }
            crate::Policy::Prefault => ensure_resident(mem, &va, self.access()),
            crate::Policy::FaultAware => Ok(0),
            crate::Policy::FaultAwarePrefetch => {
                // The probe: residency of the first segment's pages only, so
                // O(one segment) whatever the buffer size. A stalling engine
                // loses no data to a fault, but each fault still parks it for
                // a trip through the fault service: it is prepared for too.
                self.cold = self.segs.first().is_some_and(|s| {
                    pages::pages(&s.range, self.page).any(|va| !mem.is_resident(va))
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

    /// The running attempt whose addresses hold `va`, if any.
    pub(super) fn running_at(&mut self, va: usize) -> Option<&mut Attempt> {
        let i = self.plan.as_ref()?.index_of(va)?;
        self.segs.get_mut(i)?.attempt_at(va)
    }

    /// The segment that should start next on the engine, if any.
    pub(super) fn next_to_start(&self) -> Option<usize> {
        if self.error.is_some() {
            return None;
        }
        self.retransmit
            .front()
            .copied()
            .or((self.next < self.segs.len()).then_some(self.next))
    }

    /// Whether it can be reported: every segment done, or failed with none
    /// in flight.
    pub(super) fn is_over(&self) -> bool {
        self.begun()
            && (self.done == self.segs.len() || (self.error.is_some() && self.in_flight == 0))
    }

    /// What the engine is handed for attempt `attempt` of segment `index`
    /// over `span`.
    pub(super) fn segment(&self, index: usize, attempt: u32, span: Range<usize>) -> Segment {
        let offset = (span.start - self.transfer.va.start) as u64;
        Segment {
            id: SegmentId {
                transfer: self.id,
                index,
                attempt,
            },
            direction: self.transfer.direction,
            device_addr: self.transfer.device_addr + offset,
            va: span,
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
        let made = ensure_resident(mem, &range, self.access());
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

    /// Makes the pages numbered `window` (address / page size) resident, as
    /// far as they lie in the transfer; stops quietly at the first error
    /// (the page will fault on its own and report it). Returns pages made
    /// resident.
    pub(super) fn prefetch(&mut self, mem: &mut dyn Memory, window: Range<usize>) -> usize {
        let first = self.transfer.va.start / self.page;
        let last = (self.transfer.va.end - 1) / self.page;
        let access = self.access();
        let mut made = 0;
        for n in window.start.max(first)..window.end.min(last + 1) {
            let va = n * self.page;
            if mem.is_resident(va) {
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

/// Makes every page `range` touches resident. Returns how many needed it.
pub(super) fn ensure_resident(
    mem: &mut dyn Memory,
    range: &Range<usize>,
    access: Access,
) -> Result<u64, TransferError> {
    let page = mem.page_size();
    ensure_pages(mem, pages::pages(range, page), access)
}

/// Makes each page (page-aligned address) resident. Returns how many needed it.
pub(super) fn ensure_pages(
    mem: &mut dyn Memory,
    list: impl Iterator<Item = usize>,
    access: Access,
) -> Result<u64, TransferError> {
    let mut made = 0;
    for va in list {
        if !mem.is_resident(va) {
            mem.make_resident(va, access)
                .map_err(|error| TransferError::Unresolvable { va, error })?;
            made += 1;
        }
    }
    Ok(made)
}
