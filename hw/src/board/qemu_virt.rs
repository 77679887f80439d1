//! QEMU `virt` (`-M virt,gic-version=2,iommu=smmuv3 -cpu cortex-a53`).

use super::{Board, ConsoleUart, PcieHost, PsciConduit, Smmuv3};

/// QEMU's `virt` machine, the development and CI platform.
pub const QEMU_VIRT: Board = Board {
    name: "qemu-virt",
    default_ram: 0x4000_0000..0x8000_0000,
    ram_window: 0x4000_0000..0x2_4000_0000,
    dtb_fallback: Some(0x4000_0000),
    console: ConsoleUart::Pl011 { base: 0x0900_0000 },
    gicd: 0x0800_0000,
    gicc: 0x0801_0000,
    psci: PsciConduit::Hvc,
    default_cores: 1,
    devices: &[
        // GIC, UART, RTC, GPIO, SMMUv3, fw_cfg, virtio-mmio.
        0x0800_0000..0x0a00_4000,
        // PCIe 32-bit MMIO window and I/O ports.
        0x1000_0000..0x3f00_0000,
        // PCIe ECAM (high).
        0x40_1000_0000..0x40_2000_0000,
    ],
    default_timer_hz: 62_500_000,
    pcie: Some(PcieHost {
        ecam: 0x40_1000_0000..0x40_2000_0000,
        mmio32: 0x1000_0000..0x3eff_0000,
        first_intx_spi: 3,
    }),
    // `iommu=smmuv3`: SPIs 74 (event queue) and 77 (global errors).
    smmuv3: Some(Smmuv3 {
        base: 0x0905_0000,
        eventq_intid: 106,
        gerror_intid: 109,
    }),
    // The platform-bus and secure-memory holes: no device answers there.
    low_dma_window: Some(0x0c00_0000..0x1000_0000),
    mmu500: None,
    zdma: None,
    gem: None,
    sd: None,
    rtc_pl031: Some(0x0901_0000),
};
