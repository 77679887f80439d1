//! The engine's protocol core: work requests in, completions and RoCEv2
//! packets out. Pure: memory is a [`Dma`], time is a number of
//! microseconds the caller passes, packets are returned rather than sent,
//! so host tests drive two engines through any loss, reordering or fault.
//!
//! ```text
//!   post(WR) ──▶ COPY/HELLO/RECV/RESUME/PAGE_READY/EXPOSE/REVOKE: here
//!            └─▶ WRITE/READ/SEND: the requester of the queue pair to that
//!                node (requester.rs): packets out, ACK/NAK/READ responses in
//!   on_packet(from node) ──▶ requests: that queue pair's responder
//!                        │   (responder.rs)
//!                        └─▶ acknowledgements, READ responses: its requester
//!   tick(now) ──▶ retransmission and RNR timers, fault fallbacks
//! ```
//!
//! Each pair of nodes is joined by one Reliable Connection: node `r`'s
//! queue pair towards node `p` has the number [`qpn_for`]`(p)`, both
//! directions start at PSN 0 (the cluster's out-of-band agreement). A peer
//! outside the cluster (a Linux host) gets a queue pair of its own from
//! QP_CREATE/QP_CONNECT, with the numbers an app exchanged with it out of
//! band (`peers.rs`).
//!
//! Local faults (an access of this engine that the node's SMMU could not
//! translate) park the COPY or the queue pair's sending until the libOS
//! answers: RESUME(wr_id) or PAGE_READY(page) go on, RESUME with abort or
//! PAGE_READY failed end the request with LocalAccessError. A RESUME that
//! arrives for a request not (yet) parked is remembered and applies to its
//! next park. A long fallback timer retries a parked request anyway; every
//! park counts against a bound.
//!
//! Remote faults are RoCE's own: the responder answers a WRITE or SEND
//! packet it cannot place with an RNR NAK at that PSN, the requester sends
//! again from there when the NAK's timer runs out (see `responder.rs`).

pub mod exposures;
mod ids;
mod notice;
pub mod peers;
mod requester;
mod responder;

use crate::dma::{Dma, FaultKind};
use crate::roce::packet::{self, Ipv4Path, PacketError, ROCE_PORT};
use exposures::Exposures;
use hw::rdma::wire::{
    Completion, Opcode, Status, WorkRequest, MAX_SEND, PAGE_READY_FAILED, RESUME_ABORT,
};
use peers::{PeerError, Peers};
use requester::Requester;
use responder::Responder;
use std::collections::{BTreeMap, VecDeque};
use std::net::Ipv4Addr;

/// Tunables of the protocol (times in microseconds).
#[derive(Clone, Debug)]
pub struct Config {
    /// Path MTU: payload bytes of one packet (1024 by default, up to 4096).
    pub mtu: u32,
    /// Packets (PSNs) a requester has unacknowledged at most. The link's
    /// bandwidth-delay product is far smaller (about 300 MB/s x 20 us);
    /// a window much larger only adds what a responder's page fault makes
    /// the requester send again (go-back-N).
    pub window: u32,
    /// The requester asks for an acknowledgement every this many packets
    /// (and on the last packet of each message).
    pub ack_every: u32,
    /// First retransmission timeout; doubles per retry up to `rto_max`.
    pub rto: u64,
    /// Largest retransmission timeout.
    pub rto_max: u64,
    /// Timeouts in a row before a request completes with RetriesExhausted
    /// (the queue pair's retry count).
    pub max_tries: u32,
    /// RNR NAKs in a row for one request before it completes with an error
    /// (ReceiverNotReady for a SEND, RetriesExhausted otherwise).
    pub rnr_tries: u32,
    /// The wait this node's responder asks for in its RNR NAKs.
    pub rnr_wait: u64,
    /// Wait for a PAGE_READY/RESUME before retrying a parked request anyway.
    pub fault_fallback: u64,
    /// Local faults of one request on the same page in a row before
    /// RetriesExhausted.
    pub max_local_faults: u32,
    /// READ response packets a responder sends per turn at most (the rest
    /// follow on the next turns), so one large READ does not starve others.
    pub read_burst: u32,
    /// The UDP port every node listens on: RoCEv2's 4791 (tests and the
    /// self-benchmark on loopback pick another).
    pub port: u16,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            mtu: 1024,
            window: 128,
            ack_every: 64,
            rto: 20_000,
            rto_max: 400_000,
            max_tries: 16,
            rnr_tries: 64,
            rnr_wait: 1_280,
            fault_fallback: 1_000_000,
            max_local_faults: 16,
            read_burst: 256,
            port: ROCE_PORT,
        }
    }
}

/// Counters the device process reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Payload bytes of successful requests (and of delivered SENDs).
    pub bytes: u64,
    /// Packets sent again (after a timeout, a NAK or an RNR NAK).
    pub retransmits: u64,
    /// Packets dropped: too short, a pad that does not fit, payload where
    /// the opcode has none, an unknown opcode or transport version.
    pub malformed: u64,
    /// Packets dropped: the invariant CRC did not match.
    pub bad_icrc: u64,
    /// Packets dropped: the destination QP is not this node's QP for the
    /// node that sent it.
    pub unknown_qpn: u64,
    /// Requests past the expected PSN (a NAK sequence error answers the
    /// first of each gap), or responses outside what is outstanding.
    pub psn_out_of_window: u64,
    /// Requests whose opcode did not follow the message in progress
    /// (NAK invalid request).
    pub out_of_sequence: u64,
    /// Remote requests refused: their R_Key named no exposure, their range
    /// was outside it, or it did not grant the access (NAK remote access).
    pub refused: u64,
    /// RNR NAKs this node's responder sent (a page fault or no RECV).
    pub rnr_sent: u64,
    /// RNR NAKs this node's requester received.
    pub rnr_received: u64,
    /// Duplicate requests answered again (ACK, or READ responses replayed).
    pub duplicates: u64,
    /// Packets dropped: their source address is no peer's.
    pub strangers: u64,
    /// NAKs received (sequence errors and errors).
    pub naks_received: u64,
    /// "WRITE coming" notices sent to Faultline peers (see `notice.rs`).
    pub notices_sent: u64,
    /// Notices taken from peers (their range probed).
    pub notices_taken: u64,
}

/// The largest WRITE or READ (like ibverbs' `max_msg_sz`): 1 GiB. A larger
/// work request completes with BadRequest at once.
pub const MAX_MSG: u64 = 1 << 30;

/// The largest span the libOS makes present on one fault (a 2 MiB block):
/// a responder that faults on a WRITE probes one page per span of the rest
/// of the RETH range, so that the libOS resolves them together.
pub const HOLD_SPAN: u64 = 2 << 20;

/// The queue pair number a node uses for its connection with node `peer`.
pub fn qpn_for(peer: u16) -> u32 {
    0x100 + u32::from(peer)
}

/// What the libOS says of a page the engine faulted on (PAGE_READY), in
/// the same words as the libOS's own `PageReadiness`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageReadiness {
    /// The page is resident now: the access may be tried again.
    Resolved,
    /// The page can never be made resident: the access fails.
    Failed,
}

/// How many early RESUMEs are remembered.
const EARLY_RESUMES: usize = 256;

/// Where a parked request waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Park {
    /// The local page that faulted.
    pub page: u64,
    /// When to retry anyway.
    pub due: u64,
    /// The request's `wr_id` (for RESUME).
    pub wr_id: u64,
}

/// A local COPY in progress.
struct Copy {
    wr: WorkRequest,
    copied: u64,
    parked: Option<Park>,
    last_fault: Option<u64>,
    same_page_faults: u32,
    local_faults: u32,
}

/// One node's engine.
pub struct Engine {
    rank: u16,
    me: Ipv4Addr,
    /// The queue pairs, by the handle work requests name (`node`).
    peers: Peers,
    cfg: Config,
    next_id: u64,
    copies: BTreeMap<u64, Copy>,
    /// Per peer node: the requester and responder of its queue pair.
    requesters: Vec<Requester>,
    responders: Vec<Responder>,
    /// RECVs posted for SENDs and WRITEs with immediate, oldest first.
    recvs: VecDeque<WorkRequest>,
    ids: ids::Ids,
    /// What this node exposed to the others (checked on every request).
    exposures: Exposures,
    early_resumes: VecDeque<(u64, bool)>,
    completions: Vec<Completion>,
    packets: Vec<(u16, Vec<u8>)>,
    /// What it has done.
    pub counters: Counters,
}

impl Engine {
    /// The engine of node `rank` in a cluster whose nodes have the IPv4
    /// addresses `addrs` (by rank).
    pub fn new(rank: u16, addrs: Vec<Ipv4Addr>, mut cfg: Config) -> Self {
        cfg.mtu = cfg.mtu.clamp(256, 4096);
        let n = addrs.len();
        Self {
            rank,
            me: addrs[usize::from(rank)],
            peers: Peers::cluster(rank, &addrs, cfg.mtu),
            cfg,
            next_id: 1,
            copies: BTreeMap::new(),
            requesters: (0..n).map(|_| Requester::default()).collect(),
            responders: (0..n).map(|_| Responder::default()).collect(),
            recvs: VecDeque::new(),
            ids: ids::Ids::new(),
            exposures: Exposures::default(),
            early_resumes: VecDeque::new(),
            completions: Vec::new(),
            packets: Vec::new(),
            counters: Counters::default(),
        }
    }

    /// Completions produced since the last call, in order.
    pub fn take_completions(&mut self) -> Vec<Completion> {
        std::mem::take(&mut self.completions)
    }

    /// Packets to send (destination rank, UDP payload) since the last call.
    pub fn take_packets(&mut self) -> Vec<(u16, Vec<u8>)> {
        std::mem::take(&mut self.packets)
    }

    /// Whether requests are in progress (the caller should tick soon).
    pub fn busy(&self) -> bool {
        !self.copies.is_empty()
            || self.requesters.iter().any(Requester::busy)
            || self.responders.iter().any(Responder::busy)
    }

    /// Queue pair handles in use or usable (the bound of every loop over
    /// them).
    fn handles(&self) -> u16 {
        self.peers.handles() as u16
    }

    /// Where packets for queue pair `handle` go, if it is connected.
    pub fn peer_addr(&self, handle: u16) -> Option<Ipv4Addr> {
        self.peers.connected(handle).map(|(_, a)| a)
    }

    /// The path MTU of queue pair `peer`.
    fn mtu(&self, peer: u16) -> u32 {
        self.peers.get(peer).map_or(self.cfg.mtu, |p| p.mtu)
    }

    /// Whether queue pair `peer` leads to a Faultline node (which takes
    /// notices).
    fn faultline_peer(&self, peer: u16) -> bool {
        self.peers.get(peer).is_some_and(|p| p.faultline)
    }

    /// The path of a packet of ours to `peer` (for the ICRC).
    fn path_to(&self, peer: Ipv4Addr) -> Ipv4Path {
        Ipv4Path::outgoing(self.me.octets(), peer.octets(), self.cfg.port)
    }

    /// The BTH of a packet of ours on queue pair `peer`.
    fn bth(&self, peer: u16, opcode: packet::Opcode, psn: u32, ack_req: bool) -> packet::Bth {
        packet::Bth {
            opcode,
            solicited: false,
            pkey: packet::DEFAULT_PKEY,
            dest_qp: self.peers.get(peer).map_or(0, |p| p.remote_qpn),
            ack_req,
            psn,
        }
    }

    /// Encodes `p` for `peer` and queues it (nothing if the queue pair is
    /// not connected).
    fn emit(&mut self, peer: u16, p: &packet::Packet<'_>) {
        let Some(addr) = self.peer_addr(peer) else {
            return;
        };
        let path = self.path_to(addr);
        let mut out = Vec::with_capacity(packet::wire_len(p.bth.opcode, p.payload.len()));
        packet::encode(p, &path, &mut out);
        self.packets.push((peer, out));
    }

    /// QP_CREATE: a queue pair for a peer outside the cluster.
    fn qp_create(&mut self, wr: &WorkRequest) {
        let (h, qpn) = match self.peers.create(self.cfg.mtu) {
            Ok(made) => made,
            Err(_) => return self.complete_now(wr, Status::BadRequest),
        };
        // A random first PSN, as RC asks: a packet of an earlier queue pair
        // with the same peer is unlikely to fall in the window.
        let psn = (self.ids.next(|_| false) as u32) & packet::PSN_MASK;
        let h_us = usize::from(h);
        if self.requesters.len() <= h_us {
            self.requesters.resize_with(h_us + 1, Requester::default);
            self.responders.resize_with(h_us + 1, Responder::default);
        }
        self.requesters[h_us] = Requester::starting_at(psn);
        self.responders[h_us] = Responder::default();
        self.completions.push(Completion {
            opcode: wr.opcode,
            node: h,
            imm: psn,
            flags: hw::rdma::wire::CQE_HAS_IMM,
            key: u64::from(qpn),
            wr_id: wr.wr_id,
            ..Completion::default()
        });
    }

    /// QP_CONNECT: the peer's address and numbers for a queue pair made by
    /// QP_CREATE.
    fn qp_connect(&mut self, wr: &WorkRequest) {
        let addr = u32::try_from(wr.remote_va).map(Ipv4Addr::from);
        let qpn = u32::try_from(wr.key).unwrap_or(u32::MAX);
        let mtu = match wr.len {
            0 => self.cfg.mtu,
            m => u32::try_from(m).unwrap_or(0),
        };
        let connected = match addr {
            Ok(a) => self.peers.connect(wr.node, a, qpn, mtu),
            Err(_) => Err(PeerError::BadParameters),
        };
        match connected {
            Ok(()) => {
                let h = usize::from(wr.node);
                self.responders[h] = Responder::expecting(wr.imm & packet::PSN_MASK);
                self.complete_now(wr, Status::Success);
            }
            Err(_) => self.complete_now(wr, Status::BadRequest),
        }
    }

    /// QP_DESTROY: ends a queue pair made by QP_CREATE; what it still had
    /// to do fails.
    fn qp_destroy(&mut self, wr: &WorkRequest) {
        if self.peers.destroy(wr.node).is_err() {
            return self.complete_now(wr, Status::BadRequest);
        }
        let h = usize::from(wr.node);
        let left = std::mem::take(&mut self.requesters[h]).into_requests();
        self.responders[h] = Responder::default();
        for w in left {
            self.complete_now(&w, Status::PeerUnreachable);
        }
        self.complete_now(wr, Status::Success);
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

    /// Takes one work request from the driver.
    pub fn post(&mut self, wr: WorkRequest, dma: &mut dyn Dma, now: u64) {
        let Some(op) = Opcode::from_u8(wr.opcode) else {
            return self.complete_now(&wr, Status::BadRequest);
        };
        let remote = matches!(op, Opcode::Write | Opcode::Read | Opcode::Send);
        let wraps = |va: u64| va.checked_add(wr.len).is_none();
        let bad = (remote && self.peers.connected(wr.node).is_none())
            || (op == Opcode::Send && wr.len > MAX_SEND)
            || (matches!(op, Opcode::Write | Opcode::Read) && wr.len > MAX_MSG)
            || (matches!(op, Opcode::Write | Opcode::Read) && wr.key > u64::from(u32::MAX))
            || (op == Opcode::Recv && wr.len > MAX_SEND)
            || (matches!(
                op,
                Opcode::Copy | Opcode::Write | Opcode::Read | Opcode::Send | Opcode::Recv
            ) && wraps(wr.local_va))
            || (matches!(op, Opcode::Copy | Opcode::Write | Opcode::Read) && wraps(wr.remote_va));
        if bad {
            if !op.is_control() {
                self.complete_now(&wr, Status::BadRequest);
            }
            return;
        }
        match op {
            Opcode::Hello => self.completions.push(Completion {
                opcode: wr.opcode,
                node: self.rank,
                imm: self.peers.nodes() as u32,
                key: u64::from(u32::from(self.me)),
                len: u64::from(self.cfg.mtu),
                wr_id: wr.wr_id,
                ..Completion::default()
            }),
            Opcode::Recv => {
                self.recvs.push_back(wr);
                // A SEND that waits for a RECV (RNR) goes on at its retry.
            }
            Opcode::Resume => self.resume(wr.wr_id, wr.flags & RESUME_ABORT != 0, dma, now),
            Opcode::PageReady => {
                let readiness = if wr.flags & PAGE_READY_FAILED != 0 {
                    PageReadiness::Failed
                } else {
                    PageReadiness::Resolved
                };
                self.page_ready(wr.local_va, readiness, dma, now)
            }
            Opcode::Expose => {
                let ids = &mut self.ids;
                let exposed = self
                    .exposures
                    .expose(wr.local_va, wr.len, wr.flags, |taken| ids.next_key(taken));
                match exposed {
                    Ok(key) => self.completions.push(Completion {
                        opcode: wr.opcode,
                        wr_id: wr.wr_id,
                        len: wr.len,
                        key: u64::from(key),
                        ..Completion::default()
                    }),
                    Err(_) => self.complete_now(&wr, Status::BadRequest),
                }
            }
            Opcode::Revoke => {
                // The engine takes one request or packet at a time: once
                // this returns, no request can pass with the key, and none
                // that passed is still placing.
                let ok = u32::try_from(wr.key).is_ok_and(|k| self.exposures.revoke(k));
                let status = if ok {
                    Status::Success
                } else {
                    Status::BadRequest
                };
                self.complete_now(&wr, status);
            }
            Opcode::Copy => {
                let id = self.next_id;
                self.next_id += 1;
                self.copies.insert(
                    id,
                    Copy {
                        wr,
                        copied: 0,
                        parked: None,
                        last_fault: None,
                        same_page_faults: 0,
                        local_faults: 0,
                    },
                );
                self.run_copy(id, now, dma);
            }
            Opcode::QpCreate => self.qp_create(&wr),
            Opcode::QpConnect => self.qp_connect(&wr),
            Opcode::QpDestroy => self.qp_destroy(&wr),
            Opcode::Write | Opcode::Read | Opcode::Send => {
                let peer = wr.node;
                self.requesters[usize::from(peer)].post(wr, op);
                self.pump(peer, dma, now);
            }
        }
    }

    /// Takes one UDP payload that cluster node `from` sent from UDP port
    /// `port` as Faultline engines send (identification 0, Don't
    /// Fragment): what host tests and the fuzzer feed.
    pub fn on_packet(&mut self, from: u16, port: u16, bytes: &[u8], dma: &mut dyn Dma, now: u64) {
        let Some(src) = self.peer_addr(from) else {
            self.counters.strangers += 1;
            return;
        };
        let mut path = self.path_to(src);
        std::mem::swap(&mut path.src, &mut path.dst);
        path.src_port = port;
        self.on_datagram(&path, bytes, dma, now);
    }

    /// Takes one UDP payload that arrived with the IPv4 and UDP headers
    /// `path`. Anything from an address that is no peer's, malformed, with
    /// a bad ICRC, or for a queue pair that is not the sender's is dropped
    /// and counted.
    pub fn on_datagram(&mut self, path: &Ipv4Path, bytes: &[u8], dma: &mut dyn Dma, now: u64) {
        let src = Ipv4Addr::from(path.src);
        if !self.peers.knows(src) {
            self.counters.strangers += 1;
            return;
        }
        let p = match packet::decode(bytes, path) {
            Ok(p) => p,
            Err(PacketError::BadIcrc) => {
                self.counters.bad_icrc += 1;
                return;
            }
            Err(_) => {
                self.counters.malformed += 1;
                return;
            }
        };
        let Some(from) = self.peers.for_packet(p.bth.dest_qp, src) else {
            self.counters.unknown_qpn += 1;
            return;
        };
        if p.bth.opcode.is_request() {
            self.on_request(from, &p, dma, now);
        } else {
            self.on_response(from, &p, dma, now);
        }
    }

    /// Runs timers: retransmissions, RNR waits, fault fallbacks, READ
    /// responses still to send.
    pub fn tick(&mut self, dma: &mut dyn Dma, now: u64) {
        let ids: Vec<u64> = self.copies.keys().copied().collect();
        for id in ids {
            if self.copies[&id].parked.is_some_and(|p| now >= p.due) {
                self.copies.get_mut(&id).expect("listed").parked = None;
                self.run_copy(id, now, dma);
            }
        }
        for peer in 0..self.handles() {
            self.tick_requester(peer, dma, now);
            self.pump_reads(peer, dma, now);
        }
    }

    fn run_copy(&mut self, id: u64, now: u64, dma: &mut dyn Dma) {
        let Some(c) = self.copies.get_mut(&id) else {
            return;
        };
        let (src, dst, len, done) = (c.wr.local_va, c.wr.remote_va, c.wr.len, c.copied);
        match dma.copy(src + done, dst + done, len - done) {
            Ok(()) => {
                let c = self.copies.remove(&id).expect("present");
                self.counters.bytes += c.wr.len;
                self.completions.push(Completion {
                    opcode: c.wr.opcode,
                    status: Status::Success as u8,
                    wr_id: c.wr.wr_id,
                    len: c.wr.len,
                    local_faults: c.local_faults,
                    ..Completion::default()
                });
            }
            Err(f) => {
                c.copied += f.done;
                let wr_id = c.wr.wr_id;
                match f.kind {
                    FaultKind::Smmu => {
                        c.local_faults += 1;
                        c.same_page_faults = if c.last_fault == Some(f.va) {
                            c.same_page_faults + 1
                        } else {
                            1
                        };
                        c.last_fault = Some(f.va);
                        if c.same_page_faults > self.cfg.max_local_faults {
                            return self.end_copy(id, Status::RetriesExhausted, f.va);
                        }
                        match self.park_due(wr_id, now) {
                            Some(due) => {
                                if let Some(c) = self.copies.get_mut(&id) {
                                    c.parked = Some(Park {
                                        page: f.va,
                                        due,
                                        wr_id,
                                    });
                                }
                            }
                            None => self.end_copy(id, Status::LocalAccessError, f.va),
                        }
                    }
                    FaultKind::Fatal => self.end_copy(id, Status::LocalAccessError, f.va),
                }
            }
        }
    }

    fn end_copy(&mut self, id: u64, status: Status, fault_va: u64) {
        if let Some(c) = self.copies.remove(&id) {
            self.completions.push(Completion {
                opcode: c.wr.opcode,
                status: status as u8,
                wr_id: c.wr.wr_id,
                local_faults: c.local_faults,
                fault_va,
                ..Completion::default()
            });
        }
    }

    /// When a request parking now retries anyway: soon if its RESUME came
    /// early, after the fallback otherwise; `None` if an early RESUME
    /// aborted it.
    fn park_due(&mut self, wr_id: u64, now: u64) -> Option<u64> {
        match self.early_resumes.iter().position(|&(w, _)| w == wr_id) {
            Some(i) => {
                let (_, abort) = self.early_resumes.remove(i).expect("index from position");
                (!abort).then_some(now)
            }
            None => Some(now + self.cfg.fault_fallback),
        }
    }

    fn resume(&mut self, wr_id: u64, abort: bool, dma: &mut dyn Dma, now: u64) {
        let copy = self
            .copies
            .iter()
            .find(|(_, c)| c.parked.is_some_and(|p| p.wr_id == wr_id))
            .map(|(&id, c)| (id, c.parked));
        if let Some((id, Some(p))) = copy {
            if abort {
                return self.end_copy(id, Status::LocalAccessError, p.page);
            }
            self.copies.get_mut(&id).expect("found").parked = None;
            return self.run_copy(id, now, dma);
        }
        let qp = (0..self.handles()).find(|&q| self.requesters[usize::from(q)].parked_on_wr(wr_id));
        if let Some(peer) = qp {
            let readiness = if abort {
                PageReadiness::Failed
            } else {
                PageReadiness::Resolved
            };
            return self.unpark_requester(peer, readiness, dma, now);
        }
        if self.early_resumes.len() == EARLY_RESUMES {
            self.early_resumes.pop_front();
        }
        self.early_resumes.push_back((wr_id, abort));
    }

    fn page_ready(&mut self, va: u64, readiness: PageReadiness, dma: &mut dyn Dma, now: u64) {
        let failed = readiness == PageReadiness::Failed;
        let page = crate::dma::page_of(va);
        let parked: Vec<u64> = self
            .copies
            .iter()
            .filter(|(_, c)| c.parked.is_some_and(|p| p.page == page))
            .map(|(&id, _)| id)
            .collect();
        for id in parked {
            if failed {
                self.end_copy(id, Status::LocalAccessError, page);
            } else {
                self.copies.get_mut(&id).expect("listed").parked = None;
                self.run_copy(id, now, dma);
            }
        }
        for peer in 0..self.handles() {
            if self.requesters[usize::from(peer)].parked_on_page(page) {
                self.unpark_requester(peer, readiness, dma, now);
            }
            self.responder_page_ready(peer, page, readiness, dma, now);
        }
    }
}

/// Why a cluster description is refused.
pub fn check_addrs(addrs: &[Ipv4Addr]) -> Result<(), String> {
    if addrs.is_empty() || addrs.len() > 0xfeff {
        return Err("a cluster has 1 to 65279 nodes".into());
    }
    for (i, a) in addrs.iter().enumerate() {
        if addrs[..i].contains(a) {
            return Err(format!("address {a} is given to two nodes"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod foreign_tests;
#[cfg(test)]
mod tests;
