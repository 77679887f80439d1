//! Keyspace commands: `DEL`, `EXISTS`, `TYPE`, `KEYS`, `SCAN`, `DBSIZE`,
//! `FLUSHALL`/`FLUSHDB`.

use alloc::vec::Vec;

use super::errors;
use super::exec::Exec;
use crate::glob;
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
    if logged.len() > 1 {
        x.log(&logged);
    }
    Reply::Integer(logged.len() as i64 - 1)
}

/// `EXISTS key [key ...]`: how many of the named keys exist (a key named
/// twice counts twice).
pub(crate) fn exists(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let count = args[1..].iter().filter(|key| x.read(key).is_some()).count();
    Reply::Integer(count as i64)
}

/// `TYPE key`: `string`, or `none` if missing (strings are the only type).
pub(crate) fn type_of(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let kind = if x.exists(&args[1]) { "string" } else { "none" };
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
    let mut count = 10usize;
    let mut pattern: Option<&[u8]> = None;
    let mut strings_only = true;
    let mut i = 2;
    while i < args.len() {
        let (Some(value), option) = (args.get(i + 1), args[i].to_ascii_uppercase()) else {
            return errors::syntax();
        };
        match option.as_slice() {
            b"COUNT" => match parse_i64(value) {
                Some(n) if n >= 1 => count = usize::try_from(n).unwrap_or(usize::MAX),
                Some(_) => return errors::syntax(),
                None => return errors::not_integer(),
            },
            b"MATCH" => pattern = (value.as_slice() != b"*").then_some(value.as_slice()),
            b"TYPE" => strings_only = value.eq_ignore_ascii_case(b"string"),
            _ => return errors::syntax(),
        }
        i += 2;
    }
    let (next, batch) = x.store.scan(cursor, count);
    let keys = batch
        .into_iter()
        .filter(|_| strings_only)
        .filter(|key| pattern.is_none_or(|p| glob::matches(p, key)))
        .filter(|key| {
            x.loading
                || x.store
                    .get(key)
                    .is_some_and(|entry| !entry.is_expired(x.now))
        })
        .map(Reply::bulk)
        .collect();
    Reply::array(alloc::vec![
        Reply::bulk(alloc::format!("{next}")),
        Reply::array(keys)
    ])
}

/// `DBSIZE`: number of keys.
pub(crate) fn dbsize(x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    Reply::Integer(x.store.len() as i64)
}

/// `FLUSHALL [ASYNC|SYNC]` and `FLUSHDB [ASYNC|SYNC]`: remove every key.
/// With a single database the two are the same; both log `FLUSHALL`.
pub(crate) fn flush(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match args.get(1..) {
        Some([]) => {}
        Some([mode])
            if mode.eq_ignore_ascii_case(b"ASYNC") || mode.eq_ignore_ascii_case(b"SYNC") => {}
        _ => return errors::syntax(),
    }
    x.store.clear();
    x.log([b"FLUSHALL"]);
    Reply::ok()
}
