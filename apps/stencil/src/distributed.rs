//! Across nodes: each node owns a slab of work units (rows in 2D, planes in
//! 3D) and, every iteration, RDMA-WRITEs its two edge units straight into
//! its neighbours' ghost units, which start as never-touched pages.
//!
//! ```text
//!  node r-1 ...[ own units ][ghost bottom x3]      (ghost: untouched demand pages)
//!                  ▲ WRITE+imm unit lo                 ▲
//!  node r   [ghost top x3][ own units lo..hi ][ghost bottom x3]
//!                                   │ WRITE+imm unit hi-1
//!  node r+1                         ▼ [ghost top x3][ own units ]...
//!
//!  iteration it:  core 0: units lo and hi-1 → post WRITEs to ghost[(it+1) % 3]
//!                 all cores: interior units (overlaps the WRITEs)
//!                 core 0: wait for own WRITEs + both neighbours' imm for it
//!                 barrier
//! ```
//!
//! Three ghost buffers per side: a neighbour is at most one iteration ahead
//! (it needs our edge units to finish an iteration), so it writes the
//! buffers for `it+1` and `it+2` while we still read the one for `it`.
//! Buffer 0 holds the initial state, set locally; buffers 1 and 2 are first
//! touched by the engine in iterations 0 and 1 — the remote faults — and
//! every later WRITE lands on resident pages.
//!
//! `halo-bench` also runs the pinned baseline (ghost units pinned before
//! the run) and [`Halo::Interleaved`], both kinds of ghost units in one run,
//! alternating by iteration, for a steady-state comparison that the host's
//! noise cannot tilt.
//!
//! The checksum is folded in memory order from node 0 to the last node
//! (each passes the running fold on with a SEND), so it equals the
//! single-node one bit for bit.

extern crate alloc;

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};
use core::time::Duration;
use libos::dma::Policy;
use libos::mm::{Region, FRAME_SIZE};
use libos::rdma::{
    Access, Exposure, Op, QueuePair, Rdma, RemoteRegion, Status, WorkCompletion, WorkId,
};
use libos::{println, smp, time};
use stencil::{set_unit_boundary, slab, sweep_unit, unit_cells, Checksum, Dims};

/// Ghost buffers per side (see the module doc).
const GHOST_BUFFERS: usize = 3;
/// Bit of an immediate value that says the unit came from the node below.
const FROM_BELOW: u32 = 1 << 31;
/// RECVs kept posted per neighbour.
const RECVS: usize = 8;

/// How the halo exchange treats memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Halo {
    /// Ghost units are never-touched demand pages; WRITEs run fault-aware.
    FaultAware,
    /// Ghost units are pinned (made resident and locked) before the run,
    /// WRITEs run with the pin policy: the registered-memory baseline.
    Pinned,
    /// Both in one run, iteration by iteration: the units for even
    /// iterations go fault-aware to demand pages, those for odd ones pinned
    /// to pinned pages. A slow spell of the host then weighs on both alike,
    /// which separate runs cannot promise.
    Interleaved,
}

impl Halo {
    /// Which ghost set holds the units iteration `j` reads.
    fn set(self, j: usize) -> usize {
        match self {
            Halo::Interleaved => j % 2,
            _ => 0,
        }
    }

    /// How the WRITEs of the units for iteration `j` run.
    fn policy(self, j: usize) -> Policy {
        match (self, self.set(j)) {
            (Halo::FaultAware, _) | (Halo::Interleaved, 0) => Policy::FaultAware,
            _ => Policy::Pin,
        }
    }
}

/// Iterations whose ghost units may still be untouched: each set's three
/// buffers per side are all written once by then.
pub const WARM_UP: usize = 2 * GHOST_BUFFERS;

/// What one node measured.
pub struct Outcome {
    /// The final checksum (known on node 0 and the last node).
    pub checksum: Option<Checksum>,
    /// Per iteration: (compute, halo wait, remote faults of our WRITEs,
    /// faults resolved here for incoming WRITEs).
    pub iterations: Vec<(Duration, Duration, u64, u64)>,
    /// Wall time of all iterations.
    pub wall: Duration,
    /// Preparing the slab: demand regions, and pinning the ghost units of
    /// the pinned baseline (its registration cost).
    pub setup: Duration,
}

/// A node's share of the grid.
struct Slab {
    d: Dims,
    /// Global index of the first owned unit.
    lo: usize,
    /// One past the last owned unit.
    hi: usize,
    /// Owned units, two buffers (old/new alternate).
    own: [Region; 2],
    /// Ghost sets (see [`Halo::set`]), each [top 0..3][bottom 0..3],
    /// units `pitch` bytes apart.
    ghosts: Vec<Region>,
    halo: Halo,
    /// Fixed boundary units for the grid's first and last unit.
    edges: Region,
    pitch: usize,
}

#[allow(clippy::mut_from_ref)]
fn cells_at(base: usize, n: usize) -> &'static mut [f64] {
    // SAFETY: callers pass addresses inside a live region of the slab, and
    // each unit is written by one core per iteration while no core reads it
    // (the barrier separates iterations), as `Slab` lays out.
    unsafe { core::slice::from_raw_parts_mut(base as *mut f64, n) }
}

impl Slab {
    fn new(d: Dims, rank: usize, nodes: usize, halo: Halo) -> Result<Self, String> {
        let units = d.work_units();
        let mine = slab(units.clone(), rank, nodes);
        if mine.is_empty() {
            return Err(format!("{nodes} nodes for {} work units", units.len()));
        }
        let u = unit_cells(&d) * 8;
        let pitch = u.next_multiple_of(FRAME_SIZE);
        let region = |len| Region::demand_zero(len).map_err(|e| format!("{e:?}"));
        let own = [region(mine.len() * u)?, region(mine.len() * u)?];
        let sets = if halo == Halo::Interleaved { 2 } else { 1 };
        let ghosts = (0..sets)
            .map(|_| region(2 * GHOST_BUFFERS * pitch))
            .collect::<Result<_, _>>()?;
        let edges = region(2 * pitch)?;
        let mut s = Slab {
            d,
            lo: mine.start,
            hi: mine.end,
            own,
            ghosts,
            halo,
            edges,
            pitch,
        };
        for k in s.lo..s.hi {
            for b in 0..2 {
                set_unit_boundary(&d, k, s.own_unit(b, k));
            }
        }
        let last = units.end;
        set_unit_boundary(&d, 0, s.edge(0));
        set_unit_boundary(&d, last, s.edge(1));
        // Ghost buffer 0 holds the neighbours' initial edge units; 1 and 2
        // stay untouched until the first WRITEs.
        if s.lo > 1 {
            set_unit_boundary(&d, s.lo - 1, s.ghost_unit(0, 0));
        }
        if s.hi < last {
            set_unit_boundary(&d, s.hi, s.ghost_unit(1, 0));
        }
        // The registered-memory baseline: the set for odd iterations when
        // interleaved, the only one when pinned.
        let pinned = match halo {
            Halo::FaultAware => None,
            Halo::Pinned => Some(0),
            Halo::Interleaved => Some(1),
        };
        if let Some(set) = pinned {
            let ghost = &mut s.ghosts[set];
            let len = ghost.len();
            ghost
                .pin(0..len)
                .map_err(|e| format!("pinning ghosts: {e:?}"))?;
        }
        Ok(s)
    }

    fn unit_len(&self) -> usize {
        unit_cells(&self.d)
    }

    fn own_unit(&self, buffer: usize, k: usize) -> &'static mut [f64] {
        let u = self.unit_len();
        cells_at(self.own[buffer].start() + (k - self.lo) * u * 8, u)
    }

    /// Ghost unit of `side` (0 top, 1 bottom) that iteration `j` reads.
    fn ghost_unit(&self, side: usize, j: usize) -> &'static mut [f64] {
        let base = self.ghosts[self.halo.set(j)].start();
        cells_at(base + ghost_offset(side, j, self.pitch), self.unit_len())
    }

    /// Where each ghost set starts, for the neighbours.
    /// Exposes each ghost set to the neighbours for WRITEs (nothing else
    /// of this node is reachable by them), one exposure per set.
    fn expose_ghosts(&self, rdma: &Rdma) -> Result<Vec<Exposure>, String> {
        self.ghosts
            .iter()
            .map(|g| {
                // SAFETY: the ghost regions live as long as the slab, which
                // outlives the exposures (`run` drops them first); this
                // node reads a ghost unit only after the neighbour's WRITE
                // of it has been announced by its immediate, and the
                // neighbour does not write that unit again before our next
                // iteration has consumed it (the two-set / iteration
                // protocol of `Exchange`).
                unsafe { rdma.expose(g.range(), Access::REMOTE_WRITE) }
                    .map_err(|e| format!("exposing ghosts: {e:?}"))
            })
            .collect()
    }

    /// Grants this node's engine its own units (the source of every halo
    /// WRITE), read-only, for the whole run.
    fn grant_own(&self, rdma: &Rdma) -> Result<Vec<libos::dma::Grant>, String> {
        self.own
            .iter()
            .map(|r| {
                rdma.grant(r.range(), libos::dma::Rights::Read)
                    .map_err(|e| format!("granting the engine our units: {e:?}"))
            })
            .collect()
    }

    fn edge(&self, side: usize) -> &'static mut [f64] {
        cells_at(self.edges.start() + side * self.pitch, self.unit_len())
    }

    /// The unit above `k` as iteration `it` reads it.
    fn prev(&self, it: usize, k: usize) -> &'static [f64] {
        match k {
            1 => self.edge(0),
            k if k == self.lo => self.ghost_unit(0, it),
            k => self.own_unit(it % 2, k - 1),
        }
    }

    /// The unit below `k` as iteration `it` reads it.
    fn next(&self, it: usize, k: usize) -> &'static [f64] {
        let last = self.d.work_units().end;
        match k + 1 {
            n if n == last => self.edge(1),
            n if n == self.hi => self.ghost_unit(1, it),
            n => self.own_unit(it % 2, n),
        }
    }

    fn sweep(&self, it: usize, k: usize) {
        let cur = self.own_unit(it % 2, k);
        let out = self.own_unit((it + 1) % 2, k);
        sweep_unit(&self.d, self.prev(it, k), cur, self.next(it, k), out);
    }
}

/// Offset in a ghost set of the unit of `side` for iteration `j`.
fn ghost_offset(side: usize, j: usize, pitch: usize) -> usize {
    (side * GHOST_BUFFERS + j % GHOST_BUFFERS) * pitch
}

/// The neighbours of this node and where their ghost sets are.
struct Neighbours {
    above: Option<(QueuePair, [RemoteRegion; 2])>,
    below: Option<(QueuePair, [RemoteRegion; 2])>,
}

fn expect_ok(wc: &WorkCompletion, what: &str) -> Result<(), String> {
    if wc.status == Status::Success {
        Ok(())
    } else {
        Err(format!("{what}: {:?} at {:#x}", wc.status, wc.fault_va))
    }
}

fn send_words(qp: &QueuePair, rdma: &Rdma, words: &[u64]) -> Result<(), String> {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    send_bytes(qp, rdma, &bytes)
}

fn send_bytes(qp: &QueuePair, rdma: &Rdma, bytes: &[u8]) -> Result<(), String> {
    let id = qp.send(bytes).map_err(|e| format!("{e:?}"))?;
    expect_ok(&rdma.wait(id).map_err(|e| format!("{e:?}"))?, "send")
}

fn words(data: &[u8]) -> Vec<u64> {
    data.chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect()
}

/// The halo exchange's view of the completion queue, run by core 0.
///
/// Every completion goes through [`Exchange::absorb`], whoever polled it:
/// a neighbour can be an iteration ahead, so its unit may arrive while we
/// still wait for an address or a checksum message.
struct Exchange<'a> {
    rdma: &'a Rdma,
    halo: Halo,
    /// Completions that arrived before anyone asked for them.
    parked: Vec<WorkCompletion>,
    /// Immediates received, by (iteration, from below).
    arrived: Vec<(u32, bool)>,
}

impl Exchange<'_> {
    /// Sorts one completion: a unit's arrival is recorded (and its RECV
    /// re-posted), anything else waits in `parked`.
    fn absorb(&mut self, wc: WorkCompletion) -> Result<(), String> {
        match wc.imm {
            Some(imm) if wc.op == Op::Recv => {
                expect_ok(&wc, "halo arrival")?;
                self.arrived
                    .push((imm & !FROM_BELOW, imm & FROM_BELOW != 0));
                self.rdma.post_recv(64).map_err(|e| format!("{e:?}"))?;
            }
            _ => self.parked.push(wc),
        }
        Ok(())
    }

    /// Absorbs the next completion, or waits a little if there is none;
    /// `what` names what we wait for, in the error after 120 s.
    fn pump(&mut self, since: time::Instant, what: &dyn Fn() -> String) -> Result<(), String> {
        match self.rdma.poll() {
            Some(wc) => self.absorb(wc),
            None if since.elapsed() > Duration::from_secs(120) => {
                Err(format!("{} missing after 120 s", what()))
            }
            None => {
                time::wait_for_interrupt_or(Duration::from_micros(200));
                Ok(())
            }
        }
    }

    /// Waits for a message (a RECV without immediate) from `node`.
    fn recv_from(&mut self, node: u16) -> Result<Vec<u8>, String> {
        let start = time::now();
        loop {
            if let Some(i) = self
                .parked
                .iter()
                .position(|w| w.op == Op::Recv && w.node == node && w.imm.is_none())
            {
                let wc = self.parked.remove(i);
                expect_ok(&wc, "recv")?;
                return Ok(wc.data);
            }
            self.pump(start, &|| format!("a message from node {node}"))?;
        }
    }

    fn post(&mut self, s: &Slab, n: &Neighbours, it: usize) -> Result<Vec<WorkId>, String> {
        // The units computed now are what the neighbours read next.
        let j = it + 1;
        let (policy, set) = (self.halo.policy(j), self.halo.set(j));
        let mut ids = Vec::new();
        let bytes = s.unit_len() * 8;
        if let Some((qp, ghost)) = &n.above {
            // Our first unit is the bottom ghost of the node above.
            let src = s.own_unit((it + 1) % 2, s.lo).as_ptr() as usize;
            let dst = ghost[set].at(ghost_offset(1, j, s.pitch));
            let imm = it as u32 | FROM_BELOW;
            // SAFETY: the unit stays allocated (the slab outlives the run)
            // and is not written before `finish(it)` has taken this
            // WRITE's completion: iteration it + 1 only reads buffer
            // (it + 1) % 2, and `finish` runs before that iteration ends.
            ids.push(unsafe { qp.write_with_imm(src..src + bytes, dst, imm, policy) });
        }
        if let Some((qp, ghost)) = &n.below {
            let src = s.own_unit((it + 1) % 2, s.hi - 1).as_ptr() as usize;
            let dst = ghost[set].at(ghost_offset(0, j, s.pitch));
            // SAFETY: as for the WRITE above.
            ids.push(unsafe { qp.write_with_imm(src..src + bytes, dst, it as u32, policy) });
        }
        ids.into_iter()
            .map(|r| r.map_err(|e| format!("posting a halo WRITE: {e:?}")))
            .collect()
    }

    /// Waits for our WRITEs of iteration `it` and the neighbours' units for
    /// it; returns the remote faults our WRITEs took.
    fn finish(&mut self, n: &Neighbours, it: usize, ids: &[WorkId]) -> Result<u64, String> {
        let mut remote_faults = 0;
        for &id in ids {
            let wc = self
                .rdma
                .wait(id)
                .map_err(|e| format!("halo WRITE: {e:?}"))?;
            expect_ok(&wc, "halo WRITE")?;
            remote_faults += wc.engine.remote_faults;
        }
        let want: Vec<(u32, bool)> = [(n.above.is_some(), false), (n.below.is_some(), true)]
            .into_iter()
            .filter(|(present, _)| *present)
            .map(|(_, below)| (it as u32, below))
            .collect();
        let start = time::now();
        while !want.iter().all(|w| self.arrived.contains(w)) {
            self.pump(start, &|| format!("iteration {it}: halo units"))?;
        }
        self.arrived.retain(|w| !want.contains(w));
        Ok(remote_faults)
    }
}

/// Runs `iterations` on this node's slab with every core, exchanging halos
/// with the neighbours, and folds the checksum along the nodes.
pub fn run(d: Dims, iterations: usize, rdma: &Rdma, halo: Halo) -> Result<Outcome, String> {
    let (rank, nodes) = (rdma.rank() as usize, rdma.nodes() as usize);
    let prepared = time::now();
    let s = Slab::new(d, rank, nodes, halo)?;
    let setup = prepared.elapsed();
    for _ in 0..2 * RECVS {
        rdma.post_recv(64).map_err(|e| format!("{e:?}"))?;
    }
    let mut exchange = Exchange {
        rdma,
        halo,
        parked: Vec::new(),
        arrived: Vec::new(),
    };
    // Expose our ghost buffers and tell each neighbour where they are and
    // their keys. Dropped (revoked) before the slab when `run` returns.
    let exposures = s.expose_ghosts(rdma)?;
    let _grants = s.grant_own(rdma)?;
    let ghost_sets: Vec<RemoteRegion> = (0..2)
        .map(|set| exposures[set.min(exposures.len() - 1)].remote())
        .collect();
    let qp = |node: usize| rdma.queue_pair(node as u16).map_err(|e| format!("{e:?}"));
    let mut neighbours = Neighbours {
        above: None,
        below: None,
    };
    for node in [rank.wrapping_sub(1), rank + 1] {
        if node < nodes {
            let msg: Vec<u8> = ghost_sets.iter().flat_map(|r| r.to_bytes()).collect();
            send_bytes(&qp(node)?, rdma, &msg)?;
        }
    }
    for (node, is_above) in [(rank.wrapping_sub(1), true), (rank + 1, false)] {
        if node < nodes {
            let msg = exchange.recv_from(node as u16)?;
            let mut sets = msg
                .chunks(RemoteRegion::BYTES)
                .map(RemoteRegion::from_bytes);
            let bases = match (sets.next(), sets.next(), sets.next()) {
                (Some(Some(a)), Some(Some(b)), None) => [a, b],
                _ => return Err("bad ghost exposure message".into()),
            };
            let entry = Some((qp(node)?, bases));
            if is_above {
                neighbours.above = entry;
            } else {
                neighbours.below = entry;
            }
        }
    }

    let workers = smp::cores();
    let barrier = libos::smp::Barrier::new(workers);
    let compute: Vec<AtomicU64> = (0..iterations).map(|_| AtomicU64::new(0)).collect();
    let mut per_iteration = vec![(Duration::ZERO, Duration::ZERO, 0u64, 0u64); iterations];
    let mut failure: Option<String> = None;
    let exchange = spin::Mutex::new(exchange);
    let results = spin::Mutex::new((&mut per_iteration, &mut failure));
    let interior = s.lo + 1..s.hi.saturating_sub(1).max(s.lo + 1);
    let start = time::now();
    smp::on_each_core(|core| {
        for (it, compute_time) in compute.iter().enumerate() {
            let t = time::now();
            let mut posted = Vec::new();
            if core == 0 {
                s.sweep(it, s.lo);
                if s.hi - 1 != s.lo {
                    s.sweep(it, s.hi - 1);
                }
                match exchange.lock().post(&s, &neighbours, it) {
                    Ok(ids) => posted = ids,
                    Err(e) => {
                        results.lock().1.get_or_insert(e);
                    }
                }
            }
            for k in slab(interior.clone(), core, workers) {
                s.sweep(it, k);
            }
            let spent = t.elapsed();
            compute_time.fetch_max(spent.as_nanos() as u64, Ordering::Relaxed);
            if core == 0 {
                let before = rdma.pages_ready();
                let w = time::now();
                let faults = exchange.lock().finish(&neighbours, it, &posted);
                let waited = w.elapsed();
                let mut r = results.lock();
                match faults {
                    Ok(f) => r.0[it] = (spent, waited, f, rdma.pages_ready() - before),
                    Err(e) => {
                        r.1.get_or_insert(e);
                    }
                }
            }
            barrier.wait();
        }
    });
    let wall = start.elapsed();
    // The lock held the borrows of `per_iteration` and `failure`.
    let _ = results.into_inner();
    if let Some(e) = failure {
        return Err(e);
    }
    for (it, c) in compute.iter().enumerate() {
        per_iteration[it].0 = Duration::from_nanos(c.load(Ordering::Relaxed));
    }
    let checksum = fold_checksum(&s, iterations, &mut exchange.into_inner())?;
    Ok(Outcome {
        checksum,
        iterations: per_iteration,
        wall,
        setup,
    })
}

/// Passes the checksum fold from node 0 to the last node, which sends the
/// result back to node 0.
fn fold_checksum(
    s: &Slab,
    iterations: usize,
    exchange: &mut Exchange,
) -> Result<Option<Checksum>, String> {
    let rdma = exchange.rdma;
    let (rank, nodes) = (rdma.rank(), rdma.nodes());
    let mut c = if rank == 0 {
        Checksum::empty().fold(s.edge(0))
    } else {
        let w = words(&exchange.recv_from(rank - 1)?);
        match w.as_slice() {
            [sum, hash] => Checksum {
                sum: f64::from_bits(*sum),
                hash: *hash,
            },
            _ => return Err("bad checksum message".into()),
        }
    };
    let final_buffer = iterations % 2;
    for k in s.lo..s.hi {
        c = c.fold(s.own_unit(final_buffer, k));
    }
    let qp = |n: u16| rdma.queue_pair(n).map_err(|e| format!("{e:?}"));
    if rank + 1 < nodes {
        send_words(&qp(rank + 1)?, rdma, &[c.sum.to_bits(), c.hash])?;
    } else {
        c = c.fold(s.edge(1));
        if rank != 0 {
            send_words(&qp(0)?, rdma, &[c.sum.to_bits(), c.hash])?;
        }
        return Ok(Some(c));
    }
    if rank == 0 {
        let w = words(&exchange.recv_from(nodes - 1)?);
        if let [sum, hash] = w.as_slice() {
            return Ok(Some(Checksum {
                sum: f64::from_bits(*sum),
                hash: *hash,
            }));
        }
        return Err("bad final checksum message".into());
    }
    Ok(None)
}

impl Outcome {
    /// The first iteration: compute plus halo wait.
    pub fn first(&self) -> Duration {
        self.iterations
            .first()
            .map_or(Duration::ZERO, |(c, w, _, _)| *c + *w)
    }
}

/// Prints one node's per-iteration lines (all of them up to 12 iterations,
/// else the first 4 and the last 2) and a summary with the median
/// steady-state iteration time (iterations 2..).
pub fn report(rank: u16, halo: Halo, o: &Outcome) {
    let n = o.iterations.len();
    for (it, (compute, wait, faults, resolved)) in o.iterations.iter().enumerate() {
        if n <= 12 || it < 4 || it + 2 >= n {
            println!(
                "node {rank} iter {it}: compute {:.3} ms, halo {:.3} ms, remote faults {faults}, faults resolved here {resolved}",
                compute.as_secs_f64() * 1e3,
                wait.as_secs_f64() * 1e3
            );
        } else if it == 4 {
            println!("node {rank} ...");
        }
    }
    let mut steady: Vec<Duration> = o
        .iterations
        .iter()
        .skip(2)
        .map(|(c, w, _, _)| *c + *w)
        .collect();
    steady.sort();
    let median = steady.get(steady.len() / 2).copied().unwrap_or_default();
    println!(
        "node {rank} {halo:?}: wall {:.1} ms, setup {:.3} ms, first iteration {:.3} ms, steady-state {:.3} ms/iteration",
        o.wall.as_secs_f64() * 1e3,
        o.setup.as_secs_f64() * 1e3,
        o.first().as_secs_f64() * 1e3,
        median.as_secs_f64() * 1e3
    );
}

/// The steady state of an [`Halo::Interleaved`] run: the median time of
/// the iterations whose halo went fault-aware and of those whose halo went
/// pinned, after the warm-up, and the median over neighbouring pairs of
/// iterations of pinned time / fault-aware time (fault-aware speed relative
/// to pinned: two neighbouring iterations share the host's mood, so this is
/// the ratio the noise moves least). An iteration is charged to the halo it
/// sends and waits for (the units for the next iteration).
pub fn interleaved_steady(o: &Outcome) -> (Duration, Duration, f64) {
    let time = |it: usize| {
        let (c, w, _, _) = o.iterations[it];
        c + w
    };
    let is_fault_aware = |it: usize| Halo::Interleaved.policy(it + 1) == Policy::FaultAware;
    let median = |want_fault_aware: bool| {
        let mut times: Vec<Duration> = (WARM_UP..o.iterations.len())
            .filter(|&it| is_fault_aware(it) == want_fault_aware)
            .map(time)
            .collect();
        times.sort();
        times.get(times.len() / 2).copied().unwrap_or_default()
    };
    let mut ratios: Vec<f64> = (WARM_UP..o.iterations.len().saturating_sub(1))
        .step_by(2)
        .map(|it| {
            let (fa, pinned) = if is_fault_aware(it) {
                (time(it), time(it + 1))
            } else {
                (time(it + 1), time(it))
            };
            pinned.as_secs_f64() / fa.as_secs_f64().max(1e-9)
        })
        .collect();
    ratios.sort_unstable_by(f64::total_cmp);
    let ratio = ratios.get(ratios.len() / 2).copied().unwrap_or(0.0);
    (median(true), median(false), ratio)
}
