//! Boots tiny hand-assembled kernels under QEMU through the library's own `package`,
//! `qemu_command` and `run`, so the QEMU command lines, exit-status passing, output
//! capture and timeouts are checked without depending on the real kernel.
//!
//! They fail when `qemu-system-aarch64` is missing (`./run-tests.sh` installs it).

mod common;

#[path = "../src/testutil.rs"]
mod testutil;

use std::time::Duration;

use faultline_image::{bootargs, package, run, Board, RunOptions};
use testutil::{ElfSpec, Segment, TempDir};

/// Generous: QEMU itself starts in well under a second, but CI machines can be busy.
const LIMIT: Duration = Duration::from_secs(60);

/// A few AArch64 instructions, encoded by hand.
mod a64 {
    /// `movz xd, #imm, lsl #(16*hw)`
    pub fn movz(rd: u32, imm: u32, hw: u32) -> u32 {
        0xd280_0000 | (hw << 21) | (imm << 5) | rd
    }
    /// `adr xd, .+offset`
    pub fn adr(rd: u32, offset: i32) -> u32 {
        let imm = offset as u32;
        0x1000_0000 | ((imm & 3) << 29) | (((imm >> 2) & 0x7ffff) << 5) | rd
    }
    /// `ldrb wt, [xn], #1`
    pub fn ldrb_post1(rt: u32, rn: u32) -> u32 {
        0x3840_1400 | (rn << 5) | rt
    }
    /// `strb wt, [xn]`
    pub fn strb(rt: u32, rn: u32) -> u32 {
        0x3900_0000 | (rn << 5) | rt
    }
    /// `cbz wt, .+offset`
    pub fn cbz(rt: u32, offset: i32) -> u32 {
        0x3400_0000 | ((((offset >> 2) as u32) & 0x7ffff) << 5) | rt
    }
    /// `b .+offset`
    pub fn b(offset: i32) -> u32 {
        0x1400_0000 | (((offset >> 2) as u32) & 0x3ff_ffff)
    }
    /// `mrs xt, CurrentEL`
    pub fn mrs_current_el(rt: u32) -> u32 {
        0xd538_4240 | rt
    }
    /// `lsr xd, xn, #2`
    pub fn lsr2(rd: u32, rn: u32) -> u32 {
        0xd342_fc00 | (rn << 5) | rd
    }
    /// `add xd, xn, #imm`
    pub fn add(rd: u32, rn: u32, imm: u32) -> u32 {
        0x9100_0000 | (imm << 10) | (rn << 5) | rd
    }
    /// `str xt, [xn, #8]`
    pub fn str8(rt: u32, rn: u32) -> u32 {
        0xf900_0400 | (rn << 5) | rt
    }
    /// `hlt #0xf000`, the A64 semihosting trap.
    pub const HLT_SEMIHOST: u32 = 0xd45e_0000;
}

/// Semihosting exit reason "application exited", whose subcode QEMU uses as its status.
const ADP_STOPPED_APPLICATION_EXIT: u64 = 0x20026;
/// Semihosting SYS_EXIT.
const SYS_EXIT: u32 = 0x18;

/// A kernel that prints `message` to a PL011 at `uart` (if given), then exits through
/// semihosting with status `base + current exception level`.
fn exit_kernel(load: u64, uart: Option<u32>, message: &str, base: u32) -> Vec<u8> {
    use a64::*;
    let mut code: Vec<u32> = Vec::new();
    if let Some(uart) = uart {
        // x2 = UART data register, x3 = message; copy bytes until NUL.
        assert_eq!(uart & 0xffff, 0);
        code.push(movz(2, uart >> 16, 1));
        code.push(0); // adr x3, message: patched below
        code.push(ldrb_post1(4, 3)); // loop:
        code.push(cbz(4, 12)); // to done
        code.push(strb(4, 2));
        code.push(b(-12)); // to loop
    }
    // done: x5 = base + CurrentEL.EL, stored as the exit block's subcode.
    code.push(mrs_current_el(5));
    code.push(lsr2(5, 5));
    code.push(add(5, 5, base));
    code.push(0); // adr x1, block: patched below
    code.push(str8(5, 1));
    code.push(movz(0, SYS_EXIT, 0));
    code.push(HLT_SEMIHOST);
    code.push(b(0));

    let code_len = code.len() * 4;
    let block_at = code_len.next_multiple_of(8);
    let message_at = block_at + 16;
    let adr_block = code.len() - 5;
    code[adr_block] = adr(1, (block_at - adr_block * 4) as i32);
    if uart.is_some() {
        code[1] = adr(3, (message_at - 4) as i32);
    }

    let mut data: Vec<u8> = code.iter().flat_map(|w| w.to_le_bytes()).collect();
    data.resize(block_at, 0);
    data.extend_from_slice(&ADP_STOPPED_APPLICATION_EXIT.to_le_bytes());
    data.extend_from_slice(&0u64.to_le_bytes());
    data.extend_from_slice(message.as_bytes());
    data.push(0);
    // Room for the embedded boot arguments, to check they survive into the image.
    data.resize(data.len().next_multiple_of(16), 0);
    let args_at = data.len() as u64;
    data.resize(data.len() + bootargs::SECTION_SIZE, 0);
    ElfSpec {
        machine: 183,
        entry: load,
        segments: vec![Segment {
            addr: load,
            data,
            bss: 0,
        }],
        sections: vec![(
            bootargs::SECTION.into(),
            0,
            args_at,
            bootargs::SECTION_SIZE as u64,
        )],
    }
    .to_bytes()
}

/// A kernel that spins forever.
fn spinning_kernel(load: u64) -> Vec<u8> {
    ElfSpec {
        machine: 183,
        entry: load,
        segments: vec![Segment {
            addr: load,
            data: a64::b(0).to_le_bytes().to_vec(),
            bss: 0,
        }],
        sections: vec![],
    }
    .to_bytes()
}

const VIRT_LOAD: u64 = 0x4008_0000;
const VIRT_UART: u32 = 0x0900_0000;
const ZCU102_LOAD: u64 = 0x0010_0000;

#[test]
fn qemu_virt_prints_and_exits_with_status() {
    common::require_qemu();
    let dir = TempDir::new("virt");
    let args = vec!["mode=test".to_string()];
    let elf = exit_kernel(VIRT_LOAD, Some(VIRT_UART), "synthetic kernel up\n", 40);
    let built = package(&elf, "synthetic", Board::QemuVirt, &args, dir.path()).unwrap();
    let opts = RunOptions {
        args,
        ..RunOptions::default()
    };
    let out = run(&built, &opts, Some(LIMIT), false).unwrap();
    assert!(!out.timed_out, "{out:?}");
    assert!(out.output.contains("synthetic kernel up"), "{out:?}");
    // Started at EL1 without --el2.
    assert_eq!(out.status, Some(41), "{out:?}");
    assert!(out.wall < LIMIT);
}

#[test]
fn qemu_virt_el2() {
    common::require_qemu();
    let dir = TempDir::new("virt-el2");
    let elf = exit_kernel(VIRT_LOAD, None, "", 40);
    let built = package(&elf, "synthetic", Board::QemuVirt, &[], dir.path()).unwrap();
    let opts = RunOptions {
        el2: true,
        smp: Some(1),
        ..RunOptions::default()
    };
    let out = run(&built, &opts, Some(LIMIT), false).unwrap();
    assert_eq!(out.status, Some(42), "{out:?}");
}

#[test]
fn zcu102_boots_and_exits_with_status() {
    common::require_qemu();
    let dir = TempDir::new("zcu");
    let args = vec!["x".to_string()];
    let elf = exit_kernel(ZCU102_LOAD, None, "", 40);
    let built = package(&elf, "synthetic", Board::Zcu102, &args, dir.path()).unwrap();
    assert!(built.uimage.is_some());
    let out = run(&built, &RunOptions::default(), Some(LIMIT), false).unwrap();
    assert_eq!(out.status, Some(41), "{out:?}");
    // QEMU 7.2 would complain about missing sound hardware without the audio setting.
    assert!(!out.output.contains("alsa"), "{}", out.output);

    let el2 = RunOptions {
        el2: true,
        ..RunOptions::default()
    };
    let out = run(&built, &el2, Some(LIMIT), false).unwrap();
    assert_eq!(out.status, Some(42), "{out:?}");
}

#[test]
fn a_hung_guest_is_killed_at_the_timeout() {
    common::require_qemu();
    let dir = TempDir::new("hang");
    let built = package(
        &spinning_kernel(VIRT_LOAD),
        "spin",
        Board::QemuVirt,
        &[],
        dir.path(),
    )
    .unwrap();
    let out = run(
        &built,
        &RunOptions::default(),
        Some(Duration::from_secs(2)),
        false,
    )
    .unwrap();
    assert!(out.timed_out, "{out:?}");
    assert_eq!(out.status, None);
    assert!(out.wall >= Duration::from_secs(2) && out.wall < LIMIT);
}
