//! The append-only log on the NVMe disk, moved by the DMA scheduler
//! straight between the disk and demand-paged buffers, and from large
//! values' own memory.
//!
//! ```text
//!  disk:    [slot 0][slot 1] ... [area 0 from 1 MiB][area 1]   (aof::superblock)
//!  open:    the slots and the log they name must read back whole
//!           (aof::check); damage stops the server, naming the offset
//!  pending: [staged][value][staged][value][staged|pad]  since the last
//!           └ staging ┘  └ store's memory ┘  └ staging ┘  block boundary
//!  flush:   gather writes of the pending pieces, padded to a block from
//!           staging, one disk command's worth of pieces each (cut_gather)
//!           ──► then a superblock with the new length; a crash
//!           between the two keeps the old length, so a reply is sent only
//!           after both (appendfsync always); then the last partial block
//!           is copied to the start of staging and the values are let go
//!  rewrite: the live data (copied) into the other area ──► then a
//!           superblock naming it
//! ```
//!
//! Small records and the bytes around values are copied into staging;
//! values of `kvstore::commands::SHARE_FROM` bytes or more are not: the
//! log holds them by reference count until the flush that writes them,
//! and the store copies one before changing it while the log holds it.
//! Each transfer has at most `NvmeInfo::max_pieces` pieces (one NVMe
//! command's SGL); a controller without byte-granular SGLs (one piece per
//! command) gets everything copied, as before.
//!
//! A rewrite is built a step at a time between serving clients (see
//! `kvstore::aof::RewriteScan`): the scan's steps go to a new buffer, and
//! everything appended meanwhile to the old log and, in between the
//! steps, to the new buffer as well; at the end the new buffer is written
//! to the other area and named by a superblock (see
//! [`DiskLog::finish_rewrite`]).

extern crate alloc;

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::ops::Range;
use kvstore::aof::superblock::{self, Extent, Superblock};
use kvstore::aof::{self, check, encode_record_pieces, AppendFsync, Piece, RecordBuf};
use kvstore::commands::{Effects, SHARE_FROM};
use kvstore::store::Value;
use kvstore::Args;
use libos::dma::{self, Direction, EngineId, NvmeInfo, Policy};
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
    /// A superblock slot that could not be read (the previous generation
    /// was used: a torn superblock write, or damage), for the console.
    pub unreadable_slot: Option<u8>,
}

/// Why a record was not added to the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogFull {
    /// Bytes the log would have reached.
    pub needed: u64,
    /// Bytes its extent holds.
    pub limit: u64,
}

impl core::fmt::Display for LogFull {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "log full: {} bytes needed, its extent holds {}",
            self.needed, self.limit
        )
    }
}

/// The log: where it is, its durable length, and everything from the last
/// block boundary at or below that length, as pieces: ranges of a staging
/// buffer and shared values.
pub struct DiskLog {
    engine: EngineId,
    block: usize,
    capacity: u64,
    /// The superblock last written: the log's extent and durable length.
    current: Superblock,
    /// Whether values are written from their own memory: the engine takes
    /// enough pieces per command (see [`DiskLog::open`]).
    share: bool,
    /// Pieces one disk command takes: each transfer of a flush has at most
    /// as many (see `kvstore::aof::cut_gather`).
    max_pieces: usize,
    /// Log offset of the first pending byte (a block boundary).
    pending_from: u64,
    /// The log from `pending_from` on.
    pending: Pieces,
    fsync: AppendFsync,
    last_flush: Instant,
    /// The new log a rewrite in progress is building, if one is.
    rewriting: Option<Rewriting>,
}

/// A new log being built: the scan's steps, and between them the records
/// appended meanwhile (see `kvstore::aof::RewriteScan`). The scan encodes
/// its records straight into `pending` (a [`RecordBuf`]), which is written
/// to the log's area as it grows, [`REWRITE_WRITE_FROM`] bytes at a time,
/// so that finishing writes only its last part, and the values it refers
/// to are let go as they are written.
struct Rewriting {
    /// Where it goes: an area the live log is not in.
    extent: Extent,
    /// Bytes of it on the disk: whole blocks.
    written: u64,
    /// The bytes after those.
    pending: Pieces,
    /// The disk: engine, block size, pieces per command.
    engine: EngineId,
    block: usize,
    max_pieces: usize,
    /// Why writing it failed, if it did: the rewrite is then abandoned
    /// (see [`DiskLog::rewrite_checked`]).
    failed: Option<String>,
}

/// How much of a rewrite's new log waits in memory before it is written.
const REWRITE_WRITE_FROM: usize = 4 << 20;

impl Rewriting {
    /// The new log's length.
    fn len(&self) -> u64 {
        self.written + self.pending.len as u64
    }

    /// Writes what is pending after what is written, the last block padded;
    /// that block stays pending, to be written again whole.
    fn write_pending(&mut self) -> Result<(), String> {
        if self.len() > self.extent.limit || !self.pending.fits() {
            return Err(format!(
                "the rewritten log outgrew its area of {} bytes beside the live one",
                self.extent.limit
            ));
        }
        let at = self.extent.start + self.written;
        self.pending
            .write(self.engine, self.block, self.max_pieces, at)?;
        let full = self.pending.len / self.block * self.block;
        let last = self.pending.bytes_from(full);
        self.pending.reset(&last);
        self.written += full as u64;
        Ok(())
    }
}

/// The scan's records, encoded into the staging memory once; written out
/// between records when [`REWRITE_WRITE_FROM`] bytes wait.
impl RecordBuf for Rewriting {
    fn end(&self) -> usize {
        self.pending.end()
    }

    fn put(&mut self, bytes: &[u8]) {
        self.pending.put(bytes);
    }

    fn since_mut(&mut self, from: usize) -> Option<&mut [u8]> {
        self.pending.since_mut(from)
    }

    fn share(&mut self, value: &Value) -> bool {
        self.pending.share(value)
    }

    fn record(&mut self, args: &[Piece<'_>]) {
        if self.failed.is_some() {
            return;
        }
        encode_record_pieces(args, &mut self.pending);
        if self.pending.len >= REWRITE_WRITE_FROM {
            self.failed = self.write_pending().err();
        }
    }
}

/// A piece of the log not yet durable.
enum Pending {
    /// Bytes of the staging buffer.
    Staged(Range<usize>),
    /// A value, written from its own memory.
    Value(Value),
}

/// Log bytes not yet on the disk, in order: small records copied into a
/// staging buffer, values of `SHARE_FROM` bytes or more kept by reference
/// and written from their own memory (when the disk takes gather lists).
struct Pieces {
    staging: Region,
    /// Bytes of `staging` in use.
    staged: usize,
    list: Vec<Pending>,
    /// Bytes of `list`, summed (counted on even past the staging buffer's
    /// end, where nothing more is kept: see [`Pieces::fits`]).
    len: usize,
    /// Whether values are kept by reference, or copied.
    share: bool,
}

impl Pieces {
    fn new(share: bool) -> Result<Pieces, String> {
        Ok(Pieces {
            staging: staging()?,
            staged: 0,
            list: Vec::new(),
            len: 0,
            share,
        })
    }

    /// Whether every byte counted was kept.
    fn fits(&self) -> bool {
        self.len <= STAGING
    }

    fn push_bytes(&mut self, bytes: &[u8]) {
        self.len += bytes.len();
        let end = self.staged + bytes.len();
        if bytes.is_empty() || end > STAGING {
            return;
        }
        let at = self.staged;
        self.staging.as_mut_slice()[at..end].copy_from_slice(bytes);
        self.staged = end;
        match self.list.last_mut() {
            Some(Pending::Staged(r)) if r.end == at => r.end = end,
            _ => self.list.push(Pending::Staged(at..end)),
        }
    }

    fn push_value(&mut self, value: &Value) {
        if self.share {
            self.len += value.len();
            self.list.push(Pending::Value(value.clone()));
        } else {
            self.push_bytes(value);
        }
    }

    /// Adds the records of `effects`.
    fn push_effects(&mut self, effects: &Effects) {
        for piece in effects.pieces() {
            match piece {
                Piece::Value(value) => self.push_value(value),
                _ => self.push_bytes(piece.bytes()),
            }
        }
    }

    /// The bytes from position `from` on, copied out.
    fn bytes_from(&self, from: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len.saturating_sub(from));
        let mut at = 0;
        for piece in &self.list {
            let bytes = match piece {
                Pending::Staged(r) => &self.staging.as_slice()[r.clone()],
                Pending::Value(v) => v.as_slice(),
            };
            if at + bytes.len() > from {
                out.extend_from_slice(&bytes[from.saturating_sub(at)..]);
            }
            at += bytes.len();
        }
        out
    }

    /// Makes `bytes` all there is, at the start of staging (values let go).
    fn reset(&mut self, bytes: &[u8]) {
        self.list.clear();
        self.staged = 0;
        self.len = 0;
        self.push_bytes(bytes);
    }

    /// Writes the pieces, padded to a whole `block`, at `disk`: gather
    /// transfers of one disk command's worth (`max_pieces`) each.
    fn write(
        &mut self,
        engine: EngineId,
        block: usize,
        max_pieces: usize,
        mut disk: u64,
    ) -> Result<(), String> {
        let memory = self.gather_list(block);
        let lists = aof::cut_gather(&memory, block, max_pieces)
            .ok_or("log write: gather list too fine for the disk's commands")?;
        let sources = self.sources();
        for list in lists {
            let pieces: Vec<&[u8]> = list
                .iter()
                .map(|r| bytes_at(&sources, r))
                .collect::<Option<_>>()
                .ok_or("log write: a piece outside the log's memory")?;
            let len: usize = pieces.iter().map(|p| p.len()).sum();
            dma::write_gather(engine, &pieces, disk, policy(engine))
                .map_err(|e| io("disk transfer", e))?;
            disk += len as u64;
        }
        Ok(())
    }

    /// The memory the gather lists name, by address: the staging buffer
    /// and each value held by reference.
    fn sources(&self) -> Vec<&[u8]> {
        let values = self.list.iter().filter_map(|piece| match piece {
            Pending::Value(v) => Some(v.as_slice()),
            Pending::Staged(_) => None,
        });
        let mut sources: Vec<&[u8]> = core::iter::once(self.staging.as_slice())
            .chain(values)
            .collect();
        sources.sort_by_key(|s| s.as_ptr() as usize);
        sources
    }

    /// The memory of the pieces padded with zeros to a multiple of
    /// `block`, as address ranges for gather transfers (neighbours merged).
    fn gather_list(&mut self, block: usize) -> Vec<Range<usize>> {
        let pad = self.len.next_multiple_of(block) - self.len;
        self.staging.as_mut_slice()[self.staged..self.staged + pad].fill(0);
        let base = self.staging.start();
        let padding = (pad > 0).then_some(base + self.staged..base + self.staged + pad);
        let ranges = self.list.iter().map(|piece| match piece {
            Pending::Staged(r) => base + r.start..base + r.end,
            Pending::Value(v) => {
                let at = v.as_ptr() as usize;
                at..at + v.len()
            }
        });
        // Merged only inside the staging buffer: a gather piece lies in
        // one buffer (see `bytes_at`).
        let staging = self.staging.range();
        let staged = |r: &Range<usize>| r.start >= staging.start && r.end <= staging.end;
        let mut memory: Vec<Range<usize>> = Vec::with_capacity(self.list.len() + 1);
        for r in ranges.chain(padding) {
            match memory.last_mut() {
                Some(last) if last.end == r.start && staged(last) && staged(&r) => last.end = r.end,
                _ => memory.push(r),
            }
        }
        memory
    }
}

/// Records encoded straight into the staging memory, values of
/// [`SHARE_FROM`] bytes or more kept by reference when the disk gathers.
impl RecordBuf for Pieces {
    fn end(&self) -> usize {
        self.staged
    }

    fn put(&mut self, bytes: &[u8]) {
        self.push_bytes(bytes);
    }

    fn since_mut(&mut self, from: usize) -> Option<&mut [u8]> {
        let staged = self.staged;
        if !self.fits() {
            return None;
        }
        self.staging.as_mut_slice().get_mut(from..staged)
    }

    fn share(&mut self, value: &Value) -> bool {
        let share = self.share && value.len() >= SHARE_FROM;
        if share {
            self.len += value.len();
            self.list.push(Pending::Value(value.clone()));
        }
        share
    }
}

fn io(what: &str, e: impl core::fmt::Debug) -> String {
    format!("{what}: {e:?}")
}

/// The bytes of `sources` (sorted by address) at the addresses `range`, if
/// one of them holds all of it.
fn bytes_at<'a>(sources: &[&'a [u8]], range: &Range<usize>) -> Option<&'a [u8]> {
    let after = sources.partition_point(|s| s.as_ptr() as usize <= range.start);
    let source = sources.get(after.checked_sub(1)?)?;
    let from = range.start - source.as_ptr() as usize;
    source.get(from..from + range.len())
}

/// How the disk moves the log's buffers: fault-aware with prefetch (the
/// pages are made resident first, which QEMU 7.2 needs for commands of
/// several pieces), pinned instead on a controller that moves physical
/// addresses (the SD card on the ZynqMP, with no SMMU in front of it),
/// which takes only pinned buffers.
fn policy(engine: EngineId) -> Policy {
    if dma::caps(engine).is_some_and(|c| c.physical) {
        Policy::Pin
    } else {
        Policy::FaultAwarePrefetch
    }
}

/// Moves the first `len` bytes of `region` to or from the disk at `disk`.
fn transfer(
    engine: EngineId,
    direction: Direction,
    region: &mut Region,
    len: usize,
    disk: u64,
) -> Result<(), String> {
    let policy = policy(engine);
    let outside = || String::from("disk transfer: longer than its buffer");
    match direction {
        Direction::FromDevice => {
            let bytes = region.as_mut_slice().get_mut(..len).ok_or_else(outside)?;
            dma::read(engine, bytes, disk, policy)
        }
        Direction::ToDevice => {
            let bytes = region.as_slice().get(..len).ok_or_else(outside)?;
            dma::write(engine, bytes, disk, policy)
        }
    }
    .map(|_| ())
    .map_err(|e| io("disk transfer", e))
}

/// An extent as this server uses it: no longer than it can read back at
/// start (the staging buffer).
fn readable(extent: Extent) -> Extent {
    Extent {
        limit: extent.limit.min(STAGING as u64),
        ..extent
    }
}

fn staging() -> Result<Region, String> {
    Region::demand_zero(STAGING).map_err(|e| io("staging buffer", e))
}

impl DiskLog {
    /// Opens the log on the disk, replaying every record into `apply`. A
    /// log that does not read back whole up to its durable length, or
    /// superblocks that cannot be read, are an error naming the place
    /// (see `kvstore::aof::check`): the caller must not serve then.
    pub fn open(
        engine: EngineId,
        info: NvmeInfo,
        fsync: AppendFsync,
        mut apply: impl FnMut(Args),
    ) -> Result<(DiskLog, Opened), String> {
        let block = info.block_size;
        let mut slots = Region::eager(2 * superblock::SLOT_STRIDE as usize)
            .map_err(|e| io("superblock buffer", e))?;
        let len = slots.len();
        transfer(engine, Direction::FromDevice, &mut slots, len, 0)?;
        let bytes = slots.as_slice();
        let stride = superblock::SLOT_STRIDE as usize;
        let found = check::find(&bytes[..stride], &bytes[stride..], info.capacity)
            .map_err(|damage| damage.describe())?;
        let fresh = Superblock {
            generation: 0,
            extent: readable(superblock::half(info.capacity, 0)),
            length: 0,
        };
        let mut log = DiskLog {
            engine,
            block,
            capacity: info.capacity,
            current: found.superblock.unwrap_or(fresh),
            // One block of the log holds at most `block / SHARE_FROM + 1`
            // value starts, as many staged pieces after them plus one
            // before, and the padding: the DMA scheduler can cut the list
            // into commands on block boundaries if one takes more than
            // that. (Without SGLs, max_pieces is 1: copy everything.)
            share: info.max_pieces >= 2 * (block / SHARE_FROM) + 5,
            max_pieces: info.max_pieces,
            pending_from: 0,
            pending: Pieces::new(info.max_pieces >= 2 * (block / SHARE_FROM) + 5)?,
            fsync,
            last_flush: time::now(),
            rewriting: None,
        };
        let mut opened = Opened {
            records: 0,
            bytes: 0,
            unreadable_slot: found.unreadable_slot,
        };
        let length = log.current.length;
        if length > STAGING as u64 {
            return Err(format!(
                "the log is {length} bytes, more than the {STAGING} this server reads at start"
            ));
        }
        if length == 0 {
            log.pending.push_bytes(&aof::HEADER);
            log.flush()?;
            opened.bytes = log.durable_bytes();
            return Ok((log, opened));
        }
        // Read the whole log and replay it; then keep only its last
        // partial block, in a fresh buffer (the pages of the read go).
        let mut read = staging()?;
        let rounded = (length as usize).next_multiple_of(block);
        transfer(
            engine,
            Direction::FromDevice,
            &mut read,
            rounded,
            log.current.extent.start,
        )?;
        let log_bytes = &read.as_slice()[..length as usize];
        opened.records = check::replay_all(log.current, log_bytes, &mut apply)
            .map_err(|damage| damage.describe())?;
        let keep_from = length / block as u64 * block as u64;
        log.keep_tail(keep_from, &log_bytes[keep_from as usize..]);
        opened.bytes = length;
        Ok((log, opened))
    }

    /// Bytes the log may grow to.
    fn limit(&self) -> u64 {
        self.current.extent.limit.min(STAGING as u64)
    }

    /// Whether the log holds three quarters of what it may grow to: a
    /// rewrite in progress should then take all the time it may.
    pub fn nearly_full(&self) -> bool {
        self.end() > self.limit() / 4 * 3
    }

    /// Where the log's next byte would go, counting what is not yet
    /// durable: the position a reply waits for under `appendfsync always`.
    pub fn end(&self) -> u64 {
        self.pending_from + self.pending.len as u64
    }

    /// Follows `CONFIG SET appendfsync`.
    pub fn set_fsync(&mut self, fsync: AppendFsync) {
        self.fsync = fsync;
    }

    /// Adds the records of `effects` at the end of the log (durable after
    /// the next flush) and returns the log's end after them: their bytes
    /// are copied to staging, their shared values kept as they are, to be
    /// written from their own memory. While a rewrite runs they also go to
    /// its tail. Records that would not fit the log's extent are not added
    /// at all.
    pub fn append(&mut self, effects: &Effects) -> Result<u64, LogFull> {
        let adding: usize = effects.pieces().map(|p| p.bytes().len()).sum();
        let needed = self.end() + adding as u64;
        if needed > self.limit() {
            return Err(LogFull {
                needed,
                limit: self.limit(),
            });
        }
        self.pending.push_effects(effects);
        if let Some(r) = self.rewriting.as_mut() {
            r.pending.push_effects(effects);
        }
        Ok(self.end())
    }

    /// Makes `tail`, the log's bytes from the block boundary `from` on, all
    /// that is pending (letting values go).
    fn keep_tail(&mut self, from: u64, tail: &[u8]) {
        self.pending.reset(tail);
        self.pending_from = from;
    }

    /// Whether anything pending is not durable yet.
    pub fn dirty(&self) -> bool {
        self.end() > self.current.length
    }

    /// Whether the appendfsync policy wants a flush now.
    pub fn flush_due(&self) -> bool {
        self.dirty()
            && match self.fsync {
                AppendFsync::Always => true,
                AppendFsync::EverySec => self.last_flush.elapsed().as_secs() >= 1,
                AppendFsync::No => self.pending.len >= 1 << 20,
            }
    }

    /// When a flush will be due if nothing else happens, for the server's
    /// sleep: `None` if nothing is staged or the policy waits for volume.
    pub fn flush_deadline(&self) -> Option<Instant> {
        match self.fsync {
            _ if !self.dirty() => None,
            AppendFsync::Always => Some(time::now()),
            AppendFsync::EverySec => {
                Some(self.last_flush.after(core::time::Duration::from_secs(1)))
            }
            AppendFsync::No => None,
        }
    }

    /// Whether large values are written from their own memory (the disk
    /// takes gather lists), for the boot message.
    pub fn shares_values(&self) -> bool {
        self.share
    }

    /// Bytes of log on the disk.
    pub fn durable_bytes(&self) -> u64 {
        self.current.length
    }

    /// Writes the pending pieces, the last block padded from staging, then
    /// the superblock with the new length. On an error nothing pending is
    /// let go.
    pub fn flush(&mut self) -> Result<(), String> {
        let end = self.end();
        let at = self.current.extent.start + self.pending_from;
        self.pending
            .write(self.engine, self.block, self.max_pieces, at)?;
        self.current = self.current.next(self.current.extent, end);
        self.write_superblock()?;
        self.last_flush = time::now();
        // Keep the last partial block; the full ones are on the disk.
        let full = self.pending.len / self.block * self.block;
        let tail = self.pending.bytes_from(full);
        self.keep_tail(self.pending_from + full as u64, &tail);
        Ok(())
    }

    /// Starts building a new log: give its buffer ([`rewrite_buf`]) to
    /// `kvstore::aof::RewriteScan`'s steps, check it after each
    /// ([`rewrite_checked`]), keep appending as usual, and end with
    /// [`finish_rewrite`] (or drop the log). It goes where the live log is
    /// not and may not reach, whatever the live log does meanwhile.
    ///
    /// [`rewrite_buf`]: DiskLog::rewrite_buf
    /// [`rewrite_checked`]: DiskLog::rewrite_checked
    /// [`finish_rewrite`]: DiskLog::finish_rewrite
    pub fn start_rewrite(&mut self) -> Result<(), String> {
        let live = self.current.extent;
        let extent = superblock::rewrite_extent(self.capacity, live, live.end(), live.limit)
            .map(readable)
            .ok_or_else(|| {
                format!(
                    "no room on the disk ({} bytes) for a rewritten log beside the live one",
                    self.capacity
                )
            })?;
        self.rewriting = Some(Rewriting {
            extent,
            written: 0,
            pending: Pieces::new(self.share)?,
            engine: self.engine,
            block: self.block,
            max_pieces: self.max_pieces,
            failed: None,
        });
        Ok(())
    }

    /// Where the scan's next step goes (large values by reference: a
    /// rewrite copies only what is small, and that once); `None` when no
    /// rewrite runs.
    pub fn rewrite_buf(&mut self) -> Option<&mut impl RecordBuf> {
        self.rewriting.as_mut()
    }

    /// Whether the new log has been written without an error so far; on
    /// an error the rewrite is abandoned and the live log goes on.
    pub fn rewrite_checked(&mut self) -> Result<(), String> {
        match self.rewriting.as_mut().map(|r| r.failed.take()) {
            Some(Some(e)) => {
                self.rewriting = None;
                Err(e)
            }
            Some(None) => Ok(()),
            None => Err("no rewrite in progress".into()),
        }
    }

    /// Makes the new log the log: its last part is written, and it
    /// becomes the log only when the superblock naming it is written, so a
    /// crash or an error at any point leaves the old log in force. Returns
    /// the new log's size.
    ///
    /// Synchronous: the disk writes of the last part and the superblock.
    pub fn finish_rewrite(&mut self) -> Result<u64, String> {
        self.rewrite_checked()?;
        let Some(mut new_log) = self.rewriting.take() else {
            return Err("no rewrite in progress".into());
        };
        new_log.write_pending()?;
        let (extent, len) = (new_log.extent, new_log.len());
        let switched = self.current.next(extent, len);
        let previous = core::mem::replace(&mut self.current, switched);
        if let Err(e) = self.write_superblock() {
            // The old superblock may still be the newest on the disk; keep
            // appending to the old log, staged data and all.
            self.current = previous;
            return Err(e);
        }
        self.last_flush = time::now();
        // What is pending is the last partial block, from `written` on.
        self.pending = new_log.pending;
        self.pending_from = new_log.written;
        Ok(len)
    }

    fn write_superblock(&mut self) -> Result<(), String> {
        let mut sb = Region::eager(4096).map_err(|e| io("superblock buffer", e))?;
        let bytes = self.current.encode();
        sb.as_mut_slice()[..bytes.len()].copy_from_slice(&bytes);
        transfer(
            self.engine,
            Direction::ToDevice,
            &mut sb,
            self.block,
            self.current.slot_offset(),
        )
    }
}
