//! The RDMA engine's PCI function: virtio transport, the two queues and
//! their message slots. Nothing here knows about transfers or verbs.
//!
//! ```text
//!  post(wr) ──► slot in TX frames ──► request queue (1) ──► engine
//!  poll()   ◄── slot in RX frames ◄── completion queue (0) ◄┘  (slot re-posted)
//! ```
//!
//! The device negotiates `VIRTIO_F_ACCESS_PLATFORM`, so the engine reaches
//! every address, the rings included, through the SMMU: an address the
//! driver gives it is a virtual address ([`IovaHal`]), and no buffer is
//! bounced.

extern crate alloc;

use crate::mm;
use crate::net::KernelHal;
use alloc::vec::Vec;
use core::ptr::NonNull;
use core::sync::atomic::{fence, Ordering};
use hw::rdma::wire::{
    Completion, WorkRequest, COMPLETION_QUEUE, CQE_SIZE, NET_HDR_SIZE, REQUEST_QUEUE, WR_SIZE,
};
use hw::virtio_tokens::InFlight;
use virtio_drivers::queue::VirtQueue;
use virtio_drivers::transport::pci::PciTransport;
use virtio_drivers::transport::Transport;
use virtio_drivers::{BufferDirection, Hal, PhysAddr};

/// Slots per queue (the queue size).
pub const SLOTS: usize = 64;
/// Bytes reserved per message slot (header + message, rounded up).
const SLOT_BYTES: usize = 128;
const _: () =
    assert!(NET_HDR_SIZE + WR_SIZE <= SLOT_BYTES && NET_HDR_SIZE + CQE_SIZE <= SLOT_BYTES);

bitflags::bitflags! {
    /// The virtio features this driver accepts.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    struct Features: u64 {
        /// Modern virtio (fixed-size net header, little-endian).
        const VERSION_1 = 1 << 32;
        /// Device accesses go through the platform IOMMU (our SMMU).
        const ACCESS_PLATFORM = 1 << 33;
    }
}

/// DMA addresses for a device behind the SMMU: the device address of a
/// buffer is its virtual address. Queue memory is granted to the engine
/// (stream [`ENGINE_STREAM`]) for good as it is allocated.
pub struct IovaHal;

/// The SMMU stream of the engine being opened, whose queues `IovaHal`
/// allocates (one engine per node).
static ENGINE_STREAM: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(u32::MAX);

/// Grants the engine identity-mapped frames it owns for good.
fn grant_queue_frames(start: usize, pages: usize) {
    let stream = ENGINE_STREAM.load(core::sync::atomic::Ordering::Relaxed);
    if let Err(e) = crate::iommu::grant_frames(stream, start..start + pages * mm::FRAME_SIZE) {
        // The engine's accesses there fail as isolation faults: its queue
        // breaks and the verbs report the engine as not responding.
        log::error!("rdma: granting queue frames: {e:?}");
    }
}

// SAFETY: queue memory comes from `KernelHal` (zeroed, identity-mapped,
// pinned frames, so its physical address is also its virtual address, the
// IOVA); `share` hands out the buffer's own virtual address, valid for the
// device for as long as the caller keeps the buffer, which `VirtQueue`'s
// contract requires until `unshare`.
unsafe impl Hal for IovaHal {
    fn dma_alloc(pages: usize, direction: BufferDirection) -> (PhysAddr, NonNull<u8>) {
        let (pa, va) = KernelHal::dma_alloc(pages, direction);
        grant_queue_frames(pa as usize, pages);
        (pa, va)
    }

    unsafe fn dma_dealloc(paddr: PhysAddr, vaddr: NonNull<u8>, pages: usize) -> i32 {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { KernelHal::dma_dealloc(paddr, vaddr, pages) }
    }

    unsafe fn mmio_phys_to_virt(paddr: PhysAddr, size: usize) -> NonNull<u8> {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { KernelHal::mmio_phys_to_virt(paddr, size) }
    }

    unsafe fn share(buffer: NonNull<[u8]>, _direction: BufferDirection) -> PhysAddr {
        buffer.as_ptr() as *mut u8 as usize as PhysAddr
    }

    unsafe fn unshare(_paddr: PhysAddr, _buffer: NonNull<[u8]>, _direction: BufferDirection) {}
}

/// Why the engine could not be brought up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceError {
    /// The transport could not be created.
    Transport,
    /// The engine does not offer translated DMA (ACCESS_PLATFORM), so it
    /// could not reach virtual addresses.
    NoAccessPlatform,
    /// A queue could not be set up.
    Queue,
    /// No frames for the message slots.
    OutOfMemory,
}

/// Fixed message slots in pinned frames: slot `i` is `SLOT_BYTES` at
/// `base + i * SLOT_BYTES`.
struct Slots {
    base: usize,
    /// Slot index of each queue token (descriptor head) in flight.
    by_token: InFlight<u16, SLOTS>,
    free: Vec<u16>,
}

impl Slots {
    fn new() -> Result<Self, DeviceError> {
        let pages = (SLOTS * SLOT_BYTES).div_ceil(mm::FRAME_SIZE);
        let base =
            mm::alloc_contiguous(pages, mm::FRAME_SIZE).map_err(|_| DeviceError::OutOfMemory)?;
        grant_queue_frames(base, pages);
        Ok(Self {
            base,
            by_token: InFlight::new(),
            free: (0..SLOTS as u16).rev().collect(),
        })
    }

    /// The slot of a token the device returned, if the token is one of
    /// ours in flight: the device's word is checked before a queue is
    /// asked to recycle its descriptors.
    fn returned(&self, token: u16) -> Option<u16> {
        self.by_token.peek(token).copied()
    }

    /// The bytes of slot `i`.
    fn slot(&self, i: u16) -> &'static mut [u8] {
        assert!((i as usize) < SLOTS);
        // SAFETY: the slot lies in frames this struct owns for good; each
        // slot is handed to at most one user at a time (the free list / the
        // queue token map), so no two live references overlap.
        unsafe {
            core::slice::from_raw_parts_mut(
                (self.base + i as usize * SLOT_BYTES) as *mut u8,
                SLOT_BYTES,
            )
        }
    }
}

/// The engine's PCI function, initialised and running.
pub struct Device {
    transport: PciTransport,
    requests: VirtQueue<IovaHal, SLOTS>,
    completions: VirtQueue<IovaHal, SLOTS>,
    tx: Slots,
    rx: Slots,
    /// The engine returned a token it was not given: it broke the virtio
    /// protocol and is not used again.
    broken: bool,
}

fn message_len(slot: &[u8], len: usize) -> &[u8] {
    &slot[NET_HDR_SIZE..NET_HDR_SIZE + len]
}

impl Device {
    /// Initialises the engine behind `f` and gives it every completion slot.
    pub fn open(f: &hw::pci::Function) -> Result<Self, DeviceError> {
        ENGINE_STREAM.store(
            f.bdf.requester_id() as u32,
            core::sync::atomic::Ordering::Relaxed,
        );
        let mut transport = crate::pci::virtio_transport(f).map_err(|_| DeviceError::Transport)?;
        let wanted = Features::VERSION_1 | Features::ACCESS_PLATFORM;
        let got = transport.begin_init(wanted);
        if !got.contains(Features::ACCESS_PLATFORM) {
            return Err(DeviceError::NoAccessPlatform);
        }
        let completions =
            VirtQueue::new(&mut transport, COMPLETION_QUEUE, false, false).map_err(|e| {
                log::error!("rdma: completion queue: {e:?}");
                DeviceError::Queue
            })?;
        let mut requests = VirtQueue::new(&mut transport, REQUEST_QUEUE, false, false)
            .map_err(|_| DeviceError::Queue)?;
        // Consumed requests are reclaimed when the next one is posted; an
        // interrupt for them would only wake a waiting core for nothing
        // (and run the DMA service) while its transfer is on the wire. A
        // poster that finds every slot taken asks for it (`post`).
        requests.set_dev_notify(false);
        let mut device = Self {
            transport,
            requests,
            completions,
            tx: Slots::new()?,
            rx: Slots::new()?,
            broken: false,
        };
        while let Some(i) = device.rx.free.pop() {
            device.give_completion_slot(i);
        }
        device.transport.finish_init();
        device.transport.notify(COMPLETION_QUEUE);
        Ok(device)
    }

    fn give_completion_slot(&mut self, i: u16) {
        let slot = self.rx.slot(i);
        // SAFETY: the slot stays valid and untouched by the driver until the
        // device returns it through `pop_used` in `poll`.
        match unsafe { self.completions.add(&[], &mut [slot]) } {
            Ok(token) => {
                if self.rx.by_token.insert(token, i).is_err() {
                    log::error!("rdma: completion token {token} already in flight");
                    self.rx.free.push(i);
                }
            }
            Err(e) => {
                log::error!("rdma: completion slot {i} not queued: {e:?}");
                self.rx.free.push(i);
            }
        }
    }

    /// Takes back request slots the engine has consumed.
    fn reclaim_requests(&mut self) {
        while let Some(token) = self.requests.peek_used() {
            let Some(i) = self.tx.returned(token) else {
                self.disable("request", token);
                return;
            };
            let slot = self.tx.slot(i);
            // SAFETY: `token` was returned by `add` for exactly this slot.
            if unsafe { self.requests.pop_used(token, &[slot], &mut []) }.is_err() {
                return;
            }
            self.tx.by_token.take(token);
            self.tx.free.push(i);
        }
    }

    /// Hands `wr` to the engine. `false` if every request slot is in use
    /// (the engine has not consumed them yet); try again later.
    pub fn post(&mut self, wr: &WorkRequest) -> bool {
        if self.broken {
            return false;
        }
        self.reclaim_requests();
        if self.tx.free.is_empty() {
            // Wake the poster's wait when the engine frees a slot; checked
            // again after asking, so a slot freed meanwhile is not missed.
            self.requests.set_dev_notify(true);
            fence(Ordering::SeqCst);
            self.reclaim_requests();
        }
        let Some(i) = self.tx.free.pop() else {
            return false;
        };
        self.requests.set_dev_notify(false);
        let slot = self.tx.slot(i);
        slot[..NET_HDR_SIZE].fill(0);
        slot[NET_HDR_SIZE..NET_HDR_SIZE + WR_SIZE].copy_from_slice(&wr.encode());
        let len = NET_HDR_SIZE + WR_SIZE;
        // SAFETY: the slot is not touched again until `reclaim_requests`
        // pops its token.
        match unsafe { self.requests.add(&[&slot[..len]], &mut []) } {
            Ok(token) => {
                if self.tx.by_token.insert(token, i).is_err() {
                    log::error!("rdma: request token {token} already in flight");
                    self.tx.free.push(i);
                    return false;
                }
                if self.requests.should_notify() {
                    self.transport.notify(REQUEST_QUEUE);
                }
                true
            }
            Err(_) => {
                self.tx.free.push(i);
                false
            }
        }
    }

    /// Stops using an engine that returned `token` on the `queue` queue,
    /// which names no slot in flight there.
    fn disable(&mut self, queue: &str, token: u16) {
        log::error!(
            "rdma: the engine returned {queue} token {token}, which it was not given; the engine is disabled"
        );
        self.broken = true;
    }

    /// Whether the engine has returned a completion not taken yet (a read
    /// of the used ring's index, no device access): what a waiter spins on.
    pub fn completion_waiting(&self) -> bool {
        !self.broken && self.completions.can_pop()
    }

    /// Asks the engine for an interrupt per completion (`true`, the
    /// default) or spares it and the guest that (`false`, while a core
    /// spins on [`Device::completion_waiting`]). Turning them back on is
    /// ordered before any later look at the used ring, so a completion
    /// the engine returned while they were off is found by that look.
    pub fn completion_interrupts(&mut self, on: bool) {
        self.completions.set_dev_notify(on);
        fence(Ordering::SeqCst);
    }

    /// Acknowledges the device's interrupt (INTx is level-triggered: this
    /// lowers it).
    pub fn ack_interrupt(&mut self) {
        self.transport.ack_interrupt();
    }

    /// Passes every completion the engine has posted to `each`, and gives
    /// the slots back to the engine.
    pub fn poll(&mut self, mut each: impl FnMut(Completion)) {
        let mut returned = false;
        if self.broken {
            return;
        }
        while let Some(token) = self.completions.peek_used() {
            let Some(i) = self.rx.returned(token) else {
                self.disable("completion", token);
                break;
            };
            let slot = self.rx.slot(i);
            // SAFETY: `token` was returned by `add` for exactly this slot.
            let Ok(len) = (unsafe { self.completions.pop_used(token, &[], &mut [slot]) }) else {
                break;
            };
            self.rx.by_token.take(token);
            let slot = self.rx.slot(i);
            match (len as usize).checked_sub(NET_HDR_SIZE) {
                Some(n) if n >= CQE_SIZE => {
                    if let Some(c) = Completion::decode(message_len(slot, CQE_SIZE)) {
                        each(c);
                    }
                }
                _ => log::warn!("rdma: short completion ({len} bytes) ignored"),
            }
            self.give_completion_slot(i);
            returned = true;
        }
        if returned && self.completions.should_notify() {
            self.transport.notify(COMPLETION_QUEUE);
        }
    }
}
