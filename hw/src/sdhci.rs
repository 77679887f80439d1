//! An SD card behind a standard SD host controller (SDHCI, spec 3.0), as
//! the ZynqMP has two of: card bring-up, and block reads and writes moved
//! by the controller's own DMA engine (ADMA2) as an engine of the DMA
//! scheduler.
//!
//! ```text
//!  init: reset, power, clock ─ CMD0 ─ CMD8 (2.7-3.6 V, check pattern)
//!        ─ ACMD41 until powered up (CCS: block or byte addressing)
//!        ─ CMD2 ─ CMD3 (RCA) ─ CMD9 (CSD: capacity) ─ CMD7 (select) ─ CMD16 (512)
//!  segment: its pages' frames ─▶ descriptor table [addr | len | TRAN] ... [.. | END]
//!        ─▶ ADMA address, block count ─▶ CMD17/18 or CMD24/25 (auto CMD12)
//!        ─▶ the controller walks the table ─▶ "transfer complete" (interrupt)
//!        ─▶ poll_completions reports the segment
//! ```
//!
//! No SMMU stands in front of the controller in QEMU's `xlnx-zcu102`, so
//! the table holds physical addresses: the engine declares itself
//! physical and the scheduler gives it only pinned transfers.

use crate::dma_memory::DmaMemory;
use crate::mmio::Mmio;
use alloc::vec::Vec;

/// Physical address of the ZynqMP's SD0 controller.
pub const SD0: usize = 0xff16_0000;
/// SD0's interrupt (SPI 48).
pub const SD0_INTID: u32 = 32 + 48;
/// Bytes per block.
pub const BLOCK: usize = 512;

const ADMA_ERROR: usize = 0x54;
const ADMA_ADDRESS: usize = 0x58;
const ADMA_ADDRESS_HI: usize = 0x5c;
const CAPABILITIES: usize = 0x40;
const BLKSIZE: usize = 0x04;
const ARGUMENT: usize = 0x08;
const TRNMOD: usize = 0x0c;
const RSP: usize = 0x10;
const HOSTCTL: usize = 0x28;
const CLKCON: usize = 0x2c;
const NORINTSTS: usize = 0x30;
const NORINTSTSEN: usize = 0x34;
const NORINTSIGEN: usize = 0x38;

/// CLKCON: internal clock on, SD clock on (bits 0 and 2); SWRST_ALL (24).
const CLOCKS_ON: u32 = 0b101;
const RESET_ALL: u32 = 1 << 24;
/// HOSTCTL byte 1 (power control): 3.3 V, bus power on.
const POWER_ON: u32 = 0x0f << 8;
/// HOSTCTL byte 0, DMA select: ADMA2 with 32-bit addresses.
const DMA_ADMA2_32: u32 = 0b10 << 3;
/// CAPABILITIES: the controller has ADMA2.
const CAN_ADMA2: u32 = 1 << 19;
/// NORINTSTS: command complete, transfer complete, error.
const CMD_DONE: u32 = 1 << 0;
const XFER_DONE: u32 = 1 << 1;
const ERROR: u32 = 1 << 15;
/// NORINTSTS (error half): the ADMA engine stopped on a bad descriptor
/// or a bus error.
const ADMA_FAILED: u32 = 1 << 25;

/// TRNMOD: DMA, block count enable, auto CMD12, read (card to host),
/// multi-block.
const TRN_DMA: u32 = 1 << 0;
const TRN_BLOCK_COUNT: u32 = 1 << 1;
const TRN_AUTO_CMD12: u32 = 1 << 2;
const TRN_READ: u32 = 1 << 4;
const TRN_MULTI: u32 = 1 << 5;

/// Polls of a status bit before a command is given up (each a register read).
const POLLS: u32 = 1_000_000;

/// The response a command expects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Response {
    None,
    /// 136 bits (CID, CSD).
    Long,
    /// 48 bits.
    Short,
    /// 48 bits, then the card signals busy.
    ShortBusy,
    /// 48 bits without CRC or index (R3: OCR).
    Ocr,
}

impl Response {
    /// The command register's response, CRC-check and index-check bits.
    fn bits(self) -> u32 {
        match self {
            Response::None => 0,
            Response::Long => 0b01 | 1 << 3,
            Response::Short => 0b10 | 1 << 3 | 1 << 4,
            Response::ShortBusy => 0b11 | 1 << 3 | 1 << 4,
            Response::Ocr => 0b10,
        }
    }
}

/// Why the card could not be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SdError {
    /// Command `index` failed (the error interrupt bits).
    Command(u8, u32),
    /// Command `index` (or its data) did not complete in time.
    Timeout(u8),
    /// The card does not take 2.7-3.6 V or did not echo CMD8's pattern.
    Voltage,
    /// The card never finished powering up.
    NotReady,
    /// The CSD describes no capacity this driver understands.
    BadCsd,
    /// A transfer outside the card, or not whole blocks.
    OutOfRange,
    /// The controller has no ADMA2 engine.
    NoAdma2,
    /// The ADMA engine stopped (its error status register).
    Adma(u32),
}

/// An initialised card: its address and size.
pub struct SdCard {
    regs: Mmio,
    rca: u32,
    /// Block addressing (SDHC/SDXC) rather than byte addressing (SDSC).
    high_capacity: bool,
    blocks: u64,
    /// The data command whose transfer runs, if one does.
    transferring: Option<u8>,
}

/// The card's capacity in bytes from its CSD (`words`: response registers
/// 0-3, which hold CSD bits 127..8 shifted down by 8).
pub fn csd_capacity(words: [u32; 4]) -> Option<u64> {
    let bits = |hi: u32, lo: u32| -> u64 {
        let mut v = 0u64;
        for b in (lo..=hi).rev() {
            let at = b - 8;
            let bit = (words[(at / 32) as usize] >> (at % 32)) & 1;
            v = v << 1 | u64::from(bit);
        }
        v
    };
    match bits(127, 126) {
        0 => {
            let c_size = bits(73, 62);
            let mult = bits(49, 47);
            let read_bl_len = bits(83, 80);
            Some((c_size + 1) << (mult + 2) << read_bl_len)
        }
        1 => Some((bits(69, 48) + 1) * 512 * 1024),
        _ => None,
    }
}

impl SdCard {
    /// Brings up the card behind the controller at `regs`.
    pub fn init(regs: Mmio) -> Result<Self, SdError> {
        regs.write(CLKCON, RESET_ALL);
        for _ in 0..POLLS {
            if regs.read(CLKCON) & RESET_ALL == 0 {
                break;
            }
        }
        if regs.read(CAPABILITIES) & CAN_ADMA2 == 0 {
            return Err(SdError::NoAdma2);
        }
        regs.write(HOSTCTL, POWER_ON | DMA_ADMA2_32);
        regs.write(CLKCON, CLOCKS_ON);
        regs.write(NORINTSTSEN, u32::MAX);
        let mut card = SdCard {
            regs,
            rca: 0,
            high_capacity: false,
            blocks: 0,
            transferring: None,
        };
        card.command(0, 0, Response::None, 0)?;
        let echo = card.command(8, 0x1aa, Response::Short, 0)?[0];
        if echo & 0xfff != 0x1aa {
            return Err(SdError::Voltage);
        }
        let mut ocr = 0;
        for _ in 0..1000 {
            card.command(55, 0, Response::Short, 0)?;
            // HCS (we take block addressing) and 2.7-3.6 V.
            ocr = card.command(41, 0x40ff_8000, Response::Ocr, 0)?[0];
            if ocr & 1 << 31 != 0 {
                break;
            }
        }
        if ocr & 1 << 31 == 0 {
            return Err(SdError::NotReady);
        }
        card.high_capacity = ocr & 1 << 30 != 0;
        card.command(2, 0, Response::Long, 0)?;
        card.rca = card.command(3, 0, Response::Short, 0)?[0] & 0xffff_0000;
        let csd = card.command(9, card.rca, Response::Long, 0)?;
        let bytes = csd_capacity(csd).ok_or(SdError::BadCsd)?;
        card.blocks = bytes / BLOCK as u64;
        card.command(7, card.rca, Response::ShortBusy, 0)?;
        card.command(16, BLOCK as u32, Response::Short, 0)?;
        Ok(card)
    }

    /// Bytes on the card.
    pub fn capacity(&self) -> u64 {
        self.blocks * BLOCK as u64
    }

    /// Sends command `index` with `arg`; `transfer` holds the transfer
    /// mode bits and block count of a data command (0: none). Returns the
    /// response registers.
    fn command(
        &mut self,
        index: u8,
        arg: u32,
        response: Response,
        transfer: u32,
    ) -> Result<[u32; 4], SdError> {
        self.regs.write(NORINTSTS, u32::MAX);
        self.regs.write(ARGUMENT, arg);
        let data = if transfer != 0 { 1 << 5 } else { 0 };
        let cmd = u32::from(index) << 8 | data | response.bits();
        self.regs.write(TRNMOD, cmd << 16 | (transfer & 0xffff));
        self.wait(CMD_DONE, index)?;
        let r = [
            self.regs.read(RSP),
            self.regs.read(RSP + 4),
            self.regs.read(RSP + 8),
            self.regs.read(RSP + 12),
        ];
        Ok(r)
    }

    /// Waits for interrupt status `bit` (or an error).
    fn wait(&self, bit: u32, index: u8) -> Result<(), SdError> {
        for _ in 0..POLLS {
            let s = self.regs.read(NORINTSTS);
            if s & ERROR != 0 {
                self.regs.write(NORINTSTS, u32::MAX);
                return Err(SdError::Command(index, s >> 16));
            }
            if s & bit != 0 {
                self.regs.write(NORINTSTS, bit);
                return Ok(());
            }
        }
        Err(SdError::Timeout(index))
    }

    /// Starts moving `blocks` blocks from block `lba` on (`read`: card to
    /// memory) through the ADMA2 descriptor table at physical `table`;
    /// [`poll_transfer`](SdCard::poll_transfer) says when it is over.
    pub fn start_transfer(
        &mut self,
        lba: u64,
        blocks: usize,
        read: bool,
        table: u64,
    ) -> Result<(), SdError> {
        if blocks == 0 || lba + blocks as u64 > self.blocks || blocks > 0xffff {
            return Err(SdError::OutOfRange);
        }
        let arg = if self.high_capacity {
            lba
        } else {
            lba * BLOCK as u64
        } as u32;
        let multi = blocks > 1;
        let index = match (read, multi) {
            (true, false) => 17,
            (true, true) => 18,
            (false, false) => 24,
            (false, true) => 25,
        };
        self.regs.write(ADMA_ADDRESS, table as u32);
        self.regs.write(ADMA_ADDRESS_HI, (table >> 32) as u32);
        self.regs
            .write(BLKSIZE, (blocks as u32) << 16 | BLOCK as u32);
        let mut mode = TRN_DMA | TRN_BLOCK_COUNT;
        if multi {
            mode |= TRN_MULTI | TRN_AUTO_CMD12;
        }
        if read {
            mode |= TRN_READ;
        }
        self.command(index, arg, Response::Short, mode)?;
        self.transferring = Some(index);
        Ok(())
    }

    /// The outcome of the transfer started last, once it has one.
    pub fn poll_transfer(&mut self) -> Option<Result<(), SdError>> {
        let index = self.transferring?;
        let status = self.regs.read(NORINTSTS);
        let outcome = if status & ADMA_FAILED != 0 {
            Err(SdError::Adma(self.regs.read(ADMA_ERROR)))
        } else if status & ERROR != 0 {
            Err(SdError::Command(index, status >> 16))
        } else if status & XFER_DONE != 0 {
            Ok(())
        } else {
            return None;
        };
        self.regs.write(NORINTSTS, status);
        self.transferring = None;
        Some(outcome)
    }

    /// Lets "transfer complete" and errors raise the controller's
    /// interrupt (the caller routes it to whoever polls).
    pub fn signal_transfer_end(&self) {
        self.regs
            .write(NORINTSIGEN, XFER_DONE | ERROR | ADMA_FAILED);
    }
}

/// Writes the ADMA2 descriptor table for `runs` (physical address, bytes)
/// into `table`: one descriptor per 64 KiB or less, the last marked END.
/// Returns the number of descriptors, or `None` when a run cannot be
/// described (an address above 4 GiB or not on 4 bytes, or more
/// descriptors than `capacity`).
pub fn write_adma2_table(
    runs: &[(u64, usize)],
    table: &mut DmaMemory,
    capacity: usize,
) -> Option<usize> {
    const VALID: u32 = 1 << 0;
    const END: u32 = 1 << 1;
    const TRANSFER: u32 = 0b10 << 4;
    const MAX_LEN: usize = 1 << 16;
    let mut pieces = Vec::new();
    for &(start, len) in runs {
        let mut done = 0;
        while done < len {
            let n = (len - done).min(MAX_LEN);
            let addr = start + done as u64;
            if !addr.is_multiple_of(4) || addr + n as u64 > 1 << 32 {
                return None;
            }
            pieces.push((addr as u32, n));
            done += n;
        }
    }
    if pieces.is_empty() || pieces.len() > capacity {
        return None;
    }
    let last = pieces.len() - 1;
    for (i, &(addr, len)) in pieces.iter().enumerate() {
        let end = if i == last { END } else { 0 };
        // Attributes in bits 0-5, the length in 16-31 (0 means 64 KiB).
        let length = (len % MAX_LEN) as u32;
        table.set_u32(2 * i, VALID | TRANSFER | end | length << 16);
        table.set_u32(2 * i + 1, addr);
    }
    Some(pieces.len())
}

/// Segments [`SdEngine`] refuses: memory the kernel does not vouch for
/// (not pinned), or that the ADMA2 table cannot describe.
pub const NOT_DMA_MEMORY: u32 = 0x5d00_0001;

/// Descriptors in the table: a largest segment of [`MAX_SEGMENT`] on pages
/// that follow nothing needs one per page and one more.
const TABLE_ENTRIES: usize = MAX_SEGMENT / PAGE + 1;

/// Bytes of descriptor table an engine needs.
pub const TABLE_BYTES: usize = TABLE_ENTRIES * 8;

/// Largest segment the scheduler hands the card (256 blocks).
pub const MAX_SEGMENT: usize = 128 << 10;

const PAGE: usize = 4096;

/// The card as an engine of the DMA scheduler: a segment is read from or
/// written to the card at its device address (bytes, whole blocks) by the
/// controller's ADMA2 engine, one at a time.
pub struct SdEngine {
    card: SdCard,
    table: DmaMemory,
    translate: fn(usize) -> Option<u64>,
    running: Option<dma::SegmentId>,
}

impl SdEngine {
    /// Engine over `card`, with `table` (at least [`TABLE_BYTES`]) for the
    /// descriptors; `translate` gives the frame of a page a device may use
    /// (pinned), else `None`.
    pub fn new(card: SdCard, table: DmaMemory, translate: fn(usize) -> Option<u64>) -> Self {
        card.signal_transfer_end();
        Self {
            card,
            table,
            translate,
            running: None,
        }
    }

    /// Bytes on the card.
    pub fn capacity(&self) -> u64 {
        self.card.capacity()
    }

    /// Reports the running segment once the controller is done with it.
    pub fn poll_completions(&mut self, mut done: impl FnMut(dma::SegmentId, dma::Completion)) {
        let Some(id) = self.running else { return };
        let Some(outcome) = self.card.poll_transfer() else {
            return;
        };
        self.running = None;
        done(
            id,
            match outcome {
                Ok(()) => dma::Completion::Ok,
                Err(SdError::Adma(code) | SdError::Command(_, code)) => {
                    dma::Completion::Error(dma::EngineError::Device(code))
                }
                Err(_) => dma::Completion::Error(dma::EngineError::Device(u32::MAX)),
            },
        );
    }
}

/// The physical runs under `memory`, page by page, merged where frames
/// follow each other; `None` if a page has no frame a device may use.
fn frame_runs(
    memory: core::ops::Range<usize>,
    translate: fn(usize) -> Option<u64>,
) -> Option<Vec<(u64, usize)>> {
    let mut runs: Vec<(u64, usize)> = Vec::new();
    let mut va = memory.start;
    while va < memory.end {
        let n = (PAGE - va % PAGE).min(memory.end - va);
        let pa = translate(va)?;
        match runs.last_mut() {
            Some((start, len)) if *start + *len as u64 == pa => *len += n,
            _ => runs.push((pa, n)),
        }
        va += n;
    }
    Some(runs)
}

impl dma::Engine for SdEngine {
    fn caps(&self) -> dma::EngineCaps {
        dma::EngineCaps {
            max_segment: MAX_SEGMENT,
            max_pieces: 1,
            block: BLOCK,
            can_resume: false,
            // No SMMU: no stream, no faults, physical addresses.
            stream: dma::StreamId(u32::MAX),
            physical: true,
        }
    }

    fn start(&mut self, seg: &dma::Segment) -> Result<(), dma::EngineError> {
        if self.running.is_some() {
            return Err(dma::EngineError::Busy);
        }
        let memory = seg.va();
        let refused = dma::EngineError::Device(NOT_DMA_MEMORY);
        if !memory.len().is_multiple_of(BLOCK) || !seg.device_addr.is_multiple_of(BLOCK as u64) {
            return Err(refused);
        }
        let runs = frame_runs(memory.clone(), self.translate).ok_or(refused)?;
        write_adma2_table(&runs, &mut self.table, TABLE_ENTRIES).ok_or(refused)?;
        core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
        let read = seg.direction == dma::Direction::FromDevice;
        let lba = seg.device_addr / BLOCK as u64;
        self.card
            .start_transfer(lba, memory.len() / BLOCK, read, self.table.addr())
            .map_err(|e| match e {
                SdError::Command(_, code) => dma::EngineError::Device(code),
                _ => dma::EngineError::Device(u32::MAX),
            })?;
        self.running = Some(seg.id);
        Ok(())
    }

    fn resume(&mut self, _seg: &dma::Segment, _how: dma::Resume) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Response registers holding CSD bits [127:8] for `csd` (bit n of the
    /// CSD at bit n - 8 of the registers).
    fn registers(set: &[(u32, u32, u64)]) -> [u32; 4] {
        let mut w = [0u32; 4];
        for &(hi, lo, value) in set {
            for b in lo..=hi {
                if value >> (b - lo) & 1 != 0 {
                    let at = b - 8;
                    w[(at / 32) as usize] |= 1 << (at % 32);
                }
            }
        }
        w
    }

    /// Heap memory standing in for the identity-mapped table.
    fn table() -> DmaMemory {
        crate::dma_memory::test_memory(16 * 4)
    }

    #[test]
    fn the_adma2_table_describes_each_run_and_ends_on_the_last() {
        let mut table = table();
        // 96 KiB from one place (two descriptors: 64 KiB is the most one
        // carries), then 512 bytes elsewhere.
        let runs = [(0x4000_0000, 96 << 10), (0x1000, 512)];
        assert_eq!(write_adma2_table(&runs, &mut table, 8), Some(3));
        // Valid, transfer; length 0 stands for 64 KiB.
        assert_eq!(
            (0..6).map(|i| table.u32_at(i)).collect::<Vec<_>>(),
            [
                0x0000_0021,
                0x4000_0000,
                0x8000_0021,
                0x4001_0000,
                0x0200_0023,
                0x1000
            ]
        );
    }

    #[test]
    fn runs_the_table_cannot_describe_are_refused() {
        let mut table = table();
        assert_eq!(
            write_adma2_table(&[(0x1002, 512)], &mut table, 8),
            None,
            "not on 4 bytes"
        );
        assert_eq!(
            write_adma2_table(&[(0xffff_ff00, 512)], &mut table, 8),
            None,
            "past 4 GiB"
        );
        let many: Vec<(u64, usize)> = (0..9).map(|i| (i * 0x2000, 512)).collect();
        assert_eq!(
            write_adma2_table(&many, &mut table, 8),
            None,
            "more than the table holds"
        );
        assert_eq!(write_adma2_table(&[], &mut table, 8), None);
    }

    #[test]
    fn frames_that_follow_each_other_make_one_run() {
        // Pages 0 and 1 are contiguous frames, page 2 is elsewhere, page 3
        // is nobody's to give a device.
        fn translate(va: usize) -> Option<u64> {
            match va / PAGE {
                0 => Some(0x10_0000 + (va % PAGE) as u64),
                1 => Some(0x10_1000 + (va % PAGE) as u64),
                2 => Some(0x50_0000 + (va % PAGE) as u64),
                _ => None,
            }
        }
        assert_eq!(
            frame_runs(0x200..3 * PAGE, translate),
            Some(alloc::vec![
                (0x10_0200, 2 * PAGE - 0x200),
                (0x50_0000, PAGE)
            ])
        );
        assert_eq!(frame_runs(0..4 * PAGE, translate), None);
    }

    #[test]
    fn a_standard_capacity_csd_gives_its_size() {
        // 1 GiB: READ_BL_LEN 9 (512), C_SIZE_MULT 7 (x512), C_SIZE 4095.
        let w = registers(&[(127, 126, 0), (83, 80, 9), (73, 62, 4095), (49, 47, 7)]);
        assert_eq!(csd_capacity(w), Some(4096 * 512 * 512));
    }

    #[test]
    fn a_high_capacity_csd_gives_its_size() {
        // 4 GiB: C_SIZE + 1 = 8192 units of 512 KiB.
        let w = registers(&[(127, 126, 1), (69, 48, 8191)]);
        assert_eq!(csd_capacity(w), Some(4 << 30));
        let w = registers(&[(127, 126, 3)]);
        assert_eq!(csd_capacity(w), None, "a reserved CSD structure");
    }
}
