//! Faultline's DMA scheduler: DMA transfers on application virtual addresses
//! that survive page faults.
//!
//! A device reaches memory through the SMMU, which walks the CPU's own page
//! table (IOVA = VA). When the device touches a page that is not resident the
//! SMMU either aborts the access (reads return zeros, writes are dropped, the
//! device completes "successfully") or stalls it, and records a fault event.
//! This crate decides what to do about it: it splits transfers into segments,
//! feeds them to engines, claims the faulted pages (and a prefetch window)
//! for the kernel to make resident through the memory manager without
//! holding the scheduler ([`claim`]), and retransmits or resumes whatever
//! the faults spoiled once they are resolved, so that every transfer either
//! ends byte-exact or fails with a clear error.
//!
//! It is policy code: no `unsafe`, no hardware access, host-tested. The kernel
//! plugs in through two small traits, [`Memory`] (the memory manager) and
//! [`Engine`] (a DMA engine driver), and drives a [`Scheduler`] from its
//! interrupt or poll loop; see [`scheduler`] for the loop and its one ordering
//! rule.
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

pub mod claim;
pub mod engine;
mod layout;
pub mod memory;
mod pages;
mod plan;
pub mod prefetch;
pub mod scheduler;
mod segment;
pub mod stats;
pub mod transfer;
pub mod watchdog;

pub use claim::{Claim, ClaimId, ClaimOutcome, Resolution, UnknownClaim};
pub use engine::{Completion, Direction, Engine, EngineCaps, EngineError, Resume, Segment};
pub use engine::{EngineId, SegmentId, StreamId};
pub use memory::{Access, MemError, Memory};
pub use prefetch::{PrefetchConfig, Prefetcher};
pub use scheduler::{Config, FaultAction, Scheduler, SegmentState, TransferState, UnknownSegment};
pub use stats::Stats;
pub use transfer::{Policy, SubmitError, Transfer, TransferError, TransferId, TransferReport};
pub use watchdog::Watchdog;
