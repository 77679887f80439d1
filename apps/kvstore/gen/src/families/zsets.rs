//! Sorted-set commands. `ZRANDMEMBER` compares by kind (it picks at
//! random); `ZSCAN`, `ZREVRANGEBYLEX` and the blocking pops are the
//! fuzzer's only.

use crate::draw::{Check, Gen};

/// The sorted-set commands, each with how often the differential test
/// sends it (0: never).
pub(crate) const NAMES: &[(&str, u8)] = &[
    ("ZADD", 3),
    ("ZINCRBY", 1),
    ("ZREM", 1),
    ("ZCARD", 1),
    ("ZSCORE", 1),
    ("ZMSCORE", 1),
    ("ZRANK", 1),
    ("ZREVRANK", 1),
    ("ZCOUNT", 1),
    ("ZLEXCOUNT", 1),
    ("ZRANGE", 2),
    ("ZREVRANGE", 1),
    ("ZRANGEBYSCORE", 1),
    ("ZREVRANGEBYSCORE", 1),
    ("ZRANGEBYLEX", 1),
    ("ZREMRANGEBYRANK", 1),
    ("ZREMRANGEBYSCORE", 1),
    ("ZREMRANGEBYLEX", 1),
    ("ZPOPMIN", 1),
    ("ZPOPMAX", 1),
    ("ZUNION", 1),
    ("ZINTER", 1),
    ("ZDIFF", 1),
    ("ZUNIONSTORE", 1),
    ("ZINTERSTORE", 1),
    ("ZDIFFSTORE", 1),
    ("ZINTERCARD", 1),
    ("ZRANGESTORE", 1),
    ("ZMPOP", 1),
    ("ZRANDMEMBER", 1),
    ("ZREVRANGEBYLEX", 0),
    ("ZSCAN", 0),
    ("BZPOPMIN", 0),
    ("BZPOPMAX", 0),
    ("BZMPOP", 0),
];

/// A lex bound, valid or not.
fn lex(g: &mut Gen) -> Vec<u8> {
    g.pick_str(&["-", "+", "[a", "(b", "[", "c", "(", "[1", "(x y"])
}

/// `WITHSCORES`, `LIMIT`, `REV`: what a range takes, now and then.
fn range_options(g: &mut Gen, args: &mut Vec<Vec<u8>>, rev: bool) {
    if rev && g.chance(30) {
        args.push(g.word("REV"));
    }
    if g.chance(30) {
        let (o, c) = (g.index(), g.index());
        args.extend([g.word("LIMIT"), o, c]);
    }
    if g.chance(40) {
        args.push(g.word("WITHSCORES"));
    }
}

/// The arguments of sorted-set command `name`.
pub(crate) fn args(g: &mut Gen, name: &str, args: &mut Vec<Vec<u8>>) -> Check {
    match name {
        "ZUNION" | "ZINTER" | "ZDIFF" | "ZUNIONSTORE" | "ZINTERSTORE" | "ZDIFFSTORE" => {
            if name.ends_with("STORE") {
                args.push(g.key());
            }
            g.keys(args, true);
            let diff = name.starts_with("ZDIFF");
            if (!diff || g.hostile()) && g.chance(40) {
                args.push(g.word("WEIGHTS"));
                for _ in 0..1 + g.below(3) {
                    args.push(g.pick_str(&["1", "2", "-1", "0.5", "inf", "x"]));
                }
            }
            if (!diff || g.hostile()) && g.chance(30) {
                args.push(g.word("AGGREGATE"));
                args.push(g.pick_word(&["SUM", "MIN", "MAX", "max", "AVG"]));
            }
            if (!name.ends_with("STORE") || g.hostile()) && g.chance(50) {
                args.push(g.word("WITHSCORES"));
            }
            return Check::Exact;
        }
        "ZINTERCARD" => {
            g.keys(args, true);
            if g.chance(40) {
                args.extend([g.word("LIMIT"), g.index()]);
            }
            return Check::Exact;
        }
        "ZMPOP" | "BZMPOP" => {
            if name == "BZMPOP" {
                args.push(g.timeout());
            }
            g.keys(args, true);
            args.push(g.pick_word(&["MIN", "MAX", "min", "MID"]));
            if g.chance(50) {
                args.extend([g.word("COUNT"), g.index()]);
            }
            return Check::Exact;
        }
        "ZRANGESTORE" => {
            let (d, k) = (g.key(), g.key());
            args.extend([d, k]);
            let (a, b) = (g.index(), g.index());
            args.extend([a, b]);
            if g.hostile() {
                range_options(g, args, true);
            }
            return Check::Exact;
        }
        "BZPOPMIN" | "BZPOPMAX" => return g.blocking_pop(args),
        _ => {}
    }
    args.push(g.key());
    match name {
        "ZADD" => {
            for _ in 0..g.below(3) {
                args.push(g.pick_word(&["NX", "XX", "GT", "LT", "CH", "INCR", "nx"]));
            }
            for _ in 0..1 + g.below(3) {
                let (score, m) = (g.score(), g.member());
                args.extend([score, m]);
            }
        }
        "ZINCRBY" => {
            let (by, m) = (g.score(), g.member());
            args.extend([by, m]);
        }
        "ZREM" | "ZMSCORE" => g.members(args, 1),
        "ZSCORE" | "ZRANK" | "ZREVRANK" => args.push(g.member()),
        "ZCOUNT" | "ZRANGEBYSCORE" | "ZREVRANGEBYSCORE" | "ZREMRANGEBYSCORE" => {
            let (a, b) = (g.score(), g.score());
            args.extend([a, b]);
            if !name.starts_with("ZREM") && name.contains("RANGEBY") {
                range_options(g, args, false);
            }
        }
        "ZLEXCOUNT" | "ZRANGEBYLEX" | "ZREVRANGEBYLEX" | "ZREMRANGEBYLEX" => {
            let (a, b) = (lex(g), lex(g));
            args.extend([a, b]);
            if g.hostile() && name.contains("RANGEBY") {
                range_options(g, args, false);
            }
        }
        "ZRANGE" => {
            match g.below(3) {
                0 => {
                    let (a, b) = (g.index(), g.index());
                    args.extend([a, b]);
                }
                1 => {
                    let (a, b) = (g.score(), g.score());
                    args.extend([a, b, g.word("BYSCORE")]);
                }
                _ => {
                    let (a, b) = (lex(g), lex(g));
                    args.extend([a, b, g.word("BYLEX")]);
                }
            }
            range_options(g, args, true);
        }
        "ZREVRANGE" | "ZREMRANGEBYRANK" => {
            let (a, b) = (g.index(), g.index());
            args.extend([a, b]);
            if name == "ZREVRANGE" && g.chance(40) {
                args.push(g.word("WITHSCORES"));
            }
        }
        "ZPOPMIN" | "ZPOPMAX" if g.chance(50) => args.push(g.index()),
        "ZRANDMEMBER" => return g.random_count(args, Some("WITHSCORES")),
        "ZSCAN" => return g.member_scan(args),
        _ => {}
    }
    Check::Exact
}
