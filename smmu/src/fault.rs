//! Faults as the memory manager sees them, whichever SMMU reported them.
//!
//! The SMMUv3 driver produces these from its event records; an SMMUv2 driver
//! (the MMU-500 on the ZynqMP) would produce them from its fault syndrome
//! registers. The memory manager and the DMA scheduler only ever see this
//! type.

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

/// Fault records collapsed to one per (stream, 4 KiB page, access), in
/// a fixed table: the one place faults are deduplicated.
///
/// An SMMU that splits a faulting DMA into small pieces reports the same page
/// hundreds of times (QEMU: one record per 4 bytes); the memory manager must
/// resolve it once. The set never allocates, so it can be filled while the
/// SMMU's lock is held (growing the heap there could deadlock): past `N - 1`
/// distinct faults it says so ([`FaultSet::overflowed`]), and the caller
/// recovers as from lost events.
#[derive(Debug)]
pub struct FaultSet<const N: usize> {
    slots: [Option<Fault>; N],
    /// Slots in use, in order of arrival (so clearing touches only them).
    used: [u16; N],
    len: usize,
    overflowed: bool,
}

impl<const N: usize> FaultSet<N> {
    /// An empty set. `N` is at most 65,536.
    pub const fn new() -> Self {
        assert!(N > 1 && N <= 1 << 16);
        Self {
            slots: [None; N],
            used: [0; N],
            len: 0,
            overflowed: false,
        }
    }

    /// Adds `fault` unless one of the same stream, page and access is in;
    /// whether it was added.
    pub fn insert(&mut self, fault: Fault) -> bool {
        // Open addressing on the page number: duplicates come in long runs,
        // so probes are short.
        let mut slot = (fault.page() / PAGE_SIZE) as usize % N;
        for _ in 0..N {
            match &self.slots[slot] {
                Some(f) if f.key() == fault.key() => return false,
                Some(_) => slot = (slot + 1) % N,
                None => {
                    if self.len + 1 >= N {
                        self.overflowed = true;
                        return false;
                    }
                    self.slots[slot] = Some(fault);
                    self.used[self.len] = slot as u16;
                    self.len += 1;
                    return true;
                }
            }
        }
        false
    }

    /// The faults, in order of arrival.
    pub fn iter(&self) -> impl Iterator<Item = Fault> + '_ {
        self.used[..self.len]
            .iter()
            .filter_map(|&slot| self.slots[slot as usize])
    }

    /// How many distinct faults it holds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether a distinct fault was refused for want of room since the
    /// last [`clear`](Self::clear): the set is incomplete.
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// Empties the set (touching only the slots in use).
    pub fn clear(&mut self) {
        for &slot in &self.used[..self.len] {
            self.slots[slot as usize] = None;
        }
        self.len = 0;
        self.overflowed = false;
    }
}

impl<const N: usize> Default for FaultSet<N> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;

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
        let mut set = FaultSet::<64>::new();
        // A 4 KiB DMA reported 4 bytes at a time: 1024 records, one page.
        for i in 0..1024 {
            set.insert(write_fault(8, 0x4000_0000 + 4 * i));
        }
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            vec![write_fault(8, 0x4000_0000)]
        );
        // The next page, another stream, and a read of the same page are new.
        assert!(set.insert(write_fault(8, 0x4000_1000)));
        assert!(set.insert(write_fault(9, 0x4000_0000)));
        let read = Fault {
            access: Access::Read,
            ..write_fault(8, 0x4000_0010)
        };
        assert!(set.insert(read));
        assert_eq!(set.len(), 4);
    }

    #[test]
    fn a_full_set_says_so_and_clearing_empties_it() {
        let mut set = FaultSet::<4>::new();
        for page in 0..3 {
            assert!(set.insert(write_fault(1, page * PAGE_SIZE)));
        }
        assert!(!set.insert(write_fault(1, 7 * PAGE_SIZE)));
        assert!(set.overflowed());
        // Pages that collide in the table still come out in arrival order.
        assert_eq!(
            set.iter().map(|f| f.iova).collect::<Vec<_>>(),
            vec![0, PAGE_SIZE, 2 * PAGE_SIZE]
        );
        set.clear();
        assert!(set.is_empty() && !set.overflowed());
        assert!(set.insert(write_fault(1, 4 * PAGE_SIZE)));
        assert_eq!(set.iter().count(), 1);
    }

    #[test]
    fn page_rounds_down() {
        assert_eq!(write_fault(0, 0x1234_5678).page(), 0x1234_5000);
    }
}
