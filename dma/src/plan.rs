//! How a transfer is cut into segments: at absolute multiples of a unit (the
//! engine's `max_segment` rounded down to whole pages), so every segment but
//! the first starts on a page boundary and the segment holding an address is
//! found by one division, which the fault path needs for every event.

use core::ops::Range;

/// The cut of one transfer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    va: Range<usize>,
    unit: usize,
}

impl Plan {
    /// Cuts `va` (not empty) for an engine taking `max_segment` (> 0) bytes.
    /// Below a page, the unit is the largest power of two that fits, so that
    /// segments still never straddle a page.
    pub(crate) fn new(va: Range<usize>, max_segment: usize, page: usize) -> Self {
        let unit = if max_segment >= page {
            max_segment - max_segment % page
        } else {
            1 << (usize::BITS - 1 - max_segment.leading_zeros())
        };
        Plan { va, unit }
    }

    /// Number of segments.
    pub(crate) fn count(&self) -> usize {
        (self.va.end - 1) / self.unit - self.va.start / self.unit + 1
    }

    /// Addresses of segment `i` (< `count`).
    pub(crate) fn segment(&self, i: usize) -> Range<usize> {
        let base = (self.va.start / self.unit + i) * self.unit;
        base.max(self.va.start)..base.saturating_add(self.unit).min(self.va.end)
    }

    /// Index of the segment holding `va`, if the transfer does.
    pub(crate) fn index_of(&self, va: usize) -> Option<usize> {
        self.va
            .contains(&va)
            .then(|| va / self.unit - self.va.start / self.unit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    #[test]
    fn segments_tile_the_buffer_on_page_boundaries() {
        let plan = Plan::new(0x1800..0x2_3000, 0x4000, 0x1000);
        let segs: Vec<_> = (0..plan.count()).map(|i| plan.segment(i)).collect();
        assert_eq!(segs.first(), Some(&(0x1800..0x4000)));
        assert_eq!(segs.last(), Some(&(0x2_0000..0x2_3000)));
        for w in segs.windows(2) {
            assert_eq!(w[0].end, w[1].start);
            assert_eq!(w[1].start % 0x1000, 0);
            assert!(w[0].len() <= 0x4000);
        }
        for (i, s) in segs.iter().enumerate() {
            assert_eq!(plan.index_of(s.start), Some(i));
            assert_eq!(plan.index_of(s.end - 1), Some(i));
        }
        assert_eq!(plan.index_of(0x2_3000), None);
        assert_eq!(plan.index_of(0x17ff), None);
    }

    #[test]
    fn odd_limits_round_down() {
        // 10 KiB rounds down to 2 pages; 3000 bytes to 2048.
        assert_eq!(Plan::new(0..0x10000, 10 * 1024, 0x1000).count(), 8);
        let small = Plan::new(0..0x1000, 3000, 0x1000);
        assert_eq!(small.count(), 2);
        assert_eq!(small.segment(1), 0x800..0x1000);
        assert_eq!(Plan::new(5..6, 1, 0x1000).count(), 1);
    }
}
