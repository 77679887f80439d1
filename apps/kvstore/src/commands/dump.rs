//! `DUMP` and `RESTORE`: a value in Redis's serialization format (see
//! `kvstore::rdb`), so that values move between kvstore and Redis.
//!
//! `RESTORE` is logged as the value it made, like `COPY`: `DEL` of the
//! key (for a collection), then the commands that rebuild it and its
//! expiry (see `aof::push_entry`); `IDLETIME` and `FREQ` are not logged
//! (the log keeps values, not access times). A `RESTORE ... REPLACE`
//! whose expiry has already passed is logged as the `DEL` it amounts to.

use alloc::vec::Vec;

use super::errors;
use super::exec::Exec;
use crate::notify;
use crate::rdb::{self, Limits, LoadError};
use crate::resp::Reply;

/// `DUMP key`: the value's payload, or nil.
pub(crate) fn dump(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let Some(entry) = x.live(&args[1]) else {
        return Reply::Bulk(None);
    };
    Reply::bulk(rdb::dump(entry.data()))
}

/// `RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME seconds]
/// [FREQ frequency]`, checked in Redis 7.0's order: options, an existing
/// key (`BUSYKEY`), the TTL, the payload's version and checksum, then
/// the value.
pub(crate) fn restore(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let (mut replace, mut absttl) = (false, false);
    let (mut idle, mut freq): (Option<i64>, Option<i64>) = (None, None);
    let mut i = 4;
    while i < args.len() {
        let option = &args[i];
        let has_value = i + 1 < args.len();
        if option.eq_ignore_ascii_case(b"REPLACE") {
            replace = true;
        } else if option.eq_ignore_ascii_case(b"ABSTTL") {
            absttl = true;
        } else if option.eq_ignore_ascii_case(b"IDLETIME") && has_value && freq.is_none() {
            let Some(n) = crate::num::parse_i64(&args[i + 1]) else {
                return errors::not_integer();
            };
            if n < 0 {
                return Reply::error("ERR Invalid IDLETIME value, must be >= 0");
            }
            idle = Some(n);
            i += 1;
        } else if option.eq_ignore_ascii_case(b"FREQ") && has_value && idle.is_none() {
            let Some(n) = crate::num::parse_i64(&args[i + 1]) else {
                return errors::not_integer();
            };
            if !(0..=255).contains(&n) {
                return Reply::error("ERR Invalid FREQ value, must be >= 0 and <= 255");
            }
            freq = Some(n);
            i += 1;
        } else {
            return errors::syntax();
        }
        i += 1;
    }
    let key = &args[1];
    if !replace && x.exists(key) {
        return Reply::error("BUSYKEY Target key name already exists.");
    }
    let Some(ttl) = crate::num::parse_i64(&args[2]) else {
        return errors::not_integer();
    };
    if ttl < 0 {
        return Reply::error("ERR Invalid TTL value, must be >= 0");
    }
    let limits = Limits {
        hash: x.config.hash_compact,
        zset: x.config.zset_compact,
        set_max_ints: x.config.set_max_intset_entries,
        stream_node: rdb::stream::NodeLimits {
            entries: x.config.stream_node_max_entries,
            bytes: x.config.stream_node_max_bytes,
        },
    };
    let data = match rdb::load(&args[3], limits) {
        Ok(data) => data,
        Err(LoadError::VersionOrChecksum) => {
            return Reply::error("ERR DUMP payload version or checksum are wrong")
        }
        Err(LoadError::Bad) => return Reply::error("ERR Bad data format"),
    };
    let deleted = replace && x.exists(key) && x.store.remove(key).is_some();
    // A relative TTL is added to the clock as Redis adds it, in 64-bit
    // signed arithmetic: a sum that wraps negative has already passed.
    let expire_at = match (ttl, absttl) {
        (0, _) => None,
        (at, true) => Some(at),
        (after, false) => Some(after.wrapping_add(x.now as i64)),
    };
    let past = |at: i64| at < 0 || x.already_expired(at as u64);
    if expire_at.is_some_and(past) {
        if deleted {
            x.log([&b"DEL"[..], key]);
            x.notify(notify::GENERIC, "del", key);
        }
        return Reply::ok();
    }
    x.store.set(key, data, expire_at.map(|at| at as u64));
    let lfu = x.config.maxmemory_policy.is_lfu();
    match (lfu, freq, idle) {
        (true, Some(freq), _) => x.store.set_access(key, None, Some(freq as u8)),
        (false, _, Some(idle)) => {
            let idle_ms = (idle as u64).saturating_mul(1000);
            x.store.set_access(key, Some(idle_ms), None)
        }
        _ => true,
    };
    let entry = x.store.get(key).expect("just set").clone();
    super::keys::log_set(x, key, &entry);
    x.notify(notify::GENERIC, "restore", key);
    x.key_ready(key);
    Reply::ok()
}
