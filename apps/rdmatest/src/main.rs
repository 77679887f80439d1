//! `rdmatest`: RDMA on virtual addresses across nodes, checked byte for byte
//! (`./run-qemu.sh rdmatest --nodes 2`). Node 0 drives, node 1 is the
//! target; any further node only says hello.
//!
//! ```text
//!  node 1                                   node 0
//!  landing = demand_zero (never touched), exposed write-only
//!  source  = pattern, evicted, exposed read-only
//!  read-only, revocable, unmapped: exposed too
//!  SEND [5 × (key, start, len)] ─────────►  local COPY into never-touched pages
//!                                            WRITE+imm into landing  (remote faults)
//!  RECV imm: landing == pattern?  ◄───────   READ source             (remote swap-ins)
//!                                            WRITE revocable (ok), SEND "revoke"
//!  drop the exposure, SEND "revoked" ─────►  WRITE revocable again → protection error
//!                                            WRITE/READ outside, wrong key, wrong
//!                                            right, at a .data word → protection error
//!                                            WRITE unmapped (exposed) → RemoteAccessError
//!  RECV "done": all unchanged?    ◄───────   SEND "done"
//! ```
//!
//! Each node prints `ok NAME` or `FAIL NAME: why` per check, then
//! `rdmatest: N passed, M failed`, and exits 1 on any failure.
//! `peer-dies`: node 1 only idles (a test kills its engine) and node 0
//! checks that a WRITE to it ends with a clear error instead of hanging.
#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};
use core::time::Duration;
use libos::dma::Policy;
use libos::mm::Region;
use libos::println;
use libos::rdma::{
    self, Access, ExposedRegion, Op, Pending, QueuePair, Rdma, RemoteRegion, Status, Ungranted,
    WorkCompletion,
};

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

/// The completion of an owned transfer, and its buffer back.
fn finished<B>(
    posted: Result<Pending<B>, (rdma::RdmaError, B)>,
) -> (B, Result<WorkCompletion, String>) {
    match posted.map(Pending::wait) {
        Ok(Ok((buffer, wc))) => (buffer, Ok(wc)),
        Ok(Err((e, buffer))) | Err((e, buffer)) => (buffer, Err(format!("{e:?}"))),
    }
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
    rdma.post_recv(256).map_err(|e| format!("{e:?}"))?;
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

/// Grants this node's engine `region` (what the raw verbs move locally).
fn granted(rdma: &Rdma, region: &Region) -> Result<libos::dma::Grant, String> {
    rdma.grant(region.range(), libos::dma::Rights::ReadWrite)
        .map_err(|e| format!("grant: {e:?}"))
}

/// A WRITE whose local source was never granted to this node's engine:
/// the engine's read of it is an isolation fault (`LocalAccessError`), and
/// the target stays untouched.
fn ungranted_source(qp: &QueuePair, landing: RemoteRegion) -> Result<String, String> {
    let mut ungranted = Region::demand_zero(SMALL).map_err(|e| format!("{e:?}"))?;
    fill(ungranted.as_mut_slice(), 42);
    let before = libos::iommu::isolation_faults();
    let posted = qp.write_owned(
        Ungranted(ungranted),
        0..SMALL,
        landing.at(0),
        Policy::FaultAware,
    );
    let wc = finished(posted).1?;
    if wc.status != Status::LocalAccessError {
        return Err(format!("expected LocalAccessError, got {:?}", wc.status));
    }
    let refused = libos::iommu::isolation_faults() - before;
    if refused == 0 {
        return Err("no isolation fault was reported".into());
    }
    Ok(format!("{refused} isolation fault(s)"))
}

/// A READ whose local destination is a kernel static (`.data`): the
/// engine's write there is an isolation fault and the static keeps its
/// value.
fn read_into_kernel_data(
    rdma: &Rdma,
    qp: &QueuePair,
    source: RemoteRegion,
) -> Result<String, String> {
    let word = &LOCAL_CANARY as *const AtomicU64 as usize;
    let before = LOCAL_CANARY.load(Ordering::Relaxed);
    // On purpose, memory Rust code owns: the SMMU must stop the engine
    // before it writes a byte (what this check checks).
    let id = qp
        .read_into_static(
            core::slice::from_ref(&LOCAL_CANARY),
            source.at(0),
            Policy::FaultAware,
        )
        .map_err(|e| format!("{e:?}"))?;
    let wc = completed(rdma, id)?;
    if wc.status != Status::LocalAccessError {
        return Err(format!("expected LocalAccessError, got {:?}", wc.status));
    }
    let after = LOCAL_CANARY.load(Ordering::Relaxed);
    if after != before {
        return Err(format!("the static changed: {before:#x} -> {after:#x}"));
    }
    Ok(format!(".data word at {word:#x} intact"))
}

/// A word of this node's `.data` that the engine must never reach.
static LOCAL_CANARY: AtomicU64 = AtomicU64::new(0x5afe_5afe_5afe_5afe);

fn local_copy(rdma: &Rdma) -> Result<String, String> {
    let mut src = Region::demand_zero(LANDING).map_err(|e| format!("{e:?}"))?;
    fill(src.as_mut_slice(), 7);
    let mut dst = Region::demand_zero(LANDING).map_err(|e| format!("{e:?}"))?;
    let _grants = [granted(rdma, &src)?, granted(rdma, &dst)?];
    let before = rdma.pages_ready();
    let wc = rdma
        .copy_between(src.as_slice(), dst.as_mut_slice(), Policy::FaultAware)
        .map_err(|e| format!("{e:?}"))?;
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
fn over_zero_block(rdma: &Rdma, source: RemoteRegion) -> Result<String, String> {
    let mut buf = Region::demand_zero_huge(libos::mm::BLOCK_SIZE).map_err(|e| format!("{e:?}"))?;
    let mut copy = Region::demand_zero(SOURCE).map_err(|e| format!("{e:?}"))?;
    fill(copy.as_mut_slice(), 9);
    let _grants = [granted(rdma, &buf)?, granted(rdma, &copy)?];
    let copied = rdma
        .copy_between(
            &buf.as_slice()[..SOURCE],
            copy.as_mut_slice(),
            Policy::FaultAware,
        )
        .map_err(|e| format!("{e:?}"))?;
    success(&copied)?;
    if copy.as_slice().iter().any(|&b| b != 0) || buf.resident_pages() != 0 {
        return Err(format!(
            "copying never-written memory: zeros {}, {} pages taken",
            copy.as_slice().iter().all(|&b| b == 0),
            buf.resident_pages()
        ));
    }
    let qp = rdma.queue_pair(1).map_err(|e| format!("{e:?}"))?;
    let wc = qp
        .read_into(
            &mut buf.as_mut_slice()[..SOURCE],
            source.at(0),
            Policy::FaultAware,
        )
        .map_err(|e| format!("{e:?}"))?;
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

/// What node 1 exposes to node 0, in the order its SEND lists them.
struct Exposed {
    /// Never touched: node 0 WRITEs pattern 5 here (REMOTE_WRITE only).
    landing: RemoteRegion,
    /// Pattern 3, evicted: node 0 READs it (REMOTE_READ only).
    source: RemoteRegion,
    /// Pattern 13: may be read, never written.
    read_only: RemoteRegion,
    /// Written once, then revoked: the second WRITE must fail.
    revocable: RemoteRegion,
    /// Exposed but backed by no region: an access faults and cannot be
    /// resolved (RemoteAccessError, not a protection error).
    unmapped: RemoteRegion,
}

impl Exposed {
    fn to_bytes(&self) -> Vec<u8> {
        [
            self.landing,
            self.source,
            self.read_only,
            self.revocable,
            self.unmapped,
        ]
        .iter()
        .flat_map(|r| r.to_bytes())
        .collect()
    }

    fn from_bytes(b: &[u8]) -> Option<Self> {
        let mut r = b.chunks(RemoteRegion::BYTES).map(RemoteRegion::from_bytes);
        let found = Self {
            landing: r.next()??,
            source: r.next()??,
            read_only: r.next()??,
            revocable: r.next()??,
            unmapped: r.next()??,
        };
        r.next().is_none().then_some(found)
    }
}

/// A word in this image's `.data`: at the same address on every node (one
/// image), so node 0 aims a WRITE at node 1's copy of it.
static CANARY: AtomicU64 = AtomicU64::new(0xc0ff_ee00_c0ff_ee00);

/// Bytes of the small exposed regions.
const SMALL: usize = 64 << 10;

/// Exposes `region`, which moves in: this node then sees its bytes only
/// as copies (`snapshot`), taken once node 0 has said (SEND) that its
/// WRITEs there are over.
fn exposed_region(rdma: &Rdma, region: Region, access: Access) -> ExposedRegion {
    match rdma.expose_region(region, access) {
        Ok(x) => x,
        Err((e, _)) => panic!("expose: {e:?}"),
    }
}

/// The bytes of `x` as they are now.
fn snapshot(x: &ExposedRegion) -> Vec<u8> {
    x.snapshot(0..x.len()).unwrap_or_default()
}

fn target(rdma: &Rdma, checks: &mut Checks) {
    let landing = Region::demand_zero(LANDING).expect("landing region");
    let mut source = Region::demand_zero(SOURCE).expect("source region");
    fill(source.as_mut_slice(), 3);
    let evicted = source.evict(0..SOURCE).unwrap_or(0);
    let mut read_only = Region::demand_zero(SMALL).expect("read-only region");
    fill(read_only.as_mut_slice(), 13);
    let revocable = Region::demand_zero(SMALL).expect("revocable region");
    println!(
        "target: landing {:#x} (never touched), source {:#x} ({evicted} pages evicted)",
        landing.start(),
        source.start()
    );
    let x_landing = exposed_region(rdma, landing, Access::REMOTE_WRITE);
    let x_source = exposed_region(rdma, source, Access::REMOTE_READ);
    let x_read_only = exposed_region(rdma, read_only, Access::REMOTE_READ);
    let x_revocable = exposed_region(rdma, revocable, Access::REMOTE_READ | Access::REMOTE_WRITE);
    // No region covers UNMAPPED_VA, nor ever will (libos checks).
    let x_unmapped = rdma
        .expose_unbacked(
            UNMAPPED_VA..UNMAPPED_VA + SMALL,
            Access::REMOTE_READ | Access::REMOTE_WRITE,
        )
        .expect("expose");
    let msg = Exposed {
        landing: x_landing.remote(),
        source: x_source.remote(),
        read_only: x_read_only.remote(),
        revocable: x_revocable.remote(),
        unmapped: x_unmapped.remote(),
    }
    .to_bytes();
    let qp = rdma.queue_pair(0).expect("node 0");
    let sent = qp
        .send(&msg)
        .map_err(|e| format!("{e:?}"))
        .and_then(|id| completed(rdma, id))
        .and_then(|wc| success(&wc));
    checks.check("send-exposures", sent.map(|_| String::new()));

    let written = receive(rdma, 0).and_then(|wc| {
        if wc.imm != Some(IMM_WRITTEN) {
            return Err(format!("immediate {:?}", wc.imm));
        }
        match mismatch(&snapshot(&x_landing), 5) {
            Some(at) => Err(format!("landing differs at byte {at}")),
            None => Ok(format!(
                "{} KiB placed, {} pages resolved here for the engine",
                LANDING >> 10,
                rdma.pages_ready()
            )),
        }
    });
    checks.check("remote-write-landed", written);

    // Node 0 wrote the revocable region once; it asks for the revocation.
    let mut x_revocable = Some(x_revocable);
    let mut revocable = None;
    let revoked = receive(rdma, 0).and_then(|wc| {
        if wc.data != b"revoke" {
            return Err(format!("expected \"revoke\", got {:?}", wc.data));
        }
        revocable = x_revocable.take().map(ExposedRegion::revoke);
        qp.send(b"revoked")
            .map_err(|e| format!("{e:?}"))
            .and_then(|id| completed(rdma, id))
            .and_then(|wc| success(&wc))
            .map(|_| String::new())
    });
    checks.check("revoke", revoked);

    let untouched = receive(rdma, 0).and_then(|_| {
        if let Some(at) = mismatch(&snapshot(&x_landing), 5) {
            return Err(format!(
                "landing changed at byte {at} after the refused WRITEs"
            ));
        }
        if let Some(at) = mismatch(&snapshot(&x_read_only), 13) {
            return Err(format!("read-only region changed at byte {at}"));
        }
        let revocable = match (&revocable, &x_revocable) {
            (Some(region), _) => region.as_slice().to_vec(),
            (None, Some(x)) => snapshot(x),
            (None, None) => Vec::new(),
        };
        if let Some(at) = mismatch(&revocable, 5) {
            return Err(format!(
                "revocable region differs from the WRITE before revocation at byte {at}"
            ));
        }
        let canary = CANARY.load(Ordering::SeqCst);
        if canary != 0xc0ff_ee00_c0ff_ee00 {
            return Err(format!("the .data word changed to {canary:#x}"));
        }
        Ok(format!(
            "landing, read-only, revoked and .data ({:#x}) intact",
            &CANARY as *const _ as usize
        ))
    });
    checks.check("nothing-corrupted", untouched);
    drop((x_landing, x_source, x_read_only, x_unmapped, x_revocable));
    // Node 0's "done" completes only once this node's engine acknowledges
    // it, and that acknowledgement may be lost (the loss tests drop
    // datagrams): stay up while node 0 may still resend it (its timeouts
    // double from 20 ms, so five in a row fit), rather than leave it to
    // find no peer.
    libos::time::sleep(LINGER);
}

/// How long the target stays up after the last message it receives.
const LINGER: Duration = Duration::from_millis(1500);

/// Expects a WRITE or READ to have ended with `want`.
fn expect_status(
    done: Result<WorkCompletion, rdma::RdmaError>,
    want: Status,
) -> Result<String, String> {
    let wc = done.map_err(|e| format!("{e:?}"))?;
    if wc.status == want {
        Ok(format!("{want:?}"))
    } else {
        Err(format!("expected {want:?}, got {:?}", wc.status))
    }
}

fn initiator(rdma: &Rdma, checks: &mut Checks) {
    let got = receive(rdma, 1).map(|wc| Exposed::from_bytes(&wc.data));
    let x = match got {
        Ok(Some(x)) => x,
        other => {
            checks.check("recv-exposures", Err(format!("{:?}", other.map(|_| ()))));
            return;
        }
    };
    checks.check(
        "recv-exposures",
        Ok(format!(
            "landing {:#x}, source {:#x}",
            x.landing.start, x.source.start
        )),
    );
    let qp = rdma.queue_pair(1).expect("node 1");

    let mut local = Region::demand_zero(LANDING).expect("write source");
    fill(local.as_mut_slice(), 5);
    let (local, write) = finished(qp.write_with_imm_owned(
        local,
        0..LANDING,
        x.landing.at(0),
        IMM_WRITTEN,
        Policy::FaultAware,
    ));
    let write = write.and_then(|wc| {
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
    let (dst, read) = finished(qp.read_owned(dst, 0..SOURCE, x.source.at(0), Policy::FaultAware));
    let read = read.and_then(|wc| {
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
        over_zero_block(rdma, x.source),
    );
    checks.check(
        "local-write-from-ungranted-memory-is-isolated",
        ungranted_source(&qp, x.landing),
    );
    checks.check(
        "local-read-into-kernel-data-is-isolated",
        read_into_kernel_data(rdma, &qp, x.source),
    );

    let mut other = Region::demand_zero(SMALL).expect("bad-write source");
    fill(other.as_mut_slice(), 99);
    let mut scratch = Region::demand_zero(SMALL).expect("read destination");
    // From here on the safe verbs: each borrows its buffer until it is over.
    let first = qp.write_from(
        &local.as_slice()[..SMALL],
        x.revocable.at(0),
        Policy::FaultAware,
    );
    checks.check(
        "write-before-revocation",
        expect_status(first, Status::Success),
    );
    let revoked = qp
        .send(b"revoke")
        .map_err(|e| format!("{e:?}"))
        .and_then(|id| completed(rdma, id))
        .and_then(|wc| success(&wc))
        .and_then(|_| receive(rdma, 1))
        .and_then(|wc| match wc.data.as_slice() {
            b"revoked" => Ok(()),
            d => Err(format!("expected \"revoked\", got {d:?}")),
        });
    if let Err(why) = revoked {
        checks.check("write-after-revocation-is-refused", Err(why));
        return;
    }
    let canary = &CANARY as *const AtomicU64 as usize;
    let landing_key = x.landing.key;
    let refused = [
        (
            "write-after-revocation-is-refused",
            Op::Write,
            SMALL,
            x.revocable.at(0),
        ),
        (
            "write-past-the-exposed-end-is-refused",
            Op::Write,
            4096,
            x.landing.at(LANDING - 8),
        ),
        (
            "write-before-the-exposed-start-is-refused",
            Op::Write,
            4096,
            rdma::RemoteAddr {
                key: landing_key,
                va: x.landing.start - 4096,
            },
        ),
        (
            "write-to-kernel-data-is-refused",
            Op::Write,
            8,
            rdma::RemoteAddr {
                key: landing_key,
                va: canary,
            },
        ),
        (
            "write-with-a-wrong-key-is-refused",
            Op::Write,
            4096,
            rdma::RemoteAddr {
                key: landing_key ^ 0x5a5a_5a5a,
                va: x.landing.start,
            },
        ),
        (
            "write-to-read-only-memory-is-refused",
            Op::Write,
            4096,
            x.read_only.at(0),
        ),
        (
            "read-of-write-only-memory-is-refused",
            Op::Read,
            4096,
            x.landing.at(0),
        ),
        (
            "read-past-the-exposed-end-is-refused",
            Op::Read,
            SMALL,
            x.source.at(SOURCE - 4096),
        ),
        (
            "read-with-a-wrong-key-is-refused",
            Op::Read,
            4096,
            rdma::RemoteAddr {
                key: x.source.key.wrapping_add(1),
                va: x.source.start,
            },
        ),
    ];
    for (name, op, len, remote) in refused {
        let done = match op {
            Op::Write => qp.write_from(&other.as_slice()[..len], remote, Policy::FaultAware),
            _ => qp.read_into(
                &mut scratch.as_mut_slice()[..len],
                remote,
                Policy::FaultAware,
            ),
        };
        checks.check(name, expect_status(done, Status::RemoteProtectionError));
    }

    // Inside an exposure, a page no region backs is an access error.
    let bad = qp
        .write_from(
            &other.as_slice()[..4096],
            x.unmapped.at(0),
            Policy::FaultAware,
        )
        .map_err(|e| format!("{e:?}"))
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
        // The test kills this node's engine a few seconds in; then a local
        // COPY through it must end with NotResponding, the engine cut off
        // from memory, and the next verb refused at once.
        libos::time::sleep(Duration::from_secs(8));
        let src = [0x5au8; 4096];
        let mut dst = [0u8; 4096];
        let start = libos::time::now();
        let silent = match rdma.copy_between(&src, &mut dst, Policy::FaultAware) {
            Err(rdma::RdmaError::NotResponding) => {
                let waited = start.elapsed().as_millis();
                let t = libos::time::now();
                match rdma.copy_between(&src, &mut dst, Policy::FaultAware) {
                    Err(rdma::RdmaError::NotResponding) if t.elapsed() < Duration::from_secs(1) => {
                        Ok(format!(
                            "after {waited} ms; the next verb is refused at once"
                        ))
                    }
                    other => Err(format!("the next verb: {other:?}")),
                }
            }
            other => Err(format!("expected NotResponding, got {other:?}")),
        };
        checks.check("own-engine-silent-is-cut-off", silent);
        return;
    }
    // Give the test time to kill node 1's engine.
    libos::time::sleep(Duration::from_secs(8));
    let local = Region::demand_zero(64 << 10).expect("buffer");
    let qp = rdma.queue_pair(1).expect("node 1");
    let start = libos::time::now();
    // No key: node 1's engine is dead and answers nothing at all.
    let nowhere = rdma::RemoteAddr {
        key: 0,
        va: 0x4000_0000,
    };
    let (_, result) = finished(qp.write_owned(local, 0..64 << 10, nowhere, Policy::Prefault));
    let result = result.and_then(|wc| match wc.status {
        Status::PeerUnreachable => Ok(format!("reported after {} ms", start.elapsed().as_millis())),
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
