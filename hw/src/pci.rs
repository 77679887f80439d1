//! PCI Express on a generic ECAM host bridge (QEMU virt): enumerate the root
//! bus, size and assign memory BARs, enable bus mastering, and work out each
//! function's legacy interrupt. Booted with `-kernel`, no firmware has done
//! any of this.
//!
//! The arithmetic (BAR sizing, window allocation, INTx swizzle) is pure and
//! host-tested; configuration space access goes through [`ConfigSpace`].

use crate::mmio::Mmio;
use core::ops::Range;

/// Bus/device/function address of a PCI function; also its SMMU StreamID.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bdf {
    /// Bus number.
    pub bus: u8,
    /// Device (slot) number, 0..32.
    pub device: u8,
    /// Function number, 0..8.
    pub function: u8,
}

impl Bdf {
    /// The requester ID (`bus << 8 | device << 3 | function`), which QEMU's
    /// SMMUv3 uses as the StreamID.
    pub fn requester_id(self) -> u16 {
        (self.bus as u16) << 8 | (self.device as u16) << 3 | self.function as u16
    }
}

/// Reads and writes of configuration registers.
pub trait ConfigSpace {
    /// Reads the 32-bit register at `offset` of `bdf`.
    fn read(&self, bdf: Bdf, offset: u16) -> u32;
    /// Writes the 32-bit register at `offset` of `bdf`.
    fn write(&self, bdf: Bdf, offset: u16, value: u32);
}

/// The ECAM window of a generic PCIe host bridge.
pub struct Ecam {
    window: Mmio,
}

impl Ecam {
    /// Config space through the ECAM `window` (1 MiB per bus).
    pub fn new(window: Mmio) -> Self {
        Self { window }
    }

    fn offset(bdf: Bdf, reg: u16) -> usize {
        ((bdf.bus as usize) << 20)
            | ((bdf.device as usize) << 15)
            | ((bdf.function as usize) << 12)
            | reg as usize
    }
}

impl ConfigSpace for Ecam {
    fn read(&self, bdf: Bdf, offset: u16) -> u32 {
        self.window.read(Self::offset(bdf, offset))
    }

    fn write(&self, bdf: Bdf, offset: u16, value: u32) {
        self.window.write(Self::offset(bdf, offset), value)
    }
}

const VENDOR_DEVICE: u16 = 0x00;
const COMMAND: u16 = 0x04;
const CLASS: u16 = 0x08;
const HEADER_TYPE: u16 = 0x0c;
const BAR0: u16 = 0x10;
const INTERRUPT: u16 = 0x3c;

/// Fields of COMMAND.
mod command {
    pub const MEMORY: u32 = 1 << 1;
    pub const BUS_MASTER: u32 = 1 << 2;
    pub const INTX_DISABLE: u32 = 1 << 10;
}

/// An assigned memory BAR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bar {
    /// Bus (and, identity-mapped, CPU) address.
    pub address: usize,
    /// Size in bytes.
    pub size: usize,
}

/// A function found on the bus, with its resources assigned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Function {
    /// Where it is.
    pub bdf: Bdf,
    /// Vendor ID.
    pub vendor: u16,
    /// Device ID.
    pub device: u16,
    /// Class code, subclass, programming interface.
    pub class: u32,
    /// Memory BARs (index = BAR number; the upper half of a 64-bit BAR is None).
    pub bars: [Option<Bar>; 6],
    /// GIC interrupt ID of its INTx line, if it has one.
    pub intid: Option<u32>,
}

/// Why enumeration could not assign resources.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PciError {
    /// The memory window has no room for a BAR of this size.
    WindowFull {
        /// The function whose BAR did not fit.
        bdf: Bdf,
        /// The BAR's index.
        bar: u8,
        /// The BAR's size in bytes.
        size: usize,
    },
}

/// Hands out naturally aligned ranges of a bus-address window.
#[derive(Clone, Debug)]
pub struct WindowAllocator {
    next: usize,
    end: usize,
}

impl WindowAllocator {
    /// Allocator over `window`.
    pub fn new(window: Range<usize>) -> Self {
        Self {
            next: window.start,
            end: window.end,
        }
    }

    /// A `size`-byte range aligned to `size` (BARs are naturally aligned).
    pub fn allocate(&mut self, size: usize) -> Option<usize> {
        let start = self.next.checked_next_multiple_of(size)?;
        let end = start.checked_add(size)?;
        (end <= self.end).then(|| {
            self.next = end;
            start
        })
    }
}

/// Size of a memory BAR from the value read back after writing all ones
/// (`readback` holds the low and, for 64-bit BARs, high halves).
pub fn bar_size(readback: u64, is_64bit: bool) -> Option<usize> {
    let mask = if is_64bit {
        readback
    } else {
        readback | 0xffff_ffff_0000_0000
    };
    let size_mask = mask & !0xf;
    if size_mask == 0 || (!is_64bit && readback & 0xffff_fff0 == 0) {
        return None;
    }
    Some((!size_mask).wrapping_add(1) as usize)
}

/// Legacy interrupt of slot `device`, pin `pin` (1 = INTA) on a host bridge
/// whose four INTx lines start at SPI `first_spi`: the standard swizzle.
pub fn intx_intid(first_spi: u32, device: u8, pin: u8) -> Option<u32> {
    if !(1..=4).contains(&pin) {
        return None;
    }
    Some(32 + first_spi + ((device as u32 + pin as u32 - 1) % 4))
}

/// Enumerates bus 0 of `config`: every function gets its memory BARs
/// assigned from `window` and memory decoding, bus mastering and INTx
/// enabled. Returns what it found, in slot order.
pub fn enumerate(
    config: &dyn ConfigSpace,
    window: &mut WindowAllocator,
    first_intx_spi: u32,
    mut found: impl FnMut(Function),
) -> Result<(), PciError> {
    for device in 0..32u8 {
        let functions = {
            let bdf = Bdf {
                bus: 0,
                device,
                function: 0,
            };
            if config.read(bdf, VENDOR_DEVICE) & 0xffff == 0xffff {
                continue;
            }
            if (config.read(bdf, HEADER_TYPE) >> 16) & 0x80 != 0 {
                8
            } else {
                1
            }
        };
        for function in 0..functions {
            let bdf = Bdf {
                bus: 0,
                device,
                function,
            };
            let id = config.read(bdf, VENDOR_DEVICE);
            if id & 0xffff == 0xffff {
                continue;
            }
            if (config.read(bdf, HEADER_TYPE) >> 16) & 0x7f != 0 {
                continue; // bridges: the devices we drive sit on the root bus
            }
            found(setup_function(config, window, bdf, id, first_intx_spi)?);
        }
    }
    Ok(())
}

fn setup_function(
    config: &dyn ConfigSpace,
    window: &mut WindowAllocator,
    bdf: Bdf,
    id: u32,
    first_intx_spi: u32,
) -> Result<Function, PciError> {
    let command = config.read(bdf, COMMAND) & 0xffff;
    config.write(
        bdf,
        COMMAND,
        command & !(command::MEMORY | command::BUS_MASTER),
    );
    let mut bars = [None; 6];
    let mut index = 0;
    while index < 6 {
        let reg = BAR0 + 4 * index as u16;
        let original = config.read(bdf, reg);
        if original & 1 != 0 {
            index += 1; // I/O BAR: not used
            continue;
        }
        let is_64bit = (original >> 1) & 0b11 == 0b10;
        config.write(bdf, reg, u32::MAX);
        let mut readback = config.read(bdf, reg) as u64;
        if is_64bit {
            config.write(bdf, reg + 4, u32::MAX);
            readback |= (config.read(bdf, reg + 4) as u64) << 32;
        }
        if let Some(size) = bar_size(readback, is_64bit) {
            let address = window.allocate(size).ok_or(PciError::WindowFull {
                bdf,
                bar: index as u8,
                size,
            })?;
            config.write(bdf, reg, address as u32 | (original & 0xf));
            if is_64bit {
                config.write(bdf, reg + 4, (address as u64 >> 32) as u32);
            }
            bars[index] = Some(Bar { address, size });
        } else {
            config.write(bdf, reg, original);
        }
        index += if is_64bit { 2 } else { 1 };
    }
    let pin = ((config.read(bdf, INTERRUPT) >> 8) & 0xff) as u8;
    let intid = intx_intid(first_intx_spi, bdf.device, pin);
    config.write(
        bdf,
        COMMAND,
        (command | command::MEMORY | command::BUS_MASTER) & !command::INTX_DISABLE,
    );
    Ok(Function {
        bdf,
        vendor: id as u16,
        device: (id >> 16) as u16,
        class: config.read(bdf, CLASS) >> 8,
        bars,
        intid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::collections::HashMap;

    /// A fake bus: registers per (bdf, offset), BARs that decode their size.
    struct FakeBus {
        regs: RefCell<HashMap<(Bdf, u16), u32>>,
        bar_sizes: HashMap<(Bdf, u16), u64>,
        upper_halves: Vec<(Bdf, u16)>,
    }

    impl ConfigSpace for FakeBus {
        fn read(&self, bdf: Bdf, offset: u16) -> u32 {
            *self
                .regs
                .borrow()
                .get(&(bdf, offset))
                .unwrap_or(&0xffff_ffff)
        }
        fn write(&self, bdf: Bdf, offset: u16, value: u32) {
            let mut regs = self.regs.borrow_mut();
            let value = match self.bar_sizes.get(&(bdf, offset)) {
                Some(&size) => {
                    let low_flags = regs[&(bdf, offset)] & 0xf;
                    (value & !((size - 1) as u32)) | low_flags
                }
                // The upper half of a 64-bit BAR holds any address.
                None if self.upper_halves.contains(&(bdf, offset)) => value,
                // Unimplemented BARs are hardwired to zero.
                None if (BAR0..BAR0 + 24).contains(&offset) => 0,
                None => value,
            };
            regs.insert((bdf, offset), value);
        }
    }

    fn bdf(device: u8) -> Bdf {
        Bdf {
            bus: 0,
            device,
            function: 0,
        }
    }

    #[test]
    fn bar_sizes_decode_from_the_readback() {
        assert_eq!(bar_size(0xfff0_0000, false), Some(1 << 20));
        assert_eq!(
            bar_size(0xffff_c004 | 0xffff_ffff_0000_0000, true),
            Some(16 << 10)
        );
        assert_eq!(bar_size(0, false), None);
    }

    #[test]
    fn window_allocations_are_naturally_aligned_and_bounded() {
        let mut w = WindowAllocator::new(0x1000_0000..0x1020_0000);
        assert_eq!(w.allocate(0x1000), Some(0x1000_0000));
        assert_eq!(w.allocate(0x10_0000), Some(0x1010_0000));
        assert_eq!(w.allocate(0x10_0000), None, "the window is full");
        assert_eq!(w.allocate(usize::MAX), None, "overflow is refused");
    }

    #[test]
    fn intx_lines_are_swizzled_by_slot() {
        assert_eq!(intx_intid(3, 0, 1), Some(35));
        assert_eq!(intx_intid(3, 1, 1), Some(36));
        assert_eq!(intx_intid(3, 3, 2), Some(35));
        assert_eq!(intx_intid(3, 3, 0), None);
    }

    #[test]
    fn enumeration_assigns_bars_and_enables_bus_mastering() {
        let mut regs = HashMap::new();
        // Slot 0: host bridge-like function without BARs; slot 2: a device
        // with a 1 MiB 32-bit BAR0 and a 16 KiB 64-bit BAR2.
        regs.insert((bdf(0), VENDOR_DEVICE), 0x0008_1b36);
        regs.insert((bdf(0), HEADER_TYPE), 0);
        regs.insert((bdf(2), VENDOR_DEVICE), 0x11e8_1234);
        regs.insert((bdf(2), HEADER_TYPE), 0);
        regs.insert((bdf(2), CLASS), 0x00ff_0000);
        regs.insert((bdf(2), COMMAND), 0);
        regs.insert((bdf(2), INTERRUPT), 0x0100);
        regs.insert((bdf(2), BAR0), 0);
        regs.insert((bdf(2), BAR0 + 8), 0b0100);
        regs.insert((bdf(2), BAR0 + 12), 0);
        for i in [1u16, 4, 5] {
            regs.insert((bdf(2), BAR0 + 4 * i), 0);
        }
        for i in 0..6u16 {
            regs.entry((bdf(0), BAR0 + 4 * i)).or_insert(0);
        }
        regs.insert((bdf(0), COMMAND), 0);
        regs.insert((bdf(0), INTERRUPT), 0);
        let mut bar_sizes = HashMap::new();
        bar_sizes.insert((bdf(2), BAR0), 1 << 20);
        bar_sizes.insert((bdf(2), BAR0 + 8), 16 << 10);
        let upper_halves = vec![(bdf(2), BAR0 + 12)];
        let bus = FakeBus {
            regs: RefCell::new(regs),
            bar_sizes,
            upper_halves,
        };
        let mut window = WindowAllocator::new(0x1000_0000..0x3eff_0000);
        let mut found = Vec::new();
        enumerate(&bus, &mut window, 3, |f| found.push(f)).unwrap();
        assert_eq!(found.len(), 2);
        let edu = &found[1];
        assert_eq!((edu.vendor, edu.device), (0x1234, 0x11e8));
        assert_eq!(
            edu.bars[0],
            Some(Bar {
                address: 0x1000_0000,
                size: 1 << 20
            })
        );
        assert_eq!(
            edu.bars[2],
            Some(Bar {
                address: 0x1010_0000,
                size: 16 << 10
            })
        );
        assert_eq!(edu.bars[3], None);
        assert_eq!(edu.intid, Some(32 + 3 + 2));
        assert_eq!(edu.bdf.requester_id(), 0x10);
        let command = bus.read(edu.bdf, COMMAND);
        assert_eq!(
            command & (command::MEMORY | command::BUS_MASTER),
            command::MEMORY | command::BUS_MASTER
        );
        assert_eq!(bus.read(edu.bdf, BAR0), 0x1000_0000);
        assert_eq!(bus.read(edu.bdf, BAR0 + 8), 0x1010_0004);
    }
}
