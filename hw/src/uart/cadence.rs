//! Cadence UART (Zynq UltraScale+ `uart0`/`uart1`), the ZCU102 and QFDB console.
//!
//! Register map per the Zynq UltraScale+ TRM (UG1085, "UART"): control (CR),
//! mode (MR), baud generator (BAUDGEN), channel status (SR), FIFO (FIFO) and
//! baud divider (BAUDDIV).

use super::Uart;
use crate::mmio::Mmio;

const CR: usize = 0x00;
const MR: usize = 0x04;
const IDR: usize = 0x0c;
const BAUDGEN: usize = 0x18;
const SR: usize = 0x2c;
const FIFO: usize = 0x30;
const BAUDDIV: usize = 0x34;

/// Fields of CR.
mod cr {
    pub const RXRST: u32 = 1 << 0;
    pub const TXRST: u32 = 1 << 1;
    pub const RX_EN: u32 = 1 << 2;
    pub const TX_EN: u32 = 1 << 4;
    pub const STOPBRK: u32 = 1 << 8;
}

/// Fields of SR.
mod sr {
    pub const RXEMPTY: u32 = 1 << 1;
    pub const TXEMPTY: u32 = 1 << 3;
    pub const TXFULL: u32 = 1 << 4;
}

/// Mode: 8 data bits, no parity, 1 stop bit, normal channel mode.
const MR_8N1: u32 = 0b100 << 3;
const ALL_INTERRUPTS: u32 = 0x3fff;

/// 115200 baud from the ZCU102's 100 MHz UART reference clock:
/// 100 MHz / (124 * (6 + 1)) = 115207 baud.
const BAUD_CD: u32 = 124;
const BAUD_BDIV: u32 = 6;

/// A Cadence UART used as a polled console.
pub struct Cadence {
    regs: Mmio,
}

impl Cadence {
    /// Driver for the Cadence UART whose registers are `regs` (4 KiB block).
    pub fn new(regs: Mmio) -> Self {
        Self { regs }
    }
}

impl Uart for Cadence {
    fn init(&mut self) {
        self.regs.write(IDR, ALL_INTERRUPTS);
        // Disable, program the line, reset both FIFOs, then enable.
        self.regs.write(CR, cr::STOPBRK | (1 << 5) | (1 << 3));
        self.regs.write(MR, MR_8N1);
        self.regs.write(BAUDGEN, BAUD_CD);
        self.regs.write(BAUDDIV, BAUD_BDIV);
        self.regs.write(CR, cr::STOPBRK | cr::TXRST | cr::RXRST);
        self.regs.write(CR, cr::STOPBRK | cr::TX_EN | cr::RX_EN);
    }

    fn put(&mut self, byte: u8) {
        while self.regs.read(SR) & sr::TXFULL != 0 {
            core::hint::spin_loop();
        }
        self.regs.write(FIFO, byte as u32);
    }

    fn flush(&mut self) {
        while self.regs.read(SR) & sr::TXEMPTY == 0 {
            core::hint::spin_loop();
        }
    }

    fn get(&mut self) -> Option<u8> {
        (self.regs.read(SR) & sr::RXEMPTY == 0).then(|| self.regs.read(FIFO) as u8)
    }
}
