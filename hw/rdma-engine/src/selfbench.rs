//! `--self-bench`: the engine's RoCEv2 WRITE throughput between two
//! in-process engines against what the link itself gives (raw UDP with the
//! same packet size, one way) and against host memcpy, measured in the same
//! run so the ratios mean something on a shared machine.
//!
//! Each engine gets what a real run gives it: "guest RAM" in a memfd, an
//! IOTLB filled with the 2 MiB entries QEMU's UPDATEs carry for a
//! huge-page region (IOVA → QEMU address, no misses), and a UDP socket of
//! its own address on loopback (127.0.0.1 and 127.0.0.2, one port).

use crate::dma::Dma;
use crate::engine::exposures::Exposures;
use crate::engine::{Config, Engine};
use crate::fabric::{Fabric, Impair, Impairment};
use crate::guest::{GuestDma, Region, Regions, Translation};
use crate::iotlb::{PERM_READ, PERM_WRITE};
use crate::stats::Stats;
use crate::sys::{self, Mapping};
use hw::rdma::wire::{Opcode, Status, WorkRequest, EXPOSE_REMOTE_READ, EXPOSE_REMOTE_WRITE};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const BASE: u64 = 0x1000_0000;
/// One IOTLB entry: a 2 MiB block of a huge-page region.
const BLOCK: u64 = 2 << 20;

/// Host memcpy bandwidth in bytes per second for `len`-byte copies.
pub fn memcpy_bandwidth(len: usize, for_at_least: Duration) -> f64 {
    let src: Vec<u8> = (0..len).map(|i| i as u8).collect();
    let mut dst = vec![0u8; len];
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < for_at_least {
        dst.copy_from_slice(std::hint::black_box(&src));
        std::hint::black_box(&mut dst);
        n += 1;
    }
    (n * len as u64) as f64 / start.elapsed().as_secs_f64()
}

/// Node `rank`'s memory: `size` bytes of memfd-backed "guest RAM" at IOVA BASE.
fn node(rank: u16, size: u64) -> std::io::Result<GuestDma> {
    let stats = Arc::new(Stats::default());
    let fd = sys::memfd("faultline-selfbench-ram", size)?;
    // A QEMU-like address of the region, different per node.
    let uaddr = 0x7f00_0000_0000 + (u64::from(rank) << 36);
    let tr = Arc::new(Translation::default());
    {
        let mut tlb = tr.iotlb.write().unwrap_or_else(|p| p.into_inner());
        for p in 0..size / BLOCK {
            tlb.insert(
                BASE + p * BLOCK,
                BLOCK,
                uaddr + p * BLOCK,
                PERM_READ | PERM_WRITE,
            );
        }
    }
    *tr.regions.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(Regions(vec![Region {
        uaddr,
        size,
        map: Mapping::new(&fd, size)?,
        offset: 0,
    }]));
    Ok(GuestDma::new(tr, None, stats, false, rank))
}

/// Two UDP sockets on 127.0.0.1 and 127.0.0.2 with the same port.
pub fn socket_pair() -> std::io::Result<(UdpSocket, UdpSocket, u16)> {
    for _ in 0..100 {
        let a = UdpSocket::bind("127.0.0.1:0")?;
        let port = a.local_addr()?.port();
        if let Ok(b) = UdpSocket::bind(("127.0.0.2", port)) {
            return Ok((a, b, port));
        }
    }
    Err(std::io::Error::other(
        "no UDP port free on both 127.0.0.1 and 127.0.0.2",
    ))
}

/// Runs one engine's loop until `stop` with `depth` copies of `wr` in
/// flight, posting it again each time one completes (counting completions).
fn node_loop(
    mut engine: Engine,
    mem: &mut dyn Dma,
    mut fabric: Fabric,
    stop: &AtomicBool,
    wr: Option<WorkRequest>,
    depth: usize,
) -> (u64, Option<Status>) {
    let start = Instant::now();
    let now = || start.elapsed().as_micros() as u64;
    let mut done = 0u64;
    let mut failure = None;
    if let Some(w) = wr {
        for _ in 0..depth {
            engine.post(w, mem, now());
        }
    }
    while !stop.load(Ordering::Relaxed) {
        for (peer, d) in engine.take_packets() {
            if let Some(dst) = engine.peer_addr(peer) {
                fabric.send(dst, d);
            }
        }
        fabric.flush();
        let _ = sys::poll_readable(&[fabric.fd()], 2);
        loop {
            for i in 0..fabric.recv_batch() {
                let (path, d) = fabric.received(i);
                engine.on_datagram(path, d, mem, now());
            }
            if !fabric.more() {
                break;
            }
        }
        for (peer, d) in engine.take_packets() {
            if let Some(dst) = engine.peer_addr(peer) {
                fabric.send(dst, d);
            }
        }
        fabric.flush();
        engine.tick(mem, now());
        for c in engine.take_completions() {
            if c.status() != Status::Success {
                failure = Some(c.status());
            }
            done += 1;
            if let Some(w) = wr {
                engine.post(w, mem, now());
            }
        }
    }
    (done, failure)
}

/// Engine WRITE throughput in bytes per second for `len`-byte messages
/// with packets of `mtu` bytes, with `depth` WRITEs in flight (as a NIC's
/// throughput is measured: the next request is on the wire while the last
/// one's ACK travels back).
pub fn engine_bandwidth(
    len: u64,
    mtu: u32,
    depth: usize,
    for_at_least: Duration,
) -> std::io::Result<(f64, Option<Status>)> {
    measure(len, mtu, depth, for_at_least)
}

fn measure(
    len: u64,
    mtu: u32,
    depth: usize,
    for_at_least: Duration,
) -> std::io::Result<(f64, Option<Status>)> {
    let addrs = vec![Ipv4Addr::new(127, 0, 0, 1), Ipv4Addr::new(127, 0, 0, 2)];
    let stats = Arc::new(Stats::default());
    let none = || Impair::new(Impairment::default(), 0);
    let fa = Fabric::bind(addrs[0], 0, none(), stats.clone())?;
    let port = fa.port();
    let fb = Fabric::bind(addrs[1], port, none(), stats)?;
    let size = (2 * len).div_ceil(BLOCK) * BLOCK;
    let mut src = node(0, size)?;
    let mut dst = node(1, size)?;
    let cfg = move || Config {
        mtu,
        port,
        ..Config::default()
    };
    src.write(BASE, &vec![0x5a; len as usize])
        .map_err(|f| std::io::Error::other(format!("{f:?}")))?;
    let stop = AtomicBool::new(false);
    // The target exposes its half, as a real one must, under its own key.
    let mut target_engine = Engine::new(1, addrs.clone(), cfg());
    let expose = WorkRequest {
        opcode: Opcode::Expose as u8,
        flags: EXPOSE_REMOTE_WRITE,
        local_va: BASE + len,
        len,
        ..WorkRequest::default()
    };
    target_engine.post(expose, &mut dst, 0);
    let key = match target_engine.take_completions().first() {
        Some(c) if c.status() == Status::Success => c.key,
        _ => return Err(std::io::Error::other("the target refused to expose")),
    };
    let wr = WorkRequest {
        opcode: Opcode::Write as u8,
        node: 1,
        wr_id: 1,
        local_va: BASE,
        remote_va: BASE + len,
        len,
        key,
        ..WorkRequest::default()
    };
    let start = Instant::now();
    let (done, failure) = std::thread::scope(|s| {
        let stop = &stop;
        let (sd, dd) = (&mut src, &mut dst);
        let target = s.spawn(move || node_loop(target_engine, dd, fb, stop, None, 0));
        let init =
            s.spawn(move || node_loop(Engine::new(0, addrs, cfg()), sd, fa, stop, Some(wr), depth));
        std::thread::sleep(for_at_least);
        stop.store(true, Ordering::Relaxed);
        let r = init.join().expect("initiator thread");
        let _ = target.join();
        r
    });
    let elapsed = start.elapsed().as_secs_f64();
    let mut check = vec![0u8; len as usize];
    let landed = dst.read(BASE + len, &mut check).is_ok() && check.iter().all(|&b| b == 0x5a);
    if done > 0 && !landed {
        return Err(std::io::Error::other("the data did not land intact"));
    }
    Ok((done as f64 * len as f64 / elapsed, failure))
}

/// WRITEs in flight in the headline measurement.
pub const DEPTH: usize = 2;

/// Raw UDP throughput, one way, between 127.0.0.1 and 127.0.0.2 with
/// datagrams of `packet` bytes: what the link gives the engine.
pub fn udp_bandwidth(packet: usize, for_at_least: Duration) -> std::io::Result<f64> {
    let (a, b, port) = socket_pair()?;
    sys::set_socket_buffers(std::os::fd::AsRawFd::as_raw_fd(&b), 8 << 20);
    b.set_read_timeout(Some(Duration::from_millis(200)))?;
    let stop = AtomicBool::new(false);
    let to = SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, 2), port);
    let start = Instant::now();
    let got = std::thread::scope(|s| {
        let stop = &stop;
        let rx = s.spawn(move || {
            let mut buf = vec![0u8; 65536];
            let mut n = 0u64;
            while let Ok(k) = b.recv(&mut buf) {
                n += k as u64;
            }
            n
        });
        let msg = vec![0x5au8; packet];
        while start.elapsed() < for_at_least {
            let _ = a.send_to(&msg, to);
        }
        stop.store(true, Ordering::Relaxed);
        rx.join().unwrap_or(0)
    });
    Ok(got as f64 / for_at_least.as_secs_f64())
}

/// The median UDP round trip between 127.0.0.1 and 127.0.0.2 of a
/// `packet`-byte datagram, in microseconds.
pub fn udp_round_trip(packet: usize, rounds: usize) -> std::io::Result<f64> {
    let (a, b, port) = socket_pair()?;
    b.set_read_timeout(Some(Duration::from_millis(200)))?;
    a.set_read_timeout(Some(Duration::from_millis(200)))?;
    let to = SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, 2), port);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let stop = &stop;
        s.spawn(move || {
            let mut buf = vec![0u8; 65536];
            while !stop.load(Ordering::Relaxed) {
                if let Ok((n, from)) = b.recv_from(&mut buf) {
                    let _ = b.send_to(&buf[..n], from);
                }
            }
        });
        let msg = vec![0x5au8; packet];
        let mut buf = vec![0u8; 65536];
        let mut rtts = Vec::new();
        for _ in 0..rounds {
            let t = Instant::now();
            a.send_to(&msg, to)?;
            if a.recv(&mut buf).is_ok() {
                rtts.push(t.elapsed().as_secs_f64() * 1e6);
            }
        }
        stop.store(true, Ordering::Relaxed);
        rtts.sort_by(f64::total_cmp);
        Ok(rtts.get(rtts.len() / 2).copied().unwrap_or(f64::NAN))
    })
}

/// Prints memcpy, raw UDP and engine throughput and their ratios.
pub fn run(mib: u64) {
    let len = mib << 20;
    let mtu = Config::default().mtu;
    let packet =
        crate::roce::packet::wire_len(crate::roce::packet::Opcode::WriteMiddle, mtu as usize);
    let memcpy = memcpy_bandwidth(len as usize, Duration::from_millis(500));
    let udp = match udp_bandwidth(packet, Duration::from_secs(1)) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("rdma-engine: self-bench: {e}");
            std::process::exit(1);
        }
    };
    let runs = [
        engine_bandwidth(len, mtu, DEPTH, Duration::from_secs(2)),
        engine_bandwidth(len, 4096, DEPTH, Duration::from_secs(1)),
    ];
    let mut got = Vec::new();
    for r in runs {
        match r {
            Ok((bw, None)) => got.push(bw),
            Ok((_, Some(s))) => {
                eprintln!("rdma-engine: self-bench: a WRITE ended {s:?}");
                std::process::exit(1);
            }
            Err(e) => {
                eprintln!("rdma-engine: self-bench: {e}");
                std::process::exit(1);
            }
        }
    }
    println!("memcpy {mib} MiB: {:.2} GB/s", memcpy / 1e9);
    println!(
        "raw UDP, {packet}-byte datagrams, one way on loopback: {:.3} GB/s",
        udp / 1e9
    );
    println!(
        "engine RoCEv2 WRITE {mib} MiB, MTU {mtu}, {DEPTH} in flight: {:.3} GB/s",
        got[0] / 1e9
    );
    println!(
        "engine RoCEv2 WRITE {mib} MiB, MTU 4096, {DEPTH} in flight: {:.3} GB/s",
        got[1] / 1e9
    );
    println!("ratio engine/raw UDP (MTU {mtu}): {:.3}", got[0] / udp);
    // Latency: one 64-byte WRITE at a time, posted again as it completes.
    let small = crate::roce::packet::wire_len(crate::roce::packet::Opcode::WriteOnly, 64);
    match (
        engine_bandwidth(64, mtu, 1, Duration::from_secs(1)),
        udp_round_trip(small, 2000),
    ) {
        (Ok((bw, None)), Ok(rtt)) if bw > 0.0 => {
            let us = 64.0 / bw * 1e6;
            println!(
                "engine 64 B WRITE, one at a time: {us:.1} us each; UDP round trip of a {small}-byte datagram: {rtt:.1} us; ratio {:.2}",
                us / rtt
            );
        }
        other => {
            eprintln!("rdma-engine: self-bench: latency: {other:?}");
            std::process::exit(1);
        }
    }
    println!("ratio engine/memcpy: {:.4}", got[0] / memcpy);
    key_check_cost();
}

/// What the remote-key check adds to each request on a target's memory:
/// its cost (a table of [`KEYS`] exposures, lookups of keys held), against
/// one 4 KiB WRITE between two engines, measured in the same run.
fn key_check_cost() {
    let mut table = Exposures::default();
    let mut keys = Vec::new();
    let mut next = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..KEYS {
        let rights = EXPOSE_REMOTE_READ | EXPOSE_REMOTE_WRITE;
        next = next.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        let k = (next >> 32) as u32 | 1;
        if table.expose(BASE + i * BLOCK, BLOCK, rights, |_| k).is_ok() {
            keys.push((k, BASE + i * BLOCK));
        }
    }
    let checks = 4_000_000u64;
    let start = Instant::now();
    let mut passed = 0u64;
    for i in 0..checks {
        let (k, va) = keys[(i as usize * 7919) % keys.len()];
        let at = va + (i % 512) * 4096;
        passed += u64::from(
            std::hint::black_box(&table)
                .check(k, at..at + 4096, i % 2 == 0)
                .is_ok(),
        );
    }
    let per_check = start.elapsed().as_nanos() as f64 / checks as f64;
    let write = match engine_bandwidth(4096, Config::default().mtu, 1, Duration::from_millis(500)) {
        Ok((bw, None)) if bw > 0.0 => 4096.0 / bw * 1e9,
        _ => {
            eprintln!("rdma-engine: self-bench: 4 KiB WRITEs failed");
            std::process::exit(1);
        }
    };
    println!(
        "remote-key check: {per_check:.1} ns per request ({passed} of {checks} passed, {} exposures); one 4 KiB WRITE between two engines: {:.1} us; the check is {:.3}% of it",
        table.len(),
        write / 1e3,
        100.0 * per_check / write
    );
}

/// Exposures in the table [`key_check_cost`] looks keys up in.
const KEYS: u64 = 1024;
