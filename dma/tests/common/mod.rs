//! A simulated machine for the scheduler: memory with residency and regions,
//! DMA engines behind an SMMU that aborts (or stalls) exactly like the real
//! one, and the kernel loop that ties them together in the documented order
//! (observe completions, drain the event queue, hand completions over,
//! poll).
//!
//! Everything is deterministic: engines run when the loop says so, and the
//! clock only moves when something costs time.
#![allow(dead_code)]

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Range;

use dma::{
    Access, Completion, Config, Direction, Engine, EngineCaps, EngineError, EngineId, FaultAction,
    MemError, Memory, Policy, Resume, Scheduler, Segment, SegmentId, StreamId, Transfer,
    TransferError, TransferId, TransferReport,
};

pub const PAGE: usize = 4096;
pub const KIB: usize = 1024;
pub const MIB: usize = 1024 * 1024;

/// Synthetic costs, in ns, so that setup and total times mean something.
pub const RESOLVE_NS: u64 = 2_000;
pub const PIN_NS_PER_PAGE: u64 = 200;

fn page_of(va: usize) -> usize {
    va - va % PAGE
}

/// The memory manager: every page has content (resident or "swapped out");
/// only resident pages are reachable by the device.
#[derive(Default)]
pub struct SimMemory {
    data: BTreeMap<usize, Vec<u8>>,
    resident: BTreeSet<usize>,
    pinned: BTreeMap<usize, u32>,
    regions: Vec<(Range<usize>, bool)>,
    /// `make_resident` says Ok but the page never becomes resident.
    pub forgetful: bool,
    /// Pages whose next `make_resident` says Ok but leaves them out (as if
    /// evicted right after); the call after that works.
    pub forget_once: BTreeSet<usize>,
    /// `is_resident` calls so far.
    pub residency_checks: Cell<u64>,
    /// Frames left for new pages (`None`: unlimited).
    pub frames_left: Option<usize>,
    pub clock: u64,
    /// `make_resident` calls per page (including ones that changed nothing).
    pub resolve_calls: BTreeMap<usize, u32>,
    pub pins: u32,
    pub unpins: u32,
}

impl SimMemory {
    /// Declares a region; its pages start out not resident and zero.
    pub fn region(&mut self, range: Range<usize>, writable: bool) {
        self.regions.push((range, writable));
    }

    fn region_of(&self, va: usize) -> Option<bool> {
        self.regions
            .iter()
            .find(|(r, _)| r.contains(&va))
            .map(|&(_, w)| w)
    }

    /// Sets content as the CPU wrote it long ago (residency unchanged: the
    /// pages may be swapped out).
    pub fn store(&mut self, va: usize, bytes: &[u8]) {
        let mut done = 0;
        while done < bytes.len() {
            let a = va + done;
            let n = (PAGE - a % PAGE).min(bytes.len() - done);
            let page = self.data.entry(page_of(a)).or_insert_with(|| vec![0; PAGE]);
            page[a % PAGE..a % PAGE + n].copy_from_slice(&bytes[done..done + n]);
            done += n;
        }
    }

    /// Content as the CPU sees it (faulting pages in on the way would not
    /// change it).
    pub fn load(&self, range: Range<usize>) -> Vec<u8> {
        let mut out = vec![0; range.len()];
        let mut done = 0;
        while done < out.len() {
            let a = range.start + done;
            let n = (PAGE - a % PAGE).min(out.len() - done);
            if let Some(page) = self.data.get(&page_of(a)) {
                out[done..done + n].copy_from_slice(&page[a % PAGE..a % PAGE + n]);
            }
            done += n;
        }
        out
    }

    pub fn make_warm(&mut self, range: Range<usize>) {
        for p in (page_of(range.start)..range.end).step_by(PAGE) {
            self.resident.insert(p);
        }
    }

    /// Evicts the unpinned pages of `range` (content kept, as in swap).
    pub fn evict(&mut self, range: Range<usize>) {
        for p in (page_of(range.start)..range.end).step_by(PAGE) {
            if !self.pinned.contains_key(&p) {
                self.resident.remove(&p);
            }
        }
    }

    pub fn is_resident_page(&self, va: usize) -> bool {
        self.resident.contains(&page_of(va))
    }

    pub fn pinned_pages(&self) -> usize {
        self.pinned.len()
    }

    pub fn resident_pages(&self) -> usize {
        self.resident.len()
    }

    /// The device reads `buf.len()` bytes at `va` (within one page): false
    /// and zeros if the page is not resident.
    fn device_read(&self, va: usize, buf: &mut [u8]) -> bool {
        if !self.resident.contains(&page_of(va)) {
            buf.fill(0);
            return false;
        }
        match self.data.get(&page_of(va)) {
            Some(p) => buf.copy_from_slice(&p[va % PAGE..va % PAGE + buf.len()]),
            None => buf.fill(0),
        }
        true
    }

    /// The device writes `bytes` at `va` (within one page): dropped, false,
    /// if the page is not resident.
    fn device_write(&mut self, va: usize, bytes: &[u8]) -> bool {
        if !self.resident.contains(&page_of(va)) {
            return false;
        }
        self.store(va, bytes);
        true
    }
}

impl Memory for SimMemory {
    fn page_size(&self) -> usize {
        PAGE
    }

    fn is_resident(&self, va: usize, _: Access) -> bool {
        self.residency_checks.set(self.residency_checks.get() + 1);
        self.resident.contains(&page_of(va))
    }

    fn make_resident(&mut self, va: usize, access: Access) -> Result<(), MemError> {
        let page = page_of(va);
        *self.resolve_calls.entry(page).or_default() += 1;
        let writable = self.region_of(va).ok_or(MemError::NoRegion)?;
        if access == Access::Write && !writable {
            return Err(MemError::PermissionDenied);
        }
        if self.resident.contains(&page) {
            return Ok(());
        }
        if let Some(left) = &mut self.frames_left {
            if *left == 0 {
                return Err(MemError::OutOfMemory);
            }
            *left -= 1;
        }
        self.clock += RESOLVE_NS;
        if !self.forgetful && !self.forget_once.remove(&page) {
            self.resident.insert(page);
        }
        Ok(())
    }

    fn pin(&mut self, range: Range<usize>) -> Result<(), MemError> {
        if range
            .clone()
            .step_by(PAGE)
            .any(|p| self.region_of(p).is_none())
        {
            return Err(MemError::NoRegion);
        }
        self.pins += 1;
        for p in range.step_by(PAGE) {
            *self.pinned.entry(p).or_default() += 1;
            self.clock += PIN_NS_PER_PAGE;
        }
        Ok(())
    }

    fn unpin(&mut self, range: Range<usize>) {
        self.unpins += 1;
        for p in range.step_by(PAGE) {
            match self.pinned.get_mut(&p) {
                Some(1) => {
                    self.pinned.remove(&p);
                }
                Some(n) => *n -= 1,
                None => panic!("unpin of a page that is not pinned: {p:#x}"),
            }
        }
    }

    fn now(&self) -> u64 {
        self.clock
    }
}

/// One SMMU event record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    pub stream: StreamId,
    pub iova: usize,
    pub access: Access,
}

/// The SMMU event queue.
#[derive(Default)]
pub struct EventQueue {
    pub events: Vec<Event>,
    /// While set, records are dropped and `overflowed` is raised.
    pub lose: bool,
    pub overflowed: bool,
}

impl EventQueue {
    fn push(&mut self, e: Event) {
        if self.lose {
            self.overflowed = true;
        } else {
            self.events.push(e);
        }
    }
}

struct Running {
    seg: Segment,
    done: usize,
    stalled: bool,
}

/// A DMA engine behind the SMMU. Segments run in order, in 4-byte pieces;
/// a piece on a non-resident page raises one fault event and is aborted
/// (read as zeros, write dropped, the segment still completes Ok) or, if the
/// engine stalls, stops the engine until `resume`.
pub struct FakeEngine {
    pub caps: EngineCaps,
    /// Device-side memory, indexed by device address.
    pub device: Vec<u8>,
    queue: VecDeque<Running>,
    done: Vec<(SegmentId, Completion)>,
    /// Segments run per step: 1 is a device the kernel keeps up with, a
    /// large value one that runs its whole window before any fault is seen.
    pub burst: usize,
    /// `start` answers Busy once this many segments are queued.
    pub busy_at: Option<usize>,
    /// Every segment completes with this device error.
    pub device_error: Option<u32>,
    pub starts: u64,
    pub resumes: u64,
    pub aborts: u64,
    pub started: Vec<Segment>,
    /// Every `resume` the scheduler asked for, in order (stalled or not).
    pub resumed: Vec<(Segment, Resume)>,
}

impl FakeEngine {
    pub fn new(stream: u32, max_segment: usize, can_resume: bool, device_bytes: usize) -> Self {
        FakeEngine {
            caps: EngineCaps {
                max_segment,
                max_pieces: 1,
                block: 1,
                can_resume,
                stream: StreamId(stream),
                physical: false,
            },
            device: vec![0; device_bytes],
            queue: VecDeque::new(),
            done: Vec::new(),
            burst: 1,
            busy_at: None,
            device_error: None,
            starts: 0,
            resumes: 0,
            aborts: 0,
            started: Vec::new(),
            resumed: Vec::new(),
        }
    }

    /// The engine takes `max_pieces` pieces per segment (a gather list)
    /// and moves whole blocks of `block` bytes.
    pub fn gather(mut self, max_pieces: usize, block: usize) -> Self {
        self.caps.max_pieces = max_pieces;
        self.caps.block = block;
        self
    }

    /// Runs up to `burst` segments (fewer if one stalls).
    pub fn execute(&mut self, mem: &mut SimMemory, events: &mut EventQueue) {
        let stream = self.caps.stream;
        for _ in 0..self.burst {
            let Some(r) = self.queue.front_mut() else {
                return;
            };
            if r.stalled {
                return;
            }
            let seg = &r.seg;
            let access = match seg.direction {
                Direction::ToDevice => Access::Read,
                Direction::FromDevice => Access::Write,
            };
            // Page by page of each piece (residency cannot change while the
            // engine runs), but faulting pages raise one event per 4-byte
            // access.
            while r.done < seg.len() {
                let (mut piece, mut skip) = (0, r.done);
                while skip >= seg.pieces[piece].len() {
                    skip -= seg.pieces[piece].len();
                    piece += 1;
                }
                let va = seg.pieces[piece].start + skip;
                let n = (PAGE - va % PAGE).min(seg.pieces[piece].end - va);
                let dev = seg.device_addr as usize + r.done;
                let ok = match seg.direction {
                    Direction::ToDevice => mem.device_read(va, &mut self.device[dev..dev + n]),
                    Direction::FromDevice => mem.device_write(va, &self.device[dev..dev + n]),
                };
                if !ok {
                    let mut piece = va;
                    while piece < va + n {
                        events.push(Event {
                            stream,
                            iova: piece,
                            access,
                        });
                        if self.caps.can_resume {
                            r.stalled = true;
                            return;
                        }
                        piece = (piece & !3) + 4;
                    }
                }
                mem.clock += n as u64; // 1 byte per ns on the wire
                r.done += n;
            }
            let status = match self.device_error {
                Some(code) => Completion::Error(EngineError::Device(code)),
                None => Completion::Ok,
            };
            self.done.push((seg.id, status));
            self.queue.pop_front();
        }
    }

    /// Stops the device as the kernel does on a deadline: it drops the
    /// segments it held (they are returned) and runs nothing more.
    pub fn stop(&mut self) -> Vec<SegmentId> {
        self.burst = 0;
        self.queue.drain(..).map(|r| r.seg.id).collect()
    }

    pub fn take_completions(&mut self) -> Vec<(SegmentId, Completion)> {
        std::mem::take(&mut self.done)
    }

    pub fn queued(&self) -> usize {
        self.queue.len()
    }
}

impl Engine for FakeEngine {
    fn caps(&self) -> EngineCaps {
        self.caps
    }

    fn start(&mut self, seg: &Segment) -> Result<(), EngineError> {
        if self.busy_at.is_some_and(|n| self.queue.len() >= n) {
            return Err(EngineError::Busy);
        }
        assert!(
            seg.len() <= self.caps.max_segment,
            "segment longer than max_segment"
        );
        assert!(
            !seg.pieces.is_empty() && seg.pieces.len() <= self.caps.max_pieces,
            "{} pieces for an engine of {}",
            seg.pieces.len(),
            self.caps.max_pieces
        );
        assert!(seg.pieces.iter().all(|p| !p.is_empty()), "empty piece");
        let block = self.caps.block as u64;
        assert!(
            seg.device_addr.is_multiple_of(block) && (seg.len() as u64).is_multiple_of(block),
            "segment not in whole blocks: {seg:x?}"
        );
        self.starts += 1;
        self.started.push(seg.clone());
        self.queue.push_back(Running {
            seg: seg.clone(),
            done: 0,
            stalled: false,
        });
        Ok(())
    }

    fn resume(&mut self, seg: &Segment, how: Resume) {
        self.resumed.push((seg.clone(), how));
        let Some(pos) = self.queue.iter().position(|r| r.seg.id == seg.id) else {
            return;
        };
        if !self.queue[pos].stalled {
            return;
        }
        match how {
            Resume::Retry => {
                self.resumes += 1;
                self.queue[pos].stalled = false;
            }
            Resume::Abort => {
                self.aborts += 1;
                let r = self.queue.remove(pos).unwrap();
                self.done
                    .push((r.seg.id, Completion::Error(EngineError::Device(0xab))));
            }
        }
    }
}

/// How `on_fault` answered, summed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Actions {
    pub handled: u64,
    pub duplicate: u64,
    pub stray: u64,
    pub unresolvable: u64,
}

/// Runs after each step of the kernel loop, with the step number.
pub type StepHook = Box<dyn FnMut(&mut SimMemory, usize)>;

/// The kernel: memory, engines, the SMMU event queue, and the scheduler.
pub struct Rig {
    pub mem: SimMemory,
    pub engines: Vec<FakeEngine>,
    pub sched: Scheduler,
    pub events: EventQueue,
    pub finished: BTreeMap<TransferId, Result<TransferReport, TransferError>>,
    pub actions: Actions,
    pub steps: usize,
    /// Steps left during which every fault event is lost.
    pub lose_events_for: usize,
    /// Called after every step (evictions, ...).
    pub after_step: Option<StepHook>,
}

impl Rig {
    pub fn new(config: Config) -> Self {
        Rig {
            mem: SimMemory::default(),
            engines: Vec::new(),
            sched: Scheduler::new(config),
            events: EventQueue::default(),
            finished: BTreeMap::new(),
            actions: Actions::default(),
            steps: 0,
            lose_events_for: 0,
            after_step: None,
        }
    }

    /// A rig for the randomized tests: memory of eight slots of `slot`
    /// bytes from `BASE`, and two engines of random shape (a segment limit
    /// from `segments`, one in three unable to resume, a burst from
    /// `bursts`, a window of 1 to 4).
    pub fn random(
        rng: &mut Rng,
        slot: usize,
        segments: &[usize],
        bursts: &[usize],
    ) -> (Self, Vec<EngineId>) {
        let mut rig = Rig::new(Config {
            max_retries: 64,
            ..Config::default()
        });
        rig.mem.region(BASE..BASE + 8 * slot, true);
        let mut engines = Vec::new();
        for stream in 0..2 {
            let max_segment = segments[rng.below(segments.len() as u64) as usize];
            let mut engine = FakeEngine::new(stream, max_segment, rng.below(3) == 0, 8 * slot);
            engine.burst = bursts[rng.below(bursts.len() as u64) as usize];
            engines.push(rig.add_engine(engine, 1 + rng.below(4) as usize));
        }
        (rig, engines)
    }

    pub fn add_engine(&mut self, engine: FakeEngine, window: usize) -> EngineId {
        let id = self.sched.add_engine(&engine, window);
        self.engines.push(engine);
        id
    }

    pub fn submit(
        &mut self,
        engine: EngineId,
        direction: Direction,
        va: Range<usize>,
        device_addr: u64,
        policy: Policy,
    ) -> TransferId {
        self.submit_gather(engine, direction, &[va], device_addr, policy)
    }

    /// Like `submit`, for a gather/scatter list.
    pub fn submit_gather(
        &mut self,
        engine: EngineId,
        direction: Direction,
        pieces: &[Range<usize>],
        device_addr: u64,
        policy: Policy,
    ) -> TransferId {
        self.sched
            .submit(
                engine,
                Transfer {
                    direction,
                    pieces: pieces.to_vec(),
                    device_addr,
                    device_key: 0,
                    policy,
                },
            )
            .expect("submit")
    }

    /// One turn of the kernel loop.
    pub fn step(&mut self) {
        self.events.lose = self.lose_events_for > 0;
        self.lose_events_for = self.lose_events_for.saturating_sub(1);
        for e in &mut self.engines {
            e.execute(&mut self.mem, &mut self.events);
        }
        // Observe completions, then drain the event queue, then hand them over.
        let observed: Vec<(EngineId, SegmentId, Completion)> =
            (self.engines.iter_mut().enumerate())
                .flat_map(|(i, e)| {
                    e.take_completions()
                        .into_iter()
                        .map(move |(s, c)| (EngineId(i), s, c))
                })
                .collect();
        for ev in std::mem::take(&mut self.events.events) {
            match self
                .sched
                .on_fault(&mut self.mem, ev.stream, ev.iova, ev.access)
            {
                FaultAction::Handled { .. } => self.actions.handled += 1,
                FaultAction::Duplicate => self.actions.duplicate += 1,
                FaultAction::Stray => self.actions.stray += 1,
                FaultAction::Unresolvable(_) => self.actions.unresolvable += 1,
            }
        }
        if std::mem::take(&mut self.events.overflowed) {
            let streams: BTreeSet<StreamId> = self.engines.iter().map(|e| e.caps.stream).collect();
            for s in streams {
                self.sched.events_lost(s);
            }
        }
        for (engine, seg, status) in observed {
            self.sched
                .completed(engine, seg, status)
                .expect("completion of a known segment");
        }
        self.poll();
        self.steps += 1;
        if let Some(hook) = &mut self.after_step {
            hook(&mut self.mem, self.steps);
        }
    }

    /// Starts what the scheduler can on the engines, and keeps what it
    /// reports finished.
    pub fn poll(&mut self) {
        let mut engines: Vec<&mut dyn Engine> = self
            .engines
            .iter_mut()
            .map(|e| e as &mut dyn Engine)
            .collect();
        self.sched.poll(&mut engines, &mut self.mem);
        for (id, result) in self.sched.take_finished() {
            assert!(
                self.finished.insert(id, result).is_none(),
                "{id:?} reported twice"
            );
        }
    }

    /// Runs the loop until every transfer is reported; panics on a livelock.
    pub fn run(&mut self) {
        let limit = self.steps + 200_000;
        while self.sched.unfinished() > 0 {
            assert!(self.steps < limit, "no progress after {limit} steps");
            self.step();
        }
    }

    pub fn result(&self, id: TransferId) -> &Result<TransferReport, TransferError> {
        self.finished.get(&id).expect("transfer finished")
    }

    pub fn report(&self, id: TransferId) -> TransferReport {
        match self.result(id) {
            Ok(r) => *r,
            Err(e) => panic!("{id:?} failed: {e}"),
        }
    }
}

pub use faultline_rng::Rng;

/// `n` seeded pseudo-random bytes, none of them 0 (so that a byte never
/// written shows).
pub fn random_bytes(rng: &mut Rng, n: usize) -> Vec<u8> {
    let mut bytes = vec![0; n];
    rng.fill(&mut bytes);
    bytes.iter_mut().for_each(|b| *b |= 1);
    bytes
}

/// Fills the source side of a transfer with a recognizable pattern and
/// returns it: memory for `ToDevice`, device memory for `FromDevice`.
pub fn fill_source(
    rig: &mut Rig,
    engine: EngineId,
    dir: Direction,
    va: Range<usize>,
    dev: usize,
    seed: u64,
) -> Vec<u8> {
    let bytes = random_bytes(&mut Rng::new(seed), va.len());
    match dir {
        Direction::ToDevice => rig.mem.store(va.start, &bytes),
        Direction::FromDevice => {
            rig.engines[engine.0].device[dev..dev + bytes.len()].copy_from_slice(&bytes)
        }
    }
    bytes
}

/// A transfer the random tests submitted: its id, engine, direction,
/// memory, device address and the bytes it must deliver.
pub type RandomJob = (
    TransferId,
    EngineId,
    Direction,
    Range<usize>,
    usize,
    Vec<u8>,
);

/// Submits a random transfer in slot `slot` (`slot_size` bytes each from
/// `BASE`): on one of `engines`, either way, under any policy, starting up
/// to `max_offset` bytes into the slot, its device address the slot's plus
/// up to `dev_jitter` bytes (none drawn when 0); its source filled.
pub fn submit_random(
    rig: &mut Rig,
    rng: &mut Rng,
    engines: &[EngineId],
    (slot, slot_size): (usize, usize),
    max_offset: usize,
    dev_jitter: u64,
) -> RandomJob {
    let engine = engines[rng.below(engines.len() as u64) as usize];
    let dir = if rng.below(2) == 0 {
        Direction::ToDevice
    } else {
        Direction::FromDevice
    };
    let policy = Policy::ALL[rng.below(Policy::ALL.len() as u64) as usize];
    let offset = rng.below(max_offset as u64) as usize;
    let len = 1 + rng.below((slot_size - offset) as u64) as usize;
    let start = BASE + slot * slot_size + offset;
    let va = start..start + len;
    let mut dev = slot * slot_size;
    if dev_jitter > 0 {
        dev += rng.below(dev_jitter) as usize;
    }
    let source = fill_source(rig, engine, dir, va.clone(), dev, rng.next_u64());
    let id = rig.submit(engine, dir, va.clone(), dev as u64, policy);
    (id, engine, dir, va, dev, source)
}

/// The destination side of a transfer, to compare with the source.
pub fn destination(
    rig: &Rig,
    engine: EngineId,
    dir: Direction,
    va: Range<usize>,
    dev: usize,
) -> Vec<u8> {
    match dir {
        Direction::ToDevice => rig.engines[engine.0].device[dev..dev + va.len()].to_vec(),
        Direction::FromDevice => rig.mem.load(va),
    }
}

/// Where test buffers live: one big writable region.
pub const BASE: usize = 0x10_0000_0000;
