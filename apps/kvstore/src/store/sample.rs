//! Picking keys at random, for eviction's samples: from all keys of a
//! database, or from those with an expiry time only.
//!
//! The keyspace is ordered by key hash, which spreads keys evenly over the
//! 64-bit range, so "the first key at or after a random hash" is a key
//! drawn at random in O(log n). Not quite uniformly: a key is drawn as
//! often as the gap of hashes before it is wide, and a few gaps are narrow.
//! Stepping a further random 0 to [`SPREAD`] - 1 keys on evens that out
//! (each key's odds become those of several gaps together). For the keys with an expiry, the
//! store keeps the multiset of their hashes ([`VolatileIndex`], 12 bytes
//! or so a key, no key copies); a random hash from it leads back to its
//! key through the main map.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::ops::Bound;

use super::key::{KeyView, Probe};
use super::{Entry, Store};

/// How many keys past a random hash a draw may step (see above).
pub const SPREAD: usize = 8;

/// The steps a draw takes past its hash, from bits of `random` its hash
/// does not depend on much.
fn steps(random: u64) -> usize {
    (random.rotate_left(23) % SPREAD as u64) as usize
}

/// The hashes of the keys that have an expiry time, with how many such
/// keys share each hash (collisions are rare but possible).
#[derive(Debug, Default)]
pub struct VolatileIndex {
    hashes: BTreeMap<u64, u32>,
}

impl VolatileIndex {
    /// A key with hash `hash` got an expiry time.
    pub(super) fn add(&mut self, hash: u64) {
        *self.hashes.entry(hash).or_default() += 1;
    }

    /// A key with hash `hash` lost its expiry time (or went).
    pub(super) fn remove(&mut self, hash: u64) {
        if let Some(count) = self.hashes.get_mut(&hash) {
            *count -= 1;
            if *count == 0 {
                self.hashes.remove(&hash);
            }
        }
    }

    /// Forgets every key.
    pub(super) fn clear(&mut self) {
        self.hashes.clear();
    }

    /// The hash `steps` after the first at or after `from`, wrapping
    /// around.
    fn at_or_after(&self, from: u64, steps: usize) -> Option<u64> {
        let count = self.hashes.len();
        if count == 0 {
            return None;
        }
        let mut after = self.hashes.range(from..).chain(self.hashes.iter());
        after.nth(steps % count).map(|(&hash, _)| hash)
    }
}

/// Whether eviction draws from every key or from the keys with an expiry
/// (the `volatile-*` policies).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Candidates {
    /// Any key.
    AllKeys,
    /// Keys with an expiry time only.
    Volatile,
}

impl Store {
    /// How many keys `candidates` covers.
    pub fn candidate_count(&self, candidates: Candidates) -> usize {
        match candidates {
            Candidates::AllKeys => self.len(),
            Candidates::Volatile => self.volatile_len(),
        }
    }

    /// A key of `candidates` picked from the random number `random`, and
    /// its entry; `None` if there is none. O(log n).
    ///
    /// ```
    /// use kvstore::store::{Candidates, Store};
    ///
    /// let mut store = Store::new();
    /// store.set(b"kept", b"v".to_vec(), None);
    /// assert!(store.random_key(Candidates::Volatile, 42).is_none());
    /// store.set(b"session", b"v".to_vec(), Some(1_000));
    /// for random in [0, 42, u64::MAX] {
    ///     let (key, _) = store.random_key(Candidates::Volatile, random).unwrap();
    ///     assert_eq!(key, b"session");
    ///     assert!(store.random_key(Candidates::AllKeys, random).is_some());
    /// }
    /// ```
    pub fn random_key(&self, candidates: Candidates, random: u64) -> Option<(&[u8], &Entry)> {
        match candidates {
            Candidates::AllKeys => {
                let count = self.map.len();
                if count == 0 {
                    return None;
                }
                let start = Probe::at(random);
                let from = (Bound::Included(&start as &dyn KeyView), Bound::Unbounded);
                let after = self.map.range::<dyn KeyView, _>(from);
                let mut keys = after.chain(self.map.iter());
                let (key, entry) = keys.nth(steps(random) % count)?;
                Some((key.bytes(), entry))
            }
            Candidates::Volatile => {
                let hash = self.volatile_index.at_or_after(random, steps(random))?;
                self.with_expiry_at_hash(hash).next()
            }
        }
    }

    /// The keys of `candidates` eviction compares in one round: every one
    /// of them if there are at most `count`, else `count` drawn with
    /// `random` (possibly repeating). Allocation failure gives fewer.
    pub fn sample(
        &self,
        candidates: Candidates,
        count: usize,
        mut random: impl FnMut() -> u64,
    ) -> Vec<(&[u8], &Entry)> {
        let mut picked = Vec::new();
        let total = self.candidate_count(candidates);
        if picked.try_reserve_exact(count.min(total)).is_err() {
            return picked;
        }
        if total > count {
            picked.extend((0..count).filter_map(|_| self.random_key(candidates, random())));
            return picked;
        }
        match candidates {
            Candidates::AllKeys => picked.extend(self.iter()),
            Candidates::Volatile => {
                for &hash in self.volatile_index.hashes.keys() {
                    for found in self.with_expiry_at_hash(hash) {
                        if picked.len() < picked.capacity() {
                            picked.push(found);
                        }
                    }
                }
            }
        }
        picked
    }

    /// The keys with hash `hash` that have an expiry time.
    fn with_expiry_at_hash(&self, hash: u64) -> impl Iterator<Item = (&[u8], &Entry)> + '_ {
        let start = Probe::at(hash);
        let from = (Bound::Included(&start as &dyn KeyView), Bound::Unbounded);
        self.map
            .range::<dyn KeyView, _>(from)
            .take_while(move |(key, _)| key.hash() == hash)
            .filter(|(_, entry)| entry.expire_at.is_some())
            .map(|(key, entry)| (key.bytes(), entry))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::lfu::Draws;
    use alloc::collections::BTreeMap;
    use alloc::format;

    #[test]
    fn random_keys_cover_the_keyspace_about_evenly() {
        let mut store = Store::new();
        for i in 0..100 {
            store.set(format!("k{i}").as_bytes(), b"v".to_vec(), None);
        }
        let mut rng = Draws::default();
        let mut seen: BTreeMap<Vec<u8>, usize> = BTreeMap::new();
        for _ in 0..10_000 {
            let (key, _) = store.random_key(Candidates::AllKeys, rng.draw()).unwrap();
            *seen.entry(key.to_vec()).or_default() += 1;
        }
        assert_eq!(seen.len(), 100, "every key drawn at least once");
        assert!(
            seen.values().all(|&n| (20..300).contains(&n)),
            "none far from 100: {seen:?}"
        );
    }

    #[test]
    fn the_volatile_index_follows_expiry_changes() {
        let mut store = Store::new();
        for i in 0..50 {
            let expiry = (i % 5 == 0).then_some(1_000);
            store.set(format!("k{i}").as_bytes(), b"v".to_vec(), expiry);
        }
        store.set_expire(b"k1", Some(5));
        store.set_expire(b"k0", None);
        store.set(b"k5", b"overwritten".to_vec(), None);
        store.remove(b"k10");
        let mut rng = Draws::default();
        let mut seen = BTreeMap::new();
        for _ in 0..2_000 {
            let (key, entry) = store.random_key(Candidates::Volatile, rng.draw()).unwrap();
            assert!(entry.expire_at().is_some());
            seen.insert(key.to_vec(), ());
        }
        let expected: Vec<_> = store
            .iter()
            .filter(|(_, e)| e.expire_at().is_some())
            .map(|(k, _)| k.to_vec())
            .collect();
        assert_eq!(expected.len(), store.volatile_len());
        assert_eq!(
            seen.keys().cloned().collect::<Vec<_>>().len(),
            expected.len()
        );
        let small = store.sample(Candidates::Volatile, 64, || rng.draw());
        assert_eq!(small.len(), expected.len(), "few enough: all of them");
        store.clear();
        assert!(store.random_key(Candidates::Volatile, 1).is_none());
        assert!(store.sample(Candidates::AllKeys, 5, || 1).is_empty());
    }
}
