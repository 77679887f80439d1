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
use core::borrow::Borrow;
use core::cmp::Ordering;

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
