//! String commands. For the differential test `INCRBYFLOAT` works on a
//! key of its own with binary fractions: Redis computes in the x86 80-bit
//! long double and prints it whole (`1e400` is a 400-digit number there,
//! and sums of tenths drift in its last digits); kvstore adds plain
//! decimals exactly and the rest as doubles, so only values all three
//! represent exactly compare. The fuzzer's take any number.

use super::keys::expiry;
use crate::draw::{Check, Gen};

/// The string commands, each with how often the differential test sends
/// it (0: never).
pub(crate) const NAMES: &[(&str, u8)] = &[
    ("GET", 2),
    ("SET", 3),
    ("GETSET", 1),
    ("SETNX", 1),
    ("INCR", 1),
    ("DECR", 1),
    ("INCRBY", 1),
    ("DECRBY", 1),
    ("APPEND", 1),
    ("STRLEN", 1),
    ("MGET", 1),
    ("MSET", 1),
    ("SETEX", 1),
    ("PSETEX", 0),
    ("GETDEL", 1),
    ("GETEX", 1),
    ("INCRBYFLOAT", 1),
    ("MSETNX", 1),
    ("GETRANGE", 1),
    ("SUBSTR", 0),
    ("SETRANGE", 1),
];

/// The arguments of string command `name`.
pub(crate) fn args(g: &mut Gen, name: &str, args: &mut Vec<Vec<u8>>) -> Check {
    let offset = |g: &mut Gen, offsets: &[&str]| match g.hostile() {
        true => g.number(),
        false => g.pick_str(offsets),
    };
    match name {
        "GET" | "INCR" | "DECR" | "STRLEN" | "GETDEL" => args.push(g.key()),
        "SET" => {
            args.extend([g.key(), g.value()]);
            for _ in 0..g.below(4) {
                let option = g.pick(&[
                    "NX", "XX", "GET", "KEEPTTL", "EX", "PX", "EXAT", "PXAT", "nx", "get", "BAD",
                ]);
                args.push(g.word(option));
                if matches!(option, "EX" | "PX" | "EXAT" | "PXAT") {
                    args.push(expiry(g, option));
                }
            }
        }
        "GETSET" | "SETNX" | "APPEND" => args.extend([g.key(), g.value()]),
        "INCRBY" | "DECRBY" => args.extend([g.key(), g.number()]),
        "MGET" => g.some_keys(args, 4),
        "MSET" | "MSETNX" => {
            for _ in 0..1 + g.below(3) {
                args.extend([g.key(), g.value()]);
            }
        }
        "SETEX" | "PSETEX" => {
            let name = match g.hostile() {
                true => name,
                false => g.pick(&["SETEX", "PSETEX"]),
            };
            args[0] = g.word(name);
            let time = expiry(g, if name == "SETEX" { "EX" } else { "PX" });
            args.extend([g.key(), time, g.value()]);
        }
        "GETEX" => {
            args.push(g.key());
            let options: &[&str] = match g.hostile() {
                true => &["EX", "PX", "EXAT", "PXAT", "PERSIST", "BAD", "-"],
                false => &["EX", "PXAT", "PERSIST", "BAD", "-"],
            };
            let option = g.pick(options);
            if option != "-" {
                args.push(g.word(option));
            }
            if !matches!(option, "PERSIST" | "BAD" | "-") {
                args.push(expiry(g, option));
            }
        }
        "INCRBYFLOAT" => {
            if g.hostile() {
                args.extend([g.key(), g.float()]);
            } else {
                // A key of its own, which no other command names: its
                // value stays a small number that a double holds exactly.
                args.extend([
                    b"float".to_vec(),
                    g.pick_str(&[
                        "1",
                        "0.5",
                        "-2.25",
                        "3e2",
                        "abc",
                        " 1",
                        "10.5",
                        "-0.125",
                        "inf",
                        "-Infinity",
                        "nan",
                    ]),
                ]);
            }
        }
        "GETRANGE" | "SUBSTR" => {
            let offsets = ["0", "1", "-1", "-3", "5", "100", "-100", "x"];
            let (k, a, b) = (g.key(), offset(g, &offsets), offset(g, &offsets));
            args.extend([k, a, b]);
        }
        _ => {
            // SETRANGE
            let (k, at) = (g.key(), offset(g, &["0", "1", "7", "-1", "x"]));
            args.extend([k, at, g.value()]);
        }
    }
    Check::Exact
}
