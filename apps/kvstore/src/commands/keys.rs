//! Keyspace commands: `DEL`/`UNLINK`, `EXISTS`, `TOUCH`, `TYPE`, `KEYS`,
//! `SCAN`, `RANDOMKEY`, `RENAME`/`RENAMENX`, `COPY`, `DBSIZE`,
//! `FLUSHALL`/`FLUSHDB`.

use alloc::vec::Vec;

use super::errors;
use super::exec::Exec;
use crate::glob;
use crate::notify;
use crate::num::{parse_i64, parse_u64};
use crate::resp::Reply;

/// `DEL key [key ...]`: how many existed; logs only those.
pub(crate) fn del(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let mut logged: Vec<&[u8]> = alloc::vec![b"DEL"];
    for key in &args[1..] {
        if x.exists(key) {
            x.store.remove(key);
            logged.push(key);
        }
    }
    let deleted = logged.len() as i64 - 1;
    if deleted > 0 {
        x.log(&logged);
        for key in &logged[1..] {
            x.notify(notify::GENERIC, "del", key);
        }
    }
    Reply::Integer(deleted)
}

/// `EXISTS key [key ...]`: how many of the named keys exist (a key named
/// twice counts twice).
pub(crate) fn exists(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let count = args[1..]
        .iter()
        .filter(|key| x.read_untouched(key).is_some())
        .count();
    Reply::Integer(count as i64)
}

/// `TYPE key`: `string`, `hash`, `list` or `set`, or `none` if missing.
pub(crate) fn type_of(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let kind = x.peek(&args[1]).map_or("none", |e| e.data().type_name());
    Reply::Simple(kind.into())
}

/// `KEYS pattern`: every live key matching the glob.
pub(crate) fn keys(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let pattern = &args[1];
    let all = pattern.as_slice() == b"*";
    let now = x.now;
    let loading = x.loading;
    let keys = x
        .store
        .iter()
        .filter(|(_, entry)| loading || !entry.is_expired(now))
        .filter(|(key, _)| all || glob::matches(pattern, key))
        .map(|(key, _)| Reply::bulk(key))
        .collect();
    Reply::array(keys)
}

/// `SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]`: the next cursor
/// (0 when done) and a batch of live keys. Every key that exists for the
/// whole scan is returned at least once (see [`crate::store::Store::scan`]).
pub(crate) fn scan(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let Some(cursor) = parse_u64(&args[1]) else {
        return Reply::error("ERR invalid cursor");
    };
    let ScanOptions {
        count,
        pattern,
        type_name,
    } = match ScanOptions::parse(&args[2..], true) {
        Ok(options) => options,
        Err(reply) => return reply,
    };
    let (next, batch) = x.store.scan(cursor, count);
    let keys = batch
        .into_iter()
        .filter(|key| pattern.is_none_or(|p| glob::matches(p, key)))
        .filter(|key| {
            x.store.get(key).is_some_and(|entry| {
                (x.loading || !entry.is_expired(x.now))
                    && type_name
                        .is_none_or(|t| t.eq_ignore_ascii_case(entry.data().type_name().as_bytes()))
            })
        })
        .map(Reply::bulk)
        .collect();
    Reply::array(alloc::vec![
        Reply::bulk(alloc::format!("{next}")),
        Reply::array(keys)
    ])
}

/// The options of `SCAN` and `HSCAN`: `[MATCH pattern] [COUNT count]`,
/// and `[TYPE type]` for `SCAN`, in any order, the last of each winning.
pub(super) struct ScanOptions<'a> {
    /// How many keys (or fields) a step examines, at least; 10 by default.
    pub count: usize,
    /// The glob names must match; `None` for all (`*` too).
    pub pattern: Option<&'a [u8]>,
    /// The type keys must have (`SCAN` only).
    pub type_name: Option<&'a [u8]>,
}

impl<'a> ScanOptions<'a> {
    /// Reads the options from `args` (what follows the cursor); `TYPE` is
    /// a syntax error unless `with_type`.
    pub fn parse(args: &'a [Vec<u8>], with_type: bool) -> Result<Self, Reply> {
        let mut options = ScanOptions {
            count: 10,
            pattern: None,
            type_name: None,
        };
        for pair in args.chunks(2) {
            let [option, value] = pair else {
                return Err(errors::syntax());
            };
            match option.to_ascii_uppercase().as_slice() {
                b"COUNT" => match parse_i64(value) {
                    Some(n) if n >= 1 => options.count = usize::try_from(n).unwrap_or(usize::MAX),
                    Some(_) => return Err(errors::syntax()),
                    None => return Err(errors::not_integer()),
                },
                b"MATCH" => {
                    options.pattern = (value.as_slice() != b"*").then_some(value.as_slice())
                }
                b"TYPE" if with_type => options.type_name = Some(value.as_slice()),
                _ => return Err(errors::syntax()),
            }
        }
        Ok(options)
    }
}

/// `DBSIZE`: number of keys.
pub(crate) fn dbsize(x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    Reply::Integer(x.store.len() as i64)
}

/// `FLUSHALL [ASYNC|SYNC]`: removes every key of every database;
/// `FLUSHDB [ASYNC|SYNC]`: of the client's database.
pub(crate) fn flush(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match args.get(1..) {
        Some([]) => {}
        Some([mode])
            if mode.eq_ignore_ascii_case(b"ASYNC") || mode.eq_ignore_ascii_case(b"SYNC") => {}
        _ => return errors::syntax(),
    }
    x.store.clear();
    x.tracking.flushed();
    if x.fullname == "flushall" {
        x.dbs_before.iter_mut().for_each(crate::store::Store::clear);
        x.dbs_after.iter_mut().for_each(crate::store::Store::clear);
        x.log([b"FLUSHALL"]);
        x.effects.mark_db_independent();
    } else {
        x.log([b"FLUSHDB"]);
    }
    Reply::ok()
}

/// `TOUCH key [key ...]`: how many of the named keys exist; each counts
/// as an access (`OBJECT IDLETIME`, the LRU and LFU eviction policies).
pub(crate) fn touch(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let count = args[1..].iter().filter(|key| x.exists(key)).count();
    Reply::Integer(count as i64)
}

/// How many random keys `RANDOMKEY` draws before it scans for a live one.
const RANDOMKEY_DRAWS: usize = 16;

/// `RANDOMKEY`: a live key picked at random, or nil for an empty keyspace.
pub(crate) fn randomkey(x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    // A few draws (O(log n) each), then a scan, so expired keys cannot
    // hide live ones.
    let len = x.store.len();
    if len == 0 {
        return Reply::Bulk(None);
    }
    let now = x.now;
    let live = |entry: &crate::store::Entry| !entry.is_expired(now);
    for _ in 0..RANDOMKEY_DRAWS {
        let random = x.next_random();
        let drawn = x
            .store
            .random_key(crate::store::Candidates::AllKeys, random);
        if let Some((key, _)) = drawn.filter(|(_, entry)| live(entry)) {
            return Reply::Bulk(Some(key.to_vec()));
        }
    }
    let pick = (x.next_random() % len as u64) as usize;
    let found = x
        .store
        .iter()
        .skip(pick)
        .chain(x.store.iter().take(pick))
        .find(|(_, entry)| live(entry))
        .map(|(key, _)| key.to_vec());
    Reply::Bulk(found)
}

/// `RENAME key newkey`: moves the value and its expiry.
pub(crate) fn rename(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match move_key(x, &args[1], &args[2], true) {
        Ok(_) => Reply::ok(),
        Err(reply) => reply,
    }
}

/// `RENAMENX key newkey`: like `RENAME`, only if `newkey` does not exist (1
/// if it moved, 0 if not).
pub(crate) fn renamenx(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match move_key(x, &args[1], &args[2], false) {
        Ok(moved) => Reply::Integer(i64::from(moved)),
        Err(reply) => reply,
    }
}

/// Moves `from` to `to` (over an existing `to` when `replace`); logged as
/// the absolute `DEL from` and `SET to value [PXAT at]`, which replay to
/// the same keys whatever a log rewrite captured first.
fn move_key(x: &mut Exec<'_>, from: &[u8], to: &[u8], replace: bool) -> Result<bool, Reply> {
    if !x.exists(from) {
        return Err(Reply::error("ERR no such key"));
    }
    if from == to {
        return Ok(replace);
    }
    if !replace && x.exists(to) {
        return Ok(false);
    }
    let entry = x.store.remove(from).expect("checked above");
    x.log([&b"DEL"[..], from]);
    log_set(x, to, &entry);
    let expire_at = entry.expire_at();
    x.store.set(to, entry.into_data(), expire_at);
    x.notify(notify::GENERIC, "rename_from", from);
    x.notify(notify::GENERIC, "rename_to", to);
    x.key_ready(to);
    Ok(true)
}

/// Logs what sets `key` to `entry` whatever the key held: `SET key <value>
/// [PXAT <expiry>]` for a string; for a hash or a list `DEL key`, then the
/// records that recreate it (see [`push_entry`](crate::aof::push_entry)).
pub(super) fn log_set(x: &mut Exec<'_>, key: &[u8], entry: &crate::store::Entry) {
    if x.loading {
        return;
    }
    if entry.shared().is_none() {
        x.log([&b"DEL"[..], key]);
    }
    crate::aof::push_entry(&mut x.effects, key, entry);
}

/// `COPY source destination [DB index] [REPLACE]`: 1 if copied, 0 if the
/// source is missing or the destination exists (without `REPLACE`). A
/// copy to another database is logged as a `SET` there, under a `SELECT`
/// of it.
pub(crate) fn copy(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let mut replace = false;
    let mut target = x.db;
    let mut i = 3;
    while i < args.len() {
        if args[i].eq_ignore_ascii_case(b"REPLACE") {
            replace = true;
            i += 1;
        } else if args[i].eq_ignore_ascii_case(b"DB") && i + 1 < args.len() {
            match errors::db_index(&args[i + 1]) {
                Ok(n) if (0..x.config.databases as i64).contains(&n) => target = n as usize,
                Ok(_) => return Reply::error("ERR DB index is out of range"),
                Err(reply) => return reply,
            }
            i += 2;
        } else {
            return errors::syntax();
        }
    }
    let (from, to) = (&args[1], &args[2]);
    if from == to && target == x.db {
        return Reply::error("ERR source and destination objects are the same");
    }
    let Some(entry) = x.live(from).cloned() else {
        return Reply::Integer(0);
    };
    if target == x.db {
        if !replace && x.exists(to) {
            return Reply::Integer(0);
        }
        log_set(x, to, &entry);
        let expire_at = entry.expire_at();
        x.store.set(to, entry.into_data(), expire_at);
        x.notify(notify::GENERIC, "copy_to", to);
        x.key_ready(to);
        return Reply::Integer(1);
    }
    let (now, loading) = (x.now, x.loading);
    let there = x.other_db(target).expect("checked range");
    if !replace && there.get(to).is_some_and(|e| loading || !e.is_expired(now)) {
        return Reply::Integer(0);
    }
    x.log([&b"SELECT"[..], &crate::num::format_i64(target as i64)]);
    log_set(x, to, &entry);
    x.log([&b"SELECT"[..], &crate::num::format_i64(x.db as i64)]);
    let expire_at = entry.expire_at();
    x.other_db(target)
        .expect("checked range")
        .set(to, entry.into_data(), expire_at);
    x.notify_in(target, notify::GENERIC, "copy_to", to);
    x.key_ready_in(target, to);
    Reply::Integer(1)
}

/// `MOVE key db`: moves the key (with its expiry) to another database; 1
/// if moved, 0 if it is missing here or exists there. Logged as `DEL` here
/// and a `SET` in the other database, under a `SELECT` of it.
pub(crate) fn move_to_db(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let target = match errors::db_index(&args[2]) {
        Ok(n) => n,
        Err(reply) => return reply,
    };
    if target < 0 || target as u64 >= x.config.databases as u64 {
        return Reply::error("ERR DB index is out of range");
    }
    let target = target as usize;
    if target == x.db {
        return Reply::error("ERR source and destination objects are the same");
    }
    let key = &args[1];
    if !x.exists(key) {
        return Reply::Integer(0);
    }
    let (now, loading) = (x.now, x.loading);
    let there = x.other_db(target).expect("checked range");
    if there
        .get(key)
        .is_some_and(|e| loading || !e.is_expired(now))
    {
        return Reply::Integer(0);
    }
    let entry = x.store.remove(key).expect("exists");
    x.log([&b"DEL"[..], key]);
    x.log([&b"SELECT"[..], &crate::num::format_i64(target as i64)]);
    log_set(x, key, &entry);
    x.log([&b"SELECT"[..], &crate::num::format_i64(x.db as i64)]);
    let expire_at = entry.expire_at();
    x.other_db(target)
        .expect("checked range")
        .set(key, entry.into_data(), expire_at);
    x.notify(notify::GENERIC, "move_from", key);
    x.notify_in(target, notify::GENERIC, "move_to", key);
    x.key_ready_in(target, key);
    Reply::Integer(1)
}
