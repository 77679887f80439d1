//! Faultline's image tool: builds one bootable image per app and board, and boots it
//! under QEMU.
//!
//! The pipeline is: [`build()`] runs the guest `cargo build`, embeds the boot arguments
//! ([`bootargs`]), derives a flat binary ([`raw`]) and, for U-Boot boards, a legacy
//! image ([`uimage`]); [`run()`] starts QEMU with the board's command line
//! ([`qemu_command`]) and reports how the guest ended. The same functions serve the
//! `faultline-image` CLI and QEMU boot tests.

#![warn(missing_docs)]

pub mod backlog;
pub mod board;
pub mod bootargs;
pub mod build;
pub mod child;
pub mod cli;
pub mod cluster;
pub mod elf;
pub mod error;
pub mod kvcheck;
pub mod linux_peer;
pub mod netns;
pub mod qemu;
pub mod raw;
pub mod run;
pub mod toolchain;
pub mod uboot;
pub mod uimage;
pub mod workspace;

pub use board::Board;
pub use build::{build, build_to, package, Built};
pub use error::{Error, Result};
pub use qemu::{qemu_command, RunOptions};
pub use run::{run, run_command, RunOutcome};
pub use workspace::{check_app, list_apps, workspace_root};

#[cfg(test)]
mod testutil;
