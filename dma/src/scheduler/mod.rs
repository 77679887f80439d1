//! The DMA scheduler: transfers on application virtual addresses that
//! survive page faults.
//!
//! ```text
//!  kernel                                 Scheduler                          Engine / Memory
//!  ──────                                 ─────────                          ───────────────
//!  submit(engine, Transfer) ────────────► queued, FIFO per engine
//!  poll(engines, mem) ──────────────────► set up (Pin, Prefault) ──────────► pin, make_resident
//!                                         probe (FaultAwarePrefetch) ──────► is_resident, segment 0
//!                                         resume stalled segments ─────────► Engine::resume
//!                                         start segments up to the window ─► Engine::start
//!                                          (cold: prepare each first) ─────► make_resident
//!                                         window full: prepare one ahead ──► make_resident
//!                                         report finished transfers ───────► unpin
//!  SMMU event queue, drained:
//!    on_fault(mem, stream, iova, rw) ───► match in-flight segment, dedup,
//!                                         resolve the page (+ prefetch) ───► make_resident
//!    events_lost(stream) ───────────────► every in-flight segment suspect
//!  then, and only then, completions:
//!    completed(engine, segment, status) ► Done, or Retransmit spoiled pages
//!  take_finished() ◄──────────────────── (TransferId, Ok(report) | Err(error))
//! ```
//!
//! # The one ordering rule: SMMU events are drained before completions
//!
//! An aborting SMMU tells only its event queue about a fault; the device
//! completes the segment `Ok` with spoiled data. So a completion means
//! nothing until every event the segment's accesses raised has been seen.
//! The kernel must hand a completion to [`Scheduler::completed`] only after
//! a full drain of the SMMU event queue that began *after* it observed the
//! completion: observe completions, drain events (`on_fault`, `events_lost`),
//! hand the observed completions over, `poll`. (The SMMU logs the event of a
//! faulting access before the device's later completion write gets through
//! it, so that drain holds them all.) The same order NVMe over an SMMU needs.
//! Under this rule a lost event can only belong to a segment that is still
//! in flight when `events_lost` is called, which is what it examines.
//!
//! # Faults are resolved here
//!
//! `on_fault` itself calls [`Memory::make_resident`](crate::Memory::make_resident)
//! for the faulted page (and the prefetch window) instead of returning a list
//! for the kernel: the scheduler owns the prefetch rule and needs each error
//! to fail exactly the transfers that wanted the page, and a library OS
//! resolves by a plain function call anyway (`Memory::make_resident` is
//! `mm::resolve`). A fault matching no in-flight segment on its stream
//! is [`FaultAction::Stray`] (log it); nothing here panics.
//!
//! # Cold `FaultAwarePrefetch` transfers are prepared, not faulted
//!
//! On an aborting engine a `FaultAwarePrefetch` transfer whose first segment
//! is not all resident (or that faults later) makes each new segment's pages
//! resident right before starting it, and one segment ahead once the window
//! is full, so the device runs on resident pages while the next segment is
//! prepared; see [`crate::prefetch`] for the rule and why it suits an
//! aborting SMMU. Warm transfers pay only the probe of their first segment.
//!
//! # One segment, from queue to done
//!
//! ```text
//!   Queued ──start──► InFlight ────── completion, no fault seen ──────► Done
//!                      │  ▲  ▲
//!                      │  │  └── start again ◄── Retransmit ◄── completion ──┐
//!                      │  │      (spoiled pages only, made                   │
//!          fault event │  │       resident first; retry +1)                  │
//!       or events_lost │  │                                                  │
//!                      ▼  └── poll: Engine::resume(Retry) ◄── Resume ◄──┐    │
//!                   FaultWait  (retry +1 if the page faulted before)    │    │
//!                      │                                                │    │
//!                      ├── engine stalls (can_resume) ──────────────────┘    │
//!                      └── engine aborts ────────────────────────────────────┘
//!
//!   any state ── page unresolvable | retries > bound | device error ──► Failed
//!
//!   (cold FaultAwarePrefetch: Queued ──pages made resident──► start, and an
//!    error there is "page unresolvable")
//! ```
//!
//! A transfer is `Queued` until its first `poll` (setup happens there),
//! then active until every segment is `Done`, and reported failed with the
//! first error only once none of its segments is in flight, so that the
//! device no longer touches the buffer (and `Pin` unpins only then).

mod active;
mod complete;
mod fault;
mod poll;

use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::fmt;

use crate::engine::{Engine, EngineCaps, EngineId, StreamId};
use crate::layout::Layout;
use crate::memory::MemError;
use crate::prefetch::{PrefetchConfig, Prefetcher};
use crate::stats::Stats;
use crate::transfer::{Policy, SubmitError, Transfer, TransferError, TransferId, TransferReport};
use active::Active;

/// Knobs of the scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Retries a segment may take before its transfer fails with
    /// `RetriesExhausted`: retransmissions, and resumes after a fault on a
    /// page that had already faulted in that segment. Default 8.
    pub max_retries: u32,
    /// Window bounds for `FaultAwarePrefetch`.
    pub prefetch: PrefetchConfig,
    /// Window bounds for faults outside every transfer that a device waits
    /// on ([`Scheduler::on_unclaimed_fault`]: incoming RDMA), which stream
    /// through memory like a transfer does.
    pub incoming_prefetch: PrefetchConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_retries: 8,
            prefetch: PrefetchConfig::default(),
            incoming_prefetch: PrefetchConfig {
                initial: 4,
                max: 256,
            },
        }
    }
}

/// What [`Scheduler::on_unclaimed_fault`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unclaimed {
    /// Whether the faulting page is resident now.
    pub resolved: bool,
    /// Pages of the window after it made resident.
    pub prefetched: usize,
}

/// What `on_fault` did with one SMMU fault event, for the kernel's log and
/// counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultAction {
    /// The event hit `segments` in-flight segments; the page is resident now,
    /// plus `prefetched` more. They will be retransmitted after their
    /// completion, or resumed at the next `poll` if their engine stalls.
    Handled {
        /// Segments the event spoiled or stalled.
        segments: usize,
        /// Pages the prefetcher made resident.
        prefetched: usize,
    },
    /// Every segment it matches already knew this page: nothing to do (the
    /// SMMU reports a faulting page once per small access).
    Duplicate,
    /// No in-flight segment of that stream covers the address: a device
    /// bug, or an event that came after its completion was handed over.
    Stray,
    /// The page cannot be made resident; the transfers that need it fail.
    Unresolvable(MemError),
}

/// Public view of a segment, named after the state machine above.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SegmentState {
    /// Not started yet.
    Queued,
    /// On the engine, no fault seen.
    InFlight,
    /// On the engine, faulted: its completion will bring a retransmission.
    FaultWait,
    /// Spoiled pages waiting to be started again.
    Retransmit,
    /// Stalled on a fault; the next `poll` resumes it.
    Resume,
    /// Finished with correct data.
    Done,
    /// Its transfer failed.
    Failed,
}

/// Public view of a transfer that has not been reported yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TransferState {
    /// Submitted; setup and segments come at a `poll`.
    Queued,
    /// Cut into `segments`, of which `done` are finished.
    Active {
        /// Segment count.
        segments: usize,
        /// Segments done.
        done: usize,
    },
    /// Failed; waits for its in-flight segments before it is reported.
    Failing(TransferError),
}

/// `completed` named a segment attempt that is not in flight on that engine
/// (a driver bug, or a completion handed over twice). Nothing changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownSegment;

impl fmt::Display for UnknownSegment {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("completion for a segment that is not in flight")
    }
}

/// What the scheduler knows of a registered engine.
#[derive(Clone, Copy, Debug)]
struct EngineSlot {
    caps: EngineCaps,
    window: usize,
    in_flight: usize,
}

/// The DMA scheduler. One per kernel, driven from one context (the
/// interrupt/poll loop), so it needs no locking of its own.
pub struct Scheduler {
    config: Config,
    engines: Vec<EngineSlot>,
    /// Unfinished transfers; ascending ids give FIFO order per engine.
    transfers: BTreeMap<TransferId, Active>,
    finished: Vec<(TransferId, Result<TransferReport, TransferError>)>,
    totals: [Stats; 4],
    next_id: u64,
    strays: u64,
    /// Per stream, the prefetch window of faults outside every transfer.
    incoming: BTreeMap<StreamId, Prefetcher>,
}

impl Default for Scheduler {
    fn default() -> Self {
        Self::new(Config::default())
    }
}

impl Scheduler {
    /// An empty scheduler.
    pub fn new(config: Config) -> Self {
        Scheduler {
            config,
            engines: Vec::new(),
            transfers: BTreeMap::new(),
            finished: Vec::new(),
            totals: [Stats::default(); 4],
            next_id: 1,
            strays: 0,
            incoming: BTreeMap::new(),
        }
    }

    /// The configuration it runs with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Registers an engine that may have up to `window` segments in flight
    /// (at least 1). Ids count up from 0 in registration order; `poll` expects
    /// the engines in that order.
    pub fn add_engine(&mut self, engine: &dyn Engine, window: usize) -> EngineId {
        self.engines.push(EngineSlot {
            caps: engine.caps(),
            window: window.max(1),
            in_flight: 0,
        });
        EngineId(self.engines.len() - 1)
    }

    /// Queues a transfer on an engine. Nothing touches memory or the engine
    /// until the next `poll`.
    pub fn submit(
        &mut self,
        engine: EngineId,
        transfer: Transfer,
    ) -> Result<TransferId, SubmitError> {
        let slot = self
            .engines
            .get(engine.0)
            .ok_or(SubmitError::UnknownEngine)?;
        if transfer.pieces.is_empty() || transfer.pieces.iter().any(|p| p.start >= p.end) {
            return Err(SubmitError::Empty);
        }
        if slot.caps.max_segment == 0 || slot.caps.max_pieces == 0 {
            return Err(SubmitError::ZeroMaxSegment);
        }
        if slot.caps.physical && transfer.policy != Policy::Pin {
            return Err(SubmitError::NeedsSmmu(transfer.policy));
        }
        let len = transfer.len();
        if transfer.device_addr.checked_add(len as u64).is_none() {
            return Err(SubmitError::AddressOverflow);
        }
        let block = slot.caps.block.max(1);
        if !Layout::new(&transfer.pieces).cuttable(slot.caps.max_pieces, block) {
            return Err(SubmitError::PiecesTooFine);
        }
        let id = TransferId(self.next_id);
        self.next_id += 1;
        self.transfers.insert(
            id,
            Active::new(id, engine, &slot.caps, transfer, &self.config),
        );
        Ok(id)
    }

    /// Transfers finished since the last call, in the order they finished.
    /// A transfer is reported once, and only when no segment of it is in
    /// flight any more.
    pub fn take_finished(&mut self) -> Vec<(TransferId, Result<TransferReport, TransferError>)> {
        core::mem::take(&mut self.finished)
    }

    /// Sums over every finished transfer that ran with `policy`.
    pub fn stats(&self, policy: Policy) -> &Stats {
        &self.totals[policy.index()]
    }

    /// Fault events that matched no in-flight segment so far.
    pub fn stray_faults(&self) -> u64 {
        self.strays
    }

    /// Transfers submitted and not finished yet (0: the scheduler is idle).
    pub fn unfinished(&self) -> usize {
        self.transfers.len()
    }

    /// Segments in flight on `engine` (counted against its window).
    pub fn in_flight(&self, engine: EngineId) -> usize {
        self.engines.get(engine.0).map_or(0, |s| s.in_flight)
    }

    /// Where an unfinished transfer is; `None` once reported (or unknown).
    pub fn transfer_state(&self, id: TransferId) -> Option<TransferState> {
        let t = self.transfers.get(&id)?;
        Some(match (&t.error, t.begun()) {
            (Some(e), _) => TransferState::Failing(e.clone()),
            (None, false) => TransferState::Queued,
            (None, true) => TransferState::Active {
                segments: t.segs.len(),
                done: t.done,
            },
        })
    }

    /// Where segment `index` of an unfinished, started transfer is.
    pub fn segment_state(&self, id: TransferId, index: usize) -> Option<SegmentState> {
        let t = self.transfers.get(&id)?;
        Some(t.segs.get(index)?.state(t.stalls, t.error.is_some()))
    }
}
