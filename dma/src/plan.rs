//! How a transfer is cut into segments, in positions (see [`crate::layout`]).
//!
//! ```text
//!  positions:  |····unit····|····unit····|····unit····|      cut at multiples of unit
//!  pieces:     [a ][b         ][c ][d                  ]
//!  1 piece/seg:|a |b        |  |c |d     |            |      + at piece boundaries
//!  n pieces:   a segment ends before its (n+1)-th piece, rounded down to a block
//! ```
//!
//! The unit is the engine's `max_segment` rounded down to whole pages.
//! Byte engines (block 1) are cut at absolute multiples of the unit, so for a
//! one-piece transfer every segment but the first starts on a page boundary
//! and a segment never straddles more pages than it must; block engines are
//! cut at multiples from the transfer's start, so that every segment moves
//! whole blocks. The segment holding a position is found by a binary search,
//! which the fault path does for every event.

use alloc::vec::Vec;
use core::ops::Range;

use crate::layout::Layout;

/// The cut of one transfer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    /// First position of each segment, ascending.
    starts: Vec<usize>,
    end: usize,
}

/// What the cut depends on besides the pieces.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cut {
    /// The engine's `max_segment` (> 0).
    pub(crate) max_segment: usize,
    /// The engine's `max_pieces` (> 0).
    pub(crate) max_pieces: usize,
    /// The engine's `block` (a power of two, at most a page).
    pub(crate) block: usize,
    /// The page size.
    pub(crate) page: usize,
}

impl Plan {
    /// Cuts the positions of `layout`. Below a page, the unit is the largest
    /// power of two that fits, so that segments still never straddle a page.
    pub(crate) fn new(layout: &Layout, cut: Cut) -> Self {
        let unit = if cut.max_segment >= cut.page {
            cut.max_segment - cut.max_segment % cut.page
        } else {
            1 << (usize::BITS - 1 - cut.max_segment.leading_zeros())
        };
        let all = layout.positions();
        let block = cut.block.max(1);
        let origin = if block == 1 { 0 } else { all.start };
        let down = |pos: usize| all.start + (pos - all.start) / block * block;
        let mut starts = Vec::new();
        let mut s = all.start;
        while s < all.end {
            starts.push(s);
            let mut e = (origin + ((s - origin) / unit).saturating_add(1).saturating_mul(unit))
                .min(all.end);
            let first = layout.piece_at(s);
            if let Some(&limit) = layout.starts().get(first + cut.max_pieces) {
                // `submit` refused pieces that cannot be cut on a block
                // boundary (`Layout::cuttable`), so `down(limit) > s`.
                if limit < e && down(limit) > s {
                    e = down(limit);
                }
            }
            s = e;
        }
        Plan {
            starts,
            end: all.end,
        }
    }

    /// Number of segments.
    pub(crate) fn count(&self) -> usize {
        self.starts.len()
    }

    /// Positions of segment `i` (< `count`).
    pub(crate) fn segment(&self, i: usize) -> Range<usize> {
        self.starts[i]..self.starts.get(i + 1).copied().unwrap_or(self.end)
    }

    /// Index of the segment holding position `pos`, if the transfer does.
    pub(crate) fn index_of(&self, pos: usize) -> Option<usize> {
        let first = *self.starts.first()?;
        (first..self.end)
            .contains(&pos)
            .then(|| self.starts.partition_point(|&s| s <= pos) - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    const PAGE: usize = 0x1000;

    fn cut(max_segment: usize, max_pieces: usize, block: usize) -> Cut {
        Cut {
            max_segment,
            max_pieces,
            block,
            page: PAGE,
        }
    }

    fn segments(plan: &Plan) -> Vec<Range<usize>> {
        (0..plan.count()).map(|i| plan.segment(i)).collect()
    }

    #[test]
    fn segments_tile_the_buffer_on_page_boundaries() {
        let one = 0x1800..0x2_3000;
        let plan = Plan::new(&Layout::new(core::slice::from_ref(&one)), cut(0x4000, 1, 1));
        let segs = segments(&plan);
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
        let one = |r: Range<usize>| Layout::new(core::slice::from_ref(&r));
        assert_eq!(Plan::new(&one(0..0x10000), cut(10 * 1024, 1, 1)).count(), 8);
        let small = Plan::new(&one(0..0x1000), cut(3000, 1, 1));
        assert_eq!(small.count(), 2);
        assert_eq!(small.segment(1), 0x800..0x1000);
        assert_eq!(Plan::new(&one(5..6), cut(1, 1, 1)).count(), 1);
    }

    #[test]
    fn one_piece_engines_are_cut_at_piece_boundaries() {
        // 100 bytes, 0x1800 bytes, 0x900 bytes: positions from 0x1000.
        let l = Layout::new(&[0x1000..0x1064, 0x8000..0x9800, 0x2_0000..0x2_0900]);
        let segs = segments(&Plan::new(&l, cut(0x1000, 1, 1)));
        assert_eq!(
            segs,
            vec![
                0x1000..0x1064,
                0x1064..0x2000,
                0x2000..0x2864,
                0x2864..0x3000,
                0x3000..0x3164
            ]
        );
        // Engines of several pieces keep the unit cut only.
        let segs = segments(&Plan::new(&l, cut(0x1000, 4, 1)));
        assert_eq!(segs, vec![0x1000..0x2000, 0x2000..0x3000, 0x3000..0x3164]);
    }

    #[test]
    fn block_engines_get_whole_blocks_from_the_start() {
        // A transfer starting at an odd address, on a 512-byte-block engine
        // of 2 pieces: cuts are multiples of 512 from the start.
        let l = Layout::new(&[
            0x1003..0x1203,
            0x7000..0x7400,
            0x9000..0x9200,
            0xa000..0xa200,
        ]);
        let segs = segments(&Plan::new(&l, cut(0x1000, 2, 512)));
        for s in &segs {
            assert_eq!((s.start - 0x1003) % 512, 0, "{s:x?}");
            assert!(l.pieces_in(s) <= 2, "{s:x?}");
        }
        assert_eq!(segs, vec![0x1003..0x1603, 0x1603..0x1a03]);
    }
}
