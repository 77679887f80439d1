//! Device bring-up: each device the kernel drives (QEMU's edu, NVMe, the
//! ZynqMP's SD card and ZDMA channel) found, initialised and registered
//! with the service as an engine, once.

extern crate alloc;

use super::service::{add_engine, service_from_irq};
use crate::mm;
use crate::mm::device_memory::{self, DeviceFrames};
use alloc::boxed::Box;
use dma::EngineId;
use hw::dma_memory::{DmaAllocator, DmaMemory};
use hw::edu::{Edu, EduEngine};
use hw::gicv2::Trigger;
use hw::mmio::Mmio;
use hw::nvme::{Nvme, NvmeEngine};
/// The device error a ZDMA segment ends with when its memory is not
/// pinned (see [`zdma`]).
pub use hw::zdma::NOT_DMA_MEMORY as ZDMA_NOT_DMA_MEMORY;
use hw::zdma::{Zdma, ZdmaEngine};
use spin::Once;

/// Why a device could not be opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceError {
    /// No such PCI function (is it on QEMU's command line?).
    NotFound,
    /// No SMMU: its DMA could not reach virtual addresses.
    NoSmmu,
    /// The controller did not come up.
    Init(hw::nvme::NvmeError),
    /// The SD card did not come up.
    Sd(hw::sdhci::SdError),
    /// No frames for the controller's descriptor table.
    OutOfMemory,
}

/// Device memory for queues and PRP lists (pinned for good), granted to
/// the device `stream` for good: behind the SMMU the controller reaches
/// only what it was granted.
struct GrantedFrames {
    stream: u32,
}

impl DmaAllocator for GrantedFrames {
    fn alloc(&mut self, bytes: usize, align: usize) -> Option<DmaMemory> {
        let memory = DeviceFrames.alloc(bytes, align)?;
        let start = memory.addr() as usize;
        if let Err(e) = crate::iommu::grant_frames(self.stream, start..start + memory.len()) {
            log::error!("queue frames for stream {:#x}: {e:?}", self.stream);
            device_memory::free(memory);
            return None;
        }
        Some(memory)
    }
}

/// Routes a DMA device's INTx to the service.
pub(crate) fn register_intx(intid: Option<u32>) {
    if let Some(intid) = intid {
        if let Err(e) = crate::irq::register(intid, Trigger::Level, service_from_irq) {
            log::warn!("INTx {intid}: {e:?}; completions are polled");
        }
    }
}

/// Each device is opened exactly once (two cores asking at once get the
/// same engine: the second waits for the first); a failed opening is not
/// kept, the next call tries again. The locks a bring-up takes:
/// `docs/ARCHITECTURE.md`, "Locks".
static EDU: Once<EngineId> = Once::new();
static ZDMA: Once<EngineId> = Once::new();
static NVME: Once<(EngineId, NvmeInfo)> = Once::new();
static SD: Once<(EngineId, NvmeInfo)> = Once::new();

/// The board's memory-to-memory DMA channel (the ZynqMP's ZDMA) as an
/// engine (opened once, then shared). A transfer copies its memory to the
/// device address (another virtual address: `ToDevice`) or from it.
///
/// No SMMU stands in front of it (QEMU's `xlnx-zcu102` does not model the
/// MMU-500), so it moves physical addresses and nothing can fault: both
/// sides must be pinned (`Policy::Pin` pins the transfer's own memory; the
/// device-address side is the caller's to pin), else the segment fails
/// with `EngineError::Device(hw::zdma::NOT_DMA_MEMORY)` before the channel
/// touches anything. The other policies would leave pages free to move
/// while the channel uses their old addresses: they are refused at submit
/// with `SubmitError::NeedsSmmu`.
pub fn zdma() -> Result<EngineId, DeviceError> {
    ZDMA.try_call_once(open_zdma).copied()
}

/// Finds, initialises and registers the ZDMA channel (see [`zdma`]).
fn open_zdma() -> Result<EngineId, DeviceError> {
    let channel = hw::board::CURRENT
        .zdma
        .as_ref()
        .ok_or(DeviceError::NotFound)?;
    // SAFETY: the board names the channel's register block, inside a device
    // window the kernel maps as device memory; nothing else drives it.
    let regs = unsafe { hw::mmio::Mmio::new(channel.base, 0x1000) };
    let translate: fn(usize) -> Option<u64> = |va| mm::dma_frame(va).map(|pa| pa as u64);
    let id = add_engine(Box::new(ZdmaEngine::new(Zdma::new(regs), translate)), 1);
    register_intx(Some(channel.intid));
    Ok(id)
}

/// Where QEMU's edu device keeps its buffer, in its own address space: the
/// device address of every edu transfer.
pub const EDU_BUFFER: u64 = hw::edu::BUFFER_ADDRESS;

/// QEMU's edu device as a DMA engine (opened once, then shared).
pub fn edu() -> Result<EngineId, DeviceError> {
    EDU.try_call_once(open_edu).copied()
}

/// Finds, initialises and registers the edu device (see [`edu`]).
fn open_edu() -> Result<EngineId, DeviceError> {
    if !crate::iommu::present() {
        return Err(DeviceError::NoSmmu);
    }
    let f = crate::pci::find(hw::edu::VENDOR, hw::edu::DEVICE)
        .into_iter()
        .next()
        .ok_or(DeviceError::NotFound)?;
    let bar = f.bars[0].ok_or(DeviceError::NotFound)?;
    // SAFETY: BAR0 was assigned by PCI enumeration inside the PCIe window,
    // which the kernel maps as device memory; only this driver uses it.
    let edu = Edu::new(unsafe { Mmio::new(bar.address, bar.size) });
    let id = add_engine(
        Box::new(EduEngine::new(edu, f.bdf.requester_id() as u32)),
        1,
    );
    register_intx(f.intid);
    Ok(id)
}

/// What an app needs to know about the NVMe namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NvmeInfo {
    /// Bytes in namespace 1.
    pub capacity: u64,
    /// Bytes per block: transfers and disk offsets must be multiples.
    pub block_size: usize,
    /// Largest segment (one command).
    pub max_transfer: usize,
    /// Pieces of memory one command carries: up to 256 when the controller
    /// takes SGLs, else 1 (a gather transfer must then have its piece
    /// boundaries on blocks).
    pub max_pieces: usize,
}

/// The board's SD card (the ZynqMP's SD0) as a block engine of the DMA
/// scheduler, with the same description as an NVMe namespace, so a disk
/// user (the key-value store's log) runs on either. Opened once, then
/// shared; `NotFound` without a controller or a card.
pub fn sd() -> Result<(EngineId, NvmeInfo), DeviceError> {
    SD.try_call_once(open_sd).copied()
}

/// Finds, initialises and registers the SD card (see [`sd`]).
fn open_sd() -> Result<(EngineId, NvmeInfo), DeviceError> {
    let base = hw::board::CURRENT.sd.ok_or(DeviceError::NotFound)?;
    // SAFETY: the board names the controller's registers, inside a device
    // window the kernel maps as device memory; nothing else drives it.
    let regs = unsafe { Mmio::new(base, 0x1000) };
    let card = hw::sdhci::SdCard::init(regs).map_err(DeviceError::Sd)?;
    let table = DeviceFrames
        .alloc(hw::sdhci::TABLE_BYTES, mm::FRAME_SIZE)
        .ok_or(DeviceError::OutOfMemory)?;
    let translate: fn(usize) -> Option<u64> = |va| mm::dma_frame(va).map(|pa| pa as u64);
    let engine = hw::sdhci::SdEngine::new(card, table, translate);
    let info = NvmeInfo {
        capacity: engine.capacity(),
        block_size: hw::sdhci::BLOCK,
        max_transfer: hw::sdhci::MAX_SEGMENT,
        max_pieces: 1,
    };
    let id = add_engine(Box::new(engine), 1);
    register_intx(Some(hw::sdhci::SD0_INTID));
    log::info!("sd: card of {} MiB, ADMA2", info.capacity >> 20);
    Ok((id, info))
}

/// The first NVMe controller as a DMA engine (opened once, then shared).
pub fn nvme() -> Result<(EngineId, NvmeInfo), DeviceError> {
    NVME.try_call_once(open_nvme).copied()
}

/// Finds, initialises and registers the NVMe controller (see [`nvme`]).
fn open_nvme() -> Result<(EngineId, NvmeInfo), DeviceError> {
    if !crate::iommu::present() {
        return Err(DeviceError::NoSmmu);
    }
    let f = crate::pci::functions()
        .into_iter()
        .find(|f| f.class == hw::nvme::CLASS)
        .ok_or(DeviceError::NotFound)?;
    let bar = f.bars[0].ok_or(DeviceError::NotFound)?;
    // SAFETY: as for edu: an assigned BAR in the device-mapped PCIe window.
    let regs = unsafe { Mmio::new(bar.address, bar.size) };
    let stream = f.bdf.requester_id() as u32;
    let nvme = Nvme::init(regs, &mut GrantedFrames { stream }).map_err(DeviceError::Init)?;
    let info = NvmeInfo {
        capacity: nvme.blocks() * nvme.block_size() as u64,
        block_size: nvme.block_size(),
        max_transfer: nvme.max_transfer(),
        max_pieces: 1,
    };
    let engine =
        NvmeEngine::new(nvme, stream, &mut GrantedFrames { stream }).map_err(DeviceError::Init)?;
    let info = NvmeInfo {
        max_pieces: dma::Engine::caps(&engine).max_pieces,
        ..info
    };
    let id = add_engine(Box::new(engine), 16);
    register_intx(f.intid);
    Ok((id, info))
}
