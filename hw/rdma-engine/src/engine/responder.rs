//! The responder side of a Reliable Connection: requests are taken strictly
//! in PSN order, placed or read through this node's SMMU, acknowledged.
//!
//! ```text
//!  request at the expected PSN ─▶ first packet of a WRITE or READ: the
//!        │                        RETH's whole range is checked against the
//!        │                        exposures (NAK remote access error:
//!        │                        nothing placed) ─▶ placed, PSN + 1,
//!        │                        ACK if asked (AckReq)
//!        ├─ page fault placing it ─▶ RNR NAK at this PSN (the requester
//!        │                          sends again from here); the rest of the
//!        │                          WRITE's range is probed once, so the
//!        │                          libOS resolves it all together;
//!        │                          PAGE_READY: a duplicate ACK ("send now")
//!        ├─ SEND or WRITE with immediate, no RECV posted ─▶ RNR NAK
//!        └─ page that cannot be resolved ─▶ NAK remote operational error
//!  request past the expected PSN ─▶ NAK PSN sequence error (once per gap)
//!  request before it (a duplicate) ─▶ WRITE/SEND: ACK again, nothing placed
//!                                    READ: its responses sent again
//!  READ request ─▶ responses (First/Middle/Last or Only, AETH on the ends),
//!                  a burst per turn; a page fault stalls them until
//!                  PAGE_READY (or the requester asks again)
//! ```

use super::{Engine, PageReadiness, HOLD_SPAN};
use crate::dma::{page_of, Dma, FaultKind};
use crate::roce::packet::{
    psn_add, psn_diff, rnr_code_for, Aeth, NakCode, Opcode as Rc, Packet, Reth, Syndrome,
    CREDITS_UNLIMITED,
};
use hw::rdma::wire::{Completion, Opcode, Status, WorkRequest, CQE_HAS_IMM};
use std::collections::VecDeque;

/// Duplicates further back than this many PSNs are dropped unanswered.
const DUPLICATE_WINDOW: i32 = 1 << 22;

/// Spans of [`HOLD_SPAN`] probed at most on a WRITE's first fault.
const PROBE_SPANS: u64 = 32;

/// The message in progress.
#[derive(Clone, Copy, Debug)]
enum Msg {
    /// A WRITE: where its next byte goes and how many are left; its end.
    Write { va: u64, left: u64, end: u64 },
    /// A SEND into the oldest RECV: bytes placed so far.
    Send { placed: u64, recv: WorkRequest },
}

/// READ responses still to send.
#[derive(Clone, Copy, Debug)]
struct ReadJob {
    psn: u32,
    va: u64,
    left: u64,
    first: bool,
    /// The page a fault stopped it at.
    stalled: Option<u64>,
}

/// The responder of one queue pair.
#[derive(Default)]
pub(super) struct Responder {
    epsn: u32,
    msn: u32,
    nak_sent: bool,
    msg: Option<Msg>,
    /// Whether the current WRITE's range was probed after a fault.
    probed: bool,
    reads: VecDeque<ReadJob>,
    /// The page an RNR NAK was sent for (at `epsn`).
    waiting: Option<u64>,
    /// An error NAK was sent at this PSN: what is left of that message
    /// is dropped quietly.
    abandoned: Option<u32>,
    /// Request packets taken since the last acknowledgement.
    unacked: u32,
}

impl Responder {
    /// A responder whose peer's first packet has PSN `psn`.
    pub fn expecting(psn: u32) -> Self {
        Self {
            epsn: psn,
            ..Self::default()
        }
    }

    /// The PSN this responder expects next.
    pub fn expected(&self) -> u32 {
        self.epsn
    }

    pub fn busy(&self) -> bool {
        self.reads.iter().any(|j| j.stalled.is_none())
    }
}

/// Packets taken before an acknowledgement nobody asked for goes out
/// ([`Engine::acknowledge_batch`]): a quarter of rxe's window.
pub const UNSOLICITED_ACK_AFTER: u32 = 32;

/// What became of one request packet.
enum Outcome {
    /// Taken: the expected PSN moves on by this many.
    Done(u32),
    /// Not taken; answered (or dropped) already.
    Stopped,
}

impl Engine {
    /// Acknowledges, on every queue pair that took at least
    /// [`UNSOLICITED_ACK_AFTER`] packets since its last acknowledgement,
    /// up to the last PSN in order: the driver calls it after each batch of
    /// received packets. A sender asks for an ACK only now and then (rxe:
    /// on a message's last packet) but stops at a window of unacknowledged
    /// PSNs (rxe: 128); an ACK per 32 packets keeps it going without making
    /// it read an ACK per packet.
    pub fn acknowledge_batch(&mut self) {
        for peer in 0..self.handles() {
            let s = &mut self.responders[usize::from(peer)];
            if s.unacked < UNSOLICITED_ACK_AFTER {
                continue;
            }
            s.unacked = 0;
            let last = psn_add(s.epsn, 0xff_ffff);
            self.ack(
                peer,
                last,
                Syndrome::Ack {
                    credits: CREDITS_UNLIMITED,
                },
            );
        }
    }

    fn ack(&mut self, peer: u16, psn: u32, syndrome: Syndrome) {
        let msn = self.responders[usize::from(peer)].msn;
        let p = Packet {
            bth: self.bth(peer, Rc::Acknowledge, psn, false),
            reth: None,
            imm: None,
            aeth: Some(Aeth { syndrome, msn }),
            payload: &[],
        };
        self.emit(peer, &p);
    }

    fn nak(&mut self, peer: u16, psn: u32, code: NakCode) {
        if code != NakCode::PsnSequenceError {
            let s = &mut self.responders[usize::from(peer)];
            s.msg = None;
            s.abandoned = Some(psn);
            s.waiting = None;
        }
        self.ack(peer, psn, Syndrome::Nak(code));
    }

    fn rnr(&mut self, peer: u16, psn: u32, page: Option<u64>) {
        self.counters.rnr_sent += 1;
        self.responders[usize::from(peer)].waiting = page;
        let timer = rnr_code_for(self.cfg.rnr_wait);
        self.ack(peer, psn, Syndrome::Rnr { timer });
    }

    /// A request packet from `peer`.
    pub(super) fn on_request(&mut self, peer: u16, p: &Packet<'_>, dma: &mut dyn Dma, now: u64) {
        let q = usize::from(peer);
        let psn = p.bth.psn;
        let d = psn_diff(psn, self.responders[q].epsn);
        if d > 0 {
            self.counters.psn_out_of_window += 1;
            let s = &mut self.responders[q];
            if !s.nak_sent {
                s.nak_sent = true;
                let e = s.epsn;
                self.ack(peer, e, Syndrome::Nak(NakCode::PsnSequenceError));
            }
            return;
        }
        if d < 0 {
            if d < -DUPLICATE_WINDOW {
                self.counters.psn_out_of_window += 1;
                return;
            }
            return self.duplicate(peer, p, dma, now);
        }
        match self.take(peer, p, dma, now) {
            Outcome::Done(n) => {
                let s = &mut self.responders[q];
                s.epsn = psn_add(s.epsn, n);
                s.nak_sent = false;
                s.abandoned = None;
                s.waiting = None;
                if p.bth.opcode != Rc::ReadRequest {
                    s.unacked += 1;
                }
                if p.bth.ack_req && p.bth.opcode != Rc::ReadRequest {
                    self.responders[q].unacked = 0;
                    self.ack(
                        peer,
                        psn,
                        Syndrome::Ack {
                            credits: CREDITS_UNLIMITED,
                        },
                    );
                }
                if p.bth.opcode == Rc::ReadRequest {
                    self.pump_reads(peer, dma, now);
                }
            }
            Outcome::Stopped => {}
        }
    }

    /// A request at the expected PSN.
    fn take(&mut self, peer: u16, p: &Packet<'_>, dma: &mut dyn Dma, _now: u64) -> Outcome {
        let q = usize::from(peer);
        let psn = p.bth.psn;
        let mtu = u64::from(self.mtu(peer));
        let op = p.bth.opcode;
        let n = p.payload.len() as u64;
        let starts = matches!(
            op,
            Rc::WriteFirst
                | Rc::WriteOnly
                | Rc::WriteOnlyImm
                | Rc::SendFirst
                | Rc::SendOnly
                | Rc::SendOnlyImm
                | Rc::ReadRequest
        );
        let s = &self.responders[q];
        if starts != s.msg.is_none() {
            if !starts && s.abandoned == Some(psn) {
                // The rest of a message we refused: nothing to say.
                return Outcome::Stopped;
            }
            self.counters.out_of_sequence += 1;
            self.nak(peer, psn, NakCode::InvalidRequest);
            return Outcome::Stopped;
        }
        let with_imm = matches!(
            op,
            Rc::WriteOnlyImm | Rc::WriteLastImm | Rc::SendOnlyImm | Rc::SendLastImm
        );
        match op {
            Rc::ReadRequest => {
                let Some(r) = p.reth else {
                    return Outcome::Stopped;
                };
                if !self.allowed(peer, psn, &r, false) {
                    return Outcome::Stopped;
                }
                let npkts = u64::from(r.len).div_ceil(mtu).max(1) as u32;
                self.responders[q].reads.push_back(ReadJob {
                    psn,
                    va: r.va,
                    left: u64::from(r.len),
                    first: true,
                    stalled: None,
                });
                self.responders[q].msn = psn_add(self.responders[q].msn, 1);
                Outcome::Done(npkts)
            }
            Rc::WriteFirst | Rc::WriteOnly | Rc::WriteOnlyImm => {
                let Some(r) = p.reth else {
                    return Outcome::Stopped;
                };
                let len = u64::from(r.len);
                let fits = if op == Rc::WriteFirst {
                    n == mtu && len > mtu
                } else {
                    n == len && n <= mtu
                };
                if !fits {
                    self.counters.out_of_sequence += 1;
                    self.nak(peer, psn, NakCode::InvalidRequest);
                    return Outcome::Stopped;
                }
                if !self.allowed(peer, psn, &r, true) {
                    return Outcome::Stopped;
                }
                self.responders[q].probed = false;
                let end = r.va + len;
                self.place_write(peer, psn, r.va, len, end, p, with_imm, dma)
            }
            Rc::WriteMiddle | Rc::WriteLast | Rc::WriteLastImm => {
                let Some(Msg::Write { va, left, end }) = self.responders[q].msg else {
                    self.counters.out_of_sequence += 1;
                    self.nak(peer, psn, NakCode::InvalidRequest);
                    return Outcome::Stopped;
                };
                let fits = if op == Rc::WriteMiddle {
                    n == mtu && left > mtu
                } else {
                    n == left
                };
                if !fits {
                    self.counters.out_of_sequence += 1;
                    self.nak(peer, psn, NakCode::InvalidRequest);
                    return Outcome::Stopped;
                }
                self.place_write(peer, psn, va, left, end, p, with_imm, dma)
            }
            _ => self.place_send(peer, psn, p, with_imm, dma),
        }
    }

    /// Whether the RETH `r` may be used for a read (or `write`); if not, it
    /// was answered NAK remote access error and counted. A zero-length
    /// request touches no memory, so its R_Key is not checked (as the
    /// specification says; a WRITE with immediate of no data is how a
    /// message is signalled).
    fn allowed(&mut self, peer: u16, psn: u32, r: &Reth, write: bool) -> bool {
        if r.len == 0 {
            return true;
        }
        let end = r.va.checked_add(u64::from(r.len));
        let ok = end.is_some_and(|end| self.exposures.check(r.rkey, r.va..end, write).is_ok());
        if !ok {
            self.counters.refused += 1;
            self.nak(peer, psn, NakCode::RemoteAccessError);
        }
        ok
    }

    /// Places one WRITE packet at `va` (`left` bytes of the message remain,
    /// it ends at `end`).
    #[allow(clippy::too_many_arguments)]
    fn place_write(
        &mut self,
        peer: u16,
        psn: u32,
        va: u64,
        left: u64,
        end: u64,
        p: &Packet<'_>,
        with_imm: bool,
        dma: &mut dyn Dma,
    ) -> Outcome {
        let q = usize::from(peer);
        if with_imm && self.recvs.is_empty() {
            self.rnr(peer, psn, None);
            return Outcome::Stopped;
        }
        if !p.payload.is_empty() {
            if let Err(f) = dma.write(va, p.payload) {
                return self.placing_fault(peer, psn, f.va, f.kind, end, true, dma);
            }
        }
        let n = p.payload.len() as u64;
        if n == left {
            let s = &mut self.responders[q];
            s.msg = None;
            s.msn = psn_add(s.msn, 1);
            if with_imm {
                let recv = self.recvs.pop_front().expect("checked");
                self.completions.push(Completion {
                    opcode: Opcode::Recv as u8,
                    status: Status::Success as u8,
                    node: peer,
                    wr_id: recv.wr_id,
                    imm: p.imm.unwrap_or(0),
                    flags: CQE_HAS_IMM,
                    ..Completion::default()
                });
            }
        } else {
            self.responders[q].msg = Some(Msg::Write {
                va: va + n,
                left: left - n,
                end,
            });
        }
        self.counters.bytes += n;
        Outcome::Done(1)
    }

    /// Places one SEND packet into the oldest RECV.
    fn place_send(
        &mut self,
        peer: u16,
        psn: u32,
        p: &Packet<'_>,
        with_imm: bool,
        dma: &mut dyn Dma,
    ) -> Outcome {
        let q = usize::from(peer);
        let (placed, recv) = match self.responders[q].msg {
            Some(Msg::Send { placed, recv }) => (placed, recv),
            _ => match self.recvs.front() {
                Some(&recv) => (0, recv),
                None => {
                    self.rnr(peer, psn, None);
                    return Outcome::Stopped;
                }
            },
        };
        let n = p.payload.len() as u64;
        if placed + n > recv.len {
            self.counters.out_of_sequence += 1;
            self.nak(peer, psn, NakCode::InvalidRequest);
            return Outcome::Stopped;
        }
        if let Err(f) = dma.write(recv.local_va + placed, p.payload) {
            return self.placing_fault(peer, psn, f.va, f.kind, 0, false, dma);
        }
        let last = matches!(
            p.bth.opcode,
            Rc::SendOnly | Rc::SendOnlyImm | Rc::SendLast | Rc::SendLastImm
        );
        let s = &mut self.responders[q];
        if last {
            s.msg = None;
            s.msn = psn_add(s.msn, 1);
            self.recvs.pop_front();
            self.counters.bytes += placed + n;
            self.completions.push(Completion {
                opcode: Opcode::Recv as u8,
                status: Status::Success as u8,
                node: peer,
                wr_id: recv.wr_id,
                len: placed + n,
                imm: if with_imm { p.imm.unwrap_or(0) } else { 0 },
                flags: if with_imm { CQE_HAS_IMM } else { 0 },
                ..Completion::default()
            });
        } else {
            s.msg = Some(Msg::Send {
                placed: placed + n,
                recv,
            });
        }
        Outcome::Done(1)
    }

    /// Placing the packet at `psn` faulted on `page`.
    #[allow(clippy::too_many_arguments)]
    fn placing_fault(
        &mut self,
        peer: u16,
        psn: u32,
        page: u64,
        kind: FaultKind,
        end: u64,
        write: bool,
        dma: &mut dyn Dma,
    ) -> Outcome {
        if kind == FaultKind::Fatal {
            self.nak(peer, psn, NakCode::RemoteOperationalError);
            return Outcome::Stopped;
        }
        self.rnr(peer, psn, Some(page));
        let s = &mut self.responders[usize::from(peer)];
        if write && !s.probed {
            // Let the libOS resolve the rest of the range with this page.
            s.probed = true;
            let mut at = (page & !(HOLD_SPAN - 1)) + HOLD_SPAN;
            for _ in 0..PROBE_SPANS {
                if at >= end {
                    break;
                }
                let _ = dma.probe(at, true);
                at += HOLD_SPAN;
            }
        }
        Outcome::Stopped
    }

    /// A request before the expected PSN: sent again by a requester that
    /// did not hear our answer.
    fn duplicate(&mut self, peer: u16, p: &Packet<'_>, dma: &mut dyn Dma, now: u64) {
        let q = usize::from(peer);
        self.counters.duplicates += 1;
        let psn = p.bth.psn;
        if p.bth.opcode == Rc::ReadRequest {
            let Some(r) = p.reth else { return };
            let end = r.va.checked_add(u64::from(r.len));
            let ok = end.is_some_and(|end| self.exposures.check(r.rkey, r.va..end, false).is_ok());
            if !ok {
                self.counters.refused += 1;
                return;
            }
            // The responses go again from this PSN; later READs come again
            // with the requester's go-back and are replayed in their turn.
            let s = &mut self.responders[q];
            s.reads.clear();
            s.reads.push_back(ReadJob {
                psn,
                va: r.va,
                left: u64::from(r.len),
                first: true,
                stalled: None,
            });
            return self.pump_reads(peer, dma, now);
        }
        if p.bth.ack_req {
            let e = psn_add(self.responders[q].epsn, 0xff_ffff);
            self.ack(
                peer,
                e,
                Syndrome::Ack {
                    credits: CREDITS_UNLIMITED,
                },
            );
        }
    }

    /// Sends the READ responses of queue pair `peer` that can go now.
    pub(super) fn pump_reads(&mut self, peer: u16, dma: &mut dyn Dma, _now: u64) {
        let q = usize::from(peer);
        let mtu = u64::from(self.mtu(peer));
        let mut buf = vec![0u8; mtu as usize];
        for _ in 0..self.cfg.read_burst {
            let Some(j) = self.responders[q].reads.front().copied() else {
                return;
            };
            if j.stalled.is_some() {
                return;
            }
            let n = mtu.min(j.left) as usize;
            if let Err(f) = dma.read(j.va, &mut buf[..n]) {
                let s = &mut self.responders[q];
                if f.kind == FaultKind::Fatal {
                    // It cannot be answered: the READ fails, and the
                    // requester's next request takes its PSN.
                    s.reads.clear();
                    s.epsn = j.psn;
                    self.nak(peer, j.psn, NakCode::RemoteOperationalError);
                    return;
                }
                if let Some(front) = s.reads.front_mut() {
                    front.stalled = Some(page_of(f.va));
                }
                return;
            }
            let last = j.left <= mtu;
            let opcode = match (j.first, last) {
                (true, true) => Rc::ReadResponseOnly,
                (true, false) => Rc::ReadResponseFirst,
                (false, true) => Rc::ReadResponseLast,
                (false, false) => Rc::ReadResponseMiddle,
            };
            let msn = self.responders[q].msn;
            let aeth = (opcode != Rc::ReadResponseMiddle).then_some(Aeth {
                syndrome: Syndrome::Ack {
                    credits: CREDITS_UNLIMITED,
                },
                msn,
            });
            let p = Packet {
                bth: self.bth(peer, opcode, j.psn, false),
                reth: None,
                imm: None,
                aeth,
                payload: &buf[..n],
            };
            self.emit(peer, &p);
            let s = &mut self.responders[q];
            if last {
                s.reads.pop_front();
            } else if let Some(front) = s.reads.front_mut() {
                front.psn = psn_add(j.psn, 1);
                front.va += n as u64;
                front.left -= n as u64;
                front.first = false;
            }
        }
    }

    /// The libOS dealt with `page`: a WRITE or SEND answered RNR NAK for it
    /// may come now (a duplicate ACK tells a Faultline requester so), and
    /// READ responses stalled on it go on.
    pub(super) fn responder_page_ready(
        &mut self,
        peer: u16,
        page: u64,
        readiness: PageReadiness,
        dma: &mut dyn Dma,
        now: u64,
    ) {
        let failed = readiness == PageReadiness::Failed;
        let q = usize::from(peer);
        let s = &mut self.responders[q];
        if s.waiting == Some(page) {
            s.waiting = None;
            let e = s.epsn;
            if failed {
                self.nak(peer, e, NakCode::RemoteOperationalError);
            } else {
                self.ack(
                    peer,
                    psn_add(e, 0xff_ffff),
                    Syndrome::Ack {
                        credits: CREDITS_UNLIMITED,
                    },
                );
            }
        }
        let s = &mut self.responders[q];
        let Some(front) = s.reads.front_mut() else {
            return;
        };
        if front.stalled == Some(page) {
            front.stalled = None;
            if failed {
                let psn = front.psn;
                s.reads.clear();
                s.epsn = psn;
                self.nak(peer, psn, NakCode::RemoteOperationalError);
            } else {
                self.pump_reads(peer, dma, now);
            }
        }
    }
}
