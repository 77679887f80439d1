//! The engine's protocol core: work requests in, completions and fabric
//! datagrams out. Pure: memory is a [`Dma`], time is a number of
//! microseconds the caller passes, datagrams are returned rather than sent,
//! so host tests drive two engines through any loss, reordering or fault.
//!
//! ```text
//!   post(WR) ──▶ COPY/HELLO/RECV/RESUME/PAGE_READY/PREPARE: handled here
//!            └─▶ WRITE/READ/SEND: an initiator operation (initiator.rs),
//!                segments out, ACK/NACK/RETRY/READ_DATA back
//!   on_datagram(from peer) ──▶ requests: target side (target.rs)
//!                          └─▶ responses: initiator side
//!   tick(now) ──▶ retransmission timers, fault fallbacks, dead peers
//! ```
//!
//! Local faults (an access of this engine that the node's SMMU could not
//! translate) park the operation until the libOS answers: RESUME(wr_id) or
//! PAGE_READY(page) go on, RESUME with abort or PAGE_READY failed end it
//! with LocalAccessError. A RESUME that arrives for a request not (yet)
//! parked is remembered and applies to its next park. A long fallback timer
//! retries a parked operation anyway; every park counts against a bound.
//! An operation about to touch the 2 MiB around a parked one's fault
//! ([`HOLD_SPAN`]) is held behind it, untried, and goes on with it.
//!
//! The first local fault of a WRITE or READ also sends the target a
//! PREPARE of the remote range still to come: the target translates one
//! page per [`HOLD_SPAN`] of it, so that its libOS resolves the
//! destination while ours resolves the source, instead of after it. The
//! driver posts the same PREPARE itself (a control request) when it makes
//! the local side resident before posting the transfer.
//!
//! ```text
//!  node 0: fault A, B ─ zero A ─ send A ─ zero B ─ send B
//!  node 1:   PREPARE A', B': fault ─ zero A' ─ zero B'
//!            (each destination block ready about when its data comes)
//! ```
//!
//! WRITE and READ take the direct path when this node's memory can be lent
//! ([`Dma::can_lend`]) and the peer has not refused to map it lately:
//! large segments, no data in the datagrams, one memcpy by the target
//! (see `initiator.rs`, `target.rs` and `crate::lease`). Control messages
//! (requests, ACK/NACK, RETRY) keep their sequence numbers, timers and loss.

pub mod exposures;
mod ids;
mod initiator;
mod target;

use crate::dma::{Dma, FaultKind};
use crate::fabric_msg::{Kind, Msg, MAX_PAYLOAD};
use crate::lease::Lease;
use exposures::Exposures;
use hw::rdma::wire::{
    Completion, Opcode, Status, WorkRequest, MAX_SEND, PAGE_READY_FAILED, PREPARE_WRITE,
    RESUME_ABORT,
};
use initiator::Op;
use std::collections::{BTreeMap, HashMap, VecDeque};
pub use target::Target;

/// Tunables of the protocol (times in microseconds).
#[derive(Clone, Debug)]
pub struct Config {
    /// Bytes of one WRITE/READ segment (one datagram).
    pub seg_size: u64,
    /// Bytes of one WRITE/READ segment on the direct path (one memcpy).
    pub direct_seg_size: u64,
    /// How long a peer that could not map our memory gets datagrams.
    pub unshared_for: u64,
    /// Segments of one operation in flight at once.
    pub window: usize,
    /// First retransmission timeout; doubles per retry up to `rto_max`.
    pub rto: u64,
    /// Largest retransmission timeout.
    pub rto_max: u64,
    /// Sends of one segment (loss or remote fault) before RetriesExhausted.
    pub max_tries: u32,
    /// Silence of a peer with segments in flight before PeerUnreachable.
    pub dead_after: u64,
    /// Wait before sending again to a node with no RECV posted.
    pub rnr_delay: u64,
    /// NOT_READY answers before ReceiverNotReady.
    pub rnr_tries: u32,
    /// Wait for a PAGE_READY/RESUME/RETRY before retrying anyway.
    pub fault_fallback: u64,
    /// Local faults of one request on the same page in a row before
    /// RetriesExhausted.
    pub max_local_faults: u32,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            seg_size: MAX_PAYLOAD as u64,
            direct_seg_size: 256 << 10,
            unshared_for: 1_000_000,
            window: 16,
            rto: 20_000,
            rto_max: 400_000,
            max_tries: 16,
            dead_after: 2_000_000,
            rnr_delay: 20_000,
            rnr_tries: 50,
            fault_fallback: 1_000_000,
            max_local_faults: 16,
        }
    }
}

/// Counters the device process reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Payload bytes of successful requests (and of delivered SENDs).
    pub bytes: u64,
    /// Datagrams sent again.
    pub retransmits: u64,
    /// Datagrams dropped: the sender they claim is not the peer they came
    /// from.
    pub forged_src: u64,
    /// Datagrams dropped: malformed (header, kind, reason, sizes).
    pub malformed: u64,
    /// Answers dropped: they name no transfer we have outstanding to their
    /// sender (late, or forged).
    pub unknown_xfer: u64,
    /// Requests dropped past the bounds on what is tracked per transfer
    /// and per page.
    pub over_bounds: u64,
    /// Incoming transfers forgotten for newer ones of the same peer (at
    /// most `REMEMBERED_PER_PEER` are remembered per peer).
    pub forgotten: u64,
    /// Remote requests refused: their key named no exposure, their range
    /// was outside it, or it did not grant the access.
    pub refused: u64,
}

/// The largest WRITE or READ (like ibverbs' `max_msg_sz`): 1 GiB. A larger
/// work request completes with BadRequest at once.
pub const MAX_MSG: u64 = 1 << 30;

/// The largest span the libOS makes present on one fault (a 2 MiB block).
/// A request that would touch a span where a fault is being resolved is
/// held behind it instead of tried: trying would only fault again (one
/// more SMMU miss and event) on memory the resolution is about to map.
pub const HOLD_SPAN: u64 = 2 << 20;

/// Whether `page` lies in a [`HOLD_SPAN`] that `range` touches.
fn near(page: u64, range: &std::ops::Range<u64>) -> bool {
    let span = |a: u64| a & !(HOLD_SPAN - 1);
    range.start < range.end && span(range.start) <= span(page) && span(page) <= span(range.end - 1)
}

/// How many early RESUMEs are remembered.
const EARLY_RESUMES: usize = 256;

/// One node's engine.
pub struct Engine {
    rank: u16,
    nodes: u16,
    cfg: Config,
    /// Local ids of operations, in posting order (the `ops` key).
    next_id: u64,
    ops: BTreeMap<u64, Op>,
    /// Wire transfer id → local id of the operations in progress.
    by_xfer: HashMap<u64, u64>,
    ids: ids::Ids,
    target: Target,
    /// What this node exposed to the others (checked on every request).
    exposures: Exposures,
    early_resumes: VecDeque<(u64, bool)>,
    /// Peers that could not map our memory, and until when they get datagrams.
    unshared: HashMap<u16, u64>,
    /// Leases of finished operations, taken back at the end of the call.
    dropped: Vec<Lease>,
    completions: Vec<Completion>,
    datagrams: Vec<(u16, Vec<u8>)>,
    /// What it has done.
    pub counters: Counters,
}

impl Engine {
    /// The engine of node `rank` of `nodes`.
    pub fn new(rank: u16, nodes: u16, cfg: Config) -> Self {
        Self {
            rank,
            nodes,
            cfg,
            next_id: 1,
            ops: BTreeMap::new(),
            by_xfer: HashMap::new(),
            ids: ids::Ids::new(),
            target: Target::default(),
            exposures: Exposures::default(),
            early_resumes: VecDeque::new(),
            unshared: HashMap::new(),
            dropped: Vec::new(),
            completions: Vec::new(),
            datagrams: Vec::new(),
            counters: Counters::default(),
        }
    }

    /// Completions produced since the last call, in order.
    pub fn take_completions(&mut self) -> Vec<Completion> {
        std::mem::take(&mut self.completions)
    }

    /// Datagrams to send (destination rank, bytes) since the last call.
    pub fn take_datagrams(&mut self) -> Vec<(u16, Vec<u8>)> {
        std::mem::take(&mut self.datagrams)
    }

    /// Whether requests are in progress (the caller should tick soon).
    pub fn busy(&self) -> bool {
        !self.ops.is_empty()
    }

    /// Starts tracking a new operation under a fresh random transfer id;
    /// returns its local id.
    fn insert_op(&mut self, wr: WorkRequest, op: Opcode, direct: bool, now: u64) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let by_xfer = &self.by_xfer;
        let xfer = self.ids.next(|x| by_xfer.contains_key(&x));
        self.by_xfer.insert(xfer, id);
        self.ops
            .insert(id, Op::new(wr, op, &self.cfg, direct, xfer, now));
        id
    }

    /// The wire transfer ids of the operations in progress (tests).
    #[cfg(test)]
    fn xfers(&self) -> Vec<u64> {
        self.ops.values().map(|o| o.xfer).collect()
    }

    fn send(&mut self, dst: u16, m: &Msg) {
        self.datagrams.push((dst, m.encode()));
    }

    fn complete_now(&mut self, wr: &WorkRequest, status: Status) {
        self.completions.push(Completion {
            opcode: wr.opcode,
            status: status as u8,
            node: wr.node,
            wr_id: wr.wr_id,
            ..Completion::default()
        });
    }

    /// Takes back the leases of operations that ended.
    fn release_dropped(&mut self, dma: &mut dyn Dma) {
        for l in self.dropped.drain(..) {
            dma.release(l);
        }
    }

    /// Whether a WRITE/READ to `node` takes the direct path now.
    fn direct_to(&mut self, node: u16, dma: &dyn Dma, now: u64) -> bool {
        if !dma.can_lend() {
            return false;
        }
        match self.unshared.get(&node) {
            Some(&until) if now < until => false,
            Some(_) => {
                self.unshared.remove(&node);
                true
            }
            None => true,
        }
    }

    /// Takes one work request from the driver.
    pub fn post(&mut self, wr: WorkRequest, dma: &mut dyn Dma, now: u64) {
        self.post_one(wr, dma, now);
        self.release_dropped(dma);
    }

    fn post_one(&mut self, wr: WorkRequest, dma: &mut dyn Dma, now: u64) {
        let Some(op) = Opcode::from_u8(wr.opcode) else {
            return self.complete_now(&wr, Status::BadRequest);
        };
        let remote = matches!(
            op,
            Opcode::Write | Opcode::Read | Opcode::Send | Opcode::Prepare
        );
        let wraps = |va: u64| va.checked_add(wr.len).is_none();
        let bad = (remote && wr.node >= self.nodes)
            || (op == Opcode::Send && wr.len > MAX_SEND)
            || (matches!(op, Opcode::Write | Opcode::Read) && wr.len > MAX_MSG)
            || (op == Opcode::Recv && wr.len > MAX_SEND)
            || (matches!(
                op,
                Opcode::Copy | Opcode::Write | Opcode::Read | Opcode::Send | Opcode::Recv
            ) && wraps(wr.local_va))
            || (matches!(
                op,
                Opcode::Copy | Opcode::Write | Opcode::Read | Opcode::Prepare
            ) && wraps(wr.remote_va));
        if bad {
            // A hint has nobody waiting for its completion.
            if op != Opcode::Prepare {
                self.complete_now(&wr, Status::BadRequest);
            }
            return;
        }
        match op {
            Opcode::Hello => self.completions.push(Completion {
                opcode: wr.opcode,
                node: self.rank,
                imm: u32::from(self.nodes),
                wr_id: wr.wr_id,
                ..Completion::default()
            }),
            Opcode::Recv => self.target.post_recv(wr),
            Opcode::Resume => self.resume(wr.wr_id, wr.flags & RESUME_ABORT != 0, dma, now),
            Opcode::PageReady => {
                self.page_ready(wr.local_va, wr.flags & PAGE_READY_FAILED != 0, dma, now)
            }
            Opcode::Prepare => {
                let write = wr.flags & PREPARE_WRITE != 0;
                let remote = wr.remote_va..wr.remote_va + wr.len;
                self.send_prepare(wr.node, 0, wr.key, remote, write);
            }
            Opcode::Expose => {
                let ids = &mut self.ids;
                let exposed = self
                    .exposures
                    .expose(wr.local_va, wr.len, wr.flags, |taken| ids.next(taken));
                match exposed {
                    Ok(key) => self.completions.push(Completion {
                        opcode: wr.opcode,
                        wr_id: wr.wr_id,
                        len: wr.len,
                        key,
                        ..Completion::default()
                    }),
                    Err(_) => self.complete_now(&wr, Status::BadRequest),
                }
            }
            Opcode::Revoke => {
                // The engine takes one request or datagram at a time: once
                // this returns, no request can pass with the key, and none
                // that passed is still copying.
                let status = if self.exposures.revoke(wr.key) {
                    Status::Success
                } else {
                    Status::BadRequest
                };
                self.complete_now(&wr, status);
            }
            Opcode::Copy | Opcode::Write | Opcode::Read | Opcode::Send => {
                let direct =
                    matches!(op, Opcode::Write | Opcode::Read) && self.direct_to(wr.node, dma, now);
                let id = self.insert_op(wr, op, direct, now);
                self.proceed(id, dma, now);
            }
        }
    }

    /// Takes one datagram that came from node `from` (the rank whose
    /// fabric address sent it). Anything malformed, or claiming another
    /// sender than `from`, is dropped and counted.
    pub fn on_datagram(&mut self, from: u16, bytes: &[u8], dma: &mut dyn Dma, now: u64) {
        let Some((m, payload)) = Msg::decode_split(bytes) else {
            self.counters.malformed += 1;
            return;
        };
        if m.src != from || from >= self.nodes {
            self.counters.forged_src += 1;
            return;
        }
        match m.kind {
            Kind::WriteData
            | Kind::ReadReq
            | Kind::Send
            | Kind::Imm
            | Kind::DirectWrite
            | Kind::DirectRead
            | Kind::Prepare => self.on_request(m, payload, dma, now),
            Kind::Ack | Kind::Nack | Kind::Retry | Kind::ReadData => {
                self.on_response(m, payload, dma, now)
            }
        }
        self.counters.over_bounds += std::mem::take(&mut self.target.over_bounds);
        self.counters.forgotten += std::mem::take(&mut self.target.forgotten);
        self.release_dropped(dma);
    }

    /// Runs timers: retransmissions, fault fallbacks, dead peers.
    pub fn tick(&mut self, dma: &mut dyn Dma, now: u64) {
        let ids: Vec<u64> = self.ops.keys().copied().collect();
        for id in ids {
            self.tick_op(id, dma, now);
        }
        // Initiators have retried on their own long before this.
        self.target
            .forget_waits_before(now.saturating_sub(2 * self.cfg.fault_fallback));
        self.release_dropped(dma);
    }

    /// Moves operation `id` as far as it can go now.
    fn proceed(&mut self, id: u64, dma: &mut dyn Dma, now: u64) {
        let Some(op) = self.ops.get(&id) else { return };
        if op.parked.is_some() {
            return;
        }
        if op.kind == Opcode::Copy {
            self.run_copy(id, dma, now);
        } else {
            self.pump(id, dma, now);
        }
    }

    fn run_copy(&mut self, id: u64, dma: &mut dyn Dma, now: u64) {
        let Some(op) = self.ops.get_mut(&id) else {
            return;
        };
        let (src, dst, len, done) = (op.wr.local_va, op.wr.remote_va, op.wr.len, op.copied);
        match dma.copy(src + done, dst + done, len - done) {
            Ok(()) => self.finish(id, Status::Success, 0),
            Err(f) => {
                op.copied += f.done;
                match f.kind {
                    FaultKind::Smmu => self.park(id, f.va, now),
                    FaultKind::Fatal => self.finish(id, Status::LocalAccessError, f.va),
                }
            }
        }
    }

    /// Stops operation `id` on a local fault at `page` until the libOS
    /// answers (or the fallback timer fires).
    fn park(&mut self, id: u64, page: u64, now: u64) {
        let max = self.cfg.max_local_faults;
        let Some(op) = self.ops.get_mut(&id) else {
            return;
        };
        op.cqe.local_faults += 1;
        // The bound is on faults of the same page in a row: a cold buffer
        // faults once per page, a page that never stays resolved loops.
        op.same_page_faults = if op.last_fault == Some(page) {
            op.same_page_faults + 1
        } else {
            1
        };
        op.last_fault = Some(page);
        if op.same_page_faults > max {
            return self.finish(id, Status::RetriesExhausted, page);
        }
        let wr_id = op.wr.wr_id;
        let mut due = now + self.cfg.fault_fallback;
        if let Some(i) = self.early_resumes.iter().position(|&(w, _)| w == wr_id) {
            let (_, abort) = self.early_resumes.remove(i).expect("index from position");
            if abort {
                return self.finish(id, Status::LocalAccessError, page);
            }
            due = now; // the answer came first: go on at the next tick
        }
        op.parked = Some(initiator::Park {
            page,
            due,
            behind: None,
        });
        self.prepare(id, page);
    }

    /// The operation parked on a local fault within [`HOLD_SPAN`] of
    /// `range`, if any, other than `id`.
    fn fault_near(&self, id: u64, range: std::ops::Range<u64>) -> Option<u64> {
        self.ops.iter().find_map(|(&other, o)| match o.parked {
            Some(p) if other != id && p.behind.is_none() && near(p.page, &range) => Some(other),
            _ => None,
        })
    }

    /// Parks operation `id`, untried, behind `leader`'s local fault: it
    /// goes on when the leader does (or ends), without a fault of its own.
    fn hold(&mut self, id: u64, leader: u64) {
        let Some(p) = self.ops.get(&leader).and_then(|o| o.parked) else {
            return;
        };
        if let Some(op) = self.ops.get_mut(&id) {
            op.parked = Some(initiator::Park {
                behind: Some(leader),
                ..p
            });
        }
    }

    fn unpark(&mut self, id: u64, dma: &mut dyn Dma, now: u64) {
        if let Some(op) = self.ops.get_mut(&id) {
            op.parked = None;
            op.rearm(now);
        }
        self.proceed(id, dma, now);
        self.release_held(id, dma, now);
    }

    /// Lets the operations held behind `leader` go on.
    fn release_held(&mut self, leader: u64, dma: &mut dyn Dma, now: u64) {
        let held: Vec<u64> = self
            .ops
            .iter()
            .filter(|(_, o)| o.parked.is_some_and(|p| p.behind == Some(leader)))
            .map(|(&id, _)| id)
            .collect();
        for id in held {
            self.unpark(id, dma, now);
        }
    }

    fn resume(&mut self, wr_id: u64, abort: bool, dma: &mut dyn Dma, now: u64) {
        let found = self
            .ops
            .iter()
            .find(|(_, o)| o.wr.wr_id == wr_id && o.parked.is_some())
            .map(|(&id, o)| (id, o.parked));
        match found {
            Some((id, Some(p))) if abort => self.finish(id, Status::LocalAccessError, p.page),
            Some((id, _)) => self.unpark(id, dma, now),
            None => {
                if self.early_resumes.len() == EARLY_RESUMES {
                    self.early_resumes.pop_front();
                }
                self.early_resumes.push_back((wr_id, abort));
            }
        }
    }

    fn page_ready(&mut self, va: u64, failed: bool, dma: &mut dyn Dma, now: u64) {
        let page = crate::dma::page_of(va);
        let parked: Vec<u64> = self
            .ops
            .iter()
            .filter(|(_, o)| o.parked.is_some_and(|p| p.page == page))
            .map(|(&id, _)| id)
            .collect();
        for id in parked {
            if failed {
                self.finish(id, Status::LocalAccessError, page);
            } else {
                self.unpark(id, dma, now);
            }
        }
        self.target_page_ready(page, failed);
    }

    /// Ends operation `id` with one completion.
    fn finish(&mut self, id: u64, status: Status, fault_va: u64) {
        let Some(mut op) = self.ops.remove(&id) else {
            return;
        };
        self.by_xfer.remove(&op.xfer);
        // Operations held behind this one try for themselves at the next tick.
        for o in self.ops.values_mut() {
            if let Some(p) = o.parked.as_mut().filter(|p| p.behind == Some(id)) {
                p.behind = None;
                p.due = 0;
            }
        }
        self.dropped.extend(op.take_leases());
        let mut c = op.cqe;
        c.status = status as u8;
        if status == Status::Success {
            c.len = op.wr.len;
            self.counters.bytes += op.wr.len;
        } else {
            c.fault_va = fault_va;
        }
        self.completions.push(c);
    }
}

#[cfg(test)]
mod tests;
