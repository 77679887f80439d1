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
