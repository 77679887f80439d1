//! The MMU-500 driver: brings the SMMU up with every stream faulting,
//! matches attached streams to stage-1 context banks on the kernel's
//! table, invalidates what the kernel unmaps, and hands stalled faults to
//! the kernel and resumes them.

use super::error::{Config, Error, Wait};
use super::id::Features;
use super::regs::{
    self, cb, cba2r, cbar, fsr, gr0, gr1, s2cr, scr0, sctlr, smr, tcr, tcr2, ttbr, Layout,
    SYNC_ACTIVE,
};
use super::syndrome::{Bank, ContextFault, GlobalFault, RawSyndrome};
use crate::fault::{FaultSet, PAGE_SIZE};
use crate::iommu::Collected;
use crate::poll;
use crate::v3::{CdError, CdParams, Regs};
use alloc::vec;
use alloc::vec::Vec;
use core::ops::Range;
use dma::Resume;

/// A stream match: the StreamIDs `s` with `s & !mask == id & !mask`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamMatch {
    /// StreamID to match.
    pub id: u32,
    /// StreamID bits to ignore (0: exactly `id`).
    pub mask: u32,
}

impl StreamMatch {
    /// Exactly one StreamID.
    pub const fn exact(id: u32) -> Self {
        Self { id, mask: 0 }
    }

    /// Whether `stream` matches.
    pub const fn matches(&self, stream: u32) -> bool {
        (stream ^ self.id) & !self.mask == 0
    }

    /// Whether some StreamID matches both.
    pub const fn overlaps(&self, other: &StreamMatch) -> bool {
        (self.id ^ other.id) & !(self.mask | other.mask) == 0
    }
}

#[derive(Clone, Copy, Debug)]
struct SmrEntry {
    matcher: StreamMatch,
    bank: u8,
}

#[derive(Clone, Copy, Debug)]
struct BankEntry {
    params: CdParams,
    /// SMRs pointing at it.
    users: usize,
    /// SCTLR as programmed (with CFIE).
    sctlr: u32,
    /// A stalled fault was handed out and not resumed yet (CFIE masked).
    stalled: bool,
}

/// An Arm MMU-500 (SMMUv2) translating streams through stage-1 context
/// banks in the CPU's table format, stalling faulting transactions.
pub struct Mmu500<R: Regs> {
    regs: R,
    features: Features,
    config: Config,
    smrs: Vec<Option<SmrEntry>>,
    banks: Vec<Option<BankEntry>>,
}

impl<R: Regs> Mmu500<R> {
    /// Reads ID0-ID2 and refuses what is not a usable MMU-500 (all-zero
    /// IDs: nothing at this address, [`ProbeError::NotPresent`](super::ProbeError::NotPresent)),
    /// then brings it up: global faults cleared, every SMR invalid and every
    /// S2CR faulting, every context bank disabled with its faults cleared,
    /// the whole TLB invalidated (TLBIALLNSNH, sTLBGSYNC), and finally sCR0
    /// with translation on, unmatched streams faulting (USFCFG), stream
    /// match conflicts faulting (SMCFCFG) and global fault reports and
    /// interrupts on. Nothing but registers is touched before the IDs pass.
    pub fn new(regs: R, config: Config) -> Result<Self, Error> {
        let features = Self::probe(&regs, config.window).map_err(Error::Probe)?;
        let mut smmu = Self {
            regs,
            features,
            config,
            smrs: vec![None; features.num_smr],
            banks: vec![None; features.num_cb],
        };
        smmu.reset()?;
        Ok(smmu)
    }

    /// Reads ID0-ID2 of the SMMU in a `window`-byte register window and
    /// says what it is, or why it is not a usable MMU-500; writes nothing,
    /// so it is safe on a live SMMU that other software set up, and on an
    /// address nothing answers at (all-zero IDs:
    /// [`ProbeError::NotPresent`](super::ProbeError::NotPresent)).
    pub fn probe(regs: &R, window: usize) -> Result<Features, super::ProbeError> {
        Features::probe(
            regs.read32(gr0::ID0),
            regs.read32(gr0::ID1),
            regs.read32(gr0::ID2),
            window,
        )
    }

    fn layout(&self) -> Layout {
        self.features.layout
    }

    fn cb_reg(&self, bank: usize, offset: usize) -> usize {
        self.layout().cb(bank) + offset
    }

    fn reset(&mut self) -> Result<(), Error> {
        let gfsr = self.regs.read32(gr0::GFSR);
        self.regs.write32(gr0::GFSR, gfsr);
        for n in 0..self.features.num_smr {
            self.regs.write32(gr0::smr(n), 0);
            self.regs
                .write32(gr0::s2cr(n), s2cr::TYPE_FAULT << s2cr::TYPE_SHIFT);
        }
        for n in 0..self.features.num_cb {
            self.regs.write32(self.cb_reg(n, cb::SCTLR), 0);
            // A transaction left stalled by earlier software is terminated:
            // nobody knows what it was.
            let left = self.regs.read32(self.cb_reg(n, cb::FSR));
            self.regs
                .write32(self.cb_reg(n, cb::FSR), left & fsr::CLEARABLE);
            if left & fsr::SS != 0 {
                self.regs
                    .write32(self.cb_reg(n, cb::RESUME), regs::RESUME_TERMINATE);
            }
        }
        self.regs.write32(gr0::TLBIALLNSNH, 0);
        self.global_sync()?;
        let mut cr0 = self.regs.read32(gr0::SCR0);
        cr0 &= !(scr0::CLIENTPD | scr0::FB | scr0::BSU_MASK | scr0::STALLD | scr0::GSE | scr0::PTM);
        cr0 |= scr0::GFRE | scr0::GFIE | scr0::GCFGFRE | scr0::GCFGFIE | scr0::USFCFG;
        cr0 |= scr0::SMCFCFG;
        // The tables and registers above before translation starts.
        self.regs.dma_fence();
        self.regs.write32(gr0::SCR0, cr0);
        Ok(())
    }

    fn global_sync(&self) -> Result<(), Error> {
        self.regs.write32(gr0::STLBGSYNC, 0);
        poll(
            self.config.poll_limit,
            Error::Timeout(Wait::GlobalTlbSync),
            || self.regs.read32(gr0::STLBGSTATUS) & SYNC_ACTIVE == 0,
        )
    }

    fn bank_sync(&self, bank: usize) -> Result<(), Error> {
        self.regs.write32(self.cb_reg(bank, cb::TLBSYNC), 0);
        poll(
            self.config.poll_limit,
            Error::Timeout(Wait::ContextTlbSync(Bank(bank as u8))),
            || self.regs.read32(self.cb_reg(bank, cb::TLBSTATUS)) & SYNC_ACTIVE == 0,
        )
    }

    /// What the ID registers said.
    pub fn features(&self) -> &Features {
        &self.features
    }

    /// The register window (for a software model, its state).
    pub fn regs(&self) -> &R {
        &self.regs
    }

    /// Translates stream `sid` through the stage-1 regime `params`.
    pub fn attach(&mut self, sid: u32, params: &CdParams) -> Result<Bank, Error> {
        self.attach_match(StreamMatch::exact(sid), params)
    }

    /// Translates the streams `m` matches through the stage-1 regime
    /// `params`: a context bank for it (shared with streams already
    /// attached under the same ASID and table), then the S2CR pointing at
    /// it, then the SMR with VALID last, so no transaction ever reaches a
    /// half-programmed bank.
    pub fn attach_match(&mut self, m: StreamMatch, params: &CdParams) -> Result<Bank, Error> {
        let limit = (1u32 << self.features.sid_bits.min(smr::FIELD_BITS)) - 1;
        if m.id & !limit != 0 || m.mask & !limit != 0 {
            return Err(Error::StreamTooWide {
                stream: m.id,
                mask: m.mask,
                sid_bits: self.features.sid_bits,
            });
        }
        if let Some(n) = self
            .smrs
            .iter()
            .position(|e| e.is_some_and(|e| e.matcher.overlaps(&m)))
        {
            return Err(Error::StreamConflict {
                stream: m.id,
                smr: n,
            });
        }
        let slot = self
            .smrs
            .iter()
            .position(Option::is_none)
            .ok_or(Error::NoFreeStreamMatch)?;
        let bank = self.bank_for(params)?;
        let entry = self.banks[bank].as_mut().expect("bank_for set it up");
        entry.users += 1;
        self.regs.write32(
            gr0::s2cr(slot),
            s2cr::TYPE_TRANSLATE << s2cr::TYPE_SHIFT | (bank as u32) << s2cr::CBNDX_SHIFT,
        );
        self.regs.write32(
            gr0::smr(slot),
            smr::VALID | m.mask << smr::MASK_SHIFT | m.id << smr::ID_SHIFT,
        );
        self.smrs[slot] = Some(SmrEntry {
            matcher: m,
            bank: bank as u8,
        });
        Ok(Bank(bank as u8))
    }

    /// The bank translating `params`: an existing one with the same ASID and
    /// table, or a free stage-1 bank programmed for it.
    fn bank_for(&mut self, params: &CdParams) -> Result<usize, Error> {
        for (n, b) in self.banks.iter().enumerate() {
            if let Some(b) = b {
                if b.params.asid == params.asid {
                    if b.params == *params {
                        return Ok(n);
                    }
                    return Err(Error::AsidConflict {
                        asid: params.asid,
                        bank: Bank(n as u8),
                    });
                }
            }
        }
        let (tcr_value, tcr2_value, ttbr0) = encode_context(params, self.features.oas_bits)?;
        let n = self
            .features
            .stage1_banks()
            .find(|&n| self.banks[n].is_none())
            .ok_or(Error::NoFreeContextBank)?;
        let irpt = n as u32 % self.features.num_irpt.max(1);
        let r = &self.regs;
        r.write32(self.cb_reg(n, cb::SCTLR), 0);
        r.write32(self.layout().gr1() + gr1::cba2r(n), cba2r::VA64);
        r.write32(
            self.layout().gr1() + gr1::cbar(n),
            cbar::TYPE_S1_BYPASS_S2 << cbar::TYPE_SHIFT
                | cbar::BPSHCFG_NSH << cbar::BPSHCFG_SHIFT
                | cbar::MEMATTR_WB << cbar::MEMATTR_SHIFT
                | irpt << cbar::IRPTNDX_SHIFT,
        );
        r.write32(self.cb_reg(n, cb::TCR2), tcr2_value);
        r.write64(self.cb_reg(n, cb::TTBR0), ttbr0);
        r.write64(self.cb_reg(n, cb::TTBR1), 0);
        r.write32(self.cb_reg(n, cb::TCR), tcr_value);
        r.write32(self.cb_reg(n, cb::MAIR0), params.mair as u32);
        r.write32(self.cb_reg(n, cb::MAIR1), (params.mair >> 32) as u32);
        let stale = r.read32(self.cb_reg(n, cb::FSR));
        r.write32(self.cb_reg(n, cb::FSR), stale & fsr::CLEARABLE);
        // Entries a previous user of the ASID left behind.
        r.write32(self.cb_reg(n, cb::TLBIASID), params.asid as u32);
        self.bank_sync(n)?;
        let sctlr_value =
            sctlr::M | sctlr::TRE | sctlr::AFE | sctlr::CFRE | sctlr::CFIE | sctlr::CFCFG;
        self.regs.dma_fence();
        self.regs.write32(self.cb_reg(n, cb::SCTLR), sctlr_value);
        self.banks[n] = Some(BankEntry {
            params: *params,
            users: 0,
            sctlr: sctlr_value,
            stalled: false,
        });
        Ok(n)
    }

    /// Stops matching stream `sid` (attached exactly, with mask 0): its
    /// traffic faults as unmatched. A context bank left with no streams is
    /// disabled and its ASID's TLB entries dropped.
    pub fn detach(&mut self, sid: u32) -> Result<(), Error> {
        let slot = self
            .smrs
            .iter()
            .position(|e| e.is_some_and(|e| e.matcher == StreamMatch::exact(sid)))
            .ok_or(Error::NotAttached(sid))?;
        let bank = self.smrs[slot].take().expect("found above").bank as usize;
        self.regs.write32(gr0::smr(slot), 0);
        self.regs
            .write32(gr0::s2cr(slot), s2cr::TYPE_FAULT << s2cr::TYPE_SHIFT);
        let entry = self.banks[bank].as_mut().expect("an SMR points at it");
        entry.users -= 1;
        let (users, asid) = (entry.users, entry.params.asid);
        if users == 0 {
            // Its stalled transaction, if any, is no longer anyone's.
            self.resume(Bank(bank as u8), Resume::Abort);
            self.regs.write32(self.cb_reg(bank, cb::SCTLR), 0);
            self.regs
                .write32(self.cb_reg(bank, cb::TLBIASID), asid as u32);
            self.banks[bank] = None;
            self.bank_sync(bank)?;
        }
        Ok(())
    }

    /// The context bank stream `stream` translates through, if attached:
    /// what an engine driver needs to resume a stalled segment.
    pub fn bank_of(&self, stream: u32) -> Option<Bank> {
        self.smrs
            .iter()
            .flatten()
            .find(|e| e.matcher.matches(stream))
            .map(|e| Bank(e.bank))
    }

    fn banks_with(&self, asid: u16) -> impl Iterator<Item = usize> + '_ {
        self.banks
            .iter()
            .enumerate()
            .filter(move |(_, b)| b.is_some_and(|b| b.params.asid == asid))
            .map(|(n, _)| n)
    }

    /// Drops the TLB entries for the page holding `va` in `asid` (all
    /// levels: the kernel may have freed a table), then syncs. Works while
    /// a transaction of the bank is stalled: the sync waits for maintenance,
    /// not for stalled transactions (which hold no TLB entry).
    pub fn invalidate_va(&mut self, asid: u16, va: u64) -> Result<(), Error> {
        self.invalidate_pages(asid, va & !(PAGE_SIZE - 1), 1)
    }

    /// Drops the TLB entries of every 4 KiB page overlapping `range`, one
    /// TLBIVA per page, or the whole ASID when the range spans more than
    /// [`Config::range_invalidate_pages`] pages; then syncs.
    pub fn invalidate_range(&mut self, asid: u16, range: Range<u64>) -> Result<(), Error> {
        if range.is_empty() {
            return Ok(());
        }
        let first = range.start & !(PAGE_SIZE - 1);
        let pages = (range.end - first).div_ceil(PAGE_SIZE);
        if pages > self.config.range_invalidate_pages {
            return self.invalidate_asid(asid);
        }
        self.invalidate_pages(asid, first, pages)
    }

    fn invalidate_pages(&mut self, asid: u16, first: u64, pages: u64) -> Result<(), Error> {
        let banks: Vec<usize> = self.banks_with(asid).collect();
        for &n in &banks {
            for p in 0..pages {
                let operand = regs::tlbi_va(asid, first + p * PAGE_SIZE);
                self.regs.write64(self.cb_reg(n, cb::TLBIVA), operand);
            }
        }
        for n in banks {
            self.bank_sync(n)?;
        }
        Ok(())
    }

    /// Drops every TLB entry of `asid` (TLBIASID), then syncs.
    pub fn invalidate_asid(&mut self, asid: u16) -> Result<(), Error> {
        let banks: Vec<usize> = self.banks_with(asid).collect();
        for &n in &banks {
            self.regs.write32(self.cb_reg(n, cb::TLBIASID), asid as u32);
        }
        for n in banks {
            self.bank_sync(n)?;
        }
        Ok(())
    }

    /// Reads the fault record of `bank`, if it holds one not handed out yet.
    ///
    /// A stalled fault (FSR.SS) stays recorded until [`resume`](Self::resume):
    /// the record is kept so that further faults only set MULTI, and the
    /// bank's context interrupt is masked (SCTLR.CFIE) meanwhile, because
    /// on MMU-500 SS alone keeps it asserted and only RESUME clears SS. A
    /// fault whose transaction was terminated is cleared at once.
    pub fn take_fault(&mut self, bank: Bank) -> Option<ContextFault> {
        let n = bank.0 as usize;
        let entry = self.banks.get(n).copied().flatten()?;
        if entry.stalled {
            return None;
        }
        let raw = self.read_syndrome(n);
        let record = ContextFault::decode(bank, raw)?;
        if record.stalled {
            self.regs
                .write32(self.cb_reg(n, cb::SCTLR), entry.sctlr & !sctlr::CFIE);
            if let Some(e) = self.banks[n].as_mut() {
                e.stalled = true;
            }
        } else {
            self.regs
                .write32(self.cb_reg(n, cb::FSR), raw.fsr & fsr::CLEARABLE);
        }
        Some(record)
    }

    fn read_syndrome(&self, n: usize) -> RawSyndrome {
        let fsr_value = self.regs.read32(self.cb_reg(n, cb::FSR));
        if fsr_value & (fsr::CLEARABLE | fsr::SS) == 0 {
            return RawSyndrome::default();
        }
        RawSyndrome {
            fsr: fsr_value,
            far: self.regs.read64(self.cb_reg(n, cb::FAR)),
            fsynr0: self.regs.read32(self.cb_reg(n, cb::FSYNR0)),
            fsynr1: self.regs.read32(self.cb_reg(n, cb::FSYNR1)),
            cbfrsynra: self.regs.read32(self.layout().gr1() + gr1::cbfrsynra(n)),
        }
    }

    /// Reads the fault records of every bank in use (the context interrupt
    /// handler: ZynqMP wires all banks to one interrupt), in bank order.
    pub fn take_faults(&mut self, mut f: impl FnMut(ContextFault)) -> usize {
        let mut count = 0;
        for n in 0..self.banks.len() {
            if let Some(record) = self.take_fault(Bank(n as u8)) {
                count += 1;
                f(record);
            }
        }
        count
    }

    /// Ends the stall of `bank`'s recorded transaction: clears FSR (the
    /// architecture wants the record cleared before the resume), writes
    /// RESUME (TnR = 0 for [`Resume::Retry`], 1 for [`Resume::Abort`]),
    /// and unmasks the bank's context interrupt. The MMU-500 then presents
    /// again the transactions it held behind the stalled one.
    ///
    /// Takes the DMA scheduler's own [`Resume`], so an engine driver's
    /// `Engine::resume` is one call. Harmless (returns false) on a bank with
    /// nothing handed out: the scheduler resumes every in-flight segment of
    /// a stream after lost faults, stalled or not.
    pub fn resume(&mut self, bank: Bank, how: Resume) -> bool {
        let n = bank.0 as usize;
        let Some(Some(entry)) = self.banks.get(n).copied() else {
            return false;
        };
        if !entry.stalled {
            return false;
        }
        let now = self.regs.read32(self.cb_reg(n, cb::FSR));
        self.regs
            .write32(self.cb_reg(n, cb::FSR), now & fsr::CLEARABLE);
        let tnr = match how {
            Resume::Retry => 0,
            Resume::Abort => regs::RESUME_TERMINATE,
        };
        self.regs.write32(self.cb_reg(n, cb::RESUME), tnr);
        if let Some(e) = self.banks[n].as_mut() {
            e.stalled = false;
        }
        self.regs.write32(self.cb_reg(n, cb::SCTLR), entry.sctlr);
        true
    }

    /// Whether `bank` has a stalled fault handed out and not resumed.
    pub fn is_stalled(&self, bank: Bank) -> bool {
        self.banks
            .get(bank.0 as usize)
            .copied()
            .flatten()
            .is_some_and(|b| b.stalled)
    }

    /// The whole fault path in one call, for a kernel that resolves faults
    /// synchronously (`mm::resolve` is a plain function call): for every
    /// bank's record, `resolve` decides, and a stalled transaction is
    /// resumed accordingly. `resolve` also sees terminated faults (their
    /// return value is ignored), so the page can be made resident before
    /// the device's retransmission. Returns the records handled.
    pub fn handle_faults(&mut self, mut resolve: impl FnMut(&ContextFault) -> Resume) -> usize {
        let mut count = 0;
        for n in 0..self.banks.len() {
            let bank = Bank(n as u8);
            if let Some(record) = self.take_fault(bank) {
                count += 1;
                let how = resolve(&record);
                if record.stalled {
                    self.resume(bank, how);
                }
            }
        }
        count
    }

    /// Reads every bank's record into `set` (one fault per stream, page and
    /// access); stalled transactions stay stalled until
    /// [`resume`](Self::resume). The kernel-facing fault path shared with
    /// the SMMUv3 driver ([`crate::Iommu::collect_faults`]).
    pub fn collect_faults<const N: usize>(&mut self, set: &mut FaultSet<N>) -> Collected {
        let mut c = Collected::default();
        let before = set.len();
        self.take_faults(|r| {
            c.records += 1;
            c.stalled += r.stalled as usize;
            c.lost |= r.multi;
            if let Some(f) = r.fault {
                set.insert(f);
            }
        });
        c.new_faults = set.len() - before;
        c
    }

    /// Reads and clears the global fault record (unmatched streams, stream
    /// match conflicts...), if any: the global fault interrupt's handler.
    pub fn take_global_fault(&mut self) -> Option<GlobalFault> {
        let gfsr_value = self.regs.read32(gr0::GFSR);
        if gfsr_value == 0 {
            return None;
        }
        let record = GlobalFault {
            gfsr: gfsr_value,
            stream: self.regs.read32(gr0::GFSYNR1) & regs::CBFRSYNRA_SID_MASK,
            address: self.regs.read64(gr0::GFAR),
            gfsynr0: self.regs.read32(gr0::GFSYNR0),
        };
        self.regs.write32(gr0::GFSR, gfsr_value);
        Some(record)
    }
}

/// TCR, TCR2 and TTBR0 of a context bank walking the CPU's table: 4 KiB
/// granule, write-back inner-shareable walks, TTBR1 walks off, 16-bit
/// ASIDs, output size `params.ips_bits` (at most the SMMU's).
fn encode_context(params: &CdParams, oas_bits: u32) -> Result<(u32, u32, u64), Error> {
    if !(16..=39).contains(&params.t0sz) {
        return Err(Error::BadContext(CdError::T0szOutOfRange(params.t0sz)));
    }
    let pasize = regs::address_size_code(params.ips_bits)
        .filter(|_| params.ips_bits <= oas_bits)
        .ok_or(Error::BadContext(CdError::UnsupportedIps(params.ips_bits)))?;
    if !params.ttb0.is_multiple_of(16) {
        return Err(Error::BadContext(CdError::TtbMisaligned(params.ttb0)));
    }
    if params.ttb0 >> params.ips_bits != 0 {
        return Err(Error::BadContext(CdError::TtbBeyondIps(params.ttb0)));
    }
    let tcr_value = (params.t0sz as u32) << tcr::T0SZ_SHIFT
        | tcr::WBWA << tcr::IRGN0_SHIFT
        | tcr::WBWA << tcr::ORGN0_SHIFT
        | tcr::ISH << tcr::SH0_SHIFT
        | tcr::EPD1
        | tcr::TG1_4K << tcr::TG1_SHIFT;
    let tcr2_value =
        pasize << tcr2::PASIZE_SHIFT | tcr2::AS | tcr2::SEP_UPSTREAM << tcr2::SEP_SHIFT;
    let ttbr0 = params.ttb0 & ttbr::ADDR_MASK | (params.asid as u64) << ttbr::ASID_SHIFT;
    Ok((tcr_value, tcr2_value, ttbr0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_matching_with_masks() {
        let m = StreamMatch {
            id: 0x870,
            mask: 0xf,
        };
        assert!(m.matches(0x870) && m.matches(0x87f) && !m.matches(0x880));
        assert!(m.overlaps(&StreamMatch::exact(0x875)));
        assert!(!m.overlaps(&StreamMatch::exact(0x860)));
    }

    #[test]
    fn the_kernels_regime_encodes() {
        let params = CdParams {
            ttb0: 0x4_0123_4000,
            t0sz: 25,
            asid: 1,
            mair: 0xff04,
            ips_bits: 40,
        };
        let (t, t2, ttbr0) = encode_context(&params, 48).unwrap();
        assert_eq!(t & 0x3f, 25);
        assert_eq!((t >> 14) & 3, 0, "TG0 = 4 KiB");
        assert_ne!(t & tcr::EPD1, 0);
        assert_eq!(t2 & 7, 2, "PASize = 40 bits");
        assert_eq!(ttbr0, 0x0001_0004_0123_4000);
        let wide = CdParams {
            ips_bits: 48,
            ..params
        };
        assert_eq!(
            encode_context(&wide, 44),
            Err(Error::BadContext(CdError::UnsupportedIps(48)))
        );
    }
}
