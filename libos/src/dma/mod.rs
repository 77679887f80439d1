//! DMA on virtual addresses: the kernel side of the fault path.
//!
//! Apps hand the scheduler transfers on their own virtual addresses; the
//! devices reach them through the SMMU, each confined device only what it
//! was granted ([`grant`]; see `iommu`). One module a job:
//!
//! - `transfers`: what apps call: [`submit`], [`wait`], [`read`],
//!   [`write`] and their scatter/gather forms, [`grant`].
//! - `owned`: the same on a region the transfer holds ([`run_on`],
//!   [`submit_owned`]), so that apps need no `unsafe`.
//! - `service`: the one loop that moves everything forward (completions,
//!   faults, starts; its diagram is there), and its [`FaultCounters`].
//! - `memory`: the memory manager as the scheduler and each device stream
//!   see it.
//! - `engine`: [`DeviceEngine`], what the service needs of a device.
//! - `devices`: bring-up of each device ([`edu`], [`nvme`], [`sd`],
//!   [`zdma`]), each opened exactly once.

extern crate alloc;

mod devices;
mod engine;
mod memory;
mod owned;
mod service;
mod transfers;

pub(crate) use devices::register_intx;
pub use devices::{edu, nvme, sd, zdma, DeviceError, NvmeInfo, EDU_BUFFER, ZDMA_NOT_DMA_MEMORY};
pub use engine::{DeviceEngine, PageReadiness};
pub use owned::{run_on, submit_owned, InFlight};
pub(crate) use service::service_from_irq;
pub use service::{add_engine, caps, fault_counters, poke, stats, take_finished, FaultCounters};
pub use transfers::{
    grant, grant_memory, read, read_scatter, run, submit, try_take, wait, write, write_gather,
    Grant, GrantError, Rights,
};

pub use dma::{
    Direction, EngineId, Policy, Segment, Stats, SubmitError, Transfer, TransferError, TransferId,
    TransferReport,
};
