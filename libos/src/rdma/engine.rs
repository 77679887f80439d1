//! The RDMA engine as one more engine of the DMA scheduler, plus the
//! driver state that verbs share with it.
//!
//! COPY, WRITE and READ are scheduler transfers: the scheduler cuts them
//! into segments, applies the policy (pin, prefault, fault-aware,
//! prefetch) and, since the engine stalls on a fault instead of aborting
//! (`can_resume`), answers each local fault with `mm::resolve` and a RESUME.
//! The remote side of a transfer is the device address: node and VA packed
//! by [`hw::rdma::request::device_address`].
//!
//! ```text
//!  scheduler ──start(seg)──► WR ──► engine ──► CQE ──poll_completions──► scheduler
//!  SMMU fault on seg.va ──► scheduler: mm::resolve ──resume──► RESUME wr_id
//!  SMMU fault elsewhere (incoming WRITE/READ, COPY destination, SEND source)
//!      ──► dma service: mm::resolve ──page_ready──► PAGE_READY va (ok | failed)
//! ```
//!
//! The remote side of a WRITE resolves its own faults: its engine answers
//! RNR NAK, and at the first fault probes the rest of the range, so that
//! its kernel resolves it all together.
//!
//! SENDs, RECVs and HELLO bypass the scheduler; their completions wait in
//! [`State::direct`] for the verbs layer.

extern crate alloc;

use super::device::Device;
use crate::dma::PageReadiness;
use crate::sync::IrqSpinLock;
use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;
use dma::{EngineCaps, EngineError, Resume, Segment, SegmentId, StreamId, TransferId};
use hw::rdma::request::segment_request;
use hw::rdma::wire::{Completion, Opcode, Status, WorkRequest, PAGE_READY_FAILED, RESUME_ABORT};

/// Largest segment the scheduler hands the engine.
pub const MAX_SEGMENT: usize = 256 * 1024;
/// Segments the engine runs at once.
pub const WINDOW: usize = 16;
/// Tag bit of work requests that are not scheduler segments.
pub(super) const DIRECT: u64 = 1 << 63;

/// What the engine reported for a transfer's segments, summed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineCounters {
    /// Faults the engine took on this node.
    pub local_faults: u64,
    /// Faults it took on the remote node.
    pub remote_faults: u64,
    /// Bytes it sent again over the fabric.
    pub retransmitted_bytes: u64,
    /// Microseconds the engine waited on the remote node's page faults
    /// (from each RNR NAK to sending again).
    pub remote_wait_us: u64,
    /// The address of the last access error it reported (0: none).
    pub fault_va: u64,
}

impl EngineCounters {
    pub(super) fn add(&mut self, c: &Completion) {
        self.local_faults += c.local_faults as u64;
        self.remote_faults += c.remote_faults as u64;
        self.retransmitted_bytes += c.retransmitted_bytes;
        self.remote_wait_us += u64::from(c.remote_wait_us);
        if c.fault_va != 0 {
            self.fault_va = c.fault_va;
        }
    }
}

/// The driver's state: the device and who is waiting for what.
pub(super) struct State {
    pub device: Device,
    /// Control messages (RESUME, PAGE_READY) that found no free slot yet.
    controls: VecDeque<WorkRequest>,
    next_wr: u64,
    /// Scheduler segments in flight, by work request tag.
    segments: BTreeMap<u64, SegmentId>,
    /// Engine counters per transfer, until the verbs layer takes them.
    pub counters: BTreeMap<TransferId, EngineCounters>,
    /// Completions of direct work requests.
    pub direct: VecDeque<Completion>,
    /// Everything the engine reported since boot.
    pub totals: EngineCounters,
    /// PAGE_READY messages sent (faults resolved for the engine).
    pub pages_ready: u64,
    /// Completion interrupts are off for a lone small transfer posted
    /// ([`Quiet::hold_if_lone`]) until the next request or waiter.
    quiet_lone: bool,
}

pub(super) static STATE: IrqSpinLock<Option<State>> = IrqSpinLock::new(None);

impl State {
    pub fn new(device: Device) -> Self {
        Self {
            device,
            controls: VecDeque::new(),
            next_wr: 1,
            segments: BTreeMap::new(),
            counters: BTreeMap::new(),
            direct: VecDeque::new(),
            totals: EngineCounters::default(),
            pages_ready: 0,
            quiet_lone: false,
        }
    }

    /// Completion interrupts back on (and no longer held off for a lone
    /// transfer).
    fn interrupts_on(&mut self) {
        self.quiet_lone = false;
        self.device.completion_interrupts(true);
    }

    /// Anything posted after a lone transfer may want its interrupt.
    fn end_lone_quiet(&mut self) {
        if self.quiet_lone {
            self.interrupts_on();
        }
    }

    /// A fresh tag for a direct work request.
    pub fn direct_tag(&mut self) -> u64 {
        self.next_wr += 1;
        self.next_wr | DIRECT
    }

    /// Sends queued control messages first: they unblock stalled work.
    fn flush_controls(&mut self) {
        while let Some(wr) = self.controls.front() {
            if !self.device.post(wr) {
                return;
            }
            self.controls.pop_front();
        }
    }

    /// Posts a work request behind any waiting control message.
    pub fn post(&mut self, wr: &WorkRequest) -> bool {
        self.end_lone_quiet();
        self.flush_controls();
        self.controls.is_empty() && self.device.post(wr)
    }

    /// Posts a control message, queueing it if the request queue is full.
    fn control(&mut self, wr: WorkRequest) {
        self.end_lone_quiet();
        self.flush_controls();
        if !self.controls.is_empty() || !self.device.post(&wr) {
            self.controls.push_back(wr);
        }
    }

    /// Moves every posted completion to the scheduler (`out`) or to the
    /// direct queue.
    pub fn collect(&mut self, out: &mut Vec<(SegmentId, dma::Completion)>) {
        self.device.ack_interrupt();
        let mut cqes = Vec::new();
        self.device.poll(|c| cqes.push(c));
        for c in cqes {
            self.totals.add(&c);
            match self.segments.remove(&c.wr_id) {
                Some(seg) => {
                    self.counters.entry(seg.transfer).or_default().add(&c);
                    let status = c.status();
                    let done = if status == Status::Success {
                        dma::Completion::Ok
                    } else {
                        log::debug!(
                            "rdma: segment {seg:?} ended {status:?} at {:#x}",
                            c.fault_va
                        );
                        dma::Completion::Error(EngineError::Device(c.status as u32))
                    };
                    out.push((seg, done));
                }
                None => self.direct.push_back(c),
            }
        }
        self.flush_controls();
    }
}

/// Longest a waiter spins on the completion ring before it sleeps until
/// an interrupt: a few times a lone small transfer's way through both
/// engines and the wire (30-40 us from the kick to its completion on an
/// idle 2-core host, several times that on a busy one). Under QEMU the
/// interrupt path (the engine's call eventfd, QEMU's main loop, the GIC,
/// waking the vCPU, the device's ISR read, the handler's service pass)
/// costs about as much again (bench/README.md, "RDMA over RoCEv2").
pub const SPIN: core::time::Duration = core::time::Duration::from_micros(250);

/// The engine's completion interrupts, off while this lives: a core that
/// posts a transfer, or waits for one and looks at the completion ring
/// itself, spares the engine the call, QEMU the interrupt and itself the
/// wake-up and the interrupt's service pass. Back on when dropped or
/// ended; a completion that came meanwhile is then taken by the caller's
/// next service pass (see [`Quiet::end`]).
pub(super) struct Quiet;

impl Quiet {
    /// Turns the engine's completion interrupts off until the drop.
    pub fn new() -> Self {
        with_state(|s| s.device.completion_interrupts(false));
        Self
    }

    /// Spins until the engine returns a completion or [`SPIN`] passes.
    pub fn spin(&self) {
        let deadline = crate::time::now().after(SPIN);
        while crate::time::now() < deadline
            && !with_state(|s| s.device.completion_waiting()).unwrap_or(true)
        {
            core::hint::spin_loop();
        }
    }
}

impl Quiet {
    /// Turns the interrupts back on; whether a completion came meanwhile
    /// (nobody was interrupted for it: the caller runs the service).
    pub fn end(self) -> bool {
        with_state(|s| {
            s.interrupts_on();
            s.device.completion_waiting()
        })
        .unwrap_or(false)
    }

    /// After posting a transfer of one segment: if it is the only segment
    /// in flight, its completion interests only its waiter, who looks at
    /// the ring itself, so the interrupts stay off (`None`) until the next
    /// request or waiter turns them on; else `Some(self)`.
    pub fn hold_if_lone(self) -> Option<Self> {
        let lone = with_state(|s| {
            let lone = s.segments.len() == 1 && s.controls.is_empty();
            s.quiet_lone |= lone;
            lone
        })
        .unwrap_or(false);
        if lone {
            core::mem::forget(self);
            None
        } else {
            Some(self)
        }
    }
}

impl Drop for Quiet {
    fn drop(&mut self) {
        with_state(|s| s.interrupts_on());
    }
}

/// The scheduler's handle on the engine (the state itself lives in
/// [`STATE`], shared with the verbs layer).
pub(super) struct RdmaEngine {
    pub stream: u32,
}

fn with_state<R>(f: impl FnOnce(&mut State) -> R) -> Option<R> {
    STATE.lock().as_mut().map(f)
}

impl dma::Engine for RdmaEngine {
    fn caps(&self) -> EngineCaps {
        EngineCaps {
            max_segment: MAX_SEGMENT,
            max_pieces: 1,
            block: 1,
            can_resume: true,
            stream: StreamId(self.stream),
            physical: false,
        }
    }

    fn start(&mut self, seg: &Segment) -> Result<(), EngineError> {
        with_state(|s| {
            s.next_wr += 1;
            let tag = s.next_wr & !DIRECT;
            if !s.post(&segment_request(seg, tag)) {
                return Err(EngineError::Busy);
            }
            s.segments.insert(tag, seg.id);
            Ok(())
        })
        .unwrap_or(Err(EngineError::Device(Status::BadRequest as u32)))
    }

    fn resume(&mut self, seg: &Segment, how: Resume) {
        with_state(|s| {
            // A segment is in flight at most once (the engine resumes, the
            // scheduler restarts only after a completion): find its tag.
            let tag = s
                .segments
                .iter()
                .find(|(_, id)| id.transfer == seg.id.transfer && id.index == seg.id.index)
                .map(|(&tag, _)| tag);
            if let Some(tag) = tag {
                s.control(WorkRequest {
                    opcode: Opcode::Resume as u8,
                    flags: if how == Resume::Abort {
                        RESUME_ABORT
                    } else {
                        0
                    },
                    wr_id: tag,
                    ..Default::default()
                });
            }
        });
    }
}

impl crate::dma::DeviceEngine for RdmaEngine {
    fn poll_completions(&mut self, out: &mut Vec<(SegmentId, dma::Completion)>) {
        with_state(|s| s.collect(out));
    }

    fn resolves_unclaimed_faults(&self) -> bool {
        true
    }

    fn page_ready(&mut self, va: u64, readiness: PageReadiness) {
        with_state(|s| {
            s.pages_ready += 1;
            s.control(WorkRequest {
                opcode: Opcode::PageReady as u8,
                flags: match readiness {
                    PageReadiness::Resolved => 0,
                    PageReadiness::Failed => PAGE_READY_FAILED,
                },
                local_va: va,
                ..Default::default()
            });
        });
    }
}
