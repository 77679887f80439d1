//! Everything specific to AArch64 lives behind this module: entry assembly,
//! exception vectors, system registers, barriers, TLB maintenance. The rest
//! of the kernel calls these small functions and stays portable Rust.
//!
//! On the host (unit tests) a stand-in with the same functions is compiled
//! instead (`host.rs`): interrupts are "always masked" there and the core id
//! is 0, which is what host tests of lock-based code need.

pub mod esr;

#[cfg(target_os = "none")]
mod aarch64;
#[cfg(target_os = "none")]
pub use aarch64::*;

#[cfg(not(target_os = "none"))]
mod host;
#[cfg(not(target_os = "none"))]
pub use host::*;
