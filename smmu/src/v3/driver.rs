//! The SMMUv3 driver: brings the SMMU up, points streams at the kernel's
//! page table, invalidates what the kernel unmaps, and drains faults.

use super::bits::get;
use super::cd::{self, CdError, CdParams};
use super::cmd::Command;
use super::config::{Config, Unattached};
use super::error::{Allocation, Error, Wait};
use super::event::{Event, EVENT_BYTES};
use super::gerror::{self, CommandFailure, GerrorStatus};
use super::platform::{alloc, Regs};
use super::queue::Ring;
use super::records::RecordKey;
use super::regs::{self, cr0, cr1, cr2, irq_ctrl, queue_base, Features};
use super::ste::{self, Ste};
use super::strtab::{read_entry, write_entry, StreamTable};
use crate::fault::{FaultSet, PAGE_SIZE};
use crate::poll;
use core::ops::Range;
use hw::dma_memory::DmaAllocator;
use hw::dma_memory::DmaMemory;

/// What one [`Smmu::drain_events`] call consumed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Drained {
    /// Records read.
    pub records: usize,
    /// Of those, fault records that repeated the record before them (same
    /// fault, stream, access and 4 KiB page): counted, not decoded or
    /// handed on. QEMU records a faulting access once per retried word.
    pub repeats: usize,
    /// EVENTQ_PROD.OVFLG had toggled: the queue overflowed and records were
    /// dropped, so some faults are unknown. (QEMU instead raises
    /// GERROR.EVENTQ_ABT_ERR; see [`Smmu::check_gerror`].)
    pub events_lost: bool,
    /// The SMMU queued more records while these were read: act on these
    /// first (a fault resolved sooner stops the device repeating it), then
    /// call again (the eventq interrupt is an edge and will not fire again
    /// for records already queued).
    pub more_pending: bool,
}

/// For a fault record (translation, address size, access flag,
/// permission): the words that say which fault it is, with the address
/// cut to its 4 KiB page. Two records with the same key are the same fault
/// for the kernel, which resolves pages. `None` for other records, which
/// are always decoded.
fn repeat_key(w0: u64, w1: u64, w2: u64) -> Option<RecordKey> {
    let code = (w0 & 0xff) as u8;
    let fault = (crate::v3::event::code::F_TRANSLATION..=crate::v3::event::code::F_PERMISSION)
        .contains(&code);
    let mask2 = !(PAGE_SIZE - 1);
    fault.then_some(RecordKey {
        words: [w0, w1, w2 & mask2],
        mask2,
    })
}

/// What one [`Smmu::drain_faults_dedup`] call consumed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultsDrained {
    /// Records read.
    pub records: usize,
    /// As [`Drained::repeats`].
    pub repeats: usize,
    /// Faults added to the set (one per stream, page and access).
    pub new_faults: usize,
    /// Records that were not resolvable faults (configuration errors,
    /// external aborts...).
    pub other_events: usize,
    /// The first of those, for the log.
    pub first_other: Option<Event>,
    /// As [`Drained::events_lost`].
    pub events_lost: bool,
    /// As [`Drained::more_pending`].
    pub more_pending: bool,
}

/// An SMMUv3 translating streams through stage-1 tables in the CPU's
/// format (the kernel's own, or a device's view of it).
pub struct Smmu<R: Regs, M: DmaAllocator> {
    regs: R,
    mem: M,
    features: Features,
    strtab: StreamTable,
    cmdq: DmaMemory,
    cmdq_ring: Ring,
    /// Our copy of CMDQ_PROD (we are the only producer).
    cmdq_prod: u32,
    evtq: DmaMemory,
    evtq_ring: Ring,
    poll_limit: u32,
    range_invalidate_pages: u64,
}

impl<R: Regs, M: DmaAllocator> Smmu<R, M> {
    /// Probes the SMMU, refuses it if it lacks what the design needs,
    /// disables it, allocates the stream table and queues, programs them
    /// (cacheable, inner-shareable table and queue accesses), enables the
    /// eventq and gerror interrupts, enables the command queue, invalidates
    /// all cached configuration and TLB entries, then enables the event
    /// queue and translation.
    pub fn new(regs: R, mut mem: M, config: Config) -> Result<Self, Error> {
        let features = Features::decode(
            regs.read32(regs::IDR0),
            regs.read32(regs::IDR1),
            regs.read32(regs::IDR3),
            regs.read32(regs::IDR5),
        );
        features
            .check(config.sid_bits_needed)
            .map_err(Error::Unsupported)?;
        let cmdq_max = features.cmdq_max_log2.min(regs::MAX_QUEUE_LOG2);
        if config.cmdq_log2 > cmdq_max {
            return Err(Error::CommandQueueTooLarge {
                requested: config.cmdq_log2,
                max: cmdq_max,
            });
        }
        let eventq_max = features.eventq_max_log2.min(regs::MAX_QUEUE_LOG2);
        if config.eventq_log2 > eventq_max {
            return Err(Error::EventQueueTooLarge {
                requested: config.eventq_log2,
                max: eventq_max,
            });
        }

        // Quiesce: bases and CR1 may only change while everything is off.
        regs.write32(regs::CR0, 0);
        poll(config.poll_limit, Error::Timeout(Wait::Cr0Ack), || {
            regs.read32(regs::CR0ACK) == 0
        })?;

        let default: Ste = match config.unattached {
            Unattached::Reject => [0; 8],
            Unattached::Abort => ste::abort(),
            Unattached::Bypass => ste::bypass(),
        };
        let strtab = StreamTable::new(
            &mut mem,
            config.sid_bits_needed,
            features.two_level_stream_table,
            default,
        )?;
        let cmdq_ring = Ring::new(config.cmdq_log2);
        let cmdq_bytes = super::cmd::COMMAND_BYTES << config.cmdq_log2;
        let cmdq = alloc(
            &mut mem,
            cmdq_bytes,
            cmdq_bytes.max(64),
            Allocation::CommandQueue,
        )?;
        let evtq_ring = Ring::new(config.eventq_log2);
        let evtq_bytes = EVENT_BYTES << config.eventq_log2;
        let evtq = alloc(
            &mut mem,
            evtq_bytes,
            evtq_bytes.max(64),
            Allocation::EventQueue,
        )?;

        let mut smmu = Self {
            regs,
            mem,
            features,
            strtab,
            cmdq,
            cmdq_ring,
            cmdq_prod: 0,
            evtq,
            evtq_ring,
            poll_limit: config.poll_limit,
            range_invalidate_pages: config.range_invalidate_pages,
        };
        smmu.program()?;
        Ok(smmu)
    }

    fn program(&mut self) -> Result<(), Error> {
        let regs = &self.regs;
        // Errors left from before are not ours to report.
        let (g, n) = (regs.read32(regs::GERROR), regs.read32(regs::GERRORN));
        let stale = GerrorStatus::decode(g, n);
        if !stale.is_clear() {
            regs.write32(regs::GERRORN, stale.acknowledge(n));
        }

        let (base, base_cfg) = self.strtab.registers();
        regs.write64(regs::STRTAB_BASE, base);
        regs.write32(regs::STRTAB_BASE_CFG, base_cfg);

        let cmdq_base = self.cmdq.addr() | queue_base::ALLOCATE | self.cmdq_ring.log2() as u64;
        regs.write64(regs::CMDQ_BASE, cmdq_base);
        regs.write32(regs::CMDQ_PROD, 0);
        regs.write32(regs::CMDQ_CONS, 0);
        let evtq_base = self.evtq.addr() | queue_base::ALLOCATE | self.evtq_ring.log2() as u64;
        regs.write64(regs::EVENTQ_BASE, evtq_base);
        regs.write32(regs::EVENTQ_PROD, 0);
        regs.write32(regs::EVENTQ_CONS, 0);
        self.cmdq_prod = 0;

        let wb = cr1::WRITE_BACK;
        let ish = cr1::INNER_SHAREABLE;
        regs.write32(
            regs::CR1,
            wb << cr1::QUEUE_IC
                | wb << cr1::QUEUE_OC
                | ish << cr1::QUEUE_SH
                | wb << cr1::TABLE_IC
                | wb << cr1::TABLE_OC
                | ish << cr1::TABLE_SH,
        );
        // Report StreamIDs beyond the table; take part in broadcast TLB
        // maintenance if the SMMU can (PTM = 0), though the driver never
        // relies on it.
        regs.write32(regs::CR2, cr2::RECINVSID);

        let irqs = irq_ctrl::GERROR_IRQEN | irq_ctrl::EVENTQ_IRQEN;
        regs.write32(regs::IRQ_CTRL, irqs);
        poll(self.poll_limit, Error::Timeout(Wait::IrqCtrlAck), || {
            regs.read32(regs::IRQ_CTRL_ACK) == irqs
        })?;

        // Tables and queue contents before the enables that expose them.
        regs.dma_fence();
        self.enable(cr0::CMDQEN)?;
        self.submit(&[Command::CfgiAll, Command::TlbiNsnhAll])?;
        self.enable(cr0::CMDQEN | cr0::EVENTQEN)?;
        self.enable(cr0::CMDQEN | cr0::EVENTQEN | cr0::SMMUEN)
    }

    fn enable(&mut self, bits: u32) -> Result<(), Error> {
        let regs = &self.regs;
        regs.write32(regs::CR0, bits);
        poll(self.poll_limit, Error::Timeout(Wait::Cr0Ack), || {
            regs.read32(regs::CR0ACK) == bits
        })
    }

    /// What the SMMU reported it can do.
    pub fn features(&self) -> &Features {
        &self.features
    }

    /// The register window (for a software model, its state).
    pub fn regs(&self) -> &R {
        &self.regs
    }

    /// Whether the stream table is two-level (StreamIDs wider than 8 bits).
    pub fn two_level_stream_table(&self) -> bool {
        self.strtab.is_two_level()
    }

    /// Translates stream `sid` through the stage-1 regime `params` (the
    /// CPU's: its page-table root, T0SZ, ASID and MAIR). Writes the CD, then
    /// the STE with its V/Config word last, then has the SMMU drop any
    /// cached copy of both (CFGI_STE, CFGI_CD, CMD_SYNC).
    ///
    /// Re-attaching a translating stream first aborts it, so the SMMU never
    /// reads a half-rewritten CD; the device should be quiet meanwhile.
    pub fn attach(&mut self, sid: u32, params: &CdParams) -> Result<(), Error> {
        if !self.features.asid16 && params.asid > 0xff {
            return Err(Error::BadContext(CdError::AsidTooWide(params.asid)));
        }
        let cd = cd::encode(params).map_err(Error::BadContext)?;
        let (group, i) = self.strtab.group_mut(sid, &mut self.mem, &self.regs)?;
        if ste::config(group.stes.u64_at(i * 8)) == Some(ste::CONFIG_S1_TRANSLATE) {
            self.set_ste(sid, &ste::abort())?;
            self.submit(&[Command::CfgiSte { sid }])?;
        }
        let (group, i) = self.strtab.group_mut(sid, &mut self.mem, &self.regs)?;
        write_entry(&self.regs, &mut group.cds, i, &cd);
        let entry = ste::stage1(group.cd_addr(i));
        self.set_ste(sid, &entry)?;
        self.submit(&[Command::CfgiSte { sid }, Command::CfgiCd { sid }])
    }

    /// Stops translating stream `sid`: its traffic aborts without events.
    pub fn detach(&mut self, sid: u32) -> Result<(), Error> {
        self.set_ste(sid, &ste::abort())?;
        self.submit(&[Command::CfgiSte { sid }])
    }

    /// Lets stream `sid` through untranslated (physical addresses).
    pub fn bypass(&mut self, sid: u32) -> Result<(), Error> {
        self.set_ste(sid, &ste::bypass())?;
        self.submit(&[Command::CfgiSte { sid }])
    }

    /// Replaces the STE of `sid`. A live entry other than abort is first
    /// made to abort with one 64-bit write, so the SMMU never combines old
    /// and new words; then the new words 1-7, a barrier, and word 0.
    fn set_ste(&mut self, sid: u32, new: &Ste) -> Result<(), Error> {
        let (group, i) = self.strtab.group_mut(sid, &mut self.mem, &self.regs)?;
        let old = read_entry(&group.stes, i);
        if old == *new {
            return Ok(());
        }
        if matches!(ste::config(old[0]), Some(c) if c != ste::CONFIG_ABORT) {
            group.stes.set_u64(i * 8, ste::abort()[0]);
            self.regs.dma_fence();
        }
        write_entry(&self.regs, &mut group.stes, i, new);
        Ok(())
    }

    /// Drops the SMMU's TLB entries for the page holding `va` in `asid`
    /// (all levels: the kernel may have freed a table), then syncs. Call it
    /// after unmapping: CPU TLB invalidations do not reach QEMU's SMMU.
    pub fn invalidate_va(&mut self, asid: u16, va: u64) -> Result<(), Error> {
        self.submit(&[Command::TlbiNhVa {
            asid,
            va,
            leaf: false,
        }])
    }

    /// Drops the TLB entries of every 4 KiB page overlapping `range`, one
    /// command per page, or the whole ASID when the range spans more than
    /// [`Config::range_invalidate_pages`] pages; then syncs.
    pub fn invalidate_range(&mut self, asid: u16, range: Range<u64>) -> Result<(), Error> {
        if range.is_empty() {
            return Ok(());
        }
        let first = range.start & !(PAGE_SIZE - 1);
        let last = (range.end - 1) & !(PAGE_SIZE - 1);
        let pages = (last - first) / PAGE_SIZE + 1;
        if pages > self.range_invalidate_pages {
            return self.invalidate_asid(asid);
        }
        let commands = (0..pages).map(|p| Command::TlbiNhVa {
            asid,
            va: first + p * PAGE_SIZE,
            leaf: false,
        });
        self.submit_iter(commands)
    }

    /// Drops every TLB entry of `asid`, then syncs.
    pub fn invalidate_asid(&mut self, asid: u16) -> Result<(), Error> {
        self.submit(&[Command::TlbiNhAsid { asid }])
    }

    /// Issues `commands` followed by a CMD_SYNC and waits for the sync to
    /// complete, i.e. for all of them to have taken effect.
    pub fn submit(&mut self, commands: &[Command]) -> Result<(), Error> {
        self.submit_iter(commands.iter().copied())
    }

    fn submit_iter(&mut self, commands: impl Iterator<Item = Command>) -> Result<(), Error> {
        for command in commands {
            self.push(&command)?;
        }
        self.push(&Command::Sync)?;
        self.publish();
        self.wait_cmdq(Wait::CommandSync, |ring, prod, cons| {
            ring.is_empty(prod, cons)
        })
    }

    /// Queues one command, first waiting for room if the queue is full.
    fn push(&mut self, command: &Command) -> Result<(), Error> {
        let ring = self.cmdq_ring;
        let cons = ring.ptr(self.regs.read32(regs::CMDQ_CONS));
        if ring.is_full(self.cmdq_prod, cons) {
            self.publish();
            self.wait_cmdq(Wait::CommandQueueSpace, |ring, prod, cons| {
                !ring.is_full(prod, cons)
            })?;
        }
        let [w0, w1] = command.encode();
        let i = ring.index(self.cmdq_prod) * 2;
        self.cmdq.set_u64(i, w0);
        self.cmdq.set_u64(i + 1, w1);
        self.cmdq_prod = ring.advance(self.cmdq_prod, 1);
        Ok(())
    }

    /// Tells the SMMU about the commands queued so far.
    fn publish(&mut self) {
        self.regs.dma_fence();
        self.regs.write32(regs::CMDQ_PROD, self.cmdq_prod);
    }

    /// Polls CMDQ_CONS until `done`, failing on a command error.
    fn wait_cmdq(
        &mut self,
        wait: Wait,
        done: impl Fn(Ring, u32, u32) -> bool,
    ) -> Result<(), Error> {
        for _ in 0..self.poll_limit.max(1) {
            let cons = self.cmdq_ring.ptr(self.regs.read32(regs::CMDQ_CONS));
            if done(self.cmdq_ring, self.cmdq_prod, cons) {
                return Ok(());
            }
            let (g, n) = (
                self.regs.read32(regs::GERROR),
                self.regs.read32(regs::GERRORN),
            );
            if (g ^ n) & gerror::bits::CMDQ_ERR != 0 {
                let failure = self.skip_failed_command();
                self.regs.write32(regs::GERRORN, n ^ gerror::bits::CMDQ_ERR);
                return Err(Error::Command(failure));
            }
            core::hint::spin_loop();
        }
        Err(Error::Timeout(wait))
    }

    /// Replaces the command the SMMU stopped at with a CMD_SYNC, so that
    /// acknowledging CMDQ_ERR lets the queue run on, and says what it was.
    fn skip_failed_command(&mut self) -> CommandFailure {
        let cons = self.regs.read32(regs::CMDQ_CONS);
        let error =
            super::cmd::CommandError::from_cons(cons).unwrap_or(super::cmd::CommandError::Other(0));
        let i = self.cmdq_ring.index(cons) * 2;
        let opcode = get(self.cmdq.u64_at(i), 0, 8) as u8;
        let [w0, w1] = Command::Sync.encode();
        self.cmdq.set_u64(i, w0);
        self.cmdq.set_u64(i + 1, w1);
        self.regs.dma_fence();
        CommandFailure { error, opcode }
    }

    /// Reads the records the SMMU had queued when the call began (at most
    /// one queue's worth), hands each to `f` decoded, and frees their
    /// slots. Records queued meanwhile are left for the next call
    /// ([`Drained::more_pending`]), so that the caller resolves the faults
    /// it has before reading on: a device that repeats a faulting access
    /// (QEMU logs one record per retried word) stops once the page is
    /// there. Acknowledges an event-queue overflow (EVENTQ_PROD.OVFLG) and
    /// reports it as lost events.
    pub fn drain_events(&mut self, mut f: impl FnMut(Event)) -> Drained {
        let ring = self.evtq_ring;
        let mut drained = Drained::default();
        let cons_reg = self.regs.read32(regs::EVENTQ_CONS);
        let prod_reg = self.regs.read32(regs::EVENTQ_PROD);
        let overflowed = (prod_reg ^ cons_reg) & regs::EVENTQ_OVERFLOW != 0;
        let prod = ring.ptr(prod_reg);
        let mut cons = ring.ptr(cons_reg);
        if ring.is_empty(prod, cons) && !overflowed {
            return drained;
        }
        drained.events_lost = overflowed;
        // The records are in memory before the PROD value that covers them.
        self.regs.dma_fence();
        while !ring.is_empty(prod, cons) {
            let i = ring.index(cons) * 4;
            let (w0, w1, w2) = (
                self.evtq.u64_at(i),
                self.evtq.u64_at(i + 1),
                self.evtq.u64_at(i + 2),
            );
            f(Event::decode(&[w0, w1, w2, self.evtq.u64_at(i + 3)]));
            cons = ring.advance(cons, 1);
            drained.records += 1;
            if let Some(key) = repeat_key(w0, w1, w2) {
                let repeats = self.repeats_from(cons, prod, key);
                cons = ring.advance(cons, repeats);
                drained.records += repeats as usize;
                drained.repeats += repeats as usize;
            }
        }
        // Finish reading the slots before handing them back.
        self.regs.dma_fence();
        self.regs
            .write32(regs::EVENTQ_CONS, cons | (prod_reg & regs::EVENTQ_OVERFLOW));
        let prod_now = ring.ptr(self.regs.read32(regs::EVENTQ_PROD));
        drained.more_pending = !ring.is_empty(prod_now, cons);
        drained
    }

    /// How many records from `cons` on (before `prod`) repeat the fault
    /// `key`: QEMU's storms are hundreds of them, so this is a loop of its
    /// own, a few instructions a record.
    fn repeats_from(&self, cons: u32, prod: u32, key: RecordKey) -> u32 {
        let ring = self.evtq_ring;
        let waiting = ring.used(prod, cons) as usize;
        let start = ring.index(cons);
        // Up to the end of the queue's memory, then from its start.
        let before_wrap = waiting.min(ring.entries() as usize - start);
        let first = super::records::count_in(&self.evtq, start..start + before_wrap, &key);
        if first < before_wrap {
            return first as u32;
        }
        (first + super::records::count_in(&self.evtq, 0..waiting - before_wrap, &key)) as u32
    }

    /// Drains the event queue into `set` as one fault per (stream, 4 KiB
    /// page, access), skipping faults `set` already holds: a 4 KiB DMA that
    /// QEMU logs as 1024 records becomes one fault. Other records are
    /// counted, and the first is kept for the log.
    pub fn drain_faults_dedup<const N: usize>(&mut self, set: &mut FaultSet<N>) -> FaultsDrained {
        let before = set.len();
        let mut other_events = 0;
        let mut first_other = None;
        let drained = self.drain_events(|event| match event.as_fault() {
            Some(fault) => {
                set.insert(fault);
            }
            None => {
                other_events += 1;
                first_other.get_or_insert(event);
            }
        });
        FaultsDrained {
            records: drained.records,
            repeats: drained.repeats,
            new_faults: set.len() - before,
            other_events,
            first_other,
            events_lost: drained.events_lost,
            more_pending: drained.more_pending,
        }
    }

    /// Decodes and acknowledges the active global errors (GERROR xor
    /// GERRORN). `events_lost` (EVENTQ_ABT_ERR: QEMU dropped records because
    /// the event queue was full) means the caller cannot know every fault
    /// and must recover, e.g. by retransmitting every in-flight transfer. A
    /// command error is handled as in [`Error::Command`] and reported in
    /// `command_failure`.
    pub fn check_gerror(&mut self) -> GerrorStatus {
        let n = self.regs.read32(regs::GERRORN);
        let mut status = GerrorStatus::decode(self.regs.read32(regs::GERROR), n);
        if status.command_error {
            status.command_failure = Some(self.skip_failed_command());
        }
        if !status.is_clear() {
            self.regs.write32(regs::GERRORN, status.acknowledge(n));
        }
        status
    }
}
