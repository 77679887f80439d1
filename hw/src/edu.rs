//! QEMU's `edu` teaching device: a 4 KiB on-device buffer and a one-shot
//! DMA engine, used for deterministic DMA tests. Each transfer takes 100 ms
//! of virtual time in QEMU and addresses only 28 bits of IOVA.

use crate::mmio::Mmio;

/// PCI vendor ID of edu.
pub const VENDOR: u16 = 0x1234;
/// PCI device ID of edu.
pub const DEVICE: u16 = 0x11e8;
/// Device-side address of the on-device buffer.
pub const BUFFER_ADDRESS: u64 = 0x40000;
/// Size of the on-device buffer.
pub const BUFFER_SIZE: usize = 4096;
/// Longest transfer: QEMU 7.2 aborts on a 4096-byte DMA.
pub const MAX_TRANSFER: usize = 4095;
/// Highest IOVA the engine can reach (28-bit DMA mask).
pub const DMA_LIMIT: u64 = 1 << 28;

const IDENTIFICATION: usize = 0x00;
const INTERRUPT_STATUS: usize = 0x24;
const INTERRUPT_ACK: usize = 0x64;
const DMA_SOURCE: usize = 0x80;
const DMA_DESTINATION: usize = 0x88;
const DMA_COUNT: usize = 0x90;
const DMA_COMMAND: usize = 0x98;

const COMMAND_RUN: u32 = 1 << 0;
const COMMAND_TO_RAM: u32 = 1 << 1;
const COMMAND_IRQ: u32 = 1 << 2;

/// Which way an edu transfer moves data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EduDirection {
    /// Memory (IOVA) to the device buffer.
    ToDevice,
    /// The device buffer to memory (IOVA).
    FromDevice,
}

/// A transfer edu cannot do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EduError {
    /// A transfer is still running.
    Busy,
    /// Longer than [`MAX_TRANSFER`] or past the device buffer.
    TooLong,
    /// The IOVA is beyond the 28-bit DMA mask.
    AddressTooHigh,
}

/// The edu device behind one BAR0.
pub struct Edu {
    regs: Mmio,
}

impl Edu {
    /// Driver for the edu whose BAR0 registers are `regs`.
    pub fn new(regs: Mmio) -> Self {
        Self { regs }
    }

    /// Identification register (0x010000ed on QEMU's edu 1.0).
    pub fn identification(&self) -> u32 {
        self.regs.read(IDENTIFICATION)
    }

    /// Whether a transfer is running.
    pub fn busy(&self) -> bool {
        self.regs.read(DMA_COMMAND) & COMMAND_RUN != 0
    }

    /// Starts a transfer of `len` bytes between `iova` and offset
    /// `buffer_offset` of the device buffer; raises INTx when done.
    pub fn start(
        &self,
        direction: EduDirection,
        iova: u64,
        buffer_offset: usize,
        len: usize,
    ) -> Result<(), EduError> {
        if self.busy() {
            return Err(EduError::Busy);
        }
        if len == 0 || len > MAX_TRANSFER || buffer_offset + len > BUFFER_SIZE {
            return Err(EduError::TooLong);
        }
        if iova + len as u64 > DMA_LIMIT {
            return Err(EduError::AddressTooHigh);
        }
        let device = BUFFER_ADDRESS + buffer_offset as u64;
        let (source, destination, to_ram) = match direction {
            EduDirection::ToDevice => (iova, device, 0),
            EduDirection::FromDevice => (device, iova, COMMAND_TO_RAM),
        };
        self.regs.write(DMA_SOURCE, source as u32);
        self.regs.write(DMA_DESTINATION, destination as u32);
        self.regs.write(DMA_COUNT, len as u32);
        self.regs
            .write(DMA_COMMAND, COMMAND_RUN | COMMAND_IRQ | to_ram);
        Ok(())
    }

    /// Acknowledges edu's interrupt; returns the status bits that were set.
    pub fn acknowledge_interrupt(&self) -> u32 {
        let status = self.regs.read(INTERRUPT_STATUS);
        self.regs.write(INTERRUPT_ACK, status);
        status
    }
}
