//! Regions: ranges of virtual memory that apps and drivers own.

use super::regions::{Backing, RegionInfo};
use super::space::{Attrs, PageState, MAX_PINS};
use super::{populate, resolve::make_own, with_space, MmError, EVICTIONS, FRAME_SIZE};
use core::ops::Range;
use core::sync::atomic::AtomicU64;
use core::sync::atomic::Ordering;

/// A reserved range of virtual addresses whose pages are either mapped now
/// (`eager`) or on first touch (`demand_zero`). Dropping it unmaps the pages
/// and frees their frames.
///
/// ```text
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
        Self::reserve_with(len, backing, false)
    }

    fn reserve_with(len: usize, backing: Backing, huge: bool) -> Result<Region, MmError> {
        let align = if len >= LARGE { LARGE } else { FRAME_SIZE };
        let info = with_space(|s| s.regions.reserve_with(len, align, backing, true, huge))?;
        Ok(Region { info })
    }

    /// Like [`Region::demand_zero`], at addresses below 256 MiB, for devices
    /// with a 28-bit DMA mask (QEMU's edu). Fails with `NoAddressSpace` on
    /// boards without such a window.
    pub fn demand_zero_low(len: usize) -> Result<Region, MmError> {
        let info = with_space(|s| {
            s.low_regions
                .reserve(len, FRAME_SIZE, Backing::DemandZero, true)
        })?;
        Ok(Region { info })
    }

    /// Makes the region read-only (`false`) or writable again; a store, by
    /// a core or a device, to a read-only page is a permission fault.
    pub fn set_writable(&mut self, writable: bool) {
        let attrs = if writable {
            Attrs::ReadWrite
        } else {
            Attrs::ReadOnly
        };
        with_space(|s| {
            s.regions.set_writable(self.info.start, writable);
            s.low_regions.set_writable(self.info.start, writable);
            s.reprotect(self.range(), attrs);
        });
        self.info.writable = writable;
    }

    /// Like [`Region::demand_zero`], but a first touch maps a whole 2 MiB
    /// block when one fits and is free (transparent huge pages), which the
    /// SMMU then translates in one step too. Evicting or discarding part of
    /// a block splits it into pages; pinning part of it pins all of it.
    pub fn demand_zero_huge(len: usize) -> Result<Region, MmError> {
        Self::reserve_with(len, Backing::DemandZero, true)
    }

    /// Reserves `len` bytes whose pages appear, zeroed, when first touched.
    pub fn demand_zero(len: usize) -> Result<Region, MmError> {
        Self::reserve(len, Backing::DemandZero)
    }

    /// Reserves `len` bytes and maps zeroed frames for all of them now.
    /// Later `discard`ed pages fault back in as zeros.
    pub fn eager(len: usize) -> Result<Region, MmError> {
        let region = Self::reserve(len, Backing::DemandZero)?;
        populate(region.range())?;
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

    /// The region as `f64`s (a grid of numbers, say): zeroed memory reads
    /// as 0.0.
    pub fn as_f64s(&self) -> &[f64] {
        let bytes = self.as_slice();
        // SAFETY: the start is page-aligned (so aligned for f64), every bit
        // pattern is a valid f64, and the slice borrows the region shared,
        // as `bytes` did.
        unsafe { core::slice::from_raw_parts(bytes.as_ptr() as *const f64, bytes.len() / 8) }
    }

    /// The region as `f64`s, writable.
    pub fn as_mut_f64s(&mut self) -> &mut [f64] {
        let bytes = self.as_mut_slice();
        // SAFETY: as in `as_f64s`, and the slice borrows the region
        // exclusively, as `bytes` did.
        unsafe { core::slice::from_raw_parts_mut(bytes.as_mut_ptr() as *mut f64, bytes.len() / 8) }
    }

    /// Writes `value` at `offset` with a volatile store, so that the page
    /// is really touched (a demand fault if it is not mapped yet): for
    /// measuring the fault path, which an optimised plain store may skip.
    ///
    /// # Panics
    ///
    /// If `offset` is not inside the region.
    pub fn touch(&mut self, offset: usize, value: u8) {
        let byte: *mut u8 = &mut self.as_mut_slice()[offset];
        // SAFETY: `byte` comes from an exclusive reference to a byte of the
        // region, valid for this write.
        unsafe { byte.write_volatile(value) };
    }

    /// The region as 64-bit atomics, for sharing between cores.
    pub fn as_atomic_u64s(&self) -> &[AtomicU64] {
        // SAFETY: the start is page-aligned, zeroed memory is a valid
        // AtomicU64, and atomics allow shared mutation.
        unsafe {
            core::slice::from_raw_parts(self.info.start as *const AtomicU64, self.info.len / 8)
        }
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
        populate(self.absolute(offsets)?)
    }

    /// Unmaps the pages touching `offsets` and frees their frames; their
    /// contents are lost (they read as zeros again). Returns pages freed.
    pub fn discard(&mut self, offsets: Range<usize>) -> Result<usize, MmError> {
        let range = self.absolute(offsets)?;
        Ok(with_space(|s| s.unmap_and_free(range)))
    }

    /// Evicts the resident, unpinned pages touching `offsets` to the backing
    /// store (zero pages take no space there); the next access, by a core or
    /// a device, brings them back. Returns pages evicted.
    pub fn evict(&mut self, offsets: Range<usize>) -> Result<usize, MmError> {
        let range = self.absolute(offsets)?;
        let mut evicted = 0;
        let mut start = range.start;
        while start < range.end {
            let end = ((start / super::BLOCK_SIZE + 1) * super::BLOCK_SIZE).min(range.end);
            evicted += with_space(|space| space.evict_range(start..end))?;
            start = end;
        }
        EVICTIONS.fetch_add(evicted as u64, Ordering::Relaxed);
        Ok(evicted)
    }

    /// Makes the pages touching `offsets` resident and keeps them so until
    /// [`Region::unpin`]: eviction skips them, and devices never fault there.
    /// Pins nest (up to 15 per page; a 2 MiB block counts as one page).
    pub fn pin(&mut self, offsets: Range<usize>) -> Result<(), MmError> {
        pin(self.absolute(offsets)?)
    }

    /// Releases one pin of each page touching `offsets`.
    pub fn unpin(&mut self, offsets: Range<usize>) -> Result<(), MmError> {
        unpin(self.absolute(offsets)?)
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
            s.remove_region(self.info.start);
        });
        super::region_gone(self.info.range());
    }
}

/// Page-aligned span of the pages touching `range`.
fn page_range(range: &Range<usize>) -> Range<usize> {
    range.start / FRAME_SIZE * FRAME_SIZE..range.end.next_multiple_of(FRAME_SIZE)
}

/// The region holding all of `range`.
fn region_of(range: &Range<usize>) -> Result<RegionInfo, MmError> {
    let info = with_space(|s| s.find_region(range.start)).ok_or(MmError::OutOfRange)?;
    if range.end > info.start + info.len || range.start >= range.end {
        return Err(MmError::OutOfRange);
    }
    Ok(info)
}

/// Pins the pages touching `range` (virtual addresses inside one region):
/// makes them resident and keeps them so until [`unpin`]. Used by the
/// pinning DMA baseline, which knows buffers only by address.
pub fn pin(range: Range<usize>) -> Result<(), MmError> {
    region_of(&range)?;
    let pages = page_range(&range);
    let mut page = pages.start;
    while page < pages.end {
        make_own(page).map_err(MmError::from)?;
        let pinned = with_space(|space| match space.page_state(page) {
            // Evicted or read back into the zero block meanwhile: retry.
            PageState::Mapped {
                shared_zero: true, ..
            } => Ok(None),
            PageState::Mapped { pins, .. } if pins == MAX_PINS => Err(MmError::TooManyPins),
            PageState::Mapped { in_block, pins, .. } => {
                space.set_pins(page, in_block, pins + 1);
                Ok(Some(next_mapping(page, in_block)))
            }
            // Evicted again between resolving and locking: retry.
            _ => Ok(None),
        });
        match pinned {
            Ok(Some(next)) => page = next,
            Ok(None) => continue,
            Err(e) => {
                if page > pages.start {
                    unpin(pages.start..page)?;
                }
                return Err(e);
            }
        }
    }
    Ok(())
}

/// The first page after the mapping that holds `page`: the next page, or
/// the end of its 2 MiB block, which pins and unpins count once.
fn next_mapping(page: usize, in_block: bool) -> usize {
    match in_block {
        true => (page | (super::BLOCK_SIZE - 1)) + 1,
        false => page + FRAME_SIZE,
    }
}

/// Releases one pin of each page touching `range` (virtual addresses), and
/// of each block once.
pub fn unpin(range: Range<usize>) -> Result<(), MmError> {
    region_of(&range)?;
    with_space(|space| {
        let pages = page_range(&range);
        let mut page = pages.start;
        while page < pages.end {
            page = match space.page_state(page) {
                PageState::Mapped { in_block, pins, .. } => {
                    if pins > 0 {
                        space.set_pins(page, in_block, pins - 1);
                    }
                    next_mapping(page, in_block)
                }
                _ => page + FRAME_SIZE,
            };
        }
    });
    Ok(())
}
