//! Where a transfer's bytes lie in memory: its pieces, and the map between
//! positions in their concatenation and virtual addresses.
//!
//! ```text
//!  pieces (addresses):  [a ──── a+n0)      [b ── b+n1)    [c ─ c+n2)
//!  positions:           [a ──── a+n0)[a+n0 ── a+n0+n1)[ ── a+n0+n1+n2)
//!                       └ one run from the first piece's address ┘
//! ```
//!
//! Segments, attempts and the plan work on positions. Positions are counted
//! from the first piece's address, so for a one-piece transfer a position
//! *is* the address and nothing is translated; only the fault path (an
//! address to positions), the page work (positions to pages) and the
//! engine's view (positions to address ranges) go through this map.

use alloc::vec::Vec;
use core::ops::Range;

use crate::pages;

/// The pieces of one transfer and the position of each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    pieces: Vec<Range<usize>>,
    /// Position of each piece's first byte, ascending; `starts[0]` is the
    /// first piece's address.
    starts: Vec<usize>,
    /// One past the last position.
    end: usize,
}

impl Layout {
    /// The layout of `pieces` (at least one, none empty: checked by
    /// `submit`). Saturates at the top of the address space, where no real
    /// buffer lives.
    pub(crate) fn new(pieces: &[Range<usize>]) -> Self {
        let mut at = pieces.first().map_or(0, |p| p.start);
        let mut starts = Vec::with_capacity(pieces.len());
        for p in pieces {
            starts.push(at);
            at = at.saturating_add(p.len());
        }
        Layout {
            pieces: pieces.to_vec(),
            starts,
            end: at,
        }
    }

    /// Every position of the transfer.
    pub(crate) fn positions(&self) -> Range<usize> {
        self.starts.first().copied().unwrap_or(0)..self.end
    }

    /// Position of each piece's first byte, ascending.
    pub(crate) fn starts(&self) -> &[usize] {
        &self.starts
    }

    /// Index of the piece holding position `pos` (within the transfer).
    pub(crate) fn piece_at(&self, pos: usize) -> usize {
        self.starts.partition_point(|&s| s <= pos).saturating_sub(1)
    }

    /// How many pieces positions `span` (not empty) meet.
    #[cfg(test)]
    pub(crate) fn pieces_in(&self, span: &Range<usize>) -> usize {
        self.piece_at(span.end - 1) - self.piece_at(span.start) + 1
    }

    /// The memory of positions `span`, as address ranges in order.
    pub(crate) fn memory(&self, span: Range<usize>) -> impl Iterator<Item = Range<usize>> + '_ {
        let first = self.piece_at(span.start);
        (first..self.pieces.len())
            .take_while(move |&i| self.starts[i] < span.end)
            .map(move |i| {
                let (p, at) = (&self.pieces[i], self.starts[i]);
                let from = span.start.max(at) - at;
                let to = (span.end - at).min(p.len());
                p.start + from..p.start + to
            })
    }

    /// The positions at which the byte at `va` is moved: none if no piece
    /// holds it, usually one (more if pieces overlap).
    pub(crate) fn positions_of(&self, va: usize) -> impl Iterator<Item = usize> + '_ {
        self.pieces
            .iter()
            .zip(&self.starts)
            .filter(move |(p, _)| p.contains(&va))
            .map(move |(p, &at)| at + (va - p.start))
    }

    /// The positions within `span` whose bytes lie in the page at `page`
    /// (page-aligned, `size` bytes): one range per piece meeting the page.
    pub(crate) fn page_positions<'a>(
        &'a self,
        page: usize,
        size: usize,
        span: &'a Range<usize>,
    ) -> impl Iterator<Item = Range<usize>> + 'a {
        let page_end = page.saturating_add(size);
        self.pieces
            .iter()
            .zip(&self.starts)
            .filter_map(move |(p, &at)| {
                let lo = p.start.max(page);
                let hi = p.end.min(page_end);
                if lo >= hi {
                    return None;
                }
                let from = (at + (lo - p.start)).max(span.start);
                let to = (at + (hi - p.start)).min(span.end);
                (from < to).then_some(from..to)
            })
    }

    /// The pages (addresses) the memory of positions `span` touches, in
    /// order of position (a page two pieces share may come twice).
    pub(crate) fn pages(
        &self,
        span: Range<usize>,
        size: usize,
    ) -> impl Iterator<Item = usize> + '_ {
        let mut last = None;
        self.memory(span)
            .flat_map(move |r| pages::pages(&r, size))
            .filter(move |&p| last.replace(p) != Some(p))
    }

    /// Page-aligned address ranges covering every piece, sorted and merged
    /// (what the `Pin` policy pins: each page once).
    pub(crate) fn page_runs(&self, size: usize) -> Vec<Range<usize>> {
        let mut hulls: Vec<Range<usize>> =
            self.pieces.iter().map(|p| pages::hull(p, size)).collect();
        hulls.sort_by_key(|r| r.start);
        let mut runs: Vec<Range<usize>> = Vec::with_capacity(hulls.len());
        for h in hulls {
            match runs.last_mut() {
                Some(last) if h.start <= last.end => last.end = last.end.max(h.end),
                _ => runs.push(h),
            }
        }
        runs
    }

    /// Whether an engine that moves whole blocks of `block` bytes and takes
    /// `max_pieces` pieces per segment can carry these pieces. Segments
    /// start a multiple of `block` from the transfer's start; one starting
    /// in piece `j` must end within `max_pieces` pieces, rounded down to a
    /// block, so piece `j + max_pieces` must begin in a later block than
    /// the last block start within piece `j`.
    pub(crate) fn cuttable(&self, max_pieces: usize, block: usize) -> bool {
        let Some(&origin) = self.starts.first() else {
            return false;
        };
        let block_of = |pos: usize| (pos - origin) / block;
        (0..self.starts.len()).all(|j| {
            let Some(&limit) = self.starts.get(j + max_pieces) else {
                return true;
            };
            let piece_end = self.starts.get(j + 1).copied().unwrap_or(self.end);
            // No block starts inside piece j: no segment starts there.
            let last_block = block_of(piece_end - 1);
            if origin + last_block * block < self.starts[j] {
                return true;
            }
            block_of(limit) > last_block
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    const PAGE: usize = 0x1000;

    fn three() -> Layout {
        // 12 bytes, 4096 bytes at an odd address, 2 bytes.
        Layout::new(&[0x1000..0x100c, 0x5_0003..0x5_1003, 0x100c..0x100e])
    }

    #[test]
    fn positions_run_from_the_first_address() {
        let l = three();
        assert_eq!(l.positions(), 0x1000..0x1000 + 4110);
        assert_eq!(l.starts(), &[0x1000, 0x100c, 0x200c]);
        assert_eq!(l.piece_at(0x100b), 0);
        assert_eq!(l.piece_at(0x100c), 1);
        assert_eq!(l.piece_at(0x200d), 2);
        let one = Layout::new(core::slice::from_ref(&(0x7003..0x9000)));
        assert_eq!(
            one.positions(),
            0x7003..0x9000,
            "one piece: positions are addresses"
        );
    }

    #[test]
    fn memory_of_a_span_crosses_pieces() {
        let l = three();
        let m: Vec<_> = l.memory(0x1008..0x200e).collect();
        assert_eq!(m, vec![0x1008..0x100c, 0x5_0003..0x5_1003, 0x100c..0x100e]);
        let inner: Vec<_> = l.memory(0x1010..0x1020).collect();
        assert_eq!(inner, vec![0x5_0007..0x5_0017]);
        assert_eq!(l.pieces_in(&(0x1008..0x200e)), 3);
        assert_eq!(l.pieces_in(&(0x1010..0x1020)), 1);
    }

    #[test]
    fn addresses_map_back_to_positions() {
        let l = three();
        assert_eq!(l.positions_of(0x5_0003).collect::<Vec<_>>(), [0x100c]);
        assert_eq!(l.positions_of(0x100d).collect::<Vec<_>>(), [0x200d]);
        assert_eq!(l.positions_of(0x2000).count(), 0);
        // The page at 0x1000 holds the first and the last piece.
        let all = l.positions();
        let p: Vec<_> = l.page_positions(0x1000, PAGE, &all).collect();
        assert_eq!(p, vec![0x1000..0x100c, 0x200c..0x200e]);
        // The value's second page holds its last 3 bytes.
        let p: Vec<_> = l.page_positions(0x5_1000, PAGE, &all).collect();
        assert_eq!(p, vec![0x2009..0x200c]);
    }

    #[test]
    fn pages_and_pin_runs() {
        let l = three();
        let pages: Vec<_> = l.pages(l.positions(), PAGE).collect();
        assert_eq!(pages, [0x1000, 0x5_0000, 0x5_1000, 0x1000]);
        assert_eq!(l.page_runs(PAGE), vec![0x1000..0x2000, 0x5_0000..0x5_2000]);
    }

    #[test]
    fn block_engines_need_coarse_enough_pieces() {
        let l = three();
        assert!(l.cuttable(1, 1), "byte engines cut anywhere");
        assert!(
            !l.cuttable(1, 512),
            "12 bytes then a new piece: not one piece per block"
        );
        assert!(l.cuttable(3, 512));
        let aligned = Layout::new(&[0x1000..0x1200, 0x9000..0x9400]);
        assert!(aligned.cuttable(1, 512));
        // Five pieces begin within the first block: a segment of at most 4
        // cannot end on a block boundary.
        let fine = Layout::new(&[0..100, 1000..1100, 2000..2100, 3000..3100, 4000..5000]);
        assert!(!fine.cuttable(4, 512));
        assert!(fine.cuttable(5, 512));
    }
}
