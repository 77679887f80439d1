//! SMMUv3 register map, and what the ID registers say the SMMU can do.
//!
//! Offsets are from the base of the 128 KiB register window (page 0 at
//! `0x0`, page 1 at `0x1_0000`). Field positions follow Arm IHI 0070 and
//! match what QEMU 7.2 implements.

use super::bits::{bit, get};
use core::fmt;

/// Size of the register window: two 64 KiB pages.
pub const MMIO_SIZE: usize = 0x2_0000;

/// Feature register 0: stage support, table formats, coherency, stall model.
pub const IDR0: usize = 0x00;
/// Feature register 1: StreamID width and maximum queue sizes.
pub const IDR1: usize = 0x04;
/// Feature register 3: range invalidation and other SMMUv3.1+ extras.
pub const IDR3: usize = 0x0c;
/// Feature register 5: output address size and granules.
pub const IDR5: usize = 0x14;
/// Global control: queue and translation enables.
pub const CR0: usize = 0x20;
/// Reads back CR0 once the SMMU has acted on a write.
pub const CR0ACK: usize = 0x24;
/// Memory attributes of the SMMU's own table and queue accesses.
pub const CR1: usize = 0x28;
/// Miscellaneous control (invalid-StreamID recording, private TLB maintenance).
pub const CR2: usize = 0x2c;
/// Wired interrupt enables.
pub const IRQ_CTRL: usize = 0x50;
/// Reads back IRQ_CTRL once the SMMU has acted on a write.
pub const IRQ_CTRL_ACK: usize = 0x54;
/// Global errors: a bit differing from GERRORN is an active error.
pub const GERROR: usize = 0x60;
/// Global error acknowledgement: software toggles a bit to match GERROR.
pub const GERRORN: usize = 0x64;
/// Stream table base address (64-bit).
pub const STRTAB_BASE: usize = 0x80;
/// Stream table format and size.
pub const STRTAB_BASE_CFG: usize = 0x88;
/// Command queue base address and size (64-bit).
pub const CMDQ_BASE: usize = 0x90;
/// Command queue producer index (written by software).
pub const CMDQ_PROD: usize = 0x98;
/// Command queue consumer index and error code (written by the SMMU).
pub const CMDQ_CONS: usize = 0x9c;
/// Event queue base address and size (64-bit).
pub const EVENTQ_BASE: usize = 0xa0;
/// Event queue producer index, in page 1 (written by the SMMU).
pub const EVENTQ_PROD: usize = 0x1_00a8;
/// Event queue consumer index, in page 1 (written by software).
pub const EVENTQ_CONS: usize = 0x1_00ac;

/// CR0 (and CR0ACK) bits.
pub mod cr0 {
    /// Translation enable.
    pub const SMMUEN: u32 = 1 << 0;
    /// Event queue enable.
    pub const EVENTQEN: u32 = 1 << 2;
    /// Command queue enable.
    pub const CMDQEN: u32 = 1 << 3;
}

/// CR1 fields: cacheability and shareability of table and queue accesses.
pub mod cr1 {
    /// Inner cacheability of queue accesses, bits `[1:0]`.
    pub const QUEUE_IC: u32 = 0;
    /// Outer cacheability of queue accesses, bits `[3:2]`.
    pub const QUEUE_OC: u32 = 2;
    /// Shareability of queue accesses, bits `[5:4]`.
    pub const QUEUE_SH: u32 = 4;
    /// Inner cacheability of table (STE, CD, page table) accesses, bits `[7:6]`.
    pub const TABLE_IC: u32 = 6;
    /// Outer cacheability of table accesses, bits `[9:8]`.
    pub const TABLE_OC: u32 = 8;
    /// Shareability of table accesses, bits `[11:10]`.
    pub const TABLE_SH: u32 = 10;
    /// Cacheability encoding: write-back.
    pub const WRITE_BACK: u32 = 0b01;
    /// Shareability encoding: inner shareable.
    pub const INNER_SHAREABLE: u32 = 0b11;
}

/// CR2 bits.
pub mod cr2 {
    /// Record C_BAD_STREAMID events for StreamIDs beyond the stream table.
    pub const RECINVSID: u32 = 1 << 1;
    /// Private TLB maintenance: ignore broadcast TLB invalidations.
    pub const PTM: u32 = 1 << 2;
}

/// IRQ_CTRL (and IRQ_CTRL_ACK) bits.
pub mod irq_ctrl {
    /// Global error interrupt enable.
    pub const GERROR_IRQEN: u32 = 1 << 0;
    /// Event queue interrupt enable.
    pub const EVENTQ_IRQEN: u32 = 1 << 2;
}

/// STRTAB_BASE and STRTAB_BASE_CFG fields.
pub mod strtab {
    /// STRTAB_BASE read-allocate hint.
    pub const BASE_RA: u64 = 1 << 62;
    /// STRTAB_BASE_CFG.LOG2SIZE, bits `[5:0]`: log2 of the number of StreamIDs.
    pub const CFG_LOG2SIZE: u32 = 0;
    /// STRTAB_BASE_CFG.SPLIT, bits `[10:6]`: StreamID bits resolved by level 2.
    pub const CFG_SPLIT: u32 = 6;
    /// STRTAB_BASE_CFG.FMT, bits `[17:16]`: 0 linear, 1 two-level.
    pub const CFG_FMT: u32 = 16;
    /// FMT value of a two-level table.
    pub const FMT_TWO_LEVEL: u32 = 1;
}

/// CMDQ_BASE / EVENTQ_BASE fields.
pub mod queue_base {
    /// Read-allocate (command queue) or write-allocate (event queue) hint.
    pub const ALLOCATE: u64 = 1 << 62;
    /// LOG2SIZE, bits `[4:0]`.
    pub const LOG2SIZE_MASK: u64 = 0x1f;
}

/// CMDQ_CONS error field, bits `[30:24]`.
pub const CMDQ_CONS_ERR_SHIFT: u32 = 24;
/// EVENTQ_PROD.OVFLG / EVENTQ_CONS.OVACKFLG, bit 31.
pub const EVENTQ_OVERFLOW: u32 = 1 << 31;

/// Largest queue any SMMUv3 may have: 2^19 entries.
pub const MAX_QUEUE_LOG2: u32 = 19;

/// Output-address-size encoding (IDR5.OAS, CD.IPS) to bits: codes 0 to 6
/// (see [`crate::address_size`]).
pub(crate) fn address_size_bits(code: u64) -> Option<u32> {
    crate::address_size::bits(code, OAS_CODES)
}

/// Bits to the output-address-size encoding (CD.IPS), exact sizes only.
pub(crate) fn address_size_code(bits: u32) -> Option<u64> {
    crate::address_size::code(bits, OAS_CODES)
}

/// Address-size codes SMMUv3 defines (52 bits at most).
const OAS_CODES: usize = 7;

/// Byte order of translation-table walks the SMMU supports (IDR0.TTENDIAN).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableEndianness {
    /// Either, chosen per context descriptor.
    Mixed,
    /// Little-endian only.
    Little,
    /// Big-endian only.
    Big,
    /// The reserved encoding.
    Reserved,
}

/// Whether the SMMU can stall faulting transactions (IDR0.STALL_MODEL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StallModel {
    /// Stall and terminate both supported.
    StallAndTerminate,
    /// Faults always terminate the transaction (QEMU).
    TerminateOnly,
    /// Faults always stall: the driver would have to resume every one.
    StallForced,
    /// The reserved encoding.
    Reserved,
}

/// What the SMMU can do, decoded from IDR0, IDR1, IDR3 and IDR5.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Features {
    /// Stage-1 translation (the only stage this driver uses).
    pub stage1: bool,
    /// Stage-2 translation.
    pub stage2: bool,
    /// AArch64 translation tables.
    pub aarch64_tables: bool,
    /// AArch32 (long-descriptor) translation tables.
    pub aarch32_tables: bool,
    /// Table and queue accesses are coherent with the CPU's caches.
    pub coherent: bool,
    /// The SMMU takes part in broadcast TLB maintenance (CPU `TLBI`s).
    pub broadcast_tlb: bool,
    /// Hardware access-flag update.
    pub hw_access_flag: bool,
    /// Hardware dirty-state update.
    pub hw_dirty: bool,
    /// 16-bit ASIDs (else 8-bit).
    pub asid16: bool,
    /// Interrupts can be signalled as MSIs.
    pub msi: bool,
    /// PCIe Page Request Interface.
    pub pri: bool,
    /// PCIe Address Translation Services.
    pub ats: bool,
    /// Two-level stream tables.
    pub two_level_stream_table: bool,
    /// Two-level context-descriptor tables.
    pub two_level_cd: bool,
    /// Supported translation-table byte order.
    pub endianness: TableEndianness,
    /// Stall model.
    pub stall: StallModel,
    /// Terminated transactions always abort (CD.A must be 1).
    pub terminate_aborts: bool,
    /// StreamID width in bits.
    pub sid_bits: u32,
    /// SubstreamID width in bits.
    pub ssid_bits: u32,
    /// log2 of the largest command queue.
    pub cmdq_max_log2: u32,
    /// log2 of the largest event queue.
    pub eventq_max_log2: u32,
    /// Stream table base and format are fixed by the implementation.
    pub tables_preset: bool,
    /// Queue bases and sizes are fixed by the implementation.
    pub queues_preset: bool,
    /// Range TLB invalidation (IDR3.RIL).
    pub range_invalidation: bool,
    /// Output address size in bits (0 for a reserved encoding).
    pub oas_bits: u32,
    /// 4 KiB translation granule.
    pub granule_4k: bool,
    /// 16 KiB translation granule.
    pub granule_16k: bool,
    /// 64 KiB translation granule.
    pub granule_64k: bool,
}

/// Why [`Features::check`] refuses an SMMU: something the shared-page-table
/// design needs is missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeError {
    /// No stage-1 translation, so the CPU's stage-1 table cannot be used.
    NoStage1,
    /// No AArch64 table format.
    NoAArch64Tables,
    /// No 4 KiB granule (the kernel's page size).
    No4KGranule,
    /// The output address size is below the kernel's 40-bit physical space.
    OutputAddressTooSmall {
        /// Output address bits the SMMU has.
        have: u32,
        /// Output address bits needed.
        need: u32,
    },
    /// Table walks are not cache-coherent, so the SMMU could read stale page
    /// table entries that the CPU wrote without cleaning its caches.
    NotCoherent,
    /// Big-endian table walks only.
    BigEndianOnly,
    /// Faults always stall; this driver never resumes stalled transactions.
    StallForced,
    /// The stream table is fixed by the implementation.
    PresetTables,
    /// The queues are fixed by the implementation.
    PresetQueues,
    /// Fewer StreamID bits than the devices need.
    SidSizeTooSmall {
        /// StreamID bits the SMMU has.
        have: u32,
        /// StreamID bits needed.
        need: u32,
    },
}

/// Output address bits the kernel's page table needs (40-bit PA).
pub const NEEDED_OAS_BITS: u32 = 40;

impl Features {
    /// Decodes the ID registers.
    pub fn decode(idr0: u32, idr1: u32, idr3: u32, idr5: u32) -> Self {
        let (idr0, idr1, idr3, idr5) = (idr0 as u64, idr1 as u64, idr3 as u64, idr5 as u64);
        let ttf = get(idr0, 2, 2);
        let httu = get(idr0, 6, 2);
        Self {
            stage2: bit(idr0, 0),
            stage1: bit(idr0, 1),
            aarch32_tables: ttf & 0b01 != 0,
            aarch64_tables: ttf & 0b10 != 0,
            coherent: bit(idr0, 4),
            broadcast_tlb: bit(idr0, 5),
            hw_access_flag: httu >= 1,
            hw_dirty: httu == 2,
            ats: bit(idr0, 10),
            asid16: bit(idr0, 12),
            msi: bit(idr0, 13),
            pri: bit(idr0, 16),
            two_level_cd: bit(idr0, 19),
            endianness: match get(idr0, 21, 2) {
                0 => TableEndianness::Mixed,
                2 => TableEndianness::Little,
                3 => TableEndianness::Big,
                _ => TableEndianness::Reserved,
            },
            stall: match get(idr0, 24, 2) {
                0 => StallModel::StallAndTerminate,
                1 => StallModel::TerminateOnly,
                2 => StallModel::StallForced,
                _ => StallModel::Reserved,
            },
            terminate_aborts: bit(idr0, 26),
            two_level_stream_table: get(idr0, 27, 2) == 1,
            sid_bits: get(idr1, 0, 6) as u32,
            ssid_bits: get(idr1, 6, 5) as u32,
            eventq_max_log2: get(idr1, 16, 5) as u32,
            cmdq_max_log2: get(idr1, 21, 5) as u32,
            queues_preset: bit(idr1, 29),
            tables_preset: bit(idr1, 30),
            range_invalidation: bit(idr3, 10),
            oas_bits: address_size_bits(get(idr5, 0, 3)).unwrap_or(0),
            granule_4k: bit(idr5, 4),
            granule_16k: bit(idr5, 5),
            granule_64k: bit(idr5, 6),
        }
    }

    /// Refuses an SMMU that lacks what walking the CPU's table format needs,
    /// or that has fewer than `sid_bits_needed` StreamID bits.
    pub fn check(&self, sid_bits_needed: u32) -> Result<(), ProbeError> {
        if !self.stage1 {
            return Err(ProbeError::NoStage1);
        }
        if !self.aarch64_tables {
            return Err(ProbeError::NoAArch64Tables);
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
        if !self.coherent {
            return Err(ProbeError::NotCoherent);
        }
        if self.endianness == TableEndianness::Big {
            return Err(ProbeError::BigEndianOnly);
        }
        if self.stall == StallModel::StallForced {
            return Err(ProbeError::StallForced);
        }
        if self.tables_preset {
            return Err(ProbeError::PresetTables);
        }
        if self.queues_preset {
            return Err(ProbeError::PresetQueues);
        }
        if self.sid_bits < sid_bits_needed {
            return Err(ProbeError::SidSizeTooSmall {
                have: self.sid_bits,
                need: sid_bits_needed,
            });
        }
        Ok(())
    }
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoStage1 => f.write_str("SMMU has no stage-1 translation"),
            Self::NoAArch64Tables => f.write_str("SMMU cannot walk AArch64 page tables"),
            Self::No4KGranule => f.write_str("SMMU has no 4 KiB granule"),
            Self::OutputAddressTooSmall { have, need } => {
                write!(f, "SMMU output addresses are {have} bits, need {need}")
            }
            Self::NotCoherent => f.write_str("SMMU table walks are not cache-coherent"),
            Self::BigEndianOnly => f.write_str("SMMU walks big-endian tables only"),
            Self::StallForced => f.write_str("SMMU always stalls faulting transactions"),
            Self::PresetTables => f.write_str("SMMU stream table is fixed"),
            Self::PresetQueues => f.write_str("SMMU queues are fixed"),
            Self::SidSizeTooSmall { have, need } => {
                write!(f, "SMMU StreamIDs are {have} bits, need {need}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// QEMU 7.2's ID registers, built field by field.
    fn qemu_idrs() -> (u32, u32, u32, u32) {
        let idr0 = (1 << 1)      // S1P
            | (0b10 << 2)        // TTF = AArch64
            | (1 << 4)           // COHACC
            | (1 << 12)          // ASID16
            | (0b10 << 21)       // TTENDIAN = little
            | (0b01 << 24)       // STALL_MODEL = no stall
            | (1 << 26)          // TERM_MODEL
            | (0b01 << 27); // ST_LEVEL = two-level
        let idr1 = 16            // SIDSIZE
            | (19 << 16)         // EVENTQS
            | (19 << 21); // CMDQS
        let idr3 = 1 << 10; // RIL
        let idr5 = 4             // OAS = 44 bits
            | (1 << 4)           // GRAN4K
            | (1 << 6); // GRAN64K
        (idr0, idr1, idr3, idr5)
    }

    #[test]
    fn decodes_qemu() {
        let (a, b, c, d) = qemu_idrs();
        assert_eq!(a, 0x0d40_101a);
        let f = Features::decode(a, b, c, d);
        assert!(f.stage1 && !f.stage2 && f.aarch64_tables && !f.aarch32_tables);
        assert!(f.coherent && f.asid16 && !f.broadcast_tlb && !f.hw_access_flag);
        assert!(!f.msi && !f.pri && !f.ats && f.two_level_stream_table);
        assert_eq!(f.endianness, TableEndianness::Little);
        assert_eq!(f.stall, StallModel::TerminateOnly);
        assert!(f.terminate_aborts);
        assert_eq!(
            (f.sid_bits, f.eventq_max_log2, f.cmdq_max_log2),
            (16, 19, 19)
        );
        assert!(f.range_invalidation);
        assert_eq!(f.oas_bits, 44);
        assert!(f.granule_4k && !f.granule_16k && f.granule_64k);
        assert_eq!(f.check(8), Ok(()));
        assert_eq!(f.check(16), Ok(()));
    }

    #[test]
    fn refuses_what_the_design_needs() {
        let (a, b, c, d) = qemu_idrs();
        let refuse = |idr0: u32, idr1: u32, idr5: u32, sid_bits| {
            Features::decode(idr0, idr1, c, idr5)
                .check(sid_bits)
                .unwrap_err()
        };
        assert_eq!(refuse(a & !(1 << 1), b, d, 8), ProbeError::NoStage1);
        assert_eq!(
            refuse(a & !(0b11 << 2) | (0b01 << 2), b, d, 8),
            ProbeError::NoAArch64Tables
        );
        assert_eq!(refuse(a, b, d & !(1 << 4), 8), ProbeError::No4KGranule);
        assert_eq!(
            refuse(a, b, d & !0b111 | 1, 8),
            ProbeError::OutputAddressTooSmall { have: 36, need: 40 }
        );
        assert_eq!(
            refuse(a, b, d & !0b111 | 7, 8),
            ProbeError::OutputAddressTooSmall { have: 0, need: 40 }
        );
        assert_eq!(refuse(a & !(1 << 4), b, d, 8), ProbeError::NotCoherent);
        assert_eq!(refuse(a | (0b11 << 21), b, d, 8), ProbeError::BigEndianOnly);
        assert_eq!(
            refuse(a & !(0b11 << 24) | (0b10 << 24), b, d, 8),
            ProbeError::StallForced
        );
        assert_eq!(refuse(a, b | (1 << 30), d, 8), ProbeError::PresetTables);
        assert_eq!(refuse(a, b | (1 << 29), d, 8), ProbeError::PresetQueues);
        assert_eq!(
            refuse(a, b & !0x3f | 6, d, 8),
            ProbeError::SidSizeTooSmall { have: 6, need: 8 }
        );
    }

    #[test]
    fn address_sizes_round_trip() {
        for code in 0..=6 {
            let bits = address_size_bits(code).unwrap();
            assert_eq!(address_size_code(bits), Some(code));
        }
        assert_eq!(address_size_code(39), None);
        assert_eq!(address_size_bits(7), None);
    }

    #[test]
    fn event_queue_registers_live_in_page_1() {
        assert_eq!(EVENTQ_PROD, 0x10000 + 0xa8);
        assert_eq!(EVENTQ_CONS, 0x10000 + 0xac);
        const { assert!(EVENTQ_CONS + 4 <= MMIO_SIZE) };
    }
}
