//! How keys are ordered in the keyspace: by a hash of the key, then by the
//! key bytes.
//!
//! Ordering by hash spreads keys that share a prefix (`key:000001`,
//! `key:000002`, ...) evenly over the `u64` range, so a `SCAN` cursor can be
//! a plain hash value: "continue with the keys whose hash is at least this".
//! Keys that collide on the hash are still distinct, ordered by their bytes.
//!
//! A key is kept as one byte string, its *hashed form*: the hash, 8 bytes
//! big-endian, then the key. Plain byte order of hashed forms is exactly
//! (hash, bytes) order, because the hash comes first and big-endian bytes
//! sort as the number does. So the maps are `BTreeMap<StoredKey, V>`
//! searched with a `&[u8]` (`StoredKey: Borrow<[u8]>`): every comparison in
//! a search is one slice comparison, with no call through a vtable. A
//! [`Probe`] builds the hashed form of a key being searched for, on the
//! stack for all but long keys.

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, TryReserveError};
use alloc::vec::Vec;
use core::borrow::Borrow;
use core::ops::Bound;

/// Cursors name buckets of 2^11 hash values, keeping them below 2^53.
const CURSOR_SHIFT: u32 = 11;

/// Bytes of the hash at the start of a hashed form.
const HASH_LEN: usize = 8;

/// Longest hashed form a [`Probe`] keeps on the stack: keys up to 56
/// bytes are searched for without a heap allocation.
const INLINE_LEN: usize = 64;

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

/// The hash at the start of a hashed form.
fn hash_of(hashed: &[u8]) -> u64 {
    hashed
        .first_chunk::<HASH_LEN>()
        .map_or(0, |h| u64::from_be_bytes(*h))
}

/// The key after the hash in a hashed form.
fn key_of(hashed: &[u8]) -> &[u8] {
    hashed.get(HASH_LEN..).unwrap_or_default()
}

/// A key as stored in a map: its hashed form, so that the hash is computed
/// once and the map compares plain bytes.
///
/// Its order (derived, over the hashed form) is the order of `[u8]` on the
/// same bytes, as `Borrow<[u8]>` requires.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct StoredKey {
    hashed: Box<[u8]>,
}

impl StoredKey {
    /// Copies `key` for storage.
    pub fn new(key: &[u8]) -> Self {
        let mut hashed = Vec::with_capacity(HASH_LEN + key.len());
        hashed.extend_from_slice(&hash(key).to_be_bytes());
        hashed.extend_from_slice(key);
        StoredKey {
            hashed: hashed.into_boxed_slice(),
        }
    }

    /// Copies `key` for storage, or fails, allocating nothing, if memory
    /// for it cannot be had (for callers whose keys a client can make
    /// large and that report running out of memory).
    pub fn try_new(key: &[u8]) -> Result<Self, TryReserveError> {
        let mut hashed = Vec::new();
        hashed.try_reserve_exact(HASH_LEN.saturating_add(key.len()))?;
        hashed.extend_from_slice(&hash(key).to_be_bytes());
        hashed.extend_from_slice(key);
        Ok(StoredKey {
            hashed: hashed.into_boxed_slice(),
        })
    }

    /// The key's [`hash`].
    pub fn hash(&self) -> u64 {
        hash_of(&self.hashed)
    }

    /// The key itself, without the hash.
    pub fn bytes(&self) -> &[u8] {
        key_of(&self.hashed)
    }
}

impl Borrow<[u8]> for StoredKey {
    /// The hashed form, which maps compare: what a [`Probe`] searches with.
    fn borrow(&self) -> &[u8] {
        &self.hashed
    }
}

/// The hashed form of a key to search for (`map.get(probe.as_bytes())`),
/// or of a position to range from ([`Probe::at`]).
pub struct Probe {
    hashed: Hashed,
}

/// Where a probe keeps its hashed form.
enum Hashed {
    /// On the stack: the first `len` bytes of `bytes`.
    Inline { bytes: [u8; INLINE_LEN], len: usize },
    /// On the heap, for keys too long for [`INLINE_LEN`].
    Heap(Vec<u8>),
}

impl Probe {
    /// Searches for `key`.
    pub fn new(key: &[u8]) -> Self {
        let hash = hash(key).to_be_bytes();
        let len = HASH_LEN + key.len();
        let hashed = if len <= INLINE_LEN {
            let mut bytes = [0; INLINE_LEN];
            bytes[..HASH_LEN].copy_from_slice(&hash);
            bytes[HASH_LEN..len].copy_from_slice(key);
            Hashed::Inline { bytes, len }
        } else {
            let mut bytes = Vec::with_capacity(len);
            bytes.extend_from_slice(&hash);
            bytes.extend_from_slice(key);
            Hashed::Heap(bytes)
        };
        Probe { hashed }
    }

    /// The smallest position with hash `hash` (the hash alone, an empty
    /// key): everything at or after it has a hash of at least `hash`.
    pub fn at(hash: u64) -> Self {
        let mut bytes = [0; INLINE_LEN];
        bytes[..HASH_LEN].copy_from_slice(&hash.to_be_bytes());
        Probe {
            hashed: Hashed::Inline {
                bytes,
                len: HASH_LEN,
            },
        }
    }

    /// The hashed form, to pass to a map's `get`, `remove` or `range`.
    pub fn as_bytes(&self) -> &[u8] {
        match &self.hashed {
            Hashed::Inline { bytes, len } => bytes.get(..*len).unwrap_or_default(),
            Hashed::Heap(bytes) => bytes,
        }
    }
}

/// One step of a cursor scan over a map of [`StoredKey`]s: entries from
/// position `cursor` on, at least `count` of them (a few more if several
/// share a hash bucket), and the cursor to continue from (0 when the scan
/// is complete).
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
    let range = (Bound::Included(start.as_bytes()), Bound::Unbounded);
    let mut last_bucket = None;
    for (key, value) in map.range::<[u8], _>(range) {
        let bucket = key.hash() >> CURSOR_SHIFT;
        if found.len() >= count.max(1) && last_bucket != Some(bucket) {
            return (bucket + 1, found);
        }
        found.push((key.bytes(), value));
        last_bucket = Some(bucket);
    }
    (0, found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn stored_keys_sort_by_hash_then_bytes() {
        let mut keys: Vec<StoredKey> = (0..200u32)
            .map(|i| StoredKey::new(alloc::format!("key:{i}").as_bytes()))
            .collect();
        keys.sort();
        for pair in keys.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            assert!((a.hash(), a.bytes()) < (b.hash(), b.bytes()));
        }
    }

    #[test]
    fn a_stored_key_gives_back_its_key_and_hash() {
        let key = StoredKey::new(b"user:42");
        assert_eq!(key.bytes(), b"user:42");
        assert_eq!(key.hash(), hash(b"user:42"));
        assert_eq!(StoredKey::try_new(b"user:42"), Ok(key));
        assert_eq!(StoredKey::new(b"").bytes(), b"");
    }

    #[test]
    fn probes_find_short_long_and_empty_keys() {
        let long = vec![b'x'; 57];
        let longer = vec![b'y'; 1000];
        let keys: [&[u8]; 5] = [b"", b"a", &[b'z'; 56], &long, &longer];
        let mut map = BTreeMap::new();
        for (i, key) in keys.iter().enumerate() {
            map.insert(StoredKey::new(key), i);
        }
        for (i, key) in keys.iter().enumerate() {
            assert_eq!(map.get(Probe::new(key).as_bytes()), Some(&i));
        }
        assert_eq!(map.get(Probe::new(&[b'x'; 56]).as_bytes()), None);
        assert_eq!(map.remove(Probe::new(&long).as_bytes()), Some(3));
        assert_eq!(map.get(Probe::new(&long).as_bytes()), None);
    }

    #[test]
    fn a_position_comes_before_every_key_with_that_hash_or_more() {
        let mut map = BTreeMap::new();
        for i in 0..500u32 {
            map.insert(StoredKey::new(&i.to_le_bytes()), ());
        }
        let middle = map.keys().nth(250).map(StoredKey::hash).unwrap();
        let at = Probe::at(middle);
        let after = map.range::<[u8], _>((Bound::Included(at.as_bytes()), Bound::Unbounded));
        let before = map.range::<[u8], _>((Bound::Unbounded, Bound::Excluded(at.as_bytes())));
        assert_eq!(after.clone().count(), 250);
        assert!(after.map(|(k, _)| k.hash()).all(|h| h >= middle));
        assert!(before.map(|(k, _)| k.hash()).all(|h| h < middle));
    }

    #[test]
    fn a_scan_visits_every_key_once_in_steps() {
        let mut map = BTreeMap::new();
        for i in 0..1000u32 {
            map.insert(StoredKey::new(&i.to_le_bytes()), i);
        }
        let (mut cursor, mut seen) = (0, Vec::new());
        loop {
            let (next, found) = scan(&map, cursor, 10);
            assert!(found.len() >= 10 || next == 0);
            seen.extend(found.into_iter().map(|(_, &v)| v));
            if next == 0 {
                break;
            }
            cursor = next;
        }
        seen.sort();
        assert_eq!(seen, (0..1000).collect::<Vec<_>>());
    }
}
