//! Networking: the virtio-net PCI device and the `smoltcp` TCP/IP stack,
//! for apps that serve clients.
//!
//! ```text
//!  app ── smoltcp sockets ──► Interface::poll ──► NetDevice (smoltcp phy)
//!                                                  ├─► VirtIONetRaw (virtqueues, qemu-virt)
//!                                                  │    └─► packet buffers (identity-mapped frames)
//!                                                  └─► GemNic: the ZynqMP's Cadence GEM (zcu102),
//!                                                       rings and buffers in identity-mapped frames
//! ```
//!
//! A virtio device that does not negotiate ACCESS_PLATFORM (virtio-drivers
//! does not) bypasses QEMU's SMMU and uses physical addresses. The driver
//! therefore keeps every packet in identity-mapped frames of its own
//! ([`PacketBuffers`]): smoltcp reads received frames and writes frames to
//! send in place, and the device gets their addresses, with no copy.
//!
//! Sending does not wait for the device: a frame is queued (the device is
//! notified only when it asks to be) and its buffer is taken back once the
//! device has used it, so a burst of segments is one hand-over, not one
//! round trip to QEMU's I/O thread per segment.

extern crate alloc;

use crate::mm;
use crate::mm::device_memory::{self, DeviceFrames};
use alloc::vec;
use alloc::vec::Vec;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicUsize, Ordering};
use hw::dma_memory::DmaAllocator;
use hw::virtio_tokens::InFlight;
use smoltcp::iface::{Config, Interface, SocketSet};
use smoltcp::phy::{self, Device, DeviceCapabilities, Medium};
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, HardwareAddress, IpAddress, IpCidr, Ipv4Address};
use virtio_drivers::device::net::VirtIONetRaw;
use virtio_drivers::transport::pci::PciTransport;
use virtio_drivers::{BufferDirection, Hal, PhysAddr};

mod gem;
mod nic_transport;

pub use smoltcp;

/// DMA memory and address translation for virtio-drivers.
pub struct KernelHal;

fn frames(bytes: usize) -> usize {
    bytes.div_ceil(mm::FRAME_SIZE)
}

/// Where the NIC's packet buffers are (start, end): buffers there are
/// identity-mapped frames the device may use directly.
static PACKET_POOL: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];

fn in_packet_pool(buffer: NonNull<[u8]>) -> bool {
    let start = buffer.as_ptr() as *mut u8 as usize;
    start >= PACKET_POOL[0].load(Ordering::Relaxed)
        && start + buffer.len() <= PACKET_POOL[1].load(Ordering::Relaxed)
}

// SAFETY: `dma_alloc` returns zeroed, page-aligned, identity-mapped frames
// owned by the caller until `dma_dealloc`; `mmio_phys_to_virt` returns the
// identity mapping of a PCI BAR the kernel maps as device memory; `share`
// hands out the address of a buffer in the packet pool (identity-mapped
// frames, never freed) and copies any other buffer into bounce frames,
// which `unshare` copies back and releases.
unsafe impl Hal for KernelHal {
    fn dma_alloc(pages: usize, _direction: BufferDirection) -> (PhysAddr, NonNull<u8>) {
        // virtio-drivers keeps its queues by address: the device memory is
        // handed over as one, and comes back in `dma_dealloc`.
        let memory = DeviceFrames
            .alloc(pages * mm::FRAME_SIZE, mm::FRAME_SIZE)
            .expect("frames for virtio queues");
        let pa = device_memory::into_raw(memory);
        (
            pa as PhysAddr,
            NonNull::new(pa as *mut u8).expect("frame 0 is never allocated"),
        )
    }

    unsafe fn dma_dealloc(paddr: PhysAddr, _vaddr: NonNull<u8>, pages: usize) -> i32 {
        device_memory::free_raw(paddr as usize, pages);
        0
    }

    unsafe fn mmio_phys_to_virt(paddr: PhysAddr, _size: usize) -> NonNull<u8> {
        NonNull::new(paddr as *mut u8).expect("BARs are never at 0")
    }

    unsafe fn share(buffer: NonNull<[u8]>, direction: BufferDirection) -> PhysAddr {
        if in_packet_pool(buffer) {
            return buffer.as_ptr() as *mut u8 as usize as PhysAddr;
        }
        let len = buffer.len();
        let pa = mm::alloc_contiguous(frames(len), mm::FRAME_SIZE).expect("frames for a bounce");
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
        if in_packet_pool(buffer) {
            return;
        }
        let len = buffer.len();
        if direction != BufferDirection::DriverToDevice {
            // SAFETY: as in `share`; the device is done with the bounce frames.
            unsafe {
                core::ptr::copy_nonoverlapping(paddr as *const u8, buffer.as_ptr() as *mut u8, len)
            };
        }
        mm::free_contiguous(paddr as usize, frames(len));
    }
}

/// Descriptors per virtqueue (QEMU's default and largest for virtio-net):
/// frames the device can deliver before the app drains them, and frames
/// in flight to it.
const QUEUE_SIZE: usize = 256;
/// One packet buffer: the virtio-net header and an Ethernet frame.
const BUFFER_LEN: usize = 2048;

/// Packet buffers, one per descriptor of each queue, carved out of
/// identity-mapped frames allocated once.
struct PacketBuffers {
    rx: Vec<&'static mut [u8]>,
    tx: Vec<&'static mut [u8]>,
}

impl PacketBuffers {
    fn new() -> PacketBuffers {
        let len = 2 * QUEUE_SIZE * BUFFER_LEN;
        let start =
            mm::alloc_contiguous(frames(len), mm::FRAME_SIZE).expect("frames for packet buffers");
        PACKET_POOL[0].store(start, Ordering::Relaxed);
        PACKET_POOL[1].store(start + len, Ordering::Relaxed);
        // SAFETY: the frames were just allocated, are identity-mapped
        // read-write, and are never freed; nothing else refers to them.
        let pool = unsafe { core::slice::from_raw_parts_mut(start as *mut u8, len) };
        let mut buffers = pool.chunks_exact_mut(BUFFER_LEN);
        PacketBuffers {
            rx: buffers.by_ref().take(QUEUE_SIZE).collect(),
            tx: buffers.collect(),
        }
    }
}

type Nic = VirtIONetRaw<KernelHal, nic_transport::NicTransport<PciTransport>, QUEUE_SIZE>;

/// Frames handed to the device for sending, by descriptor token, with
/// their length; and the buffers free to fill.
struct TxRing {
    in_flight: InFlight<(&'static mut [u8], usize), QUEUE_SIZE>,
    free: Vec<&'static mut [u8]>,
}

impl TxRing {
    /// Takes back the buffers the device has sent; the error is a token
    /// the device returned that names no buffer it was given.
    fn reclaim(&mut self, nic: &mut Nic) -> Result<(), u16> {
        while let Some(token) = nic.poll_transmit() {
            let Some((buffer, len)) = self.in_flight.take(token) else {
                return Err(token);
            };
            // SAFETY: this is the buffer and length `transmit_begin` got
            // for `token`.
            if let Err(e) = unsafe { nic.transmit_complete(token, &buffer[..len]) } {
                log::warn!("virtio-net: transmit complete: {e:?}");
            }
            self.free.push(buffer);
        }
        Ok(())
    }
}

/// The NIC as smoltcp sees it.
/// The virtio-net NIC (qemu-virt) as smoltcp's device.
pub struct VirtioNic {
    nic: Nic,
    /// Receive buffers the device holds, by descriptor token.
    rx_posted: InFlight<&'static mut [u8], QUEUE_SIZE>,
    /// The buffer of the frame last handed to smoltcp, with its frame's
    /// place; given back to the device on the next receive or poll.
    rx_held: Option<(&'static mut [u8], core::ops::Range<usize>)>,
    tx: TxRing,
    /// The device returned a token it was not given: it broke the virtio
    /// protocol, and is not used again (the kernel goes on without it).
    broken: bool,
    /// Rings the notifications the driver asked for, once per receive
    /// and once per transmit pass.
    doorbell: nic_transport::Doorbell<PciTransport>,
}

/// A received frame, read in place by smoltcp.
pub struct RxToken<'a>(&'a [u8]);
/// Room to send one frame on the virtio NIC.
pub struct VirtioTx<'a> {
    nic: &'a mut Nic,
    tx: &'a mut TxRing,
}

impl phy::RxToken for RxToken<'_> {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(self.0)
    }
}

impl phy::TxToken for VirtioTx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let buffer = self
            .tx
            .free
            .pop()
            .expect("transmit() checked for a free buffer");
        let header = self
            .nic
            .fill_buffer_header(buffer)
            .expect("a packet buffer holds a header");
        let end = header + len;
        let r = f(&mut buffer[header..end]);
        // SAFETY: the buffer stays in `in_flight`, untouched, until the
        // device returns its token (`TxRing::reclaim`).
        match unsafe { self.nic.transmit_begin(&buffer[..end]) } {
            Ok(token) => {
                if let Err((e, (buffer, _))) = self.tx.in_flight.insert(token, (buffer, end)) {
                    // The queue's own token: never happens; keep the buffer.
                    log::error!("virtio-net send: {e:?}");
                    self.tx.free.push(buffer);
                }
            }
            Err(e) => {
                log::warn!("virtio-net send: {e:?}");
                self.tx.free.push(buffer);
            }
        }
        r
    }
}

impl VirtioNic {
    fn new(
        nic: Nic,
        doorbell: nic_transport::Doorbell<PciTransport>,
    ) -> Result<VirtioNic, virtio_drivers::Error> {
        let buffers = PacketBuffers::new();
        let mut device = VirtioNic {
            nic,
            doorbell,
            rx_posted: InFlight::new(),
            rx_held: None,
            broken: false,
            tx: TxRing {
                in_flight: InFlight::new(),
                free: buffers.tx,
            },
        };
        for buffer in buffers.rx {
            // SAFETY: the buffer is kept in `rx_posted`, untouched, until
            // the device returns its token.
            let token = unsafe { device.nic.receive_begin(buffer)? };
            device.post_rx(token, buffer);
        }
        device.doorbell.ring();
        Ok(device)
    }

    /// Records a receive buffer the queue took under `token`.
    fn post_rx(&mut self, token: u16, buffer: &'static mut [u8]) {
        if let Err((e, _)) = self.rx_posted.insert(token, buffer) {
            // The queue's own token: never happens; the buffer is lost.
            log::error!("virtio-net: receive buffer not recorded: {e:?}");
        }
    }

    /// Stops using a device that returned `token`, which names no buffer
    /// it was given (`what`: "sent" or "received"): handing it to the
    /// virtio queue would recycle descriptors the driver does not own.
    fn disable<T>(&mut self, what: &str, token: u16) -> Option<T> {
        log::error!(
            "virtio-net: the device {what} token {token}, which it was not given; the NIC is disabled"
        );
        self.broken = true;
        None
    }

    /// Gives the buffer of the last frame smoltcp read back to the device.
    fn repost(&mut self) {
        if let Some((buffer, _)) = self.rx_held.take() {
            // SAFETY: as in `new`.
            match unsafe { self.nic.receive_begin(buffer) } {
                Ok(token) => self.post_rx(token, buffer),
                Err(e) => log::error!("virtio-net: receive buffer lost: {e:?}"),
            }
        }
    }
}

impl VirtioNic {
    fn receive(&mut self) -> Option<(RxToken<'_>, VirtioTx<'_>)> {
        if self.broken {
            return None;
        }
        self.repost();
        if let Err(token) = self.tx.reclaim(&mut self.nic) {
            return self.disable("sent", token);
        }
        let token = self.nic.poll_receive()?;
        // The token is the device's word: one that names no posted buffer
        // is refused, never an index out of bounds or a buffer reused.
        let Some(buffer) = self.rx_posted.take(token) else {
            return self.disable("received", token);
        };
        // SAFETY: the buffer is the one `receive_begin` got for `token`.
        let frame = match unsafe { self.nic.receive_complete(token, buffer) } {
            Ok((header, len)) => header..header + len,
            Err(e) => {
                log::warn!("virtio-net receive: {e:?}");
                0..0
            }
        };
        let (buffer, frame) = self.rx_held.insert((buffer, frame));
        Some((
            RxToken(&buffer[frame.clone()]),
            VirtioTx {
                nic: &mut self.nic,
                tx: &mut self.tx,
            },
        ))
    }

    fn transmit(&mut self) -> Option<VirtioTx<'_>> {
        if self.broken {
            return None;
        }
        if let Err(token) = self.tx.reclaim(&mut self.nic) {
            return self.disable("sent", token);
        }
        (!self.tx.free.is_empty() && self.nic.can_send()).then_some(VirtioTx {
            nic: &mut self.nic,
            tx: &mut self.tx,
        })
    }
}

/// The NIC the interface runs on: virtio-net (qemu-virt) or the ZynqMP's
/// Cadence GEM (zcu102).
pub enum NetDevice {
    /// virtio-net on PCI (boxed: its queues' bookkeeping is large).
    Virtio(alloc::boxed::Box<VirtioNic>),
    /// The on-chip GEM.
    Gem(gem::GemNic),
}

/// Room to send one frame, on whichever NIC.
pub enum TxToken<'a> {
    /// On virtio-net.
    Virtio(VirtioTx<'a>),
    /// On the GEM.
    Gem(gem::GemTx<'a>),
}

impl phy::TxToken for TxToken<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        match self {
            TxToken::Virtio(t) => t.consume(len, f),
            TxToken::Gem(t) => t.consume(len, f),
        }
    }
}

impl NetDevice {
    /// Tells the device about the frames and buffers queued since the last
    /// call (see `nic_transport`; the GEM is told per frame).
    fn ring_doorbell(&mut self) {
        if let NetDevice::Virtio(v) = self {
            v.doorbell.ring();
        }
    }

    /// Acknowledges the NIC's interrupt before its queues are drained.
    fn ack_interrupt(&mut self) {
        match self {
            NetDevice::Virtio(v) => {
                v.nic.ack_interrupt();
            }
            NetDevice::Gem(g) => g.ack_interrupt(),
        }
    }
}

impl Device for NetDevice {
    type RxToken<'a> = RxToken<'a>;
    type TxToken<'a> = TxToken<'a>;

    fn receive(&mut self, _now: Instant) -> Option<(RxToken<'_>, TxToken<'_>)> {
        match self {
            NetDevice::Virtio(v) => v.receive().map(|(r, t)| (r, TxToken::Virtio(t))),
            NetDevice::Gem(g) => g.receive().map(|(r, t)| (r, TxToken::Gem(t))),
        }
    }

    fn transmit(&mut self, _now: Instant) -> Option<TxToken<'_>> {
        match self {
            NetDevice::Virtio(v) => v.transmit().map(TxToken::Virtio),
            NetDevice::Gem(g) => g.transmit().map(TxToken::Gem),
        }
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
    /// No virtio-net function on the PCI bus (is `-netdev`/`-device` given?)
    /// and no on-chip Ethernet on the board.
    NotFound,
    /// No frames for the on-chip Ethernet's rings and buffers.
    OutOfMemory,
    /// The device refused to initialize.
    Device(virtio_drivers::Error),
    /// The PCI transport could not be set up.
    Transport(virtio_drivers::transport::pci::VirtioPciError),
    /// The on-chip Ethernet's PHY could not be brought up.
    Phy(hw::phy::PhyError),
    /// The PHY negotiated no link in time (no cable, or no partner).
    NoLink,
    /// `faultline.mac=` is not a unicast address like `02:00:5e:10:00:01`.
    BadMac,
    /// `faultline.mac=` was given, but this NIC's address is the host's to
    /// set (virtio-net: `-device virtio-net-pci,mac=...`).
    MacNotSettable,
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

/// Finds the NIC (virtio-net on PCI, else the board's GEM) and brings up an
/// interface with QEMU user networking's address (10.0.2.15/24, gateway
/// 10.0.2.2).
pub fn init() -> Result<Net, NetError> {
    let wanted_mac = match crate::boot::kernel_option("mac") {
        Some(text) => Some(crate::args::parse_mac(text).ok_or(NetError::BadMac)?),
        None => None,
    };
    let (mut device, mac, intid) = match find_virtio()? {
        Some(_) if wanted_mac.is_some() => return Err(NetError::MacNotSettable),
        Some(found) => found,
        None => {
            let gem = hw::board::CURRENT.gem.as_ref().ok_or(NetError::NotFound)?;
            let (nic, phy, link) = gem::GemNic::open(gem.base, wanted_mac)?;
            let mac = EthernetAddress(nic.mac());
            log::info!(
                "net: Cadence GEM at {:#x}, mac {mac}, 10.0.2.15/24; PHY {:#010x} at MDIO address {}, link up at {} Mb/s {} duplex",
                gem.base,
                phy.id,
                phy.addr,
                link.speed.mbps(),
                if link.full_duplex { "full" } else { "half" }
            );
            (NetDevice::Gem(nic), mac, Some(gem.intid))
        }
    };
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
    if let Some(intid) = intid {
        NET_INTID.store(intid, core::sync::atomic::Ordering::Relaxed);
        if let Err(e) = crate::irq::register(intid, hw::gicv2::Trigger::Level, on_net_interrupt) {
            log::warn!("net: interrupt {intid}: {e:?}; polling only");
        }
    }
    Ok(Net {
        iface,
        device,
        sockets: SocketSet::new(vec![]),
    })
}

/// The virtio-net function on PCI, if there is one (an RDMA engine looks
/// like one too and is skipped), with its MAC and interrupt.
fn find_virtio() -> Result<Option<(NetDevice, EthernetAddress, Option<u32>)>, NetError> {
    let Some(f) = crate::pci::functions().into_iter().find(|f| {
        crate::pci::is_virtio_net(f)
            && !crate::pci::virtio_net_mac(f).is_some_and(|m| hw::rdma::is_engine_mac(&m))
    }) else {
        return Ok(None);
    };
    let transport = crate::pci::virtio_transport(&f).map_err(NetError::Transport)?;
    let (transport, doorbell) = nic_transport::split(transport);
    let mut nic = Nic::new(transport).map_err(NetError::Device)?;
    nic.enable_interrupts();
    let mac = EthernetAddress(nic.mac_address());
    let device = VirtioNic::new(nic, doorbell).map_err(NetError::Device)?;
    log::info!("net: virtio-net {:?}, mac {mac}, 10.0.2.15/24", f.bdf);
    Ok(Some((
        NetDevice::Virtio(alloc::boxed::Box::new(device)),
        mac,
        f.intid,
    )))
}

impl Net {
    /// Moves packets between the NIC and the sockets: [`receive`], then
    /// [`transmit`].
    ///
    /// [`receive`]: Net::receive
    /// [`transmit`]: Net::transmit
    pub fn poll(&mut self) {
        self.receive(|_| {});
        self.transmit();
    }

    /// Hands the frames that arrived to the sockets, running `after_each`
    /// after every one, and re-arms the NIC's interrupt. `after_each`
    /// exists so an app can keep a small pool of listening sockets topped
    /// up: a SYN claims a listener, and `after_each` puts a fresh one in
    /// its place before the next SYN of a burst is handled (smoltcp
    /// answers a SYN that finds no listener with a reset).
    ///
    /// Nothing is sent here but what the stack answers on its own (ARP,
    /// resets): an app that reads its requests and queues its replies
    /// before calling [`transmit`](Net::transmit) sends each reply with
    /// the acknowledgement of its request, in one frame instead of two.
    ///
    /// The device's interrupt is acknowledged before the receive queue is
    /// drained and unmasked after, so a frame arriving in between leaves
    /// the interrupt pending and the next WFI returns at once.
    pub fn receive(&mut self, mut after_each: impl FnMut(&mut SocketSet<'static>)) {
        NET_INTERRUPTED.store(false, core::sync::atomic::Ordering::Relaxed);
        self.device.ack_interrupt();
        let now = now();
        self.iface.poll_maintenance(now);
        while self
            .iface
            .poll_ingress_single(now, &mut self.device, &mut self.sockets)
            != smoltcp::iface::PollIngressSingleResult::None
        {
            after_each(&mut self.sockets);
        }
        // Buffers given back, if the device ran dry and asked for them.
        self.device.ring_doorbell();
        let intid = NET_INTID.load(core::sync::atomic::Ordering::Relaxed);
        if intid != 0 {
            crate::irq::unmask(intid);
        }
    }

    /// Sends what the sockets have queued (data, acknowledgements, window
    /// updates, retransmissions) and tells the NIC once.
    pub fn transmit(&mut self) {
        let now = now();
        while self
            .iface
            .poll_egress(now, &mut self.device, &mut self.sockets)
            == smoltcp::iface::PollResult::SocketStateChanged
        {}
        self.device.ring_doorbell();
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
