//! Eviction, the engine's side: before a command runs while memory is past
//! `maxmemory` (or the command's growth estimate would take it past), keys
//! go by `maxmemory-policy` until the command fits or no key may go (the
//! command is then refused with `-OOM`, as under `noeviction`).
//!
//! Each evicted key is logged as `DEL`, so replaying the log ends with the
//! keys the live store kept; it is counted in `INFO`'s `evicted_keys` and
//! published as an `evicted` keyspace event (class `e`). Clients blocked
//! on the key are not woken: a key that went has nothing to serve. Which
//! key goes is chosen by `crate::eviction`.

use super::{table, Effects, Engine};
use crate::eviction::{Policy, Pool, Rank};
use crate::store::{Candidates, Entry};

impl Engine {
    /// Evicts what `spec` run with `args` in database `db` needs: room for
    /// its growth estimate (none for a command that adds no data) under
    /// `maxmemory`. Returns the `DEL`s to log, before the command's own
    /// records.
    pub(super) fn evict_for(
        &mut self,
        spec: &table::Spec,
        args: &[alloc::vec::Vec<u8>],
        db: usize,
        now: u64,
    ) -> Effects {
        if self.config.maxmemory == 0 || self.config.maxmemory_policy == Policy::NoEviction {
            return Effects::default();
        }
        if self.pause.active(now) {
            // Nothing is evicted while clients are paused, as in Redis.
            return Effects::default();
        }
        let growth = spec
            .growth
            .map_or(0, |growth| growth(&self.dbs[db], &self.config, args));
        self.make_room(growth as u64, now)
    }

    /// Evicts keys until used memory plus `growth` is within `maxmemory`,
    /// or no key may go. A growth past `maxmemory` by itself cannot fit
    /// whatever goes: then nothing is evicted for it.
    pub(super) fn make_room(&mut self, growth: u64, now: u64) -> Effects {
        let mut effects = Effects::default();
        let limit = self.config.maxmemory;
        let policy = self.config.maxmemory_policy;
        let Some(candidates) = policy.candidates() else {
            return effects;
        };
        if limit == 0 || growth > limit {
            return effects;
        }
        let over = |engine: &Engine| (engine.used_memory() as u64).saturating_add(growth) > limit;
        if !over(self) {
            return effects;
        }
        let Some(mut pool) = Pool::new() else {
            return effects;
        };
        while over(self) {
            let victim = match policy.rank() {
                Rank::Random => self.random_victim(candidates),
                rank => self.best_victim(rank, candidates, &mut pool, now),
            };
            let Some((db, key)) = victim else {
                break;
            };
            self.evict(db, &key, &mut effects);
        }
        effects
    }

    /// A key of `candidates` at random, from the first database with one
    /// (starting at a random database, so that none is emptied first).
    fn random_victim(&mut self, candidates: Candidates) -> Option<(usize, alloc::vec::Vec<u8>)> {
        let count = self.dbs.len();
        let start = (self.random.next_u64() % count as u64) as usize;
        let db = (0..count)
            .map(|i| (start + i) % count)
            .find(|&db| self.dbs[db].candidate_count(candidates) > 0)?;
        let (key, _) = self.dbs[db].random_key(candidates, self.random.next_u64())?;
        copy_key(key).map(|key| (db, key))
    }

    /// One round of sampling: `maxmemory-samples` keys of `candidates` of
    /// every database are offered to `pool` by `rank`, and the best key
    /// of the pool that still exists is the victim.
    fn best_victim(
        &mut self,
        rank: Rank,
        candidates: Candidates,
        pool: &mut Pool,
        now: u64,
    ) -> Option<(usize, alloc::vec::Vec<u8>)> {
        let samples = self.config.maxmemory_samples.max(1);
        let tuning = self.config.lfu;
        let random = &mut self.random;
        for (db, store) in self.dbs.iter().enumerate() {
            for (key, entry) in store.sample(candidates, samples, || random.next_u64()) {
                pool.offer(score(rank, entry, now, tuning), db, key);
            }
        }
        while let Some(best) = pool.take_best() {
            let still = self.dbs.get(best.db).and_then(|store| store.get(&best.key));
            let eligible = match candidates {
                Candidates::AllKeys => still.is_some(),
                Candidates::Volatile => still.is_some_and(|e| e.expire_at().is_some()),
            };
            if eligible {
                return Some((best.db, best.key));
            }
        }
        None
    }

    /// Removes `key` of database `db` as an eviction: logged as `DEL`,
    /// counted, published.
    fn evict(&mut self, db: usize, key: &[u8], effects: &mut Effects) {
        if self.dbs[db].remove(key).is_none() {
            return;
        }
        self.stats.evicted_keys += 1;
        let mut del = Effects::default();
        del.push([&b"DEL"[..], key]);
        effects.append(self.in_db(db, del));
        let flags = self.config.notify_keyspace_events;
        crate::notify::publish(
            &mut self.pubsub,
            flags,
            crate::notify::EVICTED,
            "evicted",
            key,
            db,
        );
        self.tracking.invalidate(key, None);
    }
}

/// How strongly `entry` should go under `rank`: higher goes first.
fn score(rank: Rank, entry: &Entry, now: u64, tuning: crate::store::LfuTuning) -> u64 {
    match rank {
        Rank::Idle => entry.idle_ms(now),
        Rank::Frequency => u64::from(u8::MAX - entry.frequency(now, tuning)),
        Rank::Ttl => u64::MAX - entry.expire_at().unwrap_or(u64::MAX),
        Rank::Random => 0,
    }
}

/// A copy of `key`; `None` if memory for it cannot be had.
fn copy_key(key: &[u8]) -> Option<alloc::vec::Vec<u8>> {
    let mut copy = alloc::vec::Vec::new();
    copy.try_reserve_exact(key.len()).ok()?;
    copy.extend_from_slice(key);
    Some(copy)
}
