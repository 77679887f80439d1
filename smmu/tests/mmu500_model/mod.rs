//! A register-level model of an Arm MMU-500 (SMMUv2), for driving the real
//! driver in host tests, as `tests/fake` models QEMU's SMMUv3.
//!
//! It decodes what the driver programs and checks it: sCR0 (CLIENTPD,
//! USFCFG), SMR/S2CR stream matching, CBAR/CBA2R (only stage-1 AArch64
//! contexts translate), SCTLR (M, CFIE, CFCFG, HUPCF), TTBR0's ASID and
//! table. The "page table" it walks is a set of mapped pages per table
//! root, with a writable flag; its TLB caches (ASID, page) until TLBIVA,
//! TLBIASID or TLBIALLNSNH.
//!
//! Devices issue transactions with [`Model::dma`] (one after another, as
//! one AXI master does) or [`Model::dma_burst`] (all in the walk pipeline
//! at once, as several TBUs can). The stall model, per context bank, in
//! the model's reading of IHI 0062 and the MMU-500 TRM:
//!
//! - The first fault is recorded (FSR fault bit and SS, FAR, FSYNR0,
//!   CBFRSYNRA) and its transaction stalls (CFCFG = 1) or is terminated
//!   (CFCFG = 0).
//! - A fault while one is recorded only sets FSR.MULTI; its transaction
//!   stalls unrecorded.
//! - With HUPCF = 0, a transaction arriving while the bank holds a stall is
//!   held behind it, untranslated.
//! - The bank holds at most [`State::stall_slots`] transactions (stalled
//!   and held). The architecture leaves the limit, and what happens past
//!   it, to the implementation (MMU-500 stops accepting traffic); the model
//!   terminates the transaction with an abort and sets FSR.MULTI, the
//!   harsher outcome a driver must survive.
//! - FSR bits other than SS are write-1-to-clear; only RESUME clears SS. A
//!   RESUME while SS is 0 does nothing; one while fault bits are still set
//!   is a driver error (recorded in [`State::violations`], and ignored).
//! - RESUME applies TnR to the recorded transaction (retry: translate again;
//!   terminate: abort), then presents every other stalled or held
//!   transaction again in arrival order: one that still faults is recorded
//!   afresh, and those after it are held again.
//! - The context interrupt is asserted while CFIE is set and FSR has a
//!   fault bit, MULTI or SS (MMU-500: SS alone keeps it asserted).
//! - TLB synchronisation does not wait for stalled transactions (they hold
//!   no TLB entry), unless [`State::tlbsync_stuck`] says the SMMU hangs.
#![allow(dead_code)]

use smmu::v2::id::zynqmp;
use smmu::v2::regs::{cb, fsr, fsynr0, gfsr, gr0, gr1, s2cr, scr0, sctlr, smr};
use smmu::v3::Regs;
use smmu::Access;
use std::cell::{Ref, RefCell, RefMut};
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

/// Index of a transaction issued to the model.
pub type TxnId = usize;

/// Why the model aborted a transaction (the device sees a bus error).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Abort {
    /// RESUME with TnR = 1.
    Terminated,
    /// No SMR matched (sCR0.USFCFG = 1).
    Unmatched,
    /// Two SMRs matched.
    Conflict,
    /// The bank held as many transactions as it can.
    StallQueueFull,
    /// A context fault with CFCFG = 0.
    Fault,
    /// An S2CR of type fault, or a context bank the model cannot use.
    Refused,
}

/// Where a transaction stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Translated and performed.
    Done {
        /// Output address.
        pa: u64,
    },
    /// Faulted and stalled (recorded or not).
    Stalled,
    /// Waiting behind a stalled transaction of its bank, untranslated.
    Held,
    /// Aborted.
    Aborted(Abort),
}

impl Outcome {
    /// Whether the device is still waiting for it.
    pub fn pending(&self) -> bool {
        matches!(self, Outcome::Stalled | Outcome::Held)
    }
}

/// One transaction.
#[derive(Clone, Copy, Debug)]
pub struct Txn {
    pub stream: u32,
    pub iova: u64,
    pub access: Access,
    pub outcome: Outcome,
}

/// One context bank's registers and stall queue.
#[derive(Clone, Debug, Default)]
pub struct BankRegs {
    pub sctlr: u32,
    pub actlr: u32,
    pub tcr: u32,
    pub tcr2: u32,
    pub ttbr0: u64,
    pub ttbr1: u64,
    pub mair0: u32,
    pub mair1: u32,
    pub fsr: u32,
    pub far: u64,
    pub fsynr0: u32,
    pub fsynr1: u32,
    /// Stalled and held transactions, the recorded one first.
    pub queue: VecDeque<TxnId>,
    /// The transaction FAR/FSYNR0 describe, while it is stalled.
    pub recorded: Option<TxnId>,
    /// Values written to RESUME.
    pub resumes: Vec<u32>,
}

/// Everything the model holds.
pub struct State {
    /// ID0, ID1, ID2.
    pub id: [u32; 3],
    /// Nothing answers: reads are 0 and writes are dropped (QEMU's
    /// `xlnx-zcu102` at 0xFD80_0000).
    pub absent: bool,
    pub scr0: u32,
    pub gfsr: u32,
    pub gfar: u64,
    pub gfsynr0: u32,
    pub gfsynr1: u32,
    pub smr: Vec<u32>,
    pub s2cr: Vec<u32>,
    pub cbar: Vec<u32>,
    pub cba2r: Vec<u32>,
    pub cbfrsynra: Vec<u32>,
    pub banks: Vec<BankRegs>,
    /// Every register write, in order: (offset, value).
    pub writes: Vec<(usize, u64)>,
    /// Cached translations: (ASID, page) -> writable.
    pub tlb: HashMap<(u16, u64), bool>,
    /// The page table: (table root, page) -> writable.
    pub mapped: HashMap<(u64, u64), bool>,
    pub txns: Vec<Txn>,
    /// Transactions a bank can hold (stalled and held); default 8.
    pub stall_slots: usize,
    /// TLB synchronisation never completes.
    pub tlbsync_stuck: bool,
    /// Register-programming errors the model caught.
    pub violations: Vec<String>,
}

const PAGE: u64 = 4096;
const PAGE_SIZE: usize = 0x1000;
const NUM_PAGES: usize = 16;
const CB_BASE: usize = NUM_PAGES * PAGE_SIZE;

/// The model, shared between the driver (as its `Regs`) and the test.
#[derive(Clone)]
pub struct Model {
    state: Rc<RefCell<State>>,
}

impl Model {
    /// The ZynqMP's MMU-500, out of reset (CLIENTPD = 1: bypass).
    pub fn zynqmp() -> Self {
        let banks = 16;
        let smrs = 48;
        let state = State {
            id: [zynqmp::ID0, zynqmp::ID1, zynqmp::ID2],
            absent: false,
            scr0: scr0::CLIENTPD,
            gfsr: 0,
            gfar: 0,
            gfsynr0: 0,
            gfsynr1: 0,
            smr: vec![0; smrs],
            s2cr: vec![0; smrs],
            cbar: vec![0; banks],
            cba2r: vec![0; banks],
            cbfrsynra: vec![0; banks],
            banks: vec![BankRegs::default(); banks],
            writes: Vec::new(),
            tlb: HashMap::new(),
            mapped: HashMap::new(),
            txns: Vec::new(),
            stall_slots: 8,
            tlbsync_stuck: false,
            violations: Vec::new(),
        };
        Self {
            state: Rc::new(RefCell::new(state)),
        }
    }

    /// An address nothing answers at.
    pub fn absent() -> Self {
        let m = Self::zynqmp();
        m.state_mut().absent = true;
        m
    }

    pub fn state(&self) -> Ref<'_, State> {
        self.state.borrow()
    }

    pub fn state_mut(&self) -> RefMut<'_, State> {
        self.state.borrow_mut()
    }

    /// Maps the page holding `va` in the table rooted at `ttb0`.
    pub fn map(&self, ttb0: u64, va: u64) {
        self.state_mut()
            .mapped
            .insert((ttb0, va & !(PAGE - 1)), true);
    }

    /// Maps it read-only.
    pub fn map_read_only(&self, ttb0: u64, va: u64) {
        self.state_mut()
            .mapped
            .insert((ttb0, va & !(PAGE - 1)), false);
    }

    /// Unmaps it (the TLB keeps any entry until invalidated).
    pub fn unmap(&self, ttb0: u64, va: u64) {
        self.state_mut().mapped.remove(&(ttb0, va & !(PAGE - 1)));
    }

    pub fn is_mapped(&self, ttb0: u64, va: u64) -> bool {
        self.state().mapped.contains_key(&(ttb0, va & !(PAGE - 1)))
    }

    /// Whether the TLB holds the page of `va` under `asid`.
    pub fn cached(&self, asid: u16, va: u64) -> bool {
        self.state().tlb.contains_key(&(asid, va & !(PAGE - 1)))
    }

    pub fn outcome(&self, id: TxnId) -> Outcome {
        self.state().txns[id].outcome
    }

    /// Whether bank `n`'s context interrupt is asserted.
    pub fn context_irq(&self, n: usize) -> bool {
        let s = self.state();
        let b = &s.banks[n];
        b.sctlr & sctlr::CFIE != 0 && b.fsr & (fsr::CLEARABLE | fsr::SS) != 0
    }

    /// Whether the global fault interrupt is asserted.
    pub fn global_irq(&self) -> bool {
        let s = self.state();
        s.scr0 & scr0::GFIE != 0 && s.gfsr != 0
    }

    /// A device issues one transaction.
    pub fn dma(&self, stream: u32, iova: u64, access: Access) -> TxnId {
        let mut s = self.state_mut();
        let id = s.txns.len();
        s.txns.push(Txn {
            stream,
            iova,
            access,
            outcome: Outcome::Held,
        });
        present(&mut s, id, false);
        id
    }

    /// Several transactions enter the walk pipeline together, so none is
    /// held behind a stall the others cause.
    pub fn dma_burst(&self, txns: &[(u32, u64, Access)]) -> Vec<TxnId> {
        let mut s = self.state_mut();
        let first = s.txns.len();
        for &(stream, iova, access) in txns {
            s.txns.push(Txn {
                stream,
                iova,
                access,
                outcome: Outcome::Held,
            });
        }
        let ids: Vec<TxnId> = (first..s.txns.len()).collect();
        for &id in &ids {
            present(&mut s, id, true);
        }
        ids
    }

    /// Values written to bank `n`'s RESUME.
    pub fn resumes(&self, n: usize) -> Vec<u32> {
        self.state().banks[n].resumes.clone()
    }
}

/// Finds the context bank of `id`'s stream, or aborts it.
fn route(s: &mut State, id: TxnId) -> Result<Option<usize>, Outcome> {
    let t = s.txns[id];
    if s.scr0 & scr0::CLIENTPD != 0 {
        return Ok(None);
    }
    let matching: Vec<usize> = (0..s.smr.len())
        .filter(|&n| {
            let r = s.smr[n];
            let mask = (r >> smr::MASK_SHIFT) & 0x7fff;
            r & smr::VALID != 0 && (t.stream ^ (r & 0x7fff)) & !mask & 0x7fff == 0
        })
        .collect();
    let global = |s: &mut State, bit: u32| {
        if s.gfsr & gfsr::ANY == 0 {
            s.gfsr = bit;
            s.gfar = t.iova;
            s.gfsynr1 = t.stream;
            s.gfsynr0 = if t.access == Access::Write { 1 << 4 } else { 0 };
        } else {
            s.gfsr |= gfsr::MULTI;
        }
    };
    match matching.as_slice() {
        [] if s.scr0 & scr0::USFCFG != 0 => {
            global(s, gfsr::USF);
            Err(Outcome::Aborted(Abort::Unmatched))
        }
        [] => Ok(None),
        [n] => {
            let v = s.s2cr[*n];
            match (v >> s2cr::TYPE_SHIFT) & 3 {
                s2cr::TYPE_TRANSLATE => Ok(Some((v & 0xff) as usize)),
                s2cr::TYPE_BYPASS => Ok(None),
                _ => Err(Outcome::Aborted(Abort::Refused)),
            }
        }
        _ => {
            global(s, gfsr::SMCF);
            Err(Outcome::Aborted(Abort::Conflict))
        }
    }
}

/// Presents transaction `id` to the SMMU; `concurrent`: it was in the walk
/// pipeline before any stall of its bank, so it is not held.
fn present(s: &mut State, id: TxnId, concurrent: bool) {
    let outcome = match route(s, id) {
        Err(o) => o,
        Ok(None) => Outcome::Done {
            pa: s.txns[id].iova,
        },
        Ok(Some(n)) => translate(s, id, n, concurrent),
    };
    s.txns[id].outcome = outcome;
}

fn translate(s: &mut State, id: TxnId, n: usize, concurrent: bool) -> Outcome {
    let t = s.txns[id];
    if n >= s.banks.len() {
        return Outcome::Aborted(Abort::Refused);
    }
    if (s.cbar[n] >> 16) & 3 != 1 || s.cba2r[n] & 1 == 0 {
        s.violations.push(format!(
            "bank {n} translates but is not a stage-1 AArch64 context"
        ));
        return Outcome::Aborted(Abort::Refused);
    }
    let slots = s.stall_slots;
    let b = &mut s.banks[n];
    if b.sctlr & sctlr::M == 0 {
        return Outcome::Done { pa: t.iova };
    }
    if !concurrent && b.sctlr & sctlr::HUPCF == 0 && !b.queue.is_empty() {
        if b.queue.len() >= slots {
            b.fsr |= fsr::MULTI;
            return Outcome::Aborted(Abort::StallQueueFull);
        }
        b.queue.push_back(id);
        return Outcome::Held;
    }
    let asid = (b.ttbr0 >> 48) as u16;
    let root = b.ttbr0 & 0x0000_ffff_ffff_fff0;
    let page = t.iova & !(PAGE - 1);
    let entry = match s.tlb.get(&(asid, page)) {
        Some(&w) => Some(w),
        None => {
            let walked = s.mapped.get(&(root, page)).copied();
            if let Some(w) = walked {
                s.tlb.insert((asid, page), w);
            }
            walked
        }
    };
    let kind = match entry {
        Some(writable) if writable || t.access != Access::Write => {
            return Outcome::Done { pa: t.iova };
        }
        Some(_) => fsr::PF,
        None => fsr::TF,
    };
    let b = &mut s.banks[n];
    let stall = b.sctlr & sctlr::CFCFG != 0;
    if stall && b.queue.len() >= slots {
        b.fsr |= fsr::MULTI;
        return Outcome::Aborted(Abort::StallQueueFull);
    }
    if b.fsr & (fsr::FAULTS | fsr::SS) == 0 {
        b.fsr |= kind | if stall { fsr::SS } else { 0 };
        b.far = t.iova;
        b.fsynr0 = 3 | match t.access {
            Access::Write => fsynr0::WNR,
            Access::Execute => fsynr0::IND,
            Access::Read => 0,
        };
        s.cbfrsynra[n] = t.stream;
        if stall {
            b.recorded = Some(id);
            b.queue.push_front(id);
        }
    } else {
        b.fsr |= fsr::MULTI;
        if stall {
            b.queue.push_back(id);
        }
    }
    if stall {
        Outcome::Stalled
    } else {
        Outcome::Aborted(Abort::Fault)
    }
}

fn resume(s: &mut State, n: usize, value: u32) {
    s.banks[n].resumes.push(value);
    let b = &mut s.banks[n];
    if b.fsr & fsr::SS == 0 {
        return;
    }
    if b.fsr & fsr::CLEARABLE != 0 {
        s.violations
            .push(format!("bank {n}: RESUME written before FSR was cleared"));
        return;
    }
    b.fsr &= !fsr::SS;
    let queue = std::mem::take(&mut b.queue);
    let recorded = b.recorded.take();
    for id in queue {
        if Some(id) == recorded && value & 1 != 0 {
            s.txns[id].outcome = Outcome::Aborted(Abort::Terminated);
        } else {
            present(s, id, false);
        }
    }
}

enum Space {
    Gr0(usize),
    Gr1(usize),
    Cb(usize, usize),
    None,
}

fn decode(offset: usize) -> Space {
    if offset < PAGE_SIZE {
        Space::Gr0(offset)
    } else if offset < 2 * PAGE_SIZE {
        Space::Gr1(offset - PAGE_SIZE)
    } else if (CB_BASE..2 * CB_BASE).contains(&offset) {
        let o = offset - CB_BASE;
        Space::Cb(o / PAGE_SIZE, o % PAGE_SIZE)
    } else {
        Space::None
    }
}

impl Regs for Model {
    fn read32(&self, offset: usize) -> u32 {
        let s = self.state();
        if s.absent {
            return 0;
        }
        match decode(offset) {
            Space::Gr0(o) => match o {
                gr0::SCR0 => s.scr0,
                gr0::ID0 => s.id[0],
                gr0::ID1 => s.id[1],
                gr0::ID2 => s.id[2],
                gr0::GFSR => s.gfsr,
                gr0::GFSYNR0 => s.gfsynr0,
                gr0::GFSYNR1 => s.gfsynr1,
                gr0::STLBGSTATUS => s.tlbsync_stuck as u32,
                o if (0x800..0xc00).contains(&o) => s.smr[(o - 0x800) / 4],
                o if (0xc00..0x1000).contains(&o) => s.s2cr[(o - 0xc00) / 4],
                _ => 0,
            },
            Space::Gr1(o) => match o / 0x400 {
                0 => s.cbar.get(o / 4).copied().unwrap_or(0),
                1 => s.cbfrsynra.get((o - 0x400) / 4).copied().unwrap_or(0),
                2 => s.cba2r.get((o - 0x800) / 4).copied().unwrap_or(0),
                _ => 0,
            },
            Space::Cb(n, o) => {
                let Some(b) = s.banks.get(n) else { return 0 };
                match o {
                    cb::SCTLR => b.sctlr,
                    cb::ACTLR => b.actlr,
                    cb::TCR2 => b.tcr2,
                    cb::TCR => b.tcr,
                    cb::MAIR0 => b.mair0,
                    cb::MAIR1 => b.mair1,
                    cb::FSR => b.fsr,
                    cb::FSYNR0 => b.fsynr0,
                    cb::FSYNR1 => b.fsynr1,
                    cb::TLBSTATUS => s.tlbsync_stuck as u32,
                    _ => 0,
                }
            }
            Space::None => 0,
        }
    }

    fn write32(&self, offset: usize, value: u32) {
        let mut s = self.state_mut();
        if s.absent {
            return;
        }
        s.writes.push((offset, value as u64));
        match decode(offset) {
            Space::Gr0(o) => match o {
                gr0::SCR0 => s.scr0 = value,
                gr0::GFSR => s.gfsr &= !value,
                gr0::TLBIALLNSNH => s.tlb.clear(),
                o if (0x800..0xc00).contains(&o) => s.smr[(o - 0x800) / 4] = value,
                o if (0xc00..0x1000).contains(&o) => s.s2cr[(o - 0xc00) / 4] = value,
                _ => {}
            },
            Space::Gr1(o) => match o / 0x400 {
                0 => s.cbar[o / 4] = value,
                2 => s.cba2r[(o - 0x800) / 4] = value,
                _ => {}
            },
            Space::Cb(n, o) => match o {
                cb::SCTLR => s.banks[n].sctlr = value,
                cb::ACTLR => s.banks[n].actlr = value,
                cb::TCR2 => s.banks[n].tcr2 = value,
                cb::TCR => s.banks[n].tcr = value,
                cb::MAIR0 => s.banks[n].mair0 = value,
                cb::MAIR1 => s.banks[n].mair1 = value,
                cb::FSR => s.banks[n].fsr &= !(value & fsr::CLEARABLE),
                cb::RESUME => resume(&mut s, n, value),
                cb::TLBIASID => s.tlb.retain(|&(asid, _), _| asid as u32 != value & 0xffff),
                _ => {}
            },
            Space::None => s.violations.push(format!("write to {offset:#x}")),
        }
    }

    fn read64(&self, offset: usize) -> u64 {
        let s = self.state();
        if s.absent {
            return 0;
        }
        match decode(offset) {
            Space::Gr0(gr0::GFAR) => s.gfar,
            Space::Cb(n, cb::TTBR0) => s.banks[n].ttbr0,
            Space::Cb(n, cb::TTBR1) => s.banks[n].ttbr1,
            Space::Cb(n, cb::FAR) => s.banks[n].far,
            _ => 0,
        }
    }

    fn write64(&self, offset: usize, value: u64) {
        let mut s = self.state_mut();
        if s.absent {
            return;
        }
        s.writes.push((offset, value));
        match decode(offset) {
            Space::Cb(n, cb::TTBR0) => s.banks[n].ttbr0 = value,
            Space::Cb(n, cb::TTBR1) => s.banks[n].ttbr1 = value,
            Space::Cb(_, cb::TLBIVA | cb::TLBIVAL) => {
                let asid = (value >> 48) as u16;
                let page = (value & 0x0fff_ffff_ffff) << 12;
                s.tlb.remove(&(asid, page));
            }
            _ => s.violations.push(format!("64-bit write to {offset:#x}")),
        }
    }
}

/// Offset of GR1's CBAR of bank `n` in the ZynqMP window.
pub fn cbar_offset(n: usize) -> usize {
    PAGE_SIZE + gr1::cbar(n)
}

/// Offset of bank `n`'s register `reg` in the ZynqMP window.
pub fn cb_offset(n: usize, reg: usize) -> usize {
    CB_BASE + n * PAGE_SIZE + reg
}
