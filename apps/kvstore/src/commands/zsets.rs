//! Sorted-set commands on single members: `ZADD`, `ZINCRBY`, `ZREM`,
//! `ZCARD`, `ZSCORE`, `ZMSCORE`, `ZRANK`, `ZREVRANK`, `ZPOPMIN`,
//! `ZPOPMAX`, `ZRANDMEMBER`, `ZSCAN`, and what the other sorted-set
//! modules share: score parsing and formatting, popping, logging. Ranges
//! are in `zset_ranges`, unions and intersections in `zset_algebra`,
//! `ZMPOP` and the blocking pops in `zset_pops`.
//!
//! # What gets logged
//!
//! | command                       | logged as                                   |
//! |-------------------------------|---------------------------------------------|
//! | `ZADD` (any flags), `ZINCRBY` | `ZADD key score member ...` with the scores the changed members ended with (as the client wrote them; an increment's sum formatted) |
//! | `ZREM`, `ZREMRANGEBY*`        | as given, if they removed something          |
//! | `ZPOPMIN`, `ZPOPMAX`, `ZMPOP`, `BZPOP*`, `BZMPOP` | `ZREM key <the members popped>` |
//! | `Z*STORE`                     | `DEL dst`, then the whole result ([`push_zset`]) |
//!
//! Each replays to the same set over the state the log had when it was
//! written, in the old log and in the new log of a running rewrite alike
//! (see `kvstore::aof::RewriteScan`).

use alloc::vec::Vec;

use super::errors;
use super::exec::{reply_fits, Exec};
use super::keys::ScanOptions;
use super::strings::copy_for_reply;
use crate::aof::{Piece, RecordBuf};
use crate::config::Config;
use crate::glob;
use crate::notify;
use crate::num::{parse_i64, parse_u64};
use crate::resp::Reply;
use crate::store::{CompactLimits, Store, Zset};

/// Members per `ZADD` record when a whole sorted set is logged
/// ([`push_zset`]): a large set becomes several records.
pub const ZSET_MEMBERS_PER_RECORD: usize = 128;

/// The reply when memory for a sorted set's growth or a reply cannot be
/// had.
pub(super) fn oom() -> Reply {
    Reply::error("OOM not enough memory for the sorted set")
}

/// The reply to a score that does not parse.
pub(super) fn not_float() -> Reply {
    Reply::error("ERR value is not a valid float")
}

/// The reply when an increment would make a score NaN (`inf` + `-inf`).
pub(super) fn nan_score() -> Reply {
    Reply::error("ERR resulting score is not a number (NaN)")
}

/// A score as Redis accepts it: a decimal or exponent number, or an
/// infinity (`inf`, `+inf`, `-inf`); never NaN.
pub(super) fn parse_score(arg: &[u8]) -> Option<f64> {
    let score = super::string_ops::parse_float(arg)?;
    // A finite number too large for a double is refused, not rounded to
    // an infinity (as Redis's range check on `strtod` does).
    let named = arg.iter().any(|b| b.eq_ignore_ascii_case(&b'i'));
    (score.is_finite() || named).then_some(score)
}

/// A score as Redis 7.0 writes it: `inf`, `-inf`, whole numbers below
/// 2^52 as integers (`-0` keeps its sign), anything else with 17
/// significant digits like C's `%.17g` (so it reads back exactly).
///
/// ```text
/// 3.0 → "3"   1.1 → "1.1000000000000001"   1e20 → "1e+20"   -0.0 → "-0"
/// ```
pub(crate) fn format_score(score: f64) -> Vec<u8> {
    use alloc::string::ToString;
    if score.is_infinite() {
        return if score > 0.0 {
            b"inf".to_vec()
        } else {
            b"-inf".to_vec()
        };
    }
    if score == 0.0 {
        return if score.is_sign_negative() {
            b"-0".to_vec()
        } else {
            b"0".to_vec()
        };
    }
    if score > -4_503_599_627_370_495.0
        && score < 4_503_599_627_370_496.0
        && (score as i64) as f64 == score
    {
        return (score as i64).to_string().into_bytes();
    }
    // 17 significant digits, then %g's choice of notation.
    let sci = alloc::format!("{score:.16e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
    let mut out = Vec::new();
    if negative {
        out.push(b'-');
    }
    let trim = |d: &[u8]| -> usize { d.iter().rposition(|&b| b != b'0').map_or(0, |i| i + 1) };
    if !(-4..17).contains(&exp) {
        out.push(digits[0]);
        let frac = &digits[1..trim(&digits).max(1)];
        if !frac.is_empty() {
            out.push(b'.');
            out.extend_from_slice(frac);
        }
        out.push(b'e');
        out.push(if exp < 0 { b'-' } else { b'+' });
        let e = exp.unsigned_abs();
        if e < 10 {
            out.push(b'0');
        }
        out.extend_from_slice(e.to_string().as_bytes());
    } else if exp >= 0 {
        let whole = exp as usize + 1;
        out.extend_from_slice(&digits[..whole]);
        let end = trim(&digits);
        if end > whole {
            out.push(b'.');
            out.extend_from_slice(&digits[whole..end]);
        }
    } else {
        out.extend_from_slice(b"0.");
        out.extend(core::iter::repeat_n(b'0', (-exp - 1) as usize));
        out.extend_from_slice(&digits[..trim(&digits)]);
    }
    out
}

/// A score as a double reply (a bulk string in RESP2).
pub(super) fn score_reply(score: f64) -> Reply {
    Reply::Double(format_score(score))
}

/// The compact-form limits in force (`zset-max-listpack-*`).
pub(super) fn limits(x: &Exec<'_>) -> CompactLimits {
    x.config.zset_compact
}

/// A fallible copy of `member`, to store it.
pub(super) fn copy_member(member: &[u8]) -> Result<Vec<u8>, Reply> {
    let mut copy = Vec::new();
    copy.try_reserve_exact(member.len()).map_err(|_| oom())?;
    copy.extend_from_slice(member);
    Ok(copy)
}

/// Members, each with its score when `with_scores`: pairs (flat in RESP2,
/// `[member, score]` arrays in RESP3) of a member and its double score, as
/// Redis answers ranges. Refused if the reply would be too large (see
/// [`reply_fits`]).
pub(super) fn members_reply(config: &Config, items: &[(&[u8], f64)], with_scores: bool) -> Reply {
    match members_and_scores(config, items, with_scores, score_reply) {
        Ok(out) if with_scores => Reply::Pairs(out),
        Ok(out) => Reply::array(out),
        Err(reply) => reply,
    }
}

/// The items of [`members_reply`], each score made by `score`.
fn members_and_scores(
    config: &Config,
    items: &[(&[u8], f64)],
    with_scores: bool,
    score: fn(f64) -> Reply,
) -> Result<Vec<Reply>, Reply> {
    let per = 1 + usize::from(with_scores);
    let bytes: u64 = items
        .iter()
        .map(|(m, _)| m.len() as u64 + if with_scores { 24 } else { 0 })
        .sum();
    reply_fits(config, bytes)?;
    let mut out = Vec::new();
    if out
        .try_reserve_exact(items.len().saturating_mul(per))
        .is_err()
    {
        return Err(oom());
    }
    for &(member, member_score) in items {
        out.push(Reply::Bulk(Some(copy_for_reply(member)?)));
        if with_scores {
            out.push(score(member_score));
        }
    }
    Ok(out)
}

/// Adds the records that recreate the sorted set `zset` at a missing
/// `key`: `ZADD key score member ...`, [`ZSET_MEMBERS_PER_RECORD`]
/// members a record, lowest score first. What the log rewrite writes
/// for a sorted set, and what `Z*STORE` logs.
pub fn push_zset(out: &mut dyn RecordBuf, key: &[u8], zset: &Zset) {
    let mut members = zset.iter();
    let mut left = zset.len();
    while left > 0 {
        let chunk = left.min(ZSET_MEMBERS_PER_RECORD);
        left -= chunk;
        let scores: Vec<(Vec<u8>, &[u8])> = members
            .by_ref()
            .take(chunk)
            .map(|(m, s)| (format_score(s), m))
            .collect();
        let mut args: Vec<Piece<'_>> = Vec::with_capacity(2 + 2 * chunk);
        args.extend([Piece::Bytes(b"ZADD"), Piece::Bytes(key)]);
        for (score, member) in &scores {
            args.extend([Piece::Bytes(score), Piece::Bytes(member)]);
        }
        out.record(&args);
    }
}

/// Logs `args` as given for a change to the set at `key`, notifies
/// `event`, and `del` if the set is gone.
pub(super) fn log_removal(x: &mut Exec<'_>, args: &[Vec<u8>], key: &[u8], event: &str) {
    x.log(args);
    x.notify(notify::ZSET, event, key);
    if x.store.get(key).is_none() {
        x.emptied(key);
    }
}

/// `ZADD`'s flags.
#[derive(Clone, Copy, Default)]
struct AddFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

/// What adding did: members added, existing ones whose score changed,
/// and (for `INCR`) the score the member ended with, if it was set.
struct Added {
    added: usize,
    updated: usize,
    last: Option<f64>,
}

/// `ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]`:
/// sets members' scores (adding missing members); how many were added
/// (with `CH`: added or changed). With `INCR`, one pair whose score is
/// an increment: the new score, nil if a flag stopped it.
pub(crate) fn zadd(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let mut flags = AddFlags::default();
    let mut at = 2;
    while let Some(arg) = args.get(at) {
        let flag = match arg.to_ascii_uppercase().as_slice() {
            b"NX" => &mut flags.nx,
            b"XX" => &mut flags.xx,
            b"GT" => &mut flags.gt,
            b"LT" => &mut flags.lt,
            b"CH" => &mut flags.ch,
            b"INCR" => &mut flags.incr,
            _ => break,
        };
        *flag = true;
        at += 1;
    }
    let pairs = args.len() - at;
    if pairs == 0 || !pairs.is_multiple_of(2) {
        return errors::syntax();
    }
    if flags.nx && flags.xx {
        return Reply::error("ERR XX and NX options at the same time are not compatible");
    }
    if (flags.nx && (flags.gt || flags.lt)) || (flags.gt && flags.lt) {
        return Reply::error("ERR GT, LT, and/or NX options at the same time are not compatible");
    }
    if flags.incr && pairs > 2 {
        return Reply::error("ERR INCR option supports a single increment-element pair");
    }
    add(x, args, at, flags)
}

/// `ZINCRBY key increment member`: adds to the member's score (a missing
/// member counting as 0); the new score.
pub(crate) fn zincrby(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let flags = AddFlags {
        incr: true,
        ..AddFlags::default()
    };
    add(x, args, 2, flags)
}

/// Applies the score/member pairs of `args[at..]` to the set `args[1]`
/// under `flags`, logs, notifies and answers (see [`zadd`]).
fn add(x: &mut Exec<'_>, args: &[Vec<u8>], at: usize, flags: AddFlags) -> Reply {
    let pairs = &args[at..];
    let mut scores = Vec::new();
    if scores.try_reserve_exact(pairs.len() / 2).is_err() {
        return oom();
    }
    for pair in pairs.chunks_exact(2) {
        match parse_score(&pair[0]) {
            Some(score) => scores.push(score),
            None => return not_float(),
        }
    }
    let key = &args[1];
    let nothing = || match flags.incr {
        true => Reply::nil(),
        false => Reply::Integer(0),
    };
    match x.live_zset(key) {
        Err(reply) => return reply,
        Ok(None) if flags.xx => return nothing(),
        Ok(_) => {}
    }
    let limits = limits(x);
    // (pair index, score it ended with) of every member changed.
    let mut changed: Vec<(usize, f64)> = Vec::new();
    if changed.try_reserve_exact(scores.len()).is_err() {
        return oom();
    }
    let outcome = x.store.update_zset(key, Zset::new, |zset| {
        let mut done = Added {
            added: 0,
            updated: 0,
            last: None,
        };
        for (i, (&score, pair)) in scores.iter().zip(pairs.chunks_exact(2)).enumerate() {
            let member = &pair[1];
            match zset.score(member) {
                Some(current) => {
                    if flags.nx {
                        continue;
                    }
                    let new = if flags.incr { current + score } else { score };
                    if new.is_nan() {
                        return Err(nan_score());
                    }
                    if (flags.lt && new >= current) || (flags.gt && new <= current) {
                        continue;
                    }
                    done.last = Some(new);
                    if new == current {
                        continue;
                    }
                    done.updated += 1;
                    zset.set_score(member, new);
                    changed.push((i, new));
                }
                None if flags.xx => continue,
                None => {
                    zset.insert(copy_member(member)?, score, limits)
                        .map_err(|_| oom())?;
                    done.added += 1;
                    done.last = Some(score);
                    changed.push((i, score));
                }
            }
        }
        Ok(done)
    });
    let done = match outcome {
        Some(Ok(done)) => done,
        Some(Err(reply)) => return reply,
        None => return errors::wrong_type(),
    };
    if !changed.is_empty() {
        if !x.loading {
            // A score as the client wrote it parses back to the same
            // number on replay; only an INCR's sum has to be written out.
            let formatted: Vec<Vec<u8>> = match flags.incr {
                true => changed.iter().map(|&(_, s)| format_score(s)).collect(),
                false => Vec::new(),
            };
            let mut record: Vec<&[u8]> = Vec::with_capacity(2 + 2 * changed.len());
            record.extend([&b"ZADD"[..], key]);
            for (n, &(i, _)) in changed.iter().enumerate() {
                let score = formatted.get(n).unwrap_or(&pairs[2 * i]);
                record.extend([score.as_slice(), pairs[2 * i + 1].as_slice()]);
            }
            x.effects.push(&record);
        }
        x.notify(notify::ZSET, if flags.incr { "zincr" } else { "zadd" }, key);
        x.key_ready(key);
    }
    if flags.incr {
        return match done.last {
            Some(score) => score_reply(score),
            None => Reply::nil(),
        };
    }
    let count = if flags.ch {
        done.added + done.updated
    } else {
        done.added
    };
    Reply::Integer(count as i64)
}

/// `ZREM key member [member ...]`: removes the members; how many were
/// there.
pub(crate) fn zrem(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match x.live_zset(&args[1]) {
        Ok(Some(_)) => {}
        Ok(None) => return Reply::Integer(0),
        Err(reply) => return reply,
    }
    let (head, members) = args.split_at(2);
    let key = &head[1];
    let removed = x
        .store
        .update_zset(key, Zset::new, |zset| {
            members.iter().filter(|m| zset.remove(m)).count()
        })
        .unwrap_or(0);
    if removed > 0 {
        log_removal(x, args, &args[1], "zrem");
    }
    Reply::Integer(removed as i64)
}

/// `ZCARD key`: the number of members, 0 if the key is missing.
pub(crate) fn zcard(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match x.read_zset(&args[1]) {
        Ok(zset) => Reply::Integer(zset.map_or(0, Zset::len) as i64),
        Err(reply) => reply,
    }
}

/// `ZSCORE key member`: the member's score, nil if it is missing.
pub(crate) fn zscore(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    match x.read_zset(&args[1]) {
        Ok(zset) => match zset.and_then(|z| z.score(&args[2])) {
            Some(score) => score_reply(score),
            None => Reply::nil(),
        },
        Err(reply) => reply,
    }
}

/// `ZMSCORE key member [member ...]`: each member's score or nil.
pub(crate) fn zmscore(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let zset = match x.read_zset(&args[1]) {
        Ok(zset) => zset,
        Err(reply) => return reply,
    };
    let mut out = Vec::new();
    if out.try_reserve_exact(args.len() - 2).is_err() {
        return oom();
    }
    for member in &args[2..] {
        out.push(match zset.and_then(|z| z.score(member)) {
            Some(score) => score_reply(score),
            None => Reply::nil(),
        });
    }
    Reply::array(out)
}

/// `ZRANK key member`: the member's rank, lowest score 0; nil if missing.
pub(crate) fn zrank(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    rank(x, args, false)
}

/// `ZREVRANK key member`: the member's rank, highest score 0.
pub(crate) fn zrevrank(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    rank(x, args, true)
}

fn rank(x: &mut Exec<'_>, args: &[Vec<u8>], reverse: bool) -> Reply {
    match x.read_zset(&args[1]) {
        Ok(Some(zset)) => match zset.rank(&args[2]) {
            Some(rank) if reverse => Reply::Integer((zset.len() - 1 - rank) as i64),
            Some(rank) => Reply::Integer(rank as i64),
            None => Reply::nil(),
        },
        Ok(None) => Reply::nil(),
        Err(reply) => reply,
    }
}

/// `ZPOPMIN key [count]`: removes and returns the members with the lowest
/// scores (one without a count), each followed by its score.
pub(crate) fn zpopmin(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    zpop(x, args, false)
}

/// `ZPOPMAX key [count]`: `ZPOPMIN` from the highest scores.
pub(crate) fn zpopmax(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    zpop(x, args, true)
}

fn zpop(x: &mut Exec<'_>, args: &[Vec<u8>], max: bool) -> Reply {
    if args.len() > 3 {
        return errors::syntax();
    }
    let count = match args.get(2).map(|arg| parse_i64(arg)) {
        None => 1,
        Some(Some(n)) if n >= 0 => usize::try_from(n).unwrap_or(usize::MAX),
        // Redis answers a count that is not a number as one below 0.
        Some(_) => return Reply::error("ERR value is out of range, must be positive"),
    };
    let key = &args[1];
    match x.live_zset(key) {
        Ok(Some(_)) if count > 0 => {}
        Ok(_) => return Reply::array(Vec::new()),
        Err(reply) => return reply,
    }
    match pop_members(x, key, max, count) {
        Ok(popped) => {
            let mut out = Vec::new();
            if out.try_reserve_exact(popped.len() * 2).is_err() {
                return oom();
            }
            for (member, score) in popped {
                out.push(Reply::Bulk(Some(member)));
                out.push(score_reply(score));
            }
            // Without a count, one flat [member, score] in RESP3 too.
            match args.len() {
                3 => Reply::Pairs(out),
                _ => Reply::array(out),
            }
        }
        Err(reply) => reply,
    }
}

/// Pops up to `count` members from the set at `key` (the caller checked
/// it is one): the highest scores when `max`, else the lowest, in pop
/// order. Logs `ZREM key <popped>`, notifies `zpopmin`/`zpopmax`, and
/// `del` if the set went with its last member.
pub(super) fn pop_members(
    x: &mut Exec<'_>,
    key: &[u8],
    max: bool,
    count: usize,
) -> Result<Vec<(Vec<u8>, f64)>, Reply> {
    let len = x.store.get(key).and_then(|e| e.zset()).map_or(0, Zset::len);
    let n = count.min(len);
    let mut popped = Vec::new();
    popped.try_reserve_exact(n).map_err(|_| oom())?;
    x.store.update_zset(key, Zset::new, |zset| {
        for _ in 0..n {
            let rank = if max { zset.len() - 1 } else { 0 };
            popped.extend(zset.remove_at(rank));
        }
    });
    if popped.is_empty() {
        return Ok(popped);
    }
    if !x.loading {
        let mut record: Vec<&[u8]> = Vec::with_capacity(2 + popped.len());
        record.extend([&b"ZREM"[..], key]);
        record.extend(popped.iter().map(|(m, _)| m.as_slice()));
        x.effects.push(&record);
    }
    x.notify(notify::ZSET, if max { "zpopmax" } else { "zpopmin" }, key);
    if x.store.get(key).is_none() {
        x.emptied(key);
    }
    Ok(popped)
}

/// `ZRANDMEMBER key [count [WITHSCORES]]`: a random member (nil if the key
/// is missing); with a positive count up to that many distinct members,
/// with a negative one exactly that many, repeats allowed.
pub(crate) fn zrandmember(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let (count, with_scores) = match super::hashes::random_count(args, b"WITHSCORES") {
        Ok(parsed) => parsed,
        Err(reply) => return reply,
    };
    let key = &args[1];
    match x.read_zset(key) {
        Ok(Some(_)) => {}
        Ok(None) if count.is_none() => return Reply::nil(),
        Ok(None) => return Reply::array(Vec::new()),
        Err(reply) => return reply,
    }
    let Some(zset) = x.store.get(key).and_then(|e| e.zset()) else {
        return Reply::array(Vec::new());
    };
    let random = &mut *x.random;
    let len = zset.len();
    let Some(n) = count else {
        let pick = random.next_u64() as usize % len;
        return match zset.get(pick).map(|(m, _)| copy_for_reply(m)) {
            Some(Ok(member)) => Reply::Bulk(Some(member)),
            Some(Err(reply)) => reply,
            None => Reply::nil(),
        };
    };
    let picked: Vec<(&[u8], f64)> = if n >= 0 {
        let n = usize::try_from(n).unwrap_or(usize::MAX).min(len);
        let mut ranks = Vec::new();
        if n.saturating_mul(4) < len {
            // A few of many: draw ranks until `n` distinct ones came up
            // (a draw repeats with chance under 1/4), not a copy of all.
            if ranks.try_reserve_exact(n).is_err() {
                return oom();
            }
            let mut seen = alloc::collections::BTreeSet::new();
            while ranks.len() < n {
                let rank = random.next_u64() as usize % len;
                if seen.insert(rank) {
                    ranks.push(rank);
                }
            }
        } else {
            // Most of them: the first `n` of a partial shuffle of ranks.
            if ranks.try_reserve_exact(len).is_err() {
                return oom();
            }
            ranks.extend(0..len);
            for i in 0..n {
                let j = i + random.next_u64() as usize % (len - i);
                ranks.swap(i, j);
            }
            ranks.truncate(n);
        }
        ranks.iter().filter_map(|&r| zset.get(r)).collect()
    } else {
        let n = usize::try_from(n.unsigned_abs()).unwrap_or(usize::MAX);
        // Each item of the reply takes at least its `Reply`.
        let least = (n as u64).saturating_mul(core::mem::size_of::<Reply>() as u64);
        if let Err(reply) = reply_fits(x.config, least) {
            return reply;
        }
        let mut picked = Vec::new();
        if picked.try_reserve_exact(n).is_err() {
            return oom();
        }
        for _ in 0..n {
            let rank = random.next_u64() as usize % len;
            picked.extend(zset.get(rank));
        }
        picked
    };
    members_reply(x.config, &picked, with_scores)
}

/// `ZSCAN key cursor [MATCH pattern] [COUNT count]`: the next cursor (0
/// when done) and a batch of members, each followed by its score. Every
/// member present for the whole scan is returned at least once.
pub(crate) fn zscan(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let Some(cursor) = parse_u64(&args[2]) else {
        return Reply::error("ERR invalid cursor");
    };
    let done = || Reply::array(alloc::vec![Reply::bulk("0"), Reply::array(Vec::new())]);
    match x.read_zset(&args[1]) {
        Ok(Some(_)) => {}
        Ok(None) => return done(),
        Err(reply) => return reply,
    }
    let Some(zset) = x.store.get(&args[1]).and_then(|e| e.zset()) else {
        return done();
    };
    let options = match ScanOptions::parse(&args[3..], false) {
        Ok(options) => options,
        Err(reply) => return reply,
    };
    let (next, batch) = zset.scan(cursor, options.count);
    let matching: Vec<(&[u8], f64)> = batch
        .into_iter()
        .filter(|(member, _)| options.pattern.is_none_or(|p| glob::matches(p, member)))
        .collect();
    // A scan's batch is strings only, scores too, in RESP3 as well.
    let bulk_score = |score| Reply::bulk(format_score(score));
    let members = match members_and_scores(x.config, &matching, true, bulk_score) {
        Ok(items) => Reply::array(items),
        Err(reply) => return reply,
    };
    Reply::array(alloc::vec![Reply::bulk(alloc::format!("{next}")), members])
}

/// Growth of `ZADD key [flags] score member ...` (and `ZINCRBY key
/// increment member`): each member's cost (an existing one counted too:
/// an estimate only has to bound), plus the key's own if it is missing.
pub(crate) fn zadd_growth(store: &Store, _config: &Config, args: &[Vec<u8>]) -> usize {
    let members: usize = args[2..]
        .iter()
        .map(|m| Zset::member_cost(m.len()))
        .sum::<usize>()
        / 2;
    match store.get(&args[1]) {
        Some(_) => members,
        None => Store::cost(args[1].len(), members),
    }
}

#[cfg(test)]
mod tests {
    use super::format_score;

    #[test]
    fn scores_are_written_as_redis_7_0_writes_them() {
        let cases: &[(f64, &str)] = &[
            (3.0, "3"),
            (-17.0, "-17"),
            (0.0, "0"),
            (-0.0, "-0"),
            (1.1, "1.1000000000000001"),
            (0.5, "0.5"),
            (1.5e-7, "1.4999999999999999e-07"),
            (1e20, "1e+20"),
            (4503599627370496.0, "4503599627370496"),
            (1.2345678901234567e16, "12345678901234568"),
            (-2.5e300, "-2.5000000000000001e+300"),
            (0.0001, "0.0001"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ];
        for &(score, text) in cases {
            assert_eq!(format_score(score), text.as_bytes(), "{score:e}");
            let back: f64 = text.parse().unwrap();
            assert_eq!(back.to_bits(), score.to_bits(), "reads back exactly");
        }
    }
}
