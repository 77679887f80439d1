//! An SD card behind a standard SD host controller (SDHCI, spec 3.0), as
//! the ZynqMP has two of: card bring-up and block reads and writes through
//! the controller's data port (programmed I/O: the CPU moves every word,
//! so no physical address and no pinning is involved).
//!
//! ```text
//!  init: reset, power, clock ─ CMD0 ─ CMD8 (2.7-3.6 V, check pattern)
//!        ─ ACMD41 until powered up (CCS: block or byte addressing)
//!        ─ CMD2 ─ CMD3 (RCA) ─ CMD9 (CSD: capacity) ─ CMD7 (select) ─ CMD16 (512)
//!  read:  CMD17/18 (auto CMD12) ─ per block: wait "data available", 128 reads
//!  write: CMD24/25 (auto CMD12) ─ per block: wait "space available", 128 writes
//!         ─ wait "transfer complete"
//! ```

use crate::mmio::Mmio;

/// Physical address of the ZynqMP's SD0 controller.
pub const SD0: usize = 0xff16_0000;
/// SD0's interrupt (SPI 48).
pub const SD0_INTID: u32 = 32 + 48;
/// Bytes per block.
pub const BLOCK: usize = 512;

const BLKSIZE: usize = 0x04;
const ARGUMENT: usize = 0x08;
const TRNMOD: usize = 0x0c;
const RSP: usize = 0x10;
const BDATA: usize = 0x20;
const PRNSTS: usize = 0x24;
const HOSTCTL: usize = 0x28;
const CLKCON: usize = 0x2c;
const NORINTSTS: usize = 0x30;
const NORINTSTSEN: usize = 0x34;

/// CLKCON: internal clock on, SD clock on (bits 0 and 2); SWRST_ALL (24).
const CLOCKS_ON: u32 = 0b101;
const RESET_ALL: u32 = 1 << 24;
/// HOSTCTL byte 1 (power control): 3.3 V, bus power on.
const POWER_ON: u32 = 0x0f << 8;
/// NORINTSTS: command complete, transfer complete, error.
const CMD_DONE: u32 = 1 << 0;
const XFER_DONE: u32 = 1 << 1;
const ERROR: u32 = 1 << 15;
/// PRNSTS: the data port can take a block, or has one.
const SPACE_AVAILABLE: u32 = 1 << 10;
const DATA_AVAILABLE: u32 = 1 << 11;

/// TRNMOD: block count enable, auto CMD12, read (card to host), multi-block.
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
}

/// An initialised card: its address and size.
pub struct SdCard {
    regs: Mmio,
    rca: u32,
    /// Block addressing (SDHC/SDXC) rather than byte addressing (SDSC).
    high_capacity: bool,
    blocks: u64,
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
        regs.write(HOSTCTL, POWER_ON);
        regs.write(CLKCON, CLOCKS_ON);
        regs.write(NORINTSTSEN, u32::MAX);
        let mut card = SdCard {
            regs,
            rca: 0,
            high_capacity: false,
            blocks: 0,
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

    /// Waits for present-state `bit` (the data port's readiness).
    fn wait_port(&self, bit: u32, index: u8) -> Result<(), SdError> {
        for _ in 0..POLLS {
            if self.regs.read(PRNSTS) & bit != 0 {
                return Ok(());
            }
            if self.regs.read(NORINTSTS) & ERROR != 0 {
                return Err(SdError::Command(index, self.regs.read(NORINTSTS) >> 16));
            }
        }
        Err(SdError::Timeout(index))
    }

    /// Starts a data command on `len` bytes from block `lba`.
    fn start_data(&mut self, lba: u64, len: usize, read: bool) -> Result<u8, SdError> {
        let count = len / BLOCK;
        if len == 0
            || !len.is_multiple_of(BLOCK)
            || lba + count as u64 > self.blocks
            || count > 0xffff
        {
            return Err(SdError::OutOfRange);
        }
        let arg = if self.high_capacity {
            lba
        } else {
            lba * BLOCK as u64
        } as u32;
        let multi = count > 1;
        let index = match (read, multi) {
            (true, false) => 17,
            (true, true) => 18,
            (false, false) => 24,
            (false, true) => 25,
        };
        self.regs
            .write(BLKSIZE, (count as u32) << 16 | BLOCK as u32);
        let mut mode = TRN_BLOCK_COUNT;
        if multi {
            mode |= TRN_MULTI | TRN_AUTO_CMD12;
        }
        if read {
            mode |= TRN_READ;
        }
        self.command(index, arg, Response::Short, mode)?;
        Ok(index)
    }

    /// Reads whole blocks from block `lba` into `buf`.
    pub fn read(&mut self, lba: u64, buf: &mut [u8]) -> Result<(), SdError> {
        let index = self.start_data(lba, buf.len(), true)?;
        for block in buf.chunks_exact_mut(BLOCK) {
            self.wait_port(DATA_AVAILABLE, index)?;
            for word in block.chunks_exact_mut(4) {
                word.copy_from_slice(&self.regs.read(BDATA).to_le_bytes());
            }
        }
        self.wait(XFER_DONE, index)
    }

    /// Writes `buf` (whole blocks) from block `lba` on.
    pub fn write(&mut self, lba: u64, buf: &[u8]) -> Result<(), SdError> {
        let index = self.start_data(lba, buf.len(), false)?;
        for block in buf.chunks_exact(BLOCK) {
            self.wait_port(SPACE_AVAILABLE, index)?;
            for word in block.chunks_exact(4) {
                let w = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
                self.regs.write(BDATA, w);
            }
        }
        self.wait(XFER_DONE, index)
    }
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
