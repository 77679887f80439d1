//! An NVMe namespace as an engine of the DMA scheduler: one command per
//! segment, its slot in the I/O queue as the command identifier.

use super::{page, sgl, Nvme, NvmeError, IO_QUEUE_ENTRIES, OP_READ, OP_WRITE};
use crate::dma_memory::{DmaAllocator, DmaMemory};
use alloc::vec::Vec;

/// An NVMe namespace as an engine of the DMA scheduler: a segment is one
/// read or write command whose PRPs or SGL are the segment's IOVAs, and
/// whose device address is a byte offset on the namespace (block-aligned).
/// With SGLs a segment carries up to [`sgl::MAX_PIECES`] pieces of memory;
/// without, one.
pub struct NvmeEngine {
    nvme: Nvme,
    stream: u32,
    /// Segment of each command identifier (= slot) in flight.
    slots: [Option<dma::SegmentId>; IO_QUEUE_ENTRIES as usize],
    /// The controller was stopped ([`NvmeEngine::stop`]): no more commands.
    stopped: bool,
    /// One pinned PRP-list (or SGL) page per slot.
    prp_lists: Vec<DmaMemory>,
}

/// `EngineError::Device` code for a segment that is not block-aligned.
pub const ERROR_MISALIGNED: u32 = 0x1_0000;

impl NvmeEngine {
    /// Engine over `nvme`, whose DMA carries StreamID `stream`; PRP-list
    /// pages come from `memory`.
    pub fn new(nvme: Nvme, stream: u32, memory: &mut dyn DmaAllocator) -> Result<Self, NvmeError> {
        let prp_lists = (0..IO_QUEUE_ENTRIES)
            .map(|_| page(memory))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            nvme,
            stream,
            slots: [None; IO_QUEUE_ENTRIES as usize],
            stopped: false,
            prp_lists,
        })
    }

    /// The controller.
    pub fn controller(&self) -> &Nvme {
        &self.nvme
    }

    /// Bytes in the namespace.
    pub fn capacity(&self) -> u64 {
        self.nvme.blocks() * self.nvme.block_size() as u64
    }

    /// Stops the controller for good (it stopped completing) and passes
    /// each segment it held, which it no longer touches, to `held`, for the
    /// caller to end with an error. Later segments are refused. Returns
    /// whether the controller confirmed it stopped.
    pub fn stop(&mut self, mut held: impl FnMut(dma::SegmentId)) -> bool {
        self.stopped = true;
        let confirmed = self.nvme.disable();
        self.slots
            .iter_mut()
            .filter_map(Option::take)
            .for_each(&mut held);
        confirmed
    }

    /// Takes the controller's completions; calls `done` for each segment.
    pub fn poll_completions(&mut self, mut done: impl FnMut(dma::SegmentId, dma::Completion)) {
        let slots = &mut self.slots;
        self.nvme.poll(|c| {
            if let Some(id) = slots.get_mut(c.cid as usize).and_then(Option::take) {
                let completion = match c.status {
                    Ok(()) => dma::Completion::Ok,
                    Err(NvmeError::Status(s)) => {
                        dma::Completion::Error(dma::EngineError::Device(s as u32))
                    }
                    Err(_) => dma::Completion::Error(dma::EngineError::Device(u32::MAX)),
                };
                done(id, completion);
            }
        });
    }
}

impl dma::Engine for NvmeEngine {
    fn caps(&self) -> dma::EngineCaps {
        dma::EngineCaps {
            max_segment: self.nvme.max_transfer(),
            max_pieces: if self.nvme.supports_sgl() {
                sgl::MAX_PIECES
            } else {
                1
            },
            block: self.nvme.block_size(),
            can_resume: false,
            stream: dma::StreamId(self.stream),
            physical: false,
        }
    }

    fn start(&mut self, seg: &dma::Segment) -> Result<(), dma::EngineError> {
        if self.stopped {
            return Err(dma::EngineError::TimedOut);
        }
        let block = self.nvme.block_size() as u64;
        if !seg.device_addr.is_multiple_of(block) || !(seg.len() as u64).is_multiple_of(block) {
            return Err(dma::EngineError::Device(ERROR_MISALIGNED));
        }
        let Some(slot) = self.slots.iter().position(Option::is_none) else {
            return Err(dma::EngineError::Busy);
        };
        let opcode = match seg.direction {
            dma::Direction::ToDevice => OP_WRITE,
            dma::Direction::FromDevice => OP_READ,
        };
        let lba = seg.device_addr / block;
        match self.nvme.submit(
            slot as u16,
            opcode,
            lba,
            &seg.pieces,
            &mut self.prp_lists[slot],
        ) {
            Ok(()) => {
                self.slots[slot] = Some(seg.id);
                Ok(())
            }
            Err(NvmeError::QueueFull) => Err(dma::EngineError::Busy),
            Err(NvmeError::BadRequest) => Err(dma::EngineError::Device(ERROR_MISALIGNED + 1)),
            Err(_) => Err(dma::EngineError::Device(u32::MAX)),
        }
    }
}
