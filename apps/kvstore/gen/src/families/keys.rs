//! Commands on keys of any type: deleting, finding, expiring, renaming,
//! copying and moving them, scanning, sorting, flushing. For the
//! differential test relative expiries are long (100 s and more) or
//! already past, so nothing expires while it runs, and `TTL`/`PTTL`
//! compare with a tolerance; absolute ones lie far from every relative
//! one. The fuzzer's lie around its session's clock.

use crate::draw::{Check, Gen, Profile};

/// The key commands, each with how often the differential test sends it
/// (0: never). `FLUSHALL`, `FLUSHDB` and `SWAPDB` it sends rarely too
/// (see [`args`]).
pub(crate) const NAMES: &[(&str, u8)] = &[
    ("DEL", 1),
    ("EXISTS", 1),
    ("TYPE", 1),
    ("KEYS", 1),
    ("SCAN", 1),
    ("DBSIZE", 1),
    ("FLUSHALL", 1),
    ("FLUSHDB", 0),
    ("EXPIRE", 1),
    ("PEXPIRE", 1),
    ("EXPIREAT", 1),
    ("PEXPIREAT", 1),
    ("TTL", 1),
    ("PTTL", 1),
    ("PERSIST", 1),
    ("RENAME", 1),
    ("RENAMENX", 0),
    ("COPY", 1),
    ("MOVE", 1),
    ("TOUCH", 1),
    ("SWAPDB", 1),
    ("UNLINK", 0),
    ("RANDOMKEY", 0),
    ("EXPIRETIME", 0),
    ("PEXPIRETIME", 0),
    ("SORT", 0),
    ("SORT_RO", 0),
    // DUMP's payload bytes differ (each server writes its own valid
    // encoding): compared by kind only. RESTORE gets Redis's own payloads
    // (below).
    ("DUMP", 1),
    ("RESTORE", 1),
];

/// Payloads redis-server 7.0.15 DUMPed (hex): a string, an int-encoded
/// one, an LZF-compressed one, an empty one, a quicklist of a listpack,
/// an intset, a hashtable set, a listpack hash, a hashtable hash with a
/// compressed value, a listpack sorted set, a stream with a consumer
/// group (XADD 1-1 f v, XGROUP CREATE g 0, XREADGROUP of it by c); then
/// a flipped checksum, a
/// newer RDB version (11), too short, and a sound footer around a string
/// whose length runs past the end ("Bad data format").
const PAYLOADS: &[&str] = &[
    "000b68656c6c6f20776f726c640a000bfc49b9a6c7a034",
    "00c139300a009d94ea2793fc08b9",
    "00c30940c8016161e0bb000161610a001f99f72e01b20de3",
    "00000a005d9b5c400f7fa2da",
    "120102c32a406d186d00000008008161028162020c01dffb02f2a0860104e04678e03c000548d06002f4ff8000027f09ff0a0080d3b08eaca07061",
    "0b100200000004000000f9ff0100020003000a003bfa4a3923b1fa84",
    "020401610163c00101620a008baffc22aa17cc92",
    "10242400000006008266310382763103826632037b01836e756d04f4011889b7e8ffffff09ff0a00aa612c7331a4855f",
    "04020167c0010166c3094064017a7ae05700017a7a0a0096c57ef2e88dbeed",
    "112d2d0000000a00816302dffd0281610283312e350481620202018164028631652b3130300781650283696e6604ff0a005e3fc4ecddcef1e8",
    "130110000000000000000100000000000000011d1d0000000a0001010001010181660200010201000100018176020401ff0101010101000001010167010101010000000000000001000000000000000178eda221a20100000101016378eda221a201000001000000000000000100000000000000010a00bdfbd4b5fe9a8b92",
    "000b68656c6c6f20776f726c640a000bfc49b9a6c7a035",
    "000b68656c6c6f20776f726c640b000bfc49b9a6c7a034",
    "0a000bfc49b9a6c7a034",
    "00810ffffffffffffff70a0079432b04f556af67",
];

/// `RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME n] [FREQ n]`: a
/// payload of [`PAYLOADS`] (the fuzzer's sometimes any bytes), a relative
/// or (with `ABSTTL`) absolute expiry in milliseconds, options in any
/// order.
fn restore(g: &mut Gen, args: &mut Vec<Vec<u8>>) {
    let absttl = g.chance(30);
    args.extend([g.key(), expiry(g, if absttl { "PXAT" } else { "PX" })]);
    let payload = if g.hostile() && g.chance(20) {
        g.value()
    } else {
        let hex = g.pick(PAYLOADS).as_bytes();
        let digit = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
        hex.chunks(2)
            .map(|p| digit(p[0]) << 4 | digit(p[1]))
            .collect()
    };
    args.push(payload);
    if g.chance(if g.hostile() { 30 } else { 50 }) {
        args.push(g.word("REPLACE"));
    }
    if absttl {
        args.push(g.word("ABSTTL"));
    }
    for _ in 0..g.below(2) {
        let option = g.pick(&["IDLETIME", "FREQ", "BOGUS"]);
        args.push(g.word(option));
        if option != "BOGUS" {
            args.push(g.pick_str(&["0", "10", "255", "256", "-1", "x"]));
        }
    }
}

/// Database indexes: some of the 16 both servers have, and not ones.
pub(crate) const DBS: &[&str] = &["0", "1", "2", "15", "16", "-1", "x", "99999999999"];

/// The arguments of key command `name`; `None` to draw another command
/// (the differential test sends flushes and `SWAPDB` rarely, so that
/// keys pile up).
pub(crate) fn args(g: &mut Gen, name: &str, args: &mut Vec<Vec<u8>>) -> Option<Check> {
    match name {
        "DEL" | "EXISTS" | "UNLINK" | "TOUCH" => g.some_keys(args, 4),
        "TYPE" | "PERSIST" | "EXPIRETIME" | "PEXPIRETIME" => args.push(g.key()),
        "TTL" => {
            args.push(g.key());
            return Some(Check::Ttl(5));
        }
        "PTTL" => {
            args.push(g.key());
            return Some(Check::Ttl(5_000));
        }
        "KEYS" => {
            args.push(g.pattern());
            return Some(Check::AnyOrder);
        }
        "SCAN" => {
            // Not "" or "-1" for the differential test: Redis 7.0 reads
            // cursors with C's strtoul, which takes those as 0 and
            // 2^64 - 1; kvstore wants plain digits.
            let cursor = match g.hostile() {
                true if g.chance(50) => g.number(),
                true => g.c.u64().to_string().into_bytes(),
                false => g.pick_str(&["0", "0", "0", "abc", "1x", "18446744073709551616"]),
            };
            args.push(cursor);
            g.scan_options(args);
            return Some(Check::Scan);
        }
        "FLUSHALL" | "FLUSHDB" | "SWAPDB" => {
            if !g.hostile() && !g.chance(if name == "SWAPDB" { 20 } else { 10 }) {
                return None;
            }
            if name == "SWAPDB" {
                args.extend([g.pick_str(DBS), g.pick_str(DBS)]);
            } else {
                if !g.hostile() {
                    args[0] = g.pick_str(&["FLUSHALL", "FLUSHDB"]);
                }
                if g.chance(50) {
                    args.push(g.pick_word(&["ASYNC", "SYNC", "LATER"]));
                }
            }
        }
        "EXPIRE" | "PEXPIRE" | "EXPIREAT" | "PEXPIREAT" => {
            args.extend([g.key(), expiry(g, name)]);
            // GT and LT compare with the key's current expiry: with
            // relative times that is a race between two clocks.
            let conditions: &[&str] = match (g.hostile(), name.ends_with("AT")) {
                (true, _) => &["NX", "XX", "GT", "LT", "EX"],
                (false, true) => &["NX", "XX", "GT", "LT", "gt", "EX"],
                (false, false) => &["NX", "XX", "nx", "EX"],
            };
            for _ in 0..g.below(3) {
                args.push(g.pick_word(conditions));
            }
        }
        "RENAME" | "RENAMENX" => {
            if !g.hostile() {
                args[0] = g.pick_str(&["RENAME", "RENAMENX"]);
            }
            args.extend([g.key(), g.key()]);
        }
        "COPY" => {
            args.extend([g.key(), g.key()]);
            if g.chance(if g.hostile() { 30 } else { 3 }) {
                args.push(g.word("REPLACE"));
            }
            if g.chance(30) {
                args.extend([g.word("DB"), g.pick_str(DBS)]);
            }
        }
        "MOVE" => args.extend([g.key(), g.pick_str(DBS)]),
        "DUMP" => {
            args.push(g.key());
            return Some(Check::Kind);
        }
        "RESTORE" => restore(g, args),
        "SORT" | "SORT_RO" => sort(g, args),
        _ => {} // DBSIZE, RANDOMKEY
    }
    Some(Check::Exact)
}

/// The arguments of `SORT` and `SORT_RO` (the fuzzer's only): a shared
/// key, then options in any order (some repeated, some unknown or
/// missing their arguments): `BY` and `GET` patterns whose `*` turns
/// elements into the shared keys (`k*` with element `2` is `k2`) or hash
/// fields, `LIMIT` edge cases, `ASC`/`DESC`, `ALPHA` and `STORE` (which
/// `SORT_RO` refuses).
fn sort(g: &mut Gen, args: &mut Vec<Vec<u8>>) {
    const PATTERNS: &[&str] = &["*", "k*", "#", "nosort", "*->f", "k*->g", "*->", "n*"];
    args.push(g.key());
    for _ in 0..g.below(5) {
        let option = g.pick(&[
            "BY", "GET", "LIMIT", "ASC", "DESC", "ALPHA", "STORE", "BOGUS",
        ]);
        args.push(g.word(option));
        match option {
            "BY" | "GET" => args.push(g.pick_str(PATTERNS)),
            "LIMIT" => {
                for _ in 0..2 {
                    args.push(g.index());
                }
            }
            "STORE" => args.push(g.key()),
            _ => {}
        }
    }
}

/// An expiry argument for `option` (`EX`, `PXAT`, `EXPIREAT`, `SETEX`,
/// ...: a `P` first is milliseconds, `AT` last is absolute).
pub(crate) fn expiry(g: &mut Gen, option: &str) -> Vec<u8> {
    let millis = option.starts_with('P');
    let absolute = option.ends_with("AT");
    match g.profile {
        Profile::Hostile { now } => {
            // Mostly close to the clock in the option's unit, else any
            // number.
            if g.below(3) == 0 {
                return g.number();
            }
            let offset = i64::from(g.c.byte()) - 64;
            let n = match (absolute, millis) {
                (true, true) => now as i64 + offset * 100,
                (true, false) => (now / 1000) as i64 + offset,
                (false, true) => offset * 100,
                (false, false) => offset,
            };
            n.to_string().into_bytes()
        }
        Profile::Comparable { start_s } => {
            let s = if absolute {
                unix_seconds(g, start_s)
            } else {
                seconds(g)
            };
            if !millis {
                return s.into_bytes();
            }
            // In milliseconds, plus a few (but a relative 0 stays 0: a
            // few milliseconds from now would race); as they are if that
            // overflows.
            let extra = if absolute || s != "0" {
                g.below(1000) as i64
            } else {
                0
            };
            match s
                .parse::<i64>()
                .ok()
                .and_then(|n| n.checked_mul(1000)?.checked_add(extra))
            {
                Some(ms) => ms.to_string().into_bytes(),
                None => s.into_bytes(),
            }
        }
    }
}

/// A relative expiry in seconds: long enough never to be reached while
/// the test runs, already past, or malformed.
fn seconds(g: &mut Gen) -> String {
    g.pick(&[
        "100",
        "1000",
        "86400",
        "0",
        "-1",
        "-100",
        "9223372036854775807",
        "9223372036854775",
        "abc",
        "1.5",
    ])
    .into()
}

/// An absolute expiry in Unix seconds: far enough from every relative one
/// (start + 100..700 s, + 1000..1600 s, + 86400.. s) that `GT` and `LT`
/// decide the same on both servers, or past, or malformed.
fn unix_seconds(g: &mut Gen, start_s: u64) -> String {
    let s = start_s as i64;
    match g.below(9) {
        0 => (s + 5_000).to_string(),
        1 => (s + 40_000).to_string(),
        2 => (s + 500_000).to_string(),
        3 => (s - 3_600).to_string(),
        4 => "1".into(),
        5 => "-1".into(),
        6 => "0".into(),
        7 => "9223372036854775807".into(),
        _ => "x".into(),
    }
}
