//! The random stream's commands of the families added after the first
//! generator: HyperLogLog (`PFADD`, `PFCOUNT`, `PFMERGE`, `PFDEBUG`; not
//! the slow `PFSELFTEST`), the bit commands (`BITOP`, `BITPOS`,
//! `BITFIELD`, `BITFIELD_RO`) and GEO (`GEOADD`, `GEOSEARCH`, ...).
//!
//! HyperLogLogs live mostly at keys of their own (`hll`, `hll2`, `hll3`),
//! so that they grow past a few elements, and now and then at any key of
//! the stream (another type, or a string that is no HyperLogLog: Redis's
//! errors). kvstore writes Redis's own bytes, sparse and dense, so `GET`
//! and `STRLEN` of them compare exactly too.
//!
//! The bit commands work on the stream's shared keys. `BITFIELD` offsets
//! stay within a few hundred bits (and `#` fields within a few dozen),
//! so that a write does not grow a string to the 512 MiB an offset may
//! reach.
//!
//! GEO points live mostly at keys of their own (`geo`, `geo2`), around
//! Sicily, at coordinates of five decimals drawn at random: no two points
//! lie at the same distance from a centre, so sorting by distance has no
//! ties (Redis sorts a partial result with an unstable quicksort, whose
//! order among equals is its own). Now and then a GEO command meets a
//! shared key: another type, or a sorted set whose scores no `GEOADD`
//! wrote, which both servers decode alike.

use super::{Check, Stream, NUMBERS};

impl Stream<'_> {
    /// A key for a HyperLogLog command.
    fn hll_key(&mut self) -> Vec<u8> {
        if self.rng.chance(15) {
            self.key()
        } else {
            self.rng.pick(&["hll", "hll2", "hll3"]).into()
        }
    }

    /// A HyperLogLog command, or a string command on a HyperLogLog key.
    pub(super) fn hll_command(&mut self, args: &mut Vec<Vec<u8>>) -> Check {
        let name = self.rng.pick(&[
            "PFADD", "PFADD", "PFADD", "PFADD", "PFCOUNT", "PFCOUNT", "PFMERGE", "GET", "STRLEN",
            "PFDEBUG",
        ]);
        args[0] = name.into();
        match name {
            "PFADD" => {
                args.push(self.hll_key());
                if self.rng.chance(10) {
                    // A batch: enough of them turn the value dense.
                    let base = self.rng.below(100_000);
                    for n in 0..self.rng.pick(&[100, 300, 1000]) {
                        args.push(format!("e{}", base + n).into_bytes());
                    }
                } else {
                    for _ in 0..self.rng.below(4) {
                        let element = self.member();
                        args.push(element);
                    }
                }
            }
            "PFCOUNT" | "PFMERGE" => {
                for _ in 0..1 + self.rng.below(3) {
                    let key = self.hll_key();
                    args.push(key);
                }
            }
            "PFDEBUG" => {
                let sub = self
                    .rng
                    .pick(&["ENCODING", "DECODE", "TODENSE", "GETREG", "bogus"]);
                args.extend([sub.into(), self.hll_key()]);
            }
            _ => args.push(self.hll_key()),
        }
        Check::Exact
    }

    /// A bit command on the shared keys.
    pub(super) fn bit_command(&mut self, args: &mut Vec<Vec<u8>>) -> Check {
        let name = self.rng.pick(&[
            "BITOP",
            "BITPOS",
            "BITPOS",
            "BITFIELD",
            "BITFIELD",
            "BITFIELD_RO",
        ]);
        args[0] = name.into();
        let index = |s: &mut Self| -> Vec<u8> {
            s.rng
                .pick(&["0", "1", "2", "-1", "-3", "7", "100", "-100", "x", ""])
                .into()
        };
        match name {
            "BITOP" => {
                let op = self.rng.pick(&["AND", "OR", "XOR", "NOT", "not", "NAND"]);
                args.extend([op.into(), self.key()]);
                for _ in 0..1 + self.rng.below(3) {
                    let key = self.key();
                    args.push(key);
                }
            }
            "BITPOS" => {
                args.extend([self.key(), self.rng.pick(&["0", "1", "1", "2", "x"]).into()]);
                for _ in 0..self.rng.below(4) {
                    let arg = index(self);
                    args.push(arg);
                }
                if args.len() == 5 && self.rng.chance(50) {
                    args.push(self.rng.pick(&["BIT", "BYTE", "bit", "WORD"]).into());
                }
            }
            _ => {
                args.push(self.key());
                let writes = name == "BITFIELD" || self.rng.chance(5);
                for _ in 0..self.rng.below(5) {
                    let op = match writes {
                        true => self
                            .rng
                            .pick(&["GET", "SET", "INCRBY", "OVERFLOW", "get", "BAD"]),
                        false => "GET",
                    };
                    args.push(op.into());
                    if op.eq_ignore_ascii_case("OVERFLOW") {
                        let how = self.rng.pick(&["WRAP", "SAT", "FAIL", "sat", "NONE"]);
                        args.push(how.into());
                        continue;
                    }
                    if op == "BAD" {
                        continue;
                    }
                    let width = self.rng.pick(&[
                        "i1", "i8", "u8", "i16", "u7", "i63", "i64", "u63", "u64", "i0", "x8",
                    ]);
                    let offset = match self.rng.below(3) {
                        0 => format!("#{}", self.rng.below(40)),
                        1 => self.rng.below(300).to_string(),
                        _ => self.rng.pick(&["0", "-1", "#-1", "x", "7"]).to_string(),
                    };
                    args.extend([width.into(), offset.into_bytes()]);
                    if op != "GET" && op != "get" {
                        args.push(self.rng.pick(NUMBERS).into());
                    }
                }
            }
        }
        Check::Exact
    }

    /// A key for a GEO command.
    fn geo_key(&mut self) -> Vec<u8> {
        if self.rng.chance(15) {
            self.key()
        } else {
            self.rng.pick(&["geo", "geo2"]).into()
        }
    }

    /// A longitude or latitude around `centre`, or now and then an edge
    /// or a malformed one.
    fn coordinate(&mut self, centre: u32) -> Vec<u8> {
        if self.rng.chance(5) {
            return self
                .rng
                .pick(&[
                    "180",
                    "-180",
                    "85.05112878",
                    "-85.05112879",
                    "x",
                    "",
                    "1e400",
                ])
                .into();
        }
        let n = centre * 100_000 + self.rng.below(200_000) as u32;
        format!("{}.{:05}", n / 100_000, n % 100_000).into_bytes()
    }

    /// A radius, width or height.
    fn geo_distance(&mut self) -> Vec<u8> {
        self.rng
            .pick(&[
                "0", "1", "50", "100", "200", "1000", "-1", "x", "2.5", "inf",
            ])
            .into()
    }

    fn geo_unit(&mut self) -> Vec<u8> {
        self.rng
            .pick(&["m", "km", "km", "mi", "ft", "KM", "yd"])
            .into()
    }

    /// A GEO command.
    pub(super) fn geo_command(&mut self, args: &mut Vec<Vec<u8>>) -> Check {
        // GEOADD one time in three, so that the sets fill up.
        let name = match self.rng.chance(33) {
            true => "GEOADD",
            false => self.rng.pick(&[
                "GEOSEARCH",
                "GEOSEARCH",
                "GEORADIUS",
                "GEOSEARCHSTORE",
                "GEORADIUSBYMEMBER",
                "GEORADIUS_RO",
                "GEORADIUSBYMEMBER_RO",
                "GEODIST",
                "GEOPOS",
                "GEOHASH",
            ]),
        };
        args[0] = name.into();
        if name == "GEOSEARCHSTORE" {
            args.push(self.geo_key());
        }
        args.push(self.geo_key());
        match name {
            "GEOADD" => {
                for _ in 0..self.rng.below(3) {
                    args.push(self.rng.pick(&["NX", "XX", "CH", "ch", "GT"]).into());
                }
                for _ in 0..1 + self.rng.below(3) {
                    let (lon, lat, member) =
                        (self.coordinate(13), self.coordinate(37), self.member());
                    args.extend([lon, lat, member]);
                }
            }
            "GEODIST" => {
                args.extend([self.member(), self.member()]);
                if self.rng.chance(60) {
                    args.push(self.geo_unit());
                }
            }
            "GEOHASH" | "GEOPOS" => {
                for _ in 0..self.rng.below(4) {
                    let member = self.member();
                    args.push(member);
                }
            }
            "GEORADIUS" | "GEORADIUS_RO" => {
                let (lon, lat) = (self.coordinate(13), self.coordinate(37));
                args.extend([lon, lat, self.geo_distance(), self.geo_unit()]);
                self.geo_options(args, name == "GEORADIUS");
            }
            "GEORADIUSBYMEMBER" | "GEORADIUSBYMEMBER_RO" => {
                args.extend([self.member(), self.geo_distance(), self.geo_unit()]);
                self.geo_options(args, name == "GEORADIUSBYMEMBER");
            }
            _ => {
                // GEOSEARCH and GEOSEARCHSTORE: a centre and an extent
                // (now and then neither or both), then options.
                match self.rng.below(10) {
                    0 => {}
                    1 => args.extend([
                        b"FROMMEMBER".to_vec(),
                        self.member(),
                        b"FROMLONLAT".to_vec(),
                        b"1".to_vec(),
                        b"1".to_vec(),
                    ]),
                    2..=5 => args.extend([b"FROMMEMBER".to_vec(), self.member()]),
                    _ => {
                        let (lon, lat) = (self.coordinate(13), self.coordinate(37));
                        args.extend([b"FROMLONLAT".to_vec(), lon, lat]);
                    }
                }
                match self.rng.below(10) {
                    0 => {}
                    1..=5 => {
                        args.extend([b"BYRADIUS".to_vec(), self.geo_distance(), self.geo_unit()])
                    }
                    _ => args.extend([
                        b"BYBOX".to_vec(),
                        self.geo_distance(),
                        self.geo_distance(),
                        self.geo_unit(),
                    ]),
                }
                self.geo_options(args, false);
                if name == "GEOSEARCHSTORE" && self.rng.chance(30) {
                    args.push(b"STOREDIST".to_vec());
                }
            }
        }
        Check::Exact
    }

    /// Options of a GEO search, a few of them in any order.
    fn geo_options(&mut self, args: &mut Vec<Vec<u8>>, may_store: bool) {
        for _ in 0..self.rng.below(4) {
            match self.rng.below(if may_store { 9 } else { 7 }) {
                0 => args.push(b"WITHDIST".to_vec()),
                1 => args.push(b"WITHCOORD".to_vec()),
                2 => args.push(b"WITHHASH".to_vec()),
                3 => args.push(self.rng.pick(&["ASC", "DESC", "asc"]).into()),
                4 => {
                    let n = self.rng.pick(&["1", "2", "3", "10", "0", "-1", "x"]);
                    args.extend([b"COUNT".to_vec(), n.into()]);
                    if self.rng.chance(30) {
                        args.push(b"ANY".to_vec());
                    }
                }
                5 => args.push(b"ANY".to_vec()),
                6 => args.push(b"BOGUS".to_vec()),
                _ => {
                    let how = self.rng.pick(&["STORE", "STOREDIST"]);
                    args.extend([how.into(), self.geo_key()]);
                }
            }
        }
    }
}
