//! What the ID registers say the SMMU is, and whether the driver can use it.
//!
//! Probing is where "no SMMU here" is decided: a bus that nothing answers
//! on reads as all zeros (QEMU `xlnx-zcu102` at `0xFD80_0000`) or all ones
//! (some interconnects), and neither is a valid MMU-500, which always has
//! stream matching, context banks and stage-1 translation.

use super::regs::{address_size_bits, Layout};
use core::fmt;

/// What the SMMU can do, decoded from ID0, ID1 and ID2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Features {
    /// Stage-1 translation (the only stage this driver uses).
    pub stage1: bool,
    /// Stage-2 translation.
    pub stage2: bool,
    /// Stream matching (SMR registers), as opposed to stream indexing.
    pub stream_matching: bool,
    /// Number of stream match register groups (SMR/S2CR pairs).
    pub num_smr: usize,
    /// StreamID bits.
    pub sid_bits: u32,
    /// Translation-table walks are coherent with the CPU's caches.
    pub coherent_walk: bool,
    /// The SMMU takes part in broadcast TLB maintenance.
    pub broadcast_tlb: bool,
    /// Number of context interrupts.
    pub num_irpt: u32,
    /// Number of translation context banks.
    pub num_cb: usize,
    /// Of those, how many (the lowest-numbered) support stage 2 only.
    pub num_s2cb: usize,
    /// Register window layout (page size and pages per half).
    pub layout: Layout,
    /// AArch64 tables with the 4 KiB granule.
    pub granule_4k: bool,
    /// Output address size in bits (0 for a reserved encoding).
    pub oas_bits: u32,
    /// Input (stage-2 input, here the upstream) address size code.
    pub ias_code: u32,
    /// 16-bit VMIDs.
    pub vmid16: bool,
}

/// Why the driver refuses what it found at the SMMU's address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeError {
    /// ID0, ID1 and ID2 all read as zero, or all as ones: nothing answers
    /// at this address (QEMU models no SMMU there, or the bus floats).
    NotPresent {
        /// ID0 as read.
        id0: u32,
    },
    /// No stage-1 translation, so the CPU's table cannot be walked.
    NoStage1,
    /// Stream indexing instead of stream matching.
    NoStreamMatching,
    /// Stream matching with no SMR groups.
    NoStreamMatchRegisters,
    /// No context bank that can do stage 1.
    NoStage1ContextBanks {
        /// Context banks.
        num_cb: usize,
        /// Of which stage-2 only.
        num_s2cb: usize,
    },
    /// More context banks than there are pages for them in the window.
    ContextBanksBeyondWindow {
        /// Context banks.
        num_cb: usize,
        /// Pages in the context bank half.
        num_pages: usize,
    },
    /// The register window the board gives is smaller than ID1 says.
    WindowTooSmall {
        /// Bytes the ID registers need.
        need: usize,
        /// Bytes the board maps.
        have: usize,
    },
    /// No AArch64 4 KiB granule (the kernel's page size).
    No4KGranule,
    /// Output addresses narrower than the kernel's physical space.
    OutputAddressTooSmall {
        /// Bits the SMMU has.
        have: u32,
        /// Bits needed.
        need: u32,
    },
    /// Table walks do not snoop the CPU's caches, so the SMMU could read
    /// stale descriptors.
    NotCoherent,
}

/// Output address bits the kernel's page table needs (40-bit PA).
pub const NEEDED_OAS_BITS: u32 = 40;

const fn bit(v: u32, b: u32) -> bool {
    (v >> b) & 1 == 1
}

const fn field(v: u32, lo: u32, width: u32) -> u32 {
    (v >> lo) & ((1 << width) - 1)
}

impl Features {
    /// Decodes the ID registers.
    pub fn decode(id0: u32, id1: u32, id2: u32) -> Self {
        Self {
            num_smr: field(id0, 0, 8) as usize,
            sid_bits: field(id0, 9, 4),
            broadcast_tlb: bit(id0, 13),
            coherent_walk: bit(id0, 14),
            num_irpt: field(id0, 16, 8),
            stream_matching: bit(id0, 27),
            stage2: bit(id0, 29),
            stage1: bit(id0, 30),
            num_cb: field(id1, 0, 8) as usize,
            num_s2cb: field(id1, 16, 8) as usize,
            layout: Layout {
                page_size: if bit(id1, 31) { 0x1_0000 } else { 0x1000 },
                num_pages: 1 << (field(id1, 28, 3) + 1),
            },
            ias_code: field(id2, 0, 4),
            oas_bits: address_size_bits(field(id2, 4, 4)).unwrap_or(0),
            granule_4k: bit(id2, 12),
            vmid16: bit(id2, 15),
        }
    }

    /// Decodes and checks the ID registers of the SMMU in a window of
    /// `window` bytes: the features, or why the driver cannot use it.
    pub fn probe(id0: u32, id1: u32, id2: u32, window: usize) -> Result<Self, ProbeError> {
        let all = [id0, id1, id2];
        if all.iter().all(|&v| v == 0) || all.iter().all(|&v| v == u32::MAX) {
            return Err(ProbeError::NotPresent { id0 });
        }
        let f = Self::decode(id0, id1, id2);
        f.check(window)?;
        Ok(f)
    }

    /// Refuses an SMMU that lacks what walking the CPU's table needs, or
    /// whose ID registers contradict each other or the window.
    pub fn check(&self, window: usize) -> Result<(), ProbeError> {
        if !self.stage1 {
            return Err(ProbeError::NoStage1);
        }
        if !self.stream_matching {
            return Err(ProbeError::NoStreamMatching);
        }
        if self.num_smr == 0 {
            return Err(ProbeError::NoStreamMatchRegisters);
        }
        if self.num_s2cb >= self.num_cb {
            return Err(ProbeError::NoStage1ContextBanks {
                num_cb: self.num_cb,
                num_s2cb: self.num_s2cb,
            });
        }
        if self.num_cb > self.layout.num_pages {
            return Err(ProbeError::ContextBanksBeyondWindow {
                num_cb: self.num_cb,
                num_pages: self.layout.num_pages,
            });
        }
        if self.layout.window() > window {
            return Err(ProbeError::WindowTooSmall {
                need: self.layout.window(),
                have: window,
            });
        }
        if !self.granule_4k {
            return Err(ProbeError::No4KGranule);
        }
        if self.oas_bits < NEEDED_OAS_BITS {
            return Err(ProbeError::OutputAddressTooSmall {
                have: self.oas_bits,
                need: NEEDED_OAS_BITS,
            });
        }
        if !self.coherent_walk {
            return Err(ProbeError::NotCoherent);
        }
        Ok(())
    }

    /// The context banks that can translate stage 1.
    pub fn stage1_banks(&self) -> core::ops::Range<usize> {
        self.num_s2cb..self.num_cb
    }
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotPresent { id0 } => {
                write!(f, "ID registers read {id0:#x}: nothing answers")
            }
            Self::NoStage1 => f.write_str("SMMU has no stage-1 translation"),
            Self::NoStreamMatching => f.write_str("SMMU uses stream indexing, not matching"),
            Self::NoStreamMatchRegisters => f.write_str("SMMU has no stream match registers"),
            Self::NoStage1ContextBanks { num_cb, num_s2cb } => write!(
                f,
                "SMMU has {num_cb} context banks, {num_s2cb} of them stage-2 only"
            ),
            Self::ContextBanksBeyondWindow { num_cb, num_pages } => write!(
                f,
                "SMMU claims {num_cb} context banks but {num_pages} pages for them"
            ),
            Self::WindowTooSmall { need, have } => {
                write!(
                    f,
                    "SMMU needs a {need:#x}-byte window, the board maps {have:#x}"
                )
            }
            Self::No4KGranule => f.write_str("SMMU has no AArch64 4 KiB granule"),
            Self::OutputAddressTooSmall { have, need } => {
                write!(f, "SMMU output addresses are {have} bits, need {need}")
            }
            Self::NotCoherent => f.write_str("SMMU table walks are not cache-coherent"),
        }
    }
}

/// ZynqMP's MMU-500 as its documentation describes it: 48 SMR groups,
/// 15-bit StreamIDs, 16 context banks in 4 KiB pages (a 128 KiB window),
/// 48-bit output addresses, coherent walks. The register values, so tests
/// and the model can start from a real configuration.
pub mod zynqmp {
    /// ID0: S1TS, S2TS, SMS, NUMIRPT = 16, CTTW, NUMSIDB = 15, NUMSMRG = 48.
    pub const ID0: u32 =
        (1 << 30) | (1 << 29) | (1 << 27) | (16 << 16) | (1 << 14) | (15 << 9) | 48;
    /// ID1: 4 KiB pages, NUMPAGENDXB = 3 (16 pages), NUMS2CB = 0, NUMCB = 16.
    pub const ID1: u32 = (3 << 28) | 16;
    /// ID2: PTFSv8 4K and 64K, UBS, OAS and IAS all 48 bits.
    pub const ID2: u32 = (1 << 14) | (1 << 12) | (5 << 8) | (5 << 4) | 5;
    /// Bytes of the register window.
    pub const WINDOW: usize = 0x2_0000;
    /// Physical base of the register window.
    pub const BASE: usize = 0xfd80_0000;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_zynqmp() {
        let f = Features::probe(zynqmp::ID0, zynqmp::ID1, zynqmp::ID2, zynqmp::WINDOW).unwrap();
        assert!(f.stage1 && f.stage2 && f.stream_matching && f.coherent_walk);
        assert_eq!(
            (f.num_smr, f.sid_bits, f.num_cb, f.num_s2cb),
            (48, 15, 16, 0)
        );
        assert_eq!(f.layout.page_size, 4096);
        assert_eq!(f.layout.num_pages, 16);
        assert_eq!(f.oas_bits, 48);
        assert!(f.granule_4k);
        assert_eq!(f.stage1_banks(), 0..16);
    }

    #[test]
    fn nothing_answering_is_not_an_smmu() {
        assert_eq!(
            Features::probe(0, 0, 0, zynqmp::WINDOW),
            Err(ProbeError::NotPresent { id0: 0 })
        );
        assert_eq!(
            Features::probe(!0, !0, !0, zynqmp::WINDOW),
            Err(ProbeError::NotPresent { id0: !0 })
        );
    }

    #[test]
    fn odd_hardware_is_refused() {
        let (a, b, c, w) = (zynqmp::ID0, zynqmp::ID1, zynqmp::ID2, zynqmp::WINDOW);
        let probe = |a, b, c, w| Features::probe(a, b, c, w).unwrap_err();
        assert_eq!(probe(a & !(1 << 30), b, c, w), ProbeError::NoStage1);
        assert_eq!(probe(a & !(1 << 27), b, c, w), ProbeError::NoStreamMatching);
        assert_eq!(
            probe(a & !0xff, b, c, w),
            ProbeError::NoStreamMatchRegisters
        );
        assert_eq!(
            probe(a, b | (16 << 16), c, w),
            ProbeError::NoStage1ContextBanks {
                num_cb: 16,
                num_s2cb: 16
            }
        );
        assert_eq!(
            probe(a, b & !(0b111 << 28), c, w),
            ProbeError::ContextBanksBeyondWindow {
                num_cb: 16,
                num_pages: 2
            }
        );
        assert_eq!(
            probe(a, b | (1 << 31), c, w),
            ProbeError::WindowTooSmall {
                need: 0x20_0000,
                have: w
            }
        );
        assert_eq!(probe(a, b, c & !(1 << 12), w), ProbeError::No4KGranule);
        assert_eq!(
            probe(a, b, c & !0xf0 | 0x10, w),
            ProbeError::OutputAddressTooSmall { have: 36, need: 40 }
        );
        assert_eq!(probe(a & !(1 << 14), b, c, w), ProbeError::NotCoherent);
    }
}
