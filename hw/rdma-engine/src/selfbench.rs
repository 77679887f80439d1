//! `--self-bench`: host memcpy bandwidth against the engine's throughput for
//! large WRITEs between two in-process engines, measured in the same run so
//! the ratio means something on a shared machine.
//!
//! Each engine gets what a real run gives it: "guest RAM" in a memfd, an
//! IOTLB filled with the 2 MiB entries QEMU's UPDATEs carry for a
//! huge-page region (where rdmabench and the README put large RDMA
//! buffers; IOVA → QEMU address, no misses), a lease board, an export socket in a private directory, and
//! the real UDP fabric on loopback. The target maps the initiator's memory
//! through the export socket exactly as between two device processes, so
//! the number is the direct data path's (and, for comparison, the datagram
//! path's with lending switched off).

use crate::dma::Dma;
use crate::engine::exposures::Exposures;
use crate::engine::{Config, Engine};
use crate::export::{self, Exported, Exports};
use crate::fabric::{Fabric, Loss};
use crate::frontend::BOARD_SLOTS;
use crate::guest::{GuestDma, Region, Regions, Translation};
use crate::iotlb::{PERM_READ, PERM_WRITE};
use crate::lease::Leases;
use crate::peers::Peers;
use crate::stats::Stats;
use crate::sys::{self, Mapping};
use hw::rdma::wire::{Opcode, Status, WorkRequest, EXPOSE_REMOTE_READ, EXPOSE_REMOTE_WRITE};
use std::net::UdpSocket;
use std::path::Path;
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

/// One node as the benchmark builds it: its memory and its export socket.
struct Node {
    dma: GuestDma,
    _server: export::Server,
}

/// Node `rank` with `size` bytes of memfd-backed "guest RAM" at IOVA BASE.
fn node(
    rank: u16,
    size: u64,
    dir: &Path,
    lending: bool,
    secret: &export::Secret,
) -> std::io::Result<Node> {
    let stats = Arc::new(Stats::default());
    let fd = Arc::new(sys::memfd("faultline-selfbench-ram", size)?);
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
        handle: 1,
        fd: fd.clone(),
    }]));
    let board_len = BOARD_SLOTS * 8;
    let board = sys::memfd("faultline-selfbench-board", board_len)?;
    let leases = Arc::new(Leases::new(Box::new(Mapping::new(&board, board_len)?)));
    let exports = Arc::new(Exports::new(board, board_len));
    exports.set_table(vec![Exported {
        handle: 1,
        fd,
        len: size,
    }]);
    let server = export::Server::start(export::socket_path(dir, rank), exports, secret.clone())?;
    let mut dma = GuestDma::new(tr, None, stats, false, rank);
    if lending {
        dma.share(leases, Peers::new(dir.to_path_buf(), rank, secret.clone()));
    }
    Ok(Node {
        dma,
        _server: server,
    })
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
        for (dst, d) in engine.take_datagrams() {
            fabric.send(dst, &d);
        }
        let _ = sys::poll_readable(&[fabric.fd()], 2);
        while let Some((from, d)) = fabric.recv() {
            engine.on_datagram(from, d, mem, now());
        }
        for (dst, d) in engine.take_datagrams() {
            fabric.send(dst, &d);
        }
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

/// A private directory for the benchmark's export sockets.
fn private_dir() -> std::io::Result<std::path::PathBuf> {
    let base = std::env::temp_dir();
    for i in 0..1000 {
        let d = base.join(format!("faultline-selfbench-{}-{i}", std::process::id()));
        if std::fs::create_dir(&d).is_ok() {
            return Ok(d);
        }
    }
    Err(std::io::Error::other("no private directory"))
}

/// Engine WRITE throughput in bytes per second for `len`-byte messages, on
/// the direct path (`direct`) or the datagram path, with `depth` WRITEs in
/// flight (as a NIC's throughput is measured: the next request waits at the
/// target while the last one's ACK travels back).
pub fn engine_bandwidth(
    len: u64,
    direct: bool,
    depth: usize,
    for_at_least: Duration,
) -> std::io::Result<(f64, Option<Status>)> {
    let dir = private_dir()?;
    let r = measure(len, direct, depth, for_at_least, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    r
}

fn measure(
    len: u64,
    direct: bool,
    depth: usize,
    for_at_least: Duration,
    dir: &Path,
) -> std::io::Result<(f64, Option<Status>)> {
    let a = UdpSocket::bind("127.0.0.1:0")?;
    let b = UdpSocket::bind("127.0.0.1:0")?;
    let peers = vec![a.local_addr()?, b.local_addr()?];
    let stats = Arc::new(Stats::default());
    let fa = Fabric::with_socket(a, peers.clone(), Loss::new(0.0, 0), stats.clone())?;
    let fb = Fabric::with_socket(b, peers, Loss::new(0.0, 0), stats)?;
    let size = (2 * len).div_ceil(BLOCK) * BLOCK;
    let secret = export::Secret::random()?;
    let mut src = node(0, size, dir, direct, &secret)?;
    let mut dst = node(1, size, dir, direct, &secret)?;
    src.dma
        .write(BASE, &vec![0x5a; len as usize])
        .map_err(|f| std::io::Error::other(format!("{f:?}")))?;
    let stop = AtomicBool::new(false);
    // The target exposes its half, as a real one must, under its own key.
    let mut target_engine = Engine::new(1, 2, Config::default());
    let expose = WorkRequest {
        opcode: Opcode::Expose as u8,
        flags: EXPOSE_REMOTE_WRITE,
        local_va: BASE + len,
        len,
        ..WorkRequest::default()
    };
    target_engine.post(expose, &mut dst.dma, 0);
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
        let (sd, dd) = (&mut src.dma, &mut dst.dma);
        let cfg = Config::default;
        let target = s.spawn(move || node_loop(target_engine, dd, fb, stop, None, 0));
        let init =
            s.spawn(move || node_loop(Engine::new(0, 2, cfg()), sd, fa, stop, Some(wr), depth));
        std::thread::sleep(for_at_least);
        stop.store(true, Ordering::Relaxed);
        let r = init.join().expect("initiator thread");
        let _ = target.join();
        r
    });
    let elapsed = start.elapsed().as_secs_f64();
    let mut check = vec![0u8; len as usize];
    let landed = dst.dma.read(BASE + len, &mut check).is_ok() && check.iter().all(|&b| b == 0x5a);
    if done > 0 && !landed {
        return Err(std::io::Error::other("the data did not land intact"));
    }
    Ok((done as f64 * len as f64 / elapsed, failure))
}

/// WRITEs in flight in the headline measurement.
pub const DEPTH: usize = 2;

/// Prints memcpy and engine throughput (direct path with [`DEPTH`] and one
/// WRITE in flight, datagram path) and the ratio of the direct path to
/// memcpy.
pub fn run(mib: u64) {
    let len = mib << 20;
    let memcpy = memcpy_bandwidth(len as usize, Duration::from_millis(500));
    let runs = [
        engine_bandwidth(len, true, DEPTH, Duration::from_secs(2)),
        engine_bandwidth(len, true, 1, Duration::from_secs(1)),
        engine_bandwidth(len, false, DEPTH, Duration::from_secs(1)),
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
        "engine WRITE {mib} MiB, shared-memory direct path, {DEPTH} in flight: {:.2} GB/s",
        got[0] / 1e9
    );
    println!(
        "engine WRITE {mib} MiB, shared-memory direct path, 1 in flight: {:.2} GB/s",
        got[1] / 1e9
    );
    println!(
        "engine WRITE {mib} MiB, datagram path (loopback UDP), {DEPTH} in flight: {:.2} GB/s",
        got[2] / 1e9
    );
    println!("ratio engine/memcpy: {:.3}", got[0] / memcpy);
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
        let k = next | 1;
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
    let write = match engine_bandwidth(4096, true, 1, Duration::from_millis(500)) {
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
