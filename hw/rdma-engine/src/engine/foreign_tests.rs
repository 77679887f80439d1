//! Queue pairs with peers outside the cluster: two engines that are each
//! a cluster of one, on their own addresses, connected the way an app
//! connects to a Linux host (QP_CREATE, numbers exchanged out of band,
//! QP_CONNECT), then talking RC with random first PSNs.

use super::*;
use crate::dma::FlatMemory;
use crate::roce::packet::decode;
use hw::rdma::wire::{EXPOSE_REMOTE_READ, EXPOSE_REMOTE_WRITE};

const BASE: u64 = 0x4000_0000;
const MEM: usize = 1 << 20;

struct Pair {
    ends: [(Engine, FlatMemory); 2],
    addrs: [Ipv4Addr; 2],
    now: u64,
    /// Every packet that went on the link: (source end, bytes).
    log: Vec<(usize, Vec<u8>)>,
}

impl Pair {
    fn new() -> Self {
        let addrs = [Ipv4Addr::new(10, 47, 0, 1), Ipv4Addr::new(10, 47, 0, 9)];
        let end = |a: Ipv4Addr| {
            (
                Engine::new(0, vec![a], Config::default()),
                FlatMemory::new(BASE, MEM),
            )
        };
        Self {
            ends: [end(addrs[0]), end(addrs[1])],
            addrs,
            now: 0,
            log: Vec::new(),
        }
    }

    fn post(&mut self, i: usize, wr: WorkRequest) -> Vec<Completion> {
        let (e, m) = &mut self.ends[i];
        e.post(wr, m, self.now);
        e.take_completions()
    }

    /// Moves packets both ways until `until` says stop; returns end `i`'s
    /// completions.
    fn run(&mut self, i: usize, mut until: impl FnMut(&[Completion]) -> bool) -> Vec<Completion> {
        let mut done = Vec::new();
        for _ in 0..10_000 {
            for src in 0..2 {
                let out = self.ends[src].0.take_packets();
                for (handle, bytes) in out {
                    let dst_addr = self.ends[src].0.peer_addr(handle).expect("connected");
                    let dst = self
                        .addrs
                        .iter()
                        .position(|&a| a == dst_addr)
                        .expect("an end");
                    let path = Ipv4Path {
                        // The far end numbers its packets as rxe does.
                        id: 0x2055 + self.log.len() as u16,
                        ..Ipv4Path::outgoing(self.addrs[src].octets(), dst_addr.octets(), ROCE_PORT)
                    };
                    // Re-encode under the header the packet travels with.
                    let plain =
                        Ipv4Path::outgoing(self.addrs[src].octets(), dst_addr.octets(), ROCE_PORT);
                    let p = decode(&bytes, &plain).expect("our own packets decode");
                    let mut wire = Vec::new();
                    packet::encode(&p, &path, &mut wire);
                    self.log.push((src, wire.clone()));
                    let (e, m) = &mut self.ends[dst];
                    e.on_datagram(&path, &wire, m, self.now);
                }
            }
            self.now += 100;
            for (e, m) in self.ends.iter_mut() {
                e.tick(m, self.now);
            }
            done.extend(self.ends[i].0.take_completions());
            if until(&done) {
                return done;
            }
        }
        panic!("nothing completed: {done:?}");
    }
}

fn control(op: Opcode) -> WorkRequest {
    WorkRequest {
        opcode: op as u8,
        ..WorkRequest::default()
    }
}

/// Connects the two ends; returns each end's handle and first PSN.
fn connect(p: &mut Pair) -> [(u16, u32); 2] {
    let made: Vec<Completion> = (0..2)
        .map(|i| p.post(i, control(Opcode::QpCreate))[0])
        .collect();
    for (i, c) in made.iter().enumerate() {
        assert_eq!(c.status(), Status::Success);
        assert_eq!(c.node, 1, "the first handle after the cluster's one node");
        let far = &made[1 - i];
        let wr = WorkRequest {
            node: c.node,
            remote_va: u64::from(u32::from(p.addrs[1 - i])),
            key: far.key,
            imm: far.imm,
            len: 1024,
            ..control(Opcode::QpConnect)
        };
        assert_eq!(p.post(i, wr)[0].status(), Status::Success);
    }
    [(made[0].node, made[0].imm), (made[1].node, made[1].imm)]
}

#[test]
fn a_write_read_and_send_cross_a_queue_pair_made_out_of_band() {
    let mut p = Pair::new();
    let [(h0, psn0), (h1, _)] = connect(&mut p);
    let expose = WorkRequest {
        flags: EXPOSE_REMOTE_READ | EXPOSE_REMOTE_WRITE,
        local_va: BASE,
        len: MEM as u64,
        ..control(Opcode::Expose)
    };
    let key = p.post(1, expose)[0].key;
    let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7) as u8).collect();
    p.ends[0].1.store(BASE, &data);
    // WRITE 10,000 bytes (ten packets) into the far end.
    let write = WorkRequest {
        opcode: Opcode::Write as u8,
        wr_id: 1,
        node: h0,
        local_va: BASE,
        remote_va: BASE + 0x8000,
        len: data.len() as u64,
        key,
        ..WorkRequest::default()
    };
    p.post(0, write);
    let c = p.run(0, |d| !d.is_empty());
    assert_eq!(c[0].status(), Status::Success);
    assert_eq!(p.ends[1].1.slice(BASE + 0x8000, data.len()), data);
    let (first, bytes) = &p.log[0];
    assert_eq!(*first, 0);
    let plain = Ipv4Path {
        id: 0x2055,
        ..Ipv4Path::outgoing(p.addrs[0].octets(), p.addrs[1].octets(), ROCE_PORT)
    };
    assert_eq!(
        decode(bytes, &plain).unwrap().bth.psn,
        psn0,
        "the first packet carries the PSN told out of band"
    );
    // READ it back elsewhere.
    let read = WorkRequest {
        opcode: Opcode::Read as u8,
        wr_id: 2,
        local_va: BASE + 0x20000,
        remote_va: BASE + 0x8000,
        ..write
    };
    p.post(0, read);
    let c = p.run(0, |d| !d.is_empty());
    assert_eq!(c[0].status(), Status::Success);
    assert_eq!(p.ends[0].1.slice(BASE + 0x20000, data.len()), data);
    // SEND into a posted RECV.
    let recv = WorkRequest {
        opcode: Opcode::Recv as u8,
        wr_id: 3,
        local_va: BASE + 0x40000,
        len: 4096,
        ..WorkRequest::default()
    };
    p.post(1, recv);
    let send = WorkRequest {
        opcode: Opcode::Send as u8,
        wr_id: 4,
        node: h0,
        local_va: BASE,
        len: 3000,
        ..WorkRequest::default()
    };
    p.post(0, send);
    let c = p.run(1, |d| !d.is_empty());
    assert_eq!(
        (c[0].wr_id, c[0].status(), c[0].node),
        (3, Status::Success, h1)
    );
    assert_eq!(p.ends[1].1.slice(BASE + 0x40000, 3000), data[..3000]);
    // Neither end sent a Faultline notice to a peer it does not know is one.
    assert_eq!(p.ends[0].0.counters.notices_sent, 0);
    assert_eq!(p.ends[1].0.counters.bad_icrc, 0, "counting ids check out");
}

#[test]
fn a_destroyed_queue_pair_takes_nothing_more() {
    let mut p = Pair::new();
    let [(h0, _), (h1, _)] = connect(&mut p);
    let destroy = WorkRequest {
        node: h1,
        ..control(Opcode::QpDestroy)
    };
    assert_eq!(p.post(1, destroy)[0].status(), Status::Success);
    assert_eq!(p.post(1, destroy)[0].status(), Status::BadRequest, "twice");
    let send = WorkRequest {
        opcode: Opcode::Send as u8,
        node: h1,
        local_va: BASE,
        len: 8,
        ..WorkRequest::default()
    };
    assert_eq!(p.post(1, send)[0].status(), Status::BadRequest);
    // End 0 still sends: end 1 drops it, its QPN is gone.
    let send0 = WorkRequest { node: h0, ..send };
    p.post(0, send0);
    for _ in 0..20 {
        for (handle, bytes) in p.ends[0].0.take_packets() {
            let path = Ipv4Path::outgoing(
                p.addrs[0].octets(),
                p.ends[0].0.peer_addr(handle).unwrap().octets(),
                ROCE_PORT,
            );
            let (e, m) = &mut p.ends[1];
            e.on_datagram(&path, &bytes, m, 0);
        }
        p.now += 25_000;
        let (e, m) = &mut p.ends[0];
        e.tick(m, p.now);
    }
    assert!(
        p.ends[1].0.counters.strangers > 0,
        "its address is no peer's now"
    );
    // Connecting a handle that names a cluster node, or a bad MTU: refused.
    let bad = WorkRequest {
        node: 0,
        remote_va: u64::from(u32::from(p.addrs[0])),
        key: 5,
        len: 1024,
        ..control(Opcode::QpConnect)
    };
    assert_eq!(p.post(1, bad)[0].status(), Status::BadRequest);
}

#[test]
fn a_batch_of_a_long_write_is_acknowledged_before_the_write_ends() {
    let mut p = Pair::new();
    let [(h0, _), _] = connect(&mut p);
    let expose = WorkRequest {
        flags: EXPOSE_REMOTE_WRITE,
        local_va: BASE,
        len: MEM as u64,
        ..control(Opcode::Expose)
    };
    let key = p.post(1, expose)[0].key;
    let write = WorkRequest {
        opcode: Opcode::Write as u8,
        wr_id: 1,
        node: h0,
        local_va: BASE,
        remote_va: BASE,
        len: 60 * 1024,
        key,
        ..WorkRequest::default()
    };
    p.post(0, write);
    // Deliver the first 35 packets (no AckReq among them): 32 or more were
    // taken since the last ACK, so the batch's end acknowledges them.
    let packets = p.ends[0].0.take_packets();
    let path = |p: &Pair| Ipv4Path::outgoing(p.addrs[0].octets(), p.addrs[1].octets(), ROCE_PORT);
    let first_psn = decode(&packets[0].1, &path(&p)).unwrap().bth.psn;
    for (_, bytes) in packets.iter().take(35) {
        let plain = path(&p);
        assert!(!decode(bytes, &plain).unwrap().bth.ack_req);
        let (e, m) = &mut p.ends[1];
        e.on_datagram(&plain, bytes, m, 0);
    }
    assert!(
        p.ends[1].0.take_packets().is_empty(),
        "no ACK asked for yet"
    );
    p.ends[1].0.acknowledge_batch();
    let acks = p.ends[1].0.take_packets();
    assert_eq!(acks.len(), 1);
    let back = Ipv4Path::outgoing(p.addrs[1].octets(), p.addrs[0].octets(), ROCE_PORT);
    let ack = decode(&acks[0].1, &back).unwrap();
    assert_eq!(ack.bth.opcode, packet::Opcode::Acknowledge);
    assert_eq!(
        ack.bth.psn,
        packet::psn_add(first_psn, 34),
        "the 35th packet, cumulative"
    );
    p.ends[1].0.acknowledge_batch();
    assert!(
        p.ends[1].0.take_packets().is_empty(),
        "nothing new to acknowledge"
    );
}
