//! Faultline's hardware layer: what each board is made of, and the drivers for
//! devices the kernel needs before anything else (the console UARTs).
//!
//! Boards are plain data ([`board::Board`]); the kernel in `libos` reads the
//! selected one through [`board::CURRENT`] and never names a board itself. A
//! board is chosen with one Cargo feature (`qemu-virt` or `zcu102`) when the
//! image is built.
#![cfg_attr(not(test), no_std)]
// `unsafe` only where the hardware demands it: the register windows
// (`mmio`) and memory shared with devices (`dma_memory`).
#![deny(unsafe_code)]

extern crate alloc;

pub mod board;
#[allow(unsafe_code)]
pub mod dma_memory;
pub mod edu;
pub mod gem;
pub mod gicv2;
/// The image's memory layout, shared with the linker-script generator.
pub mod layout;
#[allow(unsafe_code)]
pub mod mmio;
pub mod nvme;
pub mod pci;
pub mod phy;
pub mod rdma;
pub mod sdhci;
pub mod uart;
pub mod virtio_tokens;
pub mod zdma;
