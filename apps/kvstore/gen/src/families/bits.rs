//! The bit commands (`BITOP`, `BITPOS`, `BITFIELD`, `BITFIELD_RO`) on the
//! shared keys. For the differential test `BITFIELD` offsets stay within
//! a few hundred bits (and `#` fields within a few dozen), so that a write
//! does not grow a string to the 512 MiB an offset may reach; the
//! fuzzer's reach any number.

use crate::draw::{Check, Gen};

/// The bit commands, each with how often the differential test sends it.
pub(crate) const NAMES: &[(&str, u8)] = &[
    ("BITOP", 1),
    ("BITPOS", 2),
    ("BITFIELD", 2),
    ("BITFIELD_RO", 1),
];

/// The arguments of bit command `name`.
pub(crate) fn args(g: &mut Gen, name: &str, args: &mut Vec<Vec<u8>>) -> Check {
    match name {
        "BITOP" => {
            let op = g.pick_word(&["AND", "OR", "XOR", "NOT", "not", "NAND"]);
            args.extend([op, g.key()]);
            g.some_keys(args, 3);
        }
        "BITPOS" => {
            args.extend([g.key(), g.pick_str(&["0", "1", "1", "2", "x"])]);
            for _ in 0..g.below(4) {
                args.push(g.index());
            }
            if (args.len() == 5 || g.hostile()) && g.chance(50) {
                args.push(g.pick_word(&["BIT", "BYTE", "bit", "WORD"]));
            }
        }
        _ => {
            args.push(g.key());
            let writes = name == "BITFIELD" || g.chance(5);
            for _ in 0..g.below(5) {
                let op = match writes {
                    true => g.pick(&["GET", "SET", "INCRBY", "OVERFLOW", "get", "BAD"]),
                    false => "GET",
                };
                args.push(g.word(op));
                if op.eq_ignore_ascii_case("OVERFLOW") {
                    args.push(g.pick_word(&["WRAP", "SAT", "FAIL", "sat", "NONE"]));
                    continue;
                }
                if op == "BAD" {
                    continue;
                }
                args.push(g.pick_str(&[
                    "i1", "i8", "u8", "i16", "u7", "i63", "i64", "u63", "u64", "i0", "x8",
                ]));
                let offset = match g.below(if g.hostile() { 4 } else { 3 }) {
                    0 => format!("#{}", g.below(40)).into_bytes(),
                    1 => g.below(300).to_string().into_bytes(),
                    2 => g.pick_str(&["0", "-1", "#-1", "x", "7"]),
                    _ => g.number(),
                };
                args.push(offset);
                if !op.eq_ignore_ascii_case("GET") {
                    args.push(g.number());
                }
            }
        }
    }
    Check::Exact
}
