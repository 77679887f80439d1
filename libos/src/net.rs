//! Networking: the virtio-net PCI device (driven by `virtio-drivers`) and
//! the `smoltcp` TCP/IP stack, for apps that serve clients.
//!
//! ```text
//!  app ── smoltcp sockets ──► Interface::poll ──► NetDevice (smoltcp phy)
//!                                                  └─► VirtIONet (virtqueues)
//!                                                       └─► bounce frames (device DMA, untranslated)
//! ```
//!
//! A virtio device that does not negotiate ACCESS_PLATFORM (virtio-drivers
//! does not) bypasses QEMU's SMMU and uses physical addresses, so buffers
//! it sees are bounced through identity-mapped frames ([`KernelHal`]).

extern crate alloc;

use crate::mm;
use alloc::vec;
use alloc::vec::Vec;
use core::ptr::NonNull;
use smoltcp::iface::{Config, Interface, SocketSet};
use smoltcp::phy::{self, Device, DeviceCapabilities, Medium};
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, HardwareAddress, IpAddress, IpCidr, Ipv4Address};
use virtio_drivers::device::net::VirtIONet;
use virtio_drivers::transport::pci::PciTransport;
use virtio_drivers::{BufferDirection, Hal, PhysAddr};

pub use smoltcp;

/// DMA memory and address translation for virtio-drivers.
pub struct KernelHal;

fn frames(bytes: usize) -> usize {
    bytes.div_ceil(mm::FRAME_SIZE)
}

/// Single bounce frames kept for reuse. Every frame the NIC sends or
/// receives is bounced, and the frame allocator's search for a free frame
/// grows with the memory in use: with a few tens of MiB resident it
/// dominated the time to send a large reply.
struct BounceCache {
    frames: [usize; BOUNCE_CACHE],
    len: usize,
}

/// Frames the cache holds at most (the virtqueues hold at most 2 x 64
/// buffers at once).
const BOUNCE_CACHE: usize = 160;

static BOUNCES: crate::sync::IrqSpinLock<BounceCache> =
    crate::sync::IrqSpinLock::new(BounceCache {
        frames: [0; BOUNCE_CACHE],
        len: 0,
    });

/// `frames` contiguous, identity-mapped frames for a bounce buffer.
fn bounce_alloc(frames: usize) -> usize {
    if frames == 1 {
        let mut cache = BOUNCES.lock();
        if cache.len > 0 {
            cache.len -= 1;
            return cache.frames[cache.len];
        }
    }
    mm::alloc_contiguous(frames, mm::FRAME_SIZE).expect("frames for a virtio buffer")
}

/// Gives back a bounce buffer from [`bounce_alloc`].
fn bounce_free(pa: usize, frames: usize) {
    if frames == 1 {
        let mut cache = BOUNCES.lock();
        if cache.len < BOUNCE_CACHE {
            let at = cache.len;
            cache.frames[at] = pa;
            cache.len += 1;
            return;
        }
    }
    mm::free_contiguous(pa, frames);
}

// SAFETY: `dma_alloc` returns zeroed, page-aligned, identity-mapped frames
// owned by the caller until `dma_dealloc`; `mmio_phys_to_virt` returns the
// identity mapping of a PCI BAR the kernel maps as device memory; `share`
// copies into bounce frames and `unshare` copies back and releases them.
unsafe impl Hal for KernelHal {
    fn dma_alloc(pages: usize, _direction: BufferDirection) -> (PhysAddr, NonNull<u8>) {
        let pa = mm::alloc_contiguous(pages, mm::FRAME_SIZE).expect("frames for virtio queues");
        // SAFETY: the frames were just allocated and are identity-mapped.
        unsafe { core::ptr::write_bytes(pa as *mut u8, 0, pages * mm::FRAME_SIZE) };
        (
            pa as PhysAddr,
            NonNull::new(pa as *mut u8).expect("frame 0 is never allocated"),
        )
    }

    unsafe fn dma_dealloc(paddr: PhysAddr, _vaddr: NonNull<u8>, pages: usize) -> i32 {
        mm::free_contiguous(paddr as usize, pages);
        0
    }

    unsafe fn mmio_phys_to_virt(paddr: PhysAddr, _size: usize) -> NonNull<u8> {
        NonNull::new(paddr as *mut u8).expect("BARs are never at 0")
    }

    unsafe fn share(buffer: NonNull<[u8]>, direction: BufferDirection) -> PhysAddr {
        let len = buffer.len();
        let pa = bounce_alloc(frames(len));
        if direction != BufferDirection::DeviceToDriver {
            // SAFETY: the caller guarantees the buffer is valid and unshared;
            // the bounce frames are ours and identity-mapped.
            unsafe {
                core::ptr::copy_nonoverlapping(buffer.as_ptr() as *const u8, pa as *mut u8, len)
            };
        }
        pa as PhysAddr
    }

    unsafe fn unshare(paddr: PhysAddr, buffer: NonNull<[u8]>, direction: BufferDirection) {
        let len = buffer.len();
        if direction != BufferDirection::DriverToDevice {
            // SAFETY: as in `share`; the device is done with the bounce frames.
            unsafe {
                core::ptr::copy_nonoverlapping(paddr as *const u8, buffer.as_ptr() as *mut u8, len)
            };
        }
        bounce_free(paddr as usize, frames(len));
    }
}

const QUEUE_SIZE: usize = 64;
const BUFFER_LEN: usize = 2048;

/// The NIC as smoltcp sees it.
pub struct NetDevice {
    nic: VirtIONet<KernelHal, PciTransport, QUEUE_SIZE>,
}

/// A received frame, handed to smoltcp.
pub struct RxToken(Vec<u8>);
/// Room to send one frame.
pub struct TxToken<'a>(&'a mut VirtIONet<KernelHal, PciTransport, QUEUE_SIZE>);

impl phy::RxToken for RxToken {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(&self.0)
    }
}

impl phy::TxToken for TxToken<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut tx = self.0.new_tx_buffer(len);
        let r = f(tx.packet_mut());
        if let Err(e) = self.0.send(tx) {
            log::warn!("virtio-net send: {e:?}");
        }
        r
    }
}

impl Device for NetDevice {
    type RxToken<'a> = RxToken;
    type TxToken<'a> = TxToken<'a>;

    fn receive(&mut self, _now: Instant) -> Option<(RxToken, TxToken<'_>)> {
        if !self.nic.can_recv() {
            return None;
        }
        let buffer = self.nic.receive().ok()?;
        let frame = buffer.packet().to_vec();
        let _ = self.nic.recycle_rx_buffer(buffer);
        Some((RxToken(frame), TxToken(&mut self.nic)))
    }

    fn transmit(&mut self, _now: Instant) -> Option<TxToken<'_>> {
        self.nic.can_send().then(|| TxToken(&mut self.nic))
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = 1514;
        caps
    }
}

/// Why the network could not come up.
#[derive(Debug)]
pub enum NetError {
    /// No virtio-net function on the PCI bus (is `-netdev`/`-device` given?).
    NotFound,
    /// The device refused to initialize.
    Device(virtio_drivers::Error),
    /// The PCI transport could not be set up.
    Transport(virtio_drivers::transport::pci::VirtioPciError),
}

static NET_INTID: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);

/// Set by the NIC's interrupt, cleared by `Net::poll`: frames may be
/// waiting that no poll has seen.
static NET_INTERRUPTED: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// The NIC's INTx is level-triggered and only the driver (owned by the app)
/// can quiet it, so the handler masks it; `Net::poll` acknowledges the
/// device and unmasks. The interrupt's job is to end the app's WFI; if it
/// comes while the app is busy, [`Net::wait`] sees the flag and does not
/// sleep.
fn on_net_interrupt() {
    crate::irq::mask(NET_INTID.load(core::sync::atomic::Ordering::Relaxed));
    NET_INTERRUPTED.store(true, core::sync::atomic::Ordering::Relaxed);
}

/// The interface, its device and the sockets, polled together.
pub struct Net {
    /// The IP interface.
    pub iface: Interface,
    /// The NIC.
    pub device: NetDevice,
    /// The sockets the app created.
    pub sockets: SocketSet<'static>,
}

/// The smoltcp clock: milliseconds since boot.
pub fn now() -> Instant {
    Instant::from_micros(crate::time::uptime().as_micros() as i64)
}

/// Finds the virtio-net device and brings up an interface with QEMU user
/// networking's address (10.0.2.15/24, gateway 10.0.2.2).
pub fn init() -> Result<Net, NetError> {
    let f = crate::pci::functions()
        .into_iter()
        .find(|f| {
            // An RDMA engine looks like a virtio-net function too.
            crate::pci::is_virtio_net(f)
                && !crate::pci::virtio_net_mac(f).is_some_and(|m| hw::rdma::is_engine_mac(&m))
        })
        .ok_or(NetError::NotFound)?;
    let transport = crate::pci::virtio_transport(&f).map_err(NetError::Transport)?;
    let nic = VirtIONet::<KernelHal, PciTransport, QUEUE_SIZE>::new(transport, BUFFER_LEN)
        .map_err(NetError::Device)?;
    let mut nic = nic;
    nic.enable_interrupts();
    let mac = EthernetAddress(nic.mac_address());
    let mut device = NetDevice { nic };
    let mut config = Config::new(HardwareAddress::Ethernet(mac));
    config.random_seed = crate::arch::counter();
    let mut iface = Interface::new(config, &mut device, now());
    iface.update_ip_addrs(|addrs| {
        addrs
            .push(IpCidr::new(IpAddress::v4(10, 0, 2, 15), 24))
            .ok();
    });
    iface
        .routes_mut()
        .add_default_ipv4_route(Ipv4Address::new(10, 0, 2, 2))
        .ok();
    if let Some(intid) = f.intid {
        NET_INTID.store(intid, core::sync::atomic::Ordering::Relaxed);
        if let Err(e) = crate::irq::register(intid, hw::gicv2::Trigger::Level, on_net_interrupt) {
            log::warn!("net: INTx {intid}: {e:?}; polling only");
        }
    }
    log::info!("net: virtio-net {:?}, mac {mac}, 10.0.2.15/24", f.bdf);
    Ok(Net {
        iface,
        device,
        sockets: SocketSet::new(vec![]),
    })
}

impl Net {
    /// Moves packets between the NIC and the sockets, and re-arms the
    /// NIC's interrupt.
    pub fn poll(&mut self) {
        self.poll_with(|_| {});
    }

    /// Like [`poll`](Net::poll), running `after_each` after every received
    /// frame. It exists so an app can keep a small pool of listening
    /// sockets topped up: a SYN claims a listener, and `after_each` puts a
    /// fresh one in its place before the next SYN of a burst is handled
    /// (smoltcp answers a SYN that finds no listener with a reset).
    ///
    /// The device's interrupt is acknowledged before the receive queue is
    /// drained and unmasked after, so a frame arriving in between leaves
    /// the interrupt pending and the next WFI returns at once.
    pub fn poll_with(&mut self, mut after_each: impl FnMut(&mut SocketSet<'static>)) {
        NET_INTERRUPTED.store(false, core::sync::atomic::Ordering::Relaxed);
        self.device.nic.ack_interrupt();
        let now = now();
        self.iface.poll_maintenance(now);
        while self
            .iface
            .poll_ingress_single(now, &mut self.device, &mut self.sockets)
            != smoltcp::iface::PollIngressSingleResult::None
        {
            after_each(&mut self.sockets);
        }
        while self
            .iface
            .poll_egress(now, &mut self.device, &mut self.sockets)
            == smoltcp::iface::PollResult::SocketStateChanged
        {}
        let intid = NET_INTID.load(core::sync::atomic::Ordering::Relaxed);
        if intid != 0 {
            crate::irq::unmask(intid);
        }
    }

    /// How long the app may sleep before smoltcp has timers to run
    /// (retransmissions, delayed ACKs, TIME-WAIT); `None` if it has none.
    /// Frames that arrive meanwhile end the sleep through the NIC's
    /// interrupt.
    pub fn poll_delay(&mut self) -> Option<core::time::Duration> {
        self.iface
            .poll_delay(now(), &self.sockets)
            .map(|d| core::time::Duration::from_micros(d.total_micros()))
    }

    /// Sleeps in WFI until the NIC interrupts or `limit` passes; returns at
    /// once if the NIC interrupted since the last poll (its interrupt is
    /// masked then, so it could not end the WFI). An app's idle wait.
    pub fn wait(&self, limit: core::time::Duration) {
        crate::time::wait_for_interrupt_unless(limit, || {
            NET_INTERRUPTED.load(core::sync::atomic::Ordering::Relaxed)
        });
    }

    /// NIC interrupts taken since boot (0 without a wired interrupt), so
    /// an app can tell whether it is woken by the NIC or by its timeout.
    pub fn interrupts(&self) -> u64 {
        match NET_INTID.load(core::sync::atomic::Ordering::Relaxed) {
            0 => 0,
            intid => crate::irq::taken(intid),
        }
    }
}
