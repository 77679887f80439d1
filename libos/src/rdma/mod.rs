//! RDMA on virtual addresses: the driver of this node's RDMA engine and the
//! verbs apps use.
//!
//! Nothing is registered: any mapped or demand region of the single address
//! space can be the source or destination of a transfer, on this node or
//! on another. Pages that are not present when the engine reaches them are
//! faults the engine waits on (this node) or NACKs until the owner has
//! resolved them (the remote node); see [`engine`] for the fault routes and
//! `hw/rdma-engine` for the device side.
//!
//! ```text
//!  app ── verbs (Rdma, QueuePair) ──┬─ WRITE/READ/COPY ─► DMA scheduler ─► RdmaEngine ─┐
//!                                   └─ SEND/RECV/imm ──────────────────────────────────┤
//!                                                                   device (virtio) ◄──┘
//! ```

mod device;
pub mod engine;
mod verbs;

pub use device::DeviceError;
pub use engine::EngineCounters;
pub use hw::rdma::wire::Status;
pub use verbs::{open, Op, QueuePair, Rdma, RdmaError, WorkCompletion, WorkId};
