//! The `faultline-image` binary, end to end, against a throwaway workspace.
//!
//! The workspace holds a stub `libos` (just the board features) and one tiny no_std app
//! that prints the command line it finds in its own `.bootargs` section and exits with
//! its length. That exercises the real pipeline (cargo build for the guest target, the
//! ELF the linker produced, boot-args patching, QEMU, exit status) without depending on
//! the real kernel.

mod common;

#[path = "../src/testutil.rs"]
mod testutil;

use std::fs;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use testutil::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_faultline-image");

fn tool(root: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("FAULTLINE_ROOT", root)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn write(root: &Path, path: &str, contents: &str) {
    let path = root.join(path);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, contents).unwrap();
}

const APP_MAIN: &str = r#"#![no_std]
#![no_main]

use core::arch::{asm, global_asm};

// Enable FP/SIMD (compiled code may use it), set up a stack, enter Rust.
global_asm!(
    ".section .text.boot, \"ax\"",
    ".global _start",
    "_start:",
    "mov x0, #(3 << 20)",
    "msr cpacr_el1, x0",
    "isb",
    "adrp x0, STACK_TOP",
    "add x0, x0, :lo12:STACK_TOP",
    "mov sp, x0",
    "bl tiny_main",
    "1: b 1b",
);

#[link_section = ".bootargs"]
#[used]
static BOOTARGS: [u8; 4096] = [0; 4096];

#[repr(C, align(16))]
struct Stack([u8; 16384]);
#[no_mangle]
static mut STACK: Stack = Stack([0; 16384]);
global_asm!(".global STACK_TOP", ".set STACK_TOP, STACK + 16384");

const UART: *mut u8 = 0x0900_0000 as *mut u8;

fn put(b: u8) {
    unsafe { UART.write_volatile(b) }
}

fn arg_byte(i: usize) -> u8 {
    unsafe { (&raw const BOOTARGS).cast::<u8>().add(i).read_volatile() }
}

#[no_mangle]
extern "C" fn tiny_main() -> ! {
    for &b in b"bootargs: [" {
        put(b);
    }
    let mut magic = [0u8; 8];
    for (i, m) in magic.iter_mut().enumerate() {
        *m = arg_byte(i);
    }
    let mut len = 0usize;
    if &magic == b"FLARGS01" {
        len = u32::from_le_bytes([arg_byte(8), arg_byte(9), arg_byte(10), arg_byte(11)]) as usize;
        for i in 0..len {
            put(arg_byte(12 + i));
        }
    }
    for &b in b"]\n" {
        put(b);
    }
    // The command line `spin` makes a guest that never exits.
    if len == 4 && [arg_byte(12), arg_byte(13), arg_byte(14), arg_byte(15)] == *b"spin" {
        loop {
            core::hint::spin_loop();
        }
    }
    exit(len as u64)
}

fn exit(code: u64) -> ! {
    let block = [0x20026u64, code];
    unsafe {
        asm!("hlt #0xf000", in("x0") 0x18u64, in("x1") block.as_ptr(), options(nostack));
    }
    loop {}
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    exit(99)
}
"#;

const LINKER_SCRIPT: &str = "ENTRY(_start)
SECTIONS {
    . = 0x40080000;
    .text : { *(.text.boot) *(.text .text.*) }
    .rodata : { *(.rodata .rodata.*) }
    .bootargs : { KEEP(*(.bootargs)) }
    .data : { *(.data .data.*) }
    .bss : { *(.bss .bss.*) *(COMMON) }
}
";

/// A workspace with a stub libos and the app `tiny`.
fn tiny_workspace() -> TempDir {
    let dir = TempDir::new("cli-ws");
    let root = dir.path();
    write(
        root,
        "Cargo.toml",
        "[workspace]\nresolver = \"2\"\nmembers = [\"libos\", \"apps/tiny\"]\n\n\
         [profile.release]\npanic = \"abort\"\nopt-level = \"s\"\n\n\
         [profile.dev]\npanic = \"abort\"\n",
    );
    // The guest toolchain and target come from the real workspace's file.
    let toolchain = Path::new(env!("CARGO_MANIFEST_DIR")).join("../rust-toolchain.toml");
    fs::copy(toolchain, root.join("rust-toolchain.toml")).unwrap();
    write(
        root,
        "libos/Cargo.toml",
        "[package]\nname = \"libos\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
         [features]\nqemu-virt = []\nzcu102 = []\n",
    );
    write(root, "libos/src/lib.rs", "#![no_std]\n");
    write(
        root,
        "apps/tiny/Cargo.toml",
        "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
         [dependencies]\nlibos = { path = \"../../libos\" }\n",
    );
    write(
        root,
        "apps/tiny/build.rs",
        "fn main() {\n    let dir = std::env::var(\"CARGO_MANIFEST_DIR\").unwrap();\n    \
         println!(\"cargo:rustc-link-arg=-T{dir}/link.ld\");\n    \
         println!(\"cargo:rerun-if-changed=link.ld\");\n}\n",
    );
    write(root, "apps/tiny/link.ld", LINKER_SCRIPT);
    write(root, "apps/tiny/src/main.rs", APP_MAIN);
    dir
}

#[test]
fn list_shows_apps_and_boards() {
    let ws = tiny_workspace();
    let out = tool(ws.path(), &["list"]);
    assert!(out.status.success());
    assert_eq!(
        text(&out.stdout),
        "apps:   tiny\nboards: qemu-virt zcu102\n"
    );
}

#[test]
fn usage_errors_exit_2() {
    let ws = tiny_workspace();
    for (args, needle) in [
        (&["run", "nope"][..], "apps/nope/ (Cargo.toml"),
        (&["build", "tiny", "--board", "pi"][..], "qemu-virt, zcu102"),
        (
            &["run", "tiny", "--board", "zcu102", "--smp", "2"][..],
            "--smp is fixed",
        ),
        (&["build", "tiny", "--", "a\"b"][..], "may not contain"),
        (&["frobnicate"][..], "unknown command"),
        (&[][..], "no command"),
    ] {
        let out = tool(ws.path(), args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(err.contains("usage:"), "{args:?}: {err}");
    }
    let out = tool(ws.path(), &["--help"]);
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("faultline-image run APP"));
}

#[test]
fn build_and_run_a_tiny_guest() {
    let ws = tiny_workspace();
    let root = ws.path();

    let out = tool(root, &["build", "tiny", "--board", "zcu102", "--", "a=1"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for line in [
        "elf  target/images/zcu102/tiny.elf  ",
        "bin  target/images/zcu102/tiny.bin  ",
        "uimg target/images/zcu102/tiny.uimg  ",
        "load 0x40080000  entry 0x40080000",
    ] {
        assert!(stdout.contains(line), "{line:?} missing from:\n{stdout}");
    }
    assert!(root
        .join("target/guest/zcu102/aarch64-unknown-none/release/tiny")
        .is_file());

    common::require_qemu();
    let out = tool(
        root,
        &["run", "tiny", "--timeout", "60", "--", "hello=1", "world"],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        stdout.contains("bootargs: [hello=1 world]"),
        "{stdout}\n{stderr}"
    );
    assert_eq!(out.status.code(), Some(13), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("faultline: tiny on qemu-virt exited with status 13 after "),
        "{stderr}"
    );
    assert!(stderr.contains(" ms (QEMU wall time)"), "{stderr}");
    assert!(
        stderr.contains("elf  target/images/qemu-virt/tiny.elf"),
        "{stderr}"
    );

    let out = tool(root, &["run", "tiny", "--timeout", "1.5", "--", "spin"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(stdout.contains("bootargs: [spin]"), "{stdout}\n{stderr}");
    assert_eq!(out.status.code(), Some(124), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("faultline: tiny on qemu-virt timed out after 1.5 s"),
        "{stderr}"
    );
}
