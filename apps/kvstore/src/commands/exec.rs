//! The context one command runs in, and the helpers every command uses to
//! read keys (expiring them lazily) and to record what it changed.

use super::{ClientCtx, Effects, Stats};
use crate::aof::{Piece, RecordBuf};
use crate::config::Config;
use crate::resp::Reply;
use crate::store::{Entry, Hash, List, Store, Stream, Value, Zset};

/// Everything a command handler may look at or change.
pub(crate) struct Exec<'a> {
    /// The client's database.
    pub store: &'a mut Store,
    /// Its index.
    pub db: usize,
    /// The databases before it and after it (`MOVE`, `FLUSHALL`, `INFO`).
    pub dbs_before: &'a mut [Store],
    pub dbs_after: &'a mut [Store],
    pub config: &'a mut Config,
    pub stats: &'a mut Stats,
    pub client: &'a mut ClientCtx,
    /// The caller's clock, in milliseconds.
    pub now: u64,
    /// When the engine was created, for `INFO` uptime.
    pub started_ms: u64,
    /// Replaying the log: keys never expire lazily, expiry times in the
    /// past are stored as given, and nothing is logged.
    pub loading: bool,
    /// The command's full name for error text (`set`, `config|get`).
    pub fullname: &'static str,
    /// Canonical commands describing the changes made, in order.
    pub effects: Effects,
    /// The engine's pseudo-random state (`RANDOMKEY`).
    pub random: &'a mut faultline_rng::XorShift64Star,
    /// Channel and pattern subscriptions, and messages to deliver.
    pub pubsub: &'a mut crate::pubsub::PubSub,
    /// Client-side caching (`CLIENT TRACKING`).
    pub tracking: &'a mut crate::tracking::Tracking,
    /// `CLIENT PAUSE` (see `kvstore::pause`).
    pub pause: &'a mut crate::pause::Pause,
    /// Every connection, for `CLIENT LIST/INFO/KILL`.
    pub clients: &'a mut crate::clients::Clients,
    /// The slow log (`SLOWLOG`).
    pub slowlog: &'a mut crate::slowlog::SlowLog,
    /// Clients blocked on keys, and the keys ready to serve them.
    pub blocking: &'a mut crate::blocking::Blocking,
    /// Whether a blocking command may block now: not while loading, nor
    /// inside `EXEC` (there it answers as its non-blocking form).
    pub may_block: bool,
    /// Set by a blocking command that found nothing: what the client waits
    /// for. Its reply is then not sent (see [`Exec::block_on`]).
    pub block: Option<crate::blocking::Wait>,
    /// The running log rewrite's scan, if one runs (see
    /// [`Exec::rewrite_lags`]).
    pub rewrite: Option<&'a crate::aof::RewriteScan>,
    /// The ACL users and log (`ACL ...`, `AUTH`).
    pub acl: &'a mut crate::acl::Acl,
}

/// Refuses a reply that would copy more than `bytes` out of the
/// dataset past the limit one command's reply may take: the client's
/// output hard limit when one is set (the client would be cut off
/// anyway), else `proto-max-bulk-len`, the cap on what one request may
/// bring in. Commands whose reply can be a multiple of the dataset
/// (`HRANDFIELD` with a negative count) check it before copying, so a
/// request cannot take the server's memory through its reply.
pub(crate) fn reply_fits(config: &Config, bytes: u64) -> Result<(), Reply> {
    let limit = match config.client_output_hard_limit {
        0 => config.proto_max_bulk_len,
        hard => hard,
    };
    if bytes > limit {
        return Err(Reply::error(alloc::format!(
            "OOM the reply would take {bytes} bytes, more than the {limit} one reply may take"
        )));
    }
    Ok(())
}

impl Exec<'_> {
    /// Publishes a keyspace notification of `class` (see
    /// `kvstore::notify`) for `event` on `key` in this database, if
    /// `notify-keyspace-events` enables it. Replay publishes nothing.
    pub fn notify(&mut self, class: u16, event: &str, key: &[u8]) {
        self.notify_in(self.db, class, event, key);
    }

    /// Called when a change to a collection emptied it, so that the key
    /// went without a `DEL` of its own in the log: notifies `del`, and
    /// while a log rewrite lags the key ([`rewrite_lags`](Exec::rewrite_lags))
    /// logs `DEL key` too. There the change replayed onto the new log's
    /// partial copy of the key, which the `DEL` empties as well: a later
    /// write may then create the key anew as another type.
    pub fn emptied(&mut self, key: &[u8]) {
        self.notify(crate::notify::GENERIC, "del", key);
        if self.rewrite_lags(key) {
            self.log([&b"DEL"[..], key]);
        }
    }

    /// Like [`notify`](Exec::notify), for a key of database `db` (`MOVE`,
    /// `COPY ... DB`).
    /// Every change to a key passes here (the one "key changed" path): the
    /// clients that cache it are told too (`kvstore::tracking`).
    pub fn notify_in(&mut self, db: usize, class: u16, event: &str, key: &[u8]) {
        if !self.loading {
            if class != crate::notify::KEY_MISS {
                self.tracking.invalidate(key, Some(self.client.id()));
            }
            let flags = self.config.notify_keyspace_events;
            crate::notify::publish(self.pubsub, flags, class, event, key, db);
        }
    }

    /// The live entry for `key`. A key found expired is removed first, and
    /// the removal logged as `DEL`: a later logged write may depend on the
    /// key being gone, and replay does not expire keys by itself. Records
    /// the access (see `Entry::idle_ms`).
    pub fn live(&mut self, key: &[u8]) -> Option<&Entry> {
        self.lookup(key, true)
    }

    /// Like [`live`](Exec::live), leaving the key's last access time and
    /// access frequency as they were: for commands that look at a key
    /// without using it (`TTL`, `TYPE`, `EXISTS`; Redis's `LOOKUP_NOTOUCH`).
    pub fn peek(&mut self, key: &[u8]) -> Option<&Entry> {
        self.lookup(key, false)
    }

    fn lookup(&mut self, key: &[u8], touch: bool) -> Option<&Entry> {
        // Only a database with expiry times can hold an expired key: the
        // common case is then one lookup, not two.
        let may_expire = !self.loading && self.store.volatile_len() > 0;
        if may_expire && self.store.get(key)?.is_expired(self.now) {
            if self.pause.active(self.now) {
                // Expired, but kept until the pause ends, as in Redis.
                return None;
            }
            self.store.remove(key);
            self.stats.expired_keys += 1;
            self.log([&b"DEL"[..], key]);
            self.notify(crate::notify::EXPIRED, "expired", key);
            return None;
        }
        if touch {
            self.store.get_touched(key)
        } else {
            self.store.get(key)
        }
    }

    /// Like [`live`](Exec::live), counting a keyspace hit or miss: for
    /// commands that read values.
    pub fn read(&mut self, key: &[u8]) -> Option<&Entry> {
        self.count(key, true)
    }

    /// Like [`read`](Exec::read), without recording the access
    /// ([`peek`](Exec::peek)).
    pub fn read_untouched(&mut self, key: &[u8]) -> Option<&Entry> {
        self.count(key, false)
    }

    fn count(&mut self, key: &[u8], touch: bool) -> Option<&Entry> {
        if !self.loading && self.store.volatile_len() == 0 {
            // No key can be expired: one search, and the counters and the
            // miss event reached by field (the entry borrows the store).
            let entry = match touch {
                true => self.store.get_touched(key),
                false => self.store.get(key),
            };
            match entry {
                Some(_) => self.stats.keyspace_hits += 1,
                None => {
                    self.stats.keyspace_misses += 1;
                    let flags = self.config.notify_keyspace_events;
                    let (class, db) = (crate::notify::KEY_MISS, self.db);
                    crate::notify::publish(self.pubsub, flags, class, "keymiss", key, db);
                }
            }
            return entry;
        }
        let found = self.lookup(key, touch).is_some();
        if self.loading {
            // Replay is not client traffic.
        } else if found {
            self.stats.keyspace_hits += 1;
        } else {
            self.stats.keyspace_misses += 1;
            self.notify(crate::notify::KEY_MISS, "keymiss", key);
        }
        // `lookup` already removed the key if it was expired.
        self.store.get(key)
    }

    /// The live string at `key` ([`live`](Exec::live)): `Ok(None)` if the
    /// key is missing, `WRONGTYPE` if it holds another type.
    pub fn live_string(&mut self, key: &[u8]) -> Result<Option<&Value>, Reply> {
        match self.live(key) {
            None => Ok(None),
            Some(entry) => entry
                .shared()
                .map(Some)
                .ok_or_else(super::errors::wrong_type),
        }
    }

    /// Like [`live_string`](Exec::live_string), counting a keyspace hit or
    /// miss ([`read`](Exec::read)).
    pub fn read_string(&mut self, key: &[u8]) -> Result<Option<&Value>, Reply> {
        match self.read(key) {
            None => Ok(None),
            Some(entry) => entry
                .shared()
                .map(Some)
                .ok_or_else(super::errors::wrong_type),
        }
    }

    /// The live hash at `key` ([`live`](Exec::live)): `Ok(None)` if the key
    /// is missing, `WRONGTYPE` if it holds another type.
    pub fn live_hash(&mut self, key: &[u8]) -> Result<Option<&Hash>, Reply> {
        match self.live(key) {
            None => Ok(None),
            Some(entry) => entry.hash().map(Some).ok_or_else(super::errors::wrong_type),
        }
    }

    /// Like [`live_hash`](Exec::live_hash), counting a keyspace hit or miss
    /// ([`read`](Exec::read)).
    pub fn read_hash(&mut self, key: &[u8]) -> Result<Option<&Hash>, Reply> {
        match self.read(key) {
            None => Ok(None),
            Some(entry) => entry.hash().map(Some).ok_or_else(super::errors::wrong_type),
        }
    }

    /// The live list at `key` ([`live`](Exec::live)): `Ok(None)` if the key
    /// is missing, `WRONGTYPE` if it holds another type.
    pub fn live_list(&mut self, key: &[u8]) -> Result<Option<&List>, Reply> {
        match self.live(key) {
            None => Ok(None),
            Some(entry) => entry.list().map(Some).ok_or_else(super::errors::wrong_type),
        }
    }

    /// Like [`live_list`](Exec::live_list), counting a keyspace hit or miss
    /// ([`read`](Exec::read)).
    pub fn read_list(&mut self, key: &[u8]) -> Result<Option<&List>, Reply> {
        match self.read(key) {
            None => Ok(None),
            Some(entry) => entry.list().map(Some).ok_or_else(super::errors::wrong_type),
        }
    }

    /// The live sorted set at `key` ([`live`](Exec::live)): `Ok(None)` if
    /// the key is missing, `WRONGTYPE` if it holds another type.
    pub fn live_zset(&mut self, key: &[u8]) -> Result<Option<&Zset>, Reply> {
        match self.live(key) {
            None => Ok(None),
            Some(entry) => entry.zset().map(Some).ok_or_else(super::errors::wrong_type),
        }
    }

    /// Like [`live_zset`](Exec::live_zset), counting a keyspace hit or
    /// miss ([`read`](Exec::read)).
    pub fn read_zset(&mut self, key: &[u8]) -> Result<Option<&Zset>, Reply> {
        match self.read(key) {
            None => Ok(None),
            Some(entry) => entry.zset().map(Some).ok_or_else(super::errors::wrong_type),
        }
    }

    /// The live stream at `key` ([`live`](Exec::live)): `Ok(None)` if the
    /// key is missing, `WRONGTYPE` if it holds another type.
    pub fn live_stream(&mut self, key: &[u8]) -> Result<Option<&Stream>, Reply> {
        match self.live(key) {
            None => Ok(None),
            Some(entry) => entry
                .stream()
                .map(Some)
                .ok_or_else(super::errors::wrong_type),
        }
    }

    /// Like [`live_stream`](Exec::live_stream), counting a keyspace hit or
    /// miss ([`read`](Exec::read)).
    pub fn read_stream(&mut self, key: &[u8]) -> Result<Option<&Stream>, Reply> {
        match self.read(key) {
            None => Ok(None),
            Some(entry) => entry
                .stream()
                .map(Some)
                .ok_or_else(super::errors::wrong_type),
        }
    }

    /// Whether a log rewrite runs and its new log does not hold `key` yet
    /// (see `kvstore::aof::RewriteScan`): a record about the key then
    /// replays there onto a missing key, which the few commands whose
    /// record would fail or lose data that way log otherwise.
    pub fn rewrite_lags(&self, key: &[u8]) -> bool {
        self.rewrite.is_some_and(|scan| !scan.passed(self.db, key))
    }

    /// Logs the whole state of `key`: `DEL key`, then the records that
    /// recreate it, if it still exists.
    pub fn log_whole(&mut self, key: &[u8]) {
        if self.loading {
            return;
        }
        self.log([&b"DEL"[..], key]);
        if let Some(entry) = self.store.get(key) {
            crate::aof::push_entry(&mut self.effects, key, entry);
        }
    }

    /// `key` (in this database) was created or got data: clients blocked
    /// on it are served after the command (see `kvstore::blocking`).
    pub fn key_ready(&mut self, key: &[u8]) {
        self.blocking.signal(self.db, key);
    }

    /// Like [`key_ready`](Exec::key_ready), for a key of database `db`.
    pub fn key_ready_in(&mut self, db: usize, key: &[u8]) {
        self.blocking.signal(db, key);
    }

    /// Makes the client wait for `wait` instead of answering: the engine
    /// registers it after the command and its session sends nothing until
    /// it is served or times out. Only when [`may_block`](Exec::may_block).
    pub fn block_on(&mut self, wait: crate::blocking::Wait) {
        self.block = Some(wait);
    }

    /// Database `index` when it is not the client's own.
    pub fn other_db(&mut self, index: usize) -> Option<&mut Store> {
        match index.checked_sub(self.db + 1) {
            Some(after) => self.dbs_after.get_mut(after),
            None => self.dbs_before.get_mut(index),
        }
    }

    /// Every database with its index, the client's own included.
    pub fn all_dbs(&self) -> impl Iterator<Item = (usize, &Store)> + '_ {
        let before = self.dbs_before.iter();
        let after = self.dbs_after.iter();
        before
            .chain(core::iter::once(&*self.store))
            .chain(after)
            .enumerate()
    }

    /// The next pseudo-random number (faultline-rng's xorshift64*: fast,
    /// and enough to pick keys; nothing secret depends on it).
    pub fn next_random(&mut self) -> u64 {
        self.random.next_u64()
    }

    /// Whether `key` exists and is live.
    pub fn exists(&mut self, key: &[u8]) -> bool {
        self.live(key).is_some()
    }

    /// Whether an absolute expiry time has already passed, so that setting
    /// it means deleting the key (never while loading).
    pub fn already_expired(&self, at: u64) -> bool {
        !self.loading && at <= self.now
    }

    /// Records one canonical command for the log.
    pub fn log<A: AsRef<[u8]>>(&mut self, args: impl AsRef<[A]>) {
        if !self.loading {
            self.effects.push(args);
        }
    }

    /// Logs `args`, a change to the stream `key` made just now whose
    /// record fails on a missing key (`XSETID`, the consumer-group
    /// commands); while a log rewrite lags the key, the whole stream
    /// instead (as `LSET` does, see [`rewrite_lags`](Exec::rewrite_lags)).
    pub fn log_stream_change<A: AsRef<[u8]>>(&mut self, key: &[u8], args: impl AsRef<[A]>) {
        if self.rewrite_lags(key) {
            self.log_whole(key);
        } else {
            self.log(args);
        }
    }

    /// Records one canonical command whose arguments include stored
    /// values, which the log may write from their own memory.
    pub fn log_args(&mut self, args: &[Piece<'_>]) {
        if !self.loading {
            self.effects.record(args);
        }
    }
}
