//! Builds Lua 5.1.5, from the sources the lua-src crate ships, as a static
//! library.
//!
//! On the host, lua-src builds it as usual, against the host's C library. The
//! guest (`target_os = "none"`) has no C library: clang compiles the same
//! sources freestanding, against the headers of `include/`, whose functions
//! `src/libc/` provides, and compiles `csrc/printf.c` beside them (the printf
//! family: stable Rust cannot define a C variadic function).

use std::env;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let mut lua = lua_src::Build::new();
    // Lua 5.1 checks some of its limits by letting an int overflow (e.g.
    // unpack's count of results); optimizers drop such checks unless
    // overflow is defined to wrap, and a script could then crash the kernel.
    // And no fused multiply-add: scripts must compute as Redis's Lua on
    // x86-64 does (found by the differential test: `a % b` is `a -
    // floor(a/b)*b`, which fused rounds once instead of twice, so
    // (2^63 - 1) % 7 came out 512 instead of 0).
    strict_c(&env::var("TARGET").expect("cargo sets TARGET"));
    if os == "none" {
        let arch = env::var("CARGO_CFG_TARGET_ARCH").expect("cargo sets CARGO_CFG_TARGET_ARCH");
        let dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
        let posing = freestanding_compiler(&arch, &dir.join("include"));
        // Assertions of the API would need abort(); our own use of the API is
        // checked by the host tests, which build with them.
        lua.target(&posing).debug(false);
        println!("cargo:rerun-if-changed=include");
        println!("cargo:rerun-if-changed=csrc");
        cc::Build::new()
            .target(&posing)
            .file(dir.join("csrc/printf.c"))
            .compile("faultline_printf");
    }
    lua.build(lua_src::Lua51).print_cargo_metadata();
}

/// Adds `-fwrapv` (signed overflow wraps) and `-ffp-contract=off` (no
/// fused multiply-add) to what `cc` compiles for `target`, after any flags
/// the environment gives it.
fn strict_c(target: &str) {
    let var = format!("CFLAGS_{}", target.replace('-', "_"));
    let given = env::var(&var)
        .or_else(|_| env::var("CFLAGS"))
        .unwrap_or_default();
    println!("cargo:rerun-if-env-changed=CFLAGS");
    // SAFETY of set_var: a build script is one thread.
    env::set_var(var, format!("{given} -fwrapv -ffp-contract=off"));
}

/// Makes `cc` (ours and lua-src's) compile for the freestanding guest with
/// clang and the headers in `include`, and returns the target name to give
/// them.
///
/// lua-src picks Lua's configuration by the target's OS and knows none for
/// bare metal, so the build poses as `<arch>-unknown-linux-gnu`, with
/// clang told the real target (`--target=<arch>-unknown-none-elf`, which
/// comes after cc's own) and our headers: Lua takes its POSIX
/// configuration, whose few POSIX calls (in the io, os and package
/// libraries, which Faultline never opens) our headers declare and nothing
/// links. `cc` reads the compiler, archiver and flags for that name from the
/// environment variables set here.
fn freestanding_compiler(arch: &str, include: &Path) -> String {
    let posing = format!("{arch}-unknown-linux-gnu");
    let var = posing.replace('-', "_");
    let flags = [
        &format!("--target={arch}-unknown-none-elf"),
        "-ffreestanding",
        "-nostdlibinc",
        &format!("-isystem{}", include.display()),
        "-fno-pic",
        "-fno-stack-protector",
        "-fno-omit-frame-pointer",
        // As Rust's aarch64-unknown-none: no unaligned accesses.
        "-mstrict-align",
        "-Werror=implicit-function-declaration",
        "-fwrapv",
        "-ffp-contract=off",
    ];
    // SAFETY of set_var: a build script is one thread.
    env::set_var(format!("CC_{var}"), "clang");
    env::set_var(format!("AR_{var}"), "llvm-ar");
    env::set_var(format!("CFLAGS_{var}"), flags.join(" "));
    posing
}
