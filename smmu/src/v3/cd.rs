//! Context descriptors: the stage-1 translation regime a stream uses.
//!
//! Faultline gives every translated stream a CD that mirrors the CPU's
//! TCR_EL1/TTBR0_EL1/MAIR_EL1, so the SMMU walks the kernel's own page table
//! under the kernel's ASID. Field positions are Arm IHI 0070's "CD" layout and
//! match what QEMU 7.2 parses (`CD_TSZ` word 0 `[5:0]`, `CD_TG` `[7:6]`, `CD_EPD`
//! bits 14/30, `CD_ENDI` 15, `CD_VALID` 31, `CD_IPS` word 1 `[2:0]`,
//! `CD_AARCH64` word 1 bit 9, `CD_HD`/`CD_HA` 10/11, `CD_S` 12, `CD_R` 13,
//! `CD_A` 14, `CD_ASID` word 1 `[31:16]`, `CD_TTB` words 2-3 `& ~0xf`).

use super::bits::{addr_bits, put};
use super::regs::address_size_code;
use core::fmt;

/// One context descriptor: eight little-endian 64-bit words.
pub type Cd = [u64; 8];

/// Bytes in a context descriptor.
pub const CD_BYTES: usize = 64;

/// Word 0 fields.
mod word0 {
    pub const T0SZ: u32 = 0; // [5:0]
    pub const TG0: u32 = 6; // [7:6]
    pub const IR0: u32 = 8; // [9:8]
    pub const OR0: u32 = 10; // [11:10]
    pub const SH0: u32 = 12; // [13:12]
    pub const EPD1: u64 = 1 << 30;
    pub const V: u64 = 1 << 31;
    pub const IPS: u32 = 32; // [34:32]
    pub const AA64: u64 = 1 << 41;
    pub const R: u64 = 1 << 45;
    pub const A: u64 = 1 << 46;
    pub const ASID: u32 = 48; // [63:48]
    /// TG0 encoding of the 4 KiB granule.
    pub const TG0_4K: u64 = 0b00;
    /// IR0/OR0 encoding: write-back, write-allocate (as TCR_EL1.IRGN0 = 0b01).
    pub const WBWA: u64 = 0b01;
    /// SH0 encoding: inner shareable.
    pub const ISH: u64 = 0b11;
}

/// The stage-1 regime a stream is to use: the CPU's, normally.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CdParams {
    /// Physical address of the level-0/1 table (TTBR0_EL1's BADDR).
    pub ttb0: u64,
    /// Size offset of the TTB0 region: VA bits = 64 - t0sz (Faultline: 25).
    pub t0sz: u8,
    /// ASID the SMMU's TLB tags entries with (Faultline's kernel: 1).
    pub asid: u16,
    /// Memory attribute indirection, as MAIR_EL1 (Faultline: 0xff04).
    pub mair: u64,
    /// Intermediate (output) physical address size in bits (Faultline: 40).
    pub ips_bits: u32,
}

/// Why [`encode`] refuses a set of parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CdError {
    /// T0SZ outside 16..=39, the range a 4 KiB granule allows (and QEMU
    /// accepts).
    T0szOutOfRange(u8),
    /// The IPS is not one of 32, 36, 40, 42, 44, 48 or 52 bits.
    UnsupportedIps(u32),
    /// TTB0 is not 16-byte aligned.
    TtbMisaligned(u64),
    /// TTB0 lies beyond the IPS.
    TtbBeyondIps(u64),
    /// The ASID has more bits than the SMMU supports (8 without ASID16).
    AsidTooWide(u16),
}

/// Encodes a CD for `params`: 4 KiB granule, write-back inner-shareable
/// walks (TG0 = 4K, IR0 = OR0 = WBWA, SH0 = inner), TTB1 walks disabled
/// (EPD1 = 1), AArch64 tables (AA64 = 1), faults abort the transaction
/// (A = 1) and are recorded (R = 1), no stall (S = 0), no hardware
/// access/dirty updates (HA = HD = 0), little-endian (ENDI = 0), and a
/// shared ASID (ASET = 0) so it is the same ASID the CPU uses.
pub fn encode(params: &CdParams) -> Result<Cd, CdError> {
    if !(16..=39).contains(&params.t0sz) {
        return Err(CdError::T0szOutOfRange(params.t0sz));
    }
    let ips = address_size_code(params.ips_bits).ok_or(CdError::UnsupportedIps(params.ips_bits))?;
    if !params.ttb0.is_multiple_of(16) {
        return Err(CdError::TtbMisaligned(params.ttb0));
    }
    if params.ttb0 >> params.ips_bits != 0 {
        return Err(CdError::TtbBeyondIps(params.ttb0));
    }
    let mut cd = [0; 8];
    cd[0] = put(params.t0sz as u64, word0::T0SZ, 6)
        | put(word0::TG0_4K, word0::TG0, 2)
        | put(word0::WBWA, word0::IR0, 2)
        | put(word0::WBWA, word0::OR0, 2)
        | put(word0::ISH, word0::SH0, 2)
        | word0::EPD1
        | word0::V
        | put(ips, word0::IPS, 3)
        | word0::AA64
        | word0::R
        | word0::A
        | put(params.asid as u64, word0::ASID, 16);
    cd[1] = addr_bits(params.ttb0, 51, 4);
    cd[3] = params.mair;
    Ok(cd)
}

impl fmt::Display for CdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::T0szOutOfRange(t) => write!(f, "T0SZ {t} outside 16..=39"),
            Self::UnsupportedIps(b) => write!(f, "no IPS encoding for {b} bits"),
            Self::TtbMisaligned(a) => write!(f, "TTB0 {a:#x} not 16-byte aligned"),
            Self::TtbBeyondIps(a) => write!(f, "TTB0 {a:#x} beyond the IPS"),
            Self::AsidTooWide(a) => write!(f, "ASID {a:#x} wider than the SMMU's"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Faultline's kernel regime (libos/src/arch/aarch64.rs).
    fn kernel(ttb0: u64) -> CdParams {
        CdParams {
            ttb0,
            t0sz: 25,
            asid: 1,
            mair: 0xff04,
            ips_bits: 40,
        }
    }

    #[test]
    #[allow(clippy::identity_op)] // the zero fields are spelled out on purpose
    fn kernel_regime_bit_by_bit() {
        let cd = encode(&kernel(0x40_8000_0000)).unwrap();
        let expected_word0 = 25            // T0SZ [5:0]
            | (0b00 << 6)                  // TG0 = 4 KiB
            | (0b01 << 8)                  // IR0 = WBWA
            | (0b01 << 10)                 // OR0 = WBWA
            | (0b11 << 12)                 // SH0 = inner shareable
            | (1 << 30)                    // EPD1
            | (1 << 31)                    // V
            | (0b010 << 32)                // IPS = 40 bits
            | (1 << 41)                    // AA64
            | (1 << 45)                    // R
            | (1 << 46)                    // A
            | (1 << 48); // ASID = 1
        assert_eq!(cd[0], expected_word0);
        assert_eq!(cd[0], 0x0001_6202_c000_3519);
        assert_eq!(cd[1], 0x40_8000_0000, "TTB0 in place at [51:4]");
        assert_eq!(cd[2], 0, "TTB1 unused");
        assert_eq!(cd[3], 0xff04, "MAIR");
        assert_eq!(&cd[4..], &[0; 4]);
    }

    #[test]
    fn kernel_regime_as_qemu_reads_it() {
        let cd = encode(&kernel(0x12_3456_7000)).unwrap();
        let w = |i: usize| (cd[i / 2] >> (32 * (i % 2))) as u32;
        assert_eq!(w(0) >> 31, 1, "CD_VALID");
        assert_eq!((w(1) >> 9) & 1, 1, "CD_AARCH64");
        assert_eq!((w(1) >> 14) & 1, 1, "CD_A");
        assert_eq!((w(1) >> 13) & 1, 1, "CD_R");
        assert_eq!((w(1) >> 12) & 1, 0, "CD_S");
        assert_eq!((w(1) >> 10) & 0b11, 0, "CD_HD, CD_HA");
        assert_eq!(w(0) & 0x3f, 25, "CD_TSZ(0)");
        assert_eq!((w(0) >> 6) & 0b11, 0, "CD_TG(0): 4 KiB");
        assert_eq!((w(0) >> 14) & 1, 0, "CD_EPD(0)");
        assert_eq!((w(0) >> 30) & 1, 1, "CD_EPD(1)");
        assert_eq!((w(0) >> 15) & 1, 0, "CD_ENDI");
        assert_eq!(w(1) & 0b111, 2, "CD_IPS");
        assert_eq!((w(1) >> 6) & 0b11, 0, "CD_TBI");
        assert_eq!(w(1) >> 16, 1, "CD_ASID");
        let ttb = ((w(3) as u64 & 0x7_ffff) << 32) | (w(2) as u64 & !0xf);
        assert_eq!(ttb, 0x12_3456_7000, "CD_TTB(0)");
    }

    #[test]
    fn refuses_bad_parameters() {
        let good = kernel(0x1000);
        let bad = |p: CdParams| encode(&p).unwrap_err();
        assert_eq!(
            bad(CdParams { t0sz: 15, ..good }),
            CdError::T0szOutOfRange(15)
        );
        assert_eq!(
            bad(CdParams { t0sz: 40, ..good }),
            CdError::T0szOutOfRange(40)
        );
        assert_eq!(
            bad(CdParams {
                ips_bits: 39,
                ..good
            }),
            CdError::UnsupportedIps(39)
        );
        assert_eq!(
            bad(CdParams {
                ttb0: 0x1008,
                ..good
            }),
            CdError::TtbMisaligned(0x1008)
        );
        assert_eq!(
            bad(CdParams {
                ttb0: 1 << 40,
                ..good
            }),
            CdError::TtbBeyondIps(1 << 40)
        );
        assert!(encode(&CdParams { t0sz: 16, ..good }).is_ok());
        assert!(encode(&CdParams { t0sz: 39, ..good }).is_ok());
    }
}
