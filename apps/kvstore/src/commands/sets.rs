//! Set commands: `SADD`, `SREM`, `SCARD`, `SISMEMBER`, `SMISMEMBER`,
//! `SMEMBERS`, `SRANDMEMBER`, `SPOP`, `SMOVE`, `SINTER`, `SINTERCARD`,
//! `SINTERSTORE`, `SUNION`, `SUNIONSTORE`, `SDIFF`, `SDIFFSTORE`, `SSCAN`.
//!
//! # What gets logged
//!
//! | command                              | logged as                          |
//! |--------------------------------------|------------------------------------|
//! | `SADD` (if it added a member)        | as given                           |
//! | `SREM key a b` (b missing)           | `SREM key a`; nothing if none was  |
//! | `SPOP key [count]`                   | `SREM key <the members popped>`, or `DEL key` if it took them all |
//! | `SMOVE` (if it moved)                | as given                           |
//! | `SINTERSTORE`, `SUNIONSTORE`, `SDIFFSTORE` | `DEL dst`, then `SADD dst <every member>` if the result is not empty |
//!
//! `SPOP` picks at random, so it is logged as what it picked: replay
//! removes the same members. A `*STORE` is logged as its result, which
//! replays the same whatever the sources held. While a log rewrite runs
//! and its new log does not hold the source yet, `SMOVE` is logged as
//! `SREM src member` and `SADD dst member` (see
//! `kvstore::aof::RewriteScan`).

use alloc::vec::Vec;

use super::errors;
use super::exec::{reply_fits, Exec};
use super::keys::ScanOptions;
use super::strings::copy_for_reply;
use crate::aof::{push_entry, SET_MEMBERS_PER_RECORD};
use crate::config::Config;
use crate::glob;
use crate::notify;
use crate::num::{parse_i64, parse_u64};
use crate::resp::Reply;
use crate::store::{Member, Set, Store};
use faultline_rng::XorShift64Star;

/// The live set at `key` (expired keys go first, see [`Exec::live`]):
/// `Ok(None)` if the key is missing, `WRONGTYPE` if it holds another type.
fn live_set<'x>(x: &'x mut Exec<'_>, key: &[u8]) -> Result<Option<&'x Set>, Reply> {
    match x.live(key) {
        None => Ok(None),
        Some(entry) => entry.set().map(Some).ok_or_else(errors::wrong_type),
    }
}

/// Like [`live_set`], counting a keyspace hit or miss ([`Exec::read`]).
fn read_set<'x>(x: &'x mut Exec<'_>, key: &[u8]) -> Result<Option<&'x Set>, Reply> {
    match x.read(key) {
        None => Ok(None),
        Some(entry) => entry.set().map(Some).ok_or_else(errors::wrong_type),
    }
}

/// The reply when memory for a reply's copy cannot be had.
fn oom() -> Reply {
    Reply::error("OOM not enough memory for the reply")
}

/// An array of copies of `members` (`len` of them), or an error reply if
/// memory for it cannot be had: a large set must fail the command, not
/// the server.
fn copy_all<'a>(members: impl Iterator<Item = Member<'a>>, len: usize) -> Reply {
    let mut out = Vec::new();
    if out.try_reserve_exact(len).is_err() {
        return oom();
    }
    for member in members {
        match copy_for_reply(&member) {
            Ok(copy) => out.push(Reply::Bulk(Some(copy))),
            Err(reply) => return reply,
        }
    }
    Reply::array(out)
}

/// `reply`, an array of distinct members, as a set (RESP3 `~`); an error
/// stays as it is.
fn as_set(reply: Reply) -> Reply {
    match reply {
        Reply::Array(Some(items)) => Reply::Set(items),
        other => other,
    }
}

/// `SADD key member [member ...]`: how many members were new.
pub(crate) fn sadd(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let (key, members) = (&args[1], &args[2..]);
    match live_set(x, key) {
        Ok(Some(set)) if members.iter().all(|m| set.contains(m)) => return Reply::Integer(0),
        Ok(_) => {}
        Err(reply) => return reply,
    }
    let max = x.config.set_max_intset_entries;
    let added = x.store.update_set(key, |set| {
        set.try_reserve(members.len().min(max))
            .map(|()| members.iter().filter(|m| set.insert(m, max)).count())
    });
    let added = match added {
        Some(Ok(added)) => added,
        Some(Err(_)) => return Reply::error("OOM not enough memory for the set"),
        None => return errors::wrong_type(),
    };
    let mut record: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
    record[0] = b"SADD";
    x.log(&record);
    x.notify(notify::SET, "sadd", key);
    Reply::Integer(added as i64)
}

/// `SREM key member [member ...]`: how many members were removed; the key
/// goes with its last member.
pub(crate) fn srem(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let (key, members) = (&args[1], &args[2..]);
    match live_set(x, key) {
        Ok(Some(set)) if members.iter().any(|m| set.contains(m)) => {}
        Ok(_) => return Reply::Integer(0),
        Err(reply) => return reply,
    }
    let removed: Vec<&[u8]> = x
        .store
        .update_set(key, |set| {
            let removed = members.iter().filter(|m| set.remove(m));
            removed.map(Vec::as_slice).collect()
        })
        .unwrap_or_default();
    let mut record: Vec<&[u8]> = alloc::vec![b"SREM", key];
    record.extend(&removed);
    x.log(&record);
    x.notify(notify::SET, "srem", key);
    if x.store.get(key).is_none() {
        x.emptied(key);
    }
    Reply::Integer(removed.len() as i64)
}

/// `SCARD key`: the number of members, 0 if the key is missing.
pub(crate) fn scard(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match read_set(x, &args[1]) {
        Ok(set) => Reply::Integer(set.map_or(0, Set::len) as i64),
        Err(reply) => reply,
    }
}

/// `SISMEMBER key member`: 1 if the set has the member, else 0.
pub(crate) fn sismember(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match read_set(x, &args[1]) {
        Ok(set) => Reply::Integer(i64::from(set.is_some_and(|s| s.contains(&args[2])))),
        Err(reply) => reply,
    }
}

/// `SMISMEMBER key member [member ...]`: 1 or 0 for each member, in order.
pub(crate) fn smismember(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let set = match read_set(x, &args[1]) {
        Ok(set) => set,
        Err(reply) => return reply,
    };
    let answers = args[2..]
        .iter()
        .map(|m| Reply::Integer(i64::from(set.is_some_and(|s| s.contains(m)))));
    Reply::array(answers.collect())
}

/// `SMEMBERS key`: every member; an empty array if the key is missing.
pub(crate) fn smembers(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match read_set(x, &args[1]) {
        Ok(Some(set)) => as_set(copy_all(set.iter(), set.len())),
        Ok(None) => Reply::Set(Vec::new()),
        Err(reply) => reply,
    }
}

/// `SRANDMEMBER key [count]`: without a count, one member picked at random
/// (nil if the key is missing); with a positive count, up to that many
/// distinct members; with a negative one, exactly that many, each picked
/// anew (so possibly repeated).
pub(crate) fn srandmember(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    if args.len() > 3 {
        return errors::syntax();
    }
    let count = match args.get(2).map(|arg| parse_i64(arg)) {
        None => None,
        Some(Some(i64::MIN)) => {
            return Reply::error(
                "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
            )
        }
        Some(Some(n)) => Some(n),
        Some(None) => return errors::not_integer(),
    };
    let key = &args[1];
    match read_set(x, key) {
        Ok(Some(_)) => {}
        Ok(None) if count.is_none() => return Reply::Bulk(None),
        Ok(None) => return Reply::array(Vec::new()),
        Err(reply) => return reply,
    }
    let Some(set) = x.store.get(key).and_then(|e| e.set()) else {
        return Reply::Bulk(None);
    };
    let random = &mut *x.random;
    match count {
        None => one_at_random(set, random),
        Some(n) if n >= 0 => {
            let n = usize::try_from(n).unwrap_or(usize::MAX);
            match distinct_at_random(set, n, random) {
                Ok(picked) => copy_all(picked.into_iter(), n.min(set.len())),
                Err(reply) => reply,
            }
        }
        Some(n) => repeats_at_random(set, n.unsigned_abs(), x.config, random),
    }
}

/// One member of `set`, drawn with `random`, as a bulk reply.
fn one_at_random(set: &Set, random: &mut XorShift64Star) -> Reply {
    let pick = random.next_u64() as usize % set.len().max(1);
    match set.nth(pick).map(|m| copy_for_reply(&m)) {
        Some(Ok(member)) => Reply::Bulk(Some(member)),
        Some(Err(reply)) => reply,
        None => Reply::Bulk(None),
    }
}

/// Up to `n` distinct members of `set`, drawn with `random`: all of them,
/// in set order, if `n` covers the set; a few of a large set by drawing
/// positions until `n` differ (each draw is a lookup, see [`Set::nth`]);
/// else the first `n` of a partial shuffle of all of them.
fn distinct_at_random<'s>(
    set: &'s Set,
    n: usize,
    random: &mut XorShift64Star,
) -> Result<Vec<Member<'s>>, Reply> {
    let len = set.len();
    let mut members = Vec::new();
    if n < len / 4 {
        // Most draws are new: about n * 4 / 3 of them at worst.
        let mut drawn = alloc::collections::BTreeSet::new();
        members.try_reserve_exact(n).map_err(|_| oom())?;
        while members.len() < n {
            let at = random.next_u64() as usize % len;
            if drawn.insert(at) {
                members.extend(set.nth(at));
            }
        }
        return Ok(members);
    }
    members.try_reserve_exact(len).map_err(|_| oom())?;
    members.extend(set.iter());
    if n >= len {
        return Ok(members);
    }
    for i in 0..n {
        let j = i + random.next_u64() as usize % (len - i);
        members.swap(i, j);
    }
    members.truncate(n);
    Ok(members)
}

/// `n` members of `set`, each drawn anew with `random`, as an array reply;
/// refused if the reply would be bigger than `config` lets one reply be
/// (see [`reply_fits`]).
fn repeats_at_random(set: &Set, n: u64, config: &Config, random: &mut XorShift64Star) -> Reply {
    // Each item of the reply takes at least its `Reply`.
    let least = n.saturating_mul(core::mem::size_of::<Reply>() as u64);
    if let Err(reply) = reply_fits(config, least) {
        return reply;
    }
    let n = usize::try_from(n).unwrap_or(usize::MAX);
    let len = set.len();
    let mut picks = Vec::new();
    if picks.try_reserve_exact(n).is_err() {
        return oom();
    }
    for _ in 0..n {
        // Each draw is a lookup (see `Set::nth`).
        picks.extend(set.nth(random.next_u64() as usize % len));
    }
    let bytes: u64 = picks.iter().map(|m| m.len() as u64).sum();
    if let Err(reply) = reply_fits(config, bytes) {
        return reply;
    }
    copy_all(picks.into_iter(), n)
}

/// `SPOP key [count]`: removes and returns a member picked at random (nil
/// if the key is missing); with a count, an array of up to that many
/// distinct members. Logged as the `SREM` of what it took.
pub(crate) fn spop(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    if args.len() > 3 {
        return errors::syntax();
    }
    let count = match args.get(2).map(|arg| parse_i64(arg)) {
        None => None,
        Some(Some(n)) if n >= 0 => Some(usize::try_from(n).unwrap_or(usize::MAX)),
        // Redis answers a count that is not a number as one below 0.
        Some(_) => return Reply::error("ERR value is out of range, must be positive"),
    };
    let key = &args[1];
    match live_set(x, key) {
        Ok(Some(_)) => {}
        Ok(None) if count.is_none() => return Reply::Bulk(None),
        Ok(None) => return Reply::Set(Vec::new()),
        Err(reply) => return reply,
    }
    if count == Some(0) {
        return Reply::Set(Vec::new());
    }
    let Some(set) = x.store.get(key).and_then(|e| e.set()) else {
        return Reply::array(Vec::new());
    };
    let len = set.len();
    if count.is_some_and(|n| n >= len) {
        // All of it: the key goes, logged as such.
        let reply = copy_all(set.iter(), len);
        if reply.is_error() {
            return reply;
        }
        x.store.remove(key);
        x.log([&b"DEL"[..], key]);
        x.notify(notify::SET, "spop", key);
        x.notify(notify::GENERIC, "del", key);
        return as_set(reply);
    }
    let random = &mut *x.random;
    let picked = match count {
        None => set
            .nth(random.next_u64() as usize % len)
            .into_iter()
            .collect(),
        Some(n) => match distinct_at_random(set, n, random) {
            Ok(picked) => picked,
            Err(reply) => return reply,
        },
    };
    let mut taken = Vec::new();
    if taken.try_reserve_exact(picked.len()).is_err() {
        return oom();
    }
    for member in &picked {
        match copy_for_reply(member) {
            Ok(copy) => taken.push(copy),
            Err(reply) => return reply,
        }
    }
    x.store.update_set(key, |set| {
        for member in &taken {
            set.remove(member);
        }
    });
    for chunk in taken.chunks(SET_MEMBERS_PER_RECORD) {
        let mut record: Vec<&[u8]> = alloc::vec![b"SREM", key];
        record.extend(chunk.iter().map(Vec::as_slice));
        x.log(&record);
    }
    x.notify(notify::SET, "spop", key);
    if x.store.get(key).is_none() {
        x.emptied(key);
    }
    match count {
        None => Reply::Bulk(taken.pop()),
        Some(_) => Reply::Set(taken.into_iter().map(|m| Reply::Bulk(Some(m))).collect()),
    }
}

/// `SMOVE source destination member`: 1 if the member moved (or, with the
/// same key twice, is there), 0 if the source does not have it.
pub(crate) fn smove(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let (src, dst, member) = (&args[1], &args[2], &args[3]);
    let has = match live_set(x, src) {
        Ok(Some(set)) => set.contains(member),
        // A missing source answers 0 before the destination is looked at.
        Ok(None) => return Reply::Integer(0),
        Err(reply) => return reply,
    };
    let dst_has = match live_set(x, dst) {
        Ok(set) => set.is_some_and(|s| s.contains(member)),
        Err(reply) => return reply,
    };
    if src == dst || !has {
        return Reply::Integer(i64::from(has));
    }
    if x.rewrite_lags(src) {
        // The running rewrite's new log does not hold `src` yet: there an
        // `SMOVE` would find nothing to move into `dst`.
        x.log([&b"SREM"[..], src, member]);
        x.log([&b"SADD"[..], dst, member]);
    } else {
        x.log([&b"SMOVE"[..], src, dst, member]);
    }
    x.store.update_set(src, |set| set.remove(member));
    x.notify(notify::SET, "srem", src);
    if x.store.get(src).is_none() {
        x.emptied(src);
    }
    if !dst_has {
        let max = x.config.set_max_intset_entries;
        x.store.update_set(dst, |set| set.insert(member, max));
        x.notify(notify::SET, "sadd", dst);
    }
    Reply::Integer(1)
}

/// What a multi-set command computes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Inter,
    Union,
    Diff,
}

/// The sets at `keys` (`None` for a missing key), each read as a command
/// reading it does; `WRONGTYPE` if any key holds another type.
fn sources<'x>(x: &'x mut Exec<'_>, keys: &[Vec<u8>]) -> Result<Vec<Option<&'x Set>>, Reply> {
    for key in keys {
        read_set(x, key)?;
    }
    let mut sets = Vec::new();
    sets.try_reserve_exact(keys.len()).map_err(|_| oom())?;
    sets.extend(keys.iter().map(|k| x.store.get(k).and_then(|e| e.set())));
    Ok(sets)
}

/// The members `op` makes of `sets` (for `SUNION`, possibly repeated:
/// callers that need them once put them in a [`Set`]), stopping after
/// `limit` of them.
fn combine<'s>(sets: &[Option<&'s Set>], op: Op, limit: usize) -> Result<Vec<Member<'s>>, Reply> {
    let mut out = Vec::new();
    match op {
        Op::Inter => {
            let Some(mut present) = sets.iter().copied().collect::<Option<Vec<&Set>>>() else {
                return Ok(out);
            };
            present.sort_by_key(|s| s.len());
            let Some((smallest, rest)) = present.split_first() else {
                return Ok(out);
            };
            for member in smallest.iter() {
                if out.len() >= limit {
                    break;
                }
                if rest.iter().all(|s| s.contains(&member)) {
                    out.try_reserve(1).map_err(|_| oom())?;
                    out.push(member);
                }
            }
        }
        Op::Diff => {
            let Some(Some(first)) = sets.first() else {
                return Ok(out);
            };
            let rest = &sets[1..];
            for member in first.iter() {
                if out.len() >= limit {
                    break;
                }
                if !rest.iter().flatten().any(|s| s.contains(&member)) {
                    out.try_reserve(1).map_err(|_| oom())?;
                    out.push(member);
                }
            }
        }
        Op::Union => {
            for set in sets.iter().flatten() {
                out.try_reserve(set.len()).map_err(|_| oom())?;
                out.extend(set.iter());
            }
        }
    }
    Ok(out)
}

/// The members as a new set, each once, kept as `SADD` would keep them.
fn collect(members: &[Member<'_>], max_ints: usize) -> Result<Set, Reply> {
    let mut set = Set::new();
    set.try_reserve(members.len().min(max_ints))
        .map_err(|_| oom())?;
    for member in members {
        set.insert(member, max_ints);
    }
    Ok(set)
}

/// `SINTER`, `SUNION` or `SDIFF` of `keys`, as an array of members.
fn reply_with(x: &mut Exec<'_>, keys: &[Vec<u8>], op: Op) -> Reply {
    let max = x.config.set_max_intset_entries;
    let sets = match sources(x, keys) {
        Ok(sets) => sets,
        Err(reply) => return reply,
    };
    let members = match combine(&sets, op, usize::MAX) {
        Ok(members) => members,
        Err(reply) => return reply,
    };
    if op == Op::Union {
        return match collect(&members, max) {
            Ok(union) => copy_all(union.iter(), union.len()),
            Err(reply) => reply,
        };
    }
    copy_all(members.iter().copied(), members.len())
}

/// `SINTER key [key ...]`: the members every set has (none if a key is
/// missing).
pub(crate) fn sinter(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    as_set(reply_with(x, &args[1..], Op::Inter))
}

/// `SUNION key [key ...]`: the members any of the sets has.
pub(crate) fn sunion(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    as_set(reply_with(x, &args[1..], Op::Union))
}

/// `SDIFF key [key ...]`: the members of the first set none of the others
/// has.
pub(crate) fn sdiff(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    as_set(reply_with(x, &args[1..], Op::Diff))
}

/// `SINTERCARD numkeys key [key ...] [LIMIT limit]`: how many members
/// every set has, counting no further than `limit` (0: no limit).
pub(crate) fn sintercard(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let numkeys = match parse_i64(&args[1]) {
        Some(n) if n >= 1 => usize::try_from(n).unwrap_or(usize::MAX),
        _ => return Reply::error("ERR numkeys should be greater than 0"),
    };
    if numkeys > args.len() - 2 {
        return Reply::error("ERR Number of keys can't be greater than number of args");
    }
    let mut limit = 0;
    let mut options = args[2 + numkeys..].iter();
    while let Some(option) = options.next() {
        match options.next() {
            Some(value) if option.eq_ignore_ascii_case(b"LIMIT") => match parse_i64(value) {
                Some(n) if n >= 0 => limit = usize::try_from(n).unwrap_or(usize::MAX),
                _ => return Reply::error("ERR LIMIT can't be negative"),
            },
            _ => return errors::syntax(),
        }
    }
    let limit = if limit == 0 { usize::MAX } else { limit };
    let sets = match sources(x, &args[2..2 + numkeys]) {
        Ok(sets) => sets,
        Err(reply) => return reply,
    };
    match combine(&sets, Op::Inter, limit) {
        Ok(members) => Reply::Integer(members.len() as i64),
        Err(reply) => reply,
    }
}

/// `SINTERSTORE destination key [key ...]`: stores the intersection.
pub(crate) fn sinterstore(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    store_with(x, args, Op::Inter, "sinterstore")
}

/// `SUNIONSTORE destination key [key ...]`: stores the union.
pub(crate) fn sunionstore(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    store_with(x, args, Op::Union, "sunionstore")
}

/// `SDIFFSTORE destination key [key ...]`: stores the difference.
pub(crate) fn sdiffstore(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    store_with(x, args, Op::Diff, "sdiffstore")
}

/// Stores what `op` makes of the sets `args[2..]` at `args[1]`, replacing
/// whatever it held (its expiry too), or removes it if the result is
/// empty; the result's size. Logged as the result (see the module's
/// documentation).
fn store_with(x: &mut Exec<'_>, args: &mut [Vec<u8>], op: Op, event: &str) -> Reply {
    let (dst, keys) = (&args[1], &args[2..]);
    let max = x.config.set_max_intset_entries;
    let sets = match sources(x, keys) {
        Ok(sets) => sets,
        Err(reply) => return reply,
    };
    let result = combine(&sets, op, usize::MAX).and_then(|members| collect(&members, max));
    let result = match result {
        Ok(result) => result,
        Err(reply) => return reply,
    };
    let len = result.len();
    if len == 0 {
        if x.exists(dst) {
            x.store.remove(dst);
            x.log([&b"DEL"[..], dst]);
            x.notify(notify::GENERIC, "del", dst);
        }
        return Reply::Integer(0);
    }
    x.store.set(dst, result, None);
    x.log([&b"DEL"[..], dst]);
    if let (Some(entry), false) = (x.store.get(dst), x.loading) {
        push_entry(&mut x.effects, dst, entry);
    }
    x.notify(notify::SET, event, dst);
    Reply::Integer(len as i64)
}

/// `SSCAN key cursor [MATCH pattern] [COUNT count]`: the next cursor (0
/// when done) and a batch of members. Every member present for the whole
/// scan is returned at least once (see [`Store::scan`]).
pub(crate) fn sscan(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let Some(cursor) = parse_u64(&args[2]) else {
        return Reply::error("ERR invalid cursor");
    };
    let done = || Reply::array(alloc::vec![Reply::bulk("0"), Reply::array(Vec::new())]);
    let set = match read_set(x, &args[1]) {
        Ok(Some(set)) => set,
        Ok(None) => return done(),
        Err(reply) => return reply,
    };
    let options = match ScanOptions::parse(&args[3..], false) {
        Ok(options) => options,
        Err(reply) => return reply,
    };
    let (next, batch) = set.scan(cursor, options.count);
    let matching: Vec<Member<'_>> = batch
        .into_iter()
        .filter(|member| options.pattern.is_none_or(|p| glob::matches(p, member)))
        .collect();
    match copy_all(matching.iter().copied(), matching.len()) {
        Reply::Error(e) => Reply::Error(e),
        members => Reply::array(alloc::vec![Reply::bulk(alloc::format!("{next}")), members]),
    }
}

/// Growth of `SADD key member [member ...]`: each new member's cost in a
/// map (the most it can cost), plus the key's own cost if it is missing. A
/// member named twice counts twice.
pub(crate) fn sadd_growth(store: &Store, _config: &Config, args: &[Vec<u8>]) -> usize {
    let key = &args[1];
    let set = store.get(key).and_then(|e| e.set());
    let members: usize = args[2..]
        .iter()
        .filter(|m| !set.is_some_and(|s| s.contains(m)))
        .map(|m| Set::map_member_cost(m.len()))
        .sum();
    match store.get(key) {
        Some(_) => members,
        None => Store::cost(key.len(), members),
    }
}

/// Growth of `SMOVE source destination member`: the member's cost at the
/// destination, plus the destination's own cost if it is missing.
pub(crate) fn smove_growth(store: &Store, _config: &Config, args: &[Vec<u8>]) -> usize {
    let (dst, member) = (&args[2], &args[3]);
    match store.get(dst) {
        Some(entry) if entry.set().is_some_and(|s| s.contains(member)) => 0,
        Some(_) => Set::map_member_cost(member.len()),
        None => Store::cost(dst.len(), Set::map_member_cost(member.len())),
    }
}

/// Growth of `SINTERSTORE`, `SUNIONSTORE` and `SDIFFSTORE destination key
/// ...`: at most every source member again, as a map, in place of what the
/// destination holds (the result of an intersection or a difference is no
/// bigger than its smallest or first set; a union's than all of them).
pub(crate) fn store_growth(store: &Store, _config: &Config, args: &[Vec<u8>]) -> usize {
    let size = |key: &Vec<u8>| {
        store
            .get(key)
            .and_then(|e| e.set())
            .map_or(0, Set::size_as_map)
    };
    let sources = &args[2..];
    let bound = match args[0].to_ascii_lowercase().as_slice() {
        b"sunionstore" => sources.iter().map(size).sum(),
        b"sinterstore" => sources.iter().map(size).min().unwrap_or(0),
        _ => sources.first().map_or(0, size),
    };
    if bound == 0 {
        return 0;
    }
    store.growth_if_set(&args[1], bound)
}
