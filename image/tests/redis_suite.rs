//! Redis's own test suite against kvstore: boots kvstore under QEMU (on a
//! disk of its own, emptied first) and runs `image/redis-suite/run.sh` on
//! it, which prints "N passed, N failed" and fails if anything failed.
//!
//! `cargo test` runs the part CI runs (`run.sh --ci`); `run.sh` with no
//! port boots through this test with `FAULTLINE_REDIS_SUITE_UNITS` naming
//! the units to run.

mod common;

use common::kvstore::{client_output, fresh_disk, Guest};
use faultline_image::workspace_root;
use std::process::Command;

#[test]
fn redis_test_suite_passes_against_kvstore() {
    fresh_disk("redis-suite");
    let guest = Guest::start("redis-suite");
    drop(guest.connect());
    let script = workspace_root().join("image/redis-suite/run.sh");
    let mut run = Command::new(&script);
    run.args(["--port", &guest.port.to_string()]);
    match std::env::var("FAULTLINE_REDIS_SUITE_UNITS") {
        Ok(units) => {
            if std::env::var_os("FAULTLINE_REDIS_SUITE_CI").is_some() {
                run.arg("--ci");
            }
            run.args(units.split_whitespace());
        }
        Err(_) => {
            run.arg("--ci");
        }
    }
    let stdout = client_output(&guest, &mut run, "Redis's test suite");
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}
