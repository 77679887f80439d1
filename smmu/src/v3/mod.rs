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
//! pure; [`Smmu`] drives them over the [`Regs`] and [`DmaAllocator`] traits.
//!
//! How the kernel is meant to use it (the tests in `smmu/tests/driver.rs` do
//! the same against a software SMMU):
//!
//! ```text
//! // Boot: the register window (feature `hw` implements Regs for Mmio).
//! let mmio = unsafe { Mmio::new(0x0905_0000, regs::MMIO_SIZE) };
//! let mut smmu = Smmu::new(mmio, frames, Config::pci_root_bus())?;
//! smmu.attach(requester_id, &CdParams { ttb0: root, t0sz: 25, asid: 1,
//!                                       mair: 0xff04, ips_bits: 40 })?;
//! // Unmap hook (CPU TLBIs do not reach the SMMU):
//! smmu.invalidate_range(1, unmapped)?;
//! // eventq interrupt (INTID 106, an edge):
//! let d = smmu.drain_faults_dedup(&mut faults);  // a FaultSet; loop while d.more_pending
//! for f in faults.iter() { mm::resolve(f.iova, f.access); dma::fault_resolved(f.stream, ..) }
//! // gerror interrupt (INTID 109), and after a drain reporting events_lost:
//! if smmu.check_gerror().events_lost || d.events_lost {
//!     /* faults were lost: retransmit every transfer in flight */
//! }
//! ```

mod bits;
pub mod cd;
pub mod cmd;
mod config;
mod driver;
mod error;
pub mod event;
pub mod gerror;
mod platform;
pub mod queue;
#[allow(unsafe_code)]
pub mod records;
pub mod regs;
pub mod ste;
mod strtab;

pub use cd::{CdError, CdParams};
pub use cmd::{Command, CommandError};
pub use config::{Config, Unattached};
pub use driver::{Drained, FaultsDrained, Smmu};
pub use error::{Allocation, Error, Wait};
pub use event::Event;
pub use gerror::GerrorStatus;
pub use hw::dma_memory::{DmaAllocator, DmaMemory};
pub use platform::Regs;
pub use regs::{Features, ProbeError};
