//! Boot tests of the real apps: build each image, boot it under QEMU with a
//! hard timeout, and check the exit status and the lines it prints. A hang
//! or a wrong line fails with the whole serial log in the message.

mod common;

use faultline_image::{build_to, run, workspace_root, Board, RunOptions, RunOutcome};
use std::path::PathBuf;
use std::time::Duration;

/// Far above any healthy run (selftest takes a few seconds), so only a hang trips it.
const TIMEOUT: Duration = Duration::from_secs(240);

struct Boot {
    app: &'static str,
    board: Board,
    args: &'static [&'static str],
    el2: bool,
    smp: Option<u32>,
}

impl Boot {
    fn new(app: &'static str, board: Board) -> Self {
        Boot {
            app,
            board,
            args: &[],
            el2: false,
            smp: None,
        }
    }

    /// Builds into a directory of this test's own and boots.
    fn run(&self, test: &str) -> RunOutcome {
        common::require_qemu();
        let root = workspace_root();
        let out: PathBuf = root.join("target/test-images").join(test);
        let args: Vec<String> = self.args.iter().map(|a| a.to_string()).collect();
        let built = build_to(&root, self.app, self.board, &args, &out).expect("image builds");
        let options = RunOptions {
            smp: self.smp,
            el2: self.el2,
            args,
            ..RunOptions::default()
        };
        let mut outcome = run(&built, &options, Some(TIMEOUT), false).expect("QEMU starts");
        // The console ends lines with CR LF, as a serial terminal wants.
        outcome.output = outcome.output.replace("\r\n", "\n");
        assert!(
            !outcome.timed_out,
            "{} on {} hung; serial log:\n{}",
            self.app, self.board, outcome.output
        );
        outcome
    }
}

fn expect_status(outcome: &RunOutcome, status: i32) {
    assert_eq!(
        outcome.status,
        Some(status),
        "wrong exit status; serial log:\n{}",
        outcome.output
    );
}

fn expect_line(outcome: &RunOutcome, line: &str) {
    assert!(
        outcome.output.lines().any(|l| l.trim_end() == line),
        "no line {line:?}; serial log:\n{}",
        outcome.output
    );
}

fn expect_text(outcome: &RunOutcome, text: &str) {
    assert!(
        outcome.output.contains(text),
        "no {text:?}; serial log:\n{}",
        outcome.output
    );
}

#[test]
fn hello_on_qemu_virt_reports_the_machine_and_boots_fast() {
    let outcome = Boot::new("hello", Board::QemuVirt).run("hello-virt");
    expect_status(&outcome, 0);
    expect_line(&outcome, "board: qemu-virt");
    expect_line(&outcome, "entered at EL1, running at EL1");
    expect_line(&outcome, "cores: 4");
    expect_text(&outcome, "\nmemory: 2048 MiB RAM, ");
    expect_text(&outcome, "boot time: ");
    // Reported, not asserted: wall time depends on the machine's load.
    eprintln!(
        "hello on qemu-virt: QEMU wall time {} ms",
        outcome.wall.as_millis()
    );
}

#[test]
fn hello_image_is_under_one_mebibyte() {
    let root = workspace_root();
    let out = root.join("target/test-images/hello-size");
    let built = build_to(&root, "hello", Board::QemuVirt, &[], &out).expect("image builds");
    let size = std::fs::metadata(&built.bin).unwrap().len();
    assert!(size < 1 << 20, "hello.bin is {size} bytes");
}

#[test]
fn hello_on_zcu102_uses_the_cadence_uart_and_embedded_args() {
    let mut boot = Boot::new("hello", Board::Zcu102);
    boot.args = &["alpha", "beta=2"];
    let outcome = boot.run("hello-zcu102");
    expect_status(&outcome, 0);
    expect_line(&outcome, "board: zcu102");
    expect_line(&outcome, "cores: 4");
    expect_line(&outcome, "args: alpha beta=2");
}

#[test]
fn hello_entered_at_el2_drops_to_el1_on_both_boards() {
    for (board, name) in [
        (Board::QemuVirt, "hello-el2-virt"),
        (Board::Zcu102, "hello-el2-zcu102"),
    ] {
        let mut boot = Boot::new("hello", board);
        boot.el2 = true;
        let outcome = boot.run(name);
        expect_status(&outcome, 0);
        expect_line(&outcome, "entered at EL2, running at EL1");
        expect_line(&outcome, "cores: 4");
    }
}

#[test]
fn args_reach_the_app_through_the_dtb_on_qemu_virt() {
    let mut boot = Boot::new("hello", Board::QemuVirt);
    boot.args = &["4096", "4096", "100"];
    boot.smp = Some(2);
    let outcome = boot.run("hello-args");
    expect_status(&outcome, 0);
    expect_line(&outcome, "args: 4096 4096 100");
    expect_line(&outcome, "cores: 2");
}

fn selftest_passes_on(board: Board, name: &str) -> RunOutcome {
    let outcome = Boot::new("selftest", board).run(name);
    expect_status(&outcome, 0);
    expect_line(&outcome, "selftest: 4 cores took part");
    let closing = outcome
        .output
        .lines()
        .rev()
        .find(|l| l.contains(" passed, "))
        .unwrap_or("");
    assert!(
        closing.ends_with(" passed, 0 failed"),
        "selftest failed:\n{}",
        outcome.output
    );
    outcome
}

#[test]
fn selftest_passes_on_qemu_virt() {
    let outcome = selftest_passes_on(Board::QemuVirt, "selftest-virt");
    // The DMA tests need the SMMU, edu and NVMe, which only virt has.
    for test in [
        "dma_into_untouched_buffer_lands_and_counts_faults",
        "event_queue_overflow_is_recovered_with_correct_data",
        "nvme_round_trips_under_every_policy",
        "nvme_gathers_odd_pieces_through_a_fault",
        // A confined device aimed at memory it was not granted: an
        // isolation fault, not one byte changed.
        "dma_into_kernel_text_is_isolated",
        "dma_into_a_page_table_is_isolated",
        "dma_into_the_heap_is_isolated",
        "dma_into_an_ungranted_region_is_isolated",
        "a_dropped_grant_is_revoked",
    ] {
        expect_text(&outcome, &format!("test {test} ... ok"));
    }
}

#[test]
fn selftest_passes_on_zcu102() {
    let outcome = selftest_passes_on(Board::Zcu102, "selftest-zcu102");
    expect_line(
        &outcome,
        "selftest: no SMMU on this board; the SMMU DMA tests are not run",
    );
    // The ZynqMP's own DMA engine (ZDMA) runs instead, on pinned memory.
    for test in [
        "zdma_copies_to_a_pinned_region",
        "zdma_copies_from_a_pinned_region",
        "zdma_refuses_memory_that_is_not_pinned",
        "zdma_policies_other_than_pin_need_an_smmu",
    ] {
        expect_text(&outcome, &format!("test {test} ... ok"));
    }
}

#[test]
fn a_stalled_nvme_command_ends_with_a_timeout_not_a_hang() {
    // QEMU 7.2's NVMe never completes a gather command that faults on two
    // pages at unaligned offsets: the DMA watchdog must stop it.
    let mut boot = Boot::new("selftest", Board::QemuVirt);
    boot.args = &["nvme-stall"];
    let outcome = boot.run("selftest-nvme-stall");
    expect_status(&outcome, 0);
    expect_text(&outcome, "test a_stalled_nvme_command_times_out ... ok");
    expect_text(
        &outcome,
        "it was stopped and its transfers fail (timed out)",
    );
}

fn crash(mode: &'static str, name: &str) -> RunOutcome {
    let mut boot = Boot::new("selftest", Board::QemuVirt);
    boot.args = match mode {
        "crash" => &["crash"],
        "panic" => &["panic"],
        _ => &["overflow"],
    };
    boot.run(name)
}

#[test]
fn a_write_to_text_gives_a_decoded_crash_report() {
    let outcome = crash("crash", "crash-text");
    expect_status(&outcome, 102);
    expect_text(
        &outcome,
        "!!! CRASH on core 0: unexpected synchronous exception",
    );
    expect_text(
        &outcome,
        "data abort (EC 0x25), permission fault at level 3 on write",
    );
    expect_text(&outcome, "FAR 0x0000000040200000");
    expect_text(&outcome, " x29 ");
    expect_text(&outcome, "backtrace:\n      #0 ");
    expect_text(&outcome, "      #2 ");
}

#[test]
fn a_panic_prints_its_message_and_a_backtrace() {
    let outcome = crash("panic", "crash-panic");
    expect_status(&outcome, 101);
    expect_text(
        &outcome,
        "!!! PANIC on core 0: panicked at apps/selftest/src/tests/die.rs",
    );
    expect_text(&outcome, "deliberate panic from selftest");
    expect_text(&outcome, "      #1 ");
}

#[test]
fn a_stack_overflow_hits_the_guard_page() {
    let outcome = crash("overflow", "crash-overflow");
    expect_status(&outcome, 102);
    expect_text(&outcome, "FAR is in a stack guard page: stack overflow");
    expect_text(&outcome, "translation fault at level 3 on write");
}

/// The guest's `checksum: sum S hash H` line.
fn stencil_hash(outcome: &RunOutcome) -> u64 {
    let line = outcome
        .output
        .lines()
        .find(|l| l.starts_with("checksum: "))
        .unwrap_or_else(|| panic!("no checksum line; serial log:\n{}", outcome.output));
    let hash = line.rsplit(' ').next().unwrap();
    u64::from_str_radix(hash, 16).unwrap()
}

#[test]
fn stencil_matches_the_host_reference_bit_for_bit_on_every_core_count() {
    // Sizes that do not divide by the core count, 2D then 3D.
    let mut boot = Boot::new("stencil", Board::QemuVirt);
    boot.args = &["67", "45", "30", "scaling"];
    let outcome = boot.run("stencil-2d");
    expect_status(&outcome, 0);
    expect_text(&outcome, "cores 4: ");
    let reference = stencil::reference(&stencil::dims(67, 45, None).unwrap(), 30);
    assert_eq!(
        stencil_hash(&outcome),
        reference.hash,
        "serial log:\n{}",
        outcome.output
    );

    let mut boot = Boot::new("stencil", Board::QemuVirt);
    boot.args = &["19", "14", "11", "12", "--3d"];
    let outcome = boot.run("stencil-3d");
    expect_status(&outcome, 0);
    let reference = stencil::reference(&stencil::dims(19, 14, Some(11)).unwrap(), 12);
    assert_eq!(
        stencil_hash(&outcome),
        reference.hash,
        "serial log:\n{}",
        outcome.output
    );
}

#[test]
fn stencil_refuses_bad_arguments_with_its_usage() {
    let mut boot = Boot::new("stencil", Board::QemuVirt);
    boot.args = &["2", "10", "5"];
    let outcome = boot.run("stencil-bad");
    expect_status(&outcome, 2);
    expect_text(&outcome, "usage: stencil NX NY ITERS");
}

#[test]
fn dmabench_on_zcu102_compares_zdma_with_the_cpu_and_needs_an_smmu_for_the_rest() {
    // No NVMe and no SMMU: ZDMA copies under pin against the CPU's.
    let mut boot = Boot::new("dmabench", Board::Zcu102);
    boot.args = &["quick"];
    let outcome = boot.run("apps-dmabench-zcu102");
    expect_status(&outcome, 0);
    expect_line(
        &outcome,
        "buffers        size   zdma MB/s    cpu MB/s   zdma/cpu",
    );
    // A row per buffer kind and size: both rates and their ratio, whatever
    // they are (QEMU's speed is the host's).
    for buffers in ["warm", "cold"] {
        for kib in ["4", "64", "1024"] {
            let row = outcome
                .output
                .lines()
                .find(|l| l.split_whitespace().take(3).eq([buffers, kib, "KiB"]))
                .unwrap_or_else(|| panic!("no {buffers} {kib} KiB row:\n{}", outcome.output));
            let figures: Vec<f64> = row
                .split_whitespace()
                .skip(3)
                .map(|w| w.parse().unwrap_or_else(|_| panic!("{w:?} in {row:?}")))
                .collect();
            assert_eq!(figures.len(), 3, "{row}");
            assert!(figures.iter().all(|f| f.is_finite() && *f > 0.0), "{row}");
        }
    }
    expect_line(&outcome, "corrupted bytes: 0");
    for policy in ["prefault", "fault-aware", "fault-aware+prefetch"] {
        let refusal = outcome
            .output
            .lines()
            .find(|l| l.starts_with(&format!("{policy}: refused: ")))
            .unwrap_or_else(|| panic!("no {policy} refusal:\n{}", outcome.output));
        assert!(refusal.contains("needs an SMMU"), "{refusal}");
    }
}

#[test]
fn dmabench_costs_prints_the_kernel_figures() {
    let mut boot = Boot::new("dmabench", Board::QemuVirt);
    boot.args = &["costs"];
    boot.smp = Some(1);
    let outcome = boot.run("apps-dmabench-costs");
    expect_status(&outcome, 0);
    for what in [
        "cpu demand fault 4 KiB",
        "cpu demand fault 2 MiB",
        "device fault, kernel side",
        "device fault, one record",
        "submitting one DMA segment",
    ] {
        let line = outcome
            .output
            .lines()
            .find(|l| l.starts_with("costs: ") && l.contains(what))
            .unwrap_or_else(|| panic!("no `{what}` line:\n{}", outcome.output));
        let words: Vec<&str> = line.split_whitespace().collect();
        let ns: u64 = words
            .windows(2)
            .find(|w| w[1] == "ns")
            .and_then(|w| w[0].parse().ok())
            .unwrap_or_else(|| panic!("no figure in {line:?}"));
        assert!(ns > 0, "{line}");
    }
}
