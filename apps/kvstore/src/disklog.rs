//! The append-only log on the NVMe disk, moved by the DMA scheduler
//! straight between the disk and demand-paged buffers.
//!
//! ```text
//!  disk: [superblock, block 0][ ... ][log from 1 MiB: HEADER, record, record, ...]
//!  superblock: "FLKVSB01", durable log length (u64), CRC-32C of both
//!  flush: write the staged tail (from the last block boundary) ──► then the
//!         superblock with the new length; a crash between the two keeps the
//!         old length, so a reply is sent only after both (appendfsync always)
//! ```

extern crate alloc;

use alloc::format;
use alloc::string::String;
use kvstore::aof::{self, crc32c, AppendFsync};
use kvstore::Args;
use libos::dma::{self, Direction, EngineId, NvmeInfo, Policy, Transfer};
use libos::mm::Region;
use libos::time::{self, Instant};

const SUPER_MAGIC: &[u8; 8] = b"FLKVSB01";
/// Where the log starts on the disk.
const LOG_START: u64 = 1 << 20;
/// Virtual space for staging the log tail (pages appear when touched).
const STAGING: usize = 1 << 30;

/// What opening the log found.
pub struct Opened {
    /// Records replayed.
    pub records: u64,
    /// Bytes of valid log.
    pub bytes: u64,
    /// A torn or corrupt tail that was cut, with the reason.
    pub cut: Option<String>,
}

/// The log: durable length, and a staging buffer holding everything from the
/// last block boundary at or below that length.
pub struct DiskLog {
    engine: EngineId,
    block: usize,
    capacity: u64,
    durable: u64,
    staging: Region,
    /// Disk offset (relative to the log start) of `staging[0]`.
    staged_from: u64,
    /// Bytes staged.
    staged: usize,
    fsync: AppendFsync,
    last_flush: Instant,
}

fn io(what: &str, e: impl core::fmt::Debug) -> String {
    format!("{what}: {e:?}")
}

fn transfer(
    engine: EngineId,
    direction: Direction,
    region: &Region,
    len: usize,
    disk: u64,
) -> Result<(), String> {
    let t = Transfer {
        direction,
        va: region.start()..region.start() + len,
        device_addr: disk,
        policy: Policy::FaultAwarePrefetch,
    };
    dma::run(engine, t)
        .map(|_| ())
        .map_err(|e| io("disk transfer", e))
}

impl DiskLog {
    /// Opens the log on the disk, replaying every valid record into
    /// `apply`; a torn or corrupt tail is reported and cut.
    pub fn open(
        engine: EngineId,
        info: NvmeInfo,
        fsync: AppendFsync,
        mut apply: impl FnMut(Args),
    ) -> Result<(DiskLog, Opened), String> {
        let block = info.block_size;
        let mut sb = Region::eager(4096).map_err(|e| io("superblock buffer", e))?;
        transfer(engine, Direction::FromDevice, &sb, block, 0)?;
        let bytes = sb.as_mut_slice();
        let stored = u64::from_le_bytes(bytes[8..16].try_into().unwrap());
        let crc = u32::from_le_bytes(bytes[16..20].try_into().unwrap());
        let valid_super = &bytes[..8] == SUPER_MAGIC && crc == crc32c(&bytes[..16]);
        let capacity = info.capacity - LOG_START;
        let mut log = DiskLog {
            engine,
            block,
            capacity,
            durable: 0,
            staging: Region::demand_zero(STAGING).map_err(|e| io("staging buffer", e))?,
            staged_from: 0,
            staged: 0,
            fsync,
            last_flush: time::now(),
        };
        let mut opened = Opened {
            records: 0,
            bytes: 0,
            cut: None,
        };
        let length = if valid_super && stored <= capacity && stored as usize <= STAGING {
            stored
        } else {
            0
        };
        if length == 0 {
            log.append(&aof::HEADER);
            log.flush()?;
            opened.bytes = log.durable;
            return Ok((log, opened));
        }
        // Read the whole log into the staging buffer and replay it there.
        let rounded = (length as usize).next_multiple_of(block);
        transfer(
            engine,
            Direction::FromDevice,
            &log.staging,
            rounded,
            LOG_START,
        )?;
        let report = aof::replay(&log.staging.as_slice()[..length as usize], &mut apply);
        opened.records = report.records;
        let valid = report.valid_bytes as u64;
        if let Some(tail) = report.torn_tail {
            opened.cut = Some(format!(
                "log cut at byte {} of {length}: {:?}",
                tail.offset, tail.reason
            ));
        }
        // Keep only the last partial block staged.
        let keep_from = valid / block as u64 * block as u64;
        let tail = (valid - keep_from) as usize;
        let slice = log.staging.as_mut_slice();
        slice.copy_within(keep_from as usize..keep_from as usize + tail, 0);
        log.staged_from = keep_from;
        log.staged = tail;
        log.durable = valid;
        if valid != length {
            log.write_superblock()?;
        }
        opened.bytes = valid;
        Ok((log, opened))
    }

    /// Stages `bytes` at the end of the log (durable after the next flush).
    pub fn append(&mut self, bytes: &[u8]) {
        let end = self.staged + bytes.len();
        self.staging.as_mut_slice()[self.staged..end].copy_from_slice(bytes);
        self.staged = end;
    }

    /// Whether anything staged is not durable yet.
    pub fn dirty(&self) -> bool {
        self.staged_from + self.staged as u64 > self.durable
    }

    /// Whether the appendfsync policy wants a flush now.
    pub fn flush_due(&self) -> bool {
        self.dirty()
            && match self.fsync {
                AppendFsync::Always => true,
                AppendFsync::EverySec => self.last_flush.elapsed().as_secs() >= 1,
                AppendFsync::No => self.staged >= 1 << 20,
            }
    }

    /// Bytes of log on the disk.
    pub fn durable_bytes(&self) -> u64 {
        self.durable
    }

    /// Writes the staged tail, then the superblock with the new length.
    pub fn flush(&mut self) -> Result<(), String> {
        let end = self.staged_from + self.staged as u64;
        if end > self.capacity {
            return Err(format!(
                "log full: {end} bytes, disk holds {}",
                self.capacity
            ));
        }
        let rounded = self.staged.next_multiple_of(self.block);
        transfer(
            self.engine,
            Direction::ToDevice,
            &self.staging,
            rounded,
            LOG_START + self.staged_from,
        )?;
        self.durable = end;
        self.write_superblock()?;
        self.last_flush = time::now();
        // Keep the last partial block; the full ones are on the disk.
        let full = self.staged / self.block * self.block;
        let tail = self.staged - full;
        self.staging
            .as_mut_slice()
            .copy_within(full..self.staged, 0);
        self.staged_from += full as u64;
        self.staged = tail;
        Ok(())
    }

    fn write_superblock(&mut self) -> Result<(), String> {
        let mut sb = Region::eager(4096).map_err(|e| io("superblock buffer", e))?;
        let bytes = sb.as_mut_slice();
        bytes[..8].copy_from_slice(SUPER_MAGIC);
        bytes[8..16].copy_from_slice(&self.durable.to_le_bytes());
        let crc = crc32c(&bytes[..16]);
        bytes[16..20].copy_from_slice(&crc.to_le_bytes());
        transfer(self.engine, Direction::ToDevice, &sb, self.block, 0)
    }
}
