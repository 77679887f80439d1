//! The requester side of a Reliable Connection: WRITE, READ and SEND work
//! requests become packets with consecutive PSNs, and come back as
//! completions in posting order.
//!
//! ```text
//!  posted ─▶ PSNs assigned ─▶ packets sent (at most `window` unacknowledged)
//!   ACK(psn)          every request up to psn is done (cumulative, coalesced:
//!                     only the last packet of a message and every
//!                     `ack_every`-th ask for one)
//!   READ response     placed in order; it also acknowledges what came before
//!   NAK sequence(psn) go back: send again from psn (go-back-N)
//!   RNR NAK(psn)      the responder could not place psn (a page fault, no
//!                     RECV): send again from psn when its timer runs out, or
//!                     at once on the responder's "page ready" ACK (below)
//!   NAK error(psn)    the request at psn fails; the next one starts at psn
//!   timeout           go back to the oldest unacknowledged PSN; rto doubles;
//!                     `max_tries` timeouts in a row: RetriesExhausted
//! ```
//!
//! A Faultline responder that resolved the page it answered RNR NAK for
//! sends a duplicate ACK of the PSN before it: valid RoCE that a standard
//! requester ignores, and here the sign to send again without waiting out
//! the timer. Nothing depends on it: the timer still runs.
//!
//! Before the first packet of a WRITE or SEND, the whole source is probed:
//! a local fault then parks the queue pair before anything of the message
//! is on the wire, so a message is never left half sent because its source
//! could not be read.

use super::{Engine, PageReadiness, Park, HOLD_SPAN};
use crate::dma::{Dma, FaultKind, PAGE};
use crate::roce::packet::{
    psn_add, psn_diff, rnr_delay_us, NakCode, Opcode as Rc, Packet, Reth, Syndrome,
};
use hw::rdma::wire::{Completion, Opcode, Status, WorkRequest, WRITE_WITH_IMM};
use std::collections::VecDeque;

/// WRITEs of at least this many bytes tell a Faultline responder they
/// are coming before their first packet, whether or not their source
/// faults (smaller ones only when it does): one small packet per run of
/// segments, against a destination resolved while the source is read.
const NOTICE_AHEAD: u64 = 64 * 1024;

/// One posted WRITE, READ or SEND.
struct Wqe {
    wr: WorkRequest,
    kind: Opcode,
    /// PSN of its first packet, once assigned.
    first: Option<u32>,
    /// PSNs it takes (packets of a WRITE or SEND; responses of a READ).
    npkts: u32,
    /// READ: response packets placed, in order.
    read_done: u32,
    /// WRITE/SEND: whether the whole source was found readable.
    probed: bool,
    /// WRITE: whether the responder was told it is coming (notice.rs).
    noticed: bool,
    /// A READ that failed locally: its responses are taken and dropped
    /// until its PSNs are used up, then it completes with this status.
    failed: Option<(Status, u64)>,
    rnr: u32,
    cqe: Completion,
}

impl Wqe {
    fn last(&self) -> Option<u32> {
        self.first.map(|f| psn_add(f, self.npkts - 1))
    }

    fn contains(&self, psn: u32) -> bool {
        self.first
            .is_some_and(|f| (0..i64::from(self.npkts)).contains(&i64::from(psn_diff(psn, f))))
    }
}

/// The requester of one queue pair.
#[derive(Default)]
pub(super) struct Requester {
    wqes: VecDeque<Wqe>,
    /// The PSN the next request not yet numbered gets.
    next_psn: u32,
    /// The oldest PSN not acknowledged.
    una: u32,
    /// The next PSN to send.
    send_psn: u32,
    /// One past the highest PSN ever sent (to tell retransmissions).
    max_sent: u32,
    last_progress: u64,
    timeouts: u32,
    rnr_until: Option<u64>,
    /// A WRITE whose responder was just told it is coming (notice.rs)
    /// sends only its first packet, asking for an ACK, until that is
    /// answered: its destination is likely still being resolved, and an
    /// RNR NAK there would have the rest of the window sent for nothing.
    hold: Option<u32>,
    /// When the RNR NAK that set `rnr_until` came (its wait is counted in
    /// the completion of the request it named).
    rnr_since: Option<u64>,
    parked: Option<Park>,
    last_fault: Option<u64>,
    same_page_faults: u32,
    /// A gap in READ responses was answered by going back once already.
    read_gap: bool,
    /// A message was abandoned half sent: the responder's NAK invalid
    /// request at this PSN is expected, and means "send it again".
    resync: Option<u32>,
    /// Whether anything was ever heard from the peer.
    heard: bool,
}

impl Requester {
    /// A requester whose first packet has PSN `psn`.
    pub fn starting_at(psn: u32) -> Self {
        Self {
            next_psn: psn,
            una: psn,
            send_psn: psn,
            max_sent: psn,
            ..Self::default()
        }
    }

    /// The work requests it still held (a queue pair that ends).
    pub fn into_requests(self) -> Vec<WorkRequest> {
        self.wqes.into_iter().map(|w| w.wr).collect()
    }

    pub fn post(&mut self, wr: WorkRequest, kind: Opcode) {
        self.wqes.push_back(Wqe {
            wr,
            kind,
            first: None,
            npkts: 1,
            read_done: 0,
            probed: false,
            noticed: false,
            failed: None,
            rnr: 0,
            cqe: Completion {
                opcode: wr.opcode,
                node: wr.node,
                wr_id: wr.wr_id,
                ..Completion::default()
            },
        });
    }

    pub fn busy(&self) -> bool {
        !self.wqes.is_empty()
    }

    pub fn parked_on_wr(&self, wr_id: u64) -> bool {
        self.parked.is_some_and(|p| p.wr_id == wr_id)
    }

    pub fn parked_on_page(&self, page: u64) -> bool {
        self.parked.is_some_and(|p| p.page == page)
    }

    fn index_of(&self, psn: u32) -> Option<usize> {
        self.wqes.iter().position(|w| w.contains(psn))
    }

    /// Whether PSNs were sent that are not acknowledged.
    fn outstanding(&self) -> bool {
        psn_diff(self.max_sent, self.una) > 0 && !self.wqes.is_empty()
    }

    /// The notice for the WRITE at index `i` and the WRITEs queued after it
    /// that continue it (same key, the next remote bytes), so that the
    /// responder resolves the whole run of segments at once; each of them
    /// counts as told.
    fn notice_from(&mut self, i: usize) -> super::notice::Coming {
        let first = self.wqes[i].wr;
        self.wqes[i].noticed = true;
        let mut end = first.remote_va.saturating_add(first.len);
        for w in self.wqes.iter_mut().skip(i + 1) {
            let continues =
                w.kind == Opcode::Write && w.wr.key == first.key && w.wr.remote_va == end;
            if !continues {
                break;
            }
            w.noticed = true;
            end = w.wr.remote_va.saturating_add(w.wr.len);
        }
        super::notice::Coming {
            va: first.remote_va,
            len: end - first.remote_va,
            rkey: first.key as u32,
        }
    }

    /// An RNR wait is over: its time goes to the request it stopped (the
    /// one at the send cursor).
    fn end_rnr_wait(&mut self, now: u64) {
        let Some(since) = self.rnr_since.take() else {
            return;
        };
        if let Some(i) = self.index_of(self.send_psn) {
            let waited = u32::try_from(now.saturating_sub(since)).unwrap_or(u32::MAX);
            let c = &mut self.wqes[i].cqe;
            c.remote_wait_us = c.remote_wait_us.saturating_add(waited);
        }
    }

    /// Forgets the numbers of every request from index `i` on: the next
    /// one to go starts at `psn` (after an error NAK the responder expects
    /// a new message there).
    fn renumber_from(&mut self, i: usize, psn: u32) {
        for w in self.wqes.iter_mut().skip(i) {
            w.first = None;
            w.read_done = 0;
            w.probed = false;
        }
        self.next_psn = psn;
        self.send_psn = psn;
        self.una = psn;
        self.max_sent = psn;
        self.hold = None;
    }
}

impl Engine {
    fn packets_of(&self, wr: &WorkRequest) -> u32 {
        let mtu = u64::from(self.mtu(wr.node));
        u32::try_from(wr.len.div_ceil(mtu).max(1)).unwrap_or(u32::MAX)
    }

    fn rto(&self, timeouts: u32) -> u64 {
        (self.cfg.rto << timeouts.min(20)).min(self.cfg.rto_max)
    }

    /// Sends what queue pair `peer`'s window allows.
    pub(super) fn pump(&mut self, peer: u16, dma: &mut dyn Dma, now: u64) {
        let q = usize::from(peer);
        loop {
            let r = &mut self.requesters[q];
            if r.parked.is_some() || r.rnr_until.is_some_and(|t| now < t) {
                return;
            }
            if r.rnr_until.take().is_some() {
                r.end_rnr_wait(now);
            }
            if psn_diff(r.send_psn, r.una) >= self.cfg.window as i32 {
                return;
            }
            if r.hold.is_some_and(|h| psn_diff(r.send_psn, h) > 0) {
                return;
            }
            let i = match r.index_of(r.send_psn) {
                Some(i) => i,
                None => {
                    // The next request not numbered yet starts here.
                    let Some(i) = r.wqes.iter().position(|w| w.first.is_none()) else {
                        return;
                    };
                    if r.send_psn != r.next_psn {
                        return;
                    }
                    let wr = r.wqes[i].wr;
                    let npkts = self.packets_of(&wr);
                    let r = &mut self.requesters[q];
                    r.wqes[i].first = Some(r.next_psn);
                    r.wqes[i].npkts = npkts;
                    r.next_psn = psn_add(r.next_psn, npkts);
                    i
                }
            };
            if !self.send_one(peer, i, dma, now) {
                return;
            }
        }
    }

    /// Sends the packet of request `i` at the queue pair's `send_psn`;
    /// false if it stopped (a local fault parked it).
    fn send_one(&mut self, peer: u16, i: usize, dma: &mut dyn Dma, now: u64) -> bool {
        let q = usize::from(peer);
        let mtu = u64::from(self.mtu(peer));
        let r = &self.requesters[q];
        let w = &r.wqes[i];
        let (wr, kind, first, npkts) = (w.wr, w.kind, w.first.unwrap_or(0), w.npkts);
        let psn = r.send_psn;
        let k = psn_diff(psn, first).max(0) as u32;
        let retransmit = psn_diff(psn, r.max_sent) < 0;
        let tell = kind == Opcode::Write && !w.probed && !w.noticed && self.faultline_peer(peer);
        if tell && wr.len >= NOTICE_AHEAD {
            // A large WRITE: its destination may well be cold, and telling
            // a Faultline responder now costs one small packet; it then
            // resolves the destination while our source is read.
            let coming = self.requesters[q].notice_from(i);
            self.send_notice(peer, coming);
        }
        if matches!(kind, Opcode::Write | Opcode::Send) && !self.requesters[q].wqes[i].probed {
            if let Err(f) = probe_all(dma, wr.local_va, wr.len) {
                if tell && wr.len > 0 {
                    // Our source faults first: let a Faultline responder
                    // resolve the destination meanwhile (if not told yet),
                    // and hold the rest of the WRITE back until its first
                    // packet is answered.
                    if !self.requesters[q].wqes[i].noticed {
                        let coming = self.requesters[q].notice_from(i);
                        self.send_notice(peer, coming);
                    }
                    self.requesters[q].hold = Some(psn);
                }
                self.local_fault(peer, wr.wr_id, f.va, f.kind, now);
                return false;
            }
            self.requesters[q].wqes[i].probed = true;
        }
        let mut payload = Vec::new();
        let bth = |opcode, ack_req| self.bth(peer, opcode, psn, ack_req);
        let next;
        let p = match kind {
            Opcode::Read => {
                let off = u64::from(k) * mtu;
                next = psn_add(first, npkts);
                Packet {
                    bth: bth(Rc::ReadRequest, false),
                    reth: Some(Reth {
                        va: wr.remote_va + off,
                        rkey: wr.key as u32,
                        len: (wr.len - off.min(wr.len)) as u32,
                    }),
                    imm: None,
                    aeth: None,
                    payload: &[],
                }
            }
            _ => {
                let off = u64::from(k) * mtu;
                let n = mtu.min(wr.len.saturating_sub(off)) as usize;
                payload.resize(n, 0);
                let read = if n == 0 {
                    Ok(())
                } else {
                    dma.read(wr.local_va + off, &mut payload)
                };
                if let Err(f) = read {
                    self.local_fault(peer, wr.wr_id, f.va, f.kind, now);
                    return false;
                }
                let imm =
                    (kind == Opcode::Write && wr.flags & WRITE_WITH_IMM != 0).then_some(wr.imm);
                let only = npkts == 1;
                let last = k + 1 == npkts;
                let opcode = match (kind, only, k == 0, last, imm.is_some()) {
                    (Opcode::Write, true, _, _, false) => Rc::WriteOnly,
                    (Opcode::Write, true, _, _, true) => Rc::WriteOnlyImm,
                    (Opcode::Write, false, true, _, _) => Rc::WriteFirst,
                    (Opcode::Write, false, false, true, false) => Rc::WriteLast,
                    (Opcode::Write, false, false, true, true) => Rc::WriteLastImm,
                    (Opcode::Write, ..) => Rc::WriteMiddle,
                    (_, true, ..) => Rc::SendOnly,
                    (_, false, true, ..) => Rc::SendFirst,
                    (_, false, false, true, _) => Rc::SendLast,
                    _ => Rc::SendMiddle,
                };
                let ack_req = last
                    || (k + 1).is_multiple_of(self.cfg.ack_every.max(1))
                    || self.requesters[q].hold == Some(psn);
                next = psn_add(psn, 1);
                Packet {
                    bth: bth(opcode, ack_req),
                    reth: (k == 0 && kind == Opcode::Write).then_some(Reth {
                        va: wr.remote_va,
                        rkey: wr.key as u32,
                        len: wr.len as u32,
                    }),
                    imm: if last { imm } else { None },
                    aeth: None,
                    payload: &payload,
                }
            }
        };
        let bytes = p.payload.len() as u64;
        self.emit(peer, &p);
        let r = &mut self.requesters[q];
        if retransmit {
            self.counters.retransmits += 1;
            r.wqes[i].cqe.retransmitted_bytes += bytes;
        }
        if !r.outstanding() {
            r.last_progress = now;
        }
        r.send_psn = next;
        if psn_diff(next, r.max_sent) > 0 {
            r.max_sent = next;
        }
        true
    }

    /// A local access of queue pair `peer`'s requester faulted.
    fn local_fault(&mut self, peer: u16, wr_id: u64, page: u64, kind: FaultKind, now: u64) {
        let q = usize::from(peer);
        let max = self.cfg.max_local_faults;
        if kind == FaultKind::Fatal {
            return self.fail_at_cursor(peer, Status::LocalAccessError, page);
        }
        let r = &mut self.requesters[q];
        r.same_page_faults = if r.last_fault == Some(page) {
            r.same_page_faults + 1
        } else {
            1
        };
        r.last_fault = Some(page);
        if let Some(i) = r
            .index_of(r.send_psn)
            .or(r.wqes.iter().position(|w| w.first.is_none()))
        {
            r.wqes[i].cqe.local_faults += 1;
        }
        if r.same_page_faults > max {
            return self.fail_at_cursor(peer, Status::RetriesExhausted, page);
        }
        match self.park_due(wr_id, now) {
            Some(due) => self.requesters[q].parked = Some(Park { page, due, wr_id }),
            None => self.fail_at_cursor(peer, Status::LocalAccessError, page),
        }
    }

    /// The libOS answered queue pair `peer`'s parked fault.
    pub(super) fn unpark_requester(
        &mut self,
        peer: u16,
        readiness: PageReadiness,
        dma: &mut dyn Dma,
        now: u64,
    ) {
        let r = &mut self.requesters[usize::from(peer)];
        let Some(p) = r.parked.take() else {
            return;
        };
        r.last_progress = now;
        if readiness == PageReadiness::Failed {
            self.fail_at_cursor(peer, Status::LocalAccessError, p.page);
        }
        self.pump(peer, dma, now);
    }

    /// The request at the send cursor cannot go on for a local reason.
    fn fail_at_cursor(&mut self, peer: u16, status: Status, va: u64) {
        let q = usize::from(peer);
        let r = &mut self.requesters[q];
        r.parked = None;
        let i = r
            .index_of(r.send_psn)
            .or(r.wqes.iter().position(|w| w.first.is_none()));
        let Some(i) = i else { return };
        let w = &mut r.wqes[i];
        match (w.kind, w.first) {
            // Its responses still come: take them, then complete (in order).
            (Opcode::Read, Some(_)) => {
                w.failed = Some((status, va));
                let f = w.first.unwrap_or(0);
                r.send_psn = psn_add(f, w.npkts);
            }
            (_, first) => {
                let started = first.is_some_and(|f| psn_diff(r.send_psn, f) > 0);
                let at = first.unwrap_or(r.next_psn);
                if started {
                    r.resync = Some(at);
                }
                w.failed = Some((status, va));
                // Nothing of it goes on the wire any more: the requests after
                // it take its PSNs. It completes when those before it have.
                let mut dead = r.wqes.remove(i).expect("index");
                dead.first = None;
                self.dead_letters(peer, dead, i);
                let r = &mut self.requesters[q];
                r.renumber_from(i, at);
            }
        }
    }

    /// Completes `w`, failed before its turn, once everything before index
    /// `i` has completed (completions stay in posting order): here it is
    /// put back as a request with no PSNs that the ACK path completes.
    fn dead_letters(&mut self, peer: u16, w: Wqe, i: usize) {
        let r = &mut self.requesters[usize::from(peer)];
        if i == 0 {
            let (status, va) = w.failed.unwrap_or((Status::LocalAccessError, 0));
            let mut c = w.cqe;
            c.status = status as u8;
            c.fault_va = va;
            self.completions.push(c);
        } else {
            r.wqes.insert(i, w);
        }
    }

    /// An acknowledgement, NAK or READ response for queue pair `peer`.
    pub(super) fn on_response(&mut self, peer: u16, p: &Packet<'_>, dma: &mut dyn Dma, now: u64) {
        let q = usize::from(peer);
        if p.bth.opcode == Rc::ReadResponseOnly && self.faultline_peer(peer) {
            if let Some(coming) = super::notice::Coming::decode(p.payload) {
                return self.on_notice(coming, dma);
            }
        }
        self.requesters[q].heard = true;
        let psn = p.bth.psn;
        match (p.bth.opcode, p.aeth.map(|a| a.syndrome)) {
            (Rc::Acknowledge, Some(Syndrome::Ack { .. })) => {
                let r = &self.requesters[q];
                if r.rnr_until.is_some() && psn_add(psn, 1) == r.send_psn {
                    // The responder's "page ready": send again now.
                    let r = &mut self.requesters[q];
                    r.rnr_until = None;
                    r.end_rnr_wait(now);
                }
                self.acked(peer, psn, now);
            }
            (Rc::Acknowledge, Some(Syndrome::Rnr { timer })) => {
                self.counters.rnr_received += 1;
                if !self.acked(peer, psn_add(psn, 0xff_ffff), now) {
                    return;
                }
                let r = &mut self.requesters[q];
                let Some(i) = r.index_of(psn) else { return };
                let w = &mut r.wqes[i];
                w.rnr += 1;
                if matches!(w.kind, Opcode::Write | Opcode::Read) {
                    w.cqe.remote_faults += 1;
                }
                if w.rnr > self.cfg.rnr_tries {
                    let status = if w.kind == Opcode::Send {
                        Status::ReceiverNotReady
                    } else {
                        Status::RetriesExhausted
                    };
                    return self.fail_nak(peer, psn, status);
                }
                r.send_psn = psn;
                // The wait is the pause; after it the window opens.
                r.hold = None;
                r.rnr_until = Some(now + rnr_delay_us(timer));
                r.rnr_since.get_or_insert(now);
                r.last_progress = now;
                r.timeouts = 0;
            }
            (Rc::Acknowledge, Some(Syndrome::Nak(code))) => {
                self.counters.naks_received += 1;
                if !self.acked(peer, psn_add(psn, 0xff_ffff), now) {
                    return;
                }
                let r = &mut self.requesters[q];
                match code {
                    NakCode::PsnSequenceError => {
                        r.send_psn = psn;
                    }
                    NakCode::InvalidRequest if r.resync == Some(psn) => {
                        r.resync = None;
                        r.send_psn = psn;
                    }
                    NakCode::InvalidRequest => self.fail_nak(peer, psn, Status::BadRequest),
                    NakCode::RemoteAccessError => {
                        self.fail_nak(peer, psn, Status::RemoteProtectionError)
                    }
                    NakCode::RemoteOperationalError => {
                        self.fail_nak(peer, psn, Status::RemoteAccessError)
                    }
                }
            }
            (
                Rc::ReadResponseFirst
                | Rc::ReadResponseMiddle
                | Rc::ReadResponseLast
                | Rc::ReadResponseOnly,
                _,
            ) => self.read_response(peer, p, dma, now),
            _ => {
                self.counters.malformed += 1;
                return;
            }
        }
        self.pump(peer, dma, now);
    }

    /// Every PSN up to `a` is acknowledged; false if `a` is outside what
    /// was sent (a late or forged acknowledgement: nothing changes).
    fn acked(&mut self, peer: u16, a: u32, now: u64) -> bool {
        let q = usize::from(peer);
        let r = &mut self.requesters[q];
        let ahead = psn_diff(psn_add(a, 1), r.una);
        if ahead < 0 || psn_diff(psn_add(a, 1), r.max_sent) > 0 {
            if ahead < -1 || psn_diff(psn_add(a, 1), r.max_sent) > 0 {
                self.counters.psn_out_of_window += 1;
                return false;
            }
            return true;
        }
        let mut progress = false;
        while let Some(w) = r.wqes.front() {
            let Some(last) = w.last() else {
                // Failed before it was numbered: completes in its turn.
                if w.failed.is_some() {
                    let w = r.wqes.pop_front().expect("front");
                    let (status, va) = w.failed.unwrap_or((Status::LocalAccessError, 0));
                    let mut c = w.cqe;
                    c.status = status as u8;
                    c.fault_va = va;
                    self.completions.push(c);
                    continue;
                }
                break;
            };
            if psn_diff(last, a) > 0 {
                break;
            }
            if w.kind == Opcode::Read && w.read_done < w.npkts {
                // The READ was answered but responses were lost: ask again
                // from the first one missing.
                let from = psn_add(w.first.unwrap_or(0), w.read_done);
                if psn_diff(r.send_psn, from) > 0 {
                    r.send_psn = from;
                }
                break;
            }
            let w = r.wqes.pop_front().expect("front");
            progress = true;
            let mut c = w.cqe;
            match w.failed {
                Some((status, va)) => {
                    c.status = status as u8;
                    c.fault_va = va;
                }
                None => {
                    c.status = Status::Success as u8;
                    c.len = w.wr.len;
                    self.counters.bytes += w.wr.len;
                }
            }
            self.completions.push(c);
            r.una = psn_add(last, 1);
        }
        // The front READ's placed responses are acknowledged too.
        let una = match r.wqes.front() {
            Some(w) if w.kind == Opcode::Read && w.first.is_some() => {
                psn_add(w.first.unwrap_or(0), w.read_done)
            }
            _ => psn_add(a, 1),
        };
        if psn_diff(una, r.una) > 0 {
            r.una = una;
            progress = true;
        }
        if psn_diff(r.send_psn, r.una) < 0 {
            r.send_psn = r.una;
        }
        if r.hold.is_some_and(|h| psn_diff(r.una, h) > 0) {
            r.hold = None;
        }
        if progress {
            r.last_progress = now;
            r.timeouts = 0;
            r.same_page_faults = 0;
            if let Some(w) = r.wqes.front_mut() {
                w.rnr = 0;
            }
        }
        true
    }

    /// The responder refused the request at `psn` for good.
    fn fail_nak(&mut self, peer: u16, psn: u32, status: Status) {
        let q = usize::from(peer);
        let mtu = u64::from(self.mtu(peer));
        let r = &mut self.requesters[q];
        let Some(i) = r.index_of(psn) else { return };
        if i != 0 {
            // Something before it is still owed (a READ's lost responses):
            // go back; the NAK will come again in its turn.
            r.send_psn = r.una;
            return;
        }
        let w = r.wqes.pop_front().expect("front");
        let k = psn_diff(psn, w.first.unwrap_or(psn)).max(0) as u64;
        let mut c = w.cqe;
        c.status = status as u8;
        if matches!(
            status,
            Status::RemoteAccessError | Status::RemoteProtectionError
        ) {
            c.fault_va = crate::dma::page_of(w.wr.remote_va + k * mtu);
        }
        self.completions.push(c);
        r.renumber_from(0, psn);
        r.resync = None;
    }

    fn read_response(&mut self, peer: u16, p: &Packet<'_>, dma: &mut dyn Dma, now: u64) {
        let q = usize::from(peer);
        let mtu = u64::from(self.mtu(peer));
        let psn = p.bth.psn;
        let r = &self.requesters[q];
        let Some(i) = r.index_of(psn).filter(|&i| r.wqes[i].kind == Opcode::Read) else {
            self.counters.psn_out_of_window += 1;
            return;
        };
        if i > 0 {
            // It answers everything before it.
            let before = psn_add(r.wqes[i].first.unwrap_or(0), 0xff_ffff);
            self.acked(peer, before, now);
        }
        let r = &self.requesters[q];
        let Some(i) = r.index_of(psn) else { return };
        if i != 0 {
            return;
        }
        let w = &r.wqes[0];
        let expected = psn_add(w.first.unwrap_or(0), w.read_done);
        let d = psn_diff(psn, expected);
        if d < 0 {
            self.counters.duplicates += 1;
            return;
        }
        if d > 0 {
            // A response was lost: ask again from it (once per gap).
            let r = &mut self.requesters[q];
            if !r.read_gap {
                r.read_gap = true;
                r.send_psn = expected;
            }
            return;
        }
        let off = u64::from(w.read_done) * mtu;
        let want = mtu.min(w.wr.len.saturating_sub(off));
        if p.payload.len() as u64 != want {
            self.counters.malformed += 1;
            return;
        }
        if w.failed.is_none() {
            if let Err(f) = dma.write(w.wr.local_va + off, p.payload) {
                let wr_id = w.wr.wr_id;
                self.requesters[q].send_psn = expected;
                return self.local_fault(peer, wr_id, f.va, f.kind, now);
            }
        }
        let r = &mut self.requesters[q];
        r.read_gap = false;
        r.wqes[0].read_done += 1;
        let w = &r.wqes[0];
        let first = w.first.unwrap_or(0);
        if w.read_done == w.npkts {
            let last = psn_add(first, w.npkts - 1);
            self.acked(peer, last, now);
        } else {
            let una = psn_add(first, w.read_done);
            r.una = una;
            if psn_diff(r.send_psn, una) < 0 {
                r.send_psn = una;
            }
            r.last_progress = now;
            r.timeouts = 0;
        }
    }

    /// Timers of queue pair `peer`'s requester.
    pub(super) fn tick_requester(&mut self, peer: u16, dma: &mut dyn Dma, now: u64) {
        let q = usize::from(peer);
        let r = &self.requesters[q];
        if let Some(p) = r.parked {
            if now >= p.due {
                self.unpark_requester(peer, PageReadiness::Resolved, dma, now);
            }
            return;
        }
        if r.rnr_until.is_some() {
            return self.pump(peer, dma, now);
        }
        if r.outstanding() && now.saturating_sub(r.last_progress) >= self.rto(r.timeouts) {
            let heard = r.heard;
            let r = &mut self.requesters[q];
            r.timeouts += 1;
            r.last_progress = now;
            if r.timeouts > self.cfg.max_tries {
                let status = if heard {
                    Status::RetriesExhausted
                } else {
                    Status::PeerUnreachable
                };
                // Like a NIC's retry count running out: the requests in
                // flight fail; the connection starts over at the oldest PSN.
                let una = r.una;
                let numbered = r.wqes.iter().filter(|w| w.first.is_some()).count();
                for _ in 0..numbered {
                    let w = r.wqes.pop_front().expect("counted");
                    let mut c = w.cqe;
                    c.status = status as u8;
                    self.completions.push(c);
                }
                let r = &mut self.requesters[q];
                r.renumber_from(0, una);
                r.timeouts = 0;
            } else {
                r.send_psn = r.una;
                r.read_gap = false;
            }
        }
        self.pump(peer, dma, now);
    }
}

/// Probes every page of `len` bytes at `va` for reading. First one page
/// per [`HOLD_SPAN`] of the whole range, without stopping at a fault, so
/// that the libOS hears of every block the message needs at once and
/// resolves them together; then every page, up to the first fault.
fn probe_all(dma: &mut dyn Dma, va: u64, len: u64) -> Result<(), crate::dma::Fault> {
    if len == 0 {
        return Ok(());
    }
    let end = va + len;
    let mut first = None;
    let mut span = va;
    while span < end {
        if let Err(f) = dma.probe(span, false) {
            first.get_or_insert(f);
        }
        span = (span & !(HOLD_SPAN - 1)) + HOLD_SPAN;
    }
    if let Some(f) = first {
        return Err(f);
    }
    let mut page = crate::dma::page_of(va);
    while page < end {
        dma.probe(page.max(va), false)?;
        page += PAGE;
    }
    Ok(())
}
