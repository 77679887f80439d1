//! The random stream's commands of the families added after the first
//! generator: HyperLogLog (`PF*`) and the bit commands (`BITOP`,
//! `BITPOS`, `BITFIELD`, `BITFIELD_RO`).
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

use super::{Check, Stream, NUMBERS};

impl Stream {
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
}
