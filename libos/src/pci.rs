//! PCI bring-up at boot: every function on the root bus gets its BARs and
//! bus mastering, and drivers look up what was found.

extern crate alloc;

use crate::sync::IrqSpinLock;
use alloc::vec::Vec;
use hw::board::PcieHost;
use hw::mmio::Mmio;
use hw::pci::{enumerate, Ecam, Function, WindowAllocator};

pub use hw::pci::{Bar, Bdf};

static FUNCTIONS: IrqSpinLock<Vec<Function>> = IrqSpinLock::new(Vec::new());

/// Enumerates the root bus of `host` and remembers what it found.
pub(crate) fn init(host: &PcieHost) {
    // SAFETY: the board names its ECAM window, mapped as device memory.
    let ecam = Ecam::new(unsafe { Mmio::new(host.ecam.start, 1 << 20) });
    let mut window = WindowAllocator::new(host.mmio32.clone());
    let mut found = Vec::new();
    if let Err(e) = enumerate(&ecam, &mut window, host.first_intx_spi, |f| found.push(f)) {
        log::error!("PCI: {e:?}; devices after it are not set up");
    }
    for f in &found {
        log::debug!(
            "PCI {:02x}:{:02x}.{} {:04x}:{:04x} class {:06x}",
            f.bdf.bus,
            f.bdf.device,
            f.bdf.function,
            f.vendor,
            f.device,
            f.class
        );
    }
    *FUNCTIONS.lock() = found;
}

/// Every PCI function found at boot.
pub fn functions() -> Vec<Function> {
    FUNCTIONS.lock().clone()
}

/// The functions with this vendor and device ID, in slot order.
pub fn find(vendor: u16, device: u16) -> Vec<Function> {
    FUNCTIONS
        .lock()
        .iter()
        .filter(|f| f.vendor == vendor && f.device == device)
        .cloned()
        .collect()
}

/// Vendor ID of every virtio PCI function.
pub const VIRTIO_VENDOR: u16 = 0x1af4;

/// Whether `f` is a virtio network function (transitional or modern). Both
/// the NIC and the RDMA engine look like one; [`virtio_net_mac`] tells them
/// apart.
pub fn is_virtio_net(f: &Function) -> bool {
    f.vendor == VIRTIO_VENDOR && (f.device == 0x1000 || f.device == 0x1041)
}

/// A virtio transport for `f`, for a driver that owns the function.
pub fn virtio_transport(
    f: &Function,
) -> Result<
    virtio_drivers::transport::pci::PciTransport,
    virtio_drivers::transport::pci::VirtioPciError,
> {
    use virtio_drivers::transport::pci::bus::{Cam, DeviceFunction, MmioCam, PciRoot};
    let ecam = hw::board::CURRENT
        .pcie
        .as_ref()
        .map(|p| p.ecam.start)
        .ok_or(virtio_drivers::transport::pci::VirtioPciError::InvalidVendorId(f.vendor))?;
    // SAFETY: the ECAM window is mapped as device memory for good; this
    // root only reads the function's capabilities (the kernel's own
    // enumeration is finished).
    let cam = unsafe { MmioCam::new(ecam as *mut u8, Cam::Ecam) };
    let mut root = PciRoot::new(cam);
    let df = DeviceFunction {
        bus: f.bdf.bus,
        device: f.bdf.device,
        function: f.bdf.function,
    };
    virtio_drivers::transport::pci::PciTransport::new::<crate::net::KernelHal, _>(&mut root, df)
}

/// The MAC address in a virtio-net function's configuration space.
pub fn virtio_net_mac(f: &Function) -> Option<[u8; 6]> {
    use virtio_drivers::transport::Transport;
    // Dropping a transport resets the device, which must not happen to a
    // function another driver may already run: keep it from dropping.
    let transport = core::mem::ManuallyDrop::new(virtio_transport(f).ok()?);
    let mut mac = [0u8; 6];
    for (i, byte) in mac.iter_mut().enumerate() {
        *byte = transport.read_config_space::<u8>(i).ok()?;
    }
    Some(mac)
}
