//! The virtio transport the NIC driver runs on: without the event-index
//! feature, and with the device's doorbell rung once per pass.
//!
//! ```text
//!  virtio-drivers ──► NicTransport ──┐ (shared)
//!  Net::transmit  ──► Doorbell::ring ┴─► PciTransport::notify, once per queue
//! ```
//!
//! *No event index.* With `VIRTIO_RING_F_EVENT_IDX` a device says, through
//! the used ring's `avail_event`, after which posted buffer it wants to be
//! told. QEMU's virtio-net moves that mark to the current index every time
//! it takes a frame, and virtio-drivers (0.13) notifies whenever the index
//! is past the mark, so nearly every receive buffer given back cost a
//! notification. Without the feature the device sets `NO_NOTIFY` in the
//! used ring while it has buffers, and the driver honours it.
//!
//! *One doorbell per pass.* A notification is a trapped register write
//! that runs the device model (under QEMU, behind its global lock); the
//! driver rings it for each frame it queues. Here those requests are only
//! noted, and `Net` rings once per queue after each receive and transmit
//! pass, so a pass that answers fifty clients costs one notification, not
//! fifty.

use virtio_drivers::transport::{DeviceStatus, DeviceType, InterruptStatus, Transport};
use virtio_drivers::PhysAddr;
use zerocopy::{FromBytes, Immutable, IntoBytes};
extern crate alloc;

use alloc::sync::Arc;
use spin::Mutex;

/// The feature bit (virtio 1.x, section 6).
const RING_EVENT_IDX: u64 = 1 << 29;

/// The transport as the driver sees it (see the module doc).
pub struct NicTransport<T> {
    shared: Arc<Mutex<Shared<T>>>,
}

/// Rings the notifications the driver asked for since the last ring.
pub struct Doorbell<T> {
    shared: Arc<Mutex<Shared<T>>>,
}

struct Shared<T> {
    transport: T,
    /// Queues with a notification asked for and not yet rung, one bit each.
    pending: u32,
}

/// `transport` for the driver, and the doorbell for the poll loop.
pub fn split<T: Transport>(transport: T) -> (NicTransport<T>, Doorbell<T>) {
    let shared = Arc::new(Mutex::new(Shared {
        transport,
        pending: 0,
    }));
    (
        NicTransport {
            shared: shared.clone(),
        },
        Doorbell { shared },
    )
}

impl<T: Transport> Doorbell<T> {
    /// Notifies each queue the driver asked to since the last call.
    pub fn ring(&self) {
        let mut shared = self.shared.lock();
        let mut pending = core::mem::take(&mut shared.pending);
        while pending != 0 {
            let queue = pending.trailing_zeros() as u16;
            pending &= pending - 1;
            shared.transport.notify(queue);
        }
    }
}

impl<T: Transport> NicTransport<T> {
    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.shared.lock().transport)
    }
}

impl<T: Transport> Transport for NicTransport<T> {
    fn device_type(&self) -> DeviceType {
        self.with(|t| t.device_type())
    }
    fn read_device_features(&mut self) -> u64 {
        self.with(|t| t.read_device_features()) & !RING_EVENT_IDX
    }
    fn write_driver_features(&mut self, driver_features: u64) {
        self.with(|t| t.write_driver_features(driver_features))
    }
    fn max_queue_size(&mut self, queue: u16) -> u32 {
        self.with(|t| t.max_queue_size(queue))
    }
    fn notify(&mut self, queue: u16) {
        // Rung by the poll loop (`Doorbell::ring`); queues past 31 (none
        // on a NIC) are rung at once.
        let mut shared = self.shared.lock();
        match 1u32.checked_shl(u32::from(queue)) {
            Some(bit) => shared.pending |= bit,
            None => shared.transport.notify(queue),
        }
    }
    fn get_status(&self) -> DeviceStatus {
        self.with(|t| t.get_status())
    }
    fn set_status(&mut self, status: DeviceStatus) {
        self.with(|t| t.set_status(status))
    }
    fn set_guest_page_size(&mut self, guest_page_size: u32) {
        self.with(|t| t.set_guest_page_size(guest_page_size))
    }
    fn requires_legacy_layout(&self) -> bool {
        self.with(|t| t.requires_legacy_layout())
    }
    fn queue_set(
        &mut self,
        queue: u16,
        size: u32,
        descriptors: PhysAddr,
        driver_area: PhysAddr,
        device_area: PhysAddr,
    ) {
        self.with(|t| t.queue_set(queue, size, descriptors, driver_area, device_area))
    }
    fn queue_unset(&mut self, queue: u16) {
        self.with(|t| t.queue_unset(queue))
    }
    fn queue_used(&mut self, queue: u16) -> bool {
        self.with(|t| t.queue_used(queue))
    }
    fn ack_interrupt(&mut self) -> InterruptStatus {
        self.with(|t| t.ack_interrupt())
    }
    fn read_config_generation(&self) -> u32 {
        self.with(|t| t.read_config_generation())
    }
    fn read_config_space<V: FromBytes + IntoBytes>(
        &self,
        offset: usize,
    ) -> virtio_drivers::Result<V> {
        self.with(|t| t.read_config_space(offset))
    }
    fn write_config_space<V: IntoBytes + Immutable>(
        &mut self,
        offset: usize,
        value: V,
    ) -> virtio_drivers::Result<()> {
        self.with(|t| t.write_config_space(offset, value))
    }
}
