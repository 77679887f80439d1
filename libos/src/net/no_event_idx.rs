//! A virtio transport that does not offer the event-index feature.
//!
//! With `VIRTIO_RING_F_EVENT_IDX` a device says, through the used ring's
//! `avail_event`, after which posted buffer it wants to be notified.
//! QEMU's virtio-net moves that mark to the current index every time it
//! takes a frame, and virtio-drivers (0.13) notifies whenever the index is
//! past the mark, so nearly every receive buffer the kernel gave back cost
//! a notification: a trapped register write that runs the device model on
//! the guest's core. Without the feature the device instead sets
//! `NO_NOTIFY` in the used ring while it has buffers, and the driver
//! honours it, so buffers go back for free and the device is told only
//! when it ran dry.
//!
//! Everything else is passed through unchanged.

use virtio_drivers::transport::{DeviceStatus, DeviceType, InterruptStatus, Transport};
use virtio_drivers::PhysAddr;
use zerocopy::{FromBytes, Immutable, IntoBytes};

/// The feature bit (virtio 1.x, section 6).
const RING_EVENT_IDX: u64 = 1 << 29;

/// `T` with `RING_EVENT_IDX` removed from the device's features.
pub struct NoEventIdx<T>(pub T);

impl<T: Transport> Transport for NoEventIdx<T> {
    fn device_type(&self) -> DeviceType {
        self.0.device_type()
    }
    fn read_device_features(&mut self) -> u64 {
        self.0.read_device_features() & !RING_EVENT_IDX
    }
    fn write_driver_features(&mut self, driver_features: u64) {
        self.0.write_driver_features(driver_features)
    }
    fn max_queue_size(&mut self, queue: u16) -> u32 {
        self.0.max_queue_size(queue)
    }
    fn notify(&mut self, queue: u16) {
        self.0.notify(queue)
    }
    fn get_status(&self) -> DeviceStatus {
        self.0.get_status()
    }
    fn set_status(&mut self, status: DeviceStatus) {
        self.0.set_status(status)
    }
    fn set_guest_page_size(&mut self, guest_page_size: u32) {
        self.0.set_guest_page_size(guest_page_size)
    }
    fn requires_legacy_layout(&self) -> bool {
        self.0.requires_legacy_layout()
    }
    fn queue_set(
        &mut self,
        queue: u16,
        size: u32,
        descriptors: PhysAddr,
        driver_area: PhysAddr,
        device_area: PhysAddr,
    ) {
        self.0
            .queue_set(queue, size, descriptors, driver_area, device_area)
    }
    fn queue_unset(&mut self, queue: u16) {
        self.0.queue_unset(queue)
    }
    fn queue_used(&mut self, queue: u16) -> bool {
        self.0.queue_used(queue)
    }
    fn ack_interrupt(&mut self) -> InterruptStatus {
        self.0.ack_interrupt()
    }
    fn read_config_generation(&self) -> u32 {
        self.0.read_config_generation()
    }
    fn read_config_space<V: FromBytes + IntoBytes>(
        &self,
        offset: usize,
    ) -> virtio_drivers::Result<V> {
        self.0.read_config_space(offset)
    }
    fn write_config_space<V: IntoBytes + Immutable>(
        &mut self,
        offset: usize,
        value: V,
    ) -> virtio_drivers::Result<()> {
        self.0.write_config_space(offset, value)
    }
}
