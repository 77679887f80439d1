//! Boots `hello` through a real U-Boot (Debian's `u-boot-qemu`) under QEMU `virt`: U-Boot
//! is the firmware, our `.uimg` sits in RAM, and the test types `bootm` at U-Boot's
//! prompt (see `faultline_image::uboot`). Checks hello's lines, the exception level
//! U-Boot hands over at, the arguments passed through U-Boot's `bootargs`, and the exit
//! status.

mod common;

use faultline_image::uboot::{run_uboot, uboot_bin};
use faultline_image::{build_to, workspace_root, Board, RunOptions, RunOutcome};
use std::time::Duration;

/// Far above a healthy run (a few seconds), so only a hang trips it.
const TIMEOUT: Duration = Duration::from_secs(240);

fn boot(test: &str, el2: bool) -> RunOutcome {
    common::require_qemu();
    if let Err(e) = uboot_bin() {
        panic!("{e}");
    }
    let root = workspace_root();
    let out = root.join("target/test-images").join(test);
    let args = vec!["via".to_string(), "u-boot".to_string()];
    let built = build_to(&root, "hello", Board::QemuVirt, &args, &out).expect("image builds");
    assert!(built.uimage.is_some(), "qemu-virt gets a .uimg");
    let options = RunOptions {
        el2,
        smp: Some(2),
        args,
        ..RunOptions::default()
    };
    let mut outcome = run_uboot(&built, &options, Some(TIMEOUT), false).expect("QEMU starts");
    outcome.output = outcome.output.replace("\r\n", "\n");
    assert!(
        !outcome.timed_out,
        "hello through U-Boot hung; console:\n{}",
        outcome.output
    );
    for line in [
        "hello from faultline",
        "board: qemu-virt",
        "cores: 2",
        "args: via u-boot",
    ] {
        assert!(
            outcome.output.lines().any(|l| l.trim_end() == line),
            "no line {line:?}; console:\n{}",
            outcome.output
        );
    }
    assert_eq!(
        outcome.status,
        Some(0),
        "wrong exit status; console:\n{}",
        outcome.output
    );
    outcome
}

#[test]
fn hello_boots_through_uboot_at_el1() {
    let out = boot("uboot-el1", false);
    assert!(out.output.contains("U-Boot"), "{}", out.output);
    assert!(
        out.output.contains("entered at EL1, running at EL1"),
        "{}",
        out.output
    );
}

#[test]
fn hello_boots_through_uboot_at_el2() {
    let out = boot("uboot-el2", true);
    assert!(
        out.output.contains("entered at EL2, running at EL1"),
        "{}",
        out.output
    );
}
