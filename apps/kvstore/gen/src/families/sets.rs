//! Set commands. `SRANDMEMBER` compares by kind (it picks at random);
//! `SPOP` and `SSCAN` are the fuzzer's only (the two servers would pop
//! different members and their data would part; cursors are each
//! server's own).

use crate::draw::{Check, Gen};

/// The set commands, each with how often the differential test sends it
/// (0: never).
pub(crate) const NAMES: &[(&str, u8)] = &[
    ("SADD", 3),
    ("SREM", 1),
    ("SCARD", 1),
    ("SISMEMBER", 1),
    ("SMISMEMBER", 1),
    ("SMEMBERS", 1),
    ("SMOVE", 1),
    ("SINTER", 1),
    ("SUNION", 1),
    ("SDIFF", 1),
    ("SINTERSTORE", 1),
    ("SUNIONSTORE", 1),
    ("SDIFFSTORE", 1),
    ("SINTERCARD", 1),
    ("SRANDMEMBER", 1),
    ("SPOP", 0),
    ("SSCAN", 0),
];

/// The arguments of set command `name`.
pub(crate) fn args(g: &mut Gen, name: &str, args: &mut Vec<Vec<u8>>) -> Check {
    match name {
        "SINTER" | "SUNION" | "SDIFF" => {
            g.keys(args, false);
            return Check::AnyOrder;
        }
        "SINTERSTORE" | "SUNIONSTORE" | "SDIFFSTORE" => {
            args.push(g.key());
            g.keys(args, false);
            return Check::Exact;
        }
        "SINTERCARD" => {
            g.keys(args, true);
            if g.chance(40) {
                args.extend([g.word("LIMIT"), g.index()]);
            }
            return Check::Exact;
        }
        "SMOVE" => {
            let (a, b, m) = (g.key(), g.key(), g.member());
            args.extend([a, b, m]);
            return Check::Exact;
        }
        _ => {}
    }
    args.push(g.key());
    match name {
        "SADD" | "SREM" | "SMISMEMBER" => g.members(args, 1),
        "SISMEMBER" => args.push(g.member()),
        "SMEMBERS" => return Check::AnyOrder,
        "SRANDMEMBER" | "SPOP" => return g.random_count(args, None),
        "SSCAN" => return g.member_scan(args),
        _ => {}
    }
    Check::Exact
}
