//! Sorted-set algebra: `ZUNION`, `ZINTER`, `ZDIFF` (answering the
//! result), `ZUNIONSTORE`, `ZINTERSTORE`, `ZDIFFSTORE` (storing it) and
//! `ZINTERCARD` (counting it), with `WEIGHTS` and `AGGREGATE SUM|MIN|MAX`.
//!
//! Inputs are sorted sets or plain sets (every member of a set scores 1),
//! as in Redis; a missing key is an empty one, any other type
//! `WRONGTYPE`.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use super::errors;
use super::exec::Exec;
use super::zset_ranges::store_result;
use super::zsets::{copy_member, limits, members_reply, oom, parse_score};
use crate::config::Config;
use crate::num::parse_i64;
use crate::resp::Reply;
use crate::store::{Member, Set, Store, Zset};

/// Which operation.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Union,
    Inter,
    Diff,
}

/// How scores of one member in several inputs combine.
#[derive(Clone, Copy)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

impl Aggregate {
    fn combine(self, a: f64, b: f64) -> f64 {
        match self {
            // inf + -inf is NaN: Redis makes it 0.
            Aggregate::Sum => {
                let sum = a + b;
                if sum.is_nan() {
                    0.0
                } else {
                    sum
                }
            }
            Aggregate::Min => a.min(b),
            Aggregate::Max => a.max(b),
        }
    }
}

/// A parsed request: the input keys (where in the arguments), their
/// weights, the aggregate and the reply options.
struct Request {
    keys: core::ops::Range<usize>,
    weights: Vec<f64>,
    aggregate: Aggregate,
    with_scores: bool,
    /// `ZINTERCARD`'s `LIMIT` (0: none).
    limit: usize,
}

/// Parses `numkeys key [key ...] [options]` from `args[at..]` for `op`;
/// `store` says whether the command stores its result (no `WITHSCORES`),
/// `card` whether it is `ZINTERCARD` (only `LIMIT`). The inputs' types
/// are checked before the options are read, as Redis does: a wrong type
/// wins over a bad option.
fn parse(
    x: &mut Exec<'_>,
    args: &[Vec<u8>],
    at: usize,
    op: Op,
    store: bool,
    card: bool,
) -> Result<Request, Reply> {
    let numkeys = match parse_i64(&args[at]) {
        Some(n) => n,
        None => return Err(errors::not_integer()),
    };
    if numkeys < 1 {
        return Err(Reply::Error(alloc::format!(
            "ERR at least 1 input key is needed for '{}' command",
            x.fullname
        )));
    }
    let first = at + 1;
    let available = (args.len() - first) as i64;
    if numkeys > available {
        return Err(errors::syntax());
    }
    let end = first + numkeys as usize;
    check_inputs(x, &args[first..end])?;
    let mut request = Request {
        keys: first..end,
        weights: Vec::new(),
        aggregate: Aggregate::Sum,
        with_scores: false,
        limit: 0,
    };
    request
        .weights
        .try_reserve_exact(numkeys as usize)
        .map_err(|_| oom())?;
    request
        .weights
        .extend(core::iter::repeat_n(1.0, numkeys as usize));
    let mut i = end;
    while i < args.len() {
        let option = args[i].to_ascii_uppercase();
        let left = args.len() - i - 1;
        match option.as_slice() {
            b"LIMIT" if card && left >= 1 => {
                request.limit = match parse_i64(&args[i + 1]) {
                    Some(n) if n >= 0 => usize::try_from(n).unwrap_or(usize::MAX),
                    _ => return Err(Reply::error("ERR LIMIT can't be negative")),
                };
                i += 2;
            }
            b"WEIGHTS" if !card && op != Op::Diff && left >= numkeys as usize => {
                for (j, weight) in args[i + 1..=i + numkeys as usize].iter().enumerate() {
                    request.weights[j] = match parse_score(weight) {
                        Some(w) => w,
                        None => return Err(Reply::error("ERR weight value is not a float")),
                    };
                }
                i += 1 + numkeys as usize;
            }
            b"AGGREGATE" if !card && op != Op::Diff && left >= 1 => {
                request.aggregate = match args[i + 1].to_ascii_uppercase().as_slice() {
                    b"SUM" => Aggregate::Sum,
                    b"MIN" => Aggregate::Min,
                    b"MAX" => Aggregate::Max,
                    _ => return Err(errors::syntax()),
                };
                i += 2;
            }
            b"WITHSCORES" if !card && !store => {
                request.with_scores = true;
                i += 1;
            }
            _ => return Err(errors::syntax()),
        }
    }
    Ok(request)
}

/// Checks that every one of `keys` is a sorted set, a set or
/// missing (expiring inputs found expired): `WRONGTYPE` at the first that
/// is none of these.
fn check_inputs(x: &mut Exec<'_>, keys: &[Vec<u8>]) -> Result<(), Reply> {
    for key in keys {
        if let Some(entry) = x.live(key) {
            if entry.zset().is_none() && entry.set().is_none() {
                return Err(errors::wrong_type());
            }
        }
    }
    Ok(())
}

/// One input of the algebra: a sorted set, or a set whose members all
/// score 1.
#[derive(Clone, Copy)]
enum Input<'s> {
    Sorted(&'s Zset),
    Plain(&'s Set),
}

impl<'s> Input<'s> {
    /// The input stored at `key`, if it is one.
    fn at(store: &'s Store, key: &[u8]) -> Option<Input<'s>> {
        let entry = store.get(key)?;
        match (entry.zset(), entry.set()) {
            (Some(zset), _) => Some(Input::Sorted(zset)),
            (_, Some(set)) => Some(Input::Plain(set)),
            _ => None,
        }
    }

    fn len(self) -> usize {
        match self {
            Input::Sorted(zset) => zset.len(),
            Input::Plain(set) => set.len(),
        }
    }

    /// `member`'s score here, if it is a member.
    fn score(self, member: &[u8]) -> Option<f64> {
        match self {
            Input::Sorted(zset) => zset.score(member),
            Input::Plain(set) => set.contains(member).then_some(1.0),
        }
    }

    /// Every member with its score.
    fn members(self) -> impl Iterator<Item = (Member<'s>, f64)> {
        let (sorted, plain) = match self {
            Input::Sorted(zset) => (Some(zset.iter()), None),
            Input::Plain(set) => (None, Some(set.iter())),
        };
        let sorted = sorted
            .into_iter()
            .flatten()
            .map(|(member, score)| (Member::Bytes(member), score));
        let plain = plain.into_iter().flatten().map(|member| (member, 1.0));
        sorted.chain(plain)
    }

    /// Its memory, for the growth estimate of a store.
    fn size(self) -> usize {
        match self {
            Input::Sorted(zset) => zset.size(),
            Input::Plain(set) => set.size(),
        }
    }
}

/// Computes `op` over the inputs of `request` (checked by
/// [`check_inputs`]): the result's members, borrowed from the inputs (an
/// intset's written out), and scores, in sorted-set order.
fn combine<'s>(
    store: &'s Store,
    args: &[Vec<u8>],
    op: Op,
    request: &Request,
) -> Result<Vec<(Member<'s>, f64)>, Reply> {
    let inputs: Vec<(Option<Input<'s>>, f64)> = args[request.keys.clone()]
        .iter()
        .zip(&request.weights)
        .map(|(key, &w)| (Input::at(store, key), w))
        .collect();
    let weighted = |score: f64, weight: f64| {
        let w = score * weight;
        if w.is_nan() {
            0.0
        } else {
            w
        }
    };
    let mut result: Vec<(Member<'s>, f64)> = Vec::new();
    match op {
        Op::Union => {
            let mut order: Vec<usize> = (0..inputs.len()).collect();
            order.sort_by_key(|&i| inputs[i].0.map_or(0, Input::len));
            let mut acc: BTreeMap<Member<'s>, f64> = BTreeMap::new();
            for &i in &order {
                let (Some(input), weight) = inputs[i] else {
                    continue;
                };
                for (member, score) in input.members() {
                    let score = weighted(score, weight);
                    acc.entry(member)
                        .and_modify(|s| *s = request.aggregate.combine(*s, score))
                        .or_insert(score);
                }
            }
            result.try_reserve_exact(acc.len()).map_err(|_| oom())?;
            result.extend(acc);
        }
        Op::Inter => {
            let mut order: Vec<usize> = (0..inputs.len()).collect();
            order.sort_by_key(|&i| inputs[i].0.map_or(0, Input::len));
            let Some(smallest) = inputs[order[0]].0 else {
                return Ok(Vec::new());
            };
            'members: for (member, score) in smallest.members() {
                let mut total = weighted(score, inputs[order[0]].1);
                for &i in &order[1..] {
                    let (input, weight) = inputs[i];
                    match input.and_then(|z| z.score(&member)) {
                        Some(other) => {
                            total = request.aggregate.combine(total, weighted(other, weight))
                        }
                        None => continue 'members,
                    }
                }
                result.try_reserve(1).map_err(|_| oom())?;
                result.push((member, total));
                if request.limit > 0 && result.len() >= request.limit {
                    break;
                }
            }
        }
        Op::Diff => {
            let Some(first) = inputs[0].0 else {
                return Ok(Vec::new());
            };
            for (member, score) in first.members() {
                let elsewhere = inputs[1..]
                    .iter()
                    .any(|(z, _)| z.is_some_and(|z| z.score(&member).is_some()));
                if !elsewhere {
                    result.try_reserve(1).map_err(|_| oom())?;
                    result.push((member, score));
                }
            }
        }
    }
    result.sort_by(|a, b| match Zset::before(a.1, &a.0, b.1, &b.0) {
        true => core::cmp::Ordering::Less,
        false if a.0 == b.0 => core::cmp::Ordering::Equal,
        false => core::cmp::Ordering::Greater,
    });
    Ok(result)
}

/// Answers `op` over `args[1..]`.
fn answer(x: &mut Exec<'_>, args: &[Vec<u8>], op: Op) -> Reply {
    let request = match parse(x, args, 1, op, false, false) {
        Ok(request) => request,
        Err(reply) => return reply,
    };
    let items = combine(x.store, args, op, &request).and_then(|result| {
        let mut items: Vec<(&[u8], f64)> = Vec::new();
        items.try_reserve_exact(result.len()).map_err(|_| oom())?;
        items.extend(result.iter().map(|(member, score)| (&**member, *score)));
        Ok(members_reply(x.config, &items, request.with_scores))
    });
    items.unwrap_or_else(|reply| reply)
}

/// Stores `op` over `args[2..]` as `args[1]`.
fn store(x: &mut Exec<'_>, args: &[Vec<u8>], op: Op, event: &str) -> Reply {
    let request = match parse(x, args, 2, op, true, false) {
        Ok(request) => request,
        Err(reply) => return reply,
    };
    let limits = limits(x);
    let built = combine(x.store, args, op, &request).and_then(|result| {
        let longest = result.iter().map(|(m, _)| m.len()).max().unwrap_or(0);
        let mut zset = Zset::for_size(result.len(), longest, limits);
        for (member, score) in result {
            zset.insert(copy_member(&member)?, score, limits)
                .map_err(|_| oom())?;
        }
        Ok(zset)
    });
    match built {
        Ok(zset) => store_result(x, &args[1], zset, event),
        Err(reply) => reply,
    }
}

/// `ZUNION numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX]
/// [WITHSCORES]`: every member of any input, scores weighted and
/// combined.
pub(crate) fn zunion(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    answer(x, args, Op::Union)
}

/// `ZINTER numkeys key [key ...] [WEIGHTS ...] [AGGREGATE ...]
/// [WITHSCORES]`: the members of every input.
pub(crate) fn zinter(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    answer(x, args, Op::Inter)
}

/// `ZDIFF numkeys key [key ...] [WITHSCORES]`: the members of the first
/// input that no other has, with their scores there.
pub(crate) fn zdiff(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    answer(x, args, Op::Diff)
}

/// `ZUNIONSTORE dst numkeys key [key ...] [WEIGHTS ...] [AGGREGATE ...]`.
pub(crate) fn zunionstore(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    store(x, args, Op::Union, "zunionstore")
}

/// `ZINTERSTORE dst numkeys key [key ...] [WEIGHTS ...] [AGGREGATE ...]`.
pub(crate) fn zinterstore(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    store(x, args, Op::Inter, "zinterstore")
}

/// `ZDIFFSTORE dst numkeys key [key ...]`.
pub(crate) fn zdiffstore(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    store(x, args, Op::Diff, "zdiffstore")
}

/// `ZINTERCARD numkeys key [key ...] [LIMIT limit]`: how many members the
/// intersection has, counting up to `limit` at most (0: no limit).
pub(crate) fn zintercard(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let request = match parse(x, args, 1, Op::Inter, false, true) {
        Ok(request) => request,
        Err(reply) => return reply,
    };
    match combine(x.store, args, Op::Inter, &request) {
        Ok(result) => Reply::Integer(result.len() as i64),
        Err(reply) => reply,
    }
}

/// Growth of `ZUNIONSTORE dst numkeys key ...` (and `ZINTERSTORE`,
/// `ZDIFFSTORE`): at most every input again, plus the destination key.
pub(crate) fn zstore_growth(store: &Store, _config: &Config, args: &[Vec<u8>]) -> usize {
    let numkeys = parse_i64(&args[2]).unwrap_or(0).max(0) as usize;
    let inputs: usize = args[3..]
        .iter()
        .take(numkeys)
        .filter_map(|key| Input::at(store, key))
        .map(Input::size)
        .sum();
    Store::cost(args[1].len(), inputs)
}
