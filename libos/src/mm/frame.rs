//! Physical frame allocator: one bit per 4 KiB frame of RAM.
//!
//! Every frame starts out used; boot code frees the usable RAM and keeps the
//! image, the DTB and the bitmap itself reserved. A few frames are held back
//! for page tables, so that mapping a frame that was already allocated never
//! fails halfway for want of a table.

use core::fmt;
use core::ops::Range;

/// Size of a frame.
pub const FRAME_SIZE: usize = 4096;

/// Frames only page-table allocations may use.
pub const TABLE_RESERVE: usize = 64;

/// No free frame (or no free run of the requested size) is left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfFrames;

impl fmt::Display for OutOfFrames {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("out of physical memory frames")
    }
}

/// Bitmap allocator over the frames of one RAM range.
pub struct FrameAllocator<'a> {
    base: usize,
    frames: usize,
    /// Bit set = frame in use.
    used: &'a mut [u64],
    free: usize,
    /// Where the next single-frame search starts (next fit).
    cursor: usize,
}

impl<'a> FrameAllocator<'a> {
    /// Words of bitmap needed for `frames` frames.
    pub const fn bitmap_words(frames: usize) -> usize {
        frames.div_ceil(64)
    }

    /// An allocator for `frames` frames from `base` (frame-aligned), all in use.
    pub fn new(base: usize, frames: usize, bitmap: &'a mut [u64]) -> Self {
        assert!(
            base.is_multiple_of(FRAME_SIZE),
            "RAM base must be frame-aligned"
        );
        assert!(
            bitmap.len() >= Self::bitmap_words(frames),
            "bitmap too small"
        );
        bitmap.fill(u64::MAX);
        Self {
            base,
            frames,
            used: bitmap,
            free: 0,
            cursor: 0,
        }
    }

    /// Physical range covered.
    pub fn range(&self) -> Range<usize> {
        self.base..self.base + self.frames * FRAME_SIZE
    }

    /// Frames not in use.
    pub fn free_count(&self) -> usize {
        self.free
    }

    /// All frames covered.
    pub fn total(&self) -> usize {
        self.frames
    }

    fn is_used(&self, index: usize) -> bool {
        self.used[index / 64] & (1 << (index % 64)) != 0
    }

    fn set_used(&mut self, index: usize, used: bool) {
        if self.is_used(index) == used {
            return;
        }
        if used {
            self.used[index / 64] |= 1 << (index % 64);
            self.free -= 1;
        } else {
            self.used[index / 64] &= !(1 << (index % 64));
            self.free += 1;
        }
    }

    /// Frame indices wholly inside `range`, clipped to the allocator.
    fn indices_inside(&self, range: Range<usize>) -> Range<usize> {
        let start = range.start.max(self.base).next_multiple_of(FRAME_SIZE);
        let end = range.end.min(self.base + self.frames * FRAME_SIZE) / FRAME_SIZE * FRAME_SIZE;
        if start >= end {
            return 0..0;
        }
        (start - self.base) / FRAME_SIZE..(end - self.base) / FRAME_SIZE
    }

    /// Frame indices touching `range`, clipped to the allocator.
    fn indices_touching(&self, range: Range<usize>) -> Range<usize> {
        let start = (range.start.max(self.base) / FRAME_SIZE) * FRAME_SIZE;
        let end = range
            .end
            .min(self.base + self.frames * FRAME_SIZE)
            .next_multiple_of(FRAME_SIZE);
        if start >= end {
            return 0..0;
        }
        (start - self.base) / FRAME_SIZE..(end - self.base) / FRAME_SIZE
    }

    /// Makes the frames wholly inside `range` available.
    pub fn add_free(&mut self, range: Range<usize>) {
        for i in self.indices_inside(range) {
            self.set_used(i, false);
        }
    }

    /// Marks every frame touching `range` as used (image, DTB, ...).
    pub fn reserve(&mut self, range: Range<usize>) {
        for i in self.indices_touching(range) {
            self.set_used(i, true);
        }
    }

    fn take_one(&mut self) -> Result<usize, OutOfFrames> {
        if self.free == 0 {
            return Err(OutOfFrames);
        }
        let words = self.used.len();
        let first_word = self.cursor / 64;
        for step in 0..=words {
            let w = (first_word + step) % words;
            let bits = self.used[w];
            if bits != u64::MAX {
                let index = w * 64 + (!bits).trailing_zeros() as usize;
                if index < self.frames {
                    self.set_used(index, true);
                    self.cursor = index + 1;
                    return Ok(self.base + index * FRAME_SIZE);
                }
            }
        }
        Err(OutOfFrames)
    }

    /// Allocates one frame for data, keeping [`TABLE_RESERVE`] frames back.
    pub fn alloc(&mut self) -> Result<usize, OutOfFrames> {
        if self.free <= TABLE_RESERVE {
            return Err(OutOfFrames);
        }
        self.take_one()
    }

    /// Allocates one frame for a page table; may use the reserve.
    pub fn alloc_for_table(&mut self) -> Result<usize, OutOfFrames> {
        self.take_one()
    }

    /// Allocates `count` physically contiguous frames whose first address is
    /// a multiple of `align` bytes (a power of two, at least a frame).
    pub fn alloc_contiguous(&mut self, count: usize, align: usize) -> Result<usize, OutOfFrames> {
        assert!(align.is_power_of_two() && align >= FRAME_SIZE);
        if count == 0 || self.free < count + TABLE_RESERVE {
            return Err(OutOfFrames);
        }
        let mut start = self.base.next_multiple_of(align);
        let end = self.base + self.frames * FRAME_SIZE;
        while start + count * FRAME_SIZE <= end {
            let first = (start - self.base) / FRAME_SIZE;
            match (first..first + count).rev().find(|&i| self.is_used(i)) {
                None => {
                    for i in first..first + count {
                        self.set_used(i, true);
                    }
                    return Ok(start);
                }
                // Skip past the used frame to the next aligned start.
                Some(used) => {
                    start = (self.base + (used + 1) * FRAME_SIZE).next_multiple_of(align);
                }
            }
        }
        Err(OutOfFrames)
    }

    /// Returns a frame. Freeing a frame that is not allocated is a kernel bug.
    pub fn free(&mut self, frame: usize) {
        assert!(
            frame.is_multiple_of(FRAME_SIZE) && self.range().contains(&frame),
            "bad frame {frame:#x}"
        );
        let index = (frame - self.base) / FRAME_SIZE;
        assert!(self.is_used(index), "double free of frame {frame:#x}");
        self.set_used(index, false);
    }

    /// Returns `count` contiguous frames starting at `frame`.
    pub fn free_contiguous(&mut self, frame: usize, count: usize) {
        for i in 0..count {
            self.free(frame + i * FRAME_SIZE);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::vec;
    use std::vec::Vec;

    const BASE: usize = 0x4000_0000;

    fn allocator(bitmap: &mut [u64], frames: usize) -> FrameAllocator<'_> {
        let mut a = FrameAllocator::new(BASE, frames, bitmap);
        a.add_free(BASE..BASE + frames * FRAME_SIZE);
        a
    }

    #[test]
    fn allocates_distinct_frames_until_only_the_table_reserve_is_left() {
        let frames = 200;
        let mut bitmap = vec![0; FrameAllocator::bitmap_words(frames)];
        let mut a = allocator(&mut bitmap, frames);
        let mut got = Vec::new();
        while let Ok(f) = a.alloc() {
            assert_eq!(f % FRAME_SIZE, 0);
            assert!(a.range().contains(&f));
            got.push(f);
        }
        assert_eq!(got.len(), frames - TABLE_RESERVE);
        got.sort();
        got.dedup();
        assert_eq!(got.len(), frames - TABLE_RESERVE);
        assert!(a.alloc_for_table().is_ok(), "tables may use the reserve");
        for f in got {
            a.free(f);
        }
        assert_eq!(a.free_count(), frames - 1);
    }

    #[test]
    fn reserved_ranges_are_never_handed_out() {
        let frames = 128;
        let mut bitmap = vec![0; 2];
        let mut a = allocator(&mut bitmap, frames);
        // An unaligned range reserves every frame it touches.
        a.reserve(BASE + 0x1800..BASE + 0x3001);
        assert_eq!(a.free_count(), frames - 3);
        while let Ok(f) = a.alloc_for_table() {
            assert!(!(BASE + 0x1000..BASE + 0x4000).contains(&f), "{f:#x}");
        }
    }

    #[test]
    fn contiguous_runs_are_aligned_and_skip_used_frames() {
        let frames = 4096;
        let mut bitmap = vec![0; FrameAllocator::bitmap_words(frames)];
        let mut a = allocator(&mut bitmap, frames);
        a.reserve(BASE + 0x20_0000..BASE + 0x20_1000);
        let run = a.alloc_contiguous(512, 0x20_0000).unwrap();
        assert_eq!(run % 0x20_0000, 0);
        assert_ne!(run, BASE + 0x20_0000, "the run must avoid the used frame");
        let before = a.free_count();
        a.free_contiguous(run, 512);
        assert_eq!(a.free_count(), before + 512);
        assert_eq!(a.alloc_contiguous(frames, FRAME_SIZE), Err(OutOfFrames));
    }

    #[test]
    #[should_panic(expected = "double free")]
    fn double_free_is_caught() {
        let mut bitmap = vec![0; 1];
        let mut a = allocator(&mut bitmap, 64);
        let f = a.alloc_for_table().unwrap();
        a.free(f);
        a.free(f);
    }
}
