//! Commands that move elements between lists or pop from several:
//! `RPOPLPUSH`, `LMOVE`, `LMPOP`, and the blocking forms `BLPOP`,
//! `BRPOP`, `BRPOPLPUSH`, `BLMOVE`, `BLMPOP`.
//!
//! A blocking command that finds every key empty makes its client wait
//! (see `kvstore::blocking`): the engine runs it again when a key gets a
//! list, first come first served, and it is then logged as what it did
//! there. Inside `EXEC` it answers like its non-blocking form, nil when
//! nothing is there.
//!
//! # What gets logged
//!
//! | command                                 | logged as                  |
//! |-----------------------------------------|----------------------------|
//! | `RPOPLPUSH`, `LMOVE`, `BRPOPLPUSH`, `BLMOVE` (if it moved) | `LMOVE src dst LEFT\|RIGHT LEFT\|RIGHT` |
//! | `BLPOP` / `BRPOP` (if it popped)        | `LPOP key` / `RPOP key`    |
//! | `LMPOP`, `BLMPOP` (if it popped)        | `LPOP key <popped>` / `RPOP key <popped>` |
//!
//! While a log rewrite runs and its new log does not hold the source yet,
//! a move between two lists is logged as its pop and its push instead
//! (see `kvstore::aof::RewriteScan`).

use alloc::vec::Vec;

use super::errors;
use super::exec::Exec;
use super::lists::{end_name, oom, parse_end, pop_elements, pop_event, push_event};
use super::multi_pop;
use super::string_ops::parse_float;
use super::strings::copy_for_reply;
use crate::blocking::Wait;
use crate::notify;
use crate::resp::Reply;
use crate::store::{End, Store};

/// `RPOPLPUSH source destination`: `LMOVE source destination RIGHT LEFT`.
pub(crate) fn rpoplpush(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    lmove_now(x, &args[1], &args[2], End::Right, End::Left)
}

/// `LMOVE source destination LEFT|RIGHT LEFT|RIGHT`: pops an element from
/// one end of the source and pushes it at one end of the destination; the
/// element, or nil if the source is missing.
pub(crate) fn lmove(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let (Some(from), Some(to)) = (parse_end(&args[3]), parse_end(&args[4])) else {
        return errors::syntax();
    };
    lmove_now(x, &args[1], &args[2], from, to)
}

/// The move of `LMOVE`: nil if `src` is missing, `WRONGTYPE` if either
/// key holds another type.
fn lmove_now(x: &mut Exec<'_>, src: &[u8], dst: &[u8], from: End, to: End) -> Reply {
    let element = match x.live_list(src) {
        Ok(Some(list)) => {
            let at = if from == End::Left {
                0
            } else {
                list.len().saturating_sub(1)
            };
            list.get(at).map(copy_for_reply)
        }
        Ok(None) => return Reply::nil(),
        Err(reply) => return reply,
    };
    if let Err(reply) = x.live_list(dst) {
        return reply;
    }
    let reply = match element {
        Some(Ok(copy)) => copy,
        Some(Err(reply)) => return reply,
        None => return Reply::nil(),
    };
    let moved = if src == dst {
        // One list: it never empties, and keeps its expiry.
        x.store.update_list(src, |list| match list.try_reserve(1) {
            Ok(()) => {
                if let Some(element) = list.pop(from) {
                    list.push(to, element);
                }
                true
            }
            Err(_) => false,
        })
    } else {
        let element = x.store.update_list(src, |list| list.pop(from)).flatten();
        element.and_then(|element| {
            x.store.update_list(dst, |list| match list.try_reserve(1) {
                Ok(()) => {
                    list.push(to, element);
                    true
                }
                Err(_) => false,
            })
        })
    };
    if moved != Some(true) {
        return oom();
    }
    if src != dst && x.rewrite_lags(src) && !x.loading {
        // The running rewrite's new log does not hold `src` yet: there an
        // `LMOVE` would find nothing to move into `dst`. Logged as the pop
        // and the push, the element taken from where it now is.
        let pop: &[u8] = match from {
            End::Left => b"LPOP",
            End::Right => b"RPOP",
        };
        x.log([pop, src]);
        let list = x
            .store
            .get(dst)
            .and_then(|e| e.list())
            .expect("just pushed");
        let element = match to {
            End::Left => list.get(0),
            End::Right => list.get(list.len() - 1),
        };
        let push: &[u8] = match to {
            End::Left => b"LPUSH",
            End::Right => b"RPUSH",
        };
        x.effects.push([push, dst, element.expect("just pushed")]);
    } else {
        x.log([&b"LMOVE"[..], src, dst, end_name(from), end_name(to)]);
    }
    x.notify(notify::LIST, push_event(to), dst);
    x.notify(notify::LIST, pop_event(from), src);
    if x.store.get(src).is_none() {
        x.emptied(src);
    }
    x.key_ready(dst);
    Reply::Bulk(Some(reply))
}

/// `LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]`: pops up to
/// `count` (default 1) elements from the first of the keys that holds a
/// list; `[key, [elements]]`, or a null array if none does.
pub(crate) fn lmpop(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    multi_pop::serve(x, args, false, parse_end, &LISTS)
}

/// `BLPOP key [key ...] timeout`: pops the first element of the first of
/// the keys that holds a list, `[key, element]`; if none does, waits up to
/// `timeout` seconds (0: forever) for one to get a list (a null array
/// when the time runs out).
pub(crate) fn blpop(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    blocking_pop(x, args, End::Left)
}

/// `BRPOP key [key ...] timeout`: `BLPOP` from the tail.
pub(crate) fn brpop(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    blocking_pop(x, args, End::Right)
}

fn blocking_pop(x: &mut Exec<'_>, args: &mut [Vec<u8>], end: End) -> Reply {
    pop_first_or_wait(x, args, "list", |x, key| {
        if x.live_list(key)?.is_none() {
            return Ok(None);
        }
        let mut popped = pop_elements(x, key, end, 1, false)?;
        Ok(Some(Reply::array(alloc::vec![
            Reply::bulk(key.to_vec()),
            Reply::Bulk(popped.pop()),
        ])))
    })
}

/// The walk every single-key blocking pop (`BLPOP`, `BZPOPMIN`, ...)
/// shares: `args` are the command, its keys and the timeout; `pop` answers
/// for the first key that holds a `kind` value (`None` when it holds
/// none), and with no such key the client waits for one until the timeout
/// (a nil array).
pub(super) fn pop_first_or_wait(
    x: &mut Exec<'_>,
    args: &[Vec<u8>],
    kind: &'static str,
    mut pop: impl FnMut(&mut Exec<'_>, &[u8]) -> Result<Option<Reply>, Reply>,
) -> Reply {
    let last = args.len() - 1;
    let deadline = match parse_timeout(&args[last], x.now) {
        Ok(deadline) => deadline,
        Err(reply) => return reply,
    };
    let keys = &args[1..last];
    for key in keys {
        match pop(x, key) {
            Ok(Some(reply)) => return reply,
            Ok(None) => {}
            Err(reply) => return reply,
        }
    }
    wait_or_nil(x, keys, deadline, kind, Reply::Array(None))
}

/// `BRPOPLPUSH source destination timeout`: `BLMOVE source destination
/// RIGHT LEFT timeout`.
pub(crate) fn brpoplpush(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let deadline = match parse_timeout(&args[3], x.now) {
        Ok(deadline) => deadline,
        Err(reply) => return reply,
    };
    blocking_move(x, args, End::Right, End::Left, deadline)
}

/// `BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout`: `LMOVE`,
/// waiting up to `timeout` seconds (0: forever) for the source to get a
/// list if it is missing (nil when the time runs out).
pub(crate) fn blmove(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let (Some(from), Some(to)) = (parse_end(&args[3]), parse_end(&args[4])) else {
        return errors::syntax();
    };
    let deadline = match parse_timeout(&args[5], x.now) {
        Ok(deadline) => deadline,
        Err(reply) => return reply,
    };
    blocking_move(x, args, from, to, deadline)
}

fn blocking_move(
    x: &mut Exec<'_>,
    args: &[Vec<u8>],
    from: End,
    to: End,
    deadline: Option<u64>,
) -> Reply {
    match x.live_list(&args[1]) {
        Ok(Some(_)) => lmove_now(x, &args[1], &args[2], from, to),
        // The destination's type is checked once there is something to
        // move, as Redis does.
        Ok(None) => wait_or_nil(x, &args[1..2], deadline, "list", Reply::nil()),
        Err(reply) => reply,
    }
}

/// `BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]`:
/// `LMPOP`, waiting up to `timeout` seconds (0: forever) for one of the
/// keys to get a list if none holds one (a null array when the time runs
/// out).
pub(crate) fn blmpop(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    multi_pop::serve(x, args, true, parse_end, &LISTS)
}

/// `LMPOP`'s type: lists, popped as bulk strings.
const LISTS: multi_pop::Kind<End> = multi_pop::Kind {
    name: "list",
    holds: |x, key| Ok(x.live_list(key)?.is_some()),
    pop: |x, key, request| {
        let popped = pop_elements(x, key, request.side, request.count, true)?;
        Ok(popped.into_iter().map(|e| Reply::Bulk(Some(e))).collect())
    },
};

/// Nothing to serve now: the client waits on `keys` until `deadline` for
/// a value of `kind`, if it may block here (answered `nil` when the time
/// runs out); else (inside `EXEC`) the answer is `nil` at once.
pub(super) fn wait_or_nil(
    x: &mut Exec<'_>,
    keys: &[Vec<u8>],
    deadline: Option<u64>,
    kind: &'static str,
    nil: Reply,
) -> Reply {
    if !x.may_block {
        return nil;
    }
    let mut waited = Vec::new();
    if waited.try_reserve_exact(keys.len()).is_err() {
        return oom();
    }
    waited.extend(keys.iter().cloned());
    x.block_on(Wait {
        keys: waited,
        kind,
        deadline,
        timeout_reply: nil.clone(),
        group: None,
    });
    nil
}

/// A blocking command's timeout: seconds as a decimal number, 0 meaning
/// forever; the absolute deadline in milliseconds (rounded up), `None`
/// for forever. Errors as Redis words them.
pub(super) fn parse_timeout(arg: &[u8], now: u64) -> Result<Option<u64>, Reply> {
    let seconds = match parse_float(arg) {
        Some(s) if !s.is_nan() => s,
        _ => return Err(Reply::error("ERR timeout is not a float or out of range")),
    };
    let ms = seconds * 1000.0;
    if ms > i64::MAX as f64 {
        return Err(Reply::error("ERR timeout is out of range"));
    }
    let ms = libm_ceil(ms);
    if ms < 0.0 {
        return Err(Reply::error("ERR timeout is negative"));
    }
    if ms == 0.0 {
        return Ok(None);
    }
    match now
        .checked_add(ms as u64)
        .filter(|at| *at <= i64::MAX as u64)
    {
        Some(at) => Ok(Some(at)),
        None => Err(Reply::error("ERR timeout is out of range")),
    }
}

/// `ceil` without `std`: the smallest whole number at least `v` (for the
/// finite, in-range values [`parse_timeout`] passes).
fn libm_ceil(v: f64) -> f64 {
    let truncated = v as i64 as f64;
    if truncated < v {
        truncated + 1.0
    } else {
        truncated
    }
}

/// Growth of `LMOVE source destination ...` (and `RPOPLPUSH`, `BLMOVE`,
/// `BRPOPLPUSH`): the destination key's cost if it is missing; the
/// element only moves.
pub(crate) fn lmove_growth(
    store: &Store,
    _limits: &crate::config::Config,
    args: &[Vec<u8>],
) -> usize {
    match store.get(&args[2]) {
        Some(_) => 0,
        None => Store::cost(args[2].len(), 0),
    }
}
