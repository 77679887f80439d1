//! The SMMU as the kernel uses it: each confined device (NVMe, edu, the
//! RDMA engine) translates through a view of its own that holds only what
//! it was granted (`view`); other virtio devices share the kernel's table. Every change
//! of the kernel table reaches the views and the SMMU's TLB; fault events
//! are drained for the DMA layer.
//!
//! ```text
//!  device DMA at VA ─► SMMU walks the device's view ─► entry invalid
//!      ─► event record + eventq IRQ ─► dma::service()
//!            ─► iommu::drain ─► granted there? ─ no ─► isolation fault:
//!                    │                               reported, never resolved
//!                   yes ─► mm::resolve ─► copy the leaf into the view ─► retransmit
//! ```
//!
//! Lock order: the address-space lock may be held when the SMMU lock is
//! taken (the hooks), never the reverse.

extern crate alloc;

mod view;

use crate::mm::device_memory::DeviceFrames;
use crate::sync::IrqSpinLock;
use alloc::vec::Vec;
use core::ops::Range;
use core::sync::atomic::{AtomicU64, Ordering};
use hw::board::Smmuv3;
use hw::gicv2::Trigger;
use hw::mmio::Mmio;
use smmu::fault::FaultSet;
use smmu::grants::GrantId;
use smmu::v3::{CdParams, Config, Error, Smmu};
use view::View;

pub use crate::mm::NotGrantable;
pub use smmu::grants::Rights;
pub use smmu::{Access as DeviceAccess, Fault};

/// The kernel's ASID (the page table's), which unconfined devices share.
const ASID: u16 = 1;

/// The driver and the views of the confined devices, under one lock.
struct Iommu {
    smmu: Smmu<Mmio, DeviceFrames>,
    views: Vec<View>,
    /// Streams that share the kernel's table.
    shared: Vec<u32>,
}

impl Iommu {
    fn view(&mut self, stream: u32) -> Option<&mut View> {
        self.views.iter_mut().find(|v| v.stream == stream)
    }
}

/// Has the SMMU drop its cached translations of `range` in `asid`.
fn forget(smmu: &mut Smmu<Mmio, DeviceFrames>, asid: u16, range: Range<usize>) {
    if let Err(e) = smmu.invalidate_range(asid, range.start as u64..range.end as u64) {
        log::error!(
            "SMMU invalidation of {:#x}..{:#x} (ASID {asid}) failed: {e:?}",
            range.start,
            range.end
        );
    }
}

static SMMU: IrqSpinLock<Option<Iommu>> = IrqSpinLock::new(None);
static BOARD_SMMU: IrqSpinLock<Option<(usize, u32, u32)>> = IrqSpinLock::new(None);

/// Device faults refused because the device was not granted the memory.
static ISOLATION_FAULTS: AtomicU64 = AtomicU64::new(0);

fn context(ttb0: usize, asid: u16) -> CdParams {
    CdParams {
        ttb0: ttb0 as u64,
        t0sz: (64 - crate::arch::VA_BITS) as u8,
        asid,
        mair: crate::arch::MAIR,
        ips_bits: 40,
    }
}

/// Whether a PCI function gets a view of its own: the devices whose DMA
/// the kernel drives by virtual address (NVMe, edu, the RDMA engine).
/// Other virtio devices keep the kernel's table: virtio-net does not even
/// go through the SMMU (it moves packets through bounce frames).
fn confined(f: &hw::pci::Function) -> bool {
    f.class == hw::nvme::CLASS
        || (f.vendor, f.device) == (hw::edu::VENDOR, hw::edu::DEVICE)
        || (crate::pci::is_virtio_net(f)
            && crate::pci::virtio_net_mac(f).is_some_and(|m| hw::rdma::is_engine_mac(&m)))
}

fn bring_up(base: usize, eventq_log2: u32, mut views: Vec<View>) -> Result<Iommu, Error> {
    // SAFETY: the board names the SMMU's 128 KiB register block, which the
    // kernel table maps as device memory.
    let regs = unsafe { Mmio::new(base, smmu::v3::regs::MMIO_SIZE) };
    let config = Config {
        eventq_log2,
        ..Config::pci_root_bus()
    };
    let mut smmu = Smmu::new(regs, DeviceFrames, config)?;
    let mut shared = Vec::new();
    for f in crate::pci::functions() {
        let stream = f.bdf.requester_id() as u32;
        if !confined(&f) {
            smmu.attach(stream, &context(crate::mm::kernel_root(), ASID))?;
            shared.push(stream);
            continue;
        }
        if !views.iter().any(|v| v.stream == stream) {
            let asid = ASID + 1 + views.len() as u16;
            match View::new(stream, asid) {
                Ok(v) => views.push(v),
                Err(_) => {
                    log::error!("SMMU: no frame for stream {stream:#x}'s view; it stays cut off");
                    continue;
                }
            }
        }
        let v = views
            .iter()
            .find(|v| v.stream == stream)
            .expect("just made");
        smmu.attach(stream, &context(v.root(), v.asid))?;
    }
    Ok(Iommu {
        smmu,
        views,
        shared,
    })
}

/// Brings the SMMU up, attaches every PCI function found at boot, and hooks
/// interrupts and the memory manager's changes.
pub(crate) fn init(board: &Smmuv3) {
    match bring_up(board.base, Config::pci_root_bus().eventq_log2, Vec::new()) {
        Ok(iommu) => *SMMU.lock() = Some(iommu),
        Err(e) => {
            log::error!("SMMU: {e:?}; devices keep untranslated (failing) DMA");
            return;
        }
    }
    *BOARD_SMMU.lock() = Some((board.base, board.eventq_intid, board.gerror_intid));
    for intid in [board.eventq_intid, board.gerror_intid] {
        // The SMMU's wired interrupts are pulses: edge-triggered, or lost.
        if let Err(e) = crate::irq::register(intid, Trigger::Edge, crate::dma::service_from_irq) {
            log::error!("SMMU interrupt {intid}: {e:?}");
        }
    }
    crate::mm::set_device_hooks(crate::mm::DeviceHooks {
        unmapped: invalidate,
        mapped,
        region_gone,
    });
}

/// Probes the board's MMU-500 (SMMUv2) and logs what is there, without
/// enabling it: no device on the board is attached to it yet, and enabling
/// it would fault every unmatched stream. Reading ID registers at an
/// address nothing answers at is harmless (QEMU `xlnx-zcu102` reads 0 and
/// raises no abort), and all-zero IDs are "no SMMU".
pub(crate) fn probe_mmu500(base: usize) {
    let window = smmu::v2::Config::zynqmp().window;
    // SAFETY: the board names the MMU-500's 128 KiB register block, which
    // the kernel table maps as device memory; the probe only reads it.
    let regs = unsafe { Mmio::new(base, window) };
    match smmu::v2::Mmu500::probe(&regs, window) {
        Ok(f) => log::info!(
            "smmu: MMU-500 at {base:#x}: {} SMRs, {} context banks, {}-bit output",
            f.num_smr,
            f.num_cb,
            f.oas_bits
        ),
        Err(e) => log::info!("smmu: no MMU-500 at {base:#x} ({e})"),
    }
}

/// Whether an SMMU translates device DMA on this machine.
pub fn present() -> bool {
    SMMU.lock().is_some()
}

/// Re-initializes the SMMU with an event queue of 2^`log2` entries (tests
/// use a tiny one to force overflows). Attached streams are attached again,
/// each to the view it had.
pub fn set_event_queue_size(log2: u32) -> Result<(), Error> {
    let Some((base, ..)) = *BOARD_SMMU.lock() else {
        return Ok(());
    };
    let views = SMMU.lock().take().map(|i| i.views).unwrap_or_default();
    *SMMU.lock() = Some(bring_up(base, log2, views)?);
    Ok(())
}

/// Cuts device stream `stream` off from memory for good: its STE aborts
/// every access from now on, and every cached translation it could use is
/// dropped (QEMU passes that on to device-side IOTLB caches such as the
/// RDMA engine's), so not even a translation cached before reaches
/// memory. For a device that stopped answering while it held buffers: once
/// this returns, those buffers can be reused.
pub fn cut_off(stream: u32) -> Result<(), Error> {
    let mut guard = SMMU.lock();
    let Some(iommu) = guard.as_mut() else {
        return Ok(());
    };
    iommu.smmu.detach(stream)?;
    let asid = iommu.view(stream).map_or(ASID, |v| v.asid);
    iommu.smmu.invalidate_asid(asid)
}

/// Why memory could not be granted to a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrantError {
    /// Only whole pages of a region other than the heap can be granted.
    NotGrantable(NotGrantable),
    /// The device holds as many grants as its view keeps.
    TooManyGrants,
    /// No frame was left for the view's tables.
    OutOfMemory,
}

/// Memory a device may reach, with the rights it was given, for as long
/// as this lives: dropping it revokes the grant (the device's view forgets
/// the range, and so does the SMMU's TLB, before the drop returns). Where
/// no SMMU confines the device, holding it changes nothing.
#[must_use = "dropping a grant revokes it at once"]
#[derive(Debug)]
pub struct Grant {
    held: Option<(u32, GrantId)>,
}

impl Grant {
    /// A grant that changes nothing: the device is not confined.
    fn unconfined() -> Self {
        Grant { held: None }
    }
}

impl Drop for Grant {
    fn drop(&mut self) {
        let Some((stream, id)) = self.held.take() else {
            return;
        };
        let mut guard = SMMU.lock();
        let Some(Iommu { smmu, views, .. }) = guard.as_mut() else {
            return;
        };
        let Some(v) = views.iter_mut().find(|v| v.stream == stream) else {
            return;
        };
        let Some((range, _)) = v.grants.revoke(id) else {
            return;
        };
        // What other grants still give stays in the view as it was.
        if let Some(stale) = v.narrow(range.start as usize..range.end as usize) {
            forget(smmu, v.asid, stale);
        }
    }
}

/// Lets device stream `stream` reach `range` (whole pages of one region,
/// not the heap) with `rights`. Pages mapped now are copied into the
/// device's view at once; later ones as they are mapped. Nothing is pinned
/// or touched: pages not present fault for the device as for the CPU.
pub fn grant(stream: u32, range: Range<usize>, rights: Rights) -> Result<Grant, GrantError> {
    // Recorded first, so that a page mapped from now on reaches the view
    // through the `mapped` hook; then checked, and what is mapped already
    // copied, under the address-space lock.
    let id = {
        let mut guard = SMMU.lock();
        let Some(v) = guard.as_mut().and_then(|i| i.view(stream)) else {
            return Ok(Grant::unconfined());
        };
        v.grants
            .grant(range.start as u64..range.end as u64, rights)
            .map_err(|_| GrantError::TooManyGrants)?
    };
    let grant = Grant {
        held: Some((stream, id)),
    };
    let mut out_of_memory = false;
    crate::mm::grant_region_range(range, |page, leaf| {
        let mut guard = SMMU.lock();
        if let Some(v) = guard.as_mut().and_then(|i| i.view(stream)) {
            out_of_memory |= v.mirror(page, leaf).is_err();
        }
    })
    .map_err(GrantError::NotGrantable)?;
    if out_of_memory {
        return Err(GrantError::OutOfMemory);
    }
    Ok(grant)
}

/// Lets device stream `stream` reach the pages of `range`, wherever they
/// are (the heap too), with `rights`, as they are mapped now.
///
/// # Safety
///
/// Until the grant is dropped, the device may read (and, with
/// [`Rights::ReadWrite`], write) every byte of those pages: they must be
/// the caller's, including the rest of a page around a smaller buffer.
pub unsafe fn grant_memory(
    stream: u32,
    range: Range<usize>,
    rights: Rights,
) -> Result<Grant, GrantError> {
    let pages = range.start & !(crate::mm::FRAME_SIZE - 1)
        ..range.end.next_multiple_of(crate::mm::FRAME_SIZE);
    let id = {
        let mut guard = SMMU.lock();
        let Some(v) = guard.as_mut().and_then(|i| i.view(stream)) else {
            return Ok(Grant::unconfined());
        };
        v.grants
            .grant(pages.start as u64..pages.end as u64, rights)
            .map_err(|_| GrantError::TooManyGrants)?
    };
    let grant = Grant {
        held: Some((stream, id)),
    };
    let mut out_of_memory = false;
    let in_region = crate::mm::grant_region_range(pages.clone(), |page, leaf| {
        let mut guard = SMMU.lock();
        if let Some(v) = guard.as_mut().and_then(|i| i.view(stream)) {
            out_of_memory |= v.mirror(page, leaf).is_err();
        }
    });
    if in_region.is_err() {
        // The heap, or RAM outside regions: mapped for good, as it is now.
        for page in pages.step_by(crate::mm::FRAME_SIZE) {
            out_of_memory |= !mirror(stream, page);
        }
    }
    if out_of_memory {
        return Err(GrantError::OutOfMemory);
    }
    Ok(grant)
}

/// Lets `stream` reach a driver's queue memory (identity-mapped frames the
/// driver owns for good), read-write, for good.
pub(crate) fn grant_frames(stream: u32, frames: Range<usize>) -> Result<(), GrantError> {
    let mut guard = SMMU.lock();
    let Some(v) = guard.as_mut().and_then(|i| i.view(stream)) else {
        return Ok(());
    };
    v.grants
        .grant(frames.start as u64..frames.end as u64, Rights::ReadWrite)
        .map_err(|_| GrantError::TooManyGrants)?;
    v.map_frames(frames).map_err(|_| GrantError::OutOfMemory)
}

/// Whether device stream `stream` may do `access` at `va`: granted memory
/// for a confined device; anything for one that shares the kernel table.
pub fn allows(stream: u32, va: usize, access: DeviceAccess) -> bool {
    let mut guard = SMMU.lock();
    let Some(iommu) = guard.as_mut() else {
        return true;
    };
    if iommu.shared.contains(&stream) {
        return true;
    }
    iommu
        .view(stream)
        .is_some_and(|v| v.grants.allows(va as u64, access))
}

/// Counts a device fault on memory the device was not granted, and says
/// so on the console (the first few times).
pub(crate) fn report_isolation_fault(stream: u32, va: usize, access: DeviceAccess) {
    let n = ISOLATION_FAULTS.fetch_add(1, Ordering::Relaxed);
    if n < 8 {
        log::warn!("SMMU: stream {stream:#x} was refused {access:?} at {va:#x}: not granted to it");
    }
}

/// Device faults refused since boot because the memory was not granted.
pub fn isolation_faults() -> u64 {
    ISOLATION_FAULTS.load(Ordering::Relaxed)
}

/// Copies the kernel's mapping of `va`, if there is one, into `stream`'s
/// view as far as its grants allow (after a device fault there was
/// resolved). Does nothing for a shared stream. `false`: no frame was left
/// for a table of the view.
pub(crate) fn mirror(stream: u32, va: usize) -> bool {
    crate::mm::with_leaf(va, |leaf| {
        let mut guard = SMMU.lock();
        match (guard.as_mut().and_then(|i| i.view(stream)), leaf) {
            (Some(v), Some(leaf)) => v.mirror(va, leaf).is_ok(),
            _ => true,
        }
    })
}

/// Whether `stream` would reach the page holding `va` without a fault.
pub(crate) fn reaches(stream: u32, va: usize, write: bool) -> bool {
    let mut guard = SMMU.lock();
    match guard.as_mut().and_then(|i| i.view(stream)) {
        Some(v) => v.maps(va, write),
        None => true,
    }
}

/// Hook: the kernel table changed in `range` (unmapped, evicted,
/// reprotected): the views forget it there, then the SMMU's TLB does.
fn invalidate(range: Range<usize>) {
    let mut guard = SMMU.lock();
    let Some(Iommu {
        smmu,
        views,
        shared,
    }) = guard.as_mut()
    else {
        return;
    };
    for v in views.iter_mut() {
        if v.grants.overlaps(range.start as u64..range.end as u64) {
            if let Some(cleared) = v.clear(range.clone()) {
                forget(smmu, v.asid, cleared);
            }
        }
    }
    if !shared.is_empty() {
        forget(smmu, ASID, range);
    }
}

/// Hook: `leaf` now maps `page` in a region some device was granted part
/// of: the views granted that page get it.
fn mapped(page: usize, leaf: crate::mm::Leaf) {
    let mut guard = SMMU.lock();
    let Some(iommu) = guard.as_mut() else { return };
    for v in iommu.views.iter_mut() {
        if v.grants
            .overlaps(page as u64..page as u64 + crate::mm::FRAME_SIZE as u64)
        {
            // A failure leaves the page out: the device faults and retries.
            let _ = v.mirror(page, leaf);
        }
    }
}

/// Hook: a region is gone; grants inside it end with it.
fn region_gone(range: Range<usize>) {
    let mut guard = SMMU.lock();
    let Some(Iommu { smmu, views, .. }) = guard.as_mut() else {
        return;
    };
    for v in views.iter_mut() {
        if v.grants.revoke_within(range.start as u64..range.end as u64) > 0 {
            if let Some(cleared) = v.clear(range.clone()) {
                forget(smmu, v.asid, cleared);
            }
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
    /// The SMMU queued more records meanwhile: resolve these faults, then
    /// drain again (see `smmu`'s `Drained::more_pending`).
    pub more_pending: bool,
}

/// Distinct faults one drain keeps; past that the drain reports lost
/// events, whose recovery covers every in-flight transfer anyway.
const DRAIN_CAPACITY: usize = 1024;

/// The faults of one drain (one per stream, page and access), filled while
/// the SMMU lock is held: it never allocates, because growing the heap maps
/// pages, which takes the address-space lock, whose holders (unmaps) take
/// the SMMU lock.
static FAULT_SET: IrqSpinLock<FaultSet<DRAIN_CAPACITY>> = IrqSpinLock::new(FaultSet::new());

/// Takes the fault events queued so far and the global error state. The
/// faults go into `reuse` (emptied first), whose memory a caller that
/// drains often hands back each time, so that a drain allocates nothing.
pub fn drain(reuse: Vec<Fault>) -> Drained {
    let mut out = Drained {
        faults: reuse,
        ..Drained::default()
    };
    out.faults.clear();
    let mut set = FAULT_SET.lock();
    set.clear();
    {
        let mut guard = SMMU.lock();
        let Some(smmu) = guard.as_mut().map(|i| &mut i.smmu) else {
            return out;
        };
        let d = smmu.drain_faults_dedup(&mut set);
        out.records = d.records;
        out.repeats = d.repeats;
        out.events_lost = d.events_lost;
        out.more_pending = d.more_pending;
        let (others, first_other) = (d.other_events, d.first_other);
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
    out.faults.extend(set.iter());
    out
}
