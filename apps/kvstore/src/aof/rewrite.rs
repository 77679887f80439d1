//! Log compaction: a fresh log holding just the live data.

use alloc::vec::Vec;

use super::record::HEADER;
use super::{Piece, RecordBuf};
use crate::num::format_i64;
use crate::store::{Data, Entry, Store};

/// A complete log (header included) that recreates the keys live at
/// `now_ms`: one record per key (see [`push_entry`]). Keys already expired
/// are left out. The server writes it to a new
/// file and swaps it in for the old log.
///
/// ```
/// use kvstore::aof::{replay, rewrite};
/// use kvstore::store::Store;
///
/// let mut store = Store::new();
/// store.set(b"k", b"v".to_vec(), Some(5_000));
/// store.set(b"gone", b"x".to_vec(), Some(10));
/// let mut commands = Vec::new();
/// replay(&rewrite(&store, 1_000), |args| commands.push(args));
/// let expected: Vec<Vec<u8>> = ["SET", "k", "v", "PXAT", "5000"].map(|s| s.as_bytes().to_vec()).to_vec();
/// assert_eq!(commands, [expected]);
/// ```
pub fn rewrite(store: &Store, now_ms: u64) -> Vec<u8> {
    let mut out = Vec::new();
    let mut scan = RewriteScan::new(now_ms);
    while !scan.step(store, usize::MAX, &mut out) {}
    out
}

/// A rewrite taken a few keys at a time, so the server keeps serving
/// clients while it runs (Redis forks for this; a step here is short).
///
/// ```text
///  new log:  header │ scan step │ records logged │ scan step │ records ...
///                   │ keys A..  │ meanwhile      │ keys K..  │
///  a change to a key the scan passed  ──► follows the key's record: exact
///  a change to a key not yet passed   ──► replays onto a key the new log
///        does not have yet; the scan's record of that key comes later,
///        starts with `DEL key` when the key changed since the rewrite
///        began, and holds the key as it is then, that change included
/// ```
///
/// The new log is one stream, in the order things happened: each step's
/// records, and between steps every record the server logged meanwhile
/// (the same records go to the old log). No record is relative to a
/// snapshot, so nothing is logged twice: a list pushed to during the
/// rewrite is logged as its pushes, never whole. Two kinds of record would
/// replay wrongly onto a key the scan has not reached, and the engine logs
/// them otherwise while the scan lags the key ([`RewriteScan::passed`]):
/// a move out of such a key into a key already passed (the moved element
/// must reach the destination: logged as a pop and a push), and `LSET`
/// (it fails on a missing key: logged as the whole list). Keys expired
/// when the rewrite started are left out; one that expires later is kept
/// with its `PXAT`, since later records may refer to it.
///
/// ```
/// use kvstore::aof::{replay, RewriteScan};
/// use kvstore::store::Store;
///
/// let mut store = Store::new();
/// for i in 0..100 {
///     store.set(format!("k{i}").as_bytes(), b"v".to_vec(), None);
/// }
/// let mut log = Vec::new();
/// let mut scan = RewriteScan::new(0);
/// while !scan.step(&store, 10, &mut log) {
///     // ... serve clients, adding their records to `log` ...
/// }
/// let mut records = 0;
/// replay(&log, |_| records += 1);
/// assert_eq!(records, 100);
/// ```
#[derive(Clone, Debug)]
pub struct RewriteScan {
    now_ms: u64,
    /// The store's scan cursor to resume from; `None` before the header.
    cursor: Option<u64>,
    /// The database being scanned.
    db: usize,
    /// Entries at this version or later changed after the rewrite began
    /// (see [`crate::store::next_version_mark`]).
    since: u64,
    /// Records that go right after the header, before any key (the
    /// function libraries, which keys' records never refer to).
    prelude: Vec<Vec<Vec<u8>>>,
}

impl RewriteScan {
    /// A rewrite starting at `now_ms`.
    pub fn new(now_ms: u64) -> Self {
        RewriteScan {
            now_ms,
            cursor: None,
            db: 0,
            since: crate::store::next_version_mark(),
            prelude: Vec::new(),
        }
    }

    /// Whether the first step (the header) is still to come.
    pub fn at_start(&self) -> bool {
        self.cursor.is_none()
    }

    /// The records the first step writes after the header.
    pub fn set_prelude(&mut self, records: Vec<Vec<Vec<u8>>>) {
        if self.at_start() {
            self.prelude = records;
        }
    }

    /// Adds the records of about `keys` more keys of `store` to `out` (the
    /// header first); returns whether the scan is complete.
    pub fn step(&mut self, store: &Store, keys: usize, out: &mut dyn RecordBuf) -> bool {
        self.step_records(core::slice::from_ref(store), keys, 0, out)
    }

    /// Whether the new log already holds `key` of database `db` as it
    /// was when the scan reached it (or knows it was missing then): a
    /// record about the key logged now replays after that.
    pub fn passed(&self, db: usize, key: &[u8]) -> bool {
        match self.cursor {
            None => false,
            Some(cursor) => db < self.db || (db == self.db && Store::scan_passed(key, cursor)),
        }
    }

    /// Like [`step`](RewriteScan::step), over every database (`dbs[i]` is
    /// database `i`). The records go to `out` one at a time, as they are
    /// made: the server's buffer for the new log takes each straight from
    /// the store's memory, and writes the log out as it grows, so one
    /// large key is never held twice. `log_db` is the database the new
    /// log is in where these records go (the database of the last record
    /// logged): records of another database go between a `SELECT` of it
    /// and a `SELECT` back.
    pub fn step_records(
        &mut self,
        dbs: &[Store],
        keys: usize,
        log_db: usize,
        out: &mut dyn RecordBuf,
    ) -> bool {
        let (cursor, mut in_db) = match self.cursor {
            None => {
                out.put(&HEADER);
                for record in core::mem::take(&mut self.prelude) {
                    let pieces: Vec<Piece<'_>> = record.iter().map(|a| Piece::Bytes(a)).collect();
                    out.record(&pieces);
                }
                // A log starts in database 0.
                (0, 0)
            }
            Some(cursor) => (cursor, log_db),
        };
        let Some(store) = dbs.get(self.db) else {
            return true;
        };
        let (next, found) = store.scan(cursor, keys);
        for key in found {
            let Some(entry) = store.get(key) else {
                continue;
            };
            if entry.is_expired(self.now_ms) {
                continue;
            }
            if in_db != self.db {
                select(out, self.db);
                in_db = self.db;
            }
            let string = matches!(entry.data(), Data::String(_));
            if entry.version() >= self.since && !string {
                // Records logged since the rewrite began may have built
                // part of it already (a `SET` replaces a string anyway).
                out.record(&[Piece::Bytes(b"DEL"), Piece::Bytes(key)]);
            }
            push_entry(out, key, entry);
        }
        if in_db != log_db {
            select(out, log_db);
        }
        if next != 0 {
            self.cursor = Some(next);
            return false;
        }
        // This database is done: on to the next, if any.
        self.cursor = Some(0);
        self.db += 1;
        self.db >= dbs.len()
    }
}

/// Records `SELECT db`.
fn select(out: &mut dyn RecordBuf, db: usize) {
    out.record(&[
        Piece::Bytes(b"SELECT"),
        Piece::Bytes(&format_i64(db as i64)),
    ]);
}

/// Adds the records that recreate `key` holding `entry`, starting from a
/// missing key: `SET key <value> [PXAT <ms>]` for a string; for a hash
/// `HSET key field value ...`, [`HASH_FIELDS_PER_RECORD`] fields a record,
/// then `PEXPIREAT key <ms>` if it expires; for a list `RPUSH key element
/// ...`, [`LIST_ELEMENTS_PER_RECORD`] elements a record, head first, then
/// the `PEXPIREAT`; for a set `SADD key member ...`,
/// [`SET_MEMBERS_PER_RECORD`] members a record, then the `PEXPIREAT`. A log
/// rewrite writes these for each live key, and commands that store a whole
/// value under a key (`RENAME`, `COPY`, `MOVE`) log them too. The records
/// reach `out` one at a time, so a buffer can write a large key out in
/// parts.
///
/// ```
/// use kvstore::aof::push_entry;
/// use kvstore::commands::Effects;
/// use kvstore::store::Store;
///
/// let mut store = Store::new();
/// store.update_hash(b"h", |h| h.insert(b"f".to_vec(), b"v".to_vec(), Default::default()));
/// store.set_expire(b"h", Some(9_000));
/// let mut records = Effects::default();
/// push_entry(&mut records, b"h", store.get(b"h").unwrap());
/// let words = |s: &str| s.split(' ').map(|w| w.as_bytes().to_vec()).collect::<Vec<_>>();
/// assert_eq!(records.commands(), [words("HSET h f v"), words("PEXPIREAT h 9000")]);
/// ```
pub fn push_entry(out: &mut dyn RecordBuf, key: &[u8], entry: &Entry) {
    let at = entry
        .expire_at()
        .map(|at| format_i64(i64::try_from(at).unwrap_or(i64::MAX)));
    match entry.data() {
        Data::String(value) => {
            let (set, value) = (Piece::Bytes(b"SET"), Piece::Value(value));
            match &at {
                Some(at) => out.record(&[
                    set,
                    Piece::Bytes(key),
                    value,
                    Piece::Bytes(b"PXAT"),
                    Piece::Bytes(at),
                ]),
                None => out.record(&[set, Piece::Bytes(key), value]),
            }
            return;
        }
        Data::Hash(hash) => {
            let mut fields = hash.iter().peekable();
            let mut args: Vec<Piece<'_>> = Vec::with_capacity(2 + 2 * HASH_FIELDS_PER_RECORD);
            while fields.peek().is_some() {
                args.clear();
                args.extend([Piece::Bytes(b"HSET"), Piece::Bytes(key)]);
                for (field, value) in fields.by_ref().take(HASH_FIELDS_PER_RECORD) {
                    args.extend([Piece::Bytes(field), Piece::Bytes(value)]);
                }
                out.record(&args);
            }
        }
        Data::List(list) => {
            let mut elements = list.iter();
            let mut args: Vec<Piece<'_>> = Vec::with_capacity(2 + LIST_ELEMENTS_PER_RECORD);
            while elements.len() > 0 {
                args.clear();
                args.extend([Piece::Bytes(b"RPUSH"), Piece::Bytes(key)]);
                let chunk = elements.len().min(LIST_ELEMENTS_PER_RECORD);
                args.extend(elements.by_ref().take(chunk).map(Piece::Bytes));
                out.record(&args);
            }
        }
        Data::Set(set) => {
            let mut members = set.iter();
            while members.len() > 0 {
                // An intset's members are texts made here: held for the record.
                let chunk: Vec<_> = members.by_ref().take(SET_MEMBERS_PER_RECORD).collect();
                let mut args: Vec<Piece<'_>> = Vec::with_capacity(2 + chunk.len());
                args.extend([Piece::Bytes(b"SADD"), Piece::Bytes(key)]);
                args.extend(chunk.iter().map(|m| Piece::Bytes(m)));
                out.record(&args);
            }
        }
        Data::Zset(zset) => crate::commands::push_zset(out, key, zset),
        Data::Stream(stream) => crate::commands::push_stream(out, key, stream),
    }
    if let Some(at) = &at {
        out.record(&[
            Piece::Bytes(b"PEXPIREAT"),
            Piece::Bytes(key),
            Piece::Bytes(at),
        ]);
    }
}

/// Fields per `HSET` record when a whole hash is logged ([`push_entry`]),
/// for the reason lists are cut into records of
/// [`LIST_ELEMENTS_PER_RECORD`].
pub const HASH_FIELDS_PER_RECORD: usize = 128;

/// Elements per `RPUSH` record when a whole list is logged
/// ([`push_entry`]): a long list becomes several records, so replaying it
/// never needs one huge record in memory.
pub const LIST_ELEMENTS_PER_RECORD: usize = 128;

/// Members per `SADD` record when a whole set is logged ([`push_entry`]),
/// for the reason lists are cut into records of
/// [`LIST_ELEMENTS_PER_RECORD`].
pub const SET_MEMBERS_PER_RECORD: usize = 128;
