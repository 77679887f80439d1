//! `OBJECT` (how a key's value is kept) and `MEMORY USAGE` (what it
//! costs).

use alloc::vec::Vec;

use super::errors;
use super::exec::Exec;
use crate::resp::Reply;
use crate::store::Entry;

/// The live entry at `args[2]` without recording an access (`OBJECT`
/// must not change the idle time it reports), or the nil reply.
fn untouched<'x>(x: &'x mut Exec<'_>, key: &[u8]) -> Result<&'x Entry, Reply> {
    if x.store.get(key).is_some_and(|e| e.is_expired(x.now)) {
        // Expire it the usual way (removed and logged).
        x.live(key);
    }
    x.store.get(key).ok_or(Reply::Bulk(None))
}

/// `OBJECT ENCODING key`: see [`Data::encoding`](crate::store::Data::encoding).
pub(crate) fn encoding(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match untouched(x, &args[2]) {
        Ok(entry) => Reply::bulk(entry.data().encoding().as_bytes()),
        Err(nil) => nil,
    }
}

/// `OBJECT REFCOUNT key`: how many holders share the value. A string may
/// be shared with the log until the flush that writes it; other values
/// have one holder.
pub(crate) fn refcount(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match untouched(x, &args[2]) {
        Ok(entry) => Reply::Integer(entry.shared().map_or(1, alloc::rc::Rc::strong_count) as i64),
        Err(nil) => nil,
    }
}

/// `OBJECT IDLETIME key`: seconds since a command last read or wrote the
/// key; refused under an LFU policy, as in Redis (which keeps one or the
/// other).
pub(crate) fn idletime(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let (now, lfu) = (x.now, x.config.maxmemory_policy.is_lfu());
    match untouched(x, &args[2]) {
        Ok(_) if lfu => Reply::error(
            "ERR An LFU maxmemory policy is selected, idle time not tracked. \
             Please note that when switching between policies at runtime LRU and LFU data \
             will take some time to adjust.",
        ),
        Ok(entry) => Reply::Integer((entry.idle_ms(now) / 1000) as i64),
        Err(nil) => nil,
    }
}

/// `OBJECT FREQ key`: the key's access frequency counter (see
/// `kvstore::store::Frequency`), answered only under an LFU eviction
/// policy, as in Redis (under another one the counter is not what
/// eviction goes by).
pub(crate) fn freq(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let (now, tuning, lfu) = (x.now, x.config.lfu, x.config.maxmemory_policy.is_lfu());
    match untouched(x, &args[2]) {
        Ok(entry) if lfu => Reply::Integer(i64::from(entry.frequency(now, tuning))),
        Ok(_) => Reply::error(
            "ERR An LFU maxmemory policy is not selected, access frequency not tracked. \
             Please note that when switching between policies at runtime LRU and LFU data \
             will take some time to adjust.",
        ),
        Err(nil) => nil,
    }
}

/// `MEMORY USAGE key [SAMPLES count]`: the bytes the key and its value
/// count for in `used_memory` (and so against `maxmemory`), or nil. The
/// figure is exact for what kvstore counts, so `SAMPLES` changes nothing.
pub(crate) fn memory_usage(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match &args[3..] {
        [] => {}
        [option, count] if option.eq_ignore_ascii_case(b"SAMPLES") => {
            if crate::num::parse_i64(count).is_none_or(|n| n < 0) {
                return errors::not_integer();
            }
        }
        _ => return errors::syntax(),
    }
    let key = &args[2];
    match untouched(x, key) {
        Ok(entry) => {
            Reply::Integer(crate::store::Store::cost(key.len(), entry.data().size()) as i64)
        }
        Err(nil) => nil,
    }
}

/// `MEMORY HELP`.
pub(crate) fn memory_help(_x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    Reply::help(&[
        "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DOCTOR",
        "    What the memory figures suggest, in words.",
        "MALLOC-STATS",
        "    The allocator's statistics (it keeps none to show).",
        "PURGE",
        "    Hand freed memory back (the allocator holds none back: nothing to do).",
        "STATS",
        "    The memory figures, by name: data, overhead, scripts, peak.",
        "USAGE <key> [SAMPLES <count>]",
        "    Return memory in bytes used by <key> and its value, as counted against",
        "    maxmemory.",
        "HELP",
        "    Print this help.",
    ])
}

/// `OBJECT HELP`.
pub(crate) fn object_help(_x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    Reply::help(&[
        "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "ENCODING <key>",
        "    Return the kind of internal representation used in order to store the value",
        "    associated with a <key>.",
        "FREQ <key>",
        "    Return the access frequency index of the <key> (LFU policies only).",
        "IDLETIME <key>",
        "    Return the idle time of the <key>, that is the approximated number of",
        "    seconds elapsed since the last access to the key.",
        "REFCOUNT <key>",
        "    Return the number of references of the value associated with the specified",
        "    <key>.",
        "HELP",
        "    Print this help.",
    ])
}
