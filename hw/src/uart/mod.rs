//! Console UART drivers. Output only is needed by the kernel's console; both
//! drivers poll (a console must work before interrupts do, and in a crash).

mod cadence;
mod pl011;

pub use cadence::Cadence;
pub use pl011::Pl011;

/// A UART that the console writes to.
pub trait Uart: Send {
    /// Puts the UART into a known working state (8N1, transmitter on).
    fn init(&mut self);
    /// Sends one byte, waiting for room in the transmit FIFO.
    fn put(&mut self, byte: u8);
    /// Waits until every queued byte has left the UART.
    fn flush(&mut self);
    /// A received byte, if one is waiting (never waits).
    fn get(&mut self) -> Option<u8>;
}
