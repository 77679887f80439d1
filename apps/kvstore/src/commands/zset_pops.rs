//! Pops from several sorted sets: `ZMPOP`, and the blocking forms
//! `BZPOPMIN`, `BZPOPMAX`, `BZMPOP`, which wait through
//! `kvstore::blocking` exactly as `BLPOP` does (the waiter's kind is
//! `zset`; a `ZADD` that creates a waited key serves it).

use alloc::vec::Vec;

use super::exec::Exec;
use super::list_moves::pop_first_or_wait;
use super::multi_pop;
use super::zsets::{oom, pop_members, score_reply};
use crate::resp::Reply;

/// `MIN|MAX` as whether to pop the highest scores.
fn parse_min_max(arg: &[u8]) -> Option<bool> {
    if arg.eq_ignore_ascii_case(b"MIN") {
        Some(false)
    } else if arg.eq_ignore_ascii_case(b"MAX") {
        Some(true)
    } else {
        None
    }
}

/// `ZMPOP`'s type: sorted sets, popped as `[member, score]` pairs.
const ZSETS: multi_pop::Kind<bool> = multi_pop::Kind {
    name: "zset",
    holds: |x, key| Ok(x.live_zset(key)?.is_some()),
    pop: |x, key, request| {
        let popped = pop_members(x, key, request.side, request.count)?;
        let mut pairs = Vec::new();
        pairs.try_reserve_exact(popped.len()).map_err(|_| oom())?;
        for (member, score) in popped {
            pairs.push(Reply::array(alloc::vec![
                Reply::Bulk(Some(member)),
                score_reply(score)
            ]));
        }
        Ok(pairs)
    },
};

/// `ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]`: pops up to
/// `count` members from the first non-empty sorted set; its key and the
/// members with their scores, or a null array.
pub(crate) fn zmpop(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    multi_pop::serve(x, args, false, parse_min_max, &ZSETS)
}

/// `BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]`: `ZMPOP`,
/// waiting up to `timeout` seconds (0: forever) for one of the keys to
/// get a sorted set (a null array when the time runs out).
pub(crate) fn bzmpop(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    multi_pop::serve(x, args, true, parse_min_max, &ZSETS)
}

/// `BZPOPMIN key [key ...] timeout`: pops the lowest-scored member of the
/// first non-empty sorted set, waiting up to `timeout` seconds (0:
/// forever) if there is none: `[key, member, score]`, or a null array.
pub(crate) fn bzpopmin(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    blocking_pop(x, args, false)
}

/// `BZPOPMAX key [key ...] timeout`: `BZPOPMIN` of the highest score.
pub(crate) fn bzpopmax(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    blocking_pop(x, args, true)
}

fn blocking_pop(x: &mut Exec<'_>, args: &[Vec<u8>], max: bool) -> Reply {
    pop_first_or_wait(x, args, "zset", |x, key| {
        if x.live_zset(key)?.is_none() {
            return Ok(None);
        }
        Ok(Some(match pop_members(x, key, max, 1)?.pop() {
            Some((member, score)) => Reply::array(alloc::vec![
                Reply::bulk(key.to_vec()),
                Reply::Bulk(Some(member)),
                score_reply(score),
            ]),
            None => Reply::Array(None),
        }))
    })
}
