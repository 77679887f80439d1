//! The initiator side of WRITE, READ and SEND: an operation cut into
//! segments, each sent, acknowledged, refused or timed out on its own
//! (selective acknowledgement; the segment index is the sequence number).
//!
//! ```text
//!  segment:  Unsent ──send──▶ InFlight ──ACK / READ_DATA placed──▶ Done
//!                               │  ▲ timeout (rto doubles): send again
//!                               │  │
//!             NACK(fault, page) ▼  │ RETRY(page) from the target, or fallback
//!                             RemoteFault
//!             NACK(not ready) ─▶ Rnr ──after rnr_delay──▶ InFlight
//!  operation: all Done ─▶ (WRITE with imm: the IMM segment) ─▶ Success
//!             NACK(access error) ─▶ RemoteAccessError
//!             a segment sent max_tries times ─▶ RetriesExhausted
//!             InFlight and nothing heard for dead_after ─▶ PeerUnreachable
//!             local fault reading the source / placing READ data ─▶ parked
//! ```
//!
//! On the direct path (both memories on one host, see `lease`) a WRITE or
//! READ segment is far larger and carries no data: the initiator lends the
//! segment's local range (translated through its own SMMU; a local fault
//! parks as above) and sends DIRECT_WRITE / DIRECT_READ; the target copies
//! and answers ACK, or NACK(fault) / NACK(revoked) with how far it got.
//! Each transmission lends anew under a fresh lease whose sequence number
//! the target echoes (`imm`), so a late answer to an older transmission is
//! recognised; the lease is taken back when its answer arrives, on the next
//! transmission and when the operation ends.
//!
//! ```text
//!  InFlight ──NACK(revoked, offset)──▶ Unsent (rest lent again; bounded)
//!  any ──NACK(unshared)──▶ the whole operation again on datagrams
//! ```

use super::{Config, Engine};
use crate::dma::{Dma, FaultKind, LendError};
use crate::fabric_msg::{encode_lent, Kind, Msg, Reason, PREPARE_SEG};
use crate::lease::Lease;
use hw::rdma::wire::{Completion, Opcode, Status, WorkRequest, WRITE_WITH_IMM};
use std::collections::{BTreeSet, VecDeque};
use std::ops::Range;

/// Where a parked operation waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Park {
    /// The local page that faulted.
    pub page: u64,
    /// When to retry anyway.
    pub due: u64,
    /// Held, untried, behind this operation's fault on `page` (see
    /// [`super::HOLD_SPAN`]); `None`: the operation faulted itself.
    pub behind: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SegState {
    Unsent,
    InFlight { sent_at: u64 },
    RemoteFault { page: u64, since: u64 },
    Rnr { until: u64 },
    Done,
}

#[derive(Clone, Debug)]
pub(super) struct Seg {
    offset: u64,
    len: u64,
    /// The IMM message of a WRITE with immediate, after the data.
    notify: bool,
    /// Times sent (the first send is not a retransmission).
    sends: u32,
    /// Retransmission timeouts in a row (loss bound and backoff).
    timeouts: u32,
    /// Bytes from the segment's start the target reported placed before a
    /// fault: a WRITE resends only the rest.
    placed: u64,
    /// Page of the last remote fault and how many times in a row.
    fault_page: Option<u64>,
    same_fault: u32,
    /// Direct path: the lease of the last transmission, while it is out.
    lease: Option<Lease>,
    /// Direct path: NACK(revoked) answers (bounded like losses).
    revokes: u32,
    state: SegState,
}

impl Seg {
    fn new(offset: u64, len: u64, notify: bool) -> Self {
        Self {
            offset,
            len,
            notify,
            sends: 0,
            timeouts: 0,
            placed: 0,
            fault_page: None,
            same_fault: 0,
            lease: None,
            revokes: 0,
            state: SegState::Unsent,
        }
    }
}

/// The segments of one operation, built lazily: only a window of them
/// exists at a time (`first..first + q.len()`, absolute indices); those
/// before `first` are done, those after are built when the window moves.
/// A 1 GiB WRITE holds `window` segments, not 16k.
pub(super) struct Segs {
    /// Absolute index of `q[0]`.
    first: usize,
    q: VecDeque<Seg>,
    /// Bytes of one data segment.
    size: u64,
    /// Bytes of data to cut into segments (0 for SEND).
    data_len: u64,
    /// Data segments in all.
    data_segs: usize,
    /// The notify segment after the data (SEND, WRITE with immediate):
    /// its offset and length.
    notify: Option<(u64, u64)>,
}

impl Segs {
    fn new(size: u64, data_len: u64, notify: Option<(u64, u64)>) -> Self {
        let data_segs = usize::try_from(data_len.div_ceil(size.max(1))).unwrap_or(usize::MAX);
        Self {
            first: 0,
            q: VecDeque::new(),
            size: size.max(1),
            data_len,
            data_segs,
            notify,
        }
    }

    /// Segments of the operation in all (built or not).
    pub fn total(&self) -> usize {
        self.data_segs + usize::from(self.notify.is_some())
    }

    /// Absolute indices of the segments built now.
    pub fn built(&self) -> std::ops::Range<usize> {
        self.first..self.first + self.q.len()
    }

    /// How many segments exist now (for tests: the window, not the whole).
    #[cfg(test)]
    pub fn built_count(&self) -> usize {
        self.q.len()
    }

    /// Segment `i`, if it is built.
    pub fn get(&self, i: usize) -> Option<&Seg> {
        self.q.get(i.checked_sub(self.first)?)
    }

    /// Drops finished segments from the front and builds new ones until
    /// `window` exist (or none are left to build).
    fn fill(&mut self, window: usize) {
        while self.q.front().is_some_and(|s| s.state == SegState::Done) {
            self.q.pop_front();
            self.first += 1;
        }
        while self.q.len() < window.max(1) {
            let next = self.first + self.q.len();
            if next < self.data_segs {
                let off = next as u64 * self.size;
                let len = self.size.min(self.data_len - off);
                self.q.push_back(Seg::new(off, len, false));
            } else if let (true, Some((off, len))) = (next == self.data_segs, self.notify) {
                self.q.push_back(Seg::new(off, len, true));
            } else {
                break;
            }
        }
    }

    /// Whether every segment is done.
    fn all_done(&self) -> bool {
        self.first + self.q.len() == self.total()
            && self.q.iter().all(|s| s.state == SegState::Done)
    }

    fn iter(&self) -> impl Iterator<Item = &Seg> {
        self.q.iter()
    }

    fn iter_mut(&mut self) -> impl Iterator<Item = &mut Seg> {
        self.q.iter_mut()
    }
}

impl std::ops::Index<usize> for Segs {
    type Output = Seg;
    /// Segment `i`; callers check it is built (`get`) first.
    fn index(&self, i: usize) -> &Seg {
        &self.q[i - self.first]
    }
}

impl std::ops::IndexMut<usize> for Segs {
    fn index_mut(&mut self, i: usize) -> &mut Seg {
        &mut self.q[i - self.first]
    }
}

/// One work request in progress on this node.
pub(super) struct Op {
    pub wr: WorkRequest,
    pub kind: Opcode,
    /// The transfer id on the wire: random, so that nobody who has not
    /// seen our datagrams can name it (a forged ACK names nothing).
    pub xfer: u64,
    /// Whether its data segments take the direct path.
    pub direct: bool,
    pub cqe: Completion,
    pub segs: Segs,
    /// COPY: bytes already in place.
    pub copied: u64,
    pub parked: Option<Park>,
    /// Page of the last local fault and how many times in a row.
    pub last_fault: Option<u64>,
    pub same_page_faults: u32,
    last_heard: u64,
    rnr: u32,
    /// Pages the target reported faulting on, each counted once in
    /// `cqe.remote_faults`.
    remote_fault_pages: BTreeSet<u64>,
    /// Whether the target was sent a PREPARE (once, on the first local fault).
    prepared: bool,
}

impl Op {
    pub fn new(
        wr: WorkRequest,
        kind: Opcode,
        cfg: &Config,
        direct: bool,
        xfer: u64,
        now: u64,
    ) -> Self {
        let size = if direct {
            cfg.direct_seg_size
        } else {
            cfg.seg_size
        };
        let segs = match kind {
            Opcode::Write => Segs::new(
                size,
                wr.len,
                (wr.flags & WRITE_WITH_IMM != 0).then_some((wr.len, 0)),
            ),
            Opcode::Read => Segs::new(size, wr.len, None),
            Opcode::Send => Segs::new(size, 0, Some((0, wr.len))),
            _ => Segs::new(size, 0, None),
        };
        let cqe = Completion {
            opcode: wr.opcode,
            node: wr.node,
            wr_id: wr.wr_id,
            ..Completion::default()
        };
        Self {
            wr,
            kind,
            xfer,
            direct,
            cqe,
            segs,
            copied: 0,
            parked: None,
            last_fault: None,
            same_page_faults: 0,
            last_heard: now,
            rnr: 0,
            remote_fault_pages: BTreeSet::new(),
            prepared: false,
        }
    }

    fn in_flight(&self) -> usize {
        self.segs
            .iter()
            .filter(|s| matches!(s.state, SegState::InFlight { .. }))
            .count()
    }

    /// Restarts the silence clock (after a wait that was not the peer's fault).
    pub fn rearm(&mut self, now: u64) {
        self.last_heard = now;
    }

    /// Takes every lease of the operation (it ends or changes path).
    pub fn take_leases(&mut self) -> impl Iterator<Item = Lease> + '_ {
        self.segs.iter_mut().filter_map(|s| s.lease.take())
    }
}

enum Sent {
    Ok,
    Stopped,
}

impl Engine {
    fn rto(&self, timeouts: u32) -> u64 {
        let shift = timeouts.min(20);
        (self.cfg.rto << shift).min(self.cfg.rto_max)
    }

    /// On the first local fault of WRITE/READ `id` (at `page`): asks the
    /// target to translate the remote range from the same offset on, so
    /// that its libOS resolves it while ours resolves the local side.
    pub(super) fn prepare(&mut self, id: u64, page: u64) {
        let Some(op) = self.ops.get_mut(&id) else {
            return;
        };
        if op.prepared || !matches!(op.kind, Opcode::Write | Opcode::Read) {
            return;
        }
        op.prepared = true;
        let offset = page.saturating_sub(op.wr.local_va).min(op.wr.len);
        let remote = op.wr.remote_va + offset..op.wr.remote_va + op.wr.len;
        let (node, write, xfer, key) = (op.wr.node, op.kind == Opcode::Write, op.xfer, op.wr.key);
        self.send_prepare(node, xfer, key, remote, write);
    }

    /// Sends `node` a PREPARE of `remote` (under its remote key `key`) on
    /// behalf of transfer `xfer` (0: none, the driver's hint), whose
    /// answers count its faults.
    pub(super) fn send_prepare(
        &mut self,
        node: u16,
        xfer: u64,
        key: u64,
        remote: Range<u64>,
        write: bool,
    ) {
        let mut m = Msg::new(Kind::Prepare, self.rank, xfer, PREPARE_SEG);
        m.key = key;
        m.va = remote.start;
        m.len = remote.end - remote.start;
        m.imm = u32::from(write);
        self.send(node, &m);
    }

    /// Sends unsent segments of `id` while the window has room.
    pub(super) fn pump(&mut self, id: u64, dma: &mut dyn Dma, now: u64) {
        loop {
            let Some(op) = self.ops.get_mut(&id) else {
                return;
            };
            if op.parked.is_some() {
                return;
            }
            // Segments are built here, a window at a time, as the oldest
            // ones finish (a sliding window: nothing further than `window`
            // segments past the oldest unfinished one, which may wait for a
            // remote fault).
            op.segs.fill(self.cfg.window);
            if op.segs.all_done() {
                return self.finish(id, Status::Success, 0);
            }
            let flying = op.in_flight();
            if flying >= self.cfg.window {
                return;
            }
            let Some(i) = op
                .segs
                .built()
                .find(|&i| op.segs[i].state == SegState::Unsent)
            else {
                return;
            };
            // The notify segment goes only after all the data is placed.
            if op.segs[i].notify && i != op.segs.built().start {
                return;
            }
            if flying == 0 {
                op.last_heard = now;
            }
            if let Sent::Stopped = self.transmit(id, i, dma, now) {
                return;
            }
        }
    }

    /// Sends segment `i` of `id` (again); counts it against the bound.
    fn transmit(&mut self, id: u64, i: usize, dma: &mut dyn Dma, now: u64) -> Sent {
        let max = self.cfg.max_tries;
        let rank = self.rank;
        let Some(op) = self.ops.get_mut(&id) else {
            return Sent::Stopped;
        };
        let Some(seg) = op.segs.get(i).cloned() else {
            return Sent::Stopped;
        };
        if seg.timeouts >= max {
            self.finish(id, Status::RetriesExhausted, 0);
            return Sent::Stopped;
        }
        let wr = op.wr;
        let reads_local = !seg.notify && (op.kind != Opcode::Read || op.direct);
        if reads_local {
            let local = wr.local_va + seg.offset + seg.placed;
            if let Some(leader) = self.fault_near(id, local..local + (seg.len - seg.placed)) {
                self.hold(id, leader);
                return Sent::Stopped;
            }
        }
        let Some(op) = self.ops.get_mut(&id) else {
            return Sent::Stopped;
        };
        let mut datagram = None;
        let mut m = Msg::new(Kind::WriteData, rank, op.xfer, i as u32);
        m.offset = seg.offset;
        m.len = wr.len;
        // Every request on the target's memory names its exposure.
        m.key = wr.key;
        // Bytes this transmission carries (or has copied), for the counters.
        let mut bytes = 0;
        match (op.kind, seg.notify) {
            (Opcode::Write, true) => {
                m.kind = Kind::Imm;
                m.imm = wr.imm;
                m.key = 0;
            }
            (kind, false) if op.direct => {
                if let Some(old) = op.segs[i].lease.take() {
                    dma.release(old);
                }
                m.kind = if kind == Opcode::Read {
                    Kind::DirectRead
                } else {
                    Kind::DirectWrite
                };
                m.offset = seg.offset + seg.placed;
                m.va = wr.remote_va + m.offset;
                m.len = seg.len - seg.placed;
                bytes = m.len;
                let local = wr.local_va + m.offset;
                match dma.lend(local, m.len, kind == Opcode::Read) {
                    Ok(lent) => {
                        m.imm = lent.lease.seq as u32;
                        m.payload = encode_lent(&lent);
                        op.segs[i].lease = Some(lent.lease);
                    }
                    Err(LendError::Fault(f)) => {
                        match f.kind {
                            FaultKind::Smmu => self.park(id, f.va, now),
                            FaultKind::Fatal => self.finish(id, Status::LocalAccessError, f.va),
                        }
                        return Sent::Stopped;
                    }
                    // Every lease is out: the next tick tries again.
                    Err(LendError::Busy) => return Sent::Stopped,
                    Err(LendError::Unavailable) => {
                        self.fall_back(id, dma, now);
                        return Sent::Stopped;
                    }
                }
            }
            (Opcode::Read, _) => {
                m.kind = Kind::ReadReq;
                m.va = wr.remote_va + seg.offset;
                m.len = seg.len;
            }
            (kind, _) => {
                let from = if kind == Opcode::Send {
                    m.kind = Kind::Send;
                    m.key = 0;
                    0
                } else {
                    seg.placed
                };
                m.offset = seg.offset + from;
                m.va = wr.remote_va + m.offset;
                let n = (seg.len - from) as usize;
                // Read the source straight into the datagram.
                let d = m.encode_with(n, |buf| dma.read(wr.local_va + m.offset, buf));
                match d {
                    Ok(d) => {
                        bytes = n as u64;
                        datagram = Some(d)
                    }
                    Err(f) => {
                        match f.kind {
                            FaultKind::Smmu => self.park(id, f.va, now),
                            FaultKind::Fatal => self.finish(id, Status::LocalAccessError, f.va),
                        }
                        return Sent::Stopped;
                    }
                }
            }
        }
        let d = datagram.unwrap_or_else(|| m.encode());
        if seg.sends > 0 {
            op.cqe.retransmitted_bytes += bytes;
            self.counters.retransmits += 1;
        }
        op.segs[i].sends += 1;
        op.segs[i].state = SegState::InFlight { sent_at: now };
        self.datagrams.push((wr.node, d));
        Sent::Ok
    }

    /// The peer cannot map our memory (or we cannot lend it): operation
    /// `id` starts again on datagrams under a new transfer id, and the peer
    /// gets datagrams for a while.
    pub(super) fn fall_back(&mut self, id: u64, dma: &mut dyn Dma, now: u64) {
        let Some(mut op) = self.ops.remove(&id) else {
            return;
        };
        for l in op.take_leases() {
            dma.release(l);
        }
        self.unshared
            .insert(op.wr.node, now + self.cfg.unshared_for);
        self.by_xfer.remove(&op.xfer);
        let nid = self.insert_op(op.wr, op.kind, false, now);
        if let Some(again) = self.ops.get_mut(&nid) {
            again.cqe = op.cqe;
        }
        self.proceed(nid, dma, now);
    }

    /// An answer from a target about one of our operations.
    pub(super) fn on_response(&mut self, m: Msg, payload: &[u8], dma: &mut dyn Dma, now: u64) {
        // The answer must name a transfer we have outstanding to that very
        // peer (ids are random: a guess names nothing); anything else is
        // late (already finished) or forged.
        let Some(&id) = self.by_xfer.get(&m.xfer) else {
            // Transfer 0: answers to the driver's PREPARE hints, for nobody.
            if m.xfer != 0 {
                self.counters.unknown_xfer += 1;
            }
            return;
        };
        let Some(op) = self.ops.get_mut(&id) else {
            return;
        };
        if m.src != op.wr.node {
            self.counters.unknown_xfer += 1;
            return;
        }
        let i = m.seg as usize;
        if m.seg == PREPARE_SEG && (m.kind, m.reason) == (Kind::Nack, Some(Reason::Fault)) {
            // A page our PREPARE made the target fault on (no segment waits).
            if op.remote_fault_pages.insert(m.va) {
                op.cqe.remote_faults += 1;
            }
            return;
        }
        if m.kind != Kind::Retry && i >= op.segs.total() {
            return;
        }
        op.last_heard = now;
        if (m.kind, m.reason) == (Kind::Nack, Some(Reason::Fault))
            && op.remote_fault_pages.insert(m.va)
        {
            // A fault the target took is a fault taken, even when the answer
            // is to a transmission the segment has moved past (the target
            // was slow and we sent again); only the state below waits for
            // the latest one.
            op.cqe.remote_faults += 1;
        }
        if m.kind != Kind::Retry && op.segs.get(i).is_none() {
            // A segment done and dropped from the window, or not built yet:
            // only an answer that ends the whole transfer still matters.
            match (m.kind, m.reason) {
                (Kind::Nack, Some(Reason::AccessError)) => {
                    self.finish(id, Status::RemoteAccessError, m.va)
                }
                (Kind::Nack, Some(Reason::Protection)) => {
                    self.finish(id, Status::RemoteProtectionError, m.va)
                }
                (Kind::Nack, Some(Reason::BadRequest)) => self.finish(id, Status::BadRequest, 0),
                (Kind::Nack, Some(Reason::Unshared)) if op.direct => self.fall_back(id, dma, now),
                _ => {}
            }
            return;
        }
        let direct = op.direct && m.kind != Kind::Retry && !op.segs[i].notify;
        if direct {
            // Only the answer to the latest transmission speaks for the
            // segment's state (except an ACK: placed is placed).
            let current = op.segs[i].lease.is_some_and(|l| l.seq as u32 == m.imm);
            let decisive = matches!(
                m.reason,
                Some(
                    Reason::AccessError
                        | Reason::BadRequest
                        | Reason::Unshared
                        | Reason::Protection
                )
            );
            if m.kind == Kind::Ack || current {
                if let Some(l) = op.segs[i].lease.take() {
                    dma.release(l);
                }
            } else if !decisive {
                return;
            }
        }
        match (m.kind, m.reason) {
            (Kind::Ack, _) => {
                if op.kind != Opcode::Read || direct {
                    op.segs[i].state = SegState::Done;
                }
            }
            (Kind::Nack, Some(Reason::Revoked)) => {
                let s = &mut op.segs[i];
                if !direct || !matches!(s.state, SegState::InFlight { .. }) {
                    return;
                }
                s.revokes += 1;
                if s.revokes > self.cfg.max_tries {
                    return self.finish(id, Status::RetriesExhausted, 0);
                }
                let reached = m.offset.saturating_sub(s.offset).min(s.len);
                s.placed = s.placed.max(reached);
                s.state = SegState::Unsent;
            }
            (Kind::Nack, Some(Reason::Unshared)) => {
                if op.direct {
                    return self.fall_back(id, dma, now);
                }
                return;
            }
            (Kind::ReadData, _) => {
                let s = &op.segs[i];
                let wanted = op.kind == Opcode::Read
                    && s.state != SegState::Done
                    && payload.len() as u64 == s.len;
                if wanted {
                    match dma.write(op.wr.local_va + s.offset, payload) {
                        Ok(()) => op.segs[i].state = SegState::Done,
                        Err(f) => {
                            op.segs[i].state = SegState::Unsent;
                            match f.kind {
                                FaultKind::Smmu if op.parked.is_none() => self.park(id, f.va, now),
                                FaultKind::Smmu => {}
                                FaultKind::Fatal => {
                                    return self.finish(id, Status::LocalAccessError, f.va)
                                }
                            }
                        }
                    }
                }
            }
            (Kind::Nack, Some(Reason::Fault | Reason::Held)) => {
                if op.segs[i].state != SegState::Done {
                    let page = m.va;
                    let s = &mut op.segs[i];
                    // The bound is on the same page faulting again and again
                    // (a cold segment faults once per page it covers).
                    s.same_fault = if s.fault_page == Some(page) {
                        s.same_fault + 1
                    } else {
                        1
                    };
                    s.fault_page = Some(page);
                    if s.same_fault > self.cfg.max_tries {
                        return self.finish(id, Status::RetriesExhausted, page);
                    }
                    if (op.kind == Opcode::Write || op.direct) && !s.notify {
                        let reached = m.offset.saturating_sub(s.offset).min(s.len);
                        s.placed = s.placed.max(reached);
                    }
                    op.segs[i].state = SegState::RemoteFault { page, since: now };
                }
            }
            (Kind::Nack, Some(Reason::AccessError)) => {
                return self.finish(id, Status::RemoteAccessError, m.va)
            }
            (Kind::Nack, Some(Reason::Protection)) => {
                return self.finish(id, Status::RemoteProtectionError, m.va)
            }
            (Kind::Nack, Some(Reason::BadRequest)) => {
                return self.finish(id, Status::BadRequest, 0)
            }
            (Kind::Nack, Some(Reason::NotReady)) => {
                op.rnr += 1;
                if op.rnr >= self.cfg.rnr_tries {
                    return self.finish(id, Status::ReceiverNotReady, 0);
                }
                if op.segs[i].state != SegState::Done {
                    // Bounded by `rnr_tries`, not by the loss bound.
                    op.segs[i].timeouts = 0;
                    op.segs[i].state = SegState::Rnr {
                        until: now + self.cfg.rnr_delay,
                    };
                }
            }
            (Kind::Retry, _) => {
                let again: Vec<usize> = op
                    .segs
                    .built()
                    .filter(|&j| matches!(op.segs[j].state, SegState::RemoteFault { page, .. } if page == m.va))
                    .collect();
                for j in again {
                    if let Sent::Stopped = self.transmit(id, j, dma, now) {
                        return;
                    }
                }
            }
            _ => return,
        }
        self.pump(id, dma, now);
    }

    /// Timers of operation `id`.
    pub(super) fn tick_op(&mut self, id: u64, dma: &mut dyn Dma, now: u64) {
        let Some(op) = self.ops.get(&id) else { return };
        if let Some(p) = op.parked {
            if now >= p.due {
                self.unpark(id, dma, now);
            }
            return;
        }
        if op.in_flight() > 0 && now.saturating_sub(op.last_heard) >= self.cfg.dead_after {
            return self.finish(id, Status::PeerUnreachable, 0);
        }
        let due: Vec<usize> = op
            .segs
            .built()
            .filter(|&i| {
                let s = &op.segs[i];
                match s.state {
                    SegState::InFlight { sent_at } => now >= sent_at + self.rto(s.timeouts),
                    SegState::RemoteFault { since, .. } => now >= since + self.cfg.fault_fallback,
                    SegState::Rnr { until } => now >= until,
                    _ => false,
                }
            })
            .collect();
        for i in due {
            if let Some(op) = self.ops.get_mut(&id) {
                let Some(s) = op.segs.get(i) else {
                    continue;
                };
                if matches!(s.state, SegState::InFlight { .. }) {
                    op.segs[i].timeouts += 1;
                } else if op.in_flight() == 0 {
                    op.last_heard = now;
                }
            }
            if let Sent::Stopped = self.transmit(id, i, dma, now) {
                return;
            }
        }
        self.pump(id, dma, now);
    }
}
