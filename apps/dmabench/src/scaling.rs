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
use libos::{println, smp, time};

/// Pages each core faults per measurement (16 MiB).
const PAGES: usize = 4096;
/// Rounds (each measures both ways).
const ROUNDS: usize = 7;

/// Faults every page of a fresh region on each of the first `cores` cores
/// at once; the longest core's time in nanoseconds.
fn fault_on(cores: usize) -> Result<u64, alloc::string::String> {
    let mut regions = Vec::new();
    for _ in 0..cores {
        regions.push(
            Region::demand_zero(PAGES * FRAME_SIZE).map_err(|e| alloc::format!("region: {e:?}"))?,
        );
    }
    let starts: Vec<usize> = regions.iter().map(|r| r.start()).collect();
    let slowest = AtomicU64::new(0);
    let ready = smp::Barrier::new(smp::cores());
    smp::on_each_core(|core| {
        ready.wait();
        let Some(&start) = starts.get(core) else {
            return;
        };
        let t = time::now();
        for i in 0..PAGES {
            // SAFETY: page `i` of this core's own region, which lives until
            // `fault_on` returns; nothing else touches it meanwhile.
            unsafe { core::ptr::write_volatile((start + i * FRAME_SIZE) as *mut u8, 1) };
        }
        slowest.fetch_max(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
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
