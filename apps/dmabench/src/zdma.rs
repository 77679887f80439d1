//! The zcu102's benchmark: the ZynqMP's ZDMA copying memory to memory
//! against the CPU copying the same bytes, for warm and cold buffers.
//!
//! The ZDMA has no SMMU in front of it, so it reaches only pinned memory:
//! each copy pins its source by `Policy::Pin` and its destination by
//! `Region::pin`, and both pins are inside the timed span. The CPU copy is
//! `copy_from_slice`. Per cell, [`REPETITIONS`] copies of each, alternating
//! ZDMA and CPU, the median time of each reported.
//!
//! ```text
//!  warm: one source and one destination, resident, reused by every copy
//!  cold: a fresh source (filled, untimed) and a fresh destination
//!        (`Region::demand_zero`, untouched) for every copy: the copy's
//!        pinning or its stores fault the destination's pages in
//! ```
//!
//! Every copy is checked byte for byte against the pattern written for it
//! (a new pattern per copy, so a copy that did not happen cannot pass for
//! the last one). Then the three policies other than `pin` are submitted
//! once each, and must be refused as needing an SMMU.

extern crate alloc;

use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;
use libos::dma::{self, EngineId, Policy, SubmitError, TransferError};
use libos::mm::Region;
use libos::println;
use libos::time;

/// Copies of each kind per table cell.
pub const REPETITIONS: usize = 9;

/// The table's header line.
pub const HEADER: &str = "buffers        size   zdma MB/s    cpu MB/s   zdma/cpu";

/// Warm (resident, reused) or cold (fresh for every copy) buffers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Buffers {
    Warm,
    Cold,
}

impl Buffers {
    fn name(self) -> &'static str {
        match self {
            Buffers::Warm => "warm",
            Buffers::Cold => "cold",
        }
    }
}

/// Who copies.
#[derive(Clone, Copy)]
enum Copier {
    Zdma(EngineId),
    Cpu,
}

/// The byte at offset `i` of the copy numbered `copy` (every byte differs
/// from the one of any other copy numbered below 256 apart).
fn pattern(i: usize, copy: usize) -> u8 {
    (i as u8).wrapping_mul(29) ^ (i >> 9) as u8 ^ copy as u8
}

fn err<E: core::fmt::Debug>(what: &'static str) -> impl Fn(E) -> String {
    move |e| alloc::format!("{what}: {e:?}")
}

/// The resident buffers warm copies reuse, `size` bytes or more.
struct Warm {
    src: Region,
    dst: Region,
}

impl Warm {
    fn new(size: usize) -> Result<Warm, String> {
        let mut src = Region::demand_zero(size).map_err(err("source"))?;
        let mut dst = Region::demand_zero(size).map_err(err("destination"))?;
        src.as_mut_slice().fill(1);
        dst.as_mut_slice().fill(1);
        Ok(Warm { src, dst })
    }
}

/// One copy of `size` bytes numbered `copy`: its time, and the bytes of the
/// destination that differ from the pattern.
fn copy_once(
    copier: Copier,
    buffers: Buffers,
    warm: &mut Warm,
    size: usize,
    copy: usize,
) -> Result<(Duration, usize), String> {
    let mut cold = None;
    let (src, dst) = match buffers {
        Buffers::Warm => (&mut warm.src, &mut warm.dst),
        Buffers::Cold => {
            let src = Region::demand_zero(size).map_err(err("source"))?;
            let dst = Region::demand_zero(size).map_err(err("destination"))?;
            let (src, dst) = cold.insert((src, dst));
            (src, dst)
        }
    };
    for (i, b) in src.as_mut_slice()[..size].iter_mut().enumerate() {
        *b = pattern(i, copy);
    }
    let started = time::now();
    match copier {
        Copier::Zdma(engine) => {
            dst.pin(0..size).map_err(err("pin"))?;
            let copied = dma::write(
                engine,
                &src.as_slice()[..size],
                dst.start() as u64,
                Policy::Pin,
            );
            dst.unpin(0..size).map_err(err("unpin"))?;
            copied.map_err(err("zdma copy"))?;
        }
        Copier::Cpu => dst.as_mut_slice()[..size].copy_from_slice(&src.as_slice()[..size]),
    }
    let took = started.elapsed();
    let wrong = dst.as_slice()[..size]
        .iter()
        .enumerate()
        .filter(|&(i, &b)| b != pattern(i, copy))
        .count();
    Ok((took, wrong))
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn mb_per_s(size: usize, took: Duration) -> f64 {
    size as f64 / took.as_secs_f64().max(1e-9) / 1e6
}

/// One row: ZDMA and CPU median times of `size`-byte copies; adds the
/// bytes the copies got wrong to `corrupted`.
fn cell(
    engine: EngineId,
    buffers: Buffers,
    warm: &mut Warm,
    size: usize,
    corrupted: &mut usize,
) -> Result<(Duration, Duration), String> {
    let (mut zdma, mut cpu) = (Vec::new(), Vec::new());
    for rep in 0..REPETITIONS {
        // Alternate which goes first, so drift weighs on both alike.
        let order = if rep % 2 == 0 {
            [Copier::Zdma(engine), Copier::Cpu]
        } else {
            [Copier::Cpu, Copier::Zdma(engine)]
        };
        for (k, copier) in order.into_iter().enumerate() {
            let (took, wrong) = copy_once(copier, buffers, warm, size, 2 * rep + k + 1)?;
            *corrupted += wrong;
            match copier {
                Copier::Zdma(_) => zdma.push(took),
                Copier::Cpu => cpu.push(took),
            }
        }
    }
    Ok((median(zdma), median(cpu)))
}

/// Submits one copy under each policy other than `pin`, printing how it
/// was refused; an error if one was not refused as needing an SMMU.
fn refusals(engine: EngineId, warm: &mut Warm) -> Result<(), String> {
    let mut wrong = 0;
    warm.dst.pin(0..4096).map_err(err("pin"))?;
    for policy in [
        Policy::Prefault,
        Policy::FaultAware,
        Policy::FaultAwarePrefetch,
    ] {
        let result = dma::write(
            engine,
            &warm.src.as_slice()[..4096],
            warm.dst.start() as u64,
            policy,
        );
        match result {
            Err(TransferError::Submit(e @ SubmitError::NeedsSmmu(p))) if p == policy => {
                println!("{}: refused: {e}", policy.name())
            }
            other => {
                println!(
                    "{}: not refused as needing an SMMU: {other:?}",
                    policy.name()
                );
                wrong += 1;
            }
        }
    }
    warm.dst.unpin(0..4096).map_err(err("unpin"))?;
    match wrong {
        0 => Ok(()),
        n => Err(alloc::format!("{n} policies not refused")),
    }
}

/// Runs the benchmark on the ZDMA channel `engine` for `sizes` (bytes,
/// multiples of 4 KiB) and prints the table, the corrupted bytes and the
/// refusals; the app's exit status.
pub fn run(engine: EngineId, sizes: &[usize]) -> i32 {
    println!(
        "dmabench: ZDMA (no SMMU): Policy::Pin with pinning timed, against the CPU's \
         copy_from_slice; median of {REPETITIONS}"
    );
    let largest = sizes.iter().copied().max().unwrap_or(4096).max(4096);
    let mut warm = match Warm::new(largest) {
        Ok(w) => w,
        Err(e) => {
            println!("dmabench: setup failed: {e}");
            return 1;
        }
    };
    let mut corrupted = 0;
    println!("{HEADER}");
    for buffers in [Buffers::Warm, Buffers::Cold] {
        for &size in sizes {
            match cell(engine, buffers, &mut warm, size, &mut corrupted) {
                Ok((zdma, cpu)) => {
                    let (z, c) = (mb_per_s(size, zdma), mb_per_s(size, cpu));
                    println!(
                        "{:<7} {:>7} KiB {:>11.1} {:>11.1} {:>10.3}",
                        buffers.name(),
                        size >> 10,
                        z,
                        c,
                        z / c
                    );
                }
                Err(e) => {
                    println!(
                        "dmabench: {} {} KiB failed: {e}",
                        buffers.name(),
                        size >> 10
                    );
                    return 1;
                }
            }
        }
    }
    println!("corrupted bytes: {corrupted}");
    let refused = refusals(engine, &mut warm);
    if let Err(e) = &refused {
        println!("dmabench: {e}");
    }
    if corrupted == 0 && refused.is_ok() {
        0
    } else {
        1
    }
}
