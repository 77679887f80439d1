//! How keys are ordered in the keyspace: by a hash of the key, then by the
//! key bytes.
//!
//! Ordering by hash spreads keys that share a prefix (`key:000001`,
//! `key:000002`, ...) evenly over the `u64` range, so a `SCAN` cursor can be
//! a plain hash value: "continue with the keys whose hash is at least this".
//! Keys that collide on the hash are still distinct, ordered by their bytes.
//!
//! The map stores [`StoredKey`]s but is searched with a borrowed [`Probe`]
//! (no allocation per lookup): both present themselves as `dyn KeyView`,
//! which is what the map compares.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::borrow::Borrow;
use core::cmp::Ordering;
use core::ops::Bound;

/// Cursors name buckets of 2^11 hash values, keeping them below 2^53.
const CURSOR_SHIFT: u32 = 11;

/// A 64-bit hash of a key: FNV-1a, then a SplitMix64 finalizer so that
/// nearby keys land far apart.
pub fn hash(key: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// What the keyspace map compares: a hash and the key bytes.
pub trait KeyView {
    /// The key's [`hash`].
    fn hash(&self) -> u64;
    /// The key itself.
    fn bytes(&self) -> &[u8];
}

impl PartialEq for dyn KeyView + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.hash() == other.hash() && self.bytes() == other.bytes()
    }
}

impl Eq for dyn KeyView + '_ {}

impl PartialOrd for dyn KeyView + '_ {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for dyn KeyView + '_ {
    fn cmp(&self, other: &Self) -> Ordering {
        // The bytes only when the hashes tie: a lookup compares many keys.
        self.hash()
            .cmp(&other.hash())
            .then_with(|| self.bytes().cmp(other.bytes()))
    }
}

/// A key as stored in the map, with its hash computed once.
#[derive(Clone, Debug)]
pub struct StoredKey {
    hash: u64,
    bytes: Box<[u8]>,
}

impl StoredKey {
    /// Copies `key` for storage.
    pub fn new(key: &[u8]) -> Self {
        StoredKey {
            hash: hash(key),
            bytes: key.into(),
        }
    }

    /// Keeps `key` for storage, in the memory it came in (hash fields
    /// arrive as a request's arguments, which are not needed afterwards).
    pub fn from_vec(key: Vec<u8>) -> Self {
        StoredKey {
            hash: hash(&key),
            bytes: key.into_boxed_slice(),
        }
    }
}

impl KeyView for StoredKey {
    fn hash(&self) -> u64 {
        self.hash
    }
    fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

// Must agree with the `dyn KeyView` order, as `Borrow` requires.
impl PartialEq for StoredKey {
    fn eq(&self, other: &Self) -> bool {
        (self as &dyn KeyView) == (other as &dyn KeyView)
    }
}

impl Eq for StoredKey {}

impl PartialOrd for StoredKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for StoredKey {
    fn cmp(&self, other: &Self) -> Ordering {
        (self as &dyn KeyView).cmp(other as &dyn KeyView)
    }
}

impl<'a> Borrow<dyn KeyView + 'a> for StoredKey {
    fn borrow(&self) -> &(dyn KeyView + 'a) {
        self
    }
}

/// A borrowed key to search for; also marks positions (`Probe::at`) for
/// range scans.
pub struct Probe<'k> {
    hash: u64,
    bytes: &'k [u8],
}

impl<'k> Probe<'k> {
    /// Searches for `key`.
    pub fn new(key: &'k [u8]) -> Self {
        Probe {
            hash: hash(key),
            bytes: key,
        }
    }

    /// The smallest position with hash `hash`: everything at or after it
    /// has a hash of at least `hash`.
    pub fn at(hash: u64) -> Probe<'static> {
        Probe { hash, bytes: &[] }
    }
}

impl KeyView for Probe<'_> {
    fn hash(&self) -> u64 {
        self.hash
    }
    fn bytes(&self) -> &[u8] {
        self.bytes
    }
}

/// Whether a scan to be resumed at `cursor` has already visited `key`'s
/// bucket (see [`Store::scan_passed`](super::Store::scan_passed)).
pub fn scan_passed(key: &[u8], cursor: u64) -> bool {
    // Cursor c > 0 resumes at bucket c - 1 (see `scan`).
    cursor != 0 && hash(key) >> CURSOR_SHIFT < cursor - 1
}

/// One step of a cursor scan over a map ordered by [`KeyView`]: entries
/// from position `cursor` on, at least `count` of them (a few more if
/// several share a hash bucket), and the cursor to continue from (0 when
/// the scan is complete).
///
/// A scan from cursor 0 until the returned cursor is 0 again returns every
/// entry that existed for the whole scan at least once, however entries are
/// added or removed in between: the cursor names a bucket of the key hash,
/// buckets are visited in increasing order, and a step never stops inside a
/// bucket, so no entry can be skipped. Cursors stay below 2^53 so that
/// clients that hold them in a double (JavaScript) do not round them.
///
/// The keyspace (`SCAN`) and hash fields (`HSCAN`) share it.
pub fn scan<V>(map: &BTreeMap<StoredKey, V>, cursor: u64, count: usize) -> (u64, Vec<(&[u8], &V)>) {
    let mut found = Vec::new();
    // Cursor c > 0 resumes at bucket c - 1; past the last bucket, done.
    let first_bucket = cursor.saturating_sub(1);
    if first_bucket > u64::MAX >> CURSOR_SHIFT {
        return (0, found);
    }
    let start = Probe::at(first_bucket << CURSOR_SHIFT);
    let range = (Bound::Included(&start as &dyn KeyView), Bound::Unbounded);
    let mut last_bucket = None;
    for (key, value) in map.range::<dyn KeyView, _>(range) {
        let bucket = key.hash() >> CURSOR_SHIFT;
        if found.len() >= count.max(1) && last_bucket != Some(bucket) {
            return (bucket + 1, found);
        }
        found.push((key.bytes(), value));
        last_bucket = Some(bucket);
    }
    (0, found)
}
