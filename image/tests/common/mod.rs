//! Shared by the QEMU tests.

use std::process::{Command, Stdio};

pub mod kvstore;

/// Fails the test unless QEMU is installed: `./run-tests.sh` installs it, so
/// a missing QEMU is a broken setup, never a reason to pass quietly.
pub fn require_qemu() {
    let ok = Command::new("qemu-system-aarch64")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "qemu-system-aarch64 is not installed: run ./run-tests.sh, which installs it"
    );
}
