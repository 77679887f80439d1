//! Tests that use every core at once.

use crate::{check, Outcome};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use core::time::Duration;
use faultline_rng::Rng;
use libos::mm::{self, Region, FRAME_SIZE};
use libos::smp;

pub fn run_on_every_core() -> Outcome {
    let ran = AtomicU64::new(0);
    let calls = AtomicUsize::new(0);
    smp::on_each_core(|core| {
        ran.fetch_or(1 << core, Ordering::Relaxed);
        calls.fetch_add(1, Ordering::Relaxed);
        check_core_id(core);
    });
    let cores = smp::cores();
    check!(cores >= 2, "only {cores} core(s) online");
    check!(
        ran.load(Ordering::Relaxed) == (1 << cores) - 1,
        "mask {:#b}",
        ran.load(Ordering::Relaxed)
    );
    check!(
        calls.load(Ordering::Relaxed) == cores,
        "{} calls",
        calls.load(Ordering::Relaxed)
    );
    let mut ids: Vec<u64> = (0..cores).filter_map(smp::mpidr).collect();
    ids.sort();
    ids.dedup();
    check!(ids.len() == cores, "cores share an MPIDR: {ids:?}");
    libos::println!("selftest: {cores} cores took part");
    Ok(())
}

fn check_core_id(core: usize) {
    assert_eq!(
        core,
        smp::current(),
        "job ran on another core than it was told"
    );
}

pub fn demand_faults_on_all_cores() -> Outcome {
    const PAGES: usize = 512;
    let before = mm::stats();
    let region = Region::demand_zero(PAGES * FRAME_SIZE).map_err(|e| alloc::format!("{e}"))?;
    let words = region.as_atomic_u64s();
    let nonzero = AtomicUsize::new(0);
    smp::on_each_core(|core| {
        // Every core touches every page, starting at a different one, so
        // the same pages fault on several cores at once.
        for i in 0..PAGES {
            let page = (i + core * PAGES / 4) % PAGES;
            let base = page * FRAME_SIZE / 8;
            if words[base + 100 + core].load(Ordering::Relaxed) != 0 {
                nonzero.fetch_add(1, Ordering::Relaxed);
            }
            words[base + core].store((page * 8 + core + 1) as u64, Ordering::Relaxed);
        }
    });
    check!(
        nonzero.load(Ordering::Relaxed) == 0,
        "a fresh page was not zero"
    );
    for page in 0..PAGES {
        for core in 0..smp::cores() {
            let got = words[page * FRAME_SIZE / 8 + core].load(Ordering::Relaxed);
            check!(
                got == (page * 8 + core + 1) as u64,
                "page {page} core {core}: lost a write"
            );
        }
    }
    check!(
        region.resident_pages() == PAGES,
        "{} resident",
        region.resident_pages()
    );
    let faults = mm::stats().demand_faults - before.demand_faults;
    check!(
        faults == PAGES as u64,
        "{faults} pages mapped for {PAGES} pages (a page mapped twice?)"
    );
    Ok(())
}

pub fn heap_stress() -> Outcome {
    let failures = AtomicUsize::new(0);
    smp::on_each_core(|core| {
        let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15 ^ ((core as u64 + 1) * 0x1234_5678));
        let mut live: Vec<(u8, Vec<u8>)> = Vec::new();
        for step in 0..3000 {
            if live.len() > 64 || (!live.is_empty() && rng.below(3) == 0) {
                let (tag, block) = live.swap_remove(rng.index(live.len()));
                if block.iter().any(|&b| b != tag) {
                    failures.fetch_add(1, Ordering::Relaxed);
                }
            } else {
                let size = if step % 500 == 0 {
                    1 << 20
                } else {
                    1 + rng.index(16384)
                };
                let tag = rng.below(256) as u8;
                live.push((tag, alloc::vec![tag; size]));
            }
        }
        for (tag, block) in live {
            if block.iter().any(|&b| b != tag) {
                failures.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    check!(
        failures.load(Ordering::Relaxed) == 0,
        "{} blocks were corrupted",
        failures.load(Ordering::Relaxed)
    );
    let stats = mm::stats();
    check!(
        stats.heap_mapped > 1 << 20,
        "heap never grew ({} bytes mapped)",
        stats.heap_mapped
    );
    Ok(())
}

pub fn timer_interrupts() -> Outcome {
    let short = AtomicUsize::new(0);
    let missing = AtomicUsize::new(0);
    smp::on_each_core(|core| {
        let irqs = libos::time::timer_interrupts(core);
        let start = libos::time::now();
        for _ in 0..5 {
            libos::time::sleep(Duration::from_millis(2));
        }
        if start.elapsed() < Duration::from_millis(10) {
            short.fetch_add(1, Ordering::Relaxed);
        }
        // A sleep can also end on the clock check right after another
        // interrupt, just before its own timer interrupt arrives, so not
        // every sleep is counted; but the timer must have fired on this core.
        if libos::time::timer_interrupts(core) == irqs {
            missing.fetch_add(1, Ordering::Relaxed);
        }
    });
    check!(short.load(Ordering::Relaxed) == 0, "a sleep returned early");
    check!(
        missing.load(Ordering::Relaxed) == 0,
        "a core took no timer interrupt in five sleeps"
    );
    Ok(())
}
