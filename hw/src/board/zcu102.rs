//! Xilinx ZCU102 (`-M xlnx-zcu102`): the Zynq UltraScale+ MPSoC the QFDB carries.

use super::{Board, ConsoleUart, Peripheral, PsciConduit};

/// The ZCU102 evaluation board (Zynq UltraScale+ ZU9EG).
pub const ZCU102: Board = Board {
    name: "zcu102",
    // Low DDR; the runner gives QEMU `-m 2G`.
    default_ram: 0x0000_0000..0x8000_0000,
    ram_window: 0x0000_0000..0x8000_0000,
    // Firmware passes a DTB in x0 if it has one; QEMU gives none.
    dtb_fallback: None,
    console: ConsoleUart::Cadence { base: 0xff00_0000 },
    gicd: 0xf901_0000,
    gicc: 0xf902_0000,
    psci: PsciConduit::Smc,
    default_cores: 4,
    devices: &[
        // GIC-400.
        0xf900_0000..0xf908_0000,
        // Low-power domain peripherals: UARTs, I2C, GPIO, GEMs, ...
        0xff00_0000..0xff10_0000,
        // The two SD host controllers.
        0xff16_0000..0xff18_0000,
        // Full-power domain DMA (ZDMA) and the MMU-500's 128 KiB.
        0xfd00_0000..0xfd82_0000,
    ],
    default_timer_hz: 62_500_000,
    // QEMU models neither the PS PCIe controller nor the MMU-500.
    pcie: None,
    smmuv3: None,
    // Probed only: QEMU 7.2 maps nothing there (reads as 0), the probe says so.
    mmu500: Some(0xfd80_0000),
    low_dma_window: None,
    rtc_pl031: None,
    // GDMA channel 0 of the full-power domain (QEMU has no SMMU in front).
    zdma: Some(Peripheral {
        base: crate::zdma::GDMA_CH0,
        intid: crate::zdma::GDMA_CH0_INTID,
    }),
    // GEM3: the one the ZCU102 wires to its Ethernet jack (the runner
    // gives QEMU's fourth NIC the forwarded port for this reason).
    gem: Some(Peripheral {
        base: crate::gem::GEM3,
        intid: crate::gem::GEM3_INTID,
    }),
    // SD0: QEMU puts the card of `-drive if=sd,index=0` there.
    sd: Some(crate::sdhci::SD0),
};
