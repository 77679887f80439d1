//! `rdmatest`: RDMA on virtual addresses across nodes, checked byte for byte
//! (`./run-qemu.sh rdmatest --nodes 2`). Node 0 drives, node 1 is the
//! target; any further node only says hello.
//!
//! ```text
//!  node 1                                   node 0
//!  landing = demand_zero (never touched)
//!  source  = pattern, then evicted
//!  SEND [landing, source] ───────────────►  local COPY into never-touched pages
//!                                            WRITE+imm into landing  (remote faults)
//!  RECV imm: landing == pattern?  ◄───────   READ source             (remote swap-ins)
//!                                            WRITE to an unmapped VA → RemoteAccessError
//!  RECV "done": landing unchanged? ◄───────  SEND "done"
//! ```
//!
//! Each node prints `ok NAME` or `FAIL NAME: why` per check, then
//! `rdmatest: N passed, M failed`, and exits 1 on any failure.
//! `peer-dies`: node 1 only idles (a test kills its engine) and node 0
//! checks that a WRITE to it ends with a clear error instead of hanging.
#![no_std]
#![no_main]

extern crate alloc;

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;
use libos::dma::Policy;
use libos::mm::Region;
use libos::println;
use libos::rdma::{self, Op, Rdma, Status, WorkCompletion};

libos::main!(main);

const LANDING: usize = 1 << 20;
const SOURCE: usize = 256 << 10;
/// A VA no region covers on any node (far above every region).
const UNMAPPED_VA: usize = 0x70_0000_0000;
const IMM_WRITTEN: u32 = 0x5752_4954;

/// Byte `i` of pattern `seed`: never zero, so an unwritten page shows.
fn pattern(seed: u8, i: usize) -> u8 {
    ((((i as u32).wrapping_mul(2_654_435_761) >> 24) as u8) ^ seed) | 1
}

fn fill(buf: &mut [u8], seed: u8) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = pattern(seed, i);
    }
}

/// First offset where `buf` differs from the pattern.
fn mismatch(buf: &[u8], seed: u8) -> Option<usize> {
    buf.iter()
        .enumerate()
        .position(|(i, &b)| b != pattern(seed, i))
}

struct Checks {
    passed: u32,
    failed: u32,
}

impl Checks {
    fn check(&mut self, name: &str, result: Result<String, String>) {
        match result {
            Ok(detail) => {
                self.passed += 1;
                println!("ok {name} {detail}");
            }
            Err(why) => {
                self.failed += 1;
                println!("FAIL {name}: {why}");
            }
        }
    }
}

fn completed(rdma: &Rdma, id: rdma::WorkId) -> Result<WorkCompletion, String> {
    rdma.wait(id).map_err(|e| format!("{e:?}"))
}

fn success(wc: &WorkCompletion) -> Result<(), String> {
    if wc.status == Status::Success {
        Ok(())
    } else {
        Err(format!("{:?} at {:#x}", wc.status, wc.fault_va))
    }
}

/// Waits for a RECV completion (a SEND or an immediate) from `node`.
fn receive(rdma: &Rdma, node: u16) -> Result<WorkCompletion, String> {
    rdma.post_recv(64).map_err(|e| format!("{e:?}"))?;
    let start = libos::time::now();
    loop {
        if let Some(wc) = rdma.poll() {
            if wc.op == Op::Recv && wc.node == node {
                success(&wc)?;
                return Ok(wc);
            }
            println!("(unexpected completion {:?} {:?})", wc.op, wc.status);
        }
        if start.elapsed() > Duration::from_secs(60) {
            return Err(format!("nothing from node {node} in 60 s"));
        }
        libos::time::wait_for_interrupt_or(Duration::from_millis(1));
    }
}

fn words(data: &[u8]) -> Vec<u64> {
    data.chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect()
}

fn local_copy(rdma: &Rdma) -> Result<String, String> {
    let mut src = Region::demand_zero(LANDING).map_err(|e| format!("{e:?}"))?;
    fill(src.as_mut_slice(), 7);
    let dst = Region::demand_zero(LANDING).map_err(|e| format!("{e:?}"))?;
    let before = rdma.pages_ready();
    // SAFETY: both regions outlive the wait below and nothing touches
    // them until it returns.
    let id = unsafe { rdma.copy(src.range(), dst.start(), Policy::FaultAware) }
        .map_err(|e| format!("{e:?}"))?;
    let wc = completed(rdma, id)?;
    success(&wc)?;
    if let Some(at) = mismatch(dst.as_slice(), 7) {
        return Err(format!("destination differs at byte {at}"));
    }
    let resolved = rdma.pages_ready() - before;
    if resolved == 0 {
        return Err("the never-touched destination took no faults".into());
    }
    Ok(format!(
        "{} KiB, {resolved} destination faults resolved, {} engine faults",
        LANDING >> 10,
        wc.engine.local_faults
    ))
}

/// The engine reads a huge-page buffer never written (its pages become the
/// shared zero block, read-only), then READs `source` (pattern 3 on node 1)
/// into it: its writes take an SMMU permission fault, the buffer gets a
/// block of its own, and the data lands there.
fn over_zero_block(rdma: &Rdma, source: usize) -> Result<String, String> {
    let buf = Region::demand_zero_huge(libos::mm::BLOCK_SIZE).map_err(|e| format!("{e:?}"))?;
    let mut copy = Region::demand_zero(SOURCE).map_err(|e| format!("{e:?}"))?;
    fill(copy.as_mut_slice(), 9);
    // SAFETY: both regions outlive the wait below and nothing touches
    // them until it returns.
    let id = unsafe {
        rdma.copy(
            buf.start()..buf.start() + SOURCE,
            copy.start(),
            Policy::FaultAware,
        )
    }
    .map_err(|e| format!("{e:?}"))?;
    success(&completed(rdma, id)?)?;
    if copy.as_slice().iter().any(|&b| b != 0) || buf.resident_pages() != 0 {
        return Err(format!(
            "copying never-written memory: zeros {}, {} pages taken",
            copy.as_slice().iter().all(|&b| b == 0),
            buf.resident_pages()
        ));
    }
    let qp = rdma.queue_pair(1).map_err(|e| format!("{e:?}"))?;
    // SAFETY: `buf` outlives the wait below and nothing touches it until
    // it returns.
    let id = unsafe {
        qp.read(
            buf.start()..buf.start() + SOURCE,
            source,
            Policy::FaultAware,
        )
    }
    .map_err(|e| format!("{e:?}"))?;
    let wc = completed(rdma, id)?;
    success(&wc)?;
    if let Some(at) = mismatch(&buf.as_slice()[..SOURCE], 3) {
        return Err(format!("read data differs at byte {at}"));
    }
    let fresh = Region::demand_zero_huge(libos::mm::BLOCK_SIZE).map_err(|e| format!("{e:?}"))?;
    if fresh.as_slice().iter().any(|&b| b != 0) {
        return Err("the engine wrote into the shared zero block".into());
    }
    Ok(format!(
        "{} local faults, {} pages of its own",
        wc.engine.local_faults + wc.report.map_or(0, |r| r.stats.faults),
        buf.resident_pages()
    ))
}

fn target(rdma: &Rdma, checks: &mut Checks) {
    let landing = Region::demand_zero(LANDING).expect("landing region");
    let mut source = Region::demand_zero(SOURCE).expect("source region");
    fill(source.as_mut_slice(), 3);
    let evicted = source.evict(0..SOURCE).unwrap_or(0);
    println!(
        "target: landing {:#x} (never touched), source {:#x} ({evicted} pages evicted)",
        landing.start(),
        source.start()
    );
    let mut msg = Vec::new();
    for w in [landing.start() as u64, source.start() as u64] {
        msg.extend_from_slice(&w.to_le_bytes());
    }
    let qp = rdma.queue_pair(0).expect("node 0");
    let sent = qp
        .send(&msg)
        .map_err(|e| format!("{e:?}"))
        .and_then(|id| completed(rdma, id))
        .and_then(|wc| success(&wc));
    checks.check("send-addresses", sent.map(|_| String::new()));

    let written = receive(rdma, 0).and_then(|wc| {
        if wc.imm != Some(IMM_WRITTEN) {
            return Err(format!("immediate {:?}", wc.imm));
        }
        match mismatch(landing.as_slice(), 5) {
            Some(at) => Err(format!("landing differs at byte {at}")),
            None => Ok(format!(
                "{} KiB placed, {} pages resolved here for the engine",
                LANDING >> 10,
                rdma.pages_ready()
            )),
        }
    });
    checks.check("remote-write-landed", written);

    let untouched = receive(rdma, 0).and_then(|_| match mismatch(landing.as_slice(), 5) {
        Some(at) => Err(format!("landing changed at byte {at} after the bad WRITE")),
        None => Ok(String::new()),
    });
    checks.check("nothing-corrupted", untouched);
}

fn initiator(rdma: &Rdma, checks: &mut Checks) {
    let addrs = receive(rdma, 1).map(|wc| words(&wc.data));
    let (landing, source) = match addrs.as_deref() {
        Ok([l, s]) => (*l as usize, *s as usize),
        other => {
            checks.check("recv-addresses", Err(format!("{other:?}")));
            return;
        }
    };
    checks.check("recv-addresses", Ok(format!("{landing:#x} {source:#x}")));
    let qp = rdma.queue_pair(1).expect("node 1");

    let mut local = Region::demand_zero(LANDING).expect("write source");
    fill(local.as_mut_slice(), 5);
    // SAFETY: `local` lives to the end of the run and is not written after
    // its fill.
    let write =
        unsafe { qp.write_with_imm(local.range(), landing, IMM_WRITTEN, Policy::FaultAware) }
            .map_err(|e| format!("{e:?}"))
            .and_then(|id| completed(rdma, id))
            .and_then(|wc| {
                success(&wc)?;
                if wc.engine.remote_faults == 0 {
                    return Err("WRITE into never-touched pages took no remote fault".into());
                }
                Ok(format!(
                    "{} remote faults, {} bytes retransmitted",
                    wc.engine.remote_faults, wc.engine.retransmitted_bytes
                ))
            });
    checks.check("remote-write-faults", write);

    let dst = Region::demand_zero(SOURCE).expect("read destination");
    // SAFETY: `dst` lives to the end of the run and is read only after the
    // completion.
    let read = unsafe { qp.read(dst.range(), source, Policy::FaultAware) }
        .map_err(|e| format!("{e:?}"))
        .and_then(|id| completed(rdma, id))
        .and_then(|wc| {
            success(&wc)?;
            if let Some(at) = mismatch(dst.as_slice(), 3) {
                return Err(format!("read data differs at byte {at}"));
            }
            Ok(format!(
                "{} KiB, {} remote faults (evicted pages), {} local",
                SOURCE >> 10,
                wc.engine.remote_faults,
                wc.engine.local_faults + wc.report.map_or(0, |r| r.stats.faults)
            ))
        });
    checks.check("remote-read-evicted", read);
    checks.check(
        "engine-writes-over-zero-block",
        over_zero_block(rdma, source),
    );

    // SAFETY: as for the WRITE above.
    let bad = unsafe {
        qp.write(
            local.start()..local.start() + 4096,
            UNMAPPED_VA,
            Policy::FaultAware,
        )
    }
    .map_err(|e| format!("{e:?}"))
    .and_then(|id| completed(rdma, id))
    .and_then(|wc| match wc.status {
        Status::RemoteAccessError => Ok(format!("at {:#x}", wc.fault_va)),
        other => Err(format!("expected RemoteAccessError, got {other:?}")),
    });
    checks.check("remote-access-error", bad);

    let done = qp
        .send(b"done")
        .map_err(|e| format!("{e:?}"))
        .and_then(|id| completed(rdma, id))
        .and_then(|wc| success(&wc));
    checks.check("send-done", done.map(|_| String::new()));
}

fn peer_dies(rdma: &Rdma, checks: &mut Checks) {
    if rdma.rank() != 0 {
        // Idle while the test kills this node's engine.
        libos::time::sleep(Duration::from_secs(25));
        return;
    }
    // Give the test time to kill node 1's engine.
    libos::time::sleep(Duration::from_secs(8));
    let local = Region::demand_zero(64 << 10).expect("buffer");
    let qp = rdma.queue_pair(1).expect("node 1");
    let start = libos::time::now();
    // SAFETY: `local` lives to the end of the function and is never written.
    let result = unsafe { qp.write(local.range(), 0x4000_0000, Policy::Prefault) }
        .map_err(|e| format!("{e:?}"))
        .and_then(|id| completed(rdma, id))
        .and_then(|wc| match wc.status {
            Status::PeerUnreachable => {
                Ok(format!("reported after {} ms", start.elapsed().as_millis()))
            }
            other => Err(format!("expected PeerUnreachable, got {other:?}")),
        });
    checks.check("peer-unreachable", result);
}

fn main(args: libos::Args) -> i32 {
    let rdma = match rdma::open() {
        Ok(r) => r,
        Err(e) => {
            println!("rdmatest: no RDMA engine: {e:?} (run with --nodes 2)");
            return 2;
        }
    };
    println!("rdmatest: node {} of {}", rdma.rank(), rdma.nodes());
    let mut checks = Checks {
        passed: 0,
        failed: 0,
    };
    if args.contains("peer-dies") {
        peer_dies(&rdma, &mut checks);
    } else {
        checks.check("local-copy-cold", local_copy(&rdma));
        match rdma.rank() {
            0 if rdma.nodes() > 1 => initiator(&rdma, &mut checks),
            1 => target(&rdma, &mut checks),
            _ => {}
        }
    }
    let t = rdma.totals();
    println!(
        "engine: {} local faults, {} remote faults, {} bytes retransmitted",
        t.local_faults, t.remote_faults, t.retransmitted_bytes
    );
    println!(
        "rdmatest: {} passed, {} failed",
        checks.passed, checks.failed
    );
    i32::from(checks.failed > 0)
}
