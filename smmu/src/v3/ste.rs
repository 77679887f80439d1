//! Stream table entries: what the SMMU does with each device's traffic.
//!
//! A stream either aborts, bypasses translation, or is translated at stage 1
//! through one context descriptor. Field positions are Arm IHI 0070's "STE"
//! layout and match what QEMU 7.2 parses (`hw/arm/smmuv3-internal.h`: V =
//! word 0 bit 0, Config = bits `[3:1]`, S1Fmt = `[5:4]`, S1ContextPtr = word 0
//! `& ~0x3f` plus word 1 `[15:0]`, S1CDMax = word 1 `[31:27]`, S1STALLD = word 2
//! bit 27, STRW = word 2 `[31:30]`).

use super::bits::{addr_bits, get, put};

/// One stream table entry: eight little-endian 64-bit words.
pub type Ste = [u64; 8];

/// Bytes in a stream table entry.
pub const STE_BYTES: usize = 64;

/// STE.V, word 0 bit 0.
pub const V: u64 = 1 << 0;
/// STE.Config, word 0 bits `[3:1]`.
pub const CONFIG_SHIFT: u32 = 1;
/// Config: abort all traffic, recording nothing.
pub const CONFIG_ABORT: u64 = 0b000;
/// Config: stage 1 and stage 2 bypassed.
pub const CONFIG_BYPASS: u64 = 0b100;
/// Config: stage 1 translates, stage 2 bypassed.
pub const CONFIG_S1_TRANSLATE: u64 = 0b101;

/// Word 1 (bits `[127:64]`) fields of a stage-1 STE.
mod word1 {
    /// S1CIR, bits `[3:2]`: inner cacheability of CD fetches.
    pub const S1CIR: u32 = 2;
    /// S1COR, bits `[5:4]`: outer cacheability of CD fetches.
    pub const S1COR: u32 = 4;
    /// S1CSH, bits `[7:6]`: shareability of CD fetches.
    pub const S1CSH: u32 = 6;
    /// SHCFG, bits `[45:44]`: shareability override when bypassing.
    pub const SHCFG: u32 = 44;
    /// Cacheability: write-back, read-allocate.
    pub const WBRA: u64 = 0b01;
    /// Shareability: inner shareable.
    pub const ISH: u64 = 0b11;
    /// SHCFG: use the incoming shareability.
    pub const SHCFG_INCOMING: u64 = 0b01;
}

/// An STE that aborts the stream's traffic without recording events: the
/// state of a detached device.
pub fn abort() -> Ste {
    let mut ste = [0; 8];
    ste[0] = V | put(CONFIG_ABORT, CONFIG_SHIFT, 3);
    ste
}

/// An STE that passes the stream's traffic through untranslated (physical
/// addresses), for devices the kernel drives without the SMMU.
pub fn bypass() -> Ste {
    let mut ste = [0; 8];
    ste[0] = V | put(CONFIG_BYPASS, CONFIG_SHIFT, 3);
    ste[1] = put(word1::SHCFG_INCOMING, word1::SHCFG, 2);
    ste
}

/// An STE that translates the stream at stage 1 through the single context
/// descriptor at physical address `cd` (64-byte aligned).
///
/// S1Fmt = linear and S1CDMax = 0 (one CD, no substreams: QEMU rejects any
/// other S1CDMax), S1DSS = 0, S1STALLD = 0 (QEMU rejects 1 although it cannot
/// stall), EATS = 0 (no ATS), STRW = 0 (the stream belongs to non-secure
/// EL1, where the kernel runs). CD fetches are write-back, inner shareable,
/// like the kernel's memory.
pub fn stage1(cd: u64) -> Ste {
    debug_assert_eq!(cd % 64, 0, "context descriptor must be 64-byte aligned");
    let mut ste = [0; 8];
    ste[0] = V | put(CONFIG_S1_TRANSLATE, CONFIG_SHIFT, 3) | addr_bits(cd, 51, 6);
    ste[1] = put(word1::WBRA, word1::S1CIR, 2)
        | put(word1::WBRA, word1::S1COR, 2)
        | put(word1::ISH, word1::S1CSH, 2);
    ste
}

/// The Config field of an STE's word 0, or `None` if it is not valid.
pub fn config(word0: u64) -> Option<u64> {
    (word0 & V != 0).then_some(get(word0, CONFIG_SHIFT, 3))
}

/// A level-1 descriptor of a two-level stream table: points at a level-2
/// table of `2^split` STEs (Span = split + 1), aligned to its size.
pub fn l1_descriptor(l2_table: u64, split: u32) -> u64 {
    put(split as u64 + 1, 0, 5) | addr_bits(l2_table, 51, 6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abort_is_valid_with_config_zero() {
        // V = bit 0; Config 0b000 at [3:1].
        assert_eq!(abort(), [1, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(config(abort()[0]), Some(CONFIG_ABORT));
    }

    #[test]
    fn bypass_uses_incoming_shareability() {
        let ste = bypass();
        // V | Config 0b100 << 1 = 0b1001.
        assert_eq!(ste[0], 0b1001);
        // SHCFG = 0b01 at word-1 bits [45:44] (STE bits [109:108]).
        assert_eq!(ste[1], 1 << 44);
        assert_eq!(&ste[2..], &[0; 6]);
        assert_eq!(config(ste[0]), Some(CONFIG_BYPASS));
    }

    #[test]
    fn stage1_points_at_its_cd() {
        let cd = 0x00ab_cdef_1240; // 64-byte aligned, 40-bit
        let ste = stage1(cd);
        // Word 0: V (bit 0) | Config 0b101 << 1 = 0b1011, S1Fmt [5:4] = 0,
        // S1ContextPtr in place at [51:6], S1CDMax [63:59] = 0.
        assert_eq!(ste[0], cd | 0b1011);
        assert_eq!(ste[0] >> 59, 0);
        // Word 1: S1DSS [1:0] = 0, S1CIR [3:2] = 0b01, S1COR [5:4] = 0b01,
        // S1CSH [7:6] = 0b11: 0b1101_0100 = 0xd4. S1STALLD (27), EATS
        // [29:28], STRW [31:30], SHCFG [45:44] all zero.
        assert_eq!(ste[1], 0xd4);
        assert_eq!(&ste[2..], &[0; 6]);
        assert_eq!(config(ste[0]), Some(CONFIG_S1_TRANSLATE));
    }

    #[test]
    fn stage1_as_qemu_reads_it() {
        // QEMU reads the STE as sixteen 32-bit words.
        let cd = 0x0000_8765_4321_0040;
        let ste = stage1(cd);
        let w = |i: usize| (ste[i / 2] >> (32 * (i % 2))) as u32;
        assert_eq!(w(0) & 1, 1, "STE_VALID");
        assert_eq!((w(0) >> 1) & 0b111, 0b101, "STE_CONFIG");
        assert_eq!((w(0) >> 4) & 0b11, 0, "STE_S1FMT");
        let ctxptr = ((w(1) as u64 & 0xffff) << 32) | (w(0) as u64 & 0xffff_ffc0);
        assert_eq!(ctxptr, cd, "STE_CTXPTR");
        assert_eq!(w(1) >> 27, 0, "STE_S1CDMAX");
        assert_eq!((w(2) >> 27) & 1, 0, "STE_S1STALLD");
        assert_eq!(w(2) >> 30, 0, "STE_STRW");
    }

    #[test]
    fn invalid_entries_have_no_config() {
        assert_eq!(config(0), None);
        assert_eq!(config(0b1010), None);
    }

    #[test]
    fn level_1_descriptor() {
        // Span [4:0] = split + 1 = 9; L2Ptr at [51:6].
        assert_eq!(l1_descriptor(0x4010_4000, 8), 0x4010_4000 | 9);
    }
}
