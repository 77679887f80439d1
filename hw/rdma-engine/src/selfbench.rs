//! `--self-bench`: host memcpy bandwidth against the engine's fabric
//! throughput for large WRITEs between two in-process engines over real
//! loopback UDP (heap memory instead of guest memory), measured in the same
//! run so the ratio means something on a shared machine.

use crate::dma::FlatMemory;
use crate::engine::{Config, Engine};
use crate::fabric::{Fabric, Loss};
use crate::stats::Stats;
use crate::sys;
use hw::rdma::wire::{Opcode, Status, WorkRequest};
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const BASE: u64 = 0x1000_0000;

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

/// Runs one engine's loop until `stop`, posting `wr` again each time it
/// completes when `repeat` (counting completions).
fn node_loop(
    mut engine: Engine,
    mut mem: FlatMemory,
    mut fabric: Fabric,
    stop: &AtomicBool,
    wr: Option<WorkRequest>,
) -> (u64, Option<Status>) {
    let start = Instant::now();
    let now = || start.elapsed().as_micros() as u64;
    let mut done = 0u64;
    let mut failure = None;
    if let Some(w) = wr {
        engine.post(w, &mut mem, now());
    }
    while !stop.load(Ordering::Relaxed) {
        for (dst, d) in engine.take_datagrams() {
            fabric.send(dst, &d);
        }
        let _ = sys::poll_readable(&[fabric.fd()], 2);
        while let Some(d) = fabric.recv() {
            engine.on_datagram(d, &mut mem, now());
        }
        for (dst, d) in engine.take_datagrams() {
            fabric.send(dst, &d);
        }
        engine.tick(&mut mem, now());
        for c in engine.take_completions() {
            if c.status() != Status::Success {
                failure = Some(c.status());
            }
            done += 1;
            if let Some(w) = wr {
                engine.post(w, &mut mem, now());
            }
        }
    }
    (done, failure)
}

/// Engine WRITE throughput in bytes per second for `len`-byte messages.
pub fn fabric_bandwidth(
    len: u64,
    for_at_least: Duration,
) -> std::io::Result<(f64, Option<Status>)> {
    let a = UdpSocket::bind("127.0.0.1:0")?;
    let b = UdpSocket::bind("127.0.0.1:0")?;
    let peers = vec![a.local_addr()?, b.local_addr()?];
    let stats = Arc::new(Stats::default());
    let fa = Fabric::with_socket(a, peers.clone(), Loss::new(0.0, 0), stats.clone())?;
    let fb = Fabric::with_socket(b, peers, Loss::new(0.0, 0), stats)?;
    let size = (2 * len) as usize;
    let mut src = FlatMemory::new(BASE, size);
    src.slice_mut(BASE, len as usize).fill(0x5a);
    let dst = FlatMemory::new(BASE, size);
    let stop = AtomicBool::new(false);
    let wr = WorkRequest {
        opcode: Opcode::Write as u8,
        node: 1,
        wr_id: 1,
        local_va: BASE,
        remote_va: BASE + len,
        len,
        ..WorkRequest::default()
    };
    let start = Instant::now();
    let (done, failure) = std::thread::scope(|s| {
        let stop = &stop;
        let target =
            s.spawn(move || node_loop(Engine::new(1, 2, Config::default()), dst, fb, stop, None));
        let init = s.spawn(move || {
            node_loop(
                Engine::new(0, 2, Config::default()),
                src,
                fa,
                stop,
                Some(wr),
            )
        });
        std::thread::sleep(for_at_least);
        stop.store(true, Ordering::Relaxed);
        let r = init.join().expect("initiator thread");
        let _ = target.join();
        r
    });
    Ok((
        done as f64 * len as f64 / start.elapsed().as_secs_f64(),
        failure,
    ))
}

/// Prints memcpy and fabric throughput and their ratio.
pub fn run(mib: u64) {
    let len = mib << 20;
    let memcpy = memcpy_bandwidth(len as usize, Duration::from_millis(500));
    match fabric_bandwidth(len, Duration::from_secs(2)) {
        Ok((fabric, failure)) => {
            println!("memcpy {mib} MiB: {:.2} GB/s", memcpy / 1e9);
            println!(
                "engine WRITE {mib} MiB over loopback UDP: {:.2} GB/s",
                fabric / 1e9
            );
            println!("ratio engine/memcpy: {:.3}", fabric / memcpy);
            if let Some(s) = failure {
                eprintln!("rdma-engine: self-bench: a WRITE ended {s:?}");
                std::process::exit(1);
            }
        }
        Err(e) => {
            eprintln!("rdma-engine: self-bench: {e}");
            std::process::exit(1);
        }
    }
}
