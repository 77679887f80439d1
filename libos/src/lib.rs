//! Faultline's library OS: link it into an application crate and you get one
//! bootable image for an AArch64 board, with a single address space shared
//! by the CPU cores and (through the SMMU) the devices.
//!
//! ```text
//! #![no_std]
//! #![no_main]
//! libos::main!(main);
//! fn main(args: libos::Args) -> i32 {
//!     libos::println!("hello from {} cores", libos::smp::cores());
//!     0
//! }
//! ```
//!
//! What it offers an application:
//! - [`mm`]: regions of virtual memory, mapped eagerly or on demand
//!   ([`mm::Region`]), a heap behind `alloc`, memory statistics;
//! - [`smp`]: [`smp::on_each_core`] runs a closure on all cores and joins;
//! - [`time`]: a monotonic clock and `sleep`;
//! - [`irq`]: handlers per interrupt;
//! - [`exit`]: ends the machine with a status.
#![cfg_attr(not(test), no_std)]

// Linked for its `memcpy` symbol alone (on the guest), which replaces the
// sysroot's byte-at-a-time copy of misaligned sources: nothing names the
// crate, so without this line it would not be linked into the images.
use faultline_mem as _;

pub mod arch;
pub mod args;
pub mod checksum;
pub mod dtb;
pub mod mm;
pub mod sync;
pub mod time;

#[cfg(target_os = "none")]
pub mod boot;
#[cfg(target_os = "none")]
pub mod console;
#[cfg(target_os = "none")]
pub mod dma;
#[cfg(target_os = "none")]
pub mod exit;
#[cfg(target_os = "none")]
pub mod iommu;
#[cfg(target_os = "none")]
pub mod irq;
#[cfg(target_os = "none")]
pub mod net;
#[cfg(target_os = "none")]
mod panic;
#[cfg(target_os = "none")]
pub mod pci;
#[cfg(target_os = "none")]
pub mod rdma;
#[cfg(target_os = "none")]
pub mod smp;

pub use args::Args;
#[cfg(target_os = "none")]
pub use exit::exit;

/// The board the image was built for.
#[cfg(target_os = "none")]
pub fn board() -> &'static hw::board::Board {
    hw::board::CURRENT
}

/// Declares the application's entry: `libos::main!(main)` with
/// `fn main(args: libos::Args) -> i32`. The returned status becomes QEMU's
/// exit status.
#[macro_export]
macro_rules! main {
    ($entry:path) => {
        #[unsafe(no_mangle)]
        fn __faultline_main(args: $crate::Args) -> i32 {
            let entry: fn($crate::Args) -> i32 = $entry;
            entry(args)
        }
    };
}
