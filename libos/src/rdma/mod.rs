//! RDMA on virtual addresses: the driver of this node's RDMA engine and the
//! verbs apps use.
//!
//! Nothing is pinned or registered on the local side: any mapped or demand
//! region can be the source or destination of a transfer. A remote node is
//! reached only where it exposed memory ([`Rdma::expose`]): every WRITE and
//! READ carries its key, checked by its engine before anything is touched.
//! Pages that are not present when the engine reaches them are
//! faults the engine waits on (this node) or answers with an RNR NAK until
//! the owner has resolved them (the remote node); see [`engine`] for the fault routes and
//! `hw/rdma-engine` for the device side.
//!
//! ```text
//!  app ── verbs (Rdma, QueuePair) ──┬─ WRITE/READ/COPY ─► DMA scheduler ─► RdmaEngine ─┐
//!                                   └─ SEND/RECV/imm ──────────────────────────────────┤
//!                                                                   device (virtio) ◄──┘
//! ```

mod device;
pub mod engine;
mod owned;
mod peer;
mod verbs;

pub use device::DeviceError;
pub use engine::EngineCounters;
pub use hw::rdma::wire::Status;
pub use owned::{ExposedRegion, Pending, ReadDest, Registered, Ungranted, WriteSource};
pub use peer::{PeerAddress, PeerQp};
pub use verbs::{
    open, Access, Exposure, Op, QueuePair, Rdma, RdmaError, RemoteAddr, RemoteRegion,
    WorkCompletion, WorkId,
};
