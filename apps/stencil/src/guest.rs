//! The guest side: arguments, grids in demand-zero regions, one slab of
//! rows (planes in 3D) per core, one job on every core per iteration,
//! ending at a barrier.

extern crate alloc;

use alloc::vec::Vec;
use core::ops::Range;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use core::time::Duration;
use libos::mm::Region;
use libos::{println, smp, time};
use stencil::{checksum, set_unit_boundary, slab, sweep_into, unit_cells, Dims};

libos::main!(main);

const USAGE: &str = "usage: stencil NX NY ITERS [scaling|halo-bench] | stencil NX NY NZ ITERS --3d [scaling|halo-bench]\n(with --nodes N the grid is split across the nodes; halo-bench compares fault-aware and pinned ghost units)";

fn parse(args: &libos::Args) -> Option<(Dims, usize, bool)> {
    let numbers: Vec<usize> = args
        .iter()
        .filter(|a| !a.starts_with("--") && *a != "scaling" && *a != "halo-bench")
        .map(|a| a.parse().ok())
        .collect::<Option<_>>()?;
    let three_d = args.contains("--3d");
    let (d, iterations) = match (three_d, numbers.as_slice()) {
        (false, [nx, ny, it]) => (stencil::dims(*nx, *ny, None).ok()?, *it),
        (true, [nx, ny, nz, it]) => (stencil::dims(*nx, *ny, Some(*nz)).ok()?, *it),
        _ => return None,
    };
    (iterations > 0).then_some((d, iterations, args.contains("scaling")))
}

/// What one run measured.
struct Timing {
    /// From the start of the job to the last barrier.
    wall: Duration,
    /// Each core's time in `sweep` (not waiting at barriers).
    busy: Vec<Duration>,
    /// Wall time of each iteration, barrier to barrier.
    iterations: Vec<Duration>,
}

impl Timing {
    /// The first iteration, which takes the demand faults of the interior.
    fn first(&self) -> Duration {
        self.iterations[0]
    }

    /// The median iteration after the first: the steady state, which a
    /// host thread descheduled for a moment or a TLB still growing in the
    /// first iterations does not move much.
    fn steady(&self) -> Duration {
        let mut rest: Vec<Duration> = self.iterations[1.min(self.iterations.len() - 1)..].to_vec();
        rest.sort_unstable();
        rest[rest.len() / 2]
    }
}

/// Runs `iterations` sweeps with `workers` cores (the others idle): one
/// job a core per iteration, each core writing the chunks of the new grid
/// it takes (see [`Chunks`]) while all read the old one.
fn run(d: &Dims, iterations: usize, workers: usize, a: &mut Region, b: &mut Region) -> Timing {
    let cells = d.cells();
    let mut grids = [&mut a.as_mut_f64s()[..cells], &mut b.as_mut_f64s()[..cells]];
    let busy: Vec<AtomicU64> = (0..smp::cores()).map(|_| AtomicU64::new(0)).collect();
    let chunks = Chunks::new(d.work_units(), workers, iterations);
    // Passed at the end of every job, as its phases end: it sizes each
    // vCPU's TLB (see `libos::smp::Barrier`).
    let barrier = smp::Barrier::new(workers);
    let start = time::now();
    first_touch(d, &mut grids, workers, &barrier);
    let begin = time::now();
    let mut ends = Vec::with_capacity(iterations);
    for it in 0..iterations {
        let [a, b] = &mut grids;
        let (old, new): (&[f64], &mut [f64]) = if it % 2 == 0 { (a, b) } else { (b, a) };
        let taken = chunks.split(d, new);
        smp::on_each_core(|core| {
            if core >= workers {
                return;
            }
            let t = time::now();
            while let Some((units, out)) = chunks.next(it, &taken) {
                sweep_into(d, old, out, units);
            }
            busy[core].fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
            barrier.wait();
        });
        ends.push(begin.elapsed().as_nanos() as u64);
    }
    let wall = start.elapsed();
    Timing {
        wall,
        busy: busy
            .iter()
            .take(workers)
            .map(|b| Duration::from_nanos(b.load(Ordering::Relaxed)))
            .collect(),
        iterations: ends
            .iter()
            .scan(0, |prev, &end| {
                let d = Duration::from_nanos(end - *prev);
                *prev = end;
                Some(d)
            })
            .collect(),
    }
}

/// The work units of each iteration, handed out a chunk at a time to
/// whichever core asks next (dynamic scheduling).
///
/// Why not fixed slabs: the vCPUs of one QEMU do not run at the same speed
/// (each is a host thread, and the host's cores are shared; one vCPU was
/// measured sweeping the same slab 1.3-1.7x slower than the other, either
/// one, changing between runs), and with fixed slabs every iteration waits
/// for the slowest core. With chunks a core that runs fast takes more of
/// them. The result is the same bit for bit: each unit is computed from
/// the previous grid only, whoever computes it.
struct Chunks {
    units: Range<usize>,
    size: usize,
    /// The next chunk of each iteration.
    next: Vec<AtomicUsize>,
}

/// The cells of one chunk, until a core takes them.
type Slot<'g> = spin::Mutex<Option<&'g mut [f64]>>;

/// Chunks per core and iteration: enough to even out a slower core, few
/// enough that a core keeps long runs of neighbouring units.
const CHUNKS_PER_CORE: usize = 8;

impl Chunks {
    fn new(units: Range<usize>, workers: usize, iterations: usize) -> Self {
        let size = units.len().div_ceil(workers * CHUNKS_PER_CORE).max(1);
        Chunks {
            units,
            size,
            next: (0..iterations).map(|_| AtomicUsize::new(0)).collect(),
        }
    }

    /// The cells of `new` each chunk writes, one slot a chunk.
    fn split<'g>(&self, d: &Dims, new: &'g mut [f64]) -> Vec<Slot<'g>> {
        let unit = unit_cells(d);
        let cells = &mut new[self.units.start * unit..self.units.end * unit];
        cells
            .chunks_mut(self.size * unit)
            .map(|c| spin::Mutex::new(Some(c)))
            .collect()
    }

    /// The next chunk of iteration `it` nobody has taken, if any is left:
    /// its units and its cells, out of `slots` (from [`Chunks::split`]).
    fn next<'g>(&self, it: usize, slots: &[Slot<'g>]) -> Option<(Range<usize>, &'g mut [f64])> {
        loop {
            let k = self.next[it].fetch_add(1, Ordering::Relaxed);
            let start = self.units.start + k.checked_mul(self.size)?;
            if start >= self.units.end {
                return None;
            }
            // Each k is handed out once, so its slot is full.
            if let Some(cells) = slots.get(k)?.lock().take() {
                return Some((start..(start + self.size).min(self.units.end), cells));
            }
        }
    }
}

/// The units a core initialises: its slab, plus the fixed first unit for
/// the first core and the fixed last unit for the last one.
fn owned_units(d: &Dims, slab: Range<usize>, core: usize, workers: usize) -> Range<usize> {
    let all = d.work_units();
    let start = if core == 0 { all.start - 1 } else { slab.start };
    let end = if core + 1 == workers {
        all.end + 1
    } else {
        slab.end
    };
    start..end
}

/// Units of a grid and their cells, for the core that owns them.
type Part<'g> = (Range<usize>, &'g mut [f64]);

/// Writes the boundary values into both grids, each core the units it
/// owns ([`owned_units`]): the grids' demand faults are taken by all cores
/// at once rather than one after the other on core 0.
fn first_touch(d: &Dims, grids: &mut [&mut [f64]; 2], workers: usize, barrier: &smp::Barrier) {
    let unit = unit_cells(d);
    // Each core's units, of both grids, in a slot it empties.
    let mut parts: Vec<Vec<Part>> = (0..workers).map(|_| Vec::new()).collect();
    for grid in grids.iter_mut() {
        let mut rest: &mut [f64] = grid;
        for (core, part) in parts.iter_mut().enumerate() {
            let units = owned_units(d, slab(d.work_units(), core, workers), core, workers);
            let (mine, after) = core::mem::take(&mut rest).split_at_mut(units.len() * unit);
            part.push((units, mine));
            rest = after;
        }
    }
    let parts: Vec<spin::Mutex<Vec<Part>>> = parts.into_iter().map(spin::Mutex::new).collect();
    smp::on_each_core(|core| {
        let Some(part) = parts.get(core) else {
            return;
        };
        for (units, cells) in core::mem::take(&mut *part.lock()) {
            for (u, cells) in units.zip(cells.chunks_mut(unit)) {
                set_unit_boundary(d, u, cells);
            }
        }
        barrier.wait();
    });
}

fn main(args: libos::Args) -> i32 {
    let Some((d, iterations, scaling)) = parse(&args) else {
        println!("{USAGE}");
        return 2;
    };
    if let Ok(rdma) = libos::rdma::open() {
        if rdma.nodes() > 1 {
            return across_nodes(d, iterations, &rdma, args.contains("halo-bench"));
        }
    }
    let bytes = d.cells() * 8;
    let cores = smp::cores();
    println!(
        "stencil: {}x{}x{} grid ({} MiB x2), {} iterations, {} cores",
        d.nx,
        d.ny,
        d.nz,
        bytes >> 20,
        iterations,
        cores
    );
    // With `scaling`, rounds of 1, 2, ... cores one after the other, so
    // that a slow spell of the host weighs on every core count alike.
    let (rounds, counts) = if scaling {
        (SCALING_ROUNDS, (1..=cores).collect())
    } else {
        (1, alloc::vec![cores])
    };
    let mut speedups: Vec<Vec<f64>> = alloc::vec![Vec::new(); cores + 1];
    let mut result = None;
    for round in 0..rounds {
        let mut base = None;
        for &workers in &counts {
            // Fresh demand-zero grids for every run: the interior starts as
            // the zeros of never-touched pages.
            let (Ok(mut a), Ok(mut b)) = (Region::demand_zero(bytes), Region::demand_zero(bytes))
            else {
                println!("stencil: no room for two grids of {} MiB", bytes >> 20);
                return 1;
            };
            let timing = run(&d, iterations, workers, &mut a, &mut b);
            let final_grid = if iterations % 2 == 0 { &a } else { &b };
            let c = checksum(&final_grid.as_f64s()[..d.cells()]);
            report(&d, iterations, workers, &timing);
            let steady = timing.steady().as_secs_f64().max(1e-9);
            let base = *base.get_or_insert(steady);
            if scaling && workers > 1 {
                println!(
                    "  speedup over 1 core: {:.2}x (steady state)",
                    base / steady
                );
                speedups[workers].push(base / steady);
            }
            if result.is_some_and(|r| r != c) {
                println!("stencil: checksum changed with {workers} cores (round {round})");
                return 1;
            }
            result = Some(c);
        }
    }
    for (workers, s) in speedups
        .iter_mut()
        .enumerate()
        .filter(|(_, s)| !s.is_empty())
    {
        s.sort_unstable_by(f64::total_cmp);
        println!(
            "scaling: {workers} cores: speedup {:.2}x (median of {} rounds, steady state), efficiency {:.0}% of {workers} vCPUs",
            s[s.len() / 2],
            s.len(),
            s[s.len() / 2] / workers as f64 * 100.0
        );
    }
    let c = result.expect("ran at least once");
    println!("checksum: sum {:.17e} hash {:016x}", c.sum, c.hash);
    0
}

/// Rounds of 1..=cores runs in `scaling` mode.
const SCALING_ROUNDS: usize = 5;

/// Prints one run: totals, the first and the steady-state iteration, and
/// each core's compute time.
fn report(d: &Dims, iterations: usize, workers: usize, t: &Timing) {
    let secs = t.wall.as_secs_f64().max(1e-9);
    let mcells = (d.interior() * iterations) as f64 / secs / 1e6;
    println!(
        "cores {workers}: {:.1} ms, {:.3} ms/iteration, {:.1} Mcells/s, {:.3} GFLOP/s; first iteration {:.3} ms, steady state {:.3} ms/iteration",
        secs * 1e3,
        secs * 1e3 / iterations as f64,
        mcells,
        mcells * d.flops_per_cell() as f64 / 1e3,
        t.first().as_secs_f64() * 1e3,
        t.steady().as_secs_f64() * 1e3,
    );
    for (core, busy) in t.busy.iter().enumerate() {
        println!(
            "  core {core}: {:.1} ms computing",
            busy.as_secs_f64() * 1e3
        );
    }
}

/// The multi-node run (see `distributed`): fault-aware halos, and with
/// `halo-bench` also pinned ones, side by side.
fn across_nodes(d: Dims, iterations: usize, rdma: &libos::rdma::Rdma, bench: bool) -> i32 {
    use crate::distributed::{interleaved_steady, report, run, Halo, WARM_UP};
    println!(
        "stencil: {}x{}x{} grid, {} iterations, node {} of {}, {} cores per node",
        d.nx,
        d.ny,
        d.nz,
        iterations,
        rdma.rank(),
        rdma.nodes(),
        smp::cores()
    );
    // Both modes interleaved in one run for the steady state (which also
    // warms QEMU up: its first run in a fresh process translates code and
    // grows TLBs), then cold runs of each mode for the first iteration with
    // setup counted, in palindrome order so that a drift of the host's
    // speed weighs on both alike (each mode's two runs are averaged).
    let halos: &[Halo] = if bench {
        &[
            Halo::Interleaved,
            Halo::FaultAware,
            Halo::Pinned,
            Halo::Pinned,
            Halo::FaultAware,
        ]
    } else {
        &[Halo::FaultAware]
    };
    let mut results = Vec::new();
    let mut steady = None;
    for &halo in halos {
        let outcome = match run(d, iterations, rdma, halo) {
            Ok(o) => o,
            Err(e) => {
                println!("stencil: node {}: {e}", rdma.rank());
                return 1;
            }
        };
        report(rdma.rank(), halo, &outcome);
        if halo == Halo::Interleaved {
            steady = Some(interleaved_steady(&outcome));
        }
        results.push((halo, outcome.setup + outcome.first(), outcome.checksum));
    }
    if let Some((fa, pinned, ratio)) = steady {
        let first = |mode: Halo| {
            let runs: Vec<Duration> = results
                .iter()
                .filter(|r| r.0 == mode)
                .map(|r| r.1)
                .collect();
            runs.iter().sum::<Duration>() / runs.len().max(1) as u32
        };
        println!(
            "node {} halo-bench: first iteration (setup included) fault-aware {:.3} ms, pinned {:.3} ms: {:.2}x time; steady state (interleaved, iterations {WARM_UP}..) fault-aware {:.3} ms, pinned {:.3} ms; median over neighbouring pairs pinned/fault-aware {:.3}x speed (target >= 0.98)",
            rdma.rank(),
            first(Halo::FaultAware).as_secs_f64() * 1e3,
            first(Halo::Pinned).as_secs_f64() * 1e3,
            first(Halo::FaultAware).as_secs_f64() / first(Halo::Pinned).as_secs_f64().max(1e-9),
            fa.as_secs_f64() * 1e3,
            pinned.as_secs_f64() * 1e3,
            ratio
        );
    }
    if let Some((_, _, Some(c))) = results.first() {
        if results.iter().any(|r| r.2.is_some_and(|x| x != *c)) {
            println!("stencil: checksums differ between halo modes");
            return 1;
        }
        println!("checksum: sum {:.17e} hash {:016x}", c.sum, c.hash);
    }
    0
}
