//! The RDMA engine's RoCEv2 side on what a network can send: raw datagrams,
//! and well-formed packets (right ICRC) with any opcode, PSN, queue pair,
//! RETH, AETH and payload, mixed with the real traffic of two engines that
//! WRITE, READ and SEND to each other through loss, faults and timers.
//! Raw IPv4 packets go through the header parser the raw socket's bytes
//! meet; queue pairs for peers outside the cluster are made, connected
//! and ended with fuzzed numbers. Nothing panics, and the target's memory
//! outside what it exposed is never written.
#![no_main]

use faultline_rdma_engine::dma::{FlatMemory, PAGE};
use faultline_rdma_engine::engine::{qpn_for, Config, Engine};
use faultline_rdma_engine::roce::ipv4;
use faultline_rdma_engine::roce::packet::{
    encode, Aeth, Bth, Ipv4Path, NakCode, Opcode as Rc, Packet, Reth, Syndrome, ROCE_PORT,
};
use hw::rdma::wire::{Opcode, WorkRequest, EXPOSE_REMOTE_READ, EXPOSE_REMOTE_WRITE};
use kvstore_gen::choices::Input;
use libfuzzer_sys::fuzz_target;
use std::net::Ipv4Addr;

const BASE: u64 = 0x4000_0000;
const MEM: usize = 1 << 20;
/// What node 1 exposes: the middle half of its memory.
const EXPOSED: std::ops::Range<u64> = BASE + (MEM as u64 / 4)..BASE + 3 * (MEM as u64 / 4);

fn addrs() -> Vec<Ipv4Addr> {
    vec![Ipv4Addr::new(10, 47, 0, 1), Ipv4Addr::new(10, 47, 0, 2)]
}

fn path(from: usize) -> Ipv4Path {
    let a = addrs();
    Ipv4Path::outgoing(a[from].octets(), a[1 - from].octets(), ROCE_PORT)
}

const OPCODES: [Rc; 18] = [
    Rc::SendFirst,
    Rc::SendMiddle,
    Rc::SendLast,
    Rc::SendLastImm,
    Rc::SendOnly,
    Rc::SendOnlyImm,
    Rc::WriteFirst,
    Rc::WriteMiddle,
    Rc::WriteLast,
    Rc::WriteLastImm,
    Rc::WriteOnly,
    Rc::WriteOnlyImm,
    Rc::ReadRequest,
    Rc::ReadResponseFirst,
    Rc::ReadResponseMiddle,
    Rc::ReadResponseLast,
    Rc::ReadResponseOnly,
    Rc::Acknowledge,
];

fuzz_target!(|data: &[u8]| {
    let mut inp = Input::new(data);
    let cfg = Config {
        mtu: [256, 1024][inp.below(2)],
        window: 1 + inp.below(64) as u32,
        ..Config::default()
    };
    let mut nodes: Vec<(Engine, FlatMemory)> = (0..2)
        .map(|r| {
            (
                Engine::new(r, addrs(), cfg.clone()),
                FlatMemory::new(BASE, MEM),
            )
        })
        .collect();
    let expose = WorkRequest {
        opcode: Opcode::Expose as u8,
        flags: EXPOSE_REMOTE_READ | EXPOSE_REMOTE_WRITE,
        local_va: EXPOSED.start,
        len: EXPOSED.end - EXPOSED.start,
        ..WorkRequest::default()
    };
    let (e1, m1) = &mut nodes[1];
    e1.post(expose, m1, 0);
    let key = e1.take_completions()[0].key;
    nodes[0].1.store(BASE, &vec![0xa5; MEM / 2]);
    let mut now = 0u64;
    let mut wr_id = 0u64;
    let mut wire: Vec<(usize, usize, Vec<u8>)> = Vec::new();
    while !inp.is_empty() {
        match inp.below(10) {
            0 => {
                // Raw bytes from node 0 to node 1, or back.
                let to = inp.below(2);
                let bytes = inp.bytes(200).to_vec();
                let (e, m) = &mut nodes[to];
                e.on_packet(1 - to as u16, ROCE_PORT, &bytes, m, now);
            }
            1 | 2 => {
                // A well-formed packet with fuzzed fields.
                let from = inp.below(2);
                let opcode = inp.pick(&OPCODES);
                let psn = if inp.byte() % 4 == 0 {
                    inp.u64() as u32 & 0xff_ffff
                } else {
                    inp.below(64) as u32
                };
                let va = if inp.byte() % 2 == 0 {
                    EXPOSED.start + inp.below(MEM) as u64
                } else {
                    inp.u64()
                };
                let reth = Reth {
                    va,
                    rkey: if inp.byte() % 2 == 0 {
                        key as u32
                    } else {
                        inp.u64() as u32
                    },
                    len: inp.below(1 << 20) as u32,
                };
                let syndrome = match inp.below(4) {
                    0 => Syndrome::Ack { credits: 31 },
                    1 => Syndrome::Rnr {
                        timer: inp.below(32) as u8,
                    },
                    2 => Syndrome::Nak(NakCode::PsnSequenceError),
                    _ => Syndrome::Nak(inp.pick(&[
                        NakCode::InvalidRequest,
                        NakCode::RemoteAccessError,
                        NakCode::RemoteOperationalError,
                    ])),
                };
                let payload = inp.bytes(1100).to_vec();
                let qp = if inp.byte() % 8 == 0 {
                    inp.u64() as u32 & 0xff_ffff
                } else {
                    qpn_for(from as u16)
                };
                let p = Packet {
                    bth: Bth {
                        opcode,
                        solicited: false,
                        pkey: 0xffff,
                        dest_qp: qp,
                        ack_req: inp.byte() % 2 == 0,
                        psn,
                    },
                    reth: Some(reth),
                    imm: Some(inp.u64() as u32),
                    aeth: Some(Aeth {
                        syndrome,
                        msn: inp.below(1 << 24) as u32,
                    }),
                    payload: if opcode.headers().payload {
                        &payload
                    } else {
                        &[]
                    },
                };
                let mut out = Vec::new();
                encode(&p, &path(from), &mut out);
                let (e, m) = &mut nodes[1 - from];
                e.on_packet(from as u16, ROCE_PORT, &out, m, now);
            }
            3 => {
                // A real request from node 0.
                wr_id += 1;
                let op = inp.pick(&[Opcode::Write, Opcode::Read, Opcode::Send, Opcode::Recv]);
                let len = inp.below(64 * 1024) as u64;
                let remote = EXPOSED.start + inp.below(MEM / 2) as u64;
                let wr = WorkRequest {
                    opcode: op as u8,
                    node: 1,
                    wr_id,
                    local_va: BASE + inp.below(MEM / 2) as u64,
                    remote_va: remote,
                    len: if op == Opcode::Send || op == Opcode::Recv {
                        len.min(4096)
                    } else {
                        len
                    },
                    key: if inp.byte() % 4 == 0 {
                        inp.u64() & 0xffff_ffff
                    } else {
                        key
                    },
                    ..WorkRequest::default()
                };
                let target = if op == Opcode::Recv { 1 } else { 0 };
                let mut wr = wr;
                if op == Opcode::Recv {
                    wr.local_va = EXPOSED.start + inp.below(MEM / 4) as u64;
                }
                let (e, m) = &mut nodes[target];
                e.post(wr, m, now);
            }
            4 => {
                // Deliver, drop or duplicate what the engines sent.
                for (src, (e, _)) in nodes.iter_mut().enumerate() {
                    wire.extend(
                        e.take_packets()
                            .into_iter()
                            .map(|(d, b)| (src, d as usize, b)),
                    );
                }
                for (src, dst, b) in std::mem::take(&mut wire) {
                    let copies = [1, 1, 1, 0, 2][inp.below(5)];
                    for _ in 0..copies {
                        let (e, m) = &mut nodes[dst % 2];
                        e.on_packet(src as u16, ROCE_PORT, &b, m, now);
                    }
                }
            }
            5 => {
                now += inp.below(50_000) as u64;
                for (e, m) in nodes.iter_mut() {
                    e.tick(m, now);
                }
            }
            6 => {
                // The "SMMU": a page goes away or comes back, and the libOS says so.
                let node = inp.below(2);
                let page = BASE + inp.below(MEM / PAGE as usize) as u64 * PAGE;
                let (e, m) = &mut nodes[node];
                if inp.byte() % 2 == 0 {
                    m.evict(page);
                } else {
                    m.make_present(page);
                    let ready = WorkRequest {
                        opcode: Opcode::PageReady as u8,
                        flags: inp.byte() & 1,
                        local_va: page,
                        ..WorkRequest::default()
                    };
                    e.post(ready, m, now);
                }
            }
            7 => {
                for (e, _) in nodes.iter_mut() {
                    let _ = e.take_completions();
                }
            }
            8 => {
                // A raw IPv4 packet as the raw socket hands it over: any
                // header, from a node, a stranger or nowhere.
                let mut raw = inp.bytes(300).to_vec();
                if raw.len() >= 20 && inp.byte() % 2 == 0 {
                    let from = addrs()[inp.below(2)].octets();
                    raw[12..16].copy_from_slice(&from);
                }
                if let Ok((path, payload)) = ipv4::split(&raw) {
                    let (e, m) = &mut nodes[1];
                    e.on_datagram(&path, payload, m, now);
                }
            }
            _ => {
                // Queue pairs for a peer outside the cluster on node 1.
                let op = inp.pick(&[Opcode::QpCreate, Opcode::QpConnect, Opcode::QpDestroy]);
                let wr = WorkRequest {
                    opcode: op as u8,
                    node: inp.below(70) as u16,
                    remote_va: if inp.byte() % 2 == 0 {
                        u64::from(u32::from(addrs()[0]))
                    } else {
                        inp.u64()
                    },
                    key: inp.u64() & 0x1ff_ffff,
                    imm: inp.u64() as u32,
                    len: inp.pick(&[0, 256, 1024, 4096, 100, 1 << 40]),
                    ..WorkRequest::default()
                };
                let (e, m) = &mut nodes[1];
                e.post(wr, m, now);
                e.acknowledge_batch();
            }
        }
    }
    // Node 1's memory outside its exposure was never written.
    let m1 = &nodes[1].1;
    let before = m1.slice(BASE, (EXPOSED.start - BASE) as usize);
    let after = m1.slice(EXPOSED.end, (BASE + MEM as u64 - EXPOSED.end) as usize);
    assert!(
        before.iter().chain(after.iter()).all(|&b| b == 0),
        "written outside the exposure"
    );
});
