//! Board descriptions: memory map, console, interrupt controller, firmware
//! conduit. Pure data, so the kernel's boot code reads like a recipe and the
//! descriptions can be checked on the host.

mod qemu_virt;
mod zcu102;

pub use qemu_virt::QEMU_VIRT;
pub use zcu102::ZCU102;

use core::ops::Range;

/// Which UART model the board's console is, and where it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConsoleUart {
    /// Arm PrimeCell PL011 (QEMU virt).
    Pl011 {
        /// MMIO base address.
        base: usize,
    },
    /// Cadence UART (Zynq UltraScale+).
    Cadence {
        /// MMIO base address.
        base: usize,
    },
}

/// How the kernel calls the PSCI firmware.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PsciConduit {
    /// `hvc #0` (QEMU virt without EL2 firmware).
    Hvc,
    /// `smc #0` (ZynqMP: ATF at EL3, or QEMU's emulation of it).
    Smc,
}

/// A generic ECAM PCIe host bridge.
#[derive(Clone, Debug)]
pub struct PcieHost {
    /// Configuration space window (1 MiB per bus).
    pub ecam: Range<usize>,
    /// 32-bit memory window BARs are assigned from.
    pub mmio32: Range<usize>,
    /// First of the four SPIs that carry INTA..INTD.
    pub first_intx_spi: u32,
}

/// An SMMUv3 in front of the PCIe root bus.
#[derive(Clone, Debug)]
pub struct Smmuv3 {
    /// Register block (128 KiB).
    pub base: usize,
    /// Interrupt IDs: event queue, PRI queue, command-queue sync, global error.
    pub eventq_intid: u32,
    /// Global error interrupt.
    pub gerror_intid: u32,
}

/// An on-chip peripheral the kernel drives: its registers and interrupt.
#[derive(Clone, Debug)]
pub struct Peripheral {
    /// Register block.
    pub base: usize,
    /// Its interrupt (level-sensitive).
    pub intid: u32,
}

/// Everything the kernel must know about a board before it can read a DTB.
#[derive(Clone, Debug)]
pub struct Board {
    /// Name used by the image tool and printed by `hello`.
    pub name: &'static str,
    /// RAM the kernel assumes when no DTB describes memory.
    pub default_ram: Range<usize>,
    /// Physical range in which RAM may lie at all (covers every `-m` size);
    /// the boot identity map treats it as normal memory.
    pub ram_window: Range<usize>,
    /// Where a DTB may be found when the loader passes none in x0.
    pub dtb_fallback: Option<usize>,
    /// Console UART.
    pub console: ConsoleUart,
    /// GICv2 distributor base.
    pub gicd: usize,
    /// GICv2 CPU interface base.
    pub gicc: usize,
    /// How PSCI is reached.
    pub psci: PsciConduit,
    /// Cores assumed when no DTB lists them (their MPIDR Aff0 are 0..cores).
    pub default_cores: usize,
    /// MMIO windows mapped as device memory.
    pub devices: &'static [Range<usize>],
    /// Generic timer frequency to assume if firmware left CNTFRQ_EL0 at 0.
    pub default_timer_hz: u64,
    /// PCIe host bridge, if the board has one the kernel drives.
    pub pcie: Option<PcieHost>,
    /// SMMUv3 translating the PCIe devices' DMA, if present.
    pub smmuv3: Option<Smmuv3>,
    /// Base of an Arm MMU-500 (SMMUv2) register window (128 KiB) the kernel
    /// probes at boot, if the SoC has one (QEMU may model nothing there).
    pub mmu500: Option<usize>,
    /// PL031 real-time clock (seconds since the Unix epoch), if present.
    pub rtc_pl031: Option<usize>,
    /// Unused virtual addresses below 256 MiB, for regions that devices with
    /// a 28-bit DMA mask (edu) must reach; None where RAM or MMIO fills them.
    pub low_dma_window: Option<Range<usize>>,
    /// A memory-to-memory DMA channel without an SMMU in front of it.
    pub zdma: Option<Peripheral>,
    /// An on-chip Ethernet MAC (Cadence GEM), used when no virtio-net
    /// device is found.
    pub gem: Option<Peripheral>,
    /// An SD host controller (SDHCI) whose card is a block device.
    pub sd: Option<usize>,
}

/// Bytes in one gibibyte; the boot identity map is made of 1 GiB blocks.
pub const GIB: usize = 1 << 30;

/// Memory type of one 1 GiB slot of the boot identity map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BootSlot {
    /// Not mapped.
    Invalid,
    /// Normal, cacheable (RAM).
    Normal,
    /// Device-nGnRE (MMIO).
    Device,
}

impl Board {
    /// Memory type of the 1 GiB slot `index` in the boot identity map: RAM
    /// slots are normal memory, slots holding MMIO are device memory.
    pub const fn boot_slot(&self, index: usize) -> BootSlot {
        let start = index * GIB;
        let end = start + GIB;
        if overlaps(&self.ram_window, start, end) {
            return BootSlot::Normal;
        }
        let mut i = 0;
        while i < self.devices.len() {
            if overlaps(&self.devices[i], start, end) {
                return BootSlot::Device;
            }
            i += 1;
        }
        BootSlot::Invalid
    }
}

const fn overlaps(r: &Range<usize>, start: usize, end: usize) -> bool {
    r.start < end && start < r.end
}

/// The board this image was built for.
#[cfg(feature = "qemu-virt")]
pub const CURRENT: &Board = &QEMU_VIRT;
/// The board this image was built for.
#[cfg(feature = "zcu102")]
pub const CURRENT: &Board = &ZCU102;
#[cfg(all(
    target_os = "none",
    not(any(feature = "qemu-virt", feature = "zcu102"))
))]
compile_error!("select a board: build with feature `qemu-virt` or `zcu102` (see image/)");

#[cfg(test)]
mod tests {
    use super::*;

    /// Asserts what `board`'s boot map holds in each slot of `slots`.
    fn assert_slots(board: &Board, slots: &[(usize, BootSlot)]) {
        for &(slot, want) in slots {
            assert_eq!(board.boot_slot(slot), want, "slot {slot}");
        }
    }

    #[test]
    fn virt_boot_map_has_devices_below_ram_and_pcie_ecam() {
        use BootSlot::*;
        assert_slots(
            &QEMU_VIRT,
            &[(0, Device), (1, Normal), (256, Device), (100, Invalid)],
        );
    }

    #[test]
    fn zcu102_boot_map_has_ddr_low_and_devices_at_the_top_of_4g() {
        use BootSlot::*;
        assert_slots(
            &ZCU102,
            &[(0, Normal), (1, Normal), (3, Device), (2, Invalid)],
        );
    }

    #[test]
    fn consoles_and_gics_lie_in_device_windows() {
        for b in [&QEMU_VIRT, &ZCU102] {
            let uart = match b.console {
                ConsoleUart::Pl011 { base } | ConsoleUart::Cadence { base } => base,
            };
            for addr in [uart, b.gicd, b.gicc] {
                assert!(
                    b.devices.iter().any(|d| d.contains(&addr)),
                    "{} {addr:#x}",
                    b.name
                );
            }
            assert!(b.default_cores <= crate::layout::MAX_CORES);
        }
    }

    #[test]
    fn the_zcu102_mmu500_window_is_mapped_as_device_memory() {
        let base = ZCU102.mmu500.unwrap();
        for addr in [base, base + 0x2_0000 - 4] {
            assert!(ZCU102.devices.iter().any(|d| d.contains(&addr)));
        }
        assert_eq!(QEMU_VIRT.mmu500, None);
    }
}
