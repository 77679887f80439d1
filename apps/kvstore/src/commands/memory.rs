//! `MEMORY STATS|DOCTOR|MALLOC-STATS|PURGE`: what kvstore's memory
//! accounting knows, as Redis 7.0 lays it out. The figures are kvstore's
//! estimates, the ones `maxmemory` is held to (see `Store::used_memory`):
//! the data, with [`ENTRY_OVERHEAD`] per key, and what Lua holds for
//! scripts and functions. Clients' buffers, the log's buffer and the
//! allocator's own bookkeeping are not counted there, so they read 0, and
//! the allocator and RSS fields Redis takes from jemalloc are left out.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

use super::exec::Exec;
use crate::resp::Reply;
use crate::store::ENTRY_OVERHEAD;

/// The figures `MEMORY STATS` and `MEMORY DOCTOR` read.
struct Figures {
    peak: u64,
    total: u64,
    lua: u64,
    functions: u64,
    /// (database, keys, keys with an expiry) for each database with keys.
    dbs: Vec<(usize, u64, u64)>,
    overhead: u64,
    keys: u64,
}

fn figures(x: &Exec<'_>) -> Figures {
    let data: u64 = x.all_dbs().map(|(_, s)| s.used_memory() as u64).sum();
    let (lua, functions) = (x.stats.used_memory_lua, x.stats.used_memory_functions);
    let total = data + lua + functions;
    let dbs: Vec<(usize, u64, u64)> = x
        .all_dbs()
        .filter(|(_, s)| !s.is_empty())
        .map(|(db, s)| (db, s.len() as u64, s.volatile_len() as u64))
        .collect();
    let keys = dbs.iter().map(|&(_, keys, _)| keys).sum::<u64>();
    Figures {
        peak: x.stats.used_memory_peak.max(total),
        total,
        lua,
        functions,
        overhead: keys * ENTRY_OVERHEAD as u64,
        keys,
        dbs,
    }
}

/// A share in percent, as a double reply.
fn percent(part: u64, whole: u64) -> Reply {
    let share = if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    };
    Reply::Double(alloc::format!("{share}").into_bytes())
}

/// `MEMORY STATS`: the figures by name, in Redis's order.
pub(crate) fn stats(x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    let f = figures(x);
    let int = |n: u64| Reply::Integer(n as i64);
    let mut reply = Vec::new();
    let mut push = |name: &str, value: Reply| {
        reply.push(Reply::bulk(name.as_bytes()));
        reply.push(value);
    };
    push("peak.allocated", int(f.peak));
    push("total.allocated", int(f.total));
    // kvstore's estimate counts data only: nothing is there at start.
    push("startup.allocated", int(0));
    push("replication.backlog", int(0));
    push("clients.slaves", int(0));
    push("clients.normal", int(0));
    push("cluster.links", int(0));
    push("aof.buffer", int(0));
    push("lua.caches", int(f.lua));
    push("functions.caches", int(f.functions));
    for &(db, keys, _volatile) in &f.dbs {
        let overheads = Reply::Map(alloc::vec![
            Reply::bulk("overhead.hashtable.main"),
            int(keys * ENTRY_OVERHEAD as u64),
            // Expiry times live in the entries: no table of their own.
            Reply::bulk("overhead.hashtable.expires"),
            int(0),
        ]);
        push(&alloc::format!("db.{db}"), overheads);
    }
    push("overhead.total", int(f.overhead));
    push("keys.count", int(f.keys));
    push(
        "keys.bytes-per-key",
        int(f.total.checked_div(f.keys).unwrap_or(0)),
    );
    let dataset = f.total.saturating_sub(f.overhead);
    push("dataset.bytes", int(dataset));
    push("dataset.percentage", percent(dataset, f.total));
    push("peak.percentage", percent(f.total, f.peak));
    Reply::Map(reply)
}

/// `MEMORY DOCTOR`: what the figures suggest, in words.
pub(crate) fn doctor(x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    let f = figures(x);
    let max = x.config.maxmemory;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "kvstore holds {} keys in {} bytes (its estimate, which maxmemory is held to); \
         the peak was {} bytes.",
        f.keys, f.total, f.peak
    );
    let mut advice = 0;
    if max > 0 && f.total * 10 >= max * 9 {
        advice += 1;
        let _ = writeln!(
            out,
            "- Memory is at {}% of maxmemory ({max} bytes): writes will evict keys or be \
             refused, as maxmemory-policy ({}) says.",
            f.total * 100 / max,
            x.config.maxmemory_policy.as_str()
        );
    }
    if f.peak > f.total.saturating_mul(3) / 2 && f.peak > 1 << 20 {
        advice += 1;
        let _ = writeln!(
            out,
            "- The peak is more than half again what is held now: much was deleted since, \
             and the freed memory is back in the allocator's free lists."
        );
    }
    if f.keys > 0 && f.overhead * 2 > f.total {
        advice += 1;
        let _ = writeln!(
            out,
            "- Most of the memory is per-key overhead ({ENTRY_OVERHEAD} bytes a key): many \
             small keys could be fields of fewer hashes."
        );
    }
    if advice == 0 {
        out.push_str("Nothing to report.\n");
    }
    Reply::Verbatim(out.into_bytes())
}

/// `MEMORY MALLOC-STATS`: the allocator keeps no statistics of its own to
/// show (Redis answers the same for allocators other than jemalloc).
pub(crate) fn malloc_stats(_x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    Reply::Verbatim(b"Stats not supported for the current allocator".to_vec())
}

/// `MEMORY PURGE`: nothing to do; kvstore's allocator keeps no dirty pages
/// to hand back (freed memory returns to its free lists at once).
pub(crate) fn purge(_x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    Reply::ok()
}
