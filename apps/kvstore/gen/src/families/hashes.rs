//! Hash commands. `HRANDFIELD` compares by kind (it picks at random);
//! `HSCAN` is the fuzzer's only (cursors are each server's own).

use crate::draw::{Check, Gen};

/// The hash commands, each with how often the differential test sends
/// it (0: never).
pub(crate) const NAMES: &[(&str, u8)] = &[
    ("HSET", 2),
    ("HSETNX", 1),
    ("HGET", 1),
    ("HMGET", 1),
    ("HDEL", 1),
    ("HLEN", 1),
    ("HEXISTS", 1),
    ("HSTRLEN", 1),
    ("HINCRBY", 1),
    ("HINCRBYFLOAT", 1),
    ("HKEYS", 1),
    ("HVALS", 1),
    ("HGETALL", 1),
    ("HRANDFIELD", 1),
    ("HMSET", 1),
    ("HSCAN", 0),
];

/// The arguments of hash command `name`.
pub(crate) fn args(g: &mut Gen, name: &str, args: &mut Vec<Vec<u8>>) -> Check {
    args.push(g.key());
    match name {
        "HSET" | "HMSET" => {
            for _ in 0..1 + g.below(3) {
                let (f, v) = (g.member(), g.value());
                args.extend([f, v]);
            }
        }
        "HSETNX" => {
            let (f, v) = (g.member(), g.value());
            args.extend([f, v]);
        }
        "HGET" | "HEXISTS" | "HSTRLEN" => args.push(g.member()),
        "HMGET" | "HDEL" => g.members(args, 1),
        "HINCRBY" => {
            let (f, n) = (g.member(), g.number());
            args.extend([f, n]);
        }
        "HINCRBYFLOAT" => {
            let f = g.member();
            let by = g.float();
            args.extend([f, by]);
        }
        "HKEYS" | "HVALS" | "HGETALL" => return Check::AnyOrder,
        "HRANDFIELD" => return g.random_count(args, Some("WITHVALUES")),
        "HSCAN" => return g.member_scan(args),
        _ => {}
    }
    Check::Exact
}
