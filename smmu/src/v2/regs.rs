//! SMMUv2 (Arm IHI 0062) register map and bit fields, as the MMU-500
//! (Arm DDI 0517) implements them.
//!
//! The register window is two halves of `NUMPAGE` pages each (page size and
//! `NUMPAGE` come from ID1, see [`Layout`]): the global space (page 0 is GR0,
//! page 1 is GR1), then one page per translation context bank.
//!
//! ```text
//!  base ─► GR0  (sCR0, IDs, global faults, global TLB maintenance, SMR, S2CR)
//!          GR1  (CBAR, CBFRSYNRA, CBA2R: one word per context bank)
//!          ...  (NUMPAGE - 2 pages the driver does not use)
//!  base + NUMPAGE * PAGESIZE ─► CB0, CB1, ... (one page per context bank)
//! ```

/// Global register space 0: offsets from the window's base.
pub mod gr0 {
    /// Configuration register 0 (the non-secure alias when the SMMU has
    /// security extensions; the only one otherwise).
    pub const SCR0: usize = 0x000;
    /// Auxiliary configuration (implementation defined).
    pub const SACR: usize = 0x010;
    /// Identification register 0: stream matching and translation stages.
    pub const ID0: usize = 0x020;
    /// Identification register 1: page size and context banks.
    pub const ID1: usize = 0x024;
    /// Identification register 2: address sizes and granules.
    pub const ID2: usize = 0x028;
    /// Identification register 7: implementation revision.
    pub const ID7: usize = 0x03c;
    /// Global fault address (64-bit).
    pub const GFAR: usize = 0x040;
    /// Global fault status (write 1 to clear).
    pub const GFSR: usize = 0x048;
    /// Global fault syndrome 0.
    pub const GFSYNR0: usize = 0x050;
    /// Global fault syndrome 1: the StreamID of the faulting transaction.
    pub const GFSYNR1: usize = 0x054;
    /// Invalidate all non-secure non-hypervisor TLB entries (write any value).
    pub const TLBIALLNSNH: usize = 0x068;
    /// Global TLB synchronisation (write any value).
    pub const STLBGSYNC: usize = 0x070;
    /// Global TLB synchronisation status.
    pub const STLBGSTATUS: usize = 0x074;
    /// Stream match register `n`.
    pub const fn smr(n: usize) -> usize {
        0x800 + 4 * n
    }
    /// Stream-to-context register `n`.
    pub const fn s2cr(n: usize) -> usize {
        0xc00 + 4 * n
    }
}

/// Global register space 1: offsets from its page (page 1 of the window).
pub mod gr1 {
    /// Context bank attribute register of bank `n`.
    pub const fn cbar(n: usize) -> usize {
        4 * n
    }
    /// Context bank fault restricted syndrome A of bank `n`: the StreamID of
    /// the recorded context fault.
    pub const fn cbfrsynra(n: usize) -> usize {
        0x400 + 4 * n
    }
    /// Context bank attribute register 2 of bank `n`.
    pub const fn cba2r(n: usize) -> usize {
        0x800 + 4 * n
    }
}

/// Translation context bank registers: offsets from the bank's page.
pub mod cb {
    /// System control: enable, fault reporting and the fault model.
    pub const SCTLR: usize = 0x000;
    /// Auxiliary control (implementation defined).
    pub const ACTLR: usize = 0x004;
    /// Resume a stalled transaction: TnR (bit 0) 0 retries, 1 terminates.
    pub const RESUME: usize = 0x008;
    /// Translation control 2: output size, ASID size, sign extension.
    pub const TCR2: usize = 0x010;
    /// Translation table base 0 (64-bit), ASID in bits `[63:48]`.
    pub const TTBR0: usize = 0x020;
    /// Translation table base 1 (64-bit).
    pub const TTBR1: usize = 0x028;
    /// Translation control: TCR_EL1's low word for AArch64 contexts.
    pub const TCR: usize = 0x030;
    /// Memory attribute indirection, attributes 0-3.
    pub const MAIR0: usize = 0x038;
    /// Memory attribute indirection, attributes 4-7.
    pub const MAIR1: usize = 0x03c;
    /// Fault status (write 1 to clear, except SS).
    pub const FSR: usize = 0x058;
    /// Fault address (64-bit).
    pub const FAR: usize = 0x060;
    /// Fault syndrome 0: access type and level.
    pub const FSYNR0: usize = 0x068;
    /// Fault syndrome 1 (implementation defined).
    pub const FSYNR1: usize = 0x06c;
    /// Invalidate by VA and ASID, all levels (64-bit).
    pub const TLBIVA: usize = 0x600;
    /// Invalidate by ASID (32-bit).
    pub const TLBIASID: usize = 0x610;
    /// Invalidate by VA and ASID, last level only (64-bit).
    pub const TLBIVAL: usize = 0x620;
    /// Context TLB synchronisation (write any value).
    pub const TLBSYNC: usize = 0x7f0;
    /// Context TLB synchronisation status.
    pub const TLBSTATUS: usize = 0x7f4;
}

/// sCR0 bits.
pub mod scr0 {
    /// Client port disable: 1 lets every transaction bypass the SMMU.
    pub const CLIENTPD: u32 = 1 << 0;
    /// Global fault report enable.
    pub const GFRE: u32 = 1 << 1;
    /// Global fault interrupt enable.
    pub const GFIE: u32 = 1 << 2;
    /// Global configuration fault report enable.
    pub const GCFGFRE: u32 = 1 << 4;
    /// Global configuration fault interrupt enable.
    pub const GCFGFIE: u32 = 1 << 5;
    /// Stall disable (MMU-500 ignores it).
    pub const STALLD: u32 = 1 << 8;
    /// Global stall enable (MMU-500 ignores it).
    pub const GSE: u32 = 1 << 9;
    /// Unidentified stream fault: 1 faults transactions no SMR matches,
    /// 0 lets them bypass.
    pub const USFCFG: u32 = 1 << 10;
    /// Private TLB maintenance: 1 ignores broadcast TLB invalidations.
    pub const PTM: u32 = 1 << 12;
    /// Force broadcast of TLB maintenance.
    pub const FB: u32 = 1 << 13;
    /// Barrier shareability upgrade, bits `[15:14]`.
    pub const BSU_MASK: u32 = 0b11 << 14;
    /// Stream match conflict fault: 1 faults a stream matching two SMRs.
    pub const SMCFCFG: u32 = 1 << 21;
}

/// sGFSR bits (write 1 to clear).
pub mod gfsr {
    /// Invalid context fault.
    pub const ICF: u32 = 1 << 0;
    /// Unidentified stream fault: no SMR matched.
    pub const USF: u32 = 1 << 1;
    /// Stream match conflict fault.
    pub const SMCF: u32 = 1 << 2;
    /// Unimplemented context bank fault.
    pub const UCBF: u32 = 1 << 3;
    /// Unimplemented context interrupt fault.
    pub const UCIF: u32 = 1 << 4;
    /// Configuration access fault.
    pub const CAF: u32 = 1 << 5;
    /// External fault.
    pub const EF: u32 = 1 << 6;
    /// Permission fault on a global-space access.
    pub const PF: u32 = 1 << 7;
    /// Unsupported upstream transaction.
    pub const UUT: u32 = 1 << 8;
    /// Another global fault occurred while one was recorded.
    pub const MULTI: u32 = 1 << 31;
    /// Every bit that says a fault is recorded.
    pub const ANY: u32 = 0x1ff | MULTI;
}

/// sTLBGSTATUS / TLBSTATUS: synchronisation still in progress.
pub const SYNC_ACTIVE: u32 = 1 << 0;

/// SMR fields (without extended StreamIDs).
pub mod smr {
    /// StreamID to match, bits `[14:0]`.
    pub const ID_SHIFT: u32 = 0;
    /// StreamID bits to ignore, bits `[30:16]`.
    pub const MASK_SHIFT: u32 = 16;
    /// Width of both fields.
    pub const FIELD_BITS: u32 = 15;
    /// The entry takes part in matching.
    pub const VALID: u32 = 1 << 31;
}

/// S2CR fields.
pub mod s2cr {
    /// Context bank index, bits `[7:0]`.
    pub const CBNDX_SHIFT: u32 = 0;
    /// Type, bits `[17:16]`.
    pub const TYPE_SHIFT: u32 = 16;
    /// Type: translate through context bank CBNDX.
    pub const TYPE_TRANSLATE: u32 = 0;
    /// Type: bypass translation.
    pub const TYPE_BYPASS: u32 = 1;
    /// Type: fault every transaction.
    pub const TYPE_FAULT: u32 = 2;
}

/// CBAR fields (stage-1 context with stage-2 bypass).
pub mod cbar {
    /// Bypass shareability, bits `[9:8]`: 0b11 non-shareable, so the
    /// stage-1 attributes decide.
    pub const BPSHCFG_SHIFT: u32 = 8;
    /// BPSHCFG encoding: non-shareable.
    pub const BPSHCFG_NSH: u32 = 0b11;
    /// Memory attributes of the bypassed stage 2, bits `[15:12]`.
    pub const MEMATTR_SHIFT: u32 = 12;
    /// MemAttr encoding: outer and inner write-back (the weakest, so the
    /// stage-1 attributes decide).
    pub const MEMATTR_WB: u32 = 0xf;
    /// Type, bits `[17:16]`.
    pub const TYPE_SHIFT: u32 = 16;
    /// Type: stage-2 only.
    pub const TYPE_S2: u32 = 0;
    /// Type: stage-1 translation, stage-2 bypass.
    pub const TYPE_S1_BYPASS_S2: u32 = 1;
    /// Interrupt index, bits `[31:24]`.
    pub const IRPTNDX_SHIFT: u32 = 24;
}

/// CBA2R bits.
pub mod cba2r {
    /// The context uses the AArch64 (64-bit VA) translation format.
    pub const VA64: u32 = 1 << 0;
}

/// SCTLR bits of a context bank.
pub mod sctlr {
    /// Translation enable.
    pub const M: u32 = 1 << 0;
    /// TEX remap enable (MAIR-indexed attributes).
    pub const TRE: u32 = 1 << 1;
    /// Access flag enable (AP[0] is the access flag).
    pub const AFE: u32 = 1 << 2;
    /// Context fault report enable.
    pub const CFRE: u32 = 1 << 5;
    /// Context fault interrupt enable.
    pub const CFIE: u32 = 1 << 6;
    /// Context fault configuration: 1 stalls, 0 terminates.
    pub const CFCFG: u32 = 1 << 7;
    /// Hit under previous context fault: 0 holds every later transaction
    /// of the context behind a stalled one.
    pub const HUPCF: u32 = 1 << 8;
}

/// TCR (AArch64 contexts: TCR_EL1's layout) fields.
pub mod tcr {
    /// T0SZ, bits `[5:0]`.
    pub const T0SZ_SHIFT: u32 = 0;
    /// IRGN0, bits `[9:8]`.
    pub const IRGN0_SHIFT: u32 = 8;
    /// ORGN0, bits `[11:10]`.
    pub const ORGN0_SHIFT: u32 = 10;
    /// SH0, bits `[13:12]`.
    pub const SH0_SHIFT: u32 = 12;
    /// TG0, bits `[15:14]` (0 = 4 KiB).
    pub const TG0_SHIFT: u32 = 14;
    /// Disable walks through TTBR1.
    pub const EPD1: u32 = 1 << 23;
    /// TG1, bits `[31:30]` (2 = 4 KiB).
    pub const TG1_SHIFT: u32 = 30;
    /// Cacheability encoding: write-back, write-allocate.
    pub const WBWA: u32 = 0b01;
    /// Shareability encoding: inner shareable.
    pub const ISH: u32 = 0b11;
    /// TG1 encoding of the 4 KiB granule.
    pub const TG1_4K: u32 = 0b10;
}

/// TCR2 fields.
pub mod tcr2 {
    /// Physical (output) address size, bits `[2:0]`, IPS encoding.
    pub const PASIZE_SHIFT: u32 = 0;
    /// 16-bit ASIDs.
    pub const AS: u32 = 1 << 4;
    /// Sign extension position, bits `[17:15]`.
    pub const SEP_SHIFT: u32 = 15;
    /// SEP encoding: sign-extend from the upstream bus size.
    pub const SEP_UPSTREAM: u32 = 0b111;
}

/// TTBR0 fields of an AArch64 context.
pub mod ttbr {
    /// ASID, bits `[63:48]`.
    pub const ASID_SHIFT: u32 = 48;
    /// Table address bits kept: `[47:4]`.
    pub const ADDR_MASK: u64 = 0x0000_ffff_ffff_fff0;
}

/// FSR bits of a context bank.
pub mod fsr {
    /// Translation fault.
    pub const TF: u32 = 1 << 1;
    /// Access flag fault.
    pub const AFF: u32 = 1 << 2;
    /// Permission fault.
    pub const PF: u32 = 1 << 3;
    /// External fault.
    pub const EF: u32 = 1 << 4;
    /// TLB match conflict fault.
    pub const TLBMCF: u32 = 1 << 5;
    /// TLB lock fault.
    pub const TLBLKF: u32 = 1 << 6;
    /// Address size fault.
    pub const ASF: u32 = 1 << 7;
    /// Unsupported upstream transaction.
    pub const UUT: u32 = 1 << 8;
    /// Stalled status: the recorded transaction waits for RESUME. Only a
    /// RESUME write clears it, and while it is set the context interrupt
    /// stays asserted on MMU-500.
    pub const SS: u32 = 1 << 30;
    /// Another fault occurred while one was recorded; it was not recorded.
    pub const MULTI: u32 = 1 << 31;
    /// The fault-class bits (everything a write of 1 clears).
    pub const FAULTS: u32 = TF | AFF | PF | EF | TLBMCF | TLBLKF | ASF | UUT;
    /// Every bit a write of 1 clears.
    pub const CLEARABLE: u32 = FAULTS | MULTI;
}

/// FSYNR0 fields.
pub mod fsynr0 {
    /// Level of the walk that faulted, bits `[1:0]`.
    pub const PLVL_MASK: u32 = 0b11;
    /// Write, not read.
    pub const WNR: u32 = 1 << 4;
    /// Privileged, not unprivileged.
    pub const PNU: u32 = 1 << 5;
    /// Instruction fetch, not data.
    pub const IND: u32 = 1 << 6;
    /// The fault was on a translation table walk.
    pub const PTWF: u32 = 1 << 10;
}

/// CBFRSYNRA: StreamID, bits `[15:0]`.
pub const CBFRSYNRA_SID_MASK: u32 = 0xffff;

/// RESUME: terminate (1) or retry (0) the stalled transaction.
pub const RESUME_TERMINATE: u32 = 1 << 0;

/// TLBIVA(L) operand of an AArch64 context: VA bits `[55:12]` in `[43:0]`,
/// ASID in `[63:48]`.
pub const fn tlbi_va(asid: u16, va: u64) -> u64 {
    ((va >> 12) & 0x0fff_ffff_ffff) | (asid as u64) << 48
}

/// Output-address-size encoding (ID2.OAS, TCR2.PASize) to bits: codes 0
/// to 5 (see [`crate::address_size`]).
pub const fn address_size_bits(code: u32) -> Option<u32> {
    crate::address_size::bits(code as u64, OAS_CODES)
}

/// Bits to the output-address-size encoding, exact sizes only.
pub fn address_size_code(bits: u32) -> Option<u32> {
    crate::address_size::code(bits, OAS_CODES).map(|c| c as u32)
}

/// Address-size codes SMMUv2 defines (48 bits at most).
const OAS_CODES: usize = 6;

/// Where things are in the register window, from ID1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Size of one register page: 4 KiB or 64 KiB (ID1.PAGESIZE).
    pub page_size: usize,
    /// Pages in each half of the window: 2^(NUMPAGENDXB + 1).
    pub num_pages: usize,
}

impl Layout {
    /// Offset of GR1.
    pub const fn gr1(&self) -> usize {
        self.page_size
    }

    /// Offset of context bank `n`'s page.
    pub const fn cb(&self, n: usize) -> usize {
        (self.num_pages + n) * self.page_size
    }

    /// Bytes the whole window spans.
    pub const fn window(&self) -> usize {
        2 * self.num_pages * self.page_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zynqmp_layout_is_128k_with_banks_in_the_upper_half() {
        let l = Layout {
            page_size: 4096,
            num_pages: 16,
        };
        assert_eq!(l.window(), 0x2_0000);
        assert_eq!(l.gr1(), 0x1000);
        assert_eq!(l.cb(0), 0x1_0000);
        assert_eq!(l.cb(15) + cb::TLBSTATUS, 0x1_f7f4);
    }

    #[test]
    fn tlbi_operand_carries_page_and_asid() {
        assert_eq!(tlbi_va(3, 0x7f_1234_5678), 0x0003_0000_07f1_2345);
    }

    #[test]
    fn address_sizes_round_trip() {
        for c in 0..=5 {
            assert_eq!(address_size_code(address_size_bits(c).unwrap()), Some(c));
        }
        assert_eq!(address_size_bits(6), None);
    }
}
