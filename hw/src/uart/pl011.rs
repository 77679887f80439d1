//! Arm PL011 UART (QEMU virt's console).

use super::Uart;
use crate::mmio::Mmio;

const DR: usize = 0x00;
const FR: usize = 0x18;
const IBRD: usize = 0x24;
const FBRD: usize = 0x28;
const LCR_H: usize = 0x2c;
const CR: usize = 0x30;
const IMSC: usize = 0x38;
const ICR: usize = 0x44;

/// Fields of FR.
mod fr {
    pub const BUSY: u32 = 1 << 3;
    pub const RXFE: u32 = 1 << 4;
    pub const TXFF: u32 = 1 << 5;
}

const LCR_FEN_8BIT: u32 = (1 << 4) | (0b11 << 5);
const CR_UARTEN_TXE_RXE: u32 = (1 << 0) | (1 << 8) | (1 << 9);

/// A PL011 used as a polled console.
pub struct Pl011 {
    regs: Mmio,
}

impl Pl011 {
    /// Driver for the PL011 whose registers are `regs` (4 KiB block).
    pub fn new(regs: Mmio) -> Self {
        Self { regs }
    }
}

impl Uart for Pl011 {
    fn init(&mut self) {
        self.regs.write(CR, 0);
        self.regs.write(IMSC, 0);
        self.regs.write(ICR, 0x7ff);
        // 115200 baud from a 24 MHz reference (QEMU ignores the rate).
        self.regs.write(IBRD, 13);
        self.regs.write(FBRD, 1);
        self.regs.write(LCR_H, LCR_FEN_8BIT);
        self.regs.write(CR, CR_UARTEN_TXE_RXE);
    }

    fn put(&mut self, byte: u8) {
        while self.regs.read(FR) & fr::TXFF != 0 {
            core::hint::spin_loop();
        }
        self.regs.write(DR, byte as u32);
    }

    fn flush(&mut self) {
        while self.regs.read(FR) & fr::BUSY != 0 {
            core::hint::spin_loop();
        }
    }

    fn get(&mut self) -> Option<u8> {
        (self.regs.read(FR) & fr::RXFE == 0).then(|| self.regs.read(DR) as u8)
    }
}
