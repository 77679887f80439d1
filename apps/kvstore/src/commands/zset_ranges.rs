//! Sorted-set range commands: `ZRANGE` (by rank, `BYSCORE`, `BYLEX`,
//! `REV`, `LIMIT`, `WITHSCORES`) and its older forms (`ZRANGEBYSCORE`,
//! `ZREVRANGEBYSCORE`, `ZRANGEBYLEX`, `ZREVRANGEBYLEX`, `ZREVRANGE`),
//! `ZRANGESTORE`, `ZCOUNT`, `ZLEXCOUNT` and `ZREMRANGEBYRANK|SCORE|LEX`.
//!
//! Every range becomes a span of ranks first: a score or lex bound is
//! the number of members before it ([`Zset::count_while`]), so a range
//! costs O(log n) to find plus the members it returns.

use alloc::vec::Vec;

use super::errors;
use super::exec::Exec;
use super::zsets::{copy_member, limits, log_removal, members_reply, oom};
use crate::aof::push_entry;
use crate::config::Config;
use crate::notify;
use crate::num::parse_i64;
use crate::resp::Reply;
use crate::store::{Store, Zset};

/// One end of a score range: `5`, `(5` (exclusive), `-inf`, `+inf`.
#[derive(Clone, Copy)]
struct ScoreBound {
    score: f64,
    exclusive: bool,
}

impl ScoreBound {
    /// Reads a bound as Redis does (C's `strtod` over the whole text, NaN
    /// refused): unlike a score to store, a bound past a double's range is
    /// an infinity, and an empty one is 0.
    fn parse(arg: &[u8]) -> Option<Self> {
        let (text, exclusive) = match arg.strip_prefix(b"(") {
            Some(rest) => (rest, true),
            None => (arg, false),
        };
        let score = match text {
            [] => 0.0,
            _ => super::string_ops::parse_float(text)?,
        };
        (!score.is_nan()).then_some(ScoreBound { score, exclusive })
    }
}

/// One end of a lex range: `-`, `+`, `[a` (inclusive), `(a` (exclusive).
#[derive(Clone)]
enum LexBound<'a> {
    Lowest,
    Highest,
    Inclusive(&'a [u8]),
    Exclusive(&'a [u8]),
}

impl<'a> LexBound<'a> {
    fn parse(arg: &'a [u8]) -> Option<Self> {
        match arg.split_first() {
            Some((b'-', [])) => Some(LexBound::Lowest),
            Some((b'+', [])) => Some(LexBound::Highest),
            Some((b'[', rest)) => Some(LexBound::Inclusive(rest)),
            Some((b'(', rest)) => Some(LexBound::Exclusive(rest)),
            _ => None,
        }
    }
}

/// What a range selects, its ends already parsed.
enum Bounds<'a> {
    Rank(i64, i64),
    Score(ScoreBound, ScoreBound),
    Lex(LexBound<'a>, LexBound<'a>),
}

impl Bounds<'_> {
    /// The ranks `[from, to)` the range covers in `zset` (ascending; a
    /// reversed rank range is turned around by the caller).
    fn ranks(&self, zset: &Zset, reverse: bool) -> (usize, usize) {
        let len = zset.len();
        match self {
            Bounds::Rank(start, stop) => {
                let len_i = len as i64;
                let mut start = if *start < 0 { start + len_i } else { *start };
                let mut stop = if *stop < 0 { stop + len_i } else { *stop };
                start = start.max(0);
                if start > stop || start >= len_i {
                    return (0, 0);
                }
                stop = stop.min(len_i - 1);
                if reverse {
                    ((len_i - 1 - stop) as usize, (len_i - start) as usize)
                } else {
                    (start as usize, stop as usize + 1)
                }
            }
            Bounds::Score(min, max) => {
                let from = match min.exclusive {
                    true => zset.count_while(&|s, _| s <= min.score),
                    false => zset.count_while(&|s, _| s < min.score),
                };
                let to = match max.exclusive {
                    true => zset.count_while(&|s, _| s < max.score),
                    false => zset.count_while(&|s, _| s <= max.score),
                };
                (from, to.max(from))
            }
            Bounds::Lex(min, max) => {
                let from = match min {
                    LexBound::Lowest => 0,
                    LexBound::Highest => len,
                    LexBound::Inclusive(m) => zset.count_while_by_rank(&|e| e < *m),
                    LexBound::Exclusive(m) => zset.count_while_by_rank(&|e| e <= *m),
                };
                let to = match max {
                    LexBound::Lowest => 0,
                    LexBound::Highest => len,
                    LexBound::Inclusive(m) => zset.count_while_by_rank(&|e| e <= *m),
                    LexBound::Exclusive(m) => zset.count_while_by_rank(&|e| e < *m),
                };
                (from, to.max(from))
            }
        }
    }
}

/// How the range arguments are read: by rank, score or lex.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Rank,
    Score,
    Lex,
}

/// Reads a range of `kind` from its two arguments (in the order the
/// command takes them: `max min` when `reverse` by score or lex).
fn parse_bounds<'a>(
    kind: Kind,
    first: &'a [u8],
    second: &'a [u8],
    reverse: bool,
) -> Result<Bounds<'a>, Reply> {
    let (min, max) = if reverse && kind != Kind::Rank {
        (second, first)
    } else {
        (first, second)
    };
    match kind {
        Kind::Rank => match (parse_i64(min), parse_i64(max)) {
            (Some(start), Some(stop)) => Ok(Bounds::Rank(start, stop)),
            _ => Err(errors::not_integer()),
        },
        Kind::Score => match (ScoreBound::parse(min), ScoreBound::parse(max)) {
            (Some(min), Some(max)) => Ok(Bounds::Score(min, max)),
            _ => Err(Reply::error("ERR min or max is not a float")),
        },
        Kind::Lex => match (LexBound::parse(min), LexBound::parse(max)) {
            (Some(min), Some(max)) => Ok(Bounds::Lex(min, max)),
            _ => Err(Reply::error("ERR min or max not valid string range item")),
        },
    }
}

/// A whole range request: what `ZRANGE`'s options and its older forms
/// say.
struct Request<'a> {
    bounds: Bounds<'a>,
    reverse: bool,
    offset: i64,
    /// How many at most; negative: all.
    limit: i64,
    with_scores: bool,
}

/// Which options a range command accepts.
const BY: u8 = 1;
const REV: u8 = 2;
const LIMIT: u8 = 4;
const WITHSCORES: u8 = 8;

/// Parses `args[at..]` (`min max [options]`) for a command of `kind`
/// (overridden by `BYSCORE`/`BYLEX` where `allowed`), with Redis's
/// errors in Redis's order.
fn parse_request(
    args: &[Vec<u8>],
    at: usize,
    mut kind: Kind,
    mut reverse: bool,
    allowed: u8,
) -> Result<Request<'_>, Reply> {
    let (mut offset, mut limit, mut with_scores) = (0, -1, false);
    let mut rest = args[at + 2..].iter();
    while let Some(option) = rest.next() {
        let upper = option.to_ascii_uppercase();
        match upper.as_slice() {
            b"WITHSCORES" if allowed & WITHSCORES != 0 => with_scores = true,
            b"LIMIT" if allowed & LIMIT != 0 && rest.len() >= 2 => {
                let (Some(o), Some(l)) = (
                    rest.next().and_then(|v| parse_i64(v)),
                    rest.next().and_then(|v| parse_i64(v)),
                ) else {
                    return Err(errors::not_integer());
                };
                (offset, limit) = (o, l);
            }
            b"BYSCORE" if allowed & BY != 0 => kind = Kind::Score,
            b"BYLEX" if allowed & BY != 0 => kind = Kind::Lex,
            b"REV" if allowed & REV != 0 => reverse = true,
            _ => return Err(errors::syntax()),
        }
    }
    if with_scores && kind == Kind::Lex {
        return Err(Reply::error(
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    // Redis refuses LIMIT on a range by rank only when its count is not
    // -1 (found by the differential test: `LIMIT -100 -1` is accepted).
    if limit != -1 && kind == Kind::Rank {
        return Err(Reply::error(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    let bounds = parse_bounds(kind, &args[at], &args[at + 1], reverse)?;
    Ok(Request {
        bounds,
        reverse,
        offset,
        limit,
        with_scores,
    })
}

/// The members `request` selects from `zset`, in reply order.
fn select<'z>(zset: &'z Zset, request: &Request<'_>) -> Result<Vec<(&'z [u8], f64)>, Reply> {
    let (from, to) = request.bounds.ranks(zset, request.reverse);
    if request.offset < 0 {
        return Ok(Vec::new());
    }
    let span = to - from;
    let skip = usize::try_from(request.offset)
        .unwrap_or(usize::MAX)
        .min(span);
    let take = match usize::try_from(request.limit) {
        Ok(limit) => limit.min(span - skip),
        Err(_) => span - skip,
    };
    let mut out = Vec::new();
    out.try_reserve_exact(take).map_err(|_| oom())?;
    if take == 0 {
        return Ok(out);
    }
    if request.reverse {
        let top = to - skip;
        out.extend((top - take..top).rev().filter_map(|rank| zset.get(rank)));
    } else {
        let start = from + skip;
        out.extend(zset.range(start, start + take - 1).take(take));
    }
    Ok(out)
}

/// Answers a range read of `args[1]` (`args[2..]` the range and options).
fn read_range(x: &mut Exec<'_>, args: &[Vec<u8>], request: Result<Request<'_>, Reply>) -> Reply {
    let request = match request {
        Ok(request) => request,
        Err(reply) => return reply,
    };
    match x.read_zset(&args[1]) {
        Ok(Some(_)) => {}
        Ok(None) => return Reply::array(Vec::new()),
        Err(reply) => return reply,
    }
    let Some(zset) = x.store.get(&args[1]).and_then(|e| e.zset()) else {
        return Reply::array(Vec::new());
    };
    match select(zset, &request) {
        Ok(items) => members_reply(x.config, &items, request.with_scores),
        Err(reply) => reply,
    }
}

/// `ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count]
/// [WITHSCORES]`: the members in the range, lowest first (`REV`:
/// highest first, the range given as `max min` by score or lex).
pub(crate) fn zrange(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let request = parse_request(args, 2, Kind::Rank, false, BY | REV | LIMIT | WITHSCORES);
    read_range(x, args, request)
}

/// `ZREVRANGE key start stop [WITHSCORES]`: `ZRANGE ... REV` by rank.
pub(crate) fn zrevrange(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let request = parse_request(args, 2, Kind::Rank, true, WITHSCORES);
    read_range(x, args, request)
}

/// `ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count]`.
pub(crate) fn zrangebyscore(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let request = parse_request(args, 2, Kind::Score, false, LIMIT | WITHSCORES);
    read_range(x, args, request)
}

/// `ZREVRANGEBYSCORE key max min [WITHSCORES] [LIMIT offset count]`.
pub(crate) fn zrevrangebyscore(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let request = parse_request(args, 2, Kind::Score, true, LIMIT | WITHSCORES);
    read_range(x, args, request)
}

/// `ZRANGEBYLEX key min max [LIMIT offset count]`.
pub(crate) fn zrangebylex(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let request = parse_request(args, 2, Kind::Lex, false, LIMIT);
    read_range(x, args, request)
}

/// `ZREVRANGEBYLEX key max min [LIMIT offset count]`.
pub(crate) fn zrevrangebylex(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let request = parse_request(args, 2, Kind::Lex, true, LIMIT);
    read_range(x, args, request)
}

/// `ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset
/// count]`: stores the range as `dst` (replacing it; removing it if the
/// range is empty); how many members it got.
pub(crate) fn zrangestore(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let request = match parse_request(&args[1..], 2, Kind::Rank, false, BY | REV | LIMIT) {
        Ok(request) => request,
        Err(reply) => return reply,
    };
    let (dst, src) = (&args[1], &args[2]);
    if let Err(reply) = x.live_zset(src) {
        return reply;
    }
    let limits = limits(x);
    let result = match x.store.get(src).and_then(|e| e.zset()) {
        None => Ok(Zset::new()),
        Some(zset) => select(zset, &request).and_then(|items| {
            let longest = items.iter().map(|(m, _)| m.len()).max().unwrap_or(0);
            let mut out = Zset::for_size(items.len(), longest, limits);
            for (member, score) in items {
                out.insert(copy_member(member)?, score, limits)
                    .map_err(|_| oom())?;
            }
            Ok(out)
        }),
    };
    match result {
        Ok(zset) => store_result(x, dst, zset, "zrangestore"),
        Err(reply) => reply,
    }
}

/// Stores `zset` as `key` for a `Z*STORE` command (replacing whatever it
/// held and its expiry; removing it if `zset` is empty), logs `DEL key`
/// and the whole result, notifies `event` (or `del`); the member count.
pub(super) fn store_result(x: &mut Exec<'_>, key: &[u8], zset: Zset, event: &str) -> Reply {
    let len = zset.len();
    x.live(key);
    if len == 0 {
        if x.store.remove(key).is_some() {
            x.log([&b"DEL"[..], key]);
            x.notify(notify::GENERIC, "del", key);
        }
        return Reply::Integer(0);
    }
    x.store.set(key, zset, None);
    if !x.loading {
        x.log([&b"DEL"[..], key]);
        if let Some(entry) = x.store.get(key) {
            push_entry(&mut x.effects, key, entry);
        }
    }
    x.notify(notify::ZSET, event, key);
    x.key_ready(key);
    Reply::Integer(len as i64)
}

/// `ZCOUNT key min max`: how many members have a score in the range.
pub(crate) fn zcount(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    count(x, args, Kind::Score)
}

/// `ZLEXCOUNT key min max`: how many members are in the lex range.
pub(crate) fn zlexcount(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    count(x, args, Kind::Lex)
}

fn count(x: &mut Exec<'_>, args: &[Vec<u8>], kind: Kind) -> Reply {
    let bounds = match parse_bounds(kind, &args[2], &args[3], false) {
        Ok(bounds) => bounds,
        Err(reply) => return reply,
    };
    match x.read_zset(&args[1]) {
        Ok(Some(zset)) => {
            let (from, to) = bounds.ranks(zset, false);
            Reply::Integer((to - from) as i64)
        }
        Ok(None) => Reply::Integer(0),
        Err(reply) => reply,
    }
}

/// `ZREMRANGEBYRANK key start stop`: removes the members in the rank
/// range; how many.
pub(crate) fn zremrangebyrank(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    remove_range(x, args, Kind::Rank, "zrembyrank")
}

/// `ZREMRANGEBYSCORE key min max`: removes the members in the score
/// range; how many.
pub(crate) fn zremrangebyscore(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    remove_range(x, args, Kind::Score, "zrembyscore")
}

/// `ZREMRANGEBYLEX key min max`: removes the members in the lex range;
/// how many.
pub(crate) fn zremrangebylex(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    remove_range(x, args, Kind::Lex, "zrembylex")
}

fn remove_range(x: &mut Exec<'_>, args: &[Vec<u8>], kind: Kind, event: &str) -> Reply {
    let bounds = match parse_bounds(kind, &args[2], &args[3], false) {
        Ok(bounds) => bounds,
        Err(reply) => return reply,
    };
    let key = &args[1];
    let (from, to) = match x.live_zset(key) {
        Ok(Some(zset)) => bounds.ranks(zset, false),
        Ok(None) => return Reply::Integer(0),
        Err(reply) => return reply,
    };
    if from == to {
        return Reply::Integer(0);
    }
    let removed = x.store.update_zset(key, Zset::new, |zset| {
        // Removing at `from` again and again takes the whole span.
        for _ in from..to {
            zset.remove_at(from);
        }
        to - from
    });
    log_removal(x, args, key, event);
    Reply::Integer(removed.unwrap_or(0) as i64)
}

/// Growth of `ZRANGESTORE dst src ...`: at most the source again, plus
/// the destination key.
pub(crate) fn zrangestore_growth(store: &Store, _config: &Config, args: &[Vec<u8>]) -> usize {
    let size = store
        .get(&args[2])
        .and_then(|e| e.zset())
        .map_or(0, Zset::size);
    Store::cost(args[1].len(), size)
}
