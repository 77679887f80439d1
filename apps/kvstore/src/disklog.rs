//! The append-only log on the NVMe disk, moved by the DMA scheduler
//! straight between the disk and demand-paged buffers.
//!
//! ```text
//!  disk:  [slot 0][slot 1] ... [area 0 from 1 MiB][area 1]   (aof::superblock)
//!  flush: write the staged tail (from the last block boundary) ──► then a
//!         superblock with the new length; a crash between the two keeps the
//!         old length, so a reply is sent only after both (appendfsync always)
//!  rewrite: the live data into the other area ──► then a superblock naming it
//! ```
//!
//! A rewrite is built a step at a time between serving clients (see
//! `kvstore::aof::RewriteScan`): the scan's records go to a new buffer,
//! everything appended meanwhile to the old log and to a tail; at the end
//! the tail follows the scan in the new buffer, which is written to the
//! other area and named by a superblock (see [`DiskLog::finish_rewrite`]).

extern crate alloc;

use alloc::format;
use alloc::string::String;
use kvstore::aof::superblock::{self, Superblock};
use kvstore::aof::{self, AppendFsync};
use kvstore::Args;
use libos::dma::{self, Direction, EngineId, NvmeInfo, Policy, Transfer};
use libos::mm::Region;
use libos::time::{self, Instant};

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

/// The log: where it is, its durable length, and a staging buffer holding
/// everything from the last block boundary at or below that length.
pub struct DiskLog {
    engine: EngineId,
    block: usize,
    capacity: u64,
    /// Bytes each area holds.
    area_len: u64,
    /// The superblock last written: the log's area and durable length.
    current: Superblock,
    staging: Region,
    /// Log offset of `staging[0]`.
    staged_from: u64,
    /// Bytes staged.
    staged: usize,
    fsync: AppendFsync,
    last_flush: Instant,
    /// The rewrite in progress, if any.
    rewriting: Option<Rewriting>,
}

/// A new log being built: the scan's records, and the records appended
/// since the rewrite started.
struct Rewriting {
    buffer: Region,
    len: usize,
    tail: Region,
    tail_len: usize,
}

/// Appends `bytes` at `*len` in `region` if they fit within `limit`;
/// `*len` grows regardless, so an overflow is seen at the end.
fn put(region: &mut Region, len: &mut usize, limit: usize, bytes: &[u8]) {
    let end = *len + bytes.len();
    if end <= limit {
        region.as_mut_slice()[*len..end].copy_from_slice(bytes);
    }
    *len = end;
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
        pieces: alloc::vec![region.start()..region.start() + len],
        device_addr: disk,
        policy: Policy::FaultAwarePrefetch,
    };
    dma::run(engine, t)
        .map(|_| ())
        .map_err(|e| io("disk transfer", e))
}

fn staging() -> Result<Region, String> {
    Region::demand_zero(STAGING).map_err(|e| io("staging buffer", e))
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
        let (_, area_len) = superblock::areas(info.capacity);
        let area_len = area_len.min(STAGING as u64);
        let slots = Region::eager(2 * superblock::SLOT_STRIDE as usize)
            .map_err(|e| io("superblock buffer", e))?;
        transfer(engine, Direction::FromDevice, &slots, slots.len(), 0)?;
        let bytes = slots.as_slice();
        let stride = superblock::SLOT_STRIDE as usize;
        let found = superblock::newest(&bytes[..stride], &bytes[stride..], area_len);
        let mut log = DiskLog {
            engine,
            block,
            capacity: info.capacity,
            area_len,
            current: found.unwrap_or(Superblock {
                generation: 0,
                area: 0,
                length: 0,
            }),
            staging: staging()?,
            staged_from: 0,
            staged: 0,
            fsync,
            last_flush: time::now(),
            rewriting: None,
        };
        let mut opened = Opened {
            records: 0,
            bytes: 0,
            cut: None,
        };
        let length = log.current.length;
        if length == 0 {
            log.append(&aof::HEADER);
            log.flush()?;
            opened.bytes = log.durable_bytes();
            return Ok((log, opened));
        }
        // Read the whole log and replay it; then keep only its last
        // partial block, in a fresh buffer (the pages of the read go).
        let read = staging()?;
        let rounded = (length as usize).next_multiple_of(block);
        transfer(
            engine,
            Direction::FromDevice,
            &read,
            rounded,
            log.area_start(),
        )?;
        let report = aof::replay(&read.as_slice()[..length as usize], &mut apply);
        opened.records = report.records;
        let valid = report.valid_bytes as u64;
        if let Some(tail) = report.torn_tail {
            opened.cut = Some(format!(
                "log cut at byte {} of {length}: {:?}",
                tail.offset, tail.reason
            ));
        }
        let keep_from = valid / block as u64 * block as u64;
        let tail = (valid - keep_from) as usize;
        log.staging.as_mut_slice()[..tail]
            .copy_from_slice(&read.as_slice()[keep_from as usize..keep_from as usize + tail]);
        log.staged_from = keep_from;
        log.staged = tail;
        if valid != length {
            log.current = log.current.next(log.current.area, valid);
            log.write_superblock()?;
        }
        opened.bytes = valid;
        Ok((log, opened))
    }

    fn area_start(&self) -> u64 {
        superblock::area_start(self.capacity, self.current.area)
    }

    /// Stages `bytes` at the end of the log (durable after the next flush).
    /// Past the area's end the bytes are dropped and the next flush fails.
    /// While a rewrite runs they also go to its tail.
    pub fn append(&mut self, bytes: &[u8]) {
        let end = self.staged + bytes.len();
        if self.staged_from + end as u64 <= self.area_len {
            self.staging.as_mut_slice()[self.staged..end].copy_from_slice(bytes);
        }
        self.staged = end;
        if let Some(r) = self.rewriting.as_mut() {
            put(&mut r.tail, &mut r.tail_len, self.area_len as usize, bytes);
        }
    }

    /// Whether anything staged is not durable yet.
    pub fn dirty(&self) -> bool {
        self.staged_from + self.staged as u64 > self.current.length
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

    /// When a flush will be due if nothing else happens, for the server's
    /// sleep: `None` if nothing is staged or the policy waits for volume.
    pub fn flush_deadline(&self) -> Option<Instant> {
        match self.fsync {
            _ if !self.dirty() => None,
            AppendFsync::Always => Some(time::now()),
            AppendFsync::EverySec => Some(self.last_flush.add(core::time::Duration::from_secs(1))),
            AppendFsync::No => None,
        }
    }

    /// Bytes of log on the disk.
    pub fn durable_bytes(&self) -> u64 {
        self.current.length
    }

    /// Writes the staged tail, then the superblock with the new length.
    pub fn flush(&mut self) -> Result<(), String> {
        let end = self.staged_from + self.staged as u64;
        if end > self.area_len {
            return Err(format!(
                "log full: {end} bytes, its area holds {}",
                self.area_len
            ));
        }
        let rounded = self.staged.next_multiple_of(self.block);
        transfer(
            self.engine,
            Direction::ToDevice,
            &self.staging,
            rounded,
            self.area_start() + self.staged_from,
        )?;
        self.current = self.current.next(self.current.area, end);
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

    /// Starts building a new log: feed it with [`rewrite_emit`]
    /// (`kvstore::aof::RewriteScan`'s records), keep appending as usual,
    /// and end with [`finish_rewrite`] (or drop the log).
    ///
    /// [`rewrite_emit`]: DiskLog::rewrite_emit
    /// [`finish_rewrite`]: DiskLog::finish_rewrite
    pub fn start_rewrite(&mut self) -> Result<(), String> {
        self.rewriting = Some(Rewriting {
            buffer: staging()?,
            len: 0,
            tail: staging()?,
            tail_len: 0,
        });
        Ok(())
    }

    /// Adds the scan's `bytes` to the new log.
    pub fn rewrite_emit(&mut self, bytes: &[u8]) {
        if let Some(r) = self.rewriting.as_mut() {
            put(&mut r.buffer, &mut r.len, self.area_len as usize, bytes);
        }
    }

    /// Makes the new log (the scan's records, then the tail) the log: it
    /// goes to the other area and becomes the log only when the superblock
    /// naming it is written, so a crash or an error at any point leaves the
    /// old log in force. Returns the new log's size.
    ///
    /// Synchronous, but only the tail's copy and the disk write.
    pub fn finish_rewrite(&mut self) -> Result<u64, String> {
        let Some(mut r) = self.rewriting.take() else {
            return Err("no rewrite in progress".into());
        };
        let limit = self.area_len as usize;
        let len = r.len + r.tail_len;
        if len > limit {
            return Err(format!(
                "rewritten log of {len} bytes does not fit its area of {limit}"
            ));
        }
        put(
            &mut r.buffer,
            &mut r.len,
            limit,
            &r.tail.as_slice()[..r.tail_len],
        );
        let mut buffer = r.buffer;
        let area = 1 - self.current.area;
        let rounded = len.next_multiple_of(self.block);
        let start = superblock::area_start(self.capacity, area);
        transfer(self.engine, Direction::ToDevice, &buffer, rounded, start)?;
        let switched = self.current.next(area, len as u64);
        let previous = core::mem::replace(&mut self.current, switched);
        if let Err(e) = self.write_superblock() {
            // The old superblock may still be the newest on the disk; keep
            // appending to the old log, staged data and all.
            self.current = previous;
            return Err(e);
        }
        self.last_flush = time::now();
        let full = len / self.block * self.block;
        buffer.as_mut_slice().copy_within(full..len, 0);
        self.staging = buffer;
        self.staged_from = full as u64;
        self.staged = len - full;
        Ok(len as u64)
    }

    fn write_superblock(&mut self) -> Result<(), String> {
        let mut sb = Region::eager(4096).map_err(|e| io("superblock buffer", e))?;
        let bytes = self.current.encode();
        sb.as_mut_slice()[..bytes.len()].copy_from_slice(&bytes);
        transfer(
            self.engine,
            Direction::ToDevice,
            &sb,
            self.block,
            self.current.slot_offset(),
        )
    }
}
