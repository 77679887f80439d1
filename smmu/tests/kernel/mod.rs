//! The kernel's stage-1 regime as libos configures TCR/MAIR: what both
//! drivers' tests attach devices to.

use smmu::v3::CdParams;

/// The kernel's page-table root (any 4 KiB-aligned 40-bit address).
pub const ROOT: u64 = 0x4_0123_4000;
/// The kernel's ASID.
pub const ASID: u16 = 1;

/// The kernel's context: its table, ASID and memory attributes.
pub fn kernel() -> CdParams {
    CdParams {
        ttb0: ROOT,
        t0sz: 25,
        asid: ASID,
        mair: 0xff04,
        ips_bits: 40,
    }
}
