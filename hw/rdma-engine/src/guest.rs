//! The node's memory as the engine reaches it through the SMMU: QEMU's guest
//! RAM mapped from the memory table, the IOTLB in front of it, and IOTLB
//! misses sent to QEMU on the backend channel.
//!
//! ```text
//!  access(iova, len) ── IOTLB hit ──▶ uaddr ── memory table ──▶ our mapping ──▶ copy
//!        │
//!        └─ miss/denied at page p ─▶ p noted as faulted ahead? ── yes ─▶ Fault{p, Smmu}
//!                                     │ no                       (the guest has its
//!                                     ▼                           event already)
//!          window: p and the next pages of [iova, iova+len) not in the IOTLB
//!          (≤ MISS_WINDOW, stops before a page noted as faulted ahead)
//!          backend channel: IOTLB_MSG MISS × window, NEED_REPLY, one write
//!          QEMU, per MISS in order, walks the guest SMMU ─┬─ ok: UPDATE on the main
//!                                                         │   socket (frontend thread
//!                                                         │   inserts, acks), reply 0
//!                                                         └─ fault: event in the guest's
//!                                                             SMMU event queue, reply ≠ 0
//!          replies read in order:  p ok → retry the lookup │ p fault → Fault{p, Smmu}
//!                                  later page ok → in the IOTLB already
//!                                  later page fault → noted as faulted ahead
//! ```
//!
//! The frontend thread owns the main socket; this side only reads the
//! shared [`Translation`] and talks on the backend channel, so QEMU's
//! UPDATE (which it sends before answering a miss) is never stuck behind us.
//!
//! # Pages asked about ahead (speculative misses)
//!
//! Only the reply for `p`, the page the access stands at, decides what the
//! access does. A later page of the window that QEMU cannot translate has
//! put an SMMU event in the guest's queue although the engine has not
//! reached it (it may never: the access can stop earlier). That is safe:
//!
//! * The page lies in the access's range, i.e. in the work request's: the
//!   libOS resolves a page the engine was going to touch anyway (through
//!   the transfer's segment and a RESUME, or as an unclaimed fault and a
//!   PAGE_READY).
//! * Nothing is reported for it: no completion, no NACK names a page the
//!   access has not reached. If the access gets there and the page is still
//!   noted, it stops there with an SMMU fault *without a new miss*, so the
//!   guest sees one event per page, not two; the libOS's answer to that one
//!   event wakes the parked operation as for any fault. A second event for
//!   a page the libOS already resolved once would count against the
//!   segment's retry bound in the libOS's scheduler.
//! * The libOS's answer may come while nobody waits on the page: a
//!   PAGE_READY for a page no operation is parked on is ignored by the
//!   engine except that it clears the note ([`Dma::fault_answered`]); a
//!   RESUME for an operation that is not parked is remembered as early
//!   (as before) and clears every note (a RESUME does not name pages).
//!   A note is also consumed by the stop it causes, and the oldest notes
//!   are forgotten past [`AHEAD_NOTES`]: a forgotten note only costs one
//!   more miss, never a hang.
//! * A window is a burst of at most [`MISS_WINDOW`] events; see there for
//!   why that fits the guest's SMMU event queue.
//!
//! The direct data path uses the same walk: lending turns the translated
//! pieces into extents of the exported memfds under a lease; pulling and
//! pushing copy each translated piece of our side from/to a peer's mapped
//! memory, one lease claim per piece (at most [`MAX_PIECE`] bytes).

use crate::dma::{page_of, DirectError, Dma, Extent, Fault, FaultKind, LendError, Lent, PAGE};
use crate::iotlb::{Iotlb, Lookup, Perm, PERM_READ, PERM_WRITE};
use crate::lease::{self, Leases};
use crate::miss::{MissChannel, MISS_WINDOW};
use crate::peers::Peers;
use crate::stats::Stats;
use crate::sys::Mapping;
use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};
use std::time::Instant;

/// One region of guest RAM in our address space.
pub struct Region {
    /// QEMU's address of the region's first byte.
    pub uaddr: u64,
    /// Bytes.
    pub size: u64,
    /// Our mapping of the region's fd (from offset 0).
    pub map: Mapping,
    /// Offset of the region inside `map`.
    pub offset: u64,
    /// Handle under which the region is exported to peers.
    pub handle: u32,
    /// The region's file (what peers map).
    pub fd: Arc<OwnedFd>,
}

/// The memory table: QEMU address → our mapping.
#[derive(Default)]
pub struct Regions(pub Vec<Region>);

impl Regions {
    /// The region holding QEMU's address `uaddr`, the offset of `uaddr` in
    /// its mapping and how many bytes from it lie in the region.
    fn host(&self, uaddr: u64) -> Option<(&Region, u64, u64)> {
        let r = self
            .0
            .iter()
            .find(|r| uaddr >= r.uaddr && uaddr - r.uaddr < r.size)?;
        Some((r, r.offset + (uaddr - r.uaddr), r.size - (uaddr - r.uaddr)))
    }
}

/// Most bytes of one piece of an access (one lease claim on the direct path).
pub const MAX_PIECE: u64 = 256 << 10;

/// Why a walk over guest memory stopped.
enum Stop {
    Fault(Fault),
    /// The piece function refused after `done` bytes.
    Refused(u64),
}

/// What the frontend thread and the engine share about translation.
#[derive(Default)]
pub struct Translation {
    /// IOVA → QEMU address.
    pub iotlb: RwLock<Iotlb>,
    /// QEMU address → ours.
    pub regions: RwLock<Arc<Regions>>,
}

/// Guest memory behind the SMMU, as a [`Dma`] for the engine.
pub struct GuestDma {
    tr: Arc<Translation>,
    misses: Option<MissChannel>,
    /// This node's leases (None: no direct path).
    leases: Option<Arc<Leases>>,
    /// The other nodes' memories.
    peers: Option<Peers>,
    stats: Arc<Stats>,
    verbose: bool,
    rank: u16,
    /// Pages a window asked about ahead that QEMU could not translate: the
    /// guest has an event for each and has not answered it yet (oldest
    /// first, at most [`AHEAD_NOTES`]).
    faulted_ahead: VecDeque<u64>,
    /// The current window's pages and QEMU's verdicts (reused).
    window: Vec<u64>,
    verdicts: Vec<bool>,
}

/// Misses in a row for one page (QEMU said yes, the entry vanished again).
const MISS_LOOPS: u32 = 8;

/// Pages faulted ahead that are remembered; past that the oldest note is
/// dropped (its page is simply asked about again when reached).
pub const AHEAD_NOTES: usize = 4 * MISS_WINDOW;

impl GuestDma {
    /// Memory seen through `tr`, resolving misses on `misses` (None until
    /// QEMU gives us the backend channel: then every miss is fatal).
    pub fn new(
        tr: Arc<Translation>,
        misses: Option<MissChannel>,
        stats: Arc<Stats>,
        verbose: bool,
        rank: u16,
    ) -> Self {
        Self {
            tr,
            misses,
            leases: None,
            peers: None,
            stats,
            verbose,
            rank,
            faulted_ahead: VecDeque::with_capacity(AHEAD_NOTES),
            window: Vec::with_capacity(MISS_WINDOW),
            verdicts: Vec::with_capacity(MISS_WINDOW),
        }
    }

    /// Whether `page` was faulted ahead and not answered yet; the note is
    /// consumed (the stop it causes is that event's one use).
    fn take_faulted_ahead(&mut self, page: u64) -> bool {
        match self.faulted_ahead.iter().position(|&p| p == page) {
            Some(i) => {
                self.faulted_ahead.remove(i);
                true
            }
            None => false,
        }
    }

    fn note_faulted_ahead(&mut self, page: u64) {
        if self.faulted_ahead.len() == AHEAD_NOTES {
            self.faulted_ahead.pop_front();
        }
        self.faulted_ahead.push_back(page);
    }

    /// Enables the direct path: lend under `leases`, map peers with `peers`.
    pub fn share(&mut self, leases: Arc<Leases>, peers: Peers) {
        self.leases = Some(leases);
        self.peers = Some(peers);
    }

    /// Replaces the backend channel (a new SET_BACKEND_REQ_FD).
    pub fn set_channel(&mut self, misses: Option<MissChannel>) {
        self.misses = misses;
    }

    /// Runs `f(region, offset_in_its_mapping, iova_offset, n)` over
    /// `[iova, iova+len)` piece by piece (adjacent translations that are
    /// contiguous in one region form one piece of at most [`MAX_PIECE`]),
    /// resolving misses; stops at the first page that cannot be made
    /// accessible with `want`, or when `f` returns false.
    fn access(
        &mut self,
        iova: u64,
        len: u64,
        want: Perm,
        mut f: impl FnMut(&Region, usize, usize, usize) -> bool,
    ) -> Result<(), Stop> {
        let mut done = 0u64;
        let mut loops = 0;
        while done < len {
            let at = iova.wrapping_add(done);
            let step = {
                let tlb = self.tr.iotlb.read().unwrap_or_else(|p| p.into_inner());
                let limit = (len - done).min(MAX_PIECE);
                match tlb.lookup_contiguous(at, want, limit) {
                    Lookup::Hit { uaddr, run } => {
                        let regions = self
                            .tr
                            .regions
                            .read()
                            .unwrap_or_else(|p| p.into_inner())
                            .clone();
                        match regions.host(uaddr) {
                            Some((region, off, in_region)) => {
                                let n = run.min(in_region).min(limit);
                                // The copy happens under the IOTLB read lock: an
                                // invalidation waits for accesses in flight.
                                if !f(region, off as usize, done as usize, n as usize) {
                                    return Err(Stop::Refused(done));
                                }
                                Some(n)
                            }
                            None => {
                                return Err(Stop::Fault(Fault {
                                    va: page_of(at),
                                    done,
                                    kind: FaultKind::Fatal,
                                }))
                            }
                        }
                    }
                    Lookup::Miss | Lookup::Denied => None,
                }
            };
            match step {
                Some(n) => {
                    done += n;
                    loops = 0;
                }
                None => {
                    loops += 1;
                    let fault = |kind| Fault {
                        va: page_of(at),
                        done,
                        kind,
                    };
                    if loops > MISS_LOOPS {
                        return Err(Stop::Fault(fault(FaultKind::Fatal)));
                    }
                    if self.take_faulted_ahead(page_of(at)) {
                        return Err(Stop::Fault(fault(FaultKind::Smmu)));
                    }
                    let end = iova.saturating_add(len);
                    match self.resolve(page_of(at), end, want) {
                        Ok(true) => {}
                        Ok(false) => return Err(Stop::Fault(fault(FaultKind::Smmu))),
                        Err(f) => return Err(Stop::Fault(Fault { done, ..f })),
                    }
                }
            }
        }
        Ok(())
    }

    /// Plain accesses never refuse a piece.
    fn plain(r: Result<(), Stop>) -> Result<(), Fault> {
        match r {
            Ok(()) => Ok(()),
            Err(Stop::Fault(f)) => Err(f),
            Err(Stop::Refused(done)) => Err(Fault {
                va: 0,
                done,
                kind: FaultKind::Fatal,
            }),
        }
    }

    /// Copies between our `va..` and `lent` (peer `peer`'s memory), one
    /// lease claim per piece; `into_me`: from the peer to us.
    fn direct(
        &mut self,
        peer: u16,
        lent: &Lent,
        va: u64,
        into_me: bool,
    ) -> Result<(), DirectError> {
        let total = lent.len().ok_or(DirectError::Invalid)?;
        va.checked_add(total).ok_or(DirectError::Invalid)?;
        let pm = self
            .peers
            .as_mut()
            .ok_or(DirectError::Unshared)?
            .get(peer, lent)?;
        let board = pm.board.words();
        let want = if into_me { PERM_WRITE } else { PERM_READ };
        let r = self.access(va, total, want, |region, off, at, n| {
            if !lease::claim(board, lent.lease) {
                return false;
            }
            let mut ok = true;
            let whole = lent.each_part(at as u64, n as u64, |e, roff, poff, k| {
                let theirs = pm.region(e.region);
                let (roff, mine, k) = (roff as usize, off + poff as usize, k as usize);
                ok &= theirs.is_some_and(|t| {
                    if into_me {
                        Mapping::copy(t, roff, &region.map, mine, k)
                    } else {
                        Mapping::copy(&region.map, mine, t, roff, k)
                    }
                });
            });
            lease::unclaim(board, lent.lease);
            ok && whole
        });
        let copied = match r {
            Ok(()) => total,
            Err(Stop::Fault(f)) => f.done,
            Err(Stop::Refused(done)) => done,
        };
        self.stats.direct_bytes.fetch_add(copied, Ordering::Relaxed);
        match r {
            Ok(()) => Ok(()),
            Err(Stop::Fault(f)) => Err(DirectError::Fault(f)),
            // Checked against the peer's table before: a refusal is the
            // lender taking its memory back.
            Err(Stop::Refused(done)) => Err(DirectError::Revoked { done }),
        }
    }

    /// The pages one window asks about: `page`, then the following pages
    /// below `end` (the access's end) that the IOTLB does not translate for
    /// `want`, at most [`MISS_WINDOW`]; stops before a page faulted ahead
    /// (its event is still with the guest: asking again would add another).
    fn plan_window(&mut self, page: u64, end: u64, want: Perm) {
        self.window.clear();
        self.window.push(page);
        let tlb = self.tr.iotlb.read().unwrap_or_else(|p| p.into_inner());
        let mut next = page;
        while self.window.len() < MISS_WINDOW {
            next = match next.checked_add(PAGE) {
                Some(n) if n < end => n,
                _ => break,
            };
            if self.faulted_ahead.contains(&next) {
                break;
            }
            if !matches!(tlb.lookup(next, want), Lookup::Hit { .. }) {
                self.window.push(next);
            }
        }
    }

    /// Asks QEMU about `page` and the pages after it up to `end` (one
    /// window, see [`GuestDma::plan_window`]): Ok(true) `page` is
    /// translated now, Ok(false) the guest SMMU faulted on it. Later pages
    /// only fill the IOTLB or are noted as faulted ahead. Err only when the
    /// channel is unusable (then it is dropped: every later miss is fatal).
    fn resolve(&mut self, page: u64, end: u64, want: Perm) -> Result<bool, Fault> {
        let fatal = Fault {
            va: page,
            done: 0,
            kind: FaultKind::Fatal,
        };
        if self.misses.is_none() {
            return Err(fatal);
        }
        self.plan_window(page, end, want);
        let Some(ch) = self.misses.as_mut() else {
            return Err(fatal);
        };
        let t0 = Instant::now();
        let r = ch.miss_all(&self.window, want, &mut self.verdicts);
        let us = t0.elapsed().as_micros() as u64;
        let asked = self.verdicts.len() as u64;
        self.stats.misses.fetch_add(asked, Ordering::Relaxed);
        self.stats.miss_us.fetch_add(us, Ordering::Relaxed);
        self.stats
            .ahead
            .fetch_add(asked.saturating_sub(1), Ordering::Relaxed);
        let mut failed = 0u64;
        for i in 0..self.verdicts.len() {
            let (p, ok) = (self.window[i], self.verdicts[i]);
            if ok {
                continue;
            }
            failed += 1;
            if i > 0 {
                self.stats.ahead_faults.fetch_add(1, Ordering::Relaxed);
                self.note_faulted_ahead(p);
            }
            // The page the access stands at is always reported (the
            // evidence of the fault path); pages ahead only when verbose.
            log(
                self.rank,
                self.verbose || i == 0,
                &format!(
                    "IOTLB miss iova={p:#x} perm={want} -> FAULT (QEMU: SMMU could not translate; guest event recorded){} in {us} us",
                    if i > 0 { ", asked ahead" } else { "" }
                ),
            );
        }
        self.stats.faults.fetch_add(failed, Ordering::Relaxed);
        if self.verbose {
            log(
                self.rank,
                true,
                &format!(
                    "IOTLB miss window iova={page:#x} perm={want}: {asked} pages, {failed} faulted, in {us} us"
                ),
            );
        }
        match r {
            Ok(()) => Ok(self.verdicts[0]),
            Err(e) => {
                eprintln!(
                    "rdma-engine {}: IOTLB miss on the backend channel failed: {e}",
                    self.rank
                );
                self.misses = None;
                Err(fatal)
            }
        }
    }
}

/// Prints a log line when `on`.
pub fn log(rank: u16, on: bool, msg: &str) {
    if on {
        eprintln!("rdma-engine {rank}: {msg}");
    }
}

impl Dma for GuestDma {
    fn fault_answered(&mut self, page: Option<u64>) {
        match page {
            Some(p) => self.faulted_ahead.retain(|&q| q != page_of(p)),
            None => self.faulted_ahead.clear(),
        }
    }

    fn read(&mut self, va: u64, buf: &mut [u8]) -> Result<(), Fault> {
        let r = self.access(va, buf.len() as u64, PERM_READ, |region, off, at, n| {
            region.map.read_at(off, &mut buf[at..at + n])
        });
        Self::plain(r)
    }

    fn write(&mut self, va: u64, data: &[u8]) -> Result<(), Fault> {
        let r = self.access(va, data.len() as u64, PERM_WRITE, |region, off, at, n| {
            region.map.write_at(off, &data[at..at + n])
        });
        Self::plain(r)
    }

    fn can_lend(&self) -> bool {
        self.leases.is_some()
            && !self
                .tr
                .regions
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .0
                .is_empty()
    }

    fn lend(&mut self, va: u64, len: u64, write: bool) -> Result<Lent, LendError> {
        let leases = self.leases.clone().ok_or(LendError::Unavailable)?;
        // The lease exists before the translation: an invalidation that
        // races with this lend revokes it (see `lease`).
        let lease = leases.lend(va, len).ok_or(LendError::Busy)?;
        let mut extents: Vec<Extent> = Vec::new();
        let want = if write { PERM_WRITE } else { PERM_READ };
        let r = self.access(va, len, want, |region, off, _, n| {
            let (off, n) = (off as u64, n as u64);
            match extents.last_mut() {
                Some(e) if e.region == region.handle && e.offset + e.len == off => e.len += n,
                _ => extents.push(Extent {
                    region: region.handle,
                    offset: off,
                    len: n,
                }),
            }
            extents.len() <= crate::fabric_msg::MAX_EXTENTS
        });
        match r {
            Ok(()) => Ok(Lent { lease, extents }),
            Err(e) => {
                leases.release(lease);
                match e {
                    Stop::Fault(f) => Err(LendError::Fault(f)),
                    Stop::Refused(_) => Err(LendError::Unavailable),
                }
            }
        }
    }

    fn release(&mut self, lease: crate::lease::Lease) {
        if let Some(l) = &self.leases {
            l.release(lease);
        }
    }

    fn pull(&mut self, peer: u16, from: &Lent, va: u64) -> Result<(), DirectError> {
        self.direct(peer, from, va, true)
    }

    fn push(&mut self, peer: u16, va: u64, to: &Lent) -> Result<(), DirectError> {
        self.direct(peer, to, va, false)
    }
}

#[cfg(test)]
mod tests;
