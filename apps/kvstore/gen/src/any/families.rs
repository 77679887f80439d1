//! Arguments of the command families added after the first generator:
//! HyperLogLog (`PF*`), the bit commands (`BITOP`, `BITPOS`,
//! `BITFIELD`, `BITFIELD_RO`) and GEO (`GEOADD`, `GEOSEARCH`, ...). Keys are the shared ones of
//! [`any::key`](crate::any::key), so these commands meet strings
//! and other types written by the rest; elements are few (so registers
//! repeat) or any value, now and then a batch large enough to turn a
//! HyperLogLog dense.

use crate::any::{key, value};
use crate::choices::Choices;

/// Names of the HyperLogLog commands (not `PFSELFTEST`: it adds ten
/// million elements, seconds a call).
pub const HLL_NAMES: &[&str] = &["PFADD", "PFCOUNT", "PFMERGE", "PFDEBUG"];

/// The arguments of HyperLogLog command `name`.
pub fn hll_args(inp: &mut dyn Choices, name: &str, args: &mut Vec<Vec<u8>>) {
    match name {
        "PFADD" => {
            args.push(key(inp));
            match inp.below(8) {
                0 => {
                    let base = inp.u64();
                    for n in 0..inp.pick(&[100u64, 1000, 3000]) {
                        args.push(base.wrapping_add(n).to_string().into_bytes());
                    }
                }
                _ => {
                    for _ in 0..inp.below(4) {
                        args.push(element(inp));
                    }
                }
            }
        }
        "PFDEBUG" => {
            let sub = inp.pick(&["GETREG", "decode", "ENCODING", "TODENSE", "bogus"]);
            args.extend([sub.into(), key(inp)]);
        }
        _ => {
            // PFCOUNT key [key ...], PFMERGE dest [src ...].
            for _ in 0..1 + inp.below(3) {
                args.push(key(inp));
            }
        }
    }
}

/// An element: one of a few, or any value.
fn element(inp: &mut dyn Choices) -> Vec<u8> {
    match inp.below(3) {
        0 => value(inp),
        _ => inp.pick(&["a", "b", "c", "1", ""]).into(),
    }
}

/// Names of the bit commands.
pub const BIT_NAMES: &[&str] = &["BITOP", "BITPOS", "BITFIELD", "BITFIELD_RO"];

/// The arguments of bit command `name`: operations and types among valid
/// and invalid ones, offsets small, huge (up to `proto-max-bulk-len`) or
/// malformed.
pub fn bit_args(inp: &mut dyn Choices, name: &str, args: &mut Vec<Vec<u8>>) {
    let number = |inp: &mut dyn Choices| -> Vec<u8> {
        match inp.below(3) {
            0 => inp
                .pick(&["0", "1", "-1", "7", "-100", "x", "4294967295"])
                .into(),
            1 => (i64::from(inp.byte()) - 128).to_string().into_bytes(),
            _ => (inp.u64() as i64).to_string().into_bytes(),
        }
    };
    args.push(key(inp));
    match name {
        "BITOP" => {
            args.insert(1, inp.pick(&["AND", "or", "XOR", "NOT", "nand"]).into());
            for _ in 0..1 + inp.below(3) {
                args.push(key(inp));
            }
        }
        "BITPOS" => {
            args.push(inp.pick(&["0", "1", "2", "x"]).into());
            for _ in 0..inp.below(4) {
                args.push(number(inp));
            }
            if inp.below(2) == 0 {
                args.push(inp.pick(&["BIT", "byte", "WORD"]).into());
            }
        }
        _ => {
            for _ in 0..inp.below(6) {
                let op = inp.pick(&["GET", "SET", "INCRBY", "OVERFLOW", "bad"]);
                args.push(op.into());
                match op {
                    "OVERFLOW" => args.push(inp.pick(&["WRAP", "sat", "FAIL", "no"]).into()),
                    "bad" => {}
                    _ => {
                        let width = inp.pick(&["i1", "u8", "i64", "u63", "u64", "i0", "i8\0", ""]);
                        args.push(width.into());
                        args.push(match inp.below(3) {
                            0 => format!("#{}", inp.byte()).into_bytes(),
                            1 => u64::from(inp.byte()).to_string().into_bytes(),
                            _ => number(inp),
                        });
                        if op != "GET" {
                            args.push(number(inp));
                        }
                    }
                }
            }
        }
    }
}

/// Names of the GEO commands.
pub const GEO_NAMES: &[&str] = &[
    "GEOADD",
    "GEODIST",
    "GEOHASH",
    "GEOPOS",
    "GEOSEARCH",
    "GEOSEARCHSTORE",
    "GEORADIUS",
    "GEORADIUS_RO",
    "GEORADIUSBYMEMBER",
    "GEORADIUSBYMEMBER_RO",
];

/// A longitude, latitude, radius, width or height: in range, at an edge,
/// out of range, infinite or malformed.
fn degrees(inp: &mut dyn Choices) -> Vec<u8> {
    match inp.below(3) {
        0 => inp
            .pick(&[
                "0",
                "180",
                "-180",
                "85.05112878",
                "90",
                "-1",
                "inf",
                "1e400",
                "x",
                "",
            ])
            .into(),
        _ => format!("{}.{}", i16::from(inp.byte() as i8), inp.byte()).into_bytes(),
    }
}

/// The arguments of GEO command `name`: words of the syntax in any order
/// and number, with the values they take drawn from edge cases.
pub fn geo_args(inp: &mut dyn Choices, name: &str, args: &mut Vec<Vec<u8>>) {
    if name == "GEOSEARCHSTORE" {
        args.push(key(inp));
    }
    args.push(key(inp));
    match name {
        "GEOADD" => {
            for _ in 0..inp.below(3) {
                args.push(inp.pick(&["NX", "xx", "CH", "GT"]).into());
            }
            for _ in 0..1 + inp.below(3) {
                args.extend([degrees(inp), degrees(inp), element(inp)]);
            }
        }
        "GEODIST" | "GEOHASH" | "GEOPOS" => {
            for _ in 0..inp.below(4) {
                args.push(element(inp));
            }
            if inp.below(2) == 0 {
                args.push(inp.pick(&["m", "KM", "mi", "ft", "yd"]).into());
            }
        }
        _ => {
            if name.starts_with("GEORADIUSBYMEMBER") {
                args.push(element(inp));
            } else if name.starts_with("GEORADIUS") {
                args.extend([degrees(inp), degrees(inp)]);
            }
            for _ in 0..inp.below(8) {
                let word = inp.pick(&[
                    "FROMMEMBER",
                    "FROMLONLAT",
                    "BYRADIUS",
                    "BYBOX",
                    "WITHDIST",
                    "WITHHASH",
                    "WITHCOORD",
                    "ASC",
                    "DESC",
                    "COUNT",
                    "ANY",
                    "STORE",
                    "STOREDIST",
                    "km",
                    "m",
                ]);
                args.push(word.into());
                match word {
                    "FROMMEMBER" | "STORE" => args.push(key(inp)),
                    "FROMLONLAT" => args.extend([degrees(inp), degrees(inp)]),
                    "BYRADIUS" | "COUNT" => args.push(degrees(inp)),
                    "BYBOX" => args.extend([degrees(inp), degrees(inp)]),
                    _ => {}
                }
            }
        }
    }
}
