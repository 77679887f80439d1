//! Random commands for the engine, the fuzzer's (from its bytes, through
//! [`Choices`]): every command of kvstore's command table, with arguments
//! chosen among edge cases (empty, huge and negative numbers, binary and
//! large values, expiry times around the clock), sometimes with an
//! argument too few or too many.

use crate::choices::Choices;

pub mod families;
pub mod scripts;

/// Keys the commands share, so that they meet: short, empty, binary, glob
/// characters, multi-byte UTF-8, and one long key.
const KEYS: &[&[u8]] = &[
    b"k",
    b"k2",
    b"n",
    b"",
    b"\x00\xff\r\n",
    b"{k}*?[",
    b"\xe2\x82\xac",
];

/// Integers and near-integers Redis's strict parser must sort out.
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "10",
    "100",
    "1000",
    "86400",
    "-100",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "-9223372036854775809",
    "9223372036854775",
    "9223372036854776",
    "18446744073709551615",
    "01",
    "-0",
    "+1",
    " 1",
    "1 ",
    "1.5",
    "abc",
    "",
];

/// Lengths of large values: around the log's sharing threshold (16 KiB)
/// and around 1 MiB, the smallest `proto-max-bulk-len`.
const BIG: &[usize] = &[16_383, 16_384, 16_385, 65_543, 1 << 20, (1 << 20) + 1];

/// Glob patterns for `KEYS`, `SCAN MATCH` and `CONFIG GET`.
const PATTERNS: &[&[u8]] = &[
    b"*",
    b"k*",
    b"?",
    b"[a-k]*",
    b"\\*",
    b"*[",
    b"k[^2]",
    b"",
    b"*max*",
    b"[",
    b"\\",
    b"a*b*c*d*e*f*g*h*i*j*",
];

/// The name of every command and subcommand the generator knows, which is
/// every one in kvstore's command table.
pub const NAMES: &[&str] = &[
    "PING",
    "ECHO",
    "EVAL",
    "EVAL_RO",
    "EVALSHA",
    "SCRIPT",
    "QUIT",
    "SELECT",
    "CLIENT",
    "GET",
    "SET",
    "GETSET",
    "SETNX",
    "INCR",
    "DECR",
    "INCRBY",
    "DECRBY",
    "APPEND",
    "STRLEN",
    "MGET",
    "MSET",
    "DEL",
    "EXISTS",
    "TYPE",
    "KEYS",
    "SCAN",
    "DBSIZE",
    "FLUSHALL",
    "FLUSHDB",
    "EXPIRE",
    "PEXPIRE",
    "EXPIREAT",
    "PEXPIREAT",
    "TTL",
    "PTTL",
    "PERSIST",
    "INFO",
    "BGREWRITEAOF",
    "CONFIG",
    "COMMAND",
    "NOSUCHCOMMAND",
    "SETEX",
    "PSETEX",
    "GETDEL",
    "GETEX",
    "INCRBYFLOAT",
    "MSETNX",
    "GETRANGE",
    "SUBSTR",
    "SETRANGE",
    "RENAME",
    "RENAMENX",
    "UNLINK",
    "COPY",
    "TOUCH",
    "RANDOMKEY",
    "EXPIRETIME",
    "PEXPIRETIME",
    "MOVE",
    "SWAPDB",
    "MULTI",
    "EXEC",
    "DISCARD",
    "WATCH",
    "UNWATCH",
    "AUTH",
    "HELLO",
    "HSET",
    "HSETNX",
    "HMSET",
    "HGET",
    "HMGET",
    "HDEL",
    "HEXISTS",
    "HLEN",
    "HSTRLEN",
    "HKEYS",
    "HVALS",
    "HGETALL",
    "HINCRBY",
    "HINCRBYFLOAT",
    "HRANDFIELD",
    "HSCAN",
    "LPUSH",
    "RPUSH",
    "LPUSHX",
    "RPUSHX",
    "LPOP",
    "RPOP",
    "LLEN",
    "LRANGE",
    "LINDEX",
    "LSET",
    "LINSERT",
    "LREM",
    "LTRIM",
    "LPOS",
    "RPOPLPUSH",
    "LMOVE",
    "LMPOP",
    "BLPOP",
    "BRPOP",
    "BRPOPLPUSH",
    "BLMOVE",
    "BLMPOP",
    "SADD",
    "SREM",
    "SCARD",
    "SISMEMBER",
    "SMISMEMBER",
    "SMEMBERS",
    "SRANDMEMBER",
    "SPOP",
    "SMOVE",
    "SINTER",
    "SINTERCARD",
    "SINTERSTORE",
    "SUNION",
    "SUNIONSTORE",
    "SDIFF",
    "SDIFFSTORE",
    "SSCAN",
    "SORT",
    "SORT_RO",
    "ZADD",
    "ZINCRBY",
    "ZREM",
    "ZCARD",
    "ZSCORE",
    "ZMSCORE",
    "ZRANK",
    "ZREVRANK",
    "ZCOUNT",
    "ZLEXCOUNT",
    "ZRANGE",
    "ZREVRANGE",
    "ZRANGEBYSCORE",
    "ZREVRANGEBYSCORE",
    "ZRANGEBYLEX",
    "ZREVRANGEBYLEX",
    "ZRANGESTORE",
    "ZREMRANGEBYRANK",
    "ZREMRANGEBYSCORE",
    "ZREMRANGEBYLEX",
    "ZPOPMIN",
    "ZPOPMAX",
    "ZRANDMEMBER",
    "ZSCAN",
    "ZUNION",
    "ZINTER",
    "ZDIFF",
    "ZUNIONSTORE",
    "ZINTERSTORE",
    "ZDIFFSTORE",
    "ZINTERCARD",
    "ZMPOP",
    "BZPOPMIN",
    "BZPOPMAX",
    "BZMPOP",
    "XADD",
    "XLEN",
    "XRANGE",
    "XREVRANGE",
    "XDEL",
    "XTRIM",
    "XSETID",
    "XREAD",
    "XGROUP",
    "XREADGROUP",
    "XACK",
    "XPENDING",
    "XCLAIM",
    "XAUTOCLAIM",
    "XINFO",
];

/// Field names of hashes: few, so that commands meet each other's fields.
const FIELDS: &[&str] = &["f", "g", "count", "", "f\r\nx"];

/// Database indexes: some that exist (16 by default), and some that do not.
const DBS: &[&str] = &["0", "1", "2", "15", "16", "-1", "x"];

/// Any command name: of [`NAMES`] or of a family's (see
/// `crate::any::families`), all alike likely.
fn any_name(inp: &mut dyn Choices) -> &'static str {
    use crate::any::families::{BIT_NAMES, GEO_NAMES, HLL_NAMES};
    let lists = [NAMES, HLL_NAMES, BIT_NAMES, GEO_NAMES];
    let mut at = inp.below(lists.iter().map(|l| l.len()).sum());
    for list in lists {
        match list.get(at) {
            Some(name) => return name,
            None => at -= list.len(),
        }
    }
    NAMES[0]
}

/// One command with its arguments.
pub fn command(inp: &mut dyn Choices, now: u64) -> Vec<Vec<u8>> {
    let name = any_name(inp);
    let mut args = vec![cased(inp, name.as_bytes())];
    match name {
        "PING" => {
            for _ in 0..inp.below(3) {
                args.push(value(inp));
            }
        }
        "ECHO" => args.push(value(inp)),
        "EVAL" | "EVAL_RO" => crate::any::scripts::eval_args(inp, &mut args),
        "EVALSHA" => {
            args.push(b"e0e1f9fabfc9d4800c877a703b823ac0578ff8db".to_vec());
            args.extend([b"1".to_vec(), key(inp), value(inp)]);
        }
        "SCRIPT" => crate::any::scripts::script_args(inp, &mut args),
        "CLIENT" => match inp.below(6) {
            5 => {
                let id = inp.pick(&["1", "2", "3", "0", "x"]);
                args.extend([word(inp, "UNBLOCK"), id.into()]);
                if inp.below(2) == 0 {
                    let how = inp.pick(&["TIMEOUT", "ERROR", "LATER"]);
                    args.push(word(inp, how));
                }
            }
            0 => args.extend([word(inp, "SETNAME"), value(inp)]),
            1 => args.push(word(inp, "GETNAME")),
            2 => args.push(word(inp, "ID")),
            3 => {
                let attr = inp.pick(&["LIB-NAME", "lib-ver", "bogus"]);
                args.extend([word(inp, "SETINFO"), attr.into(), value(inp)]);
            }
            _ => args.push(b"NOSUCH".to_vec()),
        },
        "SELECT" => args.push(match inp.below(2) {
            0 => inp.pick(DBS).into(),
            _ => number(inp, now),
        }),
        "GET" | "INCR" | "DECR" | "STRLEN" | "TYPE" | "TTL" | "PTTL" | "PERSIST" => {
            args.push(key(inp))
        }
        "SET" => {
            args.extend([key(inp), value(inp)]);
            for _ in 0..inp.below(4) {
                set_option(inp, now, &mut args);
            }
        }
        "GETSET" | "SETNX" | "APPEND" => args.extend([key(inp), value(inp)]),
        "INCRBY" | "DECRBY" => args.extend([key(inp), number(inp, now)]),
        "MGET" | "DEL" | "EXISTS" => {
            for _ in 0..1 + inp.below(4) {
                args.push(key(inp));
            }
        }
        "MSET" => {
            for _ in 0..1 + inp.below(3) {
                args.extend([key(inp), value(inp)]);
            }
        }
        "KEYS" => args.push(inp.pick(PATTERNS).to_vec()),
        "SCAN" => {
            args.push(match inp.below(4) {
                0 => b"0".to_vec(),
                1 => inp.u64().to_string().into_bytes(),
                _ => number(inp, now),
            });
            for _ in 0..inp.below(3) {
                match inp.below(4) {
                    0 => args.extend([word(inp, "MATCH"), inp.pick(PATTERNS).to_vec()]),
                    1 => args.extend([word(inp, "COUNT"), number(inp, now)]),
                    2 => args.extend([
                        word(inp, "TYPE"),
                        inp.pick(&["string", "hash", "set"]).into(),
                    ]),
                    _ => args.push(word(inp, "BOGUS")),
                }
            }
        }
        "FLUSHALL" | "FLUSHDB" if inp.below(2) == 0 => {
            let mode = inp.pick(&["ASYNC", "SYNC", "NOW"]);
            args.push(word(inp, mode));
        }
        "EXPIRE" | "PEXPIRE" | "EXPIREAT" | "PEXPIREAT" => {
            args.extend([key(inp), expiry(inp, name, now)]);
            for _ in 0..inp.below(3) {
                let condition = inp.pick(&["NX", "XX", "GT", "LT", "EX"]);
                args.push(word(inp, condition));
            }
        }
        "INFO" => {
            for _ in 0..inp.below(3) {
                let section = inp.pick(&[
                    "memory",
                    "keyspace",
                    "server",
                    "stats",
                    "persistence",
                    "clients",
                    "all",
                    "nosuch",
                ]);
                args.push(word(inp, section));
            }
        }
        "CONFIG" => config(inp, &mut args),
        "COMMAND" => match inp.below(6) {
            0 => {}
            1 => args.push(word(inp, "COUNT")),
            2 => args.push(word(inp, "DOCS")),
            3 => {
                let name = any_name(inp);
                args.extend([word(inp, "INFO"), word(inp, name)]);
            }
            4 => args.push(word(inp, "LIST")),
            _ => args.push(word(inp, "NOSUCH")),
        },
        "SETEX" | "PSETEX" => {
            let time = expiry(inp, if name == "SETEX" { "EX" } else { "PX" }, now);
            args.extend([key(inp), time, value(inp)]);
        }
        "GETDEL" | "EXPIRETIME" | "PEXPIRETIME" => args.push(key(inp)),
        "GETEX" => {
            args.push(key(inp));
            if inp.below(3) > 0 {
                let option = inp.pick(&["EX", "PX", "EXAT", "PXAT", "PERSIST", "BOGUS"]);
                args.push(word(inp, option));
                if option != "PERSIST" && option != "BOGUS" {
                    args.push(expiry(inp, option, now));
                }
            }
        }
        "INCRBYFLOAT" => {
            let n = match inp.below(3) {
                0 => number(inp, now),
                _ => inp
                    .pick(&[
                        "1.5", "-0.25", "1e3", "1e308", "-1e308", "inf", "nan", "0.1", "3.0e-5",
                        " 1", "1.",
                    ])
                    .into(),
            };
            args.extend([key(inp), n]);
        }
        "MSETNX" => {
            for _ in 0..1 + inp.below(3) {
                args.extend([key(inp), value(inp)]);
            }
        }
        "GETRANGE" | "SUBSTR" => args.extend([key(inp), number(inp, now), number(inp, now)]),
        "SETRANGE" => args.extend([key(inp), number(inp, now), value(inp)]),
        "RENAME" | "RENAMENX" => args.extend([key(inp), key(inp)]),
        "UNLINK" | "TOUCH" | "WATCH" => {
            for _ in 0..1 + inp.below(3) {
                args.push(key(inp));
            }
        }
        "COPY" => {
            args.extend([key(inp), key(inp)]);
            for _ in 0..inp.below(3) {
                match inp.below(2) {
                    0 => args.extend([word(inp, "DB"), inp.pick(DBS).into()]),
                    _ => args.push(word(inp, "REPLACE")),
                }
            }
        }
        "MOVE" => args.extend([key(inp), inp.pick(DBS).into()]),
        "SWAPDB" => args.extend([inp.pick(DBS).into(), inp.pick(DBS).into()]),
        "AUTH" => {
            for _ in 0..1 + inp.below(2) {
                args.push(value(inp));
            }
        }
        "HELLO" if inp.below(2) == 0 => args.push(inp.pick(&["2", "3", "1", "x"]).into()),
        "HSET" | "HMSET" => {
            args.push(key(inp));
            for _ in 0..1 + inp.below(3) {
                args.extend([field(inp), value(inp)]);
            }
        }
        "HSETNX" => args.extend([key(inp), field(inp), value(inp)]),
        "HGET" | "HEXISTS" | "HSTRLEN" => args.extend([key(inp), field(inp)]),
        "HMGET" | "HDEL" => {
            args.push(key(inp));
            for _ in 0..1 + inp.below(3) {
                args.push(field(inp));
            }
        }
        "HLEN" | "HKEYS" | "HVALS" | "HGETALL" => args.push(key(inp)),
        "HINCRBY" | "HINCRBYFLOAT" => args.extend([key(inp), field(inp), number(inp, now)]),
        "HRANDFIELD" => {
            args.push(key(inp));
            if inp.below(2) == 0 {
                args.push(inp.pick(&["1", "3", "-3", "0", "-1000", "x"]).into());
                if inp.below(2) == 0 {
                    args.push(word(inp, "WITHVALUES"));
                }
            }
        }
        "HSCAN" => {
            args.extend([key(inp), inp.pick(&["0", "1", "7", "x"]).into()]);
            if inp.below(2) == 0 {
                args.extend([word(inp, "MATCH"), inp.pick(PATTERNS).to_vec()]);
            }
            if inp.below(2) == 0 {
                args.extend([word(inp, "COUNT"), number(inp, now)]);
            }
        }
        "LPUSH" | "RPUSH" | "LPUSHX" | "RPUSHX" | "LPOP" | "RPOP" | "LLEN" | "LRANGE"
        | "LINDEX" | "LSET" | "LINSERT" | "LREM" | "LTRIM" | "LPOS" | "RPOPLPUSH" | "LMOVE"
        | "LMPOP" | "BLPOP" | "BRPOP" | "BRPOPLPUSH" | "BLMOVE" | "BLMPOP" => {
            list_args(inp, name, now, &mut args)
        }
        "SADD" | "SREM" | "SCARD" | "SISMEMBER" | "SMISMEMBER" | "SMEMBERS" | "SRANDMEMBER"
        | "SPOP" | "SMOVE" | "SINTER" | "SINTERCARD" | "SINTERSTORE" | "SUNION" | "SUNIONSTORE"
        | "SDIFF" | "SDIFFSTORE" | "SSCAN" => set_args(inp, name, now, &mut args),
        "SORT" | "SORT_RO" => sort_args(inp, now, &mut args),
        zset if zset.starts_with('Z') || zset.starts_with("BZ") => {
            zset_args(inp, name, now, &mut args)
        }
        stream if stream.starts_with('X') => stream_args(inp, name, now, &mut args),
        hll if crate::any::families::HLL_NAMES.contains(&hll) => {
            crate::any::families::hll_args(inp, name, &mut args)
        }
        bits if crate::any::families::BIT_NAMES.contains(&bits) => {
            crate::any::families::bit_args(inp, name, &mut args)
        }
        geo if crate::any::families::GEO_NAMES.contains(&geo) => {
            crate::any::families::geo_args(inp, name, &mut args)
        }
        "NOSUCHCOMMAND" => {
            for _ in 0..inp.below(3) {
                args.push(value(inp));
            }
        }
        _ => {} // QUIT, DBSIZE, BGREWRITEAOF, RANDOMKEY, MULTI, ...: none.
    }
    // Now and then an argument too few or too many.
    match inp.below(16) {
        0 if args.len() > 1 => {
            args.pop();
        }
        1 => args.push(value(inp)),
        _ => {}
    }
    args
}

/// The arguments of a list command `name` (`LPUSH` ... `BLMPOP`): keys
/// the other commands share, elements among a few (so `LREM`, `LPOS` and
/// `LINSERT` find them) or any value, indexes and counts among edge cases,
/// ends, and blocking timeouts that are short, zero, negative or not
/// numbers.
fn list_args(inp: &mut dyn Choices, name: &str, now: u64, args: &mut Vec<Vec<u8>>) {
    let element = |inp: &mut dyn Choices| match inp.below(3) {
        0 => value(inp),
        _ => inp.pick(&["a", "b", ""]).into(),
    };
    let index = |inp: &mut dyn Choices| match inp.below(3) {
        0 => number(inp, now),
        _ => inp.pick(&["0", "1", "-1", "2", "-3", "100"]).into(),
    };
    let end = |inp: &mut dyn Choices| {
        let end = inp.pick(&["LEFT", "RIGHT", "UP"]);
        word(inp, end)
    };
    let timeout = |inp: &mut dyn Choices| -> Vec<u8> {
        inp.pick(&["0", "0.01", "1", "-1", "x", "1e300", "0.5"])
            .into()
    };
    let keys = |inp: &mut dyn Choices, args: &mut Vec<Vec<u8>>| {
        for _ in 0..1 + inp.below(3) {
            args.push(key(inp));
        }
    };
    match name {
        "LPUSH" | "RPUSH" | "LPUSHX" | "RPUSHX" => {
            args.push(key(inp));
            for _ in 0..1 + inp.below(4) {
                args.push(element(inp));
            }
        }
        "LPOP" | "RPOP" => {
            args.push(key(inp));
            if inp.below(2) == 0 {
                args.push(index(inp));
            }
        }
        "LLEN" => args.push(key(inp)),
        "LRANGE" | "LTRIM" => args.extend([key(inp), index(inp), index(inp)]),
        "LINDEX" => args.extend([key(inp), index(inp)]),
        "LSET" => args.extend([key(inp), index(inp), element(inp)]),
        "LINSERT" => {
            let place = inp.pick(&["BEFORE", "AFTER", "AT"]);
            args.extend([key(inp), word(inp, place), element(inp), element(inp)]);
        }
        "LREM" => args.extend([key(inp), index(inp), element(inp)]),
        "LPOS" => {
            args.extend([key(inp), element(inp)]);
            for _ in 0..inp.below(4) {
                let option = inp.pick(&["RANK", "COUNT", "MAXLEN", "BOGUS"]);
                args.extend([word(inp, option), index(inp)]);
            }
        }
        "RPOPLPUSH" => args.extend([key(inp), key(inp)]),
        "LMOVE" => args.extend([key(inp), key(inp), end(inp), end(inp)]),
        "BRPOPLPUSH" => args.extend([key(inp), key(inp), timeout(inp)]),
        "BLMOVE" => args.extend([key(inp), key(inp), end(inp), end(inp), timeout(inp)]),
        "BLPOP" | "BRPOP" => {
            keys(inp, args);
            args.push(timeout(inp));
        }
        _ => {
            // LMPOP, BLMPOP: [timeout] numkeys key... end [COUNT n]
            if name == "BLMPOP" {
                args.push(timeout(inp));
            }
            let at = args.len();
            args.push(Vec::new());
            keys(inp, args);
            args[at] = match inp.below(8) {
                0 => index(inp),
                _ => (args.len() - at - 1).to_string().into_bytes(),
            };
            args.push(end(inp));
            if inp.below(2) == 0 {
                args.extend([word(inp, "COUNT"), index(inp)]);
            }
        }
    }
}

/// The arguments of a set command `name` (`SADD` ... `SSCAN`): keys the
/// other commands share, members among a few integers and strings (so
/// sets meet, and intsets turn into hash tables) or any value, counts
/// among edge cases.
fn set_args(inp: &mut dyn Choices, name: &str, now: u64, args: &mut Vec<Vec<u8>>) {
    let member = |inp: &mut dyn Choices| match inp.below(3) {
        0 => value(inp),
        _ => inp.pick(&["1", "2", "-3", "a", "b", ""]).into(),
    };
    let count = |inp: &mut dyn Choices| match inp.below(3) {
        0 => number(inp, now),
        _ => inp.pick(&["0", "1", "2", "-2", "5", "-100"]).into(),
    };
    let keys = |inp: &mut dyn Choices, args: &mut Vec<Vec<u8>>| {
        for _ in 0..1 + inp.below(3) {
            args.push(key(inp));
        }
    };
    match name {
        "SADD" | "SREM" | "SMISMEMBER" => {
            args.push(key(inp));
            for _ in 0..1 + inp.below(4) {
                args.push(member(inp));
            }
        }
        "SCARD" | "SMEMBERS" => args.push(key(inp)),
        "SISMEMBER" => args.extend([key(inp), member(inp)]),
        "SRANDMEMBER" | "SPOP" => {
            args.push(key(inp));
            if inp.below(2) == 0 {
                args.push(count(inp));
            }
        }
        "SMOVE" => args.extend([key(inp), key(inp), member(inp)]),
        "SINTER" | "SUNION" | "SDIFF" => keys(inp, args),
        "SINTERSTORE" | "SUNIONSTORE" | "SDIFFSTORE" => {
            args.push(key(inp));
            keys(inp, args);
        }
        "SINTERCARD" => {
            let at = args.len();
            args.push(Vec::new());
            keys(inp, args);
            args[at] = match inp.below(8) {
                0 => count(inp),
                _ => (args.len() - at - 1).to_string().into_bytes(),
            };
            if inp.below(2) == 0 {
                args.extend([word(inp, "LIMIT"), count(inp)]);
            }
        }
        _ => {
            // SSCAN key cursor [MATCH pattern] [COUNT count]
            args.extend([key(inp), inp.pick(&["0", "1", "7", "x"]).into()]);
            if inp.below(2) == 0 {
                args.extend([word(inp, "MATCH"), inp.pick(PATTERNS).to_vec()]);
            }
            if inp.below(2) == 0 {
                args.extend([word(inp, "COUNT"), number(inp, now)]);
            }
        }
    }
}

/// The arguments of `SORT` and `SORT_RO`: a shared key, then options in
/// any order (some repeated, some unknown or missing their arguments):
/// `BY` and `GET` patterns whose `*` turns elements into the shared keys
/// (`k*` with element `2` is `k2`) or hash fields, `LIMIT` edge cases,
/// `ASC`/`DESC`, `ALPHA` and `STORE` (which `SORT_RO` refuses).
fn sort_args(inp: &mut dyn Choices, now: u64, args: &mut Vec<Vec<u8>>) {
    const SORT_PATTERNS: &[&str] = &["*", "k*", "#", "nosort", "*->f", "k*->g", "*->", "n*"];
    args.push(key(inp));
    for _ in 0..inp.below(5) {
        let option = inp.pick(&[
            "BY", "GET", "LIMIT", "ASC", "DESC", "ALPHA", "STORE", "BOGUS",
        ]);
        args.push(word(inp, option));
        match option {
            "BY" | "GET" => args.push(inp.pick(SORT_PATTERNS).into()),
            "LIMIT" => {
                for _ in 0..2 {
                    args.push(match inp.below(3) {
                        0 => number(inp, now),
                        _ => inp.pick(&["0", "1", "2", "-1", "10"]).into(),
                    });
                }
            }
            "STORE" => args.push(key(inp)),
            _ => {}
        }
    }
}

/// The arguments of a stream command `name` (`XADD` ... `XINFO`): shared
/// keys, IDs among edge cases (`*`, `ms-*`, `$`, `>`, exclusive bounds,
/// the largest ID, malformed ones), trimming options with `=`, `~` and
/// `LIMIT`, groups and consumers among a few (so commands meet each
/// other's), and blocking times that are short, zero or malformed.
fn stream_args(inp: &mut dyn Choices, name: &str, now: u64, args: &mut Vec<Vec<u8>>) {
    let id = |inp: &mut dyn Choices| -> Vec<u8> {
        match inp.below(3) {
            0 => number(inp, now),
            _ => inp
                .pick(&[
                    "0",
                    "1",
                    "1-1",
                    "2-*",
                    "*",
                    "$",
                    ">",
                    "-",
                    "+",
                    "(1",
                    "0-0",
                    "x",
                    "1-x",
                    "18446744073709551615-18446744073709551615",
                    "(0-0",
                ])
                .into(),
        }
    };
    let group = |inp: &mut dyn Choices| -> Vec<u8> { inp.pick(&["g", "h", ""]).into() };
    let consumer = |inp: &mut dyn Choices| -> Vec<u8> { inp.pick(&["c", "d"]).into() };
    let count =
        |inp: &mut dyn Choices| -> Vec<u8> { inp.pick(&["0", "1", "2", "-1", "10", "x"]).into() };
    let trim = |inp: &mut dyn Choices, args: &mut Vec<Vec<u8>>| {
        let how = inp.pick(&["MAXLEN", "MINID", "LIMIT", "BOGUS"]);
        args.push(word(inp, how));
        if inp.below(2) == 0 {
            args.push(inp.pick(&["=", "~"]).into());
        }
        args.push(match how {
            "MINID" => id(inp),
            _ => count(inp),
        });
    };
    match name {
        "XADD" => {
            args.push(key(inp));
            for _ in 0..inp.below(3) {
                match inp.below(3) {
                    0 => args.push(word(inp, "NOMKSTREAM")),
                    _ => trim(inp, args),
                }
            }
            args.push(id(inp));
            for _ in 0..1 + inp.below(3) {
                args.extend([field(inp), value(inp)]);
            }
        }
        "XLEN" => args.push(key(inp)),
        "XRANGE" | "XREVRANGE" => {
            args.extend([key(inp), id(inp), id(inp)]);
            if inp.below(2) == 0 {
                args.extend([word(inp, "COUNT"), count(inp)]);
            }
        }
        "XDEL" => {
            args.push(key(inp));
            for _ in 0..1 + inp.below(3) {
                args.push(id(inp));
            }
        }
        "XTRIM" => {
            args.push(key(inp));
            for _ in 0..1 + inp.below(2) {
                trim(inp, args);
            }
        }
        "XSETID" => {
            args.extend([key(inp), id(inp)]);
            match inp.below(3) {
                0 => args.extend([word(inp, "ENTRIESADDED"), count(inp)]),
                1 => args.extend([word(inp, "MAXDELETEDID"), id(inp)]),
                _ => {}
            }
        }
        "XREAD" | "XREADGROUP" => {
            if name == "XREADGROUP" {
                args.extend([word(inp, "GROUP"), group(inp), consumer(inp)]);
                if inp.below(3) == 0 {
                    args.push(word(inp, "NOACK"));
                }
            }
            if inp.below(2) == 0 {
                args.extend([word(inp, "COUNT"), count(inp)]);
            }
            if inp.below(3) == 0 {
                let ms = inp.pick(&["0", "1", "10", "-1", "x"]);
                args.extend([word(inp, "BLOCK"), ms.into()]);
            }
            args.push(word(inp, "STREAMS"));
            let n = 1 + inp.below(2);
            for _ in 0..n {
                args.push(key(inp));
            }
            for _ in 0..n {
                args.push(id(inp));
            }
        }
        "XGROUP" => {
            let sub = inp.pick(&[
                "CREATE",
                "SETID",
                "DESTROY",
                "CREATECONSUMER",
                "DELCONSUMER",
                "HELP",
                "BOGUS",
            ]);
            args.push(word(inp, sub));
            if sub != "HELP" {
                args.extend([key(inp), group(inp)]);
            }
            match sub {
                "CREATE" | "SETID" => {
                    args.push(id(inp));
                    if inp.below(2) == 0 {
                        args.push(word(inp, "MKSTREAM"));
                    }
                    if inp.below(3) == 0 {
                        args.extend([word(inp, "ENTRIESREAD"), count(inp)]);
                    }
                }
                "CREATECONSUMER" | "DELCONSUMER" => args.push(consumer(inp)),
                _ => {}
            }
        }
        "XACK" => {
            args.extend([key(inp), group(inp), id(inp)]);
        }
        "XPENDING" => {
            args.extend([key(inp), group(inp)]);
            if inp.below(2) == 0 {
                if inp.below(2) == 0 {
                    args.extend([word(inp, "IDLE"), count(inp)]);
                }
                args.extend([id(inp), id(inp), count(inp)]);
                if inp.below(2) == 0 {
                    args.push(consumer(inp));
                }
            }
        }
        "XCLAIM" => {
            args.extend([key(inp), group(inp), consumer(inp), count(inp), id(inp)]);
            for _ in 0..inp.below(3) {
                let option = inp.pick(&[
                    "IDLE",
                    "TIME",
                    "RETRYCOUNT",
                    "FORCE",
                    "JUSTID",
                    "LASTID",
                    "BOGUS",
                ]);
                args.push(word(inp, option));
                match option {
                    "IDLE" | "TIME" | "RETRYCOUNT" => args.push(count(inp)),
                    "LASTID" => args.push(id(inp)),
                    _ => {}
                }
            }
        }
        "XAUTOCLAIM" => {
            args.extend([key(inp), group(inp), consumer(inp), count(inp), id(inp)]);
            if inp.below(2) == 0 {
                args.extend([word(inp, "COUNT"), count(inp)]);
            }
            if inp.below(3) == 0 {
                args.push(word(inp, "JUSTID"));
            }
        }
        _ => {
            // XINFO
            let sub = inp.pick(&["STREAM", "GROUPS", "CONSUMERS", "HELP"]);
            args.push(word(inp, sub));
            if sub != "HELP" {
                args.push(key(inp));
            }
            match sub {
                "CONSUMERS" => args.push(group(inp)),
                "STREAM" if inp.below(2) == 0 => {
                    args.push(word(inp, "FULL"));
                    if inp.below(2) == 0 {
                        args.extend([word(inp, "COUNT"), count(inp)]);
                    }
                }
                _ => {}
            }
        }
    }
}

/// The arguments of a sorted-set command `name` (`ZADD` ... `BZMPOP`):
/// shared keys, members among a few (so commands meet each other's) or
/// any value, scores, score and lex bounds and ranks among edge cases
/// (infinities, NaN, exclusive bounds, malformed ones), the options each
/// command takes (and some it does not), and blocking timeouts.
fn zset_args(inp: &mut dyn Choices, name: &str, now: u64, args: &mut Vec<Vec<u8>>) {
    let member = |inp: &mut dyn Choices| match inp.below(4) {
        0 => value(inp),
        _ => inp.pick(&["a", "b", "c", ""]).into(),
    };
    let score = |inp: &mut dyn Choices| -> Vec<u8> {
        inp.pick(&[
            "0", "1", "-1", "2.5", "1e300", "inf", "-inf", "+inf", "nan", "x", "", "0.1",
        ])
        .into()
    };
    let index = |inp: &mut dyn Choices| match inp.below(3) {
        0 => number(inp, now),
        _ => inp.pick(&["0", "1", "-1", "2", "-3", "100"]).into(),
    };
    let bound = |inp: &mut dyn Choices| -> Vec<u8> {
        inp.pick(&[
            "-inf", "+inf", "(1", "1", "(-inf", "0", "2.5", "x", "(", "-", "+", "[a", "(b", "[",
            "c",
        ])
        .into()
    };
    let timeout = |inp: &mut dyn Choices| -> Vec<u8> {
        inp.pick(&["0", "0.01", "1", "-1", "x", "0.5"]).into()
    };
    let option = |inp: &mut dyn Choices, args: &mut Vec<Vec<u8>>| {
        let option = inp.pick(&[
            "WITHSCORES",
            "LIMIT",
            "BYSCORE",
            "BYLEX",
            "REV",
            "WEIGHTS",
            "AGGREGATE",
            "COUNT",
            "MATCH",
            "BOGUS",
        ]);
        args.push(word(inp, option));
        match option {
            "LIMIT" => args.extend([index(inp), index(inp)]),
            "WEIGHTS" => args.extend([score(inp), score(inp)]),
            "AGGREGATE" => {
                let how = inp.pick(&["SUM", "MIN", "MAX", "AVG"]);
                args.push(word(inp, how));
            }
            "COUNT" => args.push(index(inp)),
            "MATCH" => args.push(inp.pick(PATTERNS).to_vec()),
            _ => {}
        }
    };
    let numkeys = |inp: &mut dyn Choices, args: &mut Vec<Vec<u8>>| {
        let at = args.len();
        args.push(Vec::new());
        for _ in 0..1 + inp.below(3) {
            args.push(key(inp));
        }
        args[at] = match inp.below(8) {
            0 => index(inp),
            _ => (args.len() - at - 1).to_string().into_bytes(),
        };
    };
    match name {
        "ZADD" => {
            args.push(key(inp));
            for _ in 0..inp.below(3) {
                let flag = inp.pick(&["NX", "XX", "GT", "LT", "CH", "INCR"]);
                args.push(word(inp, flag));
            }
            for _ in 0..1 + inp.below(4) {
                args.extend([score(inp), member(inp)]);
            }
        }
        "ZINCRBY" => args.extend([key(inp), score(inp), member(inp)]),
        "ZREM" | "ZMSCORE" => {
            args.push(key(inp));
            for _ in 0..1 + inp.below(3) {
                args.push(member(inp));
            }
        }
        "ZCARD" => args.push(key(inp)),
        "ZSCORE" | "ZRANK" | "ZREVRANK" => args.extend([key(inp), member(inp)]),
        "ZCOUNT" | "ZLEXCOUNT" | "ZREMRANGEBYSCORE" | "ZREMRANGEBYLEX" => {
            args.extend([key(inp), bound(inp), bound(inp)])
        }
        "ZREMRANGEBYRANK" => args.extend([key(inp), index(inp), index(inp)]),
        "ZRANGE" | "ZREVRANGE" | "ZRANGEBYSCORE" | "ZREVRANGEBYSCORE" | "ZRANGEBYLEX"
        | "ZREVRANGEBYLEX" | "ZRANGESTORE" => {
            if name == "ZRANGESTORE" {
                args.push(key(inp));
            }
            args.push(key(inp));
            match inp.below(2) {
                0 => args.extend([index(inp), index(inp)]),
                _ => args.extend([bound(inp), bound(inp)]),
            }
            for _ in 0..inp.below(3) {
                option(inp, args);
            }
        }
        "ZPOPMIN" | "ZPOPMAX" => {
            args.push(key(inp));
            if inp.below(2) == 0 {
                args.push(index(inp));
            }
        }
        "ZRANDMEMBER" => {
            args.push(key(inp));
            if inp.below(3) > 0 {
                args.push(index(inp));
                if inp.below(2) == 0 {
                    args.push(word(inp, "WITHSCORES"));
                }
            }
        }
        "ZSCAN" => {
            args.extend([key(inp), inp.pick(&["0", "1", "7", "x"]).into()]);
            for _ in 0..inp.below(2) {
                option(inp, args);
            }
        }
        "ZUNION" | "ZINTER" | "ZDIFF" | "ZINTERCARD" | "ZUNIONSTORE" | "ZINTERSTORE"
        | "ZDIFFSTORE" => {
            if name.ends_with("STORE") {
                args.push(key(inp));
            }
            numkeys(inp, args);
            for _ in 0..inp.below(3) {
                option(inp, args);
            }
        }
        "BZPOPMIN" | "BZPOPMAX" => {
            for _ in 0..1 + inp.below(3) {
                args.push(key(inp));
            }
            args.push(timeout(inp));
        }
        _ => {
            // ZMPOP, BZMPOP: [timeout] numkeys key... MIN|MAX [COUNT n]
            if name == "BZMPOP" {
                args.push(timeout(inp));
            }
            numkeys(inp, args);
            let end = inp.pick(&["MIN", "MAX", "MID"]);
            args.push(word(inp, end));
            if inp.below(2) == 0 {
                args.extend([word(inp, "COUNT"), index(inp)]);
            }
        }
    }
}

/// A hash field: mostly one of a few names, now and then any bytes.
fn field(inp: &mut dyn Choices) -> Vec<u8> {
    if inp.below(4) == 0 {
        value(inp)
    } else {
        inp.pick(FIELDS).as_bytes().to_vec()
    }
}

/// `SET`'s options, with the number some of them take.
fn set_option(inp: &mut dyn Choices, now: u64, args: &mut Vec<Vec<u8>>) {
    let option = inp.pick(&[
        "NX", "XX", "GET", "KEEPTTL", "EX", "PX", "EXAT", "PXAT", "BOGUS",
    ]);
    args.push(word(inp, option));
    if matches!(option, "EX" | "PX" | "EXAT" | "PXAT") {
        args.push(expiry(inp, option, now));
    }
}

/// `CONFIG GET|SET|RESETSTAT` with parameters that change what commands do.
fn config(inp: &mut dyn Choices, args: &mut Vec<Vec<u8>>) {
    match inp.below(4) {
        0 => args.extend([word(inp, "GET"), inp.pick(PATTERNS).to_vec()]),
        1 | 2 => {
            args.push(word(inp, "SET"));
            for _ in 0..1 + inp.below(2) {
                let name = inp.pick(&[
                    "maxmemory",
                    "proto-max-bulk-len",
                    "appendfsync",
                    "maxclients",
                    "auto-aof-rewrite-percentage",
                    "auto-aof-rewrite-min-size",
                    "port",
                    "save",
                    "set-max-intset-entries",
                    "zset-max-listpack-entries",
                    "zset-max-ziplist-value",
                    "maxmemory-policy",
                    "maxmemory-samples",
                    "lfu-log-factor",
                    "lfu-decay-time",
                    "hll-sparse-max-bytes",
                    "bogus",
                ]);
                let value = inp.pick(&[
                    "0",
                    "1000",
                    "1mb",
                    "2mb",
                    "100",
                    "64kb",
                    "always",
                    "no",
                    "yes",
                    "-1",
                    "abc",
                    "allkeys-lru",
                    "volatile-lru",
                    "allkeys-lfu",
                    "volatile-lfu",
                    "allkeys-random",
                    "volatile-random",
                    "volatile-ttl",
                    "noeviction",
                    "5",
                ]);
                args.extend([word(inp, name), value.into()]);
            }
        }
        _ => args.push(word(inp, "RESETSTAT")),
    }
}

/// `text` in upper, lower or mixed case, as Redis accepts names.
fn word(inp: &mut dyn Choices, text: &str) -> Vec<u8> {
    cased(inp, text.as_bytes())
}

fn cased(inp: &mut dyn Choices, text: &[u8]) -> Vec<u8> {
    match inp.below(8) {
        0 => text.to_ascii_lowercase(),
        1 => text
            .iter()
            .enumerate()
            .map(|(i, b)| {
                if i % 2 == 0 {
                    b.to_ascii_lowercase()
                } else {
                    *b
                }
            })
            .collect(),
        _ => text.to_vec(),
    }
}

/// One of the shared keys, or now and then a long one.
pub fn key(inp: &mut dyn Choices) -> Vec<u8> {
    match inp.below(16) {
        0 => vec![b'L'; 1000],
        _ => inp.pick(KEYS).to_vec(),
    }
}

/// A value: empty, bytes from the input, a number, or a large value.
pub fn value(inp: &mut dyn Choices) -> Vec<u8> {
    match inp.below(8) {
        0 => Vec::new(),
        1..=3 => inp.bytes(16),
        4 | 5 => inp.pick(NUMBERS).into(),
        6 => vec![inp.byte(); inp.pick(BIG)],
        _ => b"\x00\r\n\xff".to_vec(),
    }
}

/// An integer argument: edge cases, or a small or any 64-bit number.
fn number(inp: &mut dyn Choices, now: u64) -> Vec<u8> {
    match inp.below(6) {
        0..=2 => inp.pick(NUMBERS).into(),
        3 => (i64::from(inp.byte()) - 128).to_string().into_bytes(),
        4 => (inp.u64() as i64).to_string().into_bytes(),
        _ => (now / 1000).to_string().into_bytes(),
    }
}

/// An expiry argument for `option` (`EX`, `PXAT`, `EXPIREAT`, ...): mostly
/// close to the clock in the option's unit, else any number.
fn expiry(inp: &mut dyn Choices, option: &str, now: u64) -> Vec<u8> {
    if inp.below(3) == 0 {
        return number(inp, now);
    }
    let millis = option.starts_with('P');
    let absolute = option.ends_with("AT");
    let offset = i64::from(inp.byte()) - 64;
    let n = match (absolute, millis) {
        (true, true) => now as i64 + offset * 100,
        (true, false) => (now / 1000) as i64 + offset,
        (false, true) => offset * 100,
        (false, false) => offset,
    };
    n.to_string().into_bytes()
}
