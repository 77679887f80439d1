//! Which keys go when memory is past `maxmemory`: the policies
//! (`maxmemory-policy`) and the pool of candidates that approximates "the
//! least recently used key" (or least frequently used, or nearest to
//! expiring) without ordering the whole keyspace.
//!
//! Each round of eviction draws `maxmemory-samples` keys of every
//! database, scores them by the policy (higher: better to evict) and
//! keeps the best few in a [`Pool`]; the best of the pool goes. A larger
//! sample brings the choice closer to the exact one, at more work per
//! eviction. The engine's side (removing, logging, notifying) is in
//! `commands::evict`.

use alloc::vec::Vec;

use crate::store::Candidates;

/// What to do when a write would take memory past `maxmemory`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Policy {
    /// Evict nothing: such writes are refused with `-OOM`.
    #[default]
    NoEviction,
    /// The least recently used keys go first.
    AllKeysLru,
    /// The least recently used keys that have an expiry time go first.
    VolatileLru,
    /// The least frequently used keys go first.
    AllKeysLfu,
    /// The least frequently used keys that have an expiry time go first.
    VolatileLfu,
    /// Keys go at random.
    AllKeysRandom,
    /// Keys that have an expiry time go at random.
    VolatileRandom,
    /// The keys that would expire first go first.
    VolatileTtl,
}

/// What a policy ranks candidates by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rank {
    /// Time since last access.
    Idle,
    /// Access frequency, lowest first.
    Frequency,
    /// Expiry time, nearest first.
    Ttl,
    /// Nothing: any candidate will do.
    Random,
}

/// Every policy with its name, in the order Redis's error lists them.
const NAMES: [(Policy, &str); 8] = [
    (Policy::VolatileLru, "volatile-lru"),
    (Policy::VolatileLfu, "volatile-lfu"),
    (Policy::VolatileRandom, "volatile-random"),
    (Policy::VolatileTtl, "volatile-ttl"),
    (Policy::AllKeysLru, "allkeys-lru"),
    (Policy::AllKeysLfu, "allkeys-lfu"),
    (Policy::AllKeysRandom, "allkeys-random"),
    (Policy::NoEviction, "noeviction"),
];

/// Redis's words when `maxmemory-policy` is given something else.
pub const POLICY_ERROR: &str = "argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction";

impl Policy {
    /// The policy named `name` (any case), as `CONFIG SET` takes it.
    ///
    /// ```
    /// use kvstore::eviction::Policy;
    ///
    /// assert_eq!(Policy::parse(b"AllKeys-LRU"), Some(Policy::AllKeysLru));
    /// assert_eq!(Policy::parse(b"lru"), None);
    /// assert_eq!(Policy::VolatileTtl.as_str(), "volatile-ttl");
    /// ```
    pub fn parse(name: &[u8]) -> Option<Policy> {
        NAMES
            .iter()
            .find(|(_, text)| text.as_bytes().eq_ignore_ascii_case(name))
            .map(|&(policy, _)| policy)
    }

    /// The policy's name, as `CONFIG GET` and `INFO` answer it.
    pub fn as_str(self) -> &'static str {
        NAMES
            .iter()
            .find(|(policy, _)| *policy == self)
            .map_or("noeviction", |&(_, text)| text)
    }

    /// Which keys the policy may evict; `None` for `noeviction`.
    pub fn candidates(self) -> Option<Candidates> {
        match self {
            Policy::NoEviction => None,
            Policy::AllKeysLru | Policy::AllKeysLfu | Policy::AllKeysRandom => {
                Some(Candidates::AllKeys)
            }
            Policy::VolatileLru
            | Policy::VolatileLfu
            | Policy::VolatileRandom
            | Policy::VolatileTtl => Some(Candidates::Volatile),
        }
    }

    /// What the policy ranks candidates by.
    pub fn rank(self) -> Rank {
        match self {
            Policy::AllKeysLru | Policy::VolatileLru => Rank::Idle,
            Policy::AllKeysLfu | Policy::VolatileLfu => Rank::Frequency,
            Policy::VolatileTtl => Rank::Ttl,
            Policy::NoEviction | Policy::AllKeysRandom | Policy::VolatileRandom => Rank::Random,
        }
    }

    /// Whether access frequencies are what the policy ranks by (`OBJECT
    /// FREQ` answers only then).
    pub fn is_lfu(self) -> bool {
        self.rank() == Rank::Frequency
    }
}

/// How many candidates a pool keeps between rounds.
pub const POOL_SIZE: usize = 16;

/// One candidate: its score (higher: evict sooner), database and key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// Higher goes first.
    pub score: u64,
    /// The key's database.
    pub db: usize,
    /// The key.
    pub key: Vec<u8>,
}

/// The best candidates seen so far in one eviction, best last, at most
/// [`POOL_SIZE`] of them.
#[derive(Debug, Default)]
pub struct Pool {
    best: Vec<Candidate>,
}

impl Pool {
    /// An empty pool; `None` if its room cannot be allocated.
    pub fn new() -> Option<Pool> {
        let mut best = Vec::new();
        best.try_reserve_exact(POOL_SIZE).ok()?;
        Some(Pool { best })
    }

    /// Offers key `key` of `db` with `score`: kept if the pool has room or
    /// it beats the worst one there (which then leaves). A key already in
    /// the pool is not added twice; one that cannot be copied is skipped.
    ///
    /// ```
    /// use kvstore::eviction::Pool;
    ///
    /// let mut pool = Pool::new().unwrap();
    /// pool.offer(30, 0, b"warm");
    /// pool.offer(90, 0, b"cold");
    /// pool.offer(90, 0, b"cold");
    /// pool.offer(10, 1, b"hot");
    /// assert_eq!(pool.take_best().map(|c| c.key), Some(b"cold".to_vec()));
    /// assert_eq!(pool.take_best().map(|c| c.key), Some(b"warm".to_vec()));
    /// assert_eq!(pool.take_best().map(|c| (c.db, c.key)), Some((1, b"hot".to_vec())));
    /// assert!(pool.take_best().is_none());
    /// ```
    pub fn offer(&mut self, score: u64, db: usize, key: &[u8]) {
        if self.best.iter().any(|c| c.db == db && c.key == key) {
            return;
        }
        let full = self.best.len() >= POOL_SIZE;
        if full && self.best.first().is_some_and(|worst| worst.score >= score) {
            return;
        }
        let mut copy = Vec::new();
        if copy.try_reserve_exact(key.len()).is_err() {
            return;
        }
        copy.extend_from_slice(key);
        if full {
            self.best.remove(0);
        }
        let at = self.best.partition_point(|c| c.score <= score);
        // Never past the capacity reserved in `new`: no allocation here.
        self.best.insert(
            at,
            Candidate {
                score,
                db,
                key: copy,
            },
        );
    }

    /// The best candidate, taken out of the pool.
    pub fn take_best(&mut self) -> Option<Candidate> {
        self.best.pop()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_policy_reads_back_as_its_name() {
        for (policy, name) in NAMES {
            assert_eq!(Policy::parse(name.as_bytes()), Some(policy));
            assert_eq!(policy.as_str(), name);
            assert!(POLICY_ERROR.contains(name));
        }
        assert_eq!(Policy::default(), Policy::NoEviction);
        assert_eq!(Policy::NoEviction.candidates(), None);
        assert_eq!(Policy::VolatileTtl.candidates(), Some(Candidates::Volatile));
        assert!(Policy::VolatileLfu.is_lfu() && !Policy::AllKeysLru.is_lfu());
    }

    #[test]
    fn a_full_pool_keeps_the_best_sixteen() {
        let mut pool = Pool::new().unwrap();
        for score in 0..40u64 {
            // Scores arrive shuffled.
            let score = (score * 17) % 40;
            pool.offer(score, 0, alloc::format!("k{score}").as_bytes());
        }
        let mut taken = Vec::new();
        while let Some(c) = pool.take_best() {
            taken.push(c.score);
        }
        assert_eq!(taken, (24..40).rev().collect::<Vec<_>>());
    }
}
