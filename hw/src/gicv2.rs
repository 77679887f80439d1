//! Arm GICv2 (QEMU virt's `gic-version=2`, the ZynqMP's GIC-400).
//!
//! Written here rather than taken from `arm-gic` because that crate's GICv2
//! driver cannot route shared interrupts to a core (GICD_ITARGETSR), without
//! which QEMU never delivers an SPI.

use crate::mmio::Mmio;

const GICD_CTLR: usize = 0x000;
const GICD_TYPER: usize = 0x004;
const GICD_IGROUPR: usize = 0x080;
const GICD_ISENABLER: usize = 0x100;
const GICD_ICENABLER: usize = 0x180;
const GICD_ICPENDR: usize = 0x280;
const GICD_IPRIORITYR: usize = 0x400;
const GICD_ITARGETSR: usize = 0x800;
const GICD_ICFGR: usize = 0xc00;
const GICD_SGIR: usize = 0xf00;

const GICC_CTLR: usize = 0x00;
const GICC_PMR: usize = 0x04;
const GICC_BPR: usize = 0x08;
const GICC_IAR: usize = 0x0c;
const GICC_EOIR: usize = 0x10;

/// Interrupt IDs at or above this are "special" (1023: nothing pending).
const SPURIOUS_FIRST: u32 = 1020;
/// Priority given to every interrupt (mid-range; all equal).
const DEFAULT_PRIORITY: u32 = 0xa0;

/// How an interrupt line signals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// Asserted for as long as the device wants service.
    Level,
    /// A pulse; must be latched by the GIC or it is lost.
    Edge,
}

/// A GICv2 distributor and the calling core's (banked) CPU interface.
pub struct GicV2 {
    gicd: Mmio,
    gicc: Mmio,
}

impl GicV2 {
    /// Driver for the distributor `gicd` (4 KiB) and CPU interface `gicc` (8 KiB).
    pub fn new(gicd: Mmio, gicc: Mmio) -> Self {
        Self { gicd, gicc }
    }

    /// Number of interrupt IDs the distributor implements.
    pub fn lines(&self) -> u32 {
        ((self.gicd.read(GICD_TYPER) & 0x1f) + 1) * 32
    }

    /// Resets the distributor: every shared interrupt disabled, group 0,
    /// default priority, routed to core 0, level-triggered; then enables it.
    pub fn init_distributor(&self) {
        self.gicd.write(GICD_CTLR, 0);
        let lines = self.lines().min(SPURIOUS_FIRST);
        for word in 1..(lines / 32) as usize {
            self.gicd.write(GICD_ICENABLER + 4 * word, u32::MAX);
            self.gicd.write(GICD_ICPENDR + 4 * word, u32::MAX);
            self.gicd.write(GICD_IGROUPR + 4 * word, 0);
        }
        for word in 8..(lines / 4) as usize {
            self.gicd
                .write(GICD_IPRIORITYR + 4 * word, DEFAULT_PRIORITY * 0x0101_0101);
            self.gicd.write(GICD_ITARGETSR + 4 * word, 0x0101_0101);
        }
        for word in 2..(lines / 16) as usize {
            self.gicd.write(GICD_ICFGR + 4 * word, 0);
        }
        self.gicd.write(GICD_CTLR, 1);
    }

    /// Sets up the calling core's CPU interface and its private interrupts
    /// (SGIs and PPIs are banked per core).
    pub fn init_cpu_interface(&self) {
        self.gicd.write(GICD_ICENABLER, u32::MAX);
        self.gicd.write(GICD_IGROUPR, 0);
        for word in 0..8 {
            self.gicd
                .write(GICD_IPRIORITYR + 4 * word, DEFAULT_PRIORITY * 0x0101_0101);
        }
        self.gicc.write(GICC_PMR, 0xff);
        self.gicc.write(GICC_BPR, 0);
        self.gicc.write(GICC_CTLR, 1);
    }

    /// Enables delivery of `intid` (for a private one: on the calling core).
    pub fn enable(&self, intid: u32) {
        self.gicd.write(
            GICD_ISENABLER + 4 * (intid / 32) as usize,
            1 << (intid % 32),
        );
    }

    /// Disables delivery of `intid`.
    pub fn disable(&self, intid: u32) {
        self.gicd.write(
            GICD_ICENABLER + 4 * (intid / 32) as usize,
            1 << (intid % 32),
        );
    }

    /// Configures how `intid` signals (only meaningful for PPIs and SPIs).
    pub fn set_trigger(&self, intid: u32, trigger: Trigger) {
        let reg = GICD_ICFGR + 4 * (intid / 16) as usize;
        let bit = 1 << ((intid % 16) * 2 + 1);
        let value = self.gicd.read(reg);
        self.gicd.write(
            reg,
            match trigger {
                Trigger::Edge => value | bit,
                Trigger::Level => value & !bit,
            },
        );
    }

    /// Routes the shared interrupt `intid` to the core with GIC CPU number `cpu`.
    pub fn set_target(&self, intid: u32, cpu: u8) {
        let reg = GICD_ITARGETSR + 4 * (intid / 4) as usize;
        let shift = (intid % 4) * 8;
        let value = self.gicd.read(reg) & !(0xff << shift);
        self.gicd.write(reg, value | (1u32 << cpu) << shift);
    }

    /// Acknowledges the highest-priority pending interrupt, if any.
    pub fn acknowledge(&self) -> Option<u32> {
        let iar = self.gicc.read(GICC_IAR);
        let intid = iar & 0x3ff;
        (intid < SPURIOUS_FIRST).then_some(iar)
    }

    /// Signals the end of handling an interrupt (`iar` as acknowledged).
    pub fn end_of_interrupt(&self, iar: u32) {
        self.gicc.write(GICC_EOIR, iar);
    }

    /// The calling core's bit in target lists (GICD_ITARGETSR0 is banked:
    /// each core reads its own CPU interface's bit).
    pub fn cpu_mask(&self) -> u8 {
        self.gicd.read(GICD_ITARGETSR) as u8
    }

    /// Sends software interrupt `sgi` (0..16) to the cores in `cpu_mask`.
    pub fn send_sgi(&self, sgi: u32, cpu_mask: u8) {
        self.gicd
            .write(GICD_SGIR, ((cpu_mask as u32) << 16) | (sgi & 0xf));
    }
}
