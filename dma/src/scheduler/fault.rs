//! The fault path: one SMMU event at a time (`on_fault`; outside every
//! transfer, `on_unclaimed_fault`), or the news that some were lost
//! (`events_lost`).

use crate::engine::StreamId;
use crate::memory::{Access, Memory};
use crate::pages;
use crate::prefetch::Prefetcher;
use crate::segment::Phase;
use crate::transfer::{Policy, TransferError};

use super::{FaultAction, Scheduler, Unclaimed};

impl Scheduler {
    /// A fault outside every transfer (`on_fault` said `Stray`) on a
    /// device whose own protocol waits on such faults (an RDMA engine's
    /// incoming WRITEs and READs): makes the page resident, lets the device
    /// know at once through `ready` (so it goes on while the rest runs),
    /// then makes the window after it resident, as for a stream through
    /// memory (`Config::incoming_prefetch`, one window per stream).
    pub fn on_unclaimed_fault(
        &mut self,
        mem: &mut dyn Memory,
        stream: StreamId,
        iova: usize,
        access: Access,
        ready: impl FnOnce(bool),
    ) -> Unclaimed {
        let resolved = mem.make_resident(iova, access).is_ok();
        ready(resolved);
        let mut prefetched = 0;
        if resolved {
            let cfg = self.config.incoming_prefetch;
            let page_size = mem.page_size();
            let window = self
                .incoming
                .entry(stream)
                .or_insert_with(|| Prefetcher::new(&cfg))
                .on_stream_fault(&cfg, iova / page_size);
            for page in window {
                if mem.make_resident(page * page_size, access).is_err() {
                    break;
                }
                prefetched += 1;
            }
        }
        Unclaimed {
            resolved,
            prefetched,
        }
    }

    /// Handles one SMMU fault event: the device on `stream` could not
    /// `access` the page holding `iova`.
    ///
    /// The event is matched to the in-flight segments of that stream whose
    /// memory holds `iova` (all of them, if transfers or pieces overlap:
    /// which one faulted cannot be told apart, so each is treated as
    /// spoiled). Each
    /// segment records each page once per attempt (dedup by stream and page,
    /// until the segment starts again or is resumed). On the first record the
    /// page is made resident here, with [`Memory::make_resident`], and for
    /// `FaultAwarePrefetch` transfers the prefetch window after it (see
    /// [`crate::prefetch`]). Segments on stalling engines are resumed at the
    /// next `poll`; others are retransmitted once their completion arrives.
    pub fn on_fault(
        &mut self,
        mem: &mut dyn Memory,
        stream: StreamId,
        iova: usize,
        access: Access,
    ) -> FaultAction {
        let page_size = mem.page_size();
        let page = pages::floor(iova, page_size);
        let (mut matched, mut fresh, mut wanted) = (0, 0, false);
        for t in self.transfers.values_mut().filter(|t| t.stream == stream) {
            let failing = t.error.is_some();
            for (i, _) in t.running_at(iova) {
                let Some(a) = t.attempt(i) else { continue };
                matched += 1;
                let new = a.faulted.insert(page);
                t.stats.fault_events += 1;
                if new {
                    t.stats.faults += 1;
                    fresh += 1;
                    wanted |= !failing;
                }
            }
        }
        if matched == 0 {
            self.strays += 1;
            return FaultAction::Stray;
        }
        if fresh == 0 {
            return FaultAction::Duplicate;
        }
        // Ok(true): this event made the page resident (what drives prefetch).
        let resolved = if wanted && !mem.is_resident(page, access) {
            mem.make_resident(page, access).map(|()| true)
        } else {
            Ok(false)
        };
        let (mut segments, mut prefetched) = (0, 0);
        let cfg = self.config.prefetch;
        for t in self.transfers.values_mut().filter(|t| t.stream == stream) {
            let stalls = t.stalls;
            let running = t.running_at(iova);
            let Some(&(_, pos)) = running.first() else {
                continue;
            };
            for &(i, _) in &running {
                segments += 1;
                if let (true, Some(a)) = (stalls, t.attempt(i)) {
                    a.resume_due = true;
                }
            }
            // A warm-probed transfer met a non-resident page after all:
            // prepare its remaining segments from now on.
            if t.transfer.policy == Policy::FaultAwarePrefetch {
                t.cold = true;
            }
            match resolved {
                Err(error) if t.error.is_none() => {
                    t.fail(TransferError::Unresolvable { va: page, error })
                }
                Ok(true)
                    if t.transfer.policy == Policy::FaultAwarePrefetch && t.error.is_none() =>
                {
                    // The window runs over positions (for one piece: pages
                    // of the buffer), the order the device moves bytes in.
                    let window = t.prefetch.on_fault(&cfg, pos / page_size);
                    prefetched += t.prefetch(mem, window);
                }
                _ => {}
            }
        }
        match resolved {
            Err(error) => FaultAction::Unresolvable(error),
            Ok(_) => FaultAction::Handled {
                segments,
                prefetched,
            },
        }
    }

    /// The SMMU event queue overflowed: faults of `stream` may have gone
    /// unreported. Every segment of the stream in flight now is treated as
    /// faulted on all its pages: at its completion the whole attempt is
    /// retransmitted, each page made resident first (pages resident all
    /// along are sent again too: residency now says nothing about residency
    /// while the device ran). On a stalling engine each such segment is also
    /// resumed, since a stall may hide behind a lost event. `Pin` transfers
    /// are skipped: their pages cannot fault. Returns the segments affected.
    pub fn events_lost(&mut self, stream: StreamId) -> usize {
        let mut affected = 0;
        for t in self.transfers.values_mut().filter(|t| t.stream == stream) {
            let failing = t.error.is_some();
            if t.transfer.policy == Policy::Pin && !failing {
                continue;
            }
            let stalls = t.stalls;
            for seg in &mut t.segs {
                let Phase::InFlight(a) = &mut seg.phase else {
                    continue;
                };
                a.resume_due |= stalls;
                if !failing {
                    a.suspect = true;
                    t.stats.lost_event_segments += 1;
                    affected += 1;
                }
            }
        }
        affected
    }
}
