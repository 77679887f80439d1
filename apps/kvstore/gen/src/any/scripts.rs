//! Scripts for `EVAL`: bodies put together from statements that run
//! commands through `redis.call`/`redis.pcall` on the script's keys and
//! arguments, convert replies both ways and fail in the ways scripts fail
//! (errors, compile errors, past the memory limit). Every loop is bounded:
//! a script runs to its end.

use crate::any::{key, value};
use crate::choices::Choices;

/// Statements a body is made of.
const STATEMENTS: &[&str] = &[
    "redis.call('SET', KEYS[1], ARGV[1])",
    "redis.pcall('INCRBY', KEYS[1], ARGV[1])",
    "redis.call('APPEND', KEYS[1], ARGV[1])",
    "redis.call('RPUSH', KEYS[1], ARGV[1], ARGV[1])",
    "redis.pcall('HSET', KEYS[1], ARGV[1], KEYS[1])",
    "redis.pcall('SADD', KEYS[1], ARGV[1])",
    "redis.pcall('ZADD', KEYS[1], #ARGV[1], ARGV[1])",
    "redis.call('DEL', KEYS[1])",
    "redis.call('PEXPIRE', KEYS[1], 100000)",
    "redis.call('SELECT', '2')",
    "redis.pcall('XADD', KEYS[1], '*', 'f', ARGV[1])",
    "redis.set_repl(redis.REPL_NONE)",
    "redis.set_repl(redis.REPL_ALL)",
    "redis.log(redis.LOG_NOTICE, ARGV[1])",
    "local t = {} for i = 1, 100 do t[i] = ARGV[1] .. i end",
    "local s = string.rep(ARGV[1] .. 'x', 100000)",
    "if redis.pcall('GET', KEYS[1]) == false then redis.call('SET', KEYS[1], 1) end",
    "redis.call('nosuch')",
    "error(ARGV[1])",
    "x = 1",
    "redis.call('MULTI')",
];

/// What a body returns.
const RESULTS: &[&str] = &[
    "return redis.call('GET', KEYS[1])",
    "return redis.pcall('LRANGE', KEYS[1], 0, -1)",
    "return redis.pcall('HGETALL', KEYS[1])",
    "return redis.pcall('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')",
    "return {1, 'two', {3.5, false, true}, nil, 5}",
    "return {err = ARGV[1]}",
    "return {ok = ARGV[1]}",
    "return redis.sha1hex(ARGV[1])",
    "return bit.tohex(#ARGV[1]) .. string.format('%5.2f %g', #ARGV[1] / 3, 1e300)",
    "local t = {} t[1] = t return t",
    "return tonumber(ARGV[1])",
    "return 1 +",
    "",
];

/// The arguments of `EVAL` (or, one time in four, of `EVALSHA` with the
/// body's SHA-1 or a made-up one): a body, one key and one argument.
pub fn eval_args(inp: &mut dyn Choices, args: &mut Vec<Vec<u8>>) {
    let mut body = String::new();
    for _ in 0..inp.below(4) {
        body.push_str(inp.pick(STATEMENTS));
        body.push('\n');
    }
    body.push_str(inp.pick(RESULTS));
    args.push(body.into_bytes());
    args.push(inp.pick(&["1", "1", "0", "2", "-1", "x"]).into());
    args.push(key(inp));
    args.push(value(inp));
}

/// The arguments of `SCRIPT`: a subcommand and what it takes.
pub fn script_args(inp: &mut dyn Choices, args: &mut Vec<Vec<u8>>) {
    match inp.below(4) {
        0 => {
            args.push(b"LOAD".to_vec());
            args.push(inp.pick(RESULTS).into());
        }
        1 => {
            args.push(b"EXISTS".to_vec());
            args.push(b"e0e1f9fabfc9d4800c877a703b823ac0578ff8db".to_vec());
        }
        2 => args.push(b"FLUSH".to_vec()),
        _ => args.push(b"KILL".to_vec()),
    }
}
