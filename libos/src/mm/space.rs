//! The kernel's one address space: the page table every core translates
//! with (and whose mappings of granted memory the devices' views copy,
//! see `iommu`), plus the table of regions.
//! Callers hold the `SPACE` lock; frames come from `FRAMES` (lock order:
//! heap, then space, then frames).

use super::frame::OutOfFrames;
use super::frame::FRAME_SIZE;
use super::regions::RegionTable;
use super::FRAMES;
use aarch64_paging::descriptor::{Descriptor, El1Attributes, PhysicalAddress};
use aarch64_paging::paging::{Constraints, El1And0, MemoryRegion, PageTable, Translation, VaRange};
use aarch64_paging::{MapError, Mapping};
use core::ops::Range;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicUsize, Ordering};

/// ASID of the kernel address space (the boot map uses 0).
pub const KERNEL_ASID: u16 = 1;

/// Memory types and permissions a mapping can have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attrs {
    /// Kernel code: read-only, executable.
    Text,
    /// Read-only data.
    ReadOnly,
    /// Read-write data, never executable.
    ReadWrite,
    /// Device registers.
    Device,
}

impl Attrs {
    pub(super) fn bits(self) -> El1Attributes {
        use El1Attributes as A;
        // Non-global: tagged with the kernel's ASID, so one TLBI by ASID (CPU
        // or SMMU) drops them all.
        let normal = A::VALID
            | A::ATTRIBUTE_INDEX_1
            | A::INNER_SHAREABLE
            | A::ACCESSED
            | A::UXN
            | A::NON_GLOBAL;
        match self {
            Attrs::Text => normal | A::READ_ONLY,
            Attrs::ReadOnly => normal | A::READ_ONLY | A::PXN,
            Attrs::ReadWrite => normal | A::PXN,
            Attrs::Device => {
                A::VALID | A::ATTRIBUTE_INDEX_0 | A::ACCESSED | A::UXN | A::PXN | A::NON_GLOBAL
            }
        }
    }
}

/// What the page table says about one page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageState {
    /// Never mapped, or discarded: a fault gives a zeroed page.
    Unmapped,
    /// Mapped to frame `pa` (a 4 KiB page, or inside a 2 MiB block).
    Mapped {
        /// Physical address of the page.
        pa: usize,
        /// Whether it is part of a 2 MiB block mapping.
        in_block: bool,
        /// How many pins hold it resident.
        pins: u8,
        /// Whether it is (part of) the shared zero block: read-only, owned
        /// by no region, never to be freed or pinned.
        shared_zero: bool,
    },
    /// Evicted: the contents wait in the backing-store frame `slot`
    /// (0: the page was all zeros and needs no storage).
    Evicted {
        /// Backing-store frame, or 0 for a zero page.
        slot: usize,
    },
}

/// Software bit 0 on an invalid entry: the page was evicted.
const EVICTED: El1Attributes = El1Attributes::SWFLAG_0;
/// Pin count: software bits 0..3 of a valid entry.
const PIN_SHIFT: usize = 55;
const PIN_MASK: usize = 0xf << PIN_SHIFT;
/// Most pins one page can hold.
pub const MAX_PINS: u8 = 15;
/// Size of a block mapping.
pub const BLOCK_SIZE: usize = 2 << 20;

/// Physical address of the shared zero block (0: not allocated yet).
///
/// A read of never-written memory in a huge-page region maps this block,
/// read-only, instead of zeroing 2 MiB of its own; the first write to it
/// gets a fresh block (`resolve`). The block is taken from the frame
/// allocator on first use and never returned.
static ZERO_BLOCK: AtomicUsize = AtomicUsize::new(0);

/// Whether the physical address `pa` lies in the shared zero block.
fn in_zero_block(pa: usize) -> bool {
    let zero = ZERO_BLOCK.load(Ordering::Relaxed);
    zero != 0 && (zero..zero + BLOCK_SIZE).contains(&pa)
}

/// Whether `desc`, met at `level` of a walk, maps memory: a valid page, or
/// a valid block (not a pointer to a table).
fn is_mapping(desc: &Descriptor<El1Attributes>, level: usize) -> bool {
    desc.is_valid() && (level == 3 || !desc.is_table_or_page())
}

/// Page-table pages come from the frame allocator and are reached through
/// the identity map of RAM.
pub struct FrameTables;

impl Translation<El1Attributes> for FrameTables {
    fn allocate_table(&mut self) -> (NonNull<PageTable<El1Attributes>>, PhysicalAddress) {
        let frame = FRAMES
            .lock()
            .as_mut()
            .expect("frame allocator is initialized before page tables")
            .alloc_for_table()
            .expect("out of frames even for page tables (the reserve is exhausted)");
        super::zero_frames(frame, 1);
        (
            NonNull::new(frame as *mut _).expect("frame 0 is never allocated"),
            PhysicalAddress(frame),
        )
    }

    unsafe fn deallocate_table(&mut self, table: NonNull<PageTable<El1Attributes>>) {
        let frame = table.as_ptr() as usize;
        let mut deferred = DEFERRED_TABLES.lock();
        if deferred.active && deferred.count < deferred.frames.len() {
            // The table is unlinked but walkers may still cache it until the
            // caller's TLB invalidation: free it after that.
            let n = deferred.count;
            deferred.frames[n] = frame;
            deferred.count += 1;
        } else if let Some(frames) = FRAMES.lock().as_mut() {
            frames.free(frame);
        }
    }

    fn physical_to_virtual(&self, pa: PhysicalAddress) -> NonNull<PageTable<El1Attributes>> {
        NonNull::new(pa.0 as *mut _).expect("page tables never live at address 0")
    }
}

/// Page-table pages unlinked while the table was marked not live, waiting
/// for the TLB invalidation after which no walker can still use them.
struct DeferredTables {
    active: bool,
    frames: [usize; 8],
    count: usize,
}

static DEFERRED_TABLES: crate::sync::IrqSpinLock<DeferredTables> =
    crate::sync::IrqSpinLock::new(DeferredTables {
        active: false,
        frames: [0; 8],
        count: 0,
    });

/// Ranges longer than this are unmapped with one TLB invalidation by ASID
/// per 2 MiB instead of one per page.
const PER_PAGE_INVALIDATION_LIMIT: usize = 16 * FRAME_SIZE;

/// The page table and the regions that carve up its address space.
pub struct AddressSpace {
    table: Mapping<FrameTables, El1And0>,
    /// Reserved virtual ranges.
    pub regions: RegionTable,
    /// Reserved ranges in the board's low DMA window (below 256 MiB).
    pub low_regions: RegionTable,
}

// SAFETY: the page table is plain memory owned by this value; all access goes
// through the `SPACE` lock.
unsafe impl Send for AddressSpace {}

fn region(range: Range<usize>) -> MemoryRegion {
    MemoryRegion::new(range.start, range.end)
}

impl AddressSpace {
    /// An empty address space (a level-1 root: 39-bit VAs).
    pub fn new() -> Self {
        let table = Mapping::with_asid_and_va_range(
            FrameTables,
            KERNEL_ASID as usize,
            1,
            El1And0,
            VaRange::Lower,
        );
        let low = hw::board::CURRENT.low_dma_window.clone().unwrap_or(0..0);
        Self {
            table,
            regions: RegionTable::new(super::layout::REGION_WINDOW),
            low_regions: RegionTable::new(low),
        }
    }

    /// The region containing `addr`, in either window.
    pub fn find_region(&self, addr: usize) -> Option<super::regions::RegionInfo> {
        self.regions
            .find(addr)
            .or_else(|| self.low_regions.find(addr))
    }

    /// Forgets the region starting at `start`, in whichever window it is.
    pub fn remove_region(&mut self, start: usize) {
        if self.regions.remove(start).is_none() {
            self.low_regions.remove(start);
        }
    }

    /// Physical address of the root table (for TTBR0 and the SMMU's CD.TTB0).
    pub fn root(&self) -> usize {
        self.table.root_address().0
    }

    /// Records that the table is live on some core: changes from now on do
    /// TLB maintenance and respect break-before-make.
    pub fn mark_active(&self) {
        self.table.mark_active();
    }

    /// Maps `range` to the same physical addresses (blocks where aligned).
    pub fn map_identity(&mut self, range: Range<usize>, attrs: Attrs) -> Result<(), MapError> {
        self.table.map_range(
            &region(range.clone()),
            PhysicalAddress(range.start),
            attrs.bits(),
            Constraints::empty(),
        )
    }

    /// Writes a mapping where every entry in `range` is invalid. No TLB
    /// can hold a translation for an invalid entry, so no invalidation is
    /// needed, only a barrier; the library would broadcast a TLBI per page
    /// (costly: QEMU stops every vCPU for each), so it is told the table is
    /// not live while it writes.
    fn map_into_invalid(
        &mut self,
        range: Range<usize>,
        pa: usize,
        attrs: Attrs,
        c: Constraints,
    ) -> Result<(), MapError> {
        self.table.mark_inactive();
        let result = self
            .table
            .map_range(&region(range), PhysicalAddress(pa), attrs.bits(), c);
        self.table.mark_active();
        crate::arch::publish_page_table_update();
        result
    }

    /// Maps the unmapped (or evicted) page at `va` to the frame `pa`.
    pub fn map_page(&mut self, va: usize, pa: usize, attrs: Attrs) -> Result<(), MapError> {
        self.map_into_invalid(
            va..va + FRAME_SIZE,
            pa,
            attrs,
            Constraints::NO_BLOCK_MAPPINGS,
        )
    }

    /// The state of the page holding `va`.
    pub fn page_state(&self, va: usize) -> PageState {
        let page = va & !(FRAME_SIZE - 1);
        let mut state = PageState::Unmapped;
        self.table
            .walk_range(&region(page..page + FRAME_SIZE), &mut |_, desc, level| {
                let bits = desc.flags().bits();
                if is_mapping(desc, level) {
                    let block = 1usize << (12 + 9 * (3 - level));
                    let pa = desc.output_address().0 + (page & (block - 1));
                    state = PageState::Mapped {
                        pa,
                        in_block: level < 3,
                        pins: ((bits & PIN_MASK) >> PIN_SHIFT) as u8,
                        shared_zero: in_zero_block(pa),
                    };
                } else if !desc.is_valid() && level == 3 && desc.flags().contains(EVICTED) {
                    state = PageState::Evicted {
                        slot: desc.output_address().0,
                    };
                }
                Ok(())
            })
            .ok();
        state
    }

    /// The mapping (page or block) that holds `va`, if any.
    pub fn leaf(&self, va: usize) -> Option<super::Leaf> {
        let page = va & !(FRAME_SIZE - 1);
        let mut leaf = None;
        self.table
            .walk_range(&region(page..page + FRAME_SIZE), &mut |_, desc, level| {
                if is_mapping(desc, level) {
                    let len = 1usize << (12 + 9 * (3 - level));
                    leaf = Some(super::Leaf {
                        va: page & !(len - 1),
                        pa: desc.output_address().0,
                        len,
                        writable: !desc.flags().contains(El1Attributes::READ_ONLY),
                    });
                }
                Ok(())
            })
            .ok();
        leaf
    }

    /// The level-3 entry of `va` in the kernel table, if the tables down to
    /// it exist (no block above it): a direct walk, for the fault path.
    fn leaf_entry(&self, va: usize) -> Option<*mut u64> {
        const TABLE: u64 = 0b11;
        const ADDRESS: u64 = 0x0000_ffff_ffff_f000;
        let mut table = self.root() as *mut u64;
        for shift in [30, 21] {
            // SAFETY: `table` is a page of this table (the root, or one a
            // valid table descriptor names), identity-mapped RAM that lives
            // as long as the table; the index is below 512.
            let d = unsafe { table.add((va >> shift) & 511).read_volatile() };
            if d & TABLE != TABLE {
                return None;
            }
            table = (d & ADDRESS) as *mut u64;
        }
        // SAFETY: as above, for the level-3 table.
        Some(unsafe { table.add((va >> 12) & 511) })
    }

    /// Maps the page at `va` to the (zeroed) frame `pa` if its level-3
    /// entry exists and was never used (all zero: not evicted, not
    /// mapped); `false` leaves everything as it was, for the general path.
    /// The descriptor is the one `map_page` writes; an invalid entry needs
    /// no TLB maintenance, only the barrier that publishes it.
    pub fn install_page(&mut self, va: usize, pa: usize, attrs: Attrs) -> bool {
        let Some(entry) = self.leaf_entry(va) else {
            return false;
        };
        // SAFETY: `entry` is a level-3 entry of this table, which `&mut
        // self` (the SPACE lock) keeps to us.
        if unsafe { entry.read_volatile() } != 0 {
            return false;
        }
        let page = (attrs.bits() | El1Attributes::TABLE_OR_PAGE).bits();
        // SAFETY: as above; the walker sees the entry valid only once it
        // is whole (one aligned 64-bit store).
        unsafe { entry.write_volatile((pa as u64 & 0x0000_ffff_ffff_f000) | page as u64) };
        crate::arch::publish_page_table_update();
        true
    }

    /// Whether the page holding `va` is mapped writable.
    pub fn is_writable(&self, va: usize) -> bool {
        let page = va & !(FRAME_SIZE - 1);
        let mut writable = false;
        self.table
            .walk_range(&region(page..page + FRAME_SIZE), &mut |_, desc, level| {
                if is_mapping(desc, level) {
                    writable = !desc.flags().contains(El1Attributes::READ_ONLY);
                }
                Ok(())
            })
            .ok();
        writable
    }

    /// Rewrites the leaf entry of the 4 KiB page `va` (which must exist at level 3).
    fn set_leaf(&mut self, va: usize, pa: usize, flags: El1Attributes) {
        self.table
            .modify_range(&region(va..va + FRAME_SIZE), &|_, desc| {
                desc.set(PhysicalAddress(pa), flags)
            })
            .expect("updating a level-3 entry of a live table");
    }

    /// Evicts the resident, unpinned pages of `range` (at most one 2 MiB
    /// block) to the backing store: their entries become invalid first (one
    /// TLB invalidation for all, CPU and SMMU), so no core or device can
    /// still write them, then their contents are copied out and their frames
    /// freed. Zero pages keep no copy (and pages of the shared zero block
    /// are only unmapped). Returns pages evicted.
    pub fn evict_range(&mut self, range: Range<usize>) -> Result<usize, OutOfFrames> {
        let mut victims = [(0usize, 0usize, 0usize); 512];
        let mut count = 0;
        for page in range.clone().step_by(FRAME_SIZE) {
            if let PageState::Mapped {
                pa,
                in_block,
                pins: 0,
                shared_zero,
            } = self.page_state(page)
            {
                if in_block {
                    self.split_block(page);
                }
                if shared_zero {
                    victims[count] = (page, pa, 0);
                    count += 1;
                    continue;
                }
                let slot = match FRAMES
                    .lock()
                    .as_mut()
                    .expect("frame allocator is initialized")
                    .alloc()
                {
                    Ok(slot) => slot,
                    Err(_) if count > 0 => break,
                    Err(e) => return Err(e),
                };
                victims[count] = (page, pa, slot);
                count += 1;
            }
        }
        if count == 0 {
            return Ok(0);
        }
        let evicted = EVICTED | El1Attributes::TABLE_OR_PAGE;
        self.table.mark_inactive();
        for &(page, _, slot) in &victims[..count] {
            self.set_leaf(page, slot, evicted);
        }
        self.table.mark_active();
        crate::arch::invalidate_asid(KERNEL_ASID);
        super::after_unmap(range);
        let mut frames = FRAMES.lock();
        let frames = frames.as_mut().expect("frame allocator is initialized");
        for &(page, pa, slot) in &victims[..count] {
            if in_zero_block(pa) {
                continue;
            }
            // SAFETY: the page's entry is invalid and the TLBs are clean, so
            // nothing writes the frame any more; it is ours until freed below.
            let contents = unsafe { core::slice::from_raw_parts(pa as *const u64, FRAME_SIZE / 8) };
            if contents.iter().all(|&w| w == 0) {
                frames.free(slot);
                // Rewriting an invalid entry needs no invalidation.
                self.table.mark_inactive();
                self.set_leaf(page, 0, evicted);
                self.table.mark_active();
            } else {
                super::copy_frame(pa, slot);
            }
            frames.free(pa);
        }
        Ok(count)
    }

    /// Sets the pin count of the mapping that holds `va` (as
    /// [`AddressSpace::page_state`] reported it): its 4 KiB page, or its
    /// whole 2 MiB block (a block carries one count for all its pages,
    /// so that a pinned buffer keeps its large translations in the SMMU).
    pub fn set_pins(&mut self, va: usize, in_block: bool, pins: u8) {
        let span = if in_block { BLOCK_SIZE } else { FRAME_SIZE };
        let start = va & !(span - 1);
        let set = El1Attributes::from_bits_retain((pins as usize) << PIN_SHIFT);
        let clear = El1Attributes::from_bits_retain(PIN_MASK) - set;
        // Only software bits change, which no table walker reads, so a TLB
        // entry with the old ones is still right: no invalidation needed.
        self.table.mark_inactive();
        self.table
            .modify_range(&region(start..start + span), &|_, desc| {
                if desc.flags().contains(El1Attributes::VALID) && !desc.is_table() {
                    desc.modify_flags(set, clear)
                } else {
                    Ok(())
                }
            })
            .expect("rewriting software bits of a whole leaf entry");
        self.table.mark_active();
    }

    /// Maps the 2 MiB block at `va` (aligned, [empty](AddressSpace::block_is_empty))
    /// to the contiguous frames at `pa`.
    pub fn map_block(&mut self, va: usize, pa: usize, attrs: Attrs) -> Result<(), MapError> {
        if self.has_page_table(va) {
            // Unmapping the whole block frees the page table (walkers may
            // cache it, so with TLB invalidation), making room for one entry.
            self.unmap(va..va + BLOCK_SIZE, false);
        }
        self.map_into_invalid(va..va + BLOCK_SIZE, pa, attrs, Constraints::empty())
    }

    /// Maps the shared zero block, read-only, at the empty 2 MiB block `va`
    /// (aligned). Takes the zero block from the allocator on first use;
    /// false when no 2 MiB run is free for it.
    pub fn map_zero_block(&mut self, va: usize) -> bool {
        let mut zero = ZERO_BLOCK.load(Ordering::Relaxed);
        if zero == 0 {
            let taken = FRAMES
                .lock()
                .as_mut()
                .expect("frame allocator is initialized")
                .alloc_contiguous(BLOCK_SIZE / FRAME_SIZE, BLOCK_SIZE);
            let Ok(frames) = taken else {
                return false;
            };
            super::zero_frames(frames, BLOCK_SIZE / FRAME_SIZE);
            // The caller holds the `SPACE` lock: nobody else allocates it.
            ZERO_BLOCK.store(frames, Ordering::Relaxed);
            zero = frames;
        }
        self.map_block(va, zero, Attrs::ReadOnly).is_ok()
    }

    /// Points the valid mapping of `range` (one page, or one aligned 2 MiB
    /// block) at the frames from `pa`: break (the old entry is invalidated
    /// in every TLB, the SMMU's too), then make.
    pub fn replace(&mut self, range: Range<usize>, pa: usize, attrs: Attrs) {
        let constraints = match range.len() {
            BLOCK_SIZE => Constraints::empty(),
            _ => Constraints::NO_BLOCK_MAPPINGS,
        };
        self.unmap(range.clone(), false);
        self.map_into_invalid(range, pa, attrs, constraints)
            .expect("mapping a range just unmapped cannot fail");
    }

    /// Changes the permissions of every mapped page and block in `range`,
    /// keeping their pin counts (software bits). Mappings of the shared
    /// zero block stay read-only: a write there must fault and get a
    /// block of its own.
    pub fn reprotect(&mut self, range: Range<usize>, attrs: Attrs) {
        let new = attrs.bits() | El1Attributes::TABLE_OR_PAGE;
        self.table
            .modify_range(&region(range.clone()), &|_, desc| {
                let pins = desc.flags() & El1Attributes::from_bits_retain(PIN_MASK);
                let valid = desc.flags().contains(El1Attributes::VALID);
                match valid && !in_zero_block(desc.output_address().0) {
                    true if desc.level() == 3 => desc.set(desc.output_address(), new | pins),
                    true if !desc.is_table() => {
                        desc.set(desc.output_address(), attrs.bits() | pins)
                    }
                    _ => Ok(()),
                }
            })
            .expect("changing permissions of live pages");
        super::after_unmap(range);
    }

    /// Whether no page, block or evicted entry lies in the 2 MiB block at
    /// `va`, so a block mapping can go there. A page table whose entries
    /// are all unmapped (left by small regions since dropped) does not
    /// count: [`AddressSpace::map_block`] frees it.
    pub fn block_is_empty(&self, va: usize) -> bool {
        let mut empty = true;
        self.table
            .walk_range(&region(va..va + BLOCK_SIZE), &mut |_, desc, level| {
                let evicted = level == 3 && !desc.is_valid() && desc.flags().contains(EVICTED);
                if is_mapping(desc, level) || evicted {
                    empty = false;
                }
                Ok(())
            })
            .ok();
        empty
    }

    /// Whether a page table (rather than one entry) covers the 2 MiB block at `va`.
    fn has_page_table(&self, va: usize) -> bool {
        let mut table = false;
        self.table
            .walk_range(&region(va..va + BLOCK_SIZE), &mut |_, _, level| {
                table |= level == 3;
                Ok(())
            })
            .ok();
        table
    }

    /// Turns the block mapping covering `va` into 512 page mappings of the
    /// same frames with the same attributes and pin count (break,
    /// invalidate, make), so one page of it can change.
    pub fn split_block(&mut self, va: usize) {
        let start = va & !(BLOCK_SIZE - 1);
        let range = region(start..start + BLOCK_SIZE);
        let mut block = None;
        self.table
            .walk_range(&range, &mut |_, desc, level| {
                if level < 3 && desc.is_valid() && !desc.is_table_or_page() {
                    block = Some((desc.output_address(), desc.flags()));
                }
                Ok(())
            })
            .ok();
        let Some((pa, flags)) = block else {
            return;
        };
        self.table
            .map_range(
                &range,
                PhysicalAddress(0),
                El1Attributes::empty(),
                Constraints::empty(),
            )
            .expect("unmapping a live block is allowed");
        super::after_unmap(start..start + BLOCK_SIZE);
        self.table
            .map_range(&range, pa, flags, Constraints::NO_BLOCK_MAPPINGS)
            .expect("mapping an unmapped range is allowed");
    }

    /// The physical address `va` translates to, if mapped.
    pub fn translate(&self, va: usize) -> Option<usize> {
        let page = va & !(FRAME_SIZE - 1);
        let mut pa = None;
        self.table
            .walk_range(&region(page..page + FRAME_SIZE), &mut |_, desc, level| {
                if is_mapping(desc, level) {
                    let block = 1usize << (12 + 9 * (3 - level));
                    pa = Some(desc.output_address().0 + (va & (block - 1)));
                }
                Ok(())
            })
            .ok()?;
        pa
    }

    /// Number of 4 KiB pages in `range` backed by frames of their own
    /// (blocks count as 512; the shared zero block counts for nothing).
    pub fn resident_pages(&self, range: Range<usize>) -> usize {
        let mut pages = 0;
        self.table
            .walk_range(&region(range), &mut |mr, desc, level| {
                if is_mapping(desc, level) && !in_zero_block(desc.output_address().0) {
                    pages += mr.len() / FRAME_SIZE;
                }
                Ok(())
            })
            .ok();
        pages
    }

    /// Makes every entry in `range` invalid and invalidates the TLBs (CPU and,
    /// through the hook, SMMU). `by_asid`: one invalidation of the kernel's
    /// ASID instead of one per page (for large ranges); page-table pages the
    /// change frees are returned only after it.
    fn unmap(&mut self, range: Range<usize>, by_asid: bool) {
        let invalid = El1Attributes::empty();
        if by_asid {
            DEFERRED_TABLES.lock().active = true;
            self.table.mark_inactive();
            let result = self.table.map_range(
                &region(range.clone()),
                PhysicalAddress(0),
                invalid,
                Constraints::empty(),
            );
            self.table.mark_active();
            crate::arch::invalidate_asid(KERNEL_ASID);
            let mut deferred = DEFERRED_TABLES.lock();
            let mut frames = FRAMES.lock();
            for &frame in &deferred.frames[..deferred.count] {
                frames
                    .as_mut()
                    .expect("frame allocator is initialized")
                    .free(frame);
            }
            deferred.count = 0;
            deferred.active = false;
            result.expect("unmapping is always allowed");
        } else {
            self.table
                .map_range(
                    &region(range.clone()),
                    PhysicalAddress(0),
                    invalid,
                    Constraints::empty(),
                )
                .expect("unmapping pages of a live table is always allowed");
        }
        super::after_unmap(range);
    }

    /// Unmaps every page in `range` (page-aligned) and, after the TLBs have
    /// forgotten them, returns their frames to the allocator (never those of
    /// the shared zero block). Returns the number of frames freed.
    ///
    /// A pinned page's frame is never freed: a device may still be moving
    /// data to or from it (a region dropped under a transfer breaks the
    /// contract of `libos::dma::submit`, but must not hand a frame some
    /// device writes to the next user). It stays allocated, unmapped, and
    /// is reported.
    pub fn unmap_and_free(&mut self, range: Range<usize>) -> usize {
        const CHUNK: usize = 512 * FRAME_SIZE;
        let mut freed = 0;
        let mut start = range.start;
        while start < range.end {
            let end = ((start / CHUNK + 1) * CHUNK).min(range.end);
            if end - start < BLOCK_SIZE {
                // Part of a block goes: the rest stays mapped, as pages.
                self.split_block(start);
            }
            // (first frame, frames): pages, blocks, and backing-store slots.
            let mut runs = [(0usize, 0usize); 512];
            let mut count = 0;
            let mut mapped = 0;
            let mut zero = false;
            let mut kept = 0;
            self.table
                .walk_range(&region(start..end), &mut |mr, desc, level| {
                    let pinned = desc.flags().bits() & PIN_MASK != 0;
                    if is_mapping(desc, level) && in_zero_block(desc.output_address().0) {
                        zero = true;
                    } else if is_mapping(desc, level) && pinned {
                        kept += mr.len() / FRAME_SIZE;
                    } else if desc.is_valid() && level == 3 {
                        runs[count] = (desc.output_address().0, 1);
                        mapped += 1;
                        count += 1;
                    } else if desc.is_valid() && level == 2 && !desc.is_table_or_page() {
                        // A block: `mr` is clipped to the range, so free what it covers.
                        let first = desc.output_address().0 + (mr.start().0 & (BLOCK_SIZE - 1));
                        runs[count] = (first, mr.len() / FRAME_SIZE);
                        mapped += mr.len() / FRAME_SIZE;
                        count += 1;
                    } else if !desc.is_valid()
                        && level == 3
                        && desc.flags().contains(EVICTED)
                        && desc.output_address().0 != 0
                    {
                        runs[count] = (desc.output_address().0, 1);
                        count += 1;
                    }
                    Ok(())
                })
                .ok();
            if kept > 0 {
                log::warn!(
                    "mm: {kept} pinned frame(s) of unmapped {start:#x}..{end:#x} are kept, not freed: a device may still use them"
                );
                super::KEPT_PINNED.fetch_add(kept as u64, core::sync::atomic::Ordering::Relaxed);
            }
            if count > 0 || zero || kept > 0 {
                self.unmap(
                    start..end,
                    range.end - range.start > PER_PAGE_INVALIDATION_LIMIT,
                );
                let mut frames_lock = FRAMES.lock();
                let allocator = frames_lock
                    .as_mut()
                    .expect("frame allocator is initialized");
                for &(first, frames) in &runs[..count] {
                    allocator.free_contiguous(first, frames);
                }
                freed += mapped;
            }
            start = end;
        }
        freed
    }
}
