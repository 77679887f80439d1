//! Scripts: `EVAL` with a body on one key and one value, commands through
//! `redis.call` and `redis.pcall` with their replies converted both ways
//! (a hash's fields in any order, as `HGETALL`'s own),
//! Lua's numbers and strings, and the errors of scripts and of their
//! commands (whose texts name the script by its SHA-1). The fuzzer's
//! bodies put statements before the result (writes, `SELECT`,
//! replication modes, logging, large strings, loops: every loop is
//! bounded, so a script runs to its end), and it also sends `EVAL_RO`,
//! `EVALSHA` and `SCRIPT`. Both send `FUNCTION LOAD` of one library and
//! `FCALL`/`FCALL_RO` of its functions.

use crate::draw::{Check, Gen};

/// The scripting commands, each with how often the differential test
/// sends it (0: never).
pub(crate) const NAMES: &[(&str, u8)] = &[
    ("EVAL", 2),
    ("EVAL_RO", 0),
    ("EVALSHA", 0),
    ("SCRIPT", 0),
    ("FCALL", 1),
];

/// The library functions are called from: one that writes, one flagged
/// `no-writes`.
const LIBRARY: &str = "#!lua name=fuzz
redis.register_function('fz_set', function(keys, args) return redis.call('SET', keys[1], args[1]) end)
redis.register_function{function_name='fz_get', callback=function(keys) return redis.call('GET', keys[1]) end, flags={'no-writes'}}";

/// Whole bodies whose replies Redis must match (a TTL read through a
/// script compares as `TTL` does: the servers answer at different
/// moments).
const BODIES: &[&str] = &[
    "return redis.call('SET', KEYS[1], ARGV[1])",
    "return redis.call('GET', KEYS[1])",
    "return redis.pcall('INCRBY', KEYS[1], ARGV[1])",
    "return redis.call('INCRBY', KEYS[1], ARGV[1])",
    "return redis.call('APPEND', KEYS[1], ARGV[1])",
    "return {redis.call('EXISTS', KEYS[1]), redis.call('TYPE', KEYS[1]), tonumber(ARGV[1]), ARGV[1] == ''}",
    "return redis.call('RPUSH', KEYS[1], ARGV[1], ARGV[1])",
    "return redis.call('LRANGE', KEYS[1], 0, -1)",
    "return redis.pcall('HGETALL', KEYS[1])",
    "return redis.call('DEL', KEYS[1])",
    "local v = redis.call('INCR', KEYS[1]) return {v, v * 1.5, tostring(v / 3), v % 7 == 0}",
    "return redis.call('nosuch', KEYS[1])",
    "return redis.call('GET', KEYS[1], ARGV[1])",
    "error('failed at ' .. #ARGV[1])",
    "return undefined_global",
    "new_global = 1",
    "return string.format('%5.1f|%d|%g|%x', tonumber(ARGV[1]) or 0.25, #ARGV[1], #ARGV[1] / 7, #ARGV[1])",
    "return redis.call('TTL', KEYS[1])",
    "return redis.status_reply(redis.sha1hex(ARGV[1]))",
    "return redis.call('SELECT', '1') and redis.call('SET', KEYS[1], ARGV[1])",
    "return 1 +",
];

/// The fuzzer's statements before a body.
const STATEMENTS: &[&str] = &[
    "redis.call('SET', KEYS[1], ARGV[1])",
    "redis.pcall('INCRBY', KEYS[1], ARGV[1])",
    "redis.pcall('HSET', KEYS[1], ARGV[1], KEYS[1])",
    "redis.pcall('SADD', KEYS[1], ARGV[1])",
    "redis.pcall('ZADD', KEYS[1], #ARGV[1], ARGV[1])",
    "redis.call('PEXPIRE', KEYS[1], 100000)",
    "redis.call('SELECT', '2')",
    "redis.pcall('XADD', KEYS[1], '*', 'f', ARGV[1])",
    "redis.set_repl(redis.REPL_NONE)",
    "redis.set_repl(redis.REPL_ALL)",
    "redis.log(redis.LOG_NOTICE, ARGV[1])",
    "local t = {} for i = 1, 100 do t[i] = ARGV[1] .. i end",
    "local s = string.rep(ARGV[1] .. 'x', 100000)",
    "if redis.pcall('GET', KEYS[1]) == false then redis.call('SET', KEYS[1], 1) end",
    "redis.call('MULTI')",
];

/// The fuzzer's other results: replies of every Lua type, error and
/// status tables, a table that holds itself, nothing.
const RESULTS: &[&str] = &[
    "return redis.pcall('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')",
    "return {1, 'two', {3.5, false, true}, nil, 5}",
    "return {err = ARGV[1]}",
    "return {ok = ARGV[1]}",
    "return bit.tohex(#ARGV[1]) .. string.format('%5.2f %g', #ARGV[1] / 3, 1e300)",
    "local t = {} t[1] = t return t",
    "return tonumber(ARGV[1])",
    "",
];

/// A body: one of [`BODIES`], for the fuzzer after a few statements, or
/// one of its own results.
fn body(g: &mut Gen) -> String {
    let mut body = String::new();
    if g.hostile() {
        for _ in 0..g.below(4) {
            body.push_str(g.pick(STATEMENTS));
            body.push('\n');
        }
        if g.chance(30) {
            body.push_str(g.pick(RESULTS));
            return body;
        }
    }
    body.push_str(g.pick(BODIES));
    body
}

/// The arguments of scripting command `name`.
pub(crate) fn args(g: &mut Gen, name: &str, args: &mut Vec<Vec<u8>>) -> Check {
    match name {
        "SCRIPT" => {
            match g.below(4) {
                0 => {
                    let b = body(g);
                    args.extend([g.word("LOAD"), b.into_bytes()]);
                }
                1 => args.extend([g.word("EXISTS"), SHA.into()]),
                2 => args.push(g.word("FLUSH")),
                _ => args.push(g.word("KILL")),
            }
            return Check::Exact;
        }
        "EVALSHA" => args.push(SHA.into()),
        "FCALL" => {
            // The library loaded (again), or one of its functions called
            // (before the first load too: `Function not found` on both).
            let (key, value) = (g.key(), g.value());
            let words: &[&[u8]] = match g.below(5) {
                0 => &[b"FUNCTION", b"LOAD", b"REPLACE", LIBRARY.as_bytes()],
                1 => &[b"FCALL", b"fz_set", b"1", &key, &value],
                2 => &[b"FCALL_RO", b"fz_get", b"1", &key],
                3 => &[b"FCALL_RO", b"fz_set", b"1", &key, &value],
                _ => &[b"FCALL", b"nosuch", b"0"],
            };
            *args = words.iter().map(|w| w.to_vec()).collect();
            return Check::Exact;
        }
        _ => {
            let b = body(g);
            args.push(b.into_bytes());
        }
    }
    let ttl = args[1].windows(5).any(|w| w == b"'TTL'");
    // A hash's fields come in each server's own order (Redis's hash table
    // once a value is large), as for `HGETALL` itself.
    let unordered = args[1].windows(9).any(|w| w == b"'HGETALL'");
    let numkeys = match g.hostile() {
        true => g.pick_str(&["1", "1", "0", "2", "-1", "x"]),
        false => b"1".to_vec(),
    };
    args.extend([numkeys, g.key(), g.value()]);
    if ttl {
        Check::Ttl(5)
    } else if unordered {
        Check::AnyOrder
    } else {
        Check::Exact
    }
}

/// The SHA-1 of a body `SCRIPT LOAD` may have loaded.
const SHA: &str = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db";
