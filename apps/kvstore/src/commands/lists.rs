//! List commands: `LPUSH`, `RPUSH`, `LPUSHX`, `RPUSHX`, `LPOP`, `RPOP`,
//! `LLEN`, `LRANGE`, `LINDEX`, `LSET`, `LINSERT`, `LREM`, `LTRIM`, `LPOS`
//! (moves between lists and the blocking forms are in `list_moves`).
//!
//! # What gets logged
//!
//! | command                              | logged as                        |
//! |--------------------------------------|----------------------------------|
//! | `LPUSH`, `LPUSHX` (if the key exists) | `LPUSH key element ...`         |
//! | `RPUSH`, `RPUSHX` (if the key exists) | `RPUSH key element ...`         |
//! | `LPOP key` / `LPOP key count`        | `LPOP key` / `LPOP key <popped>` (`RPOP` alike), if it popped |
//! | `LSET`, `LINSERT`, `LREM`, `LTRIM`   | as given, if they changed the list |
//!
//! These replay to the same list over the state the log had when they were
//! written. One exception while a log rewrite runs: an `LSET` on a list
//! the rewrite's new log does not hold yet is logged as `DEL key` and the
//! records that recreate the whole list, since there it would replay onto
//! a missing key and fail (see `kvstore::aof::RewriteScan`).

use alloc::vec::Vec;

use super::errors;
use super::exec::{reply_fits, Exec};
use super::strings::copy_for_reply;
use crate::notify;
use crate::num::{format_i64, parse_i64};
use crate::resp::{Bulks, Reply};
use crate::store::{resolve_index, resolve_range, End, List, Store};

/// The reply when memory for a copy or a list's growth cannot be had.
pub(super) fn oom() -> Reply {
    Reply::error("OOM not enough memory for the list")
}

/// `LEFT` or `RIGHT`, any case.
pub(super) fn parse_end(arg: &[u8]) -> Option<End> {
    if arg.eq_ignore_ascii_case(b"LEFT") {
        Some(End::Left)
    } else if arg.eq_ignore_ascii_case(b"RIGHT") {
        Some(End::Right)
    } else {
        None
    }
}

/// The end's name as a log record writes it.
pub(super) fn end_name(end: End) -> &'static [u8] {
    match end {
        End::Left => b"LEFT",
        End::Right => b"RIGHT",
    }
}

/// The keyspace event of a pop at `end`.
pub(super) fn pop_event(end: End) -> &'static str {
    match end {
        End::Left => "lpop",
        End::Right => "rpop",
    }
}

/// The keyspace event of a push at `end`.
pub(super) fn push_event(end: End) -> &'static str {
    match end {
        End::Left => "lpush",
        End::Right => "rpush",
    }
}

/// `LPUSH key element [element ...]`: adds the elements at the head, one
/// after the other (so the last ends up first); the new length.
pub(crate) fn lpush(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    push(x, args, End::Left, false)
}

/// `RPUSH key element [element ...]`: adds the elements at the tail; the
/// new length.
pub(crate) fn rpush(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    push(x, args, End::Right, false)
}

/// `LPUSHX key element [element ...]`: `LPUSH` only if the key holds a
/// list; 0 if it is missing.
pub(crate) fn lpushx(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    push(x, args, End::Left, true)
}

/// `RPUSHX key element [element ...]`: `RPUSH` only if the key holds a
/// list; 0 if it is missing.
pub(crate) fn rpushx(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    push(x, args, End::Right, true)
}

/// Pushes `args[2..]` (moved out of `args`) at `end` of the list
/// `args[1]`; with `only_existing`, nothing happens to a missing key.
fn push(x: &mut Exec<'_>, args: &mut [Vec<u8>], end: End, only_existing: bool) -> Reply {
    match x.live_list(&args[1]) {
        Err(reply) => return reply,
        Ok(None) if only_existing => return Reply::Integer(0),
        Ok(_) => {}
    }
    let (head, elements) = args.split_at_mut(2);
    let key = &head[1];
    let count = elements.len();
    let pushed = x.store.update_list(key, |list| -> Result<usize, ()> {
        list.try_reserve(count).map_err(|_| ())?;
        for element in elements.iter_mut() {
            list.push(end, core::mem::take(element));
        }
        Ok(list.len())
    });
    let len = match pushed {
        Some(Ok(len)) => len,
        Some(Err(_)) => return oom(),
        None => return errors::wrong_type(),
    };
    if !x.loading {
        // The elements now live in the list: log them from there, in the
        // order the command gave them.
        let list = x
            .store
            .get(key)
            .and_then(|e| e.list())
            .expect("just pushed");
        let name: &[u8] = match end {
            End::Left => b"LPUSH",
            End::Right => b"RPUSH",
        };
        let mut record: Vec<&[u8]> = Vec::with_capacity(2 + count);
        record.extend([name, key]);
        match end {
            End::Left => {
                // The first `count` elements, last pushed first (not
                // `take(count).rev()`: that walks the whole list from the
                // back, O(length) per push).
                record.extend(list.iter().take(count));
                record[2..].reverse();
            }
            End::Right => record.extend(list.iter().skip(len - count)),
        }
        x.effects.push(&record);
    }
    x.notify(notify::LIST, push_event(end), key);
    x.key_ready(key);
    Reply::Integer(len as i64)
}

/// `LPOP key [count]`: removes and returns the first element (nil if the
/// key is missing); with a count, an array of up to that many (a null
/// array if the key is missing).
pub(crate) fn lpop(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    pop(x, args, End::Left)
}

/// `RPOP key [count]`: `LPOP` from the tail.
pub(crate) fn rpop(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    pop(x, args, End::Right)
}

fn pop(x: &mut Exec<'_>, args: &mut [Vec<u8>], end: End) -> Reply {
    if args.len() > 3 {
        return errors::wrong_args(x.fullname);
    }
    let count = match args.get(2).map(|arg| parse_i64(arg)) {
        None => None,
        Some(Some(n)) if n >= 0 => Some(usize::try_from(n).unwrap_or(usize::MAX)),
        // Redis answers a count that is not a number as one below 0.
        Some(_) => return Reply::error("ERR value is out of range, must be positive"),
    };
    let key = &args[1];
    match x.live_list(key) {
        Err(reply) => return reply,
        Ok(None) if count.is_some() => return Reply::Array(None),
        Ok(None) => return Reply::nil(),
        Ok(Some(_)) => {}
    }
    match count {
        Some(0) => Reply::array(Vec::new()),
        Some(n) => match pop_elements(x, key, end, n, true) {
            Ok(popped) => Reply::array(popped.into_iter().map(|e| Reply::Bulk(Some(e))).collect()),
            Err(reply) => reply,
        },
        None => match pop_elements(x, key, end, 1, false) {
            Ok(mut popped) => Reply::Bulk(popped.pop()),
            Err(reply) => reply,
        },
    }
}

/// Pops up to `count` elements from `end` of the list at `key` (the
/// caller checked it is a list), in pop order; logs the pop (`LPOP key`,
/// or with the number popped when `with_count`) and notifies, `del` too if
/// the list went with its last element.
pub(super) fn pop_elements(
    x: &mut Exec<'_>,
    key: &[u8],
    end: End,
    count: usize,
    with_count: bool,
) -> Result<Vec<Vec<u8>>, Reply> {
    let len = x.store.get(key).and_then(|e| e.list()).map_or(0, List::len);
    let n = count.min(len);
    let mut popped = Vec::new();
    popped.try_reserve_exact(n).map_err(|_| oom())?;
    x.store.update_list(key, |list| {
        popped.extend(core::iter::from_fn(|| list.pop(end)).take(n));
    });
    let name: &[u8] = match end {
        End::Left => b"LPOP",
        End::Right => b"RPOP",
    };
    match with_count {
        true => x.log([name, key, &format_i64(n as i64)]),
        false => x.log([name, key]),
    }
    x.notify(notify::LIST, pop_event(end), key);
    if x.store.get(key).is_none() {
        x.emptied(key);
    }
    Ok(popped)
}

/// `LLEN key`: the number of elements, 0 if the key is missing.
pub(crate) fn llen(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match x.read_list(&args[1]) {
        Ok(list) => Reply::Integer(list.map_or(0, List::len) as i64),
        Err(reply) => reply,
    }
}

/// `LINDEX key index`: the element at the index (negative counts from the
/// tail), nil if there is none.
pub(crate) fn lindex(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let list = match x.read_list(&args[1]) {
        Ok(Some(list)) => list,
        Ok(None) => return Reply::nil(),
        Err(reply) => return reply,
    };
    let Some(index) = parse_i64(&args[2]) else {
        return errors::not_integer();
    };
    match resolve_index(index, list.len()).and_then(|i| list.get(i)) {
        Some(element) => match copy_for_reply(element) {
            Ok(copy) => Reply::Bulk(Some(copy)),
            Err(reply) => reply,
        },
        None => Reply::nil(),
    }
}

/// `LRANGE key start stop`: the elements from `start` to `stop` inclusive
/// (negative counts from the tail; out-of-range ends are clamped).
pub(crate) fn lrange(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let (Some(start), Some(stop)) = (parse_i64(&args[2]), parse_i64(&args[3])) else {
        return errors::not_integer();
    };
    match x.read_list(&args[1]) {
        Ok(Some(_)) => {}
        Ok(None) => return Reply::array(Vec::new()),
        Err(reply) => return reply,
    }
    let Some(list) = x.store.get(&args[1]).and_then(|e| e.list()) else {
        return Reply::array(Vec::new());
    };
    let Some((from, to)) = resolve_range(start, stop, list.len()) else {
        return Reply::array(Vec::new());
    };
    let bytes: u64 = list.range(from, to).map(|e| e.len() as u64).sum();
    if let Err(reply) = reply_fits(x.config, bytes) {
        return reply;
    }
    // One buffer for the whole reply, the elements encoded as they are
    // copied in.
    let Some(mut out) = Bulks::for_items(list.range(from, to)) else {
        return oom();
    };
    for element in list.range(from, to) {
        out.push(element);
    }
    Reply::Bulks(out)
}

/// `LSET key index element`: replaces the element at the index.
pub(crate) fn lset(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let len = match x.live_list(&args[1]) {
        Ok(Some(list)) => list.len(),
        Ok(None) => return Reply::error("ERR no such key"),
        Err(reply) => return reply,
    };
    let Some(index) = parse_i64(&args[2]) else {
        return errors::not_integer();
    };
    let Some(at) = resolve_index(index, len) else {
        return Reply::error("ERR index out of range");
    };
    // On a list the new log of a running rewrite does not hold yet, the
    // record would fail: the whole list is logged instead.
    let whole = x.rewrite_lags(&args[1]);
    if !whole {
        x.log(&args[..4]);
    }
    let element = core::mem::take(&mut args[3]);
    let key = &args[1];
    x.store.update_list(key, |list| list.set(at, element));
    if whole {
        x.log_whole(key);
    }
    x.notify(notify::LIST, "lset", key);
    Reply::ok()
}

/// `LINSERT key BEFORE|AFTER pivot element`: inserts the element next to
/// the first occurrence of the pivot; the new length, -1 if the pivot is
/// not there, 0 if the key is missing.
pub(crate) fn linsert(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let after = if args[2].eq_ignore_ascii_case(b"AFTER") {
        true
    } else if args[2].eq_ignore_ascii_case(b"BEFORE") {
        false
    } else {
        return errors::syntax();
    };
    let at = match x.live_list(&args[1]) {
        Ok(Some(list)) => match list.position(&args[3]) {
            Some(at) => at + usize::from(after),
            None => return Reply::Integer(-1),
        },
        Ok(None) => return Reply::Integer(0),
        Err(reply) => return reply,
    };
    x.log(&args[..5]);
    let element = core::mem::take(&mut args[4]);
    let key = &args[1];
    let len = x.store.update_list(key, |list| match list.try_reserve(1) {
        Ok(()) => {
            list.insert(at, element);
            Ok(list.len())
        }
        Err(_) => Err(oom()),
    });
    match len {
        Some(Ok(len)) => {
            x.notify(notify::LIST, "linsert", key);
            Reply::Integer(len as i64)
        }
        Some(Err(reply)) => reply,
        None => errors::wrong_type(),
    }
}

/// `LREM key count element`: removes occurrences of the element: the
/// first `count` from the head if positive, from the tail if negative,
/// every one if 0; how many went.
pub(crate) fn lrem(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let Some(count) = parse_i64(&args[2]) else {
        return errors::not_integer();
    };
    match x.live_list(&args[1]) {
        Ok(Some(_)) => {}
        Ok(None) => return Reply::Integer(0),
        Err(reply) => return reply,
    }
    let (key, element) = (&args[1], &args[3]);
    let from = if count < 0 { End::Right } else { End::Left };
    let limit = usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX);
    let removed = x
        .store
        .update_list(key, |list| list.remove_equal(element, limit, from))
        .unwrap_or(0);
    if removed > 0 {
        x.log(&args[..4]);
        x.notify(notify::LIST, "lrem", key);
        if x.store.get(key).is_none() {
            x.emptied(key);
        }
    }
    Reply::Integer(removed as i64)
}

/// `LTRIM key start stop`: keeps only the elements from `start` to `stop`
/// inclusive (as `LRANGE` reads them); the key goes if none is left.
pub(crate) fn ltrim(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let (Some(start), Some(stop)) = (parse_i64(&args[2]), parse_i64(&args[3])) else {
        return errors::not_integer();
    };
    let len = match x.live_list(&args[1]) {
        Ok(Some(list)) => list.len(),
        Ok(None) => return Reply::ok(),
        Err(reply) => return reply,
    };
    let key = &args[1];
    let kept = resolve_range(start, stop, len);
    let (from, to) = kept.unwrap_or((1, 0));
    x.store.update_list(key, |list| list.keep_range(from, to));
    let changed = kept.is_none_or(|(from, to)| to - from + 1 < len);
    if changed {
        x.log(&args[..4]);
    }
    x.notify(notify::LIST, "ltrim", key);
    if x.store.get(key).is_none() {
        x.emptied(key);
    }
    Reply::ok()
}

/// `LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]`: the
/// index of the first match (nil if none); `RANK n` skips to the n-th
/// match (negative: searching from the tail); `COUNT n` answers an array
/// of up to n matches (0: all); `MAXLEN n` compares at most n elements.
pub(crate) fn lpos(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let options = match LposOptions::parse(&args[3..]) {
        Ok(options) => options,
        Err(reply) => return reply,
    };
    let list = match x.read_list(&args[1]) {
        Ok(list) => list,
        Err(reply) => return reply,
    };
    let element = &args[2];
    let mut found = Vec::new();
    if let Some(list) = list {
        let len = list.len();
        let wanted = match options.count {
            Some(0) => usize::MAX,
            Some(n) => n,
            None => 1,
        };
        let compared = if options.maxlen == 0 {
            len
        } else {
            options.maxlen.min(len)
        };
        let mut skip = options.rank.unsigned_abs() - 1;
        let from_head = options.rank > 0;
        for i in 0..compared {
            let index = if from_head { i } else { len - 1 - i };
            let item = list.get(index).unwrap_or_default();
            if found.len() >= wanted {
                break;
            }
            if item != element.as_slice() {
                continue;
            }
            if skip > 0 {
                skip -= 1;
                continue;
            }
            if found.try_reserve(1).is_err() {
                return oom();
            }
            found.push(index);
        }
    }
    match options.count {
        Some(_) => Reply::array(
            found
                .into_iter()
                .map(|i| Reply::Integer(i as i64))
                .collect(),
        ),
        None => match found.first() {
            Some(&i) => Reply::Integer(i as i64),
            None => Reply::nil(),
        },
    }
}

/// `LPOS`'s options.
struct LposOptions {
    /// Which match to start from: 1 the first, -1 the last.
    rank: i64,
    /// `COUNT`: how many matches to answer as an array (0: all).
    count: Option<usize>,
    /// `MAXLEN`: how many elements to compare at most (0: all).
    maxlen: usize,
}

impl LposOptions {
    fn parse(args: &[Vec<u8>]) -> Result<Self, Reply> {
        let mut options = LposOptions {
            rank: 1,
            count: None,
            maxlen: 0,
        };
        let mut rest = args.chunks(2);
        for pair in rest.by_ref() {
            let [name, value] = pair else {
                return Err(errors::syntax());
            };
            let number = parse_i64(value);
            if name.eq_ignore_ascii_case(b"RANK") {
                options.rank = match number {
                    None => return Err(errors::not_integer()),
                    Some(i64::MIN) => {
                        return Err(Reply::error(
                            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
                        ))
                    }
                    Some(0) => {
                        return Err(Reply::error(
                            "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
                        ))
                    }
                    Some(n) => n,
                };
            } else if name.eq_ignore_ascii_case(b"COUNT") {
                options.count = Some(non_negative(number, "COUNT")?);
            } else if name.eq_ignore_ascii_case(b"MAXLEN") {
                options.maxlen = non_negative(number, "MAXLEN")?;
            } else {
                return Err(errors::syntax());
            }
        }
        Ok(options)
    }
}

/// A count option that must not be negative, named in the error (which
/// Redis also gives for one that is not a number: found by the
/// differential test).
fn non_negative(number: Option<i64>, name: &str) -> Result<usize, Reply> {
    match number {
        Some(n) if n >= 0 => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
        _ => Err(Reply::Error(alloc::format!("ERR {name} can't be negative"))),
    }
}

/// Growth of `LPUSH key element [element ...]` (and `RPUSH`, `LPUSHX`,
/// `RPUSHX`): each element's cost, plus the key's own if it is missing.
pub(crate) fn push_growth(
    store: &Store,
    _limits: &crate::config::Config,
    args: &[Vec<u8>],
) -> usize {
    let elements: usize = args[2..].iter().map(|e| List::element_cost(e.len())).sum();
    match store.get(&args[1]) {
        Some(_) => elements,
        None => Store::cost(args[1].len(), elements),
    }
}

/// Growth of `LINSERT key where pivot element`: one element.
pub(crate) fn linsert_growth(
    _store: &Store,
    _limits: &crate::config::Config,
    args: &[Vec<u8>],
) -> usize {
    List::element_cost(args[4].len())
}

/// Growth of `LSET key index element`: at most the new element's bytes.
pub(crate) fn lset_growth(
    _store: &Store,
    _limits: &crate::config::Config,
    args: &[Vec<u8>],
) -> usize {
    args[3].len()
}
