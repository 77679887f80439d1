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
    let mut passed = 0;
    let mut failed = 0;
    let dma_tests = if libos::iommu::present() {
        tests::DMA
    } else {
        println!("selftest: no SMMU on this board; the SMMU DMA tests are not run");
        &[]
    };
    let zdma_tests = if libos::dma::zdma().is_ok() {
        tests::ZDMA
    } else {
        &[]
    };
    for (name, test) in tests::ALL.iter().chain(dma_tests).chain(zdma_tests) {
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
    if failed == 0 {
        0
    } else {
        1
    }
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
