//! String commands: `GET`, `SET`, `GETSET`, `SETNX`, `INCR`/`DECR`/
//! `INCRBY`/`DECRBY`, `APPEND`, `STRLEN`, `MGET`, `MSET`.

use alloc::vec::Vec;

use super::errors;
use super::exec::Exec;
use super::expiry_arg::set_expire_at;
use super::set_options::SetOptions;
use crate::aof::Piece;
use crate::notify;
use crate::num::{format_i64, parse_i64};
use crate::resp::Reply;
use crate::store::Value;

/// `GET key`: the value (shared with the store, not copied), or nil.
pub(crate) fn get(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match x.read_string(&args[1]) {
        Ok(Some(value)) => Reply::Shared(value.clone()),
        Ok(None) => Reply::Bulk(None),
        Err(reply) => reply,
    }
}

/// A copy of stored bytes for a reply. A big value may not fit twice in
/// what memory is left: that fails the command, not the server.
pub(crate) fn copy_for_reply(bytes: &[u8]) -> Result<Vec<u8>, Reply> {
    let mut copy = Vec::new();
    match copy.try_reserve_exact(bytes.len()) {
        Ok(()) => {
            copy.extend_from_slice(bytes);
            Ok(copy)
        }
        Err(_) => Err(Reply::error(
            "OOM not enough memory to copy the value for the reply",
        )),
    }
}

/// `SET key value [NX|XX] [GET] [EX|PX|EXAT|PXAT n|KEEPTTL]`.
pub(crate) fn set(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let (head, options) = args.split_at_mut(3);
    let [_, key, value] = head else {
        return errors::wrong_args(x.fullname);
    };
    let opts = match SetOptions::parse(options) {
        Ok(opts) => opts,
        Err(reply) => return reply,
    };
    let expire_at = match opts.expire {
        Some((unit, raw)) => match set_expire_at(x, unit, raw) {
            Ok(at) => Some(at),
            Err(reply) => return reply,
        },
        None => None,
    };
    let key = &*key;
    let old = if opts.get {
        match x.read_string(key) {
            Ok(old) => old.map(|v| v.to_vec()),
            Err(reply) => return reply,
        }
    } else {
        None
    };
    let found = x.exists(key);
    if (opts.nx && found) || (opts.xx && !found) {
        return Reply::Bulk(old);
    }
    match expire_at {
        Some(at) if x.already_expired(at) => {
            // Setting an expiry in the past deletes the key (Redis 7.2).
            if x.store.remove(key).is_some() {
                x.log([&b"DEL"[..], key]);
                x.notify(notify::GENERIC, "del", key);
            }
        }
        Some(at) => {
            let value = Value::new(core::mem::take(value));
            x.store.set(key, value.clone(), Some(at));
            let at = format_i64(at as i64);
            x.log_args(&[
                SET,
                Piece::Bytes(key),
                Piece::Value(&value),
                PXAT,
                Piece::Bytes(&at),
            ]);
            x.notify(notify::STRING, "set", key);
            x.notify(notify::GENERIC, "expire", key);
        }
        None if opts.keep_ttl => {
            let value = Value::new(core::mem::take(value));
            x.store.set_keep_ttl(key, value.clone());
            x.log_args(&[SET, Piece::Bytes(key), Piece::Value(&value), KEEPTTL]);
            x.notify(notify::STRING, "set", key);
        }
        None => set_plain(x, key, core::mem::take(value)),
    }
    if opts.get {
        Reply::Bulk(old)
    } else {
        Reply::ok()
    }
}

const SET: Piece<'static> = Piece::Bytes(b"SET");
const PXAT: Piece<'static> = Piece::Bytes(b"PXAT");
const KEEPTTL: Piece<'static> = Piece::Bytes(b"KEEPTTL");

/// Sets `key` to a copy of `value` without expiry, and logs it (the log
/// shares the stored copy).
fn set_plain(x: &mut Exec<'_>, key: &[u8], value: Vec<u8>) {
    let value = Value::new(value);
    x.store.set(key, value.clone(), None);
    x.log_args(&[SET, Piece::Bytes(key), Piece::Value(&value)]);
    x.notify(notify::STRING, "set", key);
}

/// `GETSET key value`: sets (clearing any TTL) and returns the old value.
pub(crate) fn getset(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let old = match x.read_string(&args[1]) {
        Ok(old) => old.map(|v| v.to_vec()),
        Err(reply) => return reply,
    };
    let value = core::mem::take(&mut args[2]);
    set_plain(x, &args[1], value);
    Reply::Bulk(old)
}

/// `SETNX key value`: 1 if it set the key, 0 if the key existed.
pub(crate) fn setnx(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    if x.exists(&args[1]) {
        return Reply::Integer(0);
    }
    let value = core::mem::take(&mut args[2]);
    set_plain(x, &args[1], value);
    Reply::Integer(1)
}

/// `INCR key`.
pub(crate) fn incr(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    add(x, &args[1], 1)
}

/// `DECR key`.
pub(crate) fn decr(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    add(x, &args[1], -1)
}

/// `INCRBY key increment`.
pub(crate) fn incrby(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match parse_i64(&args[2]) {
        Some(delta) => add(x, &args[1], delta),
        None => errors::not_integer(),
    }
}

/// `DECRBY key decrement`.
pub(crate) fn decrby(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match parse_i64(&args[2]) {
        Some(i64::MIN) => Reply::error("ERR decrement would overflow"),
        Some(delta) => add(x, &args[1], -delta),
        None => errors::not_integer(),
    }
}

/// Adds `delta` to the integer at `key` (missing = 0), keeping its TTL.
fn add(x: &mut Exec<'_>, key: &[u8], delta: i64) -> Reply {
    let current = match x.live_string(key) {
        Ok(Some(value)) => match parse_i64(value) {
            Some(n) => n,
            None => return errors::not_integer(),
        },
        Ok(None) => 0,
        Err(reply) => return reply,
    };
    let Some(new) = current.checked_add(delta) else {
        return errors::overflow();
    };
    let mut digits = [0; 21];
    let text = crate::num::i64_text(new, &mut digits);
    // In place: one lookup, and the key and its expiry stay as they are.
    x.store.update_string(key, |value| {
        value.clear();
        value.extend_from_slice(text);
    });
    x.log([&b"SET"[..], key, text, b"KEEPTTL"]);
    x.notify(notify::STRING, "incrby", key);
    Reply::Integer(new)
}

/// `APPEND key suffix`: the new length.
pub(crate) fn append(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let (key, suffix) = (&args[1], &args[2]);
    let current = match x.live_string(key) {
        Ok(value) => value.map_or(0, |v| v.len()),
        Err(reply) => return reply,
    };
    // Not while loading: the log holds what was accepted then, whatever
    // the limit is now (as Redis obeys its AOF).
    if !x.loading && (current + suffix.len()) as u64 > x.config.proto_max_bulk_len {
        return errors::too_long();
    }
    let Some(len) = x.store.append(key, suffix) else {
        return errors::wrong_type();
    };
    x.log([&b"APPEND"[..], key, suffix]);
    x.notify(notify::STRING, "append", key);
    Reply::Integer(len as i64)
}

/// `STRLEN key`: the value's length, 0 if missing.
pub(crate) fn strlen(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match x.read_string(&args[1]) {
        Ok(value) => Reply::Integer(value.map_or(0, |v| v.len()) as i64),
        Err(reply) => reply,
    }
}

/// `MGET key [key ...]`: values or nils, in order (nil for a key of
/// another type too, as in Redis).
pub(crate) fn mget(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let values = args[1..]
        .iter()
        .map(|key| Reply::Bulk(x.read(key).and_then(|e| e.shared()).map(|v| v.to_vec())))
        .collect();
    Reply::array(values)
}

/// `MSET key value [key value ...]`: sets all, clearing TTLs.
pub(crate) fn mset(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    if args.len().is_multiple_of(2) {
        return errors::wrong_args(x.fullname);
    }
    let values: Vec<Value> = args[2..]
        .iter_mut()
        .step_by(2)
        .map(|v| Value::new(core::mem::take(v)))
        .collect();
    let mut logged = Vec::with_capacity(args.len());
    logged.push(Piece::Bytes(b"MSET"));
    for (key, value) in args[1..].iter().step_by(2).zip(&values) {
        x.store.set(key, value.clone(), None);
        logged.extend([Piece::Bytes(key), Piece::Value(value)]);
    }
    x.log_args(&logged);
    for key in args[1..].iter().step_by(2) {
        x.notify(notify::STRING, "set", key);
    }
    Reply::ok()
}
