//! The SMMU as the kernel uses it: every PCI device translates through the
//! CPU's own page table (CD.TTB0 = the kernel root, same ASID), every unmap
//! of the memory manager invalidates the SMMU's TLB too, and fault events
//! are drained for the DMA layer.
//!
//! ```text
//!  device DMA at VA ─► SMMU walks the kernel page table ─► PTE invalid
//!      ─► event record + eventq IRQ ─► dma::service()
//!            ─► iommu::drain_faults (one per stream+page) ─► mm::resolve ─► retransmit
//! ```
//!
//! Lock order: the address-space lock may be held when the SMMU lock is
//! taken (the unmap hook), never the reverse.

extern crate alloc;

use crate::sync::IrqSpinLock;
use alloc::vec::Vec;
use core::ops::Range;
use hw::board::Smmuv3;
use hw::gicv2::Trigger;
use hw::mmio::Mmio;
use smmu::fault::FaultSet;
use smmu::v3::{CdParams, Config, Error, QueueMemory, Smmu};

pub use smmu::{Access as DeviceAccess, Fault};

/// The kernel's ASID (the page table's), which the SMMU shares.
const ASID: u16 = 1;

/// Queue and table memory: zeroed contiguous frames, identity-mapped.
struct FrameMemory;

impl QueueMemory for FrameMemory {
    fn alloc(&mut self, bytes: usize, align: usize) -> Option<&'static mut [u64]> {
        let pages = bytes.div_ceil(crate::mm::FRAME_SIZE);
        let start = crate::mm::alloc_contiguous(pages, align.max(crate::mm::FRAME_SIZE)).ok()?;
        let len = pages * crate::mm::FRAME_SIZE / 8;
        // SAFETY: the frames were just allocated to us (never freed: the SMMU
        // owns them for good), identity-mapped as normal memory, and we zero
        // them before handing them out.
        unsafe {
            core::ptr::write_bytes(start as *mut u8, 0, len * 8);
            Some(core::slice::from_raw_parts_mut(start as *mut u64, len))
        }
    }
}

static SMMU: IrqSpinLock<Option<Smmu<Mmio, FrameMemory>>> = IrqSpinLock::new(None);
static BOARD_SMMU: IrqSpinLock<Option<(usize, u32, u32)>> = IrqSpinLock::new(None);

fn context() -> CdParams {
    CdParams {
        ttb0: crate::mm::kernel_root() as u64,
        t0sz: (64 - crate::arch::VA_BITS) as u8,
        asid: ASID,
        mair: crate::arch::MAIR,
        ips_bits: 40,
    }
}

fn bring_up(base: usize, eventq_log2: u32) -> Result<(), Error> {
    // SAFETY: the board names the SMMU's 128 KiB register block, which the
    // kernel table maps as device memory.
    let regs = unsafe { Mmio::new(base, smmu::v3::regs::MMIO_SIZE) };
    let config = Config {
        eventq_log2,
        ..Config::pci_root_bus()
    };
    let mut smmu = Smmu::new(regs, FrameMemory, config)?;
    for f in crate::pci::functions() {
        smmu.attach(f.bdf.requester_id() as u32, &context())?;
    }
    *SMMU.lock() = Some(smmu);
    Ok(())
}

/// Brings the SMMU up, attaches every PCI function found at boot, and hooks
/// interrupts and the memory manager's unmaps.
pub(crate) fn init(board: &Smmuv3) {
    if let Err(e) = bring_up(board.base, Config::pci_root_bus().eventq_log2) {
        log::error!("SMMU: {e:?}; devices keep untranslated (failing) DMA");
        return;
    }
    *BOARD_SMMU.lock() = Some((board.base, board.eventq_intid, board.gerror_intid));
    for intid in [board.eventq_intid, board.gerror_intid] {
        // The SMMU's wired interrupts are pulses: edge-triggered, or lost.
        if let Err(e) = crate::irq::register(intid, Trigger::Edge, crate::dma::service_from_irq) {
            log::error!("SMMU interrupt {intid}: {e:?}");
        }
    }
    crate::mm::set_unmap_hook(invalidate);
}

/// Whether an SMMU translates device DMA on this machine.
pub fn present() -> bool {
    SMMU.lock().is_some()
}

/// Re-initializes the SMMU with an event queue of 2^`log2` entries (tests
/// use a tiny one to force overflows). Attached streams are attached again.
pub fn set_event_queue_size(log2: u32) -> Result<(), Error> {
    let Some((base, ..)) = *BOARD_SMMU.lock() else {
        return Ok(());
    };
    *SMMU.lock() = None;
    bring_up(base, log2)
}

/// Cuts device stream `stream` off from memory for good: its STE aborts
/// every access from now on, and every cached translation of the kernel's
/// ASID is dropped (QEMU passes that on to device-side IOTLB caches such as
/// the RDMA engine's), so not even a translation cached before reaches
/// memory. For a device that stopped answering while it held buffers: once
/// this returns, those buffers can be reused.
pub fn cut_off(stream: u32) -> Result<(), Error> {
    let mut smmu = SMMU.lock();
    let Some(smmu) = smmu.as_mut() else {
        return Ok(());
    };
    smmu.detach(stream)?;
    smmu.invalidate_asid(ASID)
}

/// The memory manager's unmap hook: drop the SMMU's cached translations.
fn invalidate(range: Range<usize>) {
    if let Some(smmu) = SMMU.lock().as_mut() {
        if let Err(e) = smmu.invalidate_range(ASID, range.start as u64..range.end as u64) {
            log::error!(
                "SMMU invalidation of {:#x}..{:#x} failed: {e:?}",
                range.start,
                range.end
            );
        }
    }
}

/// What one drain of the SMMU found.
#[derive(Debug, Default)]
pub struct Drained {
    /// Distinct faults (one per stream, page and access).
    pub faults: Vec<Fault>,
    /// Records were dropped (event queue overflow), or more distinct faults
    /// arrived than one drain keeps: the fault list is incomplete.
    pub events_lost: bool,
    /// Event records read.
    pub records: usize,
    /// Of those, records that repeated the fault before them (not decoded).
    pub repeats: usize,
}

/// Distinct faults one drain keeps; past that the drain reports lost
/// events, whose recovery covers every in-flight transfer anyway.
const DRAIN_CAPACITY: usize = 1024;

/// The faults of one drain (one per stream, page and access), filled while
/// the SMMU lock is held: it never allocates, because growing the heap maps
/// pages, which takes the address-space lock, whose holders (unmaps) take
/// the SMMU lock.
static FAULT_SET: IrqSpinLock<FaultSet<DRAIN_CAPACITY>> = IrqSpinLock::new(FaultSet::new());

/// Takes every pending fault event and the global error state.
pub fn drain() -> Drained {
    let mut out = Drained::default();
    let mut set = FAULT_SET.lock();
    set.clear();
    {
        let mut guard = SMMU.lock();
        let Some(smmu) = guard.as_mut() else {
            return out;
        };
        let mut others = 0;
        let mut first_other = None;
        loop {
            let d = smmu.drain_faults_dedup(&mut set);
            out.records += d.records;
            out.repeats += d.repeats;
            out.events_lost |= d.events_lost;
            others += d.other_events;
            first_other = first_other.or(d.first_other);
            if !d.more_pending {
                break;
            }
        }
        let gerror = smmu.check_gerror();
        out.events_lost |= gerror.events_lost || set.overflowed();
        drop(guard);
        if let Some(other) = first_other {
            log::warn!("SMMU: {others} non-fault event(s), first: {other:?}");
        }
        if gerror.active != 0 && !gerror.events_lost {
            log::error!("SMMU global error: {gerror:?}");
        }
    }
    // Outside the SMMU lock: allocating is fine here.
    out.faults = set.iter().collect();
    out
}
