//! Arm SMMUv3 driver (Arm IHI 0070), written for QEMU 7.2's model
//! (`-M virt,iommu=smmuv3`): stage 1 only, AArch64 tables, no stall, no PRI,
//! no ATS, no broadcast TLB maintenance, no MSIs.
//!
//! Every device stream is given one context descriptor whose TTB0 is the
//! kernel's own page-table root under the kernel's ASID, so the SMMU walks the
//! same table as the CPU. A walk that fails is reported as an event record;
//! the kernel drains them, resolves the faults, and invalidates the SMMU's
//! TLB itself after unmapping (CPU `TLBI`s do not reach this SMMU).
//!
//! The encoders ([`ste`], [`cd`], [`cmd`]), the decoders ([`event`],
//! [`regs::Features`], [`gerror`]) and the queue arithmetic ([`queue`]) are
//! pure; [`Smmu`] drives them over the [`Regs`] and [`QueueMemory`] traits.

mod bits;
pub mod cd;
pub mod cmd;
mod dma;
mod driver;
pub mod event;
pub mod gerror;
pub mod queue;
pub mod regs;
pub mod ste;
mod strtab;

pub use cd::{CdError, CdParams};
pub use cmd::{Command, CommandError};
pub use driver::{
    Allocation, Config, Drained, Error, FaultsDrained, QueueMemory, Regs, Smmu, Unattached, Wait,
};
pub use event::Event;
pub use gerror::GerrorStatus;
pub use regs::{Features, ProbeError};
