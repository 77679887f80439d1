//! GEO commands. Points live mostly at keys of their own (`geo`,
//! `geo2`), around Sicily, at coordinates of five decimals drawn at
//! random: no two points lie at the same distance from a centre, so
//! sorting by distance has no ties (Redis sorts a partial result with an
//! unstable quicksort, whose order among equals is its own). Now and then
//! a GEO command meets a shared key: another type, or a sorted set whose
//! scores no `GEOADD` wrote, which both servers decode alike. The
//! fuzzer's coordinates are also anywhere, out of range or malformed.

use crate::draw::{Check, Gen};

/// The GEO commands, each with how often the differential test sends it.
pub(crate) const NAMES: &[(&str, u8)] = &[
    // One time in three, so that the sets fill up.
    ("GEOADD", 5),
    ("GEOSEARCH", 2),
    ("GEORADIUS", 1),
    ("GEOSEARCHSTORE", 1),
    ("GEORADIUSBYMEMBER", 1),
    ("GEORADIUS_RO", 1),
    ("GEORADIUSBYMEMBER_RO", 1),
    ("GEODIST", 1),
    ("GEOPOS", 1),
    ("GEOHASH", 1),
];

/// A key for a GEO command.
fn geo_key(g: &mut Gen) -> Vec<u8> {
    g.own_key(&["geo", "geo2"])
}

/// A longitude or latitude around `centre`, or now and then an edge or a
/// malformed one (the fuzzer's: also anywhere).
fn coordinate(g: &mut Gen, centre: u32) -> Vec<u8> {
    if g.hostile() && g.chance(30) {
        let (whole, fraction) = (g.c.byte() as i8, g.c.byte());
        return format!("{whole}.{fraction}").into_bytes();
    }
    if g.chance(5) {
        return g.pick_str(&[
            "180",
            "-180",
            "85.05112878",
            "-85.05112879",
            "x",
            "",
            "1e400",
        ]);
    }
    let n = centre * 100_000 + g.below(200_000) as u32;
    format!("{}.{:05}", n / 100_000, n % 100_000).into_bytes()
}

/// A radius, width or height.
fn distance(g: &mut Gen) -> Vec<u8> {
    g.pick_str(&[
        "0", "1", "50", "100", "200", "1000", "-1", "x", "2.5", "inf",
    ])
}

fn unit(g: &mut Gen) -> Vec<u8> {
    g.pick_word(&["m", "km", "km", "mi", "ft", "KM", "yd"])
}

/// The arguments of GEO command `name`.
pub(crate) fn args(g: &mut Gen, name: &str, args: &mut Vec<Vec<u8>>) -> Check {
    if name == "GEOSEARCHSTORE" {
        args.push(geo_key(g));
    }
    args.push(geo_key(g));
    match name {
        "GEOADD" => {
            for _ in 0..g.below(3) {
                args.push(g.pick_word(&["NX", "XX", "CH", "ch", "GT"]));
            }
            for _ in 0..1 + g.below(3) {
                let (lon, lat, member) = (coordinate(g, 13), coordinate(g, 37), g.member());
                args.extend([lon, lat, member]);
            }
        }
        "GEODIST" => {
            args.extend([g.member(), g.member()]);
            if g.chance(60) {
                args.push(unit(g));
            }
        }
        "GEOHASH" | "GEOPOS" => {
            for _ in 0..g.below(4) {
                args.push(g.member());
            }
        }
        "GEORADIUS" | "GEORADIUS_RO" => {
            let (lon, lat) = (coordinate(g, 13), coordinate(g, 37));
            args.extend([lon, lat, distance(g), unit(g)]);
            options(g, args, name == "GEORADIUS");
        }
        "GEORADIUSBYMEMBER" | "GEORADIUSBYMEMBER_RO" => {
            args.extend([g.member(), distance(g), unit(g)]);
            options(g, args, name == "GEORADIUSBYMEMBER");
        }
        _ => {
            // GEOSEARCH and GEOSEARCHSTORE: a centre and an extent (now
            // and then neither or both), then options.
            match g.below(10) {
                0 => {}
                1 => args.extend([
                    g.word("FROMMEMBER"),
                    g.member(),
                    g.word("FROMLONLAT"),
                    b"1".to_vec(),
                    b"1".to_vec(),
                ]),
                2..=5 => args.extend([g.word("FROMMEMBER"), g.member()]),
                _ => {
                    let (lon, lat) = (coordinate(g, 13), coordinate(g, 37));
                    args.extend([g.word("FROMLONLAT"), lon, lat]);
                }
            }
            match g.below(10) {
                0 => {}
                1..=5 => args.extend([g.word("BYRADIUS"), distance(g), unit(g)]),
                _ => args.extend([g.word("BYBOX"), distance(g), distance(g), unit(g)]),
            }
            let may_store = g.hostile();
            options(g, args, may_store);
            if name == "GEOSEARCHSTORE" && g.chance(30) {
                args.push(g.word("STOREDIST"));
            }
        }
    }
    Check::Exact
}

/// Options of a GEO search, a few of them in any order.
fn options(g: &mut Gen, args: &mut Vec<Vec<u8>>, may_store: bool) {
    for _ in 0..g.below(4) {
        match g.below(if may_store { 9 } else { 7 }) {
            0 => args.push(g.word("WITHDIST")),
            1 => args.push(g.word("WITHCOORD")),
            2 => args.push(g.word("WITHHASH")),
            3 => args.push(g.pick_word(&["ASC", "DESC", "asc"])),
            4 => {
                let n = g.pick_str(&["1", "2", "3", "10", "0", "-1", "x"]);
                args.extend([g.word("COUNT"), n]);
                if g.chance(30) {
                    args.push(g.word("ANY"));
                }
            }
            5 => args.push(g.word("ANY")),
            6 => args.push(g.word("BOGUS")),
            _ => {
                let how = g.pick_word(&["STORE", "STOREDIST"]);
                args.extend([how, geo_key(g)]);
            }
        }
    }
}
