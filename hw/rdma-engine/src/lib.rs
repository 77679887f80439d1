//! Faultline's emulated fault-aware RDMA engine: the host process behind
//! each node's RDMA device (a vhost-user backend for stock QEMU).
//!
//! ```text
//!  QEMU ──main socket──▶ frontend (vhost-user protocol, IOTLB updates)
//!       ◀─backend channel─ guest::GuestDma (IOTLB misses)
//!  guest rings ──▶ device (event loop) ──▶ engine (pure protocol core)
//!                                     ◀──▶ fabric (UDP to other engines)
//! ```

pub mod cli;
pub mod device;
pub mod dma;
pub mod engine;
pub mod fabric;
pub mod fabric_msg;
pub mod frontend;
pub mod guest;
pub mod iotlb;
pub mod ring;
pub mod selfbench;
pub mod stats;
pub mod sys;
pub mod vhost_msg;
