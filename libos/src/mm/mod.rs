//! The memory manager: physical frames, the kernel page table, regions of
//! virtual memory, the heap, and the one function that resolves page faults.
//!
//! ```text
//!  CPU data abort ──┐                         ┌─ demand-zero region: take a frame,
//!                   ├─► mm::resolve(addr, ──► │  zero it, map it, return Ok
//!  SMMU fault event ┘       access)           ├─ huge-page region, read of a block
//!                                             │  never written: map the shared zero
//!                                             │  block read-only; its first write
//!                                             │  gets a zeroed block of its own
//!                                             └─ anything else: Err(FaultError)
//! ```
//!
//! `resolve` takes no CPU exception context, so the CPU's abort handler and
//! the SMMU's event handler share it.

pub mod boot_map;
pub mod frame;
pub mod layout;
pub mod regions;

#[cfg(target_os = "none")]
pub mod device_memory;
#[cfg(target_os = "none")]
mod heap;
#[cfg(target_os = "none")]
mod region;
#[cfg(target_os = "none")]
mod resolve;
#[cfg(target_os = "none")]
mod space;
#[cfg(target_os = "none")]
mod zeroed;

#[cfg(target_os = "none")]
pub use region::{pin, unpin, Region};
#[cfg(target_os = "none")]
pub use resolve::{resolve, Resolution};
#[cfg(target_os = "none")]
pub use space::BLOCK_SIZE;
#[cfg(target_os = "none")]
pub use zeroed::{refill as refill_zeroed_frames, PER_CORE as ZEROED_FRAMES_PER_CORE};

pub use crate::arch::esr::Access;
pub use frame::{OutOfFrames, FRAME_SIZE};

use core::fmt;

/// Why a fault could not be resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultError {
    /// The address belongs to no region (a wild pointer, or a guard).
    NoRegion,
    /// The region's pages are mapped by its owner, not on demand.
    NotDemandPaged,
    /// The region does not allow this access.
    PermissionDenied(Access),
    /// No frame is left to back the page.
    OutOfFrames,
}

impl fmt::Display for FaultError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            FaultError::NoRegion => f.write_str("address is in no region"),
            FaultError::NotDemandPaged => f.write_str("region is not demand-paged"),
            FaultError::PermissionDenied(a) => write!(f, "region does not allow {a:?} access"),
            FaultError::OutOfFrames => f.write_str("out of physical memory frames"),
        }
    }
}

/// Why a memory-manager request failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MmError {
    /// No frame is left.
    OutOfFrames,
    /// No virtual range of that size is free.
    NoAddressSpace,
    /// Too many regions exist.
    TooManyRegions,
    /// The range is not inside the region.
    OutOfRange,
    /// A page is pinned too many times over.
    TooManyPins,
    /// A page could not be made resident.
    Fault(FaultError),
}

impl From<FaultError> for MmError {
    fn from(e: FaultError) -> Self {
        match e {
            FaultError::OutOfFrames => MmError::OutOfFrames,
            e => MmError::Fault(e),
        }
    }
}

impl fmt::Display for MmError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            MmError::OutOfFrames => f.write_str("out of physical memory frames"),
            MmError::NoAddressSpace => f.write_str("no free virtual address range that large"),
            MmError::TooManyRegions => f.write_str("too many regions"),
            MmError::OutOfRange => f.write_str("range lies outside the region"),
            MmError::TooManyPins => f.write_str("page pinned too many times"),
            MmError::Fault(e) => write!(f, "cannot make a page resident: {e}"),
        }
    }
}

impl From<OutOfFrames> for MmError {
    fn from(_: OutOfFrames) -> Self {
        MmError::OutOfFrames
    }
}

impl From<regions::ReserveError> for MmError {
    fn from(e: regions::ReserveError) -> Self {
        match e {
            regions::ReserveError::NoAddressSpace => MmError::NoAddressSpace,
            regions::ReserveError::TooManyRegions => MmError::TooManyRegions,
        }
    }
}

/// Memory figures for `hello` and the benchmarks.
#[derive(Clone, Copy, Debug, Default)]
pub struct MemoryStats {
    /// Frames of RAM the allocator manages.
    pub total_frames: usize,
    /// Frames not in use (those kept zeroed for faults included).
    pub free_frames: usize,
    /// Demand faults resolved since boot (zero-fill and swap-in).
    pub demand_faults: u64,
    /// Pages brought back from the backing store since boot.
    pub swap_ins: u64,
    /// Pages evicted to the backing store since boot.
    pub evictions: u64,
    /// Bytes of heap in use.
    pub heap_used: usize,
    /// Bytes of heap mapped.
    pub heap_mapped: usize,
    /// Pinned frames of dropped or discarded memory kept out of the
    /// allocator, because a device might still use them.
    pub kept_pinned_frames: u64,
}

#[cfg(target_os = "none")]
pub use kernel::*;

#[cfg(target_os = "none")]
mod kernel {
    use super::frame::{FrameAllocator, FRAME_SIZE};
    use super::layout;
    use super::space::{AddressSpace, Attrs};
    use super::*;
    use crate::sync::IrqSpinLock;
    use core::ops::Range;
    use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    use hw::layout::MAX_CORES;

    /// The frame allocator (lock order: after `SPACE`).
    pub(super) static FRAMES: IrqSpinLock<Option<FrameAllocator<'static>>> = IrqSpinLock::new(None);
    /// The address space (lock order: after the heap, before `FRAMES`).
    pub(super) static SPACE: IrqSpinLock<Option<AddressSpace>> = IrqSpinLock::new(None);
    static KERNEL_ROOT: AtomicUsize = AtomicUsize::new(0);
    pub(super) static DEMAND_FAULTS: AtomicU64 = AtomicU64::new(0);
    pub(super) static SWAP_INS: AtomicU64 = AtomicU64::new(0);
    pub(super) static EVICTIONS: AtomicU64 = AtomicU64::new(0);
    /// Pinned frames of unmapped ranges kept out of the allocator.
    pub(super) static KEPT_PINNED: AtomicU64 = AtomicU64::new(0);
    /// What the SMMU driver hears of the kernel table's changes, to keep
    /// its translation caches and the devices' views in step.
    #[derive(Clone, Copy)]
    pub struct DeviceHooks {
        /// Pages of `range` were unmapped or changed, after the CPU TLBs
        /// forgot them and before their frames are reused.
        pub unmapped: fn(Range<usize>),
        /// `leaf` now maps the page at `va`, in a region some device was
        /// granted part of (called with the address-space lock held).
        pub mapped: fn(usize, Leaf),
        /// The region covering `range` is gone: grants inside it end.
        pub region_gone: fn(Range<usize>),
    }

    static DEVICE_HOOKS: IrqSpinLock<Option<DeviceHooks>> = IrqSpinLock::new(None);

    /// Registers the SMMU driver's [`DeviceHooks`].
    pub fn set_device_hooks(hooks: DeviceHooks) {
        *DEVICE_HOOKS.lock() = Some(hooks);
    }

    fn hooks() -> Option<DeviceHooks> {
        *DEVICE_HOOKS.lock()
    }

    /// One mapping of the kernel table: a 4 KiB page or a 2 MiB block.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Leaf {
        /// First virtual address it maps.
        pub va: usize,
        /// Physical address of its first byte.
        pub pa: usize,
        /// 4 KiB or 2 MiB.
        pub len: usize,
        /// Whether stores are allowed.
        pub writable: bool,
    }

    /// The attribute bits of a leaf descriptor for normal memory (read-only
    /// unless `writable`), as the kernel table writes them: the devices'
    /// views use the same memory type.
    pub fn device_leaf_attrs(writable: bool) -> u64 {
        let attrs = if writable {
            Attrs::ReadWrite
        } else {
            Attrs::ReadOnly
        };
        attrs.bits().bits() as u64
    }

    /// Tells the hooks that `page` of `region` was just mapped, if a device
    /// was granted part of the region. Called with `SPACE` held.
    pub(super) fn after_map(space: &AddressSpace, region: &regions::RegionInfo, page: usize) {
        if !region.device_visible {
            return;
        }
        if let (Some(h), Some(leaf)) = (hooks(), space.leaf(page)) {
            (h.mapped)(page, leaf);
        }
    }

    /// Why memory cannot be granted to a device.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum NotGrantable {
        /// The range is empty, not page-aligned, or not inside one region.
        NotInOneRegion,
        /// The range is in the heap, whose pages hold everyone's objects.
        Heap,
    }

    /// Checks that `range` may be granted to a device (page-aligned, in one
    /// region that is not the heap), marks the region device-visible, and
    /// hands `each` every mapping the range has now, with `SPACE` held so
    /// that none changes meanwhile.
    pub fn grant_region_range(
        range: Range<usize>,
        mut each: impl FnMut(usize, Leaf),
    ) -> Result<(), NotGrantable> {
        let aligned =
            range.start.is_multiple_of(FRAME_SIZE) && range.end.is_multiple_of(FRAME_SIZE);
        with_space(|s| {
            let region = s
                .find_region(range.start)
                .filter(|r| aligned && !range.is_empty() && range.end <= r.start + r.len)
                .ok_or(NotGrantable::NotInOneRegion)?;
            if region.backing == regions::Backing::Explicit {
                return Err(NotGrantable::Heap);
            }
            s.regions.set_device_visible(region.start);
            s.low_regions.set_device_visible(region.start);
            let mut page = range.start;
            while page < range.end {
                match s.leaf(page) {
                    Some(leaf) => {
                        each(page, leaf);
                        page = if leaf.len > FRAME_SIZE {
                            (leaf.va + leaf.len).min(range.end)
                        } else {
                            page + FRAME_SIZE
                        };
                    }
                    None => page += FRAME_SIZE,
                }
            }
            Ok(())
        })
    }

    /// Runs `f` on the mapping holding `va`, with `SPACE` held so that it
    /// cannot change meanwhile (a device fault's resolution copies it to
    /// the device's view this way).
    pub fn with_leaf<R>(va: usize, f: impl FnOnce(Option<Leaf>) -> R) -> R {
        with_space(|s| f(s.leaf(va)))
    }

    /// The region that held `range` is gone (its pages are unmapped).
    pub(super) fn region_gone(range: Range<usize>) {
        if let Some(h) = hooks() {
            (h.region_gone)(range);
        }
    }

    /// Fills `count` contiguous frames with zeros through the identity map.
    pub(super) fn zero_frames(first: usize, count: usize) {
        // SAFETY: the frames were just taken from the allocator, so nothing
        // else refers to them, and RAM is identity-mapped read-write.
        unsafe { crate::arch::zero(first, count * FRAME_SIZE) };
    }

    /// Copies one frame's contents to another through the identity map.
    pub(super) fn copy_frame(from: usize, to: usize) {
        // SAFETY: both frames are allocated to the caller, distinct, and
        // identity-mapped read-write; nothing else accesses them meanwhile.
        unsafe { core::ptr::copy_nonoverlapping(from as *const u8, to as *mut u8, FRAME_SIZE) };
    }

    /// Called after pages were unmapped and the CPU TLBs invalidated: other
    /// translation caches (the SMMU's) hear of it here.
    pub(super) fn after_unmap(range: Range<usize>) {
        if let Some(h) = hooks() {
            (h.unmapped)(range);
        }
    }

    /// Runs `f` on the frame allocator.
    pub(super) fn with_frames<R>(f: impl FnOnce(&mut FrameAllocator<'static>) -> R) -> R {
        f(FRAMES
            .lock()
            .as_mut()
            .expect("memory manager is initialized"))
    }

    /// Runs `f` on the address space.
    pub(super) fn with_space<R>(f: impl FnOnce(&mut AddressSpace) -> R) -> R {
        f(SPACE
            .lock()
            .as_mut()
            .expect("memory manager is initialized"))
    }

    /// Sets up frames, the kernel page table (W^X image, guard pages, RAM,
    /// MMIO), switches this core to it, and starts the heap. `ram` is the
    /// RAM range holding the image; `keep` lists ranges (the DTB) to leave alone.
    pub fn init(ram: Range<usize>, keep: &[Range<usize>]) {
        let image = layout::image();
        let frames = (ram.end - ram.start) / FRAME_SIZE;
        let bitmap_start = image.image.end.next_multiple_of(FRAME_SIZE);
        let words = FrameAllocator::bitmap_words(frames);
        let bitmap_end = (bitmap_start + words * 8).next_multiple_of(FRAME_SIZE);
        assert!(bitmap_end <= ram.end, "RAM too small for the frame bitmap");
        // SAFETY: the bitmap lies in RAM after the image, which no Rust object
        // occupies; the frame allocator reserves it below so it is never reused.
        let bitmap = unsafe { core::slice::from_raw_parts_mut(bitmap_start as *mut u64, words) };
        let mut allocator = FrameAllocator::new(ram.start, frames, bitmap);
        allocator.add_free(ram.clone());
        allocator.reserve(0..FRAME_SIZE);
        allocator.reserve(image.image.clone());
        allocator.reserve(bitmap_start..bitmap_end);
        for range in keep {
            allocator.reserve(range.clone());
        }
        *FRAMES.lock() = Some(allocator);

        let mut space = AddressSpace::new();
        let map = |space: &mut AddressSpace, range: Range<usize>, attrs| {
            if !range.is_empty() {
                space
                    .map_identity(range.clone(), attrs)
                    .unwrap_or_else(|e| {
                        panic!("cannot map {:#x}..{:#x}: {e}", range.start, range.end)
                    });
            }
        };
        map(&mut space, image.text.clone(), Attrs::Text);
        map(&mut space, image.rodata.clone(), Attrs::ReadOnly);
        map(&mut space, image.data.clone(), Attrs::ReadWrite);
        for core in 0..MAX_CORES {
            let stacks = layout::core_stacks(image.stacks.start, core);
            map(&mut space, stacks.thread, Attrs::ReadWrite);
            map(&mut space, stacks.exception, Attrs::ReadWrite);
        }
        map(
            &mut space,
            ram.start.max(FRAME_SIZE)..image.image.start,
            Attrs::ReadWrite,
        );
        map(&mut space, image.image.end..ram.end, Attrs::ReadWrite);
        for device in hw::board::CURRENT.devices {
            map(&mut space, device.clone(), Attrs::Device);
        }
        let root = space.root();
        KERNEL_ROOT.store(root, Ordering::Release);
        // SAFETY: the new table maps the image, stacks, RAM and MMIO at the
        // same addresses as the boot map, so everything in use stays valid.
        unsafe { crate::arch::switch_page_table(root, super::space::KERNEL_ASID) };
        space.mark_active();
        *SPACE.lock() = Some(space);
        heap::init();
    }

    /// Switches a secondary core from the boot map to the kernel table.
    pub fn init_secondary() {
        let root = KERNEL_ROOT.load(Ordering::Acquire);
        assert_ne!(root, 0, "boot core builds the kernel table first");
        // SAFETY: as in `init`: the kernel table is complete and identical to
        // the boot map for everything this core uses.
        unsafe { crate::arch::switch_page_table(root, super::space::KERNEL_ASID) };
    }

    /// Physical address of the kernel page table's root (for the SMMU).
    pub fn kernel_root() -> usize {
        KERNEL_ROOT.load(Ordering::Acquire)
    }

    /// Whether no memory is or can ever be at `range`: it lies outside the
    /// windows regions are handed out from, and no page of it is mapped
    /// now (RAM, the image and device windows are mapped at boot). What a
    /// device does there reaches nothing: its faults cannot be resolved.
    pub fn backs_nothing(range: Range<usize>) -> bool {
        let outside = |w: &Range<usize>| range.end <= w.start || range.start >= w.end;
        let low = hw::board::CURRENT.low_dma_window.clone().unwrap_or(0..0);
        if range.is_empty() || !outside(&layout::REGION_WINDOW) || !outside(&low) {
            return false;
        }
        let first = range.start / FRAME_SIZE * FRAME_SIZE;
        with_space(|s| {
            (first..range.end)
                .step_by(FRAME_SIZE)
                .all(|page| s.translate(page).is_none())
        })
    }

    /// The physical address `va` maps to, if it is mapped.
    pub fn translate(va: usize) -> Option<usize> {
        with_space(|s| s.translate(va))
    }

    /// The frame behind the page at `va` if a device without an SMMU may
    /// use it: a pinned page of a region (it cannot move or go), or RAM the
    /// kernel allocated outside regions and outside the kernel image.
    /// `None` for anything else: a device that moves physical addresses
    /// must not reach it.
    pub fn dma_frame(va: usize) -> Option<usize> {
        let image = layout::image().image;
        with_space(|s| match s.find_region(va) {
            Some(_) => match s.page_state(va) {
                super::space::PageState::Mapped {
                    pa,
                    pins,
                    shared_zero: false,
                    ..
                } if pins > 0 => Some(pa),
                _ => None,
            },
            None if image.contains(&va) => None,
            None => s
                .translate(va)
                .filter(|&pa| with_frames(|f| f.range().contains(&pa))),
        })
    }

    /// Whether an access to `va` would succeed without a fault: the page is
    /// mapped, and writable if `write`.
    pub fn accessible(va: usize, write: bool) -> bool {
        with_space(|s| s.translate(va).is_some() && (!write || s.is_writable(va)))
    }

    /// Current memory figures.
    pub fn stats() -> MemoryStats {
        let (total_frames, free_frames) = with_frames(|f| (f.total(), f.free_count()));
        let free_frames = free_frames + super::zeroed::pooled();
        let (heap_used, heap_mapped) = heap::usage();
        MemoryStats {
            total_frames,
            free_frames,
            demand_faults: DEMAND_FAULTS.load(Ordering::Relaxed),
            swap_ins: SWAP_INS.load(Ordering::Relaxed),
            evictions: EVICTIONS.load(Ordering::Relaxed),
            kept_pinned_frames: KEPT_PINNED.load(Ordering::Relaxed),
            heap_used,
            heap_mapped,
        }
    }

    /// Allocates one frame (for tests and drivers that need physical memory).
    pub fn alloc_frame() -> Result<usize, OutOfFrames> {
        with_frames(|f| f.alloc())
    }

    /// Returns a frame from [`alloc_frame`].
    pub fn free_frame(frame: usize) {
        with_frames(|f| f.free(frame))
    }

    /// Allocates `count` contiguous frames aligned to `align` bytes.
    pub fn alloc_contiguous(count: usize, align: usize) -> Result<usize, OutOfFrames> {
        with_frames(|f| f.alloc_contiguous(count, align))
    }

    /// Returns frames from [`alloc_contiguous`].
    pub fn free_contiguous(frame: usize, count: usize) {
        with_frames(|f| f.free_contiguous(frame, count))
    }

    /// Makes every page of `range` (inside one region) present: evicted
    /// pages come back with their contents, never-mapped ones are zeroed.
    /// A request that cannot fit in the free frames fails before touching
    /// anything; if frames run out midway anyway (another core allocated),
    /// the pages made present so far stay so.
    pub(super) fn populate(range: Range<usize>) -> Result<(), MmError> {
        with_space(|space| {
            let region = space.find_region(range.start).ok_or(MmError::OutOfRange)?;
            let needed =
                (range.end - range.start) / FRAME_SIZE - space.resident_pages(range.clone());
            let free =
                || with_frames(|f| f.free_count()).saturating_sub(super::frame::TABLE_RESERVE);
            if needed > free() {
                super::zeroed::drain();
                if needed > free() {
                    return Err(MmError::OutOfFrames);
                }
            }
            for page in range.step_by(FRAME_SIZE) {
                super::resolve::make_present(space, &region, page, super::resolve::Need::OwnFrame)?;
            }
            Ok(())
        })
    }
}
