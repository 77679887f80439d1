//! The keyspace: binary keys to values (strings, hashes, lists or sets), each with an
//! optional absolute expiry time, plus a running estimate of the memory it
//! uses.
//!
//! The store knows nothing of commands or of the current time: it answers
//! "is this key expired at `now`?" but never expires anything on its own.
//! Deciding when to drop an expired key, and logging that, is the
//! [`Engine`](crate::commands::Engine)'s job.

mod hash;
mod key;
mod lfu;
mod list;
mod sample;
mod set;
mod stream;
mod zset;

use alloc::collections::BTreeMap;
use alloc::rc::Rc;
use alloc::vec::Vec;
use core::ops::Bound;

pub use hash::{CompactLimits, FieldValue, Hash, FIELD_OVERHEAD};
use key::{KeyView, Probe, StoredKey};
pub use lfu::{Frequency, LfuTuning};
pub use list::{resolve_index, resolve_range, End, List, ELEMENT_OVERHEAD};
pub use sample::Candidates;
pub use set::{Member, Set, INT_MEMBER_SIZE, MEMBER_OVERHEAD};
pub use stream::{Consumer, Group, Pending, Stream, StreamId, Trim, GROUP_OVERHEAD};
pub use zset::{Zset, ZSET_MEMBER_OVERHEAD};

/// Estimated bytes a key costs beyond its key and value bytes: map node
/// share, the key and value headers and allocator overhead. An estimate is
/// all `maxmemory` needs; it only has to grow with the data.
pub const ENTRY_OVERHEAD: usize = 96;

/// A value's bytes, shared by reference count: the append-only log keeps
/// a large value it has to write by reference instead of copying it, and
/// the DMA scheduler writes it to the disk from this very memory. Changes
/// in place copy it first if the log still holds it ([`Rc::make_mut`]),
/// so what the log writes is what was set, whatever happens to the key
/// before the flush. (The server is single-threaded: no `Arc` needed.)
pub type Value = Rc<Vec<u8>>;

/// What a key holds: one of Redis's value types.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Data {
    /// A byte string (`SET`, `GET`, ...).
    String(Value),
    /// A map of fields to values (`HSET`, `HGET`, ...); never empty.
    Hash(Hash),
    /// A sequence of elements (`LPUSH`, `LRANGE`, ...); never empty.
    List(List),
    /// Distinct members (`SADD`, `SINTER`, ...); never empty.
    Set(Set),
    /// Members ordered by score (`ZADD`, `ZRANGE`, ...); never empty.
    Zset(Zset),
    /// Entries by ID with consumer groups (`XADD`, `XREADGROUP`, ...); may
    /// be empty.
    Stream(alloc::boxed::Box<Stream>),
}

impl Data {
    /// The type's name, as `TYPE` answers it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Data::String(_) => "string",
            Data::Hash(_) => "hash",
            Data::List(_) => "list",
            Data::Set(_) => "set",
            Data::Zset(_) => "zset",
            Data::Stream(_) => "stream",
        }
    }

    /// How the value is kept, in the vocabulary of `OBJECT ENCODING`:
    /// strings are plain byte vectors (Redis's `raw`), hashes compact
    /// (`listpack`) or ordered maps (`hashtable`, see [`Hash`]), lists ring
    /// buffers (reported as Redis 7.0's general `quicklist` form).
    pub fn encoding(&self) -> &'static str {
        match self {
            Data::String(_) => "raw",
            Data::Hash(hash) => hash.encoding(),
            Data::List(_) => "quicklist",
            Data::Set(set) => set.encoding(),
            Data::Zset(zset) => zset.encoding(),
            Data::Stream(_) => "stream",
        }
    }

    /// Estimated bytes of the value: a string's length, a hash's
    /// [`size`](Hash::size), a list's [`size`](List::size). What
    /// [`Store::cost`] takes as the value size.
    pub fn size(&self) -> usize {
        match self {
            Data::String(value) => value.len(),
            Data::Hash(hash) => hash.size(),
            Data::List(list) => list.size(),
            Data::Set(set) => set.size(),
            Data::Zset(zset) => zset.size(),
            Data::Stream(stream) => stream.size(),
        }
    }
}

/// Bytes become a string value.
impl From<Vec<u8>> for Data {
    fn from(bytes: Vec<u8>) -> Self {
        Data::String(Rc::new(bytes))
    }
}

/// A shared value stays shared as a string value.
impl From<Value> for Data {
    fn from(value: Value) -> Self {
        Data::String(value)
    }
}

/// A hash becomes a hash value.
impl From<Hash> for Data {
    fn from(hash: Hash) -> Self {
        Data::Hash(hash)
    }
}

/// A list becomes a list value.
impl From<List> for Data {
    fn from(list: List) -> Self {
        Data::List(list)
    }
}

/// A set becomes a set value.
impl From<Set> for Data {
    fn from(set: Set) -> Self {
        Data::Set(set)
    }
}

/// A sorted set becomes a sorted-set value.
impl From<Zset> for Data {
    fn from(zset: Zset) -> Self {
        Data::Zset(zset)
    }
}

/// A stream becomes a stream value.
impl From<Stream> for Data {
    fn from(stream: Stream) -> Self {
        Data::Stream(alloc::boxed::Box::new(stream))
    }
}

/// A collection a key can hold, as [`Store`]'s `update_*` methods see it.
trait Collection: Into<Data> {
    /// The collection in `data`, if it holds this type.
    fn of(data: &mut Data) -> Option<&mut Self>;
    /// Its memory estimate.
    fn cost(&self) -> usize;
    /// Whether the key goes with it now (an emptied collection does,
    /// as in Redis, except a stream).
    fn takes_the_key(&self) -> bool;
}

/// [`Collection`] for the types whose key goes when they are emptied.
macro_rules! emptied_takes_the_key {
    ($($type:ident),*) => {$(
        impl Collection for $type {
            fn of(data: &mut Data) -> Option<&mut Self> {
                match data {
                    Data::$type(value) => Some(value),
                    _ => None,
                }
            }
            fn cost(&self) -> usize {
                self.size()
            }
            fn takes_the_key(&self) -> bool {
                self.is_empty()
            }
        }
    )*};
}

emptied_takes_the_key!(Hash, List, Set, Zset);

impl Collection for Stream {
    fn of(data: &mut Data) -> Option<&mut Self> {
        match data {
            Data::Stream(stream) => Some(stream),
            _ => None,
        }
    }
    fn cost(&self) -> usize {
        self.size()
    }
    fn takes_the_key(&self) -> bool {
        false
    }
}

/// A stored value and when it expires.
#[derive(Clone, Debug)]
pub struct Entry {
    data: Data,
    expire_at: Option<u64>,
    /// Changes with every change to the entry, unique across every store
    /// (`WATCH` compares it).
    version: u64,
    /// When a command last read or wrote it, in the store's clock
    /// (milliseconds): `OBJECT IDLETIME`.
    accessed: u64,
    /// How often commands use it, for the LFU policies: `OBJECT FREQ`.
    frequency: Frequency,
}

/// Two entries are equal when their values and expiries are: the version
/// says when, not what.
impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.data == other.data && self.expire_at == other.expire_at
    }
}

impl Eq for Entry {}

/// Where entry versions come from: one count for every store, so that
/// keys of swapped databases (`SWAPDB`) cannot look unchanged.
static VERSIONS: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(1);

fn next_version() -> u64 {
    VERSIONS.fetch_add(1, core::sync::atomic::Ordering::Relaxed)
}

/// The version the next change to any entry will get: an entry whose
/// [`Entry::version`] is at least this value changed after the call. The
/// log rewrite takes it when it starts, to know which keys changed while
/// it ran.
pub fn next_version_mark() -> u64 {
    VERSIONS.load(core::sync::atomic::Ordering::Relaxed)
}

impl Entry {
    /// The bytes of a string value; empty for any other type (commands
    /// check the type first, see [`Entry::data`]).
    pub fn value(&self) -> &[u8] {
        match &self.data {
            Data::String(value) => value,
            _ => &[],
        }
    }

    /// A string value itself, to share with the log; `None` for another
    /// type.
    pub fn shared(&self) -> Option<&Value> {
        match &self.data {
            Data::String(value) => Some(value),
            _ => None,
        }
    }

    /// A hash value; `None` for another type.
    pub fn hash(&self) -> Option<&Hash> {
        match &self.data {
            Data::Hash(hash) => Some(hash),
            _ => None,
        }
    }

    /// A list value; `None` for another type.
    pub fn list(&self) -> Option<&List> {
        match &self.data {
            Data::List(list) => Some(list),
            _ => None,
        }
    }

    /// A set value; `None` for another type.
    pub fn set(&self) -> Option<&Set> {
        match &self.data {
            Data::Set(set) => Some(set),
            _ => None,
        }
    }

    /// A sorted-set value; `None` for another type.
    pub fn zset(&self) -> Option<&Zset> {
        match &self.data {
            Data::Zset(zset) => Some(zset),
            _ => None,
        }
    }

    /// A stream value; `None` for another type.
    pub fn stream(&self) -> Option<&Stream> {
        match &self.data {
            Data::Stream(stream) => Some(stream),
            _ => None,
        }
    }

    /// The value, whatever its type.
    pub fn data(&self) -> &Data {
        &self.data
    }

    /// The value, taken out of the entry (to store it under another key
    /// without copying it).
    pub fn into_data(self) -> Data {
        self.data
    }

    /// The absolute expiry time in milliseconds, if the key has one.
    pub fn expire_at(&self) -> Option<u64> {
        self.expire_at
    }

    /// Changes whenever the entry does (set, appended to, expiry changed):
    /// what `WATCH` compares.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Whether the key is expired at `now_ms` (Redis: strictly after its
    /// expiry time).
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expire_at.is_some_and(|at| now_ms > at)
    }

    /// Milliseconds since a command last read or wrote the entry, at
    /// `now_ms` (see [`Store::get_touched`]).
    pub fn idle_ms(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.accessed)
    }

    /// The access frequency counter at `now_ms` (see [`Frequency`]).
    pub fn frequency(&self, now_ms: u64, tuning: LfuTuning) -> u8 {
        self.frequency.decayed(now_ms, tuning)
    }
}

/// The keyspace of one database.
#[derive(Debug, Default)]
pub struct Store {
    map: BTreeMap<StoredKey, Entry>,
    used: usize,
    volatile: usize,
    /// Hash position where the next active-expiry sweep resumes.
    sweep: u64,
    /// The time of the command running now, in milliseconds: what an
    /// entry written or read records as its last access.
    clock: u64,
    /// The hashes of the keys with an expiry, to pick one at random.
    volatile_index: sample::VolatileIndex,
    /// How access frequencies count (`lfu-*` settings).
    lfu: LfuTuning,
    /// Draws for the frequency counters' probabilistic steps.
    lfu_random: lfu::Draws,
}

impl Store {
    /// An empty keyspace.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the time of the command about to run (see
    /// [`Entry::idle_ms`]).
    pub fn set_clock(&mut self, now_ms: u64) {
        self.clock = now_ms;
    }

    /// Sets how access frequencies count from now on (`lfu-log-factor`,
    /// `lfu-decay-time`; see [`Entry::frequency`]).
    pub fn set_lfu_tuning(&mut self, tuning: LfuTuning) {
        self.lfu = tuning;
    }

    /// Like [`get`](Store::get), recording the access for
    /// [`Entry::idle_ms`]: what commands that use a key call.
    pub fn get_touched(&mut self, key: &[u8]) -> Option<&Entry> {
        let entry = self.map.get_mut(&Probe::new(key) as &dyn KeyView)?;
        entry.accessed = self.clock;
        entry
            .frequency
            .touch(self.clock, self.lfu, self.lfu_random.draw());
        Some(entry)
    }

    /// Sets when `key` was last used (`idle_ms` before the store's clock)
    /// or its access frequency counter: `RESTORE`'s `IDLETIME` and
    /// `FREQ`. Returns whether the key exists.
    pub fn set_access(&mut self, key: &[u8], idle_ms: Option<u64>, counter: Option<u8>) -> bool {
        let Some(entry) = self.map.get_mut(&Probe::new(key) as &dyn KeyView) else {
            return false;
        };
        if let Some(idle) = idle_ms {
            entry.accessed = self.clock.saturating_sub(idle);
        }
        if let Some(counter) = counter {
            entry.frequency = Frequency::with_counter(counter, self.clock);
        }
        true
    }

    /// Number of keys, including expired ones not yet removed (as Redis's
    /// `DBSIZE`).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether there are no keys at all.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Number of keys with an expiry time.
    pub fn volatile_len(&self) -> usize {
        self.volatile
    }

    /// Estimated memory used by the data, in bytes.
    pub fn used_memory(&self) -> usize {
        self.used
    }

    /// Estimated memory a key of `key_len` bytes holding `value_len` bytes
    /// costs (for a hash, `value_len` is its [`size`](Hash::size)).
    pub fn cost(key_len: usize, value_len: usize) -> usize {
        key_len + value_len + ENTRY_OVERHEAD
    }

    /// How much [`used_memory`](Store::used_memory) would grow if `key` were
    /// set to a value of `value_len` bytes (0 if it would shrink).
    pub fn growth_if_set(&self, key: &[u8], value_len: usize) -> usize {
        let old = self
            .get(key)
            .map_or(0, |e| Self::cost(key.len(), e.data.size()));
        Self::cost(key.len(), value_len).saturating_sub(old)
    }

    /// The entry for `key`, expired or not.
    pub fn get(&self, key: &[u8]) -> Option<&Entry> {
        self.map.get(&Probe::new(key) as &dyn KeyView)
    }

    /// Sets `key` to `value` (bytes, a [`Value`] shared with the log, or
    /// any [`Data`]) with the given expiry, replacing any old entry,
    /// whatever its type.
    pub fn set(&mut self, key: &[u8], value: impl Into<Data>, expire_at: Option<u64>) {
        let data = value.into();
        let version = next_version();
        self.put(
            key,
            Entry {
                data,
                expire_at,
                version,
                accessed: self.clock,
                frequency: Frequency::new(self.clock),
            },
        );
    }

    /// Sets `key` to `value`, keeping its expiry time if it has one.
    pub fn set_keep_ttl(&mut self, key: &[u8], value: impl Into<Data>) {
        let expire_at = self.get(key).and_then(|e| e.expire_at);
        self.set(key, value, expire_at);
    }

    /// Appends `suffix` to the string value of `key` (creating it empty,
    /// without expiry, if missing); returns the new length, or `None`
    /// (changing nothing) if the key holds another type. A value the log
    /// still holds is copied first, so the log writes it as it was.
    pub fn append(&mut self, key: &[u8], suffix: &[u8]) -> Option<usize> {
        match self.map.get_mut(&Probe::new(key) as &dyn KeyView) {
            Some(entry) => {
                let Data::String(value) = &mut entry.data else {
                    return None;
                };
                entry.version = next_version();
                let value = Rc::make_mut(value);
                value.extend_from_slice(suffix);
                self.used += suffix.len();
                Some(value.len())
            }
            None => {
                self.set(key, suffix.to_vec(), None);
                Some(suffix.len())
            }
        }
    }

    /// Changes the string at `key` in place with `change` (an empty one
    /// without expiry if the key is missing), keeping its expiry. Returns
    /// what `change` returned, or `None` (changing nothing) if the key
    /// holds another type. A value the log still holds is copied first.
    pub fn update_string<R>(
        &mut self,
        key: &[u8],
        change: impl FnOnce(&mut Vec<u8>) -> R,
    ) -> Option<R> {
        // One lookup when the key exists (the usual case for a write).
        let probe = Probe::new(key);
        let entry = match self.map.get_mut(&probe as &dyn KeyView) {
            Some(entry) => entry,
            None => {
                self.set(key, Vec::new(), None);
                self.map.get_mut(&probe as &dyn KeyView)?
            }
        };
        let Data::String(value) = &mut entry.data else {
            return None;
        };
        let value = Rc::make_mut(value);
        let before = value.len();
        let result = change(value);
        let after = value.len();
        entry.version = next_version();
        self.used = self.used - before + after;
        Some(result)
    }

    /// Changes the hash at `key` with `change`: an empty one without expiry
    /// if the key is missing, and the key is removed if the hash ends up
    /// empty (Redis never keeps an empty hash). Keeps the memory estimate
    /// and the entry's version up to date. Returns what `change` returned,
    /// or `None` (changing nothing) if the key holds another type.
    ///
    /// ```
    /// use kvstore::store::Store;
    ///
    /// let mut store = Store::new();
    /// let added = store.update_hash(b"user", |h| h.insert(b"name".to_vec(), b"ada".to_vec(), Default::default()));
    /// assert_eq!(added, Some(true));
    /// assert_eq!(store.get(b"user").unwrap().data().type_name(), "hash");
    /// store.update_hash(b"user", |h| h.remove(b"name"));
    /// assert!(store.get(b"user").is_none(), "the last field took the key with it");
    /// assert_eq!(store.used_memory(), 0);
    /// ```
    pub fn update_hash<R>(&mut self, key: &[u8], change: impl FnOnce(&mut Hash) -> R) -> Option<R> {
        self.update_collection(key, Some(Hash::new), change)
    }

    /// Changes the list at `key` with `change`, as
    /// [`update_hash`](Store::update_hash) does a hash: an empty one
    /// without expiry if the key is missing, the key removed if the list
    /// ends up empty, the memory estimate and the version kept up to date.
    /// Returns what `change` returned, or `None` (changing nothing) if the
    /// key holds another type.
    ///
    /// ```
    /// use kvstore::store::{End, Store};
    ///
    /// let mut store = Store::new();
    /// store.update_list(b"queue", |l| l.push(End::Right, b"job".to_vec()));
    /// assert_eq!(store.get(b"queue").unwrap().data().type_name(), "list");
    /// let job = store.update_list(b"queue", |l| l.pop(End::Left)).flatten();
    /// assert_eq!(job, Some(b"job".to_vec()));
    /// assert!(store.get(b"queue").is_none(), "the last element took the key with it");
    /// assert_eq!(store.used_memory(), 0);
    /// ```
    pub fn update_list<R>(&mut self, key: &[u8], change: impl FnOnce(&mut List) -> R) -> Option<R> {
        self.update_collection(key, Some(List::new), change)
    }

    /// Changes the set at `key` with `change`, as
    /// [`update_hash`](Store::update_hash) does a hash: an empty one
    /// without expiry if the key is missing, the key removed if the set
    /// ends up empty, the memory estimate and the version kept up to date.
    /// Returns what `change` returned, or `None` (changing nothing) if the
    /// key holds another type.
    ///
    /// ```
    /// use kvstore::store::Store;
    ///
    /// let mut store = Store::new();
    /// store.update_set(b"tags", |s| s.insert(b"rust", 512));
    /// assert_eq!(store.get(b"tags").unwrap().data().type_name(), "set");
    /// assert_eq!(store.update_set(b"tags", |s| s.remove(b"rust")), Some(true));
    /// assert!(store.get(b"tags").is_none(), "the last member took the key with it");
    /// assert_eq!(store.used_memory(), 0);
    /// ```
    pub fn update_set<R>(&mut self, key: &[u8], change: impl FnOnce(&mut Set) -> R) -> Option<R> {
        self.update_collection(key, Some(Set::new), change)
    }

    /// Changes the sorted set at `key` with `change`, as
    /// [`update_hash`](Store::update_hash) does a hash: an empty one
    /// without expiry if the key is missing (`fresh` says in which form,
    /// see [`Zset::for_size`]), the key removed if the set ends up empty,
    /// the memory estimate and the version kept up to date. Returns what
    /// `change` returned, or `None` (changing nothing) if the key holds
    /// another type.
    ///
    /// ```
    /// use kvstore::store::{Store, Zset};
    ///
    /// let mut store = Store::new();
    /// let added = store.update_zset(b"board", Zset::new, |z| z.insert(b"ada".to_vec(), 9.5, Default::default()));
    /// assert_eq!(added, Some(Ok(true)));
    /// assert_eq!(store.get(b"board").unwrap().data().type_name(), "zset");
    /// store.update_zset(b"board", Zset::new, |z| z.remove(b"ada"));
    /// assert!(store.get(b"board").is_none(), "the last member took the key with it");
    /// assert_eq!(store.used_memory(), 0);
    /// ```
    pub fn update_zset<R>(
        &mut self,
        key: &[u8],
        fresh: impl FnOnce() -> Zset,
        change: impl FnOnce(&mut Zset) -> R,
    ) -> Option<R> {
        self.update_collection(key, Some(fresh), change)
    }

    /// Changes the stream at `key` with `change`, keeping the memory
    /// estimate and the entry's version up to date: a new empty stream
    /// without expiry if the key is missing and `create` says so. Unlike
    /// the other collections an emptied stream stays. Returns what
    /// `change` returned, or `None` (changing nothing) if the key holds
    /// another type or is missing and not to be created.
    ///
    /// ```
    /// use kvstore::store::{Store, StreamId};
    ///
    /// let mut store = Store::new();
    /// let id = StreamId::new(1, 0);
    /// store.update_stream(b"s", true, |s| s.add(id, vec![b"f".to_vec(), b"v".to_vec()], 100, 0));
    /// assert_eq!(store.get(b"s").unwrap().data().type_name(), "stream");
    /// store.update_stream(b"s", false, |s| s.remove(id));
    /// assert_eq!(store.get(b"s").unwrap().stream().unwrap().len(), 0, "an empty stream stays");
    /// assert_eq!(store.update_stream(b"t", false, |s| s.len()), None);
    /// ```
    pub fn update_stream<R>(
        &mut self,
        key: &[u8],
        create: bool,
        change: impl FnOnce(&mut Stream) -> R,
    ) -> Option<R> {
        self.update_collection(key, create.then_some(Stream::new), change)
    }

    /// What every `update_*` method does: finds the collection at `key`
    /// (making it with `fresh`, when given, if the key is missing), runs
    /// `change` on it, keeps the memory estimate and the entry's version up
    /// to date, and removes the key if the collection ended up empty and
    /// such a collection does not stay. `None` if the key holds another
    /// type, or is missing with no `fresh`.
    fn update_collection<T: Collection, R>(
        &mut self,
        key: &[u8],
        fresh: Option<impl FnOnce() -> T>,
        change: impl FnOnce(&mut T) -> R,
    ) -> Option<R> {
        // One lookup when the key exists (the usual case for a write).
        let probe = Probe::new(key);
        let entry = match self.map.get_mut(&probe as &dyn KeyView) {
            Some(entry) => entry,
            None => {
                self.set(key, fresh?(), None);
                self.map.get_mut(&probe as &dyn KeyView)?
            }
        };
        let value = T::of(&mut entry.data)?;
        let before = value.cost();
        let result = change(value);
        let (after, gone) = (value.cost(), value.takes_the_key());
        entry.version = next_version();
        self.used = self.used - before + after;
        if gone {
            self.remove(key);
        }
        Some(result)
    }

    /// Removes `key`, returning its entry if it existed.
    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let entry = self.map.remove(&Probe::new(key) as &dyn KeyView)?;
        self.forget(key, &entry);
        Some(entry)
    }

    /// Sets or clears the expiry of `key`; returns whether the key exists.
    pub fn set_expire(&mut self, key: &[u8], expire_at: Option<u64>) -> bool {
        let Some(entry) = self.map.get_mut(&Probe::new(key) as &dyn KeyView) else {
            return false;
        };
        match (entry.expire_at.is_some(), expire_at.is_some()) {
            (false, true) => self.volatile += 1,
            (true, false) => self.volatile -= 1,
            _ => {}
        }
        match (entry.expire_at.is_some(), expire_at.is_some()) {
            (false, true) => self.volatile_index.add(key::hash(key)),
            (true, false) => self.volatile_index.remove(key::hash(key)),
            _ => {}
        }
        entry.expire_at = expire_at;
        entry.version = next_version();
        true
    }

    /// Removes every key.
    pub fn clear(&mut self) {
        self.map.clear();
        self.used = 0;
        self.volatile = 0;
        self.volatile_index.clear();
    }

    /// Every key and entry (expired ones included), in keyspace order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &Entry)> + '_ {
        self.map.iter().map(|(k, e)| (k.bytes(), e))
    }

    /// One step of a cursor scan: keys from position `cursor` on, at least
    /// `count` of them (a few more if several share a hash bucket), and the
    /// cursor to continue from (0 when the scan is complete). Expired keys
    /// are included; callers filter.
    ///
    /// A scan from cursor 0 until the returned cursor is 0 again returns
    /// every key that existed for the whole scan at least once, however keys
    /// are added or removed in between: the cursor names a bucket of the key
    /// hash, buckets are visited in increasing order, and a step never stops
    /// inside a bucket, so no key can be skipped.
    ///
    /// Cursors stay below 2^53 so that clients that hold them in a double
    /// (JavaScript) do not round them.
    pub fn scan(&self, cursor: u64, count: usize) -> (u64, Vec<&[u8]>) {
        let (next, found) = key::scan(&self.map, cursor, count);
        (next, found.into_iter().map(|(key, _)| key).collect())
    }

    /// Whether a [`scan`](Store::scan) to be resumed at `cursor` has gone
    /// past `key`, so that it returned the key if the key was there
    /// (whichever store the key is in: positions depend on the key alone).
    /// The log rewrite asks this to know which keys its new log already
    /// holds. A cursor of 0 is a scan that has not begun; whether one is
    /// complete is the caller's to know.
    ///
    /// ```
    /// use kvstore::store::Store;
    ///
    /// let mut store = Store::new();
    /// let keys: Vec<Vec<u8>> = (0..100).map(|i| format!("k{i}").into_bytes()).collect();
    /// for key in &keys {
    ///     store.set(key, b"v".to_vec(), None);
    /// }
    /// let (mut cursor, mut returned) = (0, Vec::new());
    /// loop {
    ///     let (next, found) = store.scan(cursor, 10);
    ///     returned.extend(found.iter().map(|k| k.to_vec()));
    ///     if next == 0 {
    ///         break;
    ///     }
    ///     for key in &keys {
    ///         assert_eq!(Store::scan_passed(key, next), returned.contains(key));
    ///     }
    ///     cursor = next;
    /// }
    /// ```
    pub fn scan_passed(key: &[u8], cursor: u64) -> bool {
        key::scan_passed(key, cursor)
    }

    /// Examines up to `budget` keys, continuing round-robin from where the
    /// last call stopped, and removes those expired at `now_ms`; returns the
    /// removed keys. A cheap background complement to expiring keys when
    /// they are touched.
    pub fn sweep_expired(&mut self, now_ms: u64, budget: usize) -> Vec<Vec<u8>> {
        let mut expired = Vec::new();
        if self.volatile == 0 || budget == 0 {
            return expired;
        }
        let start = Probe::at(self.sweep);
        let after = (Bound::Included(&start as &dyn KeyView), Bound::Unbounded);
        let before = (Bound::Unbounded, Bound::Excluded(&start as &dyn KeyView));
        let wrapped = self.map.range::<dyn KeyView, _>(before);
        let mut next = None;
        let keys = self.map.range::<dyn KeyView, _>(after).chain(wrapped);
        for (examined, (key, entry)) in keys.enumerate() {
            if examined == budget {
                next = Some(key.hash());
                break;
            }
            if entry.is_expired(now_ms) {
                expired.push(key.bytes().to_vec());
            }
        }
        // Examined everything: start the next sweep from the beginning.
        self.sweep = next.unwrap_or(0);
        for key in &expired {
            self.remove(key);
        }
        expired
    }

    fn put(&mut self, key: &[u8], entry: Entry) {
        self.used += Self::cost(key.len(), entry.data.size());
        if entry.expire_at.is_some() {
            self.volatile += 1;
            self.volatile_index.add(key::hash(key));
        }
        match self.map.get_mut(&Probe::new(key) as &dyn KeyView) {
            Some(slot) => {
                // A new value keeps the key's access frequency, as in Redis.
                let frequency = slot.frequency;
                let old = core::mem::replace(slot, entry);
                slot.frequency = frequency;
                self.forget(key, &old);
            }
            None => {
                self.map.insert(StoredKey::new(key), entry);
            }
        }
    }

    fn forget(&mut self, key: &[u8], entry: &Entry) {
        self.used -= Self::cost(key.len(), entry.data.size());
        if entry.expire_at.is_some() {
            self.volatile -= 1;
            self.volatile_index.remove(key::hash(key));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::collections::BTreeSet;
    use alloc::format;

    #[test]
    fn set_get_remove_and_memory() {
        let mut store = Store::new();
        assert_eq!(store.used_memory(), 0);
        store.set(b"k", b"hello".to_vec(), None);
        assert_eq!(store.get(b"k").unwrap().value(), b"hello");
        assert_eq!(store.used_memory(), Store::cost(1, 5));
        store.set(b"k", b"hi".to_vec(), Some(10));
        assert_eq!(store.used_memory(), Store::cost(1, 2));
        assert_eq!(store.volatile_len(), 1);
        assert_eq!(store.append(b"k", b"!!"), Some(4));
        assert_eq!(
            store.get(b"k").unwrap().expire_at(),
            Some(10),
            "append keeps the TTL"
        );
        assert_eq!(store.used_memory(), Store::cost(1, 4));
        assert!(store.remove(b"k").is_some());
        assert!(store.remove(b"k").is_none());
        assert_eq!(
            (store.used_memory(), store.volatile_len(), store.len()),
            (0, 0, 0)
        );
    }

    #[test]
    fn append_leaves_a_shared_value_as_it_was() {
        let mut store = Store::new();
        store.set(b"k", b"logged".to_vec(), None);
        let held = store.get(b"k").unwrap().shared().unwrap().clone();
        assert_eq!(store.append(b"k", b"+more"), Some(11));
        assert_eq!(held.as_slice(), b"logged", "the holder's copy is unchanged");
        assert_eq!(store.get(b"k").unwrap().value(), b"logged+more");
        drop(held);
        let before = store.get(b"k").unwrap().value().as_ptr();
        store.append(b"k", b"");
        assert_eq!(
            store.get(b"k").unwrap().value().as_ptr(),
            before,
            "an unshared value is changed in place"
        );
    }

    #[test]
    fn a_hash_counts_its_fields_and_goes_when_empty() {
        // Kept as a map from the first field, whose costs are estimates.
        const MAP: CompactLimits = CompactLimits {
            entries: 0,
            value: 0,
        };
        let mut store = Store::new();
        store.update_hash(b"h", |h| {
            h.insert(b"f1".to_vec(), b"one".to_vec(), MAP);
            h.insert(b"f2".to_vec(), b"two!".to_vec(), MAP);
        });
        let fields = Hash::field_cost(2, 3) + Hash::field_cost(2, 4);
        assert_eq!(store.used_memory(), Store::cost(1, fields));
        assert_eq!(store.growth_if_set(b"h", 0), 0, "a string would be smaller");
        assert_eq!(store.append(b"h", b"x"), None, "not a string");
        store.set_expire(b"h", Some(50));
        let version = store.get(b"h").unwrap().version();
        store.update_hash(b"h", |h| h.remove(b"f1"));
        let entry = store.get(b"h").unwrap();
        assert_ne!(entry.version(), version, "WATCH sees the change");
        assert_eq!(entry.expire_at(), Some(50), "a change keeps the TTL");
        assert_eq!(store.used_memory(), Store::cost(1, Hash::field_cost(2, 4)));
        store.update_hash(b"h", |h| h.remove(b"f2"));
        assert!(store.get(b"h").is_none());
        assert_eq!((store.used_memory(), store.volatile_len()), (0, 0));
        store.set(b"s", b"v".to_vec(), None);
        assert_eq!(store.update_hash(b"s", |h| h.len()), None, "not a hash");
        assert_eq!(store.get(b"s").unwrap().value(), b"v");
    }

    #[test]
    fn expiry_is_strictly_after() {
        let mut store = Store::new();
        store.set(b"k", b"v".to_vec(), Some(100));
        let entry = store.get(b"k").unwrap();
        assert!(!entry.is_expired(100));
        assert!(entry.is_expired(101));
        store.set_keep_ttl(b"k", b"w".to_vec());
        assert_eq!(store.get(b"k").unwrap().expire_at(), Some(100));
        assert!(store.set_expire(b"k", None));
        assert_eq!(store.volatile_len(), 0);
        assert!(!store.set_expire(b"missing", Some(1)));
    }

    #[test]
    fn growth_estimate() {
        let mut store = Store::new();
        assert_eq!(store.growth_if_set(b"k", 10), Store::cost(1, 10));
        store.set(b"k", vec![0; 10], None);
        assert_eq!(store.growth_if_set(b"k", 15), 5);
        assert_eq!(store.growth_if_set(b"k", 3), 0);
    }

    #[test]
    fn scan_visits_every_key_once_when_nothing_changes() {
        let mut store = Store::new();
        for i in 0..1000 {
            store.set(format!("key:{i:06}").as_bytes(), vec![], None);
        }
        let (mut cursor, mut seen, mut calls) = (0, Vec::new(), 0);
        loop {
            let (next, keys) = store.scan(cursor, 10);
            seen.extend(keys.into_iter().map(|k| k.to_vec()));
            calls += 1;
            if next == 0 {
                break;
            }
            assert!(next > cursor, "cursors only move forward");
            assert!(next < 1 << 53, "cursors fit in a double");
            cursor = next;
        }
        assert_eq!(seen.len(), 1000);
        assert_eq!(seen.iter().collect::<BTreeSet<_>>().len(), 1000);
        assert!((100..=101).contains(&calls), "COUNT is honoured: {calls}");
    }

    #[test]
    fn sweep_removes_expired_keys_within_budget() {
        let mut store = Store::new();
        for i in 0..100u64 {
            let expire = if i % 2 == 0 { Some(i) } else { None };
            store.set(format!("k{i}").as_bytes(), vec![], expire);
        }
        let mut removed = 0;
        for _ in 0..10 {
            let batch = store.sweep_expired(1000, 10);
            assert!(batch.len() <= 10);
            removed += batch.len();
        }
        assert_eq!(removed, 50, "ten sweeps of ten cover all hundred keys");
        assert_eq!(store.len(), 50);
        assert_eq!(store.volatile_len(), 0);
        assert!(store.sweep_expired(1000, 10).is_empty());
    }
}
