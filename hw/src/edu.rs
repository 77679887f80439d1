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
/// Bytes of the buffer a transfer may reach: QEMU 7.2's range check treats
/// a transfer that ends exactly at the buffer's end as out of bounds (and
/// stops QEMU), so the last byte is never used.
pub const USABLE_BUFFER: usize = BUFFER_SIZE - 1;
/// Longest transfer (see [`USABLE_BUFFER`]).
pub const MAX_TRANSFER: usize = USABLE_BUFFER;
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
        if len == 0 || len > MAX_TRANSFER || buffer_offset + len > USABLE_BUFFER {
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

/// edu as an engine of the DMA scheduler. A scheduler segment (up to a
/// page) is moved as chunks of at most 2 KiB, because edu refuses a 4 KiB
/// transfer; the segment completes when its last chunk has.
pub struct EduEngine {
    edu: Edu,
    stream: u32,
    current: Option<Running>,
}

struct Running {
    segment: dma::Segment,
    /// Bytes of the segment already handed to edu.
    issued: usize,
}

/// Largest chunk one edu transfer carries.
const CHUNK: usize = 2048;

impl EduEngine {
    /// Engine over `edu`, whose DMA carries SMMU StreamID `stream`.
    pub fn new(edu: Edu, stream: u32) -> Self {
        Self {
            edu,
            stream,
            current: None,
        }
    }

    /// The device, for direct register access.
    pub fn edu(&self) -> &Edu {
        &self.edu
    }

    fn issue_next(&mut self) -> Result<(), EduError> {
        let running = self.current.as_mut().expect("a segment is running");
        let seg = &running.segment;
        let len = (seg.len() - running.issued).min(CHUNK);
        let offset = (seg.device_addr - BUFFER_ADDRESS) as usize + running.issued;
        let direction = match seg.direction {
            dma::Direction::ToDevice => EduDirection::ToDevice,
            dma::Direction::FromDevice => EduDirection::FromDevice,
        };
        self.edu.start(
            direction,
            (seg.va().start + running.issued) as u64,
            offset,
            len,
        )?;
        running.issued += len;
        Ok(())
    }

    /// Advances the running segment; calls `done` when it has finished.
    pub fn poll_completions(&mut self, mut done: impl FnMut(dma::SegmentId, dma::Completion)) {
        self.edu.acknowledge_interrupt();
        let Some(running) = self.current.as_ref() else {
            return;
        };
        if self.edu.busy() {
            return;
        }
        if running.issued < running.segment.len() {
            if let Err(e) = self.issue_next() {
                let id = self.current.take().expect("running").segment.id;
                done(
                    id,
                    dma::Completion::Error(dma::EngineError::Device(e as u32)),
                );
            }
            return;
        }
        let id = self.current.take().expect("running").segment.id;
        done(id, dma::Completion::Ok);
    }
}

impl dma::Engine for EduEngine {
    fn caps(&self) -> dma::EngineCaps {
        dma::EngineCaps {
            max_segment: BUFFER_SIZE,
            max_pieces: 1,
            block: 1,
            can_resume: false,
            stream: dma::StreamId(self.stream),
            physical: false,
        }
    }

    fn start(&mut self, seg: &dma::Segment) -> Result<(), dma::EngineError> {
        if self.current.is_some() || self.edu.busy() {
            return Err(dma::EngineError::Busy);
        }
        let in_buffer = seg.device_addr >= BUFFER_ADDRESS
            && seg.device_addr + seg.len() as u64 <= BUFFER_ADDRESS + USABLE_BUFFER as u64;
        if !in_buffer || seg.pieces.len() != 1 {
            return Err(dma::EngineError::Device(EduError::TooLong as u32));
        }
        self.current = Some(Running {
            segment: seg.clone(),
            issued: 0,
        });
        self.issue_next().map_err(|e| {
            self.current = None;
            dma::EngineError::Device(e as u32)
        })
    }
}
