//! Hash commands: `HSET`, `HSETNX`, `HMSET`, `HGET`, `HMGET`, `HDEL`,
//! `HEXISTS`, `HLEN`, `HSTRLEN`, `HKEYS`, `HVALS`, `HGETALL`, `HINCRBY`,
//! `HINCRBYFLOAT`, `HRANDFIELD`, `HSCAN`.
//!
//! # What gets logged
//!
//! | command                          | logged as                          |
//! |----------------------------------|------------------------------------|
//! | `HSET`, `HMSET`, `HSETNX` (if it set) | `HSET key field value ...`    |
//! | `HINCRBY`, `HINCRBYFLOAT`        | `HSET key field <new value>`       |
//! | `HDEL key f1 f2` (f2 missing)    | `HDEL key f1`; nothing if none was |
//!
//! Each of these replays to the same hash over the state the log had when
//! it was written, in the old log and in the new log of a running rewrite
//! alike (see [`RewriteScan`](crate::aof::RewriteScan)).

use alloc::vec::Vec;

use super::errors;
use super::exec::{reply_fits, Exec};
use super::keys::ScanOptions;
use super::string_ops::{float_sum, parse_float};
use super::strings::copy_for_reply;
use crate::config::Config;
use crate::glob;
use crate::num::{format_i64, parse_i64, parse_u64};
use crate::resp::Reply;
use crate::store::{Hash, Store};

/// `HSET key field value [field value ...]`: how many fields were new.
pub(crate) fn hset(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match set_fields(x, args, "hset") {
        Ok(added) => Reply::Integer(added as i64),
        Err(reply) => reply,
    }
}

/// `HMSET key field value [field value ...]`: `HSET`, answering `OK` (its
/// name before Redis 4).
pub(crate) fn hmset(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match set_fields(x, args, "hset") {
        Ok(_) => Reply::ok(),
        Err(reply) => reply,
    }
}

/// Sets the field/value pairs of `args[2..]` in the hash `args[1]`, moving
/// them out of `args`; returns how many fields were new. `event` names
/// the change in keyspace notifications.
fn set_fields(x: &mut Exec<'_>, args: &mut [Vec<u8>], event: &str) -> Result<usize, Reply> {
    if !args.len().is_multiple_of(2) {
        return Err(errors::wrong_args(x.fullname));
    }
    x.live_hash(&args[1])?;
    let mut record: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
    record[0] = b"HSET";
    x.log(&record);
    let (head, pairs) = args.split_at_mut(2);
    let key = &head[1];
    let limits = x.config.hash_compact;
    let added = x.store.update_hash(key, |hash| {
        let mut added = 0;
        for pair in pairs.chunks_exact_mut(2) {
            let field = core::mem::take(&mut pair[0]);
            added += usize::from(hash.insert(field, core::mem::take(&mut pair[1]), limits));
        }
        added
    });
    if added.is_some() {
        x.notify(crate::notify::HASH, event, key);
    }
    added.ok_or_else(errors::wrong_type)
}

/// `HSETNX key field value`: 1 if it set the field, 0 if it existed.
pub(crate) fn hsetnx(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match x.live_hash(&args[1]) {
        Ok(Some(hash)) if hash.contains(&args[2]) => return Reply::Integer(0),
        Ok(_) => {}
        Err(reply) => return reply,
    }
    match set_fields(x, args, "hset") {
        Ok(_) => Reply::Integer(1),
        Err(reply) => reply,
    }
}

/// `HGET key field`: the value, or nil if the key or the field is missing.
pub(crate) fn hget(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match x.read_hash(&args[1]) {
        Ok(hash) => match hash.and_then(|h| h.get(&args[2])).map(copy_for_reply) {
            Some(Ok(value)) => Reply::Bulk(Some(value)),
            Some(Err(reply)) => reply,
            None => Reply::Bulk(None),
        },
        Err(reply) => reply,
    }
}

/// `HMGET key field [field ...]`: each field's value or nil, in order.
pub(crate) fn hmget(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let hash = match x.read_hash(&args[1]) {
        Ok(hash) => hash,
        Err(reply) => return reply,
    };
    let mut values = Vec::with_capacity(args.len() - 2);
    for field in &args[2..] {
        match hash.and_then(|h| h.get(field)).map(copy_for_reply) {
            Some(Ok(value)) => values.push(Reply::Bulk(Some(value))),
            Some(Err(reply)) => return reply,
            None => values.push(Reply::Bulk(None)),
        }
    }
    Reply::array(values)
}

/// `HDEL key field [field ...]`: how many fields were removed; the key
/// goes with its last field.
pub(crate) fn hdel(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match x.live_hash(&args[1]) {
        Ok(Some(hash)) if args[2..].iter().any(|f| hash.contains(f)) => {}
        Ok(_) => return Reply::Integer(0),
        Err(reply) => return reply,
    }
    let (key, fields) = (&args[1], &args[2..]);
    let removed: Vec<&[u8]> = x
        .store
        .update_hash(key, |hash| {
            let removed = fields.iter().filter(|field| hash.remove(field));
            removed.map(Vec::as_slice).collect()
        })
        .unwrap_or_default();
    let mut record: Vec<&[u8]> = alloc::vec![b"HDEL", key];
    record.extend(&removed);
    x.log(&record);
    x.notify(crate::notify::HASH, "hdel", key);
    if x.store.get(key).is_none() {
        x.emptied(key);
    }
    Reply::Integer(removed.len() as i64)
}

/// `HEXISTS key field`: 1 if the hash has the field, else 0.
pub(crate) fn hexists(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match x.read_hash(&args[1]) {
        Ok(hash) => Reply::Integer(i64::from(hash.is_some_and(|h| h.contains(&args[2])))),
        Err(reply) => reply,
    }
}

/// `HLEN key`: the number of fields, 0 if the key is missing.
pub(crate) fn hlen(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match x.read_hash(&args[1]) {
        Ok(hash) => Reply::Integer(hash.map_or(0, Hash::len) as i64),
        Err(reply) => reply,
    }
}

/// `HSTRLEN key field`: the length of the field's value, 0 if missing.
pub(crate) fn hstrlen(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match x.read_hash(&args[1]) {
        Ok(hash) => {
            let len = hash.and_then(|h| h.get(&args[2])).map_or(0, <[u8]>::len);
            Reply::Integer(len as i64)
        }
        Err(reply) => reply,
    }
}

/// `HKEYS key`: every field.
pub(crate) fn hkeys(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    all(x, &args[1], true, false)
}

/// `HVALS key`: every value.
pub(crate) fn hvals(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    all(x, &args[1], false, true)
}

/// `HGETALL key`: every field followed by its value.
pub(crate) fn hgetall(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match all(x, &args[1], true, true) {
        // A map in RESP3 (an empty one for a missing key).
        Reply::Array(Some(items)) => Reply::Map(items),
        other => other,
    }
}

/// The fields and/or values of the hash at `key`, in field order; an
/// empty array if the key is missing.
fn all(x: &mut Exec<'_>, key: &[u8], fields: bool, values: bool) -> Reply {
    let hash = match x.read_hash(key) {
        Ok(Some(hash)) => hash,
        Ok(None) => return Reply::array(Vec::new()),
        Err(reply) => return reply,
    };
    let pairs = hash
        .iter()
        .map(|(f, v)| (fields.then_some(f), values.then_some(v)));
    let items = pairs.flat_map(|(f, v)| f.into_iter().chain(v));
    let per_field = usize::from(fields) + usize::from(values);
    match copy_all(items, hash.len() * per_field) {
        Ok(reply) => reply,
        Err(reply) => reply,
    }
}

/// An array of copies of `items` (`len` of them) for a reply, or an error
/// reply if memory for it cannot be had: a large hash must fail the
/// command, not the server.
fn copy_all<'a>(items: impl Iterator<Item = &'a [u8]>, len: usize) -> Result<Reply, Reply> {
    let mut out = Vec::new();
    out.try_reserve_exact(len)
        .map_err(|_| Reply::error("OOM not enough memory for the reply"))?;
    for item in items {
        out.push(Reply::Bulk(Some(copy_for_reply(item)?)));
    }
    Ok(Reply::array(out))
}

/// `HINCRBY key field increment`: adds to the field's integer (a missing
/// field counting as 0); the new value.
pub(crate) fn hincrby(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let Some(delta) = parse_i64(&args[3]) else {
        return errors::not_integer();
    };
    let current = match x.live_hash(&args[1]) {
        Ok(hash) => match hash.and_then(|h| h.get(&args[2])) {
            Some(value) => match parse_i64(value) {
                Some(n) => n,
                None => return Reply::error("ERR hash value is not an integer"),
            },
            None => 0,
        },
        Err(reply) => return reply,
    };
    let Some(new) = current.checked_add(delta) else {
        return errors::overflow();
    };
    set_one(x, args, format_i64(new), "hincrby");
    Reply::Integer(new)
}

/// `HINCRBYFLOAT key field increment`: adds to the field's number (a
/// missing field counting as 0); the new value as text, computed and
/// printed as `INCRBYFLOAT` does.
pub(crate) fn hincrbyfloat(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match parse_float(&args[3]) {
        Some(delta) if delta.is_finite() => {}
        Some(_) => return Reply::error("ERR value is NaN or Infinity"),
        None => return Reply::error("ERR value is not a valid float"),
    }
    let current = match x.live_hash(&args[1]) {
        Ok(hash) => match hash.and_then(|h| h.get(&args[2])) {
            Some(value) if parse_float(value).is_some() => Some(value.to_vec()),
            Some(_) => return Reply::error("ERR hash value is not a float"),
            None => None,
        },
        Err(reply) => return reply,
    };
    let Some(text) = float_sum(current.as_deref(), &args[3]) else {
        return Reply::error("ERR increment would produce NaN or Infinity");
    };
    set_one(x, args, text.clone().into_bytes(), "hincrbyfloat");
    Reply::bulk(text.into_bytes())
}

/// The count and option of `HRANDFIELD key [count [WITHVALUES]]` and
/// `ZRANDMEMBER key [count [WITHSCORES]]` (`option` names the option):
/// `(None, false)` without a count. As Redis checks them: the count, then
/// the syntax; each pick with its value must not overflow a 64-bit count.
pub(super) fn random_count(args: &[Vec<u8>], option: &[u8]) -> Result<(Option<i64>, bool), Reply> {
    let Some(arg) = args.get(2) else {
        return Ok((None, false));
    };
    let n = match parse_i64(arg) {
        Some(i64::MIN) => {
            return Err(Reply::error(
                "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
            ))
        }
        Some(n) => n,
        None => return Err(errors::not_integer()),
    };
    match &args[3..] {
        [] => Ok((Some(n), false)),
        [word] if word.eq_ignore_ascii_case(option) => {
            if n.unsigned_abs() > (i64::MAX / 2) as u64 {
                return Err(Reply::error("ERR value is out of range"));
            }
            Ok((Some(n), true))
        }
        _ => Err(errors::syntax()),
    }
}

/// `HRANDFIELD key [count [WITHVALUES]]`: without a count, one field
/// picked at random (nil if the key is missing); with a positive count, up
/// to that many distinct fields; with a negative one, exactly that many,
/// each picked anew (so possibly repeated). `WITHVALUES` follows each field
/// with its value.
pub(crate) fn hrandfield(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let (count, with_values) = match random_count(args, b"WITHVALUES") {
        Ok(parsed) => parsed,
        Err(reply) => return reply,
    };
    let key = &args[1];
    match x.read_hash(key) {
        Ok(Some(_)) => {}
        Ok(None) if count.is_none() => return Reply::Bulk(None),
        Ok(None) => return Reply::array(Vec::new()),
        Err(reply) => return reply,
    }
    let Some(hash) = x.store.get(key).and_then(|e| e.hash()) else {
        return Reply::array(Vec::new());
    };
    let random = &mut *x.random;
    let len = hash.len();
    if len == 0 {
        // Never stored (the last field takes its key), but cheap to rule out.
        return Reply::array(Vec::new());
    }
    let Some(n) = count else {
        let pick = random.next_u64() as usize % len;
        return match hash
            .iter()
            .nth(pick)
            .map(|(field, _)| copy_for_reply(field))
        {
            Some(Ok(field)) => Reply::Bulk(Some(field)),
            Some(Err(reply)) => reply,
            None => Reply::Bulk(None),
        };
    };
    let mut fields = Vec::new();
    if fields.try_reserve_exact(len).is_err() {
        return Reply::error("OOM not enough memory for the reply");
    }
    fields.extend(hash.iter());
    let picked: &[(&[u8], &[u8])] = if n >= 0 {
        // Distinct fields: the first `n` of a partial shuffle.
        let n = usize::try_from(n).unwrap_or(usize::MAX).min(len);
        for i in 0..n {
            let j = i + random.next_u64() as usize % (len - i);
            fields.swap(i, j);
        }
        &fields[..n]
    } else {
        // Repeats allowed: draw each anew (at the end of the list).
        let n = usize::try_from(n.unsigned_abs()).unwrap_or(usize::MAX);
        // Each item of the reply takes at least its `Reply`.
        let least = (n as u64).saturating_mul(core::mem::size_of::<Reply>() as u64);
        if let Err(reply) = reply_fits(x.config, least) {
            return reply;
        }
        if fields.try_reserve_exact(n).is_err() {
            return Reply::error("OOM not enough memory for the reply");
        }
        for _ in 0..n {
            let pick = fields[random.next_u64() as usize % len];
            fields.push(pick);
        }
        &fields[len..]
    };
    let per_field = 1 + usize::from(with_values);
    let bytes: u64 = picked
        .iter()
        .map(|&(f, v)| (f.len() + if with_values { v.len() } else { 0 }) as u64)
        .sum();
    if let Err(reply) = reply_fits(x.config, bytes) {
        return reply;
    }
    let items = picked
        .iter()
        .flat_map(|&(f, v)| core::iter::once(f).chain(with_values.then_some(v)));
    match copy_all(items, picked.len().saturating_mul(per_field)) {
        // Field and value pairs: `[field, value]` arrays in RESP3.
        Ok(reply) if with_values => Reply::Pairs(reply.into_items().unwrap_or_default()),
        Ok(reply) => reply,
        Err(reply) => reply,
    }
}

/// `HSCAN key cursor [MATCH pattern] [COUNT count]`: the next cursor (0
/// when done) and a batch of fields, each followed by its value. Every
/// field present for the whole scan is returned at least once (see
/// [`Store::scan`]).
pub(crate) fn hscan(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let Some(cursor) = parse_u64(&args[2]) else {
        return Reply::error("ERR invalid cursor");
    };
    let done = || Reply::array(alloc::vec![Reply::bulk("0"), Reply::array(Vec::new())]);
    let hash = match x.read_hash(&args[1]) {
        Ok(Some(hash)) => hash,
        Ok(None) => return done(),
        Err(reply) => return reply,
    };
    let options = match ScanOptions::parse(&args[3..], false) {
        Ok(options) => options,
        Err(reply) => return reply,
    };
    let (next, batch) = hash.scan(cursor, options.count);
    let matching: Vec<_> = batch
        .into_iter()
        .filter(|(field, _)| options.pattern.is_none_or(|p| glob::matches(p, field)))
        .collect();
    let items = matching.iter().flat_map(|&(f, v)| [f, v]);
    match copy_all(items, matching.len() * 2) {
        Ok(fields) => Reply::array(alloc::vec![Reply::bulk(alloc::format!("{next}")), fields]),
        Err(reply) => reply,
    }
}

/// Sets field `args[2]` of the hash `args[1]` to `value`, logged as
/// `HSET key field value`.
fn set_one(x: &mut Exec<'_>, args: &mut [Vec<u8>], value: Vec<u8>, event: &str) {
    let mut set = alloc::vec![
        b"HSET".to_vec(),
        core::mem::take(&mut args[1]),
        core::mem::take(&mut args[2]),
        value,
    ];
    // Cannot fail: the caller checked the key's type.
    let _ = set_fields(x, &mut set, event);
}

/// Growth of `HSET key field value [field value ...]` (and `HMSET`,
/// `HSETNX`): each new field's cost, or what a value grows by, plus the
/// key's own cost if it is missing. A field named twice counts twice.
pub(crate) fn hset_growth(store: &Store, _limits: &Config, args: &[Vec<u8>]) -> usize {
    let key = &args[1];
    let hash = store.get(key).and_then(|e| e.hash());
    let fields: usize = args[2..]
        .chunks_exact(2)
        .map(|pair| field_growth(hash, &pair[0], pair[1].len()))
        .sum();
    match store.get(key) {
        Some(_) => fields,
        None => Store::cost(key.len(), fields),
    }
}

/// Growth of `HINCRBY key field increment` (and `HINCRBYFLOAT`): at most a
/// 20-digit number in the field.
pub(crate) fn hincr_growth(store: &Store, _limits: &Config, args: &[Vec<u8>]) -> usize {
    let key = &args[1];
    let hash = store.get(key).and_then(|e| e.hash());
    let field = field_growth(hash, &args[2], 20);
    match store.get(key) {
        Some(_) => field,
        None => Store::cost(key.len(), field),
    }
}

/// How much setting `field` to a value of `len` bytes grows `hash`.
fn field_growth(hash: Option<&Hash>, field: &[u8], len: usize) -> usize {
    match hash.and_then(|h| h.get(field)) {
        Some(old) => len.saturating_sub(old.len()),
        None => Hash::field_cost(field.len(), len),
    }
}
