//! `selftest`: the libOS tested on the emulated hardware, one line per test
//! and a closing `N passed, N failed`; the exit status is non-zero on any
//! failure. With the argument `crash`, `panic` or `overflow` it instead
//! dies on purpose, so the host can check the crash report.
#![no_std]
#![no_main]

extern crate alloc;

mod tests;

use alloc::string::String;
use libos::println;

libos::main!(main);

/// A test: `Ok` or a reason for failing.
pub type Outcome = Result<(), String>;

fn main(args: libos::Args) -> i32 {
    match args.get(0) {
        Some("crash") => tests::die::write_to_text(),
        Some("panic") => tests::die::panic(),
        Some("overflow") => tests::die::overflow_stack(),
        _ => {}
    }
    if args.contains("nvme-stall") {
        // Alone: it leaves the NVMe controller disabled.
        return run(&[("a_stalled_nvme_command_times_out", tests::dma_stall)]);
    }
    let mut all = alloc::vec::Vec::from(tests::ALL);
    if libos::iommu::present() {
        all.extend_from_slice(tests::DMA);
    } else {
        println!("selftest: no SMMU on this board; the SMMU DMA tests are not run");
    }
    if libos::dma::zdma().is_ok() {
        all.extend_from_slice(tests::ZDMA);
    }
    run(&all)
}

/// Runs `tests`, one line each, then the totals; the exit status.
fn run(tests: &[tests::Test]) -> i32 {
    let (mut passed, mut failed) = (0, 0);
    for (name, test) in tests {
        let start = libos::time::now();
        match test() {
            Ok(()) => {
                passed += 1;
                println!("test {name} ... ok ({} ms)", start.elapsed().as_millis());
            }
            Err(why) => {
                failed += 1;
                println!("test {name} ... FAILED: {why}");
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    i32::from(failed > 0)
}

/// Fails the current test with a formatted reason unless `cond` holds.
#[macro_export]
macro_rules! check {
    ($cond:expr, $($why:tt)+) => {
        if !$cond {
            return Err(alloc::format!($($why)+));
        }
    };
}
