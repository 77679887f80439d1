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
//!    claim(&mem, stream, iova, rw) ─────► match in-flight segments, dedup,
//!                                         record the claim on each ────────► is_resident
//!      ◄── Claim { page, window }         (Stray: claim_incoming, if the
//!                                          device waits on it: RDMA)
//!    (kernel, scheduler not held) claim.resolve(&mut mem) ─────────────────► make_resident
//!    resolved(claim, Resolution) ───────► claim ends: fail who wanted an
//!                                         unresolvable page, resume_due,
//!                                         count prefetched pages
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
//! completion, each drained event claimed before the lock that holds the
//! scheduler is let go: observe completions, drain and `claim`
//! (`events_lost`), hand the observed completions over, `poll`. (The SMMU
//! logs the event of a faulting access before the device's later completion
//! write gets through it, so that drain holds them all.) The same order NVMe
//! over an SMMU needs. Under this rule a lost event can only belong to a
//! segment that is still in flight when `events_lost` is called, which is
//! what it examines. Which context drained an event does not matter: a
//! claim is on the segment the moment its event is drained.
//!
//! # Faults are claimed here, resolved by the kernel
//!
//! Resolving a fault (frame allocation, page-table write, the device's
//! view) and its prefetch window is the expensive part of the fault path,
//! and needs nothing of the scheduler. So a fault is handled in two phases,
//! both under the kernel's lock, with the resolution between them outside
//! it (and on whichever core drained the event):
//! [`claim`](Scheduler::claim) matches the event and returns a
//! [`Claim`](crate::Claim) naming the page and window;
//! [`Claim::resolve`](crate::Claim::resolve) makes them resident through
//! [`Memory`](crate::Memory); [`resolved`](Scheduler::resolved) ends the
//! claim. The scheduler still owns the prefetch rule, and an error still
//! fails exactly the transfers that wanted the page. A fault matching no
//! in-flight segment on its stream is [`ClaimOutcome::Stray`](crate::ClaimOutcome::Stray)
//! (log it); nothing here panics. [`on_fault`](Scheduler::on_fault) is the
//! three phases in one call.
//!
//! The invariants that make the gap safe, whatever runs in it (more claims,
//! completions, `events_lost`, `poll`, on any core):
//!
//! - A transfer holding an outstanding claim starts no retransmission and
//!   no resume (`Retry`) of a segment whose memory touches a claimed page,
//!   and is not reported finished. A failing transfer's stalled segments
//!   are still aborted (an abort touches no page).
//! - A completion believed while a claim is outstanding only records the
//!   spoiled positions (`Retransmit`); the retransmission waits for
//!   `resolved`, so it starts only on pages whose claims resolved.
//! - `events_lost` while claims are outstanding still makes every in-flight
//!   segment suspect; their retransmissions wait like any other.
//! - The ordering rule above is unchanged.
//! - Every claim made is outstanding until `resolved` names it once
//!   ([`Scheduler::outstanding_claims`]); a second `resolved` is
//!   [`UnknownClaim`](crate::UnknownClaim) and changes nothing.
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

use crate::claim::ClaimId;
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
    /// on ([`Scheduler::claim_incoming`]: incoming RDMA), which stream
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

/// What [`Scheduler::on_fault`] (claim, resolve, `resolved` in one call)
/// did with one SMMU fault event.
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
    /// Claims made and not yet resolved (a few at once: a list, which
    /// keeps its memory between passes).
    claims: Vec<(ClaimId, fault::Pending)>,
    next_claim: u64,
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
            claims: Vec::new(),
            next_claim: 1,
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
