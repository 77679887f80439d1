//! Cutting a flush's gather list into transfers a disk command each.
//!
//! ```text
//!  list:  [p0][p1][p2][p3][p4][p5][p6] ...        (memory ranges, in order)
//!  cut:   [p0 p1 p2 p3 p4'] [p4'' p5 p6 ...]      at most `max` pieces each,
//!          └ whole blocks ┘  └ the rest ┘          ending on a block
//! ```
//!
//! The DMA scheduler could take the whole list as one transfer and cut it
//! itself, but its bookkeeping per page looks at every piece of the
//! transfer, so a flush of thousands of values would cost work growing
//! with pieces times pages; transfers of one command's worth of pieces
//! keep it bounded. (Measured, this did not change 4 KiB-value flushes
//! beyond the noise; the values' pieces themselves were the cost.)

use alloc::vec::Vec;
use core::ops::Range;

/// Cuts `list` (address ranges; lengths summing to a multiple of `block`)
/// into lists of at most `max` ranges whose lengths each sum to a multiple
/// of `block`, splitting a range where a cut falls inside it. `None` if
/// `max` ranges start within one block, so no cut can end on a block.
///
/// ```
/// use kvstore::aof::cut_gather;
///
/// // 100 + 500 + 100 + 324 bytes: two blocks of 512, three pieces each.
/// let list = [0..100, 1000..1500, 2000..2100, 3000..3324];
/// let cut = cut_gather(&list, 512, 3).unwrap();
/// assert_eq!(cut, [vec![0..100, 1000..1412], vec![1412..1500, 2000..2100, 3000..3324]]);
/// // Four pieces start in the first block: two per list cannot end on it.
/// assert_eq!(cut_gather(&list, 512, 2), None);
/// ```
pub fn cut_gather(
    list: &[Range<usize>],
    block: usize,
    max: usize,
) -> Option<Vec<Vec<Range<usize>>>> {
    let mut out = Vec::new();
    let mut current: Vec<Range<usize>> = Vec::with_capacity(max);
    let mut len = 0;
    for range in list {
        current.push(range.clone());
        len += range.len();
        if current.len() < max {
            continue;
        }
        // Full: keep whole blocks, carry the rest to the next list.
        let mut excess = len % block;
        if excess == len {
            return None;
        }
        let mut carried = Vec::new();
        while excess > 0 {
            let last = current.last_mut()?;
            if last.len() <= excess {
                excess -= last.len();
                carried.push(current.pop()?);
            } else {
                carried.push(last.end - excess..last.end);
                last.end -= excess;
                excess = 0;
            }
        }
        carried.reverse();
        len = carried.iter().map(|r| r.len()).sum();
        out.push(core::mem::replace(&mut current, carried));
    }
    if !current.is_empty() {
        out.push(current);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cut_is_whole_blocks_of_few_pieces_and_keeps_the_bytes_in_order() {
        let mut rng = faultline_rng::Rng::new(3);
        let mut next = |n: usize| rng.below(n as u64) as usize;
        for round in 0..200 {
            // Small staged pieces between values of at least one block.
            let mut list = Vec::new();
            let mut at = 0;
            for i in 0..1 + next(60) {
                let len = if i % 2 == 0 {
                    1 + next(40)
                } else {
                    512 + next(5000)
                };
                list.push(at..at + len);
                at += len + 7;
            }
            let total: usize = list.iter().map(|r| r.len()).sum();
            let pad = total.next_multiple_of(512) - total;
            if pad > 0 {
                list.push(at..at + pad);
            }
            let max = 5 + next(8);
            let cut = cut_gather(&list, 512, max).expect("coarse enough");
            let bytes = |l: &[Range<usize>]| l.iter().flat_map(|r| r.clone()).collect::<Vec<_>>();
            for l in &cut {
                assert!(l.len() <= max, "round {round}: {} pieces", l.len());
                let len: usize = l.iter().map(|r| r.len()).sum();
                assert_eq!(len % 512, 0, "round {round}");
                assert!(l.iter().all(|r| !r.is_empty()));
            }
            assert_eq!(bytes(&cut.concat()), bytes(&list), "round {round}");
        }
    }
}
