//! `dmabench`: NVMe reads and writes straight from and to application
//! virtual memory, under the four DMA policies side by side in one run, for
//! cold, warm, sparse and memory-pressure buffers. Prints a table with
//! ratios against `pin`, then the same rows as CSV between `---- csv ----`
//! markers (bench/dmabench.sh turns them into a file and a plot).
//!
//! Arguments: `quick` (4 KiB..1 MiB), `full` (4 KiB..64 MiB), or sizes in
//! KiB; by default 4 KiB..16 MiB. `costs` prints the cost of one fault and
//! one submission instead (see [`costs`]); `fault-scaling` the demand
//! faults two cores resolve at once against one (see [`scaling`]). After
//! the table, two cores wait on cold DMA reads at once and the device
//! faults each core resolved are printed (see [`two_cores`]).
//!
//! On a board with no NVMe but the ZynqMP's ZDMA (zcu102), it compares
//! ZDMA copies under `pin` with the CPU's instead (see [`zdma`]); there
//! `quick` and the default are 4 KiB, 64 KiB and 1 MiB.
#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

mod cell;
mod costs;
mod paired;
mod report;
mod scaling;
mod two_cores;
mod zdma;

use alloc::vec::Vec;
use cell::{Scenario, Spec};
use libos::dma::{Direction, Policy};
use libos::println;

libos::main!(main);

/// The policies, `pin` first: ratios are against it.
pub const POLICIES: [Policy; 4] = [
    Policy::Pin,
    Policy::Prefault,
    Policy::FaultAware,
    Policy::FaultAwarePrefetch,
];

/// The sizes the arguments ask for; `default` (KiB) when they name none.
fn sizes(args: &libos::Args, default: &[usize]) -> Result<Vec<usize>, &'static str> {
    if args.contains("quick") {
        return Ok([4, 64, 1024].iter().map(|k| k << 10).collect());
    }
    if args.contains("full") {
        return Ok([4, 64, 1024, 16 << 10, 64 << 10]
            .iter()
            .map(|k| k << 10)
            .collect());
    }
    let explicit: Vec<usize> = args
        .iter()
        .filter_map(|a| a.parse::<usize>().ok())
        .map(|k| k << 10)
        .collect();
    if !explicit.is_empty() {
        if explicit
            .iter()
            .any(|&s| s == 0 || s % 4096 != 0 || s > 64 << 20)
        {
            return Err("sizes are KiB, multiples of 4, at most 65536");
        }
        return Ok(explicit);
    }
    Ok(default.iter().map(|k| k << 10).collect())
}

/// The usage line, printed with why the arguments were refused.
const USAGE: &str = "usage: dmabench [quick | full | costs | fault-scaling | SIZE_KIB...]";

/// The ZDMA benchmark, on a board with no NVMe (see [`zdma`]).
fn zdma_main(engine: libos::dma::EngineId, args: &libos::Args) -> i32 {
    if args.contains("costs") || args.contains("fault-scaling") {
        println!("dmabench: costs and fault-scaling need NVMe; run them on qemu-virt");
        return 1;
    }
    match sizes(args, &[4, 64, 1024]) {
        Ok(sizes) => zdma::run(engine, &sizes),
        Err(e) => {
            println!("{USAGE}: {e}");
            2
        }
    }
}

fn main(args: libos::Args) -> i32 {
    let (engine, info) = match libos::dma::nvme() {
        Ok(found) => found,
        Err(e) => match libos::dma::zdma() {
            Ok(engine) => return zdma_main(engine, &args),
            Err(_) => {
                println!("dmabench: no NVMe engine ({e:?}) and no ZDMA; run it on qemu-virt");
                return 1;
            }
        },
    };
    println!(
        "dmabench: NVMe {} MiB, {}-byte blocks, {} KiB per command",
        info.capacity >> 20,
        info.block_size,
        info.max_transfer >> 10
    );
    if args.contains("fault-scaling") {
        return match scaling::run() {
            Ok(()) => 0,
            Err(e) => {
                println!("dmabench: fault-scaling: {e}");
                1
            }
        };
    }
    if args.contains("costs") {
        return match costs::run(engine) {
            Ok(()) => 0,
            Err(e) => {
                println!("dmabench: costs: {e}");
                1
            }
        };
    }
    let sizes = match sizes(&args, &[4, 64, 1024, 16 << 10]) {
        Ok(s) => s,
        Err(e) => {
            println!("{USAGE}: {e}");
            return 2;
        }
    };
    let started = libos::time::now();
    let mut bench = match cell::Bench::new(engine, info) {
        Ok(b) => b,
        Err(e) => {
            println!("dmabench: setup failed: {e}");
            return 1;
        }
    };
    log::info!(
        "pattern area written in {} ms; irqs 35..39: {:?}, smmu {} {}",
        started.elapsed().as_millis(),
        (35..39).map(libos::irq::taken).collect::<Vec<_>>(),
        libos::irq::taken(106),
        libos::irq::taken(109)
    );
    let mut rows = Vec::new();
    for scenario in [
        Scenario::Warm,
        Scenario::Cold,
        Scenario::Sparse,
        Scenario::Pressure,
    ] {
        for direction in [Direction::FromDevice, Direction::ToDevice] {
            for &size in &sizes {
                for policy in POLICIES {
                    let spec = Spec {
                        scenario,
                        direction,
                        size,
                        policy,
                    };
                    let started = libos::time::now();
                    match bench.run(&spec) {
                        Ok(row) => {
                            log::info!(
                                "{} {:?} {} KiB {}: {} ms",
                                scenario.name(),
                                direction,
                                size >> 10,
                                policy.name(),
                                started.elapsed().as_millis()
                            );
                            rows.push(row)
                        }
                        Err(e) => {
                            println!("dmabench: {spec:?} failed: {e}");
                            return 1;
                        }
                    }
                }
            }
        }
    }
    report::table(&rows);
    let first_byte = bench.time_to_first_byte(1 << 30);
    report::first_byte(&first_byte);
    report::fault_cost(&rows);
    if let Err(e) = two_cores::run(engine) {
        println!("dmabench: two cores waiting on DMA failed: {e}");
        return 1;
    }
    let largest = sizes.iter().copied().max().unwrap_or(0);
    let pairs = match paired_targets(engine, &bench, largest) {
        Ok(p) => p,
        Err(e) => {
            println!("dmabench: back-to-back pairs failed: {e}");
            return 1;
        }
    };
    report::targets(&rows, &first_byte, &pairs);
    report::csv(&rows);
    println!("corrupted bytes: {}", bench.corrupted_bytes());
    if bench.corrupted_bytes() == 0 {
        0
    } else {
        1
    }
}

/// The targets' back-to-back pairs at `size`, reads and writes: warm, and
/// the fresh-memory scenarios with the policies their targets name.
fn paired_targets(
    engine: libos::dma::EngineId,
    bench: &cell::Bench,
    size: usize,
) -> Result<report::PairedTargets, alloc::string::String> {
    let fresh = [
        (Scenario::Cold, Policy::FaultAwarePrefetch),
        (Scenario::Sparse, Policy::FaultAware),
        (Scenario::Sparse, Policy::FaultAwarePrefetch),
    ];
    let mut pairs = report::PairedTargets::default();
    for direction in [Direction::FromDevice, Direction::ToDevice] {
        let disk = bench.disk_area(direction);
        let warm = paired::warm(engine, size, direction, disk)?;
        pairs.warm.push((direction, warm));
        for (scenario, policy) in fresh {
            let f = paired::Fresh {
                engine,
                scenario,
                size,
                direction,
                disk,
            };
            let p = paired::fresh(f, policy)?;
            pairs.fresh.push((scenario, direction, policy, p));
        }
    }
    Ok(pairs)
}
