//! The initiator: runs every (operation, buffer, size, policy) cell and
//! prints the table.

extern crate alloc;

use crate::protocol::{self, ARENA, EVICT, FREE, HELLO, PIN, QUIT, STATS, TOUCH};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;
use libos::dma::Policy;
use libos::mm::{Region, FRAME_SIZE};
use libos::println;
use libos::rdma::{QueuePair, Rdma, Registered, RemoteRegion, Status};

const POLICIES: [Policy; 4] = [
    Policy::Pin,
    Policy::Prefault,
    Policy::FaultAware,
    Policy::FaultAwarePrefetch,
];

pub(crate) fn policy_name(p: Policy) -> &'static str {
    match p {
        Policy::Pin => "pin",
        Policy::Prefault => "prefault",
        Policy::FaultAware => "fault-aware",
        Policy::FaultAwarePrefetch => "fault-aware+prefetch",
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Buffer {
    Warm,
    Cold,
    Sparse,
}

impl Buffer {
    fn name(self) -> &'static str {
        match self {
            Buffer::Warm => "warm",
            Buffer::Cold => "cold",
            Buffer::Sparse => "sparse",
        }
    }
}

/// One measured cell.
struct Row {
    op: &'static str,
    buffer: Buffer,
    size: usize,
    policy: Policy,
    /// Setup (pinning/touching both sides) plus the transfer, median.
    time: Duration,
    setup: Duration,
    faults_local: u64,
    faults_remote: u64,
    retransmitted: u64,
    ok: bool,
}

impl Row {
    fn mbps(&self) -> f64 {
        self.size as f64 / self.time.as_secs_f64().max(1e-9) / 1e6
    }
}

/// Where the time of pinning both sides went.
#[derive(Clone, Copy, Default)]
pub(crate) struct Registration {
    /// Pinning our side (each never-touched 2 MiB block zeroed first).
    pub here: Duration,
    /// Pinning the target's side, as the target measured it.
    pub there: Duration,
    /// The rest of asking the target: the command's round trip.
    pub round_trip: Duration,
}

impl Registration {
    /// Both sides, as the pinned baseline pays it.
    pub fn total(&self) -> Duration {
        self.here + self.there + self.round_trip
    }
}

/// Both arenas and a cursor that hands out never-used offsets.
pub(crate) struct Bench<'a> {
    rdma: &'a Rdma,
    qp: QueuePair,
    /// Our arena, granted to the engine once; out of here only while a
    /// transfer holds it.
    local: Option<Registered>,
    /// The target's arena, exposed to us read-write.
    remote: RemoteRegion,
    next: usize,
}

impl Bench<'_> {
    /// Our arena (always back by the time a transfer returns).
    fn local(&mut self) -> &mut Region {
        self.local
            .as_mut()
            .expect("the arena is back after every transfer")
            .region_mut()
    }

    /// The path MTU the engines use (what the targets' figures depend on).
    pub(crate) fn mtu(&self) -> u32 {
        self.rdma.mtu()
    }

    /// Fresh (never touched) offsets for `len` bytes on both sides.
    pub(crate) fn fresh(&mut self, len: usize) -> usize {
        let off = self.next;
        self.next += len.next_multiple_of(2 << 20);
        if self.next > ARENA {
            self.next = 0;
        }
        off
    }

    fn remote_cmd(&self, words: &[u64]) -> Option<Vec<u64>> {
        protocol::send(self.rdma, &self.qp, words)
            .then(|| protocol::recv(self.rdma, 1))
            .flatten()
    }

    pub(crate) fn remote_ns(&self, cmd: u64, off: usize, len: usize) -> Duration {
        let r = self.remote_cmd(&[cmd, off as u64, len as u64]);
        Duration::from_nanos(r.and_then(|w| w.first().copied()).unwrap_or(0))
    }

    /// Fresh offsets for `len` bytes made resident on both sides and, under
    /// `pin`, registered once (the pinned steady state of reused buffers).
    pub(crate) fn warm(&mut self, len: usize, policy: Policy) -> usize {
        let off = self.fresh(len);
        let _ = self.local().populate(off..off + len);
        self.remote_ns(TOUCH, off, len);
        if policy == Policy::Pin {
            self.register(off, len);
        }
        off
    }

    /// Touches and frees `len` bytes on both sides once, before anything is
    /// measured. QEMU backs guest RAM lazily, and the host's first touch of
    /// a frame costs a page fault that would fall on whichever cell first
    /// got that frame; frames are handed out first-fit, so later cells get
    /// these same, now backed, frames again (as in a long-running service).
    pub(crate) fn prime(&mut self, len: usize) {
        let off = self.fresh(len);
        let _ = self.local().populate(off..off + len);
        self.remote_ns(TOUCH, off, len);
        self.free(off, len);
        self.next = 0;
    }

    /// Pins `len` bytes at `off` on both sides, as RDMA registration does;
    /// returns the time it took (ours, plus what the target reports).
    pub(crate) fn register(&mut self, off: usize, len: usize) -> Duration {
        self.register_parts(off, len).total()
    }

    /// [`Bench::register`], with where its time went.
    pub(crate) fn register_parts(&mut self, off: usize, len: usize) -> Registration {
        let t = libos::time::now();
        let _ = self.local().pin(off..off + len);
        let here = t.elapsed();
        let t = libos::time::now();
        let there = self.remote_ns(PIN, off, len);
        let asking = t.elapsed();
        Registration {
            here,
            there,
            round_trip: asking.saturating_sub(there),
        }
    }

    pub(crate) fn free(&mut self, off: usize, len: usize) {
        let _ = self.local().unpin(off..off + len);
        let _ = self.local().discard(off..off + len);
        self.remote_ns(FREE, off, len);
    }

    /// One transfer of `len` bytes at `off` on both sides.
    pub(crate) fn transfer(
        &mut self,
        op: &str,
        off: usize,
        len: usize,
        policy: Policy,
    ) -> Result<libos::rdma::WorkCompletion, String> {
        // Under `pin` both sides are registered (pinned) by the caller, as
        // RDMA registration does: the transfer has nothing to set up and
        // cannot fault.
        let policy = if policy == Policy::Pin {
            Policy::FaultAware
        } else {
            policy
        };
        let remote = self.remote.at(off);
        let arena = self.local.take().ok_or("the arena is in flight")?;
        let range = off..off + len;
        let posted = match op {
            "write" => self.qp.write_owned(arena, range, remote, policy),
            _ => self.qp.read_owned(arena, range, remote, policy),
        };
        let (arena, result) = match posted {
            Ok(pending) => match pending.wait() {
                Ok((arena, wc)) => (arena, Ok(wc)),
                Err((e, arena)) => (arena, Err(e)),
            },
            Err((e, arena)) => (arena, Err(e)),
        };
        self.local = Some(arena);
        let wc = result.map_err(|e| format!("{e:?}"))?;
        if wc.status != Status::Success {
            return Err(format!("{:?}", wc.status));
        }
        Ok(wc)
    }

    /// Runs one cell: `reps` transfers, the median time reported.
    fn cell(&mut self, op: &'static str, buffer: Buffer, size: usize, policy: Policy) -> Row {
        let reps = match (buffer, size) {
            (Buffer::Warm, s) if s <= 1 << 20 => 8,
            (Buffer::Warm, _) => 4,
            (_, s) if s <= 1 << 20 => 3,
            _ => 1,
        };
        let registered = if buffer == Buffer::Sparse {
            size * 10
        } else {
            size
        };
        let mut times = Vec::new();
        let mut row = Row {
            op,
            buffer,
            size,
            policy,
            time: Duration::ZERO,
            setup: Duration::ZERO,
            faults_local: 0,
            faults_remote: 0,
            retransmitted: 0,
            ok: true,
        };
        let warm_off = (buffer == Buffer::Warm).then(|| self.warm(registered, policy));
        for _ in 0..reps {
            let off = warm_off.unwrap_or_else(|| self.fresh(registered));
            if op == "read" && buffer != Buffer::Warm {
                // Something to read: written, then evicted on the target.
                self.remote_ns(TOUCH, off, registered);
                self.remote_ns(EVICT, off, registered);
            }
            let start = libos::time::now();
            let mut setup = Duration::ZERO;
            if policy == Policy::Pin && buffer != Buffer::Warm {
                // Registration of both sides counts: the whole registered
                // buffer, even if only part of it is used.
                setup += self.register(off, registered);
            }
            // Sparse: the 10% in use is the first tenth of every 10 pages.
            let used: Vec<usize> = if buffer == Buffer::Sparse {
                (0..registered / FRAME_SIZE)
                    .filter(|p| p % 10 == 0)
                    .map(|p| off + p * FRAME_SIZE)
                    .take(size / FRAME_SIZE)
                    .collect()
            } else {
                alloc::vec![off]
            };
            let piece = if buffer == Buffer::Sparse {
                FRAME_SIZE
            } else {
                size
            };
            for at in used {
                match self.transfer(op, at, piece, policy) {
                    Ok(wc) => {
                        // The scheduler and the engine count the same local
                        // faults (the engine also those outside the buffer).
                        row.faults_local += wc
                            .report
                            .as_ref()
                            .map_or(0, |r| r.stats.faults)
                            .max(wc.engine.local_faults);
                        row.faults_remote += wc.engine.remote_faults;
                        row.retransmitted += wc.engine.retransmitted_bytes;
                    }
                    Err(e) => {
                        println!("{op} {} {size} {}: {e}", buffer.name(), policy_name(policy));
                        row.ok = false;
                    }
                }
            }
            times.push(start.elapsed());
            row.setup += setup;
            if buffer != Buffer::Warm {
                self.free(off, registered);
            }
        }
        if let Some(off) = warm_off {
            self.free(off, registered);
        }
        times.sort();
        row.time = times[times.len() / 2];
        row.setup /= reps as u32;
        row.faults_local /= reps as u64;
        row.faults_remote /= reps as u64;
        row.retransmitted /= reps as u64;
        row
    }
}

/// Guest instructions this core ran per small WRITE (only under
/// `-icount`, where QEMU counts them): posting it, and post to completion
/// (which also counts the wait's wake-ups, so it moves with timing).
#[derive(Clone, Copy)]
struct WriteInstructions {
    post: u32,
    total: u32,
}

/// Average latency of `n` 64-byte warm WRITEs under `policy`, the part of
/// it spent posting (until the verb returns), and the guest instructions
/// they took.
fn small_write_latency(
    b: &mut Bench,
    policy: Policy,
    n: u32,
) -> (Duration, Duration, Option<WriteInstructions>) {
    let off = b.warm(FRAME_SIZE, policy);
    let policy_used = if policy == Policy::Pin {
        Policy::FaultAware
    } else {
        policy
    };
    let remote = b.remote.at(off);
    let count = libos::arch::instructions_retired;
    let (mut post, mut total) = (0u32, 0u32);
    let start = libos::time::now();
    let mut posting = Duration::ZERO;
    for _ in 0..n {
        let Some(arena) = b.local.take() else {
            break;
        };
        let before = count();
        let post_start = libos::time::now();
        let posted = b.qp.write_owned(arena, off..off + 64, remote, policy_used);
        posting += post_start.elapsed();
        let after_post = count();
        b.local = Some(match posted {
            Ok(pending) => match pending.wait() {
                Ok((arena, _)) | Err((_, arena)) => arena,
            },
            Err((_, arena)) => arena,
        });
        let done = count();
        if let (Some(a), Some(p), Some(z)) = (before, after_post, done) {
            post = post.wrapping_add(p.wrapping_sub(a));
            total = total.wrapping_add(z.wrapping_sub(a));
        }
    }
    let avg = start.elapsed() / n;
    b.free(off, FRAME_SIZE);
    let instructions = count().map(|_| WriteInstructions {
        post: post / n,
        total: total / n,
    });
    (avg, posting / n, instructions)
}

/// End-to-end cost of one remote fault: a 1-page WRITE into a
/// never-touched remote page minus one into a resident page, averaged.
fn remote_fault_cost(b: &mut Bench) -> (Duration, Duration) {
    let n = 16;
    let off = b.fresh(2 * n * FRAME_SIZE);
    let _ = b.local().populate(off..off + 2 * n * FRAME_SIZE);
    b.remote_ns(TOUCH, off + n * FRAME_SIZE, n * FRAME_SIZE);
    let mut cold = Duration::ZERO;
    let mut warm = Duration::ZERO;
    for i in 0..n {
        let t = libos::time::now();
        let _ = b.transfer(
            "write",
            off + i * FRAME_SIZE,
            FRAME_SIZE,
            Policy::FaultAware,
        );
        cold += t.elapsed();
        let t = libos::time::now();
        let _ = b.transfer(
            "write",
            off + (n + i) * FRAME_SIZE,
            FRAME_SIZE,
            Policy::FaultAware,
        );
        warm += t.elapsed();
    }
    b.free(off, 2 * n * FRAME_SIZE);
    (cold / n as u32, warm / n as u32)
}

/// Node 0: the whole table.
pub fn initiator(rdma: &Rdma, sizes: &[usize]) -> i32 {
    for _ in 0..8 {
        let _ = rdma.post_recv(64);
    }
    let Ok(qp) = rdma.queue_pair(1) else {
        return 1;
    };
    let remote = match protocol::recv(rdma, 1).as_deref() {
        Some([HELLO, base, key]) => RemoteRegion {
            key: *key,
            start: *base as usize,
            len: ARENA,
        },
        other => {
            println!("rdmabench: no hello from node 1: {other:?}");
            return 1;
        }
    };
    let Ok(local) = Region::demand_zero_huge(ARENA) else {
        println!("rdmabench: no room for the arena");
        return 1;
    };
    // The engine may move the arena, once granted (nothing pinned).
    let local = match rdma.register(local) {
        Ok(r) => r,
        Err((e, _)) => {
            println!("rdmabench: granting the arena: {e:?}");
            return 1;
        }
    };
    let mut b = Bench {
        rdma,
        qp,
        local: Some(local),
        remote,
        next: 0,
    };
    let largest = sizes.iter().max().copied().unwrap_or(0);
    b.prime((largest * 10).clamp(16 << 20, ARENA / 2));
    let busy0 = libos::dma::fault_counters().busy;
    let remote_busy0 = b
        .remote_cmd(&[STATS])
        .and_then(|w| w.first().copied())
        .unwrap_or(0);
    let wall0 = libos::time::now();

    println!("rdmabench: RDMA on virtual addresses, node 0 -> node 1; ratios against pin (setup included)");
    println!(
        "{:<6} {:<7} {:>9} {:<20} {:>10} {:>9} {:>7} {:>9} {:>8} {:>8} {:>12}",
        "op",
        "buffer",
        "size",
        "policy",
        "MB/s",
        "time ms",
        "x pin",
        "setup ms",
        "faults",
        "remote",
        "retx bytes"
    );
    let mut rows = Vec::new();
    for op in ["write", "read"] {
        for buffer in [Buffer::Warm, Buffer::Cold, Buffer::Sparse] {
            for &size in sizes {
                if buffer == Buffer::Sparse && size < 64 << 10 {
                    continue;
                }
                if op == "read" && size > 4 << 20 {
                    continue;
                }
                let mut pin_time = None;
                for policy in POLICIES {
                    let row = b.cell(op, buffer, size, policy);
                    let base = *pin_time.get_or_insert(row.time);
                    println!(
                        "{:<6} {:<7} {:>9} {:<20} {:>10.1} {:>9.3} {:>7.2} {:>9.3} {:>8} {:>8} {:>12}{}",
                        op,
                        buffer.name(),
                        size,
                        policy_name(policy),
                        row.mbps(),
                        row.time.as_secs_f64() * 1e3,
                        base.as_secs_f64() / row.time.as_secs_f64().max(1e-9),
                        row.setup.as_secs_f64() * 1e3,
                        row.faults_local,
                        row.faults_remote,
                        row.retransmitted,
                        if row.ok { "" } else { "  ERROR" }
                    );
                    rows.push(row);
                }
            }
        }
    }

    println!("small WRITE latency (64 B, warm, average of 200):");
    for policy in POLICIES {
        let (l, posting, instructions) = small_write_latency(&mut b, policy, 200);
        let instructions = match instructions {
            Some(i) => alloc::format!(
                "guest instructions: post {}, post to completion {}",
                i.post,
                i.total
            ),
            None => "(guest instructions: run under -icount)".into(),
        };
        println!(
            "  {:<12} {:>8.1} us (posting {:.1} us)  {instructions}",
            policy_name(policy),
            l.as_secs_f64() * 1e6,
            posting.as_secs_f64() * 1e6
        );
    }
    let (cold, warm) = remote_fault_cost(&mut b);
    println!(
        "remote fault, end to end: {:.1} us (1-page WRITE into a never-touched page {:.1} us, into a resident one {:.1} us)",
        (cold.as_secs_f64() - warm.as_secs_f64()) * 1e6,
        cold.as_secs_f64() * 1e6,
        warm.as_secs_f64() * 1e6
    );
    let wall = wall0.elapsed();
    let busy = libos::dma::fault_counters().busy - busy0;
    let remote_busy = b
        .remote_cmd(&[STATS])
        .and_then(|w| w.first().copied())
        .unwrap_or(0)
        - remote_busy0;
    println!(
        "libOS CPU: initiator {:.1}% of {:.1} s in the DMA/fault service, target {:.1}%",
        busy.as_secs_f64() / wall.as_secs_f64() * 100.0,
        wall.as_secs_f64(),
        remote_busy as f64 / 1e9 / wall.as_secs_f64() * 100.0
    );

    let failed = crate::paired::targets(&mut b, rows.iter().filter(|r| !r.ok).count());
    println!("---- csv ----");
    println!("direction,scenario,size_bytes,policy,mbps,time_ms,ratio_vs_pin,setup_ms,faults,remote_faults,retransmitted_bytes,ok");
    for r in &rows {
        let pin = find(&rows, r.op, r.buffer, r.size, Policy::Pin).map_or(r.time, |p| p.time);
        println!(
            "{},{},{},{},{:.2},{:.4},{:.4},{:.4},{},{},{},{}",
            r.op,
            r.buffer.name(),
            r.size,
            policy_name(r.policy),
            r.mbps(),
            r.time.as_secs_f64() * 1e3,
            pin.as_secs_f64() / r.time.as_secs_f64().max(1e-9),
            r.setup.as_secs_f64() * 1e3,
            r.faults_local,
            r.faults_remote,
            r.retransmitted,
            r.ok
        );
    }
    println!("---- end csv ----");
    b.remote_cmd(&[QUIT]);
    i32::from(failed > 0 || rows.iter().any(|r| !r.ok))
}

fn find<'a>(
    rows: &'a [Row],
    op: &str,
    buffer: Buffer,
    size: usize,
    policy: Policy,
) -> Option<&'a Row> {
    rows.iter()
        .find(|r| r.op == op && r.buffer == buffer && r.size == size && r.policy == policy)
}
