//! Two or three engines on a simulated fabric with simulated memories:
//! every scenario is deterministic (time is a number the test advances).

use super::*;
use crate::dma::{FlatMemory, PAGE};
use crate::fabric_msg::Reason;
use hw::rdma::wire::{CQE_HAS_IMM, EXPOSE_REMOTE_READ, EXPOSE_REMOTE_WRITE, WRITE_WITH_IMM};

const BASE: u64 = 0x4000_0000;
const MEM: usize = 4 << 20;

/// What the fabric does with one datagram.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fate {
    Deliver,
    Drop,
    Duplicate,
}

/// Decides what the fabric does with one datagram: (time, sender, bytes).
type FateFn = Box<dyn FnMut(u64, u16, &[u8]) -> Fate>;

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
}

impl Fabric {
    /// Nodes whose memories cannot share: the datagram path.
    fn new(n: u16) -> Self {
        Self::with((0..n).map(|_| FlatMemory::new(BASE, MEM)).collect())
    }

    /// Nodes of one host that lend each other memory: the direct path.
    fn shared(n: u16) -> Self {
        Self::with(FlatMemory::cluster(n as usize, BASE, MEM))
    }

    /// Nodes that each expose their whole memory, read-write, to the others
    /// (scenarios about keys make their own exposures).
    fn with(mems: Vec<FlatMemory>) -> Self {
        let mut f = Self::unexposed(mems);
        for node in 0..f.nodes.len() {
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
    fn unexposed(mems: Vec<FlatMemory>) -> Self {
        let n = mems.len() as u16;
        Self {
            nodes: mems
                .into_iter()
                .enumerate()
                .map(|(r, m)| (Engine::new(r as u16, n, Config::default()), m))
                .collect(),
            now: 0,
            sent: 0,
            fate: Box::new(|_, _, _| Fate::Deliver),
            reverse: false,
            done: vec![Vec::new(); n as usize],
            keys: Vec::new(),
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
        assert_ne!(c.key, 0);
        c.key
    }

    /// Posts `wr`; a WRITE, READ or PREPARE without a key gets the key of
    /// the target's whole memory.
    fn post(&mut self, node: usize, mut wr: WorkRequest) {
        let on_target = [Opcode::Write, Opcode::Read, Opcode::Prepare]
            .map(|o| o as u8)
            .contains(&wr.opcode);
        if on_target && wr.key == 0 {
            wr.key = self.keys.get(wr.node as usize).copied().unwrap_or(0);
        }
        self.post_raw(node, wr);
    }

    /// Posts `wr` as it is.
    fn post_raw(&mut self, node: usize, wr: WorkRequest) {
        let (e, m) = &mut self.nodes[node];
        e.post(wr, m, self.now);
        self.collect();
    }

    fn collect(&mut self) {
        for (i, (e, _)) in self.nodes.iter_mut().enumerate() {
            self.done[i].extend(e.take_completions());
        }
    }

    /// Delivers traffic until quiet, then advances time by 1 ms and ticks;
    /// stops when `until` holds or after `ms` milliseconds.
    fn run(&mut self, ms: u64, until: impl Fn(&Fabric) -> bool) {
        let end = self.now + ms * 1000;
        while self.now < end && !until(self) {
            let mut batch: Vec<(u16, u16, Vec<u8>)> = Vec::new();
            for (src, (e, _)) in self.nodes.iter_mut().enumerate() {
                batch.extend(
                    e.take_datagrams()
                        .into_iter()
                        .map(|(dst, d)| (src as u16, dst, d)),
                );
            }
            if batch.is_empty() {
                self.now += 1000;
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
                        e.on_datagram(src, &d, m, self.now);
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

    /// Hands one datagram to `dst` now, whatever `fate` says, as if it
    /// came from the node it claims to be from.
    fn deliver(&mut self, dst: u16, d: &[u8]) {
        let from = Msg::decode(d).map_or(0, |m| m.src);
        self.deliver_from(from, dst, d);
    }

    /// Hands one datagram to `dst` now as if node `from` had sent it.
    fn deliver_from(&mut self, from: u16, dst: u16, d: &[u8]) {
        let (e, m) = &mut self.nodes[dst as usize];
        e.on_datagram(from, d, m, self.now);
        self.collect();
    }

    fn mem(&mut self, node: usize) -> &mut FlatMemory {
        &mut self.nodes[node].1
    }

    fn page_ready(&mut self, node: usize, va: u64, failed: bool) {
        let flags = if failed { PAGE_READY_FAILED } else { 0 };
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
fn hello_tells_rank_and_node_count() {
    let mut f = Fabric::new(3);
    f.post(2, wr(Opcode::Hello, 9, 0, 0, 0, 0));
    let c = f.finished(2, 9).unwrap();
    assert_eq!((status(&c), c.node, c.imm), (Status::Success, 2, 3));
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
    for id in 1..=4 {
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
    f.page_ready(0, dst + PAGE + 12, false);
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
        f.page_ready(0, BASE + p * PAGE, false);
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
fn a_one_mebibyte_write_lands_intact() {
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
}

#[test]
fn a_write_survives_loss_reordering_and_duplicates() {
    let mut f = Fabric::new(2);
    let data = pattern(700_000, 3);
    f.mem(0).store(BASE, &data);
    f.reverse = true;
    f.fate = Box::new(|n, _, _| match n % 5 {
        0 => Fate::Drop,
        3 => Fate::Duplicate,
        _ => Fate::Deliver,
    });
    f.post(
        0,
        wr(
            Opcode::Write,
            11,
            1,
            BASE,
            BASE + 0x10_0000,
            data.len() as u64,
        ),
    );
    let c = f.wait_for(0, 11, 5000);
    assert_eq!(status(&c), Status::Success);
    assert!(c.retransmitted_bytes > 0);
    assert_eq!(f.mem(1).slice(BASE + 0x10_0000, data.len()), &data[..]);
}

#[test]
fn a_remote_fault_is_nacked_and_retransmitted_after_page_ready() {
    let mut f = Fabric::new(2);
    let data = pattern(200_000, 4);
    f.mem(0).store(BASE, &data);
    let dst = BASE + 0x10_0000;
    let hole = dst + 20 * PAGE;
    f.mem(1).evict(hole);
    f.post(0, wr(Opcode::Write, 12, 1, BASE, dst, data.len() as u64));
    f.run(50, |_| false);
    assert!(f.finished(0, 12).is_none(), "waits for the target's libOS");
    assert_eq!(f.mem(1).faults, vec![hole]);
    f.mem(1).make_present(hole);
    f.page_ready(1, hole, false);
    let c = f.wait_for(0, 12, 50);
    assert_eq!(
        (status(&c), c.remote_faults, c.local_faults),
        (Status::Success, 1, 0)
    );
    assert!(c.retransmitted_bytes > 0);
    assert_eq!(f.mem(1).slice(dst, data.len()), &data[..]);
}

#[test]
fn a_remote_page_that_cannot_be_resolved_fails_the_write_and_nothing_more_is_sent() {
    let mut f = Fabric::new(2);
    let data = pattern(1 << 20, 5);
    f.mem(0).store(BASE, &data);
    let dst = BASE + 0x10_0000;
    let hole = dst + 3 * PAGE;
    f.mem(1).evict(hole);
    f.post(0, wr(Opcode::Write, 13, 1, BASE, dst, data.len() as u64));
    f.run(20, |_| false);
    f.page_ready(1, hole, true);
    let c = f.wait_for(0, 13, 50);
    assert_eq!((status(&c), c.fault_va), (Status::RemoteAccessError, hole));
    // The first window was in flight before the failure; nothing after it.
    let window = Config::default().window as u64 * Config::default().seg_size;
    let rest = f.mem(1).slice(dst + window, data.len() - window as usize);
    assert!(rest.iter().all(|&b| b == 0));
    assert!(f.mem(1).slice(hole, PAGE as usize).iter().all(|&b| b == 0));
}

#[test]
fn a_read_takes_remote_and_local_faults() {
    let mut f = Fabric::new(2);
    let data = pattern(300_000, 6);
    let src = BASE + 0x8_0000;
    f.mem(1).store(src, &data);
    f.mem(1).evict(src + 5 * PAGE);
    f.mem(0).evict(BASE + 40 * PAGE);
    f.post(0, wr(Opcode::Read, 14, 1, BASE, src, data.len() as u64));
    f.run(20, |_| false);
    f.mem(1).make_present(src + 5 * PAGE);
    f.page_ready(1, src + 5 * PAGE, false);
    f.run(20, |_| false);
    f.mem(0).make_present(BASE + 40 * PAGE);
    f.post(
        0,
        WorkRequest {
            opcode: Opcode::Resume as u8,
            wr_id: 14,
            ..WorkRequest::default()
        },
    );
    let c = f.wait_for(0, 14, 50);
    assert_eq!(
        (status(&c), c.remote_faults, c.local_faults),
        (Status::Success, 1, 1)
    );
    assert_eq!(f.mem(0).slice(BASE, data.len()), &data[..]);
}

#[test]
fn a_send_lands_in_the_oldest_recv_exactly_once() {
    let mut f = Fabric::new(2);
    f.mem(0).store(BASE, b"hello");
    f.post(1, wr(Opcode::Recv, 100, 0, BASE + 0x1000, 0, 64));
    f.post(1, wr(Opcode::Recv, 101, 0, BASE + 0x2000, 0, 64));
    f.fate = Box::new(|_, _, _| Fate::Duplicate);
    f.post(0, wr(Opcode::Send, 15, 1, BASE, 0, 5));
    let c = f.wait_for(0, 15, 50);
    assert_eq!(status(&c), Status::Success);
    let recvs: Vec<_> = f.done[1]
        .iter()
        .filter(|c| c.opcode == Opcode::Recv as u8)
        .collect();
    assert_eq!(recvs.len(), 1, "the duplicate SEND is not delivered again");
    assert_eq!((recvs[0].wr_id, recvs[0].len, recvs[0].node), (100, 5, 0));
    assert_eq!(f.mem(1).slice(BASE + 0x1000, 5), b"hello");
}

#[test]
fn a_send_to_a_node_without_recv_ends_receiver_not_ready() {
    let mut f = Fabric::new(2);
    f.post(0, wr(Opcode::Send, 16, 1, BASE, 0, 8));
    let c = f.wait_for(0, 16, 5000);
    assert_eq!(status(&c), Status::ReceiverNotReady);
}

#[test]
fn a_send_retried_until_a_recv_appears_succeeds() {
    let mut f = Fabric::new(2);
    f.post(0, wr(Opcode::Send, 17, 1, BASE, 0, 8));
    f.run(100, |_| false);
    f.post(1, wr(Opcode::Recv, 200, 0, BASE, 0, 8));
    assert_eq!(status(&f.wait_for(0, 17, 100)), Status::Success);
}

#[test]
fn a_write_with_immediate_consumes_a_recv_after_the_data() {
    let mut f = Fabric::new(2);
    f.mem(0).store(BASE, b"data");
    f.post(1, wr(Opcode::Recv, 300, 0, BASE + 0x9000, 0, 0));
    let mut w = wr(Opcode::Write, 18, 1, BASE, BASE + 0x100, 4);
    w.flags = WRITE_WITH_IMM;
    w.imm = 0xfeed;
    f.post(0, w);
    assert_eq!(status(&f.wait_for(0, 18, 50)), Status::Success);
    let r = f.done[1].iter().find(|c| c.wr_id == 300).unwrap();
    assert_eq!((r.imm, r.flags, r.len), (0xfeed, CQE_HAS_IMM, 4));
    assert_eq!(f.mem(1).slice(BASE + 0x100, 4), b"data");
}

#[test]
fn a_peer_that_never_answers_is_reported_unreachable() {
    let mut f = Fabric::new(2);
    f.fate = Box::new(|_, dst, _| if dst == 1 { Fate::Drop } else { Fate::Deliver });
    f.post(0, wr(Opcode::Write, 19, 1, BASE, BASE, 100_000));
    let c = f.wait_for(0, 19, 3000);
    assert_eq!(status(&c), Status::PeerUnreachable);
    assert!(f.now >= 2_000_000, "only after dead_after of silence");
}

#[test]
fn a_remote_page_that_keeps_faulting_exhausts_the_retries() {
    let mut f = Fabric::new(2);
    f.mem(1).evict(BASE);
    f.post(0, wr(Opcode::Write, 20, 1, BASE, BASE, 64));
    for _ in 0..20 {
        f.run(5, |_| false);
        f.page_ready(1, BASE, false); // claims ready, but it faults again
    }
    let c = f.wait_for(0, 20, 100);
    assert_eq!(status(&c), Status::RetriesExhausted);
}

#[test]
fn garbage_from_the_fabric_is_ignored() {
    let mut f = Fabric::new(2);
    let (e, m) = &mut f.nodes[0];
    e.on_datagram(1, &[0xff; 10], m, 0);
    let mut ack = Msg::new(Kind::Ack, 1, 12345, 99).encode();
    e.on_datagram(1, &ack, m, 0); // no such transfer
    ack[4] = 77; // no such node
    e.on_datagram(1, &ack, m, 0);
    e.on_datagram(77, &ack, m, 0);
    assert_eq!(
        (
            e.counters.malformed,
            e.counters.unknown_xfer,
            e.counters.forged_src
        ),
        (1, 1, 2)
    );
    assert!(e.take_completions().is_empty() && e.take_datagrams().is_empty());
}

#[test]
fn a_write_into_never_touched_memory_resends_only_what_is_left_of_each_segment() {
    let mut f = Fabric::new(2);
    let pages = 64u64;
    let data = pattern((pages * PAGE) as usize, 7);
    f.mem(0).store(BASE, &data);
    let dst = BASE + 0x20_0000;
    for p in 0..pages {
        f.mem(1).evict(dst + p * PAGE);
    }
    f.post(0, wr(Opcode::Write, 21, 1, BASE, dst, data.len() as u64));
    let mut resolved = 0;
    while f.finished(0, 21).is_none() && f.now < 10_000_000 {
        f.run(1, |_| false);
        // The target's libOS: resolve every page its SMMU reported.
        let faults: Vec<u64> = f.mem(1).faults.drain(..).collect();
        for p in faults {
            f.mem(1).make_present(p);
            f.page_ready(1, p, false);
            resolved += 1;
        }
    }
    let c = f.finished(0, 21).expect("completes");
    assert_eq!(
        (status(&c), c.remote_faults as u64),
        (Status::Success, pages)
    );
    assert_eq!(resolved, pages);
    // Each fault resends from the faulting page to the end of its segment:
    // 15 + 14 + .. + 1 pages for each of the four 15-page segments, 4 + .. + 1
    // for the last (resending whole segments would be 15 x 15 pages each).
    assert_eq!(c.retransmitted_bytes, (4 * 120 + 10) * PAGE);
    assert_eq!(f.mem(1).slice(dst, data.len()), &data[..]);
}

// ---- The direct path: memories of one host lend each other ranges ----

/// Datagrams of one kind seen on the fabric so far.
fn kinds(log: &std::rc::Rc<std::cell::RefCell<Vec<Vec<u8>>>>, kind: Kind) -> usize {
    log.borrow()
        .iter()
        .filter(|d| Msg::decode(d).is_some_and(|m| m.kind == kind))
        .count()
}

/// Records every datagram (and delivers it).
fn recording(f: &mut Fabric) -> std::rc::Rc<std::cell::RefCell<Vec<Vec<u8>>>> {
    let log = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let l = log.clone();
    f.fate = Box::new(move |_, _, d| {
        l.borrow_mut().push(d.to_vec());
        Fate::Deliver
    });
    log
}

#[test]
fn a_direct_write_moves_a_mebibyte_in_a_few_small_requests() {
    let mut f = Fabric::shared(2);
    let log = recording(&mut f);
    let data = pattern(1 << 20, 20);
    f.mem(0).store(BASE, &data);
    f.post(0, wr(Opcode::Write, 30, 1, BASE, BASE + 0x20_0000, 1 << 20));
    let c = f.wait_for(0, 30, 100);
    assert_eq!(
        (status(&c), c.len, c.retransmitted_bytes),
        (Status::Success, 1 << 20, 0)
    );
    assert_eq!(f.mem(1).slice(BASE + 0x20_0000, data.len()), &data[..]);
    let segs = (1 << 20) / Config::default().direct_seg_size;
    assert_eq!(kinds(&log, Kind::DirectWrite) as u64, segs);
    assert_eq!(kinds(&log, Kind::WriteData), 0);
    assert!(
        log.borrow().iter().all(|d| d.len() < 1024),
        "no data on the fabric"
    );
    assert_eq!(f.mem(0).leases_out(), 0, "the lease came back with the ACK");
}

#[test]
fn a_direct_write_survives_loss_reordering_and_duplicates_of_its_control_messages() {
    let mut f = Fabric::shared(2);
    let data = pattern(1_800_000, 21);
    f.mem(0).store(BASE, &data);
    f.reverse = true;
    f.fate = Box::new(|n, _, _| match n % 3 {
        0 => Fate::Drop,
        1 => Fate::Duplicate,
        _ => Fate::Deliver,
    });
    f.post(
        0,
        wr(
            Opcode::Write,
            31,
            1,
            BASE,
            BASE + 0x1c_0000,
            data.len() as u64,
        ),
    );
    let c = f.wait_for(0, 31, 5000);
    assert_eq!(status(&c), Status::Success);
    assert!(c.retransmitted_bytes > 0);
    assert_eq!(f.mem(1).slice(BASE + 0x1c_0000, data.len()), &data[..]);
    f.run(10, |_| false); // late duplicates find their leases gone
    assert_eq!(f.mem(0).leases_out(), 0);
}

#[test]
fn a_remote_fault_in_the_middle_of_a_direct_segment_resends_only_the_rest() {
    let mut f = Fabric::shared(2);
    let data = pattern(1 << 20, 22);
    f.mem(0).store(BASE, &data);
    let dst = BASE + 0x20_0000;
    let hole = dst + 100 * PAGE;
    f.mem(1).evict(hole);
    f.post(0, wr(Opcode::Write, 32, 1, BASE, dst, data.len() as u64));
    f.run(50, |_| false);
    assert!(f.finished(0, 32).is_none(), "waits for the target's libOS");
    assert_eq!(f.mem(1).faults, vec![hole]);
    assert_eq!(f.mem(0).leases_out(), 0, "nothing lent while it waits");
    // What came before the fault is in place already.
    assert_eq!(
        f.mem(1).slice(dst, 100 * PAGE as usize),
        &data[..100 * PAGE as usize]
    );
    f.mem(1).make_present(hole);
    f.page_ready(1, hole, false);
    let c = f.wait_for(0, 32, 50);
    assert_eq!(
        (status(&c), c.remote_faults, c.local_faults),
        (Status::Success, 1, 0)
    );
    // From the fault to the end of its segment, nothing else.
    let seg = Config::default().direct_seg_size;
    assert_eq!(c.retransmitted_bytes, seg - (100 * PAGE) % seg);
    assert_eq!(f.mem(1).slice(dst, data.len()), &data[..]);
}

#[test]
fn a_direct_write_to_a_page_that_cannot_be_resolved_is_a_remote_access_error() {
    let mut f = Fabric::shared(2);
    let data = pattern(2 << 20, 23);
    f.mem(0).store(BASE, &data);
    let dst = BASE + 0x20_0000;
    let hole = dst + 3 * PAGE;
    f.mem(1).evict(hole);
    f.post(0, wr(Opcode::Write, 33, 1, BASE, dst, data.len() as u64));
    f.run(20, |_| false);
    f.page_ready(1, hole, true);
    let c = f.wait_for(0, 33, 50);
    assert_eq!((status(&c), c.fault_va), (Status::RemoteAccessError, hole));
    let after = f.mem(1).slice(hole, data.len() - 3 * PAGE as usize);
    // The second segment may have landed before the failure; never the hole.
    assert!(after[..PAGE as usize].iter().all(|&b| b == 0));
    assert_eq!(f.mem(0).leases_out(), 0);
}

#[test]
fn a_direct_read_takes_remote_and_local_faults() {
    let mut f = Fabric::shared(2);
    let data = pattern(1_500_000, 24);
    let src = BASE + 0x8_0000;
    f.mem(1).store(src, &data);
    f.mem(1).evict(src + 5 * PAGE);
    f.mem(0).evict(BASE + 300 * PAGE);
    f.post(0, wr(Opcode::Read, 34, 1, BASE, src, data.len() as u64));
    f.run(20, |_| false);
    f.mem(1).make_present(src + 5 * PAGE);
    f.page_ready(1, src + 5 * PAGE, false);
    f.run(20, |_| false);
    f.mem(0).make_present(BASE + 300 * PAGE);
    f.page_ready(0, BASE + 300 * PAGE, false);
    let c = f.wait_for(0, 34, 50);
    assert_eq!(
        (status(&c), c.remote_faults, c.local_faults),
        (Status::Success, 1, 1)
    );
    assert_eq!(f.mem(0).slice(BASE, data.len()), &data[..]);
    assert_eq!(f.mem(0).leases_out(), 0);
}

#[test]
fn lent_pages_invalidated_before_the_copy_are_lent_again_after_the_fault() {
    let mut f = Fabric::shared(2);
    let data = pattern(1 << 20, 25);
    f.mem(0).store(BASE, &data);
    let dst = BASE + 0x20_0000;
    f.post(0, wr(Opcode::Write, 35, 1, BASE, dst, data.len() as u64));
    // The request is on its way; the initiator's guest unmaps a source page.
    let segs = (1 << 20) / Config::default().direct_seg_size;
    assert_eq!(f.mem(0).leases_out() as u64, segs);
    f.mem(0).evict(BASE + 7 * PAGE);
    assert_eq!(
        f.mem(0).leases_out() as u64,
        segs - 1,
        "the invalidation took the first segment's back"
    );
    f.run(20, |_| false);
    assert!(f.finished(0, 35).is_none(), "parked on the local fault");
    let seg = Config::default().direct_seg_size as usize;
    assert!(
        f.mem(1).slice(dst, seg).iter().all(|&b| b == 0),
        "nothing copied from revoked memory"
    );
    f.mem(0).make_present(BASE + 7 * PAGE);
    f.page_ready(0, BASE + 7 * PAGE, false);
    let c = f.wait_for(0, 35, 50);
    assert_eq!((status(&c), c.local_faults), (Status::Success, 1));
    assert_eq!(f.mem(1).slice(dst, data.len()), &data[..]);
}

#[test]
fn a_stale_direct_read_request_never_writes_into_memory_given_back() {
    let mut f = Fabric::shared(2);
    let log = recording(&mut f);
    let data = pattern(64 * PAGE as usize, 26);
    f.mem(1).store(BASE, &data);
    f.post(
        0,
        wr(
            Opcode::Read,
            36,
            1,
            BASE + 0x10_0000,
            BASE,
            data.len() as u64,
        ),
    );
    assert_eq!(status(&f.wait_for(0, 36, 50)), Status::Success);
    // The application reuses its buffer; then the old request shows up again.
    let fresh = pattern(data.len(), 99);
    f.mem(0).store(BASE + 0x10_0000, &fresh);
    let old: Vec<Vec<u8>> = log
        .borrow()
        .iter()
        .filter(|d| Msg::decode(d).is_some_and(|m| m.kind == Kind::DirectRead))
        .cloned()
        .collect();
    assert_eq!(old.len(), 1);
    let (e, m) = &mut f.nodes[1];
    e.on_datagram(0, &old[0], m, f.now);
    f.run(10, |_| false);
    assert_eq!(f.mem(0).slice(BASE + 0x10_0000, fresh.len()), &fresh[..]);
    assert!(log
        .borrow()
        .iter()
        .any(|d| Msg::decode(d).is_some_and(|m| m.reason == Some(Reason::Revoked))));
}

#[test]
fn a_peer_that_cannot_map_our_memory_gets_datagrams_and_nothing_regresses() {
    let mut f = Fabric::shared(2);
    let log = recording(&mut f);
    f.mem(1).forget_peer(0);
    let data = pattern(500_000, 27);
    f.mem(0).store(BASE, &data);
    f.post(
        0,
        wr(
            Opcode::Write,
            37,
            1,
            BASE,
            BASE + 0x10_0000,
            data.len() as u64,
        ),
    );
    let c = f.wait_for(0, 37, 100);
    assert_eq!((status(&c), c.len), (Status::Success, data.len() as u64));
    assert_eq!(f.mem(1).slice(BASE + 0x10_0000, data.len()), &data[..]);
    let tried = (data.len() as u64).div_ceil(Config::default().direct_seg_size) as usize;
    assert_eq!(kinds(&log, Kind::DirectWrite), tried, "tried once");
    assert!(kinds(&log, Kind::WriteData) >= 9);
    // The next request to that peer goes straight to datagrams.
    f.post(
        0,
        wr(
            Opcode::Read,
            38,
            1,
            BASE + 0x20_0000,
            BASE + 0x10_0000,
            1000,
        ),
    );
    assert_eq!(status(&f.wait_for(0, 38, 100)), Status::Success);
    assert_eq!(kinds(&log, Kind::DirectRead), 0);
    assert_eq!(kinds(&log, Kind::ReadReq), 1);
    assert_eq!(f.mem(0).slice(BASE + 0x20_0000, 1000), &data[..1000]);
    assert_eq!(f.mem(0).leases_out(), 0);
    // A node that cannot lend uses datagrams from the start.
    f.mem(1).set_lending(false);
    f.post(1, wr(Opcode::Write, 39, 0, BASE, BASE + 0x30_0000, 100));
    assert_eq!(status(&f.wait_for(1, 39, 100)), Status::Success);
    assert_eq!(kinds(&log, Kind::DirectWrite), tried);
}

#[test]
fn a_silent_peer_on_the_direct_path_is_unreachable_and_its_leases_come_back() {
    let mut f = Fabric::shared(2);
    f.fate = Box::new(|_, dst, _| if dst == 1 { Fate::Drop } else { Fate::Deliver });
    f.post(0, wr(Opcode::Write, 40, 1, BASE, BASE, 3 << 20));
    assert!(f.mem(0).leases_out() > 0);
    let c = f.wait_for(0, 40, 3000);
    assert_eq!(status(&c), Status::PeerUnreachable);
    assert_eq!(f.mem(0).leases_out(), 0);
}

#[test]
fn a_direct_write_with_immediate_and_a_write_to_oneself() {
    let mut f = Fabric::shared(2);
    f.mem(0).store(BASE, b"direct");
    f.post(1, wr(Opcode::Recv, 400, 0, BASE + 0x9000, 0, 0));
    let mut w = wr(Opcode::Write, 41, 1, BASE, BASE + 0x100, 6);
    w.flags = WRITE_WITH_IMM;
    w.imm = 0xbeef;
    f.post(0, w);
    assert_eq!(status(&f.wait_for(0, 41, 50)), Status::Success);
    let r = f.done[1].iter().find(|c| c.wr_id == 400).unwrap();
    assert_eq!((r.imm, r.flags, r.len), (0xbeef, CQE_HAS_IMM, 6));
    assert_eq!(f.mem(1).slice(BASE + 0x100, 6), b"direct");
    f.post(0, wr(Opcode::Write, 42, 0, BASE, BASE + 0x5000, 6));
    assert_eq!(status(&f.wait_for(0, 42, 50)), Status::Success);
    assert_eq!(f.mem(0).slice(BASE + 0x5000, 6), b"direct");
}

#[test]
fn a_fault_answered_to_an_earlier_transmission_still_counts() {
    // The target is slow: its fault NACK arrives after the initiator has
    // sent the segment again, and the second attempt finds the page
    // resolved. The fault happened all the same.
    let mut f = Fabric::shared(2);
    let held = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let h = held.clone();
    f.fate = Box::new(move |_, dst, d| {
        let answer = Msg::decode(d).is_some_and(|m| matches!(m.kind, Kind::Nack | Kind::Ack));
        if dst == 0 && answer {
            h.borrow_mut().push(d.to_vec());
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    let data = pattern(PAGE as usize, 40);
    f.mem(0).store(BASE, &data);
    let dst = BASE + 0x20_0000;
    f.mem(1).evict(dst);
    f.post(0, wr(Opcode::Write, 40, 1, BASE, dst, PAGE));
    f.run(5, |_| false);
    assert_eq!(held.borrow().len(), 1, "the fault NACK, held back");
    f.mem(1).make_present(dst);
    // The retransmission timeout sends the segment again; it lands.
    f.run(100, |_| held.borrow().len() >= 2);
    f.fate = Box::new(|_, _, _| Fate::Deliver);
    let late: Vec<Vec<u8>> = held.borrow_mut().drain(..).collect();
    for d in late {
        f.deliver(0, &d);
    }
    let c = f.wait_for(0, 40, 10);
    assert_eq!(
        (status(&c), c.remote_faults, c.retransmitted_bytes),
        (Status::Success, 1, PAGE)
    );
    assert_eq!(f.mem(1).slice(dst, data.len()), &data[..]);
}

// ---- Requests near a fault being resolved wait for it (HOLD_SPAN) ----

#[test]
fn a_request_near_a_remote_fault_waits_for_it_instead_of_faulting_again() {
    // Two WRITEs into one never-touched 2 MiB of the target: the first
    // faults; the second is held, untried (no second SMMU miss), and lands
    // after the one PAGE_READY of a libOS that maps the whole span.
    let mut f = Fabric::shared(2);
    let pages = 64;
    let data = pattern((pages * PAGE) as usize, 3);
    f.mem(0).store(BASE, &data);
    let dst = BASE + HOLD_SPAN;
    for p in 0..pages {
        f.mem(1).evict(dst + p * PAGE);
    }
    let half = pages / 2 * PAGE;
    f.post(0, wr(Opcode::Write, 50, 1, BASE, dst, half));
    f.run(5, |_| false);
    f.post(0, wr(Opcode::Write, 51, 1, BASE + half, dst + half, half));
    f.run(5, |_| false);
    assert_eq!(f.mem(1).faults, vec![dst], "the second request was held");
    for p in 0..pages {
        f.mem(1).make_present(dst + p * PAGE);
    }
    f.page_ready(1, dst, false);
    let (a, b) = (f.wait_for(0, 50, 50), f.wait_for(0, 51, 50));
    assert_eq!((status(&a), a.remote_faults), (Status::Success, 1));
    assert_eq!((status(&b), b.remote_faults), (Status::Success, 0));
    assert_eq!(f.mem(1).faults.len(), 1);
    assert_eq!(f.mem(1).slice(dst, data.len()), &data[..]);
}

#[test]
fn a_request_held_behind_a_page_that_fails_still_tries_its_own() {
    let mut f = Fabric::shared(2);
    let data = pattern(PAGE as usize, 4);
    f.mem(0).store(BASE, &data);
    let bad = BASE + HOLD_SPAN;
    let good = bad + 8 * PAGE;
    f.mem(1).evict(bad);
    f.post(0, wr(Opcode::Write, 60, 1, BASE, bad, PAGE));
    f.run(5, |_| false);
    f.post(0, wr(Opcode::Write, 61, 1, BASE, good, PAGE));
    f.run(5, |_| false);
    assert!(
        f.finished(0, 61).is_none(),
        "held behind the fault at {bad:#x}"
    );
    f.page_ready(1, bad, true);
    let (a, b) = (f.wait_for(0, 60, 50), f.wait_for(0, 61, 50));
    assert_eq!(status(&a), Status::RemoteAccessError);
    assert_eq!(status(&b), Status::Success);
    assert_eq!(f.mem(1).slice(good, data.len()), &data[..]);
}

#[test]
fn a_request_near_a_local_fault_waits_for_it_instead_of_faulting_again() {
    // Two WRITEs from one never-touched 2 MiB of the initiator: one local
    // fault, one RESUME, both delivered.
    let mut f = Fabric::shared(2);
    let pages = 64;
    let src = BASE + HOLD_SPAN;
    for p in 0..pages {
        f.mem(0).evict(src + p * PAGE);
    }
    let half = pages / 2 * PAGE;
    f.post(0, wr(Opcode::Write, 70, 1, src, BASE, half));
    f.post(0, wr(Opcode::Write, 71, 1, src + half, BASE + half, half));
    f.run(5, |_| false);
    assert_eq!(f.mem(0).faults, vec![src], "the second request was held");
    for p in 0..pages {
        f.mem(0).make_present(src + p * PAGE);
    }
    let data = pattern((pages * PAGE) as usize, 5);
    f.mem(0).store(src, &data);
    f.post(
        0,
        WorkRequest {
            opcode: Opcode::Resume as u8,
            wr_id: 70,
            ..WorkRequest::default()
        },
    );
    let (a, b) = (f.wait_for(0, 70, 50), f.wait_for(0, 71, 50));
    assert_eq!((status(&a), a.local_faults), (Status::Success, 1));
    assert_eq!((status(&b), b.local_faults), (Status::Success, 0));
    assert_eq!(f.mem(0).faults.len(), 1);
    assert_eq!(f.mem(1).slice(BASE, data.len()), &data[..]);
}

// ---- A local fault sends the target a PREPARE of what is to come ----

/// Makes every page of `span` on `node` fault.
fn evict_span(f: &mut Fabric, node: usize, span: u64) {
    for p in 0..HOLD_SPAN / PAGE {
        f.mem(node).evict(span + p * PAGE);
    }
}

/// The libOS of `node` maps the whole `span` and says so.
fn resolve_span(f: &mut Fabric, node: usize, span: u64) {
    for p in 0..HOLD_SPAN / PAGE {
        f.mem(node).make_present(span + p * PAGE);
    }
    f.page_ready(node, span, false);
}

#[test]
fn while_the_source_faults_the_target_resolves_the_destination() {
    // A WRITE from never-touched memory into never-touched memory: the
    // first local fault makes the target probe both of its spans, so both
    // libOSes resolve at the same time; the data then lands without one
    // more remote fault.
    let mut f = Fabric::shared(2);
    let len = 2 * HOLD_SPAN;
    for node in 0..2 {
        evict_span(&mut f, node, BASE);
        evict_span(&mut f, node, BASE + HOLD_SPAN);
    }
    f.post(0, wr(Opcode::Write, 80, 1, BASE, BASE, len));
    f.run(5, |_| false);
    assert_eq!(f.mem(0).faults, vec![BASE]);
    assert_eq!(f.mem(1).faults, vec![BASE, BASE + HOLD_SPAN], "probed");
    resolve_span(&mut f, 1, BASE);
    resolve_span(&mut f, 1, BASE + HOLD_SPAN);
    let data = pattern(len as usize, 8);
    for span in [BASE, BASE + HOLD_SPAN] {
        resolve_span(&mut f, 0, span);
        let at = (span - BASE) as usize;
        f.mem(0).store(span, &data[at..at + HOLD_SPAN as usize]);
        f.run(5, |_| false);
    }
    let c = f.wait_for(0, 80, 50);
    assert_eq!(
        (status(&c), c.local_faults, c.remote_faults),
        (Status::Success, 2, 2)
    );
    assert_eq!(f.mem(1).faults.len(), 2, "no segment faulted remotely");
    assert_eq!(f.mem(1).slice(BASE, data.len()), &data[..]);
}

#[test]
fn a_segment_that_arrives_before_the_prepared_page_is_ready_waits_for_it() {
    let mut f = Fabric::shared(2);
    let data = pattern(64 * PAGE as usize, 9);
    let dst = BASE + HOLD_SPAN;
    f.mem(0).evict(BASE);
    evict_span(&mut f, 1, dst);
    f.post(0, wr(Opcode::Write, 81, 1, BASE, dst, data.len() as u64));
    f.run(5, |_| false);
    assert_eq!(f.mem(1).faults, vec![dst], "probed");
    f.mem(0).make_present(BASE);
    f.mem(0).store(BASE, &data);
    f.page_ready(0, BASE, false);
    f.run(5, |_| false);
    assert!(f.finished(0, 81).is_none(), "held behind the probed page");
    assert_eq!(f.mem(1).faults, vec![dst], "not tried");
    resolve_span(&mut f, 1, dst);
    let c = f.wait_for(0, 81, 50);
    assert_eq!((status(&c), c.remote_faults), (Status::Success, 1));
    assert_eq!(f.mem(1).slice(dst, data.len()), &data[..]);
}

#[test]
fn a_prepare_from_outside_is_bounded_and_never_panics() {
    let mut f = Fabric::shared(2);
    for (va, len) in [(u64::MAX - 10, 100), (0, u64::MAX), (BASE, 1 << 40)] {
        let mut m = Msg::new(Kind::Prepare, 0, 1, crate::fabric_msg::PREPARE_SEG);
        (m.va, m.len, m.imm) = (va, len, 1);
        f.deliver(1, &m.encode());
        m.key = f.keys[1];
        f.deliver(1, &m.encode());
    }
    // Everything outside the memory "faults" in a FlatMemory: one probe
    // per 2 MiB, at most PREPARE_SPANS per PREPARE.
    assert!(f.mem(1).faults.len() <= 3 * 32, "{}", f.mem(1).faults.len());
}

#[test]
fn the_driver_can_prepare_a_target_before_posting() {
    // What prefault and prefetch transfers do: the PREPARE control request
    // makes the target probe now; it completes nothing on either side.
    let mut f = Fabric::shared(2);
    let dst = BASE + HOLD_SPAN;
    evict_span(&mut f, 1, dst);
    f.post(
        0,
        WorkRequest {
            opcode: Opcode::Prepare as u8,
            flags: hw::rdma::wire::PREPARE_WRITE,
            node: 1,
            remote_va: dst,
            len: HOLD_SPAN,
            ..WorkRequest::default()
        },
    );
    f.run(5, |_| false);
    assert_eq!(f.mem(1).faults, vec![dst]);
    assert!(
        f.done.iter().all(|d| d.is_empty()),
        "a hint completes nothing"
    );
}

// ---- Forged and malformed datagrams ----

/// The datagrams node `node` has to send, taken out of the fabric.
fn hold_back(f: &mut Fabric, node: usize) -> Vec<(u16, Vec<u8>)> {
    f.nodes[node].0.take_datagrams()
}

#[test]
fn a_datagram_claiming_another_sender_is_dropped_and_counted() {
    let mut f = Fabric::new(3);
    let data = pattern(100_000, 4);
    f.mem(0).store(BASE, &data);
    f.post(
        0,
        wr(
            Opcode::Write,
            50,
            1,
            BASE,
            BASE + 0x20_0000,
            data.len() as u64,
        ),
    );
    let out = hold_back(&mut f, 0);
    assert!(!out.is_empty());
    // Node 2 sends node 0's segments, claiming to be node 0.
    for (dst, d) in &out {
        f.deliver_from(2, *dst, d);
    }
    let e1 = &mut f.nodes[1].0;
    assert_eq!(e1.counters.forged_src, out.len() as u64);
    assert!(
        e1.take_datagrams().is_empty(),
        "no answer to a forged sender"
    );
    assert_ne!(
        f.mem(1).slice(BASE + 0x20_0000, 16),
        &data[..16],
        "nothing placed"
    );
    // The real ones go through.
    for (dst, d) in &out {
        f.deliver_from(0, *dst, d);
    }
    assert_eq!(status(&f.wait_for(0, 50, 100)), Status::Success);
    assert_eq!(f.mem(1).slice(BASE + 0x20_0000, data.len()), &data[..]);
}

#[test]
fn forged_acks_and_nacks_complete_or_fail_nothing() {
    let mut f = Fabric::new(3);
    let data = pattern(200_000, 5);
    f.mem(0).store(BASE, &data);
    f.post(
        0,
        wr(
            Opcode::Write,
            51,
            1,
            BASE,
            BASE + 0x20_0000,
            data.len() as u64,
        ),
    );
    let out = hold_back(&mut f, 0);
    let real = f.nodes[0].0.xfers();
    assert_eq!(real.len(), 1);
    let real = real[0];
    // Ids a forger would guess (a counter from 1), from the right peer.
    for xfer in (1..=64).chain([real ^ 1, real.wrapping_add(1)]) {
        for seg in 0..8 {
            f.deliver(0, &Msg::new(Kind::Ack, 1, xfer, seg).encode());
            let mut n = Msg::new(Kind::Nack, 1, xfer, seg);
            n.reason = Some(Reason::AccessError);
            f.deliver(0, &n.encode());
        }
    }
    // The real id, but from a node the transfer is not outstanding to.
    for seg in 0..8 {
        f.deliver_from(2, 0, &Msg::new(Kind::Ack, 2, real, seg).encode());
        let mut n = Msg::new(Kind::Nack, 2, real, seg);
        n.reason = Some(Reason::AccessError);
        f.deliver_from(2, 0, &n.encode());
    }
    assert!(f.finished(0, 51).is_none(), "nothing forged ends the WRITE");
    assert_eq!(f.nodes[0].0.counters.unknown_xfer, 66 * 16 + 16);
    for (dst, d) in &out {
        f.deliver_from(0, *dst, d);
    }
    let c = f.wait_for(0, 51, 100);
    assert_eq!(status(&c), Status::Success);
    assert_eq!(f.mem(1).slice(BASE + 0x20_0000, data.len()), &data[..]);
}

#[test]
fn transfer_ids_are_random_not_a_counter() {
    let mut f = Fabric::new(2);
    for i in 0..4 {
        f.post(
            0,
            wr(Opcode::Write, 60 + i, 1, BASE, BASE + 0x20_0000, 4096),
        );
    }
    let ids = f.nodes[0].0.xfers();
    assert_eq!(ids.len(), 4);
    assert!(ids.iter().all(|&x| x > 1 << 20), "{ids:x?}");
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), 4);
}

#[test]
fn an_empty_write_data_flood_keeps_the_target_state_bounded() {
    let mut f = Fabric::new(2);
    let (_, per_xfer) = f.nodes[1].0.target.tracked();
    // New segment numbers on one transfer: far ones are dropped, unanswered.
    for seg in 0..20_000u32 {
        let mut m = Msg::new(Kind::WriteData, 0, 7, seg.wrapping_mul(7919));
        m.va = BASE;
        m.key = f.keys[1];
        f.deliver(1, &m.encode());
    }
    // New transfers: at most REMEMBERED_PER_PEER of them are remembered.
    for xfer in 0..20_000u64 {
        let mut m = Msg::new(Kind::WriteData, 0, 1000 + xfer, 0);
        m.va = BASE;
        m.key = f.keys[1];
        f.deliver(1, &m.encode());
    }
    let e1 = &mut f.nodes[1].0;
    let (xfers, per) = e1.target.tracked();
    assert!(
        xfers <= target::REMEMBERED_PER_PEER,
        "{xfers} transfers tracked"
    );
    assert_eq!(per, per_xfer, "per-transfer state is of fixed size");
    assert!(per <= 64, "{per} bytes per transfer");
    assert!(e1.counters.over_bounds > 19_000, "{:?}", e1.counters);
    assert_eq!(
        e1.counters.forgotten,
        20_001 - target::REMEMBERED_PER_PEER as u64,
        "{:?}",
        e1.counters
    );
    e1.take_datagrams();
    // Real traffic still goes through.
    let data = pattern(300_000, 6);
    f.mem(0).store(BASE, &data);
    f.post(
        0,
        wr(
            Opcode::Write,
            52,
            1,
            BASE,
            BASE + 0x20_0000,
            data.len() as u64,
        ),
    );
    assert_eq!(status(&f.wait_for(0, 52, 100)), Status::Success);
    assert_eq!(f.mem(1).slice(BASE + 0x20_0000, data.len()), &data[..]);
}

#[test]
fn a_segment_far_past_the_window_is_not_answered() {
    let mut f = Fabric::new(2);
    let mut m = Msg::new(Kind::WriteData, 0, 9, target::SEGS_AHEAD);
    m.va = BASE;
    m.key = f.keys[1];
    m.payload = vec![1; 8];
    f.deliver(1, &m.encode());
    assert!(f.nodes[1].0.take_datagrams().is_empty());
    assert_eq!(f.mem(1).slice(BASE, 8), &[0; 8]);
    m.seg = target::SEGS_AHEAD - 1;
    f.deliver(1, &m.encode());
    assert_eq!(f.nodes[1].0.take_datagrams().len(), 1, "ACK");
    assert_eq!(f.mem(1).slice(BASE, 8), &[1; 8]);
}

#[test]
fn a_request_over_the_max_message_size_fails_at_once() {
    let mut f = Fabric::new(2);
    for (op, id) in [(Opcode::Write, 53), (Opcode::Read, 54)] {
        f.post(0, wr(op, id, 1, BASE, BASE, MAX_MSG + 1));
        let c = f.finished(0, id).expect("completed at once");
        assert_eq!(status(&c), Status::BadRequest);
    }
    assert!(!f.nodes[0].0.busy());
    assert!(hold_back(&mut f, 0).is_empty(), "nothing sent");
}

#[test]
fn segments_are_built_a_window_at_a_time() {
    let mut f = Fabric::new(2);
    f.post(0, wr(Opcode::Write, 55, 1, BASE, BASE, MAX_MSG));
    let window = Config::default().window;
    let e0 = &f.nodes[0].0;
    let op = e0.ops.values().next().expect("in progress");
    assert_eq!(
        op.segs.total() as u64,
        MAX_MSG.div_ceil(Config::default().seg_size)
    );
    assert!(op.segs.built_count() <= window, "{}", op.segs.built_count());
    assert_eq!(e0.datagrams.len(), window, "one window sent");
    // As segments are acknowledged, the window moves and stays small.
    f.run(30, |f| {
        f.nodes[0]
            .0
            .ops
            .values()
            .next()
            .is_none_or(|o| o.segs.built().start >= 40)
    });
    let op = f.nodes[0].0.ops.values().next().expect("still going");
    assert!(op.segs.built().start >= 40, "the window moved");
    assert!(op.segs.built_count() <= window);
}

// ---- Remote keys: what a peer may reach ----

/// Node 1 exposes 64 KiB at `BASE + 1 MiB` with `rights`; both memories
/// start with known bytes. Returns the fabric (datagram path, or the
/// direct path when `shared`), the exposed address and its key.
fn exposed(shared: bool, rights: u8) -> (Fabric, u64, u64) {
    let mems = if shared {
        FlatMemory::cluster(2, BASE, MEM)
    } else {
        vec![FlatMemory::new(BASE, MEM), FlatMemory::new(BASE, MEM)]
    };
    let mut f = Fabric::unexposed(mems);
    let at = BASE + (1 << 20);
    f.mem(0).store(BASE, &pattern(MEM, 1));
    f.mem(1).store(BASE, &pattern(MEM, 2));
    let key = f.expose(1, at, 64 << 10, rights);
    f.done.iter_mut().for_each(Vec::clear);
    (f, at, key)
}

/// Posts a WRITE or READ of `len` bytes with `key` on node 1's `remote`,
/// and waits for its status.
fn remote_op(f: &mut Fabric, op: Opcode, id: u64, key: u64, remote: u64, len: u64) -> Status {
    let mut w = wr(op, id, 1, BASE, remote, len);
    w.key = key;
    f.post_raw(0, w);
    status(&f.wait_for(0, id, 200))
}

#[test]
fn a_request_inside_the_exposure_with_its_rights_succeeds() {
    for shared in [false, true] {
        let rw = EXPOSE_REMOTE_READ | EXPOSE_REMOTE_WRITE;
        let (mut f, at, key) = exposed(shared, rw);
        assert_eq!(
            remote_op(&mut f, Opcode::Write, 1, key, at, 64 << 10),
            Status::Success
        );
        assert!(f.mem(1).slice(at, 64 << 10) == f.mem(0).slice(BASE, 64 << 10));
        assert_eq!(
            remote_op(&mut f, Opcode::Read, 2, key, at + 4096, 8192),
            Status::Success
        );
        assert_eq!(f.nodes[1].0.counters.refused, 0);
    }
}

#[test]
fn requests_outside_the_exposure_or_with_a_wrong_key_or_right_touch_nothing() {
    for shared in [false, true] {
        let (mut f, at, key) = exposed(shared, EXPOSE_REMOTE_WRITE);
        let before = f.mem(1).slice(BASE, MEM);
        let before0 = f.mem(0).slice(BASE, MEM);
        let cases = [
            (
                "write past the end",
                Opcode::Write,
                key,
                at + (60 << 10),
                8192,
            ),
            ("write before the start", Opcode::Write, key, at - 8, 16),
            ("write far away (kernel data)", Opcode::Write, key, BASE, 8),
            ("write with a wrong key", Opcode::Write, key ^ 1, at, 8),
            ("write with no key", Opcode::Write, 0, at, 8),
            ("read without the right", Opcode::Read, key, at, 4096),
        ];
        for (i, (what, op, k, remote, len)) in cases.into_iter().enumerate() {
            let got = remote_op(&mut f, op, 10 + i as u64, k, remote, len);
            assert_eq!(
                got,
                Status::RemoteProtectionError,
                "{what} (shared {shared})"
            );
        }
        assert!(f.mem(1).slice(BASE, MEM) == before, "target unchanged");
        assert!(f.mem(0).slice(BASE, MEM) == before0, "nothing read back");
        assert_eq!(f.mem(1).faults, Vec::<u64>::new(), "nothing translated");
        assert!(f.nodes[1].0.counters.refused >= 6);
    }
}

#[test]
fn after_revocation_the_key_reaches_nothing() {
    let (mut f, at, key) = exposed(true, EXPOSE_REMOTE_WRITE);
    assert_eq!(
        remote_op(&mut f, Opcode::Write, 1, key, at, 4096),
        Status::Success
    );
    let mut revoke = wr(Opcode::Revoke, 2, 0, 0, 0, 0);
    revoke.key = key;
    f.post(1, revoke);
    assert_eq!(f.finished(1, 2).map(|c| status(&c)), Some(Status::Success));
    f.mem(0).store(BASE, &[0xee; 4096]);
    let before = f.mem(1).slice(at, 4096);
    assert_eq!(
        remote_op(&mut f, Opcode::Write, 3, key, at, 4096),
        Status::RemoteProtectionError
    );
    assert_eq!(f.mem(1).slice(at, 4096), before);
    // Revoking twice, or a key never issued, is a bad request.
    f.post(1, revoke);
    let c = f.done[1].iter().rfind(|c| c.wr_id == 2).copied().unwrap();
    assert_eq!(status(&c), Status::BadRequest);
}

#[test]
fn a_revocation_while_a_write_waits_for_a_fault_fails_the_rest_of_it() {
    let (mut f, at, key) = exposed(false, EXPOSE_REMOTE_WRITE);
    let hole = at + 8 * PAGE;
    // Segments fault independently: what other segments placed before the
    // revocation stays; the faulted page, resent after it, is refused.
    let untouched = f.mem(1).slice(hole, PAGE as usize);
    f.mem(1).evict(hole);
    let mut w = wr(Opcode::Write, 1, 1, BASE, at, 64 << 10);
    w.key = key;
    f.post_raw(0, w);
    f.run(50, |_| false);
    assert!(f.finished(0, 1).is_none(), "waits for the target's libOS");
    let mut revoke = wr(Opcode::Revoke, 2, 0, 0, 0, 0);
    revoke.key = key;
    f.post(1, revoke);
    f.mem(1).make_present(hole);
    f.page_ready(1, hole, false);
    let c = f.wait_for(0, 1, 200);
    assert_eq!(status(&c), Status::RemoteProtectionError);
    let after = f.mem(1).slice(hole, untouched.len());
    assert!(after == untouched, "nothing placed after the revocation");
}

#[test]
fn a_write_into_an_exposed_never_touched_range_faults_and_lands() {
    for shared in [false, true] {
        let (mut f, at, key) = exposed(shared, EXPOSE_REMOTE_WRITE);
        for p in 0..16 {
            f.mem(1).evict(at + p * PAGE);
        }
        let mut w = wr(Opcode::Write, 1, 1, BASE, at, 64 << 10);
        w.key = key;
        f.post_raw(0, w);
        f.run(20, |_| false);
        let faulted = f.mem(1).faults.clone();
        assert!(!faulted.is_empty(), "the exposure pinned nothing");
        for p in 0..16 {
            f.mem(1).make_present(at + p * PAGE);
        }
        for page in faulted {
            f.page_ready(1, page, false);
        }
        let c = f.wait_for(0, 1, 500);
        assert_eq!(status(&c), Status::Success, "shared {shared}");
        assert!(c.remote_faults >= 1);
        assert!(f.mem(1).slice(at, 64 << 10) == f.mem(0).slice(BASE, 64 << 10));
    }
}

#[test]
fn exposures_that_make_no_sense_are_bad_requests() {
    let mut f = Fabric::unexposed(vec![FlatMemory::new(BASE, MEM)]);
    for (i, (va, len, rights)) in [
        (BASE, 0, 3),
        (u64::MAX, 2, 3),
        (BASE, 8, 0),
        (BASE, 8, 0x40),
    ]
    .into_iter()
    .enumerate()
    {
        let mut x = wr(Opcode::Expose, i as u64, 0, va, 0, len);
        x.flags = rights;
        f.post(0, x);
        let c = f.finished(0, i as u64).expect("completes at once");
        assert_eq!((status(&c), c.key), (Status::BadRequest, 0));
    }
}
