//! Faultline's emulated fault-aware RDMA engine: the host process behind
//! each node's RDMA device (a vhost-user backend for stock QEMU).
//!
//! ```text
//!  QEMU ──main socket──▶ frontend (vhost-user protocol, IOTLB updates)
//!       ◀─backend channel─ guest::GuestDma (IOTLB misses)
//!  guest rings ──▶ device (event loop) ──▶ engine (pure protocol core)
//!                                     ◀──▶ fabric (RoCEv2 over UDP)
//! ```
//!
//! Each engine binds its node's own IPv4 address and speaks RoCEv2 (RDMA
//! over UDP port 4791, Reliable Connection) with the other nodes' engines:
//! nothing is shared between nodes but the network. Every byte a WRITE,
//! READ or SEND moves travels in RoCE packets, read from and placed into
//! this node's guest memory through its SMMU.

pub mod cli;
pub mod device;
pub mod dma;
pub mod engine;
pub mod fabric;
pub mod frontend;
pub mod guest;
pub mod iotlb;
pub mod ring;
pub mod roce;
pub mod selfbench;
pub mod shares;
pub mod stats;
pub mod sys;
pub mod vhost_msg;
