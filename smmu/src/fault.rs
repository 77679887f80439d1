//! Faults as the memory manager sees them, whichever SMMU reported them.
//!
//! The SMMUv3 driver produces these from its event records; an SMMUv2 driver
//! (the MMU-500 on the ZynqMP) would produce them from its fault syndrome
//! registers. The memory manager and the DMA scheduler only ever see this
//! type.

use alloc::collections::BTreeSet;
use alloc::vec::Vec;

/// Size of the pages faults are collapsed to (the kernel's 4 KiB granule).
pub const PAGE_SIZE: u64 = 4096;

/// What the device was doing when it faulted, so the memory manager can map
/// the page with the permission the access needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Access {
    /// A data read.
    Read,
    /// A data write.
    Write,
    /// An instruction fetch (a read marked as such by the device).
    Execute,
}

/// Why the translation failed, in the terms every Arm stage-1 walk uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FaultKind {
    /// No valid descriptor: the page is not mapped (yet). The usual case,
    /// resolved by demand-zero or swap-in.
    Translation,
    /// The descriptor's access flag is clear (the SMMU does not set it).
    AccessFlag,
    /// The mapping exists but forbids this access (e.g. a write to a
    /// read-only page).
    Permission,
    /// The output or input address is outside the configured address size.
    AddressSize,
}

/// One DMA page fault: who faulted, where, doing what, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fault {
    /// The device's StreamID (for PCI: requester ID, `bus << 8 | devfn`).
    pub stream: u32,
    /// The faulting I/O virtual address (an application virtual address).
    pub iova: u64,
    /// The access that faulted.
    pub access: Access,
    /// Why it faulted.
    pub kind: FaultKind,
}

impl Fault {
    /// Base address of the 4 KiB page that faulted.
    pub fn page(&self) -> u64 {
        self.iova & !(PAGE_SIZE - 1)
    }

    fn key(&self) -> (u32, u64, Access) {
        (self.stream, self.page(), self.access)
    }
}

/// Collapses fault records to one per (stream, 4 KiB page, access).
///
/// An SMMU that splits a faulting DMA into small pieces reports the same page
/// hundreds of times (QEMU: one record per 4 bytes); the memory manager must
/// resolve it once.
#[derive(Debug, Default)]
pub struct Dedup {
    seen: BTreeSet<(u32, u64, Access)>,
}

impl Dedup {
    /// A filter that already knows the faults in `out`, so records matching
    /// them are not added again.
    pub fn seeded(out: &[Fault]) -> Self {
        Self {
            seen: out.iter().map(Fault::key).collect(),
        }
    }

    /// Appends `fault` to `out` unless its (stream, page, access) was seen;
    /// returns whether it was appended.
    pub fn push(&mut self, fault: Fault, out: &mut Vec<Fault>) -> bool {
        let new = self.seen.insert(fault.key());
        if new {
            out.push(fault);
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn write_fault(stream: u32, iova: u64) -> Fault {
        Fault {
            stream,
            iova,
            access: Access::Write,
            kind: FaultKind::Translation,
        }
    }

    #[test]
    fn one_fault_per_stream_page_and_access() {
        let mut out = Vec::new();
        let mut dedup = Dedup::default();
        // A 4 KiB DMA reported 4 bytes at a time: 1024 records, one page.
        for i in 0..1024 {
            dedup.push(write_fault(8, 0x4000_0000 + 4 * i), &mut out);
        }
        assert_eq!(out, vec![write_fault(8, 0x4000_0000)]);
        // The next page, another stream, and a read of the same page are new.
        assert!(dedup.push(write_fault(8, 0x4000_1000), &mut out));
        assert!(dedup.push(write_fault(9, 0x4000_0000), &mut out));
        let read = Fault {
            access: Access::Read,
            ..write_fault(8, 0x4000_0010)
        };
        assert!(dedup.push(read, &mut out));
        assert_eq!(out.len(), 4);
    }

    #[test]
    fn seeded_filter_skips_faults_already_collected() {
        let mut out = vec![write_fault(8, 0x1000)];
        let mut dedup = Dedup::seeded(&out);
        assert!(!dedup.push(write_fault(8, 0x1ffc), &mut out));
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn page_rounds_down() {
        assert_eq!(write_fault(0, 0x1234_5678).page(), 0x1234_5000);
    }
}
