//! DMA on virtual addresses: the kernel side of the fault path.
//!
//! Apps hand the scheduler transfers on their own virtual addresses; the
//! devices reach them through the SMMU, each confined device only what it
//! was granted ([`grant`]; see `iommu`).
//! `service` is the one loop that moves everything forward, in the order
//! the scheduler's correctness depends on. SERVICE (the scheduler, the
//! engines) is held for steps 1-2 and 4-5, not while faults are resolved:
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

extern crate alloc;

use crate::mm::{self, FaultError, MmError};
use crate::sync::IrqSpinLock;
use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::ops::Range;
use core::time::Duration;
use hw::edu::{Edu, EduEngine};
use hw::gicv2::Trigger;
use hw::layout::MAX_CORES;
use hw::mmio::Mmio;
use hw::nvme::{Nvme, NvmeEngine, QueueMemory};
/// The device error a ZDMA segment ends with when its memory is not
/// pinned (see [`zdma`]).
pub use hw::zdma::NOT_DMA_MEMORY as ZDMA_NOT_DMA_MEMORY;
use hw::zdma::{Zdma, ZdmaEngine};

pub use dma::{
    Direction, EngineId, Policy, Segment, Stats, SubmitError, Transfer, TransferError, TransferId,
    TransferReport,
};

/// A device engine the kernel drives: the scheduler's view plus a way to
/// collect finished segments.
pub trait DeviceEngine: dma::Engine + Send {
    /// Collects segments the device has finished since the last call.
    fn poll_completions(&mut self, out: &mut Vec<(dma::SegmentId, dma::Completion)>);
    /// The SMMU StreamID of the device.
    fn stream(&self) -> u32 {
        self.caps().stream.0
    }
    /// Whether faults of this device that match no transfer are still its
    /// own to wait on (an RDMA engine's incoming WRITEs and READs): the
    /// service then resolves the page and calls [`page_ready`](Self::page_ready).
    fn resolves_unclaimed_faults(&self) -> bool {
        false
    }
    /// The page at `va` that faulted outside any transfer is present now
    /// (`resolved`), or can never be.
    fn page_ready(&mut self, va: u64, resolved: bool) {
        let _ = (va, resolved);
    }
    /// Stops a device that stopped completing (see [`dma::watchdog`]) so
    /// that it no longer touches memory, and returns the segments it held;
    /// `None` for devices that cannot be stopped, which the watchdog then
    /// leaves alone.
    fn stop(&mut self) -> Option<Vec<dma::SegmentId>> {
        None
    }
}

impl DeviceEngine for EduEngine {
    fn poll_completions(&mut self, out: &mut Vec<(dma::SegmentId, dma::Completion)>) {
        EduEngine::poll_completions(self, |id, c| out.push((id, c)));
    }
}

impl DeviceEngine for NvmeEngine {
    fn poll_completions(&mut self, out: &mut Vec<(dma::SegmentId, dma::Completion)>) {
        NvmeEngine::poll_completions(self, |id, c| out.push((id, c)));
    }
    fn stop(&mut self) -> Option<Vec<dma::SegmentId>> {
        let mut held = Vec::new();
        if !NvmeEngine::stop(self, |id| held.push(id)) {
            log::error!("nvme: the controller did not confirm it stopped");
        }
        Some(held)
    }
}

impl DeviceEngine for ZdmaEngine {
    fn poll_completions(&mut self, out: &mut Vec<(dma::SegmentId, dma::Completion)>) {
        ZdmaEngine::poll_completions(self, |id, c| out.push((id, c)));
    }
}

impl DeviceEngine for hw::sdhci::SdEngine<hw::gem::Words> {
    fn poll_completions(&mut self, out: &mut Vec<(dma::SegmentId, dma::Completion)>) {
        hw::sdhci::SdEngine::poll_completions(self, |id, c| out.push((id, c)));
    }
}

/// The memory manager as the scheduler sees it.
struct KernelMemory;

fn mem_error(e: MmError) -> dma::MemError {
    match e {
        MmError::OutOfFrames | MmError::TooManyPins | MmError::Fault(FaultError::OutOfFrames) => {
            dma::MemError::OutOfMemory
        }
        MmError::Fault(FaultError::PermissionDenied(_)) => dma::MemError::PermissionDenied,
        _ => dma::MemError::NoRegion,
    }
}

impl dma::Memory for KernelMemory {
    fn page_size(&self) -> usize {
        mm::FRAME_SIZE
    }

    fn is_resident(&self, va: usize, access: dma::Access) -> bool {
        mm::accessible(va, access == dma::Access::Write)
    }

    fn make_resident(&mut self, va: usize, access: dma::Access) -> Result<(), dma::MemError> {
        let access = match access {
            dma::Access::Read => mm::Access::Read,
            dma::Access::Write => mm::Access::Write,
        };
        mm::resolve(va, access)
            .map(|_| ())
            .map_err(|e| mem_error(e.into()))
    }

    fn pin(&mut self, range: Range<usize>) -> Result<(), dma::MemError> {
        mm::pin(range).map_err(mem_error)
    }

    fn unpin(&mut self, range: Range<usize>) {
        let _ = mm::unpin(range);
    }

    fn now(&self) -> u64 {
        crate::time::now().since_boot().as_nanos() as u64
    }
}

/// The memory manager as one device stream sees it: a page is resident
/// only if the device's view maps it, and a fault is resolved only where
/// the device was granted the memory (else `NotGranted`: an isolation
/// fault); a resolved page is copied into the view before the segment
/// is retried.
struct StreamMemory<'a> {
    stream: u32,
    kernel: &'a mut KernelMemory,
}

impl<'a> StreamMemory<'a> {
    fn new(stream: dma::StreamId, kernel: &'a mut KernelMemory) -> Self {
        StreamMemory {
            stream: stream.0,
            kernel,
        }
    }
}

fn device_access(access: dma::Access) -> crate::iommu::DeviceAccess {
    match access {
        dma::Access::Read => crate::iommu::DeviceAccess::Read,
        dma::Access::Write => crate::iommu::DeviceAccess::Write,
    }
}

impl dma::Memory for StreamMemory<'_> {
    fn page_size(&self) -> usize {
        self.kernel.page_size()
    }

    fn is_resident(&self, va: usize, access: dma::Access) -> bool {
        self.kernel.is_resident(va, access)
            && crate::iommu::reaches(self.stream, va, access == dma::Access::Write)
    }

    fn make_resident(&mut self, va: usize, access: dma::Access) -> Result<(), dma::MemError> {
        if !crate::iommu::allows(self.stream, va, device_access(access)) {
            // Reported by the service for the faulting page; a prefetch
            // that runs past the grant just stops there.
            return Err(dma::MemError::NotGranted);
        }
        self.kernel.make_resident(va, access)?;
        // Mapping a granted page copies it into the views (the memory
        // manager's hook); only a page the kernel had mapped already is
        // copied here.
        let write = access == dma::Access::Write;
        if crate::iommu::reaches(self.stream, va, write) || crate::iommu::mirror(self.stream, va) {
            Ok(())
        } else {
            Err(dma::MemError::OutOfMemory)
        }
    }

    fn pin(&mut self, range: Range<usize>) -> Result<(), dma::MemError> {
        self.kernel.pin(range)
    }

    fn unpin(&mut self, range: Range<usize>) {
        self.kernel.unpin(range)
    }

    fn now(&self) -> u64 {
        self.kernel.now()
    }
}

struct Service {
    scheduler: dma::Scheduler,
    engines: Vec<Box<dyn DeviceEngine>>,
    /// One deadline per engine (same index).
    watchdogs: Vec<dma::Watchdog>,
    finished: BTreeMap<TransferId, Result<TransferReport, TransferError>>,
    /// Faults no in-flight transfer explained (logged, counted).
    stray: u64,
    /// Faults outside any transfer resolved for an engine that waits on
    /// them (incoming RDMA).
    unclaimed_resolved: u64,
    /// Pages made resident ahead of such faults.
    unclaimed_prefetched: u64,
    /// Times the SMMU reported lost events.
    lost_event_reports: u64,
    /// Faults taken by devices, after deduplication.
    device_faults: u64,
    /// Claims resolved (device faults new to a transfer, and incoming
    /// ones), by the core that drained and resolved them.
    resolved_by_core: [u64; MAX_CORES],
    /// Time spent in `service`, summed over cores (the kernel's share of
    /// DMA work, resolution outside SERVICE included).
    busy: Duration,
    /// Time from draining fault events to the retransmissions being
    /// started, summed over the service passes that handled faults.
    fault_service: Duration,
    /// Faults those passes handled.
    faults_serviced: u64,
    /// SMMU event records those passes read (repeats included).
    fault_records: u64,
    /// Of those, records that repeated the one before (not decoded).
    fault_repeats: u64,
    /// Drains of the event queue that found faults.
    fault_drains: u64,
    /// The part of `fault_service` spent reading the event queue.
    fault_drain_time: Duration,
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
        stray: 0,
        unclaimed_resolved: 0,
        unclaimed_prefetched: 0,
        lost_event_reports: 0,
        device_faults: 0,
        resolved_by_core: [0; MAX_CORES],
        busy: Duration::ZERO,
        fault_service: Duration::ZERO,
        faults_serviced: 0,
        fault_records: 0,
        fault_repeats: 0,
        fault_drains: 0,
        fault_drain_time: Duration::ZERO,
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
fn service() {
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
            self.device_faults += 1;
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
            self.lost_event_reports += 1;
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
            self.stray += 1;
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
                engine.page_ready(claim.iova as u64, r.page.is_ok());
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
            if let Some(n) = self.resolved_by_core.get_mut(core) {
                *n += 1;
            }
            if claim.incoming {
                self.unclaimed_resolved += 1;
                self.unclaimed_prefetched += resolution.prefetched as u64;
                if resolution.page.is_err() {
                    log::debug!("device fault at {:#x} unresolvable", claim.iova);
                }
            }
        }
        if batch.faults > 0 {
            self.fault_service += batch.drain_start.elapsed();
            self.faults_serviced += batch.faults as u64;
            self.fault_records += batch.records as u64;
            self.fault_repeats += batch.repeats as u64;
            self.fault_drains += 1;
            self.fault_drain_time += batch.drain_time;
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
        self.busy += start.elapsed();
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

/// Registers a device engine that runs up to `window` segments at once.
pub fn add_engine(engine: Box<dyn DeviceEngine>, window: usize) -> EngineId {
    with_service(|s| {
        let id = s.scheduler.add_engine(engine.as_ref(), window);
        s.engines.push(engine);
        s.watchdogs.push(dma::Watchdog::default());
        id
    })
}

/// Queues a transfer on raw addresses and starts what it can; see [`wait`].
/// Safe code uses [`read`], [`write`], [`read_scatter`] or
/// [`write_gather`], which borrow the memory for the transfer.
///
/// # Safety
///
/// From this call until the transfer's outcome is taken ([`wait`],
/// [`try_take`], [`take_finished`]), the memory of `transfer.pieces`:
/// - must stay allocated (no `Region` or heap block holding it is freed);
/// - for `FromDevice`, must not be read or written by anything else (the
///   device writes it, at any time, in any order);
/// - for `ToDevice`, must not be written by anything else.
///
/// Memory no Rust value owns (an unmapped address, a device window) may be
/// named on purpose, as the isolation tests do: the SMMU then reports the
/// fault and the transfer ends with an error.
pub unsafe fn submit(engine: EngineId, transfer: Transfer) -> Result<TransferId, SubmitError> {
    let id = with_service(|s| s.scheduler.submit(engine, transfer))?;
    service();
    Ok(id)
}

/// The outcome of transfer `id`, if it has finished.
pub fn try_take(id: TransferId) -> Option<Result<TransferReport, TransferError>> {
    service();
    take_finished(id)
}

/// The outcome of transfer `id` if the service has finished it already
/// (without running the service: for callers that just did, with [`poke`]).
pub fn take_finished(id: TransferId) -> Option<Result<TransferReport, TransferError>> {
    with_service(|s| s.finished.remove(&id))
}

/// Waits for transfer `id` to finish (in low power between interrupts).
pub fn wait(id: TransferId) -> Result<TransferReport, TransferError> {
    loop {
        if let Some(result) = try_take(id) {
            return result;
        }
        crate::time::wait_for_interrupt_or(Duration::from_millis(1));
    }
}

/// Runs one transfer on raw addresses to the end.
///
/// # Safety
///
/// As for [`submit`], until this returns.
pub unsafe fn run(engine: EngineId, transfer: Transfer) -> Result<TransferReport, TransferError> {
    // SAFETY: the caller keeps the contract until `wait` returns, which is
    // when the transfer's outcome is taken.
    let id = unsafe { submit(engine, transfer) }.map_err(TransferError::Submit)?;
    wait(id)
}

/// Moves device bytes from `device_addr` on into `buf`, which is borrowed
/// for the whole transfer: no other code can read or write it meanwhile.
pub fn read(
    engine: EngineId,
    buf: &mut [u8],
    device_addr: u64,
    policy: Policy,
) -> Result<TransferReport, TransferError> {
    read_scatter(engine, &mut [buf], device_addr, policy)
}

/// Moves `buf` to the device at `device_addr`; `buf` is borrowed (and so
/// cannot change) for the whole transfer.
pub fn write(
    engine: EngineId,
    buf: &[u8],
    device_addr: u64,
    policy: Policy,
) -> Result<TransferReport, TransferError> {
    write_gather(engine, &[buf], device_addr, policy)
}

/// Moves one run of device bytes from `device_addr` on into `pieces`, in
/// order (a scatter list); each piece is borrowed for the whole transfer.
pub fn read_scatter(
    engine: EngineId,
    pieces: &mut [&mut [u8]],
    device_addr: u64,
    policy: Policy,
) -> Result<TransferReport, TransferError> {
    let ranges: Vec<_> = pieces.iter_mut().map(|p| address_range(p)).collect();
    let _grants = grant_pieces(engine, &ranges, Rights::ReadWrite);
    let transfer = Transfer {
        direction: Direction::FromDevice,
        pieces: ranges,
        device_addr,
        device_key: 0,
        policy,
    };
    // SAFETY: every piece is exclusively borrowed until `run` returns, so
    // it stays allocated and nothing else reads or writes it meanwhile.
    unsafe { run(engine, transfer) }
}

/// Moves `pieces`, in order, to the device as one run of bytes from
/// `device_addr` on (a gather list); each piece is borrowed for the whole
/// transfer.
pub fn write_gather(
    engine: EngineId,
    pieces: &[&[u8]],
    device_addr: u64,
    policy: Policy,
) -> Result<TransferReport, TransferError> {
    let ranges: Vec<_> = pieces.iter().map(|p| address_range(p)).collect();
    let _grants = grant_pieces(engine, &ranges, Rights::Read);
    let transfer = Transfer {
        direction: Direction::ToDevice,
        pieces: ranges,
        device_addr,
        device_key: 0,
        policy,
    };
    // SAFETY: every piece is borrowed until `run` returns, so it stays
    // allocated and nothing writes it meanwhile.
    unsafe { run(engine, transfer) }
}

pub use crate::iommu::{Grant, GrantError, Rights};

/// Lets `engine`'s device reach `memory` (whole pages of one region, not
/// the heap) with `rights`, until the [`Grant`] is dropped. A device the
/// SMMU confines reaches nothing else: a transfer on memory it was not
/// granted fails with `MemError::NotGranted` at the device's first access
/// there, and not one byte of that memory changes. Granting pins and
/// touches nothing. Devices that move physical addresses (ZDMA, SD) and
/// those not confined get a grant that changes nothing.
///
/// ```text
/// let buf = Region::demand_zero(1 << 20)?;
/// let _grant = dma::grant(engine, buf.range(), Rights::ReadWrite)?;
/// unsafe { dma::run(engine, Transfer::contiguous(FromDevice, buf.range(), 0, policy)) }?;
/// ```
pub fn grant(engine: EngineId, memory: Range<usize>, rights: Rights) -> Result<Grant, GrantError> {
    let stream = with_service(|s| s.engines.get(engine.0).map(|e| e.stream()));
    match stream {
        Some(stream) => crate::iommu::grant(stream, memory, rights),
        None => Err(GrantError::NotGrantable(mm::NotGrantable::NotInOneRegion)),
    }
}

/// Lets `engine`'s device reach the pages of `memory`, wherever they are
/// (heap buffers too), with `rights`, until the [`Grant`] is dropped: for
/// one transfer on memory that is not a region of its own.
///
/// # Safety
///
/// Until the grant is dropped the device may read (with `ReadWrite`, also
/// write) every byte of the pages touching `memory`: they must be the
/// caller's, the rest of each page around a smaller buffer included.
pub unsafe fn grant_memory(
    engine: EngineId,
    memory: Range<usize>,
    rights: Rights,
) -> Result<Grant, GrantError> {
    let stream = with_service(|s| s.engines.get(engine.0).map(|e| e.stream()));
    match stream {
        // SAFETY: the caller's contract.
        Some(stream) => unsafe { crate::iommu::grant_memory(stream, memory, rights) },
        None => Err(GrantError::NotGrantable(mm::NotGrantable::NotInOneRegion)),
    }
}

/// Grants the pages of each piece for one transfer of the safe forms.
///
/// The borrow covers the pieces' bytes; the rest of their first and last
/// pages is reachable too while the transfer runs (an SMMU maps whole
/// pages). The device is told only the pieces.
fn grant_pieces(engine: EngineId, pieces: &[Range<usize>], rights: Rights) -> Vec<Grant> {
    pieces
        .iter()
        // SAFETY: each piece is borrowed by the caller for the transfer,
        // which ends before the grants are dropped.
        .filter_map(|p| unsafe { grant_memory(engine, p.clone(), rights) }.ok())
        .collect()
}

/// The addresses of `bytes`.
fn address_range(bytes: &[u8]) -> Range<usize> {
    let start = bytes.as_ptr() as usize;
    start..start + bytes.len()
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
    with_service(|s| FaultCounters {
        device_faults: s.device_faults,
        stray: s.stray,
        unclaimed_resolved: s.unclaimed_resolved,
        unclaimed_prefetched: s.unclaimed_prefetched,
        lost_event_reports: s.lost_event_reports,
        resolved_by_core: s.resolved_by_core,
        busy: s.busy,
        fault_service: s.fault_service,
        faults_serviced: s.faults_serviced,
        fault_records: s.fault_records,
        fault_repeats: s.fault_repeats,
        fault_drains: s.fault_drains,
        fault_drain_time: s.fault_drain_time,
    })
}

/// Why a device could not be opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceError {
    /// No such PCI function (is it on QEMU's command line?).
    NotFound,
    /// No SMMU: its DMA could not reach virtual addresses.
    NoSmmu,
    /// The controller did not come up.
    Init(hw::nvme::NvmeError),
    /// The SD card did not come up.
    Sd(hw::sdhci::SdError),
    /// No frames for the controller's descriptor table.
    OutOfMemory,
}

/// Zeroed contiguous frames for queues and PRP lists (pinned for good),
/// granted to the device `stream` for good.
struct Frames {
    stream: u32,
}

impl QueueMemory for Frames {
    fn alloc_pages(&mut self, pages: usize) -> Option<usize> {
        let start = mm::alloc_contiguous(pages, mm::FRAME_SIZE).ok()?;
        // SAFETY: freshly allocated frames, identity-mapped read-write.
        unsafe { core::ptr::write_bytes(start as *mut u8, 0, pages * mm::FRAME_SIZE) };
        let frames = start..start + pages * mm::FRAME_SIZE;
        if let Err(e) = crate::iommu::grant_frames(self.stream, frames) {
            log::error!("queue frames for stream {:#x}: {e:?}", self.stream);
            mm::free_contiguous(start, pages);
            return None;
        }
        Some(start)
    }
}

/// Routes a DMA device's INTx to the service.
pub(crate) fn register_intx(intid: Option<u32>) {
    if let Some(intid) = intid {
        if let Err(e) = crate::irq::register(intid, Trigger::Level, service_from_irq) {
            log::warn!("INTx {intid}: {e:?}; completions are polled");
        }
    }
}

static EDU: IrqSpinLock<Option<EngineId>> = IrqSpinLock::new(None);
static ZDMA: IrqSpinLock<Option<EngineId>> = IrqSpinLock::new(None);

/// The board's memory-to-memory DMA channel (the ZynqMP's ZDMA) as an
/// engine (opened once, then shared). A transfer copies its memory to the
/// device address (another virtual address: `ToDevice`) or from it.
///
/// No SMMU stands in front of it (QEMU's `xlnx-zcu102` does not model the
/// MMU-500), so it moves physical addresses and nothing can fault: both
/// sides must be pinned (`Policy::Pin` pins the transfer's own memory; the
/// device-address side is the caller's to pin), else the segment fails
/// with `EngineError::Device(hw::zdma::NOT_DMA_MEMORY)` before the channel
/// touches anything. The other policies would leave pages free to move
/// while the channel uses their old addresses: they are refused at submit
/// with `SubmitError::NeedsSmmu`.
pub fn zdma() -> Result<EngineId, DeviceError> {
    if let Some(id) = *ZDMA.lock() {
        return Ok(id);
    }
    let channel = hw::board::CURRENT
        .zdma
        .as_ref()
        .ok_or(DeviceError::NotFound)?;
    // SAFETY: the board names the channel's register block, inside a device
    // window the kernel maps as device memory; nothing else drives it.
    let regs = unsafe { hw::mmio::Mmio::new(channel.base, 0x1000) };
    let translate: fn(usize) -> Option<u64> = |va| mm::dma_frame(va).map(|pa| pa as u64);
    let id = add_engine(Box::new(ZdmaEngine::new(Zdma::new(regs), translate)), 1);
    register_intx(Some(channel.intid));
    *ZDMA.lock() = Some(id);
    Ok(id)
}
static NVME: IrqSpinLock<Option<(EngineId, NvmeInfo)>> = IrqSpinLock::new(None);

/// Where QEMU's edu device keeps its buffer, in its own address space: the
/// device address of every edu transfer.
pub const EDU_BUFFER: u64 = hw::edu::BUFFER_ADDRESS;

/// QEMU's edu device as a DMA engine (opened once, then shared).
pub fn edu() -> Result<EngineId, DeviceError> {
    if let Some(id) = *EDU.lock() {
        return Ok(id);
    }
    if !crate::iommu::present() {
        return Err(DeviceError::NoSmmu);
    }
    let f = crate::pci::find(hw::edu::VENDOR, hw::edu::DEVICE)
        .into_iter()
        .next()
        .ok_or(DeviceError::NotFound)?;
    let bar = f.bars[0].ok_or(DeviceError::NotFound)?;
    // SAFETY: BAR0 was assigned by PCI enumeration inside the PCIe window,
    // which the kernel maps as device memory; only this driver uses it.
    let edu = Edu::new(unsafe { Mmio::new(bar.address, bar.size) });
    let id = add_engine(
        Box::new(EduEngine::new(edu, f.bdf.requester_id() as u32)),
        1,
    );
    register_intx(f.intid);
    *EDU.lock() = Some(id);
    Ok(id)
}

/// What an app needs to know about the NVMe namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NvmeInfo {
    /// Bytes in namespace 1.
    pub capacity: u64,
    /// Bytes per block: transfers and disk offsets must be multiples.
    pub block_size: usize,
    /// Largest segment (one command).
    pub max_transfer: usize,
    /// Pieces of memory one command carries: up to 256 when the controller
    /// takes SGLs, else 1 (a gather transfer must then have its piece
    /// boundaries on blocks).
    pub max_pieces: usize,
}

static SD: IrqSpinLock<Option<(EngineId, NvmeInfo)>> = IrqSpinLock::new(None);

/// The board's SD card (the ZynqMP's SD0) as a block engine of the DMA
/// scheduler, with the same description as an NVMe namespace, so a disk
/// user (the key-value store's log) runs on either. Opened once, then
/// shared; `NotFound` without a controller or a card.
pub fn sd() -> Result<(EngineId, NvmeInfo), DeviceError> {
    if let Some(found) = *SD.lock() {
        return Ok(found);
    }
    let base = hw::board::CURRENT.sd.ok_or(DeviceError::NotFound)?;
    // SAFETY: the board names the controller's registers, inside a device
    // window the kernel maps as device memory; nothing else drives it.
    let regs = unsafe { Mmio::new(base, 0x1000) };
    let card = hw::sdhci::SdCard::init(regs).map_err(DeviceError::Sd)?;
    let pages = hw::sdhci::TABLE_BYTES.div_ceil(mm::FRAME_SIZE);
    let table_at =
        mm::alloc_contiguous(pages, mm::FRAME_SIZE).map_err(|_| DeviceError::OutOfMemory)?;
    // SAFETY: the frames were just allocated for good to the controller's
    // descriptor table, identity-mapped read-write, aligned; nothing else
    // refers to them.
    let table = hw::gem::Words(unsafe {
        core::slice::from_raw_parts_mut(table_at as *mut u32, hw::sdhci::TABLE_BYTES / 4)
    });
    let translate: fn(usize) -> Option<u64> = |va| mm::dma_frame(va).map(|pa| pa as u64);
    let engine = hw::sdhci::SdEngine::new(card, table, table_at as u64, translate);
    let info = NvmeInfo {
        capacity: engine.capacity(),
        block_size: hw::sdhci::BLOCK,
        max_transfer: hw::sdhci::MAX_SEGMENT,
        max_pieces: 1,
    };
    let id = add_engine(Box::new(engine), 1);
    register_intx(Some(hw::sdhci::SD0_INTID));
    *SD.lock() = Some((id, info));
    log::info!("sd: card of {} MiB, ADMA2", info.capacity >> 20);
    Ok((id, info))
}

/// The first NVMe controller as a DMA engine (opened once, then shared).
pub fn nvme() -> Result<(EngineId, NvmeInfo), DeviceError> {
    if let Some(found) = *NVME.lock() {
        return Ok(found);
    }
    if !crate::iommu::present() {
        return Err(DeviceError::NoSmmu);
    }
    let f = crate::pci::functions()
        .into_iter()
        .find(|f| f.class == hw::nvme::CLASS)
        .ok_or(DeviceError::NotFound)?;
    let bar = f.bars[0].ok_or(DeviceError::NotFound)?;
    // SAFETY: as for edu: an assigned BAR in the device-mapped PCIe window.
    let regs = unsafe { Mmio::new(bar.address, bar.size) };
    let stream = f.bdf.requester_id() as u32;
    let nvme = Nvme::init(regs, &mut Frames { stream }).map_err(DeviceError::Init)?;
    let info = NvmeInfo {
        capacity: nvme.blocks() * nvme.block_size() as u64,
        block_size: nvme.block_size(),
        max_transfer: nvme.max_transfer(),
        max_pieces: 1,
    };
    let engine =
        NvmeEngine::new(nvme, stream, &mut Frames { stream }).map_err(DeviceError::Init)?;
    let info = NvmeInfo {
        max_pieces: dma::Engine::caps(&engine).max_pieces,
        ..info
    };
    let id = add_engine(Box::new(engine), 16);
    register_intx(f.intid);
    *NVME.lock() = Some((id, info));
    Ok((id, info))
}
