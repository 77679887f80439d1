//! The DMA service: the one loop that moves everything forward, in the
//! order the scheduler's correctness depends on. SERVICE (the scheduler,
//! the engines) is held for steps 1-2 and 4-5, not while faults are
//! resolved:
//!
//! ```text
//!  ┌ SERVICE ───────────────────────────────────────────┐
//!  │ 1. observe_completions: engines, watchdogs          │ a completion is
//!  │ 2. drain_and_claim: iommu::drain (what was queued   │ believed only after
//!  │    when it began; the SMMU lock keeps two cores'    │ a drain that began
//!  │    drains apart) → claim each fault:                │ after it was seen,
//!  │      in a transfer → scheduler.claim (recorded on   │ each drained fault
//!  │        the segments: they wait for it)              │ claimed (on this
//!  │      outside → claim_incoming (RDMA: page + window) │ core or another)
//!  │      lost events → every in-flight segment suspect  │ before SERVICE is
//!  └─────────────────────────────────────────────────────┘ let go
//!    3. resolve (no lock of the service): StreamMemory:
//!       iommu::allows, mm::resolve, view mirror; faulted pages first,
//!       then (SERVICE, briefly) tell_incoming: engine.page_ready,
//!       then the prefetch windows
//!  ┌ SERVICE ───────────────────────────────────────────┐
//!  │ 4. report: scheduler.resolved per claim, counters   │
//!  │    more pending in the event queue? back to 2       │
//!  │ 5. finish_pass: believe the completions of 1        │ → Done, or retransmit
//!  │    (retransmissions wait for their claims), poll,   │   once resolved
//!  │    collect finished                                 │
//!  └─────────────────────────────────────────────────────┘
//! ```
//!
//! It runs from the SMMU's and the devices' interrupts, and from `wait`,
//! `try_take` and `poke` on any core: each core resolves the faults it
//! drained, so two cores waiting on DMA resolve faults at once. A pass
//! that drained no fault does 1, 2 and 5 in one hold of SERVICE.
//!
//! The path end to end: "One device page fault, end to end" in
//! `docs/ARCHITECTURE.md`; where SERVICE stands among the other locks:
//! `docs/ARCHITECTURE.md`, "Locks".

extern crate alloc;

use super::engine::{DeviceEngine, PageReadiness};
use super::memory::{KernelMemory, StreamMemory};
use crate::sync::IrqSpinLock;
use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::time::Duration;
use dma::{
    EngineId, Policy, Stats, SubmitError, Transfer, TransferError, TransferId, TransferReport,
};
use hw::layout::MAX_CORES;

pub(super) struct Service {
    scheduler: dma::Scheduler,
    engines: Vec<Box<dyn DeviceEngine>>,
    /// One deadline per engine (same index).
    watchdogs: Vec<dma::Watchdog>,
    finished: BTreeMap<TransferId, Result<TransferReport, TransferError>>,
    /// The fault path's counters, as [`fault_counters`] reports them.
    counters: FaultCounters,
    /// The fault path's buffers, kept between passes so that a fault
    /// allocates nothing here: a drain's faults, their claims, and the
    /// claims' resolutions.
    spare_faults: Vec<crate::iommu::Fault>,
    spare_claims: Vec<dma::Claim>,
    spare_resolutions: Vec<dma::Resolution>,
}

impl Service {
    /// Resumes and starts what the scheduler can (see [`dma::Scheduler::poll`]).
    fn poll(&mut self, mem: &mut KernelMemory) {
        let mut engines: Vec<&mut dyn dma::Engine> = self
            .engines
            .iter_mut()
            .map(|e| e.as_mut() as &mut dyn dma::Engine)
            .collect();
        self.scheduler.poll(&mut engines, mem);
    }
}

static SERVICE: IrqSpinLock<Option<Service>> = IrqSpinLock::new(None);

fn with_service<R>(f: impl FnOnce(&mut Service) -> R) -> R {
    let mut guard = SERVICE.lock();
    let service = guard.get_or_insert_with(|| Service {
        scheduler: dma::Scheduler::new(dma::Config::default()),
        engines: Vec::new(),
        watchdogs: Vec::new(),
        finished: BTreeMap::new(),
        counters: FaultCounters::default(),
        spare_faults: Vec::new(),
        spare_claims: Vec::new(),
        spare_resolutions: Vec::new(),
    });
    f(service)
}

/// A completion an engine posted, not yet believed (step 4).
type Observed = (EngineId, dma::SegmentId, dma::Completion);

/// The faults of one drain, claimed (step 2): what step 3 resolves with
/// no lock held, and what step 4 reports.
struct Claimed {
    claims: Vec<dma::Claim>,
    /// Step 3's outcome, one per claim (in `Service::spare_resolutions`'
    /// memory).
    resolutions: Vec<dma::Resolution>,
    /// When the drain began: the fault service time runs from there.
    drain_start: crate::time::Instant,
    /// The part of it spent reading the event queue.
    drain_time: Duration,
    /// Distinct faults, event records and repeated records it read.
    faults: usize,
    records: usize,
    repeats: usize,
    /// The SMMU queued more meanwhile: drain again after these.
    more_pending: bool,
}

/// Runs the service once: the steps of the module diagram, SERVICE held
/// for steps 1-2 and 4-5, not for step 3 (the resolution).
pub(super) fn service() {
    let start = crate::time::now();
    let mut observed = Vec::new();
    let mut claimed = with_service(|s| {
        observed = s.observe_completions(start.since_boot().as_nanos() as u64);
        let claimed = s.drain_and_claim();
        if claimed.claims.is_empty() && !claimed.more_pending {
            // Nothing to resolve: the rest in the same hold.
            s.report(claimed);
            s.finish_pass(core::mem::take(&mut observed), start);
            return None;
        }
        Some(claimed)
    });
    while let Some(mut batch) = claimed {
        resolve(&batch.claims, &mut batch.resolutions);
        claimed = with_service(|s| {
            let more_pending = batch.more_pending;
            s.report(batch);
            if more_pending {
                return Some(s.drain_and_claim());
            }
            s.finish_pass(core::mem::take(&mut observed), start);
            None
        });
    }
}

/// Step 3, with SERVICE not held: makes the claimed pages resident as the
/// devices see them (`StreamMemory`: the grant checked, `mm::resolve`, the
/// page copied into the device's view). The faulted pages first, so that
/// the devices waiting on them are unblocked soonest (a device waiting on
/// an incoming fault is told at once), then the prefetch windows.
fn resolve(claims: &[dma::Claim], resolutions: &mut Vec<dma::Resolution>) {
    let mut kernel = KernelMemory;
    resolutions.clear();
    resolutions.extend(claims.iter().map(|c| dma::Resolution {
        page: c.resolve_page(&mut StreamMemory::new(c.stream, &mut kernel)),
        prefetched: 0,
    }));
    if claims.iter().any(|c| c.incoming) {
        with_service(|s| s.tell_incoming(claims, resolutions));
    }
    for (c, r) in claims.iter().zip(resolutions.iter_mut()) {
        r.prefetched = c.prefetch(&mut StreamMemory::new(c.stream, &mut kernel), r.page);
    }
}

impl Service {
    /// Step 1: the completions every engine has posted so far, and the
    /// watchdogs: an engine busy with nothing completed for the deadline
    /// is stopped (so it cannot write into its segments' memory after they
    /// end) and its segments complete as timed out.
    fn observe_completions(&mut self, now: u64) -> Vec<Observed> {
        let mut observed = Vec::new();
        let mut batch = Vec::new();
        for (i, engine) in self.engines.iter_mut().enumerate() {
            engine.poll_completions(&mut batch);
            let busy = self.scheduler.in_flight(EngineId(i)) > 0;
            if self.watchdogs[i].check(now, busy, !batch.is_empty()) {
                if let Some(held) = engine.stop() {
                    log::error!(
                        "DMA: engine {i} completed nothing for {} s with {} segment(s) in flight; it was stopped and its transfers fail (timed out)",
                        dma::watchdog::DEFAULT_DEADLINE_NS / 1_000_000_000,
                        held.len()
                    );
                    let timed_out = dma::Completion::Error(dma::EngineError::TimedOut);
                    batch.extend(held.into_iter().map(|seg| (seg, timed_out)));
                }
            }
            observed.extend(batch.drain(..).map(|(seg, c)| (EngineId(i), seg, c)));
        }
        observed
    }

    /// Step 2: drains the SMMU event queue (what it held when the drain
    /// began; another core draining at the same time gets other events)
    /// and claims each fault: in a transfer, `Scheduler::claim` records it
    /// on the segments it spoiled; outside, for the engine that waits on
    /// such faults, `claim_incoming`. Lost events make every in-flight
    /// segment of the devices suspect. Nothing is resolved here.
    fn drain_and_claim(&mut self) -> Claimed {
        let drain_start = crate::time::now();
        let drained = crate::iommu::drain(core::mem::take(&mut self.spare_faults));
        let drain_time = drain_start.elapsed();
        let mut claims = core::mem::take(&mut self.spare_claims);
        for fault in &drained.faults {
            self.counters.device_faults += 1;
            if !crate::iommu::allows(fault.stream, fault.iova as usize, fault.access) {
                crate::iommu::report_isolation_fault(
                    fault.stream,
                    fault.iova as usize,
                    fault.access,
                );
            }
            if let Some(claim) = self.claim(fault) {
                claims.push(claim);
            }
        }
        if drained.events_lost {
            self.counters.lost_event_reports += 1;
            let mut suspect = 0;
            for i in 0..self.engines.len() {
                suspect += self
                    .scheduler
                    .events_lost(dma::StreamId(self.engines[i].stream()));
            }
            log::warn!(
                "SMMU event queue overflowed: {suspect} in-flight segment(s) will be made whole"
            );
        }
        let faults = drained.faults.len();
        self.spare_faults = drained.faults;
        Claimed {
            claims,
            resolutions: core::mem::take(&mut self.spare_resolutions),
            drain_start,
            drain_time,
            faults,
            records: drained.records,
            repeats: drained.repeats,
            more_pending: drained.more_pending,
        }
    }

    /// One fault of step 2: the claim to resolve, if any. A fault outside
    /// every transfer is claimed for the engine that waits on such faults
    /// (an RDMA engine's incoming WRITEs and READs); anyone else's is a
    /// stray, logged.
    fn claim(&mut self, fault: &crate::iommu::Fault) -> Option<dma::Claim> {
        let access = match fault.access {
            crate::iommu::DeviceAccess::Write => dma::Access::Write,
            _ => dma::Access::Read,
        };
        let stream = dma::StreamId(fault.stream);
        let iova = fault.iova as usize;
        let mut kernel = KernelMemory;
        let seen = StreamMemory::new(stream, &mut kernel);
        match self.scheduler.claim(&seen, stream, iova, access) {
            dma::ClaimOutcome::Claimed(claim) => return Some(claim),
            dma::ClaimOutcome::Duplicate => return None,
            dma::ClaimOutcome::Stray => {}
        }
        let waits = self
            .engines
            .iter()
            .any(|e| e.stream() == fault.stream && e.resolves_unclaimed_faults());
        if !waits {
            self.counters.stray += 1;
            log::warn!("device fault matches no transfer: {fault:?}");
            return None;
        }
        Some(self.scheduler.claim_incoming(&seen, stream, iova, access))
    }

    /// Step 3's one locked moment: each engine waiting on an incoming fault
    /// learns that its page is resident (or never will be), before the
    /// windows are made resident.
    fn tell_incoming(&mut self, claims: &[dma::Claim], resolved: &[dma::Resolution]) {
        for (claim, r) in claims.iter().zip(resolved).filter(|(c, _)| c.incoming) {
            let owner = self
                .engines
                .iter_mut()
                .find(|e| e.stream() == claim.stream.0 && e.resolves_unclaimed_faults());
            if let Some(engine) = owner {
                let readiness = match r.page {
                    Ok(_) => PageReadiness::Resolved,
                    Err(_) => PageReadiness::Failed,
                };
                engine.page_ready(claim.iova as u64, readiness);
            }
        }
    }

    /// Step 4: the claims of one drain end (`Scheduler::resolved`: an
    /// unresolvable page fails the transfers that wanted it, stalled
    /// segments are owed a resume, spoiled ones may be retransmitted), and
    /// the fault path's counters, this core's among them. The batch's
    /// buffers are kept for the next drain.
    fn report(&mut self, mut batch: Claimed) {
        let core = crate::smp::current();
        for (claim, resolution) in batch.claims.iter().zip(&batch.resolutions) {
            if self.scheduler.resolved(claim.id, *resolution).is_err() {
                log::error!("DMA: claim {:?} was resolved twice", claim.id);
            }
            if let Some(n) = self.counters.resolved_by_core.get_mut(core) {
                *n += 1;
            }
            if claim.incoming {
                self.counters.unclaimed_resolved += 1;
                self.counters.unclaimed_prefetched += resolution.prefetched as u64;
                if resolution.page.is_err() {
                    log::debug!("device fault at {:#x} unresolvable", claim.iova);
                }
            }
        }
        if batch.faults > 0 {
            self.counters.fault_service += batch.drain_start.elapsed();
            self.counters.faults_serviced += batch.faults as u64;
            self.counters.fault_records += batch.records as u64;
            self.counters.fault_repeats += batch.repeats as u64;
            self.counters.fault_drains += 1;
            self.counters.fault_drain_time += batch.drain_time;
        }
        batch.claims.clear();
        self.spare_claims = batch.claims;
        self.spare_resolutions = batch.resolutions;
    }

    /// Steps 4-5 after the last drain: believe the completions observed in
    /// step 1 (every fault their DMA raised has been claimed by now, on
    /// this core or another), poll, and keep what finished.
    fn finish_pass(&mut self, observed: Vec<Observed>, start: crate::time::Instant) {
        self.believe(observed);
        self.poll(&mut KernelMemory);
        for (id, result) in self.scheduler.take_finished() {
            self.finished.insert(id, result);
        }
        self.counters.busy += start.elapsed();
    }

    /// The observed completions, believed now that their faults have been
    /// claimed (→ done, or the spoiled blocks retransmitted once their
    /// claims are resolved).
    fn believe(&mut self, observed: Vec<Observed>) {
        for (engine, segment, completion) in observed {
            if self
                .scheduler
                .completed(engine, segment, completion)
                .is_err()
            {
                log::warn!("completion for an unknown segment {segment:?}");
            }
        }
    }
}

/// Called from the SMMU's and the devices' interrupts.
pub(crate) fn service_from_irq() {
    service();
}

/// Moves all DMA work forward once (for drivers that wait on their own
/// completions, like the RDMA verbs).
pub fn poke() {
    service();
}

/// The outcome of transfer `id` if the service has finished it already
/// (without running the service: for callers that just did, with [`poke`]).
pub fn take_finished(id: TransferId) -> Option<Result<TransferReport, TransferError>> {
    with_service(|s| s.finished.remove(&id))
}

/// Queues `transfer` with the scheduler (what [`super::submit`] does
/// before running the service).
pub(super) fn queue(engine: EngineId, transfer: Transfer) -> Result<TransferId, SubmitError> {
    with_service(|s| s.scheduler.submit(engine, transfer))
}

/// The SMMU StreamID of `engine`'s device, for its grants (`None`: no such
/// engine).
pub(super) fn stream_of(engine: EngineId) -> Option<u32> {
    with_service(|s| s.engines.get(engine.0).map(|e| e.stream()))
}

/// Registers a device engine that runs up to `window` segments at once.
pub fn add_engine(engine: Box<dyn DeviceEngine>, window: usize) -> EngineId {
    with_service(|s| {
        let id = s.scheduler.add_engine(engine.as_ref(), window);
        s.engines.push(engine);
        s.watchdogs.push(dma::Watchdog::default());
        id
    })
}

/// What the scheduler knows of `engine` (`None` if there is no such
/// engine): a caller picks its policy by it (`physical` engines take only
/// `Policy::Pin`).
pub fn caps(engine: EngineId) -> Option<dma::EngineCaps> {
    with_service(|s| s.engines.get(engine.0).map(|e| e.caps()))
}

/// Statistics of every transfer run under `policy` so far.
pub fn stats(policy: Policy) -> Stats {
    with_service(|s| *s.scheduler.stats(policy))
}

/// Counters of the fault path as a whole.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultCounters {
    /// Device faults after deduplication (one per stream, page and access).
    pub device_faults: u64,
    /// Faults that matched no in-flight transfer.
    pub stray: u64,
    /// Faults outside any transfer resolved for an engine (incoming RDMA).
    pub unclaimed_resolved: u64,
    /// Pages made resident ahead of those faults.
    pub unclaimed_prefetched: u64,
    /// Event-queue overflows recovered from.
    pub lost_event_reports: u64,
    /// Device faults resolved (claims: faults new to a transfer, and
    /// incoming ones), by the core that resolved them: every core that runs
    /// the service (the SMMU's interrupt, `wait`, `try_take`, `poke`)
    /// resolves the faults it drained.
    pub resolved_by_core: [u64; MAX_CORES],
    /// Kernel time spent servicing DMA (completions, faults, starts),
    /// summed over cores.
    pub busy: Duration,
    /// Guest time from reading fault events to the resubmissions, summed.
    pub fault_service: Duration,
    /// Faults handled in that time.
    pub faults_serviced: u64,
    /// SMMU event records read in that time (QEMU logs a faulting access
    /// once per retried word: many records per fault).
    pub fault_records: u64,
    /// Of those, records that repeated the one before (counted, not
    /// decoded).
    pub fault_repeats: u64,
    /// Drains of the event queue that found faults.
    pub fault_drains: u64,
    /// The part of `fault_service` spent reading the event queue.
    pub fault_drain_time: Duration,
}

/// The fault path's counters.
pub fn fault_counters() -> FaultCounters {
    with_service(|s| s.counters)
}
