//! Page arithmetic, and the small sorted set of pages a segment attempt has
//! faulted on (the scheduler's dedup set).

use core::ops::Range;
use smallvec::SmallVec;

/// Address of the page holding `addr`.
pub(crate) fn floor(addr: usize, page: usize) -> usize {
    addr - addr % page
}

/// Page-aligned range covering `range` (saturating at the top of the
/// address space, where no real buffer lives).
pub(crate) fn hull(range: &Range<usize>, page: usize) -> Range<usize> {
    floor(range.start, page)..floor(range.end - 1, page).saturating_add(page)
}

/// Addresses of the pages `range` touches, in order.
pub(crate) fn pages(range: &Range<usize>, page: usize) -> impl Iterator<Item = usize> {
    (floor(range.start, page)..range.end).step_by(page)
}

/// A sorted set of page addresses. Segments hold a handful of pages, so a
/// sorted vector beats any tree here; the first two are kept inline, so
/// that a segment's first faults allocate nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PageSet(SmallVec<[usize; 2]>);

impl PageSet {
    /// Adds `page`; false if it was already there.
    pub(crate) fn insert(&mut self, page: usize) -> bool {
        match self.0.binary_search(&page) {
            Ok(_) => false,
            Err(at) => {
                self.0.insert(at, page);
                true
            }
        }
    }

    #[cfg(test)]
    pub(crate) fn contains(&self, page: usize) -> bool {
        self.0.binary_search(&page).is_ok()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().copied()
    }

    /// Moves every page of `self` into `into`; returns how many were there
    /// already (repeats).
    pub(crate) fn drain_into(&mut self, into: &mut PageSet) -> u32 {
        let mut repeats = 0;
        for page in self.0.drain(..) {
            if !into.insert(page) {
                repeats += 1;
            }
        }
        repeats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    #[test]
    fn hull_and_pages_cover_unaligned_ranges() {
        assert_eq!(hull(&(0x1001..0x1002), 0x1000), 0x1000..0x2000);
        assert_eq!(hull(&(0x1000..0x3000), 0x1000), 0x1000..0x3000);
        let p: Vec<usize> = pages(&(0x1fff..0x3001), 0x1000).collect();
        assert_eq!(p, [0x1000, 0x2000, 0x3000]);
    }

    #[test]
    fn page_set_dedups_and_counts_repeats() {
        let mut s = PageSet::default();
        assert!(s.insert(0x3000));
        assert!(s.insert(0x1000));
        assert!(!s.insert(0x3000));
        assert_eq!(s.iter().collect::<Vec<_>>(), [0x1000, 0x3000]);
        let mut history = PageSet::default();
        history.insert(0x1000);
        assert_eq!(s.drain_into(&mut history), 1);
        assert!(s.is_empty() && history.contains(0x3000));
    }
}
