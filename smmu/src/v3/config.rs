//! How the driver sets the SMMU up.

/// What the SMMU does with traffic from streams the kernel has not attached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unattached {
    /// Invalid STE: transactions abort and each is reported as a C_BAD_STE
    /// event, so a device DMAing unexpectedly is visible in the log.
    Reject,
    /// Abort silently.
    Abort,
    /// Pass through untranslated, for devices driven with physical addresses.
    Bypass,
}

/// How to set the SMMU up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// StreamID bits the devices need (8 for the PCI root bus).
    pub sid_bits_needed: u32,
    /// log2 of the event queue's entries. A faulting 4 KiB DMA may log 1024
    /// records on QEMU, so keep it large (default 15).
    pub eventq_log2: u32,
    /// log2 of the command queue's entries (default 8).
    pub cmdq_log2: u32,
    /// What unattached streams get.
    pub unattached: Unattached,
    /// How many times to poll a register before giving up with
    /// [`Error::Timeout`](super::Error::Timeout).
    pub poll_limit: u32,
    /// Ranges spanning more pages than this are invalidated by ASID instead
    /// of page by page.
    pub range_invalidate_pages: u64,
}

impl Config {
    /// Devices on QEMU `virt`'s PCIe root bus: 256 StreamIDs, a 2^15-entry
    /// event queue, a 256-entry command queue, unattached streams rejected.
    pub const fn pci_root_bus() -> Self {
        Self {
            sid_bits_needed: 8,
            eventq_log2: 15,
            cmdq_log2: 8,
            unattached: Unattached::Reject,
            poll_limit: 1_000_000,
            range_invalidate_pages: 64,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Self::pci_root_bus()
    }
}
