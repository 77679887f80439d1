//! What commands changed, as log records ready to append.

use alloc::vec::Vec;

use crate::aof::{
    encode_record_into, encode_record_pieces, most_bytes, replay, Piece, RecordBuf, HEADER,
};
use crate::store::Value;
use crate::Args;

/// Values of at least this many bytes are written to the log from their
/// own memory instead of being copied into its staging buffer.
///
/// Chosen by measurement (QEMU 7.2 TCG, NVMe with SGLs, `redis-benchmark
/// -t set,mset -c 50`, appendfsync everysec, same session, noisy 2-core
/// host): sharing 4 KiB values made 4 KiB SET 30-50% slower (2.7k vs
/// 3.8-5.9k ops/s) and MSET too: per value, a gather piece for the DMA
/// scheduler and the device, and two pages to translate (heap values are
/// not page-aligned), cost more than the guest's copy. With 16 KiB, 4 KiB
/// values are copied as before (3.7k SET, 696 MSET: within the old
/// spread) and 64 KiB values are shared: SET 636 vs 374-478 ops/s, MSET
/// 65 vs 39-49. It is also at least any block size, so a block holds few
/// pieces (see the disk log's `share`).
pub const SHARE_FROM: usize = 16 * 1024;

/// The canonical commands describing changes to the dataset (see the table
/// in [`crate::commands`]), each already encoded as an append-only log
/// record: the engine encodes a change once, straight from the bytes it
/// has at hand, and the server appends the [`pieces`](Effects::pieces) to
/// the log. Values of [`SHARE_FROM`] bytes or more are not copied: the
/// records refer to them, and they stay alive and unchanged (see
/// [`Value`]) for as long as the log holds them.
///
/// ```
/// use kvstore::aof::{replay, HEADER};
/// use kvstore::commands::Effects;
///
/// let mut effects = Effects::default();
/// effects.push(["SET", "k", "v"]);
/// effects.push(["DEL", "k"]);
/// assert_eq!(effects.len(), 2);
/// let mut log = HEADER.to_vec();
/// log.extend(effects.to_bytes());
/// let mut names = Vec::new();
/// replay(&log, |args| names.push(args[0].clone()));
/// assert_eq!(names, [b"SET".to_vec(), b"DEL".to_vec()]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Effects {
    /// The records' bytes, without the shared values.
    records: Vec<u8>,
    /// Each shared value, and where in `records` it belongs (ascending).
    shared: Vec<(usize, Value)>,
    count: usize,
    /// The records apply whatever the database (`FLUSHALL`, `SWAPDB`): no
    /// `SELECT` is needed before them.
    db_independent: bool,
}

impl Effects {
    /// Adds one command, encoded as a log record.
    pub fn push<A: AsRef<[u8]>>(&mut self, args: impl AsRef<[A]>) {
        encode_record_into(args.as_ref(), &mut self.records);
        self.count += 1;
    }

    /// Adds `other`'s records after these.
    pub fn append(&mut self, other: Effects) {
        if self.count == 0 && self.records.is_empty() && self.shared.is_empty() {
            // Nothing here yet (the usual case): take the other's buffers
            // rather than copy them.
            let db_independent = self.db_independent;
            *self = other;
            self.db_independent = db_independent;
            return;
        }
        let base = self.records.len();
        self.records.extend_from_slice(&other.records);
        self.shared
            .extend(other.shared.into_iter().map(|(at, v)| (base + at, v)));
        self.count += other.count;
    }

    /// Says that the records apply to every database (`FLUSHALL`).
    pub fn mark_db_independent(&mut self) {
        self.db_independent = true;
    }

    /// Whether the records apply to every database.
    pub fn db_independent(&self) -> bool {
        self.db_independent
    }

    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// How many commands.
    pub fn len(&self) -> usize {
        self.count
    }

    /// The log records, in order, as pieces: encoded bytes and the shared
    /// values between them (no piece is empty).
    pub fn pieces(&self) -> impl Iterator<Item = Piece<'_>> + '_ {
        let ends = self.shared.iter().map(|(at, v)| (*at, Some(v)));
        let ends = ends.chain(core::iter::once((self.records.len(), None)));
        let mut from = 0;
        ends.flat_map(move |(at, value)| {
            let bytes = &self.records[from..at];
            from = at;
            let bytes = (!bytes.is_empty()).then_some(Piece::Bytes(bytes));
            bytes.into_iter().chain(value.map(Piece::Value))
        })
    }

    /// The log records, in order, as one buffer (for tests and tools).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::new();
        for piece in self.pieces() {
            bytes.extend_from_slice(piece.bytes());
        }
        bytes
    }

    /// The commands, decoded again (for tests and tools).
    pub fn commands(&self) -> Vec<Args> {
        let mut log = HEADER.to_vec();
        log.extend(self.to_bytes());
        let mut commands = Vec::new();
        replay(&log, |args| commands.push(args));
        commands
    }
}

/// Records that commands log: values of [`SHARE_FROM`] bytes or more are
/// kept by reference.
impl RecordBuf for Effects {
    fn end(&self) -> usize {
        self.records.len()
    }

    fn put(&mut self, bytes: &[u8]) {
        self.records.extend_from_slice(bytes);
    }

    fn since_mut(&mut self, from: usize) -> Option<&mut [u8]> {
        self.records.get_mut(from..)
    }

    fn share(&mut self, value: &Value) -> bool {
        let share = value.len() >= SHARE_FROM;
        if share {
            self.shared.push((self.records.len(), value.clone()));
        }
        share
    }

    fn reserve_for(&mut self, args: &[Piece<'_>]) {
        self.records.reserve(most_bytes(args, SHARE_FROM));
    }

    fn record(&mut self, args: &[Piece<'_>]) {
        encode_record_pieces(args, self);
        self.count += 1;
    }
}
