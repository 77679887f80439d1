//! Two or three engines joined by a simulated link with simulated memories:
//! every scenario is deterministic (time is a number the test advances),
//! and every packet on the link is real RoCEv2, ICRC included.

use super::*;
use crate::dma::{FlatMemory, PAGE};
use crate::roce::packet::{decode, encode, NakCode, Opcode as Rc, Syndrome};
use hw::rdma::wire::{CQE_HAS_IMM, EXPOSE_REMOTE_READ, EXPOSE_REMOTE_WRITE, WRITE_WITH_IMM};

const BASE: u64 = 0x4000_0000;
const MEM: usize = 4 << 20;

/// What the link does with one packet.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fate {
    Deliver,
    Drop,
    Duplicate,
}

/// Decides what the link does with one packet: (count, destination, bytes).
type FateFn = Box<dyn FnMut(u64, u16, &[u8]) -> Fate>;

fn addr(rank: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 47, 0, rank as u8 + 1)
}

struct Fabric {
    nodes: Vec<(Engine, FlatMemory)>,
    now: u64,
    sent: u64,
    fate: FateFn,
    /// Deliver each batch in reverse order (reordering).
    reverse: bool,
    done: Vec<Vec<Completion>>,
    /// Each node's key for its whole memory (exposed read-write at start).
    keys: Vec<u64>,
    /// Every packet that went on the link: (source, destination, bytes).
    log: Vec<(u16, u16, Vec<u8>)>,
}

impl Fabric {
    /// Nodes that each expose their whole memory, read-write, to the others
    /// (scenarios about keys make their own exposures).
    fn new(n: u16) -> Self {
        let mut f = Self::unexposed(n);
        for node in 0..n as usize {
            let key = f.expose(
                node,
                BASE,
                MEM as u64,
                EXPOSE_REMOTE_READ | EXPOSE_REMOTE_WRITE,
            );
            f.keys.push(key);
        }
        f.done.iter_mut().for_each(Vec::clear);
        f
    }

    /// Nodes that expose nothing yet.
    fn unexposed(n: u16) -> Self {
        let addrs: Vec<Ipv4Addr> = (0..n as usize).map(addr).collect();
        Self {
            nodes: (0..n)
                .map(|r| {
                    (
                        Engine::new(r, addrs.clone(), Config::default()),
                        FlatMemory::new(BASE, MEM),
                    )
                })
                .collect(),
            now: 0,
            sent: 0,
            fate: Box::new(|_, _, _| Fate::Deliver),
            reverse: false,
            done: vec![Vec::new(); n as usize],
            keys: Vec::new(),
            log: Vec::new(),
        }
    }

    /// Exposes `len` bytes at `va` of `node` with `rights`; the key.
    fn expose(&mut self, node: usize, va: u64, len: u64, rights: u8) -> u64 {
        let wr_id = 0xe000 + self.done[node].len() as u64;
        let mut x = wr(Opcode::Expose, wr_id, 0, va, 0, len);
        x.flags = rights;
        self.post(node, x);
        let c = self
            .finished(node, wr_id)
            .expect("EXPOSE completes at once");
        assert_eq!(status(&c), Status::Success);
        assert!(c.key != 0 && c.key <= u64::from(u32::MAX), "a 32-bit R_Key");
        c.key
    }

    /// Posts `wr`; a WRITE or READ without a key gets the key of the
    /// target's whole memory.
    fn post(&mut self, node: usize, mut wr: WorkRequest) {
        let on_target = [Opcode::Write, Opcode::Read]
            .map(|o| o as u8)
            .contains(&wr.opcode);
        if on_target && wr.key == 0 {
            wr.key = self.keys.get(wr.node as usize).copied().unwrap_or(0);
        }
        let (e, m) = &mut self.nodes[node];
        e.post(wr, m, self.now);
        self.collect();
    }

    fn collect(&mut self) {
        for (i, (e, _)) in self.nodes.iter_mut().enumerate() {
            self.done[i].extend(e.take_completions());
        }
    }

    /// Delivers traffic until quiet, then advances time by 100 us and
    /// ticks; stops when `until` holds or after `ms` milliseconds.
    fn run(&mut self, ms: u64, until: impl Fn(&Fabric) -> bool) {
        let end = self.now + ms * 1000;
        while self.now < end && !until(self) {
            let mut batch: Vec<(u16, u16, Vec<u8>)> = Vec::new();
            for (src, (e, _)) in self.nodes.iter_mut().enumerate() {
                batch.extend(
                    e.take_packets()
                        .into_iter()
                        .map(|(dst, d)| (src as u16, dst, d)),
                );
            }
            if batch.is_empty() {
                self.now += 100;
                for (e, m) in self.nodes.iter_mut() {
                    e.tick(m, self.now);
                }
            } else {
                if self.reverse {
                    batch.reverse();
                }
                for (src, dst, d) in batch {
                    self.sent += 1;
                    let fate = (self.fate)(self.sent, dst, &d);
                    let copies = match fate {
                        Fate::Drop => 0,
                        Fate::Deliver => 1,
                        Fate::Duplicate => 2,
                    };
                    for _ in 0..copies {
                        let (e, m) = &mut self.nodes[dst as usize];
                        e.on_packet(src, ROCE_PORT, &d, m, self.now);
                    }
                    if self.log.len() < 200_000 {
                        self.log.push((src, dst, d));
                    }
                }
            }
            self.collect();
        }
    }

    fn finished(&self, node: usize, wr_id: u64) -> Option<Completion> {
        self.done[node]
            .iter()
            .find(|c| c.wr_id == wr_id && c.opcode != Opcode::Recv as u8)
            .copied()
    }

    fn wait_for(&mut self, node: usize, wr_id: u64, ms: u64) -> Completion {
        self.run(ms, |f| f.finished(node, wr_id).is_some());
        self.finished(node, wr_id)
            .unwrap_or_else(|| panic!("wr {wr_id} on node {node} did not complete"))
    }

    /// Hands one UDP payload to `dst` now as if node `from` had sent it.
    fn deliver_from(&mut self, from: u16, dst: u16, d: &[u8]) {
        let (e, m) = &mut self.nodes[dst as usize];
        e.on_packet(from, ROCE_PORT, d, m, self.now);
        self.collect();
    }

    fn mem(&mut self, node: usize) -> &mut FlatMemory {
        &mut self.nodes[node].1
    }

    fn counters(&self, node: usize) -> Counters {
        self.nodes[node].0.counters
    }

    fn page_ready(&mut self, node: usize, va: u64, readiness: PageReadiness) {
        let flags = match readiness {
            PageReadiness::Resolved => 0,
            PageReadiness::Failed => PAGE_READY_FAILED,
        };
        self.post(
            node,
            WorkRequest {
                opcode: Opcode::PageReady as u8,
                flags,
                local_va: va,
                ..WorkRequest::default()
            },
        );
    }

    /// The decoded packets of the log from `src` to `dst`: (opcode, PSN,
    /// syndrome of an AETH).
    fn packets(&self, src: u16, dst: u16) -> Vec<(Rc, u32, Option<Syndrome>)> {
        let e = &self.nodes[src as usize].0;
        let path = e.path_to(e.peer_addr(dst).expect("a node"));
        self.log
            .iter()
            .filter(|(s, d, _)| (*s, *d) == (src, dst))
            .map(|(_, _, b)| {
                let p = decode(b, &path).expect("every packet on the link decodes");
                (p.bth.opcode, p.bth.psn, p.aeth.map(|a| a.syndrome))
            })
            .collect()
    }
}

impl Fabric {
    /// The WRITE packets of the log from `src` to `dst` (what a large
    /// WRITE's notice, notice.rs, goes beside).
    fn writes(&self, src: u16, dst: u16) -> Vec<(Rc, u32, Option<Syndrome>)> {
        // The WRITE opcodes are the run WriteFirst..=WriteOnlyImm.
        let write = Rc::WriteFirst as u8..=Rc::WriteOnlyImm as u8;
        self.packets(src, dst)
            .into_iter()
            .filter(|p| write.contains(&(p.0 as u8)))
            .collect()
    }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn wr(op: Opcode, wr_id: u64, node: u16, local: u64, remote: u64, len: u64) -> WorkRequest {
    WorkRequest {
        opcode: op as u8,
        wr_id,
        node,
        local_va: local,
        remote_va: remote,
        len,
        ..WorkRequest::default()
    }
}

fn status(c: &Completion) -> Status {
    c.status()
}

#[test]
fn hello_tells_rank_node_count_and_address() {
    let mut f = Fabric::new(3);
    f.post(2, wr(Opcode::Hello, 9, 0, 0, 0, 0));
    let c = f.finished(2, 9).unwrap();
    assert_eq!((status(&c), c.node, c.imm), (Status::Success, 2, 3));
    assert_eq!(Ipv4Addr::from(c.key as u32), addr(2));
}

#[test]
fn bad_requests_complete_with_bad_request() {
    let mut f = Fabric::new(2);
    f.post(
        0,
        WorkRequest {
            opcode: 99,
            wr_id: 1,
            ..WorkRequest::default()
        },
    );
    f.post(0, wr(Opcode::Write, 2, 7, BASE, BASE, 8)); // no node 7
    f.post(0, wr(Opcode::Send, 3, 1, BASE, 0, MAX_SEND + 1));
    f.post(0, wr(Opcode::Copy, 4, 0, u64::MAX - 2, BASE, 8));
    f.post(0, wr(Opcode::Write, 5, 1, BASE, BASE, MAX_MSG + 1));
    let mut big_key = wr(Opcode::Read, 6, 1, BASE, BASE, 8);
    big_key.key = 1 << 32;
    f.post(0, big_key);
    for id in 1..=6 {
        assert_eq!(
            status(&f.finished(0, id).unwrap()),
            Status::BadRequest,
            "wr {id}"
        );
    }
}

#[test]
fn a_copy_waits_at_a_fault_and_goes_on_after_page_ready() {
    let mut f = Fabric::new(1);
    let data = pattern(3 * PAGE as usize, 1);
    f.mem(0).store(BASE, &data);
    let dst = BASE + 0x10_0000;
    f.mem(0).evict(dst + PAGE);
    f.post(0, wr(Opcode::Copy, 5, 0, BASE, dst, data.len() as u64));
    assert!(f.finished(0, 5).is_none(), "parked on the fault");
    assert_eq!(f.mem(0).faults, vec![dst + PAGE]);
    f.mem(0).make_present(dst + PAGE);
    f.page_ready(0, dst + PAGE + 12, PageReadiness::Resolved);
    let c = f.finished(0, 5).unwrap();
    assert_eq!(
        (status(&c), c.local_faults, c.len),
        (Status::Success, 1, data.len() as u64)
    );
    assert_eq!(f.mem(0).slice(dst, data.len()), &data[..]);
}

#[test]
fn resume_with_abort_fails_the_request_with_the_fault_address() {
    let mut f = Fabric::new(1);
    f.mem(0).evict(BASE + 0x2000);
    f.post(0, wr(Opcode::Copy, 6, 0, BASE + 0x2000, BASE, 64));
    f.post(
        0,
        WorkRequest {
            opcode: Opcode::Resume as u8,
            flags: RESUME_ABORT,
            wr_id: 6,
            ..WorkRequest::default()
        },
    );
    let c = f.finished(0, 6).unwrap();
    assert_eq!(
        (status(&c), c.fault_va, c.local_faults),
        (Status::LocalAccessError, BASE + 0x2000, 1)
    );
}

#[test]
fn a_resume_that_arrives_before_the_park_is_remembered() {
    let mut f = Fabric::new(1);
    // The libOS answers first (say it saw the SMMU event before we parked).
    f.post(
        0,
        WorkRequest {
            opcode: Opcode::Resume as u8,
            wr_id: 7,
            ..WorkRequest::default()
        },
    );
    f.mem(0).evict(BASE);
    f.post(0, wr(Opcode::Copy, 7, 0, BASE + 0x8000, BASE, 16));
    f.mem(0).make_present(BASE);
    let c = f.wait_for(0, 7, 5); // far less than the 1 s fallback
    assert_eq!((status(&c), c.local_faults), (Status::Success, 1));
}

#[test]
fn a_fault_that_never_clears_exhausts_the_retries() {
    let mut f = Fabric::new(1);
    f.mem(0).evict(BASE);
    f.post(0, wr(Opcode::Copy, 8, 0, BASE + 0x8000, BASE, 16));
    for _ in 0..20 {
        f.post(
            0,
            WorkRequest {
                opcode: Opcode::Resume as u8,
                wr_id: 8,
                ..WorkRequest::default()
            },
        );
    }
    let c = f.finished(0, 8).unwrap();
    assert_eq!((status(&c), c.local_faults), (Status::RetriesExhausted, 17));
}

#[test]
fn a_cold_buffer_faults_once_per_page_without_exhausting_the_retries() {
    let mut f = Fabric::new(1);
    let pages = 40;
    for p in 0..pages {
        f.mem(0).evict(BASE + p * PAGE);
    }
    f.post(
        0,
        wr(Opcode::Copy, 10, 0, BASE + 0x10_0000, BASE, pages * PAGE),
    );
    for p in 0..pages {
        f.mem(0).make_present(BASE + p * PAGE);
        f.page_ready(0, BASE + p * PAGE, PageReadiness::Resolved);
    }
    let c = f.finished(0, 10).unwrap();
    assert_eq!(
        (status(&c), c.local_faults),
        (Status::Success, pages as u32)
    );
}

#[test]
fn a_parked_request_is_retried_by_the_fallback_timer() {
    let mut f = Fabric::new(1);
    f.mem(0).evict(BASE);
    f.post(0, wr(Opcode::Copy, 9, 0, BASE + 0x8000, BASE, 16));
    f.mem(0).make_present(BASE); // resolved, but nobody told the engine
    f.run(900, |_| false);
    assert!(f.finished(0, 9).is_none());
    let c = f.wait_for(0, 9, 200);
    assert_eq!(status(&c), Status::Success);
}

#[test]
fn a_one_mebibyte_write_lands_intact_in_mtu_packets_with_coalesced_acks() {
    let mut f = Fabric::new(2);
    let data = pattern(1 << 20, 2);
    f.mem(0).store(BASE, &data);
    f.post(0, wr(Opcode::Write, 10, 1, BASE, BASE + 0x20_0000, 1 << 20));
    let c = f.wait_for(0, 10, 100);
    assert_eq!(
        (status(&c), c.len, c.retransmitted_bytes),
        (Status::Success, 1 << 20, 0)
    );
    assert_eq!(f.mem(1).slice(BASE + 0x20_0000, data.len()), &data[..]);
    let out = f.writes(0, 1);
    assert_eq!(out.len(), 1024, "one packet per 1 KiB of path MTU");
    assert_eq!(f.packets(0, 1).len(), 1024 + 1, "and the notice");
    assert_eq!(out[0].0, Rc::WriteFirst);
    assert_eq!(out[1023].0, Rc::WriteLast);
    assert!(
        out.iter().enumerate().all(|(i, p)| p.1 == i as u32),
        "PSNs in order"
    );
    let acks = f.packets(1, 0);
    assert!(
        (1..=1024 / 64 + 1).contains(&acks.len()),
        "{} acknowledgements for 1024 packets",
        acks.len()
    );
}

#[test]
fn a_write_survives_loss_reordering_and_duplicates() {
    let mut f = Fabric::new(2);
    let data = pattern(700_000, 3);
    f.mem(0).store(BASE, &data);
    f.reverse = true;
    f.fate = Box::new(|n, _, _| match n % 13 {
        0 => Fate::Drop,
        5 => Fate::Duplicate,
        _ => Fate::Deliver,
    });
    let len = data.len() as u64;
    f.post(0, wr(Opcode::Write, 11, 1, BASE, BASE + 0x10_0000, len));
    let c = f.wait_for(0, 11, 5000);
    assert_eq!(status(&c), Status::Success);
    assert!(c.retransmitted_bytes > 0);
    assert_eq!(f.mem(1).slice(BASE + 0x10_0000, data.len()), &data[..]);
    let (rq, rs) = (f.counters(0), f.counters(1));
    assert!(rq.naks_received > 0, "go-back-N after a gap: {rq:?}");
    assert!(rs.duplicates > 0 && rs.psn_out_of_window > 0, "{rs:?}");
}

#[test]
fn after_a_lost_packet_the_requester_goes_back_to_it() {
    let mut f = Fabric::new(2);
    let data = pattern(64 * 1024, 4);
    f.mem(0).store(BASE, &data);
    // Lose the tenth packet on the link, once: after the WRITE's notice,
    // its ninth (PSN 8).
    f.fate = Box::new(|n, dst, _| {
        if n == 10 && dst == 1 {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    f.post(
        0,
        wr(Opcode::Write, 12, 1, BASE, BASE + 0x10_0000, 64 * 1024),
    );
    let c = f.wait_for(0, 12, 100);
    assert_eq!(status(&c), Status::Success);
    assert_eq!(f.mem(1).slice(BASE + 0x10_0000, data.len()), &data[..]);
    let naks: Vec<_> = f
        .packets(1, 0)
        .into_iter()
        .filter(|p| p.2 == Some(Syndrome::Nak(NakCode::PsnSequenceError)))
        .collect();
    assert_eq!(naks.len(), 1, "one NAK per gap: {naks:?}");
    assert_eq!(naks[0].1, 8, "at the lost PSN");
    // Everything from the lost packet on was sent again, and only that.
    assert_eq!(f.writes(0, 1).len(), 64 + (64 - 8));
}

#[test]
fn a_remote_fault_is_answered_rnr_nak_and_sent_again_from_there() {
    let mut f = Fabric::new(2);
    let data = pattern(200_000, 4);
    f.mem(0).store(BASE, &data);
    let dst = BASE + 0x10_0000;
    let hole = dst + 20 * PAGE;
    f.mem(1).evict(hole);
    f.post(0, wr(Opcode::Write, 12, 1, BASE, dst, data.len() as u64));
    f.run(5, |_| false);
    assert!(f.finished(0, 12).is_none(), "waits for the target's libOS");
    assert_eq!(f.mem(1).faults[0], hole);
    f.mem(1).make_present(hole);
    f.page_ready(1, hole, PageReadiness::Resolved);
    let c = f.wait_for(0, 12, 50);
    assert_eq!(status(&c), Status::Success);
    assert!(c.remote_faults >= 1 && c.local_faults == 0, "{c:?}");
    assert!(c.retransmitted_bytes > 0);
    assert_eq!(f.mem(1).slice(dst, data.len()), &data[..]);
    let rnr: Vec<_> = f
        .packets(1, 0)
        .into_iter()
        .filter(|p| matches!(p.2, Some(Syndrome::Rnr { .. })))
        .collect();
    assert!(!rnr.is_empty());
    assert_eq!(rnr[0].1, 80, "at the PSN of the packet that faulted");
    assert!(f.counters(0).rnr_received >= 1);
}

#[test]
fn the_page_ready_ack_sends_again_before_the_rnr_timer() {
    let mut f = Fabric::new(2);
    f.nodes[1].0.cfg.rnr_wait = 491_520; // the longest timer code
    f.mem(0).store(BASE, &pattern(8192, 1));
    let dst = BASE + 0x10_0000;
    f.mem(1).evict(dst);
    f.post(0, wr(Opcode::Write, 13, 1, BASE, dst, 8192));
    f.run(2, |_| false);
    f.mem(1).make_present(dst);
    f.page_ready(1, dst, PageReadiness::Resolved);
    let c = f.wait_for(0, 13, 5);
    assert_eq!(status(&c), Status::Success, "long before 491 ms");
}

#[test]
fn a_remote_page_that_cannot_be_resolved_fails_the_write_and_the_next_one_succeeds() {
    let mut f = Fabric::new(2);
    let data = pattern(256 * 1024, 5);
    f.mem(0).store(BASE, &data);
    let dst = BASE + 0x10_0000;
    let hole = dst + 3 * PAGE;
    f.mem(1).evict(hole);
    f.post(0, wr(Opcode::Write, 13, 1, BASE, dst, data.len() as u64));
    f.post(0, wr(Opcode::Write, 14, 1, BASE, dst + 0x8_0000, 4096));
    f.run(2, |_| false);
    f.page_ready(1, hole, PageReadiness::Failed);
    let c = f.wait_for(0, 13, 50);
    assert_eq!((status(&c), c.fault_va), (Status::RemoteAccessError, hole));
    assert!(
        f.mem(1).slice(hole, 65536).iter().all(|&b| b == 0),
        "nothing past the hole"
    );
    let c = f.wait_for(0, 14, 50);
    assert_eq!(status(&c), Status::Success, "the connection goes on");
    assert_eq!(f.mem(1).slice(dst + 0x8_0000, 4096), &data[..4096]);
}

#[test]
fn a_read_takes_remote_and_local_faults() {
    let mut f = Fabric::new(2);
    let data = pattern(300_000, 6);
    let src = BASE + 0x8_0000;
    f.mem(1).store(src, &data);
    f.mem(1).evict(src + 10 * PAGE);
    let dst = BASE + 0x20_0000;
    f.mem(0).evict(dst + 30 * PAGE);
    f.post(0, wr(Opcode::Read, 20, 1, dst, src, data.len() as u64));
    f.run(5, |_| false);
    assert!(f.finished(0, 20).is_none());
    f.mem(1).make_present(src + 10 * PAGE);
    f.page_ready(1, src + 10 * PAGE, PageReadiness::Resolved);
    f.run(5, |_| false);
    f.mem(0).make_present(dst + 30 * PAGE);
    f.page_ready(0, dst + 30 * PAGE, PageReadiness::Resolved);
    let c = f.wait_for(0, 20, 200);
    assert_eq!(status(&c), Status::Success);
    assert!(c.local_faults >= 1, "{c:?}");
    assert_eq!(f.mem(0).slice(dst, data.len()), &data[..]);
}

#[test]
fn lost_read_responses_are_asked_for_again_and_replayed() {
    let mut f = Fabric::new(2);
    let data = pattern(100_000, 7);
    f.mem(1).store(BASE, &data);
    f.fate = Box::new(|n, dst, _| {
        if dst == 0 && (n == 20 || n == 21 || n == 60) {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    f.post(
        0,
        wr(
            Opcode::Read,
            21,
            1,
            BASE + 0x10_0000,
            BASE,
            data.len() as u64,
        ),
    );
    let c = f.wait_for(0, 21, 500);
    assert_eq!(status(&c), Status::Success);
    assert_eq!(f.mem(0).slice(BASE + 0x10_0000, data.len()), &data[..]);
    let reads = f
        .packets(0, 1)
        .into_iter()
        .filter(|p| p.0 == Rc::ReadRequest)
        .count();
    assert!(reads >= 2, "the READ was asked again from the gap");
    assert!(f.counters(1).duplicates >= 1, "and replayed as a duplicate");
}

#[test]
fn a_send_lands_in_the_oldest_recv_exactly_once() {
    let mut f = Fabric::new(2);
    let msg = pattern(3000, 8);
    f.mem(0).store(BASE, &msg);
    f.post(1, wr(Opcode::Recv, 100, 0, BASE + 0x1000, 0, 4096));
    f.post(1, wr(Opcode::Recv, 101, 0, BASE + 0x3000, 0, 4096));
    f.fate = Box::new(|n, _, _| {
        if n % 2 == 0 {
            Fate::Duplicate
        } else {
            Fate::Deliver
        }
    });
    f.post(0, wr(Opcode::Send, 30, 1, BASE, 0, msg.len() as u64));
    let c = f.wait_for(0, 30, 100);
    assert_eq!(status(&c), Status::Success);
    let recvs: Vec<_> = f.done[1]
        .iter()
        .filter(|c| c.opcode == Opcode::Recv as u8)
        .collect();
    assert_eq!(recvs.len(), 1, "{recvs:?}");
    assert_eq!(
        (recvs[0].wr_id, recvs[0].len, recvs[0].node),
        (100, 3000, 0)
    );
    assert_eq!(f.mem(1).slice(BASE + 0x1000, msg.len()), &msg[..]);
    let sends: Vec<_> = f.packets(0, 1).into_iter().map(|p| p.0).collect();
    assert_eq!(&sends[..3], &[Rc::SendFirst, Rc::SendMiddle, Rc::SendLast]);
}

#[test]
fn a_send_to_a_node_without_recv_ends_receiver_not_ready() {
    let mut f = Fabric::new(2);
    f.post(0, wr(Opcode::Send, 31, 1, BASE, 0, 16));
    let c = f.wait_for(0, 31, 5000);
    assert_eq!(status(&c), Status::ReceiverNotReady);
    assert!(f.counters(1).rnr_sent > Config::default().rnr_tries as u64);
}

#[test]
fn a_send_retried_until_a_recv_appears_succeeds() {
    let mut f = Fabric::new(2);
    f.post(0, wr(Opcode::Send, 32, 1, BASE, 0, 16));
    f.run(10, |_| false);
    f.post(1, wr(Opcode::Recv, 102, 0, BASE + 0x1000, 0, 64));
    let c = f.wait_for(0, 32, 100);
    assert_eq!(status(&c), Status::Success);
}

#[test]
fn a_write_with_immediate_consumes_a_recv_after_the_data() {
    let mut f = Fabric::new(2);
    let data = pattern(5000, 9);
    f.mem(0).store(BASE, &data);
    f.post(1, wr(Opcode::Recv, 103, 0, BASE + 0x1000, 0, 64));
    let mut w = wr(Opcode::Write, 33, 1, BASE, BASE + 0x10_0000, 5000);
    w.flags = WRITE_WITH_IMM;
    w.imm = 0xfeed;
    f.post(0, w);
    let c = f.wait_for(0, 33, 100);
    assert_eq!(status(&c), Status::Success);
    let r = f.done[1]
        .iter()
        .find(|c| c.wr_id == 103)
        .copied()
        .expect("RECV completion");
    assert_eq!((r.imm, r.flags & CQE_HAS_IMM), (0xfeed, CQE_HAS_IMM));
    assert_eq!(f.mem(1).slice(BASE + 0x10_0000, 5000), &data[..]);
    assert_eq!(f.packets(0, 1).last().map(|p| p.0), Some(Rc::WriteLastImm));
}

#[test]
fn a_peer_that_never_answers_is_reported_unreachable() {
    let mut f = Fabric::new(2);
    f.fate = Box::new(|_, _, _| Fate::Drop);
    f.post(0, wr(Opcode::Write, 40, 1, BASE, BASE, 4096));
    let c = f.wait_for(0, 40, 10_000);
    assert_eq!(status(&c), Status::PeerUnreachable);
}

#[test]
fn retries_run_out_when_only_the_answers_are_lost() {
    let mut f = Fabric::new(2);
    // The peer answered once (so it is alive), then its answers vanish.
    f.post(0, wr(Opcode::Write, 41, 1, BASE, BASE, 16));
    f.wait_for(0, 41, 100);
    f.fate = Box::new(|_, dst, _| if dst == 0 { Fate::Drop } else { Fate::Deliver });
    f.post(0, wr(Opcode::Write, 42, 1, BASE, BASE, 16));
    let c = f.wait_for(0, 42, 10_000);
    assert_eq!(status(&c), Status::RetriesExhausted);
}

#[test]
fn a_remote_page_that_keeps_faulting_exhausts_the_retries() {
    let mut f = Fabric::new(2);
    f.mem(1).evict(BASE);
    f.post(0, wr(Opcode::Write, 43, 1, BASE + 0x1000, BASE, 16));
    let c = f.wait_for(0, 43, 10_000);
    assert_eq!(status(&c), Status::RetriesExhausted);
    assert!(c.remote_faults > Config::default().rnr_tries);
}

#[test]
fn garbage_on_the_link_is_counted_and_changes_nothing() {
    let mut f = Fabric::new(2);
    f.mem(0).store(BASE, &[7; 64]);
    f.post(0, wr(Opcode::Write, 50, 1, BASE, BASE + 0x1000, 64));
    f.run(1, |_| false);
    let good = f.log[0].2.clone();
    let mut bad_crc = good.clone();
    let n = bad_crc.len();
    bad_crc[n - 1] ^= 1;
    // A well-formed packet, ICRC and all, naming a queue pair node 1 has
    // not got for node 0.
    let path = {
        let e = &f.nodes[0].0;
        e.path_to(e.peer_addr(1).unwrap())
    };
    let mut p = decode(&good, &path).unwrap();
    p.bth.dest_qp = qpn_for(7);
    let mut other_qp = Vec::new();
    encode(&p, &path, &mut other_qp);
    for junk in [
        &[][..],
        &[0x11][..],
        &good[..good.len() - 5],
        &[0xffu8; 200][..],
        &bad_crc[..],
    ] {
        f.deliver_from(0, 1, junk);
    }
    f.deliver_from(0, 1, &other_qp);
    f.deliver_from(5, 1, &good); // no node 5
    let c = f.counters(1);
    assert!(c.malformed >= 2, "{c:?}");
    assert!(c.bad_icrc >= 2, "{c:?}");
    assert_eq!(c.unknown_qpn, 1, "{c:?}");
    assert_eq!(c.strangers, 1, "{c:?}");
    assert_eq!(f.wait_for(0, 50, 100).status(), Status::Success);
}

#[test]
fn requests_outside_the_exposure_or_with_a_wrong_key_or_right_touch_nothing() {
    let mut f = Fabric::unexposed(2);
    let target = BASE + 0x10_0000;
    let key = f.expose(1, target, 100 * 1024, EXPOSE_REMOTE_WRITE);
    let data = pattern(200 * 1024, 10);
    f.mem(0).store(BASE, &data);
    // Straddles the end of the exposure by one byte, over many packets.
    let mut straddle = wr(Opcode::Write, 60, 1, BASE, target, 100 * 1024 + 1);
    straddle.key = key;
    f.post(0, straddle);
    let c = f.wait_for(0, 60, 100);
    assert_eq!(status(&c), Status::RemoteProtectionError);
    assert!(
        f.mem(1).slice(target, 100 * 1024).iter().all(|&b| b == 0),
        "nothing placed"
    );
    // A wrong key, a READ without the right, an address above 48 bits.
    let mut wrong = wr(Opcode::Write, 61, 1, BASE, target, 16);
    wrong.key = key ^ 1;
    f.post(0, wrong);
    let mut no_right = wr(Opcode::Read, 62, 1, BASE, target, 16);
    no_right.key = key;
    f.post(0, no_right);
    let mut high = wr(Opcode::Write, 63, 1, BASE, target | (1 << 50), 16);
    high.key = key;
    f.post(0, high);
    for id in 61..=63 {
        assert_eq!(
            status(&f.wait_for(0, id, 100)),
            Status::RemoteProtectionError,
            "wr {id}"
        );
    }
    assert!(f.mem(1).slice(target, 64).iter().all(|&b| b == 0));
    // The four, and the straddling WRITE's notice (it probed nothing).
    assert_eq!(f.counters(1).refused, 5);
    // The connection still works inside the exposure.
    let mut fine = wr(Opcode::Write, 64, 1, BASE, target, 100 * 1024);
    fine.key = key;
    f.post(0, fine);
    assert_eq!(status(&f.wait_for(0, 64, 100)), Status::Success);
    assert_eq!(f.mem(1).slice(target, 100 * 1024), &data[..100 * 1024]);
}

#[test]
fn after_revocation_the_key_reaches_nothing_and_is_never_handed_out_again() {
    let mut f = Fabric::unexposed(2);
    let target = BASE + 0x10_0000;
    let key = f.expose(1, target, 4096, EXPOSE_REMOTE_WRITE | EXPOSE_REMOTE_READ);
    let mut revoke = wr(Opcode::Revoke, 70, 0, 0, 0, 0);
    revoke.key = key;
    f.post(1, revoke);
    assert_eq!(status(&f.finished(1, 70).unwrap()), Status::Success);
    f.mem(0).store(BASE, &[9; 16]);
    let mut w = wr(Opcode::Write, 71, 1, BASE, target, 16);
    w.key = key;
    f.post(0, w);
    assert_eq!(
        status(&f.wait_for(0, 71, 100)),
        Status::RemoteProtectionError
    );
    assert!(f.mem(1).slice(target, 16).iter().all(|&b| b == 0));
    for _ in 0..50 {
        assert_ne!(f.expose(1, target, 4096, EXPOSE_REMOTE_READ), key);
    }
}

#[test]
fn a_write_into_an_exposed_never_touched_range_faults_and_lands() {
    let mut f = Fabric::new(2);
    let dst = BASE + 0x20_0000;
    let data = pattern(64 * 1024, 11);
    f.mem(0).store(BASE, &data);
    for p in 0..16 {
        f.mem(1).evict(dst + p * PAGE);
    }
    f.post(0, wr(Opcode::Write, 80, 1, BASE, dst, data.len() as u64));
    for _ in 0..40 {
        f.run(1, |_| false);
        let faults: Vec<u64> = f.mem(1).faults.drain(..).collect();
        for p in faults {
            f.mem(1).make_present(p);
            f.page_ready(1, p, PageReadiness::Resolved);
        }
    }
    let c = f.wait_for(0, 80, 100);
    assert_eq!(status(&c), Status::Success);
    assert_eq!(f.mem(1).slice(dst, data.len()), &data[..]);
}

#[test]
fn a_zero_length_write_with_immediate_needs_no_key() {
    let mut f = Fabric::unexposed(2);
    f.post(1, wr(Opcode::Recv, 104, 0, BASE + 0x1000, 0, 64));
    let mut w = wr(Opcode::Write, 34, 1, 0, 0, 0);
    w.flags = WRITE_WITH_IMM;
    w.imm = 7;
    f.post(0, w);
    assert_eq!(status(&f.wait_for(0, 34, 100)), Status::Success);
    let r = f.done[1].iter().find(|c| c.wr_id == 104).copied();
    assert_eq!(r.map(|c| c.imm), Some(7));
    assert_eq!(f.packets(0, 1)[0].0, Rc::WriteOnlyImm);
}

#[test]
fn a_write_at_the_largest_mtu_uses_4096_byte_packets() {
    let addrs = vec![addr(0), addr(1)];
    let cfg = Config {
        mtu: 4096,
        ..Config::default()
    };
    let mut f = Fabric::new(2);
    for (r, n) in f.nodes.iter_mut().enumerate() {
        let keys = n.0.exposures.by_key_for_tests();
        n.0 = Engine::new(r as u16, addrs.clone(), cfg.clone());
        n.0.exposures.restore_for_tests(keys);
    }
    let data = pattern(64 * 1024, 12);
    f.mem(0).store(BASE, &data);
    f.post(
        0,
        wr(Opcode::Write, 90, 1, BASE, BASE + 0x10_0000, 64 * 1024),
    );
    assert_eq!(status(&f.wait_for(0, 90, 100)), Status::Success);
    assert_eq!(f.writes(0, 1).len(), 16);
    assert_eq!(f.mem(1).slice(BASE + 0x10_0000, data.len()), &data[..]);
}

#[test]
fn completions_come_in_posting_order() {
    let mut f = Fabric::new(2);
    f.mem(1).store(BASE, &pattern(8192, 1));
    f.post(0, wr(Opcode::Read, 1, 1, BASE + 0x10_0000, BASE, 8192));
    f.post(0, wr(Opcode::Write, 2, 1, BASE, BASE + 0x20_0000, 100));
    f.post(1, wr(Opcode::Recv, 9, 0, BASE + 0x3000, 0, 64));
    f.post(0, wr(Opcode::Send, 3, 1, BASE, 0, 10));
    f.run(100, |f| f.done[0].len() == 3);
    let ids: Vec<u64> = f.done[0].iter().map(|c| c.wr_id).collect();
    assert_eq!(ids, vec![1, 2, 3]);
    assert!(f.done[0].iter().all(|c| status(c) == Status::Success));
}

#[test]
fn while_the_source_faults_the_responder_resolves_the_destination() {
    let mut f = Fabric::new(2);
    let src = BASE;
    let dst = BASE + 0x20_0000;
    f.mem(0).evict(src);
    f.mem(1).evict(dst);
    f.post(0, wr(Opcode::Write, 95, 1, src, dst, 64 * 1024));
    f.run(1, |_| false);
    assert!(f.finished(0, 95).is_none(), "parked on its source");
    assert_eq!(f.mem(1).faults, vec![dst], "the destination already faults");
    assert_eq!(f.counters(1).notices_taken, 1);
    // Both sides resolve; the WRITE then lands without a remote fault.
    f.mem(1).make_present(dst);
    f.page_ready(1, dst, PageReadiness::Resolved);
    f.mem(0).make_present(src);
    f.page_ready(0, src, PageReadiness::Resolved);
    let c = f.wait_for(0, 95, 100);
    assert_eq!((status(&c), c.remote_faults), (Status::Success, 0));
    // To a standard peer the notice is a READ response far behind: the
    // requester here drops such a response and nothing else changes.
    let notice = f
        .log
        .iter()
        .find(|(s, _, _)| *s == 0)
        .map(|(_, _, b)| b.clone())
        .expect("the notice went first");
    let path = f.nodes[0].0.path_to(f.nodes[0].0.peer_addr(1).unwrap());
    let p = decode(&notice, &path).unwrap();
    assert_eq!(p.bth.opcode, Rc::ReadResponseOnly);
}

#[test]
fn a_notice_with_a_key_that_does_not_grant_the_write_probes_nothing() {
    let mut f = Fabric::unexposed(2);
    let dst = BASE + 0x20_0000;
    let key = f.expose(1, dst, 4096, EXPOSE_REMOTE_READ);
    f.mem(0).evict(BASE);
    f.mem(1).evict(dst);
    let mut w = wr(Opcode::Write, 96, 1, BASE, dst, 4096);
    w.key = key;
    f.post(0, w);
    f.run(1, |_| false);
    assert!(f.mem(1).faults.is_empty(), "nothing probed");
    assert_eq!(f.counters(1).refused, 1);
}

#[test]
fn a_noticed_write_sends_one_packet_until_it_is_answered() {
    let mut f = Fabric::new(2);
    let (src, dst) = (BASE, BASE + 0x20_0000);
    f.mem(0).evict(src);
    f.mem(1).evict(dst);
    // Two segments of one transfer: one notice covers both.
    f.post(0, wr(Opcode::Write, 97, 1, src, dst, 32 * 1024));
    f.post(
        0,
        wr(Opcode::Write, 98, 1, src + 0x8000, dst + 0x8000, 32 * 1024),
    );
    f.run(1, |_| false);
    assert_eq!(f.counters(0).notices_sent, 1);
    // Our source resolves first; the destination is still being resolved.
    f.mem(0).make_present(src);
    f.page_ready(0, src, PageReadiness::Resolved);
    f.run(1, |f| f.counters(0).rnr_received > 0);
    let writes = |f: &Fabric| f.writes(0, 1).len();
    assert_eq!(writes(&f), 1, "only the first packet before the answer");
    f.mem(1).make_present(dst);
    f.page_ready(1, dst, PageReadiness::Resolved);
    let c = f.wait_for(0, 97, 100);
    assert_eq!(
        (status(&c), c.remote_faults, c.retransmitted_bytes),
        (Status::Success, 1, 1024)
    );
    assert_eq!(status(&f.wait_for(0, 98, 100)), Status::Success);
    assert_eq!(f.counters(0).notices_sent, 1);
    assert_eq!(writes(&f), 64 + 1);
}

#[test]
fn a_large_write_tells_the_responder_before_its_first_packet() {
    let mut f = Fabric::new(2);
    let dst = BASE + 0x20_0000;
    f.mem(1).evict(dst);
    // The source is resident: the notice goes all the same.
    f.post(0, wr(Opcode::Write, 99, 1, BASE, dst, 64 * 1024));
    f.run(1, |_| false);
    assert_eq!(f.counters(0).notices_sent, 1);
    assert_eq!(f.packets(0, 1)[0].0, Rc::ReadResponseOnly, "first");
    assert_eq!(f.counters(1).notices_taken, 1);
    f.mem(1).make_present(dst);
    f.page_ready(1, dst, PageReadiness::Resolved);
    assert_eq!(status(&f.wait_for(0, 99, 100)), Status::Success);
    // A small WRITE whose source is resident tells nothing.
    f.post(0, wr(Opcode::Write, 100, 1, BASE, dst, 4096));
    assert_eq!(status(&f.wait_for(0, 100, 100)), Status::Success);
    assert_eq!(f.counters(0).notices_sent, 1);
}
