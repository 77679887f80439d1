//! `stencil`: Jacobi heat diffusion on all cores, in demand-zero regions.
//!
//! ```text
//! ./run-qemu.sh stencil -- NX NY ITERS            2D, 5-point
//! ./run-qemu.sh stencil -- NX NY NZ ITERS --3d    3D, 7-point
//! add `scaling` to also run on 1, 2, ... cores and print the speedup
//! ./run-qemu.sh stencil --nodes 2 -- NX NY ITERS [halo-bench]
//!                                                 split across nodes, halos by RDMA
//! ```
#![cfg_attr(target_os = "none", no_std)]
#![cfg_attr(target_os = "none", no_main)]
#![forbid(unsafe_code)]

#[cfg(target_os = "none")]
mod distributed;
#[cfg(target_os = "none")]
mod guest;

/// The app runs in the guest only; on the host there is nothing to run.
#[cfg(not(target_os = "none"))]
fn main() {
    eprintln!("stencil is a Faultline guest app: ./run-qemu.sh stencil -- 512 512 100");
}
