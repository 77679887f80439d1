//! Log compaction: a fresh log holding just the live data.

use alloc::vec::Vec;

use super::record::HEADER;
use super::Piece;
use crate::commands::Effects;
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
    rewrite_each(store, now_ms, |bytes| out.extend_from_slice(bytes));
    out
}

/// [`rewrite`] in pieces: `emit` gets the header, then one record at a
/// time, so the server can copy the new log straight into its disk buffer
/// without holding a second copy of the whole thing.
pub fn rewrite_each(store: &Store, now_ms: u64, mut emit: impl FnMut(&[u8])) {
    let mut scan = RewriteScan::new(now_ms);
    while !scan.step(store, usize::MAX, &mut |bytes| emit(bytes)) {}
}

/// A rewrite taken a few keys at a time, so the server keeps serving
/// clients while it runs (Redis forks for this; a step here is short).
///
/// The keyspace changes between steps, so the records emitted are not one
/// snapshot. The new log is the emitted records followed by every record
/// logged while the scan ran (the *tail*); that replays to the dataset at
/// the end because every effect the engine logs during a rewrite is
/// absolute (`APPEND` is logged as `SET key <value> KEEPTTL` then, a change
/// to a hash or a list as `DEL key` followed by the whole value):
/// replaying a key's tail effects over whatever state the scan captured
/// gives the same result as over the state before the rewrite. Keys
/// expired when the rewrite started are left out; one that expires later
/// is kept with its `PXAT`, since the tail may refer to it.
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
/// while !scan.step(&store, 10, &mut |bytes| log.extend_from_slice(bytes)) {
///     // ... serve clients, logging their changes to the tail ...
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
    /// Whether its `SELECT` was emitted.
    selected: bool,
    /// The database the new log must end in (see [`RewriteScan::ending_in`]).
    end_db: usize,
    /// The database of the last record emitted.
    last_db: usize,
}

impl RewriteScan {
    /// A rewrite starting at `now_ms`.
    pub fn new(now_ms: u64) -> Self {
        RewriteScan {
            now_ms,
            cursor: None,
            db: 0,
            selected: false,
            end_db: 0,
            last_db: 0,
        }
    }

    /// Makes the new log end in database `db` (a `SELECT` after the last
    /// record if needed): the server's log is in that database when the
    /// rewrite starts (`Engine::log_db`), and what it logs during the
    /// rewrite, which follows the scan in the new log, is relative to it.
    pub fn ending_in(mut self, db: usize) -> Self {
        self.end_db = db;
        self
    }

    /// Emits the records of about `keys` more keys of `store` (the header
    /// first); returns whether the scan is complete.
    pub fn step(&mut self, store: &Store, keys: usize, emit: &mut dyn FnMut(&[u8])) -> bool {
        let mut records = Effects::default();
        let done = self.step_records(core::slice::from_ref(store), keys, &mut records);
        emit(&records.to_bytes());
        done
    }

    /// Like [`step`](RewriteScan::step), over every database (`dbs[i]` is
    /// database `i`; the records of a database other than 0 follow a
    /// `SELECT`), adding the records to `out`, where large values are
    /// referred to, not copied: a rewrite then writes them to the disk from
    /// their own memory, as appends do.
    pub fn step_records(&mut self, dbs: &[Store], keys: usize, out: &mut Effects) -> bool {
        let cursor = match self.cursor {
            None => {
                out.push_raw(&HEADER);
                0
            }
            Some(cursor) => cursor,
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
            if !self.selected {
                self.selected = true;
                if self.db != self.last_db {
                    out.push([&b"SELECT"[..], &format_i64(self.db as i64)]);
                    self.last_db = self.db;
                }
            }
            push_entry(out, key, entry);
        }
        self.cursor = Some(next);
        if next != 0 {
            return false;
        }
        // This database is done: on to the next, if any.
        self.db += 1;
        self.selected = false;
        if self.db < dbs.len() {
            return false;
        }
        if self.last_db != self.end_db {
            out.push([&b"SELECT"[..], &format_i64(self.end_db as i64)]);
            self.last_db = self.end_db;
        }
        true
    }
}

/// Adds the records that recreate `key` holding `entry`, starting from a
/// missing key: `SET key <value> [PXAT <ms>]` for a string; for a hash one
/// `HSET key field value [field value ...]` with every field, then
/// `PEXPIREAT key <ms>` if it expires; for a list `RPUSH key element ...`,
/// [`LIST_ELEMENTS_PER_RECORD`] elements a record, head first, then the
/// `PEXPIREAT`; for a set `SADD key member ...`, [`SET_MEMBERS_PER_RECORD`]
/// members a record, then the `PEXPIREAT`. A log rewrite writes these for each
/// live key, and commands that store a whole value under a key (`RENAME`,
/// `COPY`, `MOVE`) log them too.
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
pub fn push_entry(out: &mut Effects, key: &[u8], entry: &Entry) {
    let at = entry
        .expire_at()
        .map(|at| format_i64(i64::try_from(at).unwrap_or(i64::MAX)));
    match entry.data() {
        Data::String(value) => {
            let (set, value) = (Piece::Bytes(b"SET"), Piece::Value(value));
            match &at {
                Some(at) => out.push_args(&[
                    set,
                    Piece::Bytes(key),
                    value,
                    Piece::Bytes(b"PXAT"),
                    Piece::Bytes(at),
                ]),
                None => out.push_args(&[set, Piece::Bytes(key), value]),
            }
        }
        Data::Hash(hash) => {
            let mut args: Vec<&[u8]> = Vec::with_capacity(2 + 2 * hash.len());
            args.extend([&b"HSET"[..], key]);
            for (field, value) in hash.iter() {
                args.extend([field, value]);
            }
            out.push(&args);
            if let Some(at) = &at {
                out.push([&b"PEXPIREAT"[..], key, at]);
            }
        }
        Data::List(list) => {
            let mut elements = list.iter();
            while elements.len() > 0 {
                let chunk = elements.len().min(LIST_ELEMENTS_PER_RECORD);
                let mut args: Vec<Piece<'_>> = Vec::with_capacity(2 + chunk);
                args.extend([Piece::Bytes(b"RPUSH"), Piece::Bytes(key)]);
                args.extend(elements.by_ref().take(chunk).map(Piece::Bytes));
                out.push_args(&args);
            }
            if let Some(at) = &at {
                out.push([&b"PEXPIREAT"[..], key, at]);
            }
        }
        Data::Set(set) => {
            let mut members = set.iter();
            while members.len() > 0 {
                let chunk: Vec<_> = members.by_ref().take(SET_MEMBERS_PER_RECORD).collect();
                let mut args: Vec<&[u8]> = Vec::with_capacity(2 + chunk.len());
                args.extend([&b"SADD"[..], key]);
                args.extend(chunk.iter().map(|m| &**m));
                out.push(&args);
            }
            if let Some(at) = &at {
                out.push([&b"PEXPIREAT"[..], key, at]);
            }
        }
        Data::Zset(zset) => {
            crate::commands::push_zset(out, key, zset);
            if let Some(at) = &at {
                out.push([&b"PEXPIREAT"[..], key, at]);
            }
        }
    }
}

/// Elements per `RPUSH` record when a whole list is logged
/// ([`push_entry`]): a long list becomes several records, so replaying it
/// never needs one huge record in memory.
pub const LIST_ELEMENTS_PER_RECORD: usize = 128;

/// Members per `SADD` record when a whole set is logged ([`push_entry`]),
/// for the reason lists are cut into records of
/// [`LIST_ELEMENTS_PER_RECORD`].
pub const SET_MEMBERS_PER_RECORD: usize = 128;
