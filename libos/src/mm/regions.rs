//! Bookkeeping of reserved virtual ranges: which addresses belong to which
//! region, and what a fault there may do. A fixed table (no heap), because
//! the heap itself is a region and grows through this table.

use core::fmt;
use core::ops::Range;

/// Most regions that can exist at once.
pub const MAX_REGIONS: usize = 256;

/// How the pages of a region come to be mapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backing {
    /// Mapped on first touch with a zeroed frame (by CPU or, later, device).
    DemandZero,
    /// Mapped by the owner when it wants; a fault there is an error (the heap).
    Explicit,
}

/// A reserved range of virtual addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionInfo {
    /// First address.
    pub start: usize,
    /// Length in bytes (page multiple).
    pub len: usize,
    /// How its pages get mapped.
    pub backing: Backing,
    /// Whether stores are allowed.
    pub writable: bool,
    /// Whether demand faults may map whole 2 MiB blocks (transparent huge pages).
    pub huge: bool,
    /// Whether some device was granted part of it: new mappings here are
    /// copied to the devices' views as they are made.
    pub device_visible: bool,
}

impl RegionInfo {
    /// Addresses covered.
    pub fn range(&self) -> Range<usize> {
        self.start..self.start + self.len
    }
}

/// No gap in the region window is large enough.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReserveError {
    /// The window has no free range of that size.
    NoAddressSpace,
    /// All region slots are taken.
    TooManyRegions,
}

impl fmt::Display for ReserveError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            ReserveError::NoAddressSpace => f.write_str("no free virtual address range that large"),
            ReserveError::TooManyRegions => write!(f, "more than {MAX_REGIONS} regions"),
        }
    }
}

/// The regions of the address space, kept sorted by start address.
pub struct RegionTable {
    window: Range<usize>,
    regions: [Option<RegionInfo>; MAX_REGIONS],
    count: usize,
}

/// Unmapped bytes left between regions, so an overrun faults.
pub const GAP: usize = 0x1000;

impl RegionTable {
    /// An empty table handing out addresses from `window`.
    pub const fn new(window: Range<usize>) -> Self {
        Self {
            window,
            regions: [None; MAX_REGIONS],
            count: 0,
        }
    }

    fn live(&self) -> &[Option<RegionInfo>] {
        &self.regions[..self.count]
    }

    /// Reserves `len` bytes (rounded up to pages) aligned to `align`, first fit.
    pub fn reserve(
        &mut self,
        len: usize,
        align: usize,
        backing: Backing,
        writable: bool,
    ) -> Result<RegionInfo, ReserveError> {
        self.reserve_with(len, align, backing, writable, false)
    }

    /// Like [`RegionTable::reserve`], optionally allowing 2 MiB block mappings.
    pub fn reserve_with(
        &mut self,
        len: usize,
        align: usize,
        backing: Backing,
        writable: bool,
        huge: bool,
    ) -> Result<RegionInfo, ReserveError> {
        if self.count == MAX_REGIONS {
            return Err(ReserveError::TooManyRegions);
        }
        let len = len.max(1).next_multiple_of(GAP);
        let mut candidate = self.window.start.next_multiple_of(align);
        let mut slot = self.count;
        for (i, r) in self.live().iter().flatten().enumerate() {
            if candidate
                .checked_add(len + GAP)
                .is_some_and(|end| end <= r.start)
            {
                slot = i;
                break;
            }
            candidate = (r.start + r.len + GAP).next_multiple_of(align);
        }
        let end = candidate
            .checked_add(len)
            .ok_or(ReserveError::NoAddressSpace)?;
        if end > self.window.end {
            return Err(ReserveError::NoAddressSpace);
        }
        let info = RegionInfo {
            start: candidate,
            len,
            backing,
            writable,
            huge,
            device_visible: false,
        };
        self.regions.copy_within(slot..self.count, slot + 1);
        self.regions[slot] = Some(info);
        self.count += 1;
        Ok(info)
    }

    /// Forgets the region starting at `start`.
    pub fn remove(&mut self, start: usize) -> Option<RegionInfo> {
        let i = self
            .live()
            .iter()
            .position(|r| r.is_some_and(|r| r.start == start))?;
        let info = self.regions[i].take();
        self.regions.copy_within(i + 1..self.count, i);
        self.count -= 1;
        self.regions[self.count] = None;
        info
    }

    /// The region containing `addr`.
    pub fn find(&self, addr: usize) -> Option<RegionInfo> {
        let live = self.live();
        let i = live.partition_point(|r| r.is_some_and(|r| r.start <= addr));
        let r = live.get(i.checked_sub(1)?)?.as_ref()?;
        r.range().contains(&addr).then_some(*r)
    }

    /// Records that a device was granted part of the region at `start`.
    pub fn set_device_visible(&mut self, start: usize) {
        if let Some(r) = self.regions[..self.count]
            .iter_mut()
            .flatten()
            .find(|r| r.start == start)
        {
            r.device_visible = true;
        }
    }

    /// Changes whether the region at `start` is writable.
    pub fn set_writable(&mut self, start: usize, writable: bool) {
        if let Some(r) = self.regions[..self.count]
            .iter_mut()
            .flatten()
            .find(|r| r.start == start)
        {
            r.writable = writable;
        }
    }

    /// Number of live regions.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether no region exists.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WINDOW: Range<usize> = 0x10_0000_0000..0x10_4000_0000;

    #[test]
    fn reservations_do_not_overlap_and_leave_a_guard_gap() {
        let mut t = RegionTable::new(WINDOW);
        let a = t
            .reserve(10_000, 0x1000, Backing::DemandZero, true)
            .unwrap();
        let b = t
            .reserve(0x20_0000, 0x20_0000, Backing::DemandZero, true)
            .unwrap();
        assert_eq!(a.start, WINDOW.start);
        assert_eq!(a.len, 0x3000);
        assert_eq!(b.start % 0x20_0000, 0);
        assert!(b.start >= a.start + a.len + GAP);
        assert_eq!(t.find(a.start + 5), Some(a));
        assert_eq!(t.find(a.start + a.len), None, "the gap belongs to nobody");
        assert_eq!(t.find(b.start + b.len - 1), Some(b));
        assert_eq!(t.find(WINDOW.start - 1), None);
    }

    #[test]
    fn freed_ranges_are_reused_first_fit() {
        let mut t = RegionTable::new(WINDOW);
        let a = t
            .reserve(0x4000, 0x1000, Backing::DemandZero, true)
            .unwrap();
        let b = t.reserve(0x4000, 0x1000, Backing::Explicit, true).unwrap();
        assert_eq!(t.remove(a.start), Some(a));
        let c = t
            .reserve(0x2000, 0x1000, Backing::DemandZero, false)
            .unwrap();
        assert_eq!(c.start, a.start);
        assert_eq!(t.find(b.start), Some(b));
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn exhaustion_is_an_error_not_a_panic() {
        let mut t = RegionTable::new(WINDOW);
        assert_eq!(
            t.reserve(
                WINDOW.end - WINDOW.start + 1,
                0x1000,
                Backing::DemandZero,
                true
            ),
            Err(ReserveError::NoAddressSpace)
        );
        assert_eq!(
            t.reserve(usize::MAX - 0x2000, 0x1000, Backing::DemandZero, true),
            Err(ReserveError::NoAddressSpace)
        );
        for _ in 0..MAX_REGIONS {
            t.reserve(0x1000, 0x1000, Backing::DemandZero, true)
                .unwrap();
        }
        assert_eq!(
            t.reserve(0x1000, 0x1000, Backing::DemandZero, true),
            Err(ReserveError::TooManyRegions)
        );
    }
}
