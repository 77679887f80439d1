//! The one generator ([`Gen`]) and its argument shapes: keys, values,
//! members, numbers, indexes, scores, patterns, expiry times, option
//! words. Each shape is drawn the way the [`Profile`] asks: hostile edge
//! cases for the fuzzer, arguments whose replies Redis must match for the
//! differential test. The commands (`crate::table` and the family
//! modules) are written once, in these shapes.

use crate::choices::Choices;

/// What the generated commands are for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// The fuzzer's: every command kvstore has, hostile arguments (huge,
    /// negative and malformed numbers, 1 MiB values, names in any case,
    /// expiries around the session's clock, blocking timeouts); only
    /// crashes and broken invariants count. `now` is the session's clock
    /// in milliseconds.
    Hostile {
        /// The session's clock, ms.
        now: u64,
    },
    /// The differential test's: the commands and arguments whose replies
    /// Redis must match (expiries that never fall due while the test
    /// runs, no float past a double's precision, no blocking, ...), each
    /// with how its replies compare ([`Check`]). `start_s` is when the
    /// test started (Unix seconds): absolute expiries are drawn around it.
    Comparable {
        /// The servers' clock when the test started, s.
        start_s: u64,
    },
}

/// How two replies to one command are compared (the differential test's;
/// the fuzzer ignores it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// Byte for byte.
    Exact,
    /// Integers that may differ by the time between the two servers'
    /// answers, in the reply's unit (`TTL`: seconds, `PTTL`: ms); the
    /// codes -1 and -2 exactly.
    Ttl(i64),
    /// The same elements in any order (`KEYS`: Redis lists keys in its
    /// hash table's order, kvstore in its own).
    AnyOrder,
    /// Errors exactly; otherwise a whole scan from cursor 0 with the same
    /// options must find the same keys (cursors are positions in each
    /// server's own hash table, so batches and cursors differ).
    Scan,
    /// The same kind of reply only: `INFO` describes each server
    /// (versions, memory, uptime), `CLIENT ID` is each server's count of
    /// connections, random picks pick differently.
    Kind,
}

/// The generator: a source of choices and a profile.
pub struct Gen<'c> {
    pub(crate) c: &'c mut dyn Choices,
    pub(crate) profile: Profile,
    /// The differential test sent `MULTI` and no `EXEC` or `DISCARD`
    /// since (see [`Gen::command`]).
    pub(crate) in_multi: bool,
}

/// Keys the commands share, so that they meet.
const KEYS: [&[&[u8]]; 2] = [
    // Hostile: short, empty, binary, glob characters, multi-byte UTF-8.
    &[
        b"k",
        b"k2",
        b"n",
        b"",
        b"\x00\xff\r\n",
        b"{k}*?[",
        b"\xe2\x82\xac",
    ],
    // Comparable.
    &[
        b"k",
        b"k2",
        b"n",
        b"",
        b"{k}*?[",
        b"\xe2\x82\xac",
        b"counter",
    ],
];

/// Integers and near-integers that Redis's strict parser sorts out: the
/// differential test's, then the fuzzer's own.
const NUMBERS: Values = Values {
    all: &[
        "0",
        "1",
        "-1",
        "7",
        "100",
        "-100",
        "9223372036854775807",
        "-9223372036854775808",
        "9223372036854775808",
        "-9223372036854775809",
        "9223372036854775",
        "01",
        "-0",
        "+1",
        " 1",
        "1.5",
        "1e3",
        "abc",
        "",
        "2",
        "10",
        "1000",
        "86400",
        "9223372036854776",
        "18446744073709551615",
        "1 ",
    ],
    comparable: 19,
};

/// Lengths of the fuzzer's large values: around the log's sharing
/// threshold (16 KiB) and around 1 MiB, the smallest `proto-max-bulk-len`.
const BIG: &[usize] = &[16_383, 16_384, 16_385, 65_543, 1 << 20, (1 << 20) + 1];

/// Glob patterns for `KEYS`, `SCAN MATCH` and `CONFIG GET`.
const PATTERNS: Values = Values {
    all: &[
        "*",
        "k*",
        "?",
        "[a-k]*",
        "\\{*",
        "*[",
        "k[^2]",
        "",
        "bin*",
        "L*L",
        "\\*",
        "*max*",
        "[",
        "\\",
        "a*b*c*d*e*f*g*h*i*j*",
    ],
    comparable: 10,
};

/// Members, fields and elements: a few short ones (so that commands meet
/// each other's), integers (so that sets are intsets), and now and then
/// any value.
const MEMBERS: Values = Values {
    all: &[
        "a", "b", "c", "", "1", "2", "-3", "10", "x y", "f", "f\r\nx",
    ],
    comparable: 9,
};

/// Scores and score bounds, with the edge cases Redis sorts out.
const SCORES: Values = Values {
    all: &[
        "0", "1", "2", "-1", "2.5", "1e3", "-0", "inf", "-inf", "+inf", "nan", "x", "", "(1",
        "(inf", "1e400", "1e300", "0.1", "(-inf", "-", "+", "[a", "(b", "[", "c",
    ],
    comparable: 16,
};

/// Indexes and counts for ranges.
const INDEXES: Values = Values {
    all: &["0", "1", "-1", "2", "-2", "5", "-100", "100", "x", "", "-3"],
    comparable: 10,
};

/// A shape's values: the first `comparable` are the differential test's,
/// all of them the fuzzer's.
#[derive(Clone, Copy)]
struct Values {
    all: &'static [&'static str],
    comparable: usize,
}

impl<'c> Gen<'c> {
    /// A generator drawing from `c` for `profile`.
    pub fn new(c: &'c mut dyn Choices, profile: Profile) -> Gen<'c> {
        Gen {
            c,
            profile,
            in_multi: false,
        }
    }

    /// Whether this is the fuzzer's profile.
    pub(crate) fn hostile(&self) -> bool {
        matches!(self.profile, Profile::Hostile { .. })
    }

    /// One of a shape's values, as the profile allows.
    fn pick_value(&mut self, values: Values) -> Vec<u8> {
        let n = match self.hostile() {
            true => values.all.len(),
            false => values.comparable,
        };
        self.pick_str(&values.all[..n])
    }

    /// One of `items`.
    pub(crate) fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        self.c.pick(items)
    }

    /// A number below `n`.
    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.c.below(n)
    }

    /// True `percent` times in a hundred.
    pub(crate) fn chance(&mut self, percent: usize) -> bool {
        self.c.chance(percent)
    }

    /// A syntax word (a command name, an option): the fuzzer's in upper,
    /// lower or mixed case, as Redis accepts them; as written otherwise.
    pub(crate) fn word(&mut self, text: &str) -> Vec<u8> {
        if !self.hostile() {
            return text.into();
        }
        let text = text.as_bytes();
        match self.c.below(8) {
            0 => text.to_ascii_lowercase(),
            1 => text
                .iter()
                .enumerate()
                .map(|(i, b)| {
                    if i % 2 == 0 {
                        b.to_ascii_lowercase()
                    } else {
                        *b
                    }
                })
                .collect(),
            _ => text.to_vec(),
        }
    }

    /// One of `words`, through [`word`](Self::word).
    pub(crate) fn pick_word(&mut self, words: &[&str]) -> Vec<u8> {
        let w = self.c.pick(words);
        self.word(w)
    }

    /// One of the shared keys, or now and then a long or binary one.
    pub(crate) fn key(&mut self) -> Vec<u8> {
        if self.hostile() {
            return match self.c.below(16) {
                0 => vec![b'L'; 1000],
                _ => self.c.pick(KEYS[0]).to_vec(),
            };
        }
        match self.c.below(20) {
            0 => vec![b'L'; 300],
            1 => b"bin\0\r\n\xff".to_vec(),
            _ => self.c.pick(KEYS[1]).to_vec(),
        }
    }

    /// One of `items` as bytes.
    pub(crate) fn pick_str(&mut self, items: &[&str]) -> Vec<u8> {
        self.c.pick(items).into()
    }

    /// 1 to 3 of the shared keys.
    pub(crate) fn some_keys(&mut self, args: &mut Vec<Vec<u8>>, most: usize) {
        for _ in 0..1 + self.c.below(most) {
            let k = self.key();
            args.push(k);
        }
    }

    /// A value: empty, text, a number, binary, or large (16 KiB and more:
    /// kvstore writes those to its log from their own memory; the
    /// fuzzer's up to just over 1 MiB).
    pub(crate) fn value(&mut self) -> Vec<u8> {
        if self.hostile() {
            return match self.c.below(8) {
                0 => Vec::new(),
                1..=3 => self.c.bytes(16),
                4 | 5 => self.pick_value(NUMBERS),
                6 => {
                    let byte = self.c.byte();
                    vec![byte; self.c.pick(BIG)]
                }
                _ => b"\x00\r\n\xff".to_vec(),
            };
        }
        match self.c.below(12) {
            0 => Vec::new(),
            1..=3 => format!("v{}", self.c.below(1000)).into_bytes(),
            4..=6 => self.pick_value(NUMBERS),
            7 | 8 => (0..self.c.below(40)).map(|_| self.c.u64() as u8).collect(),
            9 => b"\0\r\n\xff\xfe".to_vec(),
            10 => {
                let len = self.c.pick(&[16_383, 16_384, 16_385, 65_539, 300_001]);
                let seed = self.c.u64();
                (0..len)
                    .map(|i| ((i as u64 ^ seed).wrapping_mul(2_654_435_761) >> 13) as u8)
                    .collect()
            }
            _ => self.pick_str(&["1", "-5", "9223372036854775806"]),
        }
    }

    /// An integer argument: edge cases; the fuzzer's also small, any
    /// 64-bit and the clock's seconds.
    pub(crate) fn number(&mut self) -> Vec<u8> {
        match self.profile {
            Profile::Hostile { now } => match self.c.below(6) {
                0..=2 => self.pick_value(NUMBERS),
                3 => (i64::from(self.c.byte()) - 128).to_string().into_bytes(),
                4 => (self.c.u64() as i64).to_string().into_bytes(),
                _ => (now / 1000).to_string().into_bytes(),
            },
            Profile::Comparable { .. } => self.pick_value(NUMBERS),
        }
    }

    /// A member, field or element.
    pub(crate) fn member(&mut self) -> Vec<u8> {
        let any = match self.hostile() {
            true => self.c.below(3) == 0,
            false => self.c.chance(8),
        };
        if any {
            self.value()
        } else {
            self.pick_value(MEMBERS)
        }
    }

    /// `at_least` members and up to 3 more.
    pub(crate) fn members(&mut self, args: &mut Vec<Vec<u8>>, at_least: usize) {
        for _ in 0..at_least + self.c.below(4) {
            let m = self.member();
            args.push(m);
        }
    }

    /// An index or count for a range.
    pub(crate) fn index(&mut self) -> Vec<u8> {
        if self.hostile() && self.c.below(3) == 0 {
            return self.number();
        }
        self.pick_value(INDEXES)
    }

    /// A score or score bound.
    pub(crate) fn score(&mut self) -> Vec<u8> {
        self.pick_value(SCORES)
    }

    /// A glob pattern.
    pub(crate) fn pattern(&mut self) -> Vec<u8> {
        self.pick_value(PATTERNS)
    }

    /// 1 to 3 keys, after their count (`numkeys`) if asked: now and then
    /// a wrong count.
    pub(crate) fn keys(&mut self, args: &mut Vec<Vec<u8>>, numkeys: bool) {
        let n = 1 + self.c.below(3);
        if numkeys {
            let wrong = match self.hostile() {
                true => self.c.below(8) == 0,
                false => self.c.chance(5),
            };
            let told = if wrong {
                self.index()
            } else {
                n.to_string().into_bytes()
            };
            args.push(told);
        }
        for _ in 0..n {
            let k = self.key();
            args.push(k);
        }
    }

    /// A blocking command's timeout (the fuzzer's only: the differential
    /// test never blocks): short, zero, negative or not a number.
    pub(crate) fn timeout(&mut self) -> Vec<u8> {
        self.pick_str(&["0", "0.01", "1", "-1", "x", "1e300", "0.5"])
    }

    /// A float increment (`HINCRBYFLOAT`'s; the fuzzer's `INCRBYFLOAT`'s
    /// too): the differential test's within a double's precision.
    pub(crate) fn float(&mut self) -> Vec<u8> {
        if self.hostile() {
            if self.c.below(3) == 0 {
                return self.number();
            }
            return self.pick_str(&[
                "1.5", "-0.25", "1e3", "1e308", "-1e308", "inf", "nan", "0.1", "3.0e-5", " 1", "1.",
            ]);
        }
        self.pick_str(&["1", "0.1", "-2.5", "1e3", "inf", "x", "3"])
    }

    /// A scan's options (`MATCH`, `COUNT`, `TYPE`, a bad one), up to two.
    pub(crate) fn scan_options(&mut self, args: &mut Vec<Vec<u8>>) {
        for _ in 0..self.c.below(3) {
            match self.c.below(4) {
                0 => args.extend([self.word("MATCH"), self.pattern()]),
                1 => {
                    let count = match self.hostile() {
                        true => self.number(),
                        false => self.pick_str(&["1", "3", "1000", "0", "-1", "x"]),
                    };
                    args.extend([self.word("COUNT"), count]);
                }
                2 => {
                    let t = self.pick_str(&["string", "hash", "list", "set", "zset"]);
                    args.extend([self.word("TYPE"), t]);
                }
                _ => args.push(self.word("BOGUS")),
            }
        }
    }

    /// A key of a family's own (`own`), so that its values grow, or now
    /// and then a shared one (another type: the errors).
    pub(crate) fn own_key(&mut self, own: &[&str]) -> Vec<u8> {
        if self.c.chance(15) {
            self.key()
        } else {
            self.pick_str(own)
        }
    }

    /// A random pick's count, now and then (`HRANDFIELD`, `SRANDMEMBER`,
    /// `ZRANDMEMBER`), and for the fuzzer now and then `with`
    /// (`WITHVALUES`, `WITHSCORES`): compared by kind.
    pub(crate) fn random_count(&mut self, args: &mut Vec<Vec<u8>>, with: Option<&str>) -> Check {
        if self.c.chance(50) {
            args.push(self.index());
            if let Some(with) = with.filter(|_| self.hostile() && self.c.chance(50)) {
                args.push(self.word(with));
            }
        }
        Check::Kind
    }

    /// A member scan's cursor and options (`HSCAN`, `SSCAN`, `ZSCAN`).
    pub(crate) fn member_scan(&mut self, args: &mut Vec<Vec<u8>>) -> Check {
        args.push(self.pick_str(&["0", "1", "7", "x"]));
        self.scan_options(args);
        Check::Scan
    }

    /// A blocking pop's keys and timeout (`BLPOP`, `BZPOPMIN`, ...: the
    /// fuzzer's).
    pub(crate) fn blocking_pop(&mut self, args: &mut Vec<Vec<u8>>) -> Check {
        self.some_keys(args, 3);
        args.push(self.timeout());
        Check::Exact
    }
}
