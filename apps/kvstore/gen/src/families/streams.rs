//! Stream commands. For the differential test IDs are explicit (`*`
//! takes each server's own clock) and nothing answers with times: no
//! `BLOCK`, `XPENDING` in its summary form only, no `XINFO`, `XCLAIM`,
//! `XAUTOCLAIM` (idle times); the fuzzer has them all.

use crate::draw::{Check, Gen};

/// The stream commands, each with how often the differential test sends
/// it (0: never).
pub(crate) const NAMES: &[(&str, u8)] = &[
    ("XADD", 3),
    ("XLEN", 1),
    ("XRANGE", 1),
    ("XREVRANGE", 1),
    ("XDEL", 1),
    ("XTRIM", 1),
    ("XREAD", 1),
    ("XGROUP", 1),
    ("XREADGROUP", 2),
    ("XACK", 1),
    ("XPENDING", 1),
    ("XSETID", 0),
    ("XCLAIM", 0),
    ("XAUTOCLAIM", 0),
    ("XINFO", 0),
];

/// An ID, explicit mostly; the fuzzer's also `*`, huge and any number.
fn id(g: &mut Gen) -> Vec<u8> {
    if g.hostile() && g.chance(30) {
        return match g.below(3) {
            0 => g.number(),
            _ => g.pick_str(&[
                "*",
                "18446744073709551615-18446744073709551615",
                "(0-0",
                "1-x",
            ]),
        };
    }
    match g.below(4) {
        0 => g.pick_str(&["-", "+", "0", "0-0", "x", "(3", "1-*", "$", ">"]),
        1 => format!("{}-*", g.below(60)).into_bytes(),
        _ => format!("{}-{}", g.below(60), g.below(3)).into_bytes(),
    }
}

fn group(g: &mut Gen) -> Vec<u8> {
    match g.hostile() {
        true => g.pick_str(&["g", "h", ""]),
        false => g.pick_str(&["g", "h"]),
    }
}

fn consumer(g: &mut Gen) -> Vec<u8> {
    g.pick_str(&["c", "d"])
}

fn count(g: &mut Gen) -> Vec<u8> {
    g.pick_str(&["0", "1", "2", "5", "-1", "x"])
}

/// `MAXLEN`/`MINID`, `=` or `~`, a bound, now and then a `LIMIT`.
fn trim(g: &mut Gen, args: &mut Vec<Vec<u8>>) {
    let how = match g.hostile() {
        true => g.pick(&["MAXLEN", "MINID", "maxlen", "LIMIT", "BOGUS"]),
        false => g.pick(&["MAXLEN", "MINID", "maxlen"]),
    };
    args.push(g.word(how));
    if g.chance(50) {
        args.push(g.pick_str(&["=", "~"]));
    }
    args.push(if how == "MINID" { id(g) } else { count(g) });
    if g.chance(20) {
        let limit = count(g);
        args.extend([g.word("LIMIT"), limit]);
    }
}

/// The arguments of stream command `name`.
pub(crate) fn args(g: &mut Gen, name: &str, args: &mut Vec<Vec<u8>>) -> Check {
    match name {
        "XADD" => {
            args.push(g.key());
            if g.chance(20) {
                args.push(g.word("NOMKSTREAM"));
            }
            if g.chance(30) {
                trim(g, args);
            }
            args.push(id(g));
            for _ in 0..1 + g.below(2) {
                let (f, v) = (g.member(), g.value());
                args.extend([f, v]);
            }
        }
        "XLEN" => args.push(g.key()),
        "XRANGE" | "XREVRANGE" => {
            let (k, a, b) = (g.key(), id(g), id(g));
            args.extend([k, a, b]);
            if g.chance(40) {
                let n = count(g);
                args.extend([g.word("COUNT"), n]);
            }
        }
        "XDEL" => {
            args.push(g.key());
            for _ in 0..1 + g.below(2) {
                args.push(id(g));
            }
        }
        "XTRIM" => {
            args.push(g.key());
            trim(g, args);
        }
        "XSETID" => {
            let (k, at) = (g.key(), id(g));
            args.extend([k, at]);
            match g.below(3) {
                0 => args.extend([g.word("ENTRIESADDED"), count(g)]),
                1 => args.extend([g.word("MAXDELETEDID"), id(g)]),
                _ => {}
            }
        }
        "XREAD" | "XREADGROUP" => {
            if name == "XREADGROUP" {
                let (g_, c) = (group(g), consumer(g));
                args.extend([g.word("GROUP"), g_, c]);
                if g.chance(20) {
                    args.push(g.word("NOACK"));
                }
            }
            if g.chance(40) {
                let n = count(g);
                args.extend([g.word("COUNT"), n]);
            }
            if g.hostile() && g.chance(30) {
                let ms = g.pick_str(&["0", "1", "10", "-1", "x"]);
                args.extend([g.word("BLOCK"), ms]);
            }
            args.push(g.word("STREAMS"));
            let n = 1 + g.below(2);
            for _ in 0..n {
                args.push(g.key());
            }
            for _ in 0..n {
                let at = match g.chance(50) {
                    true if name == "XREAD" => b"$".to_vec(),
                    true => b">".to_vec(),
                    false => id(g),
                };
                args.push(at);
            }
        }
        "XGROUP" => {
            let sub = match g.hostile() {
                true => g.pick(&[
                    "CREATE",
                    "SETID",
                    "DESTROY",
                    "CREATECONSUMER",
                    "DELCONSUMER",
                    "HELP",
                    "BOGUS",
                ]),
                false => g.pick(&[
                    "CREATE",
                    "CREATE",
                    "SETID",
                    "DESTROY",
                    "CREATECONSUMER",
                    "DELCONSUMER",
                ]),
            };
            args.push(g.word(sub));
            if sub == "HELP" {
                return Check::Exact;
            }
            let (k, g_) = (g.key(), group(g));
            args.extend([k, g_]);
            match sub {
                "CREATE" | "SETID" => {
                    let at = if g.chance(30) { b"$".to_vec() } else { id(g) };
                    args.push(at);
                    if sub == "CREATE" && g.chance(50) {
                        args.push(g.word("MKSTREAM"));
                    }
                    if g.chance(20) {
                        let n = count(g);
                        args.extend([g.word("ENTRIESREAD"), n]);
                    }
                }
                "CREATECONSUMER" | "DELCONSUMER" => args.push(consumer(g)),
                _ => {}
            }
        }
        "XACK" => {
            let (k, g_) = (g.key(), group(g));
            args.extend([k, g_]);
            for _ in 0..1 + g.below(2) {
                args.push(id(g));
            }
        }
        "XPENDING" => {
            let (k, g_) = (g.key(), group(g));
            args.extend([k, g_]);
            // The extended form answers with idle times: the fuzzer's.
            if g.hostile() && g.chance(50) {
                if g.chance(50) {
                    args.extend([g.word("IDLE"), count(g)]);
                }
                args.extend([id(g), id(g), count(g)]);
                if g.chance(50) {
                    args.push(consumer(g));
                }
            }
        }
        "XCLAIM" | "XAUTOCLAIM" => {
            let (k, g_, c, n, at) = (g.key(), group(g), consumer(g), count(g), id(g));
            args.extend([k, g_, c, n, at]);
            if name == "XAUTOCLAIM" {
                if g.chance(50) {
                    args.extend([g.word("COUNT"), count(g)]);
                }
                if g.chance(30) {
                    args.push(g.word("JUSTID"));
                }
                return Check::Exact;
            }
            for _ in 0..g.below(3) {
                let option = g.pick(&[
                    "IDLE",
                    "TIME",
                    "RETRYCOUNT",
                    "FORCE",
                    "JUSTID",
                    "LASTID",
                    "BOGUS",
                ]);
                args.push(g.word(option));
                match option {
                    "IDLE" | "TIME" | "RETRYCOUNT" => args.push(count(g)),
                    "LASTID" => args.push(id(g)),
                    _ => {}
                }
            }
        }
        _ => {
            // XINFO
            let sub = g.pick(&["STREAM", "GROUPS", "CONSUMERS", "HELP"]);
            args.push(g.word(sub));
            if sub != "HELP" {
                args.push(g.key());
            }
            match sub {
                "CONSUMERS" => args.push(group(g)),
                "STREAM" if g.chance(50) => {
                    args.push(g.word("FULL"));
                    if g.chance(50) {
                        args.extend([g.word("COUNT"), count(g)]);
                    }
                }
                _ => {}
            }
        }
    }
    Check::Exact
}
