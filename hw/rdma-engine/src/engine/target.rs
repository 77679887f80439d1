//! The target side: segments other engines send to this node, placed or
//! read through this node's SMMU, and the remote-fault protocol.
//!
//! ```text
//!  initiator                       target (this file)
//!  WRITE_DATA(xfer, seg, va) ────▶ write va.. through the SMMU
//!                            ◀──── ACK(seg)                     placed
//!                            ◀──── NACK(fault, page)            SMMU fault: the guest
//!                                   waiters[page] += (src,xfer)  sees the event
//!                            ◀──── NACK(held, page)             near a page that
//!                                   (not tried)                  faulted: wait for it
//!     ... libOS resolves the page, posts PAGE_READY(page) here ...
//!                            ◀──── RETRY(page)                  → initiator resends
//!                            ◀──── NACK(access error, page)     PAGE_READY failed
//!  READ_REQ(xfer, seg, va, len) ─▶ read va..: READ_DATA(seg, bytes) or NACK as above
//!  SEND / IMM(xfer) ─────────────▶ oldest RECV: place, RECV completion, ACK;
//!                                   none posted: NACK(not ready)
//!  DIRECT_WRITE(va, lent) ───────▶ copy the initiator's lent memory to va..
//!                                   (own side page by page through the SMMU)
//!                            ◀──── ACK / NACK(fault, page, offset) as above /
//!                                   NACK(revoked, offset): lease taken back /
//!                                   NACK(unshared): cannot map its memory
//!  DIRECT_READ(va, lent) ────────▶ copy va.. into the lent memory; same answers
//!  any of the above but SEND/IMM, whose key, range or access this
//!  node's exposures refuse ─────▶ NACK(protection): nothing touched
//!                                   (PREPARE: dropped)
//!  PREPARE(va, len) ─────────────▶ translate one page per 2 MiB of va..:
//!                            ◀──── NACK(fault, page) for each that faulted
//!                                   (requests near it are held until
//!                                   PAGE_READY, as near any fault)
//! ```
//!
//! Answers echo the request's `imm` (on the direct path: its lease), so the
//! initiator knows which transmission an answer is about.
//!
//! Duplicates (a resent segment whose ACK was lost) are recognised per
//! (initiator, transfer) and acknowledged without placing or delivering
//! again. The segments of one transfer fault independently, so the libOS
//! resolves the pages of a window in parallel; a NACK says how far its
//! segment got, and only the rest is resent. Another transfer's request
//! that touches the 2 MiB around a page being resolved is not tried: it is
//! answered NACK(held, page) and gets the RETRY with the faulted ones
//! (trying would only fault again on memory that one resolution maps).
//! Once a page of a transfer failed, every later segment of it is refused:
//! segments already in flight may have landed beyond the failed page,
//! nothing sent after the failure does.

use super::{near, Engine, HOLD_SPAN};
use crate::dma::{DirectError, Dma, FaultKind};
use crate::fabric_msg::{decode_lent, Kind, Msg, Reason, MAX_PAYLOAD};
use hw::rdma::wire::{Completion, Opcode, Status, WorkRequest, CQE_HAS_IMM};
use std::collections::{HashMap, VecDeque};
use std::ops::Range;

/// Transfers remembered per peer for duplicate suppression; a new one
/// past this forgets that peer's oldest (counted in `forgotten`: a peer
/// that floods new transfer ids only pushes out its own).
pub const REMEMBERED_PER_PEER: usize = 1024;

/// Segments of one transfer tracked past the first one not yet placed.
/// An initiator never sends a segment more than its window (16) past its
/// oldest unfinished one, which is at or below that first unplaced one;
/// a segment further ahead is dropped unanswered (and counted).
pub const SEGS_AHEAD: u32 = 64;

/// Transfers one page's waiting lists hold at most (more wait for their
/// fallback timers instead; counted).
const WAITERS_PER_PAGE: usize = 1024;

/// Spans of [`HOLD_SPAN`] one PREPARE translates at most (64 MiB ahead).
const PREPARE_SPANS: usize = 32;

/// Which segments of a transfer are placed: all below `floor`, and those
/// of the [`SEGS_AHEAD`] after it whose bit is set. Fixed size, whatever
/// segment numbers a peer sends.
#[derive(Default, Clone, Copy, Debug, PartialEq, Eq)]
struct Placed {
    floor: u32,
    ahead: u64,
}

impl Placed {
    fn contains(&self, seg: u32) -> bool {
        match seg.checked_sub(self.floor) {
            None => true,
            Some(d) => d < SEGS_AHEAD && self.ahead & (1 << d) != 0,
        }
    }

    /// Whether `seg` is within what is tracked (placed or trackable).
    fn fits(&self, seg: u32) -> bool {
        seg.checked_sub(self.floor).is_none_or(|d| d < SEGS_AHEAD)
    }

    fn insert(&mut self, seg: u32) {
        let Some(d) = seg.checked_sub(self.floor).filter(|&d| d < SEGS_AHEAD) else {
            return;
        };
        self.ahead |= 1 << d;
        while self.ahead & 1 != 0 {
            self.ahead >>= 1;
            self.floor = self.floor.saturating_add(1);
        }
    }
}

/// What the target knows of one incoming transfer.
#[derive(Default)]
struct InXfer {
    placed: Placed,
    failed: Option<u64>,
    delivered: bool,
}

/// Transfers waiting for the libOS to resolve one page.
#[derive(Default)]
struct Waiting {
    /// When the page first faulted.
    since: u64,
    /// Transfers that faulted on the page itself.
    faulted: Vec<(u16, u64)>,
    /// Transfers held, untried, because they touch its [`super::HOLD_SPAN`].
    held: Vec<(u16, u64)>,
}

/// Target-side state of an engine.
#[derive(Default)]
pub struct Target {
    recvs: VecDeque<WorkRequest>,
    incoming: HashMap<(u16, u64), InXfer>,
    /// Per peer, its remembered transfers, oldest first.
    order: HashMap<u16, VecDeque<u64>>,
    waiters: HashMap<u64, Waiting>,
    /// Requests dropped past a bound since last asked.
    pub(super) over_bounds: u64,
    /// Transfers forgotten for newer ones of the same peer since last asked.
    pub(super) forgotten: u64,
}

impl Target {
    /// Queues a RECV buffer for SENDs and WRITEs with immediate.
    pub fn post_recv(&mut self, wr: WorkRequest) {
        self.recvs.push_back(wr);
    }

    fn xfer(&mut self, key: (u16, u64)) -> &mut InXfer {
        if !self.incoming.contains_key(&key) {
            let order = self.order.entry(key.0).or_default();
            if order.len() >= REMEMBERED_PER_PEER {
                if let Some(old) = order.pop_front() {
                    self.incoming.remove(&(key.0, old));
                    self.forgotten += 1;
                }
            }
            order.push_back(key.1);
        }
        self.incoming.entry(key).or_default()
    }

    /// Transfers remembered (all peers) and the largest per-transfer
    /// tracking state in bytes (tests: bounded whatever peers send).
    #[cfg(test)]
    pub(super) fn tracked(&self) -> (usize, usize) {
        let per = std::mem::size_of::<InXfer>();
        (self.incoming.len(), per)
    }

    fn wait(&mut self, page: u64, key: (u16, u64), now: u64) {
        let w = self.waiters.entry(page).or_insert_with(|| Waiting {
            since: now,
            ..Waiting::default()
        });
        if !w.faulted.contains(&key) {
            if w.faulted.len() >= WAITERS_PER_PAGE {
                self.over_bounds += 1;
                return;
            }
            w.faulted.push(key);
        }
    }

    /// `page` faulted outside any request (a PREPARE's probe): requests
    /// near it are held until it is resolved.
    fn expect(&mut self, page: u64, now: u64) {
        self.waiters.entry(page).or_insert_with(|| Waiting {
            since: now,
            ..Waiting::default()
        });
    }

    /// Whether a page in the [`super::HOLD_SPAN`] of `page` is being resolved.
    fn resolving_near(&self, page: u64) -> bool {
        self.waiters.keys().any(|&w| near(w, &(page..page + 1)))
    }

    /// Forgets pages that faulted before `t` and were never reported
    /// resolved (a lost event): their initiators retried on their own.
    pub(super) fn forget_waits_before(&mut self, t: u64) {
        self.waiters.retain(|_, w| w.since >= t);
    }

    /// A page within [`super::HOLD_SPAN`] of `range` that faulted less than
    /// `hold_for` ago and is not resolved yet: `key` then waits for it
    /// (held) instead of trying, and that page is returned. A transfer that
    /// already waits there is not held: a request from it means its wait is
    /// over (a timeout), or is another of its segments, which fault on
    /// their own so that the libOS resolves them together.
    fn hold(&mut self, range: Range<u64>, key: (u16, u64), now: u64, hold_for: u64) -> Option<u64> {
        let (&page, w) = self.waiters.iter_mut().find(|(&page, w)| {
            now < w.since + hold_for
                && near(page, &range)
                && !w.faulted.contains(&key)
                && !w.held.contains(&key)
        })?;
        if w.held.len() >= WAITERS_PER_PAGE {
            // Not held: it tries (and may fault) on its own.
            self.over_bounds += 1;
            return None;
        }
        w.held.push(key);
        Some(page)
    }
}

impl Engine {
    fn answer(&mut self, to: &Msg, kind: Kind, reason: Option<Reason>, va: u64) {
        let mut m = Msg::new(kind, self.rank, to.xfer, to.seg);
        m.offset = to.offset;
        m.imm = to.imm;
        m.reason = reason;
        m.va = va;
        self.send(to.src, &m);
    }

    /// A request from an initiator.
    pub(super) fn on_request(&mut self, m: Msg, payload: &[u8], dma: &mut dyn Dma, now: u64) {
        let key = (m.src, m.xfer);
        match m.kind {
            Kind::WriteData => {
                let Some(end) = m.va.checked_add(payload.len() as u64) else {
                    return self.answer(&m, Kind::Nack, Some(Reason::BadRequest), 0);
                };
                if self.refused(&m, m.va..end, true) {
                    return;
                }
                let x = self.target.xfer(key);
                if let Some(p) = x.failed {
                    return self.answer(&m, Kind::Nack, Some(Reason::AccessError), p);
                }
                if x.placed.contains(m.seg) {
                    return self.answer(&m, Kind::Ack, None, 0);
                }
                if !x.placed.fits(m.seg) {
                    self.target.over_bounds += 1;
                    return;
                }
                if self.held(&m, m.va..m.va + payload.len() as u64, now) {
                    return;
                }
                match dma.write(m.va, payload) {
                    Ok(()) => {
                        self.target.xfer(key).placed.insert(m.seg);
                        self.answer(&m, Kind::Ack, None, 0)
                    }
                    Err(f) if f.kind == FaultKind::Smmu => {
                        self.target.wait(f.va, key, now);
                        // Tell how far the segment got: only the rest is resent.
                        let mut to = m.clone();
                        to.offset = m.offset + f.done;
                        self.answer(&to, Kind::Nack, Some(Reason::Fault), f.va)
                    }
                    Err(f) => self.answer(&m, Kind::Nack, Some(Reason::AccessError), f.va),
                }
            }
            Kind::ReadReq => {
                if m.len > MAX_PAYLOAD as u64 || m.va.checked_add(m.len).is_none() {
                    return self.answer(&m, Kind::Nack, Some(Reason::BadRequest), 0);
                }
                if self.refused(&m, m.va..m.va + m.len, false) {
                    return;
                }
                if self.held(&m, m.va..m.va + m.len, now) {
                    return;
                }
                let r = Msg::new(Kind::ReadData, self.rank, m.xfer, m.seg);
                match r.encode_with(m.len as usize, |buf| dma.read(m.va, buf)) {
                    Ok(d) => self.datagrams.push((m.src, d)),
                    Err(f) if f.kind == FaultKind::Smmu => {
                        self.target.wait(f.va, key, now);
                        self.answer(&m, Kind::Nack, Some(Reason::Fault), f.va)
                    }
                    Err(f) => self.answer(&m, Kind::Nack, Some(Reason::AccessError), f.va),
                }
            }
            Kind::Send | Kind::Imm => self.deliver(m, payload, dma, now),
            Kind::DirectWrite | Kind::DirectRead => self.direct(m, payload, dma, now),
            Kind::Prepare => self.prepare_incoming(&m, dma, now),
            _ => {}
        }
    }

    /// A PREPARE: probes one page per [`HOLD_SPAN`] of the range (at most
    /// [`PREPARE_SPANS`]), skipping spans already being resolved. Each
    /// fault is the libOS's to resolve; requests near it are held until
    /// then, and the initiator hears of it for its fault count.
    fn prepare_incoming(&mut self, m: &Msg, dma: &mut dyn Dma, now: u64) {
        let Some(end) = m.va.checked_add(m.len) else {
            return;
        };
        if self.exposures.check(m.key, m.va..end, m.imm != 0).is_err() {
            // A hint: nobody waits for an answer, and nothing is probed.
            self.counters.refused += 1;
            return;
        }
        let mut at = m.va;
        for _ in 0..PREPARE_SPANS {
            if at >= end {
                return;
            }
            if !self.target.resolving_near(at) {
                match dma.probe(at, m.imm != 0) {
                    Ok(()) => {}
                    Err(f) if f.kind == FaultKind::Smmu => {
                        self.target.expect(f.va, now);
                        self.answer(m, Kind::Nack, Some(Reason::Fault), f.va);
                    }
                    Err(_) => return,
                }
            }
            let Some(next) = (at & !(HOLD_SPAN - 1)).checked_add(HOLD_SPAN) else {
                return;
            };
            at = next;
        }
    }

    /// A direct-path segment: one copy between the initiator's lent memory
    /// and ours.
    fn direct(&mut self, m: Msg, payload: &[u8], dma: &mut dyn Dma, now: u64) {
        let key = (m.src, m.xfer);
        let write = m.kind == Kind::DirectWrite;
        let Some(end) = m.va.checked_add(m.len) else {
            return self.answer(&m, Kind::Nack, Some(Reason::BadRequest), 0);
        };
        if self.refused(&m, m.va..end, write) {
            return;
        }
        if write {
            let x = self.target.xfer(key);
            if let Some(p) = x.failed {
                return self.answer(&m, Kind::Nack, Some(Reason::AccessError), p);
            }
            if x.placed.contains(m.seg) {
                return self.answer(&m, Kind::Ack, None, 0);
            }
            if !x.placed.fits(m.seg) {
                self.target.over_bounds += 1;
                return;
            }
        }
        let lent = decode_lent(payload).filter(|l| l.len() == Some(m.len));
        let Some(lent) = lent.filter(|_| m.va.checked_add(m.len).is_some()) else {
            return self.answer(&m, Kind::Nack, Some(Reason::BadRequest), 0);
        };
        if self.held(&m, m.va..m.va + m.len, now) {
            return;
        }
        let r = if write {
            dma.pull(m.src, &lent, m.va)
        } else {
            dma.push(m.src, m.va, &lent)
        };
        match r {
            Ok(()) => {
                if write {
                    self.target.xfer(key).placed.insert(m.seg);
                }
                self.answer(&m, Kind::Ack, None, 0)
            }
            Err(DirectError::Fault(f)) if f.kind == FaultKind::Smmu => {
                self.target.wait(f.va, key, now);
                let mut to = m.clone();
                to.offset = m.offset + f.done;
                self.answer(&to, Kind::Nack, Some(Reason::Fault), f.va)
            }
            Err(DirectError::Fault(f)) => {
                self.answer(&m, Kind::Nack, Some(Reason::AccessError), f.va)
            }
            Err(DirectError::Revoked { done }) => {
                let mut to = m.clone();
                to.offset = m.offset + done;
                self.answer(&to, Kind::Nack, Some(Reason::Revoked), 0)
            }
            Err(DirectError::Unshared) => self.answer(&m, Kind::Nack, Some(Reason::Unshared), 0),
            Err(DirectError::Invalid) => self.answer(&m, Kind::Nack, Some(Reason::BadRequest), 0),
        }
    }

    /// A SEND or a WRITE's immediate: consumes the oldest RECV, once.
    fn deliver(&mut self, m: Msg, payload: &[u8], dma: &mut dyn Dma, now: u64) {
        let key = (m.src, m.xfer);
        if self.target.xfer(key).delivered {
            return self.answer(&m, Kind::Ack, None, 0);
        }
        let Some(&recv) = self.target.recvs.front() else {
            return self.answer(&m, Kind::Nack, Some(Reason::NotReady), 0);
        };
        let mut cqe = Completion {
            opcode: Opcode::Recv as u8,
            status: Status::Success as u8,
            node: m.src,
            wr_id: recv.wr_id,
            ..Completion::default()
        };
        if m.kind == Kind::Send {
            if payload.len() as u64 > recv.len {
                return self.answer(&m, Kind::Nack, Some(Reason::BadRequest), 0);
            }
            match dma.write(recv.local_va, payload) {
                Ok(()) => cqe.len = payload.len() as u64,
                Err(f) if f.kind == FaultKind::Smmu => {
                    self.target.wait(f.va, key, now);
                    return self.answer(&m, Kind::Nack, Some(Reason::Fault), f.va);
                }
                Err(f) => return self.answer(&m, Kind::Nack, Some(Reason::AccessError), f.va),
            }
        } else {
            cqe.len = m.len;
            cqe.imm = m.imm;
            cqe.flags = CQE_HAS_IMM;
        }
        self.target.recvs.pop_front();
        self.target.xfer(key).delivered = true;
        self.counters.bytes += cqe.len;
        self.completions.push(cqe);
        self.answer(&m, Kind::Ack, None, 0);
    }

    /// Whether the request `m` on `range` is refused by this node's
    /// exposures (its key, bounds or rights); if so it has been answered
    /// NACK(protection) and counted, and nothing was touched.
    fn refused(&mut self, m: &Msg, range: Range<u64>, write: bool) -> bool {
        match self.exposures.check(m.key, range, write) {
            Ok(()) => false,
            Err(_) => {
                self.counters.refused += 1;
                self.answer(m, Kind::Nack, Some(Reason::Protection), m.va);
                true
            }
        }
    }

    /// Whether the request `m` on `range` is held behind a fault being
    /// resolved near it; if so it has been answered NACK(held).
    fn held(&mut self, m: &Msg, range: Range<u64>, now: u64) -> bool {
        let hold_for = self.cfg.fault_fallback / 2;
        match self.target.hold(range, (m.src, m.xfer), now, hold_for) {
            Some(page) => {
                self.answer(m, Kind::Nack, Some(Reason::Held), page);
                true
            }
            None => false,
        }
    }

    /// The libOS dealt with `page`: tell the initiators that wait for it.
    /// Those held near it try again either way: their own pages may differ.
    pub(super) fn target_page_ready(&mut self, page: u64, failed: bool) {
        let Some(waiting) = self.target.waiters.remove(&page) else {
            return;
        };
        for key in waiting.held {
            if !waiting.faulted.contains(&key) {
                let mut m = Msg::new(Kind::Retry, self.rank, key.1, 0);
                m.va = page;
                self.send(key.0, &m);
            }
        }
        for key in waiting.faulted {
            if let Some(x) = self.target.incoming.get_mut(&key) {
                if failed {
                    x.failed = Some(page);
                }
            }
            let mut m = Msg::new(
                if failed { Kind::Nack } else { Kind::Retry },
                self.rank,
                key.1,
                0,
            );
            m.reason = failed.then_some(Reason::AccessError);
            m.va = page;
            self.send(key.0, &m);
        }
    }
}
