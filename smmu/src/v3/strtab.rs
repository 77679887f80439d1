//! The stream table: one STE per StreamID, and the CD each STE points at.
//!
//! Up to 256 StreamIDs (one PCI bus, QEMU's case) the table is linear: 16 KiB
//! of STEs plus 16 KiB of CDs, allocated at once. Wider StreamIDs use a
//! two-level table when the SMMU has one: a level-1 array of descriptors, each
//! covering 256 StreamIDs (SPLIT = 8, one PCI bus) with a level-2 group of
//! STEs and CDs allocated the first time one of its streams is configured.
//! Streams of groups never configured have no STE and are rejected by the
//! SMMU (C_BAD_STREAMID) whatever `Unattached` says.

use super::cd::CD_BYTES;
use super::error::{Allocation, Error};
use super::platform::{alloc, Regs};
use super::regs::strtab as cfg;
use super::ste::{self, Ste, STE_BYTES};
use alloc::vec::Vec;
use hw::dma_memory::DmaAllocator;
use hw::dma_memory::DmaMemory;

/// StreamID bits resolved by a level-2 table (one PCI bus).
pub(crate) const SPLIT: u32 = 8;

/// Words per STE or CD.
const ENTRY_WORDS: usize = 8;

/// A run of consecutive StreamIDs: their STEs and, in parallel, their CDs.
pub(crate) struct Group {
    pub(crate) stes: DmaMemory,
    pub(crate) cds: DmaMemory,
}

impl Group {
    fn new<M: DmaAllocator>(mem: &mut M, bits: u32, default: &Ste) -> Result<Self, Error> {
        let bytes = STE_BYTES << bits;
        let mut stes = alloc(mem, bytes, bytes, Allocation::StreamTable)?;
        let cds = alloc(
            mem,
            CD_BYTES << bits,
            CD_BYTES,
            Allocation::ContextDescriptors,
        )?;
        for entry in 0..1usize << bits {
            for (w, &word) in default.iter().enumerate() {
                stes.set_u64(entry * ENTRY_WORDS + w, word);
            }
        }
        Ok(Self { stes, cds })
    }

    /// Physical address of the CD of entry `i`.
    pub(crate) fn cd_addr(&self, i: usize) -> u64 {
        self.cds.addr() + (i * CD_BYTES) as u64
    }
}

/// Writes the 8-word entry `i` of `buf` so that the SMMU, whenever it reads
/// it, sees either the old word 0 or the complete new entry: words 1-7
/// first, a barrier, then word 0 (which holds V and Config).
pub(crate) fn write_entry<R: Regs>(regs: &R, buf: &mut DmaMemory, i: usize, words: &[u64; 8]) {
    let base = i * ENTRY_WORDS;
    for (w, &word) in words.iter().enumerate().skip(1) {
        buf.set_u64(base + w, word);
    }
    regs.dma_fence();
    buf.set_u64(base, words[0]);
}

/// Reads the 8-word entry `i` of `buf`.
pub(crate) fn read_entry(buf: &DmaMemory, i: usize) -> [u64; 8] {
    core::array::from_fn(|w| buf.u64_at(i * ENTRY_WORDS + w))
}

/// A linear or two-level stream table.
pub(crate) struct StreamTable {
    sid_bits: u32,
    /// Level-1 descriptors (two-level tables only).
    l1: Option<DmaMemory>,
    /// StreamID bits each group covers.
    group_bits: u32,
    groups: Vec<Option<Group>>,
    default: Ste,
}

impl StreamTable {
    /// A table for `sid_bits`-bit StreamIDs whose entries start as `default`.
    pub(crate) fn new<M: DmaAllocator>(
        mem: &mut M,
        sid_bits: u32,
        two_level_supported: bool,
        default: Ste,
    ) -> Result<Self, Error> {
        if sid_bits > SPLIT && two_level_supported {
            let l1_bytes = 8usize << (sid_bits - SPLIT);
            let l1 = alloc(mem, l1_bytes, l1_bytes.max(64), Allocation::StreamTable)?;
            let mut groups = Vec::new();
            groups.resize_with(1 << (sid_bits - SPLIT), || None);
            Ok(Self {
                sid_bits,
                l1: Some(l1),
                group_bits: SPLIT,
                groups,
                default,
            })
        } else {
            let group = Group::new(mem, sid_bits, &default)?;
            Ok(Self {
                sid_bits,
                l1: None,
                group_bits: sid_bits,
                groups: alloc::vec![Some(group)],
                default,
            })
        }
    }

    /// The STRTAB_BASE and STRTAB_BASE_CFG values that describe the table.
    pub(crate) fn registers(&self) -> (u64, u32) {
        let log2size = self.sid_bits << cfg::CFG_LOG2SIZE;
        match &self.l1 {
            Some(l1) => (
                l1.addr() | cfg::BASE_RA,
                log2size | SPLIT << cfg::CFG_SPLIT | cfg::FMT_TWO_LEVEL << cfg::CFG_FMT,
            ),
            None => {
                let linear = self.groups[0].as_ref().expect("linear table allocated");
                (linear.stes.addr() | cfg::BASE_RA, log2size)
            }
        }
    }

    /// Whether the table is two-level.
    pub(crate) fn is_two_level(&self) -> bool {
        self.l1.is_some()
    }

    fn locate(&self, sid: u32) -> Result<(usize, usize), Error> {
        if self.sid_bits < 32 && sid >> self.sid_bits != 0 {
            return Err(Error::StreamOutOfRange {
                sid,
                sid_bits: self.sid_bits,
            });
        }
        let sid = sid as usize;
        Ok((sid >> self.group_bits, sid & ((1 << self.group_bits) - 1)))
    }

    /// The group holding `sid` and its index there, allocating and installing
    /// the group first if the table is two-level and it has none yet.
    pub(crate) fn group_mut<M: DmaAllocator, R: Regs>(
        &mut self,
        sid: u32,
        mem: &mut M,
        regs: &R,
    ) -> Result<(&mut Group, usize), Error> {
        let (g, i) = self.locate(sid)?;
        if self.groups[g].is_none() {
            let group = Group::new(mem, self.group_bits, &self.default)?;
            let l1 = self
                .l1
                .as_mut()
                .expect("only two-level groups are allocated late");
            // The level-2 STEs must be visible before the descriptor that
            // points at them.
            regs.dma_fence();
            l1.set_u64(g, ste::l1_descriptor(group.stes.addr(), self.group_bits));
            self.groups[g] = Some(group);
        }
        Ok((self.groups[g].as_mut().expect("allocated above"), i))
    }
}
