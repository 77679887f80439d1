//! The fault path in two phases: `claim` one SMMU event (or
//! `claim_incoming`, outside every transfer), let the kernel make the
//! claimed pages resident, then `resolved`; and `events_lost`.
//!
//! `on_fault` is the three in one call, for callers that resolve under the
//! scheduler anyway (host tests, a single-threaded kernel loop).

use alloc::vec::Vec;
use smallvec::SmallVec;

use crate::claim::{Claim, ClaimId, ClaimOutcome, Resolution, UnknownClaim};
use crate::engine::StreamId;
use crate::memory::{Access, Memory};
use crate::pages;
use crate::prefetch::Prefetcher;
use crate::segment::Phase;
use crate::transfer::{Policy, TransferError, TransferId};

use super::{FaultAction, Scheduler};

/// A segment attempt that recorded a claimed page as new.
#[derive(Clone, Copy, Debug)]
struct Holder {
    transfer: TransferId,
    segment: usize,
    attempt: u32,
}

/// Each holder of a claim, with the position in its transfer it faulted
/// at. Almost always one: kept inline, so a claim allocates nothing.
type Holders = SmallVec<[(Holder, usize); 1]>;

/// A claim between `claim` and `resolved`.
#[derive(Clone, Debug)]
pub(super) struct Pending {
    page: usize,
    holders: Holders,
    /// The transfer whose prefetch window the claim carries (its
    /// `pages_prefetched` counts what the window made resident).
    window_of: Option<TransferId>,
}

impl Scheduler {
    /// Phase one of a device fault: the device on `stream` could not
    /// `access` the page holding `iova`. Call it under the lock that holds
    /// the scheduler, as the SMMU event is drained.
    ///
    /// The event is matched to the in-flight segments of that stream whose
    /// memory holds `iova` (all of them, if transfers or pieces overlap:
    /// which one faulted cannot be told apart, so each is treated as
    /// spoiled). Each segment records each page once per attempt (dedup by
    /// stream and page, until the segment starts again or is resumed). A
    /// page new to some segment is claimed: each such transfer holds the
    /// claim until [`resolved`](Self::resolved), and the claim names what
    /// to make resident: the page, unless it is resident already (or only
    /// failing transfers wanted it), and for `FaultAwarePrefetch`
    /// transfers the prefetch window after it (see [`crate::prefetch`]).
    /// `mem` is only read (`is_resident`, `page_size`).
    pub fn claim(
        &mut self,
        mem: &dyn Memory,
        stream: StreamId,
        iova: usize,
        access: Access,
    ) -> ClaimOutcome {
        let page_size = mem.page_size();
        let page = pages::floor(iova, page_size);
        let (mut matched, mut wanted) = (0, false);
        // Per new record: the holder and the position it faulted at.
        let mut holders = Holders::new();
        for t in self.transfers.values_mut().filter(|t| t.stream == stream) {
            let failing = t.error.is_some();
            for (i, pos) in t.running_at(iova) {
                let Some(a) = t.attempt(i) else { continue };
                matched += 1;
                let attempt = a.number;
                let new = a.faulted.insert(page);
                t.stats.fault_events += 1;
                if new {
                    t.stats.faults += 1;
                    wanted |= !failing;
                    holders.push((
                        Holder {
                            transfer: t.id,
                            segment: i,
                            attempt,
                        },
                        pos,
                    ));
                }
            }
        }
        if matched == 0 {
            self.strays += 1;
            return ClaimOutcome::Stray;
        }
        if holders.is_empty() {
            return ClaimOutcome::Duplicate;
        }
        // Only a fault that needs resolving drives the prefetch window.
        let resolve = wanted && !mem.is_resident(page, access);
        let cfg = self.config.prefetch;
        let (mut window, mut window_of) = (Vec::new(), None);
        for (k, &(h, pos)) in holders.iter().enumerate() {
            let Some(t) = self.transfers.get_mut(&h.transfer) else {
                continue;
            };
            match t.claimed.iter_mut().find(|(p, _)| *p == page) {
                Some((_, n)) => *n += 1,
                None => t.claimed.push((page, 1)),
            }
            // Once per transfer (holders are few: no set of their own).
            if holders[..k].iter().any(|(e, _)| e.transfer == h.transfer) {
                continue;
            }
            if t.transfer.policy != Policy::FaultAwarePrefetch {
                continue;
            }
            // A warm-probed transfer met a non-resident page after all:
            // prepare its remaining segments from now on.
            t.cold = true;
            if resolve && t.error.is_none() {
                // The window runs over positions (for one piece: pages of
                // the buffer), the order the device moves bytes in.
                let w = t.prefetch.on_fault(&cfg, pos / page_size);
                for va in t.window_pages(w) {
                    if !window.contains(&va) {
                        window.push(va);
                    }
                }
                window_of.get_or_insert(t.id);
            }
        }
        let id = self.new_claim(Pending {
            page,
            holders,
            window_of,
        });
        ClaimOutcome::Claimed(Claim {
            id,
            stream,
            iova,
            access,
            page: resolve.then_some(page),
            window,
            incoming: false,
        })
    }

    /// Phase one of a fault outside every transfer (`claim` said `Stray`)
    /// on a device whose own protocol waits on such faults (an RDMA
    /// engine's incoming WRITEs and READs): claims the page and the window
    /// after it, as for a stream through memory (`Config::incoming_prefetch`,
    /// one window per stream). The kernel resolves the page, tells the
    /// device at once (so it goes on while the window is made resident),
    /// then the window, and reports with [`resolved`](Self::resolved).
    pub fn claim_incoming(
        &mut self,
        mem: &dyn Memory,
        stream: StreamId,
        iova: usize,
        access: Access,
    ) -> Claim {
        let page_size = mem.page_size();
        let cfg = self.config.incoming_prefetch;
        let window = self
            .incoming
            .entry(stream)
            .or_insert_with(|| Prefetcher::new(&cfg))
            .on_stream_fault(&cfg, iova / page_size);
        let page = pages::floor(iova, page_size);
        let id = self.new_claim(Pending {
            page,
            holders: Holders::new(),
            window_of: None,
        });
        Claim {
            id,
            stream,
            iova,
            access,
            page: Some(page),
            window: window.map(|p| p * page_size).collect(),
            incoming: true,
        }
    }

    /// Phase two: the kernel made claim `id`'s pages resident, or could
    /// not. Call it under the scheduler's lock. The claim ends: an error on
    /// the faulted page fails exactly the transfers that wanted it
    /// (`TransferError::Unresolvable`); stalled segments that faulted on it
    /// are resumed at the next `poll`; spoiled ones may be retransmitted
    /// from then on; the window's pages are counted as prefetched.
    pub fn resolved(&mut self, id: ClaimId, resolution: Resolution) -> Result<(), UnknownClaim> {
        let at = self
            .claims
            .iter()
            .position(|(c, _)| *c == id)
            .ok_or(UnknownClaim)?;
        let (_, pending) = self.claims.swap_remove(at);
        let page = pending.page;
        for (h, _) in pending.holders {
            // Holders are not reported while they hold a claim.
            let Some(t) = self.transfers.get_mut(&h.transfer) else {
                continue;
            };
            if let Some(i) = t.claimed.iter().position(|(p, _)| *p == page) {
                t.claimed[i].1 -= 1;
                if t.claimed[i].1 == 0 {
                    t.claimed.swap_remove(i);
                }
            }
            if t.stalls {
                if let Some(a) = t.attempt(h.segment).filter(|a| a.number == h.attempt) {
                    a.resume_due = true;
                }
            }
            if let (Err(error), None) = (resolution.page, &t.error) {
                t.fail(TransferError::Unresolvable { va: page, error });
            }
        }
        if let Some(t) = pending.window_of.and_then(|w| self.transfers.get_mut(&w)) {
            t.stats.pages_prefetched += resolution.prefetched as u64;
        }
        Ok(())
    }

    /// Claims outstanding: made, not yet `resolved` (0 when the kernel is
    /// between service passes).
    pub fn outstanding_claims(&self) -> usize {
        self.claims.len()
    }

    /// One SMMU fault event handled at once: [`claim`](Self::claim), the
    /// claim resolved in `mem`, [`resolved`](Self::resolved). For callers
    /// that hold the scheduler while resolving anyway.
    pub fn on_fault(
        &mut self,
        mem: &mut dyn Memory,
        stream: StreamId,
        iova: usize,
        access: Access,
    ) -> FaultAction {
        let claim = match self.claim(mem, stream, iova, access) {
            ClaimOutcome::Claimed(claim) => claim,
            ClaimOutcome::Duplicate => return FaultAction::Duplicate,
            ClaimOutcome::Stray => return FaultAction::Stray,
        };
        let segments = self
            .claims
            .iter()
            .find(|(c, _)| *c == claim.id)
            .map_or(0, |(_, p)| p.holders.len());
        let resolution = claim.resolve(mem);
        // The claim was made just above: it is outstanding.
        let _ = self.resolved(claim.id, resolution);
        match resolution.page {
            Err(error) => FaultAction::Unresolvable(error),
            Ok(()) => FaultAction::Handled {
                segments,
                prefetched: resolution.prefetched,
            },
        }
    }

    fn new_claim(&mut self, pending: Pending) -> ClaimId {
        let id = ClaimId(self.next_claim);
        self.next_claim += 1;
        self.claims.push((id, pending));
        id
    }

    /// The SMMU event queue overflowed: faults of `stream` may have gone
    /// unreported. Every segment of the stream in flight now is treated as
    /// faulted on all its pages: at its completion the whole attempt is
    /// retransmitted, each page made resident first (pages resident all
    /// along are sent again too: residency now says nothing about residency
    /// while the device ran). On a stalling engine each such segment is also
    /// resumed, since a stall may hide behind a lost event. `Pin` transfers
    /// are skipped: their pages cannot fault. Outstanding claims change
    /// nothing here: a suspect segment's retransmission or resume still
    /// waits for the claims on its pages. Returns the segments affected.
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
