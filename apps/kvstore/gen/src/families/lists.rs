//! List commands. The blocking ones are the fuzzer's only: a blocked
//! client would stall the differential test's stream.

use crate::draw::{Check, Gen};

/// The list commands, each with how often the differential test sends
/// it (0: never).
pub(crate) const NAMES: &[(&str, u8)] = &[
    ("LPUSH", 2),
    ("RPUSH", 2),
    ("LPUSHX", 1),
    ("RPUSHX", 1),
    ("LPOP", 1),
    ("RPOP", 1),
    ("LLEN", 1),
    ("LRANGE", 1),
    ("LINDEX", 1),
    ("LSET", 1),
    ("LINSERT", 1),
    ("LREM", 1),
    ("LTRIM", 1),
    ("LPOS", 1),
    ("LMOVE", 1),
    ("RPOPLPUSH", 1),
    ("LMPOP", 1),
    ("BLPOP", 0),
    ("BRPOP", 0),
    ("BRPOPLPUSH", 0),
    ("BLMOVE", 0),
    ("BLMPOP", 0),
];

/// The arguments of list command `name`.
pub(crate) fn args(g: &mut Gen, name: &str, args: &mut Vec<Vec<u8>>) -> Check {
    let end = |g: &mut Gen| g.pick_word(&["LEFT", "RIGHT", "left", "MIDDLE"]);
    match name {
        "LMPOP" | "BLMPOP" => {
            if name == "BLMPOP" {
                args.push(g.timeout());
            }
            g.keys(args, true);
            args.push(g.pick_word(&["LEFT", "RIGHT", "UP"]));
            if g.chance(50) {
                args.extend([g.word("COUNT"), g.index()]);
            }
            return Check::Exact;
        }
        "LMOVE" | "RPOPLPUSH" | "BLMOVE" | "BRPOPLPUSH" => {
            let (a, b) = (g.key(), g.key());
            args.extend([a, b]);
            if name.ends_with("LMOVE") {
                for _ in 0..2 {
                    args.push(end(g));
                }
            }
            if name.starts_with('B') {
                args.push(g.timeout());
            }
            return Check::Exact;
        }
        "BLPOP" | "BRPOP" => return g.blocking_pop(args),
        _ => {}
    }
    args.push(g.key());
    match name {
        "LPUSH" | "RPUSH" | "LPUSHX" | "RPUSHX" => g.members(args, 1),
        "LPOP" | "RPOP" if g.chance(40) => args.push(g.index()),
        "LRANGE" | "LTRIM" => {
            let (a, b) = (g.index(), g.index());
            args.extend([a, b]);
        }
        "LINDEX" => args.push(g.index()),
        "LSET" => {
            let (i, v) = (g.index(), g.member());
            args.extend([i, v]);
        }
        "LINSERT" => {
            args.push(g.pick_word(&["BEFORE", "AFTER", "after", "NEAR"]));
            let (p, v) = (g.member(), g.member());
            args.extend([p, v]);
        }
        "LREM" => {
            let (n, v) = (g.index(), g.member());
            args.extend([n, v]);
        }
        "LPOS" => {
            args.push(g.member());
            for _ in 0..g.below(3) {
                let option = g.pick(&["RANK", "COUNT", "MAXLEN", "BAD"]);
                args.push(g.word(option));
                if option != "BAD" {
                    args.push(g.index());
                }
            }
        }
        _ => {}
    }
    Check::Exact
}
