//! `dmabench fault-scaling`: demand faults resolved per second by one core
//! and by two cores at once on disjoint pages, side by side in one run
//! (rounds alternate which goes first; the median ratio is reported). Each
//! core writes the first byte of every page of a fresh region of its own,
//! so every write is a 4 KiB demand fault. Needs `--smp 2` and real
//! parallel vCPUs (not `-icount`, which runs them one at a time).
//!
//! ```text
//!  round: one core: core 0 faults N pages          → t1
//!         two cores: cores 0 and 1 fault N each    → t2 (the slower core)
//!  ratio = (2N / t2) / (N / t1)   (target >= 1.8)
//! ```

extern crate alloc;

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};
use libos::mm::{Region, FRAME_SIZE};
use libos::sync::IrqSpinLock;
use libos::{println, smp, time};

/// Pages each core faults per measurement (16 MiB).
const PAGES: usize = 4096;
/// Rounds (each measures both ways).
const ROUNDS: usize = 7;

/// Faults every page of a fresh region on each of the first `cores` cores
/// at once; the longest core's time in nanoseconds.
fn fault_on(cores: usize) -> Result<u64, alloc::string::String> {
    // Each core takes its own region out for the run, and puts it back.
    let mut regions = Vec::new();
    for _ in 0..cores {
        let region =
            Region::demand_zero(PAGES * FRAME_SIZE).map_err(|e| alloc::format!("region: {e:?}"))?;
        regions.push(IrqSpinLock::new(Some(region)));
    }
    let slowest = AtomicU64::new(0);
    let ready = smp::Barrier::new(smp::cores());
    smp::on_each_core(|core| {
        ready.wait();
        let Some(slot) = regions.get(core) else {
            return;
        };
        let Some(mut region) = slot.lock().take() else {
            return;
        };
        let t = time::now();
        for i in 0..PAGES {
            region.touch(i * FRAME_SIZE, 1);
        }
        slowest.fetch_max(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        *slot.lock() = Some(region);
    });
    drop(regions);
    Ok(slowest.load(Ordering::Relaxed))
}

/// Runs the rounds and prints each ratio and their median.
pub fn run() -> Result<(), alloc::string::String> {
    if smp::cores() < 2 {
        return Err("fault-scaling needs two cores (--smp 2)".into());
    }
    let mut ratios = Vec::new();
    for round in 0..ROUNDS {
        let (t1, t2) = if round % 2 == 0 {
            let t1 = fault_on(1)?;
            (t1, fault_on(2)?)
        } else {
            let t2 = fault_on(2)?;
            (fault_on(1)?, t2)
        };
        let one = PAGES as f64 / t1 as f64;
        let two = 2.0 * PAGES as f64 / t2 as f64;
        println!(
            "fault-scaling: round {round}: one core {:.0} faults/ms, two cores {:.0} faults/ms: {:.2}x",
            one * 1e6,
            two * 1e6,
            two / one
        );
        ratios.push(two / one);
    }
    ratios.sort_by(f64::total_cmp);
    let median = ratios[ratios.len() / 2];
    let verdict = if median >= 1.8 { "met" } else { "NOT MET" };
    println!(
        "fault-scaling: two cores resolve {median:.2}x the faults per second of one (median of {ROUNDS}; target >= 1.8) {verdict}"
    );
    Ok(())
}
