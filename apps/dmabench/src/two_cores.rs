//! Two cores waiting on DMA at once: each reads the pattern area into a
//! fresh (cold) region of its own under `FaultAware`, so both transfers
//! fault page by page, and both cores run the DMA service while they wait.
//! Each core resolves the faults it drained (outside the service's lock),
//! so the faults resolved per core show more than one core at work. Every
//! byte is checked.
//!
//! ```text
//!  core 0: dma::run(read 4 MiB → region 0) ┐ both wait in dma::wait:
//!  core 1: dma::run(read 4 MiB → region 1) ┘ service → drain, claim,
//!                                             resolve, resolved
//!  → fault_counters().resolved_by_core, before and after
//! ```

extern crate alloc;

use alloc::string::String;
use alloc::vec::Vec;
use libos::dma::{self, Direction, EngineId, Policy, Transfer};
use libos::mm::Region;
use libos::{println, smp};

use crate::cell::{disk_pattern, READ_AREA};

/// Bytes each core reads.
const SIZE: usize = 4 << 20;

/// One core's region: before its transfer, while the core holds it, and
/// after, with the faults the transfer took.
enum Slot {
    Region(Region),
    Taken,
    Done(Region, Result<u64, dma::TransferError>),
}

/// Runs the two reads at once and prints what each core resolved. Err if a
/// transfer failed or a byte differs.
pub fn run(engine: EngineId) -> Result<(), String> {
    if smp::cores() < 2 {
        println!("dmabench: two cores waiting on DMA: needs two cores, skipped");
        return Ok(());
    }
    // Each core takes its own region out for its transfer, and puts it
    // back with the outcome.
    let mut slots = Vec::new();
    let mut grants = Vec::new();
    for _ in 0..2 {
        let r = Region::demand_zero(SIZE).map_err(|e| alloc::format!("region: {e:?}"))?;
        grants.push(
            dma::grant(engine, r.range(), dma::Rights::ReadWrite)
                .map_err(|e| alloc::format!("grant: {e:?}"))?,
        );
        slots.push(libos::sync::IrqSpinLock::new(Slot::Region(r)));
    }
    let before = dma::fault_counters().resolved_by_core;
    let ready = smp::Barrier::new(smp::cores());
    smp::on_each_core(|core| {
        ready.wait();
        let Some(slot) = slots.get(core) else {
            return;
        };
        let Slot::Region(mut region) = core::mem::replace(&mut *slot.lock(), Slot::Taken) else {
            return;
        };
        let transfer = Transfer::contiguous(
            Direction::FromDevice,
            region.range(),
            READ_AREA,
            Policy::FaultAware,
        );
        let result = dma::run_on(engine, &mut region, transfer).map(|r| r.stats.faults);
        *slot.lock() = Slot::Done(region, result);
    });
    let after = dma::fault_counters().resolved_by_core;
    drop(grants);
    let mut faults = Vec::new();
    for (core, slot) in slots.iter().enumerate() {
        let region = match core::mem::replace(&mut *slot.lock(), Slot::Taken) {
            Slot::Done(region, Ok(n)) => {
                faults.push(n);
                region
            }
            Slot::Done(_, Err(e)) => return Err(alloc::format!("core {core}: {e}")),
            _ => return Err(alloc::format!("core {core} did not run")),
        };
        let bad = (region.as_slice().iter().enumerate())
            .filter(|&(i, &b)| b != disk_pattern(READ_AREA as usize + i))
            .count();
        if bad > 0 {
            return Err(alloc::format!("core {core}: {bad} corrupted bytes"));
        }
    }
    let resolved: Vec<u64> = after.iter().zip(before).map(|(a, b)| a - b).collect();
    println!(
        "dmabench: two cores waiting on DMA ({} KiB cold each, faults {:?}): device faults resolved by core {:?}",
        SIZE >> 10,
        faults,
        resolved
    );
    Ok(())
}
