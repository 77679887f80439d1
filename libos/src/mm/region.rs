//! Regions: ranges of virtual memory that apps and drivers own.

use super::regions::{Backing, RegionInfo};
use super::{populate, with_space, MmError, FRAME_SIZE};
use core::ops::Range;
use core::sync::atomic::AtomicU64;

/// A reserved range of virtual addresses whose pages are either mapped now
/// (`eager`) or on first touch (`demand_zero`). Dropping it unmaps the pages
/// and frees their frames.
///
/// ```ignore
/// let mut buf = Region::demand_zero(1 << 30)?;   // 1 GiB, nothing mapped yet
/// buf.as_mut_slice()[4096] = 7;                  // one fault, one frame
/// assert_eq!(buf.resident_pages(), 1);
/// ```
pub struct Region {
    info: RegionInfo,
}

/// Regions at least this large start on a 2 MiB boundary.
const LARGE: usize = 2 << 20;

impl Region {
    fn reserve(len: usize, backing: Backing) -> Result<Region, MmError> {
        let align = if len >= LARGE { LARGE } else { FRAME_SIZE };
        let info = with_space(|s| s.regions.reserve(len, align, backing, true))?;
        Ok(Region { info })
    }

    /// Reserves `len` bytes whose pages appear, zeroed, when first touched.
    pub fn demand_zero(len: usize) -> Result<Region, MmError> {
        Self::reserve(len, Backing::DemandZero)
    }

    /// Reserves `len` bytes and maps zeroed frames for all of them now.
    /// Later `discard`ed pages fault back in as zeros.
    pub fn eager(len: usize) -> Result<Region, MmError> {
        let region = Self::reserve(len, Backing::DemandZero)?;
        populate(region.range(), true)?;
        Ok(region)
    }

    /// Reserves `len` bytes that only [`Region::populate`] maps; touching an
    /// unpopulated page is an error (used by the heap).
    pub(crate) fn explicit(len: usize) -> Result<Region, MmError> {
        Self::reserve(len, Backing::Explicit)
    }

    /// First address.
    pub fn start(&self) -> usize {
        self.info.start
    }

    /// Length in bytes (a multiple of the page size).
    pub fn len(&self) -> usize {
        self.info.len
    }

    /// Whether the region is empty (never: regions hold at least a page).
    pub fn is_empty(&self) -> bool {
        self.info.len == 0
    }

    /// Addresses covered.
    pub fn range(&self) -> Range<usize> {
        self.info.range()
    }

    /// The region's bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: the range is reserved for this region alone; every page is
        // either mapped or faults in (as zeros or with its contents), so all
        // bytes are readable for the life of `&self`.
        unsafe { core::slice::from_raw_parts(self.info.start as *const u8, self.info.len) }
    }

    /// The region's bytes, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, and `&mut self` makes the access exclusive.
        unsafe { core::slice::from_raw_parts_mut(self.info.start as *mut u8, self.info.len) }
    }

    /// The region as 64-bit atomics, for sharing between cores.
    pub fn as_atomic_u64s(&self) -> &[AtomicU64] {
        // SAFETY: the start is page-aligned, zeroed memory is a valid
        // AtomicU64, and atomics allow shared mutation.
        unsafe { core::slice::from_raw_parts(self.info.start as *const AtomicU64, self.info.len / 8) }
    }

    fn absolute(&self, offsets: Range<usize>) -> Result<Range<usize>, MmError> {
        if offsets.start > offsets.end || offsets.end > self.info.len {
            return Err(MmError::OutOfRange);
        }
        let start = self.info.start + offsets.start / FRAME_SIZE * FRAME_SIZE;
        let end = self.info.start + offsets.end.next_multiple_of(FRAME_SIZE);
        Ok(start..end)
    }

    /// Maps every page in `offsets` now (zeroed where not yet mapped).
    pub fn populate(&mut self, offsets: Range<usize>) -> Result<(), MmError> {
        populate(self.absolute(offsets)?, self.info.writable)
    }

    /// Unmaps the pages touching `offsets` and frees their frames; their
    /// contents are lost (they read as zeros again). Returns pages freed.
    pub fn discard(&mut self, offsets: Range<usize>) -> Result<usize, MmError> {
        let range = self.absolute(offsets)?;
        Ok(with_space(|s| s.unmap_and_free(range)))
    }

    /// Pages currently backed by frames.
    pub fn resident_pages(&self) -> usize {
        with_space(|s| s.resident_pages(self.range()))
    }

    /// Whether the page holding byte `offset` is backed by a frame.
    pub fn is_resident(&self, offset: usize) -> bool {
        offset < self.info.len && with_space(|s| s.translate(self.info.start + offset).is_some())
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        with_space(|s| {
            s.unmap_and_free(self.info.range());
            s.regions.remove(self.info.start);
        });
    }
}
