//! Across nodes: each node owns a slab of work units (rows in 2D, planes in
//! 3D) and, every iteration, RDMA-WRITEs its two edge units (copied into
//! send buffers the WRITEs hold) into its neighbours' ghost units, which
//! start as never-touched pages.
//!
//! ```text
//!  node r-1 ...[ own units ][ghost bottom x3]      (ghost: untouched demand pages)
//!                  ▲ WRITE+imm unit lo                 ▲
//!  node r   [ghost top x3][ own units lo..hi ][ghost bottom x3]
//!                                   │ WRITE+imm unit hi-1
//!  node r+1                         ▼ [ghost top x3][ own units ]...
//!
//!  iteration it:  copies of the ghost units for it (their imm came in it-1)
//!                 one job on every core, each holding its units of the new buffer:
//!                 core 0: units lo and hi-1 → send buffers → post WRITEs to ghost[(it+1) % 3]
//!                 all cores: interior units (overlaps the WRITEs)
//!                 core 0: wait for own WRITEs (buffers back) + both neighbours' imm for it
//!                 barrier
//! ```
//!
//! No `unsafe`: the ghost sets move into their exposures
//! (`ExposedRegion`), read only as copies once the neighbour's immediate
//! said the unit is there; the send buffers are `Registered` (granted once)
//! and move into each WRITE until its completion.
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
    Access, ExposedRegion, Op, Pending, QueuePair, Rdma, Registered, RemoteRegion, Status,
    WorkCompletion,
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
    halo: Halo,
    /// Fixed boundary units for the grid's first and last unit.
    edges: Region,
    pitch: usize,
}

/// What `Slab::new` prepares: the slab, its owned units' two buffers and
/// its ghost sets.
type Prepared = (Slab, [Region; 2], Vec<Region>);

/// The units one iteration reads besides the old buffer's: the ghost
/// units (copies, taken once the neighbours said they are there) and the
/// fixed edges.
struct Around<'a> {
    top: Option<Vec<f64>>,
    bottom: Option<Vec<f64>>,
    edges: [&'a [f64]; 2],
}

impl Slab {
    /// The slab, its owned units (two buffers: old and new alternate) and
    /// its ghost sets (see [`Halo::set`]), each [top 0..3][bottom 0..3],
    /// units `pitch` bytes apart, buffer 0 holding the neighbours' initial
    /// edge units.
    fn new(d: Dims, rank: usize, nodes: usize, halo: Halo) -> Result<Prepared, String> {
        let units = d.work_units();
        let mine = slab(units.clone(), rank, nodes);
        if mine.is_empty() {
            return Err(format!("{nodes} nodes for {} work units", units.len()));
        }
        let u = unit_cells(&d) * 8;
        let pitch = u.next_multiple_of(FRAME_SIZE);
        let region = |len| Region::demand_zero(len).map_err(|e| format!("{e:?}"));
        let mut own = [region(mine.len() * u)?, region(mine.len() * u)?];
        let sets = if halo == Halo::Interleaved { 2 } else { 1 };
        let mut ghosts: Vec<Region> = (0..sets)
            .map(|_| region(2 * GHOST_BUFFERS * pitch))
            .collect::<Result<_, _>>()?;
        let edges = region(2 * pitch)?;
        let mut s = Slab {
            d,
            lo: mine.start,
            hi: mine.end,
            halo,
            edges,
            pitch,
        };
        let cells = unit_cells(&d);
        for buffer in &mut own {
            for (k, unit) in (s.lo..s.hi).zip(buffer.as_mut_f64s().chunks_mut(cells)) {
                set_unit_boundary(&d, k, unit);
            }
        }
        let last = units.end;
        let at = |side: usize, cells_of: &mut [f64]| -> core::ops::Range<usize> {
            let start = side * pitch / 8;
            start..(start + cells).min(cells_of.len())
        };
        let edges = s.edges.as_mut_f64s();
        let r = at(0, edges);
        set_unit_boundary(&d, 0, &mut edges[r]);
        let r = at(1, edges);
        set_unit_boundary(&d, last, &mut edges[r]);
        // Ghost buffer 0 holds the neighbours' initial edge units; 1 and 2
        // stay untouched until the first WRITEs.
        let ghost = ghosts[0].as_mut_f64s();
        if s.lo > 1 {
            let start = ghost_offset(0, 0, pitch) / 8;
            set_unit_boundary(&d, s.lo - 1, &mut ghost[start..start + cells]);
        }
        if s.hi < last {
            let start = ghost_offset(1, 0, pitch) / 8;
            set_unit_boundary(&d, s.hi, &mut ghost[start..start + cells]);
        }
        // The registered-memory baseline: the set for odd iterations when
        // interleaved, the only one when pinned.
        let pinned = match halo {
            Halo::FaultAware => None,
            Halo::Pinned => Some(0),
            Halo::Interleaved => Some(1),
        };
        if let Some(set) = pinned {
            let ghost = &mut ghosts[set];
            let len = ghost.len();
            ghost
                .pin(0..len)
                .map_err(|e| format!("pinning ghosts: {e:?}"))?;
        }
        Ok((s, own, ghosts))
    }

    fn unit_len(&self) -> usize {
        unit_cells(&self.d)
    }

    /// Unit `k` of `buffer` (the cells of an owned buffer).
    fn unit<'b>(&self, buffer: &'b [f64], k: usize) -> &'b [f64] {
        let u = self.unit_len();
        &buffer[(k - self.lo) * u..(k - self.lo + 1) * u]
    }

    fn edge(&self, side: usize) -> &[f64] {
        let start = side * self.pitch / 8;
        &self.edges.as_f64s()[start..start + self.unit_len()]
    }

    /// What iteration `it` reads besides the old buffer: copies of the
    /// ghost units the neighbours wrote for it (only once `finish` of the
    /// iteration before has seen their immediates) and the edges.
    fn around(&self, ghosts: &[ExposedRegion], it: usize) -> Result<Around<'_>, String> {
        let last = self.d.work_units().end;
        let ghost = |side: usize| -> Result<Vec<f64>, String> {
            let x = &ghosts[self.halo.set(it).min(ghosts.len() - 1)];
            let start = ghost_offset(side, it, self.pitch);
            let bytes = x
                .snapshot(start..start + self.unit_len() * 8)
                .ok_or("a ghost unit outside its set")?;
            Ok(bytes
                .chunks_exact(8)
                .map(|c| f64::from_ne_bytes(c.try_into().unwrap_or([0; 8])))
                .collect())
        };
        Ok(Around {
            top: (self.lo != 1).then(|| ghost(0)).transpose()?,
            bottom: (self.hi != last).then(|| ghost(1)).transpose()?,
            edges: [self.edge(0), self.edge(1)],
        })
    }

    /// Computes unit `k` into `out` from `old` (the old buffer's cells).
    fn sweep(&self, around: &Around, old: &[f64], k: usize, out: &mut [f64]) {
        let last = self.d.work_units().end;
        let prev = match k {
            1 => around.edges[0],
            k if k == self.lo => around.top.as_deref().unwrap_or(around.edges[0]),
            k => self.unit(old, k - 1),
        };
        let next = match k + 1 {
            n if n == last => around.edges[1],
            n if n == self.hi => around.bottom.as_deref().unwrap_or(around.edges[1]),
            n => self.unit(old, n),
        };
        sweep_unit(&self.d, prev, self.unit(old, k), next, out);
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

    /// Posts the WRITEs of the edge units just computed for iteration
    /// `it` (`units`: our first and our last), each copied into its send
    /// buffer, which the WRITE holds until `finish`.
    fn post(
        &mut self,
        s: &Slab,
        n: &Neighbours,
        it: usize,
        sends: &mut Sends,
        units: [&[f64]; 2],
    ) -> Result<Vec<(usize, Pending<Registered>)>, String> {
        // The units computed now are what the neighbours read next.
        let j = it + 1;
        let (policy, set) = (self.halo.policy(j), self.halo.set(j));
        let mut posted = Vec::new();
        let bytes = s.unit_len() * 8;
        // Our first unit is the bottom ghost of the node above, our last
        // the top ghost of the node below.
        let targets = [
            (&n.above, 1, it as u32 | FROM_BELOW),
            (&n.below, 0, it as u32),
        ];
        for (side, (neighbour, ghost_side, imm)) in targets.into_iter().enumerate() {
            let Some((qp, ghost)) = neighbour else {
                continue;
            };
            let mut buffer = sends[side].take().ok_or("a send buffer still in flight")?;
            buffer.region_mut().as_mut_f64s()[..units[side].len()].copy_from_slice(units[side]);
            let dst = ghost[set].at(ghost_offset(ghost_side, j, s.pitch));
            match qp.write_with_imm_owned(buffer, 0..bytes, dst, imm, policy) {
                Ok(pending) => posted.push((side, pending)),
                Err((e, buffer)) => {
                    sends[side] = Some(buffer);
                    return Err(format!("posting a halo WRITE: {e:?}"));
                }
            }
        }
        Ok(posted)
    }

    /// Waits for our WRITEs of iteration `it` (their send buffers back in
    /// `sends`) and the neighbours' units for it; returns the remote
    /// faults our WRITEs took.
    fn finish(
        &mut self,
        n: &Neighbours,
        it: usize,
        posted: Vec<(usize, Pending<Registered>)>,
        sends: &mut Sends,
    ) -> Result<u64, String> {
        let mut remote_faults = 0;
        let mut failed = None;
        for (side, pending) in posted {
            match pending.wait() {
                Ok((buffer, wc)) => {
                    sends[side] = Some(buffer);
                    remote_faults += wc.engine.remote_faults;
                    if let Err(e) = expect_ok(&wc, "halo WRITE") {
                        failed.get_or_insert(e);
                    }
                }
                Err((e, buffer)) => {
                    sends[side] = Some(buffer);
                    failed.get_or_insert(format!("halo WRITE: {e:?}"));
                }
            }
        }
        if let Some(e) = failed {
            return Err(e);
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

/// The send buffers of the edge units (to the node above, to the node
/// below), granted to the engine once; out while their WRITE runs.
type Sends = [Option<Registered>; 2];

/// Units of the new buffer (global index, cells) one core computes.
type Units<'g> = Vec<(usize, &'g mut [f64])>;

/// One iteration's measurements: compute, halo wait, remote faults of our
/// WRITEs, faults resolved here for incoming ones.
type Measured = (Duration, Duration, u64, u64);

/// Runs `iterations` on this node's slab with every core, exchanging halos
/// with the neighbours, and folds the checksum along the nodes.
pub fn run(d: Dims, iterations: usize, rdma: &Rdma, halo: Halo) -> Result<Outcome, String> {
    let (rank, nodes) = (rdma.rank() as usize, rdma.nodes() as usize);
    let prepared = time::now();
    let (s, mut own, ghost_regions) = Slab::new(d, rank, nodes, halo)?;
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
    // Expose our ghost buffers (each set moves into its exposure: nothing
    // else of this node is reachable by the neighbours) and tell each
    // neighbour where they are and their keys. This node sees a ghost unit
    // only as a copy, taken once the neighbour's immediate said it is there.
    let ghosts: Vec<ExposedRegion> = ghost_regions
        .into_iter()
        .map(|g| {
            rdma.expose_region(g, Access::REMOTE_WRITE)
                .map_err(|(e, _)| format!("exposing ghosts: {e:?}"))
        })
        .collect::<Result<_, _>>()?;
    let send_buffer = || -> Result<Registered, String> {
        let region = Region::demand_zero((s.unit_len() * 8).next_multiple_of(FRAME_SIZE))
            .map_err(|e| format!("{e:?}"))?;
        rdma.register(region)
            .map_err(|(e, _)| format!("granting the engine our send buffers: {e:?}"))
    };
    let sends = spin::Mutex::new([Some(send_buffer()?), Some(send_buffer()?)]);
    let ghost_sets: Vec<RemoteRegion> = (0..2)
        .map(|set| ghosts[set.min(ghosts.len() - 1)].remote())
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
    let mut per_iteration = vec![(Duration::ZERO, Duration::ZERO, 0u64, 0u64); iterations];
    let exchange = spin::Mutex::new(exchange);
    let interior = s.lo + 1..s.hi.saturating_sub(1).max(s.lo + 1);
    let u = s.unit_len();
    // Passed at the end of every iteration's job: it sizes each vCPU's TLB
    // (see `libos::smp::Barrier`).
    let barrier = smp::Barrier::new(workers);
    let start = time::now();
    for (it, measured) in per_iteration.iter_mut().enumerate() {
        let around = s.around(&ghosts, it)?;
        let [a, b] = &mut own;
        let (old, new) = if it % 2 == 0 { (&*a, b) } else { (&*b, a) };
        let old = old.as_f64s();
        // The units of the new buffer each core computes: core 0 the two
        // edge units first (their WRITEs then overlap the interior), then
        // every core its slab of the interior.
        let mut edges = Vec::new();
        let mut parts: Vec<Units> = (0..workers).map(|_| Vec::new()).collect();
        for (k, cells) in (s.lo..s.hi).zip(new.as_mut_f64s().chunks_mut(u)) {
            if k == s.lo || k == s.hi - 1 {
                edges.push((k, cells));
            } else if let Some(part) = (0..workers)
                .position(|c| slab(interior.clone(), c, workers).contains(&k))
                .and_then(|c| parts.get_mut(c))
            {
                part.push((k, cells));
            }
        }
        let edges = spin::Mutex::new(edges);
        let parts: Vec<spin::Mutex<Units>> = parts.into_iter().map(spin::Mutex::new).collect();
        let compute = AtomicU64::new(0);
        let result: spin::Mutex<Option<Result<Measured, String>>> = spin::Mutex::new(None);
        smp::on_each_core(|core| {
            let t = time::now();
            let mut posted = Ok(Vec::new());
            if core == 0 {
                let mut edges = core::mem::take(&mut *edges.lock());
                for (k, out) in edges.iter_mut() {
                    s.sweep(&around, old, *k, out);
                }
                if let (Some(first), Some(last)) = (edges.first(), edges.last()) {
                    let units = [&*first.1, &*last.1];
                    posted = exchange
                        .lock()
                        .post(&s, &neighbours, it, &mut sends.lock(), units);
                }
            }
            if let Some(part) = parts.get(core) {
                for (k, out) in core::mem::take(&mut *part.lock()) {
                    s.sweep(&around, old, k, out);
                }
            }
            let spent = t.elapsed();
            compute.fetch_max(spent.as_nanos() as u64, Ordering::Relaxed);
            if core == 0 {
                let before = rdma.pages_ready();
                let w = time::now();
                let faults = posted.and_then(|p| {
                    exchange
                        .lock()
                        .finish(&neighbours, it, p, &mut sends.lock())
                });
                let waited = w.elapsed();
                *result.lock() =
                    Some(faults.map(|f| (spent, waited, f, rdma.pages_ready() - before)));
            }
            barrier.wait();
        });
        *measured = result
            .into_inner()
            .unwrap_or_else(|| Err("core 0 did not run".into()))?;
        measured.0 = Duration::from_nanos(compute.load(Ordering::Relaxed));
    }
    let wall = start.elapsed();
    let checksum = fold_checksum(&s, &own, iterations, &mut exchange.into_inner())?;
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
    own: &[Region; 2],
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
    let final_buffer = own[iterations % 2].as_f64s();
    for k in s.lo..s.hi {
        c = c.fold(s.unit(final_buffer, k));
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
