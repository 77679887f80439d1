//! The guest side: arguments, grids in demand-zero regions, one slab of
//! rows (planes in 3D) per core, a barrier per iteration.

extern crate alloc;

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use core::time::Duration;
use libos::mm::Region;
use libos::{println, smp, time};
use stencil::{checksum, set_boundary, slab, sweep, Dims};

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

/// A sense-reversing barrier for the cores of one `on_each_core` job.
pub(crate) struct Barrier {
    waiting: AtomicUsize,
    generation: AtomicUsize,
    parties: usize,
}

impl Barrier {
    /// A barrier for `parties` cores.
    pub(crate) fn new(parties: usize) -> Self {
        Barrier {
            waiting: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            parties,
        }
    }

    /// Returns once all parties have called it.
    pub(crate) fn wait(&self) {
        let generation = self.generation.load(Ordering::Acquire);
        if self.waiting.fetch_add(1, Ordering::AcqRel) + 1 == self.parties {
            self.waiting.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
        } else {
            while self.generation.load(Ordering::Acquire) == generation {
                core::hint::spin_loop();
            }
        }
    }
}

/// Runs `iterations` sweeps with `workers` cores (the others idle) and
/// returns the wall time and each core's compute time.
fn run(
    d: &Dims,
    iterations: usize,
    workers: usize,
    a: &mut Region,
    b: &mut Region,
) -> (Duration, Vec<Duration>) {
    let cells = d.cells();
    let (a, b) = (as_f64(a, cells), as_f64(b, cells));
    set_boundary(d, a);
    set_boundary(d, b);
    let grids = [SharedGrid(a.as_mut_ptr()), SharedGrid(b.as_mut_ptr())];
    let barrier = Barrier::new(workers);
    let busy: Vec<AtomicU64> = (0..smp::cores()).map(|_| AtomicU64::new(0)).collect();
    let start = time::now();
    smp::on_each_core(|core| {
        if core >= workers {
            return;
        }
        let units = slab(d.work_units(), core, workers);
        for it in 0..iterations {
            let t = time::now();
            let (old, new) = (grids[it % 2].get(cells), grids[(it + 1) % 2].get(cells));
            sweep(d, old, new, units.clone());
            busy[core].fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
            barrier.wait();
        }
    });
    let wall = start.elapsed();
    (
        wall,
        busy.iter()
            .take(workers)
            .map(|b| Duration::from_nanos(b.load(Ordering::Relaxed)))
            .collect(),
    )
}

/// Base pointer of a grid shared by the cores of one job.
#[derive(Clone, Copy)]
struct SharedGrid(*mut f64);

// SAFETY: the grids outlive the job (`run` joins before returning), and the
// cores write disjoint slabs of the new grid while only reading the old one,
// with a barrier between iterations; see `get`.
unsafe impl Sync for SharedGrid {}

impl SharedGrid {
    /// The grid as a slice. Each core writes only its own slab of the grid it
    /// treats as new, no core writes the grid others read in the same
    /// iteration, and the barrier orders one iteration's writes before the
    /// next one's reads.
    #[allow(clippy::mut_from_ref)]
    fn get(&self, cells: usize) -> &mut [f64] {
        // SAFETY: see the type's SAFETY comment; the pointer covers `cells`
        // f64 of a live region.
        unsafe { core::slice::from_raw_parts_mut(self.0, cells) }
    }
}

fn as_f64(region: &mut Region, cells: usize) -> &mut [f64] {
    let bytes = &mut region.as_mut_slice()[..cells * 8];
    // SAFETY: regions are page-aligned, zeroed memory is a valid f64 (0.0),
    // and the slice borrows the region exclusively.
    unsafe { core::slice::from_raw_parts_mut(bytes.as_mut_ptr() as *mut f64, cells) }
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
    let counts: Vec<usize> = if scaling {
        (1..=cores).collect()
    } else {
        alloc::vec![cores]
    };
    let mut base = None;
    let mut result = None;
    for workers in counts {
        // Fresh demand-zero grids for every run: the interior starts as the
        // zeros of never-touched pages.
        let (Ok(mut a), Ok(mut b)) = (Region::demand_zero(bytes), Region::demand_zero(bytes))
        else {
            println!("stencil: no room for two grids of {} MiB", bytes >> 20);
            return 1;
        };
        let (wall, busy) = run(&d, iterations, workers, &mut a, &mut b);
        let final_grid = if iterations % 2 == 0 { &a } else { &b };
        let c = checksum(as_f64_ref(final_grid, d.cells()));
        let secs = wall.as_secs_f64().max(1e-9);
        let mcells = (d.interior() * iterations) as f64 / secs / 1e6;
        println!(
            "cores {workers}: {:.1} ms, {:.3} ms/iteration, {:.1} Mcells/s, {:.3} GFLOP/s",
            secs * 1e3,
            secs * 1e3 / iterations as f64,
            mcells,
            mcells * d.flops_per_cell() as f64 / 1e3
        );
        for (core, t) in busy.iter().enumerate() {
            println!("  core {core}: {:.1} ms computing", t.as_secs_f64() * 1e3);
        }
        let speedup = base.get_or_insert(secs);
        if workers > 1 {
            println!("  speedup over 1 core: {:.2}x", *speedup / secs);
        }
        if result.is_some_and(|r| r != c) {
            println!("stencil: checksum changed with {workers} cores");
            return 1;
        }
        result = Some(c);
    }
    let c = result.expect("ran at least once");
    println!("checksum: sum {:.17e} hash {:016x}", c.sum, c.hash);
    0
}

fn as_f64_ref(region: &Region, cells: usize) -> &[f64] {
    let bytes = &region.as_slice()[..cells * 8];
    // SAFETY: as in `as_f64`, read-only.
    unsafe { core::slice::from_raw_parts(bytes.as_ptr() as *const f64, cells) }
}

/// The multi-node run (see `distributed`): fault-aware halos, and with
/// `halo-bench` also pinned ones, side by side.
fn across_nodes(d: Dims, iterations: usize, rdma: &libos::rdma::Rdma, bench: bool) -> i32 {
    use crate::distributed::{report, run, Halo};
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
    // In palindrome order, so that neither mode always runs first (QEMU
    // gets faster during a run as it warms up); see the mean below.
    let halos: &[Halo] = if bench {
        &[
            Halo::FaultAware,
            Halo::Pinned,
            Halo::Pinned,
            Halo::FaultAware,
        ]
    } else {
        &[Halo::FaultAware]
    };
    let mut results = Vec::new();
    for &halo in halos {
        let outcome = match run(d, iterations, rdma, halo) {
            Ok(o) => o,
            Err(e) => {
                println!("stencil: node {}: {e}", rdma.rank());
                return 1;
            }
        };
        let steady = report(rdma.rank(), halo, &outcome);
        let first = outcome
            .iterations
            .first()
            .map_or(Duration::ZERO, |(c, w, _, _)| *c + *w);
        results.push((halo, first, steady, outcome.checksum));
    }
    if bench {
        // The mean of each mode's two runs: with the palindrome order a
        // steady drift of QEMU's speed during the run weighs on both alike.
        let best = |mode: Halo| {
            let runs: Vec<_> = results.iter().filter(|r| r.0 == mode).collect();
            let n = runs.len().max(1) as u32;
            let first = runs.iter().map(|r| r.1).sum::<Duration>() / n;
            let steady = runs.iter().map(|r| r.2).sum::<Duration>() / n;
            (first, steady)
        };
        let (fa_first, fa_steady) = best(Halo::FaultAware);
        let (pin_first, pin_steady) = best(Halo::Pinned);
        println!(
            "node {} halo-bench: first iteration fault-aware/pinned {:.2}x time, steady-state pinned/fault-aware {:.3}x speed (target >= 0.98)",
            rdma.rank(),
            fa_first.as_secs_f64() / pin_first.as_secs_f64().max(1e-9),
            pin_steady.as_secs_f64() / fa_steady.as_secs_f64().max(1e-9)
        );
    }
    if let Some((_, _, _, Some(c))) = results.first() {
        if results.iter().any(|r| r.3.is_some_and(|x| x != *c)) {
            println!("stencil: checksums differ between halo modes");
            return 1;
        }
        println!("checksum: sum {:.17e} hash {:016x}", c.sum, c.hash);
    }
    0
}
