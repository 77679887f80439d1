//! Arm MMU-500 driver (SMMUv2 architecture, Arm IHI 0062; MMU-500 TRM,
//! Arm DDI 0517), the SMMU of the Zynq UltraScale+ MPSoC at `0xFD80_0000`:
//! stage 1 only, AArch64 tables, stream matching, stall on fault.
//!
//! Streams are matched by SMR/S2CR pairs to stage-1 context banks whose
//! TTBR0 is the kernel's own page-table root under the kernel's ASID (or a
//! device's view of it), so the SMMU walks the same table as the CPU.
//! Unmatched streams fault (sCR0.USFCFG). A context fault stalls the
//! transaction (SCTLR.CFCFG = 1) instead of aborting it, so the device
//! waits instead of needing a retransmission:
//!
//! ```text
//!  device DMA ─► SMR match ─► S2CR ─► context bank walks the CPU's table
//!                                        │ entry invalid
//!                                        ▼
//!      FSR = TF|SS, FAR, FSYNR0, CBFRSYNRA recorded; transaction STALLED;
//!      later transactions of the bank held behind it (SCTLR.HUPCF = 0)
//!                                        │ context interrupt
//!                                        ▼
//!      take_fault(bank) ─► ContextFault { fault: smmu::Fault, stalled }
//!            (CFIE masked: SS keeps the interrupt asserted until RESUME)
//!                                        │
//!                                        ▼
//!      kernel resolves: mm::resolve / dma::Scheduler::on_fault
//!                                        │
//!                                        ▼
//!      resume(bank, dma::Resume::Retry | Abort)
//!            ─► FSR cleared ─► RESUME.TnR = 0 | 1 ─► CFIE unmasked
//!                                        │
//!                                        ▼
//!      retry: the walk succeeds, the DMA completes (held ones follow)
//!      terminate: the device gets an abort response
//! ```
//!
//! # The stall model
//!
//! A context bank records one fault at a time (FSR, FAR, FSYNR0/1,
//! CBFRSYNRA). While it is recorded, any further fault in the bank sets
//! FSR.MULTI only: its address is not recorded. With SCTLR.HUPCF = 0 (what
//! the driver programs) the bank holds every later transaction behind the
//! stalled one, untranslated; on RESUME the recorded transaction is retried
//! or terminated and the held ones are presented again, so one that still
//! faults is recorded afresh and reported by its own interrupt. Faults from
//! different banks are independent. How many transactions an
//! implementation can hold is bounded (MMU-500 stops accepting traffic);
//! the model in the tests instead terminates a transaction that finds its
//! bank full and sets MULTI, and the driver reports any MULTI as possibly
//! lost faults ([`Collected::lost`]), for which the DMA scheduler treats
//! the stream's transfers as suspect. See `docs/ARCHITECTURE.md`, "The
//! MMU-500 (SMMUv2) driver and its stall model".
//!
//! The decoders ([`id`], [`syndrome`]) are pure; [`Mmu500`] drives them
//! over the same [`Regs`] trait as the SMMUv3 driver (feature `hw`
//! implements it for the kernel's MMIO window), and the tests in
//! `smmu/tests/mmu500.rs` run it against a register-level model.

mod driver;
mod error;
pub mod id;
pub mod regs;
pub mod syndrome;

pub use crate::iommu::Collected;
pub use crate::v3::{CdParams, Regs};
pub use dma::Resume;
pub use driver::{Mmu500, StreamMatch};
pub use error::{Config, Error, Wait};
pub use id::{Features, ProbeError};
pub use syndrome::{Bank, ContextFault, GlobalFault, RawSyndrome};
