//! The C library pieces Lua calls, for the guest, which has no C library.
//!
//! The logic that is more than a loop (numbers to text and back) is in
//! [`float`], built and tested on the host too. The C symbols themselves
//! exist only in the guest (`target_os = "none"`); on the host, Lua links
//! against the host's C library. Memory copies and compares (`memcpy`,
//! `memmove`, `memcmp`, `memset`, `strlen`) come from faultline-mem and
//! Rust's compiler builtins; the printf family is `csrc/printf.c`.

pub mod float;

#[cfg(target_os = "none")]
mod exports;
#[cfg(target_os = "none")]
mod math;
#[cfg(target_os = "none")]
mod setjmp;
#[cfg(target_os = "none")]
mod stdio;
#[cfg(target_os = "none")]
mod strings;
