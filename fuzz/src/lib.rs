//! Shared pieces of kvstore's fuzz targets (see `README.md`): the steps of
//! an engine session (its commands come from `kvstore-gen`, the generator
//! the differential test shares), a strict RESP2 reply decoder to check
//! what the engine sends, and the committed seeds. The reader that turns
//! the fuzzer's bytes into choices is `kvstore_gen::choices::Input`.

pub mod commands;
pub mod reply;
pub mod seeds;

use std::collections::BTreeMap;

use kvstore::store::{Data, List, Store, Zset};

/// A keyspace as plain data: key to (value, absolute expiry).
pub type Dataset = BTreeMap<Vec<u8>, (Data, Option<u64>)>;

/// Every key of `store`, expired or not, with its value and expiry.
pub fn dataset(store: &Store) -> Dataset {
    store
        .iter()
        .map(|(k, e)| (k.to_vec(), (e.data().clone(), e.expire_at())))
        .collect()
}

/// Every database's dataset, by index.
pub fn datasets(engine: &kvstore::commands::Engine) -> Vec<Dataset> {
    engine.databases().iter().map(dataset).collect()
}

/// The keys of `data` still live at `now_ms` (Redis: a key expires strictly
/// after its expiry time).
pub fn live(data: &Dataset, now_ms: u64) -> Dataset {
    data.iter()
        .filter(|(_, (_, at))| at.is_none_or(|at| now_ms <= at))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// What `store`'s counters should say, recounted from its entries: memory
/// estimate, keys, keys with an expiry.
pub fn recount(store: &Store) -> (usize, usize, usize) {
    let mut used = 0;
    let mut keys = 0;
    let mut volatile = 0;
    for (key, entry) in store.iter() {
        let size = match entry.data() {
            // A list's running size, recounted from its elements.
            Data::List(list) => list.iter().map(|e| List::element_cost(e.len())).sum(),
            // A set's running size, recounted from its members.
            Data::Set(set) => {
                assert!(set.slots_consistent(), "a set's positions name its members");
                set.iter().map(|m| set.member_cost(m.len())).sum()
            }
            // A sorted set's running size, recounted from its members.
            Data::Zset(zset) => zset.iter().map(|(m, _)| Zset::member_cost(m.len())).sum(),
            data => data.size(),
        };
        used += Store::cost(key.len(), size);
        keys += 1;
        volatile += usize::from(entry.expire_at().is_some());
    }
    (used, keys, volatile)
}
