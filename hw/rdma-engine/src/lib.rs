//! Faultline's emulated fault-aware RDMA engine: the host process behind
//! each node's RDMA device (a vhost-user backend for stock QEMU).
//!
//! ```text
//!  QEMU ──main socket──▶ frontend (vhost-user protocol, IOTLB updates)
//!       ◀─backend channel─ guest::GuestDma (IOTLB misses)
//!  guest rings ──▶ device (event loop) ──▶ engine (pure protocol core)
//!                                     ◀──▶ fabric (UDP to other engines)
//! ```
//!
//! All engines of a cluster run on one host, so bulk data does not travel
//! in datagrams: each engine exports its guest memory (QEMU's memfds) and
//! a lease board on a Unix socket next to its vhost-user socket, peers map
//! them, and the target of a WRITE/READ copies straight between the two
//! guest memories (one memcpy). Control messages stay on the UDP fabric.
//!
//! ```text
//!  node 0 engine                                    node 1 engine
//!  lend(src) ─ IOTLB ─▶ extents + lease ── DIRECT_WRITE (UDP) ──▶ pull:
//!                                                   own IOTLB per page,
//!   guest RAM 0 (memfd) ◀──── mapped by node 1 ──── claim lease, memcpy ─▶ guest RAM 1
//!   lease board (memfd) ◀──── CAS by node 1          unclaim
//!  release(lease) ◀──────────────────────── ACK / NACK(fault|revoked, offset)
//!  IOTLB invalidate ─▶ revoke leases over it (waits for one memcpy piece)
//!  fabric-0.sock ── memory table + fds (SCM_RIGHTS) ──▶ peers (lazily, again
//!                                                     when a handle is new)
//! ```

pub mod cli;
pub mod device;
pub mod dma;
pub mod engine;
pub mod export;
pub mod fabric;
pub mod fabric_msg;
pub mod frontend;
pub mod guest;
pub mod iotlb;
pub mod lease;
pub mod peers;
pub mod ring;
pub mod selfbench;
pub mod stats;
pub mod sys;
pub mod vhost_msg;
